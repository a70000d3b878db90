// Op family "collective": communication between the processes (ranks) of a data-parallel run, as
// the session's communicator does it (runtime/distributed/communicator.h); passes/data_parallel.h
// puts them into training graphs.
//
// AllReduce(xs, reduction): each output is its input reduced over the ranks, element-wise;
// inputs of one dtype (f32, f64, bf16 or f16; 16-bit values are summed in f32), any shapes, one
// message for all of them (a "bucket").
//   "sum"   Σ_r x_r
//   "mean"  Σ_r share_r · x_r, where share_r is rank r's share of the global batch (1 / ranks
//           unless the runner sets it: Communicator::set_share): per-rank mean gradients combine
//           into the global batch's mean gradient also when the shards differ in size.
//   "mean_over_share"  (Σ_r share_r · x_r) / share_this_rank.
// Every rank gets the same bits ("mean_over_share": the same mean). Outside a data-parallel run
// (no communicator: one rank, share 1) each output is its input.
//
// Gradients follow the data-parallel convention: the objective is Σ_r share_r · loss_r (the
// global batch's mean loss), each rank differentiates its own loss_r, and the parameters'
// gradients are then combined by "mean" (passes/data_parallel.h). So the gradient a rank passes
// back through an AllReduce must be what, weighted by its share, gives the objective's derivative:
// that of "mean" is "mean" of the incoming gradients, of "sum" is "mean_over_share", and of
// "mean_over_share" is "sum". (With equal shares these equal the plain derivatives of the summed
// losses.) passes/sync_batch_norm.h differentiates through them.
#pragma once

#include <string>
#include <vector>

#include "ir/builder.h"

namespace kiln {

std::vector<Value> AllReduce(const std::vector<Value>& xs, const std::string& reduction = "mean",
                             SourceLocation loc = SourceLocation::current());

// Whether `node`'s op is a collective (OpDef::collective: AllReduce, or a plugin's).
bool IsCollective(const Node& node);

}  // namespace kiln
