/* rowfuse.c — the `rowfuse` pass (cpu pipeline): row kernels become a parallel loop over rows
 * with one read pass per level of row reductions plus one write pass.
 *
 * Two kinds of program are taken:
 *
 *   (S1) plain-form softmax: a PARALLEL row loop (autoschedule proved its iterations
 *        independent and its locals private) whose body is exactly
 *            m = X[i, 0]
 *            for j in (1, H): m = max(m, X[i, j])
 *            s = 0
 *            for j in (0, H): e = exp(X[i, j] - m); Y[i, j] = e; s = s + e
 *            for j in (0, H): Y[i, j] = G(Y[i, j], s)        (f32 X, Y, m, s, e)
 *   (T)  any tile-form row kernel: a kernel over a 1-D grid of blocks of rows whose
 *        statements all act row by row (copies of row blocks, T.Parallel nests, reductions
 *        along the row, serial loops over column tiles carrying max / min / sum or online-
 *        softmax recurrences). It is executed symbolically for one row ("row programs",
 *        below): the result does not depend on the block size, the column tile, the thread
 *        count or how the source arranged its statements. What cannot be analysed is left
 *        alone with the reason at TILE_LOG=info (`rowfuse: FUNC at FILE:LINE: declined: ...`).
 *
 * The result (outside any kernel, in the same function), for a softmax:
 *
 *     for i in parallel(rows):                        # rows over the thread pool
 *       m = -inf (T) / X[i, 0] (S1); s = 0
 *       for c in serial(0, ceil(H / 2048)):           # one read pass, chunks stay in L1
 *         cm = m; for j in chunk: cm = max(cm, x(j))
 *         s = select(cm == m, s, s * exp(m - cm)); m = cm
 *         sh = select(m == -inf, 0, m)               # exp(-inf - -inf) would be NaN
 *         cs = 0; for j in chunk: cs = cs + exp(x(j) - sh)
 *         s = s + cs
 *       rinv = 1 / s                                  # when G is `a / s`: a * rinv
 *       for j in vectorized(0, H): Y[i, j] = G(exp(x(j) - m), s)      # write pass
 *
 * with x(j) any element-wise function of the row's tensors (X[i, j] in the examples; a
 * scaled input, a residual tensor added...). When G is exp(x - m) times a per-row value (the
 * softmax itself), the one-exp form: the read pass also keeps e in a row buffer E (and each
 * chunk's max in F), the write pass is
 *       for c: g = exp(F[c] - m) * (1 / s); for j in vectorized(chunk): Y[i, j] = E[j] * g
 * (pipelined over blocks of rows, below). A sum (RMSNorm) is `acc = 0; for j: acc = acc +
 * P(x(j)); for j: Y[i, j] = R(x(j), Q(acc), W[j])`; several levels of reductions (a mean,
 * then a variance around it) are one pass each. The cpu code generator runs the softmax's
 * chunk loops as the prelude's hand-vectorised tile_row_maxf / tile_row_expsumf (c.c
 * grow_read, when x(j) is a plain f32 element), sums as `omp simd` reductions, and the write
 * loop with streaming stores; the row (at most 256 KiB for 64K f32) is re-read from L2, so X
 * is read from memory once and Y written once.
 *
 * Same meaning, up to rounding: the max is exact; the sum of exponentials is the same
 * mathematical value (the chunk rescale exp(m - cm) * exp(x - m) = exp(x - cm)), summed in
 * another order and rounded differently (a few ulp, inside the f32 tolerance; docs/tileopt.md).
 * Sums of a plain sum reduction keep the interpreter's order (bit-identical under it). Rows
 * past the tensor (the tile form's clipped last block) and masked columns are simply not
 * visited: their loads were zeros or -inf and their stores were dropped. One deliberate
 * difference: a row whose first tile is all -inf made the kernel's rescale exp(-inf - -inf) =
 * NaN; the select above skips the rescale when the max did not change and the shift `sh`
 * avoids -inf - -inf, so such a row gets the softmax of its finite elements (documented).
 * The plain form's source has no such case: its results keep their kind (NaN rows stay NaN,
 * -inf runs give 0). The write pass multiplies by 1 / s where the source divided by s (one
 * more rounding). TILE_NO_ROWFUSE=1 turns the pass off (for comparisons). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "opt.h"

#define ROW_CHUNK 2048 /* elements of one chunk of the read pass (8 KiB of f32: stays in L1) */

