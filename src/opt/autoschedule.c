/* autoschedule.c — the `autoschedule` pass: schedules plain-form loop nests for the CPU.
 *
 * In:  a verified plain-form ir_func (every loop SERIAL, as written).
 * Out: the same function with
 *   - contractions (matmul, batched matmul, the generator `sum(...)` form, A or B read
 *     transposed, C written once or accumulated) replaced by one IR_S_GEMM on whole
 *     regions, inside the batch loops if any, preceded by IR_S_ASSERTs where the bounds of
 *     the original element accesses are not evident (the GEMM clips, the loops would have
 *     failed);
 *   - the outermost loop of every other nest that carries no dependence (deps.h) marked
 *     PARALLEL (par_group_depth 1), and the innermost dependence-free loops inside it marked
 *     VECTORIZED (elementwise / broadcast nests, row reductions, anything else: fallback).
 * Every decision is logged at TILE_LOG=info; loops left serial are logged with the reason.
 * Tile-form functions are left alone (their blocks and T.Parallel loops are already
 * scheduled by the author).
 *
 * Same meaning: the GEMM of the interpreter sums over k in order in C's compute dtype with
 * products rounded once, exactly like the loops it replaces, so results are bit-identical
 * under the interpreter; only code generators reassociate. See docs/tileopt.md. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deps.h"
#include "opt.h"

/* The batch loop around a GEMM becomes PARALLEL (the verifier allows tile operations in a
 * parallel loop outside kernels); 0 keeps it serial. */
#ifndef OPT_PARALLEL_BATCH_GEMM
#define OPT_PARALLEL_BATCH_GEMM 1
#endif

enum { NEST_MAX = 8 };

typedef struct sched {
    ir_module *m;
    ir_func *f;
} sched;

static ir_stmt *single(ir_stmt *s) {
    while (s && s->kind == IR_S_SEQ && s->nbody == 1 && s->body) s = s->body[0];
    return s;
}


static bool expr_has_load(const ir_expr *e) {
    if (!e) return false;
    if (e->kind == IR_E_LOAD) return true;
    for (int i = 0; i < e->nargs; i++)
        if (expr_has_load(e->args[i])) return true;
    return false;
}

/* e with every reference to v replaced by r (new nodes where something changes). */
static ir_expr *subst(ir_module *m, ir_expr *e, const ir_var *v, ir_expr *r) {
    if (!e) return e;
    if (e->kind == IR_E_VAR) return e->var == v ? r : e;
    if (!ir_expr_uses_var(e, v)) return e;
    ir_expr *n = TILE_NEW(&m->arena, ir_expr);
    *n = *e;
    n->args = TILE_NEW_ARRAY(&m->arena, ir_expr *, e->nargs);
    for (int i = 0; i < e->nargs; i++) n->args[i] = subst(m, e->args[i], v, r);
    return n;
}

/* ---------- contractions ---------- */
typedef struct mm {
    ir_stmt *loops[NEST_MAX]; /* all loops of the nest, outermost first (the k loop too) */
    int nloops;
    ir_stmt *kloop, *rloop, *cloop;
    ir_stmt *store;           /* the statement writing C */
    const ir_var *acc;        /* V1: the local accumulator */
    const ir_expr *prod;      /* MUL(x, y) */
    bool clear;
    tile_dtype T;             /* accumulation dtype */
    ir_buffer *A, *B, *C;
    ir_expr *const *aidx, *const *bidx;
    bool trans_a, trans_b;
} mm;

static bool has_nest_var(const mm *q, const ir_expr *e) {
    for (int i = 0; i < q->nloops; i++)
        if (ir_expr_uses_var(e, q->loops[i]->var)) return true;
    return false;
}

/* e == v + (terms of no nest loop other than `allow`, which may be any batch loop):
 * affine, coefficient 1 on v, 0 on r/c/k loops other than v. */
static bool pinned_by(const mm *q, const ir_expr *e, const ir_var *v) {
    if (expr_has_load(e)) return false;
    int64_t c;
    if (!opt_affine_coeff(e, v, &c) || c != 1) return false;
    const ir_stmt *rck[3] = {q->rloop, q->cloop, q->kloop};
    for (int i = 0; i < 3; i++) {
        if (!rck[i] || rck[i]->var == v) continue;
        if (ir_expr_uses_var(e, rck[i]->var)) return false;
    }
    return true;
}

