#include <catch2/catch.hpp>
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/builder.h"
#include "ir/ops/reduce.h"
#include "runtime/session.h"

using namespace kiln;

namespace {

using ReduceFn = std::function<Value(Value)>;

// Builds y = f(x) over a placeholder (of x's shape unless given), runs it on `x` and returns y.
Result<Tensor> RunOn(const Tensor& x, const ReduceFn& f,
                     std::optional<Shape> placeholder = std::nullopt) {
  GraphBuilder g;
  Value y = f(g.Placeholder("x", x.dtype(), placeholder ? *placeholder : x.shape()));
  g.Output("y", y);
  KILN_ASSIGN_OR_RETURN(Graph graph, g.Build());
  Session session(std::move(graph));
  KILN_ASSIGN_OR_RETURN(std::vector<Tensor> out, session.Run({{"x", x}}, {"y"}));
  return out[0];
}

Tensor Run(const Tensor& x, const ReduceFn& f) {
  Result<Tensor> y = RunOn(x, f);
  INFO((y.ok() ? std::string("ok") : y.error().ToString()));
  REQUIRE(y.ok());
  return *y;
}

// The build error of y = f(placeholder of dtype/shape), or "" if it builds.
std::string BuildError(DType dtype, Shape shape, const ReduceFn& f) {
  GraphBuilder g;
  g.Output("y", f(g.Placeholder("x", dtype, std::move(shape))));
  Result<Graph> graph = g.Build();
  return graph.ok() ? "" : graph.error().message();
}

TensorType TypeOf(DType dtype, Shape shape, const ReduceFn& f) {
  GraphBuilder g;
  Value y = f(g.Placeholder("x", dtype, std::move(shape)));
  REQUIRE(y.valid());
  return y.type();
}

// x = [[1, 2, 3], [4, 5, 6]]
Tensor X23() { return Tensor::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6}); }
// x[i][j][k] = 6i + 3j + k, shape [2, 2, 3]
Tensor X223() {
  std::vector<float> v(12);
  for (int i = 0; i < 12; ++i) v[i] = static_cast<float>(i);
  return Tensor::FromVector<float>({2, 2, 3}, v);
}

}  // namespace

TEST_CASE("reduce: Sum over several axis sets and keepdims", "[reduce]") {
  Tensor s = Run(X23(), [](Value x) { return Sum(x); });
  CHECK(s.shape() == Shape{});
  CHECK(s.dtype() == f32);
  CHECK(s.ToDoubles() == std::vector<double>{21});
  CHECK(Run(X23(), [](Value x) { return Sum(x, {0}); }).ToDoubles() ==
        std::vector<double>{5, 7, 9});
  CHECK(Run(X23(), [](Value x) { return Sum(x, {1}); }).ToDoubles() == std::vector<double>{6, 15});
  Tensor k = Run(X23(), [](Value x) { return Sum(x, {-1}, true); });
  CHECK(k.shape() == Shape{2, 1});
  CHECK(k.ToDoubles() == std::vector<double>{6, 15});
  Tensor all = Run(X23(), [](Value x) { return Sum(x, {0, 1}, true); });
  CHECK(all.shape() == Shape{1, 1});
  CHECK(all.ToDoubles() == std::vector<double>{21});

  // Rank 3: axes {0, 2} sum x[:, j, :] -> j=0: 0+1+2+6+7+8 = 24, j=1: 3+4+5+9+10+11 = 42.
  Tensor t = Run(X223(), [](Value x) { return Sum(x, {0, 2}); });
  CHECK(t.shape() == Shape{2});
  CHECK(t.ToDoubles() == std::vector<double>{24, 42});
  Tensor tk = Run(X223(), [](Value x) { return Sum(x, {2, -3}, true); });  // unsorted, negative
  CHECK(tk.shape() == Shape{1, 2, 1});
  CHECK(tk.ToDoubles() == std::vector<double>{24, 42});
  CHECK(Run(X223(), [](Value x) { return Sum(x, {1}); }).ToDoubles() ==
        std::vector<double>{3, 5, 7, 15, 17, 19});
}

