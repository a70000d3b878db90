// DeviceVariables: the device copies of a session's (or a module's) variables, kept across runs and
// shared by every plan loaded on one device, so that a variable is uploaded when its value changed,
// not on every run (weights of an inference model: once).
//
// Contract: each variable has one device allocation of its type's bytes, made on first use. A value
// of the store is identified by its version (runtime/variable_store.h: new whenever the value may
// have changed): Upload(name, version, value) copies only when the device copy does not hold that
// version already. A device assign writes the device copy; the store then keeps the new value as
// one that lives here (VariableStore::SetElsewhere, this object as its holder), read back by
// ReadBack when the host asks for it. Used by one run at a time (the program's contract); errors
// name the variable.
#pragma once

#include <map>
#include <string>

#include "ir/tensor.h"
#include "runtime/cuda/device.h"
#include "runtime/executable.h"

namespace kiln::cuda {

// The buffers of `exe` that are variables' shared device copies, by buffer: the output of a
// variable's only variable_read step (a variable read twice in one plan, before and after an
// assign, keeps twins of its own: one copy could not hold both values), and the output of a device
// assign (device_copies.h), which overwrites the variable's copy.
std::map<int, std::string> SharedVariableBuffers(const Executable& exe);

class DeviceVariables {
 public:
  // `device` must outlive this object.
  explicit DeviceVariables(Device& device) : device_(device) {}
  ~DeviceVariables();
  DeviceVariables(const DeviceVariables&) = delete;
  DeviceVariables& operator=(const DeviceVariables&) = delete;

  // The device address of variable `name`, whose values are `bytes` long.
  Result<DevicePtr> Address(const std::string& name, int64_t bytes);
  // Whether `name` has its device allocation already.
  bool Allocated(const std::string& name) const { return entries_.count(name) > 0; }
  // Makes the device copy of `name` hold version `version` of the variable, whose host value is
  // `value`; uploads unless it holds that version already. Returns whether it uploaded.
  Result<bool> Upload(const std::string& name, uint64_t version, const Tensor& value);
  // Whether the device copy of `name` holds version `version` (never for version 0).
  bool HoldsVersion(const std::string& name, uint64_t version) const;
  // Forgets what the device copy of `name` holds (a device assign is about to overwrite it: a run
  // that fails before the new value reaches the store must not leave the next upload skipped).
  void Invalidate(const std::string& name);
  // Records that the device copy of `name` holds version `version` (a device assign wrote it).
  void Holds(const std::string& name, uint64_t version);
  // A host copy of what the device copy of `name` holds once the work issued so far is done, as a
  // tensor of `type`.
  Result<Tensor> ReadBack(const std::string& name, const TensorType& type) const;

 private:
  struct Entry {
    DevicePtr address = 0;
    int64_t bytes = 0;
    uint64_t version = 0;  // the version of the value the device copy holds (0: unknown)
  };
  Device& device_;
  std::map<std::string, Entry> entries_;
};

}  // namespace kiln::cuda
