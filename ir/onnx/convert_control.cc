// ONNX If, Loop, Scan and SequenceMap as kiln If and While (ir/ops/control.h). An ONNX subgraph
// reads values of the enclosing graphs by name; kiln's bodies see only their arguments, so every
// such name (found by OuterNames) becomes an argument: If passes them in after the condition, Loop
// carries them along unchanged.
//
// Loop(M, cond, v...) with body (iteration, cond_in, v...) -> (cond_out, v..., scan...) becomes
// While over (i, keep_going, M, v..., captured...): its condition is
// keep_going and i < M (an absent M: no limit; an absent cond: true), its body runs the ONNX body,
// and the While stacks each scan output along a new axis 0 (its scan outputs, ir/ops/control.h).
//
// Scan (opset 9 on) becomes While over (t, T, states..., scan inputs with their scan axis first,
// captured...) with the scan outputs stacked: iteration t gives the body row t of each scan input
// (row T-1-t for a reversed one) and stacks its scan outputs, which are then reversed and moved to
// their axes as the attributes say. Opset 8's Scan (a batch axis on everything) runs that loop per
// batch entry (the batch known at import); its sequence_lens is not supported.
//
// SequenceMap(s0, x1, ...) with body (e0, x1, ...) -> (y0, ...) becomes While over (t, length of
// s0, the inputs, the captured values, the output sequences): iteration t gives the body element
// t of every sequence input (the others as they are) and appends each result to its sequence.
#include <limits>
#include <set>

#include "ir/onnx/convert_context.h"
#include "ir/ops/array.h"
#include "ir/ops/control.h"
#include "ir/ops/math.h"
#include "ir/ops/sequence.h"

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
    if (const OnnxValue* known = n.value_of(names[k])) {
      v.known = known->known;
      v.element = known->element;
    }
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
  std::vector<ElementTypePtr> elements[2];  // of the branches' container results
  for (int b = 0; b < 2; ++b) {
    const char* which = b == 0 ? "then_branch" : "else_branch";
    GraphBuilder g;
    std::map<std::string, OnnxValue> values;
    BindArguments(n, g, captured, inputs, 0, values);
    KILN_RETURN_IF_ERROR(ConvertSubgraphNodes(g, b == 0 ? *then_graph : *else_graph, n.opset(),
                                              n.label() + " " + which, values));
    KILN_ASSIGN_OR_RETURN(std::vector<Value> results,
                          SubgraphResults(n, b == 0 ? *then_graph : *else_graph, values));
    for (const onnx::ValueInfoProto& out : (b == 0 ? *then_graph : *else_graph).output())
      elements[b].push_back(values[out.name()].element);
    KILN_ASSIGN_OR_RETURN(branches[b], Finish(n, g, results, which));
  }
  if (branches[0]->outputs().size() != static_cast<size_t>(n.num_outputs()))
    return n.Fail("its branches give ", branches[0]->outputs().size(), " outputs; the node has ",
                  n.num_outputs());
  Value flag = cond.rank() == 0 ? cond : Reshape(cond, {});
  std::vector<Value> outs = If(flag, inputs, branches[0], branches[1]);
  for (size_t i = 0; i < outs.size(); ++i)
    n.SetOutput(static_cast<int>(i), outs[i],
                i < elements[0].size() && i < elements[1].size()
                    ? JoinElementTypes(elements[0][i], elements[1][i])
                    : nullptr);
  return OkStatus();
}

// The enclosing graph's values of `captured` join the loop variables `vars`; then the body being
// built in `bg` gets an argument of each loop variable's type, in order.
Result<std::vector<Value>> LoopArguments(const OnnxNode& n,
                                         const std::vector<std::string>& captured,
                                         std::vector<Value>& vars, GraphBuilder& bg) {
  KILN_ASSIGN_OR_RETURN(std::vector<Value> outer, OuterValues(n, captured));
  vars.insert(vars.end(), outer.begin(), outer.end());
  for (const Value& v : vars)
    if (!v.valid()) return n.Fail("its loop variables could not be built");
  std::vector<Value> args;
  for (size_t k = 0; k < vars.size(); ++k)
    args.push_back(bg.Placeholder("arg_" + std::to_string(k), vars[k].dtype(), vars[k].shape()));
  return args;
}

