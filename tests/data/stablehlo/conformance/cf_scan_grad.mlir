module @jit_cf_scan_grad attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<10x4x8xf32>, %arg1: tensor<4x16xf32>, %arg2: tensor<8x16xf32>, %arg3: tensor<16x16xf32>, %arg4: tensor<10x4x16xf32>) -> (tensor<f32> {jax.result_info = "result[0]"}, tensor<8x16xf32> {jax.result_info = "result[1][0]"}, tensor<16x16xf32> {jax.result_info = "result[1][1]"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<10x4x16xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<10x4x16xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<10x4x16xf32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %3 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<10x4x16xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %4:9 = stablehlo.while(%iterArg = %arg0, %iterArg_12 = %arg2, %iterArg_13 = %arg3, %iterArg_14 = %c, %iterArg_15 = %arg1, %iterArg_16 = %0, %iterArg_17 = %1, %iterArg_18 = %2, %iterArg_19 = %3) : tensor<10x4x8xf32>, tensor<8x16xf32>, tensor<16x16xf32>, tensor<i32>, tensor<4x16xf32>, tensor<10x4x16xf32>, tensor<10x4x16xf32>, tensor<10x4x16xf32>, tensor<10x4x16xf32>
    cond {
      %c_20 = stablehlo.constant dense<10> : tensor<i32>
      %18 = stablehlo.compare LT, %iterArg_14, %c_20, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %18 : tensor<i1>
    } do {
      %18 = func.call @dynamic_index_in_dim(%iterArg, %iterArg_14) : (tensor<10x4x8xf32>, tensor<i32>) -> tensor<4x8xf32>
      %19:5 = func.call @closed_call(%iterArg_12, %iterArg_13, %iterArg_15, %18) : (tensor<8x16xf32>, tensor<16x16xf32>, tensor<4x16xf32>, tensor<4x8xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>)
      %20 = func.call @dynamic_update_index_in_dim(%iterArg_16, %19#1, %iterArg_14) : (tensor<10x4x16xf32>, tensor<4x16xf32>, tensor<i32>) -> tensor<10x4x16xf32>
      %21 = func.call @dynamic_update_index_in_dim(%iterArg_17, %19#2, %iterArg_14) : (tensor<10x4x16xf32>, tensor<4x16xf32>, tensor<i32>) -> tensor<10x4x16xf32>
      %22 = func.call @dynamic_update_index_in_dim(%iterArg_18, %19#3, %iterArg_14) : (tensor<10x4x16xf32>, tensor<4x16xf32>, tensor<i32>) -> tensor<10x4x16xf32>
      %23 = func.call @dynamic_update_index_in_dim(%iterArg_19, %19#4, %iterArg_14) : (tensor<10x4x16xf32>, tensor<4x16xf32>, tensor<i32>) -> tensor<10x4x16xf32>
      %c_20 = stablehlo.constant dense<1> : tensor<i32>
      %24 = stablehlo.add %iterArg_14, %c_20 : tensor<i32>
      stablehlo.return %iterArg, %iterArg_12, %iterArg_13, %24, %19#0, %20, %21, %22, %23 : tensor<10x4x8xf32>, tensor<8x16xf32>, tensor<16x16xf32>, tensor<i32>, tensor<4x16xf32>, tensor<10x4x16xf32>, tensor<10x4x16xf32>, tensor<10x4x16xf32>, tensor<10x4x16xf32>
    }
    %5 = stablehlo.subtract %4#5, %arg4 : tensor<10x4x16xf32>
    %6 = stablehlo.multiply %5, %5 : tensor<10x4x16xf32>
    %cst_3 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %7 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<10x4x16xf32>
    %8 = stablehlo.multiply %7, %5 : tensor<10x4x16xf32>
    %cst_4 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %9 = stablehlo.reduce(%6 init: %cst_4) applies stablehlo.add across dimensions = [0, 1, 2] : (tensor<10x4x16xf32>, tensor<f32>) -> tensor<f32>
    %cst_5 = stablehlo.constant dense<6.400000e+02> : tensor<f32>
    %10 = stablehlo.divide %9, %cst_5 : tensor<f32>
    %cst_6 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %cst_7 = stablehlo.constant dense<6.400000e+02> : tensor<f32>
    %11 = stablehlo.divide %cst_6, %cst_7 : tensor<f32>
    %12 = stablehlo.broadcast_in_dim %11, dims = [] : (tensor<f32>) -> tensor<10x4x16xf32>
    %13 = stablehlo.multiply %12, %8 : tensor<10x4x16xf32>
    %cst_8 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %14 = stablehlo.broadcast_in_dim %cst_8, dims = [] : (tensor<f32>) -> tensor<4x16xf32>
    %cst_9 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %15 = stablehlo.broadcast_in_dim %cst_9, dims = [] : (tensor<f32>) -> tensor<8x16xf32>
    %cst_10 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %16 = stablehlo.broadcast_in_dim %cst_10, dims = [] : (tensor<f32>) -> tensor<16x16xf32>
    %c_11 = stablehlo.constant dense<0> : tensor<i32>
    %17:10 = stablehlo.while(%iterArg = %13, %iterArg_12 = %arg0, %iterArg_13 = %4#6, %iterArg_14 = %4#7, %iterArg_15 = %4#8, %iterArg_16 = %arg3, %iterArg_17 = %c_11, %iterArg_18 = %15, %iterArg_19 = %16, %iterArg_20 = %14) : tensor<10x4x16xf32>, tensor<10x4x8xf32>, tensor<10x4x16xf32>, tensor<10x4x16xf32>, tensor<10x4x16xf32>, tensor<16x16xf32>, tensor<i32>, tensor<8x16xf32>, tensor<16x16xf32>, tensor<4x16xf32>
    cond {
      %c_21 = stablehlo.constant dense<10> : tensor<i32>
      %18 = stablehlo.compare LT, %iterArg_17, %c_21, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %18 : tensor<i1>
    } do {
      %c_21 = stablehlo.constant dense<10> : tensor<i32>
      %18 = stablehlo.subtract %c_21, %iterArg_17 : tensor<i32>
      %c_22 = stablehlo.constant dense<1> : tensor<i32>
      %19 = stablehlo.subtract %18, %c_22 : tensor<i32>
      %20 = func.call @dynamic_index_in_dim_0(%iterArg, %19) : (tensor<10x4x16xf32>, tensor<i32>) -> tensor<4x16xf32>
      %21 = func.call @dynamic_index_in_dim(%iterArg_12, %19) : (tensor<10x4x8xf32>, tensor<i32>) -> tensor<4x8xf32>
      %22 = func.call @dynamic_index_in_dim_0(%iterArg_13, %19) : (tensor<10x4x16xf32>, tensor<i32>) -> tensor<4x16xf32>
      %23 = func.call @dynamic_index_in_dim_0(%iterArg_14, %19) : (tensor<10x4x16xf32>, tensor<i32>) -> tensor<4x16xf32>
      %24 = func.call @dynamic_index_in_dim_0(%iterArg_15, %19) : (tensor<10x4x16xf32>, tensor<i32>) -> tensor<4x16xf32>
      %25:3 = func.call @closed_call_1(%iterArg_16, %iterArg_18, %iterArg_19, %iterArg_20, %20, %21, %22, %23, %24) : (tensor<16x16xf32>, tensor<8x16xf32>, tensor<16x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x8xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) -> (tensor<8x16xf32>, tensor<16x16xf32>, tensor<4x16xf32>)
      %c_23 = stablehlo.constant dense<1> : tensor<i32>
      %26 = stablehlo.add %iterArg_17, %c_23 : tensor<i32>
      stablehlo.return %iterArg, %iterArg_12, %iterArg_13, %iterArg_14, %iterArg_15, %iterArg_16, %26, %25#0, %25#1, %25#2 : tensor<10x4x16xf32>, tensor<10x4x8xf32>, tensor<10x4x16xf32>, tensor<10x4x16xf32>, tensor<10x4x16xf32>, tensor<16x16xf32>, tensor<i32>, tensor<8x16xf32>, tensor<16x16xf32>, tensor<4x16xf32>
    }
    return %10, %17#7, %17#8 : tensor<f32>, tensor<8x16xf32>, tensor<16x16xf32>
  }
  func.func private @dynamic_index_in_dim(%arg0: tensor<10x4x8xf32>, %arg1: tensor<i32>) -> tensor<4x8xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.dynamic_slice %arg0, %arg1, %c, %c_0, sizes = [1, 4, 8] : (tensor<10x4x8xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x4x8xf32>
    %1 = stablehlo.reshape %0 : (tensor<1x4x8xf32>) -> tensor<4x8xf32>
    return %1 : tensor<4x8xf32>
  }
  func.func private @closed_call(%arg0: tensor<8x16xf32>, %arg1: tensor<16x16xf32>, %arg2: tensor<4x16xf32>, %arg3: tensor<4x8xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) {
    %0 = stablehlo.dot_general %arg3, %arg0, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    %1 = stablehlo.dot_general %arg2, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
    %2 = stablehlo.add %0, %1 : tensor<4x16xf32>
    %3 = stablehlo.tanh %2 : tensor<4x16xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x16xf32>
    %5 = stablehlo.subtract %4, %3 : tensor<4x16xf32>
    return %3, %3, %arg2, %3, %5 : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
  }
  func.func private @dynamic_update_index_in_dim(%arg0: tensor<10x4x16xf32>, %arg1: tensor<4x16xf32>, %arg2: tensor<i32>) -> tensor<10x4x16xf32> {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [1, 2] : (tensor<4x16xf32>) -> tensor<1x4x16xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.dynamic_update_slice %arg0, %0, %arg2, %c, %c_0 : (tensor<10x4x16xf32>, tensor<1x4x16xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<10x4x16xf32>
    return %1 : tensor<10x4x16xf32>
  }
  func.func private @dynamic_index_in_dim_0(%arg0: tensor<10x4x16xf32>, %arg1: tensor<i32>) -> tensor<4x16xf32> {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.dynamic_slice %arg0, %arg1, %c, %c_0, sizes = [1, 4, 16] : (tensor<10x4x16xf32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x4x16xf32>
    %1 = stablehlo.reshape %0 : (tensor<1x4x16xf32>) -> tensor<4x16xf32>
    return %1 : tensor<4x16xf32>
  }
  func.func private @closed_call_1(%arg0: tensor<16x16xf32>, %arg1: tensor<8x16xf32>, %arg2: tensor<16x16xf32>, %arg3: tensor<4x16xf32>, %arg4: tensor<4x16xf32>, %arg5: tensor<4x8xf32>, %arg6: tensor<4x16xf32>, %arg7: tensor<4x16xf32>, %arg8: tensor<4x16xf32>) -> (tensor<8x16xf32>, tensor<16x16xf32>, tensor<4x16xf32>) {
    %0 = stablehlo.add %arg3, %arg4 : tensor<4x16xf32>
    %1 = stablehlo.multiply %0, %arg8 : tensor<4x16xf32>
    %2 = stablehlo.multiply %1, %arg7 : tensor<4x16xf32>
    %3 = stablehlo.add %1, %2 : tensor<4x16xf32>
    %4 = stablehlo.dot_general %3, %arg6, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<16x16xf32>
    %5 = stablehlo.transpose %4, dims = [1, 0] : (tensor<16x16xf32>) -> tensor<16x16xf32>
    %6 = stablehlo.add %arg2, %5 : tensor<16x16xf32>
    %7 = stablehlo.dot_general %3, %arg0, contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
    %8 = stablehlo.dot_general %3, %arg5, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x16xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
    %9 = stablehlo.transpose %8, dims = [1, 0] : (tensor<16x8xf32>) -> tensor<8x16xf32>
    %10 = stablehlo.add %arg1, %9 : tensor<8x16xf32>
    return %10, %6, %7 : tensor<8x16xf32>, tensor<16x16xf32>, tensor<4x16xf32>
  }
}
