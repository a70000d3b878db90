#include "passes/optim.h"

#include <algorithm>
#include <optional>
#include <set>

#include "ir/ops/math.h"
#include "ir/ops/reduce.h"
#include "ir/ops/state.h"
#include "passes/autodiff.h"

namespace kiln::optim {
namespace {

constexpr const char* kGlobalStep = kGlobalStepName;

Value Slot(GraphBuilder& g, const Value& var, const char* slot) {
  return Variable(g, var.node_name() + "/" + slot, var.dtype(), var.shape(), Initializer::Zeros(),
                  false);
}

// Every trainable float Variable that `loss` depends on, in graph order.
std::vector<Value> TrainableVariables(GraphBuilder& g, const Value& loss) {
  const Graph& graph = g.graph();
  std::set<std::string> needed;
  std::vector<std::string> stack = {loss.node_name()};
  while (!stack.empty()) {
    std::string name = stack.back();
    stack.pop_back();
    if (!needed.insert(name).second) continue;
    for (const TensorRef& in : graph.FindNode(name)->inputs) stack.push_back(in.node);
  }
  std::vector<Value> vars;
  for (size_t i = 0; i < graph.nodes().size(); ++i) {
    const Node& n = graph.nodes()[i];
    const AttrValue* trainable = n.attrs.Find("trainable");
    if (n.op == "Variable" && needed.count(n.name) && IsFloat(n.output_types[0].dtype) &&
        !(trainable && trainable->type() == AttrType::kBool && !trainable->get<bool>()))
      vars.emplace_back(&g, i, 0);
  }
  return vars;
}

// Dynamic loss scaling's graph ops (see optim.h).
struct LossScale {
  Value scale;   // the f32 variable "loss_scale"
  Value finite;  // bool scalar: every gradient is finite this step

  // Multiplies `loss` by the scale.
  static LossScale Begin(GraphBuilder& g, const Options& o, Value& loss) {
    LossScale ls;
    ls.scale =
        Variable(g, "loss_scale", f32, {}, Initializer::Constant(o.initial_loss_scale), false);
    loss = loss * Cast(ls.scale, loss.dtype());
    return ls;
  }

  // Divides the gradients by the scale and finds whether they are all finite: a sum of g * 0 is
  // 0 exactly when every element of g is finite (inf * 0 and NaN * 0 are NaN).
  void Unscale(GraphBuilder& g, std::vector<Value>& grads) {
    Value poison;
    for (Value& grad : grads) {
      grad = grad / Cast(scale, grad.dtype());
      Value p = Cast(Sum(grad * 0.0), f32);
      poison = poison.valid() ? poison + p : p;
    }
    finite = Equal(poison, g.Scalar(0.0));
  }

  // The value `var` takes: `updated` on a finite step, its old value otherwise.
  Value Gate(const Value& var, const Value& updated) const {
    return finite.valid() ? Select(finite, updated, var) : updated;
  }

