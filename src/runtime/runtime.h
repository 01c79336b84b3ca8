/* runtime.h — internals of the public API (include/tile.h) shared by the runtime files.
 *
 * In:  source text and -D bindings (compile); host tensors (run).
 * Out: tile_module / tile_kernel handles; results written into tensors.
 */
#ifndef TILE_RUNTIME_H
#define TILE_RUNTIME_H

#include <pthread.h>

#include "../core/core.h"
#include "../front/front.h"
#include "../ir/ir.h"

#include "../sema/sema.h"
#include "backend.h"

/* A kernel prepared for one target and pipeline: its own copy of the IR (lowered again from
 * the AST, then rewritten by the pipeline) and the backend's executables (row-major, and
 * strided where the backend takes strides), each compiled on first use. */
typedef struct target_state {
    const tile_backend *backend;
    const char *pipeline;
    ir_module *mod;
    ir_func *f;
    void *exe, *exe_strided;
} target_state;

/* A specialisation (include/tile.h, tile_spec): target, device, dtypes, shapes and the
 * strides class of the views, with the sizes bound once and the backend's launch state. */
struct tile_spec {
    struct tile_kernel *k;
    target_state *ts;
    void *exe;
    bool strided;
    tile_device dev;
    int nviews;
    uint64_t hash;
    tile_view *views;            /* the signature (data NULL) */
    int64_t *sizes;
    tile_launch_arg *args;       /* shapes/strides into views; data set per launch */
    pthread_mutex_t lock;        /* the backend state's creation and use */
    void *state;
    struct tile_spec *next;      /* the kernel's hash chain */
};

enum { TILE_SPEC_BUCKETS = 64 };

struct tile_kernel {
    struct tile_module *m;
    ir_func *f;                 /* as sema produced it: what the interpreter runs */
    pthread_mutex_t lock;       /* targets and specs */
    target_state **targets;
    int ntargets;
    tile_spec *specs[TILE_SPEC_BUCKETS];
    tb_options opts;            /* the kernel's compile options: the source's pass_configs, then
                                 * tile_module_set_option / tile_kernel_set_option */
};

struct tile_module {
    tile_source *src;
    tile_arena ast_arena;
    ast_module *ast;
    ir_module *ir;
    sema_define *defines;       /* the -D bindings, kept to lower again for each target */
    int ndefines;
    pthread_mutex_t lock;       /* lowering again from the AST */
    struct tile_kernel *kernels;
    int nkernels;
};

struct tile_stream {
    tile_device dev;
    const tile_backend *b;      /* owner of the device type */
    void *native;
    bool owned;
    pthread_mutex_t lock;
    tile_spec **pending;        /* launched since the last sync, error records to read */
    int npending, cap;
};

/* device.c */
const tile_backend *rt_device_backend(tile_device d, tile_strbuf *err, tile_status *st);
tile_status rt_stream_new(tile_device dev, void *native, bool owned, tile_stream **out, char **error);
void rt_stream_note(tile_stream *s, tile_spec *sp);
int rt_size_class(size_t n, size_t *cap);
/* launch.c */
int rt_spec_check(tile_spec *sp, tile_strbuf *err);
void rt_kernel_free_specs(tile_kernel *k);
/* runtime.c: the compiled state of k for backend b and pipeline (made once, under k->lock) */
tile_status rt_prepare(tile_kernel *k, const tile_backend *b, const char *pipeline, bool strided, target_state **out, void **exe, tile_strbuf *err);
const tile_backend *rt_auto_backend(int device_type);
extern int64_t rt_stat_compiles, rt_stat_specs, rt_stat_spec_hits, rt_stat_launches;
/* trace.c */
bool rt_tracing(void);
void rt_trace_span(const char *name, const char *cat, double t0, double dur, const char *args);

/* Evaluate an integer size expression given the values of f->sizes (false if unbound). */
bool rt_eval_size(const ir_expr *e, const int64_t *sizes, const bool *bound, const ir_func *f, int64_t *out);
/* Bind f->sizes from the tensors given, check shapes, fill in the shapes of the others. */
tile_status rt_bind(const ir_func *f, tile_tensor *params, int nparams, tile_tensor *rets, int nrets, int64_t *sizes, tile_strbuf *err);

#endif
