/* gen.c — random well-typed TileLang programs for `tile fuzz` (see progfuzz.h, docs/fuzz.md).
 *
 * A program is a list of independent operations ("ops"); each has its own input tensors and
 * writes its own output tensor, so the shrinker can drop any op and the rest stays valid.
 * Everything is held in fixed-size arrays (a program is one memcpy to clone). An op owns a
 * small expression pool (nodes with child indices) that is rendered as TileLang text.
 *
 * Validity by construction:
 * - element accesses are either inside loops over the tensor's extents, guarded by
 *   `if row < M and col < N`, or reduced modulo the extent (indices are never negative);
 * - every buffer is written before it is read (copies cover whole buffers; clipped copies
 *   give zeros; fills before guarded writes);
 * - `//` and `%` divide by positive constants; `/` by `abs(x) + 1`; log/sqrt/rsqrt/pow get
 *   non-negative arguments; exp only of arguments with a small magnitude bound;
 * - values that steer control or integer results (comparisons, float->int casts, floor,
 *   round, ...) are computed only from "exact" values (loaded inputs, constants, integer
 *   arithmetic, casts of exact values): a one-ulp difference between targets then cannot
 *   flip a branch or an integer, which would be a false mismatch.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fz_util.h"
#include "progfuzz_int.h"

/* ---------- random numbers ---------- */
uint64_t pf_splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static int rnd(pf_rng *r, int n) { return n <= 1 ? 0 : (int)(pf_splitmix(&r->s) % (uint64_t)n); }
static bool chance(pf_rng *r, int percent) { return rnd(r, 100) < percent; }
#define PICK(r, arr) ((arr)[rnd((r), (int)(sizeof(arr) / sizeof((arr)[0])))])

static const tile_dtype float_dts[] = {TILE_DT_F16, TILE_DT_BF16, TILE_DT_F32, TILE_DT_F32, TILE_DT_F64,
                                       TILE_DT_FP8_E4M3, TILE_DT_FP8_E5M2, TILE_DT_FP4_E2M1};
static const tile_dtype int_dts[] = {TILE_DT_I8, TILE_DT_I16, TILE_DT_I32, TILE_DT_I32, TILE_DT_I64,
                                     TILE_DT_U8, TILE_DT_U16, TILE_DT_U32, TILE_DT_U64};

static tile_dtype any_dtype(pf_rng *r) {
    int c = rnd(r, 10);
    if (c < 6) return PICK(r, float_dts);
    if (c < 9) return PICK(r, int_dts);
    return TILE_DT_BOOL;
}

static int pick_dim(pf_rng *r) {
    static const int dims[] = {1, 2, 3, 4, 5, 7, 8, 11, 13, 16, 17, 23, 31, 32, 33, 47, 64};
    return chance(r, 70) ? dims[rnd(r, 11)] : PICK(r, dims);
}
static int pick_block(pf_rng *r) {
    static const int b[] = {1, 2, 4, 8, 8, 16, 16, 32, 3, 5};
    return chance(r, 85) ? b[rnd(r, 8)] : PICK(r, b);
}

/* precision rank of a float dtype: smaller = coarser */
static int prec_rank(tile_dtype d) {
    switch (d) {
    case TILE_DT_FP4_E2M1: return 0;
    case TILE_DT_FP8_E5M2: return 1;
    case TILE_DT_FP8_E4M3: return 2;
    case TILE_DT_BF16: return 3;
    case TILE_DT_F16: return 4;
    case TILE_DT_F32: return 5;
    case TILE_DT_F64: return 6;
    default: return 7;
    }
}
static void note_prec(pf_op *op, tile_dtype d) {
    if (tile_dtype_is_float(d) && prec_rank(d) < prec_rank(op->tol_dt)) op->tol_dt = d;
}
static double int_mag(tile_dtype d) {
    if (d == TILE_DT_BOOL) return 1;
    int b = tile_dtype_bits(d);
    return b >= 64 ? 1.8e19 : ldexp(1.0, b);
}

/* ---------- expressions ---------- */
typedef struct gctx {
    pf_rng *r;
    pf_op *op;
    int budget;  /* nodes left */
} gctx;

static int new_node(gctx *g, int kind) {
    pf_op *op = g->op;
    if (op->nnodes >= PF_MAX_NODES) return -1;
    int id = op->nnodes++;
    pf_node *n = &op->nodes[id];
    memset(n, 0, sizeof *n);
    n->kind = (uint8_t)kind;
    n->a = n->b = n->c = -1;
    g->budget--;
    return id;
}
#define ND(g, i) (&(g)->op->nodes[i])

static tile_dtype int_result(tile_dtype a, tile_dtype b) {
    if (a == TILE_DT_BOOL) a = TILE_DT_I32;
    if (b == TILE_DT_BOOL) b = TILE_DT_I32;
    int wa = tile_dtype_bits(a), wb = tile_dtype_bits(b);
    if (wa != wb) return wa > wb ? a : b;
    return tile_dtype_is_signed(a) ? b : a;
}

static int gen_expr(gctx *g, int want, int depth);

static int const_float(gctx *g) {
    static const double cs[] = {0.5, 0.25, 1.5, 2.0, -0.75, 3.0, 0.125, -2.0, 1.0};
    int id = new_node(g, PF_N_CONST);
    if (id < 0) return -1;
    ND(g, id)->dt = TILE_DT_F32;
    ND(g, id)->cv = PICK(g->r, cs);
    ND(g, id)->exact = 1;
    ND(g, id)->mag = (float)fabs(ND(g, id)->cv);
    ND(g, id)->flt = 1;
    return id;
}
static int const_int(gctx *g, int lo, int hi) {
    int id = new_node(g, PF_N_CONST);
    if (id < 0) return -1;
    ND(g, id)->dt = TILE_DT_I32;
    ND(g, id)->cv = lo + rnd(g->r, hi - lo + 1);
    ND(g, id)->exact = 1;
    ND(g, id)->mag = (float)fabs(ND(g, id)->cv) + 1;
    ND(g, id)->weak = 1;
    return id;
}

/* operands of the op of the wanted category */
static int pick_operand(gctx *g, int want) {
    pf_op *op = g->op;
    int cand[PF_MAX_IN], n = 0;
    for (int i = 0; i < op->nin; i++) {
        if (op->leaf_mask && !(op->leaf_mask & (1u << i))) continue;
        tile_dtype d = op->in[i].ldt;
        int cat = tile_dtype_is_float(d) ? PF_W_F : d == TILE_DT_BOOL ? PF_W_B : PF_W_I;
        if (cat == want) cand[n++] = i;
    }
    return n ? cand[rnd(g->r, n)] : -1;
}

