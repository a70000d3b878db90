// ONNX import of small hand-made models: inputs, initializers as variables, converters, folding of
// shape computations, and running the imported graph.
#include <catch2/catch.hpp>

#include "ir/onnx/import.h"
#include "ir/ops/state.h"
#include "ir/serialize.h"
#include "runtime/session.h"
#include "tests/ir/onnx_model_builder.h"
#include "tests/testing/temp_path.h"

using namespace kiln;
using kiln::testing::Import;
using kiln::testing::OnnxModel;

namespace {

const Node& OnlyNodeOf(const Graph& g, const std::string& op) {
  const Node* found = nullptr;
  for (const Node& n : g.nodes())
    if (n.op == op) {
      REQUIRE(found == nullptr);
      found = &n;
    }
  REQUIRE(found != nullptr);
  return *found;
}

// y = Relu(2 * x @ W + B) with W [3, 2] and B [2] initializers.
OnnxModel GemmRelu() {
  OnnxModel m;
  m.Input("x", 1, {-1, 3}).Output("y");
  m.Initializer("W", Tensor::FromVector<float>({3, 2}, {1, 0, 0, 1, 1, 1}));
  m.Initializer("B", Tensor::FromVector<float>({2}, {0.5f, -10.0f}));
  auto* gemm = m.Node("Gemm", {"x", "W", "B"}, {"h"}, "fc");
  auto* alpha = gemm->add_attribute();
  alpha->set_name("alpha");
  alpha->set_type(onnx::AttributeProto::FLOAT);
  alpha->set_f(2.0f);
  m.Node("Relu", {"h"}, {"y"});
  return m;
}

}  // namespace

TEST_CASE("ONNX import: inputs become placeholders, float initializers variables", "[onnx]") {
  Graph g = Import(GemmRelu());
  REQUIRE(g.inputs() == std::vector<std::string>{"x"});
  const Node& x = *g.FindNode("x");
  CHECK(x.op == "Placeholder");
  CHECK(x.output_types[0].shape == Shape{-1, 3});
  const Node* w = g.FindNode("W");
  REQUIRE(w != nullptr);
  CHECK(w->op == "Variable");
  CHECK(w->attrs.GetString("initializer").value() == "tensor");
  REQUIRE(g.outputs().size() == 1);
  CHECK(g.outputs()[0].name == "y");

  // x @ W = [4, 5]; 2 * that + B = [8.5, 0]; Relu keeps both.
  Session s(g, {.backend = "reference"});
  auto out = s.Run({{"x", Tensor::FromVector<float>({1, 3}, {1, 2, 3})}}, {"y"});
  INFO((out.ok() ? std::string() : out.error().ToString()));
  REQUIRE(out.ok());
  CHECK(out->at(0).shape() == Shape{1, 2});
  CHECK(out->at(0).GetDouble(0) == Approx(8.5));
  CHECK(out->at(0).GetDouble(1) == Approx(0.0));
}

TEST_CASE("ONNX import: initializers as constants, and the graph survives a file", "[onnx]") {
  Graph g = Import(GemmRelu(), {.initializers_as_constants = true, .input_values = {}});
  CHECK(g.FindNode("W")->op == "Constant");
  std::string path = kiln::testing::TempPath("gemm.kgraph");
  REQUIRE(SaveGraph(Import(GemmRelu()), path).ok());
  Result<Graph> loaded = LoadGraph(path);
  REQUIRE(loaded.ok());
  Session s(*loaded, {.backend = "reference"});
  auto out = s.Run({{"x", Tensor::FromVector<float>({1, 3}, {1, 2, 3})}}, {"y"});
  INFO((out.ok() ? std::string() : out.error().ToString()));
  REQUIRE(out.ok());
  CHECK(out->at(0).GetDouble(0) == Approx(8.5));
}

