#include "ir/ops/control.h"

#include <algorithm>
#include <map>

#include "ir/op_registry.h"
#include "ir/ops/control_grad.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/registration.h"
#include "ir/verifier.h"

namespace kiln {
namespace {

// The type both `a` and `b` have, dims that differ unknown; nullopt when dtype or rank differ.
std::optional<TensorType> Merge(const TensorType& a, const TensorType& b) {
  if (a.dtype != b.dtype || a.shape.rank() != b.shape.rank()) return std::nullopt;
  TensorType merged = a;
  for (int d = 0; d < a.shape.rank(); ++d)
    if (a.shape[d] != b.shape[d]) merged.shape.set_dim(d, kUnknownDim);
  return merged;
}

// A condition: a bool of one element (a scalar, or any shape of known size 1).
Status CheckCondition(const InferContext& ctx, const TensorType& t, const std::string& what) {
  const int64_t n = t.shape.NumElements();
  if (t.dtype != DType::kBool || (t.shape.IsFullyKnown() && n != 1))
    return ctx.Fail(what, " must be a bool of one element, got ", t.ToString());
  return OkStatus();
}

std::vector<TensorType> InputTypes(const InferContext& ctx, int first) {
  std::vector<TensorType> types;
  for (int i = first; i < ctx.num_inputs(); ++i) types.push_back(ctx.input(i));
  return types;
}

Status InferIf(InferContext& ctx) {
  KILN_RETURN_IF_ERROR(CheckCondition(ctx, ctx.input(0), "input 0 (the condition)"));
  const std::vector<TensorType> args = InputTypes(ctx, 1);
  std::vector<std::vector<TensorType>> results;
  for (const char* branch : {"then_branch", "else_branch"}) {
    KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Graph> body, ctx.attrs().GetGraph(branch));
    Result<std::vector<TensorType>> r = InferBodyResults(*body, args);
    if (!r.ok()) return ctx.Fail(branch, ": ", r.error().message());
    results.push_back(std::move(*r));
  }
  if (results[0].size() != results[1].size())
    return ctx.Fail("then_branch gives ", results[0].size(), " result(s), else_branch ",
                    results[1].size());
  for (size_t i = 0; i < results[0].size(); ++i) {
    std::optional<TensorType> merged = Merge(results[0][i], results[1][i]);
    if (!merged)
      return ctx.Fail("result ", i, " is ", results[0][i].ToString(), " in then_branch but ",
                      results[1][i].ToString(), " in else_branch");
    ctx.AddOutput(merged->dtype, merged->shape);
  }
  return OkStatus();
}

Status InferWhile(InferContext& ctx) {
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Graph> cond, ctx.attrs().GetGraph("cond"));
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const Graph> body, ctx.attrs().GetGraph("body"));
  KILN_ASSIGN_OR_RETURN(int64_t scans, ctx.attrs().GetInt("scan_outputs"));
  KILN_ASSIGN_OR_RETURN(int64_t rows, ctx.attrs().GetInt("scan_rows"));
  if (scans < 0 || rows < -1)
    return ctx.Fail("scan_outputs is ", scans, " and scan_rows ", rows,
                    "; expected scan_outputs >= 0 and scan_rows >= -1");
  std::vector<TensorType> vars = InputTypes(ctx, 0);
  std::vector<TensorType> stacked;  // the scan results of the settled loop variables
  // The loop variables' types over every iteration: widen until the body keeps them.
  for (int round = 0;; ++round) {
    Result<std::vector<TensorType>> next = InferBodyResults(*body, vars);
    if (!next.ok()) return ctx.Fail("body: ", next.error().message());
    if (next->size() != vars.size() + static_cast<size_t>(scans))
      return ctx.Fail("body gives ", next->size(), " result(s) for ", vars.size(),
                      " loop variable(s) and ", scans, " scan output(s)");
    stacked.assign(next->begin() + static_cast<std::ptrdiff_t>(vars.size()), next->end());
    bool changed = false;
    for (size_t i = 0; i < vars.size(); ++i) {
      std::optional<TensorType> merged = Merge(vars[i], (*next)[i]);
      if (!merged)
        return ctx.Fail("body turns loop variable ", i, " from ", vars[i].ToString(), " into ",
                        (*next)[i].ToString(), " (its dtype and rank must stay)");
      changed = changed || !(*merged == vars[i]);
      vars[i] = *merged;
    }
    if (!changed) break;
    if (round > 2 * static_cast<int>(vars.size()) + 64)
      return ctx.Fail("internal: the loop variables' types do not settle");
  }
  Result<std::vector<TensorType>> c = InferBodyResults(*cond, vars);
  if (!c.ok()) return ctx.Fail("cond: ", c.error().message());
  if (c->size() != 1) return ctx.Fail("cond gives ", c->size(), " results; expected 1");
  KILN_RETURN_IF_ERROR(CheckCondition(ctx, (*c)[0], "cond's result"));
  for (const TensorType& t : vars) ctx.AddOutput(t.dtype, t.shape);
  for (const TensorType& t : stacked) {
    std::vector<int64_t> dims = t.shape.dims();
    dims.insert(dims.begin(), rows);  // -1 is kUnknownDim: one row per iteration
    ctx.AddOutput(t.dtype, Shape(dims));
  }
  return OkStatus();
}

