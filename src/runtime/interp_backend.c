/* interp_backend.c — the reference interpreter (src/interp) as a target like the others:
 * "interp" runs the IR as sema produced it (the pipeline "interp" has no passes);
 * "interp+PIPELINE" (e.g. interp+cpu) runs the IR a target's TileOpt pipeline produced, which
 * tests the passes without any code generator. Host memory only; no generated source. */
#include <stdlib.h>
#include <string.h>

#include "../interp/interp.h"
#include "runtime.h"

static bool interp_available(tile_strbuf *why) { return true; }
static void interp_device_name(tile_strbuf *out) { tile_sb_puts(out, "reference interpreter"); }

/* The interpreter needs no compiled object: the executable is the function itself. */
static int interp_compile(const ir_func *f, void **exe, tile_strbuf *err) {
    *exe = (void *)f;
    return 0;
}

static void fill_scalars(const ir_func *f, const double *scalars, double *sf, int64_t *si) {
    for (int i = 0; i < f->nparams; i++) {
        if (f->params[i].buf || !scalars) continue;
        tile_dtype dt = f->params[i].var->dtype;
        sf[i] = scalars[i];
        si[i] = tile_f64_to_int(dt == TILE_DT_BOOL || tile_dtype_is_float(dt) ? TILE_DT_I64 : dt, scalars[i]);
        if (dt == TILE_DT_BOOL) si[i] = scalars[i] != 0;
    }
}

static void options(const tile_run_options *opt, interp_options *io) {
    interp_options_default(io);
    if (!opt) return;
    if (opt->check_bounds >= 0) io->check_bounds = opt->check_bounds != 0;
    if (opt->check_uninit >= 0) io->check_uninit = opt->check_uninit != 0;
    if (opt->check_races >= 0) io->check_races = opt->check_races != 0;
    io->f64_mode = opt->f64_reference != 0;
}

static int interp_run_host(void *exe, const ir_func *f, const int64_t *sizes, tile_tensor *params, tile_tensor *rets, const double *scalars,
                           const tile_run_options *opt, tile_strbuf *err) {
    int np = f->nparams, nr = f->nrets;
    interp_tensor *ip = tile_xcalloc((size_t)np + 1, sizeof(interp_tensor));
    interp_tensor *ir = tile_xcalloc((size_t)nr + 1, sizeof(interp_tensor));
    double *sf = tile_xcalloc((size_t)np + 1, sizeof(double));
    int64_t *si = tile_xcalloc((size_t)np + 1, sizeof(int64_t));
    for (int i = 0; i < np; i++)
        if (f->params[i].buf) {
            ip[i].data = params[i].data;
            memcpy(ip[i].shape, params[i].shape, sizeof params[i].shape);
        }
    fill_scalars(f, scalars, sf, si);
    for (int i = 0; i < nr; i++) {
        ir[i].data = rets[i].data;
        memcpy(ir[i].shape, rets[i].shape, sizeof rets[i].shape);
    }
    interp_options io;
    options(opt, &io);
    interp_args a = {sizes, sf, si, ip, ir};
    int rc = interp_run(f, &a, &io, err);
    free(ip);
    free(ir);
    free(sf);
    free(si);
    return rc ? 1 : 0;
}

/* Launches on cpu memory: views must be row-major (the interpreter indexes row-major). */
static int interp_check_strides(const ir_func *f, const ir_buffer *b, const int64_t *shape, const int64_t *strides, tile_strbuf *err) {
    tile_sb_puts(err, "the interpreter takes row-major contiguous tensors only");
    return 1;
}

static int interp_launch(void *exe, const ir_func *f, const int64_t *sizes, const tile_launch_arg *args, const double *scalars, int device_index,
                         void *stream, void **state, tile_strbuf *err) {
    int np = f->nparams, nr = f->nrets;
    tile_tensor *p = tile_xcalloc((size_t)np + 1, sizeof(tile_tensor));
    tile_tensor *r = tile_xcalloc((size_t)nr + 1, sizeof(tile_tensor));
    for (int i = 0; i < np + nr; i++) {
        const ir_buffer *b = i < np ? f->params[i].buf : f->rets[i - np];
        if (!b) continue;
        tile_tensor *t = i < np ? &p[i] : &r[i - np];
        t->data = (char *)args[i].data + args[i].byte_offset;
        t->dtype = b->dtype;
        t->rank = b->rank;
        memcpy(t->shape, args[i].shape, sizeof(int64_t) * (size_t)b->rank);
    }
    int rc = interp_run_host(exe, f, sizes, p, r, scalars, NULL, err);
    free(p);
    free(r);
    return rc;
}

const tile_backend tile_backend_interp = {
    .name = "interp",
    .doc = "the reference interpreter (bounds, uninitialised-read and race checks)",
    .auto_rank = 1,
    .device_type = TILE_DEVICE_CPU,
    .host_only = true,
    .f64_reference = true,
    .available = interp_available,
    .device_name = interp_device_name,
    .pipeline = "interp",
    .compile = interp_compile,
    .check_strides = interp_check_strides,
    .run = interp_run_host,
    .launch = interp_launch,
};
