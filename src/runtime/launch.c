/* launch.c — tensor views, specialisations and launches on caller-owned memory
 * (include/tile.h, "tensor views and launches").
 *
 * tile_kernel_specialize checks a signature of views once (dtypes against the kernel's,
 * shapes against its symbolic sizes, strides against what the backend takes), binds the
 * sizes, and keeps the result in the kernel's table of specialisations (a hash of the
 * metadata, no source text); tile_spec_launch then only sets the data pointers and calls the
 * backend's launch. The first specialisation of a (backend, strides class) compiles (through
 * the backend's disk cache); later ones reuse the executable. */
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

static char *sb_take(tile_strbuf *sb) { return sb->data ? sb->data : tile_xstrdup(""); }

tile_view tile_view_contiguous(void *data, tile_device dev, tile_dtype dtype, int rank, const int64_t *shape) {
    tile_view v;
    memset(&v, 0, sizeof v);
    v.data = data;
    v.device = dev;
    v.dtype = dtype;
    v.rank = rank < 0 ? 0 : rank > 8 ? 8 : rank;
    int64_t s = 1;
    for (int d = v.rank - 1; d >= 0; d--) {
        v.shape[d] = shape ? shape[d] : 0;
        v.strides[d] = s;
        s *= v.shape[d];
    }
    return v;
}

int tile_view_is_contiguous(const tile_view *v) {
    int64_t s = 1;
    for (int d = v->rank - 1; d >= 0; d--) {
        if (v->shape[d] != 1 && v->strides[d] != s) return 0;
        s *= v->shape[d];
    }
    return 1;
}

/* An error at the kernel parameter's declaration: file:line:col: error: ... + line + caret. */
static void param_error(const ir_buffer *b, tile_strbuf *err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void param_error(const ir_buffer *b, tile_strbuf *err, const char *fmt, ...) {
    tile_strbuf m = {0};
    va_list ap;
    va_start(ap, fmt);
    tile_sb_vprintf(&m, fmt, ap);
    va_end(ap);
    tile_diag dg = {TILE_DIAG_ERROR, b->loc, m.data};
    tile_diag_format(&dg, err);
    tile_sb_free(&m);
}

static uint64_t view_hash(const tile_kernel *k, const tile_backend *b, const tile_view *v, int n) {
    uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)(uintptr_t)b;
#define MIX(x) (h = (h ^ (uint64_t)(x)) * 0x100000001b3ull)
    for (int i = 0; i < n; i++) {
        MIX(v[i].device.type);
        MIX(v[i].device.index);
        MIX(v[i].dtype);
        MIX(v[i].rank);
        for (int d = 0; d < v[i].rank && d < 8; d++) {
            MIX(v[i].shape[d]);
            MIX(v[i].strides[d]);
        }
    }
#undef MIX
    return h;
}

static bool same_signature(const tile_spec *sp, const tile_backend *b, const tile_view *v, int n) {
    if (sp->ts->backend != b || sp->nviews != n) return false;
    for (int i = 0; i < n; i++) {
        const tile_view *a = &sp->views[i], *c = &v[i];
        if (a->device.type != c->device.type || a->device.index != c->device.index || a->dtype != c->dtype || a->rank != c->rank) return false;
        for (int d = 0; d < a->rank; d++)
            if (a->shape[d] != c->shape[d] || a->strides[d] != c->strides[d]) return false;
    }
    return true;
}

static const ir_buffer *view_buffer(const ir_func *f, int i) { return i < f->nparams ? f->params[i].buf : f->rets[i - f->nparams]; }
static const char *view_role(const ir_func *f, int i) { return i < f->nparams ? "parameter" : "returned tensor"; }

