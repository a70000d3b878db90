// ONNX nodes whose conversion waits for values fed at run time (ir/onnx/deferred_node.h): a Slice
// with fed bounds, a ReduceSum with fed axes, a Resize with fed scales import as Deferred nodes,
// run on every backend (the compiled backends compile one program per value and reuse it), survive
// a save and load, and refuse bad values, missing types and gradients with clear errors.
#include <catch2/catch.hpp>

#include "ir/onnx/import.h"
#include "ir/ops/array.h"
#include "ir/ops/deferred.h"
#include "ir/ops/reduce.h"
#include "ir/serialize.h"
#include "passes/autodiff.h"
#include "runtime/cpu/cpu_executor.h"
#include "runtime/cuda/cuda_executor.h"
#include "runtime/session.h"
#include "tests/ir/onnx_model_builder.h"
#include "tests/testing/backends.h"
#include "tests/testing/differential.h"

using namespace kiln;
using kiln::testing::Import;
using kiln::testing::OnnxModel;

namespace {

int CountOps(const Graph& g, const std::string& op) {
  int n = 0;
  for (const Node& node : g.nodes()) n += node.op == op;
  return n;
}

Tensor Iota(Shape shape) {
  Tensor t(f32, std::move(shape));
  for (int64_t i = 0; i < t.num_elements(); ++i) t.SetDouble(i, static_cast<double>(i));
  return t;
}

Tensor Ints(std::vector<int64_t> v) {
  const auto n = static_cast<int64_t>(v.size());
  return Tensor::FromVector<int64_t>(Shape{n}, v);
}

Result<std::vector<Tensor>> RunOn(const Graph& g, const std::string& backend, const FeedList& feeds,
                                  const std::vector<TensorName>& fetches = {"y"}) {
  Session s(g, {.backend = backend});
  return s.Run(feeds, fetches);
}

// y = x[:, starts:ends] with starts and ends fed (axes = [1]).
OnnxModel FedSlice() {
  OnnxModel m;
  m.Input("x", 1, {3, 5}).Input("starts", 7, {1}).Input("ends", 7, {1}).Output("y");
  m.Initializer("axes", Ints({1}));
  m.Node("Slice", {"x", "starts", "ends", "axes"}, {"y"}, "slice");
  return m;
}

}  // namespace

TEST_CASE("ONNX Slice with fed starts and ends runs on every backend", "[onnx]") {
  const Graph g = Import(FedSlice());
  CHECK(CountOps(g, "Deferred") == 1);
  const Tensor x = Iota({3, 5});
  for (const std::string& backend : testing::AvailableBackends()) {
    INFO(backend);
    Session s(g, {.backend = backend});
    for (auto [start, end] : {std::pair{1, 3}, {0, 5}, {1, 3}, {-2, 100}}) {
      Result<std::vector<Tensor>> out =
          s.Run({{"x", x}, {"starts", Ints({start})}, {"ends", Ints({end})}}, {"y"});
      INFO((out.ok() ? std::string() : out.error().ToString()));
      REQUIRE(out.ok());
      const int64_t lo = start < 0 ? start + 5 : start, hi = std::min<int64_t>(end, 5);
      std::vector<double> want;
      for (int64_t r = 0; r < 3; ++r)
        for (int64_t c = lo; c < hi; ++c) want.push_back(static_cast<double>(r * 5 + c));
      CHECK(out->at(0).shape() == Shape{3, hi - lo});
      CHECK(out->at(0).ToDoubles() == want);
    }
  }
}

TEST_CASE("a deferred node with fields this ONNX version does not know still runs", "[onnx]") {
  // A newer producer's NodeProto field (here number 708): the node kept as text used to fail to
  // parse back when it expanded.
  OnnxModel m = FedSlice();
  onnx::NodeProto* slice = m.proto().mutable_graph()->mutable_node(0);
  slice->GetReflection()->MutableUnknownFields(slice)->AddVarint(708, 1);
  const Graph g = Import(m);
  REQUIRE(CountOps(g, "Deferred") == 1);
  Session s(g, {.backend = "reference"});
  Result<std::vector<Tensor>> out =
      s.Run({{"x", Iota({3, 5})}, {"starts", Ints({1})}, {"ends", Ints({3})}}, {"y"});
  INFO((out.ok() ? std::string() : out.error().ToString()));
  REQUIRE(out.ok());
  CHECK(out->at(0).shape() == Shape{3, 2});
}

