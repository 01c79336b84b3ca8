/* test_cpu_gemm.c — tk_cpu_gemm against a double-precision reference.
 *
 *   test_cpu_gemm gemm      every dtype pair / layout / shape / accumulate case on the ISA
 *                           selected by TILE_CPU_ISA (exit 77 = skipped if the CPU lacks it)
 *   test_cpu_gemm helpers   conversions (bit-exact vs core's tile_load_f / tile_store_f),
 *                           sum / max, CPU feature and cache reporting
 *   test_cpu_gemm badargs   error codes and messages for bad arguments
 *   test_cpu_gemm badisa    TILE_CPU_ISA names an unsupported/unknown ISA: a clear error
 *   test_cpu_gemm concurrent  4 threads calling at once get bit-identical results
 *   test_cpu_gemm denormal  bf16 operands with subnormal inputs / products (MX-like scales):
 *                           IEEE results although the bf16 hardware flushes (DAZ/FTZ)
 *   test_cpu_gemm amxrows   the AMX kernel on row-major bf16 A of many shapes (skips without an
 *                           AMX kernel)
 *   test_cpu_gemm regions   bf16 GEMMs on 2-16 workers: the home-region grids (cpu_gemm.c
 *                           affine_task) give the reference result, and are used (TILE_GEMM_AFFINE=0: never)
 *   test_cpu_gemm packers   the AVX-512 bf16 packers word for word against the portable ones,
 *                           pad words and ranges included, sources ending at a guard page
 *                           (skips without AVX-512BW)
 *
 * Tolerance. Every C element is a dot product of K terms (plus C's old value when
 * accumulating) summed in f32 in SOME order (blocked by KC, FMA or not). For any order,
 * |fl(sum) - sum| <= gamma_n * sum |terms|, gamma_n = n u / (1 - n u), u = 2^-24, with n the
 * number of terms (Higham, Accuracy and Stability, 3.1; each product is exact in f32 or
 * rounded once, which the same bound covers). We check elementwise
 *     |C - ref| <= gamma_{K+2} * (sum_k |a_ik b_kj| + |C0_ij|) * (1 + u_c) + u_c * |ref|
 * where u_c is the unit roundoff of C's dtype (0 for f32): the final rounding into f16/bf16.
 * Inputs are exactly representable in their dtypes, so the reference (double, K <= 2000) is
 * exact to ~2^-53 relative, far below the tolerance. A single lost or doubled term would
 * exceed it by orders of magnitude, so the check is sharp. */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/mman.h>
#include <unistd.h>

#include "core/core.h"
#include "kernels/cpu_gemm.h"
#include "kernels/cpu_gemm_int.h"

static int g_fail = 0, g_cases = 0;

