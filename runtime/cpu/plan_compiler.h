// The seam between the runtime and the compiler (dependency inversion): the runtime declares what
// it needs to run compiled code, compiler/ implements it and registers itself, so runtime/ never
// includes or links LLVM, MLIR or compiler/.
//
//   KernelLibrary  resolves a generated kernel's symbol to its packed entry point (JIT code, or
//                  later the code of a loaded module);
//   PlanCompiler   turns what a Session wants to run (a RunPlan with concrete feeds) into an
//                  Executable plus the library holding its kernels, for a target: "cpu", or
//                  "cuda" / "cuda-sim" (a placed plan whose kernels run on a CUDA device, or
//                  on the simulated one: runtime/cuda/).
// Without a registered compiler the "cpu" backend reports that it needs one.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ir/status.h"
#include "runtime/executable.h"
#include "runtime/executor.h"

namespace kiln {

// A generated kernel: args[i] points at its i-th argument (see compiler/kernel_spec.h).
using KernelEntry = void (*)(void** args);

class KernelLibrary {
 public:
  virtual ~KernelLibrary() = default;
  virtual Result<KernelEntry> Find(const std::string& symbol) const = 0;
};

struct CompiledPlan {
  Executable executable;
  // "cpu": the kKernel steps' code. "cuda-sim": the host translations of the device kernels'
  // launch functions (KernelLaunch::function; see compiler/mlir/gpu_kernels.h). May be null when
  // the plan has no kKernel step.
  std::shared_ptr<const KernelLibrary> kernels;
  std::string
      device_code;  // "cuda": the device kernels' PTX or cubin (cuModuleLoadData takes either)
  // The feeds whose values the plan was compiled for (of CompileOptions::known_feeds, those its
  // shapes need): it is valid only while they are fed those values.
  std::vector<TensorRef> specialized_on;
};

struct CompileOptions {
  int threads = 1;
  std::string target = "cpu";  // "cpu", "cuda" or "cuda-sim"
  int sm = 80;                 // "cuda": the architecture to generate PTX for
  bool tf32 = false;           // "cuda", "cuda-sim": f32 gemm steps may use TF32
  // Feeds whose values may be taken as known, for a plan whose shapes depend on them (a Range's
  // limit, a fed Slice bound); the compiler keeps the fewest it needs (specialized_on).
  std::set<TensorRef> known_feeds;
};

class PlanCompiler {
 public:
  virtual ~PlanCompiler() = default;
  // Compiles `plan` for the shapes of its feeds (their values only as known_feeds allows).
  virtual Result<CompiledPlan> Compile(const RunPlan& plan, const CompileOptions& options) = 0;
};

// Everything a compiled plan depends on, as a cache key: the nodes to run, the fed tensors with
// their types, and the fetches.
std::string PlanCacheKey(const RunPlan& plan);
// The tensors `plan` feeds, in the order of exe.feeds.
Result<std::vector<Tensor>> FeedsOf(const Executable& exe, const RunPlan& plan);
// Their versions (RunPlan::feed_versions; 0 for a feed it does not version), in the same order.
std::vector<uint64_t> FeedVersionsOf(const Executable& exe, const RunPlan& plan);

// Called once by the compiler library at start-up (see compiler/register.cc).
void RegisterPlanCompiler(std::shared_ptr<PlanCompiler> compiler);
std::shared_ptr<PlanCompiler> GetPlanCompiler();

}  // namespace kiln
