// ONNX exporters of kiln's ops (opset 17), one entry per op: the same op where ONNX has it, a
// small composition where it does not. Ops without an entry have no ONNX form (state updates,
// backward ops); control flow and Deferred nodes are in export_control.cc.
#include <cmath>
#include <numbers>

#include "ir/io/onnx_tensor.h"
#include "ir/onnx/export_context.h"

namespace kiln::onnx_export {
namespace {

std::vector<std::string> AllInputs(const NodeExport& e) {
  std::vector<std::string> in;
  for (int i = 0; i < e.num_inputs(); ++i) in.push_back(e.in(i));
  return in;
}

std::vector<std::string> AllOutputs(const NodeExport& e) {
  std::vector<std::string> out;
  for (int i = 0; i < e.num_outputs(); ++i) out.push_back(e.out(i));
  return out;
}

// The same op under `onnx_op`, inputs and outputs as they are, no attributes.
OpExporter As(std::string onnx_op) {
  return [onnx_op](NodeExport& e) {
    e.Add(onnx_op, AllInputs(e), AllOutputs(e));
    return OkStatus();
  };
}

// The same op with one int attribute `name` (kiln's and ONNX's names agree).
OpExporter WithAxis(std::string onnx_op, std::string name = "axis") {
  return [onnx_op, name](NodeExport& e) -> Status {
    KILN_ASSIGN_OR_RETURN(int64_t axis, e.attrs().GetInt(name));
    SetAttr(e.Add(onnx_op, AllInputs(e), AllOutputs(e)), name, axis);
    return OkStatus();
  };
}

OpExporter WithAlpha(std::string onnx_op) {
  return [onnx_op](NodeExport& e) -> Status {
    KILN_ASSIGN_OR_RETURN(double alpha, e.attrs().GetFloat("alpha"));
    SetAttr(e.Add(onnx_op, {e.in(0)}, {e.out()}), "alpha", alpha);
    return OkStatus();
  };
}

void SetTensorAttr(onnx::NodeProto& node, const std::string& name, const Tensor& t) {
  onnx::AttributeProto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::TENSOR);
  OnnxTensorToProto(t, "", a->mutable_t());
}

// A tensor shaped like input 0 filled with `value` (OnesLike, ZerosLike).
OpExporter Filled(double value) {
  return [value](NodeExport& e) {
    std::string shape = e.Temp("shape");
    e.Add("Shape", {e.in(0)}, {shape});
    SetTensorAttr(e.Add("ConstantOfShape", {shape}, {e.out()}), "value",
                  Tensor::FromDoubles(e.out_type().dtype, Shape({1}), {value}));
    return OkStatus();
  };
}

// x with its last two dims swapped.
std::string SwapLastTwo(NodeExport& e, const std::string& x, int rank, const std::string& what) {
  std::vector<int64_t> perm;
  for (int i = 0; i < rank; ++i) perm.push_back(i);
  std::swap(perm[rank - 1], perm[rank - 2]);
  std::string t = e.Temp(what);
  SetAttr(e.Add("Transpose", {x}, {t}), "perm", perm);
  return t;
}

Status ExportMatMul(NodeExport& e) {
  KILN_ASSIGN_OR_RETURN(bool ta, e.attrs().GetBool("transpose_a"));
  KILN_ASSIGN_OR_RETURN(bool tb, e.attrs().GetBool("transpose_b"));
  std::string a = e.in(0), b = e.in(1);
  if (ta && e.in_type(0).shape.rank() >= 2) a = SwapLastTwo(e, a, e.in_type(0).shape.rank(), "a_t");
  if (tb && e.in_type(1).shape.rank() >= 2) b = SwapLastTwo(e, b, e.in_type(1).shape.rank(), "b_t");
  const DType out = e.out_type().dtype;
  if (out != e.in_type(0).dtype) {  // out_dtype: a float32 product of 16-bit operands
    for (std::string* operand : {&a, &b}) {
      std::string cast = e.Temp("f32");
      SetAttr(e.Add("Cast", {*operand}, {cast}), "to", int64_t{OnnxTypeOf(out)});
      *operand = cast;
    }
  }
  e.Add("MatMul", {a, b}, {e.out()});
  return OkStatus();
}

Status ExportBiasAdd(NodeExport& e) {
  KILN_ASSIGN_OR_RETURN(int64_t axis, e.attrs().GetInt("axis"));
  const int rank = e.in_type(0).shape.rank();
  if (axis < 0) axis += rank;
  std::string bias = e.in(1);
  if (axis != rank - 1) {  // [C] -> [C, 1, ..., 1] to broadcast along `axis`
    std::vector<int64_t> axes;
    for (int64_t i = 1; i < rank - axis; ++i) axes.push_back(i);
    std::string shaped = e.Temp("bias");
    e.Add("Unsqueeze", {bias, e.Ints(axes, "axes")}, {shaped});
    bias = shaped;
  }
  e.Add("Add", {e.in(0), bias}, {e.out()});
  return OkStatus();
}

Status ExportConv(NodeExport& e) {
  onnx::NodeProto& n = e.Add("Conv", {e.in(0), e.in(1)}, {e.out()});
  const Shape& w = e.in_type(1).shape;
  if (w.rank() == 4 && w.dim(2) >= 0 && w.dim(3) >= 0)
    SetAttr(n, "kernel_shape", std::vector<int64_t>{w.dim(2), w.dim(3)});
  for (const char* name : {"strides", "pads", "dilations"}) {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> v, e.attrs().GetInts(name));
    SetAttr(n, name, v);
  }
  KILN_ASSIGN_OR_RETURN(int64_t groups, e.attrs().GetInt("groups"));
  SetAttr(n, "group", groups);
  return OkStatus();
}

