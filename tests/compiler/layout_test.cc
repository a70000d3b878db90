// The layout pass (compiler/layout_assignment.h): alone on hand-made plans with a fixed answer
// standing in for oneDNN's, then end to end on a small residual network whose gradients are
// checked against the reference executor, and the runtime's refusal of plans whose layouts a
// step cannot read (runtime/cpu/layouts.h).
#include <catch2/catch.hpp>
#include <cmath>

#include "compiler/codegen/emit_mlir.h"
#include "compiler/cpu_compiler.h"
#include "compiler/layout_assignment.h"
#include "compiler/plan_executable.h"
#include "ir/builder.h"
#include "ir/ops/array.h"
#include "ir/ops/linalg.h"
#include "ir/ops/math.h"
#include "ir/ops/nn.h"
#include "passes/autodiff.h"
#include "runtime/cpu/layouts.h"
#include "runtime/cpu/program.h"
#include "runtime/executable_proto.h"
#include "runtime/session.h"
#include "tests/testing/differential.h"
#include "tests/testing/gradcheck_op.h"

namespace kiln {
namespace {

using compiler::LayoutStats;

BufferDesc Buffer(BufferDesc::Kind kind, Shape shape, const std::string& tensor) {
  BufferDesc b;
  b.kind = kind;
  b.type = TensorType{f32, std::move(shape)};
  b.tensor = tensor;
  return b;
}

Step MakeStep(Step::Kind kind, const std::string& callee, std::vector<int> inputs,
              std::vector<int> outputs) {
  Step s;
  s.kind = kind;
  s.callee = callee;
  s.inputs = std::move(inputs);
  s.outputs = std::move(outputs);
  s.node.name = callee;
  return s;
}

// feed %0 -> conv2d(%0, w %1) -> %2 -> kernel relu -> %3 -> conv2d(%3, w %1) -> %4 (fetched);
// a reference step reads %3 too -> %5 (fetched).
Executable TwoConvolutions(int64_t channels) {
  const Shape act{2, channels, 4, 4};
  Executable exe;
  exe.buffers = {Buffer(BufferDesc::Kind::kFeed, act, "x:0"),
                 Buffer(BufferDesc::Kind::kVariable, Shape{channels, channels, 3, 3}, "w:0"),
                 Buffer(BufferDesc::Kind::kArena, act, "conv1:0"),
                 Buffer(BufferDesc::Kind::kArena, act, "relu:0"),
                 Buffer(BufferDesc::Kind::kArena, act, "conv2:0"),
                 Buffer(BufferDesc::Kind::kArena, act, "softsign:0")};
  exe.buffers[0].index = 0;
  exe.feeds = {TensorRef{"x", 0}};
  exe.steps = {MakeStep(Step::Kind::kLibrary, "conv2d", {0, 1}, {2}),
               MakeStep(Step::Kind::kKernel, "relu", {2}, {3}),
               MakeStep(Step::Kind::kLibrary, "conv2d", {3, 1}, {4}),
               MakeStep(Step::Kind::kReference, "Softsign", {3}, {5})};
  exe.steps[1].rows = act.NumElements();  // an elementwise kernel: one row per element
  exe.fetches = {4, 5};
  return exe;
}

// A stand-in for oneDNN: every convolution computes x and y in nChw16c, w in a blocked format.
Result<std::vector<std::string>> Blocked16(const Step& step, const Executable&) {
  if (step.callee != "conv2d") return MakeError(ErrorCode::kInternal, "not a convolution");
  return std::vector<std::string>{"nChw16c", "other", "nChw16c"};
}

std::string Listing(const Executable& exe) {
  std::string s = exe.ToString();
  return s.substr(s.find('\n') + 1);  // without the arena line
}

TEST_CASE("the layout pass keeps activations blocked between convolutions", "[cpu]") {
  Executable exe = TwoConvolutions(32);
  const LayoutStats stats = compiler::AssignLayouts(exe, Blocked16);
  INFO(exe.ToString());
  // The feed and the variable stay dense (conv1 reorders x itself). conv1's output and the relu
  // between the convolutions are blocked: three wishes (conv1's y, conv2's x) against one (the
  // reference step's), which reads a dense twin made by a reorder step. conv2's output is fetched
  // (one wish each way: a tie stays dense).
  CHECK(Listing(exe) ==
        "  %0 f32[2, 32, 4, 4] feed#0  x:0\n"
        "  %1 f32[32, 32, 3, 3] variable  w:0\n"
        "  %2 f32[2, 32, 4, 4] arena@0 nChw16c  conv1:0\n"
        "  %3 f32[2, 32, 4, 4] arena@0 nChw16c  relu:0\n"
        "  %4 f32[2, 32, 4, 4] arena@0  conv2:0\n"
        "  %5 f32[2, 32, 4, 4] arena@0  softsign:0\n"
        "  %6 f32[2, 32, 4, 4] arena@0  relu:0 (dense)\n"
        "  library conv2d(%0, %1) -> (%2)  # conv2d\n"
        "  kernel relu(%2) -> (%3) rows=1024  # relu\n"
        "  library conv2d(%3, %1) -> (%4)  # conv2d\n"
        "  library reorder(%3) -> (%6)  # reorder relu:0\n"
        "  reference Softsign(%6) -> (%5)  # Softsign\n"
        "  fetch (%4, %5)\n");
  CHECK(stats.buffers == std::map<std::string, int>{{"nChw16c", 2}});
  // Dense: x, w and y of each convolution would be reordered. Now: conv1's x, both w, conv2's y
  // and the reorder step.
  CHECK(stats.reorders_if_dense == 6);
  CHECK(stats.reorders == 5);
}

TEST_CASE("the layout pass leaves dense what a layout cannot hold", "[cpu]") {
  SECTION("channels that are not a multiple of the block") {
    Executable exe = TwoConvolutions(24);
    const LayoutStats stats = compiler::AssignLayouts(exe, Blocked16);
    for (const BufferDesc& b : exe.buffers) CHECK(b.layout.empty());
    CHECK(stats.reorders == stats.reorders_if_dense);
  }
  SECTION("a broadcasting kernel between the convolutions: as many reorders either way") {
    Executable exe = TwoConvolutions(16);
    exe.buffers.push_back(Buffer(BufferDesc::Kind::kArena, Shape{16, 1, 1}, "bias:0"));
    exe.steps[1].inputs.push_back(6);  // relu(%2 + bias): operands of two shapes
    const LayoutStats stats = compiler::AssignLayouts(exe, Blocked16);
    INFO(exe.ToString());
    for (const BufferDesc& b : exe.buffers) CHECK(b.layout.empty());
    CHECK(exe.steps.size() == 4);
    CHECK(stats.reorders == stats.reorders_if_dense);
  }
  SECTION("without an answer from the runtime, convolutions keep dense operands") {
    Executable exe = TwoConvolutions(32);
    const LayoutStats stats = compiler::AssignLayouts(
        exe, [](const Step&, const Executable&) -> Result<std::vector<std::string>> {
          return MakeError(ErrorCode::kInternal, "no");
        });
    for (const BufferDesc& b : exe.buffers) CHECK(b.layout.empty());
    CHECK(stats.reorders == 0);
  }
}

Tensor Random(Shape shape, uint64_t seed) { return testing::RandomTensor(shape, seed).CastTo(f32); }

// Two residual blocks (the second with stride 2 and a 1x1 projection shortcut with a bias) after a
// stem convolution and max pooling, BatchNorm in training mode, average pooling, a 1x1
// convolution, global average pooling and a linear classifier: the loss and its gradients with
// respect to the input and every weight.
struct ResidualNet {
  Graph graph;
  FeedList feeds;
  std::vector<TensorName> fetches;
};

ResidualNet MakeResidualNet(int64_t channels) {
  GraphBuilder g;
  std::vector<Value> params;
  FeedList feeds;
  uint64_t seed = 1;
  auto param = [&](const std::string& name, Shape shape, double scale) {
    Value p = g.Placeholder(name, f32, shape);
    feeds.push_back({name, testing::RandomTensor(shape, seed++, -scale, scale).CastTo(f32)});
    params.push_back(p);
    return p;
  };
  auto ones = [&](const std::string& name, int64_t c) {
    Value p = g.Placeholder(name, f32, {c});
    feeds.push_back({name, Tensor::FromVector<float>(Shape{c}, std::vector<float>(c, 1.f))});
    return p;
  };
  auto conv_bn = [&](const std::string& name, Value h, int64_t out, int64_t stride, bool relu) {
    const int64_t in = h.shape()[1];
    Value w = param(name + "/w", Shape{out, in, 3, 3}, 0.3);
    h = Conv2D(h, w, {.strides = {stride, stride}, .pads = {1, 1, 1, 1}});
    Value scale = param(name + "/scale", Shape{out}, 0.5);
    Value bias = param(name + "/bias", Shape{out}, 0.5);
    h = BatchNorm(h, scale, bias, ones(name + "/mean", out), ones(name + "/var", out), 1e-5,
                  /*training=*/true)[0];
    return relu ? Relu(h) : h;
  };
  const int64_t c = channels;
  Value x = g.Placeholder("x", f32, {4, 3, 8, 8});
  feeds.push_back({"x", Random(Shape{4, 3, 8, 8}, 100)});
  Value h = conv_bn("stem", x, c, 1, true);
  h = MaxPool2D(h, {.kernel = {3, 3}, .strides = {1, 1}, .pads = {1, 1, 1, 1}});
  h = Relu(Add(h, conv_bn("b1/b", conv_bn("b1/a", h, c, 1, true), c, 1, false)));
  // The projection has a bias: its gradient sums dy over N, H and W in dy's (blocked) layout.
  Value shortcut =
      BiasAdd(Conv2D(h, param("b2/proj", Shape{2 * c, c, 1, 1}, 0.3), {.strides = {2, 2}}),
              param("b2/proj_bias", Shape{2 * c}, 0.5));
  h = Relu(Add(shortcut, conv_bn("b2/b", conv_bn("b2/a", h, 2 * c, 2, true), 2 * c, 1, false)));
  h = AvgPool2D(h, {.kernel = {2, 2}, .strides = {1, 1}});
  h = Conv2D(h, param("b3/w", Shape{2 * c, 2 * c, 1, 1}, 0.3));
  Value logits = MatMul(Flatten(GlobalAvgPool(h)), param("fc", Shape{2 * c, 10}, 0.3));
  Value labels = g.Placeholder("labels", i64, {4});
  feeds.push_back({"labels", Tensor::FromVector<int64_t>(Shape{4}, {1, 7, 3, 9})});
  Value loss = SoftmaxCrossEntropy(logits, labels);
  std::vector<Value> wrt = {x};
  wrt.insert(wrt.end(), params.begin(), params.end());
  Result<std::vector<Value>> grads = Gradients({loss}, wrt);
  REQUIRE(grads.ok());
  ResidualNet net;
  g.Output("loss", loss);
  net.fetches.push_back("loss");
  for (size_t i = 0; i < grads->size(); ++i) {
    const std::string name = "d" + std::to_string(i);
    g.Output(name, (*grads)[i]);
    net.fetches.push_back(name);
  }
  Result<Graph> graph = g.Build();
  REQUIRE(graph.ok());
  net.graph = std::move(*graph);
  net.feeds = std::move(feeds);
  return net;
}

// Every convolution wishing `layout` for its activations (x, y and their gradients).
compiler::LayoutQuery Wishing(const std::string& layout) {
  return [layout](const Step& step, const Executable& exe) -> Result<std::vector<std::string>> {
    const std::vector<cpu::LayoutRole> roles = cpu::OperandLayoutRoles(step, exe);
    std::vector<std::string> wishes(roles.size());
    for (size_t i = 0; i < roles.size(); ++i)
      if (roles[i] == cpu::LayoutRole::kOwn) wishes[i] = layout;
    return wishes;
  };
}

// The plan of `net`, with the runtime's layout answers unless `layouts` is given.
compiler::PlannedExecutable Planned(const ResidualNet& net,
                                    compiler::LayoutQuery layouts = nullptr) {
  Session session(net.graph);
  Result<RunPlan> plan = session.Plan(net.feeds, net.fetches, {});
  REQUIRE(plan.ok());
  compiler::PlanOptions options;
  options.can_emit = compiler::CanEmit;
  if (layouts) options.preferred_layouts = std::move(layouts);
  Result<compiler::PlannedExecutable> planned = compiler::PlanExecutable(*plan, options);
  INFO(planned.status().ToString());
  REQUIRE(planned.ok());
  return std::move(*planned);
}

TEST_CASE("a residual network's gradients match the reference with blocked activations", "[cpu]") {
  for (int64_t channels : {16, 12}) {
    INFO("channels " << channels);
    ResidualNet net = MakeResidualNet(channels);
    const compiler::PlannedExecutable planned = Planned(net);
    const LayoutStats& stats = planned.layouts;
    int blocked = 0;
    for (const auto& [layout, count] : stats.buffers) blocked += count;
    INFO(planned.lowered.executable.ToString());
    // Whatever oneDNN picks on this CPU, the plan never has more reorders than a dense one.
    CHECK(stats.reorders <= stats.reorders_if_dense);
    if (channels % 16 == 0 && blocked > 0) CHECK(stats.reorders < stats.reorders_if_dense);
    Session reference(net.graph, SessionOptions{.backend = "reference"});
    Result<std::vector<Tensor>> expected = reference.Run(net.feeds, net.fetches);
    REQUIRE(expected.ok());
    testing::CheckCompiledMatchesReference(net.graph, net.feeds, net.fetches, *expected);
  }
}

// x -> Conv2D [-> BatchNorm in training mode] -> MaxPool2D (3x3, stride 1, same size) -> Conv2D,
// fetching the pooled values and the result (and the batch statistics), in `dtype` (f32 or bf16).
Graph ConvPoolConv(DType dtype, bool batch_norm) {
  GraphBuilder g;
  Value x = g.Placeholder("x", dtype, {2, 16, 8, 8});
  Value w1 = g.Constant(Random(Shape{16, 16, 3, 3}, 1).CastTo(dtype));
  Value w2 = g.Constant(Random(Shape{16, 16, 3, 3}, 2).CastTo(dtype));
  Value h = Conv2D(x, w1, {.pads = {1, 1, 1, 1}});
  if (batch_norm) {
    auto stats = [&](uint64_t seed) { return g.Constant(Random(Shape{16}, seed).CastTo(dtype)); };
    std::vector<Value> bn = BatchNorm(h, stats(4), stats(5), stats(6), stats(7), 1e-5, true);
    g.Output("batch_mean", bn[1]);
    g.Output("batch_var", bn[2]);
    h = bn[0];
  }
  Value pooled = MaxPool2D(h, {.kernel = {3, 3}, .strides = {1, 1}, .pads = {1, 1, 1, 1}});
  g.Output("pooled", pooled);
  g.Output("y", Conv2D(pooled, w2, {.pads = {1, 1, 1, 1}}));
  Result<Graph> graph = g.Build();
  REQUIRE(graph.ok());
  return std::move(*graph);
}

TEST_CASE("bf16 convolutions, BatchNorm and pooling in blocked layouts match the reference",
          "[cpu][precision]") {
  ResidualNet net{ConvPoolConv(bf16, /*batch_norm=*/true),
                  {{"x", Random(Shape{2, 16, 8, 8}, 3).CastTo(bf16)}},
                  {"pooled", "y", "batch_mean", "batch_var"}};
  const compiler::PlannedExecutable planned = Planned(net);
  INFO(planned.lowered.executable.ToString());
  CHECK_FALSE(planned.layouts.buffers.empty());  // oneDNN blocks 16 channels on any x86-64
  Session reference(net.graph, SessionOptions{.backend = "reference"});
  Result<std::vector<Tensor>> expected = reference.Run(net.feeds, net.fetches);
  REQUIRE(expected.ok());
  testing::CheckCompiledMatchesReference(net.graph, net.feeds, net.fetches, *expected);
}

// `net` compiled with every convolution wishing `layout` for its activations, so that the steps
// between them run in it whatever oneDNN would pick on this CPU; the plan's listing in `listing`.
std::vector<Tensor> RunForced(const ResidualNet& net, const std::string& layout,
                              std::string* listing) {
  Session session(net.graph);
  Result<RunPlan> plan = session.Plan(net.feeds, net.fetches, {});
  REQUIRE(plan.ok());
  compiler::CpuCompiler forced(Wishing(layout));
  Result<CompiledPlan> compiled = forced.Compile(*plan, CompileOptions{});
  INFO(compiled.status().ToString());
  REQUIRE(compiled.ok());
  *listing = compiled->executable.ToString();
  std::vector<Tensor> feeds;
  for (const TensorRef& ref : compiled->executable.feeds)
    for (const auto& [name, t] : net.feeds)
      if (name.str() == ref.node) feeds.push_back(t);
  Result<std::unique_ptr<cpu::Program>> program = cpu::Program::Load(std::move(*compiled), 2);
  INFO(program.status().ToString());
  REQUIRE(program.ok());
  VariableStore variables;
  std::map<std::string, uint64_t> counters;
  Result<std::vector<Tensor>> out = (*program)->Run(feeds, variables, counters);
  INFO(out.status().ToString());
  REQUIRE(out.ok());
  return *out;
}

void CheckForcedLayouts(const ResidualNet& net) {
  Session reference(net.graph, SessionOptions{.backend = "reference"});
  Result<std::vector<Tensor>> expected = reference.Run(net.feeds, net.fetches);
  REQUIRE(expected.ok());
  for (const std::string layout : {"nhwc", "nChw4c", "nChw8c", "nChw16c"}) {
    std::string listing;
    const std::vector<Tensor> actual = RunForced(net, layout, &listing);
    INFO("layout " << layout << "\n" << listing);
    CHECK(listing.find(" " + layout + "  ") != std::string::npos);  // some buffer has it
    REQUIRE(actual.size() == expected->size());
    for (size_t i = 0; i < actual.size(); ++i) {
      std::string why;
      INFO("fetch " << net.fetches[i].str());
      const bool close = testing::CloseForDType((*expected)[i], actual[i], &why);
      INFO(why);
      CHECK(close);
    }
  }
}

TEST_CASE("every step between convolutions computes right in every layout", "[cpu]") {
  SECTION("a residual network's gradients (BatchNorm, pooling, sums, kernels, copies)") {
    CheckForcedLayouts(MakeResidualNet(16));
  }
  SECTION("bf16 convolutions, BatchNorm and max pooling") {
    CheckForcedLayouts(ResidualNet{ConvPoolConv(bf16, /*batch_norm=*/true),
                                   {{"x", Random(Shape{2, 16, 8, 8}, 3).CastTo(bf16)}},
                                   {"pooled", "y", "batch_mean", "batch_var"}});
  }
}

TEST_CASE("a row reduction between convolutions reads its operands dense", "[cpu]") {
  // Softmax over W of [N, C, H, W]: one generated row-reduction kernel whose operands all have
  // one shape; its rows are not its elements, so it must not run on a blocked layout.
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {2, 16, 8, 8});
  Value w1 = g.Constant(Random(Shape{16, 16, 3, 3}, 1));
  Value w2 = g.Constant(Random(Shape{16, 16, 3, 3}, 2));
  Value s = Softmax(Conv2D(x, w1, {.pads = {1, 1, 1, 1}}), -1);
  g.Output("y", Conv2D(s, w2, {.pads = {1, 1, 1, 1}}));
  Result<Graph> graph = g.Build();
  REQUIRE(graph.ok());
  ResidualNet net{std::move(*graph), {{"x", Random(Shape{2, 16, 8, 8}, 3)}}, {"y"}};
  Session reference(net.graph, SessionOptions{.backend = "reference"});
  Result<std::vector<Tensor>> expected = reference.Run(net.feeds, net.fetches);
  REQUIRE(expected.ok());
  for (const std::string layout : {"nhwc", "nChw16c"}) {
    std::string listing;
    const std::vector<Tensor> actual = RunForced(net, layout, &listing);
    INFO("layout " << layout << "\n" << listing);
    std::string why;
    const bool close = testing::CloseForDType((*expected)[0], actual[0], &why);
    INFO(why);
    CHECK(close);
  }
}

TEST_CASE("AvgPool2DGrad writes dx in dx's layout, whatever x_like's", "[cpu]") {
  // dy and dx between convolutions (blocked), x_like a dense feed.
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {2, 16, 8, 8});
  Value d = g.Placeholder("d", f32, {2, 16, 4, 4});
  Value dy = Conv2D(d, g.Constant(Random(Shape{16, 16, 3, 3}, 1)), {.pads = {1, 1, 1, 1}});
  Value dx = AvgPool2DGrad(dy, x, {.kernel = {2, 2}, .strides = {2, 2}});
  g.Output("y", Conv2D(dx, g.Constant(Random(Shape{16, 16, 3, 3}, 2)), {.pads = {1, 1, 1, 1}}));
  Result<Graph> graph = g.Build();
  REQUIRE(graph.ok());
  CheckForcedLayouts(
      ResidualNet{std::move(*graph),
                  {{"x", Random(Shape{2, 16, 8, 8}, 3)}, {"d", Random(Shape{2, 16, 4, 4}, 4)}},
                  {"y"}});
}

