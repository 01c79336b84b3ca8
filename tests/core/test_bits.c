/* test_bits.c — bit identity of every float conversion path of libtile and libtilelink.
 *
 * One rule (docs/numbers.md), one source (src/base/convert.h), many compiled copies: the
 * header's own entry points (the f32 fast paths, the 32-bit and the 64-bit generic encoders),
 * libtile's public tile_store_f / tile_load_f (the interpreter's stores), libtilelink's
 * tlink_* converters and its fp8 gradient compressor (a separate, vectorised encoder), the
 * code the CPU, OpenCL and CUDA generators emit for casts (tests/core/bits/casts.tl), and the
 * header compiled by NVRTC for the device (as tilelink/kernels/gpu_coll.cu uses it). Every
 * path must give the same bits as tcv_encode_f64 of the exact value, NaN encodings included.
 *
 *   test_bits host [--stride S]   every S-th f32 pattern (default 1: all 2^32; S > 1 adds the
 *                                 rounding-boundary set) through the host paths; every f16,
 *                                 bf16, fp8 and fp4 code through the decoders; the fp8
 *                                 compressor on all 2^31.1 patterns |x| <= 448
 *   test_bits targets CASTS.tl [T,...] [--stride S]
 *                                 casts.tl on each target (default cpu,interp,opencl,cuda;
 *                                 an unavailable one is skipped): every S-th pattern (S = 1:
 *                                 all 2^32) plus the rounding-boundary set, below
 *   test_bits device CONVERT.h [--stride S]
 *                                 convert.h compiled by NVRTC for the GPU here (or sm_90 when
 *                                 there is none: a compile check) and, with a GPU, run over
 *                                 every S-th pattern (default 1) against the host
 * Exit 0 when everything matched, 1 on a mismatch (the first ones are printed), 77 when
 * nothing could run (no target, no NVRTC).
 *
 * The rounding-boundary set: every pattern whose low 13 bits are 0, 1, 0xFFF, 0x1000,
 * 0x1001 or 0x1FFF (3.1 million): the values of every format, the midpoints between them and
 * their f32 neighbours (f16 drops 13 bits, the others more), all NaN and inf encodings'
 * neighbourhoods, and the subnormal boundaries. */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"
#include "base/convert.h"
#include "tile.h"
#include "tlink.h"

/* ---------- mismatch reports ---------- */
static atomic_ullong g_fail;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

static void mismatch(const char *path, uint32_t in, uint64_t got, uint64_t want) {
    unsigned long long n = atomic_fetch_add(&g_fail, 1);
    if (n < 20) {
        pthread_mutex_lock(&g_mu);
        fprintf(stderr, "FAIL %s: input 0x%08" PRIx32 " (%.9g): got 0x%" PRIx64 ", want 0x%" PRIx64 "\n", path, in,
                (double)tcv_bits_f32(in), got, want);
        pthread_mutex_unlock(&g_mu);
    }
}

/* ---------- a parallel loop over [0, n) in blocks ---------- */
typedef void (*block_fn)(uint64_t lo, uint64_t hi, void *ctx);
typedef struct {
    atomic_ullong next;
    uint64_t n, block;
    block_fn fn;
    void *ctx;
} par_job;

static void *par_worker(void *p) {
    par_job *j = p;
    for (;;) {
        uint64_t lo = atomic_fetch_add(&j->next, j->block);
        if (lo >= j->n) return NULL;
        uint64_t hi = lo + j->block < j->n ? lo + j->block : j->n;
        j->fn(lo, hi, j->ctx);
    }
}

static int nthreads(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 64 ? 64 : (int)n;
}

static void par_for(uint64_t n, uint64_t block, block_fn fn, void *ctx) {
    par_job j = {0, n, block, fn, ctx};
    int nt = nthreads();
    pthread_t t[64];
    for (int i = 1; i < nt; i++) pthread_create(&t[i], NULL, par_worker, &j);
    par_worker(&j);
    for (int i = 1; i < nt; i++) pthread_join(t[i], NULL);
}

/* ---------- the reference: one rounding of the exact value (tcv_encode_f64) ---------- */
typedef struct {
    uint16_t h, b;
    uint8_t e4, e5, f4;
} refs;

static inline refs ref_of(uint32_t u) {
    double d = (double)tcv_bits_f32(u); /* exact */
    refs r;
    r.h = (uint16_t)tcv_encode_f64(&TCV_F16, d);
    r.b = (uint16_t)tcv_encode_f64(&TCV_BF16, d);
    r.e4 = (uint8_t)tcv_encode_f64(&TCV_E4M3, d);
    r.e5 = (uint8_t)tcv_encode_f64(&TCV_E5M2, d);
    r.f4 = (uint8_t)tcv_encode_f64(&TCV_E2M1, d);
    return r;
}

