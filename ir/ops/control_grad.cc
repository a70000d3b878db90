// The gradients of If and While (ir/ops/control.h): an If over the branches' gradients; a
// recorded rerun of the loop, then a reverse loop through the body's gradient.
#include "ir/ops/control_grad.h"

#include <mutex>

#include "ir/ops/array.h"
#include "ir/ops/control.h"
#include "ir/ops/math.h"

namespace kiln {
namespace {

std::mutex& GradientFnMutex() {
  static std::mutex mutex;
  return mutex;
}
BodyGradientFn& GradientFn() {
  static auto* fn = new BodyGradientFn();
  return *fn;
}

}  // namespace

void SetBodyGradientFn(BodyGradientFn fn) {
  std::lock_guard<std::mutex> lock(GradientFnMutex());
  GradientFn() = std::move(fn);
}

namespace internal {
namespace {

Result<BodyGradientFn> Differentiation(const GradContext& ctx) {
  std::lock_guard<std::mutex> lock(GradientFnMutex());
  if (!GradientFn())
    return ctx.node().MakeNodeError(ErrorCode::kInternal,
                                    "no body differentiation is installed (passes/autodiff)");
  return GradientFn();
}

// A While's gradient records at most this many iterations in place (more: a growing record).
constexpr int64_t kMaxRecordedIterations = int64_t{1} << 20;

}  // namespace

Status IfGradient(GradContext& ctx) {
  KILN_ASSIGN_OR_RETURN(BodyGradientFn differentiate, Differentiation(ctx));
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Graph> then_branch,
                        ctx.attrs().GetGraph("then_branch"));
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Graph> else_branch,
                        ctx.attrs().GetGraph("else_branch"));
  std::vector<bool> wrt;
  std::vector<Value> inputs;  // the arguments, then the float results' gradients
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    wrt.push_back(IsFloat(ctx.input(i).dtype()));
    inputs.push_back(ctx.input(i));
  }
  for (int i = 0; i < static_cast<int>(ctx.node().output_types.size()); ++i)
    if (IsFloat(ctx.output(i).dtype())) inputs.push_back(ctx.grad_or_zeros(i));
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Graph> then_grad, differentiate(*then_branch, wrt));
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Graph> else_grad, differentiate(*else_branch, wrt));
  std::vector<Value> grads = If(ctx.input(0), inputs, then_grad, else_grad);
  size_t k = 0;
  for (size_t i = 0; i < wrt.size(); ++i)
    if (wrt[i] && k < grads.size()) ctx.SetInputGrad(static_cast<int>(i) + 1, grads[k++]);
  return OkStatus();
}

