/* kiln's C API: load a compiled module (.kmod, written by `kiln compile`) and run it from C or any
 * language with a C FFI, with the runtime library alone (kiln_runtime: no compiler).
 *
 *   kiln_status* status = NULL;
 *   kiln_module* m = kiln_module_load("digits.kmod", 0, &status);
 *   if (!m) { fprintf(stderr, "%s\n", kiln_status_message(status)); kiln_status_free(status); }
 *   const void* inputs[] = {images};   // dense row-major data, in signature order
 *   void* outputs[] = {logits};        // caller-allocated, kiln_module_output_bytes(m, i) each
 *   if (kiln_module_run(m, inputs, outputs, &status) != 0) { ... }
 *   kiln_module_free(m);
 *
 * Contract:
 * - Handles are opaque. A module is run by one caller at a time (as kiln::Module); distinct
 *   modules may run concurrently.
 * - Every function that can fail takes `kiln_status** status`: on failure it sets *status to a new
 *   status the caller frees with kiln_status_free (before reusing the variable); on success it
 *   sets *status to NULL. `status` itself may be NULL (the error is then dropped). A NULL status
 *   reads as success. Those that return int return 0 on success, the error's kiln_code otherwise.
 * - Nothing throws across this boundary and no argument crashes it: a NULL module, path or
 *   buffer, or an index out of range, is an error (a status, or the sentinel the accessor
 *   documents: -1, NULL, KILN_DTYPE_INVALID).
 * - Strings returned by a module live as long as the module; by a status, as long as the status.
 * This header is C99 (and C++) compatible.
 */
#ifndef KILN_RUNTIME_C_API_KILN_C_H_
#define KILN_RUNTIME_C_API_KILN_C_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_module kiln_module;
typedef struct kiln_status kiln_status;

/* Element types: the same values, in the same order, as kiln::DType (ir/dtype.h). f16 and bf16
 * elements are 16-bit patterns; bool elements are one byte (0 or 1). */
typedef enum kiln_dtype {
  KILN_DTYPE_INVALID = 0,
  KILN_DTYPE_F32 = 1,
  KILN_DTYPE_F64 = 2,
  KILN_DTYPE_F16 = 3,
  KILN_DTYPE_BF16 = 4,
  KILN_DTYPE_I8 = 5,
  KILN_DTYPE_U8 = 6,
  KILN_DTYPE_I32 = 7,
  KILN_DTYPE_I64 = 8,
  KILN_DTYPE_BOOL = 9,
  KILN_DTYPE_I16 = 10,
  KILN_DTYPE_U16 = 11,
  KILN_DTYPE_U32 = 12,
  KILN_DTYPE_U64 = 13
} kiln_dtype;

/* Error codes: KILN_OK, then kiln::ErrorCode (ir/status.h) in its order. */
typedef enum kiln_code {
  KILN_OK = 0,
  KILN_INVALID_ARGUMENT = 1,
  KILN_NOT_FOUND = 2,
  KILN_ALREADY_EXISTS = 3,
  KILN_FAILED_PRECONDITION = 4,
  KILN_DATA_LOSS = 5,
  KILN_UNIMPLEMENTED = 6,
  KILN_OUT_OF_RANGE = 7,
  KILN_RESOURCE_EXHAUSTED = 8,
  KILN_INTERNAL = 9
} kiln_code;

/* ---- status ---- */
/* The error's message ("" for a NULL status). */
const char* kiln_status_message(const kiln_status* status);
/* The error's code (KILN_OK for a NULL status). */
kiln_code kiln_status_code(const kiln_status* status);
/* Frees a status; NULL is fine. */
void kiln_status_free(kiln_status* status);

/* ---- dtypes ---- */
/* "f32", "i64", "bool", ...; NULL for a value that is no dtype. */
const char* kiln_dtype_name(kiln_dtype dtype);
/* Bytes per element; -1 for a value that is no dtype. */
int kiln_dtype_size(kiln_dtype dtype);

/* ---- modules ---- */
/* Loads a module file for this CPU. threads: 0 uses every core this process may use, N > 0 uses
 * N; negative is an error. Returns NULL on failure (a missing, damaged or foreign file). */
kiln_module* kiln_module_load(const char* path, int threads, kiln_status** status);
/* The same on a named backend: NULL, "" or "auto" is the module's own target ("cpu", or "cuda":
 * the first GPU); a module compiled with --target cuda also runs on "cuda-sim", the simulated
 * device. A backend the module cannot run on is an error naming both. */
kiln_module* kiln_module_load_on(const char* path, const char* backend, int threads,
                                 kiln_status** status);
