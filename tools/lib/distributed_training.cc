#include "tools/lib/distributed_training.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "passes/sync_batch_norm.h"
#include "runtime/memory_budget.h"
#include "tools/command.h"

namespace kiln::cli {
namespace {

// FNV-1a over bytes or 8-byte words: the same digest in every process.
struct Fnv {
  uint64_t value = 1469598103934665603ull;
  void Mix(uint64_t word) { value = (value ^ word) * 1099511628211ull; }
};

}  // namespace

void DeclareDistributedFlags(Flags& flags) {
  DeclareRanksFlags(flags);
  DeclareDataParallelFlags(flags);
}

void DeclareDataParallelFlags(Flags& flags) { flags.Option("bucket-size").Switch("sync-bn"); }

Result<DataParallelFlags> DataParallelFromFlags(const Flags& flags, bool data_parallel) {
  DataParallelFlags out;
  if (!data_parallel) {
    if (flags.Has("bucket-size") || flags.On("sync-bn"))
      return MakeError(ErrorCode::kInvalidArgument,
                       "--bucket-size and --sync-bn need a data-parallel run");
    return out;
  }
  if (flags.Has("bucket-size")) {
    Result<int64_t> bytes = ParseByteSize(flags.Get("bucket-size"));
    if (!bytes.ok())
      return MakeError(ErrorCode::kInvalidArgument, "--bucket-size ", bytes.error().message());
    if (*bytes <= 0)
      return MakeError(ErrorCode::kInvalidArgument, "--bucket-size must be positive");
    out.options.bucket_bytes = *bytes;
  }
  out.sync_batch_norm = flags.On("sync-bn");
  return out;
}

Status MakeDataParallel(const DataParallelFlags& flags, Graph& model, optim::Optimizer& optimizer) {
  if (flags.sync_batch_norm) KILN_RETURN_IF_ERROR(SyncBatchNorm().Run(model).status());
  optimizer = optimizer.DataParallel(flags.options);
  return OkStatus();
}

Result<Distributed> DistributedFromFlags(const Flags& flags, const std::string& backend) {
  Distributed out;
  if (!flags.Has("distributed") &&
      (flags.Has("distributed-timeout") || flags.Has("bucket-size") || flags.On("sync-bn")))
    return MakeError(ErrorCode::kInvalidArgument,
                     "--distributed-timeout, --bucket-size and --sync-bn need --distributed mpi "
                     "or nccl");
  KILN_ASSIGN_OR_RETURN(out.data_parallel, DataParallelFromFlags(flags, flags.Has("distributed")));
  KILN_ASSIGN_OR_RETURN(Ranks ranks, RanksFromFlags(flags, backend));
  out.comm = std::move(ranks.comm);
  out.on_device = ranks.on_device;
  return out;
}

Status CheckRanksAgree(Communicator& comm,
                       const std::vector<std::pair<std::string, std::string>>& facts) {
  // Each fact as a fixed-size digest, gathered from every rank; the values travel only to name
  // the first difference.
  std::vector<uint64_t> mine;
  for (const auto& [what, value] : facts) {
    Fnv digest;
    for (unsigned char c : value) digest.Mix(c);
    mine.push_back(digest.value);
  }
  const int64_t bytes = static_cast<int64_t>(mine.size() * sizeof(uint64_t));
  std::vector<uint64_t> all(mine.size() * static_cast<size_t>(comm.size()));
  KILN_RETURN_IF_ERROR(comm.AllGather(mine.data(), bytes, all.data()));
  for (size_t f = 0; f < facts.size(); ++f)
    for (int r = 1; r < comm.size(); ++r) {
      if (all[r * mine.size() + f] == all[f]) continue;
      // Rank 0's value, so that the message can show both where it is short.
      std::string root_value = facts[f].second;
      int64_t length = static_cast<int64_t>(root_value.size());
      KILN_RETURN_IF_ERROR(comm.Broadcast(&length, sizeof length, 0));
      root_value.resize(static_cast<size_t>(length));
      KILN_RETURN_IF_ERROR(comm.Broadcast(root_value.data(), length, 0));
      std::string text = "the ranks disagree: rank " + std::to_string(r) + "'s " + facts[f].first;
      if (r == comm.rank() && facts[f].second.size() <= 80 && root_value.size() <= 80)
        text += " is " + facts[f].second + ", rank 0's " + root_value;
      else
        text += " differs from rank 0's";
      return MakeError(ErrorCode::kInvalidArgument, text);
    }
  return OkStatus();
}

std::string GraphFingerprint(const Graph& graph) {
  std::string text;
  for (const Node& node : graph.nodes()) {
    text += node.name + " " + node.op;
    for (const TensorRef& in : node.inputs) text += " " + in.ToString();
    for (const std::string& c : node.control_inputs) text += " ^" + c;
    for (const TensorType& t : node.output_types) text += " -> " + t.ToString();
    for (const auto& [name, value] : node.attrs.items())
      text += " " + name + "=" + value.ToString();
    text += "\n";
  }
  return text;
}

std::set<std::string> LocalStateVariables(const Graph& graph) {
  std::set<std::string> names;
  for (const std::string& name : graph.update_ops()) {
    const Node* node = graph.FindNode(name);
    if (node && node->op.rfind("Assign", 0) == 0 && !node->inputs.empty())
      names.insert(node->inputs[0].node);
  }
  return names;
}

std::string VariablesDigest(const std::map<std::string, Tensor>& variables) {
  Fnv digest;
  for (const auto& [name, t] : variables) {
    for (unsigned char c : name) digest.Mix(c);
    const auto* bytes = static_cast<const unsigned char*>(t.raw_data());
    const int64_t n = t.byte_size();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t word;
      std::memcpy(&word, bytes + i, 8);
      digest.Mix(word);
    }
    for (; i < n; ++i) digest.Mix(bytes[i]);
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(digest.value));
  return text;
}

std::vector<int64_t> ShardOfEpoch(const std::vector<int64_t>& order, int64_t trained,
                                  int64_t global_batch, int rank, int size) {
  std::vector<int64_t> shard;
  for (int64_t begin = 0; begin < trained; begin += global_batch) {
    const int64_t n = std::min(global_batch, trained - begin);
    for (int64_t i = begin + rank * n / size; i < begin + (rank + 1) * n / size; ++i)
      shard.push_back(order[i]);
  }
  return shard;
}

}  // namespace kiln::cli
