#include "runtime/cuda/driver_conv.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace kiln::cuda {
namespace {

// One cuDNN backend descriptor, destroyed with its owner.
class Descriptor {
 public:
  Descriptor() = default;
  Descriptor(const CudnnApi* api, cudnnBackendDescriptor_t d) : api_(api), d_(d) {}
  Descriptor(Descriptor&& o) noexcept : api_(o.api_), d_(o.d_) { o.d_ = nullptr; }
  Descriptor& operator=(Descriptor&& o) noexcept {
    std::swap(api_, o.api_);
    std::swap(d_, o.d_);
    return *this;
  }
  ~Descriptor() {
    if (d_) api_->cudnnBackendDestroyDescriptor(d_);
  }
  cudnnBackendDescriptor_t get() const { return d_; }
  // The address of the handle, for attributes that take descriptors.
  cudnnBackendDescriptor_t* address() { return &d_; }

 private:
  const CudnnApi* api_ = nullptr;
  cudnnBackendDescriptor_t d_ = nullptr;
};

// Builds descriptors, naming the call in every error.
class Builder {
 public:
  Builder(const CudnnApi& api, const ConvCall& call) : api_(api), call_(call) {}

  Result<Descriptor> Make(cudnnBackendDescriptorType_t type) {
    cudnnBackendDescriptor_t d = nullptr;
    KILN_RETURN_IF_ERROR(
        Check(api_.cudnnBackendCreateDescriptor(type, &d), "cudnnBackendCreateDescriptor"));
    return Descriptor(&api_, d);
  }
  Status Set(const Descriptor& d, cudnnBackendAttributeName_t name,
             cudnnBackendAttributeType_t type, int64_t count, const void* values) {
    return Check(api_.cudnnBackendSetAttribute(d.get(), name, type, count, values),
                 "cudnnBackendSetAttribute");
  }
  Status Finalize(const Descriptor& d) {
    return Check(api_.cudnnBackendFinalize(d.get()), "cudnnBackendFinalize");
  }
  Status Check(cudnnStatus_t status, const char* what) {
    Status st = CheckCudnn(api_, status, what);
    if (!st.ok()) return st.error().WithContext(call_.ToString());
    return OkStatus();
  }

  // The engine configurations a finalized heuristics descriptor ranks, best first.
  Result<std::vector<Descriptor>> RankedConfigs(const Descriptor& heuristics) {
    int64_t count = 0;
    KILN_RETURN_IF_ERROR(
        Check(api_.cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                            CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr),
              "cudnnBackendGetAttribute(CUDNN_ATTR_ENGINEHEUR_RESULTS)"));
    std::vector<Descriptor> configs;
    std::vector<cudnnBackendDescriptor_t> handles;
    for (int64_t i = 0; i < count; ++i) {
      KILN_ASSIGN_OR_RETURN(Descriptor config, Make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
      handles.push_back(config.get());
      configs.push_back(std::move(config));
    }
    if (count > 0)
      KILN_RETURN_IF_ERROR(Check(api_.cudnnBackendGetAttribute(
                                     heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &count, handles.data()),
                                 "cudnnBackendGetAttribute(CUDNN_ATTR_ENGINEHEUR_RESULTS)"));
    configs.resize(std::min(configs.size(), static_cast<size_t>(std::max<int64_t>(count, 0))));
    return configs;
  }

