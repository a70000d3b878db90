// Static facts about a verified graph, reported by `kiln inspect`: ops by count, parameters
// (Variables) and their bytes, constant bytes, and a FLOP estimate.
//
// FLOPs count one multiply-add as two; each op's count is its own (OpDef::flops, set where the op
// is defined: elementwise ops one per output element); unknown (-1) dimensions count as 1, so a
// graph with a dynamic batch reports FLOPs per example.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "ir/graph.h"

namespace kiln {

struct GraphStats {
  std::map<std::string, int> op_counts;
  int64_t parameter_count = 0;  // elements of all Variables
  int64_t parameter_bytes = 0;
  int64_t constant_bytes = 0;
  double flops = 0;
  bool has_unknown_dims = false;  // some FLOPs were counted with unknown dims as 1
};

GraphStats ComputeGraphStats(const Graph& graph);
// FLOPs of one node (output_types must be filled).
double EstimateNodeFlops(const Graph& graph, const Node& node);
// The same with the shapes given: `input_shape(i)` the shape of input i (null when unknown) and
// `output` that of output 0 (e.g. a plan's resolved types, so that no dim is unknown).
double EstimateNodeFlops(const Node& node, const std::function<const Shape*(int)>& input_shape,
                         const Shape& output);

}  // namespace kiln
