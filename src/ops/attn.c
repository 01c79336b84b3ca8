/* attn.c — the attention operators (attn.tl): scaled_dot_product_attention (dense, torch's
 * layout) and its backward, attention_varlen (packed sequences, flash_attn's layout) and attention_decode
 * (one query token per sequence against a paged KV cache, split over the KV length and
 * combined). Checks name the argument; the launch picks the compile-time values: the head
 * dim, the mask and epilogue flags, and the tile sizes (larger on cuda, where the 16-bit
 * head dims that are multiples of 64 take the Hopper attention lowering). Sizes (batch,
 * heads, sequence lengths, pages, splits) stay symbolic. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops_int.h"

#define BEGIN(name)                                          \
    top_ctx c;                                               \
    const top_op *op_ = top_find(name);                      \
    if (!top_begin(&c, name, op_, target)) return top_end(&c, error)

#define LOG2E 1.4426950408889634
#define ATTN_MAX_D 256

static const tile_op_attn_opts k_default_opts = {0, 0.0, 0, 0.0, NULL};

static int64_t pow2_at_least(int64_t n, int64_t lo) {
    int64_t t = lo;
    while (t < n) t *= 2;
    return t;
}

static void shape_of(char *b, size_t n, const tile_tensor *t) { top_shape_str(b, n, t->rank, t->shape); }

/* the options shared by the three operators; sinks [heads] f32 or q's dtype */
static bool check_opts(top_ctx *c, const tile_op_attn_opts *o, int64_t hq, tile_dtype qdt) {
    if (!isfinite(o->scale)) return top_fail(c, TILE_ERR_USER, "scale: %g is not finite", o->scale);
    if (!isfinite(o->softcap) || o->softcap < 0) return top_fail(c, TILE_ERR_USER, "softcap: %g must be finite and >= 0 (0: none)", o->softcap);
    if (o->window < 0) return top_fail(c, TILE_ERR_USER, "window: %lld must be >= 0 (0: no sliding window)", (long long)o->window);
    if (o->window > INT32_MAX) return top_fail(c, TILE_ERR_USER, "window: %lld is above 2^31-1", (long long)o->window);
    if (o->sinks) {
        const tile_tensor *s = o->sinks;
        if (!top_check_tensor(c, "sinks", s)) return false;
        if (s->dtype != TILE_DT_F32 && s->dtype != qdt)
            return top_fail(c, TILE_ERR_USER, "sinks: dtype %s is neither float32 nor q's %s", tile_dtype_name(s->dtype), tile_dtype_name(qdt));
        if (s->rank != 1 || s->shape[0] != hq) {
            char b[96];
            shape_of(b, sizeof b, s);
            return top_fail(c, TILE_ERR_USER, "sinks: shape %s, expected [%lld] (one logit per query head)", b, (long long)hq);
        }
    }
    return true;
}

/* q/k/v: the data dtypes and the GQA relation between their head counts */
static bool check_qkv_dtypes(top_ctx *c, const top_op *op, const tile_tensor *q, const tile_tensor *k, const tile_tensor *v) {
    if (!top_check_tensor(c, "q", q) || !top_check_dtype(c, "q", q, op->dtypes)) return false;
    if (!top_check_tensor(c, "k", k) || !top_check_tensor(c, "v", v)) return false;
    if (k->dtype != q->dtype) return top_fail(c, TILE_ERR_USER, "k: dtype %s differs from q's %s", tile_dtype_name(k->dtype), tile_dtype_name(q->dtype));
    if (v->dtype != q->dtype) return top_fail(c, TILE_ERR_USER, "v: dtype %s differs from q's %s", tile_dtype_name(v->dtype), tile_dtype_name(q->dtype));
    return true;
}

static bool check_heads(top_ctx *c, const char *karg, int64_t hq, int64_t hkv) {
    if (hkv == 0 || hq % hkv != 0)
        return top_fail(c, TILE_ERR_USER, "%s: head count %lld does not divide q's %lld", karg, (long long)hkv, (long long)hq);
    return true;
}

