// A "strided_copy" step (compiler/copy_lowering.h: Slice, Transpose, BroadcastTo, Pad, SliceGrad)
// as a generated kernel, for targets whose library has no strided copy routine (the CUDA device):
// one thread per copied element, its index split over the copied region's dims into the source and
// destination offsets. A step with a fill (Pad, SliceGrad) first writes the fill value (as the
// destination's dtype stores it) to every destination element, in a loop of its own (a launch of
// its own, before the copy's). The kernel is written directly as MLIR (KernelSpec::raw_mlir, kernel
// ABI of compiler/kernel_spec.h): its arguments are the step's operands as 1-D memrefs of integers
// of the element's width, so any dtype copies bit for bit.
//
// Contract: returns nullopt for a step this does not cover (an empty region, operands of different
// widths); otherwise the spec (iteration space [elements copied]). The caller turns the step into
// a kKernel step calling `name`.
#pragma once

#include <optional>
#include <string>

#include "compiler/kernel_spec.h"
#include "runtime/executable.h"

namespace kiln::compiler {

Result<std::optional<KernelSpec>> StridedCopyKernel(const Step& step, const Executable& exe,
                                                    const std::string& name);

}  // namespace kiln::compiler
