// Sequences and optionals of tensors (ir/ops/sequence.h) through whole graphs on every backend:
// fed, built, taken apart, carried by a While loop and fetched; each misuse is an error naming
// the node, never a crash.
#include "ir/ops/sequence.h"

#include <catch2/catch.hpp>

#include "ir/io/npy.h"
#include "ir/onnx/export.h"
#include "ir/ops/array.h"
#include "ir/ops/control.h"
#include "ir/ops/math.h"
#include "ir/serialize.h"
#include "runtime/session.h"
#include "tests/testing/backends.h"
#include "tests/testing/temp_path.h"

using namespace kiln;
using Floats = std::vector<float>;

namespace {

Tensor Seq(std::vector<Tensor> elements) {
  Result<Tensor> s = Tensor::Sequence(f32, std::move(elements));
  REQUIRE(s.ok());
  return *s;
}

Tensor F(std::vector<int64_t> dims, Floats values) {
  return Tensor::FromVector<float>(Shape(std::move(dims)), values);
}

}  // namespace

TEST_CASE("Sequences are fed, built, read and fetched on every backend", "[runtime]") {
  GraphBuilder g;
  Value s = g.Placeholder("s", seq, {});
  Value x = g.Placeholder("x", f32, {-1});
  Value at = g.Placeholder("at", i64, {});
  Value grown = SequenceInsert(s, x, g.Constant(Tensor::Scalar<int64_t>(0)));
  g.Output("grown", grown);
  g.Output("length", SequenceLength(grown));
  g.Output("element", SequenceAt(grown, at, f32, Shape{-1}) * 2.0);
  g.Output("erased", SequenceErase(grown));
  g.Output("built", SequenceConstruct({x, x + 1.0}));
  Value maybe = OptionalOf(x);
  g.Output("has", OptionalHasElement(maybe));
  g.Output("value", OptionalGetElement(maybe, f32, Shape{-1}));
  g.Output("none", OptionalHasElement(OptionalNone(g, f32)));
  Result<Graph> graph = g.Build();
  REQUIRE(graph.ok());
  // The container dtypes survive the text form and the binary form.
  Result<Graph> loaded = GraphFromText(GraphToText(*graph));
  REQUIRE(loaded.ok());
  Result<Graph> reloaded = GraphFromBinary(*GraphToBinary(*loaded));
  REQUIRE(reloaded.ok());

  const Tensor fed = Seq({F({2}, {1, 2}), F({3}, {3, 4, 5})});
  for (const std::string& backend : testing::AvailableBackends()) {
    INFO(backend);
    Session session(*reloaded, {.backend = backend});
    auto out =
        session.Run({{"s", fed}, {"x", F({1}, {9})}, {"at", Tensor::Scalar<int64_t>(-1)}},
                    {"grown", "length", "element", "erased", "built", "has", "value", "none"});
    INFO((out.ok() ? std::string() : out.error().ToString()));
    REQUIRE(out.ok());
    const Tensor& grown_out = out->at(0);
    REQUIRE(grown_out.dtype() == seq);
    REQUIRE(grown_out.elements().size() == 3);
    CHECK(grown_out.elements()[0].BitwiseEquals(F({1}, {9})));
    CHECK(grown_out.elements()[2].BitwiseEquals(F({3}, {3, 4, 5})));
    CHECK(out->at(1).GetInt(0) == 3);
    CHECK(out->at(2).BitwiseEquals(F({3}, {6, 8, 10})));
    REQUIRE(out->at(3).elements().size() == 2);
    CHECK(out->at(3).elements()[1].BitwiseEquals(F({2}, {1, 2})));
    REQUIRE(out->at(4).elements().size() == 2);
    CHECK(out->at(4).elements()[1].BitwiseEquals(F({1}, {10})));
    CHECK(out->at(5).GetInt(0) == 1);
    CHECK(out->at(6).BitwiseEquals(F({1}, {9})));
    CHECK(out->at(7).GetInt(0) == 0);
    // The fed sequence is unchanged: containers are immutable.
    CHECK(fed.elements().size() == 2);
  }
}

TEST_CASE("A While loop carries a growing sequence", "[runtime]") {
  GraphBuilder g;
  Value n = g.Placeholder("n", i64, {});
  Value start = SequenceEmpty(g, f32);
  std::vector<Value> finals = WhileLoop(
      {g.Constant(Tensor::Scalar<int64_t>(0)), n, start},
      [](const std::vector<Value>& v) { return Less(v[0], v[1]); },
      [](const std::vector<Value>& v) {
        Value row = Cast(Reshape(v[0], {1}), f32);
        return std::vector<Value>{v[0] + 1.0, v[1], SequenceInsert(v[2], row)};
      });
  REQUIRE(finals.size() == 3);
  g.Output("rows", finals[2]);
  Result<Graph> graph = g.Build();
  INFO((graph.ok() ? std::string() : graph.error().ToString()));
  REQUIRE(graph.ok());
  for (const std::string& backend : testing::AvailableBackends()) {
    INFO(backend);
    Session session(*graph, {.backend = backend});
    auto out = session.Run({{"n", Tensor::Scalar<int64_t>(4)}}, {"rows"});
    INFO((out.ok() ? std::string() : out.error().ToString()));
    REQUIRE(out.ok());
    REQUIRE(out->at(0).elements().size() == 4);
    for (int i = 0; i < 4; ++i)
      CHECK(out->at(0).elements()[i].BitwiseEquals(F({1}, {static_cast<float>(i)})));
  }
}

