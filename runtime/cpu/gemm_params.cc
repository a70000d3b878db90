#include "runtime/cpu/gemm_params.h"

#include <initializer_list>

namespace kiln::cpu {

Result<GemmParams> ReadGemmParams(const Step& step, const Executable& exe) {
  GemmParams p;
  KILN_ASSIGN_OR_RETURN(p.m, step.attrs.GetInt("m"));
  KILN_ASSIGN_OR_RETURN(p.n, step.attrs.GetInt("n"));
  KILN_ASSIGN_OR_RETURN(p.k, step.attrs.GetInt("k"));
  KILN_ASSIGN_OR_RETURN(p.batch, step.attrs.GetInt("batch"));
  KILN_ASSIGN_OR_RETURN(p.stride_a, step.attrs.GetInt("stride_a"));
  KILN_ASSIGN_OR_RETURN(p.stride_b, step.attrs.GetInt("stride_b"));
  KILN_ASSIGN_OR_RETURN(int64_t ta, step.attrs.GetInt("trans_a"));
  KILN_ASSIGN_OR_RETURN(int64_t tb, step.attrs.GetInt("trans_b"));
  if ((ta != 0 && ta != 1) || (tb != 0 && tb != 1))
    return MakeError(ErrorCode::kInternal, "gemm: trans_a and trans_b must be 0 or 1, got ", ta,
                     " and ", tb);
  p.trans_a = ta != 0;
  p.trans_b = tb != 0;
  if (step.attrs.Has("post_ops")) {
    KILN_ASSIGN_OR_RETURN(int64_t bias, step.attrs.GetInt("bias"));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> post_ops, step.attrs.GetInts("post_ops"));
    p.bias = bias != 0;
    for (int64_t op : post_ops) {
      if (op == 2 && !p.gelu_tanh)
        p.relu = true;
      else if (op == 3 && post_ops.size() == 1)
        p.gelu_tanh = true;
      else
        return MakeError(ErrorCode::kInternal, "gemm: unknown post-ops");
    }
  }
  if (step.inputs.size() != 2u + p.bias || step.outputs.size() != 1)
    return MakeError(ErrorCode::kInternal, "gemm takes ", 2 + p.bias, " inputs and 1 output");
  const BufferDesc& a = exe.buffers[step.inputs[0]];
  const BufferDesc& b = exe.buffers[step.inputs[1]];
  const BufferDesc& c = exe.buffers[step.outputs[0]];
  p.dtype = a.type.dtype;
  p.out_dtype = c.type.dtype;
  const bool wide_output = p.out_dtype == f32 && (p.dtype == bf16 || p.dtype == f16);
  if (b.type.dtype != p.dtype || (p.out_dtype != p.dtype && !wide_output))
    return MakeError(ErrorCode::kInternal, "gemm operands differ in dtype: ", a.type.ToString(),
                     " x ", b.type.ToString(), " -> ", c.type.ToString());
  if (p.bias && !(exe.buffers[step.inputs[2]].type == TensorType{p.out_dtype, Shape{p.n}}))
    return MakeError(ErrorCode::kInternal, "gemm: the bias must be ", DTypeName(p.out_dtype), "[",
                     p.n, "], got ", exe.buffers[step.inputs[2]].type.ToString());
  // Every matrix the loop touches must lie inside its buffer (in arithmetic that cannot overflow:
  // the parameters may come from a module file).
  auto product = [](std::initializer_list<int64_t> factors) {
    __int128 p = 1;
    for (int64_t f : factors) p *= f;
    return p;
  };
  auto last = [&](int64_t stride, __int128 size) { return product({p.batch - 1, stride}) + size; };
  if (p.m < 1 || p.n < 1 || p.k < 0 || p.batch < 1 || p.stride_a < 0 || p.stride_b < 0 ||
      p.m > (int64_t{1} << 40) || p.n > (int64_t{1} << 40) || p.k > (int64_t{1} << 40) ||
      p.batch > (int64_t{1} << 40) || p.stride_a > (int64_t{1} << 40) ||
      p.stride_b > (int64_t{1} << 40) ||
      last(p.stride_a, product({p.m, p.k})) > a.type.shape.NumElements() ||
      last(p.stride_b, product({p.k, p.n})) > b.type.shape.NumElements() ||
      product({p.batch, p.m, p.n}) != c.type.shape.NumElements())
    return MakeError(ErrorCode::kInternal,
                     "gemm parameters do not fit its buffers: ", a.type.ToString(), " x ",
                     b.type.ToString(), " -> ", c.type.ToString());
  return p;
}

}  // namespace kiln::cpu
