#include "passes/data_parallel.h"

#include <algorithm>
#include <numeric>

#include "ir/ops/collective.h"

namespace kiln {
namespace {

int64_t BytesOf(const Value& v) {
  int64_t elements = 1;
  for (int64_t d : v.type().shape.dims()) elements *= std::max<int64_t>(d, 1);
  return elements * DTypeSize(v.dtype());
}

}  // namespace

std::vector<Value> AllReduceGradients(const std::vector<Value>& grads,
                                      const DataParallelOptions& options) {
  std::vector<Value> reduced = grads;
  std::vector<size_t> order;  // the gradients to reduce, in the order backward produces them
  for (size_t i = 0; i < grads.size(); ++i)
    if (grads[i].valid()) order.push_back(i);
  if (order.empty()) return reduced;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return grads[a].node_index() < grads[b].node_index();
  });
  GraphBuilder& g = *grads[order[0]].builder();
  // Open buckets by dtype: the gradients in each and their bytes.
  struct Bucket {
    DType dtype;
    std::vector<size_t> members;
    int64_t bytes = 0;
  };
  std::vector<Bucket> open;
  auto close = [&](Bucket& bucket) {
    std::vector<Value> xs;
    for (size_t i : bucket.members) xs.push_back(grads[i]);
    std::vector<Value> ys = AllReduce(xs, "mean");
    if (!ys.empty() && ys[0].valid()) ys[0].Named(g.UniqueName("data_parallel/all_reduce"));
    for (size_t k = 0; k < bucket.members.size(); ++k) reduced[bucket.members[k]] = ys[k];
    bucket.members.clear();
    bucket.bytes = 0;
  };
  for (size_t i : order) {
    const DType dtype = grads[i].dtype();
    auto it =
        std::find_if(open.begin(), open.end(), [&](const Bucket& b) { return b.dtype == dtype; });
    if (it == open.end()) it = open.insert(open.end(), Bucket{dtype, {}, 0});
    it->members.push_back(i);
    it->bytes += BytesOf(grads[i]);
    if (it->bytes >= options.bucket_bytes) close(*it);
  }
  for (Bucket& bucket : open)
    if (!bucket.members.empty()) close(bucket);
  return reduced;
}

}  // namespace kiln
