// `kiln compile` and `kilnrt` as a user runs them: a module compiled from a model gives bitwise the
// outputs `kiln run` gives on the cpu backend, through kilnrt and through `kiln run MODULE.kmod`;
// bad modules, inputs and flags fail with one clear line and the right exit code.
#include <catch2/catch.hpp>
#include <cstring>
#include <fstream>

#include "ir/io/npy.h"
#include "tests/testing/run_command.h"
#include "tests/testing/temp_path.h"

namespace kiln {
namespace {

using testing::CheckFails;
using testing::CommandResult;
using testing::RunCommand;

Tensor Read(const std::string& path) {
  Result<Tensor> t = ReadNpy(path);
  INFO(path);
  REQUIRE(t.ok());
  return std::move(*t);
}

void CheckOk(const CommandResult& r) {
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.exit_code == 0);
}

bool SameBits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.byte_size()) == 0;
}

TEST_CASE("kilnrt: a compiled ONNX ResNet gives bitwise what kiln run gives", "[aot][cli]") {
  const std::string dir = std::string(KILN_TEST_DATA_DIR) + "/onnx/resnet";
  const std::string module = testing::TempPath("resnet.kmod");
  const std::string input = "x=" + dir + "/x.npy";
  CheckOk(RunCommand(KILN_BINARY,
                     {"compile", dir + "/model.onnx", "-o", module, "--input", "x=2x3x64x64"}));
  CommandResult described = RunCommand(KILNRT_BINARY, {module, "--describe"});
  CheckOk(described);
  CHECK_THAT(described.out, Catch::Contains("input  x: f32[2, 3, 64, 64]") &&
                                Catch::Contains("output y: f32[2, 10]") &&
                                Catch::Contains("target cpu"));
  const std::string rt = testing::TempPath("rt"), jit = testing::TempPath("jit"),
                    run_module = testing::TempPath("run_module");
  CheckOk(RunCommand(KILNRT_BINARY, {module, "--input", input, "--out", rt}));
  CheckOk(RunCommand(KILN_BINARY, {"run", module, "--input", input, "--out", run_module}));
  CheckOk(RunCommand(KILN_BINARY, {"run", dir + "/model.onnx", "--input", input, "--out", jit,
                                   "--backend", "cpu"}));
  Tensor want = Read(jit + "/y.npy");
  CHECK(SameBits(Read(rt + "/y.npy"), want));
  CHECK(SameBits(Read(run_module + "/y.npy"), want));

  // Failures: one line, exit 1 (or 2 for usage).
  CheckFails(RunCommand(KILNRT_BINARY, {}), "expected 1 argument(s), got 0", 2);
  CheckFails(RunCommand(KILNRT_BINARY, {testing::TempPath("missing.kmod")}), "missing.kmod");
  CheckFails(RunCommand(KILNRT_BINARY, {module}), "missing input 'x' (f32[2, 3, 64, 64])");
  CheckFails(RunCommand(KILNRT_BINARY, {module, "--input", input, "--fetch", "z"}),
             "'z' is not an output of the module");
  CheckFails(RunCommand(KILNRT_BINARY, {module, "--input", input, "--threads", "-1"}),
             "--threads must be a whole number", 2);
  std::string bytes;
  {
    std::ifstream in(module, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::string truncated = testing::TempPath("truncated.kmod");
  std::ofstream(truncated, std::ios::binary) << bytes.substr(0, bytes.size() - 100);
  CheckFails(RunCommand(KILNRT_BINARY, {truncated, "--input", input}), "truncated.kmod");
  CheckFails(RunCommand(KILN_BINARY, {"run", module, "--backend", "reference"}),
             "cannot run on backend 'reference'");
  CheckFails(RunCommand(KILN_BINARY, {"compile", dir + "/model.onnx", "-o", module}),
             "give them as NAME=SHAPE");
  CheckFails(
      RunCommand(KILN_BINARY, {"compile", dir + "/model.onnx", "-o", module, "--target", "tpu"}),
      "kiln compiles for cpu and cuda", 2);
}

}  // namespace
}  // namespace kiln
