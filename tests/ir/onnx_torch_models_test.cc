// Real models exported by PyTorch (tests/data/onnx/make_models.py: a torchvision ResNet, a
// transformer encoder layer, a 2-layer LSTM, a CNN with a cross-entropy loss output, an MLP, a
// torchvision MobileNetV2, a GPT-2 style decoder block, and scripted models whose Python control
// flow exports as ONNX Loop and If: a recurrent loss, a while loop with a data-dependent stop, a
// reshape to a fed shape) run through the `kiln` command line as
// a user would, on every backend (reference, the compiled cpu backend, the simulated CUDA device,
// and a GPU where one opens), and compared with PyTorch's outputs and autograd gradients.
//
// Tolerance: |kiln - torch| <= atol + rtol * |torch| with rtol 1e-4 everywhere, and atol 1e-5
// (outputs, of magnitude about 1, computed by PyTorch in float32: float32 rounding of sums of
// hundreds of products is a few 1e-7 absolute, so 1e-5 only covers values near zero, where a
// relative bound means nothing). Gradients are compared with the same bounds against float64
// autograd.
#include <sys/wait.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "ir/io/npy.h"
#include "ir/onnx/import.h"
#include "runtime/session.h"
#include "tests/testing/backends.h"
#include "tests/testing/temp_path.h"

using namespace kiln;

