// ONNX models that contradict themselves are refused at import with one clear error: a Conv whose
// kernel_shape disagrees with its weights, a Concat with an input renamed '', a graph output
// declared with another element type or shape than the graph computes. A constant Range longer
// than the importer folds is computed whole, not cut.
#include <catch2/catch.hpp>

#include "ir/onnx/import.h"
#include "runtime/session.h"
#include "tests/ir/onnx_model_builder.h"

using namespace kiln;
using kiln::testing::OnnxModel;

namespace {

Error ImportError(OnnxModel& m) {
  Result<Graph> g = ImportOnnxFromBytes(m.Bytes(), "", "m.onnx");
  REQUIRE_FALSE(g.ok());
  return g.error();
}

}  // namespace

TEST_CASE("ONNX import: a Conv's kernel_shape must agree with its weights", "[onnx][bad-input]") {
  for (std::vector<int64_t> kernel : {std::vector<int64_t>{3, 3}, std::vector<int64_t>{5, 5}}) {
    OnnxModel m;
    m.Input("x", 1, {1, 2, 8, 8}).Output("y");
    m.Initializer("w", Tensor(f32, Shape{4, 2, 3, 3}));
    OnnxModel::AttrInts(m.Node("Conv", {"x", "w"}, {"y"}, "conv"), "kernel_shape", kernel);
    Result<Graph> g = ImportOnnxFromBytes(m.Bytes(), "", "m.onnx");
    if (kernel[0] == 3) {
      CHECK(g.ok());
      continue;
    }
    REQUIRE_FALSE(g.ok());
    CHECK_THAT(g.error().message(), Catch::Contains("conv") &&
                                        Catch::Contains("kernel_shape [5, 5] contradicts the "
                                                        "weights, whose spatial dims are [3, 3]"));
  }
}

TEST_CASE("ONNX import: a Concat input renamed '' is refused, not dropped", "[onnx][bad-input]") {
  OnnxModel m;
  m.Input("a", 1, {2}).Input("b", 1, {2}).Output("c");
  OnnxModel::AttrInt(m.Node("Concat", {"a", "", "b"}, {"c"}, "cat"), "axis", 0);
  CHECK_THAT(ImportError(m).message(),
             Catch::Contains("cat") &&
                 Catch::Contains("input 1 is empty (''), but every input of Concat is required"));
}

TEST_CASE("ONNX import: a graph output's declared type must be what the graph computes",
          "[onnx][bad-input]") {
  auto model = [](int elem, const std::vector<int64_t>& dims) {
    OnnxModel m;
    m.Input("a", 1, {-1, 3}).Input("b", 1, {-1, 3}).Output("c", elem, dims);
    m.Node("Add", {"a", "b"}, {"c"}, "add");
    return m;
  };
  for (const std::vector<int64_t>& fine : {std::vector<int64_t>{-1, 3}, {5, 3}, {-1, -1}}) {
    OnnxModel m = model(1, fine);
    CHECK(ImportOnnxFromBytes(m.Bytes(), "", "m.onnx").ok());
  }
  OnnxModel wrong_dim = model(1, {-1, 4});
  CHECK_THAT(ImportError(wrong_dim).message(),
             Catch::Contains("graph output 'c' is declared of shape [-1, 4] but the graph computes "
                             "f32[-1, 3]"));
  OnnxModel wrong_rank = model(1, {3});
  CHECK_THAT(ImportError(wrong_rank).message(), Catch::Contains("is declared of shape [3]"));
  OnnxModel wrong_type = model(7, {-1, 3});  // INT64
  CHECK_THAT(ImportError(wrong_type).message(),
             Catch::Contains("graph output 'c' is declared of element type"));
}

TEST_CASE("ONNX import: a constant Range longer than 4096 elements is computed whole",
          "[onnx][bad-input]") {
  for (const auto& [start, limit, delta] : {std::tuple<int64_t, int64_t, int64_t>{0, 5000, 1},
                                            {10, -9990, -2},
                                            {0, 4096, 1},
                                            {7, 7, 1},
                                            {3, 0, 1}}) {
    INFO(start << " to " << limit << " by " << delta);
    OnnxModel m;
    m.Output("r", 7);
    m.Initializer("s", Tensor::Scalar<int64_t>(start));
    m.Initializer("l", Tensor::Scalar<int64_t>(limit));
    m.Initializer("d", Tensor::Scalar<int64_t>(delta));
    m.Node("Range", {"s", "l", "d"}, {"r"});
    Result<Graph> g = ImportOnnxFromBytes(m.Bytes(), "", "m.onnx");
    REQUIRE(g.ok());
    Session s(*g, SessionOptions{.backend = "reference"});
    Result<std::vector<Tensor>> r = s.Run({}, {"r"});
    REQUIRE(r.ok());
    const int64_t n = std::max<int64_t>(0, (limit - start + delta - (delta > 0 ? 1 : -1)) / delta);
    REQUIRE(r->at(0).num_elements() == n);
    for (int64_t i = 0; i < n; ++i) {
      INFO(i);
      REQUIRE(r->at(0).GetInt(i) == start + i * delta);
    }
  }
}
