#include "compiler/codegen/emit_library_kernels.h"

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

// One kernel: the parameters, then an scf.parallel over [begin, end) with index %i, whose body
// the caller writes through the helpers below (every value defined inside the loop, so that the
// GPU outlining needs nothing from outside).
class KernelWriter {
 public:
  explicit KernelWriter(std::string name) : name_(std::move(name)), w_("      ") {}

  // Declares the next input (in0, in1, ...) or output (out0, ...) and returns its name.
  std::string Input(const std::string& type) { return Declare("%in", inputs_++, type); }
  std::string Output(const std::string& type) { return Declare("%out", outputs_++, type); }

  ScalarWriter& w() { return w_; }

  std::string Index(int64_t v) { return w_.IntConst(v, "index"); }
  std::string Int(const char* op, const std::string& a, const std::string& b) {
    return w_.Binary(std::string("arith.") + op, a, b, "index");
  }
  std::string Add(const std::string& a, const std::string& b) { return Int("addi", a, b); }
  std::string Mul(const std::string& a, const std::string& b) { return Int("muli", a, b); }
  std::string Less(const std::string& a, const std::string& b) {
    return w_.Cmp("arith.cmpi", "slt", a, b, "index");
  }
  // 0 <= v < n.
  std::string InRange(const std::string& v, int64_t n) {
    return w_.Binary("arith.andi", w_.Cmp("arith.cmpi", "sge", v, Index(0), "index"),
                     Less(v, Index(n)), "i1");
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
  // Rounds a compute value to `dtype` and stores it.
  void Store(const std::string& v, const std::string& arg, const std::string& type,
             const std::string& index, DType dtype) {
    w_.Line("memref.store " + w_.Store(w_.RoundTo(v, dtype), dtype) + ", " + arg + "[" + index +
            "] : " + type);
  }
  // scf.for from lo to hi with one accumulator of `type`; body(iv, acc) returns the next value.
  std::string For(const std::string& lo, const std::string& hi, const std::string& init,
                  const std::string& type,
                  const std::function<std::string(const std::string&, const std::string&)>& body) {
    const std::string result = w_.Fresh(), iv = w_.Fresh(), acc = w_.Fresh();
    w_.Line(result + " = scf.for " + iv + " = " + lo + " to " + hi + " step " + Index(1) +
            " iter_args(" + acc + " = " + init + ") -> (" + type + ") {");
    w_.Indent();
    const std::string next = body(iv, acc);
    w_.Line("scf.yield " + next + " : " + type);
    w_.Dedent();
    w_.Line("}");
    return result;
  }

  std::string Text() const {
    std::ostringstream os;
    os << "  func.func @" << name_ << "(%begin: i64, %end: i64";
    for (const std::string& p : params_) os << ", " << p;
    os << ") {\n"
       << "    %lo = arith.index_cast %begin : i64 to index\n"
       << "    %hi = arith.index_cast %end : i64 to index\n"
       << "    %one = arith.constant 1 : index\n"
       << "    scf.parallel (%i) = (%lo) to (%hi) step (%one) {\n"
       << w_.text() << "      scf.yield\n"
       << "    }\n"
       << "    return\n"
       << "  }\n";
    return os.str();
  }

 private:
  std::string Declare(const char* prefix, int n, const std::string& type) {
    const std::string name = prefix + std::to_string(n);
    params_.push_back(name + ": " + type);
    return name;
  }

  std::string name_;
  ScalarWriter w_;
  std::vector<std::string> params_;
  int inputs_ = 0, outputs_ = 0;
};

int64_t Product(const std::vector<int64_t>& v) {
  int64_t n = 1;
  for (int64_t d : v) n *= d;
  return n;
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

  const std::vector<std::string> at = k.Split("%i", {yn, kout, oh, ow});
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
          const std::string x_row =
              k.Mul(k.Add(x_plane, w.Select(row_ok, ih, k.Index(0), "index")), k.Index(wd));
          const std::string w_row = k.Mul(k.Add(w_plane, r), k.Index(kw));
          return k.For(k.Index(0), k.Index(kw), acc_r, "f32", [&](auto s, auto acc_s) {
            const std::string iw = k.Add(w0, k.Mul(s, k.Index(p.dilations[1])));
            const std::string ok = w.Binary("arith.andi", row_ok, k.InRange(iw, wd), "i1");
            const std::string xv =
                k.Load(x, xt, k.Add(x_row, w.Select(ok, iw, k.Index(0), "index")), p.dtype);
            const std::string wv = k.Load(wts, wt, k.Add(w_row, s), p.dtype);
            const std::string more =
                w.Binary("arith.addf", acc_s, w.Binary("arith.mulf", xv, wv, "f32"), "f32");
            return w.Select(ok, more, acc_s, "f32");
          });
        });
      });
  if (p.bias) sum = w.Binary("arith.addf", sum, k.Load(bias, bt, at[1], p.dtype), "f32");
  if (p.residual) sum = w.Binary("arith.addf", sum, k.Load(residual, yt, "%i", p.dtype), "f32");
  if (p.relu) {
    const std::string zero = w.FloatConst(0, "f32");
    sum = w.Select(w.Cmp("arith.cmpf", "ugt", sum, zero, "f32"), sum, zero, "f32");  // NaN stays
  }
  k.Store(sum, y, yt, "%i", p.dtype);
  return k.Text();
}

