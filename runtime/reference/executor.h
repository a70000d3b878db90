// The reference executor: interprets a RunPlan node by node with the reference kernels. Before
// each node it re-runs type inference on the actual inputs, so run-time shape errors (a -1 dim
// that turns out not to broadcast) are reported against the node, and checks each kernel's
// outputs against the inferred types. Intermediate tensors are freed after their last use.
// Memory: the tensors a run allocates are counted against the host budget of `memory_limit`
// (runtime/memory_budget.h; 0 is what the process can get when the run starts); an output that
// would exceed it fails the run before it is allocated, naming the node, its op and shape. A run
// that fails leaves the variables and the random streams as they were before it (Assigns it made
// are undone).
#pragma once

#include <map>
#include <string>

#include "runtime/executor.h"

namespace kiln::reference {

class ReferenceExecutor : public Executor {
 public:
  // A memory_limit of kUnbudgeted counts nothing (EvaluateNode: compile-time evaluation).
  static constexpr int64_t kUnbudgeted = -1;
  explicit ReferenceExecutor(int64_t memory_limit = 0,
                             std::shared_ptr<Communicator> communicator = nullptr)
      : memory_limit_(memory_limit), communicator_(std::move(communicator)) {}
  Result<std::vector<Tensor>> Execute(const RunPlan& plan, VariableStore& variables) override;

 private:
  Result<std::vector<Tensor>> Run(const RunPlan& plan, VariableStore& variables);

  int64_t memory_limit_;
  std::shared_ptr<Communicator> communicator_;  // collective ops' (null: this process alone)
  std::map<std::string, uint64_t> counters_;    // per-node random stream counters
};

// One node run alone on the values of its inputs (inputs[i] for node.inputs[i]), with no
// variables: what compile-time constant folding (compiler/static_types, passes/constant_fold)
// computes, so folded values are exactly what the reference backend gives at run time.
Result<std::vector<Tensor>> EvaluateNode(const Node& node, const std::vector<Tensor>& inputs);

}  // namespace kiln::reference
