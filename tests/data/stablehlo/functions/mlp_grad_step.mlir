module @jit_mlp_grad_step attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x8xf32>, %arg1: tensor<8x3xf32>, %arg2: tensor<4x3xf32>) -> (tensor<f32> {jax.result_info = "result[0]"}, tensor<8x3xf32> {jax.result_info = "result[1]"}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
    %1 = stablehlo.multiply %0, %0 : tensor<4x3xf32>
    %2 = stablehlo.multiply %1, %0 : tensor<4x3xf32>
    %3 = stablehlo.multiply %0, %0 : tensor<4x3xf32>
    %cst = stablehlo.constant dense<3.000000e+00> : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x3xf32>
    %5 = stablehlo.multiply %4, %3 : tensor<4x3xf32>
    %cst_0 = stablehlo.constant dense<4.471500e-02> : tensor<f32>
    %6 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<4x3xf32>
    %7 = stablehlo.multiply %6, %2 : tensor<4x3xf32>
    %8 = stablehlo.add %0, %7 : tensor<4x3xf32>
    %cst_1 = stablehlo.constant dense<0.797884583> : tensor<f32>
    %9 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<4x3xf32>
    %10 = stablehlo.multiply %9, %8 : tensor<4x3xf32>
    %11 = stablehlo.tanh %10 : tensor<4x3xf32>
    %cst_2 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %12 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<4x3xf32>
    %13 = stablehlo.subtract %12, %11 : tensor<4x3xf32>
    %cst_3 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %14 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<4x3xf32>
    %15 = stablehlo.add %14, %11 : tensor<4x3xf32>
    %cst_4 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %16 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<4x3xf32>
    %17 = stablehlo.multiply %16, %15 : tensor<4x3xf32>
    %18 = stablehlo.multiply %0, %17 : tensor<4x3xf32>
    %19 = stablehlo.subtract %18, %arg2 : tensor<4x3xf32>
    %20 = stablehlo.multiply %19, %19 : tensor<4x3xf32>
    %cst_5 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %21 = stablehlo.broadcast_in_dim %cst_5, dims = [] : (tensor<f32>) -> tensor<4x3xf32>
    %22 = stablehlo.multiply %21, %19 : tensor<4x3xf32>
    %cst_6 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %23 = stablehlo.reduce(%20 init: %cst_6) applies stablehlo.add across dimensions = [0, 1] : (tensor<4x3xf32>, tensor<f32>) -> tensor<f32>
    %cst_7 = stablehlo.constant dense<1.200000e+01> : tensor<f32>
    %24 = stablehlo.divide %23, %cst_7 : tensor<f32>
    %cst_8 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %cst_9 = stablehlo.constant dense<1.200000e+01> : tensor<f32>
    %25 = stablehlo.divide %cst_8, %cst_9 : tensor<f32>
    %26 = stablehlo.broadcast_in_dim %25, dims = [] : (tensor<f32>) -> tensor<4x3xf32>
    %27 = stablehlo.multiply %26, %22 : tensor<4x3xf32>
    %28 = stablehlo.multiply %0, %27 : tensor<4x3xf32>
    %29 = stablehlo.multiply %27, %17 : tensor<4x3xf32>
    %cst_10 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %30 = stablehlo.broadcast_in_dim %cst_10, dims = [] : (tensor<f32>) -> tensor<4x3xf32>
    %31 = stablehlo.multiply %30, %28 : tensor<4x3xf32>
    %32 = stablehlo.multiply %31, %13 : tensor<4x3xf32>
    %33 = stablehlo.multiply %32, %11 : tensor<4x3xf32>
    %34 = stablehlo.add %32, %33 : tensor<4x3xf32>
    %cst_11 = stablehlo.constant dense<0.797884583> : tensor<f32>
    %35 = stablehlo.broadcast_in_dim %cst_11, dims = [] : (tensor<f32>) -> tensor<4x3xf32>
    %36 = stablehlo.multiply %35, %34 : tensor<4x3xf32>
    %37 = stablehlo.add %29, %36 : tensor<4x3xf32>
    %cst_12 = stablehlo.constant dense<4.471500e-02> : tensor<f32>
    %38 = stablehlo.broadcast_in_dim %cst_12, dims = [] : (tensor<f32>) -> tensor<4x3xf32>
    %39 = stablehlo.multiply %38, %36 : tensor<4x3xf32>
    %40 = stablehlo.multiply %39, %5 : tensor<4x3xf32>
    %41 = stablehlo.add %37, %40 : tensor<4x3xf32>
    %42 = stablehlo.dot_general %41, %arg0, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x3xf32>, tensor<4x8xf32>) -> tensor<3x8xf32>
    %43 = stablehlo.transpose %42, dims = [1, 0] : (tensor<3x8xf32>) -> tensor<8x3xf32>
    %cst_13 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %44 = stablehlo.broadcast_in_dim %cst_13, dims = [] : (tensor<f32>) -> tensor<8x3xf32>
    %45 = stablehlo.multiply %44, %43 : tensor<8x3xf32>
    %46 = stablehlo.subtract %arg1, %45 : tensor<8x3xf32>
    return %24, %46 : tensor<f32>, tensor<8x3xf32>
  }
}
