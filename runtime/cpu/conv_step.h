// The convolution library steps' contract, read once for every consumer (the compiler's device
// kernels, the CUDA device's cuDNN calls): "conv2d" (x, w[, bias][, residual]) -> y,
// "conv2d_backprop_input" (dy, w[, x_like]) -> dx and "conv2d_backprop_filter" (x, dy[, w_like])
// -> dw, over dense NCHW x and y and KCRS w (C per group), with attributes strides, pads [top,
// left, bottom, right], dilations and groups, and for conv2d the epilogue the compiler fused
// into it (compiler/epilogue_fusion.h): "bias" (1: an input [K] after w) and "post_ops" (1: add
// the last input, a tensor of y's type, first; 2: relu; in cpu plans only, 4: clip and 5: a fused
// depthwise 3 x 3 convolution whose weights, and bias with "depthwise_bias" 1, follow the bias;
// see runtime/cpu/onednn_conv_step.cc), applied in that order.
//
// Contract: ReadConvStep checks that the attributes are well formed, that x, w and y share one
// dtype and fit one convolution, and that the epilogue's inputs match; anything else is
// kInternal naming the step (the compiler wrote it).
#pragma once

#include <array>
#include <cstdint>

#include "ir/status.h"
#include "runtime/executable.h"

namespace kiln::cpu {

struct ConvStep {
  enum class Kind { kForward, kBackwardData, kBackwardFilter };
  Kind kind = Kind::kForward;
  DType dtype = DType::kF32;  // x, w, y (and the bias and residual)
  // Buffers of x, w and y (of the forward convolution: dx, w and dy for backprop_input; x, dw
  // and dy for backprop_filter), and of conv2d's bias and residual (-1: none).
  int x = -1, w = -1, y = -1, bias = -1, residual = -1;
  std::array<int64_t, 4> x_dims{};  // N, C, H, W
  std::array<int64_t, 4> w_dims{};  // K, C / groups, R, S
  std::array<int64_t, 4> y_dims{};  // N, K, OH, OW
  std::array<int64_t, 2> strides{1, 1}, dilations{1, 1};
  std::array<int64_t, 4> pads{};  // top, left, bottom, right
  int64_t groups = 1;
  bool relu = false;
  bool clip = false;  // cpu plans only, as the depthwise stage
  int depthwise_weights = -1, depthwise_bias = -1;
};

// Whether `step` is one of the three convolution steps (as a library step, or a kernel step that
// replaces one: attribute "library").
bool IsConvStep(const Step& step);
Result<ConvStep> ReadConvStep(const Step& step, const Executable& exe);

}  // namespace kiln::cpu
