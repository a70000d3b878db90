// The simulated CUDA device (device.h): device memory in host allocations of its own, launches
// through the host translations of the plan's GPU functions. Its stream is a queue: launches,
// library calls, copies on the device and asynchronous copies run when the host waits for them
// (Synchronize, a synchronous copy, a free), not when they are issued, so that a host that reads
// a result before waiting for it, or rewrites the pinned memory of a copy not yet made, computes
// wrong numbers here as it would on a GPU. A captured graph is the list of the operations issued
// while capturing; a replay queues them again. A data-parallel plan's all-reduces go through the
// session's communicator when the stream reaches them (collectives.h).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <optional>

#include "runtime/cpu/parallel_ranges.h"
#include "runtime/cuda/collectives.h"
#include "runtime/cuda/conv_call.h"
#include "runtime/cuda/device.h"
#include "runtime/cuda/matmul_call.h"
#include "runtime/distributed/all_reduce_message.h"
#include "runtime/distributed/communicator.h"
#include "runtime/memory_budget.h"

namespace kiln::cuda {
namespace {

constexpr int64_t kAlignment = 256;  // cudaMalloc's guarantee
constexpr uint8_t kPoison = 0xff;    // NaN in every float type, -1 in every integer
class SimCode : public DeviceCode {
 public:
  explicit SimCode(std::shared_ptr<const KernelLibrary> kernels) : kernels_(std::move(kernels)) {}

  // The host translation of GPU function `name`, resolved once (at load, by Check).
  Result<KernelEntry> Entry(const std::string& name) const {
    if (!kernels_)
      return MakeError(ErrorCode::kInvalidArgument, "no host translation of GPU function '", name,
                       "'");
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(name);
    if (it != entries_.end()) return it->second;
    KILN_ASSIGN_OR_RETURN(KernelEntry entry, kernels_->Find(kSimulatedFunctionPrefix + name));
    entries_[name] = entry;
    return entry;
  }

 private:
  std::shared_ptr<const KernelLibrary> kernels_;
  mutable std::mutex mutex_;
  mutable std::map<std::string, KernelEntry> entries_;
};

struct SimMatmul : PreparedMatmul {
  MatmulCall call;
  MatmulOperands operands;
};

struct SimConv : PreparedConv {
  ConvCall call;
  ConvOperands operands;
};

struct SimGraph : DeviceGraph {
  std::vector<std::function<Status()>> operations;
};

class SimulatedDevice : public Device {
 public:
  SimulatedDevice(int threads, int64_t bytes) : threads_(std::max(1, threads)), bytes_(bytes) {}
  ~SimulatedDevice() override {
    for (auto& [base, bytes] : allocations_) std::free(reinterpret_cast<void*>(base));
    for (auto& [base, bytes] : pinned_) std::free(reinterpret_cast<void*>(base));
  }

  std::string Describe() const override { return "simulated CUDA device"; }
  int Architecture() const override { return 0; }

  Result<DevicePtr> Allocate(int64_t bytes) override {
    KILN_RETURN_IF_ERROR(NotWhileCapturing("an allocation"));
    if (bytes < 0) return MakeError(ErrorCode::kInternal, "allocation of ", bytes, " bytes");
    {  // reserve the bytes first, so that allocations racing for the last of them cannot both win
      std::lock_guard<std::mutex> lock(mutex_);
      if (bytes > bytes_ - allocated_ - kAlignment)
        return MakeError(ErrorCode::kResourceExhausted,
                         "out of memory on the simulated device: ", FormatBytes(bytes),
                         " requested, ", FormatBytes(bytes_ - allocated_), " free of ",
                         FormatBytes(bytes_));
      allocated_ += RoundedSize(bytes);
    }
    const int64_t size = RoundedSize(bytes);
    void* p = std::aligned_alloc(kAlignment, size);
    if (!p) {
      std::lock_guard<std::mutex> lock(mutex_);
      allocated_ -= size;
      return MakeError(ErrorCode::kResourceExhausted, "the simulated device cannot allocate ",
                       bytes, " bytes");
    }
    std::memset(p, kPoison, size);
    std::lock_guard<std::mutex> lock(mutex_);
    allocations_[reinterpret_cast<DevicePtr>(p)] = bytes;
    return reinterpret_cast<DevicePtr>(p);
  }

