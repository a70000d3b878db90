#include "tools/lib/training_graph.h"

#include "ir/builder.h"

namespace kiln {

Result<TrainingGraph> AddOptimizer(Graph graph, const std::string& loss,
                                   optim::Optimizer optimizer) {
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<GraphBuilder> g, GraphBuilder::FromGraph(std::move(graph)));
  Result<Value> loss_value = g->Find(loss);
  if (!loss_value.ok()) return loss_value.error().WithContext("the loss '" + loss + "'");
  Value update = optimizer.Minimize(*loss_value);
  TrainingGraph out;
  out.loss = loss_value->name();
  out.update = update.node_name();
  KILN_ASSIGN_OR_RETURN(out.graph, g->Build());
  return out;
}

}  // namespace kiln
