// ONNX ops that make values from shapes or attributes: Constant, Shape, Size, ConstantOfShape,
// Range, EyeLike, OneHot and Dropout (inference: identity). Shape and Size are known at import when
// the input's shape is; ConstantOfShape folds when its shape is known at import and is otherwise
// built at run time; EyeLike needs its shape known at import.
#include <cmath>

#include "ir/io/onnx_tensor.h"
#include "ir/onnx/convert_context.h"
#include "ir/ops/array.h"
#include "ir/ops/math.h"
#include "ir/ops/reduce.h"
#include "ir/ops/state.h"

namespace kiln::onnx_import {
namespace {

Tensor I64Vector(const std::vector<int64_t>& v) {
  return Tensor::FromVector<int64_t>(Shape{static_cast<int64_t>(v.size())}, v);
}

Status ConvertConstant(OnnxNode& n) {
  if (n.has_attr("value")) {
    KILN_ASSIGN_OR_RETURN(Tensor t, n.TensorAttr("value"));
    n.SetKnown(0, t);
  } else if (n.has_attr("value_float")) {
    KILN_ASSIGN_OR_RETURN(double v, n.Float("value_float", 0));
    n.SetKnown(0, Tensor::Scalar<float>(static_cast<float>(v)));
  } else if (n.has_attr("value_floats")) {
    KILN_ASSIGN_OR_RETURN(std::vector<double> v, n.Floats("value_floats"));
    n.SetKnown(0, Tensor::FromDoubles(f32, Shape{static_cast<int64_t>(v.size())}, v));
  } else if (n.has_attr("value_int")) {
    KILN_ASSIGN_OR_RETURN(int64_t v, n.Int("value_int", 0));
    n.SetKnown(0, Tensor::Scalar<int64_t>(v));
  } else if (n.has_attr("value_ints")) {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> v, n.Ints("value_ints"));
    n.SetKnown(0, I64Vector(v));
  } else if (n.has_attr("sparse_value")) {
    return n.Unsupported("sparse constants are not supported");
  } else if (n.has_attr("value_string") || n.has_attr("value_strings")) {
    return n.Unsupported("string constants are not supported (kiln has no string dtype)");
  } else {
    return n.Fail("has no value attribute");
  }
  return OkStatus();
}

Status ConvertShape(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  int rank = x.rank();
  KILN_ASSIGN_OR_RETURN(int64_t start, n.Int("start", 0));
  KILN_ASSIGN_OR_RETURN(int64_t end, n.Int("end", rank));
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  std::vector<int64_t> dims(x.shape().dims().begin() + start, x.shape().dims().begin() + end);
  bool known = true;
  for (int64_t d : dims) known = known && d >= 0;
  if (known) {
    n.SetKnown(0, I64Vector(dims));
    return OkStatus();
  }
  Value s = ShapeOf(x);
  if (start != 0 || end != rank) s = Slice(s, {start}, {end});
  std::vector<DimEntry> entries;
  for (int64_t d = start; d < end; ++d)
    entries.push_back(dims[d - start] >= 0 ? DimEntry{dims[d - start], "", 0}
                                           : DimEntry{0, n.input_name(0), static_cast<int>(d)});
  n.SetPartial(0, s, std::move(entries));
  return OkStatus();
}

Status ConvertSize(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  int64_t count = x.shape().NumElements();
  if (count >= 0) {
    n.SetKnown(0, Tensor::Scalar<int64_t>(count));
    return OkStatus();
  }
  n.SetOutput(0, Prod(ShapeOf(x)));
  return OkStatus();
}

Status ConvertConstantOfShape(OnnxNode& n) {
  Tensor value = Tensor::Scalar<float>(0.0f);
  if (n.has_attr("value")) {
    KILN_ASSIGN_OR_RETURN(value, n.TensorAttr("value"));
    if (value.num_elements() != 1)
      return n.Fail("attribute 'value' must hold one element, got ", value.Summary(0));
  }
  if (!n.known(0)) {  // a shape known at run time (e.g. zeros [layers, batch, hidden])
    KILN_ASSIGN_OR_RETURN(std::vector<ShapeDim> dims, ShapeDims(n, 0));
    DType work = value.dtype() == boolean ? i64 : value.dtype();
    KILN_ASSIGN_OR_RETURN(Value y, ZerosOfDims(n, dims, work));
    if (value.GetDouble(0) != 0) {
      Tensor v(work, Shape{});
      v.SetDouble(0, value.GetDouble(0));
      y = Add(y, n.g().Constant(v));
    }
    n.SetOutput(0, work == value.dtype() ? y : Cast(y, value.dtype()));
    return OkStatus();
  }
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> shape, n.ConstInts(0));
  for (int64_t d : shape)
    if (d < 0) return n.Fail("shape ", Shape(shape).ToString(), " has a negative dim");
  Result<Tensor> t = Tensor::Create(value.dtype(), Shape(shape));
  if (!t.ok()) return t.error().WithContext(n.label());
  for (int64_t i = 0; i < t->num_elements(); ++i) t->SetDouble(i, value.GetDouble(0));
  n.SetKnown(0, *t);
  return OkStatus();
}

