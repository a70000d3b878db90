#include "tools/lib/row_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "ir/checked_math.h"
#include "ir/io/npy.h"
#include "ir/io/tensor_file.h"
#include "tools/flags.h"
#include "tools/lib/batch_rows.h"

namespace kiln::cli {
namespace {

// One array in memory.
class TensorRows : public RowSource {
 public:
  explicit TensorRows(Tensor t) : t_(std::move(t)) {
    rows_ = t_.shape()[0];
    dtype_ = t_.dtype();
    row_shape_ =
        Shape(std::vector<int64_t>(t_.shape().dims().begin() + 1, t_.shape().dims().end()));
  }
  Result<Tensor> Rows(const std::vector<int64_t>* order, int64_t begin,
                      int64_t end) const override {
    return BatchRows(t_, order, begin, end);
  }

 private:
  Tensor t_;
};

// A file open for reading at offsets (pread: no shared position, so threads may read at once).
class ReadOnlyFile {
 public:
  static Result<std::shared_ptr<ReadOnlyFile>> Open(const std::string& path) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      return MakeError(ErrorCode::kNotFound, "cannot open '", path, "': ", std::strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      close(fd);
      return MakeError(ErrorCode::kInvalidArgument, "'", path, "' is not a regular file");
    }
    return std::shared_ptr<ReadOnlyFile>(new ReadOnlyFile(fd, path, st.st_size));
  }
  ~ReadOnlyFile() { close(fd_); }

  Status ReadAt(int64_t offset, char* out, int64_t bytes) const {
    while (bytes > 0) {
      ssize_t n = pread(fd_, out, static_cast<size_t>(bytes), offset);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        return MakeError(ErrorCode::kDataLoss, "'", path_, "': cannot read ", bytes,
                         " bytes at offset ", offset, n < 0 ? ": " : " (the file ended)",
                         n < 0 ? std::strerror(errno) : "");
      out += n;
      offset += n;
      bytes -= n;
    }
    return OkStatus();
  }
  const std::string& path() const { return path_; }
  int64_t size() const { return size_; }

 private:
  ReadOnlyFile(int fd, std::string path, int64_t size)
      : fd_(fd), path_(std::move(path)), size_(size) {}
  int fd_;
  std::string path_;
  int64_t size_;
};

// *.npy shards of one dtype and row shape, concatenated along the first axis.
class NpyShards : public RowSource {
 public:
  static Result<std::shared_ptr<const RowSource>> Open(const std::string& dir) {
    std::vector<std::string> paths;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
      if (entry.path().extension() == ".npy") paths.push_back(entry.path().string());
    if (ec) return MakeError(ErrorCode::kNotFound, "cannot list '", dir, "': ", ec.message());
    if (paths.empty())
      return MakeError(ErrorCode::kInvalidArgument, "'", dir, "' holds no .npy shards");
    std::sort(paths.begin(), paths.end());
    auto shards = std::shared_ptr<NpyShards>(new NpyShards());
    for (const std::string& path : paths) KILN_RETURN_IF_ERROR(shards->Add(path));
    return std::shared_ptr<const RowSource>(std::move(shards));
  }

  Result<Tensor> Rows(const std::vector<int64_t>* order, int64_t begin,
                      int64_t end) const override {
    Shape shape = row_shape_;
    shape.mutable_dims().insert(shape.mutable_dims().begin(), end - begin);
    KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::Create(dtype_, shape));
    char* dst = static_cast<char*>(out.raw_data());
    for (int64_t i = begin; i < end; ++i, dst += row_bytes_) {
      const int64_t row = order ? (*order)[i] : i;
      const size_t s = std::upper_bound(starts_.begin(), starts_.end(), row) - starts_.begin() - 1;
      const Shard& shard = shards_[s];
      KILN_RETURN_IF_ERROR(
          shard.file->ReadAt(shard.data_offset + (row - starts_[s]) * row_bytes_, dst, row_bytes_));
    }
    if (dtype_ == DType::kBool) {  // numpy writes 0/1, but a hand-made file may hold other bytes
      char* b = static_cast<char*>(out.raw_data());
      for (int64_t i = 0; i < out.num_elements(); ++i) b[i] = b[i] != 0;
    }
    return out;
  }

 private:
  struct Shard {
    std::shared_ptr<ReadOnlyFile> file;
    int64_t data_offset = 0;
  };

