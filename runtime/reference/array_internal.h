// Internal to the "array" reference kernels (runtime/reference/array.cc registers them all; the
// selecting ones are defined in array_index.cc): element copies that work on raw bytes, so that
// every dtype moves without conversion. Not part of the public API.
#pragma once

#include <cstring>
#include <functional>
#include <vector>

#include "ir/shape.h"
#include "ir/tensor.h"
#include "runtime/reference/kernel.h"
#include "runtime/reference/loops.h"

namespace kiln::reference::array_internal {

// Copies `count` elements of `src` starting at element `src_at` to `dst` at `dst_at` (same dtype).
inline void CopyElements(const Tensor& src, int64_t src_at, Tensor& dst, int64_t dst_at,
                         int64_t count = 1) {
  if (count <= 0) return;
  int64_t size = DTypeSize(src.dtype());
  std::memcpy(static_cast<uint8_t*>(dst.raw_data()) + dst_at * size,
              static_cast<const uint8_t*>(src.raw_data()) + src_at * size, count * size);
}

// Product of the dims [begin, end) of a shape whose tensor is not empty.
inline int64_t DimsProduct(const Shape& s, int begin, int end) {
  int64_t n = 1;
  for (int i = begin; i < end; ++i) n *= s[i];
  return n;
}

// For each element of `y`, copies the element of `x` at the flat index
// source(coordinates in y, row-major strides of x), or leaves it when that index is -1.
// Does nothing when `x` or `y` is empty.
template <typename SourceFn>
void CopyFromSource(const Tensor& x, Tensor& y, SourceFn source) {
  if (x.num_elements() == 0 || y.num_elements() == 0) return;
  std::vector<int64_t> strides = RowMajorStrides(x.shape());
  std::vector<int64_t> at(y.shape().rank(), 0);  // the coordinates of element i of y
  for (int64_t i = 0; i < y.num_elements(); ++i) {
    int64_t j = source(at, strides);
    if (j >= 0) CopyElements(x, j, y, i);
    for (int d = y.shape().rank() - 1; d >= 0 && ++at[d] == y.shape()[d]; --d) at[d] = 0;
  }
}

using Coords = std::vector<int64_t>;
// Where an element of a forward op's output comes from: the flat index in x of the element that
// the op copies to output coordinates `c`, given x's row-major strides `s`; -1 for none (constant
// padding). Shared by a forward kernel (CopyFromSource) and its backward kernel (AddToSource).
using SourceFn = std::function<int64_t(const Coords& c, const Coords& s)>;
SourceFn TileSource(const Shape& x);                                 // array.cc
Result<SourceFn> SliceSource(const AttrMap& attrs, const Shape& x);  // array_index.cc
SourceFn PadSource(const AttrMap& attrs, const Shape& x);            // array_index.cc

// The adjoint of CopyFromSource: for each element of `dy`, adds it (in double) to the element of
// `dx` at source(coordinates in dy, row-major strides of dx), or drops it when that is -1. `dx`
// holds zeros (or partial sums) already.
void AddToSource(const Tensor& dy, Tensor& dx, const SourceFn& source);

// Fails naming the first of Gather's `indices` outside [-n, n), n = data dim `axis`.
Status CheckGatherIndices(const KernelContext& ctx, const Tensor& indices, const Shape& data,
                          int axis);

// Kernels defined in array_index.cc.
Status SliceKernel(KernelContext& ctx);
Status GatherKernel(KernelContext& ctx);
Status PadKernel(KernelContext& ctx);
Status OneHotKernel(KernelContext& ctx);
Status RangeKernel(KernelContext& ctx);
Status NonZeroKernel(KernelContext& ctx);
// Backward kernels, defined in array_grad.cc (ConcatGrad is Split's kernel).
Status TileGradKernel(KernelContext& ctx);
Status SliceGradKernel(KernelContext& ctx);
Status PadGradKernel(KernelContext& ctx);
Status GatherGradKernel(KernelContext& ctx);

}  // namespace kiln::reference::array_internal
