// Attention on the cpu backend (compiler/epilogue_fusion.h, runtime/cpu/attention_step.cc):
// softmax(q k^T + mask) v as one "attention" step, against the reference executor: with and
// without a mask (one for every matrix, or one per matrix, -inf where masked), k stored either
// way, rows split into blocks (long key sequences), scores far apart (subnormal exponentials),
// masks whose -inf columns a block skips (causal, key padding, sliding window, rows masked
// everywhere; a NaN in a skipped key); and left unfused, saying why not, where the scores or
// probabilities are read elsewhere.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "ir/builder.h"
#include "ir/ops/linalg.h"
#include "ir/ops/math.h"
#include "ir/ops/nn.h"
#include "runtime/session.h"
#include "tests/compiler/cpu_executable.h"
#include "tests/testing/differential.h"
#include "tests/testing/gradcheck_op.h"

namespace kiln {
namespace {

// Where a mask is -inf (row i, column j of its last two dims; elsewhere random in [-2, 2]).
enum class Masked {
  kCausal,      // j > i + cols - rows (the last row sees every column)
  kKeyPadding,  // the last third of the columns
  kWindow,      // outside the causal bound's 21 columns
  kRowsFrom40,  // every column of rows i >= 40
};

bool IsMasked(Masked kind, int64_t i, int64_t j, int64_t rows, int64_t cols) {
  switch (kind) {
    case Masked::kCausal:
      return j > i + cols - rows;
    case Masked::kKeyPadding:
      return j >= cols - cols / 3;
    case Masked::kWindow:
      return j > i + cols - rows || j < i + cols - rows - 20;
    case Masked::kRowsFrom40:
      return i >= 40;
  }
  return false;
}

// A mask of `shape` (rank >= 2): random in [-2, 2], -inf where `masked` says.
Tensor MaskFeed(const Shape& shape, Masked masked) {
  Tensor m = testing::RandomTensor(shape, 4, -2, 2).CastTo(f32);
  const int64_t rows = shape[shape.rank() - 2], cols = shape[shape.rank() - 1];
  for (int64_t e = 0; e < m.num_elements(); ++e)
    if (IsMasked(masked, e / cols % rows, e % cols, rows, cols))
      m.data<float>()[e] = -std::numeric_limits<float>::infinity();
  return m;
}

struct Case {
  Shape q, k, v;  // k: [.., Lk, D] when transpose_b, else [.., D, Lk]
  bool transpose_b = true;
  Shape mask;          // empty rank: none
  double scale = 1.0;  // of q, to spread the scores
  Masked masked = Masked::kCausal;
};

int AttentionSteps(const Executable& exe) {
  int n = 0;
  for (const Step& s : exe.steps) n += s.callee == "attention";
  return n;
}

void Check(const Case& c, int expected_steps = 1, bool fetch_probabilities = false) {
  GraphBuilder g;
  Value q = g.Placeholder("q", f32, c.q);
  Value k = g.Placeholder("k", f32, c.k);
  Value v = g.Placeholder("v", f32, c.v);
  Value scores = MatMul(q, k, false, c.transpose_b);
  FeedList feeds = {{"q", testing::RandomTensor(c.q, 1, -c.scale, c.scale).CastTo(f32)},
                    {"k", testing::RandomTensor(c.k, 2, -1, 1).CastTo(f32)},
                    {"v", testing::RandomTensor(c.v, 3, -1, 1).CastTo(f32)}};
  if (c.mask.rank() > 0) {
    Value mask = g.Placeholder("mask", f32, c.mask);
    feeds.push_back({"mask", MaskFeed(c.mask, c.masked)});
    scores = Add(scores, mask);
  }
  Value p = Softmax(scores, -1).Named("p");
  g.Output("y", MatMul(p, v));
  std::vector<TensorName> fetches = {"y"};
  if (fetch_probabilities) {
    g.Output("probabilities", p);
    fetches.push_back("probabilities");
  }
  Graph graph = *g.Build();
  Session reference(graph, SessionOptions{.backend = "reference"});
  Result<std::vector<Tensor>> expected = reference.Run(feeds, fetches);
  REQUIRE(expected.ok());
  testing::CheckCompiledMatchesReference(graph, feeds, fetches, *expected);
  CHECK(AttentionSteps(testing::CpuExecutable(graph, feeds, fetches)) == expected_steps);
}

TEST_CASE("cpu: attention is one step, with or without a mask, k stored either way", "[cpu]") {
  Check({.q = {2, 3, 5, 4}, .k = {2, 3, 6, 4}, .v = {2, 3, 6, 7}});
  Check({.q = {2, 3, 5, 4}, .k = {2, 3, 4, 6}, .v = {2, 3, 6, 7}, .transpose_b = false});
  Check({.q = {2, 3, 6, 4}, .k = {2, 3, 6, 4}, .v = {2, 3, 6, 7}, .mask = {6, 6}});
  Check({.q = {2, 3, 6, 4}, .k = {2, 3, 6, 4}, .v = {2, 3, 6, 7}, .mask = {1, 1, 6, 6}});
  Check({.q = {2, 3, 6, 4}, .k = {2, 3, 6, 4}, .v = {2, 3, 6, 7}, .mask = {2, 3, 6, 6}});
  Check({.q = {7, 16}, .k = {9, 16}, .v = {9, 3}});  // one matrix, fewer rows than a micro-tile
}

TEST_CASE("cpu: attention over broadcast operands stays unfused", "[cpu]") {
  Check({.q = {5, 4}, .k = {2, 3, 6, 4}, .v = {2, 3, 6, 7}}, /*expected_steps=*/0);
  Check({.q = {2, 3, 5, 4}, .k = {2, 3, 6, 4}, .v = {6, 7}}, /*expected_steps=*/0);
}

TEST_CASE("cpu: attention over long key sequences runs in blocks of query rows", "[cpu]") {
  // 65536 / 4096 = 16 query rows at a time: 40 rows are three blocks, on every thread count.
  Check({.q = {1, 2, 40, 8}, .k = {1, 2, 4096, 8}, .v = {1, 2, 4096, 5}});
}

TEST_CASE("cpu: attention skips the key columns a mask removes from a block of query rows",
          "[cpu]") {
  // 65536 / 1200 = 54 query rows at a time: 150 rows are three blocks (54, 54, 42). Causal
  // (aligned to the last key, as with cached keys): the blocks read 1104, 1158 and 1200 columns;
  // key padding: the first 800 for each block; the window: 74, 74 and 62 columns inside.
  for (bool transpose_b : {true, false}) {
    const Shape k = transpose_b ? Shape{2, 2, 1200, 8} : Shape{2, 2, 8, 1200};
    for (Masked masked : {Masked::kCausal, Masked::kKeyPadding, Masked::kWindow})
      for (const Shape& mask : {Shape{150, 1200}, Shape{2, 2, 150, 1200}})
        Check({.q = {2, 2, 150, 8},
               .k = k,
               .v = {2, 2, 1200, 5},
               .transpose_b = transpose_b,
               .mask = mask,
               .masked = masked});
  }
  // Rows masked everywhere are NaN, as the reference's softmax makes them (the second and third
  // blocks are all such rows).
  Check({.q = {1, 2, 150, 8},
         .k = {1, 2, 1200, 8},
         .v = {1, 2, 1200, 5},
         .mask = {150, 1200},
         .masked = Masked::kRowsFrom40});
}

TEST_CASE("cpu: a NaN in a key that a block's mask removes does not reach that block's rows",
          "[cpu]") {
  // 65536 / 1200 = 54 query rows at a time, causal aligned to the last key: the first block (rows
  // 0 to 53) reads keys 0 to 1103 only. A NaN in key 1150 makes every row of the reference NaN
  // (a NaN score stays NaN with -inf added), but not the first block's rows here: they are the
  // reference's without the NaN.
  GraphBuilder g;
  Value q = g.Placeholder("q", f32, {1, 1, 150, 8});
  Value k = g.Placeholder("k", f32, {1, 1, 1200, 8});
  Value v = g.Placeholder("v", f32, {1, 1, 1200, 5});
  Value mask = g.Placeholder("mask", f32, {150, 1200});
  g.Output("y", MatMul(Softmax(Add(MatMul(q, k, false, true), mask), -1), v));
  Graph graph = *g.Build();
  FeedList feeds = {{"q", testing::RandomTensor({1, 1, 150, 8}, 1, -1, 1).CastTo(f32)},
                    {"k", testing::RandomTensor({1, 1, 1200, 8}, 2, -1, 1).CastTo(f32)},
                    {"v", testing::RandomTensor({1, 1, 1200, 5}, 3, -1, 1).CastTo(f32)},
                    {"mask", MaskFeed({150, 1200}, Masked::kCausal)}};
  Session reference(graph, SessionOptions{.backend = "reference"});
  Result<std::vector<Tensor>> expected = reference.Run(feeds, {"y"});
  REQUIRE(expected.ok());
  feeds[1].second.data<float>()[1150 * 8 + 3] = std::numeric_limits<float>::quiet_NaN();
  Session compiled(graph, SessionOptions{.backend = "cpu"});
  Result<std::vector<Tensor>> got = compiled.Run(feeds, {"y"});
  REQUIRE(got.ok());
  CHECK(AttentionSteps(testing::CpuExecutable(graph, feeds, {"y"})) == 1);
  for (int64_t e = 0; e < 150 * 5; ++e) {
    INFO("row " << e / 5 << ", column " << e % 5);
    if (e / 5 < 54)
      CHECK((*got)[0].data<float>()[e] == Approx((*expected)[0].data<float>()[e]).margin(1e-5));
    else
      CHECK(std::isnan((*got)[0].data<float>()[e]));
  }
}

TEST_CASE("cpu: attention with scores far apart (subnormal weights) matches the reference",
          "[cpu]") {
  Check({.q = {2, 2, 16, 32},
         .k = {2, 2, 16, 32},
         .v = {2, 2, 16, 8},
         .mask = {16, 16},
         .scale = 40.0});
}

TEST_CASE("cpu: attention whose probabilities are fetched stays unfused", "[cpu]") {
  Check({.q = {2, 3, 5, 4}, .k = {2, 3, 6, 4}, .v = {2, 3, 6, 7}}, /*expected_steps=*/0,
        /*fetch_probabilities=*/true);
}

}  // namespace
}  // namespace kiln
