#include "ir/onnx/onnx_window.h"

#include <algorithm>
#include <string>

namespace kiln::onnx_import {

Result<OnnxWindow> ReadOnnxWindow(const OnnxNode& n, const Shape& x, std::vector<int64_t> kernel) {
  const int k = x.rank() - 2;
  if (k < 1) return n.Fail("needs an input [N, C, spatial...], got ", x.ToString());
  if (n.has_attr("kernel_shape")) {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> attr, n.Ints("kernel_shape"));
    // `kernel` holds the weights' spatial dims, where there are weights: the attribute must agree.
    for (size_t i = 0; i < kernel.size() && i < attr.size(); ++i)
      if (kernel[i] >= 0 && attr[i] != kernel[i])
        return n.Fail("kernel_shape ", Shape(attr).ToString(), " contradicts the weights, whose ",
                      "spatial dims are ", Shape(kernel).ToString());
    kernel = attr;
  }
  if (static_cast<int>(kernel.size()) != k)
    return n.Fail("kernel_shape must have ", k, " entries, got ", kernel.size());
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> strides,
                        n.Ints("strides", std::vector<int64_t>(k, 1)));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> dil, n.Ints("dilations", std::vector<int64_t>(k, 1)));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> pads, n.Ints("pads", std::vector<int64_t>(2 * k, 0)));
  KILN_ASSIGN_OR_RETURN(std::string auto_pad, n.String("auto_pad", "NOTSET"));
  if (static_cast<int>(strides.size()) != k || static_cast<int>(dil.size()) != k ||
      static_cast<int>(pads.size()) != 2 * k)
    return n.Fail("strides, dilations and pads must have ", k, ", ", k, " and ", 2 * k, " entries");
  // Bounded so that extents and padded lengths cannot overflow.
  constexpr int64_t kLimit = int64_t{1} << 31;
  auto check = [&](const char* name, const std::vector<int64_t>& v, int64_t low,
                   bool unknown_ok) -> Status {
    for (int64_t e : v)
      if ((e < low || e >= kLimit) && !(unknown_ok && e == -1))
        return n.Fail("attribute '", name, "' must be >= ", low, " (and below 2^31), got ",
                      Shape(v).ToString());
    return OkStatus();
  };
  KILN_RETURN_IF_ERROR(check("kernel_shape", kernel, 1, true));  // -1: weights not known yet
  KILN_RETURN_IF_ERROR(check("strides", strides, 1, false));
  KILN_RETURN_IF_ERROR(check("dilations", dil, 1, false));
  KILN_RETURN_IF_ERROR(check("pads", pads, 0, false));
  if (auto_pad == "VALID") {
    pads.assign(2 * k, 0);
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    for (int i = 0; i < k; ++i) {
      int64_t in = x[2 + i];
      if (in < 0) return n.NotKnownYet("auto_pad ", auto_pad, " needs known spatial dims");
      if (strides[i] <= 0) return n.Fail("strides must be positive");
      int64_t out = (in + strides[i] - 1) / strides[i];
      int64_t total =
          std::max<int64_t>(0, (out - 1) * strides[i] + (kernel[i] - 1) * dil[i] + 1 - in);
      int64_t small = total / 2, large = total - small;
      pads[i] = auto_pad == "SAME_UPPER" ? small : large;
      pads[k + i] = total - pads[i];
    }
  } else if (auto_pad != "NOTSET") {
    return n.Fail("unknown auto_pad '", auto_pad, "'");
  }
  return OnnxWindow{kernel, strides, dil, pads};
}

}  // namespace kiln::onnx_import
