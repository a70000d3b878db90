#include "ir/ops/registration.h"
#include "ir/op_registry.h"

namespace kiln {
void RegisterArrayOps(OpRegistry& r) {}
}  // namespace kiln