/* The unique nest loop pinning e (coefficient 1, no other nest loop in e), or NULL. */
static ir_stmt *pinning_loop(const mm *q, const ir_expr *e) {
    if (expr_has_load(e)) return NULL;
    ir_stmt *found = NULL;
    for (int i = 0; i < q->nloops; i++) {
        const ir_var *v = q->loops[i]->var;
        if (!ir_expr_uses_var(e, v)) continue;
        int64_t c;
        if (found || !opt_affine_coeff(e, v, &c) || c != 1) return NULL;
        found = q->loops[i];
    }
    return found;
}

static bool is_batch(const mm *q, const ir_stmt *l) { return l != q->rloop && l != q->cloop && l != q->kloop; }

/* x is LOAD of buffer with dtype T, or CAST(T, LOAD) from a narrower float (or T itself). */
static const ir_expr *operand_load(const ir_expr *x, tile_dtype T) {
    if (!x || x->dtype != T) return NULL;
    if (x->kind == IR_E_CAST && x->nargs == 1) {
        const ir_expr *l = x->args[0];
        if (!l || l->kind != IR_E_LOAD) return NULL;
        tile_dtype s = l->dtype;
        if (!tile_dtype_is_float(T) || !tile_dtype_is_float(s) || tile_dtype_bits(s) >= tile_dtype_bits(T)) return NULL;
        return l;
    }
    return x->kind == IR_E_LOAD ? x : NULL;
}

static bool same_idx(ir_expr *const *a, ir_expr *const *b, int rank) {
    for (int i = 0; i < rank; i++)
        if (!ir_expr_equal(a[i], b[i])) return false;
    return true;
}

/* LOAD of the store's own element (possibly under a cast) */
static bool is_self_load(const ir_expr *e, const ir_stmt *st) {
    if (e && e->kind == IR_E_CAST && e->nargs == 1) e = e->args[0];
    return e && e->kind == IR_E_LOAD && e->buf == st->buf && same_idx(e->args, st->idx, st->buf->rank);
}

static bool is_pos_zero(const ir_expr *e) {
    if (!e || e->kind != IR_E_CONST) return false;
    if (tile_dtype_is_float(e->dtype)) return e->fval == 0.0 && !signbit(e->fval);
    return e->ival == 0;
}

/* accumulation dtype of a GEMM into C (the interpreter's compute dtype) */
static tile_dtype compute_dt(tile_dtype c) {
    if (c == TILE_DT_F64) return TILE_DT_F64;
    if (tile_dtype_is_float(c)) return TILE_DT_F32;
    return c;
}

/* Try A = x, B = y (the operands of the product); fills q on success. */
static bool assign_operands(mm *q, const ir_expr *x, const ir_expr *y) {
    const ir_expr *lx = operand_load(x, q->T), *ly = operand_load(y, q->T);
    if (!lx || !ly) return false;
    ir_buffer *A = lx->buf, *B = ly->buf;
    if (A == q->C || B == q->C || A->rank < 2 || B->rank < 2) return false;
    if (A->dtype == TILE_DT_BOOL || B->dtype == TILE_DT_BOOL) return false;
    const ir_var *r = q->rloop->var, *c = q->cloop->var, *k = q->kloop->var;
    int ra = A->rank, rb = B->rank;
    for (int d = 0; d < ra - 2; d++)
        if (ir_expr_uses_var(lx->args[d], r) || ir_expr_uses_var(lx->args[d], c) || ir_expr_uses_var(lx->args[d], k) || expr_has_load(lx->args[d]))
            return false;
    for (int d = 0; d < rb - 2; d++)
        if (ir_expr_uses_var(ly->args[d], r) || ir_expr_uses_var(ly->args[d], c) || ir_expr_uses_var(ly->args[d], k) || expr_has_load(ly->args[d]))
            return false;
    if (pinned_by(q, lx->args[ra - 2], r) && pinned_by(q, lx->args[ra - 1], k)) q->trans_a = false;
    else if (pinned_by(q, lx->args[ra - 2], k) && pinned_by(q, lx->args[ra - 1], r)) q->trans_a = true;
    else return false;
    if (pinned_by(q, ly->args[rb - 2], k) && pinned_by(q, ly->args[rb - 1], c)) q->trans_b = false;
    else if (pinned_by(q, ly->args[rb - 2], c) && pinned_by(q, ly->args[rb - 1], k)) q->trans_b = true;
    else return false;
    /* A and B must not depend on c / r respectively */
    for (int d = 0; d < ra; d++)
        if (ir_expr_uses_var(lx->args[d], c)) return false;
    for (int d = 0; d < rb; d++)
        if (ir_expr_uses_var(ly->args[d], r)) return false;
    q->A = A;
    q->B = B;
    q->aidx = lx->args;
    q->bidx = ly->args;
    return true;
}

