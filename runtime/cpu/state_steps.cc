// Library steps for data movement and variable updates that need no generated code:
//   "copy"    output 0 gets input 0's bytes (Reshape, Flatten, Squeeze, Unsqueeze, Identity, ...:
//             ops that only relabel a dense buffer's shape); other inputs (shapes) are not read.
//   "assign"  Assign (mode 0), AssignAdd (+1), AssignSub (-1) on an f32, f64, i32 or i64
//             variable (integers wrap), a float one's by scale * value where a third input (a
//             scalar) is given; an f32 variable's value may be bf16, widened as it is read (a
//             mixed-precision gradient), and a float AssignAdd or AssignSub may update only a
//             region of the variable, from a value of its own shape, when the step has
//             strided_copy's region attributes (runtime/cpu/strided_region.h; a gradient
//             computed for part of a weight: compiler/assign_folding.h): the
//             stored value is replaced by the new one, and the step's output buffer (kind
//             kVariable) is pointed at it. Values are never mutated where anyone could see it:
//             the update is computed in place only when no later step of the plan reads a
//             buffer bound to the old value (checked at load) and nothing outside this run
//             shares the stored tensor (its storage is held by the store and this run's reads
//             only); otherwise into a fresh tensor, so that earlier reads keep theirs. In place,
//             a training step's update costs one pass over the weights instead of an allocation,
//             its zeroing and page faults (for FCN-R's 64 MB matrices, most of the update).
//             With the attribute "product" (compiler/assign_folding.h), an f32 AssignAdd or
//             AssignSub adds (times the scale) the product op(a) x op(b) of its inputs 1 and 2
//             (gemm's attributes, batch 1, no epilogue, f32 or bf16 operands; a scale is input
//             3; runtime/cpu/product_adder.h) instead of a value:
//             the weight gradient's product accumulates into the weights, blocks of k at a time
//             (rounded as a blocked gemm's sum is, not as one product and one update), and no
//             buffer holds the gradient. In place unless a or b lies in the variable's storage.
#include <algorithm>
#include <cstring>
#include <optional>
#include <set>
#include <type_traits>
#include <vector>

#include "runtime/cpu/library_steps.h"
#include "runtime/cpu/product_adder.h"
#include "runtime/cpu/strided_region.h"

namespace kiln::cpu {
namespace {

class CopyStep : public StepRunner {
 public:
  CopyStep(int from, int to, int64_t bytes) : from_(from), to_(to), bytes_(bytes) {}
  Status Run(StepEnv& env) const override {
    // In place (the memory plan put the output on its dying input): nothing to copy. memmove: a
    // module's buffers may overlap in part (fuzz_module_run), where memcpy is undefined.
    if (env.data[to_] != env.data[from_])
      std::memmove(env.data[to_], env.data[from_], static_cast<size_t>(bytes_));
    return OkStatus();
  }

