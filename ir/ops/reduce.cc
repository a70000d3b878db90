#include "ir/ops/reduce.h"

#include <algorithm>
#include <sstream>

#include "ir/ops/op_helpers.h"
#include "ir/ops/reduce_grad.h"
#include "ir/ops/registration.h"

namespace kiln {

using internal::MakeOp;

namespace {

Value ReduceOp(const char* op, At x, std::vector<int64_t> axes, bool keepdims) {
  AttrMap a;
  a.Set("axes", std::move(axes));
  a.Set("keepdims", keepdims);
  return MakeOp(op, {x.value}, std::move(a), x.loc);
}

Value ArgOp(const char* op, At x, int64_t axis, bool keepdims, bool select_last_index) {
  AttrMap a;
  a.Set("axis", axis);
  a.Set("keepdims", keepdims);
  a.Set("select_last_index", select_last_index);
  return MakeOp(op, {x.value}, std::move(a), x.loc);
}

std::string JoinAxes(const std::vector<int>& axes) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < axes.size(); ++i) os << (i ? ", " : "") << axes[i];
  os << "]";
  return os.str();
}

// Which reductions have no value over zero elements.
enum class EmptyRule { kAllowed, kFailForIntegers, kFail };

// Fails when the reduction is known to cover zero elements while the output has elements (an
// unknown dim may be 0, so it never proves the output non-empty).
Status CheckNotEmpty(const InferContext& ctx, const std::vector<int>& axes, EmptyRule rule) {
  if (rule == EmptyRule::kAllowed || (rule == EmptyRule::kFailForIntegers && IsFloat(ctx.dtype(0))))
    return OkStatus();
  const Shape& s = ctx.shape(0);
  bool empty_reduction = false, output_has_elements = true;
  for (int i = 0; i < s.rank(); ++i) {
    bool reduced = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (reduced && s[i] == 0) empty_reduction = true;
    if (!reduced && s[i] <= 0) output_has_elements = false;
  }
  if (!empty_reduction || !output_has_elements) return OkStatus();
  return ctx.Fail("reduces over zero elements (input ", DTypeName(ctx.dtype(0)), s.ToString(),
                  ", axes ", JoinAxes(axes), "); ", ctx.node().op,
                  rule == EmptyRule::kFail ? "" : " of an integer tensor",
                  " needs at least one element");
}

Shape ReducedShape(const Shape& in, const std::vector<int>& axes, bool keepdims) {
  std::vector<int64_t> dims;
  for (int i = 0; i < in.rank(); ++i) {
    bool reduced = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (!reduced)
      dims.push_back(in[i]);
    else if (keepdims)
      dims.push_back(1);
  }
  return Shape(std::move(dims));
}

InferFn InferReduce(EmptyRule rule) {
  return [rule](InferContext& ctx) -> Status {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> attr, ctx.attrs().GetInts("axes"));
    KILN_ASSIGN_OR_RETURN(bool keepdims, ctx.attrs().GetBool("keepdims"));
    Result<std::vector<int>> axes = NormalizeReduceAxes(attr, ctx.shape(0).rank());
    if (!axes.ok()) return ctx.Fail("attribute 'axes': ", axes.error().message());
    KILN_RETURN_IF_ERROR(CheckNotEmpty(ctx, *axes, rule));
    ctx.AddOutput(ctx.dtype(0), ReducedShape(ctx.shape(0), *axes, keepdims));
    return OkStatus();
  };
}

Status InferArg(InferContext& ctx) {
  KILN_ASSIGN_OR_RETURN(int64_t axis, ctx.attrs().GetInt("axis"));
  KILN_ASSIGN_OR_RETURN(bool keepdims, ctx.attrs().GetBool("keepdims"));
  KILN_RETURN_IF_ERROR(ctx.attrs().GetBool("select_last_index").status());
  if (ctx.shape(0).rank() == 0)
    return ctx.Fail("needs an input of rank >= 1, got a scalar ", ctx.input(0).ToString());
  Result<std::vector<int>> axes = NormalizeReduceAxes({axis}, ctx.shape(0).rank());
  if (!axes.ok()) return ctx.Fail("attribute 'axis': ", axes.error().message());
  KILN_RETURN_IF_ERROR(CheckNotEmpty(ctx, *axes, EmptyRule::kFail));
  ctx.AddOutput(i64, ReducedShape(ctx.shape(0), *axes, keepdims));
  return OkStatus();
}

Status InferTopK(InferContext& ctx) {
  KILN_ASSIGN_OR_RETURN(int64_t k, ctx.attrs().GetInt("k"));
  KILN_ASSIGN_OR_RETURN(int64_t axis, ctx.attrs().GetInt("axis"));
  KILN_RETURN_IF_ERROR(ctx.attrs().GetBool("largest").status());
  KILN_RETURN_IF_ERROR(ctx.attrs().GetBool("sorted").status());
  const Shape& x = ctx.shape(0);
  if (x.rank() == 0)
    return ctx.Fail("needs an input of rank >= 1, got a scalar ", ctx.input(0).ToString());
  Result<std::vector<int>> axes = NormalizeReduceAxes({axis}, x.rank());
  if (!axes.ok()) return ctx.Fail("attribute 'axis': ", axes.error().message());
  const int d = axes->at(0);
  if (k < 0 || (x[d] >= 0 && k > x[d]))
    return ctx.Fail("k is ", k, " for ", x[d], " elements along axis ", d, " of ",
                    ctx.input(0).ToString());
  Shape out = x;
  out.set_dim(d, k);
  ctx.AddOutput(ctx.dtype(0), out);
  ctx.AddOutput(i64, out);
  return OkStatus();
}

}  // namespace

