#include "runtime/cpu/step_profile.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>

namespace kiln::cpu {

std::unique_ptr<StepProfile> StepProfile::FromEnvironment(const Executable& exe) {
  const char* env = std::getenv("KILN_PROFILE");
  if (!env || !*env || std::strcmp(env, "0") == 0) return nullptr;
  return std::unique_ptr<StepProfile>(new StepProfile(exe));
}

StepProfile::StepProfile(const Executable& exe) : seconds_(exe.steps.size(), 0.0) {
  for (const Step& step : exe.steps) {
    const std::string type =
        step.outputs.empty()
            ? ""
            : " " + std::string(DTypeName(exe.buffers[step.outputs[0]].type.dtype));
    switch (step.kind) {
      case Step::Kind::kKernel:
        labels_.push_back("kernel (" + step.node.op + "...)" + type);
        break;
      case Step::Kind::kLibrary:
        labels_.push_back("library " + step.callee + type);
        break;
      case Step::Kind::kReference:
        labels_.push_back("reference " + step.node.op + type);
        break;
    }
  }
}

StepProfile::~StepProfile() {
  if (runs_ > 0) std::fputs(Report().c_str(), stderr);
}

std::string StepProfile::Report() const {
  struct Row {
    double seconds = 0;
    int steps = 0;
  };
  std::map<std::string, Row> rows;
  double total = 0;
  for (size_t i = 0; i < labels_.size(); ++i) {
    rows[labels_[i]].seconds += seconds_[i];
    ++rows[labels_[i]].steps;
    total += seconds_[i];
  }
  std::vector<std::pair<std::string, Row>> sorted(rows.begin(), rows.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
  const double runs = static_cast<double>(std::max<int64_t>(runs_, 1));
  std::string out = "KILN_PROFILE: " + std::to_string(labels_.size()) + " steps, " +
                    std::to_string(runs_) + " runs, " + std::to_string(total * 1e3 / runs) +
                    " ms per run in steps\n";
  char line[256];
  for (const auto& [label, row] : sorted) {
    std::snprintf(line, sizeof line, "  %9.3f ms %5.1f%%  x%-4d %s\n", row.seconds * 1e3 / runs,
                  total > 0 ? 100 * row.seconds / total : 0.0, row.steps, label.c_str());
    out += line;
  }
  return out;
}

}  // namespace kiln::cpu