TEST_CASE("Misused sequences and optionals are errors naming the node", "[runtime]") {
  GraphBuilder g;
  Value s = g.Placeholder("s", seq, {});
  Value at = g.Placeholder("at", i64, {});
  g.Output("element", SequenceAt(s, at, f32, Shape{2}));
  g.Output("value", OptionalGetElement(OptionalNone(g, f32), f32, Shape{}));
  Result<Graph> graph = g.Build();
  REQUIRE(graph.ok());
  const Tensor two = Seq({F({2}, {1, 2}), F({3}, {3, 4, 5})});
  for (const std::string& backend : testing::AvailableBackends()) {
    INFO(backend);
    Session session(*graph, {.backend = backend});
    auto run = [&](const Tensor& fed, int64_t position, const std::string& fetch) {
      return session.Run({{"s", fed}, {"at", Tensor::Scalar<int64_t>(position)}}, {fetch});
    };
    auto out_of_range = run(two, 2, "element");
    REQUIRE_FALSE(out_of_range.ok());
    CHECK_THAT(out_of_range.error().message(),
               Catch::Contains("SequenceAt") && Catch::Contains("position 2 is out of range"));
    auto wrong_shape = run(two, 1, "element");
    REQUIRE_FALSE(wrong_shape.ok());
    CHECK_THAT(wrong_shape.error().message(),
               Catch::Contains("f32[3]") && Catch::Contains("declares f32[2]"));
    auto empty = run(Seq({}), 0, "element");
    REQUIRE_FALSE(empty.ok());
    CHECK_THAT(empty.error().message(), Catch::Contains("empty sequence"));
    auto none = run(two, 0, "value");
    REQUIRE_FALSE(none.ok());
    CHECK_THAT(none.error().message(),
               Catch::Contains("OptionalGetElement") && Catch::Contains("holds no value"));
    auto tensor_fed = run(F({1}, {1}), 0, "element");
    REQUIRE_FALSE(tensor_fed.ok());
    CHECK_THAT(tensor_fed.error().message(), Catch::Contains("expects seq"));
  }
}

TEST_CASE("Containers are refused where a tensor is required", "[runtime]") {
  const Tensor s = Seq({F({1}, {1})});
  // Mixed element dtypes.
  CHECK_FALSE(Tensor::Sequence(f32, {F({1}, {1}), Tensor::Scalar<int64_t>(1)}).ok());
  // No bytes of their own: not a Tensor(dtype, shape), not a constant, not a .npy file.
  CHECK_FALSE(Tensor::Create(seq, {}).ok());
  GraphBuilder g;
  g.Constant(s);
  CHECK_FALSE(g.Build().ok());
  CHECK_FALSE(WriteNpy(testing::TempPath("seq.npy"), s).ok());
  // An op that takes tensors refuses a sequence at build time.
  GraphBuilder h;
  Value x = h.Placeholder("s", seq, {});
  h.Output("y", x + 1.0);
  Result<Graph> refused = h.Build();
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.error().message(), Catch::Contains("seq"));
  // Only ops that make containers give them: a Cast to seq (a hostile graph file) is refused.
  GraphBuilder c;
  AttrMap to;
  to.Set("to", seq);
  c.AddOp("Cast", {c.Placeholder("x", f32, {2})}, to, SourceLocation::current());
  Result<Graph> cast = c.Build();
  REQUIRE_FALSE(cast.ok());
  CHECK_THAT(cast.error().message(), Catch::Contains("does not give"));
  // A sequence placeholder is a scalar.
  GraphBuilder k;
  k.Placeholder("s", seq, {2});
  CHECK_FALSE(k.Build().ok());
  // ONNX export names the container ops it cannot write (their element types are unknown).
  GraphBuilder e;
  e.Output("n", SequenceLength(e.Placeholder("s", seq, {})));
  Result<Graph> exported = e.Build();
  REQUIRE(exported.ok());
  Result<std::string> onnx = ExportOnnxToBytes(*exported);
  REQUIRE_FALSE(onnx.ok());
  CHECK_THAT(onnx.error().message(), Catch::Contains("SequenceLength"));
}
