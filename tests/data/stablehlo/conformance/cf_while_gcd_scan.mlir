module @jit_cf_while_gcd_scan attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<16xi32>, %arg1: tensor<16xi32>, %arg2: tensor<8x4xf32>) -> (tensor<16xi32> {jax.result_info = "result[0]"}, tensor<4xf32> {jax.result_info = "result[1][0]"}, tensor<8x4xf32> {jax.result_info = "result[1][1]"}, tensor<4xf32> {jax.result_info = "result[2][0]"}, tensor<8x4xf32> {jax.result_info = "result[2][1]"}) {
    %0:2 = stablehlo.while(%iterArg = %arg0, %iterArg_4 = %arg1) : tensor<16xi32>, tensor<16xi32>
    cond {
      %c_5 = stablehlo.constant dense<0> : tensor<i32>
      %9 = stablehlo.broadcast_in_dim %c_5, dims = [] : (tensor<i32>) -> tensor<16xi32>
      %10 = stablehlo.compare NE, %iterArg_4, %9, SIGNED : (tensor<16xi32>, tensor<16xi32>) -> tensor<16xi1>
      %c_6 = stablehlo.constant dense<false> : tensor<i1>
      %11 = stablehlo.reduce(%10 init: %c_6) applies stablehlo.or across dimensions = [0] : (tensor<16xi1>, tensor<i1>) -> tensor<i1>
      stablehlo.return %11 : tensor<i1>
    } do {
      %c_5 = stablehlo.constant dense<0> : tensor<i32>
      %9 = stablehlo.broadcast_in_dim %c_5, dims = [] : (tensor<i32>) -> tensor<16xi32>
      %10 = stablehlo.compare NE, %iterArg_4, %9, SIGNED : (tensor<16xi32>, tensor<16xi32>) -> tensor<16xi1>
      %c_6 = stablehlo.constant dense<1> : tensor<i32>
      %11 = func.call @_where(%10, %iterArg_4, %c_6) : (tensor<16xi1>, tensor<16xi32>, tensor<i32>) -> tensor<16xi32>
      %12 = func.call @_where_0(%10, %iterArg_4, %iterArg) : (tensor<16xi1>, tensor<16xi32>, tensor<16xi32>) -> tensor<16xi32>
      %13 = func.call @remainder(%iterArg, %11) : (tensor<16xi32>, tensor<16xi32>) -> tensor<16xi32>
      %c_7 = stablehlo.constant dense<0> : tensor<i32>
      %14 = func.call @_where(%10, %13, %c_7) : (tensor<16xi1>, tensor<16xi32>, tensor<i32>) -> tensor<16xi32>
      stablehlo.return %12, %14 : tensor<16xi32>, tensor<16xi32>
    }
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<8x4xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %3:4 = stablehlo.while(%iterArg = %arg2, %iterArg_4 = %c, %iterArg_5 = %1, %iterArg_6 = %2) : tensor<8x4xf32>, tensor<i32>, tensor<4xf32>, tensor<8x4xf32>
    cond {
      %c_7 = stablehlo.constant dense<8> : tensor<i32>
      %9 = stablehlo.compare LT, %iterArg_4, %c_7, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %9 : tensor<i1>
    } do {
      %c_7 = stablehlo.constant dense<8> : tensor<i32>
      %9 = stablehlo.subtract %c_7, %iterArg_4 : tensor<i32>
      %c_8 = stablehlo.constant dense<1> : tensor<i32>
      %10 = stablehlo.subtract %9, %c_8 : tensor<i32>
      %11 = func.call @dynamic_index_in_dim(%iterArg, %10) : (tensor<8x4xf32>, tensor<i32>) -> tensor<4xf32>
      %12:2 = func.call @closed_call(%iterArg_5, %11) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
      %13 = func.call @dynamic_update_index_in_dim(%iterArg_6, %12#1, %10) : (tensor<8x4xf32>, tensor<4xf32>, tensor<i32>) -> tensor<8x4xf32>
      %c_9 = stablehlo.constant dense<1> : tensor<i32>
      %14 = stablehlo.add %iterArg_4, %c_9 : tensor<i32>
      stablehlo.return %iterArg, %14, %12#0, %13 : tensor<8x4xf32>, tensor<i32>, tensor<4xf32>, tensor<8x4xf32>
    }
    %cst_1 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %5 = stablehlo.reshape %arg2 : (tensor<8x4xf32>) -> tensor<4x2x4xf32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %6 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<4x2x4xf32>
    %c_3 = stablehlo.constant dense<0> : tensor<i32>
    %7:4 = stablehlo.while(%iterArg = %5, %iterArg_4 = %c_3, %iterArg_5 = %4, %iterArg_6 = %6) : tensor<4x2x4xf32>, tensor<i32>, tensor<4xf32>, tensor<4x2x4xf32>
    cond {
      %c_7 = stablehlo.constant dense<4> : tensor<i32>
      %9 = stablehlo.compare LT, %iterArg_4, %c_7, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %9 : tensor<i1>
    } do {
      %9 = func.call @dynamic_index_in_dim_1(%iterArg, %iterArg_4) : (tensor<4x2x4xf32>, tensor<i32>) -> tensor<2x4xf32>
      %10 = stablehlo.slice %9 [0:1, 0:4] : (tensor<2x4xf32>) -> tensor<1x4xf32>
      %11 = stablehlo.reshape %10 : (tensor<1x4xf32>) -> tensor<4xf32>
      %12:2 = func.call @closed_call_2(%iterArg_5, %11) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
      %13 = stablehlo.slice %9 [1:2, 0:4] : (tensor<2x4xf32>) -> tensor<1x4xf32>
      %14 = stablehlo.reshape %13 : (tensor<1x4xf32>) -> tensor<4xf32>
      %15:2 = func.call @closed_call_2(%12#0, %14) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
      %16 = stablehlo.broadcast_in_dim %12#1, dims = [1] : (tensor<4xf32>) -> tensor<1x4xf32>
      %17 = stablehlo.broadcast_in_dim %15#1, dims = [1] : (tensor<4xf32>) -> tensor<1x4xf32>
      %18 = stablehlo.concatenate %16, %17, dim = 0 : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<2x4xf32>
      %19 = func.call @dynamic_update_index_in_dim_3(%iterArg_6, %18, %iterArg_4) : (tensor<4x2x4xf32>, tensor<2x4xf32>, tensor<i32>) -> tensor<4x2x4xf32>
      %c_7 = stablehlo.constant dense<1> : tensor<i32>
      %20 = stablehlo.add %iterArg_4, %c_7 : tensor<i32>
      stablehlo.return %iterArg, %20, %15#0, %19 : tensor<4x2x4xf32>, tensor<i32>, tensor<4xf32>, tensor<4x2x4xf32>
    }
    %8 = stablehlo.reshape %7#3 : (tensor<4x2x4xf32>) -> tensor<8x4xf32>
    return %0#0, %3#2, %3#3, %7#2, %8 : tensor<16xi32>, tensor<4xf32>, tensor<8x4xf32>, tensor<4xf32>, tensor<8x4xf32>
  }
  func.func private @_where(%arg0: tensor<16xi1>, %arg1: tensor<16xi32>, %arg2: tensor<i32>) -> tensor<16xi32> {
    %0 = stablehlo.convert %arg2 : tensor<i32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<i32>) -> tensor<16xi32>
    %2 = stablehlo.select %arg0, %arg1, %1 : tensor<16xi1>, tensor<16xi32>
    return %2 : tensor<16xi32>
  }
  func.func private @_where_0(%arg0: tensor<16xi1>, %arg1: tensor<16xi32>, %arg2: tensor<16xi32>) -> tensor<16xi32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<16xi1>, tensor<16xi32>
    return %0 : tensor<16xi32>
  }
  func.func private @remainder(%arg0: tensor<16xi32>, %arg1: tensor<16xi32>) -> tensor<16xi32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<16xi32>
    %1 = stablehlo.compare EQ, %arg1, %0, SIGNED : (tensor<16xi32>, tensor<16xi32>) -> tensor<16xi1>
    %c_0 = stablehlo.constant dense<1> : tensor<i32>
    %2 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<16xi32>
    %3 = call @_where_0(%1, %2, %arg1) : (tensor<16xi1>, tensor<16xi32>, tensor<16xi32>) -> tensor<16xi32>
    %4 = stablehlo.remainder %arg0, %3 : tensor<16xi32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %5 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i32>) -> tensor<16xi32>
    %6 = stablehlo.compare NE, %4, %5, SIGNED : (tensor<16xi32>, tensor<16xi32>) -> tensor<16xi1>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %7 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i32>) -> tensor<16xi32>
    %8 = stablehlo.compare LT, %4, %7, SIGNED : (tensor<16xi32>, tensor<16xi32>) -> tensor<16xi1>
    %c_3 = stablehlo.constant dense<0> : tensor<i32>
    %9 = stablehlo.broadcast_in_dim %c_3, dims = [] : (tensor<i32>) -> tensor<16xi32>
    %10 = stablehlo.compare LT, %3, %9, SIGNED : (tensor<16xi32>, tensor<16xi32>) -> tensor<16xi1>
    %11 = stablehlo.compare NE, %8, %10, UNSIGNED : (tensor<16xi1>, tensor<16xi1>) -> tensor<16xi1>
    %12 = stablehlo.and %11, %6 : tensor<16xi1>
    %13 = stablehlo.add %4, %3 : tensor<16xi32>
    %14 = stablehlo.select %12, %13, %4 : tensor<16xi1>, tensor<16xi32>
    return %14 : tensor<16xi32>
  }
  func.func private @dynamic_index_in_dim(%arg0: tensor<8x4xf32>, %arg1: tensor<i32>) -> tensor<4xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.dynamic_slice %arg0, %arg1, %c, sizes = [1, 4] : (tensor<8x4xf32>, tensor<i32>, tensor<i32>) -> tensor<1x4xf32>
    %1 = stablehlo.reshape %0 : (tensor<1x4xf32>) -> tensor<4xf32>
    return %1 : tensor<4xf32>
  }
  func.func private @closed_call(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
    %cst = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %1 = stablehlo.multiply %arg0, %0 : tensor<4xf32>
    %2 = stablehlo.add %1, %arg1 : tensor<4xf32>
    return %2, %arg0 : tensor<4xf32>, tensor<4xf32>
  }
  func.func private @dynamic_update_index_in_dim(%arg0: tensor<8x4xf32>, %arg1: tensor<4xf32>, %arg2: tensor<i32>) -> tensor<8x4xf32> {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<4xf32>) -> tensor<1x4xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.dynamic_update_slice %arg0, %0, %arg2, %c : (tensor<8x4xf32>, tensor<1x4xf32>, tensor<i32>, tensor<i32>) -> tensor<8x4xf32>
    return %1 : tensor<8x4xf32>
  }
  func.func private @dynamic_index_in_dim_1(%arg0: tensor<4x2x4xf32>, %arg1: tensor<i32>) -> tensor<2x4xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.dynamic_slice %arg0, %arg1, %c, %c_0, sizes = [1, 2, 4] : (tensor<4x2x4xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x2x4xf32>
    %1 = stablehlo.reshape %0 : (tensor<1x2x4xf32>) -> tensor<2x4xf32>
    return %1 : tensor<2x4xf32>
  }
  func.func private @closed_call_2(%arg0: tensor<4xf32>, %arg1: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
    %0 = stablehlo.add %arg0, %arg1 : tensor<4xf32>
    %1 = stablehlo.multiply %arg0, %arg1 : tensor<4xf32>
    return %0, %1 : tensor<4xf32>, tensor<4xf32>
  }
  func.func private @dynamic_update_index_in_dim_3(%arg0: tensor<4x2x4xf32>, %arg1: tensor<2x4xf32>, %arg2: tensor<i32>) -> tensor<4x2x4xf32> {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [1, 2] : (tensor<2x4xf32>) -> tensor<1x2x4xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.dynamic_update_slice %arg0, %0, %arg2, %c, %c_0 : (tensor<4x2x4xf32>, tensor<1x2x4xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<4x2x4xf32>
    return %1 : tensor<4x2x4xf32>
  }
}
