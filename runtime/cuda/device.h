// A CUDA device as the cuda backend uses it: memory, copies between it and the host, a plan's
// kernels loaded, launches, and a point to wait for them. Two implementations run the same plans:
//   "cuda"      a GPU through the driver API (driver_device.cc; driver_api.h loads the driver);
//   "cuda-sim"  the simulated device (sim_device.cc): device memory is a separate host allocation
//               poisoned with 0xff bytes (a float never written reads as NaN), every launch runs
//               the host translation of its GPU function over every block and thread of its grid
//               (compiler/mlir/gpu_kernels.h), and every launch argument and copy is checked to lie
//               inside one live device allocation, so a kernel given host memory or a buffer too
//               small, or a copy out of range, fails the run instead of passing silently; its
//               cuBLASLt is RunMatmulOnHost (matmul_call.h), its cuDNN RunConvOnHost
//               (conv_call.h); every load and store a kernel makes of
//               an argument is checked against the argument's shape (an access outside fails the
//               launch).
// Contract: operations are issued in order on one stream; Synchronize waits for all of them and
// reports the first failure. Errors name the operation and what was expected; nothing aborts.
// Stream capture (CUDA graphs): between BeginCapture and EndCapture the device records launches,
// matmuls, copies on the device and asynchronous copies from and to pinned host memory instead of
// running them, and Replay runs the recorded graph, reading device and pinned memory as they are
// then. Synchronous copies, Synchronize, Mark and Allocate are refused while capturing (on a GPU
// they would invalidate the capture), and so is an asynchronous copy of host memory that is not
// pinned (always: kiln never copies asynchronously from pageable memory); EndCapture must follow
// every BeginCapture and fails when anything issued in between did.
// Memory: Memory() says how much the device has and how much of it is free (cuMemGetInfo on a
// GPU; on the simulator its size, kSimulatedDeviceBytes unless given, less what is allocated, and
// an allocation beyond its size fails as a GPU's would).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/status.h"
#include "runtime/cpu/plan_compiler.h"
#include "runtime/executable.h"

namespace kiln {
class Communicator;
}  // namespace kiln

namespace kiln::cuda {

using DevicePtr = uint64_t;

// The simulated device's memory unless told otherwise: an 80 GB H100's.
inline constexpr int64_t kSimulatedDeviceBytes = int64_t{80} << 30;

struct DeviceMemory {
  int64_t free = 0;
  int64_t total = 0;
};

struct ConvCall;
struct ConvOperands;
class DeviceCollectives;
struct MatmulCall;
struct MatmulOperands;

// A plan's kernels loaded on a device (a CUmodule, or the simulated device's host code).
class DeviceCode {
 public:
  virtual ~DeviceCode() = default;
};

// One argument of a launch, resolved: a memref operand's device address (and bytes it spans), or
// a scalar.
struct LaunchOperand {
  DevicePtr address = 0;
  int64_t bytes = 0;
};

// A matmul made ready at load: its descriptors and algorithm on a GPU, its checked call on the
// simulator.
class PreparedMatmul {
 public:
  virtual ~PreparedMatmul() = default;
};

// A convolution made ready at load: its cuDNN graph and engine on a GPU, its checked call on the
// simulator.
class PreparedConv {
 public:
  virtual ~PreparedConv() = default;
};

// Work recorded by stream capture (a CUgraphExec on a GPU), replayed as a whole.
class DeviceGraph {
 public:
  virtual ~DeviceGraph() = default;
};

// The device memory the libraries keep, once per device from the first call prepared: cuBLASLt's
// workspace (NVIDIA's recommendation for Hopper; Ampere needs less) and cuDNN's, shared by every
// convolution on the stream. The simulated device reserves the same, so that a budget refuses the
// same plans there.
inline constexpr int64_t kMatmulWorkspaceBytes = int64_t{32} << 20;
inline constexpr int64_t kConvWorkspaceBytes = int64_t{64} << 20;

class Device {
 public:
  virtual ~Device() = default;
  // "NVIDIA H100 80GB HBM3 (sm_90, driver 13.0)" or "simulated CUDA device".
  virtual std::string Describe() const = 0;
  // The architecture to generate code for, e.g. 90 for sm_90; 0 on the simulated device, which
  // runs host translations instead of PTX.
  virtual int Architecture() const = 0;