  // Halves the scale on a skipped step; doubles it after `period` finite steps in a row.
  std::vector<Value> Update(GraphBuilder& g, int64_t period) const {
    Value good = Variable(g, "loss_scale/good_steps", i64, {}, Initializer::Zeros(), false);
    Value next_good = good + g.Scalar(1, i64);
    Value grow = GreaterEqual(next_good, g.Scalar(static_cast<double>(period), i64));
    Value new_scale = Select(finite, Select(grow, scale * 2.0, scale), scale * 0.5);
    Value new_good = Select(finite, Select(grow, g.Scalar(0, i64), next_good), g.Scalar(0, i64));
    return {Assign(scale, new_scale), Assign(good, new_good)};
  }
};

}  // namespace

Value GlobalStep(GraphBuilder& g) {
  Result<Value> existing = g.Find(kGlobalStep);
  if (existing.ok()) return *existing;
  return Variable(g, kGlobalStep, i64, {}, Initializer::Zeros(), false);
}

Value StepAsFloat(GraphBuilder& g) { return Cast(GlobalStep(g), f32); }

Value StepDecay(GraphBuilder& g, double lr, int64_t step_size, double gamma) {
  Value epochs = Floor(StepAsFloat(g) / static_cast<double>(step_size));
  return lr * Pow(g.Scalar(gamma), epochs);
}

Value CosineDecay(GraphBuilder& g, double lr, int64_t total_steps, double lr_min) {
  Value progress = Minimum(StepAsFloat(g), g.Scalar(static_cast<double>(total_steps))) /
                   static_cast<double>(total_steps);
  return lr_min + (lr - lr_min) * 0.5 * (1.0 + Cos(3.141592653589793 * progress));
}

Value LinearWarmupCosine(GraphBuilder& g, double lr, int64_t warmup_steps, int64_t total_steps,
                         double lr_min) {
  const double warmup = static_cast<double>(warmup_steps);
  const double decay = static_cast<double>(std::max<int64_t>(1, total_steps - warmup_steps));
  Value step = StepAsFloat(g);
  Value warming = lr * Minimum(step + 1.0, g.Scalar(warmup)) / warmup;
  Value progress = Minimum(Maximum(step - warmup, g.Scalar(0.0)), g.Scalar(decay)) / decay;
  Value decaying = lr_min + (lr - lr_min) * 0.5 * (1.0 + Cos(3.141592653589793 * progress));
  return Select(Less(step, g.Scalar(warmup)), warming, decaying);
}

Status CheckSchedule(const Schedule& s) {
  auto need = [&](const char* what) {
    return MakeError(ErrorCode::kInvalidArgument, "the ", s.kind, " schedule needs ", what);
  };
  if (s.kind == "constant") return OkStatus();
  if (s.kind == "step") {
    if (s.step_size < 1) return need("a step size >= 1");
    if (!(s.gamma > 0)) return need("a gamma > 0");
    return OkStatus();
  }
  if (s.kind == "cosine" || s.kind == "linear-warmup-cosine") {
    if (s.total_steps < 1) return need("the total number of steps (>= 1)");
    if (s.kind == "linear-warmup-cosine" && (s.warmup_steps < 1 || s.warmup_steps >= s.total_steps))
      return need("warmup steps >= 1 and fewer than the total steps");
    return OkStatus();
  }
  return MakeError(ErrorCode::kInvalidArgument, "unknown learning-rate schedule '", s.kind,
                   "' (expected constant, step, cosine or linear-warmup-cosine)");
}

Value ScheduleValue(GraphBuilder& g, double lr, const Schedule& s) {
  if (s.kind == "step") return StepDecay(g, lr, s.step_size, s.gamma);
  if (s.kind == "cosine") return CosineDecay(g, lr, s.total_steps);
  if (s.kind == "linear-warmup-cosine")
    return LinearWarmupCosine(g, lr, s.warmup_steps, s.total_steps);
  return g.Scalar(lr);
}

Result<Optimizer> ByName(const std::string& name, Options o) {
  if (name == "sgd") return SGD(o);
  if (name == "momentum") return Momentum(o);
  if (name == "adam") return Optimizer(Optimizer::Kind::kAdam, o);
  if (name == "adamw") return Optimizer(Optimizer::Kind::kAdamW, o);
  return MakeError(ErrorCode::kInvalidArgument, "unknown optimizer '", name,
                   "' (expected sgd, momentum, adam or adamw)");
}

Value Optimizer::Minimize(At loss_at, std::vector<Value> var_list) {
  Value loss = loss_at.value;
  if (!loss.valid()) return Value();
  GraphBuilder& g = *loss.builder();
  auto fail = [&](const std::string& message) {
    g.RecordError(MakeError(ErrorCode::kInvalidArgument, "at ", loss_at.loc.ToString(),
                            ": Minimize: ", message));
    return Value();
  };
  if (loss.rank() != 0 || !IsFloat(loss.dtype()))
    return fail("the loss must be a float scalar, got " + loss.type().ToString());
  if (var_list.empty()) var_list = TrainableVariables(g, loss);
  if (var_list.empty()) return fail("the loss depends on no trainable variable");
  auto scope = g.Scope("optimizer").Enter();
  std::optional<LossScale> loss_scale;
  if (options_.loss_scaling) loss_scale = LossScale::Begin(g, options_, loss);
  Result<std::vector<Value>> grads_or = Gradients({loss}, var_list);
  if (!grads_or.ok()) return fail(grads_or.error().message());
  std::vector<Value> grads = *grads_or;
  if (options_.data_parallel) grads = AllReduceGradients(grads, *options_.data_parallel);
  if (loss_scale) loss_scale->Unscale(g, grads);
  // var -= delta, or on a loss-scaled step: var = finite ? var - delta : var.
  auto subtract = [&](const Value& var, const Value& delta) {
    return loss_scale ? Assign(var, loss_scale->Gate(var, var - delta)) : AssignSub(var, delta);
  };
  // var -= lr * direction: one pass over the weights (AssignSub's scale) where no loss scaling
  // gates the step.
  auto descend = [&](const Value& var, const Value& lr_var, const Value& direction) {
    return loss_scale ? subtract(var, lr_var * direction) : AssignSub(var, direction, lr_var);
  };
  auto assign = [&](const Value& var, const Value& value) {
    return Assign(var, loss_scale ? loss_scale->Gate(var, value) : value);
  };

  if (options_.clip_norm > 0) {
    Value sum_sq;
    for (const Value& grad : grads) {
      Value s = Cast(Sum(Square(grad)), f32);
      sum_sq = sum_sq.valid() ? sum_sq + s : s;
    }
    Value norm = Sqrt(sum_sq);
    Value scale = options_.clip_norm / Maximum(norm, g.Scalar(options_.clip_norm));
    for (Value& grad : grads) grad = grad * Cast(scale, grad.dtype());
  }

  // This step's number, from 1 (skipped loss-scaled steps do not count).
  Value step = loss_scale ? AssignAdd(GlobalStep(g), Cast(loss_scale->finite, i64))
                          : AssignAdd(GlobalStep(g), g.Scalar(1, i64));
  if (Status s = CheckSchedule(options_.schedule); !s.ok()) {
    g.RecordError(s.error());
    return Value();
  }
  Value lr = options_.lr_schedule.valid() ? options_.lr_schedule
                                          : ScheduleValue(g, options_.lr, options_.schedule);
  learning_rate_ = Identity(Cast(lr, f32)).Named(g.UniqueName("learning_rate"));
  std::vector<Value> updates = {step};
  for (size_t i = 0; i < var_list.size(); ++i) {
    const Value& w = var_list[i];
    Value grad = grads[i];
    if (kind_ != Kind::kAdamW && options_.weight_decay > 0)
      grad = grad + options_.weight_decay * w;  // L2, as torch.optim's weight_decay
    Value lr_w = Cast(lr, w.dtype());
    switch (kind_) {
      case Kind::kSGD:
        updates.push_back(descend(w, lr_w, grad));
        break;
      case Kind::kMomentum: {
        Value buffer = Slot(g, w, "momentum");
        Value v = assign(buffer, options_.momentum * buffer + grad);
        Value direction = options_.nesterov ? grad + options_.momentum * v : v;
        updates.push_back(descend(w, lr_w, direction));
        break;
      }
      case Kind::kAdam:
      case Kind::kAdamW: {
        Value t = Cast(step, w.dtype());
        Value m_slot = Slot(g, w, "adam_m"), v_slot = Slot(g, w, "adam_v");
        Value m = assign(m_slot, options_.beta1 * m_slot + (1.0 - options_.beta1) * grad);
        Value v = assign(v_slot, options_.beta2 * v_slot + (1.0 - options_.beta2) * Square(grad));
        Value m_hat = m / (1.0 - Pow(g.Scalar(options_.beta1, w.dtype()), t));
        Value v_hat = v / (1.0 - Pow(g.Scalar(options_.beta2, w.dtype()), t));
        Value delta = lr_w * m_hat / (Sqrt(v_hat) + options_.epsilon);
        if (kind_ == Kind::kAdamW && options_.weight_decay > 0)
          delta = delta + lr_w * options_.weight_decay * w;
        updates.push_back(subtract(w, delta));
        break;
      }
    }
  }
  if (loss_scale)
    for (const Value& u : loss_scale->Update(g, options_.loss_scale_period)) updates.push_back(u);
  for (const std::string& name : g.graph().update_ops()) {
    Result<Value> u = g.Find(name);
    if (u.ok()) updates.push_back(*u);
  }
  return Group(updates, g.UniqueName("train"));
}

}  // namespace kiln::optim
