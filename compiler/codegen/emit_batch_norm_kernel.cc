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
  // Loop 1, one iteration per channel: its statistics (a row kernel over the channel's elements).
  const std::string c = k.CountLoop(p.channels);
  auto keep = [&](const std::string& v1, const std::string& v2) {  // loop 1's two values
    k.Store(v1, out1, ct, c, p.dtype);
    k.Store(v2, out2, ct, c, p.dtype);
    if (!p.f32_scratch) return;
    k.Store(v1, first, st, c, DType::kF32);
    k.Store(v2, second, st, c, DType::kF32);
  };
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
    keep(dscale, dbias);
  } else if (p.training) {
    const std::string mean = w.Binary(
        "arith.divf", sum([&](const std::string& j) { return k.Load(x, xt, element(j), p.dtype); }),
        count32, "f32");
    const std::string squares = sum([&](const std::string& j) {
      const std::string d = w.Binary("arith.subf", k.Load(x, xt, element(j), p.dtype), mean, "f32");
      return w.Binary("arith.mulf", d, d, "f32");
    });
    keep(mean, w.Binary("arith.divf", squares, count32, "f32"));
  } else {  // inference: the given statistics pass through
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