namespace {

constexpr double kRtol = 1e-4;
constexpr double kAtol = 1e-5;

std::string ModelDir(const std::string& model) {
  return std::string(KILN_TEST_DATA_DIR) + "/onnx/" + model;
}

// Runs the kiln binary with `args` (no shell quoting needed: paths here have no spaces or quotes);
// returns its exit code and puts stdout + stderr in `output`.
int RunKiln(const std::string& args, std::string& output) {
  std::string command = std::string(KILN_BINARY) + " " + args + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  output.clear();
  while (size_t n = fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

Tensor ReadOrFail(const std::string& path) {
  Result<Tensor> t = ReadNpy(path);
  INFO(path << ": " << (t.ok() ? std::string() : t.error().ToString()));
  REQUIRE(t.ok());
  return std::move(*t);
}

// Every element within atol + rtol * |expected|; the largest errors go in the message.
void CheckClose(const Tensor& got, const Tensor& expected, const std::string& what) {
  INFO(what);
  REQUIRE(got.shape() == expected.shape());
  double max_abs = 0, max_excess = -1;
  int64_t worst = 0;
  for (int64_t i = 0; i < expected.num_elements(); ++i) {
    double g = got.GetDouble(i), e = expected.GetDouble(i);
    double err = std::fabs(g - e);
    if (!(err <= max_abs)) max_abs = err;  // NaN too
    double excess = std::isnan(err) ? 1e30 : err - (kAtol + kRtol * std::fabs(e));
    if (excess > max_excess) max_excess = excess, worst = i;
  }
  INFO("max abs error " << max_abs << "; worst element " << worst << ": got "
                        << got.GetDouble(worst) << ", expected " << expected.GetDouble(worst));
  CHECK(max_excess <= 0);
}

struct TorchModel {
  std::string name;
  std::vector<std::string> inputs, outputs;
  // Exported with dynamic axes: other/ holds inputs of other sizes on them, and their outputs.
  bool dynamic = false;
};

const std::vector<TorchModel>& Models() {
  static const std::vector<TorchModel> models = {
      {"resnet", {"x"}, {"y"}, true},
      {"transformer", {"x"}, {"y"}, true},
      {"lstm", {"x"}, {"y", "h_n", "c_n"}, true},
      {"mlp", {"x"}, {"y"}, true},
      {"mobilenet", {"x"}, {"y"}},
      {"gpt_block", {"x"}, {"y"}},
      {"cnn_loss", {"x", "label"}, {"loss"}},     // the gradient test's models
      {"cnn_bn_loss", {"x", "label"}, {"loss"}},  // BatchNorm with batch statistics, poolings
      // A scripted loop over the fed steps (ONNX Loop) and an If on a computed value.
      {"loop_rnn_loss", {"x", "label"}, {"loss"}, true},
      {"while_stop", {"x"}, {"y", "count"}, true},   // a while loop with a data-dependent stop
      {"fed_reshape", {"x", "shape"}, {"y"}, true},  // a Reshape to a fed shape
      {"grid_sample_loss", {"x"}, {"loss"}},         // GridSample in four modes at a learnable grid
  };
  return models;
}

std::string InputFlags(const TorchModel& m, const std::string& data_dir) {
  std::string flags;
  for (const std::string& in : m.inputs)
    flags += " --input " + in + "=" + data_dir + "/" + in + ".npy";
  return flags;
}

}  // namespace

TEST_CASE("ONNX from PyTorch: kiln run matches PyTorch on every backend", "[onnx]") {
  for (const std::string& backend : kiln::testing::AvailableBackends()) {
    for (const TorchModel& m : Models()) {
      for (const std::string set : {"", "other"}) {
        if (!set.empty() && !m.dynamic) continue;
        SECTION(m.name + (set.empty() ? "" : "/" + set) + " on " + backend) {
          std::string data_dir = ModelDir(m.name) + (set.empty() ? "" : "/" + set);
          std::string out_dir = kiln::testing::TempPath("torch_" + m.name + set + "_" + backend);
          std::string output;
          int code = RunKiln("run " + ModelDir(m.name) + "/model.onnx" + InputFlags(m, data_dir) +
                                 " --out " + out_dir + " --backend " + backend,
                             output);
          INFO(output);
          REQUIRE(code == 0);
          for (const std::string& out : m.outputs)
            CheckClose(ReadOrFail(out_dir + "/" + out + ".npy"),
                       ReadOrFail(data_dir + "/" + out + ".npy"),
                       m.name + " output " + out + " on " + backend);
        }
      }
    }
  }
}

TEST_CASE("ONNX from PyTorch: kiln import-onnx writes a graph that runs the same", "[onnx]") {
  // PyTorch names folded initializers "onnx::Conv_193"; kiln's graph files must still load.
  for (const std::string name : {"resnet", "transformer"}) {
    const TorchModel& m = *std::find_if(Models().begin(), Models().end(),
                                        [&](const TorchModel& t) { return t.name == name; });
    std::string graph = kiln::testing::TempPath(name + ".kgraph");
    std::string out_dir = kiln::testing::TempPath("torch_" + name + "_kgraph");
    std::string output;
    int code = RunKiln("import-onnx " + ModelDir(name) + "/model.onnx -o " + graph, output);
    INFO(output);
    REQUIRE(code == 0);
    code = RunKiln("run " + graph + InputFlags(m, ModelDir(name)) + " --out " + out_dir +
                       " --backend reference",
                   output);
    REQUIRE(code == 0);
    CheckClose(ReadOrFail(out_dir + "/y.npy"), ReadOrFail(ModelDir(name) + "/y.npy"),
               name + " from its .kgraph");
  }
}

TEST_CASE("ONNX from PyTorch: kiln grad of an imported loss matches autograd", "[onnx]") {
  const auto model = GENERATE(
      std::make_pair(
          std::string("cnn_loss"),
          std::vector<std::string>{"conv.weight", "conv.bias", "fc.weight", "fc.bias", "x"}),
      std::make_pair(
          std::string("cnn_bn_loss"),
          std::vector<std::string>{"conv1.weight", "bn.weight", "bn.bias", "conv2.weight",
                                   "conv2.bias", "fc.weight", "fc.bias", "x"}),
      std::make_pair(std::string("loop_rnn_loss"),
                     std::vector<std::string>{"inp.weight", "inp.bias", "rec.weight", "fc.weight",
                                              "fc.bias", "x"}),
      std::make_pair(std::string("grid_sample_loss"), std::vector<std::string>{"offset", "x"}));
  const std::string name = model.first;  // (clang 14 captures no structured binding)
  const std::vector<std::string>& wrt = model.second;
  const TorchModel& m = *std::find_if(Models().begin(), Models().end(),
                                      [&](const TorchModel& t) { return t.name == name; });
  std::string wrt_list;
  for (const std::string& w : wrt) wrt_list += (wrt_list.empty() ? "" : ",") + w;
  for (const std::string& backend : kiln::testing::AvailableBackends()) {
    SECTION(backend) {
      std::string out_dir = kiln::testing::TempPath("torch_grad_" + name + "_" + backend);
      std::string output;
      int code = RunKiln("grad " + ModelDir(m.name) + "/model.onnx --of loss --wrt " + wrt_list +
                             InputFlags(m, ModelDir(m.name)) + " --out " + out_dir + " --backend " +
                             backend,
                         output);
      INFO(output);
      REQUIRE(code == 0);
      for (const std::string& w : wrt)
        CheckClose(ReadOrFail(out_dir + "/grad_" + w + ".npy"),
                   ReadOrFail(ModelDir(m.name) + "/grad_" + w + ".npy"),
                   "d loss / d " + w + " on " + backend);
    }
  }
}

TEST_CASE("ONNX from PyTorch: dynamic axes import as unknown dims, through the C++ API", "[onnx]") {
  // The transformer was exported with dynamic batch and sequence dims: its attention reshapes
  // depend on them at run time. One imported graph runs both input sizes.
  Result<Graph> g = ImportOnnx(ModelDir("transformer") + "/model.onnx");
  INFO((g.ok() ? std::string() : g.error().ToString()));
  REQUIRE(g.ok());
  CHECK(g->FindNode("x")->output_types[0].shape == Shape{-1, -1, 32});
  for (const std::string& backend : kiln::testing::AvailableBackends()) {
    Session session(*g, {.backend = backend});
    for (const std::string dir : {"", "/other"}) {
      std::string data_dir = ModelDir("transformer") + dir;
      Result<std::vector<Tensor>> out =
          session.Run({{"x", ReadOrFail(data_dir + "/x.npy")}}, {"y"});
      INFO(backend << dir << ": " << (out.ok() ? std::string() : out.error().ToString()));
      REQUIRE(out.ok());
      CheckClose(out->at(0), ReadOrFail(data_dir + "/y.npy"),
                 "transformer" + dir + " on " + backend);
    }
  }
}