TEST_CASE("max pooling between blocked convolutions propagates a NaN where the reference does",
          "[cpu]") {
  // One NaN in image 1, channel 0.
  Tensor xv = Random(Shape{2, 16, 8, 8}, 3);
  xv.data<float>()[16 * 64 + 4 * 8 + 4] = std::nanf("");
  ResidualNet net{ConvPoolConv(f32, /*batch_norm=*/false), {{"x", xv}}, {"pooled", "y"}};
  const compiler::PlannedExecutable planned = Planned(net, Wishing("nChw16c"));
  const Executable& exe = planned.lowered.executable;
  INFO(exe.ToString());
  for (const Step& step : exe.steps)
    if (step.callee == "max_pool2d") CHECK(exe.buffers[step.inputs[0]].layout == "nChw16c");
  // The pooling step falls back to the reference kernel on dense copies of its blocked operands,
  // and the NaNs land where the reference puts them (image 0 stays finite).
  Session reference(net.graph, SessionOptions{.backend = "reference"});
  Result<std::vector<Tensor>> expected = reference.Run(net.feeds, net.fetches);
  REQUIRE(expected.ok());
  CHECK(std::isnan((*expected)[0].data<float>()[16 * 64 + 3 * 8 + 3]));
  CHECK_FALSE(std::isnan((*expected)[0].data<float>()[0]));
  std::string listing;
  const std::vector<Tensor> actual = RunForced(net, "nChw16c", &listing);
  for (size_t i = 0; i < actual.size(); ++i) {
    std::string why;
    const bool close = testing::CloseForDType((*expected)[i], actual[i], &why);
    INFO("fetch " << net.fetches[i].str() << ": " << why);
    CHECK(close);
  }
}