// Binds the captured names to the body's arguments from `first` on.
void BindCaptured(const OnnxNode& n, const std::vector<std::string>& captured,
                  const std::vector<Value>& args, size_t first,
                  std::map<std::string, OnnxValue>& values) {
  for (size_t k = 0; k < captured.size(); ++k) {
    OnnxValue v;
    v.value = args[first + k];
    if (const OnnxValue* known = n.value_of(captured[k])) {
      v.known = known->known;
      v.element = known->element;
    }
    values[captured[k]] = std::move(v);
  }
}

// The body's outputs from `first` on are scan outputs: the body being built gives them after the
// loop variables' next values `next`, and the While stacks them.
void AddScanResults(const onnx::GraphProto& body, int first, const std::vector<Value>& out,
                    std::vector<Value>& next) {
  for (int j = first; j < body.output_size(); ++j) next.push_back(out[j]);
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
  // The body: the ONNX body on the loop variables, then the next ones.
  const std::vector<std::string> captured = OuterNames(*body);
  GraphBuilder bg;
  KILN_ASSIGN_OR_RETURN(std::vector<Value> args, LoopArguments(n, captured, vars, bg));
  std::map<std::string, OnnxValue> values;
  for (int k = 0; k < 2 + carried; ++k) {
    const std::string& name = body->input(k).name();
    if (name.empty()) continue;
    OnnxValue v;
    v.value = args[k < 2 ? k : k + 1];  // M sits between the condition and the carried values
    if (k >= 2) {
      v.element = ElementTypeOf(body->input(k).type());
      if (!v.element) v.element = n.element_of(k);
    }
    values[name] = std::move(v);
  }
  BindCaptured(n, captured, args, 3 + carried, values);
  KILN_RETURN_IF_ERROR(ConvertSubgraphNodes(bg, *body, n.opset(), n.label() + " body", values));
  KILN_ASSIGN_OR_RETURN(std::vector<Value> out, SubgraphResults(n, *body, values));
  std::vector<Value> next = {args[0] + 1.0, out[0].rank() == 0 ? out[0] : Reshape(out[0], {}),
                             args[2]};
  // A carried optional the body replaces with its value (opset 16's "optional until the first
  // iteration sets it") stays an optional in the loop: the body wraps its result, the Loop's
  // output is the value.
  std::vector<bool> unwrap(carried, false);
  for (int k = 0; k < carried; ++k) {
    unwrap[k] = vars[3 + k].dtype() == optional && out[1 + k].dtype() != optional;
    next.push_back(unwrap[k] ? OptionalOf(out[1 + k]) : out[1 + k]);
  }
  for (size_t k = 0; k < captured.size(); ++k) next.push_back(args[3 + carried + k]);
  AddScanResults(*body, 1 + carried, out, next);
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Graph> loop_body, Finish(n, bg, next, "body"));
  std::vector<TensorType> types;
  for (const Value& a : args) types.push_back(a.type());
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Graph> cond,
                        BuildBody(types, [](const std::vector<Value>& a) {
                          return std::vector<Value>{And(a[1], Less(a[0], a[2]))};
                        }));

  std::vector<Value> finals =
      While(vars, cond, loop_body, -1, SourceLocation::current(), "", {scans, -1});
  if (finals.size() != vars.size() + static_cast<size_t>(scans))
    return n.Fail("its loop could not be built");
  int output = 0;
  for (int k = 0; k < carried; ++k) {
    const std::string& result = body->output(1 + k).name();
    const ElementTypePtr after = values.count(result) ? values[result].element : nullptr;
    if (unwrap[k]) {
      const Value& y = out[1 + k];
      n.SetOutput(output++, OptionalGetElement(finals[3 + k], y.dtype(), y.shape()), after);
      continue;
    }
    n.SetOutput(output++, finals[3 + k], GrownElementType(n.element_of(2 + k), after));
  }
  for (int j = 0; j < scans; ++j) n.SetOutput(output++, finals[vars.size() + j]);
  return OkStatus();
}

