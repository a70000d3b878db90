#include "tools/inspect_plan.h"

#include <algorithm>
#include <cstdio>

#ifdef KILN_HAS_COMPILER
#include "compiler/codegen/emit_mlir.h"
#include "compiler/cuda_compiler.h"
#include "compiler/plan_executable.h"
#endif
#include "runtime/cpu/conv_step.h"
#include "runtime/cuda/graph_capture.h"
#include "runtime/memory_budget.h"
#include "runtime/session.h"
#include "tools/inspect_cost.h"

namespace kiln::cli {

#ifdef KILN_HAS_COMPILER
namespace {

// "images=64x1x8x8" -> ("images", [64, 1, 8, 8]).
Result<std::pair<std::string, Shape>> ParseShapeSpec(const std::string& spec) {
  size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0)
    return MakeError(ErrorCode::kInvalidArgument, "--input '", spec, "': expected NAME=SHAPE");
  std::optional<Shape> shape = ParseDims(spec.substr(eq + 1));
  if (!shape)
    return MakeError(ErrorCode::kInvalidArgument, "--input '", spec,
                     "': a shape is dims joined by 'x', like 64x1x8x8");
  return std::make_pair(spec.substr(0, eq), *shape);
}

int64_t Bytes(const TensorType& t) { return t.shape.NumElements() * DTypeSize(t.dtype); }

// The graph nodes a step computes (a generated kernel's are its cluster's, comma-joined).
int NodesOf(const Step& step) {
  if (step.node.name.empty()) return 0;
  return 1 + static_cast<int>(std::count(step.node.name.begin(), step.node.name.end(), ','));
}

// `--placement`: where each step of the CUDA plan runs, every copy, and the summary line.
void PrintPlacement(const Executable& exe) {
  std::printf("\nplacement (cuda):\n");
  int device_nodes = 0, host_nodes = 0, copies = 0;
  int64_t copy_bytes = 0;
  for (const Step& step : exe.steps) {
    if (step.callee == "to_device" || step.callee == "to_host") {
      const BufferDesc& b = exe.buffers[step.inputs[0]];
      ++copies;
      copy_bytes += b.bytes();
      std::printf("  copy    %-9s %s %s (%lld bytes)\n", step.callee.c_str(), b.tensor.c_str(),
                  b.type.ToString().c_str(), static_cast<long long>(b.bytes()));
      continue;
    }
    if (step.kind == Step::Kind::kLibrary && step.callee == "variable_read") continue;
    (step.on_device ? device_nodes : host_nodes) += NodesOf(step);
    // A device convolution runs through cuDNN where the GPU has it, else as its kernel.
    const char* mark = step.attrs.Has("tf32")                    ? " (tf32)"
                       : step.on_device && cpu::IsConvStep(step) ? " (cudnn)"
                                                                 : "";
    std::printf("  %-7s %-9s %s%s  # %s\n", step.on_device ? "device" : "host",
                StepKindName(step.kind), step.callee.c_str(), mark, step.node.name.c_str());
  }
  const cuda::GraphCapture capture = cuda::AnalyzeGraphCapture(exe);
  if (capture.capturable)
    std::printf(
        "cuda graph: the device steps (%lld operations) are captured on the second run "
        "and replayed from then on\n",
        static_cast<long long>(capture.operations));
  else
    std::printf("cuda graph: not captured: %s\n", capture.why_not.c_str());
  std::printf("placement: %d device nodes, %d host nodes, %d copies (%lld bytes)\n", device_nodes,
              host_nodes, copies, static_cast<long long>(copy_bytes));
}

}  // namespace

