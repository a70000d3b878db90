// reduce_sum, Gather, concat and split as generated kernels (emit_library_kernels.h).
#include <string>
#include <vector>

#include "compiler/codegen/emit_library_kernels.h"
#include "compiler/codegen/kernel_writer.h"

namespace kiln::compiler {

using internal::Flat;
using internal::KernelWriter;
using internal::Product;
using internal::Raw;
using internal::ScalarWriter;

std::string EmitReduceSumKernel(const std::string& name, const ReduceSumKernelParams& p) {
  KernelWriter k(name);
  ScalarWriter& w = k.w();
  std::vector<int64_t> kept;
  for (size_t d = 0; d < p.sizes.size(); ++d)
    if (!p.reduced[d]) kept.push_back(p.sizes[d]);
  const std::string xt = Flat(Product(p.sizes), p.dtype), yt = Flat(Product(kept), p.dtype);
  const std::string x = k.Input(xt);
  for (const auto& [dtype, elements] : p.ignored_inputs) k.Input(Flat(elements, dtype));
  const std::string y = k.Output(yt);
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
  // f32 summed over the last dim and others before it (a bias gradient over N, H and W): one
  // column loop over the summed positions in row-major order, folded in f32, which the GPU
  // lowering gives one block per kept element whose threads read neighbouring positions.
  if (p.dtype == DType::kF32 && p.reduced.back()) {
    std::vector<int64_t> summed, summed_strides;
    for (size_t d = 0; d < p.sizes.size(); ++d)
      if (p.reduced[d]) {
        summed.push_back(p.sizes[d]);
        summed_strides.push_back(strides[d]);
      }
    const std::string sum = k.For(
        k.Index(0), k.Index(Product(summed)), w.FloatConst(0, "f32"), "f32", [&](auto j, auto acc) {
          const std::vector<std::string> c = k.Split(j, summed);
          std::string offset = base;
          for (size_t r = 0; r < c.size(); ++r)
            offset = k.Add(offset, k.Mul(c[r], k.Index(summed_strides[r])));
          return w.Binary("arith.addf", acc, k.Load(x, xt, offset, p.dtype), "f32");
        });
    k.Store(w.Binary("arith.mulf", sum, w.FloatConst(p.scale, "f32"), "f32"), y, yt, i, p.dtype);
    return k.Text();
  }
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

namespace {

// Index `j` of a Gather's indices (memref `indices` of `type`) as a position along the axis:
// negative ones count from its end.
std::string AxisPosition(KernelWriter& k, const std::string& indices, const std::string& type,
                         const std::string& j, const GatherKernelParams& p) {
  ScalarWriter& w = k.w();
  const std::string bits = internal::StorageType(p.index_dtype);
  std::string index = w.Emit("memref.load " + indices + "[" + j + "] : " + type);
  if (p.index_dtype != DType::kI64) index = w.Convert("arith.extsi", index, bits, "i64");
  index = w.Convert("arith.index_cast", index, "i64", "index");
  return w.Select(k.Less(index, k.Index(0)), k.Add(index, k.Index(p.axis_size)), index, "index");
}

}  // namespace

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
  const std::string index = AxisPosition(k, indices, index_type, at[1], p);
  const std::string from =
      k.Add(k.Mul(k.Add(k.Mul(at[0], k.Index(p.axis_size)), index), k.Index(p.inner)), at[2]);
  w.Line("memref.store " + w.Emit("memref.load " + data + "[" + from + "] : " + data_type) + ", " +
         out + "[" + i + "] : " + out_type);
  return k.Text();
}

std::string EmitGatherGradKernel(const std::string& name, const GatherKernelParams& p) {
  KernelWriter k(name);
  ScalarWriter& w = k.w();
  const std::string dy_type = Flat(p.outer * p.indices * p.inner, p.dtype);
  const std::string index_type = internal::MemRef({p.indices}, p.index_dtype);
  const std::string dx_type = Flat(p.outer * p.axis_size * p.inner, p.dtype);
  const std::string dy = k.Input(dy_type), indices = k.Input(index_type);
  k.Input(Raw(p.outer * p.axis_size * p.inner, p.dtype));  // data_like: its shape only
  const std::string dx = k.Output(dx_type);
  const std::string i = k.ElementLoop();
  const std::vector<std::string> at = k.Split(i, {p.outer, p.axis_size, p.inner});
  const std::string row = k.Mul(at[0], k.Index(p.indices));
  // In index order, as the reference adds them (each f32 sum rounded, as its f32 stores are).
  const std::string sum =
      k.For(k.Index(0), k.Index(p.indices), w.FloatConst(0, "f32"), "f32", [&](auto j, auto acc) {
        const std::string hit =
            w.Emit("arith.cmpi eq, " + AxisPosition(k, indices, index_type, j, p) + ", " + at[1] +
                   " : index");
        const std::string from = k.Add(k.Mul(k.Add(row, j), k.Index(p.inner)), at[2]);
        return w.Select(hit, w.Binary("arith.addf", acc, k.Load(dy, dy_type, from, p.dtype), "f32"),
                        acc, "f32");
      });
  k.Store(sum, dx, dx_type, i, p.dtype);
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

std::string EmitBiasAddKernel(const std::string& name, const BiasAddKernelParams& p) {
  KernelWriter k(name);
  ScalarWriter& w = k.w();
  const std::string xt = Flat(p.outer * p.channels * p.inner, p.dtype);
  const std::string bt = Flat(p.channels, p.dtype);
  const std::string x = k.Input(xt), b = k.Input(bt), y = k.Output(xt);
  const std::string i = k.ElementLoop();
  const std::string c = k.Int("remui", k.Int("divui", i, k.Index(p.inner)), k.Index(p.channels));
  const std::string sum =
      w.Binary("arith.addf", k.Load(x, xt, i, p.dtype), k.Load(b, bt, c, p.dtype),
               p.dtype == DType::kF64 ? "f64" : "f32");
  k.Store(sum, y, xt, i, p.dtype);
  return k.Text();
}

}  // namespace kiln::compiler
