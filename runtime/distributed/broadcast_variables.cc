#include "runtime/distributed/broadcast_variables.h"

#include <cstdint>
#include <sstream>
#include <vector>

namespace kiln {

Status BroadcastVariables(Communicator& comm, VariableStore& store, int root,
                          const std::set<std::string>& only) {
  // First the ranks agree on what the variables are: root's list, one line per variable, is
  // compared with each rank's own, and every rank learns whether all matched.
  std::vector<std::string> names, lines;
  for (const auto& [name, t] : store.values()) {
    if (!only.empty() && !only.count(name)) continue;
    names.push_back(name);
    lines.push_back(name + " " + std::string(DTypeName(t.dtype())) + t.shape().ToString());
  }
  std::string mine;
  for (const std::string& line : lines) mine += line + "\n";
  int64_t length = static_cast<int64_t>(mine.size());
  KILN_RETURN_IF_ERROR(comm.Broadcast(&length, sizeof length, root));
  std::string roots = mine;
  roots.resize(static_cast<size_t>(length));
  KILN_RETURN_IF_ERROR(comm.Broadcast(roots.data(), length, root));
  const uint8_t same = roots == mine;
  std::vector<uint8_t> all(static_cast<size_t>(comm.size()));
  KILN_RETURN_IF_ERROR(comm.AllGather(&same, 1, all.data()));
  for (int r = 0; r < comm.size(); ++r) {
    if (all[r]) continue;
    if (r != comm.rank())
      return MakeError(ErrorCode::kFailedPrecondition, "rank ", r, "'s variables differ from rank ",
                       root, "'s (names, dtypes or shapes): the ranks run different models");
    size_t at = 0;  // the first line that differs
    std::string theirs_line, mine_line;
    std::istringstream theirs(roots), own(mine);
    while (std::getline(theirs, theirs_line) && std::getline(own, mine_line) &&
           theirs_line == mine_line)
      ++at;
    return MakeError(ErrorCode::kFailedPrecondition, "rank ", r, "'s variables differ from rank ",
                     root, "'s, the ranks run different models: variable ", at, " here is '",
                     at < lines.size() ? lines[at] : "(none)", "', on rank ", root, " '",
                     theirs ? theirs_line : "(none)", "'");
  }
  for (const std::string& name : names) {
    Tensor* t = store.FindMutable(name);
    KILN_RETURN_IF_ERROR(comm.Broadcast(t->raw_data(), t->byte_size(), root));
  }
  return OkStatus();
}

}  // namespace kiln
