// Time per step of a loaded Program, for finding where a plan spends its time: on when the
// environment variable KILN_PROFILE is set (to anything but "0") as the Program loads. Each run
// adds every step's wall time; when the Program is destroyed the totals go to stderr, grouped by
// what the step runs (a kernel, a library routine, an op on its reference kernel), largest first,
// as milliseconds per run.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "runtime/executable.h"

namespace kiln::cpu {

class StepProfile {
 public:
  // Null unless KILN_PROFILE asks for a profile.
  static std::unique_ptr<StepProfile> FromEnvironment(const Executable& exe);
  ~StepProfile();

  void BeginRun() { ++runs_; }
  void Add(size_t step, std::chrono::steady_clock::duration elapsed) {
    seconds_[step] += std::chrono::duration<double>(elapsed).count();
  }
  // The table printed at destruction.
  std::string Report() const;

 private:
  explicit StepProfile(const Executable& exe);

  std::vector<std::string> labels_;  // by step
  std::vector<double> seconds_;      // by step, summed over runs
  int64_t runs_ = 0;
};

}  // namespace kiln::cpu