static int leaf(gctx *g, int want) {
    pf_op *op = g->op;
    int o = pick_operand(g, want);
    if (o >= 0 && chance(g->r, 80)) {
        int id = new_node(g, PF_N_LOAD);
        if (id < 0) return -1;
        pf_node *n = ND(g, id);
        n->arg = (int16_t)o;
        tile_dtype d = op->in[o].ldt;
        n->dt = tile_dtype_is_float(d) ? (d == TILE_DT_F64 ? TILE_DT_F64 : TILE_DT_F32) : d;
        n->flt = tile_dtype_is_float(d);
        n->exact = op->in[o].exact;
        n->mag = tile_dtype_is_float(d) ? (op->in[o].exact ? 1.0f : 4.0f) : (float)(d == TILE_DT_BOOL ? 1 : tile_dtype_is_signed(d) ? 8 : 16);
        if (!op->in[o].exact) n->mag = op->in[o].mag;
        return id;
    }
    if (want == PF_W_F) {
        if (op->nidx && chance(g->r, 20)) {
            int c = gen_expr(g, PF_W_I, 9);
            if (c < 0) return -1;
            int id = new_node(g, PF_N_CAST);
            if (id < 0) return -1;
            pf_node *n = ND(g, id);
            n->a = (int8_t)c;
            n->cast_to = chance(g->r, 80) ? TILE_DT_F32 : TILE_DT_F64;
            n->dt = n->cast_to;
            n->flt = 1;
            n->exact = 1;
            n->mag = ND(g, c)->mag;
            return id;
        }
        return const_float(g);
    }
    if (want == PF_W_I) {
        if (op->nidx && chance(g->r, 60)) {
            int id = new_node(g, PF_N_IDX);
            if (id < 0) return -1;
            pf_node *n = ND(g, id);
            n->arg = (int16_t)rnd(g->r, op->nidx);
            n->dt = TILE_DT_I32;
            n->exact = 1;
            n->mag = (float)op->idx_max[n->arg];
            n->weak = 0;
            return id;
        }
        return const_int(g, 0, 9);
    }
    /* bool: a comparison of a leaf with a constant */
    int a = chance(g->r, 50) ? leaf(g, PF_W_F) : leaf(g, PF_W_I);
    if (a < 0) return -1;
    int b = ND(g, a)->flt ? const_float(g) : const_int(g, 0, 5);
    if (b < 0) return -1;
    int id = new_node(g, PF_N_CMP);
    if (id < 0) return -1;
    pf_node *n = ND(g, id);
    n->op = (uint8_t)rnd(g->r, 6);
    n->a = (int8_t)a;
    n->b = (int8_t)b;
    n->dt = TILE_DT_BOOL;
    n->exact = ND(g, a)->exact;
    n->mag = 1;
    return id;
}

static int gen_exact(gctx *g, int want, int depth) {
    /* retry a few times for an exact expression, else a leaf (loads of exact operands,
     * constants and indices are exact) */
    for (int t = 0; t < 3; t++) {
        int save = g->op->nnodes, sb = g->budget;
        int e = gen_expr(g, want, depth);
        if (e >= 0 && ND(g, e)->exact) return e;
        g->op->nnodes = save;
        g->budget = sb;
    }
    for (int t = 0; t < 4; t++) {
        int save = g->op->nnodes, sb = g->budget;
        int e = leaf(g, want);
        if (e >= 0 && ND(g, e)->exact) return e;
        g->op->nnodes = save;
        g->budget = sb;
    }
    return want == PF_W_F ? const_float(g) : want == PF_W_I ? const_int(g, 0, 7) : -1;
}

static const char *const fn1_names[] = {
#define X(e, s) s,
    PF_FN1(X)
#undef X
};
const char *pf_fn1_name(int f) { return fn1_names[f]; }

