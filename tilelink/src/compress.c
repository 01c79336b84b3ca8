/* compress.c — compressed all-reduce of f32 gradients with error feedback.
 *
 * Codecs: every chunk of `chunk` consecutive elements is encoded as a 4-byte f32 scale
 * followed by its packed values (none: raw f32, no scale):
 *   sign1: bit i = (x_i >= 0), decoded as +-scale, scale = mean |x| over the chunk
 *   int4:  q = round(x / s) in -7..7, s = max|x| / 7, stored as q + 8, two per byte
 *          (element 2k in the low nibble)
 *   int8:  q = round(x / s) in -127..127, s = max|x| / 127, stored as int8
 *   fp8:   e4m3(x / s), s = max|x| / 448
 * Rounding is to nearest (ties to even, lrintf / the fp8 converter), deterministic.
 *
 * All-reduce (docs/tilelink-compression.md): reduce-scatter by a pairwise exchange of
 * compressed blocks, the owner of a block sums the decoded versions, re-compresses the sum
 * with a residual of its own and the compressed blocks are all-gathered. */
#include "tl_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define TL_S1_AVX2 1 /* sign1 kernels in AVX2, picked at run time (cpuid) */
#endif

struct tlink_compress {
    tlink_comm *comm;
    tlink_compress_method m;   /* phase 1: each rank's input */
    tlink_compress_method m2;  /* phase 2: the reduced blocks (m unless set_gather changed it) */
    size_t count, chunk;
    int ef, n, me;
    size_t *boff;          /* [n+1] element offset of each rank's block (chunk aligned) */
    size_t pad;            /* encoded bytes of the largest block: every block travels padded */
    size_t cb;             /* encoded bytes of a full chunk */
    size_t cps;            /* chunks of a block per pipeline stage (all of them when one stage) */
    size_t sbytes;         /* bytes of a block per pipeline stage: cps * cb (at most pad) */
    int nst;               /* pipeline stages: ceil(chunks of the largest block / cps) */
    size_t pad2, cb2, sbytes2; /* the same for phase 2's method m2 */
    float *e1;             /* [count] residual of the first compression (this rank's input; the
                              part of my own block stays 0: that block is never compressed) */
    float *e2;             /* [my block] residual of the second (the reduced block I own) */
    float *tmp;            /* [chunk] scratch: the chunk being encoded */
    uint8_t *sbuf, *rbuf;  /* [n * pad] */
    uint8_t *gbuf;         /* [n * pad2] the all-gather's buffer */
    tlink_compress_stats stats;
};

#define TLINK_COMPRESS_STAGES 8

static const char *const method_names[TLINK_COMPRESS_COUNT] = {"none", "sign1", "int4", "int8", "fp8"};

const char *tlink_compress_name(tlink_compress_method m) {
    return (unsigned)m < TLINK_COMPRESS_COUNT ? method_names[m] : "?";
}

int tlink_compress_from_name(const char *name) {
    if (!name) return -1;
    for (int i = 0; i < TLINK_COMPRESS_COUNT; i++)
        if (!strcmp(name, method_names[i])) return i;
    if (!strcmp(name, "1bit") || !strcmp(name, "sign")) return TLINK_COMPRESS_SIGN1;
    if (!strcmp(name, "fp8_e4m3") || !strcmp(name, "e4m3")) return TLINK_COMPRESS_FP8;
    if (!strcmp(name, "f32")) return TLINK_COMPRESS_NONE;
    return -1;
}

/* ---------- codecs ---------- */
static size_t payload_bytes(tlink_compress_method m, size_t k) {
    switch (m) {
    case TLINK_COMPRESS_NONE: return 4 * k;
    case TLINK_COMPRESS_SIGN1: return (k + 7) / 8;
    case TLINK_COMPRESS_INT4: return (k + 1) / 2;
    case TLINK_COMPRESS_INT8:
    case TLINK_COMPRESS_FP8: return k;
    default: return 0;
    }
}
static size_t header_bytes(tlink_compress_method m) { return m == TLINK_COMPRESS_NONE ? 0 : 4; }

static size_t enc_bytes(tlink_compress_method m, size_t count, size_t chunk) {
    size_t full = count / chunk, rest = count % chunk;
    size_t b = full * (header_bytes(m) + payload_bytes(m, chunk));
    if (rest) b += header_bytes(m) + payload_bytes(m, rest);
    return b;
}

size_t tlink_compress_encoded_bytes(tlink_compress_method m, size_t count, size_t chunk) {
    if ((unsigned)m >= TLINK_COMPRESS_COUNT) return 0;
    if (!chunk) chunk = TLINK_COMPRESS_DEFAULT_CHUNK;
    if (chunk > TLINK_COMPRESS_MAX_CHUNK) return 0;
    return enc_bytes(m, count, chunk);
}

static float e4m3_lut[256];
static pthread_once_t lut_once = PTHREAD_ONCE_INIT;
static void s1_pick(void);
static void lut_init(void) {
    for (int i = 0; i < 256; i++) {
        e4m3_lut[i] = tlink_fp8_e4m3_to_f32((uint8_t)i);
    }
    s1_pick();
}