OpExporter Pool(std::string onnx_op) {
  return [onnx_op](NodeExport& e) -> Status {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> kernel, e.attrs().GetInts("kernel"));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> strides, e.attrs().GetInts("strides"));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> pads, e.attrs().GetInts("pads"));
    KILN_ASSIGN_OR_RETURN(bool ceil_mode, e.attrs().GetBool("ceil_mode"));
    onnx::NodeProto& n = e.Add(onnx_op, {e.in(0)}, {e.out()});
    SetAttr(n, "kernel_shape", kernel);
    SetAttr(n, "strides", strides.empty() ? kernel : strides);
    if (!pads.empty()) SetAttr(n, "pads", pads);
    SetAttr(n, "ceil_mode", int64_t{ceil_mode});
    if (e.attrs().Find("count_include_pad")) {
      KILN_ASSIGN_OR_RETURN(bool include, e.attrs().GetBool("count_include_pad"));
      SetAttr(n, "count_include_pad", int64_t{include});
    }
    return OkStatus();
  };
}

// MaxPoolWithArgmax is ONNX MaxPool with its Indices output (row-major, storage_order 0).
Status ExportMaxPoolWithArgmax(NodeExport& e) {
  const DType dtype = e.in_type(0).dtype;
  if (dtype != f32 && dtype != f64 && dtype != f16 && dtype != i8 && dtype != u8)
    return e.Unsupported("ONNX MaxPool (opset 17) takes float, double, float16, int8 and uint8, " +
                         std::string("not ") + std::string(DTypeName(dtype)));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> kernel, e.attrs().GetInts("kernel"));
  onnx::NodeProto& n = e.Add("MaxPool", {e.in(0)}, {e.out(0), e.out(1)});
  SetAttr(n, "kernel_shape", kernel);
  for (const char* name : {"strides", "dilations", "pads"}) {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> values, e.attrs().GetInts(name));
    if (!values.empty()) SetAttr(n, name, values);
  }
  KILN_ASSIGN_OR_RETURN(bool ceil_mode, e.attrs().GetBool("ceil_mode"));
  SetAttr(n, "ceil_mode", int64_t{ceil_mode});
  return OkStatus();
}