/* Build a specialisation (k->lock not held). */
static tile_status make_spec(tile_kernel *k, const tile_backend *b, const char *pipeline, const tile_view *views, int n, uint64_t h, tile_spec **out,
                             tile_strbuf *err) {
    const ir_func *f0 = k->f;
    /* the device and the views */
    tile_device dev = {0, 0};
    bool have_dev = false, strided = false;
    for (int i = 0; i < n; i++) {
        const ir_buffer *buf = view_buffer(f0, i);
        if (!buf) continue;
        const tile_view *v = &views[i];
        if (!have_dev) dev = v->device, have_dev = true;
        else if (v->device.type != dev.type || v->device.index != dev.index) {
            char *a = tile_device_string(v->device), *c = tile_device_string(dev);
            param_error(buf, err, "%s '%s' is on %s, but the other tensors are on %s: move it with tile_memcpy_*", view_role(f0, i), buf->name, a, c);
            free(a);
            free(c);
            return TILE_ERR_USER;
        }
        if (v->dtype != buf->dtype) {
            param_error(buf, err, "%s '%s' is %s, but the tensor given is %s", view_role(f0, i), buf->name, tile_dtype_name(buf->dtype),
                        tile_dtype_name(v->dtype));
            return TILE_ERR_USER;
        }
        if (v->rank != buf->rank) {
            param_error(buf, err, "%s '%s' has %d dimension%s, but the tensor given has %d", view_role(f0, i), buf->name, buf->rank,
                        buf->rank == 1 ? "" : "s", v->rank);
            return TILE_ERR_USER;
        }
        if (v->byte_offset < 0 || (tile_dtype_bits(v->dtype) >= 8 && v->byte_offset % (tile_dtype_bits(v->dtype) / 8))) {
            param_error(buf, err, "%s '%s': byte offset %lld is not a multiple of the element size", view_role(f0, i), buf->name, (long long)v->byte_offset);
            return TILE_ERR_USER;
        }
        if (!tile_view_is_contiguous(v)) {
            if (v->dtype == TILE_DT_FP4_E2M1) {
                param_error(buf, err, "%s '%s': float4_e2m1 tensors are packed two per byte and must be contiguous", view_role(f0, i), buf->name);
                return TILE_ERR_USER;
            }
            strided = true;
        }
    }
    if (!have_dev) dev.type = b->device_type;
    if (dev.type != b->device_type) {
        char *a = tile_device_string(dev);
        tile_sb_printf(err, "target '%s' runs on %s devices, but the tensors are on %s", b->name,
                       b->device_type == TILE_DEVICE_CPU ? "cpu" : b->device_type == TILE_DEVICE_CUDA ? "cuda" : "opencl", a);
        free(a);
        return TILE_ERR_USER;
    }
    tile_status st;
    if (!rt_device_backend(dev, err, &st)) return st;
    if (!b->launch) {
        tile_sb_printf(err, "target '%s' cannot launch on caller-owned memory; use tile_run", b->name);
        return TILE_ERR_UNAVAILABLE;
    }
    /* strides the backend cannot take: an error naming the parameter */
    for (int i = 0; strided && i < n; i++) {
        const ir_buffer *buf = view_buffer(f0, i);
        if (!buf || tile_view_is_contiguous(&views[i])) continue;
        tile_strbuf why = {0};
        bool refused = b->check_strides && b->check_strides(f0, buf, views[i].shape, views[i].strides, &why);
        bool ok = b->compile_strided && !refused;
        if (!ok) {
            tile_strbuf s = {0};
            for (int d = 0; d < views[i].rank; d++) tile_sb_printf(&s, "%s%lld", d ? ", " : "", (long long)views[i].strides[d]);
            param_error(buf, err, "%s '%s' is not contiguous (strides %s): %s; make it contiguous first", view_role(f0, i), buf->name, s.data ? s.data : "",
                        why.data ? why.data : "this target takes row-major contiguous tensors only");
            tile_sb_free(&s);
            tile_sb_free(&why);
            return TILE_ERR_USER;
        }
        tile_sb_free(&why);
    }
    target_state *ts;
    void *exe;
    st = rt_prepare(k, b, pipeline, strided, &ts, &exe, err);
    if (st != TILE_OK) return st;
    const ir_func *f = ts->f;
    /* bind the sizes from the shapes */
    tile_tensor *p = tile_xcalloc((size_t)f->nparams + 1, sizeof(tile_tensor));
    tile_tensor *r = tile_xcalloc((size_t)f->nrets + 1, sizeof(tile_tensor));
    static char placeholder;
    for (int i = 0; i < n; i++) {
        const ir_buffer *buf = view_buffer(f, i);
        if (!buf) continue;
        tile_tensor *t = i < f->nparams ? &p[i] : &r[i - f->nparams];
        t->data = &placeholder;
        t->dtype = views[i].dtype;
        t->rank = views[i].rank;
        memcpy(t->shape, views[i].shape, sizeof t->shape);
    }
    int64_t *sizes = tile_xcalloc((size_t)f->nsizes + 1, sizeof(int64_t));
    st = rt_bind(f, p, f->nparams, r, f->nrets, sizes, err);
    free(p);
    free(r);
    if (st != TILE_OK) {
        free(sizes);
        return st;
    }
    tile_spec *sp = tile_xcalloc(1, sizeof *sp);
    sp->k = k;
    sp->ts = ts;
    sp->exe = exe;
    sp->strided = strided;
    sp->dev = dev;
    sp->nviews = n;
    sp->hash = h;
    sp->views = tile_xcalloc((size_t)n + 1, sizeof(tile_view));
    memcpy(sp->views, views, sizeof(tile_view) * (size_t)n);
    sp->sizes = sizes;
    sp->args = tile_xcalloc((size_t)n + 1, sizeof(tile_launch_arg));
    for (int i = 0; i < n; i++) {
        sp->views[i].data = NULL;
        sp->views[i].byte_offset = 0;
        sp->args[i].shape = sp->views[i].shape;
        sp->args[i].strides = strided && !tile_view_is_contiguous(&sp->views[i]) ? sp->views[i].strides : NULL;
    }
    pthread_mutex_init(&sp->lock, NULL);
    *out = sp;
    return TILE_OK;
}