  // Why the engine of `config` would compute below the call's precision ("" when it would not):
  // it converts its inputs down (to f16), or it runs f32 data on tensor cores (TF32: 10 bits of
  // mantissa; kiln's f32 convolutions are exact f32, as PyTorch's are unless TF32 is allowed).
  // An engine whose numerical notes cannot be read is taken as it is.
  std::string LowerPrecision(const Descriptor& config) {
    Result<Descriptor> engine = Make(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    if (!engine.ok()) return "";
    cudnnBackendDescriptor_t handle = engine->get();
    int64_t count = 0;
    if (api_.cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE,
                                      CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count,
                                      &handle) != CUDNN_STATUS_SUCCESS)
      return "";
    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    if (api_.cudnnBackendGetAttribute(handle, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                      CUDNN_TYPE_NUMERICAL_NOTE, CUDNN_NUMERICAL_NOTE_TYPE_COUNT,
                                      &count, notes) != CUDNN_STATUS_SUCCESS)
      return "";
    for (int64_t i = 0; i < std::min<int64_t>(count, CUDNN_NUMERICAL_NOTE_TYPE_COUNT); ++i) {
      if (notes[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS) return "converts its inputs down";
      if (notes[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE && call_.dtype == DType::kF32)
        return "runs f32 data on tensor cores (TF32)";
    }
    return "";
  }

  // A 4-d tensor of `dims` (dense, row-major), with its unique id; virtual tensors are f32
  // intermediates that never reach memory.
  Result<Descriptor> Tensor(const std::array<int64_t, 4>& dims, int64_t uid, DType dtype,
                            DevicePtr address, bool is_virtual = false) {
    KILN_ASSIGN_OR_RETURN(Descriptor d, Make(CUDNN_BACKEND_TENSOR_DESCRIPTOR));
    const cudnnDataType_t type = is_virtual ? CUDNN_DATA_FLOAT : DataType(dtype);
    const int64_t strides[4] = {dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1};
    // The alignment cuDNN may assume: the largest power of two (at most 16) dividing the address.
    const int64_t alignment =
        is_virtual ? 16 : int64_t{1} << std::min(4, std::countr_zero(address | 16u));
    const bool virtual_flag = is_virtual;
    KILN_RETURN_IF_ERROR(Set(d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type));
    KILN_RETURN_IF_ERROR(Set(d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data()));
    KILN_RETURN_IF_ERROR(Set(d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides));
    KILN_RETURN_IF_ERROR(Set(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid));
    KILN_RETURN_IF_ERROR(Set(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment));
    KILN_RETURN_IF_ERROR(
        Set(d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virtual_flag));
    KILN_RETURN_IF_ERROR(Finalize(d));
    return d;
  }

  // The convolution's geometry (cross-correlation, f32 accumulation).
  Result<Descriptor> Convolution() {
    KILN_ASSIGN_OR_RETURN(Descriptor d, Make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR));
    const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
    const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    const int64_t spatial = 2;
    KILN_RETURN_IF_ERROR(
        Set(d, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute));
    KILN_RETURN_IF_ERROR(
        Set(d, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode));
    KILN_RETURN_IF_ERROR(
        Set(d, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial));
    KILN_RETURN_IF_ERROR(
        Set(d, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, call_.dilations.data()));
    KILN_RETURN_IF_ERROR(
        Set(d, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, call_.strides.data()));
    KILN_RETURN_IF_ERROR(
        Set(d, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, call_.pre_pads.data()));
    KILN_RETURN_IF_ERROR(
        Set(d, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, call_.post_pads.data()));
    KILN_RETURN_IF_ERROR(Finalize(d));
    return d;
  }

  // The convolution operation of the call's kind over tensors x, w and y (dx, dw, dy).
  Result<Descriptor> ConvOperation(Descriptor& conv, Descriptor& x, Descriptor& w, Descriptor& y) {
    cudnnBackendDescriptorType_t type = CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR;
    cudnnBackendAttributeName_t alpha_name = CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                                beta_name = CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,
                                conv_name = CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                                x_name = CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                                w_name = CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                                y_name = CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y;
    if (call_.kind == ConvCall::Kind::kBackwardData) {
      type = CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR;
      alpha_name = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA;
      beta_name = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA;
      conv_name = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC;
      x_name = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX;
      w_name = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W;
      y_name = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY;
    } else if (call_.kind == ConvCall::Kind::kBackwardFilter) {
      type = CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR;
      alpha_name = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA;
      beta_name = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA;
      conv_name = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC;
      x_name = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X;
      w_name = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW;
      y_name = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY;
    }
    KILN_ASSIGN_OR_RETURN(Descriptor op, Make(type));
    const float alpha = 1.0f, beta = 0.0f;
    KILN_RETURN_IF_ERROR(Set(op, alpha_name, CUDNN_TYPE_FLOAT, 1, &alpha));
    KILN_RETURN_IF_ERROR(Set(op, beta_name, CUDNN_TYPE_FLOAT, 1, &beta));
    KILN_RETURN_IF_ERROR(Set(op, conv_name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, conv.address()));
    KILN_RETURN_IF_ERROR(Set(op, x_name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, x.address()));
    KILN_RETURN_IF_ERROR(Set(op, w_name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, w.address()));
    KILN_RETURN_IF_ERROR(Set(op, y_name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, y.address()));
    KILN_RETURN_IF_ERROR(Finalize(op));
    return op;
  }

  // out = mode(in[, b]) in f32; the pointwise descriptor goes to `keep`.
  Result<Descriptor> Pointwise(cudnnPointwiseMode_t mode, Descriptor& in, Descriptor* b,
                               Descriptor& out, std::vector<Descriptor>& keep) {
    KILN_ASSIGN_OR_RETURN(Descriptor pw, Make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR));
    const cudnnDataType_t precision = CUDNN_DATA_FLOAT;
    KILN_RETURN_IF_ERROR(Set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode));
    KILN_RETURN_IF_ERROR(
        Set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &precision));
    KILN_RETURN_IF_ERROR(Finalize(pw));
    KILN_ASSIGN_OR_RETURN(Descriptor op, Make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR));
    KILN_RETURN_IF_ERROR(Set(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR,
                             CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, pw.address()));
    KILN_RETURN_IF_ERROR(Set(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC,
                             CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, in.address()));
    if (b)
      KILN_RETURN_IF_ERROR(Set(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, b->address()));
    KILN_RETURN_IF_ERROR(Set(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC,
                             CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, out.address()));
    KILN_RETURN_IF_ERROR(Finalize(op));
    keep.push_back(std::move(pw));
    return op;
  }

  static cudnnDataType_t DataType(DType t) {
    return t == f16 ? CUDNN_DATA_HALF : t == bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
  }

 private:
  const CudnnApi& api_;
  const ConvCall& call_;
};

