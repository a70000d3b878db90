#include "compiler/reduction_fusion.h"

#include <map>
#include <vector>

#include "ir/op_registry.h"
#include "ir/ops/reduce.h"

namespace kiln::compiler {
namespace {

Error Refuse(const std::string& why) { return MakeError(ErrorCode::kUnimplemented, why); }

// What a row reduction computes per row.
enum class RowOp { kSoftmax, kLogSoftmax, kLayerNorm, kMax, kMin, kSum, kMean };

// Appends the values of one kernel; `compute` is the dtype the arithmetic runs in.
class SpecBuilder {
 public:
  SpecBuilder(KernelSpec& spec, const Node& node, DType dtype)
      : spec_(spec), node_(node), dtype_(dtype), compute_(dtype == f64 ? f64 : f32) {}

  // Inputs of the node's dtype (all before any op: values index inputs first), converted to the
  // compute dtype.
  std::vector<int> Inputs(const std::vector<Shape>& shapes) {
    for (const Shape& shape : shapes) spec_.inputs.push_back({dtype_, shape});
    std::vector<int> values;
    for (size_t i = 0; i < shapes.size(); ++i) {
      int v = static_cast<int>(i);
      values.push_back(dtype_ == compute_ ? v : Op("Cast", {v}, compute_));
    }
    return values;
  }
  int Op(const std::string& op, std::vector<int> args) { return Op(op, std::move(args), compute_); }
  int Const(double value) {
    AttrMap attrs;
    attrs.Set("value", value);
    return Add(KernelSpec::Op{"Constant", {}, attrs, compute_, node_.name});
  }
  // Marks `v` (a compute-dtype value) as the next output, rounded to the node's dtype.
  void Output(int v) { spec_.outputs.push_back(dtype_ == compute_ ? v : Op("Cast", {v}, dtype_)); }

 private:
  int Op(const std::string& op, std::vector<int> args, DType dtype) {
    return Add(KernelSpec::Op{op, std::move(args), AttrMap(), dtype, node_.name});
  }
  int Add(KernelSpec::Op op) {
    spec_.ops.push_back(std::move(op));
    return spec_.num_values() - 1;
  }

  KernelSpec& spec_;
  const Node& node_;
  DType dtype_, compute_;
};

int64_t Product(const Shape& s, int from, int to) {
  int64_t p = 1;
  for (int d = from; d < to; ++d) p *= s[d];
  return p;
}

// The first reduced axis when the node reduces exactly the trailing axes [first, rank).
Result<int> FirstReducedAxis(const Node& node, RowOp row_op, const Shape& x) {
  const int rank = x.rank();
  const bool softmax = row_op == RowOp::kSoftmax || row_op == RowOp::kLogSoftmax;
  if (softmax || row_op == RowOp::kLayerNorm) {
    KILN_ASSIGN_OR_RETURN(int64_t attr, node.attrs.GetInt("axis"));
    KILN_ASSIGN_OR_RETURN(int axis, NormalizeAxis(attr, rank));
    if (softmax && Product(x, axis + 1, rank) != 1)
      return Refuse("axis " + std::to_string(axis) + " of " + x.ToString() +
                    " is not the last one (no transposed row-reduction kernel yet)");
    return axis;
  }
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> attr, node.attrs.GetInts("axes"));
  KILN_ASSIGN_OR_RETURN(std::vector<int> axes, NormalizeReduceAxes(attr, rank));
  const int first = rank - static_cast<int>(axes.size());
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] != first + static_cast<int>(i))
      return Refuse("reduces axes that are not the trailing ones of " + x.ToString());
  return first;
}

