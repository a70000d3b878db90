#include "tools/lib/constant_evaluator.h"

#include "runtime/reference/executor.h"

namespace kiln {

ConstantEvaluator ReferenceConstantEvaluator() {
  return [](const Node& node, const std::vector<Tensor>& inputs) {
    return reference::EvaluateNode(node, inputs);
  };
}

PassOptions ReferencePassOptions() {
  PassOptions options;
  options.evaluate = ReferenceConstantEvaluator();
  return options;
}

}  // namespace kiln
