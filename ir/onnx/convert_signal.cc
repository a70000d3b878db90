// ONNX window functions (opset 17): HannWindow, HammingWindow and BlackmanWindow of a length that
// must be known (an initializer or a Constant at import, else the node converts once the run
// feeds it), computed at import as a constant of output_datatype (default float):
//   w[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N),  N = size (periodic, the default) or
//   size - 1 (symmetric), with (a0, a1, a2) = (1/2, 1/2, 0), (25/46, 21/46, 0), (0.42, 0.5, 0.08).
#include <cmath>
#include <numbers>

#include "ir/io/onnx_tensor.h"
#include "ir/onnx/convert_context.h"

namespace kiln::onnx_import {
namespace {

struct Cosines {
  double a0, a1, a2;
};

Status ConvertWindow(OnnxNode& n, Cosines c) {
  if (!n.known(0)) return n.NotKnownYet("needs its size known at import");
  KILN_ASSIGN_OR_RETURN(double given, n.ConstScalar(0));
  KILN_ASSIGN_OR_RETURN(int64_t periodic, n.Int("periodic", 1));
  KILN_ASSIGN_OR_RETURN(int64_t onnx_type, n.Int("output_datatype", 1));
  const std::optional<DType> dtype = DTypeOfOnnx(static_cast<int32_t>(onnx_type));
  if (!dtype) return n.Unsupported("output_datatype ", onnx_type, " is not a kiln dtype");
  if (given < 0 || given > (1 << 24) || given != std::floor(given))
    return n.Fail("size is ", given, "; expected a whole number in [0, 2^24]");
  const auto size = static_cast<int64_t>(given);
  const double period = static_cast<double>(periodic ? size : size - 1);
  std::vector<double> w(static_cast<size_t>(size));
  for (int64_t i = 0; i < size; ++i) {
    const double x = period > 0 ? 2 * std::numbers::pi * static_cast<double>(i) / period : 0;
    w[static_cast<size_t>(i)] = c.a0 - c.a1 * std::cos(x) + c.a2 * std::cos(2 * x);
  }
  n.SetOutput(0, n.g().Constant(Tensor::FromDoubles(*dtype, Shape{size}, w)));
  return OkStatus();
}

Status ConvertHann(OnnxNode& n) { return ConvertWindow(n, {0.5, 0.5, 0}); }
Status ConvertHamming(OnnxNode& n) { return ConvertWindow(n, {25.0 / 46, 21.0 / 46, 0}); }
Status ConvertBlackman(OnnxNode& n) { return ConvertWindow(n, {0.42, 0.5, 0.08}); }

}  // namespace

void AddSignalConverters(ConverterTable& t) {
  t["HannWindow"] = ConvertHann;
  t["HammingWindow"] = ConvertHamming;
  t["BlackmanWindow"] = ConvertBlackman;
}

}  // namespace kiln::onnx_import
