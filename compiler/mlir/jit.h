// Kernel generation, step 2: JIT-compiles a module of kernels (the text EmitKernelModule makes, or
// any module of func.funcs on statically shaped memrefs) to machine code for the host CPU.
//
// Contract:
// - Compile parses and lowers the module (linalg -> loops, math expansion, scf -> cf, then
//   arith/math/memref/func/cf -> LLVM with the bare-pointer memref calling convention), optimizes
//   the LLVM IR at O3 for the host CPU (its name and features, e.g. AVX2 or AVX-512, so loops
//   vectorize at the host's vector width) and JIT-compiles it. Parse and lowering failures come
//   back as kiln Errors carrying MLIR's diagnostics (kInvalidArgument: the text does not parse or
//   verify; kUnimplemented: it cannot be lowered); nothing aborts.
// - Lookup(name) gives the packed entry point of func `name`: void(void** args), args[i] pointing
//   at the i-th argument (for a kiln kernel: &begin, &end, &in0_ptr, ..., &out0_ptr, ...).
// - After Compile, a JitModule may be used from several threads: Lookup is serialized internally
//   and the returned functions may run concurrently. The code lives as long as the JitModule.
// - With $KILN_DUMP_DIR set, Compile writes <dir>/<name>.mlir (the input), <name>.ll (the
//   optimized LLVM IR) and <name>.s (the host assembly).
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "ir/status.h"

namespace kiln::compiler {

struct JitOptions {
  std::string name = "kiln_kernels";  // module name, used for dump file names
  int opt_level = 3;                  // LLVM optimization level of the IR and of codegen (0-3)
};

using PackedKernel = void (*)(void** args);

class JitModule {
 public:
  static Result<std::unique_ptr<JitModule>> Compile(const std::string& mlir_text,
                                                    const JitOptions& options = {});
  ~JitModule();
  JitModule(const JitModule&) = delete;
  JitModule& operator=(const JitModule&) = delete;

  // kNotFound when the module has no function `name`.
  Result<PackedKernel> Lookup(const std::string& name);

  // The host CPU the code was generated for ("znver4", ...) and its features ("+avx2,+fma,...").
  const std::string& cpu() const { return cpu_; }
  const std::string& features() const { return features_; }

 private:
  struct Impl;
  JitModule();
  std::unique_ptr<Impl> impl_;
  std::mutex mu_;
  std::string cpu_, features_;
};

}  // namespace kiln::compiler
