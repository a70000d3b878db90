#include "runtime/executor.h"

#include "runtime/cpu/cpu_executor.h"
#include "runtime/cpu/plan_compiler.h"
#include "runtime/cuda/cuda_executor.h"
#include "runtime/reference/executor.h"

namespace kiln {

Result<std::unique_ptr<Executor>> CreateExecutor(const std::string& name,
                                                 const ExecutorOptions& options) {
  const std::string backend = name != "auto" ? name : GetPlanCompiler() ? "cpu" : "reference";
  if (options.memory_limit < 0)
    return MakeError(ErrorCode::kInvalidArgument, "the memory limit must not be negative, got ",
                     options.memory_limit);
  if (backend == "reference")
    return std::unique_ptr<Executor>(
        new reference::ReferenceExecutor(options.memory_limit, options.communicator));
  if (backend == "cpu")
    return std::unique_ptr<Executor>(
        new cpu::CpuExecutor(options.threads, options.memory_limit, options.communicator));
  if (backend == "cuda" || backend == "cuda-sim")
    return cuda::CudaExecutor::Create(backend, options);
  return MakeError(ErrorCode::kNotFound, "unknown backend '", backend,
                   "' (available: auto, cpu, cuda, cuda-sim, reference)");
}

}  // namespace kiln
