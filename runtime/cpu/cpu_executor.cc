#include "runtime/cpu/cpu_executor.h"

#include <sched.h>

#include <cstdio>
#include <thread>

#include "runtime/cpu/plan_compiler.h"

namespace kiln::cpu {

int AvailableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
  return std::max(1u, std::thread::hardware_concurrency());
}

CpuExecutor::CpuExecutor(int threads, int64_t memory_limit)
    : threads_(threads > 0 ? threads : AvailableCores()),
      memory_limit_(memory_limit),
      fallback_(memory_limit) {}

namespace {

// Feeds a plan's shapes may depend on: tensors of at most 64 elements (scalars and shape vectors,
// Resize's scales, a training-mode flag; not data). The compiler keeps only those it needs.
std::set<TensorRef> SmallFeeds(const RunPlan& plan) {
  std::set<TensorRef> feeds;
  for (const auto& [ref, tensor] : plan.feeds)
    if (tensor.num_elements() <= 64) feeds.insert(ref);
  return feeds;
}

// The values of `feeds` in `plan`, as a cache key (their bytes: -0.0 and 0.0 are two values).
std::string ValuesKey(const RunPlan& plan, const std::vector<TensorRef>& feeds) {
  std::string key;
  for (const TensorRef& ref : feeds) {
    const Tensor& t = plan.feeds.at(ref);
    key += ref.ToString() + "=" + std::string(DTypeName(t.dtype())) + t.shape().ToString() + ":";
    key.append(static_cast<const char*>(t.raw_data()), static_cast<size_t>(t.byte_size()));
    key += ";";
  }
  return key;
}

}  // namespace

Result<std::unique_ptr<Program>> CpuExecutor::CompileAndLoad(
    const RunPlan& plan, const std::set<TensorRef>& known, VariableStore& variables,
    std::vector<TensorRef>* specialized_on) {
  std::shared_ptr<PlanCompiler> compiler = GetPlanCompiler();
  if (!compiler)
    return MakeError(ErrorCode::kUnimplemented,
                     "the cpu backend needs the compiler, which this program does not link "
                     "(link kiln_jit, or use backend \"reference\")");
  CompileOptions options{threads_};
  options.known_feeds = known;
  Result<CompiledPlan> compiled = compiler->Compile(plan, options);
  if (!compiled.ok()) {
    if (compiled.error().code() != ErrorCode::kUnimplemented) return compiled.error();
    ++fallbacks_;  // not static: run it on the reference executor
    return std::unique_ptr<Program>();
  }
  if (specialized_on) *specialized_on = compiled->specialized_on;
  ++compiled_;
  return Program::Load(std::move(*compiled), threads_, memory_limit_, &variables);
}

Result<std::vector<Tensor>> CpuExecutor::Execute(const RunPlan& plan, VariableStore& variables) {
  std::string key = PlanCacheKey(plan);
  auto it = cache_.find(key);
  if (it == cache_.end()) {
    Entry entry;
    KILN_ASSIGN_OR_RETURN(entry.program, CompileAndLoad(plan, {}, variables, nullptr));
    const std::set<TensorRef> candidates = entry.program ? std::set<TensorRef>{} : SmallFeeds(plan);
    if (!candidates.empty()) {
      --fallbacks_;  // counted again below if it is not static for these values either
      std::vector<TensorRef> on;
      KILN_ASSIGN_OR_RETURN(std::unique_ptr<Program> specialized,
                            CompileAndLoad(plan, candidates, variables, &on));
      if (specialized && !on.empty()) {
        entry.specialized_on = std::move(on);
        entry.by_value[ValuesKey(plan, entry.specialized_on)] = std::move(specialized);
      } else {
        entry.program = std::move(specialized);  // (null: not static)
      }
    }
    it = cache_.emplace(std::move(key), std::move(entry)).first;
  }
  Entry& entry = it->second;
  Program* program = entry.program.get();
  if (!entry.specialized_on.empty()) {
    const std::string values = ValuesKey(plan, entry.specialized_on);
    auto found = entry.by_value.find(values);
    if (found != entry.by_value.end()) {
      program = found->second.get();
    } else if (static_cast<int>(entry.by_value.size()) >= kMaxSpecializations) {
      if (!entry.warned)
        std::fprintf(stderr,
                     "kiln: a plan was compiled for %d values of its feed '%s'%s; further values "
                     "run on the reference executor\n",
                     kMaxSpecializations, entry.specialized_on[0].ToString().c_str(),
                     entry.specialized_on.size() > 1 ? " and others" : "");
      entry.warned = true;
      program = nullptr;
    } else {
      std::set<TensorRef> known(entry.specialized_on.begin(), entry.specialized_on.end());
      KILN_ASSIGN_OR_RETURN(std::unique_ptr<Program> compiled,
                            CompileAndLoad(plan, known, variables, nullptr));
      program = entry.by_value.emplace(values, std::move(compiled)).first->second.get();
    }
  }
  if (!program) return fallback_.Execute(plan, variables);
  KILN_ASSIGN_OR_RETURN(std::vector<Tensor> feeds, FeedsOf(program->executable(), plan));
  return program->Run(feeds, variables, counters_);
}

}  // namespace kiln::cpu
