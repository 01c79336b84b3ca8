/* qgemm.c — the quantised and grouped GEMMs: gemm_fp8, gemm_int8 and gemm_fp4 (qgemm.tl),
 * grouped_gemm in its contiguous and masked layouts (grouped.tl). All take B stored N x K.
 * The scales' kinds are read from their shapes (docs/ops.md, "Quantised and grouped GEMM"). */
#include <stdlib.h>
#include <string.h>

#include "ops_int.h"

enum { QBLOCK = 128 };

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* The kind of a scale operand: 0 none (NULL), 1 per tensor ([] or [1]), 2 per row ([rows]),
 * 3 blocks ([ceil(rows / row_block), ceil(K / 128)]) when `blocks` allows them. */
static int scale_kind(top_ctx *c, const char *arg, const tile_tensor *s, int64_t rows, int64_t K, int row_block, bool blocks,
                      const char *row_word) {
    if (!s) return 0;
    if (!top_check_tensor(c, arg, s)) return -1;
    if (s->dtype != TILE_DT_F32) {
        top_fail(c, TILE_ERR_USER, "%s: dtype %s; scales are float32", arg, tile_dtype_name(s->dtype));
        return -1;
    }
    if (s->rank == 0 || (s->rank == 1 && s->shape[0] == 1 && rows != 1)) return 1;
    if (s->rank == 1 && s->shape[0] == rows) return rows == 1 ? 1 : 2;
    int64_t br = cdiv(rows, row_block), bk = cdiv(K, QBLOCK);
    if (blocks && s->rank == 2 && s->shape[0] == br && s->shape[1] == bk) return 3;
    char sh[128];
    top_shape_str(sh, sizeof sh, s->rank, s->shape);
    if (blocks)
        top_fail(c, TILE_ERR_USER, "%s: shape %s is none of [1] (per tensor), [%lld] (per %s) and [%lld, %lld] (%dx128 blocks)", arg, sh,
                 (long long)rows, row_word, (long long)br, (long long)bk, row_block);
    else
        top_fail(c, TILE_ERR_USER, "%s: shape %s is neither [1] (per tensor) nor [%lld] (per %s)", arg, sh, (long long)rows, row_word);
    return -1;
}

/* a [M, K] and b [N, K] of the quantised GEMMs; false (failed) or M, N, K */
static bool check_nt(top_ctx *c, const tile_tensor *a, const tile_tensor *b, uint32_t amask, uint32_t bmask, int64_t bk_div,
                     int64_t *M, int64_t *N, int64_t *K) {
    if (!top_check_tensor(c, "a", a) || !top_check_dtype(c, "a", a, amask) || !top_check_rank(c, "a", a, 2, 2) ||
        !top_check_tensor(c, "b", b) || !top_check_dtype(c, "b", b, bmask) || !top_check_rank(c, "b", b, 2, 2))
        return false;
    *M = a->shape[0];
    *K = a->shape[1];
    *N = b->shape[0];
    int64_t kb = b->shape[1] * bk_div;
    if (kb != *K)
        return top_fail(c, TILE_ERR_USER, "b: shape [%lld, %lld] is not [N, %s] for a's K = %lld (b is stored N x K)", (long long)b->shape[0],
                        (long long)b->shape[1], bk_div == 2 ? "K / 2" : "K", (long long)*K);
    return true;
}

static bool check_out_dtype(top_ctx *c, tile_dtype odt, uint32_t mask) {
    if (mask & (1u << odt)) return true;
    char names[256];
    return top_fail(c, TILE_ERR_USER, "out_dtype: %s is not one of %s", tile_dtype_name(odt), top_dtype_names(mask, names, sizeof names));
}

/* Tiles for the cuda target's tensor-core GEMM lowering (docs/backends-gpu.md, "Hopper"),
 * per shape class: rows of 128 (two wgmma warpgroups of 64) or 64 for M <= 64 (decode: one
 * warpgroup), columns of 128, or 64 when 128-column tiles would number fewer than 128 (about
 * one a multiprocessor of a Hopper card), block_K 128 bytes of K (one TMA box row, and the
 * 128-element scale blocks), and as many stages as shared memory holds (the lowering lowers
 * num_stages to what fits). */
