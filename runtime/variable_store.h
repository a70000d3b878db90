// The variables of a session: name -> current value. Values are replaced, never mutated in place,
// so a tensor read earlier in a Run keeps its value when an Assign replaces the variable (the one
// exception, an Assign that no later step and no one outside the run can observe, goes through
// FindMutable). Each value carries a version, unique in the process and new whenever the value may
// have changed (Set, FindMutable): steps that keep a derived copy of a variable (a matrix
// product's packed weights, a convolution's reordered ones) redo it only when it changes.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>

#include "ir/tensor.h"

namespace kiln {

class VariableStore {
 public:
  const Tensor* Find(const std::string& name) const {
    auto it = values_.find(name);
    return it == values_.end() ? nullptr : &it->second;
  }
  // The caller may change the value in place, before the next run: it gets a new version (a
  // change after a run has read the value needs another FindMutable, or Set).
  Tensor* FindMutable(const std::string& name) {
    auto it = values_.find(name);
    if (it == values_.end()) return nullptr;
    versions_[name] = NextVersion();
    return &it->second;
  }
  void Set(const std::string& name, Tensor value) {
    values_[name] = std::move(value);
    versions_[name] = NextVersion();
  }
  // The version of the current value (0 when there is none). Never 0 otherwise, and never
  // kConstantVersion.
  uint64_t Version(const std::string& name) const {
    auto it = versions_.find(name);
    return it == versions_.end() ? 0 : it->second;
  }
  const std::map<std::string, Tensor>& values() const { return values_; }

  // The version a plan's constant buffers have: they never change.
  static constexpr uint64_t kConstantVersion = 1;

 private:
  static uint64_t NextVersion() {
    static std::atomic<uint64_t> next{kConstantVersion + 1};
    return next++;
  }

  std::map<std::string, Tensor> values_;
  std::map<std::string, uint64_t> versions_;
};

}  // namespace kiln
