// Gradients of op family "array", and the inference of its backward ops (TileGrad, SliceGrad,
// PadGrad, GatherGrad, ConcatGrad). Gradients never read a dim that may be unknown (-1) at build
// time: they follow the forward input's run-time shape (ReshapeLike, SumLike, ZerosLike) or hand
// it to a backward op, and use static shapes only where they are fully known.
#include "ir/ops/array_grad.h"

#include <algorithm>

#include "ir/ops/array.h"
#include "ir/ops/array_internal.h"
#include "ir/ops/array_like.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/reduce.h"

namespace kiln::internal {
namespace {

using Ints = std::vector<int64_t>;

Ints IntsAttr(const GradContext& ctx, const char* name) {
  return ctx.attrs().Find(name)->get<Ints>();
}
int64_t IntAttr(const GradContext& ctx, const char* name) {
  return ctx.attrs().Find(name)->get<int64_t>();
}

// Reshape, Squeeze, Unsqueeze, Flatten: the same elements back in x's shape.
Status ReshapeGrad(GradContext& ctx) {
  ctx.SetInputGrad(0, ReshapeLike(ctx.grad(0), ctx.input(0)));
  return OkStatus();
}

Status TransposeGrad(GradContext& ctx) {
  Ints perm = TransposePermutation(ctx.attrs(), ctx.input(0).rank());
  Ints inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = static_cast<int64_t>(i);
  ctx.SetInputGrad(0, Transpose(ctx.grad(0), inverse));
  return OkStatus();
}

Status BroadcastToGrad(GradContext& ctx) {
  ctx.SetInputGrad(0, SumToShapeOf(ctx.grad(0), ctx.input(0)));
  return OkStatus();
}

// Each x element receives the sum of its copies. With x's shape fully known (and no empty dim
// or tile count), dy reshaped to [m0, d0, m1, d1, ...] is summed over the m axes; else TileGrad.
Status TileGradFn(GradContext& ctx) {
  Value x = ctx.input(0), dy = ctx.grad(0);
  Ints multiples = IntsAttr(ctx, "multiples");
  bool identity = true, static_shape = x.shape().IsFullyKnown();
  Ints interleaved, tile_axes;
  for (int i = 0; i < x.rank(); ++i) {
    identity = identity && multiples[i] == 1;
    static_shape = static_shape && multiples[i] > 0 && x.shape()[i] > 0;
    interleaved.insert(interleaved.end(), {multiples[i], x.shape()[i]});
    tile_axes.push_back(2 * i);
  }
  if (identity)
    ctx.SetInputGrad(0, dy);
  else if (static_shape)
    ctx.SetInputGrad(0, Sum(Reshape(dy, interleaved), tile_axes));
  else
    ctx.SetInputGrad(0, TileGrad(dy, x, multiples));
  return OkStatus();
}

// Each input gets its part of dy: Split when every input's size along the axis is known, else
// ConcatGrad, which splits by the inputs' run-time sizes.
Status ConcatGradFn(GradContext& ctx) {
  int64_t axis = IntAttr(ctx, "axis");
  KILN_ASSIGN_OR_RETURN(int a, NormalizeAxis(axis, ctx.input(0).rank()));
  std::vector<Value> inputs;
  Ints sizes;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    inputs.push_back(ctx.input(i));
    sizes.push_back(ctx.input(i).shape()[a]);
  }
  bool known = std::all_of(sizes.begin(), sizes.end(), [](int64_t s) { return s >= 0; });
  std::vector<Value> parts =
      known ? Split(ctx.grad(0), a, sizes) : ConcatGrad(ctx.grad(0), inputs, a);
  for (int i = 0; i < ctx.num_inputs() && i < static_cast<int>(parts.size()); ++i)
    ctx.SetInputGrad(i, parts[i]);
  return OkStatus();
}

// The outputs' gradients joined back (zeros for outputs that receive none).
Status SplitGrad(GradContext& ctx) {
  int64_t count = IntAttr(ctx, "num_outputs");
  if (count == 0) count = static_cast<int64_t>(IntsAttr(ctx, "sizes").size());
  std::vector<Value> grads;
  for (int i = 0; i < count; ++i) grads.push_back(ctx.grad_or_zeros(i));
  ctx.SetInputGrad(0, Concat(grads, IntAttr(ctx, "axis")));
  return OkStatus();
}

Status SliceGradFn(GradContext& ctx) {
  ctx.SetInputGrad(
      0, SliceGrad(ctx.grad(0), ctx.input(0), IntsAttr(ctx, "begins"), IntsAttr(ctx, "ends"),
                   IntsAttr(ctx, "axes"), IntsAttr(ctx, "steps")));
  return OkStatus();
}

// Constant padding: the interior of dy, taken by padding with the negated pads (which crops
// what was padded and fills with zeros what was cropped). Reflect and edge padding also fold the
// border contributions back into x: PadGrad.
Status PadGradFn(GradContext& ctx) {
  Ints pads = IntsAttr(ctx, "pads");
  const std::string& mode = ctx.attrs().Find("mode")->get<std::string>();
  if (mode == "constant") {
    for (int64_t& p : pads) p = -p;
    ctx.SetInputGrad(0, Pad(ctx.grad(0), pads));
  } else {
    ctx.SetInputGrad(0, PadGrad(ctx.grad(0), ctx.input(0), pads, mode,
                                ctx.attrs().Find("value")->get<double>()));
  }
  return OkStatus();
}

Status GatherGradFn(GradContext& ctx) {
  ctx.SetInputGrad(0, GatherGrad(ctx.grad(0), ctx.input(1), ctx.input(0), IntAttr(ctx, "axis")));
  return OkStatus();
}

// The incoming gradient (input 0) must fit `expected`, the forward output's shape.
Status CheckGradShape(const InferContext& ctx, const Shape& expected) {
  const Shape& dy = ctx.shape(0);
  bool fits = dy.rank() == expected.rank();
  for (int i = 0; fits && i < dy.rank(); ++i)
    fits = dy[i] < 0 || expected[i] < 0 || dy[i] == expected[i];
  if (!fits)
    return ctx.Fail("the gradient 'dy' has shape ", dy.ToString(), ", but the forward output's ",
                    "shape is ", expected.ToString());
  return OkStatus();
}

// A backward op whose output is shaped like input `like`, given the forward output's shape.
Status LikeOutput(InferContext& ctx, const Result<Shape>& expected, int like) {
  if (!expected.ok()) return expected.error();
  KILN_RETURN_IF_ERROR(CheckGradShape(ctx, *expected));
  ctx.AddOutput(ctx.dtype(0), ctx.shape(like));
  return OkStatus();
}

}  // namespace

