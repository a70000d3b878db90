#include "tests/testing/backends.h"

#include "tests/testing/differential.h"

namespace kiln::testing {

std::vector<std::string> AvailableBackends() {
  std::vector<std::string> backends = {"reference"};
  for (const std::string& b : CompiledBackends()) backends.push_back(b);
  return backends;
}

}  // namespace kiln::testing
