/* prelude.h — run-time support every generated CPU kernel starts with.
 *
 * This file is C, kept readable and editable as C; at build time prelude.cmake embeds it
 * (after src/base/convert.h and src/codegen/cpu_abi.h) as a string in the code generator,
 * which prints it at the top of each translation unit. It is never compiled into libtile.
 *
 * Contents: the context (error reporting), element loads/stores for every dtype, integer
 * helpers with the IR's semantics (wrapping, floor division, shifts out of range), float
 * helpers that mirror the interpreter's rounding, and the generic (any dtype, any rank)
 * tile-operation helpers: copy, reduce, gemm (through the services table), atomics.
 *
 * Before this text the generator emits the dtype codes (enum TDT_*, the values of
 * tile_dtype in <tile.h>).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define TILE_LIKELY(x) __builtin_expect(!!(x), 1)
#define TILE_UNLIKELY(x) __builtin_expect(!!(x), 0)
#if defined(__clang__)
#define TILE_IVDEP _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define TILE_IVDEP _Pragma("GCC ivdep")
#else
#define TILE_IVDEP
#endif
#define TILE_EXPORT __attribute__((visibility("default")))

/* ---------- context and errors ---------- */
typedef struct tile_ctx {
    const tile_cpu_args *a;
    int failed; /* accessed with __atomic builtins */
} tile_ctx;

static void tile_fail(tile_ctx *ctx, const char *msg) {
    int expect = 0;
    if (__atomic_compare_exchange_n(&ctx->failed, &expect, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        if (ctx->a->err && ctx->a->errlen > 0) {
            size_t n = strlen(msg);
            if ((int64_t)n >= ctx->a->errlen) n = (size_t)ctx->a->errlen - 1;
            memcpy(ctx->a->err, msg, n);
            ctx->a->err[n] = 0;
        }
    }
}
static inline int tile_failed(tile_ctx *ctx) { return __atomic_load_n(&ctx->failed, __ATOMIC_RELAXED); }

/* ---------- narrow float formats ---------- */
static float tile_e4m3_tab[256], tile_e5m2_tab[256], tile_e2m1_tab[16];
static int tile_tabs_ready;
static void tile_init_tabs(void) {
    if (__atomic_load_n(&tile_tabs_ready, __ATOMIC_ACQUIRE)) return;
    for (int i = 0; i < 256; i++) {
        tile_e4m3_tab[i] = (float)tcv_e4m3_bits_to_f64((uint8_t)i);
        tile_e5m2_tab[i] = (float)tcv_e5m2_bits_to_f64((uint8_t)i);
    }
    for (int i = 0; i < 16; i++) tile_e2m1_tab[i] = (float)tcv_e2m1_bits_to_f64((uint8_t)i);
    __atomic_store_n(&tile_tabs_ready, 1, __ATOMIC_RELEASE);
}

static inline float tile_ld_f16(const uint16_t *p, int64_t i) { return tcv_f16_bits_to_f32(p[i]); }
static inline float tile_ld_bf16(const uint16_t *p, int64_t i) { return tcv_bf16_bits_to_f32(p[i]); }
static inline float tile_ld_e4m3(const uint8_t *p, int64_t i) { return tile_e4m3_tab[p[i]]; }
static inline float tile_ld_e5m2(const uint8_t *p, int64_t i) { return tile_e5m2_tab[p[i]]; }
static inline float tile_ld_e2m1(const uint8_t *p, int64_t i) {
    return tile_e2m1_tab[(p[i >> 1] >> ((i & 1) * 4)) & 0xF];
}

/* Rounding a double to a narrow float format, as bits and as the value (a float holds every
 * value of these formats exactly). */
static inline uint16_t tile_bits_f16(double v) { return (uint16_t)tcv_encode_f64(&TCV_F16, v); }
static inline uint16_t tile_bits_bf16(double v) { return (uint16_t)tcv_encode_f64(&TCV_BF16, v); }
static inline uint8_t tile_bits_e4m3(double v) { return tcv_f64_to_e4m3_bits(v); }
static inline uint8_t tile_bits_e5m2(double v) { return tcv_f64_to_e5m2_bits(v); }
static inline uint8_t tile_bits_e2m1(double v) { return tcv_f64_to_e2m1_bits(v); }
static inline float tile_rnd_f16(double v) { return tcv_f16_bits_to_f32(tile_bits_f16(v)); }
static inline float tile_rnd_bf16(double v) { return tcv_bf16_bits_to_f32(tile_bits_bf16(v)); }
static inline float tile_rnd_e4m3(double v) { return (float)tcv_e4m3_bits_to_f64(tile_bits_e4m3(v)); }
static inline float tile_rnd_e5m2(double v) { return (float)tcv_e5m2_bits_to_f64(tile_bits_e5m2(v)); }
static inline float tile_rnd_e2m1(double v) { return (float)tcv_e2m1_bits_to_f64(tile_bits_e2m1(v)); }

/* Stores from an f32 value (fast paths) and from an f64 value (one rounding). */
static inline void tile_st_f16_f(uint16_t *p, int64_t i, float v) { p[i] = tcv_f32_to_f16_bits(v); }
static inline void tile_st_bf16_f(uint16_t *p, int64_t i, float v) { p[i] = tcv_f32_to_bf16_bits(v); }
static inline void tile_st_f16_d(uint16_t *p, int64_t i, double v) { p[i] = tile_bits_f16(v); }
static inline void tile_st_bf16_d(uint16_t *p, int64_t i, double v) { p[i] = tile_bits_bf16(v); }
static inline void tile_st_e4m3(uint8_t *p, int64_t i, double v) { p[i] = tile_bits_e4m3(v); }
static inline void tile_st_e5m2(uint8_t *p, int64_t i, double v) { p[i] = tile_bits_e5m2(v); }
/* fp4: two elements share a byte; the update of one nibble is atomic so that two threads
 * writing the two halves of a byte (legal: different elements) cannot lose a write. */
static inline void tile_st_e2m1(uint8_t *p, int64_t i, double v) {
    unsigned sh = (unsigned)(i & 1) * 4;
    uint8_t b = (uint8_t)(tile_bits_e2m1(v) << sh);
    __atomic_fetch_and(&p[i >> 1], (uint8_t)~(0xFu << sh), __ATOMIC_RELAXED);
    __atomic_fetch_or(&p[i >> 1], b, __ATOMIC_RELAXED);
}

/* ---------- float -> integer (truncate, saturate, NaN -> 0), as tile_f64_to_int ---------- */
static inline int8_t tile_f2i_i8(double v) { return isnan(v) ? 0 : v <= -128.0 ? -128 : v >= 127.0 ? 127 : (int8_t)v; }
static inline int16_t tile_f2i_i16(double v) { return isnan(v) ? 0 : v <= -32768.0 ? -32768 : v >= 32767.0 ? 32767 : (int16_t)v; }
static inline int32_t tile_f2i_i32(double v) {
    return isnan(v) ? 0 : v <= -2147483648.0 ? INT32_MIN : v >= 2147483647.0 ? INT32_MAX : (int32_t)v;
}
static inline int64_t tile_f2i_i64(double v) {
    return isnan(v) ? 0 : v <= -9223372036854775808.0 ? INT64_MIN : v >= 9223372036854775808.0 ? INT64_MAX : (int64_t)v;
}
static inline uint8_t tile_f2i_u8(double v) { return isnan(v) ? 0 : v <= 0.0 ? 0 : v >= 255.0 ? 255 : (uint8_t)v; }
static inline uint16_t tile_f2i_u16(double v) { return isnan(v) ? 0 : v <= 0.0 ? 0 : v >= 65535.0 ? 65535 : (uint16_t)v; }
static inline uint32_t tile_f2i_u32(double v) { return isnan(v) ? 0 : v <= 0.0 ? 0 : v >= 4294967295.0 ? UINT32_MAX : (uint32_t)v; }
static inline uint64_t tile_f2i_u64(double v) {
    return isnan(v) ? 0 : v <= 0.0 ? 0 : v >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)v;
}

/* ---------- integer helpers (the IR's semantics; see src/ir/ir.h) ----------
 * T: the C type, U: an unsigned type of at least 32 bits to compute in, B: bits, S: signed. */
