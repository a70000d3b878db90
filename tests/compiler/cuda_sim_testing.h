// Helpers of the tests that load CUDA plans on the simulated device themselves (instead of through
// a Session): the plan compiled for cuda-sim, the test failing where it does not compile.
#pragma once

#include <catch2/catch.hpp>

#include "compiler/cuda_compiler.h"
#include "runtime/executor.h"

namespace kiln::testing {

inline CompiledPlan CompileSim(const RunPlan& plan) {
  CompileOptions options;
  options.target = "cuda-sim";
  Result<CompiledPlan> compiled = compiler::CompileForCuda(plan, options);
  INFO(compiled.status().ToString());
  REQUIRE(compiled.ok());
  return std::move(*compiled);
}

}  // namespace kiln::testing
