#include "ir/ops/op_helpers.h"

namespace kiln::internal {

AttrMap OneAttr(const char* name, AttrValue value) {
  AttrMap a;
  a.Set(name, std::move(value));
  return a;
}

std::vector<Value> MakeOpN(const char* op, const std::vector<Value>& inputs, AttrMap attrs,
                           SourceLocation loc, size_t num_outputs) {
  for (const Value& v : inputs) {
    if (!v.valid()) continue;
    std::vector<Value> outs = v.builder()->AddOp(op, inputs, std::move(attrs), loc);
    if (outs.size() != num_outputs || !outs[0].valid()) outs.assign(num_outputs, Value());
    return outs;
  }
  return std::vector<Value>(num_outputs);
}

Value MakeOp(const char* op, const std::vector<Value>& inputs, AttrMap attrs, SourceLocation loc) {
  for (const Value& v : inputs)
    if (v.valid()) return v.builder()->AddOp(op, inputs, std::move(attrs), loc)[0];
  return Value();
}

bool TypesAgree(const TensorType& declared, const TensorType& got) {
  if (declared.dtype != got.dtype || declared.shape.rank() != got.shape.rank()) return false;
  for (int d = 0; d < got.shape.rank(); ++d)
    if (declared.shape[d] >= 0 && got.shape[d] >= 0 && declared.shape[d] != got.shape[d])
      return false;
  return true;
}

Value SumToShapeOf(Value grad, Value like) {
  if (!grad.valid() || !like.valid()) return Value();
  if (grad.shape() == like.shape() && like.shape().IsFullyKnown()) return grad;
  return MakeOp("SumLike", {grad, like}, {}, SourceLocation::current());
}

Value ScalarLike(Value like, double value) {
  if (!like.valid()) return Value();
  return like.builder()->Scalar(value, like.dtype());
}

Value MaskLike(Value cond, Value like) {
  AttrMap a;
  a.Set("to", like.valid() ? like.dtype() : f32);
  return MakeOp("Cast", {cond}, std::move(a), SourceLocation::current());
}

Value CountOverAxes(Value x, const std::vector<int64_t>& axes) {
  double known = 1;
  bool all_known = true;
  for (int64_t a : axes) {
    if (x.shape()[a] < 0)
      all_known = false;
    else
      known *= static_cast<double>(x.shape()[a]);
  }
  if (all_known) return ScalarLike(x, known);
  GraphBuilder& g = *x.builder();
  Value indices =
      g.Constant(Tensor::FromVector<int64_t>({static_cast<int64_t>(axes.size())}, axes));
  Value dims = MakeOp("Gather", {MakeOp("Shape", {x}, {}, SourceLocation::current()), indices}, {},
                      SourceLocation::current());
  AttrMap to;
  to.Set("to", x.dtype());
  return MakeOp("Cast", {MakeOp("Prod", {dims}, {}, SourceLocation::current())}, std::move(to),
                SourceLocation::current());
}

void RegisterWithGradient(OpRegistry& r, OpDef def, const std::map<std::string, GradFn>& grads) {
  auto it = grads.find(def.name);
  if (it != grads.end()) def.grad = it->second;
  r.Register(std::move(def));
}

Result<std::vector<int64_t>> IntsOfLength(const InferContext& ctx, const std::string& attr,
                                          size_t n, int64_t fill) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> v, ctx.attrs().GetInts(attr));
  if (v.empty()) return std::vector<int64_t>(n, fill);
  if (v.size() != n)
    return ctx.Fail("attribute '", attr, "' must have ", n, " values, has ", v.size());
  return v;
}

}  // namespace kiln::internal
