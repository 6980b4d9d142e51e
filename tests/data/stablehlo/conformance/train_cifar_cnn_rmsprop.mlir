module @jit_train_cifar_cnn_rmsprop attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<32xf32>, %arg1: tensor<3x3x3x32xf32>, %arg2: tensor<32xf32>, %arg3: tensor<3x3x32x32xf32>, %arg4: tensor<64xf32>, %arg5: tensor<3x3x32x64xf32>, %arg6: tensor<64xf32>, %arg7: tensor<3x3x64x64xf32>, %arg8: tensor<512xf32>, %arg9: tensor<64x512xf32>, %arg10: tensor<10xf32>, %arg11: tensor<512x10xf32>, %arg12: tensor<32xf32>, %arg13: tensor<3x3x3x32xf32>, %arg14: tensor<32xf32>, %arg15: tensor<3x3x32x32xf32>, %arg16: tensor<64xf32>, %arg17: tensor<3x3x32x64xf32>, %arg18: tensor<64xf32>, %arg19: tensor<3x3x64x64xf32>, %arg20: tensor<512xf32>, %arg21: tensor<64x512xf32>, %arg22: tensor<10xf32>, %arg23: tensor<512x10xf32>, %arg24: tensor<2x12x12x3xf32>, %arg25: tensor<2xi32>) -> (tensor<f32> {jax.result_info = "result[0]"}, tensor<32xf32> {jax.result_info = "result[1]['c1b']"}, tensor<3x3x3x32xf32> {jax.result_info = "result[1]['c1w']"}, tensor<32xf32> {jax.result_info = "result[1]['c2b']"}, tensor<3x3x32x32xf32> {jax.result_info = "result[1]['c2w']"}, tensor<64xf32> {jax.result_info = "result[1]['c3b']"}, tensor<3x3x32x64xf32> {jax.result_info = "result[1]['c3w']"}, tensor<64xf32> {jax.result_info = "result[1]['c4b']"}, tensor<3x3x64x64xf32> {jax.result_info = "result[1]['c4w']"}, tensor<512xf32> {jax.result_info = "result[1]['d1b']"}, tensor<64x512xf32> {jax.result_info = "result[1]['d1w']"}, tensor<10xf32> {jax.result_info = "result[1]['d2b']"}, tensor<512x10xf32> {jax.result_info = "result[1]['d2w']"}, tensor<32xf32> {jax.result_info = "result[2]['c1b']"}, tensor<3x3x3x32xf32> {jax.result_info = "result[2]['c1w']"}, tensor<32xf32> {jax.result_info = "result[2]['c2b']"}, tensor<3x3x32x32xf32> {jax.result_info = "result[2]['c2w']"}, tensor<64xf32> {jax.result_info = "result[2]['c3b']"}, tensor<3x3x32x64xf32> {jax.result_info = "result[2]['c3w']"}, tensor<64xf32> {jax.result_info = "result[2]['c4b']"}, tensor<3x3x64x64xf32> {jax.result_info = "result[2]['c4w']"}, tensor<512xf32> {jax.result_info = "result[2]['d1b']"}, tensor<64x512xf32> {jax.result_info = "result[2]['d1w']"}, tensor<10xf32> {jax.result_info = "result[2]['d2b']"}, tensor<512x10xf32> {jax.result_info = "result[2]['d2w']"}) {
    %0 = stablehlo.convolution(%arg24, %arg1) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x12x12x3xf32>, tensor<3x3x3x32xf32>) -> tensor<2x12x12x32xf32>
    %1 = stablehlo.broadcast_in_dim %arg0, dims = [3] : (tensor<32xf32>) -> tensor<1x1x1x32xf32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [0, 1, 2, 3] : (tensor<1x1x1x32xf32>) -> tensor<2x12x12x32xf32>
    %3 = stablehlo.add %0, %2 : tensor<2x12x12x32xf32>
    %4 = call @relu(%3) : (tensor<2x12x12x32xf32>) -> tensor<2x12x12x32xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %5 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x12x12x32xf32>
    %6 = stablehlo.compare GT, %3, %5, FLOAT : (tensor<2x12x12x32xf32>, tensor<2x12x12x32xf32>) -> tensor<2x12x12x32xi1>
    %7 = stablehlo.convolution(%4, %arg3) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x12x12x32xf32>, tensor<3x3x32x32xf32>) -> tensor<2x10x10x32xf32>
    %8 = stablehlo.broadcast_in_dim %arg2, dims = [3] : (tensor<32xf32>) -> tensor<1x1x1x32xf32>
    %9 = stablehlo.broadcast_in_dim %8, dims = [0, 1, 2, 3] : (tensor<1x1x1x32xf32>) -> tensor<2x10x10x32xf32>
    %10 = stablehlo.add %7, %9 : tensor<2x10x10x32xf32>
    %11 = call @relu_0(%10) : (tensor<2x10x10x32xf32>) -> tensor<2x10x10x32xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %12 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<2x10x10x32xf32>
    %13 = stablehlo.compare GT, %10, %12, FLOAT : (tensor<2x10x10x32xf32>, tensor<2x10x10x32xf32>) -> tensor<2x10x10x32xi1>
    %cst_1 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %14 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<f32>
    %15 = "stablehlo.reduce_window"(%11, %14) <{base_dilations = array<i64: 1, 1, 1, 1>, padding = dense<0> : tensor<4x2xi64>, window_dilations = array<i64: 1, 1, 1, 1>, window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 2, 2, 1>}> ({
    ^bb0(%arg26: tensor<f32>, %arg27: tensor<f32>):
      %264 = stablehlo.maximum %arg26, %arg27 : tensor<f32>
      stablehlo.return %264 : tensor<f32>
    }) : (tensor<2x10x10x32xf32>, tensor<f32>) -> tensor<2x5x5x32xf32>
    %16 = stablehlo.convolution(%15, %arg5) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x5x5x32xf32>, tensor<3x3x32x64xf32>) -> tensor<2x5x5x64xf32>
    %17 = stablehlo.broadcast_in_dim %arg4, dims = [3] : (tensor<64xf32>) -> tensor<1x1x1x64xf32>
    %18 = stablehlo.broadcast_in_dim %17, dims = [0, 1, 2, 3] : (tensor<1x1x1x64xf32>) -> tensor<2x5x5x64xf32>
    %19 = stablehlo.add %16, %18 : tensor<2x5x5x64xf32>
    %20 = call @relu_1(%19) : (tensor<2x5x5x64xf32>) -> tensor<2x5x5x64xf32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %21 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<2x5x5x64xf32>
    %22 = stablehlo.compare GT, %19, %21, FLOAT : (tensor<2x5x5x64xf32>, tensor<2x5x5x64xf32>) -> tensor<2x5x5x64xi1>
    %23 = stablehlo.convolution(%20, %arg7) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x5x5x64xf32>, tensor<3x3x64x64xf32>) -> tensor<2x3x3x64xf32>
    %24 = stablehlo.broadcast_in_dim %arg6, dims = [3] : (tensor<64xf32>) -> tensor<1x1x1x64xf32>
    %25 = stablehlo.broadcast_in_dim %24, dims = [0, 1, 2, 3] : (tensor<1x1x1x64xf32>) -> tensor<2x3x3x64xf32>
    %26 = stablehlo.add %23, %25 : tensor<2x3x3x64xf32>
    %27 = call @relu_2(%26) : (tensor<2x3x3x64xf32>) -> tensor<2x3x3x64xf32>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %28 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<2x3x3x64xf32>
    %29 = stablehlo.compare GT, %26, %28, FLOAT : (tensor<2x3x3x64xf32>, tensor<2x3x3x64xf32>) -> tensor<2x3x3x64xi1>
    %cst_4 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %30 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<f32>
    %31 = "stablehlo.reduce_window"(%27, %30) <{base_dilations = array<i64: 1, 1, 1, 1>, padding = dense<0> : tensor<4x2xi64>, window_dilations = array<i64: 1, 1, 1, 1>, window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 2, 2, 1>}> ({
    ^bb0(%arg26: tensor<f32>, %arg27: tensor<f32>):
      %264 = stablehlo.maximum %arg26, %arg27 : tensor<f32>
      stablehlo.return %264 : tensor<f32>
    }) : (tensor<2x3x3x64xf32>, tensor<f32>) -> tensor<2x1x1x64xf32>
    %32 = stablehlo.reshape %31 : (tensor<2x1x1x64xf32>) -> tensor<2x64xf32>
    %33 = stablehlo.dot_general %32, %arg9, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x64xf32>, tensor<64x512xf32>) -> tensor<2x512xf32>
    %34 = stablehlo.broadcast_in_dim %arg8, dims = [1] : (tensor<512xf32>) -> tensor<1x512xf32>
    %35 = stablehlo.broadcast_in_dim %34, dims = [0, 1] : (tensor<1x512xf32>) -> tensor<2x512xf32>
    %36 = stablehlo.add %33, %35 : tensor<2x512xf32>
    %37 = call @relu_3(%36) : (tensor<2x512xf32>) -> tensor<2x512xf32>
    %cst_5 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %38 = stablehlo.broadcast_in_dim %cst_5, dims = [] : (tensor<f32>) -> tensor<2x512xf32>
    %39 = stablehlo.compare GT, %36, %38, FLOAT : (tensor<2x512xf32>, tensor<2x512xf32>) -> tensor<2x512xi1>
    %40 = stablehlo.dot_general %37, %arg11, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x512xf32>, tensor<512x10xf32>) -> tensor<2x10xf32>
    %41 = stablehlo.broadcast_in_dim %arg10, dims = [1] : (tensor<10xf32>) -> tensor<1x10xf32>
    %42 = stablehlo.broadcast_in_dim %41, dims = [0, 1] : (tensor<1x10xf32>) -> tensor<2x10xf32>
    %43 = stablehlo.add %40, %42 : tensor<2x10xf32>
    %44 = call @_one_hot(%arg25) : (tensor<2xi32>) -> tensor<2x10xf32>
    %45:3 = call @log_softmax(%43) : (tensor<2x10xf32>) -> (tensor<2x10xf32>, tensor<2x10xf32>, tensor<2x1xf32>)
    %46 = stablehlo.multiply %44, %45#0 : tensor<2x10xf32>
    %cst_6 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %47 = stablehlo.reduce(%46 init: %cst_6) applies stablehlo.add across dimensions = [1] : (tensor<2x10xf32>, tensor<f32>) -> tensor<2xf32>
    %48 = stablehlo.negate %47 : tensor<2xf32>
    %cst_7 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %49 = stablehlo.reduce(%48 init: %cst_7) applies stablehlo.add across dimensions = [0] : (tensor<2xf32>, tensor<f32>) -> tensor<f32>
    %cst_8 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %50 = stablehlo.divide %49, %cst_8 : tensor<f32>
    %cst_9 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %cst_10 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %51 = stablehlo.divide %cst_9, %cst_10 : tensor<f32>
    %52 = stablehlo.broadcast_in_dim %51, dims = [] : (tensor<f32>) -> tensor<2xf32>
    %53 = stablehlo.negate %52 : tensor<2xf32>
    %54 = stablehlo.broadcast_in_dim %53, dims = [0] : (tensor<2xf32>) -> tensor<2x10xf32>
    %55 = stablehlo.multiply %44, %54 : tensor<2x10xf32>
    %56 = call @log_softmax_4(%45#1, %45#2, %55) : (tensor<2x10xf32>, tensor<2x1xf32>, tensor<2x10xf32>) -> tensor<2x10xf32>
    %cst_11 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %57 = stablehlo.reduce(%56 init: %cst_11) applies stablehlo.add across dimensions = [0] : (tensor<2x10xf32>, tensor<f32>) -> tensor<10xf32>
    %58 = stablehlo.reshape %57 : (tensor<10xf32>) -> tensor<1x10xf32>
    %cst_12 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %59 = stablehlo.reduce(%58 init: %cst_12) applies stablehlo.add across dimensions = [0] : (tensor<1x10xf32>, tensor<f32>) -> tensor<10xf32>
    %60 = stablehlo.dot_general %56, %37, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x10xf32>, tensor<2x512xf32>) -> tensor<10x512xf32>
    %61 = stablehlo.transpose %60, dims = [1, 0] : (tensor<10x512xf32>) -> tensor<512x10xf32>
    %62 = stablehlo.dot_general %56, %arg11, contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x10xf32>, tensor<512x10xf32>) -> tensor<2x512xf32>
    %cst_13 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %63 = stablehlo.broadcast_in_dim %cst_13, dims = [] : (tensor<f32>) -> tensor<2x512xf32>
    %64 = stablehlo.select %39, %62, %63 : tensor<2x512xi1>, tensor<2x512xf32>
    %cst_14 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %65 = stablehlo.reduce(%64 init: %cst_14) applies stablehlo.add across dimensions = [0] : (tensor<2x512xf32>, tensor<f32>) -> tensor<512xf32>
    %66 = stablehlo.reshape %65 : (tensor<512xf32>) -> tensor<1x512xf32>
    %cst_15 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %67 = stablehlo.reduce(%66 init: %cst_15) applies stablehlo.add across dimensions = [0] : (tensor<1x512xf32>, tensor<f32>) -> tensor<512xf32>
    %68 = stablehlo.dot_general %64, %32, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x512xf32>, tensor<2x64xf32>) -> tensor<512x64xf32>
    %69 = stablehlo.transpose %68, dims = [1, 0] : (tensor<512x64xf32>) -> tensor<64x512xf32>
    %70 = stablehlo.dot_general %64, %arg9, contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<2x512xf32>, tensor<64x512xf32>) -> tensor<2x64xf32>
    %71 = stablehlo.reshape %70 : (tensor<2x64xf32>) -> tensor<2x1x1x64xf32>
    %cst_16 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %72 = stablehlo.pad %27, %cst_16, low = [0, 0, 0, 0], high = [0, 0, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x3x3x64xf32>, tensor<f32>) -> tensor<2x3x3x64xf32>
    %cst_17 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %73 = "stablehlo.select_and_scatter"(%72, %71, %cst_17) <{padding = dense<0> : tensor<4x2xi64>, window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 2, 2, 1>}> ({
    ^bb0(%arg26: tensor<f32>, %arg27: tensor<f32>):
      %264 = stablehlo.compare GE, %arg26, %arg27, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %264 : tensor<i1>
    }, {
    ^bb0(%arg26: tensor<f32>, %arg27: tensor<f32>):
      %264 = stablehlo.add %arg26, %arg27 : tensor<f32>
      stablehlo.return %264 : tensor<f32>
    }) : (tensor<2x3x3x64xf32>, tensor<2x1x1x64xf32>, tensor<f32>) -> tensor<2x3x3x64xf32>
    %74 = stablehlo.slice %73 [0:2, 0:3, 0:3, 0:64] : (tensor<2x3x3x64xf32>) -> tensor<2x3x3x64xf32>
    %cst_18 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %75 = stablehlo.broadcast_in_dim %cst_18, dims = [] : (tensor<f32>) -> tensor<2x3x3x64xf32>
    %76 = stablehlo.select %29, %74, %75 : tensor<2x3x3x64xi1>, tensor<2x3x3x64xf32>
    %cst_19 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %77 = stablehlo.reduce(%76 init: %cst_19) applies stablehlo.add across dimensions = [0, 1, 2] : (tensor<2x3x3x64xf32>, tensor<f32>) -> tensor<64xf32>
    %78 = stablehlo.reshape %77 : (tensor<64xf32>) -> tensor<1x1x1x64xf32>
    %cst_20 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %79 = stablehlo.reduce(%78 init: %cst_20) applies stablehlo.add across dimensions = [0, 1, 2] : (tensor<1x1x1x64xf32>, tensor<f32>) -> tensor<64xf32>
    %80 = stablehlo.convolution(%20, %76) dim_numbers = [f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x5x5x64xf32>, tensor<2x3x3x64xf32>) -> tensor<3x3x64x64xf32>
    %81 = stablehlo.reverse %arg7, dims = [0, 1] : tensor<3x3x64x64xf32>
    %82 = stablehlo.convolution(%76, %81) dim_numbers = [b, 0, 1, f]x[0, 1, o, i]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[2, 2], [2, 2]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x3x3x64xf32>, tensor<3x3x64x64xf32>) -> tensor<2x5x5x64xf32>
    %cst_21 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %83 = stablehlo.broadcast_in_dim %cst_21, dims = [] : (tensor<f32>) -> tensor<2x5x5x64xf32>
    %84 = stablehlo.select %22, %82, %83 : tensor<2x5x5x64xi1>, tensor<2x5x5x64xf32>
    %cst_22 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %85 = stablehlo.reduce(%84 init: %cst_22) applies stablehlo.add across dimensions = [0, 1, 2] : (tensor<2x5x5x64xf32>, tensor<f32>) -> tensor<64xf32>
    %86 = stablehlo.reshape %85 : (tensor<64xf32>) -> tensor<1x1x1x64xf32>
    %cst_23 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %87 = stablehlo.reduce(%86 init: %cst_23) applies stablehlo.add across dimensions = [0, 1, 2] : (tensor<1x1x1x64xf32>, tensor<f32>) -> tensor<64xf32>
    %88 = stablehlo.convolution(%15, %84) dim_numbers = [f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x5x5x32xf32>, tensor<2x5x5x64xf32>) -> tensor<3x3x32x64xf32>
    %89 = stablehlo.reverse %arg5, dims = [0, 1] : tensor<3x3x32x64xf32>
    %90 = stablehlo.convolution(%84, %89) dim_numbers = [b, 0, 1, f]x[0, 1, o, i]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x5x5x64xf32>, tensor<3x3x32x64xf32>) -> tensor<2x5x5x32xf32>
    %cst_24 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %91 = stablehlo.pad %11, %cst_24, low = [0, 0, 0, 0], high = [0, 0, 0, 0], interior = [0, 0, 0, 0] : (tensor<2x10x10x32xf32>, tensor<f32>) -> tensor<2x10x10x32xf32>
    %cst_25 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %92 = "stablehlo.select_and_scatter"(%91, %90, %cst_25) <{padding = dense<0> : tensor<4x2xi64>, window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 2, 2, 1>}> ({
    ^bb0(%arg26: tensor<f32>, %arg27: tensor<f32>):
      %264 = stablehlo.compare GE, %arg26, %arg27, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %264 : tensor<i1>
    }, {
    ^bb0(%arg26: tensor<f32>, %arg27: tensor<f32>):
      %264 = stablehlo.add %arg26, %arg27 : tensor<f32>
      stablehlo.return %264 : tensor<f32>
    }) : (tensor<2x10x10x32xf32>, tensor<2x5x5x32xf32>, tensor<f32>) -> tensor<2x10x10x32xf32>
    %93 = stablehlo.slice %92 [0:2, 0:10, 0:10, 0:32] : (tensor<2x10x10x32xf32>) -> tensor<2x10x10x32xf32>
    %cst_26 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %94 = stablehlo.broadcast_in_dim %cst_26, dims = [] : (tensor<f32>) -> tensor<2x10x10x32xf32>
    %95 = stablehlo.select %13, %93, %94 : tensor<2x10x10x32xi1>, tensor<2x10x10x32xf32>
    %cst_27 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %96 = stablehlo.reduce(%95 init: %cst_27) applies stablehlo.add across dimensions = [0, 1, 2] : (tensor<2x10x10x32xf32>, tensor<f32>) -> tensor<32xf32>
    %97 = stablehlo.reshape %96 : (tensor<32xf32>) -> tensor<1x1x1x32xf32>
    %cst_28 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %98 = stablehlo.reduce(%97 init: %cst_28) applies stablehlo.add across dimensions = [0, 1, 2] : (tensor<1x1x1x32xf32>, tensor<f32>) -> tensor<32xf32>
    %99 = stablehlo.convolution(%4, %95) dim_numbers = [f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x12x12x32xf32>, tensor<2x10x10x32xf32>) -> tensor<3x3x32x32xf32>
    %100 = stablehlo.reverse %arg3, dims = [0, 1] : tensor<3x3x32x32xf32>
    %101 = stablehlo.convolution(%95, %100) dim_numbers = [b, 0, 1, f]x[0, 1, o, i]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[2, 2], [2, 2]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x10x10x32xf32>, tensor<3x3x32x32xf32>) -> tensor<2x12x12x32xf32>
    %cst_29 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %102 = stablehlo.broadcast_in_dim %cst_29, dims = [] : (tensor<f32>) -> tensor<2x12x12x32xf32>
    %103 = stablehlo.select %6, %101, %102 : tensor<2x12x12x32xi1>, tensor<2x12x12x32xf32>
    %cst_30 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %104 = stablehlo.reduce(%103 init: %cst_30) applies stablehlo.add across dimensions = [0, 1, 2] : (tensor<2x12x12x32xf32>, tensor<f32>) -> tensor<32xf32>
    %105 = stablehlo.reshape %104 : (tensor<32xf32>) -> tensor<1x1x1x32xf32>
    %cst_31 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %106 = stablehlo.reduce(%105 init: %cst_31) applies stablehlo.add across dimensions = [0, 1, 2] : (tensor<1x1x1x32xf32>, tensor<f32>) -> tensor<32xf32>
    %107 = stablehlo.convolution(%arg24, %103) dim_numbers = [f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<2x12x12x3xf32>, tensor<2x12x12x32xf32>) -> tensor<3x3x3x32xf32>
    %cst_32 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %108 = stablehlo.broadcast_in_dim %cst_32, dims = [] : (tensor<f32>) -> tensor<32xf32>
    %109 = stablehlo.multiply %108, %arg12 : tensor<32xf32>
    %cst_33 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %110 = stablehlo.broadcast_in_dim %cst_33, dims = [] : (tensor<f32>) -> tensor<32xf32>
    %111 = stablehlo.multiply %110, %106 : tensor<32xf32>
    %112 = stablehlo.multiply %111, %106 : tensor<32xf32>
    %113 = stablehlo.add %109, %112 : tensor<32xf32>
    %cst_34 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %114 = stablehlo.broadcast_in_dim %cst_34, dims = [] : (tensor<f32>) -> tensor<3x3x3x32xf32>
    %115 = stablehlo.multiply %114, %arg13 : tensor<3x3x3x32xf32>
    %cst_35 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %116 = stablehlo.broadcast_in_dim %cst_35, dims = [] : (tensor<f32>) -> tensor<3x3x3x32xf32>
    %117 = stablehlo.multiply %116, %107 : tensor<3x3x3x32xf32>
    %118 = stablehlo.multiply %117, %107 : tensor<3x3x3x32xf32>
    %119 = stablehlo.add %115, %118 : tensor<3x3x3x32xf32>
    %cst_36 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %120 = stablehlo.broadcast_in_dim %cst_36, dims = [] : (tensor<f32>) -> tensor<32xf32>
    %121 = stablehlo.multiply %120, %arg14 : tensor<32xf32>
    %cst_37 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %122 = stablehlo.broadcast_in_dim %cst_37, dims = [] : (tensor<f32>) -> tensor<32xf32>
    %123 = stablehlo.multiply %122, %98 : tensor<32xf32>
    %124 = stablehlo.multiply %123, %98 : tensor<32xf32>
    %125 = stablehlo.add %121, %124 : tensor<32xf32>
    %cst_38 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %126 = stablehlo.broadcast_in_dim %cst_38, dims = [] : (tensor<f32>) -> tensor<3x3x32x32xf32>
    %127 = stablehlo.multiply %126, %arg15 : tensor<3x3x32x32xf32>
    %cst_39 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %128 = stablehlo.broadcast_in_dim %cst_39, dims = [] : (tensor<f32>) -> tensor<3x3x32x32xf32>
    %129 = stablehlo.multiply %128, %99 : tensor<3x3x32x32xf32>
    %130 = stablehlo.multiply %129, %99 : tensor<3x3x32x32xf32>
    %131 = stablehlo.add %127, %130 : tensor<3x3x32x32xf32>
    %cst_40 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %132 = stablehlo.broadcast_in_dim %cst_40, dims = [] : (tensor<f32>) -> tensor<64xf32>
    %133 = stablehlo.multiply %132, %arg16 : tensor<64xf32>
    %cst_41 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %134 = stablehlo.broadcast_in_dim %cst_41, dims = [] : (tensor<f32>) -> tensor<64xf32>
    %135 = stablehlo.multiply %134, %87 : tensor<64xf32>
    %136 = stablehlo.multiply %135, %87 : tensor<64xf32>
    %137 = stablehlo.add %133, %136 : tensor<64xf32>
    %cst_42 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %138 = stablehlo.broadcast_in_dim %cst_42, dims = [] : (tensor<f32>) -> tensor<3x3x32x64xf32>
    %139 = stablehlo.multiply %138, %arg17 : tensor<3x3x32x64xf32>
    %cst_43 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %140 = stablehlo.broadcast_in_dim %cst_43, dims = [] : (tensor<f32>) -> tensor<3x3x32x64xf32>
    %141 = stablehlo.multiply %140, %88 : tensor<3x3x32x64xf32>
    %142 = stablehlo.multiply %141, %88 : tensor<3x3x32x64xf32>
    %143 = stablehlo.add %139, %142 : tensor<3x3x32x64xf32>
    %cst_44 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %144 = stablehlo.broadcast_in_dim %cst_44, dims = [] : (tensor<f32>) -> tensor<64xf32>
    %145 = stablehlo.multiply %144, %arg18 : tensor<64xf32>
    %cst_45 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %146 = stablehlo.broadcast_in_dim %cst_45, dims = [] : (tensor<f32>) -> tensor<64xf32>
    %147 = stablehlo.multiply %146, %79 : tensor<64xf32>
    %148 = stablehlo.multiply %147, %79 : tensor<64xf32>
    %149 = stablehlo.add %145, %148 : tensor<64xf32>
    %cst_46 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %150 = stablehlo.broadcast_in_dim %cst_46, dims = [] : (tensor<f32>) -> tensor<3x3x64x64xf32>
    %151 = stablehlo.multiply %150, %arg19 : tensor<3x3x64x64xf32>
    %cst_47 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %152 = stablehlo.broadcast_in_dim %cst_47, dims = [] : (tensor<f32>) -> tensor<3x3x64x64xf32>
    %153 = stablehlo.multiply %152, %80 : tensor<3x3x64x64xf32>
    %154 = stablehlo.multiply %153, %80 : tensor<3x3x64x64xf32>
    %155 = stablehlo.add %151, %154 : tensor<3x3x64x64xf32>
    %cst_48 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %156 = stablehlo.broadcast_in_dim %cst_48, dims = [] : (tensor<f32>) -> tensor<512xf32>
    %157 = stablehlo.multiply %156, %arg20 : tensor<512xf32>
    %cst_49 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %158 = stablehlo.broadcast_in_dim %cst_49, dims = [] : (tensor<f32>) -> tensor<512xf32>
    %159 = stablehlo.multiply %158, %67 : tensor<512xf32>
    %160 = stablehlo.multiply %159, %67 : tensor<512xf32>
    %161 = stablehlo.add %157, %160 : tensor<512xf32>
    %cst_50 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %162 = stablehlo.broadcast_in_dim %cst_50, dims = [] : (tensor<f32>) -> tensor<64x512xf32>
    %163 = stablehlo.multiply %162, %arg21 : tensor<64x512xf32>
    %cst_51 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %164 = stablehlo.broadcast_in_dim %cst_51, dims = [] : (tensor<f32>) -> tensor<64x512xf32>
    %165 = stablehlo.multiply %164, %69 : tensor<64x512xf32>
    %166 = stablehlo.multiply %165, %69 : tensor<64x512xf32>
    %167 = stablehlo.add %163, %166 : tensor<64x512xf32>
    %cst_52 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %168 = stablehlo.broadcast_in_dim %cst_52, dims = [] : (tensor<f32>) -> tensor<10xf32>
    %169 = stablehlo.multiply %168, %arg22 : tensor<10xf32>
    %cst_53 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %170 = stablehlo.broadcast_in_dim %cst_53, dims = [] : (tensor<f32>) -> tensor<10xf32>
    %171 = stablehlo.multiply %170, %59 : tensor<10xf32>
    %172 = stablehlo.multiply %171, %59 : tensor<10xf32>
    %173 = stablehlo.add %169, %172 : tensor<10xf32>
    %cst_54 = stablehlo.constant dense<0.899999976> : tensor<f32>
    %174 = stablehlo.broadcast_in_dim %cst_54, dims = [] : (tensor<f32>) -> tensor<512x10xf32>
    %175 = stablehlo.multiply %174, %arg23 : tensor<512x10xf32>
    %cst_55 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %176 = stablehlo.broadcast_in_dim %cst_55, dims = [] : (tensor<f32>) -> tensor<512x10xf32>
    %177 = stablehlo.multiply %176, %61 : tensor<512x10xf32>
    %178 = stablehlo.multiply %177, %61 : tensor<512x10xf32>
    %179 = stablehlo.add %175, %178 : tensor<512x10xf32>
    %cst_56 = stablehlo.constant dense<9.99999974E-5> : tensor<f32>
    %180 = stablehlo.broadcast_in_dim %cst_56, dims = [] : (tensor<f32>) -> tensor<32xf32>
    %181 = stablehlo.multiply %180, %106 : tensor<32xf32>
    %182 = stablehlo.sqrt %113 : tensor<32xf32>
    %cst_57 = stablehlo.constant dense<1.000000e-07> : tensor<f32>
    %183 = stablehlo.broadcast_in_dim %cst_57, dims = [] : (tensor<f32>) -> tensor<32xf32>
    %184 = stablehlo.add %182, %183 : tensor<32xf32>
    %185 = stablehlo.divide %181, %184 : tensor<32xf32>
    %186 = stablehlo.subtract %arg0, %185 : tensor<32xf32>
    %cst_58 = stablehlo.constant dense<9.99999974E-5> : tensor<f32>
    %187 = stablehlo.broadcast_in_dim %cst_58, dims = [] : (tensor<f32>) -> tensor<3x3x3x32xf32>
    %188 = stablehlo.multiply %187, %107 : tensor<3x3x3x32xf32>
    %189 = stablehlo.sqrt %119 : tensor<3x3x3x32xf32>
    %cst_59 = stablehlo.constant dense<1.000000e-07> : tensor<f32>
    %190 = stablehlo.broadcast_in_dim %cst_59, dims = [] : (tensor<f32>) -> tensor<3x3x3x32xf32>
    %191 = stablehlo.add %189, %190 : tensor<3x3x3x32xf32>
    %192 = stablehlo.divide %188, %191 : tensor<3x3x3x32xf32>
    %193 = stablehlo.subtract %arg1, %192 : tensor<3x3x3x32xf32>
    %cst_60 = stablehlo.constant dense<9.99999974E-5> : tensor<f32>
    %194 = stablehlo.broadcast_in_dim %cst_60, dims = [] : (tensor<f32>) -> tensor<32xf32>
    %195 = stablehlo.multiply %194, %98 : tensor<32xf32>
    %196 = stablehlo.sqrt %125 : tensor<32xf32>
    %cst_61 = stablehlo.constant dense<1.000000e-07> : tensor<f32>
    %197 = stablehlo.broadcast_in_dim %cst_61, dims = [] : (tensor<f32>) -> tensor<32xf32>
    %198 = stablehlo.add %196, %197 : tensor<32xf32>
    %199 = stablehlo.divide %195, %198 : tensor<32xf32>
    %200 = stablehlo.subtract %arg2, %199 : tensor<32xf32>
    %cst_62 = stablehlo.constant dense<9.99999974E-5> : tensor<f32>
    %201 = stablehlo.broadcast_in_dim %cst_62, dims = [] : (tensor<f32>) -> tensor<3x3x32x32xf32>
    %202 = stablehlo.multiply %201, %99 : tensor<3x3x32x32xf32>
    %203 = stablehlo.sqrt %131 : tensor<3x3x32x32xf32>
    %cst_63 = stablehlo.constant dense<1.000000e-07> : tensor<f32>
    %204 = stablehlo.broadcast_in_dim %cst_63, dims = [] : (tensor<f32>) -> tensor<3x3x32x32xf32>
    %205 = stablehlo.add %203, %204 : tensor<3x3x32x32xf32>
    %206 = stablehlo.divide %202, %205 : tensor<3x3x32x32xf32>
    %207 = stablehlo.subtract %arg3, %206 : tensor<3x3x32x32xf32>
    %cst_64 = stablehlo.constant dense<9.99999974E-5> : tensor<f32>
    %208 = stablehlo.broadcast_in_dim %cst_64, dims = [] : (tensor<f32>) -> tensor<64xf32>
    %209 = stablehlo.multiply %208, %87 : tensor<64xf32>
    %210 = stablehlo.sqrt %137 : tensor<64xf32>
    %cst_65 = stablehlo.constant dense<1.000000e-07> : tensor<f32>
    %211 = stablehlo.broadcast_in_dim %cst_65, dims = [] : (tensor<f32>) -> tensor<64xf32>
    %212 = stablehlo.add %210, %211 : tensor<64xf32>
    %213 = stablehlo.divide %209, %212 : tensor<64xf32>
    %214 = stablehlo.subtract %arg4, %213 : tensor<64xf32>
    %cst_66 = stablehlo.constant dense<9.99999974E-5> : tensor<f32>
    %215 = stablehlo.broadcast_in_dim %cst_66, dims = [] : (tensor<f32>) -> tensor<3x3x32x64xf32>
    %216 = stablehlo.multiply %215, %88 : tensor<3x3x32x64xf32>
    %217 = stablehlo.sqrt %143 : tensor<3x3x32x64xf32>
    %cst_67 = stablehlo.constant dense<1.000000e-07> : tensor<f32>
    %218 = stablehlo.broadcast_in_dim %cst_67, dims = [] : (tensor<f32>) -> tensor<3x3x32x64xf32>
    %219 = stablehlo.add %217, %218 : tensor<3x3x32x64xf32>
    %220 = stablehlo.divide %216, %219 : tensor<3x3x32x64xf32>
    %221 = stablehlo.subtract %arg5, %220 : tensor<3x3x32x64xf32>
    %cst_68 = stablehlo.constant dense<9.99999974E-5> : tensor<f32>
    %222 = stablehlo.broadcast_in_dim %cst_68, dims = [] : (tensor<f32>) -> tensor<64xf32>
    %223 = stablehlo.multiply %222, %79 : tensor<64xf32>
    %224 = stablehlo.sqrt %149 : tensor<64xf32>
    %cst_69 = stablehlo.constant dense<1.000000e-07> : tensor<f32>
    %225 = stablehlo.broadcast_in_dim %cst_69, dims = [] : (tensor<f32>) -> tensor<64xf32>
    %226 = stablehlo.add %224, %225 : tensor<64xf32>
    %227 = stablehlo.divide %223, %226 : tensor<64xf32>
    %228 = stablehlo.subtract %arg6, %227 : tensor<64xf32>
    %cst_70 = stablehlo.constant dense<9.99999974E-5> : tensor<f32>
    %229 = stablehlo.broadcast_in_dim %cst_70, dims = [] : (tensor<f32>) -> tensor<3x3x64x64xf32>
    %230 = stablehlo.multiply %229, %80 : tensor<3x3x64x64xf32>
    %231 = stablehlo.sqrt %155 : tensor<3x3x64x64xf32>
    %cst_71 = stablehlo.constant dense<1.000000e-07> : tensor<f32>
    %232 = stablehlo.broadcast_in_dim %cst_71, dims = [] : (tensor<f32>) -> tensor<3x3x64x64xf32>
    %233 = stablehlo.add %231, %232 : tensor<3x3x64x64xf32>
    %234 = stablehlo.divide %230, %233 : tensor<3x3x64x64xf32>
    %235 = stablehlo.subtract %arg7, %234 : tensor<3x3x64x64xf32>
    %cst_72 = stablehlo.constant dense<9.99999974E-5> : tensor<f32>
    %236 = stablehlo.broadcast_in_dim %cst_72, dims = [] : (tensor<f32>) -> tensor<512xf32>
    %237 = stablehlo.multiply %236, %67 : tensor<512xf32>
    %238 = stablehlo.sqrt %161 : tensor<512xf32>
    %cst_73 = stablehlo.constant dense<1.000000e-07> : tensor<f32>
    %239 = stablehlo.broadcast_in_dim %cst_73, dims = [] : (tensor<f32>) -> tensor<512xf32>
    %240 = stablehlo.add %238, %239 : tensor<512xf32>
    %241 = stablehlo.divide %237, %240 : tensor<512xf32>
    %242 = stablehlo.subtract %arg8, %241 : tensor<512xf32>
    %cst_74 = stablehlo.constant dense<9.99999974E-5> : tensor<f32>
    %243 = stablehlo.broadcast_in_dim %cst_74, dims = [] : (tensor<f32>) -> tensor<64x512xf32>
    %244 = stablehlo.multiply %243, %69 : tensor<64x512xf32>
    %245 = stablehlo.sqrt %167 : tensor<64x512xf32>
    %cst_75 = stablehlo.constant dense<1.000000e-07> : tensor<f32>
    %246 = stablehlo.broadcast_in_dim %cst_75, dims = [] : (tensor<f32>) -> tensor<64x512xf32>
    %247 = stablehlo.add %245, %246 : tensor<64x512xf32>
    %248 = stablehlo.divide %244, %247 : tensor<64x512xf32>
    %249 = stablehlo.subtract %arg9, %248 : tensor<64x512xf32>
    %cst_76 = stablehlo.constant dense<9.99999974E-5> : tensor<f32>
    %250 = stablehlo.broadcast_in_dim %cst_76, dims = [] : (tensor<f32>) -> tensor<10xf32>
    %251 = stablehlo.multiply %250, %59 : tensor<10xf32>
    %252 = stablehlo.sqrt %173 : tensor<10xf32>
    %cst_77 = stablehlo.constant dense<1.000000e-07> : tensor<f32>
    %253 = stablehlo.broadcast_in_dim %cst_77, dims = [] : (tensor<f32>) -> tensor<10xf32>
    %254 = stablehlo.add %252, %253 : tensor<10xf32>
    %255 = stablehlo.divide %251, %254 : tensor<10xf32>
    %256 = stablehlo.subtract %arg10, %255 : tensor<10xf32>
    %cst_78 = stablehlo.constant dense<9.99999974E-5> : tensor<f32>
    %257 = stablehlo.broadcast_in_dim %cst_78, dims = [] : (tensor<f32>) -> tensor<512x10xf32>
    %258 = stablehlo.multiply %257, %61 : tensor<512x10xf32>
    %259 = stablehlo.sqrt %179 : tensor<512x10xf32>
    %cst_79 = stablehlo.constant dense<1.000000e-07> : tensor<f32>
    %260 = stablehlo.broadcast_in_dim %cst_79, dims = [] : (tensor<f32>) -> tensor<512x10xf32>
    %261 = stablehlo.add %259, %260 : tensor<512x10xf32>
    %262 = stablehlo.divide %258, %261 : tensor<512x10xf32>
    %263 = stablehlo.subtract %arg11, %262 : tensor<512x10xf32>
    return %50, %186, %193, %200, %207, %214, %221, %228, %235, %242, %249, %256, %263, %113, %119, %125, %131, %137, %143, %149, %155, %161, %167, %173, %179 : tensor<f32>, tensor<32xf32>, tensor<3x3x3x32xf32>, tensor<32xf32>, tensor<3x3x32x32xf32>, tensor<64xf32>, tensor<3x3x32x64xf32>, tensor<64xf32>, tensor<3x3x64x64xf32>, tensor<512xf32>, tensor<64x512xf32>, tensor<10xf32>, tensor<512x10xf32>, tensor<32xf32>, tensor<3x3x3x32xf32>, tensor<32xf32>, tensor<3x3x32x32xf32>, tensor<64xf32>, tensor<3x3x32x64xf32>, tensor<64xf32>, tensor<3x3x64x64xf32>, tensor<512xf32>, tensor<64x512xf32>, tensor<10xf32>, tensor<512x10xf32>
  }
  func.func private @relu(%arg0: tensor<2x12x12x32xf32>) -> tensor<2x12x12x32xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x12x12x32xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<2x12x12x32xf32>
    return %1 : tensor<2x12x12x32xf32>
  }
  func.func private @relu_0(%arg0: tensor<2x10x10x32xf32>) -> tensor<2x10x10x32xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x10x10x32xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<2x10x10x32xf32>
    return %1 : tensor<2x10x10x32xf32>
  }
  func.func private @relu_1(%arg0: tensor<2x5x5x64xf32>) -> tensor<2x5x5x64xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x5x5x64xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<2x5x5x64xf32>
    return %1 : tensor<2x5x5x64xf32>
  }
  func.func private @relu_2(%arg0: tensor<2x3x3x64xf32>) -> tensor<2x3x3x64xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x3x3x64xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<2x3x3x64xf32>
    return %1 : tensor<2x3x3x64xf32>
  }
  func.func private @relu_3(%arg0: tensor<2x512xf32>) -> tensor<2x512xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x512xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<2x512xf32>
    return %1 : tensor<2x512xf32>
  }
  func.func private @_one_hot(%arg0: tensor<2xi32>) -> tensor<2x10xf32> {
    %0 = stablehlo.broadcast_in_dim %arg0, dims = [0] : (tensor<2xi32>) -> tensor<2x1xi32>
    %1 = stablehlo.iota dim = 1 : tensor<1x10xi32>
    %2 = stablehlo.broadcast_in_dim %0, dims = [0, 1] : (tensor<2x1xi32>) -> tensor<2x10xi32>
    %3 = stablehlo.broadcast_in_dim %1, dims = [0, 1] : (tensor<1x10xi32>) -> tensor<2x10xi32>
    %4 = stablehlo.compare EQ, %2, %3, SIGNED : (tensor<2x10xi32>, tensor<2x10xi32>) -> tensor<2x10xi1>
    %5 = stablehlo.convert %4 : (tensor<2x10xi1>) -> tensor<2x10xf32>
    return %5 : tensor<2x10xf32>
  }
  func.func private @log_softmax(%arg0: tensor<2x10xf32>) -> (tensor<2x10xf32>, tensor<2x10xf32>, tensor<2x1xf32>) {
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.maximum across dimensions = [1] : (tensor<2x10xf32>, tensor<f32>) -> tensor<2xf32>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<2xf32>
    %2 = stablehlo.maximum %1, %0 : tensor<2xf32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [0] : (tensor<2xf32>) -> tensor<2x1xf32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [0, 1] : (tensor<2x1xf32>) -> tensor<2x10xf32>
    %5 = stablehlo.subtract %arg0, %4 : tensor<2x10xf32>
    %6 = stablehlo.exponential %5 : tensor<2x10xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %7 = stablehlo.reduce(%6 init: %cst_1) applies stablehlo.add across dimensions = [1] : (tensor<2x10xf32>, tensor<f32>) -> tensor<2xf32>
    %8 = stablehlo.broadcast_in_dim %7, dims = [0] : (tensor<2xf32>) -> tensor<2x1xf32>
    %9 = stablehlo.log %8 : tensor<2x1xf32>
    %10 = stablehlo.broadcast_in_dim %9, dims = [0, 1] : (tensor<2x1xf32>) -> tensor<2x10xf32>
    %11 = stablehlo.subtract %5, %10 : tensor<2x10xf32>
    return %11, %6, %8 : tensor<2x10xf32>, tensor<2x10xf32>, tensor<2x1xf32>
  }
  func.func private @log_softmax_4(%arg0: tensor<2x10xf32>, %arg1: tensor<2x1xf32>, %arg2: tensor<2x10xf32>) -> tensor<2x10xf32> {
    %0 = stablehlo.negate %arg2 : tensor<2x10xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.reduce(%0 init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<2x10xf32>, tensor<f32>) -> tensor<2xf32>
    %2 = stablehlo.reshape %1 : (tensor<2xf32>) -> tensor<2x1xf32>
    %3 = stablehlo.divide %2, %arg1 : tensor<2x1xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %4 = stablehlo.reduce(%3 init: %cst_0) applies stablehlo.add across dimensions = [1] : (tensor<2x1xf32>, tensor<f32>) -> tensor<2xf32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [0] : (tensor<2xf32>) -> tensor<2x10xf32>
    %6 = stablehlo.multiply %5, %arg0 : tensor<2x10xf32>
    %7 = stablehlo.add %arg2, %6 : tensor<2x10xf32>
    return %7 : tensor<2x10xf32>
  }
}
