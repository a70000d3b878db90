#include "compiler/codegen/emit_library_kernels.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <sstream>

#include "compiler/codegen/scalar_writer.h"

namespace kiln::compiler {
namespace {

using internal::ScalarWriter;

// A 1-D memref of `elements` of a dtype's storage type.
std::string Flat(int64_t elements, DType dtype) { return internal::MemRef({elements}, dtype); }
// The same for raw bytes of the dtype's width (concat/split copy bits, whatever the dtype).
std::string Raw(int64_t elements, DType dtype) {
  return "memref<" + std::to_string(elements) + "xi" + std::to_string(8 * DTypeSize(dtype)) + ">";
}

// One kernel: the parameters, then one or more scf.parallel loops (each a launch of its own on the
// GPU, run in order), whose bodies the caller writes through the helpers below. A body's values are
// defined inside it, but for constants (a CountLoop's count among them), which the GPU lowering
// sinks into the kernels.
class KernelWriter {
 public:
  explicit KernelWriter(std::string name) : name_(std::move(name)), w_("    ") {}

  // Declares the next input (in0, in1, ...) or output (out0, ...) and returns its name.
  std::string Input(const std::string& type) { return Declare("%in", inputs_++, type); }
  std::string Output(const std::string& type) { return Declare("%out", outputs_++, type); }

  // Starts the loop over the kernel's iterations [begin, end), or over [0, count) (a loop whose
  // extent is its own, e.g. one per channel); returns its index.
  std::string ElementLoop() { return Open("%lo", "%hi"); }
  std::string CountLoop(int64_t count) {
    Close();
    return Open("%zero", w_.IntConst(count, "index"));
  }

  ScalarWriter& w() { return w_; }

