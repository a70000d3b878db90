// Slice, SliceGrad and constant Pad on the cpu backend as one strided_copy library step each
// (compiler/copy_lowering.h, runtime/cpu/strided_copy_step.cc), against the reference executor:
// negative steps, clamped and empty slices, negative (cropping) pads, a fill value, and dtypes of
// every element size; reflect padding stays on the reference kernel and says why.
#include <catch2/catch.hpp>
#include <limits>

#include "ir/builder.h"
#include "ir/ops/array.h"
#include "runtime/session.h"
#include "tests/compiler/lowering_decisions.h"
#include "tests/testing/differential.h"
#include "tests/testing/gradcheck_op.h"

namespace kiln {
namespace {

constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();

// Builds `make(x)` as output "y" on a placeholder of `x`'s type, checks that every node lowers
// to a strided_copy, and compares compiled with reference.
void CheckCopies(const Tensor& x, const std::function<Value(Value)>& make) {
  GraphBuilder g;
  g.Output("y", make(g.Placeholder("x", x.dtype(), x.shape())));
  Result<Graph> graph = g.Build();
  INFO((graph.ok() ? "" : graph.error().ToString()));
  REQUIRE(graph.ok());
  FeedList feeds = {{"x", x}};
  for (const std::string& d : testing::LoweringDecisions(*graph, feeds, {"y"})) {
    INFO(d);
    CHECK(d.find("library call strided_copy") != std::string::npos);
  }
  Session reference(*graph, SessionOptions{.backend = "reference"});
  Result<std::vector<Tensor>> expected = reference.Run(feeds, {"y"});
  REQUIRE(expected.ok());
  testing::CheckCompiledMatchesReference(*graph, feeds, {"y"}, *expected);
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
