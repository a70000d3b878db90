// The variables of a session: name -> current value. Values are replaced, never mutated in place,
// so a tensor read earlier in a Run keeps its value when an Assign replaces the variable.
#pragma once

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
  Tensor* FindMutable(const std::string& name) {
    auto it = values_.find(name);
    return it == values_.end() ? nullptr : &it->second;
  }
  void Set(const std::string& name, Tensor value) { values_[name] = std::move(value); }
  const std::map<std::string, Tensor>& values() const { return values_; }

 private:
  std::map<std::string, Tensor> values_;
};

}  // namespace kiln