static int gen_float(gctx *g, int depth) {
    pf_rng *r = g->r;
    int c = rnd(r, 100);
    if (c < 30) { /* binary arithmetic */
        int a = gen_expr(g, PF_W_F, depth + 1), b = gen_expr(g, PF_W_F, depth + 1);
        if (a < 0 || b < 0) return -1;
        int op = rnd(r, 6); /* + - * / max min */
        double ma = ND(g, a)->mag, mb = ND(g, b)->mag;
        if (op == 2 && ma * mb > 1e4) op = 0;
        int id = new_node(g, PF_N_BIN);
        if (id < 0) return -1;
        pf_node *n = ND(g, id);
        n->op = (uint8_t)(op == 0 ? PF_B_ADD : op == 1 ? PF_B_SUB : op == 2 ? PF_B_MUL : op == 3 ? PF_B_DIV : op == 4 ? PF_B_MAX : PF_B_MIN);
        n->a = (int8_t)a;
        n->b = (int8_t)b;
        n->flt = 1;
        n->dt = (ND(g, a)->dt == TILE_DT_F64 || ND(g, b)->dt == TILE_DT_F64) ? TILE_DT_F64 : TILE_DT_F32;
        n->mag = (float)(op <= 1 ? ma + mb : op == 2 ? ma * mb : op == 3 ? ma : fmax(ma, mb));
        n->exact = (op >= 4) && ND(g, a)->exact && ND(g, b)->exact;
        return id;
    }
    if (c < 38) { /* multiply by a power of two: stays exact */
        int a = gen_expr(g, PF_W_F, depth + 1);
        if (a < 0) return -1;
        static const double p2[] = {0.5, 2.0, 4.0, 0.25, 8.0, -1.0};
        double k = PICK(r, p2);
        if (ND(g, a)->mag * fabs(k) > 1e4) k = 0.5;
        int cst = new_node(g, PF_N_CONST);
        if (cst < 0) return -1;
        ND(g, cst)->cv = k;
        ND(g, cst)->flt = 1;
        ND(g, cst)->exact = 1;
        ND(g, cst)->dt = TILE_DT_F32;
        ND(g, cst)->mag = (float)fabs(k);
        int id = new_node(g, PF_N_BIN);
        if (id < 0) return -1;
        pf_node *n = ND(g, id);
        n->op = PF_B_MUL;
        n->a = (int8_t)a;
        n->b = (int8_t)cst;
        n->flt = 1;
        n->dt = ND(g, a)->dt;
        n->mag = ND(g, a)->mag * (float)fabs(k);
        n->exact = ND(g, a)->exact;
        return id;
    }
    if (c < 65) { /* math intrinsic */
        int a = gen_expr(g, PF_W_F, depth + 1);
        if (a < 0) return -1;
        int f = rnd(r, PF_F1_COUNT);
        double m = ND(g, a)->mag;
        bool ex = ND(g, a)->exact;
        if ((f == PF_F1_EXP || f == PF_F1_EXP2) && m > 8) f = PF_F1_TANH;
        if ((f == PF_F1_FLOOR || f == PF_F1_CEIL || f == PF_F1_ROUND || f == PF_F1_TRUNC) && !ex) f = PF_F1_SIN;
        int id = new_node(g, PF_N_CALL1);
        if (id < 0) return -1;
        pf_node *n = ND(g, id);
        n->op = (uint8_t)f;
        n->a = (int8_t)a;
        n->flt = 1;
        n->dt = ND(g, a)->dt;
        switch (f) {
        case PF_F1_EXP: n->mag = (float)exp(m); break;
        case PF_F1_EXP2: n->mag = (float)exp2(m); break;
        case PF_F1_LOG: case PF_F1_LOG2: n->mag = (float)(log2(m + 1) + 1); break;
        case PF_F1_SQRT: case PF_F1_RSQRT: n->mag = (float)(sqrt(m) + 1); break;
        case PF_F1_TANH: case PF_F1_SIN: case PF_F1_COS: case PF_F1_ERF: case PF_F1_SIGMOID: n->mag = 1; break;
        default: n->mag = (float)(m + 1); break;
        }
        n->exact = ex && (f == PF_F1_FLOOR || f == PF_F1_CEIL || f == PF_F1_ROUND || f == PF_F1_TRUNC || f == PF_F1_ABS || f == PF_F1_NEG);
        return id;
    }
    if (c < 70) { /* fma or pow */
        bool is_pow = chance(r, 40);
        int a = gen_expr(g, PF_W_F, depth + 1), b = is_pow ? -1 : gen_expr(g, PF_W_F, depth + 1), cc = is_pow ? -1 : gen_expr(g, PF_W_F, depth + 1);
        if (a < 0 || (!is_pow && (b < 0 || cc < 0))) return -1;
        if (!is_pow && ND(g, a)->mag * ND(g, b)->mag > 1e4) return a;
        int id = new_node(g, is_pow ? PF_N_POW : PF_N_FMA);
        if (id < 0) return -1;
        pf_node *n = ND(g, id);
        n->a = (int8_t)a;
        n->b = (int8_t)b;
        n->c = (int8_t)cc;
        n->flt = 1;
        n->dt = TILE_DT_F32;
        if (ND(g, a)->dt == TILE_DT_F64 || (!is_pow && (ND(g, b)->dt == TILE_DT_F64 || ND(g, cc)->dt == TILE_DT_F64))) n->dt = TILE_DT_F64;
        if (is_pow) {
            static const double ex[] = {0.5, 2.0, 1.5, -1.0, 3.0};
            n->cv = PICK(r, ex);
            double m = ND(g, a)->mag + 1;
            if (pow(m, n->cv) > 1e4) n->cv = 0.5;
            n->mag = (float)pow(m, fabs(n->cv));
        } else n->mag = ND(g, a)->mag * ND(g, b)->mag + ND(g, cc)->mag;
        return id;
    }
    if (c < 82) { /* cast, through a float or an integer type */
        bool via_int = chance(r, 35);
        int a = via_int ? gen_exact(g, PF_W_I, depth + 1) : gen_expr(g, PF_W_F, depth + 1);
        if (a < 0) return -1;
        tile_dtype to = via_int ? (chance(r, 80) ? TILE_DT_F32 : TILE_DT_F64) : PICK(r, float_dts);
        int id = new_node(g, PF_N_CAST);
        if (id < 0) return -1;
        pf_node *n = ND(g, id);
        n->a = (int8_t)a;
        n->cast_to = to;
        n->flt = 1;
        n->dt = to == TILE_DT_F64 ? TILE_DT_F64 : TILE_DT_F32;
        n->exact = ND(g, a)->exact;
        n->mag = ND(g, a)->mag;
        if (!n->exact) note_prec(g->op, to);
        if (to == TILE_DT_F16 && n->mag > 60000) n->cast_to = TILE_DT_F32;
        return id;
    }
    if (c < 92) { /* select */
        int cond = gen_exact(g, PF_W_B, depth + 1);
        int a = gen_expr(g, PF_W_F, depth + 1), b = gen_expr(g, PF_W_F, depth + 1);
        if (cond < 0 || a < 0 || b < 0) return -1;
        int id = new_node(g, PF_N_SEL);
        if (id < 0) return -1;
        pf_node *n = ND(g, id);
        n->op = (uint8_t)rnd(r, 2); /* 0: T.if_then_else, 1: a if c else b */
        n->a = (int8_t)cond;
        n->b = (int8_t)a;
        n->c = (int8_t)b;
        n->flt = 1;
        n->dt = (ND(g, a)->dt == TILE_DT_F64 || ND(g, b)->dt == TILE_DT_F64) ? TILE_DT_F64 : TILE_DT_F32;
        n->mag = fmaxf(ND(g, a)->mag, ND(g, b)->mag);
        n->exact = ND(g, a)->exact && ND(g, b)->exact;
        return id;
    }
    return leaf(g, PF_W_F);
}

