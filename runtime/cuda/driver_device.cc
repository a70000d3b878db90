// The "cuda" device (device.h): the first GPU through the driver API, one stream, copies staged
// through pinned host memory, kernels loaded from the plan's cubin or PTX (PTX JIT-compiled by the
// driver for the GPU at hand), matmuls through cuBLASLt (driver_matmul.h), loaded when a plan first
// has one; graphs by stream capture (thread-local mode), instantiated once and launched on the
// stream; a data-parallel plan's all-reduces through NCCL on the same stream (nccl_collectives.h).
#include <cstring>
#include <map>
#include <mutex>

#include "runtime/cuda/device.h"
#include "runtime/cuda/driver_api.h"
#include "runtime/cuda/driver_conv.h"
#include "runtime/cuda/driver_matmul.h"
#include "runtime/cuda/nccl_collectives.h"

namespace kiln::cuda {
namespace {

class DriverCode : public DeviceCode {
 public:
  DriverCode(const DriverApi& api, CUcontext context, CUmodule module)
      : api_(api), context_(context), module_(module) {}
  ~DriverCode() override {
    api_.cuCtxSetCurrent(context_);
    api_.cuModuleUnload(module_);
  }

  Result<CUfunction> Function(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = functions_.find(name);
    if (it != functions_.end()) return it->second;
    CUfunction f = nullptr;
    KILN_RETURN_IF_ERROR(CheckCuda(api_, api_.cuModuleGetFunction(&f, module_, name.c_str()),
                                   ("cuModuleGetFunction(" + name + ")").c_str()));
    functions_[name] = f;
    return f;
  }

 private:
  const DriverApi& api_;
  CUcontext context_;
  CUmodule module_;
  mutable std::mutex mutex_;
  mutable std::map<std::string, CUfunction> functions_;
};

class DriverGraph : public DeviceGraph {
 public:
  DriverGraph(const DriverApi& api, CUgraph graph, CUgraphExec exec)
      : api_(api), graph_(graph), exec_(exec) {}
  ~DriverGraph() override {
    if (exec_) api_.cuGraphExecDestroy(exec_);
    if (graph_) api_.cuGraphDestroy(graph_);
  }
  CUgraphExec exec() const { return exec_; }

 private:
  const DriverApi& api_;
  CUgraph graph_;
  CUgraphExec exec_;
};

class DriverDevice : public Device {
 public:
  DriverDevice(const DriverApi& api, CUdevice device, CUcontext context, CUstream stream,
               int architecture, std::string description)
      : api_(api),
        architecture_(architecture),
        device_(device),
        context_(context),
        stream_(stream),
        description_(std::move(description)) {}
  ~DriverDevice() override {
    api_.cuCtxSetCurrent(context_);
    api_.cuStreamSynchronize(stream_);
    matmuls_.reset();
    convs_.reset();
    for (CUevent event : marks_) api_.cuEventDestroy(event);
    if (matmul_workspace_) api_.cuMemFree(static_cast<CUdeviceptr>(matmul_workspace_));
    if (conv_workspace_) api_.cuMemFree(static_cast<CUdeviceptr>(conv_workspace_));
    if (staging_) api_.cuMemFreeHost(staging_);
    api_.cuStreamDestroy(stream_);
    api_.cuDevicePrimaryCtxRelease(device_);
  }

  std::string Describe() const override { return description_; }
  int Architecture() const override { return architecture_; }

  Result<DevicePtr> Allocate(int64_t bytes) override {
    KILN_RETURN_IF_ERROR(Current());
    CUdeviceptr p = 0;
    KILN_RETURN_IF_ERROR(
        CheckCuda(api_, api_.cuMemAlloc(&p, std::max<int64_t>(bytes, 1)), "cuMemAlloc"));
    return static_cast<DevicePtr>(p);
  }

  void Free(DevicePtr address) override {
    if (Current().ok()) api_.cuMemFree(static_cast<CUdeviceptr>(address));
  }

