// Test helper: runs a program (kiln, kilnrt) as a user would, without a shell, and captures what it
// printed, its exit code and whether a signal killed it. CheckFails checks the CLI's failure rule:
// the exit code, no signal, exactly one line on stderr, naming what went wrong.
#pragma once

#include <string>
#include <vector>

namespace kiln::testing {

struct CommandResult {
  int exit_code = -1;
  bool signaled = false;
  std::string out, err;
};

CommandResult RunCommand(const std::string& binary, const std::vector<std::string>& args);

// Exit `code`, no signal, exactly one line on stderr, containing `text`.
void CheckFails(const CommandResult& r, const std::string& text, int code = 1);

// The mean loss of each epoch line `kiln train` printed ("epoch N: mean loss X, ...").
std::vector<double> EpochLosses(const std::string& out);

}  // namespace kiln::testing
