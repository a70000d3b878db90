// A step of an Executable made ready to run: its kernel resolved or its library primitive created
// once, at load time, so that running it does no lookup or setup. Program owns the steps.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/status.h"
#include "runtime/cpu/plan_compiler.h"
#include "runtime/executable.h"
#include "runtime/executor.h"
#include "runtime/variable_store.h"

namespace kiln::cpu {

// What a running step sees: the address of every buffer, and the session's state.
struct StepEnv {
  std::vector<void*> data;  // by buffer index
  const Executable* executable = nullptr;
  VariableStore* variables = nullptr;
  std::map<std::string, uint64_t>* counters = nullptr;  // random streams of reference kernels
  Communicator* communicator = nullptr;  // collective steps' ranks (null: this process alone)
  // Runs control-flow ops' bodies (reference::RunState::bodies); may be null.
  std::function<Executor*(const Graph& body)> bodies;
  int threads = 1;
  std::vector<Tensor> pinned;  // values kVariable buffers point into, kept alive for the run
  // By buffer index: the version of a constant (VariableStore::kConstantVersion) or of the
  // variable value a kVariable buffer is bound to (VariableStore::Version); 0 for buffers whose
  // contents change from run to run (arena, feeds) and before the binding.
  std::vector<uint64_t> versions;
  uint64_t version(int buffer) const {
    return buffer >= 0 && buffer < static_cast<int>(versions.size()) ? versions[buffer] : 0;
  }
};

class StepRunner {
 public:
  virtual ~StepRunner() = default;
  virtual Status Run(StepEnv& env) const = 0;
  // Bytes the step keeps for itself from run to run (prepacked or reordered weights, scratch
  // memory), allocated at load or by its first run: part of a plan's peak (memory_budget.h).
  virtual int64_t kept_bytes() const { return 0; }
  // A step whose work goes on after Run returns (a collective in flight) says so until Finish has
  // completed it, writing its outputs: Program calls Finish before any later step touches their
  // memory, and before the run ends.
  virtual bool finishes_later() const { return false; }
  virtual Status Finish(StepEnv& env) const { return OkStatus(); }
};

Result<std::unique_ptr<StepRunner>> MakeKernelStep(const Step& step, const Executable& exe,
                                                   const KernelLibrary* kernels);
Result<std::unique_ptr<StepRunner>> MakeLibraryStep(const Step& step, const Executable& exe);
Result<std::unique_ptr<StepRunner>> MakeReferenceStep(const Step& step, const Executable& exe);
// AllReduce's step (verified by MakeReferenceStep as any reference step's node, which makes it).
Result<std::unique_ptr<StepRunner>> MakeAllReduceStep(const Step& step, const Executable& exe,
                                                      const AttrMap& attrs);

}  // namespace kiln::cpu
