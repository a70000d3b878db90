// An example plugin (runtime/plugin_api.h), built as libkiln_swish.so: the op "Swish",
// y = x * sigmoid(beta * x) (SiLU when beta = 1), with its gradient written as a graph and a CPU
// kernel. tests/runtime/plugin_test.cc checks its gradient against finite differences, trains a
// model with it on the cpu backend, and runs a module that uses it with kilnrt.
#include <cmath>

#include "ir/ops/math.h"
#include "runtime/plugin_api.h"

namespace {

using kiln::Status;
using kiln::Value;

// dy/dx = s + beta x s (1 - s) with s = sigmoid(beta x).
Status SwishGradient(kiln::GradContext& ctx) {
  KILN_ASSIGN_OR_RETURN(double beta, ctx.attrs().GetFloat("beta"));
  Value x = ctx.input(0);
  Value s = kiln::Sigmoid(x * beta);
  Value slope = s + (x * beta) * (s - s * s);
  ctx.SetInputGrad(0, ctx.grad(0) * slope);
  return kiln::OkStatus();
}

template <typename T>
void SwishLoop(const T* x, T* y, int64_t n, double beta) {
  for (int64_t i = 0; i < n; ++i) {
    const double v = static_cast<double>(x[i]);
    y[i] = static_cast<T>(v / (1.0 + std::exp(-beta * v)));
  }
}

Status SwishKernel(kiln::reference::KernelContext& ctx) {
  KILN_ASSIGN_OR_RETURN(double beta, ctx.attrs().GetFloat("beta"));
  const kiln::Tensor& x = ctx.input(0);
  kiln::Tensor& y = ctx.output(0);
  switch (x.dtype()) {
    case kiln::DType::kF32:
      SwishLoop(x.data<float>(), y.data<float>(), x.num_elements(), beta);
      break;
    case kiln::DType::kF64:
      SwishLoop(x.data<double>(), y.data<double>(), x.num_elements(), beta);
      break;
    default: {  // 16-bit floats: through double, one element at a time
      const std::vector<double> v = x.ToDoubles();
      for (int64_t i = 0; i < x.num_elements(); ++i)
        y.SetDouble(i, v[i] / (1.0 + std::exp(-beta * v[i])));
    }
  }
  return kiln::OkStatus();
}

}  // namespace

KILN_PLUGIN("kiln_swish", registrar) {
  registrar.AddOp(kiln::OpDefBuilder("Swish", "plugin")
                      .Input("x", "T")
                      .Output("y")
                      .Types("T", kiln::FloatTypes())
                      .Attr("beta", kiln::AttrType::kFloat, 1.0)
                      .Infer(kiln::SameAsInput(0))
                      .Grad(SwishGradient)
                      .Precision(kiln::PrecisionList::kFollow)
                      .Flops(kiln::FlopsPerOutputElement(5))
                      .Build(),
                  SwishKernel);
}