  Result<DeviceMemory> Memory() override {
    std::lock_guard<std::mutex> lock(mutex_);
    return DeviceMemory{bytes_ - allocated_, bytes_};
  }

  int64_t WorkspaceBytesToCome(bool matmuls, bool convs) override {
    std::lock_guard<std::mutex> lock(mutex_);
    return (matmuls && !matmul_workspace_ ? kMatmulWorkspaceBytes : 0) +
           (convs && !conv_workspace_ ? kConvWorkspaceBytes : 0);
  }

  // Frees wait for the stream first, as cuMemFree does.
  void Free(DevicePtr address) override {
    KeepFailure(Drain());
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = allocations_.find(address);
    if (it == allocations_.end()) return;
    std::free(reinterpret_cast<void*>(address));
    allocated_ -= RoundedSize(it->second);
    allocations_.erase(it);
  }

  // The synchronous copies wait for the stream (as the GPU's staged copies do), which a capture
  // cannot hold.
  Status ToDevice(DevicePtr dst, const void* src, int64_t bytes) override {
    KILN_RETURN_IF_ERROR(NotWhileCapturing("a synchronous copy to the device"));
    KILN_RETURN_IF_ERROR(Drain());
    return CopyToDevice(dst, src, bytes);
  }

  Status ToHost(void* dst, DevicePtr src, int64_t bytes) override {
    KILN_RETURN_IF_ERROR(NotWhileCapturing("a synchronous copy to the host"));
    KILN_RETURN_IF_ERROR(Drain());
    return CopyToHost(dst, src, bytes);
  }

  Status CopyOnDevice(DevicePtr dst, DevicePtr src, int64_t bytes) override {
    // cuMemcpyDtoDAsync's ranges must not overlap.
    if (dst != src && dst < src + static_cast<uint64_t>(std::max<int64_t>(bytes, 0)) &&
        src < dst + static_cast<uint64_t>(std::max<int64_t>(bytes, 0)))
      return MakeError(ErrorCode::kInternal, "a copy on the device between overlapping ranges (",
                       bytes, " bytes from 0x", std::hex, src, " to 0x", dst, ")");
    return Issue([=, this]() -> Status {
      KILN_RETURN_IF_ERROR(CheckRange(dst, bytes, "a copy on the device (destination)"));
      KILN_RETURN_IF_ERROR(CheckRange(src, bytes, "a copy on the device (source)"));
      if (bytes && dst != src)
        std::memcpy(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), bytes);
      return OkStatus();
    });
  }