static const char *mm_reject(const char *why) { return why; }

/* Match the contraction pattern rooted at loop s. Returns NULL on success, else why not
 * (for the debug log). */
static const char *match_matmul(sched *S, ir_stmt *s, mm *q) {
    memset(q, 0, sizeof *q);
    ir_stmt *chain[NEST_MAX];
    int n = 0;
    ir_stmt *cur = s;
    while (cur && cur->kind == IR_S_FOR && n < NEST_MAX) {
        chain[n++] = cur;
        cur = single(cur->body[0]);
    }
    if (!cur) return mm_reject("empty body");
    if (cur->kind == IR_S_SEQ && cur->nbody == 3 && n >= 2) {
        /* V1: acc = init; for k: acc = acc + x*y; C[...] = acc */
        ir_stmt *init = cur->body[0], *kl = cur->body[1], *st = cur->body[2];
        if (!init || init->kind != IR_S_ASSIGN || !kl || kl->kind != IR_S_FOR || !st || st->kind != IR_S_STORE)
            return mm_reject("not acc = init; for k: ...; C[...] = acc");
        ir_stmt *up = single(kl->body[0]);
        const ir_var *acc = init->var;
        if (!up || up->kind != IR_S_ASSIGN || up->var != acc) return mm_reject("the k loop does not update the accumulator");
        const ir_expr *v = up->value;
        if (!v || v->kind != IR_E_BINARY || v->op != IR_B_ADD) return mm_reject("the update is not acc = acc + a * b");
        const ir_expr *p;
        if (v->args[0]->kind == IR_E_VAR && v->args[0]->var == acc) p = v->args[1];
        else if (v->args[1]->kind == IR_E_VAR && v->args[1]->var == acc) p = v->args[0];
        else return mm_reject("the update is not acc = acc + a * b");
        if (!st->value || st->value->kind != IR_E_VAR || st->value->var != acc) return mm_reject("C is not stored from the accumulator");
        q->T = acc->dtype;
        q->C = st->buf;
        if (q->C->dtype == TILE_DT_BOOL || compute_dt(q->C->dtype) != q->T)
            return mm_reject("the accumulator's dtype is not the GEMM's accumulation dtype for C");
        if (is_pos_zero(init->value)) q->clear = true;
        else if (is_self_load(init->value, st) && init->value->dtype == q->T) q->clear = false;
        else return mm_reject("the accumulator does not start at 0 or at C's element");
        if (opt_local_live_after(S->f, s, acc)) return mm_reject("the accumulator is used after the nest");
        for (int i = 0; i < n; i++) q->loops[q->nloops++] = chain[i];
        q->loops[q->nloops++] = kl;
        q->kloop = kl;
        q->acc = acc;
        q->store = st;
        q->prod = p;
    } else if (cur->kind == IR_S_STORE && n >= 3) {
        /* V2: C[...] = C[...] + x*y in a perfect nest */
        const ir_expr *v = cur->value;
        if (!v || v->kind != IR_E_BINARY || v->op != IR_B_ADD) return mm_reject("not C[...] = C[...] + a * b");
        const ir_expr *p;
        if (is_self_load(v->args[0], cur) && v->args[0]->kind == IR_E_LOAD) p = v->args[1];
        else if (is_self_load(v->args[1], cur) && v->args[1]->kind == IR_E_LOAD) p = v->args[0];
        else return mm_reject("not C[...] = C[...] + a * b");
        q->C = cur->buf;
        q->T = q->C->dtype;
        if (q->T != TILE_DT_F32 && q->T != TILE_DT_F64 && q->T != TILE_DT_I32 && q->T != TILE_DT_I64)
            return mm_reject("accumulating into C needs C of float32/float64/int32/int64 (a narrower C rounds at every step)");
        for (int i = 0; i < n; i++) q->loops[q->nloops++] = chain[i];
        /* k: the one loop whose variable does not index C */
        for (int i = 0; i < n; i++) {
            bool used = false;
            for (int d = 0; d < q->C->rank; d++)
                if (ir_expr_uses_var(cur->idx[d], chain[i]->var)) used = true;
            if (!used) {
                if (q->kloop) return mm_reject("two loops do not index C");
                q->kloop = chain[i];
            }
        }
        if (!q->kloop) return mm_reject("no reduction loop");
        q->store = cur;
        q->clear = false;
        q->prod = p;
    } else {
        return mm_reject("not a contraction nest");
    }
    ir_stmt *st = q->store;
    if (!q->prod || q->prod->kind != IR_E_BINARY || q->prod->op != IR_B_MUL || q->prod->dtype != q->T)
        return mm_reject("the summand is not a product a * b");
    int rc = q->C->rank;
    if (rc < 2) return mm_reject("C is not at least 2-D");
    for (int i = 0; i < q->nloops; i++) {
        ir_stmt *l = q->loops[i];
        if (l->loop_kind != IR_LOOP_SERIAL) return mm_reject("a loop is not serial");
        if (has_nest_var(q, l->lo) || has_nest_var(q, l->extent) || expr_has_load(l->lo) || expr_has_load(l->extent) ||
            (q->acc && (ir_expr_uses_var(l->lo, q->acc) || ir_expr_uses_var(l->extent, q->acc))))
            return mm_reject("loop bounds depend on the nest");
        int64_t e;
        if (ir_const_int_value(l->extent, &e) && e <= 0) return mm_reject("an empty loop");
    }
    /* C[..., r, c] */
    q->rloop = pinning_loop(q, st->idx[rc - 2]);
    q->cloop = pinning_loop(q, st->idx[rc - 1]);
    if (!q->rloop || !q->cloop || q->rloop == q->cloop || q->rloop == q->kloop || q->cloop == q->kloop)
        return mm_reject("C's last two indices are not two distinct loop variables");
    /* every batch loop pins a leading dimension of C; leading dims use no r/c/k */
    for (int d = 0; d < rc - 2; d++) {
        const ir_expr *e = st->idx[d];
        if (expr_has_load(e) || ir_expr_uses_var(e, q->rloop->var) || ir_expr_uses_var(e, q->cloop->var) || ir_expr_uses_var(e, q->kloop->var))
            return mm_reject("a leading index of C uses the matrix loops");
    }
    for (int i = 0; i < q->nloops; i++) {
        ir_stmt *l = q->loops[i];
        if (!is_batch(q, l)) continue;
        bool pins = false;
        for (int d = 0; d < rc - 2; d++)
            if (pinning_loop(q, st->idx[d]) == l) pins = true;
        if (!pins) return mm_reject("a batch loop does not index C (C's elements would be written several times)");
    }
    if (q->acc) {
        /* V1: the batch, r and c loops are the chain; k is innermost (already) */
    }
    const ir_expr *x = q->prod->args[0], *y = q->prod->args[1];
    const ir_expr *lx = operand_load(x, q->T), *ly = operand_load(y, q->T);
    if (!lx || !ly) return mm_reject("the factors are not element loads (of the accumulation dtype, or of a narrower float)");
    if (lx->buf == q->C || ly->buf == q->C) return mm_reject("C is also read as a factor (the gemm would read elements it already wrote)");
    if (!assign_operands(q, x, y) && !assign_operands(q, y, x)) return mm_reject("the operands are not A[r, k] / B[k, c] (or transposed)");
    return NULL;
}