  Result<DeviceMemory> Memory() override {
    KILN_RETURN_IF_ERROR(Current());
    size_t free = 0, total = 0;
    KILN_RETURN_IF_ERROR(CheckCuda(api_, api_.cuMemGetInfo(&free, &total), "cuMemGetInfo"));
    return DeviceMemory{static_cast<int64_t>(free), static_cast<int64_t>(total)};
  }

  Status ToDevice(DevicePtr dst, const void* src, int64_t bytes) override {
    if (bytes == 0) return OkStatus();
    KILN_RETURN_IF_ERROR(Stage(bytes));
    std::memcpy(staging_, src, bytes);
    KILN_RETURN_IF_ERROR(CheckCuda(
        api_, api_.cuMemcpyHtoDAsync(static_cast<CUdeviceptr>(dst), staging_, bytes, stream_),
        "cuMemcpyHtoDAsync"));
    // The staging buffer is reused by the next copy.
    return CheckCuda(api_, api_.cuStreamSynchronize(stream_), "cuStreamSynchronize");
  }

  Status ToHost(void* dst, DevicePtr src, int64_t bytes) override {
    if (bytes == 0) return OkStatus();
    KILN_RETURN_IF_ERROR(Stage(bytes));
    KILN_RETURN_IF_ERROR(CheckCuda(
        api_, api_.cuMemcpyDtoHAsync(staging_, static_cast<CUdeviceptr>(src), bytes, stream_),
        "cuMemcpyDtoHAsync"));
    KILN_RETURN_IF_ERROR(CheckCuda(api_, api_.cuStreamSynchronize(stream_), "cuStreamSynchronize"));
    std::memcpy(dst, staging_, bytes);
    return OkStatus();
  }

  Status CopyOnDevice(DevicePtr dst, DevicePtr src, int64_t bytes) override {
    if (bytes == 0 || dst == src) return OkStatus();  // a copy placed on its own source
    KILN_RETURN_IF_ERROR(Current());
    return CheckCuda(api_,
                     api_.cuMemcpyDtoDAsync(static_cast<CUdeviceptr>(dst),
                                            static_cast<CUdeviceptr>(src), bytes, stream_),
                     "cuMemcpyDtoDAsync");
  }

  Result<void*> AllocatePinned(int64_t bytes) override {
    KILN_RETURN_IF_ERROR(Current());
    void* p = nullptr;
    KILN_RETURN_IF_ERROR(
        CheckCuda(api_, api_.cuMemHostAlloc(&p, std::max<int64_t>(bytes, 1), 0), "cuMemHostAlloc"));
    return p;
  }

  void FreePinned(void* pinned) override {
    if (Current().ok()) api_.cuMemFreeHost(pinned);
  }

  Status ToDeviceAsync(DevicePtr dst, const void* pinned_src, int64_t bytes) override {
    if (bytes == 0) return OkStatus();
    KILN_RETURN_IF_ERROR(Current());
    return CheckCuda(
        api_, api_.cuMemcpyHtoDAsync(static_cast<CUdeviceptr>(dst), pinned_src, bytes, stream_),
        "cuMemcpyHtoDAsync");
  }

  Status ToHostAsync(void* pinned_dst, DevicePtr src, int64_t bytes) override {
    if (bytes == 0) return OkStatus();
    KILN_RETURN_IF_ERROR(Current());
    return CheckCuda(
        api_, api_.cuMemcpyDtoHAsync(pinned_dst, static_cast<CUdeviceptr>(src), bytes, stream_),
        "cuMemcpyDtoHAsync");
  }

  Status BeginCapture() override {
    KILN_RETURN_IF_ERROR(Current());
    return CheckCuda(api_, api_.cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                     "cuStreamBeginCapture");
  }

