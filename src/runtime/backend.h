/* backend.h — a compiled target is a table of functions ("backends as data").
 *
 * In:  a verified ir_func (after the target's TileOpt pipeline), host tensors.
 * Out: results written into the tensors.
 *
 * The runtime (runtime.c) never #ifdefs a backend: each backend file defines one
 * tile_backend and lists it in backends.c. A backend whose device or toolchain is missing
 * says so from available() and is skipped by --target auto.
 *
 * Adding a backend: fill in this table; guarantee that run() gives the interpreter's results
 * within the tolerances of docs/cli.md for every program the interpreter runs (the
 * tests/programs suite runs every program on every available target).
 */
#ifndef TILE_BACKEND_H
#define TILE_BACKEND_H

#include "../core/core.h"
#include "../ir/ir.h"

typedef struct tile_backend {
    const char *name;                 /* "cpu", "cuda", "opencl" */
    /* Is the target usable here? On false, write why into `why`. */
    bool (*available)(tile_strbuf *why);
    /* A human-readable device name ("Intel Xeon @ 2.8GHz, 2 cores (AVX-512)"). */
    void (*device_name)(tile_strbuf *out);
    /* The TileOpt pipeline for this target (src/opt/opt.h), by name, e.g. "cpu". */
    const char *pipeline;
    /* Generated source for f (what `tile emit` prints). Returns 0 or 1 with err set. */
    int (*emit)(const ir_func *f, tile_strbuf *out, tile_strbuf *err);
    /* Compile f into an executable object (cached on disk by the backend). */
    int (*compile)(const ir_func *f, void **exe, tile_strbuf *err);
    /* Run: sizes[i] is the value of f->sizes[i]; params/rets as in tile_run (host memory,
     * row-major; rets already allocated); scalars[i] for scalar params (by param position). */
    int (*run)(void *exe, const ir_func *f, const int64_t *sizes, tile_tensor *params, tile_tensor *rets,
               const double *scalars, tile_strbuf *err);
    /* Optional (NULL: tile_bench times run() on the host). Copy the inputs to the device once,
     * run once untimed, then `iters` times, times_s[i] the device time of run i's launches
     * alone; the outputs of the last run written back as run() does. Returns 0 or 1. */
    int (*bench)(void *exe, const ir_func *f, const int64_t *sizes, tile_tensor *params, tile_tensor *rets, const double *scalars, int iters,
                 double *times_s, tile_strbuf *err);
    void (*release)(void *exe);
} tile_backend;

/* The backend named `name` if it is built into this library (backends.c), else NULL.
 * Backends define `const tile_backend tile_backend_<name>` in their own folder. */
const tile_backend *tile_backend_find(const char *name);

#endif