#define TILE_INT_HELPERS(N, T, U, B, S)                                                          \
    static inline T tile_min_##N(T a, T b) { return a < b ? a : b; }                            \
    static inline T tile_max_##N(T a, T b) { return a > b ? a : b; }                            \
    static inline T tile_abs_##N(T a) { return S ? (a < 0 ? (T)((U)0 - (U)a) : a) : a; }        \
    static inline T tile_shl_##N(T a, T b) {                                                    \
        if (S ? ((int64_t)b < 0 || (int64_t)b >= B) : ((uint64_t)b >= B)) return 0;            \
        return (T)((U)a << (unsigned)b);                                                        \
    }                                                                                           \
    static inline T tile_shr_##N(T a, T b) {                                                    \
        if (S ? ((int64_t)b < 0 || (int64_t)b >= B) : ((uint64_t)b >= B)) return (S && a < 0) ? (T)-1 : 0; \
        if (!S) return (T)((U)a >> (unsigned)b);                                                \
        return a >= 0 ? (T)(a >> (unsigned)b) : (T)~(T)(~(U)a >> (unsigned)b);                  \
    }                                                                                           \
    static inline T tile_div_##N(tile_ctx *ctx, T a, T b, const char *where) {                 \
        if (TILE_UNLIKELY(b == 0)) { tile_fail(ctx, where); return 0; }                         \
        if (!S) return (T)(a / b);                                                              \
        if ((int64_t)b == -1) return (T)((U)0 - (U)a);                                          \
        return (T)((int64_t)a / (int64_t)b);                                                    \
    }                                                                                           \
    static inline T tile_floordiv_##N(tile_ctx *ctx, T a, T b, const char *where) {            \
        if (TILE_UNLIKELY(b == 0)) { tile_fail(ctx, where); return 0; }                         \
        if (!S) return (T)(a / b);                                                              \
        if ((int64_t)b == -1) return (T)((U)0 - (U)a);                                          \
        int64_t q = (int64_t)a / (int64_t)b;                                                    \
        if (((int64_t)a % (int64_t)b != 0) && (((int64_t)a < 0) != ((int64_t)b < 0))) q--;      \
        return (T)q;                                                                            \
    }                                                                                           \
    static inline T tile_floormod_##N(tile_ctx *ctx, T a, T b, const char *where) {            \
        if (TILE_UNLIKELY(b == 0)) { tile_fail(ctx, where); return 0; }                         \
        if (!S) return (T)(a % b);                                                              \
        if ((int64_t)b == -1) return 0;                                                         \
        int64_t r = (int64_t)a % (int64_t)b;                                                    \
        if (r != 0 && ((r < 0) != ((int64_t)b < 0))) r += (int64_t)b;                           \
        return (T)r;                                                                            \
    }                                                                                           \
    static inline T tile_pow_##N(tile_ctx *ctx, T a, T b, const char *where) {                 \
        if (S && (int64_t)b < 0) {                                                              \
            if (a == 0) { tile_fail(ctx, where); return 0; }                                    \
            if ((int64_t)a == 1) return 1;                                                      \
            if ((int64_t)a == -1) return ((int64_t)b & 1) ? (T)-1 : 1;                          \
            return 0;                                                                           \
        }                                                                                       \
        uint64_t r = 1, x = (uint64_t)(int64_t)a, n = (uint64_t)(int64_t)b;                     \
        if (!S) n = (uint64_t)b;                                                                \
        while (n) { if (n & 1) r *= x; x *= x; n >>= 1; }                                       \
        return (T)r;                                                                            \
    }
TILE_INT_HELPERS(i8, int8_t, uint32_t, 8, 1)
TILE_INT_HELPERS(i16, int16_t, uint32_t, 16, 1)
TILE_INT_HELPERS(i32, int32_t, uint32_t, 32, 1)
TILE_INT_HELPERS(i64, int64_t, uint64_t, 64, 1)
TILE_INT_HELPERS(u8, uint8_t, uint32_t, 8, 0)
TILE_INT_HELPERS(u16, uint16_t, uint32_t, 16, 0)
TILE_INT_HELPERS(u32, uint32_t, uint32_t, 32, 0)
TILE_INT_HELPERS(u64, uint64_t, uint64_t, 64, 0)

/* Python floor division / modulo of index arithmetic (int64, divisor known positive). */
static inline int64_t tile_ifloordiv(int64_t a, int64_t b) { int64_t q = a / b; return (a % b != 0 && a < 0) ? q - 1 : q; }
static inline int64_t tile_ifloormod(int64_t a, int64_t b) { int64_t r = a % b; return (r < 0) ? r + b : r; }

/* ---------- float helpers: computed in double and rounded once, as the interpreter ---------- */
static inline float tile_floordiv_f32(float a, float b) { return (float)floor((double)a / (double)b); }
static inline float tile_floormod_f32(float a, float b) { double x = a, y = b; return (float)(x - floor(x / y) * y); }
static inline double tile_floordiv_f64(double a, double b) { return floor(a / b); }
static inline double tile_floormod_f64(double a, double b) { return a - floor(a / b) * b; }
static inline float tile_sigmoid_f32(float x) { return (float)(1.0 / (1.0 + exp(-(double)x))); }
static inline double tile_sigmoid_f64(double x) { return 1.0 / (1.0 + exp(-x)); }

/* fmax/fmin of two floats, as glibc's: a NaN operand gives the other one, equal operands
 * (-0 and +0 too) give the first. A select, so loops over it vectorise. */
static inline float tile_fmaxf(float a, float b) { return (b > a || a != a) ? b : a; }
static inline float tile_fminf(float a, float b) { return (b < a || a != a) ? b : a; }
/* the combiners of max/min reduction loops (c.c: `omp simd reduction(tile_fmax:...)`); NaN
 * is their identity (fmax(NaN, x) = x), so an all-NaN row still gives NaN */
#pragma omp declare reduction(tile_fmax : float : omp_out = tile_fmaxf(omp_out, omp_in)) initializer(omp_priv = __builtin_nanf(""))
#pragma omp declare reduction(tile_fmin : float : omp_out = tile_fminf(omp_out, omp_in)) initializer(omp_priv = __builtin_nanf(""))

/* exp of a float, branch-free so that loops over it vectorise (the f32 `exp` of generated
 * code; docs/backends.md). x = n ln2 + r with |r| <= ln2/2 (n = nearest integer to x/ln2,
 * the magic-constant rounding; ln2 in two parts, products with fmaf), e^r by its Taylor
 * polynomial of degree 7 (truncation < 6e-9 relative), then scaled by 2^n in two steps so
 * that subnormal results and the overflow to +inf come out of the multiplications.
 * Measured error against the correctly rounded value: at most 1 ulp (tests/cpu, the
 * cpu.expf test: [-110, 100], and every 509th float of [-104, 89]). NaN gives NaN, +-inf
 * give inf and 0.
 * The range is clamped in two cheap steps (one select each when vectorised: a float
 * two-sided clamp became an 11-instruction mask sequence with gcc): x from below at -110
 * (a NaN passes), n from above at 144 as an integer (vpminsd), nf = (float)n. Above 100
 * this gives what clamping x at 100 gave, +inf (r = x - 144 ln2 > 0: p >= 1, or +inf for x
 * = +inf, then times 2^144); elsewhere every step is the one before the change (the same
 * value for each of the 2^32 inputs, checked with the old form side by side). */
static inline float tile_expf(float x) {
    float xc = x < -110.0f ? -110.0f : x; /* a NaN passes */
    float t = fmaf(xc, 0x1.715476p+0f, 0x1.8p23f);
    int32_t ti, tm;
    float m = 0x1.8p23f;
    memcpy(&ti, &t, 4);
    memcpy(&tm, &m, 4);
    int32_t n = ti - tm; /* no overflow: t > 0 (ti > 0) but for a NaN with the sign bit (ti >= -2^23) */
    n = n > 144 ? 144 : n;
    float nf = (float)n;
    float r = fmaf(nf, -0x1.62e430p-1f, xc);
    r = fmaf(nf, 0x1.05c610p-29f, r);
    float p = 0x1.a01a02p-13f;             /* 1/7! */
    p = fmaf(p, r, 0x1.6c16c2p-10f);      /* 1/6! */
    p = fmaf(p, r, 0x1.111112p-7f);       /* 1/5! */
    p = fmaf(p, r, 0x1.555556p-5f);       /* 1/4! */
    p = fmaf(p, r, 0x1.555556p-3f);       /* 1/3! */
    p = fmaf(p, r, 0x1.000000p-1f);       /* 1/2! */
    p = fmaf(p, r, 1.0f);
    p = fmaf(p, r, 1.0f);
    int32_t n1 = n >> 1, n2 = n - n1;
    int32_t b1 = (n1 + 127) << 23, b2 = (n2 + 127) << 23;
    float s1, s2;
    memcpy(&s1, &b1, 4);
    memcpy(&s2, &b2, 4);
    return (p * s1) * s2;
}

/* bits of a float value of a narrow format (the value is exactly representable) */
static inline uint64_t tile_fbits(int dt, double v) {
    switch (dt) {
    case TDT_F16: return tile_bits_f16(v);
    case TDT_BF16: return tile_bits_bf16(v);
    case TDT_F32: { float f = (float)v; uint32_t u; memcpy(&u, &f, 4); return u; }
    case TDT_F64: { uint64_t u; memcpy(&u, &v, 8); return u; }
    case TDT_FP8_E4M3: return tile_bits_e4m3(v);
    case TDT_FP8_E5M2: return tile_bits_e5m2(v);
    default: return tile_bits_e2m1(v);
    }
}
static inline double tile_bits_fval(int dt, uint64_t b) {
    switch (dt) {
    case TDT_F16: return tcv_f16_bits_to_f32((uint16_t)b);
    case TDT_BF16: return tcv_bf16_bits_to_f32((uint16_t)b);
    case TDT_F32: { uint32_t u = (uint32_t)b; float f; memcpy(&f, &u, 4); return f; }
    case TDT_F64: { double d; memcpy(&d, &b, 8); return d; }
    case TDT_FP8_E4M3: return tcv_e4m3_bits_to_f64((uint8_t)b);
    case TDT_FP8_E5M2: return tcv_e5m2_bits_to_f64((uint8_t)b);
    default: return tcv_e2m1_bits_to_f64((uint8_t)b);
    }
}

/* integer -> float rounds once from the exact integer (C's int64 -> float conversion does;
 * for the narrow formats the shared encoder does) */
