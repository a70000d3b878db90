// `kiln inspect --cost h100|h200|a100`: the cost model of compiler/cost_model.h over the model's
// CUDA plan (placed as for --backend cuda; nothing runs, no GPU needed): a table of each step's
// side, FLOPs, bytes, what bounds it and its estimated time, the line `estimated_ms: X` for the
// plan the flags choose (f32, or TF32 products with --tf32), then the estimate with and without
// fusion (one kernel per op) in each precision: fp32, tf32, bf16 and fp16 (mixed precision as
// `--precision` would apply it). Needs a build with the compiler.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/session.h"
#include "tools/command.h"

namespace kiln::cli {

// Prints the report; returns the exit code.
int PrintCostReport(const Command& cmd, const Graph& graph, const FeedList& feeds,
                    const std::vector<TensorName>& fetches, const std::vector<TensorName>& targets,
                    const std::string& chip, bool tf32);

}  // namespace kiln::cli