static bool check_head_dim(top_ctx *c, int64_t d) {
    if (d < 1 || d > ATTN_MAX_D) return top_fail(c, TILE_ERR_USER, "q: head dim %lld is outside 1..%d", (long long)d, ATTN_MAX_D);
    return true;
}

/* the scale of the logits and the two scalars of the kernels (attn.tl's header) */
static void score_scalars(const tile_op_attn_opts *o, int64_t d, double *sc, double *cap2) {
    double scale = o->scale != 0.0 ? o->scale : 1.0 / sqrt((double)d);
    if (o->softcap > 0) {
        *sc = scale / o->softcap;
        *cap2 = o->softcap * LOG2E;
    } else {
        *sc = scale * LOG2E;
        *cap2 = 0.0;
    }
}

/* tile sizes of the forward kernels: on cuda 128-row blocks of 256 threads (two warpgroups)
 * for 16-bit head dims up to 256; 64 x 64 tiles of 128 threads elsewhere */
static int64_t fwd_tiles(top_ctx *c, tile_dtype dt, int64_t d, top_defs *defs, int dense) {
    int cuda = !strcmp(c->target, "cuda"), h16 = dt == TILE_DT_F16 || dt == TILE_DT_BF16;
    int64_t bm = 64, bn = 64, th = 128, st = 1;
    if (cuda && h16 && d <= 128) bm = 128, bn = 128, th = 256, st = 2;
    else if (cuda && h16) bm = 128, bn = 64, th = 256, st = 1;
    top_def_int(defs, "block_M", bm);
    top_def_int(defs, "block_N", bn);
    top_def_int(defs, "threads", th);
    if (dense) top_def_int(defs, "num_stages", st);
    return bm;
}

/* the epilogue flags and the sink operand (a one-element dummy when absent) */
static void flag_defs(top_defs *d, const tile_op_attn_opts *o, tile_dtype qdt, int causal, int lse) {
    top_def_dt(d, "dtype", qdt);
    top_def_int(d, "causal", causal);
    top_def_int(d, "window", o->window > 0);
    top_def_int(d, "softcap", o->softcap > 0);
    top_def_int(d, "sink", o->sinks != NULL);
    top_def_int(d, "lse", lse);
    top_def_dt(d, "sink_dtype", o->sinks ? o->sinks->dtype : TILE_DT_F32);
}

static float g_dummy[2];
static tile_tensor dummy1(void) {
    tile_tensor t = {g_dummy, TILE_DT_F32, 1, {1}};
    return t;
}

/* rows with no key at all (a tensor of zero keys, which the kernels cannot take): out = 0 and
 * lse = the row's sink logit, else -inf. lse has `rank` dims, the head dim at `hdim`; the
 * sink value is broadcast by a strided copy, so this works on device data too. */
static bool empty_rows(top_ctx *c, const tile_op_attn_opts *o, tile_tensor *out, tile_tensor *lse, int hdim) {
    if (!top_fill(c, out, tile_op_float(0.0))) return false;
    if (!lse) return true;
    if (!o->sinks) return top_fill(c, lse, tile_op_float(-INFINITY));
    int64_t xs[8] = {0}, ys[8];
    xs[hdim] = 1;
    top_strides(lse->rank, lse->shape, ys);
    return top_copy_strided(c, o->sinks, 0, xs, lse, 0, ys, lse->rank, lse->shape);
}

/* The checks shared by the dense forward and backward: dtypes, q and k of rank 4
 * ([batch, heads, seq, head_dim]) agreeing in batch and head dim, v shaped like k, heads
 * that group, a supported head dim and valid options. */
static bool check_dense_qkv(top_ctx *c, const top_op *op_, const tile_tensor *q, const tile_tensor *k, const tile_tensor *v,
                           const tile_op_attn_opts *o) {
    if (!check_qkv_dtypes(c, op_, q, k, v)) return 0;
    if (q->rank != 4) return top_fail(c, TILE_ERR_USER, "q: rank %d, expected 4 ([batch, heads, seq, head_dim])", q->rank);
    if (k->rank != 4) return top_fail(c, TILE_ERR_USER, "k: rank %d, expected 4 ([batch, kv_heads, kv_seq, head_dim])", k->rank);
    if (k->shape[0] != q->shape[0] || k->shape[3] != q->shape[3]) {
        char a[96], b[96];
        shape_of(a, sizeof a, k), shape_of(b, sizeof b, q);
        return top_fail(c, TILE_ERR_USER, "k: shape %s does not match q's %s in batch and head dim", a, b);
    }
    return top_check_same_shape(c, "v", v, "k", k) && check_heads(c, "k", q->shape[1], k->shape[1]) &&
           check_head_dim(c, q->shape[3]) && check_opts(c, o, q->shape[1], q->dtype);
}

