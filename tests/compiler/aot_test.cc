// Ahead-of-time modules (compiler/aot.h -> .kmod -> runtime Module): a module computes bitwise what
// the session's cpu backend computes (same pipeline, same machine code), training modules keep and
// checkpoint their variables, and damaged or foreign modules and wrong feeds are refused clearly.
#include "compiler/aot.h"

#include <catch2/catch.hpp>
#include <cstring>

#include "ir/io/npy.h"
#include "ir/onnx/import.h"
#include "ir/ops/array.h"
#include "ir/ops/linalg.h"
#include "ir/ops/math.h"
#include "ir/ops/nn.h"
#include "ir/ops/reduce.h"
#include "ir/ops/state.h"
#include "models/digits_cnn.h"
#include "passes/optim.h"
#include "runtime/checkpoint.h"
#include "runtime/module/cpu_features.h"
#include "runtime/module/module.h"
#include "runtime/session.h"
#include "tests/testing/gradcheck_op.h"
#include "tests/testing/temp_path.h"

namespace kiln {
namespace {

Tensor Random(Shape shape, uint64_t seed) { return testing::RandomTensor(shape, seed).CastTo(f32); }

bool BitwiseEqual(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.byte_size()) == 0;
}

ModuleFile Compile(const Graph& graph, compiler::AotOptions options) {
  Result<ModuleFile> module = compiler::CompileModule(graph, options);
  INFO(module.status().ToString());
  REQUIRE(module.ok());
  return std::move(*module);
}

std::unique_ptr<Module> Load(const ModuleFile& file) {
  Result<std::unique_ptr<Module>> module = Module::LoadFromBytes(*SerializeModule(file), "m.kmod");
  INFO(module.status().ToString());
  REQUIRE(module.ok());
  return std::move(*module);
}

// Runs `graph` on the cpu backend and as a module compiled from it; outputs must match bit for bit.
void CheckModuleMatchesSession(const Graph& graph, const std::string& input, const Tensor& x) {
  compiler::AotOptions options;
  options.input_shapes[input] = x.shape();
  ModuleFile file = Compile(graph, options);
  std::unique_ptr<Module> module = Load(file);
  Result<std::vector<Tensor>> got = module->Run({{input, x}});
  INFO(got.status().ToString());
  REQUIRE(got.ok());
  Session session(graph, SessionOptions{.backend = "cpu"});
  std::vector<TensorName> fetches;
  for (const ModuleTensorSpec& o : module->outputs()) fetches.emplace_back(o.name);
  Result<std::vector<Tensor>> want = session.Run({{input, x}}, fetches);
  REQUIRE(want.ok());
  REQUIRE(got->size() == want->size());
  for (size_t i = 0; i < got->size(); ++i) {
    INFO("output " << module->outputs()[i].name);
    CHECK(BitwiseEqual((*got)[i], (*want)[i]));
  }
}

TEST_CASE("AOT: a module computes bitwise what the cpu backend computes", "[aot]") {
  SECTION("the digits CNN") {
    GraphBuilder g;
    models::BuildDigitsCnn(g);
    Result<Graph> graph = g.Build();
    REQUIRE(graph.ok());
    CheckModuleMatchesSession(*graph, "images", Random(Shape{5, 1, 8, 8}, 3));
  }
  for (const char* name : {"resnet", "transformer", "lstm"}) {
    SECTION(std::string("the PyTorch-exported ") + name) {
      std::string dir = std::string(KILN_TEST_DATA_DIR) + "/onnx/" + name;
      Result<Graph> graph = ImportOnnx(dir + "/model.onnx");
      REQUIRE(graph.ok());
      Result<Tensor> x = ReadNpy(dir + "/x.npy");
      REQUIRE(x.ok());
      CheckModuleMatchesSession(*graph, graph->inputs()[0], *x);
    }
  }
}

TEST_CASE("AOT: modules loaded side by side each run their own kernels", "[aot]") {
  // Two modules whose generated kernels have the same names and signatures: the second loaded
  // while the first lives must not be given the first's code (the loader knows objects by name).
  auto module_of = [](bool second) {
    GraphBuilder g;
    Value x = g.Placeholder("x", f32, {4});
    g.Output("y", second ? Exp(x) + 1.0 : Tanh(x) * 2.0);
    return Compile(*g.Build(), {});
  };
  std::unique_ptr<Module> first = Load(module_of(false));
  std::unique_ptr<Module> second = Load(module_of(true));
  const Tensor x = Tensor::FromDoubles(f32, {4}, {0.5, -1, 2, 0});
  Result<std::vector<Tensor>> a = first->Run({{"x", x}});
  Result<std::vector<Tensor>> b = second->Run({{"x", x}});
  REQUIRE(a.ok());
  INFO(b.status().ToString());
  REQUIRE(b.ok());
  for (int64_t i = 0; i < 4; ++i) {
    CHECK((*a)[0].GetDouble(i) == Approx(2 * std::tanh(x.GetDouble(i))));
    CHECK((*b)[0].GetDouble(i) == Approx(std::exp(x.GetDouble(i)) + 1));
  }
}

TEST_CASE("AOT: the manifest records the signature, target and CPU features", "[aot]") {
  GraphBuilder g;
  models::BuildDigitsCnn(g);
  Graph graph = *g.Build();
  ModuleFile file =
      Compile(graph, {.fetches = {"logits"}, .input_shapes = {{"images", {4, 1, 8, 8}}}});
  Result<ModuleFile> back = ParseModule(*SerializeModule(file), "m.kmod");
  REQUIRE(back.ok());
  CHECK(back->target == "cpu");
  CHECK(back->build_id.size() == 16);
  REQUIRE(back->inputs.size() == 1);
  CHECK(back->inputs[0].name == "images");
  CHECK(back->inputs[0].type.ToString() == "f32[4, 1, 8, 8]");
  REQUIRE(back->outputs.size() == 1);
  CHECK(back->outputs[0].name == "logits");
  CHECK(back->outputs[0].type.ToString() == "f32[4, 10]");
  CHECK(!back->kernels.empty());
  for (const std::string& f : back->cpu_features) CHECK(HostHasCpuFeature(f));
  CHECK(back->variables.size() > 0);
  // The same module twice: the same bytes (deterministic), hence the same build id.
  CHECK(*SerializeModule(file) ==
        *SerializeModule(
            Compile(graph, {.fetches = {"logits"}, .input_shapes = {{"images", {4, 1, 8, 8}}}})));
}

// One training step of the digits CNN under optimizer `name`, and the options compiling it into a
// module (one step per call) for a batch of `n`.
struct DigitsStep {
  Graph graph;
  std::string loss, update;
  DigitsStep(const std::string& name, double lr) {
    GraphBuilder g;
    models::DigitsCnn net = models::BuildDigitsTraining(g);
    Result<optim::Optimizer> optimizer = optim::ByName(name, {.lr = lr});
    REQUIRE(optimizer.ok());
    update = optimizer->Minimize(net.loss).node_name();
    loss = net.loss.name();
    graph = *g.Build();
  }
  compiler::AotOptions Module(int64_t n) const {
    return {.fetches = {loss},
            .targets = {update},
            .input_shapes = {{"images", {n, 1, 8, 8}}, {"labels", {n}}}};
  }
};

TEST_CASE("AOT: a training module runs one step per call, keeps and checkpoints its variables",
          "[aot]") {
  const DigitsStep digits("adam", 0.01);
  const Graph& graph = digits.graph;
  Tensor images = Random(Shape{16, 1, 8, 8}, 7);
  std::vector<int64_t> label_values(16);
  for (int i = 0; i < 16; ++i) label_values[i] = i % 10;
  Tensor labels = Tensor::FromVector<int64_t>(Shape{16}, label_values);

  ModuleFile file = Compile(graph, digits.Module(16));
  std::unique_ptr<Module> module = Load(file);
  Session session(graph, SessionOptions{.backend = "cpu"});
  std::vector<double> losses;
  std::string checkpoint = testing::TempPath("aot_train.kckpt");
  for (int step = 0; step < 3; ++step) {
    Result<std::vector<Tensor>> got = module->Run({{"images", images}, {"labels", labels}});
    INFO(got.status().ToString());
    REQUIRE(got.ok());
    Result<std::vector<Tensor>> want =
        session.Run({{"images", images}, {"labels", labels}}, {digits.loss}, {digits.update});
    REQUIRE(want.ok());
    CHECK(BitwiseEqual((*got)[0], (*want)[0]));
    losses.push_back((*got)[0].GetDouble(0));
    if (step == 0) REQUIRE(module->SaveCheckpoint(checkpoint).ok());
  }
  CHECK(losses[2] < losses[0]);
  // Back to the variables after step 0: step 1 again gives step 1's loss.
  REQUIRE(module->RestoreCheckpoint(checkpoint).ok());
  Result<std::vector<Tensor>> again = module->Run({{"images", images}, {"labels", labels}});
  REQUIRE(again.ok());
  CHECK((*again)[0].GetDouble(0) == losses[1]);
  // A checkpoint of another model is refused whole.
  std::string other = testing::TempPath("aot_other.kckpt");
  REQUIRE(WriteCheckpoint(other, {{"w", Tensor::Scalar<float>(1)}}).ok());
  Status s = module->RestoreCheckpoint(other);
  REQUIRE(!s.ok());
  CHECK_THAT(s.error().message(), Catch::Contains("no value for variable"));
}

TEST_CASE("AOT: a training module without variables starts from the initializers, as a session",
          "[aot]") {
  const DigitsStep digits("sgd", 0.1);
  const Graph& graph = digits.graph;
  Tensor images = Random(Shape{8, 1, 8, 8}, 9);
  Tensor labels = Tensor::FromVector<int64_t>(Shape{8}, {0, 1, 2, 3, 4, 5, 6, 7});
  compiler::AotOptions options = digits.Module(8);
  options.variables = false;
  ModuleFile file = Compile(graph, options);
  CHECK(file.variables.empty());
  std::unique_ptr<Module> module = Load(file);
  Session session(graph, SessionOptions{.backend = "cpu"});
  for (int step = 0; step < 3; ++step) {
    Result<std::vector<Tensor>> got = module->Run({{"images", images}, {"labels", labels}});
    INFO(got.status().ToString());
    REQUIRE(got.ok());
    Result<std::vector<Tensor>> want =
        session.Run({{"images", images}, {"labels", labels}}, {digits.loss}, {digits.update});
    REQUIRE(want.ok());
    CHECK(BitwiseEqual((*got)[0], (*want)[0]));
  }
  // A checkpoint's values would be left out: refused.
  options.checkpoint = testing::TempPath("aot_no_variables.kckpt");
  Result<ModuleFile> refused = compiler::CompileModule(graph, options);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.error().message(), Catch::Contains("without variables"));
}