/* ---------- building the GEMM ---------- */
/* a op b for integer a, b: in their dtype when they share one, else in int64 */
static ir_expr *icmp(ir_module *m, ir_binop op, ir_expr *a, ir_expr *b, tile_loc loc) {
    if (a->dtype != b->dtype) {
        a = ir_cast(m, TILE_DT_I64, a, loc);
        b = ir_cast(m, TILE_DT_I64, b, loc);
    }
    return ir_binary(m, op, a, b, loc);
}

static ir_expr *izero(ir_module *m, const ir_expr *like, tile_loc loc) { return ir_const_int(m, like->dtype, 0, loc); }

/* A size variable that is a dimension of a parameter or output is >= 0 (checked at bind). */
static bool nonneg(const ir_func *f, const ir_expr *e) {
    int64_t v;
    if (ir_const_int_value(e, &v)) return v >= 0;
    if (e->kind != IR_E_VAR || e->var->kind != IR_VAR_SIZE) return false;
    for (int i = 0; i < f->nbuffers; i++) {
        const ir_buffer *b = f->buffers[i];
        if (b->role == IR_BUF_TEMP) continue;
        for (int d = 0; d < b->rank; d++)
            if (b->shape[d]->kind == IR_E_VAR && b->shape[d]->var == e->var) return true;
    }
    return false;
}

