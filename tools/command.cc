#include "tools/command.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "ir/file_util.h"
#include "ir/io/npy.h"
#include "ir/io/tensor_file.h"
#include "ir/onnx/import.h"
#include "ir/serialize.h"
#include "runtime/memory_budget.h"

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

namespace {

// "kiln run" or, for a program with no subcommands, "kilnrt".
std::string CommandLine(const Command& cmd) {
  return *cmd.name ? std::string(cmd.program) + " " + cmd.name : std::string(cmd.program);
}

}  // namespace

int Fail(const Command& cmd, const Error& error) {
  std::fprintf(stderr, "%s: error: %s\n", CommandLine(cmd).c_str(), error.message().c_str());
  return kExitFailure;
}

int UsageError(const Command& cmd, const std::string& message) {
  std::fprintf(stderr, "%s: %s (see '%s --help')\n", CommandLine(cmd).c_str(), message.c_str(),
               CommandLine(cmd).c_str());
  return kExitUsage;
}

int EmitOutputs(const Command& cmd, const Flags& flags, const std::vector<std::string>& names,
                const std::vector<Tensor>& outputs) {
  return EmitOutputsTo(cmd, flags.Has("out") ? flags.Get("out") : "", names, outputs);
}

int EmitOutputsTo(const Command& cmd, const std::string& dir, const std::vector<std::string>& names,
                  const std::vector<Tensor>& outputs) {
  if (dir.empty()) {
    for (size_t i = 0; i < names.size(); ++i)
      std::printf("%s: %s\n", names[i].c_str(), outputs[i].Summary(8).c_str());
    return 0;
  }
  if (Status s = MakeDirectories(dir); !s.ok()) return Fail(cmd, s.error());
  for (size_t i = 0; i < names.size(); ++i) {
    std::string path = dir + "/" + SafeFileName(names[i]) + ".npy";
    if (Status s = WriteNpy(path, outputs[i]); !s.ok()) return Fail(cmd, s.error());
    std::printf("wrote %s (%s)\n", path.c_str(), outputs[i].Summary(0).c_str());
  }
  return 0;
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

Result<int64_t> ParseCount(const std::string& flag, const std::string& text, int64_t min) {
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end || v < min)
    return MakeError(ErrorCode::kInvalidArgument, "--", flag, " must be a whole number >= ", min,
                     ", got '", text, "'");
  return static_cast<int64_t>(v);
}

Result<int64_t> ParseMemoryLimit(const Flags& flags) {
  if (!flags.Has("memory-limit")) return int64_t{0};
  Result<int64_t> bytes = ParseByteSize(flags.Get("memory-limit"));
  if (!bytes.ok())
    return MakeError(ErrorCode::kInvalidArgument, "--memory-limit ", bytes.error().message());
  return bytes;
}

std::optional<Shape> ParseDims(const std::string& text) {
  if (text.empty() || text.find_first_not_of("0123456789x") != std::string::npos) return {};
  std::vector<int64_t> dims;
  size_t start = 0;
  while (true) {
    size_t x = text.find('x', start);
    std::string part = text.substr(start, x == std::string::npos ? std::string::npos : x - start);
    if (part.empty() || part.size() > 15) return {};
    dims.push_back(std::strtoll(part.c_str(), nullptr, 10));
    if (x == std::string::npos) break;
    start = x + 1;
  }
  return Shape(dims);
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