#define CHECK(cond, ...)                                                  \
    do {                                                                  \
        if (!(cond)) {                                                    \
            fprintf(stderr, "%s:%d: FAIL: ", __FILE__, __LINE__);         \
            fprintf(stderr, __VA_ARGS__);                                 \
            fputc('\n', stderr);                                          \
            g_fail++;                                                     \
        }                                                                 \
    } while (0)

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next_u64(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static double uniform(void) { return (double)(next_u64() >> 11) * 0x1p-53 * 2.0 - 1.0; }

/* ---------- a tiny pthread "parallel for" (what the runtime's pool provides) ---------- */
typedef struct pf_job {
    int64_t n;
    atomic_llong next;
    void (*body)(void *, int64_t);
    void *arg;
} pf_job;
static void *pf_worker(void *p) {
    pf_job *j = (pf_job *)p;
    for (;;) {
        long long i = atomic_fetch_add(&j->next, 1);
        if (i >= j->n) break;
        j->body(j->arg, i);
    }
    return NULL;
}
static int g_pfor_calls = 0;
static void test_pfor(void *pool, int64_t n, void (*body)(void *, int64_t), void *arg) {
    int nt = *(int *)pool;
    pf_job j;
    j.n = n;
    atomic_init(&j.next, 0);
    j.body = body;
    j.arg = arg;
    pthread_t th[16];
    for (int t = 1; t < nt; t++) pthread_create(&th[t], NULL, pf_worker, &j);
    pf_worker(&j);
    for (int t = 1; t < nt; t++) pthread_join(th[t], NULL);
    g_pfor_calls++;
}

/* a parallel-for that runs the bodies on this thread in REVERSE order: the GEMM's one
 * parallel step (packing claimed by whichever body runs first, then compute) must not rely
 * on the order in which bodies start */
static void test_pfor_rev(void *pool, int64_t n, void (*body)(void *, int64_t), void *arg) {
    (void)pool;
    for (int64_t i = n - 1; i >= 0; i--) body(arg, i);
    g_pfor_calls++;
}

/* ---------- operands ---------- */
typedef struct mat {
    tile_dtype dt;
    int64_t rows, cols, rs, cs, off; /* element (r,c) at off + r*rs + c*cs */
    size_t nelem;                    /* elements of storage */
    void *buf;
} mat;

/* layout: 0 = row-major with padding, 1 = column-major with padding, 2 = general strides,
 * 3 = negative row stride (rows stored bottom-up); row strides of whole dwords for 2-byte
 * elements: 4 = row-major, even padded row stride,
 * 5 = negative even row stride, 6 = dense row-major */
static void mat_init(mat *m, tile_dtype dt, int64_t rows, int64_t cols, int layout) {
    m->dt = dt;
    m->rows = rows;
    m->cols = cols;
    m->off = 0;
    switch (layout) {
    case 0: m->cs = 1; m->rs = cols + 3; break;
    case 1: m->rs = 1; m->cs = rows + 5; break;
    case 2: m->rs = 3 * cols + 1; m->cs = 3; break;
    case 3: m->cs = 1; m->rs = -(cols + 1); m->off = (rows > 0 ? rows - 1 : 0) * (cols + 1); break;
    case 4: m->cs = 1; m->rs = cols + (cols % 2 ? 3 : 34); break;
    case 5: m->cs = 1; m->rs = -(cols + (cols % 2 ? 1 : 2)); m->off = (rows > 0 ? rows - 1 : 0) * -m->rs; break;
    default: m->cs = 1; m->rs = cols; break;
    }
    int64_t maxidx = m->off + (rows > 0 ? rows - 1 : 0) * (m->rs > 0 ? m->rs : 0) + (cols > 0 ? cols - 1 : 0) * m->cs;
    m->nelem = (size_t)maxidx + 1;
    size_t bytes = tile_dtype_storage_bytes(dt, m->nelem) + 8;
    m->buf = calloc(1, bytes);
}
static int64_t mat_idx(const mat *m, int64_t r, int64_t c) { return m->off + r * m->rs + c * m->cs; }
static double mat_get(const mat *m, int64_t r, int64_t c) { return tile_load_f(m->dt, m->buf, (size_t)mat_idx(m, r, c)); }
static void mat_set(mat *m, int64_t r, int64_t c, double v) { tile_store_f(m->dt, m->buf, (size_t)mat_idx(m, r, c), v); }
static const void *mat_ptr(const mat *m) {
    if (m->dt == TILE_DT_FP4_E2M1) return m->buf; /* off is even in every fp4 layout we build? see below */
    return (const uint8_t *)m->buf + m->off * (tile_dtype_bits(m->dt) / 8);
}
static void mat_fill(mat *m, double scale) {
    for (int64_t r = 0; r < m->rows; r++)
        for (int64_t c = 0; c < m->cols; c++) mat_set(m, r, c, uniform() * scale);
}

static double unit_roundoff(tile_dtype dt) {
    switch (dt) {
    case TILE_DT_F16: return 0x1p-11;
    case TILE_DT_BF16: return 0x1p-8;
    case TILE_DT_FP8_E4M3: return 0x1p-4;
    case TILE_DT_FP8_E5M2: return 0x1p-3;
    case TILE_DT_FP4_E2M1: return 0x1p-2;
    case TILE_DT_F64: return 0.0;
    default: return 0.0;
    }
}

/* scale so values land well inside each format's range */
static double dt_scale(tile_dtype dt) {
    switch (dt) {
    case TILE_DT_FP4_E2M1: return 6.0;
    case TILE_DT_FP8_E4M3: return 8.0;
    case TILE_DT_FP8_E5M2: return 8.0;
    default: return 1.0;
    }
}

static int g_nthreads = 2; /* threads test_pfor runs bodies on */
static int g_workers = 0;  /* tk_gemm.nthreads (0: tk_cpu_count()) */

/* optional operand values (denormal tests): which = 0 A(i, k), 1 B(k, j), 2 C0(i, j) */
static double (*g_fill)(int which, int64_t r, int64_t c);

/* one GEMM case; returns nothing, counts failures */
static void run_case(int64_t M, int64_t N, int64_t K, tile_dtype adt, tile_dtype bdt, tile_dtype cdt, int la, int lb,
                     int lc, int acc, int threaded) {
    /* fp4 with a negative stride layout would need an odd offset: use row-major instead */
    if (adt == TILE_DT_FP4_E2M1 && la >= 3) la = 0;
    if (bdt == TILE_DT_FP4_E2M1 && lb == 3) lb = 0;
    if (cdt == TILE_DT_FP4_E2M1 && lc == 3) lc = 0;
    mat A, B, C;
    mat_init(&A, adt, M, K, la);
    mat_init(&B, bdt, K, N, lb);
    mat_init(&C, cdt, M, N, lc);
    mat_fill(&A, dt_scale(adt));
    mat_fill(&B, dt_scale(bdt));
    if (g_fill) {
        for (int64_t i = 0; i < M; i++)
            for (int64_t k = 0; k < K; k++) mat_set(&A, i, k, g_fill(0, i, k));
        for (int64_t k = 0; k < K; k++)
            for (int64_t j = 0; j < N; j++) mat_set(&B, k, j, g_fill(1, k, j));
    }
    /* every storage element of C first gets a sentinel; the ones in the view get C0 or NaN */
    for (size_t e = 0; e < C.nelem; e++) tile_store_f(cdt, C.buf, e, 42.0);
    const double sentinel = tile_load_f(cdt, C.buf, 0); /* 42 as the dtype holds it */
    double *c0 = (double *)calloc((size_t)(M * N) + 1, sizeof(double));
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            if (acc) {
                mat_set(&C, i, j, g_fill ? g_fill(2, i, j) : uniform() * 4.0);
                c0[i * N + j] = mat_get(&C, i, j);
            } else {
                /* NaN where the dtype has one (fp4 has none: a value the result can't be) */
                mat_set(&C, i, j, cdt == TILE_DT_FP4_E2M1 ? 6.0 : NAN);
            }
        }
    /* mark the view elements so the sentinel check skips them */
    unsigned char *inview = (unsigned char *)calloc(C.nelem + 1, 1);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) inview[mat_idx(&C, i, j)] = 1;

    tk_gemm g = {.M = M, .N = N, .K = K, .a_dtype = adt, .b_dtype = bdt, .c_dtype = cdt,
                 .A = mat_ptr(&A), .a_rs = A.rs, .a_cs = A.cs,
                 .B = mat_ptr(&B), .b_rs = B.rs, .b_cs = B.cs,
                 .C = (void *)mat_ptr(&C), .c_rs = C.rs, .c_cs = C.cs, .accumulate = acc, .nthreads = g_workers};
    int rc = threaded == 2 ? tk_cpu_gemm(&g, test_pfor_rev, NULL)
             : threaded    ? tk_cpu_gemm(&g, test_pfor, &g_nthreads)
                           : tk_cpu_gemm(&g, NULL, NULL);
    g_cases++;
    char what[256];
    snprintf(what, sizeof what, "M=%lld N=%lld K=%lld A=%s(l%d) B=%s(l%d) C=%s(l%d) acc=%d thr=%d isa=%s", (long long)M,
             (long long)N, (long long)K, tile_dtype_name(adt), la, tile_dtype_name(bdt), lb, tile_dtype_name(cdt), lc, acc,
             threaded, tk_cpu_isa());
    CHECK(rc == TK_GEMM_OK, "%s: rc=%d %s", what, rc, tk_cpu_gemm_error());
    if (rc == TK_GEMM_OK) {
        const double u = 0x1p-24;
        const double n = (double)K + 2;
        const double gamma = (cdt == TILE_DT_F64 || adt == TILE_DT_F64 || bdt == TILE_DT_F64)
                                 ? n * 0x1p-53 / (1 - n * 0x1p-53)
                                 : n * u / (1 - n * u);
        const int f64path = cdt == TILE_DT_F64 || adt == TILE_DT_F64 || bdt == TILE_DT_F64;
        /* the f64 path rounds once into an f32 C too */
        const double uc = (f64path && cdt == TILE_DT_F32) ? 0x1p-24 : unit_roundoff(cdt);
        int bad = 0;
        /* the reference: A row-major and B column-major as doubles (exact) */
        double *ad = (double *)malloc((size_t)(M * K + 1) * sizeof(double));
        double *bd = (double *)malloc((size_t)(K * N + 1) * sizeof(double));
        for (int64_t i = 0; i < M; i++)
            for (int64_t k = 0; k < K; k++) ad[i * K + k] = mat_get(&A, i, k);
        for (int64_t k = 0; k < K; k++)
            for (int64_t j = 0; j < N; j++) bd[j * K + k] = mat_get(&B, k, j);
        for (int64_t i = 0; i < M && bad < 3; i++)
            for (int64_t j = 0; j < N && bad < 3; j++) {
                double ref = acc ? c0[i * N + j] : 0.0, mag = acc ? fabs(c0[i * N + j]) : 0.0;
                const double *ai = ad + i * K, *bj = bd + j * K;
                for (int64_t k = 0; k < K; k++) {
                    double p = ai[k] * bj[k];
                    ref += p;
                    mag += fabs(p);
                }
                double got = mat_get(&C, i, j);
                /* + the absolute error of IEEE gradual underflow: each of the n roundings of
                 * an f32 subnormal result errs by at most half the subnormal spacing 2^-149 */
                double tol = gamma * mag * (1 + uc) + uc * fabs(ref) + n * 0x1p-150 +
                             (cdt == TILE_DT_BF16 ? 0x1p-134 : cdt == TILE_DT_F16 ? 0x1p-25 : 0.0); /* C's own */
                /* narrow outputs: half their subnormal spacing, and they saturate */
                double maxf = cdt == TILE_DT_FP4_E2M1 ? 6.0 : cdt == TILE_DT_FP8_E4M3 ? 448.0 : cdt == TILE_DT_FP8_E5M2 ? 57344.0 : 0;
                if (maxf > 0) {
                    tol += cdt == TILE_DT_FP4_E2M1 ? 0.25 : cdt == TILE_DT_FP8_E4M3 ? 0x1p-10 : 0x1p-17;
                    ref = ref > maxf ? maxf : ref < -maxf ? -maxf : ref;
                }
                /* an inf or NaN reference (the inf x subnormal fill) must be met exactly */
                const int ok = isnan(ref) ? isnan(got) : isinf(ref) ? got == ref : fabs(got - ref) <= tol;
                if (!ok) {
                    CHECK(0, "%s: C[%lld,%lld] = %.9g, reference %.9g (|err| %.3g > tol %.3g)", what, (long long)i,
                          (long long)j, got, ref, fabs(got - ref), tol);
                    bad++;
                }
            }
        free(ad);
        free(bd);
        for (size_t e = 0; e < C.nelem && bad < 3; e++)
            if (!inview[e] && tile_load_f(cdt, C.buf, e) != sentinel) {
                CHECK(0, "%s: C storage element %zu outside the view was overwritten", what, e);
                bad++;
            }
    }
    free(inview);
    free(c0);
    free(A.buf);
    free(B.buf);
    free(C.buf);
}

