module @jit_red_logical_integer attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x16xf32>, %arg1: tensor<8x16xi1>, %arg2: tensor<8x16xi32>, %arg3: tensor<8x16xui8>, %arg4: tensor<8x16xi8>) -> (tensor<8xi1> {jax.result_info = "result[0]"}, tensor<16xi1> {jax.result_info = "result[1]"}, tensor<i1> {jax.result_info = "result[2]"}, tensor<8xi1> {jax.result_info = "result[3]"}, tensor<16xi32> {jax.result_info = "result[4]"}, tensor<8xi32> {jax.result_info = "result[5]"}, tensor<16xui8> {jax.result_info = "result[6]"}, tensor<ui8> {jax.result_info = "result[7]"}, tensor<8xi8> {jax.result_info = "result[8]"}, tensor<8xui32> {jax.result_info = "result[9]"}) {
    %cst = stablehlo.constant dense<-2.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8x16xf32>
    %1 = stablehlo.compare GT, %arg0, %0, FLOAT : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xi1>
    %c = stablehlo.constant dense<true> : tensor<i1>
    %2 = stablehlo.reduce(%1 init: %c) applies stablehlo.and across dimensions = [1] : (tensor<8x16xi1>, tensor<i1>) -> tensor<8xi1>
    %cst_0 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %3 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<8x16xf32>
    %4 = stablehlo.compare GT, %arg0, %3, FLOAT : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xi1>
    %c_1 = stablehlo.constant dense<false> : tensor<i1>
    %5 = stablehlo.reduce(%4 init: %c_1) applies stablehlo.or across dimensions = [0] : (tensor<8x16xi1>, tensor<i1>) -> tensor<16xi1>
    %c_2 = stablehlo.constant dense<true> : tensor<i1>
    %6 = stablehlo.reduce(%arg1 init: %c_2) applies stablehlo.and across dimensions = [0, 1] : (tensor<8x16xi1>, tensor<i1>) -> tensor<i1>
    %c_3 = stablehlo.constant dense<false> : tensor<i1>
    %7 = stablehlo.reduce(%arg1 init: %c_3) applies stablehlo.or across dimensions = [1] : (tensor<8x16xi1>, tensor<i1>) -> tensor<8xi1>
    %8 = call @count_nonzero(%arg1) : (tensor<8x16xi1>) -> tensor<16xi32>
    %c_4 = stablehlo.constant dense<0> : tensor<i32>
    %9 = stablehlo.reduce(%arg2 init: %c_4) applies stablehlo.add across dimensions = [1] : (tensor<8x16xi32>, tensor<i32>) -> tensor<8xi32>
    %c_5 = stablehlo.constant dense<0> : tensor<ui8>
    %10 = stablehlo.reduce(%arg3 init: %c_5) applies stablehlo.maximum across dimensions = [0] : (tensor<8x16xui8>, tensor<ui8>) -> tensor<16xui8>
    %c_6 = stablehlo.constant dense<255> : tensor<ui8>
    %11 = stablehlo.reduce(%arg3 init: %c_6) applies stablehlo.minimum across dimensions = [0, 1] : (tensor<8x16xui8>, tensor<ui8>) -> tensor<ui8>
    %c_7 = stablehlo.constant dense<0> : tensor<i8>
    %12 = stablehlo.reduce(%arg4 init: %c_7) applies stablehlo.add across dimensions = [1] : (tensor<8x16xi8>, tensor<i8>) -> tensor<8xi8>
    %13 = stablehlo.convert %arg3 : (tensor<8x16xui8>) -> tensor<8x16xui32>
    %c_8 = stablehlo.constant dense<0> : tensor<ui32>
    %14 = stablehlo.reduce(%13 init: %c_8) applies stablehlo.xor across dimensions = [1] : (tensor<8x16xui32>, tensor<ui32>) -> tensor<8xui32>
    return %2, %5, %6, %7, %8, %9, %10, %11, %12, %14 : tensor<8xi1>, tensor<16xi1>, tensor<i1>, tensor<8xi1>, tensor<16xi32>, tensor<8xi32>, tensor<16xui8>, tensor<ui8>, tensor<8xi8>, tensor<8xui32>
  }
  func.func private @count_nonzero(%arg0: tensor<8x16xi1>) -> tensor<16xi32> {
    %c = stablehlo.constant dense<false> : tensor<i1>
    %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i1>) -> tensor<8x16xi1>
    %1 = stablehlo.compare NE, %arg0, %0, UNSIGNED : (tensor<8x16xi1>, tensor<8x16xi1>) -> tensor<8x16xi1>
    %2 = stablehlo.convert %1 : (tensor<8x16xi1>) -> tensor<8x16xi32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %3 = stablehlo.reduce(%2 init: %c_0) applies stablehlo.add across dimensions = [0] : (tensor<8x16xi32>, tensor<i32>) -> tensor<16xi32>
    return %3 : tensor<16xi32>
  }
}
