// Reference kernels of op family "nn" (see ir/ops/nn.h for the semantics). Inference has already
// validated every attribute and shape; the kernels only check values (labels).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ir/random.h"
#include "runtime/reference/kernel.h"

namespace kiln::reference {
namespace {

const std::vector<int64_t>& Ints(const KernelContext& ctx, const char* name) {
  return ctx.attrs().Find(name)->get<std::vector<int64_t>>();
}
double Float(const KernelContext& ctx, const char* name) {
  return ctx.attrs().Find(name)->get<double>();
}
bool Bool(const KernelContext& ctx, const char* name) {
  return ctx.attrs().Find(name)->get<bool>();
}

// Product of dims [begin, end) of a fully known shape.
int64_t Product(const Shape& s, int begin, int end) {
  int64_t n = 1;
  for (int i = begin; i < end; ++i) n *= s[i];
  return n;
}

// The normalized `axis` attribute (inference has checked it).
int Axis(const KernelContext& ctx) {
  int64_t axis = ctx.attrs().Find("axis")->get<int64_t>();
  return static_cast<int>(axis < 0 ? axis + ctx.input(0).rank() : axis);
}

// Pooling geometry from the attributes (validated by inference), the input shape [N, C, H, W] and
// the pooled shape [N, C, OH, OW].
struct PoolGeometry {
  std::vector<int64_t> k, s, p;  // kernel, strides, pads [top, left, bottom, right]
  int64_t planes, H, W, OH, OW;
};

PoolGeometry Geometry(const KernelContext& ctx, const Shape& x, const Shape& pooled) {
  PoolGeometry g{Ints(ctx, "kernel"),
                 Ints(ctx, "strides"),
                 Ints(ctx, "pads"),
                 x[0] * x[1],
                 x[2],
                 x[3],
                 pooled[2],
                 pooled[3]};
  if (g.s.empty()) g.s = g.k;
  if (g.p.empty()) g.p = {0, 0, 0, 0};
  return g;
}

// One window: its output index, its bounds clipped to the input, and the number of its positions
// inside the padded input (the count_include_pad divisor).
struct Window {
  int64_t out, h_begin, h_end, w_begin, w_end, padded;
  int64_t count() const { return (h_end - h_begin) * (w_end - w_begin); }
};

// Calls fn(plane, window) for every window, in output order.
template <typename Fn>
void ForEachWindow(const PoolGeometry& g, Fn fn) {
  for (int64_t plane = 0; plane < g.planes; ++plane) {
    for (int64_t oh = 0; oh < g.OH; ++oh) {
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        const int64_t h0 = oh * g.s[0] - g.p[0], w0 = ow * g.s[1] - g.p[1];
        Window win{(plane * g.OH + oh) * g.OW + ow,
                   std::max<int64_t>(h0, 0),
                   std::min(h0 + g.k[0], g.H),
                   std::max<int64_t>(w0, 0),
                   std::min(w0 + g.k[1], g.W),
                   (std::min(h0 + g.k[0], g.H + g.p[2]) - h0) *
                       (std::min(w0 + g.k[1], g.W + g.p[3]) - w0)};
        fn(plane, win);
      }
    }
  }
}

// The flat index of the first largest element of a window of plane `plane` of x (a NaN counts as
// the largest, as in the forward pass where it propagates). Windows always hold a real element.
int64_t ArgMaxOfWindow(const Tensor& x, const PoolGeometry& g, int64_t plane, const Window& win) {
  int64_t best = -1;
  double max = 0;
  for (int64_t h = win.h_begin; h < win.h_end; ++h) {
    for (int64_t w = win.w_begin; w < win.w_end; ++w) {
      const int64_t i = (plane * g.H + h) * g.W + w;
      const double v = x.GetDouble(i);
      if (best < 0 || v > max || (std::isnan(v) && !std::isnan(max))) {
        best = i;
        max = v;
      }
    }
  }
  return best;
}

Status Pool2DKernel(KernelContext& ctx, bool is_max) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const PoolGeometry g = Geometry(ctx, x.shape(), y.shape());
  const bool include_pad = !is_max && Bool(ctx, "count_include_pad");
  ForEachWindow(g, [&](int64_t plane, const Window& win) {
    if (is_max) {
      y.SetDouble(win.out, x.GetDouble(ArgMaxOfWindow(x, g, plane, win)));
      return;
    }
    double sum = 0;
    for (int64_t h = win.h_begin; h < win.h_end; ++h)
      for (int64_t w = win.w_begin; w < win.w_end; ++w)
        sum += x.GetDouble((plane * g.H + h) * g.W + w);
    y.SetDouble(win.out, sum / static_cast<double>(include_pad ? win.padded : win.count()));
  });
  return OkStatus();
}

