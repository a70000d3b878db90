// Gradients of op family "nn" (semantics in ir/ops/nn.h). Pooling uses the backward ops
// MaxPool2DGrad / AvgPool2DGrad; the others are composed of math, reduce and array ops that take
// run-time shapes from the forward tensors (BroadcastLike, SumLike, ShapeOf), so unknown (-1)
// dims work.
#include "ir/ops/nn_grad.h"

#include "ir/ops/array.h"
#include "ir/ops/array_like.h"
#include "ir/ops/math.h"
#include "ir/ops/nn.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/reduce.h"

namespace kiln::internal {
namespace {

double FloatAttr(const GradContext& ctx, const char* name) {
  return ctx.attrs().Find(name)->get<double>();
}
bool BoolAttr(const GradContext& ctx, const char* name) {
  return ctx.attrs().Find(name)->get<bool>();
}
int64_t IntAttr(const GradContext& ctx, const char* name) {
  return ctx.attrs().Find(name)->get<int64_t>();
}

// begin, begin + 1, ..., end - 1.
std::vector<int64_t> AxesFrom(int64_t begin, int64_t end) {
  std::vector<int64_t> axes;
  for (int64_t a = begin; a < end; ++a) axes.push_back(a);
  return axes;
}

Pool2DOptions PoolOptions(const GradContext& ctx) {
  Pool2DOptions o;
  o.kernel = ctx.attrs().Find("kernel")->get<std::vector<int64_t>>();
  o.strides = ctx.attrs().Find("strides")->get<std::vector<int64_t>>();
  o.pads = ctx.attrs().Find("pads")->get<std::vector<int64_t>>();
  o.ceil_mode = BoolAttr(ctx, "ceil_mode");
  if (ctx.attrs().Find("count_include_pad"))
    o.count_include_pad = BoolAttr(ctx, "count_include_pad");
  return o;
}

Status MaxPool2DGradFn(GradContext& ctx) {
  ctx.SetInputGrad(0, MaxPool2DGrad(ctx.input(0), ctx.grad(0), PoolOptions(ctx)));
  return OkStatus();
}

Status AvgPool2DGradFn(GradContext& ctx) {
  ctx.SetInputGrad(0, AvgPool2DGrad(ctx.grad(0), ctx.input(0), PoolOptions(ctx)));
  return OkStatus();
}

Status GlobalAvgPoolGrad(GradContext& ctx) {
  Value x = ctx.input(0);
  ctx.SetInputGrad(0, BroadcastLike(ctx.grad(0), x) / CountOverAxes(x, AxesFrom(2, x.rank())));
  return OkStatus();
}

// The gradient of x for y = scale * xhat + bias with xhat = (x - mean) * rstd normalized over
// `axes` with the batch statistics: dxhat minus its mean and its projection on xhat (the paths
// through the mean and the variance), times rstd.
Value NormalizedInputGrad(Value dxhat, Value xhat, Value rstd, const std::vector<int64_t>& axes) {
  return rstd * (dxhat - Mean(dxhat, axes, true) - xhat * Mean(dxhat * xhat, axes, true));
}

// Inputs (x, scale, bias, mean, var), outputs (y, batch_mean, batch_var); channels on axis 1.
Status BatchNormGradFn(GradContext& ctx) {
  Value x = ctx.input(0), scale = ctx.input(1);
  const bool training = BoolAttr(ctx, "training");
  std::vector<int64_t> reduced = AxesFrom(1, x.rank());
  reduced[0] = 0;  // every axis but 1
  // [C] -> [C, 1, ..., 1], which broadcasts against x's [N, C, d1, ...].
  const std::vector<int64_t> trailing = AxesFrom(1, x.rank() - 1);
  auto per_channel = [&trailing](Value v) { return trailing.empty() ? v : Unsqueeze(v, trailing); };
  // The statistics used: the batch's in training, the mean/var inputs otherwise.
  Value mean = ctx.output(1), var = ctx.output(2);
  // Built only where used, so the common training case adds no dead nodes.
  auto rstd = [&] { return Rsqrt(var + FloatAttr(ctx, "epsilon")); };
  auto centered = [&] { return x - per_channel(mean); };
  Value dx, dmean = ctx.grad(1), dvar = ctx.grad(2);
  auto add = [](Value& total, Value v) { total = total.valid() ? total + v : v; };
  if (ctx.grad(0).valid() && training) {
    std::vector<Value> grads =
        BatchNormGrad(ctx.grad(0), x, scale, mean, var, FloatAttr(ctx, "epsilon"));
    add(dx, grads[0]);
    ctx.SetInputGrad(1, grads[1]);
    ctx.SetInputGrad(2, grads[2]);
  } else if (ctx.grad(0).valid()) {
    Value dy = ctx.grad(0), r = rstd();
    Value xhat = centered() * per_channel(r);
    Value dscale = Sum(dy * xhat, reduced), dbias = Sum(dy, reduced);
    ctx.SetInputGrad(1, dscale);
    ctx.SetInputGrad(2, dbias);
    add(dx, dy * per_channel(scale * r));
    // y = (x - mean) * scale * rstd + bias, rstd = (var + eps)^-1/2.
    add(dmean, -(dbias * scale * r));
    add(dvar, -0.5 * dscale * scale * r * r);
  }
  if (training) {
    // batch_mean = sum(x) / M and batch_var = sum((x - batch_mean)^2) / M per channel (the path
    // through batch_mean in batch_var vanishes: sum(x - batch_mean) = 0).
    Value m = CountOverAxes(x, reduced);
    if (dmean.valid()) add(dx, BroadcastLike(per_channel(dmean), x) / m);
    if (dvar.valid()) add(dx, per_channel(2.0 * dvar / m) * centered());
  } else {
    // batch_mean and batch_var are the mean and var inputs passed through.
    if (dmean.valid()) ctx.SetInputGrad(3, dmean);
    if (dvar.valid()) ctx.SetInputGrad(4, dvar);
  }
  if (dx.valid()) ctx.SetInputGrad(0, dx);
  return OkStatus();
}

// Inputs (x, scale, bias), normalized over [axis, rank); scale and bias shaped x.shape[axis:].
Status LayerNormGrad(GradContext& ctx) {
  Value x = ctx.input(0), scale = ctx.input(1), dy = ctx.grad(0);
  int64_t axis = IntAttr(ctx, "axis");
  if (axis < 0) axis += x.rank();
  const std::vector<int64_t> axes = AxesFrom(axis, x.rank());
  Value xc = x - Mean(x, axes, true);
  Value rstd = Rsqrt(Mean(xc * xc, axes, true) + FloatAttr(ctx, "epsilon"));
  Value xhat = xc * rstd;
  ctx.SetInputGrad(0, NormalizedInputGrad(dy * scale, xhat, rstd, axes));
  ctx.SetInputGrad(1, SumToShapeOf(dy * xhat, scale));
  ctx.SetInputGrad(2, SumToShapeOf(dy, ctx.input(2)));
  return OkStatus();
}

Status SoftmaxGrad(GradContext& ctx) {
  Value y = ctx.output(0), dy = ctx.grad(0);
  ctx.SetInputGrad(0, y * (dy - Sum(dy * y, {IntAttr(ctx, "axis")}, true)));
  return OkStatus();
}

Status LogSoftmaxGrad(GradContext& ctx) {
  Value y = ctx.output(0), dy = ctx.grad(0);
  ctx.SetInputGrad(0, dy - Exp(y) * Sum(dy, {IntAttr(ctx, "axis")}, true));
  return OkStatus();
}

// loss = mean over n of -log_softmax(logits)[n, labels[n]]; labels get no gradient.
Status SoftmaxCrossEntropyGradFn(GradContext& ctx) {
  ctx.SetInputGrad(0, SoftmaxCrossEntropyGrad(ctx.input(0), ctx.input(1), ctx.grad(0)));
  return OkStatus();
}

Status DropoutGrad(GradContext& ctx) {
  Value dy = ctx.grad(0);
  if (!dy.valid()) return OkStatus();  // only the (bool) mask has consumers
  const double rate = FloatAttr(ctx, "rate");
  if (BoolAttr(ctx, "training") && rate > 0)
    ctx.SetInputGrad(0, dy * MaskLike(ctx.output(1), dy) / (1.0 - rate));
  else
    ctx.SetInputGrad(0, dy);
  return OkStatus();
}

}  // namespace

const std::map<std::string, GradFn>& NnGradients() {
  static const std::map<std::string, GradFn> grads = {
      {"MaxPool2D", MaxPool2DGradFn},
      {"AvgPool2D", AvgPool2DGradFn},
      {"GlobalAvgPool", GlobalAvgPoolGrad},
      {"BatchNorm", BatchNormGradFn},
      {"LayerNorm", LayerNormGrad},
      {"Softmax", SoftmaxGrad},
      {"LogSoftmax", LogSoftmaxGrad},
      {"SoftmaxCrossEntropy", SoftmaxCrossEntropyGradFn},
      {"Dropout", DropoutGrad},
  };
  return grads;
}

}  // namespace kiln::internal