static ir_expr *extent_of(sched *S, const ir_stmt *l) {
    if (nonneg(S->f, l->extent)) return l->extent;
    return ir_binary(S->m, IR_B_MAX, l->extent, ir_const_int(S->m, l->extent->dtype, 0, l->loc), l->loc);
}

typedef struct bound_list {
    ir_expr *conj; /* AND of the conditions not proven */
} bound_list;

static void add_cond(ir_module *m, bound_list *b, ir_expr *c, tile_loc loc) {
    b->conj = b->conj ? ir_binary(m, IR_B_AND, b->conj, c, loc) : c;
}

static bool proven_le(const ir_expr *a, const ir_expr *b) {
    int64_t x, y;
    if (ir_const_int_value(a, &x) && ir_const_int_value(b, &y)) return x <= y;
    return ir_expr_equal(a, b);
}

/* Region of `buf` accessed with idx: the dimensions pinned by loop (dims rank-2, rank-1,
 * loops lr, lc) cover [start, start + extent); leading dimensions are single indices. */
static void make_region(sched *S, ir_region *r, ir_buffer *buf, ir_expr *const *idx, const ir_stmt *l0, const ir_stmt *l1,
                        ir_stmt *const *batch, int nb, bound_list *bl, tile_loc loc) {
    ir_module *m = S->m;
    int rank = buf->rank;
    r->buf = buf;
    r->loc = loc;
    r->start = TILE_NEW_ARRAY(&m->arena, ir_expr *, rank);
    r->extent = TILE_NEW_ARRAY(&m->arena, ir_expr *, rank);
    for (int d = 0; d < rank; d++) {
        const ir_stmt *l = d == rank - 2 ? l0 : d == rank - 1 ? l1 : NULL;
        if (!l) {
            r->start[d] = idx[d];
            r->extent[d] = ir_const_int(m, TILE_DT_I32, 1, loc);
            int64_t v, dim;
            bool ok = ir_const_int_value(idx[d], &v) && v >= 0 && ir_const_int_value(buf->shape[d], &dim) && v < dim;
            /* the index is a batch loop's variable whose range is inside the dimension */
            for (int i = 0; !ok && i < nb; i++)
                if (idx[d]->kind == IR_E_VAR && idx[d]->var == batch[i]->var && ir_const_int_value(batch[i]->lo, &v) && v >= 0 &&
                    proven_le(ir_simplify_int(m, ir_binary(m, IR_B_ADD, batch[i]->lo, batch[i]->extent, loc)), buf->shape[d]))
                    ok = true;
            if (!ok) {
                add_cond(m, bl, icmp(m, IR_B_LE, izero(m, idx[d], loc), idx[d], loc), loc);
                add_cond(m, bl, icmp(m, IR_B_LT, idx[d], buf->shape[d], loc), loc);
            }
            continue;
        }
        ir_expr *st = ir_simplify_int(m, subst(m, idx[d], l->var, l->lo));
        ir_expr *ext = extent_of(S, l);
        r->start[d] = st;
        r->extent[d] = ext;
        int64_t v;
        bool st_nonneg = ir_const_int_value(st, &v) && v >= 0;
        if (!st_nonneg) add_cond(m, bl, icmp(m, IR_B_LE, izero(m, st, loc), st, loc), loc);
        ir_expr *end = ir_simplify_int(m, ir_binary(m, IR_B_ADD, st, ext, loc));
        if (!(proven_le(end, buf->shape[d]) || (ir_const_int_value(st, &v) && v == 0 && proven_le(ext, buf->shape[d]))))
            add_cond(m, bl, icmp(m, IR_B_LE, end, buf->shape[d], loc), loc);
    }
}

static void put_access(tile_strbuf *sb, const ir_buffer *b, ir_expr *const *idx) {
    tile_sb_printf(sb, "%s[", b->name);
    for (int i = 0; i < b->rank; i++) {
        if (i) tile_sb_puts(sb, ", ");
        ir_print_expr(idx[i], sb);
    }
    tile_sb_putc(sb, ']');
}

