// Every pass, alone and as the default pipeline, on real models: the digits CNN (inference, and
// training with Adam: gradients, BatchNorm statistics and variable updates) and a transformer
// encoder layer exported from PyTorch to ONNX. The optimized graph must compute the same values
// on the reference backend from the same random inputs (outputs, and for training the variables
// after one step), keep every stateful node, placeholder and NoOp and every graph output, and be
// a fixed point: running the same passes again changes nothing.
#include <catch2/catch.hpp>
#include <random>

#include "ir/io/npy.h"
#include "ir/onnx/import.h"
#include "ir/op_registry.h"
#include "ir/ops/array.h"
#include "ir/ops/math.h"
#include "ir/ops/state.h"
#include "ir/serialize.h"
#include "models/digits_cnn.h"
#include "passes/pass_manager.h"
#include "runtime/session.h"
#include "tools/lib/constant_evaluator.h"
#include "tools/lib/training_graph.h"

using namespace kiln;

namespace {

struct Model {
  std::string name;
  Graph graph;
  FeedList feeds;
  std::string train;  // the update target, for training graphs
};

Tensor RandomNormal(Shape shape, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> normal;
  std::vector<double> values(shape.NumElements());
  for (double& v : values) v = normal(gen);
  return Tensor::FromDoubles(f32, std::move(shape), values);
}

Graph Require(Result<Graph> graph) {
  INFO((graph.ok() ? "" : graph.error().ToString()));
  REQUIRE(graph.ok());
  return std::move(*graph);
}

Model DigitsInference() {
  GraphBuilder g;
  models::BuildDigitsCnn(g);
  return {"digits", Require(g.Build()), {{"images", RandomNormal({4, 1, 8, 8}, 1)}}, ""};
}

Model DigitsTraining() {
  GraphBuilder g;
  models::BuildDigitsTraining(g);
  optim::Options adam;
  adam.lr = 1e-3;
  Result<TrainingGraph> t = AddOptimizer(Require(g.Build()), "loss", optim::Adam(adam));
  INFO((t.ok() ? "" : t.error().ToString()));
  REQUIRE(t.ok());
  Tensor labels = Tensor::FromVector<int64_t>({4}, {3, 0, 9, 3});
  return {"digits training",
          std::move(t->graph),
          {{"images", RandomNormal({4, 1, 8, 8}, 2)}, {"labels", labels}},
          t->update};
}

// A PyTorch export from tests/data/onnx/<name>, fed the input it was exported with.
Model OnnxModel(const std::string& name) {
  std::string dir = std::string(KILN_TEST_DATA_DIR) + "/onnx/" + name;
  Result<Tensor> x = ReadNpy(dir + "/x.npy");
  REQUIRE(x.ok());
  return {"onnx " + name, Require(ImportOnnx(dir + "/model.onnx")), {{"x", *x}}, ""};
}

// The graph outputs (and, after a training step, every variable) on the reference backend.
std::vector<Tensor> Evaluate(const Model& m, const Graph& graph) {
  Session session(graph, {.backend = "reference"});
  std::vector<TensorName> fetches;
  for (const GraphOutput& out : graph.outputs()) fetches.push_back(out.name);
  std::vector<TensorName> targets;
  if (!m.train.empty()) targets.push_back(m.train);
  Result<std::vector<Tensor>> values = session.Run(m.feeds, fetches, targets);
  INFO(m.name << ": " << (values.ok() ? "" : values.error().ToString()));
  REQUIRE(values.ok());
  if (m.train.empty()) return *values;
  std::vector<TensorName> variables;
  for (const Node& node : m.graph.nodes())
    if (node.op == "Variable") variables.push_back(node.name);
  Result<std::vector<Tensor>> updated = session.Run({}, variables);
  REQUIRE(updated.ok());
  values->insert(values->end(), updated->begin(), updated->end());
  return *values;
}

// Same dtypes, shapes and values (-0 equals 0: x + 0 -> x may flip the sign of a zero).
void CheckSameValues(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("value " << i << ": " << want[i].Summary(0));
    REQUIRE(got[i].dtype() == want[i].dtype());
    REQUIRE(got[i].shape() == want[i].shape());
    int64_t mismatches = 0;
    for (int64_t k = 0; k < want[i].num_elements(); ++k)
      mismatches += got[i].GetDouble(k) != want[i].GetDouble(k);
    CHECK(mismatches == 0);
  }
}

// Pinned nodes (stateful ops, placeholders, NoOps) keep their names and ops; outputs their names.
void CheckKept(const Graph& original, const Graph& optimized) {
  for (const Node& node : original.nodes()) {
    const OpDef* def = OpRegistry::Global().Find(node.op);
    if (!def->stateful && node.op != "Placeholder" && node.op != "NoOp") continue;
    INFO(node.Describe());
    const Node* kept = optimized.FindNode(node.name);
    REQUIRE(kept != nullptr);
    CHECK(kept->op == node.op);
    CHECK(kept->inputs.size() == node.inputs.size());
  }
  REQUIRE(optimized.outputs().size() == original.outputs().size());
  for (size_t i = 0; i < original.outputs().size(); ++i)
    CHECK(optimized.outputs()[i].name == original.outputs()[i].name);
  CHECK(optimized.inputs() == original.inputs());
  CHECK(optimized.update_ops() == original.update_ops());
}

