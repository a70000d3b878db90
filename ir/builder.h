// The public C++ API for building graphs: GraphBuilder, Value, and name scopes.
//
//   kiln::GraphBuilder g;
//   auto x = g.Placeholder("x", kiln::f32, {-1, 64});
//   auto w = g.Variable("w", kiln::f32, {64, 10}, kiln::Initializer::GlorotUniform(1));
//   auto y = kiln::Relu(kiln::MatMul(x, w)).Named("y");
//   g.Output("y", y);
//   kiln::Result<kiln::Graph> graph = g.Build();  // verified; errors name file:line
//
// Every op function infers its output types eagerly and records the C++ source line that built
// the node. A builder error (a shape mismatch, a bad attribute) does not throw: it is recorded, the
// returned Value is invalid, ops given an invalid Value quietly yield invalid Values, and Build()
// reports every recorded error.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/source_location.h"
#include "ir/status.h"
#include "ir/tensor.h"

namespace kiln {

class GraphBuilder;

// One output of one node in a GraphBuilder.
class Value {
 public:
  Value() = default;
  Value(GraphBuilder* builder, size_t node_index, int port)
      : builder_(builder), node_(node_index), port_(port) {}

  bool valid() const { return builder_ != nullptr && node_ != kInvalid; }
  GraphBuilder* builder() const { return builder_; }
  size_t node_index() const { return node_; }
  int port() const { return port_; }
  // "node:port" as it will appear in the built graph.
  TensorRef ref() const;
  std::string name() const { return ref().ToString(); }
  const std::string& node_name() const;
  const TensorType& type() const;
  DType dtype() const { return type().dtype; }
  const Shape& shape() const { return type().shape; }
  int rank() const { return shape().rank(); }
  // Renames the producing node (within the current scope's prefix is NOT applied: the name is
  // used as given). Returns *this for chaining; a taken name is recorded as a builder error.
  Value Named(const std::string& name, SourceLocation loc = SourceLocation::current()) const;

 private:
  static constexpr size_t kInvalid = static_cast<size_t>(-1);
  GraphBuilder* builder_ = nullptr;
  size_t node_ = kInvalid;
  int port_ = 0;
};

// A Value together with the source line of the expression that produced it; lets operators and
// functions record where they were called from.
struct At {
  At(Value v, SourceLocation l = SourceLocation::current()) : value(v), loc(l) {}  // NOLINT
  Value value;
  SourceLocation loc;
};

// A name prefix, e.g. "conv1". Layers take a Scope and create their variables and nodes under it.
class Scope {
 public:
  Scope(GraphBuilder* builder, std::string prefix)
      : builder_(builder), prefix_(std::move(prefix)) {}
  Scope Sub(const std::string& name) const;
  const std::string& prefix() const { return prefix_; }
  GraphBuilder& builder() const { return *builder_; }
  // "prefix/name".
  std::string Join(const std::string& name) const;

  // While alive, nodes created with generated names are placed under this scope.
  class Entered {
   public:
    explicit Entered(GraphBuilder* b, std::string prefix);
    ~Entered();
    Entered(const Entered&) = delete;
    Entered& operator=(const Entered&) = delete;

   private:
    GraphBuilder* builder_;
    std::string saved_;
  };
  [[nodiscard]] Entered Enter() const { return Entered(builder_, prefix_); }

 private:
  GraphBuilder* builder_;
  std::string prefix_;
};

class GraphBuilder {
 public:
  GraphBuilder() = default;
  GraphBuilder(const GraphBuilder&) = delete;
  GraphBuilder& operator=(const GraphBuilder&) = delete;

  // Graph inputs. Shape dims may be -1 (known at run time).
  Value Placeholder(const std::string& name, DType dtype, Shape shape,
                    SourceLocation loc = SourceLocation::current());
  Value Constant(const Tensor& value, SourceLocation loc = SourceLocation::current());
  // A scalar constant of `dtype`.
  Value Scalar(double value, DType dtype = f32, SourceLocation loc = SourceLocation::current());
  // Marks `value` as a named graph output.
  void Output(const std::string& name, Value value, SourceLocation loc = SourceLocation::current());
  // Records a node that must run with every training step (e.g. a running-statistics update).
  void AddUpdateOp(Value op);
  kiln::Scope Scope(const std::string& name) { return kiln::Scope(this, name); }
  kiln::Scope RootScope() { return kiln::Scope(this, current_prefix_); }

  // Adds a node of `op` and infers its types; returns its outputs (one invalid Value on error; a
  // node without outputs returns one Value that names it, usable as a Session target).
  // `name` empty: a unique name "<scope>/<op>_<n>" is generated.
  std::vector<Value> AddOp(const std::string& op, const std::vector<Value>& inputs, AttrMap attrs,
                           SourceLocation loc, const std::string& name = "",
                           const std::vector<Value>& control_inputs = {});
  // The single output of a one-output op.
  Value AddOp1(const std::string& op, const std::vector<Value>& inputs, AttrMap attrs,
               SourceLocation loc, const std::string& name = "");

  // The number of nodes added so far, and removing the nodes added after that count was taken
  // (a frontend backing out of a conversion it could not finish). The caller must hold no Value
  // of a removed node, and none may be a graph output or update op.
  size_t num_nodes() const { return graph_.nodes().size(); }
  void DiscardNodesFrom(size_t count);

  // Verifies and returns the graph, or every error recorded while building.
  Result<Graph> Build() const;
  // A builder that continues an existing graph (e.g. one loaded from a file): verified first.
  static Result<std::unique_ptr<GraphBuilder>> FromGraph(Graph graph);
  // The Value for a graph output name, "node:port" or "node".
  Result<Value> Find(const std::string& tensor_name);
  // The graph built so far (unverified).
  const Graph& graph() const { return graph_; }

  // While alive, new nodes record `source` instead of their C++ call site (gradient nodes are
  // attributed to the forward node they differentiate).
  class SourceOverride {
   public:
    SourceOverride(GraphBuilder* b, std::string source) : builder_(b), saved_(b->source_override_) {
      builder_->source_override_ = std::move(source);
    }
    ~SourceOverride() { builder_->source_override_ = std::move(saved_); }
    SourceOverride(const SourceOverride&) = delete;
    SourceOverride& operator=(const SourceOverride&) = delete;

   private:
    GraphBuilder* builder_;
    std::string saved_;
  };
  const std::vector<Error>& errors() const { return errors_; }
  void RecordError(Error e) { errors_.push_back(std::move(e)); }

  // For Value and Scope.
  const Node& node(size_t index) const { return graph_.nodes()[index]; }
  Status RenameNode(size_t index, const std::string& new_name);
  std::string UniqueName(const std::string& base);
  const std::string& current_prefix() const { return current_prefix_; }
  void set_current_prefix(std::string p) { current_prefix_ = std::move(p); }

 private:
  Graph graph_;
  std::vector<Error> errors_;
  std::map<std::string, int> name_counts_;
  std::string current_prefix_;
  std::string source_override_;
};

// Arithmetic on Values (elementwise, numpy broadcasting). A double operand becomes a scalar
// constant of the other operand's dtype.
Value operator+(At a, Value b);
Value operator-(At a, Value b);
Value operator*(At a, Value b);
Value operator/(At a, Value b);
Value operator+(At a, double b);
Value operator-(At a, double b);
Value operator*(At a, double b);
Value operator/(At a, double b);
Value operator+(double a, At b);
Value operator-(double a, At b);
Value operator*(double a, At b);
Value operator/(double a, At b);
Value operator-(At a);

}  // namespace kiln
