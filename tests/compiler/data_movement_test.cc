// Data movement at the data's own width on the cpu backend: Tile as one strided copy, and Sum,
// Mean, Prod, Max and Min over integers as the reduce_integer routine, each against the
// reference executor (bitwise: integer results are exact) over every dtype, the axis patterns that
// take different paths (everything, trailing, leading, middle, with keepdims) and sizes large
// enough to split over threads, with no reference step left in the plan.
#include <catch2/catch.hpp>

#include "compiler/plan_executable.h"
#include "ir/builder.h"
#include "ir/ops/array.h"
#include "ir/ops/reduce.h"
#include "runtime/session.h"
#include "tests/compiler/lowering_decisions.h"

namespace kiln {
namespace {

// Values spread over the dtype's range (wrapping sums and products included), seeded.
Tensor IntegerTensor(DType dtype, Shape shape, uint64_t seed) {
  Tensor t(dtype, std::move(shape));
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const int64_t v = static_cast<int64_t>(state >> 33);
    t.SetInt(i, dtype == boolean ? v % 3 == 0 : dtype == i64 ? v * 1000003 : v);
  }
  return t;
}

// Builds the outputs of `make` on a placeholder of x's type, checks the cpu plan has `routine`
// and no reference step, and that it computes bitwise what the reference does.
void CheckLowered(const std::string& routine, const Tensor& x,
                  const std::function<std::vector<Value>(Value)>& make) {
  std::vector<TensorName> fetches;
  const Graph graph = testing::OutputsOfPlaceholder(x, make, fetches);
  const FeedList feeds = {{"x", x}};
  Session reference(graph, SessionOptions{.backend = "reference"});
  Result<RunPlan> plan = reference.Plan(feeds, fetches);
  REQUIRE(plan.ok());
  Result<compiler::PlannedExecutable> planned =
      compiler::PlanExecutable(*plan, compiler::CpuPlanOptions());
  REQUIRE(planned.ok());
  const Executable& exe = planned->lowered.executable;
  CHECK(exe.CountSteps(Step::Kind::kReference) == 0);
  int routines = 0;
  for (const Step& s : exe.steps) routines += s.callee == routine;
  CHECK(routines == static_cast<int>(fetches.size()));
  Result<std::vector<Tensor>> expected = reference.Run(feeds, fetches);
  REQUIRE(expected.ok());
  // Four threads, so that a few long runs are split over threads even on a machine of two cores.
  Session cpu(graph, SessionOptions{.backend = "cpu", .threads = 4});
  Result<std::vector<Tensor>> got = cpu.Run(feeds, fetches);
  REQUIRE(got.ok());
  for (size_t i = 0; i < fetches.size(); ++i) {
    INFO(fetches[i].str());
    CHECK(got->at(i).BitwiseEquals(expected->at(i)));
  }
}

TEST_CASE("integer reductions run as reduce_integer, bitwise as the reference", "[cpu][reduce]") {
  struct Axes {
    std::vector<int64_t> axes;
    bool keepdims;
  };
  const std::vector<Axes> patterns = {{{}, false},  {{2}, false},    {{0}, true},
                                      {{1}, false}, {{0, 2}, false}, {{1, 2}, true}};
  for (DType dtype : {i8, u8, i32, i64}) {
    for (const Shape& shape : {Shape{3, 4, 5}, Shape{2, 300, 257}, Shape{1, 1, 70000}}) {
      INFO(DTypeName(dtype) << shape.ToString());
      const Tensor x = IntegerTensor(dtype, shape, static_cast<uint64_t>(shape.NumElements()));
      for (const Axes& a : patterns) {
        INFO("axes " << a.axes.size() << " keepdims " << a.keepdims);
        CheckLowered("reduce_integer", x, [&](Value v) {
          return std::vector<Value>{Max(v, a.axes, a.keepdims), Min(v, a.axes, a.keepdims),
                                    Sum(v, a.axes, a.keepdims), Prod(v, a.axes, a.keepdims),
                                    Mean(v, a.axes, a.keepdims)};
        });
      }
    }
  }
}

TEST_CASE("integer reductions over nothing: sums and products lower, the rest stay errors",
          "[cpu][reduce][bad-input]") {
  const Tensor empty = IntegerTensor(i32, Shape{3, 0}, 1);
  CheckLowered("reduce_integer", empty, [](Value v) {
    return std::vector<Value>{Sum(v, {1}), Prod(v, {1})};
  });
  GraphBuilder g;
  g.Output("y", Max(g.Placeholder("x", i32, {3, -1}), {1}));  // zero columns known when fed
  Result<Graph> graph = g.Build();
  REQUIRE(graph.ok());
  for (const char* backend : {"reference", "cpu"}) {
    INFO(backend);
    Session s(*graph, SessionOptions{.backend = backend});
    Result<std::vector<Tensor>> r = s.Run({{"x", empty}}, {"y"});
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message(), Catch::Contains("reduces over zero elements"));
  }
}

TEST_CASE("Tile is one strided copy of any dtype, bitwise as the reference", "[cpu][array]") {
  for (DType dtype : {u8, i32, i64, boolean}) {
    INFO(DTypeName(dtype));
    const Tensor x = IntegerTensor(dtype, Shape{3, 1, 5}, 3);
    CheckLowered("strided_copy", x, [](Value v) {
      return std::vector<Value>{Tile(v, {2, 4, 3}), Tile(v, {1, 1, 1}), Tile(v, {1, 3, 1}),
                                Tile(v, {4, 1, 1})};
    });
  }
  CheckLowered("strided_copy", IntegerTensor(u8, Shape{1 << 16}, 5),
               [](Value v) { return std::vector<Value>{Tile(v, {64})}; });
}

}  // namespace
}  // namespace kiln
