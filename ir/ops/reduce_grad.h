// Internal: gradient functions of op family "reduce" (attached in reduce.cc's registration).
#pragma once

#include <map>
#include <string>

#include "ir/op_registry.h"

namespace kiln::internal {

// Op name -> gradient, for every differentiable reduce op (ArgMax/ArgMin have none).
const std::map<std::string, GradFn>& ReduceGradients();

}  // namespace kiln::internal
