// Test helpers shared by the kernel generator tests (codegen_test, jit_test, ptx_test): the list of
// every supported op with each dtype it accepts, and KernelSpecs built from it.
#pragma once

#include <string>
#include <vector>

#include "compiler/kernel_spec.h"
#include "ir/op_registry.h"

namespace kiln::compiler::testing {

struct OpCase {
  std::string op;
  std::vector<DType> args;
  DType result;
  AttrMap attrs;

  std::string Label() const {
    std::string s = op;
    for (DType t : args) s += "_" + std::string(DTypeName(t));
    if (op == "Cast" || op == "Constant") s += "_to_" + std::string(DTypeName(result));
    if (const AttrValue* a = attrs.Find("approximate")) s += "_" + a->get<std::string>();
    return s;
  }
};

inline AttrMap Attrs(std::vector<std::pair<std::string, AttrValue>> items) {
  AttrMap m;
  for (auto& [k, v] : items) m.Set(k, v);
  return m;
}

// The dtypes of `types` that generated kernels take (HasGeneratedKernels).
inline std::vector<DType> Generated(const std::vector<DType>& types) {
  std::vector<DType> out;
  for (DType t : types)
    if (HasGeneratedKernels(t)) out.push_back(t);
  return out;
}

// Every op the generator supports, with every dtype the op's schema accepts that generated
// kernels take.
inline std::vector<OpCase> AllOpCases() {
  std::vector<OpCase> cases;
  const std::vector<DType> floats = FloatTypes(), numeric = Generated(NumericTypes()),
                           all = Generated(AllDTypes());
  auto unary = [&](const std::string& op, const std::vector<DType>& types, AttrMap attrs = {}) {
    for (DType t : types) cases.push_back({op, {t}, t, attrs});
  };
  auto binary = [&](const std::string& op, const std::vector<DType>& types, bool to_bool) {
    for (DType t : types) cases.push_back({op, {t, t}, to_bool ? DType::kBool : t, {}});
  };
  for (const char* op : {"Exp", "Log", "Sqrt", "Rsqrt", "Reciprocal", "Sigmoid", "Tanh", "Erf",
                         "Sin", "Cos", "Floor", "Ceil", "Round"})
    unary(op, floats);
  unary("Elu", floats, Attrs({{"alpha", 0.7}}));
  unary("LeakyRelu", floats, Attrs({{"alpha", 0.1}}));
  unary("Gelu", floats, Attrs({{"approximate", "none"}}));
  unary("Gelu", floats, Attrs({{"approximate", "tanh"}}));
  for (const char* op : {"Neg", "Abs", "Square", "Sign", "Relu"}) unary(op, numeric);
  unary("Clip", numeric, Attrs({{"min", -2.5}, {"max", 3.75}}));
  for (const char* op : {"Identity", "StopGradient", "ZerosLike", "OnesLike"}) unary(op, all);
  unary("Not", {DType::kBool});
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "Maximum", "Minimum"})
    binary(op, numeric, false);
  for (const char* op : {"Less", "LessEqual", "Greater", "GreaterEqual"}) binary(op, numeric, true);
  binary("Equal", all, true);
  binary("And", {DType::kBool}, true);
  binary("Or", {DType::kBool}, true);
  for (DType t : all) cases.push_back({"Select", {DType::kBool, t, t}, t, {}});
  for (DType from : all)
    for (DType to : all)
      if (from != to) cases.push_back({"Cast", {from}, to, Attrs({{"to", to}})});
  return cases;
}

// One kernel named `name` applying `c` to inputs of `shapes`, over the iteration space `shape`.
inline KernelSpec OneOpSpec(const std::string& name, const OpCase& c, const Shape& shape,
                            const std::vector<Shape>& shapes) {
  KernelSpec spec;
  spec.name = name;
  spec.shape = shape;
  KernelSpec::Op op{c.op, {}, c.attrs, c.result, "node_" + name};
  for (size_t i = 0; i < c.args.size(); ++i) {
    spec.inputs.push_back({c.args[i], shapes[i]});
    op.args.push_back(static_cast<int>(i));
  }
  spec.ops.push_back(op);
  spec.outputs = {static_cast<int>(c.args.size())};
  return spec;
}

// The operand shapes a case is tested with: broadcasting for binary and ternary ops.
inline std::vector<Shape> CaseShapes(const OpCase& c) {
  if (c.args.size() == 1) return {Shape{3, 4, 5}};
  if (c.args.size() == 2) return {Shape{3, 4, 5}, Shape{4, 1}};
  return {Shape{1, 4, 5}, Shape{3, 4, 5}, Shape{}};
}

