#include "ir/ops/registration.h"
#include "ir/op_registry.h"

namespace kiln {
void RegisterNnOps(OpRegistry& r) {}
}  // namespace kiln