Status ConvertRange(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value start, n.input(0));
  KILN_ASSIGN_OR_RETURN(Value limit, n.input(1));
  KILN_ASSIGN_OR_RETURN(Value delta, n.input(2));
  if (AllInputsKnownSmallInts(n)) {
    int64_t s = n.known(0)->GetInt(0), l = n.known(1)->GetInt(0), d = n.known(2)->GetInt(0);
    if (d == 0) return n.Fail("delta must not be 0");
    // max(ceil((limit - start) / delta), 0) elements, in 128-bit arithmetic (no overflow).
    const __int128 span = static_cast<__int128>(l) - s;
    const __int128 count =
        span == 0 || (span > 0) != (d > 0) ? 0 : (span + d - (d > 0 ? 1 : -1)) / d;
    // A short range is a known value (shapes read it); a long one is computed when the graph runs.
    if (count <= 4096) {
      Tensor t(start.dtype(), Shape{static_cast<int64_t>(count)});
      for (int64_t i = 0; i < static_cast<int64_t>(count); ++i) t.SetInt(i, s + i * d);
      n.SetKnown(0, t);
      return OkStatus();
    }
  }
  n.SetOutput(0, Range(start, limit, delta));
  return OkStatus();
}

Status ConvertEyeLike(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  if (x.rank() != 2 || !x.shape().IsFullyKnown())
    return n.Unsupported("needs a 2-D input of known shape, got ", x.shape().ToString());
  DType dtype = x.dtype();
  if (n.has_attr("dtype")) {
    KILN_ASSIGN_OR_RETURN(int64_t t, n.Int("dtype", 0));
    KILN_ASSIGN_OR_RETURN(dtype, OnnxDType(n, t));
  }
  KILN_ASSIGN_OR_RETURN(int64_t k, n.Int("k", 0));
  KILN_ASSIGN_OR_RETURN(Tensor t, NewTensor(n, dtype, x.shape()));
  for (int64_t i = 0; i < x.shape()[0]; ++i) {
    int64_t j = i + k;
    if (j >= 0 && j < x.shape()[1]) t.SetDouble(i * x.shape()[1] + j, 1);
  }
  n.SetKnown(0, t);
  return OkStatus();
}

Status ConvertOneHot(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value indices, n.input(0));
  KILN_ASSIGN_OR_RETURN(double depth, n.ConstScalar(1));
  KILN_ASSIGN_OR_RETURN(Tensor values, n.Const(2));
  KILN_ASSIGN_OR_RETURN(int64_t axis, n.Int("axis", -1));
  if (values.num_elements() != 2)
    return n.Fail("'values' must hold [off_value, on_value], got ", values.Summary(0));
  if (!IsInteger(indices.dtype())) indices = Cast(indices, i64);
  n.SetOutput(0, OneHot(indices, static_cast<int64_t>(std::floor(depth)), values.dtype(),
                        values.GetDouble(1), values.GetDouble(0), axis));
  return OkStatus();
}

// Inference only: y = x, mask all true. Training mode (a random mask) is not imported.
Status ConvertDropout(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value x, n.input(0));
  bool training = false;
  if (n.opset() >= 12 && n.has_input(2)) {
    KILN_ASSIGN_OR_RETURN(double t, n.ConstScalar(2));
    training = t != 0;
  }
  if (training) {
    // The ratio matters only in training mode.
    double ratio = 0.5;
    if (n.has_input(1)) {
      KILN_ASSIGN_OR_RETURN(ratio, n.ConstScalar(1));
    }
    if (ratio > 0) return n.Unsupported("Dropout in training mode (a random mask) is not imported");
  }
  n.SetOutput(0, Identity(x));
  if (n.wants_output(1)) n.SetOutput(1, Cast(OnesLike(x), boolean));
  return OkStatus();
}

}  // namespace

void AddShapeConverters(ConverterTable& t) {
  t["Constant"] = ConvertConstant;
  t["Shape"] = ConvertShape;
  t["Size"] = ConvertSize;
  t["ConstantOfShape"] = ConvertConstantOfShape;
  t["Range"] = ConvertRange;
  t["EyeLike"] = ConvertEyeLike;
  t["OneHot"] = ConvertOneHot;
  t["Dropout"] = ConvertDropout;
}

}  // namespace kiln::onnx_import
