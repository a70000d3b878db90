// ONNX export (ir/onnx/export.h): every op with an ONNX form survives export -> import with the
// same values on the reference executor (ONNX Runtime checks the same exports of whole models in
// scripts/check_onnx_export.sh); control flow and Deferred nodes round trip; ops without an ONNX
// form are listed all at once; a variable without a value is refused naming it.
#include <catch2/catch.hpp>
#include <functional>

#include "ir/onnx/export.h"
#include "ir/onnx/export_context.h"
#include "ir/onnx/import.h"
#include "ir/op_registry.h"
#include "ir/ops/array.h"
#include "ir/ops/array_elements.h"
#include "ir/ops/array_like.h"
#include "ir/ops/control.h"
#include "ir/ops/linalg.h"
#include "ir/ops/math.h"
#include "ir/ops/max_pool_with_argmax.h"
#include "ir/ops/nn.h"
#include "ir/ops/reduce.h"
#include "ir/ops/state.h"
#include "proto/onnx.pb.h"
#include "runtime/session.h"
#include "tests/ir/onnx_model_builder.h"
#include "tests/testing/differential.h"
#include "tests/testing/eval.h"

using namespace kiln;
using kiln::testing::BuildOrFail;

namespace {

std::vector<Tensor> RunReference(const Graph& g, const FeedList& feeds) {
  std::vector<TensorName> fetches;
  for (const GraphOutput& out : g.outputs()) fetches.push_back(out.name);
  Session s(g, {.backend = "reference"});
  Result<std::vector<Tensor>> out = s.Run(feeds, fetches);
  INFO((out.ok() ? std::string() : out.error().ToString()));
  REQUIRE(out.ok());
  return *out;
}

onnx::ModelProto Exported(const Graph& g, const OnnxExportOptions& options = {}) {
  Result<std::string> bytes = ExportOnnxToBytes(g, options);
  INFO((bytes.ok() ? std::string() : bytes.error().ToString()));
  REQUIRE(bytes.ok());
  onnx::ModelProto model;
  REQUIRE(model.ParseFromString(*bytes));
  return model;
}

// Exports `g`, imports the model again, and checks both give the same outputs for `feeds`.
void CheckRoundTrip(const Graph& g, const FeedList& feeds) {
  const onnx::ModelProto model = Exported(g);
  CHECK(model.opset_import(0).version() == kOnnxExportOpset);
  Result<Graph> back = ImportOnnxFromBytes(model.SerializeAsString(), "", "exported.onnx");
  INFO((back.ok() ? std::string() : back.error().ToString()));
  REQUIRE(back.ok());
  const std::vector<Tensor> want = RunReference(g, feeds);
  const std::vector<Tensor> got = RunReference(*back, feeds);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("output " << g.outputs()[i].name);
    std::string why;
    CHECK(testing::CloseForDType(want[i], got[i], &why));
    INFO(why);
  }
}

// x: f32 [2, 4, 5, 5] with values in about [-2, 2].
Tensor Input() {
  Tensor x = testing::Iota({2, 4, 5, 5});
  for (int64_t i = 0; i < x.num_elements(); ++i)
    x.SetDouble(i, std::sin(static_cast<double>(i) * 0.7) * 2);
  return x;
}

Tensor F32(Shape shape, double scale) {
  Tensor t = testing::Iota(shape);
  for (int64_t i = 0; i < t.num_elements(); ++i)
    t.SetDouble(i, std::cos(static_cast<double>(i) * 1.3) * scale);
  return t;
}

using Case = std::function<std::vector<Value>(GraphBuilder& g, Value x)>;

