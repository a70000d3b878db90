#include "ir/io/npy.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "ir/file_util.h"
#include "ir/io/tensor_file.h"
#include "tests/testing/temp_path.h"

using namespace kiln;

namespace {

const std::string kFixtures = std::string(KILN_TEST_DATA_DIR) + "/npy/";

using kiln::testing::TempPath;

// A tensor of `dtype` and `shape` with distinct, exactly representable values.
Tensor Sample(DType dtype, Shape shape) {
  Tensor t(dtype, std::move(shape));
  for (int64_t i = 0; i < t.num_elements(); ++i)
    t.SetDouble(i, dtype == boolean ? i % 3 == 0 : i * 0.5 - 3);
  return t;
}

// The bytes of a .npy file with the given version, header text (padded with a newline only) and
// data.
std::string NpyBytes(int major, const std::string& header, const std::string& data) {
  std::string h = header + "\n";
  std::string out = std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\0';
  int len_bytes = major == 1 ? 2 : 4;
  for (int i = 0; i < len_bytes; ++i) out += static_cast<char>((h.size() >> (8 * i)) & 0xff);
  return out + h + data;
}

template <typename T>
std::string Raw(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

Error ParseError(const std::string& bytes) {
  Result<Tensor> t = ParseNpy(bytes, "bad.npy");
  REQUIRE_FALSE(t.ok());
  return t.error();
}

}  // namespace

TEST_CASE("npy: every dtype round-trips through a file, bit for bit", "[io]") {
  for (DType dtype : AllDTypes()) {
    for (const Shape& shape : {Shape{}, Shape{5}, Shape{0}, Shape{2, 0, 3}, Shape{2, 3, 1, 2}}) {
      INFO(DTypeName(dtype) << shape.ToString());
      Tensor t = Sample(dtype, shape);
      std::string path = TempPath(std::string(DTypeName(dtype)) + ".npy");
      REQUIRE(WriteNpy(path, t).ok());
      Result<Tensor> back = ReadNpy(path);
      REQUIRE(back.ok());
      CHECK(back->BitwiseEquals(t));
      Result<Tensor> parsed = ParseNpy(SerializeNpy(t), "<memory>");
      REQUIRE(parsed.ok());
      CHECK(parsed->BitwiseEquals(t));
    }
  }
}

TEST_CASE("npy: the written header is numpy's", "[io]") {
  std::string bytes = SerializeNpy(Tensor::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  CHECK(bytes.compare(0, 8, std::string("\x93NUMPY\x01\x00", 8)) == 0);
  size_t header_len = static_cast<uint8_t>(bytes[8]) | static_cast<uint8_t>(bytes[9]) << 8;
  CHECK((10 + header_len) % 64 == 0);  // the data is 64-byte aligned
  CHECK(bytes.size() == 10 + header_len + 24);
  std::string header = bytes.substr(10, header_len);
  CHECK(header.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 0) == 0);
  CHECK(header.back() == '\n');
  CHECK_THAT(SerializeNpy(Tensor(i64, {7})),
             Catch::Contains("'descr': '<i8', 'fortran_order': False, 'shape': (7,), }"));
  CHECK_THAT(SerializeNpy(Tensor(boolean, {})),
             Catch::Contains("'descr': '|b1', 'fortran_order': False, 'shape': (), }"));
  CHECK_THAT(SerializeNpy(Tensor(bf16, {1})), Catch::Contains("'descr': '|V2'"));
  CHECK_THAT(SerializeNpy(Tensor(f16, {1})), Catch::Contains("'descr': '<f2'"));
  CHECK_THAT(SerializeNpy(Tensor(u8, {1})), Catch::Contains("'descr': '|u1'"));
}

TEST_CASE("npy: files written by numpy", "[io]") {
  Result<Tensor> f4 = ReadNpy(kFixtures + "f4_2x3.npy");
  REQUIRE(f4.ok());
  CHECK(f4->dtype() == f32);
  CHECK(f4->shape() == Shape{2, 3});
  CHECK(f4->ToDoubles() == std::vector<double>{0.5, 1.5, 2.5, 3.5, 4.5, 5.5});

  Result<Tensor> fortran = ReadNpy(kFixtures + "f8_fortran_2x3.npy");
  REQUIRE(fortran.ok());
  CHECK(fortran->dtype() == f64);
  CHECK(fortran->shape() == Shape{2, 3});
  CHECK(fortran->ToDoubles() == std::vector<double>{1, 2, 3, 4, 5, 6});

  Result<Tensor> big = ReadNpy(kFixtures + "i4_big_endian.npy");
  REQUIRE(big.ok());
  CHECK(big->dtype() == i32);
  CHECK(big->ToInts() == std::vector<int64_t>{-1, 2, 300000});

  Result<Tensor> b = ReadNpy(kFixtures + "bool_4.npy");
  REQUIRE(b.ok());
  CHECK(b->dtype() == boolean);
  CHECK(b->ToInts() == std::vector<int64_t>{1, 0, 0, 1});

  Result<Tensor> half = ReadNpy(kFixtures + "f2_2x2.npy");
  REQUIRE(half.ok());
  CHECK(half->dtype() == f16);
  CHECK(half->ToDoubles() == std::vector<double>{1, -2, 0.5, 65504});

  Result<Tensor> scalar = ReadTensorFile(kFixtures + "i8_scalar.npy");
  REQUIRE(scalar.ok());
  CHECK(scalar->dtype() == i64);
  CHECK(scalar->shape() == Shape{});
  CHECK(scalar->ToInts() == std::vector<int64_t>{-7});
}

TEST_CASE("npy: header variants", "[io]") {
  std::string f64_data = Raw<double>({1, 2, 3, 4, 5, 6});
  const char* dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }";
  for (int major : {1, 2, 3}) {
    Result<Tensor> t = ParseNpy(NpyBytes(major, dict, f64_data), "v.npy");
    INFO("version " << major);
    REQUIRE(t.ok());
    CHECK(t->ToDoubles() == std::vector<double>{1, 2, 3, 4, 5, 6});
  }
  // Double quotes, no trailing comma, keys in another order, Python 2 longs.
  Result<Tensor> q = ParseNpy(
      NpyBytes(1, "{\"shape\": (2L, 3L), \"fortran_order\": False, \"descr\": \"=f8\"}", f64_data),
      "q.npy");
  REQUIRE(q.ok());
  CHECK(q->shape() == Shape{2, 3});
  // Big-endian f8: 1.0 is 3f f0 00 .. 00.
  std::string be("\x3f\xf0\0\0\0\0\0\0\xc0\0\0\0\0\0\0\0", 16);
  Result<Tensor> b = ParseNpy(
      NpyBytes(1, "{'descr': '>f8', 'fortran_order': False, 'shape': (2,), }", be), "be.npy");
  REQUIRE(b.ok());
  CHECK(b->ToDoubles() == std::vector<double>{1, -2});
  // Fortran order, rank 3: shape (2, 2, 2) stored with the first index fastest.
  Result<Tensor> f =
      ParseNpy(NpyBytes(1, "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 2, 2), }",
                        Raw<int32_t>({0, 4, 2, 6, 1, 5, 3, 7})),
               "f.npy");
  REQUIRE(f.ok());
  CHECK(f->ToInts() == std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7});
  // bfloat16 as raw 2-byte void: 0x3f80 = 1.0, 0xc040 = -3.0.
  for (const char* descr : {"|V2", "<V2"}) {
    Result<Tensor> v = ParseNpy(
        NpyBytes(1,
                 std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (2,), }",
                 Raw<uint16_t>({0x3f80, 0xc040})),
        "bf16.npy");
    REQUIRE(v.ok());
    CHECK(v->dtype() == bf16);
    CHECK(v->ToDoubles() == std::vector<double>{1, -3});
  }
}

