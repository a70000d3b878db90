#include "compiler/codegen/emit_reduction.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "compiler/codegen/scalar_ops.h"
#include "compiler/codegen/scalar_writer.h"

namespace kiln::compiler::internal {
namespace {

// Where a value lives: the same for the whole kernel, once per row, or once per element.
enum Level { kUniform = 0, kRow = 1, kElement = 2 };

class RowReductionWriter {
 public:
  RowReductionWriter(const KernelSpec& spec, bool host_vectors)
      : spec_(spec),
        host_vectors_(host_vectors),
        n_in_(static_cast<int>(spec.inputs.size())),
        rows_(spec.shape[0]),
        cols_(spec.shape[1]),
        w_("      ") {}

  Result<std::string> Emit() {
    KILN_RETURN_IF_ERROR(Classify());
    std::vector<std::string> params{"%begin: i64", "%end: i64"};
    for (int i = 0; i < n_in_; ++i)
      params.push_back("%in" + std::to_string(i) + ": " +
                       MemRef(in_dims_[i], spec_.inputs[i].dtype));
    for (size_t o = 0; o < spec_.outputs.size(); ++o)
      params.push_back("%out" + std::to_string(o) + ": " + OutType(o));
    std::ostringstream os;
    os << "  // " << spec_.name << ": row reduction over " << spec_.shape.ToString() << "\n"
       << "  func.func @" << spec_.name << "(" << Join(params, ", ") << ") {\n";
    if (rows_ == 0) return os.str() + "    return\n  }\n";
    os << "    %zero = arith.constant 0 : index\n"
       << "    %one = arith.constant 1 : index\n"
       << "    %cols = arith.constant " << cols_ << " : index\n"
       << "    %lo = arith.index_cast %begin : i64 to index\n"
       << "    %hi = arith.index_cast %end : i64 to index\n"
       << "    scf.parallel (%r) = (%lo) to (%hi) step (%one) {\n";
    row_.assign(spec_.num_values(), "");
    std::vector<int> per_element;
    for (size_t o = 0; o < spec_.outputs.size(); ++o) {
      int v = spec_.outputs[o];
      if (level_[v] == kElement) {
        per_element.push_back(static_cast<int>(o));
        continue;
      }
      KILN_ASSIGN_OR_RETURN(std::string value, EnsureRow(v));
      w_.Line("memref.store " + w_.Store(value, spec_.ValueType(v)) + ", %out" + std::to_string(o) +
              "[%r] : " + OutType(o));
    }
    if (!per_element.empty()) {
      std::vector<int> values;
      for (int o : per_element) values.push_back(spec_.outputs[o]);
      KILN_RETURN_IF_ERROR(PrepareLoop(values));
      j_ = w_.Fresh() + "_j";
      w_.Line("scf.for " + j_ + " = %zero to %cols step %one {");
      w_.Indent();
      for (int o : per_element) {
        int v = spec_.outputs[o];
        KILN_ASSIGN_OR_RETURN(std::string value, Element(v));
        w_.Line("memref.store " + w_.Store(value, spec_.ValueType(v)) + ", %out" +
                std::to_string(o) + "[%r, " + j_ + "] : " + OutType(o));
      }
      CloseLoop();
      w_.Line("}");
    }
    os << w_.text() << "    }\n    return\n  }\n";
    return os.str();
  }

 private:
  // Input shapes aligned to [rows, cols] (missing dims are 1) and every value's level.
  Status Classify() {
    if (spec_.shape.rank() != 2)
      return MakeError(ErrorCode::kInvalidArgument, "a row-reduction kernel iterates over [rows, ",
                       "cols], got shape ", spec_.shape.ToString());
    for (int i = 0; i < n_in_; ++i) {
      const Shape& s = spec_.inputs[i].shape;
      std::vector<int64_t> d(2, 1);
      for (int k = 0; k < s.rank() && k < 2; ++k) d[2 - s.rank() + k] = s[k];
      if (s.rank() > 2 || (d[0] != 1 && d[0] != rows_) || (d[1] != 1 && d[1] != cols_))
        return MakeError(ErrorCode::kInvalidArgument, "input ", i, " of shape ", s.ToString(),
                         " does not broadcast to the kernel's shape ", spec_.shape.ToString());
      in_dims_.push_back(d);
      level_.push_back(d[1] != 1 ? kElement : d[0] != 1 ? kRow : kUniform);
    }
    for (const KernelSpec::Op& op : spec_.ops) {
      Level l = kUniform;
      for (int a : op.args) l = std::max(l, level_[a]);
      level_.push_back(IsRowReduction(op.op) ? kRow : l);
    }
    return OkStatus();
  }

