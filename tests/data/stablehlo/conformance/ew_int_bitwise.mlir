module @jit_ew_int_bitwise attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x16xi32>, %arg1: tensor<8x16xi32>, %arg2: tensor<8x16xi32>) -> (tensor<8x16xi32> {jax.result_info = "result[0]"}, tensor<8x16xi32> {jax.result_info = "result[1]"}, tensor<8x16xi32> {jax.result_info = "result[2]"}, tensor<8x16xi32> {jax.result_info = "result[3]"}, tensor<8x16xi32> {jax.result_info = "result[4]"}, tensor<8x16xi32> {jax.result_info = "result[5]"}, tensor<8x16xi32> {jax.result_info = "result[6]"}, tensor<8x16xi32> {jax.result_info = "result[7]"}, tensor<8x16xi32> {jax.result_info = "result[8]"}) {
    %0 = stablehlo.and %arg0, %arg1 : tensor<8x16xi32>
    %1 = stablehlo.or %arg0, %arg1 : tensor<8x16xi32>
    %2 = stablehlo.xor %arg0, %arg1 : tensor<8x16xi32>
    %3 = stablehlo.not %arg0 : tensor<8x16xi32>
    %4 = stablehlo.shift_left %arg0, %arg2 : tensor<8x16xi32>
    %5 = stablehlo.shift_right_logical %arg0, %arg2 : tensor<8x16xi32>
    %6 = stablehlo.shift_right_arithmetic %arg0, %arg2 : tensor<8x16xi32>
    %7 = stablehlo.popcnt %arg0 : tensor<8x16xi32>
    %8 = stablehlo.count_leading_zeros %arg0 : tensor<8x16xi32>
    return %0, %1, %2, %3, %4, %5, %6, %7, %8 : tensor<8x16xi32>, tensor<8x16xi32>, tensor<8x16xi32>, tensor<8x16xi32>, tensor<8x16xi32>, tensor<8x16xi32>, tensor<8x16xi32>, tensor<8x16xi32>, tensor<8x16xi32>
  }
}