TEST_CASE("reduce: Mean, Max, Min, Prod on floats", "[reduce]") {
  CHECK(Run(X23(), [](Value x) { return Mean(x, {0}); }).ToDoubles() ==
        std::vector<double>{2.5, 3.5, 4.5});
  CHECK(Run(X23(), [](Value x) { return Mean(x); }).ToDoubles() == std::vector<double>{3.5});
  CHECK(Run(X23(), [](Value x) { return Max(x, {1}); }).ToDoubles() == std::vector<double>{3, 6});
  CHECK(Run(X23(), [](Value x) { return Min(x, {0}); }).ToDoubles() ==
        std::vector<double>{1, 2, 3});
  CHECK(Run(X23(), [](Value x) { return Prod(x, {1}); }).ToDoubles() ==
        std::vector<double>{6, 120});
  CHECK(Run(X23(), [](Value x) { return Prod(x); }).ToDoubles() == std::vector<double>{720});
  Tensor m = Run(X223(), [](Value x) { return Max(x, {0, 2}, true); });
  CHECK(m.shape() == Shape{1, 2, 1});
  CHECK(m.ToDoubles() == std::vector<double>{8, 11});
  CHECK(Run(X223(), [](Value x) { return Min(x, {-1}); }).ToDoubles() ==
        std::vector<double>{0, 3, 6, 9});

  Tensor mean64 =
      Run(Tensor::FromVector<double>({4}, {0.1, 0.2, 0.3, 0.4}), [](Value x) { return Mean(x); });
  CHECK(mean64.dtype() == f64);
  CHECK(mean64.GetDouble(0) == Approx(0.25));
  Tensor half = Run(Tensor::FromDoubles(f16, {2}, {1.5, 2.25}), [](Value x) { return Sum(x); });
  CHECK(half.dtype() == f16);
  CHECK(half.GetDouble(0) == 3.75);
  // A scalar reduces to itself.
  CHECK(Run(Tensor::Scalar<float>(-2.5f), [](Value x) { return Max(x); }).ToDoubles() ==
        std::vector<double>{-2.5});
}

TEST_CASE("reduce: integer reductions", "[reduce]") {
  Tensor x = Tensor::FromVector<int32_t>({2, 3}, {1, -2, 3, -4, 5, -6});
  Tensor s = Run(x, [](Value v) { return Sum(v, {1}); });
  CHECK(s.dtype() == i32);
  CHECK(s.ToInts() == std::vector<int64_t>{2, -5});
  // 2 / 3 and -5 / 3 truncate toward zero.
  CHECK(Run(x, [](Value v) { return Mean(v, {1}); }).ToInts() == std::vector<int64_t>{0, -1});
  CHECK(Run(x, [](Value v) { return Prod(v, {0}); }).ToInts() ==
        std::vector<int64_t>{-4, -10, -18});
  CHECK(Run(x, [](Value v) { return Max(v); }).ToInts() == std::vector<int64_t>{5});
  CHECK(Run(x, [](Value v) { return Min(v); }).ToInts() == std::vector<int64_t>{-6});
  Tensor big = Tensor::FromVector<int64_t>({2}, {int64_t{1} << 53, 1});  // exact beyond double
  CHECK(Run(big, [](Value v) { return Sum(v); }).ToInts() ==
        std::vector<int64_t>{(int64_t{1} << 53) + 1});
  // Narrow integers wrap: 100 + 100 = 200 -> -56 in i8; 200 + 100 = 300 -> 44 in u8.
  CHECK(Run(Tensor::FromVector<int8_t>({2}, {100, 100}), [](Value v) { return Sum(v); }).ToInts() ==
        std::vector<int64_t>{-56});
  CHECK(Run(Tensor::FromVector<uint8_t>({2}, {200, 100}), [](Value v) {
          return Sum(v);
        }).ToInts() == std::vector<int64_t>{44});
}

