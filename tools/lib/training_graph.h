// A model plus an optimizer's update, as `kiln train`, `kiln bench --train` and
// `kiln compile --train` build it: the gradient of `loss` (passes/autodiff) and the optimizer's
// Minimize target (passes/optim) are added to the graph. Running `update` once is one training
// step; fetching `loss` with it gives the loss before the update.
#pragma once

#include <string>

#include "ir/graph.h"
#include "ir/status.h"
#include "passes/optim.h"

namespace kiln {

struct TrainingGraph {
  Graph graph;
  std::string loss;    // the loss tensor, "node:port"
  std::string update;  // the update's node name (a target)
};

// Fails when `loss` is not a tensor of the graph or cannot be differentiated.
Result<TrainingGraph> AddOptimizer(Graph graph, const std::string& loss,
                                   optim::Optimizer optimizer);

}  // namespace kiln
