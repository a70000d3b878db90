// NCCL, loaded at run time like the driver (driver_api.h): `dlopen("libnccl.so.2")` (from
// $KILN_NCCL_LIBRARY when set, else the loader's path, else the CUDA toolkit's
// /usr/local/cuda/lib64) the first time a data-parallel plan opens its collectives on a GPU, every
// entry point kiln calls resolved once into one table of typed pointers. Nothing links libnccl, so
// a CPU-only run, and every run that is not data-parallel on a GPU, never needs it.
//
// Contract: LoadNccl() is called by any thread, any number of times (later calls return the first
// answer); it fails with kFailedPrecondition naming the library and dlopen's reason, or the missing
// symbol, or a library older than NCCL 2.11 (the first with ncclRedOpCreatePreMulSum). CheckNccl
// turns an ncclResult_t into a Status naming the call and NCCL's text.
#pragma once

#include <nccl.h>

#include "ir/status.h"

namespace kiln::cuda {

// X(name): every NCCL entry point kiln calls.
#define KILN_NCCL_ENTRY_POINTS(X) \
  X(ncclGetVersion)               \
  X(ncclGetUniqueId)              \
  X(ncclCommInitRank)             \
  X(ncclCommDestroy)              \
  X(ncclCommAbort)                \
  X(ncclCommGetAsyncError)        \
  X(ncclGetErrorString)           \
  X(ncclGroupStart)               \
  X(ncclGroupEnd)                 \
  X(ncclAllReduce)                \
  X(ncclRedOpCreatePreMulSum)     \
  X(ncclRedOpDestroy)

struct NcclApi {
#define KILN_NCCL_FIELD(name) decltype(&::name) name = nullptr;
  KILN_NCCL_ENTRY_POINTS(KILN_NCCL_FIELD)
#undef KILN_NCCL_FIELD
  int version = 0;  // NCCL_VERSION_CODE of the library loaded, e.g. 22805
};

// The process's NCCL table, loaded on the first call.
Result<const NcclApi*> LoadNccl();

// OkStatus for ncclSuccess; otherwise kInternal with "<call> failed: <NCCL's text>".
Status CheckNccl(const NcclApi& api, ncclResult_t result, const char* call);

}  // namespace kiln::cuda
