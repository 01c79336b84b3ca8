/* tile.h — the public interface of libtile: compile TileLang, run kernels.
 *
 * A worked example (error handling shortened):
 *
 *     #include <tile.h>
 *
 *     const char *defs[] = {"M=64", "N=64", "K=64"};
 *     tile_module *mod;
 *     char *diag = NULL;
 *     if (tile_compile_file("examples/seed_matmul_000.tl", defs, 3, &mod, &diag) != TILE_OK) {
 *         fputs(diag, stderr);             // file:line:col: error: ... with the line and a caret
 *         return 1;
 *     }
 *     tile_kernel *k = tile_module_kernel(mod, NULL);     // the only kernel in the file
 *     float a[64 * 64], b[64 * 64];                       // ... fill them ...
 *     tile_tensor args[2] = {
 *         {a, TILE_DT_F32, 2, {64, 64}},
 *         {b, TILE_DT_F32, 2, {64, 64}},
 *     };
 *     tile_tensor ret = {0};                               // allocated by tile_run
 *     char *err = NULL;
 *     if (tile_run(k, "interp", args, 2, &ret, 1, NULL, &err) != TILE_OK) { fputs(err, stderr); }
 *     // ret.data holds C = A @ B as float32[64, 64]; release it with tile_tensor_free(&ret)
 *     tile_module_free(mod);
 *
 * Conventions: every function returns a tile_status; messages come back as heap strings the
 * caller frees with tile_free(). Nothing here aborts on bad input.
 */
#ifndef TILE_H
#define TILE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(TILE_BUILDING_LIBRARY)
#define TILE_API __attribute__((visibility("default")))
#else
#define TILE_API
#endif

/* ---------- dtypes ----------
 * X(ENUM, canonical name, bits, kind)
 * kind: B = bool, I = signed integer, U = unsigned integer, F = floating point.
 * Explicit values; TILE_DT_COUNT is the sentinel. fp4 e2m1 is packed two per byte:
 * element 2i in the low nibble of byte i, element 2i+1 in the high nibble. */
#define TILE_DTYPES(X)                   \
    X(BOOL, "bool", 8, 'B')              \
    X(I8, "int8", 8, 'I')                \
    X(I16, "int16", 16, 'I')             \
    X(I32, "int32", 32, 'I')             \
    X(I64, "int64", 64, 'I')             \
    X(U8, "uint8", 8, 'U')               \
    X(U16, "uint16", 16, 'U')            \
    X(U32, "uint32", 32, 'U')            \
    X(U64, "uint64", 64, 'U')            \
    X(F16, "float16", 16, 'F')           \
    X(BF16, "bfloat16", 16, 'F')         \
    X(F32, "float32", 32, 'F')           \
    X(F64, "float64", 64, 'F')           \
    X(FP8_E4M3, "float8_e4m3", 8, 'F')   \
    X(FP8_E5M2, "float8_e5m2", 8, 'F')   \
    X(FP4_E2M1, "float4_e2m1", 4, 'F')

typedef enum tile_dtype {
#define X(e, name, bits, kind) TILE_DT_##e,
    TILE_DTYPES(X)
#undef X
    TILE_DT_COUNT,
    TILE_DT_INVALID = -1
} tile_dtype;

typedef enum tile_status {
    TILE_OK = 0,
    TILE_ERR_USER = 1,        /* bad program or bad arguments: the message says what and where */
    TILE_ERR_CHECK = 2,       /* --check found a result outside tolerance */
    TILE_ERR_INTERNAL = 3,    /* a bug in tile: please report the message */
    TILE_ERR_UNAVAILABLE = 4  /* the target is not built or has no device here */
} tile_status;

typedef struct tile_module tile_module; /* a compiled source file: one or more kernels */
typedef struct tile_kernel tile_kernel; /* one entry point of a module */

/* A tensor on the host: row-major, contiguous. fp4 e2m1 data is packed two per byte. */
typedef struct tile_tensor {
    void *data;
    tile_dtype dtype;
    int rank;
    int64_t shape[8];
} tile_tensor;

/* Compile a file or a string. `defines` are "NAME=VALUE" strings binding kernel-factory
 * parameters and symbolic dimensions. On failure *diagnostics (if not NULL) receives the
 * messages; on success it receives the warnings (or NULL). */
TILE_API tile_status tile_compile_file(const char *path, const char *const *defines, int ndefines,
                                       tile_module **out, char **diagnostics);
/* The same, lowering only the kernel named `kernel` (NULL: all), so other kernels' parameters
 * need no -D values. */
TILE_API tile_status tile_compile_file_kernel(const char *path, const char *kernel, const char *const *defines, int ndefines,
                                              tile_module **out, char **diagnostics);
TILE_API tile_status tile_compile_string(const char *name, const char *text, const char *const *defines,
                                         int ndefines, tile_module **out, char **diagnostics);
/* The same, lowering only the kernel named `kernel` (NULL: all), as tile_compile_file_kernel. */
TILE_API tile_status tile_compile_string_kernel(const char *name, const char *text, const char *kernel, const char *const *defines,
                                                int ndefines, tile_module **out, char **diagnostics);
