#include "compiler/cost_model.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "compiler/op_lowerings.h"
#include "ir/graph_stats.h"
#include "runtime/cuda/cuda_program.h"
#include "runtime/cuda/device_copies.h"
#include "runtime/cuda/graph_capture.h"
#include "runtime/cuda/matmul_call.h"

namespace kiln::compiler {
namespace {

// The names in a step's comma-joined node list.
std::vector<std::string> NodeNames(const std::string& joined) {
  std::vector<std::string> names;
  std::stringstream in(joined);
  std::string name;
  while (std::getline(in, name, ','))
    if (!name.empty()) names.push_back(name);
  return names;
}

// How a piece of device work is costed: which peak its FLOPs run at, with which efficiency.
struct Rate {
  double tflops = 0;
  double efficiency = 1;
  bool convolution = false;  // costs at least CostAssumptions::conv_floor_us
};

class Estimator {
 public:
  Estimator(const CudaPlan& plan, const Chip& chip, const CostAssumptions& assume)
      : planned_(plan.planned), chip_(chip), assume_(assume) {
    for (const Node* node : planned_.simplified.plan.nodes) nodes_[node->name] = node;
    // The unfused estimate's MatMuls use TF32 where the plan's gemms do.
    for (const Step& step : planned_.lowered.executable.steps)
      tf32_ = tf32_ || step.attrs.Has("tf32");
    graph_ = cuda::AnalyzeGraphCapture(planned_.lowered.executable).capturable;
    launch_us_ = graph_ ? assume_.graph_launch_us : assume_.launch_us;
    cudnn_ = cuda::ProgramOptions::FromEnvironment().cudnn;
  }

  PlanCost Run() const {
    PlanCost cost;
    cost.graph = graph_;
    const Executable& exe = planned_.lowered.executable;
    std::set<std::string> host_nodes;
    double copy_us = 0;
    for (size_t i = 0; i < exe.steps.size(); ++i) {
      const Step& step = exe.steps[i];
      if (step.kind == Step::Kind::kLibrary && step.callee == "variable_read") continue;
      StepCost s;
      s.step = static_cast<int>(i);
      s.what = step.callee;
      s.nodes = step.node.name;
      if (step.callee == "to_device" || step.callee == "to_host") {
        const BufferDesc& b = exe.buffers[step.inputs[0]];
        s.side = "copy";
        s.bytes = static_cast<double>(b.bytes());
        s.nodes = b.tensor;
        if (step.callee == "to_device" && b.kind == BufferDesc::Kind::kVariable) {
          s.bound = "first run";
        } else {
          s.bound = "pcie";
          s.us = assume_.copy_latency_us + s.bytes / (assume_.pcie_gbps * 1e3) +
                 s.bytes / (assume_.staging_gbps * 1e3);
          copy_us += s.us;
        }
      } else if (!step.on_device) {
        s.side = "host";
        s.bound = "not estimated";
        ++cost.host_steps;
        for (const std::string& n : NodeNames(step.node.name)) host_nodes.insert(n);
      } else {
        s.side = "device";
        s.flops = StepFlops(step);
        s.bytes = OperandBytes(exe, step);
        Device(s, StepRate(step, exe));
        ++cost.launches;
      }
      cost.total_us += s.us;
      cost.steps.push_back(std::move(s));
    }
    // One kernel per op: every node the device computes, a launch of its own.
    cost.unfused_us = copy_us;
    for (const Node* node : planned_.simplified.plan.nodes) {
      if (node->op == "Variable" || host_nodes.count(node->name) || !Computes(*node)) continue;
      StepCost s;
      s.flops = NodeFlops(*node);
      for (const TensorRef& in : node->inputs) s.bytes += Bytes(in);
      for (size_t o = 0; o < node->output_types.size(); ++o)
        s.bytes += Bytes(TensorRef{node->name, static_cast<int>(o)});
      Device(s, NodeRate(*node));
      cost.unfused_us += s.us;
      ++cost.unfused_launches;
    }
    cost.no_graph_us = cost.total_us + cost.launches * (assume_.launch_us - launch_us_);
    return cost;
  }

 private:
  // Roofline plus the launch (a convolution: at least its floor).
  void Device(StepCost& s, Rate rate) const {
    const double compute_us = s.flops / (rate.tflops * rate.efficiency * 1e6);
    const double memory_us = s.bytes / (chip_.hbm_tbps * assume_.memory_efficiency * 1e6);
    const double work_us = std::max(compute_us, memory_us);
    s.bound = work_us < launch_us_ ? "launch" : compute_us > memory_us ? "compute" : "memory";
    s.us = work_us + launch_us_;
    if (rate.convolution && s.us < assume_.conv_floor_us) {
      s.bound = "conv latency";
      s.us = assume_.conv_floor_us;
    }
  }

