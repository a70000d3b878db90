// Library step "reorder": output 0 gets input 0's elements in the output buffer's layout (the
// layout pass puts one where a buffer in a blocked layout meets a step that reads or writes only
// dense buffers: runtime/cpu/layouts.h). Both buffers have one rank-4 type of f32, bf16 or f16;
// oneDNN's reorder primitive is created once, at load.
// Also MakeDenseStep: a step run on dense copies of its blocked operands (a pooling step's
// reference fallback).
#include <omp.h>

#include <algorithm>

#include "runtime/cpu/library_steps.h"
#include "runtime/cpu/onednn.h"

namespace kiln::cpu {
namespace {

using dnnl::memory;

bool Reorderable(const TensorType& type) {
  return type.shape.rank() == 4 && (type.dtype == f32 || type.dtype == bf16 || type.dtype == f16);
}

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

// A step whose blocked operands are reordered into dense scratch (inputs before it runs, outputs
// back after), the inner step seeing a copy of the plan's buffers without layouts.
class DenseStep : public StepRunner {
 public:
  // One blocked operand: its buffer, its scratch and the reorders between them.
  struct Blocked {
    int buffer;
    bool output;
    memory::desc blocked, dense;
    dnnl::reorder reorder;
    mutable std::vector<uint8_t> scratch;
  };

  DenseStep(std::vector<Blocked> blocked, std::unique_ptr<Executable> dense_exe)
      : blocked_(std::move(blocked)), dense_exe_(std::move(dense_exe)) {}
  const Executable* dense_exe() const { return dense_exe_.get(); }
  void SetInner(std::unique_ptr<StepRunner> inner) { inner_ = std::move(inner); }

  Status Run(StepEnv& env) const override {
    StepEnv inner = env;
    inner.executable = dense_exe_.get();
    try {
      dnnl::stream stream(OnednnEngine());
      for (const Blocked& b : blocked_) {
        inner.data[b.buffer] = b.scratch.data();
        if (b.output) continue;
        memory from(b.blocked, OnednnEngine(), env.data[b.buffer]);
        memory to(b.dense, OnednnEngine(), b.scratch.data());
        b.reorder.execute(stream, from, to);
      }
      stream.wait();
      KILN_RETURN_IF_ERROR(inner_->Run(inner));
      for (const Blocked& b : blocked_) {
        if (!b.output) continue;
        memory from(b.dense, OnednnEngine(), b.scratch.data());
        memory to(b.blocked, OnednnEngine(), env.data[b.buffer]);
        b.reorder.execute(stream, from, to);
      }
      stream.wait();
    } catch (const dnnl::error& e) {
      return MakeError(ErrorCode::kInternal, "oneDNN reorder failed: ", e.what());
    }
    return OkStatus();
  }

 private:
  std::vector<Blocked> blocked_;
  std::unique_ptr<Executable> dense_exe_;
  std::unique_ptr<StepRunner> inner_;
};

}  // namespace

Result<std::unique_ptr<StepRunner>> MakeDenseStep(const Step& step, const Executable& exe,
                                                  const LibraryStepFactory& make) {
  std::vector<DenseStep::Blocked> blocked;
  auto dense_exe = std::make_unique<Executable>();  // the buffers are all a step looks at
  dense_exe->buffers = exe.buffers;
  try {
    for (const std::vector<int>* ids : {&step.inputs, &step.outputs})
      for (int id : *ids) {
        BufferDesc& b = dense_exe->buffers[id];
        if (b.layout.empty()) continue;
        if (ids == &step.outputs && std::count(step.inputs.begin(), step.inputs.end(), id))
          return MakeError(ErrorCode::kInternal, step.callee, ": buffer %", id,
                           " is both an input and an output");
        if (!Reorderable(b.type))
          return MakeError(ErrorCode::kInternal, step.callee, ": buffer %", id, " ",
                           b.type.ToString(), " cannot have layout '", b.layout, "'");
        const memory::dims dims = OnednnDims(b.type.shape);
        const memory::data_type dt = OnednnType(b.type.dtype);
        DenseStep::Blocked d{id,
                             ids == &step.outputs,
                             BufferMemoryDesc(b, dims, dt, memory::format_tag::nchw),
                             memory::desc(dims, dt, memory::format_tag::nchw),
                             {},
                             {}};
        d.reorder = d.output ? dnnl::reorder(memory(d.dense, OnednnEngine(), nullptr),
                                             memory(d.blocked, OnednnEngine(), nullptr))
                             : dnnl::reorder(memory(d.blocked, OnednnEngine(), nullptr),
                                             memory(d.dense, OnednnEngine(), nullptr));
        d.scratch.resize(static_cast<size_t>(b.bytes()));
        b.layout.clear();
        blocked.push_back(std::move(d));
      }
  } catch (const dnnl::error& e) {
    return MakeError(ErrorCode::kInternal, step.callee, ": oneDNN refused a reorder: ", e.what());
  }
  if (blocked.empty()) return make(step, exe);
  auto runner = std::make_unique<DenseStep>(std::move(blocked), std::move(dense_exe));
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<StepRunner> inner, make(step, *runner->dense_exe()));
  runner->SetInner(std::move(inner));
  return std::unique_ptr<StepRunner>(std::move(runner));
}

Result<std::unique_ptr<StepRunner>> MakeReorderStep(const Step& step, const Executable& exe) {
  if (step.inputs.size() != 1 || step.outputs.size() != 1)
    return MakeError(ErrorCode::kInternal, "reorder takes 1 input and 1 output");
  const BufferDesc& from = exe.buffers[step.inputs[0]];
  const BufferDesc& to = exe.buffers[step.outputs[0]];
  const TensorType& type = from.type;
  if (!(to.type == type) || !Reorderable(type))
    return MakeError(ErrorCode::kInternal,
                     "reorder needs two rank-4 f32, bf16 or f16 buffers of one type, got ",
                     type.ToString(), " and ", to.type.ToString());
  const memory::data_type dt = OnednnType(type.dtype);
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
