// libFuzzer target: a module that loads is run. A module's plan (its steps, buffers, attributes,
// signature and variables) is untrusted input that Module::Load verifies: any bytes must be
// refused or, once loaded, run to outputs or an error, never a crash, a hang or a sanitizer
// report. Its machine code is trusted like a shared library's (kernel steps are checked against
// the signatures the code defines, runtime/cpu/kernel_signature.h), so only modules without code
// are loaded: plans of library and reference steps, as the seeds are. Each loads with one thread
// and a 256 MiB budget and runs once on zeros of its signature's shapes (at most 2^16 elements
// each). The bytes are also read as the payload of a file with a correct checksum trailer, so that
// mutations reach the verifier behind the checksum.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "ir/checksummed_proto.h"
#include "runtime/module/module.h"
#include "runtime/module/module_file.h"

namespace {

void LoadAndRun(const std::string& bytes) {
  kiln::Result<kiln::ModuleFile> file = kiln::ParseModule(bytes, "fuzz.kmod");
  if (!file.ok() || file->target != "cpu" || !file->kernels.empty()) return;
  std::vector<std::pair<std::string, kiln::Tensor>> feeds;
  for (const kiln::ModuleTensorSpec& input : file->inputs) {
    const kiln::Shape& shape = input.type.shape;
    if (!shape.IsFullyKnown() || shape.NumElements() > (int64_t{1} << 16)) return;
    kiln::Result<kiln::Tensor> zeros = kiln::Tensor::Create(input.type.dtype, shape);
    if (!zeros.ok()) return;
    feeds.emplace_back(input.name, std::move(*zeros));
  }
  kiln::ModuleOptions options;
  options.threads = 1;
  options.memory_limit = int64_t{256} << 20;
  auto module = kiln::Module::LoadFromBytes(bytes, "fuzz.kmod", options);
  if (!module.ok()) return;
  (void)(*module)->Run(feeds);
}

}  // namespace

// A While with no bound on hostile input would run forever: cap every loop (an error past it).
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("KILN_MAX_LOOP_ITERATIONS", "1000", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  LoadAndRun(bytes);
  LoadAndRun(kiln::AppendChecksumTrailer(bytes));
  return 0;
}
