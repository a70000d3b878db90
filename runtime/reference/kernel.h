// Reference kernels: one function per op, plain loops, obviously right. The executor gives a
// kernel its node, attributes (defaults filled), input tensors and the concrete output types that
// inference computed from the actual inputs; outputs whose types are fully known are allocated
// (zero-filled) before the call. A kernel returns an error for bad values (an index out of range),
// never crashes on them.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"
#include "runtime/distributed/communicator.h"
#include "runtime/executor.h"
#include "runtime/variable_store.h"

namespace kiln::reference {

// State a kernel may touch besides its inputs and outputs.
struct RunState {
  VariableStore* variables = nullptr;
  // Per-node counters (random streams of Dropout), advanced once per run of the node.
  std::map<std::string, uint64_t>* counters = nullptr;
  // The executor that runs `body` (a control-flow op's branch or body) as a plan of its own: a
  // compiled backend's, one per body, which compiles it once per shape (plans are cached by node
  // names, which only one graph keeps apart); null, or returning null: the reference executor.
  std::function<Executor*(const Graph& body)> bodies;
  // The host budget a body's reference run allocates within (ReferenceExecutor's memory_limit:
  // 0 is what the process can get, -1 none).
  int64_t memory_limit = -1;
  // The ranks of a data-parallel run that collective ops talk to (SessionOptions::distributed);
  // null: this process alone.
  Communicator* communicator = nullptr;
};

class KernelContext {
 public:
  KernelContext(const Node& node, const AttrMap& attrs, std::vector<Tensor> inputs,
                std::vector<TensorType> output_types, RunState state);

  const Node& node() const { return node_; }
  const AttrMap& attrs() const { return attrs_; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  const Tensor& input(int i) const { return inputs_[i]; }
  int num_outputs() const { return static_cast<int>(output_types_.size()); }
  const TensorType& output_type(int i) const { return output_types_[i]; }
  // The preallocated output (invalid if its shape depends on values: then call set_output).
  Tensor& output(int i) { return outputs_[i]; }
  void set_output(int i, Tensor t) { outputs_[i] = std::move(t); }
  std::vector<Tensor>& outputs() { return outputs_; }
  RunState& state() { return state_; }

  template <typename... Args>
  Error Fail(const Args&... parts) const {
    return node_.MakeNodeError(ErrorCode::kInvalidArgument, parts...);
  }

 private:
  const Node& node_;
  const AttrMap& attrs_;
  std::vector<Tensor> inputs_;
  std::vector<TensorType> output_types_;
  std::vector<Tensor> outputs_;
  RunState state_;
};

using KernelFn = std::function<Status(KernelContext&)>;

class KernelRegistry {
 public:
  // Every reference kernel: kiln's own (filled on first use) and those plugins added.
  static const KernelRegistry& Global();
  // Thread-safe, also while a plugin registers kernels; the result stays valid.
  const KernelFn* Find(const std::string& op) const;
  void Register(const std::string& op, KernelFn fn);
  std::vector<std::string> Ops() const;
  // Adds a plugin op's kernel to the global registry (kAlreadyExists if the op has one).
  static Status RegisterPluginKernel(const std::string& op, KernelFn fn);

 private:
  mutable std::shared_mutex mu_;
  std::map<std::string, KernelFn> kernels_;
};

// One registration function per op family (runtime/reference/<family>.cc).
void RegisterStateKernels(KernelRegistry& r);
void RegisterMathKernels(KernelRegistry& r);
void RegisterLinalgKernels(KernelRegistry& r);
void RegisterNnKernels(KernelRegistry& r);
void RegisterDetectionKernels(KernelRegistry& r);          // called by RegisterNnKernels
void RegisterMaxPoolWithArgmaxKernels(KernelRegistry& r);  // called by RegisterNnKernels
void RegisterDeterminantKernels(KernelRegistry& r);        // called by RegisterLinalgKernels
void RegisterReduceKernels(KernelRegistry& r);
void RegisterArrayKernels(KernelRegistry& r);
void RegisterUniqueKernels(KernelRegistry& r);         // called by RegisterArrayKernels
void RegisterTextKernels(KernelRegistry& r);           // called by RegisterArrayKernels
void RegisterSequenceKernels(KernelRegistry& r);       // called by RegisterArrayKernels
void RegisterArrayLikeKernels(KernelRegistry& r);      // called by RegisterArrayKernels
void RegisterArrayElementsKernels(KernelRegistry& r);  // called by RegisterArrayKernels
void RegisterDeferredKernels(KernelRegistry& r);
void RegisterControlKernels(KernelRegistry& r);
void RegisterCollectiveKernels(KernelRegistry& r);

}  // namespace kiln::reference
