// ONNX If, Loop and Scan (ir/onnx/convert_control.cc) on hand-made models with hand-checked
// values: an If on a data-dependent condition whose branches read the enclosing graph, a Loop with
// a fed trip count and a scan output, a while-style Loop that stops on a computed condition, and a
// recurrent Scan over fed sequences of two lengths, forwards and backwards.
#include <catch2/catch.hpp>

#include "ir/onnx/import.h"
#include "runtime/session.h"
#include "tests/ir/onnx_model_builder.h"
#include "tests/testing/backends.h"

using namespace kiln;
using kiln::testing::Import;
using kiln::testing::OnnxModel;

namespace {

constexpr int kFloat = 1, kInt64 = 7, kBool = 9;

Tensor Vec(std::vector<float> v) {
  const auto n = static_cast<int64_t>(v.size());
  return Tensor::FromVector<float>(Shape{n}, v);
}

std::vector<Tensor> RunOn(const Graph& g, const std::string& backend, const FeedList& feeds,
                          const std::vector<TensorName>& fetches) {
  Session s(g, {.backend = backend});
  Result<std::vector<Tensor>> out = s.Run(feeds, fetches);
  INFO(backend << ": " << (out.ok() ? std::string() : out.error().ToString()));
  REQUIRE(out.ok());
  return *out;
}

}  // namespace

TEST_CASE("ONNX If on a data-dependent condition reads the enclosing graph", "[onnx][control]") {
  // y = sum(x) > 0 ? x * 2 : x - 1, the branches reading x from the enclosing graph.
  OnnxModel then_branch;
  then_branch.Initializer("two", Vec({2}));
  then_branch.Node("Mul", {"x", "two"}, {"then_y"});
  then_branch.Output("then_y", kFloat, {3});
  OnnxModel else_branch;
  else_branch.Initializer("one", Vec({1}));
  else_branch.Node("Sub", {"x", "one"}, {"else_y"});
  else_branch.Output("else_y", kFloat, {3});
  OnnxModel m;
  m.Input("x", kFloat, {3}).Output("y", kFloat, {3});
  OnnxModel::AttrInt(m.Node("ReduceSum", {"x"}, {"s"}), "keepdims", 0);
  m.Initializer("zero", Vec({0}));
  m.Node("Greater", {"s", "zero"}, {"positive"});
  auto* branch = m.Node("If", {"positive"}, {"y"}, "choose");
  OnnxModel::AttrGraph(branch, "then_branch", then_branch);
  OnnxModel::AttrGraph(branch, "else_branch", else_branch);
  const Graph g = Import(m);
  for (const std::string& backend : testing::AvailableBackends()) {
    CHECK(RunOn(g, backend, {{"x", Vec({1, 2, -1})}}, {"y"})[0].ToDoubles() ==
          std::vector<double>{2, 4, -2});
    CHECK(RunOn(g, backend, {{"x", Vec({1, -2, -1})}}, {"y"})[0].ToDoubles() ==
          std::vector<double>{0, -3, -2});
  }
}

TEST_CASE("ONNX Loop with a fed trip count carries values and stacks scan outputs",
          "[onnx][control]") {
  // for i in range(M): v = v + x; scan += [v * i]
  OnnxModel body;
  body.Input("i", kInt64, {}).Input("c", kBool, {}).Input("v_in", kFloat, {2});
  body.Node("Add", {"v_in", "x"}, {"v_out"});
  OnnxModel::AttrInt(body.Node("Cast", {"i"}, {"i_float"}), "to", kFloat);
  body.Node("Mul", {"v_out", "i_float"}, {"scan"});
  body.Node("Identity", {"c"}, {"c_out"});
  body.Output("c_out", kBool, {}).Output("v_out", kFloat, {2}).Output("scan", kFloat, {2});
  OnnxModel m;
  m.Input("M", kInt64, {}).Input("x", kFloat, {2}).Input("v0", kFloat, {2});
  m.Output("v", kFloat, {2}).Output("scans", kFloat, {-1, 2});
  OnnxModel::AttrGraph(m.Node("Loop", {"M", "", "v0"}, {"v", "scans"}, "loop"), "body", body);
  const Graph g = Import(m);
  for (const std::string& backend : testing::AvailableBackends()) {
    INFO(backend);
    std::vector<Tensor> out = RunOn(
        g, backend, {{"M", Tensor::Scalar<int64_t>(3)}, {"x", Vec({1, 10})}, {"v0", Vec({0, 0})}},
        {"v", "scans"});
    CHECK(out[0].ToDoubles() == std::vector<double>{3, 30});
    CHECK(out[1].shape() == Shape{3, 2});
    CHECK(out[1].ToDoubles() == std::vector<double>{0, 0, 2, 20, 6, 60});
    out = RunOn(g, backend,
                {{"M", Tensor::Scalar<int64_t>(0)}, {"x", Vec({1, 10})}, {"v0", Vec({5, 5})}},
                {"v", "scans"});
    CHECK(out[0].ToDoubles() == std::vector<double>{5, 5});
    CHECK(out[1].shape() == Shape{0, 2});
  }
}