/* ---------------- scaled_dot_product_attention ---------------- */
tile_status tile_op_scaled_dot_product_attention(const char *target, const tile_tensor *q, const tile_tensor *k, const tile_tensor *v,
                                                 const tile_op_attn_opts *opts, tile_tensor *out, tile_tensor *lse, char **error) {
    BEGIN("scaled_dot_product_attention");
    const tile_op_attn_opts *o = opts ? opts : &k_default_opts;
    if (!check_dense_qkv(&c, op_, q, k, v, o)) return top_end(&c, error);
    int64_t B = q->shape[0], HQ = q->shape[1], SQ = q->shape[2], D = q->shape[3], HK = k->shape[1], SK = k->shape[2];
    if (!top_prepare_out(&c, "out", out, q->dtype, 4, q->shape)) return top_end(&c, error);
    int64_t ls[3] = {B, HQ, SQ};
    if (lse && !top_prepare_out(&c, "lse", lse, TILE_DT_F32, 3, ls)) return top_end(&c, error);
    if (B * HQ * SQ == 0) return top_end(&c, error);
    if (SK == 0) return empty_rows(&c, o, out, lse, 1), top_end(&c, error);
    top_defs d;
    top_defs_init(&d);
    top_def_int(&d, "D", D);
    fwd_tiles(&c, q->dtype, D, &d, 1);
    flag_defs(&d, o, q->dtype, o->is_causal != 0, lse != NULL);
    top_kernel *kk;
    if (!top_kernel_get(&c, op_->src, op_->factory, &d, &kk)) return top_end(&c, error);
    double sc, cap2;
    score_scalars(o, D, &sc, &cap2);
    tile_tensor Lv = lse ? top_view(lse, 2, (int64_t[]){B * HQ, SQ}) : dummy1();
    tile_tensor p[12] = {top_view3(q, B * HQ, SQ, D), top_view3(k, B * HK, SK, D), top_view3(v, B * HK, SK, D), o->sinks ? *o->sinks : dummy1(),
                         top_view3(out, B * HQ, SQ, D), Lv};
    /* torch's causal mask is top-left aligned: key j is visible to query i when j <= i */
    double s[12] = {0, 0, 0, 0, 0, 0, (double)(HQ / HK), (double)HQ, sc, cap2, 0.0, (double)(o->window - 1)};
    top_kernel_run(&c, kk, p, 12, s);
    return top_end(&c, error);
}

/* ---------------- attention_varlen ---------------- */
/* cu_seqlens [B + 1] int32: 0, non-decreasing, ending at the packed length */
static bool check_cu(top_ctx *c, const char *arg, const tile_tensor *cu, int64_t total) {
    if (!top_check_tensor(c, arg, cu)) return false;
    if (cu->dtype != TILE_DT_I32) return top_fail(c, TILE_ERR_USER, "%s: dtype %s, expected int32", arg, tile_dtype_name(cu->dtype));
    if (cu->rank != 1 || cu->shape[0] < 1) return top_fail(c, TILE_ERR_USER, "%s: expected a rank-1 tensor of batch + 1 offsets", arg);
    tile_tensor h;
    if (!top_host_copy(c, arg, cu, &h)) return false;
    const int32_t *v = h.data;
    bool ok = true;
    if (v[0] != 0) ok = top_fail(c, TILE_ERR_USER, "%s: entry 0 is %d, expected 0", arg, v[0]);
    for (int64_t i = 1; ok && i < cu->shape[0]; i++)
        if (v[i] < v[i - 1])
            ok = top_fail(c, TILE_ERR_USER, "%s: entry %lld (%d) is below entry %lld (%d)", arg, (long long)i, v[i], (long long)i - 1, v[i - 1]);
    if (ok && v[cu->shape[0] - 1] != total)
        ok = top_fail(c, TILE_ERR_USER, "%s: the last entry is %d, expected the packed length %lld", arg, v[cu->shape[0] - 1], (long long)total);
    top_host_release(&h, cu);
    return ok;
}