  std::string OutType(size_t o) const {
    int v = spec_.outputs[o];
    return level_[v] == kElement ? MemRef({rows_, cols_}, spec_.ValueType(v))
                                 : MemRef({rows_}, spec_.ValueType(v));
  }

  std::string LoadInput(int i, const std::string& j) {
    const std::vector<int64_t>& d = in_dims_[i];
    std::string element =
        w_.Emit("memref.load %in" + std::to_string(i) + "[" + (d[0] != 1 ? "%r" : "%zero") + ", " +
                (d[1] != 1 ? j : "%zero") + "] : " + MemRef(d, spec_.inputs[i].dtype));
    return w_.Load(element, spec_.inputs[i].dtype);
  }

  Result<std::string> ApplyOp(int v, const std::vector<std::string>& arg_names) {
    const KernelSpec::Op& op = spec_.ops[v - n_in_];
    std::vector<Scalar> args;
    for (size_t a = 0; a < op.args.size(); ++a)
      args.push_back({arg_names[a], spec_.ValueType(op.args[a])});
    Result<std::string> r = EmitScalarOp(w_, op, args);
    if (!r.ok())
      return r.error().WithContext("op " + std::to_string(v - n_in_) + " '" + op.op + "' (node '" +
                                   op.node + "')");
    return *r;
  }

  // A uniform or per-row value, emitted in the row's scope (reductions run their loop here).
  Result<std::string> EnsureRow(int v) {
    if (!row_[v].empty()) return row_[v];
    if (v < n_in_) return row_[v] = LoadInput(v, "%zero");
    const KernelSpec::Op& op = spec_.ops[v - n_in_];
    if (IsRowReduction(op.op)) {
      KILN_ASSIGN_OR_RETURN(row_[v], Reduce(v));
      return row_[v];
    }
    std::vector<std::string> args;
    for (int a : op.args) {
      KILN_ASSIGN_OR_RETURN(std::string name, EnsureRow(a));
      args.push_back(name);
    }
    KILN_ASSIGN_OR_RETURN(row_[v], ApplyOp(v, args));
    return row_[v];
  }

  // Emits, in the row's scope, every per-row value the per-element `values` depend on.
  Status PrepareLoop(const std::vector<int>& values) {
    std::set<int> seen;
    std::vector<int> stack = values;
    while (!stack.empty()) {
      int v = stack.back();
      stack.pop_back();
      if (!seen.insert(v).second) continue;
      if (level_[v] != kElement) {
        KILN_RETURN_IF_ERROR(EnsureRow(v).status());
        continue;
      }
      if (v >= n_in_)
        for (int a : spec_.ops[v - n_in_].args) stack.push_back(a);
    }
    return OkStatus();
  }

  // A value inside the current column loop (per-row ones are ready, see PrepareLoop).
  Result<std::string> Element(int v) {
    if (level_[v] != kElement) return row_[v];
    auto found = element_.find(v);
    if (found != element_.end()) return found->second;
    if (v < n_in_) return element_[v] = LoadInput(v, j_);
    std::vector<std::string> args;
    for (int a : spec_.ops[v - n_in_].args) {
      KILN_ASSIGN_OR_RETURN(std::string name, Element(a));
      args.push_back(name);
    }
    KILN_ASSIGN_OR_RETURN(std::string r, ApplyOp(v, args));
    return element_[v] = r;
  }

  void CloseLoop() {
    element_.clear();
    w_.Dedent();
  }

  // One loop over the columns folding ops[v]'s argument; returns the per-row result.
  Result<std::string> Reduce(int v) {
    const KernelSpec::Op& op = spec_.ops[v - n_in_];
    const int a = op.args[0];
    const std::string t = ComputeType(op.dtype);
    KILN_RETURN_IF_ERROR(PrepareLoop({a}));
    double init = op.op == "ReduceSum"   ? 0.0
                  : op.op == "ReduceMax" ? -std::numeric_limits<double>::infinity()
                                         : std::numeric_limits<double>::infinity();
    std::string init_name = w_.FloatConst(init, t);
    std::string first = "%zero";
    if (op.op != "ReduceSum" && host_vectors_ && a < n_in_ &&
        spec_.inputs[a].dtype == DType::kF32 && in_dims_[a][1] == cols_ && cols_ >= kLanes)
      std::tie(init_name, first) = VectorFold(op.op == "ReduceMax", a, init_name);
    std::string result = w_.Fresh();
    std::string acc = result + "_acc";
    j_ = result + "_j";
    w_.Line(result + " = scf.for " + j_ + " = " + first + " to %cols step %one iter_args(" + acc +
            " = " + init_name + ") -> (" + t + ") {");
    w_.Indent();
    KILN_ASSIGN_OR_RETURN(std::string x, Element(a));
    std::string next;
    if (op.op == "ReduceSum") {
      next = w_.Emit("arith.addf " + acc + ", " + x + " fastmath<reassoc> : " + t);
    } else {  // NaN wins; otherwise the larger (smaller)
      std::string better = w_.Cmp("arith.cmpf", op.op == "ReduceMax" ? "ogt" : "olt", x, acc, t);
      std::string pick = w_.Select(better, x, acc, t);
      next = w_.Select(w_.Cmp("arith.cmpf", "uno", x, x, t), x, pick, t);
    }
    w_.Line("scf.yield " + next + " : " + t);
    CloseLoop();
    w_.Line("}");
    return result;
  }

