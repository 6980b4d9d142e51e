module @jit_shape_ops attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x5xf32>) -> (tensor<7x8xf32> {jax.result_info = "result[0]"}, tensor<8x5xf32> {jax.result_info = "result[1]"}, tensor<4x5xf32> {jax.result_info = "result[2]"}, tensor<4x5xf32> {jax.result_info = "result[3]"}, tensor<4x10xf32> {jax.result_info = "result[4]"}, tensor<2x2xf32> {jax.result_info = "result[5]"}, tensor<4x10xf32> {jax.result_info = "result[6]"}, tensor<2x2xf32> {jax.result_info = "result[7]"}) {
    %0 = call @_pad(%arg0) : (tensor<4x5xf32>) -> tensor<7x8xf32>
    %1 = stablehlo.reshape %arg0 : (tensor<4x5xf32>) -> tensor<1x4x1x5xf32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [0, 1, 2, 3] : (tensor<1x4x1x5xf32>) -> tensor<2x4x1x5xf32>
    %3 = stablehlo.reshape %2 : (tensor<2x4x1x5xf32>) -> tensor<8x5xf32>
    %4 = call @_flip_2(%arg0) : (tensor<4x5xf32>) -> tensor<4x5xf32>
    %5 = call @_roll_static(%arg0) : (tensor<4x5xf32>) -> tensor<4x5xf32>
    %6 = stablehlo.broadcast_in_dim %arg0, dims = [0, 1] : (tensor<4x5xf32>) -> tensor<4x5x2xf32>
    %7 = stablehlo.reshape %6 : (tensor<4x5x2xf32>) -> tensor<4x10xf32>
    %8 = stablehlo.slice %arg0 [0:4:2, 1:4:2] : (tensor<4x5xf32>) -> tensor<2x2xf32>
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %9 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x5xf32>
    %10 = stablehlo.multiply %arg0, %9 : tensor<4x5xf32>
    %11 = stablehlo.broadcast_in_dim %arg0, dims = [0, 1] : (tensor<4x5xf32>) -> tensor<4x5x1xf32>
    %12 = stablehlo.broadcast_in_dim %10, dims = [0, 1] : (tensor<4x5xf32>) -> tensor<4x5x1xf32>
    %13 = stablehlo.concatenate %11, %12, dim = 2 : (tensor<4x5x1xf32>, tensor<4x5x1xf32>) -> tensor<4x5x2xf32>
    %14 = stablehlo.reshape %13 : (tensor<4x5x2xf32>) -> tensor<4x10xf32>
    %c = stablehlo.constant dense<1> : tensor<i32>
    %c_0 = stablehlo.constant dense<2> : tensor<i32>
    %15 = stablehlo.dynamic_slice %arg0, %c, %c_0, sizes = [2, 2] : (tensor<4x5xf32>, tensor<i32>, tensor<i32>) -> tensor<2x2xf32>
    return %0, %3, %4, %5, %7, %8, %14, %15 : tensor<7x8xf32>, tensor<8x5xf32>, tensor<4x5xf32>, tensor<4x5xf32>, tensor<4x10xf32>, tensor<2x2xf32>, tensor<4x10xf32>, tensor<2x2xf32>
  }
  func.func private @_pad(%arg0: tensor<4x5xf32>) -> tensor<7x8xf32> {
    %0 = stablehlo.slice %arg0 [1:2, 0:5] : (tensor<4x5xf32>) -> tensor<1x5xf32>
    %1 = call @_flip(%0) : (tensor<1x5xf32>) -> tensor<1x5xf32>
    %2 = stablehlo.concatenate %1, %arg0, dim = 0 : (tensor<1x5xf32>, tensor<4x5xf32>) -> tensor<5x5xf32>
    %3 = stablehlo.slice %2 [2:4, 0:5] : (tensor<5x5xf32>) -> tensor<2x5xf32>
    %4 = call @_flip_0(%3) : (tensor<2x5xf32>) -> tensor<2x5xf32>
    %5 = stablehlo.concatenate %2, %4, dim = 0 : (tensor<5x5xf32>, tensor<2x5xf32>) -> tensor<7x5xf32>
    %6 = stablehlo.slice %5 [0:7, 1:4] : (tensor<7x5xf32>) -> tensor<7x3xf32>
    %7 = call @_flip_1(%6) : (tensor<7x3xf32>) -> tensor<7x3xf32>
    %8 = stablehlo.concatenate %5, %7, dim = 1 : (tensor<7x5xf32>, tensor<7x3xf32>) -> tensor<7x8xf32>
    return %8 : tensor<7x8xf32>
  }
  func.func private @_flip(%arg0: tensor<1x5xf32>) -> tensor<1x5xf32> {
    %0 = stablehlo.reverse %arg0, dims = [0] : tensor<1x5xf32>
    return %0 : tensor<1x5xf32>
  }
  func.func private @_flip_0(%arg0: tensor<2x5xf32>) -> tensor<2x5xf32> {
    %0 = stablehlo.reverse %arg0, dims = [0] : tensor<2x5xf32>
    return %0 : tensor<2x5xf32>
  }
  func.func private @_flip_1(%arg0: tensor<7x3xf32>) -> tensor<7x3xf32> {
    %0 = stablehlo.reverse %arg0, dims = [1] : tensor<7x3xf32>
    return %0 : tensor<7x3xf32>
  }
  func.func private @_flip_2(%arg0: tensor<4x5xf32>) -> tensor<4x5xf32> {
    %0 = stablehlo.reverse %arg0, dims = [1] : tensor<4x5xf32>
    return %0 : tensor<4x5xf32>
  }
  func.func private @_roll_static(%arg0: tensor<4x5xf32>) -> tensor<4x5xf32> {
    %0 = stablehlo.slice %arg0 [2:4, 0:5] : (tensor<4x5xf32>) -> tensor<2x5xf32>
    %1 = stablehlo.slice %arg0 [0:2, 0:5] : (tensor<4x5xf32>) -> tensor<2x5xf32>
    %2 = stablehlo.concatenate %0, %1, dim = 0 : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<4x5xf32>
    return %2 : tensor<4x5xf32>
  }
}
