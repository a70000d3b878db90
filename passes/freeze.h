// Freezing: the deployable inference graph. Keeps only what `fetches` need, turns every Variable
// into a Constant holding its value from `variables`, sets every `training` attribute (BatchNorm,
// Dropout) to false, drops update ops, and makes the fetches the graph's outputs (named as given).
// Refuses a fetch that needs a state update (Assign*) or a variable missing from `variables` or
// of another type.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"

namespace kiln {

Result<Graph> Freeze(const Graph& graph, const std::map<std::string, Tensor>& variables,
                     const std::vector<std::string>& fetches);

// The same graph as it evaluates: every `training` attribute (BatchNorm, Dropout) false; the
// variables stay variables (e.g. for a validation session that takes a training session's values).
Result<Graph> ForInference(const Graph& graph);

}  // namespace kiln
