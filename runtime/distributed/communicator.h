// Collective communication between the processes (ranks) of a data-parallel run: every rank holds
// a replica of the model, runs its shard of each global batch, and the gradients are summed over
// the ranks before the update (the AllReduce op of ir/ops/collective.h; passes/data_parallel.h
// puts them into a training graph). A Session gets its communicator through
// SessionOptions::distributed; the executors hand it to the kernels that need it.
//
// Contract: every rank calls the same collectives in the same order with the same sizes. A call
// that does not complete within the communicator's timeout (a rank died or stopped calling) fails
// with kFailedPrecondition, naming what it waited for; after that the communicator is unusable and
// the process should exit. Results are bitwise the same on every rank.
//
// Implementations: MPI (OpenMpiCommunicator: kiln's MPI shim, libkiln_mpi.so, loaded at run time,
// so that a program that never asks for MPI never needs it) and an in-process group of threads
// (MakeInProcessGroup: tests, and a device simulator's stand-in for NCCL).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/status.h"

namespace kiln {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "mpi" or "in-process": what the messages and `kiln inspect` call it.
  virtual std::string kind() const = 0;

  // Replaces `count` values at `data` (f32 or f64) by their element-wise sum over the ranks.
  virtual Status AllReduceSum(void* data, int64_t count, DType dtype) = 0;
  // The same, begun: returns a ticket at once, while the sum goes on behind the caller's back
  // (MPI: on the shim's progress thread); `data` must stay untouched until FinishAllReduce(ticket)
  // has returned, which waits for it (at most the timeout). Every started sum must be finished;
  // collectives run in the order they were called on every rank. This default sums in
  // StartAllReduceSum itself (no overlap).
  virtual Result<int64_t> StartAllReduceSum(void* data, int64_t count, DType dtype);
  virtual Status FinishAllReduce(int64_t ticket);
  // Copies `bytes` bytes at root's `data` into every other rank's `data`.
  virtual Status Broadcast(void* data, int64_t bytes, int root) = 0;
  // Every rank's `bytes` bytes at `mine`, in rank order, into `all` (size() * bytes).
  virtual Status AllGather(const void* mine, int64_t bytes, void* all) = 0;
  // Ends the run for every rank after this one failed: MPI ends every process (this one with
  // `exit_code`; it does not return); in-process, the others' collectives fail at once.
  virtual void Abort(int exit_code) = 0;

  // This rank's share of the current global batch (its examples over all ranks' examples): the
  // weight of its values in AllReduce(mean), so that per-rank mean gradients combine into the
  // global batch's mean gradient also when the shards differ in size. 1 / size() until set.
  double share() const { return share_ >= 0 ? share_ : 1.0 / size(); }
  void set_share(double share) { share_ = share; }

  // What the graph's all-reduces have cost so far: messages, their bytes, the seconds the runs
  // waited for them (packing included: AllReduce's kernels count it) and the seconds the sums
  // themselves took (each implementation's AllReduceSum and FinishAllReduce count it; behind
  // backward, where a sum overlaps it).
  struct Traffic {
    int64_t messages = 0;
    int64_t bytes = 0;
    double waited = 0;
    double travelled = 0;
  };
  const Traffic& traffic() const { return traffic_; }
  void CountAllReduce(int64_t bytes, double waited) {
    ++traffic_.messages;
    traffic_.bytes += bytes;
    traffic_.waited += waited;
  }

 protected:
  void CountTravel(double seconds) { traffic_.travelled += seconds; }

 private:
  double share_ = -1;
  Traffic traffic_;
  std::vector<std::pair<int64_t, Status>> finished_;  // the default's sums, by ticket
  int64_t next_ticket_ = 1;
};

// Opens MPI (MPI_Init on first use; MPI_Finalize at exit) through libkiln_mpi.so, found from
// $KILN_MPI_LIBRARY, else beside the running program (PROGRAM_DIR/../lib/kiln/, the build tree's
// and an installation's layout), else on the loader's path. A collective that has not completed
// after `timeout_seconds` fails. kFailedPrecondition, naming the library, where it cannot load.
Result<std::shared_ptr<Communicator>> OpenMpiCommunicator(double timeout_seconds);

// `size` communicators that talk through memory, one per thread of the caller's (rank i is
// element i); a collective that some rank does not join within `timeout_seconds` fails on the
// ranks that did, naming the missing ones.
std::vector<std::shared_ptr<Communicator>> MakeInProcessGroup(int size, double timeout_seconds);

}  // namespace kiln
