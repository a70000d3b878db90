// Library steps by routine name (Step::callee of a kLibrary step). Each factory checks the step's
// parameters against its buffers once, at load time, and creates whatever the library needs then.
#pragma once

#include <functional>

#include "runtime/cpu/step.h"

namespace kiln::cpu {

Result<std::unique_ptr<StepRunner>> MakeGemmStep(const Step& step, const Executable& exe);
// gemm over bf16 through oneDNN's native bf16 matmul; kUnimplemented where this CPU has none.
Result<std::unique_ptr<StepRunner>> MakeOnednnMatmulStep(const Step& step, const Executable& exe);
// Whether this CPU runs bf16 MatMul natively through oneDNN (asked once, by creating one).
bool HasNativeBf16Matmul();
// conv2d, conv2d_backprop_input, conv2d_backprop_filter.
Result<std::unique_ptr<StepRunner>> MakeConvStep(const Step& step, const Executable& exe);
// The layout its primitive computes each operand in (runtime/cpu/layouts.h, PreferredLayouts).
Result<std::vector<std::string>> PreferredConvLayouts(const Step& step, const Executable& exe);
// Whether MakeConvStep runs this f32 conv2d as Winograd F(2x2, 3x3) instead of directly: 3 x 3
// windows, stride 1, no dilation or groups, at least 32 input and output channels, and weights the
// plan does not change (a constant, or a variable no step assigns); KILN_WINOGRAD=0 never does.
bool ConvRunsWinograd(const Step& step, const Executable& exe);
// max_pool2d, avg_pool2d, max_pool2d_grad, avg_pool2d_grad (onednn_pool_step.cc); bf16 ones are
// kUnimplemented where oneDNN has no bf16 pooling for this CPU.
Result<std::unique_ptr<StepRunner>> MakePoolStep(const Step& step, const Executable& exe);
// batch_norm: kiln's BatchNorm in f32 (onednn_batch_norm_step.cc).
Result<std::unique_ptr<StepRunner>> MakeBatchNormStep(const Step& step, const Executable& exe);
// batch_norm_grad: kiln's BatchNormGrad in f32 (onednn_batch_norm_step.cc).
Result<std::unique_ptr<StepRunner>> MakeBatchNormGradStep(const Step& step, const Executable& exe);
// strided_copy: Slice, SliceGrad and constant Pad, any dtype (strided_copy_step.cc).
Result<std::unique_ptr<StepRunner>> MakeStridedCopyStep(const Step& step, const Executable& exe);
// concat and split: Concat, Split, ConcatGrad, any dtype (concat_step.cc).
Result<std::unique_ptr<StepRunner>> MakeConcatStep(const Step& step, const Executable& exe);
// softmax_cross_entropy(_grad), check_labels: SoftmaxCrossEntropy and its gradient op, f32 logits
// (cross_entropy_step.cc).
Result<std::unique_ptr<StepRunner>> MakeCrossEntropyStep(const Step& step, const Executable& exe);
Result<std::unique_ptr<StepRunner>> MakeCheckLabelsStep(const Step& step, const Executable& exe);
// check_indices: a Gather's indices within the axis, for the CUDA device's Gather kernels
// (check_indices_step.cc).
Result<std::unique_ptr<StepRunner>> MakeCheckIndicesStep(const Step& step, const Executable& exe);
// The range check of Gather's indices (i32 or i64, `count` of them) into axis `axis` of `data`, as
// the reference kernel words it, failing `step`'s node (check_indices_step.cc).
Status CheckGatherIndices(const Step& step, const void* indices, DType dtype, int64_t count,
                          int64_t axis, const Shape& data);
// gather and gather_grad: Gather (any dtype) and GatherGrad (f32, f64) (gather_step.cc).
Result<std::unique_ptr<StepRunner>> MakeGatherStep(const Step& step, const Executable& exe);
// one_hot: OneHot with i32/i64 indices into f32/f64 (one_hot_step.cc).
Result<std::unique_ptr<StepRunner>> MakeOneHotStep(const Step& step, const Executable& exe);
// "reorder": a buffer's elements into another layout (runtime/cpu/onednn_reorder_step.cc).
Result<std::unique_ptr<StepRunner>> MakeReorderStep(const Step& step, const Executable& exe);
// copy and assign (state_steps.cc).
Result<std::unique_ptr<StepRunner>> MakeCopyStep(const Step& step, const Executable& exe);
Result<std::unique_ptr<StepRunner>> MakeAssignStep(const Step& step, const Executable& exe);
// reduce_sum: Sum, Mean, SumLike in f32/f64 (reduce_step.cc; bf16/f16 through MakeWidenedStep).
Result<std::unique_ptr<StepRunner>> MakeReduceSumStep(const Step& step, const Executable& exe);
// reduce_integer: Sum, Mean, Prod, Max, Min over integers (reduce_integer_step.cc).
Result<std::unique_ptr<StepRunner>> MakeReduceIntegerStep(const Step& step, const Executable& exe);
// attention: softmax(q k + mask) v over f32, one step (attention_step.cc).
Result<std::unique_ptr<StepRunner>> MakeAttentionStep(const Step& step, const Executable& exe);
// bias_add: BiasAdd in f32/f64 (bias_add_step.cc).
Result<std::unique_ptr<StepRunner>> MakeBiasAddStep(const Step& step, const Executable& exe);
// variable_read: binds a kVariable buffer to the variable's stored value (variable_step.cc).
Result<std::unique_ptr<StepRunner>> MakeVariableReadStep(const Step& step, const Executable& exe);

using LibraryStepFactory =
    std::function<Result<std::unique_ptr<StepRunner>>(const Step&, const Executable&)>;
// Whether a buffer of the step is bf16 or f16.
bool HasWidenableOperands(const Step& step, const Executable& exe);
// The step run by its float32 routine `make_f32` on float32 copies of its 16-bit buffers
// (widened_step.cc): gemm, batch_norm, bias_add and pooling on bf16/f16.
Result<std::unique_ptr<StepRunner>> MakeWidenedStep(const Step& step, const Executable& exe,
                                                    const LibraryStepFactory& make_f32);
// The step run by `make` on dense copies of its operands that have a layout (reordered in before
// and out after it), or `make` itself when none has (onednn_reorder_step.cc).
Result<std::unique_ptr<StepRunner>> MakeDenseStep(const Step& step, const Executable& exe,
                                                  const LibraryStepFactory& make);

}  // namespace kiln::cpu
