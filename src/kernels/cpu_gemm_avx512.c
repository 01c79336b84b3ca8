/* cpu_gemm_avx512.c — AVX-512 (F/BW/VL/DQ + FMA) micro-kernel 12 x 32 and helpers.
 * Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mf16c (CMakeLists.txt);
 * only called after cpuid/xgetbv said the CPU and OS support them.
 *
 * The kernel keeps a 12 x 32 tile of C in 24 zmm accumulators; per k it loads two vectors
 * of the packed B panel (32 columns) and broadcasts 12 values of the packed A panel, i.e.
 * 24 FMAs for 2 vector loads + 12 broadcasts. */
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "kernels/cpu_gemm_int.h"

static int64_t cvt_f16_run_512(float *dst, const uint16_t *s, int64_t n) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(s + i))));
    return i;
}
#define TK_CVT_F16_RUN(dst, s, n) cvt_f16_run_512((dst), (s), (n))

#include "kernels/cpu_gemm_pack.inc"

#define MR 12
#define NR 32

#define ACC_DECL(i) __m512 c##i##a = _mm512_setzero_ps(), c##i##b = _mm512_setzero_ps();
#define ACC_FMA(i)                                          \
    {                                                       \
        __m512 ai = _mm512_set1_ps(a[i]);                   \
        c##i##a = _mm512_fmadd_ps(ai, b0, c##i##a);         \
        c##i##b = _mm512_fmadd_ps(ai, b1, c##i##b);         \
    }
