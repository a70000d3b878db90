// Compiled module files (.kmod): what `kiln compile` writes and the runtime loads. A module is one
// plan compiled ahead of time for one target: its signature (inputs, outputs, and the targets run
// for their effect), the Executable with its constants, the variables' initial values and the
// kernels' machine code (an ELF shared object; for target "cuda", PTX for each GPU architecture
// too), plus a manifest (format version, target, the CPU features the code needs, a build id). The
// file is a ModuleProto (proto/kiln.proto) ending with a CRC32C of everything before it; it is
// written to a temporary file, synced and renamed.
//
// ParseModule refuses, with an error naming the file: a truncated or altered file (checksum), a
// newer format version, a malformed manifest or signature, an Executable whose structure is
// broken. Whether this host can run it (target, CPU features) is checked by Module::Load.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/checksummed_proto.h"
#include "ir/graph.h"
#include "ir/status.h"
#include "ir/tensor.h"
#include "runtime/executable.h"

namespace kiln {

// 2: conv2d and gemm steps may carry fused epilogues (attributes "bias", "post_ops"), which a
// version-1 runtime would ignore; it refuses version-2 modules instead.
// 3: buffers may have a blocked layout (BufferProto.layout), which older runtimes would ignore.
// 4: a cpu module's kernel code defines each kernel step's signature (runtime/cpu/
// kernel_signature.h), which runtimes check at load; a cpu module with kernel steps from before
// is refused (recompile it).
// 5: library steps name their routine by a typed value (StepProto.routine), no longer by a string;
// the reader still accepts the names earlier formats wrote.
// 6: an "assign" step may read a bf16 value for an f32 variable, and update only a region of the
// variable (strided_copy's region attributes); a version-5 runtime would refuse such a step as
// malformed instead of naming the format.
// 7: an "assign" step may add a matrix product of two inputs (attribute "product": a weight
// gradient folded into its update), which a version-6 runtime would refuse as malformed.
inline constexpr int kModuleFormatVersion = 7;
// The first format whose cpu kernel code defines the kernel-step signatures.
inline constexpr int kFirstSignedModuleFormat = 4;
// Protobuf's limit for one message (ir/checksummed_proto.h): what a module file can hold.
inline constexpr int64_t kMaxModuleBytes = kMaxChecksummedFileBytes;

struct ModuleTensorSpec {
  std::string name;  // inputs: the placeholder's name; outputs: the fetch's name
  TensorType type;
};

struct ModuleDeviceCode {
  std::string ptx;
  std::string cubin;  // ELF for this architecture; empty when the module has none
};

struct ModuleFile {
  int format_version = kModuleFormatVersion;
  std::string target = "cpu";
  std::string cpu;                        // the CPU the code was tuned for, informative
  std::vector<std::string> cpu_features;  // features the code needs (names as in cpu_features.h)
  std::string build_id;                   // set by SerializeModule
  std::string producer;
  std::string precision = "fp32";
  std::string source;
  std::vector<ModuleTensorSpec> inputs;   // inputs[i] binds executable.feeds[i]
  std::vector<ModuleTensorSpec> outputs;  // outputs[i] is executable.fetches[i]
  std::vector<std::string> targets;
  Executable executable;
  std::map<std::string, Tensor> variables;  // initial values
  // ELF shared object; empty when no step is a kernel. Target "cuda": the host translations of
  // the device kernels, which the simulated device (cuda-sim) runs.
  std::string kernels;
  // Target "cuda": the device kernels' PTX and cubin, by architecture (SelectDeviceCode).
  std::map<int, ModuleDeviceCode> device_code;
};

// The code a GPU of architecture `gpu_sm` loads from a module's `device_code`: the cubin of the
// highest architecture of its major version that is not newer than it; else the PTX of the
// highest architecture not newer than it (the driver JIT-compiles it); else kFailedPrecondition
// naming the module's architectures and the GPU's (`gpu` describes it).
struct SelectedDeviceCode {
  int sm = 0;
  bool cubin = false;
  const std::string* code = nullptr;  // into the map
};
Result<SelectedDeviceCode> SelectDeviceCode(const std::map<int, ModuleDeviceCode>& device_code,
                                            int gpu_sm, const std::string& gpu);

// The file's bytes (sets the build id: a digest of the contents). Deterministic. Refused when over
// protobuf's 2 GiB for one message.
Result<std::string> SerializeModule(ModuleFile module);
Status WriteModuleFile(const std::string& path, const ModuleFile& module);
// `origin` names the bytes in errors (the file's path).
Result<ModuleFile> ParseModule(const std::string& bytes, const std::string& origin);
Result<ModuleFile> ReadModuleFile(const std::string& path);

}  // namespace kiln
