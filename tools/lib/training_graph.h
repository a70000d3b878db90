// A model plus an optimizer's update, as `kiln train`, `kiln bench --train` and
// `kiln compile --train` build it: the gradient of `loss` (passes/autodiff) and the optimizer's
// Minimize target (passes/optim) are added to the graph. Running `update` once is one training
// step; fetching `loss` with it gives the loss before the update.
#pragma once

#include <optional>
#include <string>

#include "ir/graph.h"
#include "ir/status.h"
#include "passes/optim.h"
#include "tools/flags.h"

namespace kiln {

struct TrainingGraph {
  Graph graph;
  std::string loss;    // the loss tensor, "node:port"
  std::string update;  // the update's node name (a target)
};

// The --train, --loss NAME, --optimizer NAME (default sgd) and --lr F (default 0.01) flags that
// `kiln bench` and `kiln compile` share: the optimizer with --train, nullopt without it; an error
// (for a usage message) for --train without --loss, --loss/--optimizer/--lr without --train, a
// non-positive or malformed --lr, or an unknown optimizer. With --precision fp16 the optimizer
// scales the loss dynamically (passes/optim.h).
Result<std::optional<optim::Optimizer>> OptimizerFromFlags(const cli::Flags& flags);

// Fails when `loss` is not a tensor of the graph or cannot be differentiated.
Result<TrainingGraph> AddOptimizer(Graph graph, const std::string& loss,
                                   optim::Optimizer optimizer);

}  // namespace kiln
