/* device.c — devices, streams, events and the caching pool of device memory (include/tile.h,
 * "devices" to "device memory"). The backend that owns a device type supplies its raw
 * operations (tile_device_ops in backend.h); everything here is shared by all of them. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "runtime.h"

static char *sb_take(tile_strbuf *sb) { return sb->data ? sb->data : tile_xstrdup(""); }
static tile_status fail(char **error, tile_strbuf *sb, tile_status st) {
    if (error) *error = sb_take(sb);
    else tile_sb_free(sb);
    return st;
}
static tile_status failf(char **error, tile_status st, const char *fmt, const char *a) {
    tile_strbuf sb = {0};
    tile_sb_printf(&sb, fmt, a);
    return fail(error, &sb, st);
}

static const char *type_name(int type) {
    return type == TILE_DEVICE_CPU ? "cpu" : type == TILE_DEVICE_CUDA ? "cuda" : type == TILE_DEVICE_OPENCL ? "opencl" : NULL;
}

/* ---------- devices ---------- */
tile_status tile_device_parse(const char *name, tile_device *out, char **error) {
    if (error) *error = NULL;
    if (!out) return TILE_ERR_USER;
    out->type = 0;
    out->index = 0;
    if (!name) return failf(error, TILE_ERR_USER, "%s", "device name is NULL");
    size_t n = strcspn(name, ":");
    static const int types[] = {TILE_DEVICE_CPU, TILE_DEVICE_CUDA, TILE_DEVICE_OPENCL};
    for (int i = 0; i < 3; i++) {
        const char *t = type_name(types[i]);
        if (strlen(t) != n || strncmp(name, t, n)) continue;
        long idx = 0;
        if (name[n] == ':') {
            char *end;
            idx = strtol(name + n + 1, &end, 10);
            if (end == name + n + 1 || *end || idx < 0 || idx > 1 << 20)
                return failf(error, TILE_ERR_USER, "bad device '%s': expected TYPE or TYPE:INDEX (cpu, cuda:0, opencl:0)", name);
        }
        if (types[i] == TILE_DEVICE_CPU && idx != 0) return failf(error, TILE_ERR_USER, "bad device '%s': there is one cpu device, cpu:0", name);
        out->type = types[i];
        out->index = (int32_t)idx;
        return TILE_OK;
    }
    return failf(error, TILE_ERR_USER, "unknown device '%s' (devices: cpu, cuda:N, opencl:N)", name);
}

char *tile_device_string(tile_device d) {
    tile_strbuf sb = {0};
    const char *t = type_name(d.type);
    if (!t) tile_sb_printf(&sb, "device-type-%d:%d", (int)d.type, (int)d.index);
    else if (d.type == TILE_DEVICE_CPU) tile_sb_puts(&sb, "cpu");
    else tile_sb_printf(&sb, "%s:%d", t, (int)d.index);
    return sb_take(&sb);
}

/* The backend owning d's memory, checked usable and the index valid; else NULL + message. */
const tile_backend *rt_device_backend(tile_device d, tile_strbuf *err, tile_status *st) {
    const tile_backend *b = tile_backend_for_device(d.type);
    *st = TILE_OK;
    if (!b) {
        tile_sb_printf(err, "unknown device type %d (devices: cpu, cuda:N, opencl:N)", (int)d.type);
        *st = TILE_ERR_USER;
        return NULL;
    }
    tile_strbuf why = {0};
    if (b->available && !b->available(&why)) {
        tile_sb_printf(err, "device %s is not available here: %s", type_name(d.type), why.data ? why.data : "no device");
        tile_sb_free(&why);
        *st = TILE_ERR_UNAVAILABLE;
        return NULL;
    }
    tile_sb_free(&why);
    int n = b->device->count ? b->device->count() : 1;
    if (d.index < 0 || d.index >= n) {
        char *s = tile_device_string(d);
        tile_sb_printf(err, "device %s is not available here: ", s);
        if (d.type == TILE_DEVICE_CUDA && b->device->count && n > 0)
            tile_sb_puts(err, "the cuda backend drives one GPU per process, the one TILE_CUDA_DEVICE picks");
        else tile_sb_printf(err, "%d %s device%s", n, type_name(d.type), n == 1 ? "" : "s");
        free(s);
        *st = TILE_ERR_UNAVAILABLE;
        return NULL;
    }
    return b;
}

