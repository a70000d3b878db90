#include "ir/onnx/external_data.h"

#include <sys/stat.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "ir/io/onnx_tensor.h"

namespace kiln::onnx_import {
namespace {

Result<int64_t> ParseLength(const std::string& text, const std::string& key,
                            const std::string& origin) {
  if (text.empty() || text.size() > 18 || text.find_first_not_of("0123456789") != std::string::npos)
    return MakeError(ErrorCode::kInvalidArgument, "'", origin, "': external data ", key, " '", text,
                     "' is not a non-negative integer");
  return std::stoll(text);
}

Result<std::string> RealPath(const std::string& path) {
  char buf[PATH_MAX];
  if (!::realpath(path.c_str(), buf))
    return MakeError(ErrorCode::kNotFound, "cannot open external data file '", path, "'");
  return std::string(buf);
}

// The resolved path of `location` under `dir`, refusing anything that leaves it.
Result<std::string> ResolveInside(const std::string& dir, const std::string& location,
                                  const std::string& origin) {
  auto refuse = [&](const char* why) {
    return MakeError(ErrorCode::kInvalidArgument, "'", origin, "': external data location '",
                     location, "' ", why,
                     " (external data must be a file inside the model's folder)");
  };
  if (location.empty()) return refuse("is empty");
  if (location[0] == '/') return refuse("is an absolute path");
  size_t start = 0;
  while (start <= location.size()) {
    size_t end = location.find('/', start);
    if (end == std::string::npos) end = location.size();
    if (location.compare(start, end - start, "..") == 0 && end - start == 2)
      return refuse("contains '..'");
    start = end + 1;
  }
  KILN_ASSIGN_OR_RETURN(std::string real_dir, RealPath(dir.empty() ? "." : dir));
  Result<std::string> real = RealPath((dir.empty() ? "." : dir) + "/" + location);
  if (!real.ok()) return real.error().WithContext("'" + origin + "'");
  if (real->compare(0, real_dir.size() + 1, real_dir + "/") != 0)
    return refuse("leads outside the folder through a symbolic link");
  return real;
}

}  // namespace

Result<Tensor> ReadExternalTensor(const onnx::TensorProto& p, const std::string& model_dir,
                                  const std::string& origin) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : p.external_data()) {
    if (kv.key() == "location") {
      location = kv.value();
    } else if (kv.key() == "offset") {
      KILN_ASSIGN_OR_RETURN(offset, ParseLength(kv.value(), "offset", origin));
    } else if (kv.key() == "length") {
      KILN_ASSIGN_OR_RETURN(length, ParseLength(kv.value(), "length", origin));
    }
  }
  std::optional<DType> dtype = DTypeOfOnnx(p.data_type());
  if (!dtype)
    return MakeError(ErrorCode::kUnimplemented, "'", origin, "': ONNX tensor data type ",
                     OnnxTypeName(p.data_type()), " is not supported");
  // The declared size, checked before anything is read or allocated.
  Shape shape(std::vector<int64_t>(p.dims().begin(), p.dims().end()));
  for (int64_t d : shape.dims())
    if (d < 0)
      return MakeError(ErrorCode::kInvalidArgument, "'", origin, "': negative dimension ", d);
  int64_t bytes = DTypeSize(*dtype);
  for (int64_t d : shape.dims()) {
    if (d != 0 && bytes > kMaxTensorBytes / d) {
      bytes = kMaxTensorBytes + 1;
      break;
    }
    bytes *= d;
  }
  if (bytes > kMaxTensorBytes)
    return MakeError(ErrorCode::kResourceExhausted, "'", origin, "': declared shape ",
                     shape.ToString(), " is larger than kiln's tensor limit of ", kMaxTensorBytes,
                     " bytes");
  if (model_dir.empty())
    return MakeError(ErrorCode::kInvalidArgument, "'", origin,
                     "': the tensor's data is external but the model was not read from a file");
  KILN_ASSIGN_OR_RETURN(std::string path, ResolveInside(model_dir, location, origin));
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return MakeError(ErrorCode::kNotFound, "'", origin, "': external data '", location,
                     "' is not a regular file");
  int64_t file_size = st.st_size;
  if (length < 0) length = file_size - offset;
  if (offset > file_size || length > file_size - offset)
    return MakeError(ErrorCode::kDataLoss, "'", origin, "': external data range [", offset, ", ",
                     offset + length, ") is past the end of '", location, "' (", file_size,
                     " bytes)");
  if (length != bytes)
    return MakeError(ErrorCode::kDataLoss, "'", origin, "': external data holds ", length,
                     " bytes, but ", DTypeName(*dtype), shape.ToString(), " needs ", bytes);
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return MakeError(ErrorCode::kNotFound, "cannot open '", path, "'");
  std::string data(static_cast<size_t>(length), '\0');
  if (std::fseek(f.get(), offset, SEEK_SET) != 0 ||
      (length > 0 && std::fread(data.data(), 1, data.size(), f.get()) != data.size()))
    return MakeError(ErrorCode::kDataLoss, "'", origin, "': cannot read ", length,
                     " bytes of external data from '", location, "'");
  onnx::TensorProto inline_proto;
  for (int64_t d : shape.dims()) inline_proto.add_dims(d);
  inline_proto.set_data_type(p.data_type());
  inline_proto.set_raw_data(std::move(data));
  return OnnxTensorFromProto(inline_proto, origin);
}

}  // namespace kiln::onnx_import
