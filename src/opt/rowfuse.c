/* rowfuse.c — the `rowfuse` pass (cpu pipeline): row-reduction kernels become one read pass
 * per row plus one write pass.
 *
 * Three shapes are recognised from the IR's structure (not from names):
 *
 *   (S1) plain-form softmax: a PARALLEL row loop (autoschedule proved its iterations
 *        independent and its locals private) whose body is exactly
 *            m = X[i, 0]
 *            for j in (1, H): m = max(m, X[i, j])
 *            s = 0
 *            for j in (0, H): e = exp(X[i, j] - m); Y[i, j] = e; s = s + e
 *            for j in (0, H): Y[i, j] = G(Y[i, j], s)        (f32 X, Y, m, s, e)
 *   (S2) tile-form online softmax (examples/softmax.tl): one kernel over row blocks of bM
 *        rows, fragments xt[bM, bN], row_max/row_sum/tile_max/tile_sum[bM] (f32), fills of
 *        -inf and 0, a K loop over column tiles with the clipped copy, the T.if_then_else
 *        mask of the columns >= N to -inf, reduce_max (clear), the rescale
 *        nm = max(row_max, tile_max); row_sum *= exp(row_max - nm); row_max = nm, the exp
 *        nest, reduce_sum (clear), row_sum += tile_sum; then a second K loop copying X in
 *        again, xt = G(xt, row_max, row_sum), copy out to Y.
 *   (S3) tile-form row scaling by a reduction (examples/rmsnorm.tl): fragments x[bM, N],
 *        sq[bM, N], w[N], r[bM]; copy X rows and W in; sq = P(x); reduce_sum sq -> r (clear);
 *        r = Q(r); x = R(x, r, w); copy x out to Y.
 *
 * Each becomes (outside any kernel, in the same function)
 *
 *     for i in parallel(rows):                        # rows over the thread pool
 *       m = -inf (S2) / X[i, 0] (S1); s = 0
 *       for c in serial(0, ceil(H / 2048)):           # one read pass, chunks stay in L1
 *         cm = m; for j in chunk: cm = max(cm, x(j))
 *         s = select(cm == m, s, s * exp(m - cm)); m = cm
 *         sh = select(m == -inf, 0, m)               # exp(-inf - -inf) would be NaN
 *         cs = 0; for j in chunk: cs = cs + exp(x(j) - sh)
 *         s = s + cs
 *       rinv = 1 / s                                  # when G is `a / s`: a * rinv
 *       for j in vectorized(0, H): Y[i, j] = G(exp(x(j) - m), s)      # write pass
 *
 * and, when G is exactly exp(x - m) / s (both examples), the one-exp form: the read pass also
 * keeps e in a row buffer E (and each chunk's max in F), the write pass is
 *       for c: g = exp(F[c] - m) * (1 / s); for j in vectorized(chunk): Y[i, j] = E[j] * g
 *
 * or, for S3, `acc = 0; for j: acc = acc + P(x(j)); r = Q(acc); for j: Y[i, j] = R(x(j), r,
 * W[j])`. The cpu code generator runs the softmax's chunk loops as the prelude's
 * hand-vectorised tile_row_maxf / tile_row_expsumf (c.c grow_read), RMSNorm's sum as an
 * `omp simd` reduction, and the write loop with streaming stores; the row (at most 256 KiB
 * for 64K f32) is re-read from L2, so X is read from memory once and Y written once.
 *
 * Same meaning, up to rounding: the max is exact; the sum of exponentials is the same
 * mathematical value (the chunk rescale exp(m - cm) * exp(x - m) = exp(x - cm)), summed in
 * another order and rounded differently (a few ulp, inside the f32 tolerance; docs/tileopt.md).
 * S3 keeps the interpreter's order exactly (bit-identical). Rows past the tensor (the tile
 * form's clipped last block) and masked columns are simply not visited: their loads were
 * zeros or -inf and their stores were dropped. One deliberate difference: in S2 a row whose
 * first tile is all -inf made the kernel's rescale exp(-inf - -inf) = NaN; the select above
 * skips the rescale when the max did not change and the shift `sh` avoids -inf - -inf, so
 * such a row gets the softmax of its finite elements (documented). The plain form's source
 * has no such case: its results keep their kind (NaN rows stay NaN, -inf runs give 0).
 * The write pass multiplies by 1 / s where the source divided by s (one more rounding).
 * Anything that does not match exactly is left alone (reason at TILE_LOG=debug). TILE_NO_ROWFUSE=1 turns the pass off (for comparisons). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "opt.h"

#define ROW_CHUNK 2048 /* elements of one chunk of the read pass (8 KiB of f32: stays in L1) */

typedef struct rf {
    ir_module *m;
    ir_func *f;
} rf;

/* ---------- expression substitution ---------- */

typedef struct subst {
    struct { const ir_buffer *buf; int nidx; const ir_var *idx[2]; ir_expr *to; } b[4];
    int nb;
    struct { const ir_var *var; ir_expr *to; } v[6];
    int nv;
} subst;

static bool is_var(const ir_expr *e, const ir_var *v) { return e && e->kind == IR_E_VAR && e->var == v; }

/* a copy of e with the mapped loads and variables replaced; NULL when e reads anything else
 * that could vary (another buffer, an unmapped loop variable, block index or local) */
static ir_expr *clone(rf *R, const ir_expr *e, const subst *S) {
    if (!e) return NULL;
    switch (e->kind) {
    case IR_E_CONST: return (ir_expr *)e;
    case IR_E_VAR:
        for (int i = 0; i < S->nv; i++)
            if (S->v[i].var == e->var) return S->v[i].to;
        if (e->var->kind == IR_VAR_SIZE || e->var->kind == IR_VAR_PARAM) return (ir_expr *)e;
        return NULL;
    case IR_E_LOAD:
        for (int i = 0; i < S->nb; i++) {
            if (S->b[i].buf != e->buf) continue;
            if (e->nargs != S->b[i].nidx) return NULL;
            for (int k = 0; k < e->nargs; k++)
                if (!is_var(e->args[k], S->b[i].idx[k])) return NULL;
            return S->b[i].to;
        }
        return NULL;
    default: break;
    }
    ir_expr *c = TILE_NEW(&R->m->arena, ir_expr);
    *c = *e;
    if (e->nargs > 0) {
        c->args = TILE_NEW_ARRAY(&R->m->arena, ir_expr *, e->nargs);
        for (int i = 0; i < e->nargs; i++)
            if (!(c->args[i] = clone(R, e->args[i], S))) return NULL;
    }
    return c;
}

/* ---------- small matchers ---------- */

static const ir_stmt *only(const ir_stmt *s) {
    while (s && s->kind == IR_S_SEQ && s->nbody == 1) s = s->body[0];
    return s;
}
static int nstmts(const ir_stmt *s) { return s && s->kind == IR_S_SEQ ? s->nbody : s ? 1 : 0; }
static ir_stmt *nth(ir_stmt *s, int i) { return s->kind == IR_S_SEQ ? s->body[i] : s; }

static bool const_is(const ir_expr *e, int64_t v) {
    int64_t x;
    return ir_const_int_value(e, &x) && x == v;
}
static bool fconst_is(const ir_expr *e, double v) {
    if (!e || e->kind != IR_E_CONST || !tile_dtype_is_float(e->dtype)) return false;
    return e->fval == v;
}
static bool binop(const ir_expr *e, int op) { return e && e->kind == IR_E_BINARY && e->op == op && e->nargs == 2; }
/* e is `a op b` or `b op a` (op commutative) */
static bool comm(const ir_expr *e, int op, bool (*pa)(const ir_expr *, const void *), const void *ca,
                 bool (*pb)(const ir_expr *, const void *), const void *cb) {
    if (!binop(e, op)) return false;
    return (pa(e->args[0], ca) && pb(e->args[1], cb)) || (pa(e->args[1], ca) && pb(e->args[0], cb));
}
static bool p_var(const ir_expr *e, const void *v) { return is_var(e, (const ir_var *)v); }
typedef struct ldpat { const ir_buffer *b; const ir_var *i, *j; } ldpat;
/* b[i] (j NULL) or b[i, j] */
static bool p_load(const ir_expr *e, const void *p_) {
    const ldpat *p = p_;
    if (!e || e->kind != IR_E_LOAD || e->buf != p->b) return false;
    if (e->nargs != (p->j ? 2 : 1)) return false;
    return is_var(e->args[0], p->i) && (!p->j || is_var(e->args[1], p->j));
}
static bool is_exp(const ir_expr *e) { return e && e->kind == IR_E_CALL && e->op == IR_I_EXP && e->nargs == 1; }

/* a parallel nest (T.Parallel) over exactly the given extents (1 or 2 loops from 0), its
 * loop variables and its single-statement or multi-statement body */
static bool par_nest(const ir_stmt *s, int depth, const int64_t *ext, const ir_var **vars, ir_stmt **body) {
    s = only(s);
    if (!s || s->kind != IR_S_FOR || s->loop_kind != IR_LOOP_PARALLEL || s->par_group_depth != depth) return false;
    for (int d = 0; d < depth; d++) {
        if (!s || s->kind != IR_S_FOR || s->loop_kind != IR_LOOP_PARALLEL) return false;
        if (!const_is(s->lo, 0) || !const_is(s->extent, ext[d])) return false;
        vars[d] = s->var;
        if (d + 1 < depth) s = only(s->body[0]);
    }
    *body = s->body[0];
    return true;
}