/* max |x| and sum |x| with 8 independent lanes (vectorisable without reassociation) */
static float max_abs(const float *x, size_t k) {
    float m[8] = {0};
    size_t i = 0;
    for (; i + 8 <= k; i += 8)
        for (int j = 0; j < 8; j++) {
            float a = fabsf(x[i + j]);
            m[j] = a > m[j] ? a : m[j];
        }
    for (; i < k; i++) m[0] = fabsf(x[i]) > m[0] ? fabsf(x[i]) : m[0];
    float r = 0;
    for (int j = 0; j < 8; j++) r = m[j] > r ? m[j] : r;
    return r;
}
static float sum_abs(const float *x, size_t k) {
    float s[8] = {0};
    size_t i = 0;
    for (; i + 8 <= k; i += 8)
        for (int j = 0; j < 8; j++) s[j] += fabsf(x[i + j]);
    for (; i < k; i++) s[0] += fabsf(x[i]);
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

/* round to nearest, ties to even, for |v| < 2^22 (the quantisers' range), vectorisable */
static inline float rne(float v) {
    const float magic = 12582912.0f; /* 1.5 * 2^23 */
    return (v + magic) - magic;
}

/* NaN -> -lim like the SSE path (_mm_max_ps returns its second operand for NaN) */
static inline float clampf(float v, float lim) { return !(v >= -lim) ? -lim : v > lim ? lim : v; }

/* f32 -> fp8 e4m3 for |v| <= 448 (the encoder scales into that range), round to nearest
 * even: the same bits as tlink_f32_to_fp8_e4m3 there (checked by tests/link/test_compress.c),
 * without its general-case branches */
static inline uint8_t e4m3_fast(float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    uint32_t sign = (u >> 24) & 0x80, a = u & 0x7FFFFFFFu;
    float f;
    memcpy(&f, &a, 4);
    /* both candidates, then a select (no data-dependent branch) */
    uint32_t sub = (uint32_t)rne(f * 512.0f); /* subnormal: k * 2^-9, k = 0..8 (8 is the smallest normal) */
    uint32_t r = a + 0x7FFFFu + ((a >> 20) & 1u); /* normal: round the mantissa to 3 bits */
    uint32_t norm = (((r >> 23) - 120u) << 3) | ((r >> 20) & 7u);
    norm = norm > 0x7Eu ? 0x7Eu : norm; /* 448 */
    return (uint8_t)(sign | (f < 0x1p-6f ? sub : norm));
}

#ifdef __SSE2__
/* 16 values x * inv, clamped to +-lim (NaN -> -lim), rounded to nearest even (the default
 * MXCSR mode, as rne()), as 16 signed bytes */
static inline __m128i quant16(const float *x, float inv, float lim) {
    __m128 vi = _mm_set1_ps(inv), lo = _mm_set1_ps(-lim), hi = _mm_set1_ps(lim);
    __m128i q[4];
    for (int j = 0; j < 4; j++) {
        __m128 v = _mm_mul_ps(_mm_loadu_ps(x + 4 * j), vi);
        v = _mm_min_ps(_mm_max_ps(v, lo), hi);
        q[j] = _mm_cvtps_epi32(v);
    }
    return _mm_packs_epi16(_mm_packs_epi32(q[0], q[1]), _mm_packs_epi32(q[2], q[3]));
}

/* 16 values x * inv, clamped to +-448 (NaN -> -448), as fp8 e4m3 bytes: e4m3_fast on 4 lanes */
static inline __m128i fp8_16(const float *x, float inv) {
    __m128 vi = _mm_set1_ps(inv), lo = _mm_set1_ps(-448.0f), hi = _mm_set1_ps(448.0f);
    __m128i q[4];
    for (int j = 0; j < 4; j++) {
        __m128 v = _mm_min_ps(_mm_max_ps(_mm_mul_ps(_mm_loadu_ps(x + 4 * j), vi), lo), hi);
        __m128i u = _mm_castps_si128(v);
        __m128i sign = _mm_and_si128(_mm_srli_epi32(u, 24), _mm_set1_epi32(0x80));
        __m128i a = _mm_and_si128(u, _mm_set1_epi32(0x7FFFFFFF));
        __m128 f = _mm_castsi128_ps(a);
        __m128i sub = _mm_cvtps_epi32(_mm_mul_ps(f, _mm_set1_ps(512.0f)));
        __m128i r = _mm_add_epi32(a, _mm_add_epi32(_mm_set1_epi32(0x7FFFF),
                                                   _mm_and_si128(_mm_srli_epi32(a, 20), _mm_set1_epi32(1))));
        /* |v| <= 448: the rounded exponent is at most 15 and 448 stays 448, so no clamp here */
        __m128i norm = _mm_or_si128(_mm_slli_epi32(_mm_sub_epi32(_mm_srli_epi32(r, 23), _mm_set1_epi32(120)), 3),
                                    _mm_and_si128(_mm_srli_epi32(r, 20), _mm_set1_epi32(7)));
        __m128i m = _mm_castps_si128(_mm_cmplt_ps(f, _mm_set1_ps(0x1p-6f)));
        __m128i code = _mm_or_si128(_mm_and_si128(m, sub), _mm_andnot_si128(m, norm));
        q[j] = _mm_or_si128(_mm_and_si128(code, _mm_set1_epi32(0x7F)), sign);
    }
    return _mm_packus_epi16(_mm_packs_epi32(q[0], q[1]), _mm_packs_epi32(q[2], q[3]));
}
#endif

/* encode one chunk of k values x into out; returns bytes written */
static size_t enc_chunk(tlink_compress_method m, const float *restrict x, size_t k, uint8_t *restrict out) {
    if (m == TLINK_COMPRESS_NONE) {
        memcpy(out, x, 4 * k);
        return 4 * k;
    }
    uint8_t *p = out + 4;
    float scale;
    switch (m) {
    case TLINK_COMPRESS_SIGN1: {
        scale = sum_abs(x, k) / (float)k;
        /* bit j = 1 when the sign bit of x is clear (+0 and positive values) */
        size_t i = 0;
#ifdef __SSE2__
        for (; i + 8 <= k; i += 8) {
            int lo = _mm_movemask_ps(_mm_loadu_ps(x + i)), hi = _mm_movemask_ps(_mm_loadu_ps(x + i + 4));
            *p++ = (uint8_t)~(lo | hi << 4);
        }
#endif
        for (; i < k; i += 8) {
            unsigned b = 0;
            for (int j = 0; j < 8 && i + (size_t)j < k; j++) b |= (unsigned)!signbit(x[i + j]) << j;
            *p++ = (uint8_t)b;
        }
        break;
    }
    case TLINK_COMPRESS_INT4: {
        float mx = max_abs(x, k);
        scale = mx / 7.0f;
        float inv = mx > 0 ? 7.0f / mx : 0.0f;
        size_t i = 0;
#ifdef __SSE2__
        for (; i + 16 <= k; i += 16) { /* 16 values -> 8 bytes */
            __m128i b = quant16(x + i, inv, 7.0f);          /* 16 x int8 in -7..7 */
            b = _mm_add_epi8(b, _mm_set1_epi8(8));         /* 1..15 */
            __m128i lo = _mm_and_si128(b, _mm_set1_epi16(0x000F));
            __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), _mm_set1_epi16(0x00F0));
            __m128i packed = _mm_packus_epi16(_mm_or_si128(lo, hi), _mm_setzero_si128());
            _mm_storel_epi64((__m128i *)(void *)(p + i / 2), packed);
        }
#endif
        for (; i + 2 <= k; i += 2) {
            int a = (int)rne(clampf(x[i] * inv, 7.0f));
            int b = (int)rne(clampf(x[i + 1] * inv, 7.0f));
            p[i / 2] = (uint8_t)((a + 8) | ((b + 8) << 4));
        }
        p += i / 2;
        if (i < k) *p++ = (uint8_t)((int)rne(clampf(x[i] * inv, 7.0f)) + 8);
        break;
    }
    case TLINK_COMPRESS_INT8: {
        float mx = max_abs(x, k);
        scale = mx / 127.0f;
        float inv = mx > 0 ? 127.0f / mx : 0.0f;
        size_t i = 0;
#ifdef __SSE2__
        for (; i + 16 <= k; i += 16) _mm_storeu_si128((__m128i *)(void *)(p + i), quant16(x + i, inv, 127.0f));
#endif
        for (; i < k; i++) p[i] = (uint8_t)(int8_t)(int)rne(clampf(x[i] * inv, 127.0f));
        p += k;
        break;
    }
    default: { /* fp8 */
        float mx = max_abs(x, k);
        scale = mx / 448.0f;
        float inv = mx > 0 ? 448.0f / mx : 0.0f;
        size_t i = 0;
#ifdef __SSE2__
        for (; i + 16 <= k; i += 16) _mm_storeu_si128((__m128i *)(void *)(p + i), fp8_16(x + i, inv));
#endif
        for (; i < k; i++) p[i] = e4m3_fast(clampf(x[i] * inv, 448.0f));
        p += k;
        break;
    }
    }
    memcpy(out, &scale, 4);
    return (size_t)(p - out);
}

