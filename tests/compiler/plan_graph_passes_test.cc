// The graph passes a plan gets before it is compiled (compiler/plan_graph_passes.h): what they
// merge and drop, that every fetched name still gives its value, that targets and fed tensors
// stay, and that the compiled plans compute what the reference executor computes.
#include "compiler/plan_graph_passes.h"

#include <catch2/catch.hpp>

#include "compiler/plan_executable.h"
#include "ir/builder.h"
#include "ir/ops/math.h"
#include "ir/ops/state.h"
#include "runtime/session.h"
#include "tests/testing/differential.h"

namespace kiln {
namespace {

// x -> e1 = Exp(x), e2 = Exp(x) (the same computation), i = Identity(e1);
// y = i + e2; r = Relu(x) (a target of its own).
Graph Duplicates() {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {2, 3});
  Value e1 = Exp(x).Named("e1");
  Value e2 = Exp(x).Named("e2");
  Value i = Identity(e1).Named("i");
  g.Output("y", Add(i, e2).Named("y"));
  Relu(x).Named("r");
  Result<Graph> graph = g.Build();
  INFO((graph.ok() ? "" : graph.error().ToString()));
  REQUIRE(graph.ok());
  return std::move(*graph);
}

RunPlan PlanOf(const Session& session, const FeedList& feeds,
               const std::vector<TensorName>& fetches, const std::vector<TensorName>& targets) {
  Result<RunPlan> plan = session.Plan(feeds, fetches, targets);
  REQUIRE(plan.ok());
  return std::move(*plan);
}

std::vector<std::string> NodeNames(const RunPlan& plan) {
  std::vector<std::string> names;
  for (const Node* node : plan.nodes) names.push_back(node->name);
  return names;
}

const Tensor kX = Tensor::FromVector<float>(Shape{2, 3}, {0, 1, -1, 0.5, 2, -3});

TEST_CASE("a plan's graph passes merge, simplify and keep every fetched name", "[cpu]") {
  Graph graph = Duplicates();
  Session session(graph, SessionOptions{.backend = "reference"});
  const FeedList feeds = {{"x", kX}};

  SECTION("cse merges e2 into e1 and simplify drops the Identity; fetching e2 reads e1") {
    RunPlan plan = PlanOf(session, feeds, {"y", "e2"}, {});
    Result<compiler::OptimizedPlan> optimized = compiler::OptimizePlanGraph(plan);
    REQUIRE(optimized.ok());
    CHECK(NodeNames(optimized->plan) == std::vector<std::string>{"e1", "y"});
    CHECK(optimized->plan.fetches == std::vector<TensorRef>{{"y", 0}, {"e1", 0}});
    CHECK(optimized->plan.feeds.size() == 1);
    CHECK_FALSE(optimized->changes.empty());
  }
  SECTION("a target that nothing fetches stays") {
    RunPlan plan = PlanOf(session, feeds, {"y"}, {"r"});
    Result<compiler::OptimizedPlan> optimized = compiler::OptimizePlanGraph(plan);
    REQUIRE(optimized.ok());
    const std::vector<std::string> names = NodeNames(optimized->plan);
    CHECK(std::find(names.begin(), names.end(), "r") != names.end());
  }
  SECTION("a fed inner tensor becomes the subgraph's placeholder") {
    const FeedList inner = {{"e1", kX}, {"x", kX}};
    RunPlan plan = PlanOf(session, inner, {"y"}, {});
    Result<compiler::OptimizedPlan> optimized = compiler::OptimizePlanGraph(plan);
    REQUIRE(optimized.ok());
    const std::vector<std::string> names = NodeNames(optimized->plan);
    CHECK(std::find(names.begin(), names.end(), "e1") == names.end());  // fed, not computed
    CHECK(std::find(names.begin(), names.end(), "e2") != names.end());  // no longer e1's twin
  }
  SECTION("every backend fetches the same values as the reference") {
    for (const std::vector<TensorName>& fetches :
         {std::vector<TensorName>{"y", "e2"}, std::vector<TensorName>{"e2", "i", "y", "e1"}}) {
      Result<std::vector<Tensor>> expected = session.Run(feeds, fetches);
      REQUIRE(expected.ok());
      testing::CheckCompiledMatchesReference(graph, feeds, fetches, *expected);
    }
    const FeedList inner = {{"e1", kX}, {"x", kX}};
    Result<std::vector<Tensor>> expected = session.Run(inner, {"y"});
    REQUIRE(expected.ok());
    testing::CheckCompiledMatchesReference(graph, inner, {"y"}, *expected);
  }
}

}  // namespace
}  // namespace kiln
