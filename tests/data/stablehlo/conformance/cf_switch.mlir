module @jit_cf_switch attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<i32>, %arg1: tensor<i32>, %arg2: tensor<8x16xf32>) -> (tensor<8x16xf32> {jax.result_info = "result[0]"}, tensor<8x16xf32> {jax.result_info = "result[1]"}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<2> : tensor<i32>
    %0 = stablehlo.clamp %c, %arg0, %c_0 : tensor<i32>
    %1 = "stablehlo.case"(%0) ({
      %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %4 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8x16xf32>
      %5 = stablehlo.add %arg2, %4 : tensor<8x16xf32>
      stablehlo.return %5 : tensor<8x16xf32>
    }, {
      %4 = stablehlo.exponential %arg2 : tensor<8x16xf32>
      stablehlo.return %4 : tensor<8x16xf32>
    }, {
      %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %4 = stablehlo.reduce(%arg2 init: %cst) applies stablehlo.add across dimensions = [0, 1] : (tensor<8x16xf32>, tensor<f32>) -> tensor<f32>
      %cst_3 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %5 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<8x16xf32>
      %6 = stablehlo.broadcast_in_dim %4, dims = [] : (tensor<f32>) -> tensor<8x16xf32>
      %7 = stablehlo.multiply %6, %5 : tensor<8x16xf32>
      stablehlo.return %7 : tensor<8x16xf32>
    }) : (tensor<i32>) -> tensor<8x16xf32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %c_2 = stablehlo.constant dense<2> : tensor<i32>
    %2 = stablehlo.clamp %c_1, %arg1, %c_2 : tensor<i32>
    %3 = "stablehlo.case"(%2) ({
      %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %4 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8x16xf32>
      %5 = stablehlo.add %arg2, %4 : tensor<8x16xf32>
      stablehlo.return %5 : tensor<8x16xf32>
    }, {
      %4 = stablehlo.exponential %arg2 : tensor<8x16xf32>
      stablehlo.return %4 : tensor<8x16xf32>
    }, {
      %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %4 = stablehlo.reduce(%arg2 init: %cst) applies stablehlo.add across dimensions = [0, 1] : (tensor<8x16xf32>, tensor<f32>) -> tensor<f32>
      %cst_3 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %5 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<8x16xf32>
      %6 = stablehlo.broadcast_in_dim %4, dims = [] : (tensor<f32>) -> tensor<8x16xf32>
      %7 = stablehlo.multiply %6, %5 : tensor<8x16xf32>
      stablehlo.return %7 : tensor<8x16xf32>
    }) : (tensor<i32>) -> tensor<8x16xf32>
    return %1, %3 : tensor<8x16xf32>, tensor<8x16xf32>
  }
}
