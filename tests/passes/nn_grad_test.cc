// Gradients of op family "nn" against float64 central differences, and with unknown (-1) dims.
#include <algorithm>
#include <catch2/catch.hpp>
#include <numeric>

#include "ir/ops/array.h"
#include "ir/ops/math.h"
#include "ir/ops/nn.h"
#include "ir/ops/reduce.h"
#include "passes/autodiff.h"
#include "runtime/session.h"
#include "tests/testing/gradcheck_op.h"

using namespace kiln;
using kiln::testing::CheckOpGradient;
using kiln::testing::MakeOpFn;
using kiln::testing::RandomTensor;

namespace {

// Values in (-1, 1) at least 2 / n apart in a random order: no ties, so max pooling stays away
// from its kinks under the finite-difference step.
Tensor DistinctTensor(Shape shape, uint64_t seed) {
  Tensor keys = RandomTensor(shape, seed);
  const int64_t n = keys.num_elements();
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&keys](int64_t a, int64_t b) { return keys.GetDouble(a) < keys.GetDouble(b); });
  Tensor t(f64, std::move(shape));
  for (int64_t r = 0; r < n; ++r)
    t.SetDouble(order[r], -1 + 2 * (r + 0.5) / static_cast<double>(n));
  return t;
}

// d sum(make(inputs) * w) / d(each float input), the float inputs fed through placeholders of
// their shapes or, when `dynamic`, of unknown (-1) dims.
std::vector<Tensor> FedGradients(const std::vector<Tensor>& inputs, const MakeOpFn& make,
                                 const Tensor& w, bool dynamic) {
  GraphBuilder g;
  std::vector<Value> values, xs;
  FeedList feeds;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!IsFloat(inputs[i].dtype())) {
      values.push_back(g.Constant(inputs[i]));
      continue;
    }
    Shape shape =
        dynamic ? Shape(std::vector<int64_t>(inputs[i].rank(), kUnknownDim)) : inputs[i].shape();
    std::string name = "in" + std::to_string(i);
    values.push_back(g.Placeholder(name, f64, shape));
    xs.push_back(values.back());
    feeds.emplace_back(name, inputs[i]);
  }
  Value y = make(g, values);
  REQUIRE(y.valid());
  if (y.rank() > 0) CHECK(y.shape().IsFullyKnown() == !dynamic);
  Result<std::vector<Value>> dxs = Gradients({Sum(y * g.Constant(w))}, xs);
  INFO((dxs.ok() ? "" : dxs.error().ToString()));
  REQUIRE(dxs.ok());
  Result<Graph> graph = g.Build();
  INFO((graph.ok() ? "" : graph.error().ToString()));
  REQUIRE(graph.ok());
  Session session(std::move(*graph));
  std::vector<TensorName> fetches(dxs->begin(), dxs->end());
  Result<std::vector<Tensor>> out = session.Run(feeds, fetches);
  INFO((out.ok() ? "" : out.error().ToString()));
  REQUIRE(out.ok());
  return *out;
}

// The gradients built with every dim unknown until run time equal those built with known shapes.
void CheckUnknownDims(const std::vector<Tensor>& inputs, const MakeOpFn& make, Shape y_shape) {
  Tensor w = RandomTensor(std::move(y_shape), 42);
  std::vector<Tensor> known = FedGradients(inputs, make, w, false);
  std::vector<Tensor> unknown = FedGradients(inputs, make, w, true);
  REQUIRE(known.size() == unknown.size());
  for (size_t k = 0; k < known.size(); ++k) {
    REQUIRE(known[k].shape() == unknown[k].shape());
    for (int64_t i = 0; i < known[k].num_elements(); ++i)
      CHECK(unknown[k].GetDouble(i) == Approx(known[k].GetDouble(i)).margin(1e-12));
  }
}

struct PoolCase {
  Shape shape;
  Pool2DOptions options;
};

// Kernels, strides (overlapping, disjoint, with gaps), symmetric and asymmetric pads, ceil_mode
// (including a dropped last window and windows hanging past the padding).
std::vector<PoolCase> PoolCases() {
  return {
      {{2, 3, 4, 4}, {{2, 2}, {}}},
      {{1, 2, 5, 5}, {{3, 3}, {1, 1}}},
      {{1, 2, 5, 6}, {{3, 2}, {2, 1}, {1, 1, 1, 0}}},
      {{1, 1, 5, 5}, {{2, 2}, {2, 2}, {1, 1, 1, 1}, true}},
      {{1, 2, 4, 4}, {{3, 3}, {2, 2}, {1, 1, 1, 1}, true}},
      {{2, 1, 6, 5}, {{3, 3}, {2, 2}, {0, 0, 0, 0}, true}},
      {{1, 1, 7, 6}, {{2, 3}, {3, 2}, {1, 0, 0, 2}}},
  };
}

}  // namespace

