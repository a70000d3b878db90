// Status and Result: a Result made from a failed Status carries its error; one made from an OK
// Status (a bug in the caller) holds an internal error instead of undefined behaviour.
#include "ir/status.h"

#include <catch2/catch.hpp>

using namespace kiln;

TEST_CASE("status: a Result from a Status", "[status]") {
  Result<int> failed = Status(MakeError(ErrorCode::kNotFound, "no such thing"));
  REQUIRE_FALSE(failed.ok());
  CHECK(failed.error().code() == ErrorCode::kNotFound);
  CHECK(failed.error().message() == "no such thing");
  Result<int> from_ok = OkStatus();
  REQUIRE_FALSE(from_ok.ok());
  CHECK(from_ok.error().code() == ErrorCode::kInternal);
  CHECK_THAT(from_ok.error().message(), Catch::Contains("made from an OK status"));
  Result<int> value = 3;
  CHECK(value.ok());
  CHECK(*value == 3);
}