static bool whole_frag(const ir_region *r, const ir_buffer *b) {
    if (r->buf != b) return false;
    for (int d = 0; d < b->rank; d++) {
        int64_t n;
        if (!const_is(r->start[d], 0) || !ir_const_int_value(b->shape[d], &n) || !const_is(r->extent[d], n)) return false;
    }
    return true;
}
/* region X[bx * bM : +bM, col * bN : +bN] (col NULL: start 0) */
static bool row_block(const ir_region *r, const ir_buffer *X, const ir_var *bx, int64_t bM, const ir_var *col, int64_t bN) {
    if (r->buf != X || X->rank != 2 || !const_is(r->extent[0], bM) || !const_is(r->extent[1], bN)) return false;
    const ir_expr *s0 = r->start[0], *s1 = r->start[1];
    int64_t c;
    ir_expr *m1 = NULL;
    (void)m1;
    bool ok0 = binop(s0, IR_B_MUL) && ((is_var(s0->args[0], bx) && ir_const_int_value(s0->args[1], &c) && c == bM) ||
                                        (is_var(s0->args[1], bx) && ir_const_int_value(s0->args[0], &c) && c == bM));
    if (bM == 1 && is_var(s0, bx)) ok0 = true;
    if (!ok0) return false;
    if (!col) return const_is(s1, 0);
    if (bN == 1 && is_var(s1, col)) return true;
    return binop(s1, IR_B_MUL) && ((is_var(s1->args[0], col) && ir_const_int_value(s1->args[1], &c) && c == bN) ||
                                   (is_var(s1->args[1], col) && ir_const_int_value(s1->args[0], &c) && c == bN));
}
static bool same_shape(const ir_buffer *a, const ir_buffer *b) {
    if (a->rank != b->rank) return false;
    for (int d = 0; d < a->rank; d++) {
        int64_t x, y;
        if (ir_const_int_value(a->shape[d], &x) && ir_const_int_value(b->shape[d], &y)) {
            if (x != y) return false;
        } else if (!ir_expr_equal(a->shape[d], b->shape[d])) return false;
    }
    return true;
}
/* `n` blocks of `b` cover `total` (constants, or n is (total + b - 1) // b) */
static bool covers(const ir_expr *n, int64_t b, const ir_expr *total) {
    int64_t nv, tv;
    if (ir_const_int_value(n, &nv) && ir_const_int_value(total, &tv)) return nv * b >= tv;
    if (!binop(n, IR_B_FLOORDIV) || !const_is(n->args[1], b)) return false;
    const ir_expr *a = n->args[0];
    if (!binop(a, IR_B_ADD)) return false;
    return (ir_expr_equal(a->args[0], total) && const_is(a->args[1], b - 1)) ||
           (ir_expr_equal(a->args[1], total) && const_is(a->args[0], b - 1));
}
static bool is_global(const ir_buffer *b) { return b->scope == IR_SCOPE_GLOBAL && b->role != IR_BUF_TEMP; }

/* ---------- building ---------- */

static tile_loc L0(const ir_stmt *s) { return s->loc; }
static ir_expr *I32(rf *R, int64_t v, tile_loc l) { return ir_const_int(R->m, TILE_DT_I32, v, l); }
static ir_expr *as_i32(rf *R, ir_expr *e) { return ir_cast(R->m, TILE_DT_I32, e, e->loc); }
static ir_expr *V(rf *R, ir_var *v, tile_loc l) { return ir_var_ref(R->m, v, l); }
static ir_stmt *assign(rf *R, ir_var *v, ir_expr *e, tile_loc l) {
    ir_stmt *a = ir_stmt_new(R->m, IR_S_ASSIGN, l);
    a->var = v;
    a->value = e;
    return a;
}
static ir_stmt *loop(rf *R, ir_var *v, ir_expr *lo, ir_expr *ext, ir_loop_kind k, ir_stmt *body, tile_loc l) {
    ir_stmt *f = ir_stmt_new(R->m, IR_S_FOR, l);
    f->var = v;
    f->lo = lo;
    f->extent = ext;
    f->loop_kind = k;
    f->par_group_depth = k == IR_LOOP_PARALLEL ? 1 : 0;
    f->body[0] = body;
    return f;
}
static ir_expr *load2(rf *R, ir_buffer *b, ir_var *i, ir_var *j, tile_loc l) {
    ir_expr *idx[2] = {V(R, i, l), V(R, j, l)};
    return ir_load(R->m, b, idx, l);
}
static ir_expr *fexp(rf *R, ir_expr *a, tile_loc l) { return ir_call(R->m, IR_I_EXP, a->dtype, &a, 1, l); }
static ir_var *newvar(rf *R, const char *name, ir_var_kind k, tile_dtype dt, tile_loc l) { return ir_var_new(R->m, R->f, name, k, dt, l); }

/* the row r + off (off 0 or -1: the pipelined loop's write pass is one row behind) */
static ir_expr *row_at(rf *R, ir_var *r, int off, tile_loc l) {
    return off ? ir_binary(R->m, IR_B_ADD, V(R, r, l), I32(R, off, l), l) : V(R, r, l);
}
static ir_expr *load2e(rf *R, ir_buffer *b, ir_expr *row, ir_var *j, tile_loc l) {
    ir_expr *idx[2] = {row, V(R, j, l)};
    return ir_load(R->m, b, idx, l);
}
typedef ir_expr *(*xval_fn)(rf *R, void *ctx, ir_var *col, tile_loc l); /* x(j): the f32 element */
static ir_stmt *store2(rf *R, ir_buffer *Y, ir_var *r, ir_var *j, ir_expr *v, tile_loc l);

/* The chunked online max + sum of one row (the body of the row loop before the write pass):
 * m and s hold the row's max and sum of exp(x - m) afterwards. `sumvar`, when set, is the
 * plain form's `e` local (e = exp(x - m); cs = cs + e, as the source wrote it). */
static ir_stmt *store2e(rf *R, ir_buffer *Y, ir_expr *row, ir_var *j, ir_expr *v, tile_loc l);
/* E[j] (slot NULL) or E[slot, j]: the kept exponentials; F likewise by chunk */
static ir_expr **row_idx(rf *R, ir_expr *slot, ir_expr *i, int *n) {
    ir_expr **idx = TILE_NEW_ARRAY(&R->m->arena, ir_expr *, 2);
    *n = 0;
    if (slot) idx[(*n)++] = slot;
    idx[(*n)++] = i;
    return idx;
}
/* a write riding along in the exponentials' loop: Y[row, j] = W[wslot, j] * g */
typedef struct ride { ir_buffer *Y, *W; ir_expr *row, *wslot; ir_var *g; } ride;
static ir_stmt *online_chunk(rf *R, ir_var *c, ir_var *m, ir_var *s, ir_expr *H, xval_fn xv, void *ctx, ir_var *sumvar, ir_buffer *E, ir_buffer *F,
                             ir_expr *slot, const ride *rd, tile_loc l);
static ir_stmt *online_pass(rf *R, ir_var *m, ir_var *s, ir_expr *H, xval_fn xv, void *ctx, ir_var *sumvar, ir_buffer *E, ir_buffer *F,
                            tile_loc l) {
    ir_var *c = newvar(R, "rf_c", IR_VAR_LOOP, TILE_DT_I32, l);
    ir_expr *nchunks = ir_binary(R->m, IR_B_FLOORDIV, ir_binary(R->m, IR_B_ADD, H, I32(R, ROW_CHUNK - 1, l), l), I32(R, ROW_CHUNK, l), l);
    return loop(R, c, I32(R, 0, l), nchunks, IR_LOOP_SERIAL, online_chunk(R, c, m, s, H, xv, ctx, sumvar, E, F, NULL, NULL, l), l);
}
/* one chunk c of the online pass (slot: which of the two rows of E and F, or NULL) */
static ir_stmt *online_chunk(rf *R, ir_var *c, ir_var *m, ir_var *s, ir_expr *H, xval_fn xv, void *ctx, ir_var *sumvar, ir_buffer *E, ir_buffer *F,
                             ir_expr *slot, const ride *rd, tile_loc l) {
    ir_var *j1 = newvar(R, "rf_j", IR_VAR_LOOP, TILE_DT_I32, l);
    ir_var *j2 = newvar(R, "rf_j", IR_VAR_LOOP, TILE_DT_I32, l);
    ir_var *cm = newvar(R, "rf_cmax", IR_VAR_LOCAL, TILE_DT_F32, l);
    ir_var *cs = newvar(R, "rf_csum", IR_VAR_LOCAL, TILE_DT_F32, l);
    ir_expr *C = I32(R, ROW_CHUNK, l);
    ir_expr *start = ir_binary(R->m, IR_B_MUL, V(R, c, l), C, l);
    /* chunk extent: min(H - c*C, C) */
    ir_expr *cext1 = ir_binary(R->m, IR_B_MIN, ir_binary(R->m, IR_B_SUB, H, start, l), C, l);
    ir_var *ms = newvar(R, "rf_shift", IR_VAR_LOCAL, TILE_DT_F32, l);
    ir_stmt *st[9];
    int n = 0;
    st[n++] = assign(R, cm, V(R, m, l), l);
    st[n++] = loop(R, j1, start, cext1, IR_LOOP_SERIAL,
                 assign(R, cm, ir_binary(R->m, IR_B_MAX, V(R, cm, l), xv(R, ctx, j1, l), l), l), l);
    ir_expr *rescale = ir_binary(R->m, IR_B_MUL, V(R, s, l), fexp(R, ir_binary(R->m, IR_B_SUB, V(R, m, l), V(R, cm, l), l), l), l);
    st[n++] = assign(R, s, ir_select(R->m, ir_binary(R->m, IR_B_EQ, V(R, cm, l), V(R, m, l), l), V(R, s, l), rescale, l), l);
    st[n++] = assign(R, m, V(R, cm, l), l);
    if (F) { /* the chunk's max (-inf while every element so far is -inf or NaN) */
        ir_stmt *fs = ir_stmt_new(R->m, IR_S_STORE, l);
        int ni;
        fs->buf = F;
        fs->idx = row_idx(R, slot, V(R, c, l), &ni);
        fs->value = V(R, m, l);
        st[n++] = fs;
    }
    ir_stmt *cs0 = assign(R, cs, ir_const_float(R->m, TILE_DT_F32, 0.0, l), l);
    /* the shift of this chunk's exponentials: the max, or 0 while it is still -inf (every
     * element so far is -inf or NaN: exp(-inf - 0) = 0 adds nothing, a NaN still propagates;
     * exp(-inf - -inf) would be NaN) */
    ir_stmt *sh = assign(R, ms, ir_select(R->m, ir_binary(R->m, IR_B_EQ, V(R, m, l), ir_const_float(R->m, TILE_DT_F32, -INFINITY, l), l),
                                          ir_const_float(R->m, TILE_DT_F32, 0.0, l), V(R, m, l), l), l);
    ir_expr *e = fexp(R, ir_binary(R->m, IR_B_SUB, xv(R, ctx, j2, l), V(R, ms, l), l), l);
    ir_stmt *sb;
    if (E && !sumvar) sumvar = newvar(R, "rf_e", IR_VAR_LOCAL, TILE_DT_F32, l);
    if (sumvar) {
        ir_stmt *three[4] = {assign(R, sumvar, e, l), NULL, assign(R, cs, ir_binary(R->m, IR_B_ADD, V(R, cs, l), V(R, sumvar, l), l), l), NULL};
        if (E) { /* keep the exponential for the write pass */
            ir_stmt *es = ir_stmt_new(R->m, IR_S_STORE, l);
            int ni;
            es->buf = E;
            es->idx = row_idx(R, slot, V(R, j2, l), &ni);
            es->value = V(R, sumvar, l);
            three[1] = es;
        } else {
            three[1] = three[2];
        }
        if (E && rd) {
            int nw;
            ir_expr **wi = row_idx(R, rd->wslot, V(R, j2, l), &nw);
            three[3] = store2e(R, rd->Y, rd->row, j2, ir_binary(R->m, IR_B_MUL, ir_load(R->m, rd->W, wi, l), V(R, rd->g, l), l), l);
        }
        sb = ir_seq(R->m, three, E ? (rd ? 4 : 3) : 2, l);
    } else {
        sb = assign(R, cs, ir_binary(R->m, IR_B_ADD, V(R, cs, l), e, l), l);
    }
    ir_expr *cext2 = ir_binary(R->m, IR_B_MIN, ir_binary(R->m, IR_B_SUB, H, start, l), C, l);
    st[n++] = cs0;
    st[n++] = sh;
    st[n++] = loop(R, j2, start, cext2, IR_LOOP_SERIAL, sb, l);
    st[n++] = assign(R, s, ir_binary(R->m, IR_B_ADD, V(R, s, l), V(R, cs, l), l), l);
    return ir_seq(R->m, st, n, l);
}

