// Mixed precision and numerics checks through a Session, on every backend the build has:
// - the digits CNN and the PyTorch ONNX models in bf16 and fp16 stay within documented tolerances
//   of float32 (max |16-bit - f32| over the outputs, relative to the largest |f32| value);
// - the compiled backend computes the rewritten graph as the reference does;
// - a training step keeps the variables float32 and lowers the loss;
// - check_numerics names the first node that computes an inf or NaN, in fp32 and bf16.
#include "passes/mixed_precision.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "ir/io/npy.h"
#include "ir/onnx/import.h"
#include "ir/ops/linalg.h"
#include "ir/ops/math.h"
#include "models/digits_cnn.h"
#include "runtime/session.h"
#include "tests/testing/backends.h"
#include "tools/lib/training_graph.h"

namespace kiln {
namespace {

// Documented tolerances of 16-bit inference against float32 (see docs/mixed_precision.md):
// relative to the largest |value| of each output. bf16 keeps 8 significant bits, fp16 11.
constexpr double kBf16Tolerance = 0.05;
constexpr double kFp16Tolerance = 0.01;

Graph Require(Result<Graph> graph) {
  INFO((graph.ok() ? "" : graph.error().ToString()));
  REQUIRE(graph.ok());
  return std::move(*graph);
}

Tensor Input(const std::string& path) {
  Result<Tensor> t = ReadNpy(path);
  INFO(path);
  REQUIRE(t.ok());
  return std::move(*t);
}

SessionOptions Options(const std::string& backend, DType compute = f32) {
  SessionOptions options;
  options.backend = backend;
  options.precision.compute = compute;
  return options;
}

std::vector<Tensor> RunOutputs(const Graph& graph, const FeedList& feeds, SessionOptions options) {
  Session session(graph, options);
  INFO((session.status().ok() ? "" : session.status().error().ToString()));
  REQUIRE(session.status().ok());
  std::vector<TensorName> fetches;
  for (const GraphOutput& out : session.graph().outputs()) fetches.emplace_back(out.name);
  Result<std::vector<Tensor>> values = session.Run(feeds, fetches);
  INFO((values.ok() ? "" : values.error().ToString()));
  REQUIRE(values.ok());
  return *values;
}

// max |got - want| / max |want| over all elements of one output.
double RelativeError(const Tensor& got, const Tensor& want) {
  double err = 0, scale = 0;
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    err = std::max(err, std::fabs(got.GetDouble(i) - want.GetDouble(i)));
    scale = std::max(scale, std::fabs(want.GetDouble(i)));
  }
  return scale > 0 ? err / scale : err;
}

void CheckWithinTolerance(const std::string& what, const Graph& graph, const FeedList& feeds) {
  for (const std::string& backend : testing::AvailableBackends()) {
    std::vector<Tensor> f32_out = RunOutputs(graph, feeds, Options(backend));
    for (auto [compute, tolerance] : {std::pair{bf16, kBf16Tolerance}, {f16, kFp16Tolerance}}) {
      std::vector<Tensor> out = RunOutputs(graph, feeds, Options(backend, compute));
      REQUIRE(out.size() == f32_out.size());
      for (size_t i = 0; i < out.size(); ++i) {
        INFO(what << " on " << backend << " in " << PrecisionName(compute) << ", output " << i);
        CHECK(out[i].dtype() == f32_out[i].dtype());  // graph outputs keep their dtypes
        CHECK(out[i].shape() == f32_out[i].shape());
        double err = RelativeError(out[i], f32_out[i]);
        INFO("relative error " << err);
        CHECK(err <= tolerance);
        CHECK(err > 0);  // it really ran in 16 bits
      }
    }
  }
}

TEST_CASE("mixed precision: the digits CNN in bf16 and fp16 stays close to float32",
          "[passes][precision]") {
  GraphBuilder g;
  models::BuildDigitsCnn(g);
  Graph graph = Require(g.Build());
  Tensor images = *Tensor::Create(f32, Shape({8, 1, 8, 8}));
  for (int64_t i = 0; i < images.num_elements(); ++i) images.SetDouble(i, (i * 37 % 17) / 16.0);
  CheckWithinTolerance("digits", graph, {{"images", images}});
}

TEST_CASE("mixed precision: PyTorch's ResNet, transformer and LSTM in bf16 and fp16",
          "[passes][precision]") {
  for (const char* name : {"resnet", "transformer", "lstm"}) {
    const std::string dir = std::string(KILN_TEST_DATA_DIR) + "/onnx/" + name;
    CheckWithinTolerance(name, Require(ImportOnnx(dir + "/model.onnx")),
                         {{"x", Input(dir + "/x.npy")}});
  }
}

TEST_CASE("mixed precision: compiled and reference run the rewritten graph alike",
          "[passes][precision]") {
  GraphBuilder g;
  models::BuildDigitsCnn(g);
  Graph graph = Require(g.Build());
  Tensor images = *Tensor::Create(f32, Shape({4, 1, 8, 8}));
  for (int64_t i = 0; i < images.num_elements(); ++i) images.SetDouble(i, (i % 13) / 12.0);
  std::vector<Tensor> want = RunOutputs(graph, {{"images", images}}, Options("reference", bf16));
  for (const std::string& backend : testing::AvailableBackends()) {
    std::vector<Tensor> got = RunOutputs(graph, {{"images", images}}, Options(backend, bf16));
    for (size_t i = 0; i < got.size(); ++i) {
      INFO(backend << " output " << i);
      CHECK(RelativeError(got[i], want[i]) <= 1e-2);  // one bf16 rounding step at most
    }
  }
}

TEST_CASE("mixed precision: a bf16 training step keeps float32 master weights",
          "[passes][precision]") {
  GraphBuilder g;
  models::BuildDigitsTraining(g);
  optim::Options sgd;
  sgd.lr = 0.1;
  Result<TrainingGraph> t = AddOptimizer(Require(g.Build()), "loss", optim::SGD(sgd));
  REQUIRE(t.ok());
  Tensor images = *Tensor::Create(f32, Shape({8, 1, 8, 8}));
  for (int64_t i = 0; i < images.num_elements(); ++i) images.SetDouble(i, (i * 7 % 11) / 10.0);
  Tensor labels = Tensor::FromVector<int64_t>({8}, {0, 1, 2, 3, 4, 5, 6, 7});
  for (const std::string& backend : testing::AvailableBackends()) {
    Session session(t->graph, Options(backend, bf16));
    REQUIRE(session.status().ok());
    std::vector<double> losses;
    for (int step = 0; step < 5; ++step) {
      Result<std::vector<Tensor>> loss =
          session.Run({{"images", images}, {"labels", labels}}, {t->loss}, {t->update});
      INFO((loss.ok() ? "" : loss.error().ToString()));
      REQUIRE(loss.ok());
      CHECK((*loss)[0].dtype() == f32);
      losses.push_back((*loss)[0].GetDouble(0));
    }
    INFO(backend);
    CHECK(losses.back() < losses.front());
    for (const Node& node : session.graph().nodes())
      if (node.op == "Variable") {  // float ones f32 (master weights), the step counter i64
        INFO(node.name);
        REQUIRE(session.variables().Find(node.name) != nullptr);
        CHECK(session.variables().Find(node.name)->dtype() == node.output_types[0].dtype);
      }
  }
}

TEST_CASE("mixed precision: a float32 product that 16-bit nodes read is narrowed after all",
          "[passes][precision]") {
  // The user asked mm1 for a float32 product (out_dtype f32 over f32 operands); in bf16 its
  // reader (Relu, then MatMul) computes in 16 bits, so mm1 writes bf16 and the graph verifies.
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {2, 3});
  Value w = g.Placeholder("w", f32, {3, 3});
  Value h = MatMul(x, w, false, false, f32).Named("mm1");
  g.Output("y", MatMul(Relu(h), w).Named("mm2"));
  Graph graph = Require(g.Build());
  PrecisionPolicy policy;
  policy.compute = bf16;
  MixedPrecision pass(policy);
  Result<bool> changed = pass.Run(graph);
  INFO((changed.ok() ? "" : changed.error().ToString()));
  REQUIRE(changed.ok());
  CHECK_FALSE(graph.FindNode("mm1")->attrs.Has("out_dtype"));
  CHECK(graph.FindNode("mm1")->output_types[0].dtype == bf16);
  CHECK(graph.FindNode("mm2")->attrs.GetDType("out_dtype").value() == f32);  // the graph output
  Result<bool> again = pass.Run(graph);
  REQUIRE(again.ok());
  CHECK_FALSE(*again);
}

