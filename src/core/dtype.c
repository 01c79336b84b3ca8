/* dtype.c — the dtype table and bit-exact conversions between dtypes.
 *
 * The rules implemented here are the project's definition of numbers; every backend must
 * reproduce them bit for bit. docs/numbers.md states them in prose. In short:
 *   - float targets round to nearest, ties to even, once, from the exact source value;
 *   - f16 / bf16 / f32 / f64 overflow to inf (IEEE);
 *   - fp8 e4m3, fp8 e5m2 and fp4 e2m1 saturate (".satfinite"): finite overflow and +-inf
 *     become +-max finite;
 *   - NaN becomes the format's canonical quiet NaN with the sign kept (e2m1 has no NaN:
 *     NaN -> +6, bits 0x7);
 *   - subnormals are exact both ways (no flush to zero);
 *   - float -> integer truncates toward zero, saturates, NaN -> 0; bool is (v != 0), NaN -> 1;
 *   - integer -> integer wraps (two's complement).
 *
 * All narrow-format arithmetic is done on integers, so results never depend on the host's
 * floating-point environment (rounding mode, FTZ/DAZ, x87 excess precision).
 */
#include "core.h"
#include "../base/convert.h"

#include <math.h>
#include <string.h>

/* ---------- the table (src/base: the same list as TILE_DTYPES) ---------- */

#define X(e, name, bits, kind) _Static_assert((int)TILE_DT_##e == (int)TB_DT_##e, "TILE_DTYPES and TB_DTYPES differ at " #e);
TILE_DTYPES(X)
#undef X
_Static_assert((int)TILE_DT_COUNT == (int)TB_DT_COUNT, "TILE_DTYPES and TB_DTYPES differ in length");

static bool dt_valid(tile_dtype dt) { return (int)dt >= 0 && (int)dt < TILE_DT_COUNT; }

const char *tile_dtype_name(tile_dtype dt) { return tb_dtype_name((tb_dtype)dt); }
int tile_dtype_bits(tile_dtype dt) { return tb_dtype_bits((tb_dtype)dt); }
bool tile_dtype_is_float(tile_dtype dt) { return tb_dtype_kind((tb_dtype)dt) == 'F'; }
bool tile_dtype_is_int(tile_dtype dt) {
    char k = tb_dtype_kind((tb_dtype)dt);
    return k == 'I' || k == 'U';
}
bool tile_dtype_is_signed(tile_dtype dt) {
    char k = tb_dtype_kind((tb_dtype)dt);
    return k == 'I' || k == 'F';
}
bool tile_dtype_is_bool(tile_dtype dt) { return tb_dtype_kind((tb_dtype)dt) == 'B'; }

double tile_dtype_check_tolerance(tile_dtype dt) {
    switch (dt) {
    case TILE_DT_F64: return 1e-12;
    case TILE_DT_F32: return 1e-5;
    case TILE_DT_F16: return 2e-3;
    case TILE_DT_BF16: return 1.6e-2;
    case TILE_DT_FP8_E4M3: return 1.3e-1;
    case TILE_DT_FP8_E5M2: return 2.5e-1;
    case TILE_DT_FP4_E2M1: return 5e-1;
    default: return 0;
    }
}

tile_dtype tile_dtype_parse(const char *name) { return (tile_dtype)tb_dtype_parse(name, false); }

size_t tile_dtype_storage_bytes(tile_dtype dt, size_t n) {
    TILE_ASSERT(dt_valid(dt), "invalid dtype %d", (int)dt);
    if (dt == TILE_DT_FP4_E2M1) return n / 2 + (n & 1);
    return n * (size_t)(tile_dtype_bits(dt) / 8);
}

/* ---------- the conversions (shared with the CPU backend's prelude: convert.h) ---------- */

static inline uint64_t f64_bits(double d) { return tcv_f64_bits(d); }
static inline double bits_f64(uint64_t u) { return tcv_bits_f64(u); }
static inline float bits_f32(uint32_t u) { return tcv_bits_f32(u); }

typedef tcv_fmt fmt_desc;
#define FMT_F16 TCV_F16
#define FMT_BF16 TCV_BF16
#define FMT_F32 TCV_F32
#define FMT_F64 TCV_F64
#define FMT_E4M3 TCV_E4M3
#define FMT_E5M2 TCV_E5M2
#define FMT_E2M1 TCV_E2M1
#define encode_f64 tcv_encode_f64
#define encode_i64 tcv_encode_i64
#define decode_small tcv_decode_small

