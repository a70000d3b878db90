#include "tools/lib/training_graph.h"

#include <cmath>
#include <cstdlib>

#include "ir/builder.h"
#include "ir/precision.h"

namespace kiln {
namespace {

const char* const kOptimizerFlags[] = {"optimizer",    "lr",          "clip-norm",
                                       "weight-decay", "lr-schedule", "warmup-steps",
                                       "lr-step-size", "lr-gamma",    "total-steps"};

Error Usage(const std::string& message) { return MakeError(ErrorCode::kInvalidArgument, message); }

// --`flag` as a number: > 0 (`positive`) or >= 0; `fallback` when absent.
Result<double> Number(const cli::Flags& flags, const char* flag, double fallback, bool positive) {
  if (!flags.Has(flag)) return fallback;
  const std::string text = flags.Get(flag);
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end || !(positive ? v > 0 : v >= 0) || !std::isfinite(v))
    return Usage(std::string("--") + flag + " must be a " +
                 (positive ? "positive" : "non-negative") + " number, got '" + text + "'");
  return v;
}

// --`flag` as a whole number >= 1; `fallback` when absent.
Result<int64_t> Steps(const cli::Flags& flags, const char* flag, int64_t fallback) {
  if (!flags.Has(flag)) return fallback;
  const std::string text = flags.Get(flag);
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end || v < 1)
    return Usage(std::string("--") + flag + " must be a whole number >= 1, got '" + text + "'");
  return static_cast<int64_t>(v);
}

}  // namespace

void DeclareOptimizerFlags(cli::Flags& flags) {
  for (const char* flag : kOptimizerFlags) flags.Option(flag);
}

Result<optim::Optimizer> OptimizerFromFlags(const cli::Flags& flags, const std::string& optimizer,
                                            double lr, int64_t total_steps) {
  optim::Options options;
  KILN_ASSIGN_OR_RETURN(options.lr, Number(flags, "lr", lr, true));
  KILN_ASSIGN_OR_RETURN(options.clip_norm, Number(flags, "clip-norm", 0, true));
  KILN_ASSIGN_OR_RETURN(options.weight_decay, Number(flags, "weight-decay", 0, false));
  optim::Schedule& schedule = options.schedule;
  schedule.kind = flags.Get("lr-schedule", "constant");
  KILN_ASSIGN_OR_RETURN(schedule.total_steps, Steps(flags, "total-steps", total_steps));
  KILN_ASSIGN_OR_RETURN(schedule.warmup_steps, Steps(flags, "warmup-steps", 0));
  KILN_ASSIGN_OR_RETURN(schedule.step_size, Steps(flags, "lr-step-size", 0));
  KILN_ASSIGN_OR_RETURN(schedule.gamma, Number(flags, "lr-gamma", 0.1, true));
  if (flags.Has("warmup-steps") && schedule.kind != "linear-warmup-cosine")
    return Usage("--warmup-steps is for --lr-schedule linear-warmup-cosine");
  if ((flags.Has("lr-step-size") || flags.Has("lr-gamma")) && schedule.kind != "step")
    return Usage("--lr-step-size and --lr-gamma are for --lr-schedule step");
  if (Status s = optim::CheckSchedule(schedule); !s.ok())
    return Usage(s.error().message() + (schedule.kind == "step" ? " (--lr-step-size)"
                                        : schedule.kind == "constant"
                                            ? ""
                                            : " (--total-steps, --warmup-steps)"));
  // fp16 training scales the loss (bf16 has float32's range and needs no scaling).
  Result<DType> precision = ParsePrecision(flags.Get("precision", "fp32"));
  options.loss_scaling = precision.ok() && *precision == f16;
  return optim::ByName(flags.Get("optimizer", optimizer), options);
}

Result<std::optional<optim::Optimizer>> OptimizerFromFlags(const cli::Flags& flags) {
  if (!flags.On("train")) {
    if (flags.Has("loss")) return Usage("--loss needs --train");
    for (const char* f : kOptimizerFlags)
      if (flags.Has(f)) return Usage(std::string("--") + f + " needs --train");
    return std::optional<optim::Optimizer>();
  }
  if (!flags.Has("loss")) return Usage("--train needs --loss NAME");
  KILN_ASSIGN_OR_RETURN(optim::Optimizer optimizer, OptimizerFromFlags(flags, "sgd", 0.01));
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
  out.learning_rate = optimizer.learning_rate().name();
  KILN_ASSIGN_OR_RETURN(out.graph, g->Build());
  return out;
}

}  // namespace kiln
