// mixed-precision: computes the float32 math of a graph in a 16-bit float type (bf16 or f16) where
// a PrecisionPolicy (ir/precision.h: the four lists, per-op and per-node changes) says it pays.
//
// Decisions, for every node that reads or writes float32 ("a candidate"):
// 1. forward, in topological order: always16 -> 16-bit; keep32 or unlisted -> float32;
//    follow/neutral -> 16-bit when some float input comes from a node decided 16-bit, else
//    float32 (Variables, Constants and Placeholders are float32 sources).
// 2. backward, consumers first: a follow/neutral node decided 16-bit whose outputs no 16-bit node
//    reads goes back to float32 (no cast down just to cast up again; this also keeps optimizer
//    updates, which only feed Assign, in float32).
// 3. a 16-bit MatMul whose product no 16-bit node reads (a classifier's logits, a weight
//    gradient feeding the optimizer) writes it in float32 (out_dtype f32): the float32
//    accumulator is kept instead of being rounded to 16 bits and widened again.
// A node's own entry in node_lists wins over rules 1 and 2.
// Rewrite: a 16-bit node reads its float32 inputs (those of the type variable of its first float
// input) through a Cast to the 16-bit type, one per tensor, shared by all its readers (so a
// Variable is cast once per step and stays float32: master weights); a float32 node or a graph
// output that reads a tensor now 16-bit reads it through one shared Cast back to float32, so the
// graph's outputs keep their dtypes. Cast nodes are named "<producer>/to_bf16" ("/to_f32", with
// "_<port>" for ports other than 0) and carry the producer's source location.
// Running it again on its own result changes nothing.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/precision.h"
#include "passes/pass.h"

namespace kiln {

struct PrecisionDecision {
  std::string node, op;
  std::optional<PrecisionList> list;  // the list that decided (node_lists first); nullopt: none
  bool in16 = false;
  std::string why;          // "always16", "follows 'conv1' (16-bit)", "only float32 readers", ...
  bool f32_output = false;  // 16-bit operands, float32 result (rule 3)
};

// The decision for every candidate node, in topological order (the graph must be verified).
Result<std::vector<PrecisionDecision>> DecidePrecision(const Graph& graph,
                                                       const PrecisionPolicy& policy);

class MixedPrecision : public Pass {
 public:
  // `policy.compute` must be bf16 or f16.
  explicit MixedPrecision(PrecisionPolicy policy) : policy_(std::move(policy)) {}
  std::string name() const override { return "mixed-precision"; }
  Result<bool> Run(Graph& graph) override;

 private:
  PrecisionPolicy policy_;
};

}  // namespace kiln
