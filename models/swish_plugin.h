// The builder side of the example plugin in models/swish_plugin.cc: Swish(x) adds a node of the
// plugin's op "Swish" (y = x * sigmoid(beta * x)). The plugin must be loaded first
// (kiln::LoadPlugin on libkiln_swish.so, or `kiln --plugin`); otherwise the builder records an
// "unknown op" error.
#pragma once

#include "ir/builder.h"

namespace kiln::models {

inline Value Swish(At x, double beta = 1.0) {
  if (!x.value.valid()) return Value();
  AttrMap attrs;
  attrs.Set("beta", beta);
  return x.value.builder()->AddOp1("Swish", {x.value}, std::move(attrs), x.loc);
}

}  // namespace kiln::models
