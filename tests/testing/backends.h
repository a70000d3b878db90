// Test helper: the backends this test program can run, "reference" always, "cpu" and "cuda-sim"
// when the compiler is linked in (a runtime-only build has no compiled backend). Tests that check a
// result "on every backend" loop over this list instead of naming backends.
#pragma once

#include <string>
#include <vector>

namespace kiln::testing {

std::vector<std::string> AvailableBackends();

}  // namespace kiln::testing
