// Loop helpers for reference kernels: broadcast index mapping and elementwise maps computed in
// double (floats) or int64 (integers and bool), so that each kernel states only its scalar math.
#pragma once

#include <functional>
#include <vector>

#include "ir/shape.h"
#include "runtime/reference/kernel.h"

namespace kiln::reference {

// Maps a flat row-major index of `out` to the flat index of an input broadcast to `out`.
class BroadcastIndex {
 public:
  BroadcastIndex(const Shape& out, const Shape& in);
  int64_t operator()(int64_t out_flat) const;

 private:
  std::vector<int64_t> out_dims_;
  std::vector<int64_t> in_strides_;  // 0 where the input is broadcast
  bool identity_ = false;
};

// Splits a flat index of a fully known shape into its coordinates.
std::vector<int64_t> Unravel(int64_t flat, const Shape& shape);

using UnaryFloatFn = std::function<double(double)>;
using UnaryIntFn = std::function<int64_t(int64_t)>;
using BinaryFloatFn = std::function<double(double, double)>;
using BinaryIntFn = std::function<int64_t(int64_t, int64_t)>;

// output(0)[i] = f(input(0)[i]); integer (and bool) dtypes use `fi` when given.
Status MapUnary(KernelContext& ctx, const UnaryFloatFn& ff, const UnaryIntFn& fi = nullptr);
// output(0)[i] = f(a[i'], b[i'']) with broadcasting; the compute type follows the inputs' dtype.
Status MapBinary(KernelContext& ctx, const BinaryFloatFn& ff, const BinaryIntFn& fi);

}  // namespace kiln::reference
