#include "runtime/cpu/library_steps.h"

namespace kiln::cpu {
namespace {

bool IsPooling(const std::string& callee) {
  return callee == "max_pool2d" || callee == "avg_pool2d" || callee == "max_pool2d_grad" ||
         callee == "avg_pool2d_grad";
}

// A 16-bit step through `make_native` (a library's own 16-bit routine) unless that is
// kUnimplemented on this CPU, then through `make_f32` on widened copies.
Result<std::unique_ptr<StepRunner>> NativeOrWidened(const Step& step, const Executable& exe,
                                                    const LibraryStepFactory& make_native,
                                                    const LibraryStepFactory& make_f32) {
  Result<std::unique_ptr<StepRunner>> native = make_native(step, exe);
  if (native.ok() || native.error().code() != ErrorCode::kUnimplemented) return native;
  return MakeWidenedStep(step, exe, make_f32);
}

}  // namespace

Result<std::unique_ptr<StepRunner>> MakeLibraryStep(const Step& step, const Executable& exe) {
  // 16-bit operands: bf16 gemm, pooling and batch_norm natively where oneDNN can (AVX-512 BF16,
  // AMX; batch_norm on a blocked layout), otherwise their float32 routines on widened copies, as
  // batch_norm_grad and bias_add always
  // (conv2d chooses in its own factory: its reorders convert).
  if (HasWidenableOperands(step, exe)) {
    if (step.callee == "gemm")
      return NativeOrWidened(step, exe, MakeOnednnMatmulStep, MakeGemmStep);
    if (IsPooling(step.callee)) return NativeOrWidened(step, exe, MakePoolStep, MakePoolStep);
    if (step.callee == "batch_norm")
      return NativeOrWidened(step, exe, MakeBatchNormStep, MakeBatchNormStep);
    if (step.callee == "batch_norm_grad") return MakeWidenedStep(step, exe, MakeBatchNormGradStep);
    if (step.callee == "bias_add") return MakeWidenedStep(step, exe, MakeBiasAddStep);
    if (step.callee == "reduce_sum") return MakeWidenedStep(step, exe, MakeReduceSumStep);
  }
  if (step.callee == "gemm") return MakeGemmStep(step, exe);
  if (step.callee == "conv2d" || step.callee == "conv2d_backprop_input" ||
      step.callee == "conv2d_backprop_filter")
    return MakeConvStep(step, exe);
  if (IsPooling(step.callee)) return MakePoolStep(step, exe);
  if (step.callee == "variable_read") return MakeVariableReadStep(step, exe);
  if (step.callee == "batch_norm") return MakeBatchNormStep(step, exe);
  if (step.callee == "batch_norm_grad") return MakeBatchNormGradStep(step, exe);
  if (step.callee == "copy") return MakeCopyStep(step, exe);
  if (step.callee == "reorder") return MakeReorderStep(step, exe);
  if (step.callee == "strided_copy") return MakeStridedCopyStep(step, exe);
  if (step.callee == "concat" || step.callee == "split") return MakeConcatStep(step, exe);
  if (step.callee == "softmax_cross_entropy" || step.callee == "softmax_cross_entropy_grad")
    return MakeCrossEntropyStep(step, exe);
  if (step.callee == "check_labels") return MakeCheckLabelsStep(step, exe);
  if (step.callee == "check_indices") return MakeCheckIndicesStep(step, exe);
  if (step.callee == "one_hot") return MakeOneHotStep(step, exe);
  if (step.callee == "gather" || step.callee == "gather_grad") return MakeGatherStep(step, exe);
  if (step.callee == "assign") return MakeAssignStep(step, exe);
  if (step.callee == "reduce_sum") return MakeReduceSumStep(step, exe);
  if (step.callee == "reduce_integer") return MakeReduceIntegerStep(step, exe);
  if (step.callee == "bias_add") return MakeBiasAddStep(step, exe);
  if (step.callee == "attention") return MakeAttentionStep(step, exe);
  return MakeError(
      ErrorCode::kUnimplemented, "unknown library routine '", step.callee,
      "' (this runtime has: gemm, conv2d, conv2d_backprop_input, "
      "conv2d_backprop_filter, max_pool2d, avg_pool2d, max_pool2d_grad, "
      "avg_pool2d_grad, variable_read, batch_norm, batch_norm_grad, copy, reorder, "
      "strided_copy, concat, split, softmax_cross_entropy, softmax_cross_entropy_grad, "
      "check_labels, check_indices, one_hot, gather, gather_grad, assign, reduce_sum, "
      "reduce_integer, bias_add, attention)");
}

}  // namespace kiln::cpu
