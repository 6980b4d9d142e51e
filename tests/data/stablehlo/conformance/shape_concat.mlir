module @jit_shape_concat attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x6xf32>, %arg1: tensor<3x6xf32>, %arg2: tensor<4x2xf32>, %arg3: tensor<5xi32>, %arg4: tensor<3xi32>) -> (tensor<7x6xf32> {jax.result_info = "result[0]"}, tensor<4x14xf32> {jax.result_info = "result[1]"}, tensor<4x2x6xf32> {jax.result_info = "result[2]"}, tensor<8xi32> {jax.result_info = "result[3]"}, tensor<4x3xf32> {jax.result_info = "result[4]"}) {
    %0 = stablehlo.concatenate %arg0, %arg1, dim = 0 : (tensor<4x6xf32>, tensor<3x6xf32>) -> tensor<7x6xf32>
    %1 = stablehlo.concatenate %arg0, %arg2, %arg0, dim = 1 : (tensor<4x6xf32>, tensor<4x2xf32>, tensor<4x6xf32>) -> tensor<4x14xf32>
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x6xf32>
    %3 = stablehlo.multiply %arg0, %2 : tensor<4x6xf32>
    %4 = stablehlo.broadcast_in_dim %arg0, dims = [0, 2] : (tensor<4x6xf32>) -> tensor<4x1x6xf32>
    %5 = stablehlo.broadcast_in_dim %3, dims = [0, 2] : (tensor<4x6xf32>) -> tensor<4x1x6xf32>
    %6 = stablehlo.concatenate %4, %5, dim = 1 : (tensor<4x1x6xf32>, tensor<4x1x6xf32>) -> tensor<4x2x6xf32>
    %7 = stablehlo.concatenate %arg3, %arg4, dim = 0 : (tensor<5xi32>, tensor<3xi32>) -> tensor<8xi32>
    %8 = stablehlo.slice %arg0 [0:4, 0:1] : (tensor<4x6xf32>) -> tensor<4x1xf32>
    %9 = call @atleast_1d(%8) : (tensor<4x1xf32>) -> tensor<4x1xf32>
    %10 = call @atleast_1d_0(%arg2) : (tensor<4x2xf32>) -> tensor<4x2xf32>
    %11 = stablehlo.concatenate %9, %10, dim = 1 : (tensor<4x1xf32>, tensor<4x2xf32>) -> tensor<4x3xf32>
    return %0, %1, %6, %7, %11 : tensor<7x6xf32>, tensor<4x14xf32>, tensor<4x2x6xf32>, tensor<8xi32>, tensor<4x3xf32>
  }
  func.func private @atleast_1d(%arg0: tensor<4x1xf32>) -> tensor<4x1xf32> {
    return %arg0 : tensor<4x1xf32>
  }
  func.func private @atleast_1d_0(%arg0: tensor<4x2xf32>) -> tensor<4x2xf32> {
    return %arg0 : tensor<4x2xf32>
  }
}
