// Reference kernels of the collective ops (ir/ops/collective.h). AllReduce packs its inputs into
// one message (16-bit values widened to f32), scales it by this rank's share for "mean", sums it
// over the ranks through the run's communicator and unpacks it.
#include <chrono>

#include "runtime/reference/kernel.h"

namespace kiln::reference {
namespace {

template <typename T>
Status ReduceAs(KernelContext& ctx, DType wide, Communicator& comm, double scale_before,
                double scale_after) {
  const auto start = std::chrono::steady_clock::now();
  int64_t total = 0;
  for (int i = 0; i < ctx.num_inputs(); ++i) total += ctx.input(i).num_elements();
  std::vector<T> message(static_cast<size_t>(total));
  int64_t at = 0;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor& x = ctx.input(i);
    const int64_t n = x.num_elements();
    if (x.dtype() == wide) {  // f32 into f32, f64 into f64: no conversion
      const T* in = x.data<T>();
      const T scale = static_cast<T>(scale_before);
      for (int64_t k = 0; k < n; ++k) message[at + k] = in[k] * scale;
    } else {
      for (int64_t k = 0; k < n; ++k)
        message[at + k] = static_cast<T>(x.GetDouble(k) * scale_before);
    }
    at += n;
  }
  if (Status s = comm.AllReduceSum(message.data(), total, wide); !s.ok())
    return ctx.Fail(s.error().message());
  comm.CountAllReduce(
      total * static_cast<int64_t>(sizeof(T)),
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  at = 0;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    Tensor& y = ctx.output(i);
    const int64_t n = y.num_elements();
    if (y.dtype() == wide) {
      T* out = y.data<T>();
      const T scale = static_cast<T>(scale_after);
      for (int64_t k = 0; k < n; ++k) out[k] = message[at + k] * scale;
    } else {
      for (int64_t k = 0; k < n; ++k) y.SetDouble(k, message[at + k] * scale_after);
    }
    at += n;
  }
  return OkStatus();
}

Status AllReduceKernel(KernelContext& ctx) {
  Communicator* comm = ctx.state().communicator;
  if (!comm) {  // one process: every reduction of one value is the value
    for (int i = 0; i < ctx.num_inputs(); ++i) ctx.set_output(i, ctx.input(i));
    return OkStatus();
  }
  const std::string reduction = ctx.attrs().Find("reduction")->get<std::string>();
  const double before = reduction == "mean" ? comm->share() : 1.0;
  const double after = reduction == "share_of_sum" ? comm->share() : 1.0;
  for (int i = 0; i < ctx.num_outputs(); ++i)
    if (!ctx.output(i).valid())
      ctx.set_output(i, Tensor(ctx.output_type(i).dtype, ctx.output_type(i).shape));
  if (ctx.input(0).dtype() == DType::kF64)
    return ReduceAs<double>(ctx, DType::kF64, *comm, before, after);
  return ReduceAs<float>(ctx, DType::kF32, *comm, before, after);
}

}  // namespace

void RegisterCollectiveKernels(KernelRegistry& r) { r.Register("AllReduce", AllReduceKernel); }

}  // namespace kiln::reference
