// The cpu compiler's lowering decisions for the plan a Session would run: one line per node, such
// as "MaxPool2D 'pool': library call max_pool2d" or "... reference kernel (why)". For tests that
// check how ops lower (tests/compiler/ only: it needs the compiler).
#pragma once

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "compiler/codegen/emit_mlir.h"
#include "compiler/plan_executable.h"
#include "runtime/session.h"

namespace kiln::testing {

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
