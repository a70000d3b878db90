// The C interface between kiln's runtime and libkiln_mpi.so, the shim that alone links MPI (built
// from runtime/distributed/mpi/ where CMake finds MPI). The runtime dlopens the shim when a run
// asks for MPI (communicator.h: OpenMpiCommunicator), so kiln programs start without MPI.
//
// Contract: kiln_mpi_open initializes MPI once per process (MPI_THREAD_SERIALIZED: the shim's
// progress thread makes every collective call, one at a time) and fills the table; MPI_Finalize
// runs at exit, or MPI_Abort (ending every rank) once a collective has failed. Each call returns
// 0, or nonzero with a message of at most error_size bytes in `error`; the caller waits at most
// `timeout_seconds` (then: failure, "did not complete within N s").
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_MPI_SHIM_VERSION 1

struct KilnMpiShim {
  int version;  // KILN_MPI_SHIM_VERSION
  int rank;
  int size;
  char library[128];  // the MPI library's own version line (MPI_Get_library_version), cut
  // Sums `count` values of f32 (is_f64 0) or f64 (1) over the ranks, in place.
  int (*all_reduce_sum)(void* data, int64_t count, int is_f64, double timeout_seconds, char* error,
                        size_t error_size);
  int (*broadcast)(void* data, int64_t bytes, int root, double timeout_seconds, char* error,
                   size_t error_size);
  int (*all_gather)(const void* mine, int64_t bytes, void* all, double timeout_seconds, char* error,
                    size_t error_size);
  // all_reduce_sum begun on the progress thread: its ticket in *ticket at once; finish waits for
  // it (at most timeout_seconds) and gives its outcome. Tickets finish in the order they started.
  int (*start_all_reduce_sum)(void* data, int64_t count, int is_f64, int64_t* ticket, char* error,
                              size_t error_size);
  // *seconds: how long MPI took over it (on the progress thread).
  int (*finish)(int64_t ticket, double timeout_seconds, double* seconds, char* error,
                size_t error_size);
  // MPI_Abort: ends every rank's process with `exit_code`; does not return.
  void (*abort)(int exit_code);
};

typedef int (*KilnMpiOpenFn)(struct KilnMpiShim* shim, char* error, size_t error_size);
int kiln_mpi_open(struct KilnMpiShim* shim, char* error, size_t error_size);

#ifdef __cplusplus
}
#endif
