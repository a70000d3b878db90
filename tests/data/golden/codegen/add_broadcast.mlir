module {
  // add_broadcast: shape [2, 3, 4], canonical [6, 4]
  func.func @add_broadcast(%begin: i64, %end: i64, %in0: memref<6x4xf32>, %in1: memref<4xf32>, %out0: memref<6x4xf32>) attributes {passthrough = ["kiln.parallel_loops"]} {
    %scale = arith.constant 3 : index
    %begin_i = arith.index_cast %begin : i64 to index
    %end_i = arith.index_cast %end : i64 to index
    %lo = arith.muli %begin_i, %scale : index
    %hi = arith.muli %end_i, %scale : index
    %n = arith.subi %hi, %lo : index
    %in0_rows = memref.subview %in0[%lo, 0] [%n, 4] [1, 1] : memref<6x4xf32> to memref<?x4xf32, strided<[4, 1], offset: ?>>
    %out0_rows = memref.subview %out0[%lo, 0] [%n, 4] [1, 1] : memref<6x4xf32> to memref<?x4xf32, strided<[4, 1], offset: ?>>
    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
        ins(%in0_rows, %in1 : memref<?x4xf32, strided<[4, 1], offset: ?>>, memref<4xf32>)
        outs(%out0_rows : memref<?x4xf32, strided<[4, 1], offset: ?>>) {
    ^bb0(%a0: f32, %a1: f32, %o0: f32):
      %v0 = arith.addf %a0, %a1 : f32
      linalg.yield %v0 : f32
    }
    return
  }
}
