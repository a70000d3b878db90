// Cubins: PTX assembled ahead of time for one GPU architecture by the CUDA toolkit's nvJitLink
// (libnvJitLink.so.13, opened with dlopen on first use, from the loader's path or
// /usr/local/cuda/lib64), so that a GPU of that architecture loads machine code instead of
// JIT-compiling PTX at every load. Modules carry a cubin beside the PTX of each architecture
// (compiler/aot.h); the runtime picks the cubin a GPU can run, else the PTX (runtime/module).
//
// Contract: AssembleCubin(ptx, sm) returns an ELF image for sm_<sm>; errors are
// kFailedPrecondition when nvJitLink cannot be loaded (naming the library), kInternal with
// nvJitLink's log when the PTX does not assemble. Thread-safe.
#pragma once

#include <string>

#include "ir/status.h"

namespace kiln::compiler {

Result<std::string> AssembleCubin(const std::string& ptx, int sm);

}  // namespace kiln::compiler