  std::string Index(int64_t v) { return w_.IntConst(v, "index"); }
  std::string Int(const char* op, const std::string& a, const std::string& b) {
    return w_.Binary(std::string("arith.") + op, a, b, "index");
  }
  std::string Add(const std::string& a, const std::string& b) { return Int("addi", a, b); }
  std::string Sub(const std::string& a, const std::string& b) { return Int("subi", a, b); }
  std::string Mul(const std::string& a, const std::string& b) { return Int("muli", a, b); }
  std::string Less(const std::string& a, const std::string& b) {
    return w_.Cmp("arith.cmpi", "slt", a, b, "index");
  }
  std::string And(const std::string& a, const std::string& b) {
    return w_.Binary("arith.andi", a, b, "i1");
  }
  // 0 <= v < n.
  std::string InRange(const std::string& v, int64_t n) {
    return And(w_.Cmp("arith.cmpi", "sge", v, Index(0), "index"), Less(v, Index(n)));
  }
  // acc + a * b where `ok`, else acc (f32): a window's product, positions outside skipped.
  std::string MaskedMulAdd(const std::string& ok, const std::string& acc, const std::string& a,
                           const std::string& b) {
    const std::string more =
        w_.Binary("arith.addf", acc, w_.Binary("arith.mulf", a, b, "f32"), "f32");
    return w_.Select(ok, more, acc, "f32");
  }
  // v if `ok`, else 0 (an index that is safe to load at).
  std::string OrZero(const std::string& ok, const std::string& v) {
    return w_.Select(ok, v, Index(0), "index");
  }
  // t / stride where t is a multiple of `stride` with 0 <= t / stride < n (*ok), else 0: the
  // output position whose window starts at t (t = input position + pad - offset in the window).
  std::string StridedOrigin(const std::string& t, int64_t stride, int64_t n, std::string* ok) {
    const std::string o = Int("divsi", t, Index(stride));
    *ok = And(And(w_.Cmp("arith.cmpi", "sge", t, Index(0), "index"),
                  w_.Cmp("arith.cmpi", "eq", Int("remsi", t, Index(stride)), Index(0), "index")),
              Less(o, Index(n)));
    return OrZero(*ok, o);
  }
  // An index as a float of `type` (f32 or f64).
  std::string ToFloat(const std::string& v, const std::string& type) {
    return w_.Convert("arith.sitofp", w_.Convert("arith.index_cast", v, "index", "i64"), "i64",
                      type);
  }
  // The coordinates of the flat row-major index `i` over `dims`, outermost first.
  std::vector<std::string> Split(const std::string& i, const std::vector<int64_t>& dims) {
    std::vector<std::string> coords(dims.size());
    std::string rest = i;
    for (size_t d = dims.size(); d-- > 0;) {
      if (d == 0) {
        coords[d] = rest;
        break;
      }
      coords[d] = Int("remui", rest, Index(dims[d]));
      rest = Int("divui", rest, Index(dims[d]));
    }
    return coords;
  }
  // The element at `index` of memref `arg` of `type`, in the dtype's compute type.
  std::string Load(const std::string& arg, const std::string& type, const std::string& index,
                   DType dtype) {
    return w_.Load(w_.Emit("memref.load " + arg + "[" + index + "] : " + type), dtype);
  }
  // The same, widened to f64.
  std::string LoadF64(const std::string& arg, const std::string& type, const std::string& index,
                      DType dtype) {
    const std::string v = Load(arg, type, index, dtype);
    return dtype == DType::kF64 ? v : w_.Convert("arith.extf", v, "f32", "f64");
  }
  // Rounds a compute value (or an f64 one, `from_f64`) to `dtype` and stores it.
  void Store(std::string v, const std::string& arg, const std::string& type,
             const std::string& index, DType dtype, bool from_f64 = false) {
    if (from_f64 && dtype != DType::kF64) v = w_.Convert("arith.truncf", v, "f64", "f32");
    w_.Line("memref.store " + w_.Store(w_.RoundTo(v, dtype), dtype) + ", " + arg + "[" + index +
            "] : " + type);
  }
  // scf.for from lo to hi carrying `inits` (of `types`); body(iv, accs) returns the next values.
  std::vector<std::string> ForN(const std::string& lo, const std::string& hi,
                                const std::vector<std::string>& inits,
                                const std::vector<std::string>& types,
                                const std::function<std::vector<std::string>(
                                    const std::string&, const std::vector<std::string>&)>& body) {
    const std::string result = w_.Fresh(), iv = w_.Fresh();
    const bool one = inits.size() == 1;
    std::vector<std::string> accs, results;
    for (size_t a = 0; a < inits.size(); ++a) {
      accs.push_back(w_.Fresh());
      results.push_back(one ? result : result + "#" + std::to_string(a));
    }
    std::vector<std::string> bound;
    for (size_t a = 0; a < inits.size(); ++a) bound.push_back(accs[a] + " = " + inits[a]);
    w_.Line(result + (one ? "" : ":" + std::to_string(inits.size())) + " = scf.for " + iv + " = " +
            lo + " to " + hi + " step " + Index(1) + " iter_args(" + internal::Join(bound, ", ") +
            ") -> (" + internal::Join(types, ", ") + ") {");
    w_.Indent();
    const std::vector<std::string> next = body(iv, accs);
    w_.Line("scf.yield " + internal::Join(next, ", ") + " : " + internal::Join(types, ", "));
    w_.Dedent();
    w_.Line("}");
    return results;
  }
  // The same with one accumulator.
  std::string For(const std::string& lo, const std::string& hi, const std::string& init,
                  const std::string& type,
                  const std::function<std::string(const std::string&, const std::string&)>& body) {
    return ForN(lo, hi, {init}, {type},
                [&](const std::string& iv, const std::vector<std::string>& accs) {
                  return std::vector<std::string>{body(iv, accs[0])};
                })[0];
  }
  // A loop without results: body(iv).
  void Each(const std::string& lo, const std::string& hi,
            const std::function<void(const std::string&)>& body) {
    const std::string iv = w_.Fresh();
    w_.Line("scf.for " + iv + " = " + lo + " to " + hi + " step " + Index(1) + " {");
    w_.Indent();
    body(iv);
    w_.Dedent();
    w_.Line("}");
  }

