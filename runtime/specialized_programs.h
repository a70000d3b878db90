// The programs a compiled backend keeps for one plan (one PlanCacheKey: nodes, feeds' shapes,
// fetches), shared by the cpu and CUDA executors.
//
// The plan is compiled once for its feeds' shapes. When that fails because its shapes depend on
// values (a Range's limit, a fed Slice bound, Resize's scales: kUnimplemented), it is compiled
// again with the values of its small feeds (at most kMaxFeedElements elements) known; the compiler
// keeps the fewest the shapes need (CompiledPlan::specialized_on), and their values join the key:
// a new value compiles once more, a repeated one reuses its program (as XLA specializes on
// compile-time constant arguments), up to kMaxSpecializations values. After those, as
// torch.compile's cache_size_limit, further values run on the reference executor (one line on
// stderr says so). A plan that is not static even with its small feeds known runs on the
// reference executor (Find returns null).
#pragma once

#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "runtime/executor.h"

namespace kiln {

inline constexpr int kMaxSpecializations = 16;
inline constexpr int64_t kMaxFeedElements = 64;

// The feeds of `plan` a compiler may specialize on: those of at most kMaxFeedElements elements
// (scalars, shape vectors, scales, flags; not data).
std::set<TensorRef> SmallFeeds(const RunPlan& plan);
// The values of `feeds` in `plan`, as a key (their bytes, dtypes and shapes).
std::string ValuesKey(const RunPlan& plan, const std::vector<TensorRef>& feeds);

template <typename ProgramT>
class SpecializedPrograms {
 public:
  // Compiles the plan with the values of `known` feeds known and loads it; null when it is not
  // static. Sets `specialized_on` to the feeds the program needs the values of.
  using CompileFn = std::function<Result<std::unique_ptr<ProgramT>>(
      const std::set<TensorRef>& known, std::vector<TensorRef>* specialized_on)>;

  // The program for `plan` (whose key this object stands for) and its feeds' values, compiled
  // when there is none yet; null: the plan runs on the reference executor.
  Result<ProgramT*> Find(const RunPlan& plan, const CompileFn& compile) {
    if (!tried_) {
      tried_ = true;
      std::vector<TensorRef> none;
      KILN_ASSIGN_OR_RETURN(program_, compile({}, &none));
      const std::set<TensorRef> small = program_ ? std::set<TensorRef>{} : SmallFeeds(plan);
      if (!small.empty()) {
        std::vector<TensorRef> on;
        KILN_ASSIGN_OR_RETURN(std::unique_ptr<ProgramT> specialized, compile(small, &on));
        if (specialized && !on.empty()) {
          specialized_on_ = std::move(on);
          by_value_[ValuesKey(plan, specialized_on_)] = std::move(specialized);
        } else {
          program_ = std::move(specialized);  // (null: not static)
        }
      }
    }
    if (specialized_on_.empty()) return program_.get();
    const std::string values = ValuesKey(plan, specialized_on_);
    if (auto found = by_value_.find(values); found != by_value_.end()) return found->second.get();
    if (static_cast<int>(by_value_.size()) >= kMaxSpecializations) {
      if (!warned_)
        std::fprintf(stderr,
                     "kiln: a plan was compiled for %d values of its feed '%s'%s; further values "
                     "run on the reference executor\n",
                     kMaxSpecializations, specialized_on_[0].ToString().c_str(),
                     specialized_on_.size() > 1 ? " and others" : "");
      warned_ = true;
      return static_cast<ProgramT*>(nullptr);
    }
    const std::set<TensorRef> known(specialized_on_.begin(), specialized_on_.end());
    std::vector<TensorRef> on;
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<ProgramT> compiled, compile(known, &on));
    return by_value_.emplace(values, std::move(compiled)).first->second.get();
  }

  // Whether the plan, whatever its values, runs on the reference executor.
  bool falls_back() const { return tried_ && !program_ && specialized_on_.empty(); }

 private:
  bool tried_ = false;
  std::unique_ptr<ProgramT> program_;  // compiled for its shapes alone (or null)
  // Compiled for the values of these feeds: the programs by those values (null: that value's
  // plan runs on the reference executor).
  std::vector<TensorRef> specialized_on_;
  std::map<std::string, std::unique_ptr<ProgramT>> by_value_;
  bool warned_ = false;  // that further values run on the reference executor
};

// The program of `cache` for `plan` (compiled by `compile` when there is none), counting in
// `fallbacks` each new plan that falls back; null: the plan runs on the reference executor. A
// compilation error leaves no entry behind (the next run tries again and fails the same way).
template <typename ProgramT>
Result<ProgramT*> FindProgram(std::map<std::string, SpecializedPrograms<ProgramT>>& cache,
                              const std::string& key, const RunPlan& plan,
                              const typename SpecializedPrograms<ProgramT>::CompileFn& compile,
                              int& fallbacks) {
  auto [entry, inserted] = cache.try_emplace(key);
  Result<ProgramT*> found = entry->second.Find(plan, compile);
  if (!found.ok()) {
    if (inserted) cache.erase(entry);
    return found.error();
  }
  if (inserted && entry->second.falls_back()) ++fallbacks;
  return found;
}

}  // namespace kiln
