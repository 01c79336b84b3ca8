/* test_dtype.c — bit-exact converters (round to nearest even) and the local reductions. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tlink.h"

static int fails;
#define EXPECT(cond, ...) do { if (!(cond)) { fails++; if (fails < 20) { printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } } } while (0)

static float bits2f(unsigned u) { float f; memcpy(&f, &u, 4); return f; }

int main(void) {
    /* f16: every finite value round-trips; every value's midpoint to the next rounds to even */
    for (unsigned h = 0; h < 0x10000; h++) {
        float f = tlink_f16_to_f32((uint16_t)h);
        if (isnan(f)) { EXPECT(isnan(tlink_f16_to_f32(tlink_f32_to_f16(f))), "f16 nan %04x", h); continue; }
        EXPECT(tlink_f32_to_f16(f) == h, "f16 round trip %04x -> %g -> %04x", h, f, tlink_f32_to_f16(f));
        if ((h & 0x7fff) < 0x7bff) { /* midpoint between h and h+1 (same sign, finite) */
            double mid = ((double)f + (double)tlink_f16_to_f32((uint16_t)(h + 1))) / 2;
            unsigned want = (h & 1) ? h + 1 : h;
            if ((float)mid == mid) EXPECT(tlink_f32_to_f16((float)mid) == want, "f16 tie %04x", h);
        }
    }
    EXPECT(tlink_f32_to_f16(65520.0f) == 0x7c00, "f16 overflow to inf");
    EXPECT(tlink_f32_to_f16(65519.0f) == 0x7bff, "f16 65519 -> max");
    EXPECT(tlink_f32_to_f16(bits2f(0x33000000)) == 0, "2^-25 ties to 0");
    EXPECT(tlink_f32_to_f16(bits2f(0x33000001)) == 1, "just above 2^-25 -> min subnormal");
    EXPECT(tlink_f32_to_f16(-0.0f) == 0x8000, "-0");
    /* bf16 */
    for (unsigned h = 0; h < 0x10000; h++) {
        float f = tlink_bf16_to_f32((uint16_t)h);
        if (isnan(f)) continue;
        EXPECT(tlink_f32_to_bf16(f) == h, "bf16 round trip %04x", h);
    }
    EXPECT(tlink_f32_to_bf16(bits2f(0x3f808000)) == 0x3f80, "bf16 tie to even (down)");
    EXPECT(tlink_f32_to_bf16(bits2f(0x3f818000)) == 0x3f82, "bf16 tie to even (up)");
    EXPECT(tlink_f32_to_bf16(bits2f(0x3f808001)) == 0x3f81, "bf16 above tie");
    /* fp8: all 256 codes round-trip; known values */
    for (unsigned v = 0; v < 256; v++) {
        float a = tlink_fp8_e4m3_to_f32((uint8_t)v), b = tlink_fp8_e5m2_to_f32((uint8_t)v);
        if (!isnan(a)) EXPECT(tlink_f32_to_fp8_e4m3(a) == v, "e4m3 round trip %02x (%g)", v, a);
        if (!isnan(b) && !isinf(b)) EXPECT(tlink_f32_to_fp8_e5m2(b) == v, "e5m2 round trip %02x (%g)", v, b);
    }
    EXPECT(tlink_fp8_e4m3_to_f32(0x7e) == 448.0f, "e4m3 max 448");
    EXPECT(isnan(tlink_fp8_e4m3_to_f32(0x7f)), "e4m3 nan");
    EXPECT(tlink_fp8_e4m3_to_f32(0x01) == ldexpf(1, -9), "e4m3 min subnormal");
    EXPECT(tlink_f32_to_fp8_e4m3(464.0f) == 0x7e, "e4m3 464 ties to 448");
    /* the satfinite rule of docs/numbers.md, shared with libtile (src/base/convert.h) */
    EXPECT(tlink_f32_to_fp8_e4m3(465.0f) == 0x7e, "e4m3 overflow saturates to 448");
    EXPECT(tlink_f32_to_fp8_e4m3(480.0f) == 0x7e, "e4m3 480 saturates to 448");
    EXPECT(tlink_f32_to_fp8_e4m3(INFINITY) == 0x7e, "e4m3 inf saturates to 448");
    EXPECT(tlink_f32_to_fp8_e4m3(-INFINITY) == 0xfe, "e4m3 -inf saturates to -448");
    EXPECT(tlink_f32_to_fp8_e4m3(NAN) == 0x7f, "e4m3 nan -> nan");
    EXPECT(tlink_fp8_e5m2_to_f32(0x7b) == 57344.0f, "e5m2 max");
    EXPECT(isinf(tlink_fp8_e5m2_to_f32(0x7c)), "e5m2 inf");
    EXPECT(tlink_f32_to_fp8_e5m2(1e6f) == 0x7b, "e5m2 overflow saturates to 57344");
    EXPECT(tlink_f32_to_fp8_e5m2(INFINITY) == 0x7b, "e5m2 inf saturates to 57344");
    EXPECT(tlink_f32_to_fp8_e5m2(NAN) == 0x7f, "e5m2 nan -> nan");
    EXPECT(tlink_f32_to_fp8_e4m3(1.0625f) == 0x38, "e4m3 1.0625 ties to 1.0");
    EXPECT(tlink_f32_to_fp8_e4m3(1.1875f) == 0x3a, "e4m3 1.1875 ties to 1.25");
    EXPECT(tlink_f32_to_fp8_e4m3(-2.0f) == 0xc0, "e4m3 -2");
    /* reductions */
    float a[3] = {1, 5, -2}, b[3] = {2, 3, 4};
    tlink_reduce_local(a, b, 3, TLINK_F32, TLINK_MAX);
    EXPECT(a[0] == 2 && a[1] == 5 && a[2] == 4, "f32 max");
    uint16_t h1[2] = {tlink_f32_to_f16(1.0f), tlink_f32_to_f16(2048.0f)}, h2[2] = {tlink_f32_to_f16(0.5f), tlink_f32_to_f16(1.0f)};
    tlink_reduce_local(h1, h2, 2, TLINK_F16, TLINK_SUM);
    EXPECT(tlink_f16_to_f32(h1[0]) == 1.5f, "f16 sum");
    EXPECT(tlink_f16_to_f32(h1[1]) == 2048.0f, "f16 2048+1 rounds to even 2048");
    int32_t i1[2] = {INT32_MAX, -7}, i2[2] = {1, 3};
    tlink_reduce_local(i1, i2, 2, TLINK_I32, TLINK_SUM);
    EXPECT(i1[0] == INT32_MIN && i1[1] == -4, "i32 wrapping sum");
    uint8_t u1 = 200, u2 = 100;
    tlink_reduce_local(&u1, &u2, 1, TLINK_U8, TLINK_SUM);
    EXPECT(u1 == 44, "u8 wrap");
    EXPECT(tlink_reduce_local(a, b, 3, TLINK_DTYPE_COUNT, TLINK_SUM) == TLINK_ERR_INVALID_ARG, "bad dtype");
    /* names */
    EXPECT(tlink_dtype_from_name("bfloat16") == TLINK_BF16 && tlink_dtype_from_name("nope") == -1, "dtype names");
    EXPECT(tlink_algo_from_name("rd") == TLINK_ALGO_RECURSIVE_DOUBLING && tlink_algo_from_name("ring") == TLINK_ALGO_RING, "algo names");
    EXPECT(!strcmp(tlink_error_string(TLINK_ERR_TIMEOUT), "timed out"), "status names");
    EXPECT(tlink_dtype_size(TLINK_FP8_E5M2) == 1 && tlink_dtype_size(TLINK_F64) == 8, "sizes");
    printf("%s (%d failures)\n", fails ? "FAIL" : "ok", fails);
    return fails ? 1 : 0;
}
