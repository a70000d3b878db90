// libkiln_mpi.so: kiln's collectives on MPI (runtime/distributed/mpi_shim.h has the contract).
// Kept apart from the runtime library so that only a run that asks for MPI loads MPI.
//
// Every collective runs on one progress thread of the shim's, as MPI's blocking call (its fastest
// algorithms; MPI_THREAD_SERIALIZED: one call at a time), while the caller waits for it at most
// its timeout. A call that times out leaves the progress thread inside MPI; the process then ends
// with MPI_Abort, which ends every rank.
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "runtime/distributed/mpi_shim.h"

namespace {

std::atomic<bool> failed{false};  // a collective failed: end every rank at exit

void Finish() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (failed)
    MPI_Abort(MPI_COMM_WORLD, 1);
  else
    MPI_Finalize();
}

// One collective: `run` returns MPI's code; `done` once it has.
struct Job {
  std::function<int()> run;
  const char* what = "";
  long long bytes = 0;
  int code = MPI_SUCCESS;
  bool done = false;
  double seconds = 0;  // in MPI
};

class ProgressThread {
 public:
  ProgressThread() {
    std::thread([this] { Loop(); }).detach();
  }

  // Queues `run` for the progress thread; its ticket.
  int64_t Start(std::function<int()> run, const char* what, long long bytes) {
    auto job = std::make_shared<Job>();
    job->run = std::move(run);
    job->what = what;
    job->bytes = bytes;
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(job);
    const int64_t ticket = next_ticket_++;
    started_[ticket] = job;
    cv_.notify_all();
    return ticket;
  }

  // Waits for a started job: 0 when it succeeded within `timeout` seconds, else 1 with the reason
  // in `error`.
  int Finish(int64_t ticket, double timeout, double* seconds, char* error, size_t size) {
    std::unique_lock<std::mutex> lock(mutex_);
    auto it = started_.find(ticket);
    if (it == started_.end()) {
      std::snprintf(error, size, "collective ticket %lld was never started",
                    static_cast<long long>(ticket));
      return 1;
    }
    std::shared_ptr<Job> job = it->second;
    started_.erase(it);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
    if (!cv_.wait_until(lock, deadline, [&] { return job->done; })) {
      failed = true;
      std::snprintf(error, size,
                    "the %s of %lld bytes did not complete within %lld s: another rank stopped "
                    "or died",
                    job->what, job->bytes, static_cast<long long>(timeout));
      return 1;
    }
    if (seconds) *seconds = job->seconds;
    if (job->code == MPI_SUCCESS) return 0;
    char text[MPI_MAX_ERROR_STRING] = {0};
    int length = 0;
    MPI_Error_string(job->code, text, &length);
    std::snprintf(error, size, "MPI %s failed: %s", job->what, text);
    failed = true;
    return 1;
  }