tile_status tile_op_attention_varlen(const char *target, const tile_tensor *q, const tile_tensor *k, const tile_tensor *v,
                                     const tile_tensor *cu_seqlens_q, const tile_tensor *cu_seqlens_k, const tile_op_attn_opts *opts,
                                     tile_tensor *out, tile_tensor *lse, char **error) {
    BEGIN("attention_varlen");
    const tile_op_attn_opts *o = opts ? opts : &k_default_opts;
    if (!check_qkv_dtypes(&c, op_, q, k, v)) return top_end(&c, error);
    if (q->rank != 3) return top_fail(&c, TILE_ERR_USER, "q: rank %d, expected 3 ([total_q, heads, head_dim])", q->rank), top_end(&c, error);
    if (k->rank != 3) return top_fail(&c, TILE_ERR_USER, "k: rank %d, expected 3 ([total_k, kv_heads, head_dim])", k->rank), top_end(&c, error);
    int64_t TQ = q->shape[0], HQ = q->shape[1], D = q->shape[2], TK = k->shape[0], HK = k->shape[1];
    if (k->shape[2] != D) {
        char a[96];
        shape_of(a, sizeof a, k);
        top_fail(&c, TILE_ERR_USER, "k: shape %s: head dim %lld differs from q's %lld", a, (long long)k->shape[2], (long long)D);
        return top_end(&c, error);
    }
    if (!top_check_same_shape(&c, "v", v, "k", k) || !check_heads(&c, "k", HQ, HK) || !check_head_dim(&c, D) ||
        !check_opts(&c, o, HQ, q->dtype) || !check_cu(&c, "cu_seqlens_q", cu_seqlens_q, TQ) ||
        !check_cu(&c, "cu_seqlens_k", cu_seqlens_k, TK))
        return top_end(&c, error);
    if (cu_seqlens_k->shape[0] != cu_seqlens_q->shape[0]) {
        top_fail(&c, TILE_ERR_USER, "cu_seqlens_k: %lld entries, cu_seqlens_q has %lld", (long long)cu_seqlens_k->shape[0],
                 (long long)cu_seqlens_q->shape[0]);
        return top_end(&c, error);
    }
    if (!top_prepare_out(&c, "out", out, q->dtype, 3, q->shape)) return top_end(&c, error);
    int64_t ls[2] = {HQ, TQ};
    if (lse && !top_prepare_out(&c, "lse", lse, TILE_DT_F32, 2, ls)) return top_end(&c, error);
    int64_t nb = cu_seqlens_q->shape[0] - 1;
    if (TQ * HQ == 0 || nb == 0) return top_end(&c, error);
    if (TK == 0) return empty_rows(&c, o, out, lse, 0), top_end(&c, error);
    top_defs d;
    top_defs_init(&d);
    top_def_int(&d, "D", D);
    int64_t bm = fwd_tiles(&c, q->dtype, D, &d, 0), nt = 0;
    flag_defs(&d, o, q->dtype, o->is_causal != 0, lse != NULL);
    top_kernel *kk;
    if (!top_kernel_get(&c, op_->src, op_->factory, &d, &kk)) return top_end(&c, error);
    double sc, cap2;
    score_scalars(o, D, &sc, &cap2);
    /* the schedule: one entry (sequence, query block) per block of block_M queries, built on
     * the host from cu_seqlens_q and staged where the kernel reads */
    tile_tensor hq;
    if (!top_host_copy(&c, "cu_seqlens_q", cu_seqlens_q, &hq)) return top_end(&c, error);
    const int32_t *cq = hq.data;
    for (int64_t b = 0; b < nb; b++) nt += (cq[b + 1] - cq[b] + bm - 1) / bm;
    int32_t *sp = malloc((size_t)nt * 2 * sizeof *sp);
    if (!sp) {
        top_host_release(&hq, cu_seqlens_q);
        return top_fail(&c, TILE_ERR_USER, "out of memory"), top_end(&c, error);
    }
    for (int64_t b = 0, t = 0; b < nb; b++)
        for (int64_t j = 0; j * bm < cq[b + 1] - cq[b]; j++, t++) sp[2 * t] = (int32_t)b, sp[2 * t + 1] = (int32_t)j;
    top_host_release(&hq, cu_seqlens_q);
    tile_tensor sched = {sp, TILE_DT_I32, 2, {nt, 2}};
    if (!top_stage(&c, &sched)) {
        free(sp);
        return top_end(&c, error);
    }
    tile_tensor p[13] = {*q, *k, *v, *cu_seqlens_q, *cu_seqlens_k, sched, o->sinks ? *o->sinks : dummy1(), *out, lse ? *lse : dummy1()};
    double s[13] = {0, 0, 0, 0, 0, 0, 0, 0, 0, (double)(HQ / HK), sc, cap2, (double)(o->window - 1)};
    top_kernel_run(&c, kk, p, 13, s);
    free(sp);
    return top_end(&c, error);
}

