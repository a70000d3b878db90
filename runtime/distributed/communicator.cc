#include "runtime/distributed/communicator.h"

#include <algorithm>

namespace kiln {

Result<int64_t> Communicator::StartAllReduceSum(void* data, int64_t count, DType dtype) {
  const int64_t ticket = next_ticket_++;
  finished_.emplace_back(ticket, AllReduceSum(data, count, dtype));
  return ticket;
}

Status Communicator::FinishAllReduce(int64_t ticket) {
  auto it = std::find_if(finished_.begin(), finished_.end(),
                         [&](const auto& f) { return f.first == ticket; });
  if (it == finished_.end())
    return MakeError(ErrorCode::kInternal, "all-reduce ticket ", ticket, " was never started");
  Status status = std::move(it->second);
  finished_.erase(it);
  return status;
}

}  // namespace kiln