/* ---------- sign1 fast path ----------
 * One pass over the chunk computes t = x + e (stored into e), the 8-lane sum of |t| and the
 * sign bits; a second pass over the chunk (in L1) turns e into the residual t - (+-1 * scale).
 * The arithmetic is that of enc_chunk + resid_chunk (sum_abs's lanes and reduction order,
 * +-1.0f * scale), so encodings and residuals are bit for bit the same
 * (tests/link/test_compress.c compares against a scalar reference). */

/* Both encoders end alike: the ragged tail of fewer than 8 elements (lane 0 of the |t| sums),
 * then the scale, the lanes' sum in a fixed tree order over k, stored in the first 4 bytes of
 * out and returned; *pp moves past the tail's sign byte. */
static float s1_enc_finish(const float *restrict x, float *restrict e, size_t i, size_t k, float s[8], uint8_t *out,
                           uint8_t **pp) {
    uint8_t *p = *pp;
    if (i < k) {
        unsigned b = 0;
        for (size_t j = 0; i + j < k; j++) {
            float t = e ? x[i + j] + e[i + j] : x[i + j];
            if (e) e[i + j] = t;
            s[0] += fabsf(t);
            b |= (unsigned)!signbit(t) << j;
        }
        *p++ = (uint8_t)b;
    }
    float scale = (((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))) / (float)k;
    memcpy(out, &scale, 4);
    *pp = p;
    return scale;
}

/* the scalar reference / portable fallback; e == NULL: no error feedback (x encoded as is) */
static size_t s1_enc_scalar(const float *restrict x, float *restrict e, size_t k, uint8_t *restrict out) {
    float s[8] = {0};
    uint8_t *p = out + 4;
    size_t i = 0;
    for (; i + 8 <= k; i += 8) {
        unsigned b = 0;
        for (int j = 0; j < 8; j++) {
            float t = e ? x[i + j] + e[i + j] : x[i + j];
            if (e) e[i + j] = t;
            s[j] += fabsf(t);
            b |= (unsigned)!signbit(t) << j;
        }
        *p++ = (uint8_t)b;
    }
    float scale = s1_enc_finish(x, e, i, k, s, out, &p);
    if (e)
        for (size_t q = 0; q < k; q++) e[q] = e[q] - copysignf(1.0f, e[q]) * scale;
    return (size_t)(p - out);
}