// MaxPool2DGrad(x, dy): each window's dy goes to the window's first largest element.
Status MaxPool2DGradKernel(KernelContext& ctx) {
  const Tensor &x = ctx.input(0), &dy = ctx.input(1);
  const PoolGeometry g = Geometry(ctx, x.shape(), dy.shape());
  std::vector<double> dx(static_cast<size_t>(x.num_elements()), 0.0);
  ForEachWindow(g, [&](int64_t plane, const Window& win) {
    dx[static_cast<size_t>(ArgMaxOfWindow(x, g, plane, win))] += dy.GetDouble(win.out);
  });
  for (size_t i = 0; i < dx.size(); ++i) ctx.output(0).SetDouble(static_cast<int64_t>(i), dx[i]);
  return OkStatus();
}

// AvgPool2DGrad(dy, x_like): each window's dy / divisor goes to the window's real elements.
Status AvgPool2DGradKernel(KernelContext& ctx) {
  const Tensor &dy = ctx.input(0), &x = ctx.input(1);
  const PoolGeometry g = Geometry(ctx, x.shape(), dy.shape());
  const bool include_pad = Bool(ctx, "count_include_pad");
  std::vector<double> dx(static_cast<size_t>(x.num_elements()), 0.0);
  ForEachWindow(g, [&](int64_t plane, const Window& win) {
    const double share =
        dy.GetDouble(win.out) / static_cast<double>(include_pad ? win.padded : win.count());
    for (int64_t h = win.h_begin; h < win.h_end; ++h)
      for (int64_t w = win.w_begin; w < win.w_end; ++w)
        dx[static_cast<size_t>((plane * g.H + h) * g.W + w)] += share;
  });
  for (size_t i = 0; i < dx.size(); ++i) ctx.output(0).SetDouble(static_cast<int64_t>(i), dx[i]);
  return OkStatus();
}

Status GlobalAvgPoolKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  int64_t inner = Product(x.shape(), 2, x.rank());
  for (int64_t i = 0; i < y.num_elements(); ++i) {
    double sum = 0;
    for (int64_t j = 0; j < inner; ++j) sum += x.GetDouble(i * inner + j);
    y.SetDouble(i, sum / static_cast<double>(inner));
  }
  return OkStatus();
}

Status BatchNormKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor &scale = ctx.input(1), &bias = ctx.input(2);
  const double eps = Float(ctx, "epsilon");
  const bool training = Bool(ctx, "training");
  const int64_t N = x.shape()[0], C = x.shape()[1], inner = Product(x.shape(), 2, x.rank());
  auto at = [&](int64_t n, int64_t c, int64_t i) { return (n * C + c) * inner + i; };
  std::vector<double> mean(C), var(C);
  for (int64_t c = 0; c < C; ++c) {
    if (!training) {
      mean[c] = ctx.input(3).GetDouble(c);
      var[c] = ctx.input(4).GetDouble(c);
      continue;
    }
    const double count = static_cast<double>(N * inner);
    double sum = 0, sq = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < inner; ++i) sum += x.GetDouble(at(n, c, i));
    mean[c] = sum / count;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < inner; ++i) sq += std::pow(x.GetDouble(at(n, c, i)) - mean[c], 2);
    var[c] = sq / count;  // biased
  }
  for (int64_t c = 0; c < C; ++c) {
    double mul = scale.GetDouble(c) / std::sqrt(var[c] + eps);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < inner; ++i)
        ctx.output(0).SetDouble(at(n, c, i),
                                (x.GetDouble(at(n, c, i)) - mean[c]) * mul + bias.GetDouble(c));
    ctx.output(1).SetDouble(c, mean[c]);
    ctx.output(2).SetDouble(c, var[c]);
  }
  return OkStatus();
}

