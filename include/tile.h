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
 * The same kernel on memory the caller owns, asynchronously on a stream (no copies; the
 * output is a buffer from the device's caching pool):
 *
 *     tile_device dev;
 *     tile_device_parse("cpu", &dev, NULL);                // or "cuda:0", "opencl:0"
 *     tile_stream *s;
 *     tile_stream_create(dev, &s, &err);
 *     void *c;
 *     tile_buffer_alloc(dev, 64 * 64 * sizeof(float), &c, &err);
 *     int64_t shape[2] = {64, 64};
 *     tile_view v[3] = {tile_view_contiguous(a, dev, TILE_DT_F32, 2, shape),   // params ...
 *                       tile_view_contiguous(b, dev, TILE_DT_F32, 2, shape),
 *                       tile_view_contiguous(c, dev, TILE_DT_F32, 2, shape)};  // ... then rets
 *     tile_launch(k, s, v, 3, NULL, &err);                 // returns before the work is done
 *     tile_stream_sync(s, &err);                           // c holds C = A @ B
 *     tile_buffer_free(dev, c);
 *     tile_stream_free(s);
 *
 * Conventions: every function returns a tile_status; messages come back as heap strings the
 * caller frees with tile_free(). Nothing here aborts on bad input. Every function may be
 * called from several threads at once, on different objects or the same module, kernel,
 * stream or device.
 */
#ifndef TILE_H
#define TILE_H

#include <stdbool.h>
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
/* Per-kernel compile options (docs/api.md, "Compile options"; `tile env --options` lists
 * them): `name` is a Tile option (cpu_checks, gpu_checks, sm90_group, fast_math, ...) or a
 * TileLang pass_configs key (tl.disable_tma_lower, TL_DISABLE_WARP_SPECIALIZED, ...), which
 * sets the options it maps onto; `value` is parsed as the option's type (bool 1/0/true/false,
 * integers, text). An option not set takes its environment variable's value (TILE_CPU_CHECKS,
 * ...), else its default. The source's `pass_configs` are applied first, these after them.
 * Set options before the kernel's first run or launch (afterwards: TILE_ERR_USER); emit and
 * ir_for use them at once. The options enter the compile caches' keys. tile_module_set_option
 * sets it on every kernel of the module. TILE_ERR_USER with *error naming the option, the
 * value and the accepted ones. */
TILE_API tile_status tile_module_set_option(tile_module *m, const char *name, const char *value, char **error);
TILE_API tile_status tile_kernel_set_option(tile_kernel *k, const char *name, const char *value, char **error);
/* 1: `name` is a Tile option, 2: a TileLang pass_configs key Tile maps, 0: neither. */
TILE_API int tile_option_known(const char *name);
/* The kernel's effective options, "name=value;" for every option (free with tile_free). */
TILE_API char *tile_kernel_options(const tile_kernel *k);
/* The IR of a kernel as text (what `tile ir` prints); free with tile_free. */
TILE_API char *tile_kernel_ir(const tile_kernel *k);
/* The IR after the TileOpt pipeline of `target` ("cpu", ...), up to pass `after_pass` (NULL:
 * all passes; "sema": none). *text (free with tile_free) or *error. */
TILE_API tile_status tile_kernel_ir_for(tile_kernel *k, const char *target, const char *after_pass, char **text, char **error);
/* Why the kernel is lowered the way it is on `target` (what `tile ir --explain` prints): for
 * each tile op, one line `FILE:LINE:COL: OP: LOWERING [pass]` and one `... declined: FASTER:
 * WHY [pass]` per faster lowering a pass or the code generator declined; after the pipeline
 * up to `after_pass` (NULL: all passes and the code generator's decisions). *text (free with
 * tile_free) or *error. */
TILE_API tile_status tile_kernel_explain(tile_kernel *k, const char *target, const char *after_pass, char **text, char **error);
/* The generated source of a kernel for `target` (what `tile emit` prints). */
TILE_API tile_status tile_kernel_emit(tile_kernel *k, const char *target, char **source, char **error);
/* The options the cuda target passes NVRTC when it compiles for `arch` (e.g. "sm_90a"; NULL:
 * sm_90a), one a line, so that a tool can compile `tile emit --target cuda` output the same
 * way (bench/cuda/compile_time.py). Free with tile_free. */
TILE_API char *tile_cuda_nvrtc_options(const char *arch);
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

/* ---------- configuration (the knob registry, docs/knobs.md) ----------
 * The environment knobs as text, one a line with its current value (what `tile env` prints);
 * markdown != 0: the docs/knobs.md page; options != 0: the per-kernel compile options
 * instead. Free with tile_free. */
TILE_API char *tile_env_describe(int markdown, int options);
/* 1 if `name` is a registered knob set to a valid value, 0 if not set (or invalid), -1 if
 * `name` is not a knob. */
TILE_API int tile_env_is_set(const char *name);
/* Is `target` usable here? TILE_OK with *device (its name), or TILE_ERR_UNAVAILABLE with
 * *why. Strings are freed with tile_free; either pointer may be NULL. */
TILE_API tile_status tile_target_info(const char *target, char **device, char **why);
/* The targets this build knows and whether each is usable here; a line per target. */
TILE_API char *tile_devices_report(void);
/* The targets this build knows ("interp", "cpu", "cuda", "opencl"), i < tile_num_targets(). */
TILE_API int tile_num_targets(void);
TILE_API const char *tile_target_name(int i);

/* ---------- dtypes and elements ----------
 * Element access on raw storage, bit-exact with every backend. Loads widen exactly; stores
 * of a double into a float dtype round to nearest even; fp8/fp4 saturate finite overflow
 * (docs/numbers.md). */
TILE_API const char *tile_dtype_name(tile_dtype dt);     /* canonical name, "?" if invalid */
TILE_API int tile_dtype_bits(tile_dtype dt);
TILE_API bool tile_dtype_is_float(tile_dtype dt);
TILE_API bool tile_dtype_is_int(tile_dtype dt);          /* signed or unsigned integer (not bool) */
TILE_API bool tile_dtype_is_signed(tile_dtype dt);       /* signed integers and floats */
/* Canonical names and the usual aliases ("float", "f32", "half", "bf16", "e4m3", "int", ...);
 * TILE_DT_INVALID if unknown. */
TILE_API tile_dtype tile_dtype_parse(const char *name);
/* The norm-wise relative error `tile run --check` accepts for this dtype (0: exact). */
TILE_API double tile_dtype_check_tolerance(tile_dtype dt);
TILE_API size_t tile_dtype_storage_bytes(tile_dtype dt, size_t n); /* bytes of n elements (fp4: (n+1)/2) */
TILE_API double tile_load_f(tile_dtype dt, const void *base, size_t index);
TILE_API int64_t tile_load_i(tile_dtype dt, const void *base, size_t index);
TILE_API uint64_t tile_load_bits(tile_dtype dt, const void *base, size_t index);
TILE_API void tile_store_f(tile_dtype dt, void *base, size_t index, double v);
TILE_API void tile_store_i(tile_dtype dt, void *base, size_t index, int64_t v);
TILE_API void tile_store_bits(tile_dtype dt, void *base, size_t index, uint64_t bits);

/* ---------- NumPy .npy files ----------
 * Native dtypes as NumPy writes them ('<f4', '<i8', '|b1', ...). Dtypes NumPy lacks are
 * stored as their raw bits: bf16 as '<u2', fp8 as '|u1', fp4 e2m1 as '|u1' with ONE element
 * per byte (value in the low nibble) so that shapes stay natural. */
typedef struct tile_npy {
    char descr[16];      /* e.g. "<f4" */
    int rank;
    int64_t shape[8];
    bool fortran_order;
    size_t elem_size;    /* bytes per stored element */
    size_t count;        /* number of elements */
    void *data;          /* heap, count * elem_size bytes */
} tile_npy;
/* Return 0 on success; on failure write a message into err (size errlen). */
TILE_API int tile_npy_read(const char *path, tile_npy *out, char *err, size_t errlen);
TILE_API int tile_npy_write(const char *path, const char *descr, int rank, const int64_t *shape,
                            const void *data, size_t elem_size, char *err, size_t errlen);
TILE_API void tile_npy_free(tile_npy *n);
TILE_API const char *tile_npy_descr_for(tile_dtype dt);        /* "<f4", "<u2" for bf16, ... */
TILE_API tile_dtype tile_npy_dtype_of_descr(const char *descr); /* TILE_DT_INVALID if unsupported */
/* Monotonic time in seconds. */
TILE_API double tile_now(void);

/* ---------- devices ----------
 * A device is a type and an index: "cpu", "cuda:N", "opencl:N" (the types have DLPack's
 * numbers). The cuda backend drives one GPU per process, the one TILE_CUDA_DEVICE picks
 * (default 0), as cuda:<its ordinal>; the opencl backend one device, opencl:0, the one
 * TILE_OPENCL_DEVICE picks. Other indices are refused with a message saying so. */
typedef enum tile_device_type { TILE_DEVICE_CPU = 1, TILE_DEVICE_CUDA = 2, TILE_DEVICE_OPENCL = 4 } tile_device_type;
typedef struct tile_device {
    int32_t type;   /* tile_device_type */
    int32_t index;
} tile_device;
/* "cpu", "cuda", "cuda:1", "opencl:0" ("cuda" = "cuda:0"). */
TILE_API tile_status tile_device_parse(const char *name, tile_device *out, char **error);
/* "cuda:0" (free with tile_free). */
TILE_API char *tile_device_string(tile_device d);
/* Devices of a type usable here (0 when the toolkit or the device is missing). */
TILE_API int tile_device_count(tile_device_type type);
/* TILE_OK with *description (free with tile_free), or TILE_ERR_UNAVAILABLE with *error. */
TILE_API tile_status tile_device_describe(tile_device d, char **description, char **error);

/* ---------- streams and events ----------
 * A stream is an in-order queue of work on one device (a CUstream, an OpenCL command queue).
 * On the cpu, work runs when it is enqueued, on the calling thread and the thread pool, so a
 * cpu stream is always synchronised. Errors of asynchronous work (a failed launch, an
 * out-of-bounds access a checked kernel detected) come back from the next tile_stream_sync. */
typedef struct tile_stream tile_stream;
typedef struct tile_event tile_event;
TILE_API tile_status tile_stream_create(tile_device dev, tile_stream **out, char **error);
/* A stream over a native one the caller owns (e.g. PyTorch's current CUstream; NULL: the
 * device's default stream). Not destroyed by tile_stream_free. */
TILE_API tile_status tile_stream_wrap(tile_device dev, void *native, tile_stream **out, char **error);
TILE_API tile_device tile_stream_device(const tile_stream *s);
TILE_API void *tile_stream_native(const tile_stream *s);
/* Wait for every piece of work enqueued so far; report the first error of any of them. */
TILE_API tile_status tile_stream_sync(tile_stream *s, char **error);
TILE_API void tile_stream_free(tile_stream *s);
TILE_API tile_status tile_event_create(tile_device dev, tile_event **out, char **error);
TILE_API tile_status tile_event_record(tile_event *e, tile_stream *s, char **error);
/* Work enqueued on s after this call waits for e. */
TILE_API tile_status tile_stream_wait_event(tile_stream *s, tile_event *e, char **error);
TILE_API tile_status tile_event_sync(tile_event *e, char **error);
/* Seconds between two recorded events of one device. */
TILE_API tile_status tile_event_elapsed(tile_event *start, tile_event *end, double *seconds, char **error);
TILE_API void tile_event_free(tile_event *e);

/* ---------- device memory ----------
 * Buffers come from a caching pool per device: a freed buffer goes back to its size class
 * (256-byte granules up to 4 KiB, then four classes per power of two) and the next
 * allocation of that class takes it without asking the driver. Free a buffer only when the
 * work that uses it is done (tile_stream_sync) or is on the stream the next user enqueues on.
 * On OpenCL the pointer is a cl_mem. When the driver runs out, the pool is trimmed and the
 * allocation tried once more. */
TILE_API tile_status tile_buffer_alloc(tile_device dev, size_t bytes, void **ptr, char **error);
TILE_API void tile_buffer_free(tile_device dev, void *ptr);
typedef struct tile_memory_stats {
    size_t in_use;        /* bytes handed out and not freed */
    size_t cached;        /* bytes held in the free lists */
    size_t high_water;    /* the largest in_use + cached since the start (or the last reset) */
    int64_t allocs;       /* tile_buffer_alloc calls */
    int64_t reused;       /* of them, served from the free lists */
    int64_t driver_allocs;/* of them, that went to the driver */
} tile_memory_stats;
TILE_API tile_status tile_memory_stats_get(tile_device dev, tile_memory_stats *out, char **error);
/* Give every cached (free) block back to the driver; reset_peak: high_water = in_use. */
TILE_API void tile_memory_trim(tile_device dev, int reset_peak);
/* Copy bytes between host memory and a device, or within a device, on s (asynchronous
 * where the device is; host memory must stay valid until the stream is synchronised).
 * Offsets are in bytes (OpenCL buffers are handles, not addresses). */
TILE_API tile_status tile_memcpy_to_device(tile_stream *s, void *dst, size_t dst_off, const void *host, size_t bytes, char **error);
TILE_API tile_status tile_memcpy_to_host(tile_stream *s, void *host, const void *src, size_t src_off, size_t bytes, char **error);
TILE_API tile_status tile_memcpy_on_device(tile_stream *s, void *dst, size_t dst_off, const void *src, size_t src_off, size_t bytes, char **error);

/* ---------- tensor views and launches ----------
 * A view describes memory the caller owns: where (device, base pointer, byte offset to
 * element 0), what (dtype), and its layout (shape and element strides, DLPack's rule). A
 * kernel parameter given a view that is not row-major contiguous either runs on it as it is
 * (the cpu target takes any strides whose last one is 1) or is refused with an error naming
 * the parameter. fp4 views must be contiguous. */
typedef struct tile_view {
    void *data;
    int64_t byte_offset;
    tile_device device;
    tile_dtype dtype;
    int rank;
    int64_t shape[8];
    int64_t strides[8];   /* in elements */
} tile_view;
/* A row-major contiguous view (strides from the shape; byte_offset 0). */
TILE_API tile_view tile_view_contiguous(void *data, tile_device dev, tile_dtype dtype, int rank, const int64_t *shape);
TILE_API int tile_view_is_contiguous(const tile_view *v);

/* A kernel specialised for one signature of arguments: the target, the device, every
 * tensor's dtype and shape (so the symbolic sizes are bound once) and the strides class
 * (contiguous, or strided with these strides). Specialisations live in the kernel, in
 * memory, in front of the disk cache of compiled code: after the first launch of a
 * signature, launching it again does no compiling, hashing of source text or file-system
 * access. Freed with the module. */
typedef struct tile_spec tile_spec;
/* views: one per parameter (by position; scalar parameters' entries are ignored) then one
 * per returned tensor: nviews = num_params + num_rets. Only metadata is read; target NULL or
 * "auto": the best backend for the views' device. */
TILE_API tile_status tile_kernel_specialize(tile_kernel *k, const char *target, const tile_view *views, int nviews, tile_spec **out,
                                            char **error);
/* Launch a specialisation on stream s with these data pointers (byte offsets applied, one
 * per view as in tile_kernel_specialize; the layout must be the specialisation's).
 * scalars: values of scalar parameters by parameter position (may be NULL). */
TILE_API tile_status tile_spec_launch(tile_spec *sp, tile_stream *s, void *const *data, const double *scalars, char **error);
/* Both in one: asynchronous on s, on caller-owned memory, no copies. Every view must be on
 * s's device; views for returned tensors receive them (the caller allocates them: see
 * tile_infer_shapes for their shapes). */
TILE_API tile_status tile_launch(tile_kernel *k, tile_stream *s, const tile_view *views, int nviews, const double *scalars, char **error);
/* Counters of the compile path, for tests and `TILE_LOG=info`: backend compiles (each
 * hashes the generated source and probes the disk cache), specialisations made, and
 * launches that found their specialisation in memory. */
typedef struct tile_cache_stats {
    int64_t compiles;
    int64_t specializations;
    int64_t spec_hits;
    int64_t launches;
} tile_cache_stats;
TILE_API void tile_cache_stats_get(tile_cache_stats *out);

/* ---------- DLPack ----------
 * <tile_dlpack.h> has the structs (DLPack 1.x, the versioned and the older unversioned
 * managed tensors). A view of a producer's tensor (zero copy; the producer keeps owning it),
 * and a managed tensor over a view (its deleter calls `release(ctx)` when not NULL, then
 * frees the struct). Unsupported dtypes, devices or versions are errors saying which. */
struct DLManagedTensor;
struct DLManagedTensorVersioned;
TILE_API tile_status tile_view_from_dlpack(const struct DLManagedTensor *t, tile_view *out, char **error);
TILE_API tile_status tile_view_from_dlpack_versioned(const struct DLManagedTensorVersioned *t, tile_view *out, char **error);
TILE_API struct DLManagedTensorVersioned *tile_view_to_dlpack_versioned(const tile_view *v, void (*release)(void *ctx), void *ctx);
TILE_API struct DLManagedTensor *tile_view_to_dlpack(const tile_view *v, void (*release)(void *ctx), void *ctx);

/* ---------- tracing ----------
 * TILE_TRACE=FILE.json (or tile_trace_start) writes a Chrome trace (open it in Perfetto or
 * chrome://tracing): compiles, cache hits, copies, launches with their grid. The file is
 * complete after tile_trace_stop or at process exit. tile_trace_event lets other libraries
 * (TileLink's collectives) add their own spans: name, category, start and duration in
 * seconds of tile_now(), and one argument line of JSON object members (may be NULL). */
TILE_API tile_status tile_trace_start(const char *path, char **error);
TILE_API void tile_trace_stop(void);
TILE_API int tile_trace_enabled(void);
TILE_API void tile_trace_event(const char *name, const char *category, double start_s, double dur_s, const char *args_json);

#ifdef __cplusplus
}
#endif
#endif
