// constant-fold: evaluates, at optimization time, nodes whose inputs are all Constants.
//
// Contract: a node is folded when it is not pinned (passes/graph_edit.h: never stateful or random
// ops such as Variable, Assign* and Dropout, Placeholders or NoOps), is not itself a Constant,
// has no control inputs, every data input is a Constant's output, and every output has a fully
// known shape of at most `max_elements` elements (default 1 << 16: bigger results would bloat the
// graph). The walk is in topological order, so whole constant chains fold in one run.
// - A single-output node becomes a Constant in place: same name, device and source; no inputs.
// - A multi-output node (Split) is replaced by one Constant per output, named
//   "<node>/folded_<port>" (made unique), and deleted; it is left alone when another node has it
//   as a control input.
// Inputs that become unused stay (dce removes them). A node whose evaluation fails (a bad index in
// a constant Gather, say) is left as it is, so running the graph reports the error as before.
//
// Where the evaluation comes from: passes/ may depend only on ir/ (DESIGN.md, "Folders"), and the
// kernels that compute op values live in runtime/reference/. So this pass takes a
// ConstantEvaluator (dependency inversion, like the runtime's JIT interface): the pass decides
// what to fold and rewrites the graph; the evaluator computes. kiln opt and the tests pass the
// reference executor's (tools/lib/constant_evaluator.h), so folded values are exactly what the
// reference backend computes.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "ir/tensor.h"
#include "passes/pass.h"

namespace kiln {

// The values of `node`'s outputs given the values of its data inputs.
using ConstantEvaluator =
    std::function<Result<std::vector<Tensor>>(const Node& node, const std::vector<Tensor>& inputs)>;

inline constexpr int64_t kMaxFoldedElements = int64_t{1} << 16;

class ConstantFolding : public Pass {
 public:
  explicit ConstantFolding(ConstantEvaluator evaluate, int64_t max_elements = kMaxFoldedElements)
      : evaluate_(std::move(evaluate)), max_elements_(max_elements) {}
  std::string name() const override { return "constant-fold"; }
  Result<bool> Run(Graph& graph) override;

 private:
  ConstantEvaluator evaluate_;
  int64_t max_elements_;
};

}  // namespace kiln
