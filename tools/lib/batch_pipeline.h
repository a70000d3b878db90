// The input pipeline of kiln train: the mini-batches of one epoch (rows of every --data source,
// in the epoch's shuffled order: tools/lib/row_source.h, which reads shards and CSV files row by
// row), each made on a thread of its own while the caller runs the steps before it. At most `ahead`
// batches are ready or in the making (a bounded queue, so memory stays at `ahead` batches); `ahead`
// 0 slices each batch when asked, on the caller's thread. The sources and the order must outlive
// the pipeline; the destructor waits for the batches in the making. A batch that cannot be read (a
// CSV field that is no number) is Next's error.
#pragma once

#include <cstdint>
#include <deque>
#include <future>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/tensor.h"
#include "runtime/session.h"
#include "tools/lib/row_source.h"

namespace kiln::cli {

struct Batch {
  FeedList feeds;    // one slice per array, by its name
  int64_t rows = 0;  // examples in it
};

class BatchPipeline {
 public:
  // The batches of rows [0, examples) in `order`, `batch` rows each (the last may have fewer).
  BatchPipeline(const std::vector<NamedRowSource>& sources, const std::vector<int64_t>& order,
                int64_t examples, int64_t batch, int ahead);
  ~BatchPipeline();
  BatchPipeline(const BatchPipeline&) = delete;
  BatchPipeline& operator=(const BatchPipeline&) = delete;

  // The next batch, or nullopt after the last.
  Result<std::optional<Batch>> Next();

 private:
  Result<Batch> Make(int64_t begin) const;
  std::optional<int64_t> TakeBegin();  // the next batch's first row, nullopt past the last
  void Launch();                       // starts the next batch not yet started, if any

  const std::vector<NamedRowSource>& sources_;
  const std::vector<int64_t>& order_;
  const int64_t examples_, batch_;
  const int ahead_;
  int64_t next_begin_ = 0;                         // the first row of the next batch to start
  std::deque<std::future<Result<Batch>>> making_;  // started, in order
};

}  // namespace kiln::cli
