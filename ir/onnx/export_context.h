// What ONNX op exporters see (internal to ir/onnx/export*.cc; the public API is ir/onnx/export.h).
//
// GraphWriter writes one kiln graph (the model's, or an If/While body) into an onnx::GraphProto;
// for each node it calls the exporter registered for the node's op with a NodeExport, which
// names the node's inputs and outputs in ONNX and appends ONNX nodes and initializers.
// Initializers always go to the model's top-level graph (bodies read them as outer-scope values),
// and every name is unique in the whole model (ONNX forbids a body shadowing an outer name).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"
#include "ir/tensor.h"
#include "proto/onnx.pb.h"

namespace kiln::onnx_export {

// Every name of one model.
class NameScope {
 public:
  // Marks `name` taken; false if it already was.
  bool Reserve(const std::string& name) { return used_.insert(name).second; }
  // `base` if free, else `base_1`, `base_2`, ...; the result is taken.
  std::string Fresh(const std::string& base);

 private:
  std::set<std::string> used_;
};

// The ONNX type of a kiln tensor type (an unknown dim: a dim without a value, or `dim_param`
// followed by its index when `dim_param` is not empty); a seq or optional becomes ONNX's sequence
// or optional type with its element type left unspecified.
void SetValueInfo(const std::string& name, const TensorType& type, onnx::ValueInfoProto* info,
                  const std::string& dim_param = "");

void SetAttr(onnx::NodeProto& node, const std::string& name, int64_t v);
void SetAttr(onnx::NodeProto& node, const std::string& name, double v);
void SetAttr(onnx::NodeProto& node, const std::string& name, const std::string& v);
void SetAttr(onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& v);
void SetAttr(onnx::NodeProto& node, const std::string& name, const std::vector<double>& v);

struct ModelState {
  onnx::GraphProto* top = nullptr;  // where initializers go
  NameScope names;
  const std::map<std::string, Tensor>* variable_values = nullptr;
  // Nodes whose op has no ONNX counterpart (or not in the form used), by op type.
  std::map<std::string, std::vector<std::string>> unsupported;
};

class GraphWriter;

// One kiln node being exported.
class NodeExport {
 public:
  NodeExport(GraphWriter& writer, const Node& node, std::vector<std::string> inputs,
             std::vector<TensorType> input_types, std::vector<std::string> outputs);

  const Node& node() const { return node_; }
  // The node's attributes, defaults filled in.
  const AttrMap& attrs() const { return attrs_; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  const std::string& in(int i) const { return inputs_[i]; }
  const TensorType& in_type(int i) const { return input_types_[i]; }
  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  const std::string& out(int port = 0) const { return outputs_[port]; }
  const TensorType& out_type(int port = 0) const { return node_.output_types[port]; }

  // Appends an ONNX node (named after the kiln node) to the graph being written, or to `into`.
  onnx::NodeProto& Add(const std::string& op_type, std::vector<std::string> inputs,
                       std::vector<std::string> outputs, onnx::GraphProto* into = nullptr);
  // A fresh name for an intermediate value.
  std::string Temp(const std::string& what);
  // A new initializer holding `t`; returns its name.
  std::string Initializer(const Tensor& t, const std::string& what);
  std::string Ints(const std::vector<int64_t>& values, const std::string& what);
  // A scalar initializer of `dtype` holding `v`.
  std::string Scalar(double v, DType dtype, const std::string& what);
  // Writes the nodes of a body graph into the graph being written, or into `into` (a subgraph);
  // its arguments are the ONNX values `args` (outer-scope names, or the subgraph's own inputs).
  // Returns the names of its results.
  Result<std::vector<std::string>> Write(const Graph& body, const std::vector<std::string>& args,
                                         onnx::GraphProto* into = nullptr);
  // Declares `value` an output of the subgraph `into` (through an Identity, so that the output is
  // produced inside it even when `value` comes from outside).
  void Output(onnx::GraphProto* into, const std::string& value, const TensorType& type,
              const std::string& what);
  // Records that this node has no ONNX form (`why` says which) and returns OK, so that export
  // goes on to list every such node at once.
  Status Unsupported(const std::string& why = "");
  ModelState& model();

 private:
  GraphWriter& writer_;
  const Node& node_;
  AttrMap attrs_;
  std::vector<std::string> inputs_;
  std::vector<TensorType> input_types_;
  std::vector<std::string> outputs_;
};

using OpExporter = std::function<Status(NodeExport&)>;
// Exporters by kiln op name (ir/onnx/export_ops.cc, export_control.cc).
const std::map<std::string, OpExporter>& OpExporters();
void AddControlExporters(std::map<std::string, OpExporter>& table);

// Writes graphs of one model.
class GraphWriter {
 public:
  // `claimed`: names that fetched tensors of this graph take (the model's output names).
  GraphWriter(ModelState& model, onnx::GraphProto* graph,
              std::map<TensorRef, std::string> claimed = {})
      : model_(model), graph_(graph), claimed_(std::move(claimed)) {}

  // Writes the nodes `fetches` need. Placeholders map to `args` (by position in graph.inputs())
  // when `args` is given; otherwise they become inputs of the ONNX graph. Returns the ONNX
  // names of the fetched tensors.
  Result<std::vector<std::string>> Write(const Graph& graph, const std::vector<TensorRef>& fetches,
                                         const std::vector<std::string>* args);
  onnx::GraphProto* graph() { return graph_; }
  ModelState& model() { return model_; }

 private:
  ModelState& model_;
  onnx::GraphProto* graph_;
  std::map<TensorRef, std::string> claimed_;
};

}  // namespace kiln::onnx_export
