/* core.c — arenas, growable arrays and strings, sources, diagnostics, logging. */
#define _GNU_SOURCE
#include "core.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void tile_assert_fail(const char *file, int line, const char *expr, const char *fmt, ...) {
    fprintf(stderr, "%s:%d: internal error: assertion '%s' failed", file, line, expr);
    if (fmt && *fmt) {
        va_list ap;
        va_start(ap, fmt);
        fputs(": ", stderr);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
    }
    fputc('\n', stderr);
    abort();
}

/* ---------- memory ---------- */
void *tile_xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) { fprintf(stderr, "tile: out of memory (%zu bytes)\n", n); abort(); }
    return p;
}
void *tile_xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) { fprintf(stderr, "tile: out of memory (%zu x %zu bytes)\n", n, size); abort(); }
    return p;
}
void *tile_xrealloc(void *p, size_t n) {
    void *q = realloc(p, n ? n : 1);
    if (!q) { fprintf(stderr, "tile: out of memory (%zu bytes)\n", n); abort(); }
    return q;
}
char *tile_xstrdup(const char *s) {
    size_t n = strlen(s);
    char *p = tile_xmalloc(n + 1);
    memcpy(p, s, n + 1);
    return p;
}

struct tile_arena_chunk {
    tile_arena_chunk *next;
    size_t size, used;
    _Alignas(16) unsigned char data[];
};

void tile_arena_init(tile_arena *a) { a->head = NULL; a->used_total = 0; }

void *tile_arena_alloc(tile_arena *a, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (!a->head || a->head->size - a->head->used < n) {
        size_t size = n > 60000 ? n : 64 * 1024 - sizeof(tile_arena_chunk);
        tile_arena_chunk *c = tile_xmalloc(sizeof(tile_arena_chunk) + size);
        c->size = size;
        c->used = 0;
        c->next = a->head;
        a->head = c;
    }
    void *p = a->head->data + a->head->used;
    a->head->used += n;
    a->used_total += n;
    memset(p, 0, n);
    return p;
}

char *tile_arena_strndup(tile_arena *a, const char *s, size_t n) {
    char *p = tile_arena_alloc(a, n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}
char *tile_arena_strdup(tile_arena *a, const char *s) { return tile_arena_strndup(a, s, strlen(s)); }

char *tile_arena_printf(tile_arena *a, const char *fmt, ...) {
    tile_strbuf sb = {0};
    va_list ap;
    va_start(ap, fmt);
    tile_sb_vprintf(&sb, fmt, ap);
    va_end(ap);
    char *p = tile_arena_strndup(a, sb.data ? sb.data : "", sb.len);
    tile_sb_free(&sb);
    return p;
}

void tile_arena_free(tile_arena *a) {
    tile_arena_chunk *c = a->head;
    while (c) {
        tile_arena_chunk *n = c->next;
        free(c);
        c = n;
    }
    a->head = NULL;
    a->used_total = 0;
}

void tile_vec_push(tile_vec *v, void *item) {
    if (v->len == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 8;
        v->items = tile_xrealloc(v->items, sizeof(void *) * (size_t)v->cap);
    }
    v->items[v->len++] = item;
}
void tile_vec_free(tile_vec *v) { free(v->items); v->items = NULL; v->len = v->cap = 0; }
void **tile_vec_to_arena(tile_vec *v, tile_arena *a) {
    void **p = tile_arena_alloc(a, sizeof(void *) * (size_t)(v->len ? v->len : 1));
    if (v->len) memcpy(p, v->items, sizeof(void *) * (size_t)v->len);
    tile_vec_free(v);
    return p;
}

static void sb_reserve(tile_strbuf *sb, size_t extra) {
    if (sb->len + extra + 1 > sb->cap) {
        size_t cap = sb->cap ? sb->cap * 2 : 256;
        while (cap < sb->len + extra + 1) cap *= 2;
        sb->data = tile_xrealloc(sb->data, cap);
        sb->cap = cap;
    }
}
void tile_sb_putc(tile_strbuf *sb, char c) {
    sb_reserve(sb, 1);
    sb->data[sb->len++] = c;
    sb->data[sb->len] = 0;
}
void tile_sb_puts(tile_strbuf *sb, const char *s) {
    size_t n = strlen(s);
    sb_reserve(sb, n);
    memcpy(sb->data + sb->len, s, n + 1);
    sb->len += n;
}
void tile_sb_vprintf(tile_strbuf *sb, const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0) return;
    sb_reserve(sb, (size_t)n);
    vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
    sb->len += (size_t)n;
}
void tile_sb_printf(tile_strbuf *sb, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tile_sb_vprintf(sb, fmt, ap);
    va_end(ap);
}
void tile_sb_free(tile_strbuf *sb) { free(sb->data); sb->data = NULL; sb->len = sb->cap = 0; }

