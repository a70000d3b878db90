#include "runtime/checkpoint.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "ir/checksummed_proto.h"
#include "ir/crc32c.h"
#include "ir/file_util.h"
#include "ir/serialize.h"
#include "ir/utf8.h"
#include "runtime/checkpoint_format.h"

namespace kiln {
namespace {

constexpr char kFooterMagic[4] = {'K', 'C', 'K', '2'};
constexpr int64_t kHeaderBytes = kCheckpointHeaderBytes;
constexpr int64_t kFooterBytes = kCheckpointFooterBytes;
constexpr int64_t kDataAlignment = 64;

void PutU64(char* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
void PutU32(char* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
uint64_t GetU64(const char* in) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(in[i]);
  return v;
}
uint32_t GetU32(const char* in) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(in[i]);
  return v;
}

// Bytes read at any offset: a file, or a checkpoint already in memory.
struct Source {
  int64_t size = 0;
  std::function<Status(int64_t offset, int64_t size, void* out)> read;
};

Source FromString(const std::string& bytes) {
  return {static_cast<int64_t>(bytes.size()), [&bytes](int64_t offset, int64_t size, void* out) {
            std::memcpy(out, bytes.data() + offset, static_cast<size_t>(size));
            return OkStatus();
          }};
}

Source FromFile(const RandomAccessFile& file) {
  return {file.size(), [&file](int64_t offset, int64_t size, void* out) {
            return file.Read(offset, size, out);
          }};
}

bool IsFormat2(const Source& source) {
  char magic[kHeaderBytes];
  return source.size >= kHeaderBytes && source.read(0, kHeaderBytes, magic).ok() &&
         std::memcmp(magic, kCheckpointHeader, kHeaderBytes) == 0;
}

Status WriteFormat2(const std::string& path, const std::map<std::string, Tensor>& variables) {
  for (const auto& [name, tensor] : variables) {
    if (const int64_t at = FirstInvalidUtf8(name); at >= 0)
      return MakeError(ErrorCode::kInvalidArgument, path, ": variable name '", name,
                       "' is not valid UTF-8 (byte ", at, "); the checkpoint was not written");
    if (!tensor.valid() || IsContainer(tensor.dtype()))
      return MakeError(ErrorCode::kInvalidArgument, path, ": variable '", name,
                       "' holds no tensor; the checkpoint was not written");
  }
  KILN_ASSIGN_OR_RETURN(AtomicFileWriter file, AtomicFileWriter::Open(path));
  KILN_RETURN_IF_ERROR(file.Append(kCheckpointHeader, kHeaderBytes));
  proto::CheckpointIndexProto index;
  index.set_format_version(kCheckpointFormatVersion);
  static const char kZeros[kDataAlignment] = {};
  for (const auto& [name, tensor] : variables) {
    const int64_t pad = (kDataAlignment - file.size() % kDataAlignment) % kDataAlignment;
    KILN_RETURN_IF_ERROR(file.Append(kZeros, static_cast<size_t>(pad)));
    const auto bytes = static_cast<size_t>(tensor.byte_size());
    proto::CheckpointIndexProto::Entry* e = index.add_variables();
    e->set_name(name);
    e->set_dtype(DTypeToProto(tensor.dtype()));
    *e->mutable_shape() = ShapeToProto(tensor.shape());
    e->set_offset(file.size());
    e->set_size(tensor.byte_size());
    e->set_crc32c(Crc32c(tensor.raw_data(), bytes));
    KILN_RETURN_IF_ERROR(file.Append(tensor.raw_data(), bytes));
  }
  Result<std::string> index_bytes =
      SerializeWithChecksum(index, "kiln checkpoint index", kMaxChecksummedFileBytes);
  if (!index_bytes.ok()) return index_bytes.error().WithContext(path + ": not written");
  const std::string footer = CheckpointFooter(file.size(), index_bytes->size());
  KILN_RETURN_IF_ERROR(file.Append(index_bytes->data(), index_bytes->size()));
  KILN_RETURN_IF_ERROR(file.Append(footer.data(), footer.size()));
  return file.Commit();
}

// A format 2 index entry, checked against the file: where its bytes are and what they hold.
struct Entry {
  std::string name;
  DType dtype;
  Shape shape;
  int64_t offset, size;
  uint32_t crc32c;
};

Error Corrupt(const std::string& path, const std::string& what) {
  return MakeError(ErrorCode::kDataLoss, path, ": ", what);
}

// Reads and checks the footer and the index: every entry's bytes lie in the data region, apart
// from the others, exactly as many as its dtype and shape need.
Result<std::vector<Entry>> ReadIndex(const Source& source, const std::string& path) {
  if (source.size < kHeaderBytes + kFooterBytes)
    return Corrupt(path, "truncated kiln checkpoint (no footer)");
  char footer[kFooterBytes];
  KILN_RETURN_IF_ERROR(source.read(source.size - kFooterBytes, kFooterBytes, footer));
  uint64_t index_offset = 0, index_size = 0;
  if (!ReadCheckpointFooter(footer, &index_offset, &index_size))
    return Corrupt(path,
                   "truncated or corrupt kiln checkpoint (its footer is missing or fails "
                   "its checksum)");
  const auto index_end = static_cast<uint64_t>(source.size - kFooterBytes);
  if (index_offset < static_cast<uint64_t>(kHeaderBytes) || index_offset > index_end ||
      index_size != index_end - index_offset)
    return Corrupt(path, "corrupt kiln checkpoint (its index does not end at its footer)");
  if (index_size == 0) return Corrupt(path, "corrupt kiln checkpoint (its index is empty)");
  if (index_size > static_cast<uint64_t>(kMaxChecksummedFileBytes))
    return Corrupt(path, "corrupt kiln checkpoint (its index is " + std::to_string(index_size) +
                             " bytes, over the 2 GiB one can hold)");
  std::string bytes(index_size, '\0');
  KILN_RETURN_IF_ERROR(source.read(static_cast<int64_t>(index_offset),
                                   static_cast<int64_t>(index_size), bytes.data()));
  proto::CheckpointIndexProto index;
  KILN_RETURN_IF_ERROR(ParseWithChecksum(bytes, path, "kiln checkpoint index", &index));
  if (index.format_version() > kCheckpointFormatVersion)
    return MakeError(ErrorCode::kFailedPrecondition, path, ": checkpoint format version ",
                     index.format_version(), " is newer than this kiln supports (",
                     kCheckpointFormatVersion, ")");
  if (index.format_version() != 2)
    return Corrupt(path, "corrupt kiln checkpoint (its index has format version " +
                             std::to_string(index.format_version()) + ", not 2)");
  std::vector<Entry> entries;
  std::set<std::string> names;
  for (const proto::CheckpointIndexProto::Entry& e : index.variables()) {
    const std::string where = "variable '" + e.name() + "'";
    Result<DType> dtype = DTypeFromProto(e.dtype());
    Result<Shape> shape = ShapeFromProto(e.shape());
    if (!dtype.ok() || IsContainer(*dtype) || *dtype == DType::kInvalid)
      return Corrupt(path, where + " has no tensor dtype");
    if (!shape.ok() || !shape->IsFullyKnown())
      return Corrupt(path, where + " has no fully known shape");
    int64_t bytes_needed = DTypeSize(*dtype);
    bool overflow = false;
    for (int64_t d : shape->dims())
      overflow = overflow || __builtin_mul_overflow(bytes_needed, d, &bytes_needed);
    if (overflow || bytes_needed != e.size())
      return Corrupt(path, where + " " + std::string(DTypeName(*dtype)) + shape->ToString() +
                               " declares " + std::to_string(e.size()) + " bytes");
    if (e.offset() < kHeaderBytes || e.offset() > static_cast<int64_t>(index_offset) ||
        e.size() > static_cast<int64_t>(index_offset) - e.offset())
      return Corrupt(path, where + "'s bytes lie outside the checkpoint's data");
    if (!names.insert(e.name()).second) return Corrupt(path, where + " appears twice");
    entries.push_back({e.name(), *dtype, *shape, e.offset(), e.size(), e.crc32c()});
  }
  // In file order, each variable starts where the writer's padding after the one before ends.
  std::vector<const Entry*> by_offset;
  for (const Entry& e : entries) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(), [](const Entry* a, const Entry* b) {
    return std::pair(a->offset, a->size) < std::pair(b->offset, b->size);  // empty ones first
  });
  int64_t end = kHeaderBytes;
  for (const Entry* e : by_offset) {
    if (e->offset != end + (kDataAlignment - end % kDataAlignment) % kDataAlignment)
      return Corrupt(path, "variable '" + e->name + "' does not start where the bytes before it " +
                               "end (at " + std::to_string(e->offset) + ", not " +
                               std::to_string(end) + " rounded up to 64)");
    end = e->offset + e->size;
  }
  if (end != static_cast<int64_t>(index_offset))
    return Corrupt(path, "corrupt kiln checkpoint (its data does not end where its index starts)");
  return entries;
}

// The padding between the variables, all zero bytes in a checkpoint as written: a flipped bit
// there is refused too (at most 63 bytes a variable, read also when the variable is not).
Status CheckPadding(const Source& source, const std::string& path,
                    const std::vector<Entry>& entries) {
  std::vector<std::pair<int64_t, int64_t>> spans;  // [offset, end) of each variable
  for (const Entry& e : entries) spans.emplace_back(e.offset, e.offset + e.size);
  std::sort(spans.begin(), spans.end());
  int64_t end = kHeaderBytes;
  for (const auto& [offset, next_end] : spans) {
    char gap[kDataAlignment];
    KILN_RETURN_IF_ERROR(source.read(end, offset - end, gap));
    for (int64_t i = 0; i < offset - end; ++i)
      if (gap[i] != 0)
        return Corrupt(path, "corrupt kiln checkpoint (byte " + std::to_string(end + i) +
                                 " of the padding between variables is not zero)");
    end = next_end;
  }
  return OkStatus();
}

Result<Tensor> ReadEntry(const Source& source, const std::string& path, const Entry& e) {
  Result<Tensor> t = Tensor::Create(e.dtype, e.shape);
  if (!t.ok()) return t.error().WithContext(path + ": variable '" + e.name + "'");
  KILN_RETURN_IF_ERROR(source.read(e.offset, e.size, t->raw_data()));
  if (Crc32c(t->raw_data(), static_cast<size_t>(e.size)) != e.crc32c)
    return Corrupt(path, "variable '" + e.name + "' fails its checksum");
  return t;
}

// Format 2: the variables `wanted` names (every one when null).
Result<std::map<std::string, Tensor>> ReadFormat2(const Source& source, const std::string& path,
                                                  const std::set<std::string>* wanted) {
  KILN_ASSIGN_OR_RETURN(std::vector<Entry> entries, ReadIndex(source, path));
  KILN_RETURN_IF_ERROR(CheckPadding(source, path, entries));
  std::map<std::string, Tensor> variables;
  for (const Entry& e : entries) {
    if (wanted && !wanted->count(e.name)) continue;
    KILN_ASSIGN_OR_RETURN(Tensor t, ReadEntry(source, path, e));
    variables.emplace(e.name, std::move(t));
  }
  return variables;
}

// Format 1: one CheckpointProto.
Result<std::map<std::string, Tensor>> ParseFormat1(const std::string& bytes,
                                                   const std::string& path) {
  proto::CheckpointProto ckpt;
  KILN_RETURN_IF_ERROR(ParseWithChecksum(bytes, path, "kiln checkpoint", &ckpt));
  if (ckpt.format_version() != 1)
    return MakeError(ckpt.format_version() > kCheckpointFormatVersion
                         ? ErrorCode::kFailedPrecondition
                         : ErrorCode::kDataLoss,
                     path, ": checkpoint format version ", ckpt.format_version(),
                     " where a file without the format 2 header must have 1");
  std::map<std::string, Tensor> variables;
  for (const proto::CheckpointProto::Entry& e : ckpt.variables()) {
    Result<Tensor> t = TensorFromProto(e.tensor());
    if (!t.ok()) return t.error().WithContext(path + ": variable '" + e.name() + "'");
    if (Crc32c(t->raw_data(), static_cast<size_t>(t->byte_size())) != e.crc32c())
      return Corrupt(path, "variable '" + e.name() + "' fails its checksum");
    if (!variables.emplace(e.name(), std::move(*t)).second)
      return Corrupt(path, "variable '" + e.name() + "' appears twice");
  }
  return variables;
}

Result<std::map<std::string, Tensor>> ReadFile(const std::string& path,
                                               const std::set<std::string>* wanted) {
  KILN_ASSIGN_OR_RETURN(RandomAccessFile file, RandomAccessFile::Open(path));
  const Source source = FromFile(file);
  if (IsFormat2(source)) return ReadFormat2(source, path, wanted);
  KILN_ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(path, kMaxChecksummedFileBytes));
  return ParseFormat1(bytes, path);
}

}  // namespace

