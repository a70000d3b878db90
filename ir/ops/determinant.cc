#include "ir/ops/determinant.h"

#include <algorithm>

#include "ir/op_registry.h"
#include "ir/ops/op_helpers.h"
#include "ir/ops/registration.h"

namespace kiln {
namespace {

// x must be a stack of square matrices; returns the stack's dims.
Result<Shape> StackOfSquares(InferContext& ctx) {
  const Shape& x = ctx.shape(0);
  if (x.rank() < 2 ||
      (x[x.rank() - 1] >= 0 && x[x.rank() - 2] >= 0 && x[x.rank() - 1] != x[x.rank() - 2]))
    return ctx.Fail("x must be a stack of square matrices [..., M, M], got ",
                    ctx.input(0).ToString());
  return Shape(std::vector<int64_t>(x.dims().begin(), x.dims().end() - 2));
}

Status InferDet(InferContext& ctx) {
  KILN_ASSIGN_OR_RETURN(Shape stack, StackOfSquares(ctx));
  ctx.AddOutput(ctx.dtype(0), std::move(stack));
  return OkStatus();
}

Status InferDetGrad(InferContext& ctx) {
  KILN_ASSIGN_OR_RETURN(Shape stack, StackOfSquares(ctx));
  if (!internal::TypesAgree(TensorType{ctx.dtype(0), stack}, ctx.input(1)))
    return ctx.Fail("ddet must be ", TensorType{ctx.dtype(0), stack}.ToString(), ", got ",
                    ctx.input(1).ToString());
  ctx.AddOutput(ctx.dtype(0), ctx.shape(0));
  return OkStatus();
}

// d det(X) / dX = cofactors(X): DetGrad.
Status DetGradient(GradContext& ctx) {
  ctx.SetInputGrad(0, DetGrad(ctx.input(0), ctx.grad(0)));
  return OkStatus();
}

// About M^3 / 3 multiply-adds per matrix (the LU factorization).
double DetFlops(const FlopsContext& c) {
  const Shape* x = c.input_shape(0);
  if (x == nullptr || x->rank() < 2) return 0;
  const double m = std::max<int64_t>((*x)[x->rank() - 1], 1);
  return 2.0 * KnownElements(*x) / (m * m) * m * m * m / 3;
}

}  // namespace

Value Det(At x) { return internal::MakeOp("Det", {x.value}, {}, x.loc); }

Value DetGrad(At x, Value ddet) { return internal::MakeOp("DetGrad", {x.value, ddet}, {}, x.loc); }

void RegisterDeterminantOps(OpRegistry& r) {
  r.Register(OpDefBuilder("Det", "linalg")
                 .Input("x", "T")
                 .Output("y")
                 .Types("T", FloatTypes())
                 .Infer(InferDet)
                 .Grad(DetGradient)
                 .Precision(PrecisionList::kKeep32)
                 .Flops(DetFlops)
                 .Build());
  r.Register(OpDefBuilder("DetGrad", "linalg")
                 .Input("x", "T")
                 .Input("ddet", "T")
                 .Output("dx")
                 .Types("T", FloatTypes())
                 .Infer(InferDetGrad)
                 .NotDifferentiable()
                 .Precision(PrecisionList::kKeep32)
                 .Flops(DetFlops)
                 .Build());
}

}  // namespace kiln