 private:
  int from_, to_;
  int64_t bytes_;
};

// A value element as the variable's arithmetic type T: itself, or a bf16 (its 16 bits, V =
// uint16_t) widened exactly to f32.
template <typename T, typename V>
inline T Widen(V v) {
  if constexpr (std::is_same_v<T, float> && std::is_same_v<V, uint16_t>) {
    return BFloat16ToFloat(v);
  } else {
    return v;
  }
}

// out = value, base + value or base - value; T is the arithmetic type (unsigned for the integer
// dtypes, so that they wrap as the reference's integer Add and Sub do), V the value's element
// (T, or bf16's bits for an f32 T). With `scale` (float dtypes), value is scale * value (the
// compiler may fuse the product and the sum into one rounding). Large updates are split over
// `threads`.
template <typename T, typename V = T>
void Combine(int64_t mode, const void* base_data, const void* value_data, const void* scale_data,
             void* out_data, int64_t n, int threads) {
  const T* base = static_cast<const T*>(base_data);
  const V* value = static_cast<const V*>(value_data);
  T* out = static_cast<T*>(out_data);
  if (scale_data && mode != 0) {
    const T scale = *static_cast<const T*>(scale_data);
    const T sign = mode > 0 ? T(1) : T(-1);
#pragma omp parallel for simd num_threads(threads) schedule(static) if (n > (1 << 16))
    for (int64_t i = 0; i < n; ++i) out[i] = base[i] + sign * (scale * Widen<T>(value[i]));
    return;
  }
  if (mode == 0 && std::is_same_v<T, V>) {
    std::memcpy(out, value, static_cast<size_t>(n) * sizeof(T));
  } else if (mode == 0) {
#pragma omp parallel for simd num_threads(threads) schedule(static) if (n > (1 << 16))
    for (int64_t i = 0; i < n; ++i) out[i] = Widen<T>(value[i]);
  } else if (mode > 0) {
#pragma omp parallel for simd num_threads(threads) schedule(static) if (n > (1 << 16))
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(base[i] + Widen<T>(value[i]));
  } else {
#pragma omp parallel for simd num_threads(threads) schedule(static) if (n > (1 << 16))
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(base[i] - Widen<T>(value[i]));
  }
}

// out[t] = out[t] + value[s] or - value[s] (times scale, when given) for each element of the
// region (s in its source view over the value, t in its destination view over out). The rows
// (the innermost dim's runs) are split over `threads` in blocks, each walked with an odometer over
// the outer dims; a region of fewer rows than threads splits its rows instead.
template <typename T, typename V = T>
void UpdateRegion(int64_t mode, const StridedRegion& region, const void* value_data,
                  const void* scale_data, T* out, int threads) {
  const int64_t count = region.count();
  if (count == 0) return;
  const V* value = static_cast<const V*>(value_data);
  const T scale = scale_data ? *static_cast<const T*>(scale_data) : T(1);
  const T sign = mode > 0 ? T(1) : T(-1);
  const int rank = static_cast<int>(region.dims.size());
  const int64_t inner = rank == 0 ? 1 : region.dims.back(), rows = count / inner;
  const int64_t ss = rank == 0 ? 0 : region.src.strides.back();
  const int64_t ts = rank == 0 ? 0 : region.dst.strides.back();
  const int parts = count > (1 << 16) ? threads : 1;
  const int64_t pieces = rows >= parts ? 1 : parts;  // of each row
#pragma omp parallel for num_threads(parts) schedule(static) if (parts > 1)
  for (int part = 0; part < parts; ++part) {
    const int64_t first = pieces > 1 ? 0 : rows * part / parts;
    const int64_t last = pieces > 1 ? rows : rows * (part + 1) / parts;
    const int64_t begin = pieces > 1 ? inner * part / parts : 0;
    const int64_t end = pieces > 1 ? inner * (part + 1) / parts : inner;
    std::vector<int64_t> index(static_cast<size_t>(std::max(rank - 1, 0)), 0);
    int64_t s = region.src.offset, t = region.dst.offset, rest = first;
    for (int d = rank - 2; d >= 0; --d) {  // the first row's position in the outer dims
      index[d] = rest % region.dims[d];
      rest /= region.dims[d];
      s += index[d] * region.src.strides[d];
      t += index[d] * region.dst.strides[d];
    }
    for (int64_t row = first; row < last; ++row) {
      for (int64_t i = begin; i < end; ++i)
        out[t + i * ts] += sign * (scale * Widen<T>(value[s + i * ss]));
      for (int d = rank - 2; d >= 0; --d) {  // the next row
        s += region.src.strides[d];
        t += region.dst.strides[d];
        if (++index[d] < region.dims[d]) break;
        s -= region.dims[d] * region.src.strides[d];
        t -= region.dims[d] * region.dst.strides[d];
        index[d] = 0;
      }
    }
  }
}

bool IsAssignable(DType dtype) {
  return dtype == f32 || dtype == f64 || dtype == i32 || dtype == i64;
}

class AssignStep : public StepRunner {
 public:
  AssignStep(const Step& step, int64_t mode, bool may_update_in_place, bool bf16_value,
             std::optional<StridedRegion> region, std::unique_ptr<ProductAdder> product = nullptr)
      : step_(step),
        mode_(mode),
        may_update_in_place_(may_update_in_place),
        bf16_value_(bf16_value),
        region_(std::move(region)),
        product_(std::move(product)) {}
  Status Run(StepEnv& env) const override {
    const Executable& exe = *env.executable;
    const std::string& name = step_.node.inputs[0].node;
    const TensorType& type = exe.buffers[step_.outputs[0]].type;
    // The base is the variable's current value (an Assign earlier in the plan may have replaced
    // what input 0 was bound to), as the reference kernel does.
    KILN_RETURN_IF_ERROR(env.variables->Materialize(name));
    const Tensor* current = env.variables->Find(name);
    const void* base = current ? current->raw_data() : env.data[step_.inputs[0]];
    if (current && (current->dtype() != type.dtype || current->shape() != type.shape))
      return step_.node.MakeNodeError(ErrorCode::kInvalidArgument, "stored value of '", name,
                                      "' is ", DTypeName(current->dtype()),
                                      current->shape().ToString(), ", expected ", type.ToString());
    const void* value = product_ ? nullptr : env.data[step_.inputs[1]];
    const size_t scale_input = product_ ? 3 : 2;
    const void* scale =
        step_.inputs.size() > scale_input ? env.data[step_.inputs[scale_input]] : nullptr;
    if (current && may_update_in_place_ && OnlyThisRunHolds(*current, env) &&
        !ProductReads(*current, env)) {
      Tensor& stored = *env.variables->FindMutable(name);
      if (product_)
        KILN_RETURN_IF_ERROR(AddProduct(stored.raw_data(), scale, stored.raw_data(), env));
      else if (region_)
        ApplyToRegion(value, scale, stored.raw_data(), type.dtype, env.threads);
      else
        Apply(base, value, scale, stored.raw_data(), stored.num_elements(), type.dtype,
              env.threads);
      env.data[step_.outputs[0]] = stored.raw_data();
      return OkStatus();
    }
    Tensor result = Tensor::Uninitialized(type.dtype, type.shape);  // every element is written
    if (product_) {
      KILN_RETURN_IF_ERROR(AddProduct(base, scale, result.raw_data(), env));
    } else if (region_) {
      std::memcpy(result.raw_data(), base, static_cast<size_t>(result.byte_size()));
      ApplyToRegion(value, scale, result.raw_data(), type.dtype, env.threads);
    } else {
      Apply(base, value, scale, result.raw_data(), result.num_elements(), type.dtype, env.threads);
    }
    env.variables->Set(name, result);
    env.pinned.push_back(result);
    env.data[step_.outputs[0]] = env.pinned.back().raw_data();
    return OkStatus();
  }

