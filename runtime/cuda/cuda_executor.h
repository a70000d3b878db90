// The cuda backends: "cuda" (a GPU through the driver) and "cuda-sim" (the simulated device that
// runs the same plans on the host, runtime/cuda/device.h). The first Run of a (nodes, feeds'
// shapes, fetches) combination compiles it for the device through the registered PlanCompiler
// (target "cuda" or "cuda-sim": fusion, GPU kernels, placement) and loads it as a CudaProgram;
// later Runs reuse it. As on the cpu backend, a plan whose shapes depend on the values of its
// small feeds is compiled for those values (runtime/specialized_programs.h), and one the compiler
// cannot make static runs on the reference executor. Variables live in the session's store on the
// host and, once a device step has read them, in device copies shared by the executor's programs
// (DeviceVariables), uploaded again only when the store's value changed. A value a device assign
// writes stays in the device copy until the host asks for it (VariableStore::SetElsewhere).
// With a communicator (a data-parallel run) the executor opens the device's collectives among its
// ranks when it is created (NCCL on a GPU: every rank creates its executor at the same point), and
// its plans' AllReduce steps run through them (collectives.h).
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "runtime/cuda/cuda_program.h"
#include "runtime/executor.h"
#include "runtime/reference/executor.h"
#include "runtime/specialized_programs.h"

namespace kiln::cuda {

class CudaExecutor : public Executor {
 public:
  // Opens the device: "cuda" fails here, with one line, where there is no driver or GPU. With
  // `tf32`, plans' f32 matrix products may use TF32 (CompileOptions::tf32).
  static Result<std::unique_ptr<Executor>> Create(const std::string& backend,
                                                  const ExecutorOptions& options);
  Result<std::vector<Tensor>> Execute(const RunPlan& plan, VariableStore& variables) override;

  // How many plans were compiled, and how many ran on the reference executor instead.
  int compiled_plans() const { return compiled_; }
  int fallback_plans() const { return fallbacks_; }

 private:
  CudaExecutor(std::string backend, std::unique_ptr<Device> device, int threads, bool tf32,
               int64_t memory_limit, std::shared_ptr<Communicator> communicator)
      : backend_(std::move(backend)),
        device_(std::move(device)),
        threads_(threads),
        tf32_(tf32),
        memory_limit_(memory_limit),
        communicator_(communicator),
        fallback_(memory_limit, communicator) {}

  // Compiles `plan` (for the values of `known` feeds) and loads it; null when it is not static.
  Result<std::unique_ptr<CudaProgram>> CompileAndLoad(const RunPlan& plan,
                                                      const std::set<TensorRef>& known,
                                                      VariableStore& variables,
                                                      std::vector<TensorRef>* specialized_on);

  std::string backend_;
  std::unique_ptr<Device> device_;  // declared before the programs, which use it
  int threads_;
  bool tf32_;
  int compiled_ = 0;
  int fallbacks_ = 0;
  int64_t memory_limit_;  // the host budget (on cuda-sim, the device's size is the limit)
  std::shared_ptr<Communicator> communicator_;      // a data-parallel run's ranks (or null)
  std::shared_ptr<DeviceCollectives> collectives_;  // theirs on the device, before the programs
  std::shared_ptr<DeviceVariables> variables_ = std::make_shared<DeviceVariables>(*device_);
  std::map<std::string, SpecializedPrograms<CudaProgram>> cache_;
  std::map<std::string, uint64_t> counters_;
  reference::ReferenceExecutor fallback_;
};

}  // namespace kiln::cuda
