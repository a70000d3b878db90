#include "runtime/executor.h"

#include "runtime/cpu/cpu_executor.h"
#include "runtime/cpu/plan_compiler.h"
#include "runtime/cuda/cuda_executor.h"
#include "runtime/reference/executor.h"

namespace kiln {

Result<std::unique_ptr<Executor>> CreateExecutor(const std::string& name, int threads, bool tf32) {
  const std::string backend = name != "auto" ? name : GetPlanCompiler() ? "cpu" : "reference";
  if (backend == "reference") return std::unique_ptr<Executor>(new reference::ReferenceExecutor());
  if (backend == "cpu") return std::unique_ptr<Executor>(new cpu::CpuExecutor(threads));
  if (backend == "cuda" || backend == "cuda-sim")
    return cuda::CudaExecutor::Create(backend, threads, tf32);
  return MakeError(ErrorCode::kNotFound, "unknown backend '", backend,
                   "' (available: auto, cpu, cuda, cuda-sim, reference)");
}

}  // namespace kiln