static tile_status specialize(tile_kernel *k, const char *target, const tile_view *views, int nviews, tile_spec **out, tile_strbuf *err) {
    *out = NULL;
    if (!k) {
        tile_sb_puts(err, "kernel is NULL");
        return TILE_ERR_USER;
    }
    int need = k->f->nparams + k->f->nrets;
    if (nviews != need || (nviews && !views)) {
        tile_sb_printf(err, "kernel '%s' takes %d parameters and returns %d tensors: give %d views (one per parameter, then one per returned tensor), got %d",
                       k->f->name, k->f->nparams, k->f->nrets, need, nviews);
        return TILE_ERR_USER;
    }
    /* the device type of the first tensor picks the backend for "auto" */
    int devtype = 0;
    for (int i = 0; i < nviews && !devtype; i++)
        if (view_buffer(k->f, i)) devtype = views[i].device.type;
    const tile_backend *b;
    const char *pipeline;
    if (!target || !strcmp(target, "auto")) {
        b = rt_auto_backend(devtype ? devtype : TILE_DEVICE_CPU);
        if (!b) {
            tile_sb_printf(err, "no target is available for device type %d", devtype);
            return TILE_ERR_UNAVAILABLE;
        }
        pipeline = b->pipeline;
    } else {
        const char *plus = strchr(target, '+');
        char name[64];
        size_t n = plus ? (size_t)(plus - target) : strlen(target);
        if (n >= sizeof name) n = sizeof name - 1;
        memcpy(name, target, n);
        name[n] = 0;
        b = tile_backend_find(name);
        const tile_backend *pb = plus ? tile_backend_find(plus + 1) : b;
        if (!b || !pb) {
            tile_sb_printf(err, "unknown target '%s'", target);
            return TILE_ERR_USER;
        }
        pipeline = pb->pipeline;
        tile_strbuf why = {0};
        if (b->available && !b->available(&why)) {
            tile_sb_printf(err, "target '%s' is not available here: %s", target, why.data ? why.data : "no device");
            tile_sb_free(&why);
            return TILE_ERR_UNAVAILABLE;
        }
        tile_sb_free(&why);
    }
    uint64_t h = view_hash(k, b, views, nviews) ^ (uint64_t)(uintptr_t)pipeline;
    pthread_mutex_lock(&k->lock);
    for (tile_spec *sp = k->specs[h % TILE_SPEC_BUCKETS]; sp; sp = sp->next)
        if (sp->hash == h && !strcmp(sp->ts->pipeline, pipeline) && same_signature(sp, b, views, nviews)) {
            pthread_mutex_unlock(&k->lock);
            __atomic_add_fetch(&rt_stat_spec_hits, 1, __ATOMIC_RELAXED);
            *out = sp;
            return TILE_OK;
        }
    pthread_mutex_unlock(&k->lock);
    tile_spec *sp = NULL;
    tile_status st = make_spec(k, b, pipeline, views, nviews, h, &sp, err);
    if (st != TILE_OK) return st;
    pthread_mutex_lock(&k->lock);
    /* another thread may have made the same one meanwhile: keep the first */
    for (tile_spec *o = k->specs[h % TILE_SPEC_BUCKETS]; o; o = o->next)
        if (o->hash == h && !strcmp(o->ts->pipeline, pipeline) && same_signature(o, b, views, nviews)) {
            pthread_mutex_unlock(&k->lock);
            pthread_mutex_destroy(&sp->lock);
            free(sp->views);
            free(sp->sizes);
            free(sp->args);
            free(sp);
            *out = o;
            return TILE_OK;
        }
    sp->next = k->specs[h % TILE_SPEC_BUCKETS];
    k->specs[h % TILE_SPEC_BUCKETS] = sp;
    pthread_mutex_unlock(&k->lock);
    __atomic_add_fetch(&rt_stat_specs, 1, __ATOMIC_RELAXED);
    *out = sp;
    return TILE_OK;
}

