// DeviceVariables: the device copies of a session's (or a module's) variables, kept across runs and
// shared by every plan loaded on one device, so that a variable is uploaded when its value changed,
// not on every run (weights of an inference model: once).
//
// Contract: each variable has one device allocation of its type's bytes, made on first use. The
// store's values are replaced, never mutated where anyone else holds them (runtime/
// variable_store.h, the "assign" step), so a value is identified by its storage: Upload(name,
// value) copies only when the device copy does not already hold `value`'s storage (it keeps that
// storage alive, which also keeps an in-place assign from changing it behind the device's back).
// Used by one run at a time (the program's contract); errors name the variable.
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
  // Makes the device copy of `name` hold `value` (whose storage the caller bound the variable's
  // buffer to); uploads unless it already does. Returns whether it uploaded.
  Result<bool> Upload(const std::string& name, const Tensor& value);
  // Forgets what the device copy of `name` holds (a device assign is about to overwrite it: a run
  // that fails before the new value reaches the store must not leave the next upload skipped).
  void Invalidate(const std::string& name);
  // Records that the device copy of `name` holds `value` (a device assign wrote it, and `value`
  // was read back from it).
  void Holds(const std::string& name, const Tensor& value);

 private:
  struct Entry {
    DevicePtr address = 0;
    int64_t bytes = 0;
    Tensor held;  // the value the device copy holds (none: unknown)
    bool valid = false;
  };
  Device& device_;
  std::map<std::string, Entry> entries_;
};

}  // namespace kiln::cuda
