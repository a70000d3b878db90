// Test helpers for the JIT tests (jit_test, jit_bench_test): random operands, calling packed
// kernels, the reference outputs of a KernelSpec, comparisons with tolerances, random fused specs.
#pragma once

#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "compiler/codegen/emit_mlir.h"
#include "compiler/mlir/jit.h"
#include "runtime/session.h"
#include "tests/compiler/codegen_cases.h"

namespace kiln::compiler::testing {

struct Tolerance {
  double rtol = 0, atol = 0;
};

// Random operand `arg` of `c`: uniform values with special ones (0, -0, halves, NaN, inf) mixed
// in, kept inside the op's domain where the reference would fail (integer division by zero).
inline Tensor RandomOperand(const OpCase& c, int arg, const Shape& shape, uint64_t seed) {
  DType t = c.args[arg];
  std::mt19937_64 rng(seed);
  Tensor x(t, shape);
  static const double specials[] = {0.0, -0.0, 0.5, -2.5, 1.5, NAN, INFINITY, -INFINITY, 1e-3, 60};
  bool small = c.op == "Pow";
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    if (IsFloat(t)) {
      double v = std::uniform_real_distribution<double>(-4, 4)(rng);
      if (i % 7 == 3) v = specials[(i / 7 + seed) % 10];
      if (c.op == "Pow" && arg == 0) v = std::fabs(v) + 0.01;
      if (c.op == "Pow" && arg == 1) v = std::fmod(v, 3.0);
      x.SetDouble(i, v);
    } else if (t == DType::kBool) {
      x.SetInt(i, rng() & 1);
    } else {
      int64_t v = static_cast<int64_t>(rng());
      if (small) v = static_cast<int64_t>(rng() % 15) - 4;
      if (c.op == "Div" && arg == 1 && i % 5 == 2 && t != DType::kU8) v = -1;
      x.SetInt(i, v);
      if (c.op == "Div" && arg == 1 && x.GetInt(i) == 0)
        x.SetInt(i, 3);  // the reference fails on 0
    }
  }
  return x;
}

inline void CompareTensors(const Tensor& want, const Tensor& got, Tolerance tol,
                           const std::string& label, std::vector<std::string>& failures) {
  if (want.dtype() != got.dtype() || want.shape() != got.shape()) {
    failures.push_back(label + ": got " + got.Summary(0) + ", want " + want.Summary(0));
    return;
  }
  for (int64_t i = 0; i < want.num_elements(); ++i) {
    bool ok;
    double w = want.GetDouble(i), g = got.GetDouble(i);
    if (!IsFloat(want.dtype()))
      ok = want.GetInt(i) == got.GetInt(i);
    else if (std::isnan(w) || std::isinf(w) || tol.rtol + tol.atol == 0)
      ok = (std::isnan(w) && std::isnan(g)) || w == g;
    else
      ok = std::fabs(w - g) <= tol.atol + tol.rtol * std::fabs(w);
    if (!ok) {
      failures.push_back(label + " element " + std::to_string(i) + ": got " + std::to_string(g) +
                         ", want " + std::to_string(w));
      return;
    }
  }
}

// Calls `fn` on rows [begin, end) of `outs`' shape.
inline void Call(PackedKernel fn, int64_t begin, int64_t end, const std::vector<Tensor>& ins,
                 std::vector<Tensor>& outs) {
  std::vector<void*> ptrs;
  for (const Tensor& t : ins) ptrs.push_back(const_cast<void*>(t.raw_data()));
  for (Tensor& t : outs) ptrs.push_back(t.raw_data());
  std::vector<void*> args{&begin, &end};
  for (void*& p : ptrs) args.push_back(&p);
  fn(args.data());
}

// Runs the graph on the reference executor (the oracle) and returns `fetches`.
inline std::vector<Tensor> RunReference(const GraphBuilder& g,
                                        const std::vector<TensorName>& fetches) {
  Result<Graph> graph = g.Build();
  INFO(graph.status().ToString());
  REQUIRE(graph.ok());
  Session session(*graph, SessionOptions{.backend = "reference"});
  Result<std::vector<Tensor>> out = session.Run({}, fetches);
  INFO(out.status().ToString());
  REQUIRE(out.ok());
  return *out;
}

// One op applied to constant inputs, on the reference executor.
inline Tensor ReferenceOp(const OpCase& c, const std::vector<Tensor>& inputs) {
  GraphBuilder g;
  std::vector<Value> values;
  for (const Tensor& t : inputs) values.push_back(g.Constant(t));
  Value out = g.AddOp1(c.op, values, c.attrs, SourceLocation::current());
  return RunReference(g, {out})[0];
}