// The While of a Scan: `states` and `scans` (each with its scan axis first, reversed per
// `in_dirs`) through `body`, giving the final states, then each scan output stacked along axis 0
// in iteration order (the last iteration first where `out_dirs` says so).
Result<std::vector<Value>> ScanLoop(const OnnxNode& n, const onnx::GraphProto& body,
                                    const std::vector<Value>& states,
                                    const std::vector<Value>& scans,
                                    const std::vector<int64_t>& in_dirs,
                                    const std::vector<int64_t>& out_dirs) {
  GraphBuilder& g = n.g();
  const int count = static_cast<int>(states.size()), scans_in = static_cast<int>(scans.size());
  const int scans_out = static_cast<int>(out_dirs.size());
  // The loop variables: t, T, the states, the scan inputs, the captured values.
  std::vector<Value> vars = {g.Constant(Tensor::Scalar<int64_t>(0)), Value()};
  vars.insert(vars.end(), states.begin(), states.end());
  vars.insert(vars.end(), scans.begin(), scans.end());
  vars[1] = Reshape(Slice(ShapeOf(scans[0]), {0}, {1}), {});
  const std::vector<std::string> captured = OuterNames(body);
  GraphBuilder bg;
  KILN_ASSIGN_OR_RETURN(std::vector<Value> args, LoopArguments(n, captured, vars, bg));
  std::map<std::string, OnnxValue> values;
  for (int k = 0; k < count; ++k) values[body.input(k).name()].value = args[2 + k];
  for (int j = 0; j < scans_in; ++j) {
    Value t = in_dirs[j] ? args[1] - 1.0 - args[0] : args[0];  // reversed: T - 1 - t
    values[body.input(count + j).name()].value = Gather(args[2 + count + j], t);
  }
  BindCaptured(n, captured, args, 2 + count + scans_in, values);
  KILN_RETURN_IF_ERROR(ConvertSubgraphNodes(bg, body, n.opset(), n.label() + " body", values));
  KILN_ASSIGN_OR_RETURN(std::vector<Value> out, SubgraphResults(n, body, values));
  std::vector<Value> next = {args[0] + 1.0, args[1]};
  for (int k = 0; k < count; ++k) next.push_back(out[k]);
  for (size_t k = 2 + count; k < args.size(); ++k) next.push_back(args[k]);  // unchanged
  AddScanResults(body, count, out, next);
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Graph> loop_body, Finish(n, bg, next, "body"));
  std::vector<TensorType> types;
  for (const Value& a : args) types.push_back(a.type());
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Graph> cond,
                        BuildBody(types, [](const std::vector<Value>& a) {
                          return std::vector<Value>{Less(a[0], a[1])};
                        }));
  std::vector<Value> finals =
      While(vars, cond, loop_body, -1, SourceLocation::current(), "", {scans_out, -1});
  if (finals.size() != vars.size() + static_cast<size_t>(scans_out))
    return n.Fail("its loop could not be built");
  std::vector<Value> result(finals.begin() + 2, finals.begin() + 2 + count);
  for (int j = 0; j < scans_out; ++j) {
    Value y = finals[vars.size() + j];
    if (out_dirs[j]) {  // the last iteration's output first
      Value t = vars[1];
      y = Gather(y, Range(t - 1.0, g.Scalar(-1, i64), g.Scalar(-1, i64)));
    }
    result.push_back(y);
  }
  return result;
}

// The number of scan outputs of a Scan body with `states` states and `inputs` inputs, checked.
Result<int> ScanOutputCount(const OnnxNode& n, const onnx::GraphProto& body, int states,
                            int inputs) {
  const int scans_out = body.output_size() - states;
  if (body.input_size() != inputs || scans_out < 0)
    return n.Fail("its body takes ", body.input_size(), " inputs and gives ", body.output_size(),
                  " outputs for ", states, " states and ", inputs - states, " scan inputs");
  return scans_out;
}

