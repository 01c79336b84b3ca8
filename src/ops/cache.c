/* cache.c — first-use compilation of the operators' kernels and the cache that holds them.
 *
 * A kernel is identified by its embedded source, its factory and the factory's compile-time
 * values (dtypes, the shape class: rank after collapsing, broadcast masks, row buckets);
 * symbolic sizes stay symbolic, so one compiled kernel serves every shape of its class. The
 * module compiled from TileLang is shared by all targets: tile_run lowers and compiles it for
 * a target on the first run there and keeps that in the kernel (runtime.c), so the cache key
 * (op, shape class, dtypes, target) is this key plus the target state inside the kernel.
 *
 * This file is the only one that compiles or launches. It also holds the calling thread's
 * operator device (tile_op_set_device): with one set, tensors are memory on that device,
 * top_kernel_run enqueues kernels on its stream through a specialisation (tile_view per
 * parameter, no copies), and allocations of outputs and temporaries come from the device's
 * pool. The few host-side steps of the operators (index checks, small host-built operands)
 * go through top_host_copy / top_stage, which copy only where the data is not host memory.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ops_int.h"

/* ---------- the calling thread's operator device ---------- */
typedef struct top_device_ctx {
    int on;            /* tile_op_set_device was called (outputs from the pool) */
    int remote;        /* the data are not host memory (a non-cpu device) */
    tile_device dev;
    tile_stream *stream;
} top_device_ctx;
static _Thread_local top_device_ctx g_dev;

tile_status tile_op_set_device(tile_device dev, tile_stream *stream, char **error) {
    if (error) *error = NULL;
    tile_strbuf e = {0};
    if (dev.type == TILE_DEVICE_OPENCL)
        tile_sb_printf(&e, "tile_op_set_device: dev: opencl buffers are handles, and the operators address parts of tensors by pointer: "
                           "pass host tensors for opencl");
    else if (dev.type != TILE_DEVICE_CPU && dev.type != TILE_DEVICE_CUDA)
        tile_sb_printf(&e, "tile_op_set_device: dev: unknown device type %d", (int)dev.type);
    else if (dev.type == TILE_DEVICE_CUDA && !stream)
        tile_sb_printf(&e, "tile_op_set_device: stream: NULL; a cuda device needs a stream (tile_stream_wrap(dev, NULL) is its default one)");
    else if (stream) {
        tile_device sd = tile_stream_device(stream);
        if (sd.type != dev.type || (dev.type != TILE_DEVICE_CPU && sd.index != dev.index)) {
            char *a = tile_device_string(sd), *b = tile_device_string(dev);
            tile_sb_printf(&e, "tile_op_set_device: stream: it is a stream of %s, not of dev %s", a, b);
            tile_free(a);
            tile_free(b);
        }
    }
    if (e.data) {
        if (error) *error = e.data;
        else tile_sb_free(&e);
        return TILE_ERR_USER;
    }
    g_dev.on = 1;
    g_dev.remote = dev.type != TILE_DEVICE_CPU;
    g_dev.dev = dev;
    g_dev.stream = stream;
    return TILE_OK;
}

void tile_op_reset_device(void) { memset(&g_dev, 0, sizeof g_dev); }

int tile_op_get_device(tile_device *dev, tile_stream **stream) {
    if (dev) *dev = g_dev.on ? g_dev.dev : (tile_device){TILE_DEVICE_CPU, 0};
    if (stream) *stream = g_dev.on ? g_dev.stream : NULL;
    return g_dev.on;
}

bool top_data_remote(void) { return g_dev.remote != 0; }

const char *top_device_target(void) { return g_dev.remote ? "cuda" : NULL; }

void top_free(tile_tensor *t) {
    if (!t) return;
    if (g_dev.on && t->data) {
        tile_buffer_free(g_dev.dev, t->data);
        t->data = NULL;
    } else
        tile_tensor_free(t);
}

void tile_op_tensor_free(tile_tensor *t) { top_free(t); }

