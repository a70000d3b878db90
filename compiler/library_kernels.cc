#include "compiler/library_kernels.h"

#include "compiler/codegen/emit_library_kernels.h"
#include "compiler/strided_copy_kernel.h"

namespace kiln::compiler {
namespace {

using Spec = std::optional<KernelSpec>;

Error Malformed(const Step& step, const std::string& what) {
  return MakeError(ErrorCode::kInternal, step.callee, " '", step.node.name, "': ", what);
}

const Shape& ShapeOf(const Executable& exe, int buffer) { return exe.buffers[buffer].type.shape; }
DType DTypeOf(const Executable& exe, int buffer) { return exe.buffers[buffer].type.dtype; }

// Every operand dense, one dtype among `dtypes`, and a non-empty first output.
bool Covered(const Step& step, const Executable& exe, std::initializer_list<DType> dtypes) {
  if (step.outputs.empty() || ShapeOf(exe, step.outputs[0]).NumElements() == 0) return false;
  const DType dtype = DTypeOf(exe, step.outputs[0]);
  bool listed = false;
  for (DType d : dtypes) listed |= d == dtype;
  if (!listed) return false;
  for (const std::vector<int>* ids : {&step.inputs, &step.outputs})
    for (int id : *ids)
      if (!exe.buffers[id].layout.empty()) return false;
  return true;
}

Spec Made(const std::string& name, int64_t iterations, std::string text) {
  KernelSpec spec;
  spec.name = name;
  spec.shape = Shape{iterations};
  spec.raw_mlir = std::move(text);
  return spec;
}

Result<Spec> Conv2D(const Step& step, const Executable& exe, const std::string& name) {
  if (step.inputs.size() < 2 || step.outputs.size() != 1 || !Covered(step, exe, {f32, bf16}))
    return Spec();
  Conv2DKernelParams p;
  p.dtype = DTypeOf(exe, step.outputs[0]);
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> strides, step.attrs.GetInts("strides"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> pads, step.attrs.GetInts("pads"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> dilations, step.attrs.GetInts("dilations"));
  KILN_ASSIGN_OR_RETURN(p.groups, step.attrs.GetInt("groups"));
  if (strides.size() != 2 || pads.size() != 4 || dilations.size() != 2 || p.groups < 1)
    return Malformed(step, "malformed attributes");
  if (step.attrs.Has("post_ops")) {
    KILN_ASSIGN_OR_RETURN(int64_t bias, step.attrs.GetInt("bias"));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> post_ops, step.attrs.GetInts("post_ops"));
    p.bias = bias != 0;
    for (size_t i = 0; i < post_ops.size(); ++i) {
      if (post_ops[i] == 1 && i == 0)
        p.residual = true;
      else if (post_ops[i] == 2 && !p.relu)
        p.relu = true;
      else
        return Malformed(step, "unknown post-op " + std::to_string(post_ops[i]));
    }
  }
  if (step.inputs.size() != 2u + p.bias + p.residual)
    return Malformed(step, "its epilogue does not match its inputs");
  const Shape &x = ShapeOf(exe, step.inputs[0]), &w = ShapeOf(exe, step.inputs[1]);
  const Shape& y = ShapeOf(exe, step.outputs[0]);
  for (int id : step.inputs)
    if (DTypeOf(exe, id) != p.dtype) return Malformed(step, "operands of different dtypes");
  if (x.rank() != 4 || w.rank() != 4 || y.rank() != 4 || x[1] % p.groups || y[1] % p.groups ||
      w[0] != y[1] || w[1] * p.groups != x[1] || x[0] != y[0] ||
      (p.bias && ShapeOf(exe, step.inputs[2]) != Shape{y[1]}) ||
      (p.residual && ShapeOf(exe, step.inputs.back()) != y))
    return Malformed(step, "operand shapes do not fit a convolution");
  for (int d = 0; d < 4; ++d) p.x[d] = x[d], p.y[d] = y[d];
  p.window = {w[2], w[3]};
  p.strides = {strides[0], strides[1]};
  p.dilations = {dilations[0], dilations[1]};
  p.pads = {pads[0], pads[1]};
  return Made(name, y.NumElements(), EmitConv2DKernel(name, p));
}

Result<Spec> Pool2D(const Step& step, const Executable& exe, const std::string& name) {
  if (step.inputs.size() != 1 || step.outputs.size() != 1 || !Covered(step, exe, {f32, bf16, f16}))
    return Spec();
  Pool2DKernelParams p;
  p.dtype = DTypeOf(exe, step.outputs[0]);
  p.max = step.callee == "max_pool2d";
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> window, step.attrs.GetInts("kernel"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> strides, step.attrs.GetInts("strides"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> pads, step.attrs.GetInts("pads"));
  if (!p.max) {
    KILN_ASSIGN_OR_RETURN(int64_t include_pad, step.attrs.GetInt("include_pad"));
    p.include_pad = include_pad != 0;
  }
  const Shape &x = ShapeOf(exe, step.inputs[0]), &y = ShapeOf(exe, step.outputs[0]);
  if (window.size() != 2 || strides.size() != 2 || pads.size() != 4 || x.rank() != 4 ||
      y.rank() != 4 || x[0] != y[0] || x[1] != y[1] || DTypeOf(exe, step.inputs[0]) != p.dtype)
    return Malformed(step, "malformed attributes or operands");
  p.planes = x[0] * x[1];
  p.height = x[2], p.width = x[3], p.out_height = y[2], p.out_width = y[3];
  p.window = {window[0], window[1]};
  p.strides = {strides[0], strides[1]};
  p.pads = {pads[0], pads[1], pads[2], pads[3]};
  return Made(name, y.NumElements(), EmitPool2DKernel(name, p));
}

Result<Spec> ReduceSum(const Step& step, const Executable& exe, const std::string& name) {
  if (step.inputs.size() != 1 || step.outputs.size() != 1 || !Covered(step, exe, {f32, f64}))
    return Spec();
  ReduceSumKernelParams p;
  p.dtype = DTypeOf(exe, step.outputs[0]);
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> reduced, step.attrs.GetInts("reduced"));
  KILN_ASSIGN_OR_RETURN(p.scale, step.attrs.GetFloat("scale"));
  const Shape& x = ShapeOf(exe, step.inputs[0]);
  if (static_cast<int>(reduced.size()) != x.rank() || DTypeOf(exe, step.inputs[0]) != p.dtype)
    return Malformed(step, "malformed attributes or operands");
  int64_t kept = 1;
  for (int d = 0; d < x.rank(); ++d) {
    p.sizes.push_back(x[d]);
    p.reduced.push_back(reduced[d] != 0);
    if (!reduced[d]) kept *= x[d];
  }
  if (kept != ShapeOf(exe, step.outputs[0]).NumElements())
    return Malformed(step, "the output does not hold the kept dims");
  return Made(name, kept, EmitReduceSumKernel(name, p));
}

Result<Spec> Concat(const Step& step, const Executable& exe, const std::string& name) {
  if (step.inputs.empty() || step.outputs.empty()) return Malformed(step, "no operands");
  ConcatKernelParams p;
  p.concat = step.callee == "concat";
  const std::vector<int>& pieces = p.concat ? step.inputs : step.outputs;
  const int whole = p.concat ? step.outputs[0] : step.inputs[0];
  KILN_ASSIGN_OR_RETURN(p.outer, step.attrs.GetInt("outer"));
  KILN_ASSIGN_OR_RETURN(p.blocks, step.attrs.GetInts("blocks"));
  if (p.blocks.size() != pieces.size()) return Malformed(step, "one block per piece expected");
  p.dtype = DTypeOf(exe, whole);
  int64_t row = 0;
  for (size_t j = 0; j < pieces.size(); ++j) {
    if (p.blocks[j] <= 0 || ShapeOf(exe, pieces[j]).NumElements() != p.outer * p.blocks[j] ||
        DTypeSize(DTypeOf(exe, pieces[j])) != DTypeSize(p.dtype))
      return Spec();
    row += p.blocks[j];
  }
  if (p.outer <= 0 || ShapeOf(exe, whole).NumElements() != p.outer * row) return Spec();
  for (const std::vector<int>* ids : {&step.inputs, &step.outputs})
    for (int id : *ids)
      if (!exe.buffers[id].layout.empty()) return Spec();
  if (!p.concat)
    for (size_t i = 1; i < step.inputs.size(); ++i)
      p.ignored_inputs.push_back(
          {DTypeOf(exe, step.inputs[i]), ShapeOf(exe, step.inputs[i]).NumElements()});
  return Made(name, p.outer * row, EmitConcatKernel(name, p));
}

}  // namespace

Result<std::optional<KernelSpec>> LibraryStepKernel(const Step& step, const Executable& exe,
                                                    const std::string& name) {
  if (step.kind != Step::Kind::kLibrary) return Spec();
  if (step.callee == "strided_copy") return StridedCopyKernel(step, exe, name);
  if (step.callee == "conv2d") return Conv2D(step, exe, name);
  if (step.callee == "max_pool2d" || step.callee == "avg_pool2d") return Pool2D(step, exe, name);
  if (step.callee == "reduce_sum") return ReduceSum(step, exe, name);
  if (step.callee == "concat" || step.callee == "split") return Concat(step, exe, name);
  return Spec();
}

}  // namespace kiln::compiler
