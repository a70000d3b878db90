// Pooling on the cpu backend: MaxPool2D, AvgPool2D and their backward ops as oneDNN library steps
// (compiler/pool_lowering, runtime/cpu/onednn_pool_step), against the reference executor for
// strides, padding, ceil mode and count_include_pad, in f32, bf16 and f16; NaN inputs keep the
// reference semantics (a NaN is the window's maximum); the one geometry oneDNN cannot express
// stays on the reference kernel and says why.
#include <catch2/catch.hpp>
#include <cmath>

#include "ir/builder.h"
#include "ir/ops/math.h"
#include "ir/ops/nn.h"
#include "runtime/session.h"
#include "tests/compiler/lowering_decisions.h"
#include "tests/testing/differential.h"
#include "tests/testing/gradcheck_op.h"

namespace kiln {
namespace {

struct PoolGraph {
  Graph graph;
  FeedList feeds;
  std::vector<TensorName> fetches = {"max", "avg", "dmax", "davg"};
};

// Both poolings of x and both gradients, with dy = y * y (any upstream gradient).
PoolGraph MakePoolGraph(DType dtype, const Shape& shape, const Pool2DOptions& o, Tensor x) {
  GraphBuilder g;
  Value xv = g.Placeholder("x", dtype, shape);
  Value max = MaxPool2D(xv, o);
  Value avg = AvgPool2D(xv, o);
  g.Output("max", max);
  g.Output("avg", avg);
  g.Output("dmax", MaxPool2DGrad(xv, Mul(max, max), o));
  g.Output("davg", AvgPool2DGrad(Mul(avg, avg), xv, o));
  Result<Graph> graph = g.Build();
  INFO((graph.ok() ? "" : graph.error().ToString()));
  REQUIRE(graph.ok());
  return PoolGraph{std::move(*graph), {{"x", std::move(x)}}};
}

// The decisions about the pooling nodes.
std::vector<std::string> Decisions(const PoolGraph& p) {
  std::vector<std::string> pooling;
  for (const std::string& d : testing::LoweringDecisions(p.graph, p.feeds, p.fetches))
    if (d.find("Pool") != std::string::npos) pooling.push_back(d);
  return pooling;
}

void CheckAgainstReference(const PoolGraph& p) {
  Session reference(p.graph, SessionOptions{.backend = "reference"});
  Result<std::vector<Tensor>> expected = reference.Run(p.feeds, p.fetches);
  INFO((expected.ok() ? "" : expected.error().ToString()));
  REQUIRE(expected.ok());
  testing::CheckCompiledMatchesReference(p.graph, p.feeds, p.fetches, *expected);
}

TEST_CASE("pooling and its gradients run as oneDNN calls and match the reference", "[cpu][pool]") {
  const Shape shape{2, 3, 9, 8};
  for (DType dtype : {f32, bf16, f16}) {
    for (const Pool2DOptions& o : std::vector<Pool2DOptions>{
             {.kernel = {2, 2}},
             {.kernel = {3, 3}, .strides = {2, 2}, .pads = {1, 1, 1, 1}},
             {.kernel = {3, 2}, .strides = {2, 1}, .pads = {1, 0, 0, 1}},
             {.kernel = {2, 2}, .ceil_mode = true},
             {.kernel = {3, 3}, .strides = {2, 2}, .pads = {1, 1, 1, 1}, .ceil_mode = true},
             {.kernel = {3, 3},
             .strides = {2, 2},
             .pads = {1, 1, 1, 1},
             .count_include_pad = true}}) {
      INFO(DTypeName(dtype) << " kernel " << o.kernel[0] << "x" << o.kernel[1]
                            << (o.ceil_mode ? " ceil" : "")
                            << (o.count_include_pad ? " include_pad" : ""));
      PoolGraph p = MakePoolGraph(dtype, shape, o, testing::RandomTensor(shape, 3).CastTo(dtype));
      for (const std::string& d : Decisions(p)) {
        INFO(d);
        CHECK(d.find("library call") != std::string::npos);
      }
      CheckAgainstReference(p);
    }
  }
}

TEST_CASE("max pooling on the cpu backend propagates NaN like the reference", "[cpu][pool]") {
  for (DType dtype : {f32, bf16}) {
    INFO(DTypeName(dtype));
    const Shape shape{1, 2, 4, 4};
    Tensor x = testing::RandomTensor(shape, 5).CastTo(f32);
    x.SetDouble(5, NAN);
    PoolGraph p = MakePoolGraph(dtype, shape, {.kernel = {2, 2}}, x.CastTo(dtype));
    p.fetches = {"max", "dmax"};
    CheckAgainstReference(p);
    Session compiled(p.graph);
    Result<std::vector<Tensor>> out = compiled.Run(p.feeds, {"max"});
    REQUIRE(out.ok());
    CHECK(std::isnan((*out)[0].GetDouble(0)));  // the window holding x[5]
  }
}

TEST_CASE("ceil-mode windows past the padding with count_include_pad stay on the reference",
          "[cpu][pool]") {
  const Shape shape{1, 2, 5, 5};
  PoolGraph p =
      MakePoolGraph(f32, shape, {.kernel = {2, 2}, .ceil_mode = true, .count_include_pad = true},
                    testing::RandomTensor(shape, 7).CastTo(f32));
  bool avg_on_reference = false;
  for (const std::string& d : Decisions(p))
    if (d.rfind("AvgPool2D", 0) == 0 && d.find("reference kernel (ceil-mode") != std::string::npos)
      avg_on_reference = true;
  CHECK(avg_on_reference);
  CheckAgainstReference(p);
}

}  // namespace
}  // namespace kiln
