#include "runtime/cuda/device_variables.h"

#include <vector>

#include "runtime/cuda/device_copies.h"

namespace kiln::cuda {

std::map<int, std::string> SharedVariableBuffers(const Executable& exe) {
  std::map<std::string, std::vector<int>> reads;
  for (const Step& step : exe.steps)
    if (step.kind == Step::Kind::kLibrary && step.callee == "variable_read" &&
        step.outputs.size() == 1)
      reads[step.node.name].push_back(step.outputs[0]);
  std::map<int, std::string> shared;
  for (const auto& [name, buffers] : reads)
    if (buffers.size() == 1) shared[buffers[0]] = name;
  for (const Step& step : exe.steps)
    if (step.on_device && IsDeviceAssign(step, exe))
      shared[step.outputs[0]] = step.node.inputs[0].node;
  return shared;
}

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

void DeviceVariables::Invalidate(const std::string& name) { Holds(name, 0); }

void DeviceVariables::Holds(const std::string& name, uint64_t version) {
  auto it = entries_.find(name);
  if (it != entries_.end()) it->second.version = version;
}

bool DeviceVariables::HoldsVersion(const std::string& name, uint64_t version) const {
  auto it = entries_.find(name);
  return version != 0 && it != entries_.end() && it->second.version == version;
}

Result<bool> DeviceVariables::Upload(const std::string& name, uint64_t version,
                                     const Tensor& value) {
  auto it = entries_.find(name);
  if (it == entries_.end() || it->second.bytes != value.byte_size())
    return MakeError(ErrorCode::kInternal, "variable '", name, "' (", value.byte_size(),
                     " bytes) has no device copy of that size");
  Entry& entry = it->second;
  if (HoldsVersion(name, version)) return false;
  entry.version = 0;
  Status copied = device_.ToDevice(entry.address, value.raw_data(), entry.bytes);
  if (!copied.ok()) return copied.error().WithContext("uploading variable '" + name + "'");
  entry.version = version;
  return true;
}

Result<Tensor> DeviceVariables::ReadBack(const std::string& name, const TensorType& type) const {
  auto it = entries_.find(name);
  KILN_ASSIGN_OR_RETURN(Tensor value, Tensor::Create(type.dtype, type.shape));
  if (it == entries_.end() || it->second.bytes != value.byte_size())
    return MakeError(ErrorCode::kInternal, "variable '", name, "' (", value.byte_size(),
                     " bytes) has no device copy of that size");
  Status copied = device_.ToHost(value.raw_data(), it->second.address, it->second.bytes);
  if (!copied.ok()) return copied.error().WithContext("reading back variable '" + name + "'");
  return value;
}

}  // namespace kiln::cuda
