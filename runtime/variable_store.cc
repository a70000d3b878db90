#include "runtime/variable_store.h"

namespace kiln {

const Tensor* VariableStore::Find(const std::string& name) const {
  if (!Materialize(name).ok()) return nullptr;
  auto it = values_.find(name);
  return it == values_.end() ? nullptr : &it->second;
}

Tensor* VariableStore::FindMutable(const std::string& name) {
  if (!Materialize(name).ok()) return nullptr;
  auto it = values_.find(name);
  if (it == values_.end()) return nullptr;
  versions_[name] = NextVersion();
  return &it->second;
}

void VariableStore::Set(const std::string& name, Tensor value) {
  elsewhere_.erase(name);
  values_[name] = std::move(value);
  versions_[name] = NextVersion();
}

void VariableStore::SetElsewhere(const std::string& name, const void* holder, ReadBack read) {
  values_.erase(name);
  elsewhere_[name] = Elsewhere{holder, std::move(read)};
  versions_[name] = NextVersion();
}

const void* VariableStore::HolderOf(const std::string& name) const {
  auto it = elsewhere_.find(name);
  return it == elsewhere_.end() ? nullptr : it->second.holder;
}

Status VariableStore::Materialize(const std::string& name) const {
  auto it = elsewhere_.find(name);
  if (it == elsewhere_.end()) return OkStatus();
  Result<Tensor> value = it->second.read();
  if (!value.ok())
    return value.error().WithContext("reading back the value of variable '" + name + "'");
  values_[name] = std::move(*value);  // the same value: its version stays
  elsewhere_.erase(it);
  return OkStatus();
}

Status VariableStore::MaterializeAll() const {
  while (!elsewhere_.empty()) KILN_RETURN_IF_ERROR(Materialize(elsewhere_.begin()->first));
  return OkStatus();
}

const std::map<std::string, Tensor>& VariableStore::values() const {
  for (auto it = elsewhere_.begin(); it != elsewhere_.end();) {
    const std::string name = (it++)->first;  // Materialize erases the entry on success
    (void)Materialize(name);
  }
  return values_;
}

}  // namespace kiln
