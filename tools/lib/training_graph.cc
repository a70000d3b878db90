#include "tools/lib/training_graph.h"

#include <cstdlib>

#include "ir/builder.h"

namespace kiln {

Result<std::optional<optim::Optimizer>> OptimizerFromFlags(const cli::Flags& flags) {
  auto usage = [](const std::string& message) {
    return MakeError(ErrorCode::kInvalidArgument, message);
  };
  if (!flags.On("train")) {
    for (const char* f : {"loss", "optimizer", "lr"})
      if (flags.Has(f)) return usage(std::string("--") + f + " needs --train");
    return std::optional<optim::Optimizer>();
  }
  if (!flags.Has("loss")) return usage("--train needs --loss NAME");
  const std::string text = flags.Get("lr", "0.01");
  char* end = nullptr;
  const double lr = std::strtod(text.c_str(), &end);
  if (text.empty() || *end || !(lr > 0))
    return usage("--lr must be a positive number, got '" + text + "'");
  optim::Options options;
  options.lr = lr;
  // fp16 training scales the loss (bf16 has float32's range and needs no scaling).
  options.loss_scaling = flags.Get("precision") == "fp16" || flags.Get("precision") == "f16";
  KILN_ASSIGN_OR_RETURN(optim::Optimizer optimizer,
                        optim::ByName(flags.Get("optimizer", "sgd"), options));
  return std::optional<optim::Optimizer>(std::move(optimizer));
}

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
