// Inference of the "array" ops that join, select or create elements: Concat, Split, Slice, Gather,
// Pad, OneHot and Range (see ir/ops/array.h for the semantics), and the Slice/Range attribute
// readers that the reference kernels share.
#include <algorithm>
#include <cmath>
#include <string>

#include "ir/ops/array_internal.h"

namespace kiln::internal {
namespace {

// The most Split outputs a node may declare (guards against absurd `num_outputs` values).
constexpr int64_t kMaxSplitOutputs = 1 << 16;

// NormalizeAxis with an error that names the attribute and the shape.
Result<int> AxisAttr(const InferContext& ctx, const Shape& s, const char* attr = "axis") {
  KILN_ASSIGN_OR_RETURN(int64_t axis, ctx.attrs().GetInt(attr));
  Result<int> a = NormalizeAxis(axis, s.rank());
  if (!a.ok() || s.rank() == 0)
    return ctx.Fail("attribute '", attr, "' is ", axis, ", out of range for ", s.ToString());
  return *a;
}

}  // namespace

Result<Shape> ConcatenatedShape(const InferContext& ctx, const std::vector<Shape>& in) {
  const Shape& first = in[0];
  if (first.rank() == 0) return ctx.Fail("cannot concatenate scalars; reshape them to [1] first");
  KILN_ASSIGN_OR_RETURN(int axis, AxisAttr(ctx, first));
  std::vector<int64_t> out = first.dims();
  for (size_t i = 1; i < in.size(); ++i) {
    const Shape& s = in[i];
    if (s.rank() != first.rank())
      return ctx.Fail("input ", i, " has shape ", s.ToString(), " but input 0 has ",
                      first.ToString(), "; all inputs must have the same rank");
    for (int d = 0; d < s.rank(); ++d) {
      if (d == axis) {
        std::optional<int64_t> sum = CheckedAdd(out[d], s[d]);
        if (out[d] >= 0 && s[d] >= 0 && !sum)
          return ctx.Fail("the concatenated dim overflows int64");
        out[d] = out[d] < 0 || s[d] < 0 ? kUnknownDim : *sum;
      } else if (s[d] >= 0 && out[d] >= 0 && s[d] != out[d]) {
        return ctx.Fail("input ", i, " has shape ", s.ToString(), ", which differs from ",
                        first.ToString(), " in dim ", d, "; only dim ", axis,
                        " (the axis) may differ");
      } else if (out[d] < 0) {
        out[d] = s[d];
      }
    }
  }
  return Shape(std::move(out));
}

Status InferConcat(InferContext& ctx) {
  std::vector<Shape> in;
  for (int i = 0; i < ctx.num_inputs(); ++i) in.push_back(ctx.shape(i));
  KILN_ASSIGN_OR_RETURN(Shape out, ConcatenatedShape(ctx, in));
  ctx.AddOutput(ctx.dtype(0), std::move(out));
  return OkStatus();
}

Status InferSplit(InferContext& ctx) {
  const Shape& in = ctx.shape(0);
  KILN_ASSIGN_OR_RETURN(int axis, AxisAttr(ctx, in));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, ctx.attrs().GetInts("sizes"));
  KILN_ASSIGN_OR_RETURN(int64_t num, ctx.attrs().GetInt("num_outputs"));
  if (sizes.empty() == (num == 0))
    return ctx.Fail(
        "exactly one of 'sizes' (non-empty) and 'num_outputs' (non-zero) must be given;",
        " got sizes ", IntsToString(sizes), " and num_outputs ", num);
  int64_t dim = in[axis];
  if (num != 0) {
    if (num < 0 || num > kMaxSplitOutputs)
      return ctx.Fail("attribute 'num_outputs' is ", num, ", expected 1..", kMaxSplitOutputs);
    if (dim >= 0 && dim % num != 0)
      return ctx.Fail("num_outputs ", num, " does not divide dim ", axis, " of ", in.ToString());
    sizes.assign(num, dim >= 0 ? dim / num : kUnknownDim);
  } else {
    int64_t sum = 0;
    for (int64_t s : sizes) {
      std::optional<int64_t> next = CheckedAdd(sum, s);
      if (s < 0 || !next)
        return ctx.Fail("attribute 'sizes' ", IntsToString(sizes), " must hold sizes >= 0");
      sum = *next;
    }
    if (dim >= 0 && sum != dim)
      return ctx.Fail("attribute 'sizes' ", IntsToString(sizes), " sums to ", sum, ", but dim ",
                      axis, " of ", in.ToString(), " has size ", dim);
  }
  for (int64_t s : sizes) {
    Shape out = in;
    out.set_dim(axis, s);
    ctx.AddOutput(ctx.dtype(0), std::move(out));
  }
  return OkStatus();
}

