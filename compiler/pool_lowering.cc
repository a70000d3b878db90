#include "compiler/pool_lowering.h"

#include <algorithm>
#include <map>

#include "ir/op_registry.h"

namespace kiln::compiler {
namespace {

const std::map<std::string, std::string> kPoolRoutines = {{"MaxPool2D", "max_pool2d"},
                                                          {"AvgPool2D", "avg_pool2d"},
                                                          {"MaxPool2DGrad", "max_pool2d_grad"},
                                                          {"AvgPool2DGrad", "avg_pool2d_grad"}};

}  // namespace

bool HasPoolLowering(const std::string& op) { return kPoolRoutines.count(op) > 0; }

Status LowerPool(const Node& node, const StaticInfo& info, Step& step) {
  auto routine = kPoolRoutines.find(node.op);
  if (routine == kPoolRoutines.end())
    return MakeError(ErrorCode::kUnimplemented, "not a pooling op");
  const bool avg = node.op == "AvgPool2D" || node.op == "AvgPool2DGrad";
  // The unpooled tensor (x, or x_like) and the pooled one (y, or dy).
  const TensorRef x_ref = node.op == "AvgPool2DGrad" ? node.inputs[1] : node.inputs[0];
  const TensorType& x = info.types.at(x_ref);
  const TensorType& y = node.op == "MaxPool2DGrad"   ? info.types.at(node.inputs[1])
                        : node.op == "AvgPool2DGrad" ? info.types.at(node.inputs[0])
                                                     : info.types.at(TensorRef{node.name, 0});
  if (x.dtype != f32 && x.dtype != bf16 && x.dtype != f16)
    return MakeError(ErrorCode::kUnimplemented, "oneDNN pooling takes f32, bf16 and f16, not ",
                     DTypeName(x.dtype));
  if (!x.shape.IsFullyKnown() || !y.shape.IsFullyKnown() || x.shape.rank() != 4)
    return MakeError(ErrorCode::kUnimplemented, "shape not known at compile time");
  const AttrMap attrs = OpRegistry::Global().Find(node.op)->WithDefaults(node.attrs);
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> kernel, attrs.GetInts("kernel"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> strides, attrs.GetInts("strides"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> pads, attrs.GetInts("pads"));
  if (strides.empty()) strides = kernel;
  if (pads.empty()) pads = {0, 0, 0, 0};
  // oneDNN's bottom/right pad: the one for which its floor-mode output size is kiln's.
  std::vector<int64_t> onednn_pads = {pads[0], pads[1], 0, 0};
  for (int d = 0; d < 2; ++d) {
    const int64_t needed = (y.shape[2 + d] - 1) * strides[d] + kernel[d] - x.shape[2 + d] - pads[d];
    onednn_pads[2 + d] = std::max<int64_t>(needed, 0);
  }
  AttrMap routine_attrs;
  routine_attrs.Set("kernel", kernel);
  routine_attrs.Set("strides", strides);
  routine_attrs.Set("pads", onednn_pads);
  if (avg) {
    KILN_ASSIGN_OR_RETURN(bool include_pad, attrs.GetBool("count_include_pad"));
    // Windows reaching past the padded input (ceil mode) count only their part inside it.
    if (include_pad && (onednn_pads[2] > pads[2] || onednn_pads[3] > pads[3]))
      return MakeError(ErrorCode::kUnimplemented,
                       "ceil-mode windows past the padding with count_include_pad");
    routine_attrs.Set("include_pad", static_cast<int64_t>(include_pad));
  }
  step.kind = Step::Kind::kLibrary;
  step.callee = routine->second;
  step.attrs = std::move(routine_attrs);
  return OkStatus();
}

}  // namespace kiln::compiler
