// JIT-compiled kernels against the reference kernels (the oracle): every op x dtype, broadcasting,
// rank 0, begin/end splitting, fused multi-output kernels, concurrent calls, errors.
//
// Tolerances (ToleranceFor): float32 arithmetic, rounding, comparisons, casts and selects are exact
// (NaN where NaN), since the reference's double result rounds to the same float; Rsqrt, LeakyRelu,
// Sin, Cos 1e-6 relative (an extra f32 rounding, or libm's sinf/cosf); Exp, Log, Tanh, Erf,
// Sigmoid, Elu, Gelu, Pow 2e-6 relative + 1e-6 absolute (MLIR's f32 polynomial approximations;
// the "[.jit-accuracy]" sweep in jit_bench_test.cc measures them over wide ranges). float64 uses
// libm: 1e-14. f16/bf16 compute in f32 and round once per op: 1 ulp (2^-10, 2^-7) relative.
#include "compiler/mlir/jit.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "compiler/codegen/emit_mlir.h"
#include "tests/compiler/jit_testing.h"
#include "tests/testing/temp_path.h"

namespace kiln::compiler::testing {
namespace {

Tolerance ToleranceFor(const std::string& op, DType t) {
  static const std::map<std::string, Tolerance> f32 = {
      {"Exp", {2e-6, 1e-6}},  {"Log", {2e-6, 1e-6}},     {"Tanh", {2e-6, 1e-6}},
      {"Erf", {2e-6, 1e-6}},  {"Sigmoid", {2e-6, 1e-6}}, {"Elu", {2e-6, 1e-6}},
      {"Gelu", {2e-6, 1e-6}}, {"Pow", {2e-6, 1e-6}},     {"Sin", {1e-6, 1e-7}},
      {"Cos", {1e-6, 1e-7}},  {"Rsqrt", {1e-6, 0}},      {"LeakyRelu", {1e-6, 0}}};
  bool exact = !IsFloat(t) || op == "Cast" || op == "Constant" || f32.count(op) == 0;
  if (exact) return {};
  if (t == DType::kF64) return {1e-14, 1e-15};
  if (t == DType::kF16) return {1.0 / 1024, 1e-3};
  if (t == DType::kBF16) return {1.0 / 128, 1e-2};
  return f32.at(op);
}

struct OpModule {
  std::vector<OpCase> cases;
  std::unique_ptr<JitModule> jit;
};

// Every op case in one module, compiled once for all the tests here.
OpModule& AllOpsModule() {
  static OpModule* m = [] {
    auto* m = new OpModule{AllOpCases(), nullptr};
    std::vector<KernelSpec> specs;
    for (size_t i = 0; i < m->cases.size(); ++i)
      specs.push_back(
          OneOpSpec("k" + std::to_string(i), m->cases[i], Shape{3, 4, 5}, CaseShapes(m->cases[i])));
    Result<std::string> text = EmitKernelModule(specs);
    REQUIRE(text.ok());
    auto start = std::chrono::steady_clock::now();
    Result<std::unique_ptr<JitModule>> jit = JitModule::Compile(*text, {.name = "all_ops"});
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    INFO((jit.ok() ? "" : jit.error().ToString()));
    REQUIRE(jit.ok());
    WARN("JIT: " << specs.size() << " one-op kernels compiled in " << s << " s for "
                 << (*jit)->cpu());
    m->jit = std::move(*jit);
    return m;
  }();
  return *m;
}

TEST_CASE("JIT: every op and dtype matches the reference kernels", "[jit]") {
  OpModule& m = AllOpsModule();
  std::vector<std::string> failures;
  for (size_t i = 0; i < m.cases.size(); ++i) {
    const OpCase& c = m.cases[i];
    std::vector<Shape> shapes = CaseShapes(c);
    std::vector<Tensor> ins;
    for (size_t a = 0; a < c.args.size(); ++a)
      ins.push_back(RandomOperand(c, static_cast<int>(a), shapes[a], 1000 * i + a));
    Tensor want = ReferenceOp(c, ins);
    Result<PackedKernel> fn = m.jit->Lookup("k" + std::to_string(i));
    REQUIRE(fn.ok());
    std::vector<Tensor> whole{Tensor(c.result, want.shape())},
        split{Tensor(c.result, want.shape())};
    Call(*fn, 0, 3, ins, whole);
    Call(*fn, 0, 1, ins, split);  // begin/end halves compute the same bytes as one call
    Call(*fn, 1, 3, ins, split);
    CompareTensors(want, whole[0], ToleranceFor(c.op, c.result), c.Label(), failures);
    if (!whole[0].BitwiseEquals(split[0])) failures.push_back(c.Label() + ": split rows differ");
  }
  std::string all;
  for (const std::string& f : failures) all += f + "\n";
  INFO(all);
  CHECK(failures.empty());
}

TEST_CASE("JIT: fused kernels (golden and random DAGs) match the reference, split or not",
          "[jit]") {
  std::vector<KernelSpec> specs = GoldenSpecs();
  std::mt19937_64 rng(7);
  for (int i = 0; i < 40; ++i) specs.push_back(RandomFusedSpec(rng, i));
  std::unique_ptr<JitModule> jit = CompileSpecs(specs);
  std::vector<std::string> failures;
  for (size_t s = 0; s < specs.size(); ++s) {
    std::vector<Tensor> ins = RandomInputs(specs[s], 100 * s);
    std::vector<Tensor> want = Reference(specs[s], ins);
    std::vector<Tensor> got = RunSpec(*jit, specs[s], ins);
    std::vector<Tensor> split = RunSpec(*jit, specs[s], ins, 3);
    for (size_t o = 0; o < want.size(); ++o) {
      std::string label = specs[s].name + " output " + std::to_string(o);
      CompareTensors(want[o], got[o], {}, label, failures);
      if (!got[o].BitwiseEquals(split[o])) failures.push_back(label + ": split rows differ");
    }
  }
  std::string all;
  for (const std::string& f : failures) all += f + "\n";
  INFO(all);
  CHECK(failures.empty());
}

TEST_CASE("JIT: rank 0, empty shapes, and concurrent calls of one kernel", "[jit]") {
  OpCase add{"Add", {DType::kF32, DType::kF32}, DType::kF32, {}};
  std::vector<KernelSpec> specs = {
      OneOpSpec("scalar", add, Shape{}, {Shape{}, Shape{}}),
      OneOpSpec("empty", add, Shape{0, 4}, {Shape{0, 4}, Shape{4}}),
      OneOpSpec("big", add, Shape{4096, 33}, {Shape{4096, 33}, Shape{33}})};
  std::unique_ptr<JitModule> jit = CompileSpecs(specs);
  std::vector<Tensor> ins = {Tensor::Scalar(1.5f), Tensor::Scalar(2.25f)};
  CHECK(RunSpec(*jit, specs[0], ins)[0].GetDouble(0) == 3.75);
  RunSpec(*jit, specs[1], {Tensor(DType::kF32, Shape{0, 4}), Tensor(DType::kF32, Shape{4})});

  ins = RandomInputs(specs[2], 5);
  std::vector<Tensor> want = RunSpec(*jit, specs[2], ins);
  std::vector<Tensor> outs = {Tensor(DType::kF32, Shape{4096, 33})};
  PackedKernel fn = *jit->Lookup("big");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] { Call(fn, 1024 * t, 1024 * (t + 1), ins, outs); });
  for (std::thread& t : threads) t.join();
  CHECK(outs[0].BitwiseEquals(want[0]));
}