static inline const tcv_fmt *tile_fmt(int dt) {
    switch (dt) {
    case TDT_F16: return &TCV_F16;
    case TDT_BF16: return &TCV_BF16;
    case TDT_FP8_E4M3: return &TCV_E4M3;
    case TDT_FP8_E5M2: return &TCV_E5M2;
    case TDT_F32: return &TCV_F32;
    default: return &TCV_E2M1;
    }
}
static inline float tile_i2n(int dt, int64_t v) { return (float)tile_bits_fval(dt, tcv_encode_i64(tile_fmt(dt), v)); }
static inline float tile_u2n(int dt, uint64_t v) {
    return v ? (float)tile_bits_fval(dt, tcv_encode_exact(tile_fmt(dt), false, v, 0)) : 0.0f;
}

/* ---------- generic values (any dtype), mirroring the interpreter ---------- */
typedef union tile_val { int64_t i; double f; } tile_val;
static const signed char tile_dt_kind[TDT_COUNT] = TILE_DT_KINDS; /* 'B' 'I' 'U' 'F' */
static const signed char tile_dt_bits[TDT_COUNT] = TILE_DT_BITS;
#define TILE_ISF(dt) (tile_dt_kind[dt] == 'F')
#define TILE_ISU(dt) (tile_dt_kind[dt] == 'U')

static inline int64_t tile_wrapi(int dt, int64_t v) {
    switch (dt) {
    case TDT_BOOL: return v != 0;
    case TDT_I8: return (int8_t)v;
    case TDT_I16: return (int16_t)v;
    case TDT_I32: return (int32_t)v;
    case TDT_U8: return (uint8_t)v;
    case TDT_U16: return (uint16_t)v;
    case TDT_U32: return (uint32_t)v;
    default: return v;
    }
}
static inline int64_t tile_f2i(int dt, double v) {
    switch (dt) {
    case TDT_BOOL: return v != 0.0;
    case TDT_I8: return tile_f2i_i8(v);
    case TDT_I16: return tile_f2i_i16(v);
    case TDT_I32: return tile_f2i_i32(v);
    case TDT_I64: return tile_f2i_i64(v);
    case TDT_U8: return tile_f2i_u8(v);
    case TDT_U16: return tile_f2i_u16(v);
    case TDT_U32: return tile_f2i_u32(v);
    default: return (int64_t)tile_f2i_u64(v);
    }
}
static inline double tile_rnd(int dt, double x) {
    switch (dt) {
    case TDT_F32: return (double)(float)x;
    case TDT_F64: return x;
    default: return tile_bits_fval(dt, tile_fbits(dt, x));
    }
}
static inline tile_val tile_conv(tile_val v, int from, int to) {
    tile_val r;
    if (TILE_ISF(to)) {
        if (TILE_ISF(from)) r.f = tile_rnd(to, v.f);
        else if (to == TDT_F64) r.f = from == TDT_U64 ? (double)(uint64_t)v.i : (double)v.i;
        else if (to == TDT_F32) r.f = from == TDT_U64 ? (double)(float)(uint64_t)v.i : (double)(float)v.i;
        else r.f = from == TDT_U64 ? tile_u2n(to, (uint64_t)v.i) : tile_i2n(to, v.i);
    } else if (to == TDT_BOOL) {
        r.i = TILE_ISF(from) ? (v.f != 0) : (v.i != 0);
    } else {
        r.i = TILE_ISF(from) ? tile_f2i(to, v.f) : tile_wrapi(to, v.i);
    }
    return r;
}
static inline tile_val tile_gld(int dt, const void *base, int64_t i) {
    tile_val v;
    switch (dt) {
    case TDT_BOOL: case TDT_U8: v.i = ((const uint8_t *)base)[i]; break;
    case TDT_I8: v.i = ((const int8_t *)base)[i]; break;
    case TDT_I16: v.i = ((const int16_t *)base)[i]; break;
    case TDT_I32: v.i = ((const int32_t *)base)[i]; break;
    case TDT_I64: v.i = ((const int64_t *)base)[i]; break;
    case TDT_U16: v.i = ((const uint16_t *)base)[i]; break;
    case TDT_U32: v.i = ((const uint32_t *)base)[i]; break;
    case TDT_U64: v.i = (int64_t)((const uint64_t *)base)[i]; break;
    case TDT_F16: v.f = tile_ld_f16((const uint16_t *)base, i); break;
    case TDT_BF16: v.f = tile_ld_bf16((const uint16_t *)base, i); break;
    case TDT_F32: v.f = ((const float *)base)[i]; break;
    case TDT_F64: v.f = ((const double *)base)[i]; break;
    case TDT_FP8_E4M3: v.f = tile_ld_e4m3((const uint8_t *)base, i); break;
    case TDT_FP8_E5M2: v.f = tile_ld_e5m2((const uint8_t *)base, i); break;
    default: v.f = tile_ld_e2m1((const uint8_t *)base, i); break;
    }
    return v;
}
/* v in the domain of dt's class (double for floats, already rounded or not: floats round here) */
static inline void tile_gst(int dt, void *base, int64_t i, tile_val v) {
    switch (dt) {
    case TDT_BOOL: ((uint8_t *)base)[i] = (uint8_t)(v.i != 0); break;
    case TDT_U8: case TDT_I8: ((uint8_t *)base)[i] = (uint8_t)v.i; break;
    case TDT_I16: case TDT_U16: ((uint16_t *)base)[i] = (uint16_t)v.i; break;
    case TDT_I32: case TDT_U32: ((uint32_t *)base)[i] = (uint32_t)v.i; break;
    case TDT_I64: case TDT_U64: ((uint64_t *)base)[i] = (uint64_t)v.i; break;
    case TDT_F16: tile_st_f16_d((uint16_t *)base, i, v.f); break;
    case TDT_BF16: tile_st_bf16_d((uint16_t *)base, i, v.f); break;
    case TDT_F32: ((float *)base)[i] = (float)v.f; break;
    case TDT_F64: ((double *)base)[i] = v.f; break;
    case TDT_FP8_E4M3: tile_st_e4m3((uint8_t *)base, i, v.f); break;
    case TDT_FP8_E5M2: tile_st_e5m2((uint8_t *)base, i, v.f); break;
    default: tile_st_e2m1((uint8_t *)base, i, v.f); break;
    }
}
static inline int tile_compute_dt(int dt) {
    if (!TILE_ISF(dt)) return dt;
    return dt == TDT_F64 ? TDT_F64 : TDT_F32;
}

/* ---------- regions (operands of tile operations) ---------- */
typedef struct tile_rgn {
    int dt, rank;
    void *base;
    int64_t n[8], s[8];     /* buffer shape and strides (elements) */
    int64_t st[8], ex[8];   /* box start and extent */
    int64_t count;
} tile_rgn;

static inline int tile_rgn_off(const tile_rgn *g, const int64_t *t, int64_t *off) {
    int64_t o = 0;
    for (int d = 0; d < g->rank; d++) {
        int64_t p = g->st[d] + t[d];
        if ((uint64_t)p >= (uint64_t)g->n[d]) return 0;
        o += p * g->s[d];
    }
    *off = o;
    return 1;
}
static inline void tile_odo_next(const tile_rgn *g, int64_t *t) {
    for (int d = g->rank - 1; d >= 0; d--) {
        if (++t[d] < g->ex[d]) return;
        t[d] = 0;
    }
}
static void tile_rgn_count(tile_rgn *g) {
    g->count = 1;
    for (int d = 0; d < g->rank; d++) g->count *= g->ex[d] < 0 ? 0 : g->ex[d];
}

/* COPY: element k of the source box (row-major) to element k of the destination box. */
static void tile_copy_generic(tile_ctx *ctx, tile_rgn *src, tile_rgn *dst, const char *where) {
    tile_rgn_count(src);
    tile_rgn_count(dst);
    if (src->count != dst->count) { tile_fail(ctx, where); return; }
    int64_t ts[8] = {0}, td[8] = {0};
    for (int64_t k = 0; k < src->count; k++) {
        int64_t so, doff;
        tile_val v = {0};
        if (tile_rgn_off(dst, td, &doff)) {
            if (tile_rgn_off(src, ts, &so)) v = tile_conv(tile_gld(src->dt, src->base, so), src->dt, dst->dt);
            else if (TILE_ISF(dst->dt)) v.f = 0.0;
            tile_gst(dst->dt, dst->base, doff, v);
        }
        tile_odo_next(src, ts);
        tile_odo_next(dst, td);
    }
}

/* REDUCE: dst[o] = op over dim `dim` of the source box (clipped elements do not take part). */
enum { TILE_RED_SUM = 0, TILE_RED_MAX = 1, TILE_RED_MIN = 2, TILE_RED_ABSSUM = 3, TILE_RED_ABSMAX = 4 };
/* f32 along a contiguous run: 16 lanes (GCC/Clang vector extensions: AVX-512, two AVX2
 * registers, or scalar code, whatever -march gives), the lanes combined at the end. Sums are
 * reassociated (within the f32 tolerance of docs/cli.md, as any vectorised sum); max/min are
 * exact and keep fmax/fmin's rule that a NaN element does not count. */
