// The cpu compiler's lowering decisions for the plan a Session would run: one line per node, such
// as "MaxPool2D 'pool': library call max_pool2d" or "... reference kernel (why)". For tests that
// check how ops lower (tests/compiler/ only: it needs the compiler).
#pragma once

#include <catch2/catch.hpp>
#include <functional>
#include <string>
#include <vector>

#include "compiler/codegen/emit_mlir.h"
#include "compiler/plan_executable.h"
#include "ir/builder.h"
#include "runtime/session.h"

namespace kiln::testing {

// A graph of `make(x)` as outputs "y0", "y1", ... on a placeholder "x" of `x`'s type; their names
// are appended to `fetches`.
inline Graph OutputsOfPlaceholder(const Tensor& x,
                                  const std::function<std::vector<Value>(Value)>& make,
                                  std::vector<TensorName>& fetches) {
  GraphBuilder g;
  for (const Value& y : make(g.Placeholder("x", x.dtype(), x.shape()))) {
    fetches.emplace_back("y" + std::to_string(fetches.size()));
    g.Output(fetches.back().str(), y);
  }
  Result<Graph> graph = g.Build();
  INFO((graph.ok() ? "" : graph.error().ToString()));
  REQUIRE(graph.ok());
  return std::move(*graph);
}

inline std::vector<std::string> LoweringDecisions(const Graph& graph, const FeedList& feeds,
                                                  const std::vector<TensorName>& fetches) {
  Session session(graph, SessionOptions{.backend = "reference"});
  Result<RunPlan> plan = session.Plan(feeds, fetches);
  INFO((plan.ok() ? "" : plan.error().ToString()));
  REQUIRE(plan.ok());
  compiler::PlanOptions options;
  options.can_emit = compiler::CanEmit;
  Result<compiler::PlannedExecutable> planned = compiler::PlanExecutable(*plan, options);
  INFO((planned.ok() ? "" : planned.error().ToString()));
  REQUIRE(planned.ok());
  return planned->lowered.decisions;
}

}  // namespace kiln::testing
