// kiln_digits_deploy: the deployment end of the digits main job. It links the runtime library
// alone (kiln_runtime: no compiler, LLVM or MLIR) and drives a compiled module through the C API
// (runtime/c_api/kiln_c.h), as a program in any language with a C FFI would.
//
//   kiln_digits_deploy MODULE.kmod IMAGES.npy LABELS.npy
//
// MODULE is the frozen digits CNN compiled by `kiln compile ... --input images=Bx1x8x8`: one input
// "images" f32[B, 1, 8, 8] and an output "logits" f32[B, 10] (or its only output). The images
// (f32[N, 1, 8, 8]) run in batches of B, the last one padded with zeros; each row's argmax is
// compared with its label (integers [N]) and the program prints
// "deployed module accuracy: 0.NNNN". Errors: one line on stderr, exit 1; bad usage: exit 2.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ir/io/npy.h"
#include "runtime/c_api/kiln_c.h"

namespace {

constexpr const char* kProgram = "kiln_digits_deploy";

int Fail(const std::string& message) {
  std::fprintf(stderr, "%s: error: %s\n", kProgram, message.c_str());
  return 1;
}

// Takes the status (if any) and returns its message, freeing it.
std::string Take(kiln_status* status) {
  std::string message = kiln_status_message(status);
  kiln_status_free(status);
  return message;
}

std::string ShapeOf(const kiln_module* m, bool input, int i) {
  int rank = input ? kiln_module_input_rank(m, i) : kiln_module_output_rank(m, i);
  std::string s = "[";
  for (int d = 0; d < rank; ++d)
    s += (d ? ", " : "") +
         std::to_string(input ? kiln_module_input_dim(m, i, d) : kiln_module_output_dim(m, i, d));
  return s + "]";
}

// The module must be the digits classifier: images f32[B, 1, 8, 8] -> logits f32[B, C].
std::string CheckSignature(const kiln_module* m, int logits) {
  if (kiln_module_num_inputs(m) != 1 || kiln_module_input_dtype(m, 0) != KILN_DTYPE_F32 ||
      kiln_module_input_rank(m, 0) != 4 || kiln_module_input_dim(m, 0, 0) < 1 ||
      kiln_module_input_dim(m, 0, 1) != 1 || kiln_module_input_dim(m, 0, 2) != 8 ||
      kiln_module_input_dim(m, 0, 3) != 8)
    return "expected one input f32[B, 1, 8, 8] (B >= 1), got " +
           std::to_string(kiln_module_num_inputs(m)) + " input(s), the first " +
           ShapeOf(m, true, 0);
  if (logits < 0) return "the module has no output 'logits' (and more than one output)";
  if (kiln_module_output_dtype(m, logits) != KILN_DTYPE_F32 ||
      kiln_module_output_rank(m, logits) != 2 ||
      kiln_module_output_dim(m, logits, 0) != kiln_module_input_dim(m, 0, 0) ||
      kiln_module_output_dim(m, logits, 1) < 1)
    return "expected logits f32[B, C] for images of batch B, got " + ShapeOf(m, false, logits);
  return "";
}

// Runs every batch of `images` and counts the rows whose argmax is their label.
std::string Evaluate(kiln_module* m, int logits, const kiln::Tensor& images,
                     const kiln::Tensor& labels, int64_t* correct) {
  const int64_t batch = kiln_module_input_dim(m, 0, 0), n = labels.num_elements();
  const int64_t classes = kiln_module_output_dim(m, logits, 1);
  std::vector<float> in(batch * 64);
  std::vector<std::vector<float>> out(kiln_module_num_outputs(m));
  std::vector<void*> outputs;
  for (int i = 0; i < kiln_module_num_outputs(m); ++i) {
    out[i].resize((kiln_module_output_bytes(m, i) + sizeof(float) - 1) / sizeof(float));
    outputs.push_back(out[i].data());
  }
  const void* inputs[] = {in.data()};
  for (int64_t start = 0; start < n; start += batch) {
    const int64_t rows = std::min(batch, n - start);
    std::fill(in.begin(), in.end(), 0.0f);
    std::memcpy(in.data(), images.data<float>() + start * 64, rows * 64 * sizeof(float));
    kiln_status* status = nullptr;
    if (kiln_module_run(m, inputs, outputs.data(), &status) != 0) return Take(status);
    const float* l = out[logits].data();
    for (int64_t r = 0; r < rows; ++r) {
      int64_t best = std::max_element(l + r * classes, l + (r + 1) * classes) - (l + r * classes);
      *correct += best == labels.GetInt(start + r);
    }
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s MODULE.kmod IMAGES.npy LABELS.npy\n", kProgram);
    return 2;
  }
  kiln::Result<kiln::Tensor> images = kiln::ReadNpy(argv[2]);
  if (!images.ok()) return Fail(images.error().message());
  kiln::Result<kiln::Tensor> labels = kiln::ReadNpy(argv[3]);
  if (!labels.ok()) return Fail(labels.error().message());
  const kiln::Shape& shape = images->shape();
  if (images->dtype() != kiln::f32 || shape.rank() != 4 || shape[1] != 1 || shape[2] != 8 ||
      shape[3] != 8)
    return Fail(std::string(argv[2]) + ": expected images f32[N, 1, 8, 8], got " +
                images->Summary(0));
  if (!kiln::IsInteger(labels->dtype()) || labels->rank() != 1 || labels->shape()[0] != shape[0])
    return Fail(std::string(argv[3]) + ": expected " + std::to_string(shape[0]) +
                " integer labels [N], got " + labels->Summary(0));
  if (shape[0] == 0) return Fail(std::string(argv[2]) + ": no images");

  kiln_status* status = nullptr;
  kiln_module* module = kiln_module_load(argv[1], /*threads=*/0, &status);
  if (!module) return Fail(Take(status));
  int logits = kiln_module_num_outputs(module) == 1 ? 0 : kiln_module_find_output(module, "logits");
  std::string error = CheckSignature(module, logits);
  if (!error.empty()) error = std::string(argv[1]) + ": " + error;
  int64_t correct = 0;
  if (error.empty()) error = Evaluate(module, logits, *images, *labels, &correct);
  kiln_module_free(module);
  if (!error.empty()) return Fail(error);
  std::printf("deployed module accuracy: %.4f\n",
              static_cast<double>(correct) / static_cast<double>(shape[0]));
  return 0;
}