uint16_t tile_f32_to_f16_bits(float x) { return tcv_f32_to_f16_bits(x); }
float tile_f16_bits_to_f32(uint16_t h) { return tcv_f16_bits_to_f32(h); }
uint16_t tile_f64_to_f16_bits(double d) { return (uint16_t)encode_f64(&FMT_F16, d); }
uint16_t tile_f32_to_bf16_bits(float x) { return tcv_f32_to_bf16_bits(x); }
float tile_bf16_bits_to_f32(uint16_t h) { return tcv_bf16_bits_to_f32(h); }
uint16_t tile_f64_to_bf16_bits(double d) { return (uint16_t)encode_f64(&FMT_BF16, d); }
uint8_t tile_f64_to_e4m3_bits(double d) { return tcv_f64_to_e4m3_bits(d); }
double tile_e4m3_bits_to_f64(uint8_t b) { return tcv_e4m3_bits_to_f64(b); }
uint8_t tile_f64_to_e5m2_bits(double d) { return tcv_f64_to_e5m2_bits(d); }
double tile_e5m2_bits_to_f64(uint8_t b) { return tcv_e5m2_bits_to_f64(b); }
uint8_t tile_f64_to_e2m1_bits(double d) { return tcv_f64_to_e2m1_bits(d); }
double tile_e2m1_bits_to_f64(uint8_t b) { return tcv_e2m1_bits_to_f64(b); }

/* ---------- rounding and integer conversion ---------- */

static const fmt_desc *float_fmt(tile_dtype dt) {
    switch (dt) {
    case TILE_DT_F16: return &FMT_F16;
    case TILE_DT_BF16: return &FMT_BF16;
    case TILE_DT_F32: return &FMT_F32;
    case TILE_DT_F64: return &FMT_F64;
    case TILE_DT_FP8_E4M3: return &FMT_E4M3;
    case TILE_DT_FP8_E5M2: return &FMT_E5M2;
    case TILE_DT_FP4_E2M1: return &FMT_E2M1;
    default: return NULL;
    }
}

/* Decode the bits of float dtype dt to double (exact). */
static double float_bits_to_f64(tile_dtype dt, uint64_t b) {
    switch (dt) {
    case TILE_DT_F16: return (double)tile_f16_bits_to_f32((uint16_t)b);
    case TILE_DT_BF16: return (double)tile_bf16_bits_to_f32((uint16_t)b);
    case TILE_DT_F32: return (double)bits_f32((uint32_t)b);
    case TILE_DT_F64: return bits_f64(b);
    case TILE_DT_FP8_E4M3: return decode_small(&FMT_E4M3, (uint32_t)b & 0xFF);
    case TILE_DT_FP8_E5M2: return decode_small(&FMT_E5M2, (uint32_t)b & 0xFF);
    case TILE_DT_FP4_E2M1: return decode_small(&FMT_E2M1, (uint32_t)b & 0xF);
    default: TILE_ASSERT(0, "not a float dtype: %s", tile_dtype_name(dt)); return 0;
    }
}

/* Encode a double into the bits of float dtype dt (RNE, saturation rules). */
static uint64_t f64_to_float_bits(tile_dtype dt, double v) {
    switch (dt) {
    case TILE_DT_F64: return f64_bits(v); /* identity, NaN payload kept */
    case TILE_DT_F32: return encode_f64(&FMT_F32, v);
    default: return encode_f64(float_fmt(dt), v);
    }
}

int64_t tile_f64_to_int(tile_dtype dt, double v) {
    TILE_ASSERT(tile_dtype_is_int(dt) || tile_dtype_is_bool(dt),
                "tile_f64_to_int: %s is not an integer dtype", tile_dtype_name(dt));
    if (dt == TILE_DT_BOOL) return v != 0.0; /* NaN != 0 is true: NaN -> 1, as C's (bool)NAN */
    if (isnan(v)) return 0;
    switch (dt) {
    case TILE_DT_I8: return v <= -128.0 ? -128 : v >= 127.0 ? 127 : (int64_t)v;
    case TILE_DT_I16: return v <= -32768.0 ? -32768 : v >= 32767.0 ? 32767 : (int64_t)v;
    case TILE_DT_I32:
        return v <= -2147483648.0 ? INT32_MIN : v >= 2147483647.0 ? INT32_MAX : (int64_t)v;
    case TILE_DT_I64:
        /* every double in (-2^63, 2^63) truncates into int64's range */
        return v <= -9223372036854775808.0 ? INT64_MIN
             : v >= 9223372036854775808.0  ? INT64_MAX
                                           : (int64_t)v;
    case TILE_DT_U8: return v <= 0.0 ? 0 : v >= 255.0 ? 255 : (int64_t)v;
    case TILE_DT_U16: return v <= 0.0 ? 0 : v >= 65535.0 ? 65535 : (int64_t)v;
    case TILE_DT_U32: return v <= 0.0 ? 0 : v >= 4294967295.0 ? (int64_t)UINT32_MAX : (int64_t)v;
    case TILE_DT_U64:
        /* zero-extended to 64 bits: values >= 2^63 come back as negative int64 */
        return v <= 0.0 ? 0
             : v >= 18446744073709551616.0 ? (int64_t)UINT64_MAX
                                           : (int64_t)(uint64_t)v;
    default: TILE_ASSERT(0, "not an integer dtype: %s", tile_dtype_name(dt)); return 0;
    }
}