  virtual Result<DevicePtr> Allocate(int64_t bytes) = 0;
  virtual void Free(DevicePtr address) = 0;
  virtual Result<DeviceMemory> Memory() = 0;
  // The library workspaces the device would still allocate for a plan with matmuls and/or
  // convolutions (kMatmulWorkspaceBytes, kConvWorkspaceBytes; 0 for one it holds already).
  virtual int64_t WorkspaceBytesToCome(bool matmuls, bool convs) = 0;
  virtual Status ToDevice(DevicePtr dst, const void* src, int64_t bytes) = 0;
  virtual Status ToHost(void* dst, DevicePtr src, int64_t bytes) = 0;
  // dst == src copies nothing; other overlapping ranges are an error.
  virtual Status CopyOnDevice(DevicePtr dst, DevicePtr src, int64_t bytes) = 0;

  // Page-locked host memory (cuMemHostAlloc; a registered host allocation on the simulator), for
  // the asynchronous copies below. Freed with FreePinned, before the device is destroyed.
  virtual Result<void*> AllocatePinned(int64_t bytes) = 0;
  virtual void FreePinned(void* pinned) = 0;
  // Copies between pinned host memory and the device in stream order, without waiting: the host
  // side must stay untouched until a Synchronize has passed them.
  virtual Status ToDeviceAsync(DevicePtr dst, const void* pinned_src, int64_t bytes) = 0;
  virtual Status ToHostAsync(void* pinned_dst, DevicePtr src, int64_t bytes) = 0;

  // Stream capture (see the contract above).
  virtual Status BeginCapture() = 0;
  virtual Result<std::unique_ptr<DeviceGraph>> EndCapture() = 0;
  virtual Status Replay(const DeviceGraph& graph) = 0;

  // Loads the kernels of `plan` (its PTX on a GPU; its host translations on the simulator).
  virtual Result<std::shared_ptr<DeviceCode>> Load(const CompiledPlan& plan) = 0;
  // Resolves `launch.function` in `code` (at load time, so a missing function fails early).
  virtual Status Check(const DeviceCode& code, const KernelLaunch& launch) = 0;
  // Launches: operands[i] is the i-th step operand of the launch's kernel step.
  virtual Status Launch(const DeviceCode& code, const KernelLaunch& launch,
                        const std::vector<LaunchOperand>& operands) = 0;

  // cuBLASLt's matmul (matmul_call.h) on operands at fixed device addresses, prepared once at load
  // (a GPU queries cuBLASLt's heuristic there, for the shapes and the operands' alignment; the
  // simulator checks each operand's span against its allocation), then issued by Matmul.
  virtual Result<std::shared_ptr<PreparedMatmul>> PrepareMatmul(const MatmulCall& call,
                                                                const MatmulOperands& operands) = 0;
  virtual Status Matmul(const PreparedMatmul& matmul) = 0;

  // cuDNN's convolution graph (conv_call.h) on operands at fixed device addresses, prepared once
  // at load (a GPU loads cuDNN, builds the graph and picks an engine; an error when it cannot,
  // and the caller then runs the step's generated kernel; the simulator checks each operand's
  // span against its allocation), then issued by Conv.
  virtual Result<std::shared_ptr<PreparedConv>> PrepareConv(const ConvCall& call,
                                                            const ConvOperands& operands) = 0;
  virtual Status Conv(const PreparedConv& conv) = 0;

  // The collectives of a data-parallel run (collectives.h) among the ranks of `ranks`, on this
  // device's stream: NCCL on a GPU (kFailedPrecondition where NCCL cannot load), the communicator
  // itself on the simulator. Every rank calls it at the same point (NCCL's ranks join together).
  virtual Result<std::shared_ptr<DeviceCollectives>> OpenCollectives(
      std::shared_ptr<Communicator> ranks) = 0;

  virtual Status Synchronize() = 0;

  // Timing of device work, for profiles (KILN_PROFILE): Mark() records a point in the stream's
  // order and returns its number (from 0 after ClearMarks); after Synchronize, Milliseconds(a, b)
  // is the device time between marks a and b (CUDA events on a GPU; host time on the simulator,
  // which runs each operation when it is issued).
  virtual void ClearMarks() = 0;
  virtual Result<int> Mark() = 0;
  virtual Result<double> Milliseconds(int from, int to) = 0;
};

// "cuda": the first GPU (kFailedPrecondition, one line naming libcuda.so.1, where there is no
// driver or no GPU); "cuda-sim": a simulated device of `simulated_bytes` (0:
// kSimulatedDeviceBytes) running launches on `threads` threads.
Result<std::unique_ptr<Device>> OpenDevice(const std::string& backend, int threads,
                                           int64_t simulated_bytes = 0);

// The simulated device of OpenDevice("cuda-sim"), and the real one (driver_device.cc).
std::unique_ptr<Device> MakeSimulatedDevice(int threads, int64_t bytes = kSimulatedDeviceBytes);
Result<std::unique_ptr<Device>> OpenDriverDevice();

}  // namespace kiln::cuda