// The spec evaluated op by op by the reference session, each output broadcast to spec.shape.
inline std::vector<Tensor> Reference(const KernelSpec& spec, const std::vector<Tensor>& inputs) {
  GraphBuilder g;
  std::vector<Value> values;
  for (const Tensor& t : inputs) values.push_back(g.Constant(t));
  for (const KernelSpec::Op& op : spec.ops) {
    std::vector<Value> args;
    for (int a : op.args) args.push_back(values[a]);
    if (op.op == "Constant")
      values.push_back(g.Scalar(op.attrs.Find("value")->get<double>(), op.dtype));
    else
      values.push_back(g.AddOp1(op.op, args, op.attrs, SourceLocation::current()));
  }
  std::vector<TensorName> fetches;
  for (int o : spec.outputs) fetches.push_back(values[o]);
  std::vector<Tensor> outs = RunReference(g, fetches);
  for (Tensor& t : outs) {  // broadcast to the kernel's shape
    Tensor full(t.dtype(), spec.shape);
    const int rank = spec.shape.rank(), offset = rank - t.shape().rank();
    std::vector<int64_t> strides = RowMajorStrides(t.shape());
    for (int64_t i = 0; i < full.num_elements(); ++i) {
      int64_t rest = i, j = 0;
      for (int d = rank - 1; d >= 0; --d) {
        int64_t coord = rest % spec.shape.dim(d);
        rest /= spec.shape.dim(d);
        if (d >= offset && t.shape().dim(d - offset) != 1) j += coord * strides[d - offset];
      }
      full.SetDouble(i, t.GetDouble(j));
      if (!IsFloat(t.dtype())) full.SetInt(i, t.GetInt(j));
    }
    t = full;
  }
  return outs;
}

inline std::vector<Tensor> RandomInputs(const KernelSpec& spec, uint64_t seed) {
  std::vector<Tensor> ins;
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    OpCase c{"Identity", {spec.inputs[i].dtype}, spec.inputs[i].dtype, {}};
    ins.push_back(RandomOperand(c, 0, spec.inputs[i].shape, seed + i));
  }
  return ins;
}

inline std::vector<Tensor> RunSpec(JitModule& jit, const KernelSpec& spec,
                                   const std::vector<Tensor>& ins, int pieces = 1) {
  std::vector<Tensor> outs;
  for (int o : spec.outputs) outs.emplace_back(spec.ValueType(o), spec.shape);
  Result<PackedKernel> fn = jit.Lookup(spec.name);
  REQUIRE(fn.ok());
  int64_t rows = spec.shape.rank() == 0 ? 1 : spec.shape.dim(0);
  for (int p = 0; p < pieces; ++p) Call(*fn, rows * p / pieces, rows * (p + 1) / pieces, ins, outs);
  return outs;
}

inline std::unique_ptr<JitModule> CompileSpecs(const std::vector<KernelSpec>& specs) {
  Result<std::string> text = EmitKernelModule(specs);
  INFO((text.ok() ? "" : text.error().ToString()));
  REQUIRE(text.ok());
  Result<std::unique_ptr<JitModule>> jit = JitModule::Compile(*text);
  INFO((jit.ok() ? "" : jit.error().ToString()));
  REQUIRE(jit.ok());
  return std::move(*jit);
}

// A random DAG of exactly rounded f32 ops (so the JIT must match the reference bit for bit) over
// inputs broadcast in random ways.
inline KernelSpec RandomFusedSpec(std::mt19937_64& rng, int id) {
  KernelSpec spec;
  spec.name = "fused" + std::to_string(id);
  std::vector<int64_t> dims(rng() % 5);
  for (int64_t& d : dims) d = 1 + rng() % 5;
  spec.shape = Shape(dims);
  int n_in = 1 + rng() % 3;
  for (int i = 0; i < n_in; ++i) {
    std::vector<int64_t> in(dims.begin() + rng() % (dims.size() + 1), dims.end());
    for (int64_t& d : in) d = rng() % 3 == 0 ? 1 : d;
    spec.inputs.push_back({DType::kF32, Shape(in)});
  }
  std::vector<int> f32_values;
  for (int i = 0; i < n_in; ++i) f32_values.push_back(i);
  auto pick = [&] { return f32_values[rng() % f32_values.size()]; };
  auto add = [&](const std::string& op, std::vector<int> args, DType t, AttrMap attrs = {}) {
    spec.ops.push_back({op, std::move(args), std::move(attrs), t, op + std::to_string(id)});
    int v = spec.num_values() - 1;
    if (t == DType::kF32) f32_values.push_back(v);
    return v;
  };
  static const char* binary[] = {"Add", "Sub", "Mul", "Maximum", "Minimum", "Div"};
  static const char* unary[] = {"Relu", "Neg", "Abs", "Square", "Floor", "Round", "Sign"};
  int n_ops = 1 + rng() % 8;
  for (int k = 0; k < n_ops; ++k) {
    switch (rng() % 4) {
      case 0:
        add(unary[rng() % 7], {pick()}, DType::kF32);
        break;
      case 1: {
        int c = add(rng() % 2 ? "Less" : "GreaterEqual", {pick(), pick()}, DType::kBool);
        add("Select", {c, pick(), pick()}, DType::kF32);
        break;
      }
      case 2: {
        int i = add("Cast", {pick()}, DType::kI32, Attrs({{"to", DType::kI32}}));
        add("Cast", {i}, DType::kF32, Attrs({{"to", DType::kF32}}));
        break;
      }
      default:
        add(binary[rng() % 6], {pick(), pick()}, DType::kF32);
    }
  }
  spec.outputs = {spec.num_values() - 1, pick()};
  return spec;
}

inline double BestSeconds(const std::function<void()>& f, int runs) {
  double best = 1e30;
  for (int r = 0; r < runs; ++r) {
    auto start = std::chrono::steady_clock::now();
    f();
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

}  // namespace kiln::compiler::testing
