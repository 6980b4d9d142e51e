module @jit_ew_pow_atan2_rem attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x16xf32>, %arg1: tensor<8x16xf32>, %arg2: tensor<8x16xf32>) -> (tensor<8x16xf32> {jax.result_info = "result[0]"}, tensor<8x16xf32> {jax.result_info = "result[1]"}, tensor<8x16xf32> {jax.result_info = "result[2]"}, tensor<8x16xf32> {jax.result_info = "result[3]"}, tensor<8x16xf32> {jax.result_info = "result[4]"}, tensor<8x16xf32> {jax.result_info = "result[5]"}, tensor<8x16xf32> {jax.result_info = "result[6]"}, tensor<8x16xf32> {jax.result_info = "result[7]"}, tensor<8x16xf32> {jax.result_info = "result[8]"}, tensor<8x16xf32> {jax.result_info = "result[9]"}) {
    %0 = stablehlo.power %arg0, %arg1 : tensor<8x16xf32>
    %cst = stablehlo.constant dense<2.500000e+00> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8x16xf32>
    %2 = stablehlo.power %arg0, %1 : tensor<8x16xf32>
    %3 = stablehlo.multiply %arg1, %arg1 : tensor<8x16xf32>
    %4 = stablehlo.multiply %3, %arg1 : tensor<8x16xf32>
    %5 = stablehlo.multiply %arg0, %arg0 : tensor<8x16xf32>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %6 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<8x16xf32>
    %7 = stablehlo.divide %6, %5 : tensor<8x16xf32>
    %8 = stablehlo.atan2 %arg1, %arg2 : tensor<8x16xf32>
    %cst_1 = stablehlo.constant dense<5.000000e+00> : tensor<f32>
    %9 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<8x16xf32>
    %10 = stablehlo.multiply %9, %arg1 : tensor<8x16xf32>
    %11 = call @remainder(%10, %arg2) : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
    %cst_2 = stablehlo.constant dense<5.000000e+00> : tensor<f32>
    %12 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<8x16xf32>
    %13 = stablehlo.multiply %12, %arg1 : tensor<8x16xf32>
    %14 = call @fmod(%13, %arg2) : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
    %15 = call @hypot(%arg1, %arg2) : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
    %16 = stablehlo.maximum %arg1, %arg2 : tensor<8x16xf32>
    %17 = stablehlo.subtract %arg1, %arg2 : tensor<8x16xf32>
    %18 = stablehlo.compare NE, %17, %17, FLOAT : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xi1>
    %19 = stablehlo.add %arg1, %arg2 : tensor<8x16xf32>
    %20 = stablehlo.abs %17 : tensor<8x16xf32>
    %21 = stablehlo.negate %20 : tensor<8x16xf32>
    %22 = stablehlo.exponential %21 : tensor<8x16xf32>
    %23 = stablehlo.log_plus_one %22 : tensor<8x16xf32>
    %24 = stablehlo.add %16, %23 : tensor<8x16xf32>
    %25 = stablehlo.select %18, %19, %24 : tensor<8x16xi1>, tensor<8x16xf32>
    %26 = chlo.next_after %arg1, %arg2 : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
    return %0, %2, %4, %7, %8, %11, %14, %15, %25, %26 : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>
  }
  func.func private @remainder(%arg0: tensor<8x16xf32>, %arg1: tensor<8x16xf32>) -> tensor<8x16xf32> {
    %0 = stablehlo.remainder %arg0, %arg1 : tensor<8x16xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8x16xf32>
    %2 = stablehlo.compare NE, %0, %1, FLOAT : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xi1>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %3 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<8x16xf32>
    %4 = stablehlo.compare LT, %0, %3, FLOAT : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xi1>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %5 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<8x16xf32>
    %6 = stablehlo.compare LT, %arg1, %5, FLOAT : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xi1>
    %7 = stablehlo.compare NE, %4, %6, UNSIGNED : (tensor<8x16xi1>, tensor<8x16xi1>) -> tensor<8x16xi1>
    %8 = stablehlo.and %7, %2 : tensor<8x16xi1>
    %9 = stablehlo.add %0, %arg1 : tensor<8x16xf32>
    %10 = stablehlo.select %8, %9, %0 : tensor<8x16xi1>, tensor<8x16xf32>
    return %10 : tensor<8x16xf32>
  }
  func.func private @fmod(%arg0: tensor<8x16xf32>, %arg1: tensor<8x16xf32>) -> tensor<8x16xf32> {
    %0 = stablehlo.remainder %arg0, %arg1 : tensor<8x16xf32>
    return %0 : tensor<8x16xf32>
  }
  func.func private @hypot(%arg0: tensor<8x16xf32>, %arg1: tensor<8x16xf32>) -> tensor<8x16xf32> {
    %0 = stablehlo.abs %arg0 : tensor<8x16xf32>
    %1 = stablehlo.abs %arg1 : tensor<8x16xf32>
    %cst = stablehlo.constant dense<0x7F800000> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8x16xf32>
    %3 = stablehlo.compare EQ, %0, %2, FLOAT : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xi1>
    %cst_0 = stablehlo.constant dense<0x7F800000> : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<8x16xf32>
    %5 = stablehlo.compare EQ, %1, %4, FLOAT : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xi1>
    %6 = stablehlo.or %3, %5 : tensor<8x16xi1>
    %7 = stablehlo.maximum %0, %1 : tensor<8x16xf32>
    %8 = stablehlo.minimum %0, %1 : tensor<8x16xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %9 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<8x16xf32>
    %10 = stablehlo.compare EQ, %7, %9, FLOAT : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xi1>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %11 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<8x16xf32>
    %12 = stablehlo.compare EQ, %7, %11, FLOAT : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xi1>
    %cst_3 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %13 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<8x16xf32>
    %14 = call @_where(%12, %13, %7) : (tensor<8x16xi1>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
    %15 = stablehlo.divide %8, %14 : tensor<8x16xf32>
    %16 = chlo.square %15 : tensor<8x16xf32> -> tensor<8x16xf32>
    %cst_4 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %17 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<8x16xf32>
    %18 = stablehlo.add %17, %16 : tensor<8x16xf32>
    %19 = stablehlo.sqrt %18 : tensor<8x16xf32>
    %20 = stablehlo.multiply %7, %19 : tensor<8x16xf32>
    %21 = call @_where(%10, %7, %20) : (tensor<8x16xi1>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
    %cst_5 = stablehlo.constant dense<0x7F800000> : tensor<f32>
    %22 = call @_where_0(%6, %cst_5, %21) : (tensor<8x16xi1>, tensor<f32>, tensor<8x16xf32>) -> tensor<8x16xf32>
    return %22 : tensor<8x16xf32>
  }
  func.func private @_where(%arg0: tensor<8x16xi1>, %arg1: tensor<8x16xf32>, %arg2: tensor<8x16xf32>) -> tensor<8x16xf32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<8x16xi1>, tensor<8x16xf32>
    return %0 : tensor<8x16xf32>
  }
  func.func private @_where_0(%arg0: tensor<8x16xi1>, %arg1: tensor<f32>, %arg2: tensor<8x16xf32>) -> tensor<8x16xf32> {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<f32>) -> tensor<8x16xf32>
    %1 = stablehlo.select %arg0, %0, %arg2 : tensor<8x16xi1>, tensor<8x16xf32>
    return %1 : tensor<8x16xf32>
  }
}
