// FirstInvalidUtf8 follows RFC 3629, as protobuf's check of string fields does; EscapeInvalidUtf8
// writes each byte it refuses as \xNN.
#include "ir/utf8.h"

#include <catch2/catch.hpp>
#include <string>

using namespace kiln;

TEST_CASE("utf8: valid text of every sequence length", "[utf8]") {
  CHECK(FirstInvalidUtf8("") == -1);
  CHECK(FirstInvalidUtf8("dense/kernel:0") == -1);
  CHECK(FirstInvalidUtf8("caf\xc3\xa9") == -1);           // U+00E9
  CHECK(FirstInvalidUtf8("\xe2\x82\xac") == -1);          // U+20AC
  CHECK(FirstInvalidUtf8("\xef\xbf\xbf") == -1);          // U+FFFF
  CHECK(FirstInvalidUtf8("\xf0\x9f\x98\x80 ok") == -1);   // U+1F600
  CHECK(FirstInvalidUtf8("\xf4\x8f\xbf\xbf") == -1);      // U+10FFFF, the last code point
  CHECK(FirstInvalidUtf8(std::string("a\0b", 3)) == -1);  // NUL is valid UTF-8
}

TEST_CASE("utf8: the first bad byte of each kind of invalid sequence", "[utf8]") {
  CHECK(FirstInvalidUtf8("ab\xff") == 2);
  CHECK(FirstInvalidUtf8("\x80") == 0);              // a continuation byte first
  CHECK(FirstInvalidUtf8("x\xc0\x80") == 1);         // overlong NUL
  CHECK(FirstInvalidUtf8("\xc1\xbf") == 0);          // overlong ASCII
  CHECK(FirstInvalidUtf8("\xe0\x80\x80") == 0);      // overlong three bytes
  CHECK(FirstInvalidUtf8("\xf0\x8f\xbf\xbf") == 0);  // overlong four bytes
  CHECK(FirstInvalidUtf8("ok\xed\xa0\x80") == 2);    // surrogate U+D800
  CHECK(FirstInvalidUtf8("\xf4\x90\x80\x80") == 0);  // above U+10FFFF
  CHECK(FirstInvalidUtf8("\xf5\x80\x80\x80") == 0);
  CHECK(FirstInvalidUtf8("\xe2\x82") == 0);   // truncated
  CHECK(FirstInvalidUtf8("\xe2\x82x") == 0);  // a sequence cut by ASCII
  CHECK(FirstInvalidUtf8("\xc3\xa9\xc3") == 2);
}

TEST_CASE("utf8: invalid bytes escaped, valid text kept", "[utf8]") {
  CHECK(EscapeInvalidUtf8("caf\xc3\xa9") == "caf\xc3\xa9");
  CHECK(EscapeInvalidUtf8("m\xff.onnx") == "m\\xff.onnx");
  CHECK(EscapeInvalidUtf8("\xe2\x82x\xc0") == "\\xe2\\x82x\\xc0");
  CHECK(FirstInvalidUtf8(EscapeInvalidUtf8("\xed\xa0\x80\xf4\x90")) == -1);
}
