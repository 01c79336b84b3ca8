/* cuda_tma.c — TMA tensor maps for the sm_90a GEMM lowering (src/codegen/sm90.c).
 *
 * Each map describes a rank-2 row-major global tensor (dims from the buffer's shape and this
 * run's sizes) read in boxes of box_rows x box_cols elements with the swizzle the generated
 * wgmma descriptors expect; a full_rank map (sm90_attn.c) keeps the buffer's rank (up to 5),
 * the box spanning one row dimension and the last one. Elements are moved as raw 8/16-bit words (TMA's data type only
 * matters for out-of-bounds fill, which is zero bits: +0.0 in every float format here). */
#include "cuda_tma.h"
#include "runtime.h"

#include <stdlib.h>

typedef int (*encode_tiled_fn)(void *map, int dtype, unsigned rank, void *addr, const unsigned long long *dims,
                               const unsigned long long *strides, const unsigned *box, const unsigned *estrides, int interleave,
                               int swizzle, int l2promo, int oobfill);

enum { TMA_U8 = 0, TMA_U16 = 1 };                                   /* CUtensorMapDataType */
enum { TMA_SW_NONE = 0, TMA_SW_32 = 1, TMA_SW_64 = 2, TMA_SW_128 = 3 }; /* CUtensorMapSwizzle */
enum { TMA_L2_256 = 3 };                                            /* CUtensorMapL2promotion */

/* A TMA'd buffer is always a parameter or returned tensor, and runtime.c refuses any of those
 * with a dimension <= 0 before a backend runs ("'A' would have dimension 1 of size 0"), so
 * an empty tensor cannot get here. Should that change, say so rather than launch a kernel
 * with an unencoded map. */
static int empty_tensor(const char *kname, const char *bname, tile_strbuf *err) {
    tile_sb_printf(err, "internal error: kernel %s: '%s' has no elements, and TMA cannot describe an empty tensor", kname, bname);
    return 1;
}

/* A map of the buffer's own rank (at most 5): dims innermost first, box box_cols along the
 * last dimension, box_rows along rowdim, 1 elsewhere (sm90_attn.c's K/V/Q tiles of a
 * [b, s, h, d] tensor: the box is clipped at every dimension, out-of-range reads are zero). */
static int encode_full(void *encode, const simt_tma *t, const ir_buffer *b, const ir_func *f, const int64_t *sizes, const bool *bound,
                       unsigned long long ptr, tile_cuda_tmap *map, const char *kname, tile_strbuf *err) {
    int r = b->rank;
    if (r < 2 || r > 5 || t->rowdim < 0 || t->rowdim >= r - 1) {
        tile_sb_printf(err, "kernel %s: '%s' (rank %d) cannot be described by a TMA tensor map", kname, b->name, r);
        return 1;
    }
    unsigned long long dims[5], strides[4];
    unsigned box[5], es[5];
    unsigned long long pitch = (unsigned long long)t->elem_bytes;
    for (int k = 0; k < r; k++) {
        int d = r - 1 - k;
        int64_t n;
        if (!rt_eval_size(b->shape[d], sizes, bound, f, &n)) {
            tile_sb_printf(err, "kernel %s: cannot compute the shape of '%s' for its TMA tensor map", kname, b->name);
            return 1;
        }
        if (n <= 0) return empty_tensor(kname, b->name, err);
        dims[k] = (unsigned long long)n;
        if (k > 0) strides[k - 1] = pitch;
        pitch *= (unsigned long long)n;
        box[k] = d == r - 1 ? (unsigned)t->box_cols : d == t->rowdim ? (unsigned)t->box_rows : 1u;
        es[k] = 1;
    }
    for (int k = 0; k < r - 1; k++)
        if (strides[k] % 16) {
            tile_sb_printf(err, "kernel %s: TMA needs the strides of '%s' to be multiples of 16 bytes (one is %llu bytes)", kname, b->name, strides[k]);
            return 1;
        }
    if (ptr % 16) {
        tile_sb_printf(err, "kernel %s: TMA needs '%s' to be 16-byte aligned", kname, b->name);
        return 1;
    }
    int sw = t->swizzle == 128 ? TMA_SW_128 : t->swizzle == 64 ? TMA_SW_64 : t->swizzle == 32 ? TMA_SW_32 : TMA_SW_NONE;
    int e = ((encode_tiled_fn)encode)(map, t->elem_bytes == 1 ? TMA_U8 : TMA_U16, (unsigned)r, (void *)(uintptr_t)ptr, dims, strides, box, es, 0, sw,
                                      TMA_L2_256, 0);
    if (e != 0) {
        tile_sb_printf(err, "cuTensorMapEncodeTiled for '%s' of kernel %s (rank %d, box %d x %d along dimension %d, swizzle %d bytes) failed: error %d", b->name,
                       kname, r, t->box_rows, t->box_cols, t->rowdim, t->swizzle, e);
        return 1;
    }
    return 0;
}

