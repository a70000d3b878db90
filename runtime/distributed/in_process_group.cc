// MakeInProcessGroup (communicator.h): ranks are threads of one process. Each collective is one
// round: every rank leaves a pointer to its input, the last to arrive computes the result once
// (sums in rank order, so every rank gets the same bits) into a buffer of that round, and each
// rank copies it out. The inputs stay valid while their ranks wait for the round to finish.
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>

#include "runtime/distributed/communicator.h"

namespace kiln {
namespace {

enum class Collective { kAllReduceSum, kBroadcast, kAllGather };

const char* NameOf(Collective c) {
  switch (c) {
    case Collective::kAllReduceSum:
      return "all-reduce";
    case Collective::kBroadcast:
      return "broadcast";
    case Collective::kAllGather:
      return "all-gather";
  }
  return "collective";
}

template <typename T>
void SumInto(std::vector<char>& out, const std::vector<const void*>& inputs, int64_t count) {
  T* sum = reinterpret_cast<T*>(out.data());
  std::memcpy(sum, inputs[0], count * sizeof(T));
  for (size_t r = 1; r < inputs.size(); ++r) {
    const T* x = static_cast<const T*>(inputs[r]);
    for (int64_t i = 0; i < count; ++i) sum[i] += x[i];
  }
}

class Group {
 public:
  Group(int size, double timeout) : size_(size), timeout_(timeout), inputs_(size, nullptr) {}

  // One round of `what` for `rank`; `bytes` is the size of each rank's input.
  Result<std::shared_ptr<const std::vector<char>>> Round(int rank, Collective what,
                                                         const void* input, int64_t bytes,
                                                         int64_t count, DType dtype, int root) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!broken_.empty()) return MakeError(ErrorCode::kFailedPrecondition, broken_);
    if (arrived_ == 0) {
      what_ = what;
      bytes_ = bytes;
    } else if (what != what_ || bytes != bytes_) {
      broken_ = std::string("rank ") + std::to_string(rank) + " called a " + NameOf(what) + " of " +
                std::to_string(bytes) + " bytes where the others called a " + NameOf(what_) +
                " of " + std::to_string(bytes_) + " bytes";
      cv_.notify_all();
      return MakeError(ErrorCode::kInvalidArgument, broken_);
    }
    inputs_[rank] = input;
    const uint64_t round = round_;
    if (++arrived_ == size_) {
      auto out = std::make_shared<std::vector<char>>();
      switch (what) {
        case Collective::kAllReduceSum:
          out->resize(bytes);
          if (dtype == DType::kF64)
            SumInto<double>(*out, inputs_, count);
          else
            SumInto<float>(*out, inputs_, count);
          break;
        case Collective::kBroadcast:
          out->assign(static_cast<const char*>(inputs_[root]),
                      static_cast<const char*>(inputs_[root]) + bytes);
          break;
        case Collective::kAllGather:
          out->resize(bytes * size_);
          for (int r = 0; r < size_; ++r) std::memcpy(out->data() + r * bytes, inputs_[r], bytes);
          break;
      }
      result_ = std::move(out);
      arrived_ = 0;
      std::fill(inputs_.begin(), inputs_.end(), nullptr);
      ++round_;
      cv_.notify_all();
      return result_;
    }
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_);
    while (round_ == round && broken_.empty())
      if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && round_ == round) {
        std::string missing;
        for (int r = 0; r < size_; ++r)
          if (!inputs_[r]) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
        broken_ = std::string("the ") + NameOf(what) + " did not complete within " +
                  std::to_string(static_cast<int>(timeout_)) + " s: rank" +
                  (missing.find(',') == std::string::npos ? " " : "s ") + missing +
                  " did not join (stopped or died)";
        cv_.notify_all();
      }
    if (round_ == round) return MakeError(ErrorCode::kFailedPrecondition, broken_);
    return result_;
  }

  int size() const { return size_; }

  void Abort(int rank) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (broken_.empty()) broken_ = "rank " + std::to_string(rank) + " ended the run";
    cv_.notify_all();
  }

 private:
  const int size_;
  const double timeout_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<const void*> inputs_;  // this round's, by rank (null: not arrived)
  int arrived_ = 0;
  uint64_t round_ = 0;
  Collective what_ = Collective::kAllReduceSum;
  int64_t bytes_ = 0;
  std::shared_ptr<const std::vector<char>> result_;  // the last finished round's
  std::string broken_;                               // why the group is unusable
};

class InProcessCommunicator : public Communicator {
 public:
  InProcessCommunicator(std::shared_ptr<Group> group, int rank)
      : group_(std::move(group)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  std::string kind() const override { return "in-process"; }

  Status AllReduceSum(void* data, int64_t count, DType dtype) override {
    if (dtype != DType::kF32 && dtype != DType::kF64)
      return MakeError(ErrorCode::kInvalidArgument, "all-reduce of ", DTypeName(dtype),
                       " values: only f32 and f64 are summed");
    const int64_t bytes = count * static_cast<int64_t>(DTypeSize(dtype));
    const auto start = std::chrono::steady_clock::now();
    KILN_ASSIGN_OR_RETURN(
        auto out, group_->Round(rank_, Collective::kAllReduceSum, data, bytes, count, dtype, 0));
    std::memcpy(data, out->data(), bytes);
    CountTravel(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    return OkStatus();
  }
  Status Broadcast(void* data, int64_t bytes, int root) override {
    if (root < 0 || root >= size())
      return MakeError(ErrorCode::kInvalidArgument, "broadcast from rank ", root, " of ", size());
    KILN_ASSIGN_OR_RETURN(
        auto out, group_->Round(rank_, Collective::kBroadcast, data, bytes, 0, DType::kF32, root));
    if (rank_ != root) std::memcpy(data, out->data(), bytes);
    return OkStatus();
  }
  Status AllGather(const void* mine, int64_t bytes, void* all) override {
    KILN_ASSIGN_OR_RETURN(
        auto out, group_->Round(rank_, Collective::kAllGather, mine, bytes, 0, DType::kF32, 0));
    std::memcpy(all, out->data(), out->size());
    return OkStatus();
  }

  void Abort(int) override { group_->Abort(rank_); }

 private:
  std::shared_ptr<Group> group_;
  const int rank_;
};

}  // namespace

std::vector<std::shared_ptr<Communicator>> MakeInProcessGroup(int size, double timeout_seconds) {
  auto group = std::make_shared<Group>(size, timeout_seconds);
  std::vector<std::shared_ptr<Communicator>> ranks;
  for (int r = 0; r < size; ++r) ranks.push_back(std::make_shared<InProcessCommunicator>(group, r));
  return ranks;
}

}  // namespace kiln
