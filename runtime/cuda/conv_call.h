// ConvCall: one convolution step (runtime/cpu/conv_step.h) as the cuda backend issues it through
// cuDNN's graph API: a forward convolution with its fused epilogue (bias, residual add, ReLU) as
// one graph, or the backward-data or backward-filter convolution, over tensors described by their
// dims and strides (dense NCHW and KCRS today). Both devices run the same descriptor: the GPU
// through cuDNN's backend API (driver_conv.cc), the simulated device through RunConvOnHost, the
// definition of what the call computes, so a wrong translation of a step fails the differential
// tests here.
//
// Semantics (cuDNN's cross-correlation, groups G = C / w.C):
//   forward:  y[n,k,p,q] = act(sum_{c,r,s} x[n, g*Cg + c, p*sh - pt + r*dh, q*sw - pl + s*dw]
//                               * w[k,c,r,s] + bias[k] + residual[n,k,p,q])
//             with g = k / (K/G), Cg = C/G, x outside [0,H)x[0,W) zero, act ReLU or identity;
//   backward data:   dx = the transpose of that map (without the epilogue) applied to dy;
//   backward filter: dw[k,c,r,s] = sum_{n,p,q} x[n, g*Cg + c, ...] * dy[n,k,p,q].
// All of x, w, y (dy, dx, dw), the bias and the residual share one dtype (f32, bf16 or f16); the
// products accumulate in f32 on a GPU (cuDNN's choice of order), and RunConvOnHost sums in f64 and
// rounds once, which no order of f32 sums beats.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "ir/status.h"
#include "runtime/cpu/conv_step.h"
#include "runtime/cuda/device.h"
#include "runtime/executable.h"

namespace kiln::cuda {

struct ConvCall {
  using Kind = cpu::ConvStep::Kind;
  Kind kind = Kind::kForward;
  DType dtype = DType::kF32;
  std::array<int64_t, 4> x{}, w{}, y{};  // dims: NCHW, KCRS (C per group), NKPQ
  std::array<int64_t, 2> strides{1, 1}, dilations{1, 1};
  std::array<int64_t, 2> pre_pads{}, post_pads{};     // top and left; bottom and right
  bool bias = false, residual = false, relu = false;  // forward only
  // Which step operand (inputs, then outputs) each tensor is (-1: none).
  int x_operand = -1, w_operand = -1, y_operand = -1, bias_operand = -1, residual_operand = -1;

  int64_t groups() const { return x[1] / w[1]; }
  // "conv forward x=[2, 3, 8, 8] w=[4, 3, 3, 3] y=[2, 4, 8, 8] f32 bias relu", for messages.
  std::string ToString() const;
};

// The device addresses of one call's tensors (0 for the ones it has not).
struct ConvOperands {
  DevicePtr x = 0, w = 0, y = 0, bias = 0, residual = 0;
};

// The call computing a convolution step (a library step, or the kernel step that replaces one),
// whose operands must be dense (no blocked layout).
Result<ConvCall> ConvCallForStep(const Step& step, const Executable& exe);

// Bytes of x, w, y, the bias and the residual the call touches: the load-time range check.
struct ConvSpans {
  int64_t x = 0, w = 0, y = 0, bias = 0, residual = 0;
};
ConvSpans SpansOf(const ConvCall& call);

// The call computed on the host from host pointers (the simulated device's cuDNN), split over
// `threads` threads by the elements it writes: y (forward), x (backward data: dx from dy in y) or
// w (backward filter: dw from x and dy in y).
void RunConvOnHost(const ConvCall& call, void* x, void* w, void* y, const void* bias,
                   const void* residual, int threads);

}  // namespace kiln::cuda
