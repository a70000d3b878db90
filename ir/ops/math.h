// Op family "math": elementwise unary and binary ops, comparisons, logic, Select, Clip and Cast.
// Binary ops, comparisons and Select broadcast their inputs the numpy way.
//
// Integer semantics: Div truncates toward zero (as C and ONNX); Pow on integers is exact repeated
// multiplication for non-negative exponents. ShiftLeft and ShiftRight shift unsigned integers
// (u8, u16, u32, u64) by the bits b holds (logical shifts; b at or past the width gives 0); not
// differentiable. The reference kernels compute u64 in int64's two's complement: exact below
// 2^63, where comparisons, Max/Min and Div of larger values would see them as negative. Float ops
// compute in double and round to the dtype in the reference executor.
#pragma once

#include "ir/builder.h"

namespace kiln {

// Unary, floats only.
Value Exp(At x);
Value Log(At x);
Value Sqrt(At x);
Value Rsqrt(At x);
Value Reciprocal(At x);
Value Sigmoid(At x);
Value Tanh(At x);
Value Erf(At x);
Value Sin(At x);
Value Cos(At x);
Value Asin(At x);  // NaN outside [-1, 1]
Value Acos(At x);  // NaN outside [-1, 1]
Value Atan(At x);
Value Floor(At x);
Value Ceil(At x);
Value Round(At x);  // halves to even, as numpy and ONNX
Value Elu(At x, double alpha = 1.0);
// approximate = "none" (exact, with erf) or "tanh".
Value Gelu(At x, const std::string& approximate = "none");
// Gelu(approximate = "tanh") of one value, in f64: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))),
// as the reference kernel and the gemm steps' fused GELU epilogues compute it.
double GeluTanhValue(double x);
// Unary, any numeric dtype.
Value Neg(At x);
Value Abs(At x);
Value Square(At x);
Value Sign(At x);
Value Relu(At x);
Value LeakyRelu(At x, double alpha = 0.01);
Value Clip(At x, double min, double max);
Value Cast(At x, DType to);

// Binary, numeric, broadcasting.
Value Add(At a, Value b);
Value Sub(At a, Value b);
Value Mul(At a, Value b);
Value Div(At a, Value b);
Value Pow(At a, Value b);
Value Maximum(At a, Value b);
Value Minimum(At a, Value b);

// Comparisons give bool. Equal takes any dtype (both the same); the others numeric ones.
Value Equal(At a, Value b);
Value Less(At a, Value b);
Value LessEqual(At a, Value b);
Value Greater(At a, Value b);
Value GreaterEqual(At a, Value b);
// Logic on bool.
Value And(At a, Value b);
Value ShiftLeft(At a, Value b);
Value ShiftRight(At a, Value b);
Value Or(At a, Value b);
Value Not(At a);
// cond ? x : y, elementwise with broadcasting of all three.
Value Select(At cond, Value x, Value y);

// Zeros / ones of x's dtype and (run-time) shape.
Value ZerosLike(At x);
Value OnesLike(At x);

}  // namespace kiln