 private:
  void Apply(const void* base, const void* value, const void* scale, void* out, int64_t n,
             DType dtype, int threads) const {
    if (dtype == f32 && bf16_value_)
      Combine<float, uint16_t>(mode_, base, value, scale, out, n, threads);
    else if (dtype == f32)
      Combine<float>(mode_, base, value, scale, out, n, threads);
    else if (dtype == f64)
      Combine<double>(mode_, base, value, scale, out, n, threads);
    else if (dtype == i32)
      Combine<uint32_t>(mode_, base, value, nullptr, out, n, threads);
    else
      Combine<uint64_t>(mode_, base, value, nullptr, out, n, threads);
  }

  // The region update in place on `out` (a float variable's values).
  void ApplyToRegion(const void* value, const void* scale, void* out, DType dtype,
                     int threads) const {
    if (dtype == f32 && bf16_value_)
      UpdateRegion<float, uint16_t>(mode_, *region_, value, scale, static_cast<float*>(out),
                                    threads);
    else if (dtype == f32)
      UpdateRegion<float>(mode_, *region_, value, scale, static_cast<float*>(out), threads);
    else
      UpdateRegion<double>(mode_, *region_, value, scale, static_cast<double*>(out), threads);
  }

  // out = base + sign * scale * op(a) x op(b) (out may be base), f32.
  Status AddProduct(const void* base, const void* scale, void* out, const StepEnv& env) const {
    const int64_t bytes = env.executable->buffers[step_.outputs[0]].bytes();
    if (base != out) std::memcpy(out, base, static_cast<size_t>(bytes));
    const float alpha =
        (mode_ > 0 ? 1.0f : -1.0f) * (scale ? *static_cast<const float*>(scale) : 1.0f);
    return product_->Add(env.data[step_.inputs[1]], env.data[step_.inputs[2]],
                         static_cast<float*>(out), alpha, env.threads);
  }