int PrintPlanReport(const Command& cmd, const Graph& graph, const Flags& flags,
                    std::vector<TensorName> fetches, std::vector<TensorName> targets) {
  std::map<std::string, Shape> shapes;
  for (const std::string& spec : flags.GetAll("input")) {
    Result<std::pair<std::string, Shape>> parsed = ParseShapeSpec(spec);
    if (!parsed.ok()) return Fail(cmd, parsed.error());
    shapes[parsed->first] = parsed->second;
  }
  FeedList feeds;
  for (const std::string& name : graph.inputs()) {
    const TensorType& type = graph.FindNode(name)->output_types[0];
    Shape shape = type.shape;
    if (auto it = shapes.find(name); it != shapes.end()) {
      shape = it->second;
      shapes.erase(it);
    } else {
      std::vector<int64_t> dims = shape.dims();
      for (int64_t& d : dims) d = d < 0 ? 1 : d;
      shape = Shape(dims);
    }
    Result<Tensor> zeros = Tensor::Create(type.dtype, shape);
    if (!zeros.ok()) return Fail(cmd, zeros.error());
    feeds.emplace_back(name, std::move(*zeros));
  }
  if (!shapes.empty())
    return Fail(cmd, MakeError(ErrorCode::kNotFound, "--input ", shapes.begin()->first,
                               ": the model has no input of that name"));
  for (const std::string& f : flags.GetAll("fetch")) fetches.emplace_back(f);
  for (const std::string& t : flags.GetAll("target")) targets.emplace_back(t);
  if (fetches.empty() && targets.empty())
    for (const GraphOutput& out : graph.outputs()) fetches.emplace_back(out.name);
  Session session(graph);
  Result<RunPlan> plan = session.Plan(feeds, fetches, targets);
  if (!plan.ok()) return Fail(cmd, plan.error());
  const std::string backend = flags.Get("backend", "cpu");
  const bool cuda = backend == "cuda" || backend == "cuda-sim";
  if (!cuda && backend != "cpu")
    return UsageError(cmd, "--backend " + backend + ": plans are shown for cpu, cuda and cuda-sim");
  if (flags.On("placement") && !cuda)
    return UsageError(cmd, "--placement shows a CUDA plan: add --backend cuda");
  if (flags.Has("cost") && !cuda && flags.Has("backend"))
    return UsageError(cmd, "--cost estimates a CUDA plan: drop --backend or make it cuda");
  if (flags.Has("cost") && !flags.On("fusion") && !flags.On("memory") && !flags.On("placement"))
    return PrintCostReport(cmd, graph, feeds, fetches, targets, flags.Get("cost"),
                           flags.On("tf32"));
  Result<compiler::PlannedExecutable> planned = MakeError(ErrorCode::kInternal, "not planned");
  if (cuda) {
    Result<compiler::CudaPlan> cuda_plan = compiler::PlanForCuda(*plan, flags.On("tf32"));
    if (!cuda_plan.ok()) return Fail(cmd, cuda_plan.error());
    planned = std::move(cuda_plan->planned);
  } else {
    planned = compiler::PlanExecutable(*plan, compiler::CpuPlanOptions());
  }
  if (!planned.ok()) return Fail(cmd, planned.error());
  const Executable& exe = planned->lowered.executable;

  std::printf("\nplan for");
  for (const auto& [name, t] : feeds)
    std::printf(" %s=%s", name.str().c_str(), t.shape().ToString().c_str());
  std::printf("\n");
  if (flags.On("fusion")) {
    if (!planned->expanded.changes.empty()) {
      std::printf("\ndeferred nodes expanded:\n");
      for (const std::string& c : planned->expanded.changes) std::printf("  %s\n", c.c_str());
    }
    std::printf("\ngraph passes on the plan: %s\n",
                planned->optimized.changes.empty() ? "nothing to change" : "");
    for (const std::string& c : planned->optimized.changes) std::printf("  %s\n", c.c_str());
    std::printf("\nfusion decisions:\n");
    for (const std::string& d : planned->fusion.decisions) std::printf("  %s\n", d.c_str());
    for (const std::string& d : planned->lowered.decisions) std::printf("  %s\n", d.c_str());
    // One kernel per op: every node that computes something at run time, reading its inputs and
    // writing its outputs. Variables compute nothing (their buffers are bound to the stored
    // values), so neither side counts them.
    int per_op = 0;
    int64_t per_op_bytes = 0, fused_bytes = 0;
    for (const Node* node : planned->simplified.plan.nodes) {
      bool runs = false;
      for (size_t i = 0; i < node->output_types.size(); ++i)
        runs |= !planned->info.values.count(TensorRef{node->name, static_cast<int>(i)});
      if (!runs || node->op == "Variable") continue;
      ++per_op;
      for (const TensorRef& in : node->inputs) per_op_bytes += Bytes(planned->info.types.at(in));
      for (size_t i = 0; i < node->output_types.size(); ++i)
        per_op_bytes += Bytes(planned->info.types.at(TensorRef{node->name, static_cast<int>(i)}));
    }
    int variables = 0;
    for (const Step& step : exe.steps) {
      if (step.kind == Step::Kind::kLibrary && step.callee == "variable_read") {
        ++variables;
        continue;
      }
      for (int id : step.inputs) fused_bytes += exe.buffers[id].bytes();
      for (int id : step.outputs) fused_bytes += exe.buffers[id].bytes();
    }
    std::printf("\nsteps: %zu (generated kernels %d, library calls %d, reference kernels %d)\n",
                exe.steps.size() - variables, exe.CountSteps(Step::Kind::kKernel),
                exe.CountSteps(Step::Kind::kLibrary) - variables,
                exe.CountSteps(Step::Kind::kReference));
    std::printf("variables bound: %d (bindings, not counted as steps)\n", variables);
    std::printf("one kernel per op: %d steps\n", per_op);
    std::printf("bytes moved: %.3f MB (one kernel per op: %.3f MB)\n", fused_bytes / 1e6,
                per_op_bytes / 1e6);
    const compiler::LayoutStats& l = planned->layouts;
    std::string blocked;
    for (const auto& [layout, count] : l.buffers)
      blocked += (blocked.empty() ? "" : ", ") + std::to_string(count) + " " + layout;
    std::printf("\nlayout decisions:\n");
    for (const std::string& d : l.decisions) std::printf("  %s\n", d.c_str());
    std::printf("layouts: %s\n", blocked.empty() ? "every buffer dense" : blocked.c_str());
    std::printf("reorders around library calls per run: %d (every buffer dense: %d)\n", l.reorders,
                l.reorders_if_dense);
  }
  if (flags.On("placement")) PrintPlacement(exe);
  if (flags.On("memory")) {
    const compiler::MemoryStats& m = planned->memory;
    Result<int64_t> limit = ParseMemoryLimit(flags);
    if (!limit.ok()) return UsageError(cmd, limit.error().message());
    std::printf("\nmemory of the plan:\n");
    std::printf("  arena (peak of intermediate values): %lld bytes\n",
                static_cast<long long>(m.arena_bytes));
    std::printf("  without buffer reuse:                %lld bytes\n",
                static_cast<long long>(m.unshared_bytes));
    std::printf("  constants:                           %lld bytes\n",
                static_cast<long long>(m.constant_bytes));
    std::printf("  outputs computed in place:           %d\n", m.in_place);
    // Without the bytes library steps keep (packed weights, scratch), which loading measures.
    const PlanMemory memory = MeasurePlan(exe, nullptr);
    const MemoryBudget budget = HostBudget(*limit);
    std::printf("  peak:   %s, before library workspace\n", memory.ToString().c_str());
    std::printf("  budget: %s: %s\n", budget.ToString().c_str(),
                CheckFits(memory, budget, "").ok() ? "fits" : "does not fit");
    for (const PlanMemory::Buffer& b : memory.largest)
      std::printf("  largest: %s %s\n", b.what.c_str(), FormatBytes(b.bytes).c_str());
  }
  if (flags.Has("cost"))
    return PrintCostReport(cmd, graph, feeds, fetches, targets, flags.Get("cost"),
                           flags.On("tf32"));
  return 0;
}

#else

int PrintPlanReport(const Command& cmd, const Graph&, const Flags&, std::vector<TensorName>,
                    std::vector<TensorName>) {
  return Fail(cmd, MakeError(ErrorCode::kUnimplemented,
                             "--fusion, --memory and --placement need a build with the compiler"));
}

#endif

}  // namespace kiln::cli
