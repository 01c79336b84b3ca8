/* registry.c — the table of operators (ops.def) and its public face (tile_op_count, ...). */
#include <pthread.h>
#include <string.h>

#include "ops_int.h"

static const char *const family_names[TOPF_COUNT] = {
    [TOPF_UNARY] = "unary", [TOPF_BINARY] = "binary", [TOPF_TERNARY] = "ternary", [TOPF_REDUCE] = "reduce",
    [TOPF_ARGREDUCE] = "argreduce", [TOPF_SCAN] = "scan", [TOPF_COPY] = "copy", [TOPF_INDEX] = "index",
    [TOPF_NORM] = "norm", [TOPF_SOFTMAX] = "softmax", [TOPF_ACT] = "activation", [TOPF_ROPE] = "rope",
    [TOPF_LOSS] = "loss", [TOPF_QUANT] = "quant", [TOPF_GEMM] = "gemm", [TOPF_ATTN] = "attention",
};

const char *top_family_name(top_family f) { return f >= 0 && f < TOPF_COUNT ? family_names[f] : "?"; }

static top_op g_ops[] = {
#define X(name, fam, src, factory, dtypes, targets, rule, nargs, ref, aten, summary) \
    {name, fam, src, factory, dtypes, targets, rule, nargs, {name, NULL, ref, aten, summary, "src/ops/" src, factory, dtypes, targets}},
#include "ops.def"
#undef X
};
enum { NOPS = (int)(sizeof g_ops / sizeof g_ops[0]) };

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static void fill_once(void) {
    for (int i = 0; i < NOPS; i++) g_ops[i].info.family = family_names[g_ops[i].family];
}
static void fill_families(void) { pthread_once(&g_once, fill_once); }

const top_op *top_find(const char *name) {
    if (!name) return NULL;
    for (int i = 0; i < NOPS; i++)
        if (!strcmp(g_ops[i].name, name)) return &g_ops[i];
    return NULL;
}

const top_op *top_find_family(const char *name, top_family f) {
    const top_op *op = top_find(name);
    return op && op->family == f ? op : NULL;
}

int tile_op_count(void) { return NOPS; }

const tile_op_info *tile_op_at(int i) {
    if (i < 0 || i >= NOPS) return NULL;
    fill_families();
    return &g_ops[i].info;
}

const tile_op_info *tile_op_lookup(const char *name) {
    const top_op *op = top_find(name);
    if (!op) return NULL;
    fill_families();
    return &op->info;
}

tile_op_scalar tile_op_float(double v) { return (tile_op_scalar){v, (int64_t)v, TILE_DT_F64}; }
tile_op_scalar tile_op_int(int64_t v) { return (tile_op_scalar){(double)v, v, TILE_DT_I64}; }
tile_op_scalar tile_op_bool(int v) { return (tile_op_scalar){v ? 1.0 : 0.0, v ? 1 : 0, TILE_DT_BOOL}; }
