module @jit_while_newton_sqrt attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<16xf32>) -> (tensor<16xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.abs %arg0 : tensor<16xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<16xf32>
    %2 = stablehlo.add %0, %1 : tensor<16xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %3:3 = stablehlo.while(%iterArg = %2, %iterArg_0 = %c, %iterArg_1 = %2) : tensor<16xf32>, tensor<i32>, tensor<16xf32>
    cond {
      %c_2 = stablehlo.constant dense<20> : tensor<i32>
      %4 = stablehlo.compare LT, %iterArg_0, %c_2, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %4 : tensor<i1>
    } do {
      %c_2 = stablehlo.constant dense<1> : tensor<i32>
      %4 = stablehlo.add %iterArg_0, %c_2 : tensor<i32>
      %5 = stablehlo.divide %iterArg, %iterArg_1 : tensor<16xf32>
      %6 = stablehlo.add %iterArg_1, %5 : tensor<16xf32>
      %cst_3 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
      %7 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<16xf32>
      %8 = stablehlo.multiply %7, %6 : tensor<16xf32>
      stablehlo.return %iterArg, %4, %8 : tensor<16xf32>, tensor<i32>, tensor<16xf32>
    }
    return %3#2 : tensor<16xf32>
  }
}