  std::string Text() {
    Close();
    std::ostringstream os;
    os << "  func.func @" << name_ << "(%begin: i64, %end: i64";
    for (const std::string& p : params_) os << ", " << p;
    os << ") {\n"
       << "    %lo = arith.index_cast %begin : i64 to index\n"
       << "    %hi = arith.index_cast %end : i64 to index\n"
       << "    %zero = arith.constant 0 : index\n"
       << "    %one = arith.constant 1 : index\n"
       << w_.text() << "    return\n"
       << "  }\n";
    return os.str();
  }

 private:
  std::string Declare(const char* prefix, int n, const std::string& type) {
    const std::string name = prefix + std::to_string(n);
    params_.push_back(name + ": " + type);
    return name;
  }
  std::string Open(const std::string& lo, const std::string& hi) {
    Close();
    const std::string i = "%i" + std::to_string(loops_++);
    w_.Line("scf.parallel (" + i + ") = (" + lo + ") to (" + hi + ") step (%one) {");
    w_.Indent();
    open_ = true;
    return i;
  }
  void Close() {
    if (!open_) return;
    w_.Line("scf.yield");
    w_.Dedent();
    w_.Line("}");
    open_ = false;
  }

  std::string name_;
  ScalarWriter w_;
  std::vector<std::string> params_;
  int inputs_ = 0, outputs_ = 0, loops_ = 0;
  bool open_ = false;
};

int64_t Product(const std::vector<int64_t>& v) {
  int64_t n = 1;
  for (int64_t d : v) n *= d;
  return n;
}

}  // namespace

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
      // The first largest, a NaN winning (as the reference's ArgMaxOfWindow).
      const std::string larger =
          w.Select(w.Cmp("arith.cmpf", "ogt", v, acc_s, "f32"), v, acc_s, "f32");
      return w.Select(w.Cmp("arith.cmpf", "uno", v, v, "f32"), v, larger, "f32");
    });
  });
  if (!p.max) result = w.Binary("arith.divf", result, PoolDivisor(k, p, win), "f64");
  k.Store(result, y, yt, i, p.dtype, /*from_f64=*/!p.max);
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
  const std::string sum =
      k.For(k.Index(0), k.Index(n), w.FloatConst(0, "f32"), "f32", [&](auto b, auto acc) {
        const std::string x_plane = k.Mul(k.Add(k.Mul(b, k.Index(c)), channel), k.Index(h));
        const std::string dy_plane = k.Mul(k.Add(k.Mul(b, k.Index(kout)), at[0]), k.Index(oh));
        return k.For(k.Index(0), k.Index(oh), acc, "f32", [&](auto r, auto acc_r) {
          const std::string ih = k.Add(k.Mul(r, k.Index(p.strides[0])), rh);
          const std::string row_ok = k.InRange(ih, h);
          const std::string x_row = k.Mul(k.Add(x_plane, k.OrZero(row_ok, ih)), k.Index(wd));
          const std::string dy_row = k.Mul(k.Add(dy_plane, r), k.Index(ow));
          return k.For(k.Index(0), k.Index(ow), acc_r, "f32", [&](auto s, auto acc_s) {
            const std::string iw = k.Add(k.Mul(s, k.Index(p.strides[1])), rw);
            const std::string ok = k.And(row_ok, k.InRange(iw, wd));
            const std::string xv = k.Load(x, xt, k.Add(x_row, k.OrZero(ok, iw)), p.dtype);
            const std::string dyv = k.Load(dy, yt, k.Add(dy_row, s), p.dtype);
            return k.MaskedMulAdd(ok, acc_s, xv, dyv);
          });
        });
      });
  k.Store(sum, dw, wt, i, p.dtype);
  return k.Text();
}

