// Op family "array": builder functions and the schemas. Inference lives in array_layout.cc and
// array_index.cc (declared in array_internal.h).
#include "ir/ops/array.h"

#include <algorithm>

#include "ir/ops/array_grad.h"
#include "ir/ops/array_internal.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/registration.h"

namespace kiln {

using internal::MakeOp;
using internal::MakeOpN;
using internal::OneAttr;

namespace {
using Ints = std::vector<int64_t>;

Value OneAttrOp(const char* op, const At& x, const char* attr, AttrValue value) {
  return MakeOp(op, {x.value}, OneAttr(attr, std::move(value)), x.loc);
}
AttrMap SliceAttrs(Ints begins, Ints ends, Ints axes, Ints steps) {
  AttrMap a;
  a.Set("begins", std::move(begins));
  a.Set("ends", std::move(ends));
  a.Set("axes", std::move(axes));
  a.Set("steps", std::move(steps));
  return a;
}
AttrMap PadAttrs(Ints pads, const std::string& mode, double value) {
  AttrMap a;
  a.Set("pads", std::move(pads));
  a.Set("mode", mode);
  a.Set("value", value);
  return a;
}
}  // namespace

Value Reshape(At x, Ints shape) { return OneAttrOp("Reshape", x, "shape", std::move(shape)); }
Value Transpose(At x, Ints perm) { return OneAttrOp("Transpose", x, "perm", std::move(perm)); }
Value Tile(At x, Ints multiples) { return OneAttrOp("Tile", x, "multiples", std::move(multiples)); }
Value BroadcastTo(At x, Ints shape) {
  return OneAttrOp("BroadcastTo", x, "shape", std::move(shape));
}
Value Squeeze(At x, Ints axes) { return OneAttrOp("Squeeze", x, "axes", std::move(axes)); }
Value Unsqueeze(At x, Ints axes) { return OneAttrOp("Unsqueeze", x, "axes", std::move(axes)); }
Value Flatten(At x, int64_t axis) { return OneAttrOp("Flatten", x, "axis", axis); }
Value ShapeOf(At x) { return MakeOp("Shape", {x.value}, {}, x.loc); }

Value Concat(const std::vector<Value>& values, int64_t axis, SourceLocation loc) {
  AttrMap a;
  a.Set("axis", axis);
  return MakeOp("Concat", values, std::move(a), loc);
}

std::vector<Value> Split(At x, int64_t axis, Ints sizes) {
  AttrMap a;
  a.Set("axis", axis);
  const size_t n = sizes.size();
  a.Set("sizes", std::move(sizes));
  return MakeOpN("Split", {x.value}, std::move(a), x.loc, n);
}

std::vector<Value> SplitEven(At x, int64_t axis, int64_t num_outputs) {
  AttrMap a;
  a.Set("axis", axis);
  a.Set("num_outputs", num_outputs);
  // Out-of-range counts are refused by the op (1..65536); the clamp only bounds the invalid
  // values returned then.
  return MakeOpN("Split", {x.value}, std::move(a), x.loc,
                 static_cast<size_t>(std::clamp<int64_t>(num_outputs, 1, 65536)));
}

Value Slice(At x, Ints begins, Ints ends, Ints axes, Ints steps) {
  return MakeOp("Slice", {x.value}, SliceAttrs(begins, ends, axes, steps), x.loc);
}

Value Gather(At data, Value indices, int64_t axis) {
  AttrMap a;
  a.Set("axis", axis);
  return MakeOp("Gather", {data.value, indices}, std::move(a), data.loc);
}

Value Pad(At x, Ints pads, const std::string& mode, double value) {
  return MakeOp("Pad", {x.value}, PadAttrs(std::move(pads), mode, value), x.loc);
}

Value OneHot(At indices, int64_t depth, DType dtype, double on_value, double off_value,
             int64_t axis) {
  AttrMap a;
  a.Set("depth", depth);
  a.Set("dtype", dtype);
  a.Set("on_value", on_value);
  a.Set("off_value", off_value);
  a.Set("axis", axis);
  return MakeOp("OneHot", {indices.value}, std::move(a), indices.loc);
}

Value NonZero(At x) { return MakeOp("NonZero", {x.value}, {}, x.loc); }

Value Range(At start, Value limit, Value delta) {
  return MakeOp("Range", {start.value, limit, delta}, {}, start.loc);
}

Value TileGrad(At dy, Value x_like, Ints multiples) {
  return MakeOp("TileGrad", {dy.value, x_like}, OneAttr("multiples", std::move(multiples)), dy.loc);
}

Value SliceGrad(At dy, Value x_like, Ints begins, Ints ends, Ints axes, Ints steps) {
  return MakeOp("SliceGrad", {dy.value, x_like}, SliceAttrs(begins, ends, axes, steps), dy.loc);
}

Value PadGrad(At dy, Value x_like, Ints pads, const std::string& mode, double value) {
  return MakeOp("PadGrad", {dy.value, x_like}, PadAttrs(std::move(pads), mode, value), dy.loc);
}

Value GatherGrad(At dy, Value indices, Value data_like, int64_t axis) {
  return MakeOp("GatherGrad", {dy.value, indices, data_like}, OneAttr("axis", axis), dy.loc);
}

std::vector<Value> ConcatGrad(At dy, const std::vector<Value>& values_like, int64_t axis) {
  std::vector<Value> inputs = {dy.value};
  inputs.insert(inputs.end(), values_like.begin(), values_like.end());
  return MakeOpN("ConcatGrad", inputs, OneAttr("axis", axis), dy.loc, values_like.size());
}

void RegisterArrayOps(OpRegistry& r) {
  RegisterArrayLikeOps(r);
  RegisterUniqueOps(r);
  RegisterSequenceOps(r);
  RegisterTextOps(r);
  RegisterArrayElementsOps(r);
  using namespace internal;  // NOLINT: the Infer* functions
  // Each op has its gradient in the table or is marked not differentiable (Shape, OneHot, Range,
  // the backward ops). Data movement is exact in any type: neutral in mixed precision.
  // Every op here moves data: no FLOPs.
  auto reg = [&](OpDefBuilder& b) {
    RegisterWithGradient(r, b.Flops(NoFlops()).Build(), ArrayGradients());
  };
  const std::vector<DType>& any = AllDTypes();
  auto one_input = [&](const char* op) {
    return OpDefBuilder(op, "array")
        .Input("x", "T")
        .Output("y")
        .Types("T", any)
        .Precision(PrecisionList::kNeutral);
  };
  // Backward ops: dy, then the forward input(s) whose run-time shape they follow; not
  // differentiable (no second derivatives).
  auto backward = [&](const char* op) {
    return OpDefBuilder(op, "array")
        .Input("dy", "T")
        .Output("dx")
        .Types("T", FloatTypes())
        .NotDifferentiable();
  };
  const Ints none;
  reg(one_input("Reshape").RequiredAttr("shape", AttrType::kInts).Infer(InferReshape));
  reg(one_input("Transpose").Attr("perm", AttrType::kInts, none).Infer(InferTranspose));
  reg(one_input("Squeeze").Attr("axes", AttrType::kInts, none).Infer(InferSqueeze));
  reg(one_input("Unsqueeze").RequiredAttr("axes", AttrType::kInts).Infer(InferUnsqueeze));
  reg(one_input("Flatten").Attr("axis", AttrType::kInt, 1).Infer(InferFlatten));
  reg(one_input("BroadcastTo").RequiredAttr("shape", AttrType::kInts).Infer(InferBroadcastTo));
  reg(one_input("Tile").RequiredAttr("multiples", AttrType::kInts).Infer(InferTile));
  auto slice_attrs = [&](OpDefBuilder b) {
    return b.RequiredAttr("begins", AttrType::kInts)
        .RequiredAttr("ends", AttrType::kInts)
        .Attr("axes", AttrType::kInts, none)
        .Attr("steps", AttrType::kInts, none);
  };
  auto pad_attrs = [&](OpDefBuilder b) {
    return b.RequiredAttr("pads", AttrType::kInts)
        .Attr("mode", AttrType::kString, "constant")
        .Attr("value", AttrType::kFloat, 0.0);
  };
  reg(slice_attrs(one_input("Slice")).Infer(InferSlice));
  reg(pad_attrs(one_input("Pad")).Infer(InferPad));
  reg(OpDefBuilder("Shape", "array")
          .Input("x", "T")
          .Output("shape")
          .Types("T", any)
          .Infer(InferShape)
          .StaticValue(ShapeValue)
          .NotDifferentiable()
          .NoPrecisionList());
  reg(OpDefBuilder("Concat", "array")
          .VariadicInput("values", "T")
          .Output("y")
          .Types("T", any)
          .RequiredAttr("axis", AttrType::kInt)
          .Infer(InferConcat)
          .Precision(PrecisionList::kNeutral));
  reg(OpDefBuilder("Split", "array")
          .Input("x", "T")
          .VariadicOutput("y")
          .Types("T", any)
          .Attr("axis", AttrType::kInt, 0)
          .Attr("sizes", AttrType::kInts, none)
          .Attr("num_outputs", AttrType::kInt, 0)
          .Infer(InferSplit)
          .Precision(PrecisionList::kNeutral));
  reg(OpDefBuilder("Gather", "array")
          .Input("data", "T")
          .Input("indices", "I")
          .Output("y")
          .Types("T", any)
          .Types("I", IndexTypes())
          .Attr("axis", AttrType::kInt, 0)
          .Infer(InferGather)
          .Precision(PrecisionList::kNeutral));
  reg(OpDefBuilder("OneHot", "array")
          .Input("indices", "I")
          .Output("y")
          .Types("I", IndexTypes())
          .RequiredAttr("depth", AttrType::kInt)
          .Attr("on_value", AttrType::kFloat, 1.0)
          .Attr("off_value", AttrType::kFloat, 0.0)
          .Attr("axis", AttrType::kInt, -1)
          .Attr("dtype", AttrType::kDType, f32)
          .Infer(InferOneHot)
          .NotDifferentiable()
          .NoPrecisionList());
  reg(OpDefBuilder("Range", "array")
          .Input("start", "T")
          .Input("limit", "T")
          .Input("delta", "T")
          .Output("y")
          .Types("T", NumericTypes())
          .Infer(InferRange)
          .NotDifferentiable()
          .NoPrecisionList());
  reg(OpDefBuilder("NonZero", "array")
          .Input("x", "T")
          .Output("indices")
          .Types("T", any)
          .Infer(InferNonZero)
          .NotDifferentiable()
          .NoPrecisionList());
  reg(backward("TileGrad")
          .Input("x_like", "L")
          .RequiredAttr("multiples", AttrType::kInts)
          .Infer(InferTileGrad)
          .Precision(PrecisionList::kKeep32));  // a sum
  reg(slice_attrs(backward("SliceGrad").Input("x_like", "L"))
          .Infer(InferSliceGrad)
          .Precision(PrecisionList::kNeutral));
  reg(pad_attrs(backward("PadGrad").Input("x_like", "L"))
          .Infer(InferPadGrad)
          .Precision(PrecisionList::kNeutral));
  reg(backward("GatherGrad")
          .Input("indices", "I")
          .Input("data_like", "L")
          .Types("I", IndexTypes())
          .Attr("axis", AttrType::kInt, 0)
          .Infer(InferGatherGrad)
          .NoPrecisionList());
  reg(OpDefBuilder("ConcatGrad", "array")
          .Input("dy", "T")
          .VariadicInput("values_like", "T")
          .VariadicOutput("dx")
          .Types("T", any)
          .RequiredAttr("axis", AttrType::kInt)
          .Infer(InferConcatGrad)
          .NotDifferentiable()
          .Precision(PrecisionList::kNeutral));
}

}  // namespace kiln
