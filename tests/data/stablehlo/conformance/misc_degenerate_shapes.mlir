module @jit_misc_degenerate_shapes attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<0x4xf32>, %arg1: tensor<3x4xf32>, %arg2: tensor<f32>, %arg3: tensor<2x1x3x2x2xf32>) -> (tensor<3x4xf32> {jax.result_info = "result[0]"}, tensor<f32> {jax.result_info = "result[1]"}, tensor<4xf32> {jax.result_info = "result[2]"}, tensor<0x4xf32> {jax.result_info = "result[3]"}, tensor<3x1x4x1xf32> {jax.result_info = "result[4]"}, tensor<f32> {jax.result_info = "result[5]"}, tensor<2x3x2x2x1xf32> {jax.result_info = "result[6]"}) {
    %0 = stablehlo.concatenate %arg0, %arg1, dim = 0 : (tensor<0x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [0, 1] : (tensor<0x4xf32>, tensor<f32>) -> tensor<f32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %2 = stablehlo.reduce(%arg0 init: %cst_0) applies stablehlo.add across dimensions = [0] : (tensor<0x4xf32>, tensor<f32>) -> tensor<4xf32>
    %cst_1 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %3 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<0x4xf32>
    %4 = stablehlo.multiply %arg0, %3 : tensor<0x4xf32>
    %5 = stablehlo.broadcast_in_dim %arg1, dims = [0, 2] : (tensor<3x4xf32>) -> tensor<3x1x4x1xf32>
    %6 = stablehlo.broadcast_in_dim %arg2, dims = [] : (tensor<f32>) -> tensor<3x1x4x1xf32>
    %7 = stablehlo.multiply %5, %6 : tensor<3x1x4x1xf32>
    %8 = stablehlo.multiply %arg2, %arg2 : tensor<f32>
    %cst_2 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %9 = stablehlo.add %8, %cst_2 : tensor<f32>
    %10 = stablehlo.transpose %arg3, dims = [4, 2, 0, 3, 1] : (tensor<2x1x3x2x2xf32>) -> tensor<2x3x2x2x1xf32>
    return %0, %1, %2, %4, %7, %9, %10 : tensor<3x4xf32>, tensor<f32>, tensor<4xf32>, tensor<0x4xf32>, tensor<3x1x4x1xf32>, tensor<f32>, tensor<2x3x2x2x1xf32>
  }
}
