// kiln compile: compiles a model ahead of time into one module file (.kmod) that the runtime
// library, `kilnrt` and `kiln run` load and run without the compiler (compiler/aot.h). With
// --train the module runs one training step per call (forward, backward, the optimizer's update)
// and keeps its variables; with --data-parallel (and --bucket-size, --sync-bn) that step is one
// rank's of a data-parallel run, its gradients all-reduced among the ranks the runtime is given
// (kilnrt --distributed, ModuleOptions::distributed). With --header it also writes a typed C++
// header for the module (tools/lib/module_header.h).
#include <cstdio>
#include <cstdlib>

#include "ir/file_util.h"
#include "runtime/memory_budget.h"
#include "runtime/module/module_file.h"
#include "tools/command.h"
#include "tools/lib/distributed_training.h"
#include "tools/lib/model_flags.h"
#include "tools/lib/module_header.h"
#include "tools/lib/session_flags.h"
#include "tools/lib/training_graph.h"
#ifdef KILN_HAS_COMPILER
#include "compiler/aot.h"
#endif

namespace kiln::cli {

int RunCompile(const Command& cmd, const std::vector<std::string>& args) {
  Flags flags;
  flags.Option("out")
      .Alias("-o", "out")
      .Option("target")
      .Repeated("fetch")
      .Repeated("input")
      .Option("checkpoint")
      .Switch("no-variables");
  flags.Switch("train").Option("loss").Positional(1, 1);
  DeclareOptimizerFlags(flags);
  flags.Switch("data-parallel");
  DeclareDataParallelFlags(flags);
  flags.Option("header").Option("class").Option("memory-limit");
  DeclarePrecisionFlags(flags);
  DeclareModelFlags(flags);
  if (int code = ParseOrExit(cmd, flags, args); code >= 0) return code;
  Result<PrecisionPolicy> precision = PrecisionFromFlags(flags);
  if (!precision.ok()) return UsageError(cmd, precision.error().message());
  if (!flags.Has("out")) return UsageError(cmd, "needs -o OUT.kmod");
  Result<int64_t> memory_limit = ParseMemoryLimit(flags);
  if (!memory_limit.ok()) return UsageError(cmd, memory_limit.error().message());
  if (flags.Has("class") && !flags.Has("header"))
    return UsageError(cmd, "--class needs --header OUT.h");
  // The class defaults to the module file's stem in CamelCase: digits_infer.kmod -> DigitsInfer.
  std::string stem = flags.Get("out");
  stem = stem.substr(stem.find_last_of('/') + 1);
  stem = stem.substr(0, stem.find('.'));
  const std::string class_name = flags.Get("class", CppNameFor(stem).camel);
  if (flags.Has("header"))
    if (Status s = CheckCppClassName(class_name); !s.ok())
      return UsageError(cmd, "--class: " + s.error().message());
  std::string target = flags.Get("target", "cpu");
  if (target != "cpu" && target != "cuda")
    return UsageError(cmd, "--target " + target + ": kiln compiles for cpu and cuda");
  Result<std::optional<optim::Optimizer>> optimizer = OptimizerFromFlags(flags);
  if (!optimizer.ok()) return UsageError(cmd, optimizer.error().message());
  const bool train = optimizer->has_value();
  if (train && flags.On("inference"))
    return UsageError(cmd,
                      "--inference and --train: a module runs either a training step or inference");
  if (flags.On("data-parallel") && !train)
    return UsageError(cmd, "--data-parallel makes a training step data-parallel: it needs --train");
  Result<DataParallelFlags> data_parallel = DataParallelFromFlags(flags, flags.On("data-parallel"));
  if (!data_parallel.ok()) return UsageError(cmd, data_parallel.error().message());
#ifndef KILN_HAS_COMPILER
  return Fail(cmd, MakeError(ErrorCode::kUnimplemented,
                             "this kiln was built without the compiler (KILN_BUILD_COMPILER=OFF)"));
#else
  const std::string model_path = flags.positional()[0];
  Result<Graph> graph = LoadModelAsFlagsSay(flags, model_path);
  if (!graph.ok()) return Fail(cmd, graph.error());
  compiler::AotOptions options;
  options.source = model_path;
  options.checkpoint = flags.Get("checkpoint");
  options.variables = !flags.On("no-variables");
  if (!options.variables && flags.Has("checkpoint"))
    return UsageError(cmd, "--no-variables leaves out the values --checkpoint would give");
  options.precision = *precision;
  options.target = target;
  for (const std::string& spec : flags.GetAll("input")) {
    size_t eq = spec.find('=');
    std::optional<Shape> shape =
        eq == std::string::npos ? std::nullopt : ParseDims(spec.substr(eq + 1));
    if (eq == 0 || !shape)
      return UsageError(cmd, "--input '" + spec + "': expected NAME=SHAPE, like x=64x1x8x8");
    options.input_shapes[spec.substr(0, eq)] = *shape;
  }
  if (train) {
    if (flags.On("data-parallel"))
      if (Status s = MakeDataParallel(*data_parallel, *graph, **optimizer); !s.ok())
        return Fail(cmd, s.error());
    Result<TrainingGraph> training =
        AddOptimizer(std::move(*graph), flags.Get("loss"), **optimizer);
    if (!training.ok()) return Fail(cmd, training.error());
    graph = std::move(training->graph);
    options.fetches.push_back(training->loss);
    options.targets.push_back(training->update);
  }
  for (const std::string& f : flags.GetAll("fetch")) options.fetches.push_back(f);
  if (options.fetches.empty())
    for (const GraphOutput& out : graph->outputs()) options.fetches.push_back(out.name);
  Result<ModuleFile> module = compiler::CompileModule(*graph, options);
  if (!module.ok()) return Fail(cmd, module.error().WithContext(model_path));
  module->producer = "kiln compile";
  if (*memory_limit > 0) {  // the deployment's budget: refuse a module that cannot fit it
    const PlanMemory memory = MeasurePlan(module->executable, nullptr);
    if (Status s = CheckFits(memory, HostBudget(*memory_limit), "the module's plan"); !s.ok())
      return Fail(cmd, s.error().WithContext(model_path));
  }
  const std::string out = flags.Get("out");
  if (Status s = WriteModuleFile(out, *module); !s.ok()) return Fail(cmd, s.error());
  std::printf("wrote %s: %zu inputs, %zu outputs%s, %zu steps, %zu bytes of code\n", out.c_str(),
              module->inputs.size(), module->outputs.size(),
              train ? ", one training step per run" : "", module->executable.steps.size(),
              module->kernels.size());
  if (flags.Has("header")) {
    Result<ModuleFile> written = ReadModuleFile(out);  // with its build id
    if (!written.ok()) return Fail(cmd, written.error());
    Result<std::string> header = ModuleHeader(*written, class_name);
    if (!header.ok()) return Fail(cmd, header.error());
    const std::string header_path = flags.Get("header");
    if (Status s = WriteFileAtomically(header_path, *header); !s.ok()) return Fail(cmd, s.error());
    std::printf("wrote %s: class %s\n", header_path.c_str(), class_name.c_str());
  }
  return 0;
#endif
}

}  // namespace kiln::cli