static void s1_dec_scalar(const uint8_t *restrict in, size_t k, float *restrict y, int add) {
    float scale;
    memcpy(&scale, in, 4);
    const uint8_t *p = in + 4;
    for (size_t i = 0; i < k; i++) {
        float v = ((p[i >> 3] >> (i & 7)) & 1 ? 1.0f : -1.0f) * scale;
        y[i] = add ? y[i] + v : v;
    }
}

#ifdef TL_S1_AVX2
__attribute__((target("avx2"))) static size_t s1_enc_avx2(const float *restrict x, float *restrict e, size_t k,
                                                           uint8_t *restrict out) {
    const __m256 absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
    __m256 acc = _mm256_setzero_ps();
    uint8_t *p = out + 4;
    size_t i = 0;
    if (e) {
        for (; i + 8 <= k; i += 8) {
            __m256 t = _mm256_add_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(e + i));
            _mm256_storeu_ps(e + i, t);
            acc = _mm256_add_ps(acc, _mm256_and_ps(t, absm));
            *p++ = (uint8_t)~_mm256_movemask_ps(t);
        }
    } else {
        for (; i + 8 <= k; i += 8) {
            __m256 t = _mm256_loadu_ps(x + i);
            acc = _mm256_add_ps(acc, _mm256_and_ps(t, absm));
            *p++ = (uint8_t)~_mm256_movemask_ps(t);
        }
    }
    float s[8];
    _mm256_storeu_ps(s, acc);
    float scale = s1_enc_finish(x, e, i, k, s, out, &p);
    if (e) {
        const __m256 sgn = _mm256_castsi256_ps(_mm256_set1_epi32((int)0x80000000u));
        const __m256 one = _mm256_set1_ps(1.0f), vs = _mm256_set1_ps(scale);
        size_t q = 0;
        for (; q + 8 <= k; q += 8) {
            __m256 t = _mm256_loadu_ps(e + q);
            __m256 pm = _mm256_or_ps(one, _mm256_and_ps(t, sgn)); /* copysignf(1, t) */
            _mm256_storeu_ps(e + q, _mm256_sub_ps(t, _mm256_mul_ps(pm, vs)));
        }
        for (; q < k; q++) e[q] = e[q] - copysignf(1.0f, e[q]) * scale;
    }
    return (size_t)(p - out);
}

__attribute__((target("avx2"))) static void s1_dec_avx2(const uint8_t *restrict in, size_t k, float *restrict y,
                                                        int add) {
    float scale;
    memcpy(&scale, in, 4);
    const uint8_t *p = in + 4;
    const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    const __m256 one = _mm256_set1_ps(1.0f), vs = _mm256_set1_ps(scale);
    const __m256 sgn = _mm256_castsi256_ps(_mm256_set1_epi32((int)0x80000000u));
    size_t i = 0;
    for (; i + 8 <= k; i += 8) {
        __m256i b = _mm256_and_si256(_mm256_set1_epi32(p[i >> 3]), bit);
        __m256 clear = _mm256_castsi256_ps(_mm256_cmpeq_epi32(b, _mm256_setzero_si256()));
        __m256 v = _mm256_mul_ps(_mm256_or_ps(one, _mm256_and_ps(clear, sgn)), vs); /* +-1.0f * scale */
        _mm256_storeu_ps(y + i, add ? _mm256_add_ps(_mm256_loadu_ps(y + i), v) : v);
    }
    for (; i < k; i++) {
        float v = ((p[i >> 3] >> (i & 7)) & 1 ? 1.0f : -1.0f) * scale;
        y[i] = add ? y[i] + v : v;
    }
}
#endif

static size_t (*s1_enc)(const float *restrict, float *restrict, size_t, uint8_t *restrict) = s1_enc_scalar;
static void (*s1_dec)(const uint8_t *restrict, size_t, float *restrict, int) = s1_dec_scalar;

static void s1_pick(void) {
#ifdef TL_S1_AVX2
    /* TLINK_COMPRESS_SCALAR=1: the portable path (tests, comparisons) */
    if (!tb_knob_bool(TB_K_TLINK_COMPRESS_SCALAR) && __builtin_cpu_supports("avx2")) {
        s1_enc = s1_enc_avx2;
        s1_dec = s1_dec_avx2;
    }
#endif
}

/* decode one chunk; add != 0 accumulates into y instead of storing */
#define DEC_LOOP(EXPR)                                              \
    do {                                                            \
        if (add)                                                    \
            for (size_t i = 0; i < k; i++) y[i] += (EXPR) * scale;  \
        else                                                        \
            for (size_t i = 0; i < k; i++) y[i] = (EXPR) * scale;   \
    } while (0)

