// kiln bench: times runs of a model on given or seeded random inputs. The first run of a plan is
// timed on its own (on compiled backends it includes the compilation), then --warmup untimed runs,
// then --iters timed ones, summarized by their median, min and max. With --train each run is one
// training step (forward, backward and the optimizer's update) of the optimizer's Minimize target,
// added here to the loaded graph. On the cpu backend the plan's steps are counted by kind, as
// `kiln inspect --fusion` counts them (the same compiler pipeline, without code generation).
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/random.h"
#include "passes/optim.h"
#include "runtime/cpu/cpu_executor.h"
#include "runtime/cpu/plan_compiler.h"
#include "runtime/memory_budget.h"
#include "runtime/session.h"
#include "tools/command.h"
#include "tools/lib/model_flags.h"
#include "tools/lib/session_flags.h"
#include "tools/lib/training_graph.h"
#ifdef KILN_HAS_COMPILER
#include "compiler/codegen/emit_mlir.h"
#include "compiler/plan_executable.h"
#endif

namespace kiln::cli {
namespace {

// The process's resident memory now (/proc/self/statm), and its peak so far (getrusage).
int64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}
int64_t PeakResidentBytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;
}

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// The ops that pass an integer tensor's values through unchanged (only moved or reshaped), and
// the consumers whose inputs bound them: the class count of labels, the rows of a table.
const std::set<std::string>& PassThroughOps() {
  static const std::set<std::string> ops = {"Reshape",  "Flatten", "Squeeze",    "Unsqueeze",
                                            "Identity", "Slice",   "Split",      "Transpose",
                                            "Concat",   "Tile",    "BroadcastTo"};
  return ops;
}

// The value range [0, K) for random integers fed to `input`: K is the smallest bound found among
// the tensors its values reach (through PassThroughOps): the class count C of a
// SoftmaxCrossEntropy's labels (logits [N, C]), the size of a Gather's axis for its indices, a
// OneHot's depth. `why` says where K came from. 0 when nothing bounds the values.
int64_t InferClasses(const Graph& graph, const TensorRef& input, std::string& why) {
  int64_t best = 0;
  std::set<TensorRef> seen;
  std::vector<TensorRef> stack = {input};
  auto consider = [&](int64_t k, const std::string& reason) {
    if (k > 0 && (best == 0 || k < best)) {
      best = k;
      why = reason;
    }
  };
  while (!stack.empty()) {
    TensorRef ref = stack.back();
    stack.pop_back();
    if (!seen.insert(ref).second) continue;
    for (const Node& node : graph.nodes()) {
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        if (!(node.inputs[i] == ref)) continue;
        auto type_of = [&](size_t k) { return graph.TypeOf(node.inputs[k]); };
        if (node.op == "SoftmaxCrossEntropy" && i == 1) {
          Result<TensorType> logits = type_of(0);
          if (logits.ok() && logits->shape.rank() > 0)
            consider(logits->shape[logits->shape.rank() - 1],
                     "the class count of SoftmaxCrossEntropy '" + node.name + "'");
        } else if (node.op == "Gather" && i == 1) {
          Result<TensorType> data = type_of(0);
          Result<int64_t> axis = node.attrs.GetInt("axis");
          int64_t a = axis.ok() ? *axis : 0;
          if (data.ok() && data->shape.rank() > 0) {
            if (a < 0) a += data->shape.rank();
            if (a >= 0 && a < data->shape.rank())
              consider(data->shape[a], "the rows of Gather '" + node.name + "'");
          }
        } else if (node.op == "OneHot" && i == 0) {
          Result<int64_t> depth = node.attrs.GetInt("depth");
          if (depth.ok()) consider(*depth, "the depth of OneHot '" + node.name + "'");
        } else if (PassThroughOps().count(node.op)) {
          for (size_t port = 0; port < node.output_types.size(); ++port)
            stack.push_back(TensorRef{node.name, static_cast<int>(port)});
        }
      }
    }
  }
  return best;
}

