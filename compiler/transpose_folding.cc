#include "compiler/transpose_folding.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "compiler/plan_pruning.h"
#include "ir/ops/array_internal.h"

namespace kiln::compiler {
namespace {

// Whether `node` is a Transpose that swaps the last two of rank >= 2 dims and keeps the others.
bool SwapsLastTwo(const Node& node, const StaticInfo& info) {
  if (node.op != "Transpose" || node.inputs.size() != 1 || !node.control_inputs.empty())
    return false;
  const int rank = info.types.at(node.inputs[0]).shape.rank();
  if (rank < 2) return false;
  std::vector<int64_t> perm = internal::TransposePermutation(node.attrs, rank);
  for (int d = 0; d < rank - 2; ++d)
    if (perm[d] != d) return false;
  return perm[rank - 2] == rank - 1 && perm[rank - 1] == rank - 2;
}

bool IsScalarArithmetic(const std::string& op) {
  return op == "Mul" || op == "Div" || op == "Add" || op == "Sub";
}

class Folder {
 public:
  Folder(RunPlan& plan, std::vector<std::unique_ptr<Node>>& owned, StaticInfo& info)
      : plan_(plan), owned_(owned), info_(info) {
    for (const Node* node : plan.nodes) names_.insert(node->name);
    Index();
  }

  int Run() {
    for (size_t i = 0; i < plan_.nodes.size(); ++i)
      if (int operand = TransposedOperand(*plan_.nodes[i]); operand >= 0)
        SinkTransposeBelow(i++, operand);  // the op moved to i, its Transpose to i + 1
    int folded = 0;
    for (const Node*& node : plan_.nodes)
      if (const Node* product = TransposedProduct(*node)) {
        node = Own(SwappedProduct(*product, *node));
        removable_.insert(product->name);
        ++folded;
      }
    Index();
    for (const Node*& node : plan_.nodes) {
      if (node->op != "MatMul" || node->inputs.size() != 2) continue;
      std::unique_ptr<Node> copy;
      for (int operand = 0; operand < 2; ++operand) {
        const Node* t = Producer(node->inputs[operand]);
        if (!t || !SwapsLastTwo(*t, info_)) continue;
        if (!copy) copy = std::make_unique<Node>(*node);
        copy->inputs[operand] = t->inputs[0];
        const char* flag = operand == 0 ? "transpose_a" : "transpose_b";
        const AttrValue* old = copy->attrs.Find(flag);
        copy->attrs.Set(flag, !(old && old->get<bool>()));
        removable_.insert(t->name);
        ++folded;
      }
      if (copy) node = Own(std::move(copy));
    }
    DropUnreadNodes(plan_, removable_);
    return folded;
  }

 private:
  void Index() {
    producer_.clear();
    for (const Node* node : plan_.nodes) producer_[node->name] = node;
  }
  const Node* Producer(const TensorRef& t) const {
    auto it = producer_.find(t.node);
    return it == producer_.end() ? nullptr : it->second;
  }
  const Node* Own(std::unique_ptr<Node> node) {
    owned_.push_back(std::move(node));
    return owned_.back().get();
  }
  std::vector<const Node*> Readers(const std::string& name) const {
    std::vector<const Node*> readers;
    for (const Node* node : plan_.nodes) {
      bool reads = std::find(node->control_inputs.begin(), node->control_inputs.end(), name) !=
                   node->control_inputs.end();
      for (const TensorRef& in : node->inputs) reads = reads || in.node == name;
      if (reads) readers.push_back(node);
    }
    return readers;
  }

  // The MatMul that `node` transposes (swapping the last two dims), when nothing else reads or
  // fetches the product and both its operands have rank >= 2; else null.
  const Node* TransposedProduct(const Node& node) const {
    if (!SwapsLastTwo(node, info_)) return nullptr;
    const Node* product = Producer(node.inputs[0]);
    if (!product || product->op != "MatMul" || product->inputs.size() != 2 ||
        !product->control_inputs.empty() || info_.values.count(node.inputs[0]))
      return nullptr;
    for (const TensorRef& in : product->inputs)
      if (info_.types.at(in).shape.rank() < 2) return nullptr;
    for (const TensorRef& f : plan_.fetches)
      if (f.node == product->name) return nullptr;
    std::vector<const Node*> readers = Readers(product->name);
    return readers.size() == 1 && readers[0] == &node ? product : nullptr;
  }

