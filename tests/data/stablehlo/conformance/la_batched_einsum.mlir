module @jit_la_batched_einsum attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x8x16xf32>, %arg1: tensor<4x16x8xf32>, %arg2: tensor<2x8x4x8xf32>, %arg3: tensor<2x8x4x8xf32>) -> (tensor<4x8x8xf32> {jax.result_info = "result[0]"}, tensor<2x4x8x8xf32> {jax.result_info = "result[1]"}, tensor<4x8x8xf32> {jax.result_info = "result[2]"}, tensor<4xf32> {jax.result_info = "result[3]"}) {
    %0 = stablehlo.dot_general %arg0, %arg1, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x8x16xf32>, tensor<4x16x8xf32>) -> tensor<4x8x8xf32>
    %1 = stablehlo.dot_general %arg2, %arg3, batching_dims = [0, 2] x [0, 2], contracting_dims = [3] x [3], precision = [DEFAULT, DEFAULT] : (tensor<2x8x4x8xf32>, tensor<2x8x4x8xf32>) -> tensor<2x4x8x8xf32>
    %2 = stablehlo.slice %arg1 [0:1, 0:16, 0:8] : (tensor<4x16x8xf32>) -> tensor<1x16x8xf32>
    %3 = stablehlo.reshape %2 : (tensor<1x16x8xf32>) -> tensor<16x8xf32>
    %4 = stablehlo.dot_general %arg0, %3, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x8x16xf32>, tensor<16x8xf32>) -> tensor<4x8x8xf32>
    %5 = stablehlo.dot_general %arg0, %arg0, batching_dims = [0] x [0], contracting_dims = [1, 2] x [1, 2], precision = [DEFAULT, DEFAULT] : (tensor<4x8x16xf32>, tensor<4x8x16xf32>) -> tensor<4xf32>
    return %0, %1, %4, %5 : tensor<4x8x8xf32>, tensor<2x4x8x8xf32>, tensor<4x8x8xf32>, tensor<4xf32>
  }
}