/* ---------- the one-exp form: Y = exp(x - m) / s from the kept exponentials ----------
 * The read pass keeps e = exp(x - shift_c) in a row buffer E (the worker's scratch memory on
 * cpu, L1/L2-resident) and each chunk's max in F; the write pass is then Y[j] = E[j] * g_c with
 * g_c = exp(F[c] - m) * (1 / s) per chunk: one exp per element instead of two (the softmax is
 * compute-bound on a core). exp(x - F_c) * exp(F_c - m) = exp(x - m); F_c = -inf (a chunk that
 * ended with the running max still -inf) gives g_c = 0 (E is 0 or NaN there: NaN stays NaN). */
static ir_stmt *alloc_row(rf *R, ir_buffer **out, const char *name, ir_expr *n, tile_loc l) {
    ir_expr **shape = TILE_NEW_ARRAY(&R->m->arena, ir_expr *, 1);
    shape[0] = n;
    *out = ir_buffer_new(R->m, R->f, name, TILE_DT_F32, IR_SCOPE_GLOBAL, 1, shape, IR_BUF_TEMP, l);
    ir_stmt *a = ir_stmt_new(R->m, IR_S_ALLOC, l);
    a->buf = *out;
    return a;
}
static ir_expr *nchunks_of(rf *R, ir_expr *H, tile_loc l) {
    return ir_binary(R->m, IR_B_FLOORDIV, ir_binary(R->m, IR_B_ADD, H, I32(R, ROW_CHUNK - 1, l), l), I32(R, ROW_CHUNK, l), l);
}
static ir_stmt *store2e(rf *R, ir_buffer *Y, ir_expr *row, ir_var *j, ir_expr *v, tile_loc l);
/* chunk c of the write pass: g = exp(F[c] - m) * rinv; Y[row, j] = E[j] * g (slot: the row of
 * E and F, or NULL) */
static ir_stmt *scaled_chunk(rf *R, ir_var *c, ir_buffer *E, ir_buffer *F, ir_expr *slot, ir_var *m, ir_var *ri, ir_expr *H, ir_buffer *Y, ir_expr *row,
                             tile_loc l) {
    ir_var *j = newvar(R, "rf_j", IR_VAR_LOOP, TILE_DT_I32, l), *g = newvar(R, "rf_scale", IR_VAR_LOCAL, TILE_DT_F32, l);
    ir_expr *C = I32(R, ROW_CHUNK, l);
    ir_expr *start = ir_binary(R->m, IR_B_MUL, V(R, c, l), C, l);
    ir_expr *ext = ir_binary(R->m, IR_B_MIN, ir_binary(R->m, IR_B_SUB, H, start, l), C, l);
    int nf, ne;
    ir_expr **fi = row_idx(R, slot, V(R, c, l), &nf), **ei = row_idx(R, slot, V(R, j, l), &ne);
    ir_stmt *gs = assign(R, g, ir_binary(R->m, IR_B_MUL, fexp(R, ir_binary(R->m, IR_B_SUB, ir_load(R->m, F, fi, l), V(R, m, l), l), l), V(R, ri, l), l), l);
    ir_stmt *w = loop(R, j, start, ext, IR_LOOP_VECTORIZED, store2e(R, Y, row, j, ir_binary(R->m, IR_B_MUL, ir_load(R->m, E, ei, l), V(R, g, l), l), l), l);
    ir_stmt *body[2] = {gs, w};
    return ir_seq(R->m, body, 2, l);
}
static ir_stmt *scaled_write(rf *R, ir_buffer *E, ir_buffer *F, ir_var *m, ir_var *s, ir_expr *H, ir_buffer *Y, ir_var *row, tile_loc l) {
    ir_var *c = newvar(R, "rf_c", IR_VAR_LOOP, TILE_DT_I32, l);
    ir_var *ri = newvar(R, "rf_rinv", IR_VAR_LOCAL, TILE_DT_F32, l);
    ir_stmt *two[2] = {assign(R, ri, ir_binary(R->m, IR_B_DIV, ir_const_float(R->m, TILE_DT_F32, 1.0, l), V(R, s, l), l), l),
                       loop(R, c, I32(R, 0, l), nchunks_of(R, H, l), IR_LOOP_SERIAL,
                            scaled_chunk(R, c, E, F, NULL, m, ri, H, Y, V(R, row, l), l), l)};
    return ir_seq(R->m, two, 2, l);
}

/* ---------- the pipelined row loop ----------
 * A core that reads a row (the memory-bound read pass) and then writes it (the streaming
 * write pass) never has reads and writes in flight together, where a memcpy streams both at
 * once. So the rows go in blocks of up to ROW_BLOCK consecutive rows, the blocks over the pool,
 * and inside a block the write pass of row r - 1 runs chunk by chunk interleaved with the read
 * pass of row r:
 *
 *   for b in parallel(ceil(M / rb)):                 # rb = clamp(M // 32, 1, ROW_BLOCK)
 *     for r in serial(b*rb, n + 1):                  # n = min(rb, M - b*rb) rows in the block
 *       for c in serial(0, ceil(H / 2048)):
 *         if r > b*rb: write chunk c of row r - 1    # streaming stores (from L2)
 *         if r < b*rb + n: read chunk c of row r     # loads from memory (prefetched ahead)
 *
 * The first step of a block only reads, the last only writes. The row of exponentials (E)
 * and chunk maxima (F) of the softmax have two rows each, [r % 2] being filled while
 * [(r - 1) % 2] is written out (2 x 256 KiB per worker for 64K columns: L2). Each exponential
 * and each written element is computed as in the unpipelined loop, but a row's sums are not:
 * the fused loops (c.c's tile_row_expsum_wrf, gfor_sum_nt) split their lane sums where the
 * written row's vectors are 64-byte aligned, and a block's first row uses the plain loop. So
 * identical rows can differ in the last bits of their sums (and so of every output) with
 * their place in a block: within the tolerance of a sum, but not batch-invariant
 * (TILE_ROWFUSE_PIPE=0 is). */
/* Whether a kernel gets the pipelined loop. TILE_ROWFUSE_PIPE=0: none (rows one after the
 * other), =1: every kernel; unset: what measured faster per kernel. The softmax is pipelined
 * (0.98-1.16 of memcpy against 0.74-0.93 on one core of a 16-core Xeon, 0.55-0.69 against
 * 0.46-0.58 on the 2-core VM); the RMSNorm is not: its pipelined loop measured 0.3-22% below
 * the unpipelined one in every pair on the 16-core Xeon (ten pairs, two runs,
 * bench/results/cpu-rows-2026-11-30-s5-16core.md) and within noise on the VM. */
static bool pipe_on_for(bool rmsnorm) {
    const char *e = getenv("TILE_ROWFUSE_PIPE");
    if (e && !strcmp(e, "0")) return false;
    if (e && !strcmp(e, "1")) return true;
    return !rmsnorm;
}
static bool pipe_on(void) { return pipe_on_for(false); }
/* the pipelined loop, unless M is a constant below 64 (blocks of one row: nothing overlaps) */
static bool pipe_worth(ir_expr *M) {
    int64_t mv;
    return !(ir_const_int_value(M, &mv) && mv / 32 < 2);
}
#define ROW_BLOCK 16       /* most rows of one block of the pipelined loop */
#define ROW_KEEP_MAX 65536 /* longest row whose exponentials are kept (two rows of E per worker in L2) */

