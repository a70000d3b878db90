// The `kiln` command line, run as a user would: exit codes (0 ok, 1 failure, 2 usage), one clear
// line on stderr for every failure, never a death by signal, and the files it writes.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ir/checksummed_proto.h"
#include "ir/io/npy.h"
#include "ir/ops/control.h"
#include "ir/ops/linalg.h"
#include "ir/ops/math.h"
#include "ir/ops/nn.h"
#include "ir/ops/reduce.h"
#include "ir/ops/state.h"
#include "ir/serialize.h"
#include "proto/tensorboard.pb.h"
#include "runtime/checkpoint.h"
#include "tests/testing/differential.h"
#include "tests/testing/run_command.h"
#include "tests/testing/temp_path.h"
#include "tools/lib/event_writer.h"

using namespace kiln;

namespace {

using testing::CheckFails;
using testing::CommandResult;
using testing::EpochLosses;

std::string ReadAll(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string Dir() {
  static std::string dir = [] {
    // Inside the per-process temporary folder, removed when the tests exit.
    const std::string path = testing::TempPath("cli");
    std::filesystem::create_directories(path);
    return path;
  }();
  return dir;
}

CommandResult Kiln(const std::vector<std::string>& args) {
  return testing::RunCommand(KILN_BINARY, args);
}

std::string Write(const std::string& name, const std::string& bytes) {
  std::string path = Dir() + "/" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// y = relu(x * w + b) with w = 2, b = -1; x is [-1, 3].
std::string SampleModel(const std::string& name = "model.kgraph") {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {-1, 3});
  Value w = Variable(g, "w", f32, {3}, Initializer::Constant(2));
  Value y = Relu(x * w - 1.0).Named("y");
  g.Output("y", y);
  g.Output("scaled/x", x * 10.0);
  std::string path = Dir() + "/" + name;
  REQUIRE(SaveGraph(*g.Build(), path).ok());
  return path;
}

std::string SampleInput() {
  std::string path = Dir() + "/x.npy";
  REQUIRE(WriteNpy(path, Tensor::FromVector<float>({2, 3}, {1, 2, 3, -1, 0, 1})).ok());
  return path;
}

}  // namespace

TEST_CASE("cli: help and usage errors", "[cli]") {
  CommandResult help = Kiln({"help"});
  CHECK(help.exit_code == 0);
  CHECK_THAT(help.out,
             Catch::Contains("run") && Catch::Contains("inspect") && Catch::Contains("dot"));
  CommandResult run_help = Kiln({"run", "--help"});
  CHECK(run_help.exit_code == 0);
  CHECK_THAT(run_help.out, Catch::StartsWith("usage: kiln run MODEL"));
  CHECK(Kiln({"help", "inspect"}).exit_code == 0);
  CHECK(Kiln({}).exit_code == 2);
  CheckFails(Kiln({"frobnicate"}), "unknown command 'frobnicate'", 2);
  CheckFails(Kiln({"run"}), "expected 1 argument(s), got 0", 2);
  CheckFails(Kiln({"run", "m.kgraph", "--bogus"}), "unknown option --bogus", 2);
  CheckFails(Kiln({"run", "m.kgraph", "--input"}), "--input needs a value", 2);
  CheckFails(Kiln({"dot", "m.kgraph", "-o", "x.png"}), "must end with .svg or .dot", 2);
}

TEST_CASE("cli: run prints outputs or writes .npy files with safe names", "[cli]") {
  std::string model = SampleModel(), x = SampleInput();
  CommandResult printed = Kiln({"run", model, "--input", "x=" + x});
  INFO(printed.err);
  REQUIRE(printed.exit_code == 0);
  CHECK_THAT(printed.out, Catch::Contains("y: f32[2, 3] {1, 3, 5, 0, 0, 1}"));
  std::string out_dir = Dir() + "/out/nested";
  CommandResult wrote = Kiln({"run", model, "--input=x=" + x, "--out", out_dir, "--fetch", "y",
                              "--fetch", "scaled/x", "--fetch", "w:0"});
  INFO(wrote.err);
  REQUIRE(wrote.exit_code == 0);
  Result<Tensor> y = ReadNpy(out_dir + "/y.npy");
  REQUIRE(y.ok());
  CHECK(y->ToDoubles() == std::vector<double>{1, 3, 5, 0, 0, 1});
  CHECK(ReadNpy(out_dir + "/scaled_x.npy")->ToDoubles() ==
        std::vector<double>{10, 20, 30, -10, 0, 10});
  CHECK(ReadNpy(out_dir + "/w_0.npy")->ToDoubles() == std::vector<double>{2, 2, 2});
}

TEST_CASE("cli: inspect, convert and dot", "[cli]") {
  std::string model = SampleModel();
  CommandResult inspect = Kiln({"inspect", model});
  INFO(inspect.err);
  REQUIRE(inspect.exit_code == 0);
  CHECK_THAT(inspect.out, Catch::Contains("f32[-1, 3]"));
  CHECK_THAT(inspect.out, Catch::Contains("parameters: 3 (12 B)"));
  CHECK_THAT(inspect.out, Catch::Contains("FLOPs (estimate): 12"));
  CHECK_THAT(inspect.out, Catch::Contains("Relu"));
  std::string text = Dir() + "/model.kgraph.txt", back = Dir() + "/back.kgraph";
  REQUIRE(Kiln({"convert", model, text}).exit_code == 0);
  REQUIRE(Kiln({"convert", text, back}).exit_code == 0);
  CHECK(ReadAll(back) == ReadAll(model));
  CHECK_THAT(ReadAll(text), Catch::Contains("op: \"Relu\""));
  REQUIRE(Kiln({"dot", model, "-o", Dir() + "/g.dot"}).exit_code == 0);
  CHECK_THAT(ReadAll(Dir() + "/g.dot"), Catch::Contains("\"x\" -> \"Mul\" [label=\"f32[-1, 3]\"]"));
  if (system("command -v dot >/dev/null 2>&1") == 0) {
    CommandResult svg = Kiln({"dot", model, "-o", Dir() + "/g.svg"});
    INFO(svg.err);
    REQUIRE(svg.exit_code == 0);
    CHECK_THAT(ReadAll(Dir() + "/g.svg"), Catch::Contains("<svg"));
  } else {
    WARN("Graphviz is not installed: skipping the .svg rendering check");
  }
}

TEST_CASE("cli: bad model files fail cleanly", "[cli][bad-input]") {
  std::string good = ReadAll(SampleModel());
  CheckFails(Kiln({"run", Dir() + "/missing.kgraph"}), "cannot open");
  CheckFails(Kiln({"inspect", Write("empty.kgraph", "")}), "the file is empty");
  CheckFails(Kiln({"inspect", Write("trunc.kgraph", good.substr(0, good.size() / 2))}),
             "truncated");
  std::string garbage;
  for (int i = 0; i < 4096; ++i) garbage.push_back(static_cast<char>((i * 7919 + 13) % 256));
  CheckFails(Kiln({"inspect", Write("random.kgraph", garbage)}), "not a kiln graph");
  CheckFails(Kiln({"inspect", Write("random.kgraph.txt", garbage)}), "not a valid kiln text graph");
  std::string huge = Dir() + "/huge.kgraph";
  {
    int fd = open(huge.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    REQUIRE(ftruncate(fd, kMaxGraphFileBytes + 1) == 0);  // sparse: costs no disk
    close(fd);
  }
  CheckFails(Kiln({"inspect", huge}), "over the limit");
  unlink(huge.c_str());
  std::string cycle = Write("cycle.kgraph.txt",
                            "format_version: 1\n"
                            "nodes { name: \"a\" op: \"Identity\" inputs: \"b\" }\n"
                            "nodes { name: \"b\" op: \"Identity\" inputs: \"a\" }\n");
  CheckFails(Kiln({"run", cycle, "--fetch", "a"}), "the graph has a cycle");
  CheckFails(Kiln({"inspect", Write("dir.kgraph", good), "--bogus"}), "unknown option", 2);
  CheckFails(Kiln({"inspect", Dir()}), "is not a regular file");
  // A correct checksum over a name that is not UTF-8: one line, saying what protobuf refused.
  std::string payload = good.substr(0, good.size() - 5);
  const size_t at = payload.find("scaled/x");
  REQUIRE(at != std::string::npos);
  payload[at + 6] = static_cast<char>(0xff);
#if GOOGLE_PROTOBUF_VERSION < 4022000  // later versions log through Abseil: nothing is captured
  CheckFails(Kiln({"inspect", Write("utf8.kgraph", AppendChecksumTrailer(payload))}),
             "contains invalid UTF-8 data when parsing");
#endif
}

TEST_CASE("cli: bad feeds fail cleanly", "[cli][bad-input]") {
  std::string model = SampleModel();
  std::string wrong_shape = Dir() + "/wrong.npy";
  REQUIRE(WriteNpy(wrong_shape, Tensor::FromVector<float>({2, 2}, {1, 2, 3, 4})).ok());
  CheckFails(Kiln({"run", model, "--input", "x=" + wrong_shape}),
             "feed 'x' has shape [2, 2] but placeholder 'x' expects [-1, 3]");
  std::string wrong_dtype = Dir() + "/wrong_dtype.npy";
  REQUIRE(WriteNpy(wrong_dtype, Tensor::FromVector<int64_t>({1, 3}, {1, 2, 3})).ok());
  CheckFails(Kiln({"run", model, "--input", "x=" + wrong_dtype}),
             "has dtype i64 but placeholder 'x' expects f32");
  CheckFails(Kiln({"run", model}), "missing feed for placeholder 'x'");
  CheckFails(Kiln({"run", model, "--input", "x"}), "--input expects NAME=VALUE", 1);
  CheckFails(Kiln({"run", model, "--input", "x=" + Write("bad.npy", "\x93NUMPY garbage")}),
             "input 'x'");
  CheckFails(Kiln({"run", model, "--input", "x=" + SampleInput(), "--fetch", "nope"}),
             "fetch 'nope': no graph output or node named 'nope'");
  CheckFails(Kiln({"run", model, "--input", "x=" + SampleInput(), "--backend", "tpu"}),
             "unknown backend 'tpu'");
  CheckFails(
      Kiln({"run", model, "--input", "x=" + SampleInput(), "--out", Write("file", "x") + "/sub"}),
      "cannot create directory");
}

TEST_CASE("cli: grad, gradcheck and freeze", "[cli]") {
  std::string model = SampleModel(), x = SampleInput();
  std::string dir = Dir() + "/grads";
  // y = relu(x * w - 1) with w = 2; d sum(y) / dw_j = sum_i x_ij [x_ij * 2 - 1 > 0].
  CommandResult grad = Kiln({"grad", model, "--of", "y", "--grad-of-sum", "--wrt", "w,x", "--input",
                             "x=" + x, "--out", dir});
  INFO(grad.err);
  REQUIRE(grad.exit_code == 0);
  CHECK(ReadNpy(dir + "/grad_w.npy")->ToDoubles() == std::vector<double>{1, 2, 4});
  CHECK(ReadNpy(dir + "/grad_x.npy")->ToDoubles() == std::vector<double>{2, 2, 2, 0, 0, 2});
  CheckFails(Kiln({"grad", model, "--of", "y", "--wrt", "w", "--input", "x=" + x, "--out", dir}),
             "not a scalar; pass --grad-of-sum");
  CheckFails(Kiln({"grad", model, "--of", "y"}), "needs --of NAME", 2);
  CommandResult check =
      Kiln({"gradcheck", model, "--of", "y", "--grad-of-sum", "--wrt", "w", "--input", "x=" + x});
  INFO(check.err);
  CHECK(check.exit_code == 0);
  CHECK_THAT(check.out, Catch::Contains("all gradients within"));
  // Freeze with a checkpoint holding w = 1: w becomes a constant of that value.
  std::string ckpt = Dir() + "/m.kckpt";
  REQUIRE(WriteCheckpoint(ckpt, {{"w", Tensor::FromVector<float>({3}, {1, 1, 1})}}).ok());
  std::string frozen = Dir() + "/frozen.kgraph";
  CommandResult freeze = Kiln({"freeze", model, "--checkpoint", ckpt, "-o", frozen});
  INFO(freeze.err);
  REQUIRE(freeze.exit_code == 0);
  CommandResult inspect = Kiln({"inspect", frozen});
  CHECK_THAT(inspect.out, Catch::Contains("parameters: 0"));
  CommandResult run = Kiln({"run", frozen, "--input", "x=" + x, "--fetch", "y"});
  CHECK_THAT(run.out, Catch::Contains("y: f32[2, 3] {0, 1, 2, 0, 0, 0}"));
  REQUIRE(WriteCheckpoint(ckpt, {{"v", Tensor::FromVector<float>({3}, {1, 1, 1})}}).ok());
  CheckFails(Kiln({"freeze", model, "--checkpoint", ckpt, "-o", frozen}),
             "has no value in the checkpoint");
  CheckFails(Kiln({"freeze", model, "--checkpoint", Write("bad.kckpt", "junk"), "-o", frozen}),
             "not a kiln checkpoint");
}

TEST_CASE("cli: --inference runs, inspects, times and compiles a model as it evaluates", "[cli]") {
  // y = BatchNorm(x) in training mode, with running statistics mean 1 and variance 4: trained, a
  // batch is normalized by its own statistics; as it evaluates, by the running ones.
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {2, 1, 1, 2});
  auto constant = [&](const char* name, float v) {
    return Variable(g, name, f32, {1}, Initializer::Constant(v));
  };
  Value y = BatchNorm(x, constant("scale", 1), constant("bias", 0), constant("mean", 1),
                      constant("var", 4), 0.0, /*training=*/true)[0];
  g.Output("y", y);
  const std::string model = Dir() + "/bn.kgraph", input = Dir() + "/bn_x.npy";
  REQUIRE(SaveGraph(*g.Build(), model).ok());
  REQUIRE(WriteNpy(input, Tensor::FromVector<float>({2, 1, 1, 2}, {1, 3, 5, 7})).ok());
  // Trained: (x - 4) / sqrt(5); as it evaluates: (x - 1) / 2.
  CommandResult trained = Kiln({"run", model, "--input", "x=" + input, "--backend", "reference"});
  INFO(trained.err);
  CHECK_THAT(trained.out, Catch::Contains("y: f32[2, 1, 1, 2] {-1.34"));
  std::vector<std::string> backends = testing::CompiledBackends();
  backends.push_back("reference");
  for (const std::string& backend : backends) {
    CommandResult evaluated =
        Kiln({"run", model, "--inference", "--input", "x=" + input, "--backend", backend});
    INFO(backend << ": " << evaluated.err);
    CHECK_THAT(evaluated.out, Catch::Contains("y: f32[2, 1, 1, 2] {0, 1, 2, 3}"));
  }
  CommandResult bench = Kiln({"bench", model, "--inference", "--iters", "1"});
  INFO(bench.err);
  CHECK(bench.exit_code == 0);
  CheckFails(Kiln({"bench", model, "--inference", "--train", "--loss", "y"}),
             "--inference and --train", 2);
  if (testing::CompiledBackends().empty()) {
    WARN("a runtime-only build: nothing to inspect or compile");
    return;
  }
  CommandResult inspect =
      Kiln({"inspect", model, "--inference", "--cost", "h100", "--backend", "cuda-sim"});
  INFO(inspect.err);
  CHECK_THAT(inspect.out, Catch::Contains("estimated_ms:"));
  const std::string module = Dir() + "/bn.kmod";
  CommandResult compiled = Kiln({"compile", model, "--inference", "-o", module});
  INFO(compiled.err);
  REQUIRE(compiled.exit_code == 0);
  CommandResult deployed = Kiln({"run", module, "--input", "x=" + input});
  CHECK_THAT(deployed.out, Catch::Contains("y: f32[2, 1, 1, 2] {0, 1, 2, 3}"));
  CheckFails(Kiln({"run", module, "--inference", "--input", "x=" + input}),
             "does not apply to a compiled module", 2);
  CheckFails(Kiln({"compile", model, "--inference", "--train", "--loss", "y", "-o", module}),
             "--inference and --train", 2);
}

namespace {
// loss = mean((x * w - t)^2) with w starting at 0 and t = 3 x: w should approach 3. With `batch`
// the placeholders fix their batch dimension (as an ONNX export does), else it is free.
std::string RegressionModel(int64_t batch = -1) {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {batch, 1});
  Value t = g.Placeholder("t", f32, {batch, 1});
  Value w = Variable(g, "w", f32, {1});
  Value err = x * w - t;
  g.Output("loss", Mean(err * err));
  std::string path = Dir() + "/regression" + std::to_string(batch) + ".kgraph";
  REQUIRE(SaveGraph(*g.Build(), path).ok());
  std::vector<float> xs, ts;
  for (int i = 0; i < 64; ++i) {
    xs.push_back(static_cast<float>(i % 8) / 8.0f);
    ts.push_back(3.0f * xs.back());
  }
  REQUIRE(WriteNpy(Dir() + "/rx.npy", Tensor::FromVector<float>({64, 1}, xs)).ok());
  REQUIRE(WriteNpy(Dir() + "/rt.npy", Tensor::FromVector<float>({64, 1}, ts)).ok());
  return path;
}
}  // namespace

