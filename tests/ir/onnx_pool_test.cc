// ONNX MaxPool and AveragePool beyond kiln's 2-D ops (ir/onnx/convert_pool.cc): 3-D windows,
// dilations, ceil mode and MaxPool's Indices, against a direct loop over every window.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "runtime/session.h"
#include "tests/ir/onnx_model_builder.h"

using namespace kiln;
using testing::OnnxModel;

namespace {

struct Pool3D {
  std::vector<int64_t> kernel, strides, dilations, pads;  // pads: begins, then ends
  bool ceil = false, include_pad = false;
};

// Max (with the first maximum's flat index) or average over every window of x [1, 1, D, H, W],
// computed directly.
void DirectPool(const Tensor& x, const Pool3D& p, bool max, std::vector<double>& values,
                std::vector<int64_t>& indices) {
  const int64_t in[3] = {x.shape()[2], x.shape()[3], x.shape()[4]};
  int64_t out[3];
  for (int i = 0; i < 3; ++i) {
    const int64_t extent = (p.kernel[i] - 1) * p.dilations[i] + 1;
    const int64_t span = in[i] + p.pads[i] + p.pads[3 + i] - extent;
    out[i] = (p.ceil ? (span + p.strides[i] - 1) / p.strides[i] : span / p.strides[i]) + 1;
    if (p.ceil && (out[i] - 1) * p.strides[i] >= in[i] + p.pads[i]) --out[i];
  }
  for (int64_t a = 0; a < out[0]; ++a)
    for (int64_t b = 0; b < out[1]; ++b)
      for (int64_t c = 0; c < out[2]; ++c) {
        double best = -std::numeric_limits<double>::infinity(), sum = 0;
        int64_t best_at = -1, count = 0, padded = 0;
        for (int64_t i = 0; i < p.kernel[0]; ++i)
          for (int64_t j = 0; j < p.kernel[1]; ++j)
            for (int64_t k = 0; k < p.kernel[2]; ++k) {
              const int64_t at[3] = {a * p.strides[0] + i * p.dilations[0] - p.pads[0],
                                     b * p.strides[1] + j * p.dilations[1] - p.pads[1],
                                     c * p.strides[2] + k * p.dilations[2] - p.pads[2]};
              bool inside = true, in_pads = true;
              for (int d = 0; d < 3; ++d) {
                inside = inside && at[d] >= 0 && at[d] < in[d];
                in_pads = in_pads && at[d] < in[d] + p.pads[3 + d];
              }
              padded += in_pads;
              if (!inside) continue;
              const int64_t flat = (at[0] * in[1] + at[1]) * in[2] + at[2];
              const double v = x.GetDouble(flat);
              sum += v;
              ++count;
              if (v > best) best = v, best_at = flat;
            }
        values.push_back(max ? best : sum / static_cast<double>(p.include_pad ? padded : count));
        indices.push_back(best_at);
      }
}

std::vector<Tensor> RunPool(const Tensor& x, const Pool3D& p, bool max) {
  OnnxModel m;
  m.Input("x", 1, x.shape().dims()).Output("y");
  std::vector<std::string> outputs = {"y"};
  if (max) {
    m.Output("i", 7);
    outputs.push_back("i");
  }
  onnx::NodeProto* node = m.Node(max ? "MaxPool" : "AveragePool", {"x"}, outputs);
  OnnxModel::AttrInts(node, "kernel_shape", p.kernel);
  OnnxModel::AttrInts(node, "strides", p.strides);
  OnnxModel::AttrInts(node, "pads", p.pads);
  OnnxModel::AttrInt(node, "ceil_mode", p.ceil);
  if (max)
    OnnxModel::AttrInts(node, "dilations", p.dilations);
  else
    OnnxModel::AttrInt(node, "count_include_pad", p.include_pad);
  Session s(testing::Import(m), {.backend = "reference"});
  std::vector<TensorName> fetches(outputs.begin(), outputs.end());
  auto out = s.Run({{"x", x}}, fetches);
  INFO((out.ok() ? std::string() : out.error().ToString()));
  REQUIRE(out.ok());
  return *out;
}

}  // namespace

TEST_CASE("ONNX 3-D pooling, dilations, ceil mode and Indices match a direct loop", "[onnx]") {
  std::vector<float> v(4 * 5 * 6);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(std::sin(1.7 * i) * 10);
  Tensor x = Tensor::FromVector<float>({1, 1, 4, 5, 6}, v);
  const std::vector<Pool3D> cases = {
      {{2, 2, 2}, {1, 1, 1}, {1, 1, 1}, {0, 0, 0, 0, 0, 0}},
      {{2, 3, 2}, {2, 1, 2}, {1, 1, 1}, {1, 0, 1, 0, 1, 1}, true},
      {{2, 2, 3}, {1, 2, 2}, {2, 1, 2}, {0, 1, 1, 1, 0, 1}, false, true},
      {{3, 2, 2}, {2, 2, 2}, {1, 2, 1}, {1, 1, 0, 1, 1, 1}, true, true},
  };
  for (const Pool3D& p : cases) {
    for (bool max : {true, false}) {
      Pool3D q = p;
      if (!max) q.dilations = {1, 1, 1};  // AveragePool has no dilations before opset 19
      std::vector<double> want;
      std::vector<int64_t> want_at;
      DirectPool(x, q, max, want, want_at);
      std::vector<Tensor> got = RunPool(x, q, max);
      REQUIRE(got[0].num_elements() == static_cast<int64_t>(want.size()));
      for (size_t i = 0; i < want.size(); ++i) CHECK(got[0].GetDouble(i) == Approx(want[i]));
      if (max) CHECK(got[1].ToInts() == want_at);
    }
  }
}

