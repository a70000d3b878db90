#include "runtime/cpu/plan_compiler.h"

#include <mutex>

namespace kiln {
namespace {

std::mutex& RegistryMutex() {
  static std::mutex mutex;
  return mutex;
}
std::shared_ptr<PlanCompiler>& Registered() {
  static std::shared_ptr<PlanCompiler> compiler;
  return compiler;
}

}  // namespace

std::string PlanCacheKey(const RunPlan& plan) {
  std::string key;
  for (const Node* node : plan.nodes) key += node->name + ";";
  key += "|";
  for (const auto& [ref, tensor] : plan.feeds)
    key += ref.ToString() + "=" + std::string(DTypeName(tensor.dtype())) +
           tensor.shape().ToString() + ";";
  key += "|";
  for (const TensorRef& f : plan.fetches) key += f.ToString() + ";";
  return key;
}

Result<std::vector<Tensor>> FeedsOf(const Executable& exe, const RunPlan& plan) {
  std::vector<Tensor> feeds;
  for (const TensorRef& ref : exe.feeds) {
    auto feed = plan.feeds.find(ref);
    if (feed == plan.feeds.end())
      return MakeError(ErrorCode::kInternal, "the compiled plan needs feed '", ref.ToString(), "'");
    feeds.push_back(feed->second);
  }
  return feeds;
}

std::vector<uint64_t> FeedVersionsOf(const Executable& exe, const RunPlan& plan) {
  std::vector<uint64_t> versions;
  for (const TensorRef& ref : exe.feeds) {
    auto version = plan.feed_versions.find(ref);
    versions.push_back(version == plan.feed_versions.end() ? 0 : version->second);
  }
  return versions;
}

void RegisterPlanCompiler(std::shared_ptr<PlanCompiler> compiler) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  Registered() = std::move(compiler);
}

std::shared_ptr<PlanCompiler> GetPlanCompiler() {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  return Registered();
}

}  // namespace kiln