/* no usable ISA (TILE_CPU_ISA names one this CPU lacks): say why (the GEMM's error) and skip */
static int skip_invalid(void) {
    tk_gemm g = {0};
    g.M = g.N = g.K = 1;
    tk_cpu_gemm(&g, NULL, NULL);
    printf("skipped: %s\n", tk_cpu_gemm_error());
    return 77;
}

static const tile_dtype k_in_dtypes[] = {TILE_DT_F32, TILE_DT_F16, TILE_DT_BF16, TILE_DT_FP8_E4M3, TILE_DT_FP8_E5M2,
                                         TILE_DT_FP4_E2M1};

static int test_gemm(void) {
    const char *isa = tk_cpu_isa();
    if (strcmp(isa, "invalid") == 0) return skip_invalid();
    printf("isa %s\n", isa);
    static const int64_t shapes[][3] = {
        {1, 1, 1}, {2, 3, 5}, {7, 13, 17}, {13, 31, 29}, {64, 64, 32}, {65, 33, 31},
        {1, 100, 1}, {37, 1, 53}, {100, 37, 1}, {3, 97, 101}, {23, 70, 1100}, {0, 5, 5}, {5, 0, 5}, {5, 5, 0},
    };
    const int nshapes = (int)(sizeof shapes / sizeof shapes[0]);
    /* f32: every shape x A/B layouts x C layouts x accumulate */
    for (int s = 0; s < nshapes; s++)
        for (int la = 0; la < 4; la++)
            for (int lb = 0; lb < 4; lb++)
                for (int lc = 0; lc < 4; lc++)
                    for (int acc = 0; acc < 2; acc++) {
                        if ((la + lb + lc + acc + s) % 3 != 0 && !(la == 0 && lb == 0)) continue; /* thin the product */
                        run_case(shapes[s][0], shapes[s][1], shapes[s][2], TILE_DT_F32, TILE_DT_F32, TILE_DT_F32, la, lb, lc,
                                 acc, 0);
                    }
    /* every input dtype pair on a few shapes, both transposes */
    static const int64_t dshapes[][3] = {{1, 1, 1}, {13, 31, 29}, {64, 64, 32}, {33, 47, 64}};
    for (int da = 0; da < 6; da++)
        for (int db = 0; db < 6; db++)
            for (int s = 0; s < 4; s++) {
                int la = (da + s) % 4, lb = (db + 2 * s) % 4;
                run_case(dshapes[s][0], dshapes[s][1], dshapes[s][2], k_in_dtypes[da], k_in_dtypes[db], TILE_DT_F32, la, lb,
                         s % 3, s & 1, 0);
            }
    /* C dtypes other than f32, and the f64 path */
    static const tile_dtype cdts[] = {TILE_DT_F16, TILE_DT_BF16, TILE_DT_FP8_E4M3, TILE_DT_FP4_E2M1, TILE_DT_F64};
    for (int dc = 0; dc < 5; dc++)
        for (int acc = 0; acc < 2; acc++)
            for (int lc = 0; lc < 3; lc++) {
                tile_dtype ad = cdts[dc] == TILE_DT_F64 ? TILE_DT_F64 : TILE_DT_BF16;
                double sc = cdts[dc] == TILE_DT_FP4_E2M1 || cdts[dc] == TILE_DT_FP8_E4M3 ? 0.25 : 1.0;
                (void)sc;
                run_case(19, 37, 23, ad, TILE_DT_F32, cdts[dc], acc, lc, lc, acc, 0);
                run_case(13, 5, 700, TILE_DT_F16, TILE_DT_F32, cdts[dc], 0, 1, lc, acc, 0);
            }
    run_case(17, 9, 11, TILE_DT_F32, TILE_DT_F64, TILE_DT_F32, 1, 0, 0, 1, 0);
    /* bf16 x bf16: the k-pair kernel where there is one (odd K pads a pair) */
    printf("bf16 kernel %s\n", tk_cpu_bf16_kernel());
    static const int64_t bshapes[][3] = {{1, 1, 1}, {7, 13, 17}, {64, 64, 32}, {33, 47, 1101}, {12, 32, 2}, {25, 65, 3}};
    for (int s = 0; s < 6; s++)
        for (int l = 0; l < 4; l++)
            run_case(bshapes[s][0], bshapes[s][1], bshapes[s][2], TILE_DT_BF16, TILE_DT_BF16, l == 3 ? TILE_DT_BF16 : TILE_DT_F32,
                     l, (l + s) % 4, (l + 2 * s) % 3, (l + s) & 1, 0);
    run_case(150, 301, 97, TILE_DT_BF16, TILE_DT_BF16, TILE_DT_F32, 0, 0, 0, 1, 1);
    /* threaded bf16 with transposed / strided operands and a bf16 C (the shared packed B) */
    run_case(97, 130, 301, TILE_DT_BF16, TILE_DT_BF16, TILE_DT_BF16, 1, 2, 0, 0, 1);
    run_case(261, 77, 129, TILE_DT_BF16, TILE_DT_BF16, TILE_DT_F32, 2, 1, 1, 1, 1);
    /* large-ish and threaded (the pfor path), including a non-f32 C */
    int before = g_pfor_calls;
    run_case(300, 200, 500, TILE_DT_F32, TILE_DT_F32, TILE_DT_F32, 0, 0, 0, 0, 1);
    run_case(300, 200, 500, TILE_DT_F32, TILE_DT_F32, TILE_DT_F32, 1, 1, 1, 1, 1);
    run_case(211, 263, 130, TILE_DT_BF16, TILE_DT_FP8_E4M3, TILE_DT_F32, 0, 1, 0, 1, 1);
    run_case(150, 301, 97, TILE_DT_F16, TILE_DT_FP4_E2M1, TILE_DT_BF16, 1, 0, 0, 0, 1);
    run_case(300, 200, 500, TILE_DT_F32, TILE_DT_F32, TILE_DT_F32, 0, 0, 0, 1, 0);
    run_case(100, 512, 64, TILE_DT_F32, TILE_DT_F32, TILE_DT_F32, 0, 0, 0, 0, 1); /* N in equal blocks per thread */
    /* the parallel step with bodies started in reverse order (f32, bf16 with a shared B) */
    run_case(300, 200, 500, TILE_DT_F32, TILE_DT_F32, TILE_DT_F32, 0, 0, 0, 1, 2);
    run_case(97, 130, 301, TILE_DT_BF16, TILE_DT_BF16, TILE_DT_F32, 1, 0, 0, 1, 2);
    /* one compute task, two workers: a body that only helps with packing (bf16); a long K (f32) */
    run_case(32, 32, 4096, TILE_DT_BF16, TILE_DT_BF16, TILE_DT_F32, 0, 0, 0, 0, 1);
    run_case(16, 32, 8192, TILE_DT_F32, TILE_DT_F32, TILE_DT_F32, 0, 1, 0, 1, 1);
    CHECK(g_pfor_calls > before, "the threaded cases never called the parallel-for");
    printf("%d cases, %d failures\n", g_cases, g_fail);
    return g_fail ? 1 : 0;
}

/* ---------- denormals ----------
 * tdpbf16ps / vdpbf16ps treat subnormal inputs as zero and flush subnormal results (the
 * emulated kernels model that, cpu_gemm_generic.c); tk_cpu_gemm must still give the IEEE
 * f32 result (within the tolerance above, whose absolute term covers gradual underflow).
 * Each fill below makes the plain hardware kernel fail that check. */