TEST_CASE("cli: train lowers the loss, checkpoints, resumes", "[cli][train]") {
  std::string model = RegressionModel(), ckpt = Dir() + "/reg.kckpt";
  std::vector<std::string> common = {"train",        model,
                                     "--loss",       "loss",
                                     "--data",       "x=" + Dir() + "/rx.npy",
                                     "--data",       "t=" + Dir() + "/rt.npy",
                                     "--optimizer",  "sgd",
                                     "--lr",         "0.5",
                                     "--batch",      "8",
                                     "--checkpoint", ckpt};
  std::vector<std::string> first = common;
  first.insert(first.end(), {"--epochs", "3"});
  CommandResult r = Kiln(first);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  std::vector<double> losses = EpochLosses(r.out);
  REQUIRE(losses.size() == 3);
  CHECK(losses[1] < losses[0]);
  CHECK(losses[2] < losses[1]);
  CHECK_THAT(r.out, Catch::Contains("examples/s"));
  auto w = ReadCheckpoint(ckpt);
  REQUIRE(w.ok());
  CHECK(w->at("w").GetDouble(0) > 1.0);
  std::vector<std::string> resume = common;
  resume.insert(resume.end(), {"--epochs", "1", "--resume"});
  CommandResult r2 = Kiln(resume);
  INFO(r2.out << r2.err);
  REQUIRE(r2.exit_code == 0);
  CHECK_THAT(r2.out, Catch::Contains("resumed from"));
  CHECK(EpochLosses(r2.out).at(0) < losses[2]);
  CheckFails(Kiln({"train", model, "--loss", "loss", "--data", "x=" + Dir() + "/rx.npy", "--data",
                   "t=" + SampleInput()}),
             "has 2 examples, the others 64");
  CheckFails(
      Kiln({"train", model, "--loss", "loss", "--data", "x=" + Dir() + "/rx.npy", "--lr", "-1"}),
      "--lr must be a positive number", 2);
  CheckFails(Kiln({"train", model, "--loss", "loss", "--data", "x=" + Dir() + "/rx.npy",
                   "--optimizer", "lbfgs"}),
             "unknown optimizer 'lbfgs'", 2);
}