// Records `e` in the builder of the first valid value (when there is one).
void RecordIn(const std::vector<Value>& values, const Error& e) {
  for (const Value& v : values)
    if (v.valid()) return v.builder()->RecordError(e);
}

std::vector<TensorType> TypesOf(const std::vector<Value>& values) {
  std::vector<TensorType> types;
  for (const Value& v : values) types.push_back(v.valid() ? v.type() : TensorType{});
  return types;
}

bool AllValid(const std::vector<Value>& values) {
  for (const Value& v : values)
    if (!v.valid()) return false;
  return true;
}

}  // namespace

Result<std::vector<TensorType>> InferBodyResults(const Graph& body,
                                                 const std::vector<TensorType>& args) {
  if (args.size() != body.inputs().size())
    return MakeError(ErrorCode::kInvalidArgument, "the body takes ", body.inputs().size(),
                     " argument(s), given ", args.size());
  std::map<std::string, size_t> arg_index;
  for (size_t i = 0; i < body.inputs().size(); ++i) arg_index[body.inputs()[i]] = i;
  KILN_ASSIGN_OR_RETURN(std::vector<const Node*> order, body.TopologicalOrder());
  std::map<TensorRef, TensorType> types;
  for (const Node* node : order) {
    if (auto arg = arg_index.find(node->name); arg != arg_index.end()) {
      const TensorType& want = node->output_types.at(0);
      if (!internal::TypesAgree(want, args[arg->second]))
        return MakeError(ErrorCode::kInvalidArgument, "argument ", arg->second, " is ",
                         args[arg->second].ToString(), "; the body's '", node->name, "' takes ",
                         want.ToString());
      types[TensorRef{node->name, 0}] = args[arg->second];
      continue;
    }
    std::vector<TensorType> in_types;
    std::vector<const Tensor*> in_values;
    for (const TensorRef& in : node->inputs) {
      auto t = types.find(in);
      if (t == types.end())
        return node->MakeNodeError(ErrorCode::kInvalidArgument, "input '", in.ToString(),
                                   "' is not computed in the body");
      in_types.push_back(t->second);
      const Node* producer = body.FindNode(in.node);
      in_values.push_back(producer && producer->op == "Constant"
                              ? &producer->attrs.Find("value")->get<Tensor>()
                              : nullptr);
    }
    KILN_ASSIGN_OR_RETURN(std::vector<TensorType> out, InferNode(*node, in_types, in_values));
    for (size_t i = 0; i < out.size(); ++i)
      types[TensorRef{node->name, static_cast<int>(i)}] = out[i];
  }
  std::vector<TensorType> results;
  for (const GraphOutput& out : body.outputs()) {
    auto t = types.find(out.tensor);
    if (t == types.end())
      return MakeError(ErrorCode::kInvalidArgument, "the body's result '", out.name,
                       "' is not computed in it");
    results.push_back(t->second);
  }
  return results;
}

