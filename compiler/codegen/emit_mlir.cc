#include "compiler/codegen/emit_mlir.h"

#include <cctype>
#include <set>
#include <sstream>

#include "compiler/codegen/emit_reduction.h"
#include "compiler/codegen/scalar_ops.h"
#include "compiler/codegen/scalar_writer.h"

namespace kiln::compiler {
namespace {

using internal::ComputeType;
using internal::Join;
using internal::MemRef;
using internal::Scalar;
using internal::ScalarWriter;
using internal::StorageType;

// The iteration space after dropping size-1 dimensions and merging neighbours that every operand
// treats alike. present[i][g]: input i has canonical dimension g (else it is broadcast along it).
struct Canonical {
  std::vector<int64_t> dims;  // at least one
  int64_t row_scale = 1;      // canonical dim-0 elements per row of KernelSpec::shape's dim 0
  std::vector<std::vector<bool>> present;
};

Result<Canonical> Canonicalize(const KernelSpec& spec) {
  const Shape& s = spec.shape;
  const int rank = s.rank(), n = static_cast<int>(spec.inputs.size());
  // status[i][d]: 'F' input i spans dim d, 'B' broadcast along it, '*' either (size-1 dim).
  std::vector<std::string> status(n, std::string(rank, '*'));
  for (int i = 0; i < n; ++i) {
    const Shape& in = spec.inputs[i].shape;
    if (in.rank() > rank || !in.IsFullyKnown())
      return MakeError(ErrorCode::kInvalidArgument, "input ", i, " of shape ", in.ToString(),
                       " does not broadcast to the kernel's shape ", s.ToString());
    for (int d = 0; d < rank; ++d) {
      int id = d - (rank - in.rank());
      int64_t dim = id < 0 ? 1 : in.dim(id);
      if (dim != s.dim(d) && dim != 1)
        return MakeError(ErrorCode::kInvalidArgument, "input ", i, " of shape ", in.ToString(),
                         " does not broadcast to the kernel's shape ", s.ToString());
      if (s.dim(d) != 1) status[i][d] = dim == s.dim(d) ? 'F' : 'B';
    }
  }
  Canonical c;
  std::string group(n, '*');  // the pattern of the group being built
  c.dims.push_back(1);
  std::vector<std::string> patterns;
  for (int d = 0; d < rank; ++d) {
    if (s.dim(d) == 1) continue;
    bool fits = true;
    for (int i = 0; i < n; ++i) fits = fits && (group[i] == '*' || group[i] == status[i][d]);
    if (!fits) {
      patterns.push_back(group);
      c.dims.push_back(1);
      group = std::string(n, '*');
    }
    if (patterns.empty() && d > 0) c.row_scale *= s.dim(d);
    c.dims.back() *= s.dim(d);
    for (int i = 0; i < n; ++i) group[i] = status[i][d];
  }
  patterns.push_back(group);
  if (rank > 0 && s.dim(0) == 1) c.row_scale = c.dims[0];  // rows: [0, 1) is the whole group
  c.present.assign(n, std::vector<bool>(c.dims.size()));
  for (int i = 0; i < n; ++i)
    for (size_t g = 0; g < c.dims.size(); ++g) c.present[i][g] = patterns[g][i] != 'B';
  return c;
}

struct Buffer {
  std::string arg;  // "%in0"
  std::vector<int64_t> dims;
  std::vector<std::string> map_dims;  // "d0", ... for the indexing map
  DType dtype;
};

// "%in0_rows = memref.subview ..." for a buffer spanning canonical dim 0; returns the operand.
std::string Rows(std::ostringstream& os, const Buffer& b) {
  if (b.map_dims.empty() || b.map_dims[0] != "d0") return b.arg;
  std::vector<std::string> offsets{"%lo"}, sizes{"%n"}, ones;
  for (size_t g = 0; g < b.dims.size(); ++g) {
    if (g) offsets.push_back("0"), sizes.push_back(std::to_string(b.dims[g]));
    ones.push_back("1");
  }
  os << "    " << b.arg << "_rows = memref.subview " << b.arg << "[" << Join(offsets, ", ") << "] ["
     << Join(sizes, ", ") << "] [" << Join(ones, ", ") << "] : " << MemRef(b.dims, b.dtype)
     << " to " << MemRef(b.dims, b.dtype, true) << "\n";
  return b.arg + "_rows";
}

Status CheckSpec(const KernelSpec& spec) {
  auto valid_name = [](const std::string& n) {
    if (n.empty() || std::isdigit(static_cast<unsigned char>(n[0]))) return false;
    for (char ch : n)
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_') return false;
    return true;
  };
  if (!valid_name(spec.name))
    return MakeError(ErrorCode::kInvalidArgument, "kernel name '", spec.name,
                     "' is not an identifier [A-Za-z_][A-Za-z0-9_]*");
  if (!spec.shape.IsFullyKnown())
    return MakeError(ErrorCode::kInvalidArgument, "shape ", spec.shape.ToString(),
                     " is not fully known");
  if (spec.outputs.empty()) return MakeError(ErrorCode::kInvalidArgument, "no outputs");
  for (size_t i = 0; i < spec.inputs.size(); ++i)
    if (spec.inputs[i].dtype == DType::kInvalid)
      return MakeError(ErrorCode::kInvalidArgument, "input ", i, " has an invalid dtype");
  const int num_inputs = static_cast<int>(spec.inputs.size());
  for (size_t k = 0; k < spec.ops.size(); ++k) {
    const KernelSpec::Op& op = spec.ops[k];
    std::vector<DType> arg_types;
    for (int a : op.args) {
      if (a < 0 || a >= num_inputs + static_cast<int>(k))
        return MakeError(ErrorCode::kInvalidArgument, "op ", k, " '", op.op, "' (node '", op.node,
                         "') uses value ", a, ", which is not defined before it");
      arg_types.push_back(spec.ValueType(a));
    }
    Status st = spec.row_reduction && internal::IsRowReduction(op.op)
                    ? internal::CheckRowReductionOp(op.op, arg_types, op.dtype)
                    : internal::CheckScalarOp(op.op, arg_types, op.dtype);
    if (!st.ok())
      return st.error().WithContext("op " + std::to_string(k) + " '" + op.op + "' (node '" +
                                    op.node + "')");
  }
  for (int o : spec.outputs)
    if (o < 0 || o >= spec.num_values())
      return MakeError(ErrorCode::kInvalidArgument, "output value ", o, " does not exist");
  return OkStatus();
}

Result<std::string> EmitKernel(const KernelSpec& spec, const EmitOptions& options) {
  KILN_RETURN_IF_ERROR(CheckSpec(spec));
  if (spec.row_reduction) return internal::EmitRowReductionKernel(spec, options.host_vectors);
  KILN_ASSIGN_OR_RETURN(Canonical c, Canonicalize(spec));
  const int n_in = static_cast<int>(spec.inputs.size());
  const size_t rank = c.dims.size();
  std::vector<std::string> all_dims;
  for (size_t g = 0; g < rank; ++g) all_dims.push_back("d" + std::to_string(g));

  std::vector<Buffer> ins, outs;
  std::vector<std::string> params{"%begin: i64", "%end: i64"};
  for (int i = 0; i < n_in; ++i) {
    Buffer b{"%in" + std::to_string(i), {}, {}, spec.inputs[i].dtype};
    for (size_t g = 0; g < rank; ++g)
      if (c.present[i][g]) b.dims.push_back(c.dims[g]), b.map_dims.push_back(all_dims[g]);
    params.push_back(b.arg + ": " + MemRef(b.dims, b.dtype));
    ins.push_back(b);
  }
  for (size_t o = 0; o < spec.outputs.size(); ++o) {
    outs.push_back({"%out" + std::to_string(o), c.dims, all_dims, spec.ValueType(spec.outputs[o])});
    params.push_back(outs.back().arg + ": " + MemRef(c.dims, outs.back().dtype));
  }

  std::ostringstream os;
  os << "  // " << spec.name << ": shape " << spec.shape.ToString() << ", canonical "
     << Shape(c.dims).ToString() << "\n";
  os << "  func.func @" << spec.name << "(" << Join(params, ", ")
     << ") attributes {passthrough = [\"" << kParallelLoopsAttribute << "\"]} {\n";
  if (spec.shape.NumElements() == 0) {
    os << "    return\n  }\n";
    return os.str();
  }
  os << "    %scale = arith.constant " << c.row_scale << " : index\n"
     << "    %begin_i = arith.index_cast %begin : i64 to index\n"
     << "    %end_i = arith.index_cast %end : i64 to index\n"
     << "    %lo = arith.muli %begin_i, %scale : index\n"
     << "    %hi = arith.muli %end_i, %scale : index\n"
     << "    %n = arith.subi %hi, %lo : index\n";

  // Inputs used by some op or output, in order; the others are not read.
  std::set<int> used(spec.outputs.begin(), spec.outputs.end());
  for (const KernelSpec::Op& op : spec.ops) used.insert(op.args.begin(), op.args.end());
  std::vector<std::string> operands, types, maps, block_args;
  std::vector<Scalar> values(spec.num_values());
  ScalarWriter w("      ");
  auto add = [&](const Buffer& b, const std::string& block_arg) {
    operands.push_back(Rows(os, b));
    types.push_back(MemRef(b.dims, b.dtype, b.map_dims.size() && b.map_dims[0] == "d0"));
    maps.push_back("affine_map<(" + Join(all_dims, ", ") + ") -> (" + Join(b.map_dims, ", ") +
                   ")>");
    block_args.push_back(block_arg + ": " + StorageType(b.dtype));
  };
  for (int i = 0; i < n_in; ++i) {
    if (!used.count(i)) continue;
    add(ins[i], "%a" + std::to_string(i));
    values[i] = {w.Load("%a" + std::to_string(i), ins[i].dtype), ins[i].dtype};
  }
  size_t num_ins = operands.size();
  for (size_t o = 0; o < outs.size(); ++o) add(outs[o], "%o" + std::to_string(o));

  for (size_t k = 0; k < spec.ops.size(); ++k) {
    const KernelSpec::Op& op = spec.ops[k];
    std::vector<Scalar> args;
    for (int a : op.args) args.push_back(values[a]);
    Result<std::string> r = internal::EmitScalarOp(w, op, args);
    if (!r.ok())
      return r.error().WithContext("op " + std::to_string(k) + " '" + op.op + "' (node '" +
                                   op.node + "')");
    values[n_in + k] = {*r, op.dtype};
  }
  std::vector<std::string> yields, yield_types;
  for (int o : spec.outputs) {
    yields.push_back(w.Store(values[o].name, values[o].dtype));
    yield_types.push_back(StorageType(values[o].dtype));
  }

  std::vector<std::string> iters(rank, "\"parallel\"");
  auto slice = [](const std::vector<std::string>& v, size_t b, size_t e) {
    return Join(std::vector<std::string>(v.begin() + b, v.begin() + e), ", ");
  };
  os << "    linalg.generic {indexing_maps = [" << Join(maps, ", ") << "], iterator_types = ["
     << Join(iters, ", ") << "]}";
  if (num_ins > 0)
    os << "\n        ins(" << slice(operands, 0, num_ins) << " : " << slice(types, 0, num_ins)
       << ")";
  os << "\n        outs(" << slice(operands, num_ins, operands.size()) << " : "
     << slice(types, num_ins, types.size()) << ") {\n"
     << "    ^bb0(" << Join(block_args, ", ") << "):\n"
     << w.text() << "      linalg.yield " << Join(yields, ", ") << " : " << Join(yield_types, ", ")
     << "\n    }\n    return\n  }\n";
  return os.str();
}

}  // namespace

Result<std::string> EmitKernelModule(const std::vector<KernelSpec>& specs,
                                     const EmitOptions& options) {
  std::set<std::string> names;
  std::string body;
  for (const KernelSpec& spec : specs) {
    if (!names.insert(spec.name).second)
      return MakeError(ErrorCode::kInvalidArgument, "two kernels are named '", spec.name, "'");
    Result<std::string> k = spec.raw_mlir.empty() ? EmitKernel(spec, options) : spec.raw_mlir;
    if (!k.ok()) return k.error().WithContext("kernel '" + spec.name + "'");
    body += *k;
  }
  for (const std::string& marker : options.markers) {
    if (names.count(marker))
      return MakeError(ErrorCode::kInvalidArgument, "marker '", marker, "' is also a kernel");
    body += "  func.func @" + marker + "() {\n    return\n  }\n";
  }
  return "module {\n" + body + "}\n";
}

Status CheckEmittable(const std::string& op, const std::vector<DType>& arg_dtypes,
                      DType result_dtype) {
  return internal::CheckScalarOp(op, arg_dtypes, result_dtype);
}

bool CanEmit(const std::string& op, const std::vector<DType>& arg_dtypes, DType result_dtype) {
  return CheckEmittable(op, arg_dtypes, result_dtype).ok();
}

bool HasScalarBody(const std::string& op) { return internal::HasScalarOp(op); }

}  // namespace kiln::compiler
