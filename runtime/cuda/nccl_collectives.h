// DeviceCollectives over NCCL on a GPU's stream (collectives.h), for the "cuda" device.
//
// Contract: OpenNcclCollectives is called by every rank of `ranks` at the same point. It first
// agrees with the others that NCCL loads on every rank (else every rank fails, naming the first
// rank where it does not), then rank 0 makes the unique id, `ranks` broadcasts it, and every rank
// joins the NCCL communicator (ncclCommInitRank) with the device's context current (`current`
// makes it so; it runs before every NCCL call). The communicator is destroyed with the object
// (aborted instead when NCCL reported an asynchronous error).
#pragma once

#include <cuda.h>

#include <functional>
#include <memory>

#include "runtime/cuda/collectives.h"
#include "runtime/distributed/communicator.h"

namespace kiln::cuda {

Result<std::shared_ptr<DeviceCollectives>> OpenNcclCollectives(CUstream stream,
                                                               std::function<Status()> current,
                                                               std::shared_ptr<Communicator> ranks);

}  // namespace kiln::cuda