std::map<std::string, Case> OpCases() {
  std::map<std::string, Case> c;
  auto one = [](std::function<Value(GraphBuilder&, Value)> f) -> Case {
    return [f](GraphBuilder& g, Value x) { return std::vector<Value>{f(g, x)}; };
  };
  auto unary = [&](Value (*f)(At)) { return one([f](GraphBuilder&, Value x) { return f(x); }); };
  for (auto [name, f] :
       std::vector<std::pair<std::string, Value (*)(At)>>{{"Exp", Exp},
                                                          {"Sigmoid", Sigmoid},
                                                          {"Tanh", Tanh},
                                                          {"Erf", Erf},
                                                          {"Sin", Sin},
                                                          {"Cos", Cos},
                                                          {"Atan", Atan},
                                                          {"Floor", Floor},
                                                          {"Ceil", Ceil},
                                                          {"Round", Round},
                                                          {"Neg", Neg},
                                                          {"Abs", Abs},
                                                          {"Square", Square},
                                                          {"Sign", Sign},
                                                          {"Relu", Relu},
                                                          {"Identity", Identity},
                                                          {"StopGradient", StopGradient},
                                                          {"GlobalAvgPool", GlobalAvgPool}})
    c[name] = unary(f);
  c["Log Sqrt Rsqrt"] = [](GraphBuilder&, Value x) {
    Value pos = Abs(x) + 0.5;
    return std::vector<Value>{Log(pos), Sqrt(pos), Rsqrt(pos), Reciprocal(pos)};
  };
  c["Asin Acos"] = [](GraphBuilder&, Value x) {
    return std::vector<Value>{Asin(x * 0.4), Acos(x * 0.4)};
  };
  c["Elu LeakyRelu Gelu"] = [](GraphBuilder&, Value x) {
    return std::vector<Value>{Elu(x, 0.7), LeakyRelu(x, 0.2), Gelu(x), Gelu(x, "tanh")};
  };
  c["Clip Cast"] = [](GraphBuilder&, Value x) {
    Value ints = Cast(x * 3.0, DType::kI32);
    return std::vector<Value>{Clip(x, -0.5, 1.25), Clip(ints, -2, 3), Cast(x, DType::kF64),
                              Clip(ints, -std::numeric_limits<double>::infinity(), 1)};
  };
  c["CheckNumerics"] = one([](GraphBuilder&, Value x) { return CheckNumerics(x, "x"); });
  c["binary"] = [](GraphBuilder& g, Value x) {
    Value y = g.Constant(F32({4, 1, 5}, 1.5));
    return std::vector<Value>{
        Add(x, y),     Sub(x, y),    Mul(x, y), Div(x, Abs(y) + 1.0), Pow(Abs(x) + 1.0, y),
        Maximum(x, y), Minimum(x, y)};
  };
  c["logic Select"] = [](GraphBuilder& g, Value x) {
    Value y = g.Constant(F32({5}, 1));
    Value a = Less(x, y), b = GreaterEqual(x, y * 0.5);
    return std::vector<Value>{Equal(Round(x), Round(y)),
                              LessEqual(x, y),
                              Greater(x, y),
                              And(a, b),
                              Or(a, Not(b)),
                              Select(a, x, y)};
  };
  c["ZerosLike OnesLike"] = [](GraphBuilder&, Value x) {
    return std::vector<Value>{ZerosLike(x), OnesLike(Cast(x, DType::kI64))};
  };
  c["reductions"] = [](GraphBuilder&, Value x) {
    return std::vector<Value>{Sum(x, {1}),           Sum(x),
                              Mean(x, {2, 3}, true), Max(x, {-1}),
                              Min(x, {0}, true),     Prod(x * 0.5, {3}),
                              ArgMax(x, 1, false),   ArgMin(x, -1, true, true)};
  };
  c["MatMul"] = [](GraphBuilder& g, Value x) {
    Value w = g.Constant(F32({5, 3}, 1));
    Value m = Reshape(x, {8, 5, 5});
    Value bf = Cast(m, DType::kBF16);
    return std::vector<Value>{MatMul(m, w), MatMul(m, m, true, false), MatMul(m, m, false, true),
                              MatMul(bf, bf, true, true, DType::kF32),
                              MatMul(Reshape(x, {40, 5}), w)};
  };
  c["BiasAdd"] = [](GraphBuilder& g, Value x) {
    return std::vector<Value>{BiasAdd(x, g.Constant(F32({4}, 1))),
                              BiasAdd(x, g.Constant(F32({5}, 1)), 3),
                              BiasAdd(x, g.Constant(F32({5}, 1)), -2)};
  };
  c["Conv2D"] = [](GraphBuilder& g, Value x) {
    return std::vector<Value>{
        Conv2D(x, g.Constant(F32({6, 4, 3, 3}, 0.5))),
        Conv2D(x, g.Constant(F32({4, 2, 2, 3}, 0.5)),
               {.strides = {2, 1}, .pads = {1, 0, 2, 1}, .dilations = {1, 2}, .groups = 2})};
  };
  c["pooling"] = [](GraphBuilder&, Value x) {
    return std::vector<Value>{
        MaxPool2D(x, {.kernel = {2, 2}}),
        MaxPool2D(x,
                  {.kernel = {3, 2}, .strides = {2, 1}, .pads = {1, 0, 1, 1}, .ceil_mode = true}),
        AvgPool2D(x, {.kernel = {3, 3}, .strides = {2, 2}, .pads = {1, 1, 1, 1}}),
        AvgPool2D(x, {.kernel = {2, 3},
                      .strides = {2, 2},
                      .pads = {1, 1, 0, 1},
                      .ceil_mode = true,
                      .count_include_pad = true})};
  };
  c["MaxPoolWithArgmax"] = [](GraphBuilder&, Value x) {
    MaxPoolWithArgmaxResult plain = MaxPoolWithArgmax(x, {.kernel = {2, 2}, .strides = {2, 2}});
    MaxPoolWithArgmaxResult dilated = MaxPoolWithArgmax(x, {.kernel = {2, 3},
                                                            .strides = {1, 2},
                                                            .dilations = {2, 1},
                                                            .pads = {1, 0, 0, 1},
                                                            .ceil_mode = true});
    return std::vector<Value>{plain.y, plain.argmax, dilated.y, dilated.argmax};
  };
  c["normalization"] = [](GraphBuilder& g, Value x) {
    Value scale = g.Constant(F32({4}, 1)), bias = g.Constant(F32({4}, 0.3));
    Value mean = g.Constant(F32({4}, 0.2)), var = Abs(g.Constant(F32({4}, 1))) + 0.5;
    std::vector<Value> bn = BatchNorm(x, scale, bias, mean, var, 1e-3);
    return std::vector<Value>{
        bn[0], LayerNorm(x, g.Constant(F32({5, 5}, 1)), g.Constant(F32({5, 5}, 0.5)), 2, 1e-4),
        Softmax(x, 1), LogSoftmax(x), Dropout(x, 0.5, 1, false)[0]};
  };
  c["SoftmaxCrossEntropy"] = one([](GraphBuilder& g, Value x) {
    Tensor labels = Tensor::FromVector<int64_t>({10}, {0, 3, 19, 7, 1, 0, 9, 13, 2, 5});
    return SoftmaxCrossEntropy(Reshape(x, {10, 20}), g.Constant(labels));
  });
  c["shape ops"] = [](GraphBuilder& g, Value x) {
    Value like = g.Placeholder("like", f32, {-1, 25});
    return std::vector<Value>{Reshape(x, {0, -1, 5}),
                              Transpose(x, {0, 2, 3, 1}),
                              Transpose(x),
                              Flatten(x, 2),
                              Squeeze(Unsqueeze(x, {0, 3}), {3}),
                              Squeeze(Reshape(x, {2, 1, 100})),
                              ShapeOf(x),
                              BroadcastTo(Sum(x, {1}, true), {2, 3, 5, 5}),
                              ReshapeLike(x, like),
                              BroadcastLike(Sum(x, {0}, true), x)};
  };
  c["Concat Split Slice"] = [](GraphBuilder&, Value x) {
    std::vector<Value> parts = Split(x, 1, {1, 3});
    std::vector<Value> even = SplitEven(x, 3, 5);
    return std::vector<Value>{Concat({x, x * 2.0}, -1),
                              parts[0],
                              parts[1],
                              even[4],
                              Slice(x, {1, -1}, {4, 0}, {1, 3}, {2, -2}),
                              Slice(x, {0}, {std::numeric_limits<int64_t>::max()})};
  };
  c["Pad Tile"] = [](GraphBuilder&, Value x) {
    return std::vector<Value>{Pad(x, {0, 0, 1, 2, 0, 1, 0, 1}),
                              Pad(x, {0, 0, 1, 2, 0, 1, 0, 1}, "constant", 1.5),
                              Pad(x, {0, 0, 2, 1, 0, 0, 1, 2}, "reflect"),
                              Pad(x, {0, 1, 0, 0, 1, 0, -1, 3}, "edge"), Tile(x, {1, 2, 1, 3})};
  };
  c["indexing"] = [](GraphBuilder& g, Value x) {
    Value idx = g.Constant(Tensor::FromVector<int64_t>({3}, {3, 0, -1}));
    Value elems =
        g.Constant(Tensor::FromVector<int64_t>({2, 1, 5, 5}, std::vector<int64_t>(50, 2)));
    Value classes = g.Constant(Tensor::FromVector<int64_t>({4}, {0, 2, -1, 7}));
    return std::vector<Value>{Gather(x, idx, 1),
                              GatherElements(x, elems, 1),
                              ScatterElements(x, elems, Slice(x, {0}, {1}, {1}), 1),
                              ScatterElements(x, elems, Slice(x, {0}, {1}, {1}), 1, "add"),
                              OneHot(classes, 5, f32, 2.0, -1.0, 0),
                              OneHot(classes, 3, DType::kI64)};
  };
  c["Range"] = [](GraphBuilder& g, Value x) {
    return std::vector<Value>{
        Range(g.Scalar(1, DType::kI64), g.Scalar(11, DType::kI64), g.Scalar(3, DType::kI64)),
        Range(g.Scalar(0.5), g.Scalar(-2.0), g.Scalar(-0.75)), Identity(x)};
  };
  return c;
}

}  // namespace