/* ---------------- attention_decode ---------------- */
tile_status tile_op_attention_decode(const char *target, const tile_tensor *q, const tile_tensor *k_cache, const tile_tensor *v_cache,
                                     const tile_tensor *block_table, const tile_tensor *seq_lens, const tile_op_attn_opts *opts, int num_splits,
                                     tile_tensor *out, tile_tensor *lse, char **error) {
    BEGIN("attention_decode");
    const tile_op_attn_opts *o = opts ? opts : &k_default_opts;
    if (!check_qkv_dtypes(&c, op_, q, k_cache, v_cache)) return top_end(&c, error);
    if (q->rank != 3) return top_fail(&c, TILE_ERR_USER, "q: rank %d, expected 3 ([batch, heads, head_dim])", q->rank), top_end(&c, error);
    if (k_cache->rank != 4)
        return top_fail(&c, TILE_ERR_USER, "k_cache: rank %d, expected 4 ([num_blocks, block_size, kv_heads, head_dim])", k_cache->rank),
               top_end(&c, error);
    int64_t B = q->shape[0], HQ = q->shape[1], D = q->shape[2];
    int64_t NBLK = k_cache->shape[0], PAGE = k_cache->shape[1], HK = k_cache->shape[2];
    char a[96];
    if (k_cache->shape[3] != D) {
        shape_of(a, sizeof a, k_cache);
        top_fail(&c, TILE_ERR_USER, "k_cache: shape %s: head dim %lld differs from q's %lld", a, (long long)k_cache->shape[3], (long long)D);
        return top_end(&c, error);
    }
    if (!top_check_same_shape(&c, "v_cache", v_cache, "k_cache", k_cache) || !check_heads(&c, "k_cache", HQ, HK) || !check_head_dim(&c, D) ||
        !check_opts(&c, o, HQ, q->dtype))
        return top_end(&c, error);
    if (PAGE < 1 || PAGE > 256) {
        top_fail(&c, TILE_ERR_USER, "k_cache: block size %lld is outside 1..256", (long long)PAGE);
        return top_end(&c, error);
    }
    if (num_splits < 0 || num_splits > 256) {
        top_fail(&c, TILE_ERR_USER, "num_splits: %d is outside 0..256 (0: chosen from the shapes)", num_splits);
        return top_end(&c, error);
    }
    if (!top_check_tensor(&c, "block_table", block_table) || !top_check_tensor(&c, "seq_lens", seq_lens)) return top_end(&c, error);
    if (block_table->dtype != TILE_DT_I32 || block_table->rank != 2 || block_table->shape[0] != B) {
        shape_of(a, sizeof a, block_table);
        top_fail(&c, TILE_ERR_USER, "block_table: %s %s, expected int32 [%lld, max_blocks]", tile_dtype_name(block_table->dtype), a, (long long)B);
        return top_end(&c, error);
    }
    if (seq_lens->dtype != TILE_DT_I32 || seq_lens->rank != 1 || seq_lens->shape[0] != B) {
        shape_of(a, sizeof a, seq_lens);
        top_fail(&c, TILE_ERR_USER, "seq_lens: %s %s, expected int32 [%lld]", tile_dtype_name(seq_lens->dtype), a, (long long)B);
        return top_end(&c, error);
    }
    /* every page a sequence reaches must be in the table and in the cache: checked here,
     * since the kernel reads through them */
    int64_t MAXB = block_table->shape[1], max_pages = 0;
    tile_tensor hs, hb;
    if (!top_host_copy(&c, "seq_lens", seq_lens, &hs)) return top_end(&c, error);
    if (!top_host_copy(&c, "block_table", block_table, &hb)) return top_host_release(&hs, seq_lens), top_end(&c, error);
    const int32_t *sl = hs.data, *bt = hb.data;
    bool ok = true;
    for (int64_t b = 0; ok && b < B; b++) {
        if (sl[b] < 0 || sl[b] > MAXB * PAGE) {
            ok = top_fail(&c, TILE_ERR_USER, "seq_lens: entry %lld is %d, outside [0, %lld] (max_blocks %lld x block size %lld)", (long long)b,
                          sl[b], (long long)(MAXB * PAGE), (long long)MAXB, (long long)PAGE);
            break;
        }
        int64_t np = (sl[b] + PAGE - 1) / PAGE;
        if (np > max_pages) max_pages = np;
        for (int64_t j = 0; ok && j < np; j++)
            if (bt[b * MAXB + j] < 0 || bt[b * MAXB + j] >= NBLK)
                ok = top_fail(&c, TILE_ERR_USER, "block_table: entry [%lld, %lld] is %d, outside [0, %lld)", (long long)b, (long long)j,
                              bt[b * MAXB + j], (long long)NBLK);
    }
    top_host_release(&hs, seq_lens);
    top_host_release(&hb, block_table);
    if (!ok) return top_end(&c, error);
    if (!top_prepare_out(&c, "out", out, q->dtype, 3, q->shape)) return top_end(&c, error);
    int64_t ls[2] = {B, HQ};
    if (lse && !top_prepare_out(&c, "lse", lse, TILE_DT_F32, 2, ls)) return top_end(&c, error);
    if (B * HQ == 0) return top_end(&c, error);
    if (max_pages == 0) return empty_rows(&c, o, out, lse, 1), top_end(&c, error);
    /* splits: enough (KV head, sequence, split) blocks to fill a GPU, at least one page each */
    int64_t ns = num_splits;
    if (ns == 0) {
        int64_t want = (128 + B * HK - 1) / (B * HK);
        ns = want < max_pages ? want : max_pages;
        if (ns > 64) ns = 64;
        if (ns < 1) ns = 1;
    }
    int64_t G = HQ / HK;
    tile_tensor opart = {0}, lpart = {0};
    int64_t os[4] = {B * HK, G, ns, D}, lss[3] = {B * HK, G, ns};
    if (!top_temp(&c, &opart, TILE_DT_F32, 4, os) || !top_temp(&c, &lpart, TILE_DT_F32, 3, lss)) goto done;
    {
        top_defs d;
        top_defs_init(&d);
        top_def_int(&d, "D", D);
        top_def_int(&d, "page", PAGE);
        top_def_int(&d, "block_H", pow2_at_least(G, 16));
        top_def_dt(&d, "dtype", q->dtype);
        top_def_int(&d, "softcap", o->softcap > 0);
        top_def_int(&d, "window", o->window > 0);
        top_kernel *kd, *kc;
        if (!top_kernel_get(&c, op_->src, op_->factory, &d, &kd)) goto done;
        double sc, cap2;
        score_scalars(o, D, &sc, &cap2);
        tile_tensor p[10] = {top_view3(q, B * HK, G, D), *k_cache, *v_cache, *block_table, *seq_lens, opart, lpart};
        double s[10] = {0, 0, 0, 0, 0, 0, 0, sc, cap2, (double)(o->window - 1)};
        if (!top_kernel_run(&c, kd, p, 10, s)) goto done;
        top_defs_init(&d);
        top_def_int(&d, "D", D);
        top_def_int(&d, "NSP", pow2_at_least(ns, 4));
        top_def_dt(&d, "dtype", q->dtype);
        top_def_int(&d, "sink", o->sinks != NULL);
        top_def_int(&d, "lse", lse != NULL);
        top_def_dt(&d, "sink_dtype", o->sinks ? o->sinks->dtype : TILE_DT_F32);
        if (!top_kernel_get(&c, op_->src, "attn_combine", &d, &kc)) goto done;
        tile_tensor pc[6] = {top_view3(&opart, B * HQ, ns, D), top_view(&lpart, 2, (int64_t[]){B * HQ, ns}), o->sinks ? *o->sinks : dummy1(),
                             top_view(out, 2, (int64_t[]){B * HQ, D}), lse ? top_view1(lse) : dummy1()};
        double s2[6] = {0, 0, 0, 0, 0, (double)HQ};
        top_kernel_run(&c, kc, pc, 6, s2);
    }
done:
    top_free(&opart);
    top_free(&lpart);
    return top_end(&c, error);
}

