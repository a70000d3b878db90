// ONNX import error paths: truncated and garbage files, opsets, missing inputs, unsupported ops
// listed together, external data confined to the model's folder, huge declared tensors.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "ir/file_util.h"
#include "ir/onnx/import.h"
#include "tests/ir/onnx_model_builder.h"
#include "tests/testing/temp_path.h"

using namespace kiln;
using kiln::testing::OnnxModel;
using kiln::testing::TempPath;

namespace {

Error ImportError(const std::string& bytes, const std::string& dir = "") {
  Result<Graph> g = ImportOnnxFromBytes(bytes, dir, "m.onnx");
  REQUIRE_FALSE(g.ok());
  return g.error();
}

OnnxModel AddModel() {
  OnnxModel m;
  m.Input("a", 1, {2}).Input("b", 1, {2}).Output("c");
  m.Node("Add", {"a", "b"}, {"c"}, "add");
  return m;
}

// A model whose initializer "w" (FLOAT [2]) lives in external data at `location`.
std::string ExternalModel(const std::string& location, std::vector<int64_t> dims = {2}) {
  OnnxModel m;
  m.Input("x", 1, {2}).Output("y");
  onnx::TensorProto* w = m.RawInitializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) w->add_dims(d);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* kv = w->add_external_data();
  kv->set_key("location");
  kv->set_value(location);
  m.Node("Mul", {"x", "w"}, {"y"});
  return m.Bytes();
}

}  // namespace

TEST_CASE("ONNX import errors: every truncation of a model is a clear error", "[onnx]") {
  std::string bytes = AddModel().Bytes();
  REQUIRE(ImportOnnxFromBytes(bytes, "", "m.onnx").ok());
  for (size_t n = 0; n < bytes.size(); ++n) {
    Result<Graph> g = ImportOnnxFromBytes(bytes.substr(0, n), "", "m.onnx");
    INFO("prefix of " << n << " bytes");
    CHECK_FALSE(g.ok());
  }
  CHECK_THAT(ImportError("").message(), Catch::Contains("not a valid ONNX model"));
  CHECK_THAT(ImportError("\xff\xff\xff garbage").message(), Catch::Contains("not a valid ONNX"));
}

TEST_CASE("ONNX import errors: flipped bytes never crash the importer", "[onnx]") {
  OnnxModel m;
  m.Input("x", 1, {-1, 3, 4, 4}).Output("y");
  m.Initializer("w", Tensor::FromVector<float>({2, 3, 1, 1}, {1, 2, 3, 4, 5, 6}));
  OnnxModel::AttrInts(m.Node("Conv", {"x", "w"}, {"c"}, "conv"), "strides", {1, 1});
  m.Node("Shape", {"c"}, {"s"});
  m.Node("Reshape", {"c", "s"}, {"r"});
  OnnxModel::AttrInt(m.Node("Softmax", {"r"}, {"y"}), "axis", 1);
  std::string bytes = m.Bytes();
  REQUIRE(ImportOnnxFromBytes(bytes, "", "m.onnx").ok());
  int failures = 0;
  for (size_t i = 0; i < bytes.size(); ++i)
    for (unsigned char flip : {0x01, 0x10, 0x80, 0xff}) {
      std::string mutated = bytes;
      mutated[i] = static_cast<char>(mutated[i] ^ flip);
      failures += !ImportOnnxFromBytes(mutated, "", "m.onnx").ok();  // either way, no crash
    }
  CHECK(failures > 0);
}

TEST_CASE("ONNX import errors: an LSTM over a million steps is refused, not unrolled", "[onnx]") {
  // A few hundred bytes declaring X [1000000, 1, 2]: unrolled, about 30 GB of graph.
  OnnxModel m(14);
  m.Input("X", 1, {1000000, 1, 2}).Output("Y_h");
  m.Initializer("W", Tensor(f32, Shape{1, 12, 2})).Initializer("R", Tensor(f32, Shape{1, 12, 3}));
  OnnxModel::AttrInt(m.Node("LSTM", {"X", "W", "R"}, {"", "Y_h"}, "lstm"), "hidden_size", 3);
  const Error e = ImportError(m.Bytes());
  CHECK(e.code() == ErrorCode::kUnimplemented);
  CHECK_THAT(e.message(), Catch::Contains("lstm") && Catch::Contains("1000000 steps") &&
                              Catch::Contains("more than the 65536"));
}