// Scan of opset 8: every state, scan input and output has a batch axis 0 (the scan axis of the
// inputs is 1): the opset-9 loop per batch entry (the batch known at import), the results stacked
// along the batch. sequence_lens (per-entry lengths) is not supported.
Status ConvertBatchScan(OnnxNode& n, const onnx::GraphProto& body, int scans_in) {
  if (n.has_input(0))
    return n.Unsupported("Scan of opset 8 with sequence_lens (per-entry lengths)");
  const int states = n.num_inputs() - 1 - scans_in;
  if (states < 0)
    return n.Fail("num_scan_inputs is ", scans_in, " for ", n.num_inputs() - 1, " inputs");
  KILN_ASSIGN_OR_RETURN(int scans_out, ScanOutputCount(n, body, states, states + scans_in));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> in_dirs,
                        n.Ints("directions", std::vector<int64_t>(scans_in, 0)));
  if (static_cast<int>(in_dirs.size()) != scans_in)
    return n.Fail("directions needs one entry per scan input");
  std::vector<Value> inputs;
  for (int i = 1; i < n.num_inputs(); ++i) {
    KILN_ASSIGN_OR_RETURN(Value v, n.input(i));
    if (v.rank() < 1 + (i > states ? 1 : 0))
      return n.Fail("input ", i, " needs a batch axis", i > states ? " and a scan axis" : "",
                    ", got ", v.type().ToString());
    inputs.push_back(v);
  }
  const int64_t batch = inputs[0].shape()[0];
  if (batch < 0) return n.NotKnownYet("needs the batch dim known");
  std::vector<std::vector<Value>> per_entry(states + scans_out);
  for (int64_t b = 0; b < batch; ++b) {
    Value at = n.g().Constant(Tensor::Scalar<int64_t>(b));
    std::vector<Value> entry_states, entry_scans;
    for (int k = 0; k < states; ++k) entry_states.push_back(Gather(inputs[k], at));
    for (int j = 0; j < scans_in; ++j) entry_scans.push_back(Gather(inputs[states + j], at));
    KILN_ASSIGN_OR_RETURN(
        std::vector<Value> out,
        ScanLoop(n, body, entry_states, entry_scans, in_dirs, std::vector<int64_t>(scans_out, 0)));
    for (size_t o = 0; o < out.size(); ++o) per_entry[o].push_back(Unsqueeze(out[o], {0}));
  }
  for (size_t o = 0; o < per_entry.size(); ++o)
    n.SetOutput(static_cast<int>(o), Concat(per_entry[o], 0));
  return OkStatus();
}

// Scan: N states and M scan inputs, sliced along their axes (in either direction), through the
// body, giving N final states and K scan outputs stacked along their axes.
Status ConvertScan(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(const onnx::GraphProto* body, GraphAttr(n, "body"));
  KILN_ASSIGN_OR_RETURN(int64_t m, n.Int("num_scan_inputs", -1));
  const int total = n.num_inputs();
  if (m < 1 || m > total) return n.Fail("num_scan_inputs is ", m, " for ", total, " inputs");
  if (n.opset() < 9) return ConvertBatchScan(n, *body, static_cast<int>(m));
  const int scans_in = static_cast<int>(m), states = total - scans_in;
  KILN_ASSIGN_OR_RETURN(int scans_out, ScanOutputCount(n, *body, states, total));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> in_axes,
                        n.Ints("scan_input_axes", std::vector<int64_t>(scans_in, 0)));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> in_dirs,
                        n.Ints("scan_input_directions", std::vector<int64_t>(scans_in, 0)));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> out_axes,
                        n.Ints("scan_output_axes", std::vector<int64_t>(scans_out, 0)));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> out_dirs,
                        n.Ints("scan_output_directions", std::vector<int64_t>(scans_out, 0)));
  if (static_cast<int>(in_axes.size()) != scans_in ||
      static_cast<int>(in_dirs.size()) != scans_in ||
      static_cast<int>(out_axes.size()) != scans_out ||
      static_cast<int>(out_dirs.size()) != scans_out)
    return n.Fail("its scan axes and directions need one entry per scan input and output");
  std::vector<Value> states_in, scans;
  for (int k = 0; k < states; ++k) {
    KILN_ASSIGN_OR_RETURN(Value s, n.input(k));
    states_in.push_back(s);
  }
  for (int j = 0; j < scans_in; ++j) {
    KILN_ASSIGN_OR_RETURN(Value x, n.input(states + j));
    KILN_ASSIGN_OR_RETURN(int axis, Axis(n, in_axes[j], x.rank()));
    if (axis != 0) {
      std::vector<int64_t> perm = {axis};
      for (int d = 0; d < x.rank(); ++d)
        if (d != axis) perm.push_back(d);
      x = Transpose(x, perm);
    }
    scans.push_back(x);
  }
  KILN_ASSIGN_OR_RETURN(std::vector<Value> out,
                        ScanLoop(n, *body, states_in, scans, in_dirs, out_dirs));
  for (int k = 0; k < states; ++k) n.SetOutput(k, out[k]);
  for (int j = 0; j < scans_out; ++j) {
    Value y = out[states + j];
    KILN_ASSIGN_OR_RETURN(int axis, Axis(n, out_axes[j], y.rank()));
    if (axis != 0) {
      std::vector<int64_t> perm;
      for (int d = 1; d <= axis; ++d) perm.push_back(d);
      perm.push_back(0);
      for (int d = axis + 1; d < y.rank(); ++d) perm.push_back(d);
      y = Transpose(y, perm);
    }
    n.SetOutput(states + j, y);
  }
  return OkStatus();
}

