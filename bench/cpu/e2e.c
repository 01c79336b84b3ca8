/* e2e.c — Tile's compiled TileLang kernels on the cpu target, end to end through the public
 * API (include/tile.h), against the peer a user would otherwise pick, in the same process:
 *
 *   - the seed matmul (plain form, auto-scheduled by TileOpt) and the tile-form GEMM example,
 *     f32, vs OpenBLAS cblas_sgemm on the same data;
 *   - row softmax (tile form and plain form) and RMSNorm (tile form) over rows of N = 4096 .. 65536 f32, as an
 *     effective bandwidth (each input read once, each output written once) vs memcpy's, with
 *     TileOpt's rowfuse pass and without it (TILE_NO_ROWFUSE=1, same process);
 *   - compile latency: a cold compile of the seed matmul (empty cache) and a cache hit.
 *
 * Correctness is checked before timing (GEMMs against OpenBLAS; softmax rows sum to 1,
 * RMSNorm against a double reference on sampled rows). Random data, never zeros. Median of
 * `--reps` timed runs after one warm-up run.
 *
 *   e2e [--threads T] [--sizes 1024,2048,4096] [--rows 4096,16384,65536] [--reps 5] [--root DIR]
 *       [--no-gemm] [--no-rows] [--no-latency] [--cpu-time] [--pipe-ab] [--offset X,Y]
 * --pipe-ab: only the three rowfuse kernels, each next to its unpipelined twin (TILE_ROWFUSE_PIPE=0).
 * --offset X,Y: the row kernels' X and Y start X and Y bytes past a 4 KiB boundary (multiples
 * of 4); without it they are malloc's (glibc: 16 bytes past a page for these 128 MiB tensors).
 * Prints a markdown table; bench/cpu/run.sh writes it to bench/results/. Built with
 * -DE2E_NO_BLAS (bench/cpu/run.sh with ROWS_ONLY=1) it needs no OpenBLAS and has no GEMM rows.
 * The row kernels are timed in rounds that alternate with a memcpy of the same buffers by
 * the same number of threads: the ratio is of two medians taken at the same moments.
 */
#define _GNU_SOURCE
#ifndef E2E_NO_BLAS
#include <cblas.h>
#endif
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <pthread.h>

#include "tile.h"

#ifndef E2E_NO_BLAS
void openblas_set_num_threads(int n);
#endif

/* --cpu-time: time with the process's CPU time instead of the wall clock (with --threads 1
 * only: a development aid on a loaded machine, where wall time includes waiting for a core) */
