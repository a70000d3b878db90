// Op family "array": builder functions and the schemas. Inference lives in array_layout.cc and
// array_index.cc (declared in array_internal.h).
#include "ir/ops/array.h"

#include "ir/ops/array_internal.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/registration.h"

namespace kiln {

using internal::MakeOp;
using internal::MakeOpN;

namespace {
using Ints = std::vector<int64_t>;

Value OneAttrOp(const char* op, const At& x, const char* attr, AttrValue value) {
  AttrMap a;
  a.Set(attr, std::move(value));
  return MakeOp(op, {x.value}, std::move(a), x.loc);
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
  a.Set("sizes", std::move(sizes));
  return MakeOpN("Split", {x.value}, std::move(a), x.loc);
}

std::vector<Value> SplitEven(At x, int64_t axis, int64_t num_outputs) {
  AttrMap a;
  a.Set("axis", axis);
  a.Set("num_outputs", num_outputs);
  return MakeOpN("Split", {x.value}, std::move(a), x.loc);
}

Value Slice(At x, Ints begins, Ints ends, Ints axes, Ints steps) {
  AttrMap a;
  a.Set("begins", std::move(begins));
  a.Set("ends", std::move(ends));
  a.Set("axes", std::move(axes));
  a.Set("steps", std::move(steps));
  return MakeOp("Slice", {x.value}, std::move(a), x.loc);
}

Value Gather(At data, Value indices, int64_t axis) {
  AttrMap a;
  a.Set("axis", axis);
  return MakeOp("Gather", {data.value, indices}, std::move(a), data.loc);
}

Value Pad(At x, Ints pads, const std::string& mode, double value) {
  AttrMap a;
  a.Set("pads", std::move(pads));
  a.Set("mode", mode);
  a.Set("value", value);
  return MakeOp("Pad", {x.value}, std::move(a), x.loc);
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

Value Range(At start, Value limit, Value delta) {
  return MakeOp("Range", {start.value, limit, delta}, {}, start.loc);
}

void RegisterArrayOps(OpRegistry& r) {
  RegisterArrayLikeOps(r);
  using namespace internal;  // NOLINT: the Infer* functions
  const std::vector<DType>& any = AllDTypes();
  auto one_input = [&](const char* op) {
    return OpDefBuilder(op, "array").Input("x", "T").Output("y").Types("T", any);
  };
  const Ints none;
  r.Register(
      one_input("Reshape").RequiredAttr("shape", AttrType::kInts).Infer(InferReshape).Build());
  r.Register(
      one_input("Transpose").Attr("perm", AttrType::kInts, none).Infer(InferTranspose).Build());
  r.Register(one_input("Squeeze").Attr("axes", AttrType::kInts, none).Infer(InferSqueeze).Build());
  r.Register(
      one_input("Unsqueeze").RequiredAttr("axes", AttrType::kInts).Infer(InferUnsqueeze).Build());
  r.Register(one_input("Flatten").Attr("axis", AttrType::kInt, 1).Infer(InferFlatten).Build());
  r.Register(one_input("BroadcastTo")
                 .RequiredAttr("shape", AttrType::kInts)
                 .Infer(InferBroadcastTo)
                 .Build());
  r.Register(one_input("Tile").RequiredAttr("multiples", AttrType::kInts).Infer(InferTile).Build());
  r.Register(one_input("Slice")
                 .RequiredAttr("begins", AttrType::kInts)
                 .RequiredAttr("ends", AttrType::kInts)
                 .Attr("axes", AttrType::kInts, none)
                 .Attr("steps", AttrType::kInts, none)
                 .Infer(InferSlice)
                 .Build());
  r.Register(one_input("Pad")
                 .RequiredAttr("pads", AttrType::kInts)
                 .Attr("mode", AttrType::kString, "constant")
                 .Attr("value", AttrType::kFloat, 0.0)
                 .Infer(InferPad)
                 .Build());
  r.Register(OpDefBuilder("Shape", "array")
                 .Input("x", "T")
                 .Output("shape")
                 .Types("T", any)
                 .Infer(InferShape)
                 .Build());
  r.Register(OpDefBuilder("Concat", "array")
                 .VariadicInput("values", "T")
                 .Output("y")
                 .Types("T", any)
                 .RequiredAttr("axis", AttrType::kInt)
                 .Infer(InferConcat)
                 .Build());
  r.Register(OpDefBuilder("Split", "array")
                 .Input("x", "T")
                 .VariadicOutput("y")
                 .Types("T", any)
                 .Attr("axis", AttrType::kInt, 0)
                 .Attr("sizes", AttrType::kInts, none)
                 .Attr("num_outputs", AttrType::kInt, 0)
                 .Infer(InferSplit)
                 .Build());
  r.Register(OpDefBuilder("Gather", "array")
                 .Input("data", "T")
                 .Input("indices", "I")
                 .Output("y")
                 .Types("T", any)
                 .Types("I", IndexTypes())
                 .Attr("axis", AttrType::kInt, 0)
                 .Infer(InferGather)
                 .Build());
  r.Register(OpDefBuilder("OneHot", "array")
                 .Input("indices", "I")
                 .Output("y")
                 .Types("I", IndexTypes())
                 .RequiredAttr("depth", AttrType::kInt)
                 .Attr("on_value", AttrType::kFloat, 1.0)
                 .Attr("off_value", AttrType::kFloat, 0.0)
                 .Attr("axis", AttrType::kInt, -1)
                 .Attr("dtype", AttrType::kDType, f32)
                 .Infer(InferOneHot)
                 .Build());
  r.Register(OpDefBuilder("Range", "array")
                 .Input("start", "T")
                 .Input("limit", "T")
                 .Input("delta", "T")
                 .Output("y")
                 .Types("T", NumericTypes())
                 .Infer(InferRange)
                 .Build());
}

}  // namespace kiln
