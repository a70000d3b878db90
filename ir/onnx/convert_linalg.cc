// ONNX matrix products and linear quantization: MatMul, Gemm (MatMul, scaled, plus C),
// MatMulInteger (in int32), QuantizeLinear and DequantizeLinear (composed; per-tensor or per-axis
// scales), QLinearMatMul (requantized products), Det.
#include "ir/onnx/convert_context.h"
#include "ir/ops/array.h"
#include "ir/ops/determinant.h"
#include "ir/ops/linalg.h"
#include "ir/ops/math.h"
#include "ir/ops/reduce.h"

namespace kiln::onnx_import {
namespace {

Status ConvertMatMul(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value a, n.input(0));
  KILN_ASSIGN_OR_RETURN(Value b, n.input(1));
  n.SetOutput(0, MatMul(a, b));
  return OkStatus();
}

Status ConvertGemm(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value a, n.input(0));
  KILN_ASSIGN_OR_RETURN(Value b, n.input(1));
  KILN_ASSIGN_OR_RETURN(double alpha, n.Float("alpha", 1.0));
  KILN_ASSIGN_OR_RETURN(double beta, n.Float("beta", 1.0));
  KILN_ASSIGN_OR_RETURN(int64_t ta, n.Int("transA", 0));
  KILN_ASSIGN_OR_RETURN(int64_t tb, n.Int("transB", 0));
  if (a.rank() != 2 || b.rank() != 2)
    return n.Fail("A and B must be 2-D, got ", a.shape().ToString(), " and ", b.shape().ToString());
  Value y = MatMul(a, b, ta != 0, tb != 0);
  if (alpha != 1.0) y = y * alpha;
  if (n.has_input(2)) {
    KILN_ASSIGN_OR_RETURN(Value c, n.input(2));
    y = y + (beta != 1.0 ? c * beta : c);
  }
  n.SetOutput(0, y);
  return OkStatus();
}

// `v` (a scalar or a 1-D per-axis vector) shaped to broadcast along `axis` of a rank-`rank` tensor.
Value AlongAxis(Value v, int axis, int rank) {
  if (v.rank() != 1 || rank <= 1) return v;
  std::vector<int64_t> shape(rank - axis, 1);
  shape[0] = -1;
  return Reshape(v, shape);
}

// The axis a per-axis (1-D) scale runs along; 0 (unused) for a scalar scale.
Result<int> ScaleAxis(const OnnxNode& n, Value scale, Value x) {
  KILN_ASSIGN_OR_RETURN(int64_t axis, n.Int("axis", 1));
  if (scale.rank() == 0 || x.rank() == 0) return 0;
  return Axis(n, axis, x.rank());
}

Status ConvertMatMulInteger(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value a, n.input(0));
  KILN_ASSIGN_OR_RETURN(Value b, n.input(1));
  a = Cast(a, i32);
  b = Cast(b, i32);
  if (n.has_input(2)) {
    KILN_ASSIGN_OR_RETURN(Value za, n.input(2));
    a = a - AlongAxis(Cast(za, i32), a.rank() - 2, a.rank());  // per row of A
  }
  if (n.has_input(3)) {
    KILN_ASSIGN_OR_RETURN(Value zb, n.input(3));
    b = b - Cast(zb, i32);  // per column of B: broadcasts along the last axis
  }
  n.SetOutput(0, MatMul(a, b));
  return OkStatus();
}