TEST_CASE("reduce: Max and Min propagate NaN", "[reduce]") {
  Tensor x = Tensor::FromVector<float>({2, 3}, {1, NAN, 3, 4, 5, 6});
  Tensor mx = Run(x, [](Value v) { return Max(v, {1}); });
  CHECK(std::isnan(mx.GetDouble(0)));
  CHECK(mx.GetDouble(1) == 6);
  Tensor mn = Run(x, [](Value v) { return Min(v, {0}); });
  CHECK(mn.GetDouble(0) == 1);
  CHECK(std::isnan(mn.GetDouble(1)));
  CHECK(mn.GetDouble(2) == 3);
  CHECK(std::isnan(Run(x, [](Value v) { return Sum(v); }).GetDouble(0)));
  // NaN first in the row still wins.
  Tensor first = Tensor::FromVector<float>({3}, {NAN, 7, -1});
  CHECK(std::isnan(Run(first, [](Value v) { return Max(v); }).GetDouble(0)));
  CHECK(std::isnan(Run(first, [](Value v) { return Min(v); }).GetDouble(0)));
}

TEST_CASE("reduce: ArgMax and ArgMin", "[reduce]") {
  // x = [[1, 5, 5], [7, 2, 7]]
  Tensor x = Tensor::FromVector<float>({2, 3}, {1, 5, 5, 7, 2, 7});
  Tensor a = Run(x, [](Value v) { return ArgMax(v, 1); });
  CHECK(a.dtype() == i64);
  CHECK(a.shape() == Shape{2, 1});
  CHECK(a.ToInts() == std::vector<int64_t>{1, 0});
  CHECK(Run(x, [](Value v) { return ArgMax(v, 1, true, true); }).ToInts() ==
        std::vector<int64_t>{2, 2});
  Tensor a0 = Run(x, [](Value v) { return ArgMax(v, 0, false); });
  CHECK(a0.shape() == Shape{3});
  CHECK(a0.ToInts() == std::vector<int64_t>{1, 0, 1});
  CHECK(Run(x, [](Value v) { return ArgMin(v, -1, false); }).ToInts() ==
        std::vector<int64_t>{0, 1});
  CHECK(Run(x, [](Value v) { return ArgMin(v, 0, false); }).ToInts() ==
        std::vector<int64_t>{0, 1, 0});

  // The ONNX examples: default axis 0 on [[2, 1], [3, 10]] -> [[1, 1]]; select_last_index on
  // [[2, 2], [3, 10]] along axis 1 -> [[1], [1]].
  Tensor onnx = Tensor::FromVector<float>({2, 2}, {2, 1, 3, 10});
  Tensor d = Run(onnx, [](Value v) { return ArgMax(v); });
  CHECK(d.shape() == Shape{1, 2});
  CHECK(d.ToInts() == std::vector<int64_t>{1, 1});
  Tensor ties = Tensor::FromVector<float>({2, 2}, {2, 2, 3, 10});
  CHECK(Run(ties, [](Value v) { return ArgMax(v, 1, true, true); }).ToInts() ==
        std::vector<int64_t>{1, 1});
  CHECK(Run(ties, [](Value v) { return ArgMin(v, 1, true, true); }).ToInts() ==
        std::vector<int64_t>{1, 0});

  // Integers, and NaN counts as the extreme (the first one, or the last with select_last_index).
  Tensor xi = Tensor::FromVector<int64_t>({4}, {-3, 9, -8, 9});
  CHECK(Run(xi, [](Value v) { return ArgMax(v, 0, false); }).ToInts() == std::vector<int64_t>{1});
  CHECK(Run(xi, [](Value v) { return ArgMin(v, 0, false); }).ToInts() == std::vector<int64_t>{2});
  Tensor xn = Tensor::FromVector<float>({4}, {1, NAN, 5, NAN});
  CHECK(Run(xn, [](Value v) { return ArgMax(v); }).ToInts() == std::vector<int64_t>{1});
  CHECK(Run(xn, [](Value v) { return ArgMin(v); }).ToInts() == std::vector<int64_t>{1});
  CHECK(Run(xn, [](Value v) { return ArgMax(v, 0, true, true); }).ToInts() ==
        std::vector<int64_t>{3});
}

