module @jit_triangular_and_cholesky_grad attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<6x6xf32>, %arg1: tensor<6xf32>) -> (tensor<6xf32> {jax.result_info = "result[0]"}, tensor<6x6xf32> {jax.result_info = "result[1]"}) {
    %0 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<6x6xf32>) -> tensor<6x6xf32>
    %1 = stablehlo.dot_general %arg0, %0, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<6x6xf32>, tensor<6x6xf32>) -> tensor<6x6xf32>
    %2 = call @cholesky(%1) : (tensor<6x6xf32>) -> tensor<6x6xf32>
    %3 = call @_solve_triangular(%2, %arg1) : (tensor<6x6xf32>, tensor<6xf32>) -> tensor<6xf32>
    %4 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<6x6xf32>) -> tensor<6x6xf32>
    %5 = stablehlo.dot_general %arg0, %4, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<6x6xf32>, tensor<6x6xf32>) -> tensor<6x6xf32>
    %6:4 = call @cholesky_0(%5) : (tensor<6x6xf32>) -> (tensor<6x6xf32>, tensor<6x6xi1>, tensor<6x6xf32>, tensor<6x6xi1>)
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %7 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<6x6xf32>
    %8 = call @cholesky_1(%6#0, %6#1, %6#2, %6#3, %7) : (tensor<6x6xf32>, tensor<6x6xi1>, tensor<6x6xf32>, tensor<6x6xi1>, tensor<6x6xf32>) -> tensor<6x6xf32>
    %9 = stablehlo.dot_general %8, %arg0, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<6x6xf32>, tensor<6x6xf32>) -> tensor<6x6xf32>
    %10 = stablehlo.transpose %9, dims = [1, 0] : (tensor<6x6xf32>) -> tensor<6x6xf32>
    %11 = stablehlo.dot_general %8, %4, contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<6x6xf32>, tensor<6x6xf32>) -> tensor<6x6xf32>
    %12 = stablehlo.transpose %10, dims = [1, 0] : (tensor<6x6xf32>) -> tensor<6x6xf32>
    %13 = stablehlo.add %11, %12 : tensor<6x6xf32>
    return %3, %13 : tensor<6xf32>, tensor<6x6xf32>
  }
  func.func private @cholesky(%arg0: tensor<6x6xf32>) -> tensor<6x6xf32> {
    %0 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<6x6xf32>) -> tensor<6x6xf32>
    %1 = stablehlo.add %arg0, %0 : tensor<6x6xf32>
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<6x6xf32>
    %3 = stablehlo.divide %1, %2 : tensor<6x6xf32>
    %4:2 = stablehlo.custom_call @lapack_spotrf_ffi(%3) {backend_config = "", mhlo.backend_config = {uplo = 76 : ui8}, mhlo.frontend_attributes = {num_batch_dims = "0"}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<> : tensor<0xindex>], sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([k, l], []) {i=6, j=6, k=6, l=6}, custom>} : (tensor<6x6xf32>) -> (tensor<6x6xf32>, tensor<i32>)
    %c = stablehlo.constant dense<0> : tensor<i32>
    %5 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<i32>
    %6 = stablehlo.compare EQ, %4#1, %5, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %7 = stablehlo.broadcast_in_dim %6, dims = [] : (tensor<i1>) -> tensor<1x1xi1>
    %cst_0 = stablehlo.constant dense<0x7FC00000> : tensor<f32>
    %8 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<6x6xf32>
    %9 = stablehlo.broadcast_in_dim %7, dims = [0, 1] : (tensor<1x1xi1>) -> tensor<6x6xi1>
    %10 = stablehlo.select %9, %4#0, %8 : tensor<6x6xi1>, tensor<6x6xf32>
    %11 = stablehlo.iota dim = 0 : tensor<6x6xi32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %12 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i32>) -> tensor<6x6xi32>
    %13 = stablehlo.add %11, %12 : tensor<6x6xi32>
    %14 = stablehlo.iota dim = 1 : tensor<6x6xi32>
    %15 = stablehlo.compare GE, %13, %14, SIGNED : (tensor<6x6xi32>, tensor<6x6xi32>) -> tensor<6x6xi1>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %16 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<6x6xf32>
    %17 = stablehlo.select %15, %10, %16 : tensor<6x6xi1>, tensor<6x6xf32>
    return %17 : tensor<6x6xf32>
  }
  func.func private @_solve_triangular(%arg0: tensor<6x6xf32>, %arg1: tensor<6xf32>) -> tensor<6xf32> {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [0] : (tensor<6xf32>) -> tensor<6x1xf32>
    %1 = stablehlo.custom_call @lapack_strsm_ffi(%arg0, %0) {backend_config = "", mhlo.backend_config = {diag = 78 : ui8, side = 76 : ui8, trans_x = 78 : ui8, uplo = 76 : ui8}, mhlo.frontend_attributes = {num_batch_dims = "0"}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [], operand_index = 1, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>], sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [k, l])->([m, n]) {i=6, j=6, k=6, l=1, m=6, n=1}, custom>} : (tensor<6x6xf32>, tensor<6x1xf32>) -> tensor<6x1xf32>
    %2 = stablehlo.reshape %1 : (tensor<6x1xf32>) -> tensor<6xf32>
    return %2 : tensor<6xf32>
  }
  func.func private @cholesky_0(%arg0: tensor<6x6xf32>) -> (tensor<6x6xf32>, tensor<6x6xi1>, tensor<6x6xf32>, tensor<6x6xi1>) {
    %0 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<6x6xf32>) -> tensor<6x6xf32>
    %1 = stablehlo.add %arg0, %0 : tensor<6x6xf32>
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<6x6xf32>
    %3 = stablehlo.divide %1, %2 : tensor<6x6xf32>
    %4:2 = stablehlo.custom_call @lapack_spotrf_ffi(%3) {backend_config = "", mhlo.backend_config = {uplo = 76 : ui8}, mhlo.frontend_attributes = {num_batch_dims = "0"}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<> : tensor<0xindex>], sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([k, l], []) {i=6, j=6, k=6, l=6}, custom>} : (tensor<6x6xf32>) -> (tensor<6x6xf32>, tensor<i32>)
    %c = stablehlo.constant dense<0> : tensor<i32>
    %5 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<i32>
    %6 = stablehlo.compare EQ, %4#1, %5, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %7 = stablehlo.broadcast_in_dim %6, dims = [] : (tensor<i1>) -> tensor<1x1xi1>
    %cst_0 = stablehlo.constant dense<0x7FC00000> : tensor<f32>
    %8 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<6x6xf32>
    %9 = stablehlo.broadcast_in_dim %7, dims = [0, 1] : (tensor<1x1xi1>) -> tensor<6x6xi1>
    %10 = stablehlo.select %9, %4#0, %8 : tensor<6x6xi1>, tensor<6x6xf32>
    %11 = stablehlo.iota dim = 0 : tensor<6x6xi32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %12 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i32>) -> tensor<6x6xi32>
    %13 = stablehlo.add %11, %12 : tensor<6x6xi32>
    %14 = stablehlo.iota dim = 1 : tensor<6x6xi32>
    %15 = stablehlo.compare GE, %13, %14, SIGNED : (tensor<6x6xi32>, tensor<6x6xi32>) -> tensor<6x6xi1>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %16 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<6x6xf32>
    %17 = stablehlo.select %15, %10, %16 : tensor<6x6xi1>, tensor<6x6xf32>
    %18 = stablehlo.iota dim = 0 : tensor<6x6xi32>
    %c_3 = stablehlo.constant dense<0> : tensor<i32>
    %19 = stablehlo.broadcast_in_dim %c_3, dims = [] : (tensor<i32>) -> tensor<6x6xi32>
    %20 = stablehlo.add %18, %19 : tensor<6x6xi32>
    %21 = stablehlo.iota dim = 1 : tensor<6x6xi32>
    %22 = stablehlo.compare GE, %20, %21, SIGNED : (tensor<6x6xi32>, tensor<6x6xi32>) -> tensor<6x6xi1>
    %23 = stablehlo.iota dim = 0 : tensor<6x6xi32>
    %c_4 = stablehlo.constant dense<0> : tensor<i32>
    %24 = stablehlo.broadcast_in_dim %c_4, dims = [] : (tensor<i32>) -> tensor<6x6xi32>
    %25 = stablehlo.add %23, %24 : tensor<6x6xi32>
    %26 = stablehlo.iota dim = 1 : tensor<6x6xi32>
    %27 = stablehlo.compare EQ, %25, %26, SIGNED : (tensor<6x6xi32>, tensor<6x6xi32>) -> tensor<6x6xi1>
    %28 = stablehlo.convert %27 : (tensor<6x6xi1>) -> tensor<6x6xf32>
    %cst_5 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %29 = stablehlo.broadcast_in_dim %cst_5, dims = [] : (tensor<f32>) -> tensor<6x6xf32>
    %30 = stablehlo.add %29, %28 : tensor<6x6xf32>
    %31 = stablehlo.iota dim = 0 : tensor<6x6xi32>
    %c_6 = stablehlo.constant dense<0> : tensor<i32>
    %32 = stablehlo.broadcast_in_dim %c_6, dims = [] : (tensor<i32>) -> tensor<6x6xi32>
    %33 = stablehlo.add %31, %32 : tensor<6x6xi32>
    %34 = stablehlo.iota dim = 1 : tensor<6x6xi32>
    %35 = stablehlo.compare GE, %33, %34, SIGNED : (tensor<6x6xi32>, tensor<6x6xi32>) -> tensor<6x6xi1>
    return %17, %22, %30, %35 : tensor<6x6xf32>, tensor<6x6xi1>, tensor<6x6xf32>, tensor<6x6xi1>
  }
  func.func private @cholesky_1(%arg0: tensor<6x6xf32>, %arg1: tensor<6x6xi1>, %arg2: tensor<6x6xf32>, %arg3: tensor<6x6xi1>, %arg4: tensor<6x6xf32>) -> tensor<6x6xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<6x6xf32>
    %1 = stablehlo.select %arg3, %arg4, %0 : tensor<6x6xi1>, tensor<6x6xf32>
    %2 = stablehlo.dot_general %1, %arg0, contracting_dims = [0] x [0], precision = [HIGHEST, HIGHEST] : (tensor<6x6xf32>, tensor<6x6xf32>) -> tensor<6x6xf32>
    %3 = stablehlo.transpose %2, dims = [1, 0] : (tensor<6x6xf32>) -> tensor<6x6xf32>
    %4 = stablehlo.divide %3, %arg2 : tensor<6x6xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %5 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<6x6xf32>
    %6 = stablehlo.select %arg1, %4, %5 : tensor<6x6xi1>, tensor<6x6xf32>
    %7 = stablehlo.custom_call @lapack_strsm_ffi(%arg0, %6) {backend_config = "", mhlo.backend_config = {diag = 78 : ui8, side = 76 : ui8, trans_x = 84 : ui8, uplo = 76 : ui8}, mhlo.frontend_attributes = {num_batch_dims = "0"}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [], operand_index = 1, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>], sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [k, l])->([m, n]) {i=6, j=6, k=6, l=6, m=6, n=6}, custom>} : (tensor<6x6xf32>, tensor<6x6xf32>) -> tensor<6x6xf32>
    %8 = stablehlo.custom_call @lapack_strsm_ffi(%arg0, %7) {backend_config = "", mhlo.backend_config = {diag = 78 : ui8, side = 82 : ui8, trans_x = 78 : ui8, uplo = 76 : ui8}, mhlo.frontend_attributes = {num_batch_dims = "0"}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [], operand_index = 1, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>], sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [k, l])->([m, n]) {i=6, j=6, k=6, l=6, m=6, n=6}, custom>} : (tensor<6x6xf32>, tensor<6x6xf32>) -> tensor<6x6xf32>
    %cst_1 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %9 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<6x6xf32>
    %10 = stablehlo.divide %8, %9 : tensor<6x6xf32>
    %11 = stablehlo.transpose %10, dims = [1, 0] : (tensor<6x6xf32>) -> tensor<6x6xf32>
    %12 = stablehlo.add %10, %11 : tensor<6x6xf32>
    return %12 : tensor<6x6xf32>
  }
}
