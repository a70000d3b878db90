#include "runtime/cuda/cuda_executor.h"

#include <algorithm>

#include "runtime/cpu/cpu_executor.h"
#include "runtime/cpu/plan_compiler.h"

namespace kiln::cuda {

Result<std::unique_ptr<Executor>> CudaExecutor::Create(const std::string& backend,
                                                       const ExecutorOptions& options) {
  const int threads = options.threads > 0 ? options.threads : cpu::AvailableCores();
  // On cuda-sim the memory limit is the simulated device's size; on a GPU, the host's budget.
  const bool simulated = backend == "cuda-sim";
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Device> device,
                        OpenDevice(backend, threads, simulated ? options.memory_limit : 0));
  std::unique_ptr<CudaExecutor> executor(
      new CudaExecutor(backend, std::move(device), threads, options.tf32,
                       simulated ? 0 : options.memory_limit, options.communicator));
  if (options.communicator) {
    Result<std::shared_ptr<DeviceCollectives>> collectives =
        executor->device_->OpenCollectives(options.communicator);
    if (!collectives.ok())
      return collectives.error().WithContext(
          "opening the " + backend + " backend's collectives among " +
          std::to_string(options.communicator->size()) + " ranks");
    executor->collectives_ = std::move(*collectives);
  }
  return std::unique_ptr<Executor>(std::move(executor));
}

Result<std::unique_ptr<CudaProgram>> CudaExecutor::CompileAndLoad(
    const RunPlan& plan, const std::set<TensorRef>& known, VariableStore& variables,
    std::vector<TensorRef>* specialized_on) {
  std::shared_ptr<PlanCompiler> compiler = GetPlanCompiler();
  if (!compiler)
    return MakeError(ErrorCode::kUnimplemented, "the ", backend_,
                     " backend needs the compiler, which this program does not link (link "
                     "kiln_jit, or run a module compiled ahead of time)");
  CompileOptions options;
  options.threads = threads_;
  options.target = backend_;
  options.tf32 = tf32_;
  options.known_feeds = known;
  // PTX for the GPU's architecture, or for the newest one the code generator knows (sm_90),
  // which the driver JIT-compiles for a newer GPU.
  if (device_->Architecture() > 0) options.sm = std::min(device_->Architecture(), 90);
  Result<CompiledPlan> compiled = compiler->Compile(plan, options);
  if (!compiled.ok()) {
    if (compiled.error().code() != ErrorCode::kUnimplemented) return compiled.error();
    return std::unique_ptr<CudaProgram>();  // not static
  }
  *specialized_on = compiled->specialized_on;
  ++compiled_;
  ProgramOptions program_options = ProgramOptions::FromEnvironment();
  program_options.memory_limit = memory_limit_;
  program_options.stored_variables = &variables;
  program_options.communicator = communicator_;
  program_options.collectives = collectives_;
  return CudaProgram::Load(std::move(*compiled), *device_, threads_, variables_, program_options);
}

Result<std::vector<Tensor>> CudaExecutor::Execute(const RunPlan& plan, VariableStore& variables) {
  KILN_ASSIGN_OR_RETURN(
      CudaProgram * program,
      FindProgram<CudaProgram>(
          cache_, PlanCacheKey(plan), plan,
          [&](const std::set<TensorRef>& known, std::vector<TensorRef>* specialized_on) {
            return CompileAndLoad(plan, known, variables, specialized_on);
          },
          fallbacks_));
  if (!program) return fallback_.Execute(plan, variables);
  KILN_ASSIGN_OR_RETURN(std::vector<Tensor> feeds, FeedsOf(program->executable(), plan));
  return program->Run(feeds, variables, counters_);
}

}  // namespace kiln::cuda