TEST_CASE("Every op with an ONNX form exports and imports back to the same values", "[onnx]") {
  for (const auto& [name, build] : OpCases()) {
    DYNAMIC_SECTION(name) {
      GraphBuilder g;
      Value x = g.Placeholder("x", f32, {2, 4, 5, 5});
      std::vector<Value> ys = build(g, x);
      for (size_t i = 0; i < ys.size(); ++i) g.Output("y" + std::to_string(i), ys[i]);
      const Graph graph = BuildOrFail(g);
      FeedList feeds{{"x", Input()}};
      if (graph.FindNode("like")) feeds.push_back({"like", testing::Iota({8, 25})});
      CheckRoundTrip(graph, feeds);
    }
  }
}

TEST_CASE("Every op either has an ONNX exporter or is one known to have no ONNX form", "[onnx]") {
  // State and backward ops: training graphs only (export an inference graph instead). Sequence
  // and optional ops: kiln's container types do not carry the element types ONNX declares.
  const std::set<std::string> no_onnx_form = {"AllReduce",
                                              "Assign",
                                              "AssignAdd",
                                              "AssignSub",
                                              "AvgPool2DGrad",
                                              "BatchNormGrad",
                                              "ConcatGrad",
                                              "Conv2DBackpropFilter",
                                              "Conv2DBackpropInput",
                                              "DetGrad",
                                              "GatherGrad",
                                              "MaxPool2DGrad",
                                              "NoOp",
                                              "OptionalGetElement",
                                              "OptionalHasElement",
                                              "OptionalNone",
                                              "OptionalOf",
                                              "PadGrad",
                                              "SequenceAt",
                                              "SequenceConstruct",
                                              "SequenceEmpty",
                                              "SequenceErase",
                                              "SequenceInsert",
                                              "SequenceLength",
                                              "SliceGrad",
                                              "SoftmaxCrossEntropyGrad",
                                              "SumLike",
                                              "TileGrad"};
  const std::set<std::string> written_as_graph_values = {"Placeholder", "Constant", "Variable"};
  for (const OpDef* def : OpRegistry::Global().All()) {
    if (!def->plugin.empty()) continue;  // plugins' ops have no ONNX form (listed at export)
    INFO(def->name);
    const bool exported = onnx_export::OpExporters().count(def->name) > 0;
    CHECK(exported + no_onnx_form.count(def->name) + written_as_graph_values.count(def->name) == 1);
  }
}