  Result<std::unique_ptr<DeviceGraph>> EndCapture() override {
    // Ended whatever happens (a stream left capturing would refuse all later work).
    const Status current = Current();
    CUgraph graph = nullptr;
    const CUresult ended = api_.cuStreamEndCapture(stream_, &graph);
    if (!current.ok()) {
      if (graph) api_.cuGraphDestroy(graph);
      return current.error();
    }
    if (ended != CUDA_SUCCESS) {
      if (graph) api_.cuGraphDestroy(graph);
      return CheckCuda(api_, ended, "cuStreamEndCapture").error();
    }
    CUgraphExec exec = nullptr;
    if (Status st = CheckCuda(api_, api_.cuGraphInstantiateWithFlags(&exec, graph, 0),
                              "cuGraphInstantiateWithFlags");
        !st.ok()) {
      api_.cuGraphDestroy(graph);
      return st.error();
    }
    return std::unique_ptr<DeviceGraph>(new DriverGraph(api_, graph, exec));
  }

  Status Replay(const DeviceGraph& graph) override {
    KILN_RETURN_IF_ERROR(Current());
    return CheckCuda(api_,
                     api_.cuGraphLaunch(static_cast<const DriverGraph&>(graph).exec(), stream_),
                     "cuGraphLaunch");
  }

  Result<std::shared_ptr<DeviceCode>> Load(const CompiledPlan& plan) override {
    KILN_RETURN_IF_ERROR(Current());
    if (plan.device_code.empty()) {
      if (!plan.executable.device_kernels.empty())
        return MakeError(ErrorCode::kInvalidArgument,
                         "the plan has device kernels but no device code (cubin or PTX)");
      return std::shared_ptr<DeviceCode>();
    }
    CUmodule module = nullptr;
    // The driver's JIT log says why PTX does not compile for this GPU (or a cubin does not load).
    char log[4096] = {};
    CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void* values[] = {log, reinterpret_cast<void*>(sizeof(log) - 1)};
    CUresult r = api_.cuModuleLoadDataEx(&module, plan.device_code.c_str(), 2, options, values);
    if (r != CUDA_SUCCESS)
      return CheckCuda(api_, r, "cuModuleLoadDataEx")
          .error()
          .WithContext("loading the plan's device code on " + description_ +
                       (log[0] ? std::string(" (JIT log: ") + log + ")" : ""));
    return std::shared_ptr<DeviceCode>(new DriverCode(api_, context_, module));
  }

  Status Check(const DeviceCode& code, const KernelLaunch& launch) override {
    KILN_RETURN_IF_ERROR(Current());
    return static_cast<const DriverCode&>(code).Function(launch.function).status();
  }

  Status Launch(const DeviceCode& code, const KernelLaunch& launch,
                const std::vector<LaunchOperand>& operands) override {
    KILN_RETURN_IF_ERROR(Current());
    KILN_ASSIGN_OR_RETURN(CUfunction f,
                          static_cast<const DriverCode&>(code).Function(launch.function));
    // MLIR's calling convention: a memref is its descriptor, field by field (allocated pointer,
    // aligned pointer, offset, sizes, strides); every field is 8 bytes.
    std::vector<uint64_t> fields;
    for (const KernelLaunch::Arg& arg : launch.args) {
      if (arg.operand < 0) {
        fields.push_back(static_cast<uint64_t>(arg.value));
        continue;
      }
      if (arg.operand >= static_cast<int>(operands.size()))
        return MakeError(ErrorCode::kInternal, "launch of ", launch.function, " uses operand ",
                         arg.operand, " of ", operands.size());
      const DevicePtr p = operands[arg.operand].address;
      fields.insert(fields.end(), {p, p, 0});
      for (int64_t d : arg.dims) fields.push_back(static_cast<uint64_t>(d));
      std::vector<uint64_t> strides(arg.dims.size(), 1);
      for (int i = static_cast<int>(arg.dims.size()) - 2; i >= 0; --i)
        strides[i] = strides[i + 1] * static_cast<uint64_t>(arg.dims[i + 1]);
      fields.insert(fields.end(), strides.begin(), strides.end());
    }
    std::vector<void*> params;
    for (uint64_t& field : fields) params.push_back(&field);
    return CheckCuda(
        api_,
        api_.cuLaunchKernel(f, launch.grid[0], launch.grid[1], launch.grid[2], launch.block[0],
                            launch.block[1], launch.block[2], 0, stream_, params.data(), nullptr),
        ("cuLaunchKernel(" + launch.function + ")").c_str());
  }

