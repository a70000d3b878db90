#include "ir/builder.h"

#include <set>

#include "ir/op_registry.h"
#include "ir/verifier.h"

namespace kiln {

TensorRef Value::ref() const {
  KILN_CHECK(valid());
  return TensorRef{builder_->node(node_).name, port_};
}

const std::string& Value::node_name() const {
  KILN_CHECK(valid());
  return builder_->node(node_).name;
}

const TensorType& Value::type() const {
  static const TensorType kNone;
  if (!valid()) return kNone;
  const Node& n = builder_->node(node_);
  return port_ < static_cast<int>(n.output_types.size()) ? n.output_types[port_] : kNone;
}

Value Value::Named(const std::string& name, SourceLocation loc) const {
  if (!valid()) return *this;
  Status s = builder_->RenameNode(node_, name);
  if (!s.ok()) builder_->RecordError(s.error().WithContext("at " + loc.ToString()));
  return *this;
}

Scope Scope::Sub(const std::string& name) const { return kiln::Scope(builder_, Join(name)); }

std::string Scope::Join(const std::string& name) const {
  return prefix_.empty() ? name : prefix_ + "/" + name;
}

Scope::Entered::Entered(GraphBuilder* b, std::string prefix)
    : builder_(b), saved_(b->current_prefix()) {
  builder_->set_current_prefix(std::move(prefix));
}
Scope::Entered::~Entered() { builder_->set_current_prefix(std::move(saved_)); }

std::string GraphBuilder::UniqueName(const std::string& base) {
  std::string stem = current_prefix_.empty() ? base : current_prefix_ + "/" + base;
  int& count = name_counts_[stem];  // names issued for this stem so far
  std::string name = count == 0 ? stem : stem + "_" + std::to_string(count);
  while (graph_.FindNode(name)) name = stem + "_" + std::to_string(++count);
  ++count;
  return name;
}

void GraphBuilder::DiscardNodesFrom(size_t count) {
  if (count >= graph_.nodes().size()) return;
  std::set<std::string> discarded;
  for (size_t i = count; i < graph_.nodes().size(); ++i) discarded.insert(graph_.nodes()[i].name);
  graph_.RemoveNodesIf([&](const Node& n) { return discarded.count(n.name) > 0; });
}

Status GraphBuilder::RenameNode(size_t index, const std::string& new_name) {
  return graph_.RenameNode(graph_.nodes()[index].name, new_name);
}

std::vector<Value> GraphBuilder::AddOp(const std::string& op, const std::vector<Value>& inputs,
                                       AttrMap attrs, SourceLocation loc, const std::string& name,
                                       const std::vector<Value>& control_inputs) {
  std::vector<TensorType> input_types;
  std::vector<const Tensor*> input_values;
  Node node;
  node.op = op;
  node.source = source_override_.empty() ? loc.ToString() : source_override_;
  for (const Value& v : inputs) {
    if (!v.valid()) return {Value()};  // an earlier error was recorded already
    if (v.builder() != this) {
      RecordError(MakeError(ErrorCode::kInvalidArgument, "at ", node.source, ": an input of ", op,
                            " belongs to a different GraphBuilder"));
      return {Value()};
    }
    node.inputs.push_back(v.ref());
    input_types.push_back(v.type());
    const Node& producer = graph_.nodes()[v.node_index()];
    input_values.push_back(producer.op == "Constant" ? &producer.attrs.Find("value")->get<Tensor>()
                                                     : nullptr);
  }
  for (const Value& c : control_inputs)
    if (c.valid()) node.control_inputs.push_back(c.node_name());
  node.name = name.empty() ? UniqueName(op) : name;
  node.attrs = std::move(attrs);
  Result<std::vector<TensorType>> types = InferNode(node, input_types, input_values);
  if (!types.ok()) {
    RecordError(types.error());
    return {Value()};
  }
  node.output_types = std::move(*types);
  size_t num_outputs = node.output_types.size();
  Result<Node*> added = graph_.AddNode(std::move(node));
  if (!added.ok()) {
    RecordError(added.error().WithContext("at " + loc.ToString()));
    return {Value()};
  }
  size_t index = graph_.nodes().size() - 1;
  // A node without outputs (NoOp) is still returned as a handle, usable as a target.
  std::vector<Value> outputs;
  if (num_outputs == 0) outputs.emplace_back(this, index, 0);
  for (size_t p = 0; p < num_outputs; ++p) outputs.emplace_back(this, index, static_cast<int>(p));
  return outputs;
}

Value GraphBuilder::AddOp1(const std::string& op, const std::vector<Value>& inputs, AttrMap attrs,
                           SourceLocation loc, const std::string& name) {
  std::vector<Value> outs = AddOp(op, inputs, std::move(attrs), loc, name);
  return outs.empty() ? Value() : outs[0];
}

Value GraphBuilder::Placeholder(const std::string& name, DType dtype, Shape shape,
                                SourceLocation loc) {
  AttrMap attrs;
  attrs.Set("dtype", dtype);
  attrs.Set("shape", std::move(shape));
  Value v = AddOp1("Placeholder", {}, std::move(attrs), loc, name);
  if (v.valid()) graph_.mutable_inputs().push_back(v.node_name());
  return v;
}

Value GraphBuilder::Constant(const Tensor& value, SourceLocation loc) {
  AttrMap attrs;
  attrs.Set("value", value);
  return AddOp1("Constant", {}, std::move(attrs), loc);
}

Value GraphBuilder::Scalar(double value, DType dtype, SourceLocation loc) {
  if (!IsNumeric(dtype) && dtype != boolean) {  // (x + 1.0 on a sequence, say)
    RecordError(MakeError(ErrorCode::kInvalidArgument, "at ", loc.ToString(), ": a scalar ", value,
                          " of dtype ", DTypeName(dtype), ": not a tensor dtype"));
    return Value();
  }
  return Constant(Tensor::FromDoubles(dtype, Shape{}, {value}), loc);
}

void GraphBuilder::Output(const std::string& name, Value value, SourceLocation loc) {
  if (!value.valid()) return;
  for (const GraphOutput& out : graph_.outputs())
    if (out.name == name) {
      RecordError(MakeError(ErrorCode::kAlreadyExists, "at ", loc.ToString(), ": graph output '",
                            name, "' is defined twice"));
      return;
    }
  graph_.mutable_outputs().push_back({name, value.ref()});
}

void GraphBuilder::AddUpdateOp(Value op) {
  if (op.valid()) graph_.mutable_update_ops().push_back(op.node_name());
}

Result<Graph> GraphBuilder::Build() const {
  if (!errors_.empty()) {
    std::string message = std::to_string(errors_.size()) + " error(s) while building the graph:";
    for (const Error& e : errors_) message += "\n  " + e.ToString();
    return Error(errors_.front().code(), message);
  }
  Graph graph = graph_;
  KILN_RETURN_IF_ERROR(Verify(graph));
  return graph;
}

Result<std::unique_ptr<GraphBuilder>> GraphBuilder::FromGraph(Graph graph) {
  KILN_RETURN_IF_ERROR(Verify(graph));
  auto builder = std::make_unique<GraphBuilder>();
  builder->graph_ = std::move(graph);
  return builder;
}

Result<Value> GraphBuilder::Find(const std::string& tensor_name) {
  KILN_ASSIGN_OR_RETURN(TensorRef ref, graph_.ResolveTensor(tensor_name));
  KILN_RETURN_IF_ERROR(graph_.TypeOf(ref).status());
  const Node* node = graph_.FindNode(ref.node);
  return Value(this, static_cast<size_t>(node - graph_.nodes().data()), ref.port);
}

namespace {
Value Binary(const char* op, const Value& a, const Value& b, SourceLocation loc) {
  GraphBuilder* g = a.valid() ? a.builder() : b.builder();
  if (!g) return Value();
  return g->AddOp1(op, {a, b}, {}, loc);
}
Value ScalarLike(const Value& like, double v, SourceLocation loc) {
  if (!like.valid()) return Value();
  return like.builder()->Scalar(v, like.dtype(), loc);
}
}  // namespace

Value operator+(At a, Value b) { return Binary("Add", a.value, b, a.loc); }
Value operator-(At a, Value b) { return Binary("Sub", a.value, b, a.loc); }
Value operator*(At a, Value b) { return Binary("Mul", a.value, b, a.loc); }
Value operator/(At a, Value b) { return Binary("Div", a.value, b, a.loc); }
Value operator+(At a, double b) {
  return Binary("Add", a.value, ScalarLike(a.value, b, a.loc), a.loc);
}
Value operator-(At a, double b) {
  return Binary("Sub", a.value, ScalarLike(a.value, b, a.loc), a.loc);
}
Value operator*(At a, double b) {
  return Binary("Mul", a.value, ScalarLike(a.value, b, a.loc), a.loc);
}
Value operator/(At a, double b) {
  return Binary("Div", a.value, ScalarLike(a.value, b, a.loc), a.loc);
}
Value operator+(double a, At b) {
  return Binary("Add", ScalarLike(b.value, a, b.loc), b.value, b.loc);
}
Value operator-(double a, At b) {
  return Binary("Sub", ScalarLike(b.value, a, b.loc), b.value, b.loc);
}
Value operator*(double a, At b) {
  return Binary("Mul", ScalarLike(b.value, a, b.loc), b.value, b.loc);
}
Value operator/(double a, At b) {
  return Binary("Div", ScalarLike(b.value, a, b.loc), b.value, b.loc);
}
Value operator-(At a) {
  if (!a.value.valid()) return Value();
  return a.value.builder()->AddOp1("Neg", {a.value}, {}, a.loc);
}

}  // namespace kiln
