#include "tests/testing/run_op.h"

#include <catch2/catch.hpp>

namespace kiln::testing {
namespace {
Result<Tensor> Build(const std::vector<Tensor>& inputs,
                     const std::function<Value(GraphBuilder&, const std::vector<Value>&)>& make) {
  GraphBuilder g;
  std::vector<Value> values;
  for (const Tensor& t : inputs) values.push_back(g.Constant(t));
  Value out = make(g, values);
  if (out.valid()) g.Output("out", out);
  KILN_ASSIGN_OR_RETURN(Graph graph, g.Build());
  Session session(std::move(graph));
  KILN_ASSIGN_OR_RETURN(std::vector<Tensor> outs, session.Run({}, {"out"}));
  return outs[0];
}
}  // namespace

Tensor RunOp(const std::vector<Tensor>& inputs,
             const std::function<Value(GraphBuilder&, const std::vector<Value>&)>& make) {
  Result<Tensor> r = Build(inputs, make);
  INFO((r.ok() ? std::string("ok") : r.error().ToString()));
  REQUIRE(r.ok());
  return *r;
}

std::string RunOpError(const std::vector<Tensor>& inputs,
                       const std::function<Value(GraphBuilder&, const std::vector<Value>&)>& make) {
  Result<Tensor> r = Build(inputs, make);
  return r.ok() ? "" : r.error().message();
}

}  // namespace kiln::testing
