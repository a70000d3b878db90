#include "tests/testing/system_compiler.h"

#include <fstream>
#include <vector>

#include "ir/file_util.h"
#include "tests/testing/run_command.h"
#include "tests/testing/temp_path.h"

namespace kiln::testing {

SourceCheck CheckCompiles(const std::string& file_name, const std::string& source) {
  const std::string path = TempPath(file_name);
  std::ofstream(path) << source;
  const bool c = EndsWith(file_name, ".c");
  const std::string compiler = c ? "cc" : "c++";
  CommandResult found = RunCommand("/bin/sh", {"-c", "command -v " + compiler});
  SourceCheck check;
  check.compiler_found = found.exit_code == 0 && !found.out.empty();
  if (!check.compiler_found) return check;
  std::vector<std::string> args = {"-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-I",
                                   KILN_SOURCE_DIR, path};
  if (c) {
    args.insert(args.begin(), {"-std=c99", "-pedantic-errors"});
  } else {
    // kiln's own headers are built with -Wno-unused-parameter.
    args.insert(args.begin(), {"-std=c++20", "-Wno-unused-parameter"});
  }
  CommandResult r = RunCommand(found.out.substr(0, found.out.find('\n')), args);
  check.ok = r.exit_code == 0;
  check.diagnostics = r.out + r.err;
  return check;
}

}  // namespace kiln::testing