TEST_CASE("Variables export as initializers holding the given values", "[onnx]") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {-1, 3});
  const Tensor value = F32({3, 2}, 1);
  Value w = Variable(g, "w", f32, {3, 2}, Initializer::FromTensor(value));
  g.Output("y", MatMul(x, w));
  const Graph graph = BuildOrFail(g);

  Result<std::string> missing = ExportOnnxToBytes(graph);
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(missing.error().message(), Catch::Contains("'w'") && Catch::Contains("no value"));

  const onnx::ModelProto model = Exported(graph, {.variable_values = {{"w", value}}});
  REQUIRE(model.graph().initializer_size() == 1);
  CHECK(model.graph().initializer(0).name() == "w");
  REQUIRE(model.graph().input_size() == 1);
  const auto& dims = model.graph().input(0).type().tensor_type().shape().dim();
  CHECK(dims[0].dim_param() == "x_d0");  // an unknown dim is symbolic
  CHECK(dims[1].dim_value() == 3);
  Result<Graph> back = ImportOnnxFromBytes(model.SerializeAsString(), "", "exported.onnx");
  REQUIRE(back.ok());
  const Tensor in = F32({4, 3}, 1);
  std::string why;
  CHECK(testing::CloseForDType(RunReference(graph, {{"x", in}})[0],
                               RunReference(*back, {{"x", in}})[0], &why));

  Result<std::string> wrong =
      ExportOnnxToBytes(graph, {.variable_values = {{"w", F32({2, 3}, 1)}}});
  REQUIRE_FALSE(wrong.ok());
  CHECK_THAT(wrong.error().message(), Catch::Contains("f32[3, 2]"));
}

