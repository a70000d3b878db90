#include "tests/testing/eval.h"

#include <catch2/catch.hpp>

#include "tests/testing/differential.h"

namespace kiln::testing {

Graph BuildOrFail(const GraphBuilder& g) {
  Result<Graph> graph = g.Build();
  INFO(graph.status().ToString());
  REQUIRE(graph.ok());
  return std::move(*graph);
}

std::vector<Tensor> EvalAll(const GraphBuilder& g, const std::vector<TensorName>& fetches,
                            const FeedList& feeds) {
  const Graph graph = BuildOrFail(g);
  Session session(graph, SessionOptions{.backend = "reference"});
  Result<std::vector<Tensor>> out = session.Run(feeds, fetches);
  INFO(out.status().ToString());
  REQUIRE(out.ok());
  CheckCompiledMatchesReference(graph, feeds, fetches, *out);
  return *out;
}

Tensor Eval(const GraphBuilder& g, Value y, const FeedList& feeds) {
  return EvalAll(g, {y}, feeds)[0];
}

std::string BuildError(const GraphBuilder& g) {
  Result<Graph> graph = g.Build();
  REQUIRE_FALSE(graph.ok());
  return graph.error().message();
}

std::string RunError(const GraphBuilder& g, Value y, const FeedList& feeds) {
  Result<Graph> graph = g.Build();
  REQUIRE(graph.ok());
  Session session(*graph);
  Result<std::vector<Tensor>> out = session.Run(feeds, {y});
  REQUIRE_FALSE(out.ok());
  return out.error().message();
}

Tensor Iota(Shape shape) {
  std::vector<double> v(shape.NumElements());
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  return Tensor::FromDoubles(f32, shape, v);
}

}  // namespace kiln::testing
