#include "passes/simplify.h"

#include <optional>
#include <vector>

#include "ir/op_registry.h"
#include "ir/ops/array_internal.h"
#include "passes/graph_edit.h"

namespace kiln {
namespace {

using Ints = std::vector<int64_t>;
using Replacement = std::optional<TensorRef>;

// True when every value of `from` converts to `to` exactly (see simplify.h).
bool HoldsExactly(DType from, DType to) {
  if (from == to || from == boolean) return true;
  switch (from) {
    case DType::kI8:
    case DType::kU8:
      return to == i32 || to == i64 || to == f16 || to == bf16 || to == f32 || to == f64;
    case DType::kI32:
      return to == i64 || to == f64;
    case DType::kF16:
    case DType::kBF16:
      return to == f32 || to == f64;
    case DType::kF32:
      return to == f64;
    default:
      return false;
  }
}

bool FilledWith(const Tensor* t, double value) {
  if (!t) return false;
  for (int64_t i = 0; i < t->num_elements(); ++i)
    if (t->GetDouble(i) != value) return false;
  return true;
}

class Simplifier {
 public:
  explicit Simplifier(Graph& graph) : graph_(graph) {}

  Result<bool> Run() {
    MergeRecomputedLoops();
    KILN_ASSIGN_OR_RETURN(std::vector<std::string> order, TopologicalNames(graph_));
    for (const std::string& name : order) {
      Node* node = graph_.FindNode(name);
      rewirer_.Apply(*node);
      if (IsPinned(graph_, *node)) continue;
      KILN_ASSIGN_OR_RETURN(Replacement x, Simplify(*node));
      if (!x || !node->control_inputs.empty()) continue;
      KILN_ASSIGN_OR_RETURN(bool same, HasTypeOf(*node, *x));
      if (same) rewirer_.ReplaceTensor(TensorRef{node->name, 0}, *x);
    }
    rewirer_.Finish(graph_);
    return edited_ || !rewirer_.empty();
  }

 private:
  // Edits `node` in place (setting edited_) and/or returns the tensor that may replace it.
  // A While that recomputes another (a gradient's record, ir/ops/control.h) from the same loop
  // variables and bound stands in for it: its readers read the recomputing loop's outputs (its
  // first loop variables, and its first scan outputs, which follow all of its loop variables).
  void MergeRecomputedLoops() {
    for (const Node& record : graph_.nodes()) {
      if (record.op != "While") continue;
      const AttrValue* of = record.attrs.Find("recomputes");
      if (!of || of->type() != AttrType::kString || of->get<std::string>().empty()) continue;
      const Node* loop = graph_.FindNode(of->get<std::string>());
      if (!loop || loop->op != "While" || IsPinned(graph_, *loop) ||
          !loop->control_inputs.empty() || loop->inputs.size() > record.inputs.size() ||
          loop->output_types.size() < loop->inputs.size() ||
          record.output_types.size() < record.inputs.size())
        continue;
      // Output k of the loop is output port_of(k) of the record.
      const size_t vars = loop->inputs.size(), more_vars = record.inputs.size() - vars;
      const size_t scans = loop->output_types.size() - vars;
      const OpDef* def = OpRegistry::Global().Find("While");
      const AttrMap loop_attrs = def->WithDefaults(loop->attrs);
      const AttrMap record_attrs = def->WithDefaults(record.attrs);
      auto same_int = [&](const char* name) {
        Result<int64_t> a = loop_attrs.GetInt(name), b = record_attrs.GetInt(name);
        return a.ok() && b.ok() && *a == *b;
      };
      bool same = same_int("max_iterations") && (scans == 0 || same_int("scan_rows"));
      auto port_of = [&](size_t k) { return k < vars ? k : k + more_vars; };
      same = same && record.output_types.size() >= record.inputs.size() + scans;
      for (size_t k = 0; same && k < vars; ++k) same = loop->inputs[k] == record.inputs[k];
      for (size_t k = 0; same && k < loop->output_types.size(); ++k)
        same = loop->output_types[k] == record.output_types[port_of(k)];
      if (!same) continue;
      for (size_t k = 0; k < loop->output_types.size(); ++k)
        rewirer_.ReplaceTensor(TensorRef{loop->name, static_cast<int>(k)},
                               TensorRef{record.name, static_cast<int>(port_of(k))});
    }
  }

  Result<Replacement> Simplify(Node& node) {
    const OpDef* def = OpRegistry::Global().Find(node.op);
    if (!def || node.inputs.size() != def->inputs.size()) return Replacement();  // not verified
    if (node.op == "Identity") return Replacement(node.inputs[0]);
    if (node.op == "Add" || node.op == "Sub" || node.op == "Mul" || node.op == "Div")
      return Arithmetic(node);
    if (node.op == "Transpose") return Transpose(node);
    if (node.op == "Reshape") return Reshape(node);
    if (node.op == "Cast") return Cast(node);
    return Replacement();
  }

