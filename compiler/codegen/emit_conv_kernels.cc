// Conv2D and its two backward convolutions as generated kernels (emit_library_kernels.h).
#include <string>
#include <vector>

#include "compiler/codegen/emit_library_kernels.h"
#include "compiler/codegen/kernel_writer.h"

namespace kiln::compiler {

using internal::Flat;
using internal::KernelWriter;
using internal::ScalarWriter;

std::string EmitConv2DKernel(const std::string& name, const Conv2DKernelParams& p) {
  KernelWriter k(name);
  ScalarWriter& w = k.w();
  const int64_t n = p.x[0], c = p.x[1], h = p.x[2], wd = p.x[3];
  const int64_t yn = p.y[0], kout = p.y[1], oh = p.y[2], ow = p.y[3];
  const int64_t kh = p.window[0], kw = p.window[1];
  const int64_t cg = c / p.groups, kg = kout / p.groups;
  const std::string xt = Flat(n * c * h * wd, p.dtype), wt = Flat(kout * cg * kh * kw, p.dtype);
  const std::string yt = Flat(yn * kout * oh * ow, p.dtype), bt = Flat(kout, p.dtype);
  const std::string x = k.Input(xt), wts = k.Input(wt);
  const std::string bias = p.bias ? k.Input(bt) : "";
  const std::string residual = p.residual ? k.Input(yt) : "";
  const std::string y = k.Output(yt);

  const std::string i = k.ElementLoop();
  const std::vector<std::string> at = k.Split(i, {yn, kout, oh, ow});
  const std::string first_channel = k.Mul(k.Int("divui", at[1], k.Index(kg)), k.Index(cg));
  const std::string h0 = k.Int("subi", k.Mul(at[2], k.Index(p.strides[0])), k.Index(p.pads[0]));
  const std::string w0 = k.Int("subi", k.Mul(at[3], k.Index(p.strides[1])), k.Index(p.pads[1]));
  const std::string x_planes = k.Add(k.Mul(at[0], k.Index(c)), first_channel);
  const std::string w_planes = k.Mul(at[1], k.Index(cg));
  std::string sum =
      k.For(k.Index(0), k.Index(cg), w.FloatConst(0, "f32"), "f32", [&](auto ci, auto acc) {
        const std::string x_plane = k.Mul(k.Add(x_planes, ci), k.Index(h));
        const std::string w_plane = k.Mul(k.Add(w_planes, ci), k.Index(kh));
        return k.For(k.Index(0), k.Index(kh), acc, "f32", [&](auto r, auto acc_r) {
          const std::string ih = k.Add(h0, k.Mul(r, k.Index(p.dilations[0])));
          const std::string row_ok = k.InRange(ih, h);
          const std::string x_row = k.Mul(k.Add(x_plane, k.OrZero(row_ok, ih)), k.Index(wd));
          const std::string w_row = k.Mul(k.Add(w_plane, r), k.Index(kw));
          return k.For(k.Index(0), k.Index(kw), acc_r, "f32", [&](auto s, auto acc_s) {
            const std::string iw = k.Add(w0, k.Mul(s, k.Index(p.dilations[1])));
            const std::string ok = w.Binary("arith.andi", row_ok, k.InRange(iw, wd), "i1");
            const std::string xv = k.Load(x, xt, k.Add(x_row, k.OrZero(ok, iw)), p.dtype);
            const std::string wv = k.Load(wts, wt, k.Add(w_row, s), p.dtype);
            return k.MaskedMulAdd(ok, acc_s, xv, wv);
          });
        });
      });
  if (p.bias) sum = w.Binary("arith.addf", sum, k.Load(bias, bt, at[1], p.dtype), "f32");
  if (p.residual) sum = w.Binary("arith.addf", sum, k.Load(residual, yt, i, p.dtype), "f32");
  if (p.relu) {
    const std::string zero = w.FloatConst(0, "f32");
    sum = w.Select(w.Cmp("arith.cmpf", "ugt", sum, zero, "f32"), sum, zero, "f32");  // NaN stays
  }
  k.Store(sum, y, yt, i, p.dtype);
  return k.Text();
}

std::string EmitConv2DGradKernel(const std::string& name, const Conv2DGradKernelParams& g) {
  const Conv2DKernelParams& p = g.conv;
  KernelWriter k(name);
  ScalarWriter& w = k.w();
  const int64_t n = p.x[0], c = p.x[1], h = p.x[2], wd = p.x[3];
  const int64_t kout = p.y[1], oh = p.y[2], ow = p.y[3];
  const int64_t kh = p.window[0], kw = p.window[1];
  const int64_t cg = c / p.groups, kg = kout / p.groups;
  const std::string xt = Flat(n * c * h * wd, p.dtype), wt = Flat(kout * cg * kh * kw, p.dtype);
  const std::string yt = Flat(n * kout * oh * ow, p.dtype);
  if (!g.filter) {  // dx from (dy, w)
    const std::string dy = k.Input(yt), wts = k.Input(wt);
    for (const auto& [dtype, elements] : g.ignored_inputs) k.Input(Flat(elements, dtype));
    const std::string dx = k.Output(xt);
    const std::string i = k.ElementLoop();
    const std::vector<std::string> at = k.Split(i, {n, c, h, wd});
    const std::string group = k.Int("divui", at[1], k.Index(cg));
    const std::string in_group = k.Int("remui", at[1], k.Index(cg));
    const std::string first_k = k.Mul(group, k.Index(kg));
    const std::string hp = k.Add(at[2], k.Index(p.pads[0])), wp = k.Add(at[3], k.Index(p.pads[1]));
    const std::string sum =
        k.For(k.Index(0), k.Index(kg), w.FloatConst(0, "f32"), "f32", [&](auto kk, auto acc) {
          const std::string out_channel = k.Add(first_k, kk);
          const std::string dy_plane =
              k.Mul(k.Add(k.Mul(at[0], k.Index(kout)), out_channel), k.Index(oh));
          const std::string w_plane =
              k.Mul(k.Add(k.Mul(out_channel, k.Index(cg)), in_group), k.Index(kh));
          return k.For(k.Index(0), k.Index(kh), acc, "f32", [&](auto r, auto acc_r) {
            std::string row_ok;
            const std::string row = k.StridedOrigin(k.Sub(hp, k.Mul(r, k.Index(p.dilations[0]))),
                                                    p.strides[0], oh, &row_ok);
            const std::string dy_row = k.Mul(k.Add(dy_plane, row), k.Index(ow));
            const std::string w_row = k.Mul(k.Add(w_plane, r), k.Index(kw));
            return k.For(k.Index(0), k.Index(kw), acc_r, "f32", [&](auto s, auto acc_s) {
              std::string col_ok;
              const std::string col = k.StridedOrigin(k.Sub(wp, k.Mul(s, k.Index(p.dilations[1]))),
                                                      p.strides[1], ow, &col_ok);
              const std::string ok = k.And(row_ok, col_ok);
              const std::string dyv = k.Load(dy, yt, k.Add(dy_row, col), p.dtype);
              const std::string wv = k.Load(wts, wt, k.Add(w_row, s), p.dtype);
              return k.MaskedMulAdd(ok, acc_s, dyv, wv);
            });
          });
        });
    k.Store(sum, dx, xt, i, p.dtype);
    return k.Text();
  }
  // dw from (x, dy)
  const std::string x = k.Input(xt), dy = k.Input(yt);
  for (const auto& [dtype, elements] : g.ignored_inputs) k.Input(Flat(elements, dtype));
  const std::string dw = k.Output(wt);
  const std::string i = k.ElementLoop();
  const std::vector<std::string> at = k.Split(i, {kout, cg, kh, kw});
  const std::string channel = k.Add(k.Mul(k.Int("divui", at[0], k.Index(kg)), k.Index(cg)), at[1]);
  const std::string rh = k.Sub(k.Mul(at[2], k.Index(p.dilations[0])), k.Index(p.pads[0]));
  const std::string rw = k.Sub(k.Mul(at[3], k.Index(p.dilations[1])), k.Index(p.pads[1]));
  // Summed in f64: a weight's gradient adds N * OH * OW products (hundreds of thousands for a first
  // layer), where f32's error would grow with the count.
  const std::string sum =
      k.For(k.Index(0), k.Index(n), w.FloatConst(0, "f64"), "f64", [&](auto b, auto acc) {
        const std::string x_plane = k.Mul(k.Add(k.Mul(b, k.Index(c)), channel), k.Index(h));
        const std::string dy_plane = k.Mul(k.Add(k.Mul(b, k.Index(kout)), at[0]), k.Index(oh));
        return k.For(k.Index(0), k.Index(oh), acc, "f64", [&](auto r, auto acc_r) {
          const std::string ih = k.Add(k.Mul(r, k.Index(p.strides[0])), rh);
          const std::string row_ok = k.InRange(ih, h);
          const std::string x_row = k.Mul(k.Add(x_plane, k.OrZero(row_ok, ih)), k.Index(wd));
          const std::string dy_row = k.Mul(k.Add(dy_plane, r), k.Index(ow));
          return k.For(k.Index(0), k.Index(ow), acc_r, "f64", [&](auto s, auto acc_s) {
            const std::string iw = k.Add(k.Mul(s, k.Index(p.strides[1])), rw);
            const std::string ok = k.And(row_ok, k.InRange(iw, wd));
            const std::string xv = k.LoadF64(x, xt, k.Add(x_row, k.OrZero(ok, iw)), p.dtype);
            const std::string dyv = k.LoadF64(dy, yt, k.Add(dy_row, s), p.dtype);
            return k.MaskedMulAdd(ok, acc_s, xv, dyv, "f64");
          });
        });
      });
  k.Store(sum, dw, wt, i, p.dtype, /*from_f64=*/true);
  return k.Text();
}

}  // namespace kiln::compiler
