module @jit_shape_pad attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x6xf32>, %arg1: tensor<3x5xi32>) -> (tensor<7x18xf32> {jax.result_info = "result[0]"}, tensor<4x5xf32> {jax.result_info = "result[1]"}, tensor<6x8xf32> {jax.result_info = "result[2]"}, tensor<8x10xf32> {jax.result_info = "result[3]"}, tensor<8x10xf32> {jax.result_info = "result[4]"}, tensor<6x6xi32> {jax.result_info = "result[5]"}) {
    %cst = stablehlo.constant dense<-1.000000e+00> : tensor<f32>
    %0 = stablehlo.pad %arg0, %cst, low = [1, -1], high = [2, 3], interior = [0, 2] : (tensor<4x6xf32>, tensor<f32>) -> tensor<7x18xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.pad %arg0, %cst_0, low = [-2, 2], high = [-1, -3], interior = [1, 0] : (tensor<4x6xf32>, tensor<f32>) -> tensor<4x5xf32>
    %2 = call @_pad(%arg0) : (tensor<4x6xf32>) -> tensor<6x8xf32>
    %3 = call @_pad_0(%arg0) : (tensor<4x6xf32>) -> tensor<8x10xf32>
    %4 = call @_pad_3(%arg0) : (tensor<4x6xf32>) -> tensor<8x10xf32>
    %c = stablehlo.constant dense<7> : tensor<i32>
    %5 = stablehlo.pad %arg1, %c, low = [0, 1], high = [1, 0], interior = [1, 0] : (tensor<3x5xi32>, tensor<i32>) -> tensor<6x6xi32>
    return %0, %1, %2, %3, %4, %5 : tensor<7x18xf32>, tensor<4x5xf32>, tensor<6x8xf32>, tensor<8x10xf32>, tensor<8x10xf32>, tensor<6x6xi32>
  }
  func.func private @_pad(%arg0: tensor<4x6xf32>) -> tensor<6x8xf32> {
    %0 = stablehlo.slice %arg0 [0:1, 0:6] : (tensor<4x6xf32>) -> tensor<1x6xf32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [0, 2] : (tensor<1x6xf32>) -> tensor<1x1x6xf32>
    %2 = stablehlo.reshape %1 : (tensor<1x1x6xf32>) -> tensor<1x6xf32>
    %3 = stablehlo.slice %arg0 [3:4, 0:6] : (tensor<4x6xf32>) -> tensor<1x6xf32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [0, 2] : (tensor<1x6xf32>) -> tensor<1x1x6xf32>
    %5 = stablehlo.reshape %4 : (tensor<1x1x6xf32>) -> tensor<1x6xf32>
    %6 = stablehlo.concatenate %2, %arg0, %5, dim = 0 : (tensor<1x6xf32>, tensor<4x6xf32>, tensor<1x6xf32>) -> tensor<6x6xf32>
    %7 = stablehlo.slice %6 [0:6, 0:1] : (tensor<6x6xf32>) -> tensor<6x1xf32>
    %8 = stablehlo.broadcast_in_dim %7, dims = [0, 1] : (tensor<6x1xf32>) -> tensor<6x1x2xf32>
    %9 = stablehlo.reshape %8 : (tensor<6x1x2xf32>) -> tensor<6x2xf32>
    %10 = stablehlo.slice %6 [0:6, 5:6] : (tensor<6x6xf32>) -> tensor<6x1xf32>
    %11 = stablehlo.broadcast_in_dim %10, dims = [0, 1] : (tensor<6x1xf32>) -> tensor<6x1x0xf32>
    %12 = stablehlo.reshape %11 : (tensor<6x1x0xf32>) -> tensor<6x0xf32>
    %13 = stablehlo.concatenate %9, %6, %12, dim = 1 : (tensor<6x2xf32>, tensor<6x6xf32>, tensor<6x0xf32>) -> tensor<6x8xf32>
    return %13 : tensor<6x8xf32>
  }
  func.func private @_pad_0(%arg0: tensor<4x6xf32>) -> tensor<8x10xf32> {
    %0 = stablehlo.slice %arg0 [1:3, 0:6] : (tensor<4x6xf32>) -> tensor<2x6xf32>
    %1 = call @_flip(%0) : (tensor<2x6xf32>) -> tensor<2x6xf32>
    %2 = stablehlo.concatenate %1, %arg0, dim = 0 : (tensor<2x6xf32>, tensor<4x6xf32>) -> tensor<6x6xf32>
    %3 = stablehlo.slice %2 [3:5, 0:6] : (tensor<6x6xf32>) -> tensor<2x6xf32>
    %4 = call @_flip(%3) : (tensor<2x6xf32>) -> tensor<2x6xf32>
    %5 = stablehlo.concatenate %2, %4, dim = 0 : (tensor<6x6xf32>, tensor<2x6xf32>) -> tensor<8x6xf32>
    %6 = stablehlo.slice %5 [0:8, 1:2] : (tensor<8x6xf32>) -> tensor<8x1xf32>
    %7 = call @_flip_1(%6) : (tensor<8x1xf32>) -> tensor<8x1xf32>
    %8 = stablehlo.concatenate %7, %5, dim = 1 : (tensor<8x1xf32>, tensor<8x6xf32>) -> tensor<8x7xf32>
    %9 = stablehlo.slice %8 [0:8, 3:6] : (tensor<8x7xf32>) -> tensor<8x3xf32>
    %10 = call @_flip_2(%9) : (tensor<8x3xf32>) -> tensor<8x3xf32>
    %11 = stablehlo.concatenate %8, %10, dim = 1 : (tensor<8x7xf32>, tensor<8x3xf32>) -> tensor<8x10xf32>
    return %11 : tensor<8x10xf32>
  }
  func.func private @_flip(%arg0: tensor<2x6xf32>) -> tensor<2x6xf32> {
    %0 = stablehlo.reverse %arg0, dims = [0] : tensor<2x6xf32>
    return %0 : tensor<2x6xf32>
  }
  func.func private @_flip_1(%arg0: tensor<8x1xf32>) -> tensor<8x1xf32> {
    %0 = stablehlo.reverse %arg0, dims = [1] : tensor<8x1xf32>
    return %0 : tensor<8x1xf32>
  }
  func.func private @_flip_2(%arg0: tensor<8x3xf32>) -> tensor<8x3xf32> {
    %0 = stablehlo.reverse %arg0, dims = [1] : tensor<8x3xf32>
    return %0 : tensor<8x3xf32>
  }
  func.func private @_pad_3(%arg0: tensor<4x6xf32>) -> tensor<8x10xf32> {
    %0 = stablehlo.slice %arg0 [2:4, 0:6] : (tensor<4x6xf32>) -> tensor<2x6xf32>
    %1 = stablehlo.slice %arg0 [0:2, 0:6] : (tensor<4x6xf32>) -> tensor<2x6xf32>
    %2 = stablehlo.concatenate %0, %arg0, %1, dim = 0 : (tensor<2x6xf32>, tensor<4x6xf32>, tensor<2x6xf32>) -> tensor<8x6xf32>
    %3 = stablehlo.slice %2 [0:8, 4:6] : (tensor<8x6xf32>) -> tensor<8x2xf32>
    %4 = stablehlo.slice %2 [0:8, 0:2] : (tensor<8x6xf32>) -> tensor<8x2xf32>
    %5 = stablehlo.concatenate %3, %2, %4, dim = 1 : (tensor<8x2xf32>, tensor<8x6xf32>, tensor<8x2xf32>) -> tensor<8x10xf32>
    return %5 : tensor<8x10xf32>
  }
}