TEST_CASE("a plan whose layouts a step cannot read is refused at load", "[cpu]") {
  ResidualNet net = MakeResidualNet(16);
  compiler::PlannedExecutable planned = Planned(net, Wishing("nChw16c"));
  Executable& exe = planned.lowered.executable;
  // A step of each kind that reads a blocked buffer.
  int kernel = -1, blocked = -1;
  for (size_t s = 0; s < exe.steps.size() && kernel < 0; ++s)
    if (exe.steps[s].kind == Step::Kind::kKernel && exe.steps[s].inputs.size() == 1 &&
        !exe.buffers[exe.steps[s].inputs[0]].layout.empty()) {
      kernel = static_cast<int>(s);
      blocked = exe.steps[s].inputs[0];
    }
  REQUIRE(kernel >= 0);
  auto load_error = [&](const Executable& bad) {
    Result<std::unique_ptr<cpu::Program>> p = cpu::Program::Load(CompiledPlan{bad, nullptr}, 1);
    REQUIRE_FALSE(p.ok());
    return p.error().message();
  };
  SECTION("an unknown layout") {
    exe.buffers[blocked].layout = "nChw99c";
    CHECK_THAT(load_error(exe), Catch::Contains("knows no such layout"));
  }
  SECTION("a layout on an integer buffer") {
    exe.buffers[blocked].type.dtype = i32;
    CHECK_THAT(load_error(exe), Catch::Contains("only f32, bf16 and f16"));
  }
  SECTION("a layout on a feed") {
    for (BufferDesc& b : exe.buffers)
      if (b.kind == BufferDesc::Kind::kFeed && b.type.shape.rank() == 4) b.layout = "nChw16c";
    CHECK_THAT(load_error(exe), Catch::Contains("only arena buffers"));
  }
  SECTION("a fetched blocked buffer") {
    exe.fetches[0] = blocked;
    CHECK_THAT(load_error(exe), Catch::Contains("fetches must be dense"));
  }
  SECTION("a kernel whose operands disagree") {
    exe.buffers[exe.steps[kernel].outputs[0]].layout = "";
    CHECK_THAT(load_error(exe), Catch::Contains("must share one layout"));
  }
  SECTION("a dense-only step given a blocked buffer") {
    Step read = MakeStep(Step::Kind::kReference, "Neg", {blocked}, {blocked});
    exe.steps.insert(exe.steps.begin() + kernel + 1, read);
    CHECK_THAT(load_error(exe), Catch::Contains("dense buffers only"));
  }
  SECTION("the layouts survive the executable's proto") {
    proto::ExecutableProto p = ExecutableToProto(exe);
    Result<Executable> back = ExecutableFromProto(p);
    REQUIRE(back.ok());
    CHECK(back->ToString() == exe.ToString());
    CHECK(back->buffers[blocked].layout == exe.buffers[blocked].layout);
  }
}

}  // namespace
}  // namespace kiln
