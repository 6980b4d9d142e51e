module @jit_ew_trig_special attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x16xf32>, %arg1: tensor<8x16xf32>, %arg2: tensor<8x16xf32>) -> (tensor<8x16xf32> {jax.result_info = "result[0]"}, tensor<8x16xf32> {jax.result_info = "result[1]"}, tensor<8x16xf32> {jax.result_info = "result[2]"}, tensor<8x16xf32> {jax.result_info = "result[3]"}, tensor<8x16xf32> {jax.result_info = "result[4]"}, tensor<8x16xf32> {jax.result_info = "result[5]"}, tensor<8x16xf32> {jax.result_info = "result[6]"}, tensor<8x16xf32> {jax.result_info = "result[7]"}) {
    %0 = stablehlo.sine %arg0 : tensor<8x16xf32>
    %1 = stablehlo.cosine %arg0 : tensor<8x16xf32>
    %2 = stablehlo.tan %arg2 : tensor<8x16xf32>
    %3 = chlo.erf %arg0 : tensor<8x16xf32> -> tensor<8x16xf32>
    %4 = chlo.erfc %arg0 : tensor<8x16xf32> -> tensor<8x16xf32>
    %5 = chlo.erf_inv %arg2 : tensor<8x16xf32> -> tensor<8x16xf32>
    %6 = chlo.lgamma %arg1 : tensor<8x16xf32> -> tensor<8x16xf32>
    %7 = chlo.digamma %arg1 : tensor<8x16xf32> -> tensor<8x16xf32>
    return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>
  }
}