std::string CheckpointFooter(uint64_t index_offset, uint64_t index_size) {
  char footer[kFooterBytes];
  PutU64(footer, index_offset);
  PutU64(footer + 8, index_size);
  PutU32(footer + 16, Crc32c(footer, 16));
  std::memcpy(footer + 20, kFooterMagic, sizeof(kFooterMagic));
  return std::string(footer, kFooterBytes);
}

bool ReadCheckpointFooter(const char* footer, uint64_t* index_offset, uint64_t* index_size) {
  if (std::memcmp(footer + 20, kFooterMagic, sizeof(kFooterMagic)) != 0 ||
      GetU32(footer + 16) != Crc32c(footer, 16))
    return false;
  *index_offset = GetU64(footer);
  *index_size = GetU64(footer + 8);
  return true;
}

Status WriteCheckpoint(const std::string& path, const std::map<std::string, Tensor>& variables) {
  return WriteFormat2(path, variables);
}

Result<std::map<std::string, Tensor>> ReadCheckpoint(const std::string& path) {
  return ReadFile(path, nullptr);
}

Result<std::map<std::string, Tensor>> ParseCheckpoint(const std::string& bytes,
                                                      const std::string& path) {
  const Source source = FromString(bytes);
  if (IsFormat2(source)) return ReadFormat2(source, path, nullptr);
  return ParseFormat1(bytes, path);
}

Result<std::map<std::string, Tensor>> ReadCheckpointFor(
    const std::string& path, const std::map<std::string, TensorType>& expected) {
  std::set<std::string> wanted;
  for (const auto& [name, type] : expected) wanted.insert(name);
  KILN_ASSIGN_OR_RETURN(auto values, ReadFile(path, &wanted));
  std::map<std::string, Tensor> restored;
  for (const auto& [name, type] : expected) {
    auto it = values.find(name);
    if (it == values.end())
      return MakeError(ErrorCode::kNotFound, path, ": no value for variable '", name, "' (",
                       type.ToString(), ")");
    if (it->second.dtype() != type.dtype || it->second.shape() != type.shape)
      return MakeError(ErrorCode::kInvalidArgument, path, ": variable '", name, "' is ",
                       DTypeName(it->second.dtype()), it->second.shape().ToString(),
                       " in the checkpoint but ", type.ToString(), " in the model");
    restored.emplace(name, std::move(it->second));
  }
  return restored;
}

}  // namespace kiln
