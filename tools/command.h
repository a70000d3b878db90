// The `kiln` subcommands: each lives in tools/cmd_<name>.cc and is listed in kiln_main.cc.
// A command returns the process exit code: 0 success, 1 failure (one clear line on stderr),
// 2 usage error. Helpers here keep the error format the same everywhere.
#pragma once

#include <optional>
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
  const char* program = "kiln";  // messages start "<program> <name>:"
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

// With --out DIR in `flags`, writes outputs[i] to DIR/<names[i]>.npy (see SafeFileName) and says
// so; otherwise prints a summary of each. Returns the exit code.
int EmitOutputs(const Command& cmd, const Flags& flags, const std::vector<std::string>& names,
                const std::vector<Tensor>& outputs);
// The same into `dir` (empty: printed).
int EmitOutputsTo(const Command& cmd, const std::string& dir, const std::vector<std::string>& names,
                  const std::vector<Tensor>& outputs);
// Loads a model file: .kgraph (binary), .kgraph.txt (text) or .onnx (imported, see
// ir/onnx/import.h).
Result<Graph> LoadModel(const std::string& path);
// "--input NAME=FILE" values: reads each tensor file (.npy or ONNX .pb).
Result<std::vector<std::pair<std::string, Tensor>>> LoadInputs(
    const std::vector<std::string>& specs);
// The value of --`flag`: a whole number >= `min`, or an error naming the flag.
Result<int64_t> ParseCount(const std::string& flag, const std::string& text, int64_t min);
// The value of --memory-limit in bytes (runtime/memory_budget.h: "512M", "20G", ...); 0 when it
// is not given (the budget is then what the process can get).
Result<int64_t> ParseMemoryLimit(const Flags& flags);
// "64x3x32x32" -> [64, 3, 32, 32]: whole numbers >= 0 joined by 'x'; nullopt for anything else
// (a file name, say).
std::optional<Shape> ParseDims(const std::string& text);
// Every character of `name` other than letters, digits, '.', '_' and '-' becomes '_'.
std::string SafeFileName(const std::string& name);
// Creates a directory and its parents (like mkdir -p).
Status MakeDirectories(const std::string& path);

}  // namespace kiln::cli
