// Library steps "conv2d", "conv2d_backprop_input", "conv2d_backprop_filter": oneDNN convolutions
// over f32 or bf16 buffers, x/y NCHW or in the buffer's layout (runtime/cpu/layouts.h), w OIHW
// (or GOIHW with groups).
// bf16 steps compute in bf16 (float32 accumulation) where oneDNN has a native bf16 convolution
// for this CPU (AVX-512 BF16, AMX); elsewhere (AVX2) oneDNN 2.6 has none, and they compute in f32
// with the bf16 operands converted by the reorders below. Each primitive is created once, at
// load, with format_tag::any so oneDNN picks its fastest (blocked) layouts; operands whose buffers
// are in another layout are reordered into them and results back in every run, using scratch
// memory allocated at load; constant weights and biases (frozen graphs, deployed modules) are
// reordered once, at load, and variable ones once per version of the variable. Forward f32 3 x 3
// convolutions whose weights the plan does not change run as Winograd F(2x2, 3x3) where that is
// faster (SuitsWinograd below). The compiler's
// layout pass (compiler/layout_assignment.h) gives activations the primitives' layouts where it
// can, so that most of those reorders vanish. Attributes: strides, pads [top, left, bottom, right],
// dilations, groups.
//
// A "conv2d" step may carry the epilogue the compiler fused into it (compiler/epilogue_fusion.h):
// attribute "bias" (1: inputs[2] is a bias [C] of y's dtype) and "post_ops" (1: sum, whose operand
// is the next input, a tensor of the output's type; 2: relu; 4: clip to the attribute "clip",
// [min, max] per clip; 5: a depthwise 3 x 3 convolution of the result, padding 1, stride
// "depthwise_stride", weights [C, 1, 3, 3] in the input after the bias and, with
// "depthwise_bias" 1, its bias after them; y is then its output), applied in order as oneDNN
// post-ops (5: oneDNN's fused 1x1 + depthwise convolution).
// The sum post-op accumulates into dst, so the residual is reordered into dst before the primitive
// (unless the memory plan put dst on the residual's own bytes).
#include <omp.h>

#include <cstdlib>
#include <dnnl.hpp>
#include <functional>
#include <optional>

#include "runtime/cpu/conv_step.h"
#include "runtime/cpu/library_steps.h"
#include "runtime/cpu/onednn.h"
#include "runtime/cpu/onednn_filter_grad_matmul.h"
#include "runtime/invariant_steps.h"

namespace kiln::cpu {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

enum class ConvKind { kForward, kBackwardInput, kBackwardFilter };

// One operand: the plan's plain buffer, and the primitive's layout when it differs.
struct Operand {
  int buffer = -1;
  int arg = 0;  // DNNL_ARG_*
  bool output = false;
  memory::desc plain;
  memory::desc inner;
  std::optional<dnnl::reorder> to_inner, to_plain;
  mutable memory scratch;  // dnnl::reorder::execute takes non-const memory
  bool packed = false;     // a constant input reordered into `scratch` once, at load
  // A variable input (weights imported from ONNX, or trained) whose reorder into `scratch` is
  // kept while the variable keeps this version (StepEnv::versions) at this address.
  mutable uint64_t kept_version = 0;
  mutable const void* kept_source = nullptr;
};

// The sum post-op's operand: copied (reordered) into the primitive's dst before it runs.
struct Residual {
  int buffer = -1;
  memory::desc plain;
  dnnl::reorder to_dst;
};

class ConvRunner : public StepRunner {
 public:
  ConvRunner(dnnl::primitive primitive, std::vector<Operand> operands,
             std::optional<Residual> residual)
      : primitive_(std::move(primitive)),
        operands_(std::move(operands)),
        residual_(std::move(residual)) {}

  int64_t kept_bytes() const override {
    int64_t bytes = 0;
    for (const Operand& op : operands_)
      if (op.to_inner || op.to_plain) bytes += static_cast<int64_t>(op.inner.get_size());
    return bytes;
  }