static int gen_int(gctx *g, int depth) {
    pf_rng *r = g->r;
    int c = rnd(r, 100);
    if (c < 45) {
        int a = gen_expr(g, PF_W_I, depth + 1);
        if (a < 0) return -1;
        int op = rnd(r, 10);
        int b;
        static const int ops[] = {PF_B_ADD, PF_B_SUB, PF_B_MUL, PF_B_AND, PF_B_OR, PF_B_XOR, PF_B_SHL, PF_B_SHR, PF_B_FLOORDIV, PF_B_MOD};
        int bop = ops[op];
        tile_dtype ad = ND(g, a)->dt;
        if (bop == PF_B_SHL || bop == PF_B_SHR) b = const_int(g, 0, ad == TILE_DT_BOOL ? 3 : tile_dtype_bits(ad) + (chance(r, 10) ? 2 : -1));
        else if (bop == PF_B_FLOORDIV || bop == PF_B_MOD) b = const_int(g, 1, 9);
        else b = gen_expr(g, PF_W_I, depth + 1);
        if (b < 0) return -1;
        int id = new_node(g, PF_N_BIN);
        if (id < 0) return -1;
        pf_node *n = ND(g, id);
        n->op = (uint8_t)bop;
        n->a = (int8_t)a;
        n->b = (int8_t)b;
        pf_node *na = ND(g, a), *nb = ND(g, b);
        if (bop == PF_B_SHL || bop == PF_B_SHR) n->dt = na->dt == TILE_DT_BOOL ? TILE_DT_I32 : na->dt;
        else if (na->weak && nb->weak) n->dt = TILE_DT_I32;
        else if (na->weak) n->dt = nb->dt == TILE_DT_BOOL ? TILE_DT_I32 : nb->dt;
        else if (nb->weak) n->dt = na->dt == TILE_DT_BOOL ? TILE_DT_I32 : na->dt;
        else n->dt = int_result(na->dt, nb->dt);
        n->weak = na->weak && nb->weak;
        n->exact = 1;
        double m = bop == PF_B_ADD || bop == PF_B_SUB ? na->mag + nb->mag : bop == PF_B_MUL ? (double)na->mag * nb->mag
                 : bop == PF_B_FLOORDIV || bop == PF_B_SHR ? na->mag : bop == PF_B_MOD ? nb->mag : bop == PF_B_SHL ? int_mag(n->dt) : fmax(na->mag, nb->mag) * 2;
        if (!tile_dtype_is_signed(n->dt) && (bop == PF_B_SUB)) m = int_mag(n->dt);
        n->mag = (float)fmin(m, int_mag(n->dt));
        if (n->weak) { /* two literals would fold at compile time: keep one a variable */
            g->op->nnodes = id; /* drop */
            return a;
        }
        return id;
    }
    if (c < 60) { /* cast of an exact float or another integer */
        bool from_f = chance(r, 50);
        int a = from_f ? gen_exact(g, PF_W_F, depth + 1) : gen_expr(g, PF_W_I, depth + 1);
        if (a < 0) return -1;
        int id = new_node(g, PF_N_CAST);
        if (id < 0) return -1;
        pf_node *n = ND(g, id);
        n->a = (int8_t)a;
        n->cast_to = PICK(r, int_dts);
        n->dt = n->cast_to;
        n->exact = 1;
        n->mag = (float)fmin(ND(g, a)->mag + 1, int_mag(n->dt));
        return id;
    }
    if (c < 68) { /* unary */
        int a = gen_expr(g, PF_W_I, depth + 1);
        if (a < 0) return -1;
        int id = new_node(g, PF_N_UN);
        if (id < 0) return -1;
        pf_node *n = ND(g, id);
        tile_dtype ad = ND(g, a)->dt == TILE_DT_BOOL ? TILE_DT_I32 : ND(g, a)->dt;
        n->op = (uint8_t)((tile_dtype_is_signed(ad) && chance(r, 50)) ? PF_U_NEG : PF_U_BNOT);
        n->a = (int8_t)a;
        n->dt = ad;
        n->exact = 1;
        n->weak = ND(g, a)->weak;
        n->mag = n->op == PF_U_NEG ? ND(g, a)->mag : (float)int_mag(ad);
        if (n->weak) { g->op->nnodes = id; return a; }
        return id;
    }
    if (c < 78) { /* min/max */
        int a = gen_expr(g, PF_W_I, depth + 1), b = gen_expr(g, PF_W_I, depth + 1);
        if (a < 0 || b < 0) return -1;
        if (ND(g, a)->weak && ND(g, b)->weak) return a;
        int id = new_node(g, PF_N_BIN);
        if (id < 0) return -1;
        pf_node *n = ND(g, id);
        n->op = chance(r, 50) ? PF_B_MAX : PF_B_MIN;
        n->a = (int8_t)a;
        n->b = (int8_t)b;
        pf_node *na = ND(g, a), *nb = ND(g, b);
        n->dt = na->weak ? nb->dt : nb->weak ? na->dt : int_result(na->dt, nb->dt);
        if (n->dt == TILE_DT_BOOL) n->dt = TILE_DT_I32;
        n->exact = 1;
        n->mag = fmaxf(na->mag, nb->mag);
        return id;
    }
    if (c < 86) { /* select */
        int cond = gen_exact(g, PF_W_B, depth + 1);
        int a = gen_expr(g, PF_W_I, depth + 1), b = gen_expr(g, PF_W_I, depth + 1);
        if (cond < 0 || a < 0 || b < 0) return -1;
        /* give both arms the same type */
        tile_dtype t = ND(g, a)->weak ? ND(g, b)->dt : ND(g, b)->weak ? ND(g, a)->dt : int_result(ND(g, a)->dt, ND(g, b)->dt);
        if (t == TILE_DT_BOOL) t = TILE_DT_I32;
        int ca = new_node(g, PF_N_CAST), cb = new_node(g, PF_N_CAST);
        if (ca < 0 || cb < 0) return -1;
        ND(g, ca)->a = (int8_t)a; ND(g, ca)->cast_to = t; ND(g, ca)->dt = t; ND(g, ca)->exact = 1; ND(g, ca)->mag = ND(g, a)->mag;
        ND(g, cb)->a = (int8_t)b; ND(g, cb)->cast_to = t; ND(g, cb)->dt = t; ND(g, cb)->exact = 1; ND(g, cb)->mag = ND(g, b)->mag;
        int id = new_node(g, PF_N_SEL);
        if (id < 0) return -1;
        pf_node *n = ND(g, id);
        n->op = (uint8_t)rnd(r, 2);
        n->a = (int8_t)cond;
        n->b = (int8_t)ca;
        n->c = (int8_t)cb;
        n->dt = t;
        n->exact = 1;
        n->mag = fmaxf(ND(g, ca)->mag, ND(g, cb)->mag);
        return id;
    }
    return leaf(g, PF_W_I);
}

static int gen_bool(gctx *g, int depth) {
    pf_rng *r = g->r;
    int c = rnd(r, 100);
    if (c < 55) {
        bool f = chance(r, 50);
        int a = gen_exact(g, f ? PF_W_F : PF_W_I, depth + 1);
        int b = gen_exact(g, f ? PF_W_F : PF_W_I, depth + 1);
        if (a < 0 || b < 0) return -1;
        if (ND(g, a)->weak && ND(g, b)->weak) return leaf(g, PF_W_B);
        int id = new_node(g, PF_N_CMP);
        if (id < 0) return -1;
        pf_node *n = ND(g, id);
        n->op = (uint8_t)rnd(r, 6);
        n->a = (int8_t)a;
        n->b = (int8_t)b;
        n->dt = TILE_DT_BOOL;
        n->exact = 1;
        n->mag = 1;
        return id;
    }
    if (c < 75) {
        int a = gen_exact(g, PF_W_B, depth + 1), b = gen_exact(g, PF_W_B, depth + 1);
        if (a < 0 || b < 0) return -1;
        int id = new_node(g, PF_N_LOGIC);
        if (id < 0) return -1;
        pf_node *n = ND(g, id);
        n->op = (uint8_t)rnd(r, 2); /* and / or */
        n->a = (int8_t)a;
        n->b = (int8_t)b;
        n->dt = TILE_DT_BOOL;
        n->exact = 1;
        n->mag = 1;
        return id;
    }
    if (c < 82) {
        int a = gen_exact(g, PF_W_B, depth + 1);
        if (a < 0) return -1;
        int id = new_node(g, PF_N_LOGIC);
        if (id < 0) return -1;
        pf_node *n = ND(g, id);
        n->op = 2; /* not */
        n->a = (int8_t)a;
        n->dt = TILE_DT_BOOL;
        n->exact = 1;
        n->mag = 1;
        return id;
    }
    return leaf(g, PF_W_B);
}

static int gen_expr(gctx *g, int want, int depth) {
    if (depth >= g->op->max_depth || g->budget <= 4 || g->op->nnodes >= PF_MAX_NODES - 8) return leaf(g, want);
    if (want == PF_W_F) return gen_float(g, depth);
    if (want == PF_W_I) return gen_int(g, depth);
    return gen_bool(g, depth);
}