TEST_CASE("ONNX import errors: a truncated file on disk", "[onnx]") {
  std::string bytes = AddModel().Bytes();
  std::string path = TempPath("truncated.onnx");
  REQUIRE(WriteFileAtomically(path, bytes.substr(0, bytes.size() / 2)).ok());
  Result<Graph> g = ImportOnnx(path);
  REQUIRE_FALSE(g.ok());
  CHECK_THAT(g.error().message(), Catch::Contains("truncated.onnx"));
  CHECK_FALSE(ImportOnnx(TempPath("missing.onnx")).ok());
}

TEST_CASE("ONNX import errors: opsets", "[onnx]") {
  OnnxModel newer(99);
  newer.Input("a", 1, {2}).Output("a");
  Error e = ImportError(newer.Bytes());
  CHECK(e.code() == ErrorCode::kUnimplemented);
  CHECK_THAT(e.message(), Catch::Contains("opset 99 is not supported"));

  OnnxModel none = AddModel();
  none.proto().clear_opset_import();
  CHECK_THAT(ImportError(none.Bytes()).message(),
             Catch::Contains("imports no version of the default ONNX opset"));
}

TEST_CASE("ONNX import errors: a node with a missing input names it", "[onnx]") {
  OnnxModel m;
  m.Input("a", 1, {2}).Output("c");
  m.Node("Add", {"a", "nope"}, {"c"}, "add");
  Error e = ImportError(m.Bytes());
  CHECK_THAT(e.message(), Catch::Contains("node 'add' (Add)"));
  CHECK_THAT(e.message(), Catch::Contains("'nope' is not a graph input, an initializer or an "
                                          "earlier node's output"));
  OnnxModel out;
  out.Input("a", 1, {2}).Output("missing");
  CHECK_THAT(ImportError(out.Bytes()).message(), Catch::Contains("graph output 'missing'"));
}

TEST_CASE("ONNX import errors: all unsupported op types are listed at once", "[onnx]") {
  OnnxModel m;
  m.Input("a", 1, {2}).Output("d");
  m.Node("FancyOp", {"a"}, {"b"}, "f1");
  m.Node("Relu", {"b"}, {"b2"});
  m.Node("FancyOp", {"b2"}, {"c"}, "f2");
  m.Node("OtherOp", {"c"}, {"d"});
  m.proto().mutable_graph()->mutable_node(3)->set_domain("com.example");
  Error e = ImportError(m.Bytes());
  CHECK(e.code() == ErrorCode::kUnimplemented);
  CHECK_THAT(e.message(), Catch::Contains("2 unsupported ONNX op type(s)"));
  CHECK_THAT(e.message(), Catch::Contains("FancyOp (2 nodes: 'f1', 'f2')"));
  CHECK_THAT(e.message(), Catch::Contains("com.example.OtherOp (1 node: #3)"));
}