Result<std::vector<Value>> CallBody(GraphBuilder& g, const Graph& body,
                                    const std::vector<Value>& args) {
  if (args.size() != body.inputs().size())
    return MakeError(ErrorCode::kInvalidArgument, "the body takes ", body.inputs().size(),
                     " argument(s), given ", args.size());
  KILN_ASSIGN_OR_RETURN(std::vector<const Node*> order, body.TopologicalOrder());
  std::map<std::string, std::vector<Value>> produced;
  for (size_t i = 0; i < args.size(); ++i) produced[body.inputs()[i]] = {args[i]};
  for (const Node* node : order) {
    if (produced.count(node->name)) continue;
    std::vector<Value> inputs, controls;
    for (const TensorRef& in : node->inputs) inputs.push_back(produced.at(in.node).at(in.port));
    for (const std::string& c : node->control_inputs) controls.push_back(produced.at(c).at(0));
    std::vector<Value> outs =
        g.AddOp(node->op, inputs, node->attrs, SourceLocation::current(), "", controls);
    if (outs.empty() || !outs[0].valid())
      return node->MakeNodeError(ErrorCode::kInvalidArgument, "could not be added: ",
                                 g.errors().empty() ? "" : g.errors().back().message());
    produced[node->name] = std::move(outs);
  }
  std::vector<Value> results;
  for (const GraphOutput& out : body.outputs())
    results.push_back(produced.at(out.tensor.node).at(out.tensor.port));
  return results;
}

Result<std::shared_ptr<const Graph>> BuildBody(const std::vector<TensorType>& types,
                                               const BodyFn& fn) {
  GraphBuilder g;
  std::vector<Value> args;
  for (size_t i = 0; i < types.size(); ++i)
    args.push_back(g.Placeholder("arg_" + std::to_string(i), types[i].dtype, types[i].shape));
  std::vector<Value> results = fn(args);
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].valid() && results[i].builder() != &g)
      return MakeError(ErrorCode::kInvalidArgument, "result ", i,
                       " of the body was built outside it (from a value of the enclosing graph); "
                       "pass such values in as arguments");
    if (results[i].valid()) g.Output("result_" + std::to_string(i), results[i]);
  }
  KILN_ASSIGN_OR_RETURN(Graph graph, g.Build());
  if (graph.outputs().size() != results.size())
    return MakeError(ErrorCode::kInvalidArgument, "the body gave an invalid result");
  return std::make_shared<const Graph>(std::move(graph));
}

std::vector<Value> If(Value cond, const std::vector<Value>& inputs,
                      std::shared_ptr<const Graph> then_branch,
                      std::shared_ptr<const Graph> else_branch, SourceLocation loc) {
  const size_t n = then_branch ? then_branch->outputs().size() : 0;
  AttrMap a;
  a.Set("then_branch", std::move(then_branch));
  a.Set("else_branch", std::move(else_branch));
  std::vector<Value> all = {cond};
  all.insert(all.end(), inputs.begin(), inputs.end());
  return internal::MakeOpN("If", all, std::move(a), loc, n);
}