TEST_CASE("JIT: an elementwise kernel computed in place matches it out of place, loops parallel",
          "[jit]") {
  // x -> 0.5 * (x + b) * (1 + erf((x + b) / sqrt(2))) with b broadcast, written into x's own
  // buffer as the memory plan does; 1003 columns leave a vector remainder.
  KernelSpec spec;
  spec.name = "gelu_bias";
  spec.shape = Shape{37, 1003};
  spec.inputs = {{DType::kF32, Shape{1003}}, {DType::kF32, Shape{37, 1003}}};
  auto op = [&](const std::string& name, std::vector<int> args) {
    spec.ops.push_back({name, std::move(args), {}, DType::kF32, "n"});
    return spec.num_values() - 1;
  };
  auto constant = [&](double value) {
    spec.ops.push_back({"Constant", {}, Attrs({{"value", value}}), DType::kF32, "c"});
    return spec.num_values() - 1;
  };
  int sum = op("Add", {0, 1});
  int one_plus =
      op("Add", {op("Erf", {op("Div", {sum, constant(1.4142135623730951)})}), constant(1)});
  spec.outputs = {op("Mul", {op("Mul", {sum, one_plus}), constant(0.5)})};

  std::string dir = kiln::testing::TempPath("jit_parallel_loops");
  std::filesystem::create_directories(dir);
  setenv("KILN_DUMP_DIR", dir.c_str(), 1);
  Result<std::string> text = EmitKernelModule({spec});
  REQUIRE(text.ok());
  Result<std::unique_ptr<JitModule>> jit = JitModule::Compile(*text, {.name = "in_place"});
  unsetenv("KILN_DUMP_DIR");
  INFO((jit.ok() ? "" : jit.error().ToString()));
  REQUIRE(jit.ok());
  std::ifstream ll(dir + "/in_place.ll");
  std::string ir((std::istreambuf_iterator<char>(ll)), std::istreambuf_iterator<char>());
  CHECK(ir.find("llvm.loop.parallel_accesses") != std::string::npos);
  CHECK(ir.find(kParallelLoopsAttribute) == std::string::npos);  // consumed, not left behind

  std::vector<Tensor> ins = RandomInputs(spec, 11);
  std::vector<Tensor> want = RunSpec(**jit, spec, ins);
  std::vector<std::string> failures;
  CompareTensors(Reference(spec, ins)[0], want[0], {2e-6, 1e-6}, "out of place", failures);
  CHECK(failures.empty());
  std::vector<Tensor> in_place{ins[1]};
  Call(*(*jit)->Lookup("gelu_bias"), 0, 18, ins, in_place);  // rows split as threads would
  Call(*(*jit)->Lookup("gelu_bias"), 18, 37, ins, in_place);
  CHECK(in_place[0].BitwiseEquals(want[0]));
}