typedef float tile_v16f __attribute__((vector_size(64)));
typedef int32_t tile_v16i __attribute__((vector_size(64)));
/* macros, not functions: vectors passed by value would change the ABI between -march levels */
#define TILE_V16_LD(v, p) memcpy(&(v), (p), sizeof(v))
#define TILE_V16_SEL(m, a, b) ((tile_v16f)(((m) & (tile_v16i)(a)) | (~(m) & (tile_v16i)(b))))
typedef float tile_v8f __attribute__((vector_size(32)));
typedef float tile_v4f __attribute__((vector_size(16)));
typedef int32_t tile_v8i __attribute__((vector_size(32)));
typedef int32_t tile_v4i __attribute__((vector_size(16)));
/* the 16 lanes folded in halves (16 -> 8 -> 4 -> 1): sum, or fmax/fmin (mx > 0 / mx == 0) */
static inline float tile_hfold16(const tile_v16f *a, int sum, int mx) {
    tile_v8f l8, h8;
    memcpy(&l8, a, 32);
    memcpy(&h8, (const char *)a + 32, 32);
    if (sum) l8 += h8;
    else {
        tile_v8i m = mx ? (h8 > l8) : (h8 < l8);
        l8 = (tile_v8f)((m & (tile_v8i)h8) | (~m & (tile_v8i)l8));
    }
    tile_v4f l4, h4;
    memcpy(&l4, &l8, 16);
    memcpy(&h4, (const char *)&l8 + 16, 16);
    if (sum) l4 += h4;
    else {
        tile_v4i m = mx ? (h4 > l4) : (h4 < l4);
        l4 = (tile_v4f)((m & (tile_v4i)h4) | (~m & (tile_v4i)l4));
    }
    if (sum) return (l4[0] + l4[1]) + (l4[2] + l4[3]);
    float x = mx ? tile_fmaxf(l4[0], l4[1]) : tile_fminf(l4[0], l4[1]);
    float y = mx ? tile_fmaxf(l4[2], l4[3]) : tile_fminf(l4[2], l4[3]);
    return mx ? tile_fmaxf(x, y) : tile_fminf(x, y);
}
static inline __attribute__((always_inline)) float tile_run_f32(const float *p, int64_t n, int op) {
    int64_t k = 0;
    int abs_ = op == TILE_RED_ABSSUM || op == TILE_RED_ABSMAX;
    tile_v16i nosign = {0};
    nosign += 0x7fffffff;
    if (op == TILE_RED_SUM || op == TILE_RED_ABSSUM) {
        tile_v16f a0 = {0}, a1 = {0};
        for (; k + 32 <= n; k += 32) {
            tile_v16f x0, x1;
            TILE_V16_LD(x0, p + k);
            TILE_V16_LD(x1, p + k + 16);
            if (abs_) { x0 = (tile_v16f)((tile_v16i)x0 & nosign); x1 = (tile_v16f)((tile_v16i)x1 & nosign); }
            a0 += x0;
            a1 += x1;
        }
        a0 += a1;
        float s = tile_hfold16(&a0, 1, 0);
        for (; k < n; k++) s += abs_ ? fabsf(p[k]) : p[k];
        return s;
    }
    int mx = op != TILE_RED_MIN;
    float init = mx ? -INFINITY : INFINITY;
    tile_v16f a = {0};
    a += init;
    for (; k + 16 <= n; k += 16) {
        tile_v16f x;
        TILE_V16_LD(x, p + k);
        if (abs_) x = (tile_v16f)((tile_v16i)x & nosign);
        tile_v16i m = mx ? (x > a) : (x < a); /* a NaN x compares false */
        a = TILE_V16_SEL(m, x, a);
    }
    float r = tile_hfold16(&a, 0, mx); /* lanes are never NaN: the selects are exact */
    for (; k < n; k++) {
        float x = abs_ ? fabsf(p[k]) : p[k];
        r = mx ? tile_fmaxf(r, x) : tile_fminf(r, x);
    }
    return r;
}

static inline void tile_clip(int64_t st, int64_t ex, int64_t n, int64_t *lo, int64_t *hi);
/* the f32 -> f32 reduction along the last, contiguous dimension; 0 if it does not apply */
static int tile_reduce_f32_last(tile_rgn *src, tile_rgn *dst, int dim, int op, int clear, int64_t nout) {
    int r = src->rank;
    if (src->dt != TDT_F32 || dst->dt != TDT_F32 || dim != r - 1 || src->s[dim] != 1 || r > 8) return 0;
    int64_t k0, k1;
    tile_clip(src->st[dim], src->ex[dim], src->n[dim], &k0, &k1);
    int64_t ts[8] = {0}, td[8] = {0};
    for (int64_t o = 0; o < nout; o++) {
        int64_t doff;
        if (tile_rgn_off(dst, td, &doff)) {
            float *d = (float *)dst->base + doff;
            float acc = clear ? (op == TILE_RED_MAX ? -INFINITY : op == TILE_RED_MIN ? INFINITY : 0.0f) : *d; /* as below */
            ts[dim] = 0;
            int row_in = 1;
            int64_t ro = 0;
            for (int q = 0; q < r - 1; q++) {
                int64_t p = src->st[q] + ts[q];
                if ((uint64_t)p >= (uint64_t)src->n[q]) row_in = 0;
                ro += p * src->s[q];
            }
            if (row_in && k1 > k0) {
                float v = tile_run_f32((const float *)src->base + ro + src->st[dim] + k0, k1 - k0, op);
                if (op == TILE_RED_SUM || op == TILE_RED_ABSSUM) acc += v;
                else if (op == TILE_RED_MIN) acc = tile_fminf(acc, v);
                else acc = tile_fmaxf(acc, v);
            }
            *d = acc;
        }
        for (int q = r - 2; q >= 0; q--) {
            if (++ts[q] < src->ex[q]) break;
            ts[q] = 0;
        }
        tile_odo_next(dst, td);
    }
    return 1;
}

static void tile_reduce_generic(tile_ctx *ctx, tile_rgn *src, tile_rgn *dst, int dim, int op, int clear, const char *where) {
    tile_rgn_count(src);
    tile_rgn_count(dst);
    int64_t len = src->ex[dim], nout = 1;
    for (int d = 0; d < src->rank; d++)
        if (d != dim) nout *= src->ex[d];
    if (nout != dst->count) { tile_fail(ctx, where); return; }
    if (tile_reduce_f32_last(src, dst, dim, op, clear, nout)) return;
    int dd = dst->dt, ct = tile_compute_dt(dd), sd = src->dt;
    int fl = TILE_ISF(ct), bits = tile_dt_bits[ct];
    int64_t imin = TILE_ISU(ct) ? 0 : (bits >= 64 ? INT64_MIN : -((int64_t)1 << (bits - 1)));
    int64_t imax = TILE_ISU(ct) ? (bits >= 64 ? -1 : (int64_t)(((uint64_t)1 << bits) - 1))
                                : (bits >= 64 ? INT64_MAX : ((int64_t)1 << (bits - 1)) - 1);
    if (ct == TDT_BOOL) { imin = 0; imax = 1; }
    int64_t ts[8] = {0}, td[8] = {0};
    for (int64_t o = 0; o < nout; o++) {
        int64_t doff;
        if (tile_rgn_off(dst, td, &doff)) {
            tile_val acc;
            if (!clear) acc = tile_conv(tile_gld(dd, dst->base, doff), dd, ct);
            else if (fl) acc.f = op == TILE_RED_MAX ? -INFINITY : op == TILE_RED_MIN ? INFINITY : 0.0;
            else acc.i = op == TILE_RED_MAX ? imin : op == TILE_RED_MIN ? imax : 0;
            for (int64_t k = 0; k < len; k++) {
                ts[dim] = k;
                int64_t so;
                if (!tile_rgn_off(src, ts, &so)) continue;
                tile_val x = tile_conv(tile_gld(sd, src->base, so), sd, ct);
                if (fl) {
                    double v = x.f;
                    if (op == TILE_RED_ABSSUM || op == TILE_RED_ABSMAX) v = fabs(v);
                    if (op == TILE_RED_SUM || op == TILE_RED_ABSSUM) acc.f = tile_rnd(ct, acc.f + v);
                    else if (op == TILE_RED_MIN) acc.f = fmin(acc.f, v);
                    else acc.f = fmax(acc.f, v);
                } else {
                    int64_t v = x.i;
                    int u = TILE_ISU(ct);
                    if ((op == TILE_RED_ABSSUM || op == TILE_RED_ABSMAX) && !u && v < 0) v = tile_wrapi(ct, (int64_t)(0 - (uint64_t)v));
                    if (op == TILE_RED_SUM || op == TILE_RED_ABSSUM) acc.i = tile_wrapi(ct, (int64_t)((uint64_t)acc.i + (uint64_t)v));
                    else if (op == TILE_RED_MIN) acc.i = u ? ((uint64_t)v < (uint64_t)acc.i ? v : acc.i) : (v < acc.i ? v : acc.i);
                    else acc.i = u ? ((uint64_t)v > (uint64_t)acc.i ? v : acc.i) : (v > acc.i ? v : acc.i);
                }
            }
            tile_gst(dd, dst->base, doff, tile_conv(acc, ct, dd));
        }
        ts[dim] = 0;
        for (int d = src->rank - 1; d >= 0; d--) {
            if (d == dim) continue;
            if (++ts[d] < src->ex[d]) break;
            ts[d] = 0;
        }
        tile_odo_next(dst, td);
    }
}

