#include "runtime/specialized_programs.h"

namespace kiln {

std::set<TensorRef> SmallFeeds(const RunPlan& plan) {
  std::set<TensorRef> feeds;
  for (const auto& [ref, tensor] : plan.feeds)
    if (tensor.num_elements() <= kMaxFeedElements && !IsContainer(tensor.dtype()))
      feeds.insert(ref);
  return feeds;
}

std::string ValuesKey(const RunPlan& plan, const std::vector<TensorRef>& feeds) {
  std::string key;
  for (const TensorRef& ref : feeds) {
    const Tensor& t = plan.feeds.at(ref);
    key += ref.ToString() + "=" + std::string(DTypeName(t.dtype())) + t.shape().ToString() + ":";
    key.append(static_cast<const char*>(t.raw_data()), static_cast<size_t>(t.byte_size()));
    key += ";";
  }
  return key;
}

}  // namespace kiln
