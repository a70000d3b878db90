// Static types: the concrete type of every tensor a RunPlan computes, for the shapes of its feeds,
// and the value of every tensor that can be known before running (Constant nodes, the Shape of a
// tensor whose shape is known, and small stateless computations on those: shape arithmetic
// folds away, so Shape -> Gather -> Concat -> Reshape chains become static).
//
// A plan whose shapes depend on values computed at run time fails with kUnimplemented, naming the
// node; the cpu backend then tries again with its small feeds' values known
// (`known_feeds`: the plan is then valid for those values only) and else runs that plan on the
// reference executor. So does a plan holding a sequence or optional (a feed or a node's input or
// output): containers live on the host.
#pragma once

#include <map>
#include <set>

#include "ir/graph.h"
#include "ir/tensor.h"
#include "runtime/executor.h"

namespace kiln::compiler {

struct StaticInfo {
  std::map<TensorRef, TensorType> types;  // every fed or computed tensor of the plan
  std::map<TensorRef, Tensor> values;     // the tensors known at compile time
};

Result<StaticInfo> ResolveStaticTypes(const RunPlan& plan,
                                      const std::set<TensorRef>& known_feeds = {});

// The same one node at a time: the feeds' types (and the known ones' values), then each node in
// plan order (its inputs already in `info`).
StaticInfo FeedsStaticInfo(const RunPlan& plan, const std::set<TensorRef>& known_feeds);
Status ResolveNode(const Node& node, StaticInfo& info);

}  // namespace kiln::compiler
