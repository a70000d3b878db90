// Internal: gradient functions of op family "linalg" (attached in linalg.cc's registration).
#pragma once

#include <map>
#include <string>

#include "ir/op_registry.h"

namespace kiln::internal {

// Op name -> gradient, for every differentiable linalg op (MatMul, BiasAdd, Conv2D).
const std::map<std::string, GradFn>& LinalgGradients();

}  // namespace kiln::internal
