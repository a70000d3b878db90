// kiln gradcheck: symbolic gradients against float64 central differences, for the user's graphs.
#include <cstdio>

#include "tools/command.h"
#include "tools/lib/gradient_check.h"

namespace kiln::cli {

std::vector<std::string> SplitCommaLists(const std::vector<std::string>& lists);

int RunGradcheck(const Command& cmd, const std::vector<std::string>& args) {
  Flags flags;
  flags.Option("of")
      .Repeated("wrt")
      .Repeated("input")
      .Option("tolerance")
      .Option("step")
      .Switch("grad-of-sum")
      .Positional(1, 1);
  if (int code = ParseOrExit(cmd, flags, args); code >= 0) return code;
  std::vector<std::string> wrt = SplitCommaLists(flags.GetAll("wrt"));
  if (!flags.Has("of") || wrt.empty())
    return UsageError(cmd, "needs --of NAME and --wrt NAME[,NAME]...");
  char* end = nullptr;
  std::string tol_text = flags.Get("tolerance", "1e-4"), step_text = flags.Get("step", "1e-6");
  double tolerance = std::strtod(tol_text.c_str(), &end);
  if (*end || tolerance <= 0) return UsageError(cmd, "--tolerance must be a positive number");
  double step = std::strtod(step_text.c_str(), &end);
  if (*end || step <= 0) return UsageError(cmd, "--step must be a positive number");
  Result<Graph> graph = LoadModel(flags.positional()[0]);
  if (!graph.ok()) return Fail(cmd, graph.error());
  Result<std::vector<std::pair<std::string, Tensor>>> inputs = LoadInputs(flags.GetAll("input"));
  if (!inputs.ok()) return Fail(cmd, inputs.error());
  FeedList feeds;
  for (auto& [name, t] : *inputs) feeds.emplace_back(name, std::move(t));
  Result<std::vector<GradCheckResult>> results = CheckGradients(
      *graph, flags.Get("of"), wrt, feeds, {.step = step, .sum_of = flags.On("grad-of-sum")});
  if (!results.ok()) return Fail(cmd, results.error());
  bool ok = true;
  std::printf("%-32s %-20s %10s %14s %14s\n", "wrt", "type", "checked", "max abs err",
              "max rel err");
  for (const GradCheckResult& r : *results) {
    std::printf("%-32s %-20s %10lld %14.3e %14.3e%s\n", r.wrt.c_str(), r.type.ToString().c_str(),
                static_cast<long long>(r.checked), r.max_abs_error, r.max_rel_error,
                r.max_rel_error > tolerance ? "  FAIL" : "");
    ok = ok && r.max_rel_error <= tolerance;
  }
  if (!ok) {
    std::fprintf(
        stderr,
        "kiln gradcheck: error: a gradient differs from finite differences by more than %g\n",
        tolerance);
    return kExitFailure;
  }
  std::printf("all gradients within %g of float64 central differences\n", tolerance);
  return 0;
}

}  // namespace kiln::cli
