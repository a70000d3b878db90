// Compiler features of the CLI as a user runs them: `kiln inspect --fusion/--memory` prints the
// plan report (decisions, step counts against one kernel per op, bytes moved, arena bytes), for a
// training step too (--train), and fails cleanly on bad --input specs; `kiln compile --precision
// bf16` records its precision in the manifest and the module runs.
#include <catch2/catch.hpp>

#include "tests/testing/run_command.h"
#include "tests/testing/temp_path.h"

namespace kiln {
namespace {

using testing::CheckFails;
using testing::CommandResult;
using testing::RunCommand;

TEST_CASE("kiln inspect --fusion and --memory print the compiled plan", "[cli][compiler]") {
  const std::string model = std::string(KILN_TEST_DATA_DIR) + "/onnx/transformer/model.onnx";
  CommandResult r = RunCommand(KILN_BINARY, {"inspect", model, "--fusion", "--memory"});
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("fusion decisions:") && Catch::Contains("generated kernels") &&
                        Catch::Contains("one kernel per op:") && Catch::Contains("bytes moved:") &&
                        Catch::Contains("arena (peak of intermediate values):") &&
                        Catch::Contains("variables bound:"));

  CommandResult memory_only = RunCommand(KILN_BINARY, {"inspect", "--memory", model});
  REQUIRE(memory_only.exit_code == 0);
  CHECK_THAT(memory_only.out, Catch::Contains("arena (peak") && !Catch::Contains("fusion"));

  CheckFails(RunCommand(KILN_BINARY, {"inspect", model, "--fusion", "--input", "nope=2x3"}),
             "the model has no input of that name");
  CheckFails(RunCommand(KILN_BINARY, {"inspect", model, "--fusion=yes"}), "takes no value", 2);
}

TEST_CASE("kiln inspect --train plans a training step", "[cli][compiler]") {
  const std::string model = std::string(KILN_TEST_DATA_DIR) + "/onnx/cnn_loss/model.onnx";
  CommandResult r = RunCommand(KILN_BINARY, {"inspect", model, "--fusion", "--memory", "--train",
                                             "--loss", "loss", "--optimizer", "adam"});
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("training step: the gradient of") &&
                        Catch::Contains("the adam update") && Catch::Contains("gradients/") &&
                        Catch::Contains("outputs computed in place:"));
  CheckFails(RunCommand(KILN_BINARY, {"inspect", model, "--train", "--loss", "loss"}),
             "add --fusion, --memory, --placement or --cost", 2);
  CheckFails(RunCommand(KILN_BINARY, {"inspect", model, "--fusion", "--train"}), "--loss", 2);
  CheckFails(RunCommand(KILN_BINARY, {"inspect", model, "--fusion", "--train", "--loss", "nope"}),
             "nope");
}

TEST_CASE("kiln inspect --cost estimates the CUDA plan on a named GPU", "[cli][compiler]") {
  for (const char* name : {"resnet", "mobilenet", "transformer"}) {
    const std::string model = std::string(KILN_TEST_DATA_DIR) + "/onnx/" + name + "/model.onnx";
    CommandResult r = RunCommand(KILN_BINARY, {"inspect", model, "--cost", "h100"});
    INFO(name << "\nstdout: " << r.out << "\nstderr: " << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::Contains("cost on h100 (peaks 989 TFLOP/s") &&
                          Catch::Contains("\nestimated_ms: ") && Catch::Contains("fused_ms") &&
                          Catch::Contains("\nbf16 ") && Catch::Contains("\nfp16 ") &&
                          Catch::Contains("host steps (not estimated): 0"));
    // Mixed precision places every step on the device too (16-bit convolutions, biases and
    // sums as generated kernels): the last column, host steps, is 0 in every precision.
    for (const char* precision : {"fp32", "tf32", "bf16", "fp16"})
      CHECK_THAT(r.out, Catch::Matches("[^]*\n" + std::string(precision) +
                                       " +[0-9.]+ +[0-9.]+ +[0-9]+ +0\n[^]*"));
  }
  const std::string model = std::string(KILN_TEST_DATA_DIR) + "/onnx/cnn_loss/model.onnx";
  CommandResult train = RunCommand(KILN_BINARY, {"inspect", model, "--cost", "a100", "--train",
                                                 "--loss", "loss", "--optimizer", "adam"});
  INFO("stdout: " << train.out << "\nstderr: " << train.err);
  REQUIRE(train.exit_code == 0);
  CHECK_THAT(train.out, Catch::Contains("cost on a100") && Catch::Contains("estimated_ms: "));
  CheckFails(RunCommand(KILN_BINARY, {"inspect", model, "--cost", "v100"}),
             "unknown GPU 'v100' (the cost model knows h100, h200 and a100)", 2);
  CheckFails(RunCommand(KILN_BINARY, {"inspect", model, "--cost", "h100", "--backend", "cpu"}),
             "--cost estimates a CUDA plan", 2);
}

TEST_CASE("kiln compile --precision bf16 records it and the module runs", "[cli][precision]") {
  const std::string dir = std::string(KILN_TEST_DATA_DIR) + "/onnx/resnet";
  const std::string module = testing::TempPath("resnet_bf16.kmod");
  CommandResult compiled =
      RunCommand(KILN_BINARY, {"compile", dir + "/model.onnx", "-o", module, "--input",
                               "x=2x3x64x64", "--precision", "bf16"});
  INFO(compiled.err);
  REQUIRE(compiled.exit_code == 0);
  CommandResult described = RunCommand(KILNRT_BINARY, {module, "--describe"});
  REQUIRE(described.exit_code == 0);
  CHECK_THAT(described.out, Catch::Contains("precision bf16"));
  CommandResult ran = RunCommand(KILNRT_BINARY, {module, "--input", "x=" + dir + "/x.npy"});
  INFO(ran.err);
  REQUIRE(ran.exit_code == 0);
  CHECK_THAT(ran.out, Catch::StartsWith("y: f32[2, 10]"));
  CheckFails(RunCommand(KILN_BINARY, {"run", module, "--precision", "fp16"}),
             "--precision does not apply to a compiled module (.kmod)", 2);
}

}  // namespace
}  // namespace kiln
