// The cpu backend compiles a plan whose shapes depend on the values of its small integer feeds
// for those values (runtime/cpu/cpu_executor.h): a new value compiles once more, a repeated one
// reuses its program, a feed that decides no shape (labels) never joins the cache key, and values
// past the limit run on the reference executor.
#include <catch2/catch.hpp>

#include "ir/builder.h"
#include "ir/ops/array.h"
#include "ir/ops/math.h"
#include "ir/ops/reduce.h"
#include "runtime/cpu/cpu_executor.h"
#include "runtime/session.h"
#include "tests/testing/differential.h"

namespace kiln {
namespace {

// y = 2 * float(Range(0, n, 1)) (its length is n's value); z = sum(labels) (its shape is not).
Graph RangeOfFedLength() {
  GraphBuilder g;
  Value n = g.Placeholder("n", i64, {});
  Value labels = g.Placeholder("labels", i64, {4});
  g.Output("y", Mul(Cast(Range(g.Scalar(0, i64), n, g.Scalar(1, i64)), f32), g.Scalar(2)));
  g.Output("z", Sum(labels));
  Result<Graph> graph = g.Build();
  INFO((graph.ok() ? "" : graph.error().ToString()));
  REQUIRE(graph.ok());
  return std::move(*graph);
}

TEST_CASE("a plan whose shapes a fed value decides is compiled for each value", "[cpu]") {
  if (testing::CompiledBackends().empty()) return;
  Graph graph = RangeOfFedLength();
  Session planner(graph, SessionOptions{.backend = "reference"});
  cpu::CpuExecutor executor(1);
  VariableStore variables;
  auto run = [&](int64_t n, std::vector<int64_t> labels) {
    const FeedList feeds = {{"n", Tensor::Scalar<int64_t>(n)},
                            {"labels", Tensor::FromVector<int64_t>(Shape{4}, labels)}};
    Result<RunPlan> plan = planner.Plan(feeds, {"y", "z"});
    REQUIRE(plan.ok());
    Result<std::vector<Tensor>> out = executor.Execute(*plan, variables);
    INFO((out.ok() ? "" : out.error().ToString()));
    REQUIRE(out.ok());
    return *out;
  };
  std::vector<Tensor> out = run(5, {1, 2, 3, 4});
  CHECK(out[0].ToDoubles() == std::vector<double>{0, 2, 4, 6, 8});
  CHECK(out[1].ToDoubles() == std::vector<double>{10});
  CHECK(executor.compiled_plans() == 1);
  CHECK(executor.fallback_plans() == 0);
  // Other labels, the same n: the same program.
  out = run(5, {4, 4, 4, 4});
  CHECK(out[1].ToDoubles() == std::vector<double>{16});
  CHECK(executor.compiled_plans() == 1);
  // Another n: compiled once more; n again: reused.
  out = run(3, {1, 1, 1, 1});
  CHECK(out[0].ToDoubles() == std::vector<double>{0, 2, 4});
  CHECK(executor.compiled_plans() == 2);
  out = run(5, {0, 0, 0, 1});
  CHECK(out[0].ToDoubles() == std::vector<double>{0, 2, 4, 6, 8});
  CHECK(executor.compiled_plans() == 2);
  CHECK(executor.fallback_plans() == 0);
  // After kMaxSpecializations values, further ones run on the reference executor.
  for (int64_t n = 10; n < 10 + kMaxSpecializations; ++n) run(n, {1, 1, 1, 1});
  CHECK(executor.compiled_plans() == kMaxSpecializations);
  out = run(40, {1, 1, 1, 1});
  CHECK(out[0].num_elements() == 40);
  CHECK(out[0].GetDouble(39) == 78);
  CHECK(executor.compiled_plans() == kMaxSpecializations);

  // Every backend computes what the reference does.
  const FeedList feeds = {{"n", Tensor::Scalar<int64_t>(7)},
                          {"labels", Tensor::FromVector<int64_t>(Shape{4}, {1, 2, 3, 4})}};
  Result<std::vector<Tensor>> expected = planner.Run(feeds, {"y", "z"});
  REQUIRE(expected.ok());
  testing::CheckCompiledMatchesReference(graph, feeds, {"y", "z"}, *expected);
}

}  // namespace
}  // namespace kiln
