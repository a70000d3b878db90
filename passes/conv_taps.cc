#include "passes/conv_taps.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <vector>

#include "ir/op_registry.h"
#include "passes/graph_edit.h"

namespace kiln {
namespace {

using Ints = std::vector<int64_t>;

int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int64_t CeilDiv(int64_t a, int64_t b) { return a >= 0 ? (a + b - 1) / b : -((-a) / b); }

// The kernel taps along one spatial dim that read a real input element for some output position,
// and the padding that gives the same output positions with only those taps.
struct KeptTaps {
  int64_t first = 0, last = 0;
  int64_t pad_begin = 0, pad_end = 0;
};

std::optional<KeptTaps> KeptAlong(int64_t in, int64_t k, int64_t stride, int64_t dilation,
                                  int64_t pad_begin, int64_t pad_end) {
  if (in <= 0 || k <= 0 || stride <= 0 || dilation <= 0) return std::nullopt;
  auto outputs = [&](int64_t taps, int64_t begin, int64_t end) {
    return FloorDiv(in + begin + end - dilation * (taps - 1) - 1, stride) + 1;
  };
  const int64_t out = outputs(k, pad_begin, pad_end);
  if (out <= 0) return std::nullopt;
  KeptTaps t{-1, -1, 0, 0};
  for (int64_t r = 0; r < k; ++r) {
    // Output y reads input element y*stride - pad_begin + r*dilation with tap r.
    const int64_t lo = pad_begin - r * dilation, hi = lo + in - 1;
    if (std::max<int64_t>(0, CeilDiv(lo, stride)) <= std::min(out - 1, FloorDiv(hi, stride))) {
      if (t.first < 0) t.first = r;
      t.last = r;
    }
  }
  if (t.first < 0) return std::nullopt;
  t.pad_begin = pad_begin - t.first * dilation;
  t.pad_end = pad_end - (k - 1 - t.last) * dilation;
  if (t.pad_begin < 0 || t.pad_end < 0 ||
      outputs(t.last - t.first + 1, t.pad_begin, t.pad_end) != out)
    return std::nullopt;
  return t;
}

class TapTrimmer {
 public:
  explicit TapTrimmer(Graph& graph) : graph_(graph) {
    for (const Node& n : graph.nodes()) taken_.insert(n.name);
  }

  Result<bool> Run() {
    std::vector<std::string> convs;
    for (const Node& n : graph_.nodes())
      if (n.op == "Conv2D" || n.op == "Conv2DBackpropInput" || n.op == "Conv2DBackpropFilter")
        convs.push_back(n.name);
    for (const std::string& name : convs) KILN_RETURN_IF_ERROR(Trim(name));
    if (!changed_) return false;
    for (std::vector<Node>* nodes : {&slices_, &casts_})
      KILN_RETURN_IF_ERROR(AddAfterProducers(graph_, std::move(*nodes)));
    // A filter gradient's kept-taps node goes right before the Pad that took its name.
    std::vector<Node> old = std::move(graph_.mutable_nodes());
    graph_.RemoveNodesIf([](const Node&) { return true; });
    for (Node& node : old) {
      if (auto it = trimmed_.find(node.name); it != trimmed_.end())
        KILN_RETURN_IF_ERROR(graph_.AddNode(std::move(it->second)).status());
      KILN_RETURN_IF_ERROR(graph_.AddNode(std::move(node)).status());
    }
    return true;
  }