int64_t tile_wrap_int(tile_dtype dt, int64_t v) {
    uint64_t u = (uint64_t)v;
    switch (dt) {
    case TILE_DT_BOOL: return v != 0;
    case TILE_DT_I8: u &= 0xFF; return u >= 0x80 ? (int64_t)u - 0x100 : (int64_t)u;
    case TILE_DT_I16: u &= 0xFFFF; return u >= 0x8000 ? (int64_t)u - 0x10000 : (int64_t)u;
    case TILE_DT_I32:
        u &= 0xFFFFFFFFu;
        return u >= 0x80000000u ? (int64_t)u - (int64_t)0x100000000 : (int64_t)u;
    case TILE_DT_I64: return v;
    case TILE_DT_U8: return (int64_t)(u & 0xFF);
    case TILE_DT_U16: return (int64_t)(u & 0xFFFF);
    case TILE_DT_U32: return (int64_t)(u & 0xFFFFFFFFu);
    case TILE_DT_U64: return v;
    default:
        TILE_ASSERT(0, "tile_wrap_int: %s is not an integer dtype", tile_dtype_name(dt));
        return 0;
    }
}

double tile_round_to(tile_dtype dt, double v) {
    if (tile_dtype_is_float(dt)) {
        if (dt == TILE_DT_F64) return v;
        return float_bits_to_f64(dt, f64_to_float_bits(dt, v));
    }
    /* integer / bool dtypes: the value the dtype would hold, as a double */
    int64_t i = tile_f64_to_int(dt, v);
    return dt == TILE_DT_U64 ? (double)(uint64_t)i : (double)i;
}

/* ---------- element access on raw storage ---------- */

uint64_t tile_load_bits(tile_dtype dt, const void *base, size_t index) {
    const unsigned char *p = (const unsigned char *)base;
    switch (tile_dtype_bits(dt)) {
    case 4: return (p[index / 2] >> ((index & 1) * 4)) & 0xF;
    case 8: return p[index];
    case 16: { uint16_t x; memcpy(&x, p + index * 2, 2); return x; }
    case 32: { uint32_t x; memcpy(&x, p + index * 4, 4); return x; }
    case 64: { uint64_t x; memcpy(&x, p + index * 8, 8); return x; }
    default: TILE_ASSERT(0, "tile_load_bits: invalid dtype %d", (int)dt); return 0;
    }
}

void tile_store_bits(tile_dtype dt, void *base, size_t index, uint64_t bits) {
    unsigned char *p = (unsigned char *)base;
    switch (tile_dtype_bits(dt)) {
    case 4: {
        unsigned sh = (unsigned)(index & 1) * 4;
        p[index / 2] = (unsigned char)((p[index / 2] & ~(0xFu << sh)) | ((bits & 0xF) << sh));
        return;
    }
    case 8: p[index] = (unsigned char)bits; return;
    case 16: { uint16_t x = (uint16_t)bits; memcpy(p + index * 2, &x, 2); return; }
    case 32: { uint32_t x = (uint32_t)bits; memcpy(p + index * 4, &x, 4); return; }
    case 64: memcpy(p + index * 8, &bits, 8); return;
    default: TILE_ASSERT(0, "tile_store_bits: invalid dtype %d", (int)dt);
    }
}

/* Sign-extend the raw bits of an integer dtype. */
static int64_t int_from_bits(tile_dtype dt, uint64_t b) {
    switch (dt) {
    case TILE_DT_BOOL: return b != 0;
    case TILE_DT_I8: return (int64_t)(int8_t)(uint8_t)b;
    case TILE_DT_I16: return (int64_t)(int16_t)(uint16_t)b;
    case TILE_DT_I32: return (int64_t)(int32_t)(uint32_t)b;
    default: return (int64_t)b; /* I64 and unsigned: zero-extended bits */
    }
}

double tile_load_f(tile_dtype dt, const void *base, size_t index) {
    uint64_t b = tile_load_bits(dt, base, index);
    if (tile_dtype_is_float(dt)) return float_bits_to_f64(dt, b);
    if (dt == TILE_DT_U64) return (double)b; /* may round (RNE) above 2^53 */
    return (double)int_from_bits(dt, b);     /* I64 may round (RNE) above 2^53 */
}

int64_t tile_load_i(tile_dtype dt, const void *base, size_t index) {
    uint64_t b = tile_load_bits(dt, base, index);
    if (tile_dtype_is_float(dt)) return tile_f64_to_int(TILE_DT_I64, float_bits_to_f64(dt, b));
    return int_from_bits(dt, b);
}

void tile_store_f(tile_dtype dt, void *base, size_t index, double v) {
    uint64_t b;
    if (tile_dtype_is_float(dt)) b = f64_to_float_bits(dt, v);
    else b = (uint64_t)tile_f64_to_int(dt, v);
    tile_store_bits(dt, base, index, b);
}

void tile_store_i(tile_dtype dt, void *base, size_t index, int64_t v) {
    uint64_t b;
    if (tile_dtype_is_float(dt)) b = encode_i64(float_fmt(dt), v); /* one rounding */
    else b = (uint64_t)tile_wrap_int(dt, v);
    tile_store_bits(dt, base, index, b);
}