Status ExportBatchNorm(NodeExport& e) {
  KILN_ASSIGN_OR_RETURN(bool training, e.attrs().GetBool("training"));
  if (training) return e.Unsupported("training mode");
  KILN_ASSIGN_OR_RETURN(double epsilon, e.attrs().GetFloat("epsilon"));
  SetAttr(e.Add("BatchNormalization", AllInputs(e), {e.out(0)}), "epsilon", epsilon);
  // Inference mode passes the statistics through.
  e.Add("Identity", {e.in(3)}, {e.out(1)});
  e.Add("Identity", {e.in(4)}, {e.out(2)});
  return OkStatus();
}

Status ExportLayerNorm(NodeExport& e) {
  KILN_ASSIGN_OR_RETURN(int64_t axis, e.attrs().GetInt("axis"));
  KILN_ASSIGN_OR_RETURN(double epsilon, e.attrs().GetFloat("epsilon"));
  onnx::NodeProto& n = e.Add("LayerNormalization", AllInputs(e), {e.out()});
  SetAttr(n, "axis", axis);
  SetAttr(n, "epsilon", epsilon);
  return OkStatus();
}

Status ExportDropout(NodeExport& e) {
  KILN_ASSIGN_OR_RETURN(bool training, e.attrs().GetBool("training"));
  KILN_ASSIGN_OR_RETURN(double rate, e.attrs().GetFloat("rate"));
  if (training && rate > 0) return e.Unsupported("training mode");
  e.Add("Dropout", {e.in(0)}, AllOutputs(e));  // inference: y = x, the mask all true
  return OkStatus();
}

Status ExportCrossEntropy(NodeExport& e) {
  KILN_ASSIGN_OR_RETURN(std::string reduction, e.attrs().GetString("reduction"));
  SetAttr(e.Add("SoftmaxCrossEntropyLoss", AllInputs(e), {e.out()}), "reduction", reduction);
  return OkStatus();
}

// 0.5 x (1 + erf(x / sqrt 2)), or with approximate = "tanh"
// 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
Status ExportGelu(NodeExport& e) {
  KILN_ASSIGN_OR_RETURN(std::string approximate, e.attrs().GetString("approximate"));
  const DType t = e.in_type(0).dtype;
  const std::string& x = e.in(0);
  auto op = [&](const char* type, std::vector<std::string> in, const char* what) {
    std::string out = e.Temp(what);
    e.Add(type, std::move(in), {out});
    return out;
  };
  std::string inner;
  if (approximate == "tanh") {
    std::string cube = op("Mul", {op("Mul", {x, x}, "x2"), x}, "x3");
    std::string sum = op("Add", {x, op("Mul", {cube, e.Scalar(0.044715, t, "c")}, "cx3")}, "sum");
    inner = op("Tanh", {op("Mul", {sum, e.Scalar(std::sqrt(2 / std::numbers::pi), t, "k")}, "arg")},
               "tanh");
  } else {
    inner = op("Erf", {op("Mul", {x, e.Scalar(1 / std::numbers::sqrt2, t, "k")}, "arg")}, "erf");
  }
  std::string half_x = op("Mul", {x, e.Scalar(0.5, t, "half")}, "half_x");
  std::string one_plus = op("Add", {inner, e.Scalar(1, t, "one")}, "one_plus");
  e.Add("Mul", {half_x, one_plus}, {e.out()});
  return OkStatus();
}

Status ExportClip(NodeExport& e) {
  KILN_ASSIGN_OR_RETURN(double lo, e.attrs().GetFloat("min"));
  KILN_ASSIGN_OR_RETURN(double hi, e.attrs().GetFloat("max"));
  const DType t = e.in_type(0).dtype;
  // An infinite bound of an integer tensor is no bound ("" leaves an optional input out).
  auto bound = [&](double v, const char* what) {
    return std::isinf(v) && !IsFloat(t) ? std::string() : e.Scalar(v, t, what);
  };
  e.Add("Clip", {e.in(0), bound(lo, "min"), bound(hi, "max")}, {e.out()});
  return OkStatus();
}

