// The interface between Session and a backend. Session validates feeds, prunes the graph to what
// the fetches and targets need and orders it; an Executor runs that plan. Backends: "reference"
// (runtime/reference/, the oracle) and "cpu" (runtime/cpu/, compiled plans).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"
#include "ir/tensor.h"
#include "runtime/distributed/communicator.h"
#include "runtime/variable_store.h"

namespace kiln {

struct RunPlan {
  std::vector<const Node*> nodes;     // what must run, in a valid order
  std::map<TensorRef, Tensor> feeds;  // fed tensors (their producers are not in `nodes`)
  std::vector<TensorRef> fetches;     // what to return, in order
  // Feeds whose bytes stay the same for as long as they keep their version (nonzero): a loop's
  // arguments that its body passes through. Compiled plans may keep what they derive from them
  // (packed weights) from run to run, as for a variable's version. Absent: a new value each run.
  std::map<TensorRef, uint64_t> feed_versions;
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual Result<std::vector<Tensor>> Execute(const RunPlan& plan, VariableStore& variables) = 0;
};

struct ExecutorOptions {
  int threads = 0;    // <= 0: every core this process may use
  bool tf32 = false;  // the cuda backends' f32 matrix products may use TF32 (PrecisionPolicy::tf32)
  // The host memory budget in bytes (runtime/memory_budget.h); 0: what the process can get.
  int64_t memory_limit = 0;
  // The ranks of a data-parallel run (SessionOptions::distributed); null: this process alone.
  std::shared_ptr<Communicator> communicator;
};

// Creates the executor for a backend name ("cpu", "cuda", "cuda-sim", "reference", or "auto": cpu
// when a compiler is registered, else reference); "cuda" fails here where there is no GPU driver;
// lists the available ones when the name is unknown.
Result<std::unique_ptr<Executor>> CreateExecutor(const std::string& backend,
                                                 const ExecutorOptions& options = {});

}  // namespace kiln
