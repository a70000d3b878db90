#include "passes/autodiff.h"

#include <map>
#include <mutex>
#include <set>

#include "ir/op_registry.h"
#include "ir/ops/control.h"

namespace kiln {
namespace {

bool Differentiable(DType t) { return IsFloat(t); }

// Sums the gradient contributions flowing into one tensor of `node` (in order, for reproducible
// graphs), naming the Add nodes under "gradients/<node>" and attributing them to its source line.
Value SumAll(GraphBuilder* g, const Node& node, const std::vector<Value>& parts) {
  if (parts.size() == 1) return parts[0];
  auto scope = g->Scope("gradients/" + node.name).Enter();
  GraphBuilder::SourceOverride source(g, node.source.empty() ? "" : node.source + " (gradient)");
  Value total = parts[0];
  for (size_t i = 1; i < parts.size(); ++i)
    total = g->AddOp1("Add", {total, parts[i]}, {}, SourceLocation::current());
  return total;
}

// A control-flow body's gradient (ir/ops/control.h, BodyGradientFn): the body again, a
// Placeholder "d_result_<i>" for each float result, and the chosen arguments' gradients as its
// results "d_arg_<i>".
Result<std::shared_ptr<const Graph>> BodyGradient(const Graph& body, const std::vector<bool>& wrt) {
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<GraphBuilder> b, GraphBuilder::FromGraph(body));
  std::vector<Value> args, results, seeds, xs;
  for (const std::string& name : body.inputs()) {
    KILN_ASSIGN_OR_RETURN(Value v, b->Find(name));
    args.push_back(v);
  }
  for (const GraphOutput& out : body.outputs()) {
    KILN_ASSIGN_OR_RETURN(Value v, b->Find(out.tensor.ToString()));
    if (!Differentiable(v.dtype())) continue;
    results.push_back(v);
    seeds.push_back(
        b->Placeholder("d_result_" + std::to_string(seeds.size()), v.dtype(), v.shape()));
  }
  for (size_t i = 0; i < args.size() && i < wrt.size(); ++i)
    if (wrt[i]) xs.push_back(args[i]);
  std::vector<Value> grads;
  if (!xs.empty() && !results.empty()) {
    KILN_ASSIGN_OR_RETURN(grads, Gradients(results, xs, seeds));
  } else {
    for (const Value& x : xs)
      grads.push_back(b->AddOp1("ZerosLike", {x}, {}, SourceLocation::current()));
  }
  KILN_ASSIGN_OR_RETURN(Graph graph, b->Build());
  std::vector<GraphOutput> outputs;
  for (size_t k = 0; k < grads.size(); ++k)
    outputs.push_back({"d_arg_" + std::to_string(k), grads[k].ref()});
  graph.mutable_outputs() = std::move(outputs);
  return std::make_shared<const Graph>(std::move(graph));
}

}  // namespace