TEST_CASE("nn gradients: MaxPool2D", "[grad][nn]") {
  uint64_t seed = 1;
  for (const PoolCase& c : PoolCases()) {
    INFO("shape " << c.shape.ToString() << " kernel " << Shape(c.options.kernel).ToString()
                  << " pads " << Shape(c.options.pads).ToString() << " ceil "
                  << c.options.ceil_mode);
    Pool2DOptions o = c.options;
    CheckOpGradient({DistinctTensor(c.shape, seed++)},
                    [o](GraphBuilder&, auto& v) { return MaxPool2D(v[0], o); });
  }
}

TEST_CASE("nn gradients: AvgPool2D", "[grad][nn]") {
  uint64_t seed = 11;
  for (const PoolCase& c : PoolCases()) {
    for (bool include_pad : {false, true}) {
      INFO("shape " << c.shape.ToString() << " kernel " << Shape(c.options.kernel).ToString()
                    << " pads " << Shape(c.options.pads).ToString() << " ceil "
                    << c.options.ceil_mode << " count_include_pad " << include_pad);
      Pool2DOptions o = c.options;
      o.count_include_pad = include_pad;
      CheckOpGradient({RandomTensor(c.shape, seed++)},
                      [o](GraphBuilder&, auto& v) { return AvgPool2D(v[0], o); });
    }
  }
}

TEST_CASE("nn gradients: GlobalAvgPool", "[grad][nn]") {
  for (Shape s : {Shape{2, 3, 4}, Shape{2, 3, 2, 3}, Shape{1, 2, 2, 1, 3}})
    CheckOpGradient({RandomTensor(s, 21)},
                    [](GraphBuilder&, auto& v) { return GlobalAvgPool(v[0]); });
}

TEST_CASE("nn gradients: BatchNorm in training and inference mode", "[grad][nn]") {
  for (Shape s : {Shape{4, 3}, Shape{3, 2, 4}, Shape{2, 3, 2, 2}}) {
    const int64_t c = s[1];
    std::vector<Tensor> in = {RandomTensor(s, 31, -2, 2), RandomTensor({c}, 32, 0.5, 1.5),
                              RandomTensor({c}, 33), RandomTensor({c}, 34),
                              RandomTensor({c}, 35, 0.5, 2)};
    std::vector<int64_t> trailing;  // [C] -> [C, 1, ...] against x
    for (int d = 2; d < s.rank(); ++d) trailing.push_back(d - 1);
    for (bool training : {true, false}) {
      for (double eps : {1e-5, 0.1}) {
        INFO("shape " << s.ToString() << " training " << training << " epsilon " << eps);
        auto bn = [training, eps](auto& v) {
          return BatchNorm(v[0], v[1], v[2], v[3], v[4], eps, training);
        };
        for (int k = 0; k < 3; ++k) {
          INFO("output " << k);
          CheckOpGradient(in, [bn, k](GraphBuilder&, auto& v) { return bn(v)[k]; });
        }
        // All three outputs at once.
        auto all = [bn, trailing](GraphBuilder&, auto& v) {
          std::vector<Value> o = bn(v);
          auto per_channel = [&trailing](Value t) {
            return trailing.empty() ? t : Unsqueeze(t, trailing);
          };
          return o[0] + per_channel(o[1]) + per_channel(o[2]) * 0.7;
        };
        CheckOpGradient(in, all);
        if (s.rank() == 4 && eps == 0.1) CheckUnknownDims(in, all, s);
      }
    }
  }
}

TEST_CASE("nn gradients: LayerNorm", "[grad][nn]") {
  const std::vector<std::pair<Shape, int64_t>> cases = {
      {{3, 4}, -1}, {{2, 3, 4}, 1}, {{2, 3, 4}, -1}, {{2, 3}, 0}, {{2, 2, 3, 2}, 2}};
  for (auto [s, axis] : cases) {
    Shape normalized(std::vector<int64_t>(s.dims().begin() + (axis < 0 ? axis + s.rank() : axis),
                                          s.dims().end()));
    std::vector<Tensor> in = {RandomTensor(s, 41, -2, 2), RandomTensor(normalized, 42, 0.5, 1.5),
                              RandomTensor(normalized, 43)};
    for (double eps : {1e-5, 0.1}) {
      INFO("shape " << s.ToString() << " axis " << axis << " epsilon " << eps);
      auto ln = [axis = axis, eps](GraphBuilder&, auto& v) {
        return LayerNorm(v[0], v[1], v[2], axis, eps);
      };
      CheckOpGradient(in, ln);
      if (s.rank() == 3 && eps == 0.1) CheckUnknownDims(in, ln, s);
    }
  }
}

