module @jit_ew_select_clamp_compare attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x16xf32>, %arg1: tensor<8x16xf32>, %arg2: tensor<8x16xf32>) -> (tensor<8x16xf32> {jax.result_info = "result[0]"}, tensor<8x16xf32> {jax.result_info = "result[1]"}, tensor<8x16xf32> {jax.result_info = "result[2]"}, tensor<8x16xf32> {jax.result_info = "result[3]"}, tensor<8x16xi1> {jax.result_info = "result[4]"}, tensor<8x16xi1> {jax.result_info = "result[5]"}, tensor<8x16xi1> {jax.result_info = "result[6]"}, tensor<8x16xi1> {jax.result_info = "result[7]"}, tensor<8x16xi1> {jax.result_info = "result[8]"}, tensor<8x16xi1> {jax.result_info = "result[9]"}) {
    %0 = stablehlo.compare GT, %arg0, %arg1, FLOAT : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xi1>
    %1 = call @_where(%0, %arg0, %arg1) : (tensor<8x16xi1>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
    %cst = stablehlo.constant dense<-5.000000e-01> : tensor<f32>
    %cst_0 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8x16xf32>
    %3 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<8x16xf32>
    %4 = stablehlo.clamp %2, %arg0, %3 : tensor<8x16xf32>
    %cst_1 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %5 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<8x16xf32>
    %6 = stablehlo.add %arg2, %5 : tensor<8x16xf32>
    %7 = stablehlo.clamp %arg2, %arg0, %6 : tensor<8x16xf32>
    %8 = call @clip(%arg1, %arg2) : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
    %9 = stablehlo.compare EQ, %arg0, %arg1, FLOAT : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xi1>
    %10 = stablehlo.compare NE, %arg0, %arg1, FLOAT : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xi1>
    %11 = stablehlo.compare LT, %arg0, %arg1, FLOAT : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xi1>
    %12 = stablehlo.compare LE, %arg0, %arg1, FLOAT : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xi1>
    %13 = stablehlo.compare GT, %arg0, %arg1, FLOAT : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xi1>
    %14 = stablehlo.compare GE, %arg0, %arg1, FLOAT : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xi1>
    return %1, %4, %7, %8, %9, %10, %11, %12, %13, %14 : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xi1>, tensor<8x16xi1>, tensor<8x16xi1>, tensor<8x16xi1>, tensor<8x16xi1>, tensor<8x16xi1>
  }
  func.func private @_where(%arg0: tensor<8x16xi1>, %arg1: tensor<8x16xf32>, %arg2: tensor<8x16xf32>) -> tensor<8x16xf32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<8x16xi1>, tensor<8x16xf32>
    return %0 : tensor<8x16xf32>
  }
  func.func private @clip(%arg0: tensor<8x16xf32>, %arg1: tensor<8x16xf32>) -> tensor<8x16xf32> {
    %0 = stablehlo.maximum %arg1, %arg0 : tensor<8x16xf32>
    return %0 : tensor<8x16xf32>
  }
}
