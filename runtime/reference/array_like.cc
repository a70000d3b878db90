// Reference kernels of the shape-following array ops (ir/ops/array_like.h).
#include <cstring>

#include "runtime/reference/kernel.h"
#include "runtime/reference/loops.h"

namespace kiln::reference {

void RegisterArrayLikeKernels(KernelRegistry& r) {
  r.Register("BroadcastLike", [](KernelContext& ctx) -> Status {
    const Tensor& x = ctx.input(0);
    Tensor& y = ctx.output(0);
    BroadcastIndex from(y.shape(), x.shape());
    int size = DTypeSize(x.dtype());
    for (int64_t i = 0; i < y.num_elements(); ++i)
      std::memcpy(static_cast<uint8_t*>(y.raw_data()) + i * size,
                  static_cast<const uint8_t*>(x.raw_data()) + from(i) * size, size);
    return OkStatus();
  });
  r.Register("ReshapeLike", [](KernelContext& ctx) -> Status {
    Result<Tensor> y = ctx.input(0).Reshaped(ctx.output_type(0).shape);
    if (!y.ok()) return ctx.Fail(y.error().message());
    ctx.set_output(0, *y);
    return OkStatus();
  });
}

}  // namespace kiln::reference
