#include "runtime/reference/kernel.h"

namespace kiln::reference {
void RegisterLinalgKernels(KernelRegistry& r) {}
}  // namespace kiln::reference