Status InferTileGrad(InferContext& ctx) {
  return LikeOutput(ctx, TiledShape(ctx, ctx.shape(1)), 1);
}
Status InferSliceGrad(InferContext& ctx) {
  return LikeOutput(ctx, SlicedShape(ctx, ctx.shape(1)), 1);
}
Status InferPadGrad(InferContext& ctx) {
  return LikeOutput(ctx, PaddedShape(ctx, ctx.shape(1)), 1);
}
Status InferGatherGrad(InferContext& ctx) {
  return LikeOutput(ctx, GatheredShape(ctx, ctx.shape(2), ctx.shape(1)), 2);
}

Status InferConcatGrad(InferContext& ctx) {
  std::vector<Shape> like;
  for (int i = 1; i < ctx.num_inputs(); ++i) like.push_back(ctx.shape(i));
  KILN_ASSIGN_OR_RETURN(Shape expected, ConcatenatedShape(ctx, like));
  KILN_RETURN_IF_ERROR(CheckGradShape(ctx, expected));
  for (const Shape& s : like) ctx.AddOutput(ctx.dtype(0), s);
  return OkStatus();
}

const std::map<std::string, GradFn>& ArrayGradients() {
  static const std::map<std::string, GradFn> grads = {
      {"Reshape", ReshapeGrad}, {"Squeeze", ReshapeGrad},     {"Unsqueeze", ReshapeGrad},
      {"Flatten", ReshapeGrad}, {"Transpose", TransposeGrad}, {"BroadcastTo", BroadcastToGrad},
      {"Tile", TileGradFn},     {"Concat", ConcatGradFn},     {"Split", SplitGrad},
      {"Slice", SliceGradFn},   {"Pad", PadGradFn},           {"Gather", GatherGradFn},
  };
  return grads;
}

}  // namespace kiln::internal
