#include "tests/testing/run_command.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "tests/testing/temp_path.h"

namespace kiln::testing {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

CommandResult RunCommand(const std::string& binary, const std::vector<std::string>& args) {
  const std::string out_path = TempPath("command.stdout"), err_path = TempPath("command.stderr");
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out, 1);
    dup2(err, 2);
    std::vector<std::string> copy = {binary};
    copy.insert(copy.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  CommandResult r;
  r.signaled = WIFSIGNALED(status);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = ReadAll(out_path);
  r.err = ReadAll(err_path);
  return r;
}

void CheckFails(const CommandResult& r, const std::string& text, int code) {
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK_FALSE(r.signaled);
  CHECK(r.exit_code == code);
  CHECK_THAT(r.err, Catch::Contains(text));
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}

std::vector<double> EpochLosses(const std::string& out) {
  std::vector<double> losses;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line))
    if (auto at = line.find("mean loss "); at != std::string::npos)
      losses.push_back(std::stod(line.substr(at + 10)));
  return losses;
}

}  // namespace kiln::testing
