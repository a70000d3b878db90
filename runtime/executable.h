// Executable: the static plan a compiled backend runs, produced by compiler/ and run by
// runtime/cpu (and, written to a file, by a loaded module).
//
// Every tensor of the plan lives in a buffer with a fully known type. Arena buffers have a byte
// offset fixed at compile time inside one arena of `arena_bytes` (buffers whose lifetimes do not
// overlap share bytes, and an elementwise step's output may be placed on an input it reads last:
// compiler/buffer_assignment.h); constant buffers point into `constants`; feed buffers are bound to
// the caller's feed tensors at run time. Steps run in order; each reads and writes buffers by
// index:
//   kKernel     a generated kernel (see compiler/kernel_spec.h for its ABI), split over threads
//               along dimension 0 of its iteration space (`rows`);
//   kLibrary    a call into a library (OpenBLAS gemm, oneDNN), parameters in `attrs`;
//   kReference  the reference kernel of one node, for ops the compiler does not lower yet.
// A plan for a CUDA device (compiler/placement.h) also says where each step runs: a step with
// `on_device` runs there (a kKernel step as the launches of its DeviceKernel), the others on the
// host. Every buffer then has a host and a device copy at the same offset of two arenas (feeds,
// constants and variables get device twins); the plan's "to_device" and "to_host" library steps
// (one buffer, as input and output) copy a buffer's bytes across where the other side reads them.
// Variable buffers hold no bytes of the plan: the "variable_read" library step points them at the
// variable's current value in the session's (or module's) store, read-only, for the rest of the
// run. After the last step, each fetch is copied out of its buffer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/attr.h"
#include "ir/graph.h"
#include "ir/tensor.h"

namespace kiln {

inline constexpr int64_t kBufferAlignment = 64;

struct BufferDesc {
  enum class Kind { kArena, kConstant, kFeed, kVariable };
  Kind kind = Kind::kArena;
  TensorType type;     // fully known shape
  int64_t offset = 0;  // kArena: byte offset in the arena
  int index = -1;      // kConstant: index in Executable::constants; kFeed: index in feeds
  std::string tensor;  // the graph tensor it holds ("node:port"), for messages and dumps
  // How its elements lie in memory: "" is dense row-major, kiln's layout everywhere; otherwise a
  // blocked activation layout that only some steps read and write (runtime/cpu/layouts.h).
  std::string layout;
  std::string op;  // the op of the node that computes it ("" when unknown), for messages
  int64_t bytes() const { return type.shape.NumElements() * DTypeSize(type.dtype); }
};

struct Step {
  enum class Kind { kKernel, kLibrary, kReference };
  Kind kind = Kind::kReference;
  std::string callee;  // kKernel: kernel symbol; kLibrary: routine name; kReference: op name
  std::vector<int> inputs;
  std::vector<int> outputs;
  AttrMap attrs;     // kLibrary: the routine's parameters
  int64_t rows = 1;  // kKernel: the extent of dimension 0 of its iteration space
  Node node;         // kReference: the node to run; otherwise the node(s) it implements (name)
  bool on_device = false;  // a CUDA plan's step that runs on the device
  // Its results do not change from run to run while the variables it reads keep their versions;
  // its outputs have bytes of their own (runtime/invariant_steps.h): the runtime may skip it.
  bool invariant = false;
};

// One launch of a generated GPU kernel: the function to call (its name in the device code; its
// host translation, which the simulated device runs, is kSimulatedFunctionPrefix + that name and
// takes the block range, grid and block sizes, a fault record and then the same arguments: see
// compiler/mlir/gpu_kernels.h), grid and block sizes, and the
// arguments. An argument is a step operand (inputs, then outputs) seen as a statically shaped,
// dense memref of `dims` (the device code takes MLIR's memref descriptor: allocated and aligned
// pointer, offset 0, sizes, strides), or, with operand -1, the 64-bit integer `value`.
inline constexpr char kSimulatedFunctionPrefix[] = "kiln_sim_";
// Every step operand a launch reads or writes starts at a device address aligned to this (device
// allocations are, and arena offsets are multiples of 64): kernels take 128-bit accesses of it.
inline constexpr int64_t kKernelOperandAlignment = 16;

struct KernelLaunch {
  struct Arg {
    int operand = -1;
    std::vector<int64_t> dims;
    int64_t value = 0;
  };
  std::string function;
  int64_t grid[3] = {1, 1, 1};
  int64_t block[3] = {1, 1, 1};
  std::vector<Arg> args;
};

// A generated kernel for the device: the launches one kKernel step (callee `name`) makes, in order.
struct DeviceKernel {
  std::string name;
  std::vector<KernelLaunch> launches;
};

struct Executable {
  int64_t arena_bytes = 0;
  std::vector<BufferDesc> buffers;
  std::vector<Tensor> constants;
  std::vector<TensorRef> feeds;  // buffer of kind kFeed with index i is bound to feeds[i]
  std::vector<int> fetches;      // the buffer of each fetch, in order
  std::vector<Step> steps;
  std::vector<DeviceKernel> device_kernels;  // a CUDA plan's kernels, by kKernel callee

  // A readable listing of buffers and steps (kiln inspect, KILN_DUMP_DIR, golden tests).
  std::string ToString() const;
  int CountSteps(Step::Kind kind) const;
  const DeviceKernel* FindDeviceKernel(const std::string& name) const;
};

const char* StepKindName(Step::Kind kind);

}  // namespace kiln