  Rate Fp32() const { return {chip_.fp32_tflops, 1.0}; }
  Rate Gemm(DType operands, bool tf32) const {
    const double peak = operands == f16 || operands == bf16 ? chip_.tensor16_tflops
                        : tf32                              ? chip_.tf32_tflops
                                                            : chip_.fp32_tflops;
    return {peak, assume_.gemm_efficiency};
  }
  // A convolution of `operands`: cuDNN's where the runtime calls it, else a generated kernel.
  Rate Conv(DType operands) const {
    if (!cudnn_) return {chip_.fp32_tflops, assume_.direct_conv_efficiency, true};
    const bool tensor_cores = operands == f16 || operands == bf16;
    return {tensor_cores ? chip_.tensor16_tflops : chip_.fp32_tflops, assume_.cudnn_conv_efficiency,
            true};
  }

  Rate StepRate(const Step& step, const Executable& exe) const {
    if (cuda::IsDeviceGemm(step, exe))
      return Gemm(exe.buffers[step.inputs[0]].type.dtype, step.attrs.Has("tf32"));
    Result<std::string> library = step.attrs.GetString("library");
    if (library.ok() && library->rfind("conv2d", 0) == 0)
      return Conv(exe.buffers[step.inputs[0]].type.dtype);
    return Fp32();
  }

  Rate NodeRate(const Node& node) const {
    const OpLowering* lowering = OpLowerings::Global().Find(node.op);
    const OpLowering::Call call = lowering ? lowering->call : OpLowering::Call::kOther;
    if (call == OpLowering::Call::kGemm) return Gemm(Type(TensorRef{node.name, 0}).dtype, tf32_);
    if (call == OpLowering::Call::kConvolution) return Conv(Type(node.inputs[0]).dtype);
    return Fp32();
  }

  double StepFlops(const Step& step) const {
    double flops = 0;
    for (const std::string& name : NodeNames(step.node.name))
      if (auto it = nodes_.find(name); it != nodes_.end()) flops += NodeFlops(*it->second);
    return flops;
  }

  double NodeFlops(const Node& node) const {
    auto type = planned_.info.types.find(TensorRef{node.name, 0});
    if (type == planned_.info.types.end()) return 0;
    return EstimateNodeFlops(
        node,
        [&](int i) -> const Shape* {
          if (i >= static_cast<int>(node.inputs.size())) return nullptr;
          auto in = planned_.info.types.find(node.inputs[i]);
          return in == planned_.info.types.end() ? nullptr : &in->second.shape;
        },
        type->second.shape);
  }

  // Whether a node computes at run time (some output is not known at compile time).
  bool Computes(const Node& node) const {
    for (size_t o = 0; o < node.output_types.size(); ++o)
      if (!planned_.info.values.count(TensorRef{node.name, static_cast<int>(o)})) return true;
    return false;
  }

  TensorType Type(const TensorRef& ref) const {
    auto it = planned_.info.types.find(ref);
    return it == planned_.info.types.end() ? TensorType{} : it->second;
  }
  double Bytes(const TensorRef& ref) const {
    const TensorType t = Type(ref);
    return t.dtype == DType::kInvalid
               ? 0
               : static_cast<double>(t.shape.NumElements() * DTypeSize(t.dtype));
  }

  static double OperandBytes(const Executable& exe, const Step& step) {
    std::set<int> ids(step.inputs.begin(), step.inputs.end());
    ids.insert(step.outputs.begin(), step.outputs.end());
    double bytes = 0;
    for (int id : ids) bytes += static_cast<double>(exe.buffers[id].bytes());
    return bytes;
  }

  const PlannedExecutable& planned_;
  const Chip& chip_;
  const CostAssumptions& assume_;
  std::map<std::string, const Node*> nodes_;
  bool tf32_ = false;
  bool graph_ = false;    // the plan is captured as a CUDA graph
  bool cudnn_ = true;     // convolutions run as cuDNN's (KILN_CUDNN), else generated kernels
  double launch_us_ = 0;  // a launch's overhead: a replayed graph's kernel, or one issued alone
};

}  // namespace

Result<Chip> ChipByName(const std::string& name) {
  // Dense (not sparse) rates of the SXM parts, from NVIDIA's data sheets.
  static const Chip kChips[] = {
      {"h100", 989, 495, 67, 3.35},
      {"h200", 989, 495, 67, 4.8},
      {"a100", 312, 156, 19.5, 2.039},
  };
  for (const Chip& chip : kChips)
    if (chip.name == name) return chip;
  return MakeError(ErrorCode::kInvalidArgument, "unknown GPU '", name,
                   "' (the cost model knows h100, h200 and a100)");
}

PlanCost EstimatePlanCost(const CudaPlan& plan, const Chip& chip, const CostAssumptions& assume) {
  return Estimator(plan, chip, assume).Run();
}

}  // namespace kiln::compiler
