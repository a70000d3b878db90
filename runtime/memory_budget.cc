#include "runtime/memory_budget.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace kiln {
namespace {

// A cgroup limit at or above this means "no limit" (v1 writes a huge page-aligned number).
constexpr int64_t kNoLimit = int64_t{1} << 60;

std::optional<int64_t> ReadNumber(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return std::nullopt;
  try {
    size_t used = 0;
    long long v = std::stoll(text, &used);
    if (used != text.size() || v < 0) return std::nullopt;
    return static_cast<int64_t>(v);
  } catch (...) {
    return std::nullopt;
  }
}

// The value of `key` in a "key value" file (memory.stat), 0 when absent.
int64_t ReadStat(const std::string& path, const std::string& key) {
  std::ifstream in(path);
  std::string k;
  long long v = 0;
  while (in >> k >> v)
    if (k == key) return v;
  return 0;
}

// MemAvailable of /proc/meminfo in bytes.
std::optional<int64_t> MemAvailable() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    long long kb = 0;
    if (std::sscanf(line.c_str(), "MemAvailable: %lld kB", &kb) == 1) return kb * 1024;
  }
  return std::nullopt;
}

// The directories that may hold this process's cgroup files for `controller` ("" for v2): the
// cgroup's own path under the mount and each of its ancestors (a limit on any of them applies),
// then the mount's root (inside a container the mount often shows the container's cgroup there).
std::vector<std::string> CgroupDirectories(const std::string& controller) {
  const std::string mount = controller.empty() ? "/sys/fs/cgroup" : "/sys/fs/cgroup/" + controller;
  std::vector<std::string> dirs;
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    // "0::/path" (v2) or "4:memory:/path" (v1)
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    const std::string path = line.substr(b + 1);
    bool match = controller.empty() ? controllers.empty() : false;
    std::stringstream list(controllers);
    for (std::string c; std::getline(list, c, ',');) match |= c == controller;
    if (!match) continue;
    for (std::string p = path; p.size() > 1; p = p.substr(0, p.rfind('/')))
      dirs.push_back(mount + p);
  }
  dirs.push_back(mount);
  return dirs;
}

// The least room left under the cgroup memory limits that apply to this process, and which file
// said so.
std::optional<std::pair<int64_t, std::string>> CgroupRoom() {
  std::optional<std::pair<int64_t, std::string>> least;
  auto consider = [&](const std::string& dir, const char* limit_file, const char* usage_file,
                      const char* reclaimable_key) {
    std::optional<int64_t> limit = ReadNumber(dir + "/" + limit_file);
    std::optional<int64_t> usage = ReadNumber(dir + "/" + usage_file);
    if (!limit || !usage || *limit >= kNoLimit) return;
    const int64_t reclaimable = ReadStat(dir + "/memory.stat", reclaimable_key);
    const int64_t room = std::max<int64_t>(0, *limit - *usage + reclaimable);
    if (!least || room < least->first)
      least = std::make_pair(room, std::string("the cgroup's ") + limit_file);
  };
  for (const std::string& dir : CgroupDirectories(""))
    consider(dir, "memory.max", "memory.current", "inactive_file");
  for (const std::string& dir : CgroupDirectories("memory"))
    consider(dir, "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file");
  return least;
}

// The variable each kVariable buffer is bound to: a variable_read's output is its node's variable,
// an assign's output the variable it assigns (its input 0's node); any other, its tensor's node.
std::map<int, std::string> VariableNames(const Executable& exe) {
  std::map<int, std::string> names;
  for (const Step& step : exe.steps) {
    if (step.kind != Step::Kind::kLibrary || step.outputs.size() != 1) continue;
    if (step.callee == "variable_read") names[step.outputs[0]] = step.node.name;
    if (step.callee == "assign" && !step.node.inputs.empty())
      names[step.outputs[0]] = step.node.inputs[0].node;
  }
  for (size_t i = 0; i < exe.buffers.size(); ++i) {
    const BufferDesc& b = exe.buffers[i];
    if (b.kind == BufferDesc::Kind::kVariable && !names.count(static_cast<int>(i)))
      names[static_cast<int>(i)] = b.tensor.substr(0, b.tensor.rfind(':'));
  }
  return names;
}

