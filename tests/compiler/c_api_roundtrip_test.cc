// The C API (runtime/c_api/kiln_c.h) on compiled modules: it computes bitwise what kiln::Module
// computes, for inference and for training steps with checkpoints, and refuses wrong buffers;
// `kiln compile --header` writes a class that compiles against the runtime; kiln_digits_deploy (the
// runtime-only example) evaluates a module and fails cleanly. The runtime-only C API tests are in
// tests/runtime/c_api_test.cc.
#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>

#include "compiler/aot.h"
#include "ir/io/npy.h"
#include "ir/ops/math.h"
#include "ir/serialize.h"
#include "models/digits_cnn.h"
#include "passes/optim.h"
#include "runtime/c_api/kiln_c.h"
#include "runtime/module/module.h"
#include "tests/testing/gradcheck_op.h"
#include "tests/testing/run_command.h"
#include "tests/testing/system_compiler.h"
#include "tests/testing/temp_path.h"

namespace kiln {
namespace {

using testing::CheckFails;
using testing::CommandResult;
using testing::RunCommand;

Tensor Images(int64_t n, uint64_t seed) {
  return testing::RandomTensor(Shape{n, 1, 8, 8}, seed).CastTo(f32);
}

compiler::AotOptions WithShapes(std::map<std::string, Shape> shapes) {
  compiler::AotOptions options;
  options.input_shapes = std::move(shapes);
  return options;
}

// Compiles `graph` and writes the module to TempPath(name).
std::string CompileTo(const std::string& name, const Graph& graph,
                      const compiler::AotOptions& options) {
  Result<ModuleFile> module = compiler::CompileModule(graph, options);
  INFO(module.status().ToString());
  REQUIRE(module.ok());
  const std::string path = testing::TempPath(name);
  REQUIRE(WriteModuleFile(path, *module).ok());
  return path;
}

std::unique_ptr<Module> LoadModule(const std::string& path) {
  Result<std::unique_ptr<Module>> module = Module::Load(path);
  INFO(module.status().ToString());
  REQUIRE(module.ok());
  return std::move(module).value();
}

kiln_module* LoadC(const std::string& path) {
  kiln_status* status = nullptr;
  kiln_module* m = kiln_module_load(path.c_str(), 0, &status);
  INFO(kiln_status_message(status));
  REQUIRE(m != nullptr);
  return m;
}

// Runs `m` through the C API on `feeds` (in signature order); returns its outputs as tensors.
std::vector<Tensor> RunC(kiln_module* m, const std::vector<Tensor>& feeds) {
  std::vector<const void*> inputs;
  for (const Tensor& t : feeds) inputs.push_back(t.raw_data());
  std::vector<Tensor> outputs;
  std::vector<void*> buffers;
  for (int i = 0; i < kiln_module_num_outputs(m); ++i) {
    std::vector<int64_t> dims;
    for (int d = 0; d < kiln_module_output_rank(m, i); ++d)
      dims.push_back(kiln_module_output_dim(m, i, d));
    outputs.emplace_back(static_cast<DType>(kiln_module_output_dtype(m, i)), Shape(dims));
    buffers.push_back(outputs.back().raw_data());
  }
  kiln_status* status = nullptr;
  int code = kiln_module_run(m, inputs.data(), buffers.data(), &status);
  INFO(kiln_status_message(status));
  REQUIRE(code == 0);
  return outputs;
}

TEST_CASE("C API: a cuda module runs on cuda-sim, bitwise as kiln::Module, and names the backend",
          "[capi][cuda]") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {4, 6});
  g.Output("y", Tanh(Add(Mul(x, g.Scalar(3.0)), g.Scalar(1.0))));
  compiler::AotOptions options;
  options.target = "cuda";
  const std::string path = CompileTo("capi_cuda.kmod", *g.Build(), options);
  kiln_status* status = nullptr;
  kiln_module* m = kiln_module_load_on(path.c_str(), "cuda-sim", 1, &status);
  INFO(kiln_status_message(status));
  REQUIRE(m != nullptr);
  Tensor xv = testing::RandomTensor(Shape{4, 6}, 7).CastTo(f32);
  std::vector<Tensor> got = RunC(m, {xv});
  kiln_module_free(m);
  Result<std::unique_ptr<Module>> module =
      Module::Load(path, {.threads = 1, .backend = "cuda-sim"});
  REQUIRE(module.ok());
  Result<std::vector<Tensor>> want = (*module)->Run({{"x", xv}});
  REQUIRE(want.ok());
  CHECK(got[0].BitwiseEquals((*want)[0]));
  kiln_status* refused = nullptr;
  CHECK(kiln_module_load_on(path.c_str(), "cpu", 0, &refused) == nullptr);
  CHECK_THAT(kiln_status_message(refused),
             Catch::Contains("capi_cuda.kmod") && Catch::Contains("cannot run on backend 'cpu'"));
  kiln_status_free(refused);
}