TEST_CASE("cli: train with a learning-rate schedule, clipping and weight decay", "[cli][train]") {
  const std::string model = RegressionModel(), ckpt = Dir() + "/sched.kckpt";
  const std::vector<std::string> common = {"train",        model,
                                           "--loss",       "loss",
                                           "--data",       "x=" + Dir() + "/rx.npy",
                                           "--data",       "t=" + Dir() + "/rt.npy",
                                           "--batch",      "8",
                                           "--checkpoint", ckpt};
  std::vector<std::string> args = common;
  const std::string logdir = Dir() + "/logs";
  args.insert(args.end(), {"--optimizer", "momentum", "--lr", "0.3", "--epochs", "3",
                           "--lr-schedule", "linear-warmup-cosine", "--warmup-steps", "4",
                           "--clip-norm", "5", "--weight-decay", "0.001", "--logdir", logdir});
  CommandResult r = Kiln(args);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  std::vector<double> losses = EpochLosses(r.out);
  REQUIRE(losses.size() == 3);
  CHECK(losses[2] < losses[0]);
  // The TensorBoard event file: records framed and checksummed as TFRecord, the file version
  // first, the graph, a train/step_loss per step and a train/loss per epoch (the printed means).
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(logdir)) files.push_back(entry);
  REQUIRE(files.size() == 1);
  CHECK(files[0].filename().string().rfind("events.out.tfevents.", 0) == 0);
  const std::string bytes = ReadAll(files[0].string());
  std::vector<tensorflow::Event> events;
  for (size_t at = 0; at < bytes.size();) {
    REQUIRE(at + 12 <= bytes.size());
    uint64_t length = 0;
    for (int i = 0; i < 8; ++i)
      length |= uint64_t{static_cast<unsigned char>(bytes[at + i])} << (8 * i);
    auto u32 = [&](size_t p) {
      uint32_t v = 0;
      for (int i = 0; i < 4; ++i)
        v |= uint32_t{static_cast<unsigned char>(bytes[p + i])} << (8 * i);
      return v;
    };
    CHECK(u32(at + 8) == cli::MaskedCrc32c(bytes.data() + at, 8));
    REQUIRE(at + 12 + length + 4 <= bytes.size());
    CHECK(u32(at + 12 + length) == cli::MaskedCrc32c(bytes.data() + at + 12, length));
    REQUIRE(events.emplace_back().ParseFromString(bytes.substr(at + 12, length)));
    at += 12 + length + 4;
  }
  REQUIRE(events.size() > 2);
  CHECK(events[0].file_version() == "brain.Event:2");
  CHECK(events[1].has_graph_def());
  std::map<std::string, std::vector<std::pair<int64_t, float>>> scalars;
  for (const tensorflow::Event& e : events)
    for (const auto& v : e.summary().value())
      scalars[v.tag()].emplace_back(e.step(), v.simple_value());
  CHECK(scalars["train/step_loss"].size() == 24);
  REQUIRE(scalars["train/loss"].size() == 3);
  for (int epoch = 0; epoch < 3; ++epoch) {
    CHECK(scalars["train/loss"][epoch].first == epoch + 1);
    CHECK(scalars["train/loss"][epoch].second == Approx(losses[epoch]).epsilon(1e-4));
  }
  CHECK(scalars["examples_per_sec"].size() == 3);
  // The rate each epoch starts with: 0.3 / 4 warming up at step 0, then the cosine over steps
  // 4..24 at steps 8 and 16.
  REQUIRE(scalars["lr"].size() == 3);
  const double pi = 3.141592653589793;
  const double expected_lr[] = {0.075, 0.15 * (1 + std::cos(pi * 0.2)),
                                0.15 * (1 + std::cos(pi * 0.6))};
  for (int epoch = 0; epoch < 3; ++epoch)
    CHECK(scalars["lr"][epoch].second == Approx(expected_lr[epoch]).epsilon(1e-5));
  // --quiet: the last epoch's line alone.
  std::vector<std::string> quiet = common;
  quiet.insert(quiet.end(), {"--epochs", "2", "--quiet"});
  CommandResult q = Kiln(quiet);
  INFO(q.out << q.err);
  REQUIRE(q.exit_code == 0);
  CHECK(std::count(q.out.begin(), q.out.end(), '\n') == 1);
  CHECK_THAT(q.out, Catch::StartsWith("epoch 2: mean loss ") && Catch::Contains("; wrote "));
  // Batches sliced ahead on threads train exactly as batches sliced when asked.
  std::vector<std::string> prefetched = args;
  prefetched.insert(prefetched.end(), {"--prefetch", "3"});
  CommandResult p = Kiln(prefetched);  // also writes the checkpoint of the 3 epochs again
  INFO(p.out << p.err);
  REQUIRE(p.exit_code == 0);
  CHECK(EpochLosses(p.out) == losses);
  // 3 epochs of 8 batches: the cosine schedule ends at step 24, the step count the module keeps.
  auto values = ReadCheckpoint(ckpt);
  REQUIRE(values.ok());
  CHECK(values->at("global_step").GetDouble(0) == 24);
  auto usage = [&](std::vector<std::string> extra, const std::string& text) {
    std::vector<std::string> a = common;
    a.insert(a.end(), extra.begin(), extra.end());
    CheckFails(Kiln(a), text, 2);
  };
  usage({"--warmup-steps", "3"}, "--warmup-steps is for --lr-schedule linear-warmup-cosine");
  usage({"--lr-schedule", "step"}, "the step schedule needs a step size >= 1 (--lr-step-size)");
  usage({"--lr-schedule", "linear-warmup-cosine", "--warmup-steps", "99"},
        "needs warmup steps >= 1 and fewer than the total steps");
  usage({"--lr-schedule", "cyclic"}, "unknown learning-rate schedule 'cyclic'");
  usage({"--clip-norm", "0"}, "--clip-norm must be a positive number, got '0'");
  usage({"--weight-decay", "-1"}, "--weight-decay must be a non-negative number");
  CheckFails(Kiln({"bench", model, "--clip-norm", "1"}), "--clip-norm needs --train", 2);
  CheckFails(Kiln({"compile", model, "-o", Dir() + "/x.kmod", "--train", "--loss", "loss",
                   "--lr-schedule", "cosine"}),
             "the cosine schedule needs the total number of steps", 2);
}

