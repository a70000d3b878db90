// `kiln inspect --fusion/--memory`: compiles a model's plan (no code generation, nothing runs)
// and reports the fusion decisions, the steps against one kernel per op, the bytes they move and
// the peak memory of the static plan. Needs a build with the compiler.
#pragma once

#include "ir/graph.h"
#include "tools/command.h"

namespace kiln::cli {

// Prints the report; returns the exit code.
int PrintPlanReport(const Command& cmd, const Graph& graph, const Flags& flags);

}  // namespace kiln::cli
