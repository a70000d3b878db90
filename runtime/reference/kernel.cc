#include "runtime/reference/kernel.h"

namespace kiln::reference {

KernelContext::KernelContext(const Node& node, const AttrMap& attrs, std::vector<Tensor> inputs,
                             std::vector<TensorType> output_types, RunState state)
    : node_(node),
      attrs_(attrs),
      inputs_(std::move(inputs)),
      output_types_(std::move(output_types)),
      state_(state) {
  outputs_.resize(output_types_.size());
}

const KernelRegistry& KernelRegistry::Global() {
  static const KernelRegistry* registry = [] {
    auto* r = new KernelRegistry();
    RegisterStateKernels(*r);
    RegisterMathKernels(*r);
    RegisterLinalgKernels(*r);
    RegisterNnKernels(*r);
    RegisterReduceKernels(*r);
    RegisterArrayKernels(*r);
    RegisterDeferredKernels(*r);
    RegisterControlKernels(*r);
    RegisterCollectiveKernels(*r);
    return r;
  }();
  return *registry;
}

const KernelFn* KernelRegistry::Find(const std::string& op) const {
  std::shared_lock lock(mu_);
  auto it = kernels_.find(op);
  return it == kernels_.end() ? nullptr : &it->second;
}

void KernelRegistry::Register(const std::string& op, KernelFn fn) {
  std::unique_lock lock(mu_);
  KILN_CHECK(kernels_.count(op) == 0);
  kernels_[op] = std::move(fn);
}

Status KernelRegistry::RegisterPluginKernel(const std::string& op, KernelFn fn) {
  KernelRegistry& r = const_cast<KernelRegistry&>(Global());
  std::unique_lock lock(r.mu_);
  if (r.kernels_.count(op))
    return MakeError(ErrorCode::kAlreadyExists, "op '", op, "' already has a kernel");
  r.kernels_[op] = std::move(fn);
  return OkStatus();
}

std::vector<std::string> KernelRegistry::Ops() const {
  std::shared_lock lock(mu_);
  std::vector<std::string> ops;
  for (const auto& [op, fn] : kernels_) ops.push_back(op);
  return ops;
}

}  // namespace kiln::reference
