// dce: dead-code elimination.
//
// Contract: removes every node that no root needs. The roots are
// - the producers of the graph's outputs;
// - every pinned node (passes/graph_edit.h): stateful ops (Variable, Assign*, Dropout: they
//   change or carry state even when nothing reads them), Placeholders (a caller may feed any of
//   them by name), ops with no outputs (NoOp: run as targets by name), unknown ops, and the
//   nodes named as graph inputs or update ops.
// A node is needed when a root or a needed node names it as a data or a control input. Nothing
// else changes: kept nodes keep their names, inputs and order.
#pragma once

#include "passes/pass.h"

namespace kiln {

class DeadCodeElimination : public Pass {
 public:
  std::string name() const override { return "dce"; }
  Result<bool> Run(Graph& graph) override;
};

}  // namespace kiln