static clockid_t clk = CLOCK_MONOTONIC;
static double now(void) {
    struct timespec t;
    clock_gettime(clk, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return v[n / 2];
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float frand(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((double)(rng >> 11) * 0x1.0p-53 * 2.0 - 1.0);
}

static void die(const char *what, const char *msg) {
    fprintf(stderr, "e2e: %s: %s\n", what, msg ? msg : "failed");
    exit(1);
}

static tile_kernel *compile(const char *root, const char *file, const char *const *defs, int ndefs, tile_module **mod) {
    char path[4096], *diag = NULL;
    snprintf(path, sizeof path, "%s/%s", root, file);
    if (tile_compile_file(path, defs, ndefs, mod, &diag) != TILE_OK) die(path, diag);
    tile_free(diag);
    tile_kernel *k = tile_module_kernel(*mod, NULL);
    if (!k) die(path, "expected one kernel");
    return k;
}

#ifndef E2E_NO_BLAS
/* Time `reps` runs of k on cpu (after one warm-up); params/rets preallocated. */
static double time_tile(tile_kernel *k, tile_tensor *p, int np, tile_tensor *r, int nr, int reps) {
    double *t = calloc((size_t)reps, sizeof *t);
    char *err = NULL;
    for (int i = 0; i <= reps; i++) {
        double a = now();
        if (tile_run(k, "cpu", p, np, r, nr, NULL, &err) != TILE_OK) die("tile_run", err);
        if (i) t[i - 1] = now() - a;
    }
    double m = median(t, reps);
    free(t);
    return m;
}

static void gemm_rows(const char *root, const int *sizes, int nsizes, int reps, int threads) {
    for (int si = 0; si < nsizes; si++) {
        int S = sizes[si];
        size_t n = (size_t)S * S;
        float *A = malloc(n * 4), *B = malloc(n * 4), *C = malloc(n * 4), *C2 = malloc(n * 4), *C3 = malloc(n * 4);
        for (size_t i = 0; i < n; i++) { A[i] = frand(); B[i] = frand(); }
        char d0[32], d1[32], d2[32];
        snprintf(d0, sizeof d0, "M=%d", S);
        snprintf(d1, sizeof d1, "N=%d", S);
        snprintf(d2, sizeof d2, "K=%d", S);
        const char *defs[] = {d0, d1, d2, "dtype=float32"};
        tile_module *m1, *m2;
        tile_kernel *seed = compile(root, "examples/seed_matmul_000.tl", defs, 3, &m1);
        tile_kernel *tform = compile(root, "examples/gemm.tl", defs, 4, &m2);
        tile_tensor p[3] = {{A, TILE_DT_F32, 2, {S, S}}, {B, TILE_DT_F32, 2, {S, S}}, {C3, TILE_DT_F32, 2, {S, S}}};
        tile_tensor r = {C, TILE_DT_F32, 2, {S, S}};
        double t_seed = time_tile(seed, p, 2, &r, 1, reps);
        double t_tile = time_tile(tform, p, 3, NULL, 0, reps);
        double *tb = calloc((size_t)reps, sizeof *tb);
        for (int i = 0; i <= reps; i++) {
            double a = now();
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, S, S, S, 1.0f, A, S, B, S, 0.0f, C2, S);
            if (i) tb[i - 1] = now() - a;
        }
        double t_blas = median(tb, reps);
        free(tb);
        double md1 = 0, md2 = 0, mx = 0;
        for (size_t i = 0; i < n; i++) {
            md1 = fmax(md1, fabs((double)C[i] - C2[i]));
            md2 = fmax(md2, fabs((double)C3[i] - C2[i]));
            mx = fmax(mx, fabs((double)C2[i]));
        }
        double bound = 2.0 * S * 0x1.0p-24 * mx + 1e-6; /* f32 accumulation, any order */
        double fl = 2.0 * S * (double)S * S;
        printf("| f32 matmul %dx%dx%d | %d | %.1f | %.1f | %.1f | **%.2f** / **%.2f** | %s (max diff %.2g, %.2g) |\n", S, S, S, threads,
               fl / t_seed * 1e-9, fl / t_tile * 1e-9, fl / t_blas * 1e-9, t_blas / t_seed, t_blas / t_tile,
               md1 <= bound && md2 <= bound ? "ok" : "MISMATCH", md1, md2);
        fflush(stdout);
        tile_module_free(m1);
        tile_module_free(m2);
        free(A); free(B); free(C); free(C2); free(C3);
    }
}

#endif

typedef struct cp_job { char *dst; const char *src; size_t n; } cp_job;
static void *cp_thread(void *a) {
    cp_job *j = a;
    memcpy(j->dst, j->src, j->n);
    return NULL;
}

/* memcpy bandwidth with `threads` threads each copying a slice (read + write counted). */
static double memcpy_bw(size_t bytes, int reps, int threads) {
    char *a = malloc(bytes), *b = malloc(bytes);
    memset(a, 1, bytes);
    memset(b, 2, bytes);
    double *t = calloc((size_t)reps, sizeof *t);
    pthread_t th[64];
    cp_job jobs[64];
    if (threads > 64) threads = 64;
    for (int i = 0; i <= reps; i++) {
        double s = now();
        size_t per = bytes / (size_t)threads;
        for (int k = 0; k < threads; k++) {
            jobs[k].dst = b + per * (size_t)k;
            jobs[k].src = a + per * (size_t)k;
            jobs[k].n = k == threads - 1 ? bytes - per * (size_t)k : per;
            pthread_create(&th[k], NULL, cp_thread, &jobs[k]);
        }
        for (int k = 0; k < threads; k++) pthread_join(th[k], NULL);
        if (i) t[i - 1] = now() - s;
    }
    double bw = 2.0 * (double)bytes / median(t, reps);
    free(t);
    free(a);
    free(b);
    return bw;
}

/* One timed memcpy of n bytes src -> dst by `threads` threads (slices), seconds. */
static double memcpy_once(char *dst, const char *src, size_t n, int threads) {
    pthread_t th[64];
    cp_job jobs[64];
    if (threads > 64) threads = 64;
    size_t per = n / (size_t)threads;
    double s = now();
    for (int k = 0; k < threads; k++) {
        jobs[k].dst = dst + per * (size_t)k;
        jobs[k].src = src + per * (size_t)k;
        jobs[k].n = k == threads - 1 ? n - per * (size_t)k : per;
        pthread_create(&th[k], NULL, cp_thread, &jobs[k]);
    }
    for (int k = 0; k < threads; k++) pthread_join(th[k], NULL);
    return now() - s;
}

/* The row kernels against memcpy side by side: `reps` rounds of (memcpy X -> Y, kernel), after
 * one warm-up round, so that both see the same moment of a shared machine; the medians of
 * each. The kernel runs last, so Y holds its output afterwards. */
static void time_rows_paired(tile_kernel *k, tile_tensor *p, int np, tile_tensor *r, int nr, int reps, int threads, void *X, void *Y,
                             size_t bytes, double *t_kernel, double *t_memcpy) {
    double *t = calloc((size_t)reps, sizeof *t), *tm = calloc((size_t)reps, sizeof *tm);
    char *err = NULL;
    for (int i = 0; i <= reps; i++) {
        double c = memcpy_once(Y, X, bytes, threads);
        double a = now();
        if (tile_run(k, "cpu", p, np, r, nr, NULL, &err) != TILE_OK) die("tile_run", err);
        if (i) t[i - 1] = now() - a, tm[i - 1] = c;
    }
    *t_kernel = median(t, reps);
    *t_memcpy = median(tm, reps);
    free(t);
    free(tm);
}

static int pipe_ab;
static int off_x = -1, off_y = -1; /* --offset; -1: malloc's placement */
/* a row-kernel tensor of `bytes`, at --offset's place or malloc's; *base is what to free */
static float *row_tensor(size_t bytes, int off, void **base) {
    if (off < 0) return (float *)(*base = malloc(bytes));
    char *p = aligned_alloc(4096, (bytes + 8192) / 4096 * 4096);
    *base = p;
    return p ? (float *)(void *)(p + off) : NULL;
}
static void rows_bench(const char *root, const int *rows, int nrows, int reps, int threads) {
    const size_t elems = (size_t)1 << 25; /* 128 MiB of f32 per tensor */
    double mbw = memcpy_bw(elems * 4, reps, threads);
    printf("\nmemcpy of 128 MiB (%d thread%s; read + write counted): %.2f GB/s\n\n", threads, threads == 1 ? "" : "s", mbw * 1e-9);
    printf("Each kernel below is timed in rounds alternating with a memcpy of X into Y (same buffers, same threads): "
           "the last two columns are that memcpy's median and the ratio of the two medians.\n\n");
    printf("| kernel | row length N | rows M | threads | effective GB/s (read X once, write Y once) | check | memcpy GB/s, interleaved | / memcpy |\n|---|---|---|---|---|---|---|---|\n");
    void *xbase, *ybase;
    float *X = row_tensor(elems * 4, off_x, &xbase), *Y = row_tensor(elems * 4, off_y, &ybase), *W = malloc(65536 * 4);
    if (!X || !Y || !W) die("rows", "out of memory");
    printf("X and Y at %s (their addresses modulo 4096: %u, %u)\n\n", off_x < 0 ? "malloc's placement" : "--offset",
           (unsigned)((uintptr_t)X & 4095), (unsigned)((uintptr_t)Y & 4095));
    for (size_t i = 0; i < elems; i++) X[i] = frand() * 4.0f;
    for (int i = 0; i < 65536; i++) W[i] = frand();
    for (int ri = 0; ri < nrows; ri++) {
        int N = rows[ri];
        int M = (int)(elems / (size_t)N);
        char dm[32], dn[32];
        snprintf(dm, sizeof dm, "M=%d", M);
        snprintf(dn, sizeof dn, "N=%d", N);
        const char *defs[] = {dm, dn};
        /* which: 0 softmax (tile form), 1 RMSNorm (tile form), 2 softmax (plain form); 3-5 the
         * same three compiled with TILE_NO_ROWFUSE=1 (TileOpt's rowfuse pass off: the kernels
         * per block of rows, the plain softmax's three passes); 0-2 with TILE_ROWFUSE_PIPE=1
         * (pipelined; the RMSNorm's default is not); 6-8 with TILE_ROWFUSE_PIPE=0
         * (rowfuse's rows one after the other, not pipelined), measured in the same run, each
         * right after its pipelined twin */
        static const char *const files[9] = {"examples/softmax.tl", "examples/rmsnorm.tl", "examples/softmax_plain.tl",
                                             "examples/softmax.tl", "examples/rmsnorm.tl", "examples/softmax_plain.tl",
                                             "examples/softmax.tl", "examples/rmsnorm.tl", "examples/softmax_plain.tl"};
        static const char *const names[9] = {"softmax", "RMSNorm, pipelined (TILE_ROWFUSE_PIPE=1)", "softmax (plain form)",
                                             "softmax, no rowfuse", "RMSNorm, no rowfuse", "softmax (plain form), no rowfuse",
                                             "softmax, not pipelined (TILE_ROWFUSE_PIPE=0)", "RMSNorm, not pipelined (the default)",
                                             "softmax (plain form), not pipelined (TILE_ROWFUSE_PIPE=0)"};
        static const int order[9] = {0, 6, 1, 7, 2, 8, 3, 4, 5};
        for (int oi = 0; oi < (pipe_ab ? 6 : 9); oi++) {
            int which0 = order[oi];
            tile_module *mod;
            /* TileOpt and the C generator run at the kernel's first tile_run on cpu (the
             * warm-up run of time_tile): the switch must still be set then */
            if (which0 >= 3 && which0 < 6) setenv("TILE_NO_ROWFUSE", "1", 1);
            if (which0 >= 6) setenv("TILE_ROWFUSE_PIPE", "0", 1);
            if (which0 < 3) setenv("TILE_ROWFUSE_PIPE", "1", 1); /* pipelined, whatever the default */
            tile_kernel *k = compile(root, files[which0], defs, 2, &mod);
            int form = which0 % 3; /* 0 softmax, 1 RMSNorm, 2 plain softmax */
            tile_tensor p3[3] = {{X, TILE_DT_F32, 2, {M, N}}, {W, TILE_DT_F32, 1, {N}}, {Y, TILE_DT_F32, 2, {M, N}}};
            tile_tensor p2[2] = {{X, TILE_DT_F32, 2, {M, N}}, {Y, TILE_DT_F32, 2, {M, N}}};
            tile_tensor r1 = {Y, TILE_DT_F32, 2, {M, N}};
            double t, tm;
            if (form == 1) time_rows_paired(k, p3, 3, NULL, 0, reps, threads, X, Y, elems * 4, &t, &tm);
            else if (form == 2) time_rows_paired(k, p2, 1, &r1, 1, reps, threads, X, Y, elems * 4, &t, &tm);
            else time_rows_paired(k, p2, 2, NULL, 0, reps, threads, X, Y, elems * 4, &t, &tm);
            if (which0 >= 3 && which0 < 6) unsetenv("TILE_NO_ROWFUSE");
            if (which0 >= 6 || which0 < 3) unsetenv("TILE_ROWFUSE_PIPE");
            int which = form == 1;
            double bw = 2.0 * (double)elems * 4 / t;
            /* check a few rows */
            double worst = 0;
            for (int r = 0; r < M; r += M / 4 > 0 ? M / 4 : 1) {
                const float *x = X + (size_t)r * N, *y = Y + (size_t)r * N;
                if (!which) {
                    double mxv = -INFINITY, s = 0;
                    for (int j = 0; j < N; j++) mxv = fmax(mxv, x[j]);
                    for (int j = 0; j < N; j++) s += exp(x[j] - mxv);
                    for (int j = 0; j < N; j++) worst = fmax(worst, fabs(y[j] - exp(x[j] - mxv) / s) / (exp(x[j] - mxv) / s + 1e-30));
                } else {
                    double ss = 0;
                    for (int j = 0; j < N; j++) ss += (double)x[j] * x[j];
                    double inv = 1.0 / sqrt(ss / N + 1e-6);
                    for (int j = 0; j < N; j++) worst = fmax(worst, fabs(y[j] - x[j] * inv * W[j]) / (fabs(x[j] * inv * W[j]) + 1e-6));
                }
            }
            double cbw = 2.0 * (double)elems * 4 / tm;
            printf("| %s | %d | %d | %d | %.2f | %s (max rel %.2g) | %.2f | **%.2f** |\n", names[which0], N, M, threads, bw * 1e-9,
                   worst < 1e-4 ? "ok" : "MISMATCH", worst, cbw * 1e-9, tm / t);
            fflush(stdout);
            tile_module_free(mod);
        }
    }
    free(xbase);
    free(ybase);
    free(W);
}

static void compile_latency(const char *root) {
    char dir[] = "/tmp/tile-e2e-cacheXXXXXX";
    if (!mkdtemp(dir)) die("mkdtemp", "failed");
    setenv("TILE_CACHE_DIR", dir, 1);
    const char *defs[] = {"M=64", "N=64", "K=64"};
    float A[64 * 64], B[64 * 64];
    for (int i = 0; i < 64 * 64; i++) { A[i] = frand(); B[i] = frand(); }
    tile_tensor p[2] = {{A, TILE_DT_F32, 2, {64, 64}}, {B, TILE_DT_F32, 2, {64, 64}}};
    double t[2];
    for (int pass = 0; pass < 2; pass++) {
        tile_tensor r = {0};
        double a = now();
        tile_module *m;
        tile_kernel *k = compile(root, "examples/seed_matmul_000.tl", defs, 3, &m);
        char *err = NULL;
        if (tile_run(k, "cpu", p, 2, &r, 1, NULL, &err) != TILE_OK) die("tile_run", err);
        t[pass] = now() - a;
        tile_tensor_free(&r);
        tile_module_free(m);
    }
    printf("\ncompile latency (seed matmul 64^3, from tile_compile_file to the first result, in process):\n");
    printf("- cold (empty cache: parse, sema, TileOpt, C generation, $CC, dlopen): %.3f s (goal < 1.5 s)\n", t[0]);
    printf("- cache hit (parse, sema, TileOpt, C generation, hash, dlopen of the cached object): %.2f ms (goal < 5 ms)\n", t[1] * 1e3);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd)) {}
}

