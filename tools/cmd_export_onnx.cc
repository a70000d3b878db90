// kiln export-onnx: an inference graph as an ONNX model (ir/onnx/export.h), its variables as
// initializers holding their values from a checkpoint (or their initializers' values).
#include <cstdio>

#include "ir/onnx/export.h"
#include "ir/op_registry.h"
#include "ir/verifier.h"
#include "passes/freeze.h"
#include "runtime/checkpoint.h"
#include "runtime/variable_init.h"
#include "tools/command.h"

namespace kiln::cli {
namespace {

// The value of every Variable: the checkpoint's, or without one the variable's initial value.
Result<std::map<std::string, Tensor>> VariableValues(const Graph& graph, const Flags& flags) {
  if (flags.Has("checkpoint")) return ReadCheckpoint(flags.Get("checkpoint"));
  std::map<std::string, Tensor> values;
  const OpDef* variable = OpRegistry::Global().Find("Variable");
  for (const Node& node : graph.nodes()) {
    if (node.op != "Variable") continue;
    Result<Tensor> value = MakeInitialValue(variable->WithDefaults(node.attrs));
    if (!value.ok()) return value.error().WithContext(node.Describe());
    values.emplace(node.name, std::move(*value));
  }
  return values;
}

}  // namespace

int RunExportOnnx(const Command& cmd, const std::vector<std::string>& args) {
  Flags flags;
  flags.Option("checkpoint").Repeated("fetch").Option("out").Alias("-o", "out").Positional(1, 1);
  if (int code = ParseOrExit(cmd, flags, args); code >= 0) return code;
  if (!flags.Has("out")) return UsageError(cmd, "missing -o OUT.onnx");
  Result<Graph> graph = LoadModel(flags.positional()[0]);
  if (!graph.ok()) return Fail(cmd, graph.error());
  Result<Graph> inference = ForInference(*graph);
  if (!inference.ok()) return Fail(cmd, inference.error());
  if (Status s = Verify(*inference); !s.ok()) return Fail(cmd, s.error());
  OnnxExportOptions options{.fetches = flags.GetAll("fetch")};
  Result<std::map<std::string, Tensor>> values = VariableValues(*inference, flags);
  if (!values.ok()) return Fail(cmd, values.error());
  options.variable_values = std::move(*values);
  if (Status s = ExportOnnx(*inference, flags.Get("out"), options); !s.ok())
    return Fail(cmd, s.error());
  std::printf("wrote %s (ONNX opset %lld)\n", flags.Get("out").c_str(),
              static_cast<long long>(kOnnxExportOpset));
  return 0;
}

}  // namespace kiln::cli
