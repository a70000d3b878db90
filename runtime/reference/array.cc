#include "runtime/reference/kernel.h"

namespace kiln::reference {
void RegisterArrayKernels(KernelRegistry& r) {}
}  // namespace kiln::reference
