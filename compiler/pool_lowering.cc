#include "compiler/pool_lowering.h"

#include <algorithm>
#include <map>

#include "ir/op_registry.h"

namespace kiln::compiler {
namespace {

// A pooling op: its routine, whether it averages, and where its unpooled tensor (x, or x_like)
// and pooled one (y, or dy) are: an input's index, or -1 for output 0.
struct PoolOp {
  const char* routine;
  bool average;
  int unpooled, pooled;
};

Status LowerPool(const Node& node, const StaticInfo& info, const PoolOp& pool, Step& step) {
  auto type_of = [&](int input) -> const TensorType& {
    return info.types.at(input < 0 ? TensorRef{node.name, 0} : node.inputs[input]);
  };
  const TensorType& x = type_of(pool.unpooled);
  const TensorType& y = type_of(pool.pooled);
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
  if (pool.average) {
    KILN_ASSIGN_OR_RETURN(bool include_pad, attrs.GetBool("count_include_pad"));
    // Windows reaching past the padded input (ceil mode) count only their part inside it.
    if (include_pad && (onednn_pads[2] > pads[2] || onednn_pads[3] > pads[3]))
      return MakeError(ErrorCode::kUnimplemented,
                       "ceil-mode windows past the padding with count_include_pad");
    routine_attrs.Set("include_pad", static_cast<int64_t>(include_pad));
  }
  step.kind = Step::Kind::kLibrary;
  step.callee = pool.routine;
  step.attrs = std::move(routine_attrs);
  return OkStatus();
}

}  // namespace

void RegisterPoolLowerings(OpLowerings& lowerings) {
  // MaxPool2D(x) -> y; AvgPool2D(x) -> y; MaxPool2DGrad(x, dy) -> dx; AvgPool2DGrad(dy, x_like).
  const std::map<std::string, PoolOp> pools = {{"MaxPool2D", {"max_pool2d", false, 0, -1}},
                                               {"AvgPool2D", {"avg_pool2d", true, 0, -1}},
                                               {"MaxPool2DGrad", {"max_pool2d_grad", false, 0, 1}},
                                               {"AvgPool2DGrad", {"avg_pool2d_grad", true, 1, 0}}};
  for (const auto& [op, pool] : pools)
    lowerings.Add(op).pool = [pool = pool](const Node& node, const StaticInfo& info, Step& step) {
      return LowerPool(node, info, pool, step);
    };
}

}  // namespace kiln::compiler
