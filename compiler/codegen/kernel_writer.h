// Internal to compiler/codegen: KernelWriter, the text writer of the library-step kernels
// (compiler/codegen/emit_library_kernels.h). A kernel is its parameters (begin, end, then 1-D
// memrefs: inputs, then outputs) and one or more scf.parallel loops, each a launch of its own on
// the GPU, run in order; bodies are written through the helpers, which keep ScalarWriter's
// bookkeeping (constants deduplicated per region, fresh SSA names).
#pragma once

#include <algorithm>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/codegen/scalar_writer.h"

namespace kiln::compiler::internal {

// A 1-D memref of `elements` of a dtype's storage type.
inline std::string Flat(int64_t elements, DType dtype) { return MemRef({elements}, dtype); }
// The same for raw bytes of the dtype's width (concat/split copy bits, whatever the dtype).
inline std::string Raw(int64_t elements, DType dtype) {
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
  // acc + a * b where `ok`, else acc, in `type` (f32 or f64): a window's product, positions
  // outside skipped.
  std::string MaskedMulAdd(const std::string& ok, const std::string& acc, const std::string& a,
                           const std::string& b, const std::string& type = "f32") {
    const std::string more =
        w_.Binary("arith.addf", acc, w_.Binary("arith.mulf", a, b, type), type);
    return w_.Select(ok, more, acc, type);
  }
  // The larger of an f32 running maximum `acc` and `v`, a NaN `v` winning (the first largest is
  // kept on ties): the fold the row-reduction mapping recognizes as a max.
  std::string NanWinningMax(const std::string& acc, const std::string& v) {
    const std::string larger = w_.Select(w_.Cmp("arith.cmpf", "ogt", v, acc, "f32"), v, acc, "f32");
    return w_.Select(w_.Cmp("arith.cmpf", "uno", v, v, "f32"), v, larger, "f32");
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
            lo + " to " + hi + " step " + Index(1) + " iter_args(" + Join(bound, ", ") + ") -> (" +
            Join(types, ", ") + ") {");
    w_.Indent();
    const std::vector<std::string> next = body(iv, accs);
    w_.Line("scf.yield " + Join(next, ", ") + " : " + Join(types, ", "));
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

inline int64_t Product(const std::vector<int64_t>& v) {
  int64_t n = 1;
  for (int64_t d : v) n *= d;
  return n;
}

}  // namespace kiln::compiler::internal
