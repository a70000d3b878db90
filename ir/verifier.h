// Type inference and verification of graphs.
//
// InferNode checks one node against its op's schema (arity, dtype constraints, attributes) and
// runs the op's inference; the reference executor calls it again with concrete shapes and values.
// Verify checks a whole graph: unknown ops, dangling or mistyped inputs, cycles, wrong arity,
// missing or ill-typed attributes, shape mismatches, bad graph inputs/outputs, state ops whose
// first input is not a Variable. It fills every node's output_types. Errors name the node, its op
// and where it was built.
#pragma once

#include <vector>

#include "ir/graph.h"
#include "ir/op_registry.h"
#include "ir/status.h"

namespace kiln {

// Output types of `node` given its input types (and values where known: nullptr otherwise).
Result<std::vector<TensorType>> InferNode(const Node& node, const std::vector<TensorType>& inputs,
                                          const std::vector<const Tensor*>& input_values);

// Verifies the graph and fills output_types of every node.
Status Verify(Graph& graph);

// Gives every node of a verified graph each attribute its op declares with a default, the default
// filled in (but tensor and graph attributes, whose defaults mean "none"): the form sessions run
// (a file may leave out attributes at their defaults; executors, kernels and the compiler then
// read every attribute from the node itself).
void FillDefaultAttrs(Graph& graph);

}  // namespace kiln