#define ACC_STORE(i)                                                                    \
    {                                                                                   \
        float *ci = c + (i) * ldc;                                                      \
        if (beta) {                                                                     \
            c##i##a = _mm512_add_ps(c##i##a, _mm512_loadu_ps(ci));                      \
            c##i##b = _mm512_add_ps(c##i##b, _mm512_loadu_ps(ci + 16));                 \
        }                                                                               \
        _mm512_storeu_ps(ci, c##i##a);                                                  \
        _mm512_storeu_ps(ci + 16, c##i##b);                                             \
    }
#define ALL12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

static void ukr_avx512(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int beta) {
    ALL12(ACC_DECL)
    for (int i = 0; i < MR; i++) _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0), _mm_prefetch((const char *)(c + i * ldc + 16), _MM_HINT_T0);
    for (int64_t k = 0; k < kc; k++) {
        const __m512 b0 = _mm512_load_ps(b), b1 = _mm512_load_ps(b + 16);
        /* both cache lines of the B panel's row 8 steps ahead (it streams from L2) */
        _mm_prefetch((const char *)(b + 8 * NR), _MM_HINT_T0);
        _mm_prefetch((const char *)(b + 8 * NR + 16), _MM_HINT_T0);
        ALL12(ACC_FMA)
        a += MR;
        b += NR;
    }
    ALL12(ACC_STORE)
}

/* The no-pack kernel for small f32 problems: C[0..m)[0..n) (m <= 8 here, n <= 32, row stride
 * ldc, unit column stride) (+)= A[0..m)[0..kc) @ B[0..kc)[0..n), reading A with any strides
 * (broadcasts) and B rows (unit column stride, row stride ldb) straight from the operands.
 * Ragged n is masked (no access beyond column n); ragged m repeats the last row and drops it. */
static inline __attribute__((always_inline)) void direct_block(int64_t kc, const float *a, int64_t a_rs, int64_t a_cs,
                                                               const float *b, int64_t ldb, float *c, int64_t ldc,
                                                               int beta, int m, int n) {
    const float *ap[8];
    for (int i = 0; i < 8; i++) ap[i] = a + (i < m ? i : m - 1) * a_rs;
    const __mmask16 m0 = (__mmask16)(n >= 16 ? 0xFFFF : (1u << n) - 1);
    const __mmask16 m1 = (__mmask16)(n >= 32 ? 0xFFFF : n > 16 ? (1u << (n - 16)) - 1 : 0);
    __m512 c0a = _mm512_setzero_ps(), c0b = c0a, c1a = c0a, c1b = c0a, c2a = c0a, c2b = c0a, c3a = c0a, c3b = c0a;
    __m512 c4a = c0a, c4b = c0a, c5a = c0a, c5b = c0a, c6a = c0a, c6b = c0a, c7a = c0a, c7b = c0a;
    const float *a0 = ap[0], *a1 = ap[1], *a2 = ap[2], *a3 = ap[3], *a4 = ap[4], *a5 = ap[5], *a6 = ap[6], *a7 = ap[7];
#define DFMA(i)                                              \
    {                                                        \
        const __m512 ai = _mm512_set1_ps(a##i[ko]);          \
        c##i##a = _mm512_fmadd_ps(ai, b0, c##i##a);          \
        c##i##b = _mm512_fmadd_ps(ai, b1, c##i##b);          \
    }
    int64_t ko = 0;
    if (n == 32 && a_cs == 1) {
        /* the common case (row-major A): unrolled by 4 so each row pointer moves once per
         * 4 steps (the loads use displacements) */
        int64_t k = 0;
        const float *b1p = b + ldb, *b2p = b + 2 * ldb, *b3p = b + 3 * ldb;
#define DFMA4(i, u)                                          \
    {                                                        \
        const __m512 ai = _mm512_set1_ps(a##i[k + u]);       \
        c##i##a = _mm512_fmadd_ps(ai, b0, c##i##a);          \
        c##i##b = _mm512_fmadd_ps(ai, b1, c##i##b);          \
    }
#define STEP(u, bp)                                                                          \
    {                                                                                        \
        const __m512 b0 = _mm512_loadu_ps(bp), b1 = _mm512_loadu_ps((bp) + 16);              \
        DFMA4(0, u) DFMA4(1, u) DFMA4(2, u) DFMA4(3, u) DFMA4(4, u) DFMA4(5, u) DFMA4(6, u) DFMA4(7, u) \
    }
        for (; k + 4 <= kc; k += 4) {
            STEP(0, b) STEP(1, b1p) STEP(2, b2p) STEP(3, b3p)
            b += 4 * ldb;
            b1p += 4 * ldb;
            b2p += 4 * ldb;
            b3p += 4 * ldb;
        }
        for (; k < kc; k++, b += ldb) STEP(0, b)
#undef STEP
#undef DFMA4
    } else if (n == 32) {
        for (int64_t k = 0; k < kc; k++, ko += a_cs, b += ldb) {
            const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16);
            DFMA(0) DFMA(1) DFMA(2) DFMA(3) DFMA(4) DFMA(5) DFMA(6) DFMA(7)
        }
    } else if (n > 16) {
        for (int64_t k = 0; k < kc; k++, ko += a_cs, b += ldb) {
            const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_maskz_loadu_ps(m1, b + 16);
            DFMA(0) DFMA(1) DFMA(2) DFMA(3) DFMA(4) DFMA(5) DFMA(6) DFMA(7)
        }
    } else {
#define DFMA1(i) c##i##a = _mm512_fmadd_ps(_mm512_set1_ps(a##i[ko]), b0, c##i##a);
        for (int64_t k = 0; k < kc; k++, ko += a_cs, b += ldb) {
            const __m512 b0 = _mm512_maskz_loadu_ps(m0, b);
            DFMA1(0) DFMA1(1) DFMA1(2) DFMA1(3) DFMA1(4) DFMA1(5) DFMA1(6) DFMA1(7)
        }
#undef DFMA1
    }
#undef DFMA
#define DSTORE(i)                                                                       \
    if (i < m) {                                                                        \
        float *ci = c + (i) * ldc;                                                      \
        if (beta) {                                                                     \
            c##i##a = _mm512_add_ps(c##i##a, _mm512_maskz_loadu_ps(m0, ci));            \
            c##i##b = _mm512_add_ps(c##i##b, _mm512_maskz_loadu_ps(m1, ci + 16));       \
        }                                                                               \
        _mm512_mask_storeu_ps(ci, m0, c##i##a);                                         \
        _mm512_mask_storeu_ps(ci + 16, m1, c##i##b);                                    \
    }
    DSTORE(0) DSTORE(1) DSTORE(2) DSTORE(3) DSTORE(4) DSTORE(5) DSTORE(6) DSTORE(7)
#undef DSTORE
}

/* one column panel (n <= 32 columns) of C, all m rows, 8 rows at a time */
static void ukr_direct_avx512(int64_t kc, const float *a, int64_t a_rs, int64_t a_cs, const float *b, int64_t ldb,
                              float *c, int64_t ldc, int beta, int m, int n) {
    int i = 0;
    for (; i + 8 <= m; i += 8) direct_block(kc, a + i * a_rs, a_rs, a_cs, b, ldb, c + i * ldc, ldc, beta, 8, n);
    if (i < m) direct_block(kc, a + i * a_rs, a_rs, a_cs, b, ldb, c + i * ldc, ldc, beta, m - i, n);
}

static float sum_avx512(const float *x, int64_t n) {
    __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps(), s2 = _mm512_setzero_ps(), s3 = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        s0 = _mm512_add_ps(s0, _mm512_loadu_ps(x + i));
        s1 = _mm512_add_ps(s1, _mm512_loadu_ps(x + i + 16));
        s2 = _mm512_add_ps(s2, _mm512_loadu_ps(x + i + 32));
        s3 = _mm512_add_ps(s3, _mm512_loadu_ps(x + i + 48));
    }
    for (; i + 16 <= n; i += 16) s0 = _mm512_add_ps(s0, _mm512_loadu_ps(x + i));
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        s1 = _mm512_add_ps(s1, _mm512_maskz_loadu_ps(m, x + i));
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(s0, s1), _mm512_add_ps(s2, s3)));
}

static float max_avx512(const float *x, int64_t n) {
    __m512 m0 = _mm512_set1_ps(-INFINITY), m1 = m0;
    __mmask16 nan = 0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m512 v0 = _mm512_loadu_ps(x + i), v1 = _mm512_loadu_ps(x + i + 16);
        nan |= _mm512_cmp_ps_mask(v0, v1, _CMP_UNORD_Q);
        m0 = _mm512_max_ps(m0, v0);
        m1 = _mm512_max_ps(m1, v1);
    }
    for (; i + 16 <= n; i += 16) {
        __m512 v = _mm512_loadu_ps(x + i);
        nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
        m0 = _mm512_max_ps(m0, v);
    }
    if (i < n) {
        __mmask16 k = (__mmask16)((1u << (n - i)) - 1);
        __m512 v = _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), k, x + i);
        nan |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
        m1 = _mm512_max_ps(m1, v);
    }
    if (nan) return NAN;
    return _mm512_reduce_max_ps(_mm512_max_ps(m0, m1));
}