typedef struct pipe {
    ir_var *b, *r; /* the block (parallel) and the row read (serial) */
    ir_expr *M;    /* rows (i32) */
    tile_loc l;
} pipe;
static ir_expr *pipe_rb(rf *R, pipe *P) {
    tile_loc l = P->l;
    int64_t mv;
    if (ir_const_int_value(P->M, &mv)) return I32(R, mv / 32 < 1 ? 1 : mv / 32 > ROW_BLOCK ? ROW_BLOCK : mv / 32, l);
    return ir_simplify_int(R->m, ir_binary(R->m, IR_B_MAX, I32(R, 1, l), ir_binary(R->m, IR_B_MIN, I32(R, ROW_BLOCK, l), ir_binary(R->m, IR_B_FLOORDIV, P->M, I32(R, 32, l), l), l), l));
}
static ir_expr *pipe_first(rf *R, pipe *P) { return ir_simplify_int(R->m, ir_binary(R->m, IR_B_MUL, V(R, P->b, P->l), pipe_rb(R, P), P->l)); }
static ir_expr *pipe_n(rf *R, pipe *P) {
    return ir_simplify_int(R->m, ir_binary(R->m, IR_B_MIN, pipe_rb(R, P), ir_binary(R->m, IR_B_SUB, P->M, pipe_first(R, P), P->l), P->l));
}
/* r < first + n: row r is read in this step; r > first: row r - 1 is written */
static ir_expr *pipe_reads(rf *R, pipe *P) {
    return ir_binary(R->m, IR_B_LT, V(R, P->r, P->l), ir_binary(R->m, IR_B_ADD, pipe_first(R, P), pipe_n(R, P), P->l), P->l);
}
static ir_expr *pipe_writes(rf *R, pipe *P) { return ir_binary(R->m, IR_B_GT, V(R, P->r, P->l), pipe_first(R, P), P->l); }
static ir_stmt *iff(rf *R, ir_expr *c, ir_stmt *then, tile_loc l) {
    ir_stmt *s = ir_stmt_new(R->m, IR_S_IF, l);
    s->cond = c;
    s->body[0] = then;
    s->body[1] = NULL;
    return s;
}
static void pipe_init(rf *R, pipe *P, ir_expr *M, tile_loc l) {
    P->b = newvar(R, "rf_blk", IR_VAR_LOOP, TILE_DT_I32, l);
    P->r = newvar(R, "rf_row", IR_VAR_LOOP, TILE_DT_I32, l);
    P->M = M;
    P->l = l;
}
/* for b in parallel(blocks): pre...; for r in serial(first, n + 1): step */
static ir_stmt *pipe_loop(rf *R, pipe *P, ir_stmt **pre, int npre, ir_stmt *step) {
    tile_loc l = P->l;
    ir_expr *rb = pipe_rb(R, P);
    ir_expr *nb = ir_binary(R->m, IR_B_FLOORDIV, ir_binary(R->m, IR_B_ADD, P->M, ir_binary(R->m, IR_B_SUB, rb, I32(R, 1, l), l), l), pipe_rb(R, P), l);
    ir_stmt *rows = loop(R, P->r, pipe_first(R, P), ir_binary(R->m, IR_B_ADD, pipe_n(R, P), I32(R, 1, l), l), IR_LOOP_SERIAL, step, l);
    ir_stmt *st[8];
    int n = 0;
    for (int i = 0; i < npre; i++) st[n++] = pre[i];
    st[n++] = rows;
    return loop(R, P->b, I32(R, 0, l), ir_simplify_int(R->m, nb), IR_LOOP_PARALLEL, ir_seq(R->m, st, n, l), l);
}
static ir_stmt *alloc_rows2(rf *R, ir_buffer **out, const char *name, ir_expr *n, tile_loc l) {
    ir_expr **shape = TILE_NEW_ARRAY(&R->m->arena, ir_expr *, 2);
    shape[0] = I32(R, 2, l);
    shape[1] = n;
    *out = ir_buffer_new(R->m, R->f, name, TILE_DT_F32, IR_SCOPE_GLOBAL, 2, shape, IR_BUF_TEMP, l);
    ir_stmt *a = ir_stmt_new(R->m, IR_S_ALLOC, l);
    a->buf = *out;
    return a;
}

/* The one-exp softmax, pipelined: m0 is the read pass's start value of the max (-inf, or the
 * plain form's X[r, 0]); m, s (and the plain form's e) are the row's locals. */
static ir_stmt *softmax_pipe(rf *R, pipe *Pp, ir_expr *H, xval_fn xv, void *ctx, ir_expr *m0, ir_var *m, ir_var *s, ir_var *ev, ir_buffer *Y, tile_loc l) {
    pipe P = *Pp;
    ir_buffer *E, *F;
    if (!pipe_on() || !pipe_worth(P.M)) { /* the one-exp form one row after the other */
        ir_stmt *b1[6] = {alloc_row(R, &E, "rf_exp", H, l), alloc_row(R, &F, "rf_cmaxs", nchunks_of(R, H, l), l), assign(R, m, m0, l),
                          assign(R, s, ir_const_float(R->m, TILE_DT_F32, 0.0, l), l), online_pass(R, m, s, H, xv, ctx, ev, E, F, l),
                          scaled_write(R, E, F, m, s, H, Y, P.r, l)};
        if (Y->dtype == TILE_DT_F32) E->align_to = Y;
        return loop(R, P.r, I32(R, 0, l), P.M, IR_LOOP_PARALLEL, ir_seq(R->m, b1, 6, l), l);
    }
    ir_var *pm = newvar(R, "rf_pmax", IR_VAR_LOCAL, TILE_DT_F32, l), *ps = newvar(R, "rf_psum", IR_VAR_LOCAL, TILE_DT_F32, l);
    ir_var *ri = newvar(R, "rf_rinv", IR_VAR_LOCAL, TILE_DT_F32, l), *c = newvar(R, "rf_c", IR_VAR_LOOP, TILE_DT_I32, l);
    ir_stmt *pre[4] = {alloc_rows2(R, &E, "rf_exp", H, l), alloc_rows2(R, &F, "rf_cmaxs", nchunks_of(R, H, l), l),
                       assign(R, pm, ir_const_float(R->m, TILE_DT_F32, 0.0, l), l), assign(R, ps, ir_const_float(R->m, TILE_DT_F32, 1.0, l), l)};
    if (Y->dtype == TILE_DT_F32) E->align_to = Y; /* the kept exponentials at Y's vector alignment (ir.h) */
    ir_expr *rslot = ir_binary(R->m, IR_B_FLOORMOD, V(R, P.r, l), I32(R, 2, l), l);
    ir_expr *wslot = ir_binary(R->m, IR_B_FLOORMOD, row_at(R, P.r, -1, l), I32(R, 2, l), l);
    ir_stmt *cb[2] = {iff(R, pipe_writes(R, &P), scaled_chunk(R, c, E, F, wslot, pm, ri, H, Y, row_at(R, P.r, -1, l), l), l),
                      iff(R, pipe_reads(R, &P), online_chunk(R, c, m, s, H, xv, ctx, ev, E, F, rslot, NULL, l), l)};
    /* both (every step of a block but its first and last): the write of row r - 1 rides along
     * in the loop of row r's exponentials */
    ir_var *g = newvar(R, "rf_scale", IR_VAR_LOCAL, TILE_DT_F32, l);
    ride rd = {Y, E, row_at(R, P.r, -1, l), ir_binary(R->m, IR_B_FLOORMOD, row_at(R, P.r, -1, l), I32(R, 2, l), l), g};
    int nf;
    ir_expr **fi = row_idx(R, rd.wslot, V(R, c, l), &nf);
    ir_stmt *both[2] = {assign(R, g, ir_binary(R->m, IR_B_MUL, fexp(R, ir_binary(R->m, IR_B_SUB, ir_load(R->m, F, fi, l), V(R, pm, l), l), l), V(R, ri, l), l), l),
                        online_chunk(R, c, m, s, H, xv, ctx, ev, E, F, ir_binary(R->m, IR_B_FLOORMOD, V(R, P.r, l), I32(R, 2, l), l), &rd, l)};
    ir_stmt *sel = ir_stmt_new(R->m, IR_S_IF, l);
    sel->cond = ir_binary(R->m, IR_B_AND, pipe_writes(R, &P), pipe_reads(R, &P), l);
    sel->body[0] = ir_seq(R->m, both, 2, l);
    sel->body[1] = ir_seq(R->m, cb, 2, l);
    ir_stmt *init[2] = {assign(R, m, m0, l), assign(R, s, ir_const_float(R->m, TILE_DT_F32, 0.0, l), l)};
    ir_stmt *fin[2] = {assign(R, pm, V(R, m, l), l), assign(R, ps, V(R, s, l), l)};
    ir_stmt *step[4] = {iff(R, pipe_writes(R, &P), assign(R, ri, ir_binary(R->m, IR_B_DIV, ir_const_float(R->m, TILE_DT_F32, 1.0, l), V(R, ps, l), l), l), l),
                        iff(R, pipe_reads(R, &P), ir_seq(R->m, init, 2, l), l),
                        loop(R, c, I32(R, 0, l), nchunks_of(R, H, l), IR_LOOP_SERIAL, sel, l),
                        iff(R, pipe_reads(R, &P), ir_seq(R->m, fin, 2, l), l)};
    return pipe_loop(R, &P, pre, 4, ir_seq(R->m, step, 4, l));
}
/* the log's name of the softmax's form */
static const char *form_name(ir_expr *H, ir_expr *M) {
    int64_t h;
    bool p = pipe_on() && pipe_worth(M);
    const char *kept = p ? "pipelined one-exp form (blocks of rows; the write of row r - 1 in the loop of row r's exponentials)"
                         : pipe_on() ? "one-exp form, rows one after the other (fewer than 64 rows)" : "one-exp form, rows one after the other (TILE_ROWFUSE_PIPE=0)";
    if (!ir_const_int_value(H, &h)) return p ? "while N <= 65536 the pipelined one-exp form, else the online form" : "while N <= 65536 the one-exp form, else the online form";
    return h <= ROW_KEEP_MAX ? kept : "online form (the row is longer than 65536: exponentials recomputed in the write pass)";
}
/* the choice between the pipelined one-exp form (rows up to ROW_KEEP_MAX) and the online form
 * (`other`): fixed when H is a constant, else a run-time test */
static ir_stmt *by_row_length(rf *R, ir_expr *H, ir_stmt *kept, ir_stmt *other, tile_loc l) {
    int64_t h;
    if (ir_const_int_value(H, &h)) return h <= ROW_KEEP_MAX ? kept : other;
    ir_stmt *s = ir_stmt_new(R->m, IR_S_IF, l);
    s->cond = ir_binary(R->m, IR_B_LE, H, I32(R, ROW_KEEP_MAX, l), l);
    s->body[0] = kept;
    s->body[1] = other;
    return s;
}

/* G = a / s with s the row's sum: a * rinv with rinv = 1 / s computed once per row (a
 * division per element is the slowest vector operation of the write pass; the product
 * rounds differently by at most an ulp or so, inside the f32 tolerance). *pre is the
 * assignment of rinv, or NULL when G is left as it is. */