  // Whether a folded product reads an operand that lies in `stored`'s bytes (a weight's gradient
  // that reads the weight itself), which an update in place would overwrite as it reads it.
  bool ProductReads(const Tensor& stored, const StepEnv& env) const {
    if (!product_) return false;
    const char* begin = static_cast<const char*>(stored.raw_data());
    const char* end = begin + stored.byte_size();
    for (int input : {step_.inputs[1], step_.inputs[2]}) {
      const char* operand = static_cast<const char*>(env.data[input]);
      const int64_t bytes = env.executable->buffers[input].bytes();
      if (operand < end && begin < operand + bytes) return true;
    }
    return false;
  }

  // Whether the stored tensor's storage is held only by the store and this run's pins.
  static bool OnlyThisRunHolds(const Tensor& stored, const StepEnv& env) {
    long pins = 0;
    for (const Tensor& t : env.pinned) pins += t.raw_data() == stored.raw_data();
    return stored.storage_use_count() == 1 + pins;
  }

  const Step& step_;
  int64_t mode_;
  bool may_update_in_place_;
  bool bf16_value_;                        // an f32 variable's value is bf16
  std::optional<StridedRegion> region_;    // the part of the variable updated; none: all of it
  std::unique_ptr<ProductAdder> product_;  // a folded product added instead of a value
};

// Whether no step after `assign` reads a buffer that a variable_read of the same variable bound,
// and no fetch copies one out after the run (those would see the old value, as the reference
// executor's order gives them).
bool NoLaterReadOfOldValue(const Step& assign, const Executable& exe) {
  const std::string& variable = assign.node.inputs[0].node;
  const Step* begin = exe.steps.data();
  const Step* end = begin + exe.steps.size();
  if (&assign < begin || &assign >= end) return false;  // not a step of `exe`
  std::set<int> old_value;
  for (const Step& s : exe.steps)
    if (s.kind == Step::Kind::kLibrary && s.callee == "variable_read" && s.node.name == variable)
      old_value.insert(s.outputs.begin(), s.outputs.end());
  for (const Step* s = &assign + 1; s < end; ++s)
    for (int id : s->inputs)
      if (old_value.count(id)) return false;
  for (int id : exe.fetches)
    if (old_value.count(id)) return false;
  return true;
}

Status CheckWritesVariable(const Step& step, const Executable& exe) {
  if (exe.buffers[step.outputs[0]].kind != BufferDesc::Kind::kVariable)
    return MakeError(ErrorCode::kInternal, "assign '", step.node.name,
                     "': its output must be a variable buffer");
  return OkStatus();
}

// How a folded product is added: inputs variable, a, b and perhaps a scale, gemm's attributes,
// an f32 AssignAdd or AssignSub of the whole variable by op(a) x op(b) (batch 1, no epilogue, f32
// or bf16 operands).
Result<std::unique_ptr<ProductAdder>> ReadFoldedProduct(const Step& step, const Executable& exe,
                                                        int64_t mode) {
  if ((step.inputs.size() != 3 && step.inputs.size() != 4) || step.outputs.size() != 1 ||
      step.node.inputs.empty())
    return MakeError(ErrorCode::kInternal, "assign '", step.node.name,
                     "': a product update needs the variable, a, b, perhaps a scale, and one "
                     "output");
  const TensorType& out = exe.buffers[step.outputs[0]].type;
  if (mode == 0 || out.dtype != f32 || step.attrs.Has("dims") ||
      !(exe.buffers[step.inputs[0]].type == out))
    return MakeError(ErrorCode::kInternal, "assign '", step.node.name,
                     "': only an f32 AssignAdd or AssignSub of a whole variable adds a product, "
                     "got ",
                     exe.buffers[step.inputs[0]].type.ToString(), " -> ", out.ToString());
  if (step.inputs.size() == 4 && !(exe.buffers[step.inputs[3]].type == TensorType{f32, Shape{}}))
    return MakeError(ErrorCode::kInternal, "assign '", step.node.name,
                     "': a product update's scale must be an f32 scalar, got ",
                     exe.buffers[step.inputs[3]].type.ToString());
  Step product = step;  // the gemm the compiler folded, over the variable's buffer
  product.callee = "gemm";
  product.inputs = {step.inputs[1], step.inputs[2]};
  Result<GemmParams> read = ReadGemmParams(product, exe);
  if (!read.ok())
    return MakeError(ErrorCode::kInternal, "assign '", step.node.name,
                     "' adding a product: ", read.error().message());
  return MakeProductAdder(step, *read);
}

}  // namespace

Result<std::unique_ptr<StepRunner>> MakeCopyStep(const Step& step, const Executable& exe) {
  if (step.inputs.empty() || step.outputs.size() != 1 ||
      exe.buffers[step.inputs[0]].bytes() != exe.buffers[step.outputs[0]].bytes())
    return MakeError(ErrorCode::kInternal, "copy '", step.node.name,
                     "': needs an input and one output of the same size");
  return std::unique_ptr<StepRunner>(
      new CopyStep(step.inputs[0], step.outputs[0], exe.buffers[step.outputs[0]].bytes()));
}

Result<std::unique_ptr<StepRunner>> MakeAssignStep(const Step& step, const Executable& exe) {
  KILN_ASSIGN_OR_RETURN(int64_t mode, step.attrs.GetInt("mode"));
  if (step.attrs.Has("product")) {
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<ProductAdder> product,
                          ReadFoldedProduct(step, exe, mode));
    KILN_RETURN_IF_ERROR(CheckWritesVariable(step, exe));
    return std::unique_ptr<StepRunner>(new AssignStep(step, mode, NoLaterReadOfOldValue(step, exe),
                                                      false, std::nullopt, std::move(product)));
  }
  if ((step.inputs.size() != 2 && step.inputs.size() != 3) || step.outputs.size() != 1 ||
      step.node.inputs.empty())
    return MakeError(ErrorCode::kInternal, "assign '", step.node.name,
                     "': needs the variable, the value, perhaps a scale, and one output");
  const TensorType& out = exe.buffers[step.outputs[0]].type;
  const TensorType& value = exe.buffers[step.inputs[1]].type;
  const bool bf16_value = out.dtype == f32 && value.dtype == bf16;
  // A region update's value has the region's elements, in its own shape.
  const bool regional = step.attrs.Has("dims");
  if (!(exe.buffers[step.inputs[0]].type == out) || !IsAssignable(out.dtype) ||
      !(value.dtype == out.dtype || bf16_value) || (!regional && value.shape != out.shape))
    return MakeError(ErrorCode::kInternal, "assign '", step.node.name,
                     "': needs f32, f64, i32 or i64 operands of one type (or a bf16 value for an "
                     "f32 variable), got ",
                     exe.buffers[step.inputs[0]].type.ToString(), " and ", value.ToString());
  std::optional<StridedRegion> region;
  if (regional) {
    if (mode == 0 || (out.dtype != f32 && out.dtype != f64))
      return MakeError(ErrorCode::kInternal, "assign '", step.node.name,
                       "': only a float AssignAdd or AssignSub updates a region");
    KILN_ASSIGN_OR_RETURN(
        region, ReadStridedRegion(step, value.shape.NumElements(), out.shape.NumElements()));
  }
  if (step.inputs.size() == 3 &&
      (mode == 0 || (out.dtype != f32 && out.dtype != f64) ||
       !(exe.buffers[step.inputs[2]].type == TensorType{out.dtype, Shape{}})))
    return MakeError(ErrorCode::kInternal, "assign '", step.node.name,
                     "': a scaled update needs an f32 or f64 variable and a scalar scale");
  KILN_RETURN_IF_ERROR(CheckWritesVariable(step, exe));
  return std::unique_ptr<StepRunner>(
      new AssignStep(step, mode, NoLaterReadOfOldValue(step, exe), bf16_value, std::move(region)));
}

}  // namespace kiln::cpu