TEST_CASE("ONNX import: Shape -> Gather -> Unsqueeze -> Concat -> Reshape folds", "[onnx]") {
  OnnxModel m;
  m.Input("x", 1, {2, 3, 4}).Output("y");
  m.Node("Shape", {"x"}, {"s"});
  OnnxModel::AttrTensor(m.Node("Constant", {}, {"zero"}), "value", Tensor::Scalar<int64_t>(0));
  m.Node("Gather", {"s", "zero"}, {"d0"});
  OnnxModel::AttrTensor(m.Node("Constant", {}, {"axes"}), "value",
                        Tensor::FromVector<int64_t>({1}, {0}));
  m.Node("Unsqueeze", {"d0", "axes"}, {"d0v"});
  OnnxModel::AttrTensor(m.Node("Constant", {}, {"minus1"}), "value",
                        Tensor::FromVector<int64_t>({1}, {-1}));
  OnnxModel::AttrInt(m.Node("Concat", {"d0v", "minus1"}, {"shape"}), "axis", 0);
  m.Node("Reshape", {"x", "shape"}, {"y"});
  Graph g = Import(m);
  for (const Node& n : g.nodes()) CHECK(n.op != "Shape");
  const Node& reshape = OnlyNodeOf(g, "Reshape");
  CHECK(reshape.attrs.GetInts("shape").value() == std::vector<int64_t>{2, -1});
  CHECK(reshape.output_types[0].shape == Shape{2, 12});
}

TEST_CASE("ONNX import: a shape from an unknown dim is computed at run time", "[onnx]") {
  OnnxModel m;
  m.Input("x", 1, {-1, 3}).Output("s", 7);
  m.Node("Shape", {"x"}, {"s"});
  Graph g = Import(m);
  Session s(g, {.backend = "reference"});
  auto out = s.Run({{"x", Tensor(f32, Shape{5, 3})}}, {"s"});
  INFO((out.ok() ? std::string() : out.error().ToString()));
  REQUIRE(out.ok());
  CHECK(out->at(0).ToInts() == std::vector<int64_t>{5, 3});
}

TEST_CASE("ONNX import: input values given at import become constants", "[onnx]") {
  OnnxModel m;
  m.Input("x", 1, {6}).Input("shape", 7, {2}).Output("y");
  m.Node("Reshape", {"x", "shape"}, {"y"});
  // Without a value the shape stays a run-time input (ir/onnx/dynamic_shape.cc); given one, it is
  // a constant and the graph input disappears.
  Graph g = Import(m, {.input_values = {{"shape", Tensor::FromVector<int64_t>({2}, {3, 2})}}});
  CHECK(g.inputs() == std::vector<std::string>{"x"});
  CHECK(OnlyNodeOf(g, "Reshape").output_types[0].shape == Shape{3, 2});
}

TEST_CASE("ONNX import: Softmax before opset 13 works on the flattened input", "[onnx]") {
  // axis = 1 of a [1, 2, 2] input: one softmax over all four values.
  OnnxModel m(11);
  m.Input("x", 1, {1, 2, 2}).Output("y");
  m.Node("Softmax", {"x"}, {"y"});
  Session s(Import(m), {.backend = "reference"});
  auto out = s.Run({{"x", Tensor::FromVector<float>({1, 2, 2}, {0, 0, 0, 0})}}, {"y"});
  INFO((out.ok() ? std::string() : out.error().ToString()));
  REQUIRE(out.ok());
  for (int i = 0; i < 4; ++i) CHECK(out->at(0).GetDouble(i) == Approx(0.25));
}

TEST_CASE("ONNX import: a Variable's tensor initializer must match its type", "[onnx]") {
  GraphBuilder g;
  Variable(g, "v", f32, Shape{2},
           Initializer::FromTensor(Tensor::FromVector<float>({3}, {1, 2, 3})));
  Result<Graph> built = g.Build();
  REQUIRE_FALSE(built.ok());
  CHECK_THAT(built.error().message(), Catch::Contains("needs an init_tensor of type f32[2]"));
}

