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
    return r;
  }();
  return *registry;
}

const KernelFn* KernelRegistry::Find(const std::string& op) const {
  auto it = kernels_.find(op);
  return it == kernels_.end() ? nullptr : &it->second;
}

void KernelRegistry::Register(const std::string& op, KernelFn fn) {
  KILN_CHECK(kernels_.count(op) == 0);
  kernels_[op] = std::move(fn);
}

std::vector<std::string> KernelRegistry::Ops() const {
  std::vector<std::string> ops;
  for (const auto& [op, fn] : kernels_) ops.push_back(op);
  return ops;
}

}  // namespace kiln::reference
