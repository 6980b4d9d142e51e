module @jit_complex_math attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x8xf32>) -> (tensor<3x8xf32> {jax.result_info = "result[0]"}, tensor<3x8xf32> {jax.result_info = "result[1]"}, tensor<3x8xf32> {jax.result_info = "result[2]"}, tensor<3x8xf32> {jax.result_info = "result[3]"}, tensor<3x8xcomplex<f32>> {jax.result_info = "result[4]"}) {
    %0 = call @_roll_static(%arg0) : (tensor<3x8xf32>) -> tensor<3x8xf32>
    %1 = stablehlo.complex %arg0, %0 : tensor<3x8xcomplex<f32>>
    %2 = call @fft(%1) : (tensor<3x8xcomplex<f32>>) -> tensor<3x8xcomplex<f32>>
    %3 = stablehlo.real %2 : (tensor<3x8xcomplex<f32>>) -> tensor<3x8xf32>
    %4 = stablehlo.imag %2 : (tensor<3x8xcomplex<f32>>) -> tensor<3x8xf32>
    %5 = stablehlo.abs %1 : (tensor<3x8xcomplex<f32>>) -> tensor<3x8xf32>
    %6 = call @angle(%1) : (tensor<3x8xcomplex<f32>>) -> tensor<3x8xf32>
    %7 = stablehlo.multiply %1, %1 : tensor<3x8xcomplex<f32>>
    %8 = stablehlo.real %7 : (tensor<3x8xcomplex<f32>>) -> tensor<3x8xf32>
    %9 = stablehlo.imag %7 : (tensor<3x8xcomplex<f32>>) -> tensor<3x8xf32>
    %10 = stablehlo.negate %9 : tensor<3x8xf32>
    %11 = stablehlo.complex %8, %10 : tensor<3x8xcomplex<f32>>
    return %3, %4, %5, %6, %11 : tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xf32>, tensor<3x8xcomplex<f32>>
  }
  func.func private @_roll_static(%arg0: tensor<3x8xf32>) -> tensor<3x8xf32> {
    %0 = stablehlo.slice %arg0 [0:3, 7:8] : (tensor<3x8xf32>) -> tensor<3x1xf32>
    %1 = stablehlo.slice %arg0 [0:3, 0:7] : (tensor<3x8xf32>) -> tensor<3x7xf32>
    %2 = stablehlo.concatenate %0, %1, dim = 1 : (tensor<3x1xf32>, tensor<3x7xf32>) -> tensor<3x8xf32>
    return %2 : tensor<3x8xf32>
  }
  func.func private @fft(%arg0: tensor<3x8xcomplex<f32>>) -> tensor<3x8xcomplex<f32>> {
    %0 = stablehlo.fft %arg0, type = FFT, length = [8] : (tensor<3x8xcomplex<f32>>) -> tensor<3x8xcomplex<f32>>
    return %0 : tensor<3x8xcomplex<f32>>
  }
  func.func private @angle(%arg0: tensor<3x8xcomplex<f32>>) -> tensor<3x8xf32> {
    %0 = stablehlo.real %arg0 : (tensor<3x8xcomplex<f32>>) -> tensor<3x8xf32>
    %1 = stablehlo.imag %arg0 : (tensor<3x8xcomplex<f32>>) -> tensor<3x8xf32>
    %2 = stablehlo.atan2 %1, %0 : tensor<3x8xf32>
    return %2 : tensor<3x8xf32>
  }
}
