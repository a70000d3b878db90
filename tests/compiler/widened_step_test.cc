// 16-bit library steps on the cpu backend: bf16 and f16 MatMul, BiasAdd, BatchNorm (training and
// inference) and GlobalAvgPool run as library calls on float32 copies
// (runtime/cpu/widened_step.cc), bf16 Conv2D as oneDNN with converting reorders, never as reference
// kernels; each matches the reference executor within the 16-bit tolerance of
// tests/testing/differential.h.
#include <catch2/catch.hpp>

#include "ir/builder.h"
#include "ir/ops/linalg.h"
#include "ir/ops/math.h"
#include "ir/ops/nn.h"
#include "runtime/session.h"
#include "tests/compiler/lowering_decisions.h"
#include "tests/testing/differential.h"

namespace kiln {
namespace {

Tensor Filled(DType dtype, Shape shape, double scale) {
  Tensor t = *Tensor::Create(dtype, shape);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.SetDouble(i, scale * (((i * 13) % 17) - 8) / 8);
  return t;
}

void CheckNoReferenceSteps(const Graph& graph, const FeedList& feeds,
                           const std::vector<TensorName>& fetches) {
  for (const std::string& d : testing::LoweringDecisions(graph, feeds, fetches)) {
    INFO(d);
    CHECK(d.find("reference kernel") == std::string::npos);
  }
}

TEST_CASE("16-bit MatMul, BiasAdd, BatchNorm, GlobalAvgPool and Conv2D run as library calls",
          "[cpu][precision]") {
  for (DType t : {bf16, f16}) {
    INFO(DTypeName(t));
    GraphBuilder g;
    Value x = g.Placeholder("x", t, {4, 3, 6, 6});
    Value w = g.Constant(Filled(t, Shape({5, 3, 3, 3}), 0.5));
    Conv2DOptions same;
    same.pads = {1, 1, 1, 1};
    Value h = Conv2D(x, w, same);
    Value c = g.Constant(Filled(t, Shape({5}), 1.0));
    h = BiasAdd(h, c);
    Value stats = g.Constant(Filled(t, Shape({5}), 0.25));
    Value ones = g.Constant(Filled(t, Shape({5}), 0.0)) + 1.0;
    g.Output("train_bn", BatchNorm(h, ones, stats, stats, ones, 1e-5, /*training=*/true)[0]);
    Value infer_bn = BatchNorm(h, ones, stats, stats, ones, 1e-5, /*training=*/false)[0];
    g.Output("infer_bn", infer_bn);
    g.Output("pooled", GlobalAvgPool(Relu(infer_bn)));  // after a convolution: a blocked layout
    Value m = g.Placeholder("m", t, {6, 4});
    Value k = g.Constant(Filled(t, Shape({4, 7}), 1.0));
    g.Output("matmul", BiasAdd(MatMul(m, k), g.Constant(Filled(t, Shape({7}), 2.0))));
    Result<Graph> graph = g.Build();
    INFO((graph.ok() ? "" : graph.error().ToString()));
    REQUIRE(graph.ok());
    FeedList feeds = {{"x", Filled(t, Shape({4, 3, 6, 6}), 1.0)},
                      {"m", Filled(t, Shape({6, 4}), 1.0)}};
    std::vector<TensorName> fetches = {"train_bn", "infer_bn", "pooled", "matmul"};
    if (t == bf16) CheckNoReferenceSteps(*graph, feeds, fetches);
    Session reference(*graph, SessionOptions{.backend = "reference"});
    Result<std::vector<Tensor>> expected = reference.Run(feeds, fetches);
    INFO((expected.ok() ? "" : expected.error().ToString()));
    REQUIRE(expected.ok());
    testing::CheckCompiledMatchesReference(*graph, feeds, fetches, *expected);
  }
}

}  // namespace
}  // namespace kiln
