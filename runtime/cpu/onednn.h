// What the oneDNN library steps share: the one CPU engine of the process, kiln shape -> oneDNN
// dims, and buffer layouts (runtime/cpu/layouts.h) <-> oneDNN formats. Included only by
// runtime/cpu/onednn_*.cc.
#pragma once

#include <dnnl.hpp>
#include <string>

#include "ir/shape.h"
#include "runtime/executable.h"

namespace kiln::cpu {

inline dnnl::engine& OnednnEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

inline dnnl::memory::dims OnednnDims(const Shape& s) {
  return dnnl::memory::dims(s.dims().begin(), s.dims().end());
}

// oneDNN's data type for a floating-point buffer dtype (f32, bf16 or f16; callers check).
inline dnnl::memory::data_type OnednnType(DType t) {
  return t == bf16  ? dnnl::memory::data_type::bf16
         : t == f16 ? dnnl::memory::data_type::f16
                    : dnnl::memory::data_type::f32;
}

// The activation layouts kiln names, as oneDNN formats of [N, C, H, W].
struct NamedLayout {
  const char* name;
  dnnl::memory::format_tag tag;
};
inline constexpr NamedLayout kNamedLayouts[] = {{"nhwc", dnnl::memory::format_tag::nhwc},
                                                {"nChw4c", dnnl::memory::format_tag::nChw4c},
                                                {"nChw8c", dnnl::memory::format_tag::nChw8c},
                                                {"nChw16c", dnnl::memory::format_tag::nChw16c}};

// How buffer `b` (with oneDNN dims `dims`) lies in memory: in `dense` if its layout is "", else in
// its layout (checked known at load: runtime/cpu/layouts.h).
inline dnnl::memory::desc BufferMemoryDesc(const BufferDesc& b, const dnnl::memory::dims& dims,
                                           dnnl::memory::data_type type,
                                           dnnl::memory::format_tag dense) {
  for (const NamedLayout& l : kNamedLayouts)
    if (b.layout == l.name) return dnnl::memory::desc(dims, type, l.tag);
  return dnnl::memory::desc(dims, type, dense);
}

// The layout name of a rank-4 activation format: "" if it is dense (nchw), a name of
// kNamedLayouts, or "other"; for other ranks "" if dense (the default tag), else "other".
inline std::string LayoutName(const dnnl::memory::desc& desc) {
  const dnnl::memory::dims dims = desc.dims();
  const dnnl::memory::data_type type = desc.data_type();
  using Tag = dnnl::memory::format_tag;
  static const Tag kDense[] = {Tag::undef, Tag::a, Tag::ab, Tag::abc, Tag::abcd, Tag::abcde};
  if (dims.empty() || dims.size() > 5) return "other";
  if (desc == dnnl::memory::desc(dims, type, kDense[dims.size()])) return "";
  if (dims.size() == 4)
    for (const NamedLayout& l : kNamedLayouts)
      if (desc == dnnl::memory::desc(dims, type, l.tag)) return l.name;
  return "other";
}

}  // namespace kiln::cpu