  int Run(std::function<int()> run, double timeout, const char* what, long long bytes, char* error,
          size_t size) {
    return Finish(Start(std::move(run), what, bytes), timeout, nullptr, error, size);
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      cv_.wait(lock, [&] { return !queue_.empty(); });
      std::shared_ptr<Job> job = queue_.front();
      queue_.pop_front();
      lock.unlock();
      const auto start = std::chrono::steady_clock::now();
      const int code = job->run();
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      lock.lock();
      job->seconds = seconds;
      job->code = code;
      job->done = true;
      cv_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  std::map<int64_t, std::shared_ptr<Job>> started_;  // not yet finished, by ticket
  int64_t next_ticket_ = 1;
};

ProgressThread* progress = nullptr;  // made by kiln_mpi_open, kept for the process

// MPI counts are ints: larger transfers go in pieces of at most 2^30 elements.
constexpr int64_t kMostPerCall = int64_t{1} << 30;

std::function<int()> AllReduceJob(void* data, int64_t count, int is_f64) {
  const MPI_Datatype type = is_f64 ? MPI_DOUBLE : MPI_FLOAT;
  const int64_t width = is_f64 ? 8 : 4;
  return [=] {
    for (int64_t done = 0; done < count;) {
      const int n = static_cast<int>(std::min(kMostPerCall, count - done));
      char* at = static_cast<char*>(data) + done * width;
      if (int code = MPI_Allreduce(MPI_IN_PLACE, at, n, type, MPI_SUM, MPI_COMM_WORLD);
          code != MPI_SUCCESS)
        return code;
      done += n;
    }
    return MPI_SUCCESS;
  };
}

int Finish(int64_t ticket, double timeout, double* seconds, char* error, size_t size) {
  return progress->Finish(ticket, timeout, seconds, error, size);
}

int AllReduceSum(void* data, int64_t count, int is_f64, double timeout, char* error, size_t size) {
  int64_t ticket =
      progress->Start(AllReduceJob(data, count, is_f64), "all-reduce", count * (is_f64 ? 8 : 4));
  return Finish(ticket, timeout, nullptr, error, size);
}

int StartAllReduceSum(void* data, int64_t count, int is_f64, int64_t* ticket, char*, size_t) {
  *ticket =
      progress->Start(AllReduceJob(data, count, is_f64), "all-reduce", count * (is_f64 ? 8 : 4));
  return 0;
}

int Broadcast(void* data, int64_t bytes, int root, double timeout, char* error, size_t size) {
  return progress->Run(
      [=] {
        for (int64_t done = 0; done < bytes;) {
          const int n = static_cast<int>(std::min(kMostPerCall, bytes - done));
          if (int code =
                  MPI_Bcast(static_cast<char*>(data) + done, n, MPI_BYTE, root, MPI_COMM_WORLD);
              code != MPI_SUCCESS)
            return code;
          done += n;
        }
        return MPI_SUCCESS;
      },
      timeout, "broadcast", bytes, error, size);
}

int AllGather(const void* mine, int64_t bytes, void* all, double timeout, char* error,
              size_t size) {
  if (bytes > INT_MAX) {
    std::snprintf(error, size, "an all-gather of %lld bytes per rank (at most %d)",
                  static_cast<long long>(bytes), INT_MAX);
    return 1;
  }
  return progress->Run(
      [=] {
        return MPI_Allgather(mine, static_cast<int>(bytes), MPI_BYTE, all, static_cast<int>(bytes),
                             MPI_BYTE, MPI_COMM_WORLD);
      },
      timeout, "all-gather", bytes, error, size);
}

void Abort(int exit_code) {
  failed = true;
  MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int kiln_mpi_open(KilnMpiShim* shim, char* error,
                                                                    size_t error_size) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    if (int code = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
        code != MPI_SUCCESS) {
      char text[MPI_MAX_ERROR_STRING] = {0};
      int length = 0;
      MPI_Error_string(code, text, &length);
      std::snprintf(error, error_size, "MPI_Init_thread failed: %s", text);
      return 1;
    }
    if (provided < MPI_THREAD_SERIALIZED) {
      std::snprintf(error, error_size,
                    "MPI offers thread level %d; kiln needs MPI_THREAD_SERIALIZED (%d)", provided,
                    MPI_THREAD_SERIALIZED);
      return 1;
    }
    std::atexit(Finish);
  }
  if (!progress) progress = new ProgressThread();
  // Errors come back as codes (the default handler would end the process without a word).
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  shim->version = KILN_MPI_SHIM_VERSION;
  MPI_Comm_rank(MPI_COMM_WORLD, &shim->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &shim->size);
  char library[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int length = 0;
  MPI_Get_library_version(library, &length);
  std::snprintf(shim->library, sizeof shim->library, "%.*s",
                static_cast<int>(std::strcspn(library, "\n,")), library);
  shim->all_reduce_sum = AllReduceSum;
  shim->broadcast = Broadcast;
  shim->all_gather = AllGather;
  shim->start_all_reduce_sum = StartAllReduceSum;
  shim->finish = Finish;
  shim->abort = Abort;
  return 0;
}
