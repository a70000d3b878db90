// CudaProgram: a placed plan (runtime/executable.h, compiler/placement.h) loaded on a CUDA device,
// real or simulated. Load checks the plan (cpu::CheckExecutable, plus every launch's arguments
// against its step's buffers), allocates the device arena and the device twins of the feeds,
// constants and variables the device touches, uploads the constants, loads the kernels and makes
// every host step ready once (a gemm step on the device becomes a prepared cuBLASLt call,
// matmul_call.h; copies and assigns on the device are device-to-device copies, device_copies.h).
// Memory: a plan whose device arena and twins do not fit the device's free memory (the device
// copies of variables it holds already aside), or whose host side does not fit the host budget, is
// refused before anything is allocated, naming the peak and the largest buffers
// (memory_budget.h); the device peak counts the libraries' workspaces the device does not hold yet
// (cuBLASLt's and cuDNN's, once per device: device.h).
// Run binds the feeds, then performs the steps in order: host steps on the host arena (the cpu
// backend's routines), launches and matmuls on the device, and the plan's to_device/to_host copies
// between them, staged through pinned host memory of the program's own and issued without waiting
// (the host waits for the device only before a host step reads a copied result, and at the end);
// fetches are read on the host after the device is done. A device assign's new value stays in the
// variable's device copy (the store reads it back when the host asks, VariableStore::SetElsewhere)
// unless a host step or a fetch of the same run reads it; a variable_read whose device copy holds
// the store's version binds nothing and uploads nothing.
// Convolution steps on the device run through cuDNN (conv_call.h) where the device can prepare
// them at load, else as the generated kernels their steps carry (one warning on stderr says why).
// A data-parallel plan's AllReduce steps run on the device through the ranks' collectives
// (collectives.h, ProgramOptions::collectives), in the stream's order; host steps get the
// communicator (a "mean_over_share" AllReduce runs there).
// CUDA graphs: when the plan is capturable (graph_capture.h) and graphs are on (the default;
// KILN_CUDA_GRAPHS=0 turns them off), the first run issues the device steps one by one (a
// warm-up; until one succeeds), the next captures them as one graph and replays it, and every
// later run replays it. A run that fails waits for the device before it returns.
// A capture the device refuses leaves the program issuing step by step, with one warning on
// stderr. With KILN_PROFILE set there are no graphs: each step's time (device time for device
// steps) is reported to stderr when the program is destroyed. A CudaProgram is run by one caller
// at a time.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "runtime/cpu/plan_compiler.h"
#include "runtime/cpu/step.h"
#include "runtime/cpu/step_profile.h"
#include "runtime/cuda/collectives.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/device_variables.h"
#include "runtime/cuda/graph_capture.h"
#include "runtime/distributed/communicator.h"
#include "runtime/memory_budget.h"
#include "runtime/variable_store.h"

namespace kiln::cuda {

// What a program may use on the device. From the environment: KILN_CUDA_GRAPHS=0 turns graphs
// off, KILN_CUDNN=0 cuDNN (convolutions then run as their generated kernels).
struct ProgramOptions {
  bool cuda_graphs = true;  // capture and replay the device steps where the plan allows it
  bool cudnn = true;        // convolutions through cuDNN where the device can run them
  // The host memory budget (runtime/memory_budget.h; 0: what the process can get). The device's
  // budget is its free memory.
  int64_t memory_limit = 0;
  // The variables' values on the host (the session's or module's store), which the host budget
  // counts as allocated already; null: none are.
  const VariableStore* stored_variables = nullptr;
  // A data-parallel run's ranks (null: this process alone), for the host's collective steps and
  // the ranks' shares, and their collectives on this device (collectives.h; null: each device
  // AllReduce's output is its input).
  std::shared_ptr<Communicator> communicator = nullptr;
  std::shared_ptr<DeviceCollectives> collectives = nullptr;
  static ProgramOptions FromEnvironment();
};

class CudaProgram {
 public:
  // `device` must outlive the program. `variables` holds the device copies of the variables the
  // plan reads, shared with the other programs of the same store and device (null: the program's
  // own).
  static Result<std::unique_ptr<CudaProgram>> Load(
      CompiledPlan plan, Device& device, int threads,
      std::shared_ptr<DeviceVariables> variables = nullptr,
      ProgramOptions options = ProgramOptions::FromEnvironment());
  ~CudaProgram();

  Result<std::vector<Tensor>> Run(const std::vector<Tensor>& feeds, VariableStore& variables,
                                  std::map<std::string, uint64_t>& counters);

  const Executable& executable() const { return plan_.executable; }
  // Whether the plan can be captured, and why not.
  const GraphCapture& capture() const { return capture_; }
  // Runs that replayed the captured graph (0 until the second run of a capturable plan).
  int64_t replays() const { return replays_; }
  // Why a capture was given up ("" when none was).
  const std::string& capture_error() const { return capture_error_; }
  // Convolution steps that run through cuDNN, and why the others on the device do not.
  int cudnn_steps() const { return cudnn_steps_; }
  const std::vector<std::string>& cudnn_fallbacks() const { return cudnn_fallbacks_; }

