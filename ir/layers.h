// Layers: small builder functions that create their own Variables under a Scope and compose ops,
// so that a model reads like its diagram.
//
//   auto h = kiln::nn::Conv2D(g.Scope("conv1"), x, /*filters=*/16, /*kernel=*/3, {.padding = 1});
//   h = kiln::Relu(kiln::nn::BatchNorm(g.Scope("bn1"), h));
//   auto logits = kiln::nn::Dense(g.Scope("fc"), kiln::Flatten(h), 10);
//
// Variables are named "<scope>/<name>" (w, b, gamma, beta, moving_mean, moving_var) and seeded, so
// a model builds to the same initial weights every time. Weight layouts: Dense w is [in, units];
// Conv2D w is [filters, in_channels, k, k] (OIHW).
#pragma once

#include <cstdint>

#include "ir/builder.h"

namespace kiln::nn {

struct DenseOptions {
  bool use_bias = true;
  int64_t seed = 1;  // glorot_uniform weights, zero bias
};
// x is [batch, in]; returns [batch, units].
Value Dense(const Scope& scope, At x, int64_t units, const DenseOptions& options = {});

struct Conv2DOptions {
  int64_t stride = 1;
  int64_t padding = 0;  // on every side
  int64_t dilation = 1;
  int64_t groups = 1;
  bool use_bias = true;
  int64_t seed = 1;  // he_normal weights, zero bias
};
// x is NCHW; returns [N, filters, H', W'].
Value Conv2D(const Scope& scope, At x, int64_t filters, int64_t kernel,
             const Conv2DOptions& options = {});

struct BatchNormOptions {
  double epsilon = 1e-5;
  bool training = false;  // normalize with batch statistics and update the running ones
  double momentum = 0.9;  // running = momentum * running + (1 - momentum) * batch
};
// Batch normalization over axis 1 with learned scale/offset (gamma = 1, beta = 0) and running
// statistics (mean 0, variance 1; not trainable). In training mode the running-statistics updates
// are graph update ops (GraphBuilder::AddUpdateOp), run with every optimizer step; the batch
// variance used for them is the biased one (as the normalization itself). `kiln freeze` switches
// the layer to inference, where the running statistics are used.
Value BatchNorm(const Scope& scope, At x, const BatchNormOptions& options = {});

}  // namespace kiln::nn
