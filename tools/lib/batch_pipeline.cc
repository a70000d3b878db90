#include "tools/lib/batch_pipeline.h"

#include <algorithm>

#include "tools/lib/batch_rows.h"

namespace kiln::cli {

BatchPipeline::BatchPipeline(const std::vector<std::pair<std::string, Tensor>>& arrays,
                             const std::vector<int64_t>& order, int64_t examples, int64_t batch,
                             int ahead)
    : arrays_(arrays), order_(order), examples_(examples), batch_(batch), ahead_(ahead) {
  for (int i = 0; i < ahead_; ++i) Launch();
}

BatchPipeline::~BatchPipeline() {
  for (std::future<Batch>& f : making_) f.wait();
}

Batch BatchPipeline::Make(int64_t begin) const {
  const int64_t end = std::min(examples_, begin + batch_);
  Batch b;
  b.rows = end - begin;
  for (const auto& [name, t] : arrays_)
    b.feeds.emplace_back(name, BatchRows(t, &order_, begin, end));
  return b;
}

std::optional<int64_t> BatchPipeline::TakeBegin() {
  if (next_begin_ >= examples_) return std::nullopt;
  const int64_t begin = next_begin_;
  next_begin_ += batch_;
  return begin;
}

void BatchPipeline::Launch() {
  if (std::optional<int64_t> begin = TakeBegin())
    making_.push_back(std::async(std::launch::async, [this, b = *begin] { return Make(b); }));
}

std::optional<Batch> BatchPipeline::Next() {
  if (ahead_ == 0) {
    std::optional<int64_t> begin = TakeBegin();
    if (!begin) return std::nullopt;
    return Make(*begin);
  }
  if (making_.empty()) return std::nullopt;
  Batch b = making_.front().get();
  making_.pop_front();
  Launch();  // keep `ahead` in the making while the caller runs this one
  return b;
}

}  // namespace kiln::cli