/* f32 copy of a contiguous run with streaming (non-temporal) stores where the ISA has them:
 * the destination's lines are not read first, which saves a third of the memory traffic of
 * writing a tensor. Callers end the copy with tile_sfence() (streaming stores are weakly
 * ordered) before anything else can read the data. */
#if defined(__AVX512F__) || defined(__AVX__)
#include <immintrin.h>
#endif
static inline void tile_copy_f32_nt(float *d, const float *s, int64_t n) {
    int64_t i = 0;
#if defined(__AVX512F__)
    for (; i < n && ((uintptr_t)(d + i) & 63); i++) d[i] = s[i];
    for (; i + 16 <= n; i += 16) _mm512_stream_ps(d + i, _mm512_loadu_ps(s + i));
#elif defined(__AVX__)
    for (; i < n && ((uintptr_t)(d + i) & 31); i++) d[i] = s[i];
    for (; i + 8 <= n; i += 8) _mm256_stream_ps(d + i, _mm256_loadu_ps(s + i));
#endif
    for (; i < n; i++) d[i] = s[i];
}
/* one vector of f32 from an aligned array to an aligned destination with a streaming store
 * (c.c's streaming write loops); TILE_NT_W lanes */
#if defined(__AVX512F__)
#define TILE_NT_W 16
static inline void tile_stream_f32v(float *d, const float *s) { _mm512_stream_ps(d, _mm512_load_ps(s)); }
#elif defined(__AVX__)
#define TILE_NT_W 8
static inline void tile_stream_f32v(float *d, const float *s) { _mm256_stream_ps(d, _mm256_load_ps(s)); }
#else
#define TILE_NT_W 16
static inline void tile_stream_f32v(float *d, const float *s) { memcpy(d, s, TILE_NT_W * sizeof(float)); }
#endif
/* TILE_NT_W f32 lanes as one vector value (a register): the lane partial sums of c.c's sum
 * with a streaming write riding along (gfor_sum_nt), added from a 64-byte-aligned array
 * (may_alias: read through this type) */
typedef float tile_f32v __attribute__((vector_size(TILE_NT_W * 4), may_alias));
/* locality of the next-row prefetches of streaming write loops (c.c, gfor_nt): 2 = into L2
 * (prefetcht1): an L1 prefetch of the next row evicted the row being re-read */
#ifndef TILE_ROW_PREFETCH
#define TILE_ROW_PREFETCH 2
#endif
static inline void tile_sfence(void) {
#if defined(__AVX512F__) || defined(__AVX__)
    _mm_sfence();
#endif
}

/* ---------- the read pass of row kernels (c.c, grow_read: rowfuse's chunk max and
 * exp-and-sum loops) ----------
 * tile_exp_f32x16 is tile_expf on 16 lanes with AVX-512's vscalefps for the final
 * multiplication by 2^n: the same clamp, n, reduction and polynomial, then p * 2^n rounded
 * once, as tile_expf's (p * 2^n1) * 2^n2 is (p * 2^n1 is exact: n1 >= -80), so every input
 * gives tile_expf's value (NaN gives a NaN). 17 vector operations instead of ~26: the n1/n2
 * split, shifts and bias adds that the compiler must build from the scalar code become one
 * instruction; the clamp is one vmaxps and one vminps.
 * tile_row_maxf(x, n, m) folds x[0..n) into m as `m = tile_fmaxf(m, x[j])` does (NaN
 * elements skipped, fmax) with four independent 16-lane accumulators; a chunk whose elements
 * are all -inf or NaN takes the scalar fold (exact in every case).
 * tile_row_expsumf(x, e, n, sh, s) returns s + sum_j exp(x[j] - sh) and stores each exp into
 * e[j] when e is not NULL; two accumulators (summed in another order than a loop would: the
 * tolerance of a reduction, as the omp simd loop it replaces). It is the compute-heavy part
 * of the row (the memory reads sit idle while it runs), so it prefetches x TILE_ROW_AHEAD
 * elements ahead into L1: one chunk of rowfuse's read pass, the next row's first chunk at a
 * row's last (a prefetch past the tensor is dropped, never faults). The row's write loop then
 * prefetches nothing (c.c: prefetching the next row there as well measured slower).
 * With AVX2 + FMA (no AVX-512) both have 8-lane versions (tile_exp_f32x8: tile_expf's
 * operations lane by lane, the same value for every input); without either they are the
 * loops they replace. */
#ifndef TILE_ROW_AHEAD
#define TILE_ROW_AHEAD 2048
#endif
#if defined(__AVX512F__)
static inline __m512 tile_exp_f32x16(__m512 x) {
    const __m512 mg = _mm512_set1_ps(0x1.8p23f);
    __m512 xc = _mm512_max_ps(_mm512_set1_ps(-110.0f), x); /* (a > b) ? a : b: a NaN x passes */
    __m512 nf = _mm512_sub_ps(_mm512_fmadd_ps(xc, _mm512_set1_ps(0x1.715476p+0f), mg), mg);
    nf = _mm512_min_ps(nf, _mm512_set1_ps(144.0f));
    __m512 r = _mm512_fmadd_ps(nf, _mm512_set1_ps(-0x1.62e430p-1f), xc);
    r = _mm512_fmadd_ps(nf, _mm512_set1_ps(0x1.05c610p-29f), r);
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(0x1.a01a02p-13f), r, _mm512_set1_ps(0x1.6c16c2p-10f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.111112p-7f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.555556p-5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.555556p-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0x1.000000p-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, nf);
}
#elif defined(__AVX2__) && defined(__FMA__)
/* tile_expf on 8 lanes (AVX2 + FMA): the same operations in the same order, the scaling by
 * 2^n in two steps built from the exponent bits as the scalar code does, so every input gives
 * tile_expf's value */
#define TILE_ROW_AVX2 1
static inline __m256 tile_exp_f32x8(__m256 x) {
    const __m256 mg = _mm256_set1_ps(0x1.8p23f);
    __m256 xc = _mm256_max_ps(_mm256_set1_ps(-110.0f), x); /* (a > b) ? a : b: a NaN x passes */
    __m256 t = _mm256_fmadd_ps(xc, _mm256_set1_ps(0x1.715476p+0f), mg);
    __m256i n = _mm256_sub_epi32(_mm256_castps_si256(t), _mm256_castps_si256(mg));
    n = _mm256_min_epi32(n, _mm256_set1_epi32(144));
    __m256 nf = _mm256_cvtepi32_ps(n);
    __m256 r = _mm256_fmadd_ps(nf, _mm256_set1_ps(-0x1.62e430p-1f), xc);
    r = _mm256_fmadd_ps(nf, _mm256_set1_ps(0x1.05c610p-29f), r);
    __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(0x1.a01a02p-13f), r, _mm256_set1_ps(0x1.6c16c2p-10f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0x1.111112p-7f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0x1.555556p-5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0x1.555556p-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0x1.000000p-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    __m256i n1 = _mm256_srai_epi32(n, 1), n2 = _mm256_sub_epi32(n, n1);
    const __m256i bias = _mm256_set1_epi32(127);
    __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
    return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}
static inline float tile_hsum8(__m256 v) {
    __m128 a = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    a = _mm_add_ps(a, _mm_movehl_ps(a, a));
    a = _mm_add_ss(a, _mm_shuffle_ps(a, a, 1));
    return _mm_cvtss_f32(a);
}
static inline float tile_hmax8(__m256 v) {
    __m128 a = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    a = _mm_max_ps(a, _mm_movehl_ps(a, a));
    a = _mm_max_ss(a, _mm_shuffle_ps(a, a, 1));
    return _mm_cvtss_f32(a);
}
#endif
static inline float tile_row_maxf(const float *x, int64_t n, float m) {
    int64_t i = 0;
#if defined(__AVX512F__)
    if (n >= 16) {
        const __m512 ninf = _mm512_set1_ps(-__builtin_inff());
        __m512 a0 = ninf, a1 = ninf, a2 = ninf, a3 = ninf;
        for (; i + 64 <= n; i += 64) { /* max(x, a): a NaN x leaves a */
            a0 = _mm512_max_ps(_mm512_loadu_ps(x + i), a0);
            a1 = _mm512_max_ps(_mm512_loadu_ps(x + i + 16), a1);
            a2 = _mm512_max_ps(_mm512_loadu_ps(x + i + 32), a2);
            a3 = _mm512_max_ps(_mm512_loadu_ps(x + i + 48), a3);
        }
        for (; i + 16 <= n; i += 16) a0 = _mm512_max_ps(_mm512_loadu_ps(x + i), a0);
        if (i < n) a1 = _mm512_max_ps(_mm512_mask_loadu_ps(ninf, (__mmask16)((1u << (n - i)) - 1), x + i), a1);
        float r = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(a0, a1), _mm512_max_ps(a2, a3)));
        if (r != -__builtin_inff()) return tile_fmaxf(m, r);
        i = 0; /* every element -inf or NaN: the scalar fold decides between -inf, m and NaN */
    }
