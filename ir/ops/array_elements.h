// Op family "array", element-wise indexing along one axis (ONNX GatherElements and
// ScatterElements; torch.gather and Tensor.scatter_):
//
//   GatherElements(data, indices, axis): y has indices' shape;
//     y[c] = data[c with c[axis] replaced by indices[c]].
//   ScatterElements(data, indices, updates, axis, reduction): y is data with, for every position c
//     of indices (updates has indices' shape), y[c with c[axis] = indices[c]] set to updates[c]
//     (reduction "none"; with repeated targets the last in row-major order wins), or that element
//     combined with it ("add": +, "mul": *).
//
// indices are i32/i64 of data's rank; negative indices count from the end of the axis, an index
// outside [-n, n) is a run-time error naming it. Off the axis, indices' dims must not exceed
// data's (and in ScatterElements updates has exactly indices' shape). Any dtype for data.
// Gradients: GatherElements' data gets ScatterElements(zeros, indices, dy, "add");
// ScatterElements' data gets dy with the overwritten positions zeroed ("none") or dy ("add"), and
// updates get GatherElements(dy, indices); "mul" has no gradient. indices get none.
#pragma once

#include <cstdint>
#include <string>

#include "ir/builder.h"

namespace kiln {

Value GatherElements(At data, Value indices, int64_t axis = 0);
Value ScatterElements(At data, Value indices, Value updates, int64_t axis = 0,
                      const std::string& reduction = "none");

}  // namespace kiln