static int parse_list(const char *s, int *out, int max) {
    int n = 0;
    while (*s && n < max) {
        out[n++] = atoi(s);
        const char *c = strchr(s, ',');
        if (!c) break;
        s = c + 1;
    }
    return n;
}

int main(int argc, char **argv) {
    int gemm = 1, latency = 1, threads = 0, reps = 5, sizes[8] = {1024, 2048, 4096}, nsizes = 3, rows[8] = {4096, 16384, 65536}, nrows = 3;
    const char *root = ".";
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(argv[i], "--threads")) threads = atoi(v), i++;
        else if (!strcmp(argv[i], "--reps")) reps = atoi(v), i++;
        else if (!strcmp(argv[i], "--sizes")) nsizes = parse_list(v, sizes, 8), i++;
        else if (!strcmp(argv[i], "--rows")) nrows = parse_list(v, rows, 8), i++;
        else if (!strcmp(argv[i], "--root")) root = v, i++;
        else if (!strcmp(argv[i], "--no-rows")) nrows = 0;
        else if (!strcmp(argv[i], "--no-gemm")) gemm = 0;
        else if (!strcmp(argv[i], "--no-latency")) latency = 0;
        else if (!strcmp(argv[i], "--pipe-ab")) pipe_ab = 1;
        else if (!strcmp(argv[i], "--cpu-time")) clk = CLOCK_PROCESS_CPUTIME_ID;
        else if (!strcmp(argv[i], "--offset")) {
            if (sscanf(v, "%d,%d", &off_x, &off_y) != 2 || off_x < 0 || off_y < 0 || off_x > 4092 || off_y > 4092 || off_x % 4 ||
                off_y % 4) {
                fprintf(stderr, "e2e: --offset expects X,Y: byte offsets 0..4092, multiples of 4 (got '%s')\n", v);
                return 1;
            }
            i++;
        }
        else { fprintf(stderr, "e2e: unknown option %s\n", argv[i]); return 1; }
    }
    if (reps < 1) reps = 1;
    if (threads > 0) {
        char b[16];
        snprintf(b, sizeof b, "%d", threads);
        setenv("TILE_NUM_THREADS", b, 1); /* read once, when the thread pool starts */
#ifndef E2E_NO_BLAS
        openblas_set_num_threads(threads);
#endif
    } else threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (latency) compile_latency(root);
    unsetenv("TILE_CACHE_DIR");
#ifdef E2E_NO_BLAS
    if (gemm) fprintf(stderr, "e2e: built without OpenBLAS (E2E_NO_BLAS): no GEMM rows\n"), gemm = 0;
    (void)sizes, (void)nsizes;
#endif
    if (gemm) {
        printf("\n| problem | threads | Tile GFLOP/s, seed matmul (plain form) | Tile GFLOP/s, tile-form GEMM | OpenBLAS GFLOP/s | OpenBLAS time / Tile time (seed / tile form) | check |\n|---|---|---|---|---|---|---|\n");
#ifndef E2E_NO_BLAS
        gemm_rows(root, sizes, nsizes, reps, threads);
#endif
    }
    if (nrows) rows_bench(root, rows, nrows, reps, threads);
    return 0;
}
