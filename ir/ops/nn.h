// Op family "nn": pooling, normalization, softmax, cross-entropy and dropout. Floats only; images
// are NCHW and the channel axis is 1.
//
// Pooling (MaxPool2D, AvgPool2D): attrs kernel [kH, kW] (required), strides [sH, sW] (empty: the
// kernel), pads [top, left, bottom, right] (ONNX order, each smaller than the kernel), ceil_mode,
// and for AvgPool2D count_include_pad. Output size floor((H + top + bottom - kH) / sH) + 1, or ceil
// with ceil_mode, where a last window that would start in the bottom/right padding is dropped
// (as PyTorch). Max pooling ignores padded positions. Average pooling divides by the number of
// real elements in the window, or with count_include_pad by the number of window positions inside
// the padded input (so a ceil_mode window hanging past the padding is not averaged with zeros
// beyond it, as PyTorch).
//
// BatchNorm(x, scale, bias, mean, var) -> (y, batch_mean, batch_var): statistics per channel
// (axis 1). Inference mode normalizes with the given mean/var and passes them through as outputs 1
// and 2; training mode normalizes with the batch mean and biased batch variance over every axis
// but 1 and outputs those. Running averages are the caller's job (Assign ops).
// LayerNorm(x, scale, bias): normalizes over dims [axis, rank) with the biased variance; scale and
// bias have shape x.shape[axis:].
// Softmax / LogSoftmax along `axis`, computed stably (the max is subtracted first).
// SoftmaxCrossEntropy(logits [N, C], labels [N] i32/i64) -> with reduction "mean" (the default),
// the scalar mean over N of -log_softmax(logits)[n, label_n]; with "none", those N row losses
// [N] (for weights, ignored labels and other reductions composed around it, as the ONNX importer
// does). A label outside [0, C) is a run-time error. N = 0 gives NaN (the mean of nothing, as
// PyTorch).
// Dropout(x) -> (y, mask): in training with rate > 0, element i is kept iff
// RandomUniform(seed, counter, i) >= rate (ir/random.h) and kept values are scaled by 1/(1-rate);
// `counter` advances once per run of the node (so each Run draws a new mask, reproducibly from a
// fresh session). Otherwise y = x and the mask is all true. Dropout is stateful.
//
// Gradients (ir/ops/nn_grad.cc): every op above but SoftmaxCrossEntropy's labels and Dropout's
// mask is differentiable. Pooling uses the backward ops below; the rest are composed of other ops.
// - MaxPool2DGrad(x, dy) -> dx: each window's dy goes to the first largest real element of the
//   window in row-major order (as PyTorch; a NaN counts as the largest); padding gets nothing.
// - AvgPool2DGrad(dy, x_like) -> dx: each window's dy divided by the forward divisor goes to the
//   real elements of the window; x_like (the forward input) gives dx's run-time shape.
//   Both take the forward op's attributes (same names and defaults) and are not differentiable.
// - BatchNorm in training mode differentiates through the batch statistics (mean and variance
//   depend on x), including gradients flowing into batch_mean and batch_var; the mean/var inputs
//   are unused then and get none. The path through y is one op (as TensorFlow's
//   FusedBatchNormGrad, so backends can call one backward primitive):
//   BatchNormGrad(dy, x, scale, mean, var) -> (dx, dscale, dbias), mean/var the batch statistics
//   BatchNorm output: with xhat = (x - mean) / sqrt(var + epsilon) per channel and sums over every
//   axis but 1 (M values per channel), dbias = sum(dy), dscale = sum(dy * xhat) and
//   dx = scale / sqrt(var + epsilon) * (dy - dbias / M - xhat * dscale / M). Not differentiable. In
//   inference mode mean and var get gradients too (outputs 1 and 2 are those inputs passed
//   through).
// - SoftmaxCrossEntropy: d logits = (softmax(logits) - onehot(labels)) * dloss / N (row n's
//   dloss[n] for reduction "none"), the op SoftmaxCrossEntropyGrad (not differentiable).
// - Dropout: dx = dy * mask / (1 - rate) in training, else dy.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/builder.h"

namespace kiln {

struct Pool2DOptions {
  std::vector<int64_t> kernel;               // [kH, kW], required
  std::vector<int64_t> strides;              // [sH, sW]; empty: the kernel
  std::vector<int64_t> pads = {0, 0, 0, 0};  // [top, left, bottom, right]
  bool ceil_mode = false;
  bool count_include_pad = false;  // AvgPool2D only (ignored by MaxPool2D)
};

// The number of windows along one axis of `in` points with the given padding, window extent
// ((kernel - 1) * dilation + 1) and stride; in ceil mode a last window that would start in the end
// padding is dropped (ONNX, PyTorch). 0 when no window fits.
int64_t PooledLength(int64_t in, int64_t pad_begin, int64_t pad_end, int64_t extent, int64_t stride,
                     bool ceil_mode);
Value MaxPool2D(At x, const Pool2DOptions& options);
Value AvgPool2D(At x, const Pool2DOptions& options);
// [N, C, d1, ..., dk] -> [N, C, 1, ..., 1] (rank >= 3).
Value GlobalAvgPool(At x);
// Backward passes of MaxPool2D(x, options) and AvgPool2D(x_like, options): dy has the pooled
// shape, the result x's shape.
Value MaxPool2DGrad(At x, Value dy, const Pool2DOptions& options);
Value AvgPool2DGrad(At dy, Value x_like, const Pool2DOptions& options);

// Returns {y, batch_mean, batch_var} (always three Values; invalid ones on error).
std::vector<Value> BatchNorm(At x, Value scale, Value bias, Value mean, Value var,
                             double epsilon = 1e-5, bool training = false);
// The backward pass of a training-mode BatchNorm: returns {dx, dscale, dbias} (invalid on error).
std::vector<Value> BatchNormGrad(At dy, Value x, Value scale, Value mean, Value var,
                                 double epsilon = 1e-5);
Value LayerNorm(At x, Value scale, Value bias, int64_t axis = -1, double epsilon = 1e-5);

Value Softmax(At x, int64_t axis = -1);
Value LogSoftmax(At x, int64_t axis = -1);
// Cross-entropy of integer labels against logits: their mean (a scalar), or with reduction
// "none" each row's [N].
Value SoftmaxCrossEntropy(At logits, Value labels, const std::string& reduction = "mean");
// Its gradient with respect to the logits for the loss's gradient `dloss`, as one op
// (TensorFlow's SparseSoftmaxCrossEntropyWithLogits backprop): (softmax(logits) -
// onehot(labels)) * dloss / N for a scalar dloss (the mean's), (softmax(logits) -
// onehot(labels)) * dloss[n] per row for dloss [N] (the row losses'); [N, C]; a label outside
// [0, C) is a run-time error.
Value SoftmaxCrossEntropyGrad(At logits, Value labels, Value dloss);

// Returns {y, mask} (always two Values; invalid ones on error). rate in [0, 1).
std::vector<Value> Dropout(At x, double rate, int64_t seed = 0, bool training = true);

}  // namespace kiln