#define CMP(path, in, got, want)                                         \
    do {                                                                 \
        uint64_t g_ = (uint64_t)(got), w_ = (uint64_t)(want);            \
        if (__builtin_expect(g_ != w_, 0)) mismatch(path, in, g_, w_);   \
    } while (0)

/* the inputs of a run: patterns [0, n) of the sweep (stride) then the boundary set */
typedef struct {
    uint64_t stride, nstride, nbound;
} sweep;

static uint32_t sweep_at(const sweep *s, uint64_t i) {
    if (i < s->nstride) return (uint32_t)(i * s->stride + (s->stride > 1 ? 7 : 0));
    i -= s->nstride;
    static const uint32_t low[6] = {0, 1, 0xFFF, 0x1000, 0x1001, 0x1FFF};
    return (uint32_t)((i / 6) << 13) | low[i % 6];
}

/* ---------- host: every f32 pattern through every host path ---------- */
static void host_block(uint64_t lo, uint64_t hi, void *ctx) {
    const sweep *s = ctx;
    for (uint64_t i = lo; i < hi; i++) {
        uint32_t u = sweep_at(s, i);
        float x = tcv_bits_f32(u);
        double d = (double)x;
        refs r = ref_of(u);
        uint16_t s16;
        uint8_t s8;
        /* the header's f32 entry points (what generated code and tilelink call) */
        CMP("convert.h tcv_f32_to_f16_bits", u, tcv_f32_to_f16_bits(x), r.h);
        CMP("convert.h tcv_f32_to_bf16_bits", u, tcv_f32_to_bf16_bits(x), r.b);
        CMP("convert.h tcv_encode_f32(F16)", u, tcv_encode_f32(&TCV_F16, x), r.h);
        CMP("convert.h tcv_encode_f32(BF16)", u, tcv_encode_f32(&TCV_BF16, x), r.b);
        CMP("convert.h tcv_f32_to_e4m3_bits", u, tcv_f32_to_e4m3_bits(x), r.e4);
        CMP("convert.h tcv_f32_to_e5m2_bits", u, tcv_f32_to_e5m2_bits(x), r.e5);
        CMP("convert.h tcv_f32_to_e2m1_bits", u, tcv_f32_to_e2m1_bits(x), r.f4);
        /* libtilelink's copy */
        CMP("libtilelink tlink_f32_to_f16", u, tlink_f32_to_f16(x), r.h);
        CMP("libtilelink tlink_f32_to_bf16", u, tlink_f32_to_bf16(x), r.b);
        CMP("libtilelink tlink_f32_to_fp8_e4m3", u, tlink_f32_to_fp8_e4m3(x), r.e4);
        CMP("libtilelink tlink_f32_to_fp8_e5m2", u, tlink_f32_to_fp8_e5m2(x), r.e5);
        /* libtile's copy: the stores of the interpreter and of tile_store_f */
        tile_store_f(TILE_DT_F16, &s16, 0, d);
        CMP("libtile tile_store_f(float16)", u, s16, r.h);
        tile_store_f(TILE_DT_BF16, &s16, 0, d);
        CMP("libtile tile_store_f(bfloat16)", u, s16, r.b);
        tile_store_f(TILE_DT_FP8_E4M3, &s8, 0, d);
        CMP("libtile tile_store_f(float8_e4m3)", u, s8, r.e4);
        tile_store_f(TILE_DT_FP8_E5M2, &s8, 0, d);
        CMP("libtile tile_store_f(float8_e5m2)", u, s8, r.e5);
        s8 = 0;
        tile_store_f(TILE_DT_FP4_E2M1, &s8, 0, d);
        CMP("libtile tile_store_f(float4_e2m1)", u, s8, r.f4);
        /* float32 itself: the identity (NaN: canonical, sign kept) */
        uint32_t s32;
        tile_store_f(TILE_DT_F32, &s32, 0, d);
        CMP("libtile tile_store_f(float32)", u, s32, (uint32_t)tcv_encode_f64(&TCV_F32, d));
    }
}

/* libtilelink's fp8 compressor (tilelink/src/compress.c, SSE2 and scalar encoders) on every
 * pattern it can hold exactly: chunks whose largest magnitude is 448 have the scale 1, so
 * the code of x is the conversion of x. Patterns above 448 would change the chunk's scale,
 * and NaN is clamped to -448 by design (docs/numbers.md, "Where Tile differs"). */
