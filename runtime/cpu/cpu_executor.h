// The compiled CPU backend ("cpu"). The first Run of a (nodes, feeds' shapes, fetches) combination
// compiles it through the registered PlanCompiler and loads the result as a Program; later Runs
// of the same combination reuse it. A plan whose shapes depend on the values of its small feeds is
// compiled for those values (runtime/specialized_programs.h); one the compiler cannot make static
// even so (a shape that depends on the values of a tensor computed in the same run) runs on the
// reference executor instead; `kiln inspect` shows which.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "runtime/cpu/program.h"
#include "runtime/executor.h"
#include "runtime/reference/executor.h"
#include "runtime/specialized_programs.h"

namespace kiln::cpu {

class CpuExecutor : public Executor {
 public:
  // `memory_limit`: the host budget its plans must fit (memory_budget.h; 0: what the process can
  // get).
  explicit CpuExecutor(int threads, int64_t memory_limit = 0,
                       std::shared_ptr<Communicator> communicator = nullptr);
  Result<std::vector<Tensor>> Execute(const RunPlan& plan, VariableStore& variables) override;

  // How many plans were compiled, and how many ran on the reference executor instead.
  int compiled_plans() const { return compiled_; }
  int fallback_plans() const { return fallbacks_; }

 private:
  // Compiles `plan` (for the values of `known` feeds) and loads it; null when it is not static.
  Result<std::unique_ptr<Program>> CompileAndLoad(const RunPlan& plan,
                                                  const std::set<TensorRef>& known,
                                                  VariableStore& variables,
                                                  std::vector<TensorRef>* specialized_on);
  int threads_;
  int64_t memory_limit_;
  std::shared_ptr<Communicator> communicator_;  // collective steps' (null: this process alone)
  int compiled_ = 0;
  int fallbacks_ = 0;
  std::map<std::string, SpecializedPrograms<Program>> cache_;
  std::map<std::string, uint64_t> counters_;
  reference::ReferenceExecutor fallback_;
};

// The number of cores this process may run on.
int AvailableCores();

}  // namespace kiln::cpu