static size_t dec_chunk(tlink_compress_method m, const uint8_t *restrict in, size_t k, float *restrict y, int add) {
    if (m == TLINK_COMPRESS_NONE) {
        if (!add) {
            memcpy(y, in, 4 * k);
        } else {
            float tmp;
            for (size_t i = 0; i < k; i++) {
                memcpy(&tmp, in + 4 * i, 4);
                y[i] += tmp;
            }
        }
        return 4 * k;
    }
    float scale;
    memcpy(&scale, in, 4);
    const uint8_t *p = in + 4;
    switch (m) {
    case TLINK_COMPRESS_SIGN1:
        s1_dec(in, k, y, add);
        p += (k + 7) / 8;
        break;
    case TLINK_COMPRESS_INT4: {
        size_t h = k / 2;
        if (add)
            for (size_t i = 0; i < h; i++) {
                y[2 * i] += (float)((p[i] & 15) - 8) * scale;
                y[2 * i + 1] += (float)((p[i] >> 4) - 8) * scale;
            }
        else
            for (size_t i = 0; i < h; i++) {
                y[2 * i] = (float)((p[i] & 15) - 8) * scale;
                y[2 * i + 1] = (float)((p[i] >> 4) - 8) * scale;
            }
        if (k & 1) {
            float v = (float)((p[h] & 15) - 8) * scale;
            y[k - 1] = add ? y[k - 1] + v : v;
        }
        p += (k + 1) / 2;
        break;
    }
    case TLINK_COMPRESS_INT8:
        DEC_LOOP((float)(int8_t)p[i]);
        p += k;
        break;
    default:
        DEC_LOOP(e4m3_lut[p[i]]);
        p += k;
        break;
    }
    return (size_t)(p - in);
}
#undef DEC_LOOP

/* e = t - decode(enc) for one chunk, fused (the same arithmetic as dec_chunk, so the
 * residual is exactly what the receivers lose) */
static void resid_chunk(tlink_compress_method m, const float *restrict t, const uint8_t *restrict enc, size_t k,
                        float *restrict e) {
    float scale;
    memcpy(&scale, enc, 4);
    const uint8_t *p = enc + 4;
    switch (m) {
    case TLINK_COMPRESS_SIGN1:
        for (size_t i = 0; i < k; i++) e[i] = t[i] - copysignf(1.0f, t[i]) * scale;
        break;
    case TLINK_COMPRESS_INT4:
        for (size_t i = 0; i < k / 2; i++) {
            e[2 * i] = t[2 * i] - (float)((p[i] & 15) - 8) * scale;
            e[2 * i + 1] = t[2 * i + 1] - (float)((p[i] >> 4) - 8) * scale;
        }
        if (k & 1) e[k - 1] = t[k - 1] - (float)((p[k / 2] & 15) - 8) * scale;
        break;
    case TLINK_COMPRESS_INT8:
        for (size_t i = 0; i < k; i++) e[i] = t[i] - (float)(int8_t)p[i] * scale;
        break;
    case TLINK_COMPRESS_FP8:
        for (size_t i = 0; i < k; i++) e[i] = t[i] - e4m3_lut[p[i]] * scale;
        break;
    default:
        for (size_t i = 0; i < k; i++) e[i] = 0;
        break;
    }
}

/* encode count values (x + e when e != NULL, then e = that - decoded) chunk by chunk */
static size_t enc1(tlink_compress_method m, const float *x, float *e, size_t k, float *tmp, uint8_t *out) {
    if (m == TLINK_COMPRESS_SIGN1) return s1_enc(x, e, k, out);
    if (!e || m == TLINK_COMPRESS_NONE) return enc_chunk(m, x, k, out);
    for (size_t i = 0; i < k; i++) tmp[i] = x[i] + e[i];
    size_t b = enc_chunk(m, tmp, k, out);
    resid_chunk(m, tmp, out, k, e);
    return b;
}

static size_t enc_ef(tlink_compress_method m, const float *x, float *e, size_t count, size_t chunk, float *tmp,
                     uint8_t *out) {
    size_t o = 0;
    for (size_t c0 = 0; c0 < count; c0 += chunk) {
        size_t k = TL_MIN(chunk, count - c0);
        if (m == TLINK_COMPRESS_SIGN1) {
            o += s1_enc(x + c0, e ? e + c0 : NULL, k, out + o);
            continue;
        }
        if (!e || m == TLINK_COMPRESS_NONE) {
            o += enc_chunk(m, x + c0, k, out + o);
            continue;
        }
        float *ec = e + c0;
        for (size_t i = 0; i < k; i++) tmp[i] = x[c0 + i] + ec[i];
        size_t b = enc_chunk(m, tmp, k, out + o);
        resid_chunk(m, tmp, out + o, k, ec);
        o += b;
    }
    return o;
}

static size_t dec_all(tlink_compress_method m, const uint8_t *in, size_t count, size_t chunk, float *y, int add) {
    size_t o = 0;
    for (size_t c0 = 0; c0 < count; c0 += chunk) o += dec_chunk(m, in + o, TL_MIN(chunk, count - c0), y + c0, add);
    return o;
}

static tlink_status codec_args(tlink_compress_method m, const void *a, const void *b, size_t count, size_t *chunk,
                               const char *what) {
    if ((unsigned)m >= TLINK_COMPRESS_COUNT) {
        tl_set_thread_error("%s: invalid method %d", what, (int)m);
        return TLINK_ERR_INVALID_ARG;
    }
    if (!*chunk) *chunk = TLINK_COMPRESS_DEFAULT_CHUNK;
    if (*chunk > TLINK_COMPRESS_MAX_CHUNK) {
        tl_set_thread_error("%s: chunk %zu is larger than %u", what, *chunk, TLINK_COMPRESS_MAX_CHUNK);
        return TLINK_ERR_INVALID_ARG;
    }
    if (count && (!a || !b)) {
        tl_set_thread_error("%s: %s is NULL", what, !a ? "in" : "out");
        return TLINK_ERR_INVALID_ARG;
    }
    return TLINK_OK;
}

tlink_status tlink_compress_encode(tlink_compress_method m, const float *x, size_t count, size_t chunk, void *out) {
    tlink_status st = codec_args(m, x, out, count, &chunk, "compress_encode");
    if (st) return st;
    pthread_once(&lut_once, lut_init);
    enc_ef(m, x, NULL, count, chunk, NULL, out);
    return TLINK_OK;
}