Status ExportCast(NodeExport& e) {
  KILN_ASSIGN_OR_RETURN(DType to, e.attrs().GetDType("to"));
  SetAttr(e.Add("Cast", {e.in(0)}, {e.out()}), "to", int64_t{OnnxTypeOf(to)});
  return OkStatus();
}

Status ExportArgReduce(NodeExport& e, const char* onnx_op) {
  KILN_ASSIGN_OR_RETURN(int64_t axis, e.attrs().GetInt("axis"));
  KILN_ASSIGN_OR_RETURN(bool keepdims, e.attrs().GetBool("keepdims"));
  KILN_ASSIGN_OR_RETURN(bool last, e.attrs().GetBool("select_last_index"));
  onnx::NodeProto& n = e.Add(onnx_op, {e.in(0)}, {e.out()});
  SetAttr(n, "axis", axis);
  SetAttr(n, "keepdims", int64_t{keepdims});
  SetAttr(n, "select_last_index", int64_t{last});
  return OkStatus();
}

Status ExportNonMaxSuppression(NodeExport& e) {
  KILN_ASSIGN_OR_RETURN(bool center, e.attrs().GetBool("center_point_box"));
  SetAttr(e.Add("NonMaxSuppression", AllInputs(e), {e.out()}), "center_point_box", int64_t{center});
  return OkStatus();
}

Status ExportRoiAlign(NodeExport& e) {
  const AttrMap& a = e.attrs();
  KILN_ASSIGN_OR_RETURN(bool max, a.GetBool("max"));
  KILN_ASSIGN_OR_RETURN(bool half_pixel, a.GetBool("half_pixel"));
  std::vector<std::string> inputs = AllInputs(e);
  if (e.in_type(2).dtype != i64) {  // ONNX takes int64 indices only
    const std::string cast = e.Temp("indices");
    SetAttr(e.Add("Cast", {inputs[2]}, {cast}), "to", int64_t{OnnxTypeOf(i64)});
    inputs[2] = cast;
  }
  onnx::NodeProto& n = e.Add("RoiAlign", inputs, {e.out()});
  for (const char* name : {"output_height", "output_width", "sampling_ratio"}) {
    KILN_ASSIGN_OR_RETURN(int64_t v, a.GetInt(name));
    SetAttr(n, name, v);
  }
  KILN_ASSIGN_OR_RETURN(double scale, a.GetFloat("spatial_scale"));
  SetAttr(n, "spatial_scale", scale);
  SetAttr(n, "mode", std::string(max ? "max" : "avg"));
  SetAttr(n, "coordinate_transformation_mode",
          std::string(half_pixel ? "half_pixel" : "output_half_pixel"));
  return OkStatus();
}

Status ExportUnique(NodeExport& e) {
  KILN_ASSIGN_OR_RETURN(bool flatten, e.attrs().GetBool("flatten"));
  KILN_ASSIGN_OR_RETURN(bool sorted, e.attrs().GetBool("sorted"));
  onnx::NodeProto& n = e.Add("Unique", AllInputs(e), AllOutputs(e));
  SetAttr(n, "sorted", int64_t{sorted});
  if (!flatten) {
    KILN_ASSIGN_OR_RETURN(int64_t axis, e.attrs().GetInt("axis"));
    SetAttr(n, "axis", axis);
  }
  return OkStatus();
}