tile_status tile_kernel_specialize(tile_kernel *k, const char *target, const tile_view *views, int nviews, tile_spec **out, char **error) {
    if (error) *error = NULL;
    if (!out) return TILE_ERR_USER;
    tile_strbuf err = {0};
    tile_status st = specialize(k, target, views, nviews, out, &err);
    if (st != TILE_OK && error) *error = sb_take(&err);
    else tile_sb_free(&err);
    return st;
}

static tile_status spec_launch(tile_spec *sp, tile_stream *s, void *const *data, const double *scalars, tile_strbuf *err) {
    if (!sp || !s) {
        tile_sb_puts(err, !sp ? "tile_spec_launch: specialisation is NULL" : "tile_spec_launch: stream is NULL");
        return TILE_ERR_USER;
    }
    if (s->dev.type != sp->dev.type || s->dev.index != sp->dev.index) {
        char *a = tile_device_string(s->dev), *c = tile_device_string(sp->dev);
        tile_sb_printf(err, "the stream is on %s, but the tensors are on %s", a, c);
        free(a);
        free(c);
        return TILE_ERR_USER;
    }
    const ir_func *f = sp->ts->f;
    int n = sp->nviews;
    tile_launch_arg stack_args[16];
    tile_launch_arg *args = n <= 16 ? stack_args : tile_xcalloc((size_t)n, sizeof(tile_launch_arg));
    for (int i = 0; i < n; i++) {
        args[i] = sp->args[i];
        args[i].data = data ? data[i] : NULL;
        args[i].byte_offset = 0;
        const ir_buffer *buf = view_buffer(f, i);
        if (buf && !args[i].data) {
            size_t elems = 1;
            for (int d = 0; d < buf->rank; d++) elems *= (size_t)sp->views[i].shape[d];
            if (elems) {
                param_error(buf, err, "%s '%s' has no data", view_role(f, i), buf->name);
                if (args != stack_args) free(args);
                return TILE_ERR_USER;
            }
        }
    }
    double t0 = rt_tracing() ? tile_now() : 0;
    pthread_mutex_lock(&sp->lock);
    int rc = sp->ts->backend->launch(sp->exe, f, sp->sizes, args, scalars, sp->dev.index, s->native, &sp->state, err);
    pthread_mutex_unlock(&sp->lock);
    if (args != stack_args) free(args);
    __atomic_add_fetch(&rt_stat_launches, 1, __ATOMIC_RELAXED);
    if (!rc && sp->ts->backend->check_state) rt_stream_note(s, sp);
    if (rt_tracing()) {
        char a[512];
        int o = snprintf(a, sizeof a, "\"kernel\": \"%s\", \"target\": \"%s\", \"sizes\": [", f->name, sp->ts->backend->name);
        for (int i = 0; i < f->nsizes && o < 400; i++) o += snprintf(a + o, sizeof a - (size_t)o, "%s%lld", i ? ", " : "", (long long)sp->sizes[i]);
        snprintf(a + o, sizeof a - (size_t)o, "]%s", sp->strided ? ", \"strided\": true" : "");
        rt_trace_span(f->name, "launch", t0, tile_now() - t0, a);
    }
    return rc ? TILE_ERR_USER : TILE_OK;
}

