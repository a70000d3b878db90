#include "ir/checksummed_proto.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>

#include "ir/crc32c.h"
#include "ir/protobuf_errors.h"

namespace kiln {
namespace {
// Tag of field 15 with wire type 5 (fixed32), then the little-endian CRC32C.
constexpr unsigned char kChecksumTag = (15 << 3) | 5;
constexpr size_t kTrailerBytes = 5;
}  // namespace

Result<std::string> SerializeWithChecksum(const google::protobuf::MessageLite& message,
                                          const std::string& what, int64_t max_bytes) {
  const int64_t limit = std::min(max_bytes, kMaxChecksummedFileBytes);
  const int64_t size = static_cast<int64_t>(message.ByteSizeLong()) + kTrailerBytes;
  if (size > limit)
    return MakeError(ErrorCode::kResourceExhausted, "the ", what, " would be ", size,
                     " bytes, over the ", limit, " bytes a ", what, " file can hold");
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&coded);
  }
  return AppendChecksumTrailer(std::move(bytes));
}

std::string AppendChecksumTrailer(std::string payload) {
  const uint32_t crc = Crc32c(payload);
  payload.push_back(static_cast<char>(kChecksumTag));
  for (int i = 0; i < 4; ++i) payload.push_back(static_cast<char>((crc >> (8 * i)) & 0xff));
  return payload;
}

Status ParseWithChecksum(const std::string& bytes, const std::string& origin,
                         const std::string& what, google::protobuf::MessageLite* message) {
  if (bytes.empty()) return MakeError(ErrorCode::kDataLoss, origin, ": the file is empty");
  if (bytes.size() < kTrailerBytes ||
      static_cast<unsigned char>(bytes[bytes.size() - kTrailerBytes]) != kChecksumTag)
    return MakeError(ErrorCode::kDataLoss, origin, ": not a ", what,
                     ", or truncated (no checksum at the end of the file)");
  size_t payload = bytes.size() - kTrailerBytes;
  uint32_t stored = 0;
  for (int i = 0; i < 4; ++i)
    stored |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[payload + 1 + i])) << (8 * i);
  if (stored != Crc32c(bytes.data(), payload))
    return MakeError(ErrorCode::kDataLoss, origin,
                     ": checksum mismatch (the file is corrupt or truncated)");
  ProtobufErrorCapture protobuf_says;
  if (payload > static_cast<size_t>(kMaxChecksummedFileBytes))
    return MakeError(ErrorCode::kDataLoss, origin, ": ", bytes.size(), " bytes, over the 2 GiB a ",
                     what, " file can hold");
  if (!message->ParseFromArray(bytes.data(), static_cast<int>(payload)))
    return MakeError(ErrorCode::kDataLoss, origin, ": not a valid ", what,
                     " (protobuf parse failed)", protobuf_says.Detail());
  return OkStatus();
}

}  // namespace kiln