// Small fused kernels whose emitted MLIR is checked in (tests/data/golden/codegen/<name>.mlir) and
// which the JIT and PTX tests also run.
inline std::vector<KernelSpec> GoldenSpecs() {
  std::vector<KernelSpec> specs(3);
  // y = x + b, b broadcast along the two leading dimensions.
  specs[0].name = "add_broadcast";
  specs[0].shape = Shape{2, 3, 4};
  specs[0].inputs = {{DType::kF32, Shape{2, 3, 4}}, {DType::kF32, Shape{4}}};
  specs[0].ops = {{"Add", {0, 1}, {}, DType::kF32, "add"}};
  specs[0].outputs = {2};
  // m = x * y and relu(m), both written.
  specs[1].name = "relu_mul_two_outputs";
  specs[1].shape = Shape{4, 8};
  specs[1].inputs = {{DType::kF32, Shape{4, 8}}, {DType::kF32, Shape{4, 8}}};
  specs[1].ops = {{"Mul", {0, 1}, {}, DType::kF32, "mul"}, {"Relu", {2}, {}, DType::kF32, "relu"}};
  specs[1].outputs = {2, 3};
  // c = x > 0.5; s = c ? x : float(i); both written (c as bool bytes).
  specs[2].name = "cast_compare_select";
  specs[2].shape = Shape{2, 8};
  specs[2].inputs = {{DType::kF32, Shape{2, 8}}, {DType::kI32, Shape{8}}};
  specs[2].ops = {{"Constant", {}, Attrs({{"value", 0.5}}), DType::kF32, "half"},
                  {"Greater", {0, 2}, {}, DType::kBool, "greater"},
                  {"Cast", {1}, Attrs({{"to", DType::kF32}}), DType::kF32, "cast"},
                  {"Select", {3, 0, 4}, {}, DType::kF32, "select"}};
  specs[2].outputs = {5, 3};
  return specs;
}

// Row-reduction kernels (KernelSpec::row_reduction) of each form: per-element and per-row outputs,
// inputs broadcast along rows or columns, f32, f64 and bf16 (computed in f32).
inline std::vector<KernelSpec> RowReductionSpecs() {
  std::vector<KernelSpec> specs(3);
  for (KernelSpec& spec : specs) spec.row_reduction = true;
  // softmax: e = exp(x - max(x)); y = e / sum(e).
  specs[0].name = "row_softmax";
  specs[0].shape = Shape{5, 7};
  specs[0].inputs = {{DType::kF32, Shape{5, 7}}};
  specs[0].ops = {{"ReduceMax", {0}, {}, DType::kF32, "max"},
                  {"Sub", {0, 1}, {}, DType::kF32, "sub"},
                  {"Exp", {2}, {}, DType::kF32, "exp"},
                  {"ReduceSum", {3}, {}, DType::kF32, "sum"},
                  {"Div", {3, 4}, {}, DType::kF32, "div"}};
  specs[0].outputs = {5, 4};
  // normalize: d = x - sum(x) / 7 + r; y = d * s / sqrt(sum(d * d)); r per row, s per column.
  specs[1].name = "row_normalize_f64";
  specs[1].shape = Shape{5, 7};
  specs[1].inputs = {
      {DType::kF64, Shape{5, 7}}, {DType::kF64, Shape{7}}, {DType::kF64, Shape{5, 1}}};
  specs[1].ops = {{"ReduceSum", {0}, {}, DType::kF64, "sum"},
                  {"Constant", {}, Attrs({{"value", 7.0}}), DType::kF64, "n"},
                  {"Div", {3, 4}, {}, DType::kF64, "mean"},
                  {"Add", {5, 2}, {}, DType::kF64, "shift"},
                  {"Sub", {0, 6}, {}, DType::kF64, "centered"},
                  {"Square", {7}, {}, DType::kF64, "square"},
                  {"ReduceSum", {8}, {}, DType::kF64, "sq"},
                  {"Sqrt", {9}, {}, DType::kF64, "norm"},
                  {"Mul", {7, 1}, {}, DType::kF64, "scaled"},
                  {"Div", {11, 10}, {}, DType::kF64, "y"}};
  specs[1].outputs = {12, 10};
  // bf16 min over rows, computed in f32 and rounded.
  specs[2].name = "row_min_bf16";
  specs[2].shape = Shape{3, 9};
  specs[2].inputs = {{DType::kBF16, Shape{3, 9}}};
  specs[2].ops = {{"Cast", {0}, Attrs({{"to", DType::kF32}}), DType::kF32, "widen"},
                  {"ReduceMin", {1}, {}, DType::kF32, "min"},
                  {"Cast", {2}, Attrs({{"to", DType::kBF16}}), DType::kBF16, "round"}};
  specs[2].outputs = {3};
  return specs;
}

}  // namespace kiln::compiler::testing