Result<std::vector<SliceDim>> SliceDims(const AttrMap& attrs, int rank) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> begins, attrs.GetInts("begins"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> ends, attrs.GetInts("ends"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axes, attrs.GetInts("axes"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> steps, attrs.GetInts("steps"));
  auto error = [](const auto&... parts) {
    return MakeError(ErrorCode::kInvalidArgument, parts...);
  };
  size_t n = begins.size();
  if (ends.size() != n)
    return error("attribute 'begins' has ", n, " entries but 'ends' has ", ends.size());
  if (axes.empty()) {
    if (n > static_cast<size_t>(rank))
      return error("attribute 'begins' has ", n, " entries, more than the input's rank ", rank);
    for (size_t k = 0; k < n; ++k) axes.push_back(static_cast<int64_t>(k));
  }
  if (steps.empty()) steps.assign(n, 1);
  if (axes.size() != n || steps.size() != n)
    return error("attributes 'axes' (", axes.size(), " entries) and 'steps' (", steps.size(),
                 " entries) must be empty or match 'begins' (", n, " entries)");
  std::vector<SliceDim> dims(rank);
  std::vector<bool> seen(rank, false);
  for (size_t k = 0; k < n; ++k) {
    Result<int> a = NormalizeAxis(axes[k], rank);
    if (!a.ok() || rank == 0)
      return error("attribute 'axes': axis ", axes[k], " is out of range for rank ", rank);
    if (seen[*a])
      return error("attribute 'axes' ", IntsToString(axes), " names axis ", *a, " twice");
    if (steps[k] == 0) return error("attribute 'steps' ", IntsToString(steps), " has a 0 step");
    seen[*a] = true;
    dims[*a] = SliceDim{begins[k], ends[k], steps[k]};
  }
  return dims;
}

SliceExtent ClampSlice(const SliceDim& s, int64_t dim) {
  // Python's slice.indices(dim): negative indices count from the end, then clamp to
  // [0, dim] going forwards or [-1, dim - 1] going backwards.
  int64_t lower = s.step > 0 ? 0 : -1, upper = s.step > 0 ? dim : dim - 1;
  auto clamp = [&](int64_t i) { return std::clamp(i < 0 ? i + dim : i, lower, upper); };
  int64_t start = clamp(s.begin), end = clamp(s.end);
  // Counts in uint64 so that |step| of INT64_MIN cannot overflow.
  uint64_t span = s.step > 0 ? (end > start ? uint64_t(end - start) : 0)
                             : (start > end ? uint64_t(start - end) : 0);
  uint64_t stride = s.step > 0 ? uint64_t(s.step) : 0 - uint64_t(s.step);
  int64_t count = span == 0 ? 0 : static_cast<int64_t>((span - 1) / stride + 1);
  return {start, count};
}

Result<Shape> SlicedShape(const InferContext& ctx, const Shape& in) {
  Result<std::vector<SliceDim>> dims = SliceDims(ctx.attrs(), in.rank());
  if (!dims.ok()) return ctx.Fail(dims.error().message());
  std::vector<int64_t> out(in.rank());
  for (int i = 0; i < in.rank(); ++i)
    out[i] = in[i] < 0 ? kUnknownDim : ClampSlice((*dims)[i], in[i]).count;
  return Shape(std::move(out));
}

Status InferSlice(InferContext& ctx) {
  KILN_ASSIGN_OR_RETURN(Shape out, SlicedShape(ctx, ctx.shape(0)));
  ctx.AddOutput(ctx.dtype(0), std::move(out));
  return OkStatus();
}

Result<Shape> GatheredShape(const InferContext& ctx, const Shape& data, const Shape& indices) {
  if (data.rank() == 0) return ctx.Fail("cannot gather from a scalar; 'data' must have rank >= 1");
  KILN_ASSIGN_OR_RETURN(int axis, AxisAttr(ctx, data));
  std::vector<int64_t> out(data.dims().begin(), data.dims().begin() + axis);
  out.insert(out.end(), indices.dims().begin(), indices.dims().end());
  out.insert(out.end(), data.dims().begin() + axis + 1, data.dims().end());
  return Shape(std::move(out));
}

Status InferGather(InferContext& ctx) {
  KILN_ASSIGN_OR_RETURN(Shape out, GatheredShape(ctx, ctx.shape(0), ctx.shape(1)));
  ctx.AddOutput(ctx.dtype(0), std::move(out));
  return OkStatus();
}

Result<Shape> PaddedShape(const InferContext& ctx, const Shape& in) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> pads, ctx.attrs().GetInts("pads"));
  KILN_ASSIGN_OR_RETURN(std::string mode, ctx.attrs().GetString("mode"));
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    return ctx.Fail("attribute 'mode' must be \"constant\", \"reflect\" or \"edge\", got \"", mode,
                    "\"");
  int rank = in.rank();
  if (pads.size() != 2 * static_cast<size_t>(rank))
    return ctx.Fail("attribute 'pads' ", IntsToString(pads), " must have 2 * rank = ", 2 * rank,
                    " entries for ", in.ToString(),
                    " ([begin_0, ..., begin_n, end_0, ..., end_n])");
  std::vector<int64_t> out(rank);
  for (int i = 0; i < rank; ++i) {
    int64_t d = in[i], b = pads[i], e = pads[rank + i];
    if (d < 0) {
      out[i] = kUnknownDim;
      continue;
    }
    std::optional<int64_t> sum = CheckedAdd(d, b);
    if (sum) sum = CheckedAdd(*sum, e);
    if (!sum) return ctx.Fail("padding dim ", i, " of ", in.ToString(), " overflows int64");
    if (b < -d || e < -d || *sum < 0)
      return ctx.Fail("attribute 'pads' ", IntsToString(pads), " crops more than dim ", i, " of ",
                      in.ToString(), " holds");
    if (mode == "reflect" && (b >= d || e >= d))
      return ctx.Fail("reflect padding of dim ", i, " (size ", d, ") by ", b, " and ", e,
                      " needs pads smaller than the dim");
    if (mode == "edge" && d == 0 && (b > 0 || e > 0))
      return ctx.Fail("edge padding needs a non-empty dim; dim ", i, " of ", in.ToString(),
                      " is empty");
    out[i] = *sum;
  }
  return Shape(std::move(out));
}

