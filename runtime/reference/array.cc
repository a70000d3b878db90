// Reference kernels of op family "array" (see ir/ops/array.h for the semantics). Kernels move
// elements as raw bytes, so every dtype works unchanged. Slice, Gather, Pad, OneHot and Range are
// in array_index.cc.
#include "ir/ops/array_internal.h"
#include "runtime/reference/array_internal.h"
#include "runtime/reference/kernel.h"
#include "runtime/reference/loops.h"

namespace kiln::reference {
namespace {

using array_internal::CopyElements;
using array_internal::CopyFromSource;
using array_internal::DimsProduct;

int AxisAttr(const KernelContext& ctx, int rank) {
  // Inference has validated the axis against this rank.
  return *NormalizeAxis(ctx.attrs().Find("axis")->get<int64_t>(), rank);
}

// Reshape, Squeeze, Unsqueeze, Flatten: the same elements in the same order.
Status CopyKernel(KernelContext& ctx) {
  CopyElements(ctx.input(0), 0, ctx.output(0), 0, ctx.input(0).num_elements());
  return OkStatus();
}

Status TransposeKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> perm = internal::TransposePermutation(ctx.attrs(), x.rank());
  CopyFromSource(x, ctx.output(0),
                 [&](const std::vector<int64_t>& c, const std::vector<int64_t>& s) {
                   int64_t j = 0;
                   for (size_t d = 0; d < c.size(); ++d) j += c[d] * s[perm[d]];
                   return j;
                 });
  return OkStatus();
}

// Row by row: each row of y (its last dim) is the row of x it tiles, repeated.
Status TileKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (x.num_elements() == 0 || y.num_elements() == 0) return OkStatus();
  if (x.rank() == 0) {
    CopyElements(x, 0, y, 0);
    return OkStatus();
  }
  const int last = x.rank() - 1;
  const int64_t row = x.shape()[last], rows = y.num_elements() / y.shape()[last];
  const array_internal::SourceFn source = array_internal::TileSource(x.shape());
  const std::vector<int64_t> strides = RowMajorStrides(x.shape());
  std::vector<int64_t> at(x.rank(), 0);  // the coordinates of row r's first element in y
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t from = source(at, strides), to = r * y.shape()[last];
    for (int64_t copy = 0; copy < y.shape()[last]; copy += row)
      CopyElements(x, from, y, to + copy, row);
    for (int d = last - 1; d >= 0 && ++at[d] == y.shape()[d]; --d) at[d] = 0;
  }
  return OkStatus();
}

Status BroadcastToKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (y.num_elements() == 0) return OkStatus();
  BroadcastIndex index(y.shape(), x.shape());
  for (int64_t i = 0; i < y.num_elements(); ++i) CopyElements(x, index(i), y, i);
  return OkStatus();
}

Status ShapeKernel(KernelContext& ctx) {
  const Shape& s = ctx.input(0).shape();
  for (int i = 0; i < s.rank(); ++i) ctx.output(0).SetInt(i, s[i]);
  return OkStatus();
}

// Output row o along the axis is the concatenation of every input's row o.
Status ConcatKernel(KernelContext& ctx) {
  Tensor& y = ctx.output(0);
  if (y.num_elements() == 0) return OkStatus();
  int64_t outer = DimsProduct(y.shape(), 0, AxisAttr(ctx, y.rank()));
  int64_t at = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (int k = 0; k < ctx.num_inputs(); ++k) {
      int64_t chunk = ctx.input(k).num_elements() / outer;
      CopyElements(ctx.input(k), o * chunk, y, at, chunk);
      at += chunk;
    }
  }
  return OkStatus();
}

Status SplitKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.num_elements() == 0) return OkStatus();
  int64_t outer = DimsProduct(x.shape(), 0, AxisAttr(ctx, x.rank()));
  int64_t at = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (int k = 0; k < ctx.num_outputs(); ++k) {
      int64_t chunk = ctx.output(k).num_elements() / outer;
      CopyElements(x, at, ctx.output(k), o * chunk, chunk);
      at += chunk;
    }
  }
  return OkStatus();
}

}  // namespace

namespace array_internal {
SourceFn TileSource(const Shape& x) {
  return [x](const Coords& c, const Coords& s) {
    int64_t j = 0;
    for (size_t d = 0; d < c.size(); ++d) j += (c[d] % x[d]) * s[d];
    return j;
  };
}
}  // namespace array_internal

void RegisterArrayKernels(KernelRegistry& r) {
  RegisterArrayLikeKernels(r);
  RegisterUniqueKernels(r);
  RegisterTextKernels(r);
  RegisterSequenceKernels(r);
  RegisterArrayElementsKernels(r);
  for (const char* op : {"Reshape", "Squeeze", "Unsqueeze", "Flatten"}) r.Register(op, CopyKernel);
  r.Register("Transpose", TransposeKernel);
  r.Register("Tile", TileKernel);
  r.Register("BroadcastTo", BroadcastToKernel);
  r.Register("Shape", ShapeKernel);
  r.Register("Concat", ConcatKernel);
  r.Register("Split", SplitKernel);
  r.Register("Slice", array_internal::SliceKernel);
  r.Register("Gather", array_internal::GatherKernel);
  r.Register("Pad", array_internal::PadKernel);
  r.Register("OneHot", array_internal::OneHotKernel);
  r.Register("Range", array_internal::RangeKernel);
  r.Register("NonZero", array_internal::NonZeroKernel);
  r.Register("TileGrad", array_internal::TileGradKernel);
  r.Register("SliceGrad", array_internal::SliceGradKernel);
  r.Register("PadGrad", array_internal::PadGradKernel);
  r.Register("GatherGrad", array_internal::GatherGradKernel);
  r.Register("ConcatGrad", SplitKernel);  // dy split into outputs shaped like the inputs
}

}  // namespace kiln::reference
