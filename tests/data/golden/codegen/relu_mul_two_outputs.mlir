module {
  // relu_mul_two_outputs: shape [4, 8], canonical [32]
  func.func @relu_mul_two_outputs(%begin: i64, %end: i64, %in0: memref<32xf32>, %in1: memref<32xf32>, %out0: memref<32xf32>, %out1: memref<32xf32>) attributes {passthrough = ["kiln.parallel_loops"]} {
    %scale = arith.constant 8 : index
    %begin_i = arith.index_cast %begin : i64 to index
    %end_i = arith.index_cast %end : i64 to index
    %lo = arith.muli %begin_i, %scale : index
    %hi = arith.muli %end_i, %scale : index
    %n = arith.subi %hi, %lo : index
    %in0_rows = memref.subview %in0[%lo] [%n] [1] : memref<32xf32> to memref<?xf32, strided<[1], offset: ?>>
    %in1_rows = memref.subview %in1[%lo] [%n] [1] : memref<32xf32> to memref<?xf32, strided<[1], offset: ?>>
    %out0_rows = memref.subview %out0[%lo] [%n] [1] : memref<32xf32> to memref<?xf32, strided<[1], offset: ?>>
    %out1_rows = memref.subview %out1[%lo] [%n] [1] : memref<32xf32> to memref<?xf32, strided<[1], offset: ?>>
    linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
        ins(%in0_rows, %in1_rows : memref<?xf32, strided<[1], offset: ?>>, memref<?xf32, strided<[1], offset: ?>>)
        outs(%out0_rows, %out1_rows : memref<?xf32, strided<[1], offset: ?>>, memref<?xf32, strided<[1], offset: ?>>) {
    ^bb0(%a0: f32, %a1: f32, %o0: f32, %o1: f32):
      %v0 = arith.mulf %a0, %a1 : f32
      %v1 = arith.constant 0.0 : f32
      %v2 = arith.cmpf ugt, %v0, %v1 : f32
      %v3 = arith.select %v2, %v0, %v1 : f32
      linalg.yield %v0, %v3 : f32, f32
    }
    return
  }
}
