#include "runtime/cpu/cpu_executor.h"

#include <sched.h>

#include <thread>

#include "runtime/cpu/plan_compiler.h"

namespace kiln::cpu {

int AvailableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
  return std::max(1u, std::thread::hardware_concurrency());
}

CpuExecutor::CpuExecutor(int threads, int64_t memory_limit)
    : threads_(threads > 0 ? threads : AvailableCores()),
      memory_limit_(memory_limit),
      fallback_(memory_limit) {}

Result<std::vector<Tensor>> CpuExecutor::Execute(const RunPlan& plan, VariableStore& variables) {
  std::string key = PlanCacheKey(plan);
  auto it = cache_.find(key);
  if (it == cache_.end()) {
    std::shared_ptr<PlanCompiler> compiler = GetPlanCompiler();
    if (!compiler)
      return MakeError(ErrorCode::kUnimplemented,
                       "the cpu backend needs the compiler, which this program does not link "
                       "(link kiln_jit, or use backend \"reference\")");
    Entry entry;
    Result<CompiledPlan> compiled = compiler->Compile(plan, CompileOptions{threads_});
    if (compiled.ok()) {
      KILN_ASSIGN_OR_RETURN(
          entry.program, Program::Load(std::move(*compiled), threads_, memory_limit_, &variables));
      ++compiled_;
    } else if (compiled.error().code() == ErrorCode::kUnimplemented) {
      ++fallbacks_;  // not static: run it on the reference executor
    } else {
      return compiled.error();
    }
    it = cache_.emplace(std::move(key), std::move(entry)).first;
  }
  Program* program = it->second.program.get();
  if (!program) return fallback_.Execute(plan, variables);
  KILN_ASSIGN_OR_RETURN(std::vector<Tensor> feeds, FeedsOf(program->executable(), plan));
  return program->Run(feeds, variables, counters_);
}

}  // namespace kiln::cpu