tlink_status tlink_compress_decode(tlink_compress_method m, const void *in, size_t count, size_t chunk, float *out) {
    tlink_status st = codec_args(m, in, out, count, &chunk, "compress_decode");
    if (st) return st;
    pthread_once(&lut_once, lut_init);
    dec_all(m, in, count, chunk, out, 0);
    return TLINK_OK;
}

/* ---------- state ---------- */
void tlink_compress_destroy(tlink_compress *cs) {
    if (!cs) return;
    free(cs->boff);
    free(cs->e1);
    free(cs->e2);
    free(cs->tmp);
    free(cs->sbuf);
    free(cs->rbuf);
    free(cs->gbuf);
    free(cs);
}

tlink_status tlink_compress_create(tlink_comm *comm, tlink_compress_method m, size_t count, size_t chunk,
                                   int error_feedback, tlink_compress **out) {
    if (!out) {
        tl_set_thread_error("compress_create: out is NULL");
        return TLINK_ERR_INVALID_ARG;
    }
    *out = NULL;
    if (!comm) {
        tl_set_thread_error("compress_create: comm is NULL");
        return TLINK_ERR_INVALID_ARG;
    }
    if ((unsigned)m >= TLINK_COMPRESS_COUNT)
        return tl_err(comm, TLINK_ERR_INVALID_ARG, "compress_create: invalid method %d", (int)m);
    if (!chunk) chunk = TLINK_COMPRESS_DEFAULT_CHUNK;
    if (chunk > TLINK_COMPRESS_MAX_CHUNK)
        return tl_err(comm, TLINK_ERR_INVALID_ARG, "compress_create: chunk %zu is larger than %u", chunk,
                      TLINK_COMPRESS_MAX_CHUNK);
    if (count > ((size_t)1 << 40))
        return tl_err(comm, TLINK_ERR_INVALID_ARG, "compress_create: count %zu is too large", count);
    if (error_feedback != 0 && error_feedback != 1)
        return tl_err(comm, TLINK_ERR_INVALID_ARG, "compress_create: error_feedback must be 0 or 1 (got %d)",
                      error_feedback);
    pthread_once(&lut_once, lut_init);
    tlink_compress *cs = calloc(1, sizeof *cs);
    if (!cs) return tl_err(comm, TLINK_ERR_NO_MEMORY, "compress_create: out of memory");
    int n = tlink_comm_size(comm);
    cs->comm = comm;
    cs->m = m;
    cs->m2 = m;
    cs->count = count;
    cs->chunk = chunk;
    cs->ef = error_feedback;
    cs->n = n;
    cs->me = tlink_comm_rank(comm);
    cs->boff = calloc((size_t)n + 1, sizeof *cs->boff);
    size_t nchunks = (count + chunk - 1) / chunk;
    size_t maxblk = 0;
    if (cs->boff) {
        for (int j = 0; j <= n; j++) {
            size_t q = nchunks / (size_t)n, r = nchunks % (size_t)n;
            size_t co = (size_t)j * q + TL_MIN((size_t)j, r);
            cs->boff[j] = TL_MIN(co * chunk, count);
        }
        for (int j = 0; j < n; j++) {
            size_t bn = cs->boff[j + 1] - cs->boff[j];
            size_t eb = enc_bytes(m, bn, chunk);
            if (eb > cs->pad) cs->pad = eb;
            if (bn > maxblk) maxblk = bn;
        }
    }
    /* pipeline: the blocks travel in stages of whole chunks, so that the encoding of one stage
     * overlaps the exchange of the previous (tlink_ialltoall / tlink_iallgather in issue order).
     * Every chunk is encoded, summed and decoded exactly as in one stage: only the packing of
     * the wire buffers differs. Small buffers (under 1 MiB encoded in all, or
     * TLINK_COMPRESS_PIPELINE_MIN bytes) use one stage. */
    cs->cb = header_bytes(m) + payload_bytes(m, chunk);
    size_t maxch = (maxblk + chunk - 1) / chunk;
    cs->cps = maxch ? maxch : 1;
    const size_t pipe_min = (size_t)tb_knob_int(TB_K_TLINK_COMPRESS_PIPELINE_MIN); /* tests set 0 to stage small buffers */
    if (cs->pad && cs->pad * (size_t)n >= pipe_min) {
        size_t per = (maxch + TLINK_COMPRESS_STAGES - 1) / TLINK_COMPRESS_STAGES;
        cs->cps = per ? per : 1;
    }
    cs->sbytes = TL_MIN(cs->pad, cs->cps * cs->cb);
    cs->nst = (int)((maxch + cs->cps - 1) / cs->cps);
    cs->pad2 = cs->pad;
    cs->cb2 = cs->cb;
    cs->sbytes2 = cs->sbytes;
    size_t mine = cs->boff ? cs->boff[cs->me + 1] - cs->boff[cs->me] : 0;
    cs->e1 = calloc(count ? count : 1, sizeof(float));
    cs->e2 = calloc(mine ? mine : 1, sizeof(float));
    cs->tmp = calloc(chunk, sizeof(float));
    cs->sbuf = malloc(cs->pad * (size_t)n + 1);
    cs->rbuf = malloc(cs->pad * (size_t)n + 1);
    cs->gbuf = calloc(cs->pad2 * (size_t)n + 1, 1);
    if (!cs->boff || !cs->e1 || !cs->e2 || !cs->tmp || !cs->sbuf || !cs->rbuf || !cs->gbuf) {
        tlink_compress_destroy(cs);
        return tl_err(comm, TLINK_ERR_NO_MEMORY, "compress_create: out of memory (%zu elements)", count);
    }
    /* zero the padding once: the bytes past a short block's encoding travel too */
    memset(cs->sbuf, 0, cs->pad * (size_t)n + 1);
    memset(cs->rbuf, 0, cs->pad * (size_t)n + 1);
    size_t per = (count + (size_t)n - 1) / (size_t)n;
    cs->stats.f32_ring_bytes = (uint64_t)2 * (uint64_t)(n - 1) * per * 4;
    *out = cs;
    return TLINK_OK;
}

