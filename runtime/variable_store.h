// The variables of a session: name -> current value. Values are replaced, never mutated in place,
// so a tensor read earlier in a Run keeps its value when an Assign replaces the variable (the one
// exception, an Assign that no later step and no one outside the run can observe, goes through
// FindMutable). Each value carries a version, unique in the process and new whenever the value may
// have changed (Set, SetElsewhere, FindMutable): steps that keep a derived copy of a variable (a
// matrix product's packed weights, a convolution's reordered ones, a device's copy) redo it only
// when it changes.
//
// A value may live elsewhere (SetElsewhere): a training step on a GPU leaves the new weights in
// the device's copies, and the host reads them back only when it asks for them. Find, FindMutable
// and values() read such values back first (keeping their version); where a failed read-back must
// be reported, call Materialize first: Find then answers nullptr for a value it could not read,
// and values() leaves it out. Used by one caller at a time.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "ir/status.h"
#include "ir/tensor.h"

namespace kiln {

class VariableStore {
 public:
  // Reads back a value that lives elsewhere.
  using ReadBack = std::function<Result<Tensor>()>;

  // The host value of `name` (read back first if it lives elsewhere); nullptr when there is none.
  const Tensor* Find(const std::string& name) const;
  // The caller may change the value in place, before the next run: it gets a new version (a
  // change after a run has read the value needs another FindMutable, or Set).
  Tensor* FindMutable(const std::string& name);
  void Set(const std::string& name, Tensor value);
  // Makes `name`'s value one that `holder` keeps (a token its holder recognizes: HolderOf), read by
  // `read` when the host asks for it. A new version, as Set.
  void SetElsewhere(const std::string& name, const void* holder, ReadBack read);
  // Who keeps `name`'s current value, when it is not on the host (else nullptr).
  const void* HolderOf(const std::string& name) const;
  // Whether `name` has a value, on the host or elsewhere.
  bool Has(const std::string& name) const { return versions_.count(name) > 0; }
  // Reads back `name`'s value if it lives elsewhere; the error names the variable.
  Status Materialize(const std::string& name) const;
  // The same for every variable.
  Status MaterializeAll() const;
  // The version of the current value (0 when there is none). Never 0 otherwise, and never
  // kConstantVersion.
  uint64_t Version(const std::string& name) const {
    auto it = versions_.find(name);
    return it == versions_.end() ? 0 : it->second;
  }
  // Every value on the host (read back first where one lives elsewhere).
  const std::map<std::string, Tensor>& values() const;

  // The version a plan's constant buffers have: they never change.
  static constexpr uint64_t kConstantVersion = 1;
  // A version no value has had yet, from the counter variables' versions come from (also for the
  // feeds a loop passes through unchanged: RunPlan::feed_versions).
  static uint64_t NextVersion() {
    static std::atomic<uint64_t> next{kConstantVersion + 1};
    return next++;
  }

 private:
  struct Elsewhere {
    const void* holder = nullptr;
    ReadBack read;
  };
  // Host values, and the values that live elsewhere (a name is in one of the two).
  mutable std::map<std::string, Tensor> values_;
  mutable std::map<std::string, Elsewhere> elsewhere_;
  std::map<std::string, uint64_t> versions_;
};

}  // namespace kiln