TEST_CASE("mixed precision: a choice for a node that does not exist is refused",
          "[passes][precision][bad-input]") {
  GraphBuilder g;
  models::BuildDigitsCnn(g);
  SessionOptions options;
  options.precision.compute = bf16;
  options.precision.node_lists["no_such_node"] = PrecisionList::kKeep32;
  Session session(Require(g.Build()), options);
  REQUIRE_FALSE(session.status().ok());
  CHECK_THAT(session.status().error().message(),
             Catch::Contains("'no_such_node': the graph has no node of that name"));
}

TEST_CASE("check_numerics names the first node that computes an inf or NaN",
          "[passes][precision]") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, Shape({2, 3}));
  Value w = g.Placeholder("w", f32, Shape({3, 3}));
  Value h = MatMul(x, w);
  Value log = Log(h);  // log(0) = -inf where a row of x is zero
  Value y = Exp(Neg(log));
  g.Output("y", y);
  Graph graph = Require(g.Build());
  Tensor xs = Tensor::FromVector<float>({2, 3}, {1, 2, 3, 0, 0, 0});
  Tensor ws = Tensor::FromVector<float>({3, 3}, {1, 0, 0, 0, 1, 0, 0, 0, 1});
  const std::string log_name = log.node_name();
  for (const std::string& backend : testing::AvailableBackends()) {
    for (DType compute : {f32, bf16}) {
      SessionOptions options = Options(backend, compute);
      options.check_numerics = true;
      Session session(graph, options);
      REQUIRE(session.status().ok());
      Result<std::vector<Tensor>> out = session.Run({{"x", xs}, {"w", ws}}, {"y"});
      INFO(backend << " " << PrecisionName(compute));
      REQUIRE_FALSE(out.ok());
      const std::string& m = out.error().message();
      INFO(m);
      CHECK_THAT(m, Catch::StartsWith("check-numerics: node '" + log_name + "' (Log, built at "));
      CHECK_THAT(m, Catch::Contains("mixed_precision_test.cc:"));
      CHECK_THAT(m,
                 Catch::Contains("output 0 has -inf at element 3 (3 of 6 values are not finite)"));

      // Finite inputs run as without checks.
      Tensor ok_x = Tensor::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
      Result<std::vector<Tensor>> fine = session.Run({{"x", ok_x}, {"w", ws}}, {"y"});
      REQUIRE(fine.ok());
      CHECK((*fine)[0].GetDouble(0) == Approx(1.0).epsilon(1e-2));
    }
  }
}

}  // namespace
}  // namespace kiln
