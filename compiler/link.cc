#include "compiler/link.h"

#include <fcntl.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "ir/file_util.h"

extern char** environ;

namespace kiln::compiler {
namespace {

// A folder made by mkdtemp, removed with what is in it.
class TempFolder {
 public:
  TempFolder() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/kiln-link-XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (mkdtemp(buffer.data())) path_ = buffer.data();
  }
  ~TempFolder() {
    for (const std::string& f : files_) unlink(f.c_str());
    if (!path_.empty()) rmdir(path_.c_str());
  }
  bool ok() const { return !path_.empty(); }
  std::string File(const std::string& name) {
    files_.push_back(path_ + "/" + name);
    return files_.back();
  }

 private:
  std::string path_;
  std::vector<std::string> files_;
};

}  // namespace

Result<std::string> LinkSharedObject(const std::string& object_bytes) {
  TempFolder dir;
  if (!dir.ok())
    return MakeError(ErrorCode::kInternal,
                     "cannot make a temporary folder to link the kernels: ", std::strerror(errno));
  const std::string object = dir.File("kernels.o"), shared = dir.File("kernels.so"),
                    log = dir.File("ld.log");
  KILN_RETURN_IF_ERROR(WriteFileAtomically(object, object_bytes));
  std::vector<std::string> argv = {"ld", "-shared", "-z",  "noexecstack", "--hash-style=gnu",
                                   "-o", shared,    object};
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid;
  int err = posix_spawnp(&pid, "ld", &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0)
    return MakeError(ErrorCode::kFailedPrecondition,
                     "cannot run the system linker 'ld' to link the kernels (", std::strerror(err),
                     "); kiln compile needs binutils installed");
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    Result<std::string> text = ReadFileToString(log, 1 << 16);
    return MakeError(ErrorCode::kInternal, "linking the kernels failed: ",
                     text.ok() ? *text : std::string("(no output)"));
  }
  return ReadFileToString(shared, int64_t{4} << 30);
}

}  // namespace kiln::compiler
