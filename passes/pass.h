// A pass: one graph -> graph transform that rewrites a Graph in place (see DESIGN.md, "Passes").
//
// Contract of every pass:
// - `name()` is the kebab-case name kiln opt and the pass manager know it by.
// - `Run(graph)` expects a verified graph (every node's output_types filled, as Verify leaves it)
//   and returns whether it changed anything. A second Run on its own result returns false
//   (passes are idempotent). It fails (an Error, never a crash) only on graphs that break the
//   verifier's contract; the pass manager verifies the graph again after every pass.
// - Names of nodes a pass keeps never change. When a node is replaced, every data input, control
//   input and graph output that pointed at it points at the replacement instead, so graph
//   outputs keep their names and stay valid.
// - Stateful ops (the registry's `stateful` flag: Variable, Assign*, Dropout), Placeholders, ops
//   with no outputs (NoOp targets) and nodes listed as graph inputs or update ops are never
//   removed, merged or replaced (see IsPinned in passes/graph_edit.h).
//
// Run returns Result<bool> rather than DESIGN's plain bool so that a pass handed a graph it cannot
// work on says why instead of aborting.
#pragma once

#include <string>

#include "ir/graph.h"
#include "ir/status.h"

namespace kiln {

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string name() const = 0;
  // Rewrites `graph` in place; true when anything changed.
  virtual Result<bool> Run(Graph& graph) = 0;
};

}  // namespace kiln
