// User-defined ops from plugins (runtime/plugins.h, runtime/plugin_api.h), with the example plugin
// libkiln_swish.so (models/swish_plugin.cc): its gradient against float64 finite differences (in
// process and through `kiln gradcheck`), a model with it training on the cpu backend as on the
// reference one, a module using it run by kilnrt with the plugin loaded and refused without it,
// graphs naming the plugin they need, and plugins the loader must refuse.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>

#include "ir/io/npy.h"
#include "ir/layers.h"
#include "ir/op_registry.h"
#include "ir/ops/math.h"
#include "ir/ops/nn.h"
#include "ir/ops/reduce.h"
#include "ir/serialize.h"
#include "models/swish_plugin.h"
#include "passes/optim.h"
#include "runtime/plugins.h"
#include "runtime/session.h"
#include "tests/testing/backends.h"
#include "tests/testing/differential.h"
#include "tests/testing/eval.h"
#include "tests/testing/gradcheck_op.h"
#include "tests/testing/run_command.h"
#include "tests/testing/temp_path.h"

using namespace kiln;
using kiln::testing::CheckFails;
using kiln::testing::CommandResult;

namespace {

void LoadSwish() {
  Status s = LoadPlugin(KILN_SWISH_PLUGIN);
  INFO((s.ok() ? std::string() : s.error().ToString()));
  REQUIRE(s.ok());
}

std::string Dir() {
  static std::string dir = [] {
    const std::string path = testing::TempPath("plugin");
    std::filesystem::create_directories(path);
    return path;
  }();
  return dir;
}

CommandResult Kiln(std::vector<std::string> args) {
  args.insert(args.begin(), {"--plugin", KILN_SWISH_PLUGIN});
  return testing::RunCommand(KILN_BINARY, args);
}

// A classifier with Swish activations: x [-1, 6] -> 16 -> swish -> 3 logits, and its loss.
Graph SwishClassifier(bool with_training) {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {-1, 6});
  Value h = models::Swish(nn::Dense(g.Scope("hidden"), x, 16), 1.5);
  Value logits = nn::Dense(g.Scope("out"), h, 3).Named("logits");
  g.Output("logits", logits);
  if (with_training) {
    Value labels = g.Placeholder("labels", i64, {-1});
    Value loss = SoftmaxCrossEntropy(logits, labels).Named("loss");
    g.Output("loss", loss);
    optim::SGD({.lr = 0.5}).Minimize(loss).Named("train");
  }
  return testing::BuildOrFail(g);
}

Tensor Features(int64_t n) {
  Tensor x = testing::RandomTensor({n, 6}, 11);
  Result<Tensor> f = Tensor::Create(f32, {n, 6});
  REQUIRE(f.ok());
  for (int64_t i = 0; i < x.num_elements(); ++i) f->SetDouble(i, x.ToDoubles()[i] * 2);
  return *f;
}

// Labels a function of the features, so that the loss can fall.
Tensor Labels(const Tensor& x) {
  const int64_t n = x.shape().dim(0);
  std::vector<int64_t> labels(n);
  const std::vector<double> v = x.ToDoubles();
  for (int64_t i = 0; i < n; ++i) labels[i] = v[i * 6] > 0.5 ? 2 : v[i * 6 + 1] > 0 ? 1 : 0;
  return Tensor::FromVector<int64_t>({n}, labels);
}

}  // namespace

TEST_CASE("A plugin's op has its gradient checked against finite differences", "[plugin][grad]") {
  LoadSwish();
  for (double beta : {1.0, 0.4}) {
    testing::CheckOpGradient(
        {testing::RandomTensor({3, 4}, 3, -3, 3)},
        [beta](GraphBuilder&, const std::vector<Value>& in) { return models::Swish(in[0], beta); });
  }
  // Loading it again is a no-op; the registry knows the op as the plugin's.
  LoadSwish();
  const OpDef* def = OpRegistry::Global().Find("Swish");
  REQUIRE(def);
  CHECK(def->plugin == "kiln_swish");
  bool listed = false;
  for (const LoadedPlugin& p : LoadedPlugins()) listed |= p.name == "kiln_swish";
  CHECK(listed);
}

