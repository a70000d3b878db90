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
// - conv2d_backprop_input / _filter: dx (one iteration per element of x) sums dy times w over
//   every output position whose window reads it, in f32; dw (one per element of w) sums dy times x
//   over every output position, in f64 (a first layer's weight adds hundreds of thousands);
//   padding skipped.
// - max_pool2d_grad / avg_pool2d_grad: each element of dx sums the dy of the windows that cover it:
//   max pooling only where it is the window's first largest element (NaN winning, the reference's
//   ArgMaxOfWindow), average pooling divided by the forward divisor (in f64).
// - batch_norm / batch_norm_grad over [N, C, S] (S the product of the spatial dims): a first loop
//   over the channels (a row kernel whose columns are the N*S elements of a channel, so that the
//   GPU lowering gives each channel a block: compiler/mlir/gpu_kernels.h) computes the batch mean
//   and biased variance (training; inference passes the given ones through) or dbias = sum dy and
//   dscale = sum dy * xhat, summing in f32; a second loop over the elements computes y or dx in
//   f64 from them (the formulas of ir/ops/nn.h). With 16-bit data in training or the gradient,
//   two more outputs (f32 [C] scratch) keep those per-channel values unrounded for the second
//   loop, which the 16-bit outputs could not (as the cpu backend's widened step computes).
// - Gather (a reference step): out[o, j, r] = data[o, idx[j] (+ the axis' size when negative), r]
//   over [outer, indices, inner], bytes copied (any dtype); indices i32 or i64, which the caller
//   has checked to lie in range (the kernel does not).
// - GatherGrad (dy, indices, data_like) -> dx: dx[o, r, i] = the sum of dy[o, j, i] over the j
//   whose index is r, one thread per element of dx adding in index order in f32 (f32, bf16, f16;
//   f32 bitwise the reference's, which rounds each sum to f32), over indices checked as Gather's.
// - reduce_sum: the input's summed-away positions added in f64 in row-major order, times `scale`,
//   rounded to the dtype (f32, f64, or 16-bit: through f32, as the reference stores a double), in
//   the reference's order (a mean multiplies by 1/count where the reference divides: f64 results
//   agree to the last bit or two). f32 summed over trailing dims (GlobalAvgPool, a mean over the
//   last axes, a whole-tensor loss) is a row kernel folding in f32 instead, one GPU block per row
//   when the rows have 32 or more elements: within f32's rounding of the reference, not its order.
//   So is f32 summed over the last dim and others before it (a bias gradient over N, H, W): each
//   kept element's row is the summed positions in row-major order.
// - bias_add: y = x + bias[c] over [outer, C, inner], added in the compute type (f32 for 16-bit
//   data, rounded once: the cpu step's widened path) or in f64.
// - concat / split: a whole of `outer` rows, each the pieces' blocks one after another; bytes are
//   copied (any dtype). concat has one iteration per whole element, split one per whole element
//   too, storing it into its piece.
// - softmax_cross_entropy / _grad over f32 logits [N, C] and i32/i64 labels [N] that the caller has
//   checked to lie in [0, C) (the kernel does not): a row kernel over the N rows folds each row's
//   max (NaN wins) and sum of exp(x - max) in f32, one GPU block per row when C >= 32. The loss
//   kernel stores each row's max + log(sum) - x[label] in a scratch output [N], then a second loop
//   (one row of N columns) stores their mean; the gradient kernel stores
//   (exp(x - max) / sum - onehot(label)) * dloss / N per element.
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

// Inputs a kernel takes but never reads (shapes only): each its dtype and element count.
using IgnoredOperands = std::vector<std::pair<DType, int64_t>>;

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
  DType dtype = DType::kF32;   // any float, input and output
  std::vector<int64_t> sizes;  // the input's dims
  std::vector<bool> reduced;   // per dim: summed away
  double scale = 1.0;
  IgnoredOperands ignored_inputs;  // after the input (SumLike's shape operand)
};

struct ConcatKernelParams {
  DType dtype = DType::kF32;
  bool concat = true;  // false: split
  int64_t outer = 0;
  std::vector<int64_t> blocks;     // elements of each piece per row, each > 0
  IgnoredOperands ignored_inputs;  // split: after the whole (ConcatGrad's shapes)
};

struct Conv2DGradKernelParams {
  Conv2DKernelParams conv;         // the forward geometry and dtype (its epilogue unused)
  bool filter = false;             // dw from (x, dy); otherwise dx from (dy, w)
  IgnoredOperands ignored_inputs;  // after the two read: x_like or w_like
};

struct Pool2DGradKernelParams {
  Pool2DKernelParams pool;  // the forward pooling; max: inputs (x, dy), avg: (dy, x_like)
};

struct BatchNormKernelParams {
  DType dtype = DType::kF32;  // every operand
  int64_t batch = 0, channels = 0, spatial = 1;
  double epsilon = 1e-5;
  bool training = true;      // batch_norm: batch statistics (else the given mean/var)
  bool grad = false;         // batch_norm_grad
  bool f32_scratch = false;  // outputs 3 and 4: the loop-1 values in f32 (16-bit data)
  // Training or the gradient: each channel's sums split into this many parts (a GPU block each),
  // whose sums go to a last output of f32 [2 * channels * splits] (1: no split). It must divide
  // batch * spatial (BatchNormSplits in compiler/library_kernels.cc chooses it so).
  int64_t splits = 1;
};

std::string EmitConv2DKernel(const std::string& name, const Conv2DKernelParams& p);
std::string EmitConv2DGradKernel(const std::string& name, const Conv2DGradKernelParams& p);
std::string EmitPool2DGradKernel(const std::string& name, const Pool2DGradKernelParams& p);
std::string EmitBatchNormKernel(const std::string& name, const BatchNormKernelParams& p);
std::string EmitPool2DKernel(const std::string& name, const Pool2DKernelParams& p);
struct GatherKernelParams {
  DType dtype = DType::kF32;        // data and output
  DType index_dtype = DType::kI64;  // i32 or i64
  int64_t outer = 1, axis_size = 0, inner = 1, indices = 0;
};

struct BiasAddKernelParams {
  DType dtype = DType::kF32;  // x, bias and y: any float
  int64_t outer = 1, channels = 0, inner = 1;
};

struct CrossEntropyKernelParams {
  int64_t rows = 0, classes = 0;    // N, C (each > 0)
  DType label_dtype = DType::kI64;  // i32 or i64
  bool grad = false;  // inputs (logits, labels, dloss) -> dlogits; else -> (loss, row losses)
  // Reduction "none": the loss is the row losses [N] (no scratch output); the gradient's dloss
  // is [N], row n's scale.
  bool per_row = false;
};

std::string EmitBiasAddKernel(const std::string& name, const BiasAddKernelParams& p);
std::string EmitCrossEntropyKernel(const std::string& name, const CrossEntropyKernelParams& p);
std::string EmitGatherKernel(const std::string& name, const GatherKernelParams& p);
std::string EmitGatherGradKernel(const std::string& name, const GatherKernelParams& p);
std::string EmitReduceSumKernel(const std::string& name, const ReduceSumKernelParams& p);
std::string EmitConcatKernel(const std::string& name, const ConcatKernelParams& p);

}  // namespace kiln::compiler