/* ---------- sources ---------- */
tile_source *tile_source_from_string(const char *name, const char *text, size_t len) {
    tile_source *s = tile_xcalloc(1, sizeof *s);
    s->name = tile_xstrdup(name);
    s->text = tile_xmalloc(len + 1);
    memcpy(s->text, text, len);
    s->text[len] = 0;
    s->len = len;
    return s;
}

tile_source *tile_source_load(const char *path, const char **err) {
    FILE *f = fopen(path, "rb");
    if (!f) { if (err) *err = strerror(errno); return NULL; }
    tile_strbuf sb = {0};
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
        sb_reserve(&sb, n);
        memcpy(sb.data + sb.len, buf, n);
        sb.len += n;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) { if (err) *err = "read error"; tile_sb_free(&sb); return NULL; }
    tile_source *s = tile_source_from_string(path, sb.data ? sb.data : "", sb.len);
    tile_sb_free(&sb);
    return s;
}

void tile_source_free(tile_source *s) {
    if (!s) return;
    free(s->name);
    free(s->text);
    free(s);
}

/* ---------- diagnostics ---------- */
void tile_diags_init(tile_diags *d) { memset(d, 0, sizeof *d); d->max_errors = 20; }
void tile_diags_free(tile_diags *d) {
    for (int i = 0; i < d->len; i++) free(d->items[i].msg);
    free(d->items);
    memset(d, 0, sizeof *d);
}
bool tile_diags_full(const tile_diags *d) { return d->max_errors > 0 && d->errors >= d->max_errors; }

void tile_diag_add(tile_diags *d, tile_diag_level lvl, tile_loc loc, const char *fmt, va_list ap) {
    if (lvl == TILE_DIAG_ERROR && tile_diags_full(d)) return;
    if (lvl != TILE_DIAG_ERROR && tile_diags_full(d)) return;
    if (d->len == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 8;
        d->items = tile_xrealloc(d->items, sizeof(tile_diag) * (size_t)d->cap);
    }
    tile_strbuf sb = {0};
    tile_sb_vprintf(&sb, fmt, ap);
    d->items[d->len].level = lvl;
    d->items[d->len].loc = loc;
    d->items[d->len].msg = sb.data ? sb.data : tile_xstrdup("");
    d->len++;
    if (lvl == TILE_DIAG_ERROR) d->errors++;
}
void tile_error_at(tile_diags *d, tile_loc loc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tile_diag_add(d, TILE_DIAG_ERROR, loc, fmt, ap);
    va_end(ap);
}
void tile_warning_at(tile_diags *d, tile_loc loc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tile_diag_add(d, TILE_DIAG_WARNING, loc, fmt, ap);
    va_end(ap);
}
void tile_note_at(tile_diags *d, tile_loc loc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tile_diag_add(d, TILE_DIAG_NOTE, loc, fmt, ap);
    va_end(ap);
}

static const char *level_name(tile_diag_level l) {
    switch (l) {
    case TILE_DIAG_ERROR: return "error";
    case TILE_DIAG_WARNING: return "warning";
    default: return "note";
    }
}

void tile_diag_format(const tile_diag *dg, tile_strbuf *sb) {
    const tile_loc *l = &dg->loc;
    if (l->src) tile_sb_printf(sb, "%s:%d:%d: ", l->src->name, l->line, l->col);
    tile_sb_printf(sb, "%s: %s\n", level_name(dg->level), dg->msg);
    if (!l->src || l->line < 1) return;
    /* find the line */
    const char *p = l->src->text, *end = l->src->text + l->src->len;
    for (int ln = 1; ln < l->line && p < end; p++)
        if (*p == '\n') ln++;
    if (p > end) return;
    const char *e = p;
    while (e < end && *e != '\n') e++;
    tile_sb_puts(sb, "    ");
    for (const char *q = p; q < e; q++) tile_sb_putc(sb, (*q == '\t' || (unsigned char)*q < 32) ? ' ' : *q);
    tile_sb_puts(sb, "\n    ");
    int col = l->col < 1 ? 1 : l->col;
    if (col > (int)(e - p) + 1) col = (int)(e - p) + 1;
    for (int i = 1; i < col; i++) tile_sb_putc(sb, ' ');
    tile_sb_puts(sb, "^\n");
}

void tile_diags_print(const tile_diags *d, FILE *out) {
    tile_strbuf sb = {0};
    for (int i = 0; i < d->len; i++) tile_diag_format(&d->items[i], &sb);
    if (sb.len) fwrite(sb.data, 1, sb.len, out);
    tile_sb_free(&sb);
}

/* ---------- logging (src/base: the "tile" channel, TILE_LOG) ---------- */
bool tile_log_enabled(tile_log_level lvl) { return tb_log_enabled(TB_CH_TILE, (int)lvl); }

void tile_log(tile_log_level lvl, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tb_vlog(TB_CH_TILE, (int)lvl, fmt, ap);
    va_end(ap);
}

double tile_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

uint64_t tile_hash64(const void *data, size_t n, uint64_t seed) {
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ull ^ seed;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}
