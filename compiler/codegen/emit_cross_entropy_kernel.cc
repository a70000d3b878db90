// softmax_cross_entropy and softmax_cross_entropy_grad as generated kernels
// (emit_library_kernels.h).
#include <limits>
#include <string>

#include "compiler/codegen/emit_library_kernels.h"
#include "compiler/codegen/kernel_writer.h"

namespace kiln::compiler {

using internal::Flat;
using internal::KernelWriter;
using internal::ScalarWriter;

std::string EmitCrossEntropyKernel(const std::string& name, const CrossEntropyKernelParams& p) {
  KernelWriter k(name);
  ScalarWriter& w = k.w();
  const std::string xt = Flat(p.rows * p.classes, DType::kF32);
  const std::string lt = Flat(p.rows, p.label_dtype);
  const std::string st = Flat(1, DType::kF32), rt = Flat(p.rows, DType::kF32);
  const std::string lossT = p.per_row ? rt : st;  // the loss, or the gradient's dloss
  const std::string logits = k.Input(xt), labels = k.Input(lt);
  const std::string dloss = p.grad ? k.Input(lossT) : "";
  const std::string out = k.Output(p.grad ? xt : lossT);
  const std::string row_losses = p.grad ? "" : p.per_row ? out : k.Output(rt);
  // Loop 1, a row kernel: per row the max (NaN wins), then the sum of exp(x - max), both folded
  // in f32 over the classes.
  const std::string n = k.ElementLoop();
  const std::string label_type = p.label_dtype == DType::kI32 ? "i32" : "i64";
  const std::string label =
      w.Convert("arith.index_cast", w.Emit("memref.load " + labels + "[" + n + "] : " + lt),
                label_type, "index");
  const std::string row = k.Mul(n, k.Index(p.classes));
  auto logit = [&](const std::string& c) { return k.Load(logits, xt, k.Add(row, c), DType::kF32); };
  const std::string zero = k.Index(0), classes = k.Index(p.classes);
  const std::string max =
      k.For(zero, classes, w.FloatConst(-std::numeric_limits<double>::infinity(), "f32"), "f32",
            [&](auto c, auto acc) { return k.NanWinningMax(acc, logit(c)); });
  const std::string sum =
      k.For(zero, classes, w.FloatConst(0, "f32"), "f32", [&](auto c, auto acc) {
        return w.Binary("arith.addf", acc,
                        w.Unary("math.exp", w.Binary("arith.subf", logit(c), max, "f32"), "f32"),
                        "f32");
      });
  const std::string count = w.FloatConst(static_cast<double>(p.rows), "f32");
  if (p.grad) {
    // dlogits = (softmax - onehot(label)) * dloss / N (or * dloss[n]): a third column loop, each
    // element its own.
    const std::string scale =
        p.per_row ? k.Load(dloss, rt, n, DType::kF32)
                  : w.Binary("arith.divf", k.Load(dloss, st, zero, DType::kF32), count, "f32");
    const std::string mul = w.Binary("arith.divf", scale, sum, "f32");
    k.Each(zero, classes, [&](const std::string& c) {
      const std::string p_c = w.Binary(
          "arith.mulf", w.Unary("math.exp", w.Binary("arith.subf", logit(c), max, "f32"), "f32"),
          mul, "f32");
      const std::string hit = w.Cmp("arith.cmpi", "eq", c, label, "index");
      const std::string d =
          w.Binary("arith.subf", p_c, w.Select(hit, scale, w.FloatConst(0, "f32"), "f32"), "f32");
      k.Store(d, out, xt, k.Add(row, c), DType::kF32);
    });
    return k.Text();
  }
  // loss_n = max + log(sum) - x[label].
  const std::string loss =
      w.Binary("arith.subf", w.Binary("arith.addf", max, w.Unary("math.log", sum, "f32"), "f32"),
               logit(label), "f32");
  k.Store(loss, row_losses, rt, n, DType::kF32);
  if (p.per_row) return k.Text();
  // Loop 2, one row of N columns: the mean of the row losses.
  // (Values of loop 1 are out of scope here: constants are made again.)
  const std::string only = k.CountLoop(1);
  const std::string total =
      k.For(k.Index(0), k.Index(p.rows), w.FloatConst(0, "f32"), "f32", [&](auto j, auto acc) {
        return w.Binary("arith.addf", acc, k.Load(row_losses, rt, j, DType::kF32), "f32");
      });
  k.Store(w.Binary("arith.divf", total, w.FloatConst(static_cast<double>(p.rows), "f32"), "f32"),
          out, st, only, DType::kF32);
  return k.Text();
}

}  // namespace kiln::compiler
