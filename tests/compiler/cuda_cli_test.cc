// The cuda backends from the command line: `kiln inspect --placement --backend cuda` lists where
// each step runs and ends with the summary line; `kiln run --backend cuda-sim` gives the reference
// backend's outputs; KILN_PROFILE times device steps; `kiln run --backend cuda` on a machine
// without a driver exits 1 with one line.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>

#include "ir/io/npy.h"
#include "runtime/cuda/driver_api.h"
#include "tests/testing/differential.h"
#include "tests/testing/gradcheck_op.h"
#include "tests/testing/run_command.h"
#include "tests/testing/temp_path.h"

namespace kiln {
namespace {

using testing::CheckFails;
using testing::CommandResult;
using testing::RunCommand;

TEST_CASE("kiln inspect --placement --backend cuda lists steps, copies and the summary",
          "[cli][cuda]") {
  const std::string model = std::string(KILN_TEST_DATA_DIR) + "/onnx/transformer/model.onnx";
  CommandResult r = RunCommand(KILN_BINARY, {"inspect", model, "--placement", "--backend", "cuda"});
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("placement (cuda):") && Catch::Contains("  device  kernel") &&
                        Catch::Contains("  copy    to_device") &&
                        Catch::Contains("  copy    to_host") &&
                        Catch::Matches("[^]*\nplacement: [1-9][0-9]* device nodes, [0-9]+ host "
                                       "nodes, [1-9][0-9]* copies \\([0-9]+ bytes\\)\n$"));
  CheckFails(RunCommand(KILN_BINARY, {"inspect", model, "--placement"}), "add --backend cuda", 2);
  CheckFails(RunCommand(KILN_BINARY, {"inspect", model, "--fusion", "--backend", "tpu"}),
             "plans are shown for cpu, cuda and cuda-sim", 2);
}

TEST_CASE("kiln run --backend cuda-sim gives the reference backend's outputs", "[cli][cuda]") {
  const std::string dir = std::string(KILN_TEST_DATA_DIR) + "/onnx/resnet";
  std::map<std::string, Tensor> out;
  for (const std::string backend : {"reference", "cuda-sim"}) {
    const std::string to = testing::TempPath("run_" + backend);
    CommandResult r =
        RunCommand(KILN_BINARY, {"run", dir + "/model.onnx", "--input", "x=" + dir + "/x.npy",
                                 "--backend", backend, "--out", to});
    INFO(backend << ": " << r.err);
    REQUIRE(r.exit_code == 0);
    Result<Tensor> y = ReadNpy(to + "/y.npy");
    REQUIRE(y.ok());
    out[backend] = *y;
  }
  std::string why;
  const bool close = testing::CloseForDType(out["reference"], out["cuda-sim"], &why);
  INFO(why);
  CHECK(close);
}

TEST_CASE("kiln compile --target cuda, then kilnrt --backend cuda-sim gives kiln run's bits",
          "[cli][cuda]") {
  const std::string dir = std::string(KILN_TEST_DATA_DIR) + "/onnx/transformer";
  const std::string module = testing::TempPath("transformer_cuda.kmod");
  CommandResult compiled = RunCommand(KILN_BINARY, {"compile", dir + "/model.onnx", "--target",
                                                    "cuda", "--input", "x=2x5x32", "-o", module});
  INFO(compiled.err);
  REQUIRE(compiled.exit_code == 0);
  CommandResult described = RunCommand(KILNRT_BINARY, {module, "--describe"});
  CHECK_THAT(described.out, Catch::Contains("target cuda") &&
                                Catch::Matches("[^]*device code sm_80: [1-9][0-9]* bytes of PTX, "
                                               "[1-9][0-9]* bytes of cubin[^]*") &&
                                Catch::Contains("device code sm_90"));
  const std::string aot = testing::TempPath("aot_cuda"), jit = testing::TempPath("jit_cuda");
  CommandResult rt = RunCommand(KILNRT_BINARY, {module, "--backend", "cuda-sim", "--input",
                                                "x=" + dir + "/x.npy", "--out", aot});
  INFO(rt.err);
  REQUIRE(rt.exit_code == 0);
  CommandResult run = RunCommand(KILN_BINARY, {"run", dir + "/model.onnx", "--backend", "cuda-sim",
                                               "--input", "x=" + dir + "/x.npy", "--out", jit});
  REQUIRE(run.exit_code == 0);
  Result<Tensor> a = ReadNpy(aot + "/y.npy"), b = ReadNpy(jit + "/y.npy");
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->BitwiseEquals(*b));
  CheckFails(
      RunCommand(KILNRT_BINARY, {module, "--backend", "cpu", "--input", "x=" + dir + "/x.npy"}),
      "cannot run on backend 'cpu'");
  CheckFails(
      RunCommand(KILN_BINARY, {"compile", dir + "/model.onnx", "--target", "tpu", "-o", module}),
      "kiln compiles for cpu and cuda", 2);
}