bool top_alloc(top_ctx *c, const char *what, tile_tensor *t, bool zero) {
    size_t bytes = tile_tensor_bytes(t);
    if (!g_dev.on) {
        t->data = calloc(1, bytes ? bytes : 1);
        if (!t->data) return top_fail(c, TILE_ERR_USER, "%s: out of memory allocating %zu bytes", what, bytes);
        return true;
    }
    char *err = NULL;
    void *p = NULL;
    if (tile_buffer_alloc(g_dev.dev, bytes ? bytes : 1, &p, &err) != TILE_OK) {
        top_fail(c, TILE_ERR_USER, "%s: allocating %zu bytes: %s", what, bytes, err ? err : "failed");
        tile_free(err);
        return false;
    }
    t->data = p;
    if (zero) {
        if (!g_dev.remote) memset(p, 0, bytes);
        else if (!top_fill(c, t, tile_op_int(0))) {
            tile_buffer_free(g_dev.dev, p);
            t->data = NULL;
            return false;
        }
    }
    return true;
}

bool top_host_copy(top_ctx *c, const char *arg, const tile_tensor *t, tile_tensor *h) {
    *h = *t;
    if (!g_dev.remote) return true;
    size_t bytes = tile_tensor_bytes(t);
    h->data = malloc(bytes ? bytes : 1);
    if (!h->data) return top_fail(c, TILE_ERR_USER, "%s: out of memory copying %zu bytes to the host", arg, bytes);
    char *err = NULL;
    tile_status st = bytes ? tile_memcpy_to_host(g_dev.stream, h->data, t->data, 0, bytes, &err) : TILE_OK;
    if (st == TILE_OK && bytes) st = tile_stream_sync(g_dev.stream, &err);
    if (st != TILE_OK) {
        top_fail(c, st, "%s: copying it to the host: %s", arg, err ? err : "failed");
        tile_free(err);
        free(h->data);
        h->data = NULL;
        return false;
    }
    return true;
}

void top_host_release(tile_tensor *h, const tile_tensor *t) {
    if (h->data && h->data != t->data) free(h->data);
    h->data = NULL;
}

bool top_stage(top_ctx *c, tile_tensor *t) {
    if (!g_dev.remote) return true;
    if (c->nstaged >= (int)(sizeof c->staged / sizeof c->staged[0]))
        return top_fail(c, TILE_ERR_INTERNAL, "internal error: too many staged operands in one call");
    tile_tensor d = *t;
    if (!top_alloc(c, "a staged operand", &d, false)) return false;
    size_t bytes = tile_tensor_bytes(t);
    char *err = NULL;
    /* from pageable memory the copy has read the host bytes when it returns */
    if (bytes && tile_memcpy_to_device(g_dev.stream, d.data, 0, t->data, bytes, &err) != TILE_OK) {
        top_fail(c, TILE_ERR_USER, "copying an operand to %s: %s", "the device", err ? err : "failed");
        tile_free(err);
        tile_buffer_free(g_dev.dev, d.data);
        return false;
    }
    c->staged[c->nstaged++] = d.data;
    t->data = d.data;
    return true;
}

bool top_stage_scalar(top_ctx *c, tile_tensor *t, tile_op_scalar v) {
    if (!g_dev.remote) return true;
    /* the fill kernel takes its value as a double: exact for floats and for integers up to 2^53 */
    bool exact = v.kind == TILE_DT_F64 || (v.i <= ((int64_t)1 << 53) && v.i >= -((int64_t)1 << 53));
    if (!exact) return top_stage(c, t);
    if (c->nstaged >= (int)(sizeof c->staged / sizeof c->staged[0]))
        return top_fail(c, TILE_ERR_INTERNAL, "internal error: too many staged operands in one call");
    tile_tensor d = *t;
    if (!top_alloc(c, "a staged operand", &d, false)) return false;
    c->staged[c->nstaged++] = d.data;
    if (!top_fill(c, &d, v)) return false;
    t->data = d.data;
    return true;
}

void top_release_staged(top_ctx *c) {
    /* the pool hands a freed buffer to later work on the same stream only after this call's */
    for (int i = 0; i < c->nstaged; i++) tile_buffer_free(g_dev.dev, c->staged[i]);
    c->nstaged = 0;
}