std::string EmitPool2DGradKernel(const std::string& name, const Pool2DGradKernelParams& g) {
  const Pool2DKernelParams& p = g.pool;
  KernelWriter k(name);
  ScalarWriter& w = k.w();
  const std::string xt = Flat(p.planes * p.height * p.width, p.dtype);
  const std::string yt = Flat(p.planes * p.out_height * p.out_width, p.dtype);
  std::string x, dy;
  if (p.max) {
    x = k.Input(xt);
    dy = k.Input(yt);
  } else {
    dy = k.Input(yt);
    k.Input(xt);  // x_like: its shape only
  }
  const std::string dx = k.Output(xt);
  const std::string i = k.ElementLoop();
  const std::vector<std::string> at = k.Split(i, {p.planes, p.height, p.width});
  const std::string here = k.Add(k.Mul(at[1], k.Index(p.width)), at[2]);  // within the plane
  const std::string hp = k.Add(at[1], k.Index(p.pads[0])), wp = k.Add(at[2], k.Index(p.pads[1]));
  const std::string x_plane = k.Mul(at[0], k.Index(p.height * p.width));
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
          const std::string dyv = k.LoadF64(
              dy, yt, k.Add(k.Mul(k.Add(dy_plane, orow), k.Index(p.out_width)), ocol), p.dtype);
          const PoolWindow win = WindowAt(k, p, orow, ocol);
          std::string share;
          std::string mine = ok;
          if (p.max) {  // the window's first largest element (a NaN winning), as ArgMaxOfWindow;
                        // a window that does not cover this element is not scanned
            const std::string h_end = k.OrZero(ok, win.h_end);
            const std::vector<std::string> best = k.ForN(
                k.OrZero(ok, win.h_begin), h_end, {w.FloatConst(0, "f32"), k.Index(-1)},
                {"f32", "index"}, [&](const std::string& hh, const std::vector<std::string>& b) {
                  const std::string row = k.Mul(hh, k.Index(p.width));
                  return k.ForN(
                      win.w_begin, win.w_end, b, {"f32", "index"},
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
            mine = k.And(ok, w.Cmp("arith.cmpi", "eq", best[1], here, "index"));
            share = dyv;
          } else {
            share = w.Binary("arith.divf", dyv, PoolDivisor(k, p, win), "f64");
          }
          return w.Select(mine, w.Binary("arith.addf", acc_s, share, "f64"), acc_s, "f64");
        });
      });
  k.Store(sum, dx, xt, i, p.dtype, /*from_f64=*/true);
  return k.Text();
}

namespace {

// 1 / sqrt(var + epsilon) of an f64 variance, in f64.
std::string Rstd(KernelWriter& k, const std::string& var, const BatchNormKernelParams& p) {
  ScalarWriter& w = k.w();
  return w.Binary(
      "arith.divf", w.FloatConst(1, "f64"),
      w.Unary("math.sqrt", w.Binary("arith.addf", var, w.FloatConst(p.epsilon, "f64"), "f64"),
              "f64"),
      "f64");
}

}  // namespace