tile_status tile_spec_launch(tile_spec *sp, tile_stream *s, void *const *data, const double *scalars, char **error) {
    if (error) *error = NULL;
    tile_strbuf err = {0};
    tile_status st = spec_launch(sp, s, data, scalars, &err);
    if (st != TILE_OK && error) *error = sb_take(&err);
    else tile_sb_free(&err);
    return st;
}

tile_status tile_launch(tile_kernel *k, tile_stream *s, const tile_view *views, int nviews, const double *scalars, char **error) {
    if (error) *error = NULL;
    tile_strbuf err = {0};
    tile_status st;
    tile_spec *sp = NULL;
    if (!s) {
        tile_sb_puts(&err, "tile_launch: stream is NULL");
        st = TILE_ERR_USER;
    } else {
        /* the stream's device picks the backend when the views do not */
        st = specialize(k, NULL, views, nviews, &sp, &err);
    }
    if (st == TILE_OK) {
        void *stack[16], **data = nviews <= 16 ? stack : tile_xcalloc((size_t)nviews, sizeof(void *));
        for (int i = 0; i < nviews; i++) data[i] = views[i].data ? (char *)views[i].data + views[i].byte_offset : NULL;
        /* OpenCL buffers are handles: the offset cannot be added to them */
        bool handles = sp->dev.type == TILE_DEVICE_OPENCL;
        for (int i = 0; handles && i < nviews; i++)
            if (views[i].byte_offset) {
                tile_sb_printf(&err, "argument %d: OpenCL buffers are handles; views with a byte offset are not supported there", i);
                st = TILE_ERR_USER;
            }
        if (handles)
            for (int i = 0; i < nviews; i++) data[i] = views[i].data;
        if (st == TILE_OK) st = spec_launch(sp, s, data, scalars, &err);
        if (data != stack) free(data);
    }
    if (st != TILE_OK && error) *error = sb_take(&err);
    else tile_sb_free(&err);
    return st;
}

int rt_spec_check(tile_spec *sp, tile_strbuf *err) {
    if (!sp->ts->backend->check_state || !sp->state) return 0;
    pthread_mutex_lock(&sp->lock);
    int rc = sp->ts->backend->check_state(sp->exe, sp->ts->f, sp->state, err);
    pthread_mutex_unlock(&sp->lock);
    return rc;
}

void rt_kernel_free_specs(tile_kernel *k) {
    for (int i = 0; i < TILE_SPEC_BUCKETS; i++) {
        tile_spec *sp = k->specs[i];
        while (sp) {
            tile_spec *next = sp->next;
            if (sp->state && sp->ts->backend->release_state) sp->ts->backend->release_state(sp->exe, sp->state);
            pthread_mutex_destroy(&sp->lock);
            free(sp->views);
            free(sp->sizes);
            free(sp->args);
            free(sp);
            sp = next;
        }
        k->specs[i] = NULL;
    }
}
