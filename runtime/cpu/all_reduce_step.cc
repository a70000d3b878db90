// The cpu backend's AllReduce step (ir/ops/collective.h): Run packs the bucket's gradients into a
// message and starts its sum over the ranks; the program's next steps (the rest of backward) run
// while it travels; Finish waits for it and writes the outputs, which Program does before any
// later step touches their memory, and before the run ends. Without a communicator each output
// is its input.
#include <chrono>
#include <cstring>
#include <optional>

#include "runtime/cpu/step.h"
#include "runtime/distributed/all_reduce_message.h"

namespace kiln::cpu {
namespace {

class AllReduceStep : public StepRunner {
 public:
  AllReduceStep(const Step& step, const Executable& exe, std::string reduction)
      : step_(step), reduction_(std::move(reduction)) {
    for (int id : step.inputs) {
      counts_.push_back(exe.buffers[id].type.shape.NumElements());
      total_ += counts_.back();
    }
    dtype_ = exe.buffers[step.inputs[0]].type.dtype;
  }

  Status Run(StepEnv& env) const override {
    const Executable& exe = *env.executable;
    comm_ = env.communicator;
    if (!comm_) {
      for (size_t i = 0; i < step_.inputs.size(); ++i)
        std::memmove(env.data[step_.outputs[i]], env.data[step_.inputs[i]],
                     exe.buffers[step_.inputs[i]].bytes());
      return OkStatus();
    }
    const auto start = std::chrono::steady_clock::now();
    if (!message_) message_.emplace(dtype_, total_);
    scales_ = ScalesOf(reduction_, comm_->share());
    int64_t at = 0;
    for (size_t i = 0; i < step_.inputs.size(); ++i) {
      message_->Pack(at, env.data[step_.inputs[i]], counts_[i], scales_.before);
      at += counts_[i];
    }
    Result<int64_t> ticket =
        comm_->StartAllReduceSum(message_->data(), message_->count(), message_->wide());
    if (!ticket.ok())
      return step_.node.MakeNodeError(ErrorCode::kFailedPrecondition, ticket.error().message());
    ticket_ = *ticket;
    waited_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return OkStatus();
  }

  bool finishes_later() const override { return comm_ != nullptr && ticket_ != 0; }

  Status Finish(StepEnv& env) const override {
    if (!finishes_later()) return OkStatus();
    const auto start = std::chrono::steady_clock::now();
    const int64_t ticket = ticket_;
    ticket_ = 0;
    if (Status s = comm_->FinishAllReduce(ticket); !s.ok())
      return step_.node.MakeNodeError(ErrorCode::kFailedPrecondition, s.error().message());
    int64_t at = 0;
    for (size_t i = 0; i < step_.outputs.size(); ++i) {
      message_->Unpack(at, env.data[step_.outputs[i]], counts_[i], scales_.after);
      at += counts_[i];
    }
    // What the run waited for it: packing, and the wait for the sum; not its time in flight.
    waited_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    comm_->CountAllReduce(message_->bytes(), waited_);
    return OkStatus();
  }

  int64_t kept_bytes() const override {
    return total_ * DTypeSize(dtype_ == DType::kF64 ? DType::kF64 : DType::kF32);
  }

 private:
  const Step& step_;
  const std::string reduction_;
  std::vector<int64_t> counts_;  // values of each input
  int64_t total_ = 0;
  DType dtype_ = DType::kF32;
  // One run's sum in flight.
  mutable std::optional<AllReduceMessage> message_;  // made by the first run, kept
  mutable Communicator* comm_ = nullptr;
  mutable int64_t ticket_ = 0;  // 0: none in flight
  mutable AllReduceScales scales_;
  mutable double waited_ = 0;
};

}  // namespace

Result<std::unique_ptr<StepRunner>> MakeAllReduceStep(const Step& step, const Executable& exe,
                                                      const AttrMap& attrs) {
  Result<std::string> reduction = attrs.GetString("reduction");
  if (!reduction.ok())
    return step.node.MakeNodeError(ErrorCode::kInvalidArgument, reduction.error().message());
  for (size_t i = 0; i < step.inputs.size(); ++i)
    if (exe.buffers[step.inputs[i]].bytes() != exe.buffers[step.outputs[i]].bytes())
      return step.node.MakeNodeError(ErrorCode::kInvalidArgument, "output ", i, " holds ",
                                     exe.buffers[step.outputs[i]].bytes(), " bytes, input ", i, " ",
                                     exe.buffers[step.inputs[i]].bytes());
  return std::unique_ptr<StepRunner>(new AllReduceStep(step, exe, *reduction));
}

}  // namespace kiln::cpu