 private:
  struct Action {
    enum class Kind {
      kHost,
      kToDevice,
      kToHost,
      kLaunch,
      kMatmul,
      kConv,
      kCopyOnDevice,
      kAssign,
      kAllReduce
    };
    Kind kind = Kind::kHost;
    int buffer = -1;  // copies; kCopyOnDevice, kAssign: the output
    int source = -1;  // kCopyOnDevice, kAssign: the buffer copied
    // kToDevice of a variable's value, kAssign: the variable (DeviceVariables); kHost: the variable
    // a variable_read binds for no reader but its copy to the device (skipped while the device
    // copy holds the store's version)
    std::string variable;
    // kAssign: the new value stays in the device copy (the store reads it back when the host asks:
    // nothing on the host reads it in this run).
    bool deferred = false;
    std::unique_ptr<cpu::StepRunner> runner;  // kHost
    const DeviceKernel* kernel = nullptr;     // kLaunch; kAssign of AssignAdd/AssignSub
    std::vector<LaunchOperand> operands;      // kLaunch, kAssign: the kernel's operands
    std::shared_ptr<PreparedMatmul> matmul;   // kMatmul: a gemm step through cuBLASLt
    std::shared_ptr<PreparedConv> conv;       // kConv: a convolution step through cuDNN
    std::vector<ReduceBuffers> reduced;       // kAllReduce: the bucket's inputs and outputs
    DType reduced_dtype = DType::kF32;        // kAllReduce: their dtype
    std::string reduction;                    // kAllReduce: "sum" or "mean"
    // Offset in pinned_: kToDevice (but a variable's upload), kToHost: the copy's staging; kAssign:
    // the new value's, read back for the store.
    int64_t staged = -1;
    bool variable_read = false;  // kHost: a variable_read, which reads no buffer
  };
  explicit CudaProgram(Device& device) : device_(device) {}
  Status Prepare(int threads);
  // Refuses the plan when it cannot fit the device or the host (see the contract above).
  Status CheckMemory(const std::set<int>& on_device);
  // Makes `action` a cuDNN call for convolution `step`; false (the reason kept in
  // cudnn_fallbacks_) when the device cannot run it so.
  bool PrepareConv(const Step& step, Action& action);
  // Each launch of `kernel` against the buffers `ids` (the step's operands): arguments inside
  // their buffers, sizes inside CUDA's limits, the function present in the loaded code.
  Status CheckLaunches(const DeviceKernel& kernel, const std::vector<int>& ids);
  // The launches of the action's kernel, with its operands.
  Status LaunchAll(const Action& action);
  // A device AllReduce: through the collectives, or each output its input without them.
  Status AllReduce(const Action& action);
  // An action's host half (a host step; the staging of a copy to the device, or a variable's
  // upload; a device assign's bookkeeping) and its device half (what goes on the stream).
  Status HostHalf(const Action& action, cpu::StepEnv& env);
  Status DeviceHalf(const Action& action);
  // Both halves of one action, in a run that goes step by step.
  Status Perform(const Action& action, cpu::StepEnv& env);
  // Run's body (Run waits for the device when it fails).
  Result<std::vector<Tensor>> RunSteps(const std::vector<Tensor>& feeds, VariableStore& variables,
                                       std::map<std::string, uint64_t>& counters);
  // A run of a capturable plan, in its three phases (graph_capture.h).
  Result<std::vector<Tensor>> RunInPhases(cpu::StepEnv& env, VariableStore& variables);
  // Phase 2: the device halves from the first device step to the last, issued, captured or
  // replayed.
  Status IssueDeviceSteps();
  Result<std::vector<Tensor>> RunProfiled(cpu::StepEnv& env, VariableStore& variables);
  // Waits for the device, then copies the staged results of the pending to_host copies into their
  // host buffers.
  Status ReadStagedCopies(cpu::StepEnv& env);
  uint8_t* Staged(const Action& action) const { return pinned_ + action.staged; }
  // After the device is done: gives the store the values device assigns wrote (read back, or left
  // on the device where deferred), then copies out the fetches.
  Result<std::vector<Tensor>> Finish(cpu::StepEnv& env, VariableStore& variables);
  // Makes `store`'s value of the variable the assign wrote the one in its device copy.
  void KeepOnDevice(const Action& assign, VariableStore& store);
  // Whether the device copy of `name` holds the store's current value.
  bool DeviceHolds(const std::string& name, const VariableStore& store) const {
    return variables_->HoldsVersion(name, store.Version(name));
  }

  Device& device_;
  std::shared_ptr<DeviceVariables> variables_;
  CompiledPlan plan_;
  int threads_ = 1;
  std::shared_ptr<uint8_t[]> host_arena_;
  std::vector<DevicePtr> allocations_;  // freed with the program
  std::vector<DevicePtr> address_;      // each buffer's device address (0: none)
  std::shared_ptr<DeviceCode> code_;
  std::vector<Action> actions_;             // one per step of the plan
  std::map<int, std::string> variable_of_;  // buffers that are variables' device copies
  // This run's device assigns and their new values (read back into these tensors by Finish; none
  // for a deferred one).
  std::vector<std::pair<const Action*, Tensor>> assigned_;
  std::unique_ptr<cpu::StepProfile> profile_;  // KILN_PROFILE (runtime/cpu/step_profile.h)
  bool skipped_upload_ = false;  // the last Perform found a variable on the device already
  uint8_t* pinned_ = nullptr;    // staging of the copies between host and device
  std::vector<const Action*> pending_to_host_;  // issued, not yet read out of staging
  GraphCapture capture_;
  ProgramOptions options_;
  int cudnn_steps_ = 0;
  std::vector<std::string> cudnn_fallbacks_;
  std::unique_ptr<DeviceGraph> graph_;  // once captured
  std::string capture_error_;
  bool warmed_up_ = false;  // a run's device steps once ran, step by step, without error
  int64_t replays_ = 0;
};

}  // namespace kiln::cuda
