// The library steps that need oneDNN or OpenBLAS, in a runtime built without them
// (-DKILN_HOST_LIBRARIES=OFF, the GPU bundle's kilnrt): each is refused at load with a message
// naming the step, so a module that needs one fails before it runs, never during a run. The
// steps kiln implements itself (copies, concat/split, reduce_sum, bias_add, cross-entropy,
// assign), reference steps and everything on a CUDA device work as in a full build.
#include "runtime/cpu/library_steps.h"
#include "runtime/cpu/product_adder.h"

namespace kiln::cpu {
namespace {

Error Refused(const Step& step) {
  return MakeError(ErrorCode::kUnimplemented, "library step ", step.callee, " of '", step.node.name,
                   "' needs oneDNN or OpenBLAS, and this runtime was built without them "
                   "(KILN_HOST_LIBRARIES=OFF): run the model on a device that has the step, or "
                   "with a full build of kiln");
}

}  // namespace

Result<std::unique_ptr<StepRunner>> MakeGemmStep(const Step& step, const Executable&) {
  return Refused(step);
}
// (A bf16 product's refusal makes MakeProductAdder widen it for kiln's packed sgemm.)
Result<std::unique_ptr<ProductAdder>> MakeBlasProductAdder(const Step& step, const GemmParams&) {
  return Refused(step);
}
Result<std::unique_ptr<ProductAdder>> MakeOnednnProductAdder(const Step& step, const GemmParams&) {
  return Refused(step);
}
// (Its products are OpenBLAS's on CPUs without AVX-512.)
Result<std::unique_ptr<StepRunner>> MakeAttentionStep(const Step& step, const Executable&) {
  return Refused(step);
}
Result<std::unique_ptr<StepRunner>> MakeOnednnMatmulStep(const Step& step, const Executable&) {
  return Refused(step);
}
bool HasNativeBf16Matmul() { return false; }
Result<std::unique_ptr<StepRunner>> MakeConvStep(const Step& step, const Executable&) {
  return Refused(step);
}
Result<std::vector<std::string>> PreferredConvLayouts(const Step& step, const Executable&) {
  return Refused(step);
}
Result<std::unique_ptr<StepRunner>> MakePoolStep(const Step& step, const Executable&) {
  return Refused(step);
}
Result<std::unique_ptr<StepRunner>> MakeBatchNormStep(const Step& step, const Executable&) {
  return Refused(step);
}
Result<std::unique_ptr<StepRunner>> MakeBatchNormGradStep(const Step& step, const Executable&) {
  return Refused(step);
}
Result<std::unique_ptr<StepRunner>> MakeReorderStep(const Step& step, const Executable&) {
  return Refused(step);
}

}  // namespace kiln::cpu
