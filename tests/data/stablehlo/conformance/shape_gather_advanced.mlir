module @jit_shape_gather_advanced attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<6x5x7xf32>, %arg1: tensor<4xi32>, %arg2: tensor<4xi32>, %arg3: tensor<6x2xi32>) -> (tensor<4x5xf32> {jax.result_info = "result[0]"}, tensor<4x7xf32> {jax.result_info = "result[1]"}, tensor<6x2xf32> {jax.result_info = "result[2]"}, tensor<6xf32> {jax.result_info = "result[3]"}, tensor<3x4x7xf32> {jax.result_info = "result[4]"}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<4xi32>
    %1 = stablehlo.compare LT, %arg1, %0, SIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
    %c_0 = stablehlo.constant dense<6> : tensor<i32>
    %2 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<4xi32>
    %3 = stablehlo.add %arg1, %2 : tensor<4xi32>
    %4 = stablehlo.select %1, %3, %arg1 : tensor<4xi1>, tensor<4xi32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %5 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i32>) -> tensor<4xi32>
    %6 = stablehlo.compare LT, %arg2, %5, SIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
    %c_2 = stablehlo.constant dense<7> : tensor<i32>
    %7 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i32>) -> tensor<4xi32>
    %8 = stablehlo.add %arg2, %7 : tensor<4xi32>
    %9 = stablehlo.select %6, %8, %arg2 : tensor<4xi1>, tensor<4xi32>
    %10 = stablehlo.broadcast_in_dim %4, dims = [0] : (tensor<4xi32>) -> tensor<4x1xi32>
    %11 = stablehlo.broadcast_in_dim %9, dims = [0] : (tensor<4xi32>) -> tensor<4x1xi32>
    %12 = stablehlo.concatenate %10, %11, dim = 1 : (tensor<4x1xi32>, tensor<4x1xi32>) -> tensor<4x2xi32>
    %13 = "stablehlo.gather"(%arg0, %12) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0, 2], start_index_map = [0, 2], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 5, 1>}> : (tensor<6x5x7xf32>, tensor<4x2xi32>) -> tensor<4x5xf32>
    %c_3 = stablehlo.constant dense<0> : tensor<i32>
    %14 = stablehlo.broadcast_in_dim %c_3, dims = [] : (tensor<i32>) -> tensor<4xi32>
    %15 = stablehlo.compare LT, %arg1, %14, SIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
    %c_4 = stablehlo.constant dense<6> : tensor<i32>
    %16 = stablehlo.broadcast_in_dim %c_4, dims = [] : (tensor<i32>) -> tensor<4xi32>
    %17 = stablehlo.add %arg1, %16 : tensor<4xi32>
    %18 = stablehlo.select %15, %17, %arg1 : tensor<4xi1>, tensor<4xi32>
    %c_5 = stablehlo.constant dense<0> : tensor<i32>
    %19 = stablehlo.broadcast_in_dim %c_5, dims = [] : (tensor<i32>) -> tensor<4xi32>
    %20 = stablehlo.compare LT, %arg2, %19, SIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
    %c_6 = stablehlo.constant dense<5> : tensor<i32>
    %21 = stablehlo.broadcast_in_dim %c_6, dims = [] : (tensor<i32>) -> tensor<4xi32>
    %22 = stablehlo.add %arg2, %21 : tensor<4xi32>
    %23 = stablehlo.select %20, %22, %arg2 : tensor<4xi1>, tensor<4xi32>
    %24 = stablehlo.broadcast_in_dim %18, dims = [0] : (tensor<4xi32>) -> tensor<4x1xi32>
    %25 = stablehlo.broadcast_in_dim %23, dims = [0] : (tensor<4xi32>) -> tensor<4x1xi32>
    %26 = stablehlo.concatenate %24, %25, dim = 1 : (tensor<4x1xi32>, tensor<4x1xi32>) -> tensor<4x2xi32>
    %27 = "stablehlo.gather"(%arg0, %26) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0, 1], start_index_map = [0, 1], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 1, 7>}> : (tensor<6x5x7xf32>, tensor<4x2xi32>) -> tensor<4x7xf32>
    %28 = stablehlo.slice %arg1 [0:2] : (tensor<4xi32>) -> tensor<2xi32>
    %29 = stablehlo.slice %arg2 [0:2] : (tensor<4xi32>) -> tensor<2xi32>
    %c_7 = stablehlo.constant dense<0> : tensor<i32>
    %30 = stablehlo.broadcast_in_dim %c_7, dims = [] : (tensor<i32>) -> tensor<2xi32>
    %31 = stablehlo.compare LT, %28, %30, SIGNED : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi1>
    %c_8 = stablehlo.constant dense<5> : tensor<i32>
    %32 = stablehlo.broadcast_in_dim %c_8, dims = [] : (tensor<i32>) -> tensor<2xi32>
    %33 = stablehlo.add %28, %32 : tensor<2xi32>
    %34 = stablehlo.select %31, %33, %28 : tensor<2xi1>, tensor<2xi32>
    %c_9 = stablehlo.constant dense<0> : tensor<i32>
    %35 = stablehlo.broadcast_in_dim %c_9, dims = [] : (tensor<i32>) -> tensor<2xi32>
    %36 = stablehlo.compare LT, %29, %35, SIGNED : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi1>
    %c_10 = stablehlo.constant dense<7> : tensor<i32>
    %37 = stablehlo.broadcast_in_dim %c_10, dims = [] : (tensor<i32>) -> tensor<2xi32>
    %38 = stablehlo.add %29, %37 : tensor<2xi32>
    %39 = stablehlo.select %36, %38, %29 : tensor<2xi1>, tensor<2xi32>
    %40 = stablehlo.broadcast_in_dim %34, dims = [0] : (tensor<2xi32>) -> tensor<2x1xi32>
    %41 = stablehlo.broadcast_in_dim %39, dims = [0] : (tensor<2xi32>) -> tensor<2x1xi32>
    %42 = stablehlo.concatenate %40, %41, dim = 1 : (tensor<2x1xi32>, tensor<2x1xi32>) -> tensor<2x2xi32>
    %43 = "stablehlo.gather"(%arg0, %42) <{dimension_numbers = #stablehlo.gather<offset_dims = [0], collapsed_slice_dims = [1, 2], start_index_map = [1, 2], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 6, 1, 1>}> : (tensor<6x5x7xf32>, tensor<2x2xi32>) -> tensor<6x2xf32>
    %44 = stablehlo.slice %arg3 [0:6, 0:1] : (tensor<6x2xi32>) -> tensor<6x1xi32>
    %45 = stablehlo.reshape %44 : (tensor<6x1xi32>) -> tensor<6xi32>
    %46 = stablehlo.slice %arg3 [0:6, 1:2] : (tensor<6x2xi32>) -> tensor<6x1xi32>
    %47 = stablehlo.reshape %46 : (tensor<6x1xi32>) -> tensor<6xi32>
    %c_11 = stablehlo.constant dense<0> : tensor<i32>
    %48 = stablehlo.broadcast_in_dim %c_11, dims = [] : (tensor<i32>) -> tensor<6xi32>
    %49 = stablehlo.compare LT, %45, %48, SIGNED : (tensor<6xi32>, tensor<6xi32>) -> tensor<6xi1>
    %c_12 = stablehlo.constant dense<6> : tensor<i32>
    %50 = stablehlo.broadcast_in_dim %c_12, dims = [] : (tensor<i32>) -> tensor<6xi32>
    %51 = stablehlo.add %45, %50 : tensor<6xi32>
    %52 = stablehlo.select %49, %51, %45 : tensor<6xi1>, tensor<6xi32>
    %c_13 = stablehlo.constant dense<0> : tensor<i32>
    %53 = stablehlo.broadcast_in_dim %c_13, dims = [] : (tensor<i32>) -> tensor<6xi32>
    %54 = stablehlo.compare LT, %47, %53, SIGNED : (tensor<6xi32>, tensor<6xi32>) -> tensor<6xi1>
    %c_14 = stablehlo.constant dense<5> : tensor<i32>
    %55 = stablehlo.broadcast_in_dim %c_14, dims = [] : (tensor<i32>) -> tensor<6xi32>
    %56 = stablehlo.add %47, %55 : tensor<6xi32>
    %57 = stablehlo.select %54, %56, %47 : tensor<6xi1>, tensor<6xi32>
    %c_15 = stablehlo.constant dense<3> : tensor<i32>
    %58 = stablehlo.broadcast_in_dim %c_15, dims = [] : (tensor<i32>) -> tensor<6xi32>
    %59 = stablehlo.convert %58 : tensor<6xi32>
    %60 = stablehlo.broadcast_in_dim %52, dims = [0] : (tensor<6xi32>) -> tensor<6x1xi32>
    %61 = stablehlo.broadcast_in_dim %57, dims = [0] : (tensor<6xi32>) -> tensor<6x1xi32>
    %62 = stablehlo.broadcast_in_dim %59, dims = [0] : (tensor<6xi32>) -> tensor<6x1xi32>
    %63 = stablehlo.concatenate %60, %61, %62, dim = 1 : (tensor<6x1xi32>, tensor<6x1xi32>, tensor<6x1xi32>) -> tensor<6x3xi32>
    %64 = "stablehlo.gather"(%arg0, %63) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0, 1, 2], start_index_map = [0, 1, 2], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 1, 1>}> : (tensor<6x5x7xf32>, tensor<6x3xi32>) -> tensor<6xf32>
    %c_16 = stablehlo.constant dense<0> : tensor<i32>
    %65 = stablehlo.broadcast_in_dim %c_16, dims = [] : (tensor<i32>) -> tensor<4xi32>
    %66 = stablehlo.compare LT, %arg1, %65, SIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
    %c_17 = stablehlo.constant dense<5> : tensor<i32>
    %67 = stablehlo.broadcast_in_dim %c_17, dims = [] : (tensor<i32>) -> tensor<4xi32>
    %68 = stablehlo.add %arg1, %67 : tensor<4xi32>
    %69 = stablehlo.select %66, %68, %arg1 : tensor<4xi1>, tensor<4xi32>
    %c_18 = stablehlo.constant dense<1> : tensor<i32>
    %70 = stablehlo.broadcast_in_dim %c_18, dims = [] : (tensor<i32>) -> tensor<4x1xi32>
    %71 = stablehlo.broadcast_in_dim %69, dims = [0] : (tensor<4xi32>) -> tensor<4x1xi32>
    %72 = stablehlo.concatenate %70, %71, dim = 1 : (tensor<4x1xi32>, tensor<4x1xi32>) -> tensor<4x2xi32>
    %73 = "stablehlo.gather"(%arg0, %72) <{dimension_numbers = #stablehlo.gather<offset_dims = [0, 2], collapsed_slice_dims = [1], start_index_map = [0, 1], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 3, 1, 7>}> : (tensor<6x5x7xf32>, tensor<4x2xi32>) -> tensor<3x4x7xf32>
    return %13, %27, %43, %64, %73 : tensor<4x5xf32>, tensor<4x7xf32>, tensor<6x2xf32>, tensor<6xf32>, tensor<3x4x7xf32>
  }
}
