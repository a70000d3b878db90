// `kiln opt`, run as a user would: exit codes (0 ok, 1 failure, 2 usage), one line on stderr for
// each failure, the golden results through the command line, and $KILN_DUMP_DIR.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>

#include "ir/file_util.h"
#include "ir/serialize.h"
#include "models/digits_cnn.h"
#include "tests/testing/run_command.h"
#include "tests/testing/temp_path.h"

using namespace kiln;

namespace {

using testing::CheckFails;
using testing::CommandResult;
using testing::TempPath;

CommandResult Opt(std::vector<std::string> args) {
  args.insert(args.begin(), "opt");
  return testing::RunCommand(KILN_BINARY, args);
}

void CheckOk(const CommandResult& r) {
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK_FALSE(r.signaled);
  CHECK(r.exit_code == 0);
  CHECK(r.err.empty());
}

std::string GoldenCase(const std::string& pass, const std::string& name) {
  return std::string(KILN_SOURCE_DIR) + "/tests/passes/golden/" + pass + "/" + name;
}

// The digits CNN as a text graph.
std::string DigitsPath() {
  static std::string path = [] {
    GraphBuilder g;
    models::BuildDigitsCnn(g);
    std::string p = TempPath("opt_digits.kgraph.txt");
    REQUIRE(SaveGraph(*g.Build(), p).ok());
    return p;
  }();
  return path;
}

}  // namespace

TEST_CASE("kiln opt: the default pipeline, text and binary output", "[passes][cli]") {
  std::string text_out = TempPath("opt_out.kgraph.txt");
  CommandResult r = Opt({DigitsPath(), "-o", text_out});
  CheckOk(r);
  CHECK_THAT(r.out, Catch::StartsWith("constant-fold: ") && Catch::Contains("\nsimplify: ") &&
                        Catch::Contains("\ncse: ") && Catch::Contains("\ndce: ") &&
                        Catch::Contains("\nwrote " + text_out + " ("));
  CHECK(LoadGraph(text_out).ok());

  std::string binary_out = TempPath("opt_out.kgraph");
  CheckOk(Opt({DigitsPath(), "--passes=cse,dce", "--out", binary_out}));
  Result<Graph> binary = LoadGraph(binary_out);
  REQUIRE(binary.ok());
  CHECK(binary->outputs().size() == 2);
}

TEST_CASE("kiln opt: one pass on a golden input gives the golden output", "[passes][cli]") {
  std::string out = TempPath("opt_identity.kgraph.txt");
  CommandResult r =
      Opt({GoldenCase("simplify", "identity.in.kgraph.txt"), "--passes", "simplify", "-o", out});
  CheckOk(r);
  CHECK_THAT(r.out, Catch::StartsWith("simplify: changed ("));
  CHECK(ReadFileToString(out, 1 << 20).value() ==
        ReadFileToString(GoldenCase("simplify", "identity.out.kgraph.txt"), 1 << 20).value());
}

TEST_CASE("kiln opt: $KILN_DUMP_DIR gets the graph after each pass", "[passes][cli]") {
  std::string dir = TempPath("opt_dumps");
  setenv("KILN_DUMP_DIR", dir.c_str(), 1);
  CommandResult r = Opt({DigitsPath(), "--passes=simplify,dce", "-o", TempPath("o.kgraph")});
  unsetenv("KILN_DUMP_DIR");
  CheckOk(r);
  for (const char* file : {"00-input", "01-simplify", "02-dce"})
    CHECK(LoadGraph(dir + "/" + file + ".kgraph.txt").ok());
}

TEST_CASE("kiln opt: usage errors exit 2 with one line", "[passes][cli]") {
  std::string out = TempPath("never.kgraph");
  CheckFails(Opt({DigitsPath(), "--passes=cse,fold", "-o", out}),
             "unknown pass 'fold' (available: check-numerics, constant-fold, conv-taps, cse, dce, "
             "fold-batch-norm, mixed-precision, simplify, sync-batch-norm)",
             2);
  CheckFails(Opt({DigitsPath(), "--passes=cse,,dce", "-o", out}), "has an empty pass name", 2);
  CheckFails(Opt({DigitsPath(), "--passes=", "-o", out}), "has an empty pass name", 2);
  CheckFails(Opt({DigitsPath()}), "missing -o OUT", 2);
  CheckFails(Opt({DigitsPath(), "-o", TempPath("x.onnx")}), "must end in .kgraph or .kgraph.txt",
             2);
  CheckFails(Opt({"-o", out}), "", 2);
  CheckFails(Opt({DigitsPath(), "--frobnicate", "-o", out}), "frobnicate", 2);
  CHECK_FALSE(std::ifstream(out).good());
}

TEST_CASE("kiln opt: bad models fail with exit 1 and one line", "[passes][cli]") {
  std::string out = TempPath("never.kgraph");
  CheckFails(Opt({TempPath("no_such_model.kgraph"), "-o", out}), "no_such_model.kgraph");
  std::string garbage = TempPath("garbage.kgraph.txt");
  std::ofstream(garbage) << "nodes { name: \"x\" op: \n";
  CheckFails(Opt({garbage, "-o", out}), "not a valid kiln text graph");
  std::string invalid = TempPath("invalid.kgraph.txt");
  std::ofstream(invalid) << "format_version: 1\nnodes { name: \"r\" op: \"Relu\" inputs: \"x\" }\n";
  CheckFails(Opt({invalid, "-o", out}), "does not exist");
  CheckFails(Opt({DigitsPath(), "-o", TempPath("no_such_dir/out.kgraph")}), "no_such_dir");
  CHECK_FALSE(std::ifstream(out).good());
}

TEST_CASE("kiln opt: --help lists the passes and the default pipeline", "[passes][cli]") {
  CommandResult r = Opt({"--help"});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::StartsWith("usage: kiln opt MODEL") &&
                        Catch::Contains("default pipeline runs: constant-fold,simplify,cse,dce") &&
                        Catch::Contains("\n  constant-fold  ") && Catch::Contains("\n  cse  ") &&
                        Catch::Contains("KILN_DUMP_DIR"));
  CommandResult help = testing::RunCommand(KILN_BINARY, {"help"});
  CHECK_THAT(help.out, Catch::Contains("\n  opt "));
}
