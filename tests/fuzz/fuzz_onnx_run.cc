// libFuzzer target, end to end: any bytes read as an ONNX model are imported and, when they
// import, run once on the reference executor (the oracle every backend is checked against), on
// seeded random inputs of the model's input shapes (unknown dims 2, at most 2^16 elements each),
// within a 256 MiB memory budget. Import, verification, shape inference and every reference
// kernel must give outputs or an error, never a crash, a hang or a sanitizer report (loops stop
// with an error after 1000 iterations: KILN_MAX_LOOP_ITERATIONS). External
// data is resolved against an empty temporary folder, as in fuzz_onnx_import.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "ir/onnx/import.h"
#include "ir/random.h"
#include "runtime/session.h"
#include "tests/fuzz/empty_model_dir.h"

// A While with no bound on hostile input would run forever: cap every loop (an error past it).
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setenv("KILN_MAX_LOOP_ITERATIONS", "1000", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  kiln::Result<kiln::Graph> graph =
      kiln::ImportOnnxFromBytes(bytes, kiln::fuzz::EmptyModelDir(), "fuzz.onnx");
  if (!graph.ok() || graph->outputs().empty()) return 0;
  kiln::FeedList feeds;
  uint64_t stream = 0;
  for (const std::string& name : graph->inputs()) {
    kiln::Result<kiln::TensorType> type = graph->TypeOf(kiln::TensorRef{name, 0});
    if (!type.ok() || type->dtype == kiln::DType::kInvalid) return 0;
    std::vector<int64_t> dims = type->shape.dims();
    for (int64_t& d : dims)
      if (d < 0) d = 2;
    const kiln::Shape shape(dims);
    if (shape.NumElements() > (int64_t{1} << 16)) return 0;
    feeds.emplace_back(name, kiln::RandomTensor(type->dtype, shape, 4, 1, ++stream));
  }
  kiln::SessionOptions options;
  options.backend = "reference";
  options.memory_limit = int64_t{256} << 20;
  kiln::Session session(std::move(*graph), options);
  std::vector<kiln::TensorName> fetches;
  for (const kiln::GraphOutput& out : session.graph().outputs()) fetches.emplace_back(out.name);
  (void)session.Run(feeds, fetches);
  return 0;
}
