// Library steps "concat" and "split" (compiler/copy_lowering.h: Concat; Split and ConcatGrad):
// the whole tensor is `outer` rows, each the pieces' blocks one after another (blocks[i] elements
// of piece i per row). concat copies the pieces (inputs, in order) into the whole (output 0);
// split copies the whole (input 0; ConcatGrad's other inputs are only shapes) into the pieces
// (outputs). Any dtype: bytes are copied. Rows are split over the session's threads when large.
#include <cstring>
#include <numeric>

#include "runtime/cpu/library_steps.h"

namespace kiln::cpu {
namespace {

class ConcatStep : public StepRunner {
 public:
  ConcatStep(const Step& step, bool concat, int64_t outer, std::vector<int64_t> block_bytes)
      : step_(step), concat_(concat), outer_(outer), block_bytes_(std::move(block_bytes)) {
    row_bytes_ = std::accumulate(block_bytes_.begin(), block_bytes_.end(), int64_t{0});
  }

  Status Run(StepEnv& env) const override {
    const size_t pieces = block_bytes_.size();
    char* whole =
        static_cast<char*>(concat_ ? env.data[step_.outputs[0]] : env.data[step_.inputs[0]]);
    std::vector<char*> piece(pieces);
    for (size_t i = 0; i < pieces; ++i)
      piece[i] =
          static_cast<char*>(concat_ ? env.data[step_.inputs[i]] : env.data[step_.outputs[i]]);
#pragma omp parallel for num_threads(env.threads) \
    schedule(static) if (outer_ * row_bytes_ > (1 << 20))
    for (int64_t o = 0; o < outer_; ++o) {
      int64_t at = o * row_bytes_;
      for (size_t i = 0; i < pieces; ++i) {
        if (block_bytes_[i] == 0) continue;  // an empty piece (an empty feed's data may be null)
        char* p = piece[i] + o * block_bytes_[i];
        if (concat_)
          std::memcpy(whole + at, p, static_cast<size_t>(block_bytes_[i]));
        else
          std::memcpy(p, whole + at, static_cast<size_t>(block_bytes_[i]));
        at += block_bytes_[i];
      }
    }
    return OkStatus();
  }

 private:
  const Step& step_;
  bool concat_;
  int64_t outer_;
  std::vector<int64_t> block_bytes_;
  int64_t row_bytes_ = 0;
};

}  // namespace

Result<std::unique_ptr<StepRunner>> MakeConcatStep(const Step& step, const Executable& exe) {
  const bool concat = step.callee == "concat";
  KILN_ASSIGN_OR_RETURN(int64_t outer, step.attrs.GetInt("outer"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> blocks, step.attrs.GetInts("blocks"));
  const std::vector<int>& piece_ids = concat ? step.inputs : step.outputs;
  if (step.inputs.empty() || step.outputs.empty() || blocks.size() != piece_ids.size() ||
      (concat && step.outputs.size() != 1))
    return MakeError(ErrorCode::kInternal, step.callee, ": ", blocks.size(), " blocks for ",
                     step.inputs.size(), " inputs and ", step.outputs.size(), " outputs");
  const TensorType& whole = exe.buffers[concat ? step.outputs[0] : step.inputs[0]].type;
  const int64_t size = DTypeSize(whole.dtype);
  int64_t row = 0;
  std::vector<int64_t> block_bytes;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const TensorType& piece = exe.buffers[piece_ids[i]].type;
    int64_t elements = 0;
    if (piece.dtype != whole.dtype || blocks[i] < 0 || outer < 0 ||
        __builtin_mul_overflow(outer, blocks[i], &elements) ||
        elements != piece.shape.NumElements() || __builtin_add_overflow(row, blocks[i], &row))
      return MakeError(ErrorCode::kInternal, step.callee, ": piece ", i, " ", piece.ToString(),
                       " does not fit ", outer, " rows of ", blocks[i], " elements of ",
                       whole.ToString());
    block_bytes.push_back(blocks[i] * size);
  }
  int64_t elements = 0;
  if (__builtin_mul_overflow(outer, row, &elements) || elements != whole.shape.NumElements())
    return MakeError(ErrorCode::kInternal, step.callee, ": the pieces do not make up ",
                     whole.ToString());
  return std::unique_ptr<StepRunner>(new ConcatStep(step, concat, outer, std::move(block_bytes)));
}

}  // namespace kiln::cpu