static double mx_value(int64_t r, int64_t c) { /* e2m1 magnitudes x an MX-like scale 2^-(128..135) */
    static const double e2m1[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
    const uint64_t h = next_u64();
    return ((h & 8) ? -1.0 : 1.0) * e2m1[h & 7] * ldexp(1.0, -128 - (int)((r / 32 + c) % 8));
}
static double fill_mx(int which, int64_t r, int64_t c) { /* A normal, B bf16-subnormal or tiny */
    return which == 0 ? uniform() * 4.0 : which == 1 ? mx_value(r, c) : uniform();
}
static double fill_mx_a(int which, int64_t r, int64_t c) { /* A bf16-subnormal or tiny, B normal */
    return which == 0 ? mx_value(c, r) : which == 1 ? uniform() * 4.0 : uniform();
}
static double fill_tiny(int which, int64_t r, int64_t c) { /* normal inputs, subnormal products */
    (void)r, (void)c;
    return which == 2 ? uniform() * 0x1p-140 : (0.5 + 0.5 * fabs(uniform())) * (next_u64() & 1 ? 0x1p-70 : -0x1p-70);
}
static double fill_tiny_c(int which, int64_t r, int64_t c) { /* products near 2^-126, C0 subnormal */
    (void)r, (void)c;
    return which == 2 ? uniform() * 0x1p-128 : uniform() * 0x1p-63;
}
static double fill_wide(int which, int64_t r, int64_t c) { /* no power-of-two scale fits: the f32 path */
    (void)c;
    if (which == 0) return uniform() * (r % 7 == 0 ? 0x1p100 : 0x1p-100);
    return which == 1 ? uniform() * 0x1p-20 : uniform();
}
static double fill_huge(int which, int64_t r, int64_t c) { /* large but in range: no scaling needed */
    (void)r, (void)c;
    return which == 2 ? uniform() * 0x1p100 : uniform() * 0x1p56;
}
static double fill_zero_a(int which, int64_t r, int64_t c) { /* A all zero, C0 subnormal */
    (void)r, (void)c;
    return which == 0 ? 0.0 : which == 1 ? uniform() * 0x1p-130 : uniform() * 0x1p-135;
}

static double fill_inf_sub(int which, int64_t r, int64_t c) { /* A +inf, B positive subnormal: C = +inf */
    (void)r, (void)c;
    return which == 0 ? INFINITY : which == 1 ? (0.5 + 0.5 * fabs(uniform())) * 0x1p-128 : uniform();
}

/* subnormal values only past a row or column: a range scan that skips part of a source (a
 * wrong chunk offset, rows left out) misses them, no scale is applied, and the hardware
 * kernels flush those products */
static int64_t g_tail; /* the first row / column that is subnormal */
static double fill_tail_bcol(int which, int64_t r, int64_t c) { /* B's columns >= g_tail */
    (void)r;
    return which == 0 ? uniform() * 4.0 : which == 1 ? (c >= g_tail ? uniform() * 0x1p-130 : uniform()) : uniform();
}
/* B's rows (k) >= g_tail, A zero before column g_tail: C is made of those rows' products
 * alone (with normal products beside them a flushed one would be lost in the rounding) */
static double fill_tail_brow(int which, int64_t r, int64_t c) {
    return which == 0 ? (c >= g_tail ? uniform() * 4.0 : 0.0)
           : which == 1 ? (r >= g_tail ? uniform() * 0x1p-130 : uniform())
                        : uniform();
}
static double fill_one_brow(int which, int64_t r, int64_t c) { /* B's row (k) g_tail alone, A zero elsewhere */
    return which == 0 ? (c == g_tail ? uniform() * 4.0 : 0.0)
           : which == 1 ? (r == g_tail ? uniform() * 0x1p-130 : uniform())
                        : uniform();
}
static double fill_one_bcol(int which, int64_t r, int64_t c) { /* B's column g_tail alone */
    (void)r;
    return which == 0 ? uniform() * 4.0 : which == 1 ? (c == g_tail ? uniform() * 0x1p-130 : uniform()) : uniform();
}
static double fill_one_acol(int which, int64_t r, int64_t c) { /* A's column (k) g_tail alone, B zero elsewhere */
    return which == 0 ? (c == g_tail ? uniform() * 0x1p-130 : uniform() * 4.0)
           : which == 1 ? (r == g_tail ? uniform() : 0.0)
                        : uniform();
}
static double fill_tail_arow(int which, int64_t r, int64_t c) { /* A's rows >= g_tail */
    (void)c;
    return which == 0 ? (r >= g_tail ? uniform() * 0x1p-130 : uniform() * 4.0) : uniform();
}

static int test_denormal(void) {
    const char *isa = tk_cpu_isa();
    if (strcmp(isa, "invalid") == 0) return skip_invalid();
    printf("isa %s, bf16 kernel %s\n", isa, tk_cpu_bf16_kernel());
    static double (*const fills[])(int, int64_t, int64_t) = {fill_mx, fill_tiny, fill_tiny_c, fill_wide, fill_huge,
                                                             fill_zero_a};
    static const int64_t shapes[][4] = {/* M, N, K, threaded */
                                        {64, 64, 128, 0}, {33, 47, 101, 0}, {1, 1, 1, 0}, {150, 130, 300, 1},
                                        {64, 64, 128, 1}};
    for (int f = 0; f < 6; f++)
        for (int s = 0; s < 5; s++)
            for (int acc = 0; acc < 2; acc++) {
                g_fill = fills[f];
                const int l = (f + s + acc) % 4;
                run_case(shapes[s][0], shapes[s][1], shapes[s][2], TILE_DT_BF16, TILE_DT_BF16, TILE_DT_F32, l,
                         (l + 1) % 4, l % 3, acc, (int)shapes[s][3]);
            }
    /* no finite product, a subnormal operand: IEEE says inf x subnormal = inf, the kernels
     * read the subnormal as 0 (inf x 0 = NaN), so the f32 path must take it */
    g_fill = fill_inf_sub;
    for (int acc = 0; acc < 2; acc++) run_case(4, 4, 4, TILE_DT_BF16, TILE_DT_BF16, TILE_DT_F32, 0, 0, 0, acc, 0);
    /* the scaled path with the parallel step's bodies in reverse order */
    g_fill = fill_tiny;
    run_case(150, 130, 300, TILE_DT_BF16, TILE_DT_BF16, TILE_DT_F32, 0, 0, 0, 1, 2);
    /* a bf16 C (the f32 workspace path) */
    g_fill = fill_mx;
    run_case(40, 70, 96, TILE_DT_BF16, TILE_DT_BF16, TILE_DT_BF16, 0, 0, 0, 0, 1);
    /* subnormals in the last columns or rows only, B row-major (unit stride along N: its
     * range is scanned k row by k row) or with a negative row stride, A column-major (unit
     * stride along M), on this thread and threaded (kernels.denormal_amx_emulated_blocks:
     * B and A scanned in chunks by tasks) */
    for (int thr = 0; thr < 2; thr++)
        for (int lb = 0; lb < 4; lb += 3) {
            g_tail = 127;
            g_fill = fill_tail_bcol;
            run_case(150, 130, 300, TILE_DT_BF16, TILE_DT_BF16, TILE_DT_F32, 0, lb, 0, 0, thr);
            g_tail = 290;
            g_fill = fill_tail_brow;
            run_case(150, 130, 300, TILE_DT_BF16, TILE_DT_BF16, TILE_DT_F32, 0, lb, 0, 0, thr);
            g_tail = 147;
            g_fill = fill_tail_arow;
            run_case(150, 130, 300, TILE_DT_BF16, TILE_DT_BF16, TILE_DT_F32, lb ? 1 : 0, 0, 0, 1, thr);
            /* one subnormal row or column of B: a scan chunk that drops its first or last
             * k row (or column) misses it */
            static const int64_t one_row[] = {0, 151, 299}, one_col[] = {0, 64, 129};
            for (int q = 0; q < 3; q++) {
                g_tail = one_row[q];
                g_fill = fill_one_brow;
                run_case(150, 130, 300, TILE_DT_BF16, TILE_DT_BF16, TILE_DT_F32, 0, lb, 0, 0, thr);
                g_tail = one_col[q];
                g_fill = fill_one_bcol;
                run_case(150, 130, 300, TILE_DT_BF16, TILE_DT_BF16, TILE_DT_F32, 0, lb, 0, 0, thr);
                g_tail = one_row[q]; /* a k column of A, A column-major (scanned along k) or not */
                g_fill = fill_one_acol;
                run_case(150, 130, 300, TILE_DT_BF16, TILE_DT_BF16, TILE_DT_F32, lb ? 1 : 0, 0, 0, 0, thr);
            }
        }
    g_fill = NULL;
    printf("%d cases, %d failures\n", g_cases, g_fail);
    return g_fail ? 1 : 0;
}

/* ---------- helpers ---------- */
static int same_float(float a, float b) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    uint32_t x, y;
    memcpy(&x, &a, 4);
    memcpy(&y, &b, 4);
    return x == y;
}