TEST_CASE("npy: malformed files are errors that name the file", "[io]") {
  std::string good = SerializeNpy(Tensor::FromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6}));

  Error truncated = ParseError(good.substr(0, good.size() - 3));
  CHECK(truncated.code() == ErrorCode::kDataLoss);
  CHECK_THAT(truncated.message(), Catch::Contains("'bad.npy'"));
  Error short_data = ParseError(good.substr(0, good.size() - 4));
  CHECK(short_data.code() == ErrorCode::kDataLoss);
  CHECK_THAT(short_data.message(),
             Catch::Contains("holds 5 elements of data, but f32[2, 3] needs 6"));
  CHECK_THAT(ParseError(good + "xxxx").message(), Catch::Contains("needs 6"));
  CHECK_THAT(ParseError(good.substr(0, 40)).message(), Catch::Contains("truncated .npy header"));
  CHECK_THAT(ParseError(good.substr(0, 9)).message(), Catch::Contains("truncated .npy header"));

  Error magic = ParseError("PK\x03\x04 this is a zip file");
  CHECK(magic.code() == ErrorCode::kDataLoss);
  CHECK_THAT(magic.message(), Catch::Contains("'bad.npy' is not a .npy file"));
  CHECK_THAT(ParseError("").message(), Catch::Contains("is not a .npy file"));

  auto header_error = [](const std::string& dict, const std::string& data = "") {
    return ParseError(NpyBytes(1, dict, data));
  };
  Error c8 = header_error("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }",
                          std::string(8, '\0'));
  CHECK(c8.code() == ErrorCode::kUnimplemented);
  CHECK_THAT(c8.message(), Catch::Contains("unsupported .npy dtype descr '<c8'") &&
                               Catch::Contains("expected one of"));
  CHECK_THAT(header_error("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }").message(),
             Catch::Contains("object arrays"));
  CHECK_THAT(
      header_error("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }").message(),
      Catch::Contains("structured dtypes"));
  CHECK_THAT(header_error("{'descr': '<U3', 'fortran_order': False, 'shape': (1,), }").message(),
             Catch::Contains("'<U3'"));

  Error huge = header_error(
      "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000, 1000000000000), }");
  CHECK(huge.code() == ErrorCode::kResourceExhausted);
  CHECK_THAT(huge.message(), Catch::Contains("exceeds the limit"));
  // Within the limit but not in the file: refused before anything is allocated.
  Error lying = header_error("{'descr': '<f4', 'fortran_order': False, 'shape': (4000000000,), }");
  CHECK(lying.code() == ErrorCode::kDataLoss);
  CHECK_THAT(header_error("{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 3), }").message(),
             Catch::Contains("negative dimension -1"));
  CHECK_THAT(
      header_error("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }")
          .message(),
      Catch::Contains("integer too large"));

  CHECK_THAT(header_error("{'descr': '<f4', 'fortran_order': False, }").message(),
             Catch::Contains("needs 'shape' as a tuple of integers"));
  CHECK_THAT(header_error("{'descr': '<f4', 'fortran_order': 0, 'shape': (1,), }").message(),
             Catch::Contains("malformed .npy header"));
  CHECK_THAT(
      header_error("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 'y'}").message(),
      Catch::Contains("unexpected key 'x'"));
  CHECK_THAT(header_error("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}")
                 .message(),
             Catch::Contains("appears twice"));
  CHECK_THAT(header_error("{'descr: '<f4'").message(), Catch::Contains("malformed .npy header"));
  CHECK_THAT(header_error("not a dict").message(), Catch::Contains("expected '{'"));
  CHECK_THAT(
      header_error("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} trailing").message(),
      Catch::Contains("after the closing"));
  std::string v9 = good;
  v9[6] = 9;
  CHECK_THAT(ParseError(v9).message(), Catch::Contains("unsupported .npy format version 9.0"));

  Result<Tensor> missing = ReadNpy(TempPath("does_not_exist.npy"));
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code() == ErrorCode::kNotFound);
  Result<Tensor> ext = ReadTensorFile("weights.txt");
  REQUIRE_FALSE(ext.ok());
  CHECK_THAT(ext.error().message(),
             Catch::Contains("'weights.txt'") && Catch::Contains("expected .npy"));
}

TEST_CASE("npy: no prefix or corruption of a file crashes the parser", "[io]") {
  std::string good = SerializeNpy(Sample(f64, {3, 2}));
  for (size_t n = 0; n < good.size(); ++n)
    CHECK_FALSE(ParseNpy(good.substr(0, n), "prefix.npy").ok());
  // Deterministic pseudo-random byte flips in the preamble and header.
  uint64_t state = 12345;
  int parsed = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string bytes = good;
    for (int k = 0; k < 3; ++k) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      bytes[(state >> 33) % 128] = static_cast<char>(state >> 20);
    }
    parsed += ParseNpy(bytes, "fuzz.npy").ok();
  }
  CHECK(parsed < 3000);
}
