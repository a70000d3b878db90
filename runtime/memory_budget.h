// Memory budgets: how many bytes a run may use, what a compiled plan needs, and the check that
// refuses a plan that cannot fit before anything of it is allocated.
//
// A budget is a limit the user gave (SessionOptions::memory_limit, ModuleOptions::memory_limit,
// `--memory-limit` on the command line) or, without one, what this process can really get now: the
// smaller of the kernel's MemAvailable and the room left under the process's cgroup limit (v2
// memory.max, v1 memory.limit_in_bytes; reclaimable file cache counts as room).
//
// A compiled plan's peak (PlanMemory) is its arena, its constants, the variables it binds, the
// fetched outputs it copies out and what its steps keep for themselves (prepacked weights, library
// scratchpads). Against a limit the user gave, the whole peak must fit; against what the process
// can get, only what the plan would newly allocate (constants and stored variables are resident
// already). A refusal is kResourceExhausted with one line: the peak and its parts, the budget and
// where it comes from, and the largest buffers with the node, op and type that own them.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/status.h"
#include "runtime/executable.h"
#include "runtime/variable_store.h"

namespace kiln {

// "512M", "20G", "1.5G", "64MiB", "4096", "2T": a size in bytes. K, M, G and T (alone, or followed
// by "B" or "iB") are powers of 1024; a bare number is bytes. Anything else, and sizes that are
// not positive, are kInvalidArgument.
Result<int64_t> ParseByteSize(const std::string& text);
// "512 B", "64.0 MiB", "1.50 GiB".
std::string FormatBytes(int64_t bytes);

struct MemoryBudget {
  int64_t bytes = 0;
  bool given = false;  // a limit the user gave (else: what the process can get)
  std::string source;  // "the memory limit", "MemAvailable", "the cgroup's memory.max", ...
  // "64.0 MiB (the memory limit)"
  std::string ToString() const;
};

// `limit` > 0: that limit; otherwise what this process can get on the host now.
MemoryBudget HostBudget(int64_t limit);

struct PlanMemory {
  int64_t arena = 0;
  int64_t constants = 0;
  int64_t variables = 0;
  int64_t feeds = 0;             // copies of the feeds (a device's; the host binds the caller's)
  int64_t outputs = 0;           // the fetches, copied out after the run
  int64_t workspace = 0;         // kept by the steps (prepacked weights, scratchpads) or libraries
  int64_t simulated_device = 0;  // the simulated CUDA device's allocations: host memory too
  int64_t resident = 0;  // of the above, what is allocated already (constants, stored variables)
  struct Buffer {
    std::string what;  // "'conv1:0' (Conv) f32[8,64,112,112]", "variable 'w' f32[512,512]"
    int64_t bytes = 0;
  };
  std::vector<Buffer> largest;  // the largest buffers of the plan, largest first (at most 5)

  int64_t peak() const {
    return arena + constants + variables + feeds + outputs + workspace + simulated_device;
  }
  // "1.20 GiB (arena 1.00 GiB, constants 100.0 MiB, ...)": the parts that are not zero.
  std::string ToString() const;
};

// The memory of `exe`'s plan on the host. Each variable counts once (its value: an assign
// replaces it), as resident when `stored` (may be null) holds it already.
PlanMemory MeasurePlan(const Executable& exe, const VariableStore* stored);
// The memory of a CUDA plan on its device: the device arena and the device twins of the buffers
// in `on_device` that are not arena buffers (constants, feeds, variables). A variable buffer in
// `shared_variables` (buffer -> variable) is the variable's one device copy, shared by every plan
// on the device, and resident when `resident` says so; any other is a twin of the plan's own.
PlanMemory MeasureDevicePlan(const Executable& exe, const std::set<int>& on_device,
                             const std::map<int, std::string>& shared_variables,
                             const std::function<bool(const std::string&)>& resident);

// OK when `memory` fits `budget`; otherwise kResourceExhausted naming the peak, the budget and the
// largest buffers. `where` says what would not fit ("the plan", "the plan's device memory").
Status CheckFits(const PlanMemory& memory, const MemoryBudget& budget, const std::string& where);

}  // namespace kiln