#define CK 4096 /* elements per chunk: 448 first, then 4095 patterns */
static void compress_block(uint64_t lo, uint64_t hi, void *ctx) {
    const uint64_t step = *(const uint64_t *)ctx; /* every step-th chunk */
    float x[CK];
    uint8_t out[CK + 4];
    uint32_t in[CK];
    const uint32_t top = 0x43E00000u; /* 448 */
    const uint64_t per_sign = (uint64_t)top + 1, total = 2 * per_sign;
    for (uint64_t c = lo * step; c < hi * step; c += step) {
        int k = 1;
        x[0] = 448.0f;
        in[0] = top;
        for (uint64_t i = c * (CK - 1); k < CK && i < total; i++, k++) {
            uint32_t u = (uint32_t)(i % per_sign) | (i >= per_sign ? 0x80000000u : 0u);
            in[k] = u;
            x[k] = tcv_bits_f32(u);
        }
        if (tlink_compress_encode(TLINK_COMPRESS_FP8, x, (size_t)k, CK, out) != TLINK_OK) {
            mismatch("libtilelink tlink_compress_encode(fp8) failed", in[0], 0, 0);
            return;
        }
        float scale;
        memcpy(&scale, out, 4);
        CMP("libtilelink fp8 compressor scale", in[0], tcv_f32_bits(scale), tcv_f32_bits(1.0f));
        for (int q = 0; q < k; q++) CMP("libtilelink fp8 compressor", in[q], out[4 + q], tcv_f32_to_e4m3_bits(x[q]));
    }
}

/* decoders: every code of every format */
static void check_decoders(void) {
    for (uint32_t c = 0; c < 65536; c++) {
        uint32_t want = tcv_f32_bits(tcv_f16_bits_to_f32((uint16_t)c));
        double wd = tcv_decode_small(&TCV_F16, c);
        uint16_t h = (uint16_t)c;
        /* the f16 decoder keeps NaN payloads; the generic one gives the canonical NaN */
        if (wd == wd) CMP("convert.h tcv_decode_small(F16)", c, tcv_f32_bits((float)wd), want);
        CMP("libtilelink tlink_f16_to_f32", c, tcv_f32_bits(tlink_f16_to_f32(h)), want);
        CMP("libtile tile_load_f(float16)", c, tcv_f32_bits((float)tile_load_f(TILE_DT_F16, &h, 0)), want);
        want = tcv_f32_bits(tcv_bf16_bits_to_f32(h));
        /* exact: the bits shifted into place, a signalling NaN quieted */
        CMP("convert.h tcv_bf16_bits_to_f32", c, want, (c << 16) | ((c & 0x7FFF) > 0x7F80 ? 0x400000u : 0u));
        CMP("libtilelink tlink_bf16_to_f32", c, tcv_f32_bits(tlink_bf16_to_f32(h)), want);
        CMP("libtile tile_load_f(bfloat16)", c, tcv_f32_bits((float)tile_load_f(TILE_DT_BF16, &h, 0)), want);
        /* a code survives decode then encode (NaN codes: the canonical NaN of the sign) */
        float v = tcv_f16_bits_to_f32(h);
        CMP("f16 decode/encode round trip", c, tcv_f32_to_f16_bits(v), v != v ? (c & 0x8000) | 0x7E00 : c);
        v = tcv_bf16_bits_to_f32(h);
        CMP("bf16 decode/encode round trip", c, tcv_f32_to_bf16_bits(v), v != v ? (c & 0x8000) | 0x7FC0 : c);
    }
    const tcv_fmt *fm[3] = {&TCV_E4M3, &TCV_E5M2, &TCV_E2M1};
    const tile_dtype dt[3] = {TILE_DT_FP8_E4M3, TILE_DT_FP8_E5M2, TILE_DT_FP4_E2M1};
    const char *nm[3] = {"e4m3", "e5m2", "e2m1"};
    uint8_t enc[256 + 4];
    float dec[256], xs[256];
    for (int f = 0; f < 3; f++) {
        int ncodes = f == 2 ? 16 : 256;
        char path[96];
        for (int c = 0; c < ncodes; c++) {
            uint8_t b = (uint8_t)c;
            float want = tcv_decode_f32(fm[f], b);
            double wd = tcv_decode_small(fm[f], b);
            uint32_t wb = tcv_f32_bits(want);
            snprintf(path, sizeof path, "convert.h tcv_decode_small(%s)", nm[f]);
            CMP(path, (uint32_t)c, tcv_f32_bits((float)wd), wb);
            snprintf(path, sizeof path, "libtile tile_load_f(%s)", nm[f]);
            CMP(path, (uint32_t)c, tcv_f32_bits((float)tile_load_f(dt[f], &b, 0)), wb);
            if (f < 2) {
                snprintf(path, sizeof path, "libtilelink tlink_fp8_%s_to_f32", nm[f]);
                CMP(path, (uint32_t)c, tcv_f32_bits(f == 0 ? tlink_fp8_e4m3_to_f32(b) : tlink_fp8_e5m2_to_f32(b)), wb);
            }
            /* round trip: a code's value encodes to the code (NaN: canonical NaN; e5m2 inf
             * saturates; e2m1 -0 stays -0) */
            uint64_t back = tcv_encode_f32(fm[f], want), expect = (uint64_t)c;
            if (want != want) expect = ((uint64_t)c & (1u << fm[f]->sign_shift)) | fm[f]->nan_bits;
            else if (fm[f]->inf_bits && ((uint64_t)c & ((1u << fm[f]->sign_shift) - 1)) == fm[f]->inf_bits)
                expect = ((uint64_t)c & (1u << fm[f]->sign_shift)) | fm[f]->max_bits;
            snprintf(path, sizeof path, "%s decode/encode round trip", nm[f]);
            CMP(path, (uint32_t)c, back, expect);
            xs[c] = want;
        }
        if (f == 0) { /* the compressor's decoder: every finite code at scale 1 */
            float in[256];
            int k = 0;
            in[k++] = 448.0f;
            for (int c = 0; c < 256; c++)
                if (xs[c] == xs[c]) in[k++] = xs[c];
            if (tlink_compress_encode(TLINK_COMPRESS_FP8, in, (size_t)k, 256, enc) != TLINK_OK ||
                tlink_compress_decode(TLINK_COMPRESS_FP8, enc, (size_t)k, 256, dec) != TLINK_OK) {
                mismatch("libtilelink fp8 compressor codec failed", 0, 0, 0);
            } else {
                for (int q = 0; q < k; q++) CMP("libtilelink fp8 compressor decode", tcv_f32_bits(in[q]), tcv_f32_bits(dec[q]), tcv_f32_bits(in[q]));
            }
        }
    }
}