int tile_device_count(tile_device_type type) {
    const tile_backend *b = tile_backend_for_device(type);
    if (!b) return 0;
    if (b->available && !b->available(NULL)) return 0;
    return b->device->count ? b->device->count() : 1;
}

tile_status tile_device_describe(tile_device d, char **description, char **error) {
    if (description) *description = NULL;
    if (error) *error = NULL;
    tile_strbuf err = {0};
    tile_status st;
    const tile_backend *b = rt_device_backend(d, &err, &st);
    if (!b) return fail(error, &err, st);
    tile_strbuf out = {0};
    if (b->device->name) b->device->name(d.index, &out);
    else if (b->device_name) b->device_name(&out);
    if (description) *description = sb_take(&out);
    else tile_sb_free(&out);
    return TILE_OK;
}

/* ---------- the caching pool ----------
 * Free lists of size classes (256-byte granules up to 4 KiB, then four classes per power of
 * two: at most 25% is wasted), a table of the blocks handed out (pointer -> size), counters. */
enum { POOL_CLASSES = 256, LIVE_BUCKETS = 1024, MAX_TYPES = 5, MAX_INDEX = 16 };
typedef struct pblock {
    void *ptr;
    size_t cap;
    struct pblock *next;
} pblock;
typedef struct dev_pool {
    pthread_mutex_t lock;
    pblock *free[POOL_CLASSES];
    pblock *live[LIVE_BUCKETS];
    tile_memory_stats st;
} dev_pool;
static dev_pool g_pools[MAX_TYPES][MAX_INDEX];
static pthread_once_t g_pools_once = PTHREAD_ONCE_INIT;
static void pools_init(void) {
    for (int t = 0; t < MAX_TYPES; t++)
        for (int i = 0; i < MAX_INDEX; i++) pthread_mutex_init(&g_pools[t][i].lock, NULL);
}
static dev_pool *pool_of(tile_device d) {
    if (d.type < 0 || d.type >= MAX_TYPES || d.index < 0 || d.index >= MAX_INDEX) return NULL;
    pthread_once(&g_pools_once, pools_init);
    return &g_pools[d.type][d.index];
}

int rt_size_class(size_t n, size_t *cap) {
    if (n <= 4096) {
        size_t c = (n + 255) / 256;
        if (c == 0) c = 1;
        *cap = c * 256;
        return (int)c - 1; /* 0..15 */
    }
    int p = 63 - __builtin_clzll((unsigned long long)(n - 1)); /* 2^p < n <= 2^(p+1) */
    size_t q = (size_t)1 << (p - 2);                            /* an eighth of 2^(p+1) */
    size_t k = (n + q - 1) / q;                                 /* 5..8 eighths */
    *cap = k * q;
    int cls = 16 + (p - 12) * 4 + (int)(k - 5);
    return cls < POOL_CLASSES ? cls : -1;
}

static size_t live_bucket(void *p) { return (size_t)(((uintptr_t)p >> 8) * 0x9E3779B97F4A7C15ull >> 54) % LIVE_BUCKETS; }

static void trim_locked(const tile_backend *b, tile_device d, dev_pool *p) {
    for (int c = 0; c < POOL_CLASSES; c++)
        while (p->free[c]) {
            pblock *x = p->free[c];
            p->free[c] = x->next;
            b->device->raw_free(d.index, x->ptr);
            free(x);
        }
    p->st.cached = 0;
}