TEST_CASE("Ops without an ONNX form are listed all at once", "[onnx]") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {2, 3});
  Value v = Variable(g, "v", f32, {2, 3}, Initializer::Zeros());
  Value d = Dropout(x, 0.5, 1, true)[0];
  g.Output("a", Assign(v, x));
  g.Output("b", AssignAdd(v, x));
  g.Output("c", SumLike(x, Sum(x, {0}, true)));
  g.Output("d", d);
  const Graph graph = BuildOrFail(g);
  Result<std::string> bytes =
      ExportOnnxToBytes(graph, {.variable_values = {{"v", F32({2, 3}, 1)}}});
  REQUIRE_FALSE(bytes.ok());
  CHECK(bytes.error().code() == ErrorCode::kUnimplemented);
  const std::string& m = bytes.error().message();
  CHECK_THAT(m, Catch::Contains("4 op types") && Catch::Contains("Assign (") &&
                    Catch::Contains("AssignAdd (") && Catch::Contains("SumLike (") &&
                    Catch::Contains("Dropout (") && Catch::Contains("training mode"));
}

TEST_CASE("Fetches choose what is exported and name the outputs", "[onnx]") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {2, 3});
  Value h = Relu(x).Named("h");
  g.Output("y", Exp(h));
  const Graph graph = BuildOrFail(g);
  const onnx::ModelProto model = Exported(graph, {.fetches = {"h", "y"}});
  REQUIRE(model.graph().output_size() == 2);
  CHECK(model.graph().output(0).name() == "h");
  CHECK(model.graph().output(1).name() == "y");
  Result<std::string> twice = ExportOnnxToBytes(graph, {.fetches = {"y", "y"}});
  CHECK_FALSE(twice.ok());
  Result<std::string> unknown = ExportOnnxToBytes(graph, {.fetches = {"nothing"}});
  CHECK_FALSE(unknown.ok());
}

