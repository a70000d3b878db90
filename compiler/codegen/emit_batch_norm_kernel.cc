// BatchNorm and BatchNormGrad as generated kernels (emit_library_kernels.h).
#include <string>
#include <vector>

#include "compiler/codegen/emit_library_kernels.h"
#include "compiler/codegen/kernel_writer.h"

namespace kiln::compiler {

using internal::Flat;
using internal::KernelWriter;
using internal::ScalarWriter;

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
  // Where loop 2 reads loop 1's per-channel values: f32 scratch, or outputs 1 and 2.
  const std::string st = Flat(p.channels, DType::kF32);
  const std::string first = p.f32_scratch ? k.Output(st) : out1;
  const std::string second = p.f32_scratch ? k.Output(st) : out2;
  const std::string kept_type = p.f32_scratch ? st : ct;
  const DType kept_dtype = p.f32_scratch ? DType::kF32 : p.dtype;
  const std::string x = p.grad ? in1 : in0, scale = p.grad ? in2 : in1;
  // Split sums: each channel's elements in p.splits parts of `part` elements, one row (a GPU
  // block) per part, whose f32 sums (two per part) go to the last output before a loop per channel
  // folds them.
  const bool split = p.splits > 1 && (p.grad || p.training);
  const int64_t parts = split ? p.channels * p.splits : p.channels;
  const int64_t part = per_channel / (split ? p.splits : 1);
  const std::string pt = Flat(2 * parts, DType::kF32);
  const std::string partials = split ? k.Output(pt) : "";
  auto keep = [&](const std::string& c, const std::string& v1, const std::string& v2) {
    k.Store(v1, out1, ct, c, p.dtype);
    k.Store(v2, out2, ct, c, p.dtype);
    if (!p.f32_scratch) return;
    k.Store(v1, first, st, c, DType::kF32);
    k.Store(v2, second, st, c, DType::kF32);
  };
  // The f32 sum of term(offset) over the elements of row r (a part of channel c, or all of it):
  // a column loop, which the GPU lowering folds across a block.
  auto sum = [&](const std::string& c, const std::string& r,
                 const std::function<std::string(const std::string&)>& term) {
    const std::string from =
        split ? k.Mul(k.Int("remui", r, k.Index(p.splits)), k.Index(part)) : k.Index(0);
    return k.For(k.Index(0), k.Index(part), w.FloatConst(0, "f32"), "f32", [&](auto j, auto acc) {
      const std::vector<std::string> at = k.Split(k.Add(from, j), {p.batch, p.spatial});
      const std::string offset =
          k.Add(k.Mul(k.Add(k.Mul(at[0], k.Index(p.channels)), c), k.Index(p.spatial)), at[1]);
      return w.Binary("arith.addf", acc, term(offset), "f32");
    });
  };
  // Loop 1, one iteration per row: sums(c, r) of the row's elements (row r of channel c). Unsplit,
  // done(c, sums) uses them at once; split, they are stored, and a loop per channel folds the
  // parts' sums before done(c, folded).
  using Sums = std::vector<std::string>;
  auto per_row = [&](const std::function<Sums(const std::string&, const std::string&)>& sums,
                     const std::function<void(const std::string&, const Sums&)>& done) {
    const std::string r = k.CountLoop(parts);
    const std::string c = split ? k.Int("divui", r, k.Index(p.splits)) : r;
    const Sums row = sums(c, r);
    if (!split) return done(c, row);
    for (size_t v = 0; v < row.size(); ++v)
      k.Store(row[v], partials, pt, k.Add(r, k.Index(static_cast<int64_t>(v) * parts)),
              DType::kF32);
    const std::string channel = k.CountLoop(p.channels);
    Sums folded;
    for (size_t v = 0; v < row.size(); ++v) {
      const std::string base =
          k.Add(k.Mul(channel, k.Index(p.splits)), k.Index(static_cast<int64_t>(v) * parts));
      folded.push_back(k.For(
          k.Index(0), k.Index(p.splits), w.FloatConst(0, "f32"), "f32", [&](auto s, auto acc) {
            return w.Binary("arith.addf", acc, k.Load(partials, pt, k.Add(base, s), DType::kF32),
                            "f32");
          }));
    }
    done(channel, folded);
  };
  const std::string count32 = w.FloatConst(static_cast<double>(per_channel), "f32");
  if (p.grad) {
    per_row(
        [&](const std::string& c, const std::string& r) -> Sums {
          const std::string mean = k.Load(in3, ct, c, p.dtype);
          // The second loop's 1/sqrt(var + epsilon), rounded to f32 for the sums.
          const std::string rstd =
              w.Convert("arith.truncf", Rstd(k, k.LoadF64(in4, ct, c, p.dtype), p), "f64", "f32");
          const std::string dbias =
              sum(c, r, [&](const std::string& at) { return k.Load(in0, xt, at, p.dtype); });
          const std::string dscale = sum(c, r, [&](const std::string& at) {
            const std::string xhat = w.Binary(
                "arith.mulf", w.Binary("arith.subf", k.Load(x, xt, at, p.dtype), mean, "f32"), rstd,
                "f32");
            return w.Binary("arith.mulf", k.Load(in0, xt, at, p.dtype), xhat, "f32");
          });
          return {dscale, dbias};
        },
        [&](const std::string& c, const Sums& sums) { keep(c, sums[0], sums[1]); });
  } else if (p.training) {
    // The mean, then the mean of squared deviations from it (read back from `first` when split).
    auto mean_of = [&](const std::string& total) {
      return w.Binary("arith.divf", total, count32, "f32");
    };
    auto squares = [&](const std::string& c, const std::string& r, const std::string& mean) {
      return sum(c, r, [&](const std::string& at) {
        const std::string d = w.Binary("arith.subf", k.Load(x, xt, at, p.dtype), mean, "f32");
        return w.Binary("arith.mulf", d, d, "f32");
      });
    };
    auto total = [&](const std::string& c, const std::string& r) -> Sums {
      return {sum(c, r, [&](const std::string& at) { return k.Load(x, xt, at, p.dtype); })};
    };
    if (!split) {
      per_row(total, [&](const std::string& c, const Sums& sums) {
        const std::string mean = mean_of(sums[0]);
        keep(c, mean, mean_of(squares(c, c, mean)));
      });
    } else {
      per_row(total, [&](const std::string& c, const Sums& sums) {
        k.Store(mean_of(sums[0]), first, kept_type, c, kept_dtype);
      });
      auto mean_at = [&](const std::string& c) { return k.Load(first, kept_type, c, kept_dtype); };
      per_row(
          [&](const std::string& c, const std::string& r) -> Sums {
            return {squares(c, r, mean_at(c))};
          },
          [&](const std::string& c, const Sums& sums) { keep(c, mean_at(c), mean_of(sums[0])); });
    }
  } else {  // inference: the given statistics pass through
    const std::string c = k.CountLoop(p.channels);
    k.Store(k.Load(in3, ct, c, p.dtype), out1, ct, c, p.dtype);
    k.Store(k.Load(in4, ct, c, p.dtype), out2, ct, c, p.dtype);
  }
  // Loop 2, one iteration per element, in f64.
  const std::string i = k.ElementLoop();
  const std::string ch = k.Int("remui", k.Int("divui", i, k.Index(p.spatial)), k.Index(p.channels));
  const bool given = p.grad || !p.training;  // the statistics are inputs 3 and 4
  const std::string mean64 =
      given ? k.LoadF64(in3, ct, ch, p.dtype) : k.LoadF64(first, kept_type, ch, kept_dtype);
  const std::string var64 =
      given ? k.LoadF64(in4, ct, ch, p.dtype) : k.LoadF64(second, kept_type, ch, kept_dtype);
  const std::string rstd64 = Rstd(k, var64, p);
  const std::string xhat =
      w.Binary("arith.mulf", w.Binary("arith.subf", k.LoadF64(x, xt, i, p.dtype), mean64, "f64"),
               rstd64, "f64");
  const std::string scale64 = k.LoadF64(scale, ct, ch, p.dtype);
  std::string result;
  if (p.grad) {
    const std::string m = w.FloatConst(static_cast<double>(per_channel), "f64");
    const std::string dbias =
        w.Binary("arith.divf", k.LoadF64(second, kept_type, ch, kept_dtype), m, "f64");
    const std::string dscale =
        w.Binary("arith.divf", k.LoadF64(first, kept_type, ch, kept_dtype), m, "f64");
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

}  // namespace kiln::compiler
