// Rewrites every floating-point dtype in a graph (dtype attributes such as Placeholder's,
// Variable's and Cast's `to`, and float tensor attributes such as Constant values) to f64, so a
// model can be evaluated in double precision, e.g. for finite-difference gradient checks. The
// bodies of control-flow ops (graph attributes) are promoted too.
#pragma once

#include "ir/graph.h"
#include "ir/status.h"

namespace kiln {

// The promoted graph, verified.
Result<Graph> PromoteFloatsToF64(const Graph& graph);

}  // namespace kiln
