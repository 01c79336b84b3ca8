/* backend.h — a target is a table of functions ("backends as data").
 *
 * In:  a verified ir_func (after the target's TileOpt pipeline); host tensors (run) or
 *      views of memory on the backend's device (launch).
 * Out: results written into the tensors / views.
 *
 * The runtime (runtime.c, launch.c, device.c) never names a backend: every target,
 * the interpreter included, is one entry of TILE_BACKEND_LIST below, defined in its own
 * file as `const tile_backend tile_backend_<name>`. A backend whose device or toolchain is
 * missing says so from available() and is skipped by --target auto.
 *
 * Adding a target: write its table (the functions below; NULL where it has none), add its
 * name to TILE_BACKEND_LIST, and name its TileOpt pipeline (a row of src/opt/opt.c's table, or
 * an existing one). Guarantee that run() gives the interpreter's results within the
 * tolerances of docs/cli.md for every program the interpreter runs (the tests/programs suite
 * runs every program on every available target).
 */
#ifndef TILE_BACKEND_H
#define TILE_BACKEND_H

#include "../core/core.h"
#include "../ir/ir.h"

/* Every target of this library, in the order `tile devices` lists them. */
#define TILE_BACKEND_LIST(X) X(interp) X(cpu) X(cuda) X(opencl)

enum {
#define X(n) TILE_BACKEND_ID_##n,
    TILE_BACKEND_LIST(X)
#undef X
    TILE_BACKEND_COUNT
};

/* The memory of a device (cpu, cuda:N, opencl:N): the backend that owns the device type
 * fills these in; the runtime's caching pool (device.c) sits on top of raw_alloc/raw_free.
 * Streams and events are the backend's native objects (CUstream, cl_command_queue; NULL on
 * the cpu, whose streams run their work when it is enqueued). Every function returns 0, or 1
 * with a message in err. */
typedef struct tile_device_ops {
    int (*count)(void);                                   /* devices of this type here */
    void (*name)(int index, tile_strbuf *out);
    int (*raw_alloc)(int index, size_t bytes, void **ptr, tile_strbuf *err);
    void (*raw_free)(int index, void *ptr);
    /* copy n bytes; kind: 0 host->device, 1 device->host, 2 device->device (dst/src offsets in bytes) */
    int (*copy)(int index, int kind, void *dst, size_t dst_off, const void *src, size_t src_off, size_t n, void *stream, tile_strbuf *err);
    int (*stream_create)(int index, void **stream, tile_strbuf *err);
    void (*stream_destroy)(int index, void *stream);
    int (*stream_sync)(int index, void *stream, tile_strbuf *err);
    int (*event_create)(int index, void **event, tile_strbuf *err);
    void (*event_destroy)(int index, void *event);
    int (*event_record)(int index, void *event, void *stream, tile_strbuf *err);
    int (*event_wait)(int index, void *stream, void *event, tile_strbuf *err); /* stream waits for event */
    int (*event_sync)(int index, void *event, tile_strbuf *err);
    int (*event_query)(int index, void *event);             /* 1 done, 0 pending, -1 error */
    int (*event_elapsed)(int index, void *start, void *end, double *seconds, tile_strbuf *err);
} tile_device_ops;

/* One argument of a launch: where the data is (base + byte offset applied) and its layout. */
typedef struct tile_launch_arg {
    void *data;               /* host pointer, device address (CUdeviceptr), or cl_mem */
    int64_t byte_offset;      /* from data to element 0 (backends whose handles are not addresses) */
    const int64_t *shape;
    const int64_t *strides;   /* elements; NULL: contiguous row-major */
} tile_launch_arg;

typedef struct tile_backend {
    const char *name;                 /* "interp", "cpu", "cuda", "opencl" */
    const char *doc;                  /* a line for `tile devices` where device_name says nothing */
    int auto_rank;                    /* --target auto takes the available backend of highest rank */
    int device_type;                  /* TILE_DEVICE_* its launches run on */
    const tile_device_ops *device;    /* the memory and streams of device_type (NULL: another
                                         backend of the same device type owns them) */
    bool host_only;                   /* runs on host memory only (the interpreter) */
    bool f64_reference;               /* can run tile_run_options.f64_reference */
    /* Is the target usable here? On false, write why into `why`. */
    bool (*available)(tile_strbuf *why);
    /* A human-readable device name ("Intel Xeon @ 2.8GHz, 2 cores (AVX-512)"). */
    void (*device_name)(tile_strbuf *out);
    /* The TileOpt pipeline for this target (src/opt/opt.h), by name, e.g. "cpu". */
    const char *pipeline;
    /* Generated source for f (what `tile emit` prints); NULL: the target has none. Returns 0
     * or 1 with err set. */
    int (*emit)(const ir_func *f, tile_strbuf *out, tile_strbuf *err);
    /* Compile f into an executable object (cached on disk by the backend). `strided`: the
     * tensors come with element strides (tile_launch_arg.strides); backends that cannot take
     * them leave `compile_strided` unset. */
    int (*compile)(const ir_func *f, void **exe, tile_strbuf *err);
    int (*compile_strided)(const ir_func *f, void **exe, tile_strbuf *err);
    /* Check that a strided argument can be taken (NULL: any); message names nothing, the
     * runtime prefixes the parameter. */
    int (*check_strides)(const ir_func *f, const ir_buffer *b, const int64_t *shape, const int64_t *strides, tile_strbuf *err);
    /* Run: sizes[i] is the value of f->sizes[i]; params/rets as in tile_run (host memory,
     * row-major; rets already allocated); scalars[i] for scalar params (by param position). */
    int (*run)(void *exe, const ir_func *f, const int64_t *sizes, tile_tensor *params, tile_tensor *rets,
               const double *scalars, const tile_run_options *opt, tile_strbuf *err);
    /* Optional (NULL: tile_bench times run() on the host). Copy the inputs to the device once,
     * run once untimed, then `iters` times, times_s[i] the device time of run i's launches
     * alone; the outputs of the last run written back as run() does. Returns 0 or 1. */
    int (*bench)(void *exe, const ir_func *f, const int64_t *sizes, tile_tensor *params, tile_tensor *rets, const double *scalars, int iters,
                 double *times_s, tile_strbuf *err);
    /* Optional: launch on memory of the backend's device, on `stream` (its native object),
     * without copies; asynchronous where the device is. args: f->nparams then f->nrets
     * (scalar parameters' entries unused). *state is the backend's per-specialisation cache
     * (NULL at the first launch of a specialisation; freed by release_state). */
    int (*launch)(void *exe, const ir_func *f, const int64_t *sizes, const tile_launch_arg *args, const double *scalars, int device_index,
                  void *stream, void **state, tile_strbuf *err);
    /* Optional: after the stream of earlier launches was synchronised, report (and clear)
     * an error the kernel recorded on the device (a checked out-of-bounds access, ...). */
    int (*check_state)(void *exe, const ir_func *f, void *state, tile_strbuf *err);
    void (*release_state)(void *exe, void *state);
    void (*release)(void *exe);
} tile_backend;

/* The backend named `name`, or NULL. Backends define `const tile_backend tile_backend_<name>`. */
const tile_backend *tile_backend_find(const char *name);
/* Backend i of TILE_BACKEND_LIST (0 <= i < TILE_BACKEND_COUNT). */
const tile_backend *tile_backend_at(int i);
/* The backend that owns the memory of device type `type` (TILE_DEVICE_*), or NULL. */
const tile_backend *tile_backend_for_device(int type);

#endif