#elif defined(TILE_ROW_AVX2)
    if (n >= 8) {
        const __m256 ninf = _mm256_set1_ps(-__builtin_inff());
        __m256 a0 = ninf, a1 = ninf, a2 = ninf, a3 = ninf;
        for (; i + 32 <= n; i += 32) { /* max(x, a): a NaN x leaves a */
            a0 = _mm256_max_ps(_mm256_loadu_ps(x + i), a0);
            a1 = _mm256_max_ps(_mm256_loadu_ps(x + i + 8), a1);
            a2 = _mm256_max_ps(_mm256_loadu_ps(x + i + 16), a2);
            a3 = _mm256_max_ps(_mm256_loadu_ps(x + i + 24), a3);
        }
        for (; i + 8 <= n; i += 8) a0 = _mm256_max_ps(_mm256_loadu_ps(x + i), a0);
        float r = tile_hmax8(_mm256_max_ps(_mm256_max_ps(a0, a1), _mm256_max_ps(a2, a3)));
        for (; i < n; i++) r = x[i] > r ? x[i] : r; /* NaN skipped, as the vector max */
        if (r != -__builtin_inff()) return tile_fmaxf(m, r);
        i = 0; /* every element -inf or NaN: the scalar fold decides between -inf, m and NaN */
    }
#endif
    for (; i < n; i++) m = tile_fmaxf(m, x[i]);
    return m;
}
static inline float tile_row_expsumf(const float *x, float *e, int64_t n, float sh, float s) {
    int64_t i = 0;
#if defined(__AVX512F__)
    if (n >= 16) {
        const __m512 vs = _mm512_set1_ps(sh);
        __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
        for (; i + 32 <= n; i += 32) {
            _mm_prefetch((const char *)(x + i + TILE_ROW_AHEAD), _MM_HINT_T0);
            _mm_prefetch((const char *)(x + i + TILE_ROW_AHEAD + 16), _MM_HINT_T0);
            __m512 e0 = tile_exp_f32x16(_mm512_sub_ps(_mm512_loadu_ps(x + i), vs));
            __m512 e1 = tile_exp_f32x16(_mm512_sub_ps(_mm512_loadu_ps(x + i + 16), vs));
            if (e) {
                _mm512_storeu_ps(e + i, e0);
                _mm512_storeu_ps(e + i + 16, e1);
            }
            s0 = _mm512_add_ps(s0, e0);
            s1 = _mm512_add_ps(s1, e1);
        }
        if (i + 16 <= n) {
            __m512 e0 = tile_exp_f32x16(_mm512_sub_ps(_mm512_loadu_ps(x + i), vs));
            if (e) _mm512_storeu_ps(e + i, e0);
            s0 = _mm512_add_ps(s0, e0);
            i += 16;
        }
        if (i < n) {
            __mmask16 k = (__mmask16)((1u << (n - i)) - 1);
            __m512 e1 = tile_exp_f32x16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), vs));
            if (e) _mm512_mask_storeu_ps(e + i, k, e1);
            s1 = _mm512_mask_add_ps(s1, k, s1, e1);
            i = n;
        }
        s = s + _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
    }
#elif defined(TILE_ROW_AVX2)
    if (n >= 16) {
        const __m256 vs = _mm256_set1_ps(sh);
        __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
        for (; i + 16 <= n; i += 16) {
            _mm_prefetch((const char *)(x + i + TILE_ROW_AHEAD), _MM_HINT_T0);
            __m256 e0 = tile_exp_f32x8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vs));
            __m256 e1 = tile_exp_f32x8(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8), vs));
            if (e) {
                _mm256_storeu_ps(e + i, e0);
                _mm256_storeu_ps(e + i + 8, e1);
            }
            s0 = _mm256_add_ps(s0, e0);
            s1 = _mm256_add_ps(s1, e1);
        }
        s = s + tile_hsum8(_mm256_add_ps(s0, s1));
    }
#endif
    if (i < n) {
        float c = 0.0f, t;
        if (e) {
            _Pragma("omp simd reduction(+:c) private(t)")
            for (int64_t j = i; j < n; j++) { t = tile_expf(x[j] - sh); e[j] = t; c = c + t; }
        } else {
            _Pragma("omp simd reduction(+:c) private(t)")
            for (int64_t j = i; j < n; j++) { t = tile_expf(x[j] - sh); c = c + t; }
        }
        s = s + c;
    }
    return s;
}

/* tile_row_expsum_wrf(x, e, n, sh, s, y, w, g) is tile_row_expsumf(x, e, n, sh, s) with a
 * write riding along: y[j] = w[j] * g for j in [0, n), streaming stores for y's 64-byte
 * aligned vectors (masked ordinary stores for the head before the first and the tail). It is
 * rowfuse's pipelined softmax (c.c, grow_read): the write pass of the previous row (w its
 * kept exponentials, g its chunk's scale) in the same loop as this row's exponentials, so the
 * core loads, computes and streams out at once, as a memcpy does (one core of the 2-core VM:
 * 0.68 of memcpy against 0.52-0.60 with the write and the exponentials in separate loops,
 * bench/cpu/rowpipe.sh). The exponentials are tile_row_expsumf's; the sum is too when y is
 * 64-byte aligned, otherwise its lanes are split at y's alignment (the head vector is summed
 * in the tail's accumulator), so it can differ from tile_row_expsumf's in the last bits;
 * y does not overlap x, e or w. */
static inline float tile_row_expsum_wrf(const float *x, float *e, int64_t n, float sh, float s, float *y, const float *w, float g) {
    if (e && e != w && e < w + n && w < e + n) { /* e and w overlap, shifted: element by element, in order */
        float c = 0.0f;
        for (int64_t j = 0; j < n; j++) {
            float t = tile_expf(x[j] - sh);
            e[j] = t;
            c = c + t;
            y[j] = w[j] * g;
        }
        return s + c;
    }
#if defined(__AVX512F__)
    if (n >= 64) {
        const __m512 vs = _mm512_set1_ps(sh), vg = _mm512_set1_ps(g);
        __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
        int64_t i = (int64_t)((-(uintptr_t)y & 63) / 4); /* to y's next 64-byte boundary */
        if (i) {
            __mmask16 k = (__mmask16)((1u << i) - 1);
            __m512 e0 = tile_exp_f32x16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x), vs));
            if (e) _mm512_mask_storeu_ps(e, k, e0);
            s1 = _mm512_mask_add_ps(s1, k, s1, e0);
            _mm512_mask_storeu_ps(y, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, w), vg));
        }
        for (; i + 32 <= n; i += 32) {
            _mm_prefetch((const char *)(x + i + TILE_ROW_AHEAD), _MM_HINT_T0);
            _mm_prefetch((const char *)(x + i + TILE_ROW_AHEAD + 16), _MM_HINT_T0);
            __m512 e0 = tile_exp_f32x16(_mm512_sub_ps(_mm512_loadu_ps(x + i), vs));
            __m512 e1 = tile_exp_f32x16(_mm512_sub_ps(_mm512_loadu_ps(x + i + 16), vs));
            if (e) {
                _mm512_storeu_ps(e + i, e0);
                _mm512_storeu_ps(e + i + 16, e1);
            }
            s0 = _mm512_add_ps(s0, e0);
            s1 = _mm512_add_ps(s1, e1);
            _mm512_stream_ps(y + i, _mm512_mul_ps(_mm512_loadu_ps(w + i), vg));
            _mm512_stream_ps(y + i + 16, _mm512_mul_ps(_mm512_loadu_ps(w + i + 16), vg));
        }
        if (i + 16 <= n) {
            __m512 e0 = tile_exp_f32x16(_mm512_sub_ps(_mm512_loadu_ps(x + i), vs));
            if (e) _mm512_storeu_ps(e + i, e0);
            s0 = _mm512_add_ps(s0, e0);
            _mm512_stream_ps(y + i, _mm512_mul_ps(_mm512_loadu_ps(w + i), vg));
            i += 16;
        }
        if (i < n) {
            __mmask16 k = (__mmask16)((1u << (n - i)) - 1);
            __m512 e1 = tile_exp_f32x16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), vs));
            if (e) _mm512_mask_storeu_ps(e + i, k, e1);
            s1 = _mm512_mask_add_ps(s1, k, s1, e1);
            _mm512_mask_storeu_ps(y + i, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, w + i), vg));
        }
        tile_sfence();
        return s + _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
    }
#elif defined(TILE_ROW_AVX2)
    if (n >= 64) {
        const __m256 vs = _mm256_set1_ps(sh);
        float c = 0.0f;
        int64_t i = 0;
        for (; i < n && ((uintptr_t)(y + i) & 31); i++) { /* to y's next 32-byte boundary */
            float t = tile_expf(x[i] - sh);
            if (e) e[i] = t;
            c = c + t;
            y[i] = w[i] * g;
        }
        const __m256 vg = _mm256_set1_ps(g);
        __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
        for (; i + 16 <= n; i += 16) {
            _mm_prefetch((const char *)(x + i + TILE_ROW_AHEAD), _MM_HINT_T0);
            __m256 e0 = tile_exp_f32x8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vs));
            __m256 e1 = tile_exp_f32x8(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8), vs));
            if (e) {
                _mm256_storeu_ps(e + i, e0);
                _mm256_storeu_ps(e + i + 8, e1);
            }
            s0 = _mm256_add_ps(s0, e0);
            s1 = _mm256_add_ps(s1, e1);
            _mm256_stream_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(w + i), vg));
            _mm256_stream_ps(y + i + 8, _mm256_mul_ps(_mm256_loadu_ps(w + i + 8), vg));
        }
        for (; i < n; i++) {
            float t = tile_expf(x[i] - sh);
            if (e) e[i] = t;
            c = c + t;
            y[i] = w[i] * g;
        }
        tile_sfence();
        return s + (tile_hsum8(_mm256_add_ps(s0, s1)) + c);
    }
