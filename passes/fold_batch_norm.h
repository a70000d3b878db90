// fold-batch-norm: an inference BatchNorm after a convolution becomes part of the convolution.
//
// BatchNorm in inference mode (training = false) is an affine map per channel:
//   y = scale * (x - mean) / sqrt(var + epsilon) + bias = x * s + (bias - mean * s),
// s = scale / sqrt(var + epsilon). When x is Conv2D(input, w), BiasAdd(Conv2D(input, w), b), or
// a widening Cast of the Conv2D, read by nothing else, the pass rewrites
//   y = BiasAdd(Conv2D(input, w * s[k]), shift),  shift = bias + (b - mean) * s
// (b = 0 without the BiasAdd; with the Cast, the bias is added after it, in the BatchNorm's
// precision), so that a backend runs the convolution with a bias epilogue (cuDNN's conv + bias +
// ReLU graph) or an elementwise kernel instead of a BatchNorm kernel over the whole activation.
// The folded filter and shift are computed from the filter's and the statistics' own values:
// where those are narrowing Casts' results (mixed precision's bf16 copies of f32 weights), from
// the Casts' inputs, the results cast back, so that the filter is rounded to 16 bits once. Not
// for f16 convolutions, whose range the folded products can leave. The
// BatchNorm node keeps its name (it becomes the BiasAdd) and is folded only where its statistics
// outputs (ports 1 and 2) are unread and no node of the pattern is pinned or has control inputs.
// Not bitwise: the products round differently.

#pragma once

#include "passes/pass.h"

namespace kiln {

class FoldBatchNorm : public Pass {
 public:
  std::string name() const override { return "fold-batch-norm"; }
  Result<bool> Run(Graph& graph) override;
};

}  // namespace kiln
