// The JIT compiler of the "cpu" backend: PlanExecutable (fusion, lowering, buffers), then the
// generated kernels through MLIR and LLVM into this process. Targets "cuda" and "cuda-sim" go to
// compiler/cuda_compiler.h. RegisterCpuCompiler makes it the
// runtime's PlanCompiler (programs get it by linking kiln_jit, which calls it at start-up).
// With $KILN_DUMP_DIR set, each compiled plan's Executable is written there too.
#pragma once

#include <memory>

#include "compiler/layout_assignment.h"
#include "compiler/mlir/jit.h"
#include "runtime/cpu/plan_compiler.h"

namespace kiln::compiler {

class CpuCompiler : public PlanCompiler {
 public:
  CpuCompiler() = default;
  // Chooses layouts from `layouts` instead of the runtime's answers (tests force each layout).
  explicit CpuCompiler(LayoutQuery layouts) : layouts_(std::move(layouts)), own_layouts_(true) {}
  Result<CompiledPlan> Compile(const RunPlan& plan, const CompileOptions& options) override;

 private:
  LayoutQuery layouts_;
  bool own_layouts_ = false;
};

void RegisterCpuCompiler();

// A JIT module as the runtime's KernelLibrary (lookups serialized).
std::shared_ptr<const KernelLibrary> JitKernelLibrary(std::unique_ptr<JitModule> module);

}  // namespace kiln::compiler
