module @jit_train_mlp_adam attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<784x128xf32>, %arg1: tensor<128x10xf32>, %arg2: tensor<128xf32>, %arg3: tensor<10xf32>, %arg4: tensor<784x128xf32>, %arg5: tensor<128x10xf32>, %arg6: tensor<128xf32>, %arg7: tensor<10xf32>, %arg8: tensor<784x128xf32>, %arg9: tensor<128x10xf32>, %arg10: tensor<128xf32>, %arg11: tensor<10xf32>, %arg12: tensor<i32>, %arg13: tensor<8x784xf32>, %arg14: tensor<8xi32>) -> (tensor<f32> {jax.result_info = "result[0]"}, tensor<784x128xf32> {jax.result_info = "result[1]['W1']"}, tensor<128x10xf32> {jax.result_info = "result[1]['W2']"}, tensor<128xf32> {jax.result_info = "result[1]['b1']"}, tensor<10xf32> {jax.result_info = "result[1]['b2']"}, tensor<784x128xf32> {jax.result_info = "result[2]['W1']"}, tensor<128x10xf32> {jax.result_info = "result[2]['W2']"}, tensor<128xf32> {jax.result_info = "result[2]['b1']"}, tensor<10xf32> {jax.result_info = "result[2]['b2']"}, tensor<784x128xf32> {jax.result_info = "result[3]['W1']"}, tensor<128x10xf32> {jax.result_info = "result[3]['W2']"}, tensor<128xf32> {jax.result_info = "result[3]['b1']"}, tensor<10xf32> {jax.result_info = "result[3]['b2']"}, tensor<i32> {jax.result_info = "result[4]"}) {
    %0 = stablehlo.dot_general %arg13, %arg0, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x784xf32>, tensor<784x128xf32>) -> tensor<8x128xf32>
    %1 = stablehlo.broadcast_in_dim %arg2, dims = [1] : (tensor<128xf32>) -> tensor<1x128xf32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [0, 1] : (tensor<1x128xf32>) -> tensor<8x128xf32>
    %3 = stablehlo.add %0, %2 : tensor<8x128xf32>
    %4 = call @relu(%3) : (tensor<8x128xf32>) -> tensor<8x128xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %5 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8x128xf32>
    %6 = stablehlo.compare GT, %3, %5, FLOAT : (tensor<8x128xf32>, tensor<8x128xf32>) -> tensor<8x128xi1>
    %7 = stablehlo.dot_general %4, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x128xf32>, tensor<128x10xf32>) -> tensor<8x10xf32>
    %8 = stablehlo.broadcast_in_dim %arg3, dims = [1] : (tensor<10xf32>) -> tensor<1x10xf32>
    %9 = stablehlo.broadcast_in_dim %8, dims = [0, 1] : (tensor<1x10xf32>) -> tensor<8x10xf32>
    %10 = stablehlo.add %7, %9 : tensor<8x10xf32>
    %11 = call @_one_hot(%arg14) : (tensor<8xi32>) -> tensor<8x10xf32>
    %12:3 = call @log_softmax(%10) : (tensor<8x10xf32>) -> (tensor<8x10xf32>, tensor<8x10xf32>, tensor<8x1xf32>)
    %13 = stablehlo.multiply %11, %12#0 : tensor<8x10xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %14 = stablehlo.reduce(%13 init: %cst_0) applies stablehlo.add across dimensions = [1] : (tensor<8x10xf32>, tensor<f32>) -> tensor<8xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %15 = stablehlo.reduce(%14 init: %cst_1) applies stablehlo.add across dimensions = [0] : (tensor<8xf32>, tensor<f32>) -> tensor<f32>
    %cst_2 = stablehlo.constant dense<8.000000e+00> : tensor<f32>
    %16 = stablehlo.divide %15, %cst_2 : tensor<f32>
    %17 = stablehlo.negate %16 : tensor<f32>
    %cst_3 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %18 = stablehlo.negate %cst_3 : tensor<f32>
    %cst_4 = stablehlo.constant dense<8.000000e+00> : tensor<f32>
    %19 = stablehlo.divide %18, %cst_4 : tensor<f32>
    %20 = stablehlo.broadcast_in_dim %19, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %21 = stablehlo.broadcast_in_dim %20, dims = [0] : (tensor<8xf32>) -> tensor<8x10xf32>
    %22 = stablehlo.multiply %11, %21 : tensor<8x10xf32>
    %23 = call @log_softmax_0(%12#1, %12#2, %22) : (tensor<8x10xf32>, tensor<8x1xf32>, tensor<8x10xf32>) -> tensor<8x10xf32>
    %cst_5 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %24 = stablehlo.reduce(%23 init: %cst_5) applies stablehlo.add across dimensions = [0] : (tensor<8x10xf32>, tensor<f32>) -> tensor<10xf32>
    %25 = stablehlo.reshape %24 : (tensor<10xf32>) -> tensor<1x10xf32>
    %cst_6 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %26 = stablehlo.reduce(%25 init: %cst_6) applies stablehlo.add across dimensions = [0] : (tensor<1x10xf32>, tensor<f32>) -> tensor<10xf32>
    %27 = stablehlo.dot_general %23, %4, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x10xf32>, tensor<8x128xf32>) -> tensor<10x128xf32>
    %28 = stablehlo.transpose %27, dims = [1, 0] : (tensor<10x128xf32>) -> tensor<128x10xf32>
    %29 = stablehlo.dot_general %23, %arg1, contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<8x10xf32>, tensor<128x10xf32>) -> tensor<8x128xf32>
    %cst_7 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %30 = stablehlo.broadcast_in_dim %cst_7, dims = [] : (tensor<f32>) -> tensor<8x128xf32>
    %31 = stablehlo.select %6, %29, %30 : tensor<8x128xi1>, tensor<8x128xf32>
    %cst_8 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %32 = stablehlo.reduce(%31 init: %cst_8) applies stablehlo.add across dimensions = [0] : (tensor<8x128xf32>, tensor<f32>) -> tensor<128xf32>
    %33 = stablehlo.reshape %32 : (tensor<128xf32>) -> tensor<1x128xf32>
    %cst_9 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %34 = stablehlo.reduce(%33 init: %cst_9) applies stablehlo.add across dimensions = [0] : (tensor<1x128xf32>, tensor<f32>) -> tensor<128xf32>
    %35 = stablehlo.dot_general %31, %arg13, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<8x128xf32>, tensor<8x784xf32>) -> tensor<128x784xf32>
    %36 = stablehlo.transpose %35, dims = [1, 0] : (tensor<128x784xf32>) -> tensor<784x128xf32>
    %c = stablehlo.constant dense<1> : tensor<i32>
    %37 = stablehlo.add %arg12, %c : tensor<i32>
    %38 = stablehlo.convert %37 : (tensor<i32>) -> tensor<f32>
    %cst_10 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %39 = stablehlo.broadcast_in_dim %cst_10, dims = [] : (tensor<f32>) -> tensor<784x128xf32>
    %40 = stablehlo.multiply %39, %arg4 : tensor<784x128xf32>
    %cst_11 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %41 = stablehlo.broadcast_in_dim %cst_11, dims = [] : (tensor<f32>) -> tensor<784x128xf32>
    %42 = stablehlo.multiply %41, %36 : tensor<784x128xf32>
    %43 = stablehlo.add %40, %42 : tensor<784x128xf32>
    %cst_12 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %44 = stablehlo.broadcast_in_dim %cst_12, dims = [] : (tensor<f32>) -> tensor<128x10xf32>
    %45 = stablehlo.multiply %44, %arg5 : tensor<128x10xf32>
    %cst_13 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %46 = stablehlo.broadcast_in_dim %cst_13, dims = [] : (tensor<f32>) -> tensor<128x10xf32>
    %47 = stablehlo.multiply %46, %28 : tensor<128x10xf32>
    %48 = stablehlo.add %45, %47 : tensor<128x10xf32>
    %cst_14 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %49 = stablehlo.broadcast_in_dim %cst_14, dims = [] : (tensor<f32>) -> tensor<128xf32>
    %50 = stablehlo.multiply %49, %arg6 : tensor<128xf32>
    %cst_15 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %51 = stablehlo.broadcast_in_dim %cst_15, dims = [] : (tensor<f32>) -> tensor<128xf32>
    %52 = stablehlo.multiply %51, %34 : tensor<128xf32>
    %53 = stablehlo.add %50, %52 : tensor<128xf32>
    %cst_16 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %54 = stablehlo.broadcast_in_dim %cst_16, dims = [] : (tensor<f32>) -> tensor<10xf32>
    %55 = stablehlo.multiply %54, %arg7 : tensor<10xf32>
    %cst_17 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %56 = stablehlo.broadcast_in_dim %cst_17, dims = [] : (tensor<f32>) -> tensor<10xf32>
    %57 = stablehlo.multiply %56, %26 : tensor<10xf32>
    %58 = stablehlo.add %55, %57 : tensor<10xf32>
    %cst_18 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %59 = stablehlo.broadcast_in_dim %cst_18, dims = [] : (tensor<f32>) -> tensor<784x128xf32>
    %60 = stablehlo.multiply %59, %arg8 : tensor<784x128xf32>
    %cst_19 = stablehlo.constant dense<1.000000e-03> : tensor<f32>
    %61 = stablehlo.broadcast_in_dim %cst_19, dims = [] : (tensor<f32>) -> tensor<784x128xf32>
    %62 = stablehlo.multiply %61, %36 : tensor<784x128xf32>
    %63 = stablehlo.multiply %62, %36 : tensor<784x128xf32>
    %64 = stablehlo.add %60, %63 : tensor<784x128xf32>
    %cst_20 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %65 = stablehlo.broadcast_in_dim %cst_20, dims = [] : (tensor<f32>) -> tensor<128x10xf32>
    %66 = stablehlo.multiply %65, %arg9 : tensor<128x10xf32>
    %cst_21 = stablehlo.constant dense<1.000000e-03> : tensor<f32>
    %67 = stablehlo.broadcast_in_dim %cst_21, dims = [] : (tensor<f32>) -> tensor<128x10xf32>
    %68 = stablehlo.multiply %67, %28 : tensor<128x10xf32>
    %69 = stablehlo.multiply %68, %28 : tensor<128x10xf32>
    %70 = stablehlo.add %66, %69 : tensor<128x10xf32>
    %cst_22 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %71 = stablehlo.broadcast_in_dim %cst_22, dims = [] : (tensor<f32>) -> tensor<128xf32>
    %72 = stablehlo.multiply %71, %arg10 : tensor<128xf32>
    %cst_23 = stablehlo.constant dense<1.000000e-03> : tensor<f32>
    %73 = stablehlo.broadcast_in_dim %cst_23, dims = [] : (tensor<f32>) -> tensor<128xf32>
    %74 = stablehlo.multiply %73, %34 : tensor<128xf32>
    %75 = stablehlo.multiply %74, %34 : tensor<128xf32>
    %76 = stablehlo.add %72, %75 : tensor<128xf32>
    %cst_24 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %77 = stablehlo.broadcast_in_dim %cst_24, dims = [] : (tensor<f32>) -> tensor<10xf32>
    %78 = stablehlo.multiply %77, %arg11 : tensor<10xf32>
    %cst_25 = stablehlo.constant dense<1.000000e-03> : tensor<f32>
    %79 = stablehlo.broadcast_in_dim %cst_25, dims = [] : (tensor<f32>) -> tensor<10xf32>
    %80 = stablehlo.multiply %79, %26 : tensor<10xf32>
    %81 = stablehlo.multiply %80, %26 : tensor<10xf32>
    %82 = stablehlo.add %78, %81 : tensor<10xf32>
    %cst_26 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %83 = stablehlo.power %cst_26, %38 : tensor<f32>
    %cst_27 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %84 = stablehlo.subtract %cst_27, %83 : tensor<f32>
    %85 = stablehlo.broadcast_in_dim %84, dims = [] : (tensor<f32>) -> tensor<784x128xf32>
    %86 = stablehlo.divide %43, %85 : tensor<784x128xf32>
    %cst_28 = stablehlo.constant dense<1.000000e-03> : tensor<f32>
    %87 = stablehlo.broadcast_in_dim %cst_28, dims = [] : (tensor<f32>) -> tensor<784x128xf32>
    %88 = stablehlo.multiply %87, %86 : tensor<784x128xf32>
    %cst_29 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %89 = stablehlo.power %cst_29, %38 : tensor<f32>
    %cst_30 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %90 = stablehlo.subtract %cst_30, %89 : tensor<f32>
    %91 = stablehlo.broadcast_in_dim %90, dims = [] : (tensor<f32>) -> tensor<784x128xf32>
    %92 = stablehlo.divide %64, %91 : tensor<784x128xf32>
    %93 = stablehlo.sqrt %92 : tensor<784x128xf32>
    %cst_31 = stablehlo.constant dense<9.99999993E-9> : tensor<f32>
    %94 = stablehlo.broadcast_in_dim %cst_31, dims = [] : (tensor<f32>) -> tensor<784x128xf32>
    %95 = stablehlo.add %93, %94 : tensor<784x128xf32>
    %96 = stablehlo.divide %88, %95 : tensor<784x128xf32>
    %97 = stablehlo.subtract %arg0, %96 : tensor<784x128xf32>
    %cst_32 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %98 = stablehlo.power %cst_32, %38 : tensor<f32>
    %cst_33 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %99 = stablehlo.subtract %cst_33, %98 : tensor<f32>
    %100 = stablehlo.broadcast_in_dim %99, dims = [] : (tensor<f32>) -> tensor<128x10xf32>
    %101 = stablehlo.divide %48, %100 : tensor<128x10xf32>
    %cst_34 = stablehlo.constant dense<1.000000e-03> : tensor<f32>
    %102 = stablehlo.broadcast_in_dim %cst_34, dims = [] : (tensor<f32>) -> tensor<128x10xf32>
    %103 = stablehlo.multiply %102, %101 : tensor<128x10xf32>
    %cst_35 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %104 = stablehlo.power %cst_35, %38 : tensor<f32>
    %cst_36 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %105 = stablehlo.subtract %cst_36, %104 : tensor<f32>
    %106 = stablehlo.broadcast_in_dim %105, dims = [] : (tensor<f32>) -> tensor<128x10xf32>
    %107 = stablehlo.divide %70, %106 : tensor<128x10xf32>
    %108 = stablehlo.sqrt %107 : tensor<128x10xf32>
    %cst_37 = stablehlo.constant dense<9.99999993E-9> : tensor<f32>
    %109 = stablehlo.broadcast_in_dim %cst_37, dims = [] : (tensor<f32>) -> tensor<128x10xf32>
    %110 = stablehlo.add %108, %109 : tensor<128x10xf32>
    %111 = stablehlo.divide %103, %110 : tensor<128x10xf32>
    %112 = stablehlo.subtract %arg1, %111 : tensor<128x10xf32>
    %cst_38 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %113 = stablehlo.power %cst_38, %38 : tensor<f32>
    %cst_39 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %114 = stablehlo.subtract %cst_39, %113 : tensor<f32>
    %115 = stablehlo.broadcast_in_dim %114, dims = [] : (tensor<f32>) -> tensor<128xf32>
    %116 = stablehlo.divide %53, %115 : tensor<128xf32>
    %cst_40 = stablehlo.constant dense<1.000000e-03> : tensor<f32>
    %117 = stablehlo.broadcast_in_dim %cst_40, dims = [] : (tensor<f32>) -> tensor<128xf32>
    %118 = stablehlo.multiply %117, %116 : tensor<128xf32>
    %cst_41 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %119 = stablehlo.power %cst_41, %38 : tensor<f32>
    %cst_42 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %120 = stablehlo.subtract %cst_42, %119 : tensor<f32>
    %121 = stablehlo.broadcast_in_dim %120, dims = [] : (tensor<f32>) -> tensor<128xf32>
    %122 = stablehlo.divide %76, %121 : tensor<128xf32>
    %123 = stablehlo.sqrt %122 : tensor<128xf32>
    %cst_43 = stablehlo.constant dense<9.99999993E-9> : tensor<f32>
    %124 = stablehlo.broadcast_in_dim %cst_43, dims = [] : (tensor<f32>) -> tensor<128xf32>
    %125 = stablehlo.add %123, %124 : tensor<128xf32>
    %126 = stablehlo.divide %118, %125 : tensor<128xf32>
    %127 = stablehlo.subtract %arg2, %126 : tensor<128xf32>
    %cst_44 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %128 = stablehlo.power %cst_44, %38 : tensor<f32>
    %cst_45 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %129 = stablehlo.subtract %cst_45, %128 : tensor<f32>
    %130 = stablehlo.broadcast_in_dim %129, dims = [] : (tensor<f32>) -> tensor<10xf32>
    %131 = stablehlo.divide %58, %130 : tensor<10xf32>
    %cst_46 = stablehlo.constant dense<1.000000e-03> : tensor<f32>
    %132 = stablehlo.broadcast_in_dim %cst_46, dims = [] : (tensor<f32>) -> tensor<10xf32>
    %133 = stablehlo.multiply %132, %131 : tensor<10xf32>
    %cst_47 = stablehlo.constant dense<9.990000e-01> : tensor<f32>
    %134 = stablehlo.power %cst_47, %38 : tensor<f32>
    %cst_48 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %135 = stablehlo.subtract %cst_48, %134 : tensor<f32>
    %136 = stablehlo.broadcast_in_dim %135, dims = [] : (tensor<f32>) -> tensor<10xf32>
    %137 = stablehlo.divide %82, %136 : tensor<10xf32>
    %138 = stablehlo.sqrt %137 : tensor<10xf32>
    %cst_49 = stablehlo.constant dense<9.99999993E-9> : tensor<f32>
    %139 = stablehlo.broadcast_in_dim %cst_49, dims = [] : (tensor<f32>) -> tensor<10xf32>
    %140 = stablehlo.add %138, %139 : tensor<10xf32>
    %141 = stablehlo.divide %133, %140 : tensor<10xf32>
    %142 = stablehlo.subtract %arg3, %141 : tensor<10xf32>
    return %17, %97, %112, %127, %142, %43, %48, %53, %58, %64, %70, %76, %82, %37 : tensor<f32>, tensor<784x128xf32>, tensor<128x10xf32>, tensor<128xf32>, tensor<10xf32>, tensor<784x128xf32>, tensor<128x10xf32>, tensor<128xf32>, tensor<10xf32>, tensor<784x128xf32>, tensor<128x10xf32>, tensor<128xf32>, tensor<10xf32>, tensor<i32>
  }
  func.func private @relu(%arg0: tensor<8x128xf32>) -> tensor<8x128xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<8x128xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<8x128xf32>
    return %1 : tensor<8x128xf32>
  }
  func.func private @_one_hot(%arg0: tensor<8xi32>) -> tensor<8x10xf32> {
    %0 = stablehlo.broadcast_in_dim %arg0, dims = [0] : (tensor<8xi32>) -> tensor<8x1xi32>
    %1 = stablehlo.iota dim = 1 : tensor<1x10xi32>
    %2 = stablehlo.broadcast_in_dim %0, dims = [0, 1] : (tensor<8x1xi32>) -> tensor<8x10xi32>
    %3 = stablehlo.broadcast_in_dim %1, dims = [0, 1] : (tensor<1x10xi32>) -> tensor<8x10xi32>
    %4 = stablehlo.compare EQ, %2, %3, SIGNED : (tensor<8x10xi32>, tensor<8x10xi32>) -> tensor<8x10xi1>
    %5 = stablehlo.convert %4 : (tensor<8x10xi1>) -> tensor<8x10xf32>
    return %5 : tensor<8x10xf32>
  }
  func.func private @log_softmax(%arg0: tensor<8x10xf32>) -> (tensor<8x10xf32>, tensor<8x10xf32>, tensor<8x1xf32>) {
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.maximum across dimensions = [1] : (tensor<8x10xf32>, tensor<f32>) -> tensor<8xf32>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %2 = stablehlo.maximum %1, %0 : tensor<8xf32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [0] : (tensor<8xf32>) -> tensor<8x1xf32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [0, 1] : (tensor<8x1xf32>) -> tensor<8x10xf32>
    %5 = stablehlo.subtract %arg0, %4 : tensor<8x10xf32>
    %6 = stablehlo.exponential %5 : tensor<8x10xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %7 = stablehlo.reduce(%6 init: %cst_1) applies stablehlo.add across dimensions = [1] : (tensor<8x10xf32>, tensor<f32>) -> tensor<8xf32>
    %8 = stablehlo.broadcast_in_dim %7, dims = [0] : (tensor<8xf32>) -> tensor<8x1xf32>
    %9 = stablehlo.log %8 : tensor<8x1xf32>
    %10 = stablehlo.broadcast_in_dim %9, dims = [0, 1] : (tensor<8x1xf32>) -> tensor<8x10xf32>
    %11 = stablehlo.subtract %5, %10 : tensor<8x10xf32>
    return %11, %6, %8 : tensor<8x10xf32>, tensor<8x10xf32>, tensor<8x1xf32>
  }
  func.func private @log_softmax_0(%arg0: tensor<8x10xf32>, %arg1: tensor<8x1xf32>, %arg2: tensor<8x10xf32>) -> tensor<8x10xf32> {
    %0 = stablehlo.negate %arg2 : tensor<8x10xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.reduce(%0 init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<8x10xf32>, tensor<f32>) -> tensor<8xf32>
    %2 = stablehlo.reshape %1 : (tensor<8xf32>) -> tensor<8x1xf32>
    %3 = stablehlo.divide %2, %arg1 : tensor<8x1xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %4 = stablehlo.reduce(%3 init: %cst_0) applies stablehlo.add across dimensions = [1] : (tensor<8x1xf32>, tensor<f32>) -> tensor<8xf32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [0] : (tensor<8xf32>) -> tensor<8x10xf32>
    %6 = stablehlo.multiply %5, %arg0 : tensor<8x10xf32>
    %7 = stablehlo.add %arg2, %6 : tensor<8x10xf32>
    return %7 : tensor<8x10xf32>
  }
}
