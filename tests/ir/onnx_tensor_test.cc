#include "ir/io/onnx_tensor.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "ir/builder.h"
#include "ir/file_util.h"
#include "ir/io/tensor_file.h"
#include "ir/ops/math.h"
#include "ir/ops/reduce.h"
#include "proto/onnx.pb.h"
#include "runtime/session.h"
#include "tests/testing/temp_path.h"

using namespace kiln;

namespace {

using P = onnx::TensorProto;

// ../shared/onnx-node-tests/node, relative to the repository (tests/data is <repo>/tests/data).
const std::string kNodeTests =
    std::string(KILN_TEST_DATA_DIR) + "/../../../shared/onnx-node-tests/node/";

using kiln::testing::TempPath;

Tensor Sample(DType dtype, Shape shape) {
  Tensor t(dtype, std::move(shape));
  for (int64_t i = 0; i < t.num_elements(); ++i)
    t.SetDouble(i, dtype == boolean ? i % 2 : 1.5 * i - 4);
  return t;
}

Tensor ReadNodeTest(const std::string& test, const std::string& file) {
  Result<Tensor> t = ReadTensorFile(kNodeTests + test + "/test_data_set_0/" + file);
  INFO((t.ok() ? std::string("ok") : t.error().ToString()));
  REQUIRE(t.ok());
  return *t;
}

Error ProtoError(const P& p) {
  Result<Tensor> t = OnnxTensorFromProto(p, "w.pb");
  REQUIRE_FALSE(t.ok());
  return t.error();
}

// y = f(x) on the reference session.
Tensor RunUnary(const Tensor& x, Value (*f)(Value)) {
  GraphBuilder g;
  g.Output("y", f(g.Placeholder("x", x.dtype(), x.shape())));
  Result<Graph> graph = g.Build();
  REQUIRE(graph.ok());
  Session session(*graph);
  Result<std::vector<Tensor>> out = session.Run({{"x", x}}, {"y"});
  REQUIRE(out.ok());
  return out->at(0);
}

}  // namespace

TEST_CASE("onnx tensor: every dtype round-trips through raw_data", "[io]") {
  for (DType dtype : AllDTypes()) {
    for (const Shape& shape : {Shape{}, Shape{0}, Shape{3}, Shape{2, 1, 3, 2}}) {
      INFO(DTypeName(dtype) << shape.ToString());
      Tensor t = Sample(dtype, shape);
      std::string path = TempPath(std::string(DTypeName(dtype)) + ".pb");
      REQUIRE(WriteOnnxTensor(path, t, "w").ok());
      Result<Tensor> back = ReadTensorFile(path);
      REQUIRE(back.ok());
      CHECK(back->BitwiseEquals(t));
    }
  }
  P p;
  OnnxTensorToProto(Tensor::FromVector<int64_t>({2}, {1, 2}), "idx", &p);
  CHECK(p.name() == "idx");
  CHECK(p.data_type() == P::INT64);
  CHECK(p.raw_data().size() == 16);
}

