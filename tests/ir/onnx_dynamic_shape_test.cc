// ONNX import of shape vectors known only at run time (a dynamic batch or sequence dim feeding
// shape arithmetic, as PyTorch exports with dynamic_axes): Reshape, ConstantOfShape, Expand and
// Resize whose shapes depend on the run-time shape, on hand-made models with hand-checked values.
#include <catch2/catch.hpp>

#include "ir/onnx/import.h"
#include "runtime/session.h"
#include "tests/ir/onnx_model_builder.h"
#include "tests/testing/backends.h"

using namespace kiln;
using kiln::testing::Import;
using kiln::testing::OnnxModel;

namespace {

Tensor Run(const Graph& g, const std::string& backend, const Tensor& x,
           const std::string& fetch = "y") {
  Session s(g, {.backend = backend});
  auto out = s.Run({{"x", x}}, {fetch});
  INFO(backend << ": " << (out.ok() ? std::string() : out.error().ToString()));
  REQUIRE(out.ok());
  return out->at(0);
}

Tensor Iota(Shape shape) {
  Tensor t(f32, std::move(shape));
  for (int64_t i = 0; i < t.num_elements(); ++i) t.SetDouble(i, static_cast<double>(i));
  return t;
}

// n = Shape(x)[0] as a 1-element vector (Shape -> Gather(0) -> Unsqueeze), node outputs "n1".
void BatchDim(OnnxModel& m) {
  m.Node("Shape", {"x"}, {"s"});
  OnnxModel::AttrTensor(m.Node("Constant", {}, {"zero"}), "value", Tensor::Scalar<int64_t>(0));
  m.Node("Gather", {"s", "zero"}, {"n"});
  OnnxModel::AttrTensor(m.Node("Constant", {}, {"axes0"}), "value",
                        Tensor::FromVector<int64_t>({1}, {0}));
  m.Node("Unsqueeze", {"n", "axes0"}, {"n1"});
}

void Const(OnnxModel& m, const std::string& name, const Tensor& t) {
  OnnxModel::AttrTensor(m.Node("Constant", {}, {name}), "value", t);
}

}  // namespace

TEST_CASE("ONNX dynamic shapes: Reshape to [2 * batch, -1]", "[onnx]") {
  // x.view(x.size(0) * 2, -1): the first entry is computed at run time, the -1 is inferred.
  OnnxModel m;
  m.Input("x", 1, {-1, 4}).Output("y");
  BatchDim(m);
  Const(m, "two", Tensor::FromVector<int64_t>({1}, {2}));
  m.Node("Mul", {"n1", "two"}, {"n2"});
  Const(m, "minus1", Tensor::FromVector<int64_t>({1}, {-1}));
  OnnxModel::AttrInt(m.Node("Concat", {"n2", "minus1"}, {"shape"}), "axis", 0);
  m.Node("Reshape", {"x", "shape"}, {"y"});
  Graph g = Import(m);
  for (const std::string& backend : kiln::testing::AvailableBackends()) {
    // [3, 4] -> [6, 2], elements in the same (row-major) order.
    Tensor y = Run(g, backend, Iota(Shape{3, 4}));
    REQUIRE(y.shape() == Shape{6, 2});
    for (int64_t i = 0; i < 12; ++i) CHECK(y.GetDouble(i) == i);
    CHECK(Run(g, backend, Iota(Shape{1, 4})).shape() == Shape{2, 2});
  }
}

TEST_CASE("ONNX dynamic shapes: Reshape with two run-time entries and a -1", "[onnx]") {
  // [batch, seq, 6] -> [batch * 3, seq * 2, -1] (attention's view(b * heads, s, d) pattern): two
  // entries unknown at import, so the reshape is realized at run time.
  OnnxModel m;
  m.Input("x", 1, {-1, -1, 6}).Output("y");
  BatchDim(m);
  Const(m, "one", Tensor::Scalar<int64_t>(1));
  m.Node("Gather", {"s", "one"}, {"seq"});
  m.Node("Unsqueeze", {"seq", "axes0"}, {"seq1"});
  Const(m, "two", Tensor::FromVector<int64_t>({1}, {2}));
  Const(m, "three", Tensor::FromVector<int64_t>({1}, {3}));
  m.Node("Mul", {"n1", "three"}, {"n3"});
  m.Node("Mul", {"seq1", "two"}, {"seq2"});
  Const(m, "minus1", Tensor::FromVector<int64_t>({1}, {-1}));
  OnnxModel::AttrInt(m.Node("Concat", {"n3", "seq2", "minus1"}, {"shape"}), "axis", 0);
  m.Node("Reshape", {"x", "shape"}, {"y"});
  Graph g = Import(m);
  for (const std::string& backend : kiln::testing::AvailableBackends()) {
    // [2, 5, 6] (60 elements) -> [6, 10, 1].
    Tensor y = Run(g, backend, Iota(Shape{2, 5, 6}));
    REQUIRE(y.shape() == Shape{6, 10, 1});
    CHECK(y.GetDouble(37) == 37);
    // The same graph at other run-time sizes: [1, 1, 6] -> [3, 2, 1].
    CHECK(Run(g, backend, Iota(Shape{1, 1, 6})).shape() == Shape{3, 2, 1});
  }
}