TEST_CASE("If and While export as ONNX If and Loop", "[onnx][control]") {
  GraphBuilder g;
  Value pred = g.Placeholder("pred", DType::kBool, {});
  Value n = g.Placeholder("n", DType::kI64, {});
  Value x = g.Placeholder("x", f32, {3});
  std::vector<Value> chosen = Cond(
      pred, {x}, [](const std::vector<Value>& a) { return std::vector<Value>{Exp(a[0]) * 2.0}; },
      [](const std::vector<Value>& a) { return std::vector<Value>{a[0] + 1.0}; });
  auto below_n = [](const std::vector<Value>& v) { return Less(v[0], v[2]); };
  auto step = [](const std::vector<Value>& v) {
    return std::vector<Value>{v[0] + 1.0, Tanh(v[1]) * 2.0, v[2]};
  };
  std::vector<Value> loop = WhileLoop({g.Scalar(0, DType::kI64), x, n}, below_n, step);
  std::vector<Value> capped = WhileLoop({g.Scalar(0, DType::kI64), x, n}, below_n, step, 2);
  // Scan outputs: a row per iteration, and a fixed 4 rows (zero where no iteration wrote).
  const std::vector<Value> vars = {g.Scalar(0, DType::kI64), x, n};
  const std::vector<TensorType> types = {vars[0].type(), vars[1].type(), vars[2].type()};
  auto cond =
      BuildBody(types, [&](const std::vector<Value>& v) { return std::vector<Value>{below_n(v)}; });
  auto stacking = BuildBody(types, [&](const std::vector<Value>& v) {
    std::vector<Value> next = step(v);
    next.push_back(Sin(v[1]));
    return next;
  });
  REQUIRE(cond.ok());
  REQUIRE(stacking.ok());
  std::vector<Value> scanned =
      While(vars, *cond, *stacking, -1, SourceLocation::current(), "", {.outputs = 1});
  std::vector<Value> scanned4 =
      While(vars, *cond, *stacking, 4, SourceLocation::current(), "", {.outputs = 1, .rows = 4});
  g.Output("chosen", chosen[0]);
  g.Output("count", loop[0]);
  g.Output("looped", loop[1]);
  g.Output("capped", capped[1]);
  g.Output("scanned", scanned[3]);
  g.Output("scanned4", scanned4[3]);
  const Graph graph = BuildOrFail(g);
  const onnx::ModelProto model = Exported(graph);
  std::set<std::string> ops;
  for (const onnx::NodeProto& node : model.graph().node()) ops.insert(node.op_type());
  CHECK(ops.count("If") == 1);
  CHECK(ops.count("Loop") == 1);
  const Tensor in = F32({3}, 1);
  for (bool p : {true, false})
    for (int64_t trips : {0, 1, 5})
      CheckRoundTrip(
          graph,
          {{"pred", Tensor::Scalar<bool>(p)}, {"n", Tensor::Scalar<int64_t>(trips)}, {"x", in}});
}

TEST_CASE("A Deferred ONNX node exports as the node it holds", "[onnx]") {
  testing::OnnxModel m;
  m.Input("x", 1, {3, 5}).Input("starts", 7, {1}).Input("ends", 7, {1}).Output("y");
  m.Initializer("axes", Tensor::FromVector<int64_t>({1}, {1}));
  m.Node("Slice", {"x", "starts", "ends", "axes"}, {"y"}, "slice");
  const Graph graph = testing::Import(m);
  const onnx::ModelProto model = Exported(graph);
  REQUIRE(model.graph().node_size() == 1);
  CHECK(model.graph().node(0).op_type() == "Slice");
  CheckRoundTrip(graph, {{"x", testing::Iota({3, 5})},
                         {"starts", Tensor::FromVector<int64_t>({1}, {1})},
                         {"ends", Tensor::FromVector<int64_t>({1}, {4})}});
}
