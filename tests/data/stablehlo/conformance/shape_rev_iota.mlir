module @jit_shape_rev_iota attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<6x8xf32>) -> (tensor<6x8xf32> {jax.result_info = "result[0]"}, tensor<6x8xf32> {jax.result_info = "result[1]"}, tensor<3x4xi32> {jax.result_info = "result[2]"}, tensor<4x5xf32> {jax.result_info = "result[3]"}, tensor<3x4x2xi32> {jax.result_info = "result[4]"}, tensor<5x7xf32> {jax.result_info = "result[5]"}, tensor<6x8xf32> {jax.result_info = "result[6]"}, tensor<6x8xf32> {jax.result_info = "result[7]"}) {
    %0 = call @_flip(%arg0) : (tensor<6x8xf32>) -> tensor<6x8xf32>
    %1 = stablehlo.reverse %arg0, dims = [0, 1] : tensor<6x8xf32>
    %2 = stablehlo.iota dim = 0 : tensor<12xi32>
    %3 = stablehlo.reshape %2 : (tensor<12xi32>) -> tensor<3x4xi32>
    %4 = stablehlo.slice %arg0 [0:1, 0:1] : (tensor<6x8xf32>) -> tensor<1x1xf32>
    %5 = stablehlo.reshape %4 : (tensor<1x1xf32>) -> tensor<f32>
    %6 = stablehlo.convert %5 : (tensor<f32>) -> tensor<i32>
    %7 = stablehlo.broadcast_in_dim %6, dims = [] : (tensor<i32>) -> tensor<3x4xi32>
    %8 = stablehlo.add %3, %7 : tensor<3x4xi32>
    %9 = stablehlo.iota dim = 1 : tensor<4x5xf32>
    %10 = stablehlo.slice %arg0 [0:1, 1:2] : (tensor<6x8xf32>) -> tensor<1x1xf32>
    %11 = stablehlo.reshape %10 : (tensor<1x1xf32>) -> tensor<f32>
    %12 = stablehlo.broadcast_in_dim %11, dims = [] : (tensor<f32>) -> tensor<4x5xf32>
    %13 = stablehlo.multiply %9, %12 : tensor<4x5xf32>
    %14 = stablehlo.iota dim = 0 : tensor<3x4x2xi32>
    %15 = stablehlo.iota dim = 0 : tensor<5x7xi32>
    %16 = stablehlo.iota dim = 1 : tensor<5x7xi32>
    %c = stablehlo.constant dense<1> : tensor<i32>
    %17 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<5x7xi32>
    %18 = stablehlo.add %15, %17 : tensor<5x7xi32>
    %19 = stablehlo.compare EQ, %18, %16, SIGNED : (tensor<5x7xi32>, tensor<5x7xi32>) -> tensor<5x7xi1>
    %20 = stablehlo.convert %19 : (tensor<5x7xi1>) -> tensor<5x7xf32>
    %21 = stablehlo.slice %arg0 [1:2, 1:2] : (tensor<6x8xf32>) -> tensor<1x1xf32>
    %22 = stablehlo.reshape %21 : (tensor<1x1xf32>) -> tensor<f32>
    %23 = stablehlo.broadcast_in_dim %22, dims = [] : (tensor<f32>) -> tensor<5x7xf32>
    %24 = stablehlo.multiply %20, %23 : tensor<5x7xf32>
    %25 = call @tril(%arg0) : (tensor<6x8xf32>) -> tensor<6x8xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %26 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<6x8xf32>
    %27 = call @triu(%26) : (tensor<6x8xf32>) -> tensor<6x8xf32>
    %28 = stablehlo.multiply %arg0, %27 : tensor<6x8xf32>
    return %0, %1, %8, %13, %14, %24, %25, %28 : tensor<6x8xf32>, tensor<6x8xf32>, tensor<3x4xi32>, tensor<4x5xf32>, tensor<3x4x2xi32>, tensor<5x7xf32>, tensor<6x8xf32>, tensor<6x8xf32>
  }
  func.func private @_flip(%arg0: tensor<6x8xf32>) -> tensor<6x8xf32> {
    %0 = stablehlo.reverse %arg0, dims = [0] : tensor<6x8xf32>
    return %0 : tensor<6x8xf32>
  }
  func.func private @tril(%arg0: tensor<6x8xf32>) -> tensor<6x8xf32> {
    %0 = stablehlo.iota dim = 0 : tensor<6x8xi32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<6x8xi32>
    %2 = stablehlo.add %0, %1 : tensor<6x8xi32>
    %3 = stablehlo.iota dim = 1 : tensor<6x8xi32>
    %4 = stablehlo.compare GE, %2, %3, SIGNED : (tensor<6x8xi32>, tensor<6x8xi32>) -> tensor<6x8xi1>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %5 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<6x8xf32>
    %6 = stablehlo.select %4, %arg0, %5 : tensor<6x8xi1>, tensor<6x8xf32>
    return %6 : tensor<6x8xf32>
  }
  func.func private @triu(%arg0: tensor<6x8xf32>) -> tensor<6x8xf32> {
    %0 = stablehlo.iota dim = 0 : tensor<6x8xi32>
    %c = stablehlo.constant dense<1> : tensor<i32>
    %1 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<6x8xi32>
    %2 = stablehlo.add %0, %1 : tensor<6x8xi32>
    %3 = stablehlo.iota dim = 1 : tensor<6x8xi32>
    %4 = stablehlo.compare GE, %2, %3, SIGNED : (tensor<6x8xi32>, tensor<6x8xi32>) -> tensor<6x8xi1>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %5 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<6x8xf32>
    %6 = stablehlo.select %4, %5, %arg0 : tensor<6x8xi1>, tensor<6x8xf32>
    return %6 : tensor<6x8xf32>
  }
}