TEST_CASE("ONNX import: cross-entropy of [N, C] logits with ignore_index and weights is one op",
          "[onnx]") {
  // As PyTorch exports F.cross_entropy(logits, labels, weight=w): ignore_index = -100 always.
  OnnxModel m;
  m.Input("logits", 1, {3, 3}).Input("labels", 7, {3}).Output("loss");
  m.Initializer("w", Tensor::FromVector<float>({3}, {1, 2, 3}));
  auto* sce = m.Node("SoftmaxCrossEntropyLoss", {"logits", "labels", "w"}, {"loss"}, "xent");
  OnnxModel::AttrInt(sce, "ignore_index", -100);
  Graph g = Import(m);
  CHECK(OnlyNodeOf(g, "SoftmaxCrossEntropy").attrs.GetString("reduction").value() == "none");
  for (const Node& n : g.nodes()) CHECK((n.op != "OneHot" && n.op != "LogSoftmax"));
  // Rows: labels 2 (weight 3), ignored, 0 (weight 1); -log_softmax([1, 2, 3]) = {2.4076, 1.4076,
  // 0.4076}: (3 * 0.4076 + 1 * 2.4076) / (3 + 1).
  Session s(g, {.backend = "reference"});
  auto out = s.Run({{"logits", Tensor::FromVector<float>({3, 3}, {1, 2, 3, 1, 2, 3, 1, 2, 3})},
                    {"labels", Tensor::FromVector<int64_t>({3}, {2, -100, 0})}},
                   {"loss"});
  INFO((out.ok() ? std::string() : out.error().ToString()));
  REQUIRE(out.ok());
  CHECK(out->at(0).GetDouble(0) == Approx((3 * 0.4076059645 + 2.4076059645) / 4));
}

TEST_CASE("ONNX import: the supported op list", "[onnx]") {
  std::vector<std::string> ops = SupportedOnnxOps();
  for (const char* op : {"Conv", "Gemm", "Reshape", "Where", "Expand", "ConstantOfShape",
                         "BatchNormalization", "Slice", "Split", "SoftmaxCrossEntropyLoss"})
    CHECK(std::find(ops.begin(), ops.end(), op) != ops.end());
}

TEST_CASE("ONNX import: x.view(x.size(0), -1) with an unknown batch dim", "[onnx]") {
  // Shape -> Gather(0) -> Unsqueeze -> Concat([.., -1]) -> Reshape, as PyTorch exports it.
  OnnxModel m;
  m.Input("x", 1, {-1, 2, 3}).Output("y");
  m.Node("Shape", {"x"}, {"s"});
  OnnxModel::AttrTensor(m.Node("Constant", {}, {"zero"}), "value", Tensor::Scalar<int64_t>(0));
  m.Node("Gather", {"s", "zero"}, {"n"});
  OnnxModel::AttrInts(m.Node("Unsqueeze", {"n"}, {"nv"}, "unsq"), "axes", {0});
  m.proto().mutable_opset_import(0)->set_version(12);  // Unsqueeze axes as an attribute
  OnnxModel::AttrTensor(m.Node("Constant", {}, {"minus1"}), "value",
                        Tensor::FromVector<int64_t>({1}, {-1}));
  OnnxModel::AttrInt(m.Node("Concat", {"nv", "minus1"}, {"shape"}), "axis", 0);
  m.Node("Reshape", {"x", "shape"}, {"y"});
  Graph g = Import(m);
  CHECK(OnlyNodeOf(g, "Reshape").attrs.GetInts("shape").value() == std::vector<int64_t>{0, -1});
  Session s(g, {.backend = "reference"});
  auto out = s.Run({{"x", Tensor(f32, Shape{4, 2, 3})}}, {"y"});
  INFO((out.ok() ? std::string() : out.error().ToString()));
  REQUIRE(out.ok());
  CHECK(out->at(0).shape() == Shape{4, 6});
  // Two entries unknown at import cannot both be inferred.
  OnnxModel two;
  two.Input("x", 1, {-1, -1}).Output("y");
  two.Node("Shape", {"x"}, {"s"});
  two.Node("Reshape", {"x", "s"}, {"y"});
  Graph same = Import(two);  // each unknown dim is the input's own: copied
  CHECK(OnlyNodeOf(same, "Reshape").attrs.GetInts("shape").value() == std::vector<int64_t>{0, 0});
}

