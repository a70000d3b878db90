#include "passes/promote_f64.h"

#include "ir/verifier.h"

namespace kiln {

Result<Graph> PromoteFloatsToF64(const Graph& graph) {
  Graph out = graph;
  for (Node& node : out.mutable_nodes()) {
    AttrMap promoted;
    for (const auto& [name, value] : node.attrs.items()) {
      if (value.type() == AttrType::kDType && IsFloat(value.get<DType>())) {
        promoted.Set(name, f64);
      } else if (value.type() == AttrType::kTensor && IsFloat(value.get<Tensor>().dtype())) {
        promoted.Set(name, value.get<Tensor>().CastTo(f64));
      } else if (value.type() == AttrType::kGraph) {  // a control-flow op's body
        KILN_ASSIGN_OR_RETURN(Graph body,
                              PromoteFloatsToF64(*value.get<std::shared_ptr<const Graph>>()));
        promoted.Set(name, std::make_shared<const Graph>(std::move(body)));
      } else {
        promoted.Set(name, value);
      }
    }
    node.attrs = std::move(promoted);
  }
  KILN_RETURN_IF_ERROR(Verify(out));
  return out;
}

}  // namespace kiln
