#include "tests/testing/backends.h"

#include "runtime/cpu/plan_compiler.h"

namespace kiln::testing {

std::vector<std::string> AvailableBackends() {
  std::vector<std::string> backends = {"reference"};
  if (GetPlanCompiler()) backends.push_back("cpu");
  return backends;
}

}  // namespace kiln::testing