  Status Add(const std::string& path) {
    KILN_ASSIGN_OR_RETURN(std::shared_ptr<ReadOnlyFile> file, ReadOnlyFile::Open(path));
    std::string head(static_cast<size_t>(std::min<int64_t>(file->size(), int64_t{1} << 20)), '\0');
    KILN_RETURN_IF_ERROR(file->ReadAt(0, head.data(), static_cast<int64_t>(head.size())));
    KILN_ASSIGN_OR_RETURN(NpyHeader h, ParseNpyHeader(head, path));
    auto refuse = [&](const auto&... why) {
      return MakeError(ErrorCode::kInvalidArgument, "shard '", path, "': ", why...);
    };
    if (h.shape.rank() == 0) return refuse("a scalar; shards need a first (example) axis");
    if (h.fortran_order && h.shape.rank() > 1)
      return refuse("fortran_order; save it in C order (numpy.ascontiguousarray)");
    if (h.byte_swapped && DTypeSize(h.dtype) > 1)
      return refuse("big-endian; save it little-endian");
    Shape row(std::vector<int64_t>(h.shape.dims().begin() + 1, h.shape.dims().end()));
    if (shards_.empty()) {
      dtype_ = h.dtype;
      row_shape_ = row;
      std::optional<int64_t> bytes = int64_t{DTypeSize(dtype_)};
      for (int64_t d : row.dims()) bytes = bytes && d >= 0 ? CheckedMul(*bytes, d) : std::nullopt;
      if (!bytes) return refuse("its rows' size overflows");
      row_bytes_ = *bytes;
    } else if (h.dtype != dtype_ || !(row == row_shape_)) {
      return refuse(DTypeName(h.dtype), h.shape.ToString(), " does not match the first shard's ",
                    DTypeName(dtype_), " rows of ", row_shape_.ToString());
    }
    const int64_t rows = h.shape[0];
    std::optional<int64_t> data = rows >= 0 ? CheckedMul(rows, row_bytes_) : std::nullopt;
    if (!data || *data > file->size() - static_cast<int64_t>(h.data_offset))
      return refuse("its header claims ", h.shape.ToString(), ", more than the file holds");
    std::optional<int64_t> total = CheckedAdd(rows_, rows);
    if (!total) return refuse("the shards hold too many rows");
    starts_.push_back(rows_);
    rows_ = *total;
    shards_.push_back({std::move(file), static_cast<int64_t>(h.data_offset)});
    return OkStatus();
  }

  std::vector<Shard> shards_;
  std::vector<int64_t> starts_;  // the first row of each shard
  int64_t row_bytes_ = 0;
};

// Fields of one CSV line, trimmed.
std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t start = 0;
  while (true) {
    size_t comma = line.find(',', start);
    std::string_view f =
        line.substr(start, comma == std::string_view::npos ? line.npos : comma - start);
    while (!f.empty() && (f.front() == ' ' || f.front() == '\t')) f.remove_prefix(1);
    while (!f.empty() && (f.back() == ' ' || f.back() == '\t' || f.back() == '\r'))
      f.remove_suffix(1);
    fields.push_back(f);
    if (comma == std::string_view::npos) return fields;
    start = comma + 1;
  }
}