/* assert (some loop is empty) or (the bounds hold), when some bound is not evident */
static ir_stmt *bounds_assert(sched *S, bound_list *bl, const ir_stmt **loops, int nl, const ir_buffer *b, ir_expr *const *idx,
                              const char *what, tile_loc loc) {
    if (!bl->conj) return NULL;
    ir_module *m = S->m;
    ir_expr *cond = NULL;
    for (int i = 0; i < nl; i++) {
        int64_t v;
        if (ir_const_int_value(loops[i]->extent, &v) && v > 0) continue;
        ir_expr *empty = icmp(m, IR_B_LE, loops[i]->extent, izero(m, loops[i]->extent, loc), loc);
        cond = cond ? ir_binary(m, IR_B_OR, cond, empty, loc) : empty;
    }
    cond = cond ? ir_binary(m, IR_B_OR, cond, bl->conj, loc) : bl->conj;
    ir_stmt *a = ir_stmt_new(m, IR_S_ASSERT, loc);
    a->cond = cond;
    tile_strbuf sb = {0};
    tile_sb_printf(&sb, "out-of-bounds %s of ", what);
    put_access(&sb, b, idx);
    tile_sb_printf(&sb, " in the loop nest at %s:%d (turned into a gemm)", opt_loc_file(loc), loc.line);
    a->msg = tile_arena_strdup(&m->arena, sb.data);
    tile_sb_free(&sb);
    return a;
}

static ir_stmt *build_gemm(sched *S, mm *q, ir_stmt *top) {
    ir_module *m = S->m;
    tile_loc loc = top->loc;
    ir_stmt *g = ir_stmt_new(m, IR_S_GEMM, q->store->loc);
    g->trans_a = q->trans_a;
    g->trans_b = q->trans_b;
    g->clear = q->clear;
    bound_list ba = {0}, bb = {0}, bc = {0};
    ir_stmt *batch[NEST_MAX];
    int nb = 0;
    for (int i = 0; i < q->nloops; i++)
        if (is_batch(q, q->loops[i])) batch[nb++] = q->loops[i];
    make_region(S, &g->regions[0], q->A, q->aidx, q->trans_a ? q->kloop : q->rloop, q->trans_a ? q->rloop : q->kloop, batch, nb, &ba, loc);
    make_region(S, &g->regions[1], q->B, q->bidx, q->trans_b ? q->cloop : q->kloop, q->trans_b ? q->kloop : q->cloop, batch, nb, &bb, loc);
    make_region(S, &g->regions[2], q->C, q->store->idx, q->rloop, q->cloop, batch, nb, &bc, loc);
    const ir_stmt *rck[3] = {q->rloop, q->cloop, q->kloop};
    ir_stmt *stmts[4];
    int ns = 0;
    ir_stmt *a;
    if ((a = bounds_assert(S, &ba, rck, 3, q->A, q->aidx, "read", loc))) stmts[ns++] = a;
    if ((a = bounds_assert(S, &bb, rck, 3, q->B, q->bidx, "read", loc))) stmts[ns++] = a;
    /* C is written for every (r, c) with a local accumulator, only when K > 0 otherwise */
    if ((a = bounds_assert(S, &bc, rck, q->acc ? 2 : 3, q->C, q->store->idx, q->acc ? "write" : "update", loc))) stmts[ns++] = a;
    ir_stmt *op = g;
    int64_t kv;
    if (!q->clear && !q->acc && q->C->role != IR_BUF_PARAM && !(ir_const_int_value(q->kloop->extent, &kv) && kv > 0)) {
        /* C += ... with an empty k loop touches nothing; the gemm would read C */
        op = ir_stmt_new(m, IR_S_IF, loc);
        op->cond = icmp(m, IR_B_GT, q->kloop->extent, izero(m, q->kloop->extent, loc), loc);
        op->body[0] = g;
        op->body[1] = NULL;
    }
    stmts[ns++] = op;
    ir_stmt *body = ns == 1 ? op : ir_seq(m, stmts, ns, loc);
    /* batch loops, in their original order, around it */
    for (int i = q->nloops - 1; i >= 0; i--) {
        ir_stmt *l = q->loops[i];
        if (!is_batch(q, l)) continue;
        l->body[0] = body;
#if OPT_PARALLEL_BATCH_GEMM
        l->loop_kind = IR_LOOP_PARALLEL;
        l->par_group_depth = 1;
#endif
        body = l;
    }
    return body;
}