typedef struct top_source {
    const char *name;
    const char *text;
} top_source;
#include "ops_sources.h"

const char *top_source_text(const char *name) {
    for (size_t i = 0; i < sizeof top_sources / sizeof top_sources[0]; i++)
        if (!strcmp(top_sources[i].name, name)) return top_sources[i].text;
    return NULL;
}

struct top_kernel {
    char *key;
    tile_module *mod;
    tile_kernel *k;
    unsigned prepared;             /* targets whose first run (which compiles for them) is done */
    pthread_mutex_t first_run;     /* serialises first runs on a target */
    struct top_kernel *next;
};

enum { NBUCKETS = 1024 };
static top_kernel *g_buckets[NBUCKETS];
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int64_t g_kernels, g_hits, g_misses;
static double g_compile_s;

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* ---------- compile-time definitions ---------- */
void top_defs_init(top_defs *d) { memset(d, 0, sizeof *d); }

static void def_add(top_defs *d, const char *name, const char *value) {
    size_t need = strlen(name) + strlen(value) + 2;
    TILE_ASSERT(d->n < (int)(sizeof d->v / sizeof d->v[0]) && d->used + need <= sizeof d->buf, "too many kernel definitions");
    char *p = d->buf + d->used;
    snprintf(p, need, "%s=%s", name, value);
    d->v[d->n++] = p;
    d->used += need;
}

void top_def_int(top_defs *d, const char *name, int64_t v) {
    char b[32];
    snprintf(b, sizeof b, "%lld", (long long)v);
    def_add(d, name, b);
}
void top_def_str(top_defs *d, const char *name, const char *v) { def_add(d, name, v); }
void top_def_dt(top_defs *d, const char *name, tile_dtype dt) { def_add(d, name, tile_dtype_name(dt)); }

/* ---------- the cache ---------- */
bool top_kernel_get(top_ctx *c, const char *src, const char *factory, const top_defs *defs, top_kernel **out) {
    tile_strbuf key = {0};
    tile_sb_printf(&key, "%s|%s", src, factory);
    for (int i = 0; i < defs->n; i++) tile_sb_printf(&key, "|%s", defs->v[i]);
    uint64_t h = hash_str(key.data) % NBUCKETS;
    pthread_mutex_lock(&g_lock);
    for (top_kernel *e = g_buckets[h]; e; e = e->next)
        if (!strcmp(e->key, key.data)) {
            g_hits++;
            pthread_mutex_unlock(&g_lock);
            tile_sb_free(&key);
            *out = e;
            return true;
        }
    /* compiled under the lock: first uses are rare, and two threads never compile one kernel */
    const char *text = top_source_text(src);
    if (!text) {
        pthread_mutex_unlock(&g_lock);
        tile_sb_free(&key);
        return top_fail(c, TILE_ERR_INTERNAL, "internal error: the operator source '%s' is not embedded in this libtile", src);
    }
    tile_strbuf name = {0};
    tile_sb_printf(&name, "src/ops/%s", src);
    double t0 = tile_now();
    tile_module *m = NULL;
    char *diag = NULL;
    tile_status st = tile_compile_string_kernel(name.data, text, factory, defs->v, defs->n, &m, &diag);
    double dt = tile_now() - t0;
    tile_kernel *k = st == TILE_OK ? tile_module_kernel(m, NULL) : NULL;
    if (!k) {
        pthread_mutex_unlock(&g_lock);
        /* the operator layer chose these definitions: a kernel that does not compile is our bug */
        top_fail(c, TILE_ERR_INTERNAL, "internal error: the kernel %s of %s did not compile with %s:\n%s", factory, name.data, key.data,
                 diag ? diag : "(no kernel)");
        tile_free(diag);
        tile_module_free(m);
        tile_sb_free(&name);
        tile_sb_free(&key);
        return false;
    }
    tile_free(diag);
    top_kernel *e = tile_xcalloc(1, sizeof *e);
    e->key = key.data;
    e->mod = m;
    e->k = k;
    pthread_mutex_init(&e->first_run, NULL);
    e->next = g_buckets[h];
    g_buckets[h] = e;
    g_kernels++;
    g_misses++;
    g_compile_s += dt;
    pthread_mutex_unlock(&g_lock);
    tile_log(TILE_LOG_INFO, "ops: compiled %s in %.1f ms", key.data, dt * 1e3);
    tile_sb_free(&name);
    *out = e;
    return true;
}

