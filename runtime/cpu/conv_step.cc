#include "runtime/cpu/conv_step.h"

#include <string>

namespace kiln::cpu {
namespace {

Error Malformed(const Step& step, const std::string& what) {
  return MakeError(ErrorCode::kInternal, step.callee, " '", step.node.name, "': ", what);
}

std::string Routine(const Step& step) {
  if (step.kind == Step::Kind::kKernel)
    return step.attrs.Has("library") ? step.attrs.GetString("library").value() : std::string();
  return step.kind == Step::Kind::kLibrary ? step.callee : std::string();
}

}  // namespace

bool IsConvStep(const Step& step) {
  const std::string routine = Routine(step);
  return routine == "conv2d" || routine == "conv2d_backprop_input" ||
         routine == "conv2d_backprop_filter";
}

Result<ConvStep> ReadConvStep(const Step& step, const Executable& exe) {
  ConvStep c;
  const std::string routine = Routine(step);
  if (routine == "conv2d_backprop_input") c.kind = ConvStep::Kind::kBackwardData;
  if (routine == "conv2d_backprop_filter") c.kind = ConvStep::Kind::kBackwardFilter;
  if (!IsConvStep(step) || step.inputs.size() < 2 || step.outputs.size() != 1)
    return Malformed(step, "not a convolution step of two or more inputs and one output");
  switch (c.kind) {
    case ConvStep::Kind::kForward:
      c.x = step.inputs[0], c.w = step.inputs[1], c.y = step.outputs[0];
      break;
    case ConvStep::Kind::kBackwardData:
      c.x = step.outputs[0], c.w = step.inputs[1], c.y = step.inputs[0];
      break;
    case ConvStep::Kind::kBackwardFilter:
      c.x = step.inputs[0], c.w = step.outputs[0], c.y = step.inputs[1];
      break;
  }
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> strides, step.attrs.GetInts("strides"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> pads, step.attrs.GetInts("pads"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> dilations, step.attrs.GetInts("dilations"));
  KILN_ASSIGN_OR_RETURN(c.groups, step.attrs.GetInt("groups"));
  if (strides.size() != 2 || pads.size() != 4 || dilations.size() != 2 || c.groups < 1)
    return Malformed(step, "malformed attributes");
  for (int d = 0; d < 2; ++d) {
    c.strides[d] = strides[d], c.dilations[d] = dilations[d];
    if (c.strides[d] < 1 || c.dilations[d] < 1) return Malformed(step, "malformed attributes");
  }
  for (int d = 0; d < 4; ++d) c.pads[d] = pads[d];
  const TensorType &x = exe.buffers[c.x].type, &w = exe.buffers[c.w].type,
                   &y = exe.buffers[c.y].type;
  c.dtype = y.dtype;
  if (x.dtype != c.dtype || w.dtype != c.dtype)
    return Malformed(step, "operands of different dtypes");
  if (x.shape.rank() != 4 || w.shape.rank() != 4 || y.shape.rank() != 4 || x.shape[1] % c.groups ||
      y.shape[1] % c.groups || w.shape[0] != y.shape[1] || w.shape[1] * c.groups != x.shape[1] ||
      x.shape[0] != y.shape[0])
    return Malformed(step, "operand shapes do not fit a convolution");
  for (int d = 0; d < 4; ++d) c.x_dims[d] = x.shape[d], c.w_dims[d] = w.shape[d];
  for (int d = 0; d < 4; ++d) c.y_dims[d] = y.shape[d];
  if (c.kind != ConvStep::Kind::kForward || !step.attrs.Has("post_ops")) {
    if (c.kind == ConvStep::Kind::kForward && step.inputs.size() != 2)
      return Malformed(step, "its epilogue does not match its inputs");
    return c;
  }
  KILN_ASSIGN_OR_RETURN(int64_t bias, step.attrs.GetInt("bias"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> post_ops, step.attrs.GetInts("post_ops"));
  bool residual = false, depthwise = false;
  int64_t depthwise_bias = 0;
  for (size_t i = 0; i < post_ops.size(); ++i) {
    if (post_ops[i] == 1 && i == 0) {
      residual = true;
    } else if (post_ops[i] == 2) {
      c.relu = true;
    } else if (post_ops[i] == 4) {
      c.clip = true;
    } else if (post_ops[i] == 5 && !depthwise) {
      depthwise = true;
      KILN_ASSIGN_OR_RETURN(depthwise_bias, step.attrs.GetInt("depthwise_bias"));
    } else {
      return Malformed(step, "unknown post-op " + std::to_string(post_ops[i]));
    }
  }
  if (step.inputs.size() != 2u + (bias != 0) + depthwise + (depthwise_bias != 0) + residual)
    return Malformed(step, "its epilogue does not match its inputs");
  if (bias) c.bias = step.inputs[2];
  if (depthwise) c.depthwise_weights = step.inputs[2 + (bias != 0)];
  if (depthwise_bias) c.depthwise_bias = step.inputs[3 + (bias != 0)];
  if (residual) c.residual = step.inputs.back();
  if ((c.bias >= 0 && !(exe.buffers[c.bias].type == TensorType{c.dtype, Shape{y.shape[1]}})) ||
      (c.residual >= 0 && !(exe.buffers[c.residual].type == y)))
    return Malformed(step, "the bias or residual does not fit the output");
  return c;
}

}  // namespace kiln::cpu
