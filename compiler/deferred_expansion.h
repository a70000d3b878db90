// Deferred nodes (ir/ops/deferred.h) expanded for one plan, before anything else sees it.
//
// Walking the plan in order with its static types (static_types.h: the feeds' shapes, the values
// of constants, of shape arithmetic and of the feeds the plan is specialized on), each Deferred
// node whose expander can convert it with what is known there is replaced by the nodes it
// converts into, named "<node>/expanded/<name>"; its consumers and the plan's fetches are rewired
// to them. A Deferred node that needs a value not known at compile time stays: the plan is then
// not static (ResolveStaticTypes names the node, and the backends specialize on small feeds or
// run the plan on the reference executor). An expander that refuses the values it was given
// (an axis out of range) fails the expansion with its error. A plan without Deferred nodes comes
// back as it was.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"
#include "runtime/executor.h"

namespace kiln::compiler {

struct ExpandedPlan {
  RunPlan plan;                              // points into `nodes` and into the given plan's nodes
  std::vector<std::unique_ptr<Node>> nodes;  // the expansions' nodes and the rewired consumers
  std::vector<std::string> changes;          // "node 'x' (Deferred) -> 3 nodes", one per expansion
};

Result<ExpandedPlan> ExpandDeferredNodes(const RunPlan& plan,
                                         const std::set<TensorRef>& known_feeds);

// Whether the plan has static types once its Deferred nodes are expanded (the error says why
// not; kUnimplemented when a shape depends on values known only at run time).
Status CheckStatic(const RunPlan& plan, const std::set<TensorRef>& known_feeds);

}  // namespace kiln::compiler