TEST_CASE("ONNX TopK with a fed K, and GatherND and ScatterND over a symbolic batch", "[onnx]") {
  // y = TopK(x, k) along axis 1; g = GatherND(x, idx) with idx [batch, 1, 2];
  // s = ScatterND(x, idx, upd) with upd [batch, 1] (one element per tuple).
  OnnxModel m;
  m.Input("x", 1, {-1, 5}).Input("k", 7, {1}).Input("idx", 7, {-1, 1, 2}).Input("upd", 1, {-1, 1});
  m.Output("y").Output("i", 7).Output("g").Output("s");
  m.Node("TopK", {"x", "k"}, {"y", "i"}, "top");
  m.Node("GatherND", {"x", "idx"}, {"g"}, "gather");
  m.Node("ScatterND", {"x", "idx", "upd"}, {"s"}, "scatter");
  const Graph g = Import(m);
  CHECK(CountOps(g, "Deferred") == 3);
  const Tensor x = Iota({3, 5});
  const Tensor idx = Tensor::FromVector<int64_t>({3, 1, 2}, {2, 4, 0, -1, 1, 0});
  const Tensor upd = Tensor::FromVector<float>({3, 1}, {-1, -2, -3});
  for (const std::string& backend : testing::AvailableBackends()) {
    INFO(backend);
    Session s(g, {.backend = backend});
    for (int64_t k : {2, 1}) {
      Result<std::vector<Tensor>> out =
          s.Run({{"x", x}, {"k", Ints({k})}, {"idx", idx}, {"upd", upd}}, {"y", "i", "g", "s"});
      INFO((out.ok() ? std::string() : out.error().ToString()));
      REQUIRE(out.ok());
      CHECK(out->at(0).shape() == Shape{3, k});
      CHECK(out->at(0).ToDoubles() ==
            (k == 2 ? std::vector<double>{4, 3, 9, 8, 14, 13} : std::vector<double>{4, 9, 14}));
      CHECK(out->at(1).ToInts() ==
            (k == 2 ? std::vector<int64_t>{4, 3, 4, 3, 4, 3} : std::vector<int64_t>{4, 4, 4}));
      CHECK(out->at(2).shape() == Shape{3, 1});
      CHECK(out->at(2).ToDoubles() == std::vector<double>{14, 4, 5});  // x[2,4], x[0,4], x[1,0]
      std::vector<double> scattered = x.ToDoubles();
      scattered[14] = -1, scattered[4] = -2, scattered[5] = -3;
      CHECK(out->at(3).ToDoubles() == scattered);
    }
  }
}

TEST_CASE("the compiled backends compile a deferred node once per fed value", "[onnx][cpu]") {
  if (testing::CompiledBackends().empty()) return;
  const Graph g = Import(FedSlice());
  Session planner(g, {.backend = "reference"});
  auto check = [&](Executor& executor, const std::function<int()>& compiled,
                   const std::function<int()>& fallbacks) {
    VariableStore variables;
    auto run = [&](int64_t start) {
      const FeedList feeds = {{"x", Iota({3, 5})}, {"starts", Ints({start})}, {"ends", Ints({5})}};
      Result<RunPlan> plan = planner.Plan(feeds, {"y"});
      REQUIRE(plan.ok());
      Result<std::vector<Tensor>> out = executor.Execute(*plan, variables);
      INFO((out.ok() ? "" : out.error().ToString()));
      REQUIRE(out.ok());
      return out->at(0);
    };
    CHECK(run(2).shape() == Shape{3, 3});
    CHECK(run(4).shape() == Shape{3, 1});
    CHECK(run(2).ToDoubles() == std::vector<double>{2, 3, 4, 7, 8, 9, 12, 13, 14});
    CHECK(compiled() == 2);
    CHECK(fallbacks() == 0);
  };
  cpu::CpuExecutor cpu_executor(1);
  check(
      cpu_executor, [&] { return cpu_executor.compiled_plans(); },
      [&] { return cpu_executor.fallback_plans(); });
  Result<std::unique_ptr<Executor>> sim = cuda::CudaExecutor::Create("cuda-sim", {});
  REQUIRE(sim.ok());
  auto* cuda_executor = dynamic_cast<cuda::CudaExecutor*>(sim->get());
  REQUIRE(cuda_executor);
  check(
      *cuda_executor, [&] { return cuda_executor->compiled_plans(); },
      [&] { return cuda_executor->fallback_plans(); });
}