Status BatchNormGradKernel(KernelContext& ctx) {
  const Tensor &dy = ctx.input(0), &x = ctx.input(1), &scale = ctx.input(2);
  const double eps = Float(ctx, "epsilon");
  const int64_t N = x.shape()[0], C = x.shape()[1], inner = Product(x.shape(), 2, x.rank());
  const double count = static_cast<double>(N * inner);
  auto at = [&](int64_t n, int64_t c, int64_t i) { return (n * C + c) * inner + i; };
  for (int64_t c = 0; c < C; ++c) {
    const double mean = ctx.input(3).GetDouble(c);
    const double rstd = 1.0 / std::sqrt(ctx.input(4).GetDouble(c) + eps);
    double dbias = 0, dscale = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < inner; ++i) {
        const double g = dy.GetDouble(at(n, c, i));
        dbias += g;
        dscale += g * (x.GetDouble(at(n, c, i)) - mean) * rstd;
      }
    const double mul = scale.GetDouble(c) * rstd;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < inner; ++i) {
        const double xhat = (x.GetDouble(at(n, c, i)) - mean) * rstd;
        ctx.output(0).SetDouble(
            at(n, c, i), mul * (dy.GetDouble(at(n, c, i)) - (dbias + xhat * dscale) / count));
      }
    ctx.output(1).SetDouble(c, dscale);
    ctx.output(2).SetDouble(c, dbias);
  }
  return OkStatus();
}

Status LayerNormKernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor &scale = ctx.input(1), &bias = ctx.input(2);
  const double eps = Float(ctx, "epsilon");
  const int axis = Axis(ctx);
  const int64_t outer = Product(x.shape(), 0, axis), inner = Product(x.shape(), axis, x.rank());
  for (int64_t o = 0; o < outer; ++o) {
    double sum = 0, sq = 0;
    for (int64_t j = 0; j < inner; ++j) sum += x.GetDouble(o * inner + j);
    const double mean = sum / static_cast<double>(inner);
    for (int64_t j = 0; j < inner; ++j) sq += std::pow(x.GetDouble(o * inner + j) - mean, 2);
    const double rstd = 1.0 / std::sqrt(sq / static_cast<double>(inner) + eps);
    for (int64_t j = 0; j < inner; ++j)
      ctx.output(0).SetDouble(
          o * inner + j,
          (x.GetDouble(o * inner + j) - mean) * rstd * scale.GetDouble(j) + bias.GetDouble(j));
  }
  return OkStatus();
}

Status SoftmaxKernel(KernelContext& ctx, bool log) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const int axis = Axis(ctx);
  const int64_t outer = Product(x.shape(), 0, axis), n = x.shape()[axis];
  const int64_t inner = Product(x.shape(), axis + 1, x.rank());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t j) { return (o * n + j) * inner + i; };
      double max = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < n; ++j) max = std::max(max, x.GetDouble(at(j)));
      double sum = 0;
      for (int64_t j = 0; j < n; ++j) sum += std::exp(x.GetDouble(at(j)) - max);
      for (int64_t j = 0; j < n; ++j) {
        double shifted = x.GetDouble(at(j)) - max;
        y.SetDouble(at(j), log ? shifted - std::log(sum) : std::exp(shifted) / sum);
      }
    }
  }
  return OkStatus();
}

// Row n of SoftmaxCrossEntropy's logits [N, C]: its label (checked against C), the row's max and
// the sum of exp(x - max) over the row.
struct CrossEntropyRow {
  int64_t label = 0;
  double max = 0, sum = 0;
};

Status ReadCrossEntropyRow(const KernelContext& ctx, int64_t n, CrossEntropyRow& row) {
  const Tensor &logits = ctx.input(0), &labels = ctx.input(1);
  const int64_t C = logits.shape()[1];
  row.label = labels.GetInt(n);
  if (row.label < 0 || row.label >= C)
    return ctx.Fail("label ", row.label, " at index ", n, " is out of range [0, ", C, ")");
  row.max = -std::numeric_limits<double>::infinity();
  for (int64_t c = 0; c < C; ++c) row.max = std::max(row.max, logits.GetDouble(n * C + c));
  row.sum = 0;
  for (int64_t c = 0; c < C; ++c) row.sum += std::exp(logits.GetDouble(n * C + c) - row.max);
  return OkStatus();
}