Status ConvertSequenceMap(OnnxNode& n) {
  KILN_ASSIGN_OR_RETURN(const onnx::GraphProto* body, GraphAttr(n, "body"));
  if (body->input_size() != n.num_inputs())
    return n.Fail("its body takes ", body->input_size(), " inputs for ", n.num_inputs());
  if (body->output_size() != n.num_outputs() || n.num_outputs() < 1)
    return n.Fail("its body gives ", body->output_size(), " outputs for ", n.num_outputs());
  GraphBuilder& g = n.g();
  KILN_ASSIGN_OR_RETURN(Value first, n.input(0));
  if (first.dtype() != seq) return n.Fail("input 0 must be a seq, got ", first.type().ToString());
  // The loop variables: t, the length, the inputs, the captured values; the output sequences
  // join them once the body's results are known.
  std::vector<Value> vars = {g.Constant(Tensor::Scalar<int64_t>(0)), SequenceLength(first)};
  for (int k = 0; k < n.num_inputs(); ++k) {
    KILN_ASSIGN_OR_RETURN(Value v, n.input(k));
    vars.push_back(v);
  }
  const std::vector<std::string> captured = OuterNames(*body);
  GraphBuilder bg;
  KILN_ASSIGN_OR_RETURN(std::vector<Value> args, LoopArguments(n, captured, vars, bg));
  std::map<std::string, OnnxValue> values;
  for (int k = 0; k < n.num_inputs(); ++k) {
    OnnxValue v;
    v.value = args[2 + k];
    v.element = n.element_of(k);
    if (v.value.dtype() == seq) {  // element t
      ElementTypePtr element = ElementTypeOf(body->input(k).type());
      if (!element || !element->shape) element = v.element;
      KILN_ASSIGN_OR_RETURN(TensorType declared,
                            DeclaredElementType(n, element, "the sequence's elements"));
      v.value = SequenceAt(v.value, args[0], declared.dtype, declared.shape);
      v.element = nullptr;
    }
    values[body->input(k).name()] = std::move(v);
  }
  BindCaptured(n, captured, args, 2 + n.num_inputs(), values);
  KILN_RETURN_IF_ERROR(ConvertSubgraphNodes(bg, *body, n.opset(), n.label() + " body", values));
  KILN_ASSIGN_OR_RETURN(std::vector<Value> results, SubgraphResults(n, *body, values));
  std::vector<Value> next = {args[0] + 1.0};
  next.insert(next.end(), args.begin() + 1, args.end());  // unchanged
  std::vector<ElementTypePtr> out_elements;
  for (const Value& y : results) {
    if (IsContainer(y.dtype()))
      return n.Unsupported("a body output of type ", DTypeName(y.dtype()),
                           " (kiln's sequences hold tensors)");
    Value out = bg.Placeholder("arg_" + std::to_string(vars.size()), seq, Shape{});
    next.push_back(SequenceInsert(out, y));
    vars.push_back(SequenceEmpty(g, y.dtype()));
    out_elements.push_back(TensorElementType(y.dtype(), y.shape()));
  }
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Graph> loop_body, Finish(n, bg, next, "body"));
  std::vector<TensorType> types;
  for (const Value& v : vars) types.push_back(v.type());
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Graph> cond,
                        BuildBody(types, [](const std::vector<Value>& a) {
                          return std::vector<Value>{Less(a[0], a[1])};
                        }));
  std::vector<Value> finals = While(vars, cond, loop_body);
  if (finals.size() != vars.size()) return n.Fail("its loop could not be built");
  const size_t first_output = vars.size() - results.size();
  for (size_t j = 0; j < results.size(); ++j)
    n.SetOutput(static_cast<int>(j), finals[first_output + j], out_elements[j]);
  return OkStatus();
}

}  // namespace

void AddControlConverters(ConverterTable& t) {
  t["SequenceMap"] = ConvertSequenceMap;
  t["Scan"] = ConvertScan;
  t["If"] = ConvertIf;
  t["Loop"] = ConvertLoop;
}

}  // namespace kiln::onnx_import
