// The reference kernel of MaxPoolWithArgmax (ir/ops/max_pool_with_argmax.h): every window visits
// only its positions inside x, so the work is the windows' real elements, whatever the padding
// and dilations.
#include "ir/ops/max_pool_with_argmax.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "runtime/reference/kernel.h"

namespace kiln::reference {
namespace {

const std::vector<int64_t>& Ints(const KernelContext& ctx, const char* name) {
  return ctx.attrs().Find(name)->get<std::vector<int64_t>>();
}

// An attribute list of `n` values, or `n` times `fill` when empty (inference checked the rest).
std::vector<int64_t> OrFilled(const std::vector<int64_t>& v, size_t n, int64_t fill) {
  return v.empty() ? std::vector<int64_t>(n, fill) : v;
}

// Along one spatial axis: the window's first position in x coordinates and the range [first,
// last) of kernel offsets that land inside x (empty when none does).
struct AxisWindow {
  int64_t start, first, last;
};

AxisWindow Clip(int64_t start, int64_t in, int64_t kernel, int64_t dilation) {
  AxisWindow w{start, 0, 0};
  if (start < 0) w.first = (-start + dilation - 1) / dilation;
  if (in - 1 - start >= 0) w.last = std::min(kernel, (in - 1 - start) / dilation + 1);
  return w;
}

Status MaxPoolWithArgmaxKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  int64_t* argmax = ctx.output(1).data<int64_t>();
  const Shape& xs = x.shape();
  const Shape& ys = y.shape();
  const size_t k = static_cast<size_t>(xs.rank() - 2);
  const std::vector<int64_t>& kernel = Ints(ctx, "kernel");
  const std::vector<int64_t> strides = OrFilled(Ints(ctx, "strides"), k, 1);
  const std::vector<int64_t> dilations = OrFilled(Ints(ctx, "dilations"), k, 1);
  const std::vector<int64_t> pads = OrFilled(Ints(ctx, "pads"), 2 * k, 0);
  // Row-major strides of x's spatial dims, the sizes of one plane of x and of y.
  std::vector<int64_t> in(k), out(k), row_stride(k, 1);
  for (size_t i = 0; i < k; ++i) {
    in[i] = xs[static_cast<int>(2 + i)];
    out[i] = ys[static_cast<int>(2 + i)];
  }
  for (size_t i = k - 1; i > 0; --i) row_stride[i - 1] = row_stride[i] * in[i];
  const int64_t x_plane = row_stride[0] * in[0];
  int64_t y_plane = 1;
  for (int64_t o : out) y_plane *= o;
  const int64_t planes = xs[0] * xs[1];
  if (planes == 0 || y_plane == 0) return OkStatus();
  const std::vector<double> values = x.ToDoubles();
  std::vector<int64_t> o(k, 0), j(k, 0);
  std::vector<AxisWindow> window(k);
  for (int64_t at = 0; at < y_plane; ++at) {  // `o` is the output position of `at`
    bool empty = false;
    for (size_t i = 0; i < k; ++i) {
      window[i] = Clip(o[i] * strides[i] - pads[i], in[i], kernel[i], dilations[i]);
      empty = empty || window[i].first >= window[i].last;
    }
    for (int64_t plane = 0; plane < planes; ++plane) {
      int64_t best = -1;
      double max = -std::numeric_limits<double>::infinity();
      if (!empty) {
        for (size_t i = 0; i < k; ++i) j[i] = window[i].first;
        while (true) {
          int64_t flat = plane * x_plane;
          for (size_t i = 0; i < k; ++i)
            flat += (window[i].start + j[i] * dilations[i]) * row_stride[i];
          const double v = values[static_cast<size_t>(flat)];
          if (best < 0 || v > max || (std::isnan(v) && !std::isnan(max))) {
            best = flat;
            max = v;
          }
          size_t i = k;
          while (i > 0 && ++j[i - 1] == window[i - 1].last) {
            j[i - 1] = window[i - 1].first;
            --i;
          }
          if (i == 0) break;
        }
      }
      y.SetDouble(plane * y_plane + at, max);
      argmax[plane * y_plane + at] = best;
    }
    for (size_t i = k; i > 0 && ++o[i - 1] == out[i - 1]; --i) o[i - 1] = 0;
  }
  return OkStatus();
}

}  // namespace

void RegisterMaxPoolWithArgmaxKernels(KernelRegistry& r) {
  r.Register("MaxPoolWithArgmax", MaxPoolWithArgmaxKernel);
}

}  // namespace kiln::reference
