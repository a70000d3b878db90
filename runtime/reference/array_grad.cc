// Reference kernels of the "array" backward ops: TileGrad, SliceGrad, PadGrad and GatherGrad
// (registered by RegisterArrayKernels in array.cc; ConcatGrad runs Split's kernel). Each adds
// every element of dy to the x element that the forward op copied it from, into a zero-filled
// output shaped like x (preallocated: its run-time shape is the `like` input's).
#include "ir/ops/array_internal.h"
#include "runtime/reference/array_internal.h"

namespace kiln::reference::array_internal {

void AddToSource(const Tensor& dy, Tensor& dx, const SourceFn& source) {
  if (dy.num_elements() == 0 || dx.num_elements() == 0) return;
  std::vector<int64_t> strides = RowMajorStrides(dx.shape());
  for (int64_t i = 0; i < dy.num_elements(); ++i) {
    int64_t j = source(Unravel(i, dy.shape()), strides);
    if (j >= 0) dx.SetDouble(j, dx.GetDouble(j) + dy.GetDouble(i));
  }
}

Status TileGradKernel(KernelContext& ctx) {
  AddToSource(ctx.input(0), ctx.output(0), TileSource(ctx.output(0).shape()));
  return OkStatus();
}

Status SliceGradKernel(KernelContext& ctx) {
  Result<SourceFn> source = SliceSource(ctx.attrs(), ctx.output(0).shape());
  if (!source.ok()) return ctx.Fail(source.error().message());
  AddToSource(ctx.input(0), ctx.output(0), *source);
  return OkStatus();
}

Status PadGradKernel(KernelContext& ctx) {
  AddToSource(ctx.input(0), ctx.output(0), PadSource(ctx.attrs(), ctx.output(0).shape()));
  return OkStatus();
}

// dx[o, indices[k], i] += dy[o, k, i] over outer o, index k and inner i (Gather's loops reversed).
Status GatherGradKernel(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  Tensor& dx = ctx.output(0);
  int axis = *NormalizeAxis(ctx.attrs().Find("axis")->get<int64_t>(), dx.rank());
  KILN_RETURN_IF_ERROR(CheckGatherIndices(ctx, indices, dx.shape(), axis));
  if (dy.num_elements() == 0) return OkStatus();
  int64_t n = dx.shape()[axis], count = indices.num_elements();
  int64_t outer = DimsProduct(dx.shape(), 0, axis);
  int64_t inner = DimsProduct(dx.shape(), axis + 1, dx.rank());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t k = 0; k < count; ++k) {
      int64_t v = indices.GetInt(k);
      if (v < 0) v += n;
      for (int64_t i = 0; i < inner; ++i) {
        int64_t from = (o * count + k) * inner + i, to = (o * n + v) * inner + i;
        dx.SetDouble(to, dx.GetDouble(to) + dy.GetDouble(from));
      }
    }
  }
  return OkStatus();
}

}  // namespace kiln::reference::array_internal
