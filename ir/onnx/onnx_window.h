// The windowed ONNX ops' attributes (Conv, ConvTranspose, MaxPool, AveragePool), read for any
// number of spatial dims: kernel_shape (or the weights' spatial dims), strides, dilations, pads
// in ONNX order ([begin_0, ..., begin_k-1, end_0, ..., end_k-1]) and auto_pad resolved into pads
// (SAME_UPPER/SAME_LOWER need the spatial dims known at import, else the node waits for them).
#pragma once

#include <cstdint>
#include <vector>

#include "ir/onnx/convert_context.h"

namespace kiln::onnx_import {

struct OnnxWindow {
  std::vector<int64_t> kernel, strides, dilations, pads;
};

// `x` is the input's shape [N, C, spatial...]; `kernel` the weights' spatial dims (empty for
// pooling, where kernel_shape is required).
Result<OnnxWindow> ReadOnnxWindow(const OnnxNode& n, const Shape& x, std::vector<int64_t> kernel);

}  // namespace kiln::onnx_import
