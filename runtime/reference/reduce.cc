#include "runtime/reference/kernel.h"

namespace kiln::reference {
void RegisterReduceKernels(KernelRegistry& r) {}
}  // namespace kiln::reference