static sweep make_sweep(uint64_t stride) {
    sweep s = {stride, ((1ull << 32) + stride - 1) / stride, 6ull << 19};
    if (stride > 1) s.nstride = ((1ull << 32) - 7 + stride - 1) / stride;
    return s;
}

static int run_host(int argc, char **argv) {
    uint64_t stride = 1;
    for (int i = 0; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--stride")) stride = strtoull(argv[i + 1], NULL, 0);
    if (!stride) stride = 1;
    double t0 = tile_now();
    check_decoders();
    sweep s = make_sweep(stride);
    par_for(stride == 1 ? s.nstride : s.nstride + s.nbound, 1u << 20, host_block, &s);
    double t1 = tile_now();
    const uint64_t chunks = (2 * (0x43E00000ull + 1) + CK - 2) / (CK - 1);
    par_for((chunks + stride - 1) / stride, 64, compress_block, &stride);
    double t2 = tile_now();
    if (stride == 1) printf("host: all 2^32 f32 patterns through 18 paths (%.1f s, %d threads)", t1 - t0, nthreads());
    else
        printf("host: every %" PRIu64 "-th f32 pattern + %" PRIu64 " boundary patterns through 18 paths (%.1f s, %d threads)",
               stride, s.nbound, t1 - t0, nthreads());
    printf("; %s of the 2^31.1 patterns |x| <= 448 through the fp8 compressor (%.1f s); every code through 12 "
           "decoders\n", stride == 1 ? "all" : "every stride-th chunk", t2 - t1);
    return 0;
}

/* ---------- generated code: casts.tl on every target ---------- */

typedef struct {
    const uint32_t *in;
    const uint16_t *h, *b;
    const uint8_t *e4, *e5, *f4;
    const char *target;
    char path[5][64];
} cmp_ctx;

static void cmp_block(uint64_t lo, uint64_t hi, void *p) {
    cmp_ctx *c = p;
    for (uint64_t i = lo; i < hi; i++) {
        uint32_t u = c->in[i];
        refs r = ref_of(u);
        CMP(c->path[0], u, c->h[i], r.h);
        CMP(c->path[1], u, c->b[i], r.b);
        CMP(c->path[2], u, c->e4[i], r.e4);
        CMP(c->path[3], u, c->e5[i], r.e5);
        CMP(c->path[4], u, (c->f4[i >> 1] >> ((i & 1) * 4)) & 0xF, r.f4);
    }
}

static int run_decode(tile_kernel *k, const char *target) {
    enum { N = 65536 };
    uint16_t *h = malloc(2 * N), *b = malloc(2 * N);
    uint8_t *e4 = malloc(N), *e5 = malloc(N), *f4 = malloc(N / 2);
    float *y[5];
    for (int i = 0; i < 5; i++) y[i] = malloc(4 * N);
    for (uint32_t i = 0; i < N; i++) {
        h[i] = b[i] = (uint16_t)i;
        e4[i] = e5[i] = (uint8_t)i;
    }
    for (uint32_t i = 0; i < N / 2; i++) f4[i] = (uint8_t)((2 * i) & 0xF) | (uint8_t)(((2 * i + 1) & 0xF) << 4);
    tile_tensor p[10] = {{h, TILE_DT_F16, 1, {N}},      {b, TILE_DT_BF16, 1, {N}},     {e4, TILE_DT_FP8_E4M3, 1, {N}},
                         {e5, TILE_DT_FP8_E5M2, 1, {N}}, {f4, TILE_DT_FP4_E2M1, 1, {N}}, {y[0], TILE_DT_F32, 1, {N}},
                         {y[1], TILE_DT_F32, 1, {N}},   {y[2], TILE_DT_F32, 1, {N}},   {y[3], TILE_DT_F32, 1, {N}},
                         {y[4], TILE_DT_F32, 1, {N}}};
    char *err = NULL;
    int rc = 0;
    if (tile_run(k, target, p, 10, NULL, 0, NULL, &err) != TILE_OK) {
        fprintf(stderr, "FAIL %s decode: %s\n", target, err ? err : "?");
        atomic_fetch_add(&g_fail, 1);
        rc = 1;
    } else {
        char path[64];
        for (uint32_t i = 0; i < N; i++) {
            /* f16/bf16 -> f32 keep NaN payloads (convert.h); the narrow formats' NaN is the
             * quiet NaN of the code's sign */
            snprintf(path, sizeof path, "%s cast float16->float32", target);
            CMP(path, i, tcv_f32_bits(y[0][i]), tcv_f32_bits(tcv_f16_bits_to_f32((uint16_t)i)));
            snprintf(path, sizeof path, "%s cast bfloat16->float32", target);
            CMP(path, i, tcv_f32_bits(y[1][i]), tcv_f32_bits(tcv_bf16_bits_to_f32((uint16_t)i)));
            snprintf(path, sizeof path, "%s cast float8_e4m3->float32", target);
            CMP(path, i & 0xFF, tcv_f32_bits(y[2][i]), tcv_f32_bits(tcv_e4m3_bits_to_f32((uint8_t)i)));
            snprintf(path, sizeof path, "%s cast float8_e5m2->float32", target);
            CMP(path, i & 0xFF, tcv_f32_bits(y[3][i]), tcv_f32_bits(tcv_e5m2_bits_to_f32((uint8_t)i)));
            snprintf(path, sizeof path, "%s cast float4_e2m1->float32", target);
            CMP(path, i & 0xF, tcv_f32_bits(y[4][i]), tcv_f32_bits(tcv_e2m1_bits_to_f32((uint8_t)(i & 0xF))));
        }
    }
    tile_free(err);
    free(h), free(b), free(e4), free(e5), free(f4);
    for (int i = 0; i < 5; i++) free(y[i]);
    return rc;
}

static int run_target(tile_module *mod, const char *target, uint64_t stride) {
    char *why = NULL, *dev = NULL;
    if (tile_target_info(target, &dev, &why) != TILE_OK) {
        printf("%s: skipped (%s)\n", target, why ? why : "unavailable");
        tile_free(why);
        return 77;
    }
    tile_free(dev);
    tile_kernel *enc = tile_module_kernel(mod, "encode"), *decd = tile_module_kernel(mod, "decode");
    if (!enc || !decd) {
        fprintf(stderr, "FAIL: casts.tl has no encode/decode kernel\n");
        return 1;
    }
    double t0 = tile_now();
    unsigned long long before = atomic_load(&g_fail);
    run_decode(decd, target);
    sweep s = make_sweep(stride);
    const uint64_t total = s.nstride + s.nbound, CH = 1u << 24;
    uint32_t *in = malloc(4 * CH);
    uint16_t *h = malloc(2 * CH), *b = malloc(2 * CH);
    uint8_t *e4 = malloc(CH), *e5 = malloc(CH), *f4 = malloc(CH / 2);
    cmp_ctx c = {in, h, b, e4, e5, f4, target, {{0}}};
    static const char *const nm[5] = {"float16", "bfloat16", "float8_e4m3", "float8_e5m2", "float4_e2m1"};
    for (int i = 0; i < 5; i++) snprintf(c.path[i], sizeof c.path[i], "%s cast float32->%s", target, nm[i]);
    int rc = 0;
    for (uint64_t lo = 0; lo < total && !rc; lo += CH) {
        int64_t n = (int64_t)(total - lo < CH ? total - lo : CH);
        n &= ~(int64_t)1; /* fp4: whole bytes (the last odd pattern is in the boundary set's repeats) */
        for (int64_t i = 0; i < n; i++) in[i] = sweep_at(&s, lo + (uint64_t)i);
        tile_tensor p[6] = {{in, TILE_DT_F32, 1, {n}},         {h, TILE_DT_F16, 1, {n}},
                            {b, TILE_DT_BF16, 1, {n}},          {e4, TILE_DT_FP8_E4M3, 1, {n}},
                            {e5, TILE_DT_FP8_E5M2, 1, {n}},     {f4, TILE_DT_FP4_E2M1, 1, {n}}};
        memset(f4, 0, (size_t)n / 2);
        char *err = NULL;
        if (tile_run(enc, target, p, 6, NULL, 0, NULL, &err) != TILE_OK) {
            fprintf(stderr, "FAIL %s encode: %s\n", target, err ? err : "?");
            atomic_fetch_add(&g_fail, 1);
            rc = 1;
        } else {
            par_for((uint64_t)n, 1u << 18, cmp_block, &c);
        }
        tile_free(err);
    }
    free(in), free(h), free(b), free(e4), free(e5), free(f4);
    printf("%s: %s f32 patterns (every %" PRIu64 "-th%s) + %" PRIu64 " boundary patterns through 5 casts, every code "
           "through 5 casts back: %s (%.1f s)\n",
           target, stride == 1 ? "all 2^32" : "a sweep of", stride, stride == 1 ? ", i.e. all" : "", s.nbound,
           atomic_load(&g_fail) == before ? "identical" : "MISMATCH", tile_now() - t0);
    return rc || atomic_load(&g_fail) != before;
}

static int run_targets(int argc, char **argv) {
    if (argc < 1) return 2;
    const char *file = argv[0];
    const char *list = "cpu,interp,opencl,cuda";
    uint64_t stride = 0; /* per target default */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--stride") && i + 1 < argc) stride = strtoull(argv[++i], NULL, 0);
        else list = argv[i];
    }
    tile_module *mod = NULL; /* N: bound by the tensors' shapes at run time */
    char *diag = NULL;
    if (tile_compile_file(file, NULL, 0, &mod, &diag) != TILE_OK) {
        fprintf(stderr, "FAIL: %s: %s\n", file, diag ? diag : "compile failed");
        return 1;
    }
    tile_free(diag);
    int ran = 0, rc = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
        /* defaults: every 61st pattern on the compiled targets, every 4099th on the interpreter and OpenCL (PoCL) */
        uint64_t s = stride ? stride : !strcmp(t, "cpu") || !strcmp(t, "cuda") ? 61 : 4099;
        int r = run_target(mod, t, s);
        if (r == 77) continue;
        ran++;
        rc |= r;
    }
    tile_module_free(mod);
    if (!ran) return 77;
    return rc || atomic_load(&g_fail) ? 1 : 0;
}