static ir_expr *recip(rf *R, ir_expr *G, ir_var *s, ir_stmt **pre, tile_loc l) {
    *pre = NULL;
    if (!binop(G, IR_B_DIV) || !is_var(G->args[1], s) || G->dtype != TILE_DT_F32) return G;
    ir_var *ri = newvar(R, "rf_rinv", IR_VAR_LOCAL, TILE_DT_F32, l);
    *pre = assign(R, ri, ir_binary(R->m, IR_B_DIV, ir_const_float(R->m, TILE_DT_F32, 1.0, l), V(R, s, l), l), l);
    return ir_binary(R->m, IR_B_MUL, G->args[0], V(R, ri, l), l);
}

/* ---------- S1: plain-form softmax ---------- */

typedef struct plainx { ir_buffer *X; ir_var *i; int off; } plainx;
static ir_expr *plain_x(rf *R, void *ctx, ir_var *col, tile_loc l) {
    plainx *p = ctx;
    return load2e(R, p->X, row_at(R, p->i, p->off, l), col, l);
}

#define REJECT(why) do { *reason = (why); return NULL; } while (0)

static ir_stmt *match_plain(rf *R, ir_stmt *s, const char **reason) {
    ir_stmt *b = s->body[0];
    if (nstmts(b) != 5) REJECT("the row loop does not hold the five statements of a softmax");
    ir_stmt *a0 = nth(b, 0), *a2 = nth(b, 2);
    const ir_stmt *a1 = nth(b, 1), *a3 = nth(b, 3), *a4 = nth(b, 4);
    ir_var *i = s->var;
    if (a0->kind != IR_S_ASSIGN || a2->kind != IR_S_ASSIGN || a1->kind != IR_S_FOR || a3->kind != IR_S_FOR || a4->kind != IR_S_FOR)
        REJECT("not assign, loop, assign, loop, loop");
    ir_var *m = a0->var, *sv = a2->var;
    const ir_expr *l0 = a0->value;
    if (!l0 || l0->kind != IR_E_LOAD || l0->nargs != 2 || !is_var(l0->args[0], i) || !const_is(l0->args[1], 0))
        REJECT("the max does not start from X[i, 0]");
    ir_buffer *X = l0->buf;
    if (X->dtype != TILE_DT_F32 || m->dtype != TILE_DT_F32 || sv->dtype != TILE_DT_F32 || !is_global(X))
        REJECT("not f32 throughout");
    if (!fconst_is(a2->value, 0.0)) REJECT("the sum does not start from 0");
    /* loop ends: a1 over [1, H), a3 and a4 over [0, H) */
    if (!const_is(a1->lo, 1) || !const_is(a3->lo, 0) || !const_is(a4->lo, 0)) REJECT("the loops do not start at 1, 0, 0");
    ir_expr *H = ir_simplify_int(R->m, a3->extent);
    ir_expr *H32 = as_i32(R, H);
    ir_expr *H1 = ir_simplify_int(R->m, ir_binary(R->m, IR_B_ADD, a1->lo, a1->extent, a1->loc));
    if (!ir_expr_equal(H, H1) || !ir_expr_equal(H, ir_simplify_int(R->m, a4->extent))) REJECT("the three loops do not end at the same column");
    for (const ir_stmt *q = a1; q; q = q == a1 ? a3 : q == a3 ? a4 : NULL)
        if (q->loop_kind != IR_LOOP_SERIAL && q->loop_kind != IR_LOOP_VECTORIZED) REJECT("an inner loop is not serial");
    /* a1: m = max(m, X[i, j]) */
    const ir_stmt *b1 = only(a1->body[0]);
    ldpat px1 = {X, i, a1->var};
    if (!b1 || b1->kind != IR_S_ASSIGN || b1->var != m || !comm(b1->value, IR_B_MAX, p_var, m, p_load, &px1)) REJECT("the first loop is not a row max");
    /* a3: e = exp(X[i, j] - m); Y[i, j] = e; s = s + e */
    const ir_stmt *b3 = a3->body[0];
    if (nstmts(b3) != 3) REJECT("the exp loop does not hold three statements");
    const ir_stmt *e1 = nth((ir_stmt *)b3, 0), *e2 = nth((ir_stmt *)b3, 1), *e3 = nth((ir_stmt *)b3, 2);
    ldpat px3 = {X, i, a3->var};
    if (e1->kind != IR_S_ASSIGN || e1->var->dtype != TILE_DT_F32 || !is_exp(e1->value) || !binop(e1->value->args[0], IR_B_SUB) ||
        !p_load(e1->value->args[0]->args[0], &px3) || !is_var(e1->value->args[0]->args[1], m))
        REJECT("the exp loop does not start with e = exp(X[i, j] - m)");
    ir_var *ev = e1->var;
    if (e2->kind != IR_S_STORE || e2->buf->dtype != TILE_DT_F32 || !is_global(e2->buf) || e2->buf == X || e2->buf->rank != 2 ||
        !is_var(e2->idx[0], i) || !is_var(e2->idx[1], a3->var) || !is_var(e2->value, ev))
        REJECT("the exp loop does not store e into Y[i, j]");
    ir_buffer *Y = e2->buf;
    if (e3->kind != IR_S_ASSIGN || e3->var != sv || !comm(e3->value, IR_B_ADD, p_var, sv, p_var, ev)) REJECT("the exp loop does not sum e into s");
    /* a4: Y[i, j] = G(Y[i, j], s) */
    const ir_stmt *b4 = only(a4->body[0]);
    if (!b4 || b4->kind != IR_S_STORE || b4->buf != Y || !is_var(b4->idx[0], i) || !is_var(b4->idx[1], a4->var))
        REJECT("the last loop does not store Y[i, j]");
    if (m == sv || m == ev || sv == ev) REJECT("locals shared");
    /* the new body */
    tile_loc l = L0(s);
    plainx px = {X, i, 0};
    ir_var *jw = newvar(R, "rf_j", IR_VAR_LOOP, TILE_DT_I32, l);
    subst S = {0};
    S.b[0].buf = Y, S.b[0].nidx = 2, S.b[0].idx[0] = i, S.b[0].idx[1] = a4->var;
    S.b[0].to = fexp(R, ir_binary(R->m, IR_B_SUB, load2(R, X, i, jw, l), V(R, m, l), l), l);
    S.nb = 1;
    S.v[0].var = sv, S.v[0].to = V(R, sv, l);
    S.v[1].var = i, S.v[1].to = V(R, i, l);
    S.v[2].var = a4->var, S.v[2].to = V(R, jw, l);
    S.nv = 3;
    ir_expr *G = clone(R, b4->value, &S);
    if (!G) REJECT("the normalisation reads something other than Y[i, j], s and invariants");
    ir_stmt *ys = ir_stmt_new(R->m, IR_S_STORE, b4->loc);
    ys->buf = Y;
    ys->idx = TILE_NEW_ARRAY(&R->m->arena, ir_expr *, 2);
    ys->idx[0] = V(R, i, l);
    ys->idx[1] = V(R, jw, l);
    ldpat py4 = {Y, i, a4->var};
    /* the online form: one read pass, one write pass recomputing exp(x - m) */
    ir_stmt *pre;
    ys->value = recip(R, G, sv, &pre, l);
    ir_stmt *nb[5] = {a0, a2, online_pass(R, m, sv, H32, plain_x, &px, ev, NULL, NULL, l), pre, loop(R, jw, I32(R, 0, l), H32, IR_LOOP_VECTORIZED, ys, l)};
    if (!pre) nb[3] = nb[4];
    ir_stmt *res = s;
    const char *form = "online max and sum in chunks, then a write pass";
    if (binop(b4->value, IR_B_DIV) && p_load(b4->value->args[0], &py4) && is_var(b4->value->args[1], sv) && const_is(s->lo, 0)) {
        /* Y = e / s: the one-exp form, pipelined (rows up to ROW_KEEP_MAX) */
        pipe P;
        pipe_init(R, &P, as_i32(R, s->extent), l);
        if (!pipe_on() || !pipe_worth(P.M)) P.r = i; /* rows one after the other: the source's loop variable */
        plainx pp = {X, P.r, 0};
        ir_expr *x0[2] = {V(R, P.r, l), I32(R, 0, l)};
        ir_stmt *kept = softmax_pipe(R, &P, H32, plain_x, &pp, ir_load(R->m, X, x0, l), m, sv, ev, Y, l);
        form = form_name(H32, P.M);
        res = by_row_length(R, H32, kept, s, l);
    }
    s->body[0] = ir_seq(R->m, nb, pre ? 5 : 4, l);
    if (tile_log_enabled(TILE_LOG_INFO))
        tile_log(TILE_LOG_INFO, "rowfuse: loop %s at %s:%d is a row softmax (plain form) -> %s (chunks of %d)",
                 i->name, opt_loc_file(s->loc), s->loc.line, form, ROW_CHUNK);
    return res;
}

/* ---------- the tile forms: common checks of the kernel ---------- */

typedef struct tilex { ir_buffer *X; ir_var *r; int off; } tilex;
static ir_expr *tile_x(rf *R, void *ctx, ir_var *col, tile_loc l) {
    tilex *p = ctx;
    return ir_cast(R->m, TILE_DT_F32, load2e(R, p->X, row_at(R, p->r, p->off, l), col, l), l);
}

/* the kernel's allocations (leading), in a table; returns the index of the first other statement */
static int kernel_allocs(ir_stmt *body, ir_buffer **al, int max, int *nal) {
    int n = nstmts(body), k = 0;
    *nal = 0;
    for (; k < n; k++) {
        ir_stmt *q = nth(body, k);
        if (q->kind != IR_S_ALLOC) break;
        if (*nal >= max) return -1;
        al[(*nal)++] = q->buf;
    }
    return k;
}
static bool allocated(ir_buffer *const *al, int nal, const ir_buffer *b) {
    for (int i = 0; i < nal; i++)
        if (al[i] == b) return b->scope == IR_SCOPE_FRAGMENT && b->dtype == TILE_DT_F32;
    return false;
}

static ir_stmt *row_loop(rf *R, ir_var **rv, const ir_buffer *X, tile_loc l) {
    *rv = newvar(R, "rf_row", IR_VAR_LOOP, TILE_DT_I32, l);
    return loop(R, *rv, I32(R, 0, l), as_i32(R, X->shape[0]), IR_LOOP_PARALLEL, NULL, l);
}