// Unique ids of the call's tensors in its graph and variant pack.
enum Uid : int64_t { kX = 1, kW, kY, kBias, kResidual, kFirstVirtual = 100 };

struct DriverConv : PreparedConv {
  ConvCall call;
  std::vector<Descriptor> keep;  // the graph's descriptors, alive while the plan is
  Descriptor plan, variant_pack;
};

}  // namespace

bool DriverConvs::AutotuneEnabled() {
  const char* value = std::getenv("KILN_CUDNN_AUTOTUNE");
  return !value || std::strcmp(value, "0") != 0;
}

Result<std::unique_ptr<DriverConvs>> DriverConvs::Create(const DriverApi& driver, CUstream stream,
                                                         DevicePtr workspace) {
  KILN_ASSIGN_OR_RETURN(const CudnnApi* api, LoadCudnn());
  cudnnHandle_t handle = nullptr;
  KILN_RETURN_IF_ERROR(CheckCudnn(*api, api->cudnnCreate(&handle), "cudnnCreate"));
  Status bound = CheckCudnn(*api, api->cudnnSetStream(handle, stream), "cudnnSetStream");
  if (!bound.ok()) {
    api->cudnnDestroy(handle);
    return bound.error();
  }
  return std::unique_ptr<DriverConvs>(new DriverConvs(*api, driver, handle, stream, workspace));
}

DriverConvs::~DriverConvs() { api_.cudnnDestroy(handle_); }