TEST_CASE("ONNX ReduceSum with fed axes and Resize with fed scales", "[onnx]") {
  OnnxModel m;
  m.Input("x", 1, {2, 3}).Input("axes", 7, {1}).Output("y");
  auto* reduce = m.Node("ReduceSum", {"x", "axes"}, {"y"});
  OnnxModel::AttrInt(reduce, "keepdims", 0);
  const Graph reduce_graph = Import(m);
  CHECK(reduce_graph.TypeOf(*reduce_graph.ResolveTensor("y")).value().shape.rank() == 1);

  OnnxModel r;
  r.Input("x", 1, {1, 1, 2, 2}).Input("scales", 1, {4}).Output("y");
  r.Node("Resize", {"x", "", "scales"}, {"y"});
  const Graph resize_graph = Import(r);
  const Tensor scales = Tensor::FromVector<float>(Shape{4}, {1, 1, 2, 1});

  for (const std::string& backend : testing::AvailableBackends()) {
    INFO(backend);
    auto sums = RunOn(reduce_graph, backend, {{"x", Iota({2, 3})}, {"axes", Ints({0})}});
    REQUIRE(sums.ok());
    CHECK(sums->at(0).ToDoubles() == std::vector<double>{3, 5, 7});
    sums = RunOn(reduce_graph, backend, {{"x", Iota({2, 3})}, {"axes", Ints({-1})}});
    REQUIRE(sums.ok());
    CHECK(sums->at(0).ToDoubles() == std::vector<double>{3, 12});

    auto resized = RunOn(resize_graph, backend, {{"x", Iota({1, 1, 2, 2})}, {"scales", scales}});
    INFO((resized.ok() ? std::string() : resized.error().ToString()));
    REQUIRE(resized.ok());
    CHECK(resized->at(0).shape() == Shape{1, 1, 4, 2});
    CHECK(resized->at(0).ToDoubles() == std::vector<double>{0, 1, 0, 1, 2, 3, 2, 3});
  }
}

TEST_CASE("a deferred node's bad value is an error naming the ONNX node", "[onnx]") {
  OnnxModel m;
  m.Input("x", 1, {2, 3}).Input("axes", 7, {1}).Output("y");
  OnnxModel::AttrInt(m.Node("ReduceSum", {"x", "axes"}, {"y"}, "sum_it"), "keepdims", 0);
  const Graph g = Import(m);
  for (const std::string& backend : testing::AvailableBackends()) {
    INFO(backend);
    auto out = RunOn(g, backend, {{"x", Iota({2, 3})}, {"axes", Ints({5})}});
    REQUIRE_FALSE(out.ok());
    CHECK_THAT(out.error().ToString(), Catch::Contains("sum_it"));
    CHECK_THAT(out.error().ToString(), Catch::Contains("axis"));
  }
}

TEST_CASE("a graph with deferred nodes survives a save and load", "[onnx]") {
  const Graph g = Import(FedSlice());
  for (bool text : {false, true}) {
    Result<Graph> loaded =
        text ? GraphFromText(GraphToText(g)) : GraphFromBinary(*GraphToBinary(g));
    INFO((loaded.ok() ? std::string() : loaded.error().ToString()));
    REQUIRE(loaded.ok());
    auto out = RunOn(*loaded, "reference",
                     {{"x", Iota({3, 5})}, {"starts", Ints({3})}, {"ends", Ints({4})}});
    REQUIRE(out.ok());
    CHECK(out->at(0).ToDoubles() == std::vector<double>{3, 8, 13});
  }
}

