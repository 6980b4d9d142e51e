module @jit_special_functions attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<6x7xf32>) -> (tensor<6x7xf32> {jax.result_info = "result[0]"}, tensor<6x7xf32> {jax.result_info = "result[1]"}, tensor<6x7xf32> {jax.result_info = "result[2]"}, tensor<6x7xf32> {jax.result_info = "result[3]"}, tensor<6x7xf32> {jax.result_info = "result[4]"}, tensor<6x7xf32> {jax.result_info = "result[5]"}, tensor<6x7xf32> {jax.result_info = "result[6]"}, tensor<6x7xf32> {jax.result_info = "result[7]"}, tensor<6x7xf32> {jax.result_info = "result[8]"}, tensor<6x7xf32> {jax.result_info = "result[9]"}, tensor<6x7xf32> {jax.result_info = "result[10]"}, tensor<6x7xf32> {jax.result_info = "result[11]"}, tensor<6x7xf32> {jax.result_info = "result[12]"}, tensor<6x7xf32> {jax.result_info = "result[13]"}) {
    %0 = stablehlo.abs %arg0 : tensor<6x7xf32>
    %cst = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<6x7xf32>
    %2 = stablehlo.add %0, %1 : tensor<6x7xf32>
    %3 = chlo.erf %arg0 : tensor<6x7xf32> -> tensor<6x7xf32>
    %4 = chlo.lgamma %2 : tensor<6x7xf32> -> tensor<6x7xf32>
    %5 = chlo.digamma %2 : tensor<6x7xf32> -> tensor<6x7xf32>
    %6 = chlo.asinh %arg0 : tensor<6x7xf32> -> tensor<6x7xf32>
    %7 = chlo.atan %arg0 : tensor<6x7xf32> -> tensor<6x7xf32>
    %cst_0 = stablehlo.constant dense<3.000000e-01> : tensor<f32>
    %8 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<6x7xf32>
    %9 = stablehlo.multiply %arg0, %8 : tensor<6x7xf32>
    %10 = chlo.sinh %9 : tensor<6x7xf32> -> tensor<6x7xf32>
    %cst_1 = stablehlo.constant dense<3.000000e-01> : tensor<f32>
    %11 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<6x7xf32>
    %12 = stablehlo.multiply %arg0, %11 : tensor<6x7xf32>
    %13 = chlo.cosh %12 : tensor<6x7xf32> -> tensor<6x7xf32>
    %14 = stablehlo.tanh %arg0 : tensor<6x7xf32>
    %15 = chlo.acos %14 : tensor<6x7xf32> -> tensor<6x7xf32>
    %16 = stablehlo.tanh %arg0 : tensor<6x7xf32>
    %17 = chlo.asin %16 : tensor<6x7xf32> -> tensor<6x7xf32>
    %18 = call @round(%arg0) : (tensor<6x7xf32>) -> tensor<6x7xf32>
    %19 = stablehlo.floor %arg0 : tensor<6x7xf32>
    %20 = stablehlo.ceil %arg0 : tensor<6x7xf32>
    %21 = stablehlo.negate %arg0 : tensor<6x7xf32>
    %22 = stablehlo.exponential %21 : tensor<6x7xf32>
    %cst_2 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %23 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<6x7xf32>
    %24 = stablehlo.add %23, %22 : tensor<6x7xf32>
    %cst_3 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %25 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<6x7xf32>
    %26 = stablehlo.divide %25, %24 : tensor<6x7xf32>
    %27 = stablehlo.negate %arg0 : tensor<6x7xf32>
    %28 = stablehlo.exponential %27 : tensor<6x7xf32>
    %cst_4 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %29 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<6x7xf32>
    %30 = stablehlo.add %29, %28 : tensor<6x7xf32>
    %cst_5 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %31 = stablehlo.broadcast_in_dim %cst_5, dims = [] : (tensor<f32>) -> tensor<6x7xf32>
    %32 = stablehlo.divide %31, %30 : tensor<6x7xf32>
    return %3, %4, %5, %6, %7, %10, %13, %15, %17, %18, %19, %20, %26, %32 : tensor<6x7xf32>, tensor<6x7xf32>, tensor<6x7xf32>, tensor<6x7xf32>, tensor<6x7xf32>, tensor<6x7xf32>, tensor<6x7xf32>, tensor<6x7xf32>, tensor<6x7xf32>, tensor<6x7xf32>, tensor<6x7xf32>, tensor<6x7xf32>, tensor<6x7xf32>, tensor<6x7xf32>
  }
  func.func private @round(%arg0: tensor<6x7xf32>) -> tensor<6x7xf32> {
    %0 = stablehlo.round_nearest_even %arg0 : tensor<6x7xf32>
    return %0 : tensor<6x7xf32>
  }
}