  Status Run(StepEnv& env) const override {
    omp_set_num_threads(env.threads);
    try {
      dnnl::stream stream(OnednnEngine());
      std::unordered_map<int, memory> args;
      std::vector<std::pair<const Operand*, memory>> outputs;
      for (const Operand& op : operands_) {
        memory user(op.plain, OnednnEngine(), env.data[op.buffer]);
        if (!op.to_inner && !op.to_plain) {
          args[op.arg] = user;
          continue;
        }
        if (!op.output && !op.packed) {
          const uint64_t version = env.version(op.buffer);
          if (version == 0 || version != op.kept_version || env.data[op.buffer] != op.kept_source)
            op.to_inner->execute(stream, user, op.scratch);
          op.kept_version = version, op.kept_source = env.data[op.buffer];
        }
        args[op.arg] = op.scratch;
        if (op.output) outputs.push_back({&op, user});
      }
      // The memory plan may have placed dst on the residual (same bytes, same layout): then the
      // residual is in dst already.
      if (residual_) {
        memory& dst = args[DNNL_ARG_DST];
        if (!(dst.get_data_handle() == env.data[residual_->buffer] &&
              dst.get_desc() == residual_->plain)) {
          memory r(residual_->plain, OnednnEngine(), env.data[residual_->buffer]);
          residual_->to_dst.execute(stream, r, dst);
        }
      }
      primitive_.execute(stream, args);
      for (auto& [op, user] : outputs) op->to_plain->execute(stream, op->scratch, user);
      stream.wait();
    } catch (const dnnl::error& e) {
      return MakeError(ErrorCode::kInternal, "oneDNN convolution failed: ", e.what());
    }
    return OkStatus();
  }

