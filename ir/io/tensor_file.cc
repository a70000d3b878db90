#include "ir/io/tensor_file.h"

#include <algorithm>

#include "ir/file_util.h"
#include "ir/io/npy.h"
#include "ir/io/onnx_tensor.h"

namespace kiln {

Result<Tensor> ReadTensorFile(const std::string& path) {
  if (EndsWith(path, ".npy")) return ReadNpy(path);
  if (EndsWith(path, ".pb")) return ReadOnnxTensor(path);
  return MakeError(
      ErrorCode::kInvalidArgument, "'", path,
      "': unknown tensor file extension; expected .npy (numpy) or .pb (ONNX TensorProto)");
}

namespace internal {

Result<Tensor> CreateTensorForData(DType dtype, const Shape& shape, int64_t available_elements,
                                   const std::string& origin) {
  // The element count, saturated just above the limit so that nothing overflows.
  constexpr int64_t kOver = kMaxTensorBytes + 1;
  int64_t n = 1;
  bool has_zero = false;
  for (int64_t d : shape.dims()) {
    if (d < 0)
      return MakeError(ErrorCode::kInvalidArgument, "'", origin, "': negative dimension ", d,
                       " in shape ", shape.ToString());
    if (d == 0)
      has_zero = true;
    else
      n = n > kOver / d ? kOver : std::min(n * d, kOver);
  }
  if (has_zero) n = 0;
  if (n == kOver || n * DTypeSize(dtype) > kMaxTensorBytes) {
    Result<Tensor> t = Tensor::Create(dtype, shape);  // fails on the size, before allocating
    if (!t.ok()) return t.error().WithContext("'" + origin + "'");
  }
  if (available_elements != n)
    return MakeError(ErrorCode::kDataLoss, "'", origin, "': holds ", available_elements,
                     " elements of data, but ", DTypeName(dtype), shape.ToString(), " needs ", n,
                     " (truncated or corrupt file)");
  Result<Tensor> t = Tensor::Create(dtype, shape);
  if (!t.ok()) return t.error().WithContext("'" + origin + "'");
  return t;
}

}  // namespace internal
}  // namespace kiln
