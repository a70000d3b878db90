// Op family "nn": MaxPoolWithArgmax, max pooling over any number of spatial dims with dilations,
// which also gives where each maximum came from (ONNX MaxPool with its Indices output,
// TensorFlow's max_pool_with_argmax with include_batch_in_index).
//
// MaxPoolWithArgmax(x [N, C, d1, ..., dk]) -> (y [N, C, o1, ..., ok], argmax: i64 of y's shape),
// k >= 1. Attributes: kernel [k1, ..., kk] (required, each >= 1), strides (k values >= 1;
// empty: all 1), dilations (k values >= 1; empty: all 1), pads [begin_1, ..., begin_k, end_1,
// ..., end_k] (ONNX order, each >= 0; empty: none) and ceil_mode. Along axis i the window of
// output position o covers x positions o * stride - pad_begin + j * dilation, j in [0, k_i);
// the number of windows is PooledLength (ir/ops/nn.h) with extent (k_i - 1) * dilation + 1.
// Positions outside x (the padding) are ignored. y is each window's largest element and argmax
// the flat row-major index into x of its first occurrence (N and C included, so it addresses x
// flattened); a NaN counts as the largest, as in MaxPool2D. A window with no element inside x
// (possible with dilations, or pads as long as the window) gives -inf (the dtype's lowest for
// integers) and argmax -1.
// Numeric dtypes; integers compare through float64 (exact up to 2^53).
// Gradient: x gets dy added at argmax (ScatterElements "add" over x flattened; windows with
// argmax -1 give nothing); argmax has none.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/builder.h"

namespace kiln {

struct MaxPoolWithArgmaxOptions {
  std::vector<int64_t> kernel;     // [k1, ..., kk], required
  std::vector<int64_t> strides;    // empty: all 1
  std::vector<int64_t> dilations;  // empty: all 1
  std::vector<int64_t> pads;       // [begins..., ends...]; empty: none
  bool ceil_mode = false;
};

struct MaxPoolWithArgmaxResult {
  Value y, argmax;
};

MaxPoolWithArgmaxResult MaxPoolWithArgmax(At x, const MaxPoolWithArgmaxOptions& options);

}  // namespace kiln
