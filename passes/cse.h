// cse: common-subexpression elimination.
//
// Contract: two nodes are the same computation when they have the same op, the same data inputs
// in the same order, the same attributes (defaults filled in; tensors compared bit for bit), the
// same set of control inputs and the same device. Of each group of same computations, the first in
// topological order is kept (its name unchanged) and the others are replaced by it: their uses
// (every output port, control inputs on them, graph outputs) move to the kept node and they are
// deleted. Merging runs in topological order, so a merge that makes two consumers the same merges
// them too, in one run. Pinned nodes (passes/graph_edit.h: stateful and random ops such as
// Variable, Assign* and Dropout, Placeholders, NoOp targets, update ops) are never merged. Inputs
// are compared as written: Add(a, b) and Add(b, a) are different.
#pragma once

#include "passes/pass.h"

namespace kiln {

class CommonSubexpressionElimination : public Pass {
 public:
  std::string name() const override { return "cse"; }
  Result<bool> Run(Graph& graph) override;
};

}  // namespace kiln