Value Sum(At x, std::vector<int64_t> axes, bool keepdims) {
  return ReduceOp("Sum", x, std::move(axes), keepdims);
}
Value Mean(At x, std::vector<int64_t> axes, bool keepdims) {
  return ReduceOp("Mean", x, std::move(axes), keepdims);
}
Value Max(At x, std::vector<int64_t> axes, bool keepdims) {
  return ReduceOp("Max", x, std::move(axes), keepdims);
}
Value Min(At x, std::vector<int64_t> axes, bool keepdims) {
  return ReduceOp("Min", x, std::move(axes), keepdims);
}
Value Prod(At x, std::vector<int64_t> axes, bool keepdims) {
  return ReduceOp("Prod", x, std::move(axes), keepdims);
}
Value ArgMax(At x, int64_t axis, bool keepdims, bool select_last_index) {
  return ArgOp("ArgMax", x, axis, keepdims, select_last_index);
}
Value ArgMin(At x, int64_t axis, bool keepdims, bool select_last_index) {
  return ArgOp("ArgMin", x, axis, keepdims, select_last_index);
}
TopKResult TopK(At x, int64_t k, int64_t axis, bool largest, bool sorted) {
  AttrMap a;
  a.Set("k", k);
  a.Set("axis", axis);
  a.Set("largest", largest);
  a.Set("sorted", sorted);
  std::vector<Value> out = internal::MakeOpN("TopK", {x.value}, std::move(a), x.loc, 2);
  return {out.at(0), out.at(1)};
}

Result<std::vector<int>> NormalizeReduceAxes(const std::vector<int64_t>& axes, int rank) {
  std::vector<int> out;
  if (axes.empty()) {
    for (int i = 0; i < rank; ++i) out.push_back(i);
    return out;
  }
  for (int64_t a : axes) {
    if (a < -rank || a >= rank)
      return MakeError(ErrorCode::kInvalidArgument, "axis ", a, " is out of range for rank ", rank);
    int n = static_cast<int>(a < 0 ? a + rank : a);
    if (std::find(out.begin(), out.end(), n) != out.end())
      return MakeError(ErrorCode::kInvalidArgument, "axis ", a, " names dimension ", n,
                       " more than once");
    out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Value SumLike(At x, Value like) { return internal::MakeOp("SumLike", {x.value, like}, {}, x.loc); }

namespace {
Status InferSumLike(InferContext& ctx) {
  const Shape& x = ctx.shape(0);
  const Shape& like = ctx.shape(1);
  Result<Shape> b = BroadcastShapes(like, x);
  if (!b.ok() || b->rank() != x.rank() || (x.IsFullyKnown() && *b != x))
    return ctx.Fail("cannot sum ", x.ToString(), " down to ", like.ToString(), ": ",
                    like.ToString(), " does not broadcast to ", x.ToString());
  ctx.AddOutput(ctx.dtype(0), like);
  return OkStatus();
}
}  // namespace

void RegisterReduceOps(OpRegistry& registry) {
  // Each op has its gradient in ReduceGradients() or is marked not differentiable (ArgMax,
  // ArgMin).
  internal::RegistryWithGradients r(registry, internal::ReduceGradients());
  r.Register(OpDefBuilder("SumLike", "reduce")
                 .Input("x", "T")
                 .Input("like", "L")
                 .Output("y")
                 .Types("T", NumericTypes())
                 .Infer(InferSumLike)
                 .Precision(PrecisionList::kKeep32)
                 .Flops(FlopsPerInputElement(0))
                 .Build());
  auto reduce = [&r](const char* op, EmptyRule rule) {
    r.Register(OpDefBuilder(op, "reduce")
                   .Input("x", "T")
                   .Output("y")
                   .Types("T", NumericTypes())
                   .Attr("axes", AttrType::kInts, std::vector<int64_t>{})
                   .Attr("keepdims", AttrType::kBool, false)
                   .Infer(InferReduce(rule))
                   .Precision(PrecisionList::kKeep32)  // sums in 16 bits lose too much
                   .Flops(FlopsPerInputElement(0))
                   .Build());
  };
  reduce("Sum", EmptyRule::kAllowed);
  reduce("Prod", EmptyRule::kAllowed);
  reduce("Mean", EmptyRule::kFailForIntegers);
  reduce("Max", EmptyRule::kFail);
  reduce("Min", EmptyRule::kFail);
  for (const char* op : {"ArgMax", "ArgMin"})
    r.Register(OpDefBuilder(op, "reduce")
                   .Input("x", "T")
                   .Output("y")
                   .Types("T", NumericTypes())
                   .Attr("axis", AttrType::kInt, int64_t{0})
                   .Attr("keepdims", AttrType::kBool, true)
                   .Attr("select_last_index", AttrType::kBool, false)
                   .Infer(InferArg)
                   .NotDifferentiable()
                   .Precision(PrecisionList::kNeutral)
                   .Flops(FlopsPerInputElement(0))
                   .Build());
  r.Register(OpDefBuilder("TopK", "reduce")
                 .Input("x", "T")
                 .Output("values")
                 .Output("indices")
                 .Types("T", NumericTypes())
                 .RequiredAttr("k", AttrType::kInt)
                 .Attr("axis", AttrType::kInt, int64_t{-1})
                 .Attr("largest", AttrType::kBool, true)
                 .Attr("sorted", AttrType::kBool, true)
                 .Infer(InferTopK)
                 .Precision(PrecisionList::kNeutral)
                 .Flops(FlopsPerInputElement(0))
                 .Build());
}

}  // namespace kiln