Result<std::shared_ptr<PreparedConv>> DriverConvs::Prepare(const ConvCall& call,
                                                           const ConvOperands& operands) {
  auto prepared = std::make_shared<DriverConv>();
  prepared->call = call;
  Builder b(api_, prepared->call);
  std::vector<Descriptor>& keep = prepared->keep;

  // The tensors: x, w, y (the forward names, whichever the call computes) and the epilogue's.
  KILN_ASSIGN_OR_RETURN(Descriptor x, b.Tensor(call.x, kX, call.dtype, operands.x));
  KILN_ASSIGN_OR_RETURN(Descriptor w, b.Tensor(call.w, kW, call.dtype, operands.w));
  KILN_ASSIGN_OR_RETURN(Descriptor y, b.Tensor(call.y, kY, call.dtype, operands.y));
  KILN_ASSIGN_OR_RETURN(Descriptor conv, b.Convolution());
  std::vector<int64_t> uids = {kX, kW, kY};
  std::vector<void*> pointers = {reinterpret_cast<void*>(operands.x),
                                 reinterpret_cast<void*>(operands.w),
                                 reinterpret_cast<void*>(operands.y)};
  std::vector<Descriptor> ops;
  const bool epilogue =
      call.kind == ConvCall::Kind::kForward && (call.bias || call.residual || call.relu);
  if (!epilogue) {
    KILN_ASSIGN_OR_RETURN(Descriptor op, b.ConvOperation(conv, x, w, y));
    ops.push_back(std::move(op));
  } else {
    // conv -> t0 (f32, virtual) -> + bias -> + residual -> relu, the last one writing y.
    std::vector<std::pair<cudnnPointwiseMode_t, int64_t>> steps;  // mode, operand uid (0: none)
    if (call.bias) steps.push_back({CUDNN_POINTWISE_ADD, kBias});
    if (call.residual) steps.push_back({CUDNN_POINTWISE_ADD, kResidual});
    if (call.relu) steps.push_back({CUDNN_POINTWISE_RELU_FWD, 0});
    int64_t next_virtual = kFirstVirtual;
    KILN_ASSIGN_OR_RETURN(Descriptor t, b.Tensor(call.y, next_virtual++, f32, 0, true));
    KILN_ASSIGN_OR_RETURN(Descriptor op, b.ConvOperation(conv, x, w, t));
    ops.push_back(std::move(op));
    for (size_t i = 0; i < steps.size(); ++i) {
      Descriptor operand;
      if (steps[i].second == kBias) {
        KILN_ASSIGN_OR_RETURN(operand,
                              b.Tensor({1, call.y[1], 1, 1}, kBias, call.dtype, operands.bias));
        uids.push_back(kBias);
        pointers.push_back(reinterpret_cast<void*>(operands.bias));
      } else if (steps[i].second == kResidual) {
        KILN_ASSIGN_OR_RETURN(operand, b.Tensor(call.y, kResidual, call.dtype, operands.residual));
        uids.push_back(kResidual);
        pointers.push_back(reinterpret_cast<void*>(operands.residual));
      }
      Descriptor out;
      const bool last = i + 1 == steps.size();
      if (!last) {
        KILN_ASSIGN_OR_RETURN(out, b.Tensor(call.y, next_virtual++, f32, 0, true));
      }
      KILN_ASSIGN_OR_RETURN(
          Descriptor pw,
          b.Pointwise(steps[i].first, t, operand.get() ? &operand : nullptr, last ? y : out, keep));
      ops.push_back(std::move(pw));
      keep.push_back(std::move(t));
      if (operand.get()) keep.push_back(std::move(operand));
      if (!last) t = std::move(out);
    }
  }

  // The graph, cuDNN's heuristics, and the first engine configuration that finalizes into a plan
  // whose workspace fits.
  KILN_ASSIGN_OR_RETURN(Descriptor graph, b.Make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR));
  std::vector<cudnnBackendDescriptor_t> op_handles;
  for (const Descriptor& op : ops) op_handles.push_back(op.get());
  KILN_RETURN_IF_ERROR(b.Set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                             static_cast<int64_t>(op_handles.size()), op_handles.data()));
  KILN_RETURN_IF_ERROR(
      b.Set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle_));
  KILN_RETURN_IF_ERROR(b.Finalize(graph));
  // The first kAutotuneCandidates configurations (in the heuristics' order) that compute at the
  // call's precision and finalize with a workspace that fits: mode A's, or where none of those
  // does, the fallback mode's (a list of its own, which overlaps mode A's).
  std::vector<Descriptor> heuristics, configs;
  std::string refusals;  // the first reason a mode or an engine was passed over
  auto refuse = [&](const std::string& why) {
    if (refusals.empty()) refusals = why;
  };
  std::vector<std::pair<Descriptor, int64_t>> candidates;  // plan, its configuration
  const size_t wanted = AutotuneEnabled() ? kAutotuneCandidates : 1;
  int64_t count = 0;  // engine configurations ranked, over the modes tried
  for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    if (!candidates.empty()) break;
    const char* mode_name = mode == CUDNN_HEUR_MODE_A ? "mode A" : "the fallback mode";
    KILN_ASSIGN_OR_RETURN(Descriptor ranked, b.Make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR));
    KILN_RETURN_IF_ERROR(b.Set(ranked, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, graph.address()));
    KILN_RETURN_IF_ERROR(b.Set(ranked, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode));
    if (Status st = b.Finalize(ranked); !st.ok()) {  // no heuristics of this mode for the graph
      refuse(std::string(mode_name) + ": " + st.error().message());
      continue;
    }
    KILN_ASSIGN_OR_RETURN(std::vector<Descriptor> ranked_configs, b.RankedConfigs(ranked));
    heuristics.push_back(std::move(ranked));
    const size_t first = configs.size();
    for (Descriptor& config : ranked_configs) configs.push_back(std::move(config));
    count += static_cast<int64_t>(configs.size() - first);
    for (size_t i = first; i < configs.size() && candidates.size() < wanted; ++i) {
      const std::string engine = std::string(mode_name) + "'s engine " + std::to_string(i - first);
      if (std::string lower = b.LowerPrecision(configs[i]); !lower.empty()) {
        refuse(engine + " " + lower);
        continue;
      }
      KILN_ASSIGN_OR_RETURN(Descriptor plan, b.Make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR));
      KILN_RETURN_IF_ERROR(
          b.Set(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle_));
      KILN_RETURN_IF_ERROR(b.Set(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, configs[i].address()));
      if (Status st = b.Finalize(plan); !st.ok()) {
        refuse(engine + ": " + st.error().message());
        continue;
      }
      int64_t workspace = 0, got = 0;
      KILN_RETURN_IF_ERROR(b.Check(
          api_.cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                        CUDNN_TYPE_INT64, 1, &got, &workspace),
          "cudnnBackendGetAttribute(CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE)"));
      if (workspace > kConvWorkspaceBytes) {
        refuse(engine + " needs " + std::to_string(workspace) + " bytes of workspace");
        continue;
      }
      candidates.push_back({std::move(plan), static_cast<int64_t>(i)});
    }
  }
  if (candidates.empty())
    return MakeError(ErrorCode::kUnimplemented, call.ToString(), ": none of cuDNN's ", count,
                     " engines for it can run here",
                     refusals.empty() ? std::string() : " (first refusal: " + refusals + ")");

  KILN_ASSIGN_OR_RETURN(prepared->variant_pack, b.Make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR));
  void* workspace = reinterpret_cast<void*>(workspace_);
  KILN_RETURN_IF_ERROR(b.Set(prepared->variant_pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS,
                             CUDNN_TYPE_INT64, static_cast<int64_t>(uids.size()), uids.data()));
  KILN_RETURN_IF_ERROR(b.Set(prepared->variant_pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                             CUDNN_TYPE_VOID_PTR, static_cast<int64_t>(pointers.size()),
                             pointers.data()));
  KILN_RETURN_IF_ERROR(b.Set(prepared->variant_pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
                             CUDNN_TYPE_VOID_PTR, 1, &workspace));
  KILN_RETURN_IF_ERROR(b.Finalize(prepared->variant_pack));
  // The fastest candidate on this GPU, timed on the plan's own buffers (what they hold does not
  // matter: the run overwrites the output); a candidate that fails to run is passed over.
  size_t best = 0;
  double best_ms = -1;
  for (size_t c = 0; candidates.size() > 1 && c < candidates.size(); ++c) {
    Result<double> ms = Time(candidates[c].first.get(), prepared->variant_pack.get());
    if (ms.ok() && (best_ms < 0 || *ms < best_ms)) best = c, best_ms = *ms;
  }
  if (candidates.size() > 1 && best_ms < 0)
    return MakeError(ErrorCode::kUnimplemented, call.ToString(), ": none of the ",
                     candidates.size(), " engines cuDNN planned for it ran");
  prepared->plan = std::move(candidates[best].first);
  keep.push_back(std::move(configs[candidates[best].second]));  // the plan's configuration
  for (Descriptor* d : {&x, &w, &y, &conv, &graph}) keep.push_back(std::move(*d));
  for (Descriptor& d : heuristics) keep.push_back(std::move(d));
  for (Descriptor& op : ops) keep.push_back(std::move(op));
  return std::shared_ptr<PreparedConv>(std::move(prepared));
}