tlink_status tlink_compress_set_gather(tlink_compress *cs, tlink_compress_method m2) {
    if (!cs) {
        tl_set_thread_error("compress_set_gather: state is NULL");
        return TLINK_ERR_INVALID_ARG;
    }
    if ((unsigned)m2 >= TLINK_COMPRESS_COUNT)
        return tl_err(cs->comm, TLINK_ERR_INVALID_ARG, "compress_set_gather: invalid method %d", (int)m2);
    size_t pad2 = 0;
    for (int j = 0; j < cs->n; j++) pad2 = TL_MAX(pad2, enc_bytes(m2, cs->boff[j + 1] - cs->boff[j], cs->chunk));
    uint8_t *g = calloc(pad2 * (size_t)cs->n + 1, 1);
    if (!g) return tl_err(cs->comm, TLINK_ERR_NO_MEMORY, "compress_set_gather: out of memory");
    free(cs->gbuf);
    cs->gbuf = g;
    cs->m2 = m2;
    cs->pad2 = pad2;
    cs->cb2 = header_bytes(m2) + payload_bytes(m2, cs->chunk);
    cs->sbytes2 = TL_MIN(pad2, cs->cps * cs->cb2);
    size_t mine = cs->boff[cs->me + 1] - cs->boff[cs->me];
    memset(cs->e2, 0, (mine ? mine : 1) * sizeof(float));
    return TLINK_OK;
}

void tlink_compress_reset(tlink_compress *cs) {
    if (!cs) return;
    memset(cs->e1, 0, (cs->count ? cs->count : 1) * sizeof(float));
    size_t mine = cs->boff[cs->me + 1] - cs->boff[cs->me];
    memset(cs->e2, 0, (mine ? mine : 1) * sizeof(float));
}

tlink_status tlink_compress_get_stats(const tlink_compress *cs, tlink_compress_stats *out) {
    if (!cs || !out) {
        tl_set_thread_error("compress_get_stats: %s is NULL", !cs ? "state" : "out");
        return TLINK_ERR_INVALID_ARG;
    }
    *out = cs->stats;
    double s = 0;
    if (cs->ef) {
        for (size_t i = 0; i < cs->count; i++) s += (double)cs->e1[i] * cs->e1[i];
        size_t mine = cs->boff[cs->me + 1] - cs->boff[cs->me];
        for (size_t i = 0; i < mine; i++) s += (double)cs->e2[i] * cs->e2[i];
    }
    out->residual_norm = sqrt(s);
    return TLINK_OK;
}

/* the pipeline's stages: stage s covers bytes [stage_lo(s), stage_lo(s + 1)) of every block's
 * encoding; in the wire buffers stage s starts at n * stage_lo(s), rank j's part of it at
 * j * (its size) further */
static size_t stage_lo(const tlink_compress *cs, int s) { return TL_MIN(cs->pad, (size_t)s * cs->sbytes); }
static size_t stage_lo2(const tlink_compress *cs, int s) { return TL_MIN(cs->pad2, (size_t)s * cs->sbytes2); }

/* where the encoding of the chunk at element c0 of rank j's block lies in a wire buffer:
 * phase 1's (ph 1: method m) or the all-gather's (ph 2: method m2); stage s holds chunks
 * [s cps, (s + 1) cps) of every block in both */
static uint8_t *chunk_at(const tlink_compress *cs, uint8_t *buf, int j, size_t c0, int ph) {
    size_t ci = c0 / cs->chunk;
    size_t b = ci * (ph == 1 ? cs->cb : cs->cb2); /* its byte offset in the block's encoding */
    int s = (int)(ci / cs->cps);
    size_t lo = ph == 1 ? stage_lo(cs, s) : stage_lo2(cs, s), hi = ph == 1 ? stage_lo(cs, s + 1) : stage_lo2(cs, s + 1);
    return buf + (size_t)cs->n * lo + (size_t)j * (hi - lo) + (b - lo);
}

