// Memory budgets: sizes as users write them, what a plan needs, the refusal that names the largest
// buffers, and the reference backend stopping at the node whose output would not fit, with the
// variables left as they were.
#include "runtime/memory_budget.h"

#include <catch2/catch.hpp>

#include "ir/ops/array.h"
#include "ir/ops/math.h"
#include "ir/ops/reduce.h"
#include "ir/ops/state.h"
#include "runtime/session.h"

using namespace kiln;

TEST_CASE("memory budget: sizes parse as users write them", "[memory]") {
  CHECK(*ParseByteSize("4096") == 4096);
  CHECK(*ParseByteSize("64K") == 64 << 10);
  CHECK(*ParseByteSize("512M") == int64_t{512} << 20);
  CHECK(*ParseByteSize("512MiB") == int64_t{512} << 20);
  CHECK(*ParseByteSize("512mb") == int64_t{512} << 20);
  CHECK(*ParseByteSize("1.5G") == int64_t{3} << 29);
  CHECK(*ParseByteSize("2T") == int64_t{2} << 40);
  CHECK(*ParseByteSize("100B") == 100);
  for (const char* bad : {"", "M", "-1G", "0", "0.1", "1.2.3G", "12Q", "5iB", "5BB", "1 G", "G5"}) {
    INFO(bad);
    Result<int64_t> r = ParseByteSize(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code() == ErrorCode::kInvalidArgument);
  }
  CHECK_FALSE(ParseByteSize("9000000T").ok());  // beyond 8 EiB
  CHECK(FormatBytes(512) == "512 B");
  CHECK(FormatBytes(int64_t{64} << 20) == "64.0 MiB");
  CHECK(FormatBytes(int64_t{3} << 29) == "1.50 GiB");
}

TEST_CASE("memory budget: without a limit it is what the process can get", "[memory]") {
  const MemoryBudget given = HostBudget(int64_t{1} << 30);
  CHECK(given.given);
  CHECK(given.ToString() == "1.00 GiB (the memory limit)");
  const MemoryBudget host = HostBudget(0);
  CHECK_FALSE(host.given);
  CHECK(host.bytes > 0);
  CHECK_THAT(host.source, Catch::Contains("MemAvailable") || Catch::Contains("cgroup"));
}