Result<double> DriverConvs::Time(cudnnBackendDescriptor_t plan, cudnnBackendDescriptor_t pack) {
  KILN_RETURN_IF_ERROR(
      CheckCudnn(api_, api_.cudnnBackendExecute(handle_, plan, pack), "cudnnBackendExecute"));
  CUevent events[2] = {nullptr, nullptr};
  Status st = OkStatus();
  for (CUevent& e : events)
    if (st.ok())
      st = CheckCuda(driver_, driver_.cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");
  if (st.ok()) st = CheckCuda(driver_, driver_.cuEventRecord(events[0], stream_), "cuEventRecord");
  for (int r = 0; st.ok() && r < kAutotuneRuns; ++r)
    st = CheckCudnn(api_, api_.cudnnBackendExecute(handle_, plan, pack), "cudnnBackendExecute");
  if (st.ok()) st = CheckCuda(driver_, driver_.cuEventRecord(events[1], stream_), "cuEventRecord");
  if (st.ok()) st = CheckCuda(driver_, driver_.cuEventSynchronize(events[1]), "cuEventSynchronize");
  float ms = 0;
  if (st.ok())
    st = CheckCuda(driver_, driver_.cuEventElapsedTime(&ms, events[0], events[1]),
                   "cuEventElapsedTime");
  for (CUevent e : events)
    if (e) driver_.cuEventDestroy(e);
  if (!st.ok()) {
    (void)driver_.cuStreamSynchronize(stream_);  // a failed candidate leaves nothing queued
    return st.error();
  }
  return static_cast<double>(ms);
}

Status DriverConvs::Run(const PreparedConv& conv) {
  const auto& c = static_cast<const DriverConv&>(conv);
  Status st =
      CheckCudnn(api_, api_.cudnnBackendExecute(handle_, c.plan.get(), c.variant_pack.get()),
                 "cudnnBackendExecute");
  if (!st.ok()) return st.error().WithContext(c.call.ToString());
  return OkStatus();
}

}  // namespace kiln::cuda