static int test_helpers(void) {
    if (strcmp(tk_cpu_isa(), "invalid") == 0) return skip_invalid();
    printf("isa %s, features 0x%x, %d cpus\n", tk_cpu_isa(), tk_cpu_features(), tk_cpu_count());
    int64_t l1, l2, l3;
    tk_cpu_cache_sizes(&l1, &l2, &l3);
    printf("caches: L1d %lld, L2 %lld, L3 %lld\n", (long long)l1, (long long)l2, (long long)l3);
    CHECK(tk_cpu_count() >= 1, "cpu count %d", tk_cpu_count());
    /* every f16 / bf16 / fp8 / fp4 encoding, at every alignment of the run */
    static uint16_t src16[65536 + 64];
    static float out[65536 + 64];
    for (int v = 0; v < 65536; v++) src16[v] = (uint16_t)v;
    const tile_dtype d16[] = {TILE_DT_F16, TILE_DT_BF16};
    for (int d = 0; d < 2; d++) {
        CHECK(tk_cvt_to_f32(out, d16[d], src16, 0, 65536) == 0, "cvt");
        for (int v = 0; v < 65536; v++)
            if (!same_float(out[v], (float)tile_load_f(d16[d], src16, (size_t)v))) {
                CHECK(0, "%s bits 0x%04x -> %g, core says %g", tile_dtype_name(d16[d]), v, out[v],
                      tile_load_f(d16[d], src16, (size_t)v));
                break;
            }
        for (int first = 0; first < 20; first++) {
            CHECK(tk_cvt_to_f32(out, d16[d], src16, 15000 + first, 37) == 0, "cvt");
            for (int i = 0; i < 37; i++)
                CHECK(same_float(out[i], (float)tile_load_f(d16[d], src16, (size_t)(15000 + first + i))), "offset run");
        }
    }
    uint8_t src8[256 + 8];
    for (int v = 0; v < 256; v++) src8[v] = (uint8_t)v;
    const tile_dtype d8[] = {TILE_DT_FP8_E4M3, TILE_DT_FP8_E5M2, TILE_DT_FP4_E2M1};
    for (int d = 0; d < 3; d++) {
        int64_t n = d8[d] == TILE_DT_FP4_E2M1 ? 512 : 256;
        for (int first = 0; first < 3; first++) {
            CHECK(tk_cvt_to_f32(out, d8[d], src8, first, n - first) == 0, "cvt");
            for (int64_t i = 0; i < n - first; i++)
                if (!same_float(out[i], (float)tile_load_f(d8[d], src8, (size_t)(first + i)))) {
                    CHECK(0, "%s element %lld -> %g, core says %g", tile_dtype_name(d8[d]), (long long)(first + i), out[i],
                          tile_load_f(d8[d], src8, (size_t)(first + i)));
                    break;
                }
        }
    }
    CHECK(tk_cvt_to_f32(out, TILE_DT_I32, src8, 0, 4) == -1, "int dtype must be refused");
    /* f32 -> every float dtype, bit-exact with tile_store_f */
    enum { NV = 4096 };
    static float vals[NV];
    for (int i = 0; i < NV; i++) {
        uint32_t b = (uint32_t)next_u64();
        if (i % 4 == 1) b = (b & 0x8000FFFFu) | 0x3F800000u; /* near 1: rounding ties */
        if (i % 4 == 2) b = (b & 0x807FFFFFu) | ((uint32_t)(100 + i % 60) << 23);
        memcpy(&vals[i], &b, 4);
    }
    vals[0] = INFINITY;
    vals[1] = -INFINITY;
    vals[2] = NAN;
    vals[3] = -0.0f;
    vals[4] = 65520.0f;
    vals[5] = 448.0f;
    vals[6] = 1e-30f;
    const tile_dtype outs[] = {TILE_DT_F16, TILE_DT_BF16, TILE_DT_FP8_E4M3, TILE_DT_FP8_E5M2, TILE_DT_FP4_E2M1, TILE_DT_F32, TILE_DT_F64};
    for (int d = 0; d < 7; d++) {
        static uint8_t ours[NV * 8 + 16], core[NV * 8 + 16];
        memset(ours, 0x5A, sizeof ours);
        memset(core, 0x5A, sizeof core);
        int first = d == 4 ? 1 : 0; /* fp4: start on a high nibble */
        CHECK(tk_cvt_from_f32(outs[d], ours, first, vals, NV) == 0, "cvt_from");
        for (int i = 0; i < NV; i++) tile_store_f(outs[d], core, (size_t)(first + i), vals[i]);
        size_t bytes = tile_dtype_storage_bytes(outs[d], (size_t)(NV + first));
        CHECK(memcmp(ours, core, bytes) == 0, "tk_cvt_from_f32(%s) differs from tile_store_f", tile_dtype_name(outs[d]));
    }
    /* f16 / bf16 (the vectorised rounding the GEMM's tasks use for C): a sweep of the f32
     * bit patterns, and every exponent with exact ties and near-ties at every bit position */
    {
        enum { NS = 1 << 16 };
        static float sv[NS];
        static uint16_t o16[NS], c16[NS];
        uint32_t u = 0;
        int bad[2] = {0, 0};
        for (int64_t done = 0; done < ((int64_t)1 << 32);) {
            int n = 0;
            for (; n < NS && done < ((int64_t)1 << 32); n++, done += 65521, u += 65521u) memcpy(&sv[n], &u, 4);
            for (int d = 0; d < 2 && !bad[d]; d++) {
                CHECK(tk_cvt_from_f32(d16[d], o16, 0, sv, n) == 0, "cvt_from");
                for (int i = 0; i < n; i++) c16[i] = d ? tile_f32_to_bf16_bits(sv[i]) : tile_f32_to_f16_bits(sv[i]);
                for (int i = 0; i < n && !bad[d]; i++)
                    if (o16[i] != c16[i]) {
                        uint32_t b;
                        memcpy(&b, &sv[i], 4);
                        CHECK(0, "%s of f32 bits 0x%08x: 0x%04x, core says 0x%04x", tile_dtype_name(d16[d]), b, o16[i], c16[i]);
                        bad[d] = 1;
                    }
            }
        }
        int n = 0;
        for (uint32_t e = 0; e < 256; e++)
            for (int bit = 0; bit < 23; bit++)
                for (int v = 0; v < 4; v++) {
                    uint32_t m = ((uint32_t)next_u64() << (bit + 1)) & 0x7FFFFFu;
                    m |= (1u << bit);                                  /* a tie at this bit */
                    if (v == 1) m -= 1;                                /* just below */
                    if (v == 2) m = (m + 1) & 0x7FFFFFu;               /* just above */
                    if (v == 3) m = (m | (1u << (bit + 1))) & 0x7FFFFFu; /* a tie with the other parity */
                    uint32_t b = ((uint32_t)(n & 1) << 31) | (e << 23) | m;
                    memcpy(&sv[n++], &b, 4);
                }
        for (int d = 0; d < 2; d++) {
            CHECK(tk_cvt_from_f32(d16[d], o16, 0, sv, n) == 0, "cvt_from");
            for (int i = 0; i < n; i++) {
                uint16_t c = d ? tile_f32_to_bf16_bits(sv[i]) : tile_f32_to_f16_bits(sv[i]);
                if (o16[i] != c) {
                    uint32_t b;
                    memcpy(&b, &sv[i], 4);
                    CHECK(0, "%s of f32 bits 0x%08x (ties): 0x%04x, core says 0x%04x", tile_dtype_name(d16[d]), b, o16[i], c);
                    break;
                }
            }
        }
    }
    /* sum / max */
    for (int n = 0; n < 300; n += (n < 40 ? 1 : 37)) {
        float x[300];
        double s = 0, sa = 0;
        float m = -INFINITY;
        for (int i = 0; i < n; i++) {
            x[i] = (float)uniform() * 10.0f;
            s += x[i];
            sa += fabs(x[i]);
            m = x[i] > m ? x[i] : m;
        }
        double tol = (n + 1) * 0x1p-24 * sa * 1.01;
        CHECK(fabs(tk_sum_f32(x, n) - s) <= tol, "sum n=%d: %g vs %g", n, tk_sum_f32(x, n), s);
        CHECK(tk_max_f32(x, n) == m, "max n=%d: %g vs %g", n, tk_max_f32(x, n), m);
        if (n > 0) {
            x[n / 2] = NAN;
            CHECK(isnan(tk_max_f32(x, n)), "max with a NaN at %d of %d", n / 2, n);
            CHECK(isnan(tk_sum_f32(x, n)), "sum with a NaN");
        }
    }
    printf("helpers: %d failures\n", g_fail);
    return g_fail ? 1 : 0;
}