int tile_cuda_tma_encode(void *encode, const simt_program *P, const simt_launch *L, const ir_func *f, const int64_t *sizes,
                         const unsigned long long *bufptr, tile_cuda_tmap *maps, tile_strbuf *err) {
    if (L->ntma == 0) return 0;
    if (!encode) {
        tile_sb_printf(err, "kernel %s uses TMA copies, but this CUDA driver has no cuTensorMapEncodeTiled (a driver for CUDA 12 or later is needed)", L->name);
        return 1;
    }
    bool *bound = tile_xcalloc((size_t)f->nsizes + 1, sizeof(bool));
    for (int k = 0; k < f->nsizes; k++) bound[k] = true;
    int rc = 0;
    for (int i = 0; i < L->ntma && !rc; i++) {
        const simt_tma *t = &L->tma[i];
        const ir_buffer *b = P->bufs[t->buf].buf;
        if (t->full_rank) {
            rc = encode_full(encode, t, b, f, sizes, bound, bufptr[t->buf], &maps[i], L->name, err);
            continue;
        }
        int64_t rows, cols;
        if (b->rank != 2 || !rt_eval_size(b->shape[0], sizes, bound, f, &rows) || !rt_eval_size(b->shape[1], sizes, bound, f, &cols)) {
            tile_sb_printf(err, "kernel %s: cannot compute the shape of '%s' for its TMA tensor map", L->name, b->name);
            rc = 1;
            break;
        }
        unsigned long long pitch = (unsigned long long)cols * (unsigned long long)t->elem_bytes;
        if (rows <= 0 || cols <= 0) {
            rc = empty_tensor(L->name, b->name, err);
            break;
        }
        if (pitch % 16 || bufptr[t->buf] % 16) {
            tile_sb_printf(err, "kernel %s: TMA needs the rows of '%s' to be a multiple of 16 bytes (they are %llu bytes)", L->name, b->name, pitch);
            rc = 1;
            break;
        }
        unsigned long long dims[2] = {(unsigned long long)cols, (unsigned long long)rows}, strides[1] = {pitch};
        unsigned box[2] = {(unsigned)t->box_cols, (unsigned)t->box_rows}, es[2] = {1, 1};
        int sw = t->swizzle == 128 ? TMA_SW_128 : t->swizzle == 64 ? TMA_SW_64 : t->swizzle == 32 ? TMA_SW_32 : TMA_SW_NONE;
        int r = ((encode_tiled_fn)encode)(&maps[i], t->elem_bytes == 1 ? TMA_U8 : TMA_U16, 2, (void *)(uintptr_t)bufptr[t->buf], dims, strides, box, es,
                                          0, sw, TMA_L2_256, 0);
        if (r != 0) {
            tile_sb_printf(err, "cuTensorMapEncodeTiled for '%s' of kernel %s (%lld x %lld, box %d x %d, swizzle %d bytes) failed: error %d", b->name,
                           L->name, (long long)rows, (long long)cols, t->box_rows, t->box_cols, t->swizzle, r);
            rc = 1;
        }
    }
    free(bound);
    return rc;
}
