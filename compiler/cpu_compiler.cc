#include "compiler/cpu_compiler.h"

#include <atomic>
#include <cstdlib>
#include <mutex>

#include "compiler/codegen/emit_mlir.h"
#include "compiler/cuda_compiler.h"
#include "compiler/mlir/jit.h"
#include "compiler/plan_executable.h"
#include "ir/file_util.h"
#include "runtime/cpu/kernel_signature.h"

namespace kiln::compiler {
namespace {

class JitKernels : public KernelLibrary {
 public:
  explicit JitKernels(std::unique_ptr<JitModule> module) : module_(std::move(module)) {}
  Result<KernelEntry> Find(const std::string& symbol) const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return module_->Lookup(symbol);
  }

 private:
  mutable std::mutex mutex_;
  std::unique_ptr<JitModule> module_;
};

std::atomic<int> next_module_id{0};

}  // namespace

std::shared_ptr<const KernelLibrary> JitKernelLibrary(std::unique_ptr<JitModule> module) {
  return std::make_shared<JitKernels>(std::move(module));
}

Result<CompiledPlan> CpuCompiler::Compile(const RunPlan& plan, const CompileOptions& options) {
  // Of the feeds whose values may be known, the fewest the plan's shapes need.
  std::set<TensorRef> known = options.known_feeds;
  if (!known.empty()) {
    KILN_RETURN_IF_ERROR(CheckStatic(plan, known));
    for (const TensorRef& ref : options.known_feeds) {
      std::set<TensorRef> without = known;
      without.erase(ref);
      if (CheckStatic(plan, without).ok()) known = std::move(without);
    }
  }
  if (options.target != "cpu") {
    CompileOptions for_cuda = options;
    for_cuda.known_feeds = known;
    KILN_ASSIGN_OR_RETURN(CompiledPlan compiled, CompileForCuda(plan, for_cuda));
    compiled.specialized_on.assign(known.begin(), known.end());
    return compiled;
  }
  PlanOptions plan_options = CpuPlanOptions();
  if (own_layouts_) plan_options.preferred_layouts = layouts_;
  plan_options.known_feeds = known;
  KILN_ASSIGN_OR_RETURN(PlannedExecutable planned, PlanExecutable(plan, plan_options));
  CompiledPlan compiled;
  compiled.specialized_on.assign(known.begin(), known.end());
  std::string name = "plan" + std::to_string(next_module_id++);
  if (const char* dir = std::getenv("KILN_DUMP_DIR"))
    KILN_RETURN_IF_ERROR(WriteFileAtomically(std::string(dir) + "/" + name + ".executable.txt",
                                             planned.lowered.executable.ToString()));
  if (!planned.lowered.kernels.empty()) {
    KILN_ASSIGN_OR_RETURN(
        std::string mlir,
        EmitKernelModule(planned.lowered.kernels,
                         {.host_vectors = true,
                          .markers = cpu::KernelStepSignatures(planned.lowered.executable)}));
    JitOptions jit;
    jit.name = name;
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<JitModule> module, JitModule::Compile(mlir, jit));
    compiled.kernels = JitKernelLibrary(std::move(module));
  }
  compiled.executable = std::move(planned.lowered.executable);
  return compiled;
}

void RegisterCpuCompiler() { RegisterPlanCompiler(std::make_shared<CpuCompiler>()); }

}  // namespace kiln::compiler
