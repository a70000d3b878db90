#include "ir/ops/max_pool_with_argmax.h"

#include <cstdint>
#include <string>
#include <vector>

#include "ir/op_registry.h"
#include "ir/ops/array.h"
#include "ir/ops/array_elements.h"
#include "ir/ops/array_like.h"
#include "ir/ops/math.h"
#include "ir/ops/nn.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/registration.h"

namespace kiln {
namespace {

// Window sizes, strides, dilations and pads past this are refused: the products and sums of the
// geometry then stay far inside int64.
constexpr int64_t kMaxWindowAttr = int64_t{1} << 31;
// A declared spatial dim past this (no tensor has one) is refused for the same reason.
constexpr int64_t kMaxSpatialDim = int64_t{1} << 60;

std::string List(const std::vector<int64_t>& v) { return Shape(v).ToString(); }

// Reads the int-list attribute `name` of `n` values (empty: all `fill`), each in [low, 2^31].
Result<std::vector<int64_t>> WindowAttr(const InferContext& ctx, const char* name, size_t n,
                                        int64_t fill, int64_t low) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> v, internal::IntsOfLength(ctx, name, n, fill));
  for (int64_t d : v)
    if (d < low || d > kMaxWindowAttr)
      return ctx.Fail("attribute '", name, "' values must be in [", low, ", 2^31], got ", List(v));
  return v;
}

Status InferMaxPoolWithArgmax(InferContext& ctx) {
  const Shape& x = ctx.shape(0);
  if (x.rank() < 3)
    return ctx.Fail("x must be [N, C, spatial...] with at least one spatial dim, got ",
                    ctx.input(0).ToString());
  const size_t k = static_cast<size_t>(x.rank() - 2);
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> kernel, ctx.attrs().GetInts("kernel"));
  if (kernel.size() != k)
    return ctx.Fail("attribute 'kernel' must have ", k, " values (one per spatial dim of ",
                    ctx.input(0).ToString(), "), got ", List(kernel));
  KILN_RETURN_IF_ERROR(WindowAttr(ctx, "kernel", k, 1, 1).status());
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> strides, WindowAttr(ctx, "strides", k, 1, 1));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> dilations, WindowAttr(ctx, "dilations", k, 1, 1));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> pads, WindowAttr(ctx, "pads", 2 * k, 0, 0));
  KILN_ASSIGN_OR_RETURN(bool ceil_mode, ctx.attrs().GetBool("ceil_mode"));
  Shape y = x;
  for (size_t i = 0; i < k; ++i) {
    const int64_t in = x[static_cast<int>(2 + i)];
    if (in == kUnknownDim) continue;
    if (in == 0) return ctx.Fail("cannot pool an empty input ", ctx.input(0).ToString());
    if (in > kMaxSpatialDim)
      return ctx.Fail("spatial dim ", i, " of ", ctx.input(0).ToString(), " is over 2^60");
    const int64_t extent = (kernel[i] - 1) * dilations[i] + 1;
    const int64_t out = PooledLength(in, pads[i], pads[k + i], extent, strides[i], ceil_mode);
    if (out < 1)
      return ctx.Fail("spatial dim ", i, " of ", ctx.input(0).ToString(), " plus its pads ",
                      pads[i], " and ", pads[k + i], " is shorter than the window's extent ",
                      extent, " (kernel ", List(kernel), ", dilations ", List(dilations), ")");
    y.set_dim(static_cast<int>(2 + i), out);
  }
  ctx.AddOutput(ctx.dtype(0), y);
  ctx.AddOutput(i64, y);
  return OkStatus();
}

// dy added at argmax into x flattened; windows without an element of x (argmax -1) give nothing.
Status MaxPoolWithArgmaxGradient(GradContext& ctx) {
  const Value& dy = ctx.grad(0);
  if (!dy.valid()) return OkStatus();  // only argmax is used
  const Value& x = ctx.input(0);
  const Value& argmax = ctx.output(1);
  Value inside = GreaterEqual(argmax, ctx.builder().Scalar(0, i64));
  Value at = Reshape(Select(inside, argmax, ZerosLike(argmax)), {-1});
  Value share = Reshape(Select(inside, dy, ZerosLike(dy)), {-1});
  Value flat_x = Reshape(x, {-1});
  ctx.SetInputGrad(0, ReshapeLike(ScatterElements(ZerosLike(flat_x), at, share, 0, "add"), x));
  return OkStatus();
}

}  // namespace

MaxPoolWithArgmaxResult MaxPoolWithArgmax(At x, const MaxPoolWithArgmaxOptions& o) {
  AttrMap a;
  a.Set("kernel", o.kernel);
  a.Set("strides", o.strides);
  a.Set("dilations", o.dilations);
  a.Set("pads", o.pads);
  a.Set("ceil_mode", o.ceil_mode);
  std::vector<Value> out =
      internal::MakeOpN("MaxPoolWithArgmax", {x.value}, std::move(a), x.loc, 2);
  return {out.at(0), out.at(1)};
}

void RegisterMaxPoolWithArgmaxOps(OpRegistry& r) {
  r.Register(OpDefBuilder("MaxPoolWithArgmax", "nn")
                 .Input("x", "T")
                 .Output("y")
                 .Output("argmax")
                 .Types("T", NumericTypes())
                 .RequiredAttr("kernel", AttrType::kInts)
                 .Attr("strides", AttrType::kInts, std::vector<int64_t>{})
                 .Attr("dilations", AttrType::kInts, std::vector<int64_t>{})
                 .Attr("pads", AttrType::kInts, std::vector<int64_t>{})
                 .Attr("ceil_mode", AttrType::kBool, false)
                 .Infer(InferMaxPoolWithArgmax)
                 .Grad(MaxPoolWithArgmaxGradient)
                 .Precision(PrecisionList::kFollow)
                 .Flops(FlopsPerWindowElement())  // one comparison each
                 .Build());
}

}  // namespace kiln