static ir_stmt *store2e(rf *R, ir_buffer *Y, ir_expr *row, ir_var *j, ir_expr *v, tile_loc l) {
    ir_stmt *ys = ir_stmt_new(R->m, IR_S_STORE, l);
    ys->buf = Y;
    ys->idx = TILE_NEW_ARRAY(&R->m->arena, ir_expr *, 2);
    ys->idx[0] = row;
    ys->idx[1] = V(R, j, l);
    ys->value = ir_cast(R->m, Y->dtype, v, l);
    return ys;
}
static ir_stmt *store2(rf *R, ir_buffer *Y, ir_var *r, ir_var *j, ir_expr *v, tile_loc l) { return store2e(R, Y, V(R, r, l), j, v, l); }

/* ---------- S2: tile-form online softmax ---------- */

static bool p_neginf(const ir_expr *e, const void *u) { (void)u; return e && e->kind == IR_E_CONST && e->fval == -INFINITY; }

static ir_stmt *match_tile_softmax(rf *R, ir_stmt *ks, const char **reason) {
    if (ks->ngrid != 1) REJECT("the grid is not one-dimensional");
    ir_var *bx = ks->block_vars[0];
    ir_stmt *b = ks->body[0];
    ir_buffer *al[8];
    int nal, k = kernel_allocs(b, al, 8, &nal);
    if (k < 0 || nstmts(b) != k + 4) REJECT("not allocations, two fills and two loops");
    ir_stmt *f1 = nth(b, k), *f2 = nth(b, k + 1), *L1 = nth(b, k + 2), *L2 = nth(b, k + 3);
    if (f1->kind != IR_S_FILL || f2->kind != IR_S_FILL || L1->kind != IR_S_FOR || L2->kind != IR_S_FOR) REJECT("not fill, fill, loop, loop");
    ir_buffer *rmax = f1->regions[0].buf, *rsum = f2->regions[0].buf;
    if (!allocated(al, nal, rmax) || !allocated(al, nal, rsum) || rmax == rsum || rmax->rank != 1 || !whole_frag(&f1->regions[0], rmax) ||
        !whole_frag(&f2->regions[0], rsum) || !p_neginf(f1->value, NULL) || !fconst_is(f2->value, 0.0))
        REJECT("the fills are not row_max = -inf, row_sum = 0");
    int64_t bM;
    if (!ir_const_int_value(rmax->shape[0], &bM) || !same_shape(rmax, rsum)) REJECT("row statistics of different shapes");
    /* pass 1 */
    if (L1->loop_kind != IR_LOOP_SERIAL || !const_is(L1->lo, 0) || nstmts(L1->body[0]) != 7) REJECT("the first column loop does not hold seven statements");
    ir_stmt *p1 = L1->body[0];
    ir_stmt *cp = nth(p1, 0), *mk = nth(p1, 1), *rm = nth(p1, 2), *rs = nth(p1, 3), *ex = nth(p1, 4), *rsu = nth(p1, 5), *ad = nth(p1, 6);
    if (cp->kind != IR_S_COPY) REJECT("no tile copy first");
    ir_buffer *X = cp->regions[0].buf, *xt = cp->regions[1].buf;
    if (!allocated(al, nal, xt) || xt->rank != 2 || !is_global(X) || X->rank != 2 || !whole_frag(&cp->regions[1], xt)) REJECT("the copy is not X -> a 2-D fragment");
    int64_t bN, bM2;
    if (!ir_const_int_value(xt->shape[0], &bM2) || bM2 != bM || !ir_const_int_value(xt->shape[1], &bN)) REJECT("tile shapes");
    ir_var *kn = L1->var;
    if (!row_block(&cp->regions[0], X, bx, bM, kn, bN)) REJECT("the copy does not read X[bx * bM, kn * bN]");
    if (!covers(ks->grid[0], bM, X->shape[0])) REJECT("the grid does not cover the rows of X");
    if (!covers(L1->extent, bN, X->shape[1])) REJECT("the column loop does not cover the columns of X");
    /* the mask: xt[i, j] = select(kn * bN + j < H, xt[i, j], -inf), H the columns of X */
    int64_t e2[2] = {bM, bN};
    const ir_var *iv[2];
    ir_stmt *mb;
    if (!par_nest(mk, 2, e2, iv, &mb) || (mb = (ir_stmt *)only(mb))->kind != IR_S_STORE || mb->buf != xt || !is_var(mb->idx[0], iv[0]) ||
        !is_var(mb->idx[1], iv[1]))
        REJECT("no masking nest after the copy");
    ldpat pxt = {xt, iv[0], iv[1]};
    const ir_expr *sel = mb->value;
    if (!sel || sel->kind != IR_E_SELECT || !p_load(sel->args[1], &pxt) || !p_neginf(sel->args[2], NULL) || !binop(sel->args[0], IR_B_LT))
        REJECT("the mask is not select(col < N, x, -inf)");
    {
        const ir_expr *col = sel->args[0]->args[0], *lim = sel->args[0]->args[1];
        if (!binop(col, IR_B_ADD)) REJECT("the mask's column is not kn * bN + j");
        const ir_expr *cj = is_var(col->args[1], iv[1]) ? col->args[0] : is_var(col->args[0], iv[1]) ? col->args[1] : NULL;
        int64_t c;
        if (!cj || !binop(cj, IR_B_MUL) ||
            !((is_var(cj->args[0], kn) && ir_const_int_value(cj->args[1], &c) && c == bN) || (is_var(cj->args[1], kn) && ir_const_int_value(cj->args[0], &c) && c == bN)))
            REJECT("the mask's column is not kn * bN + j");
        int64_t a, bb;
        bool eq = ir_const_int_value(lim, &a) && ir_const_int_value(X->shape[1], &bb) ? a == bb : ir_expr_equal(lim, X->shape[1]);
        if (!eq) REJECT("the mask's limit is not the number of columns of X");
    }
    /* reduce_max xt -> tmax (clear) */
    if (rm->kind != IR_S_REDUCE || rm->reduce_op != IR_RED_MAX || !rm->clear || rm->dim != 1 || !whole_frag(&rm->regions[0], xt)) REJECT("no reduce_max of the tile (clear)");
    ir_buffer *tmax = rm->regions[1].buf;
    if (!allocated(al, nal, tmax) || !whole_frag(&rm->regions[1], tmax) || !same_shape(tmax, rmax)) REJECT("reduce_max target");
    /* rescale: nm = max(rmax[i], tmax[i]); rsum[i] = rsum[i] * exp(rmax[i] - nm); rmax[i] = nm */
    int64_t e1[1] = {bM};
    const ir_var *ii[1];
    ir_stmt *rb;
    if (!par_nest(rs, 1, e1, ii, &rb) || nstmts(rb) != 3) REJECT("no rescale nest");
    {
        ldpat lm = {rmax, ii[0], NULL}, lt = {tmax, ii[0], NULL}, ls = {rsum, ii[0], NULL};
        ir_stmt *q0 = nth(rb, 0), *q1 = nth(rb, 1), *q2 = nth(rb, 2);
        if (q0->kind != IR_S_ASSIGN || !comm(q0->value, IR_B_MAX, p_load, &lm, p_load, &lt)) REJECT("the rescale does not start with nm = max(row_max, tile_max)");
        ir_var *nm = q0->var;
        if (q1->kind != IR_S_STORE || q1->buf != rsum || !is_var(q1->idx[0], ii[0])) REJECT("rescale: no row_sum store");
        const ir_expr *mv = q1->value;
        const ir_expr *ef = NULL;
        if (binop(mv, IR_B_MUL)) ef = p_load(mv->args[0], &ls) ? mv->args[1] : p_load(mv->args[1], &ls) ? mv->args[0] : NULL;
        if (!ef || !is_exp(ef) || !binop(ef->args[0], IR_B_SUB) || !p_load(ef->args[0]->args[0], &lm) || !is_var(ef->args[0]->args[1], nm))
            REJECT("rescale: not row_sum * exp(row_max - nm)");
        if (q2->kind != IR_S_STORE || q2->buf != rmax || !is_var(q2->idx[0], ii[0]) || !is_var(q2->value, nm)) REJECT("rescale: row_max = nm missing");
    }
    /* exp nest: xt[i, j] = exp(xt[i, j] - rmax[i]) */
    if (!par_nest(ex, 2, e2, iv, &mb) || (mb = (ir_stmt *)only(mb))->kind != IR_S_STORE || mb->buf != xt || !is_var(mb->idx[0], iv[0]) ||
        !is_var(mb->idx[1], iv[1]))
        REJECT("no exp nest");
    {
        ldpat lx = {xt, iv[0], iv[1]}, lm = {rmax, iv[0], NULL};
        const ir_expr *v = mb->value;
        if (!is_exp(v) || !binop(v->args[0], IR_B_SUB) || !p_load(v->args[0]->args[0], &lx) || !p_load(v->args[0]->args[1], &lm))
            REJECT("the exp nest is not exp(x - row_max)");
    }
    if (rsu->kind != IR_S_REDUCE || rsu->reduce_op != IR_RED_SUM || !rsu->clear || rsu->dim != 1 || !whole_frag(&rsu->regions[0], xt)) REJECT("no reduce_sum of the tile (clear)");
    ir_buffer *tsum = rsu->regions[1].buf;
    if (!allocated(al, nal, tsum) || !whole_frag(&rsu->regions[1], tsum) || !same_shape(tsum, rmax)) REJECT("reduce_sum target");
    if (!par_nest(ad, 1, e1, ii, &rb) || (rb = (ir_stmt *)only(rb))->kind != IR_S_STORE || rb->buf != rsum || !is_var(rb->idx[0], ii[0]))
        REJECT("no row_sum += tile_sum nest");
    {
        ldpat ls = {rsum, ii[0], NULL}, lt = {tsum, ii[0], NULL};
        if (!comm(rb->value, IR_B_ADD, p_load, &ls, p_load, &lt)) REJECT("not row_sum + tile_sum");
    }
    if (tmax == rmax || tmax == rsum || tsum == rmax || tsum == rsum || tsum == tmax || xt == rmax || xt == tmax) REJECT("buffers shared");
    /* pass 2 */
    if (L2->loop_kind != IR_LOOP_SERIAL || !const_is(L2->lo, 0) || nstmts(L2->body[0]) != 3) REJECT("the second column loop does not hold three statements");
    ir_stmt *p2 = L2->body[0];
    ir_stmt *c2 = nth(p2, 0), *nn = nth(p2, 1), *co = nth(p2, 2);
    ir_var *kn2 = L2->var;
    if (c2->kind != IR_S_COPY || !row_block(&c2->regions[0], X, bx, bM, kn2, bN) || !whole_frag(&c2->regions[1], xt)) REJECT("pass 2 does not copy X in");
    if (!covers(L2->extent, bN, X->shape[1])) REJECT("pass 2 does not cover the columns");
    if (!par_nest(nn, 2, e2, iv, &mb) || (mb = (ir_stmt *)only(mb))->kind != IR_S_STORE || mb->buf != xt || !is_var(mb->idx[0], iv[0]) ||
        !is_var(mb->idx[1], iv[1]))
        REJECT("pass 2 has no normalisation nest");
    if (co->kind != IR_S_COPY || !whole_frag(&co->regions[0], xt)) REJECT("pass 2 does not copy the tile out");
    ir_buffer *Y = co->regions[1].buf;
    if (!is_global(Y) || Y == X || !row_block(&co->regions[1], Y, bx, bM, kn2, bN) || !same_shape(X, Y)) REJECT("the copy out is not Y[bx * bM, kn * bN] of X's shape");
    /* build */
    tile_loc l = L0(ks);
    ir_var *r;
    ir_stmt *rl = row_loop(R, &r, X, l);
    ir_var *m = newvar(R, "rf_max", IR_VAR_LOCAL, TILE_DT_F32, l), *s = newvar(R, "rf_sum", IR_VAR_LOCAL, TILE_DT_F32, l);
    ir_var *jw = newvar(R, "rf_j", IR_VAR_LOOP, TILE_DT_I32, l);
    tilex tx = {X, r, 0};
    subst S = {0};
    S.b[0].buf = xt, S.b[0].nidx = 2, S.b[0].idx[0] = iv[0], S.b[0].idx[1] = iv[1], S.b[0].to = tile_x(R, &tx, jw, l);
    S.b[1].buf = rmax, S.b[1].nidx = 1, S.b[1].idx[0] = iv[0], S.b[1].to = V(R, m, l);
    S.b[2].buf = rsum, S.b[2].nidx = 1, S.b[2].idx[0] = iv[0], S.b[2].to = V(R, s, l);
    S.nb = 3;
    ir_expr *G = clone(R, mb->value, &S);
    if (!G) REJECT("the normalisation reads something other than the tile, row_max and row_sum");
    ir_expr *H = as_i32(R, X->shape[1]);
    ir_stmt *pre;
    ir_stmt *body[5] = {assign(R, m, ir_const_float(R->m, TILE_DT_F32, -INFINITY, l), l), assign(R, s, ir_const_float(R->m, TILE_DT_F32, 0.0, l), l),
                        online_pass(R, m, s, H, tile_x, &tx, NULL, NULL, NULL, l), NULL, NULL};
    ir_stmt *res = rl;
    const char *form = "online max and sum in chunks, then a write pass";
    {
        /* x = exp(x - row_max) / row_sum: the one-exp form, pipelined (rows up to ROW_KEEP_MAX) */
        ldpat lx = {xt, iv[0], iv[1]}, lm = {rmax, iv[0], NULL}, ls = {rsum, iv[0], NULL};
        const ir_expr *v = mb->value;
        if (binop(v, IR_B_DIV) && p_load(v->args[1], &ls) && is_exp(v->args[0]) && binop(v->args[0]->args[0], IR_B_SUB) &&
            p_load(v->args[0]->args[0]->args[0], &lx) && p_load(v->args[0]->args[0]->args[1], &lm)) {
            pipe P;
            pipe_init(R, &P, as_i32(R, X->shape[0]), l);
            tilex pt = {X, P.r, 0};
            ir_stmt *kept = softmax_pipe(R, &P, H, tile_x, &pt, ir_const_float(R->m, TILE_DT_F32, -INFINITY, l), m, s, NULL, Y, l);
            form = form_name(H, P.M);
            res = by_row_length(R, H, kept, rl, l);
        }
    }
    G = recip(R, G, s, &pre, l);
    body[3] = pre;
    body[4] = loop(R, jw, I32(R, 0, l), H, IR_LOOP_VECTORIZED, store2(R, Y, r, jw, ir_cast(R->m, xt->dtype, G, l), l), l);
    if (!pre) body[3] = body[4];
    rl->body[0] = ir_seq(R->m, body, pre ? 5 : 4, l);
    if (tile_log_enabled(TILE_LOG_INFO))
        tile_log(TILE_LOG_INFO, "rowfuse: kernel at %s:%d is an online row softmax (%lldx%lld tiles) -> rows of %s over the pool: %s (chunks of %d)",
                 opt_loc_file(ks->loc), ks->loc.line, (long long)bM, (long long)bN, X->name, form, ROW_CHUNK);
    return res;
}

