#include "runtime/reference/loops.h"

namespace kiln::reference {

BroadcastIndex::BroadcastIndex(const Shape& out, const Shape& in) : out_dims_(out.dims()) {
  identity_ = out == in;
  int offset = out.rank() - in.rank();
  std::vector<int64_t> strides = RowMajorStrides(in);
  in_strides_.assign(out.rank(), 0);
  for (int i = 0; i < in.rank(); ++i) in_strides_[offset + i] = in[i] == 1 ? 0 : strides[i];
}

int64_t BroadcastIndex::operator()(int64_t out_flat) const {
  if (identity_) return out_flat;
  int64_t in_flat = 0;
  for (int i = static_cast<int>(out_dims_.size()) - 1; i >= 0; --i) {
    int64_t d = out_dims_[i];
    in_flat += (out_flat % d) * in_strides_[i];
    out_flat /= d;
  }
  return in_flat;
}

std::vector<int64_t> Unravel(int64_t flat, const Shape& shape) {
  std::vector<int64_t> idx(shape.rank());
  for (int i = shape.rank() - 1; i >= 0; --i) {
    idx[i] = flat % shape[i];
    flat /= shape[i];
  }
  return idx;
}

Status MapUnary(KernelContext& ctx, const UnaryFloatFn& ff, const UnaryIntFn& fi) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  bool integral = !IsFloat(x.dtype());
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    if (integral && fi)
      y.SetInt(i, fi(x.GetInt(i)));
    else
      y.SetDouble(i, ff(x.GetDouble(i)));
  }
  return OkStatus();
}

Status MapBinary(KernelContext& ctx, const BinaryFloatFn& ff, const BinaryIntFn& fi) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Tensor& y = ctx.output(0);
  BroadcastIndex ia(y.shape(), a.shape()), ib(y.shape(), b.shape());
  bool integral = !IsFloat(a.dtype());
  for (int64_t i = 0; i < y.num_elements(); ++i) {
    if (integral)
      y.SetInt(i, fi(a.GetInt(ia(i)), b.GetInt(ib(i))));
    else
      y.SetDouble(i, ff(a.GetDouble(ia(i)), b.GetDouble(ib(i))));
  }
  return OkStatus();
}

}  // namespace kiln::reference