/* ---------- several threads calling at once (thread-local buffers) ---------- */
typedef struct conc_arg {
    int id;
    const float *a, *b, *ref;
    int64_t M, N, K;
    int mismatches;
} conc_arg;

static void *conc_main(void *p) {
    conc_arg *x = (conc_arg *)p;
    float *c = (float *)malloc((size_t)(x->M * x->N) * sizeof(float));
    for (int it = 0; it < 30; it++) {
        /* alternate with a different shape so the buffers are resized under the others */
        int64_t M = (it & 1) ? x->M / 2 + x->id : x->M;
        tk_gemm g = {.M = M, .N = x->N, .K = x->K, .a_dtype = TILE_DT_F32, .b_dtype = TILE_DT_F32,
                     .c_dtype = TILE_DT_F32, .A = x->a, .a_rs = x->K, .a_cs = 1, .B = x->b, .b_rs = x->N, .b_cs = 1,
                     .C = c, .c_rs = x->N, .c_cs = 1};
        if (tk_cpu_gemm(&g, NULL, NULL) != TK_GEMM_OK) x->mismatches++;
        /* same sizes, same code path: the rows computed must equal the reference bit for bit */
        if (memcmp(c, x->ref, (size_t)(M * x->N) * sizeof(float)) != 0) x->mismatches++;
    }
    free(c);
    return NULL;
}

static int test_concurrent(void) {
    if (strcmp(tk_cpu_isa(), "invalid") == 0) return 77;
    const int64_t M = 150, N = 170, K = 600; /* two K blocks, packed path */
    float *a = malloc((size_t)(M * K) * 4), *b = malloc((size_t)(K * N) * 4), *ref = malloc((size_t)(M * N) * 4);
    for (int64_t i = 0; i < M * K; i++) a[i] = (float)uniform();
    for (int64_t i = 0; i < K * N; i++) b[i] = (float)uniform();
    tk_gemm g = {.M = M, .N = N, .K = K, .a_dtype = TILE_DT_F32, .b_dtype = TILE_DT_F32, .c_dtype = TILE_DT_F32,
                 .A = a, .a_rs = K, .a_cs = 1, .B = b, .b_rs = N, .b_cs = 1, .C = ref, .c_rs = N, .c_cs = 1};
    CHECK(tk_cpu_gemm(&g, NULL, NULL) == TK_GEMM_OK, "reference");
    enum { NT = 4 };
    pthread_t th[NT];
    conc_arg args[NT];
    for (int t = 0; t < NT; t++) {
        args[t] = (conc_arg){t, a, b, ref, M, N, K, 0};
        pthread_create(&th[t], NULL, conc_main, &args[t]);
    }
    for (int t = 0; t < NT; t++) {
        pthread_join(th[t], NULL);
        CHECK(args[t].mismatches == 0, "thread %d: %d mismatching results", t, args[t].mismatches);
    }
    free(a);
    free(b);
    free(ref);
    printf("concurrent: %d failures\n", g_fail);
    return g_fail ? 1 : 0;
}

static int test_badargs(void) {
    if (strcmp(tk_cpu_isa(), "invalid") == 0) return 77;
    float a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 0, 1}, c[4];
    tk_gemm ok = {.M = 2, .N = 2, .K = 2, .a_dtype = TILE_DT_F32, .b_dtype = TILE_DT_F32, .c_dtype = TILE_DT_F32,
                  .A = a, .a_rs = 2, .a_cs = 1, .B = b, .b_rs = 2, .b_cs = 1, .C = c, .c_rs = 2, .c_cs = 1};
    CHECK(tk_cpu_gemm(&ok, NULL, NULL) == TK_GEMM_OK, "ok case: %s", tk_cpu_gemm_error());
    CHECK(c[0] == 1 && c[1] == 2 && c[2] == 3 && c[3] == 4, "identity product");
    struct {
        const char *what, *expect;
        tk_gemm g;
    } bad[12];
    int nb = 0;
#define BAD(w, e, field, val)           \
    do {                                \
        bad[nb].what = w;               \
        bad[nb].expect = e;             \
        bad[nb].g = ok;                 \
        bad[nb].g.field = val;          \
        nb++;                           \
    } while (0)
    BAD("negative M", "negative size", M, -1);
    BAD("negative K", "negative size", K, -3);
    BAD("NULL A", "A is NULL", A, NULL);
    BAD("NULL B", "B is NULL", B, NULL);
    BAD("NULL C", "C is NULL", C, NULL);
    BAD("int A", "unsupported dtype for A: int32", a_dtype, TILE_DT_I32);
    BAD("bad B dtype", "unsupported dtype for B", b_dtype, (tile_dtype)99);
    BAD("int C", "C must have a float dtype", c_dtype, TILE_DT_U8);
    BAD("accumulate 2", "accumulate must be 0 or 1", accumulate, 2);
    BAD("nthreads -1", "nthreads must be >= 0", nthreads, -1);
    BAD("C zero stride", "map several elements to one", c_cs, 0);
    BAD("huge stride", "offsets overflow", a_rs, INT64_MAX / 2);
    for (int i = 0; i < nb; i++) {
        int rc = tk_cpu_gemm(&bad[i].g, NULL, NULL);
        CHECK(rc == TK_GEMM_EINVAL, "%s: rc %d", bad[i].what, rc);
        CHECK(strstr(tk_cpu_gemm_error(), bad[i].expect) != NULL, "%s: message '%s' lacks '%s'", bad[i].what,
              tk_cpu_gemm_error(), bad[i].expect);
    }
    CHECK(tk_cpu_gemm(NULL, NULL, NULL) == TK_GEMM_EINVAL, "NULL description");
    /* M == 0 needs no pointers at all */
    tk_gemm empty = {.M = 0, .N = 3, .K = 3, .a_dtype = TILE_DT_F32, .b_dtype = TILE_DT_F32, .c_dtype = TILE_DT_F32};
    CHECK(tk_cpu_gemm(&empty, NULL, NULL) == TK_GEMM_OK, "empty: %s", tk_cpu_gemm_error());
    /* tk_cpu_set_isa */
    const char *cur = tk_cpu_isa();
    CHECK(tk_cpu_set_isa("sse9") == -1 && strstr(tk_cpu_gemm_error(), "unknown CPU ISA 'sse9'"), "set_isa unknown: %s",
          tk_cpu_gemm_error());
    CHECK(strcmp(tk_cpu_isa(), cur) == 0, "a refused set_isa changed the ISA");
    CHECK(tk_cpu_set_isa("generic") == 0 && strcmp(tk_cpu_isa(), "generic") == 0, "set_isa generic");
    CHECK(tk_cpu_gemm(&ok, NULL, NULL) == TK_GEMM_OK && c[3] == 4, "generic gemm");
    if (!(tk_cpu_features() & TK_CPU_AVX512F))
        CHECK(tk_cpu_set_isa("avx512") == -1 && strstr(tk_cpu_gemm_error(), "does not support"), "avx512 refused");
    CHECK(tk_cpu_set_isa(NULL) == 0, "back to auto");
    printf("badargs: %d failures\n", g_fail);
    return g_fail ? 1 : 0;
}

