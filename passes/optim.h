// Optimizers and learning-rate schedules, built into the graph: `Minimize(loss)` adds the
// gradients (passes/autodiff) and the variable updates, and returns one train target, so a whole
// training step is one Session::Run.
//
//   auto train = kiln::optim::Adam({.lr = 1e-3}).Minimize(loss);
//   session.Run({{"images", x}, {"labels", y}}, {loss}, {train});
//
// Updates follow PyTorch's formulas (torch.optim.SGD / Adam / AdamW):
//   SGD       w -= lr * g
//   Momentum  v = momentum * v + g;  w -= lr * (nesterov ? g + momentum * v : v)
//   Adam      t += 1; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
//             w -= lr * (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps)
//   AdamW     as Adam, and first w -= lr * weight_decay * w (decoupled decay)
// With weight_decay > 0, SGD, Momentum and Adam first add weight_decay * w to each gradient (an L2
// penalty, as torch.optim's weight_decay). With clip_norm > 0, all gradients are first scaled by
// clip_norm / max(global_norm, clip_norm) (before the weight decay, as clipping before step()).
// Slots (momentum buffers, Adam moments) are non-trainable variables "<var>/<slot>"; the step count
// is the i64 variable "global_step", incremented once per Minimize target run. The graph's update
// ops (GraphBuilder::AddUpdateOp, e.g. BatchNorm running statistics) run with the train target.
//
// Dynamic loss scaling (Options::loss_scaling, for fp16 training where small gradients underflow),
// all as graph ops so a compiled step carries it with no host logic: the loss is multiplied by the
// f32 variable "loss_scale" (initially initial_loss_scale) before differentiation and every
// gradient divided by it. When any gradient holds an inf or NaN the step is skipped (no weight,
// slot or global_step changes) and the scale halves; after loss_scale_period finite steps in a row
// (counted in the i64 variable "loss_scale/good_steps") it doubles.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/builder.h"
#include "ir/status.h"
#include "passes/data_parallel.h"

namespace kiln::optim {

// The global step variable (i64 scalar named kGlobalStepName, created on first use).
inline constexpr const char* kGlobalStepName = "global_step";
Value GlobalStep(GraphBuilder& g);
// The current step as f32 (for schedules): the value before this step's increment.
Value StepAsFloat(GraphBuilder& g);

// lr * gamma^floor(step / step_size).
Value StepDecay(GraphBuilder& g, double lr, int64_t step_size, double gamma);
// lr_min + (lr - lr_min) * (1 + cos(pi * min(step, total_steps) / total_steps)) / 2.
Value CosineDecay(GraphBuilder& g, double lr, int64_t total_steps, double lr_min = 0.0);
// lr * (step + 1) / warmup_steps for the first warmup_steps steps, then cosine decay from lr to
// lr_min over the remaining total_steps - warmup_steps.
Value LinearWarmupCosine(GraphBuilder& g, double lr, int64_t warmup_steps, int64_t total_steps,
                         double lr_min = 0.0);

// A schedule by name, as kiln's tools take it (--lr-schedule): "constant" (lr), "step"
// (StepDecay(lr, step_size, gamma)), "cosine" (CosineDecay over total_steps) or
// "linear-warmup-cosine" (LinearWarmupCosine(lr, warmup_steps, total_steps)).
struct Schedule {
  std::string kind = "constant";
  int64_t total_steps = 0;   // cosine, linear-warmup-cosine
  int64_t warmup_steps = 0;  // linear-warmup-cosine
  int64_t step_size = 0;     // step
  double gamma = 0.1;        // step
};
// kInvalidArgument naming the parameter a schedule lacks, or an unknown kind.
Status CheckSchedule(const Schedule& schedule);
// The schedule's learning rate as a scalar f32 graph value (it reads the global step).
Value ScheduleValue(GraphBuilder& g, double lr, const Schedule& schedule);

struct Options {
  double lr = 0.01;
  Value lr_schedule;       // if valid, used instead of `lr` (a scalar f32 graph value)
  Schedule schedule;       // else, unless "constant", the schedule Minimize builds from `lr`
  double clip_norm = 0.0;  // 0: no clipping
  // Momentum
  double momentum = 0.9;
  bool nesterov = false;
  // Adam / AdamW
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;
  double weight_decay = 0.0;  // AdamW: decoupled; the others: an L2 term in the gradient
  // Dynamic loss scaling (see above)
  bool loss_scaling = false;
  double initial_loss_scale = 32768.0;  // 2^15
  int64_t loss_scale_period = 2000;
  // Data-parallel training (passes/data_parallel.h): each gradient is all-reduced over the ranks
  // right after differentiation, before loss scaling's check, clipping and the updates.
  std::optional<DataParallelOptions> data_parallel;
};

class Optimizer {
 public:
  enum class Kind { kSGD, kMomentum, kAdam, kAdamW };
  Optimizer(Kind kind, Options options) : kind_(kind), options_(options) {}
  // The train target. var_list empty: every trainable float variable the loss depends on.
  // Errors (a non-scalar loss, no variables, a missing gradient) are recorded on the builder.
  Value Minimize(At loss, std::vector<Value> var_list = {});
  // The same optimizer, its gradients all-reduced over the ranks of a data-parallel run.
  Optimizer DataParallel(DataParallelOptions options) const {
    Optimizer copy = *this;
    copy.options_.data_parallel = options;
    return copy;
  }
  // The last Minimize's learning rate, a scalar f32 node named "learning_rate" (made unique) that
  // nothing reads: fetch it to see the schedule's value for the next step.
  const Value& learning_rate() const { return learning_rate_; }

 private:
  Kind kind_;
  Options options_;
  Value learning_rate_;
};

inline Optimizer SGD(Options o = {}) { return Optimizer(Optimizer::Kind::kSGD, o); }
inline Optimizer Momentum(Options o = {}) { return Optimizer(Optimizer::Kind::kMomentum, o); }
inline Optimizer Adam(Options o = {.lr = 1e-3}) { return Optimizer(Optimizer::Kind::kAdam, o); }
inline Optimizer AdamW(Options o = {.lr = 1e-3, .weight_decay = 1e-2}) {
  return Optimizer(Optimizer::Kind::kAdamW, o);
}
// By name: "sgd", "momentum", "adam", "adamw".
Result<Optimizer> ByName(const std::string& name, Options options);

}  // namespace kiln::optim