std::string EmitBatchNormKernel(const std::string& name, const BatchNormKernelParams& p) {
  KernelWriter k(name);
  ScalarWriter& w = k.w();
  const int64_t per_channel = p.batch * p.spatial;
  const std::string xt = Flat(p.batch * p.channels * p.spatial, p.dtype);
  const std::string ct = Flat(p.channels, p.dtype);
  // batch_norm: x, scale, bias, mean, var -> y, batch_mean, batch_var.
  // batch_norm_grad: dy, x, scale, mean, var -> dx, dscale, dbias.
  const std::string in0 = k.Input(xt);
  const std::string in1 = k.Input(p.grad ? xt : ct);
  const std::string in2 = k.Input(ct), in3 = k.Input(ct), in4 = k.Input(ct);
  const std::string out0 = k.Output(xt), out1 = k.Output(ct), out2 = k.Output(ct);
  const std::string x = p.grad ? in1 : in0, scale = p.grad ? in2 : in1;
  // Loop 1, one iteration per channel: its statistics (a row kernel over the channel's elements).
  const std::string c = k.CountLoop(p.channels);
  auto element = [&](const std::string& j) {  // the offset of a channel's j-th element
    const std::string b = k.Int("divui", j, k.Index(p.spatial));
    const std::string s = k.Int("remui", j, k.Index(p.spatial));
    return k.Add(k.Mul(k.Add(k.Mul(b, k.Index(p.channels)), c), k.Index(p.spatial)), s);
  };
  const std::string count32 = w.FloatConst(static_cast<double>(per_channel), "f32");
  auto sum = [&](const std::function<std::string(const std::string&)>& term) {
    return k.For(k.Index(0), k.Index(per_channel), w.FloatConst(0, "f32"), "f32",
                 [&](auto j, auto acc) { return w.Binary("arith.addf", acc, term(j), "f32"); });
  };
  if (p.grad) {
    const std::string mean = k.Load(in3, ct, c, p.dtype);
    // The second loop's 1/sqrt(var + epsilon), rounded to f32 for the sums.
    const std::string rstd =
        w.Convert("arith.truncf", Rstd(k, k.LoadF64(in4, ct, c, p.dtype), p), "f64", "f32");
    const std::string dbias =
        sum([&](const std::string& j) { return k.Load(in0, xt, element(j), p.dtype); });
    const std::string dscale = sum([&](const std::string& j) {
      const std::string at = element(j);
      const std::string xhat =
          w.Binary("arith.mulf", w.Binary("arith.subf", k.Load(x, xt, at, p.dtype), mean, "f32"),
                   rstd, "f32");
      return w.Binary("arith.mulf", k.Load(in0, xt, at, p.dtype), xhat, "f32");
    });
    k.Store(dscale, out1, ct, c, p.dtype);
    k.Store(dbias, out2, ct, c, p.dtype);
  } else if (p.training) {
    const std::string mean = w.Binary(
        "arith.divf", sum([&](const std::string& j) { return k.Load(x, xt, element(j), p.dtype); }),
        count32, "f32");
    const std::string squares = sum([&](const std::string& j) {
      const std::string d = w.Binary("arith.subf", k.Load(x, xt, element(j), p.dtype), mean, "f32");
      return w.Binary("arith.mulf", d, d, "f32");
    });
    k.Store(mean, out1, ct, c, p.dtype);
    k.Store(w.Binary("arith.divf", squares, count32, "f32"), out2, ct, c, p.dtype);
  } else {  // inference: the given statistics pass through
    k.Store(k.Load(in3, ct, c, p.dtype), out1, ct, c, p.dtype);
    k.Store(k.Load(in4, ct, c, p.dtype), out2, ct, c, p.dtype);
  }
  // Loop 2, one iteration per element, in f64.
  const std::string i = k.ElementLoop();
  const std::string ch = k.Int("remui", k.Int("divui", i, k.Index(p.spatial)), k.Index(p.channels));
  const std::string mean64 = k.LoadF64(p.grad || !p.training ? in3 : out1, ct, ch, p.dtype);
  const std::string var64 = k.LoadF64(p.grad || !p.training ? in4 : out2, ct, ch, p.dtype);
  const std::string rstd64 = Rstd(k, var64, p);
  const std::string xhat =
      w.Binary("arith.mulf", w.Binary("arith.subf", k.LoadF64(x, xt, i, p.dtype), mean64, "f64"),
               rstd64, "f64");
  const std::string scale64 = k.LoadF64(scale, ct, ch, p.dtype);
  std::string result;
  if (p.grad) {
    const std::string m = w.FloatConst(static_cast<double>(per_channel), "f64");
    const std::string dbias = w.Binary("arith.divf", k.LoadF64(out2, ct, ch, p.dtype), m, "f64");
    const std::string dscale = w.Binary("arith.divf", k.LoadF64(out1, ct, ch, p.dtype), m, "f64");
    const std::string inner =
        w.Binary("arith.subf", w.Binary("arith.subf", k.LoadF64(in0, xt, i, p.dtype), dbias, "f64"),
                 w.Binary("arith.mulf", xhat, dscale, "f64"), "f64");
    result = w.Binary("arith.mulf", w.Binary("arith.mulf", scale64, rstd64, "f64"), inner, "f64");
  } else {
    result = w.Binary("arith.addf", w.Binary("arith.mulf", scale64, xhat, "f64"),
                      k.LoadF64(in2, ct, ch, p.dtype), "f64");
  }
  k.Store(result, out0, xt, i, p.dtype, /*from_f64=*/true);
  return k.Text();
}