static int test_badisa(void) {
    /* run with TILE_CPU_ISA=<unknown or unsupported>: every call fails with a message */
    const char *want = getenv("TILE_CPU_ISA");
    CHECK(strcmp(tk_cpu_isa(), "invalid") == 0, "TILE_CPU_ISA=%s accepted as %s", want ? want : "(unset)", tk_cpu_isa());
    float a = 1, b = 1, c = 0;
    tk_gemm g = {.M = 1, .N = 1, .K = 1, .a_dtype = TILE_DT_F32, .b_dtype = TILE_DT_F32, .c_dtype = TILE_DT_F32,
                 .A = &a, .a_rs = 1, .a_cs = 1, .B = &b, .b_rs = 1, .b_cs = 1, .C = &c, .c_rs = 1, .c_cs = 1};
    CHECK(tk_cpu_gemm(&g, NULL, NULL) == TK_GEMM_EISA, "rc");
    CHECK(strstr(tk_cpu_gemm_error(), "TILE_CPU_ISA=") != NULL, "message: %s", tk_cpu_gemm_error());
    printf("message: %s\n", tk_cpu_gemm_error());
    /* the API can still pick a working one */
    CHECK(tk_cpu_set_isa("generic") == 0 && tk_cpu_gemm(&g, NULL, NULL) == TK_GEMM_OK && c == 1, "recovery");
    return g_fail ? 1 : 0;
}

/* ---------- the AMX kernel on row-major bf16 A ----------
 * The AMX kernel (and its emulation, which CI runs) on GEMMs whose A is row-major bf16 with
 * a row stride of whole dwords and K a multiple of 32 (and some that are not), ragged M and
 * N, several K blocks, accumulating, serial, threaded and in reverse order, and the
 * denormal fills: every result against the reference. */
static void amx_case(int64_t M, int64_t N, int64_t K, int la, int lc, int acc, int threaded) {
    run_case(M, N, K, TILE_DT_BF16, TILE_DT_BF16, TILE_DT_F32, la, 0, lc, acc, threaded);
}

