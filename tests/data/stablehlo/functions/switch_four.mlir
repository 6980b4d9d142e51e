module @jit_switch_four attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x4xf32>, %arg1: tensor<i32>) -> (tensor<4x4xf32> {jax.result_info = "result"}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<3> : tensor<i32>
    %0 = stablehlo.clamp %c, %arg1, %c_0 : tensor<i32>
    %1 = "stablehlo.case"(%0) ({
      stablehlo.return %arg0 : tensor<4x4xf32>
    }, {
      %2 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
      stablehlo.return %2 : tensor<4x4xf32>
    }, {
      %2 = stablehlo.dot_general %arg0, %arg0, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
      stablehlo.return %2 : tensor<4x4xf32>
    }, {
      %2 = stablehlo.negate %arg0 : tensor<4x4xf32>
      stablehlo.return %2 : tensor<4x4xf32>
    }) : (tensor<i32>) -> tensor<4x4xf32>
    return %1 : tensor<4x4xf32>
  }
}