static void cuda_tile(top_defs *d, int64_t M, int64_t N, int esize) {
    int bm = M <= 64 ? 64 : 128, bn = 128;
    if (cdiv(M, bm) * cdiv(N, 128) < 128) bn = 64;
    top_def_int(d, "block_M", bm);
    top_def_int(d, "block_N", bn);
    top_def_int(d, "block_K", 128 / esize);
    top_def_int(d, "num_stages", 8);
}

/* gemm_scaled of qgemm.tl */
static tile_status run_scaled(top_ctx *c, const top_op *op, const tile_tensor *a, const tile_tensor *sa, int ka, const tile_tensor *b,
                              const tile_tensor *sb, int kb, tile_dtype acc, tile_dtype odt, int64_t M, int64_t N, int64_t K, tile_tensor *out,
                              char **error) {
    int64_t os[2] = {M, N};
    if (!top_prepare_out(c, "out", out, odt, 2, os) || M * N == 0) return top_end(c, error);
    uint64_t one = 0;
    float fone = 1.0f;
    memcpy(&one, &fone, sizeof fone);
    tile_tensor ph = {&one, TILE_DT_F32, 1, {1}};
    tile_tensor psa = ph, psb = ph;
    if (sa) psa = ka == 1 ? top_view1(sa) : *sa;
    if (sb) psb = kb == 1 ? top_view1(sb) : *sb;
    if (!sa || !sb) {
        /* the placeholder of a missing scale lives on the host */
        if (!sa && !top_stage(c, &psa)) return top_end(c, error);
        if (!sb && !top_stage(c, &psb)) return top_end(c, error);
    }
    top_defs d;
    top_defs_init(&d);
    top_def_int(&d, "KS", cdiv(K, QBLOCK));
    top_def_int(&d, "NS", cdiv(N, QBLOCK));
    /* fp8 with a 16-bit result on cuda: the tensor-core tile (wgmma's fp8 sums carry fewer
     * bits than an f32 result checks, so that keeps the portable lowering and its tile) */
    if (!strcmp(c->target, "cuda") && acc == TILE_DT_F32 && tile_dtype_bits(odt) == 16) cuda_tile(&d, M, N, 1);
    else top_def_int(&d, "block_K", ka == 3 || kb == 3 || acc == TILE_DT_F32 ? 128 : 64);
    top_def_dt(&d, "a_dtype", a->dtype);
    top_def_dt(&d, "b_dtype", b->dtype);
    top_def_dt(&d, "acc_dtype", acc);
    top_def_dt(&d, "out_dtype", odt);
    top_def_int(&d, "sa_kind", ka);
    top_def_int(&d, "sb_kind", kb);
    top_kernel *k;
    if (!top_kernel_get(c, op->src, op->factory, &d, &k)) return top_end(c, error);
    tile_tensor p[5] = {*a, *b, psa, psb, *out};
    double sc[5] = {0};
    top_kernel_run(c, k, p, 5, sc);
    return top_end(c, error);
}

tile_status tile_op_gemm_fp8(const char *target, const tile_tensor *a, const tile_tensor *a_scale, const tile_tensor *b,
                             const tile_tensor *b_scale, tile_dtype out_dtype, tile_tensor *out, char **error) {
    top_ctx c;
    const top_op *op = top_find("gemm_fp8");
    if (!top_begin(&c, "gemm_fp8", op, target)) return top_end(&c, error);
    int64_t M, N, K;
    if (!check_nt(&c, a, b, TOPD_FP8, TOPD_FP8, 1, &M, &N, &K)) return top_end(&c, error);
    tile_dtype odt = out_dtype == TILE_DT_INVALID || out_dtype == TILE_DT_BOOL ? TILE_DT_BF16 : out_dtype;
    if (!check_out_dtype(&c, odt, TOPD_MM)) return top_end(&c, error);
    int ka = scale_kind(&c, "a_scale", a_scale, M, K, 1, true, "row of a");
    int kb = ka < 0 ? -1 : scale_kind(&c, "b_scale", b_scale, N, K, QBLOCK, true, "row of b (column of out)");
    if (ka < 0 || kb < 0) return top_end(&c, error);
    return run_scaled(&c, op, a, a_scale, ka, b, b_scale, kb, TILE_DT_F32, odt, M, N, K, out, error);
}