TEST_CASE("cli: train drops the last partial batch where the model fixes its batch",
          "[cli][train]") {
  // 64 examples in batches of 24: two full batches and 16 left over.
  auto train = [](const std::string& model, std::vector<std::string> extra) {
    std::vector<std::string> args = {"train",       model,
                                     "--loss",      "loss",
                                     "--data",      "x=" + Dir() + "/rx.npy",
                                     "--data",      "t=" + Dir() + "/rt.npy",
                                     "--batch",     "24",
                                     "--optimizer", "sgd"};
    args.insert(args.end(), extra.begin(), extra.end());
    return Kiln(args);
  };
  const std::string fixed = RegressionModel(24);
  CommandResult r = train(fixed, {"--epochs", "2"});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(EpochLosses(r.out).size() == 2);
  const std::string note = "each epoch drops its last 16 examples";
  CHECK_THAT(r.out, Catch::Contains(note + " (a partial batch): the model fixes"));
  CHECK(r.out.find(note) == r.out.rfind(note));  // said once
  // A free batch trains every example, unless --drop-last.
  const std::string free = RegressionModel();
  CommandResult all = train(free, {});
  REQUIRE(all.exit_code == 0);
  CHECK_THAT(all.out, !Catch::Contains("drops"));
  CommandResult dropped = train(free, {"--drop-last"});
  REQUIRE(dropped.exit_code == 0);
  CHECK_THAT(dropped.out, Catch::Contains(note + " (a partial batch): --drop-last"));
  // A --batch the model cannot take is a usage error, before any step.
  CommandResult mismatch =
      Kiln({"train", fixed, "--loss", "loss", "--data", "x=" + Dir() + "/rx.npy", "--data",
            "t=" + Dir() + "/rt.npy", "--batch", "8"});
  CHECK(mismatch.exit_code == 2);
  CHECK_THAT(mismatch.err,
             Catch::Contains("fixes a batch of 24") && Catch::Contains("--batch is 8"));
}

