#include "runtime/cuda/nccl_collectives.h"

#include <cstring>
#include <string>
#include <vector>

#include "runtime/cuda/nccl_api.h"

namespace kiln::cuda {
namespace {

Result<ncclDataType_t> NcclType(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return ncclFloat32;
    case DType::kF64:
      return ncclFloat64;
    case DType::kF16:
      return ncclFloat16;
    case DType::kBF16:
      return ncclBfloat16;
    default:
      return MakeError(ErrorCode::kInvalidArgument, "NCCL all-reduces no ", DTypeName(dtype),
                       " values in kiln (expected f32, f64, bf16 or f16)");
  }
}

// `scale` in `dtype`'s bits, as ncclRedOpCreatePreMulSum reads a host-immediate scalar.
struct Scalar {
  alignas(8) unsigned char bytes[8] = {};
};
Scalar ScalarOf(DType dtype, double scale) {
  Scalar s;
  if (dtype == DType::kF64) {
    std::memcpy(s.bytes, &scale, sizeof scale);
  } else if (dtype == DType::kF32) {
    const float f = static_cast<float>(scale);
    std::memcpy(s.bytes, &f, sizeof f);
  } else {
    const float f = static_cast<float>(scale);
    const uint16_t h = dtype == DType::kF16 ? FloatToHalf(f) : FloatToBFloat16(f);
    std::memcpy(s.bytes, &h, sizeof h);
  }
  return s;
}

class NcclCollectives : public DeviceCollectives {
 public:
  NcclCollectives(const NcclApi& api, ncclComm_t comm, CUstream stream,
                  std::function<Status()> current)
      : api_(api), comm_(comm), stream_(stream), current_(std::move(current)) {}
  ~NcclCollectives() override {
    (void)current_();
    ncclResult_t async = ncclSuccess;
    if (api_.ncclCommGetAsyncError(comm_, &async) != ncclSuccess || async != ncclSuccess)
      api_.ncclCommAbort(comm_);  // a peer failed: destroying would wait for it
    else
      api_.ncclCommDestroy(comm_);
  }

  Status AllReduce(const std::vector<ReduceBuffers>& buffers, DType dtype, double scale) override {
    KILN_RETURN_IF_ERROR(current_());
    KILN_ASSIGN_OR_RETURN(ncclDataType_t type, NcclType(dtype));
    ncclRedOp_t op = ncclSum;
    const bool premultiplied = scale != 1.0;
    if (premultiplied) {
      Scalar scalar = ScalarOf(dtype, scale);
      KILN_RETURN_IF_ERROR(CheckNccl(
          api_,
          api_.ncclRedOpCreatePreMulSum(&op, scalar.bytes, type, ncclScalarHostImmediate, comm_),
          "ncclRedOpCreatePreMulSum"));
    }
    // One group: NCCL fuses the bucket's tensors into as few kernels as it can.
    Status issued = CheckNccl(api_, api_.ncclGroupStart(), "ncclGroupStart");
    for (size_t i = 0; issued.ok() && i < buffers.size(); ++i)
      issued = CheckNccl(api_,
                         api_.ncclAllReduce(reinterpret_cast<const void*>(buffers[i].send),
                                            reinterpret_cast<void*>(buffers[i].recv),
                                            static_cast<size_t>(buffers[i].count), type, op, comm_,
                                            reinterpret_cast<cudaStream_t>(stream_)),
                         "ncclAllReduce");
    Status ended = CheckNccl(api_, api_.ncclGroupEnd(), "ncclGroupEnd");
    if (premultiplied) api_.ncclRedOpDestroy(op, comm_);  // allowed once the calls are enqueued
    return issued.ok() ? ended : issued;
  }

 private:
  const NcclApi& api_;
  ncclComm_t comm_;
  CUstream stream_;
  std::function<Status()> current_;
};

}  // namespace

Result<std::shared_ptr<DeviceCollectives>> OpenNcclCollectives(
    CUstream stream, std::function<Status()> current, std::shared_ptr<Communicator> ranks) {
  // Every rank learns whether every rank has NCCL before any waits in NCCL's own handshake.
  Result<const NcclApi*> loaded = LoadNccl();
  const char mine = loaded.ok() ? 1 : 0;
  std::vector<char> all(static_cast<size_t>(ranks->size()));
  KILN_RETURN_IF_ERROR(ranks->AllGather(&mine, 1, all.data()));
  if (!loaded.ok()) return loaded.error();
  for (int r = 0; r < ranks->size(); ++r)
    if (!all[r])
      return MakeError(ErrorCode::kFailedPrecondition, "rank ", r,
                       " cannot load NCCL (its own error says why)");
  const NcclApi& api = **loaded;
  KILN_RETURN_IF_ERROR(current());
  struct {
    char made = 0;
    ncclUniqueId id{};
  } clique;
  Status made = OkStatus();
  if (ranks->rank() == 0) {
    made = CheckNccl(api, api.ncclGetUniqueId(&clique.id), "ncclGetUniqueId");
    clique.made = made.ok() ? 1 : 0;
  }
  KILN_RETURN_IF_ERROR(ranks->Broadcast(&clique, sizeof clique, 0));
  KILN_RETURN_IF_ERROR(made);
  if (!clique.made)
    return MakeError(ErrorCode::kFailedPrecondition,
                     "rank 0 could not make NCCL's unique id (its own error says why)");
  ncclComm_t comm = nullptr;
  KILN_RETURN_IF_ERROR(
      CheckNccl(api, api.ncclCommInitRank(&comm, ranks->size(), clique.id, ranks->rank()),
                "ncclCommInitRank"));
  return std::shared_ptr<DeviceCollectives>(
      new NcclCollectives(api, comm, stream, std::move(current)));
}

}  // namespace kiln::cuda
