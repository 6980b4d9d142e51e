module @jit_shape_reshape_transpose attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x6x8xf32>, %arg1: tensor<2x3x4x5xf32>) -> (tensor<24x8xf32> {jax.result_info = "result[0]"}, tensor<8x6x4xf32> {jax.result_info = "result[1]"}, tensor<6x4x8xf32> {jax.result_info = "result[2]"}, tensor<5x24xf32> {jax.result_info = "result[3]"}, tensor<2x5x4x3xf32> {jax.result_info = "result[4]"}, tensor<28xf32> {jax.result_info = "result[5]"}) {
    %0 = stablehlo.reshape %arg0 : (tensor<4x6x8xf32>) -> tensor<24x8xf32>
    %1 = stablehlo.transpose %arg0, dims = [2, 1, 0] : (tensor<4x6x8xf32>) -> tensor<8x6x4xf32>
    %2 = stablehlo.transpose %arg0, dims = [1, 0, 2] : (tensor<4x6x8xf32>) -> tensor<6x4x8xf32>
    %3 = stablehlo.transpose %arg1, dims = [3, 1, 0, 2] : (tensor<2x3x4x5xf32>) -> tensor<5x3x2x4xf32>
    %4 = stablehlo.reshape %3 : (tensor<5x3x2x4xf32>) -> tensor<5x24xf32>
    %5 = stablehlo.transpose %arg1, dims = [0, 3, 2, 1] : (tensor<2x3x4x5xf32>) -> tensor<2x5x4x3xf32>
    %6 = stablehlo.reshape %arg0 : (tensor<4x6x8xf32>) -> tensor<192xf32>
    %7 = stablehlo.slice %6 [0:192:7] : (tensor<192xf32>) -> tensor<28xf32>
    return %0, %1, %2, %4, %5, %7 : tensor<24x8xf32>, tensor<8x6x4xf32>, tensor<6x4x8xf32>, tensor<5x24xf32>, tensor<2x5x4x3xf32>, tensor<28xf32>
  }
}
