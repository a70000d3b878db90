// Loop fusion: groups elementwise nodes of a plan into clusters, each of which becomes one
// generated kernel (one loop nest, intermediate values in registers instead of memory).
//
// A node is fusible when `fusible(node)` says so (it has a scalar lowering for its dtypes and its
// value is not known at compile time). It joins the cluster of one of its producers when both
// have the same iteration space (its output shape) and joining creates no cycle (no other input
// of the node depends on that cluster); otherwise it starts a cluster. Any DAG shape is allowed
// inside a cluster, and a cluster may have several outputs. Every decision is recorded in words
// (`kiln inspect --fusion`), including why a node was not fused with a neighbour.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "compiler/static_types.h"
#include "ir/graph.h"
#include "runtime/executor.h"

namespace kiln::compiler {

struct Cluster {
  Shape shape;                     // the iteration space: every member's output shape
  std::vector<const Node*> nodes;  // in plan order
};

struct FusionPlan {
  std::vector<Cluster> clusters;
  std::map<std::string, int> cluster_of;  // node name -> index in clusters
  std::vector<std::string> decisions;     // one line per fusible node
};

FusionPlan FuseElementwise(const RunPlan& plan, const StaticInfo& info,
                           const std::function<bool(const Node&)>& fusible);

}  // namespace kiln::compiler
