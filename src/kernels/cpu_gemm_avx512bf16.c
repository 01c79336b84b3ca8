/* cpu_gemm_avx512bf16.c — bf16 x bf16 -> f32 micro-kernel 12 x 32 with vdpbf16ps (AVX512-BF16).
 * Compiled with -mavx512bf16 (CMakeLists.txt); used only when cpuid reports avx512_bf16.
 *
 * Panels hold k PAIRS: a 32-bit word = two bf16 of consecutive k (the lower k in the low
 * half), A: a[kp*12 + i], B: b[kp*32 + j]. Per pair: two vector loads of B (16 columns x 2 k
 * each), 12 broadcasts of A words, 24 vdpbf16ps = 2 x the FMAs of the f32 kernel.
 * vdpbf16ps flushes bf16 subnormal inputs and f32 subnormal results to zero (DAZ/FTZ)
 * and rounds to nearest even after each of its two products.
 * The development CPU lacks AVX512-BF16: CI tests the packing and loop nest through the
 * portable emulation (TILE_GEMM_BF16=emulate); this kernel itself passes tests/kernels on the
 * GPU machine's Xeon host. There it runs at 0.48-0.65x the f32 kernel, which is its ceiling:
 * vdpbf16ps zmm issues at a quarter of the FMA rate on that CPU (bench/cpu/bf16_uarch.c,
 * bench/results/cpu-bf16-2026-11-30-s4.md), i.e. half the flops; AMX is the fast bf16 path. */
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include <stdint.h>

#include "kernels/cpu_gemm_int.h"

#define MR 12
#define NR 32

#define ACC_DECL(i) __m512 c##i##a = _mm512_setzero_ps(), c##i##b = _mm512_setzero_ps();
#define ACC_DP(i)                                                         \
    {                                                                     \
        __m512bh ai = (__m512bh)_mm512_set1_epi32((int)a[i]);             \
        c##i##a = _mm512_dpbf16_ps(c##i##a, ai, b0);                      \
        c##i##b = _mm512_dpbf16_ps(c##i##b, ai, b1);                      \
    }
#define ACC_STORE(i)                                                      \
    {                                                                     \
        float *ci = c + (i) * ldc;                                        \
        if (beta) {                                                       \
            c##i##a = _mm512_add_ps(c##i##a, _mm512_loadu_ps(ci));        \
            c##i##b = _mm512_add_ps(c##i##b, _mm512_loadu_ps(ci + 16));   \
        }                                                                 \
        _mm512_storeu_ps(ci, c##i##a);                                    \
        _mm512_storeu_ps(ci + 16, c##i##b);                               \
    }
#define ALL12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

static void ukr_bf16_avx512(int64_t kp, const float *af, const float *bf, float *c, int64_t ldc, int beta) {
    const uint32_t *a = (const uint32_t *)(const void *)af, *b = (const uint32_t *)(const void *)bf;
    ALL12(ACC_DECL)
    for (int64_t k = 0; k < kp; k++) {
        const __m512bh b0 = (__m512bh)_mm512_load_si512((const void *)b);
        const __m512bh b1 = (__m512bh)_mm512_load_si512((const void *)(b + 16));
        _mm_prefetch((const char *)(b + 8 * NR), _MM_HINT_T0);
        ALL12(ACC_DP)
        a += MR;
        b += NR;
    }
    ALL12(ACC_STORE)
}

const tk_bf16_kernel tk_bf16_avx512 = {
    .name = "avx512_bf16", .mr = MR, .nr = NR, .kq = 1, .a_layout = TK_BF16_PAIRS, .ukr = ukr_bf16_avx512};
#endif