  int64_t WorkspaceBytesToCome(bool matmuls, bool convs) override {
    std::lock_guard<std::mutex> lock(matmul_mutex_);
    return (matmuls && !matmuls_ ? kMatmulWorkspaceBytes : 0) +
           (convs && !convs_ ? kConvWorkspaceBytes : 0);
  }

  Result<std::shared_ptr<PreparedMatmul>> PrepareMatmul(const MatmulCall& call,
                                                        const MatmulOperands& operands) override {
    KILN_RETURN_IF_ERROR(Current());
    std::lock_guard<std::mutex> lock(matmul_mutex_);
    if (!matmuls_) {
      KILN_ASSIGN_OR_RETURN(DevicePtr workspace, Allocate(kMatmulWorkspaceBytes));
      Result<std::unique_ptr<DriverMatmuls>> matmuls = DriverMatmuls::Create(workspace);
      if (!matmuls.ok()) {
        Free(workspace);
        return matmuls.error();
      }
      matmul_workspace_ = workspace;
      matmuls_ = std::move(*matmuls);
    }
    return matmuls_->Prepare(call, operands);
  }

  Status Matmul(const PreparedMatmul& matmul) override {
    KILN_RETURN_IF_ERROR(Current());
    if (!matmuls_) return MakeError(ErrorCode::kInternal, "a matmul run before any was prepared");
    return matmuls_->Run(matmul, stream_);
  }

  Result<std::shared_ptr<PreparedConv>> PrepareConv(const ConvCall& call,
                                                    const ConvOperands& operands) override {
    KILN_RETURN_IF_ERROR(Current());
    std::lock_guard<std::mutex> lock(matmul_mutex_);
    if (!convs_) {
      KILN_ASSIGN_OR_RETURN(DevicePtr workspace, Allocate(kConvWorkspaceBytes));
      Result<std::unique_ptr<DriverConvs>> convs = DriverConvs::Create(api_, stream_, workspace);
      if (!convs.ok()) {
        Free(workspace);
        return convs.error();
      }
      conv_workspace_ = workspace;
      convs_ = std::move(*convs);
    }
    return convs_->Prepare(call, operands);
  }

  Status Conv(const PreparedConv& conv) override {
    KILN_RETURN_IF_ERROR(Current());
    if (!convs_)
      return MakeError(ErrorCode::kInternal, "a convolution run before any was prepared");
    return convs_->Run(conv);
  }

  Result<std::shared_ptr<DeviceCollectives>> OpenCollectives(
      std::shared_ptr<Communicator> ranks) override {
    return OpenNcclCollectives(
        stream_, [this] { return Current(); }, std::move(ranks));
  }

  Status Synchronize() override {
    return CheckCuda(api_, api_.cuStreamSynchronize(stream_), "cuStreamSynchronize");
  }

  void ClearMarks() override { marks_used_ = 0; }
  Result<int> Mark() override {
    KILN_RETURN_IF_ERROR(Current());
    if (marks_used_ == marks_.size()) {
      CUevent event = nullptr;
      KILN_RETURN_IF_ERROR(
          CheckCuda(api_, api_.cuEventCreate(&event, CU_EVENT_DEFAULT), "cuEventCreate"));
      marks_.push_back(event);
    }
    KILN_RETURN_IF_ERROR(
        CheckCuda(api_, api_.cuEventRecord(marks_[marks_used_], stream_), "cuEventRecord"));
    return static_cast<int>(marks_used_++);
  }
  Result<double> Milliseconds(int from, int to) override {
    KILN_RETURN_IF_ERROR(Current());
    if (from < 0 || to < 0 || static_cast<size_t>(from) >= marks_used_ ||
        static_cast<size_t>(to) >= marks_used_)
      return MakeError(ErrorCode::kInternal, "no marks ", from, " and ", to);
    float ms = 0;
    KILN_RETURN_IF_ERROR(CheckCuda(api_, api_.cuEventElapsedTime(&ms, marks_[from], marks_[to]),
                                   "cuEventElapsedTime"));
    return static_cast<double>(ms);
  }

