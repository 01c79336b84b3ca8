/* convert.h — the scalar conversions between float formats, header-only.
 *
 * In:  nothing (only <stdint.h>, <stdbool.h> and <string.h>); no other tile header.
 * Out: bit-exact round-to-nearest-even conversions between f64/f32 and f16, bf16, fp8 e4m3,
 *      fp8 e5m2 and fp4 e2m1 (saturating where docs/numbers.md says so), and exact decoding.
 *
 * Two users share this one text so they cannot drift apart:
 *   - src/core/dtype.c (the public tile_* conversion functions wrap these);
 *   - the CPU backend's generated C: src/codegen/prelude.cmake embeds this file verbatim in
 *     the prelude every generated kernel starts with.
 * Everything is static (inline) and prefixed tcv_. Narrow-format arithmetic is done on
 * integers, so results never depend on the floating-point environment.
 */
#ifndef TILE_CONVERT_H
#define TILE_CONVERT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__)
#define TCV_UNUSED __attribute__((unused))
#else
#define TCV_UNUSED
#endif

static inline uint64_t tcv_f64_bits(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }
static inline double tcv_bits_f64(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }
static inline uint32_t tcv_f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float tcv_bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static inline int tcv_msb64(uint64_t x) { return 63 - __builtin_clzll(x); } /* x != 0 */

/* A binary floating-point format with M explicit mantissa bits, smallest normal exponent
 * emin and largest finite exponent emax, stored as sign | exponent field | mantissa in
 * `sign_shift` + 1 bits. Encoding packs (field exponent, mantissa) as ((e - emin) << M) + q
 * where q includes the implicit bit; that single formula covers subnormals
 * (q < 2^M, e == emin) and the carry of a mantissa rounding up to 2^(M+1). */
typedef struct tcv_fmt {
    int M, emin, emax;
    int sign_shift;      /* position of the sign bit */
    uint64_t max_bits;   /* magnitude bits of the largest finite value */
    uint64_t inf_bits;   /* magnitude bits of infinity; 0 if the format has none */
    uint64_t nan_bits;   /* canonical NaN, magnitude bits */
    bool nan_signed;     /* the canonical NaN carries the input's sign */
    bool saturate;       /* overflow -> max finite (and +-inf -> +-max) instead of inf */
} tcv_fmt;

static const tcv_fmt TCV_F16 TCV_UNUSED = {10, -14, 15, 15, 0x7BFF, 0x7C00, 0x7E00, true, false};
static const tcv_fmt TCV_BF16 TCV_UNUSED = {7, -126, 127, 15, 0x7F7F, 0x7F80, 0x7FC0, true, false};
static const tcv_fmt TCV_F32 TCV_UNUSED = {23, -126, 127, 31, 0x7F7FFFFF, 0x7F800000, 0x7FC00000, true, false};
static const tcv_fmt TCV_F64 TCV_UNUSED = {52, -1022, 1023, 63, 0x7FEFFFFFFFFFFFFFull, 0x7FF0000000000000ull,
                                           0x7FF8000000000000ull, true, false};
/* e4m3 (OCP e4m3fn): no inf, S.1111.111 is NaN, max 448 = S.1111.110. */
static const tcv_fmt TCV_E4M3 TCV_UNUSED = {3, -6, 8, 7, 0x7E, 0, 0x7F, true, true};
/* e5m2 (OCP): IEEE-like; max 57344 = S.11110.11; canonical NaN S.11111.11 (see numbers.md). */
static const tcv_fmt TCV_E5M2 TCV_UNUSED = {2, -14, 15, 7, 0x7B, 0x7C, 0x7F, true, true};
/* e2m1 (OCP MX): no inf, no NaN, max 6 = S.11.1. NaN -> +6 (0x7). */
static const tcv_fmt TCV_E2M1 TCV_UNUSED = {1, 0, 2, 3, 0x7, 0, 0x7, false, true};