/* ---------- S3: tile-form row scaling by a sum (RMSNorm) ---------- */

static ir_stmt *match_tile_rowscale(rf *R, ir_stmt *ks, const char **reason) {
    if (ks->ngrid != 1) REJECT("the grid is not one-dimensional");
    ir_var *bx = ks->block_vars[0];
    ir_stmt *b = ks->body[0];
    ir_buffer *al[8];
    int nal, k = kernel_allocs(b, al, 8, &nal);
    if (k < 0 || nstmts(b) != k + 7) REJECT("not allocations and seven statements");
    ir_stmt *cx = nth(b, k), *cw = nth(b, k + 1), *sqn = nth(b, k + 2), *rd = nth(b, k + 3), *qn = nth(b, k + 4), *sn = nth(b, k + 5), *co = nth(b, k + 6);
    if (cx->kind != IR_S_COPY || cw->kind != IR_S_COPY) REJECT("no two copies in");
    if (cw->regions[1].buf->rank == 2) { ir_stmt *t = cx; cx = cw; cw = t; }
    ir_buffer *X = cx->regions[0].buf, *x = cx->regions[1].buf, *W = cw->regions[0].buf, *w = cw->regions[1].buf;
    if (!is_global(X) || !is_global(W) || X->rank != 2 || W->rank != 1 || !allocated(al, nal, x) || !allocated(al, nal, w) || x->rank != 2 || w->rank != 1)
        REJECT("the copies are not X -> x[bM, N], W -> w[N]");
    int64_t bM, N, nw, xc, wc;
    if (!ir_const_int_value(x->shape[0], &bM) || !ir_const_int_value(x->shape[1], &N) || !ir_const_int_value(w->shape[0], &nw) || nw != N)
        REJECT("fragment shapes");
    if (!ir_const_int_value(X->shape[1], &xc) || xc != N || !ir_const_int_value(W->shape[0], &wc) || wc != N) REJECT("the fragments are not whole rows of X and all of W");
    if (!row_block(&cx->regions[0], X, bx, bM, NULL, N) || !whole_frag(&cx->regions[1], x)) REJECT("the copy is not X[bx * bM, 0] -> x");
    if (!whole_frag(&cw->regions[1], w) || !const_is(cw->regions[0].start[0], 0) || !const_is(cw->regions[0].extent[0], N)) REJECT("the copy of W is not whole");
    if (!covers(ks->grid[0], bM, X->shape[0])) REJECT("the grid does not cover the rows of X");
    int64_t e2[2] = {bM, N}, e1[1] = {bM};
    const ir_var *iv[2], *ii[1];
    ir_stmt *pb, *qb, *rb;
    if (!par_nest(sqn, 2, e2, iv, &pb) || (pb = (ir_stmt *)only(pb))->kind != IR_S_STORE || !is_var(pb->idx[0], iv[0]) || !is_var(pb->idx[1], iv[1]))
        REJECT("no elementwise nest before the reduce");
    ir_buffer *sq = pb->buf;
    if (!allocated(al, nal, sq) || sq == x || sq == w || !same_shape(sq, x)) REJECT("the nest does not write a fragment like x");
    if (rd->kind != IR_S_REDUCE || rd->reduce_op != IR_RED_SUM || !rd->clear || rd->dim != 1 || !whole_frag(&rd->regions[0], sq)) REJECT("no reduce_sum of it (clear)");
    ir_buffer *acc = rd->regions[1].buf;
    int64_t na;
    if (!allocated(al, nal, acc) || acc->rank != 1 || !ir_const_int_value(acc->shape[0], &na) || na != bM || !whole_frag(&rd->regions[1], acc) || acc == w)
        REJECT("the reduce target");
    if (!par_nest(qn, 1, e1, ii, &qb) || (qb = (ir_stmt *)only(qb))->kind != IR_S_STORE || qb->buf != acc || !is_var(qb->idx[0], ii[0]))
        REJECT("no per-row nest on the sum");
    if (!par_nest(sn, 2, e2, iv + 0, &rb) || (rb = (ir_stmt *)only(rb))->kind != IR_S_STORE || rb->buf != x || !is_var(rb->idx[0], iv[0]) ||
        !is_var(rb->idx[1], iv[1]))
        REJECT("no scaling nest into x");
    if (co->kind != IR_S_COPY || !whole_frag(&co->regions[0], x)) REJECT("no copy of x out");
    ir_buffer *Y = co->regions[1].buf;
    if (!is_global(Y) || Y == X || Y == W || !row_block(&co->regions[1], Y, bx, bM, NULL, N) || !same_shape(X, Y)) REJECT("the copy out is not Y[bx * bM, 0] of X's shape");
    /* the P nest was matched with the first iv; re-read its variables */
    const ir_var *pv[2];
    ir_stmt *dummy;
    par_nest(sqn, 2, e2, pv, &dummy);
    tile_loc l = L0(ks);
    pipe Pp;
    pipe_init(R, &Pp, as_i32(R, X->shape[0]), l);
    ir_var *r = Pp.r;
    ir_var *j1 = newvar(R, "rf_j", IR_VAR_LOOP, TILE_DT_I32, l), *j2 = newvar(R, "rf_j", IR_VAR_LOOP, TILE_DT_I32, l);
    ir_var *a = newvar(R, "rf_acc", IR_VAR_LOCAL, acc->dtype, l), *sc = newvar(R, "rf_scale", IR_VAR_LOCAL, acc->dtype, l);
    bool piped = pipe_on_for(true) && pipe_worth(Pp.M);
    tilex tx = {X, r, 0}, txw = {X, r, piped ? -1 : 0};
    subst S = {0};
    S.b[0].buf = x, S.b[0].nidx = 2, S.b[0].idx[0] = pv[0], S.b[0].idx[1] = pv[1], S.b[0].to = tile_x(R, &tx, j1, l);
    S.nb = 1;
    ir_expr *P = clone(R, pb->value, &S);
    if (!P) REJECT("the elementwise nest reads something other than x[i, j]");
    subst Q = {0};
    Q.b[0].buf = acc, Q.b[0].nidx = 1, Q.b[0].idx[0] = ii[0], Q.b[0].to = V(R, a, l);
    Q.nb = 1;
    ir_expr *Qe = clone(R, qb->value, &Q);
    if (!Qe) REJECT("the per-row nest reads something other than the sum");
    subst T = {0};
    T.b[0].buf = x, T.b[0].nidx = 2, T.b[0].idx[0] = iv[0], T.b[0].idx[1] = iv[1], T.b[0].to = tile_x(R, &txw, j2, l);
    T.b[1].buf = acc, T.b[1].nidx = 1, T.b[1].idx[0] = iv[0], T.b[1].to = V(R, sc, l);
    T.b[2].buf = w, T.b[2].nidx = 1, T.b[2].idx[0] = iv[1], T.b[2].to = ir_cast(R->m, w->dtype, ir_load(R->m, W, (ir_expr *[]){V(R, j2, l)}, l), l);
    T.nb = 3;
    ir_expr *Re = clone(R, rb->value, &T);
    if (!Re) REJECT("the scaling nest reads something other than x[i, j], the row value and w[j]");
    ir_expr *H = as_i32(R, X->shape[1]);
    ir_stmt *sum = assign(R, a, ir_binary(R->m, IR_B_ADD, V(R, a, l), ir_cast(R->m, acc->dtype, ir_cast(R->m, sq->dtype, P, l), l), l), l);
    ir_stmt *res;
    if (!piped) {
        ir_stmt *rl = loop(R, r, I32(R, 0, l), as_i32(R, X->shape[0]), IR_LOOP_PARALLEL, NULL, l);
        ir_stmt *body[4] = {assign(R, a, ir_const_float(R->m, acc->dtype, 0.0, l), l), loop(R, j1, I32(R, 0, l), H, IR_LOOP_SERIAL, sum, l),
                            assign(R, sc, ir_cast(R->m, acc->dtype, Qe, l), l),
                            loop(R, j2, I32(R, 0, l), H, IR_LOOP_VECTORIZED, store2(R, Y, r, j2, ir_cast(R->m, x->dtype, Re, l), l), l)};
        rl->body[0] = ir_seq(R->m, body, 4, l);
        res = rl;
    } else {
        /* pipelined: chunk c of row r - 1's write pass, then chunk c of row r's sum */
        ir_var *c = newvar(R, "rf_c", IR_VAR_LOOP, TILE_DT_I32, l);
        ir_expr *C = I32(R, ROW_CHUNK, l);
        ir_expr *start = ir_binary(R->m, IR_B_MUL, V(R, c, l), C, l);
        ir_expr *ext = ir_binary(R->m, IR_B_MIN, ir_binary(R->m, IR_B_SUB, H, start, l), C, l);
        ir_stmt *cb[2] = {iff(R, pipe_writes(R, &Pp), loop(R, j2, start, ext, IR_LOOP_VECTORIZED,
                                                         store2e(R, Y, row_at(R, r, -1, l), j2, ir_cast(R->m, x->dtype, Re, l), l), l), l),
                          iff(R, pipe_reads(R, &Pp), loop(R, j1, start, ext, IR_LOOP_SERIAL, sum, l), l)};
        /* both (every step of a block but its first and last): one loop sums row r and writes
         * row r - 1 */
        ir_var *j3 = newvar(R, "rf_j", IR_VAR_LOOP, TILE_DT_I32, l);
        tilex tx3 = {X, r, 0}, tx3w = {X, r, -1};
        S.b[0].to = tile_x(R, &tx3, j3, l);
        T.b[0].to = tile_x(R, &tx3w, j3, l);
        T.b[2].to = ir_cast(R->m, w->dtype, ir_load(R->m, W, (ir_expr *[]){V(R, j3, l)}, l), l);
        ir_expr *P3 = clone(R, pb->value, &S), *R3 = clone(R, rb->value, &T);
        ir_stmt *two[2] = {assign(R, a, ir_binary(R->m, IR_B_ADD, V(R, a, l), ir_cast(R->m, acc->dtype, ir_cast(R->m, sq->dtype, P3, l), l), l), l),
                           store2e(R, Y, row_at(R, r, -1, l), j3, ir_cast(R->m, x->dtype, R3, l), l)};
        ir_stmt *sel = ir_stmt_new(R->m, IR_S_IF, l);
        sel->cond = ir_binary(R->m, IR_B_AND, pipe_writes(R, &Pp), pipe_reads(R, &Pp), l);
        sel->body[0] = loop(R, j3, start, ext, IR_LOOP_SERIAL, ir_seq(R->m, two, 2, l), l);
        sel->body[1] = ir_seq(R->m, cb, 2, l);
        ir_stmt *step[3] = {iff(R, pipe_reads(R, &Pp), assign(R, a, ir_const_float(R->m, acc->dtype, 0.0, l), l), l),
                            loop(R, c, I32(R, 0, l), nchunks_of(R, H, l), IR_LOOP_SERIAL, sel, l),
                            iff(R, pipe_reads(R, &Pp), assign(R, sc, ir_cast(R->m, acc->dtype, Qe, l), l), l)};
        ir_stmt *pre[1] = {assign(R, sc, ir_const_float(R->m, acc->dtype, 0.0, l), l)};
        res = pipe_loop(R, &Pp, pre, 1, ir_seq(R->m, step, 3, l));
    }
    if (tile_log_enabled(TILE_LOG_INFO))
        tile_log(TILE_LOG_INFO, "rowfuse: kernel at %s:%d scales rows by a row sum (%lldx%lld blocks, RMSNorm-like) -> rows of %s over the pool: %s",
                 opt_loc_file(ks->loc), ks->loc.line, (long long)bM, (long long)N, X->name,
                 piped ? "pipelined (the write of row r - 1 in the loop of row r's sum)"
                 : pipe_worth(Pp.M) && !getenv("TILE_ROWFUSE_PIPE") ? "one sum pass, one write pass (the default; TILE_ROWFUSE_PIPE=1 pipelines it)"
                                                                   : "one sum pass, one write pass");
    return res;
}

