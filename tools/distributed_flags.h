// The ranks of a data-parallel run, as `kiln train` and `kilnrt` take them under mpirun:
//   --distributed mpi           the ranks are MPI's, and so are the gradients' all-reduces (the
//                               host backends: cpu, reference)
//   --distributed nccl          the ranks are MPI's; the gradients are all-reduced on the device
//                               by NCCL (runtime/cuda/collectives.h; cuda and cuda-sim backends)
//   --distributed-timeout S     a collective waiting longer than S seconds (default 60) fails:
//                               the rank that waits exits 1 naming what it waited for
#pragma once

#include <memory>
#include <string>

#include "ir/status.h"
#include "runtime/distributed/communicator.h"
#include "tools/flags.h"

namespace kiln::cli {

void DeclareRanksFlags(Flags& flags);

struct Ranks {
  std::shared_ptr<Communicator> comm;  // null without --distributed
  bool on_device = false;              // --distributed nccl
};

// The ranks the flags ask for, on `backend` ("": not known yet, nothing checked against it).
// kInvalidArgument for a malformed flag, --distributed nccl with a host backend or mpi with a
// cuda one, or --distributed-timeout without --distributed; the communicator's own error where
// MPI cannot start.
Result<Ranks> RanksFromFlags(const Flags& flags, const std::string& backend);

// `text` with every "{rank}" replaced by this process's rank (0 without ranks): per-rank file
// names, "shard{rank}.npy".
std::string ForRank(std::string text, const Communicator* comm);

}  // namespace kiln::cli
