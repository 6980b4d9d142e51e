module @jit_train_transformer_block attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<32x128xf32>, %arg1: tensor<128x32xf32>, %arg2: tensor<32x32xf32>, %arg3: tensor<32x96xf32>, %arg4: tensor<128xf32>, %arg5: tensor<32xf32>, %arg6: tensor<32xf32>, %arg7: tensor<96xf32>, %arg8: tensor<32xf32>, %arg9: tensor<32xf32>, %arg10: tensor<32xf32>, %arg11: tensor<32xf32>, %arg12: tensor<2x16x32xf32>, %arg13: tensor<2x16x32xf32>) -> (tensor<f32> {jax.result_info = "result[0]"}, tensor<32x128xf32> {jax.result_info = "result[1]['W1']"}, tensor<128x32xf32> {jax.result_info = "result[1]['W2']"}, tensor<32x32xf32> {jax.result_info = "result[1]['Wo']"}, tensor<32x96xf32> {jax.result_info = "result[1]['Wqkv']"}, tensor<128xf32> {jax.result_info = "result[1]['b1']"}, tensor<32xf32> {jax.result_info = "result[1]['b2']"}, tensor<32xf32> {jax.result_info = "result[1]['bo']"}, tensor<96xf32> {jax.result_info = "result[1]['bqkv']"}, tensor<32xf32> {jax.result_info = "result[1]['ln1_b']"}, tensor<32xf32> {jax.result_info = "result[1]['ln1_g']"}, tensor<32xf32> {jax.result_info = "result[1]['ln2_b']"}, tensor<32xf32> {jax.result_info = "result[1]['ln2_g']"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%arg12 init: %cst) applies stablehlo.add across dimensions = [2] : (tensor<2x16x32xf32>, tensor<f32>) -> tensor<2x16xf32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [0, 1] : (tensor<2x16xf32>) -> tensor<2x16x1xf32>
    %cst_0 = stablehlo.constant dense<3.200000e+01> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<2x16x1xf32>
    %3 = stablehlo.divide %1, %2 : tensor<2x16x1xf32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [0, 1, 2] : (tensor<2x16x1xf32>) -> tensor<2x16x32xf32>
    %5 = stablehlo.subtract %arg12, %4 : tensor<2x16x32xf32>
    %6 = stablehlo.multiply %5, %5 : tensor<2x16x32xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %7 = stablehlo.reduce(%6 init: %cst_1) applies stablehlo.add across dimensions = [2] : (tensor<2x16x32xf32>, tensor<f32>) -> tensor<2x16xf32>
    %8 = stablehlo.broadcast_in_dim %7, dims = [0, 1] : (tensor<2x16xf32>) -> tensor<2x16x1xf32>
    %cst_2 = stablehlo.constant dense<3.200000e+01> : tensor<f32>
    %9 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<2x16x1xf32>
    %10 = stablehlo.divide %8, %9 : tensor<2x16x1xf32>
    %11 = stablehlo.broadcast_in_dim %3, dims = [0, 1, 2] : (tensor<2x16x1xf32>) -> tensor<2x16x32xf32>
    %12 = stablehlo.subtract %arg12, %11 : tensor<2x16x32xf32>
    %cst_3 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %13 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<2x16x1xf32>
    %14 = stablehlo.add %10, %13 : tensor<2x16x1xf32>
    %15 = stablehlo.rsqrt %14 : tensor<2x16x1xf32>
    %16 = stablehlo.broadcast_in_dim %15, dims = [0, 1, 2] : (tensor<2x16x1xf32>) -> tensor<2x16x32xf32>
    %17 = stablehlo.multiply %12, %16 : tensor<2x16x32xf32>
    %18 = stablehlo.broadcast_in_dim %arg9, dims = [2] : (tensor<32xf32>) -> tensor<1x1x32xf32>
    %19 = stablehlo.broadcast_in_dim %18, dims = [0, 1, 2] : (tensor<1x1x32xf32>) -> tensor<2x16x32xf32>
    %20 = stablehlo.multiply %17, %19 : tensor<2x16x32xf32>
    %21 = stablehlo.broadcast_in_dim %arg8, dims = [2] : (tensor<32xf32>) -> tensor<1x1x32xf32>
    %22 = stablehlo.broadcast_in_dim %21, dims = [0, 1, 2] : (tensor<1x1x32xf32>) -> tensor<2x16x32xf32>
    %23 = stablehlo.add %20, %22 : tensor<2x16x32xf32>
    %24 = stablehlo.dot_general %23, %arg3, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16x32xf32>, tensor<32x96xf32>) -> tensor<2x16x96xf32>
    %25 = stablehlo.broadcast_in_dim %arg7, dims = [2] : (tensor<96xf32>) -> tensor<1x1x96xf32>
    %26 = stablehlo.broadcast_in_dim %25, dims = [0, 1, 2] : (tensor<1x1x96xf32>) -> tensor<2x16x96xf32>
    %27 = stablehlo.add %24, %26 : tensor<2x16x96xf32>
    %28 = stablehlo.slice %27 [0:2, 0:16, 0:32] : (tensor<2x16x96xf32>) -> tensor<2x16x32xf32>
    %29 = stablehlo.slice %27 [0:2, 0:16, 32:64] : (tensor<2x16x96xf32>) -> tensor<2x16x32xf32>
    %30 = stablehlo.slice %27 [0:2, 0:16, 64:96] : (tensor<2x16x96xf32>) -> tensor<2x16x32xf32>
    %31 = stablehlo.reshape %28 : (tensor<2x16x32xf32>) -> tensor<2x16x4x8xf32>
    %32 = stablehlo.reshape %29 : (tensor<2x16x32xf32>) -> tensor<2x16x4x8xf32>
    %33 = stablehlo.reshape %30 : (tensor<2x16x32xf32>) -> tensor<2x16x4x8xf32>
    %34 = stablehlo.dot_general %31, %32, batching_dims = [0, 2] x [0, 2], contracting_dims = [3] x [3], precision = [DEFAULT, DEFAULT] : (tensor<2x16x4x8xf32>, tensor<2x16x4x8xf32>) -> tensor<2x4x16x16xf32>
    %cst_4 = stablehlo.constant dense<8.000000e+00> : tensor<f32>
    %35 = stablehlo.sqrt %cst_4 : tensor<f32>
    %36 = stablehlo.broadcast_in_dim %35, dims = [] : (tensor<f32>) -> tensor<2x4x16x16xf32>
    %37 = stablehlo.divide %34, %36 : tensor<2x4x16x16xf32>
    %c = stablehlo.constant dense<true> : tensor<i1>
    %38 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i1>) -> tensor<16x16xi1>
    %39 = call @tril(%38) : (tensor<16x16xi1>) -> tensor<16x16xi1>
    %cst_5 = stablehlo.constant dense<-1.000000e+09> : tensor<f32>
    %40:2 = call @_where(%39, %37, %cst_5) : (tensor<16x16xi1>, tensor<2x4x16x16xf32>, tensor<f32>) -> (tensor<2x4x16x16xf32>, tensor<2x4x16x16xi1>)
    %cst_6 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %41 = stablehlo.reduce(%40#0 init: %cst_6) applies stablehlo.maximum across dimensions = [3] : (tensor<2x4x16x16xf32>, tensor<f32>) -> tensor<2x4x16xf32>
    %cst_7 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %42 = stablehlo.broadcast_in_dim %cst_7, dims = [] : (tensor<f32>) -> tensor<2x4x16xf32>
    %43 = stablehlo.maximum %42, %41 : tensor<2x4x16xf32>
    %44 = stablehlo.broadcast_in_dim %43, dims = [0, 1, 2] : (tensor<2x4x16xf32>) -> tensor<2x4x16x1xf32>
    %45 = stablehlo.broadcast_in_dim %44, dims = [0, 1, 2, 3] : (tensor<2x4x16x1xf32>) -> tensor<2x4x16x16xf32>
    %46 = stablehlo.subtract %40#0, %45 : tensor<2x4x16x16xf32>
    %47 = stablehlo.exponential %46 : tensor<2x4x16x16xf32>
    %cst_8 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %48 = stablehlo.reduce(%47 init: %cst_8) applies stablehlo.add across dimensions = [3] : (tensor<2x4x16x16xf32>, tensor<f32>) -> tensor<2x4x16xf32>
    %49 = stablehlo.broadcast_in_dim %48, dims = [0, 1, 2] : (tensor<2x4x16xf32>) -> tensor<2x4x16x1xf32>
    %50 = stablehlo.broadcast_in_dim %49, dims = [0, 1, 2, 3] : (tensor<2x4x16x1xf32>) -> tensor<2x4x16x16xf32>
    %51 = stablehlo.divide %47, %50 : tensor<2x4x16x16xf32>
    %52 = stablehlo.multiply %49, %49 : tensor<2x4x16x1xf32>
    %cst_9 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %53 = stablehlo.broadcast_in_dim %cst_9, dims = [] : (tensor<f32>) -> tensor<2x4x16x1xf32>
    %54 = stablehlo.divide %53, %52 : tensor<2x4x16x1xf32>
    %55 = stablehlo.dot_general %33, %51, batching_dims = [0, 2] x [0, 1], contracting_dims = [1] x [3], precision = [DEFAULT, DEFAULT] : (tensor<2x16x4x8xf32>, tensor<2x4x16x16xf32>) -> tensor<2x4x8x16xf32>
    %56 = stablehlo.transpose %55, dims = [0, 3, 1, 2] : (tensor<2x4x8x16xf32>) -> tensor<2x16x4x8xf32>
    %57 = stablehlo.reshape %56 : (tensor<2x16x4x8xf32>) -> tensor<2x16x32xf32>
    %58 = stablehlo.dot_general %57, %arg2, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16x32xf32>, tensor<32x32xf32>) -> tensor<2x16x32xf32>
    %59 = stablehlo.add %arg12, %58 : tensor<2x16x32xf32>
    %60 = stablehlo.broadcast_in_dim %arg6, dims = [2] : (tensor<32xf32>) -> tensor<1x1x32xf32>
    %61 = stablehlo.broadcast_in_dim %60, dims = [0, 1, 2] : (tensor<1x1x32xf32>) -> tensor<2x16x32xf32>
    %62 = stablehlo.add %59, %61 : tensor<2x16x32xf32>
    %cst_10 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %63 = stablehlo.reduce(%62 init: %cst_10) applies stablehlo.add across dimensions = [2] : (tensor<2x16x32xf32>, tensor<f32>) -> tensor<2x16xf32>
    %64 = stablehlo.broadcast_in_dim %63, dims = [0, 1] : (tensor<2x16xf32>) -> tensor<2x16x1xf32>
    %cst_11 = stablehlo.constant dense<3.200000e+01> : tensor<f32>
    %65 = stablehlo.broadcast_in_dim %cst_11, dims = [] : (tensor<f32>) -> tensor<2x16x1xf32>
    %66 = stablehlo.divide %64, %65 : tensor<2x16x1xf32>
    %67 = stablehlo.broadcast_in_dim %66, dims = [0, 1, 2] : (tensor<2x16x1xf32>) -> tensor<2x16x32xf32>
    %68 = stablehlo.subtract %62, %67 : tensor<2x16x32xf32>
    %69 = stablehlo.multiply %68, %68 : tensor<2x16x32xf32>
    %cst_12 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %70 = stablehlo.broadcast_in_dim %cst_12, dims = [] : (tensor<f32>) -> tensor<2x16x32xf32>
    %71 = stablehlo.multiply %70, %68 : tensor<2x16x32xf32>
    %cst_13 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %72 = stablehlo.reduce(%69 init: %cst_13) applies stablehlo.add across dimensions = [2] : (tensor<2x16x32xf32>, tensor<f32>) -> tensor<2x16xf32>
    %73 = stablehlo.broadcast_in_dim %72, dims = [0, 1] : (tensor<2x16xf32>) -> tensor<2x16x1xf32>
    %cst_14 = stablehlo.constant dense<3.200000e+01> : tensor<f32>
    %74 = stablehlo.broadcast_in_dim %cst_14, dims = [] : (tensor<f32>) -> tensor<2x16x1xf32>
    %75 = stablehlo.divide %73, %74 : tensor<2x16x1xf32>
    %76 = stablehlo.broadcast_in_dim %66, dims = [0, 1, 2] : (tensor<2x16x1xf32>) -> tensor<2x16x32xf32>
    %77 = stablehlo.subtract %62, %76 : tensor<2x16x32xf32>
    %cst_15 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %78 = stablehlo.broadcast_in_dim %cst_15, dims = [] : (tensor<f32>) -> tensor<2x16x1xf32>
    %79 = stablehlo.add %75, %78 : tensor<2x16x1xf32>
    %80 = stablehlo.rsqrt %79 : tensor<2x16x1xf32>
    %81 = stablehlo.divide %80, %79 : tensor<2x16x1xf32>
    %cst_16 = stablehlo.constant dense<-5.000000e-01> : tensor<f32>
    %82 = stablehlo.broadcast_in_dim %cst_16, dims = [] : (tensor<f32>) -> tensor<2x16x1xf32>
    %83 = stablehlo.multiply %82, %81 : tensor<2x16x1xf32>
    %84 = stablehlo.broadcast_in_dim %80, dims = [0, 1, 2] : (tensor<2x16x1xf32>) -> tensor<2x16x32xf32>
    %85 = stablehlo.multiply %77, %84 : tensor<2x16x32xf32>
    %86 = stablehlo.broadcast_in_dim %arg11, dims = [2] : (tensor<32xf32>) -> tensor<1x1x32xf32>
    %87 = stablehlo.broadcast_in_dim %86, dims = [0, 1, 2] : (tensor<1x1x32xf32>) -> tensor<2x16x32xf32>
    %88 = stablehlo.multiply %85, %87 : tensor<2x16x32xf32>
    %89 = stablehlo.broadcast_in_dim %arg10, dims = [2] : (tensor<32xf32>) -> tensor<1x1x32xf32>
    %90 = stablehlo.broadcast_in_dim %89, dims = [0, 1, 2] : (tensor<1x1x32xf32>) -> tensor<2x16x32xf32>
    %91 = stablehlo.add %88, %90 : tensor<2x16x32xf32>
    %92 = stablehlo.dot_general %91, %arg0, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16x32xf32>, tensor<32x128xf32>) -> tensor<2x16x128xf32>
    %93 = stablehlo.broadcast_in_dim %arg4, dims = [2] : (tensor<128xf32>) -> tensor<1x1x128xf32>
    %94 = stablehlo.broadcast_in_dim %93, dims = [0, 1, 2] : (tensor<1x1x128xf32>) -> tensor<2x16x128xf32>
    %95 = stablehlo.add %92, %94 : tensor<2x16x128xf32>
    %96 = stablehlo.multiply %95, %95 : tensor<2x16x128xf32>
    %97 = stablehlo.multiply %96, %95 : tensor<2x16x128xf32>
    %98 = stablehlo.multiply %95, %95 : tensor<2x16x128xf32>
    %cst_17 = stablehlo.constant dense<3.000000e+00> : tensor<f32>
    %99 = stablehlo.broadcast_in_dim %cst_17, dims = [] : (tensor<f32>) -> tensor<2x16x128xf32>
    %100 = stablehlo.multiply %99, %98 : tensor<2x16x128xf32>
    %cst_18 = stablehlo.constant dense<4.471500e-02> : tensor<f32>
    %101 = stablehlo.broadcast_in_dim %cst_18, dims = [] : (tensor<f32>) -> tensor<2x16x128xf32>
    %102 = stablehlo.multiply %101, %97 : tensor<2x16x128xf32>
    %103 = stablehlo.add %95, %102 : tensor<2x16x128xf32>
    %cst_19 = stablehlo.constant dense<0.797884583> : tensor<f32>
    %104 = stablehlo.broadcast_in_dim %cst_19, dims = [] : (tensor<f32>) -> tensor<2x16x128xf32>
    %105 = stablehlo.multiply %104, %103 : tensor<2x16x128xf32>
    %106 = stablehlo.tanh %105 : tensor<2x16x128xf32>
    %cst_20 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %107 = stablehlo.broadcast_in_dim %cst_20, dims = [] : (tensor<f32>) -> tensor<2x16x128xf32>
    %108 = stablehlo.subtract %107, %106 : tensor<2x16x128xf32>
    %cst_21 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %109 = stablehlo.broadcast_in_dim %cst_21, dims = [] : (tensor<f32>) -> tensor<2x16x128xf32>
    %110 = stablehlo.add %109, %106 : tensor<2x16x128xf32>
    %cst_22 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %111 = stablehlo.broadcast_in_dim %cst_22, dims = [] : (tensor<f32>) -> tensor<2x16x128xf32>
    %112 = stablehlo.multiply %111, %110 : tensor<2x16x128xf32>
    %113 = stablehlo.multiply %95, %112 : tensor<2x16x128xf32>
    %114 = stablehlo.dot_general %113, %arg1, contracting_dims = [2] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x16x128xf32>, tensor<128x32xf32>) -> tensor<2x16x32xf32>
    %115 = stablehlo.add %62, %114 : tensor<2x16x32xf32>
    %116 = stablehlo.broadcast_in_dim %arg5, dims = [2] : (tensor<32xf32>) -> tensor<1x1x32xf32>
    %117 = stablehlo.broadcast_in_dim %116, dims = [0, 1, 2] : (tensor<1x1x32xf32>) -> tensor<2x16x32xf32>
    %118 = stablehlo.add %115, %117 : tensor<2x16x32xf32>
    %119 = stablehlo.subtract %118, %arg13 : tensor<2x16x32xf32>
    %120 = stablehlo.multiply %119, %119 : tensor<2x16x32xf32>
    %cst_23 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %121 = stablehlo.broadcast_in_dim %cst_23, dims = [] : (tensor<f32>) -> tensor<2x16x32xf32>
    %122 = stablehlo.multiply %121, %119 : tensor<2x16x32xf32>
    %cst_24 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %123 = stablehlo.reduce(%120 init: %cst_24) applies stablehlo.add across dimensions = [0, 1, 2] : (tensor<2x16x32xf32>, tensor<f32>) -> tensor<f32>
    %cst_25 = stablehlo.constant dense<1.024000e+03> : tensor<f32>
    %124 = stablehlo.divide %123, %cst_25 : tensor<f32>
    %cst_26 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %cst_27 = stablehlo.constant dense<1.024000e+03> : tensor<f32>
    %125 = stablehlo.divide %cst_26, %cst_27 : tensor<f32>
    %126 = stablehlo.broadcast_in_dim %125, dims = [] : (tensor<f32>) -> tensor<2x16x32xf32>
    %127 = stablehlo.multiply %126, %122 : tensor<2x16x32xf32>
    %cst_28 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %128 = stablehlo.reduce(%127 init: %cst_28) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x16x32xf32>, tensor<f32>) -> tensor<32xf32>
    %129 = stablehlo.reshape %128 : (tensor<32xf32>) -> tensor<1x1x32xf32>
    %cst_29 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %130 = stablehlo.reduce(%129 init: %cst_29) applies stablehlo.add across dimensions = [0, 1] : (tensor<1x1x32xf32>, tensor<f32>) -> tensor<32xf32>
    %131 = stablehlo.dot_general %127, %113, contracting_dims = [0, 1] x [0, 1], precision = [DEFAULT, DEFAULT] : (tensor<2x16x32xf32>, tensor<2x16x128xf32>) -> tensor<32x128xf32>
    %132 = stablehlo.transpose %131, dims = [1, 0] : (tensor<32x128xf32>) -> tensor<128x32xf32>
    %133 = stablehlo.dot_general %127, %arg1, contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x16x32xf32>, tensor<128x32xf32>) -> tensor<2x16x128xf32>
    %134 = stablehlo.multiply %95, %133 : tensor<2x16x128xf32>
    %135 = stablehlo.multiply %133, %112 : tensor<2x16x128xf32>
    %cst_30 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %136 = stablehlo.broadcast_in_dim %cst_30, dims = [] : (tensor<f32>) -> tensor<2x16x128xf32>
    %137 = stablehlo.multiply %136, %134 : tensor<2x16x128xf32>
    %138 = stablehlo.multiply %137, %108 : tensor<2x16x128xf32>
    %139 = stablehlo.multiply %138, %106 : tensor<2x16x128xf32>
    %140 = stablehlo.add %138, %139 : tensor<2x16x128xf32>
    %cst_31 = stablehlo.constant dense<0.797884583> : tensor<f32>
    %141 = stablehlo.broadcast_in_dim %cst_31, dims = [] : (tensor<f32>) -> tensor<2x16x128xf32>
    %142 = stablehlo.multiply %141, %140 : tensor<2x16x128xf32>
    %143 = stablehlo.add %135, %142 : tensor<2x16x128xf32>
    %cst_32 = stablehlo.constant dense<4.471500e-02> : tensor<f32>
    %144 = stablehlo.broadcast_in_dim %cst_32, dims = [] : (tensor<f32>) -> tensor<2x16x128xf32>
    %145 = stablehlo.multiply %144, %142 : tensor<2x16x128xf32>
    %146 = stablehlo.multiply %145, %100 : tensor<2x16x128xf32>
    %147 = stablehlo.add %143, %146 : tensor<2x16x128xf32>
    %cst_33 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %148 = stablehlo.reduce(%147 init: %cst_33) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x16x128xf32>, tensor<f32>) -> tensor<128xf32>
    %149 = stablehlo.reshape %148 : (tensor<128xf32>) -> tensor<1x1x128xf32>
    %cst_34 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %150 = stablehlo.reduce(%149 init: %cst_34) applies stablehlo.add across dimensions = [0, 1] : (tensor<1x1x128xf32>, tensor<f32>) -> tensor<128xf32>
    %151 = stablehlo.dot_general %147, %91, contracting_dims = [0, 1] x [0, 1], precision = [DEFAULT, DEFAULT] : (tensor<2x16x128xf32>, tensor<2x16x32xf32>) -> tensor<128x32xf32>
    %152 = stablehlo.transpose %151, dims = [1, 0] : (tensor<128x32xf32>) -> tensor<32x128xf32>
    %153 = stablehlo.dot_general %147, %arg0, contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x16x128xf32>, tensor<32x128xf32>) -> tensor<2x16x32xf32>
    %cst_35 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %154 = stablehlo.reduce(%153 init: %cst_35) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x16x32xf32>, tensor<f32>) -> tensor<32xf32>
    %155 = stablehlo.reshape %154 : (tensor<32xf32>) -> tensor<1x1x32xf32>
    %cst_36 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %156 = stablehlo.reduce(%155 init: %cst_36) applies stablehlo.add across dimensions = [0, 1] : (tensor<1x1x32xf32>, tensor<f32>) -> tensor<32xf32>
    %157 = stablehlo.multiply %85, %153 : tensor<2x16x32xf32>
    %cst_37 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %158 = stablehlo.reduce(%157 init: %cst_37) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x16x32xf32>, tensor<f32>) -> tensor<32xf32>
    %159 = stablehlo.reshape %158 : (tensor<32xf32>) -> tensor<1x1x32xf32>
    %160 = stablehlo.broadcast_in_dim %86, dims = [0, 1, 2] : (tensor<1x1x32xf32>) -> tensor<2x16x32xf32>
    %161 = stablehlo.multiply %153, %160 : tensor<2x16x32xf32>
    %cst_38 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %162 = stablehlo.reduce(%159 init: %cst_38) applies stablehlo.add across dimensions = [0, 1] : (tensor<1x1x32xf32>, tensor<f32>) -> tensor<32xf32>
    %163 = stablehlo.multiply %77, %161 : tensor<2x16x32xf32>
    %cst_39 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %164 = stablehlo.reduce(%163 init: %cst_39) applies stablehlo.add across dimensions = [2] : (tensor<2x16x32xf32>, tensor<f32>) -> tensor<2x16xf32>
    %165 = stablehlo.reshape %164 : (tensor<2x16xf32>) -> tensor<2x16x1xf32>
    %166 = stablehlo.broadcast_in_dim %80, dims = [0, 1, 2] : (tensor<2x16x1xf32>) -> tensor<2x16x32xf32>
    %167 = stablehlo.multiply %161, %166 : tensor<2x16x32xf32>
    %168 = stablehlo.multiply %165, %83 : tensor<2x16x1xf32>
    %169 = stablehlo.negate %167 : tensor<2x16x32xf32>
    %cst_40 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %170 = stablehlo.reduce(%169 init: %cst_40) applies stablehlo.add across dimensions = [2] : (tensor<2x16x32xf32>, tensor<f32>) -> tensor<2x16xf32>
    %171 = stablehlo.reshape %170 : (tensor<2x16xf32>) -> tensor<2x16x1xf32>
    %172 = stablehlo.add %127, %167 : tensor<2x16x32xf32>
    %cst_41 = stablehlo.constant dense<3.200000e+01> : tensor<f32>
    %173 = stablehlo.broadcast_in_dim %cst_41, dims = [] : (tensor<f32>) -> tensor<2x16x1xf32>
    %174 = stablehlo.divide %168, %173 : tensor<2x16x1xf32>
    %cst_42 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %175 = stablehlo.reduce(%174 init: %cst_42) applies stablehlo.add across dimensions = [2] : (tensor<2x16x1xf32>, tensor<f32>) -> tensor<2x16xf32>
    %176 = stablehlo.broadcast_in_dim %175, dims = [0, 1] : (tensor<2x16xf32>) -> tensor<2x16x32xf32>
    %177 = stablehlo.multiply %176, %71 : tensor<2x16x32xf32>
    %178 = stablehlo.negate %177 : tensor<2x16x32xf32>
    %cst_43 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %179 = stablehlo.reduce(%178 init: %cst_43) applies stablehlo.add across dimensions = [2] : (tensor<2x16x32xf32>, tensor<f32>) -> tensor<2x16xf32>
    %180 = stablehlo.reshape %179 : (tensor<2x16xf32>) -> tensor<2x16x1xf32>
    %181 = stablehlo.add %172, %177 : tensor<2x16x32xf32>
    %182 = stablehlo.add %171, %180 : tensor<2x16x1xf32>
    %cst_44 = stablehlo.constant dense<3.200000e+01> : tensor<f32>
    %183 = stablehlo.broadcast_in_dim %cst_44, dims = [] : (tensor<f32>) -> tensor<2x16x1xf32>
    %184 = stablehlo.divide %182, %183 : tensor<2x16x1xf32>
    %cst_45 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %185 = stablehlo.reduce(%184 init: %cst_45) applies stablehlo.add across dimensions = [2] : (tensor<2x16x1xf32>, tensor<f32>) -> tensor<2x16xf32>
    %186 = stablehlo.broadcast_in_dim %185, dims = [0, 1] : (tensor<2x16xf32>) -> tensor<2x16x32xf32>
    %187 = stablehlo.add %181, %186 : tensor<2x16x32xf32>
    %cst_46 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %188 = stablehlo.reduce(%187 init: %cst_46) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x16x32xf32>, tensor<f32>) -> tensor<32xf32>
    %189 = stablehlo.reshape %188 : (tensor<32xf32>) -> tensor<1x1x32xf32>
    %cst_47 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %190 = stablehlo.reduce(%189 init: %cst_47) applies stablehlo.add across dimensions = [0, 1] : (tensor<1x1x32xf32>, tensor<f32>) -> tensor<32xf32>
    %191 = stablehlo.dot_general %187, %57, contracting_dims = [0, 1] x [0, 1], precision = [DEFAULT, DEFAULT] : (tensor<2x16x32xf32>, tensor<2x16x32xf32>) -> tensor<32x32xf32>
    %192 = stablehlo.transpose %191, dims = [1, 0] : (tensor<32x32xf32>) -> tensor<32x32xf32>
    %193 = stablehlo.dot_general %187, %arg2, contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x16x32xf32>, tensor<32x32xf32>) -> tensor<2x16x32xf32>
    %194 = stablehlo.reshape %193 : (tensor<2x16x32xf32>) -> tensor<2x16x4x8xf32>
    %195 = stablehlo.transpose %194, dims = [0, 2, 3, 1] : (tensor<2x16x4x8xf32>) -> tensor<2x4x8x16xf32>
    %196 = stablehlo.dot_general %195, %33, batching_dims = [0, 1] x [0, 2], contracting_dims = [2] x [3], precision = [DEFAULT, DEFAULT] : (tensor<2x4x8x16xf32>, tensor<2x16x4x8xf32>) -> tensor<2x4x16x16xf32>
    %197 = stablehlo.dot_general %195, %51, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2], precision = [DEFAULT, DEFAULT] : (tensor<2x4x8x16xf32>, tensor<2x4x16x16xf32>) -> tensor<2x4x8x16xf32>
    %198 = stablehlo.transpose %197, dims = [0, 3, 1, 2] : (tensor<2x4x8x16xf32>) -> tensor<2x16x4x8xf32>
    %199 = stablehlo.broadcast_in_dim %54, dims = [0, 1, 2, 3] : (tensor<2x4x16x1xf32>) -> tensor<2x4x16x16xf32>
    %200 = stablehlo.multiply %196, %199 : tensor<2x4x16x16xf32>
    %201 = stablehlo.multiply %200, %47 : tensor<2x4x16x16xf32>
    %cst_48 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %202 = stablehlo.reduce(%201 init: %cst_48) applies stablehlo.add across dimensions = [3] : (tensor<2x4x16x16xf32>, tensor<f32>) -> tensor<2x4x16xf32>
    %203 = stablehlo.reshape %202 : (tensor<2x4x16xf32>) -> tensor<2x4x16x1xf32>
    %204 = stablehlo.negate %203 : tensor<2x4x16x1xf32>
    %205 = stablehlo.broadcast_in_dim %49, dims = [0, 1, 2, 3] : (tensor<2x4x16x1xf32>) -> tensor<2x4x16x16xf32>
    %206 = stablehlo.divide %196, %205 : tensor<2x4x16x16xf32>
    %cst_49 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %207 = stablehlo.reduce(%204 init: %cst_49) applies stablehlo.add across dimensions = [3] : (tensor<2x4x16x1xf32>, tensor<f32>) -> tensor<2x4x16xf32>
    %208 = stablehlo.broadcast_in_dim %207, dims = [0, 1, 2] : (tensor<2x4x16xf32>) -> tensor<2x4x16x16xf32>
    %209 = stablehlo.add %206, %208 : tensor<2x4x16x16xf32>
    %210 = stablehlo.multiply %209, %47 : tensor<2x4x16x16xf32>
    %211 = call @_where_0(%40#1, %210) : (tensor<2x4x16x16xi1>, tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32>
    %212 = stablehlo.broadcast_in_dim %35, dims = [] : (tensor<f32>) -> tensor<2x4x16x16xf32>
    %213 = stablehlo.divide %211, %212 : tensor<2x4x16x16xf32>
    %214 = stablehlo.dot_general %213, %31, batching_dims = [0, 1] x [0, 2], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x4x16x16xf32>, tensor<2x16x4x8xf32>) -> tensor<2x4x16x8xf32>
    %215 = stablehlo.transpose %214, dims = [0, 2, 1, 3] : (tensor<2x4x16x8xf32>) -> tensor<2x16x4x8xf32>
    %216 = stablehlo.dot_general %213, %32, batching_dims = [0, 1] x [0, 2], contracting_dims = [3] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x4x16x16xf32>, tensor<2x16x4x8xf32>) -> tensor<2x4x16x8xf32>
    %217 = stablehlo.transpose %216, dims = [0, 2, 1, 3] : (tensor<2x4x16x8xf32>) -> tensor<2x16x4x8xf32>
    %218 = stablehlo.reshape %198 : (tensor<2x16x4x8xf32>) -> tensor<2x16x32xf32>
    %219 = stablehlo.reshape %215 : (tensor<2x16x4x8xf32>) -> tensor<2x16x32xf32>
    %220 = stablehlo.reshape %217 : (tensor<2x16x4x8xf32>) -> tensor<2x16x32xf32>
    %221 = stablehlo.concatenate %220, %219, %218, dim = 2 : (tensor<2x16x32xf32>, tensor<2x16x32xf32>, tensor<2x16x32xf32>) -> tensor<2x16x96xf32>
    %cst_50 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %222 = stablehlo.reduce(%221 init: %cst_50) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x16x96xf32>, tensor<f32>) -> tensor<96xf32>
    %223 = stablehlo.reshape %222 : (tensor<96xf32>) -> tensor<1x1x96xf32>
    %cst_51 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %224 = stablehlo.reduce(%223 init: %cst_51) applies stablehlo.add across dimensions = [0, 1] : (tensor<1x1x96xf32>, tensor<f32>) -> tensor<96xf32>
    %225 = stablehlo.dot_general %221, %23, contracting_dims = [0, 1] x [0, 1], precision = [DEFAULT, DEFAULT] : (tensor<2x16x96xf32>, tensor<2x16x32xf32>) -> tensor<96x32xf32>
    %226 = stablehlo.transpose %225, dims = [1, 0] : (tensor<96x32xf32>) -> tensor<32x96xf32>
    %227 = stablehlo.dot_general %221, %arg3, contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x16x96xf32>, tensor<32x96xf32>) -> tensor<2x16x32xf32>
    %cst_52 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %228 = stablehlo.reduce(%227 init: %cst_52) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x16x32xf32>, tensor<f32>) -> tensor<32xf32>
    %229 = stablehlo.reshape %228 : (tensor<32xf32>) -> tensor<1x1x32xf32>
    %cst_53 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %230 = stablehlo.reduce(%229 init: %cst_53) applies stablehlo.add across dimensions = [0, 1] : (tensor<1x1x32xf32>, tensor<f32>) -> tensor<32xf32>
    %231 = stablehlo.multiply %17, %227 : tensor<2x16x32xf32>
    %cst_54 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %232 = stablehlo.reduce(%231 init: %cst_54) applies stablehlo.add across dimensions = [0, 1] : (tensor<2x16x32xf32>, tensor<f32>) -> tensor<32xf32>
    %233 = stablehlo.reshape %232 : (tensor<32xf32>) -> tensor<1x1x32xf32>
    %cst_55 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %234 = stablehlo.reduce(%233 init: %cst_55) applies stablehlo.add across dimensions = [0, 1] : (tensor<1x1x32xf32>, tensor<f32>) -> tensor<32xf32>
    return %124, %152, %132, %192, %226, %150, %130, %190, %224, %230, %234, %156, %162 : tensor<f32>, tensor<32x128xf32>, tensor<128x32xf32>, tensor<32x32xf32>, tensor<32x96xf32>, tensor<128xf32>, tensor<32xf32>, tensor<32xf32>, tensor<96xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>, tensor<32xf32>
  }
  func.func private @tril(%arg0: tensor<16x16xi1>) -> tensor<16x16xi1> {
    %0 = stablehlo.iota dim = 0 : tensor<16x16xi32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<16x16xi32>
    %2 = stablehlo.add %0, %1 : tensor<16x16xi32>
    %3 = stablehlo.iota dim = 1 : tensor<16x16xi32>
    %4 = stablehlo.compare GE, %2, %3, SIGNED : (tensor<16x16xi32>, tensor<16x16xi32>) -> tensor<16x16xi1>
    %c_0 = stablehlo.constant dense<false> : tensor<i1>
    %5 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i1>) -> tensor<16x16xi1>
    %6 = stablehlo.select %4, %arg0, %5 : tensor<16x16xi1>, tensor<16x16xi1>
    return %6 : tensor<16x16xi1>
  }
  func.func private @_where(%arg0: tensor<16x16xi1>, %arg1: tensor<2x4x16x16xf32>, %arg2: tensor<f32>) -> (tensor<2x4x16x16xf32>, tensor<2x4x16x16xi1>) {
    %0 = stablehlo.convert %arg2 : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %arg0, dims = [2, 3] : (tensor<16x16xi1>) -> tensor<2x4x16x16xi1>
    %2 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<2x4x16x16xf32>
    %3 = stablehlo.select %1, %arg1, %2 : tensor<2x4x16x16xi1>, tensor<2x4x16x16xf32>
    return %3, %1 : tensor<2x4x16x16xf32>, tensor<2x4x16x16xi1>
  }
  func.func private @_where_0(%arg0: tensor<2x4x16x16xi1>, %arg1: tensor<2x4x16x16xf32>) -> tensor<2x4x16x16xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x4x16x16xf32>
    %1 = stablehlo.select %arg0, %arg1, %0 : tensor<2x4x16x16xi1>, tensor<2x4x16x16xf32>
    return %1 : tensor<2x4x16x16xf32>
  }
}