#endif
    s = tile_row_expsumf(x, e, n, sh, s);
    for (int64_t j = 0; j < n; j++) y[j] = w[j] * g;
    return s;
}

/* ---------- GEMM on regions ----------
 * C += op(A) @ op(B) on the last two dimensions of each region (leading extents are 1).
 * Regions may stick out of their buffers: out-of-bounds elements of A/B read as zero, so
 * only the in-bounds sub-box takes part; C elements outside are not written. */
static inline void tile_clip(int64_t st, int64_t ex, int64_t n, int64_t *lo, int64_t *hi) {
    int64_t a = st < 0 ? -st : 0, b = n - st < ex ? n - st : ex;
    if (b < a) b = a;
    *lo = a;
    *hi = b;
}
static inline int tile_lead_ok(const tile_rgn *g, int64_t *off) {
    int64_t o = 0;
    for (int d = 0; d < g->rank - 2; d++) {
        if ((uint64_t)g->st[d] >= (uint64_t)g->n[d]) return 0;
        o += g->st[d] * g->s[d];
    }
    *off = o;
    return 1;
}
static inline int tile_elem_ptr_ok(int dt, int64_t off) { return dt != TDT_FP4_E2M1 || (off & 1) == 0; }
static inline const void *tile_elem_ptr(int dt, const void *base, int64_t off) {
    const char *p = (const char *)base;
    if (dt == TDT_FP4_E2M1) return p + off / 2;
    int sz = tile_dt_bits[dt] / 8;
    return p + off * sz;
}

static void tile_gemm_rgn(tile_ctx *ctx, tile_rgn *A, tile_rgn *B, tile_rgn *C, int ta, int tb, int clear, int parallel,
                          const char *where_shape, const char *where_fail) {
    int ra = A->rank, rb = B->rank, rc = C->rank;
    for (int d = 0; d < ra - 2; d++) if (A->ex[d] != 1) { tile_fail(ctx, where_shape); return; }
    for (int d = 0; d < rb - 2; d++) if (B->ex[d] != 1) { tile_fail(ctx, where_shape); return; }
    for (int d = 0; d < rc - 2; d++) if (C->ex[d] != 1) { tile_fail(ctx, where_shape); return; }
    int64_t ar = A->ex[ra - 2], ac = A->ex[ra - 1], br = B->ex[rb - 2], bc = B->ex[rb - 1];
    int64_t M = ta ? ac : ar, K = ta ? ar : ac, KB = tb ? bc : br, N = tb ? br : bc;
    if (M != C->ex[rc - 2] || N != C->ex[rc - 1] || K != KB) { tile_fail(ctx, where_shape); return; }
    int64_t ao, bo, co;
    int aok = tile_lead_ok(A, &ao), bok = tile_lead_ok(B, &bo), cok = tile_lead_ok(C, &co);
    if (!cok) return;
    /* valid ranges: C rows/cols; A (i, k); B (k, j) */
    int64_t ci0, ci1, cj0, cj1;
    tile_clip(C->st[rc - 2], M, C->n[rc - 2], &ci0, &ci1);
    tile_clip(C->st[rc - 1], N, C->n[rc - 1], &cj0, &cj1);
    int64_t a_r0, a_r1, a_c0, a_c1, b_r0, b_r1, b_c0, b_c1;
    tile_clip(A->st[ra - 2], ar, A->n[ra - 2], &a_r0, &a_r1);
    tile_clip(A->st[ra - 1], ac, A->n[ra - 1], &a_c0, &a_c1);
    tile_clip(B->st[rb - 2], br, B->n[rb - 2], &b_r0, &b_r1);
    tile_clip(B->st[rb - 1], bc, B->n[rb - 1], &b_c0, &b_c1);
    int64_t ai0 = ta ? a_c0 : a_r0, ai1 = ta ? a_c1 : a_r1, ak0 = ta ? a_r0 : a_c0, ak1 = ta ? a_r1 : a_c1;
    int64_t bk0 = tb ? b_c0 : b_r0, bk1 = tb ? b_c1 : b_r1, bj0 = tb ? b_r0 : b_c0, bj1 = tb ? b_r1 : b_c1;
    int64_t i0 = ci0 > ai0 ? ci0 : ai0, i1 = ci1 < ai1 ? ci1 : ai1;
    int64_t j0 = cj0 > bj0 ? cj0 : bj0, j1 = cj1 < bj1 ? cj1 : bj1;
    int64_t k0 = ak0 > bk0 ? ak0 : bk0, k1 = ak1 < bk1 ? ak1 : bk1;
    int empty = !aok || !bok || i1 <= i0 || j1 <= j0 || k1 <= k0;
    int cdt = C->dt, ct = tile_compute_dt(cdt);
    int64_t crs = C->s[rc - 2], ccs = C->s[rc - 1];
    int64_t cbase = co + C->st[rc - 2] * crs + C->st[rc - 1] * ccs;
    int full = !empty && i0 == ci0 && i1 == ci1 && j0 == cj0 && j1 == cj1;
    int64_t ars = A->s[ra - 2], acs = A->s[ra - 1], brs = B->s[rb - 2], bcs = B->s[rb - 1];
    int64_t abase = ao + A->st[ra - 2] * ars + A->st[ra - 1] * acs;
    int64_t bbase = bo + B->st[rb - 2] * brs + B->st[rb - 1] * bcs;
    /* op(A)(i, k) at abase + i*a_rs + k*a_cs */
    int64_t a_rs = ta ? acs : ars, a_cs = ta ? ars : acs, b_rs = tb ? bcs : brs, b_cs = tb ? brs : bcs;
    int64_t aoff = abase + i0 * a_rs + k0 * a_cs, boff = bbase + k0 * b_rs + j0 * b_cs, coff = cbase + i0 * crs + j0 * ccs;
    int floats = TILE_ISF(A->dt) && TILE_ISF(B->dt) && TILE_ISF(cdt);
    const tile_cpu_services *svc = ctx->a->svc;
    /* the packed GEMM library takes whole-byte element pointers (fp4 at an odd element cannot
     * be addressed): decide the path first, since only the library overwrites C by itself */
    int use_lib = !empty && floats && svc->gemm && tile_elem_ptr_ok(A->dt, aoff) && tile_elem_ptr_ok(B->dt, boff) &&
                  tile_elem_ptr_ok(cdt, coff);
    if (clear && !(full && TILE_ISF(ct) && use_lib)) {
        tile_val z;
        z.i = 0;
        if (TILE_ISF(cdt)) z.f = 0.0;
        for (int64_t i = ci0; i < ci1; i++)
            for (int64_t j = cj0; j < cj1; j++) tile_gst(cdt, C->base, cbase + i * crs + j * ccs, z);
    }
    if (empty) return;
    if (use_lib) {
        tile_cpu_gemm g;
        g.M = i1 - i0; g.N = j1 - j0; g.K = k1 - k0;
        g.a_dtype = A->dt; g.b_dtype = B->dt; g.c_dtype = cdt;
        g.A = tile_elem_ptr(A->dt, A->base, aoff); g.a_rs = a_rs; g.a_cs = a_cs;
        g.B = tile_elem_ptr(B->dt, B->base, boff); g.b_rs = b_rs; g.b_cs = b_cs;
        g.C = (void *)tile_elem_ptr(cdt, C->base, coff); g.c_rs = crs; g.c_cs = ccs;
        g.accumulate = !(clear && full);
        g.parallel = parallel;
        if (svc->gemm(svc, &g)) tile_fail(ctx, where_fail);
        return;
    }
    /* any other dtypes: the interpreter's loop (ordered sums in the accumulator's dtype) */
    for (int64_t i = i0; i < i1; i++)
        for (int64_t j = j0; j < j1; j++) {
            int64_t cp = cbase + i * crs + j * ccs;
            tile_val acc = tile_conv(tile_gld(cdt, C->base, cp), cdt, ct);
            for (int64_t k = k0; k < k1; k++) {
                tile_val a = tile_conv(tile_gld(A->dt, A->base, abase + i * a_rs + k * a_cs), A->dt, ct);
                tile_val b = tile_conv(tile_gld(B->dt, B->base, bbase + k * b_rs + j * b_cs), B->dt, ct);
                if (ct == TDT_F32) acc.f = (double)(float)(acc.f + (double)(float)(a.f * b.f));
                else if (ct == TDT_F64) acc.f = acc.f + a.f * b.f;
                else acc.i = tile_wrapi(ct, (int64_t)((uint64_t)acc.i + (uint64_t)a.i * (uint64_t)b.i));
            }
            tile_gst(cdt, C->base, cp, tile_conv(acc, ct, cdt));
        }
}

