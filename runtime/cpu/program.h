// Program: a compiled plan loaded for this CPU. Load resolves every step once (kernels, library
// primitives) and allocates the arena once; Run binds the feeds, runs the steps in order and
// copies the fetches out. A Program is run by one caller at a time. KILN_PROFILE=1 times its
// steps (step_profile.h). Invariant steps (runtime/invariant_steps.h) run on the first run and
// then only when a variable they read has another version or address than when they last ran.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/status.h"
#include "ir/tensor.h"
#include "runtime/cpu/plan_compiler.h"
#include "runtime/cpu/step.h"
#include "runtime/cpu/step_profile.h"
#include "runtime/memory_budget.h"
#include "runtime/variable_store.h"

namespace kiln::cpu {

// What every compiled plan must satisfy before it runs (buffers inside the arena, their constant
// or a feed; steps naming existing buffers and writing only arena buffers, or variables for
// variable_read/assign, or the one buffer a to_device/to_host copy moves; layouts each step can
// read): a plan from a module file cannot make a step touch memory it does not own.
Status CheckExecutable(const Executable& exe);
// Whether `step` is a CUDA plan's copy of a buffer between the host and the device.
bool IsCopyAcross(const Step& step);
// Sets env.executable and env.data: every buffer's host address (arena buffers in `arena`,
// constants, the feeds after checking their types; variables unbound until their variable_read).
// `feed_versions` (by feed index, or null: all 0) become the feed buffers' env.versions.
Status BindBuffers(const Executable& exe, uint8_t* arena, const std::vector<Tensor>& feeds,
                   StepEnv& env, const std::vector<uint64_t>* feed_versions = nullptr);
// Copies of the fetched buffers, in order.
std::vector<Tensor> CopyFetches(const Executable& exe, const StepEnv& env);

class Program {
 public:
  // Refuses a plan whose peak does not fit the host budget of `memory_limit` (memory_budget.h: 0
  // is what the process can get): first before its steps are made (arena, constants, variables,
  // outputs), then, with what the steps keep for themselves (some allocate it as they are made,
  // and free it again when the plan is refused), before the arena is allocated. `variables`
  // (may be null) are the values already stored, which count as resident.
  static Result<std::unique_ptr<Program>> Load(CompiledPlan plan, int threads,
                                               int64_t memory_limit = 0,
                                               const VariableStore* variables = nullptr);

  // `feeds[i]` binds Executable::feeds[i]; its dtype and shape must match the buffer exactly.
  // `counters` are the random-stream counters of stateful reference kernels (per session).
  // `feed_versions` (by feed index; null: every feed new) as RunPlan::feed_versions.
  Result<std::vector<Tensor>> Run(const std::vector<Tensor>& feeds, VariableStore& variables,
                                  std::map<std::string, uint64_t>& counters,
                                  const std::vector<uint64_t>* feed_versions = nullptr);

  // The ranks its collective steps talk to (null, the default: this process alone).
  void set_communicator(std::shared_ptr<Communicator> communicator) {
    communicator_ = std::move(communicator);
  }

  const Executable& executable() const { return plan_.executable; }
  // The plan's memory, with what its steps keep for themselves.
  const PlanMemory& memory() const { return memory_; }

 private:
  Program() = default;

  // Finishes the in-flight steps (StepRunner::finishes_later) whose outputs step i reads or
  // overwrites, with those started before them.
  Status FinishTouched(size_t i, std::vector<size_t>& in_flight, StepEnv& env);

  // An invariant step's variable buffers and their (version, address) when it last ran.
  struct InvariantState {
    std::vector<int> roots;
    std::vector<std::pair<uint64_t, const void*>> kept;
    bool ran = false;
    // Whether the step's results are current for `env`; `key` gets what decides it.
    bool Current(const StepEnv& env, std::vector<std::pair<uint64_t, const void*>>& key) const;
  };
  Status RunStep(size_t i, StepEnv& env);

  CompiledPlan plan_;
  int threads_ = 1;
  std::shared_ptr<uint8_t[]> arena_;
  std::vector<std::unique_ptr<StepRunner>> steps_;
  std::unique_ptr<StepProfile> profile_;  // KILN_PROFILE
  // Control-flow bodies run as compiled plans of their own (where the compiler is linked), each on
  // an executor of its own (their node names may repeat from body to body).
  bool compile_bodies_ = false;
  int64_t memory_limit_ = 0;
  std::shared_ptr<Communicator> communicator_;
  std::map<const Graph*, std::unique_ptr<Executor>> bodies_;
  std::vector<std::optional<InvariantState>> invariant_;  // by step
  PlanMemory memory_;
};

}  // namespace kiln::cpu