TEST_CASE("ONNX while-style Loop stops on a condition its body computes", "[onnx][control]") {
  // v = v0; while (v < limit): v = v * 2 (no trip count; the body computes the condition).
  OnnxModel body;
  body.Input("i", kInt64, {}).Input("c", kBool, {}).Input("v_in", kFloat, {});
  body.Initializer("two", Tensor::Scalar<float>(2));
  body.Node("Mul", {"v_in", "two"}, {"v_out"});
  body.Node("Less", {"v_out", "limit"}, {"c_out"});
  body.Output("c_out", kBool, {}).Output("v_out", kFloat, {});
  OnnxModel m;
  m.Input("v0", kFloat, {}).Input("limit", kFloat, {}).Output("v", kFloat, {});
  m.Node("Less", {"v0", "limit"}, {"go"});
  OnnxModel::AttrGraph(m.Node("Loop", {"", "go", "v0"}, {"v"}, "loop"), "body", body);
  const Graph g = Import(m);
  for (const std::string& backend : testing::AvailableBackends()) {
    INFO(backend);
    auto run = [&](float v0, float limit) {
      return RunOn(g, backend,
                   {{"v0", Tensor::Scalar<float>(v0)}, {"limit", Tensor::Scalar<float>(limit)}},
                   {"v"})[0]
          .GetDouble(0);
    };
    CHECK(run(1, 100) == 128);
    CHECK(run(3, 5) == 6);
    CHECK(run(7, 5) == 7);  // the condition is false before the first iteration
  }
}

TEST_CASE("ONNX subgraphs with an unsupported op are refused with the op's name",
          "[onnx][control]") {
  OnnxModel branch;
  branch.Node("NoSuchOp", {"x"}, {"y1"});
  branch.Output("y1", kFloat, {2});
  OnnxModel m;
  m.Input("c", kBool, {}).Input("x", kFloat, {2}).Output("y", kFloat, {2});
  auto* node = m.Node("If", {"c"}, {"y"});
  OnnxModel::AttrGraph(node, "then_branch", branch);
  OnnxModel::AttrGraph(node, "else_branch", branch);
  Result<Graph> g = ImportOnnxFromBytes(m.Bytes(), "", "test.onnx");
  REQUIRE_FALSE(g.ok());
  CHECK_THAT(g.error().ToString(), Catch::Contains("NoSuchOp"));
}