  // (a b)^T = b^T a^T: MatMul(b, a) with the flags swapped and flipped, named as `transpose`.
  std::unique_ptr<Node> SwappedProduct(const Node& product, const Node& transpose) const {
    auto swapped = std::make_unique<Node>(product);
    swapped->name = transpose.name;
    swapped->inputs = {product.inputs[1], product.inputs[0]};
    swapped->output_types = transpose.output_types;
    const AttrValue* ta = product.attrs.Find("transpose_a");
    const AttrValue* tb = product.attrs.Find("transpose_b");
    swapped->attrs.Set("transpose_a", !(tb && tb->get<bool>()));
    swapped->attrs.Set("transpose_b", !(ta && ta->get<bool>()));
    return swapped;
  }

  // Which input of `node` is a Transpose that op(Transpose(x), s) -> Transpose(op(x, s)) may
  // move below it (-1: none): a scalar Mul, Div, Add or Sub (either operand order) of a Transpose
  // swapping the last two dims and a one-element s of the same dtype, read only by MatMuls
  // (which will fold the Transpose), and not a compile-time value.
  int TransposedOperand(const Node& node) const {
    if (!IsScalarArithmetic(node.op) || node.inputs.size() != 2 || !node.control_inputs.empty() ||
        node.output_types.size() != 1 || info_.values.count(TensorRef{node.name, 0}))
      return -1;
    const TensorType& out = info_.types.at(TensorRef{node.name, 0});
    int transposed = -1;
    for (int i = 0; i < 2; ++i) {
      const Node* t = Producer(node.inputs[i]);
      const TensorType& s = info_.types.at(node.inputs[1 - i]);
      if (t && SwapsLastTwo(*t, info_) && info_.types.at(node.inputs[i]) == out &&
          s.shape.NumElements() == 1 && s.shape.rank() <= out.shape.rank() && s.dtype == out.dtype)
        transposed = i;
    }
    if (transposed < 0) return -1;
    std::vector<const Node*> readers = Readers(node.name);
    if (readers.empty()) return -1;
    for (const Node* reader : readers)
      if (reader->op != "MatMul" || !reader->control_inputs.empty()) return -1;
    return transposed;
  }

  // plan_.nodes[i] = op(Transpose(x), s) -> op'(x, s) named "<op>/before_transpose", then
  // Transpose(op') named as op was.
  void SinkTransposeBelow(size_t i, int operand) {
    const Node& node = *plan_.nodes[i];
    const Node* t = Producer(node.inputs[operand]);
    auto moved = std::make_unique<Node>(node);
    moved->name = FreshName(node.name + "/before_transpose");
    moved->inputs[operand] = t->inputs[0];
    const TensorType& x = info_.types.at(t->inputs[0]);
    moved->output_types = {TensorType{node.output_types[0].dtype, x.shape}};
    info_.types[TensorRef{moved->name, 0}] = moved->output_types[0];
    auto transpose = std::make_unique<Node>(*t);
    transpose->name = node.name;
    transpose->inputs = {TensorRef{moved->name, 0}};
    transpose->output_types = node.output_types;
    removable_.insert(t->name);
    removable_.insert(transpose->name);
    const Node* moved_ptr = Own(std::move(moved));
    const Node* transpose_ptr = Own(std::move(transpose));
    plan_.nodes[i] = transpose_ptr;
    plan_.nodes.insert(plan_.nodes.begin() + static_cast<std::ptrdiff_t>(i), moved_ptr);
    producer_[moved_ptr->name] = moved_ptr;
    producer_[transpose_ptr->name] = transpose_ptr;
  }

  std::string FreshName(const std::string& base) {
    std::string name = base;
    for (int k = 1; names_.count(name); ++k) name = base + "_" + std::to_string(k);
    names_.insert(name);
    return name;
  }

  RunPlan& plan_;
  std::vector<std::unique_ptr<Node>>& owned_;
  StaticInfo& info_;
  std::set<std::string> names_;
  std::map<std::string, const Node*> producer_;
  std::set<std::string> removable_;  // bypassed or made here: Transposes, transposed products
};

}  // namespace

int FoldTransposesIntoMatMuls(RunPlan& plan, std::vector<std::unique_ptr<Node>>& owned,
                              StaticInfo& info) {
  return Folder(plan, owned, info).Run();
}

}  // namespace kiln::compiler
