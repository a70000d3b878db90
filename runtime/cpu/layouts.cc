#include "runtime/cpu/layouts.h"

#include "runtime/cpu/library_steps.h"

namespace kiln::cpu {
namespace {

bool IsConvolution(const Step& step) {
  return step.kind == Step::Kind::kLibrary &&
         (step.callee == "conv2d" || step.callee == "conv2d_backprop_input" ||
          step.callee == "conv2d_backprop_filter");
}

bool AllOneShape(const Step& step, const Executable& exe) {
  const Shape* first = nullptr;
  for (const std::vector<int>* ids : {&step.inputs, &step.outputs})
    for (int id : *ids) {
      const Shape& s = exe.buffers[id].type.shape;
      if (first && s != *first) return false;
      first = &s;
    }
  return true;
}

}  // namespace

std::vector<LayoutRole> OperandLayoutRoles(const Step& step, const Executable& exe) {
  const size_t n = step.inputs.size() + step.outputs.size();
  std::vector<LayoutRole> roles(n, LayoutRole::kPlain);
  // Each output element of an elementwise kernel comes from the inputs at its own index, so when
  // no operand is broadcast, any one permutation of the elements shared by all operands gives the
  // same result. Such kernels iterate over their elements as one dimension (rows = elements); a
  // row reduction (a Softmax over W of [N, C, H, W] has operands of one shape too) has fewer rows
  // than elements, and reads its operands dense.
  if (step.kind == Step::Kind::kKernel && AllOneShape(step, exe) && n > 0) {
    const int first = step.inputs.empty() ? step.outputs[0] : step.inputs[0];
    if (step.rows == exe.buffers[first].type.shape.NumElements())
      roles.assign(n, LayoutRole::kShared);
  }
  if (step.kind != Step::Kind::kLibrary) return roles;
  const size_t in = step.inputs.size();
  if (step.callee == "copy" && in >= 1 && step.outputs.size() == 1 &&
      exe.buffers[step.inputs[0]].type.shape == exe.buffers[step.outputs[0]].type.shape)
    roles[0] = roles[in] = LayoutRole::kShared;
  // Inputs after the source of a copy give only a shape (ReshapeLike's, SliceGrad's x_like).
  if (step.callee == "copy" || step.callee == "strided_copy")
    for (size_t i = 1; i < in; ++i) roles[i] = LayoutRole::kUnread;
  if (step.callee == "reorder" && in == 1 && step.outputs.size() == 1)
    roles.assign(n, LayoutRole::kOwn);  // from its input's layout into its output's
  // Pooling: x and y (dx and dy) in one layout; avg_pool2d_grad's x_like is only a shape.
  if ((step.callee == "max_pool2d" || step.callee == "avg_pool2d") && in == 1)
    roles.assign(n, LayoutRole::kShared);
  if (step.callee == "max_pool2d_grad" && in == 2) roles.assign(n, LayoutRole::kShared);
  if (step.callee == "avg_pool2d_grad" && in == 2 && step.outputs.size() == 1) {
    roles.assign(n, LayoutRole::kShared);
    roles[1] = LayoutRole::kUnread;
  }
  // A sum over a rank-4 buffer that keeps C only with H and W summed away (bias gradients,
  // global average pooling) keeps its dims in their logical order in every layout's memory order.
  if (step.callee == "reduce_sum" && in == 1 &&
      exe.buffers[step.inputs[0]].type.shape.rank() == 4) {
    const Result<std::vector<int64_t>> reduced = step.attrs.GetInts("reduced");
    if (reduced.ok() && reduced->size() == 4 && ((*reduced)[1] || ((*reduced)[2] && (*reduced)[3])))
      roles[0] = LayoutRole::kAny;
  }
  if (step.callee == "batch_norm" && in == 5 && step.outputs.size() == 3)
    roles[0] = roles[in] = LayoutRole::kShared;  // x, y
  if (step.callee == "batch_norm_grad" && in == 5 && step.outputs.size() == 3)
    roles[0] = roles[1] = roles[in] = LayoutRole::kShared;  // dy, x, dx
  if (IsConvolution(step) && in >= 2 && step.outputs.size() == 1) {
    // The activations in any layout (x and y, or dy and dx, or x and dy; a fused residual); the
    // weights and the bias dense; the tensor a backward pass takes for its result's shape unread.
    roles[0] = LayoutRole::kOwn;
    roles[step.callee == "conv2d_backprop_filter" ? 1 : in] = LayoutRole::kOwn;
    if (step.callee != "conv2d")  // the backward passes read dy and w, or x and dy, only
      for (size_t i = 2; i < in; ++i) roles[i] = LayoutRole::kUnread;
    const Result<std::vector<int64_t>> post_ops = step.attrs.GetInts("post_ops");
    if (step.callee == "conv2d" && post_ops.ok() && !post_ops->empty() && (*post_ops)[0] == 1)
      roles[in - 1] = LayoutRole::kOwn;
  }
  return roles;
}

int LayoutChannelBlock(const std::string& layout) {
  if (layout.empty() || layout == "nhwc") return 1;
  if (layout == "nChw4c") return 4;
  if (layout == "nChw8c") return 8;
  if (layout == "nChw16c") return 16;
  return 0;
}

MemoryOrder LayoutMemoryOrder(const std::string& layout, const Shape& shape) {
  const int64_t n = shape[0], c = shape[1], h = shape[2], w = shape[3];
  if (layout == "nhwc") return {{n, h, w, c}, {0, 2, 3, 1}};
  const int64_t block = LayoutChannelBlock(layout);
  if (layout.empty() || block <= 1) return {{n, c, h, w}, {0, 1, 2, 3}};
  return {{n, c / block, h, w, block}, {0, 1, 2, 3, 1}};
}

Result<std::vector<std::string>> PreferredLayouts(const Step& step, const Executable& exe) {
  if (IsConvolution(step)) return PreferredConvLayouts(step, exe);
  return std::vector<std::string>(step.inputs.size() + step.outputs.size());
}

Status CheckLayouts(const Executable& exe) {
  for (size_t id = 0; id < exe.buffers.size(); ++id) {
    const BufferDesc& b = exe.buffers[id];
    if (b.layout.empty()) continue;
    const int block = LayoutChannelBlock(b.layout);
    auto fail = [&](const std::string& why) {
      return MakeError(ErrorCode::kInternal, "buffer %", id, " (", b.tensor, ", ",
                       b.type.ToString(), ") has layout '", b.layout, "', but ", why);
    };
    if (block == 0) return fail("this runtime knows no such layout");
    if (b.type.dtype != f32 && b.type.dtype != bf16 && b.type.dtype != f16)
      return fail("only f32, bf16 and f16 buffers may have a layout");
    if (b.kind != BufferDesc::Kind::kArena) return fail("only arena buffers may have a layout");
    if (b.type.shape.rank() != 4 || b.type.shape[1] % block != 0)
      return fail("a layout needs rank 4 and channels a multiple of " + std::to_string(block));
  }
  for (int id : exe.fetches)
    if (id >= 0 && id < static_cast<int>(exe.buffers.size()) && !exe.buffers[id].layout.empty())
      return MakeError(ErrorCode::kInternal, "fetched buffer %", id, " has layout '",
                       exe.buffers[id].layout, "'; fetches must be dense");
  for (const Step& step : exe.steps) {
    const std::vector<LayoutRole> roles = OperandLayoutRoles(step, exe);
    const std::string* shared = nullptr;
    for (size_t i = 0; i < roles.size(); ++i) {
      const size_t in = step.inputs.size();
      const int id = i < in ? step.inputs[i] : step.outputs[i - in];
      const std::string& layout = exe.buffers[id].layout;
      if (roles[i] == LayoutRole::kShared) {
        if (shared && *shared != layout)
          return MakeError(ErrorCode::kInternal, StepKindName(step.kind), " step ", step.callee,
                           ": its operands must share one layout, got '", *shared, "' and '",
                           layout, "' (buffer %", id, ")");
        shared = &layout;
      }
      if (roles[i] == LayoutRole::kPlain && !layout.empty())
        return MakeError(ErrorCode::kInternal, StepKindName(step.kind), " step ", step.callee,
                         " reads and writes dense buffers only; buffer %", id, " has layout '",
                         layout, "'");
    }
  }
  return OkStatus();
}

}  // namespace kiln::cpu