TEST_CASE("C API round trip: a compiled module gives bitwise what kiln::Module gives", "[capi]") {
  GraphBuilder g;
  models::BuildDigitsCnn(g);
  const std::string path =
      CompileTo("capi_digits.kmod", *g.Build(), WithShapes({{"images", {5, 1, 8, 8}}}));
  kiln_module* m = LoadC(path);
  std::unique_ptr<Module> module = LoadModule(path);
  REQUIRE(kiln_module_num_outputs(m) == 2);  // logits, probabilities
  for (uint64_t seed : {1, 2}) {
    Tensor x = Images(5, seed);
    std::vector<Tensor> got = RunC(m, {x});
    Result<std::vector<Tensor>> want = module->Run({{"images", x}});
    REQUIRE(want.ok());
    for (size_t i = 0; i < got.size(); ++i) CHECK(got[i].BitwiseEquals((*want)[i]));
  }
  // Wrong buffers are refused on a real module too.
  Tensor x = Images(5, 3), logits(f32, Shape{5, 10}), probabilities(f32, Shape{5, 10});
  const void* inputs[] = {x.raw_data()};
  void* outputs[] = {logits.raw_data(), probabilities.raw_data()};
  void* missing[] = {logits.raw_data(), nullptr};
  const int64_t small[] = {5 * 64 * 4 - 4}, right[] = {5 * 64 * 4}, out_bytes[] = {200, 200};
  auto refused = [&](const int64_t* in_bytes, void* const* out, const std::string& text) {
    kiln_status* status = nullptr;
    CHECK(kiln_module_run_checked(m, inputs, in_bytes, out, out_bytes, &status) ==
          KILN_INVALID_ARGUMENT);
    CHECK_THAT(kiln_status_message(status), Catch::Contains(text));
    kiln_status_free(status);
  };
  refused(small, outputs, "input 0 ('images', f32[5, 1, 8, 8], 1280 bytes) has 1276 bytes");
  refused(right, missing, "output 1 ('probabilities', f32[5, 10], 200 bytes) is NULL");
  CHECK(kiln_module_run_checked(m, inputs, right, outputs, out_bytes, nullptr) == 0);
  kiln_module_free(m);
}

TEST_CASE("C API round trip: training steps and checkpoints through the C API", "[capi]") {
  GraphBuilder g;
  models::DigitsCnn net = models::BuildDigitsTraining(g);
  optim::Options adam_options;
  adam_options.lr = 0.01;
  Result<optim::Optimizer> adam = optim::ByName("adam", adam_options);
  REQUIRE(adam.ok());
  Value update = adam->Minimize(net.loss);
  compiler::AotOptions options = WithShapes({{"images", {16, 1, 8, 8}}, {"labels", {16}}});
  options.fetches = {net.loss.name()};
  options.targets = {update.node_name()};
  const std::string path = CompileTo("capi_train.kmod", *g.Build(), options);
  kiln_module* m = LoadC(path);
  std::unique_ptr<Module> module = LoadModule(path);
  Tensor images = Images(16, 7), labels(i64, Shape{16});
  for (int i = 0; i < 16; ++i) labels.SetInt(i, i % 10);
  const std::string checkpoint = testing::TempPath("capi_train.kckpt");
  std::vector<Tensor> losses;
  for (int step = 0; step < 3; ++step) {
    losses.push_back(RunC(m, {images, labels})[0]);
    Result<std::vector<Tensor>> want = module->Run({{"images", images}, {"labels", labels}});
    REQUIRE(want.ok());
    CHECK(losses.back().BitwiseEquals((*want)[0]));
    if (step == 0) REQUIRE(kiln_module_save_checkpoint(m, checkpoint.c_str(), nullptr) == 0);
  }
  CHECK(losses[2].GetDouble(0) < losses[0].GetDouble(0));
  REQUIRE(kiln_module_restore_checkpoint(m, checkpoint.c_str(), nullptr) == 0);
  CHECK(RunC(m, {images, labels})[0].BitwiseEquals(losses[1]));
  kiln_module_free(m);
}

// What kiln_digits_deploy must print for `images`/`labels`: batches of the module's size, the last
// padded with zeros, argmax of "logits" against the labels.
std::string ExpectedAccuracy(const std::string& module_path, const Tensor& images,
                             const Tensor& labels, int64_t batch) {
  std::unique_ptr<Module> module = LoadModule(module_path);
  const int64_t n = labels.num_elements();
  int64_t correct = 0;
  for (int64_t start = 0; start < n; start += batch) {
    Tensor x(f32, Shape{batch, 1, 8, 8});
    const int64_t rows = std::min(batch, n - start);
    std::memcpy(x.raw_data(), images.data<float>() + start * 64, rows * 64 * sizeof(float));
    Result<std::vector<Tensor>> out = module->Run({{"images", x}});
    REQUIRE(out.ok());
    const float* l = (*out)[0].data<float>();
    for (int64_t r = 0; r < rows; ++r)
      correct +=
          std::max_element(l + r * 10, l + r * 10 + 10) - (l + r * 10) == labels.GetInt(start + r);
  }
  char line[64];
  std::snprintf(line, sizeof(line), "deployed module accuracy: %.4f\n",
                static_cast<double>(correct) / static_cast<double>(n));
  return line;
}

