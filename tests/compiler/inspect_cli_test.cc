// `kiln inspect --fusion/--memory` as a user runs it: the plan report appears (decisions, step
// counts against one kernel per op, bytes moved, arena bytes), and bad --input specs fail cleanly.
#include <catch2/catch.hpp>

#include "tests/testing/run_command.h"

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
                        Catch::Contains("arena (peak of intermediate values):"));

  CommandResult memory_only = RunCommand(KILN_BINARY, {"inspect", "--memory", model});
  REQUIRE(memory_only.exit_code == 0);
  CHECK_THAT(memory_only.out, Catch::Contains("arena (peak") && !Catch::Contains("fusion"));

  CheckFails(RunCommand(KILN_BINARY, {"inspect", model, "--fusion", "--input", "nope=2x3"}),
             "the model has no input of that name");
  CheckFails(RunCommand(KILN_BINARY, {"inspect", model, "--fusion=yes"}), "takes no value", 2);
}

}  // namespace
}  // namespace kiln
