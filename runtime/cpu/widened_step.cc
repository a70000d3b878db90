// A library step over 16-bit floats (bf16, f16) run by its float32 routine: the step's 16-bit
// input buffers are widened into float32 scratch, the float32 routine runs on them, and its
// 16-bit outputs are rounded back once (round to nearest even). For routines that have no 16-bit
// implementation on CPUs without AVX-512 (OpenBLAS gemm, oneDNN batch normalization, bias_add), so
// that mixed-precision graphs do not fall back to reference kernels. It is correct, not faster
// than float32: the conversion is extra work (docs/mixed_precision.md).
#include "runtime/cpu/library_steps.h"

namespace kiln::cpu {
namespace {

bool Is16Bit(DType t) { return t == bf16 || t == f16; }

// 16-bit bits -> float32 and back (round to nearest even), over the session's threads.
void Widen(const uint16_t* bits, DType dtype, int64_t n, float* out, int threads) {
  if (dtype == bf16) {
#pragma omp parallel for simd num_threads(threads) schedule(static)
    for (int64_t k = 0; k < n; ++k) out[k] = BFloat16ToFloat(bits[k]);
  } else {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t k = 0; k < n; ++k) out[k] = HalfToFloat(bits[k]);
  }
}

void Narrow(const float* in, int64_t n, DType dtype, uint16_t* bits, int threads) {
  if (dtype == bf16) {
#pragma omp parallel for simd num_threads(threads) schedule(static)
    for (int64_t k = 0; k < n; ++k) bits[k] = FloatToBFloat16(in[k]);
  } else {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t k = 0; k < n; ++k) bits[k] = FloatToHalf(in[k]);
  }
}

class WidenedStep : public StepRunner {
 public:
  // `operands`: the step's buffers (inputs, then outputs) in the original plan; `local` the same
  // step renumbered over `exe32`'s buffers, which are those operands with 16-bit ones as f32.
  WidenedStep(std::vector<int> operands, size_t num_inputs, std::unique_ptr<Step> local,
              std::unique_ptr<Executable> exe32)
      : operands_(std::move(operands)),
        num_inputs_(num_inputs),
        local_(std::move(local)),
        exe32_(std::move(exe32)) {}

  Status Build(const LibraryStepFactory& make_f32, const Executable& exe) {
    KILN_ASSIGN_OR_RETURN(inner_, make_f32(*local_, *exe32_));
    // float32 copies of the 16-bit operands, allocated once (a Program runs one call at a time).
    scratch_.resize(operands_.size());
    for (size_t i = 0; i < operands_.size(); ++i) {
      const BufferDesc& b = exe.buffers[operands_[i]];
      if (Is16Bit(b.type.dtype)) scratch_[i].resize(b.type.shape.NumElements());
    }
    return OkStatus();
  }

  int64_t kept_bytes() const override {
    int64_t bytes = inner_ ? inner_->kept_bytes() : 0;
    for (const std::vector<float>& s : scratch_)
      bytes += static_cast<int64_t>(s.size() * sizeof(float));
    return bytes;
  }

  Status Run(StepEnv& env) const override {
    const std::vector<BufferDesc>& buffers = env.executable->buffers;
    std::vector<std::vector<float>>& scratch = scratch_;
    StepEnv inner;
    inner.executable = exe32_.get();
    inner.variables = env.variables;
    inner.counters = env.counters;
    inner.communicator = env.communicator;
    inner.threads = env.threads;
    for (size_t i = 0; i < operands_.size(); ++i) {
      const BufferDesc& b = buffers[operands_[i]];
      void* data = env.data[operands_[i]];
      if (!Is16Bit(b.type.dtype)) {
        inner.data.push_back(data);
        continue;
      }
      const int64_t n = b.type.shape.NumElements();
      if (i < num_inputs_)
        Widen(static_cast<const uint16_t*>(data), b.type.dtype, n, scratch[i].data(), env.threads);
      inner.data.push_back(scratch[i].data());
    }
    KILN_RETURN_IF_ERROR(inner_->Run(inner));
    for (size_t i = num_inputs_; i < operands_.size(); ++i) {
      const BufferDesc& b = buffers[operands_[i]];
      if (!Is16Bit(b.type.dtype)) continue;
      Narrow(scratch[i].data(), static_cast<int64_t>(scratch[i].size()), b.type.dtype,
             static_cast<uint16_t*>(env.data[operands_[i]]), env.threads);
    }
    return OkStatus();
  }

 private:
  std::vector<int> operands_;
  size_t num_inputs_;
  std::unique_ptr<Step> local_;
  std::unique_ptr<Executable> exe32_;
  std::unique_ptr<StepRunner> inner_;
  mutable std::vector<std::vector<float>> scratch_;
};

}  // namespace

bool HasWidenableOperands(const Step& step, const Executable& exe) {
  for (const std::vector<int>* ids : {&step.inputs, &step.outputs})
    for (int id : *ids)
      if (Is16Bit(exe.buffers[id].type.dtype)) return true;
  return false;
}

Result<std::unique_ptr<StepRunner>> MakeWidenedStep(const Step& step, const Executable& exe,
                                                    const LibraryStepFactory& make_f32) {
  auto exe32 = std::make_unique<Executable>();
  auto local = std::make_unique<Step>(step);
  local->inputs.clear();
  local->outputs.clear();
  std::vector<int> operands;
  auto add = [&](int id, std::vector<int>& into) {
    BufferDesc b = exe.buffers[id];
    if (Is16Bit(b.type.dtype)) b.type.dtype = f32;
    into.push_back(static_cast<int>(exe32->buffers.size()));
    exe32->buffers.push_back(std::move(b));
    operands.push_back(id);
  };
  for (int id : step.inputs) add(id, local->inputs);
  for (int id : step.outputs) add(id, local->outputs);
  auto runner = std::make_unique<WidenedStep>(std::move(operands), step.inputs.size(),
                                              std::move(local), std::move(exe32));
  KILN_RETURN_IF_ERROR(runner->Build(make_f32, exe));
  return std::unique_ptr<StepRunner>(std::move(runner));
}

}  // namespace kiln::cpu
