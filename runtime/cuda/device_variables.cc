#include "runtime/cuda/device_variables.h"

namespace kiln::cuda {

DeviceVariables::~DeviceVariables() {
  for (auto& [name, entry] : entries_) device_.Free(entry.address);
}

Result<DevicePtr> DeviceVariables::Address(const std::string& name, int64_t bytes) {
  auto it = entries_.find(name);
  if (it != entries_.end()) {
    if (it->second.bytes != bytes)
      return MakeError(ErrorCode::kInternal, "variable '", name, "' is ", bytes,
                       " bytes in this plan but ", it->second.bytes, " on the device");
    return it->second.address;
  }
  Result<DevicePtr> address = device_.Allocate(bytes);
  if (!address.ok())
    return address.error().WithContext("the device copy of variable '" + name + "'");
  Entry& entry = entries_[name];
  entry.address = *address;
  entry.bytes = bytes;
  return *address;
}

void DeviceVariables::Invalidate(const std::string& name) {
  auto it = entries_.find(name);
  if (it == entries_.end()) return;
  it->second.held = Tensor();
  it->second.valid = false;
}

void DeviceVariables::Holds(const std::string& name, const Tensor& value) {
  auto it = entries_.find(name);
  if (it == entries_.end()) return;
  it->second.held = value;
  it->second.valid = true;
}

Result<bool> DeviceVariables::Upload(const std::string& name, const Tensor& value) {
  auto it = entries_.find(name);
  if (it == entries_.end() || it->second.bytes != value.byte_size())
    return MakeError(ErrorCode::kInternal, "variable '", name, "' (", value.byte_size(),
                     " bytes) has no device copy of that size");
  Entry& entry = it->second;
  if (entry.valid && entry.held.raw_data() == value.raw_data()) return false;
  entry.valid = false;
  Status copied = device_.ToDevice(entry.address, value.raw_data(), entry.bytes);
  if (!copied.ok()) return copied.error().WithContext("uploading variable '" + name + "'");
  entry.held = value;
  entry.valid = true;
  return true;
}

}  // namespace kiln::cuda
