module @jit_control_more attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<i1>, %arg1: tensor<9xf32>, %arg2: tensor<10xf32>) -> (tensor<9xf32> {jax.result_info = "result[0]"}, tensor<9xf32> {jax.result_info = "result[1]"}, tensor<9xf32> {jax.result_info = "result[2]"}, tensor<9xi32> {jax.result_info = "result[3]"}, tensor<4xf32> {jax.result_info = "result[4]"}) {
    %0 = stablehlo.convert %arg0 : (tensor<i1>) -> tensor<i32>
    %1 = "stablehlo.case"(%0) ({
      %cst_8 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %46 = stablehlo.broadcast_in_dim %cst_8, dims = [] : (tensor<f32>) -> tensor<9xf32>
      %47 = stablehlo.subtract %arg1, %46 : tensor<9xf32>
      stablehlo.return %47 : tensor<9xf32>
    }, {
      %cst_8 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
      %46 = stablehlo.broadcast_in_dim %cst_8, dims = [] : (tensor<f32>) -> tensor<9xf32>
      %47 = stablehlo.multiply %arg1, %46 : tensor<9xf32>
      stablehlo.return %47 : tensor<9xf32>
    }) : (tensor<i32>) -> tensor<9xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %2 = "stablehlo.case"(%c) ({
      %c_8 = stablehlo.constant dense<0> : tensor<i32>
      stablehlo.return %c_8 : tensor<i32>
    }, {
      %c_8 = stablehlo.constant dense<0> : tensor<i32>
      stablehlo.return %c_8 : tensor<i32>
    }) : (tensor<i32>) -> tensor<i32>
    %3 = "stablehlo.case"(%2) ({
      %cst_8 = stablehlo.constant dense<3.000000e+00> : tensor<f32>
      %46 = stablehlo.broadcast_in_dim %cst_8, dims = [] : (tensor<f32>) -> tensor<9xf32>
      %47 = stablehlo.multiply %arg1, %46 : tensor<9xf32>
      stablehlo.return %47 : tensor<9xf32>
    }) : (tensor<i32>) -> tensor<9xf32>
    %4 = stablehlo.slice %arg1 [0:8:2] : (tensor<9xf32>) -> tensor<4xf32>
    %5 = stablehlo.slice %arg1 [1:9:2] : (tensor<9xf32>) -> tensor<4xf32>
    %6 = stablehlo.add %4, %5 : tensor<4xf32>
    %7 = stablehlo.slice %6 [0:3:2] : (tensor<4xf32>) -> tensor<2xf32>
    %8 = stablehlo.slice %6 [1:4:2] : (tensor<4xf32>) -> tensor<2xf32>
    %9 = stablehlo.add %7, %8 : tensor<2xf32>
    %10 = stablehlo.slice %9 [0:1:2] : (tensor<2xf32>) -> tensor<1xf32>
    %11 = stablehlo.slice %9 [1:2:2] : (tensor<2xf32>) -> tensor<1xf32>
    %12 = stablehlo.add %10, %11 : tensor<1xf32>
    %13 = stablehlo.slice %12 [0:0] : (tensor<1xf32>) -> tensor<0xf32>
    %14 = stablehlo.slice %9 [2:2:2] : (tensor<2xf32>) -> tensor<0xf32>
    %15 = stablehlo.add %13, %14 : tensor<0xf32>
    %16 = stablehlo.slice %9 [0:1] : (tensor<2xf32>) -> tensor<1xf32>
    %17 = stablehlo.concatenate %16, %15, dim = 0 : (tensor<1xf32>, tensor<0xf32>) -> tensor<1xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %18 = stablehlo.pad %17, %cst, low = [0], high = [1], interior = [1] : (tensor<1xf32>, tensor<f32>) -> tensor<2xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %19 = stablehlo.pad %12, %cst_0, low = [1], high = [0], interior = [1] : (tensor<1xf32>, tensor<f32>) -> tensor<2xf32>
    %20 = stablehlo.add %18, %19 : tensor<2xf32>
    %21 = stablehlo.slice %20 [0:1] : (tensor<2xf32>) -> tensor<1xf32>
    %22 = stablehlo.slice %6 [2:4:2] : (tensor<4xf32>) -> tensor<1xf32>
    %23 = stablehlo.add %21, %22 : tensor<1xf32>
    %24 = stablehlo.slice %6 [0:1] : (tensor<4xf32>) -> tensor<1xf32>
    %25 = stablehlo.concatenate %24, %23, dim = 0 : (tensor<1xf32>, tensor<1xf32>) -> tensor<2xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %26 = stablehlo.pad %25, %cst_1, low = [0], high = [1], interior = [1] : (tensor<2xf32>, tensor<f32>) -> tensor<4xf32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %27 = stablehlo.pad %20, %cst_2, low = [1], high = [0], interior = [1] : (tensor<2xf32>, tensor<f32>) -> tensor<4xf32>
    %28 = stablehlo.add %26, %27 : tensor<4xf32>
    %29 = stablehlo.slice %arg1 [2:9:2] : (tensor<9xf32>) -> tensor<4xf32>
    %30 = stablehlo.add %28, %29 : tensor<4xf32>
    %31 = stablehlo.slice %arg1 [0:1] : (tensor<9xf32>) -> tensor<1xf32>
    %32 = stablehlo.concatenate %31, %30, dim = 0 : (tensor<1xf32>, tensor<4xf32>) -> tensor<5xf32>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %33 = stablehlo.pad %32, %cst_3, low = [0], high = [0], interior = [1] : (tensor<5xf32>, tensor<f32>) -> tensor<9xf32>
    %cst_4 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %34 = stablehlo.pad %28, %cst_4, low = [1], high = [1], interior = [1] : (tensor<4xf32>, tensor<f32>) -> tensor<9xf32>
    %35 = stablehlo.add %33, %34 : tensor<9xf32>
    %36 = call @searchsorted(%arg2, %arg1) : (tensor<10xf32>, tensor<9xf32>) -> tensor<9xi32>
    %c_5 = stablehlo.constant dense<0> : tensor<i32>
    %c_6 = stablehlo.constant dense<32> : tensor<i32>
    %37 = stablehlo.shift_right_logical %c_5, %c_6 : tensor<i32>
    %38 = stablehlo.convert %37 : (tensor<i32>) -> tensor<ui32>
    %39 = stablehlo.broadcast_in_dim %38, dims = [] : (tensor<ui32>) -> tensor<1xui32>
    %c_7 = stablehlo.constant dense<-1> : tensor<i32>
    %40 = stablehlo.and %c_5, %c_7 : tensor<i32>
    %41 = stablehlo.convert %40 : (tensor<i32>) -> tensor<ui32>
    %42 = stablehlo.broadcast_in_dim %41, dims = [] : (tensor<ui32>) -> tensor<1xui32>
    %43 = stablehlo.concatenate %39, %42, dim = 0 : (tensor<1xui32>, tensor<1xui32>) -> tensor<2xui32>
    %44 = stablehlo.concatenate %43, %43, dim = 0 : (tensor<2xui32>, tensor<2xui32>) -> tensor<4xui32>
    %45 = call @_normal(%44) : (tensor<4xui32>) -> tensor<4xf32>
    return %1, %3, %35, %36, %45 : tensor<9xf32>, tensor<9xf32>, tensor<9xf32>, tensor<9xi32>, tensor<4xf32>
  }
  func.func private @searchsorted(%arg0: tensor<10xf32>, %arg1: tensor<9xf32>) -> tensor<9xi32> {
    %0 = call @_searchsorted_scan_impl(%arg0, %arg1) : (tensor<10xf32>, tensor<9xf32>) -> tensor<9xi32>
    return %0 : tensor<9xi32>
  }
  func.func private @_searchsorted_scan_impl(%arg0: tensor<10xf32>, %arg1: tensor<9xf32>) -> tensor<9xi32> {
    %0 = call @_searchsorted_scan_impl_0(%arg0, %arg1) : (tensor<10xf32>, tensor<9xf32>) -> tensor<9xi32>
    return %0 : tensor<9xi32>
  }
  func.func private @_searchsorted_scan_impl_0(%arg0: tensor<10xf32>, %arg1: tensor<9xf32>) -> tensor<9xi32> {
    %c = stablehlo.constant dense<0> : tensor<ui32>
    %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<ui32>) -> tensor<9xui32>
    %c_0 = stablehlo.constant dense<10> : tensor<ui32>
    %1 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<ui32>) -> tensor<9xui32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %2:5 = stablehlo.while(%iterArg = %arg0, %iterArg_2 = %arg1, %iterArg_3 = %c_1, %iterArg_4 = %0, %iterArg_5 = %1) : tensor<10xf32>, tensor<9xf32>, tensor<i32>, tensor<9xui32>, tensor<9xui32>
    cond {
      %c_6 = stablehlo.constant dense<4> : tensor<i32>
      %4 = stablehlo.compare LT, %iterArg_3, %c_6, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %4 : tensor<i1>
    } do {
      %4:2 = func.call @closed_call(%iterArg, %iterArg_2, %iterArg_4, %iterArg_5) : (tensor<10xf32>, tensor<9xf32>, tensor<9xui32>, tensor<9xui32>) -> (tensor<9xui32>, tensor<9xui32>)
      %c_6 = stablehlo.constant dense<1> : tensor<i32>
      %5 = stablehlo.add %iterArg_3, %c_6 : tensor<i32>
      stablehlo.return %iterArg, %iterArg_2, %5, %4#0, %4#1 : tensor<10xf32>, tensor<9xf32>, tensor<i32>, tensor<9xui32>, tensor<9xui32>
    }
    %3 = stablehlo.convert %2#4 : (tensor<9xui32>) -> tensor<9xi32>
    return %3 : tensor<9xi32>
  }
  func.func private @closed_call(%arg0: tensor<10xf32>, %arg1: tensor<9xf32>, %arg2: tensor<9xui32>, %arg3: tensor<9xui32>) -> (tensor<9xui32>, tensor<9xui32>) {
    %0 = stablehlo.subtract %arg3, %arg2 : tensor<9xui32>
    %c = stablehlo.constant dense<2> : tensor<i32>
    %1 = call @floor_divide(%0, %c) : (tensor<9xui32>, tensor<i32>) -> tensor<9xui32>
    %2 = stablehlo.add %arg2, %1 : tensor<9xui32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [0] : (tensor<9xui32>) -> tensor<9x1xui32>
    %4 = "stablehlo.gather"(%arg0, %3) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1>}> : (tensor<10xf32>, tensor<9x1xui32>) -> tensor<9x1xf32>
    %5 = stablehlo.reshape %4 : (tensor<9x1xf32>) -> tensor<9xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %6 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<9xf32>
    %7 = stablehlo.compare EQ, %arg1, %6, FLOAT : (tensor<9xf32>, tensor<9xf32>) -> tensor<9xi1>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %8 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<9xf32>
    %9 = stablehlo.select %7, %8, %arg1 : tensor<9xi1>, tensor<9xf32>
    %10 = stablehlo.compare NE, %arg1, %arg1, FLOAT : (tensor<9xf32>, tensor<9xf32>) -> tensor<9xi1>
    %cst_1 = stablehlo.constant dense<0x7FC00000> : tensor<f32>
    %11 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<9xf32>
    %12 = stablehlo.select %10, %11, %9 : tensor<9xi1>, tensor<9xf32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %13 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<9xf32>
    %14 = stablehlo.compare EQ, %5, %13, FLOAT : (tensor<9xf32>, tensor<9xf32>) -> tensor<9xi1>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %15 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<9xf32>
    %16 = stablehlo.select %14, %15, %5 : tensor<9xi1>, tensor<9xf32>
    %17 = stablehlo.compare NE, %5, %5, FLOAT : (tensor<9xf32>, tensor<9xf32>) -> tensor<9xi1>
    %cst_4 = stablehlo.constant dense<0x7FC00000> : tensor<f32>
    %18 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<9xf32>
    %19 = stablehlo.select %17, %18, %16 : tensor<9xi1>, tensor<9xf32>
    %20 = stablehlo.compare LE, %12, %19, TOTALORDER : (tensor<9xf32>, tensor<9xf32>) -> tensor<9xi1>
    %21 = stablehlo.select %20, %arg2, %2 : tensor<9xi1>, tensor<9xui32>
    %22 = stablehlo.select %20, %2, %arg3 : tensor<9xi1>, tensor<9xui32>
    return %21, %22 : tensor<9xui32>, tensor<9xui32>
  }
  func.func private @floor_divide(%arg0: tensor<9xui32>, %arg1: tensor<i32>) -> tensor<9xui32> {
    %0 = stablehlo.convert %arg1 : (tensor<i32>) -> tensor<ui32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<ui32>) -> tensor<9xui32>
    %2 = stablehlo.divide %arg0, %1 : tensor<9xui32>
    return %2 : tensor<9xui32>
  }
  func.func private @_normal(%arg0: tensor<4xui32>) -> tensor<4xf32> {
    %0 = call @_normal_real(%arg0) : (tensor<4xui32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
  func.func private @_normal_real(%arg0: tensor<4xui32>) -> tensor<4xf32> {
    %cst = stablehlo.constant dense<-0.99999994> : tensor<f32>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %0 = call @_uniform(%arg0, %cst, %cst_0) : (tensor<4xui32>, tensor<f32>, tensor<f32>) -> tensor<4xf32>
    %1 = chlo.erf_inv %0 : tensor<4xf32> -> tensor<4xf32>
    %cst_1 = stablehlo.constant dense<1.41421354> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %3 = stablehlo.multiply %2, %1 : tensor<4xf32>
    return %3 : tensor<4xf32>
  }
  func.func private @_uniform(%arg0: tensor<4xui32>, %arg1: tensor<f32>, %arg2: tensor<f32>) -> tensor<4xf32> {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<f32>) -> tensor<1xf32>
    %1 = stablehlo.broadcast_in_dim %arg2, dims = [] : (tensor<f32>) -> tensor<1xf32>
    %2 = stablehlo.reshape %arg0 : (tensor<4xui32>) -> tensor<2x2xui32>
    %3 = stablehlo.bitcast_convert %2 : (tensor<2x2xui32>) -> tensor<2xui64>
    %output_state, %output = stablehlo.rng_bit_generator %3, algorithm = DEFAULT : (tensor<2xui64>) -> (tensor<2xui64>, tensor<4xui32>)
    %4 = stablehlo.bitcast_convert %output_state : (tensor<2xui64>) -> tensor<2x2xui32>
    %5 = stablehlo.reshape %4 : (tensor<2x2xui32>) -> tensor<4xui32>
    %c = stablehlo.constant dense<9> : tensor<ui32>
    %6 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<ui32>) -> tensor<4xui32>
    %7 = stablehlo.shift_right_logical %output, %6 : tensor<4xui32>
    %c_0 = stablehlo.constant dense<1065353216> : tensor<ui32>
    %8 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<ui32>) -> tensor<4xui32>
    %9 = stablehlo.or %7, %8 : tensor<4xui32>
    %10 = stablehlo.bitcast_convert %9 : (tensor<4xui32>) -> tensor<4xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %11 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %12 = stablehlo.subtract %10, %11 : tensor<4xf32>
    %13 = stablehlo.subtract %1, %0 : tensor<1xf32>
    %14 = stablehlo.broadcast_in_dim %13, dims = [0] : (tensor<1xf32>) -> tensor<4xf32>
    %15 = stablehlo.multiply %12, %14 : tensor<4xf32>
    %16 = stablehlo.broadcast_in_dim %0, dims = [0] : (tensor<1xf32>) -> tensor<4xf32>
    %17 = stablehlo.add %15, %16 : tensor<4xf32>
    %18 = stablehlo.broadcast_in_dim %0, dims = [0] : (tensor<1xf32>) -> tensor<4xf32>
    %19 = stablehlo.maximum %18, %17 : tensor<4xf32>
    return %19 : tensor<4xf32>
  }
}
