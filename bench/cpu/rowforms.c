/* rowforms.c — the two forms of the streaming write loop of c.c, side by side, in the row
 * kernels rowfuse makes (softmax: chunk max + exp-and-sum through the prelude's row helpers,
 * then Y = E * g; RMSNorm: sum of squares, then Y = x * r * W), one thread, 128 MiB of f32,
 * each run alternating with a memcpy of X into Y (ratio of the medians, process CPU time):
 *   buf256  e for 256 elements into an L1 buffer, copied out with tile_copy_f32_nt (c.c
 *           until session 4)
 *   vector  e one vector at a time, kept in a register, tile_stream_f32v (c.c since)
 * and with or without the next-row prefetch (prefetcht1 of the next row of X, one line per
 * 16 elements) in the write loop. Built by rowforms.sh against the prelude `tile emit`
 * prints.   rowforms softmax|rmsnorm N buf256|vector PREFETCH(0|1) */
#include "rowforms_prelude.h"
#include <stdio.h>
#include <time.h>
#define CH 2048
static double now(void) { struct timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t); return (double)t.tv_sec + (double)t.tv_nsec * 1e-9; }
static int VEC, PF;
/* Y[0..n) = f(j) for the row r of M, in the chosen form; X's next row prefetched if PF */
#define WRITE_LOOP(Y, lo, hi, X, r, M, N, EXPR)                                                      \
    do {                                                                                          \
        if (VEC) {                                                                                \
            for (int64_t c_ = (lo), e_ = (hi); c_ < e_; c_ += TILE_NT_W) {                                        \
                float tb[TILE_NT_W] __attribute__((aligned(64)));                                 \
                _Pragma("omp simd") for (int64_t j = c_; j < c_ + TILE_NT_W; j++) tb[j - c_] = EXPR; \
                if (PF && r + 1 < M) __builtin_prefetch(X + (r + 1) * N + c_, 0, 2);               \
                tile_stream_f32v(Y + c_, tb);                                                      \
            }                                                                                     \
        } else {                                                                                  \
            for (int64_t c_ = (lo), e_ = (hi); c_ < e_; c_ += 256) {                                              \
                float tb[256] __attribute__((aligned(64)));                                       \
                TILE_IVDEP for (int64_t j = c_; j < c_ + 256; j++) tb[j - c_] = EXPR;                \
                if (PF && r + 1 < M)                                                              \
                    for (int64_t k = 0; k < 256; k += 16) __builtin_prefetch(X + (r + 1) * N + c_ + k, 0, 2); \
                tile_copy_f32_nt(Y + c_, tb, 256);                                                 \
            }                                                                                     \
        }                                                                                         \
        tile_sfence();                                                                            \
    } while (0)
static void softmax_rows(const float *X, float *Y, float *E, int64_t M, int64_t N) {
    float F[64];
    for (int64_t r = 0; r < M; r++) {
        const float *x = X + r * N;
        float m = -__builtin_inff(), s = 0;
        int64_t nc = N / CH;
        for (int64_t c = 0; c < nc; c++) {
            float cm = tile_row_maxf(x + c * CH, CH, m);
            s = cm == m ? s : s * tile_expf(m - cm);
            m = cm;
            F[c] = m;
            s = tile_row_expsumf(x + c * CH, E + c * CH, CH, m == -__builtin_inff() ? 0.0f : m, 0.0f) + s;
        }
        float ri = 1.0f / s, *y = Y + r * N;
        for (int64_t c = 0; c < nc; c++) {
            float g = tile_expf(F[c] - m) * ri;
            WRITE_LOOP(y, c * CH, (c + 1) * CH, X, r, M, N, E[j] * g);
        }
    }
}
static void rms_rows(const float *X, const float *W, float *Y, int64_t M, int64_t N) {
    for (int64_t r = 0; r < M; r++) {
        const float *x = X + r * N;
        float a = 0, *y = Y + r * N;
        _Pragma("omp simd reduction(+:a)") for (int64_t j = 0; j < N; j++) a = a + x[j] * x[j];
        float sc = (float)(1.0 / sqrt((double)(a / (float)N + 1e-6f)));
        WRITE_LOOP(y, 0, N, X, r, M, N, x[j] * sc * W[j]);
    }
}
static int cmpd(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }
int main(int argc, char **argv) {
    if (argc != 5) { fprintf(stderr, "usage: rowforms softmax|rmsnorm N buf256|vector 0|1\n"); return 2; }
    size_t el = (size_t)1 << 25;
    int64_t N = atoi(argv[2]);
    int sm = !strcmp(argv[1], "softmax");
    VEC = !strcmp(argv[3], "vector");
    PF = atoi(argv[4]);
    if (N < CH || N > 65536 || N % CH) { fprintf(stderr, "rowforms: N must be a multiple of %d up to 65536\n", CH); return 2; }
    float *X = aligned_alloc(64, el * 4), *Y = aligned_alloc(64, el * 4), *E = aligned_alloc(64, 65536 * 4), *W = aligned_alloc(64, 65536 * 4);
    for (size_t i = 0; i < el; i++) X[i] = (float)((i * 2654435761u) % 10000) / 2500.0f;
    for (int i = 0; i < 65536; i++) W[i] = 0.5f;
    memset(Y, 0, el * 4);
    double t[9], tm[9];
    for (int rep = 0; rep < 9; rep++) {
        double a = now();
        memcpy(Y, X, el * 4);
        tm[rep] = now() - a;
        a = now();
        if (sm) softmax_rows(X, Y, E, (int64_t)(el / (size_t)N), N);
        else rms_rows(X, W, Y, (int64_t)(el / (size_t)N), N);
        t[rep] = now() - a;
    }
    qsort(t, 9, sizeof t[0], cmpd);
    qsort(tm, 9, sizeof tm[0], cmpd);
    printf("| %s | %lld | %s | %s | %.2f | %.2f | **%.2f** |   (check %g)\n", argv[1], (long long)N, argv[3], PF ? "yes" : "no", 8.0 * (double)el / t[4] * 1e-9,
           8.0 * (double)el / tm[4] * 1e-9, tm[4] / t[4], (double)Y[12345]);
    return 0;
}
