// Pooling and its gradients as generated kernels (emit_library_kernels.h).
#include <limits>
#include <string>
#include <vector>

#include "compiler/codegen/emit_library_kernels.h"
#include "compiler/codegen/kernel_writer.h"

namespace kiln::compiler {

using internal::Flat;
using internal::KernelWriter;
using internal::ScalarWriter;

namespace {

// The pooling window at output position (row, col): its start (h0, w0) and end (far) in padded
// coordinates, and its rows [h_begin, h_end) and columns [w_begin, w_end) inside the input.
struct PoolWindow {
  std::string h0, w0, h_far, w_far, h_begin, h_end, w_begin, w_end;
};

PoolWindow WindowAt(KernelWriter& k, const Pool2DKernelParams& p, const std::string& row,
                    const std::string& col) {
  PoolWindow win;
  win.h0 = k.Sub(k.Mul(row, k.Index(p.strides[0])), k.Index(p.pads[0]));
  win.w0 = k.Sub(k.Mul(col, k.Index(p.strides[1])), k.Index(p.pads[1]));
  win.h_far = k.Add(win.h0, k.Index(p.window[0]));
  win.w_far = k.Add(win.w0, k.Index(p.window[1]));
  win.h_begin = k.Int("maxsi", win.h0, k.Index(0));
  win.h_end = k.Int("minsi", win.h_far, k.Index(p.height));
  win.w_begin = k.Int("maxsi", win.w0, k.Index(0));
  win.w_end = k.Int("minsi", win.w_far, k.Index(p.width));
  return win;
}

// Average pooling's divisor (f64): the window's size inside the padded input (count_include_pad)
// or its number of real elements.
std::string PoolDivisor(KernelWriter& k, const Pool2DKernelParams& p, const PoolWindow& win) {
  const std::string count =
      p.include_pad ? k.Mul(k.Sub(k.Int("minsi", win.h_far, k.Index(p.height + p.pads[2])), win.h0),
                            k.Sub(k.Int("minsi", win.w_far, k.Index(p.width + p.pads[3])), win.w0))
                    : k.Mul(k.Sub(win.h_end, win.h_begin), k.Sub(win.w_end, win.w_begin));
  return k.ToFloat(count, "f64");
}

}  // namespace

std::string EmitPool2DKernel(const std::string& name, const Pool2DKernelParams& p) {
  KernelWriter k(name);
  ScalarWriter& w = k.w();
  const std::string xt = Flat(p.planes * p.height * p.width, p.dtype);
  const std::string yt = Flat(p.planes * p.out_height * p.out_width, p.dtype);
  const std::string x = k.Input(xt), y = k.Output(yt);
  const std::string i = k.ElementLoop();
  const std::vector<std::string> at = k.Split(i, {p.planes, p.out_height, p.out_width});
  const PoolWindow win = WindowAt(k, p, at[1], at[2]);
  const std::string plane = k.Mul(at[0], k.Index(p.height));
  const std::string type = p.max ? "f32" : "f64";
  const std::string init = p.max ? w.FloatConst(-std::numeric_limits<double>::infinity(), "f32")
                                 : w.FloatConst(0, "f64");
  std::string result = k.For(win.h_begin, win.h_end, init, type, [&](auto r, auto acc) {
    const std::string row = k.Mul(k.Add(plane, r), k.Index(p.width));
    return k.For(win.w_begin, win.w_end, acc, type, [&](auto s, auto acc_s) {
      if (!p.max)
        return w.Binary("arith.addf", acc_s, k.LoadF64(x, xt, k.Add(row, s), p.dtype), "f64");
      const std::string v = k.Load(x, xt, k.Add(row, s), p.dtype);
      return k.NanWinningMax(acc_s, v);  // as the reference's ArgMaxOfWindow
    });
  });
  if (!p.max) result = w.Binary("arith.divf", result, PoolDivisor(k, p, win), "f64");
  k.Store(result, y, yt, i, p.dtype, /*from_f64=*/!p.max);
  return k.Text();
}

std::string EmitPool2DGradKernel(const std::string& name, const Pool2DGradKernelParams& g) {
  const Pool2DKernelParams& p = g.pool;
  KernelWriter k(name);
  ScalarWriter& w = k.w();
  const int64_t windows = p.planes * p.out_height * p.out_width;
  const std::string xt = Flat(p.planes * p.height * p.width, p.dtype);
  const std::string yt = Flat(windows, p.dtype);
  const std::string it = Flat(windows, DType::kI32);
  std::string x, dy;
  if (p.max) {
    x = k.Input(xt);
    dy = k.Input(yt);
  } else {
    dy = k.Input(yt);
    k.Input(xt);  // x_like: its shape only
  }
  const std::string dx = k.Output(xt);
  const std::string argmax = p.max ? k.Output(it) : "";
  if (p.max) {
    // Loop 1, one iteration per window: where in its plane its first largest element is (a NaN
    // winning, as the reference's ArgMaxOfWindow), -1 for a window of padding only.
    const std::string o = k.CountLoop(windows);
    const std::vector<std::string> at = k.Split(o, {p.planes, p.out_height, p.out_width});
    const PoolWindow win = WindowAt(k, p, at[1], at[2]);
    const std::string x_plane = k.Mul(at[0], k.Index(p.height * p.width));
    const std::vector<std::string> best = k.ForN(
        win.h_begin, win.h_end, {w.FloatConst(0, "f32"), k.Index(-1)}, {"f32", "index"},
        [&](const std::string& hh, const std::vector<std::string>& b) {
          const std::string row = k.Mul(hh, k.Index(p.width));
          return k.ForN(win.w_begin, win.w_end, b, {"f32", "index"},
                        [&](const std::string& ww, const std::vector<std::string>& c) {
                          const std::string at_plane = k.Add(row, ww);
                          const std::string v = k.Load(x, xt, k.Add(x_plane, at_plane), p.dtype);
                          const std::string take =
                              w.Binary("arith.ori",
                                       w.Binary("arith.ori", k.Less(c[1], k.Index(0)),
                                                w.Cmp("arith.cmpf", "ogt", v, c[0], "f32"), "i1"),
                                       k.And(w.Cmp("arith.cmpf", "uno", v, v, "f32"),
                                             w.Cmp("arith.cmpf", "ord", c[0], c[0], "f32")),
                                       "i1");
                          return std::vector<std::string>{w.Select(take, v, c[0], "f32"),
                                                          w.Select(take, at_plane, c[1], "index")};
                        });
        });
    k.Store(w.Convert("arith.index_cast", best[1], "index", "i32"), argmax, it, o, DType::kI32);
  }
  // Loop 2, one iteration per element of dx: the sum over the windows covering it of dy (max: the
  // windows whose first largest element it is; average: each window's share).
  const std::string i = k.ElementLoop();
  const std::vector<std::string> at = k.Split(i, {p.planes, p.height, p.width});
  const std::string here = k.Add(k.Mul(at[1], k.Index(p.width)), at[2]);  // within the plane
  const std::string hp = k.Add(at[1], k.Index(p.pads[0])), wp = k.Add(at[2], k.Index(p.pads[1]));
  const std::string dy_plane = k.Mul(at[0], k.Index(p.out_height));
  const std::string sum =
      k.For(k.Index(0), k.Index(p.window[0]), w.FloatConst(0, "f64"), "f64", [&](auto r, auto acc) {
        std::string row_ok;
        const std::string orow = k.StridedOrigin(k.Sub(hp, r), p.strides[0], p.out_height, &row_ok);
        return k.For(k.Index(0), k.Index(p.window[1]), acc, "f64", [&](auto s, auto acc_s) {
          std::string col_ok;
          const std::string ocol =
              k.StridedOrigin(k.Sub(wp, s), p.strides[1], p.out_width, &col_ok);
          const std::string ok = k.And(row_ok, col_ok);
          const std::string window =
              k.Add(k.Mul(k.Add(dy_plane, orow), k.Index(p.out_width)), ocol);
          const std::string dyv = k.LoadF64(dy, yt, window, p.dtype);
          std::string share, mine = ok;
          if (p.max) {
            const std::string first_largest = w.Convert(
                "arith.index_cast", k.Load(argmax, it, window, DType::kI32), "i32", "index");
            mine = k.And(ok, w.Cmp("arith.cmpi", "eq", first_largest, here, "index"));
            share = dyv;
          } else {
            share =
                w.Binary("arith.divf", dyv, PoolDivisor(k, p, WindowAt(k, p, orow, ocol)), "f64");
          }
          return w.Select(mine, w.Binary("arith.addf", acc_s, share, "f64"), acc_s, "f64");
        });
      });
  k.Store(sum, dx, xt, i, p.dtype, /*from_f64=*/true);
  return k.Text();
}

}  // namespace kiln::compiler