// QLinearMatMul: the product of the zero-point-shifted integers (exact in f64), requantized with
// a_scale * b_scale / y_scale (per row of A and per column of B when they are vectors).
Status ConvertQLinearMatMul(OnnxNode& n) {
  std::vector<Value> in;
  for (int i = 0; i < 8; ++i) {
    KILN_ASSIGN_OR_RETURN(Value v, n.input(i));
    in.push_back(v);
  }
  const Value &a = in[0], &a_scale = in[1], &a_zp = in[2], &b = in[3], &b_scale = in[4];
  const Value &b_zp = in[5], &y_scale = in[6], &y_zp = in[7];
  if (a.rank() < 2 || b.rank() < 2)
    return n.Unsupported("needs A and B of rank >= 2, got ", a.type().ToString(), " and ",
                         b.type().ToString());
  auto row = [](Value v) { return v.rank() == 1 ? Reshape(v, {-1, 1}) : v; };  // per row of A
  Value acc = MatMul(Cast(a, f64) - row(Cast(a_zp, f64)), Cast(b, f64) - Cast(b_zp, f64));
  Value multiplier = row(Cast(a_scale, f64)) * Cast(b_scale, f64) / Cast(y_scale, f64);
  KILN_ASSIGN_OR_RETURN(Value y, Requantize(n, acc, multiplier, y_zp));
  n.SetOutput(0, y);
  return OkStatus();
}

Status ConvertQuantize(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  KILN_ASSIGN_OR_RETURN(Value scale, n.input(1));
  KILN_ASSIGN_OR_RETURN(int axis, ScaleAxis(n, scale, x));
  DType out = u8;
  Value zp;
  if (n.has_input(2)) {
    KILN_ASSIGN_OR_RETURN(zp, n.input(2));
    out = zp.dtype();
  }
  if (out != u8 && out != i8) return n.Unsupported("only uint8 and int8 outputs are supported");
  Value q = Round(x / AlongAxis(Cast(scale, x.dtype()), axis, x.rank()));
  if (zp.valid()) q = q + AlongAxis(Cast(zp, x.dtype()), axis, x.rank());
  q = out == u8 ? Clip(q, 0, 255) : Clip(q, -128, 127);
  n.SetOutput(0, Cast(q, out));
  return OkStatus();
}

Status ConvertDequantize(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  KILN_ASSIGN_OR_RETURN(Value scale, n.input(1));
  KILN_ASSIGN_OR_RETURN(int axis, ScaleAxis(n, scale, x));
  Value y = Cast(x, scale.dtype());
  if (n.has_input(2)) {
    KILN_ASSIGN_OR_RETURN(Value zp, n.input(2));
    y = y - AlongAxis(Cast(zp, scale.dtype()), axis, x.rank());
  }
  n.SetOutput(0, y * AlongAxis(scale, axis, x.rank()));
  return OkStatus();
}

// y_scale = (max(0, max x) - min(0, min x)) / 255; y_zero_point = round(-min(0, min x) / y_scale)
// saturated to uint8; y = saturate(round(x / y_scale) + y_zero_point).
Status ConvertDynamicQuantize(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  Value zero = n.g().Scalar(0, x.dtype());
  Value lo = Minimum(Min(x), zero), hi = Maximum(Max(x), zero);
  Value scale = (hi - lo) / 255.0;
  Value zp = Clip(Round(Neg(lo) / scale), 0, 255);
  Value y = Clip(Round(x / scale) + zp, 0, 255);
  n.SetOutput(0, Cast(y, u8));
  n.SetOutput(1, scale);
  n.SetOutput(2, Cast(zp, u8));
  return OkStatus();
}

}  // namespace

void AddLinalgConverters(ConverterTable& t) {
  t["MatMul"] = ConvertMatMul;
  t["Det"] = [](OnnxNode& n) -> Status {
    KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
    n.SetOutput(0, Det(x));
    return OkStatus();
  };
  t["Gemm"] = ConvertGemm;
  t["MatMulInteger"] = ConvertMatMulInteger;
  t["QLinearMatMul"] = ConvertQLinearMatMul;
  t["QuantizeLinear"] = ConvertQuantize;
  t["DequantizeLinear"] = ConvertDequantize;
  t["DynamicQuantizeLinear"] = ConvertDynamicQuantize;
}

}  // namespace kiln::onnx_import
