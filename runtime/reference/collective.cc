// Reference kernels of the collective ops (ir/ops/collective.h). AllReduce packs its inputs into
// one message (runtime/distributed/all_reduce_message.h), sums it over the ranks through the run's
// communicator and unpacks it.
#include <chrono>

#include "runtime/distributed/all_reduce_message.h"
#include "runtime/reference/kernel.h"

namespace kiln::reference {
namespace {

Status AllReduceKernel(KernelContext& ctx) {
  Communicator* comm = ctx.state().communicator;
  if (!comm) {  // one process: every reduction of one value is the value
    for (int i = 0; i < ctx.num_inputs(); ++i) ctx.set_output(i, ctx.input(i));
    return OkStatus();
  }
  const auto start = std::chrono::steady_clock::now();
  const AllReduceScales scales =
      ScalesOf(ctx.attrs().Find("reduction")->get<std::string>(), comm->share());
  int64_t total = 0;
  for (int i = 0; i < ctx.num_inputs(); ++i) total += ctx.input(i).num_elements();
  AllReduceMessage message(ctx.input(0).dtype(), total);
  int64_t at = 0;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor& x = ctx.input(i);
    message.Pack(at, x.raw_data(), x.num_elements(), scales.before);
    at += x.num_elements();
  }
  if (Status s = comm->AllReduceSum(message.data(), message.count(), message.wide()); !s.ok())
    return ctx.Fail(s.error().message());
  comm->CountAllReduce(
      message.bytes(),
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  at = 0;
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    Tensor y(ctx.output_type(i).dtype, ctx.output_type(i).shape);
    message.Unpack(at, y.raw_data(), y.num_elements(), scales.after);
    at += y.num_elements();
    ctx.set_output(i, std::move(y));
  }
  return OkStatus();
}

}  // namespace

void RegisterCollectiveKernels(KernelRegistry& r) { r.Register("AllReduce", AllReduceKernel); }

}  // namespace kiln::reference
