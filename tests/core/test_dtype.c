/* test_dtype.c — unit tests for the dtype table and conversions (src/core/dtype.c).
 *
 *   test_dtype                 all unit tests + the f32 sweep with the default stride
 *   test_dtype --stride N      f32 -> f16/bf16 sweep over every N-th pattern (N=1: all 2^32)
 *
 * The independent reference comparison (ml_dtypes / numpy) lives in test_dtype_ref.py. */
#include "core/core.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int g_fail, g_checks;

#define CHECK(cond, ...)                                              \
    do {                                                              \
        g_checks++;                                                   \
        if (!(cond)) {                                                \
            g_fail++;                                                 \
            fprintf(stderr, "%s:%d: FAIL: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                             \
            fputc('\n', stderr);                                      \
        }                                                             \
    } while (0)

static uint64_t dbits(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }
static double bitsd(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }
static float bitsf(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint32_t fbits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

/* same value, or both NaN with the same sign; -0.0 and 0.0 differ */
static bool same(double a, double b) {
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b) && signbit(a) == signbit(b);
    return dbits(a) == dbits(b);
}

/* ---------- table ---------- */
static void test_table(void) {
    CHECK(strcmp(tile_dtype_name(TILE_DT_F32), "float32") == 0, "name");
    CHECK(strcmp(tile_dtype_name(TILE_DT_FP8_E4M3), "float8_e4m3") == 0, "name");
    CHECK(strcmp(tile_dtype_name(TILE_DT_INVALID), "?") == 0, "invalid name");
    CHECK(strcmp(tile_dtype_name((tile_dtype)TILE_DT_COUNT), "?") == 0, "count name");
    CHECK(tile_dtype_bits(TILE_DT_FP4_E2M1) == 4, "bits");
    CHECK(tile_dtype_bits(TILE_DT_BF16) == 16, "bits");
    CHECK(tile_dtype_bits(TILE_DT_INVALID) == 0, "bits invalid");
    CHECK(tile_dtype_is_float(TILE_DT_BF16) && !tile_dtype_is_float(TILE_DT_I32), "is_float");
    CHECK(tile_dtype_is_int(TILE_DT_U64) && !tile_dtype_is_int(TILE_DT_BOOL) && !tile_dtype_is_int(TILE_DT_F32), "is_int");
    CHECK(tile_dtype_is_signed(TILE_DT_I8) && tile_dtype_is_signed(TILE_DT_F16) && !tile_dtype_is_signed(TILE_DT_U8) &&
          !tile_dtype_is_signed(TILE_DT_BOOL), "is_signed");
    CHECK(tile_dtype_is_bool(TILE_DT_BOOL) && !tile_dtype_is_bool(TILE_DT_U8), "is_bool");
    CHECK(!tile_dtype_is_float(TILE_DT_INVALID) && !tile_dtype_is_int(TILE_DT_INVALID), "invalid kinds");
    /* every canonical name parses back to itself */
    for (int i = 0; i < TILE_DT_COUNT; i++)
        CHECK(tile_dtype_parse(tile_dtype_name((tile_dtype)i)) == (tile_dtype)i, "roundtrip %d", i);
    static const struct { const char *s; tile_dtype dt; } al[] = {
        {"float", TILE_DT_F32},  {"f32", TILE_DT_F32},  {"float32", TILE_DT_F32},
        {"half", TILE_DT_F16},   {"f16", TILE_DT_F16},  {"float16", TILE_DT_F16},
        {"bf16", TILE_DT_BF16},  {"bfloat16", TILE_DT_BF16},
        {"double", TILE_DT_F64}, {"f64", TILE_DT_F64},
        {"float8_e4m3fn", TILE_DT_FP8_E4M3}, {"e4m3", TILE_DT_FP8_E4M3}, {"float8_e4m3", TILE_DT_FP8_E4M3},
        {"float8_e5m2", TILE_DT_FP8_E5M2},   {"e5m2", TILE_DT_FP8_E5M2},
        {"float4_e2m1fn", TILE_DT_FP4_E2M1}, {"float4_e2m1", TILE_DT_FP4_E2M1}, {"e2m1", TILE_DT_FP4_E2M1},
        {"int", TILE_DT_I32},    {"int8", TILE_DT_I8},  {"uint8", TILE_DT_U8}, {"uint64", TILE_DT_U64},
        {"bool", TILE_DT_BOOL},  {"i64", TILE_DT_I64},  {"u16", TILE_DT_U16},
    };
    for (size_t i = 0; i < sizeof al / sizeof al[0]; i++)
        CHECK(tile_dtype_parse(al[i].s) == al[i].dt, "parse %s", al[i].s);
    CHECK(tile_dtype_parse("float8_e4m3fnuz") == TILE_DT_INVALID, "fnuz is another format");
    CHECK(tile_dtype_parse("Float32") == TILE_DT_INVALID, "case sensitive");
    CHECK(tile_dtype_parse("") == TILE_DT_INVALID, "empty");
    CHECK(tile_dtype_parse(NULL) == TILE_DT_INVALID, "null");
    CHECK(tile_dtype_parse("int128") == TILE_DT_INVALID, "unknown");

    CHECK(tile_dtype_storage_bytes(TILE_DT_FP4_E2M1, 0) == 0, "fp4 0");
    CHECK(tile_dtype_storage_bytes(TILE_DT_FP4_E2M1, 1) == 1, "fp4 1");
    CHECK(tile_dtype_storage_bytes(TILE_DT_FP4_E2M1, 5) == 3, "fp4 5");
    CHECK(tile_dtype_storage_bytes(TILE_DT_FP4_E2M1, 6) == 3, "fp4 6");
    CHECK(tile_dtype_storage_bytes(TILE_DT_F64, 3) == 24, "f64");
    CHECK(tile_dtype_storage_bytes(TILE_DT_BOOL, 7) == 7, "bool");
    CHECK(tile_dtype_storage_bytes(TILE_DT_BF16, 7) == 14, "bf16");
}

/* ---------- scalar conversions: fixed cases ---------- */
static void test_f16_bf16(void) {
    struct { double v; uint16_t h, b; } c[] = {
        {0.0, 0x0000, 0x0000},
        {-0.0, 0x8000, 0x8000},
        {1.0, 0x3C00, 0x3F80},
        {-2.0, 0xC000, 0xC000},
        {65504.0, 0x7BFF, 0x4780},
        {65519.99, 0x7BFF, 0x4780},
        {65520.0, 0x7C00, 0x4780},          /* f16: tie between max and 2^16 -> even -> inf */
        {1e10, 0x7C00, 0x5015},
        {INFINITY, 0x7C00, 0x7F80},
        {-INFINITY, 0xFC00, 0xFF80},
        {0x1p-24, 0x0001, 0x3380},          /* f16 min subnormal */
        {0x1p-25, 0x0000, 0x3300},          /* tie -> even (0) */
        {0x1.000001p-25, 0x0001, 0x3300},   /* just above the tie */
        {0x3p-25, 0x0002, 0x33C0},          /* 1.5 * 2^-24: tie -> even (2) */
        {0x1.ff8p-15, 0x03FF, 0x3880},      /* f16 max subnormal */
        {0x1.ffcp-15, 0x0400, 0x3880},      /* tie -> even: the smallest normal 2^-14 */
        {1.0 + 0x1p-11, 0x3C00, 0x3F80},    /* f16 tie, even */
        {1.0 + 0x3p-11, 0x3C02, 0x3F80},    /* f16 tie, odd -> up */
        {1.0 + 0x1p-8, 0x3C04, 0x3F80},     /* bf16 tie -> even (1.0) */
        {1.0 + 0x1p-8 + 0x1p-30, 0x3C04, 0x3F81}, /* single rounding from double: up */
        {0x1.fep127, 0x7C00, 0x7F7F},       /* bf16 max finite */
        {0x1.ffp127, 0x7C00, 0x7F80},       /* bf16 tie above max -> even -> inf */
        {0x1p-133, 0x0000, 0x0001},         /* bf16 min subnormal */
        {0x1p-134, 0x0000, 0x0000},         /* tie -> 0 */
        {0x1p-1074, 0x0000, 0x0000},        /* double min subnormal */
        {-0x1p-1074, 0x8000, 0x8000},
        {DBL_MAX, 0x7C00, 0x7F80},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        uint16_t h = tile_f64_to_f16_bits(c[i].v), b = tile_f64_to_bf16_bits(c[i].v);
        CHECK(h == c[i].h, "f64->f16(%a) = %04x, want %04x", c[i].v, h, c[i].h);
        CHECK(b == c[i].b, "f64->bf16(%a) = %04x, want %04x", c[i].v, b, c[i].b);
        float f = (float)c[i].v;
        if ((double)f == c[i].v) {
            CHECK(tile_f32_to_f16_bits(f) == c[i].h, "f32->f16(%a)", c[i].v);
            CHECK(tile_f32_to_bf16_bits(f) == c[i].b, "f32->bf16(%a)", c[i].v);
        }
    }
    /* NaN: canonical quiet NaN, sign kept, payload dropped */
    double qn = bitsd(0x7FF8000000000000ull), nqn = bitsd(0xFFF8000000000000ull);
    double sn = bitsd(0x7FF0000000000001ull), pn = bitsd(0xFFF4321000000000ull);
    CHECK(tile_f64_to_f16_bits(qn) == 0x7E00, "nan f16");
    CHECK(tile_f64_to_f16_bits(nqn) == 0xFE00, "-nan f16");
    CHECK(tile_f64_to_f16_bits(sn) == 0x7E00, "snan f16");
    CHECK(tile_f64_to_f16_bits(pn) == 0xFE00, "payload nan f16");
    CHECK(tile_f64_to_bf16_bits(qn) == 0x7FC0, "nan bf16");
    CHECK(tile_f64_to_bf16_bits(nqn) == 0xFFC0, "-nan bf16");
    CHECK(tile_f64_to_bf16_bits(sn) == 0x7FC0, "snan bf16");
    CHECK(tile_f32_to_bf16_bits(bitsf(0x7F800001)) == 0x7FC0, "f32 snan bf16");
    CHECK(tile_f32_to_bf16_bits(bitsf(0xFFFFFFFF)) == 0xFFC0, "f32 -nan bf16");
    CHECK(tile_f32_to_f16_bits(bitsf(0x7F800001)) == 0x7E00, "f32 snan f16");
    CHECK(tile_f32_to_f16_bits(bitsf(0xFFC00000)) == 0xFE00, "f32 -nan f16");

    /* decode */
    CHECK(tile_f16_bits_to_f32(0x0001) == 0x1p-24f, "f16 min sub");
    CHECK(tile_f16_bits_to_f32(0x03FF) == 0x1.ff8p-15f, "f16 max sub");
    CHECK(tile_f16_bits_to_f32(0x7BFF) == 65504.0f, "f16 max");
    CHECK(tile_f16_bits_to_f32(0xFC00) == -INFINITY, "f16 -inf");
    CHECK(isnan(tile_f16_bits_to_f32(0x7E00)) && isnan(tile_f16_bits_to_f32(0x7C01)), "f16 nan");
    CHECK(fbits(tile_f16_bits_to_f32(0x8000)) == 0x80000000u, "f16 -0");
    CHECK(tile_bf16_bits_to_f32(0x0001) == 0x1p-133f, "bf16 min sub");
    CHECK(tile_bf16_bits_to_f32(0xC049) == -3.140625f, "bf16 value");
}

static void test_fp8_fp4(void) {
    struct { double v; uint8_t e4, e5, e2; } c[] = {
        {0.0, 0x00, 0x00, 0x0},
        {-0.0, 0x80, 0x80, 0x8},
        {1.0, 0x38, 0x3C, 0x2},
        {-1.5, 0xBC, 0xBE, 0xB},
        {448.0, 0x7E, 0x5F, 0x7},
        {464.0, 0x7E, 0x5F, 0x7},           /* e4m3: tie between 448 and (nonexistent) 480 -> 448 */
        {464.01, 0x7E, 0x5F, 0x7},          /* would round past max: saturates */
        {1e6, 0x7E, 0x7B, 0x7},
        {57344.0, 0x7E, 0x7B, 0x7},
        {61440.0, 0x7E, 0x7B, 0x7},         /* e5m2: tie above max -> would be inf -> max */
        {-1e30, 0xFE, 0xFB, 0xF},
        {INFINITY, 0x7E, 0x7B, 0x7},
        {-INFINITY, 0xFE, 0xFB, 0xF},
        {0x1p-9, 0x01, 0x18, 0x0},          /* e4m3 min subnormal */
        {0x1p-10, 0x00, 0x14, 0x0},         /* e4m3 tie -> 0 */
        {0x1.0000000000001p-10, 0x01, 0x14, 0x0},
        {0x3p-10, 0x02, 0x1A, 0x0},         /* e4m3 1.5 min sub: tie -> 2 */
        {0x1p-16, 0x00, 0x01, 0x0},         /* e5m2 min subnormal */
        {0x1p-17, 0x00, 0x00, 0x0},         /* e5m2 tie -> 0 */
        {-0x1p-17, 0x80, 0x80, 0x8},
        {0.25, 0x28, 0x34, 0x0},            /* e2m1 tie between 0 and 0.5 -> 0 */
        {0.2500001, 0x28, 0x34, 0x1},
        {0.75, 0x34, 0x3A, 0x2},            /* tie between 0.5 and 1 -> 1 (even) */
        {1.25, 0x3A, 0x3D, 0x2},            /* tie between 1 and 1.5 -> 1 */
        {1.75, 0x3E, 0x3F, 0x4},            /* tie between 1.5 and 2 -> 2 */
        {2.5, 0x42, 0x41, 0x4},             /* tie 2 / 3 -> 2 */
        {3.5, 0x46, 0x43, 0x6},             /* tie 3 / 4 -> 4 */
        {5.0, 0x4A, 0x45, 0x6},             /* tie 4 / 6 -> 4 */
        {5.0000001, 0x4A, 0x45, 0x7},
        {7.0, 0x4E, 0x47, 0x7},
        {1.0 + 0x1p-4 + 0x1p-40, 0x39, 0x3C, 0x2}, /* single rounding from double */
        {1.0 + 0x1p-2 + 0x1p-40, 0x3A, 0x3D, 0x3},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        uint8_t a = tile_f64_to_e4m3_bits(c[i].v), b = tile_f64_to_e5m2_bits(c[i].v), d = tile_f64_to_e2m1_bits(c[i].v);
        CHECK(a == c[i].e4, "e4m3(%a) = %02x, want %02x", c[i].v, a, c[i].e4);
        CHECK(b == c[i].e5, "e5m2(%a) = %02x, want %02x", c[i].v, b, c[i].e5);
        CHECK(d == c[i].e2, "e2m1(%a) = %x, want %x", c[i].v, d, c[i].e2);
    }
    double qn = bitsd(0x7FF8000000000000ull), nqn = bitsd(0xFFF8000000000000ull);
    CHECK(tile_f64_to_e4m3_bits(qn) == 0x7F && tile_f64_to_e4m3_bits(nqn) == 0xFF, "e4m3 nan");
    CHECK(tile_f64_to_e5m2_bits(qn) == 0x7F && tile_f64_to_e5m2_bits(nqn) == 0xFF, "e5m2 nan");
    CHECK(tile_f64_to_e2m1_bits(qn) == 0x7 && tile_f64_to_e2m1_bits(nqn) == 0x7, "e2m1 nan -> +6");

    CHECK(tile_e4m3_bits_to_f64(0x7E) == 448.0 && tile_e4m3_bits_to_f64(0xFE) == -448.0, "e4m3 max");
    CHECK(isnan(tile_e4m3_bits_to_f64(0x7F)) && isnan(tile_e4m3_bits_to_f64(0xFF)) && signbit(tile_e4m3_bits_to_f64(0xFF)), "e4m3 nan");
    CHECK(tile_e4m3_bits_to_f64(0x78) == 256.0, "e4m3 0x78 is finite (no inf)");
    CHECK(tile_e4m3_bits_to_f64(0x01) == 0x1p-9, "e4m3 min sub");
    CHECK(tile_e4m3_bits_to_f64(0x08) == 0x1p-6, "e4m3 min normal");
    CHECK(tile_e5m2_bits_to_f64(0x7B) == 57344.0, "e5m2 max");
    CHECK(tile_e5m2_bits_to_f64(0x7C) == INFINITY && tile_e5m2_bits_to_f64(0xFC) == -INFINITY, "e5m2 inf");
    CHECK(isnan(tile_e5m2_bits_to_f64(0x7D)) && isnan(tile_e5m2_bits_to_f64(0x7E)) && isnan(tile_e5m2_bits_to_f64(0xFF)), "e5m2 nan");
    CHECK(tile_e5m2_bits_to_f64(0x01) == 0x1p-16, "e5m2 min sub");
    static const double e2[16] = {0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6};
    for (int i = 0; i < 16; i++) {
        CHECK(same(tile_e2m1_bits_to_f64((uint8_t)i), e2[i]), "e2m1 %d", i);
        CHECK(same(tile_e2m1_bits_to_f64((uint8_t)(i | 0xF0)), e2[i]), "e2m1 high nibble ignored %d", i);
        CHECK(tile_f64_to_e2m1_bits(e2[i]) == i, "e2m1 encode %d", i);
    }
    /* every fp8 value round-trips */
    for (int b = 0; b < 256; b++) {
        double v4 = tile_e4m3_bits_to_f64((uint8_t)b), v5 = tile_e5m2_bits_to_f64((uint8_t)b);
        if (!isnan(v4)) CHECK(tile_f64_to_e4m3_bits(v4) == b, "e4m3 rt %02x", b);
        if (!isnan(v5) && !isinf(v5)) CHECK(tile_f64_to_e5m2_bits(v5) == b, "e5m2 rt %02x", b);
    }
}

/* ---------- round_to, f64_to_int, wrap ---------- */
static void test_round_int(void) {
    CHECK(tile_round_to(TILE_DT_BF16, 1.0 + 0x1p-9) == 1.0, "round bf16");
    CHECK(tile_round_to(TILE_DT_F16, 1e6) == INFINITY, "round f16 overflow");
    CHECK(tile_round_to(TILE_DT_FP8_E4M3, 1e6) == 448.0, "round e4m3 sat");
    CHECK(tile_round_to(TILE_DT_FP8_E5M2, -INFINITY) == -57344.0, "round e5m2 -inf sat");
    CHECK(tile_round_to(TILE_DT_FP4_E2M1, 2.6) == 3.0, "round e2m1");
    CHECK(tile_round_to(TILE_DT_F32, 0.1) == (double)0.1f, "round f32");
    CHECK(tile_round_to(TILE_DT_F32, 1e39) == INFINITY, "round f32 overflow");
    CHECK(tile_round_to(TILE_DT_F32, 0x1p-150) == 0.0, "round f32 tie to 0");
    CHECK(tile_round_to(TILE_DT_F32, 0x1.8p-149) == 0x1p-148, "round f32 subnormal tie to even");
    CHECK(tile_round_to(TILE_DT_F64, 0.1) == 0.1, "round f64");
    CHECK(isnan(tile_round_to(TILE_DT_FP8_E4M3, NAN)), "round nan");
    CHECK(tile_round_to(TILE_DT_FP4_E2M1, NAN) == 6.0, "round e2m1 nan");
    CHECK(signbit(tile_round_to(TILE_DT_F16, -1e-30)), "round keeps -0");
    CHECK(tile_round_to(TILE_DT_I8, 300.7) == 127.0, "round int8");
    CHECK(tile_round_to(TILE_DT_U64, 1e30) == 18446744073709551616.0, "round u64");

    struct { tile_dtype dt; double v; int64_t want; } c[] = {
        {TILE_DT_I8, 127.9, 127},     {TILE_DT_I8, 128.0, 127},    {TILE_DT_I8, -128.9, -128},
        {TILE_DT_I8, -1e300, -128},   {TILE_DT_I8, -0.9, 0},       {TILE_DT_I8, NAN, 0},
        {TILE_DT_I8, INFINITY, 127},  {TILE_DT_I16, -40000.0, -32768}, {TILE_DT_I16, 2.5, 2},
        {TILE_DT_I32, 3e9, INT32_MAX}, {TILE_DT_I32, -3e9, INT32_MIN}, {TILE_DT_I32, -7.99, -7},
        {TILE_DT_I64, 0x1p63, INT64_MAX}, {TILE_DT_I64, -0x1p63, INT64_MIN},
        {TILE_DT_I64, 0x1.fffffffffffffp62, (int64_t)0x7FFFFFFFFFFFFC00}, {TILE_DT_I64, -INFINITY, INT64_MIN},
        {TILE_DT_I64, NAN, 0},        {TILE_DT_U8, -5.0, 0},       {TILE_DT_U8, 255.5, 255},
        {TILE_DT_U8, 256.0, 255},     {TILE_DT_U8, 3.99, 3},       {TILE_DT_U16, 1e9, 65535},
        {TILE_DT_U32, 5e9, 4294967295}, {TILE_DT_U32, -1.0, 0},    {TILE_DT_U64, 1e20, -1},
        {TILE_DT_U64, 0x1p63, INT64_MIN}, {TILE_DT_U64, -0.5, 0},  {TILE_DT_U64, NAN, 0},
        {TILE_DT_BOOL, 0.0, 0},       {TILE_DT_BOOL, -0.0, 0},     {TILE_DT_BOOL, 0.1, 1},
        {TILE_DT_BOOL, -3.0, 1},      {TILE_DT_BOOL, NAN, 1},      {TILE_DT_BOOL, INFINITY, 1},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        int64_t got = tile_f64_to_int(c[i].dt, c[i].v);
        CHECK(got == c[i].want, "f64_to_int(%s, %g) = %" PRId64 ", want %" PRId64, tile_dtype_name(c[i].dt),
              c[i].v, got, c[i].want);
    }

    CHECK(tile_wrap_int(TILE_DT_I8, 200) == -56, "wrap i8");
    CHECK(tile_wrap_int(TILE_DT_I8, -129) == 127, "wrap i8 neg");
    CHECK(tile_wrap_int(TILE_DT_U8, -1) == 255, "wrap u8");
    CHECK(tile_wrap_int(TILE_DT_I16, 0x18000) == -32768, "wrap i16");
    CHECK(tile_wrap_int(TILE_DT_U16, 0x12345) == 0x2345, "wrap u16");
    CHECK(tile_wrap_int(TILE_DT_I32, 0x80000000LL) == INT32_MIN, "wrap i32");
    CHECK(tile_wrap_int(TILE_DT_I32, -0x80000001LL) == INT32_MAX, "wrap i32 neg");
    CHECK(tile_wrap_int(TILE_DT_U32, -1) == 0xFFFFFFFFLL, "wrap u32");
    CHECK(tile_wrap_int(TILE_DT_I64, INT64_MIN) == INT64_MIN, "wrap i64");
    CHECK(tile_wrap_int(TILE_DT_U64, -1) == -1, "wrap u64 keeps bits");
    CHECK(tile_wrap_int(TILE_DT_BOOL, 256) == 1 && tile_wrap_int(TILE_DT_BOOL, 0) == 0, "bool");
}

/* ---------- load / store ---------- */
static void test_load_store(void) {
    unsigned char buf[64];

    /* fp4 nibble packing: element 2i low nibble, 2i+1 high nibble; the other nibble is kept */
    memset(buf, 0xAA, sizeof buf);
    tile_store_f(TILE_DT_FP4_E2M1, buf, 0, 1.0);  /* 0x2 */
    CHECK(buf[0] == 0xA2, "fp4 low nibble: %02x", buf[0]);
    tile_store_f(TILE_DT_FP4_E2M1, buf, 1, -6.0); /* 0xF */
    CHECK(buf[0] == 0xF2, "fp4 high nibble: %02x", buf[0]);
    tile_store_f(TILE_DT_FP4_E2M1, buf, 3, 0.5);  /* 0x1 */
    CHECK(buf[1] == 0x1A, "fp4 elem 3: %02x", buf[1]);
    tile_store_i(TILE_DT_FP4_E2M1, buf, 2, 3);    /* 0x5 */
    CHECK(buf[1] == 0x15, "fp4 elem 2: %02x", buf[1]);
    CHECK(buf[2] == 0xAA, "fp4 neighbour untouched");
    CHECK(tile_load_f(TILE_DT_FP4_E2M1, buf, 0) == 1.0 && tile_load_f(TILE_DT_FP4_E2M1, buf, 1) == -6.0 &&
          tile_load_f(TILE_DT_FP4_E2M1, buf, 2) == 3.0 && tile_load_f(TILE_DT_FP4_E2M1, buf, 3) == 0.5, "fp4 loads");
    CHECK(tile_load_bits(TILE_DT_FP4_E2M1, buf, 1) == 0xF, "fp4 bits");
    tile_store_bits(TILE_DT_FP4_E2M1, buf, 5, 0x1F); /* only the low 4 bits are stored */
    CHECK(buf[2] == 0xFA, "fp4 store bits masks: %02x", buf[2]);
    CHECK(tile_load_i(TILE_DT_FP4_E2M1, buf, 2) == 3, "fp4 load_i");

    /* integers: sign / zero extension, wrapping stores */
    memset(buf, 0, sizeof buf);
    tile_store_i(TILE_DT_I8, buf, 3, -1);
    CHECK(buf[3] == 0xFF && tile_load_i(TILE_DT_I8, buf, 3) == -1 && tile_load_f(TILE_DT_I8, buf, 3) == -1.0, "i8");
    CHECK(tile_load_i(TILE_DT_U8, buf, 3) == 255 && tile_load_bits(TILE_DT_U8, buf, 3) == 0xFF, "u8 view");
    tile_store_i(TILE_DT_I16, buf, 1, 70000);
    CHECK(tile_load_i(TILE_DT_I16, buf, 1) == 70000 - 65536, "i16 wrap");
    tile_store_i(TILE_DT_U32, buf, 2, -2);
    CHECK(tile_load_i(TILE_DT_U32, buf, 2) == 0xFFFFFFFELL && tile_load_f(TILE_DT_U32, buf, 2) == 4294967294.0, "u32");
    tile_store_i(TILE_DT_U64, buf, 1, -1);
    CHECK(tile_load_f(TILE_DT_U64, buf, 1) == 18446744073709551616.0, "u64 as double (rounded)");
    CHECK(tile_load_i(TILE_DT_U64, buf, 1) == -1, "u64 bits");
    tile_store_f(TILE_DT_I32, buf, 0, -1e10);
    CHECK(tile_load_i(TILE_DT_I32, buf, 0) == INT32_MIN, "store_f int saturates");
    tile_store_f(TILE_DT_U16, buf, 0, NAN);
    CHECK(tile_load_i(TILE_DT_U16, buf, 0) == 0, "store_f nan -> 0");
    tile_store_f(TILE_DT_BOOL, buf, 0, NAN);
    CHECK(buf[0] == 1, "bool nan -> 1");
    tile_store_f(TILE_DT_BOOL, buf, 1, -0.0);
    CHECK(buf[1] == 0, "bool -0 -> 0");
    tile_store_i(TILE_DT_BOOL, buf, 2, 256);
    CHECK(buf[2] == 1, "bool from int: nonzero -> 1");
    buf[3] = 7; /* a non-canonical bool byte loads as true */
    CHECK(tile_load_i(TILE_DT_BOOL, buf, 3) == 1 && tile_load_f(TILE_DT_BOOL, buf, 3) == 1.0, "bool load");
    CHECK(tile_load_bits(TILE_DT_BOOL, buf, 3) == 7, "bool bits are raw");

    /* unaligned multi-byte access through memcpy */
    tile_store_f(TILE_DT_F64, buf + 1, 2, -2.5);
    CHECK(tile_load_f(TILE_DT_F64, buf + 1, 2) == -2.5, "unaligned f64");
    tile_store_f(TILE_DT_F32, buf + 1, 1, 0.1);
    CHECK(tile_load_f(TILE_DT_F32, buf + 1, 1) == (double)0.1f, "f32");
    tile_store_f(TILE_DT_BF16, buf, 5, 3.14159);
    CHECK(tile_load_bits(TILE_DT_BF16, buf, 5) == 0x4049, "bf16 bits");
    tile_store_f(TILE_DT_F16, buf, 6, -65504.0);
    CHECK(tile_load_bits(TILE_DT_F16, buf, 6) == 0xFBFF && tile_load_f(TILE_DT_F16, buf, 6) == -65504.0, "f16");
    tile_store_f(TILE_DT_FP8_E4M3, buf, 40, -1000.0);
    CHECK(buf[40] == 0xFE && tile_load_f(TILE_DT_FP8_E4M3, buf, 40) == -448.0, "e4m3 store");
    tile_store_f(TILE_DT_FP8_E5M2, buf, 41, NAN);
    CHECK(buf[41] == 0x7F && isnan(tile_load_f(TILE_DT_FP8_E5M2, buf, 41)), "e5m2 nan store");
    tile_store_f(TILE_DT_F32, buf, 0, -NAN);
    CHECK(tile_load_bits(TILE_DT_F32, buf, 0) == 0xFFC00000u, "f32 -nan canonical");
    tile_store_f(TILE_DT_F64, buf, 0, bitsd(0x7FF0000000000123ull));
    CHECK(tile_load_bits(TILE_DT_F64, buf, 0) == 0x7FF0000000000123ull, "f64 stores bits unchanged");
    tile_store_f(TILE_DT_F32, buf, 0, 0x1p-149 * 0.5);
    CHECK(tile_load_bits(TILE_DT_F32, buf, 0) == 0, "f32 subnormal tie to 0");
    tile_store_f(TILE_DT_F32, buf, 0, 3.4028235677973366e38);
    CHECK(tile_load_bits(TILE_DT_F32, buf, 0) == 0x7F800000u, "f32 tie at max -> inf");

    /* load_i on floats truncates */
    tile_store_f(TILE_DT_F16, buf, 0, -2.75);
    CHECK(tile_load_i(TILE_DT_F16, buf, 0) == -2, "load_i float truncates");
}

/* int64 -> float: one rounding from the exact integer */
static void test_int_to_float(void) {
    unsigned char buf[16];
    /* 2^53 + 1 is not a double; as f32 it must round once: 2^53 (tie? no: distance 1 vs 2^29-1) */
    int64_t v = ((int64_t)1 << 53) + 1;
    tile_store_i(TILE_DT_F64, buf, 0, v);
    CHECK(tile_load_f(TILE_DT_F64, buf, 0) == 0x1p53, "i64->f64 rne");
    v = ((int64_t)1 << 53) + 3; /* tie between 2^53+2 and 2^53+4 -> +4 (even mantissa) */
    tile_store_i(TILE_DT_F64, buf, 0, v);
    CHECK(tile_load_f(TILE_DT_F64, buf, 0) == 0x1p53 + 4, "i64->f64 tie");
    /* double rounding trap: 2^24 + 1 + 2^-? can't exist in ints; use f32 with int above 2^53:
     * x = 2^60 + 2^36 + 1: f32 quantum at 2^60 is 2^37; x is just above the halfway point
     * 2^60 + 2^36, so it must round up to 2^60 + 2^37. Through double, x -> 2^60 + 2^36
     * (the +1 is lost), a tie that rounds to even: 2^60. */
    v = ((int64_t)1 << 60) + ((int64_t)1 << 36) + 1;
    tile_store_i(TILE_DT_F32, buf, 0, v);
    CHECK(tile_load_f(TILE_DT_F32, buf, 0) == 0x1p60 + 0x1p37, "i64->f32 single rounding: %a",
          tile_load_f(TILE_DT_F32, buf, 0));
    tile_store_i(TILE_DT_BF16, buf, 0, ((int64_t)1 << 60) + ((int64_t)1 << 52) + 1);
    CHECK(tile_load_f(TILE_DT_BF16, buf, 0) == 0x1p60 + 0x1p53, "i64->bf16 single rounding");
    tile_store_i(TILE_DT_F32, buf, 0, INT64_MIN);
    CHECK(tile_load_f(TILE_DT_F32, buf, 0) == -0x1p63, "i64 min");
    tile_store_i(TILE_DT_F32, buf, 0, INT64_MAX);
    CHECK(tile_load_f(TILE_DT_F32, buf, 0) == 0x1p63, "i64 max rounds to 2^63");
    tile_store_i(TILE_DT_F16, buf, 0, 65519);
    CHECK(tile_load_f(TILE_DT_F16, buf, 0) == 65504.0, "f16 65519");
    tile_store_i(TILE_DT_F16, buf, 0, 65520);
    CHECK(tile_load_f(TILE_DT_F16, buf, 0) == INFINITY, "f16 65520 -> inf");
    tile_store_i(TILE_DT_F16, buf, 0, -2049);
    CHECK(tile_load_f(TILE_DT_F16, buf, 0) == -2048.0, "f16 -2049 tie -> even");
    tile_store_i(TILE_DT_FP8_E4M3, buf, 0, 1000);
    CHECK(buf[0] == 0x7E, "e4m3 int saturates");
    tile_store_i(TILE_DT_FP8_E5M2, buf, 0, INT64_MIN);
    CHECK(buf[0] == 0xFB, "e5m2 int saturates");
    tile_store_i(TILE_DT_FP4_E2M1, buf, 0, 0);
    CHECK((buf[0] & 0xF) == 0, "e2m1 zero");
    tile_store_i(TILE_DT_FP8_E4M3, buf, 0, 0);
    CHECK(buf[0] == 0, "int 0 is +0");
    /* exhaustive-ish: small ints agree with the double path */
    for (int64_t i = -70000; i <= 70000; i += 7) {
        static const tile_dtype fl[] = {TILE_DT_F16, TILE_DT_BF16, TILE_DT_F32, TILE_DT_FP8_E4M3, TILE_DT_FP8_E5M2,
                                        TILE_DT_FP4_E2M1};
        for (size_t k = 0; k < sizeof fl / sizeof fl[0]; k++) {
            unsigned char a[8] = {0}, b[8] = {0};
            tile_store_i(fl[k], a, 0, i);
            tile_store_f(fl[k], b, 0, (double)i);
            if (memcmp(a, b, 8) != 0) { CHECK(0, "int %lld to %s", (long long)i, tile_dtype_name(fl[k])); break; }
        }
    }
}

/* ---------- f32 -> f16 / bf16 sweep against the f64 path ---------- */
static void sweep(uint64_t stride) {
    uint64_t bad16 = 0, badbf = 0, n = 0;
    for (uint64_t u = 0; u <= 0xFFFFFFFFull; u += stride) {
        float f = bitsf((uint32_t)u);
        double d = (double)f;
        uint16_t a = tile_f32_to_f16_bits(f), b = tile_f64_to_f16_bits(d);
        uint16_t c = tile_f32_to_bf16_bits(f), e = tile_f64_to_bf16_bits(d);
        n++;
        if (a != b && bad16++ < 5) fprintf(stderr, "f16 mismatch %08x: f32 path %04x, f64 path %04x\n", (unsigned)u, a, b);
        if (c != e && badbf++ < 5) fprintf(stderr, "bf16 mismatch %08x: f32 path %04x, f64 path %04x\n", (unsigned)u, c, e);
    }
    /* and around every f16/bf16 rounding boundary: each value +- a few ulps of f32 */
    for (uint32_t h = 0; h < 0x10000; h++) {
        float fs[2] = {tile_f16_bits_to_f32((uint16_t)h), tile_bf16_bits_to_f32((uint16_t)h)};
        for (int k = 0; k < 2; k++) {
            uint32_t base = fbits(fs[k]);
            for (int dlt = -3; dlt <= 3; dlt++) {
                uint32_t x = base + (uint32_t)(dlt * 0x1000) + (uint32_t)dlt; /* near the f16 halfway */
                uint32_t y = base + (uint32_t)(dlt * 0x4000) + (uint32_t)dlt; /* near the bf16 halfway */
                for (int j = 0; j < 2; j++) {
                    float f = bitsf(j ? y : x);
                    n++;
                    if (tile_f32_to_f16_bits(f) != tile_f64_to_f16_bits((double)f)) bad16++;
                    if (tile_f32_to_bf16_bits(f) != tile_f64_to_bf16_bits((double)f)) badbf++;
                }
            }
        }
    }
    CHECK(bad16 == 0, "%llu f32->f16 mismatches", (unsigned long long)bad16);
    CHECK(badbf == 0, "%llu f32->bf16 mismatches", (unsigned long long)badbf);
    printf("f32 sweep: %llu patterns (stride %llu)\n", (unsigned long long)n, (unsigned long long)stride);
}

int main(int argc, char **argv) {
    uint64_t stride = 61; /* a prime, so every mantissa bit position is exercised */
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--stride") == 0 && i + 1 < argc) stride = strtoull(argv[++i], NULL, 0);
        else { fprintf(stderr, "usage: %s [--stride N]\n", argv[0]); return 2; }
    }
    if (stride == 0) stride = 1;
    test_table();
    test_f16_bf16();
    test_fp8_fp4();
    test_round_int();
    test_load_store();
    test_int_to_float();
    double t0 = tile_now();
    sweep(stride);
    printf("sweep took %.2f s\n", tile_now() - t0);
    printf("%d checks, %d failed\n", g_checks, g_fail);
    return g_fail ? 1 : 0;
}
