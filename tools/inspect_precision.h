// `kiln inspect --precision`: the mixed-precision lists (ir/precision.h, with the changes given by
// --precision-op) and what passes/mixed_precision decides for every node of a model that reads or
// writes float32 (with --precision-node choices), in bf16, plus the casts it would insert.
#pragma once

#include "ir/graph.h"
#include "tools/command.h"

namespace kiln::cli {

// Prints the report; returns the exit code.
int PrintPrecisionReport(const Command& cmd, const Graph& graph, const Flags& flags);

}  // namespace kiln::cli