// The largest of the buffers `counts` accepts, largest first, at most five: each tensor once (a
// blocked twin or a shared constant is the same data), each variable once (as its name).
std::vector<PlanMemory::Buffer> LargestBuffers(const Executable& exe,
                                               const std::map<int, std::string>& variables,
                                               const std::function<bool(int)>& counts) {
  std::map<std::string, PlanMemory::Buffer> by_key;
  for (size_t i = 0; i < exe.buffers.size(); ++i) {
    if (!counts(static_cast<int>(i))) continue;
    const BufferDesc& b = exe.buffers[i];
    std::string key = b.tensor, what;
    if (b.kind == BufferDesc::Kind::kVariable) {
      key = variables.at(static_cast<int>(i));
      what = "variable '" + key + "'";
      key = "variable " + key;
    } else {
      what = (b.kind == BufferDesc::Kind::kConstant ? "constant '" : "'") + b.tensor + "'";
      if (!b.op.empty()) what += " (" + b.op + ")";
    }
    PlanMemory::Buffer& entry = by_key[key];
    if (b.bytes() > entry.bytes)
      entry = PlanMemory::Buffer{what + " " + b.type.ToString(), b.bytes()};
  }
  std::vector<PlanMemory::Buffer> largest;
  for (auto& [key, buffer] : by_key) largest.push_back(std::move(buffer));
  std::stable_sort(largest.begin(), largest.end(),
                   [](const auto& a, const auto& b) { return a.bytes > b.bytes; });
  if (largest.size() > 5) largest.resize(5);
  return largest;
}

}  // namespace

Result<int64_t> ParseByteSize(const std::string& text) {
  auto invalid = [&]() {
    return MakeError(ErrorCode::kInvalidArgument, "'", text,
                     "' is not a size: give bytes, or a number with K, M, G or T (e.g. 512M, "
                     "1.5G)");
  };
  size_t end = 0;
  while (end < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.'))
    ++end;
  if (end == 0 || std::count(text.begin(), text.begin() + end, '.') > 1) return invalid();
  const double number = std::strtod(text.substr(0, end).c_str(), nullptr);
  std::string unit = text.substr(end);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  static const std::map<std::string, int> kShift = {{"", 0},   {"B", 0},  {"K", 10},
                                                    {"M", 20}, {"G", 30}, {"T", 40}};
  std::string prefix = unit;  // "M" of "M", "MB" and "MIB"
  if (unit.size() == 3 && unit.substr(1) == "IB") prefix = unit.substr(0, 1);
  if (unit.size() == 2 && unit[1] == 'B') prefix = unit.substr(0, 1);
  auto shift = kShift.find(prefix);
  if (shift == kShift.end() || (prefix == "B" && unit.size() > 1)) return invalid();
  const double bytes = std::ldexp(number, shift->second);
  if (!(bytes >= 1) || bytes >= 9.2e18)
    return MakeError(ErrorCode::kInvalidArgument, "'", text,
                     "': a size must be at least 1 byte and below 8 EiB");
  return static_cast<int64_t>(bytes);
}

std::string FormatBytes(int64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  // Up a unit where the printed digits would round to 1024 ("1024.0 KiB" is "1.00 MiB").
  while (std::fabs(v) >= 1023.95 && u < 5) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : v < 10 ? "%.2f %s" : "%.1f %s", v, kUnits[u]);
  return buf;
}

std::string MemoryBudget::ToString() const { return FormatBytes(bytes) + " (" + source + ")"; }

