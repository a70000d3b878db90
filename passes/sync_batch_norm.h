// sync-batch-norm: training-mode BatchNorm over the whole global batch of a data-parallel run
// (PyTorch's SyncBatchNorm, `kiln train --sync-bn`), instead of over each rank's shard.
//
// Each BatchNorm node in training mode becomes, per channel (axis 1, the other axes reduced):
//   mean = AllReduce(mean(x), "mean")                 the global batch's mean
//   var  = AllReduce(mean((x - mean)^2), "mean")      its biased variance, about the global mean
//   (y, mean, var) = BatchNorm(x, scale, bias, mean, var) in inference mode
// (nodes "<bn>/sync/..."), so that outputs 1 and 2, which the running averages read, are the
// global statistics, and the gradient reaches every rank's x through both all-reduces
// (ir/ops/collective.h: their gradients follow the data-parallel convention, so the result is the
// global batch's gradient also for shards of different sizes). Outside a data-parallel run (no
// communicator) an AllReduce is its input and the graph computes what BatchNorm did. Two
// all-reduces of C values each per BatchNorm, forward and backward: each rank's mean first, then
// the squares about it, which keeps the variance as exact as one process's (E[x²] - mean² would
// lose digits where the mean is large against the spread).
//
// Run on the forward graph before it is differentiated (passes/autodiff.h). Every replaced
// BatchNorm keeps its name for outputs, which now come from "<bn>/sync/norm".
#pragma once

#include "passes/pass.h"

namespace kiln {

class SyncBatchNorm : public Pass {
 public:
  std::string name() const override { return "sync-batch-norm"; }
  Result<bool> Run(Graph& graph) override;
};

}  // namespace kiln
