// kiln train --distributed mpi under mpirun, as a user runs it: two ranks on shards of each
// global batch give, epoch by epoch, the losses and the checkpoint one process gives on whole
// batches; a rank killed mid-epoch ends the run with a message naming it, and the last checkpoint
// still loads; a rank that runs another batch size is refused by name. Needs MPI (scripts/setup.sh
// installs OpenMPI); without it only the refusals run.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "ir/io/npy.h"
#include "ir/layers.h"
#include "ir/ops/math.h"
#include "ir/ops/nn.h"
#include "ir/serialize.h"
#include "runtime/checkpoint.h"
#include "tests/testing/backends.h"
#include "tests/testing/run_command.h"
#include "tests/testing/temp_path.h"

using namespace kiln;
using kiln::testing::CheckFails;
using kiln::testing::CommandResult;
using kiln::testing::EpochLosses;

namespace {

std::string Dir() {
  static std::string dir = [] {
    const std::string path = kiln::testing::TempPath("distributed");
    std::filesystem::create_directories(path);
    return path;
  }();
  return dir;
}

// A classifier without batch statistics (each rank's BatchNorm would see only its shard), on 301
// examples: with --batch 64 the last batch has 45, split 22 and 23.
struct Problem {
  std::string model, images, labels;
  std::string normalized;  // the same with a training BatchNorm after fc1
};
const Problem& Classifier() {
  static const Problem problem = [] {
    Problem p{Dir() + "/mlp.kgraph", Dir() + "/x.npy", Dir() + "/y.npy", Dir() + "/mlp_bn.kgraph"};
    for (bool normalized : {false, true}) {
      GraphBuilder g;
      Value x = g.Placeholder("x", f32, {-1, 16});
      Value y = g.Placeholder("y", i64, {-1});
      // A bias before a BatchNorm would get rounding noise for a gradient, which Adam inflates.
      Value h = nn::Dense(g.Scope("fc1"), x, 32, {.use_bias = !normalized});
      if (normalized) h = nn::BatchNorm(g.Scope("bn"), h, {.training = true});
      g.Output("loss", SoftmaxCrossEntropy(nn::Dense(g.Scope("fc2"), Tanh(h), 4), y));
      REQUIRE(SaveGraph(*g.Build(), normalized ? p.normalized : p.model).ok());
    }
    std::vector<float> xs;
    std::vector<int64_t> ys;
    for (int r = 0; r < 301; ++r) {
      double best = -1e9;
      int64_t label = 0;
      for (int f = 0; f < 16; ++f) xs.push_back(static_cast<float>(std::sin(0.7 * r + 1.9 * f)));
      for (int c = 0; c < 4; ++c) {
        double score = 0;
        for (int f = 0; f < 16; ++f) score += xs[r * 16 + f] * std::cos(1.3 * c + 0.4 * f);
        if (score > best) best = score, label = c;
      }
      ys.push_back(label);
    }
    REQUIRE(WriteNpy(p.images, Tensor::FromVector<float>({301, 16}, xs)).ok());
    REQUIRE(WriteNpy(p.labels, Tensor::FromVector<int64_t>({301}, ys)).ok());
    return p;
  }();
  return problem;
}

std::vector<std::string> TrainArgs(const std::string& checkpoint, int epochs,
                                   bool normalized = false) {
  const Problem& p = Classifier();
  return {"train",        normalized ? p.normalized : p.model,
          "--loss",       "loss",
          "--data",       "x=" + p.images,
          "--data",       "y=" + p.labels,
          "--optimizer",  "adam",
          "--lr",         "0.01",
          "--clip-norm",  "1",
          "--batch",      "64",
          "--epochs",     std::to_string(epochs),
          "--threads",    "1",
          "--checkpoint", checkpoint};
}

#ifdef KILN_MPIEXEC
// mpirun's options: as root it needs consent; two ranks on two cores (or fewer) need
// oversubscription; under LeakSanitizer the ranks leave MPI's own leaks unreported (OpenMPI frees
// little of what its components allocate).
std::vector<std::string> MpiOptions() {
  setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  std::string asan = "detect_leaks=0";
  if (const char* options = std::getenv("ASAN_OPTIONS"); options && *options)
    asan = std::string(options) + ":" + asan;
  return {"--oversubscribe", "-x", "ASAN_OPTIONS=" + asan};
}

CommandResult MpiRun(int ranks, const std::vector<std::string>& args) {
  std::vector<std::string> all = MpiOptions();
  all.insert(all.end(), {"-n", std::to_string(ranks), KILN_BINARY});
  all.insert(all.end(), args.begin(), args.end());
  return kiln::testing::RunCommand(KILN_MPIEXEC, all);
}

// The processes whose parent is `parent` and whose environment says they are MPI rank `rank`.
std::vector<pid_t> RankProcesses(pid_t parent, int rank) {
  std::vector<pid_t> found;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(stat)), {});
    const size_t close = text.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(text.substr(close + 2));
    char state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid != parent) continue;
    std::ifstream env(entry.path() / "environ");
    std::string vars((std::istreambuf_iterator<char>(env)), {});
    if (vars.find(std::string("OMPI_COMM_WORLD_RANK=") + std::to_string(rank) + '\0') !=
        std::string::npos)
      found.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return found;
}
#endif

}  // namespace

