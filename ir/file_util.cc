#include "ir/file_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

namespace kiln {

Result<std::string> ReadFileToString(const std::string& path, int64_t max_bytes) {
  KILN_ASSIGN_OR_RETURN(RandomAccessFile file, RandomAccessFile::Open(path));
  if (file.size() > max_bytes)
    return MakeError(ErrorCode::kResourceExhausted, "'", path, "' is ", file.size(),
                     " bytes, over the limit of ", max_bytes);
  std::string data(static_cast<size_t>(file.size()), '\0');
  KILN_RETURN_IF_ERROR(file.Read(0, file.size(), data.data()));
  return data;
}

namespace {

// Removes PATH.tmp.<pid> files of processes that no longer exist (see WriteFileAtomically).
void RemoveStaleTemporaries(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string prefix = (slash == std::string::npos ? path : path.substr(slash + 1)) + ".tmp.";
  DIR* d = ::opendir(dir.empty() ? "." : dir.c_str());
  if (!d) return;
  while (const dirent* entry = ::readdir(d)) {
    const std::string name = entry->d_name;
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    // PID, or PID.N (the N-th write of that process).
    std::string digits = name.substr(prefix.size());
    if (const size_t dot = digits.find('.'); dot != std::string::npos) {
      const std::string n = digits.substr(dot + 1);
      if (n.empty() || n.size() > 19 || n.find_first_not_of("0123456789") != std::string::npos)
        continue;
      digits.resize(dot);
    }
    if (digits.empty() || digits.size() > 9 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      continue;
    const pid_t pid = static_cast<pid_t>(std::stol(digits));
    if (pid <= 0 || pid == ::getpid()) continue;
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive (or not ours to ask): keep it
    ::unlink((dir + name).c_str());
  }
  ::closedir(d);
}

}  // namespace

Result<AtomicFileWriter> AtomicFileWriter::Open(const std::string& path) {
  RemoveStaleTemporaries(path);
  // Writes of one path by threads of one process each have their own temporary file.
  static std::atomic<uint64_t> writes{0};
  std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(writes++);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return MakeError(ErrorCode::kInvalidArgument, "cannot write '", tmp,
                     "': ", std::strerror(errno));
  return AtomicFileWriter(path, std::move(tmp), fd);
}

AtomicFileWriter::AtomicFileWriter(AtomicFileWriter&& other) noexcept
    : path_(std::move(other.path_)),
      tmp_(std::move(other.tmp_)),
      fd_(std::exchange(other.fd_, -1)),
      size_(other.size_) {}

AtomicFileWriter::~AtomicFileWriter() { Abandon(); }

void AtomicFileWriter::Abandon() {
  if (fd_ < 0) return;
  ::close(fd_);
  fd_ = -1;
  ::unlink(tmp_.c_str());
}

Status AtomicFileWriter::Append(const void* data, size_t size) {
  if (fd_ < 0) return MakeError(ErrorCode::kFailedPrecondition, "'", tmp_, "' is not open");
  const char* bytes = static_cast<const char*>(data);
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::write(fd_, bytes + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = errno;
      Abandon();
      return MakeError(ErrorCode::kResourceExhausted, "writing '", tmp_,
                       "' failed: ", std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  size_ += static_cast<int64_t>(size);
  return OkStatus();
}

Status AtomicFileWriter::Commit() {
  if (fd_ < 0) return MakeError(ErrorCode::kFailedPrecondition, "'", tmp_, "' is not open");
  const int fd = std::exchange(fd_, -1);
  int err = ::fsync(fd) != 0 ? errno : 0;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    ::unlink(tmp_.c_str());
    return MakeError(ErrorCode::kDataLoss, "syncing '", tmp_, "' failed: ", std::strerror(err));
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp_.c_str());
    return MakeError(ErrorCode::kInvalidArgument, "renaming to '", path_,
                     "' failed: ", std::strerror(err));
  }
  return OkStatus();
}

Status WriteFileAtomically(const std::string& path, const std::string& contents) {
  KILN_ASSIGN_OR_RETURN(AtomicFileWriter file, AtomicFileWriter::Open(path));
  KILN_RETURN_IF_ERROR(file.Append(contents.data(), contents.size()));
  return file.Commit();
}

Result<RandomAccessFile> RandomAccessFile::Open(const std::string& path) {
  // Non-blocking, so that opening a FIFO does not wait for a writer; refused below.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return MakeError(errno == ENOENT ? ErrorCode::kNotFound : ErrorCode::kInvalidArgument,
                     "cannot open '", path, "': ", std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return MakeError(ErrorCode::kInvalidArgument, "cannot stat '", path, "': ", std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return MakeError(ErrorCode::kInvalidArgument, "'", path, "' is not a regular file");
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return RandomAccessFile(path, fd, static_cast<int64_t>(st.st_size));
}

RandomAccessFile::RandomAccessFile(RandomAccessFile&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)), size_(other.size_) {}

RandomAccessFile::~RandomAccessFile() {
  if (fd_ >= 0) ::close(fd_);
}

Status RandomAccessFile::Read(int64_t offset, int64_t size, void* out) const {
  char* bytes = static_cast<char*>(out);
  int64_t done = 0;
  while (done < size) {
    ssize_t n = ::pread(fd_, bytes + done, static_cast<size_t>(size - done), offset + done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      return MakeError(ErrorCode::kDataLoss, "reading '", path_,
                       "' failed: ", std::strerror(errno));
    if (n == 0)
      return MakeError(ErrorCode::kDataLoss, "'", path_, "' ends at byte ", offset + done,
                       ", before the ", size, " bytes at ", offset, " it should hold");
    done += n;
  }
  return OkStatus();
}

bool EndsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace kiln
