// Op family "linalg": MatMul, BiasAdd and Conv2D.
//
// MatMul follows numpy.matmul: operands of rank >= 2 are stacks of matrices whose leading (batch)
// dims broadcast; a 1-D `a` is a row vector (a 1 is prepended, then removed from the result) and a
// 1-D `b` a column vector (a 1 is appended, then removed). transpose_a / transpose_b swap the last
// two dims of an operand of rank >= 2 and are ignored for 1-D operands. The contracted dims must
// be equal; an unknown (-1) dim passes at build time and is checked when the graph runs. Floats
// and i32/i64; integer products and sums wrap (two's complement). Attribute out_dtype (unset: the
// operands' dtype) may be f32 for bf16/f16 operands: the float32 accumulator is written as is,
// not rounded to 16 bits (XLA's preferred_element_type; passes/mixed_precision uses it where
// only float32 ops read the product).
//
// BiasAdd adds a 1-D `bias` of length x.shape[axis] along `axis` of `x` (rank >= 2, floats).
//
// Conv2D is a 2-D cross-correlation (no kernel flip) in NCHW layout: x [N, C, H, W], w [O,
// C/groups, kH, kW] -> [N, O, Hout, Wout] with Hout = floor((H + top + bottom - dilation_h*(kH-1) -
// 1) / stride_h) + 1 (Wout likewise). pads are in ONNX order [top, left, bottom, right] and pad
// with zeros. Input channel block g (of C/groups) feeds output channel block g (of O/groups).
// Floats.
//
// Gradients (ir/ops/linalg_grad.cc): MatMul (float operands; batch dims are summed back to each
// operand's, 1-D operands get 1-D gradients), BiasAdd and Conv2D (through the two ops below).
//
// Conv2D's backward passes, as ops whose attributes mirror Conv2D's (strides, pads, dilations,
// groups, same defaults) so that backends can map them to backward-convolution primitives:
//   Conv2DBackpropInput(dy, w, x_like) -> dx: the gradient of a Conv2D(x, w) with respect to x,
//     given dy [N, O, Hout, Wout] (the gradient of its output); x_like is that forward input, used
//     only for its (run-time) shape, which dx takes.
//   Conv2DBackpropFilter(x, dy, w_like) -> dw: the gradient with respect to w; w_like is the
//     forward filter, used only for its shape.
// dy's shape must be Conv2D's output shape for x and w. Floats; not differentiable (yet).
// Input positions never read by the forward pass (cut off by the stride) get a zero gradient.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/builder.h"

namespace kiln {

// out_dtype: see above (kInvalid: the operands' dtype).
Value MatMul(At a, Value b, bool transpose_a = false, bool transpose_b = false,
             DType out_dtype = DType::kInvalid);

Value BiasAdd(At x, Value bias, int64_t axis = 1);

struct Conv2DOptions {
  std::vector<int64_t> strides = {1, 1};     // [stride_h, stride_w], each >= 1
  std::vector<int64_t> pads = {0, 0, 0, 0};  // [top, left, bottom, right], each >= 0
  std::vector<int64_t> dilations = {1, 1};   // [dilation_h, dilation_w], each >= 1
  int64_t groups = 1;                        // divides both C and O
};

Value Conv2D(At x, Value w, const Conv2DOptions& options = {});
Value Conv2DBackpropInput(At dy, Value w, Value x_like, const Conv2DOptions& options = {});
Value Conv2DBackpropFilter(At x, Value dy, Value w_like, const Conv2DOptions& options = {});

}  // namespace kiln
