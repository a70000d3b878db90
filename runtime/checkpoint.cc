#include "runtime/checkpoint.h"

#include "ir/checksummed_proto.h"
#include "ir/crc32c.h"
#include "ir/file_util.h"
#include "ir/serialize.h"
#include "ir/utf8.h"

namespace kiln {

Status WriteCheckpoint(const std::string& path, const std::map<std::string, Tensor>& variables) {
  // Refused before anything is copied when the variables' data alone would be over what one file
  // holds (the file a previous save wrote is kept, in this case as in the next).
  int64_t data_bytes = 0;
  for (const auto& [name, tensor] : variables) data_bytes += tensor.byte_size();
  if (data_bytes > kMaxChecksummedFileBytes)
    return MakeError(ErrorCode::kResourceExhausted, path, ": not written: the variables hold ",
                     data_bytes, " bytes, over the ", kMaxChecksummedFileBytes,
                     " bytes a kiln checkpoint file can hold");
  proto::CheckpointProto ckpt;
  ckpt.set_format_version(kCheckpointFormatVersion);
  for (const auto& [name, tensor] : variables) {
    if (const int64_t at = FirstInvalidUtf8(name); at >= 0)
      return MakeError(ErrorCode::kInvalidArgument, path, ": variable name '", name,
                       "' is not valid UTF-8 (byte ", at, "); the checkpoint was not written");
    proto::CheckpointProto::Entry* e = ckpt.add_variables();
    e->set_name(name);
    *e->mutable_tensor() = TensorToProto(tensor);
    e->set_crc32c(Crc32c(tensor.raw_data(), static_cast<size_t>(tensor.byte_size())));
  }
  Result<std::string> bytes = SerializeWithChecksum(ckpt, "kiln checkpoint", kMaxCheckpointBytes);
  if (!bytes.ok()) return bytes.error().WithContext(path + ": not written");
  return WriteFileAtomically(path, *bytes);
}

Result<std::map<std::string, Tensor>> ReadCheckpoint(const std::string& path) {
  KILN_ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(path, kMaxCheckpointBytes));
  return ParseCheckpoint(bytes, path);
}

Result<std::map<std::string, Tensor>> ParseCheckpoint(const std::string& bytes,
                                                      const std::string& path) {
  proto::CheckpointProto ckpt;
  KILN_RETURN_IF_ERROR(ParseWithChecksum(bytes, path, "kiln checkpoint", &ckpt));
  if (ckpt.format_version() > kCheckpointFormatVersion)
    return MakeError(ErrorCode::kFailedPrecondition, path, ": checkpoint format version ",
                     ckpt.format_version(), " is newer than this kiln supports (",
                     kCheckpointFormatVersion, ")");
  if (ckpt.format_version() < 1)
    return MakeError(ErrorCode::kInvalidArgument, path, ": missing checkpoint format version");
  std::map<std::string, Tensor> variables;
  for (const proto::CheckpointProto::Entry& e : ckpt.variables()) {
    Result<Tensor> t = TensorFromProto(e.tensor());
    if (!t.ok()) return t.error().WithContext(path + ": variable '" + e.name() + "'");
    if (Crc32c(t->raw_data(), static_cast<size_t>(t->byte_size())) != e.crc32c())
      return MakeError(ErrorCode::kDataLoss, path, ": variable '", e.name(),
                       "' fails its checksum");
    if (!variables.emplace(e.name(), std::move(*t)).second)
      return MakeError(ErrorCode::kDataLoss, path, ": variable '", e.name(), "' appears twice");
  }
  return variables;
}

Result<std::map<std::string, Tensor>> ReadCheckpointFor(
    const std::string& path, const std::map<std::string, TensorType>& expected) {
  KILN_ASSIGN_OR_RETURN(auto values, ReadCheckpoint(path));
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