/* ---------- bf16 k-pair packing (layouts in cpu_gemm_int.h), AVX-512F/BW/VL only ---------- */

static inline __mmask16 mask16(int64_t n) { return n >= 16 ? (__mmask16)0xFFFF : n <= 0 ? 0 : (__mmask16)((1u << n) - 1); }
static inline __mmask32 mask32(int64_t n) { return n >= 32 ? (__mmask32)0xFFFFFFFFu : n <= 0 ? 0 : (__mmask32)((1u << n) - 1); }

/* 16 words: lo[c] | hi[c] << 16 for the lanes in m (zero elsewhere; hi NULL: zero high halves) */
static inline __m512i pair16(const uint16_t *lo, const uint16_t *hi, __mmask16 m) {
    __m512i l = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, lo));
    if (!hi) return l;
    __m512i h = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, hi));
    return _mm512_or_si512(l, _mm512_slli_epi32(h, 16));
}


/* the range of the 32 bf16 in v (bits & 0x7FFF) into the running lanes: n = min(|x| - 1)
 * (zero wraps to 0xFFFF), x = max over the finite |x| (tk_bf16_range_avx512) */
static inline void range32(__m512i v, __m512i *n, __m512i *x) {
    const __m512i m = _mm512_and_si512(v, _mm512_set1_epi16(0x7FFF));
    *n = _mm512_min_epu16(*n, _mm512_sub_epi16(m, _mm512_set1_epi16(1)));
    *x = _mm512_mask_max_epu16(*x, _mm512_cmplt_epu16_mask(m, _mm512_set1_epi16(0x7F80)), *x, m);
}
static void range_store(__m512i n, __m512i x, uint32_t *rng) {
    uint16_t ln[32], lx[32];
    _mm512_storeu_si512((void *)ln, n);
    _mm512_storeu_si512((void *)lx, x);
    for (int l = 0; l < 32; l++) {
        if ((uint32_t)ln[l] + 1 < rng[0]) rng[0] = (uint32_t)ln[l] + 1;
        if (lx[l] > rng[1]) rng[1] = lx[l];
    }
}

