// What the oneDNN library steps share: the one CPU engine of the process and kiln shape -> oneDNN
// dims. Included only by runtime/cpu/onednn_*.cc.
#pragma once

#include <dnnl.hpp>

#include "ir/shape.h"

namespace kiln::cpu {

inline dnnl::engine& OnednnEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

inline dnnl::memory::dims OnednnDims(const Shape& s) {
  return dnnl::memory::dims(s.dims().begin(), s.dims().end());
}

}  // namespace kiln::cpu
