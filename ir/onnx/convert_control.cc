// ONNX If and Loop as kiln If and While (ir/ops/control.h). An ONNX subgraph reads values of the
// enclosing graphs by name; kiln's bodies see only their arguments, so every such name (found by
// OuterNames) becomes an argument: If passes them in after the condition, Loop carries them along
// unchanged.
//
// Loop(M, cond, v...) with body (iteration, cond_in, v...) -> (cond_out, v..., scan...) becomes
// While over (i, keep_going, M, v..., captured..., scan accumulators...): its condition is
// keep_going and i < M (an absent M: no limit; an absent cond: true), its body runs the ONNX body
// and appends each scan output along a new axis 0. A scan output's per-iteration dims must be known
// at import (from the body, or declared in it), to start its empty accumulator.
#include <limits>
#include <set>

#include "ir/io/onnx_tensor.h"
#include "ir/onnx/convert_context.h"
#include "ir/ops/array.h"
#include "ir/ops/control.h"
#include "ir/ops/math.h"

namespace kiln::onnx_import {
namespace {

Result<const onnx::GraphProto*> GraphAttr(const OnnxNode& n, const std::string& name) {
  const onnx::AttributeProto* a = n.Attr(name);
  if (!a || !a->has_g()) return n.Fail("needs the graph attribute '", name, "'");
  return &a->g();
}

// The enclosing graph's values that `names` stand for.
Result<std::vector<Value>> OuterValues(const OnnxNode& n, const std::vector<std::string>& names) {
  std::vector<Value> values;
  for (const std::string& name : names) {
    const OnnxValue* v = n.value_of(name);
    if (!v || !v->value.valid())
      return n.Fail("a subgraph reads '", name,
                    "', which is not a graph input, an initializer or an earlier node's output");
    values.push_back(v->value);
  }
  return values;
}

// Binds `names` to fresh arguments of `g` of `values`' types (their known values too).
std::vector<Value> BindArguments(const OnnxNode& n, GraphBuilder& g,
                                 const std::vector<std::string>& names,
                                 const std::vector<Value>& outer, size_t first_index,
                                 std::map<std::string, OnnxValue>& values) {
  std::vector<Value> args;
  for (size_t k = 0; k < names.size(); ++k) {
    OnnxValue v;
    v.value =
        g.Placeholder("arg_" + std::to_string(first_index + k), outer[k].dtype(), outer[k].shape());
    if (const OnnxValue* known = n.value_of(names[k])) v.known = known->known;
    args.push_back(v.value);
    values[names[k]] = std::move(v);
  }
  return args;
}

Result<std::vector<Value>> SubgraphResults(const OnnxNode& n, const onnx::GraphProto& body,
                                           const std::map<std::string, OnnxValue>& values) {
  std::vector<Value> results;
  for (const onnx::ValueInfoProto& out : body.output()) {
    auto it = values.find(out.name());
    if (it == values.end() || !it->second.value.valid())
      return n.Fail("the subgraph's output '", out.name(), "' is not computed in it");
    results.push_back(it->second.value);
  }
  return results;
}

Result<std::shared_ptr<const Graph>> Finish(const OnnxNode& n, GraphBuilder& g,
                                            const std::vector<Value>& results,
                                            const std::string& what) {
  for (size_t i = 0; i < results.size(); ++i) g.Output("result_" + std::to_string(i), results[i]);
  Result<Graph> graph = g.Build();
  if (!graph.ok()) return n.Fail(what, ": ", graph.error().message());
  return std::make_shared<const Graph>(std::move(*graph));
}

Status ConvertIf(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(Value cond, n.input(0));
  KILN_ASSIGN_OR_RETURN(const onnx::GraphProto* then_graph, GraphAttr(n, "then_branch"));
  KILN_ASSIGN_OR_RETURN(const onnx::GraphProto* else_graph, GraphAttr(n, "else_branch"));
  std::vector<std::string> captured;
  std::set<std::string> seen;
  for (const onnx::GraphProto* g : {then_graph, else_graph})
    for (const std::string& name : OuterNames(*g))
      if (seen.insert(name).second) captured.push_back(name);
  KILN_ASSIGN_OR_RETURN(std::vector<Value> inputs, OuterValues(n, captured));
  std::shared_ptr<const Graph> branches[2];
  for (int b = 0; b < 2; ++b) {
    const char* which = b == 0 ? "then_branch" : "else_branch";
    GraphBuilder g;
    std::map<std::string, OnnxValue> values;
    BindArguments(n, g, captured, inputs, 0, values);
    KILN_RETURN_IF_ERROR(ConvertSubgraphNodes(g, b == 0 ? *then_graph : *else_graph, n.opset(),
                                              n.label() + " " + which, values));
    KILN_ASSIGN_OR_RETURN(std::vector<Value> results,
                          SubgraphResults(n, b == 0 ? *then_graph : *else_graph, values));
    KILN_ASSIGN_OR_RETURN(branches[b], Finish(n, g, results, which));
  }
  if (branches[0]->outputs().size() != static_cast<size_t>(n.num_outputs()))
    return n.Fail("its branches give ", branches[0]->outputs().size(), " outputs; the node has ",
                  n.num_outputs());
  Value flag = cond.rank() == 0 ? cond : Reshape(cond, {});
  std::vector<Value> outs = If(flag, inputs, branches[0], branches[1]);
  for (size_t i = 0; i < outs.size(); ++i) n.SetOutput(static_cast<int>(i), outs[i]);
  return OkStatus();
}

// The per-iteration type of a scan output as the body declares it (when its converted type has
// dims unknown at import).
Result<TensorType> ScanType(const OnnxNode& n, const onnx::ValueInfoProto& vi) {
  const auto& tt = vi.type().tensor_type();
  std::optional<DType> dtype =
      vi.type().has_tensor_type() ? DTypeOfOnnx(tt.elem_type()) : std::nullopt;
  std::vector<int64_t> dims;
  bool known = dtype && tt.has_shape();
  if (known)
    for (const auto& d : tt.shape().dim()) {
      known = known && d.has_dim_value() && d.dim_value() >= 0;
      dims.push_back(d.dim_value());
    }
  if (!known)
    return n.Unsupported("scan output '", vi.name(),
                         "' needs its dtype and dims declared in the body");
  return TensorType{*dtype, Shape(std::move(dims))};
}

Status ConvertLoop(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(const onnx::GraphProto* body, GraphAttr(n, "body"));
  GraphBuilder& g = n.g();
  const int carried = std::max(0, n.num_inputs() - 2);
  if (body->input_size() != 2 + carried || body->output_size() < 1 + carried)
    return n.Fail("its body takes ", body->input_size(), " inputs and gives ", body->output_size(),
                  " outputs; ", carried, " loop-carried value(s) need ", 2 + carried,
                  " inputs and at least ", 1 + carried, " outputs");
  const int scans = body->output_size() - 1 - carried;
  // The loop variables: i, keep going, M, the carried values, the captured ones, the scans.
  std::vector<Value> vars;
  vars.push_back(g.Constant(Tensor::Scalar<int64_t>(0)));
  if (n.has_input(1)) {
    KILN_ASSIGN_OR_RETURN(Value c, n.input(1));
    vars.push_back(c.rank() == 0 ? c : Reshape(c, {}));
  } else {
    vars.push_back(g.Constant(Tensor::Scalar<bool>(true)));
  }
  if (n.has_input(0)) {
    KILN_ASSIGN_OR_RETURN(Value m, n.input(0));
    if (m.dtype() != i64) m = Cast(m, i64);
    vars.push_back(m.rank() == 0 ? m : Reshape(m, {}));
  } else {
    vars.push_back(g.Constant(Tensor::Scalar<int64_t>(std::numeric_limits<int64_t>::max())));
  }
  for (int k = 0; k < carried; ++k) {
    KILN_ASSIGN_OR_RETURN(Value v, n.input(2 + k));
    vars.push_back(v);
  }
  const std::vector<std::string> captured = OuterNames(*body);
  KILN_ASSIGN_OR_RETURN(std::vector<Value> outer, OuterValues(n, captured));
  vars.insert(vars.end(), outer.begin(), outer.end());
  for (const Value& v : vars)
    if (!v.valid()) return n.Fail("its loop variables could not be built");

  // The body: the ONNX body on the loop variables, then the next ones.
  GraphBuilder bg;
  std::vector<Value> args;
  for (size_t k = 0; k < vars.size(); ++k)
    args.push_back(bg.Placeholder("arg_" + std::to_string(k), vars[k].dtype(), vars[k].shape()));
  std::map<std::string, OnnxValue> values;
  for (int k = 0; k < 2 + carried; ++k) {
    const std::string& name = body->input(k).name();
    if (name.empty()) continue;
    OnnxValue v;
    v.value = args[k < 2 ? k : k + 1];  // M sits between the condition and the carried values
    values[name] = std::move(v);
  }
  for (size_t k = 0; k < captured.size(); ++k) {
    OnnxValue v;
    v.value = args[3 + carried + k];
    if (const OnnxValue* known = n.value_of(captured[k])) v.known = known->known;
    values[captured[k]] = std::move(v);
  }
  KILN_RETURN_IF_ERROR(ConvertSubgraphNodes(bg, *body, n.opset(), n.label() + " body", values));
  KILN_ASSIGN_OR_RETURN(std::vector<Value> out, SubgraphResults(n, *body, values));
  std::vector<Value> next = {args[0] + 1.0, out[0].rank() == 0 ? out[0] : Reshape(out[0], {}),
                             args[2]};
  for (int k = 0; k < carried; ++k) next.push_back(out[1 + k]);
  for (size_t k = 0; k < captured.size(); ++k) next.push_back(args[3 + carried + k]);
  // Each scan output is appended to an accumulator that starts empty ([0, dims...]).
  for (int j = 0; j < scans; ++j) {
    const Value scan = out[1 + carried + j];
    TensorType t = scan.type();
    if (!t.shape.IsFullyKnown()) {
      KILN_ASSIGN_OR_RETURN(t, ScanType(n, body->output(1 + carried + j)));
    }
    std::vector<int64_t> dims = t.shape.dims();
    dims.insert(dims.begin(), 0);
    KILN_ASSIGN_OR_RETURN(Tensor none, NewTensor(n, t.dtype, Shape(dims)));
    vars.push_back(g.Constant(none));
    dims[0] = kUnknownDim;
    Value acc = bg.Placeholder("arg_" + std::to_string(args.size()), t.dtype, Shape(dims));
    args.push_back(acc);
    next.push_back(Concat({acc, Unsqueeze(scan, {0})}, 0));
  }
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Graph> loop_body, Finish(n, bg, next, "body"));
  std::vector<TensorType> types;
  for (const Value& a : args) types.push_back(a.type());
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Graph> cond,
                        BuildBody(types, [](const std::vector<Value>& a) {
                          return std::vector<Value>{And(a[1], Less(a[0], a[2]))};
                        }));

  std::vector<Value> finals = While(vars, cond, loop_body);
  if (finals.size() != vars.size()) return n.Fail("its loop could not be built");
  int output = 0;
  for (int k = 0; k < carried; ++k) n.SetOutput(output++, finals[3 + k]);
  for (int j = 0; j < scans; ++j) n.SetOutput(output++, finals[3 + carried + captured.size() + j]);
  return OkStatus();
}

}  // namespace

void AddControlConverters(ConverterTable& t) {
  t["If"] = ConvertIf;
  t["Loop"] = ConvertLoop;
}

}  // namespace kiln::onnx_import