tile_status tile_buffer_alloc(tile_device dev, size_t bytes, void **ptr, char **error) {
    if (error) *error = NULL;
    if (!ptr) return failf(error, TILE_ERR_USER, "%s", "tile_buffer_alloc: ptr is NULL");
    *ptr = NULL;
    tile_strbuf err = {0};
    tile_status st;
    const tile_backend *b = rt_device_backend(dev, &err, &st);
    dev_pool *p = b ? pool_of(dev) : NULL;
    if (!b) return fail(error, &err, st);
    if (!p) return failf(error, TILE_ERR_USER, "%s", "tile_buffer_alloc: device index out of range");
    size_t cap;
    int cls = rt_size_class(bytes ? bytes : 1, &cap);
    if (cls < 0) cap = bytes;
    pthread_mutex_lock(&p->lock);
    p->st.allocs++;
    pblock *x = cls >= 0 ? p->free[cls] : NULL;
    if (x) {
        p->free[cls] = x->next;
        p->st.cached -= x->cap;
        p->st.reused++;
    } else {
        void *q = NULL;
        int rc = b->device->raw_alloc(dev.index, cap, &q, &err);
        if (rc && p->st.cached) {
            tile_log(TILE_LOG_INFO, "out of memory on the device; releasing %zu cached bytes and trying again", p->st.cached);
            trim_locked(b, dev, p);
            tile_sb_free(&err);
            rc = b->device->raw_alloc(dev.index, cap, &q, &err);
        }
        if (rc) {
            pthread_mutex_unlock(&p->lock);
            return fail(error, &err, TILE_ERR_USER);
        }
        p->st.driver_allocs++;
        x = tile_xcalloc(1, sizeof *x);
        x->ptr = q;
        x->cap = cap;
    }
    size_t h = live_bucket(x->ptr);
    x->next = p->live[h];
    p->live[h] = x;
    p->st.in_use += x->cap;
    if (p->st.in_use + p->st.cached > p->st.high_water) p->st.high_water = p->st.in_use + p->st.cached;
    pthread_mutex_unlock(&p->lock);
    *ptr = x->ptr;
    return TILE_OK;
}

void tile_buffer_free(tile_device dev, void *ptr) {
    if (!ptr) return;
    const tile_backend *b = tile_backend_for_device(dev.type);
    dev_pool *p = pool_of(dev);
    if (!b || !p) return;
    pthread_mutex_lock(&p->lock);
    size_t h = live_bucket(ptr);
    pblock **pp = &p->live[h];
    while (*pp && (*pp)->ptr != ptr) pp = &(*pp)->next;
    pblock *x = *pp;
    if (!x) {
        pthread_mutex_unlock(&p->lock);
        tile_log(TILE_LOG_WARN, "tile_buffer_free: %p was not allocated by tile_buffer_alloc on this device (ignored)", ptr);
        return;
    }
    *pp = x->next;
    p->st.in_use -= x->cap;
    size_t cap;
    int cls = rt_size_class(x->cap, &cap);
    if (cls >= 0 && cap == x->cap) {
        x->next = p->free[cls];
        p->free[cls] = x;
        p->st.cached += x->cap;
    } else {
        b->device->raw_free(dev.index, x->ptr);
        free(x);
    }
    pthread_mutex_unlock(&p->lock);
}

tile_status tile_memory_stats_get(tile_device dev, tile_memory_stats *out, char **error) {
    if (error) *error = NULL;
    dev_pool *p = pool_of(dev);
    if (!out || !p || !tile_backend_for_device(dev.type)) return failf(error, TILE_ERR_USER, "%s", "tile_memory_stats_get: bad device or out is NULL");
    pthread_mutex_lock(&p->lock);
    *out = p->st;
    pthread_mutex_unlock(&p->lock);
    return TILE_OK;
}

void tile_memory_trim(tile_device dev, int reset_peak) {
    const tile_backend *b = tile_backend_for_device(dev.type);
    dev_pool *p = pool_of(dev);
    if (!b || !p) return;
    pthread_mutex_lock(&p->lock);
    trim_locked(b, dev, p);
    if (reset_peak) p->st.high_water = p->st.in_use;
    pthread_mutex_unlock(&p->lock);
}

/* ---------- streams ---------- */
tile_status rt_stream_new(tile_device dev, void *native, bool owned, tile_stream **out, char **error) {
    tile_strbuf err = {0};
    tile_status st;
    const tile_backend *b = rt_device_backend(dev, &err, &st);
    if (!b) return fail(error, &err, st);
    tile_stream *s = tile_xcalloc(1, sizeof *s);
    s->dev = dev;
    s->b = b;
    s->owned = owned;
    pthread_mutex_init(&s->lock, NULL);
    if (owned && b->device->stream_create && b->device->stream_create(dev.index, &s->native, &err)) {
        free(s);
        return fail(error, &err, TILE_ERR_USER);
    }
    if (!owned) s->native = native;
    *out = s;
    return TILE_OK;
}

