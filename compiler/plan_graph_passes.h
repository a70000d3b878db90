// The graph passes a plan gets before it is compiled (Session, `kiln compile`, `kiln bench` and
// `kiln inspect` alike): simplify, conv-taps, cse and dce (passes/), with fold-batch-norm after
// simplify where asked (the CUDA backend: its convolutions take a bias epilogue, no BatchNorm;
// the cpu backend's take a BatchNorm post-op and keep its filters' layouts), run on the plan's own
// subgraph (where the feeds' shapes make every shape known), so that
// they may merge and drop whatever this plan does not fetch while every name the plan fetches or
// runs stays as it was. Constants fold later, with the plan's feed shapes (static_types.h).
//
// Contract: the subgraph holds the plan's nodes and, for each fed tensor whose node the plan does
// not run, a Placeholder of that node's name with the fed tensor's type; its outputs are the
// plan's fetches. The result's plan points into `graph` (which it owns), keeps the feeds, and
// fetches what the given fetches became (cse may fetch a merged node's twin: the same values). A
// plan the passes cannot take whole (a fed output of a node it runs, a fed port other than 0)
// comes back unchanged, and so does every plan when KILN_GRAPH_PASSES=0, and one whose subgraph
// the passes refuse (`changes` then says why: it never fails the compilation).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"
#include "runtime/executor.h"

namespace kiln::compiler {

struct OptimizedPlan {
  std::shared_ptr<Graph> graph;  // what `plan` points into; null when `plan` is the given one
  RunPlan plan;
  std::vector<std::string> changes;  // "cse: 412 -> 398 nodes" per pass that changed it, or why not
};

Result<OptimizedPlan> OptimizePlanGraph(const RunPlan& plan, bool fold_batch_norm = false);

}  // namespace kiln::compiler