tlink_status tlink_compressed_allreduce(tlink_compress *cs, const float *sendbuf, float *recvbuf, size_t count,
                                        tlink_op op) {
    if (!cs) {
        tl_set_thread_error("compressed_allreduce: state is NULL");
        return TLINK_ERR_INVALID_ARG;
    }
    tlink_comm *c = cs->comm;
    if (count != cs->count)
        return tl_err(c, TLINK_ERR_INVALID_ARG, "compressed_allreduce: count %zu differs from the state's %zu", count,
                      cs->count);
    if (op != TLINK_SUM && op != TLINK_AVG)
        return tl_err(c, TLINK_ERR_INVALID_ARG, "compressed_allreduce: op must be sum or avg (got %s)",
                      tlink_op_name(op));
    if (count && (!sendbuf || !recvbuf))
        return tl_err(c, TLINK_ERR_INVALID_ARG, "compressed_allreduce: %s is NULL", !sendbuf ? "sendbuf" : "recvbuf");
    if (tlink_comm_size(c) != cs->n || tlink_comm_rank(c) != cs->me)
        return tl_err(c, TLINK_ERR_INVALID_ARG, "compressed_allreduce: the communicator changed size since the state was made");
    int n = cs->n, me = cs->me;
    size_t pad = cs->pad, chunk = cs->chunk;
    tlink_compress_method m = cs->m;
    float *e1 = cs->ef ? cs->e1 : NULL, *e2 = cs->ef ? cs->e2 : NULL;
    double t0 = tl_now(), tcomm = 0;
    tlink_status st = TLINK_OK;

    /* phase 1, stage by stage: compress every other rank's block of (input + residual) and
     * start its exchange; my own block stays exact (it never travels) */
    int nst = n > 1 ? cs->nst : 0;
    tlink_request *ra[64], *rg[64]; /* nst <= TLINK_COMPRESS_STAGES + 1 */
    int na = 0, wa = 0, ng = 0, wg = 0;
    size_t mn = cs->boff[me + 1] - cs->boff[me];
    uint8_t *g = cs->gbuf;
    tlink_compress_method m2 = cs->m2;
    float *tmp = cs->tmp;
    for (int s = 0; s < nst && !st; s++) {
        size_t lo = stage_lo(cs, s), bs = stage_lo(cs, s + 1) - lo;
        size_t e0 = (size_t)s * cs->cps * chunk, eh = e0 + cs->cps * chunk; /* the stage's elements */
        for (int j = 0; j < n; j++) {
            if (j == me) continue;
            size_t bo = cs->boff[j], bn = cs->boff[j + 1] - bo;
            for (size_t c0 = e0; c0 < bn && c0 < eh; c0 += chunk) {
                size_t k = TL_MIN(chunk, bn - c0);
                enc1(m, sendbuf + bo + c0, e1 ? e1 + bo + c0 : NULL, k, tmp, chunk_at(cs, cs->sbuf, j, c0, 1));
            }
        }
        st = tlink_ialltoall(c, cs->sbuf + (size_t)n * lo, cs->rbuf + (size_t)n * lo, bs, TLINK_U8, &ra[na]);
        if (!st) na++;
    }
    /* phase 2, stage by stage and chunk by chunk: sum the decoded versions of my block's chunk
     * (in rank order; my own contribution exact), (avg: divide), add its residual, compress
     * into my slot of the all-gather buffer, keep the residual; start the stage's all-gather */
    for (int s = 0; s < (n > 1 ? nst : 1) && !st; s++) {
        size_t lo = n > 1 ? stage_lo2(cs, s) : 0, hi = n > 1 ? stage_lo2(cs, s + 1) : cs->pad2;
        size_t e0 = n > 1 ? (size_t)s * cs->cps * chunk : 0, eh = n > 1 ? e0 + cs->cps * chunk : mn;
        if (n > 1) {
            double t = tl_now();
            st = tlink_wait(ra[wa++]);
            tcomm += tl_now() - t;
            if (st) break;
        }
        for (size_t c0 = e0; c0 < mn && c0 < eh; c0 += chunk) {
            size_t k = TL_MIN(chunk, mn - c0);
            const float *xo = sendbuf + cs->boff[me] + c0;
            for (int i = 0; i < n; i++) {
                if (i != me) {
                    dec_chunk(m, chunk_at(cs, cs->rbuf, i, c0, 1), k, tmp, i > 0);
                } else if (i == 0) {
                    memcpy(tmp, xo, k * sizeof(float));
                } else {
                    for (size_t q = 0; q < k; q++) tmp[q] += xo[q];
                }
            }
            if (op == TLINK_AVG)
                for (size_t i = 0; i < k; i++) tmp[i] /= (float)n;
            enc1(m2, tmp, e2 ? e2 + c0 : NULL, k, tmp, chunk_at(cs, g, me, c0, 2));
        }
        if (n > 1) {
            st = tlink_iallgather(c, g + (size_t)n * lo + (size_t)me * (hi - lo), g + (size_t)n * lo, hi - lo,
                                  TLINK_U8, &rg[ng]);
            if (!st) ng++;
        }
    }
    /* decode every block, stage by stage as the all-gathers complete */
    for (int s = 0; s < (n > 1 ? nst : 1) && !st; s++) {
        size_t e0 = n > 1 ? (size_t)s * cs->cps * chunk : 0, eh = n > 1 ? e0 + cs->cps * chunk : cs->count;
        if (n > 1) {
            double t = tl_now();
            st = tlink_wait(rg[wg++]);
            tcomm += tl_now() - t;
            if (st) break;
        }
        for (int j = 0; j < n; j++) {
            size_t bo = cs->boff[j], bn = cs->boff[j + 1] - bo;
            for (size_t c0 = e0; c0 < bn && c0 < eh; c0 += chunk)
                dec_chunk(m2, chunk_at(cs, g, j, c0, 2), TL_MIN(chunk, bn - c0), recvbuf + bo + c0, 0);
        }
    }
    if (st) { /* a failed call: finish the requests still in flight (they end with the error too) */
        while (wa < na) tlink_wait(ra[wa++]);
        while (wg < ng) tlink_wait(rg[wg++]);
        return st;
    }
    uint64_t wire = n > 1 ? (uint64_t)(n - 1) * (pad + cs->pad2) : 0;
    cs->stats.calls++;
    cs->stats.last_wire_bytes = wire;
    cs->stats.total_wire_bytes += wire;
    cs->stats.last_comm_s = tcomm;
    cs->stats.last_codec_s = tl_now() - t0 - tcomm;
    return TLINK_OK;
}