/* ---------- the device: convert.h compiled by NVRTC ---------- */
typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef unsigned long long CUdeviceptr;
typedef struct _nvrtcProgram *nvrtcProgram;
static struct {
    int (*create)(nvrtcProgram *, const char *, const char *, int, const char *const *, const char *const *);
    int (*compile)(nvrtcProgram, int, const char *const *);
    int (*log_size)(nvrtcProgram, size_t *);
    int (*log)(nvrtcProgram, char *);
    int (*cubin_size)(nvrtcProgram, size_t *);
    int (*cubin)(nvrtcProgram, char *);
    int (*destroy)(nvrtcProgram *);
} nv;
static struct {
    CUresult (*init)(unsigned);
    CUresult (*dev_get)(CUdevice *, int);
    CUresult (*attr)(int *, int, CUdevice);
    CUresult (*retain)(CUcontext *, CUdevice);
    CUresult (*set_ctx)(CUcontext);
    CUresult (*load)(CUmodule *, const void *);
    CUresult (*func)(CUfunction *, CUmodule, const char *);
    CUresult (*alloc)(CUdeviceptr *, size_t);
    CUresult (*free_)(CUdeviceptr);
    CUresult (*dtoh)(void *, CUdeviceptr, size_t);
    CUresult (*memset_)(CUdeviceptr, unsigned char, size_t);
    CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
                       void **, void **);
    CUresult (*sync)(void);
} cu;