typedef struct rf {
    ir_module *m;
    ir_func *f;
    /* the read pass's x(j) is not a plain f32 element of a tensor (a scaled input, a sum of
     * tensors): each chunk of it is computed once into a chunk buffer the row helpers read */
    bool mat_x;
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


static bool whole_frag(const ir_region *r, const ir_buffer *b) {
    if (r->buf != b) return false;
    for (int d = 0; d < b->rank; d++) {
        int64_t n;
        if (!const_is(r->start[d], 0) || !ir_const_int_value(b->shape[d], &n) || !const_is(r->extent[d], n)) return false;
    }
    return true;
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
                             ir_expr *slot, const ride *rd, ir_buffer *U, tile_loc l);
static ir_stmt *alloc_chunk(rf *R, ir_buffer **out, tile_loc l);
static ir_stmt *online_pass(rf *R, ir_var *m, ir_var *s, ir_expr *H, xval_fn xv, void *ctx, ir_var *sumvar, ir_buffer *E, ir_buffer *F,
                            tile_loc l) {
    ir_var *c = newvar(R, "rf_c", IR_VAR_LOOP, TILE_DT_I32, l);
    ir_expr *nchunks = ir_binary(R->m, IR_B_FLOORDIV, ir_binary(R->m, IR_B_ADD, H, I32(R, ROW_CHUNK - 1, l), l), I32(R, ROW_CHUNK, l), l);
    ir_buffer *U = NULL;
    ir_stmt *au = R->mat_x ? alloc_chunk(R, &U, l) : NULL;
    ir_stmt *lp = loop(R, c, I32(R, 0, l), nchunks, IR_LOOP_SERIAL, online_chunk(R, c, m, s, H, xv, ctx, sumvar, E, F, NULL, NULL, U, l), l);
    if (!au) return lp;
    ir_stmt *two[2] = {au, lp};
    return ir_seq(R->m, two, 2, l);
}
/* one chunk c of the online pass (slot: which of the two rows of E and F, or NULL) */
/* x(j) read from the chunk buffer U: U[j - start] */
typedef struct chunkx { ir_buffer *U; ir_expr *start; } chunkx;
static ir_expr *chunk_x(rf *R, void *ctx, ir_var *col, tile_loc l) {
    chunkx *cx = ctx;
    ir_expr *i = ir_binary(R->m, IR_B_SUB, V(R, col, l), cx->start, l);
    return ir_load(R->m, cx->U, &i, l);
}
static ir_stmt *online_chunk(rf *R, ir_var *c, ir_var *m, ir_var *s, ir_expr *H, xval_fn xv, void *ctx, ir_var *sumvar, ir_buffer *E, ir_buffer *F,
                             ir_expr *slot, const ride *rd, ir_buffer *U, tile_loc l) {
    if (U) {
        /* U[j - start] = x(j) over the chunk, then the chunk's loops read U */
        ir_var *j0 = newvar(R, "rf_j", IR_VAR_LOOP, TILE_DT_I32, l);
        ir_expr *C = I32(R, ROW_CHUNK, l);
        ir_expr *start = ir_binary(R->m, IR_B_MUL, V(R, c, l), C, l);
        ir_expr *ext = ir_binary(R->m, IR_B_MIN, ir_binary(R->m, IR_B_SUB, H, start, l), C, l);
        chunkx *cx = TILE_NEW(&R->m->arena, chunkx);
        cx->U = U;
        cx->start = start;
        ir_stmt *us = ir_stmt_new(R->m, IR_S_STORE, l);
        us->buf = U;
        us->idx = TILE_NEW_ARRAY(&R->m->arena, ir_expr *, 1);
        us->idx[0] = ir_binary(R->m, IR_B_SUB, V(R, j0, l), start, l);
        us->value = xv(R, ctx, j0, l);
        ir_stmt *two[2] = {loop(R, j0, start, ext, IR_LOOP_VECTORIZED, us, l), online_chunk(R, c, m, s, H, chunk_x, cx, sumvar, E, F, slot, rd, NULL, l)};
        return ir_seq(R->m, two, 2, l);
    }
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

/* the chunk buffer of a computed x(j) (rf.mat_x) */
static ir_stmt *alloc_chunk(rf *R, ir_buffer **out, tile_loc l) {
    ir_expr **shape = TILE_NEW_ARRAY(&R->m->arena, ir_expr *, 1);
    shape[0] = I32(R, ROW_CHUNK, l);
    *out = ir_buffer_new(R->m, R->f, "rf_x", TILE_DT_F32, IR_SCOPE_GLOBAL, 1, shape, IR_BUF_TEMP, l);
    ir_stmt *a = ir_stmt_new(R->m, IR_S_ALLOC, l);
    a->buf = *out;
    return a;
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
/* The row factor g of the one-exp form's write pass, Y = exp(x - m) * g, for the row `row`
 * whose max and sum are in m and s: a template of the kernel (ctx) or, gf NULL, 1 / s (Y =
 * exp(x - m) / s). */
typedef ir_expr *(*gfac_fn)(rf *R, void *ctx, ir_var *m, ir_var *s, ir_expr *row, tile_loc l);
static ir_expr *row_factor(rf *R, gfac_fn gf, void *gctx, ir_var *m, ir_var *s, ir_expr *row, tile_loc l) {
    if (gf) return gf(R, gctx, m, s, row, l);
    return ir_binary(R->m, IR_B_DIV, ir_const_float(R->m, TILE_DT_F32, 1.0, l), V(R, s, l), l);
}
static ir_stmt *scaled_write(rf *R, ir_buffer *E, ir_buffer *F, ir_var *m, ir_var *s, ir_expr *H, ir_buffer *Y, ir_var *row, gfac_fn gf, void *gctx,
                             tile_loc l) {
    ir_var *c = newvar(R, "rf_c", IR_VAR_LOOP, TILE_DT_I32, l);
    ir_var *ri = newvar(R, "rf_rinv", IR_VAR_LOCAL, TILE_DT_F32, l);
    ir_stmt *two[2] = {assign(R, ri, row_factor(R, gf, gctx, m, s, V(R, row, l), l), l),
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
static bool pipe_on_for(const rf *R, bool rmsnorm) {
    const char *e = tb_opt_str(R->f->opts, TB_OPT_rowfuse_pipe); /* auto, 0 or 1 */
    if (e && !strcmp(e, "0")) return false;
    if (e && !strcmp(e, "1")) return true;
    return !rmsnorm;
}
static bool pipe_auto(const rf *R) {
    const char *e = tb_opt_str(R->f->opts, TB_OPT_rowfuse_pipe);
    return !e || !strcmp(e, "auto");
}
static bool pipe_on(const rf *R) { return pipe_on_for(R, false); }
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
static ir_stmt *softmax_pipe(rf *R, pipe *Pp, ir_expr *H, xval_fn xv, void *ctx, ir_expr *m0, ir_var *m, ir_var *s, ir_var *ev, ir_buffer *Y,
                             gfac_fn gf, void *gctx, tile_loc l) {
    pipe P = *Pp;
    ir_buffer *E, *F;
    if (!pipe_on(R) || !pipe_worth(P.M)) { /* the one-exp form one row after the other */
        ir_stmt *b1[6] = {alloc_row(R, &E, "rf_exp", H, l), alloc_row(R, &F, "rf_cmaxs", nchunks_of(R, H, l), l), assign(R, m, m0, l),
                          assign(R, s, ir_const_float(R->m, TILE_DT_F32, 0.0, l), l), online_pass(R, m, s, H, xv, ctx, ev, E, F, l),
                          scaled_write(R, E, F, m, s, H, Y, P.r, gf, gctx, l)};
        if (Y->dtype == TILE_DT_F32) E->align_to = Y;
        return loop(R, P.r, I32(R, 0, l), P.M, IR_LOOP_PARALLEL, ir_seq(R->m, b1, 6, l), l);
    }
    ir_var *pm = newvar(R, "rf_pmax", IR_VAR_LOCAL, TILE_DT_F32, l), *ps = newvar(R, "rf_psum", IR_VAR_LOCAL, TILE_DT_F32, l);
    ir_var *ri = newvar(R, "rf_rinv", IR_VAR_LOCAL, TILE_DT_F32, l), *c = newvar(R, "rf_c", IR_VAR_LOOP, TILE_DT_I32, l);
    ir_buffer *U = NULL;
    ir_stmt *pre[5] = {alloc_rows2(R, &E, "rf_exp", H, l), alloc_rows2(R, &F, "rf_cmaxs", nchunks_of(R, H, l), l),
                       assign(R, pm, ir_const_float(R->m, TILE_DT_F32, 0.0, l), l), assign(R, ps, ir_const_float(R->m, TILE_DT_F32, 1.0, l), l),
                       R->mat_x ? alloc_chunk(R, &U, l) : NULL};
    if (Y->dtype == TILE_DT_F32) E->align_to = Y; /* the kept exponentials at Y's vector alignment (ir.h) */
    ir_expr *rslot = ir_binary(R->m, IR_B_FLOORMOD, V(R, P.r, l), I32(R, 2, l), l);
    ir_expr *wslot = ir_binary(R->m, IR_B_FLOORMOD, row_at(R, P.r, -1, l), I32(R, 2, l), l);
    ir_stmt *cb[2] = {iff(R, pipe_writes(R, &P), scaled_chunk(R, c, E, F, wslot, pm, ri, H, Y, row_at(R, P.r, -1, l), l), l),
                      iff(R, pipe_reads(R, &P), online_chunk(R, c, m, s, H, xv, ctx, ev, E, F, rslot, NULL, U, l), l)};
    /* both (every step of a block but its first and last): the write of row r - 1 rides along
     * in the loop of row r's exponentials */
    ir_var *g = newvar(R, "rf_scale", IR_VAR_LOCAL, TILE_DT_F32, l);
    ride rd = {Y, E, row_at(R, P.r, -1, l), ir_binary(R->m, IR_B_FLOORMOD, row_at(R, P.r, -1, l), I32(R, 2, l), l), g};
    int nf;
    ir_expr **fi = row_idx(R, rd.wslot, V(R, c, l), &nf);
    ir_stmt *both[2] = {assign(R, g, ir_binary(R->m, IR_B_MUL, fexp(R, ir_binary(R->m, IR_B_SUB, ir_load(R->m, F, fi, l), V(R, pm, l), l), l), V(R, ri, l), l), l),
                        online_chunk(R, c, m, s, H, xv, ctx, ev, E, F, ir_binary(R->m, IR_B_FLOORMOD, V(R, P.r, l), I32(R, 2, l), l), &rd, U, l)};
    ir_stmt *sel = ir_stmt_new(R->m, IR_S_IF, l);
    sel->cond = ir_binary(R->m, IR_B_AND, pipe_writes(R, &P), pipe_reads(R, &P), l);
    sel->body[0] = ir_seq(R->m, both, 2, l);
    sel->body[1] = ir_seq(R->m, cb, 2, l);
    ir_stmt *init[2] = {assign(R, m, m0, l), assign(R, s, ir_const_float(R->m, TILE_DT_F32, 0.0, l), l)};
    ir_stmt *fin[2] = {assign(R, pm, V(R, m, l), l), assign(R, ps, V(R, s, l), l)};
    ir_stmt *step[4] = {iff(R, pipe_writes(R, &P), assign(R, ri, row_factor(R, gf, gctx, pm, ps, row_at(R, P.r, -1, l), l), l), l),
                        iff(R, pipe_reads(R, &P), ir_seq(R->m, init, 2, l), l),
                        loop(R, c, I32(R, 0, l), nchunks_of(R, H, l), IR_LOOP_SERIAL, sel, l),
                        iff(R, pipe_reads(R, &P), ir_seq(R->m, fin, 2, l), l)};
    return pipe_loop(R, &P, pre, U ? 5 : 4, ir_seq(R->m, step, 4, l));
}
/* the log's name of the softmax's form */
static const char *form_name(const rf *R, ir_expr *H, ir_expr *M) {
    int64_t h;
    bool p = pipe_on(R) && pipe_worth(M);
    const char *kept = p ? "pipelined one-exp form (blocks of rows; the write of row r - 1 in the loop of row r's exponentials)"
                         : pipe_on(R) ? "one-exp form, rows one after the other (fewer than 64 rows)" : "one-exp form, rows one after the other (TILE_ROWFUSE_PIPE=0)";
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
        if (!pipe_on(R) || !pipe_worth(P.M)) P.r = i; /* rows one after the other: the source's loop variable */
        plainx pp = {X, P.r, 0};
        ir_expr *x0[2] = {V(R, P.r, l), I32(R, 0, l)};
        ir_stmt *kept = softmax_pipe(R, &P, H32, plain_x, &pp, ir_load(R->m, X, x0, l), m, sv, ev, Y, NULL, NULL, l);
        form = form_name(R, H32, P.M);
        res = by_row_length(R, H32, kept, s, l);
    }
    s->body[0] = ir_seq(R->m, nb, pre ? 5 : 4, l);
    if (tile_log_enabled(TILE_LOG_INFO))
        tile_log(TILE_LOG_INFO, "rowfuse: loop %s at %s:%d is a row softmax (plain form) -> %s (chunks of %d)",
                 i->name, opt_loc_file(s->loc), s->loc.line, form, ROW_CHUNK);
    return res;
}

/* ---------- stores of the write passes ---------- */

/* the value stored into Y: v cast to Y's dtype, except that a sub-32-bit float Y takes the f32
 * value and rounds it once (ir.h): no cast through a rounding conversion first */
static ir_expr *store_value(rf *R, const ir_buffer *Y, ir_expr *v, tile_loc l) {
    bool narrow = tile_dtype_is_float(Y->dtype) && Y->dtype != TILE_DT_F32 && Y->dtype != TILE_DT_F64;
    if (narrow && v->dtype == TILE_DT_F32) return v;
    return ir_cast(R->m, Y->dtype, v, l);
}

static ir_stmt *store2e(rf *R, ir_buffer *Y, ir_expr *row, ir_var *j, ir_expr *v, tile_loc l) {
    ir_stmt *ys = ir_stmt_new(R->m, IR_S_STORE, l);
    ys->buf = Y;
    ys->idx = TILE_NEW_ARRAY(&R->m->arena, ir_expr *, 2);
    ys->idx[0] = row;
    ys->idx[1] = V(R, j, l);
    ys->value = store_value(R, Y, v, l);
    return ys;
}

static bool p_neginf(const ir_expr *e, const void *u) { (void)u; return e && e->kind == IR_E_CONST && tile_dtype_is_float(e->dtype) && e->fval == -INFINITY; }
static bool same_dim(const ir_expr *a, const ir_expr *b) {
    int64_t x, y;
    if (ir_const_int_value(a, &x) && ir_const_int_value(b, &y)) return x == y;
    return ir_expr_equal(a, b);
}

/* ---------- the tile forms: row programs ----------
 * A kernel over a 1-D grid of blocks of bM rows whose every statement acts row by row is
 * executed symbolically, for one row ROWV of the tensors: each fragment gets a value template,
 * an expression of the row ROWV, the column COLV (tile fragments [bM, W] and column vectors
 * [W]) and the row's reductions (row fragments [bM]). A copy of X[bx * bM, c0] into a tile
 * is `select(COLV + c0 < cols(X), X[ROWV, COLV + c0], 0)` (the clipped copy); a T.Parallel
 * nest substitutes its loads; a reduce along dim 1 becomes a row reduction (a local of the
 * row loop, with its operator, operand template and columns); a copy out records an output
 * Y[ROWV, c0 + COLV] = template. A serial loop over column tiles (copies at kn * bN) is
 * executed once with the row values it carries as unknowns; what it leaves must be a max /
 * min / sum over its tiles (`m = op(m, reduce(u))`) or the online softmax's rescaled sum
 * (`s = s * exp(m - m') + sum(exp(u - m'))` with m' the new max of u): then it is that
 * reduction over the row (the sum of exp(u - max u)). The result is a row program: its
 * reductions in order and its outputs, independent of bM, bN, the thread count and how the
 * source split the work. It is emitted as a parallel loop over the rows: one pass per level
 * of reductions (a max and the sum of exp(x - max) in one online pass, in chunks), then a
 * write pass per output; when the program is a softmax (one output exp(u - m) * g with g
 * per row), the one-exp form keeps the exponentials (pipelined, as above); RMSNorm-like
 * programs (one sum, one output) can take the pipelined loop (TILE_ROWFUSE_PIPE=1).
 *
 * Same meaning, up to rounding: a row's sums are summed in another order (codegen
 * reassociates them); the online sum is the same value; divisions by a per-row value become
 * products with its reciprocal. Elements past the tensor's columns are not visited when
 * their contribution is the reduction's identity (a -inf mask for a max, exp(-inf - m) = 0
 * for the online sum: this assumes the running max is finite, the one deliberate difference
 * documented above); otherwise they are, with the values the clipped copies gave (zeros). */

enum { FR_UNKNOWN = 0, FR_TILE, FR_ROW, FR_COL };
enum { RP_MAXFR = 32, RP_MAXRED = 12, RP_MAXOUT = 6, RP_MAXLOC = 48, RP_MAXTRED = 8, RP_MAXRD = 8 };

typedef struct frag {
    ir_buffer *b;
    int kind;           /* FR_TILE [bM, W], FR_ROW [bM], FR_COL [W]; FR_UNKNOWN: 1-D of bM, kind not seen yet */
    int64_t W;
    ir_expr *val;       /* the value template, NULL while undefined */
    const ir_stmt *win; /* a tile written in a column loop: that loop (its value holds for its current tile only) */
} frag;

typedef struct red {
    ir_var *var; /* the row loop's local holding it */
    int op;      /* IR_RED_SUM / MAX / MIN */
    ir_expr *e;  /* the operand: COLV, ROWV, earlier reductions */
    ir_expr *D;  /* over the columns [0, D) (i32) */
} red;

typedef struct rout {
    ir_buffer *Y;
    ir_expr *c0; /* the column of Y at COLV = 0 (i32); NULL: a per-row output Y[ROWV] */
    ir_expr *e;
    ir_expr *D;
} rout;

typedef struct rp {
    rf *R;
    ir_stmt *ks;
    const ir_var *bx;
    int64_t bM;
    ir_var *ROWV, *COLV;
    frag fr[RP_MAXFR];
    int nfr;
    red red[RP_MAXRED];
    int nred;
    rout out[RP_MAXOUT];
    int nout;
    /* tensors read by row (their rows must be the outputs'), tensors written */
    ir_buffer *rowread[RP_MAXRD];
    int nrowread;
    /* the column loop being executed: its variable, tile width, columns covered [0, E * bN) */
    const ir_stmt *win;
    const ir_var *kn;
    int64_t bN;
    ir_expr *wE;
    struct { ir_var *var; int op; ir_expr *e; } tred[RP_MAXTRED];
    int ntred;
    const char *why;
} rp;

/* one iteration of a T.Parallel nest: its row and column variables, the locals it assigned */
typedef struct pctx {
    const ir_var *i, *j;
    struct { const ir_var *v; ir_expr *e; } loc[RP_MAXLOC];
    int nloc;
} pctx;

static bool rp_fail(rp *P, const char *why) {
    if (!P->why) P->why = why;
    return false;
}
#define RPF(P, ...) rp_fail((P), tile_arena_printf(&(P)->R->m->arena, __VA_ARGS__))

static frag *frag_of(rp *P, const ir_buffer *b) {
    for (int i = 0; i < P->nfr; i++)
        if (P->fr[i].b == b) return &P->fr[i];
    return NULL;
}

/* substitution of one variable (new nodes only where something changes) */
static ir_expr *subv(rf *R, ir_expr *e, const ir_var *v, ir_expr *r) {
    if (!e) return e;
    if (e->kind == IR_E_VAR) return e->var == v ? r : e;
    if (!ir_expr_uses_var(e, v)) return e;
    ir_expr *n = TILE_NEW(&R->m->arena, ir_expr);
    *n = *e;
    n->args = TILE_NEW_ARRAY(&R->m->arena, ir_expr *, e->nargs);
    for (int i = 0; i < e->nargs; i++) n->args[i] = subv(R, e->args[i], v, r);
    return n;
}
/* a template instantiated at row `row` (an i32 expression) and column `col` */
static ir_expr *inst(rp *P, ir_expr *e, ir_expr *row, ir_var *col, tile_loc l) {
    ir_expr *x = subv(P->R, e, P->ROWV, row);
    return col ? subv(P->R, x, P->COLV, V(P->R, col, l)) : x;
}

/* e is affine in v with the constant coefficient *c (sub-expressions free of v arbitrary) */
static bool rcoef(const ir_expr *e, const ir_var *v, int64_t *c) {
    if (!e) return false;
    if (!v || !ir_expr_uses_var(e, v)) { *c = 0; return true; }
    switch (e->kind) {
    case IR_E_VAR: *c = 1; return true;
    case IR_E_CAST:
        if (!tile_dtype_is_int(e->dtype) || !tile_dtype_is_int(e->args[0]->dtype) || tile_dtype_bits(e->dtype) < 32) return false;
        return rcoef(e->args[0], v, c);
    case IR_E_UNARY:
        if (e->op != IR_U_NEG || !rcoef(e->args[0], v, c)) return false;
        *c = -*c;
        return true;
    case IR_E_BINARY: {
        int64_t a, b, k;
        if (e->op == IR_B_ADD || e->op == IR_B_SUB) {
            if (!rcoef(e->args[0], v, &a) || !rcoef(e->args[1], v, &b)) return false;
            *c = e->op == IR_B_ADD ? a + b : a - b;
            return true;
        }
        if (e->op == IR_B_MUL)
            for (int i = 0; i < 2; i++)
                if (!ir_expr_uses_var(e->args[1 - i], v) && ir_const_int_value(e->args[1 - i], &k) && rcoef(e->args[i], v, &a)) {
                    *c = a * k;
                    return true;
                }
        return false;
    }
    default: return false;
    }
}

static bool uses_any(const ir_expr *e, const ir_var *const *vs, int n) {
    for (int i = 0; i < n; i++)
        if (vs[i] && ir_expr_uses_var(e, vs[i])) return true;
    return false;
}
/* a variable that only has a value inside the kernel (loop index, local, block index) */
static bool kernel_var_(const ir_expr *e, const ir_var *rowv, const ir_var *colv) {
    if (!e) return false;
    if (e->kind == IR_E_VAR && e->var && e->var != rowv && e->var != colv &&
        (e->var->kind == IR_VAR_LOOP || e->var->kind == IR_VAR_LOCAL || e->var->kind == IR_VAR_BLOCK))
        return true;
    for (int i = 0; i < e->nargs; i++)
        if (kernel_var_(e->args[i], rowv, colv)) return true;
    return false;
}
#define kernel_var(e) kernel_var_((e), P->ROWV, P->COLV)
static ir_expr *rv_ref(rp *P, const ir_var *v, tile_dtype dt, tile_loc l) { return ir_cast(P->R->m, dt, V(P->R, (ir_var *)v, l), l); }

/* an integer expression of the kernel's indices i (row in the block), j (column in the
 * tile), bx and kn, as ci * ROWV + cj * COLV + rest (ROWV = bx * bM + i, COLV = kn * bN + j);
 * NULL when it is not of that form */
static ir_expr *tr_int(rp *P, const pctx *X, ir_expr *e) {
    const ir_var *vs[4] = {X ? X->i : NULL, X ? X->j : NULL, P->bx, P->kn};
    if (!uses_any(e, vs, 4)) return e;
    int64_t c[4];
    for (int k = 0; k < 4; k++)
        if (!rcoef(e, vs[k], &c[k])) return NULL;
    if (c[2] != c[0] * P->bM || c[3] != c[1] * P->bN) return NULL;
    ir_expr *rest = e;
    for (int k = 0; k < 4; k++)
        if (vs[k]) rest = subv(P->R, rest, vs[k], ir_const_int(P->R->m, vs[k]->dtype, 0, e->loc));
    ir_expr *r = ir_simplify_int(P->R->m, rest);
    tile_loc l = e->loc;
    if (c[0]) r = ir_binary(P->R->m, IR_B_ADD, r, ir_binary(P->R->m, IR_B_MUL, rv_ref(P, P->ROWV, e->dtype, l), ir_const_int(P->R->m, e->dtype, c[0], l), l), l);
    if (c[1]) r = ir_binary(P->R->m, IR_B_ADD, r, ir_binary(P->R->m, IR_B_MUL, rv_ref(P, P->COLV, e->dtype, l), ir_const_int(P->R->m, e->dtype, c[1], l), l), l);
    return ir_simplify_int(P->R->m, r);
}

static bool written_global(rp *P, const ir_buffer *b) {
    for (int i = 0; i < P->nout; i++)
        if (P->out[i].Y == b) return true;
    return false;
}
static bool tensor_ok(const ir_buffer *b) { return b->scope == IR_SCOPE_GLOBAL && b->role != IR_BUF_TEMP; }

/* a value of the kernel, translated into the row program */
static ir_expr *tr(rp *P, pctx *X, ir_expr *e) {
    if (!e || P->why) return NULL;
    switch (e->kind) {
    case IR_E_CONST: return e;
    case IR_E_VAR: {
        const ir_var *v = e->var;
        if (v->kind == IR_VAR_SIZE || v->kind == IR_VAR_PARAM) return e;
        if (X && v->kind == IR_VAR_LOCAL)
            for (int k = X->nloc - 1; k >= 0; k--)
                if (X->loc[k].v == v) return X->loc[k].e;
        if (tile_dtype_is_int(e->dtype)) {
            ir_expr *t = tr_int(P, X, e);
            if (t) return t;
        }
        RPF(P, "'%s' is used as a value in a way that is not per row and column", v->name);
        return NULL;
    }
    case IR_E_LOAD: {
        frag *F = frag_of(P, e->buf);
        if (F) {
            if (!F->val) { RPF(P, "'%s' is read before it is written (or after the column loop that wrote it)", e->buf->name); return NULL; }
            if (F->win && F->win != P->win) { RPF(P, "'%s' is read after the column loop that wrote it", e->buf->name); return NULL; }
            bool ok = false;
            if (e->nargs == 2 && F->kind == FR_TILE) ok = X && is_var(e->args[0], X->i) && is_var(e->args[1], X->j);
            else if (e->nargs == 1 && X) {
                int want = X->i && is_var(e->args[0], X->i) ? FR_ROW : X->j && is_var(e->args[0], X->j) ? FR_COL : 0;
                if (want && (F->kind == FR_UNKNOWN || F->kind == want)) {
                    F->kind = want;
                    ok = true;
                }
            }
            if (!ok) { RPF(P, "'%s' is read at an index other than its row / column in the T.Parallel nest", e->buf->name); return NULL; }
            return F->val;
        }
        if (!tensor_ok(e->buf)) { RPF(P, "'%s' is not a tensor of the function nor a fragment of the kernel", e->buf->name); return NULL; }
        if (written_global(P, e->buf)) { RPF(P, "'%s' is both read and written", e->buf->name); return NULL; }
        ir_expr **idx = TILE_NEW_ARRAY(&P->R->m->arena, ir_expr *, e->nargs);
        for (int k = 0; k < e->nargs; k++) {
            idx[k] = tr_int(P, X, e->args[k]);
            if (!idx[k] || kernel_var(idx[k])) { RPF(P, "an index of '%s' is not affine in the row and the column", e->buf->name); return NULL; }
        }
        return ir_load(P->R->m, e->buf, idx, e->loc);
    }
    default: break;
    }
    if (tile_dtype_is_int(e->dtype) && e->kind == IR_E_BINARY) {
        ir_expr *t = tr_int(P, X, e);
        if (t && !kernel_var(t)) return t;
    }
    if (e->kind == IR_E_BINARY && ir_binop_is_compare((ir_binop)e->op) && tile_dtype_is_int(e->args[0]->dtype) && e->args[0]->dtype == e->args[1]->dtype) {
        /* a comparison of indices, e.g. the mask `j < N - kn * bN`: as `COLV < N` */
        ir_expr *a = tr_int(P, X, e->args[0]), *b = tr_int(P, X, e->args[1]);
        if (!(a && b && !kernel_var(a) && !kernel_var(b))) {
            ir_expr *d = tr_int(P, X, ir_binary(P->R->m, IR_B_SUB, e->args[0], e->args[1], e->loc));
            int64_t k;
            if (d && !kernel_var(d)) {
                const ir_var *pv = ir_expr_uses_var(d, P->COLV) ? P->COLV : P->ROWV;
                if (rcoef(d, pv, &k) && (k == 1 || k == -1)) {
                    ir_expr *v = rv_ref(P, pv, d->dtype, e->loc);
                    ir_expr *rest = ir_simplify_int(P->R->m, ir_binary(P->R->m, IR_B_SUB, d, k == 1 ? v : ir_unary(P->R->m, IR_U_NEG, v, e->loc), e->loc));
                    /* k*v + rest OP 0 */
                    if (k == 1) return ir_binary(P->R->m, (ir_binop)e->op, v, ir_simplify_int(P->R->m, ir_unary(P->R->m, IR_U_NEG, rest, e->loc)), e->loc);
                    return ir_binary(P->R->m, (ir_binop)e->op, rest, v, e->loc);
                }
            }
        }
    }
    ir_expr *c = TILE_NEW(&P->R->m->arena, ir_expr);
    *c = *e;
    if (e->nargs) {
        c->args = TILE_NEW_ARRAY(&P->R->m->arena, ir_expr *, e->nargs);
        for (int k = 0; k < e->nargs; k++)
            if (!(c->args[k] = tr(P, X, e->args[k]))) return NULL;
    }
    return c;
}

static bool f32_frag_ok(rp *P, const ir_buffer *b) {
    if (b->dtype != TILE_DT_F32) return RPF(P, "fragment '%s' is %s (a store would round)", b->name, tile_dtype_name(b->dtype));
    return true;
}

static ir_expr *F0(rp *P, double v, tile_loc l) { return ir_const_float(P->R->m, TILE_DT_F32, v, l); }

/* ROWV / COLV + c with c a constant: *c */
static bool col_plus(rp *P, const ir_expr *e, const ir_var *v, int64_t *c) {
    int64_t k;
    if (!rcoef(e, v, &k) || k != 1) return false;
    return ir_const_int_value(subv(P->R, (ir_expr *)e, v, ir_const_int(P->R->m, v->dtype, 0, e->loc)), c);
}

/* a region's start along the rows is bx * bM, along the columns c0 (+ kn * bN in a column
 * loop): *c0, *win */
static bool rows_start(rp *P, const ir_expr *e) {
    int64_t c;
    if (!rcoef(e, P->bx, &c) || c != P->bM) return false;
    ir_expr *rest = ir_simplify_int(P->R->m, subv(P->R, (ir_expr *)e, P->bx, ir_const_int(P->R->m, P->bx->dtype, 0, e->loc)));
    int64_t z;
    return ir_const_int_value(rest, &z) && z == 0;
}
static bool cols_start(rp *P, const ir_expr *e, int64_t w, ir_expr **c0, bool *windowed) {
    int64_t c = 0;
    *windowed = false;
    if (P->kn && ir_expr_uses_var(e, P->kn)) {
        if (!rcoef(e, P->kn, &c) || c != P->bN || w != P->bN) return false;
        *windowed = true;
    }
    ir_expr *rest = P->kn ? subv(P->R, (ir_expr *)e, P->kn, ir_const_int(P->R->m, P->kn->dtype, 0, e->loc)) : (ir_expr *)e;
    rest = ir_simplify_int(P->R->m, rest);
    if (kernel_var(rest)) return false;
    *c0 = as_i32(P->R, rest);
    return true;
}

static bool note_rowread(rp *P, ir_buffer *b) {
    for (int i = 0; i < P->nrowread; i++)
        if (P->rowread[i] == b) return true;
    if (P->nrowread == RP_MAXRD) return rp_fail(P, "too many tensors");
    P->rowread[P->nrowread++] = b;
    return true;
}

/* columns a tile covers: W, or in a column loop E * bN */
static ir_expr *span(rp *P, int64_t W, bool windowed, tile_loc l) {
    if (!windowed) return I32(P->R, W, l);
    int64_t e;
    if (ir_const_int_value(P->wE, &e)) return I32(P->R, e * P->bN, l);
    return ir_binary(P->R->m, IR_B_MUL, as_i32(P->R, P->wE), I32(P->R, P->bN, l), l);
}
static const ir_expr *uncast(const ir_expr *e) {
    while (e && e->kind == IR_E_CAST && e->nargs == 1) e = e->args[0];
    return e;
}
/* a = E * k with E = ceil(b / k) (tiles covering b): then min(a, b) is b */
static bool tiles_cover(const ir_expr *a, const ir_expr *b) {
    a = uncast(a);
    int64_t k;
    if (!binop(a, IR_B_MUL) || !ir_const_int_value(a->args[1], &k)) return false;
    return covers(uncast(a->args[0]), k, uncast(b));
}
static ir_expr *imin(rp *P, ir_expr *a, ir_expr *b, tile_loc l) {
    int64_t x, y;
    if (ir_const_int_value(a, &x) && ir_const_int_value(b, &y)) return I32(P->R, x < y ? x : y, l);
    if (ir_expr_equal(uncast(a), uncast(b))) return a;
    if (tiles_cover(a, b)) return b;
    if (tiles_cover(b, a)) return a;
    return ir_binary(P->R->m, IR_B_MIN, a, b, l);
}

/* the column COLV + c0 */
static ir_expr *col_at(rp *P, ir_expr *c0, tile_loc l) {
    int64_t c;
    if (ir_const_int_value(c0, &c) && c == 0) return V(P->R, P->COLV, l);
    return ir_simplify_int(P->R->m, ir_binary(P->R->m, IR_B_ADD, V(P->R, P->COLV, l), c0, l));
}

static bool rp_copy(rp *P, ir_stmt *s) {
    const ir_region *src = &s->regions[0], *dst = &s->regions[1];
    frag *Fs = frag_of(P, src->buf), *Fd = frag_of(P, dst->buf);
    tile_loc l = s->loc;
    if (Fs && Fd) { /* fragment to fragment: the whole value */
        if (!whole_frag(src, src->buf) || !whole_frag(dst, dst->buf) || !same_shape(src->buf, dst->buf)) return rp_fail(P, "a copy between fragments of different shapes");
        if (!Fs->val) return RPF(P, "'%s' is copied before it is written", src->buf->name);
        if (Fs->kind != FR_UNKNOWN && Fd->kind != FR_UNKNOWN && Fs->kind != Fd->kind) return rp_fail(P, "a copy between a row and a column fragment");
        if (Fd->kind == FR_UNKNOWN) Fd->kind = Fs->kind;
        Fd->val = Fs->val;
        Fd->win = Fs->win;
        return true;
    }
    if (Fd) { /* a tensor into a fragment */
        ir_buffer *X = src->buf;
        if (!tensor_ok(X)) return RPF(P, "'%s' is copied from '%s', which is neither a tensor nor a fragment", dst->buf->name, X->name);
        if (written_global(P, X)) return RPF(P, "'%s' is both read and written", X->name);
        if (!whole_frag(dst, dst->buf) || !f32_frag_ok(P, dst->buf)) return P->why ? false : rp_fail(P, "a copy into part of a fragment");
        int64_t e0, e1;
        ir_expr *c0;
        bool win;
        if (Fd->kind == FR_TILE) {
            if (X->rank != 2 || !ir_const_int_value(src->extent[0], &e0) || e0 != P->bM || !ir_const_int_value(src->extent[1], &e1) || e1 != Fd->W)
                return RPF(P, "the copy into '%s' is not a block of rows of a 2-D tensor", dst->buf->name);
            if (!rows_start(P, src->start[0])) return RPF(P, "the copy into '%s' does not start at the block's first row", dst->buf->name);
            if (!cols_start(P, src->start[1], Fd->W, &c0, &win)) return RPF(P, "the copy into '%s' does not start at a fixed column or the column tile", dst->buf->name);
            if (!note_rowread(P, X)) return false;
            ir_expr *col = col_at(P, c0, l);
            ir_expr *idx[2] = {V(P->R, P->ROWV, l), col};
            ir_expr *ld = ir_cast(P->R->m, TILE_DT_F32, ir_load(P->R->m, X, idx, l), l);
            Fd->val = ir_select(P->R->m, ir_binary(P->R->m, IR_B_LT, col, as_i32(P->R, X->shape[1]), l), ld, F0(P, 0.0, l), l);
            Fd->win = win ? P->win : NULL;
            return true;
        }
        /* 1-D: a column vector (a weight) or a per-row vector */
        if (X->rank != 1 || !ir_const_int_value(src->extent[0], &e0) || e0 != Fd->W) return RPF(P, "the copy into '%s' is not a run of a 1-D tensor", dst->buf->name);
        if (Fd->kind != FR_COL && rows_start(P, src->start[0])) {
            Fd->kind = FR_ROW;
            if (!note_rowread(P, X)) return false;
            ir_expr *idx[1] = {V(P->R, P->ROWV, l)};
            Fd->val = ir_cast(P->R->m, TILE_DT_F32, ir_load(P->R->m, X, idx, l), l);
            return true;
        }
        if (Fd->kind == FR_ROW || !cols_start(P, src->start[0], Fd->W, &c0, &win)) return RPF(P, "the copy into '%s' does not start at a fixed column", dst->buf->name);
        Fd->kind = FR_COL;
        ir_expr *col = col_at(P, c0, l);
        ir_expr *idx[1] = {col};
        Fd->val = ir_select(P->R->m, ir_binary(P->R->m, IR_B_LT, col, as_i32(P->R, X->shape[0]), l), ir_cast(P->R->m, TILE_DT_F32, ir_load(P->R->m, X, idx, l), l),
                            F0(P, 0.0, l), l);
        Fd->win = win ? P->win : NULL;
        return true;
    }
    if (Fs) { /* a fragment out to a tensor */
        ir_buffer *Y = dst->buf;
        if (!tensor_ok(Y)) return RPF(P, "'%s' is copied into '%s', which is not a tensor", src->buf->name, Y->name);
        if (!Fs->val) return RPF(P, "'%s' is copied out before it is written", src->buf->name);
        if (!whole_frag(src, src->buf)) return rp_fail(P, "a copy of part of a fragment");
        for (int i = 0; i < P->nrowread; i++)
            if (P->rowread[i] == Y) return RPF(P, "'%s' is both read and written", Y->name);
        if (P->nout == RP_MAXOUT) return rp_fail(P, "too many outputs");
        rout *o = &P->out[P->nout];
        int64_t e0, e1;
        ir_expr *c0;
        bool win;
        if (Fs->kind == FR_TILE) {
            if (Y->rank != 2 || !ir_const_int_value(dst->extent[0], &e0) || e0 != P->bM || !ir_const_int_value(dst->extent[1], &e1) || e1 != Fs->W)
                return RPF(P, "the copy out of '%s' is not a block of rows of a 2-D tensor", src->buf->name);
            if (!rows_start(P, dst->start[0])) return RPF(P, "the copy out of '%s' does not start at the block's first row", src->buf->name);
            if (!cols_start(P, dst->start[1], Fs->W, &c0, &win)) return RPF(P, "the copy out of '%s' does not start at a fixed column or the column tile", src->buf->name);
            if (win != (Fs->win != NULL)) return RPF(P, "the copy out of '%s' does not follow the column tile it holds", src->buf->name);
            o->Y = Y;
            o->c0 = c0;
            o->e = Fs->val;
            /* the columns written: the tile's span, clipped to Y */
            o->D = imin(P, span(P, Fs->W, win, l), ir_simplify_int(P->R->m, ir_binary(P->R->m, IR_B_SUB, as_i32(P->R, Y->shape[1]), c0, l)), l);
        } else if (Fs->kind == FR_ROW) {
            if (Y->rank != 1 || !ir_const_int_value(dst->extent[0], &e0) || e0 != P->bM || !rows_start(P, dst->start[0]))
                return RPF(P, "the copy out of the row values '%s' is not a block of a 1-D tensor", src->buf->name);
            o->Y = Y;
            o->c0 = NULL;
            o->e = Fs->val;
            o->D = NULL;
        } else {
            return RPF(P, "a column vector '%s' is copied out", src->buf->name);
        }
        P->nout++;
        return true;
    }
    return rp_fail(P, "a copy between tensors");
}

static ir_var *new_red(rp *P, int op, ir_expr *e, ir_expr *D, tile_loc l) {
    if (P->nred == RP_MAXRED) { rp_fail(P, "too many reductions"); return NULL; }
    red *r = &P->red[P->nred++];
    r->var = newvar(P->R, op == IR_RED_SUM ? "rf_sum" : op == IR_RED_MAX ? "rf_max" : "rf_min", IR_VAR_LOCAL, TILE_DT_F32, l);
    r->op = op;
    r->e = e;
    r->D = D;
    return r->var;
}
static ir_expr *combine(rp *P, int op, ir_expr *a, ir_expr *b, tile_loc l) {
    return ir_binary(P->R->m, op == IR_RED_SUM ? IR_B_ADD : op == IR_RED_MAX ? IR_B_MAX : IR_B_MIN, a, b, l);
}

static bool rp_reduce(rp *P, ir_stmt *s) {
    const ir_region *src = &s->regions[0], *dst = &s->regions[1];
    frag *Fs = frag_of(P, src->buf), *Fd = frag_of(P, dst->buf);
    tile_loc l = s->loc;
    if (!Fs || !Fd || Fs->kind != FR_TILE || s->dim != 1 || !whole_frag(src, src->buf) || !whole_frag(dst, dst->buf))
        return rp_fail(P, "a reduce that is not over the columns of a tile fragment into a row fragment");
    if (Fd->kind == FR_COL) return rp_fail(P, "a reduce into a column vector");
    if (dst->buf->rank != 1) return rp_fail(P, "a reduce keeping the reduced dimension");
    Fd->kind = FR_ROW;
    if (!Fs->val) return RPF(P, "'%s' is reduced before it is written", src->buf->name);
    if (!s->clear && !Fd->val) return RPF(P, "'%s' is accumulated into before it is written", dst->buf->name);
    int op = s->reduce_op;
    ir_expr *e = Fs->val;
    if (op == IR_RED_ABSSUM || op == IR_RED_ABSMAX) {
        e = ir_call(P->R->m, IR_I_ABS, TILE_DT_F32, &e, 1, l);
        op = op == IR_RED_ABSSUM ? IR_RED_SUM : IR_RED_MAX;
    }
    ir_var *v;
    if (Fs->win) { /* a reduction over the current column tile */
        if (P->ntred == RP_MAXTRED) return rp_fail(P, "too many reductions in the column loop");
        v = newvar(P->R, "rf_tile_red", IR_VAR_LOCAL, TILE_DT_F32, l);
        P->tred[P->ntred].var = v;
        P->tred[P->ntred].op = op;
        P->tred[P->ntred++].e = e;
    } else {
        v = new_red(P, op, e, I32(P->R, Fs->W, l), l);
        if (!v) return false;
    }
    Fd->val = s->clear ? V(P->R, v, l) : combine(P, op, Fd->val, V(P->R, v, l), l);
    Fd->win = NULL;
    return true;
}

/* a T.Parallel nest: its iterations one at a time (any order gives the same) */
static bool rp_par(rp *P, ir_stmt *s) {
    int depth = s->par_group_depth;
    if (depth != 1 && depth != 2) return rp_fail(P, "a T.Parallel nest of more than two loops");
    const ir_stmt *lp[2] = {s, NULL};
    if (depth == 2) lp[1] = only(s->body[0]);
    for (int d = 0; d < depth; d++)
        if (!lp[d] || lp[d]->kind != IR_S_FOR || !const_is(lp[d]->lo, 0)) return rp_fail(P, "a T.Parallel nest not from 0");
    const ir_stmt *body = lp[depth - 1]->body[0];
    int64_t e0, e1 = 0;
    if (!ir_const_int_value(lp[0]->extent, &e0) || (depth == 2 && !ir_const_int_value(lp[1]->extent, &e1))) return rp_fail(P, "a T.Parallel nest of symbolic extent");
    pctx X = {0};
    int rowkind = 0; /* depth 1: the nest runs over the rows (i) or over the columns (j) */
    if (depth == 2) {
        if (e0 != P->bM) return rp_fail(P, "a 2-D T.Parallel nest whose first loop is not over the block's rows");
        X.i = lp[0]->var;
        X.j = lp[1]->var;
    } else {
        /* decided by what it stores: row fragments, or column vectors */
        ir_stmt *bs[RP_MAXLOC];
        int n = nstmts((ir_stmt *)body);
        for (int k = 0; k < n && k < RP_MAXLOC; k++) {
            bs[k] = nth((ir_stmt *)body, k);
            if (bs[k]->kind == IR_S_STORE) {
                frag *F = frag_of(P, bs[k]->buf);
                if (F && F->kind == FR_COL) rowkind = 2;
                else if (F && (F->kind == FR_ROW || F->kind == FR_TILE || (F->kind == FR_UNKNOWN && e0 == P->bM))) rowkind = rowkind ? rowkind : 1;
            }
        }
        if (!rowkind) return rp_fail(P, "a 1-D T.Parallel nest storing no fragment");
        if (rowkind == 1) {
            if (e0 != P->bM) return rp_fail(P, "a row nest not over the block's rows");
            X.i = lp[0]->var;
        } else {
            X.j = lp[0]->var;
        }
    }
    int n = nstmts((ir_stmt *)body);
    for (int k = 0; k < n; k++) {
        ir_stmt *q = nth((ir_stmt *)body, k);
        if (q->kind == IR_S_ASSIGN) {
            ir_expr *v = tr(P, &X, q->value);
            if (!v) return false;
            if (X.nloc == RP_MAXLOC) return rp_fail(P, "too many locals");
            X.loc[X.nloc].v = q->var;
            X.loc[X.nloc++].e = v;
            continue;
        }
        if (q->kind != IR_S_STORE) return RPF(P, "a T.Parallel nest holding a %s", q->kind == IR_S_IF ? "branch" : q->kind == IR_S_FOR ? "loop" : "statement other than assignments and stores");
        frag *F = frag_of(P, q->buf);
        if (!F) return RPF(P, "a T.Parallel nest stores into the tensor '%s' element by element", q->buf->name);
        if (!f32_frag_ok(P, q->buf)) return false;
        int want;
        if (q->buf->rank == 2 && X.i && !X.j) {
            /* a row nest storing one column of a tile: F[i, c] */
            ir_expr *c = tr_int(P, &X, q->idx[1]);
            if (!is_var(q->idx[0], X.i) || !c || kernel_var(c) || ir_expr_uses_var(c, P->ROWV)) return RPF(P, "a store into '%s' not at the row", q->buf->name);
            if (!F->val) return RPF(P, "a column of '%s' is stored before the rest of it", q->buf->name);
            ir_expr *v = tr(P, &X, q->value);
            if (!v) return false;
            ir_expr *at = ir_binary(P->R->m, IR_B_EQ, V(P->R, P->COLV, q->loc), as_i32(P->R, c), q->loc);
            F->val = ir_select(P->R->m, at, ir_cast(P->R->m, TILE_DT_F32, v, q->loc), F->val, q->loc);
            continue;
        }
        if (q->buf->rank == 2) {
            want = FR_TILE;
            if (!X.i || !X.j || !is_var(q->idx[0], X.i) || !is_var(q->idx[1], X.j) || F->W != e1) return RPF(P, "a store into '%s' not at its row and column", q->buf->name);
        } else if (X.i && !X.j) {
            want = FR_ROW;
            if (!is_var(q->idx[0], X.i)) return RPF(P, "a store into '%s' not at the row", q->buf->name);
        } else if (X.j && !X.i) {
            want = FR_COL;
            if (!is_var(q->idx[0], X.j) || F->W != e0) return RPF(P, "a store into '%s' not at the column", q->buf->name);
        } else {
            return RPF(P, "a 2-D nest stores into the 1-D fragment '%s' (every column writes the same element)", q->buf->name);
        }
        if (F->kind != FR_UNKNOWN && F->kind != want) return RPF(P, "'%s' is used both per row and per column", q->buf->name);
        F->kind = want;
        ir_expr *v = tr(P, &X, q->value);
        if (!v) return false;
        F->val = ir_cast(P->R->m, TILE_DT_F32, v, q->loc);
        F->win = want == FR_TILE || want == FR_COL ? P->win : NULL;
    }
    return true;
}

static bool rp_block(rp *P, ir_stmt *s);

/* ----- the column loop: its carried row values as recurrences ----- */

static bool is_tred(rp *P, const ir_expr *e, int *k) {
    if (!e || e->kind != IR_E_VAR) return false;
    for (int i = 0; i < P->ntred; i++)
        if (P->tred[i].var == e->var) { *k = i; return true; }
    return false;
}
/* e = a op b in either order with pa(a): *other = b */
static bool split2(const ir_expr *e, int op, bool (*pa)(rp *, const ir_expr *, const void *), rp *P, const void *ctx, const ir_expr **other) {
    if (!binop(e, op)) return false;
    if (pa(P, e->args[0], ctx)) { *other = e->args[1]; return true; }
    if (pa(P, e->args[1], ctx)) { *other = e->args[0]; return true; }
    return false;
}
static bool pa_var(rp *P, const ir_expr *e, const void *v) { (void)P; return is_var(e, (const ir_var *)v); }
static bool uses_placeholders(rp *P, const ir_expr *e, ir_var *const *ph, int nph) {
    for (int i = 0; i < nph; i++)
        if (ph[i] && ir_expr_uses_var(e, ph[i])) return true;
    for (int i = 0; i < P->ntred; i++)
        if (ir_expr_uses_var(e, P->tred[i].var)) return true;
    return false;
}

static bool rp_column_loop(rp *P, ir_stmt *L) {
    if (P->win) return rp_fail(P, "nested column loops");
    if (L->loop_kind != IR_LOOP_SERIAL && L->loop_kind != IR_LOOP_PIPELINED && L->loop_kind != IR_LOOP_UNROLLED) return rp_fail(P, "a loop that is not serial");
    if (!const_is(L->lo, 0)) return rp_fail(P, "a column loop not from 0");
    /* the tile width: the extent of the tile fragments copied in at kn * bN */
    int64_t bN = 0;
    {
        int n = nstmts(L->body[0]);
        for (int k = 0; k < n && !bN; k++) {
            ir_stmt *q = nth(L->body[0], k);
            if (q->kind != IR_S_COPY || q->regions[0].buf->rank != 2) continue;
            int64_t c;
            if (rcoef(q->regions[0].start[1], L->var, &c) && c > 0) bN = c;
        }
    }
    if (!bN) return rp_fail(P, "a loop that does not walk the row in column tiles (no copy at kn * bN)");
    P->win = L;
    P->kn = L->var;
    P->bN = bN;
    P->wE = L->extent;
    P->ntred = 0;
    /* the row values before the loop, replaced by unknowns */
    ir_var *ph[RP_MAXFR] = {0};
    ir_expr *init[RP_MAXFR] = {0};
    for (int i = 0; i < P->nfr; i++) {
        frag *F = &P->fr[i];
        if ((F->kind == FR_ROW || F->kind == FR_UNKNOWN) && F->val) {
            init[i] = F->val;
            ph[i] = newvar(P->R, "rf_prev", IR_VAR_LOCAL, TILE_DT_F32, L->loc);
            F->val = V(P->R, ph[i], L->loc);
        }
    }
    int nout0 = P->nout, nred0 = P->nred;
    if (!rp_block(P, L->body[0])) return false;
    /* the values the loop does not change: their unknowns are the values before it */
    for (int i = 0; i < P->nfr; i++) {
        if (!ph[i] || !is_var(P->fr[i].val, ph[i])) continue;
        ir_expr *v0 = init[i];
        for (int k = 0; k < P->nfr; k++) P->fr[k].val = subv(P->R, P->fr[k].val, ph[i], v0);
        for (int k = nout0; k < P->nout; k++) P->out[k].e = subv(P->R, P->out[k].e, ph[i], v0);
        for (int k = nred0; k < P->nred; k++) P->red[k].e = subv(P->R, P->red[k].e, ph[i], v0);
        for (int k = 0; k < P->ntred; k++) P->tred[k].e = subv(P->R, P->tred[k].e, ph[i], v0);
        ph[i] = NULL;
        P->fr[i].val = v0;
    }
    /* outputs written in the loop may only use values final before it */
    for (int i = nout0; i < P->nout; i++)
        if (uses_placeholders(P, P->out[i].e, ph, P->nfr)) return rp_fail(P, "the column loop writes values that depend on its running state");
    /* the carried values */
    ir_expr *fin[RP_MAXFR] = {0};
    int maxof[RP_MAXFR];
    for (int i = 0; i < P->nfr; i++) maxof[i] = -1;
    tile_loc l = L->loc;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < P->nfr; i++) {
            frag *F = &P->fr[i];
            if (!ph[i] || fin[i]) continue;
            if (is_var(F->val, ph[i])) { fin[i] = init[i]; continue; } /* not changed */
            const ir_expr *o;
            int k;
            if (pass == 0) {
                /* m = op(m, reduce(u)) */
                for (int op = IR_B_ADD; op <= IR_B_MAX && !fin[i]; op++) {
                    if (op != IR_B_ADD && op != IR_B_MAX && op != IR_B_MIN) continue;
                    if (!split2(F->val, op, pa_var, P, ph[i], &o) || !is_tred(P, o, &k)) continue;
                    int rop = op == IR_B_ADD ? IR_RED_SUM : op == IR_B_MAX ? IR_RED_MAX : IR_RED_MIN;
                    if (P->tred[k].op != rop || uses_placeholders(P, P->tred[k].e, ph, P->nfr)) continue;
                    ir_var *rv = new_red(P, rop, P->tred[k].e, span(P, bN, true, l), l);
                    if (!rv) return false;
                    bool identity = (rop == IR_RED_SUM && fconst_is(init[i], 0.0)) || (rop == IR_RED_MAX && p_neginf(init[i], NULL)) ||
                                    (rop == IR_RED_MIN && init[i]->kind == IR_E_CONST && init[i]->fval == INFINITY);
                    fin[i] = identity ? V(P->R, rv, l) : combine(P, rop, init[i], V(P->R, rv, l), l);
                    if (rop == IR_RED_MAX && identity) maxof[i] = P->nred - 1;
                }
                continue;
            }
            /* s = s * exp(m - m') + reduce_sum(exp(u - m')), m' the new max of u (pass 0) */
            const ir_expr *sc, *t;
            for (int q = 0; q < P->nfr && !fin[i]; q++) {
                if (maxof[q] < 0) continue;
                frag *Fm = &P->fr[q];
                const ir_expr *NM = Fm->val; /* m' */
                if (!binop(F->val, IR_B_ADD)) break;
                for (int side = 0; side < 2 && !fin[i]; side++) {
                    t = F->val->args[1 - side];
                    sc = F->val->args[side];
                    if (!is_tred(P, t, &k) || P->tred[k].op != IR_RED_SUM) continue;
                    const ir_expr *ex;
                    if (!split2(sc, IR_B_MUL, pa_var, P, ph[i], &ex) || !is_exp(ex) || !binop(ex->args[0], IR_B_SUB) || !is_var(ex->args[0]->args[0], ph[q]) ||
                        !ir_expr_equal(ex->args[0]->args[1], NM))
                        continue;
                    const ir_expr *te = P->tred[k].e;
                    const ir_expr *u = P->red[maxof[q]].e;
                    if (!is_exp(te) || !binop(te->args[0], IR_B_SUB) || !ir_expr_equal(te->args[0]->args[0], u) || !ir_expr_equal(te->args[0]->args[1], NM)) continue;
                    if (!fconst_is(init[i], 0.0)) continue;
                    ir_expr *a = fexp(P->R, ir_binary(P->R->m, IR_B_SUB, (ir_expr *)u, V(P->R, P->red[maxof[q]].var, l), l), l);
                    ir_var *rv = new_red(P, IR_RED_SUM, a, span(P, bN, true, l), l);
                    if (!rv) return false;
                    fin[i] = V(P->R, rv, l);
                }
            }
        }
    /* the values after the loop: the final ones (the max of pass 0 is final too) */
    for (int i = 0; i < P->nfr; i++) {
        frag *F = &P->fr[i];
        if (ph[i]) {
            if (!fin[i]) return RPF(P, "the column loop carries '%s' in a way that is not a max / min / sum over the row or the online softmax's sum", F->b->name);
            F->val = fin[i];
            continue;
        }
        /* written first in the loop: its last tile's value, not kept */
        if (F->val && (F->win == L || (F->kind != FR_COL && uses_placeholders(P, F->val, ph, P->nfr)))) F->val = NULL;
        if (F->win == L) F->win = NULL;
    }
    /* the final max replaces m' everywhere it was used (the sums' operands use the red var) */
    P->win = NULL;
    P->kn = NULL;
    P->bN = 0;
    P->ntred = 0;
    return true;
}

static bool rp_block(rp *P, ir_stmt *s) {
    if (!s || P->why) return !P->why;
    switch (s->kind) {
    case IR_S_SEQ:
        for (int i = 0; i < s->nbody; i++)
            if (!rp_block(P, s->body[i])) return false;
        return true;
    case IR_S_ALLOC: {
        ir_buffer *b = s->buf;
        if (P->nfr == RP_MAXFR) return rp_fail(P, "too many fragments");
        frag *F = &P->fr[P->nfr++];
        memset(F, 0, sizeof *F);
        F->b = b;
        int64_t d0, d1;
        if (b->rank == 2 && ir_const_int_value(b->shape[0], &d0) && d0 == P->bM && ir_const_int_value(b->shape[1], &d1)) F->kind = FR_TILE, F->W = d1;
        else if (b->rank == 1 && ir_const_int_value(b->shape[0], &d0)) F->kind = d0 == P->bM ? FR_UNKNOWN : FR_COL, F->W = d0;
        else return RPF(P, "'%s' is not a [block rows, columns], [block rows] or [columns] fragment", b->name);
        return true;
    }
    case IR_S_FILL: {
        frag *F = frag_of(P, s->regions[0].buf);
        if (!F || !whole_frag(&s->regions[0], s->regions[0].buf)) return rp_fail(P, "a fill of something other than a whole fragment");
        if (!f32_frag_ok(P, F->b)) return false;
        ir_expr *v = tr(P, NULL, s->value);
        if (!v) return false;
        F->val = ir_cast(P->R->m, TILE_DT_F32, v, s->loc);
        F->win = F->kind == FR_TILE ? P->win : NULL;
        return true;
    }
    case IR_S_COPY: return rp_copy(P, s);
    case IR_S_REDUCE: return rp_reduce(P, s);
    case IR_S_FOR:
        if (s->loop_kind == IR_LOOP_PARALLEL) return rp_par(P, s);
        return rp_column_loop(P, s);
    case IR_S_GEMM: return rp_fail(P, "a gemm");
    case IR_S_IF: return rp_fail(P, "a branch in the block");
    default: return RPF(P, "a statement of the kind the row analysis does not take (line %d)", s->loc.line);
    }
}

/* ----- simplification on the columns [0, D) ----- */

/* cond is `COLV + c < B` (or <=, >, >=, B on either side) true for every COLV in [0, D)? */
static bool cond_holds(rp *P, const ir_expr *cond, const ir_expr *D) {
    if (!cond || cond->kind != IR_E_BINARY) return false;
    int op = cond->op;
    const ir_expr *a = cond->args[0], *b = cond->args[1];
    if (op == IR_B_GT || op == IR_B_GE) {
        const ir_expr *t = a;
        a = b;
        b = t;
        op = op == IR_B_GT ? IR_B_LT : IR_B_LE;
    }
    if (op != IR_B_LT && op != IR_B_LE) return false;
    int64_t c, d, bv;
    /* a may be cast */
    while (a->kind == IR_E_CAST) a = a->args[0];
    if (!col_plus(P, a, P->COLV, &c)) return false;
    /* the largest COLV + c is D - 1 + c: need D + c <= B (LT) or D - 1 + c <= B (LE) */
    int64_t slack = op == IR_B_LT ? 0 : 1;
    if (ir_const_int_value(D, &d) && ir_const_int_value(b, &bv)) return d + c - slack <= bv;
    const ir_expr *bb = b;
    while (bb->kind == IR_E_CAST) bb = bb->args[0];
    const ir_expr *dd = D;
    while (dd->kind == IR_E_CAST) dd = dd->args[0];
    if (c - slack <= 0 && ir_expr_equal(dd, bb)) return true;
    /* D = min(x, B) */
    if (c - slack <= 0 && binop(dd, IR_B_MIN) && (ir_expr_equal(dd->args[0], bb) || ir_expr_equal(dd->args[1], bb))) return true;
    return false;
}
static ir_expr *dsimp(rp *P, ir_expr *e, const ir_expr *D) {
    if (!e || !e->nargs) return e;
    if (e->kind == IR_E_SELECT && cond_holds(P, e->args[0], D)) return dsimp(P, e->args[1], D);
    ir_expr *n = NULL;
    for (int i = 0; i < e->nargs; i++) {
        ir_expr *a = dsimp(P, e->args[i], D);
        if (a != e->args[i]) {
            if (!n) {
                n = TILE_NEW(&P->R->m->arena, ir_expr);
                *n = *e;
                n->args = TILE_NEW_ARRAY(&P->R->m->arena, ir_expr *, e->nargs);
                memcpy(n->args, e->args, sizeof(ir_expr *) * (size_t)e->nargs);
            }
            n->args[i] = a;
        }
    }
    return n ? n : e;
}

/* f(select(c, a, b), ...) -> select(c, f(a, ...), f(b, ...)) where c tests the column and
 * the other operands do not, folding what becomes a constant -inf or 0 */
static bool is_colsel(rp *P, const ir_expr *e) { return e && e->kind == IR_E_SELECT && ir_expr_uses_var(e->args[0], P->COLV); }
static ir_expr *fold_neg_inf(rp *P, ir_expr *e) {
    /* exp(-inf) = 0; -inf - x, -inf + x, -inf * c (c > 0) = -inf, x finite (a row's max: the
     * documented assumption) */
    if (is_exp(e) && p_neginf(e->args[0], NULL)) return F0(P, 0.0, e->loc);
    if ((binop(e, IR_B_SUB) || binop(e, IR_B_ADD)) && p_neginf(e->args[0], NULL) && !p_neginf(e->args[1], NULL) && e->args[1]->kind != IR_E_CONST)
        return e->args[0];
    if (binop(e, IR_B_MUL) && p_neginf(e->args[0], NULL) && e->args[1]->kind == IR_E_CONST && e->args[1]->fval > 0) return e->args[0];
    if (binop(e, IR_B_MUL) && p_neginf(e->args[1], NULL) && e->args[0]->kind == IR_E_CONST && e->args[0]->fval > 0) return e->args[1];
    return e;
}
static ir_expr *lift(rp *P, ir_expr *e) {
    if (!e || !e->nargs || e->kind == IR_E_LOAD) return e;
    ir_expr *n = TILE_NEW(&P->R->m->arena, ir_expr);
    *n = *e;
    n->args = TILE_NEW_ARRAY(&P->R->m->arena, ir_expr *, e->nargs);
    int sel = -1, nsel = 0;
    for (int i = 0; i < e->nargs; i++) {
        n->args[i] = lift(P, e->args[i]);
        if (e->kind != IR_E_SELECT && is_colsel(P, n->args[i])) { sel = i; nsel++; }
    }
    if (nsel != 1 || !tile_dtype_is_float(e->dtype)) return n;
    ir_expr *s = n->args[sel];
    ir_expr *a = TILE_NEW(&P->R->m->arena, ir_expr), *b = TILE_NEW(&P->R->m->arena, ir_expr);
    *a = *n;
    *b = *n;
    a->args = TILE_NEW_ARRAY(&P->R->m->arena, ir_expr *, e->nargs);
    b->args = TILE_NEW_ARRAY(&P->R->m->arena, ir_expr *, e->nargs);
    memcpy(a->args, n->args, sizeof(ir_expr *) * (size_t)e->nargs);
    memcpy(b->args, n->args, sizeof(ir_expr *) * (size_t)e->nargs);
    a->args[sel] = s->args[1];
    b->args[sel] = s->args[2];
    return ir_select(P->R->m, s->args[0], fold_neg_inf(P, a), fold_neg_inf(P, b), e->loc);
}
static bool is_identity(int op, const ir_expr *e) {
    if (!e || e->kind != IR_E_CONST || !tile_dtype_is_float(e->dtype)) return false;
    if (op == IR_RED_SUM) return e->fval == 0.0;
    if (op == IR_RED_MAX) return e->fval == -INFINITY;
    return e->fval == INFINITY;
}
/* `COLV < B` with B free of COLV: *B */
static bool col_bound(rp *P, const ir_expr *cond, ir_expr **B) {
    if (!cond || cond->kind != IR_E_BINARY) return false;
    const ir_expr *a = cond->args[0], *b = cond->args[1];
    int op = cond->op;
    if (op == IR_B_GT) { const ir_expr *t = a; a = b; b = t; op = IR_B_LT; }
    if (op != IR_B_LT) return false;
    while (a->kind == IR_E_CAST) a = a->args[0];
    int64_t c;
    if (!col_plus(P, a, P->COLV, &c) || c != 0 || ir_expr_uses_var(b, P->COLV)) return false;
    *B = as_i32(P->R, (ir_expr *)b);
    return true;
}
/* a reduction's operand on [0, D): masks of the ragged tail dropped, the columns narrowed to
 * where they are not the reduction's identity */
static void narrow(rp *P, red *r) {
    for (int it = 0; it < 4; it++) {
        r->e = dsimp(P, lift(P, r->e), r->D);
        ir_expr *B;
        if (r->e->kind != IR_E_SELECT || !is_identity(r->op, r->e->args[2]) || !col_bound(P, r->e->args[0], &B)) return;
        r->D = imin(P, r->D, B, r->e->loc);
        r->e = r->e->args[1];
    }
}

/* ----- emission ----- */

static bool refs_red(rp *P, const ir_expr *e, int upto, int *dep) {
    bool any = false;
    for (int i = 0; i < upto; i++)
        if (ir_expr_uses_var(e, P->red[i].var)) {
            any = true;
            if (dep) *dep = i;
        }
    return any;
}
/* sum i is exp(u - m) with m the max j of the same u over the same columns: the pair */
static int pair_of(rp *P, int i) {
    red *s = &P->red[i];
    if (s->op != IR_RED_SUM || !is_exp(s->e) || !binop(s->e->args[0], IR_B_SUB) || s->e->args[0]->args[1]->kind != IR_E_VAR) return -1;
    for (int j = 0; j < i; j++) {
        red *m = &P->red[j];
        if (m->op == IR_RED_MAX && is_var(s->e->args[0]->args[1], m->var) && ir_expr_equal(s->e->args[0]->args[0], m->e) && ir_expr_equal(s->D, m->D)) return j;
    }
    return -1;
}

/* the x(j) of the online pass: a template at a row */
typedef struct tplx { rp *P; ir_expr *u; ir_expr *row; } tplx;
static ir_expr *tpl_x(rf *R, void *ctx, ir_var *col, tile_loc l) {
    (void)R;
    tplx *t = ctx;
    return inst(t->P, t->u, t->row, col, l);
}
/* the one-exp form's row factor: g with the pair's reductions bound to (m, s) of a row */
typedef struct tplg { rp *P; ir_expr *g; ir_var *mv, *sv; } tplg;
static ir_expr *tpl_g(rf *R, void *ctx, ir_var *m, ir_var *s, ir_expr *row, tile_loc l) {
    tplg *t = ctx;
    ir_expr *e = subv(R, subv(R, t->g, t->mv, V(R, m, l)), t->sv, V(R, s, l));
    return inst(t->P, e, row, NULL, l);
}

/* sub-expressions of e that do not depend on the column (and are worth it) become locals
 * assigned before the loop; a division by such a value becomes a product with its
 * reciprocal (one rounding more, a few ulp) */
static ir_expr *hoist_inv(rp *P, ir_expr *e, ir_stmt **pre, int *npre, int max, tile_loc l) {
    if (!e) return e;
    if (!ir_expr_uses_var(e, P->COLV)) {
        if (e->kind == IR_E_CONST || e->kind == IR_E_VAR || !tile_dtype_is_float(e->dtype) || *npre >= max) return e;
        ir_var *t = newvar(P->R, "rf_t", IR_VAR_LOCAL, e->dtype, l);
        pre[(*npre)++] = assign(P->R, t, e, l);
        return V(P->R, t, l);
    }
    if (e->kind == IR_E_LOAD) return e;
    if (binop(e, IR_B_DIV) && e->dtype == TILE_DT_F32 && !ir_expr_uses_var(e->args[1], P->COLV) && *npre < max) {
        ir_var *t = newvar(P->R, "rf_rinv", IR_VAR_LOCAL, TILE_DT_F32, l);
        pre[(*npre)++] = assign(P->R, t, ir_binary(P->R->m, IR_B_DIV, F0(P, 1.0, l), e->args[1], l), l);
        return ir_binary(P->R->m, IR_B_MUL, hoist_inv(P, e->args[0], pre, npre, max, l), V(P->R, t, l), l);
    }
    ir_expr *n = TILE_NEW(&P->R->m->arena, ir_expr);
    *n = *e;
    if (e->nargs) {
        n->args = TILE_NEW_ARRAY(&P->R->m->arena, ir_expr *, e->nargs);
        for (int i = 0; i < e->nargs; i++) n->args[i] = hoist_inv(P, e->args[i], pre, npre, max, l);
    }
    return n;
}

/* the write pass of output o at row `row` (the loop variable r) */
static ir_stmt *write_out(rp *P, rout *o, ir_expr *row, tile_loc l) {
    if (!o->c0) {
        ir_stmt *st = ir_stmt_new(P->R->m, IR_S_STORE, l);
        st->buf = o->Y;
        st->idx = TILE_NEW_ARRAY(&P->R->m->arena, ir_expr *, 1);
        st->idx[0] = row;
        st->value = store_value(P->R, o->Y, inst(P, o->e, row, NULL, l), l);
        return st;
    }
    ir_stmt *pre[17];
    int npre = 0;
    ir_var *j = newvar(P->R, "rf_j", IR_VAR_LOOP, TILE_DT_I32, l);
    ir_expr *e = hoist_inv(P, dsimp(P, o->e, o->D), pre, &npre, 16, l);
    ir_stmt *ys = ir_stmt_new(P->R->m, IR_S_STORE, l);
    ys->buf = o->Y;
    ys->idx = TILE_NEW_ARRAY(&P->R->m->arena, ir_expr *, 2);
    ys->idx[0] = row;
    int64_t c0;
    ys->idx[1] = ir_const_int_value(o->c0, &c0) && c0 == 0 ? V(P->R, j, l) : ir_binary(P->R->m, IR_B_ADD, V(P->R, j, l), o->c0, l);
    ys->value = store_value(P->R, o->Y, inst(P, e, row, j, l), l);
    for (int i = 0; i < npre; i++) pre[i]->value = inst(P, pre[i]->value, row, NULL, l);
    pre[npre++] = loop(P->R, j, I32(P->R, 0, l), o->D, IR_LOOP_VECTORIZED, ys, l);
    return ir_seq(P->R->m, pre, npre, l);
}

/* the reductions of a row, in passes by dependence level, then the outputs */
static ir_stmt *row_body(rp *P, ir_expr *row, tile_loc l) {
    ir_stmt **st = TILE_NEW_ARRAY(&P->R->m->arena, ir_stmt *, 4 * P->nred + P->nout + 1);
    int n = 0;
    bool done[RP_MAXRED] = {0};
    for (int i = 0; i < P->nred; i++) {
        if (done[i]) continue;
        red *r = &P->red[i];
        int pj = -1;
        for (int k = i + 1; k < P->nred && pj < 0; k++)
            if (pair_of(P, k) == i) pj = k;
        if (r->op == IR_RED_MAX && pj >= 0) {
            /* the max and the sum of exp(u - max) in one online pass */
            red *s = &P->red[pj];
            tplx *tx = TILE_NEW(&P->R->m->arena, tplx);
            tx->P = P, tx->u = r->e, tx->row = row;
            st[n++] = assign(P->R, r->var, ir_const_float(P->R->m, TILE_DT_F32, -INFINITY, l), l);
            st[n++] = assign(P->R, s->var, F0(P, 0.0, l), l);
            st[n++] = online_pass(P->R, r->var, s->var, r->D, tpl_x, tx, NULL, NULL, NULL, l);
            done[i] = done[pj] = true;
            continue;
        }
        ir_var *j = newvar(P->R, "rf_j", IR_VAR_LOOP, TILE_DT_I32, l);
        double id = r->op == IR_RED_SUM ? 0.0 : r->op == IR_RED_MAX ? -INFINITY : INFINITY;
        st[n++] = assign(P->R, r->var, ir_const_float(P->R->m, TILE_DT_F32, id, l), l);
        st[n++] = loop(P->R, j, I32(P->R, 0, l), r->D, IR_LOOP_SERIAL,
                       assign(P->R, r->var, combine(P, r->op, V(P->R, r->var, l), inst(P, r->e, row, j, l), l), l), l);
        done[i] = true;
    }
    for (int i = 0; i < P->nout; i++) st[n++] = write_out(P, &P->out[i], row, l);
    return ir_seq(P->R->m, st, n, l);
}

/* the one-exp softmax: one pair (m, s), one output exp(u - m) * g (or / h) over the same
 * columns; *g the row factor template */
static bool one_exp(rp *P, ir_expr **g) {
    if (P->nred != 2 || P->nout != 1 || pair_of(P, 1) != 0 || !P->out[0].c0 || refs_red(P, P->red[0].e, 2, NULL)) return false;
    rout *o = &P->out[0];
    int64_t c0;
    if (!ir_const_int_value(o->c0, &c0) || c0 != 0 || !ir_expr_equal(o->D, P->red[0].D)) return false;
    ir_expr *e = dsimp(P, o->e, o->D);
    ir_expr *ex = NULL, *f = NULL;
    bool div = false;
    if (binop(e, IR_B_MUL)) {
        if (is_exp(e->args[0])) ex = e->args[0], f = e->args[1];
        else if (is_exp(e->args[1])) ex = e->args[1], f = e->args[0];
    } else if (binop(e, IR_B_DIV) && is_exp(e->args[0])) {
        ex = e->args[0], f = e->args[1], div = true;
    }
    if (!ex || ir_expr_uses_var(f, P->COLV) || !binop(ex->args[0], IR_B_SUB) || !is_var(ex->args[0]->args[1], P->red[0].var) ||
        !ir_expr_equal(dsimp(P, ex->args[0]->args[0], o->D), P->red[0].e))
        return false;
    *g = div ? ir_binary(P->R->m, IR_B_DIV, F0(P, 1.0, o->e->loc), f, o->e->loc) : f;
    return true;
}

/* the pipelined row-sum loop (TILE_ROWFUSE_PIPE=1): one sum, one output over its columns */
static ir_stmt *norm_pipe(rp *P, ir_expr *M32, tile_loc l) {
    red *r = &P->red[0];
    rout *o = &P->out[0];
    pipe Pp;
    pipe_init(P->R, &Pp, M32, l);
    ir_var *rr = Pp.r, *a = r->var;
    ir_var *sc = NULL;
    /* the output with the sum bound to the previous row's scale: R(x(r - 1, j), sc) */
    ir_expr *prev = row_at(P->R, rr, -1, l);
    /* the per-row parts of the output (the scale from the sum) are computed once the row's
     * sum is complete and kept for its write in the next step */
    ir_stmt *hp[17];
    int nhp = 0;
    ir_expr *oe = hoist_inv(P, dsimp(P, o->e, o->D), hp, &nhp, 16, l);
    (void)sc;
    ir_var *c = newvar(P->R, "rf_c", IR_VAR_LOOP, TILE_DT_I32, l), *j1 = newvar(P->R, "rf_j", IR_VAR_LOOP, TILE_DT_I32, l),
           *j2 = newvar(P->R, "rf_j", IR_VAR_LOOP, TILE_DT_I32, l), *j3 = newvar(P->R, "rf_j", IR_VAR_LOOP, TILE_DT_I32, l);
    ir_expr *H = r->D, *C = I32(P->R, ROW_CHUNK, l);
    ir_expr *start = ir_binary(P->R->m, IR_B_MUL, V(P->R, c, l), C, l);
    ir_expr *ext = ir_binary(P->R->m, IR_B_MIN, ir_binary(P->R->m, IR_B_SUB, H, start, l), C, l);
    ir_stmt *sum1 = assign(P->R, a, ir_binary(P->R->m, IR_B_ADD, V(P->R, a, l), inst(P, r->e, V(P->R, rr, l), j1, l), l), l);
    ir_stmt *cb[2] = {iff(P->R, pipe_writes(P->R, &Pp), loop(P->R, j2, start, ext, IR_LOOP_VECTORIZED,
                                                             store2e(P->R, o->Y, prev, j2, inst(P, oe, prev, j2, l), l), l), l),
                      iff(P->R, pipe_reads(P->R, &Pp), loop(P->R, j1, start, ext, IR_LOOP_SERIAL, sum1, l), l)};
    ir_stmt *two[2] = {assign(P->R, a, ir_binary(P->R->m, IR_B_ADD, V(P->R, a, l), inst(P, r->e, V(P->R, rr, l), j3, l), l), l),
                       store2e(P->R, o->Y, row_at(P->R, rr, -1, l), j3, inst(P, oe, row_at(P->R, rr, -1, l), j3, l), l)};
    ir_stmt *sel = ir_stmt_new(P->R->m, IR_S_IF, l);
    sel->cond = ir_binary(P->R->m, IR_B_AND, pipe_writes(P->R, &Pp), pipe_reads(P->R, &Pp), l);
    sel->body[0] = loop(P->R, j3, start, ext, IR_LOOP_SERIAL, ir_seq(P->R->m, two, 2, l), l);
    sel->body[1] = ir_seq(P->R->m, cb, 2, l);
    ir_stmt **fin = TILE_NEW_ARRAY(&P->R->m->arena, ir_stmt *, nhp + 1), **pre = TILE_NEW_ARRAY(&P->R->m->arena, ir_stmt *, nhp + 1);
    for (int i = 0; i < nhp; i++) {
        fin[i] = assign(P->R, hp[i]->var, inst(P, hp[i]->value, V(P->R, rr, l), NULL, l), l);
        pre[i] = assign(P->R, hp[i]->var, ir_const_float(P->R->m, hp[i]->var->dtype, 0.0, l), l);
    }
    ir_stmt *step[3] = {iff(P->R, pipe_reads(P->R, &Pp), assign(P->R, a, F0(P, 0.0, l), l), l),
                        loop(P->R, c, I32(P->R, 0, l), nchunks_of(P->R, H, l), IR_LOOP_SERIAL, sel, l),
                        iff(P->R, pipe_reads(P->R, &Pp), ir_seq(P->R->m, fin, nhp, l), l)};
    return pipe_loop(P->R, &Pp, pre, nhp, ir_seq(P->R->m, step, 3, l));
}

static const char *red_name(int op) { return op == IR_RED_SUM ? "sum" : op == IR_RED_MAX ? "max" : "min"; }

/* u is a plain f32 element X[ROWV, COLV] of a tensor (the row helpers read it in place) */
static bool plain_elem(rp *P, const ir_expr *u) {
    return u && u->kind == IR_E_LOAD && u->dtype == TILE_DT_F32 && u->buf->rank == 2 && is_var(u->args[0], P->ROWV) && is_var(u->args[1], P->COLV);
}

static ir_stmt *match_tile_rows(rf *R, ir_stmt *ks, const char **reason) {
    if (ks->ngrid != 1) REJECT("the grid is not one-dimensional (a row kernel has one block of rows per block)");
    rp *P = TILE_NEW(&R->m->arena, rp);
    memset(P, 0, sizeof *P);
    P->R = R;
    P->ks = ks;
    P->bx = ks->block_vars[0];
    tile_loc l = ks->loc;
    /* the block's rows: the first dimension of its 2-D fragments */
    {
        int64_t bm = 0;
        ir_stmt *b = ks->body[0];
        int n = nstmts(b);
        for (int k = 0; k < n && !bm; k++) {
            ir_stmt *q = nth(b, k);
            if (q->kind == IR_S_ALLOC && q->buf->rank == 2) ir_const_int_value(q->buf->shape[0], &bm);
        }
        if (bm <= 0) REJECT("no [block rows, columns] fragment");
        P->bM = bm;
    }
    P->ROWV = newvar(R, "rf_row", IR_VAR_LOOP, TILE_DT_I32, l);
    P->COLV = newvar(R, "rf_col", IR_VAR_LOOP, TILE_DT_I32, l);
    if (!rp_block(P, ks->body[0])) REJECT(P->why);
    if (!P->nout) REJECT("the kernel writes no tensor");
    /* the rows: the outputs', covered by the grid; every tensor read by rows has them */
    ir_expr *M = P->out[0].Y->shape[0];
    for (int i = 0; i < P->nout; i++)
        if (!same_dim(P->out[i].Y->shape[0], M)) REJECT("the outputs have different numbers of rows");
    for (int i = 0; i < P->nrowread; i++)
        if (!same_dim(P->rowread[i]->shape[0], M)) REJECT("a tensor read by rows has another number of rows than the output");
    if (!covers(ks->grid[0], P->bM, M)) REJECT("the grid does not cover the rows of the output");
    for (int i = 0; i < P->nred; i++) narrow(P, &P->red[i]);
    /* emit: a computed x(j) of the online pass goes through a chunk buffer */
    R->mat_x = false;
    for (int i = 0; i < P->nred; i++)
        for (int k = i + 1; k < P->nred; k++)
            if (pair_of(P, k) == i && !plain_elem(P, P->red[i].e)) R->mat_x = true;
    ir_expr *M32 = as_i32(R, M);
    ir_var *r = newvar(R, "rf_row", IR_VAR_LOOP, TILE_DT_I32, l);
    ir_stmt *plain = loop(R, r, I32(R, 0, l), M32, IR_LOOP_PARALLEL, row_body(P, V(R, r, l), l), l);
    ir_stmt *res = plain;
    const char *form = "one pass per level of reductions, then a write pass";
    ir_expr *g;
    if (one_exp(P, &g)) {
        pipe Pp;
        pipe_init(R, &Pp, M32, l);
        tplx *tx = TILE_NEW(&R->m->arena, tplx);
        tx->P = P, tx->u = P->red[0].e, tx->row = V(R, Pp.r, l);
        tplg *tg = TILE_NEW(&R->m->arena, tplg);
        tg->P = P, tg->g = g, tg->mv = P->red[0].var, tg->sv = P->red[1].var;
        ir_stmt *kept = softmax_pipe(R, &Pp, P->red[0].D, tpl_x, tx, ir_const_float(R->m, TILE_DT_F32, -INFINITY, l), P->red[0].var, P->red[1].var, NULL,
                                     P->out[0].Y, tpl_g, tg, l);
        form = form_name(R, P->red[0].D, M32);
        res = by_row_length(R, P->red[0].D, kept, plain, l);
    } else if (P->nred == 1 && P->red[0].op == IR_RED_SUM && P->nout == 1 && P->out[0].c0 && const_is(P->out[0].c0, 0) &&
               ir_expr_equal(P->out[0].D, P->red[0].D) && pipe_on_for(R, true) && pipe_worth(M32)) {
        res = norm_pipe(P, M32, l);
        form = "pipelined (the write of row r - 1 in the loop of row r's sum)";
    } else if (P->nred == 1 && P->red[0].op == IR_RED_SUM && P->nout == 1 && pipe_worth(M32) && pipe_auto(R)) {
        form = "one sum pass, one write pass (the default; TILE_ROWFUSE_PIPE=1 pipelines it)";
    }
    R->mat_x = false;
    if (res) {
        tile_strbuf sb = {0};
        for (int i = 0; i < P->nred; i++) {
            int pj = pair_of(P, i);
            if (pj >= 0) continue;
            bool paired = false;
            for (int k = i + 1; k < P->nred; k++)
                if (pair_of(P, k) == i) paired = true;
            tile_sb_printf(&sb, "%s%s", sb.len ? ", " : "", paired ? "max and sum of exp(x - max)" : red_name(P->red[i].op));
        }
        const char *what = tile_arena_printf(&R->m->arena, "row kernel (blocks of %lld rows) -> rows of %s over the pool; reductions: %s; %d output%s: %s (chunks of %d)",
                                             (long long)P->bM, P->nrowread ? P->rowread[0]->name : P->out[0].Y->name, sb.len ? sb.data : "none", P->nout,
                                             P->nout == 1 ? "" : "s", form, ROW_CHUNK);
        tile_log(TILE_LOG_INFO, "rowfuse: %s at %s:%d: %s", R->f->name, opt_loc_file(ks->loc), ks->loc.line, what);
        ir_explain_stmt(R->f, ks, "rowfuse", IR_DEC_GOT, what, NULL);
        /* the kernel's ops are gone: say where they went */
        ir_explain_ops(R->f, ks->body[0], "rowfuse", tile_arena_printf(&R->m->arena, "part of the fused row pass of the kernel at line %d", ks->loc.line));
        tile_sb_free(&sb);
    }
    return res;
}

/* ---------- the walk ---------- */

static bool has_reduce(const ir_stmt *s) {
    if (!s) return false;
    if (s->kind == IR_S_REDUCE) return true;
    for (int i = 0; i < s->nbody && s->body; i++)
        if (has_reduce(s->body[i])) return true;
    return false;
}

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
                 * traffic, and measures faster on both machines tried (2-core VM, 2 threads:
                 * 0.49-0.54 of memcpy against 0.37-0.40 as written; 16-core Xeon: 1.22-1.51
                 * against 0.88-1.09 at 16 threads, 0.78-0.96 against 0.60-0.63 at one;
                 * bench/results/cpu-rows-2026-11-30-s4-16core.md), so it is on;
                 * TILE_ROWFUSE_PLAIN=0 leaves the loop as written. */
                if (!tb_opt_bool(R->f->opts, TB_OPT_rowfuse_plain)) {
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
        const char *why = NULL;
        ir_stmt *r = match_tile_rows(R, s, &why);
        if (r) return r;
        if (tile_log_enabled(TILE_LOG_INFO))
            tile_log(TILE_LOG_INFO, "rowfuse: %s at %s:%d: declined: %s", R->f->name, opt_loc_file(s->loc), s->loc.line, why ? why : "?");
        /* a kernel with a reduction is a row-kernel candidate: say why it stays as written */
        if (has_reduce(s)) ir_explain_stmt(R->f, s, "rowfuse", IR_DEC_DECLINED, "row fusion (one read and one write pass per row, over the pool)", "%s", why ? why : "?");
        return s;
    }
    default: return s;
    }
}

static int run_rowfuse(ir_module *m, ir_func *f, tile_diags *d) {
    (void)d;
    /* the environment is read per kernel: bench/cpu/e2e.c switches TILE_NO_ROWFUSE between kernels */
    if (!f->body || tb_opt_bool(f->opts, TB_OPT_no_rowfuse)) return 0;
    rf R = {m, f};
    f->body = rewrite(&R, f->body);
    return 0;
}

const opt_pass opt_pass_rowfuse = {
    "rowfuse",
    "row softmax / row scaling by a sum (RMSNorm) -> rows over the pool, one read pass (online max and sum) and one write pass",
    run_rowfuse,
};
