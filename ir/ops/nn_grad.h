// Internal: gradient functions of op family "nn" (attached in nn.cc's registration).
#pragma once

#include <map>
#include <string>

#include "ir/op_registry.h"

namespace kiln::internal {

// Op name -> gradient, for every differentiable nn op (the pooling backward ops have none).
const std::map<std::string, GradFn>& NnGradients();

}  // namespace kiln::internal
