#include "runtime/cpu/library_steps.h"

namespace kiln::cpu {

Result<std::unique_ptr<StepRunner>> MakeLibraryStep(const Step& step, const Executable& exe) {
  // 16-bit operands: bf16 gemm natively where oneDNN can (AVX-512 BF16, AMX); otherwise the
  // routines computed in float32 on widened copies (conv2d chooses in its own factory).
  if (HasWidenableOperands(step, exe)) {
    if (step.callee == "gemm") {
      Result<std::unique_ptr<StepRunner>> native = MakeOnednnMatmulStep(step, exe);
      if (native.ok() || native.error().code() != ErrorCode::kUnimplemented) return native;
      return MakeWidenedStep(step, exe, MakeGemmStep);
    }
    if (step.callee == "batch_norm") return MakeWidenedStep(step, exe, MakeBatchNormStep);
    if (step.callee == "bias_add") return MakeWidenedStep(step, exe, MakeBiasAddStep);
  }
  if (step.callee == "gemm") return MakeGemmStep(step, exe);
  if (step.callee == "conv2d" || step.callee == "conv2d_backprop_input" ||
      step.callee == "conv2d_backprop_filter")
    return MakeConvStep(step, exe);
  if (step.callee == "variable_read") return MakeVariableReadStep(step, exe);
  if (step.callee == "batch_norm") return MakeBatchNormStep(step, exe);
  if (step.callee == "copy") return MakeCopyStep(step, exe);
  if (step.callee == "assign") return MakeAssignStep(step, exe);
  if (step.callee == "reduce_sum") return MakeReduceSumStep(step, exe);
  if (step.callee == "bias_add") return MakeBiasAddStep(step, exe);
  return MakeError(
      ErrorCode::kUnimplemented, "unknown library routine '", step.callee,
      "' (this runtime has: gemm, conv2d, conv2d_backprop_input, "
      "conv2d_backprop_filter, variable_read, batch_norm, copy, assign, reduce_sum, bias_add)");
}

}  // namespace kiln::cpu