TEST_CASE("memory budget: a plan is measured and refused naming its largest buffers",
          "[memory][bad-input]") {
  Executable exe;
  exe.arena_bytes = 8 << 20;
  BufferDesc act;
  act.type = TensorType{f32, Shape{1024, 2048}};  // 8 MiB
  act.tensor = "conv1:0";
  act.op = "Conv";
  BufferDesc weights;
  weights.kind = BufferDesc::Kind::kVariable;
  weights.type = TensorType{f32, Shape{256, 1024}};  // 1 MiB
  weights.tensor = "w:0";
  BufferDesc weights_again = weights;  // one variable read twice counts once
  BufferDesc constant;
  constant.kind = BufferDesc::Kind::kConstant;
  constant.type = TensorType{f32, Shape{1024}};
  constant.tensor = "bias:0";
  constant.index = 0;
  exe.constants.push_back(Tensor(f32, Shape{1024}));
  exe.buffers = {act, weights, weights_again, constant};
  exe.fetches = {0};

  VariableStore stored;
  const PlanMemory fresh = MeasurePlan(exe, &stored);
  CHECK(fresh.arena == 8 << 20);
  CHECK(fresh.variables == 1 << 20);
  CHECK(fresh.constants == 4096);
  CHECK(fresh.outputs == 8 << 20);
  CHECK(fresh.resident == 4096);
  CHECK(fresh.peak() == (17 << 20) + 4096);
  REQUIRE(fresh.largest.size() == 3);
  CHECK(fresh.largest[0].what == "'conv1:0' (Conv) f32[1024, 2048]");
  CHECK(fresh.largest[1].what == "variable 'w' f32[256, 1024]");

  stored.Set("w", Tensor(f32, Shape{256, 1024}));
  CHECK(MeasurePlan(exe, &stored).resident == 4096 + (1 << 20));

  // A training step's assign writes the variable's next value: still one variable, named as such.
  Executable step = exe;
  BufferDesc assigned = weights;
  assigned.tensor = "update_w:0";
  step.buffers.push_back(assigned);
  Step read, assign;
  read.kind = assign.kind = Step::Kind::kLibrary;
  read.callee = "variable_read";
  read.node.name = "w";
  read.outputs = {1};
  assign.callee = "assign";
  assign.node.name = "update_w";
  assign.node.inputs = {TensorRef{"w", 0}};
  assign.inputs = {1, 0};
  assign.outputs = {4};
  step.steps = {read, assign};
  const PlanMemory trained = MeasurePlan(step, &stored);
  CHECK(trained.variables == 1 << 20);
  CHECK(trained.resident == 4096 + (1 << 20));
  for (const PlanMemory::Buffer& b : trained.largest)
    CHECK(b.what.find("update_w") == std::string::npos);

  CHECK(CheckFits(fresh, HostBudget(18 << 20), "the plan").ok());
  Status refused = CheckFits(fresh, HostBudget(16 << 20), "the plan");
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code() == ErrorCode::kResourceExhausted);
  CHECK_THAT(refused.error().message(),
             Catch::StartsWith("the plan needs 17.0 MiB (arena 8.00 MiB, constants 4.00 KiB, "
                               "variables 1.00 MiB, outputs 8.00 MiB), over the memory budget of "
                               "16.0 MiB (the memory limit); largest buffers: 'conv1:0' (Conv) "
                               "f32[1024, 2048] 8.00 MiB, variable 'w' f32[256, 1024] 1.00 MiB"));
  // Against what the process can get, what is allocated already does not count again.
  MemoryBudget available{(17 << 20) - (1 << 20), false, "the host's MemAvailable"};
  CHECK(CheckFits(MeasurePlan(exe, &stored), available, "the plan").ok());
  CHECK_FALSE(CheckFits(fresh, available, "the plan").ok());
}

namespace {

// w += 1, then a Tile of the new value to `rows` x 1024 floats, reduced to its maximum: the Tile
// runs after the assignment, and holds rows * 4 KiB.
Graph AssignThenTile(int64_t rows) {
  GraphBuilder g;
  Value w = Variable(g, "w", f32, {1, 1024}, Initializer::Constant(1));
  Value updated =
      AssignAdd(w, g.Constant(Tensor::FromVector<float>({1, 1024}, std::vector<float>(1024, 1))));
  Value tiled = Tile(updated, {rows, 1}).Named("tiled");
  g.Output("max", Max(tiled).Named("max"));
  Result<Graph> graph = g.Build();
  REQUIRE(graph.ok());
  return *graph;
}

}  // namespace

TEST_CASE("memory budget: the reference backend stops at the node that would not fit",
          "[memory][bad-input]") {
  Session s(AssignThenTile(4096),
            SessionOptions{.backend = "reference", .memory_limit = 8 << 20});  // Tile: 16 MiB
  REQUIRE(s.InitializeVariables().ok());
  Result<std::vector<Tensor>> run = s.Run({}, {"max"});
  REQUIRE_FALSE(run.ok());
  CHECK(run.error().code() == ErrorCode::kResourceExhausted);
  CHECK_THAT(run.error().message(),
             Catch::Contains("node 'tiled' (Tile") &&
                 Catch::Contains("output 0 f32[4096, 1024] needs 16.0 MiB") &&
                 Catch::Contains("exceed the memory budget of 8.00 MiB (the memory limit)"));
  // The AssignAdd that ran before it is undone.
  CHECK(s.variables().Find("w")->ToDoubles() == std::vector<double>(1024, 1.0));

  Session roomy(AssignThenTile(4096),
                SessionOptions{.backend = "reference", .memory_limit = 64 << 20});
  Result<std::vector<Tensor>> fits = roomy.Run({}, {"max"});
  REQUIRE(fits.ok());
  CHECK(fits->at(0).ToDoubles() == std::vector<double>{2.0});
  CHECK(roomy.variables().Find("w")->ToDoubles() == std::vector<double>(1024, 2.0));
}
