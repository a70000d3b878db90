// `kiln inspect --fusion/--memory/--placement [--backend cpu|cuda|cuda-sim]`: compiles a model's
// plan for the backend (no code generation, nothing runs) and reports the fusion decisions, the
// steps against one kernel per op, the bytes they move, the peak memory of the static plan, and
// for a CUDA plan where each step runs and every copy between host and device, whether its device
// steps are captured as a CUDA graph (or why not), ending in
// `placement: D device nodes, H host nodes, C copies (B bytes)`. Needs a build with the compiler.
#pragma once

#include <vector>

#include "ir/graph.h"
#include "runtime/session.h"
#include "tools/command.h"

namespace kiln::cli {

// Prints the report for `fetches` and `targets` plus the --fetch/--target flags (the graph's
// outputs when all are empty); returns the exit code.
int PrintPlanReport(const Command& cmd, const Graph& graph, const Flags& flags,
                    std::vector<TensorName> fetches, std::vector<TensorName> targets);

}  // namespace kiln::cli
