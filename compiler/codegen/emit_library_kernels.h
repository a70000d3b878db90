// Kernels for the work a library routine does on the cpu backend (oneDNN convolution and pooling,
// kiln's own reduce_sum, concat and split steps; runtime/cpu/library_steps.h) but that the CUDA
// device runs as generated code until a device library takes it over. Each function returns the
// func.func text of one kernel with the ABI of compiler/kernel_spec.h (begin, end, then one 1-D
// memref per operand: the step's inputs, then its outputs, flattened, of the storage type of
// scalar_writer.h), whose iteration space is one output element per iteration: an scf.parallel
// over [begin, end) that the GPU lowering maps one thread per element. Each kernel has the
// semantics of the step it replaces, which the reference executor's kernels define:
// - Conv2D (NCHW x, OIHW w, groups, strides, dilations, top/left pads): the window's products
//   summed in f32 in (channel, row, column) order, positions in the padding skipped, then the
//   fused epilogue in the cpu step's order: + bias[k], + residual, Relu (NaN stays). f16/bf16
//   operands are widened on load and the result rounded once.
// - Pooling over [planes, H, W]: the max (NaN wins) or the mean of each window's real elements,
//   the mean summed in f64 and divided by the window's size inside the padded input
//   (count_include_pad) or by its real elements, then rounded to the dtype.
// - reduce_sum: the input's summed-away positions added in f64 in row-major order, times `scale`,
//   rounded to the dtype (f32 or f64); the reference's order, so f64 results match it exactly.
// - concat / split: a whole of `outer` rows, each the pieces' blocks one after another; bytes are
//   copied (any dtype). concat has one iteration per whole element, split one per whole element
//   too, storing it into its piece.
// Nothing here checks that the numbers describe the buffers: the caller (compiler/
// library_kernels.h) builds them from a step whose operands it has checked.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/dtype.h"
#include "ir/status.h"

namespace kiln::compiler {

struct Conv2DKernelParams {
  DType dtype = DType::kF32;               // x, w, y, bias and residual
  std::array<int64_t, 4> x{};              // N, C, H, W
  std::array<int64_t, 4> y{};              // N, K, OH, OW
  std::array<int64_t, 2> window{};         // KH, KW
  std::array<int64_t, 2> strides{1, 1};    // along H, W
  std::array<int64_t, 2> dilations{1, 1};  // along H, W
  std::array<int64_t, 2> pads{};           // top, left (bottom and right follow from the shapes)
  int64_t groups = 1;
  bool bias = false;      // an input [K] after w
  bool residual = false;  // an input of y's shape after the bias: added before the Relu
  bool relu = false;
};

struct Pool2DKernelParams {
  DType dtype = DType::kF32;
  bool max = true;
  bool include_pad = false;  // average pooling: divide by the window inside the padded input
  int64_t planes = 0, height = 0, width = 0, out_height = 0, out_width = 0;
  std::array<int64_t, 2> window{}, strides{};
  std::array<int64_t, 4> pads{};  // top, left, bottom, right
};

struct ReduceSumKernelParams {
  DType dtype = DType::kF32;   // f32 or f64, input and output
  std::vector<int64_t> sizes;  // the input's dims
  std::vector<bool> reduced;   // per dim: summed away
  double scale = 1.0;
};

struct ConcatKernelParams {
  DType dtype = DType::kF32;
  bool concat = true;  // false: split
  int64_t outer = 0;
  std::vector<int64_t> blocks;  // elements of each piece per row, each > 0
  // split: inputs after the whole that the kernel takes but does not read (ConcatGrad's shapes),
  // each its dtype and element count.
  std::vector<std::pair<DType, int64_t>> ignored_inputs;
};

std::string EmitConv2DKernel(const std::string& name, const Conv2DKernelParams& p);
std::string EmitPool2DKernel(const std::string& name, const Pool2DKernelParams& p);
std::string EmitReduceSumKernel(const std::string& name, const ReduceSumKernelParams& p);
std::string EmitConcatKernel(const std::string& name, const ConcatKernelParams& p);

}  // namespace kiln::compiler
