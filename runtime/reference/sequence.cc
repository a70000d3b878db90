// The reference kernels of the sequence and optional ops (ir/ops/sequence.h).
#include "ir/ops/sequence.h"

#include "runtime/reference/kernel.h"

namespace kiln::reference {
namespace {

// The position input `i` (a scalar) normalized against `count` entries: in [-count, limit] it is
// taken from the end when negative; `fallback` when the input is absent.
Result<int64_t> Position(const KernelContext& ctx, int i, int64_t count, int64_t limit,
                         int64_t fallback) {
  if (ctx.num_inputs() <= i) return fallback;
  const int64_t p = ctx.input(i).GetInt(0);
  if (p < -count || p > limit)
    return ctx.Fail("position ", p, " is out of range for a sequence of ", count,
                    " element(s): expected [", -count, ", ", limit, "]");
  return p < 0 ? p + count : p;
}

Status SetSequence(KernelContext& ctx, DType element_dtype, std::vector<Tensor> elements) {
  Result<Tensor> s = Tensor::Sequence(element_dtype, std::move(elements));
  if (!s.ok()) return ctx.Fail(s.error().message());
  ctx.set_output(0, std::move(*s));
  return OkStatus();
}

// Sets output 0 to `value` after checking it against the declared dtype and shape.
Status SetDeclared(KernelContext& ctx, const Tensor& value, const char* what) {
  KILN_ASSIGN_OR_RETURN(DType dtype, ctx.attrs().GetDType("dtype"));
  KILN_ASSIGN_OR_RETURN(Shape shape, ctx.attrs().GetShape("shape"));
  if (value.dtype() != dtype || !shape.IsCompatibleWith(value.shape()))
    return ctx.Fail(what, " is ", value.Summary(0), " but the node declares ", DTypeName(dtype),
                    shape.ToString());
  ctx.set_output(0, value);
  return OkStatus();
}

Status SequenceEmptyKernel(KernelContext& ctx) {
  KILN_ASSIGN_OR_RETURN(DType dtype, ctx.attrs().GetDType("dtype"));
  return SetSequence(ctx, dtype, {});
}

Status SequenceConstructKernel(KernelContext& ctx) {
  std::vector<Tensor> elements;
  for (int i = 0; i < ctx.num_inputs(); ++i) elements.push_back(ctx.input(i));
  return SetSequence(ctx, ctx.input(0).dtype(), std::move(elements));
}

Status SequenceInsertKernel(KernelContext& ctx) {
  const Tensor& s = ctx.input(0);
  const int64_t n = static_cast<int64_t>(s.elements().size());
  KILN_ASSIGN_OR_RETURN(int64_t at, Position(ctx, 2, n, n, n));
  std::vector<Tensor> elements = s.elements();
  elements.insert(elements.begin() + at, ctx.input(1));
  return SetSequence(ctx, s.element_dtype(), std::move(elements));
}

Status SequenceEraseKernel(KernelContext& ctx) {
  const Tensor& s = ctx.input(0);
  const int64_t n = static_cast<int64_t>(s.elements().size());
  if (n == 0) return ctx.Fail("cannot erase from an empty sequence");
  KILN_ASSIGN_OR_RETURN(int64_t at, Position(ctx, 1, n, n - 1, n - 1));
  std::vector<Tensor> elements = s.elements();
  elements.erase(elements.begin() + at);
  return SetSequence(ctx, s.element_dtype(), std::move(elements));
}

Status SequenceAtKernel(KernelContext& ctx) {
  const Tensor& s = ctx.input(0);
  const int64_t n = static_cast<int64_t>(s.elements().size());
  if (n == 0) return ctx.Fail("cannot read an element of an empty sequence");
  KILN_ASSIGN_OR_RETURN(int64_t at, Position(ctx, 1, n, n - 1, 0));
  return SetDeclared(ctx, s.elements()[at], "the element");
}

Status SequenceLengthKernel(KernelContext& ctx) {
  ctx.set_output(0, Tensor::Scalar<int64_t>(static_cast<int64_t>(ctx.input(0).elements().size())));
  return OkStatus();
}

Status OptionalOfKernel(KernelContext& ctx) {
  ctx.set_output(0, Tensor::Optional(ctx.input(0)));
  return OkStatus();
}

Status OptionalNoneKernel(KernelContext& ctx) {
  KILN_ASSIGN_OR_RETURN(DType dtype, ctx.attrs().GetDType("dtype"));
  ctx.set_output(0, Tensor::Optional(dtype));
  return OkStatus();
}

Status OptionalHasElementKernel(KernelContext& ctx) {
  ctx.set_output(0, Tensor::Scalar<bool>(!ctx.input(0).elements().empty()));
  return OkStatus();
}

Status OptionalGetElementKernel(KernelContext& ctx) {
  const Tensor& o = ctx.input(0);
  if (o.elements().empty()) return ctx.Fail("the optional holds no value");
  return SetDeclared(ctx, o.elements()[0], "its value");
}

}  // namespace

void RegisterSequenceKernels(KernelRegistry& r) {
  r.Register("SequenceEmpty", SequenceEmptyKernel);
  r.Register("SequenceConstruct", SequenceConstructKernel);
  r.Register("SequenceInsert", SequenceInsertKernel);
  r.Register("SequenceErase", SequenceEraseKernel);
  r.Register("SequenceAt", SequenceAtKernel);
  r.Register("SequenceLength", SequenceLengthKernel);
  r.Register("OptionalOf", OptionalOfKernel);
  r.Register("OptionalNone", OptionalNoneKernel);
  r.Register("OptionalHasElement", OptionalHasElementKernel);
  r.Register("OptionalGetElement", OptionalGetElementKernel);
}

}  // namespace kiln::reference
