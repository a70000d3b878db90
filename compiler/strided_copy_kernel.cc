#include "compiler/strided_copy_kernel.h"

#include <sstream>

#include "ir/tensor.h"

namespace kiln::compiler {
namespace {

std::string Element(const BufferDesc& b) {
  return "i" + std::to_string(8 * DTypeSize(b.type.dtype));
}

std::string Memref(const BufferDesc& b) {
  return "memref<" + std::to_string(b.type.shape.NumElements()) + "x" + Element(b) + ">";
}

// The bits of `value` stored as `dtype` (Tensor's conversion), as a signed integer of its width.
int64_t FillBits(DType dtype, double value) {
  const Tensor one = Tensor::FromDoubles(dtype, Shape{1}, {value});
  const unsigned char* bytes = static_cast<const unsigned char*>(one.raw_data());
  const int size = DTypeSize(dtype);
  uint64_t bits = 0;
  for (int b = size; b-- > 0;) bits = bits << 8 | bytes[b];  // little-endian
  const int shift = 64 - 8 * size;
  return static_cast<int64_t>(bits << shift) >> shift;
}

}  // namespace

Result<std::optional<KernelSpec>> StridedCopyKernel(const Step& step, const Executable& exe,
                                                    const std::string& name) {
  if (step.kind != Step::Kind::kLibrary || step.callee != "strided_copy" || step.inputs.empty() ||
      step.outputs.size() != 1)
    return std::optional<KernelSpec>();
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> dims, step.attrs.GetInts("dims"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> src_strides, step.attrs.GetInts("src_strides"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> dst_strides, step.attrs.GetInts("dst_strides"));
  KILN_ASSIGN_OR_RETURN(int64_t src_offset, step.attrs.GetInt("src_offset"));
  KILN_ASSIGN_OR_RETURN(int64_t dst_offset, step.attrs.GetInt("dst_offset"));
  KILN_ASSIGN_OR_RETURN(int64_t fill, step.attrs.GetInt("fill"));
  if (dims.size() != src_strides.size() || dims.size() != dst_strides.size())
    return MakeError(ErrorCode::kInternal, "strided_copy '", step.node.name,
                     "': dims and strides differ in rank");
  int64_t total = 1;
  for (int64_t d : dims)
    if (d < 0 || __builtin_mul_overflow(total, d, &total))
      return MakeError(ErrorCode::kInternal, "strided_copy '", step.node.name, "': bad dims");
  const BufferDesc& src = exe.buffers[step.inputs[0]];
  const BufferDesc& dst = exe.buffers[step.outputs[0]];
  if (total == 0 || DTypeSize(src.type.dtype) != DTypeSize(dst.type.dtype))
    return std::optional<KernelSpec>();

  std::ostringstream os;
  os << "  func.func @" << name << "(%begin: i64, %end: i64";
  for (size_t i = 0; i < step.inputs.size(); ++i)
    os << ", %in" << i << ": " << Memref(exe.buffers[step.inputs[i]]);
  os << ", %out0: " << Memref(dst) << ") {\n"
     << "    %lo = arith.index_cast %begin : i64 to index\n"
     << "    %hi = arith.index_cast %end : i64 to index\n"
     << "    %one = arith.constant 1 : index\n";
  if (fill != 0) {  // a first loop (launch) writes the fill value everywhere
    KILN_ASSIGN_OR_RETURN(double fill_value, step.attrs.GetFloat("fill_value"));
    os << "    %zero = arith.constant 0 : index\n"
       << "    %all = arith.constant " << dst.type.shape.NumElements() << " : index\n"
       << "    scf.parallel (%j) = (%zero) to (%all) step (%one) {\n"
       << "      %fill = arith.constant " << FillBits(dst.type.dtype, fill_value) << " : "
       << Element(dst) << "\n"
       << "      memref.store %fill, %out0[%j] : " << Memref(dst) << "\n"
       << "      scf.yield\n"
       << "    }\n";
  }
  os << "    scf.parallel (%i) = (%lo) to (%hi) step (%one) {\n"
     << "      %s = arith.constant " << src_offset << " : index\n"
     << "      %t = arith.constant " << dst_offset << " : index\n";
  // Split %i over the dims, innermost first (c_d = rest % dims[d], rest = rest / dims[d]), adding
  // c_d times each side's stride to its offset.
  std::string rest = "%i", s = "%s", t = "%t";
  for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
    const std::string n = std::to_string(d);
    os << "      %dim" << n << " = arith.constant " << dims[d] << " : index\n"
       << "      %c" << n << " = arith.remui " << rest << ", %dim" << n << " : index\n"
       << "      %q" << n << " = arith.divui " << rest << ", %dim" << n << " : index\n"
       << "      %ss" << n << " = arith.constant " << src_strides[d] << " : index\n"
       << "      %ts" << n << " = arith.constant " << dst_strides[d] << " : index\n"
       << "      %sp" << n << " = arith.muli %c" << n << ", %ss" << n << " : index\n"
       << "      %tp" << n << " = arith.muli %c" << n << ", %ts" << n << " : index\n"
       << "      %sa" << n << " = arith.addi " << s << ", %sp" << n << " : index\n"
       << "      %ta" << n << " = arith.addi " << t << ", %tp" << n << " : index\n";
    rest = "%q" + n;
    s = "%sa" + n;
    t = "%ta" + n;
  }
  os << "      %v = memref.load %in0[" << s << "] : " << Memref(src) << "\n"
     << "      memref.store %v, %out0[" << t << "] : " << Memref(dst) << "\n"
     << "      scf.yield\n"
     << "    }\n"
     << "    return\n"
     << "  }\n";
  return std::optional<KernelSpec>(KernelSpec::Raw(name, total, os.str()));
}

}  // namespace kiln::compiler
