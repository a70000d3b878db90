#include "compiler/aot.h"

#include <set>

#include "compiler/codegen/emit_mlir.h"
#include "compiler/cubin.h"
#include "compiler/cuda_compiler.h"
#include "compiler/link.h"
#include "compiler/mlir/object.h"
#include "compiler/plan_executable.h"
#include "runtime/cpu/kernel_signature.h"
#include "runtime/module/cpu_features.h"
#include "runtime/session.h"

namespace kiln::compiler {
namespace {

// The "+feature" entries of LLVM's feature string that the runtime knows how to check.
std::vector<std::string> RequiredFeatures(const std::string& llvm_features) {
  std::set<std::string> enabled;
  size_t start = 0;
  while (start < llvm_features.size()) {
    size_t comma = llvm_features.find(',', start);
    std::string f = llvm_features.substr(start, comma - start);
    if (f.size() > 1 && f[0] == '+') enabled.insert(f.substr(1));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::vector<std::string> required;
  for (const std::string& known : KnownCpuFeatures())
    if (enabled.count(known)) required.push_back(known);
  return required;
}

// The zero-filled feeds of every placeholder whose shape is known or given.
Result<FeedList> PlaceholderFeeds(const Graph& graph, const AotOptions& options) {
  std::map<std::string, Shape> given = options.input_shapes;
  FeedList feeds;
  for (const Node& node : graph.nodes()) {
    if (node.op != "Placeholder") continue;
    const TensorType& declared = node.output_types[0];
    Shape shape = declared.shape;
    if (auto it = given.find(node.name); it != given.end()) {
      bool fits = it->second.rank() == shape.rank();
      for (int d = 0; fits && d < shape.rank(); ++d)
        fits = shape[d] < 0 || shape[d] == it->second[d];
      if (!fits)
        return MakeError(ErrorCode::kInvalidArgument, "input '", node.name, "' is declared ",
                         declared.ToString(), "; the shape given, ", it->second.ToString(),
                         ", does not fit it");
      shape = it->second;
      given.erase(it);
    }
    if (!shape.IsFullyKnown()) continue;  // an error below if the plan needs it
    KILN_ASSIGN_OR_RETURN(Tensor zeros, Tensor::Create(declared.dtype, shape));
    feeds.emplace_back(node.name, std::move(zeros));
  }
  if (!given.empty())
    return MakeError(ErrorCode::kInvalidArgument, "a shape is given for '", given.begin()->first,
                     "', which is not a placeholder of the model");
  return feeds;
}

// The pipeline of the session's JIT for `target`, without code generation.
Result<PlannedExecutable> PlanForTarget(const RunPlan& plan, const std::string& target, bool tf32) {
  if (target == "cuda") {
    KILN_ASSIGN_OR_RETURN(CudaPlan cuda, PlanForCuda(plan, tf32));
    return std::move(cuda.planned);
  }
  return PlanExecutable(plan, CpuPlanOptions());
}

}  // namespace

Result<ModuleFile> CompileModule(const Graph& graph, const AotOptions& options) {
  std::vector<std::string> fetches = options.fetches;
  if (fetches.empty() && options.targets.empty())
    for (const GraphOutput& out : graph.outputs()) fetches.push_back(out.name);
  if (fetches.empty() && options.targets.empty())
    return MakeError(ErrorCode::kInvalidArgument,
                     "the model declares no outputs; name what the module computes (fetches)");

  Session session(graph, SessionOptions{.backend = "reference", .precision = options.precision});
  KILN_RETURN_IF_ERROR(session.status());
  KILN_ASSIGN_OR_RETURN(FeedList feeds, PlaceholderFeeds(graph, options));
  std::vector<TensorName> fetch_names(fetches.begin(), fetches.end());
  std::vector<TensorName> target_names(options.targets.begin(), options.targets.end());
  Result<RunPlan> planned = session.Plan(feeds, fetch_names, target_names);
  if (!planned.ok()) {
    Error e = planned.error();
    if (e.message().find("missing feed for placeholder") != std::string::npos)
      return e.WithContext("a module's input shapes must all be known (give them as NAME=SHAPE)");
    return e;
  }
  RunPlan plan = std::move(*planned);
  // Keep only the feeds the plan reads: they are the module's inputs.
  std::set<TensorRef> read;
  for (const Node* node : plan.nodes)
    for (const TensorRef& in : node->inputs) read.insert(in);
  for (const TensorRef& f : plan.fetches) read.insert(f);
  for (auto it = plan.feeds.begin(); it != plan.feeds.end();)
    it = read.count(it->first) ? std::next(it) : plan.feeds.erase(it);

  ModuleFile module;
  module.source = options.source;
  module.precision = PrecisionName(options.precision.compute);
  module.targets = options.targets;
  // Variables: their current values (initializers, or the checkpoint's), unless left out.
  if (!options.variables && !options.checkpoint.empty())
    return MakeError(ErrorCode::kInvalidArgument,
                     "a module without variables cannot take a checkpoint's values");
  if (!options.checkpoint.empty())
    KILN_RETURN_IF_ERROR(session.RestoreCheckpoint(options.checkpoint));
  if (options.variables) {
    KILN_RETURN_IF_ERROR(session.InitializeVariables());
    KILN_RETURN_IF_ERROR(session.variables().MaterializeAll());
    for (const Node* node : plan.nodes)
      if (node->op == "Variable")
        if (const Tensor* value = session.variables().Find(node->name))
          module.variables[node->name] = *value;
  }

  if (options.target != "cpu" && options.target != "cuda")
    return MakeError(ErrorCode::kInvalidArgument, "unknown target '", options.target,
                     "' (cpu, cuda)");
  module.target = options.target;
  KILN_ASSIGN_OR_RETURN(PlannedExecutable exe,
                        PlanForTarget(plan, options.target, options.precision.tf32));
  module.executable = std::move(exe.lowered.executable);
  if (!exe.lowered.kernels.empty()) {
    std::string host_code;
    if (options.target == "cuda") {
      GpuLoweringOptions gpu_options;
      gpu_options.sms.assign(std::begin(kCudaArchitectures), std::end(kCudaArchitectures));
      KILN_ASSIGN_OR_RETURN(GpuKernels gpu, GenerateGpuKernels(exe.lowered.kernels, gpu_options));
      module.executable.device_kernels = std::move(gpu.kernels);
      for (auto& [sm, ptx] : gpu.ptx) {
        KILN_ASSIGN_OR_RETURN(std::string cubin, AssembleCubin(ptx, sm));
        module.device_code[sm] = ModuleDeviceCode{std::move(ptx), std::move(cubin)};
      }
      host_code = std::move(gpu.host_translation);
    } else {
      KILN_ASSIGN_OR_RETURN(
          host_code, EmitKernelModule(exe.lowered.kernels,
                                      {.host_vectors = true,
                                       .markers = cpu::KernelStepSignatures(module.executable)}));
    }
    KILN_ASSIGN_OR_RETURN(HostObject object,
                          CompileHostObject(host_code, JitOptions{.name = "module"}));
    KILN_ASSIGN_OR_RETURN(module.kernels, LinkSharedObject(object.bytes));
    module.cpu = object.cpu;
    module.cpu_features = RequiredFeatures(object.features);
  }
  for (const TensorRef& feed : module.executable.feeds) {
    const Tensor& value = plan.feeds.at(feed);
    module.inputs.push_back(
        {feed.port == 0 ? feed.node : feed.ToString(), TensorType{value.dtype(), value.shape()}});
  }
  for (size_t i = 0; i < fetches.size(); ++i)
    module.outputs.push_back(
        {fetches[i], module.executable.buffers[module.executable.fetches[i]].type});
  return module;
}

}  // namespace kiln::compiler
