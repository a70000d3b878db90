// ONNX import: an ONNX ModelProto (opsets 1 to 17 of the default domain; see below) becomes a
// verified kiln Graph.
//
//   kiln::Result<kiln::Graph> graph = kiln::ImportOnnx("resnet.onnx");
//
// - Graph inputs that are not initializers become Placeholders named as in ONNX (a symbolic or
//   missing dim is -1). An input of a sequence or optional type (of tensors) becomes a
//   Placeholder of dtype seq or optional (fed as Tensor::Sequence, Tensor::Optional; the
//   sequence ops are ir/ops/sequence.h); SequenceMap becomes a While over the elements. Graph
//   outputs become graph outputs of the same name. In the names of inputs and initializers, ':'
//   (kiln's port separator) becomes '_': PyTorch's initializer "onnx::Conv_193" is the Variable
//   "onnx__Conv_193".
// - Initializers of a float dtype become trainable Variables starting from their values
//   (Initializer::FromTensor), so an imported model can be trained, differentiated and frozen;
//   other initializers (shapes, indices) become Constants. With `initializers_as_constants` all
//   of them become Constants.
// - Each node is converted by the converter of its op type (ir/onnx/convert_*.cc) into kiln ops.
//   Integer tensors computed from known values (Shape -> Gather -> Concat -> Reshape chains, on
//   inputs whose shapes are known) are folded at import into Constants.
// - Every op type without a converter is reported in one kUnimplemented error, each with the nodes
//   that use it. Other errors name the ONNX node (its name, or op type and index) and the file.
// - External data (TensorProto.external_data) is read only from files inside the model's folder:
//   absolute paths, ".." components and symlinks that lead out of the folder are refused.
// - Limits: model files up to 2 GiB (the protobuf limit), tensors up to kMaxTensorBytes; a tensor
//   whose declared size exceeds them is refused before anything is allocated.
// Opsets: a model must import the default ONNX domain at a version <= kMaxOnnxOpset; converters
// implement each op's semantics from opset 11 on and, where it is cheap, the older forms seen in
// the ONNX test suite (attributes that later became inputs). Other domains are refused.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "ir/graph.h"
#include "ir/status.h"
#include "ir/tensor.h"

namespace kiln {

inline constexpr int64_t kMaxOnnxOpset = 17;
inline constexpr int64_t kMaxOnnxFileBytes = (int64_t{2} << 30) - 1;

struct OnnxImportOptions {
  // Every initializer becomes a Constant (for inference-only graphs).
  bool initializers_as_constants = false;
  // Values of graph inputs known at import: such an input becomes a Constant holding the value
  // instead of a Placeholder (for inputs an op needs at import, e.g. a Reshape's shape).
  std::map<std::string, Tensor> input_values;
};

// Reads and converts an .onnx file; external data is resolved relative to its folder.
Result<Graph> ImportOnnx(const std::string& path, const OnnxImportOptions& options = {});
// Converts serialized ModelProto bytes. `model_dir` is the folder external data is read from
// (empty: external data is refused); `origin` names the model in errors.
Result<Graph> ImportOnnxFromBytes(const std::string& bytes, const std::string& model_dir,
                                  const std::string& origin, const OnnxImportOptions& options = {});

// A node the importer can convert only once a value or dim known at run time is (a fed Slice
// bound, Resize scales computed from a fed tensor) becomes a Deferred node (ir/ops/deferred.h),
// converted by this frontend when the plan's shapes and values are known. Importing registers the
// frontend; a program that loads a saved graph holding Deferred nodes without importing one calls
// this first (the kiln command line does).
void RegisterOnnxFrontend();

// The ONNX op types that have a converter, sorted.
std::vector<std::string> SupportedOnnxOps();

}  // namespace kiln
