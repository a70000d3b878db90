#include "ir/ops/nn.h"

#include "ir/ops/nn_grad.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/registration.h"

namespace kiln {

using internal::MakeOp;
using internal::MakeOpN;

namespace {

AttrMap PoolAttrs(const Pool2DOptions& o, bool avg) {
  AttrMap a;
  a.Set("kernel", o.kernel);
  a.Set("strides", o.strides);
  a.Set("pads", o.pads);
  a.Set("ceil_mode", o.ceil_mode);
  if (avg) a.Set("count_include_pad", o.count_include_pad);
  return a;
}

}  // namespace

Value MaxPool2D(At x, const Pool2DOptions& o) {
  return MakeOp("MaxPool2D", {x.value}, PoolAttrs(o, false), x.loc);
}
Value AvgPool2D(At x, const Pool2DOptions& o) {
  return MakeOp("AvgPool2D", {x.value}, PoolAttrs(o, true), x.loc);
}
Value MaxPool2DGrad(At x, Value dy, const Pool2DOptions& o) {
  return MakeOp("MaxPool2DGrad", {x.value, dy}, PoolAttrs(o, false), x.loc);
}
Value AvgPool2DGrad(At dy, Value x_like, const Pool2DOptions& o) {
  return MakeOp("AvgPool2DGrad", {dy.value, x_like}, PoolAttrs(o, true), dy.loc);
}
Value GlobalAvgPool(At x) { return MakeOp("GlobalAvgPool", {x.value}, {}, x.loc); }

std::vector<Value> BatchNorm(At x, Value scale, Value bias, Value mean, Value var, double epsilon,
                             bool training) {
  AttrMap a;
  a.Set("epsilon", epsilon);
  a.Set("training", training);
  return MakeOpN("BatchNorm", {x.value, scale, bias, mean, var}, std::move(a), x.loc, 3);
}

std::vector<Value> BatchNormGrad(At dy, Value x, Value scale, Value mean, Value var,
                                 double epsilon) {
  AttrMap a;
  a.Set("epsilon", epsilon);
  return MakeOpN("BatchNormGrad", {dy.value, x, scale, mean, var}, std::move(a), dy.loc, 3);
}

Value LayerNorm(At x, Value scale, Value bias, int64_t axis, double epsilon) {
  AttrMap a;
  a.Set("axis", axis);
  a.Set("epsilon", epsilon);
  return MakeOp("LayerNorm", {x.value, scale, bias}, std::move(a), x.loc);
}

Value Softmax(At x, int64_t axis) {
  AttrMap a;
  a.Set("axis", axis);
  return MakeOp("Softmax", {x.value}, std::move(a), x.loc);
}
Value LogSoftmax(At x, int64_t axis) {
  AttrMap a;
  a.Set("axis", axis);
  return MakeOp("LogSoftmax", {x.value}, std::move(a), x.loc);
}

Value SoftmaxCrossEntropy(At logits, Value labels, const std::string& reduction) {
  AttrMap a;
  if (reduction != "mean") a.Set("reduction", reduction);
  return MakeOp("SoftmaxCrossEntropy", {logits.value, labels}, std::move(a), logits.loc);
}
Value SoftmaxCrossEntropyGrad(At logits, Value labels, Value dloss) {
  return MakeOp("SoftmaxCrossEntropyGrad", {logits.value, labels, dloss}, {}, logits.loc);
}

std::vector<Value> Dropout(At x, double rate, int64_t seed, bool training) {
  AttrMap a;
  a.Set("rate", rate);
  a.Set("seed", seed);
  a.Set("training", training);
  return MakeOpN("Dropout", {x.value}, std::move(a), x.loc, 2);
}

namespace {

struct PoolWindow {
  std::vector<int64_t> kernel;   // [kH, kW]
  std::vector<int64_t> strides;  // [sH, sW]
  std::vector<int64_t> pads;     // [top, left, bottom, right]
  bool ceil_mode = false;
};

std::string List(const std::vector<int64_t>& v) { return Shape(v).ToString(); }

Result<PoolWindow> ReadPoolWindow(const InferContext& ctx) {
  PoolWindow w;
  KILN_ASSIGN_OR_RETURN(w.kernel, ctx.attrs().GetInts("kernel"));
  if (w.kernel.size() != 2)
    return ctx.Fail("attribute 'kernel' must have 2 values [kH, kW], got ", List(w.kernel));
  if (w.kernel[0] < 1 || w.kernel[1] < 1)
    return ctx.Fail("attribute 'kernel' values must be >= 1, got ", List(w.kernel));
  KILN_ASSIGN_OR_RETURN(w.strides, ctx.attrs().GetInts("strides"));
  if (w.strides.empty()) w.strides = w.kernel;
  if (w.strides.size() != 2)
    return ctx.Fail("attribute 'strides' must have 2 values [sH, sW] (or none: the kernel), got ",
                    List(w.strides));
  if (w.strides[0] < 1 || w.strides[1] < 1)
    return ctx.Fail("attribute 'strides' values must be >= 1, got ", List(w.strides));
  KILN_ASSIGN_OR_RETURN(w.pads, internal::IntsOfLength(ctx, "pads", 4, 0));
  for (int i = 0; i < 4; ++i) {
    if (w.pads[i] < 0)
      return ctx.Fail("attribute 'pads' [top, left, bottom, right] values must be >= 0, got ",
                      List(w.pads));
    if (w.pads[i] >= w.kernel[i % 2])
      return ctx.Fail("attribute 'pads' [top, left, bottom, right] = ", List(w.pads),
                      " must each be smaller than the kernel [kH, kW] = ", List(w.kernel));
  }
  KILN_ASSIGN_OR_RETURN(w.ceil_mode, ctx.attrs().GetBool("ceil_mode"));
  return w;
}

}  // namespace

int64_t PooledLength(int64_t in, int64_t pad_begin, int64_t pad_end, int64_t extent, int64_t stride,
                     bool ceil_mode) {
  const int64_t span = in + pad_begin + pad_end - extent;
  if (span < 0) return 0;  // no window fits
  int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  // A last window that would start in the end padding is dropped (ONNX, PyTorch).
  if (ceil_mode && (out - 1) * stride >= in + pad_begin) --out;
  return out;
}

namespace {

// The pooled size of one spatial dimension (-1 when `in` is unknown).
Result<int64_t> PooledSize(const InferContext& ctx, const char* what, int64_t in, int64_t k,
                           int64_t s, int64_t pad_begin, int64_t pad_end, bool ceil_mode) {
  if (in == kUnknownDim) return kUnknownDim;
  if (in == 0) return ctx.Fail("cannot pool an empty input: its ", what, " is 0");
  // Past 2^60 the window arithmetic below could overflow; no tensor is that long.
  constexpr int64_t kLimit = int64_t{1} << 60;
  if (in > kLimit || k > kLimit || s > kLimit || pad_begin > kLimit || pad_end > kLimit)
    return ctx.Fail("the input ", what, " ", in, ", kernel ", k, ", stride ", s, " or padding ",
                    pad_begin, " + ", pad_end, " is over 2^60");
  if (in + pad_begin + pad_end < k)
    return ctx.Fail("input ", what, " ", in, " plus padding ", pad_begin + pad_end,
                    " is smaller than the kernel ", what, " ", k);
  return PooledLength(in, pad_begin, pad_end, k, s, ceil_mode);
}

Status InferPool2D(InferContext& ctx) {
  const Shape& x = ctx.shape(0);
  if (x.rank() != 4) return ctx.Fail("expects a 4-D [N, C, H, W] input, got shape ", x.ToString());
  KILN_ASSIGN_OR_RETURN(PoolWindow w, ReadPoolWindow(ctx));
  KILN_ASSIGN_OR_RETURN(int64_t h, PooledSize(ctx, "height", x[2], w.kernel[0], w.strides[0],
                                              w.pads[0], w.pads[2], w.ceil_mode));
  KILN_ASSIGN_OR_RETURN(int64_t wd, PooledSize(ctx, "width", x[3], w.kernel[1], w.strides[1],
                                               w.pads[1], w.pads[3], w.ceil_mode));
  ctx.AddOutput(ctx.dtype(0), Shape{x[0], x[1], h, wd});
  return OkStatus();
}

// MaxPool2DGrad (x, dy) and AvgPool2DGrad (dy, x_like): dy must have the shape pooling x gives;
// the output has x's shape (N and C taken from dy where x's are unknown).
Status InferPool2DGrad(InferContext& ctx, int x_index, int dy_index) {
  const char* x_name = x_index == 0 ? "x" : "x_like";
  const Shape& x = ctx.shape(x_index);
  const Shape& dy = ctx.shape(dy_index);
  if (x.rank() != 4)
    return ctx.Fail("expects a 4-D [N, C, H, W] ", x_name, ", got shape ", x.ToString());
  if (dy.rank() != 4) return ctx.Fail("expects a 4-D [N, C, OH, OW] dy, got shape ", dy.ToString());
  KILN_ASSIGN_OR_RETURN(PoolWindow w, ReadPoolWindow(ctx));
  KILN_ASSIGN_OR_RETURN(int64_t h, PooledSize(ctx, "height", x[2], w.kernel[0], w.strides[0],
                                              w.pads[0], w.pads[2], w.ceil_mode));
  KILN_ASSIGN_OR_RETURN(int64_t wd, PooledSize(ctx, "width", x[3], w.kernel[1], w.strides[1],
                                               w.pads[1], w.pads[3], w.ceil_mode));
  const int64_t pooled[4] = {x[0], x[1], h, wd};
  Shape dx = x;
  for (int d = 0; d < 4; ++d) {
    if (pooled[d] != kUnknownDim && dy[d] != kUnknownDim && pooled[d] != dy[d])
      return ctx.Fail("dy has shape ", dy.ToString(), " but pooling ", x_name, " of shape ",
                      x.ToString(), " gives ", Shape{x[0], x[1], h, wd}.ToString());
    if (d < 2 && x[d] == kUnknownDim) dx.set_dim(d, dy[d]);
  }
  ctx.AddOutput(ctx.dtype(0), dx);
  return OkStatus();
}

Status InferGlobalAvgPool(InferContext& ctx) {
  const Shape& x = ctx.shape(0);
  if (x.rank() < 3)
    return ctx.Fail("expects an input of rank >= 3 ([N, C, spatial...]), got shape ", x.ToString());
  Shape y = x;
  for (int i = 2; i < x.rank(); ++i) {
    if (x[i] == 0)
      return ctx.Fail("cannot average over an empty spatial dimension: shape ", x.ToString());
    y.set_dim(i, 1);
  }
  ctx.AddOutput(ctx.dtype(0), y);
  return OkStatus();
}

Status CheckEpsilon(const InferContext& ctx) {
  KILN_ASSIGN_OR_RETURN(double eps, ctx.attrs().GetFloat("epsilon"));
  if (!(eps >= 0)) return ctx.Fail("attribute 'epsilon' must be >= 0, got ", eps);
  return OkStatus();
}

// The channel count C of x [N, C, ...] (rank >= 2) and its 1-D per-channel inputs
// `channel_inputs` (named by `names`), each of length C; an unknown C is taken from the first
// input that knows it.
Result<int64_t> PerChannelLength(InferContext& ctx, const Shape& x,
                                 const std::vector<int>& channel_inputs, const char* const* names) {
  if (x.rank() < 2)
    return ctx.Fail("x must have rank >= 2 (channels on axis 1), got shape ", x.ToString());
  int64_t c = x[1];
  std::string c_from = "x.shape[1]";
  for (int i : channel_inputs) {
    const Shape& s = ctx.shape(i);
    if (s.rank() != 1)
      return ctx.Fail("'", names[i], "' must be 1-D of length C (x.shape[1]), got shape ",
                      s.ToString());
    if (c != kUnknownDim && s[0] != kUnknownDim && s[0] != c)
      return ctx.Fail("'", names[i], "' has length ", s[0], " but ", c_from, " is ", c,
                      " (x shape ", x.ToString(), ")");
    if (c == kUnknownDim && s[0] != kUnknownDim) {
      c = s[0];
      c_from = std::string("the length of '") + names[i] + "'";
    }
  }
  return c;
}

// Training needs a value per channel to compute batch statistics from.
Status CheckValuesPerChannel(InferContext& ctx, const Shape& x) {
  Shape rest = x;
  rest.set_dim(1, 1);
  if (rest.NumElements() == 0)
    return ctx.Fail("training needs at least one value per channel, x has shape ", x.ToString());
  return OkStatus();
}

Status InferBatchNorm(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(CheckEpsilon(ctx));
  KILN_ASSIGN_OR_RETURN(bool training, ctx.attrs().GetBool("training"));
  static const char* const kNames[] = {"x", "scale", "bias", "mean", "var"};
  Shape y = ctx.shape(0);
  KILN_ASSIGN_OR_RETURN(int64_t c, PerChannelLength(ctx, y, {1, 2, 3, 4}, kNames));
  y.set_dim(1, c);
  if (training) KILN_RETURN_IF_ERROR(CheckValuesPerChannel(ctx, y));
  ctx.AddOutput(ctx.dtype(0), y);
  ctx.AddOutput(ctx.dtype(0), Shape{c});
  ctx.AddOutput(ctx.dtype(0), Shape{c});
  return OkStatus();
}

Status InferBatchNormGrad(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(CheckEpsilon(ctx));
  static const char* const kNames[] = {"dy", "x", "scale", "mean", "var"};
  const Shape& dy = ctx.shape(0);
  Shape x = ctx.shape(1);  // dy's known dims fill x's unknown ones
  bool same = dy.rank() == x.rank();
  for (int d = 0; same && d < x.rank(); ++d) {
    if (x[d] == kUnknownDim) x.set_dim(d, dy[d]);
    same = dy[d] == kUnknownDim || dy[d] == x[d];
  }
  if (!same) return ctx.Fail("dy ", dy.ToString(), " must have x's shape ", x.ToString());
  KILN_ASSIGN_OR_RETURN(int64_t c, PerChannelLength(ctx, x, {2, 3, 4}, kNames));
  x.set_dim(1, c);
  KILN_RETURN_IF_ERROR(CheckValuesPerChannel(ctx, x));
  ctx.AddOutput(ctx.dtype(0), x);
  ctx.AddOutput(ctx.dtype(0), Shape{c});
  ctx.AddOutput(ctx.dtype(0), Shape{c});
  return OkStatus();
}

Status InferLayerNorm(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(CheckEpsilon(ctx));
  Shape y = ctx.shape(0);
  if (y.rank() < 1) return ctx.Fail("x must have rank >= 1, got a scalar");
  KILN_ASSIGN_OR_RETURN(int64_t attr_axis, ctx.attrs().GetInt("axis"));
  Result<int> axis = NormalizeAxis(attr_axis, y.rank());
  if (!axis.ok()) return ctx.Fail("attribute 'axis': ", axis.error().message());
  for (int i = 1; i <= 2; ++i) {
    const Shape& s = ctx.shape(i);
    const char* name = i == 1 ? "scale" : "bias";
    Shape expected(std::vector<int64_t>(y.dims().begin() + *axis, y.dims().end()));
    bool ok = s.rank() == expected.rank();
    for (int d = 0; ok && d < s.rank(); ++d) {
      int64_t want = y[*axis + d];
      if (want != kUnknownDim && s[d] != kUnknownDim && s[d] != want) ok = false;
      if (ok && want == kUnknownDim) y.set_dim(*axis + d, s[d]);
    }
    if (!ok)
      return ctx.Fail("'", name, "' must have shape x.shape[", *axis, ":] = ", expected.ToString(),
                      ", got ", s.ToString());
  }
  ctx.AddOutput(ctx.dtype(0), y);
  return OkStatus();
}

Status InferSoftmax(InferContext& ctx) {
  const Shape& x = ctx.shape(0);
  if (x.rank() < 1) return ctx.Fail("x must have rank >= 1, got a scalar");
  KILN_ASSIGN_OR_RETURN(int64_t attr_axis, ctx.attrs().GetInt("axis"));
  Result<int> axis = NormalizeAxis(attr_axis, x.rank());
  if (!axis.ok()) return ctx.Fail("attribute 'axis': ", axis.error().message());
  ctx.AddOutput(ctx.dtype(0), x);
  return OkStatus();
}

// Logits [N, C] and labels [N], as both cross-entropy ops take them.
Status CheckCrossEntropyOperands(InferContext& ctx) {
  const Shape& logits = ctx.shape(0);
  const Shape& labels = ctx.shape(1);
  if (logits.rank() != 2)
    return ctx.Fail("logits must be 2-D [N, C], got shape ", logits.ToString());
  if (labels.rank() != 1) return ctx.Fail("labels must be 1-D [N], got shape ", labels.ToString());
  if (logits[0] != kUnknownDim && labels[0] != kUnknownDim && logits[0] != labels[0])
    return ctx.Fail("logits have ", logits[0], " rows (shape ", logits.ToString(),
                    ") but labels have ", labels[0], " (shape ", labels.ToString(), ")");
  return OkStatus();
}

Status InferSoftmaxCrossEntropy(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(CheckCrossEntropyOperands(ctx));
  KILN_ASSIGN_OR_RETURN(std::string reduction, ctx.attrs().GetString("reduction"));
  if (reduction != "mean" && reduction != "none")
    return ctx.Fail("attribute 'reduction' must be \"mean\" or \"none\", got \"", reduction, "\"");
  ctx.AddOutput(ctx.dtype(0), reduction == "none" ? Shape{ctx.shape(1)[0]} : Shape{});
  return OkStatus();
}

Status InferSoftmaxCrossEntropyGrad(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(CheckCrossEntropyOperands(ctx));
  const Shape& dloss = ctx.shape(2);
  const int64_t rows = ctx.shape(1)[0];
  const bool per_row =
      dloss.rank() == 1 && (dloss[0] == kUnknownDim || rows == kUnknownDim || dloss[0] == rows);
  if (dloss.rank() != 0 && !per_row)
    return ctx.Fail("dloss must be a scalar or [N] (one per row of ", ctx.shape(0).ToString(),
                    "), got shape ", dloss.ToString());
  ctx.AddOutput(ctx.dtype(0), ctx.shape(0));
  return OkStatus();
}

Status InferDropout(InferContext& ctx) {
  KILN_ASSIGN_OR_RETURN(double rate, ctx.attrs().GetFloat("rate"));
  if (!(rate >= 0 && rate < 1)) return ctx.Fail("attribute 'rate' must be in [0, 1), got ", rate);
  ctx.AddOutput(ctx.dtype(0), ctx.shape(0));
  ctx.AddOutput(boolean, ctx.shape(0));
  return OkStatus();
}

}  // namespace

void RegisterNnOps(OpRegistry& registry) {
  // Each op has its gradient in NnGradients() or is marked not differentiable (the backward ops:
  // no second derivatives).
  internal::RegistryWithGradients r(registry, internal::NnGradients());
  RegisterDetectionOps(registry);
  RegisterMaxPoolWithArgmaxOps(registry);
  // Pooling and its backward ops share the attributes.
  auto pool = [&r](const char* op, bool avg, std::vector<const char*> inputs, InferFn infer) {
    OpDefBuilder b(op, "nn");
    for (const char* in : inputs) b.Input(in, "T");
    b.Output(inputs.size() == 1 ? "y" : "dx")
        .Types("T", FloatTypes())
        .RequiredAttr("kernel", AttrType::kInts)
        .Attr("strides", AttrType::kInts, std::vector<int64_t>{})
        .Attr("pads", AttrType::kInts, std::vector<int64_t>{0, 0, 0, 0})
        .Attr("ceil_mode", AttrType::kBool, false)
        .Infer(std::move(infer));
    if (avg) b.Attr("count_include_pad", AttrType::kBool, false);
    if (inputs.size() > 1) b.NotDifferentiable();  // a backward op
    b.Flops(inputs.size() == 1 ? FlopsPerWindowElement() : NoFlops());
    r.Register(b.Precision(PrecisionList::kFollow).Build());
  };
  pool("MaxPool2D", false, {"x"}, InferPool2D);
  pool("AvgPool2D", true, {"x"}, InferPool2D);
  pool("MaxPool2DGrad", false, {"x", "dy"},
       [](InferContext& ctx) { return InferPool2DGrad(ctx, 0, 1); });
  pool("AvgPool2DGrad", true, {"dy", "x_like"},
       [](InferContext& ctx) { return InferPool2DGrad(ctx, 1, 0); });
  r.Register(OpDefBuilder("GlobalAvgPool", "nn")
                 .Input("x", "T")
                 .Output("y")
                 .Types("T", FloatTypes())
                 .Infer(InferGlobalAvgPool)
                 .Precision(PrecisionList::kFollow)
                 .Flops(FlopsPerInputElement(0))
                 .Build());
  r.Register(OpDefBuilder("BatchNorm", "nn")
                 .Input("x", "T")
                 .Input("scale", "T")
                 .Input("bias", "T")
                 .Input("mean", "T")
                 .Input("var", "T")
                 .Output("y")
                 .Output("batch_mean")
                 .Output("batch_var")
                 .Types("T", FloatTypes())
                 .Attr("epsilon", AttrType::kFloat, 1e-5)
                 .Attr("training", AttrType::kBool, false)
                 .Infer(InferBatchNorm)
                 .Precision(PrecisionList::kFollow)  // the statistics are float32 inside
                 .Flops(FlopsPerInputElement(0, 8))
                 .Build());
  r.Register(OpDefBuilder("BatchNormGrad", "nn")
                 .Input("dy", "T")
                 .Input("x", "T")
                 .Input("scale", "T")
                 .Input("mean", "T")
                 .Input("var", "T")
                 .Output("dx")
                 .Output("dscale")
                 .Output("dbias")
                 .Types("T", FloatTypes())
                 .Attr("epsilon", AttrType::kFloat, 1e-5)
                 .Infer(InferBatchNormGrad)
                 .NotDifferentiable()
                 .Precision(PrecisionList::kKeep32)
                 .Flops(FlopsPerInputElement(0, 8))
                 .Build());
  r.Register(OpDefBuilder("LayerNorm", "nn")
                 .Input("x", "T")
                 .Input("scale", "T")
                 .Input("bias", "T")
                 .Output("y")
                 .Types("T", FloatTypes())
                 .Attr("axis", AttrType::kInt, -1)
                 .Attr("epsilon", AttrType::kFloat, 1e-5)
                 .Infer(InferLayerNorm)
                 .Precision(PrecisionList::kKeep32)
                 .Flops(FlopsPerInputElement(0, 8))
                 .Build());
  for (const char* op : {"Softmax", "LogSoftmax"})
    r.Register(OpDefBuilder(op, "nn")
                   .Input("x", "T")
                   .Output("y")
                   .Types("T", FloatTypes())
                   .Attr("axis", AttrType::kInt, -1)
                   .Infer(InferSoftmax)
                   .Precision(PrecisionList::kKeep32)
                   .Flops(FlopsPerInputElement(0, 5))
                   .Build());
  r.Register(OpDefBuilder("SoftmaxCrossEntropy", "nn")
                 .Input("logits", "T")
                 .Input("labels", "I")
                 .Output("loss")
                 .Types("T", FloatTypes())
                 .Types("I", IndexTypes())
                 .Attr("reduction", AttrType::kString, "mean")
                 .Infer(InferSoftmaxCrossEntropy)
                 .Precision(PrecisionList::kKeep32)
                 .Flops(FlopsPerInputElement(0, 5))
                 .Build());
  r.Register(OpDefBuilder("SoftmaxCrossEntropyGrad", "nn")
                 .Input("logits", "T")
                 .Input("labels", "I")
                 .Input("dloss", "T")
                 .Output("dlogits")
                 .Types("T", FloatTypes())
                 .Types("I", IndexTypes())
                 .Infer(InferSoftmaxCrossEntropyGrad)
                 .NotDifferentiable()
                 .Precision(PrecisionList::kKeep32)
                 .Flops(FlopsPerInputElement(0, 5))
                 .Build());
  r.Register(OpDefBuilder("Dropout", "nn")
                 .Input("x", "T")
                 .Output("y")
                 .Output("mask")
                 .Types("T", FloatTypes())
                 .Attr("rate", AttrType::kFloat, 0.5)
                 .Attr("seed", AttrType::kInt, 0)
                 .Attr("training", AttrType::kBool, false)
                 .Infer(InferDropout)
                 .Stateful()
                 .Precision(PrecisionList::kFollow)
                 .Flops(FlopsPerOutputElement())
                 .Build());
}

}  // namespace kiln
