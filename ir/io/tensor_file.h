// Reading a tensor from a file whose format is chosen by its extension: ".npy" (numpy, see npy.h)
// or ".pb" (a serialized ONNX TensorProto, see onnx_tensor.h).
#pragma once

#include <cstdint>
#include <string>

#include "ir/status.h"
#include "ir/tensor.h"

namespace kiln {

// Reads PATH by extension; any other extension is a kInvalidArgument error naming the file.
Result<Tensor> ReadTensorFile(const std::string& path);

namespace internal {

// For the tensor file readers: a zero-filled tensor of `dtype` and `shape` (dims from the file),
// made only after checking that the shape is within kMaxTensorBytes (Tensor::Create's error
// otherwise) and that the file holds exactly `available_elements` for it (kDataLoss otherwise), so
// that a header lying about its shape never makes kiln allocate memory. `origin` names the file
// in errors.
Result<Tensor> CreateTensorForData(DType dtype, const Shape& shape, int64_t available_elements,
                                   const std::string& origin);

}  // namespace internal
}  // namespace kiln
