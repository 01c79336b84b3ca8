/* cpu_gemm_avx2.c — AVX2 + FMA + F16C micro-kernel 6 x 16 and helpers.
 * Compiled with -mavx2 -mfma -mf16c (CMakeLists.txt); only called after cpuid/xgetbv said
 * the CPU and OS support them.
 *
 * 12 ymm accumulators hold a 6 x 16 tile of C; per k: 2 vector loads of the packed B panel,
 * 6 broadcasts of the packed A panel, 12 FMAs. */
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "kernels/cpu_gemm_int.h"

static int64_t cvt_f16_run_256(float *dst, const uint16_t *s, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(s + i))));
    return i;
}
#define TK_CVT_F16_RUN(dst, s, n) cvt_f16_run_256((dst), (s), (n))

#include "kernels/cpu_gemm_pack.inc"

#define MR 6
#define NR 16

#define ACC_DECL(i) __m256 c##i##a = _mm256_setzero_ps(), c##i##b = _mm256_setzero_ps();
#define ACC_FMA(i)                                          \
    {                                                       \
        __m256 ai = _mm256_broadcast_ss(a + (i));           \
        c##i##a = _mm256_fmadd_ps(ai, b0, c##i##a);         \
        c##i##b = _mm256_fmadd_ps(ai, b1, c##i##b);         \
    }
#define ACC_STORE(i)                                                                    \
    {                                                                                   \
        float *ci = c + (i) * ldc;                                                      \
        if (beta) {                                                                     \
            c##i##a = _mm256_add_ps(c##i##a, _mm256_loadu_ps(ci));                      \
            c##i##b = _mm256_add_ps(c##i##b, _mm256_loadu_ps(ci + 8));                  \
        }                                                                               \
        _mm256_storeu_ps(ci, c##i##a);                                                  \
        _mm256_storeu_ps(ci + 8, c##i##b);                                              \
    }
#define ALL6(X) X(0) X(1) X(2) X(3) X(4) X(5)

static void ukr_avx2(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int beta) {
    ALL6(ACC_DECL)
    for (int64_t k = 0; k < kc; k++) {
        const __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
        ALL6(ACC_FMA)
        a += MR;
        b += NR;
    }
    ALL6(ACC_STORE)
}

/* The no-pack kernel for small f32 problems (see cpu_gemm_avx512.c): one column panel of
 * n <= 16 columns, all m rows, 6 rows at a time; ragged n through maskload/maskstore. */
static inline __attribute__((always_inline)) void direct_block2(int64_t kc, const float *a, int64_t a_rs, int64_t a_cs,
                                                                const float *b, int64_t ldb, float *c, int64_t ldc,
                                                                int beta, int m, __m256i k0, __m256i k1, int full) {
    const float *a0 = a, *a1 = a + (m > 1 ? 1 : 0) * a_rs, *a2 = a + (m > 2 ? 2 : m - 1) * a_rs;
    const float *a3 = a + (m > 3 ? 3 : m - 1) * a_rs, *a4 = a + (m > 4 ? 4 : m - 1) * a_rs, *a5 = a + (m > 5 ? 5 : m - 1) * a_rs;
    ALL6(ACC_DECL)
    int64_t ko = 0;
    for (int64_t k = 0; k < kc; k++, ko += a_cs, b += ldb) {
        const __m256 b0 = full ? _mm256_loadu_ps(b) : _mm256_maskload_ps(b, k0);
        const __m256 b1 = full ? _mm256_loadu_ps(b + 8) : _mm256_maskload_ps(b + 8, k1);
#define DF(i)                                                \
        {                                                    \
            const __m256 ai = _mm256_broadcast_ss(a##i + ko); \
            c##i##a = _mm256_fmadd_ps(ai, b0, c##i##a);      \
            c##i##b = _mm256_fmadd_ps(ai, b1, c##i##b);      \
        }
        ALL6(DF)
#undef DF
    }
#define DS(i)                                                                                   \
    if (i < m) {                                                                                \
        float *ci = c + (i) * ldc;                                                              \
        if (full) {                                                                             \
            if (beta) {                                                                         \
                c##i##a = _mm256_add_ps(c##i##a, _mm256_loadu_ps(ci));                          \
                c##i##b = _mm256_add_ps(c##i##b, _mm256_loadu_ps(ci + 8));                      \
            }                                                                                   \
            _mm256_storeu_ps(ci, c##i##a);                                                      \
            _mm256_storeu_ps(ci + 8, c##i##b);                                                  \
        } else {                                                                                \
            if (beta) {                                                                         \
                c##i##a = _mm256_add_ps(c##i##a, _mm256_maskload_ps(ci, k0));                   \
                c##i##b = _mm256_add_ps(c##i##b, _mm256_maskload_ps(ci + 8, k1));               \
            }                                                                                   \
            _mm256_maskstore_ps(ci, k0, c##i##a);                                               \
            _mm256_maskstore_ps(ci + 8, k1, c##i##b);                                           \
        }                                                                                       \
    }
    ALL6(DS)
#undef DS
}

static void ukr_direct_avx2(int64_t kc, const float *a, int64_t a_rs, int64_t a_cs, const float *b, int64_t ldb, float *c,
                            int64_t ldc, int beta, int m, int n) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i k0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(n), lane);
    const __m256i k1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(n - 8), lane);
    const int full = n == 16;
    int i = 0;
    for (; i + 6 <= m; i += 6) {
        if (full) direct_block2(kc, a + i * a_rs, a_rs, a_cs, b, ldb, c + i * ldc, ldc, beta, 6, k0, k1, 1);
        else direct_block2(kc, a + i * a_rs, a_rs, a_cs, b, ldb, c + i * ldc, ldc, beta, 6, k0, k1, 0);
    }
    if (i < m) direct_block2(kc, a + i * a_rs, a_rs, a_cs, b, ldb, c + i * ldc, ldc, beta, m - i, k0, k1, full);
}

static float hsum256(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

static float sum_avx2(const float *x, int64_t n) {
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        s0 = _mm256_add_ps(s0, _mm256_loadu_ps(x + i));
        s1 = _mm256_add_ps(s1, _mm256_loadu_ps(x + i + 8));
        s2 = _mm256_add_ps(s2, _mm256_loadu_ps(x + i + 16));
        s3 = _mm256_add_ps(s3, _mm256_loadu_ps(x + i + 24));
    }
    for (; i + 8 <= n; i += 8) s0 = _mm256_add_ps(s0, _mm256_loadu_ps(x + i));
    float t = 0.0f;
    for (; i < n; i++) t += x[i];
    return hsum256(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3))) + t;
}

static float max_avx2(const float *x, int64_t n) {
    __m256 m0 = _mm256_set1_ps(-INFINITY), nanv = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        nanv = _mm256_or_ps(nanv, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
        m0 = _mm256_max_ps(m0, v);
    }
    int nan = _mm256_movemask_ps(nanv) != 0;
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(m0), _mm256_extractf128_ps(m0, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    float r = _mm_cvtss_f32(m);
    for (; i < n; i++) {
        r = x[i] > r ? x[i] : r;
        nan |= x[i] != x[i];
    }
    return nan ? NAN : r;
}

const tk_isa tk_isa_avx2 = {
    .name = "avx2", .mr = MR, .nr = NR,
    .ukr = ukr_avx2, .pack = tkp_pack, .cvt_to_f32 = tkp_cvt_run, .cvt_from_f32 = tkp_cvt_from_run,
    .direct_mr = 1 << 20, .direct_nr = 16, .ukr_direct = ukr_direct_avx2,
    .sum = sum_avx2, .max = max_avx2,
};
#endif
