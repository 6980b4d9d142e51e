module @jit_dot_two_batch_dims attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3x4x5xf32>, %arg1: tensor<3x2x5x4xf32>) -> (tensor<2x3xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.dot_general %arg0, %arg1, batching_dims = [0, 1] x [1, 0], contracting_dims = [3, 2] x [2, 3], precision = [DEFAULT, DEFAULT] : (tensor<2x3x4x5xf32>, tensor<3x2x5x4xf32>) -> tensor<2x3xf32>
    return %0 : tensor<2x3xf32>
  }
}
