/* simplify.c — canonical form of integer affine expressions.
 *
 * An integer expression built from + - and multiplication by constants is rewritten as
 * c0 + k1*a1 + k2*a2 + ... where the atoms a_i are the maximal sub-expressions that are not
 * such sums (variables, loads, divisions), equal atoms merged. Because integer arithmetic
 * wraps (a ring modulo 2^bits), the rewrite gives the same value for every input. It turns
 * slice extents such as (bx + 1) * 64 - bx * 64 into the constant 64, which code generators
 * need, and keeps index expressions small. */
#include "ir.h"

#include <string.h>

/* ir_expr_equal (build.c) decides which atoms are the same. */
enum { MAX_TERMS = 16 };
typedef struct affine {
    int64_t c;
    const ir_expr *atom[MAX_TERMS];
    int64_t coeff[MAX_TERMS];
    int n;
    bool ok;
} affine;

static void add_term(affine *a, const ir_expr *atom, int64_t k) {
    for (int i = 0; i < a->n; i++)
        if (ir_expr_equal(a->atom[i], atom)) { a->coeff[i] = (int64_t)((uint64_t)a->coeff[i] + (uint64_t)k); return; }
    if (a->n == MAX_TERMS) { a->ok = false; return; }
    a->atom[a->n] = atom;
    a->coeff[a->n++] = k;
}

static void to_affine(const ir_expr *e, int64_t scale, affine *a, int depth) {
    if (!a->ok) return;
    if (depth > 64) { a->ok = false; return; }
    if (e->kind == IR_E_CONST) { a->c = (int64_t)((uint64_t)a->c + (uint64_t)scale * (uint64_t)e->ival); return; }
    if (e->kind == IR_E_BINARY && (e->op == IR_B_ADD || e->op == IR_B_SUB)) {
        to_affine(e->args[0], scale, a, depth + 1);
        to_affine(e->args[1], e->op == IR_B_ADD ? scale : (int64_t)(0 - (uint64_t)scale), a, depth + 1);
        return;
    }
    if (e->kind == IR_E_BINARY && e->op == IR_B_MUL) {
        if (e->args[1]->kind == IR_E_CONST) { to_affine(e->args[0], (int64_t)((uint64_t)scale * (uint64_t)e->args[1]->ival), a, depth + 1); return; }
        if (e->args[0]->kind == IR_E_CONST) { to_affine(e->args[1], (int64_t)((uint64_t)scale * (uint64_t)e->args[0]->ival), a, depth + 1); return; }
    }
    if (e->kind == IR_E_UNARY && e->op == IR_U_NEG) { to_affine(e->args[0], (int64_t)(0 - (uint64_t)scale), a, depth + 1); return; }
    add_term(a, e, scale);
}

ir_expr *ir_simplify_int(ir_module *m, ir_expr *e) {
    if (!e || tile_dtype_is_float(e->dtype) || e->dtype == TILE_DT_BOOL) return e;
    affine a = {0};
    a.ok = true;
    to_affine(e, 1, &a, 0);
    if (!a.ok) return e;
    tile_dtype dt = e->dtype;
    ir_expr *r = NULL;
    int64_t c = tile_wrap_int(dt, a.c);
    bool any_positive = false;
    for (int i = 0; i < a.n; i++) any_positive |= tile_wrap_int(dt, a.coeff[i]) > 0;
    if (!any_positive && c > 0) { /* 9 - 3 * i rather than -(3 * i) + 9 */
        r = ir_const_int(m, dt, c, e->loc);
        c = 0;
    }
    /* positive terms first, so the result reads a + b - c rather than -c + a + b */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < a.n; i++) {
            int64_t k = tile_wrap_int(dt, a.coeff[i]);
            if (k == 0 || (pass == 0) != (k > 0)) continue;
            int64_t mag = k > 0 ? k : -k;
            ir_expr *atom = (ir_expr *)a.atom[i];
            ir_expr *t = mag == 1 ? atom : ir_binary(m, IR_B_MUL, atom, ir_const_int(m, dt, mag, e->loc), e->loc);
            if (!r) r = k > 0 ? t : ir_unary(m, IR_U_NEG, t, e->loc);
            else r = ir_binary(m, k > 0 ? IR_B_ADD : IR_B_SUB, r, t, e->loc);
        }
    if (!r) return ir_const_int(m, dt, c, e->loc);
    if (c > 0) r = ir_binary(m, IR_B_ADD, r, ir_const_int(m, dt, c, e->loc), e->loc);
    else if (c < 0 && c != INT64_MIN) r = ir_binary(m, IR_B_SUB, r, ir_const_int(m, dt, -c, e->loc), e->loc);
    else if (c < 0) r = ir_binary(m, IR_B_ADD, r, ir_const_int(m, dt, c, e->loc), e->loc);
    return r;
}
