// Internal: gradient functions of op family "array" (attached in array.cc's registration), and
// the inference of the family's backward ops (declared in array_internal.h).
#pragma once

#include <map>
#include <string>

#include "ir/op_registry.h"

namespace kiln::internal {

// Op name -> gradient, for every differentiable array op (all but Shape, OneHot, Range and the
// backward ops themselves).
const std::map<std::string, GradFn>& ArrayGradients();

}  // namespace kiln::internal