static ir_stmt *try_matmul(sched *S, ir_stmt *s) {
    mm q;
    const char *why = match_matmul(S, s, &q);
    if (why) {
        if (tile_log_enabled(TILE_LOG_DEBUG))
            tile_log(TILE_LOG_DEBUG, "autoschedule: loop %s at %s:%d is not a contraction: %s", s->var->name, opt_loc_file(s->loc), s->loc.line, why);
        return NULL;
    }
    ir_stmt *out = build_gemm(S, &q, s);
    if (tile_log_enabled(TILE_LOG_INFO)) {
        tile_strbuf sb = {0};
        int nb = 0;
        for (int i = 0; i < q.nloops; i++) nb += is_batch(&q, q.loops[i]);
        tile_sb_printf(&sb, "autoschedule: %smatmul: ", nb ? "batched " : "");
        for (int i = 0; i < q.nloops; i++) tile_sb_printf(&sb, "%s%s", i ? "," : "", q.loops[i]->var->name);
        tile_sb_printf(&sb, " nest at %s:%d -> gemm(%s%s, %s%s -> %s%s), ", opt_loc_file(s->loc), s->loc.line, q.A->name,
                       q.trans_a ? "^T" : "", q.B->name, q.trans_b ? "^T" : "", q.C->name, q.clear ? "" : ", accumulate");
        const ir_stmt *dims[3] = {q.rloop, q.cloop, q.kloop};
        for (int i = 0; i < 3; i++) {
            if (i) tile_sb_putc(&sb, 'x');
            ir_print_expr(dims[i]->extent, &sb);
        }
        if (nb) {
            tile_sb_puts(&sb, ", batch loop");
            tile_sb_puts(&sb, nb > 1 ? "s " : " ");
            for (int i = 0, k = 0; i < q.nloops; i++)
                if (is_batch(&q, q.loops[i])) tile_sb_printf(&sb, "%s%s", k++ ? "," : "", q.loops[i]->var->name);
            tile_sb_puts(&sb, OPT_PARALLEL_BATCH_GEMM ? " parallel" : " serial (the IR allows no tile operation in a parallel loop)");
        }
        tile_log(TILE_LOG_INFO, "%s", sb.data);
        tile_sb_free(&sb);
    }
    return out;
}

/* ---------- parallel and vectorised loops ---------- */
/* Statements a parallel loop cannot hold (the verifier's T.Parallel rules). */
static bool par_ok_body(const ir_stmt *s) {
    if (!s) return true;
    switch (s->kind) {
    case IR_S_KERNEL: case IR_S_COPY: case IR_S_FILL: case IR_S_GEMM: case IR_S_REDUCE: return false;
    case IR_S_ALLOC:
        if (s->buf && (s->buf->scope == IR_SCOPE_SHARED || s->buf->scope == IR_SCOPE_FRAGMENT)) return false;
        return true;
    default: break;
    }
    for (int i = 0; i < s->nbody; i++)
        if (s->body && !par_ok_body(s->body[i])) return false;
    return true;
}

static bool has_loop(const ir_stmt *s) {
    if (!s) return false;
    if (s->kind == IR_S_FOR || s->kind == IR_S_WHILE || s->kind == IR_S_KERNEL) return true;
    for (int i = 0; i < s->nbody; i++)
        if (s->body && has_loop(s->body[i])) return true;
    return false;
}

/* straight-line code a SIMD loop can hold */
static bool simd_body(const ir_stmt *s) {
    if (!s) return true;
    switch (s->kind) {
    case IR_S_SEQ: case IR_S_IF:
        for (int i = 0; i < s->nbody; i++)
            if (s->body && !simd_body(s->body[i])) return false;
        return true;
    case IR_S_ASSIGN: case IR_S_STORE: return true;
    default: return false;
    }
}

static bool too_short(const ir_stmt *l) {
    int64_t v;
    return ir_const_int_value(l->extent, &v) && v < 2;
}

typedef struct par_stats {
    int nvec, nred, ncarried, ninner;
    tile_strbuf vec_names;
} par_stats;

/* Mark the innermost dependence-free loops under s VECTORIZED. */
static void vectorize_inner(sched *S, ir_stmt *s, par_stats *ps) {
    if (!s) return;
    if (s->kind == IR_S_FOR) {
        ps->ninner++;
        opt_loop_deps d;
        opt_deps_analyze(S->f, s, &d);
        if (d.kind == OPT_DEP_REDUCTION) ps->nred++;
        else if (d.kind == OPT_DEP_CARRIED) ps->ncarried++;
        if (!has_loop(s->body[0])) {
            if (d.kind == OPT_DEP_INDEPENDENT && !d.has_continue && simd_body(s->body[0]) && !too_short(s)) {
                s->loop_kind = IR_LOOP_VECTORIZED;
                tile_sb_printf(&ps->vec_names, "%s%s", ps->nvec++ ? "," : "", s->var->name);
            }
            return;
        }
    }
    for (int i = 0; i < s->nbody; i++)
        if (s->body) vectorize_inner(S, s->body[i], ps);
}

