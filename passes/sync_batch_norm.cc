#include "passes/sync_batch_norm.h"

#include <set>
#include <vector>

#include "ir/builder.h"
#include "ir/ops/array.h"
#include "ir/ops/collective.h"
#include "ir/ops/math.h"
#include "ir/ops/nn.h"
#include "ir/ops/reduce.h"
#include "passes/graph_edit.h"

namespace kiln {
namespace {

bool InTraining(const Node& node) {
  if (node.op != "BatchNorm") return false;
  Result<bool> training = node.attrs.GetBool("training");
  return training.ok() && *training;
}

}  // namespace

Result<bool> SyncBatchNorm::Run(Graph& graph) {
  std::vector<Node> norms;
  for (const Node& node : graph.nodes())
    if (InTraining(node)) norms.push_back(node);
  if (norms.empty()) return false;
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<GraphBuilder> g, GraphBuilder::FromGraph(graph));
  const size_t first_new = g->num_nodes();
  Rewirer rewirer;
  for (const Node& bn : norms) {
    if (bn.inputs.size() != 5 || bn.output_types.empty())
      return bn.MakeNodeError(ErrorCode::kInvalidArgument,
                              "a BatchNorm needs inputs (x, scale, bias, mean, var)");
    const int rank = bn.output_types[0].shape.rank();
    if (rank < 2)
      return bn.MakeNodeError(ErrorCode::kInvalidArgument, "x has rank ", rank,
                              ": BatchNorm needs a channel axis (1)");
    std::vector<Value> in;
    for (const TensorRef& ref : bn.inputs) {
      KILN_ASSIGN_OR_RETURN(Value v, g->Find(ref.ToString()));
      in.push_back(v);
    }
    KILN_ASSIGN_OR_RETURN(double epsilon, bn.attrs.GetFloat("epsilon"));
    std::vector<int64_t> axes = {0};
    for (int a = 2; a < rank; ++a) axes.push_back(a);
    auto entered = g->Scope(bn.name + "/sync").Enter();
    const Value x = in[0];
    // Statistics kept with the reduced axes (size 1), so that x - mean broadcasts per channel.
    const Value mean = AllReduce({Mean(x, axes, /*keepdims=*/true)}, "mean")[0];
    const Value centered = x - mean;
    const Value var = AllReduce({Mean(centered * centered, axes, /*keepdims=*/true)}, "mean")[0];
    std::vector<Value> out = g->AddOp(
        "BatchNorm", {x, in[1], in[2], Reshape(mean, {-1}), Reshape(var, {-1})},
        [&] {
          AttrMap a;
          a.Set("epsilon", epsilon);
          a.Set("training", false);
          return a;
        }(),
        SourceLocation::current(), bn.name + "/sync/norm");
    for (size_t port = 0; port < out.size() && port < 3; ++port)
      rewirer.ReplaceTensor(TensorRef{bn.name, static_cast<int>(port)},
                            TensorRef{out[port].node_name(), out[port].port()});
  }
  KILN_ASSIGN_OR_RETURN(Graph rewritten, g->Build());
  // The new nodes were built where the BatchNorm was: messages name its source line.
  for (size_t i = first_new; i < rewritten.nodes().size(); ++i)
    for (const Node& bn : norms)
      if (rewritten.nodes()[i].name.rfind(bn.name + "/sync/", 0) == 0)
        rewritten.mutable_nodes()[i].source = bn.source;
  rewirer.Finish(rewritten);
  graph = std::move(rewritten);
  return true;
}

}  // namespace kiln