TEST_CASE("AOT: damaged, foreign or newer modules are refused with a clear error", "[aot]") {
  GraphBuilder g;
  models::BuildDigitsCnn(g);
  Graph graph = *g.Build();
  ModuleFile file =
      Compile(graph, {.fetches = {"logits"}, .input_shapes = {{"images", {2, 1, 8, 8}}}});
  std::string bytes = *SerializeModule(file);
  auto refused = [](const std::string& b, const std::string& expected) {
    Result<std::unique_ptr<Module>> m = Module::LoadFromBytes(b, "m.kmod");
    REQUIRE(!m.ok());
    INFO(m.error().message());
    CHECK_THAT(m.error().message(), Catch::Contains("m.kmod") && Catch::Contains(expected));
  };
  refused(bytes.substr(0, bytes.size() / 2), "");
  refused("", "");
  std::string flipped = bytes;
  flipped[flipped.size() / 3] ^= 0x10;
  refused(flipped, "");
  ModuleFile newer = file;
  newer.format_version = kModuleFormatVersion + 1;
  refused(*SerializeModule(newer), "newer");
  ModuleFile cuda = file;
  cuda.target = "cuda";
  refused(*SerializeModule(cuda), "target 'cuda'");
  ModuleFile unknown_feature = file;
  unknown_feature.cpu_features.push_back("frobnicate");
  refused(*SerializeModule(unknown_feature), "frobnicate");
  for (const std::string& f : KnownCpuFeatures()) {
    if (HostHasCpuFeature(f)) continue;
    ModuleFile needs = file;
    needs.cpu_features.push_back(f);
    refused(*SerializeModule(needs), "lacks: " + f);
    break;
  }
  ModuleFile not_elf = file;
  not_elf.kernels = "this is not machine code";
  refused(*SerializeModule(not_elf), "not an ELF object");
  ModuleFile bad_signature = file;
  bad_signature.outputs[0].type.shape = Shape{3, 10};
  refused(*SerializeModule(bad_signature), "in the signature but");
}