/* one pair row of n whole panels (R a multiple of 16) from two source rows: the B packer's
 * steady state, its range taken only when with_rng (a constant where it is inlined) */
static inline __attribute__((always_inline)) void pairs_full(const uint16_t *lo, const uint16_t *hi, uint32_t *dq, int64_t n,
                                                              int R, int64_t pstride, int with_rng, __m512i *rn, __m512i *rx) {
    for (int64_t p = 0; p < n; p++, lo += R, hi += R, dq += pstride)
        for (int c = 0; c < R; c += 16) {
            const __m512i v = _mm512_or_si512(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(lo + c))),
                                              _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(hi + c))), 16));
            _mm512_storeu_si512((void *)(dq + c), v);
            if (with_rng) range32(v, rn, rx);
        }
}

/* r[j] = column j of the 16 x 16 dwords r[0..15] */
static inline void transpose16(__m512i r[16]) {
    __m512i a[16], b[16], c[16];
    for (int i = 0; i < 8; i++) {
        a[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        a[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) {
        b[4 * i + 0] = _mm512_unpacklo_epi64(a[4 * i], a[4 * i + 2]);
        b[4 * i + 1] = _mm512_unpackhi_epi64(a[4 * i], a[4 * i + 2]);
        b[4 * i + 2] = _mm512_unpacklo_epi64(a[4 * i + 1], a[4 * i + 3]);
        b[4 * i + 3] = _mm512_unpackhi_epi64(a[4 * i + 1], a[4 * i + 3]);
    }
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 4; k++) {
            c[8 * i + k] = _mm512_shuffle_i32x4(b[8 * i + k], b[8 * i + 4 + k], 0x88);
            c[8 * i + 4 + k] = _mm512_shuffle_i32x4(b[8 * i + k], b[8 * i + 4 + k], 0xDD);
        }
    for (int k = 0; k < 8; k++) {
        r[k] = _mm512_shuffle_i32x4(c[k], c[8 + k], 0x88);
        r[8 + k] = _mm512_shuffle_i32x4(c[k], c[8 + k], 0xDD);
    }
}

/* The vdpbf16ps A panel of 12 whole rows of a row-major A, pair rows q in whole blocks of 16
 * below kfull: 16 pairs of each of the 12 rows (one 64-byte load per row), transposed as
 * 16 x 16 dwords (4 zero rows), and the 16 pair rows of 12 words written as 12 full vectors
 * (each group of 4 transposed columns fills 3). Where the word loop moved one 32-bit word per
 * load and store (184 us per 2 MiB in cache on one Zen 4 core, against ~60 for the other
 * packers). Returns the first pair row it did not write. */
static int64_t pairs12_rows(const uint16_t *base, int64_t sp, uint32_t *d, int64_t kfull) {
    const __m512i ia = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 16, 17, 18, 19);
    const __m512i ib = _mm512_setr_epi32(4, 5, 6, 7, 8, 9, 10, 11, 16, 17, 18, 19, 20, 21, 22, 23);
    const __m512i ic = _mm512_setr_epi32(8, 9, 10, 11, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27);
    int64_t q = 0;
    for (; q + 16 <= kfull; q += 16) {
        __m512i r[16];
        for (int i = 0; i < 12; i++) r[i] = _mm512_loadu_si512((const void *)(base + i * sp + 2 * q));
        for (int i = 12; i < 16; i++) r[i] = _mm512_setzero_si512();
        transpose16(r);
        uint32_t *o = d + q * 12;
        for (int g = 0; g < 4; g++, o += 48) {
            _mm512_storeu_si512((void *)o, _mm512_permutex2var_epi32(r[4 * g], ia, r[4 * g + 1]));
            _mm512_storeu_si512((void *)(o + 16), _mm512_permutex2var_epi32(r[4 * g + 1], ib, r[4 * g + 2]));
            _mm512_storeu_si512((void *)(o + 32), _mm512_permutex2var_epi32(r[4 * g + 2], ic, r[4 * g + 3]));
        }
    }
    return q;
}