/* Round the exact value (-1)^neg * m * 2^e (m != 0) to format f. Returns the bits. */
static inline uint64_t tcv_encode_exact(const tcv_fmt *f, bool neg, uint64_t m, int e) {
    uint64_t sign = neg ? (uint64_t)1 << f->sign_shift : 0;
    int E = tcv_msb64(m) + e; /* value in [2^E, 2^(E+1)) */
    if (E > f->emax) return sign | (f->saturate ? f->max_bits : f->inf_bits);
    int et = E < f->emin ? f->emin : E;
    int shift = (et - f->M) - e; /* quantum is 2^(et - M) */
    uint64_t q;
    if (shift <= 0) {
        q = m << -shift; /* exact; q < 2^(M+1) since E <= et */
    } else if (shift < 64) {
        uint64_t rem = m & (((uint64_t)1 << shift) - 1);
        uint64_t half = (uint64_t)1 << (shift - 1);
        q = m >> shift;
        if (rem > half || (rem == half && (q & 1))) q++;
    } else if (shift == 64) {
        q = m > ((uint64_t)1 << 63) ? 1 : 0; /* m == half: tie, 0 is even */
    } else {
        q = 0; /* below half the smallest subnormal */
    }
    uint64_t mag = ((uint64_t)(et - f->emin) << f->M) + q;
    if (mag > f->max_bits) mag = f->saturate ? f->max_bits : f->inf_bits;
    return sign | mag;
}

/* Round a double to format f (one rounding, RNE; NaN -> canonical NaN). */
static inline uint64_t tcv_encode_f64(const tcv_fmt *f, double d) {
    uint64_t u = tcv_f64_bits(d);
    bool neg = (u >> 63) != 0;
    uint64_t sign = neg ? (uint64_t)1 << f->sign_shift : 0;
    int ef = (int)((u >> 52) & 0x7FF);
    uint64_t frac = u & 0xFFFFFFFFFFFFFull;
    if (ef == 0x7FF) {
        if (frac) return (f->nan_signed ? sign : 0) | f->nan_bits;
        return sign | (f->saturate ? f->max_bits : f->inf_bits);
    }
    if (ef == 0) {
        if (frac == 0) return sign; /* signed zero */
        return tcv_encode_exact(f, neg, frac, -1074);
    }
    return tcv_encode_exact(f, neg, frac | ((uint64_t)1 << 52), ef - 1075);
}

/* Round an int64 to format f (one rounding). */
static inline uint64_t tcv_encode_i64(const tcv_fmt *f, int64_t v) {
    if (v == 0) return 0;
    bool neg = v < 0;
    uint64_t m = neg ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    return tcv_encode_exact(f, neg, m, 0);
}

/* Decode bits of a narrow format (M <= 10) to double; exact. */
static inline double tcv_decode_small(const tcv_fmt *f, uint32_t b) {
    uint32_t mag = b & ((1u << f->sign_shift) - 1);
    bool neg = (b >> f->sign_shift) & 1;
    uint64_t sign = neg ? (uint64_t)1 << 63 : 0;
    if (f->inf_bits) { /* IEEE-like: all-ones exponent is inf / NaN */
        if (mag == f->inf_bits) return tcv_bits_f64(sign | 0x7FF0000000000000ull);
        if (mag > f->inf_bits) return tcv_bits_f64(sign | 0x7FF8000000000000ull);
    } else if (f->nan_signed && mag == f->nan_bits) { /* e4m3: S.1111.111 */
        return tcv_bits_f64(sign | 0x7FF8000000000000ull);
    }
    uint32_t field = mag >> f->M, mant = mag & ((1u << f->M) - 1);
    if (field == 0) {
        if (mant == 0) return tcv_bits_f64(sign);
        /* subnormal: mant * 2^(emin - M); normalise for the double */
        int p = 31 - __builtin_clz(mant);
        int exp = f->emin - f->M + p;
        uint64_t fr = ((uint64_t)mant << (52 - p)) & 0xFFFFFFFFFFFFFull;
        return tcv_bits_f64(sign | ((uint64_t)(exp + 1023) << 52) | fr);
    }
    int exp = (int)field - 1 + f->emin;
    return tcv_bits_f64(sign | ((uint64_t)(exp + 1023) << 52) | ((uint64_t)mant << (52 - f->M)));
}