TEST_CASE("AOT: a kernel step changed after compilation is refused at load, naming it", "[aot]") {
  GraphBuilder g;  // one fused kernel over dense buffers, beside a smaller and a larger buffer
  Value x = g.Placeholder("x", f32, {64, 32});
  g.Output("y", Relu(Add(Mul(x, g.Scalar(2.0)), g.Scalar(1.0))));
  g.Output("s", Sum(x, {1}));
  g.Output("t", Concat({x, x}, 0));
  Graph graph = *g.Build();
  const ModuleFile file = Compile(graph, {.input_shapes = {{"x", {64, 32}}}});
  Load(file);  // as compiled: accepted
  int kernel = -1;
  for (size_t i = 0; i < file.executable.steps.size() && kernel < 0; ++i) {
    const Step& s = file.executable.steps[i];
    bool dense = s.kind == Step::Kind::kKernel;
    for (const std::vector<int>* ids : {&s.inputs, &s.outputs})
      for (int id : *ids) dense = dense && file.executable.buffers[id].layout.empty();
    if (dense) kernel = static_cast<int>(i);
  }
  REQUIRE(kernel >= 0);
  const Step& step = file.executable.steps[kernel];
  auto refused = [&](const ModuleFile& changed, const std::string& what) {
    INFO(what);
    Result<std::unique_ptr<Module>> m = Module::LoadFromBytes(*SerializeModule(changed), "m.kmod");
    REQUIRE_FALSE(m.ok());
    CHECK_THAT(m.error().message(), Catch::Contains("m.kmod") && Catch::Contains(step.callee) &&
                                        Catch::Contains(step.node.name) &&
                                        Catch::Contains("does not match the code compiled"));
  };
  ModuleFile more_rows = file;
  more_rows.executable.steps[kernel].rows *= 4;  // the kernel would run past its buffers
  refused(more_rows, "rows x4");
  // An operand rewired to a buffer of another size (the largest buffer of another type).
  ModuleFile rewired = file;
  const int operand = step.inputs.empty() ? step.outputs[0] : step.inputs[0];
  int other = -1;
  for (size_t b = 0; b < file.executable.buffers.size(); ++b)
    if (file.executable.buffers[b].bytes() != file.executable.buffers[operand].bytes() &&
        (other < 0 || file.executable.buffers[b].bytes() > file.executable.buffers[other].bytes()))
      other = static_cast<int>(b);
  REQUIRE(other >= 0);
  (step.inputs.empty() ? rewired.executable.steps[kernel].outputs[0]
                       : rewired.executable.steps[kernel].inputs[0]) = other;
  refused(rewired, "rewired");
  // A module of the format before signatures: refused with what to do.
  ModuleFile old = file;
  old.format_version = kFirstSignedModuleFormat - 1;
  Result<std::unique_ptr<Module>> m = Module::LoadFromBytes(*SerializeModule(old), "m.kmod");
  REQUIRE_FALSE(m.ok());
  CHECK_THAT(m.error().message(), Catch::Contains("predates") && Catch::Contains("kiln compile"));
}

