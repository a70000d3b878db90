// Graph and Node: kiln's in-memory IR.
//
// A Graph is an ordered list of uniquely named Nodes. A node consumes tensors produced by other
// nodes ("node:port" references) and may have control inputs (nodes that must run first and pass
// no data). Named graph inputs are Placeholder nodes; named graph outputs map a name to a tensor.
// `output_types` on each node is filled by type inference (see verifier.h) and never serialized.
// Pointers returned by FindNode stay valid until the graph's node list changes.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ir/attr.h"
#include "ir/dtype.h"
#include "ir/shape.h"
#include "ir/status.h"

namespace kiln {

// One output of one node: "node:port" (port 0 may be written as just "node").
struct TensorRef {
  std::string node;
  int port = 0;

  static Result<TensorRef> Parse(std::string_view text);
  std::string ToString() const { return node + ":" + std::to_string(port); }
  bool operator==(const TensorRef& o) const { return node == o.node && port == o.port; }
  bool operator<(const TensorRef& o) const {
    return node != o.node ? node < o.node : port < o.port;
  }
};

struct TensorType {
  DType dtype = DType::kInvalid;
  Shape shape;
  std::string ToString() const { return std::string(DTypeName(dtype)) + shape.ToString(); }
  bool operator==(const TensorType& o) const { return dtype == o.dtype && shape == o.shape; }
};

struct Node {
  std::string name;
  std::string op;
  std::vector<TensorRef> inputs;
  std::vector<std::string> control_inputs;
  AttrMap attrs;
  std::string device;
  std::string source;  // "file:line" where it was built, or where it was imported from
  std::vector<TensorType> output_types;  // filled by InferTypes

  // "node 'fc/MatMul_3' (MatMul, built at models/mlp.cc:42)": the prefix of every node error.
  std::string Describe() const;
  // An error about this node: "<Describe()>: <parts...>".
  template <typename... Args>
  Error MakeNodeError(ErrorCode code, const Args&... parts) const {
    return MakeError(code, Describe(), ": ", parts...);
  }
};

struct GraphOutput {
  std::string name;
  TensorRef tensor;
};

class Graph {
 public:
  static constexpr int kFormatVersion = 1;

  // Fails if the name is empty or taken.
  Result<Node*> AddNode(Node node);
  const Node* FindNode(std::string_view name) const;
  Node* FindNode(std::string_view name);
  const std::vector<Node>& nodes() const { return nodes_; }
  std::vector<Node>& mutable_nodes() { return nodes_; }
  // Renames a node and every reference to it (inputs, control inputs, graph inputs and outputs).
  Status RenameNode(const std::string& old_name, const std::string& new_name);
  // Removes the nodes for which remove(node) is true (graph inputs/outputs are not updated).
  template <typename Pred>
  void RemoveNodesIf(Pred remove);

  const std::vector<std::string>& inputs() const { return inputs_; }
  std::vector<std::string>& mutable_inputs() { return inputs_; }
  const std::vector<GraphOutput>& outputs() const { return outputs_; }
  std::vector<GraphOutput>& mutable_outputs() { return outputs_; }
  // Nodes to run with every training step (see proto GraphDef.update_ops).
  const std::vector<std::string>& update_ops() const { return update_ops_; }
  std::vector<std::string>& mutable_update_ops() { return update_ops_; }

  // Resolves a user-facing tensor name: a graph output's name, "node:port", or "node" (port 0).
  Result<TensorRef> ResolveTensor(std::string_view name) const;
  // The inferred type of a tensor, or an error if the node or port does not exist.
  Result<TensorType> TypeOf(const TensorRef& ref) const;
  // Nodes in an order where every node comes after its data and control inputs.
  // Fails naming the nodes on a cycle, or a missing input.
  Result<std::vector<const Node*>> TopologicalOrder() const;

  bool operator==(const Graph& o) const;

 private:
  void Reindex();
  std::vector<Node> nodes_;
  std::unordered_map<std::string, size_t> index_;
  std::vector<std::string> inputs_;
  std::vector<GraphOutput> outputs_;
  std::vector<std::string> update_ops_;
};

template <typename Pred>
void Graph::RemoveNodesIf(Pred remove) {
  std::vector<Node> kept;
  for (Node& n : nodes_)
    if (!remove(static_cast<const Node&>(n))) kept.push_back(std::move(n));
  nodes_ = std::move(kept);
  Reindex();
}

}  // namespace kiln