TEST_CASE("reduce: TopK's values and indices, ties, NaN and every direction", "[reduce]") {
  // x = [[1, 5, 5, 0], [7, 2, 7, 9]]
  Tensor x = Tensor::FromVector<float>({2, 4}, {1, 5, 5, 0, 7, 2, 7, 9});
  auto top = [&](const Tensor& in, int64_t k, int64_t axis, bool largest) {
    GraphBuilder g;
    TopKResult r = TopK(g.Placeholder("x", in.dtype(), in.shape()), k, axis, largest);
    g.Output("values", r.values);
    g.Output("indices", r.indices);
    Result<Graph> graph = g.Build();
    REQUIRE(graph.ok());
    Session session(std::move(*graph));
    auto out = session.Run({{"x", in}}, {"values", "indices"});
    INFO((out.ok() ? std::string("ok") : out.error().ToString()));
    REQUIRE(out.ok());
    return *out;
  };
  std::vector<Tensor> r = top(x, 2, -1, true);
  CHECK(r[0].shape() == Shape{2, 2});
  CHECK(r[0].ToDoubles() == std::vector<double>{5, 5, 9, 7});
  CHECK(r[1].ToInts() == std::vector<int64_t>{1, 2, 3, 0});  // equal values in index order
  r = top(x, 3, 1, false);
  CHECK(r[0].ToDoubles() == std::vector<double>{0, 1, 5, 2, 7, 7});
  CHECK(r[1].ToInts() == std::vector<int64_t>{3, 0, 1, 1, 0, 2});
  r = top(x, 1, 0, true);  // along the rows
  CHECK(r[0].shape() == Shape{1, 4});
  CHECK(r[0].ToDoubles() == std::vector<double>{7, 5, 7, 9});
  CHECK(r[1].ToInts() == std::vector<int64_t>{1, 0, 1, 1});
  CHECK(top(x, 0, 1, true)[0].shape() == Shape{2, 0});
  // NaN above every number; integers exactly.
  Tensor xn = Tensor::FromVector<float>({4}, {1, NAN, 5, -2});
  CHECK(top(xn, 2, 0, true)[1].ToInts() == std::vector<int64_t>{1, 2});
  CHECK(top(xn, 2, 0, false)[1].ToInts() == std::vector<int64_t>{3, 0});
  Tensor xi = Tensor::FromVector<int64_t>({3}, {int64_t{1} << 60, (int64_t{1} << 60) + 1, 3});
  r = top(xi, 1, 0, true);
  CHECK(r[0].ToInts() == std::vector<int64_t>{(int64_t{1} << 60) + 1});
  // k past the axis is refused when the graph is built.
  CHECK_THAT(BuildError(f32, {2, 4}, [](Value v) { return TopK(v, 5).values; }),
             Catch::Contains("k is 5 for 4 elements along axis 1"));
}

TEST_CASE("reduce: inference with unknown dims", "[reduce]") {
  Shape s{-1, 3, -1};
  CHECK(TypeOf(f32, s, [](Value x) { return Sum(x, {1}); }).shape == Shape{-1, -1});
  CHECK(TypeOf(f32, s, [](Value x) { return Mean(x, {1}, true); }).shape == Shape{-1, 1, -1});
  CHECK(TypeOf(f32, s, [](Value x) { return Max(x, {0}); }).shape == Shape{3, -1});
  CHECK(TypeOf(f32, s, [](Value x) { return Min(x); }).shape == Shape{});
  CHECK(TypeOf(f32, s, [](Value x) { return Prod(x, {}, true); }).shape == Shape{1, 1, 1});
  TensorType a = TypeOf(f16, s, [](Value x) { return ArgMax(x, 2, false); });
  CHECK(a.dtype == i64);
  CHECK(a.shape == Shape{-1, 3});
  CHECK(TypeOf(i32, s, [](Value x) { return ArgMin(x, -3); }).shape == Shape{1, 3, -1});
  CHECK(TypeOf(u8, s, [](Value x) { return Sum(x, {2}); }).dtype == u8);
  // Unknown dims may be 0 at run time, so inference does not fail on them.
  CHECK(BuildError(f32, {-1, 3}, [](Value x) { return Max(x, {0}); }).empty());
}