void tk_pack_bf16_avx512(const tk_src *s, int64_t p0, int64_t plen, int64_t k0, int64_t klen, int R, int kq,
                         int layout, uint32_t *dst, uint32_t *rng) {
    const uint16_t *src = (const uint16_t *)s->p;
    const int64_t sp = s->sp, sk = s->sk, kp = (klen + 1) / 2, kpad = (kp + kq - 1) / kq * kq;
    __m512i rn = _mm512_set1_epi16(-1), rx = _mm512_setzero_si512(); /* the range, when rng */
    if (layout == TK_BF16_PAIRS && sp == 1) {
        /* panel elements contiguous (B row-major): interleave two source rows per pair row.
         * Pair row by pair row across all the panels, so the source is read along its rows
         * (two streams the hardware prefetchers follow) rather than down one panel's 64-byte
         * column strip, which touches two new lines (pages, for wide B) per pair row. Whole
         * panels of two rows go through pairs_full (unmasked loads and stores, no branch per
         * vector: Zen 4's masked 512-bit stores are slow even with every lane set): 2 MiB in
         * 62-70 instead of 79-118 us on one Zen 4 core with the data in cache, 34-36 instead of
         * 61-62 on two (bench/cpu/bf16_pack.c;
         * inside a GEMM, where the source comes from memory, the difference is within the
         * noise of the 2-core VM). Masks only for a ragged panel, a pad pair row, an odd K */
        const int whole = R % 16 == 0; /* NR 32 */
        const int64_t nfull = whole ? plen / R : 0;
        for (int64_t q = 0; q < kpad; q++) {
            const uint16_t *lo = q < kp ? src + (k0 + 2 * q) * sk + p0 : NULL;
            const uint16_t *hi = lo && 2 * q + 1 < klen ? lo + sk : NULL;
            int64_t r0 = 0;
            if (hi && nfull) {
                if (rng) pairs_full(lo, hi, dst + q * R, nfull, R, kpad * R, 1, &rn, &rx);
                else pairs_full(lo, hi, dst + q * R, nfull, R, kpad * R, 0, &rn, &rx);
                r0 = nfull * R;
            }
            for (; r0 < plen; r0 += R) {
                const int64_t rl = plen - r0 < R ? plen - r0 : R;
                uint32_t *dq = dst + r0 * kpad + q * R;
                for (int c = 0; c < R; c += 16) {
                    const __m512i v = lo ? pair16(lo + r0 + c, hi ? hi + r0 + c : NULL, mask16(rl - c)) : _mm512_setzero_si512();
                    if (c + 16 <= R) _mm512_storeu_si512((void *)(dq + c), v);
                    else _mm512_mask_storeu_epi32(dq + c, mask16(R - c), v);
                    if (rng) range32(v, &rn, &rx);
                }
            }
        }
        if (rng) range_store(rn, rx, rng);
        return;
    }
    if (layout == TK_BF16_ROWS16 && sk == 1) {
        /* k contiguous (A row-major): a 16-pair row chunk is 32 consecutive bf16 of a row */
        for (int64_t r0 = 0; r0 < plen; r0 += R) {
            const int64_t rl = plen - r0 < R ? plen - r0 : R;
            uint32_t *d = dst + r0 * kpad;
            for (int r = 0; r < R; r++) {
                const uint16_t *row = src + (p0 + r0 + r) * sp + k0;
                for (int64_t ch = 0; ch < kpad / 16; ch++) {
                    const __m512i v = r < rl ? _mm512_maskz_loadu_epi16(mask32(klen - 32 * ch), row + 32 * ch)
                                             : _mm512_setzero_si512();
                    _mm512_storeu_si512((void *)(d + ch * R * 16 + r * 16), v);
                    if (rng) range32(v, &rn, &rx);
                }
            }
        }
        if (rng) range_store(rn, rx, rng);
        return;
    }
    if (layout == TK_BF16_PAIRS && sk == 1) {
        /* k contiguous into pair rows (vdpbf16ps A, row-major): whole 32-bit words; whole
         * 12-row panels 16 pair rows at a time through a transpose (pairs12_rows) */
        const int64_t kfull = klen / 2;
        for (int64_t r0 = 0; r0 < plen; r0 += R) {
            const int rl = (int)(plen - r0 < R ? plen - r0 : R);
            uint32_t *d = dst + r0 * kpad;
            const uint16_t *base = src + (p0 + r0) * sp + k0;
            for (int64_t q = R == 12 && rl == 12 ? pairs12_rows(base, sp, d, kfull) : 0; q < kpad; q++) {
                uint32_t *dq = d + q * R;
                int r = 0;
                if (q < kfull)
                    for (; r < rl; r++) memcpy(&dq[r], base + r * sp + 2 * q, 4);
                else if (q < kp)
                    for (; r < rl; r++) dq[r] = base[r * sp + 2 * q];
                for (; r < R; r++) dq[r] = 0;
            }
        }
        if (rng) tk_bf16_range_avx512((const uint16_t *)(const void *)dst, 2 * ((plen + R - 1) / R * R) * kpad, &rng[0], &rng[1]);
        return;
    }
    tk_pack_bf16_generic(s, p0, plen, k0, klen, R, kq, layout, dst, rng);
}

