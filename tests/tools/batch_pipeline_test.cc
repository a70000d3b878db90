// kiln train's input pipeline: the batches sliced ahead on threads are the batches sliced when
// asked, in order, every row once, the last one partial.
#include "tools/lib/batch_pipeline.h"

#include <catch2/catch.hpp>
#include <numeric>

using namespace kiln;

TEST_CASE("batch pipeline: batches made ahead are the batches made when asked", "[cli][train]") {
  const int64_t examples = 10;
  std::vector<float> x(examples * 3);
  std::iota(x.begin(), x.end(), 0.0f);
  std::vector<int64_t> labels(examples);
  std::iota(labels.begin(), labels.end(), 100);
  const std::vector<cli::NamedRowSource> arrays = {
      {"x", cli::RowsOf(Tensor::FromVector<float>({examples, 3}, x))},
      {"labels", cli::RowsOf(Tensor::FromVector<int64_t>({examples}, labels))}};
  const std::vector<int64_t> order = {7, 2, 9, 0, 4, 1, 8, 3, 6, 5};
  std::vector<std::vector<cli::Batch>> runs;
  for (int ahead : {0, 1, 3, 20}) {
    INFO("ahead " << ahead);
    cli::BatchPipeline pipeline(arrays, order, examples, 4, ahead);
    std::vector<cli::Batch> batches;
    while (true) {
      Result<std::optional<cli::Batch>> b = pipeline.Next();
      REQUIRE(b.ok());
      if (!*b) break;
      batches.push_back(std::move(**b));
    }
    REQUIRE(batches.size() == 3);  // 4 + 4 + 2
    CHECK(batches[2].rows == 2);
    std::vector<int64_t> seen;
    for (const cli::Batch& b : batches) {
      REQUIRE(b.feeds.size() == 2);
      CHECK(b.feeds[0].first.str() == "x");
      for (int64_t r = 0; r < b.rows; ++r) {
        const int64_t label = b.feeds[1].second.data<int64_t>()[r];
        seen.push_back(label - 100);
        CHECK(b.feeds[0].second.data<float>()[r * 3] == static_cast<float>((label - 100) * 3));
      }
    }
    CHECK(seen == order);
    runs.push_back(std::move(batches));
  }
  for (size_t r = 1; r < runs.size(); ++r)
    for (size_t b = 0; b < runs[0].size(); ++b)
      for (size_t f = 0; f < 2; ++f)
        CHECK(runs[r][b].feeds[f].second.BitwiseEquals(runs[0][b].feeds[f].second));
  // A pipeline dropped before its last batch waits for the batches in the making.
  { REQUIRE(cli::BatchPipeline(arrays, order, examples, 2, 5).Next().ok()); }
}