TEST_CASE("KILN_PROFILE on a cuda module times device steps and reports their rates",
          "[cli][cuda]") {
  const std::string module = testing::TempPath("gemm_cuda.kmod");
  CommandResult compiled = RunCommand(
      KILN_BINARY, {"compile", std::string(KILN_SOURCE_DIR) + "/scripts/gpu_bundle/gemm.kgraph.txt",
                    "--target", "cuda", "--input", "x=32x32", "-o", module});
  INFO(compiled.err);
  REQUIRE(compiled.exit_code == 0);
  const std::string x = testing::TempPath("gemm_x.npy");
  REQUIRE(WriteNpy(x, testing::RandomTensor(Shape{32, 32}, 7).CastTo(f32)).ok());
  setenv("KILN_PROFILE", "1", 1);
  CommandResult run = RunCommand(
      KILNRT_BINARY, {module, "--backend", "cuda-sim", "--input", "x=" + x, "--repeat", "2"});
  unsetenv("KILN_PROFILE");
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  CHECK_THAT(run.err, Catch::Contains("KILN_PROFILE: 3 steps, 2 runs after the first") &&
                          Catch::Matches("[^]*TFLOP/s  device library gemm f32[^]*") &&
                          Catch::Matches("[^]*GB/s  copy to_device f32[^]*"));
}

TEST_CASE("kiln --tf32: inspect marks f32 products, and a tf32 module gives kiln run --tf32 bits",
          "[cli][cuda]") {
  const std::string model = std::string(KILN_SOURCE_DIR) + "/scripts/gpu_bundle/gemm.kgraph.txt";
  CommandResult inspected = RunCommand(KILN_BINARY, {"inspect", model, "--placement", "--backend",
                                                     "cuda", "--input", "x=32x32", "--tf32"});
  INFO(inspected.err);
  REQUIRE(inspected.exit_code == 0);
  CHECK_THAT(inspected.out, Catch::Contains("device  library   gemm (tf32)"));
  const std::string x = testing::TempPath("tf32_x.npy");
  REQUIRE(WriteNpy(x, testing::RandomTensor(Shape{32, 32}, 3).CastTo(f32)).ok());
  std::map<std::string, Tensor> out;
  for (const std::string tf32 : {"", "--tf32"}) {
    const std::string module = testing::TempPath("gemm" + tf32 + ".kmod");
    std::vector<std::string> args = {"compile", model,     "--target", "cuda",
                                     "--input", "x=32x32", "-o",       module};
    if (!tf32.empty()) args.push_back(tf32);
    CommandResult compiled = RunCommand(KILN_BINARY, args);
    INFO(compiled.err);
    REQUIRE(compiled.exit_code == 0);
    const std::string aot = testing::TempPath("aot" + tf32), jit = testing::TempPath("jit" + tf32);
    CommandResult rt = RunCommand(
        KILNRT_BINARY, {module, "--backend", "cuda-sim", "--input", "x=" + x, "--out", aot});
    INFO(rt.err);
    REQUIRE(rt.exit_code == 0);
    args = {"run", model, "--backend", "cuda-sim", "--input", "x=" + x, "--out", jit};
    if (!tf32.empty()) args.push_back(tf32);
    CommandResult run = RunCommand(KILN_BINARY, args);
    INFO(run.err);
    REQUIRE(run.exit_code == 0);
    Result<Tensor> a = ReadNpy(aot + "/y.npy"), b = ReadNpy(jit + "/y.npy");
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(a->BitwiseEquals(*b));
    out[tf32] = *a;
  }
  CHECK_FALSE(out[""].BitwiseEquals(out["--tf32"]));
}

TEST_CASE("kiln run --backend cuda without a driver exits 1 with one line", "[cli][cuda]") {
  if (cuda::LoadDriver().ok()) {
    WARN("SKIPPED: this machine has a CUDA driver");
    return;
  }
  const std::string dir = std::string(KILN_TEST_DATA_DIR) + "/onnx/resnet";
  CommandResult r = RunCommand(KILN_BINARY, {"run", dir + "/model.onnx", "--input",
                                             "x=" + dir + "/x.npy", "--backend", "cuda"});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::StartsWith("kiln run: error: no CUDA driver: cannot load libcuda.so.1"));
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}

}  // namespace
}  // namespace kiln