Result<std::vector<Value>> Gradients(const std::vector<Value>& ys, const std::vector<Value>& xs,
                                     const std::vector<Value>& grad_ys) {
  static std::once_flag installed;
  std::call_once(installed, [] { SetBodyGradientFn(BodyGradient); });
  if (ys.empty()) return MakeError(ErrorCode::kInvalidArgument, "Gradients: no ys given");
  if (!grad_ys.empty() && grad_ys.size() != ys.size())
    return MakeError(ErrorCode::kInvalidArgument, "Gradients: ", ys.size(), " ys but ",
                     grad_ys.size(), " grad_ys");
  GraphBuilder* g = nullptr;
  for (const Value& v : ys)
    if (v.valid()) g = v.builder();
  if (!g)
    return MakeError(ErrorCode::kInvalidArgument,
                     "Gradients: every y is invalid (see the builder's errors)");
  for (const Value& v : xs)
    if (!v.valid() || v.builder() != g)
      return MakeError(ErrorCode::kInvalidArgument,
                       "Gradients: an x is invalid or from another GraphBuilder");

  const Graph& graph = g->graph();
  size_t num_nodes = graph.nodes().size();
  auto index_of = [&](const std::string& name) {
    return static_cast<size_t>(graph.FindNode(name) - graph.nodes().data());
  };
  // Nodes that some y depends on (through data inputs), and nodes that depend on some x.
  std::vector<bool> to_y(num_nodes, false), from_x(num_nodes, false);
  std::vector<size_t> stack;
  for (const Value& y : ys)
    if (y.valid()) stack.push_back(y.node_index());
  while (!stack.empty()) {
    size_t n = stack.back();
    stack.pop_back();
    if (to_y[n]) continue;
    to_y[n] = true;
    for (const TensorRef& in : graph.nodes()[n].inputs) stack.push_back(index_of(in.node));
  }
  // Node indices in topological order (indices stay valid while the graph grows; pointers don't).
  std::vector<size_t> order;
  {
    KILN_ASSIGN_OR_RETURN(std::vector<const Node*> nodes, graph.TopologicalOrder());
    for (const Node* node : nodes)
      order.push_back(static_cast<size_t>(node - graph.nodes().data()));
  }
  std::set<TensorRef> x_refs;
  for (const Value& x : xs) x_refs.insert(x.ref());
  for (size_t n : order) {
    const Node* node = &graph.nodes()[n];
    for (int p = 0; p < static_cast<int>(node->output_types.size()); ++p)
      if (x_refs.count(TensorRef{node->name, p})) from_x[n] = true;
    for (const TensorRef& in : node->inputs)
      if (from_x[index_of(in.node)]) from_x[n] = true;
  }

  // Gradient contributions per tensor, seeded at the ys.
  std::map<TensorRef, std::vector<Value>> contributions;
  for (size_t i = 0; i < ys.size(); ++i) {
    if (!ys[i].valid()) continue;
    if (!Differentiable(ys[i].dtype()))
      return MakeError(ErrorCode::kInvalidArgument, "Gradients: y '", ys[i].name(), "' has dtype ",
                       DTypeName(ys[i].dtype()), "; only float tensors can be differentiated");
    Value seed = grad_ys.empty() || !grad_ys[i].valid()
                     ? g->AddOp1("OnesLike", {ys[i]}, {}, SourceLocation::current())
                     : grad_ys[i];
    contributions[ys[i].ref()].push_back(seed);
  }

  // Walk the nodes between the xs and the ys in reverse order. The graph grows while we walk, so
  // copy what we need of each forward node before building its gradient.
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    size_t n = *it;
    Node node = graph.nodes()[n];
    if (!to_y[n] || !from_x[n]) continue;
    std::vector<Value> outputs, grads;
    bool any = false;
    for (int p = 0; p < static_cast<int>(node.output_types.size()); ++p) {
      outputs.emplace_back(g, n, p);
      auto c = contributions.find(TensorRef{node.name, p});
      if (c != contributions.end()) {
        grads.push_back(SumAll(g, node, c->second));
        any = true;
      } else {
        grads.emplace_back();
      }
    }
    if (!any) continue;
    const OpDef* def = OpRegistry::Global().Find(node.op);
    if (def->not_differentiable) continue;
    bool wants_input_grad = false;
    for (const TensorRef& in : node.inputs) {
      size_t p = index_of(in.node);
      if (from_x[p] && Differentiable(graph.nodes()[p].output_types[in.port].dtype))
        wants_input_grad = true;
    }
    if (!wants_input_grad) continue;
    if (!def->grad)
      return node.MakeNodeError(ErrorCode::kUnimplemented, "no gradient is registered for op '",
                                node.op, "'");

    std::vector<Value> inputs;
    for (const TensorRef& in : node.inputs) inputs.emplace_back(g, index_of(in.node), in.port);
    AttrMap attrs = def->WithDefaults(node.attrs);
    GradContext ctx(*g, node, attrs, inputs, outputs, grads);
    size_t errors_before = g->errors().size();
    {
      auto scope = g->Scope("gradients/" + node.name).Enter();
      GraphBuilder::SourceOverride source(g,
                                          node.source.empty() ? "" : node.source + " (gradient)");
      KILN_RETURN_IF_ERROR(def->grad(ctx));
    }
    if (g->errors().size() > errors_before)
      return g->errors().back().WithContext("building the gradient of " + node.Describe());
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Value& dx = ctx.input_grads()[i];
      size_t p = inputs[i].node_index();
      if (!dx.valid() || !from_x[p] || !Differentiable(inputs[i].dtype())) continue;
      if (dx.dtype() != inputs[i].dtype() || dx.rank() != inputs[i].rank())
        return node.MakeNodeError(ErrorCode::kInternal, "the gradient for input ", i, " has type ",
                                  dx.type().ToString(), ", expected ", inputs[i].type().ToString());
      contributions[inputs[i].ref()].push_back(dx);
    }
  }

  std::vector<Value> result;
  for (const Value& x : xs) {
    auto c = contributions.find(x.ref());
    Node x_node = graph.nodes()[x.node_index()];
    if (c != contributions.end()) {
      result.push_back(SumAll(g, x_node, c->second));
    } else {
      auto scope = g->Scope("gradients/" + x_node.name).Enter();
      GraphBuilder::SourceOverride source(
          g, x_node.source.empty() ? "" : x_node.source + " (gradient)");
      result.push_back(g->AddOp1("ZerosLike", {x}, {}, SourceLocation::current()));
    }
  }
  return result;
}

}  // namespace kiln
