// Reference kernels of GatherElements and ScatterElements (ir/ops/array_elements.h), registered by
// RegisterArrayKernels.
#include "runtime/reference/array_internal.h"

namespace kiln::reference {
namespace {

using array_internal::CopyElements;

// The flat index in `data` that element `i` of `indices` addresses, or an error for an index out
// of range.
Result<int64_t> Target(const KernelContext& ctx, const Tensor& indices, int64_t i, int axis,
                       const Shape& data, const std::vector<int64_t>& strides) {
  std::vector<int64_t> c = Unravel(i, indices.shape());
  int64_t n = data[axis], v = indices.GetInt(i);
  if (v < -n || v >= n)
    return ctx.Fail("index ", v, " is out of range for axis ", axis, " of size ", n, " (data ",
                    data.ToString(), ", indices element ", i, ")");
  c[axis] = v < 0 ? v + n : v;
  int64_t j = 0;
  for (size_t d = 0; d < c.size(); ++d) j += c[d] * strides[d];
  return j;
}

int AxisOf(const KernelContext& ctx) {
  return *NormalizeAxis(ctx.attrs().Find("axis")->get<int64_t>(), ctx.input(0).rank());
}

Status GatherElementsKernel(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  for (int d = 0; d < data.rank(); ++d)
    if (indices.shape()[d] > data.shape()[d] && d != AxisOf(ctx))
      return ctx.Fail("indices ", indices.shape().ToString(), " is larger than data ",
                      data.shape().ToString(), " in dim ", d);
  std::vector<int64_t> strides = RowMajorStrides(data.shape());
  for (int64_t i = 0; i < indices.num_elements(); ++i) {
    KILN_ASSIGN_OR_RETURN(int64_t j, Target(ctx, indices, i, AxisOf(ctx), data.shape(), strides));
    CopyElements(data, j, ctx.output(0), i);
  }
  return OkStatus();
}

Status ScatterElementsKernel(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const Tensor& updates = ctx.input(2);
  const std::string& reduction = ctx.attrs().Find("reduction")->get<std::string>();
  if (updates.shape() != indices.shape())
    return ctx.Fail("updates ", updates.shape().ToString(), " must have the shape of indices ",
                    indices.shape().ToString());
  for (int d = 0; d < data.rank(); ++d)
    if (indices.shape()[d] > data.shape()[d] && d != AxisOf(ctx))
      return ctx.Fail("indices ", indices.shape().ToString(), " is larger than data ",
                      data.shape().ToString(), " in dim ", d);
  Tensor& y = ctx.output(0);
  CopyElements(data, 0, y, 0, data.num_elements());
  std::vector<int64_t> strides = RowMajorStrides(data.shape());
  bool is_float = IsFloat(data.dtype());
  for (int64_t i = 0; i < indices.num_elements(); ++i) {
    KILN_ASSIGN_OR_RETURN(int64_t j, Target(ctx, indices, i, AxisOf(ctx), data.shape(), strides));
    if (reduction == "none") {
      CopyElements(updates, i, y, j);
    } else if (is_float) {
      double a = y.GetDouble(j), b = updates.GetDouble(i);
      y.SetDouble(j, reduction == "add" ? a + b : a * b);
    } else {
      int64_t a = y.GetInt(j), b = updates.GetInt(i);
      y.SetInt(j, reduction == "add" ? a + b : a * b);
    }
  }
  return OkStatus();
}

}  // namespace

void RegisterArrayElementsKernels(KernelRegistry& r) {
  r.Register("GatherElements", GatherElementsKernel);
  r.Register("ScatterElements", ScatterElementsKernel);
}

}  // namespace kiln::reference
