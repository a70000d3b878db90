#include "runtime/executable.h"

#include <sstream>

namespace kiln {

const char* StepKindName(Step::Kind kind) {
  switch (kind) {
    case Step::Kind::kKernel:
      return "kernel";
    case Step::Kind::kLibrary:
      return "library";
    case Step::Kind::kReference:
      return "reference";
  }
  return "?";
}

int Executable::CountSteps(Step::Kind kind) const {
  int n = 0;
  for (const Step& s : steps) n += s.kind == kind;
  return n;
}

const DeviceKernel* Executable::FindDeviceKernel(const std::string& name) const {
  for (const DeviceKernel& k : device_kernels)
    if (k.name == name) return &k;
  return nullptr;
}

std::string Executable::ToString() const {
  std::ostringstream out;
  out << "arena " << arena_bytes << " bytes\n";
  for (size_t i = 0; i < buffers.size(); ++i) {
    const BufferDesc& b = buffers[i];
    out << "  %" << i << " " << b.type.ToString() << " ";
    switch (b.kind) {
      case BufferDesc::Kind::kArena:
        out << "arena@" << b.offset;
        break;
      case BufferDesc::Kind::kConstant:
        out << "constant#" << b.index;
        break;
      case BufferDesc::Kind::kFeed:
        out << "feed#" << b.index;
        break;
      case BufferDesc::Kind::kVariable:
        out << "variable";
        break;
    }
    if (!b.layout.empty()) out << " " << b.layout;
    out << "  " << b.tensor << "\n";
  }
  auto list = [&](const std::vector<int>& ids) {
    std::string s;
    for (int id : ids) s += (s.empty() ? "%" : ", %") + std::to_string(id);
    return s;
  };
  for (const Step& s : steps) {
    out << "  " << (s.on_device ? "device " : "") << StepKindName(s.kind) << " " << s.callee << "("
        << list(s.inputs) << ") -> (" << list(s.outputs) << ")";
    if (s.kind == Step::Kind::kKernel) out << " rows=" << s.rows;
    if (s.invariant) out << " invariant";
    if (!s.node.name.empty()) out << "  # " << s.node.name;
    out << "\n";
  }
  out << "  fetch (" << list(fetches) << ")\n";
  for (const DeviceKernel& k : device_kernels)
    for (const KernelLaunch& l : k.launches) {
      out << "  launch " << k.name << ": " << l.function << " grid " << l.grid[0] << "x"
          << l.grid[1] << "x" << l.grid[2] << " block " << l.block[0] << "x" << l.block[1] << "x"
          << l.block[2] << " (";
      for (size_t a = 0; a < l.args.size(); ++a) {
        out << (a ? ", " : "");
        if (l.args[a].operand < 0)
          out << l.args[a].value;
        else
          out << "#" << l.args[a].operand << Shape(l.args[a].dims).ToString();
      }
      out << ")\n";
    }
  return out.str();
}

}  // namespace kiln
