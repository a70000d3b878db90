// kiln dot: draws a model as a Graphviz graph (.dot text, or .svg rendered by Graphviz's `dot`);
// the branches and bodies of control-flow ops are clusters beside the op.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <sstream>

#include "ir/file_util.h"
#include "tools/command.h"

extern char** environ;

namespace kiln::cli {
namespace {

std::string Quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

// The nodes and edges of `graph`, names prefixed with `prefix` (a body's: its op's node and
// attribute), each control-flow body a cluster of its own beside the node that runs it.
void EmitGraph(std::ostringstream& os, const Graph& graph, const std::string& prefix,
               const std::string& indent) {
  for (const Node& n : graph.nodes()) {
    std::string label = n.name + "\n" + n.op;
    const char* color = n.op == "Placeholder"             ? "#d7ecff"
                        : n.op == "Variable"              ? "#fff1c7"
                        : n.op == "Constant"              ? "#eeeeee"
                        : n.op == "If" || n.op == "While" ? "#f2e3ff"
                                                          : "#f4f4f4";
    os << indent << Quote(prefix + n.name) << " [label=" << Quote(label) << ", fillcolor=\""
       << color << "\"];\n";
    for (const auto& [attr, value] : n.attrs.items()) {
      if (value.type() != AttrType::kGraph) continue;
      const std::shared_ptr<const Graph>& body = value.get<std::shared_ptr<const Graph>>();
      if (!body) continue;
      const std::string inner = prefix + n.name + "/" + attr + "/";
      os << indent << "subgraph " << Quote("cluster_" + inner) << " {\n"
         << indent << "  label=" << Quote(n.name + ": " + attr)
         << "; style=dashed; color=\"#9a7fc0\"; fontname=\"Helvetica\"; fontsize=9;\n";
      EmitGraph(os, *body, inner, indent + "  ");
      os << indent << "}\n";
      for (const GraphOutput& out : body->outputs())
        os << indent << Quote(inner + out.tensor.node) << " -> " << Quote(prefix + n.name)
           << " [style=dotted, color=\"#9a7fc0\"];\n";
    }
  }
  for (const Node& n : graph.nodes()) {
    for (const TensorRef& in : n.inputs) {
      Result<TensorType> t = graph.TypeOf(in);
      os << indent << Quote(prefix + in.node) << " -> " << Quote(prefix + n.name)
         << " [label=" << Quote(t.ok() ? t->ToString() : "") << "];\n";
    }
    for (const std::string& c : n.control_inputs)
      os << indent << Quote(prefix + c) << " -> " << Quote(prefix + n.name) << " [style=dashed];\n";
  }
}

std::string GraphToDot(const Graph& graph) {
  std::ostringstream os;
  os << "digraph kiln {\n  rankdir=TB;\n  node [shape=box, style=\"rounded,filled\", "
        "fillcolor=\"#f4f4f4\", "
        "fontname=\"Helvetica\", fontsize=10];\n  edge [fontname=\"Helvetica\", fontsize=8];\n";
  EmitGraph(os, graph, "", "  ");
  for (const GraphOutput& out : graph.outputs()) {
    os << "  " << Quote("output:" + out.name) << " [label=" << Quote(out.name)
       << ", shape=oval, fillcolor=\"#d9f2d9\"];\n";
    os << "  " << Quote(out.tensor.node) << " -> " << Quote("output:" + out.name) << ";\n";
  }
  os << "}\n";
  return os.str();
}

// Runs `dot -Tsvg in -o out`; fails clearly when Graphviz is missing or fails.
Status RenderSvg(const std::string& dot_path, const std::string& svg_path) {
  std::vector<std::string> argv_s = {"dot", "-Tsvg", dot_path, "-o", svg_path};
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid;
  if (posix_spawnp(&pid, "dot", nullptr, nullptr, argv.data(), environ) != 0)
    return MakeError(
        ErrorCode::kNotFound,
        "Graphviz 'dot' was not found; install graphviz, or write a .dot file instead");
  int status = 0;
  if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return MakeError(ErrorCode::kInternal, "Graphviz 'dot' failed to render ", svg_path);
  return OkStatus();
}

}  // namespace

int RunDot(const Command& cmd, const std::vector<std::string>& args) {
  Flags flags;
  flags.Option("out").Alias("-o", "out").Positional(1, 1);
  if (int code = ParseOrExit(cmd, flags, args); code >= 0) return code;
  if (!flags.Has("out")) return UsageError(cmd, "missing -o FILE.svg|FILE.dot");
  std::string out = flags.Get("out");
  bool svg = EndsWith(out, ".svg");
  if (!svg && !EndsWith(out, ".dot"))
    return UsageError(cmd, "the output must end with .svg or .dot");
  Result<Graph> graph = LoadModel(flags.positional()[0]);
  if (!graph.ok()) return Fail(cmd, graph.error());
  std::string dot = GraphToDot(*graph);
  if (!svg) {
    if (Status s = WriteFileAtomically(out, dot); !s.ok()) return Fail(cmd, s.error());
  } else {
    std::string tmp = out + ".dot.tmp." + std::to_string(::getpid());
    if (Status s = WriteFileAtomically(tmp, dot); !s.ok()) return Fail(cmd, s.error());
    Status s = RenderSvg(tmp, out);
    ::unlink(tmp.c_str());
    if (!s.ok()) return Fail(cmd, s.error());
  }
  std::printf("wrote %s\n", out.c_str());
  return 0;
}

}  // namespace kiln::cli
