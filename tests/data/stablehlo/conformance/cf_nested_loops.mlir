module @jit_cf_nested_loops attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<6x6xf32>, %arg1: tensor<6x6xf32>) -> (tensor<6x6xf32> {jax.result_info = "result[0]"}, tensor<6xf32> {jax.result_info = "result[1]"}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %0:4 = stablehlo.while(%iterArg = %arg0, %iterArg_2 = %c_0, %iterArg_3 = %c, %iterArg_4 = %arg1) : tensor<6x6xf32>, tensor<i32>, tensor<i32>, tensor<6x6xf32>
    cond {
      %c_5 = stablehlo.constant dense<4> : tensor<i32>
      %4 = stablehlo.compare LT, %iterArg_2, %c_5, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %4 : tensor<i1>
    } do {
      %4:2 = func.call @closed_call(%iterArg, %iterArg_3, %iterArg_4) : (tensor<6x6xf32>, tensor<i32>, tensor<6x6xf32>) -> (tensor<i32>, tensor<6x6xf32>)
      %c_5 = stablehlo.constant dense<1> : tensor<i32>
      %5 = stablehlo.add %iterArg_2, %c_5 : tensor<i32>
      stablehlo.return %iterArg, %5, %4#0, %4#1 : tensor<6x6xf32>, tensor<i32>, tensor<i32>, tensor<6x6xf32>
    }
    %1 = stablehlo.slice %arg1 [0:1, 0:6] : (tensor<6x6xf32>) -> tensor<1x6xf32>
    %2 = stablehlo.reshape %1 : (tensor<1x6xf32>) -> tensor<6xf32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %3:2 = stablehlo.while(%iterArg = %2, %iterArg_2 = %c_1) : tensor<6xf32>, tensor<i32>
    cond {
      %c_3 = stablehlo.constant dense<3> : tensor<i32>
      %4 = stablehlo.compare LT, %iterArg_2, %c_3, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %4 : tensor<i1>
    } do {
      %c_3 = stablehlo.constant dense<0> : tensor<i32>
      %c_4 = stablehlo.constant dense<0> : tensor<i32>
      %4:3 = stablehlo.while(%iterArg_6 = %c_4, %iterArg_7 = %c_3, %iterArg_8 = %iterArg) : tensor<i32>, tensor<i32>, tensor<6xf32>
      cond {
        %c_9 = stablehlo.constant dense<2> : tensor<i32>
        %6 = stablehlo.compare LT, %iterArg_6, %c_9, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
        stablehlo.return %6 : tensor<i1>
      } do {
        %6:2 = func.call @closed_call_1(%iterArg_7, %iterArg_8) : (tensor<i32>, tensor<6xf32>) -> (tensor<i32>, tensor<6xf32>)
        %c_9 = stablehlo.constant dense<1> : tensor<i32>
        %7 = stablehlo.add %iterArg_6, %c_9 : tensor<i32>
        stablehlo.return %7, %6#0, %6#1 : tensor<i32>, tensor<i32>, tensor<6xf32>
      }
      %c_5 = stablehlo.constant dense<1> : tensor<i32>
      %5 = stablehlo.add %iterArg_2, %c_5 : tensor<i32>
      stablehlo.return %4#2, %5 : tensor<6xf32>, tensor<i32>
    }
    return %0#3, %3#0 : tensor<6x6xf32>, tensor<6xf32>
  }
  func.func private @closed_call(%arg0: tensor<6x6xf32>, %arg1: tensor<i32>, %arg2: tensor<6x6xf32>) -> (tensor<i32>, tensor<6x6xf32>) {
    %c = stablehlo.constant dense<1> : tensor<i32>
    %0 = stablehlo.add %arg1, %c : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %1:4 = stablehlo.while(%iterArg = %arg0, %iterArg_2 = %c_1, %iterArg_3 = %c_0, %iterArg_4 = %arg2) : tensor<6x6xf32>, tensor<i32>, tensor<i32>, tensor<6x6xf32>
    cond {
      %c_5 = stablehlo.constant dense<3> : tensor<i32>
      %6 = stablehlo.compare LT, %iterArg_2, %c_5, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %6 : tensor<i1>
    } do {
      %6:2 = func.call @closed_call_0(%iterArg, %iterArg_3, %iterArg_4) : (tensor<6x6xf32>, tensor<i32>, tensor<6x6xf32>) -> (tensor<i32>, tensor<6x6xf32>)
      %c_5 = stablehlo.constant dense<1> : tensor<i32>
      %7 = stablehlo.add %iterArg_2, %c_5 : tensor<i32>
      stablehlo.return %iterArg, %7, %6#0, %6#1 : tensor<6x6xf32>, tensor<i32>, tensor<i32>, tensor<6x6xf32>
    }
    %2 = stablehlo.convert %arg1 : (tensor<i32>) -> tensor<f32>
    %cst = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %3 = stablehlo.multiply %2, %cst : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [] : (tensor<f32>) -> tensor<6x6xf32>
    %5 = stablehlo.add %1#3, %4 : tensor<6x6xf32>
    return %0, %5 : tensor<i32>, tensor<6x6xf32>
  }
  func.func private @closed_call_0(%arg0: tensor<6x6xf32>, %arg1: tensor<i32>, %arg2: tensor<6x6xf32>) -> (tensor<i32>, tensor<6x6xf32>) {
    %c = stablehlo.constant dense<1> : tensor<i32>
    %0 = stablehlo.add %arg1, %c : tensor<i32>
    %1 = stablehlo.dot_general %arg2, %arg0, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<6x6xf32>, tensor<6x6xf32>) -> tensor<6x6xf32>
    %cst = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<6x6xf32>
    %3 = stablehlo.multiply %1, %2 : tensor<6x6xf32>
    %4 = stablehlo.convert %arg1 : (tensor<i32>) -> tensor<f32>
    %cst_0 = stablehlo.constant dense<0.00999999977> : tensor<f32>
    %5 = stablehlo.multiply %4, %cst_0 : tensor<f32>
    %6 = stablehlo.broadcast_in_dim %5, dims = [] : (tensor<f32>) -> tensor<6x6xf32>
    %7 = stablehlo.add %3, %6 : tensor<6x6xf32>
    return %0, %7 : tensor<i32>, tensor<6x6xf32>
  }
  func.func private @closed_call_1(%arg0: tensor<i32>, %arg1: tensor<6xf32>) -> (tensor<i32>, tensor<6xf32>) {
    %c = stablehlo.constant dense<1> : tensor<i32>
    %0 = stablehlo.add %arg0, %c : tensor<i32>
    %cst = stablehlo.constant dense<0.899999976> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %2 = stablehlo.multiply %arg1, %1 : tensor<6xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %3 = stablehlo.reduce(%arg1 init: %cst_0) applies stablehlo.add across dimensions = [0] : (tensor<6xf32>, tensor<f32>) -> tensor<f32>
    %cst_1 = stablehlo.constant dense<0.00999999977> : tensor<f32>
    %4 = stablehlo.multiply %3, %cst_1 : tensor<f32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %6 = stablehlo.add %2, %5 : tensor<6xf32>
    return %0, %6 : tensor<i32>, tensor<6xf32>
  }
}
