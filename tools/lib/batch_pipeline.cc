#include "tools/lib/batch_pipeline.h"

#include <algorithm>

namespace kiln::cli {

BatchPipeline::BatchPipeline(const std::vector<NamedRowSource>& sources,
                             const std::vector<int64_t>& order, int64_t examples, int64_t batch,
                             int ahead)
    : sources_(sources), order_(order), examples_(examples), batch_(batch), ahead_(ahead) {
  for (int i = 0; i < ahead_; ++i) Launch();
}

BatchPipeline::~BatchPipeline() {
  for (std::future<Result<Batch>>& f : making_) f.wait();
}

Result<Batch> BatchPipeline::Make(int64_t begin) const {
  const int64_t end = std::min(examples_, begin + batch_);
  Batch b;
  b.rows = end - begin;
  for (const auto& [name, source] : sources_) {
    Result<Tensor> rows = source->Rows(&order_, begin, end);
    if (!rows.ok()) return rows.error().WithContext("--data '" + name + "'");
    b.feeds.emplace_back(name, std::move(*rows));
  }
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

Result<std::optional<Batch>> BatchPipeline::Next() {
  std::optional<Batch> none;
  if (ahead_ == 0) {
    std::optional<int64_t> begin = TakeBegin();
    if (!begin) return none;
    KILN_ASSIGN_OR_RETURN(Batch b, Make(*begin));
    return std::optional<Batch>(std::move(b));
  }
  if (making_.empty()) return none;
  Result<Batch> b = making_.front().get();
  making_.pop_front();
  Launch();  // keep `ahead` in the making while the caller runs this one
  if (!b.ok()) return b.error();
  return std::optional<Batch>(std::move(*b));
}

}  // namespace kiln::cli
