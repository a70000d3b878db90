// Completeness: every op in the registry has a reference kernel, a known family, either a
// gradient or an explicit "not differentiable" mark, and either a mixed-precision list or an
// explicit "none", and a FLOP count, and every reference kernel belongs to a registered op.
#include <catch2/catch.hpp>
#include <set>

#include "ir/op_registry.h"
#include "runtime/reference/kernel.h"

using namespace kiln;

TEST_CASE("registry: every op has a reference kernel and a family", "[registry]") {
  const std::set<std::string> families = {"math",   "linalg", "nn",      "array",
                                          "reduce", "state",  "control", "collective"};
  std::set<std::string> kernels;
  for (const std::string& op : reference::KernelRegistry::Global().Ops()) kernels.insert(op);
  std::set<std::string> ops;
  for (const OpDef* def : OpRegistry::Global().All()) {
    ops.insert(def->name);
    if (!def->plugin.empty()) continue;  // a plugin's facets are checked when it loads
    INFO("op " << def->name);
    CHECK(kernels.count(def->name) == 1);
    CHECK(families.count(def->family) == 1);
    // The ops that talk to other ranks, and only they, say so (plans order them by it).
    CHECK(def->collective == (def->family == "collective"));
    CHECK(def->infer != nullptr);
    // Differentiable (a gradient is registered) or explicitly not, never neither.
    CHECK((def->grad != nullptr) != def->not_differentiable);
    // In a mixed-precision list (ir/precision.h) or explicitly in none, never neither.
    CHECK(def->precision.has_value() != def->no_precision_list);
    // Its FLOP count (ir/graph_stats.h), NoFlops() for data movement and state.
    CHECK(def->flops != nullptr);
  }
  for (const std::string& k : kernels) {
    INFO("kernel " << k);
    CHECK(ops.count(k) == 1);
  }
}

TEST_CASE("registry: op set v1 is complete", "[registry]") {
  const char* v1[] = {"Placeholder",
                      "Constant",
                      "Variable",
                      "Assign",
                      "AssignAdd",
                      "AssignSub",
                      "Identity",
                      "StopGradient",
                      "NoOp",
                      "Neg",
                      "Abs",
                      "Exp",
                      "Log",
                      "Sqrt",
                      "Rsqrt",
                      "Reciprocal",
                      "Square",
                      "Sigmoid",
                      "Tanh",
                      "Relu",
                      "LeakyRelu",
                      "Elu",
                      "Gelu",
                      "Erf",
                      "Sin",
                      "Cos",
                      "Floor",
                      "Ceil",
                      "Round",
                      "Sign",
                      "Clip",
                      "Cast",
                      "Add",
                      "Sub",
                      "Mul",
                      "Div",
                      "Pow",
                      "Maximum",
                      "Minimum",
                      "Equal",
                      "Less",
                      "LessEqual",
                      "Greater",
                      "GreaterEqual",
                      "And",
                      "Or",
                      "Not",
                      "Select",
                      "MatMul",
                      "BiasAdd",
                      "Conv2D",
                      "MaxPool2D",
                      "AvgPool2D",
                      "GlobalAvgPool",
                      "BatchNorm",
                      "LayerNorm",
                      "Softmax",
                      "LogSoftmax",
                      "SoftmaxCrossEntropy",
                      "Dropout",
                      "Sum",
                      "Mean",
                      "Max",
                      "Min",
                      "Prod",
                      "ArgMax",
                      "ArgMin",
                      "Reshape",
                      "Transpose",
                      "Concat",
                      "Split",
                      "Slice",
                      "Gather",
                      "Pad",
                      "Tile",
                      "BroadcastTo",
                      "Squeeze",
                      "Unsqueeze",
                      "Flatten",
                      "Shape",
                      "OneHot",
                      "Range"};
  for (const char* op : v1) {
    INFO("op " << op);
    CHECK(OpRegistry::Global().Find(op) != nullptr);
  }
}