Status SoftmaxCrossEntropyKernel(KernelContext& ctx) {
  const Tensor& logits = ctx.input(0);
  const int64_t N = logits.shape()[0], C = logits.shape()[1];
  const auto* reduction = ctx.attrs().Find("reduction");
  const bool per_row = reduction && reduction->get<std::string>() == "none";
  double total = 0;
  for (int64_t n = 0; n < N; ++n) {
    CrossEntropyRow row;
    KILN_RETURN_IF_ERROR(ReadCrossEntropyRow(ctx, n, row));
    const double loss = row.max + std::log(row.sum) - logits.GetDouble(n * C + row.label);
    if (per_row) ctx.output(0).SetDouble(n, loss);
    total += loss;
  }
  if (!per_row) ctx.output(0).SetDouble(0, total / static_cast<double>(N));  // N = 0: NaN
  return OkStatus();
}

Status SoftmaxCrossEntropyGradKernel(KernelContext& ctx) {
  const Tensor& logits = ctx.input(0);
  const Tensor& dloss = ctx.input(2);
  const int64_t N = logits.shape()[0], C = logits.shape()[1];
  const bool per_row = dloss.shape().rank() == 1;
  if (per_row && dloss.shape()[0] != N)
    return ctx.Fail("dloss has shape ", dloss.shape().ToString(), ", expected [", N,
                    "] (one per row of the logits)");
  for (int64_t n = 0; n < N; ++n) {
    CrossEntropyRow row;
    KILN_RETURN_IF_ERROR(ReadCrossEntropyRow(ctx, n, row));
    const double scale = per_row ? dloss.GetDouble(n) : dloss.GetDouble(0) / static_cast<double>(N);
    for (int64_t c = 0; c < C; ++c) {
      const double p = std::exp(logits.GetDouble(n * C + c) - row.max) / row.sum;
      ctx.output(0).SetDouble(n * C + c, (p - (c == row.label ? 1.0 : 0.0)) * scale);
    }
  }
  return OkStatus();
}

Status DropoutKernel(KernelContext& ctx) {
  if (ctx.state().counters == nullptr)
    return ctx.node().MakeNodeError(ErrorCode::kInternal, "Dropout ran without a counter store");
  uint64_t& c = (*ctx.state().counters)[ctx.node().name];
  const uint64_t counter = c++;
  const double rate = Float(ctx, "rate");
  const bool drop = Bool(ctx, "training") && rate > 0;
  const uint64_t seed = static_cast<uint64_t>(ctx.attrs().Find("seed")->get<int64_t>());
  const Tensor& x = ctx.input(0);
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    bool keep = !drop || RandomUniform(seed, counter, static_cast<uint64_t>(i)) >= rate;
    double v = x.GetDouble(i);
    ctx.output(0).SetDouble(i, !drop ? v : keep ? v / (1.0 - rate) : 0.0);
    ctx.output(1).SetInt(i, keep ? 1 : 0);
  }
  return OkStatus();
}

}  // namespace

void RegisterNnKernels(KernelRegistry& r) {
  r.Register("MaxPool2D", [](KernelContext& ctx) { return Pool2DKernel(ctx, /*is_max=*/true); });
  r.Register("AvgPool2D", [](KernelContext& ctx) { return Pool2DKernel(ctx, /*is_max=*/false); });
  r.Register("MaxPool2DGrad", MaxPool2DGradKernel);
  r.Register("AvgPool2DGrad", AvgPool2DGradKernel);
  r.Register("GlobalAvgPool", GlobalAvgPoolKernel);
  r.Register("BatchNorm", BatchNormKernel);
  r.Register("BatchNormGrad", BatchNormGradKernel);
  r.Register("LayerNorm", LayerNormKernel);
  r.Register("Softmax", [](KernelContext& ctx) { return SoftmaxKernel(ctx, /*log=*/false); });
  r.Register("LogSoftmax", [](KernelContext& ctx) { return SoftmaxKernel(ctx, /*log=*/true); });
  r.Register("SoftmaxCrossEntropy", SoftmaxCrossEntropyKernel);
  r.Register("SoftmaxCrossEntropyGrad", SoftmaxCrossEntropyGradKernel);
  r.Register("Dropout", DropoutKernel);
  RegisterDetectionKernels(r);
  RegisterMaxPoolWithArgmaxKernels(r);
}

}  // namespace kiln::reference