static int test_amxrows(void) {
    const char *isa = tk_cpu_isa();
    if (strcmp(isa, "invalid") == 0) return skip_invalid();
    const char *bk = tk_cpu_bf16_kernel();
    const int amx = strcmp(bk, "amx") == 0 || strcmp(bk, "amx_emulated") == 0;
    if (!amx) {
        printf("skipped: the bf16 kernel is %s, not amx / amx_emulated\n", bk);
        return 77;
    }
    printf("isa %s, bf16 kernel %s\n", isa, bk);
    /* M, N, K, A layout, C layout, accumulate, threaded (0 serial, 1 pool, 2 reverse order) */
    static const int64_t cases[][7] = {
        {64, 64, 64, 6, 0, 0, 0},    {64, 64, 64, 4, 0, 1, 0},     {33, 47, 64, 4, 2, 0, 0}, /* ragged M and N */
        {32, 1, 32, 6, 0, 1, 0},     {63, 5, 96, 5, 0, 0, 0},      {96, 64, 128, 5, 2, 1, 0},
        {100, 70, 96, 4, 0, 1, 1},   {161, 130, 320, 5, 0, 0, 1}, {130, 97, 192, 6, 2, 1, 2},
        {64, 96, 2048, 4, 0, 1, 1},  {40, 33, 1600, 6, 0, 0, 0}, /* several K blocks at the default KC */
        {32, 32, 4096, 6, 0, 0, 1}, /* one compute task: the other body only scans */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        amx_case(cases[i][0], cases[i][1], cases[i][2], (int)cases[i][3], (int)cases[i][4], (int)cases[i][5],
                 (int)cases[i][6]);
    /* odd row stride (k pairs straddle dwords), K not a multiple of 32, column-major /
     * strided A, a column-major C (computed as C^T = B^T A^T) */
    amx_case(64, 64, 64, 0, 0, 0, 0);  /* row stride 67 */
    amx_case(64, 64, 48, 4, 0, 1, 1);
    amx_case(64, 64, 33, 6, 0, 0, 0);
    amx_case(64, 64, 64, 1, 0, 0, 0);
    amx_case(64, 64, 64, 2, 0, 0, 1);
    amx_case(64, 64, 64, 6, 1, 0, 0);
    amx_case(1, 32, 32, 6, 0, 1, 0);  /* fewer rows than one panel */
    amx_case(31, 40, 96, 5, 0, 0, 1);
    /* denormal fills: B subnormal, subnormal A, tiny products, subnormal C0, no scale (f32
     * path) */
    static double (*const fills[])(int, int64_t, int64_t) = {fill_mx, fill_mx_a, fill_tiny, fill_tiny_c, fill_wide,
                                                             fill_zero_a};
    for (int f = 0; f < 6; f++)
        for (int thr = 0; thr < 3; thr++) {
            g_fill = fills[f];
            run_case(thr ? 97 : 64, 64, 128, TILE_DT_BF16, TILE_DT_BF16, TILE_DT_F32, 4 + (f + thr) % 3, 0, 0, (f + thr) & 1,
                     thr);
        }
    g_fill = fill_mx; /* A normal: only B needs a scale */
    amx_case(64, 64, 128, 6, 0, 1, 1);
    g_fill = fill_tiny; /* subnormal products of normal inputs */
    amx_case(64, 64, 128, 4, 0, 0, 2);
    g_fill = fill_mx_a; /* A subnormal */
    amx_case(64, 64, 128, 6, 0, 1, 1);
    amx_case(33, 40, 96, 4, 0, 0, 0);
    g_fill = NULL;
    printf("%d cases, %d failures\n", g_cases, g_fail);
    return g_fail ? 1 : 0;
}

/* ---------- the bf16 packers ----------
 * tk_pack_bf16_avx512 (its fast paths: B row-major into pair panels, A row-major into pair
 * panels or 16-pair row chunks) must write exactly what tk_pack_bf16_generic writes, every
 * word of the destination (the pad rows and pad pairs are zero) and the same range, for any
 * slice of a source. Each source view ends at a PROT_NONE page, so a packer that reads one
 * element past the view faults (e.g. a ragged last panel taken by the whole-panel loop). */
typedef struct guarded { unsigned char *map; size_t len; } guarded;
/* room for elements [lo, hi] (offsets from the view's origin); returns the origin */
static uint16_t *guarded_view(guarded *g, int64_t lo, int64_t hi) {
    const size_t page = (size_t)sysconf(_SC_PAGESIZE), bytes = (size_t)(hi - lo + 1) * 2;
    g->len = (bytes + page - 1) / page * page + page;
    g->map = mmap(NULL, g->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (g->map == MAP_FAILED) return NULL;
    mprotect(g->map + g->len - page, page, PROT_NONE);
    uint16_t *first = (uint16_t *)(void *)(g->map + g->len - page - bytes); /* element lo */
    return first - lo;
}
static uint16_t random_bf16(void) {
    const uint64_t r = next_u64();
    switch (r % 16) {
    case 0: return (uint16_t)((r >> 8) & 0x807F);          /* zero or subnormal */
    case 1: return (uint16_t)(0x7F80 | ((r >> 8) & 0x8000)); /* +-inf */
    case 2: return (uint16_t)(0x7FC1 | ((r >> 8) & 0x8000)); /* NaN */
    default: return (uint16_t)(r >> 16);
    }
}
static int test_packers(void) {
    if (!(tk_cpu_features() & TK_CPU_AVX512BW)) {
        printf("SKIP: this CPU has no AVX-512BW: the AVX-512 packers cannot run here\n");
        return 77;
    }
    /* (R, kq, layout): vdpbf16ps A and B (R 12 / 32), AMX B (32, kq 16) and A (ROWS16), other R */
    static const int cfg[][3] = {{32, 1, TK_BF16_PAIRS},  {32, 16, TK_BF16_PAIRS}, {12, 1, TK_BF16_PAIRS},
                                 {16, 1, TK_BF16_PAIRS},  {24, 1, TK_BF16_PAIRS},  {32, 16, TK_BF16_ROWS16},
                                 {16, 16, TK_BF16_ROWS16}};
    int cases = 0, fails = 0;
    for (int it = 0; it < 1500; it++) {
        const int *c = cfg[it % 7];
        const int R = c[0], kq = c[1], layout = c[2];
        const int64_t plen = 1 + (int64_t)(next_u64() % (uint64_t)(5 * R + 3)), klen = 1 + (int64_t)(next_u64() % 97);
        const int64_t p0 = (int64_t)(next_u64() % 40), k0 = (int64_t)(next_u64() % 40);
        /* the source's layout: unit stride along p (row-major B, the sp == 1 fast path), along k
         * (row-major A, the sk == 1 ones), either with a negative other stride, or neither */
        const int kind = (int)((unsigned)it / 7 % 5);
        const int64_t ld = (kind < 2 ? p0 + plen : k0 + klen) + (int64_t)(next_u64() % 3);
        int64_t sp, sk;
        switch (kind) {
        case 0: sp = 1, sk = ld; break;
        case 1: sp = 1, sk = -ld; break;
        case 2: sp = ld, sk = 1; break;
        case 3: sp = -ld, sk = 1; break;
        default: sp = 3, sk = 3 * (p0 + plen) + 1; break;
        }
        int64_t lo = INT64_MAX, hi = INT64_MIN; /* the view's extreme offsets */
        for (int a = 0; a < 2; a++)
            for (int b = 0; b < 2; b++) {
                const int64_t off = (a ? p0 + plen - 1 : p0) * sp + (b ? k0 + klen - 1 : k0) * sk;
                lo = off < lo ? off : lo, hi = off > hi ? off : hi;
            }
        guarded g;
        uint16_t *src = guarded_view(&g, lo, hi);
        if (!src) return fprintf(stderr, "mmap failed\n"), 1;
        for (int64_t e = lo; e <= hi; e++) src[e] = random_bf16();
        const tk_src view = {src, TILE_DT_BF16, sp, sk};
        const int64_t kpad = ((klen + 1) / 2 + kq - 1) / kq * kq, words = (plen + R - 1) / R * R * kpad;
        uint32_t *d1 = aligned_alloc(64, (size_t)(words + 16) * 4), *d2 = aligned_alloc(64, (size_t)(words + 16) * 4);
        for (int with_rng = 0; with_rng < 2; with_rng++) {
            memset(d1, 0xAB, (size_t)(words + 16) * 4);
            memset(d2, 0xCD, (size_t)(words + 16) * 4);
            uint32_t r1[2] = {0x10000u, 0}, r2[2] = {0x10000u, 0};
            tk_pack_bf16_avx512(&view, p0, plen, k0, klen, R, kq, layout, d1, with_rng ? r1 : NULL);
            tk_pack_bf16_generic(&view, p0, plen, k0, klen, R, kq, layout, d2, with_rng ? r2 : NULL);
            int64_t first_diff = -1;
            for (int64_t w = 0; w < words && first_diff < 0; w++)
                if (d1[w] != d2[w]) first_diff = w;
            cases++;
            if (first_diff >= 0 || (with_rng && (r1[0] != r2[0] || r1[1] != r2[1]))) {
                if (fails++ < 10)
                    fprintf(stderr, "FAIL packers: R=%d kq=%d layout=%d p0=%lld plen=%lld k0=%lld klen=%lld sp=%lld sk=%lld rng=%d: "
                            "word %lld differs (avx512 0x%08x, generic 0x%08x); range %u..%u vs %u..%u\n",
                            R, kq, layout, (long long)p0, (long long)plen, (long long)k0, (long long)klen, (long long)sp,
                            (long long)sk, with_rng, (long long)first_diff, first_diff >= 0 ? d1[first_diff] : 0,
                            first_diff >= 0 ? d2[first_diff] : 0, r1[0], r1[1], r2[0], r2[1]);
            }
        }
        free(d1);
        free(d2);
        munmap(g.map, g.len);
    }
    printf("%d cases, %d failures\n", cases, fails);
    return fails ? 1 : 0;
}

/* Home regions (cpu_gemm.c affine_task): threaded bf16 GEMMs on 2 to 16 workers, so that the
 * region grids are 1x2 to 4x4, uneven (5 or 7 workers on 4-8 tiles: regions of different
 * sizes, workers without a region of their own that only take what is left), with bodies
 * on fresh threads at every call (new slots: new homes) and run serially in reverse order
 * (one body then packs every region and computes every tile). Each result against the
 * reference; and the steps must have used regions (none with TILE_GEMM_AFFINE=0). */
static int test_regions(void) {
    const char *af = getenv("TILE_GEMM_AFFINE");
    const int off = af && strcmp(af, "0") == 0;
    if (strcmp(tk_cpu_bf16_kernel(), "f32") == 0) {
        printf("SKIP: no bf16 kernel (the f32 path has no home regions)\n");
        return 77;
    }
    static const int nts[] = {2, 3, 5, 7, 16};
    static const int64_t shapes[][3] = {{300, 333, 129}, {97, 130, 301}, {513, 257, 64}, {64, 1000, 200}, {1000, 40, 96}};
    const long long before = tk_cpu_gemm_affine_count();
    int n = 0;
    for (int t = 0; t < (int)(sizeof nts / sizeof nts[0]); t++)
        for (int s = 0; s < 5; s++, n++) {
            g_nthreads = g_workers = nts[t];
            run_case(shapes[s][0], shapes[s][1], shapes[s][2], TILE_DT_BF16, TILE_DT_BF16,
                     n % 3 == 2 ? TILE_DT_BF16 : TILE_DT_F32, n % 4, (n + 1) % 4, n % 3, n & 1, n % 4 == 3 ? 2 : 1);
        }
    g_nthreads = 2;
    g_workers = 0;
    const long long used = tk_cpu_gemm_affine_count() - before;
    CHECK(off ? used == 0 : used >= n / 2, "%lld of %d parallel steps had home regions (TILE_GEMM_AFFINE=%s)", used, n,
          af ? af : "unset");
    printf("%d cases, %d failures; %lld steps with home regions\n", g_cases, g_fail, used);
    return g_fail ? 1 : 0;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "gemm";
    if (strcmp(mode, "packers") == 0) return test_packers();
    if (strcmp(mode, "gemm") == 0) return test_gemm();
    if (strcmp(mode, "helpers") == 0) return test_helpers();
    if (strcmp(mode, "badargs") == 0) return test_badargs();
    if (strcmp(mode, "badisa") == 0) return test_badisa();
    if (strcmp(mode, "concurrent") == 0) return test_concurrent();
    if (strcmp(mode, "denormal") == 0) return test_denormal();
    if (strcmp(mode, "amxrows") == 0) return test_amxrows();
    if (strcmp(mode, "regions") == 0) return test_regions();
    fprintf(stderr, "usage: %s gemm|helpers|badargs|badisa|concurrent|denormal|amxrows|regions|packers\n", argv[0]);
    return 2;
}