/* The same within a memory budget: memory_limit bytes, or 0 for what the process can get (the
 * smaller of MemAvailable and the cgroup's limit). A module whose plan does not fit is refused
 * (KILN_RESOURCE_EXHAUSTED) before it allocates its arena, naming its largest buffers. */
kiln_module* kiln_module_load_within(const char* path, const char* backend, int threads,
                                     int64_t memory_limit, kiln_status** status);
/* Frees a module; NULL is fine. */
void kiln_module_free(kiln_module* module);

/* ---- data-parallel training (docs/distributed.md) ---- */
/* Loads a module compiled with `kiln compile --train --data-parallel` as this process's rank of a
 * data-parallel run under mpirun: opens MPI (kiln's MPI library, libkiln_mpi.so, loaded at run
 * time), the device's collectives for a cuda module (NCCL on a GPU), and makes every rank's
 * variables rank 0's. Every rank calls it at the same point; each then runs its shard of every
 * global batch, one training step per kiln_module_run. A collective that waits longer than
 * timeout_seconds (> 0) fails that run instead of waiting for a lost rank forever. */
kiln_module* kiln_module_load_distributed(const char* path, const char* backend, int threads,
                                          double timeout_seconds, kiln_status** status);
/* This process's rank and the number of ranks: 0 and 1 for a module loaded otherwise; -1 for
 * NULL. */
int kiln_module_rank(const kiln_module* module);
int kiln_module_ranks(const kiln_module* module);
/* This rank's share of the global batch the next runs train on (its examples over all ranks'),
 * where the shards differ in size; 1 / ranks until set. KILN_FAILED_PRECONDITION for a module not
 * loaded by kiln_module_load_distributed. */
int kiln_module_set_share(kiln_module* module, double share, kiln_status** status);
/* Loads a shared library of user-defined ops (runtime/plugins.h) that modules may use; call it
 * before loading such a module. Loading the same file twice is fine. Returns 0 or the error's
 * kiln_code. */
int kiln_load_plugin(const char* path, kiln_status** status);

/* The signature. Indices run from 0 to the count - 1, in signature order. Out of range or on a
 * NULL module: counts, ranks, dims and bytes are -1, names NULL, dtypes KILN_DTYPE_INVALID. */
int kiln_module_num_inputs(const kiln_module* module);
int kiln_module_num_outputs(const kiln_module* module);
const char* kiln_module_input_name(const kiln_module* module, int i);
const char* kiln_module_output_name(const kiln_module* module, int i);
kiln_dtype kiln_module_input_dtype(const kiln_module* module, int i);
kiln_dtype kiln_module_output_dtype(const kiln_module* module, int i);
int kiln_module_input_rank(const kiln_module* module, int i);
int kiln_module_output_rank(const kiln_module* module, int i);
/* Dimension d (0 <= d < rank) of input/output i. */
int64_t kiln_module_input_dim(const kiln_module* module, int i, int d);
int64_t kiln_module_output_dim(const kiln_module* module, int i, int d);
/* The dense size in bytes of input/output i. */
int64_t kiln_module_input_bytes(const kiln_module* module, int i);
int64_t kiln_module_output_bytes(const kiln_module* module, int i);
/* The index of the input/output named exactly `name`; -1 if there is none. */
int kiln_module_find_input(const kiln_module* module, const char* name);
int kiln_module_find_output(const kiln_module* module, const char* name);

/* Runs the module once (a module compiled with --train performs one training step).
 * inputs[i] points at the dense row-major data of input i, exactly of its signature's dtype and
 * shape (kiln_module_input_bytes bytes); outputs[i] at a caller-allocated buffer of at least
 * kiln_module_output_bytes(module, i) bytes, which receives output i. A pointer may be NULL only
 * for a tensor of 0 bytes. Returns 0 on success, the error's kiln_code otherwise; on failure the
 * output buffers' contents are unspecified. */
int kiln_module_run(kiln_module* module, const void* const* inputs, void* const* outputs,
                    kiln_status** status);
/* The same, checking the caller's buffer sizes: input_bytes[i] must equal input i's size and
 * output_bytes[i] be at least output i's (either array may be NULL: not checked). */
int kiln_module_run_checked(kiln_module* module, const void* const* inputs,
                            const int64_t* input_bytes, void* const* outputs,
                            const int64_t* output_bytes, kiln_status** status);

/* Writes the module's variables to a checkpoint (.kckpt, the files a kiln::Session uses). */
int kiln_module_save_checkpoint(const kiln_module* module, const char* path, kiln_status** status);
/* Reads them back, all or nothing: every variable must be in the file with its dtype and shape. */
int kiln_module_restore_checkpoint(kiln_module* module, const char* path, kiln_status** status);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_RUNTIME_C_API_KILN_C_H_ */
