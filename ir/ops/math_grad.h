// Internal: gradient functions of op family "math" (attached in math.cc's registration).
#pragma once

#include <map>
#include <string>

#include "ir/op_registry.h"

namespace kiln::internal {

// Op name -> gradient, for every differentiable math op.
const std::map<std::string, GradFn>& MathGradients();

}  // namespace kiln::internal