std::optional<double> Number(std::string_view field) {
  if (!field.empty() && field.front() == '+') field.remove_prefix(1);
  double v = 0;
  auto [end, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
  if (ec != std::errc() || end != field.data() + field.size() || field.empty()) return std::nullopt;
  return v;
}

// Columns of a CSV file, one row per line (a header line, if any, left out).
class CsvColumns : public RowSource {
 public:
  static Result<std::shared_ptr<const RowSource>> Open(const std::string& path,
                                                       const std::string& columns,
                                                       const std::string& dtype) {
    KILN_ASSIGN_OR_RETURN(std::shared_ptr<ReadOnlyFile> file, ReadOnlyFile::Open(path));
    auto csv = std::shared_ptr<CsvColumns>(new CsvColumns(file));
    std::optional<DType> t = DTypeFromName(dtype.empty() ? "f32" : dtype);
    if (!t || (*t != DType::kF32 && *t != DType::kF64 && *t != DType::kI32 && *t != DType::kI64))
      return MakeError(ErrorCode::kInvalidArgument, "'", path, "': dtype '", dtype,
                       "' is not one of f32, f64, i32, i64");
    csv->dtype_ = *t;
    KILN_RETURN_IF_ERROR(csv->IndexLines());
    KILN_RETURN_IF_ERROR(csv->SelectColumns(columns));
    return std::shared_ptr<const RowSource>(std::move(csv));
  }

  Result<Tensor> Rows(const std::vector<int64_t>* order, int64_t begin,
                      int64_t end) const override {
    Shape shape = row_shape_;
    shape.mutable_dims().insert(shape.mutable_dims().begin(), end - begin);
    KILN_ASSIGN_OR_RETURN(Tensor out, Tensor::Create(dtype_, shape));
    const bool integer = IsInteger(dtype_);
    int64_t k = 0;  // the element written next
    for (int64_t i = begin; i < end; ++i) {
      const int64_t row = order ? (*order)[i] : i;
      KILN_ASSIGN_OR_RETURN(std::string line, Line(row));
      const std::vector<std::string_view> fields = Fields(line);
      for (int c : columns_) {
        auto fail = [&](const auto&... why) {
          return MakeError(ErrorCode::kInvalidArgument, "'", file_->path(), "' line ",
                           line_numbers_[row], ", column ", c, ": ", why...);
        };
        if (c >= static_cast<int>(fields.size()))
          return fail("the line has only ", fields.size(), " columns");
        std::optional<double> v = Number(fields[c]);
        if (!v) return fail("'", std::string(fields[c]), "' is not a number");
        if (integer && (*v != std::floor(*v) || std::abs(*v) > 9.0e15))
          return fail("'", std::string(fields[c]), "' is not a whole number (dtype ",
                      DTypeName(dtype_), ")");
        out.SetDouble(k++, *v);
      }
    }
    return out;
  }

 private:
  explicit CsvColumns(std::shared_ptr<ReadOnlyFile> file) : file_(std::move(file)) {}

  // The text of row `row`'s line, without its end.
  Result<std::string> Line(int64_t row) const {
    const int64_t from = lines_[row], to = std::min(lines_[row + 1], file_->size());
    std::string line(static_cast<size_t>(to - from), '\0');
    KILN_RETURN_IF_ERROR(file_->ReadAt(from, line.data(), to - from));
    if (const size_t nl = line.find('\n'); nl != std::string::npos) line.resize(nl);
    return line;
  }

  // The offset of every non-empty line (and the end of the file after the last); the first line
  // goes to header_ when it is not all numbers.
  Status IndexLines() {
    std::vector<char> chunk(1 << 20);
    int64_t offset = 0, line_start = 0, line_number = 1;
    bool blank = true;
    auto end_line = [&](int64_t end) -> Status {
      if (!blank) {
        if (lines_.empty() && header_.empty() && !IsNumbers(line_start, end)) {
          std::string text(static_cast<size_t>(end - line_start), '\0');
          KILN_RETURN_IF_ERROR(file_->ReadAt(line_start, text.data(), end - line_start));
          for (std::string_view f : Fields(text)) header_.emplace_back(f);
        } else {
          lines_.push_back(line_start);
          line_numbers_.push_back(line_number);
        }
      }
      blank = true;
      line_start = end + 1;
      ++line_number;
      return OkStatus();
    };
    while (offset < file_->size()) {
      const int64_t n =
          std::min<int64_t>(static_cast<int64_t>(chunk.size()), file_->size() - offset);
      KILN_RETURN_IF_ERROR(file_->ReadAt(offset, chunk.data(), n));
      for (int64_t i = 0; i < n; ++i) {
        const char c = chunk[i];
        if (c == '\n') {
          KILN_RETURN_IF_ERROR(end_line(offset + i));
        } else if (c != '\r' && c != ' ' && c != '\t') {
          blank = false;
        }
      }
      offset += n;
    }
    KILN_RETURN_IF_ERROR(end_line(file_->size()));
    if (lines_.empty())
      return MakeError(ErrorCode::kInvalidArgument, "'", file_->path(), "' has no rows");
    lines_.push_back(file_->size() + 1);  // Rows reads line i as [lines_[i], lines_[i+1])
    rows_ = static_cast<int64_t>(line_numbers_.size());
    return OkStatus();
  }

  bool IsNumbers(int64_t from, int64_t to) const {
    std::string text(static_cast<size_t>(to - from), '\0');
    if (!file_->ReadAt(from, text.data(), to - from).ok()) return false;
    for (std::string_view f : Fields(text))
      if (!Number(f)) return false;
    return true;
  }

  // "": every column of the first row; else indices, ranges a-b and header names, by commas.
  Status SelectColumns(const std::string& spec) {
    auto fail = [&](const auto&... why) {
      return MakeError(ErrorCode::kInvalidArgument, "'", file_->path(), "' columns '", spec,
                       "': ", why...);
    };
    KILN_ASSIGN_OR_RETURN(std::string first, Line(0));
    const int width = static_cast<int>(Fields(first).size());
    if (spec.empty()) {
      for (int c = 0; c < width; ++c) columns_.push_back(c);
    } else {
      for (std::string_view token : Fields(spec)) {
        const size_t dash = token.find('-');
        int a = 0, b = 0;
        auto parse = [](std::string_view s, int& v) {
          auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
          return ec == std::errc() && end == s.data() + s.size() && v >= 0;
        };
        if (parse(token, a)) {
          columns_.push_back(a);
        } else if (dash != token.npos && parse(token.substr(0, dash), a) &&
                   parse(token.substr(dash + 1), b) && a <= b) {
          for (int c = a; c <= b; ++c) columns_.push_back(c);
        } else if (auto it = std::find(header_.begin(), header_.end(), token);
                   it != header_.end()) {
          columns_.push_back(static_cast<int>(it - header_.begin()));
        } else {
          return fail("'", std::string(token), "' is no column index, range or ",
                      header_.empty() ? "name (the file has no header)" : "name in the header");
        }
      }
    }
    for (int c : columns_)
      if (c >= width)
        return fail("column ", c, " is past the ", width, " columns of the first row");
    if (columns_.empty()) return fail("no columns");
    if (columns_.size() > 1) row_shape_ = Shape({static_cast<int64_t>(columns_.size())});
    return OkStatus();
  }

  std::shared_ptr<ReadOnlyFile> file_;
  std::vector<std::string> header_;
  std::vector<int64_t> lines_;         // offsets of the rows' lines, then the end
  std::vector<int64_t> line_numbers_;  // 1-based, for errors
  std::vector<int> columns_;
};

Result<std::shared_ptr<const RowSource>> OpenOne(const std::string& spec) {
  const size_t csv = spec.find(".csv");
  if (csv != std::string::npos && (csv + 4 == spec.size() || spec[csv + 4] == ':')) {
    const std::string path = spec.substr(0, csv + 4);
    std::string rest = csv + 4 < spec.size() ? spec.substr(csv + 5) : "";
    std::string dtype;
    if (const size_t colon = rest.rfind(':'); colon != std::string::npos) {
      dtype = rest.substr(colon + 1);
      rest = rest.substr(0, colon);
    } else if (DTypeFromName(rest)) {  // FILE.csv:i64 (every column)
      dtype = rest;
      rest.clear();
    }
    return CsvColumns::Open(path, rest, dtype);
  }
  if (std::filesystem::is_directory(spec)) return NpyShards::Open(spec);
  KILN_ASSIGN_OR_RETURN(Tensor t, ReadTensorFile(spec));
  if (t.rank() == 0)
    return MakeError(ErrorCode::kInvalidArgument, "'", spec,
                     "' is a scalar; it needs a first (example) axis");
  return RowsOf(std::move(t));
}

}  // namespace

std::shared_ptr<const RowSource> RowsOf(Tensor t) {
  return std::make_shared<TensorRows>(std::move(t));
}

Result<std::vector<NamedRowSource>> OpenRowSources(const std::vector<std::string>& specs,
                                                   const std::string& flag) {
  std::vector<NamedRowSource> sources;
  for (const std::string& spec : specs) {
    KILN_ASSIGN_OR_RETURN(auto name_spec, SplitNameValue(flag, spec));
    Result<std::shared_ptr<const RowSource>> source = OpenOne(name_spec.second);
    if (!source.ok()) return source.error().WithContext("--" + flag + " '" + name_spec.first + "'");
    sources.emplace_back(name_spec.first, std::move(*source));
  }
  return sources;
}

Result<std::vector<std::pair<std::string, Tensor>>> ReadAllRows(
    const std::vector<NamedRowSource>& sources) {
  std::vector<std::pair<std::string, Tensor>> arrays;
  for (const auto& [name, source] : sources) {
    Result<Tensor> all = source->Rows(nullptr, 0, source->rows());
    if (!all.ok()) return all.error().WithContext("'" + name + "'");
    arrays.emplace_back(name, std::move(*all));
  }
  return arrays;
}

}  // namespace kiln::cli
