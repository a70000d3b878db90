// Epilogue fusion into library calls: the f32 or bf16 Conv2D of a plan absorbs the chain of nodes
// that only post-process its output, so that one oneDNN convolution
// (runtime/cpu/onednn_conv_step.cc, attributes "bias" and "post_ops") computes what took several
// steps and memory round trips:
//
//   Conv2D -> [BiasAdd axis 1]* -> [BatchNorm, inference, folded]* -> [Add residual] -> [Relu]*
//             -> [Clip]                                   (Clip: cpu plans only, `cpu_steps`)
//   Conv2D 1x1 -> [bias] -> [Relu]* -> [Clip] -> depthwise Conv2D 3x3 -> [BiasAdd] -> [Relu]*
//             -> [Clip]                                   (cpu plans only: MobileNet's blocks)
//   MatMul -> [BiasAdd, last axis]* -> [Relu]* | Gelu(tanh)   (any float, both operands of rank
//                                                              2: one gemm)
//
// The MatMul's "gemm" step (runtime/cpu/gemm_step.cc) fills its output with the bias and
// multiplies with beta = 1, then applies the Relu or GELU to the rows it just wrote (bf16 on
// oneDNN: its bias argument and relu or gelu_tanh post-op, onednn_matmul_step.cc; on a CUDA device
// cuBLASLt's RELU/GELU(_BIAS) epilogues, whose GELU is the tanh approximation: so only
// Gelu(approximate = "tanh") is fused, never the exact erf form).
//
// (BiasAdd and folded BatchNorm in any order; an Add right after them, or a Relu alone.)
//   - BiasAdd (axis 1, bias [C] of the output's dtype) becomes the convolution's bias argument; two
//   BiasAdds, or a
//     BiasAdd around a folded BatchNorm, combine only when their biases are known at compile time.
//   - BatchNorm with training=false whose four statistics and the convolution's weights are known
//     at compile time (frozen graphs) is folded: per output channel c, with
//     s = scale[c] / sqrt(var[c] + epsilon), w'[c] = w[c] * s and b'[c] = (b[c] - mean[c]) * s +
//     bias[c], computed in double and rounded to the weights' dtype once (this reassociates the
//     reference's arithmetic: results agree within that dtype's rounding, not bitwise).
//   - Add of another tensor of exactly the output's type (ResNet's residual) becomes a sum
//     post-op: the step reads the residual buffer as an extra input. At most one, first post-op.
//   - Relu becomes an eltwise post-op; for a MatMul, so does one Gelu(approximate = "tanh") as
//     the only activation.
//   - One float Clip (MobileNet's ReLU6) after a convolution becomes oneDNN's clip post-op, its
//     bounds in the step's attribute "clip" ([min, max] per Clip), when the plan's consumer
//     computes it (`cpu_steps`: the cpu backend; the CUDA backend's convolutions take no clip).
//   - In cpu plans, an f32 1 x 1 convolution (stride 1, no padding, no groups, no residual) whose
//     output, after its bias and activation, is the input of a depthwise 3 x 3 convolution
//     (groups = channels, stride 1 or 2, padding 1) takes that convolution as its post-op
//     kDepthwise (oneDNN's fused 1x1 + depthwise kernel: the wide intermediate tensor of
//     MobileNet's inverted residual blocks never goes to memory), and then its BiasAdd, Relus and
//     one Clip. The step's inputs gain the depthwise weights [C, 1, 3, 3] and its bias (attributes
//     "depthwise_stride" and "depthwise_bias"), before the residual, which stays last.
// Attention (cpu plans only): an f32 MatMul of scores, q k or q k^T (any batch dims), whose
// scores only an Add of a mask (f32, [Lq, Lk] for every matrix or the scores' own shape) and then
// a Softmax over the last axis read, and whose probabilities only a MatMul p v reads (not
// transposed), becomes one "attention" step (runtime/cpu/attention_step.cc): per matrix, the
// scores into a buffer that stays in cache, masked, softmaxed and multiplied by v, so that the
// [batch, Lq, Lk] scores and probabilities never go to memory and take no passes of their own
// (KILN_ATTENTION=0 turns it off).
//
// A node is absorbed only when the value it reads has that node as its one reader, is not
// fetched, and is no node's control input; so a value that a gradient op reads (Relu's gradient
// reads its input) is never hidden, and training graphs keep their pre-activations.
//
// Contract: `absorbed` maps every absorbed node to the Conv2D or MatMul that computes it; that
// node's step writes `output` (the last absorbed node's output 0) and no other absorbed value
// exists at run time. Every forward f32/bf16 Conv2D and every rank-2 float MatMul gets one decision
// line (fused what, or why not).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/static_types.h"
#include "ir/graph.h"
#include "runtime/executor.h"

namespace kiln::compiler {

// Post-ops of a "conv2d" or "gemm" step, in order (attribute "post_ops").
enum class PostOp : int64_t { kSum = 1, kRelu = 2, kGeluTanh = 3, kClip = 4, kDepthwise = 5 };

struct Epilogue {
  const Node* producer = nullptr;        // the Conv2D or MatMul
  std::vector<const Node*> absorbed;     // in chain order
  TensorRef output;                      // what the step writes
  std::optional<TensorRef> bias;         // a bias tensor of the plan, or
  std::optional<Tensor> folded_bias;     // one computed at compile time (f32[C])
  std::optional<Tensor> folded_weights;  // replaces the weights when a BatchNorm was folded
  std::optional<TensorRef> residual;     // the sum post-op's operand
  std::vector<PostOp> post_ops;
  std::vector<double> clip_bounds;  // [min, max] of each kClip, in order
  const Node* depthwise = nullptr;  // kDepthwise's Conv2D
  std::optional<TensorRef> depthwise_bias;
  int64_t depthwise_stride = 1;
  const Node* attention_values = nullptr;  // attention's p v MatMul (its producer: q k's)
  std::optional<TensorRef> attention_mask;
};

struct EpiloguePlan {
  std::map<std::string, Epilogue> by_producer;  // Conv2D/MatMul name -> its epilogue (non-empty)
  std::map<std::string, std::string> absorbed;  // absorbed node name -> Conv2D/MatMul name
  std::vector<std::string> decisions;
};

// `cpu_steps`: the plan is for the cpu backend, whose convolutions take clip and depthwise
// post-ops.
EpiloguePlan PlanEpilogues(const RunPlan& plan, const StaticInfo& info, bool cpu_steps = false);

}  // namespace kiln::compiler
