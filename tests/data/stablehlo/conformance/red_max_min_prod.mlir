module @jit_red_max_min_prod attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x16xf32>, %arg1: tensor<8x16xf32>, %arg2: tensor<8x16xi32>) -> (tensor<8xf32> {jax.result_info = "result[0]"}, tensor<16xf32> {jax.result_info = "result[1]"}, tensor<f32> {jax.result_info = "result[2]"}, tensor<8xf32> {jax.result_info = "result[3]"}, tensor<16xi32> {jax.result_info = "result[4]"}, tensor<i32> {jax.result_info = "result[5]"}, tensor<8xi32> {jax.result_info = "result[6]"}) {
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.maximum across dimensions = [1] : (tensor<8x16xf32>, tensor<f32>) -> tensor<8xf32>
    %cst_0 = stablehlo.constant dense<0x7F800000> : tensor<f32>
    %1 = stablehlo.reduce(%arg0 init: %cst_0) applies stablehlo.minimum across dimensions = [0] : (tensor<8x16xf32>, tensor<f32>) -> tensor<16xf32>
    %cst_1 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %2 = stablehlo.reduce(%arg0 init: %cst_1) applies stablehlo.maximum across dimensions = [0, 1] : (tensor<8x16xf32>, tensor<f32>) -> tensor<f32>
    %cst_2 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %3 = stablehlo.reduce(%arg1 init: %cst_2) applies stablehlo.multiply across dimensions = [1] : (tensor<8x16xf32>, tensor<f32>) -> tensor<8xf32>
    %c = stablehlo.constant dense<-2147483648> : tensor<i32>
    %4 = stablehlo.reduce(%arg2 init: %c) applies stablehlo.maximum across dimensions = [0] : (tensor<8x16xi32>, tensor<i32>) -> tensor<16xi32>
    %c_3 = stablehlo.constant dense<2147483647> : tensor<i32>
    %5 = stablehlo.reduce(%arg2 init: %c_3) applies stablehlo.minimum across dimensions = [0, 1] : (tensor<8x16xi32>, tensor<i32>) -> tensor<i32>
    %6 = stablehlo.slice %arg2 [0:8, 0:4] : (tensor<8x16xi32>) -> tensor<8x4xi32>
    %c_4 = stablehlo.constant dense<5> : tensor<i32>
    %7 = call @remainder(%6, %c_4) : (tensor<8x4xi32>, tensor<i32>) -> tensor<8x4xi32>
    %c_5 = stablehlo.constant dense<1> : tensor<i32>
    %8 = stablehlo.broadcast_in_dim %c_5, dims = [] : (tensor<i32>) -> tensor<8x4xi32>
    %9 = stablehlo.add %7, %8 : tensor<8x4xi32>
    %c_6 = stablehlo.constant dense<1> : tensor<i32>
    %10 = stablehlo.reduce(%9 init: %c_6) applies stablehlo.multiply across dimensions = [1] : (tensor<8x4xi32>, tensor<i32>) -> tensor<8xi32>
    return %0, %1, %2, %3, %4, %5, %10 : tensor<8xf32>, tensor<16xf32>, tensor<f32>, tensor<8xf32>, tensor<16xi32>, tensor<i32>, tensor<8xi32>
  }
  func.func private @remainder(%arg0: tensor<8x4xi32>, %arg1: tensor<i32>) -> tensor<8x4xi32> {
    %0 = stablehlo.convert %arg1 : tensor<i32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.compare EQ, %0, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_0 = stablehlo.constant dense<1> : tensor<i32>
    %2 = call @_where(%1, %c_0, %0) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [] : (tensor<i32>) -> tensor<8x4xi32>
    %4 = stablehlo.remainder %arg0, %3 : tensor<8x4xi32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %5 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i32>) -> tensor<8x4xi32>
    %6 = stablehlo.compare NE, %4, %5, SIGNED : (tensor<8x4xi32>, tensor<8x4xi32>) -> tensor<8x4xi1>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %7 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i32>) -> tensor<8x4xi32>
    %8 = stablehlo.compare LT, %4, %7, SIGNED : (tensor<8x4xi32>, tensor<8x4xi32>) -> tensor<8x4xi1>
    %c_3 = stablehlo.constant dense<0> : tensor<i32>
    %9 = stablehlo.compare LT, %2, %c_3, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %10 = stablehlo.broadcast_in_dim %9, dims = [] : (tensor<i1>) -> tensor<8x4xi1>
    %11 = stablehlo.compare NE, %8, %10, UNSIGNED : (tensor<8x4xi1>, tensor<8x4xi1>) -> tensor<8x4xi1>
    %12 = stablehlo.and %11, %6 : tensor<8x4xi1>
    %13 = stablehlo.broadcast_in_dim %2, dims = [] : (tensor<i32>) -> tensor<8x4xi32>
    %14 = stablehlo.add %4, %13 : tensor<8x4xi32>
    %15 = stablehlo.select %12, %14, %4 : tensor<8x4xi1>, tensor<8x4xi32>
    return %15 : tensor<8x4xi32>
  }
  func.func private @_where(%arg0: tensor<i1>, %arg1: tensor<i32>, %arg2: tensor<i32>) -> tensor<i32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<i1>, tensor<i32>
    return %0 : tensor<i32>
  }
}
