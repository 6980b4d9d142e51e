module @jit_ew_transcendental attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x16xf32>, %arg1: tensor<8x16xf32>) -> (tensor<8x16xf32> {jax.result_info = "result[0]"}, tensor<8x16xf32> {jax.result_info = "result[1]"}, tensor<8x16xf32> {jax.result_info = "result[2]"}, tensor<8x16xf32> {jax.result_info = "result[3]"}, tensor<8x16xf32> {jax.result_info = "result[4]"}, tensor<8x16xf32> {jax.result_info = "result[5]"}, tensor<8x16xf32> {jax.result_info = "result[6]"}, tensor<8x16xf32> {jax.result_info = "result[7]"}, tensor<8x16xf32> {jax.result_info = "result[8]"}) {
    %0 = stablehlo.exponential %arg1 : tensor<8x16xf32>
    %1 = stablehlo.log %arg0 : tensor<8x16xf32>
    %2 = stablehlo.log_plus_one %arg0 : tensor<8x16xf32>
    %3 = stablehlo.exponential_minus_one %arg1 : tensor<8x16xf32>
    %4 = stablehlo.tanh %arg1 : tensor<8x16xf32>
    %5 = stablehlo.negate %arg1 : tensor<8x16xf32>
    %6 = stablehlo.exponential %5 : tensor<8x16xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %7 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8x16xf32>
    %8 = stablehlo.add %7, %6 : tensor<8x16xf32>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %9 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<8x16xf32>
    %10 = stablehlo.divide %9, %8 : tensor<8x16xf32>
    %11 = stablehlo.sqrt %arg0 : tensor<8x16xf32>
    %12 = stablehlo.rsqrt %arg0 : tensor<8x16xf32>
    %13 = stablehlo.cbrt %arg1 : tensor<8x16xf32>
    return %0, %1, %2, %3, %4, %10, %11, %12, %13 : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>
  }
}