/* A root expression of category want; -1 when the pool ran out (the op is then dropped). */
static int gen_root(gctx *g, int want, bool exact) {
    int e = exact ? gen_exact(g, want, 0) : gen_expr(g, want, 0);
    return e;
}

/* ---------- ops ---------- */
static void add_in(pf_op *op, tile_dtype gdt, tile_dtype ldt, int rank, const int *shape, bool exact) {
    pf_input *in = &op->in[op->nin++];
    in->gdt = gdt;
    in->ldt = ldt;
    in->rank = rank;
    for (int d = 0; d < rank; d++) in->shape[d] = shape[d];
    in->exact = exact;
    in->mag = 1;
}

static bool prank_acc_ok(tile_dtype d) { return d == TILE_DT_F32 || d == TILE_DT_F64 || d == TILE_DT_F16 || d == TILE_DT_BF16; }

static int want_for(tile_dtype d) { return tile_dtype_is_float(d) ? PF_W_F : d == TILE_DT_BOOL ? PF_W_B : PF_W_I; }

/* ---------- GPU-shaped GEMM kernels ----------
 * The kernels TileLang users write for tensor cores: 16-bit or fp8 (or f32) operands staged
 * through shared memory, an f32 fragment accumulator, a T.Pipelined (num_stages 0..4) or
 * T.serial K loop, tiles and thread counts of the kind tuned on GPUs, ragged M, N, K, and an
 * epilogue. Every choice is legal TileLang (docs/fuzz.md says which rules are kept). */

/* Can `warps` warps split a bm x bn accumulator into 16 x 8 mma atoms evenly? (TileLang's
 * gemm partitions the warps as m_warp x n_warp with bm % (16 m_warp) == bn % (8 n_warp) == 0) */
static bool warp_partition_ok(int bm, int bn, int warps) {
    for (int mw = 1; mw <= warps; mw++)
        if (warps % mw == 0 && bm % (16 * mw) == 0 && bn % (8 * (warps / mw)) == 0) return true;
    return false;
}

static bool uses_operand(const pf_op *op, int e, int k) {
    if (e < 0) return false;
    const pf_node *n = &op->nodes[e];
    if (n->kind == PF_N_LOAD && n->arg == k) return true;
    return uses_operand(op, n->a, k) || uses_operand(op, n->b, k) || uses_operand(op, n->c, k);
}

static bool kgemm_fp8(tile_dtype d) { return d == TILE_DT_FP8_E4M3 || d == TILE_DT_FP8_E5M2; }

/* The shared memory a GEMM kernel's pipeline (and staged result) takes. */
static long kgemm_smem(const pf_op *op) {
    int st = op->stages > 1 ? op->stages : 1;
    long smem = (long)st * (op->blk[0] * op->blk[2] * (tile_dtype_bits(op->in[0].ldt) / 8) + op->blk[2] * op->blk[1] * (tile_dtype_bits(op->in[1].ldt) / 8));
    if (op->cstage == 1) smem += (long)op->blk[0] * op->blk[1] * tile_dtype_bits(op->out_dt) / 8;
    return smem;
}

bool pf_kgemm_legal(const pf_op *op) {
    if (op->kind != PF_OP_KGEMM) return true;
    tile_dtype a = op->in[0].ldt, b = op->in[1].ldt;
    bool fp8 = kgemm_fp8(a) || kgemm_fp8(b);
    if (fp8 ? !(kgemm_fp8(a) && kgemm_fp8(b)) : a != b) return false;
    if (fp8 && (op->transA || !op->transB || op->blk[2] % 32)) return false;
    if (op->afrag && (op->transA || tile_dtype_bits(a) != 16)) return false;
    if (op->blk[2] % (a == TILE_DT_F32 ? 8 : 16)) return false;
    if (!warp_partition_ok(op->blk[0], op->blk[1], op->threads / 32)) return false;
    if (op->blk[0] * op->blk[1] / op->threads > 128) return false;
    return kgemm_smem(op) <= 160 * 1024;
}

static int ragged(pf_rng *r, int blk, int max_tiles) {
    int q = rnd(r, max_tiles + 1), rem = chance(r, 25) ? 0 : rnd(r, blk);
    int v = q * blk + rem;
    return v < 1 ? 1 + rnd(r, blk) : v;
}