void tk_bf16_range_avx512(const uint16_t *h, int64_t n, uint32_t *mn, uint32_t *mx) {
    /* min of (|x| - 1) as u16 (zero wraps to 0xFFFF, so it never wins), max of the finite |x| */
    const __m512i abs = _mm512_set1_epi16(0x7FFF), one = _mm512_set1_epi16(1), inf = _mm512_set1_epi16(0x7F80);
    __m512i n0 = _mm512_set1_epi16(-1), n1 = n0, x0 = _mm512_setzero_si512(), x1 = x0;
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        const __m512i m0 = _mm512_and_si512(_mm512_loadu_si512((const void *)(h + i)), abs);
        const __m512i m1 = _mm512_and_si512(_mm512_loadu_si512((const void *)(h + i + 32)), abs);
        n0 = _mm512_min_epu16(n0, _mm512_sub_epi16(m0, one));
        n1 = _mm512_min_epu16(n1, _mm512_sub_epi16(m1, one));
        x0 = _mm512_mask_max_epu16(x0, _mm512_cmplt_epu16_mask(m0, inf), x0, m0);
        x1 = _mm512_mask_max_epu16(x1, _mm512_cmplt_epu16_mask(m1, inf), x1, m1);
    }
    uint16_t ln[32], lx[32];
    _mm512_storeu_si512((void *)ln, _mm512_min_epu16(n0, n1));
    _mm512_storeu_si512((void *)lx, _mm512_max_epu16(x0, x1));
    uint32_t a = *mn, b = *mx;
    for (int l = 0; l < 32; l++) {
        if ((uint32_t)ln[l] + 1 < a) a = (uint32_t)ln[l] + 1;
        if (lx[l] > b) b = lx[l];
    }
    *mn = a;
    *mx = b;
    if (i < n) tk_bf16_range_generic(h + i, n - i, mn, mx);
}

const tk_isa tk_isa_avx512 = {
    .name = "avx512", .mr = MR, .nr = NR,
    .ukr = ukr_avx512, .pack = tkp_pack, .cvt_to_f32 = tkp_cvt_run, .cvt_from_f32 = tkp_cvt_from_run,
    .direct_mr = 1 << 20, .direct_nr = 32, .ukr_direct = ukr_direct_avx512,
    .sum = sum_avx512, .max = max_avx512,
};
#endif
