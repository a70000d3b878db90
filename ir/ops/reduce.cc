#include "ir/ops/registration.h"
#include "ir/op_registry.h"

namespace kiln {
void RegisterReduceOps(OpRegistry& r) {}
}  // namespace kiln
