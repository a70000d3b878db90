// Reading and writing whole files safely: size limits on read, and atomic writes (temporary file,
// fsync, rename) so that a crash never leaves a half-written file in place of a good one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "ir/status.h"

namespace kiln {

// Reads a file; refuses (kResourceExhausted) files larger than `max_bytes`.
Result<std::string> ReadFileToString(const std::string& path, int64_t max_bytes);
// Writes `path` atomically: PATH.tmp.<pid>.<n> (the process's n-th write), fsync, rename over
// PATH. First removes what earlier writes of PATH that were killed before their rename left
// behind: files PATH.tmp.<pid> or PATH.tmp.<pid>.<n> in PATH's folder whose process is gone (never
// another pattern, never one a live process may still write).
Status WriteFileAtomically(const std::string& path, const std::string& contents);

// The same, written piece by piece (a file larger than memory would hold twice): Open, Append
// any number of times, Commit. A writer destroyed without a successful Commit removes its
// temporary file and leaves PATH as it was.
class AtomicFileWriter {
 public:
  static Result<AtomicFileWriter> Open(const std::string& path);
  AtomicFileWriter(AtomicFileWriter&& other) noexcept;
  AtomicFileWriter& operator=(AtomicFileWriter&&) = delete;
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  ~AtomicFileWriter();

  Status Append(const void* data, size_t size);
  // Bytes appended so far.
  int64_t size() const { return size_; }
  // fsync, then rename over the path.
  Status Commit();

 private:
  AtomicFileWriter(std::string path, std::string tmp, int fd)
      : path_(std::move(path)), tmp_(std::move(tmp)), fd_(fd) {}
  // Closes and removes the temporary file (after a failure, or when never committed).
  void Abandon();

  std::string path_, tmp_;
  int fd_ = -1;
  int64_t size_ = 0;
};
// A regular file read at any offset (pread), for formats that index into files too large to
// read whole.
class RandomAccessFile {
 public:
  static Result<RandomAccessFile> Open(const std::string& path);
  RandomAccessFile(RandomAccessFile&& other) noexcept;
  RandomAccessFile& operator=(RandomAccessFile&&) = delete;
  RandomAccessFile(const RandomAccessFile&) = delete;
  ~RandomAccessFile();

  // The file's size when opened.
  int64_t size() const { return size_; }
  // Reads [offset, offset + size); kDataLoss when the file ends before.
  Status Read(int64_t offset, int64_t size, void* out) const;

 private:
  RandomAccessFile(std::string path, int fd, int64_t size)
      : path_(std::move(path)), fd_(fd), size_(size) {}

  std::string path_;
  int fd_ = -1;
  int64_t size_ = 0;
};

// "model.kgraph.txt" -> true when the path ends with `suffix`.
bool EndsWith(const std::string& text, const std::string& suffix);

}  // namespace kiln