TILE_API void tile_module_free(tile_module *m);

TILE_API int tile_module_num_kernels(const tile_module *m);
TILE_API const char *tile_module_kernel_name(const tile_module *m, int i);
/* NULL name: the module's only kernel (NULL if it has several). */
TILE_API tile_kernel *tile_module_kernel(tile_module *m, const char *name);
/* The IR of a kernel as text (what `tile ir` prints); free with tile_free. */
TILE_API char *tile_kernel_ir(const tile_kernel *k);
/* The IR after the TileOpt pipeline of `target` ("cpu", ...), up to pass `after_pass` (NULL:
 * all passes; "sema": none). *text (free with tile_free) or *error. */
TILE_API tile_status tile_kernel_ir_for(tile_kernel *k, const char *target, const char *after_pass, char **text, char **error);
/* The generated source of a kernel for `target` (what `tile emit` prints). */
TILE_API tile_status tile_kernel_emit(tile_kernel *k, const char *target, char **source, char **error);
/* The target "auto" stands for on this machine: "cuda", "cpu" or "interp". */
TILE_API const char *tile_auto_target(void);

/* Parameters (in call order) and returned tensors. */
TILE_API int tile_kernel_num_params(const tile_kernel *k);
TILE_API const char *tile_kernel_param_name(const tile_kernel *k, int i);
TILE_API int tile_kernel_param_is_tensor(const tile_kernel *k, int i);
TILE_API tile_dtype tile_kernel_param_dtype(const tile_kernel *k, int i);
TILE_API int tile_kernel_param_rank(const tile_kernel *k, int i);
TILE_API int tile_kernel_num_rets(const tile_kernel *k);
TILE_API const char *tile_kernel_ret_name(const tile_kernel *k, int i);

typedef struct tile_run_options {
    int check_bounds, check_uninit, check_races; /* interpreter checks; -1 = default (on) */
    int f64_reference;   /* interp only: compute everything in f64 (the --check reference) */
    const double *scalars; /* values of scalar parameters, by parameter position (may be NULL) */
} tile_run_options;

/* Run kernel k on `target` ("interp", "cpu", "cuda", "opencl" or "auto").
 * params: one tile_tensor per parameter (scalar parameters: ignored, pass {0}); their shapes
 * bind the symbolic dimensions. rets: nrets tensors; those with data == NULL are allocated
 * (free with tile_tensor_free); dtype/shape are filled in. For f64_reference runs, float
 * tensors must hold doubles. */
TILE_API tile_status tile_run(tile_kernel *k, const char *target, tile_tensor *params, int nparams,
                              tile_tensor *rets, int nrets, const tile_run_options *opt, char **error);

/* Time kernel k on `target`: `iters` (>= 1) timed runs on the same inputs after one untimed
 * run (which also compiles). Where the backend can (cuda), the tensors are copied to the
 * device once and stay there, and times_s[i] is the device time of run i's kernel launches
 * alone (CUDA events; the L2 cache flushed before each run unless TILE_BENCH_FLUSH=0), and
 * *device_time is set to 1; elsewhere times_s[i] is the host time of one tile_run and
 * *device_time is 0 (returned tensors are allocated by the untimed run, or given by the
 * caller, and reused by the timed ones, so no run times their allocation). Outputs of the last run are in params/rets as after tile_run (kernels
 * that update a parameter in place have done so iters + 1 times). device_time may be NULL. */
TILE_API tile_status tile_bench(tile_kernel *k, const char *target, tile_tensor *params, int nparams, tile_tensor *rets, int nrets,
                                const tile_run_options *opt, int iters, double *times_s, int *device_time, char **error);

/* The shapes the kernel expects, given the shapes of some parameters (others rank 0 / unknown):
 * fills every parameter's and return's shape once all symbolic sizes are bound. */
TILE_API tile_status tile_infer_shapes(tile_kernel *k, tile_tensor *params, int nparams, tile_tensor *rets,
                                       int nrets, char **error);

/* Floating-point operations one run performs on these parameters (GEMM: 2*M*N*K), counted
 * from the IR; -1 when it depends on data or on loop indices. */
TILE_API tile_status tile_kernel_flops(tile_kernel *k, tile_tensor *params, int nparams, double *flops);

TILE_API size_t tile_tensor_bytes(const tile_tensor *t);
TILE_API void tile_tensor_free(tile_tensor *t);
TILE_API void tile_free(void *p);
TILE_API const char *tile_version(void);
/* Is `target` usable here? TILE_OK with *device (its name), or TILE_ERR_UNAVAILABLE with
 * *why. Strings are freed with tile_free; either pointer may be NULL. */
TILE_API tile_status tile_target_info(const char *target, char **device, char **why);
/* The targets this build knows and whether each is usable here; a line per target. */
TILE_API char *tile_devices_report(void);

#ifdef __cplusplus
}
#endif
#endif
