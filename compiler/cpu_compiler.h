// The JIT compiler of the "cpu" backend: PlanExecutable (fusion, lowering, buffers), then the
// generated kernels through MLIR and LLVM into this process. RegisterCpuCompiler makes it the
// runtime's PlanCompiler (programs get it by linking kiln_jit, which calls it at start-up).
// With $KILN_DUMP_DIR set, each compiled plan's Executable is written there too.
#pragma once

#include "runtime/cpu/plan_compiler.h"

namespace kiln::compiler {

class CpuCompiler : public PlanCompiler {
 public:
  Result<CompiledPlan> Compile(const RunPlan& plan, const CompileOptions& options) override;
};

void RegisterCpuCompiler();

}  // namespace kiln::compiler