TEST_CASE("AOT: an attention step whose attributes its buffers do not fit is refused at load",
          "[aot]") {
  GraphBuilder g;
  Value q = g.Placeholder("q", f32, {2, 3, 5, 4});
  Value k = g.Placeholder("k", f32, {2, 3, 6, 4});
  Value v = g.Placeholder("v", f32, {2, 3, 6, 7});
  g.Output("y", MatMul(Softmax(MatMul(q, k, false, true), -1), v));
  Graph graph = *g.Build();
  const ModuleFile file = Compile(
      graph, {.input_shapes = {{"q", {2, 3, 5, 4}}, {"k", {2, 3, 6, 4}}, {"v", {2, 3, 6, 7}}}});
  std::unique_ptr<Module> module = Load(file);  // as compiled: accepted, and computes as a session
  const std::vector<std::pair<std::string, Tensor>> inputs = {{"q", Random({2, 3, 5, 4}, 1)},
                                                              {"k", Random({2, 3, 6, 4}, 2)},
                                                              {"v", Random({2, 3, 6, 7}, 3)}};
  Result<std::vector<Tensor>> got = module->Run(inputs);
  FeedList feeds;
  for (const auto& [name, value] : inputs) feeds.push_back({name, value});
  REQUIRE(got.ok());
  Result<std::vector<Tensor>> want =
      Session(graph, SessionOptions{.backend = "cpu"}).Run(feeds, {"y"});
  REQUIRE(want.ok());
  CHECK(BitwiseEqual(got->at(0), want->at(0)));
  int attention = -1;
  for (size_t i = 0; i < file.executable.steps.size(); ++i)
    if (file.executable.steps[i].callee == "attention") attention = static_cast<int>(i);
  REQUIRE(attention >= 0);
  auto refused = [&](const char* attr, int64_t value) {
    INFO(attr << " = " << value);
    ModuleFile changed = file;
    changed.executable.steps[attention].attrs.Set(attr, value);
    Result<std::unique_ptr<Module>> m = Module::LoadFromBytes(*SerializeModule(changed), "m.kmod");
    REQUIRE_FALSE(m.ok());
    CHECK_THAT(m.error().message(), Catch::Contains("attention step of"));
  };
  refused("m", 50);                       // rows past q and y
  refused("stride_v", int64_t{1} << 40);  // matrices past v
  refused("mask", 3);                     // no such mask
  refused("n", -1);
  refused("batch", int64_t{1} << 62);  // overflowing sizes
}