std::string EmitReduceSumKernel(const std::string& name, const ReduceSumKernelParams& p) {
  KernelWriter k(name);
  ScalarWriter& w = k.w();
  std::vector<int64_t> kept;
  for (size_t d = 0; d < p.sizes.size(); ++d)
    if (!p.reduced[d]) kept.push_back(p.sizes[d]);
  const std::string xt = Flat(Product(p.sizes), p.dtype), yt = Flat(Product(kept), p.dtype);
  const std::string x = k.Input(xt), y = k.Output(yt);
  const std::string i = k.ElementLoop();
  // f32 summed over trailing dims: a row kernel (rows the kept elements, columns the summed ones,
  // folded in f32), which the GPU lowering gives one block per row when the rows are wide.
  bool trailing = true;
  for (size_t d = 1; d < p.sizes.size(); ++d) trailing &= p.reduced[d] || !p.reduced[d - 1];
  if (p.dtype == DType::kF32 && trailing) {
    const int64_t cols = Product(p.sizes) / std::max<int64_t>(Product(kept), 1);
    const std::string row = k.Mul(i, k.Index(cols));
    const std::string sum =
        k.For(k.Index(0), k.Index(cols), w.FloatConst(0, "f32"), "f32", [&](auto j, auto acc) {
          return w.Binary("arith.addf", acc, k.Load(x, xt, k.Add(row, j), p.dtype), "f32");
        });
    k.Store(w.Binary("arith.mulf", sum, w.FloatConst(p.scale, "f32"), "f32"), y, yt, i, p.dtype);
    return k.Text();
  }
  const std::vector<std::string> at = k.Split(i, kept);
  // The input offset of the kept coordinates, then one loop per summed-away dim, outermost first.
  std::vector<int64_t> strides(p.sizes.size(), 1);
  for (size_t d = p.sizes.size(); d-- > 1;) strides[d - 1] = strides[d] * p.sizes[d];
  std::string base = k.Index(0);
  for (size_t d = 0, j = 0; d < p.sizes.size(); ++d)
    if (!p.reduced[d]) base = k.Add(base, k.Mul(at[j++], k.Index(strides[d])));
  std::function<std::string(size_t, const std::string&, const std::string&)> sum_from =
      [&](size_t d, const std::string& offset, const std::string& acc) -> std::string {
    while (d < p.sizes.size() && !p.reduced[d]) ++d;
    if (d == p.sizes.size()) {
      return w.Binary("arith.addf", acc, k.LoadF64(x, xt, offset, p.dtype), "f64");
    }
    return k.For(k.Index(0), k.Index(p.sizes[d]), acc, "f64", [&](auto at_d, auto acc_d) {
      return sum_from(d + 1, k.Add(offset, k.Mul(at_d, k.Index(strides[d]))), acc_d);
    });
  };
  const std::string result = w.Binary("arith.mulf", sum_from(0, base, w.FloatConst(0, "f64")),
                                      w.FloatConst(p.scale, "f64"), "f64");
  k.Store(result, y, yt, i, p.dtype, /*from_f64=*/true);
  return k.Text();
}