TEST_CASE("nn gradients: Softmax and LogSoftmax", "[grad][nn]") {
  const std::vector<std::pair<Shape, int64_t>> cases = {
      {{3, 4}, -1}, {{3, 4}, 0}, {{2, 3, 4}, 1}, {{2, 3, 4}, -3}, {{5}, 0}};
  for (auto [s, axis] : cases) {
    INFO("shape " << s.ToString() << " axis " << axis);
    Tensor x = RandomTensor(s, 51, -3, 3);
    auto softmax = [axis = axis](GraphBuilder&, auto& v) { return Softmax(v[0], axis); };
    auto log_softmax = [axis = axis](GraphBuilder&, auto& v) { return LogSoftmax(v[0], axis); };
    CheckOpGradient({x}, softmax);
    CheckOpGradient({x}, log_softmax);
    if (s.rank() == 3) {
      CheckUnknownDims({x}, softmax, s);
      CheckUnknownDims({x}, log_softmax, s);
    }
  }
}

TEST_CASE("nn gradients: SoftmaxCrossEntropy", "[grad][nn]") {
  const std::vector<std::pair<Tensor, Tensor>> cases = {
      {RandomTensor({4, 5}, 61, -3, 3), Tensor::FromVector<int64_t>({4}, {0, 4, 2, 2})},
      {RandomTensor({3, 2}, 62, -3, 3), Tensor::FromVector<int32_t>({3}, {1, 0, 1})},
      {RandomTensor({1, 3}, 63, -3, 3), Tensor::FromVector<int64_t>({1}, {2})},
  };
  for (const auto& [logits, labels] : cases) {
    INFO("logits " << logits.shape().ToString());
    auto sce = [](GraphBuilder&, auto& v) { return SoftmaxCrossEntropy(v[0], v[1]); };
    CheckOpGradient({logits, labels}, sce);
    // Through the loss scaled by a weight, so dloss != 1; unknown N and C (the one-hot is built
    // from the run-time number of classes).
    CheckUnknownDims({logits, labels}, sce, Shape{});
    // Each row's loss: the gradient op with dloss [N].
    CheckOpGradient({logits, labels},
                    [](GraphBuilder&, auto& v) { return SoftmaxCrossEntropy(v[0], v[1], "none"); });
  }
}

TEST_CASE("nn gradients: Dropout", "[grad][nn]") {
  Tensor x = RandomTensor({3, 4}, 71);
  // Identity when not training or when nothing is dropped.
  CheckOpGradient({x}, [](GraphBuilder&, auto& v) { return Dropout(v[0], 0.5, 3, false)[0]; });
  CheckOpGradient({x}, [](GraphBuilder&, auto& v) { return Dropout(v[0], 0.0, 3, true)[0]; });

  // Training: every run draws a new mask, so central differences cannot see one function; check
  // dx = w * mask / (1 - rate) against the mask of the same run instead.
  const int64_t n = 400;
  const double rate = 0.4;
  GraphBuilder g;
  Value xv = g.Placeholder("x", f64, {-1});
  std::vector<Value> d = Dropout(xv, rate, 9, true);
  Tensor w = RandomTensor({n}, 72);
  Result<std::vector<Value>> dx = Gradients({Sum(d[0] * g.Constant(w))}, {xv});
  REQUIRE(dx.ok());
  Session session(*g.Build());
  for (int run = 0; run < 2; ++run) {
    auto out = session.Run({{"x", RandomTensor({n}, 73)}}, {d[1], (*dx)[0]});
    REQUIRE(out.ok());
    std::vector<int64_t> mask = out->at(0).ToInts();
    int64_t kept = 0;
    for (int64_t i = 0; i < n; ++i) {
      kept += mask[i];
      REQUIRE(out->at(1).GetDouble(i) == Approx(mask[i] ? w.GetDouble(i) / (1 - rate) : 0.0));
    }
    CHECK(kept > 0);
    CHECK(kept < n);
  }
}

TEST_CASE("nn gradients: pooling with unknown dims", "[grad][nn]") {
  Pool2DOptions o{{3, 3}, {2, 2}, {1, 1, 1, 1}, true, true};
  Tensor x = DistinctTensor({2, 3, 5, 5}, 81);
  CheckUnknownDims({x}, [o](GraphBuilder&, auto& v) { return MaxPool2D(v[0], o); }, {2, 3, 3, 3});
  CheckUnknownDims({x}, [o](GraphBuilder&, auto& v) { return AvgPool2D(v[0], o); }, {2, 3, 3, 3});
  CheckUnknownDims({x}, [](GraphBuilder&, auto& v) { return GlobalAvgPool(v[0]); }, {2, 3, 1, 1});
}