 private:
  Status Current() { return CheckCuda(api_, api_.cuCtxSetCurrent(context_), "cuCtxSetCurrent"); }

  // A pinned staging buffer of at least `bytes`.
  Status Stage(int64_t bytes) {
    KILN_RETURN_IF_ERROR(Current());
    if (staging_bytes_ >= bytes) return OkStatus();
    if (staging_) api_.cuMemFreeHost(staging_);
    staging_ = nullptr;
    staging_bytes_ = 0;
    KILN_RETURN_IF_ERROR(
        CheckCuda(api_, api_.cuMemHostAlloc(&staging_, bytes, 0), "cuMemHostAlloc"));
    staging_bytes_ = bytes;
    return OkStatus();
  }

  const DriverApi& api_;
  int architecture_;
  CUdevice device_;
  CUcontext context_;
  CUstream stream_;
  std::string description_;
  void* staging_ = nullptr;
  int64_t staging_bytes_ = 0;
  std::vector<CUevent> marks_;  // events, reused from run to run
  size_t marks_used_ = 0;
  // cuBLASLt's and cuDNN's handles and workspaces, shared by every call on the stream, made when
  // a plan first has one (the mutex guards that).
  std::mutex matmul_mutex_;
  DevicePtr matmul_workspace_ = 0;
  std::unique_ptr<DriverMatmuls> matmuls_;
  DevicePtr conv_workspace_ = 0;
  std::unique_ptr<DriverConvs> convs_;
};

}  // namespace

Result<std::unique_ptr<Device>> OpenDriverDevice() {
  KILN_ASSIGN_OR_RETURN(const DriverApi* api, LoadDriver());
  KILN_RETURN_IF_ERROR(CheckCuda(*api, api->cuInit(0), "cuInit"));
  int count = 0;
  KILN_RETURN_IF_ERROR(CheckCuda(*api, api->cuDeviceGetCount(&count), "cuDeviceGetCount"));
  if (count == 0) return MakeError(ErrorCode::kFailedPrecondition, "the CUDA driver sees no GPU");
  CUdevice device = 0;
  KILN_RETURN_IF_ERROR(CheckCuda(*api, api->cuDeviceGet(&device, 0), "cuDeviceGet"));
  char name[256] = {};
  int major = 0, minor = 0, driver = 0;
  KILN_RETURN_IF_ERROR(
      CheckCuda(*api, api->cuDeviceGetName(name, sizeof(name) - 1, device), "cuDeviceGetName"));
  KILN_RETURN_IF_ERROR(CheckCuda(
      *api, api->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device),
      "cuDeviceGetAttribute"));
  KILN_RETURN_IF_ERROR(CheckCuda(
      *api, api->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device),
      "cuDeviceGetAttribute"));
  KILN_RETURN_IF_ERROR(CheckCuda(*api, api->cuDriverGetVersion(&driver), "cuDriverGetVersion"));
  CUcontext context = nullptr;
  KILN_RETURN_IF_ERROR(
      CheckCuda(*api, api->cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain"));
  CUstream stream = nullptr;
  Status st = CheckCuda(*api, api->cuCtxSetCurrent(context), "cuCtxSetCurrent");
  if (st.ok())
    st = CheckCuda(*api, api->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  if (!st.ok()) {
    api->cuDevicePrimaryCtxRelease(device);
    return st.error();
  }
  std::string description = std::string(name) + " (sm_" + std::to_string(major) +
                            std::to_string(minor) + ", driver " + std::to_string(driver / 1000) +
                            "." + std::to_string(driver % 1000 / 10) + ")";
  return std::unique_ptr<Device>(
      new DriverDevice(*api, device, context, stream, major * 10 + minor, description));
}

}  // namespace kiln::cuda