namespace {
// A softmax regression of 4 features into 3 classes (logits = x w, loss = cross-entropy), and
// 90 examples where class k has feature k large (separable), written as cx.npy and cy.npy; with
// `flipped` the labels are shifted by one class (a held-out set the training makes worse).
std::string ClassifierModel() {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {-1, 4});
  Value labels = g.Placeholder("labels", i64, {-1});
  Value w = Variable(g, "w", f32, {4, 3});
  Value logits = MatMul(x, w).Named("logits");
  g.Output("loss", SoftmaxCrossEntropy(logits, labels));
  std::string path = Dir() + "/classifier.kgraph";
  REQUIRE(SaveGraph(*g.Build(), path).ok());
  for (bool flipped : {false, true}) {
    std::vector<float> xs;
    std::vector<int64_t> ys;
    for (int i = 0; i < 90; ++i) {
      const int k = i % 3;
      for (int f = 0; f < 4; ++f) xs.push_back(f == k ? 2.0f : 0.1f * static_cast<float>(i % 5));
      ys.push_back(flipped ? (k + 1) % 3 : k);
    }
    const std::string suffix = flipped ? "_flipped" : "";
    REQUIRE(WriteNpy(Dir() + "/cx" + suffix + ".npy", Tensor::FromVector<float>({90, 4}, xs)).ok());
    REQUIRE(WriteNpy(Dir() + "/cy" + suffix + ".npy", Tensor::FromVector<int64_t>({90}, ys)).ok());
  }
  return path;
}
}  // namespace

