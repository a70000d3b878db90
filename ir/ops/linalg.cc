#include "ir/ops/registration.h"
#include "ir/op_registry.h"

namespace kiln {
void RegisterLinalgOps(OpRegistry& r) {}
}  // namespace kiln
