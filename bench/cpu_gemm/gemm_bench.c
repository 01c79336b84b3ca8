/* gemm_bench.c — tk_cpu_gemm vs OpenBLAS cblas_sgemm (and oneDNN) in the same process.
 *
 *   gemm_bench [--threads N] [--reps R] [--sizes 1024,2048] [--bf16] [--no-dnnl]
 *
 * For each size: random data, a correctness check of ours against OpenBLAS (norm-wise,
 * relative to |A||B|), one warm-up, then R timed runs of each library interleaved (rotating
 * order, 150 ms pause before each); the median GFLOP/s is reported, and the ratio of the
 * best times. Prints one markdown table row per (size, dtype). Built by
 * run.sh; needs libopenblas-dev (and libdnnl-dev unless -DNO_DNNL). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>
#ifndef NO_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif

#include "kernels/cpu_gemm.h"
#include "runtime/threadpool.h"

/* ---------- tk_parallel_for over Tile's own thread pool ----------
 * The pool the cpu runtime gives tk_cpu_gemm (src/runtime/cpu.c does the same): its workers
 * poll briefly for the next job on an idle machine, then sleep. Until session 6 this bench
 * had its own pool whose workers slept on a condition variable at once: on the 2-core VM the
 * second worker then woke too late to take part in a 5 ms bf16 1024^3 call, which measured
 * half of what `tile run` gets for the same GEMM (204-211 against 387-392 GFLOP/s). */
static void pool_start(int n) {
    /* the pool reads TILE_NUM_THREADS once, when it starts */
    char b[16];
    snprintf(b, sizeof b, "%d", n < 1 ? 1 : n);
    setenv("TILE_NUM_THREADS", b, 1);
    (void)tile_pool_size();
}

/* ---------- helpers ---------- */
static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t rng = 88172645463325252ull;
static float frand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((double)(rng >> 11) * 0x1p-53 * 2.0 - 1.0);
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static uint16_t f2bf(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7FFF + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}
static float bf2f(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* max |x - y| / (|A||B| scale): both are f32 GEMMs with K-term sums, so they agree to ~K u */
static double max_rel_diff(const float *x, const float *y, int64_t n, double scale) {
    double m = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)x[i] - (double)y[i]) / scale;
        if (!(d <= m)) m = d; /* NaN too */
    }
    return m;
}

#ifndef NO_DNNL
typedef struct dnnl_mm {
    dnnl_engine_t eng;
    dnnl_stream_t st;
    dnnl_primitive_t prim;
    dnnl_memory_t ma, mb, mc;
    const char *impl;
} dnnl_mm;

/* a bf16 x bf16 -> f32 matmul primitive (row-major), NULL impl on failure */
static int dnnl_mm_init(dnnl_mm *d, int64_t M, int64_t N, int64_t K, void *a, void *b, float *c, dnnl_data_type_t in_dt) {
    memset(d, 0, sizeof *d);
    if (dnnl_engine_create(&d->eng, dnnl_cpu, 0) != dnnl_success) return -1;
    if (dnnl_stream_create(&d->st, d->eng, dnnl_stream_default_flags) != dnnl_success) return -1;
    dnnl_memory_desc_t amd, bmd, cmd;
    dnnl_dims_t ad = {M, K}, bd = {K, N}, cd = {M, N};
    dnnl_memory_desc_init_by_tag(&amd, 2, ad, in_dt, dnnl_ab);
    dnnl_memory_desc_init_by_tag(&bmd, 2, bd, in_dt, dnnl_ab);
    dnnl_memory_desc_init_by_tag(&cmd, 2, cd, dnnl_f32, dnnl_ab);
    dnnl_matmul_desc_t md;
    if (dnnl_matmul_desc_init(&md, &amd, &bmd, NULL, &cmd) != dnnl_success) return -1;
    dnnl_primitive_desc_t pd;
    if (dnnl_primitive_desc_create(&pd, &md, NULL, d->eng, NULL) != dnnl_success) return -1;
    const char *impl = NULL;
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    static char implbuf[64];
    snprintf(implbuf, sizeof implbuf, "%s", impl ? impl : "?");
    d->impl = implbuf;
    if (dnnl_primitive_create(&d->prim, pd) != dnnl_success) return -1;
    dnnl_primitive_desc_destroy(pd);
    dnnl_memory_create(&d->ma, &amd, d->eng, a);
    dnnl_memory_create(&d->mb, &bmd, d->eng, b);
    dnnl_memory_create(&d->mc, &cmd, d->eng, c);
    return 0;
}
static void dnnl_mm_run(dnnl_mm *d) {
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, d->ma}, {DNNL_ARG_WEIGHTS, d->mb}, {DNNL_ARG_DST, d->mc}};
    dnnl_primitive_execute(d->prim, d->st, 3, args);
    dnnl_stream_wait(d->st);
}
static void dnnl_mm_fini(dnnl_mm *d) {
    if (d->ma) dnnl_memory_destroy(d->ma);
    if (d->mb) dnnl_memory_destroy(d->mb);
    if (d->mc) dnnl_memory_destroy(d->mc);
    if (d->prim) dnnl_primitive_destroy(d->prim);
    if (d->st) dnnl_stream_destroy(d->st);
    if (d->eng) dnnl_engine_destroy(d->eng);
}
#endif