// `file` loads, and each change to the attributes of its assign step that has attribute `marker`
// is refused at load, naming the update.
void ExpectAssignChangesRefused(const ModuleFile& file, const char* marker,
                                const std::vector<std::pair<const char*, AttrValue>>& changes) {
  Load(file);  // as compiled: accepted
  int assign = -1;
  for (size_t i = 0; i < file.executable.steps.size(); ++i)
    if (file.executable.steps[i].callee == "assign" && file.executable.steps[i].attrs.Has(marker))
      assign = static_cast<int>(i);
  REQUIRE(assign >= 0);
  for (const auto& [attr, value] : changes) {
    INFO(attr);
    ModuleFile changed = file;
    changed.executable.steps[assign].attrs.Set(attr, value);
    Result<std::unique_ptr<Module>> m = Module::LoadFromBytes(*SerializeModule(changed), "m.kmod");
    REQUIRE_FALSE(m.ok());
    CHECK_THAT(m.error().message(), Catch::Contains("update"));
  }
}

TEST_CASE("AOT: a region update whose region its buffers do not hold is refused at load", "[aot]") {
  // The centre taps' gradient scattered into zeros and subtracted: one assign of a region.
  GraphBuilder g;
  Value grad = g.Placeholder("g", f32, {4, 3, 1, 1});
  Value w = Variable(g, "w", f32, {4, 3, 3, 3}, Initializer::Constant(0.5));
  AssignSub(w, Pad(grad, {0, 0, 1, 1, 0, 0, 1, 1}), g.Scalar(0.1f)).Named("update");
  g.Output("y", Mul(w, g.Scalar(2.0f)));
  Graph graph = *g.Build();
  const ModuleFile file =
      Compile(graph, {.targets = {"update"}, .input_shapes = {{"g", {4, 3, 1, 1}}}});
  ExpectAssignChangesRefused(
      file, "dims",
      {{"dst_offset", int64_t{100}},                                      // past w
       {"src_strides", std::vector<int64_t>{30, 1, 1, 1}},                // past the value
       {"dst_strides", std::vector<int64_t>{int64_t{1} << 62, 9, 3, 1}},  // overflowing
       {"dims", std::vector<int64_t>{4, 3, 1}},                           // fewer dims than strides
       {"dims", std::vector<int64_t>{-4, 3, 1, 1}}});
}

