module {
  // cast_compare_select: shape [2, 8], canonical [2, 8]
  func.func @cast_compare_select(%begin: i64, %end: i64, %in0: memref<2x8xf32>, %in1: memref<8xi32>, %out0: memref<2x8xf32>, %out1: memref<2x8xi8>) attributes {passthrough = ["kiln.parallel_loops"]} {
    %scale = arith.constant 1 : index
    %begin_i = arith.index_cast %begin : i64 to index
    %end_i = arith.index_cast %end : i64 to index
    %lo = arith.muli %begin_i, %scale : index
    %hi = arith.muli %end_i, %scale : index
    %n = arith.subi %hi, %lo : index
    %in0_rows = memref.subview %in0[%lo, 0] [%n, 8] [1, 1] : memref<2x8xf32> to memref<?x8xf32, strided<[8, 1], offset: ?>>
    %out0_rows = memref.subview %out0[%lo, 0] [%n, 8] [1, 1] : memref<2x8xf32> to memref<?x8xf32, strided<[8, 1], offset: ?>>
    %out1_rows = memref.subview %out1[%lo, 0] [%n, 8] [1, 1] : memref<2x8xi8> to memref<?x8xi8, strided<[8, 1], offset: ?>>
    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
        ins(%in0_rows, %in1 : memref<?x8xf32, strided<[8, 1], offset: ?>>, memref<8xi32>)
        outs(%out0_rows, %out1_rows : memref<?x8xf32, strided<[8, 1], offset: ?>>, memref<?x8xi8, strided<[8, 1], offset: ?>>) {
    ^bb0(%a0: f32, %a1: i32, %o0: f32, %o1: i8):
      %v0 = arith.constant 0.5 : f32
      %v1 = arith.cmpf ogt, %a0, %v0 : f32
      %v2 = arith.sitofp %a1 : i32 to f32
      %v3 = arith.select %v1, %a0, %v2 : f32
      %v4 = arith.extui %v1 : i1 to i8
      linalg.yield %v3, %v4 : f32, i8
    }
    return
  }
}