#ifdef KILN_MPIEXEC
// Trains 3 epochs in one process and under mpirun with 2 ranks (`--backend backend`, the default
// where empty; `--distributed kind`, and `extra`): the same mean loss epoch by epoch and the same
// checkpoint, to 1e-5.
void CheckTwoRanksTrainAsOne(const std::string& backend, const std::string& kind,
                             bool normalized = false, const std::vector<std::string>& extra = {}) {
  const std::string tag = kind + (normalized ? "-bn" : "");
  const std::string one = Dir() + "/one-" + tag + ".kckpt", two = Dir() + "/two-" + tag + ".kckpt";
  std::vector<std::string> backend_flag;
  if (!backend.empty()) backend_flag = {"--backend", backend};
  std::vector<std::string> args = TrainArgs(one, 3, normalized);
  args.insert(args.end(), backend_flag.begin(), backend_flag.end());
  CommandResult single = kiln::testing::RunCommand(KILN_BINARY, args);
  INFO(single.out << single.err);
  REQUIRE(single.exit_code == 0);
  args = TrainArgs(two, 3, normalized);
  args.insert(args.end(), backend_flag.begin(), backend_flag.end());
  args.insert(args.end(), {"--distributed", kind});
  args.insert(args.end(), extra.begin(), extra.end());
  CommandResult ranks = MpiRun(2, args);
  INFO(ranks.out << ranks.err);
  REQUIRE(ranks.exit_code == 0);
  CHECK_THAT(ranks.out, Catch::Contains(kind == "mpi" ? "data-parallel over 2 ranks (mpi)"
                                                      : "(mpi, gradients by nccl)"));
  const std::vector<double> want = EpochLosses(single.out), got = EpochLosses(ranks.out);
  REQUIRE(want.size() == 3);
  REQUIRE(got.size() == 3);  // rank 0 alone prints
  for (size_t e = 0; e < want.size(); ++e) CHECK(std::abs(got[e] / want[e] - 1) <= 1e-5);
  auto w1 = ReadCheckpoint(one), w2 = ReadCheckpoint(two);
  REQUIRE(w1.ok());
  REQUIRE(w2.ok());
  REQUIRE(w1->size() == w2->size());
  for (const auto& [name, t] : *w1) {
    INFO(name);
    REQUIRE(w2->count(name));
    for (int64_t i = 0; i < t.num_elements(); ++i)
      CHECK(w2->at(name).GetDouble(i) == Approx(t.GetDouble(i)).epsilon(1e-5).margin(1e-6));
  }
}

TEST_CASE("distributed: two MPI ranks train as one process on the whole batch",
          "[distributed][mpi]") {
  CheckTwoRanksTrainAsOne("", "mpi");
}