  Result<void*> AllocatePinned(int64_t bytes) override {
    KILN_RETURN_IF_ERROR(NotWhileCapturing("a pinned allocation"));
    if (bytes < 0) return MakeError(ErrorCode::kInternal, "pinned allocation of ", bytes, " bytes");
    const int64_t size =
        std::max<int64_t>(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
    void* p = std::aligned_alloc(kAlignment, size);
    if (!p)
      return MakeError(ErrorCode::kResourceExhausted, "the simulated device cannot pin ", bytes,
                       " bytes of host memory");
    std::lock_guard<std::mutex> lock(mutex_);
    pinned_[reinterpret_cast<uintptr_t>(p)] = bytes;
    return p;
  }

  void FreePinned(void* pinned) override {
    KeepFailure(Drain());
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = pinned_.find(reinterpret_cast<uintptr_t>(pinned));
    if (it == pinned_.end()) return;
    std::free(pinned);
    pinned_.erase(it);
  }

  Status ToDeviceAsync(DevicePtr dst, const void* pinned_src, int64_t bytes) override {
    KILN_RETURN_IF_ERROR(CheckPinned(pinned_src, bytes, "an asynchronous copy to the device"));
    return Issue([=, this]() -> Status { return CopyToDevice(dst, pinned_src, bytes); });
  }

  Status ToHostAsync(void* pinned_dst, DevicePtr src, int64_t bytes) override {
    KILN_RETURN_IF_ERROR(CheckPinned(pinned_dst, bytes, "an asynchronous copy to the host"));
    return Issue([=, this]() -> Status { return CopyToHost(pinned_dst, src, bytes); });
  }

  Status BeginCapture() override {
    if (capture_)
      return MakeError(ErrorCode::kInternal, "a capture began while another was in progress");
    capture_ = std::make_unique<SimGraph>();
    capture_error_.clear();
    return OkStatus();
  }

  Result<std::unique_ptr<DeviceGraph>> EndCapture() override {
    if (!capture_) return MakeError(ErrorCode::kInternal, "a capture ended that never began");
    std::unique_ptr<SimGraph> graph = std::move(capture_);
    if (!capture_error_.empty())
      return MakeError(ErrorCode::kInternal,
                       "the stream capture was invalidated: ", capture_error_);
    return std::unique_ptr<DeviceGraph>(std::move(graph));
  }

  Status Replay(const DeviceGraph& graph) override {
    KILN_RETURN_IF_ERROR(NotWhileCapturing("a graph replay"));
    const auto& operations = static_cast<const SimGraph&>(graph).operations;
    return Issue([&operations]() -> Status {
      for (const std::function<Status()>& operation : operations)
        if (Status st = operation(); !st.ok())
          return st.error().WithContext("replaying a captured graph");
      return OkStatus();
    });
  }

  Result<std::shared_ptr<DeviceCode>> Load(const CompiledPlan& plan) override {
    if (!plan.kernels && !plan.executable.device_kernels.empty())
      return MakeError(ErrorCode::kInvalidArgument,
                       "the plan has device kernels but no host translation of them, which the "
                       "simulated device runs (compile it with kiln compile --target cuda)");
    return std::shared_ptr<DeviceCode>(new SimCode(plan.kernels));
  }

  Status Check(const DeviceCode& code, const KernelLaunch& launch) override {
    return static_cast<const SimCode&>(code).Entry(launch.function).status();
  }

  Status Launch(const DeviceCode& code, const KernelLaunch& launch,
                const std::vector<LaunchOperand>& operands) override {
    // Checked when issued too: host memory or a buffer too small fails here, at once.
    KILN_RETURN_IF_ERROR(Check(code, launch));
    KILN_RETURN_IF_ERROR(CheckOperands(launch, operands).status());
    return Issue(
        [this, &code, launch, operands]() -> Status { return RunLaunch(code, launch, operands); });
  }

  Result<std::shared_ptr<PreparedMatmul>> PrepareMatmul(const MatmulCall& call,
                                                        const MatmulOperands& operands) override {
    KILN_RETURN_IF_ERROR(ReserveWorkspace(kMatmulWorkspaceBytes, matmul_workspace_, "cuBLASLt"));
    KILN_ASSIGN_OR_RETURN(MatmulSpans spans, SpansOf(call));
    const int64_t ab = DTypeSize(call.ab_type), d = DTypeSize(call.d_type);
    const std::string what = call.ToString();
    KILN_RETURN_IF_ERROR(CheckRange(operands.a, spans.a * ab, ("A of " + what).c_str()));
    KILN_RETURN_IF_ERROR(CheckRange(operands.b, spans.b * ab, ("B of " + what).c_str()));
    KILN_RETURN_IF_ERROR(CheckRange(operands.d, spans.d * d, ("D of " + what).c_str()));
    if (call.bias)
      KILN_RETURN_IF_ERROR(CheckRange(operands.bias, spans.bias * d, ("bias of " + what).c_str()));
    auto prepared = std::make_shared<SimMatmul>();
    prepared->call = call;
    prepared->operands = operands;
    return std::shared_ptr<PreparedMatmul>(std::move(prepared));
  }

  Status Matmul(const PreparedMatmul& matmul) override {
    const auto& m = static_cast<const SimMatmul&>(matmul);
    return Issue([this, &m]() -> Status {
      RunMatmulOnHost(m.call, reinterpret_cast<const void*>(m.operands.a),
                      reinterpret_cast<const void*>(m.operands.b),
                      reinterpret_cast<const void*>(m.operands.bias),
                      reinterpret_cast<void*>(m.operands.d), threads_);
      return OkStatus();
    });
  }

  Result<std::shared_ptr<PreparedConv>> PrepareConv(const ConvCall& call,
                                                    const ConvOperands& operands) override {
    KILN_RETURN_IF_ERROR(ReserveWorkspace(kConvWorkspaceBytes, conv_workspace_, "cuDNN"));
    const ConvSpans spans = SpansOf(call);
    const std::string what = call.ToString();
    KILN_RETURN_IF_ERROR(CheckRange(operands.x, spans.x, ("x of " + what).c_str()));
    KILN_RETURN_IF_ERROR(CheckRange(operands.w, spans.w, ("w of " + what).c_str()));
    KILN_RETURN_IF_ERROR(CheckRange(operands.y, spans.y, ("y of " + what).c_str()));
    if (call.bias)
      KILN_RETURN_IF_ERROR(CheckRange(operands.bias, spans.bias, ("bias of " + what).c_str()));
    if (call.residual)
      KILN_RETURN_IF_ERROR(
          CheckRange(operands.residual, spans.residual, ("residual of " + what).c_str()));
    // cuDNN computes out of place: the tensor written may share no byte with one read.
    struct Span {
      DevicePtr at;
      int64_t bytes;
    };
    const Span x{operands.x, spans.x}, w{operands.w, spans.w}, y{operands.y, spans.y},
        bias{operands.bias, spans.bias}, residual{operands.residual, spans.residual};
    const bool forward = call.kind == ConvCall::Kind::kForward;
    const bool data = call.kind == ConvCall::Kind::kBackwardData;
    const Span written = forward ? y : data ? x : w;
    std::vector<Span> read = {forward ? x : y, data || forward ? w : x, bias, residual};
    for (const Span& r : read)
      if (r.bytes > 0 && r.at < written.at + written.bytes && written.at < r.at + r.bytes)
        return MakeError(ErrorCode::kInvalidArgument, what,
                         ": the tensor it writes overlaps one it reads");
    auto prepared = std::make_shared<SimConv>();
    prepared->call = call;
    prepared->operands = operands;
    return std::shared_ptr<PreparedConv>(std::move(prepared));
  }

  Status Conv(const PreparedConv& conv) override {
    const auto& c = static_cast<const SimConv&>(conv);
    return Issue([this, &c]() -> Status {
      RunConvOnHost(c.call, reinterpret_cast<void*>(c.operands.x),
                    reinterpret_cast<void*>(c.operands.w), reinterpret_cast<void*>(c.operands.y),
                    reinterpret_cast<const void*>(c.operands.bias),
                    reinterpret_cast<const void*>(c.operands.residual), threads_);
      return OkStatus();
    });
  }

  Status Synchronize() override {
    KILN_RETURN_IF_ERROR(NotWhileCapturing("a synchronization of the stream"));
    return Drain();
  }

  Result<std::shared_ptr<DeviceCollectives>> OpenCollectives(
      std::shared_ptr<Communicator> ranks) override;

  // The simulated ncclAllReduce of a bucket (collectives.h): its buffers are checked when it is
  // issued; when the stream reaches it, they are packed into one message that `ranks` sums.
  Status IssueAllReduce(std::shared_ptr<Communicator> ranks,
                        const std::vector<ReduceBuffers>& buffers, DType dtype, double scale) {
    if (!IsFloat(dtype))
      return MakeError(ErrorCode::kInvalidArgument, "an all-reduce of ", DTypeName(dtype),
                       " values (expected f32, f64, bf16 or f16)");
    int64_t total = 0;
    for (const ReduceBuffers& b : buffers) {
      const int64_t bytes = b.count * DTypeSize(dtype);
      KILN_RETURN_IF_ERROR(CheckRange(b.send, bytes, "an all-reduce's input"));
      KILN_RETURN_IF_ERROR(CheckRange(b.recv, bytes, "an all-reduce's output"));
      total += b.count;
    }
    return Issue([ranks, buffers, dtype, scale, total]() -> Status {
      AllReduceMessage message(dtype, total);
      int64_t at = 0;
      for (const ReduceBuffers& b : buffers) {
        message.Pack(at, reinterpret_cast<const void*>(b.send), b.count, scale);
        at += b.count;
      }
      KILN_RETURN_IF_ERROR(ranks->AllReduceSum(message.data(), message.count(), message.wide()));
      at = 0;
      for (const ReduceBuffers& b : buffers) {
        message.Unpack(at, reinterpret_cast<void*>(b.recv), b.count, 1.0);
        at += b.count;
      }
      return OkStatus();
    });
  }

  // A mark is the host's clock when the stream reaches it.
  void ClearMarks() override { marks_.clear(); }
  Result<int> Mark() override {
    KILN_RETURN_IF_ERROR(NotWhileCapturing("an event record for timing"));
    const size_t mark = marks_.size();
    marks_.emplace_back();
    queue_.push_back([this, mark]() -> Status {
      if (mark < marks_.size()) marks_[mark] = std::chrono::steady_clock::now();
      return OkStatus();
    });
    return static_cast<int>(mark);
  }
  Result<double> Milliseconds(int from, int to) override {
    if (from < 0 || to < 0 || from >= static_cast<int>(marks_.size()) ||
        to >= static_cast<int>(marks_.size()) || !marks_[from] || !marks_[to])
      return MakeError(ErrorCode::kInternal, "no marks ", from, " and ", to,
                       " that the stream has reached");
    return std::chrono::duration<double, std::milli>(*marks_[to] - *marks_[from]).count();
  }

 private:
  // While capturing, records `operation` for the graph's replays; otherwise queues it on the
  // stream.
  Status Issue(std::function<Status()> operation) {
    if (capture_)
      capture_->operations.push_back(std::move(operation));
    else
      queue_.push_back(std::move(operation));
    return OkStatus();
  }
  // Runs the stream's queue in order; the first failure is returned and the rest of the queue
  // dropped (a GPU's stream is unusable after a fault).
  Status Drain() {
    if (failure_) {  // a failure met where no caller could take it (a free) comes out first
      Error failure = std::move(*failure_);
      failure_.reset();
      return failure;
    }
    std::vector<std::function<Status()>> queue = std::move(queue_);
    queue_.clear();
    for (const std::function<Status()>& operation : queue) KILN_RETURN_IF_ERROR(operation());
    return OkStatus();
  }
  void KeepFailure(Status status) {
    if (!status.ok() && !failure_) failure_ = status.error();
  }
  // Refuses `what` while capturing, which it invalidates (as a GPU's capture would be).
  Status NotWhileCapturing(const std::string& what) {
    if (!capture_) return OkStatus();
    if (capture_error_.empty()) capture_error_ = what;
    return MakeError(ErrorCode::kInternal, what,
                     " while the stream is being captured (a GPU refuses it there)");
  }
  Status CheckPinned(const void* host, int64_t bytes, const char* what) {
    const uint64_t address = reinterpret_cast<uintptr_t>(host);
    if (Inside(pinned_, address, bytes)) return OkStatus();
    return MakeError(ErrorCode::kInternal, what, ": ", bytes, " bytes of host memory at 0x",
                     std::hex, address, " are not inside one pinned allocation");
  }
  Status CopyToDevice(DevicePtr dst, const void* src, int64_t bytes) {
    KILN_RETURN_IF_ERROR(CheckRange(dst, bytes, "a copy to the device"));
    if (bytes) std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
    return OkStatus();
  }
  Status CopyToHost(void* dst, DevicePtr src, int64_t bytes) {
    KILN_RETURN_IF_ERROR(CheckRange(src, bytes, "a copy to the host"));
    if (bytes) std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
    return OkStatus();
  }

  // The device addresses of a launch's memref arguments, each checked to lie inside one live
  // allocation.
  Result<std::vector<void*>> CheckOperands(const KernelLaunch& launch,
                                           const std::vector<LaunchOperand>& operands) {
    std::vector<void*> pointers;
    for (const KernelLaunch::Arg& arg : launch.args) {
      if (arg.operand < 0) continue;
      if (arg.operand >= static_cast<int>(operands.size()))
        return MakeError(ErrorCode::kInternal, "launch of ", launch.function, " uses operand ",
                         arg.operand, " of ", operands.size());
      const LaunchOperand& op = operands[arg.operand];
      if (!InRange(op.address, op.bytes))
        return OutOfRange(op.address, op.bytes,
                          "argument " + std::to_string(arg.operand) + " of GPU function '" +
                              launch.function + "'");
      pointers.push_back(reinterpret_cast<void*>(op.address));
    }
    return pointers;
  }

  Status RunLaunch(const DeviceCode& code, const KernelLaunch& launch,
                   const std::vector<LaunchOperand>& operands) {
    KILN_ASSIGN_OR_RETURN(KernelEntry entry,
                          static_cast<const SimCode&>(code).Entry(launch.function));
    KILN_ASSIGN_OR_RETURN(std::vector<void*> pointers, CheckOperands(launch, operands));
    // The leading index arguments of a host translation, then the kernel's own.
    std::vector<int64_t> scalars = {0,
                                    0,
                                    launch.grid[0],
                                    launch.grid[1],
                                    launch.grid[2],
                                    launch.block[0],
                                    launch.block[1],
                                    launch.block[2]};
    for (const KernelLaunch::Arg& arg : launch.args)
      if (arg.operand < 0) scalars.push_back(arg.value);
    const int64_t blocks = launch.grid[0] * launch.grid[1] * launch.grid[2];
    const int64_t per_block = launch.block[0] * launch.block[1] * launch.block[2];
    if (blocks <= 0 || per_block <= 0)
      return MakeError(ErrorCode::kInternal, "launch of ", launch.function,
                       " has an empty or overflowing grid");
    std::atomic<int64_t> fault_argument{-1};  // the argument a kernel accessed out of bounds
    auto run = [&](int64_t begin, int64_t end) {
      std::vector<int64_t> values = scalars;
      values[0] = begin;
      values[1] = end;
      std::vector<void*> ptrs = pointers;
      int64_t fault[2] = {0, -1};
      void* fault_record = fault;
      std::vector<void*> args;
      size_t scalar = 8, pointer = 0;
      for (int i = 0; i < 8; ++i) args.push_back(&values[i]);
      args.push_back(&fault_record);
      for (const KernelLaunch::Arg& arg : launch.args)
        args.push_back(arg.operand < 0 ? static_cast<void*>(&values[scalar++])
                                       : static_cast<void*>(&ptrs[pointer++]));
      entry(args.data());
      if (fault[0] != 0) fault_argument.store(fault[1]);
    };
    cpu::ForEachRange(blocks, blocks * per_block, threads_, run);
    if (const int64_t a = fault_argument.load(); a >= 0) {
      const bool known = a < static_cast<int64_t>(launch.args.size());
      return MakeError(ErrorCode::kInternal, "GPU function '", launch.function,
                       "' accessed its argument ", a,
                       known ? " (step operand " + std::to_string(launch.args[a].operand) + ", " +
                                   Shape(launch.args[a].dims).ToString() + ")"
                             : std::string(),
                       " outside its bounds");
    }
    return OkStatus();
  }

  // Whether [address, address + bytes) lies inside one of `allocations` (base -> bytes).
  bool Inside(const std::map<uint64_t, int64_t>& allocations, uint64_t address, int64_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = allocations.upper_bound(address);
    if (it == allocations.begin()) return false;
    --it;
    return address >= it->first && bytes >= 0 &&
           address + static_cast<uint64_t>(bytes) <= it->first + it->second;
  }
  // Whether [address, address + bytes) lies inside one live device allocation.
  // The bytes an allocation of `bytes` takes: a whole number of aligned units, at least one.
  static int64_t RoundedSize(int64_t bytes) {
    return std::max<int64_t>(kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
  }
  bool InRange(DevicePtr address, int64_t bytes) { return Inside(allocations_, address, bytes); }
  static Error OutOfRange(DevicePtr address, int64_t bytes, const std::string& what) {
    return MakeError(ErrorCode::kInternal, what, ": ", bytes, " bytes at 0x", std::hex, address,
                     " are not inside one allocation of the simulated device (host memory, or a "
                     "buffer too small)");
  }
  Status CheckRange(DevicePtr address, int64_t bytes, const char* what) {
    if (InRange(address, bytes)) return OkStatus();
    return OutOfRange(address, bytes, what);
  }

  // Counts a library's workspace against the device's size once, as the GPU allocates it from the
  // first call prepared (the simulated libraries need no memory of their own).
  Status ReserveWorkspace(int64_t bytes, bool& reserved, const char* library) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (reserved) return OkStatus();
    if (bytes > bytes_ - allocated_)
      return MakeError(ErrorCode::kResourceExhausted,
                       "out of memory on the simulated device: ", library, "'s workspace of ",
                       FormatBytes(bytes), " does not fit in the ",
                       FormatBytes(bytes_ - allocated_), " free of ", FormatBytes(bytes_));
    allocated_ += bytes;
    reserved = true;
    return OkStatus();
  }

  int threads_;
  int64_t bytes_;          // the device's size
  int64_t allocated_ = 0;  // of it, in allocations (each rounded up to kAlignment) and workspaces
  bool matmul_workspace_ = false, conv_workspace_ = false;  // reserved (ReserveWorkspace)
  std::vector<std::optional<std::chrono::steady_clock::time_point>> marks_;
  std::vector<std::function<Status()>> queue_;  // the stream: issued, not yet run
  std::optional<Error> failure_;                // the stream's failure no caller has had yet
  std::mutex mutex_;
  std::map<uint64_t, int64_t> allocations_;  // device allocations: base -> bytes
  std::map<uint64_t, int64_t> pinned_;       // pinned host allocations: base -> bytes
  std::unique_ptr<SimGraph> capture_;        // the graph being captured (none: not capturing)
  std::string capture_error_;                // what invalidated the capture
};

// NCCL's stand-in on the simulated device: the session's communicator itself.
class SimCollectives : public DeviceCollectives {
 public:
  SimCollectives(SimulatedDevice& device, std::shared_ptr<Communicator> ranks)
      : device_(device), ranks_(std::move(ranks)) {}
  Status AllReduce(const std::vector<ReduceBuffers>& buffers, DType dtype, double scale) override {
    return device_.IssueAllReduce(ranks_, buffers, dtype, scale);
  }

 private:
  SimulatedDevice& device_;
  std::shared_ptr<Communicator> ranks_;
};

Result<std::shared_ptr<DeviceCollectives>> SimulatedDevice::OpenCollectives(
    std::shared_ptr<Communicator> ranks) {
  return std::shared_ptr<DeviceCollectives>(new SimCollectives(*this, std::move(ranks)));
}

}  // namespace

std::unique_ptr<Device> MakeSimulatedDevice(int threads, int64_t bytes) {
  return std::unique_ptr<Device>(new SimulatedDevice(threads, bytes));
}

}  // namespace kiln::cuda