TEST_CASE("ONNX Scan over fed sequences of two lengths, forwards and backwards",
          "[onnx][control]") {
  // state s = s + x[:, t], output s: the running sums along axis 1 of x [2, T].
  for (bool backwards : {false, true}) {
    INFO((backwards ? "backwards" : "forwards"));
    OnnxModel body;
    body.Input("s_in", kFloat, {2}).Input("x_t", kFloat, {2});
    body.Node("Add", {"s_in", "x_t"}, {"s_out"});
    body.Node("Identity", {"s_out"}, {"y_t"});
    body.Output("s_out", kFloat, {2}).Output("y_t", kFloat, {2});
    OnnxModel m(11);
    m.Input("s0", kFloat, {2}).Input("x", kFloat, {2, -1});
    m.Output("s", kFloat, {2}).Output("y", kFloat, {2, -1});
    auto* scan = m.Node("Scan", {"s0", "x"}, {"s", "y"}, "scan");
    OnnxModel::AttrGraph(scan, "body", body);
    OnnxModel::AttrInt(scan, "num_scan_inputs", 1);
    OnnxModel::AttrInts(scan, "scan_input_axes", {1});
    OnnxModel::AttrInts(scan, "scan_output_axes", {1});
    if (backwards) {
      OnnxModel::AttrInts(scan, "scan_input_directions", {1});
      OnnxModel::AttrInts(scan, "scan_output_directions", {1});
    }
    const Graph g = Import(m);
    for (const std::string& backend : testing::AvailableBackends()) {
      INFO(backend);
      for (int64_t length : {3, 5}) {
        Tensor x(f32, Shape{2, length});
        for (int64_t i = 0; i < x.num_elements(); ++i) x.SetDouble(i, static_cast<double>(i + 1));
        std::vector<Tensor> out = RunOn(g, backend, {{"s0", Vec({0, 100})}, {"x", x}}, {"s", "y"});
        REQUIRE(out[1].shape() == Shape{2, length});
        // Row r of y: prefix sums (forwards) or suffix sums (backwards), from s0[r].
        for (int64_t r = 0; r < 2; ++r) {
          double total = r == 0 ? 0 : 100;
          for (int64_t k = 0; k < length; ++k) total += x.GetDouble(r * length + k);
          CHECK(out[0].GetDouble(r) == total);
          double running = r == 0 ? 0 : 100;
          for (int64_t s = 0; s < length; ++s) {
            const int64_t p = backwards ? length - 1 - s : s;
            running += x.GetDouble(r * length + p);
            CHECK(out[1].GetDouble(r * length + p) == running);
          }
        }
      }
    }
  }
}

TEST_CASE("ONNX Scan of opset 8: a batch axis on every state, input and output",
          "[onnx][control]") {
  // Per batch entry b: s = s + x[b, t] along t (reversed with directions [1]), y[b, t] = s.
  OnnxModel body;
  body.Input("s_in", kFloat, {2}).Input("x_t", kFloat, {2});
  body.Node("Add", {"s_in", "x_t"}, {"s_out"});
  body.Node("Identity", {"s_out"}, {"y_t"});
  body.Output("s_out", kFloat, {2}).Output("y_t", kFloat, {2});
  for (bool backwards : {false, true}) {
    INFO((backwards ? "backwards" : "forwards"));
    OnnxModel m(8);
    m.Input("s0", kFloat, {2, 2}).Input("x", kFloat, {2, 3, 2});
    m.Output("s", kFloat, {2, 2}).Output("y", kFloat, {2, 3, 2});
    auto* scan = m.Node("Scan", {"", "s0", "x"}, {"s", "y"}, "scan");
    OnnxModel::AttrGraph(scan, "body", body);
    OnnxModel::AttrInt(scan, "num_scan_inputs", 1);
    if (backwards) OnnxModel::AttrInts(scan, "directions", {1});
    const Graph g = Import(m);
    Tensor x(f32, Shape{2, 3, 2});
    for (int64_t i = 0; i < x.num_elements(); ++i) x.SetDouble(i, static_cast<double>(i + 1));
    Tensor s0 = Tensor::FromVector<float>({2, 2}, {0, 0, 100, 100});
    for (const std::string& backend : testing::AvailableBackends()) {
      INFO(backend);
      std::vector<Tensor> out = RunOn(g, backend, {{"s0", s0}, {"x", x}}, {"s", "y"});
      REQUIRE(out[1].shape() == Shape{2, 3, 2});
      for (int64_t b = 0; b < 2; ++b)
        for (int64_t c = 0; c < 2; ++c) {
          double running = s0.GetDouble(b * 2 + c);
          for (int64_t step = 0; step < 3; ++step) {
            const int64_t t = backwards ? 2 - step : step;
            running += x.GetDouble((b * 3 + t) * 2 + c);
            CHECK(out[1].GetDouble((b * 3 + step) * 2 + c) == running);  // in iteration order
          }
          CHECK(out[0].GetDouble(b * 2 + c) == running);
        }
    }
  }
}
