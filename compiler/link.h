// Turns the relocatable object of a module's kernels into an ELF shared object, the form the
// runtime loads (runtime/module/kernel_object.h), by running the system linker (`ld -shared`,
// from binutils) in a private temporary folder that is removed afterwards. The result depends on
// nothing but the symbols every process has (libm's, for the kernels' math calls).
#pragma once

#include <string>

#include "ir/status.h"

namespace kiln::compiler {

Result<std::string> LinkSharedObject(const std::string& object_bytes);

}  // namespace kiln::compiler