TEST_CASE("distributed: with --sync-bn, BatchNorm over two ranks' shards trains as one process",
          "[distributed][mpi]") {
  // The last batch of each epoch splits 22 and 23: the statistics and their gradients are
  // weighed by each rank's share.
  CheckTwoRanksTrainAsOne("", "mpi", /*normalized=*/true, {"--sync-bn"});
}

TEST_CASE("distributed: two ranks on cuda-sim all-reduce through NCCL's stand-in, as one process",
          "[distributed][mpi][cuda]") {
  const std::vector<std::string> backends = kiln::testing::AvailableBackends();
  if (std::find(backends.begin(), backends.end(), "cuda-sim") == backends.end()) {
    WARN("no cuda-sim backend in this build");
    return;
  }
  CheckTwoRanksTrainAsOne("cuda-sim", "nccl");
}

TEST_CASE("distributed: a module compiled data-parallel trains under mpirun as one on the whole",
          "[distributed][mpi][aot]") {
  const std::vector<std::string> backends = kiln::testing::AvailableBackends();
  if (std::find(backends.begin(), backends.end(), "cpu") == backends.end()) {
    WARN("no compiler in this build: kiln compile cannot run");
    return;
  }
  const Problem& p = Classifier();
  // The first 64 examples: the whole batch, and its halves in files named by rank.
  Result<Tensor> x = ReadNpy(p.images), y = ReadNpy(p.labels);
  REQUIRE(x.ok());
  REQUIRE(y.ok());
  auto rows = [](const Tensor& t, int64_t begin, int64_t end) {
    std::vector<int64_t> dims = t.shape().dims();
    const int64_t row_bytes = t.byte_size() / dims[0];
    dims[0] = end - begin;
    Tensor part(t.dtype(), Shape(dims));
    std::memcpy(part.raw_data(), static_cast<const char*>(t.raw_data()) + begin * row_bytes,
                static_cast<size_t>(part.byte_size()));
    return part;
  };
  const std::string d = Dir() + "/module";
  std::filesystem::create_directories(d);
  REQUIRE(WriteNpy(d + "/x.npy", rows(*x, 0, 64)).ok());
  REQUIRE(WriteNpy(d + "/y.npy", rows(*y, 0, 64)).ok());
  for (int r = 0; r < 2; ++r) {
    REQUIRE(WriteNpy(d + "/x" + std::to_string(r) + ".npy", rows(*x, 32 * r, 32 * r + 32)).ok());
    REQUIRE(WriteNpy(d + "/y" + std::to_string(r) + ".npy", rows(*y, 32 * r, 32 * r + 32)).ok());
  }
  auto compile = [&](const std::string& out, int64_t batch, std::vector<std::string> extra) {
    std::vector<std::string> args = {"compile",
                                     p.model,
                                     "--train",
                                     "--loss",
                                     "loss",
                                     "--optimizer",
                                     "adam",
                                     "--lr",
                                     "0.01",
                                     "--input",
                                     "x=" + std::to_string(batch) + "x16",
                                     "--input",
                                     "y=" + std::to_string(batch),
                                     "-o",
                                     out};
    args.insert(args.end(), extra.begin(), extra.end());
    CommandResult compiled = kiln::testing::RunCommand(KILN_BINARY, args);
    INFO(compiled.out << compiled.err);
    REQUIRE(compiled.exit_code == 0);
  };
  compile(d + "/one.kmod", 64, {});
  compile(d + "/ranks.kmod", 32, {"--data-parallel", "--bucket-size", "1K"});
  // Three steps each; the outputs are the third step's losses, before its update.
  CommandResult one = kiln::testing::RunCommand(
      KILNRT_BINARY, {d + "/one.kmod", "--input", "x=" + d + "/x.npy", "--input",
                      "y=" + d + "/y.npy", "--repeat", "2", "--threads", "1", "--out", d + "/one"});
  INFO(one.out << one.err);
  REQUIRE(one.exit_code == 0);
  std::vector<std::string> args = MpiOptions();
  args.insert(args.end(),
              {"-n", "2", KILNRT_BINARY, d + "/ranks.kmod", "--distributed", "mpi", "--input",
               "x=" + d + "/x{rank}.npy", "--input", "y=" + d + "/y{rank}.npy", "--repeat", "2",
               "--threads", "1", "--out", d + "/two{rank}"});
  CommandResult two = kiln::testing::RunCommand(KILN_MPIEXEC, args);
  INFO(two.out << two.err);
  REQUIRE(two.exit_code == 0);
  Result<Tensor> want = ReadNpy(d + "/one/SoftmaxCrossEntropy_0.npy");
  Result<Tensor> l0 = ReadNpy(d + "/two0/SoftmaxCrossEntropy_0.npy"),
                 l1 = ReadNpy(d + "/two1/SoftmaxCrossEntropy_0.npy");
  REQUIRE(want.ok());
  REQUIRE(l0.ok());
  REQUIRE(l1.ok());
  // Each rank's loss is its half's mean: the whole batch's is their mean.
  const double got = (l0->GetDouble(0) + l1->GetDouble(0)) / 2;
  CHECK(got == Approx(want->GetDouble(0)).epsilon(1e-5));
  CHECK(l0->GetDouble(0) != l1->GetDouble(0));  // the ranks did run different shards
}

