// DType names and 16-bit conversions, Shape broadcasting, Tensor storage and accessors.
#include "ir/tensor.h"

#include <catch2/catch.hpp>
#include <cmath>

using namespace kiln;

TEST_CASE("dtype: names round trip and sizes", "[tensor]") {
  for (DType t : AllDTypes()) {
    CHECK(DTypeFromName(DTypeName(t)) == t);
    CHECK(DTypeSize(t) > 0);
  }
  CHECK_FALSE(DTypeFromName("float32").has_value());
  CHECK(DTypeSize(bf16) == 2);
  CHECK(DTypeSize(boolean) == 1);
}

TEST_CASE("dtype: half conversions are exact where representable and round to nearest even",
          "[tensor]") {
  CHECK(FloatToHalf(1.0f) == 0x3c00);
  CHECK(FloatToHalf(-2.0f) == 0xc000);
  CHECK(FloatToHalf(65504.0f) == 0x7bff);
  CHECK(FloatToHalf(65520.0f) == 0x7c00);                          // rounds to inf
  CHECK(FloatToHalf(std::ldexp(1.0f, -24)) == 0x0001);             // smallest subnormal
  CHECK(FloatToHalf(std::ldexp(1.0f, -26)) == 0x0000);             // underflows to zero
  CHECK(FloatToHalf(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);      // tie -> even
  CHECK(FloatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);  // tie -> even (up)
  CHECK(std::isnan(HalfToFloat(FloatToHalf(NAN))));
  CHECK(HalfToFloat(FloatToHalf(INFINITY)) == INFINITY);
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue;  // NaNs
    REQUIRE(FloatToHalf(HalfToFloat(static_cast<uint16_t>(h))) == h);
  }
}

TEST_CASE("dtype: bfloat16 conversions", "[tensor]") {
  CHECK(FloatToBFloat16(1.0f) == 0x3f80);
  CHECK(BFloat16ToFloat(0x3f80) == 1.0f);
  CHECK(BFloat16ToFloat(FloatToBFloat16(3.14159f)) == 3.140625f);
  CHECK(std::isnan(BFloat16ToFloat(FloatToBFloat16(NAN))));
  for (uint32_t b = 0; b < 0x10000; ++b) {
    if ((b & 0x7f80) == 0x7f80 && (b & 0x7f)) continue;
    REQUIRE(FloatToBFloat16(BFloat16ToFloat(static_cast<uint16_t>(b))) == b);
  }
}

TEST_CASE("shape: broadcasting rules and unknown dims", "[tensor]") {
  CHECK(*BroadcastShapes({2, 1, 3}, {4, 1}) == Shape{2, 4, 3});
  CHECK(*BroadcastShapes({}, {5}) == Shape{5});
  CHECK(*BroadcastShapes({-1, 3}, {3}) == Shape{-1, 3});
  CHECK(*BroadcastShapes({-1, 3}, {4, 1}) == Shape{4, 3});
  CHECK(*BroadcastShapes({-1}, {-1}) == Shape{-1});
  CHECK(*BroadcastShapes({0, 3}, {1, 3}) == Shape{0, 3});
  Result<Shape> bad = BroadcastShapes({2, 3}, {4, 3});
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.error().message(), Catch::Contains("[2, 3] and [4, 3] do not broadcast"));
  CHECK(*NormalizeAxis(-1, 3) == 2);
  CHECK_FALSE(NormalizeAxis(3, 3).ok());
  CHECK_FALSE(NormalizeAxis(-4, 3).ok());
  CHECK(*NormalizeAxis(0, 0) == 0);
  CHECK(Shape{-1, 4}.IsCompatibleWith(Shape{7, 4}));
  CHECK_FALSE(Shape{-1, 4}.IsCompatibleWith(Shape{7, 5}));
  CHECK(Shape{}.NumElements() == 1);
}

TEST_CASE("tensor: storage, accessors, clone, reshape", "[tensor]") {
  Tensor t = Tensor::FromVector<float>({2, 2}, {1, 2, 3, 4});
  CHECK(t.num_elements() == 4);
  CHECK(t.byte_size() == 16);
  CHECK(reinterpret_cast<uintptr_t>(t.raw_data()) % 64 == 0);
  Tensor shared = t;
  Tensor deep = t.Clone();
  t.SetDouble(0, 9);
  CHECK(shared.GetDouble(0) == 9);
  CHECK(deep.GetDouble(0) == 1);
  CHECK(t.Reshaped({4})->shape() == Shape{4});
  CHECK_FALSE(t.Reshaped({3}).ok());
  CHECK(Tensor::Scalar<int64_t>(5).shape() == Shape{});
  CHECK(t.Summary(2) == "f32[2, 2] {9, 2, ... (4 values)}");
  Tensor b = Tensor::FromVector<bool>({3}, {true, false, true});
  CHECK(b.Summary() == "bool[3] {true, false, true}");
}

TEST_CASE("tensor: sizes from user input are checked, never crash", "[tensor]") {
  CHECK(Tensor::Create(f32, {-1, 2}).error().code() == ErrorCode::kInvalidArgument);
  Result<Tensor> huge = Tensor::Create(f32, {int64_t{1} << 40, int64_t{1} << 40});
  REQUIRE_FALSE(huge.ok());
  CHECK(huge.error().code() == ErrorCode::kResourceExhausted);
  CHECK(Tensor::Create(f64, {0, 5})->num_elements() == 0);
}
