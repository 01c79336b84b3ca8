/* fz_util.h — the small helpers the program fuzzer needs (growable strings, checked
 * allocation), so that it builds on the public API of libtile (include/tile.h) alone. */
#ifndef TILE_FZ_UTIL_H
#define TILE_FZ_UTIL_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline void *fz_xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        fputs("tile fuzz: out of memory\n", stderr);
        abort();
    }
    return p;
}
static inline void *fz_xcalloc(size_t n, size_t m) {
    void *p = calloc(n ? n : 1, m ? m : 1);
    if (!p) {
        fputs("tile fuzz: out of memory\n", stderr);
        abort();
    }
    return p;
}
static inline void *fz_xrealloc(void *q, size_t n) {
    void *p = realloc(q, n ? n : 1);
    if (!p) {
        fputs("tile fuzz: out of memory\n", stderr);
        abort();
    }
    return p;
}
static inline char *fz_xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    return memcpy(fz_xmalloc(n), s, n);
}

typedef struct fz_strbuf {
    char *data;
    size_t len, cap;
} fz_strbuf;
static inline void fz_sb_reserve(fz_strbuf *sb, size_t more) {
    if (sb->len + more + 1 <= sb->cap) return;
    size_t cap = sb->cap ? sb->cap : 64;
    while (cap < sb->len + more + 1) cap *= 2;
    sb->data = fz_xrealloc(sb->data, cap);
    sb->cap = cap;
}
static inline void fz_sb_putc(fz_strbuf *sb, char c) {
    fz_sb_reserve(sb, 1);
    sb->data[sb->len++] = c;
    sb->data[sb->len] = 0;
}
static inline void fz_sb_puts(fz_strbuf *sb, const char *s) {
    size_t n = strlen(s);
    fz_sb_reserve(sb, n);
    memcpy(sb->data + sb->len, s, n + 1);
    sb->len += n;
}
static inline void fz_sb_vprintf(fz_strbuf *sb, const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0) return;
    fz_sb_reserve(sb, (size_t)n);
    vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
    sb->len += (size_t)n;
}
static inline void fz_sb_printf(fz_strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void fz_sb_printf(fz_strbuf *sb, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fz_sb_vprintf(sb, fmt, ap);
    va_end(ap);
}
static inline void fz_sb_free(fz_strbuf *sb) {
    free(sb->data);
    sb->data = NULL;
    sb->len = sb->cap = 0;
}

#endif
