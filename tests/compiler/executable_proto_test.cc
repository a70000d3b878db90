// A compiled plan survives being written as an ExecutableProto and read back: same listing, same
// results when loaded; a damaged one is refused at load with an error, not a crash.
#include "runtime/executable_proto.h"

#include <catch2/catch.hpp>

#include "compiler/cpu_compiler.h"
#include "ir/builder.h"
#include "ir/ops/linalg.h"
#include "ir/ops/math.h"
#include "ir/ops/reduce.h"
#include "runtime/cpu/program.h"
#include "tests/testing/gradcheck_op.h"

namespace kiln {
namespace {

struct Compiled {
  Graph graph;
  CompiledPlan plan;
  RunPlan run_plan;
};

Compiled CompileMlp() {
  GraphBuilder g;
  Value x = g.Placeholder("x", f32, {-1, 4});
  Value w = g.Constant(testing::RandomTensor(Shape{4, 3}, 1).CastTo(f32));
  Value b = g.Constant(testing::RandomTensor(Shape{3}, 2).CastTo(f32));
  g.Output("y", Tanh(Add(MatMul(x, w), b)));
  Compiled c{*g.Build(), {}, {}};
  c.run_plan.feeds[TensorRef{"x", 0}] = testing::RandomTensor(Shape{5, 4}, 3).CastTo(f32);
  c.run_plan.fetches = {*c.graph.ResolveTensor("y")};
  std::vector<const Node*> order = *c.graph.TopologicalOrder();
  for (const Node* n : order)
    if (n->name != "x") c.run_plan.nodes.push_back(n);
  Result<CompiledPlan> plan = compiler::CpuCompiler().Compile(c.run_plan, CompileOptions{});
  INFO(plan.status().ToString());
  REQUIRE(plan.ok());
  c.plan = std::move(*plan);
  return c;
}

Result<std::vector<Tensor>> Run(CompiledPlan plan, const Tensor& x) {
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<cpu::Program> program,
                        cpu::Program::Load(std::move(plan), 1));
  VariableStore variables;
  std::map<std::string, uint64_t> counters;
  return program->Run({x}, variables, counters);
}

TEST_CASE("an executable round-trips through its proto", "[cpu]") {
  Compiled c = CompileMlp();
  std::string bytes;
  REQUIRE(ExecutableToProto(c.plan.executable).SerializeToString(&bytes));
  proto::ExecutableProto parsed;
  REQUIRE(parsed.ParseFromString(bytes));
  Result<Executable> back = ExecutableFromProto(parsed);
  REQUIRE(back.ok());
  CHECK(back->ToString() == c.plan.executable.ToString());
  const Tensor& x = c.run_plan.feeds.begin()->second;
  Result<std::vector<Tensor>> expected = Run(c.plan, x);
  REQUIRE(expected.ok());
  Result<std::vector<Tensor>> actual = Run(CompiledPlan{*back, c.plan.kernels}, x);
  REQUIRE(actual.ok());
  CHECK((*actual)[0].BitwiseEquals((*expected)[0]));
}

TEST_CASE("library steps name their routine by a typed value, unknown routines are refused",
          "[cpu]") {
  Compiled c = CompileMlp();
  proto::ExecutableProto p = ExecutableToProto(c.plan.executable);
  int gemm = -1;
  for (int i = 0; i < p.steps_size(); ++i)
    if (p.steps(i).kind() == proto::StepProto::LIBRARY) {
      CHECK(p.steps(i).callee().empty());  // the typed value alone
      if (p.steps(i).routine() == proto::StepProto::GEMM) gemm = i;
    }
  REQUIRE(gemm >= 0);
  REQUIRE(ExecutableFromProto(p).ok());
  SECTION("a module of an earlier format names it as a string: still read") {
    p.mutable_steps(gemm)->clear_routine();
    p.mutable_steps(gemm)->set_callee("gemm");
    Result<Executable> back = ExecutableFromProto(p);
    REQUIRE(back.ok());
    CHECK(back->ToString() == c.plan.executable.ToString());
  }
  SECTION("a routine number this runtime does not know") {
    p.mutable_steps(gemm)->set_routine(static_cast<proto::StepProto::Routine>(999));
    Result<Executable> back = ExecutableFromProto(p);
    REQUIRE_FALSE(back.ok());
    CHECK_THAT(back.error().message(), Catch::Contains("step " + std::to_string(gemm) +
                                                       ": unknown library routine number 999"));
  }
  for (const char* name : {"no_such_routine", "", "routine_unspecified", "GEMM"}) {
    INFO("callee '" << name << "'");
    p.mutable_steps(gemm)->clear_routine();
    p.mutable_steps(gemm)->set_callee(name);
    Result<Executable> back = ExecutableFromProto(p);
    REQUIRE_FALSE(back.ok());
    CHECK_THAT(back.error().message(), Catch::Contains("unknown library routine '"));
  }
}

TEST_CASE("a damaged executable is refused at load", "[cpu]") {
  Compiled c = CompileMlp();
  SECTION("a step reading a buffer that does not exist") {
    c.plan.executable.steps[0].inputs[0] = 999;
    CHECK_THAT(Run(c.plan, c.run_plan.feeds.begin()->second).error().message(),
               Catch::Contains("uses buffer %999"));
  }
  SECTION("a buffer outside the arena") {
    for (BufferDesc& b : c.plan.executable.buffers)
      if (b.kind == BufferDesc::Kind::kArena) b.offset = c.plan.executable.arena_bytes;
    CHECK_THAT(Run(c.plan, c.run_plan.feeds.begin()->second).error().message(),
               Catch::Contains("outside the arena"));
  }
  SECTION("a variable buffer read or fetched before any step binds it") {
    // Found by fuzz_module_run: a feed's buffer retyped as a variable with no variable_read step,
    // read by a Concat and by a cross entropy (corpus/module_run/regression_unbound_variable_*).
    Executable& exe = c.plan.executable;
    Executable good = exe;
    for (BufferDesc& b : exe.buffers)
      if (b.kind == BufferDesc::Kind::kFeed) b.kind = BufferDesc::Kind::kVariable;
    CHECK_THAT(Run(c.plan, c.run_plan.feeds.begin()->second).error().message(),
               Catch::Contains("reads variable buffer %") &&
                   Catch::Contains("(x:0) before a variable_read or assign step binds it"));
    exe = good;
    BufferDesc unbound = exe.buffers[exe.fetches[0]];
    unbound.kind = BufferDesc::Kind::kVariable;
    exe.buffers.push_back(unbound);
    exe.fetches[0] = static_cast<int>(exe.buffers.size()) - 1;
    CHECK_THAT(Run(c.plan, c.run_plan.feeds.begin()->second).error().message(),
               Catch::Contains("which no variable_read or assign step binds"));
  }
  SECTION("a kernel the library does not have") {
    for (Step& s : c.plan.executable.steps)
      if (s.kind == Step::Kind::kKernel) s.callee = "no_such_kernel";
    CHECK_FALSE(Run(c.plan, c.run_plan.feeds.begin()->second).ok());
  }
  SECTION("a gemm whose parameters are out of range or do not fit its buffers") {
    Step* gemm = nullptr;
    for (Step& s : c.plan.executable.steps)
      if (s.callee == "gemm") gemm = &s;
    REQUIRE(gemm != nullptr);
    const AttrMap good = gemm->attrs;
    const std::vector<std::pair<const char*, int64_t>> bad = {
        {"trans_a", -1}, {"trans_b", 2},          {"k", 5},
        {"m", -3},       {"m", int64_t{1} << 62}, {"stride_a", int64_t{1} << 62},
        {"batch", 0}};
    for (const auto& [attr, value] : bad) {
      INFO(attr << " = " << value);
      gemm->attrs = good;
      gemm->attrs.Set(attr, value);
      Result<std::vector<Tensor>> r = Run(c.plan, c.run_plan.feeds.begin()->second);
      REQUIRE_FALSE(r.ok());
      CHECK_THAT(r.error().message(), Catch::Contains("gemm"));
    }
  }
  SECTION("a reference step whose node does not verify against its buffers") {
    // ArgMax runs its reference kernel in compiled plans.
    GraphBuilder g;
    Value x = g.Placeholder("x", f32, {2, 3});
    g.Output("y", ArgMax(x, 1));
    Graph graph = *g.Build();
    RunPlan run_plan;
    const Tensor x_value = testing::RandomTensor(Shape{2, 3}, 4).CastTo(f32);
    run_plan.feeds[TensorRef{"x", 0}] = x_value;
    run_plan.fetches = {*graph.ResolveTensor("y")};
    std::vector<const Node*> order = *graph.TopologicalOrder();
    for (const Node* n : order)
      if (n->name != "x") run_plan.nodes.push_back(n);
    Result<CompiledPlan> plan = compiler::CpuCompiler().Compile(run_plan, CompileOptions{});
    REQUIRE(plan.ok());
    Step* argmax = nullptr;
    for (Step& step : plan->executable.steps)
      if (step.kind == Step::Kind::kReference && step.node.op == "ArgMax") argmax = &step;
    REQUIRE(argmax != nullptr);
    REQUIRE(Run(*plan, x_value).ok());
    const Step good = *argmax;
    argmax->node.attrs.Set("axis", std::string("one"));  // an attribute of the wrong type
    CHECK_THAT(Run(*plan, x_value).error().message(), Catch::Contains("attribute 'axis'"));
    *argmax = good;
    argmax->node.attrs.Set("keepdims", false);  // infers [2], the buffer is [2, 1]
    CHECK_THAT(Run(*plan, x_value).error().message(),
               Catch::Contains("output 0 is i64[2] but its step writes i64[2, 1]"));
    *argmax = good;
    argmax->node.inputs.push_back(argmax->node.inputs[0]);  // two inputs for one buffer
    CHECK_THAT(Run(*plan, x_value).error().message(),
               Catch::Contains("its step reads 1 buffers for 2 inputs"));
  }
  SECTION("a feed of the wrong shape") {
    Tensor wrong(f32, Shape{2, 4});
    CHECK_THAT(Run(c.plan, wrong).error().message(),
               Catch::Contains("but the compiled plan expects f32[5, 4]"));
  }
}

}  // namespace
}  // namespace kiln