TEST_CASE("cli: train validates after every epoch: loss, accuracy, early stop", "[cli][train]") {
  const std::string model = ClassifierModel(), ckpt = Dir() + "/classifier.kckpt";
  auto train = [&](const std::string& val_suffix, std::vector<std::string> extra) {
    std::vector<std::string> args = {
        "train",        model,
        "--loss",       "loss",
        "--data",       "x=" + Dir() + "/cx.npy",
        "--data",       "labels=" + Dir() + "/cy.npy",
        "--val",        "x=" + Dir() + "/cx" + val_suffix + ".npy",
        "--val",        "labels=" + Dir() + "/cy" + val_suffix + ".npy",
        "--optimizer",  "sgd",
        "--lr",         "0.5",
        "--batch",      "16",
        "--checkpoint", ckpt};
    args.insert(args.end(), extra.begin(), extra.end());
    return Kiln(args);
  };
  CommandResult r = train("", {"--epochs", "4", "--accuracy", "logits"});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  std::vector<double> val_losses, accuracies;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (auto at = line.find("val loss "); at != std::string::npos)
      val_losses.push_back(std::stod(line.substr(at + 9)));
    if (auto at = line.find("val accuracy "); at != std::string::npos)
      accuracies.push_back(std::stod(line.substr(at + 13)));
  }
  REQUIRE(val_losses.size() == 4);
  REQUIRE(accuracies.size() == 4);
  CHECK(val_losses.back() < val_losses.front());
  CHECK(accuracies.back() == 1.0);
  // A held-out set the training makes worse: the second epoch is not better, and the checkpoint
  // keeps the first epoch's variables.
  CommandResult stopped = train("_flipped", {"--epochs", "10", "--early-stop", "1"});
  INFO(stopped.out << stopped.err);
  REQUIRE(stopped.exit_code == 0);
  CHECK_THAT(stopped.out, Catch::Contains("early stop: 1 epoch without a better val loss"));
  CHECK(EpochLosses(stopped.out).size() == 2);
  // Usage errors.
  CheckFails(Kiln({"train", model, "--loss", "loss", "--data", "x=" + Dir() + "/cx.npy", "--data",
                   "labels=" + Dir() + "/cy.npy", "--accuracy", "logits"}),
             "need --val", 2);
  CheckFails(Kiln({"train", model, "--loss", "loss", "--data", "x=" + Dir() + "/cx.npy", "--data",
                   "labels=" + Dir() + "/cy.npy", "--val", "x=" + Dir() + "/cx.npy"}),
             "same arrays as --data", 2);
}

