// Kernel generation for ahead-of-time compilation: the same module JitModule compiles (same
// lowering, same LLVM optimization for the host CPU, so the same machine code up to relocation),
// emitted as a relocatable ELF object of position-independent code instead of being loaded. Each
// function NAME gets the packed entry point `_mlir_NAME(void** args)` the runtime calls, as the
// JIT's ExecutionEngine provides (see compiler/kernel_spec.h).
#pragma once

#include <string>

#include "compiler/mlir/jit.h"
#include "ir/status.h"

namespace kiln::compiler {

struct HostObject {
  std::string bytes;     // an ELF relocatable object (.o)
  std::string cpu;       // the CPU the code was generated for (LLVM's name)
  std::string features;  // its features ("+avx2,+fma,-avx512f,...")
};

Result<HostObject> CompileHostObject(const std::string& mlir_text, const JitOptions& options = {});

}  // namespace kiln::compiler
