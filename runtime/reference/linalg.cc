// Reference kernels of op family "linalg" (see ir/ops/linalg.h for the semantics). Inference has
// already run on the concrete input shapes, so shapes and attributes are valid here.
#include <vector>

#include "runtime/reference/kernel.h"
#include "runtime/reference/loops.h"

namespace kiln::reference {
namespace {

Status MatMulKernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Tensor& y = ctx.output(0);
  bool ta = ctx.attrs().Find("transpose_a")->get<bool>() && a.rank() >= 2;
  bool tb = ctx.attrs().Find("transpose_b")->get<bool>() && b.rank() >= 2;
  // numpy's promotion of 1-D operands: a -> [1, K], b -> [K, 1]. The flat data is unchanged.
  std::vector<int64_t> da = a.shape().dims(), db = b.shape().dims();
  if (da.size() == 1) da.insert(da.begin(), 1);
  if (db.size() == 1) db.push_back(1);
  Shape batch_a(std::vector<int64_t>(da.begin(), da.end() - 2));
  Shape batch_b(std::vector<int64_t>(db.begin(), db.end() - 2));
  KILN_ASSIGN_OR_RETURN(Shape batch, BroadcastShapes(batch_a, batch_b));
  // Stored (untransposed) matrix dims, then the dims of op(A) [m, k] and op(B) [k, n].
  int64_t a_rows = da[da.size() - 2], a_cols = da.back();
  int64_t b_rows = db[db.size() - 2], b_cols = db.back();
  int64_t m = ta ? a_cols : a_rows, k = ta ? a_rows : a_cols, n = tb ? b_rows : b_cols;
  auto a_index = [&](int64_t base, int64_t i, int64_t p) {
    return base + (ta ? p * a_cols + i : i * a_cols + p);
  };
  auto b_index = [&](int64_t base, int64_t p, int64_t j) {
    return base + (tb ? j * b_cols + p : p * b_cols + j);
  };
  BroadcastIndex batch_index_a(batch, batch_a), batch_index_b(batch, batch_b);
  bool integral = !IsFloat(a.dtype());
  int64_t batches = batch.NumElements();
  for (int64_t t = 0; t < batches; ++t) {
    int64_t base_a = batch_index_a(t) * a_rows * a_cols;
    int64_t base_b = batch_index_b(t) * b_rows * b_cols;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        int64_t out = (t * m + i) * n + j;
        if (integral) {
          uint64_t acc = 0;  // unsigned: wraps instead of overflowing
          for (int64_t p = 0; p < k; ++p)
            acc += uint64_t(a.GetInt(a_index(base_a, i, p))) *
                   uint64_t(b.GetInt(b_index(base_b, p, j)));
          y.SetInt(out, static_cast<int64_t>(acc));
        } else {
          double acc = 0;
          for (int64_t p = 0; p < k; ++p)
            acc += a.GetDouble(a_index(base_a, i, p)) * b.GetDouble(b_index(base_b, p, j));
          y.SetDouble(out, acc);
        }
      }
    }
  }
  return OkStatus();
}

Status BiasAddKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& bias = ctx.input(1);
  Tensor& y = ctx.output(0);
  KILN_ASSIGN_OR_RETURN(int axis,
                        NormalizeAxis(ctx.attrs().Find("axis")->get<int64_t>(), x.rank()));
  int64_t channels = x.shape()[axis];
  int64_t inner = 1;  // elements per step along `axis`
  for (int i = axis + 1; i < x.rank(); ++i) inner *= x.shape()[i];
  for (int64_t i = 0; i < x.num_elements(); ++i)
    y.SetDouble(i, x.GetDouble(i) + bias.GetDouble((i / inner) % channels));
  return OkStatus();
}

// An int-list attribute; empty means `n` copies of `fill` (as in inference).
std::vector<int64_t> IntsOr(const KernelContext& ctx, const char* name, size_t n, int64_t fill) {
  std::vector<int64_t> v = ctx.attrs().Find(name)->get<std::vector<int64_t>>();
  if (v.empty()) v.assign(n, fill);
  return v;
}

// A Conv2D's sizes and attributes, from its input x, filter w and output y shapes.
struct ConvGeometry {
  int64_t batch, c_in, h_in, w_in;                // x
  int64_t c_out, c_group, kh, kw;                 // w
  int64_t h_out, w_out;                           // y
  std::vector<int64_t> strides, pads, dilations;  // pads: top, left, bottom, right
  int64_t groups;
};

ConvGeometry ReadConvGeometry(const KernelContext& ctx, const Shape& x, const Shape& w,
                              const Shape& y) {
  return ConvGeometry{x[0],
                      x[1],
                      x[2],
                      x[3],
                      w[0],
                      w[1],
                      w[2],
                      w[3],
                      y[2],
                      y[3],
                      IntsOr(ctx, "strides", 2, 1),
                      IntsOr(ctx, "pads", 4, 0),
                      IntsOr(ctx, "dilations", 2, 1),
                      ctx.attrs().Find("groups")->get<int64_t>()};
}

