// Module: a compiled module (.kmod, see module_file.h) loaded for this CPU and ready to run, with
// no compiler involved: the deployment half of kiln.
//
//   auto module = kiln::Module::Load("digits.kmod");          // Result<std::unique_ptr<Module>>
//   auto out = (*module)->Run({{"images", batch}});            // outputs in signature order
//
// Load refuses a module for another target, one that needs CPU features this host lacks, a newer
// format, or a damaged file, each with an error naming the file. A module of target "cuda" runs on
// the first GPU (backend "cuda", the default for it: the cubin of the GPU's major architecture,
// else, or when the driver refuses that cubin, the PTX of the highest architecture the GPU has,
// JIT-compiled by the driver; refused, naming both, when the GPU is older than every one) or
// on the simulated device (backend "cuda-sim": the host translations of its kernels). Run takes one
// tensor per input of the signature (by name: "x" or "x:0"), each of exactly the signature's dtype
// and shape, and returns the outputs in signature order. Every Run also runs the module's targets:
// a module compiled with --train performs one training step per Run and keeps its variables, which
// SaveCheckpoint/RestoreCheckpoint write and read (the same .kckpt files a Session uses); one
// compiled with --train --data-parallel trains as one rank of a data-parallel run
// (ModuleOptions::distributed, docs/distributed.md).
// A Module is run by one caller at a time.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ir/status.h"
#include "ir/tensor.h"
#include "runtime/distributed/communicator.h"
#include "runtime/module/module_file.h"
#include "runtime/variable_store.h"

namespace kiln {
namespace cpu {
class Program;
}
namespace cuda {
class CudaProgram;
class Device;
}  // namespace cuda

struct ModuleOptions {
  int threads = 0;  // 0: every core this process may use
  // "" (or "auto") runs the module on its target ("cpu", or "cuda"); a "cuda" module also runs on
  // "cuda-sim".
  std::string backend = "";
  // The host memory budget in bytes (runtime/memory_budget.h); 0: what the process can get; on
  // backend "cuda-sim" the simulated device's size instead (0: kSimulatedDeviceBytes). A module
  // whose plan does not fit is refused at load, before its arena is allocated.
  int64_t memory_limit = 0;
  // The ranks of a data-parallel run (runtime/distributed/communicator.h), which a module
  // compiled with `kiln compile --train --data-parallel` all-reduces its gradients among (on a
  // cuda module's device through NCCL, opened at load: every rank loads at the same point); null:
  // this process alone, where an AllReduce is its input. Each rank feeds its shard of the global
  // batch and sets its share (Communicator::set_share) where shards differ in size.
  std::shared_ptr<Communicator> distributed = nullptr;
};

class Module {
 public:
  static Result<std::unique_ptr<Module>> Load(const std::string& path,
                                              const ModuleOptions& options = {});
  // The same from the bytes of a module file; `origin` names it in errors.
  static Result<std::unique_ptr<Module>> LoadFromBytes(const std::string& bytes,
                                                       const std::string& origin,
                                                       const ModuleOptions& options = {});
  ~Module();

  const std::vector<ModuleTensorSpec>& inputs() const { return file_.inputs; }
  const std::vector<ModuleTensorSpec>& outputs() const { return file_.outputs; }
  // The manifest and signature. Its plan and variables are empty: they moved into the loaded
  // program and the variable store at load.
  const ModuleFile& file() const { return file_; }

  Result<std::vector<Tensor>> Run(const std::vector<std::pair<std::string, Tensor>>& feeds);

  const VariableStore& variables() const { return variables_; }
  Status SaveCheckpoint(const std::string& path) const;
  // Data-parallel runs: makes every rank's variables rank `root`'s (after RestoreCheckpoint on
  // root, say); fails naming the rank where the modules' variables differ (different modules).
  // Without `distributed`: nothing to do.
  Status BroadcastVariables(int root = 0);
  // All or nothing: every variable of the module must be in the file with its dtype and shape.
  Status RestoreCheckpoint(const std::string& path);

 private:
  Module();
  std::string origin_;
  ModuleFile file_;
  std::unique_ptr<cpu::Program> program_;  // target cpu
  std::unique_ptr<cuda::Device> device_;   // target cuda; outlives cuda_program_
  std::unique_ptr<cuda::CudaProgram> cuda_program_;
  VariableStore variables_;
  std::map<std::string, uint64_t> counters_;
  std::shared_ptr<Communicator> distributed_;
};

}  // namespace kiln
