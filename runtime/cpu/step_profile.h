// Time per step of a loaded Program (or CudaProgram), for finding where a plan spends its time: on
// when the environment variable KILN_PROFILE is set (to anything but "0") as the program loads.
// Each run adds every step's time (wall time on the host; device time, from CUDA events, for a
// CUDA plan's device steps); when the program is destroyed the totals go to stderr, grouped by
// what the step runs (a kernel, a library routine, an op on its reference kernel, a copy between
// host and device; "device " marks device steps), largest first, as milliseconds per run, with the
// rate each group achieved: TFLOP/s for gemm (2 m n k per matrix product), GB/s for kernels and
// copies (every distinct operand's bytes, read or written once; a copy skipped because the device
// already held the value moves none). The first run (loading, lazy initialization, first touches)
// is left out when there are others.
// KILN_TRACE=FILE (alone or with KILN_PROFILE) also writes a Chrome trace (chrome://tracing and
// Perfetto read it) to FILE when the program is destroyed: one complete event ("ph": "X") per step
// per run, every run included, named as the table's groups, with the step's index, nodes, run,
// bytes and FLOPs as args; each plan a process row, its host steps on one thread row and its
// device steps (placed by their CUDA events relative to the run's first) on another; the file is
// rewritten as each program ends, holding every plan the process ran. The table is printed only
// with KILN_PROFILE. A device
// step's time runs from a CUDA event recorded before it is issued to one recorded after: copies
// include their staging through pinned host memory, and a step issued to an idle stream includes
// its launch latency. KILN_PROFILE=steps reports every step on a line of its own, named by its node
// and its position in the plan.
#pragma once

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/executable.h"

namespace kiln::cpu {

class StepProfile {
 public:
  // Null unless KILN_PROFILE asks for a profile.
  static std::unique_ptr<StepProfile> FromEnvironment(const Executable& exe);
  ~StepProfile();

  void BeginRun() {
    if (++runs_ == 2) {  // drop the first
      std::fill(seconds_.begin(), seconds_.end(), 0.0);
      std::fill(moved_.begin(), moved_.end(), 0.0);
    }
  }
  // `moved`: whether the step moved its bytes (false for a skipped upload). A host step ended
  // just now; a device step (`device_start` given) began at that point of the host's clock.
  void Add(size_t step, std::chrono::steady_clock::duration elapsed, bool moved = true,
           std::optional<std::chrono::steady_clock::time_point> device_start = std::nullopt) {
    seconds_[step] += std::chrono::duration<double>(elapsed).count();
    if (moved) moved_[step] += bytes_[step];
    if (!trace_path_.empty())
      events_.push_back({step, runs_,
                         device_start.value_or(std::chrono::steady_clock::now() - elapsed), elapsed,
                         device_start.has_value()});
  }
  // Groups step `step` under `label` instead (a kernel step the device runs as a library call).
  void Relabel(size_t step, std::string label) { labels_[step] = std::move(label); }
  // The table printed at destruction.
  std::string Report() const;
  // This program's trace events as process `pid`, timed from `origin`: JSON objects, each after
  // ",\n".
  std::string TraceEvents(int pid, std::chrono::steady_clock::time_point origin) const;

 private:
  struct Event {
    size_t step;
    int64_t run;
    std::chrono::steady_clock::time_point start;
    std::chrono::steady_clock::duration elapsed;
    bool device;
  };
  StepProfile(const Executable& exe, bool each_step);

  std::vector<std::string> labels_;  // by step
  std::vector<double> seconds_;      // by step, summed over runs
  std::vector<double> flops_;        // by step, per run (gemm)
  std::vector<double> bytes_;        // by step, per run (kernels and copies)
  std::vector<double> moved_;        // by step, summed over runs
  std::vector<std::string> nodes_;   // by step: the nodes it implements
  int64_t runs_ = 0;
  bool report_ = true;      // KILN_PROFILE: print the table
  std::string trace_path_;  // KILN_TRACE: where the trace goes ("": none)
  std::vector<Event> events_;
};

}  // namespace kiln::cpu
