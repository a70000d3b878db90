#include "passes/fold_batch_norm.h"

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/op_registry.h"
#include "passes/graph_edit.h"

namespace kiln {
namespace {

// A tensor the folded values are computed from: a narrowing Cast's input where `ref` is one (a
// 16-bit copy of f32 weights), else `ref` itself.
struct Source {
  TensorRef ref;
  DType dtype;
};

class Folder {
 public:
  explicit Folder(Graph& graph) : graph_(graph) {
    for (const Node& n : graph_.nodes()) {
      taken_.insert(n.name);
      for (const TensorRef& in : n.inputs) ++readers_[in];
    }
    for (const GraphOutput& o : graph_.outputs()) ++readers_[o.tensor];
  }

  Result<bool> Run() {
    std::vector<std::string> norms;
    for (const Node& n : graph_.nodes())
      if (n.op == "BatchNorm") norms.push_back(n.name);
    bool changed = false;
    for (const std::string& name : norms) {
      KILN_ASSIGN_OR_RETURN(bool folded, Fold(name));
      changed |= folded;
    }
    if (changed) KILN_RETURN_IF_ERROR(AddAfterProducers(graph_, std::move(added_)));
    return changed;
  }

 private:
  // The node producing port 0 of `ref` when only one node reads it and nothing pins it.
  const Node* OnlyReadProducer(const TensorRef& ref) const {
    const Node* n = graph_.FindNode(ref.node);
    if (!n || ref.port != 0 || readers_.count(ref) == 0 || readers_.at(ref) != 1 ||
        IsPinned(graph_, *n) || !n->control_inputs.empty())
      return nullptr;
    for (size_t port = 1; port < n->output_types.size(); ++port)
      if (readers_.count(TensorRef{n->name, static_cast<int>(port)})) return nullptr;
    return n;
  }

  std::optional<Source> SourceOf(const TensorRef& ref) const {
    const Node* n = graph_.FindNode(ref.node);
    if (!n) return std::nullopt;
    Result<TensorType> type = graph_.TypeOf(ref);
    if (!type.ok()) return std::nullopt;
    if (n->op == "Cast" && ref.port == 0 && n->inputs.size() == 1 && n->control_inputs.empty()) {
      Result<TensorType> from = graph_.TypeOf(n->inputs[0]);
      if (from.ok() && IsFloat(from->dtype) && DTypeSize(from->dtype) > DTypeSize(type->dtype))
        return Source{n->inputs[0], from->dtype};
    }
    return Source{ref, type->dtype};
  }

  // A new node of `op` over `inputs`, named "<norm>/<suffix>", with the norm's device and source.
  TensorRef Add(const Node& norm, const std::string& op, std::vector<TensorRef> inputs,
                const std::string& suffix, AttrMap attrs = {}) {
    Node node;
    node.name = UniqueName(norm.name + "/" + suffix, taken_);
    node.op = op;
    node.inputs = std::move(inputs);
    node.attrs = std::move(attrs);
    node.device = norm.device;
    node.source = norm.source;
    added_.push_back(node);
    return TensorRef{node.name, 0};
  }