Status ExportTfIdfVectorizer(NodeExport& e) {
  const AttrMap& a = e.attrs();
  onnx::NodeProto& n = e.Add("TfIdfVectorizer", AllInputs(e), {e.out()});
  for (auto [kiln_name, onnx_name] : {std::pair{"min_gram_length", "min_gram_length"},
                                      {"max_gram_length", "max_gram_length"},
                                      {"max_skip_count", "max_skip_count"}}) {
    KILN_ASSIGN_OR_RETURN(int64_t v, a.GetInt(kiln_name));
    SetAttr(n, onnx_name, v);
  }
  for (auto [kiln_name, onnx_name] : {std::pair{"pool", "pool_int64s"},
                                      {"pool_starts", "ngram_counts"},
                                      {"ngram_indexes", "ngram_indexes"}}) {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> v, a.GetInts(kiln_name));
    SetAttr(n, onnx_name, v);
  }
  KILN_ASSIGN_OR_RETURN(std::string mode, a.GetString("mode"));
  SetAttr(n, "mode", mode);
  KILN_ASSIGN_OR_RETURN(std::vector<double> weights, a.GetFloats("weights"));
  if (!weights.empty()) SetAttr(n, "weights", weights);
  return OkStatus();
}

Status ExportTopK(NodeExport& e) {
  KILN_ASSIGN_OR_RETURN(int64_t k, e.attrs().GetInt("k"));
  KILN_ASSIGN_OR_RETURN(int64_t axis, e.attrs().GetInt("axis"));
  KILN_ASSIGN_OR_RETURN(bool largest, e.attrs().GetBool("largest"));
  KILN_ASSIGN_OR_RETURN(bool sorted, e.attrs().GetBool("sorted"));
  onnx::NodeProto& n = e.Add("TopK", {e.in(0), e.Ints({k}, "k")}, {e.out(0), e.out(1)});
  SetAttr(n, "axis", axis);
  SetAttr(n, "largest", int64_t{largest});
  SetAttr(n, "sorted", int64_t{sorted});
  return OkStatus();
}

// Reductions over `axes` (none: all). ReduceSum takes them as an input since opset 13, the others
// as an attribute until opset 18.
OpExporter Reduce(std::string onnx_op) {
  return [onnx_op](NodeExport& e) -> Status {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axes, e.attrs().GetInts("axes"));
    KILN_ASSIGN_OR_RETURN(bool keepdims, e.attrs().GetBool("keepdims"));
    const bool axes_input = onnx_op == "ReduceSum";
    std::vector<std::string> in{e.in(0)};
    if (axes_input && !axes.empty()) in.push_back(e.Ints(axes, "axes"));
    onnx::NodeProto& n = e.Add(onnx_op, in, {e.out()});
    if (!axes_input && !axes.empty()) SetAttr(n, "axes", axes);
    SetAttr(n, "keepdims", int64_t{keepdims});
    return OkStatus();
  };
}

// An op whose kiln attribute `attr` (ints) is an input of the ONNX op.
OpExporter IntsAsInput(std::string onnx_op, std::string attr) {
  return [onnx_op, attr](NodeExport& e) -> Status {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> v, e.attrs().GetInts(attr));
    e.Add(onnx_op, {e.in(0), e.Ints(v, attr)}, {e.out()});
    return OkStatus();
  };
}

// x shaped by, or broadcast to, the run-time shape of input 1.
OpExporter ShapeOfSecond(std::string onnx_op) {
  return [onnx_op](NodeExport& e) {
    std::string shape = e.Temp("shape");
    e.Add("Shape", {e.in(1)}, {shape});
    e.Add(onnx_op, {e.in(0), shape}, {e.out()});
    return OkStatus();
  };
}

Status ExportSqueeze(NodeExport& e) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axes, e.attrs().GetInts("axes"));
  std::vector<std::string> in{e.in(0)};
  if (!axes.empty()) in.push_back(e.Ints(axes, "axes"));
  e.Add("Squeeze", in, {e.out()});
  return OkStatus();
}

Status ExportTranspose(NodeExport& e) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> perm, e.attrs().GetInts("perm"));
  onnx::NodeProto& n = e.Add("Transpose", {e.in(0)}, {e.out()});
  if (!perm.empty()) SetAttr(n, "perm", perm);
  return OkStatus();
}

