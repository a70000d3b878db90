// Data-parallel training (as PyTorch DDP and Horovod do it): every rank holds a replica of the
// model and runs its shard of each global batch; before the update, each gradient is replaced by
// its mean over the global batch, an all-reduce over the ranks (ir/ops/collective.h, run by the
// session's communicator: SessionOptions::distributed). Optimizers put it in where
// optim::Options::data_parallel asks, right after differentiation, so that everything after it
// (loss scaling's finite check, clipping's global norm, the updates) sees the same values on every
// rank and the replicas stay equal.
//
// Gradients travel in buckets, one AllReduce node each (nodes "data_parallel/all_reduce_K"):
// filled in the order backward produces the gradients (the order of their producing nodes, which
// autodiff adds from the loss back), one dtype per bucket, closed once a bucket holds
// bucket_bytes (a larger gradient travels alone). Fewer, larger messages amortize each
// collective's latency; the first buckets are ready while the rest of backward still runs.
// BatchNorm's batch statistics stay each rank's own, unless passes/sync_batch_norm.h made them the
// global batch's.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/builder.h"

namespace kiln {

struct DataParallelOptions {
  int64_t bucket_bytes = int64_t{4} << 20;
};

// `grads`, each replaced by its all-reduced mean (Σ_r share_r · g_r), in the same order.
std::vector<Value> AllReduceGradients(const std::vector<Value>& grads,
                                      const DataParallelOptions& options = {});

}  // namespace kiln