TEST_CASE("ONNX import: Einsum, explicit and implicit, and what it refuses", "[onnx]") {
  auto einsum = [](const std::string& equation) {
    OnnxModel m;
    m.Input("a", 1, {2, 3}).Input("b", 1, {3, 4}).Output("y");
    OnnxModel::AttrString(m.Node("Einsum", {"a", "b"}, {"y"}), "equation", equation);
    return ImportOnnxFromBytes(m.Bytes(), "", "einsum.onnx");
  };
  Tensor a = Tensor::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = Tensor::FromVector<float>({3, 4}, {1, 0, 0, 1, 0, 1, 0, 1, 0, 0, 1, 1});
  for (const std::string equation :
       {"ij,jk->ik", "ij,jk", "ij, jk -> ik", "...j,jk->...k", "...j,jk", "i...,...k->ik"}) {
    Result<Graph> g = einsum(equation);
    INFO(equation << ": " << g.status().ToString());
    REQUIRE(g.ok());
    Session session(*g, SessionOptions{.backend = "reference"});
    Result<std::vector<Tensor>> y = session.Run({{"a", a}, {"b", b}}, {"y"});
    REQUIRE(y.ok());
    // a @ b: columns 0, 1, 2 pick a's columns; column 3 is their sum.
    CHECK((*y)[0].shape() == Shape{2, 4});
    const std::vector<double> want = {1, 2, 3, 6, 4, 5, 6, 15};
    for (int i = 0; i < 8; ++i) CHECK((*y)[0].GetDouble(i) == want[i]);
  }
  Result<Graph> transposed = einsum("ij,jk->ki");
  REQUIRE(transposed.ok());
  Result<TensorRef> y = transposed->ResolveTensor("y");
  REQUIRE(y.ok());
  CHECK(transposed->TypeOf(*y)->shape == Shape{4, 2});
  for (const auto& [equation, error] : std::vector<std::pair<std::string, std::string>>{
           {"ii,jk->k", "takes a diagonal over dims of lengths 2 and 3"},
           {"i....,jk->k", "unexpected character '.'"},
           {"ij->i", "has 1 operands but the node has 2 inputs"},
           {"ijk,jk->i", "operand 0 has rank 2"},
           {"ij,jk->iz", "output subscript 'z'"},
           {"ij,j1->i", "unexpected character '1'"}}) {
    Result<Graph> g = einsum(equation);
    INFO(equation);
    REQUIRE(!g.ok());
    CHECK_THAT(g.error().message(), Catch::Contains(error));
  }
}

TEST_CASE("ONNX import: Einsum diagonals and broadcast ellipses", "[onnx]") {
  // x [2, 3, 3]: "...ii->...i" is each matrix's diagonal, "bii->b" its trace, "ii...->i..." the
  // same diagonal with the ellipsis last; y [3] broadcasts against x's batch through "...".
  OnnxModel m;
  m.Input("x", 1, {2, 3, 3}).Input("v", 1, {3}).Output("d").Output("t").Output("s");
  OnnxModel::AttrString(m.Node("Einsum", {"x"}, {"d"}), "equation", "...ii->...i");
  OnnxModel::AttrString(m.Node("Einsum", {"x"}, {"t"}), "equation", "bii");
  OnnxModel::AttrString(m.Node("Einsum", {"x", "v"}, {"s"}), "equation", "...ij,...j->...i");
  Graph g = Import(m);
  Session session(g, SessionOptions{.backend = "reference"});
  Tensor x = Tensor::FromVector<float>({2, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9,  //
                                                   0, 1, 0, 1, 0, 1, 2, 2, 2});
  Tensor v = Tensor::FromVector<float>({3}, {1, 0, -1});
  Result<std::vector<Tensor>> y = session.Run({{"x", x}, {"v", v}}, {"d", "t", "s"});
  INFO((y.ok() ? std::string() : y.error().ToString()));
  REQUIRE(y.ok());
  CHECK((*y)[0].ToDoubles() == std::vector<double>{1, 5, 9, 0, 0, 2});
  CHECK((*y)[1].ToDoubles() == std::vector<double>{15, 2});
  CHECK((*y)[2].ToDoubles() == std::vector<double>{-2, -2, -2, 0, 0, 0});
}

