// kiln train's data-parallel side (--distributed mpi|nccl, under mpirun): every rank runs the same
// command; each reads only its shard of every global batch, the gradients are all-reduced
// (passes/data_parallel.h) and rank 0 alone prints, logs and writes checkpoints. The ranks' flags
// are tools/distributed_flags.h's (--distributed, --distributed-timeout); the data-parallel
// graph's:
//   --bucket-size SIZE          gradients travel in all-reduces of about SIZE bytes (4M)
//   --sync-bn                   BatchNorm in training normalizes over the global batch, not each
//                               rank's shard (passes/sync_batch_norm.h)
// (kiln compile --train --data-parallel takes these two as well.)
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"
#include "passes/data_parallel.h"
#include "passes/optim.h"
#include "runtime/distributed/communicator.h"
#include "tools/distributed_flags.h"
#include "tools/flags.h"

namespace kiln::cli {

// The ranks' flags and the data-parallel graph's (kiln train).
void DeclareDistributedFlags(Flags& flags);
// The data-parallel graph's alone (kiln compile).
void DeclareDataParallelFlags(Flags& flags);

struct DataParallelFlags {
  DataParallelOptions options;   // --bucket-size
  bool sync_batch_norm = false;  // --sync-bn: passes/sync_batch_norm.h on the model
};
// The graph's flags for a data-parallel run (`data_parallel`); without one, kInvalidArgument where
// any is given.
Result<DataParallelFlags> DataParallelFromFlags(const Flags& flags, bool data_parallel);
// kiln compile and inspect with --train --data-parallel: --sync-bn rewrites the model's training
// BatchNorms (before it is differentiated), and the optimizer all-reduces its gradients.
Status MakeDataParallel(const DataParallelFlags& flags, Graph& model, optim::Optimizer& optimizer);

// The communicator --distributed asks for (null without it), and the data-parallel flags.
// kInvalidArgument as RanksFromFlags and DataParallelFromFlags say (--bucket-size, --sync-bn and
// --distributed-timeout need --distributed); the communicator's own error where MPI cannot start.
struct Distributed {
  std::shared_ptr<Communicator> comm;
  DataParallelFlags data_parallel;
  bool on_device = false;  // --distributed nccl: the gradients' all-reduces run on the device
};
Result<Distributed> DistributedFromFlags(const Flags& flags, const std::string& backend);

// Fails on every rank, naming the first fact and the rank where it differs from rank 0's
// ("rank 1's --batch is 32, rank 0's 64"), unless all ranks agree on every fact.
Status CheckRanksAgree(Communicator& comm,
                       const std::vector<std::pair<std::string, std::string>>& facts);

// A fingerprint of what the graph computes (nodes, ops, inputs, attributes, types), the same in
// every process for the same graph.
std::string GraphFingerprint(const Graph& graph);

// The variables the graph's update ops assign (BatchNorm's running statistics): each rank's
// follow its own shards, so rank 0's are given to all after every epoch (as PyTorch DDP's
// broadcast_buffers), and rank 0's are what checkpoints hold.
std::set<std::string> LocalStateVariables(const Graph& graph);

// A digest of every variable's name and bytes: replicas that agree bit for bit have the same.
std::string VariablesDigest(const std::map<std::string, Tensor>& variables);

// This rank's rows of one epoch, in `order`: of each global batch of `global_batch` rows out of
// the first `trained`, its slice [r * n / size, (r + 1) * n / size) (n: the batch's rows). Each
// shard of a full batch has global_batch / size rows (global_batch divides by size).
std::vector<int64_t> ShardOfEpoch(const std::vector<int64_t>& order, int64_t trained,
                                  int64_t global_batch, int rank, int size);

}  // namespace kiln::cli
