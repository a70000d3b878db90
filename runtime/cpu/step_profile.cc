#include "runtime/cpu/step_profile.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>

namespace kiln::cpu {

std::unique_ptr<StepProfile> StepProfile::FromEnvironment(const Executable& exe) {
  const char* env = std::getenv("KILN_PROFILE");
  if (!env || !*env || std::strcmp(env, "0") == 0) return nullptr;
  return std::unique_ptr<StepProfile>(new StepProfile(exe, std::strcmp(env, "steps") == 0));
}

namespace {

// 2 m n k per product for a gemm step, else 0.
double GemmFlops(const Step& step) {
  if (step.kind != Step::Kind::kLibrary || step.callee != "gemm") return 0;
  double flops = 2;
  for (const char* key : {"m", "n", "k", "batch"}) {
    Result<int64_t> v = step.attrs.GetInt(key);
    flops *= v.ok() ? static_cast<double>(*v) : 0.0;
  }
  return flops;
}

// The bytes of the step's distinct operands.
double OperandBytes(const Step& step, const Executable& exe) {
  std::set<int> ids(step.inputs.begin(), step.inputs.end());
  ids.insert(step.outputs.begin(), step.outputs.end());
  double bytes = 0;
  for (int id : ids) bytes += static_cast<double>(exe.buffers[id].bytes());
  return bytes;
}

}  // namespace

StepProfile::StepProfile(const Executable& exe, bool each_step) : seconds_(exe.steps.size(), 0.0) {
  for (const Step& step : exe.steps) {
    const std::string type =
        step.outputs.empty()
            ? ""
            : " " + std::string(DTypeName(exe.buffers[step.outputs[0]].type.dtype));
    const std::string where = step.on_device ? "device " : "";
    const bool copy = step.callee == "to_device" || step.callee == "to_host";
    switch (step.kind) {
      case Step::Kind::kKernel:
        labels_.push_back(where + "kernel (" + step.node.op + "...)" + type);
        break;
      case Step::Kind::kLibrary:
        labels_.push_back((copy ? "copy " : where + "library ") + step.callee + type);
        break;
      case Step::Kind::kReference:
        labels_.push_back(where + "reference " + step.node.op + type);
        break;
    }
    if (each_step) labels_.back() += " '" + step.node.name + "' #" + std::to_string(labels_.size());
    flops_.push_back(GemmFlops(step));
    bytes_.push_back(step.kind == Step::Kind::kKernel || copy ? OperandBytes(step, exe) : 0.0);
  }
  moved_.assign(bytes_.size(), 0.0);
}

StepProfile::~StepProfile() {
  if (runs_ > 0) std::fputs(Report().c_str(), stderr);
}

std::string StepProfile::Report() const {
  struct Row {
    double seconds = 0, flops = 0, bytes = 0;
    int steps = 0;
  };
  std::map<std::string, Row> rows;
  double total = 0;
  for (size_t i = 0; i < labels_.size(); ++i) {
    Row& row = rows[labels_[i]];
    row.seconds += seconds_[i];
    row.flops += flops_[i];
    row.bytes += moved_[i];  // over all counted runs
    ++row.steps;
    total += seconds_[i];
  }
  std::vector<std::pair<std::string, Row>> sorted(rows.begin(), rows.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
  const int64_t counted = runs_ > 1 ? runs_ - 1 : runs_;  // the first is left out
  const double runs = static_cast<double>(std::max<int64_t>(counted, 1));
  std::string out = "KILN_PROFILE: " + std::to_string(labels_.size()) + " steps, " +
                    std::to_string(counted) + " runs" + (runs_ > 1 ? " after the first" : "") +
                    ", " + std::to_string(total * 1e3 / runs) + " ms per run in steps\n";
  char line[512], rate[64];
  for (const auto& [label, row] : sorted) {
    const double per_run = row.seconds / runs;  // seconds
    rate[0] = '\0';
    if (per_run > 0 && row.flops > 0)
      std::snprintf(rate, sizeof rate, "%.2f TFLOP/s", row.flops / per_run / 1e12);
    else if (row.seconds > 0 && row.bytes > 0)
      std::snprintf(rate, sizeof rate, "%.1f GB/s", row.bytes / row.seconds / 1e9);
    std::snprintf(line, sizeof line, "  %9.3f ms %5.1f%%  x%-4d %14s  %s\n", per_run * 1e3,
                  total > 0 ? 100 * row.seconds / total : 0.0, row.steps, rate, label.c_str());
    out += line;
  }
  return out;
}

}  // namespace kiln::cpu
