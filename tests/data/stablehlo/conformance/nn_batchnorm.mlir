module @jit_nn_batchnorm attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x8x8x3xf32>, %arg1: tensor<3xf32>, %arg2: tensor<3xf32>, %arg3: tensor<3xf32>, %arg4: tensor<3xf32>) -> (tensor<4x8x8x3xf32> {jax.result_info = "result[0]"}, tensor<3xf32> {jax.result_info = "result[1]"}, tensor<3xf32> {jax.result_info = "result[2]"}, tensor<4x8x8x3xf32> {jax.result_info = "result[3]"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [0, 1, 2] : (tensor<4x8x8x3xf32>, tensor<f32>) -> tensor<3xf32>
    %cst_0 = stablehlo.constant dense<2.560000e+02> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<3xf32>
    %2 = stablehlo.divide %0, %1 : tensor<3xf32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %3 = call @_var(%arg0, %c) : (tensor<4x8x8x3xf32>, tensor<i32>) -> tensor<3xf32>
    %4 = stablehlo.broadcast_in_dim %2, dims = [3] : (tensor<3xf32>) -> tensor<1x1x1x3xf32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [0, 1, 2, 3] : (tensor<1x1x1x3xf32>) -> tensor<4x8x8x3xf32>
    %6 = stablehlo.subtract %arg0, %5 : tensor<4x8x8x3xf32>
    %cst_1 = stablehlo.constant dense<1.000000e-03> : tensor<f32>
    %7 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<3xf32>
    %8 = stablehlo.add %3, %7 : tensor<3xf32>
    %9 = stablehlo.rsqrt %8 : tensor<3xf32>
    %10 = stablehlo.broadcast_in_dim %9, dims = [3] : (tensor<3xf32>) -> tensor<1x1x1x3xf32>
    %11 = stablehlo.broadcast_in_dim %10, dims = [0, 1, 2, 3] : (tensor<1x1x1x3xf32>) -> tensor<4x8x8x3xf32>
    %12 = stablehlo.multiply %6, %11 : tensor<4x8x8x3xf32>
    %13 = stablehlo.broadcast_in_dim %arg1, dims = [3] : (tensor<3xf32>) -> tensor<1x1x1x3xf32>
    %14 = stablehlo.broadcast_in_dim %13, dims = [0, 1, 2, 3] : (tensor<1x1x1x3xf32>) -> tensor<4x8x8x3xf32>
    %15 = stablehlo.multiply %12, %14 : tensor<4x8x8x3xf32>
    %16 = stablehlo.broadcast_in_dim %arg2, dims = [3] : (tensor<3xf32>) -> tensor<1x1x1x3xf32>
    %17 = stablehlo.broadcast_in_dim %16, dims = [0, 1, 2, 3] : (tensor<1x1x1x3xf32>) -> tensor<4x8x8x3xf32>
    %18 = stablehlo.add %15, %17 : tensor<4x8x8x3xf32>
    %cst_2 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %19 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<3xf32>
    %20 = stablehlo.multiply %19, %arg3 : tensor<3xf32>
    %cst_3 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %21 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<3xf32>
    %22 = stablehlo.multiply %21, %2 : tensor<3xf32>
    %23 = stablehlo.add %20, %22 : tensor<3xf32>
    %cst_4 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %24 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<3xf32>
    %25 = stablehlo.multiply %24, %arg4 : tensor<3xf32>
    %cst_5 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %26 = stablehlo.broadcast_in_dim %cst_5, dims = [] : (tensor<f32>) -> tensor<3xf32>
    %27 = stablehlo.multiply %26, %3 : tensor<3xf32>
    %cst_6 = stablehlo.constant dense<1.00392163> : tensor<f32>
    %28 = stablehlo.broadcast_in_dim %cst_6, dims = [] : (tensor<f32>) -> tensor<3xf32>
    %29 = stablehlo.multiply %27, %28 : tensor<3xf32>
    %30 = stablehlo.add %25, %29 : tensor<3xf32>
    %31 = stablehlo.broadcast_in_dim %arg3, dims = [3] : (tensor<3xf32>) -> tensor<1x1x1x3xf32>
    %32 = stablehlo.broadcast_in_dim %31, dims = [0, 1, 2, 3] : (tensor<1x1x1x3xf32>) -> tensor<4x8x8x3xf32>
    %33 = stablehlo.subtract %arg0, %32 : tensor<4x8x8x3xf32>
    %cst_7 = stablehlo.constant dense<1.000000e-03> : tensor<f32>
    %34 = stablehlo.broadcast_in_dim %cst_7, dims = [] : (tensor<f32>) -> tensor<3xf32>
    %35 = stablehlo.add %arg4, %34 : tensor<3xf32>
    %36 = stablehlo.sqrt %35 : tensor<3xf32>
    %37 = stablehlo.broadcast_in_dim %36, dims = [3] : (tensor<3xf32>) -> tensor<1x1x1x3xf32>
    %38 = stablehlo.broadcast_in_dim %37, dims = [0, 1, 2, 3] : (tensor<1x1x1x3xf32>) -> tensor<4x8x8x3xf32>
    %39 = stablehlo.divide %33, %38 : tensor<4x8x8x3xf32>
    %40 = stablehlo.broadcast_in_dim %arg1, dims = [3] : (tensor<3xf32>) -> tensor<1x1x1x3xf32>
    %41 = stablehlo.broadcast_in_dim %40, dims = [0, 1, 2, 3] : (tensor<1x1x1x3xf32>) -> tensor<4x8x8x3xf32>
    %42 = stablehlo.multiply %39, %41 : tensor<4x8x8x3xf32>
    %43 = stablehlo.broadcast_in_dim %arg2, dims = [3] : (tensor<3xf32>) -> tensor<1x1x1x3xf32>
    %44 = stablehlo.broadcast_in_dim %43, dims = [0, 1, 2, 3] : (tensor<1x1x1x3xf32>) -> tensor<4x8x8x3xf32>
    %45 = stablehlo.add %42, %44 : tensor<4x8x8x3xf32>
    return %18, %23, %30, %45 : tensor<4x8x8x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<4x8x8x3xf32>
  }
  func.func private @_var(%arg0: tensor<4x8x8x3xf32>, %arg1: tensor<i32>) -> tensor<3xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [0, 1, 2] : (tensor<4x8x8x3xf32>, tensor<f32>) -> tensor<3xf32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [3] : (tensor<3xf32>) -> tensor<1x1x1x3xf32>
    %cst_0 = stablehlo.constant dense<2.560000e+02> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<1x1x1x3xf32>
    %3 = stablehlo.divide %1, %2 : tensor<1x1x1x3xf32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [0, 1, 2, 3] : (tensor<1x1x1x3xf32>) -> tensor<4x8x8x3xf32>
    %5 = stablehlo.subtract %arg0, %4 : tensor<4x8x8x3xf32>
    %6 = chlo.square %5 : tensor<4x8x8x3xf32> -> tensor<4x8x8x3xf32>
    %7 = stablehlo.convert %arg1 : (tensor<i32>) -> tensor<f32>
    %cst_1 = stablehlo.constant dense<2.560000e+02> : tensor<f32>
    %8 = stablehlo.subtract %cst_1, %7 : tensor<f32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %9 = stablehlo.reduce(%6 init: %cst_2) applies stablehlo.add across dimensions = [0, 1, 2] : (tensor<4x8x8x3xf32>, tensor<f32>) -> tensor<3xf32>
    %10 = stablehlo.broadcast_in_dim %8, dims = [] : (tensor<f32>) -> tensor<3xf32>
    %11 = stablehlo.divide %9, %10 : tensor<3xf32>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %12 = stablehlo.compare GT, %8, %cst_3, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %cst_4 = stablehlo.constant dense<0x7FC00000> : tensor<f32>
    %13 = call @_where(%12, %11, %cst_4) : (tensor<i1>, tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
    return %13 : tensor<3xf32>
  }
  func.func private @_where(%arg0: tensor<i1>, %arg1: tensor<3xf32>, %arg2: tensor<f32>) -> tensor<3xf32> {
    %0 = stablehlo.convert %arg2 : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<3xf32>
    %2 = stablehlo.select %arg0, %arg1, %1 : tensor<i1>, tensor<3xf32>
    return %2 : tensor<3xf32>
  }
}
