/* cache.c — first-use compilation of the operators' kernels and the cache that holds them.
 *
 * A kernel is identified by its embedded source, its factory and the factory's compile-time
 * values (dtypes, the shape class: rank after collapsing, broadcast masks, row buckets);
 * symbolic sizes stay symbolic, so one compiled kernel serves every shape of its class. The
 * module compiled from TileLang is shared by all targets: tile_run lowers and compiles it for
 * a target on the first run there and keeps that in the kernel (runtime.c), so the cache key
 * (op, shape class, dtypes, target) is this key plus the target state inside the kernel.
 *
 * This file is the only one that compiles or launches: moving the operators onto device
 * tensors and streams changes top_kernel_run, not the operators.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ops_int.h"

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

bool top_kernel_run(top_ctx *c, top_kernel *k, tile_tensor *params, int nparams, const double *scalars) {
    tile_run_options opt = {-1, -1, -1, 0, scalars};
    char *err = NULL;
    unsigned bit = target_bit(c->target);
    tile_status st;
    if (bit && !(__atomic_load_n(&k->prepared, __ATOMIC_ACQUIRE) & bit)) {
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