/* The kernel: the f32 entry points (what gpu_coll.cu and the generated CUDA C call) into
 * buffers for the host to compare, and on the device itself every 64-bit and 32-bit generic
 * path against them (a count of disagreements). */
static const char *k_device_src =
    "extern \"C\" __global__ void bits(unsigned int base, unsigned int n, unsigned short *h, unsigned short *b,\n"
    "    unsigned char *e4, unsigned char *e5, unsigned char *f4, unsigned long long *bad) {\n"
    "  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "  if (i >= n) return;\n"
    "  unsigned int u = base + i;\n"
    "  float x = __uint_as_float(u);\n"
    "  double d = (double)x;\n"
    "  unsigned short vh = tcv_f32_to_f16_bits(x), vb = tcv_f32_to_bf16_bits(x);\n"
    "  unsigned char v4 = tcv_f32_to_e4m3_bits(x), v5 = tcv_f32_to_e5m2_bits(x), vf = tcv_f32_to_e2m1_bits(x);\n"
    "  h[i] = vh; b[i] = vb; e4[i] = v4; e5[i] = v5; f4[i] = vf;\n"
    "  int diff = (tcv_encode_f64(&TCV_F16, d) != vh) + (tcv_encode_f64(&TCV_BF16, d) != vb)\n"
    "      + (tcv_encode_f32(&TCV_F16, x) != vh) + (tcv_encode_f32(&TCV_BF16, x) != vb)\n"
    "      + (tcv_f64_to_e4m3_bits(d) != v4) + (tcv_f64_to_e5m2_bits(d) != v5) + (tcv_f64_to_e2m1_bits(d) != vf);\n"
    "  if (diff) atomicAdd(bad, 1ull);\n"
    "}\n";

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (fread(s, 1, (size_t)n, f) != (size_t)n) n = 0;
    s[n] = 0;
    fclose(f);
    return s;
}