Status WhileGradient(GradContext& ctx) {
  KILN_ASSIGN_OR_RETURN(BodyGradientFn differentiate, Differentiation(ctx));
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Graph> cond, ctx.attrs().GetGraph("cond"));
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Graph> body, ctx.attrs().GetGraph("body"));
  KILN_ASSIGN_OR_RETURN(int64_t max_iterations, ctx.attrs().GetInt("max_iterations"));
  KILN_ASSIGN_OR_RETURN(int64_t scan_rows, ctx.attrs().GetInt("scan_rows"));
  GraphBuilder& g = ctx.builder();
  const int n = ctx.num_inputs();
  const int s = static_cast<int>(ctx.node().output_types.size()) - n;  // scan outputs
  // A loop variable the body passes through unchanged (a weight) needs no record; every other
  // one needs a type that the body keeps, so that its values stack.
  std::vector<Value> v0;
  std::vector<bool> wrt;
  std::vector<int> varying;
  for (int k = 0; k < n; ++k) {
    const Value& in = ctx.input(k);
    const TensorRef& result = body->outputs().at(k).tensor;
    const bool kept = result.port == 0 && result.node == body->inputs().at(k);
    if (!kept && !(ctx.output(k).type() == in.type()))
      return ctx.node().MakeNodeError(
          ErrorCode::kUnimplemented, "has no gradient here: loop variable ", k, " is ",
          in.type().ToString(), " on entry and ", ctx.output(k).type().ToString(),
          " after the loop; the gradient needs a type that the body keeps");
    if (!kept) varying.push_back(k);
    v0.push_back(in);
    wrt.push_back(IsFloat(in.dtype()));
  }
  const int r = static_cast<int>(varying.size());
  // 1. The loop again with an iteration count, (v..., count), stacking the loop's own scan
  //    outputs, then each varying loop variable on entry to each iteration: (v..., count,
  //    scans..., record...). A bounded loop without scan outputs of its own records max_iterations
  //    rows from the start (static shapes, as XLA needs a bound for a loop's gradient); otherwise
  //    the record has the loop's own rows (one per iteration without scan_rows).
  const int64_t rows = s > 0 ? scan_rows
                       : max_iterations >= 0 && max_iterations <= kMaxRecordedIterations
                           ? max_iterations
                           : -1;
  std::vector<TensorType> recorded;
  for (const Value& v : v0) recorded.push_back(v.type());
  recorded.push_back({i64, Shape{}});
  v0.push_back(g.Scalar(0, i64));
  auto first = [n](const std::vector<Value>& a) {
    return std::vector<Value>(a.begin(), a.begin() + n);
  };
  Status inlined_error = OkStatus();  // from inside a BuildBody callback
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Graph> record_cond,
                        BuildBody(recorded, [&](const std::vector<Value>& a) {
                          Result<std::vector<Value>> c = CallBody(*a[0].builder(), *cond, first(a));
                          if (!c.ok()) inlined_error = c.error();
                          return c.ok() ? *c : std::vector<Value>{};
                        }));
  KILN_RETURN_IF_ERROR(inlined_error);
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Graph> record_body,
                        BuildBody(recorded, [&](const std::vector<Value>& a) {
                          Result<std::vector<Value>> results =
                              CallBody(*a[0].builder(), *body, first(a));
                          if (!results.ok()) {
                            inlined_error = results.error();
                            return std::vector<Value>{};
                          }
                          std::vector<Value> next(results->begin(), results->begin() + n);
                          next.push_back(a[n] + 1.0);
                          next.insert(next.end(), results->begin() + n, results->end());
                          for (int k : varying) next.push_back(a[k]);
                          return next;
                        }));
  KILN_RETURN_IF_ERROR(inlined_error);
  std::vector<Value> rerun = While(v0, record_cond, record_body, max_iterations,
                                   SourceLocation::current(), ctx.node().name, {s + r, rows});
  if (rerun.size() != static_cast<size_t>(n + 1 + s + r) || !rerun[0].valid())
    return ctx.node().MakeNodeError(ErrorCode::kInternal, "could not record its iterations");
  const Value count = rerun[n];
  const std::vector<Value> history(rerun.begin() + n + 1 + s, rerun.end());

  // 2. Backwards through the record: t = T-1 ... 0, the float variables' gradients carried:
  //    (t, grads..., record..., the unchanged variables..., the float scan outputs' gradients...).
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Graph> body_grad, differentiate(*body, wrt));
  std::vector<Value> back = {count - 1.0};
  std::vector<int> float_vars;
  for (int k = 0; k < n; ++k)
    if (wrt[k]) {
      float_vars.push_back(k);
      back.push_back(ctx.grad_or_zeros(k));
    }
  const int m = static_cast<int>(float_vars.size());
  back.insert(back.end(), history.begin(), history.end());
  // Where each loop variable's value entering iteration t comes from: row t of its record, or
  // (one the body keeps) its value on entry, carried along as it is.
  std::vector<int> record_of(n, -1), carried_at(n, -1);
  for (int j = 0; j < r; ++j) record_of[varying[j]] = 1 + m + j;
  for (int k = 0; k < n; ++k)
    if (record_of[k] < 0) {
      carried_at[k] = static_cast<int>(back.size());
      back.push_back(ctx.input(k));
    }
  std::vector<int> scan_grad_at;  // where each float scan output's gradient is carried
  for (int k = 0; k < s; ++k)
    if (IsFloat(ctx.output(n + k).dtype())) {
      scan_grad_at.push_back(static_cast<int>(back.size()));
      back.push_back(ctx.grad_or_zeros(n + k));
    }
  std::vector<TensorType> back_types;
  for (const Value& v : back) back_types.push_back(v.type());
  KILN_ASSIGN_OR_RETURN(
      std::shared_ptr<const Graph> back_cond,
      BuildBody(back_types, [](const std::vector<Value>& a) {
        return std::vector<Value>{GreaterEqual(a[0], a[0].builder()->Scalar(0, i64))};
      }));
  KILN_ASSIGN_OR_RETURN(
      std::shared_ptr<const Graph> back_body,
      BuildBody(back_types, [&](const std::vector<Value>& a) {
        std::vector<Value> at_t;  // the loop variables entering iteration t, then the grads
        for (int k = 0; k < n; ++k)
          at_t.push_back(record_of[k] >= 0 ? Gather(a[record_of[k]], a[0]) : a[carried_at[k]]);
        for (int j = 0; j < m; ++j) at_t.push_back(a[1 + j]);
        for (int at : scan_grad_at) at_t.push_back(Gather(a[at], a[0]));
        Result<std::vector<Value>> d = CallBody(*a[0].builder(), *body_grad, at_t);
        if (!d.ok()) {
          inlined_error = d.error();
          return std::vector<Value>{};
        }
        std::vector<Value> next = {a[0] - 1.0};
        next.insert(next.end(), d->begin(), d->end());
        next.insert(next.end(), a.begin() + 1 + m, a.end());
        return next;
      }));
  KILN_RETURN_IF_ERROR(inlined_error);
  std::vector<Value> grads = While(back, back_cond, back_body);
  for (int j = 0; j < m && 1 + j < static_cast<int>(grads.size()); ++j)
    ctx.SetInputGrad(float_vars[j], grads[1 + j]);
  return OkStatus();
}

}  // namespace internal
}  // namespace kiln
