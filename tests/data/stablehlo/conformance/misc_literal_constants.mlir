module @jit_misc_literal_constants attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x8xf32>) -> (tensor<8x8xf32> {jax.result_info = "result[0]"}, tensor<8xf32> {jax.result_info = "result[1]"}, tensor<8xf32> {jax.result_info = "result[2]"}, tensor<8xi32> {jax.result_info = "result[3]"}, tensor<8xf16> {jax.result_info = "result[4]"}, tensor<8xi32> {jax.result_info = "result[5]"}, tensor<8xf32> {jax.result_info = "result[6]"}) {
    %cst = stablehlo.constant dense<[[-2.000000e-02, -1.850000e-02, -0.0169999991, -1.550000e-02, -0.0139999995, -0.0124999993, -1.100000e-02, -9.500000e-03], [-0.00799999944, -0.0064999992, -0.00499999896, -0.00349999964, -0.00200000033, -4.99999151E-4, 0.00100000016, 0.00250000134], [0.00400000066, 5.500000e-03, 0.00700000114, 8.500000e-03, 0.0100000016, 0.011500001, 1.300000e-02, 1.450000e-02], [0.0159999989, 0.0175000019, 0.0190000013, 2.050000e-02, 2.200000e-02, 2.350000e-02, 0.0250000022, 0.0265000015], [2.800000e-02, 2.950000e-02, 3.100000e-02, 0.0325000025, 3.400000e-02, 3.550000e-02, 3.700000e-02, 3.850000e-02], [0.0400000028, 0.0415000021, 4.300000e-02, 0.0445000045, 4.600000e-02, 0.0475000031, 4.900000e-02, 5.050000e-02], [0.0519999973, 5.350000e-02, 0.0550000034, 5.650000e-02, 0.0580000021, 0.0594999976, 6.100000e-02, 6.250000e-02], [0.0639999956, 0.0655000061, 6.700000e-02, 6.850000e-02, 0.0700000077, 7.150000e-02, 7.300000e-02, 0.0744999945]]> : tensor<8x8xf32>
    %cst_0 = stablehlo.constant dense<[0x7F800000, 0xFF800000, 0x7FC00000, -0.000000e+00, 1.000000e-30, 3.400000e+38, -1.000000e+00, 5.000000e-01]> : tensor<8xf32>
    %c = stablehlo.constant dense<[true, false, false, true, true, false, true, false]> : tensor<8xi1>
    %c_1 = stablehlo.constant dense<[-2147483648, 2147483647, 0, -1, 7, 8, 9, 10]> : tensor<8xi32>
    %cst_2 = stablehlo.constant dense<[9.997550e-02, 6.550400e+04, -2.000000e+00, 6.002190e-05, 1.000000e+00, -0.000000e+00, 3.000000e+00, 2.500000e-01]> : tensor<8xf16>
    %c_3 = stablehlo.constant dense<[0, 2, 254, 256, 400, 510, 6, 8]> : tensor<8xi32>
    %0 = stablehlo.dot_general %arg0, %cst, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
    %1 = stablehlo.slice %arg0 [0:1, 0:8] : (tensor<8x8xf32>) -> tensor<1x8xf32>
    %2 = stablehlo.reshape %1 : (tensor<1x8xf32>) -> tensor<8xf32>
    %3 = stablehlo.multiply %2, %cst_0 : tensor<8xf32>
    %4 = stablehlo.slice %arg0 [1:2, 0:8] : (tensor<8x8xf32>) -> tensor<1x8xf32>
    %5 = stablehlo.reshape %4 : (tensor<1x8xf32>) -> tensor<8xf32>
    %6 = call @_where(%c, %5, %cst_0) : (tensor<8xi1>, tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    %7 = stablehlo.slice %arg0 [2:3, 0:8] : (tensor<8x8xf32>) -> tensor<1x8xf32>
    %8 = stablehlo.reshape %7 : (tensor<1x8xf32>) -> tensor<8xf32>
    %9 = stablehlo.convert %8 : (tensor<8xf32>) -> tensor<8xi32>
    %10 = stablehlo.add %c_1, %9 : tensor<8xi32>
    %11 = stablehlo.slice %arg0 [3:4, 0:8] : (tensor<8x8xf32>) -> tensor<1x8xf32>
    %12 = stablehlo.reshape %11 : (tensor<1x8xf32>) -> tensor<8xf32>
    %13 = stablehlo.convert %12 : (tensor<8xf32>) -> tensor<8xf16>
    %14 = stablehlo.multiply %cst_2, %13 : tensor<8xf16>
    %15 = stablehlo.slice %arg0 [4:5, 0:8] : (tensor<8x8xf32>) -> tensor<1x8xf32>
    %16 = stablehlo.reshape %15 : (tensor<1x8xf32>) -> tensor<8xf32>
    %17 = stablehlo.convert %16 : (tensor<8xf32>) -> tensor<8xi32>
    %18 = stablehlo.add %c_3, %17 : tensor<8xi32>
    %19 = stablehlo.slice %arg0 [5:6, 0:8] : (tensor<8x8xf32>) -> tensor<1x8xf32>
    %20 = stablehlo.reshape %19 : (tensor<1x8xf32>) -> tensor<8xf32>
    %cst_4 = stablehlo.constant dense<3.14159274> : tensor<f32>
    %21 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %22 = stablehlo.multiply %21, %20 : tensor<8xf32>
    return %0, %3, %6, %10, %14, %18, %22 : tensor<8x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xi32>, tensor<8xf16>, tensor<8xi32>, tensor<8xf32>
  }
  func.func private @_where(%arg0: tensor<8xi1>, %arg1: tensor<8xf32>, %arg2: tensor<8xf32>) -> tensor<8xf32> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<8xi1>, tensor<8xf32>
    return %0 : tensor<8xf32>
  }
}