/* ---------- the walk ---------- */

static ir_stmt *rewrite(rf *R, ir_stmt *s) {
    if (!s) return s;
    switch (s->kind) {
    case IR_S_SEQ: case IR_S_IF: case IR_S_WHILE:
        for (int i = 0; i < s->nbody; i++) s->body[i] = rewrite(R, s->body[i]);
        return s;
    case IR_S_FOR:
        if (R->f->form == IR_FORM_PLAIN && s->loop_kind == IR_LOOP_PARALLEL && s->par_group_depth == 1) {
            const char *why = NULL;
            if (nstmts(s->body[0]) == 5) {
                /* The plain-form softmax already computes exp once and reads X once (three
                 * passes over a row that stays in cache): the rewrite saves a third of the
                 * traffic. It was opt-in while it measured slower (session 3,
                 * bench/results/cpu-rows-2026-11-29-s3.md); since the row helpers of session 4
                 * it is faster on both machines measured (2-core VM, 2 threads: 0.49-0.54 of
                 * memcpy against 0.37-0.40 as written, cpu-rows-2026-11-30-s4.md; 16-core Xeon:
                 * 1.22-1.51 against 0.88-1.09 at 16 threads, 0.78-0.96 against 0.60-0.63 at
                 * one, cpu-rows-2026-11-30-s4-16core.md), so it is on; TILE_ROWFUSE_PLAIN=0
                 * leaves the loop as written. */
                const char *on = getenv("TILE_ROWFUSE_PLAIN");
                if (on && !strcmp(on, "0")) {
                    if (tile_log_enabled(TILE_LOG_DEBUG))
                        tile_log(TILE_LOG_DEBUG, "rowfuse: plain-form loop %s at %s:%d left alone (TILE_ROWFUSE_PLAIN=0)",
                                 s->var->name, opt_loc_file(s->loc), s->loc.line);
                    return s;
                }
                ir_stmt *r = match_plain(R, s, &why);
                if (r) return r;
                if (tile_log_enabled(TILE_LOG_DEBUG))
                    tile_log(TILE_LOG_DEBUG, "rowfuse: loop %s at %s:%d left alone: %s", s->var->name, opt_loc_file(s->loc), s->loc.line, why ? why : "?");
            }
            return s;
        }
        for (int i = 0; i < s->nbody; i++) s->body[i] = rewrite(R, s->body[i]);
        return s;
    case IR_S_KERNEL: {
        const char *w1 = NULL, *w2 = NULL;
        ir_stmt *r = match_tile_softmax(R, s, &w1);
        if (!r) r = match_tile_rowscale(R, s, &w2);
        if (r) return r;
        if (tile_log_enabled(TILE_LOG_DEBUG))
            tile_log(TILE_LOG_DEBUG, "rowfuse: kernel at %s:%d left alone: not an online softmax (%s); not a row scaling (%s)", opt_loc_file(s->loc), s->loc.line,
                     w1 ? w1 : "?", w2 ? w2 : "?");
        return s;
    }
    default: return s;
    }
}

static int run_rowfuse(ir_module *m, ir_func *f, tile_diags *d) {
    (void)d;
    /* getenv, not the cached tile_env: bench/cpu/e2e.c switches it between kernels */
    const char *off = getenv("TILE_NO_ROWFUSE");
    if (!f->body || (off && *off && strcmp(off, "0"))) return 0;
    rf R = {m, f};
    f->body = rewrite(&R, f->body);
    return 0;
}

const opt_pass opt_pass_rowfuse = {
    "rowfuse",
    "row softmax / row scaling by a sum (RMSNorm) -> rows over the pool, one read pass (online max and sum) and one write pass",
    run_rowfuse,
};