TEST_CASE("onnx tensor: typed data fields", "[io]") {
  P f;
  f.set_data_type(P::FLOAT);
  f.add_dims(2);
  f.add_dims(2);
  for (float v : {1.0f, -2.5f, 0.25f, 8.0f}) f.add_float_data(v);
  Result<Tensor> tf = OnnxTensorFromProto(f, "f");
  REQUIRE(tf.ok());
  CHECK(tf->dtype() == f32);
  CHECK(tf->shape() == Shape{2, 2});
  CHECK(tf->ToDoubles() == std::vector<double>{1, -2.5, 0.25, 8});

  // 16-bit floats keep their bit patterns in int32_data: half 0x3c00 = 1, 0xc000 = -2, 0x3800 =
  // 0.5; bfloat16 0x3f80 = 1, 0xc040 = -3.
  P h;
  h.set_data_type(P::FLOAT16);
  h.add_dims(3);
  for (int bits : {0x3c00, 0xc000, 0x3800}) h.add_int32_data(bits);
  Result<Tensor> th = OnnxTensorFromProto(h, "h");
  REQUIRE(th.ok());
  CHECK(th->dtype() == f16);
  CHECK(th->ToDoubles() == std::vector<double>{1, -2, 0.5});
  P bf;
  bf.set_data_type(P::BFLOAT16);
  bf.add_dims(2);
  for (int bits : {0x3f80, 0xc040}) bf.add_int32_data(bits);
  Result<Tensor> tbf = OnnxTensorFromProto(bf, "bf");
  REQUIRE(tbf.ok());
  CHECK(tbf->ToDoubles() == std::vector<double>{1, -3});

  P l;
  l.set_data_type(P::INT64);
  l.add_dims(3);
  for (int64_t v : {int64_t{-1}, int64_t{1} << 40, int64_t{7}}) l.add_int64_data(v);
  Result<Tensor> tl = OnnxTensorFromProto(l, "l");
  REQUIRE(tl.ok());
  CHECK(tl->dtype() == i64);
  CHECK(tl->ToInts() == std::vector<int64_t>{-1, int64_t{1} << 40, 7});

  P d;
  d.set_data_type(P::DOUBLE);  // a scalar: no dims
  d.add_double_data(0.1);
  Result<Tensor> td = OnnxTensorFromProto(d, "d");
  REQUIRE(td.ok());
  CHECK(td->shape() == Shape{});
  CHECK(td->GetDouble(0) == 0.1);

  struct Case {
    P::DataType type;
    DType dtype;
    std::vector<int32_t> in;
    std::vector<int64_t> out;
  };
  for (const Case& c :
       {Case{P::INT8, i8, {-5, 127}, {-5, 127}}, Case{P::UINT8, u8, {200, 0}, {200, 0}},
        Case{P::BOOL, boolean, {0, 3}, {0, 1}}, Case{P::INT32, i32, {-70000, 9}, {-70000, 9}}}) {
    P p;
    p.set_data_type(c.type);
    p.add_dims(2);
    for (int32_t v : c.in) p.add_int32_data(v);
    Result<Tensor> t = OnnxTensorFromProto(p, "i");
    REQUIRE(t.ok());
    CHECK(t->dtype() == c.dtype);
    CHECK(t->ToInts() == c.out);
  }
}

TEST_CASE("onnx tensor: unsupported and malformed tensors", "[io]") {
  using Named = std::pair<P::DataType, const char*>;
  for (auto [type, name] : std::vector<Named>{
           {P::STRING, "STRING"}, {P::COMPLEX128, "COMPLEX128"}, {P::COMPLEX64, "COMPLEX64"}}) {
    P p;
    p.set_data_type(type);
    Error e = ProtoError(p);
    CHECK(e.code() == ErrorCode::kUnimplemented);
    CHECK_THAT(e.message(),
               Catch::Contains(std::string("data type ") + name + " is not supported"));
  }
  P f8;
  f8.set_data_type(17);
  CHECK_THAT(ProtoError(f8).message(), Catch::Contains("FLOAT8E4M3FN"));

  P shortp;
  shortp.set_data_type(P::FLOAT);
  shortp.add_dims(2);
  shortp.add_dims(3);
  for (int i = 0; i < 5; ++i) shortp.add_float_data(1);
  Error e = ProtoError(shortp);
  CHECK(e.code() == ErrorCode::kDataLoss);
  CHECK_THAT(e.message(), Catch::Contains("'w.pb'") &&
                              Catch::Contains("holds 5 elements of data, but f32[2, 3] needs 6"));
  shortp.clear_float_data();
  shortp.set_raw_data(std::string(20, '\0'));
  CHECK(ProtoError(shortp).code() == ErrorCode::kDataLoss);
  shortp.set_raw_data(std::string(23, '\0'));
  CHECK_THAT(ProtoError(shortp).message(), Catch::Contains("not a whole number"));
  shortp.set_raw_data(std::string(24, '\0'));
  shortp.add_float_data(1);
  CHECK_THAT(ProtoError(shortp).message(), Catch::Contains("both raw_data and typed"));

  P wrong_field;
  wrong_field.set_data_type(P::FLOAT);
  wrong_field.add_int64_data(1);
  CHECK_THAT(ProtoError(wrong_field).message(),
             Catch::Contains("float_data, but other typed fields are set"));

  P external;
  external.set_data_type(P::FLOAT);
  external.set_data_location(P::EXTERNAL);
  Error ex = ProtoError(external);
  CHECK(ex.code() == ErrorCode::kUnimplemented);
  CHECK_THAT(ex.message(), Catch::Contains("external data"));

  P neg;
  neg.set_data_type(P::FLOAT);
  neg.add_dims(-2);
  CHECK_THAT(ProtoError(neg).message(), Catch::Contains("negative dimension -2"));
  P huge;
  huge.set_data_type(P::INT64);
  huge.add_dims(int64_t{1} << 40);
  huge.add_dims(int64_t{1} << 40);
  CHECK(ProtoError(huge).code() == ErrorCode::kResourceExhausted);

  std::string garbage = TempPath("garbage.pb");
  REQUIRE(WriteFileAtomically(garbage, "\xff\xff\xff\xff not a protobuf").ok());
  Result<Tensor> g = ReadOnnxTensor(garbage);
  REQUIRE_FALSE(g.ok());
  CHECK(g.error().code() == ErrorCode::kDataLoss);
  CHECK_THAT(g.error().message(), Catch::Contains("is not a valid serialized ONNX TensorProto"));
}