Status InferPad(InferContext& ctx) {
  KILN_ASSIGN_OR_RETURN(Shape out, PaddedShape(ctx, ctx.shape(0)));
  ctx.AddOutput(ctx.dtype(0), std::move(out));
  return OkStatus();
}

Status InferOneHot(InferContext& ctx) {
  KILN_ASSIGN_OR_RETURN(int64_t depth, ctx.attrs().GetInt("depth"));
  KILN_ASSIGN_OR_RETURN(int64_t axis, ctx.attrs().GetInt("axis"));
  KILN_ASSIGN_OR_RETURN(DType dtype, ctx.attrs().GetDType("dtype"));
  if (depth <= 0) return ctx.Fail("attribute 'depth' is ", depth, ", expected > 0");
  std::vector<int64_t> out = ctx.shape(0).dims();
  Result<int> a = NormalizeAxis(axis, static_cast<int>(out.size()) + 1);
  if (!a.ok())
    return ctx.Fail("attribute 'axis' is ", axis, ", out of range for an output of rank ",
                    out.size() + 1);
  out.insert(out.begin() + *a, depth);
  ctx.AddOutput(dtype, Shape(std::move(out)));
  return OkStatus();
}

Result<int64_t> RangeLength(const Tensor& start, const Tensor& limit, const Tensor& delta) {
  auto error = [](const auto&... parts) {
    return MakeError(ErrorCode::kInvalidArgument, parts...);
  };
  if (IsFloat(delta.dtype())) {
    double a = start.GetDouble(0), b = limit.GetDouble(0), d = delta.GetDouble(0);
    if (d == 0) return error("delta must not be 0");
    double n = std::ceil((b - a) / d);
    if (!std::isfinite(n) || n > 0x1p62)
      return error("the length of Range(", a, ", ", b, ", ", d, ") is not a finite int64");
    return n > 0 ? static_cast<int64_t>(n) : 0;
  }
  int64_t a = start.GetInt(0), b = limit.GetInt(0), d = delta.GetInt(0);
  if (d == 0) return error("delta must not be 0");
  // Exact ceil((b - a) / d) in uint64, which holds any difference of two int64 values.
  uint64_t span =
      d > 0 ? (b > a ? uint64_t(b) - uint64_t(a) : 0) : (a > b ? uint64_t(a) - uint64_t(b) : 0);
  uint64_t step = d > 0 ? uint64_t(d) : 0 - uint64_t(d);
  uint64_t n = span / step + (span % step != 0);
  if (n > uint64_t{INT64_MAX})
    return error("the length of Range(", a, ", ", b, ", ", d, ") overflows int64");
  return static_cast<int64_t>(n);
}

Status InferRange(InferContext& ctx) {
  static const char* kNames[] = {"start", "limit", "delta"};
  for (int i = 0; i < 3; ++i)
    if (ctx.shape(i).rank() != 0)
      return ctx.Fail("input '", kNames[i], "' must be a scalar, got shape ",
                      ctx.shape(i).ToString());
  int64_t length = kUnknownDim;
  if (ctx.value(0) && ctx.value(1) && ctx.value(2)) {
    Result<int64_t> n = RangeLength(*ctx.value(0), *ctx.value(1), *ctx.value(2));
    if (!n.ok()) return ctx.Fail(n.error().message());
    length = *n;
  } else if (ctx.value(2) && ctx.value(2)->GetDouble(0) == 0) {
    return ctx.Fail("delta must not be 0");
  }
  ctx.AddOutput(ctx.dtype(0), Shape{length});
  return OkStatus();
}

Status InferNonZero(InferContext& ctx) {
  int64_t count = kUnknownDim;  // known only from a known value
  if (const Tensor* x = ctx.value(0)) {
    count = 0;
    for (int64_t i = 0; i < x->num_elements(); ++i) count += x->GetDouble(i) != 0;
  }
  ctx.AddOutput(i64, Shape{ctx.shape(0).rank(), count});
  return OkStatus();
}

}  // namespace kiln::internal
