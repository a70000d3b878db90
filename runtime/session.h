// Session: runs a graph. `Run(feeds, fetches, targets)` executes only what the fetches and targets
// need, keeps variables between runs, and checks every feed (unknown name, dtype, shape against
// the placeholder) with a clear error.
//
//   kiln::Session session(graph);                       // compiled for the CPU
//   auto out = session.Run({{"x", batch}}, {"logits"}); // Result<std::vector<Tensor>>
//
// Names accepted for feeds, fetches and targets: a graph output's name, "node:port", "node", or a
// builder Value. Feeding a tensor that is not a placeholder overrides it (and prunes its inputs).
#pragma once

#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ir/builder.h"
#include "ir/graph.h"
#include "ir/precision.h"
#include "ir/tensor.h"
#include "runtime/executor.h"
#include "runtime/variable_store.h"

namespace kiln {

struct SessionOptions {
  // "cpu": compiled (needs the compiler linked in: kiln_jit); "cuda": compiled for the first GPU
  // (runtime/cuda/); "cuda-sim": the same plans on the simulated CUDA device; "reference": the
  // interpreter; "auto": cpu when the program links the compiler, reference otherwise.
  std::string backend = "auto";
  int threads = 0;  // compiled backends: threads to use; 0 = every core this process may use
  // Mixed precision (ir/precision.h): compute float32 math in bf16 or fp16 where the lists allow.
  // The graph is rewritten once, when the Session is made (passes/mixed_precision.h): graph
  // outputs keep their dtypes; fetching an inner node that became 16-bit gives its 16-bit value.
  PrecisionPolicy precision = {};
  // Check every float value a run computes; the first inf or NaN fails the run with an error
  // naming the node that produced it and where it was built (passes/check_numerics.h).
  bool check_numerics = false;
  // The memory a run may use, in bytes (runtime/memory_budget.h); 0: what the process can get
  // (the smaller of MemAvailable and the cgroup's limit). A compiled plan whose peak does not fit
  // is refused before its arena is allocated, naming its peak and its largest buffers (node, op,
  // shape); the reference backend counts each tensor it allocates and stops at the node whose
  // output would not fit, naming it. Either way the variables keep their values. On "cuda" the
  // device's budget is its free memory; on "cuda-sim" this is the simulated device's size (0: 80
  // GiB, an H100's) and the host gets what it can.
  int64_t memory_limit = 0;
  // Shared libraries of user-defined ops (runtime/plugins.h) loaded before the graph is verified.
  // A graph that uses their ops must be built or loaded after they are: kiln::LoadPlugin first.
  std::vector<std::string> plugins;
  // The ranks of a data-parallel run (runtime/distributed/communicator.h: OpenMpiCommunicator),
  // which the graph's collective ops (AllReduce, put in by passes/data_parallel.h) talk to; null:
  // this process alone (an AllReduce is then the identity). Every backend: the cuda backends run
  // the device's AllReduce steps through NCCL (the simulator through this communicator), opened
  // when the session is created (runtime/cuda/collectives.h).
  std::shared_ptr<Communicator> distributed;
};

// A tensor or node named by string or by builder Value.
class TensorName {
 public:
  TensorName(const char* name) : name_(name) {}             // NOLINT: implicit by design
  TensorName(std::string name) : name_(std::move(name)) {}  // NOLINT
  TensorName(const Value& v) : name_(v.valid() ? v.name() : std::string()) {}  // NOLINT
  const std::string& str() const { return name_; }

 private:
  std::string name_;
};

using FeedList = std::vector<std::pair<TensorName, Tensor>>;

class Session {
 public:
  // Verifies the graph; a failure is returned by every Run (and by status()).
  explicit Session(Graph graph, SessionOptions options = {});

  Result<std::vector<Tensor>> Run(const FeedList& feeds, const std::vector<TensorName>& fetches,
                                  const std::vector<TensorName>& targets = {});

  // Runs every Variable node once so that all variables hold a value.
  Status InitializeVariables();
  // Writes every variable (after initializing any not yet read) to a checkpoint file.
  Status SaveCheckpoint(const std::string& path);
  // Data-parallel runs: makes every rank's variables (those named in `only`, or all) rank
  // `root`'s, initializing them first, in the order of their names. Fails, naming the first
  // difference, when the ranks' variables differ in name, dtype or shape (different models).
  // Without `distributed`: nothing to do.
  Status BroadcastVariables(int root = 0, const std::set<std::string>& only = {});
  // Loads every variable of the graph from a checkpoint. All or nothing: a missing variable, a
  // dtype or shape mismatch or a bad file is refused and the variables stay as they were.
  // Entries the graph has no variable for are ignored (e.g. optimizer slots in an inference graph).
  Status RestoreCheckpoint(const std::string& path);

  // What Run would execute for these feeds, fetches and targets (checked the same way).
  Result<RunPlan> Plan(const FeedList& feeds, const std::vector<TensorName>& fetches,
                       const std::vector<TensorName>& targets = {}) const;

  Status status() const { return status_; }
  const Graph& graph() const { return graph_; }
  const SessionOptions& options() const { return options_; }
  VariableStore& variables() { return variables_; }

 private:
  Graph graph_;
  SessionOptions options_;
  Status status_;
  std::unique_ptr<Executor> executor_;
  VariableStore variables_;
};

}  // namespace kiln