tile_status tile_stream_create(tile_device dev, tile_stream **out, char **error) {
    if (error) *error = NULL;
    if (!out) return failf(error, TILE_ERR_USER, "%s", "tile_stream_create: out is NULL");
    *out = NULL;
    return rt_stream_new(dev, NULL, true, out, error);
}

tile_status tile_stream_wrap(tile_device dev, void *native, tile_stream **out, char **error) {
    if (error) *error = NULL;
    if (!out) return failf(error, TILE_ERR_USER, "%s", "tile_stream_wrap: out is NULL");
    *out = NULL;
    return rt_stream_new(dev, native, false, out, error);
}

tile_device tile_stream_device(const tile_stream *s) {
    tile_device d = {0, 0};
    return s ? s->dev : d;
}
void *tile_stream_native(const tile_stream *s) { return s ? s->native : NULL; }

/* Remember a launch whose device-side error record must be read at the next sync. */
void rt_stream_note(tile_stream *s, tile_spec *sp) {
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < s->npending; i++)
        if (s->pending[i] == sp) {
            pthread_mutex_unlock(&s->lock);
            return;
        }
    if (s->npending == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 8;
        s->pending = tile_xrealloc(s->pending, sizeof(tile_spec *) * (size_t)s->cap);
    }
    s->pending[s->npending++] = sp;
    pthread_mutex_unlock(&s->lock);
}

tile_status tile_stream_sync(tile_stream *s, char **error) {
    if (error) *error = NULL;
    if (!s) return failf(error, TILE_ERR_USER, "%s", "tile_stream_sync: stream is NULL");
    tile_strbuf err = {0};
    double t0 = tile_now();
    if (s->b->device->stream_sync && s->b->device->stream_sync(s->dev.index, s->native, &err)) return fail(error, &err, TILE_ERR_USER);
    pthread_mutex_lock(&s->lock);
    tile_spec **pend = s->pending;
    int n = s->npending;
    s->pending = NULL;
    s->npending = s->cap = 0;
    pthread_mutex_unlock(&s->lock);
    int bad = 0;
    for (int i = 0; i < n; i++)
        if (!bad && rt_spec_check(pend[i], &err)) bad = 1;
    free(pend);
    rt_trace_span("stream sync", "sync", t0, tile_now() - t0, NULL);
    return bad ? fail(error, &err, TILE_ERR_USER) : TILE_OK;
}

