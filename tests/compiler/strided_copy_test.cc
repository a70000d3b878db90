// Slice, SliceGrad, constant Pad, BroadcastTo, BroadcastLike and Transpose on the cpu backend as
// one strided_copy library step each (compiler/copy_lowering.h, runtime/cpu/strided_copy_step.cc),
// and Concat, Split and ConcatGrad as one concat/split step (concat_step.cc), against the reference
// executor: negative steps, clamped and empty slices, negative (cropping) pads, a fill value, every
// axis, empty pieces, and dtypes of every element size; reflect padding stays on the reference
// kernel and says why.
#include <catch2/catch.hpp>
#include <limits>

#include "ir/builder.h"
#include "ir/ops/array.h"
#include "ir/ops/array_like.h"
#include "runtime/session.h"
#include "tests/compiler/lowering_decisions.h"
#include "tests/testing/differential.h"
#include "tests/testing/gradcheck_op.h"

namespace kiln {
namespace {

constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();

// Builds `make(x)` as outputs "y0", "y1", ... on a placeholder of `x`'s type, checks that no node
// runs a reference kernel and one is a library call `routine`, and compares compiled with
// reference.
void CheckRoutine(const std::string& routine, const Tensor& x,
                  const std::function<std::vector<Value>(Value)>& make) {
  std::vector<TensorName> fetches;
  const Graph graph = testing::OutputsOfPlaceholder(x, make, fetches);
  FeedList feeds = {{"x", x}};
  bool found = false;
  for (const std::string& d : testing::LoweringDecisions(graph, feeds, fetches)) {
    INFO(d);
    CHECK(d.find("reference kernel") == std::string::npos);
    found = found || d.find("library call " + routine) != std::string::npos;
  }
  CHECK(found);
  Session reference(graph, SessionOptions{.backend = "reference"});
  Result<std::vector<Tensor>> expected = reference.Run(feeds, fetches);
  REQUIRE(expected.ok());
  testing::CheckCompiledMatchesReference(graph, feeds, fetches, *expected);
}

void CheckCopies(const Tensor& x, const std::function<Value(Value)>& make) {
  CheckRoutine("strided_copy", x, [&](Value v) { return std::vector<Value>{make(v)}; });
}

TEST_CASE("Slice and SliceGrad are strided copies", "[cpu]") {
  struct Case {
    std::vector<int64_t> begins, ends, axes, steps;
  };
  const Tensor x = testing::RandomTensor(Shape{4, 5, 6}, 1).CastTo(f32);
  for (const Case& c : std::vector<Case>{{{1}, {3}, {0}, {}},
                                         {{0, 0}, {kEnd, kEnd}, {1, 2}, {2, 2}},
                                         {{-1}, {std::numeric_limits<int64_t>::min()}, {2}, {-1}},
                                         {{3, 4, 1}, {0, 0, 5}, {0, 1, 2}, {-2, -3, 3}},
                                         {{2}, {2}, {1}, {}},  // empty
                                         {{-100}, {100}, {0}, {}}}) {
    INFO("begins " << c.begins.size() << " first " << c.begins[0] << " steps " << c.steps.size());
    CheckCopies(x, [&](Value v) { return Slice(v, c.begins, c.ends, c.axes, c.steps); });
    // dy = the slice itself, scattered back into zeros shaped like x.
    CheckCopies(x, [&](Value v) {
      return SliceGrad(Slice(v, c.begins, c.ends, c.axes, c.steps), v, c.begins, c.ends, c.axes,
                       c.steps);
    });
  }
}

TEST_CASE("constant Pad is a strided copy into the filled output, in every dtype", "[cpu]") {
  for (DType dtype : {f32, f64, bf16, i32, i64, u8, boolean}) {
    INFO(DTypeName(dtype));
    const Tensor x = testing::RandomTensor(Shape{2, 3, 4, 5}, 2).CastTo(dtype);
    CheckCopies(x, [](Value v) { return Pad(v, {0, 0, 1, 1, 0, 0, 1, 1}); });  // as ResNet's
    CheckCopies(x, [](Value v) { return Pad(v, {0, 2, -1, 0, 1, 0, 0, -2}, "constant", 1.0); });
    CheckCopies(x, [](Value v) { return Pad(v, {0, 0, -4, 0, 0, 0, 0, 0}); });  // all cropped
  }
}

TEST_CASE("BroadcastTo and BroadcastLike are strided copies that repeat size-1 dims", "[cpu]") {
  for (DType dtype : {f32, bf16, i64, boolean}) {
    INFO(DTypeName(dtype));
    const Tensor x = testing::RandomTensor(Shape{3, 1, 4, 1}, 3).CastTo(dtype);
    CheckCopies(x, [](Value v) { return BroadcastTo(v, {2, 3, 5, 4, 6}); });  // a new leading dim
    // GlobalAvgPool's gradient: [N, C, 1, 1] over [N, C, H, W] (x_like is only a shape).
    CheckCopies(x, [](Value v) { return BroadcastLike(v, BroadcastTo(v, {3, 2, 4, 5})); });
  }
}

TEST_CASE("Transpose is a strided copy with the source's strides permuted", "[cpu]") {
  for (DType dtype : {f32, bf16, i64, boolean}) {
    INFO(DTypeName(dtype));
    const Tensor x = testing::RandomTensor(Shape{2, 3, 4, 5}, 4).CastTo(dtype);
    CheckCopies(x, [](Value v) { return Transpose(v, {0, 2, 1, 3}); });  // attention's heads
    CheckCopies(x, [](Value v) { return Transpose(v, {3, 1, 0, 2}); });
    CheckCopies(x, [](Value v) { return Transpose(v, {}); });  // reversed
  }
}

TEST_CASE("Concat, Split and ConcatGrad are block copies, on every axis and dtype", "[cpu]") {
  for (DType dtype : {f32, bf16, i64, boolean}) {
    const Tensor x = testing::RandomTensor(Shape{4, 6, 3}, 5).CastTo(dtype);
    for (int64_t axis : {0, 1, -1}) {
      INFO(DTypeName(dtype) << " axis " << axis);
      // Pieces of sizes 1, 0 and the rest along `axis` (an empty piece included).
      const int64_t dim = x.shape()[axis < 0 ? axis + 3 : axis];
      const std::vector<int64_t> sizes = {1, 0, dim - 1};
      CheckRoutine("split", x, [&](Value v) { return Split(v, axis, sizes); });
      CheckRoutine("concat", x, [&](Value v) {
        std::vector<Value> parts = Split(v, axis, sizes);
        return std::vector<Value>{Concat({parts[2], v, parts[0]}, axis)};
      });
      CheckRoutine("split", x, [&](Value v) {
        std::vector<Value> parts = Split(v, axis, sizes);
        return ConcatGrad(v, parts, axis);
      });
    }
  }
}

TEST_CASE("reflect Pad stays on the reference kernel and says why", "[cpu]") {
  GraphBuilder g;
  g.Output("y", Pad(g.Placeholder("x", f32, {2, 3}), {1, 1, 1, 1}, "reflect"));
  Graph graph = *g.Build();
  std::vector<std::string> decisions = testing::LoweringDecisions(
      graph, {{"x", testing::RandomTensor(Shape{2, 3}, 3).CastTo(f32)}}, {"y"});
  REQUIRE(decisions.size() == 1);
  CHECK(decisions[0] == "Pad 'Pad': reference kernel (Pad mode 'reflect' (constant only))");
}

}  // namespace
}  // namespace kiln