TEST_CASE("JIT: bad modules and names give errors, not crashes", "[jit]") {
  Result<std::unique_ptr<JitModule>> bad = JitModule::Compile("func.func @f( {");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().code() == ErrorCode::kInvalidArgument);
  CHECK(bad.error().message().find("invalid MLIR module") != std::string::npos);
  CHECK(bad.error().message().find("kernels.mlir") == std::string::npos);  // diagnostics inline
  Result<std::unique_ptr<JitModule>> op =
      JitModule::Compile("func.func @f() { \"foo.bar\"() : () -> () return }");
  REQUIRE_FALSE(op.ok());
  CHECK(op.error().message().find("unregistered dialect") != std::string::npos);
  Result<std::unique_ptr<JitModule>> unlowerable = JitModule::Compile(
      "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> { return %a : tensor<4xf32> }");
  REQUIRE_FALSE(unlowerable.ok());
  CHECK(unlowerable.error().code() == ErrorCode::kUnimplemented);

  OpCase add{"Add", {DType::kF32, DType::kF32}, DType::kF32, {}};
  std::unique_ptr<JitModule> jit =
      CompileSpecs({OneOpSpec("k", add, Shape{3}, {Shape{3}, Shape{3}})});
  Result<PackedKernel> missing = jit->Lookup("nope");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().code() == ErrorCode::kNotFound);
}

}  // namespace
}  // namespace kiln::compiler::testing
