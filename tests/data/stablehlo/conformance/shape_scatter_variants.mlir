module @jit_shape_scatter_variants attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<10x4xf32>, %arg1: tensor<6xi32>, %arg2: tensor<6xi32>, %arg3: tensor<6x4xf32>, %arg4: tensor<10x4xi32>) -> (tensor<10x4xf32> {jax.result_info = "result[0]"}, tensor<10x4xf32> {jax.result_info = "result[1]"}, tensor<10x4xf32> {jax.result_info = "result[2]"}, tensor<10x4xf32> {jax.result_info = "result[3]"}, tensor<10x4xi32> {jax.result_info = "result[4]"}, tensor<10x4xf32> {jax.result_info = "result[5]"}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<6xi32>
    %1 = stablehlo.compare LT, %arg1, %0, SIGNED : (tensor<6xi32>, tensor<6xi32>) -> tensor<6xi1>
    %c_0 = stablehlo.constant dense<10> : tensor<i32>
    %2 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<6xi32>
    %3 = stablehlo.add %arg1, %2 : tensor<6xi32>
    %4 = stablehlo.select %1, %3, %arg1 : tensor<6xi1>, tensor<6xi32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [0] : (tensor<6xi32>) -> tensor<6x1xi32>
    %6 = "stablehlo.scatter"(%arg0, %5, %arg3) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg5: tensor<f32>, %arg6: tensor<f32>):
      stablehlo.return %arg6 : tensor<f32>
    }) : (tensor<10x4xf32>, tensor<6x1xi32>, tensor<6x4xf32>) -> tensor<10x4xf32>
    %cst = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %7 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<6x4xf32>
    %8 = stablehlo.multiply %arg3, %7 : tensor<6x4xf32>
    %cst_1 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %9 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<6x4xf32>
    %10 = stablehlo.add %8, %9 : tensor<6x4xf32>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %11 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i32>) -> tensor<6xi32>
    %12 = stablehlo.compare LT, %arg2, %11, SIGNED : (tensor<6xi32>, tensor<6xi32>) -> tensor<6xi1>
    %c_3 = stablehlo.constant dense<10> : tensor<i32>
    %13 = stablehlo.broadcast_in_dim %c_3, dims = [] : (tensor<i32>) -> tensor<6xi32>
    %14 = stablehlo.add %arg2, %13 : tensor<6xi32>
    %15 = stablehlo.select %12, %14, %arg2 : tensor<6xi1>, tensor<6xi32>
    %16 = stablehlo.broadcast_in_dim %15, dims = [0] : (tensor<6xi32>) -> tensor<6x1xi32>
    %17 = "stablehlo.scatter"(%arg0, %16, %10) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg5: tensor<f32>, %arg6: tensor<f32>):
      %50 = stablehlo.multiply %arg5, %arg6 : tensor<f32>
      stablehlo.return %50 : tensor<f32>
    }) : (tensor<10x4xf32>, tensor<6x1xi32>, tensor<6x4xf32>) -> tensor<10x4xf32>
    %c_4 = stablehlo.constant dense<0> : tensor<i32>
    %18 = stablehlo.broadcast_in_dim %c_4, dims = [] : (tensor<i32>) -> tensor<6xi32>
    %19 = stablehlo.compare LT, %arg2, %18, SIGNED : (tensor<6xi32>, tensor<6xi32>) -> tensor<6xi1>
    %c_5 = stablehlo.constant dense<10> : tensor<i32>
    %20 = stablehlo.broadcast_in_dim %c_5, dims = [] : (tensor<i32>) -> tensor<6xi32>
    %21 = stablehlo.add %arg2, %20 : tensor<6xi32>
    %22 = stablehlo.select %19, %21, %arg2 : tensor<6xi1>, tensor<6xi32>
    %23 = stablehlo.broadcast_in_dim %22, dims = [0] : (tensor<6xi32>) -> tensor<6x1xi32>
    %24 = "stablehlo.scatter"(%arg0, %23, %arg3) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg5: tensor<f32>, %arg6: tensor<f32>):
      %50 = stablehlo.minimum %arg5, %arg6 : tensor<f32>
      stablehlo.return %50 : tensor<f32>
    }) : (tensor<10x4xf32>, tensor<6x1xi32>, tensor<6x4xf32>) -> tensor<10x4xf32>
    %c_6 = stablehlo.constant dense<0> : tensor<i32>
    %25 = stablehlo.broadcast_in_dim %c_6, dims = [] : (tensor<i32>) -> tensor<6xi32>
    %26 = stablehlo.compare LT, %arg2, %25, SIGNED : (tensor<6xi32>, tensor<6xi32>) -> tensor<6xi1>
    %c_7 = stablehlo.constant dense<10> : tensor<i32>
    %27 = stablehlo.broadcast_in_dim %c_7, dims = [] : (tensor<i32>) -> tensor<6xi32>
    %28 = stablehlo.add %arg2, %27 : tensor<6xi32>
    %29 = stablehlo.select %26, %28, %arg2 : tensor<6xi1>, tensor<6xi32>
    %30 = stablehlo.broadcast_in_dim %29, dims = [0] : (tensor<6xi32>) -> tensor<6x1xi32>
    %31 = "stablehlo.scatter"(%arg0, %30, %arg3) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg5: tensor<f32>, %arg6: tensor<f32>):
      %50 = stablehlo.maximum %arg5, %arg6 : tensor<f32>
      stablehlo.return %50 : tensor<f32>
    }) : (tensor<10x4xf32>, tensor<6x1xi32>, tensor<6x4xf32>) -> tensor<10x4xf32>
    %c_8 = stablehlo.constant dense<0> : tensor<i32>
    %32 = stablehlo.broadcast_in_dim %c_8, dims = [] : (tensor<i32>) -> tensor<6xi32>
    %33 = stablehlo.compare LT, %arg2, %32, SIGNED : (tensor<6xi32>, tensor<6xi32>) -> tensor<6xi1>
    %c_9 = stablehlo.constant dense<10> : tensor<i32>
    %34 = stablehlo.broadcast_in_dim %c_9, dims = [] : (tensor<i32>) -> tensor<6xi32>
    %35 = stablehlo.add %arg2, %34 : tensor<6xi32>
    %36 = stablehlo.select %33, %35, %arg2 : tensor<6xi1>, tensor<6xi32>
    %37 = stablehlo.broadcast_in_dim %36, dims = [0] : (tensor<6xi32>) -> tensor<6x1xi32>
    %c_10 = stablehlo.constant dense<3> : tensor<i32>
    %38 = stablehlo.broadcast_in_dim %c_10, dims = [] : (tensor<i32>) -> tensor<6x4xi32>
    %39 = "stablehlo.scatter"(%arg4, %37, %38) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg5: tensor<i32>, %arg6: tensor<i32>):
      %50 = stablehlo.add %arg5, %arg6 : tensor<i32>
      stablehlo.return %50 : tensor<i32>
    }) : (tensor<10x4xi32>, tensor<6x1xi32>, tensor<6x4xi32>) -> tensor<10x4xi32>
    %40 = stablehlo.slice %arg1 [0:1] : (tensor<6xi32>) -> tensor<1xi32>
    %41 = stablehlo.reshape %40 : (tensor<1xi32>) -> tensor<i32>
    %c_11 = stablehlo.constant dense<0> : tensor<i32>
    %42 = stablehlo.compare LT, %41, %c_11, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_12 = stablehlo.constant dense<10> : tensor<i32>
    %43 = stablehlo.add %41, %c_12 : tensor<i32>
    %44 = stablehlo.select %42, %43, %41 : tensor<i1>, tensor<i32>
    %45 = stablehlo.broadcast_in_dim %44, dims = [] : (tensor<i32>) -> tensor<1xi32>
    %c_13 = stablehlo.constant dense<1> : tensor<i32>
    %46 = stablehlo.broadcast_in_dim %c_13, dims = [] : (tensor<i32>) -> tensor<1xi32>
    %47 = stablehlo.concatenate %45, %46, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %cst_14 = stablehlo.constant dense<-1.000000e+00> : tensor<f32>
    %48 = stablehlo.broadcast_in_dim %cst_14, dims = [] : (tensor<f32>) -> tensor<2xf32>
    %49 = "stablehlo.scatter"(%arg0, %47, %48) <{indices_are_sorted = true, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0, 1]>, unique_indices = true}> ({
    ^bb0(%arg5: tensor<f32>, %arg6: tensor<f32>):
      stablehlo.return %arg6 : tensor<f32>
    }) : (tensor<10x4xf32>, tensor<2xi32>, tensor<2xf32>) -> tensor<10x4xf32>
    return %6, %17, %24, %31, %39, %49 : tensor<10x4xf32>, tensor<10x4xf32>, tensor<10x4xf32>, tensor<10x4xf32>, tensor<10x4xi32>, tensor<10x4xf32>
  }
}
