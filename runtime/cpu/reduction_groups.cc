#include "runtime/cpu/reduction_groups.h"

namespace kiln::cpu {

ReductionGroups GroupReduction(const std::vector<int64_t>& dims,
                               const std::vector<int64_t>& reduced) {
  ReductionGroups g;
  int64_t elements = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    const int64_t n = dims[d];
    const bool r = reduced[d] != 0;
    elements *= n;
    if (!r) g.kept *= n;
    if (n == 1) continue;
    if (!g.sizes.empty() && g.reduced.back() == r) {
      g.sizes.back() *= n;
    } else {
      g.sizes.push_back(n);
      g.reduced.push_back(r);
    }
  }
  if (g.sizes.empty() && elements == 1) {  // everything size 1
    g.sizes.push_back(1);
    g.reduced.push_back(false);
  }
  return g;
}

}  // namespace kiln::cpu
