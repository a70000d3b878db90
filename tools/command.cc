#include "tools/command.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "ir/file_util.h"
#include "ir/io/tensor_file.h"
#include "ir/onnx/import.h"
#include "ir/serialize.h"

namespace kiln::cli {

int ParseOrExit(const Command& cmd, Flags& flags, const std::vector<std::string>& args) {
  Status s = flags.Parse(args);
  if (flags.help()) {
    std::printf("%s", cmd.usage);
    return 0;
  }
  if (!s.ok()) return UsageError(cmd, s.error().message());
  return -1;
}

int Fail(const Command& cmd, const Error& error) {
  std::fprintf(stderr, "kiln %s: error: %s\n", cmd.name, error.message().c_str());
  return kExitFailure;
}

int UsageError(const Command& cmd, const std::string& message) {
  std::fprintf(stderr, "kiln %s: %s (see 'kiln %s --help')\n", cmd.name, message.c_str(), cmd.name);
  return kExitUsage;
}

Result<Graph> LoadModel(const std::string& path) {
  if (EndsWith(path, ".onnx")) return ImportOnnx(path);
  return LoadGraph(path);
}

Result<std::vector<std::pair<std::string, Tensor>>> LoadInputs(
    const std::vector<std::string>& specs) {
  std::vector<std::pair<std::string, Tensor>> inputs;
  for (const std::string& spec : specs) {
    KILN_ASSIGN_OR_RETURN(auto name_file, SplitNameValue("input", spec));
    Result<Tensor> t = ReadTensorFile(name_file.second);
    if (!t.ok()) return t.error().WithContext("input '" + name_file.first + "'");
    inputs.emplace_back(name_file.first, std::move(*t));
  }
  return inputs;
}

std::string SafeFileName(const std::string& name) {
  std::string out = name;
  for (char& c : out) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    if (!ok) c = '_';
  }
  return out;
}

Status MakeDirectories(const std::string& path) {
  std::string partial;
  for (size_t i = 0; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      if (!partial.empty() && ::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST)
        return MakeError(ErrorCode::kInvalidArgument, "cannot create directory '", partial,
                         "': ", std::strerror(errno));
    }
    if (i < path.size()) partial += path[i];
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return MakeError(ErrorCode::kInvalidArgument, "'", path, "' is not a directory");
  return OkStatus();
}

}  // namespace kiln::cli
