#include "ir/ops/op_helpers.h"

namespace kiln::internal {

std::vector<Value> MakeOpN(const char* op, const std::vector<Value>& inputs, AttrMap attrs,
                           SourceLocation loc) {
  for (const Value& v : inputs)
    if (v.valid()) return v.builder()->AddOp(op, inputs, std::move(attrs), loc);
  return {Value()};
}

Value MakeOp(const char* op, const std::vector<Value>& inputs, AttrMap attrs, SourceLocation loc) {
  std::vector<Value> outs = MakeOpN(op, inputs, std::move(attrs), loc);
  return outs.empty() ? Value() : outs[0];
}

Result<std::vector<int64_t>> IntsOfLength(const InferContext& ctx, const std::string& attr, size_t n,
                                          int64_t fill) {
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> v, ctx.attrs().GetInts(attr));
  if (v.empty()) return std::vector<int64_t>(n, fill);
  if (v.size() != n) return ctx.Fail("attribute '", attr, "' must have ", n, " values, has ", v.size());
  return v;
}

}  // namespace kiln::internal
