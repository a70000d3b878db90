// Running a compiled module (.kmod) from the command line: shared by `kiln run MODULE.kmod` and
// the runtime-only `kilnrt`, so both read inputs and write outputs by the same rules as
// `kiln run` on a graph. Links the runtime only.
#pragma once

#include <string>

#include "tools/command.h"
#include "tools/flags.h"

namespace kiln::cli {

// Flags read: --input NAME=FILE (repeated), --fetch NAME (repeated; a subset of the module's
// outputs, default all), --out DIR, --threads N, --backend B (a cuda module: cuda or cuda-sim),
// --repeat N (kilnrt: N more timed runs, "timed runs: N, median_ms: X, min_ms: Y" on stderr).
// Returns the exit code.
int RunModuleFile(const Command& cmd, const Flags& flags, const std::string& path);

// Prints the module's manifest and signature (kilnrt --describe).
int DescribeModuleFile(const Command& cmd, const std::string& path);

}  // namespace kiln::cli
