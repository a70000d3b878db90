// OpenMpiCommunicator (communicator.h): the runtime's side of libkiln_mpi.so (mpi_shim.h).
#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <mutex>

#include "runtime/distributed/communicator.h"
#include "runtime/distributed/mpi_shim.h"

namespace kiln {
namespace {

constexpr char kShimName[] = "libkiln_mpi.so";

// The folder of the running program, with a trailing '/' ("" when unknown).
std::string ProgramDir() {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) return "";
  std::string p(path, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/') + 1);
}

// dlopen with RTLD_GLOBAL: MPI's own components, loaded by MPI_Init, look up MPI's symbols.
Result<void*> OpenShim() {
  std::vector<std::string> tried;
  if (const char* env = std::getenv("KILN_MPI_LIBRARY"); env && *env) {
    if (void* h = dlopen(env, RTLD_NOW | RTLD_GLOBAL)) return h;
    const char* why = dlerror();
    return MakeError(ErrorCode::kFailedPrecondition, "cannot load $KILN_MPI_LIBRARY ", env, " (",
                     why ? why : "unknown reason", ")");
  }
  std::string reasons;
  for (const std::string& path :
       {ProgramDir() + "../lib/kiln/" + kShimName, std::string(kShimName)}) {
    if (void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL)) return h;
    const char* why = dlerror();
    reasons += std::string(reasons.empty() ? "" : "; ") + (why ? why : path + ": unknown reason");
  }
  return MakeError(ErrorCode::kFailedPrecondition, "cannot load ", kShimName,
                   ", kiln's MPI library (built where CMake finds MPI: scripts/setup.sh installs "
                   "OpenMPI): ",
                   reasons);
}

class MpiCommunicator : public Communicator {
 public:
  MpiCommunicator(const KilnMpiShim& shim, double timeout) : shim_(shim), timeout_(timeout) {}
  int rank() const override { return shim_.rank; }
  int size() const override { return shim_.size; }
  std::string kind() const override { return "mpi"; }

  Status AllReduceSum(void* data, int64_t count, DType dtype) override {
    if (dtype != DType::kF32 && dtype != DType::kF64)
      return MakeError(ErrorCode::kInvalidArgument, "all-reduce of ", DTypeName(dtype),
                       " values: only f32 and f64 are summed");
    const auto start = std::chrono::steady_clock::now();
    KILN_RETURN_IF_ERROR(Call([&](char* error, size_t size) {
      return shim_.all_reduce_sum(data, count, dtype == DType::kF64, timeout_, error, size);
    }));
    CountTravel(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return OkStatus();
  }
  Status Broadcast(void* data, int64_t bytes, int root) override {
    if (root < 0 || root >= size())
      return MakeError(ErrorCode::kInvalidArgument, "broadcast from rank ", root, " of ", size());
    return Call([&](char* error, size_t size) {
      return shim_.broadcast(data, bytes, root, timeout_, error, size);
    });
  }
  Status AllGather(const void* mine, int64_t bytes, void* all) override {
    return Call([&](char* error, size_t size) {
      return shim_.all_gather(mine, bytes, all, timeout_, error, size);
    });
  }

  Result<int64_t> StartAllReduceSum(void* data, int64_t count, DType dtype) override {
    if (dtype != DType::kF32 && dtype != DType::kF64)
      return MakeError(ErrorCode::kInvalidArgument, "all-reduce of ", DTypeName(dtype),
                       " values: only f32 and f64 are summed");
    int64_t ticket = 0;
    KILN_RETURN_IF_ERROR(Call([&](char* error, size_t size) {
      return shim_.start_all_reduce_sum(data, count, dtype == DType::kF64, &ticket, error, size);
    }));
    return ticket;
  }
  Status FinishAllReduce(int64_t ticket) override {
    double seconds = 0;
    KILN_RETURN_IF_ERROR(Call([&](char* error, size_t size) {
      return shim_.finish(ticket, timeout_, &seconds, error, size);
    }));
    CountTravel(seconds);
    return OkStatus();
  }
  void Abort(int exit_code) override { shim_.abort(exit_code); }

 private:
  template <typename F>
  Status Call(F call) {
    std::lock_guard<std::mutex> lock(mutex_);  // MPI_THREAD_SERIALIZED
    char error[512] = {0};
    if (call(error, sizeof error) == 0) return OkStatus();
    return MakeError(ErrorCode::kFailedPrecondition, "rank ", rank(), " of ", size(), ": ", error);
  }

  KilnMpiShim shim_;
  const double timeout_;
  std::mutex mutex_;
};

}  // namespace

Result<std::shared_ptr<Communicator>> OpenMpiCommunicator(double timeout_seconds) {
  static std::mutex once;
  std::lock_guard<std::mutex> lock(once);
  KILN_ASSIGN_OR_RETURN(void* handle, OpenShim());
  auto open = reinterpret_cast<KilnMpiOpenFn>(dlsym(handle, "kiln_mpi_open"));
  if (!open) return MakeError(ErrorCode::kFailedPrecondition, kShimName, " lacks kiln_mpi_open");
  KilnMpiShim shim{};
  char error[512] = {0};
  if (open(&shim, error, sizeof error) != 0)
    return MakeError(ErrorCode::kFailedPrecondition, "MPI did not start: ", error);
  if (shim.version != KILN_MPI_SHIM_VERSION)
    return MakeError(ErrorCode::kFailedPrecondition, kShimName, " speaks version ", shim.version,
                     ", this kiln ", KILN_MPI_SHIM_VERSION);
  return std::shared_ptr<Communicator>(std::make_shared<MpiCommunicator>(shim, timeout_seconds));
}

}  // namespace kiln