TEST_CASE("ONNX dynamic shapes: ConstantOfShape [2, batch] and Expand to [batch, 3]", "[onnx]") {
  OnnxModel m;
  m.Input("x", 1, {-1}).Output("c").Output("e");
  BatchDim(m);
  Const(m, "two", Tensor::FromVector<int64_t>({1}, {2}));
  OnnxModel::AttrInt(m.Node("Concat", {"two", "n1"}, {"cshape"}), "axis", 0);
  OnnxModel::AttrTensor(m.Node("ConstantOfShape", {"cshape"}, {"c"}), "value",
                        Tensor::FromVector<float>({1}, {1.5f}));
  Const(m, "three", Tensor::FromVector<int64_t>({1}, {3}));
  OnnxModel::AttrInt(m.Node("Concat", {"n1", "three"}, {"eshape"}), "axis", 0);
  Const(m, "row", Tensor::FromVector<float>({1, 3}, {1, 2, 3}));
  m.Node("Expand", {"row", "eshape"}, {"e"});
  Graph g = Import(m);
  for (const std::string& backend : kiln::testing::AvailableBackends()) {
    Tensor c = Run(g, backend, Iota(Shape{4}), "c");
    REQUIRE(c.shape() == Shape{2, 4});
    CHECK(c.dtype() == f32);
    for (int64_t i = 0; i < 8; ++i) CHECK(c.GetDouble(i) == 1.5);
    Tensor e = Run(g, backend, Iota(Shape{2}), "e");
    REQUIRE(e.shape() == Shape{2, 3});
    CHECK(e.ToDoubles() == std::vector<double>{1, 2, 3, 1, 2, 3});
  }
}

TEST_CASE("ONNX dynamic shapes: Resize to sizes [batch, C, 4, 4]", "[onnx]") {
  // interpolate(x, size=(4, 4)) with a dynamic batch: sizes = Concat(Shape(x)[0:2], [4, 4]).
  OnnxModel m;
  m.Input("x", 1, {-1, 1, 2, 2}).Output("y");
  m.Node("Shape", {"x"}, {"s"});
  Const(m, "b0", Tensor::FromVector<int64_t>({1}, {0}));
  Const(m, "b2", Tensor::FromVector<int64_t>({1}, {2}));
  m.Node("Slice", {"s", "b0", "b2"}, {"nc"});
  Const(m, "hw", Tensor::FromVector<int64_t>({2}, {4, 4}));
  OnnxModel::AttrInt(m.Node("Concat", {"nc", "hw"}, {"sizes"}), "axis", 0);
  m.Node("Resize", {"x", "", "", "sizes"}, {"y"});  // nearest, half_pixel, round_prefer_floor
  Graph g = Import(m);
  for (const std::string& backend : kiln::testing::AvailableBackends()) {
    Tensor y = Run(g, backend, Iota(Shape{3, 1, 2, 2}));
    REQUIRE(y.shape() == Shape{3, 1, 4, 4});
    // Each input pixel becomes a 2x2 block: row 0 of sample 1 is [4, 4, 5, 5].
    CHECK(y.GetDouble(16) == 4);
    CHECK(y.GetDouble(17) == 4);
    CHECK(y.GetDouble(18) == 5);
    CHECK(y.GetDouble(31) == 7);
  }
  // A resized dim whose size is only known at run time (the width becomes the batch size): the
  // node is converted once the plan's shapes are known (a Deferred node).
  OnnxModel late;
  late.Input("x", 1, {-1, 1, 2, 2}).Output("y");
  BatchDim(late);
  Const(late, "rest", Tensor::FromVector<int64_t>({3}, {1, 1, 4}));
  OnnxModel::AttrInt(late.Node("Concat", {"rest", "n1"}, {"sizes"}), "axis", 0);
  late.Node("Resize", {"x", "", "", "sizes"}, {"y"});
  Graph deferred = Import(late);
  const Tensor x = Iota(Shape{3, 1, 2, 2});
  const Tensor want = Run(deferred, "reference", x);
  REQUIRE(want.shape() == Shape{1, 1, 4, 3});
  // The batch of 3 resized to 1 keeps its middle sample ([4 5] and [6 7]), rows 0,0,1,1 at
  // columns 0,0,1 (nearest, half_pixel).
  CHECK(want.ToDoubles() == std::vector<double>{4, 4, 5, 4, 4, 5, 6, 6, 7, 6, 6, 7});
  for (const std::string& backend : kiln::testing::AvailableBackends())
    CHECK(Run(deferred, backend, x).ToDoubles() == want.ToDoubles());
}
