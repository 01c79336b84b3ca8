/* rowpass.c — cycles per element of the three passes of rowfuse's softmax row kernel on one
 * row held in L1/L2 (no memory traffic): the chunk max, exp-and-sum (tile_expf, omp simd),
 * and the scaling write pass with streaming stores, written as c.c emits them (the max in
 * four streams as gfor_minmax does when ROWPASS_STREAMS=4). Built by rowpass.sh against
 * the prelude that `tile emit` prints, so two builds of Tile compare side by side (a prelude
 * with tile_row_maxf / tile_row_expsumf / tile_stream_f32v is measured through those, as c.c
 * emits the passes since session 4; STREAMS does not apply to it). Cycles
 * are wall time x the nominal clock (GHZ, default 2.8): the best of 2000 repetitions.
 * With a prelude that has tile_row_expsum_wrf (session 5; rowpass.sh passes ROWPASS_WRF=1)
 * two more columns: the fused loop of the pipelined softmax (this row's exp-and-sum and the
 * previous row's write in one loop, streaming to memory) and max + fused, the per-element
 * cost of a pipelined step. */
#include "rowpass_prelude.h"
#include <stdio.h>
#include <time.h>
#ifndef ROWPASS_WRF
#define ROWPASS_WRF 0
#endif
#if ROWPASS_WRF
static float E2[16384] __attribute__((aligned(64)));
#endif
#ifndef ROWPASS_STREAMS
#define ROWPASS_STREAMS 1
#endif
#define N 16384
#define CH 2048
static float X[N] __attribute__((aligned(64))), E[N] __attribute__((aligned(64))), Y[N] __attribute__((aligned(64)));
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return (double)t.tv_sec + (double)t.tv_nsec * 1e-9; }
#if defined(TILE_NT_W)
/* a prelude with the row helpers (c.c's grow_read) and vector-at-a-time streaming stores */
__attribute__((noinline)) static float maxpass(const float *x, int64_t lo, int64_t hi, float m) { return tile_row_maxf(x + lo, hi - lo, m); }
__attribute__((noinline)) static float exppass(const float *x, float *e, int64_t lo, int64_t hi, float sh) {
    return tile_row_expsumf(x + lo, e + lo, hi - lo, sh, 0.0f);
}
__attribute__((noinline)) static void wpass(const float *e, float *y, int64_t n, float g) {
    for (int64_t c = 0; c < n; c += TILE_NT_W) {
        float tb[TILE_NT_W] __attribute__((aligned(64)));
        _Pragma("omp simd")
        for (int64_t j = c; j < c + TILE_NT_W; j++) tb[j - c] = e[j] * g;
        tile_stream_f32v(y + c, tb);
    }
    tile_sfence();
}
#else
__attribute__((noinline)) static float maxpass(const float *x, int64_t lo, int64_t hi, float m) {
    float v = m;
#if ROWPASS_STREAMS == 4
    int64_t q = (hi - lo) / 4;
    float a1 = v, a2 = v, a3 = v;
    _Pragma("omp simd reduction(tile_fmax:v) reduction(tile_fmax:a1) reduction(tile_fmax:a2) reduction(tile_fmax:a3)")
    for (int64_t u = 0; u < q; u++) {
        v = tile_fmaxf(v, x[lo + u]);
        a1 = tile_fmaxf(a1, x[lo + q + u]);
        a2 = tile_fmaxf(a2, x[lo + 2 * q + u]);
        a3 = tile_fmaxf(a3, x[lo + 3 * q + u]);
    }
    v = tile_fmaxf(tile_fmaxf(v, a1), tile_fmaxf(a2, a3));
    for (int64_t j = lo + 4 * q; j < hi; j++) v = tile_fmaxf(v, x[j]);
#else
    _Pragma("omp simd reduction(tile_fmax:v)")
    for (int64_t j = lo; j < hi; j++) v = tile_fmaxf(v, x[j]);
#endif
    return v;
}
__attribute__((noinline)) static float exppass(const float *x, float *e, int64_t lo, int64_t hi, float sh) {
    float s = 0, t;
    _Pragma("omp simd reduction(+:s) private(t)")
    for (int64_t j = lo; j < hi; j++) { t = tile_expf(x[j] - sh); e[j] = t; s = s + t; }
    return s;
}
__attribute__((noinline)) static void wpass(const float *e, float *y, int64_t n, float g) {
    for (int64_t c = 0; c < n; c += 256) {
        float tb[256] __attribute__((aligned(64)));
        TILE_IVDEP
        for (int64_t j = c; j < c + 256; j++) tb[j - c] = e[j] * g;
        tile_copy_f32_nt(y + c, tb, 256);
    }
    tile_sfence();
}
#endif
int main(void) {
    const char *gs = getenv("GHZ");
    double ghz = gs ? atof(gs) : 2.8, tm = 1e9, te = 1e9, tw = 1e9, tf = 1e9, chk = 0;
    (void)tf;
    for (int i = 0; i < N; i++) X[i] = (float)((i * 2654435761u) % 10000) / 2500.0f;
    for (int r = 0; r < 2000; r++) {
        double t0 = now();
        float m = -INFINITY, s = 0;
        for (int64_t c = 0; c < N; c += CH) m = maxpass(X, c, c + CH, m);
        double a = now() - t0;
        if (a < tm) tm = a;
        t0 = now();
        for (int64_t c = 0; c < N; c += CH) s += exppass(X, E, c, c + CH, m);
        a = now() - t0;
        if (a < te) te = a;
        t0 = now();
        wpass(E, Y, N, 1.0f / s);
        a = now() - t0;
        if (a < tw) tw = a;
        chk += Y[5];
#if ROWPASS_WRF
        t0 = now();
        for (int64_t c = 0; c < N; c += CH) s += tile_row_expsum_wrf(X + c, E2 + c, CH, m, 0.0f, Y + c, E + c, 0.5f);
        a = now() - t0;
        if (a < tf) tf = a;
        chk += Y[7];
#endif
    }
#if ROWPASS_WRF
    printf("| %.3f | %.3f | %.3f | %.3f | %.3f | %.3f |   (check %.6g)\n", tm * ghz * 1e9 / N, te * ghz * 1e9 / N, tw * ghz * 1e9 / N,
           (tm + te + tw) * ghz * 1e9 / N, tf * ghz * 1e9 / N, (tm + tf) * ghz * 1e9 / N, chk);
#else
    printf("| %.3f | %.3f | %.3f | %.3f |   (check %.6g)\n", tm * ghz * 1e9 / N, te * ghz * 1e9 / N, tw * ghz * 1e9 / N,
           (tm + te + tw) * ghz * 1e9 / N, chk);
#endif
    return 0;
}