TEST_CASE("reduce: attribute and dtype errors", "[reduce]") {
  CHECK_THAT(BuildError(f32, {2, 3}, [](Value x) { return Sum(x, {2}); }),
             Catch::Contains("attribute 'axes': axis 2 is out of range for rank 2"));
  CHECK_THAT(BuildError(f32, {2, 3}, [](Value x) { return Max(x, {-3}); }),
             Catch::Contains("axis -3 is out of range for rank 2"));
  CHECK_THAT(BuildError(f32, {2, 3},
                        [](Value x) {
                          return Mean(x, {1, -1});
                        }),
             Catch::Contains("axis -1 names dimension 1 more than once"));
  CHECK_THAT(BuildError(f32, {}, [](Value x) { return Sum(x, {0}); }),
             Catch::Contains("axis 0 is out of range for rank 0"));
  CHECK_THAT(BuildError(f32, {2, 3}, [](Value x) { return ArgMax(x, 2); }),
             Catch::Contains("attribute 'axis': axis 2 is out of range for rank 2"));
  CHECK_THAT(BuildError(f32, {}, [](Value x) { return ArgMin(x); }),
             Catch::Contains("needs an input of rank >= 1"));
  CHECK_THAT(BuildError(boolean, {2}, [](Value x) { return Sum(x); }),
             Catch::Contains("has dtype bool, expected one of"));
  CHECK_THAT(BuildError(boolean, {2}, [](Value x) { return ArgMax(x); }),
             Catch::Contains("has dtype bool"));
  // The node is named in the message.
  CHECK_THAT(BuildError(f32, {2, 3}, [](Value x) { return Prod(x, {5}); }),
             Catch::Contains("(Prod"));
}

TEST_CASE("reduce: zero-size reductions", "[reduce]") {
  Tensor empty(f32, {0, 3});
  Shape dyn{-1, 3};
  Result<Tensor> s = RunOn(
      empty, [](Value x) { return Sum(x, {0}); }, dyn);
  REQUIRE(s.ok());
  CHECK(s->ToDoubles() == std::vector<double>{0, 0, 0});
  Result<Tensor> p = RunOn(
      empty, [](Value x) { return Prod(x, {0}); }, dyn);
  REQUIRE(p.ok());
  CHECK(p->ToDoubles() == std::vector<double>{1, 1, 1});
  Result<Tensor> m = RunOn(
      empty, [](Value x) { return Mean(x, {0}); }, dyn);
  REQUIRE(m.ok());
  CHECK(std::isnan(m->GetDouble(0)));
  CHECK(std::isnan(m->GetDouble(2)));
  // Reducing the non-empty axis gives an empty output, which is fine even for Max.
  Result<Tensor> e = RunOn(
      empty, [](Value x) { return Max(x, {1}); }, dyn);
  REQUIRE(e.ok());
  CHECK(e->shape() == Shape{0});

  // Run-time failures (the dim is unknown when the graph is built).
  for (auto f : std::vector<ReduceFn>{
           [](Value x) { return Max(x, {0}); }, [](Value x) { return Min(x); },
           [](Value x) { return ArgMax(x, 0); }, [](Value x) { return ArgMin(x, 0); }}) {
    Result<Tensor> r = RunOn(empty, f, dyn);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.error().message(), Catch::Contains("reduces over zero elements"));
  }
  Result<Tensor> im = RunOn(
      Tensor(i32, {0, 3}), [](Value x) { return Mean(x, {0}); }, dyn);
  REQUIRE_FALSE(im.ok());
  CHECK_THAT(im.error().message(),
             Catch::Contains("Mean of an integer tensor needs at least one element"));
  // A statically known zero dim fails at build time.
  CHECK_THAT(BuildError(f32, {0, 3}, [](Value x) { return Max(x, {0}); }),
             Catch::Contains("reduces over zero elements (input f32[0, 3], axes [0])"));
  CHECK(BuildError(f32, {0, 3}, [](Value x) { return Sum(x, {0}); }).empty());
}