TEST_CASE("ONNX import: Gather with known indices that pick one slice or a run becomes a Slice",
          "[onnx]") {
  // x [3, 2, 2]; y0 = x[1] (scalar index: the axis goes), y1 = x[:, -2:] (indices [0, 1]),
  // y2 = x[[2, 0]] (not a run: stays a Gather); z = (Mod of known ints) folds.
  OnnxModel m;
  m.Input("x", 1, {3, 2, 2}).Output("y0").Output("y1").Output("y2");
  OnnxModel::AttrTensor(m.Node("Constant", {}, {"one"}), "value", Tensor::Scalar<int64_t>(1));
  OnnxModel::AttrTensor(m.Node("Constant", {}, {"run"}), "value",
                        Tensor::FromVector<int64_t>({2}, {-2, -1}));
  OnnxModel::AttrTensor(m.Node("Constant", {}, {"pair"}), "value",
                        Tensor::FromVector<int64_t>({2}, {2, 0}));
  m.Node("Gather", {"x", "one"}, {"y0"});
  OnnxModel::AttrInt(m.Node("Gather", {"x", "run"}, {"y1"}), "axis", 1);
  m.Node("Gather", {"x", "pair"}, {"y2"});
  Graph g = Import(m);
  int gathers = 0, slices = 0;
  for (const Node& n : g.nodes()) {
    gathers += n.op == "Gather";
    slices += n.op == "Slice";
  }
  CHECK(gathers == 1);
  CHECK(slices == 2);
  std::vector<float> values(12);
  std::vector<double> expected_y1(12);
  for (int i = 0; i < 12; ++i) values[i] = static_cast<float>(expected_y1[i] = i);
  Session s(g, {.backend = "reference"});
  auto out = s.Run({{"x", Tensor::FromVector<float>({3, 2, 2}, values)}}, {"y0", "y1", "y2"});
  INFO((out.ok() ? std::string() : out.error().ToString()));
  REQUIRE(out.ok());
  CHECK(out->at(0).shape() == Shape{2, 2});
  CHECK(out->at(0).ToDoubles() == std::vector<double>{4, 5, 6, 7});
  CHECK(out->at(1).shape() == Shape{3, 2, 2});
  CHECK(out->at(1).ToDoubles() == expected_y1);
  CHECK(out->at(2).ToDoubles() == std::vector<double>{8, 9, 10, 11, 0, 1, 2, 3});

  OnnxModel bad;
  bad.Input("x", 1, {3, 2}).Output("y");
  OnnxModel::AttrTensor(bad.Node("Constant", {}, {"three"}), "value", Tensor::Scalar<int64_t>(3));
  bad.Node("Gather", {"x", "three"}, {"y"}, "pick");
  Result<Graph> refused = ImportOnnxFromBytes(bad.Bytes(), "", "bad.onnx", {});
  REQUIRE(!refused.ok());
  CHECK_THAT(refused.error().ToString(),
             Catch::Contains("'pick'") && Catch::Contains("index 3 is out of range"));
}

