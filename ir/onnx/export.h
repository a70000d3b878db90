// ONNX export: a kiln inference graph becomes an ONNX ModelProto (IR version 8, default domain at
// opset 17) that ONNX Runtime and onnx.checker accept.
//
//   kiln::OnnxExportOptions options{.variable_values = values};   // e.g. from a checkpoint
//   kiln::Status s = kiln::ExportOnnx(graph, "model.onnx", options);
//
// - Only what the fetches need is exported (default: the graph's outputs; each ONNX output is
//   named as the fetch). Placeholders become graph inputs (an unknown dim becomes a named symbolic
//   dim, "<input>_d<i>"); Constants and Variables become initializers, a Variable named as in kiln
//   and holding its value from `variable_values` (a missing or mistyped value is an error).
// - Each op with an ONNX counterpart is written by its exporter (ir/onnx/export_ops.cc): the same
//   op where ONNX has it, a small composition where it does not (Gelu, Rsqrt, BiasAdd, OnesLike,
//   MatMul's transpose flags); If and While become ONNX If and Loop with their bodies as
//   subgraphs; a Deferred node imported from ONNX is written back as the node it holds.
// - Ops without a counterpart (state updates, the backward ops of training graphs, a BatchNorm or
//   Dropout in training mode) are reported all at once in one kUnimplemented error that lists each
//   op type with the nodes using it: export an inference graph (`kiln freeze`, or ForInference).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"
#include "ir/tensor.h"

namespace kiln {

inline constexpr int64_t kOnnxExportOpset = 17;
inline constexpr int64_t kMaxOnnxExportBytes = (int64_t{2} << 30) - 1;  // protobuf's limit

struct OnnxExportOptions {
  // Tensors to export, by graph output name or "node:port"; empty: every graph output.
  std::vector<std::string> fetches;
  // The value of each Variable the fetches need, by node name.
  std::map<std::string, Tensor> variable_values;
  // ModelProto.producer_name / graph name.
  std::string graph_name = "kiln";
};

// The serialized ModelProto. The graph must be verified (node output types filled).
Result<std::string> ExportOnnxToBytes(const Graph& graph, const OnnxExportOptions& options = {});
// Writes it to `path` (atomically).
Status ExportOnnx(const Graph& graph, const std::string& path,
                  const OnnxExportOptions& options = {});

}  // namespace kiln