Result<KernelSpec> LowerToRowReduction(const Node& node, RowOp row_op, const StaticInfo& info) {
  if (node.inputs.empty()) return Refuse("not a row reduction");
  const TensorType& x = info.types.at(node.inputs[0]);
  if (!IsFloat(x.dtype))
    return Refuse("dtype " + std::string(DTypeName(x.dtype)) + " (floats only)");
  if (!x.shape.IsFullyKnown()) return Refuse("shape " + x.shape.ToString() + " not known");
  const AttrMap attrs = OpRegistry::Global().Find(node.op)->WithDefaults(node.attrs);
  Node with_defaults = node;
  with_defaults.attrs = attrs;
  Result<int> first = FirstReducedAxis(with_defaults, row_op, x.shape);
  if (!first.ok()) {
    if (first.error().code() == ErrorCode::kUnimplemented) return first.error();
    return Refuse(first.error().message());
  }
  const int64_t rows = Product(x.shape, 0, *first), cols = Product(x.shape, *first, x.shape.rank());
  if ((row_op == RowOp::kMax || row_op == RowOp::kMin) && cols == 0 && rows > 0)
    return Refuse("reduces over zero elements (the reference reports the error)");

  KernelSpec spec;
  spec.row_reduction = true;
  spec.shape = Shape{rows, cols};
  SpecBuilder b(spec, node, x.dtype);
  const bool layer_norm = row_op == RowOp::kLayerNorm;
  if (layer_norm)
    for (int i = 1; i <= 2; ++i)
      if (info.types.at(node.inputs[i]).dtype != x.dtype)
        return Refuse("scale and bias must have x's dtype");
  const std::vector<int> in_values =
      b.Inputs(layer_norm ? std::vector<Shape>{spec.shape, Shape{cols}, Shape{cols}}
                          : std::vector<Shape>{spec.shape});
  const int in = in_values[0];
  if (row_op == RowOp::kSoftmax || row_op == RowOp::kLogSoftmax) {
    const int shifted = b.Op("Sub", {in, b.Op("ReduceMax", {in})});
    const int exp = b.Op("Exp", {shifted});
    const int sum = b.Op("ReduceSum", {exp});
    b.Output(row_op == RowOp::kSoftmax ? b.Op("Div", {exp, sum})
                                       : b.Op("Sub", {shifted, b.Op("Log", {sum})}));
  } else if (layer_norm) {
    KILN_ASSIGN_OR_RETURN(double epsilon, attrs.GetFloat("epsilon"));
    const int scale = in_values[1], bias = in_values[2];
    const int n = b.Const(static_cast<double>(cols));
    const int centered = b.Op("Sub", {in, b.Op("Div", {b.Op("ReduceSum", {in}), n})});
    const int var = b.Op("Div", {b.Op("ReduceSum", {b.Op("Square", {centered})}), n});
    const int rstd =
        b.Op("Div", {b.Const(1.0), b.Op("Sqrt", {b.Op("Add", {var, b.Const(epsilon)})})});
    b.Output(b.Op("Add", {b.Op("Mul", {b.Op("Mul", {centered, rstd}), scale}), bias}));
  } else if (row_op == RowOp::kMean) {
    b.Output(b.Op("Div", {b.Op("ReduceSum", {in}), b.Const(static_cast<double>(cols))}));
  } else {
    b.Output(b.Op(row_op == RowOp::kSum   ? "ReduceSum"
                  : row_op == RowOp::kMax ? "ReduceMax"
                                          : "ReduceMin",
                  {in}));
  }
  return spec;
}

}  // namespace

void RegisterRowReductionLowerings(OpLowerings& lowerings) {
  const std::map<std::string, RowOp> row_ops = {{"Softmax", RowOp::kSoftmax},
                                                {"LogSoftmax", RowOp::kLogSoftmax},
                                                {"LayerNorm", RowOp::kLayerNorm},
                                                {"Max", RowOp::kMax},
                                                {"Min", RowOp::kMin},
                                                {"Sum", RowOp::kSum},
                                                {"Mean", RowOp::kMean}};
  for (const auto& [op, row_op] : row_ops)
    lowerings.Add(op).row_reduction = [row_op = row_op](const Node& node, const StaticInfo& info) {
      return LowerToRowReduction(node, row_op, info);
    };
}

}  // namespace kiln::compiler