 private:
  dnnl::primitive primitive_;
  std::vector<Operand> operands_;
  std::optional<Residual> residual_;
};

// The forward epilogue of a "conv2d" step: whether it has a bias, and its post-ops.
struct Epilogue {
  bool bias = false;
  bool residual = false;
  bool depthwise = false;
  bool depthwise_bias = false;
  dnnl::primitive_attr attr;
};

Result<Epilogue> ReadEpilogue(const Step& step) {
  Epilogue e;
  if (step.callee != "conv2d" || !step.attrs.Has("post_ops")) return e;
  KILN_ASSIGN_OR_RETURN(int64_t bias, step.attrs.GetInt("bias"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> post_ops, step.attrs.GetInts("post_ops"));
  e.bias = bias != 0;
  dnnl::post_ops ops;
  size_t clips = 0;
  for (size_t i = 0; i < post_ops.size(); ++i) {
    if (post_ops[i] == 1 && i == 0) {
      e.residual = true;
      ops.append_sum(1.f);
    } else if (post_ops[i] == 2) {
      ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
    } else if (post_ops[i] == 4) {
      KILN_ASSIGN_OR_RETURN(std::vector<double> clip, step.attrs.GetFloats("clip"));
      if (clip.size() < 2 * (clips + 1))
        return MakeError(ErrorCode::kInternal, "conv2d: clip needs [min, max] per clip post-op");
      ops.append_eltwise(1.f, dnnl::algorithm::eltwise_clip, static_cast<float>(clip[2 * clips]),
                         static_cast<float>(clip[2 * clips + 1]));
      ++clips;
    } else if (post_ops[i] == 5 && !e.depthwise && !e.residual) {
      KILN_ASSIGN_OR_RETURN(int64_t stride, step.attrs.GetInt("depthwise_stride"));
      KILN_ASSIGN_OR_RETURN(int64_t dw_bias, step.attrs.GetInt("depthwise_bias"));
      if (stride != 1 && stride != 2)
        return MakeError(ErrorCode::kInternal, "conv2d: depthwise stride ", stride);
      e.depthwise = true;
      e.depthwise_bias = dw_bias != 0;
      const auto f32 = memory::data_type::f32;
      ops.append_dw(f32, e.depthwise_bias ? f32 : memory::data_type::undef, f32, 3, stride, 1, 0,
                    {});
    } else {
      return MakeError(ErrorCode::kInternal, "conv2d: unknown post-op ", post_ops[i]);
    }
  }
  e.attr.set_post_ops(ops);
  const size_t inputs = 2 + e.bias + e.depthwise + e.depthwise_bias + e.residual;
  if (step.inputs.size() != inputs)
    return MakeError(ErrorCode::kInternal, "conv2d: its epilogue needs ", inputs,
                     " inputs, the step has ", step.inputs.size());
  return e;
}

// Scratch memory and reorders for an operand whose buffer is not in the primitive's format.
void Prepare(Operand& op) {
  if (op.inner == op.plain) return;
  op.scratch = memory(op.inner, OnednnEngine());
  if (op.output)
    op.to_plain = dnnl::reorder(op.scratch, memory(op.plain, OnednnEngine(), nullptr));
  else
    op.to_inner = dnnl::reorder(memory(op.plain, OnednnEngine(), nullptr), op.scratch);
}

// A step read and checked, with the primitive descriptors of its computation in `compute`: each
// operand's buffer format (`plain`: dense, or the buffer's layout) and the primitive's (`inner`).
struct ConvSetup {
  Operand x, w, y, b;
  Operand dw_w, dw_b;  // a fused depthwise convolution's weights and bias
  std::optional<Residual> residual;
  std::optional<dnnl::convolution_forward::primitive_desc> forward;
  std::optional<dnnl::convolution_backward_data::primitive_desc> backward_data;
  std::optional<dnnl::convolution_backward_weights::primitive_desc> backward_weights;
};

// Whether the f32 forward convolutions (without groups) of this plan compute activations whose
// channels are a multiple of 16 in nChw16c rather than in oneDNN's own choice: in inference plans
// (no convolution gradient) on AVX-512. oneDNN 2.6 picks nhwc for its brgemm 1 x 1 convolutions
// there, but its fused 1 x 1 + depthwise kernel takes nChw16c only, so a MobileNet would reorder
// at every block boundary; in one layout throughout it ran 16.1 -> 15.7 ms without the depthwise
// fusion and 14.4 with it (8 x 224², Zen 5, 2 threads), and ResNet-18 and -50 as fast as before.
bool PrefersBlocked16(const Executable& exe) {
  static const bool avx512 = dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core;
  if (!avx512) return false;
  for (const Step& step : exe.steps)
    if (step.callee == "conv2d_backprop_input" || step.callee == "conv2d_backprop_filter")
      return false;
  return true;
}

// The setup of the step computing in `compute` (f32, or bf16 for bf16 buffers). A bf16 primitive
// that oneDNN cannot create, or offers only as its slow reference implementation, is
// kUnimplemented, so that the caller falls back to f32.
// With `honor_layouts`, the primitive computes activations whose buffers have a layout in that
// layout (no reorder), instead of the one oneDNN would pick.
Result<ConvSetup> SetUpConv(const Step& step, const Executable& exe, ConvKind kind,
                            memory::data_type compute, bool honor_layouts, dnnl::algorithm algo) {
  if (step.inputs.size() < 2 || step.outputs.size() != 1)
    return MakeError(ErrorCode::kInternal, step.callee, " takes 2-4 inputs and 1 output");
  KILN_ASSIGN_OR_RETURN(Epilogue epilogue, ReadEpilogue(step));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> strides, step.attrs.GetInts("strides"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> pads, step.attrs.GetInts("pads"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> dilations, step.attrs.GetInts("dilations"));
  KILN_ASSIGN_OR_RETURN(int64_t groups, step.attrs.GetInt("groups"));
  if (strides.size() != 2 || pads.size() != 4 || dilations.size() != 2 || groups < 1)
    return MakeError(ErrorCode::kInternal, step.callee, ": malformed attributes");
  // x, w, y by role, whichever direction the step computes.
  const int x_id = kind == ConvKind::kBackwardInput ? step.outputs[0] : step.inputs[0];
  const int w_id = kind == ConvKind::kBackwardFilter ? step.outputs[0] : step.inputs[1];
  const int y_id = kind == ConvKind::kForward         ? step.outputs[0]
                   : kind == ConvKind::kBackwardInput ? step.inputs[0]
                                                      : step.inputs[1];
  const Shape& xs = exe.buffers[x_id].type.shape;
  const Shape& ws = exe.buffers[w_id].type.shape;
  const Shape& ys = exe.buffers[y_id].type.shape;
  const DType dtype = exe.buffers[y_id].type.dtype;
  for (int id : {x_id, w_id, y_id})
    if ((dtype != f32 && dtype != bf16) || exe.buffers[id].type.dtype != dtype ||
        exe.buffers[id].type.shape.rank() != 4)
      return MakeError(ErrorCode::kInternal, step.callee,
                       ": needs f32 or bf16 rank-4 operands of one dtype, got ",
                       exe.buffers[id].type.ToString());
  memory::dims w_dims = OnednnDims(ws);
  Tag w_tag = Tag::oihw;
  if (groups > 1) {
    w_dims = {groups, ws[0] / groups, ws[1], ws[2], ws[3]};
    w_tag = Tag::goihw;
  }
  const memory::dims s = OnednnDims(Shape(strides)), d = {dilations[0] - 1, dilations[1] - 1};
  const memory::dims pl = {pads[0], pads[1]}, pr = {pads[2], pads[3]};
  auto compute_desc = [compute](const memory::dims& dims, Tag tag) {
    return memory::desc(dims, compute, tag);
  };
  const bool blocked16 = kind == ConvKind::kForward && compute == memory::data_type::f32 &&
                         groups == 1 && PrefersBlocked16(exe);
  auto activation = [&](int id, const Shape& shape) {
    if (honor_layouts && !exe.buffers[id].layout.empty())
      return BufferMemoryDesc(exe.buffers[id], OnednnDims(shape), compute, Tag::any);
    if (blocked16 && shape[1] % 16 == 0) return compute_desc(OnednnDims(shape), Tag::nChw16c);
    return compute_desc(OnednnDims(shape), Tag::any);
  };
  // With a fused depthwise convolution, the primitive is described by the 1 x 1 convolution's
  // output (in oneDNN's layout) and writes the depthwise one's: y.
  const Shape conv_out = epilogue.depthwise ? Shape{xs[0], ws[0], xs[2], xs[3]} : ys;
  memory::desc x_any = activation(x_id, xs);
  memory::desc y_any =
      epilogue.depthwise ? compute_desc(OnednnDims(conv_out), Tag::any) : activation(y_id, ys);
  memory::desc w_any = compute_desc(w_dims, Tag::any);
  const memory::data_type plain_type = OnednnType(dtype);
  // An operand's buffer as it lies in memory: dense in `tag`, or in the buffer's layout.
  auto buffer_desc = [&](int id, const memory::dims& dims, Tag tag) {
    return BufferMemoryDesc(exe.buffers[id], dims, plain_type, tag);
  };
  auto operand = [&](int id, bool output, const memory::dims& dims, Tag tag) {
    Operand op;
    op.buffer = id;
    op.output = output;
    op.plain = buffer_desc(id, dims, tag);
    return op;
  };
  ConvSetup c;
  c.x = operand(x_id, kind == ConvKind::kBackwardInput, OnednnDims(xs), Tag::nchw);
  c.w = operand(w_id, kind == ConvKind::kBackwardFilter, w_dims, w_tag);
  c.y = operand(y_id, kind == ConvKind::kForward, OnednnDims(ys), Tag::nchw);
  const memory::dims c_dims = {ys[1]};
  if (epilogue.bias) {
    c.b = operand(step.inputs[2], false, c_dims, Tag::x);
    c.b.arg = DNNL_ARG_BIAS;
    if (!(exe.buffers[c.b.buffer].type == TensorType{dtype, Shape{ys[1]}}))
      return MakeError(ErrorCode::kInternal, "conv2d: the bias must be ", DTypeName(dtype), "[",
                       ys[1], "], got ", exe.buffers[c.b.buffer].type.ToString());
  }
  if (epilogue.depthwise) {
    const int dw_w = step.inputs[2 + epilogue.bias];
    const Shape& dws = exe.buffers[dw_w].type.shape;
    if (compute != memory::data_type::f32 ||
        !(exe.buffers[dw_w].type == TensorType{dtype, Shape{ws[0], 1, 3, 3}}))
      return MakeError(ErrorCode::kInternal, "conv2d: the depthwise weights must be f32[", ws[0],
                       ", 1, 3, 3], got ", exe.buffers[dw_w].type.ToString());
    c.dw_w = operand(dw_w, false, {dws[0], 1, 1, 3, 3}, Tag::goihw);
    c.dw_w.arg = DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_WEIGHTS;
    if (epilogue.depthwise_bias) {
      c.dw_b = operand(step.inputs[3 + epilogue.bias], false, c_dims, Tag::x);
      c.dw_b.arg = DNNL_ARG_ATTR_POST_OP_DW | DNNL_ARG_BIAS;
      if (!(exe.buffers[c.dw_b.buffer].type == TensorType{dtype, Shape{ws[0]}}))
        return MakeError(ErrorCode::kInternal, "conv2d: the depthwise bias must be ",
                         DTypeName(dtype), "[", ws[0], "], got ",
                         exe.buffers[c.dw_b.buffer].type.ToString());
    }
  }
  if (epilogue.residual) {
    const int r_id = step.inputs.back();
    if (!(exe.buffers[r_id].type == exe.buffers[y_id].type))
      return MakeError(ErrorCode::kInternal, "conv2d: the residual must be ",
                       exe.buffers[y_id].type.ToString(), ", got ",
                       exe.buffers[r_id].type.ToString());
    c.residual = Residual{r_id, buffer_desc(r_id, OnednnDims(ys), Tag::nchw), {}};
  }
  try {
    const auto prop = kind == ConvKind::kForward ? dnnl::prop_kind::forward_inference
                                                 : dnnl::prop_kind::forward_training;
    c.forward.emplace(
        epilogue.bias
            ? dnnl::convolution_forward::desc(prop, algo, x_any, w_any,
                                              compute_desc(c_dims, Tag::x), y_any, s, d, pl, pr)
            : dnnl::convolution_forward::desc(prop, algo, x_any, w_any, y_any, s, d, pl, pr),
        epilogue.attr, OnednnEngine());
    auto refuse_reference = [&](const std::string& impl) -> Status {
      if ((compute == memory::data_type::bf16 || honor_layouts) && impl.rfind("ref", 0) == 0)
        return MakeError(ErrorCode::kUnimplemented, step.callee, ": oneDNN has only its reference ",
                         compute == memory::data_type::bf16 ? "bf16 " : "",
                         "convolution here for these layouts (", impl, ")");
      return OkStatus();
    };
    KILN_RETURN_IF_ERROR(refuse_reference(c.forward->impl_info_str()));
    if (kind == ConvKind::kForward) {
      c.x.arg = DNNL_ARG_SRC, c.w.arg = DNNL_ARG_WEIGHTS, c.y.arg = DNNL_ARG_DST;
      c.x.inner = c.forward->src_desc(), c.w.inner = c.forward->weights_desc();
      c.y.inner = c.forward->dst_desc();
      if (epilogue.bias) c.b.inner = c.forward->bias_desc();
      if (epilogue.depthwise) {
        if (c.y.inner.dims() != OnednnDims(ys))
          return MakeError(ErrorCode::kInternal, step.callee, ": the fused depthwise output is ",
                           Shape(c.y.inner.dims()).ToString(), ", the step's y ", ys.ToString());
        c.dw_w.inner = c.forward->query_md(dnnl::query::exec_arg_md, c.dw_w.arg);
        if (epilogue.depthwise_bias)
          c.dw_b.inner = c.forward->query_md(dnnl::query::exec_arg_md, c.dw_b.arg);
      }
    } else if (kind == ConvKind::kBackwardInput) {
      c.backward_data.emplace(
          dnnl::convolution_backward_data::desc(algo, x_any, w_any, y_any, s, d, pl, pr),
          OnednnEngine(), *c.forward);
      KILN_RETURN_IF_ERROR(refuse_reference(c.backward_data->impl_info_str()));
      c.x.arg = DNNL_ARG_DIFF_SRC, c.w.arg = DNNL_ARG_WEIGHTS, c.y.arg = DNNL_ARG_DIFF_DST;
      c.x.inner = c.backward_data->diff_src_desc(), c.w.inner = c.backward_data->weights_desc();
      c.y.inner = c.backward_data->diff_dst_desc();
    } else {
      c.backward_weights.emplace(
          dnnl::convolution_backward_weights::desc(algo, x_any, w_any, y_any, s, d, pl, pr),
          OnednnEngine(), *c.forward);
      KILN_RETURN_IF_ERROR(refuse_reference(c.backward_weights->impl_info_str()));
      c.x.arg = DNNL_ARG_SRC, c.w.arg = DNNL_ARG_DIFF_WEIGHTS, c.y.arg = DNNL_ARG_DIFF_DST;
      c.x.inner = c.backward_weights->src_desc();
      c.w.inner = c.backward_weights->diff_weights_desc();
      c.y.inner = c.backward_weights->diff_dst_desc();
    }
  } catch (const dnnl::error& e) {
    return MakeError(
        compute == memory::data_type::bf16 ? ErrorCode::kUnimplemented : ErrorCode::kInternal,
        step.callee, " ", xs.ToString(), " * ", ws.ToString(), " -> ", ys.ToString(),
        ": oneDNN refused it: ", e.what());
  }
  return c;
}

bool WinogradDisabled() {
  static const bool disabled = [] {
    const char* env = std::getenv("KILN_WINOGRAD");
    return env && std::string(env) == "0";
  }();
  return disabled;
}

// ConvRunsWinograd for a step computing in `compute` (a bf16 step may compute in f32). Winograd's
// weight transform is kept like the direct convolution's weight reorder, and would cost about as
// much as the convolution if paid on every run: hence only weights the plan does not change.
// Measured with oneDNN 2.6 on AVX-512 (Zen 5, 2 threads, the 3 x 3 layers of ResNets at batch
// 1-32): 0.41-0.83 of the direct convolution's time from 32 channels up, 1.1-3.8 below (16 and 3
// channels); ResNet-18 at batch 8 ran 60 -> 48 ms, ResNet-50 at batch 1 19.0 -> 17.6 ms.
bool SuitsWinograd(const Step& step, const Executable& exe, memory::data_type compute) {
  if (WinogradDisabled() || compute != memory::data_type::f32) return false;
  Result<ConvStep> conv = ReadConvStep(step, exe);
  if (!conv.ok() || conv->kind != ConvStep::Kind::kForward) return false;
  const ConvStep& c = *conv;
  return c.strides == std::array<int64_t, 2>{1, 1} && c.dilations == std::array<int64_t, 2>{1, 1} &&
         c.groups == 1 && c.w_dims[2] == 3 && c.w_dims[3] == 3 && c.w_dims[0] >= 32 &&
         c.w_dims[1] >= 32 && KeptAcrossRuns(exe, c.w);
}

}  // namespace

bool ConvRunsWinograd(const Step& step, const Executable& exe) {
  Result<ConvStep> conv = ReadConvStep(step, exe);
  return conv.ok() && conv->dtype == f32 && SuitsWinograd(step, exe, memory::data_type::f32);
}

namespace {

// The primitive for a step: Winograd where it suits, else (or where oneDNN refuses it) direct; in
// the buffers' layouts if oneDNN computes well in them, else in its own choice (and reorders).
Result<ConvSetup> ChooseConv(const Step& step, const Executable& exe, ConvKind kind,
                             memory::data_type compute, bool honor_layouts) {
  std::vector<dnnl::algorithm> algorithms = {dnnl::algorithm::convolution_direct};
  if (SuitsWinograd(step, exe, compute))
    algorithms.insert(algorithms.begin(), dnnl::algorithm::convolution_winograd);
  std::vector<bool> honoring = {honor_layouts};
  if (honor_layouts) honoring.push_back(false);
  Result<ConvSetup> setup = MakeError(ErrorCode::kInternal, step.callee, ": no algorithm tried");
  for (dnnl::algorithm algorithm : algorithms)
    for (bool honor : honoring) {
      setup = SetUpConv(step, exe, kind, compute, honor, algorithm);
      if (setup.ok()) return setup;
    }
  return setup;  // direct's error
}

Result<std::unique_ptr<StepRunner>> MakeConv(const Step& step, const Executable& exe, ConvKind kind,
                                             memory::data_type compute) {
  KILN_ASSIGN_OR_RETURN(ConvSetup c, ChooseConv(step, exe, kind, compute, /*honor_layouts=*/true));
  try {
    for (Operand* op : {&c.x, &c.w, &c.y, &c.b, &c.dw_w, &c.dw_b})
      if (op->buffer >= 0) Prepare(*op);
    // Constant weights and bias (a frozen graph, a deployed module) never change: reordered into
    // the primitive's layout once, here, instead of on every run (as inference engines pre-pack).
    for (Operand* op : {&c.w, &c.b, &c.dw_w, &c.dw_b}) {
      if (op->buffer < 0 || op->output || !op->to_inner) continue;
      const BufferDesc& b = exe.buffers[op->buffer];
      if (b.kind != BufferDesc::Kind::kConstant) continue;
      dnnl::stream stream(OnednnEngine());
      memory constant(op->plain, OnednnEngine(),
                      const_cast<void*>(exe.constants[b.index].raw_data()));
      op->to_inner->execute(stream, constant, op->scratch);
      stream.wait();
      op->packed = true;
    }
    if (c.residual)
      c.residual->to_dst = dnnl::reorder(memory(c.residual->plain, OnednnEngine(), nullptr),
                                         memory(c.y.inner, OnednnEngine(), nullptr));
    dnnl::primitive primitive =
        c.forward && kind == ConvKind::kForward
            ? dnnl::primitive(dnnl::convolution_forward(*c.forward))
        : c.backward_data
            ? dnnl::primitive(dnnl::convolution_backward_data(*c.backward_data))
            : dnnl::primitive(dnnl::convolution_backward_weights(*c.backward_weights));
    // Inputs first: their reorders run before the primitive.
    std::vector<Operand> operands;
    for (Operand* op : {&c.x, &c.w, &c.b, &c.dw_w, &c.dw_b, &c.y})
      if (!op->output && op->buffer >= 0) operands.push_back(*op);
    for (Operand* op : {&c.x, &c.w, &c.y})
      if (op->output) operands.push_back(*op);
    return std::unique_ptr<StepRunner>(
        new ConvRunner(std::move(primitive), std::move(operands), std::move(c.residual)));
  } catch (const dnnl::error& e) {
    return MakeError(ErrorCode::kInternal, step.callee,
                     ": oneDNN refused its reorders: ", e.what());
  }
}

ConvKind KindOf(const Step& step) {
  return step.callee == "conv2d"                  ? ConvKind::kForward
         : step.callee == "conv2d_backprop_input" ? ConvKind::kBackwardInput
                                                  : ConvKind::kBackwardFilter;
}

// Whether oneDNN 2.6's bf16 kernel for a weight gradient is slower than its f32 one with the
// conversions: so few output positions (at most 2 x 2; measured on AVX-512 BF16, Zen 5, ResNet-18
// on 32 x 32 images, batch 32: 1 x 1 outputs 1.6 ms in bf16 against 0.9 in f32, 2 x 2 0.7-1.0
// against 0.5-0.75; from 4 x 4 on bf16 is as fast or faster), or fewer than 16 input channels (a
// network's first layer, 3 x 7 x 7 taps: 1.34 ms in bf16 against 0.55 in f32 on a Xeon with
// AMX). Where oneDNN has a native bf16 matmul, the first kind runs as one
// (onednn_filter_grad_matmul.h) before this is asked.
bool SlowInBf16(const Step& step, const Executable& exe, ConvKind kind) {
  if (kind != ConvKind::kBackwardFilter || step.inputs.size() < 2 ||
      step.inputs[1] >= static_cast<int>(exe.buffers.size()))
    return false;
  const Shape& x = exe.buffers[step.inputs[0]].type.shape;
  const Shape& dy = exe.buffers[step.inputs[1]].type.shape;
  return dy.rank() == 4 && x.rank() == 4 && (dy[2] * dy[3] <= kMostOutputPositions || x[1] < 16);
}

// bf16 steps natively where oneDNN can (and it is faster), else in f32 (the reorders convert).
template <typename T>
Result<T> InComputeType(const Step& step, const Executable& exe,
                        const std::function<Result<T>(memory::data_type)>& make) {
  const bool is_bf16 = !step.outputs.empty() &&
                       step.outputs[0] < static_cast<int>(exe.buffers.size()) &&
                       exe.buffers[step.outputs[0]].type.dtype == bf16;
  if (is_bf16 && !SlowInBf16(step, exe, KindOf(step))) {
    Result<T> native = make(memory::data_type::bf16);
    if (native.ok() || native.error().code() != ErrorCode::kUnimplemented) return native;
  }
  return make(memory::data_type::f32);
}

}  // namespace

Result<std::unique_ptr<StepRunner>> MakeConvStep(const Step& step, const Executable& exe) {
  const ConvKind kind = KindOf(step);
  if (SuitsIm2colFilterGrad(step, exe)) {
    Result<std::unique_ptr<StepRunner>> product = MakeIm2colFilterGradStep(step, exe);
    if (product.ok() || product.error().code() != ErrorCode::kUnimplemented) return product;
  }
  return InComputeType<std::unique_ptr<StepRunner>>(
      step, exe, [&](memory::data_type compute) { return MakeConv(step, exe, kind, compute); });
}

Result<std::vector<std::string>> PreferredConvLayouts(const Step& step, const Executable& exe) {
  const ConvKind kind = KindOf(step);
  KILN_ASSIGN_OR_RETURN(ConvSetup c, InComputeType<ConvSetup>(step, exe, [&](memory::data_type t) {
                          return ChooseConv(step, exe, kind, t, /*honor_layouts=*/false);
                        }));
  // By operand position (inputs, then outputs); a buffer may be two operands (x its own residual).
  const size_t in = step.inputs.size();
  std::vector<std::string> layouts(in + step.outputs.size());
  if (kind == ConvKind::kForward) {
    layouts[0] = LayoutName(c.x.inner), layouts[1] = LayoutName(c.w.inner);
    if (c.b.buffer >= 0) layouts[2] = LayoutName(c.b.inner);
    const size_t dw = c.b.buffer >= 0 ? 3 : 2;  // the depthwise weights' (and bias') position
    if (c.dw_w.buffer >= 0) layouts[dw] = LayoutName(c.dw_w.inner);
    if (c.dw_b.buffer >= 0) layouts[dw + 1] = LayoutName(c.dw_b.inner);
    if (c.residual) layouts[in - 1] = LayoutName(c.y.inner);  // it is copied into dst
    layouts[in] = LayoutName(c.y.inner);
  } else if (kind == ConvKind::kBackwardInput) {  // dy, w (, x_like) -> dx
    layouts[0] = LayoutName(c.y.inner), layouts[1] = LayoutName(c.w.inner);
    layouts[in] = LayoutName(c.x.inner);
  } else {  // x, dy (, w_like) -> dw
    layouts[0] = LayoutName(c.x.inner), layouts[1] = LayoutName(c.y.inner);
    layouts[in] = LayoutName(c.w.inner);
  }
  return layouts;
}

}  // namespace kiln::cpu