static bool gen_kgemm(pf_rng *r, pf_op *op, gctx *g) {
    static const tile_dtype kdts[] = {TILE_DT_F16, TILE_DT_F16, TILE_DT_BF16, TILE_DT_BF16, TILE_DT_F32, TILE_DT_FP8_E4M3, TILE_DT_FP8_E5M2};
    static const uint16_t ths[] = {128, 128, 256, 256, 384};
    static const int mn[] = {16, 32, 48, 64, 64, 96, 128, 128, 192, 256};
    tile_dtype adt = PICK(r, kdts), bdt = adt;
    bool fp8 = adt == TILE_DT_FP8_E4M3 || adt == TILE_DT_FP8_E5M2;
    if (fp8 && chance(r, 30)) bdt = adt == TILE_DT_FP8_E4M3 ? TILE_DT_FP8_E5M2 : TILE_DT_FP8_E4M3;
    int esz = tile_dtype_bits(adt) / 8;
    op->threads = PICK(r, ths);
    /* fp8 tensor cores read both operands K-major: A not transposed, B stored N x K */
    op->transA = fp8 ? 0 : chance(r, 25);
    op->transB = fp8 ? 1 : chance(r, 50);
    op->afrag = !fp8 && adt != TILE_DT_F32 && !op->transA && chance(r, 15);
    op->pipelined = chance(r, 80);
    op->stages = (uint8_t)rnd(r, 5);
    op->cstage = (uint8_t)(chance(r, 50) ? 0 : chance(r, 60) ? 1 : 2);
    static const tile_dtype odts[] = {TILE_DT_F32, TILE_DT_F32, TILE_DT_F16, TILE_DT_BF16, TILE_DT_BF16, TILE_DT_FP8_E4M3};
    op->out_dt = PICK(r, odts);
    op->acc_dt = TILE_DT_F32;
    static const uint8_t panels[] = {4, 8, 10};
    op->swizzle = chance(r, 20) ? PICK(r, panels) : 0;
    int warps = op->threads / 32;
    bool found = false;
    for (int t = 0; t < 64 && !found; t++) {
        int bm = PICK(r, mn), bn = PICK(r, mn);
        int bk = fp8 ? 32 << rnd(r, 3) : adt == TILE_DT_F32 ? 8 << rnd(r, 4) : 16 << rnd(r, 3);
        if (!warp_partition_ok(bm, bn, warps)) continue;
        if (bm * bn / op->threads > 128) continue; /* accumulator registers a thread */
        int st = op->stages > 1 ? op->stages : 1;
        long smem = (long)st * (bm * bk + bk * bn) * esz;
        if (op->cstage == 1) smem += (long)bm * bn * tile_dtype_bits(op->out_dt) / 8;
        if (smem > 160 * 1024) continue;
        op->blk[0] = bm, op->blk[1] = bn, op->blk[2] = bk;
        found = true;
    }
    if (!found) return false;
    int bm = op->blk[0], bn = op->blk[1], bk = op->blk[2];
    /* ragged sizes: whole tiles plus a tail; the interpreter runs every program, so the
     * volume stays small */
    op->dims[0] = ragged(r, bm, bm >= 128 ? 1 : 2);
    op->dims[1] = ragged(r, bn, bn >= 128 ? 1 : 2);
    op->K = ragged(r, bk, 3);
    while ((long)op->dims[0] * op->dims[1] * op->K > 8L << 20 && op->K > bk) op->K -= bk;
    int sa[2] = {op->transA ? op->K : op->dims[0], op->transA ? op->dims[0] : op->K};
    int sb[2] = {op->transB ? op->dims[1] : op->K, op->transB ? op->K : op->dims[1]};
    add_in(op, adt, adt, 2, sa, true);
    add_in(op, bdt, bdt, 2, sb, true);
    /* operand 2: the accumulator element (inexact); operand 3: the bias vector */
    pf_input *acc = &op->in[op->nin++];
    memset(acc, 0, sizeof *acc);
    acc->ldt = op->acc_dt;
    acc->gdt = TILE_DT_INVALID;
    acc->mag = (float)op->K;
    op->bias = chance(r, 40);
    if (op->bias) {
        static const tile_dtype bdts[] = {TILE_DT_F32, TILE_DT_F16, TILE_DT_BF16};
        tile_dtype d = PICK(r, bdts);
        add_in(op, d, d, 1, &op->dims[1], true);
    }
    op->red = (uint8_t)(chance(r, 30) ? 1 + rnd(r, 4) : 0);
    op->nidx = 2;
    op->idx_max[0] = bm;
    op->idx_max[1] = bn;
    op->root = -1;
    if (chance(r, 60)) {
        op->max_depth = 2 + rnd(r, 2);
        op->leaf_mask = (1u << 2) | (op->bias ? 1u << 3 : 0);
        op->root = (int8_t)gen_root(g, PF_W_F, false);
        if (op->root < 0) return false;
        if (!uses_operand(op, op->root, 2)) {
            /* keep the product in the result: C = C + e */
            int a = new_node(g, PF_N_LOAD), b = new_node(g, PF_N_BIN);
            if (a < 0 || b < 0) return false;
            pf_node *la = ND(g, a), *nb = ND(g, b);
            la->arg = 2, la->dt = TILE_DT_F32, la->flt = 1, la->mag = acc->mag;
            nb->op = PF_B_ADD, nb->a = (int8_t)a, nb->b = op->root, nb->dt = TILE_DT_F32, nb->flt = 1;
            nb->mag = la->mag + ND(g, op->root)->mag;
            op->root = (int8_t)b;
        }
    }
    return true;
}