TEST_CASE("kiln compile --header, and kiln_digits_deploy on the module", "[capi][cli]") {
  GraphBuilder g;
  models::BuildDigitsCnn(g);
  const std::string model = testing::TempPath("deploy_digits.kgraph");
  REQUIRE(SaveGraph(*g.Build(), model).ok());
  const std::string module = testing::TempPath("deploy_digits.kmod");
  const std::string header = testing::TempPath("deploy_digits.h");
  CommandResult r =
      RunCommand(KILN_BINARY, {"compile", model, "-o", module, "--input", "images=4x1x8x8",
                               "--header", header, "--class", "acme::Digits"});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("deploy_digits.h: class acme::Digits"));
  testing::SourceCheck check = testing::CheckCompiles("deploy_user.cc", R"(
#include "deploy_digits.h"
static_assert(acme::Digits::kImagesShape[0] == 4 && acme::Digits::kLogitsSize == 40);
int main() {
  kiln::Result<acme::Digits> m = acme::Digits::Load("deploy_digits.kmod");
  if (!m.ok()) return 1;
  m->images_data()[0] = 1;
  return m->Run().ok() && m->probabilities_data()[0] > 0 ? 0 : 1;
}
)");
  if (check.compiler_found) {
    INFO(check.diagnostics);
    CHECK(check.ok);
  }
  r = RunCommand(KILN_BINARY,
                 {"compile", model, "-o", testing::TempPath("my_digits.kmod"), "--input",
                  "images=4x1x8x8", "--fetch", "logits", "--header", testing::TempPath("my.h")});
  CHECK_THAT(r.out, Catch::Contains("my.h: class MyDigits"));
  CheckFails(RunCommand(KILN_BINARY, {"compile", model, "-o", module, "--class", "X"}),
             "--class needs --header OUT.h", 2);
  CheckFails(RunCommand(KILN_BINARY,
                        {"compile", model, "-o", module, "--header", header, "--class", "9x"}),
             "--class: class name '9x' is not a C++ identifier", 2);
  CheckFails(RunCommand(KILN_BINARY, {"compile", model, "-o", module, "--input", "images=4x1x8x8",
                                      "--header", testing::TempPath("no/such/dir/d.h")}),
             "d.h");

  const std::string deploy = KILN_DIGITS_DEPLOY_BINARY;
  const std::string images = testing::TempPath("deploy_images.npy"),
                    labels = testing::TempPath("deploy_labels.npy");
  Tensor x = Images(10, 11), y(i64, Shape{10});
  for (int i = 0; i < 10; ++i) y.SetInt(i, (i * 7) % 10);
  REQUIRE(WriteNpy(images, x).ok());
  REQUIRE(WriteNpy(labels, y).ok());
  r = RunCommand(deploy, {module, images, labels});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out == ExpectedAccuracy(module, x, y, 4));  // 10 images: batches 4, 4, 2 (+2 padding)

  CheckFails(RunCommand(deploy, {module, images}), "usage: kiln_digits_deploy", 2);
  CheckFails(RunCommand(deploy, {testing::TempPath("none.kmod"), images, labels}), "none.kmod");
  CheckFails(RunCommand(deploy, {module, labels, labels}), "expected images f32[N, 1, 8, 8]");
  const std::string no_images = testing::TempPath("no_images.npy"),
                    no_labels = testing::TempPath("no_labels.npy");
  REQUIRE(WriteNpy(no_images, Tensor(f32, Shape{0, 1, 8, 8})).ok());
  REQUIRE(WriteNpy(no_labels, Tensor(i64, Shape{0})).ok());
  CheckFails(RunCommand(deploy, {module, no_images, no_labels}), "no_images.npy: no images");
  REQUIRE(WriteNpy(testing::TempPath("short.npy"), Tensor(i64, Shape{3})).ok());
  CheckFails(RunCommand(deploy, {module, images, testing::TempPath("short.npy")}),
             "expected 10 integer labels");
  GraphBuilder tiny;
  tiny.Output("y", Tanh(tiny.Placeholder("x", f32, {2, 3})));
  const std::string other = CompileTo("deploy_other.kmod", *tiny.Build(), {});
  CheckFails(RunCommand(deploy, {other, images, labels}),
             "deploy_other.kmod: expected one input f32[B, 1, 8, 8] (B >= 1), got 1 input(s), "
             "the first [2, 3]");

  // Like kilnrt: the runtime alone, nothing of the compiler.
  CommandResult ldd = RunCommand("/usr/bin/ldd", {deploy});
  CHECK_THAT(ldd.out,
             Catch::Contains("libc.so") && !Catch::Contains("LLVM") && !Catch::Contains("MLIR"));
  CommandResult nm = RunCommand("/usr/bin/nm", {"-C", "--defined-only", deploy});
  CHECK_THAT(nm.out, Catch::Contains("kiln_module_run") && !Catch::Contains("kiln::compiler::") &&
                         !Catch::Contains("llvm::") && !Catch::Contains("mlir::"));
}

}  // namespace
}  // namespace kiln
