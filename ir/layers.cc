#include "ir/layers.h"

#include "ir/ops/linalg.h"
#include "ir/ops/math.h"
#include "ir/ops/nn.h"
#include "ir/ops/state.h"

namespace kiln::nn {
namespace {
// The channel (Conv2D, BatchNorm: axis 1) or feature (Dense: last axis) size, which must be known
// to size the variables.
bool KnownDim(const At& x, int axis, const char* layer, int64_t* dim) {
  if (!x.value.valid()) return false;
  const Shape& s = x.value.shape();
  int a = axis < 0 ? s.rank() + axis : axis;
  if (a < 0 || a >= s.rank() || s[a] < 0) {
    x.value.builder()->RecordError(MakeError(ErrorCode::kInvalidArgument, "at ", x.loc.ToString(),
                                             ": ", layer, " needs a known size on axis ", axis,
                                             " of its input, got ", s.ToString()));
    return false;
  }
  *dim = s[a];
  return true;
}
}  // namespace

Value Dense(const Scope& scope, At x, int64_t units, const DenseOptions& options) {
  int64_t in = 0;
  if (!KnownDim(x, -1, "Dense", &in)) return Value();
  GraphBuilder& g = scope.builder();
  auto entered = scope.Enter();
  DType t = x.value.dtype();
  Value w =
      Variable(g, scope.Join("w"), t, {in, units}, Initializer::GlorotUniform(options.seed), x.loc);
  Value y = MatMul(At(x.value, x.loc), w);
  if (!options.use_bias) return y;
  Value b = Variable(g, scope.Join("b"), t, {units}, Initializer::Zeros(), x.loc);
  return BiasAdd(At(y, x.loc), b, -1);
}

Value Conv2D(const Scope& scope, At x, int64_t filters, int64_t kernel,
             const Conv2DOptions& options) {
  int64_t channels = 0;
  if (!KnownDim(x, 1, "Conv2D", &channels)) return Value();
  GraphBuilder& g = scope.builder();
  auto entered = scope.Enter();
  DType t = x.value.dtype();
  int64_t in_per_group = options.groups > 0 ? channels / options.groups : channels;
  Value w = Variable(g, scope.Join("w"), t, {filters, in_per_group, kernel, kernel},
                     Initializer::HeNormal(options.seed), x.loc);
  int64_t p = options.padding;
  Value y = kiln::Conv2D(At(x.value, x.loc), w,
                         {.strides = {options.stride, options.stride},
                          .pads = {p, p, p, p},
                          .dilations = {options.dilation, options.dilation},
                          .groups = options.groups});
  if (!options.use_bias) return y;
  Value b = Variable(g, scope.Join("b"), t, {filters}, Initializer::Zeros(), x.loc);
  return BiasAdd(At(y, x.loc), b, 1);
}

Value BatchNorm(const Scope& scope, At x, const BatchNormOptions& options) {
  int64_t channels = 0;
  if (!KnownDim(x, 1, "BatchNorm", &channels)) return Value();
  GraphBuilder& g = scope.builder();
  auto entered = scope.Enter();
  DType t = x.value.dtype();
  Value gamma = Variable(g, scope.Join("gamma"), t, {channels}, Initializer::Ones(), x.loc);
  Value beta = Variable(g, scope.Join("beta"), t, {channels}, Initializer::Zeros(), x.loc);
  Value mean =
      Variable(g, scope.Join("moving_mean"), t, {channels}, Initializer::Zeros(), false, x.loc);
  Value var =
      Variable(g, scope.Join("moving_var"), t, {channels}, Initializer::Ones(), false, x.loc);
  std::vector<Value> outs = kiln::BatchNorm(At(x.value, x.loc), gamma, beta, mean, var,
                                            options.epsilon, options.training);
  if (options.training) {
    double m = options.momentum;
    g.AddUpdateOp(Assign(At(mean, x.loc), m * mean + (1.0 - m) * outs[1]));
    g.AddUpdateOp(Assign(At(var, x.loc), m * var + (1.0 - m) * outs[2]));
  }
  return outs[0];
}

}  // namespace kiln::nn
