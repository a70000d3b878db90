// The kernels of a loaded module: the ELF shared object `kiln compile` embedded in the .kmod,
// opened from memory (memfd + dlopen, nothing written to disk) with its symbols kept local to it.
// Find(symbol) gives the packed entry point of a kernel (the `_mlir_<symbol>` wrapper, see
// compiler/kernel_spec.h). The object is closed when the last reference goes.
#pragma once

#include <memory>
#include <string>

#include "ir/status.h"
#include "runtime/cpu/plan_compiler.h"

namespace kiln {

// `origin` names the module in errors. Fails (never crashes) on bytes that are not a loadable
// shared object for this host, or one needing symbols this process does not have.
Result<std::shared_ptr<const KernelLibrary>> OpenKernelObject(const std::string& bytes,
                                                              const std::string& origin);

}  // namespace kiln