void CheckPasses(const Model& m, const std::vector<std::string>& passes) {
  std::string names;
  for (const std::string& p : passes) names += p + " ";
  INFO(m.name << ", passes " << names);
  Graph optimized = m.graph;
  Result<std::vector<PassRun>> runs = RunPasses(optimized, passes, ReferencePassOptions());
  INFO((runs.ok() ? "" : runs.error().ToString()));
  REQUIRE(runs.ok());
  CheckKept(m.graph, optimized);
  CheckSameValues(Evaluate(m, optimized), Evaluate(m, m.graph));
  // A fixed point: the same passes again change nothing.
  std::string text = GraphToText(optimized);
  Result<std::vector<PassRun>> again = RunPasses(optimized, passes, ReferencePassOptions());
  REQUIRE(again.ok());
  for (const PassRun& run : *again) {
    INFO("second run of " << run.pass);
    CHECK_FALSE(run.changed);
  }
  CHECK(GraphToText(optimized) == text);
}

// A random graph on x f32[2, 3] with every pattern the passes look for: repeated subexpressions
// (each op is drawn from a few inputs, so many repeat), constants 0, 1 and 2 (arithmetic
// identities, foldable constant expressions), Identity, Transpose and Reshape round trips, Cast
// round trips, and dead nodes. No division or logarithm: values stay finite.
Model RandomGraph(uint32_t seed) {
  std::mt19937 gen(seed);
  auto pick = [&gen](int n) { return static_cast<int>(gen() % n); };
  GraphBuilder g;
  std::vector<Value> pool = {g.Placeholder("x", f32, {2, 3})};
  for (double c : {0.0, 1.0, 2.0}) pool.push_back(g.Scalar(c));
  for (int i = 0; i < 40; ++i) {
    Value a = pool[pick(pool.size())], b = pool[pick(pool.size())];
    Value full = b + pool[0];  // [2, 3] even when a and b are scalars
    Value y;
    switch (pick(9)) {
      case 0:
        y = a + b;
        break;
      case 1:
        y = a - b;
        break;
      case 2:
        y = a * b;
        break;
      case 3:
        y = Relu(a);
        break;
      case 4:
        y = Identity(a);
        break;
      case 5:
        y = Cast(Cast(a, f64), f32);
        break;
      case 6:
        y = Maximum(a, b);
        break;
      case 7:
        y = a + Transpose(Transpose(full, {1, 0}), {1, 0});
        break;
      default:
        y = a * Reshape(Reshape(full, {3, 2}), {2, 3});
        break;
    }
    pool.push_back(y);
  }
  // Outputs of full shape (a scalar-only expression broadcasts against x first).
  for (int k = 0; k < 4; ++k) g.Output("y" + std::to_string(k), pool[4 + pick(40)] + pool[0]);
  return {"random graph " + std::to_string(seed),
          Require(g.Build()),
          {{"x", RandomNormal({2, 3}, seed)}},
          ""};
}

void CheckEveryPass(const Model& m) {
  for (const PassInfo& pass : AvailablePasses())
    if (pass.exact) CheckPasses(m, {pass.name});
  CheckPasses(m, DefaultPipeline());
}

}  // namespace

TEST_CASE("passes: random graphs compute the same after every pass", "[passes]") {
  for (uint32_t seed = 1; seed <= 20; ++seed) CheckEveryPass(RandomGraph(seed));
}

TEST_CASE("passes: the digits CNN computes the same after every pass", "[passes]") {
  // Built cleanly with the builder, it has nothing to simplify: the passes must leave it as is.
  Model m = DigitsInference();
  CheckEveryPass(m);
  Graph optimized = m.graph;
  REQUIRE(RunPasses(optimized, DefaultPipeline(), ReferencePassOptions()).ok());
  CHECK(GraphToText(optimized) == GraphToText(m.graph));
}

TEST_CASE("passes: a digits training step (Adam) is the same after every pass", "[passes]") {
  Model m = DigitsTraining();
  CheckEveryPass(m);
  // The gradient graph has work for the pipeline (368 nodes -> 246 when this was written).
  Graph optimized = m.graph;
  REQUIRE(RunPasses(optimized, DefaultPipeline(), ReferencePassOptions()).ok());
  CHECK(optimized.nodes().size() < m.graph.nodes().size());
}

TEST_CASE("passes: ONNX models compute the same after every pass", "[passes]") {
  // The transformer layer's Shape/Gather/Concat chains and repeated subgraphs shrink it from 207
  // to 121 nodes; the LSTM's per-step slices merge (373 to 326).
  for (const char* name : {"transformer", "lstm"}) {
    Model m = OnnxModel(name);
    CheckEveryPass(m);
    Graph optimized = m.graph;
    REQUIRE(RunPasses(optimized, DefaultPipeline(), ReferencePassOptions()).ok());
    CHECK(optimized.nodes().size() < m.graph.nodes().size());
  }
}
