// conv-taps: drops the kernel rows and columns of a convolution that read nothing but padding.
//
// A 3x3 convolution with padding 1 over a 1x1 input (ResNet's last stage on 32x32 images) reads
// the input with its centre tap only: the other eight multiply zeros. Such a convolution is the
// same sum as the 1x1 convolution of the centre tap without padding, which a library runs at its
// GEMM speed instead of spending nine times the work on a degenerate shape. Where every dim is
// known, for Conv2D, Conv2DBackpropInput and Conv2DBackpropFilter alike:
// - kernel row r is kept when some output row y reads a real input row with it
//   (0 <= y*stride - pad_top + r*dilation < H); the kept rows are [r0, r1] (columns likewise);
// - the filter becomes Slice(w) of those rows and columns (through a Cast of w: the slice is cast,
//   so mixed precision converts only the taps used), pad_top shrinks by r0*dilation and
//   pad_bottom by (kH-1-r1)*dilation, and the rewrite happens only where both stay >= 0 and the
//   output shape stays the same;
// - a Conv2DBackpropFilter computes the kept taps' gradient (a new node) and becomes a Pad of it
//   with zeros for the dropped taps (the node keeps its name, so its readers are unchanged).
// The sums are the same without their zero terms; a library's summation order may differ with
// the kernel's size, so the pass is not bitwise (an inf or NaN weight on a dropped tap no longer
// turns the output NaN).
#pragma once

#include "passes/pass.h"

namespace kiln {

class ConvPaddingTaps : public Pass {
 public:
  std::string name() const override { return "conv-taps"; }
  Result<bool> Run(Graph& graph) override;
};

}  // namespace kiln
