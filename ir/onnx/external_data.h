// ONNX external data (TensorProto.external_data: location, offset, length) read safely: only from
// a regular file inside the model's folder. Absolute locations, ".." components, and locations
// that resolve (through symlinks) outside the folder are refused, as are ranges past the end of
// the file and data larger than the tensor's declared dtype and shape need.
#pragma once

#include <string>

#include "ir/status.h"
#include "ir/tensor.h"
#include "proto/onnx.pb.h"

namespace kiln::onnx_import {

// The tensor `p` whose data lives in an external file under `model_dir`. `origin` names the
// tensor in errors.
Result<Tensor> ReadExternalTensor(const onnx::TensorProto& p, const std::string& model_dir,
                                  const std::string& origin);

}  // namespace kiln::onnx_import
