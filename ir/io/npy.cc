#include "ir/io/npy.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <vector>

#include "ir/file_util.h"
#include "ir/io/tensor_file.h"

namespace kiln {
namespace {

static_assert(std::endian::native == std::endian::little,
              "kiln's .npy I/O assumes a little-endian host");

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

struct Descr {
  const char* name;  // as kiln writes it
  char kind;         // numpy kind character
  int size;
  DType dtype;
};
constexpr Descr kDescrs[] = {
    {"<f4", 'f', 4, DType::kF32},  {"<f8", 'f', 8, DType::kF64}, {"<f2", 'f', 2, DType::kF16},
    {"|V2", 'V', 2, DType::kBF16}, {"|i1", 'i', 1, DType::kI8},  {"|u1", 'u', 1, DType::kU8},
    {"<i4", 'i', 4, DType::kI32},  {"<i8", 'i', 8, DType::kI64}, {"|b1", 'b', 1, DType::kBool},
    {"<i2", 'i', 2, DType::kI16},  {"<u2", 'u', 2, DType::kU16}, {"<u4", 'u', 4, DType::kU32},
    {"<u8", 'u', 8, DType::kU64},
};
constexpr char kSupported[] =
    "'<f4', '<f8', '<f2', '|V2' (bf16), '|i1', '|u1', '<i2', '<u2', '<i4', '<u4', '<i8', '<u8', "
    "'|b1'";

// A value of the header dict: a string, a bool or a tuple of integers.
struct HeaderValue {
  enum Kind { kString, kBool, kInts } kind = kString;
  std::string str;
  bool boolean = false;
  std::vector<int64_t> ints;
};

// Parses the Python dict literal of a .npy header, e.g.
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& origin) : text_(text), origin_(origin) {}

  Result<std::map<std::string, HeaderValue>> ParseDict() {
    std::map<std::string, HeaderValue> dict;
    KILN_RETURN_IF_ERROR(Expect('{'));
    while (true) {
      SkipSpace();
      if (Peek() == '}') break;
      KILN_ASSIGN_OR_RETURN(std::string key, ParseString());
      KILN_RETURN_IF_ERROR(Expect(':'));
      KILN_ASSIGN_OR_RETURN(HeaderValue value, ParseValue(key));
      if (!dict.emplace(key, std::move(value)).second) return Fail("key '", key, "' appears twice");
      SkipSpace();
      if (Peek() == ',')
        ++pos_;
      else if (Peek() != '}')
        return Fail("expected ',' or '}' after the value of '", key, "'");
    }
    ++pos_;
    SkipSpace();
    if (pos_ != text_.size()) return Fail("unexpected text after the closing '}'");
    return dict;
  }

 private:
  template <typename... Args>
  Error Fail(const Args&... parts) const {
    return MakeError(ErrorCode::kDataLoss, "'", origin_, "': malformed .npy header at offset ",
                     pos_, ": ", parts..., " (header: ", text_.substr(0, 200), ")");
  }
  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void SkipSpace() {
    while (pos_ < text_.size() && std::strchr(" \t\r\n", text_[pos_]) && text_[pos_] != '\0')
      ++pos_;
  }
  Status Expect(char c) {
    SkipSpace();
    if (Peek() != c) return Fail("expected '", c, "'");
    ++pos_;
    return OkStatus();
  }
  Result<std::string> ParseString() {
    SkipSpace();
    char quote = Peek();
    if (quote != '\'' && quote != '"') return Fail("expected a quoted string");
    std::string out;
    for (++pos_; pos_ < text_.size() && text_[pos_] != quote; ++pos_) {
      if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) ++pos_;
      out += text_[pos_];
    }
    if (pos_ >= text_.size()) return Fail("unterminated string");
    ++pos_;
    return out;
  }
  Result<int64_t> ParseInt() {
    SkipSpace();
    size_t start = pos_;
    if (Peek() == '-' || Peek() == '+') ++pos_;
    if (!std::isdigit(static_cast<unsigned char>(Peek()))) return Fail("expected an integer");
    int64_t v = 0;
    for (; std::isdigit(static_cast<unsigned char>(Peek())); ++pos_) {
      if (v > (INT64_MAX - 9) / 10) return Fail("integer too large");
      v = v * 10 + (Peek() - '0');
    }
    if (Peek() == 'L') ++pos_;  // Python 2 longs
    return text_[start] == '-' ? -v : v;
  }
  Result<HeaderValue> ParseValue(const std::string& key) {
    SkipSpace();
    HeaderValue v;
    if (Peek() == '\'' || Peek() == '"') {
      KILN_ASSIGN_OR_RETURN(v.str, ParseString());
    } else if (text_.compare(pos_, 4, "True") == 0 || text_.compare(pos_, 5, "False") == 0) {
      v.kind = HeaderValue::kBool;
      v.boolean = text_[pos_] == 'T';
      pos_ += v.boolean ? 4 : 5;
    } else if (Peek() == '(') {
      v.kind = HeaderValue::kInts;
      ++pos_;
      while (true) {
        SkipSpace();
        if (Peek() == ')') break;
        KILN_ASSIGN_OR_RETURN(int64_t d, ParseInt());
        v.ints.push_back(d);
        SkipSpace();
        if (Peek() == ',')
          ++pos_;
        else if (Peek() != ')')
          return Fail("expected ',' or ')' in the tuple of '", key, "'");
      }
      ++pos_;
    } else if (Peek() == '[' && key == "descr") {
      return MakeError(ErrorCode::kUnimplemented, "'", origin_,
                       "': structured dtypes (a list 'descr') are not supported; expected one of ",
                       kSupported);
    } else {
      return Fail("expected a string, True, False or a tuple as the value of '", key, "'");
    }
    return v;
  }

  const std::string& text_;
  const std::string& origin_;
  size_t pos_ = 0;
};