  Replacement Arithmetic(const Node& node) {
    bool additive = node.op == "Add" || node.op == "Sub";
    double neutral = additive ? 0.0 : 1.0;
    bool commutes = node.op == "Add" || node.op == "Mul";
    if (FilledWith(ConstantValue(graph_, node.inputs[1]), neutral))
      return Replacement(node.inputs[0]);
    if (commutes && FilledWith(ConstantValue(graph_, node.inputs[0]), neutral))
      return Replacement(node.inputs[1]);
    return Replacement();
  }

  Result<Replacement> Transpose(Node& node) {
    KILN_ASSIGN_OR_RETURN(Ints perm, Permutation(node));
    if (const Node* inner = Bypassable(node, "Transpose")) {
      KILN_ASSIGN_OR_RETURN(Ints inner_perm, Permutation(*inner));
      Ints composed(perm.size());
      for (size_t i = 0; i < perm.size(); ++i) composed[i] = inner_perm[perm[i]];
      perm = composed;
      node.inputs[0] = inner->inputs[0];
      node.attrs.Set("perm", perm);
      edited_ = true;
    }
    for (size_t i = 0; i < perm.size(); ++i)
      if (perm[i] != static_cast<int64_t>(i)) return Replacement();
    return Replacement(node.inputs[0]);
  }

  Result<Replacement> Reshape(Node& node) {
    if (const Node* inner = Bypassable(node, "Reshape")) {
      KILN_ASSIGN_OR_RETURN(Ints target, node.attrs.GetInts("shape"));
      KILN_ASSIGN_OR_RETURN(TensorType middle, OutputType(*inner));
      bool resolved = true;
      for (size_t i = 0; i < target.size(); ++i) {
        if (target[i] != 0) continue;
        int64_t dim = static_cast<int>(i) < middle.shape.rank() ? middle.shape[i] : kUnknownDim;
        resolved &= dim >= 0;
        target[i] = dim;
      }
      if (resolved) {
        node.inputs[0] = inner->inputs[0];
        node.attrs.Set("shape", target);
        edited_ = true;
      }
    }
    KILN_ASSIGN_OR_RETURN(TensorType out, OutputType(node));
    if (!out.shape.IsFullyKnown()) return Replacement();
    return Replacement(node.inputs[0]);
  }

  Result<Replacement> Cast(const Node& node) {
    KILN_ASSIGN_OR_RETURN(DType to, node.attrs.GetDType("to"));
    KILN_ASSIGN_OR_RETURN(TensorType in, graph_.TypeOf(node.inputs[0]));
    if (in.dtype == to) return Replacement(node.inputs[0]);
    const Node* inner = Bypassable(node, "Cast");
    if (!inner) return Replacement();
    KILN_ASSIGN_OR_RETURN(TensorType original, graph_.TypeOf(inner->inputs[0]));
    if (original.dtype == to && HoldsExactly(original.dtype, in.dtype))
      return Replacement(inner->inputs[0]);
    return Replacement();
  }

  // The producer of node's input 0 if it is an `op` node a rewrite may look through: output 0,
  // not pinned, no control inputs. Else null.
  const Node* Bypassable(const Node& node, const char* op) const {
    const Node* inner = graph_.FindNode(node.inputs[0].node);
    if (!inner || inner->op != op || node.inputs[0].port != 0 || IsPinned(graph_, *inner) ||
        !inner->control_inputs.empty())
      return nullptr;
    return inner;
  }

  Result<Ints> Permutation(const Node& transpose) const {
    KILN_ASSIGN_OR_RETURN(TensorType in, graph_.TypeOf(transpose.inputs[0]));
    const OpDef* def = OpRegistry::Global().Find(transpose.op);
    return internal::TransposePermutation(def->WithDefaults(transpose.attrs), in.shape.rank());
  }

  Result<TensorType> OutputType(const Node& node) const {
    Result<TensorType> t = graph_.TypeOf(TensorRef{node.name, 0});
    if (!t.ok()) return t.error().WithContext("simplify needs a verified graph");
    return t;
  }

  Result<bool> HasTypeOf(const Node& node, const TensorRef& x) const {
    KILN_ASSIGN_OR_RETURN(TensorType out, OutputType(node));
    KILN_ASSIGN_OR_RETURN(TensorType in, graph_.TypeOf(x));
    return out == in;
  }

  Graph& graph_;
  Rewirer rewirer_;
  bool edited_ = false;
};

}  // namespace

Result<bool> AlgebraicSimplifier::Run(Graph& graph) { return Simplifier(graph).Run(); }

}  // namespace kiln