TEST_CASE("cli: a killed kiln train leaves the last good checkpoint intact", "[cli][train]") {
  std::string model = RegressionModel(), ckpt = Dir() + "/killed.kckpt";
  pid_t pid = fork();
  if (pid == 0) {
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    dup2(devnull, 2);
    std::string bin = KILN_BINARY;
    std::vector<std::string> args = {bin,
                                     "train",
                                     model,
                                     "--loss",
                                     "loss",
                                     "--data",
                                     "x=" + Dir() + "/rx.npy",
                                     "--data",
                                     "t=" + Dir() + "/rt.npy",
                                     "--batch",
                                     "1",
                                     "--epochs",
                                     "100000",
                                     "--checkpoint",
                                     ckpt};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  // Wait for the first checkpoints, then kill it mid-run, several checkpoints in.
  for (int i = 0; i < 400 && access(ckpt.c_str(), F_OK) != 0; ++i) usleep(50000);
  usleep(300000);
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  REQUIRE(WIFSIGNALED(status));
  Result<std::map<std::string, Tensor>> values = ReadCheckpoint(ckpt);
  INFO((values.ok() ? "" : values.error().ToString()));
  REQUIRE(values.ok());
  CHECK(values->count("w") == 1);
  CHECK(values->count("global_step") == 1);
}

TEST_CASE("kiln dot draws the bodies of control-flow ops as clusters beside them", "[cli]") {
  GraphBuilder g;
  Value pred = g.Placeholder("pred", DType::kBool, {});
  Value x = g.Placeholder("x", f32, {2});
  std::vector<Value> y = Cond(
      pred, {x}, [](const std::vector<Value>& a) { return std::vector<Value>{Relu(a[0])}; },
      [](const std::vector<Value>& a) { return std::vector<Value>{a[0] * 3.0}; });
  g.Output("y", y[0]);
  const std::string model = Dir() + "/cond.kgraph";
  REQUIRE(SaveGraph(*g.Build(), model).ok());
  REQUIRE(Kiln({"dot", model, "-o", Dir() + "/cond.dot"}).exit_code == 0);
  const std::string dot = ReadAll(Dir() + "/cond.dot");
  CHECK_THAT(dot, Catch::Contains("subgraph \"cluster_If/then_branch/\""));
  CHECK_THAT(dot, Catch::Contains("subgraph \"cluster_If/else_branch/\""));
  CHECK_THAT(dot, Catch::Contains("\"If/then_branch/arg_0\" -> \"If/then_branch/Relu\""));
  CHECK_THAT(dot, Catch::Contains("\"If/else_branch/Mul\" -> \"If\" [style=dotted"));
}

TEST_CASE("cli: export-onnx writes a model that runs as the original", "[cli][onnx]") {
  std::string model = SampleModel(), x = SampleInput();
  std::string ckpt = Dir() + "/export.kckpt";
  REQUIRE(WriteCheckpoint(ckpt, {{"w", Tensor::FromVector<float>({3}, {1, 1, 1})}}).ok());
  std::string onnx = Dir() + "/exported.onnx";
  CommandResult out = Kiln({"export-onnx", model, "--checkpoint", ckpt, "-o", onnx});
  INFO(out.err);
  REQUIRE(out.exit_code == 0);
  CHECK_THAT(out.out, Catch::Contains("opset 17"));
  // The ONNX file runs (imported again) as the frozen graph does: w = 1 from the checkpoint.
  CommandResult run = Kiln({"run", onnx, "--input", "x=" + x, "--fetch", "y"});
  INFO(run.err);
  CHECK_THAT(run.out, Catch::Contains("y: f32[2, 3] {0, 1, 2, 0, 0, 0}"));
  // Without a checkpoint the variables keep their initializers' values (w = 2).
  REQUIRE(Kiln({"export-onnx", model, "-o", onnx, "--fetch", "y"}).exit_code == 0);
  CHECK_THAT(Kiln({"run", onnx, "--input", "x=" + x}).out,
             Catch::Contains("y: f32[2, 3] {1, 3, 5, 0, 0, 1}"));

  CheckFails(Kiln({"export-onnx", model}), "missing -o OUT.onnx", 2);
  CheckFails(Kiln({"export-onnx", model, "-o", onnx, "--fetch", "nothing"}), "'nothing'");
  CheckFails(Kiln({"export-onnx", model, "-o", onnx, "--checkpoint", Write("bad2.kckpt", "junk")}),
             "not a kiln checkpoint");
  GraphBuilder g;
  Value v = Variable(g, "v", f32, {3}, Initializer::Zeros());
  Value p = g.Placeholder("p", f32, {3});
  g.Output("bump", AssignAdd(v, p));
  std::string stateful = Dir() + "/stateful.kgraph";
  REQUIRE(SaveGraph(*g.Build(), stateful).ok());
  CheckFails(Kiln({"export-onnx", stateful, "-o", onnx}), "AssignAdd ('AssignAdd')");
}