/* ---------- f16 ---------- */

/* f32 -> f16 directly on the float's bits (the hot path; the core tests check it against
 * the f64 path for every f32 pattern). */
static inline uint16_t tcv_f32_to_f16_bits(float x) {
    uint32_t u = tcv_f32_bits(x);
    uint32_t sign = (u >> 16) & 0x8000;
    uint32_t a = u & 0x7FFFFFFF;
    if (a >= 0x7F800000) return (uint16_t)(sign | (a > 0x7F800000 ? 0x7E00 : 0x7C00));
    if (a >= 0x477FF000) return (uint16_t)(sign | 0x7C00); /* >= 65520 rounds to inf */
    if (a >= 0x38800000) {                                 /* normal f16 range: >= 2^-14 */
        uint32_t r = a - ((127u - 15u) << 23);             /* rebias */
        uint32_t q = r >> 13, rem = r & 0x1FFF;
        if (rem > 0x1000 || (rem == 0x1000 && (q & 1))) q++;
        return (uint16_t)(sign | q);
    }
    if (a < 0x33000000) return (uint16_t)sign; /* < 2^-25 rounds to zero (2^-25 itself ties to 0) */
    /* subnormal result: value = m * 2^(e-150) with 24-bit m, quantum 2^-24 */
    uint32_t m = (a & 0x7FFFFF) | 0x800000;
    int shift = 126 - (int)(a >> 23); /* (-24) - (e - 150) with e the biased exponent */
    uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) q++;
    return (uint16_t)(sign | q);
}

static inline float tcv_f16_bits_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t e = (h >> 10) & 0x1F, m = h & 0x3FF;
    if (e == 0x1F) return tcv_bits_f32(sign | 0x7F800000 | (m << 13)); /* inf, NaN (payload kept) */
    if (e == 0) {
        if (m == 0) return tcv_bits_f32(sign);
        int p = 31 - __builtin_clz(m); /* m = 2^p + ..., value = m * 2^-24 */
        return tcv_bits_f32(sign | ((uint32_t)(p - 24 + 127) << 23) | ((m << (23 - p)) & 0x7FFFFF));
    }
    return tcv_bits_f32(sign | ((e + 112) << 23) | (m << 13));
}

/* ---------- bf16 ---------- */

static inline uint16_t tcv_f32_to_bf16_bits(float x) {
    uint32_t u = tcv_f32_bits(x);
    if ((u & 0x7FFFFFFF) > 0x7F800000) return (uint16_t)(((u >> 16) & 0x8000) | 0x7FC0);
    /* round to nearest even on the low 16 bits; a carry into the exponent is right,
     * and rounding the largest finite values up yields exactly inf. */
    u += 0x7FFF + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

static inline float tcv_bf16_bits_to_f32(uint16_t h) { return tcv_bits_f32((uint32_t)h << 16); }

/* ---------- fp8 / fp4 (fp4: 4-bit codes in the low nibble) ---------- */
static inline uint8_t tcv_f64_to_e4m3_bits(double d) { return (uint8_t)tcv_encode_f64(&TCV_E4M3, d); }
static inline double tcv_e4m3_bits_to_f64(uint8_t b) { return tcv_decode_small(&TCV_E4M3, b); }
static inline uint8_t tcv_f64_to_e5m2_bits(double d) { return (uint8_t)tcv_encode_f64(&TCV_E5M2, d); }
static inline double tcv_e5m2_bits_to_f64(uint8_t b) { return tcv_decode_small(&TCV_E5M2, b); }
static inline uint8_t tcv_f64_to_e2m1_bits(double d) { return (uint8_t)tcv_encode_f64(&TCV_E2M1, d); }
static inline double tcv_e2m1_bits_to_f64(uint8_t b) { return tcv_decode_small(&TCV_E2M1, b & 0xF); }

#endif
