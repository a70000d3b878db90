// The compiler expands a plan's Deferred nodes (compiler/deferred_expansion.h) where what they
// need is known: here an imported ONNX Slice whose bounds are fed, with and without their values.
#include "compiler/deferred_expansion.h"

#include <catch2/catch.hpp>

#include "ir/onnx/import.h"
#include "runtime/session.h"
#include "tests/ir/onnx_model_builder.h"

namespace kiln {
namespace {

TEST_CASE("Deferred nodes expand where their values are known", "[compiler]") {
  testing::OnnxModel m;
  m.Input("x", 1, {3, 5}).Input("starts", 7, {1}).Input("ends", 7, {1}).Output("y");
  m.Initializer("axes", Tensor::FromVector<int64_t>(Shape{1}, {1}));
  m.Node("Slice", {"x", "starts", "ends", "axes"}, {"y"}, "slice");
  Result<Graph> graph = ImportOnnxFromBytes(m.Bytes(), "", "test.onnx");
  REQUIRE(graph.ok());
  Session planner(*graph, {.backend = "reference"});
  Result<RunPlan> plan = planner.Plan({{"x", Tensor(f32, Shape{3, 5})},
                                       {"starts", Tensor::FromVector<int64_t>(Shape{1}, {1})},
                                       {"ends", Tensor::FromVector<int64_t>(Shape{1}, {4})}},
                                      {"y"});
  REQUIRE(plan.ok());
  const TensorRef starts{"starts", 0}, ends{"ends", 0};

  // Without the bounds' values: nothing expands, and the plan is not static.
  Result<compiler::ExpandedPlan> unknown = compiler::ExpandDeferredNodes(*plan, {});
  REQUIRE(unknown.ok());
  CHECK(unknown->changes.empty());
  Status not_static = compiler::CheckStatic(*plan, {starts});
  REQUIRE_FALSE(not_static.ok());
  CHECK(not_static.error().code() == ErrorCode::kUnimplemented);
  CHECK_THAT(not_static.error().ToString(), Catch::Contains("Deferred"));

  // With them: the Slice replaces it, and the fetch is rewired to what computes y.
  Result<compiler::ExpandedPlan> known = compiler::ExpandDeferredNodes(*plan, {starts, ends});
  REQUIRE(known.ok());
  REQUIRE(known->changes.size() == 1);
  for (const Node* node : known->plan.nodes) CHECK(node->op != "Deferred");
  REQUIRE(known->plan.fetches.size() == 1);
  CHECK(known->plan.fetches[0].node.find("/expanded/") != std::string::npos);
  CHECK(compiler::CheckStatic(*plan, {starts, ends}).ok());
}

}  // namespace
}  // namespace kiln
