#include "compiler/op_lowerings.h"

#include "compiler/copy_lowering.h"
#include "compiler/library_lowering.h"
#include "compiler/pool_lowering.h"
#include "compiler/reduction_fusion.h"

namespace kiln::compiler {
namespace {

// The ops whose reference kernel the compiled backends run, and why (`kiln inspect --fusion`
// prints it beside each such node). Graph inputs have no step at all.
void RegisterReferenceSteps(OpLowerings& lowerings) {
  const std::pair<const char*, const char*> reference[] = {
      {"Placeholder", "a graph input: fed, not computed"},
      {"NoOp", "it only groups control inputs: nothing to compute"},
      {"Shape", "a tensor's shape, folded at compile time where it is known"},
      {"Range", "its length depends on its inputs' values"},
      {"NonZero", "its length depends on its input's values"},
      {"Unique", "its length depends on its input's values"},
      {"NonMaxSuppression", "its length depends on its inputs' values"},
      {"RoiAlign", "no generated kernel yet"},
      {"MaxPoolWithArgmax", "no generated kernel yet (windows of any rank, with dilations)"},
      {"TfIdfVectorizer", "n-gram lookups in a table: no generated kernel"},
      {"CheckNumerics", "it checks its input and names the node on the host"},
      {"AllReduce", "a collective: the ranks' values meet through the session's communicator"},
      {"Dropout", "its mask comes from the session's random stream, the same on every backend"},
      {"ArgMax", "no generated index reduction yet"},
      {"ArgMin", "no generated index reduction yet"},
      {"TopK", "no generated sort yet"},
      {"Det", "an LU factorization per matrix: no generated kernel yet"},
      {"DetGrad", "an LU factorization per matrix: no generated kernel yet"},
      {"Acos", "no scalar body yet"},
      {"ShiftLeft", "no scalar body yet"},
      {"ShiftRight", "no scalar body yet"},
      {"Asin", "no scalar body yet"},
      {"Atan", "no scalar body yet"},
      {"GatherElements", "no lowering yet"},
      {"ScatterElements", "no lowering yet"},
      {"PadGrad", "no lowering yet (a constant-mode Pad's gradient is a Pad)"},
      {"TileGrad", "no lowering yet"},
      {"If", "its branches run on the reference executor (compiled bodies come later)"},
      {"While", "its body runs on the reference executor (compiled bodies come later)"},
      {"Deferred",
       "converted where its values are known (deferred_expansion.h); one left waits for values "
       "known only at run time"},
  };
  for (const auto& [op, why] : reference) lowerings.Add(op).reference = why;
  // Sequences and optionals live on the host: a plan holding one runs on the reference executor
  // (compiler/static_types.h declines it), so these never become steps of a plan.
  for (const char* op :
       {"SequenceEmpty", "SequenceConstruct", "SequenceInsert", "SequenceErase", "SequenceAt",
        "SequenceLength", "OptionalOf", "OptionalNone", "OptionalHasElement", "OptionalGetElement"})
    lowerings.Add(op).reference =
        "it takes or gives a sequence or optional, which live on the host";
  // Integer division must report a zero divisor (a generated kernel would not): it keeps the
  // reference kernel's check.
  lowerings.Add("Div").keeps_reference = [](const Node& node, const StaticInfo& info) {
    return !IsFloat(info.types.at(TensorRef{node.name, 0}).dtype);
  };
}

}  // namespace

const OpLowerings& OpLowerings::Global() {
  static const OpLowerings* global = [] {
    auto* lowerings = new OpLowerings;
    RegisterLibraryLowerings(*lowerings);
    RegisterCopyLowerings(*lowerings);
    RegisterPoolLowerings(*lowerings);
    RegisterRowReductionLowerings(*lowerings);
    RegisterReferenceSteps(*lowerings);
    return lowerings;
  }();
  return *global;
}

const OpLowering* OpLowerings::Find(const std::string& op) const {
  auto it = ops_.find(op);
  return it == ops_.end() ? nullptr : &it->second;
}

}  // namespace kiln::compiler
