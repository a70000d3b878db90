// Activation layouts of the cpu backend: which steps may read and write a buffer whose
// BufferDesc::layout is not "" (dense row-major), and which layout a convolution would like each
// operand in. The compiler's layout pass (compiler/layout_assignment.h) chooses the layouts from
// these answers; Program::Load checks every plan against them, so that a module file with a
// layout a step cannot read is refused, not misread.
//
// A layout names a oneDNN format of a rank-4 [N, C, H, W] tensor: "nhwc", "nChw4c", "nChw8c",
// "nChw16c" (channels in blocks of 4, 8 or 16 as the innermost dimension). A buffer may have one
// only if it is an arena buffer of rank 4, is not fetched, and C is a multiple of the block, so
// that it has exactly the bytes of its dense form.
#pragma once

#include <string>
#include <vector>

#include "ir/status.h"
#include "runtime/executable.h"

namespace kiln::cpu {

// What a step asks of one operand's layout.
enum class LayoutRole {
  kPlain,   // dense row-major only
  kShared,  // any layout, the same as the step's other kShared operands (an elementwise kernel
            // whose operands all have one shape, a same-shape copy, batch normalization's data,
            // pooling's x and y)
  kOwn,     // any layout: the step converts what it is given (a convolution's activations)
  kUnread,  // any layout: the step does not read it (a backward convolution's shape operand)
  kAny,     // any layout, read as it is (a per-channel or per-image sum over a rank-4 buffer)
};

// The role of each operand of `step`: its inputs, then its outputs.
std::vector<LayoutRole> OperandLayoutRoles(const Step& step, const Executable& exe);

// The layout the step's primitive picks for each operand when its buffers are dense (inputs,
// then outputs): "" (dense), a layout name, or "other" (one this runtime does not name, e.g. a
// blocked weight format). For steps without kOwn operands, every entry is "". A convolution
// computes an activation whose buffer has a layout in that layout where oneDNN has fast code for
// it, and otherwise reorders it on every run.
Result<std::vector<std::string>> PreferredLayouts(const Step& step, const Executable& exe);

// The block of channels of a known layout (1 for "" and "nhwc"), or 0 for an unknown name.
int LayoutChannelBlock(const std::string& layout);

// A buffer's memory order as a dense shape: `dims` in row-major order, each from logical dim
// `from[i]` of the buffer's [N, C, H, W]: "" -> [N, C, H, W]; "nhwc" -> [N, H, W, C] from
// {0, 2, 3, 1}; "nChw<b>c" -> [N, C/b, H, W, b] from {0, 1, 2, 3, 1}.
struct MemoryOrder {
  std::vector<int64_t> dims;
  std::vector<int> from;
};
MemoryOrder LayoutMemoryOrder(const std::string& layout, const Shape& shape);

// Refuses a plan in which a buffer's layout is unknown or impossible (see above), or some step
// reads or writes a buffer in a layout its role does not allow.
Status CheckLayouts(const Executable& exe);

}  // namespace kiln::cpu