std::string EmitGatherKernel(const std::string& name, const GatherKernelParams& p) {
  KernelWriter k(name);
  ScalarWriter& w = k.w();
  const std::string data_type = Raw(p.outer * p.axis_size * p.inner, p.dtype);
  const std::string index_type = internal::MemRef({p.indices}, p.index_dtype);
  const std::string out_type = Raw(p.outer * p.indices * p.inner, p.dtype);
  const std::string data = k.Input(data_type), indices = k.Input(index_type);
  const std::string out = k.Output(out_type);
  const std::string i = k.ElementLoop();
  const std::vector<std::string> at = k.Split(i, {p.outer, p.indices, p.inner});
  const std::string bits = internal::StorageType(p.index_dtype);
  std::string index = w.Emit("memref.load " + indices + "[" + at[1] + "] : " + index_type);
  if (p.index_dtype != DType::kI64) index = w.Convert("arith.extsi", index, bits, "i64");
  index = w.Convert("arith.index_cast", index, "i64", "index");
  index = w.Select(k.Less(index, k.Index(0)), k.Add(index, k.Index(p.axis_size)), index, "index");
  const std::string from =
      k.Add(k.Mul(k.Add(k.Mul(at[0], k.Index(p.axis_size)), index), k.Index(p.inner)), at[2]);
  w.Line("memref.store " + w.Emit("memref.load " + data + "[" + from + "] : " + data_type) + ", " +
         out + "[" + i + "] : " + out_type);
  return k.Text();
}

std::string EmitConcatKernel(const std::string& name, const ConcatKernelParams& p) {
  KernelWriter k(name);
  ScalarWriter& w = k.w();
  int64_t row = 0;
  for (int64_t b : p.blocks) row += b;
  const std::string whole_type = Raw(p.outer * row, p.dtype);
  const std::string bits = "i" + std::to_string(8 * DTypeSize(p.dtype));
  std::vector<std::string> pieces, piece_types;
  for (int64_t b : p.blocks) piece_types.push_back(Raw(p.outer * b, p.dtype));
  std::string whole;
  if (p.concat) {
    for (const std::string& t : piece_types) pieces.push_back(k.Input(t));
    whole = k.Output(whole_type);
  } else {
    whole = k.Input(whole_type);
    for (const auto& [dtype, elements] : p.ignored_inputs) k.Input(Raw(elements, dtype));
    for (const std::string& t : piece_types) pieces.push_back(k.Output(t));
  }
  const std::string i = k.ElementLoop();
  const std::vector<std::string> at = k.Split(i, {p.outer, row});
  // Piece j holds columns [start, start + blocks[j]) of each row, at column - start of its row.
  auto piece_index = [&](size_t j, int64_t start) {
    return k.Add(k.Mul(at[0], k.Index(p.blocks[j])), k.Int("subi", at[1], k.Index(start)));
  };
  if (!p.concat) {
    const std::string v = w.Emit("memref.load " + whole + "[" + i + "] : " + whole_type);
    int64_t start = 0;
    for (size_t j = 0; j < p.blocks.size(); start += p.blocks[j++]) {
      const std::string inside =
          w.Binary("arith.andi", w.Cmp("arith.cmpi", "sge", at[1], k.Index(start), "index"),
                   k.Less(at[1], k.Index(start + p.blocks[j])), "i1");
      w.Line("scf.if " + inside + " {");
      w.Indent();
      w.Line("memref.store " + v + ", " + pieces[j] + "[" + piece_index(j, start) +
             "] : " + piece_types[j]);
      w.Dedent();
      w.Line("}");
    }
    return k.Text();
  }
  // concat: the value from the first piece whose columns hold this one (nested scf.if).
  std::function<std::string(size_t, int64_t)> value_from = [&](size_t j,
                                                               int64_t start) -> std::string {
    const std::string load_here = "memref.load " + pieces[j] + "[";
    if (j + 1 == p.blocks.size())
      return w.Emit(load_here + piece_index(j, start) + "] : " + piece_types[j]);
    const std::string result = w.Fresh();
    w.Line(result + " = scf.if " + k.Less(at[1], k.Index(start + p.blocks[j])) + " -> (" + bits +
           ") {");
    w.Indent();
    w.Line("scf.yield " + w.Emit(load_here + piece_index(j, start) + "] : " + piece_types[j]) +
           " : " + bits);
    w.Dedent();
    w.Line("} else {");
    w.Indent();
    w.Line("scf.yield " + value_from(j + 1, start + p.blocks[j]) + " : " + bits);
    w.Dedent();
    w.Line("}");
    return result;
  };
  w.Line("memref.store " + value_from(0, 0) + ", " + whole + "[" + i + "] : " + whole_type);
  return k.Text();
}

}  // namespace kiln::compiler
