#include "runtime/module/kernel_object.h"

#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kiln {
namespace {

// The ELF header fields that must match before the bytes are handed to the dynamic loader, so
// that an obviously wrong object is refused with a clear message.
Status CheckElfHeader(const std::string& bytes, const std::string& origin) {
  auto fail = [&](const std::string& why) {
    return MakeError(ErrorCode::kInvalidArgument, origin, ": its kernel code is not ", why);
  };
  if (bytes.size() < 64 || bytes.compare(0, 4,
                                         "\x7f"
                                         "ELF") != 0)
    return fail("an ELF object");
  if (bytes[4] != 2 || bytes[5] != 1) return fail("64-bit little-endian ELF");
  uint16_t type, machine;
  std::memcpy(&type, bytes.data() + 16, 2);
  std::memcpy(&machine, bytes.data() + 18, 2);
  if (type != 3) return fail("a shared object (ELF type " + std::to_string(type) + ")");
  if (machine != 62) return fail("x86-64 code (ELF machine " + std::to_string(machine) + ")");
  return OkStatus();
}

class SharedObjectKernels : public KernelLibrary {
 public:
  SharedObjectKernels(void* handle, int fd, std::string origin)
      : handle_(handle), fd_(fd), origin_(std::move(origin)) {}
  ~SharedObjectKernels() override {
    dlclose(handle_);
    close(fd_);  // only now may another object be opened by the same name
  }

  Result<KernelEntry> Find(const std::string& symbol) const override {
    const std::string packed = "_mlir_" + symbol;
    dlerror();
    void* fn = dlsym(handle_, packed.c_str());
    if (!fn)
      return MakeError(ErrorCode::kNotFound, origin_, ": its kernel code has no kernel '", symbol,
                       "'");
    return reinterpret_cast<KernelEntry>(fn);
  }

 private:
  void* handle_;
  int fd_;  // the memfd the object was opened from (its name: /proc/self/fd/<fd_>)
  std::string origin_;
};

}  // namespace

Result<std::shared_ptr<const KernelLibrary>> OpenKernelObject(const std::string& bytes,
                                                              const std::string& origin) {
  KILN_RETURN_IF_ERROR(CheckElfHeader(bytes, origin));
  int fd = memfd_create("kiln-kernels", MFD_CLOEXEC);
  if (fd < 0)
    return MakeError(ErrorCode::kInternal, origin, ": memfd_create: ", std::strerror(errno));
  size_t written = 0;
  while (written < bytes.size()) {
    ssize_t n = write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = errno;
      close(fd);
      return MakeError(ErrorCode::kInternal, origin,
                       ": writing its kernel code to memory: ", std::strerror(err));
    }
    written += static_cast<size_t>(n);
  }
  // The loader knows an object by the name it was opened by, and answers a second dlopen of the
  // same name with the first object: the memfd stays open while the object is loaded, so that no
  // other module's kernels get its descriptor number, hence its name.
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  dlerror();
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    close(fd);
    return MakeError(ErrorCode::kInvalidArgument, origin,
                     ": its kernel code does not load: ", why ? why : "unknown dlopen error");
  }
  return std::shared_ptr<const KernelLibrary>(new SharedObjectKernels(handle, fd, origin));
}

}  // namespace kiln
