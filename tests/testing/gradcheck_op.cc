#include "tests/testing/gradcheck_op.h"

#include <catch2/catch.hpp>

#include "ir/ops/math.h"
#include "ir/ops/reduce.h"
#include "ir/random.h"
#include "tools/lib/gradient_check.h"

namespace kiln::testing {

Tensor RandomTensor(Shape shape, uint64_t seed, double low, double high) {
  Tensor t(f64, std::move(shape));
  for (int64_t i = 0; i < t.num_elements(); ++i)
    t.SetDouble(i, low + (high - low) * RandomUniform(seed, 7, i));
  return t;
}

void CheckOpGradient(const std::vector<Tensor>& inputs, const MakeOpFn& make, double tolerance) {
  GraphBuilder g;
  std::vector<Value> values;
  std::vector<std::string> wrt;
  FeedList feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (IsFloat(inputs[i].dtype())) {
      std::string name = "in" + std::to_string(i);
      values.push_back(g.Placeholder(name, f64, inputs[i].shape()));
      wrt.push_back(name);
      feeds.emplace_back(name, inputs[i].CastTo(f64));
    } else {
      values.push_back(g.Constant(inputs[i]));
    }
  }
  Value y = make(g, values);
  REQUIRE(y.valid());
  REQUIRE(y.shape().IsFullyKnown());
  Value weights = g.Constant(RandomTensor(y.shape(), 99));
  Sum(Cast(y, f64) * weights).Named("loss");
  Result<Graph> graph = g.Build();
  INFO((graph.ok() ? "" : graph.error().ToString()));
  REQUIRE(graph.ok());
  Result<std::vector<GradCheckResult>> results = CheckGradients(*graph, "loss", wrt, feeds);
  INFO((results.ok() ? "" : results.error().ToString()));
  REQUIRE(results.ok());
  for (const GradCheckResult& r : *results) {
    INFO("gradient with respect to " << r.wrt << " " << r.type.ToString()
                                     << "\n  symbolic: " << r.symbolic.Summary(12)
                                     << "\n  numeric:  " << r.numeric.Summary(12));
    CHECK(r.checked > 0);
    CHECK(r.max_rel_error <= tolerance);
  }
}

}  // namespace kiln::testing