TEST_CASE("a deferred node whose output rank cannot be told is refused at import", "[onnx]") {
  // Unsqueeze's axes come from a fed tensor of unknown length: the output's rank is unknown, and
  // the model declares no type for it.
  OnnxModel m;
  m.Input("x", 1, {2, 3}).Input("axes", 7, {-1}).Output("y");
  m.Node("Unsqueeze", {"x", "axes"}, {"y"}, "unsq");
  Result<Graph> g = ImportOnnxFromBytes(m.Bytes(), "", "test.onnx");
  REQUIRE_FALSE(g.ok());
  CHECK_THAT(g.error().ToString(), Catch::Contains("unsq") && Catch::Contains("known at import"));
  // With the output's type declared, it imports and runs.
  OnnxModel d;
  d.Input("x", 1, {2, 3}).Input("axes", 7, {-1}).Output("y", 1, {2, 1, 3});
  d.Node("Unsqueeze", {"x", "axes"}, {"y"}, "unsq");
  const Graph declared = Import(d);
  for (const std::string& backend : testing::AvailableBackends()) {
    INFO(backend);
    auto out = RunOn(declared, backend, {{"x", Iota({2, 3})}, {"axes", Ints({1})}});
    INFO((out.ok() ? std::string() : out.error().ToString()));
    REQUIRE(out.ok());
    CHECK(out->at(0).shape() == Shape{2, 1, 3});
    // A value that contradicts the declared type is refused.
    out = RunOn(declared, backend, {{"x", Iota({2, 3})}, {"axes", Ints({0})}});
    REQUIRE_FALSE(out.ok());
    CHECK_THAT(out.error().ToString(), Catch::Contains("declares f32[2, 1, 3]"));
  }
}

TEST_CASE("Deferred nodes: expanders, declared types and gradients", "[ir]") {
  // An expander of its own: "reshape x to the value of input 1".
  RegisterDeferredExpander(
      "test_reshape",
      [](const Node& node, const std::vector<TensorType>& types,
         const std::vector<const Tensor*>& values) -> Result<DeferredExpansion> {
        if (!values[1]) return node.MakeNodeError(ErrorCode::kUnimplemented, "needs the shape");
        GraphBuilder g;
        Value x = g.Placeholder(DeferredInputName(0), types[0].dtype, types[0].shape);
        g.Placeholder(DeferredInputName(1), types[1].dtype, types[1].shape);
        Value y = Reshape(x, values[1]->ToInts());
        KILN_ASSIGN_OR_RETURN(Graph graph, g.Build());
        return DeferredExpansion{std::move(graph), {y.ref()}};
      });
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {2, 3});
  Value shape = g.Placeholder("shape", i64, {2});
  Value y = Deferred(g, "test_reshape", "", 0, {x, shape}, {{f32, Shape{-1, -1}}})[0];
  g.Output("y", Sum(y, {1}));
  Value z = Deferred(g, "no_such_frontend", "", 0, {x}, {{f32, Shape{2, 3}}})[0];
  g.Output("z", z);
  Result<Graph> graph = g.Build();
  REQUIRE(graph.ok());
  for (const std::string& backend : testing::AvailableBackends()) {
    INFO(backend);
    auto out = RunOn(*graph, backend, {{"x", Iota({2, 3})}, {"shape", Ints({3, 2})}});
    INFO((out.ok() ? std::string() : out.error().ToString()));
    REQUIRE(out.ok());
    CHECK(out->at(0).ToDoubles() == std::vector<double>{1, 5, 9});
    out = RunOn(*graph, backend, {{"x", Iota({2, 3})}}, {"z"});
    REQUIRE_FALSE(out.ok());
    CHECK_THAT(out.error().ToString(), Catch::Contains("'no_such_frontend' frontend"));
  }
  // No gradient flows through it.
  GraphBuilder d;
  Value dx = d.Placeholder("x", f32, {2, 3});
  Value dy = Deferred(d, "test_reshape", "", 0, {dx, d.Constant(Ints({6}))}, {{f32, Shape{6}}})[0];
  Result<std::vector<Value>> grads = Gradients({Sum(dy)}, {dx});
  REQUIRE_FALSE(grads.ok());
  CHECK_THAT(grads.error().ToString(), Catch::Contains("has no gradient"));
  // Declared types are checked when the node is built.
  GraphBuilder bad;
  Value bx = bad.Placeholder("x", f32, {2});
  Deferred(bad, "test_reshape", "", 0, {bx}, {{DType::kInvalid, Shape{}}});
  CHECK_FALSE(bad.Build().ok());
}
