#include "compiler/library_kernels.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <utility>

#include "compiler/codegen/emit_library_kernels.h"
#include "compiler/library_lowering.h"
#include "compiler/strided_copy_kernel.h"
#include "ir/op_registry.h"
#include "runtime/cpu/conv_step.h"

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
  return KernelSpec::Raw(name, iterations, std::move(text));
}

// The kernel parameters of a convolution step (runtime/cpu/conv_step.h).
Conv2DKernelParams ConvKernelParams(const cpu::ConvStep& c) {
  Conv2DKernelParams p;
  p.dtype = c.dtype;
  p.x = c.x_dims;
  p.y = c.y_dims;
  p.window = {c.w_dims[2], c.w_dims[3]};
  p.strides = c.strides;
  p.dilations = c.dilations;
  p.pads = {c.pads[0], c.pads[1]};
  p.groups = c.groups;
  p.bias = c.bias >= 0;
  p.residual = c.residual >= 0;
  p.relu = c.relu;
  return p;
}

Result<Spec> Conv2D(const Step& step, const Executable& exe, const std::string& name) {
  if (step.inputs.size() < 2 || step.outputs.size() != 1 || !Covered(step, exe, {f32, bf16, f16}))
    return Spec();
  KILN_ASSIGN_OR_RETURN(cpu::ConvStep conv, cpu::ReadConvStep(step, exe));
  if (conv.clip || conv.depthwise_weights >= 0) return Spec();  // a cpu plan's post-ops
  return Made(name, ShapeOf(exe, step.outputs[0]).NumElements(),
              EmitConv2DKernel(name, ConvKernelParams(conv)));
}

// conv2d_backprop_input (dy, w[, x_like]) -> dx; conv2d_backprop_filter (x, dy[, w_like]) -> dw.
Result<Spec> Conv2DGrad(const Step& step, const Executable& exe, const std::string& name) {
  if (step.inputs.size() < 2 || step.outputs.size() != 1 || !Covered(step, exe, {f32, bf16, f16}))
    return Spec();
  KILN_ASSIGN_OR_RETURN(cpu::ConvStep conv, cpu::ReadConvStep(step, exe));
  Conv2DGradKernelParams p;
  p.filter = conv.kind == cpu::ConvStep::Kind::kBackwardFilter;
  p.conv = ConvKernelParams(conv);
  for (size_t i = 2; i < step.inputs.size(); ++i)
    p.ignored_inputs.push_back(
        {DTypeOf(exe, step.inputs[i]), ShapeOf(exe, step.inputs[i]).NumElements()});
  return Made(name, ShapeOf(exe, step.outputs[0]).NumElements(), EmitConv2DGradKernel(name, p));
}