tile_status tile_op_gemm_int8(const char *target, const tile_tensor *a, const tile_tensor *a_scale, const tile_tensor *b,
                              const tile_tensor *b_scale, tile_dtype out_dtype, tile_tensor *out, char **error) {
    top_ctx c;
    const top_op *op = top_find("gemm_int8");
    if (!top_begin(&c, "gemm_int8", op, target)) return top_end(&c, error);
    int64_t M, N, K;
    if (!check_nt(&c, a, b, TOPD(I8), TOPD(I8), 1, &M, &N, &K)) return top_end(&c, error);
    bool scaled = a_scale || b_scale;
    tile_dtype odt = out_dtype == TILE_DT_INVALID || out_dtype == TILE_DT_BOOL ? (scaled ? TILE_DT_F32 : TILE_DT_I32) : out_dtype;
    if (!check_out_dtype(&c, odt, TOPD_MM | TOPD(I32))) return top_end(&c, error);
    if (odt == TILE_DT_I32 && scaled) {
        top_fail(&c, TILE_ERR_USER, "out_dtype: int32 takes the raw sums; with %s pass out_dtype float32, float16 or bfloat16",
                 a_scale ? "a_scale" : "b_scale");
        return top_end(&c, error);
    }
    int ka = scale_kind(&c, "a_scale", a_scale, M, K, 1, false, "row of a");
    int kb = ka < 0 ? -1 : scale_kind(&c, "b_scale", b_scale, N, K, 1, false, "row of b (column of out)");
    if (ka < 0 || kb < 0) return top_end(&c, error);
    return run_scaled(&c, op, a, a_scale, ka, b, b_scale, kb, TILE_DT_I32, odt, M, N, K, out, error);
}

tile_status tile_op_gemm_fp4(const char *target, const tile_tensor *a, const tile_tensor *b, const tile_tensor *b_scale, double global_scale,
                             tile_dtype out_dtype, tile_tensor *out, char **error) {
    top_ctx c;
    const top_op *op = top_find("gemm_fp4");
    if (!top_begin(&c, "gemm_fp4", op, target)) return top_end(&c, error);
    int64_t M, N, K;
    if (!check_nt(&c, a, b, TOPD_MM, TOPD(U8), 2, &M, &N, &K)) return top_end(&c, error);
    tile_dtype odt = out_dtype == TILE_DT_INVALID || out_dtype == TILE_DT_BOOL ? a->dtype : out_dtype;
    if (!check_out_dtype(&c, odt, TOPD_MM)) return top_end(&c, error);
    if (!top_check_tensor(&c, "b_scale", b_scale)) return top_end(&c, error);
    int bs;
    if (b_scale->dtype == TILE_DT_U8) bs = 32;
    else if (b_scale->dtype == TILE_DT_FP8_E4M3) bs = 16;
    else {
        top_fail(&c, TILE_ERR_USER, "b_scale: dtype %s is neither uint8 (MX: e8m0 per 32 elements) nor float8_e4m3 (NV: per 16 elements)",
                 tile_dtype_name(b_scale->dtype));
        return top_end(&c, error);
    }
    int64_t ks = cdiv(K, bs);
    if (b_scale->rank != 2 || b_scale->shape[0] != N || b_scale->shape[1] != ks) {
        char sh[128];
        top_shape_str(sh, sizeof sh, b_scale->rank, b_scale->shape);
        top_fail(&c, TILE_ERR_USER, "b_scale: shape %s is not [N, ceil(K / %d)] = [%lld, %lld] (%s)", sh, bs, (long long)N, (long long)ks,
                 bs == 32 ? "MX" : "NV");
        return top_end(&c, error);
    }
    int64_t os[2] = {M, N};
    if (!top_prepare_out(&c, "out", out, odt, 2, os) || M * N == 0) return top_end(&c, error);
    top_defs d;
    top_defs_init(&d);
    top_def_dt(&d, "a_dtype", a->dtype);
    top_def_dt(&d, "s_dtype", b_scale->dtype);
    top_def_int(&d, "BS", bs);
    top_def_dt(&d, "out_dtype", odt);
    top_kernel *k;
    if (!top_kernel_get(&c, op->src, op->factory, &d, &k)) return top_end(&c, error);
    tile_tensor p[5] = {*a, *b, *b_scale, *out};
    double sc[5] = {0, 0, 0, 0, global_scale};
    top_kernel_run(&c, k, p, 5, sc);
    return top_end(&c, error);
}

