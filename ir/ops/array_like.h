// Op family "array", shape-following ops: their output takes the run-time shape of another
// tensor, so gradients stay correct when dimensions are unknown (-1) until run time.
//   BroadcastLike(x, like): x broadcast (numpy rules) to like's shape.
//   ReshapeLike(x, like): x's elements in like's shape (element counts must match).
#pragma once

#include "ir/builder.h"

namespace kiln {

Value BroadcastLike(At x, Value like);
Value ReshapeLike(At x, Value like);

}  // namespace kiln
