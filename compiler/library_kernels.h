// Library steps as generated kernels, for a target without the cpu backend's libraries (the CUDA
// device): strided_copy (compiler/strided_copy_kernel.h), conv2d with its fused epilogue and both
// backward convolutions, max/avg pooling and their gradients, batch_norm and batch_norm_grad,
// reduce_sum, concat and split, and the reference step Gather when its indices are a constant
// whose values are all in range (compiler/codegen/emit_library_kernels.h for their semantics). Each
// becomes one kernel with one iteration per output element (per whole element for split; batch
// norm adds a loop over the channels), written directly as MLIR (KernelSpec::raw_mlir).
//
// Contract: returns nullopt for a step this does not cover: another routine, a buffer in a blocked
// layout, a dtype the kernel does not take (convolutions f32/bf16; pooling f32/bf16/f16;
// batch_norm in training and batch_norm_grad f32, in inference f32/bf16/f16; reduce_sum f32/f64),
// an empty output or piece. Malformed attributes of a covered routine are kInternal (the compiler
// wrote them). Otherwise the spec, named `name`; the caller turns the step into a
// kKernel step calling it, with rows = spec.shape[0].
#pragma once

#include <optional>
#include <string>

#include "compiler/kernel_spec.h"
#include "runtime/executable.h"

namespace kiln::compiler {

Result<std::optional<KernelSpec>> LibraryStepKernel(const Step& step, const Executable& exe,
                                                    const std::string& name);

}  // namespace kiln::compiler