typedef struct {
    uint32_t base;
    const uint16_t *h, *b;
    const uint8_t *e4, *e5, *f4;
} dev_cmp;
static void dev_block(uint64_t lo, uint64_t hi, void *p) {
    dev_cmp *c = p;
    for (uint64_t i = lo; i < hi; i++) {
        uint32_t u = c->base + (uint32_t)i;
        refs r = ref_of(u);
        CMP("device tcv_f32_to_f16_bits", u, c->h[i], r.h);
        CMP("device tcv_f32_to_bf16_bits", u, c->b[i], r.b);
        CMP("device tcv_f32_to_e4m3_bits", u, c->e4[i], r.e4);
        CMP("device tcv_f32_to_e5m2_bits", u, c->e5[i], r.e5);
        CMP("device tcv_f32_to_e2m1_bits", u, c->f4[i], r.f4);
    }
}

#define CU(x)                                                                   \
    do {                                                                        \
        CUresult r_ = (x);                                                      \
        if (r_) {                                                               \
            fprintf(stderr, "FAIL %s:%d: %s: CUDA error %d\n", __FILE__, __LINE__, #x, r_); \
            return 1;                                                           \
        }                                                                       \
    } while (0)

static int run_device(int argc, char **argv) {
    if (argc < 1) return 2;
    uint64_t stride = 1;
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--stride")) stride = strtoull(argv[i + 1], NULL, 0);
    char *hdr = read_text(argv[0]);
    if (!hdr) {
        fprintf(stderr, "FAIL: cannot read %s\n", argv[0]);
        return 1;
    }
    char why[512];
    void *hn = tb_dl_open(TB_DL_NVRTC, NULL, why, sizeof why);
    const tb_dl_sym nsyms[] = {{(void **)&nv.create, "nvrtcCreateProgram", NULL, false},
                               {(void **)&nv.compile, "nvrtcCompileProgram", NULL, false},
                               {(void **)&nv.log_size, "nvrtcGetProgramLogSize", NULL, false},
                               {(void **)&nv.log, "nvrtcGetProgramLog", NULL, false},
                               {(void **)&nv.cubin_size, "nvrtcGetCUBINSize", NULL, false},
                               {(void **)&nv.cubin, "nvrtcGetCUBIN", NULL, false},
                               {(void **)&nv.destroy, "nvrtcDestroyProgram", NULL, false}};
    if (!hn || tb_dl_syms(hn, TB_DL_NVRTC, nsyms, 7, why, sizeof why)) {
        printf("SKIP: %s\n", why);
        return 77;
    }
    /* a GPU, if there is one, picks the architecture; else a compile check for sm_90 */
    int have_gpu = 0, major = 9, minor = 0;
    CUdevice dev = 0;
    CUcontext ctx = NULL;
    void *hc = tb_dl_open(TB_DL_CUDA, NULL, why, sizeof why);
    const tb_dl_sym csyms[] = {{(void **)&cu.init, "cuInit", NULL, false},
                               {(void **)&cu.dev_get, "cuDeviceGet", NULL, false},
                               {(void **)&cu.attr, "cuDeviceGetAttribute", NULL, false},
                               {(void **)&cu.retain, "cuDevicePrimaryCtxRetain", NULL, false},
                               {(void **)&cu.set_ctx, "cuCtxSetCurrent", NULL, false},
                               {(void **)&cu.load, "cuModuleLoadData", NULL, false},
                               {(void **)&cu.func, "cuModuleGetFunction", NULL, false},
                               {(void **)&cu.alloc, "cuMemAlloc_v2", NULL, false},
                               {(void **)&cu.free_, "cuMemFree_v2", NULL, false},
                               {(void **)&cu.dtoh, "cuMemcpyDtoH_v2", NULL, false},
                               {(void **)&cu.memset_, "cuMemsetD8_v2", NULL, false},
                               {(void **)&cu.launch, "cuLaunchKernel", NULL, false},
                               {(void **)&cu.sync, "cuCtxSynchronize", NULL, false}};
    if (hc && !tb_dl_syms(hc, TB_DL_CUDA, csyms, 13, why, sizeof why) && cu.init(0) == 0 && cu.dev_get(&dev, 0) == 0 &&
        cu.attr(&major, 75, dev) == 0 && cu.attr(&minor, 76, dev) == 0 && cu.retain(&ctx, dev) == 0 &&
        cu.set_ctx(ctx) == 0)
        have_gpu = 1;
    /* the header as NVRTC sees it in gpu_coll.cu: a header named "convert.h" */
    size_t ns = strlen(k_device_src) + 32;
    char *src = malloc(ns);
    snprintf(src, ns, "#include \"convert.h\"\n%s", k_device_src);
    const char *hdrs[1] = {hdr}, *hnames[1] = {"convert.h"};
    char arch[64];
    snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d%d", major, minor);
    const char *opts[] = {arch, "--std=c++17"};
    nvrtcProgram prog;
    double t0 = tile_now();
    if (nv.create(&prog, src, "bits.cu", 1, hdrs, hnames) || nv.compile(prog, 2, opts)) {
        size_t ln = 0;
        nv.log_size(prog, &ln);
        char *log = malloc(ln + 1);
        nv.log(prog, log);
        log[ln] = 0;
        fprintf(stderr, "FAIL: NVRTC (%s) could not compile convert.h:\n%s\n", arch, log);
        return 1;
    }
    size_t nb = 0;
    nv.cubin_size(prog, &nb);
    char *cubin = malloc(nb);
    nv.cubin(prog, cubin);
    nv.destroy(&prog);
    printf("device: convert.h compiled by NVRTC for sm_%d%d: %zu bytes of cubin (%.0f ms)\n", major, minor, nb,
           (tile_now() - t0) * 1e3);
    if (!have_gpu) {
        printf("device: no GPU here (%s); compile check only\n", hc ? "no CUDA device" : why);
        return 0;
    }
    CUmodule mod;
    CUfunction fn;
    CU(cu.load(&mod, cubin));
    CU(cu.func(&fn, mod, "bits"));
    const uint32_t CH = 1u << 28;
    CUdeviceptr dh, db, d4, d5, df, dbad;
    CU(cu.alloc(&dh, 2ull * CH));
    CU(cu.alloc(&db, 2ull * CH));
    CU(cu.alloc(&d4, CH));
    CU(cu.alloc(&d5, CH));
    CU(cu.alloc(&df, CH));
    CU(cu.alloc(&dbad, 8));
    CU(cu.memset_(dbad, 0, 8));
    uint16_t *h = malloc(2ull * CH), *b = malloc(2ull * CH);
    uint8_t *e4 = malloc(CH), *e5 = malloc(CH), *f4 = malloc(CH);
    t0 = tile_now();
    uint64_t checked = 0;
    /* stride > 1: the first 2^28 / stride patterns of each chunk of 2^28 */
    for (uint64_t base = 0; base < (1ull << 32); base += CH) {
        uint32_t n = stride > 1 ? (uint32_t)(CH / stride) : CH, b32 = (uint32_t)base;
        void *args[] = {&b32, &n, &dh, &db, &d4, &d5, &df, &dbad};
        CU(cu.launch(fn, (n + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
        CU(cu.sync());
        CU(cu.dtoh(h, dh, 2ull * n));
        CU(cu.dtoh(b, db, 2ull * n));
        CU(cu.dtoh(e4, d4, n));
        CU(cu.dtoh(e5, d5, n));
        CU(cu.dtoh(f4, df, n));
        dev_cmp c = {b32, h, b, e4, e5, f4};
        par_for(n, 1u << 20, dev_block, &c);
        checked += n;
    }
    unsigned long long bad = 0;
    CU(cu.dtoh(&bad, dbad, 8));
    if (bad) {
        fprintf(stderr, "FAIL device: %llu patterns where the device's generic (f64 / 32-bit) encoders disagree with "
                        "its f32 entry points\n", bad);
        atomic_fetch_add(&g_fail, 1);
    }
    printf("device: %" PRIu64 " f32 patterns%s through 5 conversions compared with the host, 7 more compared on the "
           "device: %s (%.1f s)\n",
           checked, checked == (1ull << 32) ? " (all 2^32)" : "", atomic_load(&g_fail) ? "MISMATCH" : "identical",
           tile_now() - t0);
    return atomic_load(&g_fail) ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_bits host | targets CASTS.tl [TARGETS] [--stride S] | device CONVERT.h [--stride S]\n");
        return 2;
    }
    int rc;
    if (!strcmp(argv[1], "host")) rc = run_host(argc - 2, argv + 2);
    else if (!strcmp(argv[1], "targets")) rc = run_targets(argc - 2, argv + 2);
    else if (!strcmp(argv[1], "device")) rc = run_device(argc - 2, argv + 2);
    else {
        fprintf(stderr, "test_bits: unknown mode '%s'\n", argv[1]);
        return 2;
    }
    unsigned long long f = atomic_load(&g_fail);
    if (f) {
        fprintf(stderr, "%llu mismatches\n", f);
        return 1;
    }
    return rc;
}
