#include "runtime/reference/kernel.h"

namespace kiln::reference {
void RegisterNnKernels(KernelRegistry& r) {}
}  // namespace kiln::reference