// The pooling geometry of a step whose unpooled tensor is buffer `x` and pooled one `y`.
Status ReadPoolGeometry(const Step& step, const Executable& exe, int x_id, int y_id,
                        Pool2DKernelParams& p) {
  p.dtype = DTypeOf(exe, x_id);
  p.max = step.callee.rfind("max_pool2d", 0) == 0;
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> window, step.attrs.GetInts("kernel"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> strides, step.attrs.GetInts("strides"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> pads, step.attrs.GetInts("pads"));
  if (!p.max) {
    KILN_ASSIGN_OR_RETURN(int64_t include_pad, step.attrs.GetInt("include_pad"));
    p.include_pad = include_pad != 0;
  }
  const Shape &x = ShapeOf(exe, x_id), &y = ShapeOf(exe, y_id);
  if (window.size() != 2 || strides.size() != 2 || pads.size() != 4 || x.rank() != 4 ||
      y.rank() != 4 || x[0] != y[0] || x[1] != y[1] || DTypeOf(exe, y_id) != p.dtype)
    return Malformed(step, "malformed attributes or operands");
  p.planes = x[0] * x[1];
  p.height = x[2], p.width = x[3], p.out_height = y[2], p.out_width = y[3];
  p.window = {window[0], window[1]};
  p.strides = {strides[0], strides[1]};
  p.pads = {pads[0], pads[1], pads[2], pads[3]};
  return OkStatus();
}

Result<Spec> Pool2D(const Step& step, const Executable& exe, const std::string& name) {
  if (step.inputs.size() != 1 || step.outputs.size() != 1 || !Covered(step, exe, {f32, bf16, f16}))
    return Spec();
  Pool2DKernelParams p;
  KILN_RETURN_IF_ERROR(ReadPoolGeometry(step, exe, step.inputs[0], step.outputs[0], p));
  return Made(name, ShapeOf(exe, step.outputs[0]).NumElements(), EmitPool2DKernel(name, p));
}

// max_pool2d_grad (x, dy) -> dx, with an i32 scratch output of each window's argmax
// (ScratchOutputs); avg_pool2d_grad (dy, x_like) -> dx.
Result<Spec> Pool2DGrad(const Step& step, const Executable& exe, const std::string& name) {
  const bool max = step.callee == "max_pool2d_grad";
  if (step.inputs.size() != 2 || step.outputs.size() != (max ? 2u : 1u) ||
      !Covered(step, exe, {f32, bf16, f16}))
    return Spec();
  if (max && !(exe.buffers[step.outputs[1]].type ==
               TensorType{i32, Shape{ShapeOf(exe, step.inputs[1]).NumElements()}}))
    return Malformed(step, "output 1 is not the windows' i32 argmax");
  Pool2DGradKernelParams p;
  const int dy = max ? step.inputs[1] : step.inputs[0],
            like = max ? step.inputs[0] : step.inputs[1];
  KILN_RETURN_IF_ERROR(ReadPoolGeometry(step, exe, step.outputs[0], dy, p.pool));
  if (!(exe.buffers[like].type == exe.buffers[step.outputs[0]].type))
    return Malformed(step, "x does not have dx's type");
  return Made(name, ShapeOf(exe, step.outputs[0]).NumElements(), EmitPool2DGradKernel(name, p));
}

// How many parts a batch norm's per-channel sums are split into, so that a GPU has blocks enough
// to fold them (one block per part): the largest divisor of a channel's elements (N x spatial)
// that keeps channels x parts at most kBatchNormRows and each part at least kBatchNormPart
// elements; 1 where none does.
constexpr int64_t kBatchNormRows = 512, kBatchNormPart = 2048;
int64_t BatchNormSplits(const Shape& x) {
  if (x.rank() < 2) return 1;
  const int64_t channels = x[1], per_channel = x.NumElements() / std::max<int64_t>(x[1], 1);
  int64_t best = 1;
  for (int64_t s = 2; s * channels <= kBatchNormRows && per_channel / s >= kBatchNormPart; ++s)
    if (per_channel % s == 0) best = s;
  return best;
}

// batch_norm (x, scale, bias, mean, var) -> (y, batch_mean, batch_var) and batch_norm_grad (dy, x,
// scale, mean, var) -> (dx, dscale, dbias), over dense [N, C, spatial...]; with 16-bit data in
// training or the gradient, two f32 [C] scratch outputs follow, then, where the sums are split,
// the parts' sums (ScratchOutputs).
Result<Spec> BatchNorm(const Step& step, const Executable& exe, const std::string& name) {
  if (step.inputs.size() != 5 || step.outputs.size() < 3 || !Covered(step, exe, {f32, bf16, f16}))
    return Spec();
  BatchNormKernelParams p;
  p.grad = step.callee == "batch_norm_grad";
  KILN_ASSIGN_OR_RETURN(p.epsilon, step.attrs.GetFloat("epsilon"));
  if (!p.grad) {
    KILN_ASSIGN_OR_RETURN(p.training, step.attrs.GetBool("training"));
  }
  const TensorType& x = exe.buffers[step.inputs[p.grad ? 1 : 0]].type;
  // The second loop reads the statistics (or dscale, dbias) back: from f32 scratch outputs when
  // the data is 16-bit (the 16-bit outputs would round them).
  p.f32_scratch = x.dtype != f32 && (p.grad || p.training);
  if (p.grad || p.training) p.splits = BatchNormSplits(x.shape);
  const size_t outputs = 3 + (p.f32_scratch ? 2 : 0) + (p.splits > 1 ? 1 : 0);
  if (x.shape.rank() < 2 || step.outputs.size() != outputs) return Spec();
  p.dtype = x.dtype;
  p.batch = x.shape[0];
  p.channels = x.shape[1];
  for (int d = 2; d < x.shape.rank(); ++d) p.spatial *= x.shape[d];
  const TensorType channel{x.dtype, Shape{p.channels}};
  for (size_t i = 0; i < 5; ++i) {
    const bool data = i == 0 || (p.grad && i == 1);
    if (!(exe.buffers[step.inputs[i]].type == (data ? x : channel)))
      return Malformed(
          step, "operand " + std::to_string(i) + " is not " + (data ? x : channel).ToString());
  }
  const TensorType scratch{f32, Shape{p.channels}};
  const TensorType parts{f32, Shape{2 * p.channels * p.splits}};
  for (size_t o = 0; o < step.outputs.size(); ++o) {
    const TensorType& want = o == 0                             ? x
                             : o < 3                            ? channel
                             : p.splits > 1 && o + 1 == outputs ? parts
                                                                : scratch;
    if (!(exe.buffers[step.outputs[o]].type == want))
      return Malformed(step, "output " + std::to_string(o) + " has the wrong type");
  }
  return Made(name, x.shape.NumElements(), EmitBatchNormKernel(name, p));
}

Result<Spec> ReduceSum(const Step& step, const Executable& exe, const std::string& name) {
  if (step.inputs.empty() || step.outputs.size() != 1 || !Covered(step, exe, {f32, f64, bf16, f16}))
    return Spec();
  ReduceSumKernelParams p;
  for (size_t i = 1; i < step.inputs.size(); ++i)
    p.ignored_inputs.push_back(
        {DTypeOf(exe, step.inputs[i]), ShapeOf(exe, step.inputs[i]).NumElements()});
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

Result<Spec> BiasAdd(const Step& step, const Executable& exe, const std::string& name) {
  if (step.inputs.size() != 2 || step.outputs.size() != 1 ||
      !Covered(step, exe, {f32, f64, bf16, f16}))
    return Spec();
  KILN_ASSIGN_OR_RETURN(int64_t axis, step.attrs.GetInt("axis"));
  const TensorType& x = exe.buffers[step.inputs[0]].type;
  const int rank = x.shape.rank();
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank || !(exe.buffers[step.outputs[0]].type == x) ||
      !(exe.buffers[step.inputs[1]].type == TensorType{x.dtype, Shape{x.shape[axis]}}))
    return Malformed(step, "operands do not fit a bias along axis " + std::to_string(axis));
  BiasAddKernelParams p;
  p.dtype = x.dtype;
  p.channels = x.shape[axis];
  for (int d = 0; d < rank; ++d) {
    if (d < axis) p.outer *= x.shape[d];
    if (d > axis) p.inner *= x.shape[d];
  }
  return Made(name, x.shape.NumElements(), EmitBiasAddKernel(name, p));
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

// The indices buffer of a reference Gather (data, indices) or GatherGrad (dy, indices, data_like)
// that a kernel can take: fed (checked by a check_indices step when the run starts) or a
// constant (checked below, once); -1 otherwise.
int KernelIndices(const Step& step, const Executable& exe) {
  const bool grad = step.callee == "GatherGrad";
  if (step.kind != Step::Kind::kReference || (step.callee != "Gather" && !grad) ||
      step.inputs.size() != (grad ? 3u : 2u) || step.outputs.size() != 1)
    return -1;
  const BufferDesc& indices = exe.buffers[step.inputs[1]];
  const bool fed = indices.kind == BufferDesc::Kind::kFeed;
  const bool constant = indices.kind == BufferDesc::Kind::kConstant && indices.index >= 0 &&
                        indices.index < static_cast<int>(exe.constants.size());
  if ((!fed && !constant) || (indices.type.dtype != i32 && indices.type.dtype != i64)) return -1;
  return step.inputs[1];
}

// The gathered tensor's shape (Gather's data, GatherGrad's dx) and the normalized axis.
Result<std::pair<Shape, int64_t>> GatheredAxis(const Step& step, const Executable& exe) {
  const Shape& shape = ShapeOf(exe, step.callee == "GatherGrad" ? step.outputs[0] : step.inputs[0]);
  const OpDef* def = OpRegistry::Global().Find(step.callee);
  if (!def) return Malformed(step, "no op definition");
  KILN_ASSIGN_OR_RETURN(int64_t axis, def->WithDefaults(step.node.attrs).GetInt("axis"));
  if (axis < -shape.rank() || axis >= shape.rank()) return Malformed(step, "axis out of range");
  return std::make_pair(shape, axis < 0 ? axis + shape.rank() : axis);
}

// Gather as a copy kernel and GatherGrad as a summing one (emit_library_kernels.h), for the
// indices KernelIndices admits.
Result<Spec> Gather(const Step& step, const Executable& exe, const std::string& name) {
  const bool grad = step.callee == "GatherGrad";
  const int indices_id = KernelIndices(step, exe);
  if (indices_id < 0) return Spec();
  const BufferDesc& indices = exe.buffers[indices_id];
  const BufferDesc& out = exe.buffers[step.outputs[0]];
  // The slices [outer, indices, inner]: Gather's output, GatherGrad's dy.
  const BufferDesc& slices = grad ? exe.buffers[step.inputs[0]] : out;
  const DType dtype = out.type.dtype;
  if (out.type.shape.NumElements() == 0 || slices.type.dtype != dtype ||
      (grad && dtype != f32 && dtype != bf16 && dtype != f16))
    return Spec();
  for (const std::vector<int>* ids : {&step.inputs, &step.outputs})
    for (int id : *ids)
      if (!exe.buffers[id].layout.empty()) return Spec();
  KILN_ASSIGN_OR_RETURN(auto gathered, GatheredAxis(step, exe));
  const auto& [shape, axis] = gathered;
  // Gather's data, GatherGrad's data_like (a kernel operand of dx's dtype, for its shape only).
  if (exe.buffers[step.inputs[grad ? 2 : 0]].type.dtype != dtype) return Spec();
  GatherKernelParams p;
  p.dtype = dtype;
  p.index_dtype = indices.type.dtype;
  p.axis_size = shape[static_cast<int>(axis)];
  for (int d = 0; d < shape.rank(); ++d) {
    if (d < axis) p.outer *= shape[d];
    if (d > axis) p.inner *= shape[d];
  }
  p.indices = indices.type.shape.NumElements();
  if (slices.type.shape.NumElements() != p.outer * p.indices * p.inner)
    return Malformed(step, "the slices do not match the gathered tensor and the indices");
  if (indices.kind == BufferDesc::Kind::kConstant) {
    const Tensor& values = exe.constants[indices.index];
    if (values.num_elements() != p.indices) return Malformed(step, "malformed constant indices");
    for (int64_t j = 0; j < p.indices; ++j) {
      const double v = values.GetDouble(j);
      if (v < -static_cast<double>(p.axis_size) || v >= static_cast<double>(p.axis_size))
        return Spec();  // the reference step reports it when the step runs
    }
  }
  return Made(name, out.type.shape.NumElements(),
              grad ? EmitGatherGradKernel(name, p) : EmitGatherKernel(name, p));
}

// The check_indices step of a Gather or GatherGrad kernel's fed indices (none for constant ones).
std::optional<Step> IndicesCheck(const Step& step, const Executable& exe) {
  const int indices = KernelIndices(step, exe);
  if (indices < 0 || exe.buffers[indices].kind != BufferDesc::Kind::kFeed) return std::nullopt;
  Result<std::pair<Shape, int64_t>> gathered = GatheredAxis(step, exe);
  if (!gathered.ok()) return std::nullopt;
  Step check;
  check.kind = Step::Kind::kLibrary;
  check.callee = "check_indices";
  check.inputs = {indices};
  check.attrs.Set("axis", gathered->second);
  check.attrs.Set("data", gathered->first.dims());
  check.node = step.node;
  return check;
}

// The buffers that "copy" steps (Reshapes, Identities, chains of them) of a feed or a constant
// write, each with that feed or constant: they hold the same values.
std::map<int, int> CopiesOfFixed(const Executable& exe) {
  std::map<int, int> copies;
  for (const Step& s : exe.steps) {  // in order: a chain's earlier copies are mapped first
    if (s.kind != Step::Kind::kLibrary || s.callee != "copy" || s.outputs.size() != 1 ||
        s.inputs.empty())
      continue;
    const BufferDesc &in = exe.buffers[s.inputs[0]], &out = exe.buffers[s.outputs[0]];
    if (in.type.dtype != out.type.dtype || in.bytes() != out.bytes() || !in.layout.empty() ||
        !out.layout.empty())
      continue;
    if (in.kind == BufferDesc::Kind::kFeed || in.kind == BufferDesc::Kind::kConstant)
      copies[s.outputs[0]] = s.inputs[0];
    else if (auto source = copies.find(s.inputs[0]); source != copies.end())
      copies[s.outputs[0]] = source->second;
  }
  return copies;
}

// The feed or constant buffer whose values `buffer` holds (itself, or a copy's source); -1 when
// it holds computed values.
int FixedSource(const Executable& exe, const std::map<int, int>& copies, int buffer) {
  const BufferDesc::Kind kind = exe.buffers[buffer].kind;
  if (kind == BufferDesc::Kind::kFeed || kind == BufferDesc::Kind::kConstant) return buffer;
  auto it = copies.find(buffer);
  return it == copies.end() ? -1 : it->second;
}

// softmax_cross_entropy(_grad) over dense f32 logits [N, C] (N, C > 0) and i32/i64 labels [N]; the
// mean loss has a scratch output f32 [N] after it (ScratchOutputs), the row losses (reduction
// "none", f32 [N]) none. The kernel trusts its labels: the caller puts a check_labels step before
// it.
Result<Spec> CrossEntropy(const Step& step, const Executable& exe, const std::string& name) {
  CrossEntropyKernelParams p;
  p.grad = step.callee == "softmax_cross_entropy_grad";
  if (step.inputs.size() != (p.grad ? 3u : 2u) || step.outputs.empty()) return Spec();
  const TensorType& loss = exe.buffers[p.grad ? step.inputs[2] : step.outputs[0]].type;
  p.per_row = loss.shape.rank() == 1;
  if (step.outputs.size() != (p.grad || p.per_row ? 1u : 2u)) return Spec();
  for (int id : step.inputs)
    if (!exe.buffers[id].layout.empty()) return Spec();
  const TensorType& logits = exe.buffers[step.inputs[0]].type;
  const TensorType& labels = exe.buffers[step.inputs[1]].type;
  if (logits.dtype != f32 || logits.shape.rank() != 2 || logits.shape.NumElements() == 0 ||
      (labels.dtype != i32 && labels.dtype != i64) || !exe.buffers[step.outputs[0]].layout.empty())
    return Spec();
  const TensorType row_losses{f32, labels.shape};
  if (!(labels.shape == Shape{logits.shape[0]}) ||
      !(loss == (p.per_row ? row_losses : TensorType{f32, Shape{}})) ||
      (p.grad && !(exe.buffers[step.outputs[0]].type == logits)) ||
      (!p.grad && !p.per_row && !(exe.buffers[step.outputs[1]].type == row_losses)))
    return Malformed(step, "operands do not fit logits [N, C] and labels [N]");
  p.rows = logits.shape[0];
  p.classes = logits.shape[1];
  p.label_dtype = labels.dtype;
  return Made(name, p.rows, EmitCrossEntropyKernel(name, p));
}

// The scratch buffers a step's kernel writes besides the step's outputs: a loss's row losses; a
// 16-bit batch norm's statistics (training) or dscale and dbias (gradient), unrounded; a batch
// norm's split sums (BatchNormSplits), all f32; a max pooling gradient's argmax per window (i32).
std::vector<TensorType> ScratchOutputs(const Step& step, const Executable& exe) {
  if (step.kind != Step::Kind::kLibrary || step.inputs.empty()) return {};
  const TensorType& in0 = exe.buffers[step.inputs[0]].type;
  if (step.callee == "softmax_cross_entropy" && in0.shape.rank() == 2 && !step.outputs.empty() &&
      exe.buffers[step.outputs[0]].type.shape.rank() == 0)
    return {TensorType{f32, Shape{in0.shape[0]}}};
  if (step.callee == "max_pool2d_grad" && step.inputs.size() == 2)
    return {TensorType{i32, Shape{exe.buffers[step.inputs[1]].type.shape.NumElements()}}};
  if (step.callee != "batch_norm" && step.callee != "batch_norm_grad") return {};
  if (in0.shape.rank() < 2) return {};
  Result<bool> training = step.attrs.GetBool("training");
  if (step.callee == "batch_norm" && (!training.ok() || !*training)) return {};
  std::vector<TensorType> scratch;
  if (in0.dtype != f32)
    scratch = {TensorType{f32, Shape{in0.shape[1]}}, TensorType{f32, Shape{in0.shape[1]}}};
  if (const int64_t splits = BatchNormSplits(in0.shape); splits > 1)
    scratch.push_back(TensorType{f32, Shape{2 * in0.shape[1] * splits}});
  return scratch;
}

bool IsCrossEntropy(const Step& step) {
  return step.kind == Step::Kind::kLibrary &&
         (step.callee == "softmax_cross_entropy" || step.callee == "softmax_cross_entropy_grad");
}

// A reference step that a library routine's kernel computes too: a convolution or a sum whose
// dtype the cpu backend's libraries do not take (f16 convolutions, 16-bit sums), so that the
// shared lowering left it to the reference kernel.
std::optional<Step> AsLibraryStep(const Step& step, const Executable& exe) {
  Step library = step;
  library.kind = Step::Kind::kLibrary;
  if (std::optional<std::string> conv = ConvRoutine(step.node.op)) {
    const OpDef* def = OpRegistry::Global().Find(step.node.op);
    if (!def) return std::nullopt;
    library.callee = *conv;
    library.attrs = def->WithDefaults(step.node.attrs);
    return library;
  }
  if (step.inputs.empty()) return std::nullopt;
  const Shape* like = step.inputs.size() > 1 ? &ShapeOf(exe, step.inputs[1]) : nullptr;
  std::optional<AttrMap> sum = ReduceSumAttrs(step.node, ShapeOf(exe, step.inputs[0]), like);
  if (!sum) return std::nullopt;
  library.callee = "reduce_sum";
  library.attrs = std::move(*sum);
  return library;
}

// The kernel replacing `step`, or nullopt.
Result<Spec> LibraryStepKernel(const Step& step, const Executable& exe, const std::string& name) {
  if (step.kind == Step::Kind::kReference) {
    if (step.callee == "Gather" || step.callee == "GatherGrad") return Gather(step, exe, name);
    std::optional<Step> library = AsLibraryStep(step, exe);
    return library ? LibraryStepKernel(*library, exe, name) : Result<Spec>(Spec());
  }
  if (step.kind != Step::Kind::kLibrary) return Spec();
  if (step.callee == "strided_copy") return StridedCopyKernel(step, exe, name);
  if (step.callee == "conv2d") return Conv2D(step, exe, name);
  if (step.callee == "conv2d_backprop_input" || step.callee == "conv2d_backprop_filter")
    return Conv2DGrad(step, exe, name);
  if (step.callee == "max_pool2d" || step.callee == "avg_pool2d") return Pool2D(step, exe, name);
  if (step.callee == "max_pool2d_grad" || step.callee == "avg_pool2d_grad")
    return Pool2DGrad(step, exe, name);
  if (step.callee == "batch_norm" || step.callee == "batch_norm_grad")
    return BatchNorm(step, exe, name);
  if (step.callee == "reduce_sum") return ReduceSum(step, exe, name);
  if (step.callee == "bias_add") return BiasAdd(step, exe, name);
  if (step.callee == "concat" || step.callee == "split") return Concat(step, exe, name);
  if (IsCrossEntropy(step)) return CrossEntropy(step, exe, name);
  return Spec();
}

}  // namespace

Status ReplaceLibraryStepsWithKernels(LoweredPlan& lowered) {
  Executable& exe = lowered.executable;
  std::vector<Step> steps;
  std::vector<Step> first;  // checks of fed or constant labels: at the start of the run
  std::set<std::pair<int, int64_t>> checked;          // (labels, classes) of fixed labels checked
  std::set<std::pair<int, int64_t>> checked_indices;  // (indices, axis size) of fed ones checked
  const std::map<int, int> fixed_copies = CopiesOfFixed(exe);  // before the steps move
  for (size_t i = 0; i < exe.steps.size(); ++i) {
    Step& step = exe.steps[i];
    const std::string name = step.callee + std::to_string(i);
    // The kernel sees its scratch buffers as outputs after the step's own; they are dropped
    // again when no kernel replaces the step.
    Step with_scratch = step;
    for (const TensorType& type : ScratchOutputs(step, exe)) {
      BufferDesc scratch;
      scratch.type = type;
      scratch.tensor = step.node.name + ":scratch" + std::to_string(with_scratch.outputs.size());
      scratch.op = step.node.op;
      with_scratch.outputs.push_back(static_cast<int>(exe.buffers.size()));
      exe.buffers.push_back(std::move(scratch));
    }
    Result<std::optional<KernelSpec>> kernel = LibraryStepKernel(with_scratch, exe, name);
    if (!kernel.ok() || !*kernel) {
      exe.buffers.resize(exe.buffers.size() - (with_scratch.outputs.size() - step.outputs.size()));
      if (!kernel.ok()) return kernel.error();
      steps.push_back(std::move(step));
      continue;
    }
    step = std::move(with_scratch);
    if (IsCrossEntropy(step)) {
      // The labels are checked where they are (on the host when they are a feed) before the
      // kernel reads with them: computed labels just before, a feed or constant (or a Reshape of
      // one) once, when the run starts (the loss and its gradient share them; no host step then
      // lies between device steps, which would keep the plan from being captured as a CUDA
      // graph).
      const int source = FixedSource(exe, fixed_copies, step.inputs[1]);
      const bool fixed = source >= 0;
      const int labels = fixed ? source : step.inputs[1];
      const int64_t classes = exe.buffers[step.inputs[0]].type.shape[1];
      if (!fixed || checked.insert({labels, classes}).second) {
        Step check;
        check.kind = Step::Kind::kLibrary;
        check.callee = "check_labels";
        check.inputs = {labels};
        check.attrs.Set("classes", classes);
        check.node = step.node;
        (fixed ? first : steps).push_back(std::move(check));
      }
    }
    // Fed indices of a Gather kernel are checked once, when the run starts.
    if (std::optional<Step> check = IndicesCheck(step, exe)) {
      const int64_t axis = check->attrs.GetInt("axis").value();
      const int64_t size = check->attrs.GetInts("data").value()[axis];
      if (checked_indices.insert({check->inputs[0], size}).second)
        first.push_back(std::move(*check));
    }
    std::optional<Step> as_library =
        step.kind == Step::Kind::kReference ? AsLibraryStep(step, exe) : std::nullopt;
    if (as_library) step.attrs = as_library->attrs;  // the routine's, which the kernel computes
    step.attrs.Set("library", as_library                          ? as_library->callee
                              : step.kind == Step::Kind::kLibrary ? step.callee
                                                                  : step.node.op);
    step.kind = Step::Kind::kKernel;
    step.callee = (*kernel)->name;
    step.rows = (*kernel)->shape[0];
    lowered.kernels.push_back(std::move(**kernel));
    steps.push_back(std::move(step));
  }
  first.insert(first.end(), std::make_move_iterator(steps.begin()),
               std::make_move_iterator(steps.end()));
  exe.steps = std::move(first);
  return OkStatus();
}

}  // namespace kiln::compiler
