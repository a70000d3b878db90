// Op family "state": sources of values and state (Placeholder and Constant live on GraphBuilder;
// Variable, Assign, AssignAdd, AssignSub here), plus Identity, StopGradient, CheckNumerics and
// NoOp.
//
// Semantics within one Session::Run: a Variable node's output is the variable's value when that
// node runs; Assign* read and replace the stored value when they run and output the new value.
// Two unordered Assigns to one variable in one Run apply in an unspecified order; order them with
// control inputs (as in TensorFlow 1).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/builder.h"

namespace kiln {

// How a Variable gets its first value. Each is seeded: the same seed gives the same values on
// every backend. Kind "tensor" starts from a given value (`tensor`, stored in the graph as the
// attribute init_tensor; its dtype and shape must be the variable's), e.g. an imported ONNX
// initializer. Fans for glorot/he: shape [in, out] -> (in, out); [O, I, kh, kw] ->
// (I*kh*kw, O*kh*kw); rank 1 -> (n, n).
struct Initializer {
  std::string kind = "zeros";  // zeros ones constant uniform normal glorot_uniform he_normal tensor
  double value = 0.0;          // constant
  double low = -0.05, high = 0.05;  // uniform
  double mean = 0.0, stddev = 1.0;  // normal
  int64_t seed = 0;
  Tensor tensor = {};  // tensor

  static Initializer Zeros() { return {}; }
  static Initializer Ones() { return {.kind = "ones"}; }
  static Initializer Constant(double v) { return {.kind = "constant", .value = v}; }
  static Initializer Uniform(double low, double high, int64_t seed) {
    return {.kind = "uniform", .low = low, .high = high, .seed = seed};
  }
  static Initializer Normal(double mean, double stddev, int64_t seed) {
    return {.kind = "normal", .mean = mean, .stddev = stddev, .seed = seed};
  }
  static Initializer GlorotUniform(int64_t seed) {
    return {.kind = "glorot_uniform", .seed = seed};
  }
  static Initializer HeNormal(int64_t seed) { return {.kind = "he_normal", .seed = seed}; }
  static Initializer FromTensor(Tensor t) { return {.kind = "tensor", .tensor = std::move(t)}; }
};

// The names of the initializer kinds above.
const std::vector<std::string>& InitializerKinds();

// A trainable variable named exactly `name` (scopes do not apply: pass scope.Join("w")).
Value Variable(GraphBuilder& g, const std::string& name, DType dtype, Shape shape,
               const Initializer& init = {}, SourceLocation loc = SourceLocation::current());
// The same with an explicit `trainable` flag (false: optimizers leave it alone, e.g. running
// statistics and optimizer slots).
Value Variable(GraphBuilder& g, const std::string& name, DType dtype, Shape shape,
               const Initializer& init, bool trainable,
               SourceLocation loc = SourceLocation::current());
Value Assign(At variable, Value value);
Value AssignAdd(At variable, Value value);
Value AssignSub(At variable, Value value);
// variable +/-= scale * value, for a float variable and a scalar `scale` of its dtype (an
// optimizer's learning rate): one pass over the variable, without a scaled copy of `value`. The
// product is rounded to the variable's dtype before the sum, as a Mul node's would be.
Value AssignAdd(At variable, Value value, Value scale);
Value AssignSub(At variable, Value value, Value scale);
Value Identity(At x);
Value StopGradient(At x);
// y = x for float x, or the run fails when x holds an inf or NaN: "<what> has -inf at element 3
// (2 of 6 values are not finite)". `what` names the checked value, e.g. "node 'log' (Log, built
// at model.cc:12) output 0" (passes/check_numerics.h inserts these after every float value).
Value CheckNumerics(At x, const std::string& what);
// A node with no outputs that runs after all of `deps`: a target that groups other targets.
Value Group(const std::vector<Value>& deps, const std::string& name = "",
            SourceLocation loc = SourceLocation::current());

}  // namespace kiln