std::vector<Value> While(const std::vector<Value>& loop_vars, std::shared_ptr<const Graph> cond,
                         std::shared_ptr<const Graph> body, int64_t max_iterations,
                         SourceLocation loc, const std::string& recomputes, WhileScans scans) {
  AttrMap a;
  a.Set("cond", std::move(cond));
  a.Set("body", std::move(body));
  a.Set("max_iterations", max_iterations);
  if (!recomputes.empty()) a.Set("recomputes", recomputes);
  if (scans.outputs != 0) {
    a.Set("scan_outputs", int64_t{scans.outputs});
    a.Set("scan_rows", scans.rows);
  }
  return internal::MakeOpN("While", loop_vars, std::move(a), loc,
                           loop_vars.size() + static_cast<size_t>(std::max(scans.outputs, 0)));
}

std::vector<Value> Cond(Value pred, const std::vector<Value>& inputs, const BodyFn& then_branch,
                        const BodyFn& else_branch, SourceLocation loc) {
  std::vector<Value> all = {pred};
  all.insert(all.end(), inputs.begin(), inputs.end());
  if (!AllValid(all)) return {};
  const std::vector<TensorType> types = TypesOf(inputs);
  Result<std::shared_ptr<const Graph>> then_graph = BuildBody(types, then_branch);
  Result<std::shared_ptr<const Graph>> else_graph = BuildBody(types, else_branch);
  for (const auto* built : {&then_graph, &else_graph})
    if (!built->ok()) {
      RecordIn(all, MakeError(built->error().code(), "at ", loc.ToString(), ": Cond's ",
                              built == &then_graph ? "then" : "else",
                              " branch: ", built->error().message()));
      return {};
    }
  return If(pred, inputs, *then_graph, *else_graph, loc);
}

std::vector<Value> WhileLoop(const std::vector<Value>& loop_vars,
                             const std::function<Value(const std::vector<Value>&)>& cond,
                             const BodyFn& body, int64_t max_iterations, SourceLocation loc) {
  if (!AllValid(loop_vars) || loop_vars.empty()) return std::vector<Value>(loop_vars.size());
  const std::vector<TensorType> types = TypesOf(loop_vars);
  Result<std::shared_ptr<const Graph>> cond_graph = BuildBody(
      types, [&](const std::vector<Value>& args) { return std::vector<Value>{cond(args)}; });
  Result<std::shared_ptr<const Graph>> body_graph = BuildBody(types, body);
  for (const auto* built : {&cond_graph, &body_graph})
    if (!built->ok()) {
      RecordIn(loop_vars,
               MakeError(built->error().code(), "at ", loc.ToString(), ": WhileLoop's ",
                         built == &cond_graph ? "cond" : "body", ": ", built->error().message()));
      return std::vector<Value>(loop_vars.size());
    }
  return While(loop_vars, *cond_graph, *body_graph, max_iterations, loc);
}

void RegisterControlOps(OpRegistry& r) {
  r.Register(OpDefBuilder("If", "control")
                 .VariadicInput("cond_and_inputs", "")
                 .VariadicOutput("outputs")
                 .RequiredAttr("then_branch", AttrType::kGraph)
                 .RequiredAttr("else_branch", AttrType::kGraph)
                 .Infer(InferIf)
                 .GivesContainers()
                 .Grad(internal::IfGradient)
                 .NoPrecisionList()
                 .Flops(NoFlops())
                 .Build());
  r.Register(OpDefBuilder("While", "control")
                 .VariadicInput("loop_vars", "")
                 .VariadicOutput("outputs")
                 .RequiredAttr("cond", AttrType::kGraph)
                 .RequiredAttr("body", AttrType::kGraph)
                 .Attr("max_iterations", AttrType::kInt, int64_t{-1})
                 .Attr("recomputes", AttrType::kString, "")
                 .Attr("scan_outputs", AttrType::kInt, int64_t{0})
                 .Attr("scan_rows", AttrType::kInt, int64_t{-1})
                 .Infer(InferWhile)
                 .GivesContainers()
                 .Grad(internal::WhileGradient)
                 .NoPrecisionList()
                 .Flops(NoFlops())
                 .Build());
}

}  // namespace kiln
