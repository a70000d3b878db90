// The cpu backend's Executable for what a Session would run (planned as the JIT plans it, without
// generating code): for tests that look at the steps a plan gets.
#pragma once

#include <catch2/catch.hpp>
#include <vector>

#include "compiler/plan_executable.h"
#include "runtime/session.h"

namespace kiln::testing {

// `options` makes the session's graph (its precision rewrites the graph first); its backend does
// not matter.
inline Executable CpuExecutable(const Graph& graph, const FeedList& feeds,
                                const std::vector<TensorName>& fetches,
                                const std::vector<TensorName>& targets = {},
                                SessionOptions options = {.backend = "reference"}) {
  Session session(graph, options);
  Result<RunPlan> plan = session.Plan(feeds, fetches, targets);
  REQUIRE(plan.ok());
  Result<compiler::PlannedExecutable> planned =
      compiler::PlanExecutable(*plan, compiler::CpuPlanOptions());
  INFO(planned.status().ToString());
  REQUIRE(planned.ok());
  return std::move(planned->lowered.executable);
}

}  // namespace kiln::testing
