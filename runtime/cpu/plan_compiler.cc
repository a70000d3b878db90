#include "runtime/cpu/plan_compiler.h"

#include <mutex>

namespace kiln {
namespace {

std::mutex& RegistryMutex() {
  static std::mutex mutex;
  return mutex;
}
std::shared_ptr<PlanCompiler>& Registered() {
  static std::shared_ptr<PlanCompiler> compiler;
  return compiler;
}

}  // namespace

void RegisterPlanCompiler(std::shared_ptr<PlanCompiler> compiler) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  Registered() = std::move(compiler);
}

std::shared_ptr<PlanCompiler> GetPlanCompiler() {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  return Registered();
}

}  // namespace kiln
