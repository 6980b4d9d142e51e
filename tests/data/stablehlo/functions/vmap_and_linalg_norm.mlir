module @jit_vmap_and_linalg_norm attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x4xf32>, %arg1: tensor<3xf32>) -> (tensor<3xf32> {jax.result_info = "result[0]"}, tensor<3xf32> {jax.result_info = "result[1]"}, tensor<f32> {jax.result_info = "result[2]"}) {
    %0 = stablehlo.dot_general %arg0, %arg0, batching_dims = [0] x [0], contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<3x4xf32>, tensor<3x4xf32>) -> tensor<3xf32>
    %1 = stablehlo.multiply %0, %arg1 : tensor<3xf32>
    %2 = call @norm(%arg0) : (tensor<3x4xf32>) -> tensor<3xf32>
    %3 = call @norm_0(%arg0) : (tensor<3x4xf32>) -> tensor<f32>
    return %1, %2, %3 : tensor<3xf32>, tensor<3xf32>, tensor<f32>
  }
  func.func private @norm(%arg0: tensor<3x4xf32>) -> tensor<3xf32> {
    %0 = stablehlo.multiply %arg0, %arg0 : tensor<3x4xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.reduce(%0 init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<3x4xf32>, tensor<f32>) -> tensor<3xf32>
    %2 = stablehlo.sqrt %1 : tensor<3xf32>
    return %2 : tensor<3xf32>
  }
  func.func private @norm_0(%arg0: tensor<3x4xf32>) -> tensor<f32> {
    %0 = stablehlo.multiply %arg0, %arg0 : tensor<3x4xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.reduce(%0 init: %cst) applies stablehlo.add across dimensions = [0, 1] : (tensor<3x4xf32>, tensor<f32>) -> tensor<f32>
    %2 = stablehlo.sqrt %1 : tensor<f32>
    return %2 : tensor<f32>
  }
}
