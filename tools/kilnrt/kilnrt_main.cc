// kilnrt: runs a compiled module (.kmod) with the runtime library alone: no compiler, no LLVM or
// MLIR, no Python. Same input and output rules as `kiln run`.
#include <string>
#include <vector>

#include "runtime/plugins.h"
#include "tools/command.h"
#include "tools/distributed_flags.h"
#include "tools/run_module.h"

namespace kiln::cli {
namespace {

int RunKilnrt(const Command& cmd, const std::vector<std::string>& args) {
  Flags flags;
  flags.Repeated("input").Repeated("fetch").Option("out").Option("threads").Switch("describe");
  flags.Option("backend").Option("repeat").Option("memory-limit").Repeated("plugin");
  DeclareRanksFlags(flags);
  flags.Positional(1, 1);
  if (int code = ParseOrExit(cmd, flags, args); code >= 0) return code;
  for (const std::string& plugin : flags.GetAll("plugin"))
    if (Status s = LoadPlugin(plugin); !s.ok()) return Fail(cmd, s.error());
  if (flags.On("describe")) return DescribeModuleFile(cmd, flags.positional()[0]);
  return RunModuleFile(cmd, flags, flags.positional()[0]);
}

}  // namespace
}  // namespace kiln::cli

int main(int argc, char** argv) {
  using namespace kiln::cli;
  static const Command kilnrt = {
      "", "run a compiled module",
      "usage: kilnrt MODULE.kmod [--input NAME=FILE]... [--fetch NAME]... [--out DIR]\n"
      "              [--threads N] [--backend B] [--repeat N] [--memory-limit SIZE]\n"
      "              [--plugin LIB.so]... [--describe]\n"
      "              [--distributed mpi|nccl [--distributed-timeout S]]\n\n"
      "Runs a module written by `kiln compile` with the runtime alone. Inputs are .npy or ONNX\n"
      "TensorProto .pb files, each of exactly the dtype and shape the module was compiled for.\n"
      "With --out, each output is written to DIR/NAME.npy; without it a summary of each is\n"
      "printed. --fetch picks some of the module's outputs. --describe prints the manifest\n"
      "(target, CPU features, build id) and the signature instead of running. --threads 0 (the\n"
      "default) uses every core this process may use. A module compiled with --target cuda runs\n"
      "on the first GPU (--backend cuda, its default) or on the simulated CUDA device\n"
      "(--backend cuda-sim). --repeat N runs it N more times and prints the median and the\n"
      "minimum time of those runs (inputs in to outputs out) on stderr.\n"
      "--memory-limit SIZE (e.g. 512M, 20G) is the memory the module may use; by default what\n"
      "the process can get (the smaller of MemAvailable and the cgroup's limit). A module whose\n"
      "plan does not fit is refused before it allocates anything, naming its largest buffers.\n"
      "--plugin LIB.so loads a shared library of user-defined ops the module uses (a module\n"
      "that needs one names it, and is refused without it).\n"
      "Under mpirun, --distributed makes each process one rank of a data-parallel run of a\n"
      "module compiled with `kiln compile --train --data-parallel`: rank 0's variables are\n"
      "given to all, each run is one training step whose gradients are all-reduced among the\n"
      "ranks (a cuda module's on its device, by NCCL), \"{rank}\" in an --input\n"
      "file or the --out folder becomes the rank (each rank's shard, each rank's outputs), and\n"
      "otherwise rank 0 alone prints or writes the outputs. A rank that fails ends the others.\n",
      RunKilnrt, "kilnrt"};
  return kilnrt.run(kilnrt, std::vector<std::string>(argv + 1, argv + argc));
}
