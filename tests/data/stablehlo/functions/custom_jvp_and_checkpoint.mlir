module @jit_custom_jvp_and_checkpoint attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x4xf32>) -> (tensor<4x4xf32> {jax.result_info = "result[0]"}, tensor<4x4xf32> {jax.result_info = "result[1]"}, tensor<4xf32> {jax.result_info = "result[2]"}) {
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %1:2 = stablehlo.optimization_barrier %arg0, %0 : tensor<4x4xf32>, tensor<4x4xf32>
    %2 = stablehlo.sine %1#0 : tensor<4x4xf32>
    %3 = stablehlo.cosine %1#0 : tensor<4x4xf32>
    %4 = stablehlo.cosine %1#0 : tensor<4x4xf32>
    %5 = stablehlo.sine %1#0 : tensor<4x4xf32>
    %6 = stablehlo.dot_general %1#1, %2, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %7 = stablehlo.transpose %6, dims = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %8 = stablehlo.dot_general %1#1, %4, contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %9 = stablehlo.negate %7 : tensor<4x4xf32>
    %10 = stablehlo.multiply %9, %5 : tensor<4x4xf32>
    %11 = stablehlo.multiply %8, %3 : tensor<4x4xf32>
    %12 = stablehlo.add %10, %11 : tensor<4x4xf32>
    %13 = call @softplus(%arg0) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %14 = stablehlo.reduce(%arg0 init: %cst_0) applies stablehlo.maximum across dimensions = [1] : (tensor<4x4xf32>, tensor<f32>) -> tensor<4xf32>
    %cst_1 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %15 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %16 = stablehlo.maximum %15, %14 : tensor<4xf32>
    %17 = stablehlo.is_finite %16 : (tensor<4xf32>) -> tensor<4xi1>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %18 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %19 = stablehlo.select %17, %16, %18 : tensor<4xi1>, tensor<4xf32>
    %20 = stablehlo.broadcast_in_dim %19, dims = [0] : (tensor<4xf32>) -> tensor<4x1xf32>
    %21 = stablehlo.broadcast_in_dim %20, dims = [0, 1] : (tensor<4x1xf32>) -> tensor<4x4xf32>
    %22 = stablehlo.subtract %arg0, %21 : tensor<4x4xf32>
    %23 = stablehlo.exponential %22 : tensor<4x4xf32>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %24 = stablehlo.reduce(%23 init: %cst_3) applies stablehlo.add across dimensions = [1] : (tensor<4x4xf32>, tensor<f32>) -> tensor<4xf32>
    %25 = stablehlo.abs %24 : tensor<4xf32>
    %26 = stablehlo.log %25 : tensor<4xf32>
    %27 = stablehlo.add %26, %19 : tensor<4xf32>
    return %12, %13, %27 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4xf32>
  }
  func.func private @softplus(%arg0: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<4x4xf32>
    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %3 = stablehlo.subtract %arg0, %2 : tensor<4x4xf32>
    %4 = stablehlo.compare NE, %3, %3, FLOAT : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xi1>
    %5 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %6 = stablehlo.add %arg0, %5 : tensor<4x4xf32>
    %7 = stablehlo.abs %3 : tensor<4x4xf32>
    %8 = stablehlo.negate %7 : tensor<4x4xf32>
    %9 = stablehlo.exponential %8 : tensor<4x4xf32>
    %10 = stablehlo.log_plus_one %9 : tensor<4x4xf32>
    %11 = stablehlo.add %1, %10 : tensor<4x4xf32>
    %12 = stablehlo.select %4, %6, %11 : tensor<4x4xi1>, tensor<4x4xf32>
    return %12 : tensor<4x4xf32>
  }
}