std::string EmitPool2DKernel(const std::string& name, const Pool2DKernelParams& p) {
  KernelWriter k(name);
  ScalarWriter& w = k.w();
  const std::string xt = Flat(p.planes * p.height * p.width, p.dtype);
  const std::string yt = Flat(p.planes * p.out_height * p.out_width, p.dtype);
  const std::string x = k.Input(xt), y = k.Output(yt);
  const std::vector<std::string> at = k.Split("%i", {p.planes, p.out_height, p.out_width});
  // The window's rows [h_begin, h_end) and columns [w_begin, w_end), clipped to the input.
  const std::string h0 = k.Int("subi", k.Mul(at[1], k.Index(p.strides[0])), k.Index(p.pads[0]));
  const std::string w0 = k.Int("subi", k.Mul(at[2], k.Index(p.strides[1])), k.Index(p.pads[1]));
  const std::string h_far = k.Add(h0, k.Index(p.window[0]));
  const std::string w_far = k.Add(w0, k.Index(p.window[1]));
  const std::string h_begin = k.Int("maxsi", h0, k.Index(0));
  const std::string h_end = k.Int("minsi", h_far, k.Index(p.height));
  const std::string w_begin = k.Int("maxsi", w0, k.Index(0));
  const std::string w_end = k.Int("minsi", w_far, k.Index(p.width));
  const std::string plane = k.Mul(at[0], k.Index(p.height));
  const std::string type = p.max ? "f32" : "f64";
  const std::string init = p.max ? w.FloatConst(-std::numeric_limits<double>::infinity(), "f32")
                                 : w.FloatConst(0, "f64");
  std::string result = k.For(h_begin, h_end, init, type, [&](auto r, auto acc) {
    const std::string row = k.Mul(k.Add(plane, r), k.Index(p.width));
    return k.For(w_begin, w_end, acc, type, [&](auto s, auto acc_s) {
      const std::string v = k.Load(x, xt, k.Add(row, s), p.dtype);
      if (!p.max)
        return w.Binary("arith.addf", acc_s, w.Convert("arith.extf", v, "f32", "f64"), "f64");
      // The first largest, a NaN winning (as the reference's ArgMaxOfWindow).
      const std::string larger =
          w.Select(w.Cmp("arith.cmpf", "ogt", v, acc_s, "f32"), v, acc_s, "f32");
      return w.Select(w.Cmp("arith.cmpf", "uno", v, v, "f32"), v, larger, "f32");
    });
  });
  if (!p.max) {
    std::string count;
    if (p.include_pad) {  // the window inside the padded input
      const std::string rows =
          k.Int("subi", k.Int("minsi", h_far, k.Index(p.height + p.pads[2])), h0);
      const std::string cols =
          k.Int("subi", k.Int("minsi", w_far, k.Index(p.width + p.pads[3])), w0);
      count = k.Mul(rows, cols);
    } else {
      count = k.Mul(k.Int("subi", h_end, h_begin), k.Int("subi", w_end, w_begin));
    }
    const std::string divisor = w.Convert(
        "arith.sitofp", w.Convert("arith.index_cast", count, "index", "i64"), "i64", "f64");
    result =
        w.Convert("arith.truncf", w.Binary("arith.divf", result, divisor, "f64"), "f64", "f32");
  }
  k.Store(result, y, yt, "%i", p.dtype);
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
  const std::vector<std::string> at = k.Split("%i", kept);
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
      const std::string v = k.Load(x, xt, offset, p.dtype);
      return w.Binary("arith.addf", acc,
                      p.dtype == DType::kF64 ? v : w.Convert("arith.extf", v, "f32", "f64"), "f64");
    }
    return k.For(k.Index(0), k.Index(p.sizes[d]), acc, "f64", [&](auto at_d, auto acc_d) {
      return sum_from(d + 1, k.Add(offset, k.Mul(at_d, k.Index(strides[d]))), acc_d);
    });
  };
  std::string result = w.Binary("arith.mulf", sum_from(0, base, w.FloatConst(0, "f64")),
                                w.FloatConst(p.scale, "f64"), "f64");
  if (p.dtype != DType::kF64) result = w.Convert("arith.truncf", result, "f64", "f32");
  k.Store(result, y, yt, "%i", p.dtype);
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
  const std::vector<std::string> at = k.Split("%i", {p.outer, row});
  // Piece j holds columns [start, start + blocks[j]) of each row, at column - start of its row.
  auto piece_index = [&](size_t j, int64_t start) {
    return k.Add(k.Mul(at[0], k.Index(p.blocks[j])), k.Int("subi", at[1], k.Index(start)));
  };
  if (!p.concat) {
    const std::string v = w.Emit("memref.load " + whole + "[%i] : " + whole_type);
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
  w.Line("memref.store " + value_from(0, 0) + ", " + whole + "[%i] : " + whole_type);
  return k.Text();
}

}  // namespace kiln::compiler
