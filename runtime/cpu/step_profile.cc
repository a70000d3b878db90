#include "runtime/cpu/step_profile.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>

namespace kiln::cpu {

std::unique_ptr<StepProfile> StepProfile::FromEnvironment(const Executable& exe) {
  const char* env = std::getenv("KILN_PROFILE");
  const char* trace = std::getenv("KILN_TRACE");
  const bool report = env && *env && std::strcmp(env, "0") != 0;
  if (!report && !(trace && *trace)) return nullptr;
  std::unique_ptr<StepProfile> profile(
      new StepProfile(exe, report && std::strcmp(env, "steps") == 0));
  profile->report_ = report;
  if (trace) profile->trace_path_ = trace;
  return profile;
}

namespace {

// 2 m n k per product for a gemm step or an update that adds a product, else 0.
double GemmFlops(const Step& step) {
  if (step.kind != Step::Kind::kLibrary ||
      (step.callee != "gemm" && !(step.callee == "assign" && step.attrs.Has("product"))))
    return 0;
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
    nodes_.push_back(step.node.name);
    flops_.push_back(GemmFlops(step));
    bytes_.push_back(step.kind == Step::Kind::kKernel || copy ? OperandBytes(step, exe) : 0.0);
  }
  moved_.assign(bytes_.size(), 0.0);
}

namespace {

// `s` as a JSON string's contents.
std::string JsonEscaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char code[8];
      std::snprintf(code, sizeof code, "\\u%04x", static_cast<unsigned>(c));
      out += code;
    } else {
      out += c;
    }
  }
  return out;
}

// The trace of every traced program of this process: each program's events are added when it
// ends, and the file is rewritten then, so that it holds every plan that ran (a trace process
// row per plan), on one clock.
struct TraceSink {
  std::mutex mutex;
  std::string events;  // JSON objects, each after ",\n"
  int programs = 0;
  const std::chrono::steady_clock::time_point origin = std::chrono::steady_clock::now();
};

TraceSink& Sink() {
  static TraceSink* sink = new TraceSink();  // never destroyed: programs may end at exit
  return *sink;
}

}  // namespace

StepProfile::~StepProfile() {
  if (runs_ > 0 && report_) std::fputs(Report().c_str(), stderr);
  if (trace_path_.empty()) return;
  TraceSink& sink = Sink();
  std::lock_guard<std::mutex> lock(sink.mutex);
  sink.events += TraceEvents(++sink.programs, sink.origin);
  const std::string json =
      "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [" + sink.events.substr(1) + "\n]}\n";
  std::FILE* f = std::fopen(trace_path_.c_str(), "w");
  bool written = f && std::fwrite(json.data(), 1, json.size(), f) == json.size();
  if (f && std::fclose(f) != 0) written = false;
  if (!written)
    std::fprintf(stderr, "kiln: warning: the trace could not be written to %s\n",
                 trace_path_.c_str());
}

std::string StepProfile::TraceEvents(int pid, std::chrono::steady_clock::time_point origin) const {
  const std::string process = "\"pid\": " + std::to_string(pid);
  std::string out = ",\n  {\"name\": \"process_name\", \"ph\": \"M\", " + process +
                    ", \"args\": {\"name\": \"plan " + std::to_string(pid) + " (" +
                    std::to_string(labels_.size()) + " steps)\"}}";
  for (const char* row : {"host", "device"})
    out += ",\n  {\"name\": \"thread_name\", \"ph\": \"M\", " + process +
           ", \"tid\": " + (row[0] == 'h' ? "1" : "2") + ", \"args\": {\"name\": \"" + row + "\"}}";
  char numbers[256];
  for (const Event& e : events_) {
    const double ts = std::chrono::duration<double, std::micro>(e.start - origin).count();
    const double dur = std::chrono::duration<double, std::micro>(e.elapsed).count();
    std::snprintf(numbers, sizeof numbers,
                  "\"ts\": %.3f, \"dur\": %.3f, \"tid\": %d, \"args\": {\"step\": %zu, \"run\": "
                  "%lld, \"bytes\": %.0f, \"flops\": %.0f, ",
                  ts, dur, e.device ? 2 : 1, e.step, static_cast<long long>(e.run), bytes_[e.step],
                  flops_[e.step]);
    out += ",\n  {\"name\": \"" + JsonEscaped(labels_[e.step]) + "\", \"cat\": \"step\", " +
           "\"ph\": \"X\", " + process + ", " + numbers + "\"nodes\": \"" +
           JsonEscaped(nodes_[e.step]) + "\"}}";
  }
  return out;
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
