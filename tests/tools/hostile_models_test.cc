// Hostile models: ONNX graphs of the classes of TensorFlow's security advisories (shapes that
// overflow or contradict, indices out of range, zero divisors, strides, kernels, steps and sizes of
// zero or below, empty reductions, truncated tensor data), each run by `kiln run` as a user would,
// on the reference backend and on every compiled one. Each must give the right answer, or exit 1
// with one line naming what is wrong; never a signal, never a silently wrong result.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>

#include "ir/io/npy.h"
#include "tests/ir/onnx_model_builder.h"
#include "tests/testing/differential.h"
#include "tests/testing/run_command.h"
#include "tests/testing/temp_path.h"

namespace kiln {
namespace {

using testing::CommandResult;
using testing::OnnxModel;

constexpr int kFloat = 1, kInt32 = 6, kInt64 = 7;

struct Hostile {
  std::string name;
  std::function<void(OnnxModel&)> build;  // a graph with output "y"
  std::vector<std::pair<std::string, Tensor>> feeds;
  // Either the error (a substring of the one line) or the right output.
  std::string error;
  std::optional<Tensor> expected;
};

Tensor F32(Shape shape, std::vector<float> values) {
  return Tensor::FromVector<float>(shape, values);
}
Tensor I64(Shape shape, std::vector<int64_t> values) {
  return Tensor::FromVector<int64_t>(shape, values);
}
Tensor I32(Shape shape, std::vector<int32_t> values) {
  return Tensor::FromVector<int32_t>(shape, values);
}

std::vector<Hostile> Cases() {
  using M = OnnxModel;
  std::vector<Hostile> cases;
  auto add = [&](Hostile h) { cases.push_back(std::move(h)); };
  const Tensor x4 = F32({2, 2}, {1, 2, 3, 4});
  add({"reshape to another element count",
       [](M& m) {
         m.Input("x", kFloat, {2, 2}).Output("y");
         m.Initializer("s", Tensor::FromVector<int64_t>({2}, {3, -1}));
         m.Node("Reshape", {"x", "s"}, {"y"});
       },
       {{"x", x4}},
       "cannot reshape [2, 2] to [3, -1]",
       std::nullopt});
  add({"reshape whose dims overflow",
       [](M& m) {
         m.Input("x", kFloat, {2, 2}).Output("y");
         m.Initializer("s",
                       Tensor::FromVector<int64_t>({3}, {int64_t{1} << 40, int64_t{1} << 40, 4}));
         m.Node("Reshape", {"x", "s"}, {"y"});
       },
       {{"x", x4}},
       "overflows int64",
       std::nullopt});
  add({"tile into 2^80 elements",
       [](M& m) {
         m.Input("x", kFloat, {2, 2}).Output("y");
         m.Initializer("r", Tensor::FromVector<int64_t>({2}, {int64_t{1} << 40, int64_t{1} << 38}));
         m.Node("Tile", {"x", "r"}, {"y"});
       },
       {{"x", x4}},
       "would hold more than 2^63 bytes",
       std::nullopt});
  add({"tile into 2^42 elements (16 TiB)",
       [](M& m) {
         m.Input("x", kFloat, {2, 2}).Output("y");
         m.Initializer("r", Tensor::FromVector<int64_t>({2}, {int64_t{1} << 20, int64_t{1} << 20}));
         m.Node("Tile", {"x", "r"}, {"y"});
       },
       {{"x", x4}},
       "16.0 TiB",
       std::nullopt});
  add({"gather index past the end",
       [](M& m) {
         m.Input("x", kFloat, {2, 2}).Input("i", kInt64, {1}).Output("y");
         m.Node("Gather", {"x", "i"}, {"y"});
       },
       {{"x", x4}, {"i", I64({1}, {2})}},
       "index 2 is out of range for axis 0 of size 2",
       std::nullopt});
  add({"gather index before the start",
       [](M& m) {
         m.Input("x", kFloat, {2, 2}).Input("i", kInt64, {1}).Output("y");
         m.Node("Gather", {"x", "i"}, {"y"});
       },
       {{"x", x4}, {"i", I64({1}, {-3})}},
       "index -3 is out of range for axis 0 of size 2",
       std::nullopt});
  add({"gather index -1 is the last row",
       [](M& m) {
         m.Input("x", kFloat, {2, 2}).Input("i", kInt64, {1}).Output("y");
         m.Node("Gather", {"x", "i"}, {"y"});
       },
       {{"x", x4}, {"i", I64({1}, {-1})}},
       "",
       F32({1, 2}, {3, 4})});
  add({"integer division by zero",
       [](M& m) {
         m.Input("a", kInt32, {2}).Input("b", kInt32, {2}).Output("y", kInt32);
         m.Node("Div", {"a", "b"}, {"y"});
       },
       {{"a", I32({2}, {4, 5})}, {"b", I32({2}, {2, 0})}},
       "integer division by zero",
       std::nullopt});
  add({"integer modulo by zero",
       [](M& m) {
         m.Input("a", kInt32, {2}).Input("b", kInt32, {2}).Output("y", kInt32);
         m.Node("Mod", {"a", "b"}, {"y"});
       },
       {{"a", I32({2}, {4, 5})}, {"b", I32({2}, {3, 0})}},
       "integer division by zero",
       std::nullopt});
  add({"convolution with stride 0",
       [](M& m) {
         m.Input("x", kFloat, {1, 1, 4, 4}).Output("y");
         m.Initializer("w", Tensor(f32, Shape{1, 1, 2, 2}));
         M::AttrInts(m.Node("Conv", {"x", "w"}, {"y"}), "strides", {0, 1});
       },
       {{"x", Tensor(f32, Shape{1, 1, 4, 4})}},
       "attribute 'strides' must be >= 1",
       std::nullopt});
  add({"convolution kernel larger than its input",
       [](M& m) {
         m.Input("x", kFloat, {1, 1, 2, 2}).Output("y");
         m.Initializer("w", Tensor(f32, Shape{1, 1, 3, 3}));
         m.Node("Conv", {"x", "w"}, {"y"});
       },
       {{"x", Tensor(f32, Shape{1, 1, 2, 2})}},
       "output height would be < 1",
       std::nullopt});
  add({"convolution groups that do not divide the channels",
       [](M& m) {
         m.Input("x", kFloat, {1, 4, 3, 3}).Output("y");
         m.Initializer("w", Tensor(f32, Shape{3, 1, 1, 1}));
         M::AttrInt(m.Node("Conv", {"x", "w"}, {"y"}), "group", 3);
       },
       {{"x", Tensor(f32, Shape{1, 4, 3, 3})}},
       "input channels 4",
       std::nullopt});
  add({"convolution with negative padding",
       [](M& m) {
         m.Input("x", kFloat, {1, 1, 4, 4}).Output("y");
         m.Initializer("w", Tensor(f32, Shape{1, 1, 2, 2}));
         M::AttrInts(m.Node("Conv", {"x", "w"}, {"y"}), "pads", {-5, 0, 0, 0});
       },
       {{"x", Tensor(f32, Shape{1, 1, 4, 4})}},
       "attribute 'pads'",
       std::nullopt});
  add({"max pool with a kernel of 0",
       [](M& m) {
         m.Input("x", kFloat, {1, 1, 4, 4}).Output("y");
         M::AttrInts(m.Node("MaxPool", {"x"}, {"y"}), "kernel_shape", {0, 2});
       },
       {{"x", Tensor(f32, Shape{1, 1, 4, 4})}},
       "attribute 'kernel_shape' must be >= 1",
       std::nullopt});
  add({"average pool with stride 0",
       [](M& m) {
         m.Input("x", kFloat, {1, 1, 4, 4}).Output("y");
         auto* n = m.Node("AveragePool", {"x"}, {"y"});
         M::AttrInts(n, "kernel_shape", {2, 2});
         M::AttrInts(n, "strides", {0, 0});
       },
       {{"x", Tensor(f32, Shape{1, 1, 4, 4})}},
       "attribute 'strides' must be >= 1",
       std::nullopt});
  add({"slice with step 0",
       [](M& m) {
         m.Input("x", kFloat, {2, 2}).Output("y");
         m.Initializer("s", I64({1}, {0}));
         m.Initializer("e", I64({1}, {2}));
         m.Initializer("a", I64({1}, {0}));
         m.Initializer("t", I64({1}, {0}));
         m.Node("Slice", {"x", "s", "e", "a", "t"}, {"y"});
       },
       {{"x", x4}},
       "has a 0 step",
       std::nullopt});
  add({"range with delta 0",
       [](M& m) {
         m.Output("y", kInt64);
         m.Initializer("s", I64({}, {0}));
         m.Initializer("l", I64({}, {10}));
         m.Initializer("d", I64({}, {0}));
         m.Node("Range", {"s", "l", "d"}, {"y"});
       },
       {},
       "delta must not be 0",
       std::nullopt});
  add({"one-hot of negative depth",
       [](M& m) {
         m.Input("i", kInt64, {2}).Output("y");
         m.Initializer("d", I64({}, {-3}));
         m.Initializer("v", F32({2}, {0, 1}));
         m.Node("OneHot", {"i", "d", "v"}, {"y"});
       },
       {{"i", I64({2}, {0, 1})}},
       "attribute 'depth' is -3",
       std::nullopt});
  add({"concat along an axis the inputs do not have",
       [](M& m) {
         m.Input("x", kFloat, {2, 2}).Output("y");
         M::AttrInt(m.Node("Concat", {"x", "x"}, {"y"}), "axis", 5);
       },
       {{"x", x4}},
       "attribute 'axis' is 5, out of range",
       std::nullopt});
  add({"transpose by a permutation with a repeated axis",
       [](M& m) {
         m.Input("x", kFloat, {2, 2}).Output("y");
         M::AttrInts(m.Node("Transpose", {"x"}, {"y"}), "perm", {0, 0});
       },
       {{"x", x4}},
       "attribute 'perm' [0, 0]",
       std::nullopt});
  add({"split into parts that do not add up",
       [](M& m) {
         m.Input("x", kFloat, {4}).Output("y");
         m.Initializer("s", I64({2}, {1, 5}));
         m.Node("Split", {"x", "s"}, {"y", "z"});
       },
       {{"x", F32({4}, {1, 2, 3, 4})}},
       "sums to 6",
       std::nullopt});
  add({"expand to a shape that does not broadcast",
       [](M& m) {
         m.Input("x", kFloat, {2, 2}).Output("y");
         m.Initializer("s", I64({2}, {3, 3}));
         m.Node("Expand", {"x", "s"}, {"y"});
       },
       {{"x", x4}},
       "do not broadcast",
       std::nullopt});
  add({"constant of a negative shape",
       [](M& m) {
         m.Output("y");
         m.Initializer("s", I64({2}, {2, -2}));
         m.Node("ConstantOfShape", {"s"}, {"y"});
       },
       {},
       "has a negative dim",
       std::nullopt});
  add({"squeeze of an axis longer than 1",
       [](M& m) {
         m.Input("x", kFloat, {2, 2}).Output("y");
         m.Initializer("a", I64({1}, {0}));
         m.Node("Squeeze", {"x", "a"}, {"y"});
       },
       {{"x", x4}},
       "cannot squeeze dim 0",
       std::nullopt});
  add({"unsqueeze with a repeated axis",
       [](M& m) {
         m.Input("x", kFloat, {2, 2}).Output("y");
         m.Initializer("a", I64({2}, {0, 0}));
         m.Node("Unsqueeze", {"x", "a"}, {"y"});
       },
       {{"x", x4}},
       "names axis 0 twice",
       std::nullopt});
  add({"pad that removes more than there is",
       [](M& m) {
         m.Input("x", kFloat, {2, 2}).Output("y");
         m.Initializer("p", I64({4}, {-3, 0, 0, 0}));
         m.Node("Pad", {"x", "p"}, {"y"});
       },
       {{"x", x4}},
       "crops more than",
       std::nullopt});
  add({"max over an empty tensor",
       [](M& m) {
         m.Input("x", kFloat, {0, 3}).Output("y");
         M::AttrInt(m.Node("ReduceMax", {"x"}, {"y"}), "keepdims", 0);
       },
       {{"x", Tensor(f32, Shape{0, 3})}},
       "reduces over zero elements",
       std::nullopt});
  add({"softmax along an axis the input does not have",
       [](M& m) {
         m.Input("x", kFloat, {2, 2}).Output("y");
         M::AttrInt(m.Node("Softmax", {"x"}, {"y"}), "axis", 3);
       },
       {{"x", x4}},
       "axis 3 is out of range for rank 2",
       std::nullopt});
  add({"matrix product of mismatched dims",
       [](M& m) {
         m.Input("x", kFloat, {2, 2}).Output("y");
         m.Initializer("w", Tensor(f32, Shape{3, 2}));
         m.Node("MatMul", {"x", "w"}, {"y"});
       },
       {{"x", x4}},
       "inner dimensions do not match",
       std::nullopt});
  add({"scatter past the end",
       [](M& m) {
         m.Input("x", kFloat, {2, 2}).Input("i", kInt64, {1, 2}).Output("y");
         m.Initializer("u", F32({1, 2}, {9, 9}));
         m.Node("ScatterElements", {"x", "i", "u"}, {"y"});
       },
       {{"x", x4}, {"i", I64({1, 2}, {0, 7})}},
       "index 7 is out of range",
       std::nullopt});
  add({"gather elements before the start",
       [](M& m) {
         m.Input("x", kFloat, {2, 2}).Input("i", kInt64, {1, 2}).Output("y");
         m.Node("GatherElements", {"x", "i"}, {"y"});
       },
       {{"x", x4}, {"i", I64({1, 2}, {0, -9})}},
       "index -9 is out of range",
       std::nullopt});
  add({"an initializer whose data is shorter than its shape",
       [](M& m) {
         m.Input("x", kFloat, {2, 2}).Output("y");
         onnx::TensorProto* t = m.RawInitializer();
         t->set_name("w");
         t->set_data_type(kFloat);
         t->add_dims(2);
         t->add_dims(2);
         t->set_raw_data(std::string(8, '\0'));
         m.Node("Add", {"x", "w"}, {"y"});
       },
       {{"x", x4}},
       "holds 2 elements of data, but f32[2, 2] needs 4",
       std::nullopt});
  add({"NaN and infinities cast to integers",
       [](M& m) {
         m.Input("x", kFloat, {3}).Output("y", kInt32);
         M::AttrInt(m.Node("Cast", {"x"}, {"y"}), "to", kInt32);
       },
       {{"x", F32({3}, {std::numeric_limits<float>::quiet_NaN(),
                        std::numeric_limits<float>::infinity(), -1e30f})}},
       "",
       I32({3}, {0, std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min()})});
  return cases;
}

TEST_CASE("hostile models: right answers or one clear line, never a signal",
          "[cli][bad-input][onnx]") {
  std::vector<std::string> backends = testing::CompiledBackends();
  backends.insert(backends.begin(), "reference");
  const std::string dir = testing::TempPath("hostile");
  std::filesystem::create_directories(dir);
  int index = 0;
  for (const Hostile& h : Cases()) {
    const std::string base = dir + "/" + std::to_string(index++);
    OnnxModel model;
    h.build(model);
    const std::string path = base + ".onnx";
    {
      std::ofstream out(path, std::ios::binary);
      out << model.Bytes();
    }
    std::vector<std::string> args = {"run", path, "--fetch", "y", "--out", base + "_out"};
    for (const auto& [name, value] : h.feeds) {
      const std::string file = base + "_" + name + ".npy";
      REQUIRE(WriteNpy(file, value).ok());
      args.push_back("--input");
      args.push_back(name + "=" + file);
    }
    for (const std::string& backend : backends) {
      std::vector<std::string> with_backend = args;
      with_backend.push_back("--backend");
      with_backend.push_back(backend);
      CommandResult r = testing::RunCommand(KILN_BINARY, with_backend);
      INFO(h.name << " on " << backend << ": exit " << r.exit_code << ", " << r.err);
      if (!h.expected) {
        testing::CheckFails(r, h.error);
        continue;
      }
      REQUIRE(r.exit_code == 0);
      Result<Tensor> y = ReadNpy(base + "_out/y.npy");
      REQUIRE(y.ok());
      CHECK(y->BitwiseEquals(*h.expected));
    }
  }
}

}  // namespace
}  // namespace kiln
