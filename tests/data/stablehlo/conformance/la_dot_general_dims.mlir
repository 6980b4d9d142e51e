module @jit_la_dot_general_dims attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<5x3x4xf32>, %arg1: tensor<4x5x6xf32>, %arg2: tensor<2x3x4xf32>, %arg3: tensor<3x4x5xf32>, %arg4: tensor<3x2xf32>, %arg5: tensor<4xf32>) -> (tensor<4x3x6xf32> {jax.result_info = "result[0]"}, tensor<2x5xf32> {jax.result_info = "result[1]"}, tensor<3x2x4xf32> {jax.result_info = "result[2]"}, tensor<5x4xf32> {jax.result_info = "result[3]"}) {
    %0 = stablehlo.dot_general %arg0, %arg1, batching_dims = [2] x [0], contracting_dims = [0] x [1], precision = [DEFAULT, DEFAULT] : (tensor<5x3x4xf32>, tensor<4x5x6xf32>) -> tensor<4x3x6xf32>
    %1 = stablehlo.dot_general %arg2, %arg3, contracting_dims = [1, 2] x [0, 1], precision = [DEFAULT, DEFAULT] : (tensor<2x3x4xf32>, tensor<3x4x5xf32>) -> tensor<2x5xf32>
    %2 = stablehlo.dot_general %arg4, %arg5, contracting_dims = [] x [], precision = [DEFAULT, DEFAULT] : (tensor<3x2xf32>, tensor<4xf32>) -> tensor<3x2x4xf32>
    %3 = stablehlo.dot_general %arg0, %arg0, batching_dims = [0, 2] x [0, 2], contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<5x3x4xf32>, tensor<5x3x4xf32>) -> tensor<5x4xf32>
    return %0, %1, %2, %3 : tensor<4x3x6xf32>, tensor<2x5xf32>, tensor<3x2x4xf32>, tensor<5x4xf32>
  }
}
