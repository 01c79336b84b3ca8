/* simt_rt.h — host-side helpers shared by the GPU runtimes (opencl.c, cuda.c): the on-disk
 * cache of compiled device code, and the sizes of the buffers and grids of a simt_program.
 * Private to src/runtime; everything is static. */
#ifndef TILE_SIMT_RT_H
#define TILE_SIMT_RT_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../codegen/simt.h"
#include "runtime.h"

/* The cache directory of compiled code: src/base's rule ($TILE_CACHE_DIR, else
 * $XDG_CACHE_HOME/tile, else ~/.cache/tile). Created on demand; false if there is none. */
static bool simt_cache_dir(tile_strbuf *out) {
    char d[4096];
    if (!tb_cache_dir(d, sizeof d)) return false;
    tile_sb_puts(out, d);
    return tb_mkdir_p(d) == 0;
}

/* The path of a cache entry: <dir>/<prefix>-<16 hex digits of the key's hash><ext>. */
static bool simt_cache_path(const char *prefix, const char *key, size_t keylen, const char *ext, tile_strbuf *out) {
    if (!simt_cache_dir(out)) return false;
    uint64_t h = tile_hash64(key, keylen, 0x74696c65ull);
    uint64_t h2 = tile_hash64(key, keylen, h ^ 0x5a5a5a5aull);
    tile_sb_printf(out, "/%s-%016llx%08llx%s", prefix, (unsigned long long)h, (unsigned long long)(h2 & 0xffffffffull), ext);
    return true;
}

static void *simt_read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) != 0) { fclose(f); return NULL; }
    long len = ftell(f);
    if (len <= 0 || fseek(f, 0, SEEK_SET) != 0) { fclose(f); return NULL; }
    void *buf = malloc((size_t)len + 1);
    if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) ((char *)buf)[len] = 0;
    *n = (size_t)len;
    return buf;
}

/* Write a file atomically: a temporary name in the same directory, then rename. */
static void simt_write_file(const char *path, const void *data, size_t n) {
    tile_strbuf tmp = {0};
    tile_sb_printf(&tmp, "%s.tmp%ld", path, (long)getpid());
    FILE *f = fopen(tmp.data, "wb");
    if (f) {
        bool ok = fwrite(data, 1, n, f) == n;
        ok = (fclose(f) == 0) && ok;
        if (!ok || rename(tmp.data, path) != 0) remove(tmp.data);
    }
    tile_sb_free(&tmp);
}

/* Bytes of buffer i of the program for this run (0 is possible). */
static bool simt_buf_bytes(const simt_program *P, int i, const ir_func *f, const int64_t *sizes, tile_tensor *params, tile_tensor *rets,
                           size_t *bytes, tile_strbuf *err) {
    const simt_buf *b = &P->bufs[i];
    if (b->param >= 0) { *bytes = tile_tensor_bytes(&params[b->param]); return true; }
    if (b->ret >= 0) { *bytes = tile_tensor_bytes(&rets[b->ret]); return true; }
    bool *bound = tile_xcalloc((size_t)f->nsizes + 1, sizeof(bool));
    for (int k = 0; k < f->nsizes; k++) bound[k] = true;
    size_t n = 1;
    bool ok = true;
    for (int d = 0; d < b->buf->rank && ok; d++) {
        int64_t v;
        if (!rt_eval_size(b->buf->shape[d], sizes, bound, f, &v) || v < 0) ok = false;
        else n *= (size_t)v;
    }
    free(bound);
    if (!ok) {
        tile_sb_printf(err, "cannot compute the shape of the temporary '%s' before the launch", b->buf->name);
        return false;
    }
    *bytes = tile_dtype_storage_bytes(b->buf->dtype, n);
    return true;
}

/* Number of blocks of launch L for this run. */
static bool simt_blocks(const simt_launch *L, const ir_func *f, const int64_t *sizes, int64_t *blocks, tile_strbuf *err) {
    bool *bound = tile_xcalloc((size_t)f->nsizes + 1, sizeof(bool));
    for (int k = 0; k < f->nsizes; k++) bound[k] = true;
    int64_t total = 1;
    bool ok = true;
    for (int d = 0; d < 3 && ok; d++) {
        if (!L->grid[d]) continue;
        int64_t g;
        if (!rt_eval_size(L->grid[d], sizes, bound, f, &g)) ok = false;
        else if (g < 0) {
            tile_sb_printf(err, "kernel grid dimension %d is negative (%lld)", d, (long long)g);
            free(bound);
            return false;
        } else if (g > 0 && total > ((int64_t)1 << 31) / g) {
            tile_sb_printf(err, "kernel grid of more than 2^31 blocks");
            free(bound);
            return false;
        } else total *= g;
    }
    free(bound);
    if (!ok) {
        tile_sb_puts(err, "cannot compute the kernel grid before the launch");
        return false;
    }
    *blocks = total;
    return true;
}

#endif
