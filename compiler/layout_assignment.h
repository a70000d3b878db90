// The layout pass: chooses how each arena buffer's elements lie in memory (BufferDesc::layout), so
// that activations stay in the blocked layout oneDNN's convolutions compute in from one
// convolution to the next, through batch normalization, pooling, elementwise kernels and
// same-shape copies (and are summed per channel or per image where they are, by bias gradients
// and global average pooling), and are reordered only at the boundaries (feeds, fetches,
// variables, and steps that read only dense buffers: reference kernels, broadcasting kernels,
// strided copies, other reductions, gemm...). It runs
// after lowering and before buffer assignment (compiler/plan_executable.h).
//
// Buffers that every step must see in one layout (the kShared operands of a step, see
// runtime/cpu/layouts.h) form groups. A group containing a buffer that cannot have a layout (not
// an arena buffer, not rank 4, not f32/bf16/f16) stays dense. Otherwise its members vote: each
// convolution operand for the layout its primitive picks when left to choose (`preferred`), each
// buffer that a dense-only step reads or writes, or that is fetched, once for dense. Since a
// convolution computes in the layout of its buffers wherever oneDNN has fast code for it (the
// blocked layouts and nhwc; otherwise it reorders: runtime/cpu/onednn_conv_step.cc), the votes
// for blocked layouts count together: if they outnumber the dense votes, the group takes the
// blocked layout with the most votes (on a tie the larger channel block) whose block divides its
// channels. Where a dense-only step meets a blocked buffer, a "reorder" library step converts
// between the buffer and a dense twin that the step uses instead (one per buffer, shared by its
// dense readers). LayoutStats counts the reorders per run, inside convolutions (dense
// activations they want blocked, weights) and as steps, against an all-dense plan, and explains
// each group's decision.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/status.h"
#include "runtime/executable.h"

namespace kiln::compiler {

// The layout a step's primitive computes each operand in: its inputs, then its outputs ("" for
// dense, or "other" for one that no buffer can have): runtime/cpu/layouts.h's PreferredLayouts.
using LayoutQuery =
    std::function<Result<std::vector<std::string>>(const Step& step, const Executable& exe)>;

struct LayoutStats {
  std::map<std::string, int> buffers;  // blocked buffers, by layout
  int reorders_if_dense = 0;           // reorders per run had every buffer stayed dense
  int reorders = 0;                    // reorders per run with the layouts chosen
  // For each group of buffers some convolution wished in a layout: the layout it got, its votes,
  // and why it stays dense when it does (kiln inspect --fusion prints them).
  std::vector<std::string> decisions;
};

// The cpu backend's answer (runtime/cpu/layouts.h), unless KILN_LAYOUTS=dense is set in the
// environment (to measure what the pass gains): then null, and every buffer stays dense.
LayoutQuery DefaultLayoutQuery();

LayoutStats AssignLayouts(Executable& exe, const LayoutQuery& preferred);

}  // namespace kiln::compiler
