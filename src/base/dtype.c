/* dtype.c — the dtype table and the names people write for dtypes (base.h). */
#include "base.h"

#include <string.h>
#include <strings.h>

static const struct {
    const char *name;
    int bits;
    char kind;
} k_dtypes[TB_DT_COUNT] = {
#define X(e, name, bits, kind) [TB_DT_##e] = {name, bits, kind},
    TB_DTYPES(X)
#undef X
};

static bool dt_valid(tb_dtype dt) { return (int)dt >= 0 && (int)dt < TB_DT_COUNT; }

const char *tb_dtype_name(tb_dtype dt) { return dt_valid(dt) ? k_dtypes[dt].name : "?"; }
int tb_dtype_bits(tb_dtype dt) { return dt_valid(dt) ? k_dtypes[dt].bits : 0; }
char tb_dtype_kind(tb_dtype dt) { return dt_valid(dt) ? k_dtypes[dt].kind : 0; }

/* Aliases people write, beyond the canonical names (which are matched first). */
static const struct { const char *alias; tb_dtype dt; } k_aliases[] = {
    {"b1", TB_DT_BOOL},          {"boolean", TB_DT_BOOL},
    {"i8", TB_DT_I8},            {"s8", TB_DT_I8},
    {"i16", TB_DT_I16},          {"s16", TB_DT_I16},        {"short", TB_DT_I16},
    {"i32", TB_DT_I32},          {"s32", TB_DT_I32},        {"int", TB_DT_I32},
    {"i64", TB_DT_I64},          {"s64", TB_DT_I64},        {"long", TB_DT_I64},
    {"u8", TB_DT_U8},            {"u16", TB_DT_U16},
    {"u32", TB_DT_U32},          {"uint", TB_DT_U32},       {"u64", TB_DT_U64},
    {"half", TB_DT_F16},         {"f16", TB_DT_F16},        {"fp16", TB_DT_F16},
    {"bf16", TB_DT_BF16},        {"bfloat", TB_DT_BF16},
    {"float", TB_DT_F32},        {"f32", TB_DT_F32},        {"fp32", TB_DT_F32},
    {"double", TB_DT_F64},       {"f64", TB_DT_F64},        {"fp64", TB_DT_F64},
    {"float8_e4m3fn", TB_DT_FP8_E4M3}, {"e4m3", TB_DT_FP8_E4M3}, {"e4m3fn", TB_DT_FP8_E4M3},
    {"fp8_e4m3", TB_DT_FP8_E4M3},      {"fp8_e4m3fn", TB_DT_FP8_E4M3},
    {"f8e4m3", TB_DT_FP8_E4M3},        {"f8e4m3fn", TB_DT_FP8_E4M3},
    {"e5m2", TB_DT_FP8_E5M2},          {"fp8_e5m2", TB_DT_FP8_E5M2},
    {"f8e5m2", TB_DT_FP8_E5M2},
    {"float4_e2m1fn", TB_DT_FP4_E2M1}, {"e2m1", TB_DT_FP4_E2M1}, {"e2m1fn", TB_DT_FP4_E2M1},
    {"fp4", TB_DT_FP4_E2M1},           {"fp4_e2m1", TB_DT_FP4_E2M1},
    {"fp4_e2m1fn", TB_DT_FP4_E2M1},    {"f4e2m1", TB_DT_FP4_E2M1},
    {"f4e2m1fn", TB_DT_FP4_E2M1},
};

tb_dtype tb_dtype_parse(const char *name, bool ignore_case) {
    if (!name) return TB_DT_INVALID;
    int (*cmp)(const char *, const char *) = ignore_case ? strcasecmp : strcmp;
    for (int i = 0; i < TB_DT_COUNT; i++)
        if (cmp(name, k_dtypes[i].name) == 0) return (tb_dtype)i;
    for (size_t i = 0; i < sizeof k_aliases / sizeof k_aliases[0]; i++)
        if (cmp(name, k_aliases[i].alias) == 0) return k_aliases[i].dt;
    return TB_DT_INVALID;
}
