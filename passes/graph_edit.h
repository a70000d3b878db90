// What the passes share for rewriting a graph in place.
//
// - IsPinned: the nodes no pass may remove, merge or replace.
// - Rewirer: replacements recorded during one walk over the graph in topological order. A pass
//   records "node y is now node x" (every port and control input) or "tensor y:p is now tensor
//   t", calls Apply(node) on each node before looking at its inputs (its producers come
//   first in the order, so their replacements are known by then), and Finish(graph) at the end:
//   it rewires every node's data and control inputs and every graph output, and deletes the
//   replaced nodes. Replacements are resolved transitively, so chains (y -> x, z -> y) work.
// - TopologicalNames: the order by name, which stays valid while a pass edits nodes in place.
// - ConstantValue: the value of a tensor a Constant node produces.
// - AddAfterProducers: adds new nodes, each right after the node its first input comes from.
// - UniqueName, NodeReading: names and nodes a pass adds, clear of the graph's.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"
#include "ir/tensor.h"

namespace kiln {

// True for nodes no pass may remove, merge or replace: ops the registry marks stateful
// (Variable, Assign, AssignAdd, AssignSub, Dropout), ops the registry does not know, Placeholders,
// ops with no outputs (NoOp: they exist to be run as targets), and nodes named in the graph's
// inputs or update ops.
bool IsPinned(const Graph& graph, const Node& node);

// The value of `ref` when its producer is a Constant node, else nullptr.
const Tensor* ConstantValue(const Graph& graph, const TensorRef& ref);

// Node names in an order where each comes after its data and control inputs.
Result<std::vector<std::string>> TopologicalNames(const Graph& graph);

// True when input `i` of `node` names the variable a stateful op writes (Assign's "variable"): it
// must stay a Variable node, never a value computed from one.
bool IsVariableReference(const Node& node, size_t i);

// `base`, or "<base>_2", "<base>_3", ... the first that `taken` does not hold; added to `taken`.
std::string UniqueName(const std::string& base, std::set<std::string>& taken);

// A new `op` node whose only input is output `port` of `producer`, on the producer's device and
// with its source location, named "<producer>/<suffix>" ("_<port>" added for ports other than 0,
// then "_2", "_3", ... while `taken` has the name); the name is added to `taken`.
Node NodeReading(const Node& producer, int port, const std::string& op, const std::string& suffix,
                 std::set<std::string>& taken);

// Adds `nodes` to `graph`, each placed right after the producer of its first input (so that the
// text form reads in order); fails if a name is taken.
Status AddAfterProducers(Graph& graph, std::vector<Node> nodes);

class Rewirer {
 public:
  // Every output port of `from` becomes the same port of `to`; control inputs on `from` become
  // control inputs on `to`. `from` is deleted by Finish.
  void ReplaceNode(const std::string& from, const std::string& to);
  // Tensor `from` becomes `to`; control inputs on `from`'s node become control inputs on `to`'s
  // node. `from`'s node is deleted by Finish: replace each of its outputs that has uses.
  void ReplaceTensor(const TensorRef& from, const TensorRef& to);

  // Rewires `node`'s data and control inputs (control inputs deduplicated); true if any changed.
  bool Apply(Node& node) const;
  TensorRef Resolve(const TensorRef& ref) const;
  bool empty() const { return removed_.empty(); }

  // Applies the replacements to every node and graph output and deletes the replaced nodes.
  void Finish(Graph& graph) const;

 private:
  std::string ResolveNode(const std::string& name) const;

  std::map<TensorRef, TensorRef> tensors_;      // ReplaceTensor
  std::map<std::string, std::string> nodes_;    // ReplaceNode: every port
  std::map<std::string, std::string> control_;  // both: control inputs
  std::set<std::string> removed_;
};

}  // namespace kiln