 private:
  Status Trim(const std::string& name) {
    Node* node = graph_.FindNode(name);
    const OpDef* def = OpRegistry::Global().Find(node->op);
    if (!def || node->inputs.size() != (node->op == "Conv2D" ? 2u : 3u)) return OkStatus();
    const bool filter_grad = node->op == "Conv2DBackpropFilter";
    // Where the forward input's and the filter's shapes come from.
    const TensorRef x_ref = node->op == "Conv2DBackpropInput" ? node->inputs[2] : node->inputs[0];
    const TensorRef w_ref = filter_grad ? node->inputs[2] : node->inputs[1];
    KILN_ASSIGN_OR_RETURN(TensorType x, graph_.TypeOf(x_ref));
    KILN_ASSIGN_OR_RETURN(TensorType w, graph_.TypeOf(w_ref));
    if (x.shape.rank() != 4 || w.shape.rank() != 4 || !x.shape.IsFullyKnown() ||
        !w.shape.IsFullyKnown())
      return OkStatus();
    const AttrMap attrs = def->WithDefaults(node->attrs);
    KILN_ASSIGN_OR_RETURN(Ints strides, attrs.GetInts("strides"));
    KILN_ASSIGN_OR_RETURN(Ints pads, attrs.GetInts("pads"));
    KILN_ASSIGN_OR_RETURN(Ints dilations, attrs.GetInts("dilations"));
    if (strides.size() != 2 || pads.size() != 4 || dilations.size() != 2) return OkStatus();
    std::optional<KeptTaps> rows =
        KeptAlong(x.shape[2], w.shape[2], strides[0], dilations[0], pads[0], pads[2]);
    std::optional<KeptTaps> cols =
        KeptAlong(x.shape[3], w.shape[3], strides[1], dilations[1], pads[1], pads[3]);
    if (!rows || !cols) return OkStatus();
    const Ints begins = {rows->first, cols->first}, ends = {rows->last + 1, cols->last + 1};
    if (begins == Ints{0, 0} && ends == Ints{w.shape[2], w.shape[3]}) return OkStatus();

    const TensorRef taps = SliceOf(w_ref, begins, ends);
    const Ints trimmed_pads = {rows->pad_begin, cols->pad_begin, rows->pad_end, cols->pad_end};
    if (!filter_grad) {
      node->inputs[1] = taps;
      node->attrs.Set("pads", trimmed_pads);
    } else {
      // The kept taps' gradient, padded with zeros to the whole filter under the node's name.
      Node grad = *node;
      grad.name = UniqueName(name + "/kept_taps", taken_);
      grad.inputs[2] = taps;
      grad.attrs.Set("pads", trimmed_pads);
      grad.output_types.clear();
      node->op = "Pad";
      node->inputs = {TensorRef{grad.name, 0}};
      node->attrs = AttrMap();
      node->attrs.Set("pads", Ints{0, 0, rows->first, cols->first, 0, 0,
                                   w.shape[2] - 1 - rows->last, w.shape[3] - 1 - cols->last});
      node->attrs.Set("mode", std::string("constant"));
      node->attrs.Set("value", 0.0);
      trimmed_.emplace(name, std::move(grad));
    }
    changed_ = true;
    return OkStatus();
  }

  // The filter `w` cut to the kept taps (one node per filter and cut); a Cast's input is cut
  // instead and the cut cast, so that a converted filter converts only what is used.
  TensorRef SliceOf(const TensorRef& w, const Ints& begins, const Ints& ends) {
    auto key = std::make_tuple(w, begins, ends);
    if (auto it = cut_.find(key); it != cut_.end()) return it->second;
    const Node* producer = graph_.FindNode(w.node);
    const bool through_cast = producer->op == "Cast" && w.port == 0 &&
                              producer->control_inputs.empty() && producer->inputs.size() == 1;
    const TensorRef source = through_cast ? producer->inputs[0] : w;
    Node slice =
        NodeReading(*graph_.FindNode(source.node), source.port, "Slice", "kept_taps", taken_);
    slice.attrs.Set("begins", begins);
    slice.attrs.Set("ends", ends);
    slice.attrs.Set("axes", Ints{2, 3});
    slice.attrs.Set("steps", Ints{1, 1});
    TensorRef cut{slice.name, 0};
    if (through_cast) {
      Node cast = NodeReading(slice, 0, "Cast", "cast", taken_);
      cast.attrs = producer->attrs;
      cast.device = producer->device;
      cut = TensorRef{cast.name, 0};
      casts_.push_back(std::move(cast));
    }
    slices_.push_back(std::move(slice));
    cut_[key] = cut;
    return cut;
  }

  Graph& graph_;
  std::set<std::string> taken_;
  std::map<std::tuple<TensorRef, Ints, Ints>, TensorRef> cut_;
  std::vector<Node> slices_, casts_;
  std::map<std::string, Node> trimmed_;  // by the name of the filter gradient it computes
  bool changed_ = false;
};

}  // namespace

Result<bool> ConvPaddingTaps::Run(Graph& graph) { return TapTrimmer(graph).Run(); }

}  // namespace kiln