/* ---------- atomics (read-modify-write with compare-and-swap on the storage) ---------- */
enum { TILE_AT_ADD = 0, TILE_AT_MAX = 1, TILE_AT_MIN = 2, TILE_AT_STORE = 3, TILE_AT_LOAD = 4, TILE_AT_OR = 5, TILE_AT_AND = 6, TILE_AT_XOR = 7 };
static tile_val tile_atomic_apply(int dt, tile_val old, tile_val x, int op) {
    int ct = tile_compute_dt(dt);
    tile_val o = tile_conv(old, dt, ct), r;
    if (op == TILE_AT_STORE) r = x;
    else if (op == TILE_AT_LOAD) r = o;
    else if (TILE_ISF(ct)) {
        if (op == TILE_AT_ADD) r.f = tile_rnd(ct, o.f + x.f);
        else if (op == TILE_AT_MAX) r.f = fmax(o.f, x.f);
        else r.f = fmin(o.f, x.f);
    } else if (op == TILE_AT_ADD) {
        r.i = tile_wrapi(ct, (int64_t)((uint64_t)o.i + (uint64_t)x.i));
    } else if (op == TILE_AT_OR || op == TILE_AT_AND || op == TILE_AT_XOR) {
        /* bitwise on the sign- or zero-extended value, so the result stays in range */
        r.i = op == TILE_AT_OR ? o.i | x.i : op == TILE_AT_AND ? o.i & x.i : o.i ^ x.i;
    } else {
        int u = TILE_ISU(ct), mx = op == TILE_AT_MAX;
        int gt = u ? (uint64_t)o.i > (uint64_t)x.i : o.i > x.i;
        int lt = u ? (uint64_t)o.i < (uint64_t)x.i : o.i < x.i;
        r = mx ? (gt ? o : x) : (lt ? o : x);
    }
    return tile_conv(r, ct, dt);
}
/* x: the operand, already converted to the compute dtype of dt; returns the element's old
 * value in the compute dtype */
static tile_val tile_atomic(int dt, void *base, int64_t i, tile_val x, int op) {
    int bits = tile_dt_bits[dt];
    tile_val prev;
    if (bits == 4) {
        uint8_t *p = (uint8_t *)base + (i >> 1);
        unsigned sh = (unsigned)(i & 1) * 4;
        uint8_t cur = __atomic_load_n(p, __ATOMIC_RELAXED), nw;
        do {
            prev.f = tile_e2m1_tab[(cur >> sh) & 0xF];
            tile_val r = tile_atomic_apply(dt, prev, x, op);
            nw = (uint8_t)((cur & ~(0xFu << sh)) | ((unsigned)tile_bits_e2m1(r.f) << sh));
        } while (!__atomic_compare_exchange_n(p, &cur, nw, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
        return tile_conv(prev, dt, tile_compute_dt(dt));
    }
#define TILE_CAS_LOOP(UT)                                                                         \
    do {                                                                                          \
        UT *p = (UT *)base + i, cur = __atomic_load_n(p, __ATOMIC_RELAXED), nw;                   \
        do {                                                                                      \
            UT tmp[1] = {cur};                                                                    \
            prev = tile_gld(dt, tmp, 0);                                                          \
            tile_val r = tile_atomic_apply(dt, prev, x, op);                                      \
            tile_gst(dt, tmp, 0, r);                                                              \
            nw = tmp[0];                                                                          \
        } while (!__atomic_compare_exchange_n(p, &cur, nw, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)); \
    } while (0)
    switch (bits) {
    case 8: TILE_CAS_LOOP(uint8_t); break;
    case 16: TILE_CAS_LOOP(uint16_t); break;
    case 32: TILE_CAS_LOOP(uint32_t); break;
    default: TILE_CAS_LOOP(uint64_t); break;
    }
#undef TILE_CAS_LOOP
    return tile_conv(prev, dt, tile_compute_dt(dt));
}

/* ---------- parallel loops and kernel launches on the runtime's pool ---------- */
/* Scratch memory of kernel blocks and parallel-loop iterations: a buffer a kernel body (or an
 * outlined parallel loop's body) allocates on the heap (too big for the stack) comes from its
 * worker's slot for that buffer, kept for the whole launch and reused by the worker's next
 * blocks or iterations (no malloc/free, and no fresh pages, per block or row). */
typedef struct tile_scratch {
    void **p;
    size_t *cap;
    int n;
} tile_scratch;
static __thread tile_scratch *tile_cur_scratch;
/* p (with 128 bytes to spare) moved up to the address that ref has modulo 64, in whole
 * elements of es bytes: a buffer placed like another (ir.h's align_to) */
static inline void *tile_place_like(void *p, const void *ref, size_t es) {
    const uintptr_t a = ((uintptr_t)p + 63) & ~(uintptr_t)63;
    return (void *)(a + (((uintptr_t)ref & 63) & ~(uintptr_t)(es - 1)));
}
static void *tile_scratch_get(int slot, size_t bytes) {
    tile_scratch *s = tile_cur_scratch;
    if (!s || slot < 0 || slot >= s->n) return NULL;
    if (s->cap[slot] < bytes) {
        free(s->p[slot]);
        s->p[slot] = malloc(bytes);
        s->cap[slot] = s->p[slot] ? bytes : 0;
    }
    return s->p[slot];
}

typedef struct tile_launch {
    tile_ctx *ctx;
    void *st;
    int (*block)(tile_ctx *ctx, void *st, int64_t b0, int64_t b1, int64_t b2);
    int (*range)(tile_ctx *ctx, void *st, int64_t begin, int64_t end);
    int64_t g0, g1;
    tile_scratch *scratch; /* one per worker, or NULL */
    int nscratch;
} tile_launch;

static void tile_launch_task(void *arg, int64_t begin, int64_t end, int worker) {
    tile_launch *L = (tile_launch *)arg;
    tile_scratch *prev = tile_cur_scratch;
    tile_cur_scratch = L->scratch && worker >= 0 && worker < L->nscratch ? &L->scratch[worker] : NULL;
    if (L->range) {
        if (!tile_failed(L->ctx) && L->range(L->ctx, L->st, begin, end)) tile_fail(L->ctx, "error: a parallel loop failed\n");
        tile_cur_scratch = prev;
        return;
    }
    for (int64_t lin = begin; lin < end; lin++) {
        if (tile_failed(L->ctx)) break;
        int64_t b0 = lin % L->g0, r = lin / L->g0, b1 = r % L->g1, b2 = r / L->g1;
        if (L->block(L->ctx, L->st, b0, b1, b2)) tile_fail(L->ctx, "error: a kernel block failed\n");
    }
    tile_cur_scratch = prev;
}

/* nslots: the scratch slots a block may ask for (the function's buffer count; 0: none) */
static void tile_scratch_new(tile_launch *L, int nw, int nslots) {
    if (nslots > 0) {
        L->scratch = (tile_scratch *)calloc((size_t)nw, sizeof(tile_scratch));
        if (L->scratch) {
            L->nscratch = nw;
            for (int w = 0; w < nw; w++) {
                L->scratch[w].p = (void **)calloc((size_t)nslots, sizeof(void *));
                L->scratch[w].cap = (size_t *)calloc((size_t)nslots, sizeof(size_t));
                L->scratch[w].n = L->scratch[w].p && L->scratch[w].cap ? nslots : 0;
            }
        }
    }
}
static void tile_scratch_free(tile_launch *L) {
    for (int w = 0; w < L->nscratch; w++) {
        for (int i = 0; i < L->scratch[w].n; i++) free(L->scratch[w].p[i]);
        free(L->scratch[w].p);
        free(L->scratch[w].cap);
    }
    free(L->scratch);
}

static int tile_run_grid(tile_ctx *ctx, void *st, int (*block)(tile_ctx *, void *, int64_t, int64_t, int64_t),
                         int64_t g0, int64_t g1, int64_t g2, int nslots) {
    if (g0 <= 0 || g1 <= 0 || g2 <= 0) return tile_failed(ctx);
    tile_launch L = {ctx, st, block, 0, g0, g1, NULL, 0};
    int64_t n = g0 * g1 * g2;
    const tile_cpu_services *svc = ctx->a->svc;
    tile_scratch_new(&L, svc->nworkers > 0 ? svc->nworkers : 1, nslots);
    if (n == 1 || !svc->parallel_for) tile_launch_task(&L, 0, n, 0);
    else svc->parallel_for(svc, n, tile_launch_task, &L);
    tile_scratch_free(&L);
    return tile_failed(ctx);
}

static int tile_run_range(tile_ctx *ctx, void *st, int (*range)(tile_ctx *, void *, int64_t, int64_t), int64_t n, int nslots) {
    if (n <= 0) return tile_failed(ctx);
    tile_launch L = {ctx, st, 0, range, 1, 1, NULL, 0};
    const tile_cpu_services *svc = ctx->a->svc;
    tile_scratch_new(&L, svc->nworkers > 0 ? svc->nworkers : 1, nslots);
    if (n == 1 || !svc->parallel_for) tile_launch_task(&L, 0, n, 0);
    else svc->parallel_for(svc, n, tile_launch_task, &L);
    tile_scratch_free(&L);
    return tile_failed(ctx);
}

/* fp4 store of ready-made 4-bit code (FILL stores one code many times) */
static inline void tile_stb_e2m1(uint8_t *p, int64_t i, uint8_t code) {
    unsigned sh = (unsigned)(i & 1) * 4;
    __atomic_fetch_and(&p[i >> 1], (uint8_t)~(0xFu << sh), __ATOMIC_RELAXED);
    __atomic_fetch_or(&p[i >> 1], (uint8_t)((code & 0xF) << sh), __ATOMIC_RELAXED);
}

/* checked builds (TILE_CPU_CHECKS=1): an element index outside its dimension is an error */
static inline int64_t tile_chk(tile_ctx *ctx, int64_t i, int64_t n, const char *where) {
    if (TILE_UNLIKELY((uint64_t)i >= (uint64_t)n)) { tile_fail(ctx, where); return 0; }
    return i;
}
