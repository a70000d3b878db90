#include "runtime/variable_init.h"

#include <cmath>

#include "ir/random.h"

namespace kiln {
namespace {

// (fan_in, fan_out) as documented on kiln::Initializer.
std::pair<double, double> Fans(const Shape& s) {
  if (s.rank() == 0) return {1, 1};
  if (s.rank() == 1) return {double(s[0]), double(s[0])};
  if (s.rank() == 2) return {double(s[0]), double(s[1])};
  double receptive = 1;
  for (int i = 2; i < s.rank(); ++i) receptive *= double(s[i]);
  return {double(s[1]) * receptive, double(s[0]) * receptive};
}

}  // namespace

Result<Tensor> MakeInitialValue(const AttrMap& attrs) {
  KILN_ASSIGN_OR_RETURN(DType dtype, attrs.GetDType("dtype"));
  KILN_ASSIGN_OR_RETURN(Shape shape, attrs.GetShape("shape"));
  KILN_ASSIGN_OR_RETURN(std::string kind, attrs.GetString("initializer"));
  KILN_ASSIGN_OR_RETURN(int64_t seed64, attrs.GetInt("seed"));
  if (kind == "tensor") {
    KILN_ASSIGN_OR_RETURN(Tensor value, attrs.GetTensor("init_tensor"));
    if (value.dtype() != dtype || value.shape() != shape)
      return MakeError(ErrorCode::kInvalidArgument, "init_tensor ",
                       value.valid() ? value.Summary(0) : std::string("(none)"),
                       " does not match the variable's type ", DTypeName(dtype), shape.ToString());
    return value.Clone();
  }
  KILN_ASSIGN_OR_RETURN(Tensor t, Tensor::Create(dtype, shape));
  uint64_t seed = static_cast<uint64_t>(seed64);
  auto [fan_in, fan_out] = Fans(shape);
  int64_t n = t.num_elements();
  if (kind == "zeros") return t;
  if (kind == "ones" || kind == "constant") {
    double v = 1.0;
    if (kind == "constant") {
      KILN_ASSIGN_OR_RETURN(v, attrs.GetFloat("init_value"));
    }
    for (int64_t i = 0; i < n; ++i) t.SetDouble(i, v);
    return t;
  }
  if (kind == "uniform" || kind == "glorot_uniform") {
    double lo, hi;
    if (kind == "uniform") {
      KILN_ASSIGN_OR_RETURN(lo, attrs.GetFloat("init_low"));
      KILN_ASSIGN_OR_RETURN(hi, attrs.GetFloat("init_high"));
    } else {
      hi = std::sqrt(6.0 / (fan_in + fan_out));
      lo = -hi;
    }
    for (int64_t i = 0; i < n; ++i) t.SetDouble(i, lo + (hi - lo) * RandomUniform(seed, 0, i));
    return t;
  }
  if (kind == "normal" || kind == "he_normal") {
    double mean = 0, stddev;
    if (kind == "normal") {
      KILN_ASSIGN_OR_RETURN(mean, attrs.GetFloat("init_mean"));
      KILN_ASSIGN_OR_RETURN(stddev, attrs.GetFloat("init_stddev"));
    } else {
      stddev = std::sqrt(2.0 / fan_in);
    }
    for (int64_t i = 0; i < n; ++i) t.SetDouble(i, mean + stddev * RandomNormal(seed, 0, i));
    return t;
  }
  return MakeError(ErrorCode::kInvalidArgument, "unknown initializer '", kind, "'");
}

}  // namespace kiln
