// Opening shared libraries at run time (runtime/shared_library.h): found on the loader's path or in
// the fallback folder, or refused in one line naming the library.
#include "runtime/shared_library.h"

#include <catch2/catch.hpp>

namespace kiln {
namespace {

Result<int> LoadCountingCalls() {
  static int calls = 0;
  return ++calls;
}

TEST_CASE("shared libraries: opened from the loader's path or a fallback folder, else refused",
          "[runtime]") {
  CHECK(OpenSharedLibrary("libm.so.6", "").ok());
  CHECK(OpenSharedLibrary("libm.so.6", "/nonexistent/").ok());
  Result<void*> missing = OpenSharedLibrary("libkiln_missing.so.1", "/nonexistent/");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code() == ErrorCode::kFailedPrecondition);
  CHECK_THAT(missing.error().message(), Catch::StartsWith("cannot load libkiln_missing.so.1 ("));
  CHECK(missing.error().message().find('\n') == std::string::npos);
}

TEST_CASE("shared libraries: LoadOnce loads once and answers every call the same", "[runtime]") {
  Result<const int*> first = LoadOnce<int, LoadCountingCalls>();
  Result<const int*> second = LoadOnce<int, LoadCountingCalls>();
  REQUIRE(first.ok());
  REQUIRE(second.ok());
  CHECK(**first == 1);
  CHECK(*first == *second);
}

}  // namespace
}  // namespace kiln
