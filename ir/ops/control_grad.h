// Internal: the gradient functions of op family "control" (attached in control.cc's
// registration; see control.h for what they build).
#pragma once

#include "ir/op_registry.h"

namespace kiln::internal {

Status IfGradient(GradContext& ctx);
Status WhileGradient(GradContext& ctx);

}  // namespace kiln::internal