static bool gen_op(pf_rng *r, pf_op *op, int form, int id) {
    memset(op, 0, sizeof *op);
    op->id = id;
    op->root = op->guard = op->alt = -1;
    op->tol_dt = TILE_DT_F64;
    op->max_depth = 2 + rnd(r, 3);
    gctx g = {r, op, 10 + rnd(r, 30)};
    if (form == PF_FORM_PLAIN) {
        int k = rnd(r, 100);
        op->kind = k < 35 ? PF_OP_MAP : k < 50 ? PF_OP_ROWRED : k < 62 ? PF_OP_GENSUM : k < 82 ? PF_OP_MATMUL : PF_OP_GATHER;
    } else {
        int k = rnd(r, 100);
        op->kind = k < 25 ? PF_OP_TMAP : k < 45 ? PF_OP_TGEMM : k < 60 ? PF_OP_TRED : k < 70 ? PF_OP_TELEM : PF_OP_KGEMM;
    }
    if (op->kind == PF_OP_TMAP || op->kind == PF_OP_TRED || op->kind == PF_OP_TELEM) {
        /* the thread count does not change what a tile program computes: vary it on a side
         * stream */
        static const uint16_t th[] = {128, 128, 256, 384};
        uint64_t t = r->s ^ 0x27d4eb2full;
        op->threads = th[pf_splitmix(&t) % 4];
    }
    if (op->kind == PF_OP_MAP || op->kind == PF_OP_ROWRED || op->kind == PF_OP_GENSUM || op->kind == PF_OP_MATMUL) {
        uint64_t t = r->s ^ 0x5bd1e995ull; /* a side stream: the main stream stays as before */
        op->symbolic = pf_splitmix(&t) % 100 < 30;
    }
    switch (op->kind) {
    case PF_OP_MAP: case PF_OP_TELEM: {
        op->rank = op->kind == PF_OP_TELEM ? 1 + rnd(r, 2) : 1 + rnd(r, 3);
        for (int d = 0; d < op->rank; d++) op->dims[d] = pick_dim(r);
        if (op->kind == PF_OP_TELEM) { op->blk[0] = pick_block(r); op->blk[1] = pick_block(r); }
        int nin = 1 + rnd(r, 3);
        for (int i = 0; i < nin; i++) {
            tile_dtype dt = any_dtype(r);
            int mode = op->rank >= 2 ? rnd(r, 4) : 0; /* 0 full, 1 last dim, 2 first dim, 3 gathered (mod) */
            if (mode == 0 || mode == 3) add_in(op, dt, dt, op->rank, op->dims, true);
            else if (mode == 1) add_in(op, dt, dt, 1, &op->dims[op->rank - 1], true);
            else add_in(op, dt, dt, 1, &op->dims[0], true);
            op->in[i].mode = (uint8_t)mode;
            if (mode == 3) op->in[i].gather_a = (uint8_t)(1 + rnd(r, 5)), op->in[i].gather_b = (uint8_t)rnd(r, 7);
        }
        op->nidx = op->rank;
        for (int d = 0; d < op->rank; d++) op->idx_max[d] = op->dims[d];
        op->out_dt = any_dtype(r);
        op->reverse = chance(r, 15);
        if (chance(r, 25)) { op->guard = (int8_t)gen_root(&g, PF_W_B, true); if (op->guard < 0) return false; }
        op->root = (int8_t)gen_root(&g, want_for(op->out_dt), want_for(op->out_dt) != PF_W_F);
        if (op->root < 0) return false;
        break;
    }
    case PF_OP_ROWRED: case PF_OP_GENSUM: {
        op->rank = 2;
        op->dims[0] = pick_dim(r);
        op->K = pick_dim(r);
        int kd[2] = {op->dims[0], op->K};
        int nin = 1 + rnd(r, 2);
        bool intred = chance(r, 20) && op->kind == PF_OP_ROWRED;
        for (int i = 0; i < nin; i++) {
            tile_dtype dt = intred && i == 0 ? PICK(r, int_dts) : chance(r, 80) ? PICK(r, float_dts) : any_dtype(r);
            if (chance(r, 30)) { add_in(op, dt, dt, 1, &op->K, true); op->in[i].mode = 1; }
            else add_in(op, dt, dt, 2, kd, true);
        }
        op->nidx = 2; /* i, k */
        op->idx_max[0] = op->dims[0];
        op->idx_max[1] = op->K;
        op->redop = (uint8_t)rnd(r, 3); /* sum max min */
        if (intred) {
            op->acc_int = 1;
            op->root = (int8_t)gen_root(&g, PF_W_I, true);
            op->out_dt = chance(r, 50) ? PICK(r, int_dts) : PICK(r, float_dts);
        } else {
            op->root = (int8_t)gen_root(&g, PF_W_F, false);
            op->out_dt = PICK(r, float_dts);
        }
        if (op->root < 0) return false;
        break;
    }
    case PF_OP_MATMUL: {
        op->dims[0] = pick_dim(r);
        op->dims[1] = pick_dim(r);
        op->K = pick_dim(r);
        op->batch = chance(r, 20) ? 1 + rnd(r, 3) : 0;
        op->transA = chance(r, 30);
        op->transB = chance(r, 30);
        tile_dtype adt = chance(r, 85) ? PICK(r, float_dts) : TILE_DT_I8;
        tile_dtype bdt = chance(r, 60) ? adt : tile_dtype_is_float(adt) ? PICK(r, float_dts) : TILE_DT_I8;
        int sa[3], sb[3], n = 0;
        if (op->batch) sa[n] = sb[n] = op->batch, n++;
        sa[n] = op->transA ? op->K : op->dims[0];
        sa[n + 1] = op->transA ? op->dims[0] : op->K;
        sb[n] = op->transB ? op->dims[1] : op->K;
        sb[n + 1] = op->transB ? op->K : op->dims[1];
        add_in(op, adt, adt, n + 2, sa, true);
        add_in(op, bdt, bdt, n + 2, sb, true);
        op->acc_int = !tile_dtype_is_float(adt) && !tile_dtype_is_float(bdt);
        op->out_dt = op->acc_int ? (chance(r, 70) ? TILE_DT_I32 : PICK(r, int_dts)) : PICK(r, float_dts);
        op->variant = (uint8_t)rnd(r, 3); /* 0 acc scalar, 1 C += in place, 2 generator sum */
        if (op->acc_int && op->variant == 1 && tile_dtype_is_float(op->out_dt)) op->variant = 0;
        op->root = -1;
        break;
    }
    case PF_OP_GATHER: {
        op->rank = 1 + rnd(r, 2);
        for (int d = 0; d < op->rank; d++) op->dims[d] = pick_dim(r);
        int sshape[2] = {pick_dim(r), pick_dim(r)};
        tile_dtype dt = any_dtype(r);
        add_in(op, dt, dt, op->rank, sshape, true);
        op->in[0].mode = 4; /* index arithmetic modulo the source extent, or shifted + guarded */
        for (int d = 0; d < op->rank; d++) {
            op->gather[d].a = (uint8_t)rnd(r, 4);
            op->gather[d].b = (uint8_t)rnd(r, 4);
            op->gather[d].c = (uint8_t)rnd(r, 9);
            op->gather[d].shift = (uint8_t)(chance(r, 40) ? 1 : 0);
        }
        op->nidx = op->rank;
        for (int d = 0; d < op->rank; d++) op->idx_max[d] = op->dims[d];
        op->out_dt = chance(r, 50) ? dt : any_dtype(r);
        op->root = (int8_t)gen_root(&g, want_for(op->out_dt), want_for(op->out_dt) != PF_W_F);
        if (op->root < 0) return false;
        if (chance(r, 50)) { op->alt = (int8_t)gen_root(&g, want_for(op->out_dt), true); if (op->alt < 0) return false; }
        else op->alt = -1;
        break;
    }
    case PF_OP_TMAP: {
        op->rank = 1 + rnd(r, 3);
        for (int d = 0; d < op->rank; d++) op->dims[d] = pick_dim(r);
        op->blk[0] = pick_block(r);
        op->blk[1] = pick_block(r);
        int nin = 1 + rnd(r, 3);
        for (int i = 0; i < nin; i++) {
            tile_dtype dt = any_dtype(r);
            tile_dtype bdt = chance(r, 60) ? dt : chance(r, 50) ? TILE_DT_F32 : any_dtype(r);
            if (op->rank >= 2 && chance(r, 25)) { add_in(op, dt, bdt, 1, &op->dims[op->rank - 1], true); op->in[i].mode = 1; }
            else add_in(op, dt, bdt, op->rank, op->dims, true);
            op->in[i].scope = (uint8_t)rnd(r, 3);
            op->in[i].slice = chance(r, 30);
            /* a converting copy of an exact value is exact; the loaded value has bdt */
            note_prec(op, TILE_DT_F64);
        }
        op->nidx = op->rank >= 2 ? 2 : 1;
        op->idx_max[0] = op->rank >= 2 ? op->blk[0] : op->blk[1];
        op->idx_max[1] = op->blk[1];
        op->out_dt = any_dtype(r);
        op->buf_dt = want_for(op->out_dt) == PF_W_F ? (chance(r, 60) ? TILE_DT_F32 : PICK(r, float_dts)) : op->out_dt;
        op->pipelined = chance(r, 30); /* here: fill first and guard the store */
        if (op->pipelined) { op->guard = (int8_t)gen_root(&g, PF_W_B, true); if (op->guard < 0) return false; }
        op->root = (int8_t)gen_root(&g, want_for(op->out_dt), want_for(op->out_dt) != PF_W_F);
        if (op->root < 0) return false;
        if (want_for(op->out_dt) == PF_W_F) note_prec(op, op->buf_dt);
        break;
    }
    case PF_OP_TGEMM: {
        op->dims[0] = pick_dim(r);
        op->dims[1] = pick_dim(r);
        op->K = pick_dim(r);
        static const int gb[] = {4, 8, 8, 16, 16, 32, 32, 64, 3, 5, 12};
        op->blk[0] = chance(r, 90) ? gb[rnd(r, 8)] : PICK(r, gb);
        op->blk[1] = chance(r, 90) ? gb[rnd(r, 8)] : PICK(r, gb);
        op->blk[2] = chance(r, 90) ? gb[rnd(r, 8)] : PICK(r, gb);
        op->transA = chance(r, 30);
        op->transB = chance(r, 30);
        tile_dtype adt = chance(r, 85) ? PICK(r, float_dts) : TILE_DT_I8;
        tile_dtype bdt = chance(r, 70) ? adt : tile_dtype_is_float(adt) ? PICK(r, float_dts) : TILE_DT_I8;
        int sa[2] = {op->transA ? op->K : op->dims[0], op->transA ? op->dims[0] : op->K};
        int sb[2] = {op->transB ? op->dims[1] : op->K, op->transB ? op->K : op->dims[1]};
        add_in(op, adt, adt, 2, sa, true);
        add_in(op, bdt, bdt, 2, sb, true);
        op->acc_int = !tile_dtype_is_float(adt) && !tile_dtype_is_float(bdt);
        op->acc_dt = op->acc_int ? TILE_DT_I32 : chance(r, 85) ? TILE_DT_F32 : TILE_DT_F64;
        op->out_dt = op->acc_int ? (chance(r, 70) ? TILE_DT_I32 : PICK(r, int_dts)) : PICK(r, float_dts);
        op->pipelined = chance(r, 50);
        op->stages = (uint8_t)(1 + rnd(r, 3));
        op->in[0].scope = (uint8_t)(chance(r, 80) ? 0 : 1);
        op->in[1].scope = (uint8_t)(chance(r, 80) ? 0 : 1);
        op->variant = (uint8_t)rnd(r, 3); /* 0 T.clear, 1 T.fill 0, 2 epilogue expression */
        if (op->variant == 2 && !op->acc_int) {
            /* epilogue: operand 2 is the accumulator element (inexact) */
            pf_input *acc = &op->in[op->nin++];
            memset(acc, 0, sizeof *acc);
            acc->ldt = op->acc_dt;
            acc->gdt = TILE_DT_INVALID;
            acc->exact = 0;
            acc->mag = (float)op->K;
            op->nidx = 2;
            op->idx_max[0] = op->blk[0];
            op->idx_max[1] = op->blk[1];
            op->max_depth = 2;
            op->leaf_mask = 1u << 2;
            op->root = (int8_t)gen_root(&g, PF_W_F, false);
            if (op->root < 0) return false;
        } else {
            if (op->variant == 2) op->variant = 0;
            op->root = -1;
        }
        break;
    }
    case PF_OP_TRED: {
        op->dims[0] = pick_dim(r);
        op->dims[1] = pick_dim(r);
        op->blk[0] = pick_block(r);
        op->blk[1] = pick_block(r);
        op->rdim = (uint8_t)rnd(r, 2);
        op->redop = (uint8_t)rnd(r, 5); /* sum max min abssum absmax */
        bool isint = chance(r, 15);
        tile_dtype dt = isint ? PICK(r, int_dts) : PICK(r, float_dts);
        tile_dtype bdt = isint ? (chance(r, 50) ? dt : TILE_DT_I32) : (chance(r, 50) ? TILE_DT_F32 : chance(r, 50) ? dt : TILE_DT_F64);
        if (isint && tile_dtype_bits(bdt) < 32) bdt = TILE_DT_I32;
        if (isint && (op->redop == 3 || op->redop == 4)) op->redop = 0;
        add_in(op, dt, bdt, 2, op->dims, true);
        op->acc_dt = isint ? bdt : chance(r, 70) ? TILE_DT_F32 : bdt;
        if (!isint && prank_acc_ok(op->acc_dt) == false) op->acc_dt = TILE_DT_F32;
        op->acc_int = isint;
        op->out_dt = isint ? (chance(r, 50) ? op->acc_dt : PICK(r, int_dts)) : PICK(r, float_dts);
        op->pipelined = chance(r, 30);
        op->stages = (uint8_t)(1 + rnd(r, 3));
        op->variant = (uint8_t)rnd(r, 3); /* 0 clear=False over tiles, 1 + elementwise step, 2 + masking of the ragged tail */
        op->clear = chance(r, 30);        /* reduce with clear=True into a temporary, then fold in */
        op->nidx = 2;
        op->idx_max[0] = op->blk[0];
        op->idx_max[1] = op->blk[1];
        if (op->variant >= 1 && !isint) {
            op->root = (int8_t)gen_root(&g, PF_W_F, false);
            if (op->root < 0) return false;
            note_prec(op, bdt);
        } else {
            op->root = -1;
            if (op->variant == 1) op->variant = 0;
        }
        break;
    }
    case PF_OP_KGEMM:
        if (!gen_kgemm(r, op, &g)) return false;
        break;
    }
    return true;
}

