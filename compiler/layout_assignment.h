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
// an arena buffer, not rank 4, not f32/bf16/f16) stays dense. Otherwise each convolution operand
// in the group votes for the layout its primitive computes it
// in (`preferred`), each buffer that a dense-only step reads or writes, or that is fetched, votes
// once for "" (dense), and the group takes the layout with the most votes (dense on a tie), if
// its channels are a multiple of that layout's block. Where a dense-only step meets a blocked
// buffer, a "reorder" library step converts between the buffer and a dense twin that the step
// uses instead (one per buffer, shared by its dense readers). A convolution operand whose buffer
// does not have the primitive's layout costs one reorder per run inside its step (where oneDNN
// computes well in the buffer's own layout, it does so instead: runtime/cpu/onednn_conv_step.cc);
// LayoutStats counts both kinds of reorder, before and after.
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
};

// The cpu backend's answer (runtime/cpu/layouts.h), unless KILN_LAYOUTS=dense is set in the
// environment (to measure what the pass gains): then null, and every buffer stays dense.
LayoutQuery DefaultLayoutQuery();

LayoutStats AssignLayouts(Executable& exe, const LayoutQuery& preferred);

}  // namespace kiln::compiler