uint32_t LittleEndian(const std::string& bytes, size_t offset, int n) {
  uint32_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(bytes[offset + i]);
  return v;
}

// The dtype of a descr string and whether its bytes must be swapped.
Result<std::pair<DType, bool>> ParseDescr(const std::string& descr, const std::string& origin) {
  auto unsupported = [&](const char* why) {
    return MakeError(ErrorCode::kUnimplemented, "'", origin, "': unsupported .npy dtype descr '",
                     descr, "'", why, "; expected one of ", kSupported);
  };
  if (descr.size() < 2 || !std::strchr("<>|=", descr[0]) || descr[0] == '\0')
    return unsupported("");
  char kind = descr[1];
  if (kind == 'O') return unsupported(" (object arrays hold pickled Python objects)");
  for (const Descr& d : kDescrs) {
    if (d.kind == kind && descr.substr(2) == std::to_string(d.size)) {
      bool swap = descr[0] == '>' && d.size > 1 && kind != 'V';
      return std::make_pair(d.dtype, swap);
    }
  }
  return unsupported("");
}

const Descr& DescrOf(DType dtype) {
  for (const Descr& d : kDescrs)
    if (d.dtype == dtype) return d;
  KILN_CHECK(false);
}

}  // namespace

Result<NpyHeader> ParseNpyHeader(const std::string& bytes, const std::string& origin) {
  if (bytes.size() < kMagicSize || bytes.compare(0, kMagicSize, kMagic, kMagicSize) != 0)
    return MakeError(ErrorCode::kDataLoss, "'", origin,
                     "' is not a .npy file: it does not start with the magic \"\\x93NUMPY\"");
  if (bytes.size() < kMagicSize + 2)
    return MakeError(ErrorCode::kDataLoss, "'", origin, "': truncated .npy header (no version)");
  int major = static_cast<uint8_t>(bytes[6]), minor = static_cast<uint8_t>(bytes[7]);
  if (major < 1 || major > 3 || minor != 0)
    return MakeError(ErrorCode::kUnimplemented, "'", origin, "': unsupported .npy format version ",
                     major, ".", minor, "; expected 1.0, 2.0 or 3.0");
  size_t len_size = major == 1 ? 2 : 4;
  size_t header_start = kMagicSize + 2 + len_size;
  if (bytes.size() < header_start)
    return MakeError(ErrorCode::kDataLoss, "'", origin,
                     "': truncated .npy header (no header length)");
  size_t header_len = LittleEndian(bytes, kMagicSize + 2, static_cast<int>(len_size));
  if (bytes.size() - header_start < header_len)
    return MakeError(ErrorCode::kDataLoss, "'", origin, "': truncated .npy header: it claims ",
                     header_len, " bytes, the file has ", bytes.size() - header_start,
                     " after the preamble");
  std::string header = bytes.substr(header_start, header_len);
  KILN_ASSIGN_OR_RETURN(auto dict, HeaderParser(header, origin).ParseDict());
  for (const auto& [key, value] : dict)
    if (key != "descr" && key != "fortran_order" && key != "shape")
      return MakeError(ErrorCode::kDataLoss, "'", origin, "': unexpected key '", key,
                       "' in the .npy header; expected 'descr', 'fortran_order' and 'shape'");
  auto field = [&](const char* key, HeaderValue::Kind kind,
                   const char* what) -> Result<HeaderValue> {
    auto it = dict.find(key);
    if (it == dict.end() || it->second.kind != kind)
      return MakeError(ErrorCode::kDataLoss, "'", origin, "': the .npy header needs '", key,
                       "' as ", what);
    return it->second;
  };
  KILN_ASSIGN_OR_RETURN(HeaderValue descr, field("descr", HeaderValue::kString, "a string"));
  KILN_ASSIGN_OR_RETURN(HeaderValue fortran,
                        field("fortran_order", HeaderValue::kBool, "True or False"));
  KILN_ASSIGN_OR_RETURN(HeaderValue shape_value,
                        field("shape", HeaderValue::kInts, "a tuple of integers"));
  KILN_ASSIGN_OR_RETURN(auto dtype_swap, ParseDescr(descr.str, origin));
  auto [dtype, swap] = dtype_swap;

  return NpyHeader{dtype, Shape(shape_value.ints), fortran.boolean, swap,
                   header_start + header_len};
}