// Calls f(xi, wi, yi) for every product x[xi] * w[wi] that Conv2D adds into y[yi] (flat row-major
// indices), in the forward order: per output element, by input channel, kernel row, kernel column.
// The backward passes are the same loop with the roles of the three tensors swapped.
template <typename F>
void ForEachConvTap(const ConvGeometry& g, F f) {
  int64_t out_per_group = g.c_out / g.groups;
  // Input coordinate read by output coordinate `o` at kernel tap `t` (128-bit: attributes may be
  // huge; a result outside [0, size) is padding).
  auto in_pos = [](int64_t o, int64_t t, int64_t stride, int64_t pad, int64_t dilation) {
    return static_cast<__int128>(o) * stride - pad + static_cast<__int128>(t) * dilation;
  };
  for (int64_t nb = 0; nb < g.batch; ++nb) {
    for (int64_t oc = 0; oc < g.c_out; ++oc) {
      int64_t first_in_channel = (oc / out_per_group) * g.c_group;
      for (int64_t oh = 0; oh < g.h_out; ++oh) {
        for (int64_t ow = 0; ow < g.w_out; ++ow) {
          int64_t yi = ((nb * g.c_out + oc) * g.h_out + oh) * g.w_out + ow;
          for (int64_t c = 0; c < g.c_group; ++c) {
            for (int64_t i = 0; i < g.kh; ++i) {
              __int128 ih = in_pos(oh, i, g.strides[0], g.pads[0], g.dilations[0]);
              if (ih < 0 || ih >= g.h_in) continue;
              for (int64_t j = 0; j < g.kw; ++j) {
                __int128 iw = in_pos(ow, j, g.strides[1], g.pads[1], g.dilations[1]);
                if (iw < 0 || iw >= g.w_in) continue;
                int64_t xi =
                    ((nb * g.c_in + first_in_channel + c) * g.h_in + int64_t(ih)) * g.w_in +
                    int64_t(iw);
                int64_t wi = ((oc * g.c_group + c) * g.kh + i) * g.kw + j;
                f(xi, wi, yi);
              }
            }
          }
        }
      }
    }
  }
}

// Writes sums accumulated in double into `out`.
void Store(const std::vector<double>& sums, Tensor& out) {
  for (int64_t i = 0; i < out.num_elements(); ++i) out.SetDouble(i, sums[i]);
}

Status Conv2DKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  Tensor& y = ctx.output(0);
  std::vector<double> sums(y.num_elements(), 0.0);
  ForEachConvTap(
      ReadConvGeometry(ctx, x.shape(), w.shape(), y.shape()),
      [&](int64_t xi, int64_t wi, int64_t yi) { sums[yi] += x.GetDouble(xi) * w.GetDouble(wi); });
  Store(sums, y);
  return OkStatus();
}

// dx[xi] = sum of dy[yi] * w[wi] over the taps where Conv2D read x[xi].
Status Conv2DBackpropInputKernel(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  const Tensor& w = ctx.input(1);
  Tensor& dx = ctx.output(0);  // shaped like x_like
  std::vector<double> sums(dx.num_elements(), 0.0);
  ForEachConvTap(
      ReadConvGeometry(ctx, dx.shape(), w.shape(), dy.shape()),
      [&](int64_t xi, int64_t wi, int64_t yi) { sums[xi] += dy.GetDouble(yi) * w.GetDouble(wi); });
  Store(sums, dx);
  return OkStatus();
}

// dw[wi] = sum of x[xi] * dy[yi] over the taps where Conv2D used w[wi].
Status Conv2DBackpropFilterKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& dy = ctx.input(1);
  Tensor& dw = ctx.output(0);  // shaped like w_like
  std::vector<double> sums(dw.num_elements(), 0.0);
  ForEachConvTap(
      ReadConvGeometry(ctx, x.shape(), dw.shape(), dy.shape()),
      [&](int64_t xi, int64_t wi, int64_t yi) { sums[wi] += x.GetDouble(xi) * dy.GetDouble(yi); });
  Store(sums, dw);
  return OkStatus();
}

}  // namespace

void RegisterLinalgKernels(KernelRegistry& r) {
  r.Register("MatMul", MatMulKernel);
  r.Register("BiasAdd", BiasAddKernel);
  r.Register("Conv2D", Conv2DKernel);
  r.Register("Conv2DBackpropInput", Conv2DBackpropInputKernel);
  r.Register("Conv2DBackpropFilter", Conv2DBackpropFilterKernel);
  RegisterDeterminantKernels(r);
}

}  // namespace kiln::reference
