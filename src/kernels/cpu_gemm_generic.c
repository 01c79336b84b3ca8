/* cpu_gemm_generic.c — portable C micro-kernel (4 x 16) and helpers: the fallback on any CPU
 * and the reference the SIMD paths are tested against. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The hardware's denormal rules, modelled exactly by both emulated kernels (so CI, without
 * AVX512-BF16 or AMX, sees what those CPUs compute): vdpbf16ps and tdpbf16ps ignore MXCSR,
 * treat subnormal inputs as zero (DAZ: the bf16 operands, and for tdpbf16ps the f32
 * accumulator it loads) and flush subnormal results to zero (FTZ) after each step. A
 * product of two bf16 is exact in f32 unless it under/overflows; each step is modelled as
 * one fused multiply-add rounded to nearest even, then flushed. The loop nest
 * (cpu_gemm.c, bf16_shift) keeps every GEMM away from these cases. */
static inline float daz_bf16(uint32_t bits16hi) { /* a bf16 placed in the high half of an f32 */
    return tkp_bits_f32((bits16hi & 0x7F800000u) ? bits16hi : (bits16hi & 0x80000000u));
}
static inline float ftz_f32(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7F800000u) == 0) u &= 0x80000000u;
    return tkp_bits_f32(u);
}

/* A portable model of the vdpbf16ps kernel (12 x 32 on k-pair panels), used to test the
 * bf16 packing and loop nest on CPUs without AVX512-BF16 (TILE_GEMM_BF16=emulate). Like the
 * instruction: per pair, acc += a_hi*b_hi, then acc += a_lo*b_lo, with DAZ/FTZ (above); C is
 * added at the end with an ordinary (IEEE) f32 add, as the real kernel does. */
static void ukr_bf16_emulated(int64_t kp, const float *af, const float *bf, float *c, int64_t ldc, int beta) {
    const uint32_t *a = (const uint32_t *)(const void *)af, *b = (const uint32_t *)(const void *)bf;
    float acc[12][32];
    for (int i = 0; i < 12; i++)
        for (int j = 0; j < 32; j++) acc[i][j] = 0.0f;
    for (int64_t k = 0; k < kp; k++, a += 12, b += 32)
        for (int i = 0; i < 12; i++) {
            const float alo = daz_bf16(a[i] << 16), ahi = daz_bf16(a[i] & 0xFFFF0000u);
            for (int j = 0; j < 32; j++) {
                const float blo = daz_bf16(b[j] << 16), bhi = daz_bf16(b[j] & 0xFFFF0000u);
                acc[i][j] = ftz_f32(fmaf(ahi, bhi, acc[i][j]));
                acc[i][j] = ftz_f32(fmaf(alo, blo, acc[i][j]));
            }
        }
    for (int i = 0; i < 12; i++) {
        float *ci = c + i * ldc;
        for (int j = 0; j < 32; j++) ci[j] = beta ? ci[j] + acc[i][j] : acc[i][j];
    }
}

const tk_bf16_kernel tk_bf16_emulated = {
    .name = "bf16_emulated", .mr = 12, .nr = 32, .kq = 1, .a_layout = TK_BF16_PAIRS, .ukr = ukr_bf16_emulated};

/* like the AMX kernel's tile configuration: set around each compute task; a kernel call
 * outside one is a loop-nest bug the emulated tests must catch */
static __thread int t_amx_emulated_task;
static void amx_emulated_begin(void) { t_amx_emulated_task = 1; }
static void amx_emulated_end(void) { t_amx_emulated_task = 0; }

/* A portable model of the AMX kernel (cpu_gemm_amx.c: C 32 x 32 as 2 x 2 tiles of 16 x 16
 * f32; A in 16-pair row chunks, word (i, q) at a[(q/16)*32*16 + i*16 + q%16]; B pairs
 * b[q*32 + j]; kp a multiple of 16), used to test the AMX packing and loop nest where there
 * is no AMX (TILE_GEMM_BF16=emulate_amx). Like tdpbf16ps: per pair, acc += a_lo*b_lo, then
 * acc += a_hi*b_hi, with DAZ/FTZ (above), the loaded C tile included. */
static void amx_emulated(int64_t kp, const uint32_t *a, const float *bf, float *c, int64_t ldc, int beta) {
    if (!t_amx_emulated_task) {
        fprintf(stderr, "tk_bf16_amx_emulated: kernel called outside a compute task (no task_begin): the real AMX "
                        "kernel would run without its tile configuration\n");
        abort();
    }
    const uint32_t *b = (const uint32_t *)(const void *)bf;
    float acc[32][32];
    for (int i = 0; i < 32; i++)
        for (int j = 0; j < 32; j++) acc[i][j] = beta ? ftz_f32(c[i * ldc + j]) : 0.0f; /* DAZ on the C tile */
    for (int64_t q = 0; q < kp; q++) {
        const uint32_t *aq = a + (q / 16) * 32 * 16 + q % 16, *bq = b + q * 32;
        for (int i = 0; i < 32; i++) {
            const uint32_t aw = aq[i * 16];
            const float alo = daz_bf16(aw << 16), ahi = daz_bf16(aw & 0xFFFF0000u);
            for (int j = 0; j < 32; j++) {
                const float blo = daz_bf16(bq[j] << 16), bhi = daz_bf16(bq[j] & 0xFFFF0000u);
                acc[i][j] = ftz_f32(fmaf(alo, blo, acc[i][j]));
                acc[i][j] = ftz_f32(fmaf(ahi, bhi, acc[i][j]));
            }
        }
    }
    for (int i = 0; i < 32; i++)
        for (int j = 0; j < 32; j++) c[i * ldc + j] = acc[i][j];
}
static void ukr_amx_emulated(int64_t kp, const float *af, const float *bf, float *c, int64_t ldc, int beta) {
    amx_emulated(kp, (const uint32_t *)(const void *)af, bf, c, ldc, beta);
}

const tk_bf16_kernel tk_bf16_amx_emulated = {
    .name = "amx_emulated", .mr = 32, .nr = 32, .kq = 16, .a_layout = TK_BF16_ROWS16, .ukr = ukr_amx_emulated,
    .task_begin = amx_emulated_begin, .task_end = amx_emulated_end};

const tk_isa tk_isa_generic = {
    .name = "generic", .mr = G_MR, .nr = G_NR,
    .ukr = ukr_generic, .pack = tkp_pack, .cvt_to_f32 = tkp_cvt_run, .cvt_from_f32 = tkp_cvt_from_run,
    .sum = sum_generic, .max = max_generic,
};