// The steps of the plan the cpu backend compiles for this run, by kind, and the reference steps
// and library calls by op/routine. Plans like `kiln inspect --fusion` (no code is generated).
void PrintStepCounts(const Session& session, const FeedList& feeds,
                     const std::vector<TensorName>& fetches,
                     const std::vector<TensorName>& targets) {
#ifdef KILN_HAS_COMPILER
  Result<RunPlan> plan = session.Plan(feeds, fetches, targets);
  if (!plan.ok()) return;  // the runs report it
  Result<compiler::PlannedExecutable> planned =
      compiler::PlanExecutable(*plan, compiler::CpuPlanOptions());
  if (!planned.ok()) {
    if (planned.error().code() == ErrorCode::kUnimplemented)
      std::printf("plan: not static (%s); the cpu backend runs it on the reference executor\n",
                  planned.error().message().c_str());
    else
      std::printf("plan: cannot be compiled: %s\n", planned.error().message().c_str());
    return;
  }
  const Executable& exe = planned->lowered.executable;
  std::printf("steps: %zu (generated kernels %d, library calls %d, reference steps %d)\n",
              exe.steps.size(), exe.CountSteps(Step::Kind::kKernel),
              exe.CountSteps(Step::Kind::kLibrary), exe.CountSteps(Step::Kind::kReference));
  std::printf("kernels: %d\n", exe.CountSteps(Step::Kind::kKernel));
  std::map<std::string, int> library, reference;
  for (const Step& step : exe.steps) {
    if (step.kind == Step::Kind::kLibrary) ++library[step.callee];
    if (step.kind == Step::Kind::kReference) ++reference[step.callee];
  }
  for (const auto& [title, counts] :
       {std::make_pair("library calls", &library), std::make_pair("reference steps", &reference)}) {
    if (counts->empty()) continue;
    std::vector<std::pair<int, std::string>> sorted;
    for (const auto& [name, n] : *counts) sorted.emplace_back(-n, name);
    std::sort(sorted.begin(), sorted.end());
    std::printf("%s:", title);
    for (const auto& [n, name] : sorted) std::printf(" %s x%d", name.c_str(), -n);
    std::printf("\n");
  }
  std::printf("arena_bytes: %lld\n", static_cast<long long>(planned->memory.arena_bytes));
#else
  (void)session, (void)feeds, (void)fetches, (void)targets;
#endif
}

}  // namespace