int main(int argc, char **argv) {
    int threads = tk_cpu_count(), reps = 5, bf16 = 0, use_dnnl = 1;
    int64_t sizes[16][3];
    int nsizes = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--bf16")) bf16 = 1;
        else if (!strcmp(argv[i], "--no-dnnl")) use_dnnl = 0;
        else if (!strcmp(argv[i], "--sizes") && i + 1 < argc) {
            char *s = argv[++i];
            while (*s && nsizes < 16) { /* n (= M = N = K) or MxNxK */
                int64_t v = strtoll(s, &s, 10);
                sizes[nsizes][0] = sizes[nsizes][1] = sizes[nsizes][2] = v;
                if (*s == 'x') sizes[nsizes][1] = strtoll(s + 1, &s, 10);
                if (*s == 'x') sizes[nsizes][2] = strtoll(s + 1, &s, 10);
                nsizes++;
                if (*s == ',') s++;
                else if (*s) break;
            }
        } else {
            fprintf(stderr, "usage: %s [--threads N] [--reps R] [--sizes a,b,c] [--bf16] [--no-dnnl]\n", argv[0]);
            return 2;
        }
    }
    if (nsizes == 0) {
        sizes[0][0] = sizes[0][1] = sizes[0][2] = 1024;
        nsizes = 1;
    }
    if (reps < 1) reps = 1;
    if (threads < 1) threads = 1;
    openblas_set_num_threads(threads);
    pool_start(threads);
    fprintf(stderr, "# tile isa %s, %d threads; OpenBLAS core %s (%s)\n", tk_cpu_isa(), threads, openblas_get_corename(),
            openblas_get_config());

    int failed = 0;
    for (int si = 0; si < nsizes; si++) {
        const int64_t M = sizes[si][0], N = sizes[si][1], K = sizes[si][2];
        /* small problems: each timed sample repeats the call to last ~10 ms or more */
        const int inner = (int)(1e9 / (2.0 * M * N * K)) + 1;
        float *a = aligned_alloc(64, (size_t)(M * K) * 4), *b = aligned_alloc(64, (size_t)(K * N) * 4);
        float *c1 = aligned_alloc(64, (size_t)(M * N) * 4), *c2 = aligned_alloc(64, (size_t)(M * N) * 4);
        uint16_t *ah = bf16 ? aligned_alloc(64, (size_t)(M * K) * 2) : NULL, *bh = bf16 ? aligned_alloc(64, (size_t)(K * N) * 2) : NULL;
        for (int64_t i = 0; i < M * K; i++) a[i] = frand();
        for (int64_t i = 0; i < K * N; i++) b[i] = frand();
        if (bf16) {
            /* bf16 data; the f32 copies hold the same (exact) values for the OpenBLAS check */
            for (int64_t i = 0; i < M * K; i++) a[i] = bf2f(ah[i] = f2bf(a[i]));
            for (int64_t i = 0; i < K * N; i++) b[i] = bf2f(bh[i] = f2bf(b[i]));
        }
        tk_gemm g = {.M = M, .N = N, .K = K, .a_dtype = bf16 ? TILE_DT_BF16 : TILE_DT_F32,
                     .b_dtype = bf16 ? TILE_DT_BF16 : TILE_DT_F32, .c_dtype = TILE_DT_F32,
                     .A = bf16 ? (const void *)ah : a, .a_rs = K, .a_cs = 1,
                     .B = bf16 ? (const void *)bh : b, .b_rs = N, .b_cs = 1, .C = c1, .c_rs = N, .c_cs = 1,
                     .nthreads = threads};
        tk_parallel_for pf = threads > 1 ? tile_pool_for_each : NULL;
        /* correctness first: ours vs OpenBLAS on the same (exact) inputs */
        for (int64_t i = 0; i < M * N; i++) c1[i] = NAN;
        if (tk_cpu_gemm(&g, pf, NULL) != TK_GEMM_OK) {
            fprintf(stderr, "tk_cpu_gemm: %s\n", tk_cpu_gemm_error());
            return 1;
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, a, (int)K, b, (int)N, 0.0f, c2, (int)N);
        /* entries are uniform(-1,1): sum_k |a||b| ~ K/4 */
        double err = max_rel_diff(c1, c2, M * N, K / 4.0 + 1);
        double bound = 2.0 * K * 0x1p-24;
        const char *ok = err <= bound ? "ok" : "MISMATCH";
        if (err > bound) failed = 1;

        double *t_ours = calloc((size_t)reps, sizeof(double)), *t_ob = calloc((size_t)reps, sizeof(double)),
               *t_dn = calloc((size_t)reps, sizeof(double));
        int have_dnnl = 0;
        const char *dn_impl = "-";
#ifndef NO_DNNL
        dnnl_mm dm;
        memset(&dm, 0, sizeof dm);
        if (use_dnnl) {
            if (bf16) {
                if (dnnl_mm_init(&dm, M, N, K, ah, bh, c2, dnnl_bf16) == 0) have_dnnl = 1, dn_impl = dm.impl;
            } else {
                have_dnnl = 1;
                dn_impl = "dnnl_sgemm";
            }
        }
#else
        (void)use_dnnl;
#endif
        /* warm-up, then interleaved timed runs */
        tk_cpu_gemm(&g, pf, NULL);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, a, (int)K, b, (int)N, 0.0f, c2, (int)N);