void tile_stream_free(tile_stream *s) {
    if (!s) return;
    if (s->owned && s->native && s->b->device->stream_destroy) {
        if (s->b->device->stream_sync) {
            tile_strbuf e = {0};
            s->b->device->stream_sync(s->dev.index, s->native, &e);
            tile_sb_free(&e);
        }
        s->b->device->stream_destroy(s->dev.index, s->native);
    }
    free(s->pending);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* ---------- events ---------- */
struct tile_event {
    tile_device dev;
    const tile_backend *b;
    void *native;
    double host_time; /* devices without native events (cpu): when it was recorded */
};

tile_status tile_event_create(tile_device dev, tile_event **out, char **error) {
    if (error) *error = NULL;
    if (!out) return failf(error, TILE_ERR_USER, "%s", "tile_event_create: out is NULL");
    *out = NULL;
    tile_strbuf err = {0};
    tile_status st;
    const tile_backend *b = rt_device_backend(dev, &err, &st);
    if (!b) return fail(error, &err, st);
    tile_event *e = tile_xcalloc(1, sizeof *e);
    e->dev = dev;
    e->b = b;
    if (b->device->event_create && b->device->event_create(dev.index, &e->native, &err)) {
        free(e);
        return fail(error, &err, TILE_ERR_USER);
    }
    *out = e;
    return TILE_OK;
}

static tile_status same_device(tile_event *e, tile_stream *s, char **error) {
    if (!e || !s) return failf(error, TILE_ERR_USER, "%s", "event or stream is NULL");
    if (e->dev.type != s->dev.type || e->dev.index != s->dev.index) {
        char *a = tile_device_string(e->dev), *b = tile_device_string(s->dev);
        tile_strbuf sb = {0};
        tile_sb_printf(&sb, "the event is on %s but the stream on %s", a, b);
        free(a);
        free(b);
        return fail(error, &sb, TILE_ERR_USER);
    }
    return TILE_OK;
}

tile_status tile_event_record(tile_event *e, tile_stream *s, char **error) {
    if (error) *error = NULL;
    tile_status st = same_device(e, s, error);
    if (st != TILE_OK) return st;
    tile_strbuf err = {0};
    e->host_time = tile_now();
    if (e->b->device->event_record && e->b->device->event_record(e->dev.index, e->native, s->native, &err)) return fail(error, &err, TILE_ERR_USER);
    return TILE_OK;
}

tile_status tile_stream_wait_event(tile_stream *s, tile_event *e, char **error) {
    if (error) *error = NULL;
    tile_status st = same_device(e, s, error);
    if (st != TILE_OK) return st;
    tile_strbuf err = {0};
    if (e->b->device->event_wait && e->b->device->event_wait(e->dev.index, s->native, e->native, &err)) return fail(error, &err, TILE_ERR_USER);
    return TILE_OK;
}

tile_status tile_event_sync(tile_event *e, char **error) {
    if (error) *error = NULL;
    if (!e) return failf(error, TILE_ERR_USER, "%s", "tile_event_sync: event is NULL");
    tile_strbuf err = {0};
    if (e->b->device->event_sync && e->b->device->event_sync(e->dev.index, e->native, &err)) return fail(error, &err, TILE_ERR_USER);
    return TILE_OK;
}

tile_status tile_event_elapsed(tile_event *a, tile_event *b, double *seconds, char **error) {
    if (error) *error = NULL;
    if (!a || !b || !seconds) return failf(error, TILE_ERR_USER, "%s", "tile_event_elapsed: NULL argument");
    if (a->b != b->b || a->dev.index != b->dev.index) return failf(error, TILE_ERR_USER, "%s", "tile_event_elapsed: the events are on different devices");
    tile_strbuf err = {0};
    if (a->b->device->event_elapsed) {
        if (a->b->device->event_elapsed(a->dev.index, a->native, b->native, seconds, &err)) return fail(error, &err, TILE_ERR_USER);
    } else *seconds = b->host_time - a->host_time;
    return TILE_OK;
}

void tile_event_free(tile_event *e) {
    if (!e) return;
    if (e->native && e->b->device->event_destroy) e->b->device->event_destroy(e->dev.index, e->native);
    free(e);
}

/* ---------- copies ---------- */
static tile_status do_copy(tile_stream *s, int kind, void *dst, size_t dst_off, const void *src, size_t src_off, size_t n, char **error) {
    if (error) *error = NULL;
    if (!s) return failf(error, TILE_ERR_USER, "%s", "copy: stream is NULL");
    if (!n) return TILE_OK;
    if (!dst || !src) return failf(error, TILE_ERR_USER, "%s", "copy: NULL pointer");
    tile_strbuf err = {0};
    double t0 = tile_now();
    if (s->b->device->copy(s->dev.index, kind, dst, dst_off, src, src_off, n, s->native, &err)) return fail(error, &err, TILE_ERR_USER);
    if (rt_tracing()) {
        char args[96];
        snprintf(args, sizeof args, "\"bytes\": %zu", n);
        rt_trace_span(kind == 0 ? "copy to device" : kind == 1 ? "copy to host" : "copy on device", "copy", t0, tile_now() - t0, args);
    }
    return TILE_OK;
}
tile_status tile_memcpy_to_device(tile_stream *s, void *dst, size_t dst_off, const void *host, size_t n, char **error) {
    return do_copy(s, 0, dst, dst_off, host, 0, n, error);
}
tile_status tile_memcpy_to_host(tile_stream *s, void *host, const void *src, size_t src_off, size_t n, char **error) {
    return do_copy(s, 1, host, 0, src, src_off, n, error);
}
tile_status tile_memcpy_on_device(tile_stream *s, void *dst, size_t dst_off, const void *src, size_t src_off, size_t n, char **error) {
    return do_copy(s, 2, dst, dst_off, src, src_off, n, error);
}