TEST_CASE("onnx tensor: files of the ONNX node test suite", "[io]") {
  if (!std::filesystem::is_directory(kNodeTests)) {
    WARN("skipped: " << kNodeTests << " does not exist");
    return;
  }
  // Abs of input_0 must be output_0 (both files read by this reader, Abs by kiln's kernel).
  Tensor x = ReadNodeTest("test_abs", "input_0.pb");
  Tensor y = ReadNodeTest("test_abs", "output_0.pb");
  CHECK(x.dtype() == f32);
  CHECK(x.shape() == Shape{3, 4, 5});
  CHECK(RunUnary(x, [](Value v) { return Abs(v); }).BitwiseEquals(y));

  // ArgMax's documented example: [[2, 1], [3, 10]] along axis 0 -> [[1, 1]].
  Tensor data = ReadNodeTest("test_argmax_default_axis_example", "input_0.pb");
  CHECK(data.ToDoubles() == std::vector<double>{2, 1, 3, 10});
  Tensor result = ReadNodeTest("test_argmax_default_axis_example", "output_0.pb");
  CHECK(result.dtype() == i64);
  CHECK(result.shape() == Shape{1, 2});
  CHECK(result.ToInts() == std::vector<int64_t>{1, 1});
  CHECK(RunUnary(data, [](Value v) { return ArgMax(v); }).BitwiseEquals(result));

  // FLOAT16 output = the float input rounded to half; DOUBLE output = the half input widened.
  Tensor to_half_in = ReadNodeTest("test_cast_FLOAT_to_FLOAT16", "input_0.pb");
  Tensor to_half_out = ReadNodeTest("test_cast_FLOAT_to_FLOAT16", "output_0.pb");
  CHECK(to_half_out.dtype() == f16);
  CHECK(to_half_in.CastTo(f16).BitwiseEquals(to_half_out));
  Tensor widen_in = ReadNodeTest("test_cast_FLOAT16_to_DOUBLE", "input_0.pb");
  Tensor widen_out = ReadNodeTest("test_cast_FLOAT16_to_DOUBLE", "output_0.pb");
  CHECK(widen_in.dtype() == f16);
  CHECK(widen_out.dtype() == f64);
  CHECK(widen_in.ToDoubles() == widen_out.ToDoubles());

  // BOOL: Not.
  Tensor b = ReadNodeTest("test_not_2d", "input_0.pb");
  Tensor not_b = ReadNodeTest("test_not_2d", "output_0.pb");
  CHECK(b.dtype() == boolean);
  CHECK(b.shape() == Shape{3, 4});
  for (int64_t i = 0; i < b.num_elements(); ++i) CHECK(not_b.GetInt(i) == 1 - b.GetInt(i));

  // UINT8 and a scalar: QuantizeLinear's documented example, x / 2 + 128 saturated.
  CHECK(ReadNodeTest("test_quantizelinear", "input_0.pb").ToDoubles() ==
        std::vector<double>{0, 2, 3, 1000, -254, -1000});
  Tensor zero_point = ReadNodeTest("test_quantizelinear", "input_2.pb");
  CHECK(zero_point.dtype() == u8);
  CHECK(zero_point.shape() == Shape{});
  CHECK(zero_point.ToInts() == std::vector<int64_t>{128});
  CHECK(ReadNodeTest("test_quantizelinear", "output_0.pb").ToInts() ==
        std::vector<int64_t>{128, 129, 130, 255, 1, 0});

  // This suite stores the bfloat16 cast output as UINT16: its bits, read as u16.
  Tensor bits = ReadNodeTest("test_cast_FLOAT_to_BFLOAT16", "output_0.pb");
  CHECK(bits.dtype() == u16);
  CHECK(bits.shape() == Shape{3, 4});
  // UINT64 and INT16 data: the suite's Max cases.
  Tensor big = ReadNodeTest("test_max_uint64", "input_0.pb");
  CHECK(big.dtype() == u64);
  CHECK(ReadNodeTest("test_max_int16", "input_0.pb").dtype() == i16);
}
