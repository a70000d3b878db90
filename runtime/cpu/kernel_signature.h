// Kernel-step signatures: how a module's plan and its kernel code vouch for each other.
//
// A generated kernel is compiled for fixed operands: its rows, and each buffer's dtype and size,
// are constants in its code, while the plan only passes it pointers. So that a plan whose kernel
// step was changed after compilation (its rows, or an operand rewired to another buffer) cannot
// make a kernel run outside its buffers, the compiler defines next to the kernels one empty
// function per distinct way the plan calls them, named by KernelStepSignature; MakeKernelStep
// refuses a step whose signature the kernel library does not define.
//
// Contract: the signature is the kernel's name, "__sig", the step's rows, then for each operand
// (inputs, then outputs) its dtype and its buffer's bytes, e.g. "add0__sig_r128_f32b4096_f32b4096":
// a valid symbol name for MLIR and ELF (letters, digits, '_').
#pragma once

#include <set>
#include <string>

#include "runtime/executable.h"

namespace kiln::cpu {

std::string KernelStepSignature(const Step& step, const Executable& exe);

// The signatures of every kernel step of `exe`.
std::set<std::string> KernelStepSignatures(const Executable& exe);

}  // namespace kiln::cpu
