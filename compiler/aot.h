// Ahead-of-time compilation: a graph and what to run of it (fetches, targets, the inputs' shapes)
// -> a ModuleFile (runtime/module/module_file.h) that the runtime loads and runs with no compiler.
// The same pipeline as the session's JIT (compiler/plan_executable.h), with the kernels emitted as
// a shared object instead of JIT-loaded, so a module computes bitwise what `kiln run` computes on
// the cpu backend (target "cuda": on the cuda-sim backend).
//
// Inputs are the placeholders the fetches and targets need; each must have a fully known shape,
// from the graph or from `input_shapes` (a shape given for a placeholder that is not needed, or
// that contradicts a known dimension, is an error). Variables the plan reads are stored with their
// current values: the initial values of a fresh graph, or a checkpoint's when one is given.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/precision.h"
#include "ir/status.h"
#include "runtime/module/module_file.h"

namespace kiln::compiler {

struct AotOptions {
  std::vector<std::string> fetches;  // default: the graph's outputs
  std::vector<std::string> targets;  // run by every call (e.g. an optimizer's update)
  std::map<std::string, Shape> input_shapes;
  std::string checkpoint;  // variables' values; "" = their initializers
  // false: the module holds no variable values; each variable takes its initializer's value when
  // the loaded module first reads it (runtime/cpu/variable_step.cc), which gives what the
  // initializers give here (they are seeded): a fresh training module without its weights' bytes.
  bool variables = true;
  std::string source;  // recorded in the manifest
  // Mixed precision, applied as a Session applies it (needs kiln_session_passes linked); the
  // manifest records its name ("fp32", "bf16", "fp16").
  PrecisionPolicy precision = {};
  // "cpu", or "cuda": a placed plan (compiler/cuda_compiler.h) whose kernels are PTX and a cubin
  // (compiler/cubin.h, which needs the CUDA toolkit's nvJitLink) for each of kCudaArchitectures
  // and, for the simulated device, their host translations.
  std::string target = "cpu";
};

inline constexpr int kCudaArchitectures[] = {80, 90};

Result<ModuleFile> CompileModule(const Graph& graph, const AotOptions& options);

}  // namespace kiln::compiler