TEST_CASE("ONNX import errors: external data must stay inside the model's folder", "[onnx]") {
  std::string dir = TempPath("ext_model");
  std::filesystem::create_directories(dir + "/sub");
  float values[2] = {2.0f, 3.0f};
  std::ofstream(dir + "/sub/w.bin", std::ios::binary)
      .write(reinterpret_cast<const char*>(values), sizeof(values));
  std::ofstream(TempPath("outside.bin"), std::ios::binary)
      .write(reinterpret_cast<const char*>(values), sizeof(values));

  REQUIRE(ImportOnnxFromBytes(ExternalModel("sub/w.bin"), dir, "m.onnx").ok());
  CHECK_THAT(ImportError(ExternalModel("../outside.bin"), dir).message(),
             Catch::Contains("contains '..'"));
  CHECK_THAT(ImportError(ExternalModel("sub/../../outside.bin"), dir).message(),
             Catch::Contains("contains '..'"));
  CHECK_THAT(ImportError(ExternalModel(TempPath("outside.bin")), dir).message(),
             Catch::Contains("is an absolute path"));
  std::filesystem::create_symlink(TempPath("outside.bin"), dir + "/link.bin");
  CHECK_THAT(ImportError(ExternalModel("link.bin"), dir).message(),
             Catch::Contains("symbolic link"));
  CHECK_THAT(ImportError(ExternalModel("absent.bin"), dir).message(),
             Catch::Contains("cannot open external data file"));
  CHECK_THAT(ImportError(ExternalModel("sub/w.bin", {3}), dir).message(),
             Catch::Contains("holds 8 bytes, but f32[3] needs 12"));
  CHECK_THAT(ImportError(ExternalModel("sub/w.bin")).message(),
             Catch::Contains("not read from a file"));
}

TEST_CASE("ONNX import errors: a huge declared tensor is refused before allocating", "[onnx]") {
  CHECK(ImportError(ExternalModel("w.bin", {int64_t{1} << 40, 1 << 20}), "/tmp").code() ==
        ErrorCode::kResourceExhausted);
  OnnxModel m;
  m.Input("x", 1, {2}).Output("y");
  onnx::TensorProto* w = m.RawInitializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(int64_t{1} << 40);
  w->set_raw_data("1234");
  m.Node("Mul", {"x", "w"}, {"y"});
  Error e = ImportError(m.Bytes());
  CHECK_THAT(e.message(), Catch::Contains("initializer 'w'"));
}

TEST_CASE("ONNX import errors: tables built at import are refused when too large", "[onnx]") {
  // A DFT of 2^24 points would need two 2^24 x 2^24 matrices; a MaxPool dilation past 2^31 would
  // overflow the window's extent.
  OnnxModel dft;
  dft.Input("x", 1, {1, 8, 1}).Output("y");
  dft.Initializer("n", Tensor::Scalar<int64_t>(int64_t{1} << 24));
  dft.Node("DFT", {"x", "n"}, {"y"}, "dft");
  Error e = ImportError(dft.Bytes());
  CHECK(e.code() == ErrorCode::kUnimplemented);
  CHECK_THAT(e.message(), Catch::Contains("node 'dft' (DFT): a DFT of 16777216 points"));
  OnnxModel overflow;
  overflow.Input("x", 1, {1, 1, 4}).Output("y");
  onnx::NodeProto* dilated = overflow.Node("MaxPool", {"x"}, {"y"}, "dilated");
  OnnxModel::AttrInts(dilated, "kernel_shape", {2});
  OnnxModel::AttrInts(dilated, "dilations", {int64_t{1} << 40});
  CHECK_THAT(ImportError(overflow.Bytes()).message(),
             Catch::Contains("attribute 'dilations' must be >= 1 (and below 2^31)"));
}

TEST_CASE("ONNX import errors: GridSample's grid must have X's batch", "[onnx]") {
  OnnxModel m(16);
  m.Input("x", 1, {2, 1, 4, 4}).Input("grid", 1, {3, 2, 2, 2}).Output("y");
  m.Node("GridSample", {"x", "grid"}, {"y"}, "sample");
  CHECK_THAT(ImportError(m.Bytes()).message(),
             Catch::Contains("node 'sample' (GridSample): X has 2 images but the grid 3"));
}

TEST_CASE("ONNX import errors: non-tensor and unsupported input types", "[onnx]") {
  OnnxModel m;
  m.Input("s", 8, {2}).Output("s", 8);  // STRING
  CHECK_THAT(ImportError(m.Bytes()).message(), Catch::Contains("element type STRING"));
  OnnxModel seq;
  auto* vi = seq.proto().mutable_graph()->add_input();
  vi->set_name("q");
  vi->mutable_type()->mutable_sequence_type();
  seq.Output("q");
  CHECK_THAT(ImportError(seq.Bytes()).message(), Catch::Contains("is a sequence"));
}
