// Reference kernels of the "array" ops that select or create elements: Slice, Gather, Pad,
// OneHot and Range (registered by RegisterArrayKernels in array.cc).
#include <algorithm>
#include <string>

#include "ir/ops/array_internal.h"
#include "runtime/reference/array_internal.h"

namespace kiln::reference::array_internal {

Result<SourceFn> SliceSource(const AttrMap& attrs, const Shape& x) {
  KILN_ASSIGN_OR_RETURN(std::vector<internal::SliceDim> dims, internal::SliceDims(attrs, x.rank()));
  std::vector<int64_t> start, step;
  for (int d = 0; d < x.rank(); ++d) {
    start.push_back(internal::ClampSlice(dims[d], x[d]).start);
    step.push_back(dims[d].step);
  }
  return SourceFn([start, step](const Coords& c, const Coords& s) {
    int64_t j = 0;
    for (size_t d = 0; d < c.size(); ++d) j += (start[d] + c[d] * step[d]) * s[d];
    return j;
  });
}

Status SliceKernel(KernelContext& ctx) {
  Result<SourceFn> source = SliceSource(ctx.attrs(), ctx.input(0).shape());
  if (!source.ok()) return ctx.Fail(source.error().message());
  CopyFromSource(ctx.input(0), ctx.output(0), *source);
  return OkStatus();
}

Status CheckGatherIndices(const KernelContext& ctx, const Tensor& indices, const Shape& data,
                          int axis) {
  int64_t n = data[axis];
  for (int64_t k = 0; k < indices.num_elements(); ++k) {
    int64_t v = indices.GetInt(k);
    if (v < -n || v >= n)
      return ctx.Fail("index ", v, " is out of range for axis ", axis, " of size ", n, " (data ",
                      data.ToString(), ", indices element ", k, ")");
  }
  return OkStatus();
}

Status GatherKernel(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  Tensor& y = ctx.output(0);
  int axis = *NormalizeAxis(ctx.attrs().Find("axis")->get<int64_t>(), data.rank());
  int64_t n = data.shape()[axis], count = indices.num_elements();
  KILN_RETURN_IF_ERROR(CheckGatherIndices(ctx, indices, data.shape(), axis));
  if (y.num_elements() == 0) return OkStatus();
  int64_t outer = DimsProduct(data.shape(), 0, axis);
  int64_t inner = DimsProduct(data.shape(), axis + 1, data.rank());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k = 0; k < count; ++k) {
      int64_t v = indices.GetInt(k);
      if (v < 0) v += n;
      CopyElements(data, (o * n + v) * inner, y, (o * count + k) * inner, inner);
    }
  }
  return OkStatus();
}

SourceFn PadSource(const AttrMap& attrs, const Shape& x) {
  std::vector<int64_t> pads = attrs.Find("pads")->get<std::vector<int64_t>>();
  std::string mode = attrs.Find("mode")->get<std::string>();
  // Inference guarantees reflect pads < dim and edge dims non-empty, so every index maps inside x.
  return [x, pads, mode](const Coords& c, const Coords& s) -> int64_t {
    int64_t j = 0;
    for (size_t d = 0; d < c.size(); ++d) {
      int64_t n = x[d], i = c[d] - pads[d];
      if (i < 0 || i >= n) {
        if (mode == "constant") return -1;
        if (mode == "edge")
          i = std::clamp<int64_t>(i, 0, n - 1);
        else
          i = i < 0 ? -i : 2 * (n - 1) - i;
      }
      j += i * s[d];
    }
    return j;
  };
}

Status PadKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (ctx.attrs().Find("mode")->get<std::string>() == "constant") {
    double value = ctx.attrs().Find("value")->get<double>();
    for (int64_t i = 0; i < y.num_elements(); ++i) y.SetDouble(i, value);
  }
  CopyFromSource(x, y, PadSource(ctx.attrs(), x.shape()));
  return OkStatus();
}

Status OneHotKernel(KernelContext& ctx) {
  const Tensor& indices = ctx.input(0);
  Tensor& y = ctx.output(0);
  int64_t depth = ctx.attrs().Find("depth")->get<int64_t>();
  double on = ctx.attrs().Find("on_value")->get<double>();
  double off = ctx.attrs().Find("off_value")->get<double>();
  int axis = *NormalizeAxis(ctx.attrs().Find("axis")->get<int64_t>(), y.rank());
  if (y.num_elements() == 0) return OkStatus();
  for (int64_t i = 0; i < y.num_elements(); ++i) y.SetDouble(i, off);
  int64_t outer = DimsProduct(indices.shape(), 0, axis);
  int64_t inner = DimsProduct(indices.shape(), axis, indices.rank());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      int64_t v = indices.GetInt(o * inner + i);
      if (v < 0) v += depth;
      if (v >= 0 && v < depth) y.SetDouble((o * depth + v) * inner + i, on);  // else all off
    }
  }
  return OkStatus();
}

Status RangeKernel(KernelContext& ctx) {
  const Tensor &start = ctx.input(0), &limit = ctx.input(1), &delta = ctx.input(2);
  Result<int64_t> n = internal::RangeLength(start, limit, delta);
  if (!n.ok()) return ctx.Fail(n.error().message());
  Result<Tensor> y = Tensor::Create(start.dtype(), Shape{*n});
  if (!y.ok()) return ctx.node().MakeNodeError(y.error().code(), y.error().message());
  if (IsFloat(start.dtype())) {
    double a = start.GetDouble(0), d = delta.GetDouble(0);
    for (int64_t i = 0; i < *n; ++i) y->SetDouble(i, a + static_cast<double>(i) * d);
  } else {
    // start + i * delta lies in [start, limit); uint64 arithmetic avoids overflow on the way.
    uint64_t a = uint64_t(start.GetInt(0)), d = uint64_t(delta.GetInt(0));
    for (int64_t i = 0; i < *n; ++i) y->SetInt(i, static_cast<int64_t>(a + uint64_t(i) * d));
  }
  ctx.set_output(0, std::move(*y));
  return OkStatus();
}

Status NonZeroKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < x.num_elements(); ++i)
    if (x.GetDouble(i) != 0) hits.push_back(i);
  const int rank = x.rank();
  const auto count = static_cast<int64_t>(hits.size());
  Result<Tensor> y = Tensor::Create(i64, Shape{rank, count});
  if (!y.ok()) return ctx.node().MakeNodeError(y.error().code(), y.error().message());
  int64_t* at = y->data<int64_t>();
  for (int64_t j = 0; j < count; ++j) {
    int64_t rest = hits[static_cast<size_t>(j)];
    for (int d = rank - 1; d >= 0; --d) {
      at[d * count + j] = rest % x.shape()[d];
      rest /= x.shape()[d];
    }
  }
  ctx.set_output(0, std::move(*y));
  return OkStatus();
}

}  // namespace kiln::reference::array_internal