  static constexpr int64_t kLanes = 16;

  // The max (min) of input `in`'s row over its first cols - cols % kLanes columns, kLanes at a
  // time: per lane, x > m (x < m) picks x, so NaN never enters a lane, and a lane's x != x records
  // one; then the lanes' max (min), or NaN if one was seen. Returns that value and the first
  // column left for the scalar loop.
  std::pair<std::string, std::string> VectorFold(bool max, int in, const std::string& init) {
    const std::string f = "vector<" + std::to_string(kLanes) + "xf32>";
    const std::string b = "vector<" + std::to_string(kLanes) + "xi1>";
    const std::string type = MemRef(in_dims_[in], DType::kF32);
    const std::string row = in_dims_[in][0] != 1 ? "%r" : "%zero";
    const std::string lanes = w_.Emit("arith.constant " + std::to_string(kLanes) + " : index");
    const std::string end =
        w_.Emit("arith.constant " + std::to_string(cols_ / kLanes * kLanes) + " : index");
    const std::string start = w_.Emit("vector.broadcast " + init + " : f32 to " + f);
    const std::string none = w_.Emit("arith.constant dense<false> : " + b);
    const std::string folded = w_.Fresh(), j = folded + "_j", m = folded + "_m",
                      seen = folded + "_nan";
    w_.Line(folded + ":2 = scf.for " + j + " = %zero to " + end + " step " + lanes + " iter_args(" +
            m + " = " + start + ", " + seen + " = " + none + ") -> (" + f + ", " + b + ") {");
    w_.Indent();
    const std::string x = w_.Emit("vector.load %in" + std::to_string(in) + "[" + row + ", " + j +
                                  "] : " + type + ", " + f);
    const std::string better =
        w_.Emit("arith.cmpf " + std::string(max ? "ogt" : "olt") + ", " + x + ", " + m + " : " + f);
    const std::string pick =
        w_.Emit("arith.select " + better + ", " + x + ", " + m + " : " + b + ", " + f);
    const std::string nan = w_.Emit("arith.cmpf uno, " + x + ", " + x + " : " + f);
    const std::string any = w_.Emit("arith.ori " + seen + ", " + nan + " : " + b);
    w_.Line("scf.yield " + pick + ", " + any + " : " + f + ", " + b);
    w_.Dedent();
    w_.Line("}");
    const std::string lane_fold =
        w_.Emit("vector.reduction <" + std::string(max ? "maxf" : "minf") + ">, " + folded +
                "#0 : " + f + " into f32");
    const std::string lane_nan =
        w_.Emit("vector.reduction <or>, " + folded + "#1 : " + b + " into i1");
    return {w_.Select(lane_nan, w_.NanConst("f32"), lane_fold, "f32"), end};
  }

  const KernelSpec& spec_;
  const bool host_vectors_;
  const int n_in_;
  const int64_t rows_, cols_;
  ScalarWriter w_;
  std::vector<std::vector<int64_t>> in_dims_;
  std::vector<Level> level_;
  std::vector<std::string> row_;        // per-row (and uniform) values emitted in the row's scope
  std::map<int, std::string> element_;  // per-element values of the current column loop
  std::string j_;                       // the current column index
};

}  // namespace

bool IsRowReduction(const std::string& op) {
  return op == "ReduceSum" || op == "ReduceMax" || op == "ReduceMin";
}

Status CheckRowReductionOp(const std::string& op, const std::vector<DType>& arg_dtypes,
                           DType result) {
  if (arg_dtypes.size() != 1)
    return MakeError(ErrorCode::kInvalidArgument, op, " takes 1 argument, got ", arg_dtypes.size());
  if ((arg_dtypes[0] != DType::kF32 && arg_dtypes[0] != DType::kF64) || result != arg_dtypes[0])
    return MakeError(ErrorCode::kUnimplemented, op, " reduces f32 or f64 into the same dtype, got ",
                     DTypeName(arg_dtypes[0]), " -> ", DTypeName(result));
  return OkStatus();
}

Result<std::string> EmitRowReductionKernel(const KernelSpec& spec, bool host_vectors) {
  return RowReductionWriter(spec, host_vectors).Emit();
}

}  // namespace kiln::compiler::internal