static void nest_names(const ir_stmt *s, tile_strbuf *sb, int *n) {
    if (!s) return;
    if (s->kind == IR_S_FOR) tile_sb_printf(sb, "%s%s", (*n)++ ? "," : "", s->var->name);
    for (int i = 0; i < s->nbody; i++)
        if (s->body) nest_names(s->body[i], sb, n);
}

static ir_stmt *sched_stmt(sched *S, ir_stmt *s, const ir_stmt *serial_outer);

static ir_stmt *sched_for(sched *S, ir_stmt *s, const ir_stmt *serial_outer) {
    if (s->loop_kind != IR_LOOP_SERIAL) return s;
    ir_stmt *g = try_matmul(S, s);
    if (g) return g;
    opt_loop_deps d;
    opt_deps_analyze(S->f, s, &d);
    bool can = d.kind == OPT_DEP_INDEPENDENT && !d.has_continue && par_ok_body(s->body[0]) && !too_short(s);
    if (!can) {
        if (tile_log_enabled(TILE_LOG_INFO)) {
            tile_strbuf sb = {0};
            if (d.kind == OPT_DEP_INDEPENDENT && d.has_continue) tile_sb_puts(&sb, "a continue of the loop is inside it");
            else if (d.kind == OPT_DEP_INDEPENDENT && too_short(s)) tile_sb_puts(&sb, "fewer than 2 iterations");
            else if (d.kind == OPT_DEP_INDEPENDENT) tile_sb_puts(&sb, "its body holds a tile operation");
            else opt_deps_describe(&d, &sb);
            tile_log(TILE_LOG_INFO, "autoschedule: loop %s at %s:%d stays serial: %s", s->var->name, opt_loc_file(s->loc), s->loc.line, sb.data);
            tile_sb_free(&sb);
        }
        s->body[0] = sched_stmt(S, s->body[0], serial_outer ? serial_outer : s);
        return s;
    }
    s->loop_kind = IR_LOOP_PARALLEL;
    s->par_group_depth = 1;
    par_stats ps = {0};
    vectorize_inner(S, s->body[0], &ps);
    if (tile_log_enabled(TILE_LOG_INFO)) {
        const char *what = serial_outer ? "fallback" : ps.ncarried ? "fallback" : ps.nred ? "row reduction" : "elementwise";
        tile_strbuf sb = {0};
        int n = 0;
        nest_names(s, &sb, &n);
        tile_log(TILE_LOG_INFO, "autoschedule: %s: %s nest at %s:%d -> parallel %s%s%s%s%s%s", what, sb.data, opt_loc_file(s->loc), s->loc.line,
                 s->var->name, ps.nvec ? ", vectorized " : "", ps.nvec ? ps.vec_names.data : "",
                 serial_outer ? " (the enclosing loop " : "", serial_outer ? serial_outer->var->name : "",
                 serial_outer ? " carries a dependence)" : "");
        tile_sb_free(&sb);
    }
    tile_sb_free(&ps.vec_names);
    return s;
}

static ir_stmt *sched_stmt(sched *S, ir_stmt *s, const ir_stmt *serial_outer) {
    if (!s) return s;
    switch (s->kind) {
    case IR_S_SEQ: case IR_S_IF: case IR_S_WHILE:
        for (int i = 0; i < s->nbody; i++)
            if (s->body && s->body[i]) s->body[i] = sched_stmt(S, s->body[i], serial_outer);
        return s;
    case IR_S_FOR: return sched_for(S, s, serial_outer);
    default: return s;
    }
}

static int run_autoschedule(ir_module *m, ir_func *f, tile_diags *d) {
    (void)d;
    if (f->form != IR_FORM_PLAIN || !f->body) return 0;
    sched S = {m, f};
    f->body = sched_stmt(&S, f->body, NULL);
    return 0;
}

const opt_pass opt_pass_autoschedule = {
    "autoschedule",
    "plain form: contractions -> gemm, dependence-free outer loops -> parallel, inner ones -> vectorized",
    run_autoschedule,
};