int RunBench(const Command& cmd, const std::vector<std::string>& args) {
  Flags flags;
  flags.Repeated("input")
      .Repeated("fetch")
      .Switch("train")
      .Option("loss")
      .Option("iters")
      .Option("warmup")
      .Option("classes")
      .Option("seed")
      .Option("trace")
      .Switch("profile")
      .Positional(1, 1);
  DeclareSessionFlags(flags);
  DeclareModelFlags(flags);
  DeclareOptimizerFlags(flags);
  if (int code = ParseOrExit(cmd, flags, args); code >= 0) return code;
  // The compiled programs' step profile (runtime/cpu/step_profile.h) reads the environment when
  // they load: --trace writes a Chrome trace of every step of every run, --profile prints each
  // step's time, slowest first, when the session ends.
  if (flags.Has("trace")) setenv("KILN_TRACE", flags.Get("trace").c_str(), 1);
  if (flags.On("profile")) setenv("KILN_PROFILE", "steps", 1);
  Result<SessionOptions> options = SessionOptionsFromFlags(flags);
  if (!options.ok()) return UsageError(cmd, options.error().message());
  Result<int64_t> iters = ParseCount("iters", flags.Get("iters", "10"), 1);
  Result<int64_t> warmup = ParseCount("warmup", flags.Get("warmup", "1"), 0);
  Result<int64_t> classes = ParseCount("classes", flags.Get("classes", "0"), 0);
  Result<int64_t> seed = ParseCount("seed", flags.Get("seed", "1"), 0);
  for (const Result<int64_t>* r : {&iters, &warmup, &classes, &seed})
    if (!r->ok()) return UsageError(cmd, r->error().message());
  if (flags.Has("classes") && *classes < 1) return UsageError(cmd, "--classes must be >= 1");
  Result<std::optional<optim::Optimizer>> optimizer = OptimizerFromFlags(flags);
  if (!optimizer.ok()) return UsageError(cmd, optimizer.error().message());
  const bool train = optimizer->has_value();
  if (train && flags.On("inference"))
    return UsageError(
        cmd, "--inference and --train: a benchmark times either training steps or inference");

  std::string model_path = flags.positional()[0];
  Result<Graph> graph = LoadModelAsFlagsSay(flags, model_path);
  if (!graph.ok()) return Fail(cmd, graph.error());

  // The tensors to feed: every --input, then every placeholder not given one (random data of its
  // own shape, which must then be fully known).
  FeedList feeds;
  std::vector<std::string> descriptions;
  std::set<std::string> fed;
  uint64_t stream = 0;
  auto add_random = [&](const std::string& name, const TensorType& type,
                        const Shape& shape) -> Status {
    ++stream;
    int64_t k = *classes;
    std::string why = "--classes";
    if (IsInteger(type.dtype) && k == 0) {
      Result<TensorRef> ref = graph->ResolveTensor(name);
      if (ref.ok()) k = InferClasses(*graph, *ref, why);
      if (k == 0) {
        k = 2;
        why = "nothing in the graph bounds its values; set --classes";
      }
    }
    KILN_ASSIGN_OR_RETURN(Tensor probe, Tensor::Create(type.dtype, shape));  // checks the size
    (void)probe;
    Tensor t = RandomTensor(type.dtype, shape, k, static_cast<uint64_t>(*seed), stream);
    std::string what = IsFloat(type.dtype) ? "random normal"
                       : type.dtype == boolean
                           ? "random 0/1"
                           : "random in [0, " + std::to_string(k) + ") (" + why + ")";
    descriptions.push_back("input " + name + ": " + std::string(DTypeName(type.dtype)) +
                           shape.ToString() + " " + what);
    feeds.emplace_back(name, std::move(t));
    return OkStatus();
  };
  for (const std::string& spec : flags.GetAll("input")) {
    Result<std::pair<std::string, std::string>> nv = SplitNameValue("input", spec);
    if (!nv.ok()) return UsageError(cmd, nv.error().message());
    const auto& [name, value] = *nv;
    if (!fed.insert(name).second) return UsageError(cmd, "--input " + name + " is given twice");
    if (std::optional<Shape> shape = ParseDims(value)) {
      Result<TensorRef> ref = graph->ResolveTensor(name);
      Result<TensorType> type = ref.ok() ? graph->TypeOf(*ref) : Result<TensorType>(ref.error());
      if (!type.ok()) return Fail(cmd, type.error().WithContext("--input '" + name + "'"));
      if (!type->shape.IsCompatibleWith(*shape))
        return Fail(cmd, MakeError(ErrorCode::kInvalidArgument, "--input '", name, "': shape ",
                                   shape->ToString(), " does not fit ", type->ToString()));
      if (Status s = add_random(name, *type, *shape); !s.ok())
        return Fail(cmd, s.error().WithContext("--input '" + name + "'"));
    } else {
      Result<std::vector<std::pair<std::string, Tensor>>> loaded = LoadInputs({spec});
      if (!loaded.ok()) return Fail(cmd, loaded.error());
      Tensor& t = (*loaded)[0].second;
      descriptions.push_back("input " + name + ": " + std::string(DTypeName(t.dtype())) +
                             t.shape().ToString() + " from " + value);
      feeds.emplace_back(name, std::move(t));
    }
  }
  for (const std::string& name : graph->inputs()) {
    if (fed.count(name)) continue;
    const TensorType& type = graph->FindNode(name)->output_types[0];
    if (!type.shape.IsFullyKnown())
      return UsageError(cmd, "input '" + name + "' is " + type.ToString() +
                                 ": give its shape with --input " + name +
                                 "=SHAPE (dims joined by 'x') or a file");
    if (Status s = add_random(name, type, type.shape); !s.ok())
      return Fail(cmd, s.error().WithContext("input '" + name + "'"));
  }

  // What each run computes.
  std::vector<TensorName> fetches, targets;
  std::vector<std::string> fetch_names;  // as the user wrote them
  std::string what;
  if (train) {
    Result<TrainingGraph> training =
        AddOptimizer(std::move(*graph), flags.Get("loss"), **optimizer);
    if (!training.ok()) return Fail(cmd, training.error());
    graph = std::move(training->graph);
    fetches.emplace_back(training->loss);
    fetch_names.push_back(flags.Get("loss"));
    targets.emplace_back(training->update);
    what = "one training step (forward, backward, " + flags.Get("optimizer", "sgd") +
           " update, lr " + flags.Get("lr", "0.01") + ") fetching " + flags.Get("loss");
  }
  for (const std::string& f : flags.GetAll("fetch")) fetch_names.push_back(f);
  if (fetch_names.empty())
    for (const GraphOutput& out : graph->outputs()) fetch_names.push_back(out.name);
  if (fetch_names.empty())
    return Fail(cmd, MakeError(ErrorCode::kInvalidArgument,
                               "the model declares no outputs; name what to compute with "
                               "--fetch NAME"));
  for (size_t i = train ? 1 : 0; i < fetch_names.size(); ++i) fetches.emplace_back(fetch_names[i]);
  if (!train) what = "forward, fetching";
  for (size_t i = train ? 1 : 0; i < fetch_names.size(); ++i) what += " " + fetch_names[i];

  const std::string backend = options->backend;
  const int threads = options->threads;
  Session session(std::move(*graph), *options);
  if (!session.status().ok()) return Fail(cmd, session.status().error());
  bool compiled = backend == "cpu" || (backend == "auto" && GetPlanCompiler() != nullptr);
  std::printf("model: %s\n", model_path.c_str());
  std::printf("backend: %s", compiled ? "cpu" : backend == "auto" ? "reference" : backend.c_str());
  if (compiled) std::printf(", %d threads", threads > 0 ? threads : cpu::AvailableCores());
  std::printf("\nprecision: %s%s%s\n",
              std::string(PrecisionName(options->precision.compute)).c_str(),
              options->precision.tf32 ? ", tf32 allowed" : "",
              options->check_numerics ? ", numerics checked" : "");
  std::printf("run: %s\n", what.c_str());
  for (const std::string& d : descriptions) std::printf("%s\n", d.c_str());
  std::fflush(stdout);

  Clock::time_point start = Clock::now();
  if (Status s = session.InitializeVariables(); !s.ok())
    return Fail(cmd, s.error().WithContext("initializing the variables"));
  std::printf("init_ms: %.3f (variables)\n", MsSince(start));
  if (compiled) PrintStepCounts(session, feeds, fetches, targets);
  std::fflush(stdout);

  std::vector<double> first_values, last_values;
  auto run_once = [&](const std::string& context) -> Status {
    Result<std::vector<Tensor>> out = session.Run(feeds, fetches, targets);
    if (!out.ok()) return out.error().WithContext(context);
    last_values.clear();
    for (const Tensor& t : *out)
      last_values.push_back(t.num_elements() == 1 ? t.GetDouble(0) : NAN);
    return OkStatus();
  };
  const int64_t resident_before = ResidentBytes();
  start = Clock::now();
  if (Status s = run_once("first run"); !s.ok()) return Fail(cmd, s.error());
  first_values = last_values;
  std::printf("compile_ms: %.3f (first run, compilation included)\n", MsSince(start));
  std::fflush(stdout);
  for (int64_t i = 0; i < *warmup; ++i)
    if (Status s = run_once("warmup run " + std::to_string(i + 1)); !s.ok())
      return Fail(cmd, s.error());
  std::vector<double> ms;
  for (int64_t i = 0; i < *iters; ++i) {
    start = Clock::now();
    if (Status s = run_once("run " + std::to_string(i + 1)); !s.ok()) return Fail(cmd, s.error());
    ms.push_back(MsSince(start));
  }
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  size_t n = sorted.size();
  double median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  std::printf("iters: %zu (after %lld warmup)\n", n, static_cast<long long>(*warmup));
  std::printf("median_ms: %.3f\n", median);
  std::printf("min_ms: %.3f\n", sorted.front());
  std::printf("max_ms: %.3f\n", sorted.back());
  std::printf("peak_rss: %s (before the first run: %s)\n", FormatBytes(PeakResidentBytes()).c_str(),
              FormatBytes(resident_before).c_str());
  for (size_t i = 0; i < fetches.size(); ++i)
    if (!std::isnan(last_values[i]))
      std::printf("%s: %.6g (first run %.6g)\n", fetch_names[i].c_str(), last_values[i],
                  first_values[i]);
  return 0;
}

}  // namespace kiln::cli