pf_prog *pf_generate(uint64_t seed, int form) {
    pf_prog *p = fz_xcalloc(1, sizeof *p);
    pf_rng r = {seed * 0x2545f4914f6cdd1dull + 0x1234567ull};
    pf_splitmix(&r.s);
    p->seed = seed;
    p->form = form == PF_FORM_ANY ? rnd(&r, 2) : form;
    int nops = 1 + rnd(&r, chance(&r, 30) ? PF_MAX_OPS : 3);
    for (int i = 0; i < nops; i++) {
        pf_op *op = &p->ops[p->nops];
        for (int t = 0; t < 4; t++)
            if (gen_op(&r, op, p->form, i)) { p->nops++; break; }
    }
    if (!p->nops) { /* the pools always fit in practice; keep a trivial op if not */
        pf_op *op = &p->ops[p->nops++];
        memset(op, 0, sizeof *op);
        op->kind = p->form == PF_FORM_PLAIN ? PF_OP_MATMUL : PF_OP_TGEMM;
        op->dims[0] = op->dims[1] = op->K = 4;
        op->blk[0] = op->blk[1] = op->blk[2] = 4;
        int s[2] = {4, 4};
        add_in(op, TILE_DT_F32, TILE_DT_F32, 2, s, true);
        add_in(op, TILE_DT_F32, TILE_DT_F32, 2, s, true);
        op->out_dt = op->acc_dt = TILE_DT_F32;
        op->root = op->guard = op->alt = -1;
        op->tol_dt = TILE_DT_F64;
    }
    return p;
}

pf_prog *pf_clone(const pf_prog *p) {
    pf_prog *q = fz_xmalloc(sizeof *q);
    memcpy(q, p, sizeof *q);
    return q;
}
void pf_prog_free(pf_prog *p) { free(p); }
int pf_prog_form(const pf_prog *p) { return p->form; }

static int count_nodes(const pf_op *op, int e) {
    if (e < 0) return 0;
    const pf_node *n = &op->nodes[e];
    return 1 + count_nodes(op, n->a) + count_nodes(op, n->b) + count_nodes(op, n->c);
}

long pf_prog_size(const pf_prog *p) {
    long s = 0;
    for (int i = 0; i < p->nops; i++) {
        const pf_op *op = &p->ops[i];
        s += 1000 + 10 * (count_nodes(op, op->root) + count_nodes(op, op->guard) + count_nodes(op, op->alt));
        long el = 1;
        for (int d = 0; d < 3; d++) el *= op->dims[d] > 0 ? op->dims[d] : 1;
        el *= op->K > 0 ? op->K : 1;
        el *= op->batch > 0 ? op->batch : 1;
        s += el / 16 + op->nin * 20;
        for (int d = 0; d < 3; d++) s += op->blk[d];
        for (int k = 0; k < op->nin; k++) s += op->in[k].gdt != TILE_DT_F32;
        s += op->out_dt != TILE_DT_F32;
    }
    return s;
}