TEST_CASE("ONNX import: Mod of known integers folds, with the divisor's or the dividend's sign",
          "[onnx]") {
  OnnxModel m;
  m.Input("x", 1, {4}).Output("y");
  OnnxModel::AttrTensor(m.Node("Constant", {}, {"a"}), "value",
                        Tensor::FromVector<int64_t>({2}, {-7, 7}));
  OnnxModel::AttrTensor(m.Node("Constant", {}, {"b"}), "value",
                        Tensor::FromVector<int64_t>({2}, {3, -3}));
  m.Node("Mod", {"a", "b"}, {"r"});                                 // [2, -2]
  OnnxModel::AttrInt(m.Node("Mod", {"a", "b"}, {"f"}), "fmod", 1);  // [-1, 1]
  OnnxModel::AttrInt(m.Node("Concat", {"r", "f"}, {"shape"}), "axis", 0);
  m.Node("Abs", {"shape"}, {"dims"});  // [2, 2, 1, 1]
  m.Node("Reshape", {"x", "dims"}, {"y"});
  Graph g = Import(m);
  for (const Node& n : g.nodes()) CHECK(n.op != "Mod");
  CHECK(OnlyNodeOf(g, "Reshape").output_types[0].shape == Shape{2, 2, 1, 1});
}

TEST_CASE("ONNX import: a 1-D QLinearConv with per-channel weight scales and zero points",
          "[onnx]") {
  // x [1, 1, 4] and two output channels of kernel 2: y[o, t] = round((sum_k (x[t+k] - 10) *
  // (w[o, k] - zw[o])) * 0.5 * sw[o] / 0.25) + 3.
  OnnxModel m(10);
  m.Input("x", 2, {1, 1, 4}).Output("y", 2);
  m.Initializer("xs", Tensor::Scalar<float>(0.5f));
  m.Initializer("xz", Tensor::Scalar<uint8_t>(10));
  m.Initializer("w", Tensor::FromVector<uint8_t>({2, 1, 2}, {1, 2, 5, 4}));
  m.Initializer("ws", Tensor::FromVector<float>({2}, {1, 0.5f}));
  m.Initializer("wz", Tensor::FromVector<uint8_t>({2}, {0, 4}));
  m.Initializer("ys", Tensor::Scalar<float>(0.25f));
  m.Initializer("yz", Tensor::Scalar<uint8_t>(3));
  m.Node("QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz"}, {"y"});
  Session session(Import(m), SessionOptions{.backend = "reference"});
  Tensor x = Tensor::FromVector<uint8_t>({1, 1, 4}, {11, 12, 14, 10});
  Result<std::vector<Tensor>> y = session.Run({{"x", x}}, {"y"});
  INFO((y.ok() ? std::string() : y.error().ToString()));
  REQUIRE(y.ok());
  // Channel 0: (1*1 + 2*2, 2*1 + 4*2, 4*1 + 0*2) = (5, 10, 4), times 0.5 * 1 / 0.25 = 2, plus 3.
  // Channel 1: weights (1, 0): (1, 2, 4), times 0.5 * 0.5 / 0.25 = 1, plus 3.
  CHECK((*y)[0].ToInts() == std::vector<int64_t>{13, 23, 11, 4, 5, 7});
}

TEST_CASE("ONNX import: a QLinearConv whose weights do not fit its input is a clear error",
          "[onnx]") {
  // x has 6 channels, w expects 1 (found by fuzz_onnx_import: the refused convolution's result
  // was shaped for the per-channel scales).
  OnnxModel m(10);
  m.Input("x", 2, {1, 6, 7, 7}).Output("y", 2);
  m.Initializer("xs", Tensor::Scalar<float>(0.5f));
  m.Initializer("xz", Tensor::Scalar<uint8_t>(10));
  m.Initializer("w", Tensor::FromVector<uint8_t>({1, 1, 1, 1}, {3}));
  m.Initializer("ws", Tensor::FromVector<float>({1}, {1}));
  m.Initializer("wz", Tensor::FromVector<uint8_t>({1}, {0}));
  m.Initializer("ys", Tensor::Scalar<float>(0.25f));
  m.Initializer("yz", Tensor::Scalar<uint8_t>(3));
  m.Node("QLinearConv", {"x", "xs", "xz", "w", "ws", "wz", "ys", "yz"}, {"y"}, "qconv");
  Result<Graph> g = ImportOnnxFromBytes(m.Bytes(), "", "qconv.onnx");
  REQUIRE_FALSE(g.ok());
  CHECK_THAT(g.error().message(), Catch::Contains("qconv"));
}