TEST_CASE("ONNX 3-D AveragePool whose window does not fit is a clear error", "[onnx]") {
  OnnxModel m;
  m.Input("x", 1, {1, 1, 3, 3, 3}).Output("y");
  OnnxModel::AttrInts(m.Node("AveragePool", {"x"}, {"y"}, "pool"), "kernel_shape", {2, 5, 2});
  Result<Graph> g = ImportOnnxFromBytes(m.Bytes(), "", "pool.onnx");
  REQUIRE_FALSE(g.ok());
  CHECK_THAT(g.error().message(), Catch::Contains("node 'pool' (AveragePool): the window does not "
                                                  "fit the input f32[1, 1, 3, 3, 3]"));
}

TEST_CASE("ONNX MaxPool with Indices is one op over any batch, in either storage order", "[onnx]") {
  // A 26 x 5 window: one node, not one per window position. The batch is unknown at import.
  auto run = [](int64_t storage_order, int* nodes) {
    OnnxModel m;
    m.Input("x", 1, {-1, 2, 9, 7}).Output("y").Output("i", 7);
    onnx::NodeProto* node = m.Node("MaxPool", {"x"}, {"y", "i"});
    OnnxModel::AttrInts(node, "kernel_shape", {6, 5});
    OnnxModel::AttrInts(node, "strides", {2, 1});
    OnnxModel::AttrInts(node, "dilations", {1, 2});
    OnnxModel::AttrInts(node, "pads", {2, 3, 3, 20});
    OnnxModel::AttrInt(node, "storage_order", storage_order);
    Graph graph = testing::Import(m);
    *nodes = static_cast<int>(graph.nodes().size());
    std::vector<float> v(3 * 2 * 9 * 7);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(std::cos(2.3 * i) * 10);
    Session s(std::move(graph), {.backend = "reference"});
    auto out = s.Run({{"x", Tensor::FromVector<float>({3, 2, 9, 7}, v)}}, {"y", "i"});
    INFO((out.ok() ? std::string() : out.error().ToString()));
    REQUIRE(out.ok());
    return *out;
  };
  int row_nodes = 0, column_nodes = 0;
  const std::vector<Tensor> row = run(0, &row_nodes);
  const std::vector<Tensor> column = run(1, &column_nodes);
  CHECK(row_nodes == 2);  // the input and MaxPoolWithArgmax
  CHECK(column_nodes < 40);
  CHECK(row[0].ToDoubles() == column[0].ToDoubles());
  // Row-major r = plane * 63 + h * 7 + w is w * 9 + h in column-major order; -1 stays.
  const std::vector<int64_t> r = row[1].ToInts(), c = column[1].ToInts();
  REQUIRE(r.size() == c.size());
  int empty = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    INFO(i);
    if (r[i] < 0) {
      ++empty;
      CHECK(c[i] == -1);
      continue;
    }
    const int64_t plane = r[i] / 63, h = r[i] % 63 / 7, w = r[i] % 7;
    CHECK(c[i] == plane * 63 + w * 9 + h);
  }
  CHECK(empty > 0);  // the wide end padding leaves windows with no element of x
}

TEST_CASE("ONNX MaxPool builds no table: a huge declared image, a 64^3 window", "[onnx]") {
  // Indices over a declared 2^20 x 2^20 image import (a run would need the memory it declares).
  OnnxModel huge;
  huge.Input("x", 1, {1, 1, 1 << 20, 1 << 20}).Output("y").Output("i", 7);
  OnnxModel::AttrInts(huge.Node("MaxPool", {"x"}, {"y", "i"}), "kernel_shape", {2, 2});
  CHECK(testing::Import(huge).nodes().size() == 2);
  // 64^3 windows over a 1 x 1 x 1 image padded by 63 all hold its one element.
  OnnxModel cube;
  cube.Input("x", 1, {1, 1, 1, 1, 1}).Output("y").Output("i", 7);
  onnx::NodeProto* node = cube.Node("MaxPool", {"x"}, {"y", "i"});
  OnnxModel::AttrInts(node, "kernel_shape", {64, 64, 64});
  OnnxModel::AttrInts(node, "pads", {63, 63, 63, 63, 63, 63});
  Session s(testing::Import(cube), {.backend = "reference"});
  auto out = s.Run({{"x", Tensor::FromVector<float>({1, 1, 1, 1, 1}, {2.5f})}}, {"y", "i"});
  REQUIRE(out.ok());
  CHECK((*out)[0].shape() == Shape{1, 1, 64, 64, 64});
  const std::vector<double> y = (*out)[0].ToDoubles();
  CHECK(std::all_of(y.begin(), y.end(), [](double v) { return v == 2.5; }));
  const std::vector<int64_t> at = (*out)[1].ToInts();
  CHECK(std::all_of(at.begin(), at.end(), [](int64_t i) { return i == 0; }));
}

TEST_CASE("ONNX MaxPool with column-major Indices over an empty input is a clear error", "[onnx]") {
  OnnxModel m;
  m.Input("x", 1, {1, 1, 0, 3}).Output("y").Output("i", 7);
  onnx::NodeProto* node = m.Node("MaxPool", {"x"}, {"y", "i"}, "pool");
  OnnxModel::AttrInts(node, "kernel_shape", {1, 2});
  OnnxModel::AttrInt(node, "storage_order", 1);
  Result<Graph> g = ImportOnnxFromBytes(m.Bytes(), "", "pool.onnx");
  REQUIRE_FALSE(g.ok());
  CHECK_THAT(g.error().message(),
             Catch::Contains("node 'pool' (MaxPool): cannot pool an empty input f32[1, 1, 0, 3]"));
}