/* ---------------- scaled_dot_product_attention_backward ---------------- */
tile_status tile_op_scaled_dot_product_attention_backward(const char *target, const tile_tensor *q, const tile_tensor *k, const tile_tensor *v,
                                                          const tile_tensor *out, const tile_tensor *dout, const tile_tensor *lse,
                                                          const tile_op_attn_opts *opts, tile_tensor *dq, tile_tensor *dk, tile_tensor *dv,
                                                          tile_tensor *dsinks, char **error) {
    BEGIN("scaled_dot_product_attention_backward");
    const tile_op_attn_opts *o = opts ? opts : &k_default_opts;
    if (!check_dense_qkv(&c, op_, q, k, v, o)) return top_end(&c, error);
    int64_t B = q->shape[0], HQ = q->shape[1], SQ = q->shape[2], D = q->shape[3], HK = k->shape[1], SK = k->shape[2];
    char a[96], bb[96];
    if (!top_check_tensor(&c, "out", out) || !top_check_same_shape(&c, "out", out, "q", q) || !top_check_tensor(&c, "dout", dout) ||
        !top_check_same_shape(&c, "dout", dout, "q", q) || !top_check_tensor(&c, "lse", lse))
        return top_end(&c, error);
    if (out->dtype != q->dtype || dout->dtype != q->dtype) {
        top_fail(&c, TILE_ERR_USER, "%s: dtype %s differs from q's %s", out->dtype != q->dtype ? "out" : "dout",
                 tile_dtype_name(out->dtype != q->dtype ? out->dtype : dout->dtype), tile_dtype_name(q->dtype));
        return top_end(&c, error);
    }
    int64_t ls[3] = {B, HQ, SQ};
    if (lse->dtype != TILE_DT_F32 || lse->rank != 3 || lse->shape[0] != B || lse->shape[1] != HQ || lse->shape[2] != SQ) {
        shape_of(a, sizeof a, lse);
        top_shape_str(bb, sizeof bb, 3, ls);
        top_fail(&c, TILE_ERR_USER, "lse: %s %s, expected float32 %s (the forward's logsumexp)", tile_dtype_name(lse->dtype), a, bb);
        return top_end(&c, error);
    }
    if (!top_prepare_out(&c, "dq", dq, q->dtype, 4, q->shape) || !top_prepare_out(&c, "dk", dk, q->dtype, 4, k->shape) ||
        !top_prepare_out(&c, "dv", dv, q->dtype, 4, k->shape))
        return top_end(&c, error);
    if (dsinks && !o->sinks) return top_fail(&c, TILE_ERR_USER, "dsinks: given without opts->sinks"), top_end(&c, error);
    if (dsinks && !top_prepare_out(&c, "dsinks", dsinks, TILE_DT_F32, 1, &HQ)) return top_end(&c, error);
    if ((B * SQ == 0 || SK == 0) && !dsinks) {
        /* no key or no query: every gradient is 0 */
        top_fill(&c, dq, tile_op_float(0.0));
        top_fill(&c, dk, tile_op_float(0.0));
        top_fill(&c, dv, tile_op_float(0.0));
        return top_end(&c, error);
    }
    if (B * SQ == 0) {
        top_fill(&c, dk, tile_op_float(0.0));
        top_fill(&c, dv, tile_op_float(0.0));
        top_fill(&c, dsinks, tile_op_float(0.0));
        return top_end(&c, error);
    }
    tile_tensor delta = {0}, gs = {0};
    int64_t dsh[2] = {B * HQ, SQ};
    if (!top_temp(&c, &delta, TILE_DT_F32, 2, dsh) || (dsinks && !top_temp(&c, &gs, TILE_DT_F32, 2, dsh))) goto done;
    {
        double scale = o->scale != 0.0 ? o->scale : 1.0 / sqrt((double)D), cap = o->softcap, isc = cap > 0 ? scale / cap : 0.0;
        tile_tensor Q = top_view3(q, B * HQ, SQ, D), K = top_view3(k, B * HK, SK, D), V = top_view3(v, B * HK, SK, D);
        tile_tensor dO = top_view3(dout, B * HQ, SQ, D), L = top_view(lse, 2, dsh);
        top_defs d;
        top_defs_init(&d);
        top_def_int(&d, "D", D);
        top_def_dt(&d, "dtype", q->dtype);
        top_kernel *kp, *kkv, *kq;
        top_defs dp = d;
        top_def_int(&dp, "sink", dsinks != NULL);
        top_def_dt(&dp, "sink_dtype", o->sinks ? o->sinks->dtype : TILE_DT_F32);
        if (!top_kernel_get(&c, op_->src, "attn_bwd_pre", &dp, &kp)) goto done;
        tile_tensor pp[7] = {top_view3(out, B * HQ, SQ, D), dO, delta, o->sinks ? *o->sinks : dummy1(), dsinks ? L : dummy1(), dsinks ? gs : dummy1()};
        double sp[7] = {0, 0, 0, 0, 0, 0, (double)HQ};
        if (!top_kernel_run(&c, kp, pp, 7, sp)) goto done;
        if (dsinks) {
            /* dsinks[h] = the sum of the rows' shares over batch and queries */
            tile_tensor g3 = top_view(&gs, 3, (int64_t[]){B, HQ, SQ});
            int dims[2] = {0, 2};
            if (!top_reduce_into(&c, "sum", &g3, dims, 2, false, dsinks)) goto done;
        }
        if (SK == 0) {
            top_fill(&c, dq, tile_op_float(0.0));
            top_fill(&c, dk, tile_op_float(0.0));
            top_fill(&c, dv, tile_op_float(0.0));
            goto done;
        }
        top_def_int(&d, "causal", o->is_causal != 0);
        top_def_int(&d, "window", o->window > 0);
        top_def_int(&d, "softcap", cap > 0);
        if (!top_kernel_get(&c, op_->src, "attn_bwd_dkdv", &d, &kkv) || !top_kernel_get(&c, op_->src, "attn_bwd_dq", &d, &kq)) goto done;
        /* torch's causal mask is top-left aligned (off = 0) */
        tile_tensor p1[14] = {Q, K, V, dO, L, delta, top_view3(dk, B * HK, SK, D), top_view3(dv, B * HK, SK, D)};
        double s1[14] = {0, 0, 0, 0, 0, 0, 0, 0, (double)(HQ / HK), scale, isc, cap, 0.0, (double)(o->window - 1)};
        if (!top_kernel_run(&c, kkv, p1, 14, s1)) goto done;
        tile_tensor p2[13] = {Q, K, V, dO, L, delta, top_view3(dq, B * HQ, SQ, D)};
        double s2[13] = {0, 0, 0, 0, 0, 0, 0, (double)(HQ / HK), scale, isc, cap, 0.0, (double)(o->window - 1)};
        top_kernel_run(&c, kq, p2, 13, s2);
    }
done:
    top_free(&delta);
    top_free(&gs);
    return top_end(&c, error);
}