TEST_CASE("AOT: an update that adds a product its buffers do not hold is refused at load",
          "[aot]") {
  // A weight's gradient x^T dy subtracted: one assign that adds the product.
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {4, 6});
  Value dy = g.Placeholder("dy", f32, {4, 5});
  Value w = Variable(g, "w", f32, {6, 5}, Initializer::Constant(0.5));
  AssignSub(w, MatMul(x, dy, /*transpose_a=*/true), g.Scalar(0.1f)).Named("update");
  g.Output("y", Mul(w, g.Scalar(2.0f)));
  Graph graph = *g.Build();
  const ModuleFile file =
      Compile(graph, {.targets = {"update"}, .input_shapes = {{"x", {4, 6}}, {"dy", {4, 5}}}});
  ExpectAssignChangesRefused(file, "product",
                             {{"k", int64_t{5}},               // rows past x and dy
                              {"m", int64_t{7}},               // more than w holds
                              {"batch", int64_t{2}},           // one product only
                              {"stride_a", int64_t{1} << 62},  // overflowing
                              {"trans_a", int64_t{-1}},
                              {"mode", int64_t{0}},  // Assign does not add
                              {"post_ops", std::vector<int64_t>{2}},
                              {"dims", std::vector<int64_t>{6, 5}}});  // a region and a product
}

TEST_CASE("AOT: feeds that do not match the signature are refused", "[aot]") {
  GraphBuilder g;
  models::BuildDigitsCnn(g);
  Graph graph = *g.Build();
  std::unique_ptr<Module> module =
      Load(Compile(graph, {.fetches = {"logits"}, .input_shapes = {{"images", {2, 1, 8, 8}}}}));
  auto refused = [&](const std::vector<std::pair<std::string, Tensor>>& feeds,
                     const std::string& expected) {
    Result<std::vector<Tensor>> out = module->Run(feeds);
    REQUIRE(!out.ok());
    CHECK_THAT(out.error().message(), Catch::Contains(expected));
  };
  refused({}, "missing input 'images' (f32[2, 1, 8, 8])");
  refused({{"images", Random(Shape{3, 1, 8, 8}, 1)}}, "compiled for f32[2, 1, 8, 8]");
  refused({{"images", Random(Shape{2, 1, 8, 8}, 1).CastTo(f64)}}, "is f64[2, 1, 8, 8]");
  refused({{"pixels", Random(Shape{2, 1, 8, 8}, 1)}}, "no input 'pixels' (its inputs: images)");
  refused({{"images", Random(Shape{2, 1, 8, 8}, 1)}, {"images:0", Random(Shape{2, 1, 8, 8}, 1)}},
          "fed twice");
  CHECK(module->Run({{"images:0", Random(Shape{2, 1, 8, 8}, 1)}}).ok());
}

TEST_CASE("AOT: every needed input shape must be known", "[aot]") {
  GraphBuilder g;
  models::BuildDigitsCnn(g);
  Graph graph = *g.Build();
  Result<ModuleFile> m = compiler::CompileModule(graph, {.fetches = {"logits"}});
  REQUIRE(!m.ok());
  CHECK_THAT(m.error().message(), Catch::Contains("placeholder 'images'"));
  m = compiler::CompileModule(graph, {.input_shapes = {{"images", {2, 3, 8, 8}}}});
  REQUIRE(!m.ok());
  CHECK_THAT(m.error().message(), Catch::Contains("does not fit"));
  m = compiler::CompileModule(graph, {.input_shapes = {{"pixels", {2, 1, 8, 8}}}});
  REQUIRE(!m.ok());
  CHECK_THAT(m.error().message(), Catch::Contains("not a placeholder"));
}

}  // namespace
}  // namespace kiln
