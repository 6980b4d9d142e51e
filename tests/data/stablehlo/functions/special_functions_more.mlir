module @jit_special_functions_more attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<6xf32>, %arg1: tensor<6xf32>) -> (tensor<6xf32> {jax.result_info = "result[0]"}, tensor<6xf32> {jax.result_info = "result[1]"}, tensor<6xf32> {jax.result_info = "result[2]"}, tensor<6xf32> {jax.result_info = "result[3]"}, tensor<6xf32> {jax.result_info = "result[4]"}) {
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %1 = chlo.polygamma %0, %arg0 : tensor<6xf32>, tensor<6xf32> -> tensor<6xf32>
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %3 = stablehlo.add %arg0, %2 : tensor<6xf32>
    %cst_1 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %4 = stablehlo.convert %cst_1 : tensor<f32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %6 = chlo.zeta %3, %5 : tensor<6xf32>, tensor<6xf32> -> tensor<6xf32>
    %cst_2 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %7 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %8 = stablehlo.subtract %arg1, %7 : tensor<6xf32>
    %9 = chlo.bessel_i1e %8 : tensor<6xf32> -> tensor<6xf32>
    %10 = stablehlo.compare NE, %arg0, %arg0, FLOAT : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xi1>
    %11 = stablehlo.compare NE, %arg1, %arg1, FLOAT : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xi1>
    %12 = stablehlo.or %10, %11 : tensor<6xi1>
    %cst_3 = stablehlo.constant dense<0x7F800000> : tensor<f32>
    %13 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %14 = stablehlo.compare EQ, %arg1, %13, FLOAT : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xi1>
    %cst_4 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %15 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %16 = stablehlo.compare EQ, %arg0, %15, FLOAT : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xi1>
    %cst_5 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %17 = stablehlo.broadcast_in_dim %cst_5, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %18 = stablehlo.compare EQ, %arg1, %17, FLOAT : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xi1>
    %cst_6 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %19 = stablehlo.broadcast_in_dim %cst_6, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %20 = stablehlo.compare LT, %arg1, %19, FLOAT : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xi1>
    %cst_7 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %21 = stablehlo.broadcast_in_dim %cst_7, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %22 = stablehlo.compare LT, %arg0, %21, FLOAT : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xi1>
    %23 = stablehlo.and %16, %18 : tensor<6xi1>
    %24 = stablehlo.or %20, %22 : tensor<6xi1>
    %25 = stablehlo.or %24, %23 : tensor<6xi1>
    %26 = stablehlo.or %25, %12 : tensor<6xi1>
    %cst_8 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %27 = stablehlo.broadcast_in_dim %cst_8, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %28 = stablehlo.compare GE, %arg1, %27, FLOAT : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xi1>
    %29 = stablehlo.compare GT, %arg1, %arg0, FLOAT : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xi1>
    %30 = stablehlo.and %28, %29 : tensor<6xi1>
    %31 = stablehlo.log %arg1 : tensor<6xf32>
    %32 = stablehlo.multiply %arg0, %31 : tensor<6xf32>
    %33 = stablehlo.subtract %32, %arg1 : tensor<6xf32>
    %34 = chlo.lgamma %arg0 : tensor<6xf32> -> tensor<6xf32>
    %35 = stablehlo.subtract %33, %34 : tensor<6xf32>
    %cst_9 = stablehlo.constant dense<3.40282347E+38> : tensor<f32>
    %36 = stablehlo.log %cst_9 : tensor<f32>
    %37 = stablehlo.negate %36 : tensor<f32>
    %38 = stablehlo.broadcast_in_dim %37, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %39 = stablehlo.compare LT, %35, %38, FLOAT : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xi1>
    %40 = stablehlo.exponential %35 : tensor<6xf32>
    %41 = stablehlo.or %18, %26 : tensor<6xi1>
    %42 = stablehlo.or %41, %39 : tensor<6xi1>
    %43 = stablehlo.or %42, %14 : tensor<6xi1>
    %44 = stablehlo.not %43 : tensor<6xi1>
    %45 = stablehlo.and %44, %30 : tensor<6xi1>
    %cst_10 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %46 = stablehlo.broadcast_in_dim %cst_10, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %47 = stablehlo.subtract %46, %arg0 : tensor<6xf32>
    %48 = stablehlo.add %arg1, %47 : tensor<6xf32>
    %cst_11 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %49 = stablehlo.broadcast_in_dim %cst_11, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %50 = stablehlo.add %48, %49 : tensor<6xf32>
    %cst_12 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %51 = stablehlo.broadcast_in_dim %cst_12, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %cst_13 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %52 = stablehlo.broadcast_in_dim %cst_13, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %53 = stablehlo.add %arg1, %52 : tensor<6xf32>
    %54 = stablehlo.multiply %50, %arg1 : tensor<6xf32>
    %55 = stablehlo.divide %53, %54 : tensor<6xf32>
    %cst_14 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %56 = stablehlo.broadcast_in_dim %cst_14, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %cst_15 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %57 = stablehlo.broadcast_in_dim %cst_15, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %cst_16 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %58 = stablehlo.broadcast_in_dim %cst_16, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %cst_17 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %59 = stablehlo.broadcast_in_dim %cst_17, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %60 = stablehlo.negate %arg1 : tensor<6xf32>
    %61 = stablehlo.multiply %55, %60 : tensor<6xf32>
    %62 = stablehlo.subtract %59, %61 : tensor<6xf32>
    %63 = stablehlo.divide %62, %54 : tensor<6xf32>
    %cst_18 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %64:15 = stablehlo.while(%iterArg = %45, %iterArg_27 = %55, %iterArg_28 = %56, %iterArg_29 = %47, %iterArg_30 = %50, %iterArg_31 = %cst_18, %iterArg_32 = %53, %iterArg_33 = %54, %iterArg_34 = %51, %iterArg_35 = %arg1, %iterArg_36 = %57, %iterArg_37 = %58, %iterArg_38 = %59, %iterArg_39 = %60, %iterArg_40 = %63) : tensor<6xi1>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<f32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>
    cond {
      %cst_41 = stablehlo.constant dense<2.000000e+03> : tensor<f32>
      %87 = stablehlo.compare LT, %iterArg_31, %cst_41, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %c = stablehlo.constant dense<false> : tensor<i1>
      %88 = stablehlo.reduce(%iterArg init: %c) applies stablehlo.or across dimensions = [0] : (tensor<6xi1>, tensor<i1>) -> tensor<i1>
      %89 = stablehlo.and %87, %88 : tensor<i1>
      stablehlo.return %89 : tensor<i1>
    } do {
      %cst_41 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %87 = stablehlo.add %iterArg_31, %cst_41 : tensor<f32>
      %cst_42 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %88 = stablehlo.broadcast_in_dim %cst_42, dims = [] : (tensor<f32>) -> tensor<6xf32>
      %89 = stablehlo.add %iterArg_29, %88 : tensor<6xf32>
      %cst_43 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
      %90 = stablehlo.broadcast_in_dim %cst_43, dims = [] : (tensor<f32>) -> tensor<6xf32>
      %91 = stablehlo.add %iterArg_30, %90 : tensor<6xf32>
      %92 = stablehlo.broadcast_in_dim %87, dims = [] : (tensor<f32>) -> tensor<6xf32>
      %93 = stablehlo.multiply %89, %92 : tensor<6xf32>
      %94 = stablehlo.multiply %iterArg_32, %91 : tensor<6xf32>
      %95 = stablehlo.multiply %iterArg_34, %93 : tensor<6xf32>
      %96 = stablehlo.subtract %94, %95 : tensor<6xf32>
      %97 = stablehlo.multiply %iterArg_33, %91 : tensor<6xf32>
      %98 = stablehlo.multiply %iterArg_35, %93 : tensor<6xf32>
      %99 = stablehlo.subtract %97, %98 : tensor<6xf32>
      %cst_44 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
      %100 = stablehlo.broadcast_in_dim %cst_44, dims = [] : (tensor<f32>) -> tensor<6xf32>
      %101 = stablehlo.compare NE, %99, %100, FLOAT : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xi1>
      %102 = stablehlo.divide %96, %99 : tensor<6xf32>
      %103 = stablehlo.subtract %iterArg_27, %102 : tensor<6xf32>
      %104 = stablehlo.divide %103, %102 : tensor<6xf32>
      %105 = stablehlo.abs %104 : tensor<6xf32>
      %cst_45 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %106 = stablehlo.broadcast_in_dim %cst_45, dims = [] : (tensor<f32>) -> tensor<6xf32>
      %107 = stablehlo.select %101, %105, %106 : tensor<6xi1>, tensor<6xf32>
      %108 = stablehlo.select %101, %102, %iterArg_27 : tensor<6xi1>, tensor<6xf32>
      %109 = stablehlo.multiply %iterArg_38, %91 : tensor<6xf32>
      %110 = stablehlo.subtract %109, %iterArg_32 : tensor<6xf32>
      %111 = stablehlo.multiply %iterArg_36, %93 : tensor<6xf32>
      %112 = stablehlo.subtract %110, %111 : tensor<6xf32>
      %113 = stablehlo.broadcast_in_dim %87, dims = [] : (tensor<f32>) -> tensor<6xf32>
      %114 = stablehlo.multiply %iterArg_34, %113 : tensor<6xf32>
      %115 = stablehlo.add %112, %114 : tensor<6xf32>
      %116 = stablehlo.multiply %iterArg_39, %91 : tensor<6xf32>
      %117 = stablehlo.subtract %116, %iterArg_33 : tensor<6xf32>
      %118 = stablehlo.multiply %iterArg_37, %93 : tensor<6xf32>
      %119 = stablehlo.subtract %117, %118 : tensor<6xf32>
      %120 = stablehlo.broadcast_in_dim %87, dims = [] : (tensor<f32>) -> tensor<6xf32>
      %121 = stablehlo.multiply %iterArg_35, %120 : tensor<6xf32>
      %122 = stablehlo.add %119, %121 : tensor<6xf32>
      %123 = stablehlo.multiply %108, %122 : tensor<6xf32>
      %124 = stablehlo.subtract %115, %123 : tensor<6xf32>
      %125 = stablehlo.divide %124, %99 : tensor<6xf32>
      %126 = stablehlo.select %101, %125, %iterArg_40 : tensor<6xi1>, tensor<6xf32>
      %127 = stablehlo.subtract %126, %iterArg_40 : tensor<6xf32>
      %128 = stablehlo.abs %127 : tensor<6xf32>
      %cst_46 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %129 = stablehlo.broadcast_in_dim %cst_46, dims = [] : (tensor<f32>) -> tensor<6xf32>
      %130 = stablehlo.select %101, %128, %129 : tensor<6xi1>, tensor<6xf32>
      %131 = stablehlo.abs %96 : tensor<6xf32>
      %cst_47 = stablehlo.constant dense<1.1920929E-7> : tensor<f32>
      %cst_48 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %132 = stablehlo.broadcast_in_dim %cst_48, dims = [] : (tensor<f32>) -> tensor<f32>
      %133 = stablehlo.divide %132, %cst_47 : tensor<f32>
      %134 = stablehlo.broadcast_in_dim %133, dims = [] : (tensor<f32>) -> tensor<6xf32>
      %135 = stablehlo.compare GT, %131, %134, FLOAT : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xi1>
      %cst_49 = stablehlo.constant dense<1.1920929E-7> : tensor<f32>
      %136 = stablehlo.broadcast_in_dim %cst_49, dims = [] : (tensor<f32>) -> tensor<6xf32>
      %137 = stablehlo.multiply %iterArg_32, %136 : tensor<6xf32>
      %138 = stablehlo.select %135, %137, %iterArg_32 : tensor<6xi1>, tensor<6xf32>
      %cst_50 = stablehlo.constant dense<1.1920929E-7> : tensor<f32>
      %139 = stablehlo.broadcast_in_dim %cst_50, dims = [] : (tensor<f32>) -> tensor<6xf32>
      %140 = stablehlo.multiply %96, %139 : tensor<6xf32>
      %141 = stablehlo.select %135, %140, %96 : tensor<6xi1>, tensor<6xf32>
      %cst_51 = stablehlo.constant dense<1.1920929E-7> : tensor<f32>
      %142 = stablehlo.broadcast_in_dim %cst_51, dims = [] : (tensor<f32>) -> tensor<6xf32>
      %143 = stablehlo.multiply %iterArg_33, %142 : tensor<6xf32>
      %144 = stablehlo.select %135, %143, %iterArg_33 : tensor<6xi1>, tensor<6xf32>
      %cst_52 = stablehlo.constant dense<1.1920929E-7> : tensor<f32>
      %145 = stablehlo.broadcast_in_dim %cst_52, dims = [] : (tensor<f32>) -> tensor<6xf32>
      %146 = stablehlo.multiply %99, %145 : tensor<6xf32>
      %147 = stablehlo.select %135, %146, %99 : tensor<6xi1>, tensor<6xf32>
      %cst_53 = stablehlo.constant dense<1.1920929E-7> : tensor<f32>
      %148 = stablehlo.broadcast_in_dim %cst_53, dims = [] : (tensor<f32>) -> tensor<6xf32>
      %149 = stablehlo.multiply %iterArg_38, %148 : tensor<6xf32>
      %150 = stablehlo.select %135, %149, %iterArg_38 : tensor<6xi1>, tensor<6xf32>
      %cst_54 = stablehlo.constant dense<1.1920929E-7> : tensor<f32>
      %151 = stablehlo.broadcast_in_dim %cst_54, dims = [] : (tensor<f32>) -> tensor<6xf32>
      %152 = stablehlo.multiply %iterArg_39, %151 : tensor<6xf32>
      %153 = stablehlo.select %135, %152, %iterArg_39 : tensor<6xi1>, tensor<6xf32>
      %cst_55 = stablehlo.constant dense<1.1920929E-7> : tensor<f32>
      %154 = stablehlo.broadcast_in_dim %cst_55, dims = [] : (tensor<f32>) -> tensor<6xf32>
      %155 = stablehlo.multiply %115, %154 : tensor<6xf32>
      %156 = stablehlo.select %135, %155, %115 : tensor<6xi1>, tensor<6xf32>
      %cst_56 = stablehlo.constant dense<1.1920929E-7> : tensor<f32>
      %157 = stablehlo.broadcast_in_dim %cst_56, dims = [] : (tensor<f32>) -> tensor<6xf32>
      %158 = stablehlo.multiply %122, %157 : tensor<6xf32>
      %159 = stablehlo.select %135, %158, %122 : tensor<6xi1>, tensor<6xf32>
      %cst_57 = stablehlo.constant dense<1.1920929E-7> : tensor<f32>
      %160 = stablehlo.broadcast_in_dim %cst_57, dims = [] : (tensor<f32>) -> tensor<6xf32>
      %161 = stablehlo.compare GT, %107, %160, FLOAT : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xi1>
      %162 = stablehlo.and %iterArg, %161 : tensor<6xi1>
      %163 = stablehlo.select %iterArg, %108, %iterArg_27 : tensor<6xi1>, tensor<6xf32>
      %164 = stablehlo.select %iterArg, %107, %iterArg_28 : tensor<6xi1>, tensor<6xf32>
      %165 = stablehlo.select %iterArg, %89, %iterArg_29 : tensor<6xi1>, tensor<6xf32>
      %166 = stablehlo.select %iterArg, %91, %iterArg_30 : tensor<6xi1>, tensor<6xf32>
      %167 = stablehlo.select %iterArg, %141, %iterArg_32 : tensor<6xi1>, tensor<6xf32>
      %168 = stablehlo.select %iterArg, %147, %iterArg_33 : tensor<6xi1>, tensor<6xf32>
      %169 = stablehlo.select %iterArg, %138, %iterArg_34 : tensor<6xi1>, tensor<6xf32>
      %170 = stablehlo.select %iterArg, %144, %iterArg_35 : tensor<6xi1>, tensor<6xf32>
      %171 = stablehlo.select %iterArg, %150, %iterArg_36 : tensor<6xi1>, tensor<6xf32>
      %172 = stablehlo.select %iterArg, %153, %iterArg_37 : tensor<6xi1>, tensor<6xf32>
      %173 = stablehlo.select %iterArg, %156, %iterArg_38 : tensor<6xi1>, tensor<6xf32>
      %174 = stablehlo.select %iterArg, %159, %iterArg_39 : tensor<6xi1>, tensor<6xf32>
      %175 = stablehlo.select %iterArg, %126, %iterArg_40 : tensor<6xi1>, tensor<6xf32>
      stablehlo.return %162, %163, %164, %165, %166, %87, %167, %168, %169, %170, %171, %172, %173, %174, %175 : tensor<6xi1>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<f32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>
    }
    %65 = stablehlo.multiply %64#1, %40 : tensor<6xf32>
    %cst_19 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %66 = stablehlo.broadcast_in_dim %cst_19, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %67 = stablehlo.subtract %66, %65 : tensor<6xf32>
    %68 = stablehlo.not %30 : tensor<6xi1>
    %69 = stablehlo.and %44, %68 : tensor<6xi1>
    %cst_20 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %70 = stablehlo.broadcast_in_dim %cst_20, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %cst_21 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %71 = stablehlo.broadcast_in_dim %cst_21, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %cst_22 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %72 = stablehlo.broadcast_in_dim %cst_22, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %cst_23 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %73 = stablehlo.broadcast_in_dim %cst_23, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %74:7 = stablehlo.while(%iterArg = %69, %iterArg_27 = %arg0, %iterArg_28 = %70, %iterArg_29 = %71, %iterArg_30 = %arg1, %iterArg_31 = %72, %iterArg_32 = %73) : tensor<6xi1>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>
    cond {
      %c = stablehlo.constant dense<false> : tensor<i1>
      %87 = stablehlo.reduce(%iterArg init: %c) applies stablehlo.or across dimensions = [0] : (tensor<6xi1>, tensor<i1>) -> tensor<i1>
      stablehlo.return %87 : tensor<i1>
    } do {
      %cst_33 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %87 = stablehlo.broadcast_in_dim %cst_33, dims = [] : (tensor<f32>) -> tensor<6xf32>
      %88 = stablehlo.add %iterArg_27, %87 : tensor<6xf32>
      %89 = stablehlo.divide %iterArg_30, %88 : tensor<6xf32>
      %90 = stablehlo.multiply %iterArg_31, %89 : tensor<6xf32>
      %91 = stablehlo.multiply %iterArg_28, %iterArg_30 : tensor<6xf32>
      %92 = stablehlo.multiply %88, %88 : tensor<6xf32>
      %93 = stablehlo.divide %91, %92 : tensor<6xf32>
      %94 = stablehlo.subtract %90, %93 : tensor<6xf32>
      %95 = stablehlo.add %iterArg_32, %94 : tensor<6xf32>
      %96 = stablehlo.divide %iterArg_30, %88 : tensor<6xf32>
      %97 = stablehlo.multiply %iterArg_28, %96 : tensor<6xf32>
      %98 = stablehlo.add %iterArg_29, %97 : tensor<6xf32>
      %99 = stablehlo.divide %97, %98 : tensor<6xf32>
      %cst_34 = stablehlo.constant dense<1.1920929E-7> : tensor<f32>
      %100 = stablehlo.broadcast_in_dim %cst_34, dims = [] : (tensor<f32>) -> tensor<6xf32>
      %101 = stablehlo.compare GT, %99, %100, FLOAT : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xi1>
      %102 = stablehlo.and %iterArg, %101 : tensor<6xi1>
      %103 = stablehlo.select %iterArg, %88, %iterArg_27 : tensor<6xi1>, tensor<6xf32>
      %104 = stablehlo.select %iterArg, %97, %iterArg_28 : tensor<6xi1>, tensor<6xf32>
      %105 = stablehlo.select %iterArg, %98, %iterArg_29 : tensor<6xi1>, tensor<6xf32>
      %106 = stablehlo.select %iterArg, %iterArg_30, %iterArg_30 : tensor<6xi1>, tensor<6xf32>
      %107 = stablehlo.select %iterArg, %94, %iterArg_31 : tensor<6xi1>, tensor<6xf32>
      %108 = stablehlo.select %iterArg, %95, %iterArg_32 : tensor<6xi1>, tensor<6xf32>
      stablehlo.return %102, %103, %104, %105, %106, %107, %108 : tensor<6xi1>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>
    }
    %75 = stablehlo.multiply %74#3, %40 : tensor<6xf32>
    %76 = stablehlo.divide %75, %arg0 : tensor<6xf32>
    %77 = stablehlo.select %30, %67, %76 : tensor<6xi1>, tensor<6xf32>
    %cst_24 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %78 = stablehlo.broadcast_in_dim %cst_24, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %79 = stablehlo.select %18, %78, %77 : tensor<6xi1>, tensor<6xf32>
    %cst_25 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %80 = stablehlo.broadcast_in_dim %cst_25, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %81 = stablehlo.select %14, %80, %79 : tensor<6xi1>, tensor<6xf32>
    %cst_26 = stablehlo.constant dense<0x7FC00000> : tensor<f32>
    %82 = stablehlo.broadcast_in_dim %cst_26, dims = [] : (tensor<f32>) -> tensor<6xf32>
    %83 = stablehlo.select %26, %82, %81 : tensor<6xi1>, tensor<6xf32>
    %84 = stablehlo.convert %arg1 : (tensor<6xf32>) -> tensor<6xf16>
    %85 = chlo.erfc %84 : tensor<6xf16> -> tensor<6xf16>
    %86 = stablehlo.convert %85 : (tensor<6xf16>) -> tensor<6xf32>
    return %1, %6, %9, %83, %86 : tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>
  }
}