TEST_CASE("distributed: kiln inspect shows a data-parallel step's all-reduces", "[distributed]") {
  const std::vector<std::string> backends = kiln::testing::AvailableBackends();
  if (std::find(backends.begin(), backends.end(), "cpu") == backends.end()) {
    WARN("no compiler in this build: kiln inspect --fusion cannot plan");
    return;
  }
  CommandResult r = kiln::testing::RunCommand(
      KILN_BINARY, {"inspect", Classifier().normalized, "--train", "--loss", "loss",
                    "--data-parallel", "--sync-bn", "--fusion"});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("AllReduce 'optimizer/data_parallel/all_reduce'"));
  CHECK_THAT(r.out, Catch::Contains("AllReduce 'bn/BatchNorm/sync/AllReduce'"));
}

TEST_CASE("distributed: a rank killed mid-epoch ends the run naming it, the checkpoint loads",
          "[distributed][mpi]") {
  const std::string ckpt = Dir() + "/killed.kckpt", log = Dir() + "/killed.log";
  std::filesystem::remove(ckpt);
  std::vector<std::string> args = {KILN_MPIEXEC};
  for (const std::string& o : MpiOptions()) args.push_back(o);
  args.insert(args.end(), {"-n", "2", KILN_BINARY});
  for (const std::string& a : TrainArgs(ckpt, 100000)) args.push_back(a);
  args.insert(args.end(), {"--distributed", "mpi", "--quiet"});
  const pid_t mpirun = fork();
  REQUIRE(mpirun >= 0);
  if (mpirun == 0) {
    FILE* out = std::fopen(log.c_str(), "w");
    dup2(fileno(out), 1);
    dup2(fileno(out), 2);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(args[0].c_str(), argv.data());
    _exit(127);
  }
  using Clock = std::chrono::steady_clock;
  const auto started = Clock::now();
  while (!std::filesystem::exists(ckpt) && Clock::now() - started < std::chrono::seconds(120))
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  REQUIRE(std::filesystem::exists(ckpt));
  std::vector<pid_t> victims = RankProcesses(mpirun, 1);
  REQUIRE(victims.size() == 1);
  REQUIRE(kill(victims[0], SIGKILL) == 0);
  const auto killed = Clock::now();
  int status = 0;
  pid_t done = 0;
  while ((done = waitpid(mpirun, &status, WNOHANG)) == 0 &&
         Clock::now() - killed < std::chrono::seconds(90))
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (done == 0) kill(mpirun, SIGKILL), waitpid(mpirun, &status, 0);
  const double seconds = std::chrono::duration<double>(Clock::now() - killed).count();
  std::ifstream in(log);
  const std::string output((std::istreambuf_iterator<char>(in)), {});
  INFO(output);
  CHECK(done == mpirun);
  CHECK(seconds < 60);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) != 0));
  CHECK_THAT(output, Catch::Contains("rank 1"));
  // The checkpoint rank 0 last wrote (atomically) loads, and training goes on from it.
  CHECK(ReadCheckpoint(ckpt).ok());
  std::vector<std::string> resume = TrainArgs(ckpt, 1);
  resume.push_back("--resume");
  CommandResult resumed = kiln::testing::RunCommand(KILN_BINARY, resume);
  INFO(resumed.out << resumed.err);
  CHECK(resumed.exit_code == 0);
}

