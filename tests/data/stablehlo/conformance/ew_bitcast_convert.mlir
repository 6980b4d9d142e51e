module @jit_ew_bitcast_convert attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x16xf32>, %arg1: tensor<16x4x4xui8>, %arg2: tensor<8x16xf16>) -> (tensor<8x16xi32> {jax.result_info = "result[0]"}, tensor<8x16xui32> {jax.result_info = "result[1]"}, tensor<8x16xf32> {jax.result_info = "result[2]"}, tensor<8x16x4xui8> {jax.result_info = "result[3]"}, tensor<16x4xf32> {jax.result_info = "result[4]"}, tensor<8x16xui16> {jax.result_info = "result[5]"}) {
    %0 = stablehlo.bitcast_convert %arg0 : (tensor<8x16xf32>) -> tensor<8x16xi32>
    %1 = stablehlo.bitcast_convert %arg0 : (tensor<8x16xf32>) -> tensor<8x16xui32>
    %c = stablehlo.constant dense<1> : tensor<i32>
    %2 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<8x16xi32>
    %3 = stablehlo.add %0, %2 : tensor<8x16xi32>
    %4 = stablehlo.bitcast_convert %3 : (tensor<8x16xi32>) -> tensor<8x16xf32>
    %5 = stablehlo.bitcast_convert %arg0 : (tensor<8x16xf32>) -> tensor<8x16x4xui8>
    %6 = stablehlo.bitcast_convert %arg1 : (tensor<16x4x4xui8>) -> tensor<16x4xf32>
    %7 = stablehlo.bitcast_convert %arg2 : (tensor<8x16xf16>) -> tensor<8x16xui16>
    return %0, %1, %4, %5, %6, %7 : tensor<8x16xi32>, tensor<8x16xui32>, tensor<8x16xf32>, tensor<8x16x4xui8>, tensor<16x4xf32>, tensor<8x16xui16>
  }
}