static unsigned target_bit(const char *t) {
    return !strcmp(t, "interp") ? TOPT_INTERP : !strcmp(t, "cpu") ? TOPT_CPU : !strcmp(t, "opencl") ? TOPT_OPENCL
         : !strcmp(t, "cuda") ? TOPT_CUDA : 0;
}

/* On the operator device: one view per parameter over the device pointers, a specialisation
 * for this signature (found in memory after the first), and a launch on the stream. */
static tile_status run_on_device(top_kernel *k, const char *target, tile_tensor *params, int nparams, const double *scalars, char **err) {
    enum { MAXP = 32 };
    if (nparams > MAXP) {
        *err = tile_xstrdup("internal error: a kernel with more than 32 parameters");
        return TILE_ERR_INTERNAL;
    }
    tile_view v[MAXP];
    void *data[MAXP];
    for (int i = 0; i < nparams; i++) {
        const tile_tensor *p = &params[i];
        v[i] = tile_view_contiguous(p->data, g_dev.dev, p->dtype ? p->dtype : TILE_DT_F32, p->rank, p->shape);
        data[i] = p->data;
    }
    tile_spec *sp = NULL;
    tile_status st = tile_kernel_specialize(k->k, target, v, nparams, &sp, err);
    if (st == TILE_OK) st = tile_spec_launch(sp, g_dev.stream, data, scalars, err);
    return st;
}

bool top_kernel_run(top_ctx *c, top_kernel *k, tile_tensor *params, int nparams, const double *scalars) {
    tile_run_options opt = {-1, -1, -1, 0, scalars};
    char *err = NULL;
    unsigned bit = target_bit(c->target);
    tile_status st;
    if (g_dev.remote) {
        if (!(__atomic_load_n(&k->prepared, __ATOMIC_ACQUIRE) & bit)) {
            pthread_mutex_lock(&k->first_run);
            st = run_on_device(k, c->target, params, nparams, scalars, &err);
            if (st == TILE_OK) __atomic_or_fetch(&k->prepared, bit, __ATOMIC_RELEASE);
            pthread_mutex_unlock(&k->first_run);
        } else
            st = run_on_device(k, c->target, params, nparams, scalars, &err);
    } else if (bit && !(__atomic_load_n(&k->prepared, __ATOMIC_ACQUIRE) & bit)) {
        pthread_mutex_lock(&k->first_run);
        st = tile_run(k->k, c->target, params, nparams, NULL, 0, &opt, &err);
        if (st == TILE_OK) __atomic_or_fetch(&k->prepared, bit, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&k->first_run);
    } else
        st = tile_run(k->k, c->target, params, nparams, NULL, 0, &opt, &err);
    if (st != TILE_OK) {
        top_fail(c, st, "%s", err ? err : "the kernel failed");
        tile_free(err);
        return false;
    }
    return true;
}

void tile_op_cache_get_stats(tile_op_cache_stats *out) {
    pthread_mutex_lock(&g_lock);
    out->kernels = g_kernels;
    out->hits = g_hits;
    out->misses = g_misses;
    out->compile_s = g_compile_s;
    pthread_mutex_unlock(&g_lock);
}

void tile_op_cache_clear(void) {
    pthread_mutex_lock(&g_lock);
    for (int b = 0; b < NBUCKETS; b++) {
        top_kernel *e = g_buckets[b];
        while (e) {
            top_kernel *n = e->next;
            tile_module_free(e->mod);
            pthread_mutex_destroy(&e->first_run);
            free(e->key);
            free(e);
            e = n;
        }
        g_buckets[b] = NULL;
    }
    g_kernels = 0;
    pthread_mutex_unlock(&g_lock);
}
