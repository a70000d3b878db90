// The `kiln` subcommands: each lives in tools/cmd_<name>.cc and is listed in kiln_main.cc.
// A command returns the process exit code: 0 success, 1 failure (one clear line on stderr),
// 2 usage error. Helpers here keep the error format the same everywhere.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/status.h"
#include "ir/tensor.h"
#include "tools/flags.h"

namespace kiln::cli {

struct Command {
  const char* name;
  const char* summary;
  const char* usage;  // full help text, starting with the usage line
  int (*run)(const Command& self, const std::vector<std::string>& args);
};

inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;
// The backend of run, grad and train unless --backend says otherwise: "auto" is the compiled cpu
// backend when this build has the compiler, the reference interpreter otherwise.
inline constexpr const char* kDefaultBackend = "auto";

// Parses `args` into `flags`; on --help prints the usage and returns 0; on a usage error prints it
// and returns 2; otherwise returns -1 (continue).
int ParseOrExit(const Command& cmd, Flags& flags, const std::vector<std::string>& args);
// Prints "kiln CMD: error: <message>" and returns 1.
int Fail(const Command& cmd, const Error& error);
// Prints "kiln CMD: <message>" plus a pointer to --help and returns 2.
int UsageError(const Command& cmd, const std::string& message);

// Loads a model file: .kgraph (binary), .kgraph.txt (text) or .onnx (imported, see
// ir/onnx/import.h).
Result<Graph> LoadModel(const std::string& path);
// "--input NAME=FILE" values: reads each tensor file (.npy or ONNX .pb).
Result<std::vector<std::pair<std::string, Tensor>>> LoadInputs(
    const std::vector<std::string>& specs);
// Every character of `name` other than letters, digits, '.', '_' and '-' becomes '_'.
std::string SafeFileName(const std::string& name);
// Creates a directory and its parents (like mkdir -p).
Status MakeDirectories(const std::string& path);

}  // namespace kiln::cli
