// Library step "reorder": output 0 gets input 0's elements in the output buffer's layout (the
// layout pass puts one where a buffer in a blocked layout meets a step that reads or writes only
// dense buffers: runtime/cpu/layouts.h). Both buffers have one rank-4 type of f32, bf16 or f16;
// oneDNN's reorder primitive is created once, at load.
#include <omp.h>

#include "runtime/cpu/library_steps.h"
#include "runtime/cpu/onednn.h"

namespace kiln::cpu {
namespace {

using dnnl::memory;

class ReorderStep : public StepRunner {
 public:
  ReorderStep(const Step& step, dnnl::reorder primitive, memory::desc from, memory::desc to)
      : step_(step), primitive_(std::move(primitive)), from_(std::move(from)), to_(std::move(to)) {}

  Status Run(StepEnv& env) const override {
    omp_set_num_threads(env.threads);
    try {
      dnnl::stream stream(OnednnEngine());
      memory from(from_, OnednnEngine(), env.data[step_.inputs[0]]);
      memory to(to_, OnednnEngine(), env.data[step_.outputs[0]]);
      primitive_.execute(stream, from, to);
      stream.wait();
    } catch (const dnnl::error& e) {
      return MakeError(ErrorCode::kInternal, "oneDNN reorder failed: ", e.what());
    }
    return OkStatus();
  }

 private:
  const Step& step_;
  dnnl::reorder primitive_;
  memory::desc from_, to_;
};

}  // namespace

Result<std::unique_ptr<StepRunner>> MakeReorderStep(const Step& step, const Executable& exe) {
  if (step.inputs.size() != 1 || step.outputs.size() != 1)
    return MakeError(ErrorCode::kInternal, "reorder takes 1 input and 1 output");
  const BufferDesc& from = exe.buffers[step.inputs[0]];
  const BufferDesc& to = exe.buffers[step.outputs[0]];
  const TensorType& type = from.type;
  if (!(to.type == type) || type.shape.rank() != 4 ||
      (type.dtype != f32 && type.dtype != bf16 && type.dtype != f16))
    return MakeError(ErrorCode::kInternal,
                     "reorder needs two rank-4 f32, bf16 or f16 buffers of one type, got ",
                     type.ToString(), " and ", to.type.ToString());
  const memory::data_type dt = type.dtype == f32    ? memory::data_type::f32
                               : type.dtype == bf16 ? memory::data_type::bf16
                                                    : memory::data_type::f16;
  const memory::dims dims = OnednnDims(type.shape);
  const memory::desc from_desc = BufferMemoryDesc(from, dims, dt, memory::format_tag::nchw);
  const memory::desc to_desc = BufferMemoryDesc(to, dims, dt, memory::format_tag::nchw);
  try {
    dnnl::reorder primitive(memory(from_desc, OnednnEngine(), nullptr),
                            memory(to_desc, OnednnEngine(), nullptr));
    return std::unique_ptr<StepRunner>(
        new ReorderStep(step, std::move(primitive), from_desc, to_desc));
  } catch (const dnnl::error& e) {
    return MakeError(ErrorCode::kInternal, "reorder ", type.ToString(), " from '", from.layout,
                     "' to '", to.layout, "': oneDNN refused it: ", e.what());
  }
}

}  // namespace kiln::cpu
