#include "compiler/assign_folding.h"

#include <algorithm>
#include <map>
#include <set>

namespace kiln::compiler {
namespace {

// The spec when it is one Cast of a bf16 input to f32, written as the only output.
bool IsLoneWideningCast(const KernelSpec& spec) {
  return !spec.row_reduction && spec.raw_mlir.empty() && spec.inputs.size() == 1 &&
         spec.inputs[0].dtype == bf16 && spec.ops.size() == 1 && spec.ops[0].op == "Cast" &&
         spec.ops[0].args == std::vector<int>{0} && spec.ops[0].dtype == f32 &&
         spec.outputs == std::vector<int>{1};
}

constexpr const char* kRegionAttributes[] = {"dims", "src_offset", "src_strides", "dst_offset",
                                             "dst_strides"};

constexpr const char* kGemmAttributes[] = {"m",       "n",     "k",        "trans_a",
                                           "trans_b", "batch", "stride_a", "stride_b"};

// The operands' dtype of a product an f32 update may add: f32, or bf16 (mixed precision's
// gradients, their product written in f32).
bool IsProductOperand(DType dtype) { return dtype == f32 || dtype == bf16; }

// A strided_copy step that fills its output with zeros first.
bool IsZeroFilledCopy(const Step& step) {
  if (step.kind != Step::Kind::kLibrary || step.callee != "strided_copy" ||
      step.inputs.size() != 1 || step.outputs.size() != 1)
    return false;
  Result<int64_t> fill = step.attrs.GetInt("fill");
  Result<double> value = step.attrs.GetFloat("fill_value");
  return fill.ok() && *fill == 1 && value.ok() && *value == 0.0;
}

class AssignFolder {
 public:
  explicit AssignFolder(LoweredPlan& lowered) : lowered_(lowered), exe_(lowered.executable) {
    for (const KernelSpec& spec : lowered.kernels) specs_[spec.name] = &spec;
    readers_.assign(exe_.buffers.size(), 0);
    producer_.assign(exe_.buffers.size(), -1);
    for (size_t s = 0; s < exe_.steps.size(); ++s) {
      for (int id : exe_.steps[s].inputs) ++readers_[id];
      for (int id : exe_.steps[s].outputs) producer_[id] = static_cast<int>(s);
    }
    for (int id : exe_.fetches) ++readers_[id];
  }

  int Run() {
    for (Step& assign : exe_.steps) {
      if (assign.kind != Step::Kind::kLibrary || assign.callee != "assign" ||
          assign.inputs.size() < 2 || assign.outputs.size() != 1)
        continue;
      FoldCast(assign);
      FoldZeroFilledCopy(assign);
      FoldProduct(assign);
    }
    if (folded_.empty()) return 0;
    std::vector<Step> kept;
    std::set<std::string> called;
    for (size_t s = 0; s < exe_.steps.size(); ++s) {
      if (folded_.count(s)) continue;
      if (exe_.steps[s].kind == Step::Kind::kKernel) called.insert(exe_.steps[s].callee);
      kept.push_back(std::move(exe_.steps[s]));
    }
    exe_.steps = std::move(kept);
    std::vector<KernelSpec>& kernels = lowered_.kernels;
    kernels.erase(std::remove_if(kernels.begin(), kernels.end(),
                                 [&](const KernelSpec& spec) {
                                   return IsLoneWideningCast(spec) && !called.count(spec.name);
                                 }),
                  kernels.end());
    return static_cast<int>(folded_.size());
  }

 private:
  // The step that alone reads `value` writes it (not fetched), or -1.
  int SoleProducer(int value) const { return readers_[value] == 1 ? producer_[value] : -1; }

  void FoldCast(Step& assign) {
    const int value = assign.inputs[1];
    const TensorType& variable = exe_.buffers[assign.outputs[0]].type;
    const int s = SoleProducer(value);
    if (variable.dtype != f32 || !(exe_.buffers[value].type == variable) || s < 0) return;
    const Step& cast = exe_.steps[s];
    auto spec = specs_.find(cast.callee);
    if (cast.kind != Step::Kind::kKernel || spec == specs_.end() ||
        !IsLoneWideningCast(*spec->second) || cast.inputs.size() != 1 || cast.outputs.size() != 1 ||
        !(exe_.buffers[cast.inputs[0]].type == TensorType{bf16, variable.shape}))
      return;
    assign.inputs[1] = cast.inputs[0];
    folded_.insert(static_cast<size_t>(s));
  }

  void FoldZeroFilledCopy(Step& assign) {
    const int value = assign.inputs[1];
    const TensorType& variable = exe_.buffers[assign.outputs[0]].type;
    Result<int64_t> mode = assign.attrs.GetInt("mode");
    const int s = SoleProducer(value);
    if ((variable.dtype != f32 && variable.dtype != f64) || !mode.ok() || *mode == 0 ||
        assign.attrs.Has("dims") || s < 0 || !IsZeroFilledCopy(exe_.steps[s]) ||
        exe_.buffers[value].type.shape != variable.shape)
      return;
    const Step& copy = exe_.steps[s];
    for (const char* key : kRegionAttributes)
      if (!copy.attrs.Has(key)) return;
    assign.inputs[1] = copy.inputs[0];
    for (const char* key : kRegionAttributes) assign.attrs.Set(key, *copy.attrs.Find(key));
    folded_.insert(static_cast<size_t>(s));
  }

  void FoldProduct(Step& assign) {
    const int value = assign.inputs[1];
    const TensorType& variable = exe_.buffers[assign.outputs[0]].type;
    Result<int64_t> mode = assign.attrs.GetInt("mode");
    const int s = SoleProducer(value);
    if (variable.dtype != f32 || !mode.ok() || *mode == 0 || assign.attrs.Has("dims") || s < 0 ||
        !(exe_.buffers[value].type == variable))
      return;
    const Step& gemm = exe_.steps[s];
    Result<int64_t> batch = gemm.attrs.GetInt("batch");
    if (gemm.kind != Step::Kind::kLibrary || gemm.callee != "gemm" || gemm.inputs.size() != 2 ||
        gemm.outputs.size() != 1 || gemm.attrs.Has("post_ops") || !batch.ok() || *batch != 1 ||
        !IsProductOperand(exe_.buffers[gemm.inputs[0]].type.dtype) ||
        exe_.buffers[gemm.inputs[1]].type.dtype != exe_.buffers[gemm.inputs[0]].type.dtype)
      return;
    for (const char* key : kGemmAttributes)
      if (!gemm.attrs.Has(key)) return;
    std::vector<int> inputs = {assign.inputs[0], gemm.inputs[0], gemm.inputs[1]};
    if (assign.inputs.size() > 2) inputs.push_back(assign.inputs[2]);  // the scale
    assign.inputs = std::move(inputs);
    for (const char* key : kGemmAttributes) assign.attrs.Set(key, *gemm.attrs.Find(key));
    assign.attrs.Set("product", int64_t{1});
    folded_.insert(static_cast<size_t>(s));
  }

  LoweredPlan& lowered_;
  Executable& exe_;
  std::map<std::string, const KernelSpec*> specs_;
  std::vector<int> readers_, producer_;
  std::set<size_t> folded_;
};

}  // namespace

int FoldIntoAssigns(LoweredPlan& lowered) { return AssignFolder(lowered).Run(); }

}  // namespace kiln::compiler