TEST_CASE("distributed: ranks that disagree on the batch are refused, naming the rank",
          "[distributed][mpi]") {
  // An MPMD launch: rank 0 with --batch 64, rank 1 with --batch 32.
  const std::string ckpt = Dir() + "/disagree.kckpt";
  std::vector<std::string> rank0 = TrainArgs(ckpt, 1), rank1 = TrainArgs(ckpt, 1);
  rank1[std::find(rank1.begin(), rank1.end(), "--batch") - rank1.begin() + 1] = "32";
  std::vector<std::string> args = MpiOptions();
  args.insert(args.end(), {"-n", "1", KILN_BINARY});
  args.insert(args.end(), rank0.begin(), rank0.end());
  args.insert(args.end(), {"--distributed", "mpi", ":", "-n", "1", KILN_BINARY});
  args.insert(args.end(), rank1.begin(), rank1.end());
  args.insert(args.end(), {"--distributed", "mpi"});
  CommandResult r = kiln::testing::RunCommand(KILN_MPIEXEC, args);
  INFO(r.out << r.err);
  CHECK(r.exit_code != 0);
  CHECK_FALSE(r.signaled);
  CHECK_THAT(r.err, Catch::Contains("the ranks disagree: rank 1's --batch is 32, rank 0's 64"));
}
#endif

TEST_CASE("distributed: malformed distributed flags are usage errors", "[distributed]") {
  const std::string ckpt = Dir() + "/flags.kckpt";
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = TrainArgs(ckpt, 1);
    args.insert(args.end(), extra.begin(), extra.end());
    return kiln::testing::RunCommand(KILN_BINARY, args);
  };
  CheckFails(with({"--distributed", "sockets"}), "--distributed 'sockets': expected mpi", 2);
  CheckFails(with({"--distributed", "nccl"}), "NCCL all-reduces on a CUDA device", 2);
  CheckFails(with({"--distributed", "mpi", "--backend", "cuda-sim"}),
             "the cuda backends all-reduce on the device, through NCCL", 2);
  CheckFails(with({"--bucket-size", "1M"}), "need --distributed mpi or nccl", 2);
  CheckFails(with({"--sync-bn"}), "--sync-bn need --distributed", 2);
  // kiln compile: a data-parallel module is a training step's; kilnrt: the ranks' flags.
  const std::string model = Classifier().model, module = Dir() + "/flags.kmod";
  CheckFails(
      kiln::testing::RunCommand(KILN_BINARY, {"compile", model, "--data-parallel", "-o", module}),
      "--data-parallel makes a training step data-parallel: it needs --train", 2);
  CheckFails(kiln::testing::RunCommand(KILN_BINARY, {"compile", model, "--train", "--loss", "loss",
                                                     "--sync-bn", "-o", module}),
             "--bucket-size and --sync-bn need a data-parallel run", 2);
  CheckFails(kiln::testing::RunCommand(KILNRT_BINARY, {module, "--distributed", "gloo"}),
             "--distributed 'gloo': expected mpi", 2);
  CheckFails(with({"--distributed", "mpi", "--distributed-timeout", "-3"}),
             "--distributed-timeout must be a positive number", 2);
}