TEST_CASE("A model with a plugin's op trains on every backend as on the reference", "[plugin]") {
  LoadSwish();
  const Graph graph = SwishClassifier(true);
  const Tensor x = Features(32);
  const FeedList feeds = {{"x", x}, {"labels", Labels(x)}};
  testing::CheckTrainingMatchesReference(graph, feeds, "loss", "train", 3);
  for (const std::string& backend : testing::AvailableBackends()) {
    INFO(backend);
    Session session(graph, {.backend = backend});
    double first = 0, last = 0;
    for (int step = 0; step < 40; ++step) {
      Result<std::vector<Tensor>> out = session.Run(feeds, {"loss"}, {"train"});
      INFO((out.ok() ? std::string() : out.error().ToString()));
      REQUIRE(out.ok());
      last = out->at(0).ToDoubles()[0];
      if (step == 0) first = last;
    }
    CHECK(last < first * 0.5);
  }
}

TEST_CASE("kiln and kilnrt run what uses a plugin with it loaded, and refuse it without",
          "[plugin][cli]") {
  LoadSwish();
  const std::string model = Dir() + "/swish.kgraph";
  REQUIRE(SaveGraph(SwishClassifier(false), model).ok());
  const std::string x = Dir() + "/x.npy";
  REQUIRE(WriteNpy(x, Features(4)).ok());

  CommandResult check = Kiln({"gradcheck", model, "--of", "logits", "--grad-of-sum", "--wrt",
                              "hidden/w,x", "--input", "x=" + x});
  INFO(check.err);
  CHECK(check.exit_code == 0);
  CHECK_THAT(check.out, Catch::Contains("all gradients within"));

  CommandResult run = Kiln({"run", model, "--input", "x=" + x, "--out", Dir() + "/jit"});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  CheckFails(testing::RunCommand(KILN_BINARY, {"run", model, "--input", "x=" + x}),
             "uses op 'Swish' of plugin 'kiln_swish', which is not loaded");
  CheckFails(testing::RunCommand(KILN_BINARY, {"--plugin", Dir() + "/none.so", "run", model}),
             "no such file");
  if (testing::CompiledBackends().empty()) return;  // a runtime-only build compiles no modules

  const std::string module = Dir() + "/swish.kmod";
  CommandResult compile = Kiln({"compile", model, "--input", "x=4x6", "-o", module});
  INFO(compile.err);
  REQUIRE(compile.exit_code == 0);
  CommandResult deployed = testing::RunCommand(
      KILNRT_BINARY,
      {module, "--plugin", KILN_SWISH_PLUGIN, "--input", "x=" + x, "--out", Dir() + "/rt"});
  INFO(deployed.err);
  REQUIRE(deployed.exit_code == 0);
  std::string why;
  CHECK(testing::CloseForDType(*ReadNpy(Dir() + "/jit/logits.npy"),
                               *ReadNpy(Dir() + "/rt/logits.npy"), &why));
  INFO(why);

  // Without the plugin: refused, naming it.
  CheckFails(testing::RunCommand(KILNRT_BINARY, {module, "--input", "x=" + x}),
             "of plugin 'kiln_swish', which is not loaded");
}

TEST_CASE("Plugins that are not plugins, or break the rules, are refused", "[plugin][bad-input]") {
  auto refused = [](const std::string& path, const std::string& text) {
    Status s = LoadPlugin(path);
    REQUIRE_FALSE(s.ok());
    CHECK_THAT(s.error().message(), Catch::Contains(text));
  };
  const std::string dir = KILN_BAD_PLUGIN_DIR;
  refused(dir + "/libkiln_bad_plugin_no_gradient.so",
          "op 'NoGradientOp' has neither a gradient (Grad) nor NotDifferentiable()");
  refused(dir + "/libkiln_bad_plugin_taken_name.so", "op 'Relu' is already an op of kiln");
  CHECK(OpRegistry::Global().Find("FreshOp") == nullptr);  // all or nothing
  refused(dir + "/libkiln_bad_plugin_throws.so", "registration failed on purpose");
  refused(dir + "/libkiln_bad_plugin_no_ops.so", "registers no ops");
  refused(dir + "/no_such_plugin.so", "no such file");
  refused(KILN_BINARY, "cannot load it");  // an executable, not a shared library
  // A shared library that is no plugin: the C library.
  for (const char* libc : {"/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib64/libc.so.6"})
    if (std::filesystem::exists(libc)) refused(libc, "not a kiln plugin");
}