/* The row tiles of the contiguous layout: runs of equal group id, cut at block_M rows. */
typedef struct { int32_t *v; int64_t n, cap; } sched_t;
static void sched_add(sched_t *s, int32_t g, int64_t r0, int64_t r1, int bm) {
    for (int64_t r = r0; r < r1; r += bm) {
        if (s->n == s->cap) {
            s->cap = s->cap ? 2 * s->cap : 64;
            s->v = tile_xrealloc(s->v, (size_t)s->cap * 3 * sizeof(int32_t));
        }
        s->v[3 * s->n] = g;
        s->v[3 * s->n + 1] = (int32_t)r;
        s->v[3 * s->n + 2] = (int32_t)(r + bm < r1 ? r + bm : r1);
        s->n++;
    }
}

tile_status tile_op_grouped_gemm(const char *target, const tile_tensor *a, const tile_tensor *b, const tile_tensor *m_indices,
                                 const tile_tensor *offsets, const tile_tensor *masked_m, tile_tensor *out, char **error) {
    top_ctx c;
    const top_op *op = top_find("grouped_gemm");
    if (!top_begin(&c, "grouped_gemm", op, target)) return top_end(&c, error);
    int given = (m_indices != NULL) + (offsets != NULL) + (masked_m != NULL);
    if (given != 1) {
        top_fail(&c, TILE_ERR_USER, "m_indices, offsets, masked_m: pass exactly one (%d given): m_indices or offsets for the contiguous "
                 "layout, masked_m for the masked one", given);
        return top_end(&c, error);
    }
    bool masked = masked_m != NULL;
    if (!top_check_tensor(&c, "a", a) || !top_check_dtype(&c, "a", a, op->dtypes) || !top_check_rank(&c, "a", a, masked ? 3 : 2, masked ? 3 : 2) ||
        !top_check_tensor(&c, "b", b) || !top_check_rank(&c, "b", b, 3, 3))
        return top_end(&c, error);
    if (b->dtype != a->dtype) {
        top_fail(&c, TILE_ERR_USER, "b: dtype %s differs from a's %s", tile_dtype_name(b->dtype), tile_dtype_name(a->dtype));
        return top_end(&c, error);
    }
    int64_t G = b->shape[0], N = b->shape[1], K = b->shape[2], Ka = a->shape[a->rank - 1];
    if (Ka != K) {
        top_fail(&c, TILE_ERR_USER, "b: its K (%lld, b is [G, N, K]) does not match a's K (%lld)", (long long)K, (long long)Ka);
        return top_end(&c, error);
    }
    const char *iarg = m_indices ? "m_indices" : offsets ? "offsets" : "masked_m";
    const tile_tensor *ix = m_indices ? m_indices : offsets ? offsets : masked_m;
    if (!top_check_tensor(&c, iarg, ix) || !top_check_dtype(&c, iarg, ix, TOPD(I32)) || !top_check_rank(&c, iarg, ix, 1, 1))
        return top_end(&c, error);
    if (masked) {
        if (a->shape[0] != G) {
            top_fail(&c, TILE_ERR_USER, "a: %lld groups (a is [G, M_max, K]) but b has %lld", (long long)a->shape[0], (long long)G);
            return top_end(&c, error);
        }
        if (ix->shape[0] != G) {
            top_fail(&c, TILE_ERR_USER, "masked_m: shape [%lld] is not [G] = [%lld]", (long long)ix->shape[0], (long long)G);
            return top_end(&c, error);
        }
        int64_t MM = a->shape[1];
        tile_tensor h;
        if (!top_host_copy(&c, iarg, ix, &h)) return top_end(&c, error);
        for (int64_t g = 0; g < G && c.st == TILE_OK; g++) {
            int32_t v = ((const int32_t *)h.data)[g];
            if (v < 0 || v > MM) top_fail(&c, TILE_ERR_USER, "masked_m: entry %lld is %d, outside [0, M_max = %lld]", (long long)g, v, (long long)MM);
        }
        top_host_release(&h, ix);
        int64_t os[3] = {G, MM, N};
        if (c.st || !top_prepare_out(&c, "out", out, a->dtype, 3, os) || G * MM * N == 0) return top_end(&c, error);
        top_defs d;
        top_defs_init(&d);
        /* M_max is fixed per model (the decode batch bound): a compile-time value */
        top_def_int(&d, "MM", MM);
        top_def_dt(&d, "dtype", a->dtype);
        top_def_dt(&d, "out_dtype", a->dtype);
        top_kernel *k;
        if (!top_kernel_get(&c, op->src, "grouped_masked", &d, &k)) return top_end(&c, error);
        int64_t as[2] = {G * MM, K}, bs[2] = {G * N, K}, cs[2] = {G * MM, N};
        tile_tensor p[4] = {top_view(a, 2, as), top_view(b, 2, bs), *ix, top_view(out, 2, cs)};
        double sc[4] = {0};
        top_kernel_run(&c, k, p, 4, sc);
        return top_end(&c, error);
    }
    int64_t M = a->shape[0];
    if (M > INT32_MAX) {
        top_fail(&c, TILE_ERR_USER, "a: %lld rows; the contiguous layout takes at most 2^31 - 1", (long long)M);
        return top_end(&c, error);
    }
    /* cuda: the bf16/f16 tensor-core tile (128 x 256 x 64, two warpgroups, the Hopper
     * lowering's measured one), else 64 x 64 x 32 */
    const bool tc = !strcmp(c.target, "cuda") && a->dtype != TILE_DT_F32;
    int bm = tc ? 128 : 64;
    sched_t s = {0};
    bool gaps = false;
    tile_tensor h;
    if (!top_host_copy(&c, iarg, ix, &h)) return top_end(&c, error);
    const int32_t *v = h.data;
    if (m_indices) {
        if (ix->shape[0] != M) top_fail(&c, TILE_ERR_USER, "m_indices: shape [%lld] is not [M] = [%lld] (one group id per row of a)", (long long)ix->shape[0], (long long)M);
        for (int64_t r = 0; r < M && c.st == TILE_OK;) {
            int32_t g = v[r];
            if (g < -1 || g >= G) {
                top_fail(&c, TILE_ERR_USER, "m_indices: entry %lld is %d, outside [0, %lld) (or -1 for a padding row)", (long long)r, g, (long long)G);
                break;
            }
            int64_t e = r + 1;
            while (e < M && v[e] == g) e++;
            if (g < 0) gaps = true;
            else sched_add(&s, g, r, e, bm);
            r = e;
        }
    } else {
        if (ix->shape[0] != G) top_fail(&c, TILE_ERR_USER, "offsets: shape [%lld] is not [G] = [%lld] (each group's end row)", (long long)ix->shape[0], (long long)G);
        int64_t prev = 0;
        for (int64_t g = 0; g < G && c.st == TILE_OK; g++) {
            if (v[g] < prev || v[g] > M) {
                top_fail(&c, TILE_ERR_USER, "offsets: entry %lld is %d, outside [%lld, M = %lld] (offsets are non-decreasing end rows)", (long long)g, v[g],
                         (long long)prev, (long long)M);
                break;
            }
            sched_add(&s, (int32_t)g, prev, v[g], bm);
            prev = v[g];
        }
        if (prev < M) gaps = true;
    }
    top_host_release(&h, ix);
    int64_t os[2] = {M, N};
    if (c.st || !top_prepare_out(&c, "out", out, a->dtype, 2, os) || M * N == 0) {
        free(s.v);
        return top_end(&c, error);
    }
    /* rows of no group (-1 ids, rows past the last offset) are zeros */
    if (gaps && !top_fill(&c, out, tile_op_int(0))) {
        free(s.v);
        return top_end(&c, error);
    }
    if (s.n == 0) {
        free(s.v);
        return top_end(&c, error);
    }
    /* every tile full (each group's rows a multiple of block_M): stored whole by one copy */
    bool aligned = true;
    for (int64_t t = 0; t < s.n && aligned; t++) aligned = s.v[3 * t + 2] - s.v[3 * t + 1] == bm;
    tile_tensor sched = {s.v, TILE_DT_I32, 2, {s.n, 3}};
    top_defs d;
    top_defs_init(&d);
    top_def_int(&d, "block_M", bm);
    top_def_int(&d, "aligned", aligned);
    if (tc) {
        top_def_int(&d, "block_N", 256);
        top_def_int(&d, "block_K", 64);
        top_def_int(&d, "threads", 256);
        top_def_int(&d, "num_stages", 4);
    }
    top_def_dt(&d, "dtype", a->dtype);
    top_def_dt(&d, "out_dtype", a->dtype);
    top_kernel *k;
    if (top_stage(&c, &sched) && top_kernel_get(&c, op->src, op->factory, &d, &k)) {
        int64_t bs[2] = {G * N, K};
        tile_tensor p[4] = {*a, top_view(b, 2, bs), sched, *out};
        double sc[4] = {0};
        top_kernel_run(&c, k, p, 4, sc);
    }
    free(s.v);
    return top_end(&c, error);
}
