module @jit_nn_pool_grads attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x8x8x3xf32>, %arg1: tensor<2x4x4x3xf32>, %arg2: tensor<2x4x4x3xf32>, %arg3: tensor<2x8x8x3xf32>) -> (tensor<2x8x8x3xf32> {jax.result_info = "result"}) {
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x4x4x3xf32>
    %1 = stablehlo.multiply %0, %arg1 : tensor<2x4x4x3xf32>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<2x8x8x3xf32>
    %3 = stablehlo.multiply %2, %arg3 : tensor<2x8x8x3xf32>
    %cst_1 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<2x4x4x3xf32>
    %5 = stablehlo.multiply %4, %arg2 : tensor<2x4x4x3xf32>
    %cst_2 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %6 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<2x4x4x3xf32>
    %7 = stablehlo.multiply %6, %arg1 : tensor<2x4x4x3xf32>
    %cst_3 = stablehlo.constant dense<4.000000e+00> : tensor<f32>
    %8 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<2x4x4x3xf32>
    %9 = stablehlo.divide %1, %8 : tensor<2x4x4x3xf32>
    %cst_4 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %10 = stablehlo.pad %9, %cst_4, low = [0, 1, 1, 0], high = [0, 1, 1, 0], interior = [0, 1, 1, 0] : (tensor<2x4x4x3xf32>, tensor<f32>) -> tensor<2x9x9x3xf32>
    %cst_5 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %11 = stablehlo.broadcast_in_dim %cst_5, dims = [] : (tensor<f32>) -> tensor<f32>
    %12 = "stablehlo.reduce_window"(%10, %11) <{base_dilations = array<i64: 1, 1, 1, 1>, padding = dense<0> : tensor<4x2xi64>, window_dilations = array<i64: 1, 1, 1, 1>, window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 1, 1, 1>}> ({
    ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
      %27 = stablehlo.add %arg4, %arg5 : tensor<f32>
      stablehlo.return %27 : tensor<f32>
    }) : (tensor<2x9x9x3xf32>, tensor<f32>) -> tensor<2x8x8x3xf32>
    %cst_6 = stablehlo.constant dense<9.000000e+00> : tensor<f32>
    %13 = stablehlo.broadcast_in_dim %cst_6, dims = [] : (tensor<f32>) -> tensor<2x8x8x3xf32>
    %14 = stablehlo.divide %3, %13 : tensor<2x8x8x3xf32>
    %cst_7 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %15 = stablehlo.pad %14, %cst_7, low = [0, 1, 1, 0], high = [0, 1, 1, 0], interior = [0, 0, 0, 0] : (tensor<2x8x8x3xf32>, tensor<f32>) -> tensor<2x10x10x3xf32>
    %cst_8 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %16 = stablehlo.broadcast_in_dim %cst_8, dims = [] : (tensor<f32>) -> tensor<f32>
    %17 = "stablehlo.reduce_window"(%15, %16) <{base_dilations = array<i64: 1, 1, 1, 1>, padding = dense<0> : tensor<4x2xi64>, window_dilations = array<i64: 1, 1, 1, 1>, window_dimensions = array<i64: 1, 3, 3, 1>, window_strides = array<i64: 1, 1, 1, 1>}> ({
    ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
      %27 = stablehlo.add %arg4, %arg5 : tensor<f32>
      stablehlo.return %27 : tensor<f32>
    }) : (tensor<2x10x10x3xf32>, tensor<f32>) -> tensor<2x8x8x3xf32>
    %18 = stablehlo.add %12, %17 : tensor<2x8x8x3xf32>
    %cst_9 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %19 = stablehlo.pad %arg0, %cst_9, low = [0, 0, 0, 0], high = [0, 1, 1, 0], interior = [0, 0, 0, 0] : (tensor<2x8x8x3xf32>, tensor<f32>) -> tensor<2x9x9x3xf32>
    %cst_10 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %20 = "stablehlo.select_and_scatter"(%19, %5, %cst_10) <{padding = dense<0> : tensor<4x2xi64>, window_dimensions = array<i64: 1, 3, 3, 1>, window_strides = array<i64: 1, 2, 2, 1>}> ({
    ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
      %27 = stablehlo.compare GE, %arg4, %arg5, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %27 : tensor<i1>
    }, {
    ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
      %27 = stablehlo.add %arg4, %arg5 : tensor<f32>
      stablehlo.return %27 : tensor<f32>
    }) : (tensor<2x9x9x3xf32>, tensor<2x4x4x3xf32>, tensor<f32>) -> tensor<2x9x9x3xf32>
    %21 = stablehlo.slice %20 [0:2, 0:8, 0:8, 0:3] : (tensor<2x9x9x3xf32>) -> tensor<2x8x8x3xf32>
    %22 = stablehlo.add %18, %21 : tensor<2x8x8x3xf32>
    %cst_11 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %23 = stablehlo.pad %arg0, %cst_11, low = [0, 0, 0, 0], high = [0, 0, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x8x8x3xf32>, tensor<f32>) -> tensor<2x8x8x3xf32>
    %cst_12 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %24 = "stablehlo.select_and_scatter"(%23, %7, %cst_12) <{padding = dense<0> : tensor<4x2xi64>, window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 2, 2, 1>}> ({
    ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
      %27 = stablehlo.compare GE, %arg4, %arg5, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %27 : tensor<i1>
    }, {
    ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
      %27 = stablehlo.add %arg4, %arg5 : tensor<f32>
      stablehlo.return %27 : tensor<f32>
    }) : (tensor<2x8x8x3xf32>, tensor<2x4x4x3xf32>, tensor<f32>) -> tensor<2x8x8x3xf32>
    %25 = stablehlo.slice %24 [0:2, 0:8, 0:8, 0:3] : (tensor<2x8x8x3xf32>) -> tensor<2x8x8x3xf32>
    %26 = stablehlo.add %22, %25 : tensor<2x8x8x3xf32>
    return %26 : tensor<2x8x8x3xf32>
  }
}
