module @jit_shape_broadcast attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x16xf32>, %arg1: tensor<16xf32>, %arg2: tensor<8x1xf32>, %arg3: tensor<f32>, %arg4: tensor<6xf32>) -> (tensor<8x16xf32> {jax.result_info = "result[0]"}, tensor<8x16xf32> {jax.result_info = "result[1]"}, tensor<8x16xf32> {jax.result_info = "result[2]"}, tensor<6x2x3xf32> {jax.result_info = "result[3]"}, tensor<2x6x4xf32> {jax.result_info = "result[4]"}, tensor<8x16xf32> {jax.result_info = "result[5]"}) {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<16xf32>) -> tensor<1x16xf32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [0, 1] : (tensor<1x16xf32>) -> tensor<8x16xf32>
    %2 = stablehlo.add %arg0, %1 : tensor<8x16xf32>
    %3 = stablehlo.broadcast_in_dim %arg2, dims = [0, 1] : (tensor<8x1xf32>) -> tensor<8x16xf32>
    %4 = stablehlo.multiply %arg0, %3 : tensor<8x16xf32>
    %5 = stablehlo.broadcast_in_dim %arg3, dims = [] : (tensor<f32>) -> tensor<8x16xf32>
    %6 = stablehlo.subtract %arg0, %5 : tensor<8x16xf32>
    %7 = stablehlo.broadcast_in_dim %arg4, dims = [0] : (tensor<6xf32>) -> tensor<6x1x1xf32>
    %8 = stablehlo.broadcast_in_dim %7, dims = [0, 1, 2] : (tensor<6x1x1xf32>) -> tensor<6x2x3xf32>
    %9 = stablehlo.broadcast_in_dim %arg4, dims = [1] : (tensor<6xf32>) -> tensor<2x6x4xf32>
    %10 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<16xf32>) -> tensor<1x16xf32>
    %11 = stablehlo.broadcast_in_dim %10, dims = [0, 1] : (tensor<1x16xf32>) -> tensor<8x16xf32>
    %12 = stablehlo.broadcast_in_dim %arg2, dims = [0, 1] : (tensor<8x1xf32>) -> tensor<8x16xf32>
    %13 = stablehlo.add %11, %12 : tensor<8x16xf32>
    return %2, %4, %6, %8, %9, %13 : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<6x2x3xf32>, tensor<2x6x4xf32>, tensor<8x16xf32>
  }
}
