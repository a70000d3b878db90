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
  std::string loss;           // the loss tensor, "node:port"
  std::string update;         // the update's node name (a target)
  std::string learning_rate;  // the learning rate the next step uses (a scalar f32 to fetch)
};

// The optimizer's flags, shared by kiln train and by kiln bench, compile and inspect with --train:
//   --optimizer NAME           sgd, momentum, adam, adamw
//   --lr F                     the learning rate (> 0)
//   --clip-norm X              scale the gradients to a global norm of at most X
//   --weight-decay X           L2 (sgd, momentum, adam) or decoupled (adamw) decay
//   --lr-schedule S            constant, step, cosine, linear-warmup-cosine (passes/optim.h)
//   --warmup-steps N, --lr-step-size N, --lr-gamma G, --total-steps N: the schedule's parameters
void DeclareOptimizerFlags(cli::Flags& flags);

// The optimizer those flags ask for (defaults `optimizer` and `lr`); `total_steps` is the cosine
// schedules' length when --total-steps is not given (kiln train's epochs times batches; 0: none).
// With --precision fp16 the optimizer scales the loss dynamically. kInvalidArgument (for a usage
// message) for a malformed or out-of-range value, an unknown optimizer or schedule, or a
// schedule's missing parameter.
Result<optim::Optimizer> OptimizerFromFlags(const cli::Flags& flags, const std::string& optimizer,
                                            double lr, int64_t total_steps = 0);

// kiln bench, compile and inspect: with --train (and --loss NAME), the optimizer of the flags
// above (default sgd, lr 0.01); without it nullopt, and an error for --loss or any optimizer flag.
Result<std::optional<optim::Optimizer>> OptimizerFromFlags(const cli::Flags& flags);

// Fails when `loss` is not a tensor of the graph or cannot be differentiated.
Result<TrainingGraph> AddOptimizer(Graph graph, const std::string& loss,
                                   optim::Optimizer optimizer);

}  // namespace kiln
