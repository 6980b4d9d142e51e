module @jit_dtype_mix attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8xf32>, %arg1: tensor<8xi1>, %arg2: tensor<8xi32>) -> (tensor<8xf32> {jax.result_info = "result[0]"}, tensor<8xf32> {jax.result_info = "result[1]"}, tensor<8xi32> {jax.result_info = "result[2]"}, tensor<8xui8> {jax.result_info = "result[3]"}, tensor<8xi32> {jax.result_info = "result[4]"}, tensor<8xf32> {jax.result_info = "result[5]"}, tensor<8xi1> {jax.result_info = "result[6]"}) {
    %0 = stablehlo.convert %arg0 : (tensor<8xf32>) -> tensor<8xf16>
    %1 = stablehlo.convert %arg0 : (tensor<8xf32>) -> tensor<8xbf16>
    %2 = stablehlo.multiply %0, %0 : tensor<8xf16>
    %3 = stablehlo.convert %2 : (tensor<8xf16>) -> tensor<8xf32>
    %4 = stablehlo.add %1, %1 : tensor<8xbf16>
    %5 = stablehlo.convert %4 : (tensor<8xbf16>) -> tensor<8xf32>
    %6 = stablehlo.negate %arg2 : tensor<8xi32>
    %7 = call @_where(%arg1, %arg2, %6) : (tensor<8xi1>, tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>
    %8 = stablehlo.convert %arg2 : (tensor<8xi32>) -> tensor<8xui8>
    %c = stablehlo.constant dense<2> : tensor<i32>
    %9 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<8xi32>
    %10 = stablehlo.shift_right_arithmetic %arg2, %9 : tensor<8xi32>
    %c_0 = stablehlo.constant dense<7> : tensor<i32>
    %11 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<8xi32>
    %12 = stablehlo.and %10, %11 : tensor<8xi32>
    %13 = stablehlo.reduce_precision %arg0, format = e5m10 : tensor<8xf32>
    %14 = stablehlo.subtract %arg0, %arg0 : tensor<8xf32>
    %15 = stablehlo.divide %arg0, %14 : tensor<8xf32>
    %16 = stablehlo.compare NE, %15, %15, FLOAT : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xi1>
    return %3, %5, %7, %8, %12, %13, %16 : tensor<8xf32>, tensor<8xf32>, tensor<8xi32>, tensor<8xui8>, tensor<8xi32>, tensor<8xf32>, tensor<8xi1>
  }
  func.func private @_where(%arg0: tensor<8xi1>, %arg1: tensor<8xi32>, %arg2: tensor<8xi32>) -> tensor<8xi32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<8xi1>, tensor<8xi32>
    return %0 : tensor<8xi32>
  }
}
