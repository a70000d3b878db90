// A convolution's weight gradient ("conv2d_backprop_filter") as one matrix product, bf16 on
// oneDNN's bf16 matmul (AMX or AVX-512 BF16) and f32 on kiln's packed sgemm (AVX-512), for the
// shapes where oneDNN 2.6's backward-weights convolutions are slow: few output positions (at most
// 2 x 2, the late stages of a ResNet on small images, where its bf16 kernel ran slower than its
// f32 one; ResNet-18 on 32 x 32 images at batch 32 on a Xeon with AMX: 256 x 256 x 3 x 3 over
// 2 x 2 outputs 1.1 -> 0.43 ms in bf16, the 1 x 1 convolutions of the last stage 0.42 -> 0.16
// ms). With P = OH * OW output positions,
//   dw[K, C*R*S] = dy^T[K, N*P] x cols[N*P, C*R*S],
// where cols is x's im2col: row (n, oh, ow) holds the C*R*S inputs that output position reads
// (zeros where a tap reads padding). Both operands are packed on every run into scratch the step
// owns (dy^T is K*N*P elements, cols N*P*C*R*S, at most kMostColumnElements), then the product
// accumulates in f32 (bf16: rounding each dw once, as the reference does).
//
// Contract: SuitsIm2colFilterGrad says whether the step takes this path: a bf16 or f32
// conv2d_backprop_filter without groups (x and dy in any layout of runtime/cpu/layouts.h, dw
// dense) with at most kMostOutputPositions output positions, on a CPU with oneDNN's native bf16
// matmul (bf16) or with AVX-512 (f32). The factory returns kUnimplemented where oneDNN offers no
// native matmul for the product (the caller then takes the convolution primitive).
#pragma once

#include <memory>

#include "runtime/cpu/conv_step.h"
#include "runtime/cpu/step.h"

namespace kiln::cpu {

inline constexpr int64_t kMostColumnElements = int64_t{1} << 24;
inline constexpr int64_t kMostOutputPositions = 4;

bool SuitsIm2colFilterGrad(const Step& step, const Executable& exe);
Result<std::unique_ptr<StepRunner>> MakeIm2colFilterGradStep(const Step& step,
                                                             const Executable& exe);

}  // namespace kiln::cpu
