#include "runtime/cpu/cpu_executor.h"

#include <sched.h>

#include <cstdio>
#include <thread>

#include "runtime/cpu/plan_compiler.h"

namespace kiln::cpu {

int AvailableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
  return std::max(1u, std::thread::hardware_concurrency());
}

CpuExecutor::CpuExecutor(int threads, int64_t memory_limit,
                         std::shared_ptr<Communicator> communicator)
    : threads_(threads > 0 ? threads : AvailableCores()),
      memory_limit_(memory_limit),
      communicator_(communicator),
      fallback_(memory_limit, std::move(communicator)) {}

Result<std::unique_ptr<Program>> CpuExecutor::CompileAndLoad(
    const RunPlan& plan, const std::set<TensorRef>& known, VariableStore& variables,
    std::vector<TensorRef>* specialized_on) {
  std::shared_ptr<PlanCompiler> compiler = GetPlanCompiler();
  if (!compiler)
    return MakeError(ErrorCode::kUnimplemented,
                     "the cpu backend needs the compiler, which this program does not link "
                     "(link kiln_jit, or use backend \"reference\")");
  CompileOptions options{threads_};
  options.known_feeds = known;
  Result<CompiledPlan> compiled = compiler->Compile(plan, options);
  if (!compiled.ok()) {
    if (compiled.error().code() != ErrorCode::kUnimplemented) return compiled.error();
    return std::unique_ptr<Program>();  // not static
  }
  if (specialized_on) *specialized_on = compiled->specialized_on;
  ++compiled_;
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Program> program,
                        Program::Load(std::move(*compiled), threads_, memory_limit_, &variables));
  program->set_communicator(communicator_);
  return program;
}

Result<std::vector<Tensor>> CpuExecutor::Execute(const RunPlan& plan, VariableStore& variables) {
  KILN_ASSIGN_OR_RETURN(
      Program * program,
      FindProgram<Program>(
          cache_, PlanCacheKey(plan), plan,
          [&](const std::set<TensorRef>& known, std::vector<TensorRef>* specialized_on) {
            return CompileAndLoad(plan, known, variables, specialized_on);
          },
          fallbacks_));
  if (!program) return fallback_.Execute(plan, variables);
  KILN_ASSIGN_OR_RETURN(std::vector<Tensor> feeds, FeedsOf(program->executable(), plan));
  const std::vector<uint64_t> versions = FeedVersionsOf(program->executable(), plan);
  return program->Run(feeds, variables, counters_, &versions);
}

}  // namespace kiln::cpu
