module @jit_integer_ops attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<12xi32>) -> (tensor<12xi32> {jax.result_info = "result[0]"}, tensor<14xi32> {jax.result_info = "result[1]"}, tensor<12xi32> {jax.result_info = "result[2]"}, tensor<12xi32> {jax.result_info = "result[3]"}, tensor<12xi32> {jax.result_info = "result[4]"}, tensor<12xi32> {jax.result_info = "result[5]"}, tensor<12xi32> {jax.result_info = "result[6]"}) {
    %0:2 = call @_unique_sorted_mask(%arg0) : (tensor<12xi32>) -> (tensor<12xi32>, tensor<12xi1>)
    %1 = call @cumsum(%0#1) : (tensor<12xi1>) -> tensor<12xi32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %2 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<12xi32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %3 = call @clip(%1, %c_0) : (tensor<12xi32>, tensor<i32>) -> tensor<12xi32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %4 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i32>) -> tensor<12xi32>
    %5 = stablehlo.compare LT, %3, %4, SIGNED : (tensor<12xi32>, tensor<12xi32>) -> tensor<12xi1>
    %c_2 = stablehlo.constant dense<12> : tensor<i32>
    %6 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i32>) -> tensor<12xi32>
    %7 = stablehlo.add %3, %6 : tensor<12xi32>
    %8 = stablehlo.select %5, %7, %3 : tensor<12xi1>, tensor<12xi32>
    %9 = stablehlo.broadcast_in_dim %8, dims = [0] : (tensor<12xi32>) -> tensor<12x1xi32>
    %c_3 = stablehlo.constant dense<1> : tensor<i32>
    %10 = stablehlo.broadcast_in_dim %c_3, dims = [] : (tensor<i32>) -> tensor<12xi32>
    %11 = "stablehlo.scatter"(%2, %9, %10) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg1: tensor<i32>, %arg2: tensor<i32>):
      %46 = stablehlo.add %arg1, %arg2 : tensor<i32>
      stablehlo.return %46 : tensor<i32>
    }) : (tensor<12xi32>, tensor<12x1xi32>, tensor<12xi32>) -> tensor<12xi32>
    %12 = call @cumsum_1(%11) : (tensor<12xi32>) -> tensor<12xi32>
    %c_4 = stablehlo.constant dense<1> : tensor<i32>
    %13 = call @floor_divide(%12, %c_4) : (tensor<12xi32>, tensor<i32>) -> tensor<12xi32>
    %c_5 = stablehlo.constant dense<12> : tensor<i32>
    %14 = call @remainder(%13, %c_5) : (tensor<12xi32>, tensor<i32>) -> tensor<12xi32>
    %c_6 = stablehlo.constant dense<0> : tensor<i32>
    %15 = stablehlo.broadcast_in_dim %c_6, dims = [] : (tensor<i32>) -> tensor<12xi32>
    %16 = stablehlo.compare LT, %14, %15, SIGNED : (tensor<12xi32>, tensor<12xi32>) -> tensor<12xi1>
    %c_7 = stablehlo.constant dense<12> : tensor<i32>
    %17 = stablehlo.broadcast_in_dim %c_7, dims = [] : (tensor<i32>) -> tensor<12xi32>
    %18 = stablehlo.add %14, %17 : tensor<12xi32>
    %19 = stablehlo.select %16, %18, %14 : tensor<12xi1>, tensor<12xi32>
    %20 = stablehlo.broadcast_in_dim %19, dims = [0] : (tensor<12xi32>) -> tensor<12x1xi32>
    %21 = "stablehlo.gather"(%0#0, %20) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1>}> : (tensor<12xi32>, tensor<12x1xi32>) -> tensor<12xi32>
    %22 = stablehlo.iota dim = 0 : tensor<12xi32>
    %23 = stablehlo.convert %0#1 : (tensor<12xi1>) -> tensor<12xi32>
    %c_8 = stablehlo.constant dense<0> : tensor<i32>
    %24 = stablehlo.reduce(%23 init: %c_8) applies stablehlo.add across dimensions = [0] : (tensor<12xi32>, tensor<i32>) -> tensor<i32>
    %25 = stablehlo.broadcast_in_dim %24, dims = [] : (tensor<i32>) -> tensor<12xi32>
    %26 = stablehlo.compare LT, %22, %25, SIGNED : (tensor<12xi32>, tensor<12xi32>) -> tensor<12xi1>
    %c_9 = stablehlo.constant dense<0> : tensor<i32>
    %27 = call @_where_3(%26, %21, %c_9) : (tensor<12xi1>, tensor<12xi32>, tensor<i32>) -> tensor<12xi32>
    %c_10 = stablehlo.constant dense<7> : tensor<i32>
    %28 = call @remainder(%arg0, %c_10) : (tensor<12xi32>, tensor<i32>) -> tensor<12xi32>
    %c_11 = stablehlo.constant dense<7> : tensor<i32>
    %29 = stablehlo.broadcast_in_dim %c_11, dims = [] : (tensor<i32>) -> tensor<12xi32>
    %30 = stablehlo.add %28, %29 : tensor<12xi32>
    %c_12 = stablehlo.constant dense<0> : tensor<i32>
    %31 = stablehlo.broadcast_in_dim %c_12, dims = [] : (tensor<i32>) -> tensor<14xi32>
    %c_13 = stablehlo.constant dense<0> : tensor<i32>
    %32 = call @clip(%30, %c_13) : (tensor<12xi32>, tensor<i32>) -> tensor<12xi32>
    %c_14 = stablehlo.constant dense<0> : tensor<i32>
    %33 = stablehlo.broadcast_in_dim %c_14, dims = [] : (tensor<i32>) -> tensor<12xi32>
    %34 = stablehlo.compare LT, %32, %33, SIGNED : (tensor<12xi32>, tensor<12xi32>) -> tensor<12xi1>
    %c_15 = stablehlo.constant dense<14> : tensor<i32>
    %35 = stablehlo.broadcast_in_dim %c_15, dims = [] : (tensor<i32>) -> tensor<12xi32>
    %36 = stablehlo.add %32, %35 : tensor<12xi32>
    %37 = stablehlo.select %34, %36, %32 : tensor<12xi1>, tensor<12xi32>
    %38 = stablehlo.broadcast_in_dim %37, dims = [0] : (tensor<12xi32>) -> tensor<12x1xi32>
    %c_16 = stablehlo.constant dense<1> : tensor<i32>
    %39 = stablehlo.broadcast_in_dim %c_16, dims = [] : (tensor<i32>) -> tensor<12xi32>
    %40 = "stablehlo.scatter"(%31, %38, %39) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg1: tensor<i32>, %arg2: tensor<i32>):
      %46 = stablehlo.add %arg1, %arg2 : tensor<i32>
      stablehlo.return %46 : tensor<i32>
    }) : (tensor<14xi32>, tensor<12x1xi32>, tensor<12xi32>) -> tensor<14xi32>
    %41 = call @cumsum_1(%arg0) : (tensor<12xi32>) -> tensor<12xi32>
    %c_17 = stablehlo.constant dense<-5> : tensor<i32>
    %c_18 = stablehlo.constant dense<5> : tensor<i32>
    %42 = call @clip_4(%arg0, %c_17, %c_18) : (tensor<12xi32>, tensor<i32>, tensor<i32>) -> tensor<12xi32>
    %43 = stablehlo.popcnt %arg0 : tensor<12xi32>
    %c_19 = stablehlo.constant dense<3> : tensor<i32>
    %44 = call @floor_divide_5(%arg0, %c_19) : (tensor<12xi32>, tensor<i32>) -> tensor<12xi32>
    %c_20 = stablehlo.constant dense<3> : tensor<i32>
    %45 = call @remainder(%arg0, %c_20) : (tensor<12xi32>, tensor<i32>) -> tensor<12xi32>
    return %27, %40, %41, %42, %43, %44, %45 : tensor<12xi32>, tensor<14xi32>, tensor<12xi32>, tensor<12xi32>, tensor<12xi32>, tensor<12xi32>, tensor<12xi32>
  }
  func.func private @_unique_sorted_mask(%arg0: tensor<12xi32>) -> (tensor<12xi32>, tensor<12xi1>) {
    %0 = stablehlo.reshape %arg0 : (tensor<12xi32>) -> tensor<12x1xi32>
    %1 = stablehlo.transpose %0, dims = [1, 0] : (tensor<12x1xi32>) -> tensor<1x12xi32>
    %2 = stablehlo.reverse %1, dims = [0] : tensor<1x12xi32>
    %3 = call @lexsort(%2) : (tensor<1x12xi32>) -> tensor<12xi32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %4 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<12xi32>
    %5 = stablehlo.compare LT, %3, %4, SIGNED : (tensor<12xi32>, tensor<12xi32>) -> tensor<12xi1>
    %c_0 = stablehlo.constant dense<12> : tensor<i32>
    %6 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<12xi32>
    %7 = stablehlo.add %3, %6 : tensor<12xi32>
    %8 = stablehlo.select %5, %7, %3 : tensor<12xi1>, tensor<12xi32>
    %9 = stablehlo.broadcast_in_dim %8, dims = [0] : (tensor<12xi32>) -> tensor<12x1xi32>
    %10 = "stablehlo.gather"(%arg0, %9) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1>}> : (tensor<12xi32>, tensor<12x1xi32>) -> tensor<12xi32>
    %c_1 = stablehlo.constant dense<true> : tensor<i1>
    %11 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i1>) -> tensor<12xi1>
    %12 = stablehlo.slice %10 [1:12] : (tensor<12xi32>) -> tensor<11xi32>
    %13 = stablehlo.slice %10 [0:11] : (tensor<12xi32>) -> tensor<11xi32>
    %14 = stablehlo.compare NE, %12, %13, SIGNED : (tensor<11xi32>, tensor<11xi32>) -> tensor<11xi1>
    %c_2 = stablehlo.constant dense<false> : tensor<i1>
    %15 = stablehlo.reduce(%14 init: %c_2) applies stablehlo.or across dimensions = [] : (tensor<11xi1>, tensor<i1>) -> tensor<11xi1>
    %c_3 = stablehlo.constant dense<1> : tensor<i32>
    %16 = stablehlo.broadcast_in_dim %c_3, dims = [] : (tensor<i32>) -> tensor<1xi32>
    %17 = "stablehlo.scatter"(%11, %16, %15) <{indices_are_sorted = true, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0], scatter_dims_to_operand_dims = [0]>, unique_indices = true}> ({
    ^bb0(%arg1: tensor<i1>, %arg2: tensor<i1>):
      stablehlo.return %arg2 : tensor<i1>
    }) : (tensor<12xi1>, tensor<1xi32>, tensor<11xi1>) -> tensor<12xi1>
    return %10, %17 : tensor<12xi32>, tensor<12xi1>
  }
  func.func private @lexsort(%arg0: tensor<1x12xi32>) -> tensor<12xi32> {
    %0 = stablehlo.slice %arg0 [0:1, 0:12] : (tensor<1x12xi32>) -> tensor<1x12xi32>
    %1 = stablehlo.reshape %0 : (tensor<1x12xi32>) -> tensor<12xi32>
    %2 = stablehlo.iota dim = 0 : tensor<12xi32>
    %3:2 = "stablehlo.sort"(%1, %2) <{dimension = 0 : i64, is_stable = true}> ({
    ^bb0(%arg1: tensor<i32>, %arg2: tensor<i32>, %arg3: tensor<i32>, %arg4: tensor<i32>):
      %4 = stablehlo.compare LT, %arg1, %arg2, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %4 : tensor<i1>
    }) : (tensor<12xi32>, tensor<12xi32>) -> (tensor<12xi32>, tensor<12xi32>)
    return %3#1 : tensor<12xi32>
  }
  func.func private @cumsum(%arg0: tensor<12xi1>) -> tensor<12xi32> {
    %0 = stablehlo.convert %arg0 : (tensor<12xi1>) -> tensor<12xi32>
    %1 = call @cumsum_0(%0) : (tensor<12xi32>) -> tensor<12xi32>
    return %1 : tensor<12xi32>
  }
  func.func private @cumsum_0(%arg0: tensor<12xi32>) -> tensor<12xi32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<i32>
    %1 = "stablehlo.reduce_window"(%arg0, %0) <{base_dilations = array<i64: 1>, padding = dense<[[11, 0]]> : tensor<1x2xi64>, window_dilations = array<i64: 1>, window_dimensions = array<i64: 12>, window_strides = array<i64: 1>}> ({
    ^bb0(%arg1: tensor<i32>, %arg2: tensor<i32>):
      %2 = stablehlo.add %arg1, %arg2 : tensor<i32>
      stablehlo.return %2 : tensor<i32>
    }) : (tensor<12xi32>, tensor<i32>) -> tensor<12xi32>
    return %1 : tensor<12xi32>
  }
  func.func private @clip(%arg0: tensor<12xi32>, %arg1: tensor<i32>) -> tensor<12xi32> {
    %0 = stablehlo.convert %arg1 : tensor<i32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<i32>) -> tensor<12xi32>
    %2 = stablehlo.maximum %1, %arg0 : tensor<12xi32>
    return %2 : tensor<12xi32>
  }
  func.func private @cumsum_1(%arg0: tensor<12xi32>) -> tensor<12xi32> {
    %0 = call @cumsum_0(%arg0) : (tensor<12xi32>) -> tensor<12xi32>
    return %0 : tensor<12xi32>
  }
  func.func private @floor_divide(%arg0: tensor<12xi32>, %arg1: tensor<i32>) -> tensor<12xi32> {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<i32>) -> tensor<12xi32>
    %1 = stablehlo.divide %arg0, %0 : tensor<12xi32>
    %2 = stablehlo.sign %arg0 : tensor<12xi32>
    %3 = stablehlo.sign %arg1 : tensor<i32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [] : (tensor<i32>) -> tensor<12xi32>
    %5 = stablehlo.compare NE, %2, %4, SIGNED : (tensor<12xi32>, tensor<12xi32>) -> tensor<12xi1>
    %6 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<i32>) -> tensor<12xi32>
    %7 = stablehlo.remainder %arg0, %6 : tensor<12xi32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %8 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<12xi32>
    %9 = stablehlo.compare NE, %7, %8, SIGNED : (tensor<12xi32>, tensor<12xi32>) -> tensor<12xi1>
    %10 = stablehlo.and %5, %9 : tensor<12xi1>
    %c_0 = stablehlo.constant dense<1> : tensor<i32>
    %11 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<12xi32>
    %12 = stablehlo.subtract %1, %11 : tensor<12xi32>
    %13 = call @_where(%10, %12, %1) : (tensor<12xi1>, tensor<12xi32>, tensor<12xi32>) -> tensor<12xi32>
    return %13 : tensor<12xi32>
  }
  func.func private @_where(%arg0: tensor<12xi1>, %arg1: tensor<12xi32>, %arg2: tensor<12xi32>) -> tensor<12xi32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<12xi1>, tensor<12xi32>
    return %0 : tensor<12xi32>
  }
  func.func private @remainder(%arg0: tensor<12xi32>, %arg1: tensor<i32>) -> tensor<12xi32> {
    %0 = stablehlo.convert %arg1 : tensor<i32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.compare EQ, %0, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_0 = stablehlo.constant dense<1> : tensor<i32>
    %2 = call @_where_2(%1, %c_0, %0) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [] : (tensor<i32>) -> tensor<12xi32>
    %4 = stablehlo.remainder %arg0, %3 : tensor<12xi32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %5 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i32>) -> tensor<12xi32>
    %6 = stablehlo.compare NE, %4, %5, SIGNED : (tensor<12xi32>, tensor<12xi32>) -> tensor<12xi1>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %7 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i32>) -> tensor<12xi32>
    %8 = stablehlo.compare LT, %4, %7, SIGNED : (tensor<12xi32>, tensor<12xi32>) -> tensor<12xi1>
    %c_3 = stablehlo.constant dense<0> : tensor<i32>
    %9 = stablehlo.compare LT, %2, %c_3, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %10 = stablehlo.broadcast_in_dim %9, dims = [] : (tensor<i1>) -> tensor<12xi1>
    %11 = stablehlo.compare NE, %8, %10, UNSIGNED : (tensor<12xi1>, tensor<12xi1>) -> tensor<12xi1>
    %12 = stablehlo.and %11, %6 : tensor<12xi1>
    %13 = stablehlo.broadcast_in_dim %2, dims = [] : (tensor<i32>) -> tensor<12xi32>
    %14 = stablehlo.add %4, %13 : tensor<12xi32>
    %15 = stablehlo.select %12, %14, %4 : tensor<12xi1>, tensor<12xi32>
    return %15 : tensor<12xi32>
  }
  func.func private @_where_2(%arg0: tensor<i1>, %arg1: tensor<i32>, %arg2: tensor<i32>) -> tensor<i32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<i1>, tensor<i32>
    return %0 : tensor<i32>
  }
  func.func private @_where_3(%arg0: tensor<12xi1>, %arg1: tensor<12xi32>, %arg2: tensor<i32>) -> tensor<12xi32> {
    %0 = stablehlo.broadcast_in_dim %arg2, dims = [] : (tensor<i32>) -> tensor<12xi32>
    %1 = stablehlo.select %arg0, %arg1, %0 : tensor<12xi1>, tensor<12xi32>
    return %1 : tensor<12xi32>
  }
  func.func private @clip_4(%arg0: tensor<12xi32>, %arg1: tensor<i32>, %arg2: tensor<i32>) -> tensor<12xi32> {
    %0 = stablehlo.convert %arg1 : tensor<i32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<i32>) -> tensor<12xi32>
    %2 = stablehlo.maximum %1, %arg0 : tensor<12xi32>
    %3 = stablehlo.convert %arg2 : tensor<i32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [] : (tensor<i32>) -> tensor<12xi32>
    %5 = stablehlo.minimum %4, %2 : tensor<12xi32>
    return %5 : tensor<12xi32>
  }
  func.func private @floor_divide_5(%arg0: tensor<12xi32>, %arg1: tensor<i32>) -> tensor<12xi32> {
    %0 = stablehlo.convert %arg1 : tensor<i32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<i32>) -> tensor<12xi32>
    %2 = stablehlo.divide %arg0, %1 : tensor<12xi32>
    %3 = stablehlo.sign %arg0 : tensor<12xi32>
    %4 = stablehlo.sign %0 : tensor<i32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [] : (tensor<i32>) -> tensor<12xi32>
    %6 = stablehlo.compare NE, %3, %5, SIGNED : (tensor<12xi32>, tensor<12xi32>) -> tensor<12xi1>
    %7 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<i32>) -> tensor<12xi32>
    %8 = stablehlo.remainder %arg0, %7 : tensor<12xi32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %9 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<12xi32>
    %10 = stablehlo.compare NE, %8, %9, SIGNED : (tensor<12xi32>, tensor<12xi32>) -> tensor<12xi1>
    %11 = stablehlo.and %6, %10 : tensor<12xi1>
    %c_0 = stablehlo.constant dense<1> : tensor<i32>
    %12 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<12xi32>
    %13 = stablehlo.subtract %2, %12 : tensor<12xi32>
    %14 = call @_where(%11, %13, %2) : (tensor<12xi1>, tensor<12xi32>, tensor<12xi32>) -> tensor<12xi32>
    return %14 : tensor<12xi32>
  }
}
