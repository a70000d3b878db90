#include "ir/ops/linalg.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

#include "ir/ops/linalg_grad.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/registration.h"

namespace kiln {

using internal::MakeOp;

Value MatMul(At a, Value b, bool transpose_a, bool transpose_b, DType out_dtype) {
  AttrMap attrs;
  attrs.Set("transpose_a", transpose_a);
  attrs.Set("transpose_b", transpose_b);
  if (out_dtype != DType::kInvalid) attrs.Set("out_dtype", out_dtype);
  return MakeOp("MatMul", {a.value, b}, std::move(attrs), a.loc);
}

Value BiasAdd(At x, Value bias, int64_t axis) {
  AttrMap attrs;
  attrs.Set("axis", axis);
  return MakeOp("BiasAdd", {x.value, bias}, std::move(attrs), x.loc);
}

namespace {

AttrMap ConvAttrMap(const Conv2DOptions& options) {
  AttrMap attrs;
  attrs.Set("strides", options.strides);
  attrs.Set("pads", options.pads);
  attrs.Set("dilations", options.dilations);
  attrs.Set("groups", options.groups);
  return attrs;
}

}  // namespace

Value Conv2D(At x, Value w, const Conv2DOptions& options) {
  return MakeOp("Conv2D", {x.value, w}, ConvAttrMap(options), x.loc);
}

Value Conv2DBackpropInput(At dy, Value w, Value x_like, const Conv2DOptions& options) {
  return MakeOp("Conv2DBackpropInput", {dy.value, w, x_like}, ConvAttrMap(options), dy.loc);
}

Value Conv2DBackpropFilter(At x, Value dy, Value w_like, const Conv2DOptions& options) {
  return MakeOp("Conv2DBackpropFilter", {x.value, dy, w_like}, ConvAttrMap(options), x.loc);
}

namespace {

// An operand of MatMul seen as a stack of matrices, after numpy's 1-D promotion and the transpose.
struct Matrices {
  std::vector<int64_t> batch;
  int64_t rows = 1;
  int64_t cols = 1;
};

Matrices AsMatrices(const Shape& s, bool is_rhs, bool transpose) {
  Matrices m;
  if (s.rank() == 1) {
    (is_rhs ? m.rows : m.cols) = s[0];
    return m;
  }
  m.batch.assign(s.dims().begin(), s.dims().end() - 2);
  m.rows = s[s.rank() - 2];
  m.cols = s[s.rank() - 1];
  if (transpose) std::swap(m.rows, m.cols);
  return m;
}

Status InferMatMul(InferContext& ctx) {
  KILN_ASSIGN_OR_RETURN(bool ta, ctx.attrs().GetBool("transpose_a"));
  KILN_ASSIGN_OR_RETURN(bool tb, ctx.attrs().GetBool("transpose_b"));
  const Shape& sa = ctx.shape(0);
  const Shape& sb = ctx.shape(1);
  std::string operands = "a " + sa.ToString() + " (transpose_a=" + (ta ? "true" : "false") +
                         ") and b " + sb.ToString() + " (transpose_b=" + (tb ? "true" : "false") +
                         ")";
  if (sa.rank() < 1 || sb.rank() < 1)
    return ctx.Fail("operands must have rank >= 1, got ", operands);
  Matrices ma = AsMatrices(sa, false, ta);
  Matrices mb = AsMatrices(sb, true, tb);
  if (ma.cols >= 0 && mb.rows >= 0 && ma.cols != mb.rows)
    return ctx.Fail("inner dimensions do not match (", ma.cols, " vs ", mb.rows, "): ", operands);
  Result<Shape> batch = BroadcastShapes(Shape(ma.batch), Shape(mb.batch));
  if (!batch.ok())
    return ctx.Fail("batch dimensions do not broadcast: ", operands, " (", batch.error().message(),
                    ")");
  std::vector<int64_t> out = batch->dims();
  if (sa.rank() > 1) out.push_back(ma.rows);
  if (sb.rank() > 1) out.push_back(mb.cols);
  KILN_ASSIGN_OR_RETURN(DType out_dtype, ctx.attrs().GetDType("out_dtype"));
  const DType operand_dtype = ctx.dtype(0);
  if (out_dtype == DType::kInvalid) out_dtype = operand_dtype;
  if (out_dtype != operand_dtype &&
      !(out_dtype == f32 && (operand_dtype == bf16 || operand_dtype == f16)))
    return ctx.Fail("attribute 'out_dtype' ", DTypeName(out_dtype), " with ",
                    DTypeName(operand_dtype),
                    " operands: it is unset, the operands' dtype, or f32 for bf16/f16 operands");
  ctx.AddOutput(out_dtype, Shape(std::move(out)));
  return OkStatus();
}

Status InferBiasAdd(InferContext& ctx) {
  KILN_ASSIGN_OR_RETURN(int64_t axis_attr, ctx.attrs().GetInt("axis"));
  const Shape& x = ctx.shape(0);
  const Shape& bias = ctx.shape(1);
  if (x.rank() < 2) return ctx.Fail("x must have rank >= 2, got shape ", x.ToString());
  Result<int> axis = NormalizeAxis(axis_attr, x.rank());
  if (!axis.ok()) return ctx.Fail("attribute 'axis': ", axis.error().message());
  if (bias.rank() != 1) return ctx.Fail("bias must be 1-D, got shape ", bias.ToString());
  int64_t channels = x[*axis];
  if (channels >= 0 && bias[0] >= 0 && channels != bias[0])
    return ctx.Fail("bias has ", bias[0], " elements but x ", x.ToString(), " has ", channels,
                    " along axis ", *axis);
  Shape out = x;
  if (channels < 0) out.set_dim(*axis, bias[0]);
  ctx.AddOutput(ctx.dtype(0), std::move(out));
  return OkStatus();
}

// Conv2D's attributes, read and validated.
struct ConvAttrs {
  std::vector<int64_t> strides, pads, dilations;
  int64_t groups = 1;
};

Result<ConvAttrs> ReadConvAttrs(const InferContext& ctx) {
  ConvAttrs c;
  KILN_ASSIGN_OR_RETURN(c.strides, internal::IntsOfLength(ctx, "strides", 2, 1));
  KILN_ASSIGN_OR_RETURN(c.pads, internal::IntsOfLength(ctx, "pads", 4, 0));
  KILN_ASSIGN_OR_RETURN(c.dilations, internal::IntsOfLength(ctx, "dilations", 2, 1));
  KILN_ASSIGN_OR_RETURN(c.groups, ctx.attrs().GetInt("groups"));
  auto all = [](const std::vector<int64_t>& v, int64_t min) {
    return std::all_of(v.begin(), v.end(), [min](int64_t d) { return d >= min; });
  };
  if (!all(c.strides, 1))
    return ctx.Fail("attribute 'strides' must be >= 1, got ", Shape(c.strides).ToString());
  if (!all(c.dilations, 1))
    return ctx.Fail("attribute 'dilations' must be >= 1, got ", Shape(c.dilations).ToString());
  if (!all(c.pads, 0))
    return ctx.Fail("attribute 'pads' ([top, left, bottom, right]) must be >= 0, got ",
                    Shape(c.pads).ToString());
  if (c.groups < 1) return ctx.Fail("attribute 'groups' must be >= 1, got ", c.groups);
  return c;
}

// One spatial output size (-1 when the input or kernel size is unknown). Computed in 128 bits so
// that huge attribute values give an error rather than overflow.
Result<int64_t> ConvOutputDim(const InferContext& ctx, const char* what, int64_t in, int64_t kernel,
                              int64_t pad_lo, int64_t pad_hi, int64_t stride, int64_t dilation) {
  if (kernel == 0) return ctx.Fail("kernel ", what, " must be >= 1, got 0");
  if (in < 0 || kernel < 0) return kUnknownDim;
  __int128 padded = static_cast<__int128>(in) + pad_lo + pad_hi;
  __int128 extent = static_cast<__int128>(dilation) * (kernel - 1) + 1;
  if (padded < extent)
    return ctx.Fail("output ", what, " would be < 1: input ", what, " ", in, " padded by ", pad_lo,
                    "+", pad_hi, " is smaller than kernel ", what, " ", kernel, " dilated by ",
                    dilation);
  __int128 out = (padded - extent) / stride + 1;
  if (out > std::numeric_limits<int64_t>::max()) return ctx.Fail("output ", what, " is too large");
  return static_cast<int64_t>(out);
}

// Conv2D's output shape for input `x` and filter `w` (named x_name and w_name in errors), with -1
// where it depends on unknown dims.
Result<Shape> ConvOutputShape(const InferContext& ctx, const ConvAttrs& a, const Shape& x,
                              const Shape& w, const char* x_name, const char* w_name) {
  if (x.rank() != 4)
    return ctx.Fail(x_name, " must have rank 4 [N, C, H, W], got shape ", x.ToString());
  if (w.rank() != 4)
    return ctx.Fail(w_name, " must have rank 4 [O, C/groups, kH, kW], got shape ", w.ToString());
  int64_t c = x[1], c_per_group = w[1], o = w[0];
  if (c >= 0 && c % a.groups != 0)
    return ctx.Fail("input channels ", c, " (", x_name, " ", x.ToString(),
                    ") are not divisible by groups=", a.groups);
  if (c >= 0 && c_per_group >= 0 && c / a.groups != c_per_group)
    return ctx.Fail(x_name, " ", x.ToString(), " has ", c, " channels but ", w_name, " ",
                    w.ToString(), " with groups=", a.groups,
                    " expects w.shape[1] * groups = ", c_per_group, " * ", a.groups);
  if (o >= 0 && o % a.groups != 0)
    return ctx.Fail("output channels ", o, " (", w_name, " ", w.ToString(),
                    ") are not divisible by groups=", a.groups);
  KILN_ASSIGN_OR_RETURN(int64_t h, ConvOutputDim(ctx, "height", x[2], w[2], a.pads[0], a.pads[2],
                                                 a.strides[0], a.dilations[0]));
  KILN_ASSIGN_OR_RETURN(int64_t wd, ConvOutputDim(ctx, "width", x[3], w[3], a.pads[1], a.pads[3],
                                                  a.strides[1], a.dilations[1]));
  return Shape{x[0], o, h, wd};
}

Status InferConv2D(InferContext& ctx) {
  KILN_ASSIGN_OR_RETURN(ConvAttrs a, ReadConvAttrs(ctx));
  KILN_ASSIGN_OR_RETURN(Shape y, ConvOutputShape(ctx, a, ctx.shape(0), ctx.shape(1), "x", "w"));
  ctx.AddOutput(ctx.dtype(0), std::move(y));
  return OkStatus();
}

// Checks that `dy` can be the gradient of Conv2D's output `y` (equal where both are known).
Status CheckConvOutputGrad(const InferContext& ctx, const Shape& dy, const Shape& y,
                           const std::string& operands) {
  bool ok = dy.rank() == 4;
  for (int i = 0; ok && i < 4; ++i) ok = dy[i] < 0 || y[i] < 0 || dy[i] == y[i];
  if (!ok)
    return ctx.Fail("dy has shape ", dy.ToString(), " but Conv2D of ", operands, " gives ",
                    y.ToString());
  return OkStatus();
}

// `like` with each unknown dim i taken from known[i] (when that is known).
Shape FillUnknown(Shape like, const std::vector<int64_t>& known) {
  for (int i = 0; i < like.rank(); ++i)
    if (like[i] < 0 && known[i] >= 0) like.set_dim(i, known[i]);
  return like;
}

// Conv2DBackpropInput(dy, w, x_like) -> dx shaped like x_like.
Status InferConv2DBackpropInput(InferContext& ctx) {
  KILN_ASSIGN_OR_RETURN(ConvAttrs a, ReadConvAttrs(ctx));
  const Shape &dy = ctx.shape(0), &w = ctx.shape(1), &x = ctx.shape(2);
  KILN_ASSIGN_OR_RETURN(Shape y, ConvOutputShape(ctx, a, x, w, "x_like", "w"));
  KILN_RETURN_IF_ERROR(
      CheckConvOutputGrad(ctx, dy, y, "x_like " + x.ToString() + " and w " + w.ToString()));
  int64_t c = w[1] >= 0 ? w[1] * a.groups : kUnknownDim;
  ctx.AddOutput(ctx.dtype(0), FillUnknown(x, {dy[0], c, kUnknownDim, kUnknownDim}));
  return OkStatus();
}

// Conv2DBackpropFilter(x, dy, w_like) -> dw shaped like w_like.
Status InferConv2DBackpropFilter(InferContext& ctx) {
  KILN_ASSIGN_OR_RETURN(ConvAttrs a, ReadConvAttrs(ctx));
  const Shape &x = ctx.shape(0), &dy = ctx.shape(1), &w = ctx.shape(2);
  KILN_ASSIGN_OR_RETURN(Shape y, ConvOutputShape(ctx, a, x, w, "x", "w_like"));
  KILN_RETURN_IF_ERROR(
      CheckConvOutputGrad(ctx, dy, y, "x " + x.ToString() + " and w_like " + w.ToString()));
  int64_t c = x[1] >= 0 ? x[1] / a.groups : kUnknownDim;
  ctx.AddOutput(ctx.dtype(0), FillUnknown(w, {dy[1], c, kUnknownDim, kUnknownDim}));
  return OkStatus();
}

std::vector<DType> MatMulTypes() {
  std::vector<DType> types = FloatTypes();
  types.insert(types.end(), IndexTypes().begin(), IndexTypes().end());
  return types;
}

// FLOPs: 2 * |y| * k for a product reducing over k (the last dim of a, or the one before it when
// transposed).
double MatMulFlops(const FlopsContext& c) {
  const Shape* a = c.input_shape(0);
  if (!a || a->rank() == 0) return 0;
  const AttrValue* ta = c.node.attrs.Find("transpose_a");
  const bool transpose_a = ta && ta->type() == AttrType::kBool && ta->get<bool>() && a->rank() >= 2;
  const int64_t k = transpose_a ? (*a)[a->rank() - 2] : (*a)[a->rank() - 1];
  return 2.0 * KnownElements(c.output) * static_cast<double>(k < 0 ? 1 : k);
}

// A convolution's FLOPs: 2 * |y| * (C/groups * KH * KW) forward, and the same for each backward
// convolution (2 * |dy| * the filter's per-output volume).
double Conv2DFlops(const FlopsContext& c) {
  const Shape* w = c.input_shape(1);
  if (!w || w->rank() != 4) return 0;
  return 2.0 * KnownElements(c.output) * KnownElements(Shape({(*w)[1], (*w)[2], (*w)[3]}));
}

double Conv2DBackpropInputFlops(const FlopsContext& c) {  // (dy, w, ...) -> dx
  const Shape *dy = c.input_shape(0), *w = c.input_shape(1);
  if (!dy || !w || w->rank() != 4) return 0;
  return 2.0 * KnownElements(*dy) * KnownElements(Shape({(*w)[1], (*w)[2], (*w)[3]}));
}

double Conv2DBackpropFilterFlops(const FlopsContext& c) {  // (x, dy, ...) -> dw
  const Shape* dy = c.input_shape(1);
  if (!dy || c.output.rank() != 4) return 0;
  return 2.0 * KnownElements(*dy) * KnownElements(Shape({c.output[1], c.output[2], c.output[3]}));
}

}  // namespace

void RegisterLinalgOps(OpRegistry& registry) {
  // Each op has its gradient in LinalgGradients() or is marked not differentiable (the backward
  // ops). Matrix math is worth 16 bits wherever it is (mixed precision's always16 list).
  internal::RegistryWithGradients r(registry, internal::LinalgGradients());
  RegisterDeterminantOps(registry);
  r.Register(OpDefBuilder("MatMul", "linalg")
                 .Input("a", "T")
                 .Input("b", "T")
                 .Output("y")
                 .Types("T", MatMulTypes())
                 .Attr("transpose_a", AttrType::kBool, false)
                 .Attr("transpose_b", AttrType::kBool, false)
                 .Attr("out_dtype", AttrType::kDType, DType::kInvalid)
                 .Infer(InferMatMul)
                 .Precision(PrecisionList::kAlways16)
                 .Flops(MatMulFlops)
                 .Build());
  r.Register(OpDefBuilder("BiasAdd", "linalg")
                 .Input("x", "T")
                 .Input("bias", "T")
                 .Output("y")
                 .Types("T", FloatTypes())
                 .Attr("axis", AttrType::kInt, int64_t{1})
                 .Infer(InferBiasAdd)
                 .Precision(PrecisionList::kFollow)
                 .Flops(FlopsPerOutputElement())
                 .Build());
  // Conv2D and its backward passes share the attributes.
  // The backward convolutions are not differentiable (no second derivatives).
  auto conv = [&r](const char* op, std::vector<const char*> inputs, const char* output,
                   InferFn infer, FlopsFn flops, bool differentiable) {
    OpDefBuilder def(op, "linalg");
    for (const char* input : inputs) def.Input(input, "T");
    if (!differentiable) def.NotDifferentiable();
    r.Register(def.Output(output)
                   .Types("T", FloatTypes())
                   .Attr("strides", AttrType::kInts, std::vector<int64_t>{1, 1})
                   .Attr("pads", AttrType::kInts, std::vector<int64_t>{0, 0, 0, 0})
                   .Attr("dilations", AttrType::kInts, std::vector<int64_t>{1, 1})
                   .Attr("groups", AttrType::kInt, int64_t{1})
                   .Infer(std::move(infer))
                   .Precision(PrecisionList::kAlways16)
                   .Flops(std::move(flops))
                   .Build());
  };
  conv("Conv2D", {"x", "w"}, "y", InferConv2D, Conv2DFlops, true);
  conv("Conv2DBackpropInput", {"dy", "w", "x_like"}, "dx", InferConv2DBackpropInput,
       Conv2DBackpropInputFlops, false);
  conv("Conv2DBackpropFilter", {"x", "dy", "w_like"}, "dw", InferConv2DBackpropFilter,
       Conv2DBackpropFilterFlops, false);
}

}  // namespace kiln