Status ExportSplit(NodeExport& e) {
  KILN_ASSIGN_OR_RETURN(int64_t axis, e.attrs().GetInt("axis"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, e.attrs().GetInts("sizes"));
  std::vector<std::string> in{e.in(0)};
  if (!sizes.empty()) in.push_back(e.Ints(sizes, "split"));  // else equal parts
  SetAttr(e.Add("Split", in, AllOutputs(e)), "axis", axis);
  return OkStatus();
}

Status ExportSlice(NodeExport& e) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> begins, e.attrs().GetInts("begins"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> ends, e.attrs().GetInts("ends"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> axes, e.attrs().GetInts("axes"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> steps, e.attrs().GetInts("steps"));
  std::vector<std::string> in{e.in(0), e.Ints(begins, "starts"), e.Ints(ends, "ends")};
  if (!axes.empty() || !steps.empty()) {
    if (axes.empty())
      for (size_t i = 0; i < begins.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    in.push_back(e.Ints(axes, "axes"));
  }
  if (!steps.empty()) in.push_back(e.Ints(steps, "steps"));
  e.Add("Slice", in, {e.out()});
  return OkStatus();
}

Status ExportPad(NodeExport& e) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> pads, e.attrs().GetInts("pads"));
  KILN_ASSIGN_OR_RETURN(std::string mode, e.attrs().GetString("mode"));
  KILN_ASSIGN_OR_RETURN(double value, e.attrs().GetFloat("value"));
  std::vector<std::string> in{e.in(0), e.Ints(pads, "pads")};
  if (mode == "constant" && value != 0) in.push_back(e.Scalar(value, e.in_type(0).dtype, "value"));
  SetAttr(e.Add("Pad", in, {e.out()}), "mode", mode);
  return OkStatus();
}

Status ExportOneHot(NodeExport& e) {
  KILN_ASSIGN_OR_RETURN(int64_t depth, e.attrs().GetInt("depth"));
  KILN_ASSIGN_OR_RETURN(double on, e.attrs().GetFloat("on_value"));
  KILN_ASSIGN_OR_RETURN(double off, e.attrs().GetFloat("off_value"));
  KILN_ASSIGN_OR_RETURN(int64_t axis, e.attrs().GetInt("axis"));
  std::string values =
      e.Initializer(Tensor::FromDoubles(e.out_type().dtype, Shape({2}), {off, on}), "values");
  onnx::NodeProto& n =
      e.Add("OneHot", {e.in(0), e.Scalar(static_cast<double>(depth), DType::kI64, "depth"), values},
            {e.out()});
  SetAttr(n, "axis", axis);
  return OkStatus();
}

Status ExportScatterElements(NodeExport& e) {
  KILN_ASSIGN_OR_RETURN(int64_t axis, e.attrs().GetInt("axis"));
  KILN_ASSIGN_OR_RETURN(std::string reduction, e.attrs().GetString("reduction"));
  onnx::NodeProto& n = e.Add("ScatterElements", AllInputs(e), {e.out()});
  SetAttr(n, "axis", axis);
  if (reduction != "none") SetAttr(n, "reduction", reduction);
  return OkStatus();
}

std::map<std::string, OpExporter> BuildTable() {
  std::map<std::string, OpExporter> t;
  for (const char* op :
       {"Abs",   "Acos",  "Add",     "And",  "Asin",  "Atan",    "Ceil",     "Cos",        "Div",
        "Det",   "Equal", "Erf",     "Exp",  "Floor", "Greater", "Identity", "Less",       "Log",
        "Mul",   "Neg",   "NonZero", "Not",  "Or",    "Pow",     "Range",    "Reciprocal", "Relu",
        "Round", "Shape", "Sigmoid", "Sign", "Sin",   "Sqrt",    "Sub",      "Tanh"})
    t[op] = As(op);
  t["StopGradient"] = As("Identity");
  for (const auto& shift : {std::pair{"ShiftLeft", "LEFT"}, {"ShiftRight", "RIGHT"}}) {
    const std::string direction = shift.second;  // (clang 14 captures no structured binding)
    t[shift.first] = [direction](NodeExport& e) {
      SetAttr(e.Add("BitShift", AllInputs(e), {e.out()}), "direction", direction);
      return OkStatus();
    };
  }
  t["CheckNumerics"] = As("Identity");
  t["GreaterEqual"] = As("GreaterOrEqual");
  t["LessEqual"] = As("LessOrEqual");
  t["Maximum"] = As("Max");
  t["Minimum"] = As("Min");
  t["Select"] = As("Where");
  t["GlobalAvgPool"] = As("GlobalAveragePool");
  t["Square"] = [](NodeExport& e) {
    e.Add("Mul", {e.in(0), e.in(0)}, {e.out()});
    return OkStatus();
  };
  t["Rsqrt"] = [](NodeExport& e) {
    std::string root = e.Temp("sqrt");
    e.Add("Sqrt", {e.in(0)}, {root});
    e.Add("Reciprocal", {root}, {e.out()});
    return OkStatus();
  };
  t["Elu"] = WithAlpha("Elu");
  t["LeakyRelu"] = WithAlpha("LeakyRelu");
  t["Gelu"] = ExportGelu;
  t["Cast"] = ExportCast;
  t["Clip"] = ExportClip;
  t["OnesLike"] = Filled(1);
  t["ZerosLike"] = Filled(0);
  t["MatMul"] = ExportMatMul;
  t["BiasAdd"] = ExportBiasAdd;
  t["Conv2D"] = ExportConv;
  t["MaxPool2D"] = Pool("MaxPool");
  t["AvgPool2D"] = Pool("AveragePool");
  t["MaxPoolWithArgmax"] = ExportMaxPoolWithArgmax;
  t["BatchNorm"] = ExportBatchNorm;
  t["LayerNorm"] = ExportLayerNorm;
  t["Softmax"] = WithAxis("Softmax");
  t["LogSoftmax"] = WithAxis("LogSoftmax");
  t["SoftmaxCrossEntropy"] = ExportCrossEntropy;
  t["Dropout"] = ExportDropout;
  t["ArgMax"] = [](NodeExport& e) { return ExportArgReduce(e, "ArgMax"); };
  t["ArgMin"] = [](NodeExport& e) { return ExportArgReduce(e, "ArgMin"); };
  t["TopK"] = ExportTopK;
  t["Unique"] = ExportUnique;
  t["TfIdfVectorizer"] = ExportTfIdfVectorizer;
  t["NonMaxSuppression"] = ExportNonMaxSuppression;
  t["RoiAlign"] = ExportRoiAlign;
  t["Sum"] = Reduce("ReduceSum");
  t["Mean"] = Reduce("ReduceMean");
  t["Max"] = Reduce("ReduceMax");
  t["Min"] = Reduce("ReduceMin");
  t["Prod"] = Reduce("ReduceProd");
  t["Reshape"] = IntsAsInput("Reshape", "shape");
  t["BroadcastTo"] = IntsAsInput("Expand", "shape");
  t["Tile"] = IntsAsInput("Tile", "multiples");
  t["Unsqueeze"] = IntsAsInput("Unsqueeze", "axes");
  t["ReshapeLike"] = ShapeOfSecond("Reshape");
  t["BroadcastLike"] = ShapeOfSecond("Expand");
  t["Squeeze"] = ExportSqueeze;
  t["Flatten"] = WithAxis("Flatten");
  t["Transpose"] = ExportTranspose;
  t["Concat"] = WithAxis("Concat");
  t["Split"] = ExportSplit;
  t["Slice"] = ExportSlice;
  t["Pad"] = ExportPad;
  t["Gather"] = WithAxis("Gather");
  t["GatherElements"] = WithAxis("GatherElements");
  t["ScatterElements"] = ExportScatterElements;
  t["OneHot"] = ExportOneHot;
  AddControlExporters(t);
  return t;
}

}  // namespace

const std::map<std::string, OpExporter>& OpExporters() {
  static const std::map<std::string, OpExporter> table = BuildTable();
  return table;
}

}  // namespace kiln::onnx_export