#ifndef NO_DNNL
        if (have_dnnl) {
            if (bf16) dnnl_mm_run(&dm);
            else dnnl_sgemm('N', 'N', M, N, K, 1.0f, a, K, b, N, 0.0f, c2, N);
        }
#endif
        /* each rep runs the libraries in a rotating order, with a pause before each run so
         * that worker threads another library leaves spinning (OpenBLAS spins ~0.1 s after a
         * call) go idle and nobody systematically runs in someone else's wake */
        for (int r = 0; r < reps; r++) {
            for (int q = 0; q < 3; q++) {
                const int lib = (r + q) % 3;
                if (lib == 2 && !have_dnnl) continue;
                struct timespec pause = {0, 150 * 1000 * 1000};
                nanosleep(&pause, NULL);
                /* one untimed call first: after the pause every library's threads (and, on a
                 * VM, its virtual CPUs) wake up slowly, which a 1024^3 call on 2 threads (5-10
                 * ms, one call per sample) measured as 20-35% slower for all three libraries
                 * alike (the first size of a run the most); a training loop calls back to back */
                if (lib == 0) tk_cpu_gemm(&g, pf, NULL);
                else if (lib == 1)
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, a, (int)K, b, (int)N,
                                0.0f, c2, (int)N);
#ifndef NO_DNNL
                else if (bf16) dnnl_mm_run(&dm);
                else dnnl_sgemm('N', 'N', M, N, K, 1.0f, a, K, b, N, 0.0f, c2, N);
#endif
                double t0 = now();
                if (lib == 0) {
                    for (int it = 0; it < inner; it++) tk_cpu_gemm(&g, pf, NULL);
                    t_ours[r] = (now() - t0) / inner;
                } else if (lib == 1) {
                    for (int it = 0; it < inner; it++)
                        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, a, (int)K, b,
                                    (int)N, 0.0f, c2, (int)N);
                    t_ob[r] = (now() - t0) / inner;
                } else {
#ifndef NO_DNNL
                    for (int it = 0; it < inner; it++) {
                        if (bf16) dnnl_mm_run(&dm);
                        else dnnl_sgemm('N', 'N', M, N, K, 1.0f, a, K, b, N, 0.0f, c2, N);
                    }
#endif
                    t_dn[r] = (now() - t0) / inner;
                }
            }
        }
        qsort(t_ours, (size_t)reps, sizeof(double), cmp_d);
        qsort(t_ob, (size_t)reps, sizeof(double), cmp_d);
        qsort(t_dn, (size_t)reps, sizeof(double), cmp_d);
        const double fl = 2.0 * M * N * K * 1e-9;
        double g_ours = fl / t_ours[reps / 2], g_ob = fl / t_ob[reps / 2], g_dn = have_dnnl ? fl / t_dn[reps / 2] : 0;
        char dncol[64] = "n/a", dnratio[32] = "n/a";
        if (have_dnnl) {
            snprintf(dncol, sizeof dncol, "%.1f", g_dn);
            snprintf(dnratio, sizeof dnratio, "%.2f", g_ours / g_dn);
        }
        /* best-of ratio: less sensitive to other processes on a shared machine */
        char shape[64];
        if (M == N && N == K) snprintf(shape, sizeof shape, "%lld", (long long)M);
        else snprintf(shape, sizeof shape, "%lldx%lldx%lld", (long long)M, (long long)N, (long long)K);
        printf("| %s | %s | %d | %.1f | %.1f | **%.2f** | %.2f | %s (%s) | %s | %s (%.1e) |\n", bf16 ? "bf16->f32" : "f32",
               shape, threads, g_ours, g_ob, g_ours / g_ob, t_ob[0] / t_ours[0], dncol, dn_impl, dnratio, ok, err);
        fflush(stdout);
#ifndef NO_DNNL
        if (bf16 && have_dnnl) dnnl_mm_fini(&dm);
#endif
        free(t_ours);
        free(t_ob);
        free(t_dn);
        free(a);
        free(b);
        free(c1);
        free(c2);
        free(ah);
        free(bh);
    }
    return failed;
}