  Result<bool> Fold(const std::string& name) {
    Node* norm = graph_.FindNode(name);
    const OpDef* def = OpRegistry::Global().Find("BatchNorm");
    if (!norm || !def || norm->inputs.size() != 5 || IsPinned(graph_, *norm) ||
        !norm->control_inputs.empty())
      return false;
    const AttrMap attrs = def->WithDefaults(norm->attrs);
    KILN_ASSIGN_OR_RETURN(bool training, attrs.GetBool("training"));
    KILN_ASSIGN_OR_RETURN(double epsilon, attrs.GetFloat("epsilon"));
    if (training) return false;
    for (int port : {1, 2})
      if (readers_.count(TensorRef{norm->name, port})) return false;
    // BatchNorm(x) with x = Conv2D(input, w), BiasAdd(Conv2D(input, w), b) over axis 1, or a
    // widening Cast of the Conv2D (mixed precision's bf16 convolution before an f32 BatchNorm).
    const Node* producer = OnlyReadProducer(norm->inputs[0]);
    if (!producer) return false;
    const Node* widen = nullptr;
    if (producer->op == "Cast" && producer->inputs.size() == 1) {
      Result<TensorType> to = graph_.TypeOf(TensorRef{producer->name, 0});
      Result<TensorType> from = graph_.TypeOf(producer->inputs[0]);
      if (!to.ok() || !from.ok() || !IsFloat(from->dtype) || !IsFloat(to->dtype) ||
          DTypeSize(to->dtype) <= DTypeSize(from->dtype))
        return false;
      widen = producer;
      producer = OnlyReadProducer(producer->inputs[0]);
      if (!producer) return false;
    }
    const Node* conv_bias = nullptr;
    if (producer->op == "BiasAdd" && producer->inputs.size() == 2 && !widen) {
      Result<int64_t> axis = producer->attrs.GetInt("axis");
      if (axis.ok() && *axis != 1) return false;
      conv_bias = producer;
      producer = OnlyReadProducer(producer->inputs[0]);
      if (!producer) return false;
    }
    if (producer->op != "Conv2D" || producer->inputs.size() != 2) return false;
    Result<TensorType> y = graph_.TypeOf(TensorRef{producer->name, 0});
    Result<TensorType> w_type = graph_.TypeOf(producer->inputs[1]);
    if (!y.ok() || !w_type.ok() || w_type->shape.rank() != 4 || !w_type->shape.IsFullyKnown())
      return false;
    // Not in f16: the folded filter w * s and the convolution's x * w * s may pass f16's 65504
    // where the BatchNorm's (conv - mean) * s does not (a channel of tiny variance).
    if (y->dtype == f16 || w_type->dtype == f16) return false;
    const int64_t k = w_type->shape[0];

    // The sources, all of one float dtype; they are cast back where the operands were casts.
    std::vector<TensorRef> operands = {producer->inputs[1]};
    for (int i = 1; i < 5; ++i) operands.push_back(norm->inputs[i]);
    if (conv_bias) operands.push_back(conv_bias->inputs[1]);
    std::vector<Source> sources;
    for (const TensorRef& ref : operands) {
      std::optional<Source> s = SourceOf(ref);
      if (!s || !IsFloat(s->dtype) || (!sources.empty() && s->dtype != sources[0].dtype))
        return false;
      sources.push_back(*s);
    }
    for (size_t i = 1; i < sources.size(); ++i) {
      Result<TensorType> t = graph_.TypeOf(sources[i].ref);
      if (!t.ok() || !(t->shape == Shape{k})) return false;
    }
    const DType dtype = sources[0].dtype;
    const TensorRef w = sources[0].ref, scale = sources[1].ref, bias = sources[2].ref,
                    mean = sources[3].ref, var = sources[4].ref;

    // s = scale / sqrt(var + epsilon); w' = w * s (per output channel); shift = bias + (b -
    // mean)*s.
    AttrMap eps_attrs;
    eps_attrs.Set("value", Tensor::Scalar<double>(epsilon).CastTo(dtype));
    const TensorRef eps = Add(*norm, "Constant", {}, "epsilon", eps_attrs);
    const TensorRef s =
        Add(*norm, "Mul",
            {scale, Add(*norm, "Rsqrt", {Add(*norm, "Add", {var, eps}, "var_eps")}, "rstd")},
            "channel_scale");
    AttrMap column;
    column.Set("shape", std::vector<int64_t>{k, 1, 1, 1});
    TensorRef folded_w =
        Add(*norm, "Mul", {w, Add(*norm, "Reshape", {s}, "filter_scale", column)}, "filter");
    const TensorRef centre =
        conv_bias ? Add(*norm, "Sub", {sources[5].ref, mean}, "centred_bias") : mean;
    const TensorRef product = Add(*norm, "Mul", {centre, s}, "scaled_mean");
    TensorRef shift = Add(*norm, conv_bias ? "Add" : "Sub", {bias, product}, "shift");
    // Back to the operand's dtype (mixed precision's 16 bits) where the sources are wider.
    auto cast_to = [&](const TensorRef& v, DType to, const std::string& suffix) {
      if (to == dtype) return v;
      AttrMap cast;
      cast.Set("to", to);
      return Add(*norm, "Cast", {v}, suffix, cast);
    };
    // The bias is added where the BatchNorm read: to the widened convolution where there is a
    // Cast (in the BatchNorm's precision), else to the convolution.
    const TensorRef biased = widen ? TensorRef{widen->name, 0} : TensorRef{producer->name, 0};
    KILN_ASSIGN_OR_RETURN(TensorType biased_type, graph_.TypeOf(biased));
    folded_w = cast_to(folded_w, w_type->dtype, "filter_cast");
    shift = cast_to(shift, biased_type.dtype, "shift_cast");

    // The convolution reads the folded filter; the BatchNorm becomes its bias.
    graph_.FindNode(producer->name)->inputs[1] = folded_w;
    norm = graph_.FindNode(name);
    norm->output_types.clear();
    norm->op = "BiasAdd";
    norm->inputs = {biased, shift};
    norm->attrs = AttrMap();
    return true;
  }

  Graph& graph_;
  std::map<TensorRef, int> readers_;
  std::set<std::string> taken_;
  std::vector<Node> added_;
};

}  // namespace

Result<bool> FoldBatchNorm::Run(Graph& graph) { return Folder(graph).Run(); }

}  // namespace kiln
