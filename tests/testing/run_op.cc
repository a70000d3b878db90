#include "tests/testing/run_op.h"

#include <catch2/catch.hpp>

#include "tests/testing/differential.h"

namespace kiln::testing {
namespace {

using MakeFn = std::function<Value(GraphBuilder&, const std::vector<Value>&)>;

// The op applied to the inputs as constants (fed = false) or as fed placeholders (fed = true).
Result<Graph> BuildGraph(const std::vector<Tensor>& inputs, const MakeFn& make, bool fed) {
  GraphBuilder g;
  std::vector<Value> values;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    values.push_back(fed ? g.Placeholder("in" + std::to_string(i), t.dtype(), t.shape())
                         : g.Constant(t));
  }
  Value out = make(g, values);
  if (out.valid()) g.Output("out", out);
  return g.Build();
}

Result<Tensor> Build(const std::vector<Tensor>& inputs, const MakeFn& make) {
  KILN_ASSIGN_OR_RETURN(Graph graph, BuildGraph(inputs, make, /*fed=*/false));
  Session session(std::move(graph), SessionOptions{.backend = "reference"});
  KILN_ASSIGN_OR_RETURN(std::vector<Tensor> outs, session.Run({}, {"out"}));
  return outs[0];
}

}  // namespace

Tensor RunOp(const std::vector<Tensor>& inputs, const MakeFn& make) {
  Result<Tensor> r = Build(inputs, make);
  INFO((r.ok() ? std::string("ok") : r.error().ToString()));
  REQUIRE(r.ok());
  // The same op compiled, with its inputs fed so that the compiler cannot fold it away.
  Result<Graph> fed = BuildGraph(inputs, make, /*fed=*/true);
  if (fed.ok()) {
    FeedList feeds;
    for (size_t i = 0; i < inputs.size(); ++i)
      feeds.push_back({"in" + std::to_string(i), inputs[i]});
    CheckCompiledMatchesReference(*fed, feeds, {"out"}, {*r});
  }
  return *r;
}

std::string RunOpError(const std::vector<Tensor>& inputs,
                       const std::function<Value(GraphBuilder&, const std::vector<Value>&)>& make) {
  Result<Tensor> r = Build(inputs, make);
  return r.ok() ? "" : r.error().message();
}

}  // namespace kiln::testing