MemoryBudget HostBudget(int64_t limit) {
  if (limit > 0) return MemoryBudget{limit, true, "the memory limit"};
  MemoryBudget budget{std::numeric_limits<int64_t>::max(), false, "no limit known"};
  if (std::optional<int64_t> available = MemAvailable())
    budget = MemoryBudget{*available, false, "the host's MemAvailable"};
  if (auto room = CgroupRoom(); room && room->first < budget.bytes)
    budget = MemoryBudget{room->first, false, room->second};
  return budget;
}

std::string PlanMemory::ToString() const {
  std::string parts;
  auto add = [&](const char* name, int64_t bytes) {
    if (bytes) parts += (parts.empty() ? "" : ", ") + std::string(name) + " " + FormatBytes(bytes);
  };
  add("arena", arena);
  add("constants", constants);
  add("variables", variables);
  add("feeds", feeds);
  add("outputs", outputs);
  add("workspace", workspace);
  add("simulated device", simulated_device);
  return FormatBytes(peak()) + (parts.empty() ? "" : " (" + parts + ")");
}

PlanMemory MeasurePlan(const Executable& exe, const VariableStore* stored) {
  PlanMemory m;
  m.arena = exe.arena_bytes;
  for (const Tensor& c : exe.constants) m.constants += c.byte_size();
  m.resident = m.constants;
  const std::map<int, std::string> variables = VariableNames(exe);
  std::set<std::string> counted;
  for (const auto& [id, name] : variables)
    if (counted.insert(name).second) {  // a variable and its assigned value: one value at a time
      m.variables += exe.buffers[id].bytes();
      if (stored && stored->Has(name) && !stored->HolderOf(name))
        m.resident += exe.buffers[id].bytes();
    }
  for (int id : exe.fetches) m.outputs += exe.buffers[id].bytes();
  m.largest = LargestBuffers(exe, variables, [&](int id) {
    return exe.buffers[id].kind != BufferDesc::Kind::kFeed;  // the caller's
  });
  return m;
}

PlanMemory MeasureDevicePlan(const Executable& exe, const std::set<int>& on_device,
                             const std::map<int, std::string>& shared_variables,
                             const std::function<bool(const std::string&)>& resident) {
  PlanMemory m;
  m.arena = exe.arena_bytes;
  std::set<std::string> shared;
  for (int id : on_device) {
    const BufferDesc& b = exe.buffers[id];
    switch (b.kind) {
      case BufferDesc::Kind::kArena:
        break;
      case BufferDesc::Kind::kConstant:
        m.constants += b.bytes();
        break;
      case BufferDesc::Kind::kFeed:
        m.feeds += b.bytes();
        break;
      case BufferDesc::Kind::kVariable:
        if (auto name = shared_variables.find(id); name != shared_variables.end()) {
          if (!shared.insert(name->second).second) break;  // one device copy per variable
          if (resident(name->second)) m.resident += b.bytes();
        }
        m.variables += b.bytes();  // a shared copy, or a twin of the plan's own
        break;
    }
  }
  m.largest = LargestBuffers(exe, VariableNames(exe), [&](int id) {
    return exe.buffers[id].kind == BufferDesc::Kind::kArena || on_device.count(id) > 0;
  });
  return m;
}

Status CheckFits(const PlanMemory& memory, const MemoryBudget& budget, const std::string& where) {
  const int64_t need = budget.given ? memory.peak() : memory.peak() - memory.resident;
  if (need <= budget.bytes) return OkStatus();
  std::string largest;
  for (const PlanMemory::Buffer& b : memory.largest)
    largest += (largest.empty() ? "" : ", ") + b.what + " " + FormatBytes(b.bytes);
  return MakeError(
      ErrorCode::kResourceExhausted, where, " needs ", memory.ToString(),
      need == memory.peak() ? "" : ", " + FormatBytes(need) + " of it not yet allocated",
      ", over the memory budget of ", budget.ToString(),
      largest.empty() ? "" : "; largest buffers: " + largest);
}

}  // namespace kiln
