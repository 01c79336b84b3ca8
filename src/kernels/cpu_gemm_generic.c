/* cpu_gemm_generic.c — portable C micro-kernel (4 x 16) and helpers: the fallback on any CPU
 * and the reference the SIMD paths are tested against. */
#include <math.h>
#include <stdint.h>

#include "kernels/cpu_gemm_int.h"

#include "kernels/cpu_gemm_pack.inc"

#define G_MR 4
#define G_NR 16

static void ukr_generic(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int beta) {
    float acc[G_MR][G_NR];
    for (int i = 0; i < G_MR; i++)
        for (int j = 0; j < G_NR; j++) acc[i][j] = 0.0f;
    for (int64_t k = 0; k < kc; k++) {
        const float *ak = a + k * G_MR, *bk = b + k * G_NR;
        for (int i = 0; i < G_MR; i++) {
            const float ai = ak[i];
            for (int j = 0; j < G_NR; j++) acc[i][j] += ai * bk[j];
        }
    }
    for (int i = 0; i < G_MR; i++) {
        float *ci = c + i * ldc;
        if (beta)
            for (int j = 0; j < G_NR; j++) ci[j] += acc[i][j];
        else
            for (int j = 0; j < G_NR; j++) ci[j] = acc[i][j];
    }
}

static float sum_generic(const float *x, int64_t n) {
    float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) s[j] += x[i + j];
    float t = 0.0f;
    for (; i < n; i++) t += x[i];
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])) + t;
}

static float max_generic(const float *x, int64_t n) {
    float m = -INFINITY;
    int nan = 0;
    for (int64_t i = 0; i < n; i++) {
        m = x[i] > m ? x[i] : m;
        nan |= x[i] != x[i];
    }
    return nan ? NAN : m;
}

const tk_isa tk_isa_generic = {
    .name = "generic", .mr = G_MR, .nr = G_NR,
    .ukr = ukr_generic, .pack = tkp_pack, .cvt_to_f32 = tkp_cvt_run,
    .sum = sum_generic, .max = max_generic,
};
