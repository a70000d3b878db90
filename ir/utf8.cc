#include "ir/utf8.h"

namespace kiln {

std::string EscapeInvalidUtf8(std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  while (!s.empty()) {
    const int64_t bad = FirstInvalidUtf8(s);
    if (bad < 0) return out.append(s);
    out.append(s.substr(0, static_cast<size_t>(bad)));
    const auto byte = static_cast<unsigned char>(s[static_cast<size_t>(bad)]);
    out += {'\\', 'x', kHex[byte >> 4], kHex[byte & 15]};
    s.remove_prefix(static_cast<size_t>(bad) + 1);
  }
  return out;
}

int64_t FirstInvalidUtf8(std::string_view s) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const auto continuation = [&](size_t i) { return i < s.size() && (byte(i) & 0xC0) == 0x80; };
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char lead = byte(i);
    size_t length = 0;
    // The range of the second byte where the lead alone does not fix it (RFC 3629, section 4).
    unsigned char low = 0x80, high = 0xBF;
    if (lead < 0x80) {
      length = 1;
    } else if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      if (lead == 0xE0) low = 0xA0;   // overlong below U+0800
      if (lead == 0xED) high = 0x9F;  // surrogates U+D800..U+DFFF
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      if (lead == 0xF0) low = 0x90;   // overlong below U+10000
      if (lead == 0xF4) high = 0x8F;  // above U+10FFFF
    } else {
      return static_cast<int64_t>(i);  // a continuation byte, C0, C1 or F5..FF
    }
    if (length > 1 && (i + 1 >= s.size() || byte(i + 1) < low || byte(i + 1) > high))
      return static_cast<int64_t>(i);
    for (size_t k = 2; k < length; ++k)
      if (!continuation(i + k)) return static_cast<int64_t>(i);
    i += length;
  }
  return -1;
}

}  // namespace kiln