Result<Tensor> ParseNpy(const std::string& bytes, const std::string& origin) {
  KILN_ASSIGN_OR_RETURN(NpyHeader header, ParseNpyHeader(bytes, origin));
  const DType dtype = header.dtype;
  const Shape& shape = header.shape;
  const bool swap = header.byte_swapped;
  size_t data_start = header.data_offset;
  size_t data_bytes = bytes.size() - data_start;
  int size = DTypeSize(dtype);
  if (data_bytes % size != 0)
    return MakeError(ErrorCode::kDataLoss, "'", origin, "': the .npy data is ", data_bytes,
                     " bytes, not a whole number of ", size,
                     "-byte elements (truncated or corrupt file)");
  KILN_ASSIGN_OR_RETURN(Tensor t,
                        internal::CreateTensorForData(dtype, shape, data_bytes / size, origin));

  const char* src = bytes.data() + data_start;
  auto* dst = static_cast<char*>(t.raw_data());
  // Fortran order: element (i0, .., ik) lies at sum(ij * fstride_j), fstride_0 = 1.
  std::vector<int64_t> fstrides(shape.rank(), 1);
  for (int i = 1; i < shape.rank(); ++i) fstrides[i] = fstrides[i - 1] * shape[i - 1];
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    int64_t from = i;
    if (header.fortran_order) {
      from = 0;
      for (int64_t r = i, d = shape.rank() - 1; d >= 0; --d) {
        from += (r % shape[d]) * fstrides[d];
        r /= shape[d];
      }
    }
    std::memcpy(dst + i * size, src + from * size, size);
    if (swap) std::reverse(dst + i * size, dst + (i + 1) * size);
  }
  if (dtype == DType::kBool) {
    for (int64_t i = 0; i < t.num_elements(); ++i) dst[i] = dst[i] != 0;
  }
  return t;
}

Result<Tensor> ReadNpy(const std::string& path) {
  KILN_ASSIGN_OR_RETURN(std::string bytes,
                        ReadFileToString(path, kMaxTensorBytes + (int64_t{1} << 20)));
  return ParseNpy(bytes, path);
}

std::string SerializeNpy(const Tensor& t) {
  std::string shape = "(";
  for (int i = 0; i < t.rank(); ++i)
    shape += std::to_string(t.shape()[i]) + (t.rank() == 1 ? "," : i + 1 < t.rank() ? ", " : "");
  shape += ")";
  std::string dict = std::string("{'descr': '") + DescrOf(t.dtype()).name +
                     "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad with spaces and a final newline so that the data starts at a multiple of 64 bytes.
  bool v2 = kMagicSize + 2 + 2 + dict.size() + 1 > 65535;
  size_t preamble = kMagicSize + 2 + (v2 ? 4 : 2);
  size_t total = (preamble + dict.size() + 1 + 63) / 64 * 64;
  dict.append(total - preamble - dict.size() - 1, ' ');
  dict += '\n';
  std::string out(kMagic, kMagicSize);
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  for (size_t i = 0; i < (v2 ? 4u : 2u); ++i)
    out += static_cast<char>((dict.size() >> (8 * i)) & 0xff);
  out += dict;
  out.append(static_cast<const char*>(t.raw_data()), static_cast<size_t>(t.byte_size()));
  return out;
}

Status WriteNpy(const std::string& path, const Tensor& t) {
  if (!t.valid())
    return MakeError(ErrorCode::kInvalidArgument, "cannot write an invalid tensor to '", path, "'");
  if (IsContainer(t.dtype()))
    return MakeError(ErrorCode::kInvalidArgument, "cannot write a ", DTypeName(t.dtype()),
                     " value to '", path, "': .npy holds one tensor");
  return WriteFileAtomically(path, SerializeNpy(t));
}

}  // namespace kiln
