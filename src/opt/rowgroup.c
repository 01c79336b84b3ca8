/* rowgroup.c — row groups, a step of the layout pass (layout.c) on the cuda and opencl
 * pipelines: a kernel whose block-level register fragments would need more registers a thread
 * than the budget, and whose work is row by row, runs its rows in groups of g instead of all
 * at once.
 *
 * In:  a tile-form kernel; its fragments' registers a thread at the program's sizes.
 * Out: the kernel rewritten (or left alone, with the reason) so that its body runs in a serial
 *      loop over R / g groups of g rows: the row fragments (dimension 0 of extent R) shrink to
 *      g rows, their copies from and to global memory move by rg * g rows, the T.Parallel nests
 *      over the rows walk g of them (the row variable is rg * g + i wherever it is not a row
 *      fragment's index), and the statements that touch no row fragment (a weight vector's
 *      copy) are hoisted before the loop.
 *
 * Why: a [8, 8192] f32 fragment at 128 threads is 512 elements a thread. Past the register
 * file the code keeps it in local memory, walked by `#pragma unroll 1` loops with dynamic
 * indices; the reduction's accumulators become local memory too, each element a local load,
 * add and store chained through the previous one (examples/rmsnorm.tl at its defaults: 0.18x
 * F.rms_norm in f32, 0.10x in bf16). The same rows one group at a time fit the registers and
 * take the fully unrolled register path (one row a block: 1.29x).
 *
 * Legal when the rows are independent: every access to a row fragment is at the same loop
 * variable (of extent R) in dimension 0 or a whole-fragment tile op that keeps dimension 0
 * (copies with global memory along a global dimension of extent R, fills, reductions over
 * another dimension), no other fragment is indexed by that variable or written after the first
 * row statement (such statements are hoisted when they only read globals the kernel does not
 * write), no global is both read and written by the kernel, and nothing else is at block level
 * (serial loops whose bounds read no fragment are walked through). Semantics do not change: a
 * row's statements run in the same order, and no row reads what another writes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "opt.h"

#define RG_MAXF 256

typedef struct rg {
    ir_module *m;
    ir_func *f;
    ir_stmt *k;
    int64_t R;
    ir_buffer *fr[RG_MAXF];
    bool row[RG_MAXF];
    int nfr;
    const char *why;
    /* globals: 1 read, 2 written */
    unsigned char *gacc;
    ir_var *rv;      /* the group index */
    int64_t g;
} rg;

static int fidx(const rg *G, const ir_buffer *b) {
    for (int i = 0; i < G->nfr; i++)
        if (G->fr[i] == b) return i;
    return -1;
}
static bool is_row(const rg *G, const ir_buffer *b) {
    int i = fidx(G, b);
    return i >= 0 && G->row[i];
}
static bool is_frag(const rg *G, const ir_buffer *b) { return fidx(G, b) >= 0; }

static void decline(rg *G, const char *why) {
    if (!G->why) G->why = why;
}

static void glob_expr(rg *G, const ir_expr *e) {
    if (!e) return;
    if (e->kind == IR_E_LOAD && e->buf->scope == IR_SCOPE_GLOBAL) G->gacc[e->buf->id] |= 1;
    for (int i = 0; i < e->nargs; i++) glob_expr(G, e->args[i]);
}
static void glob_stmt(rg *G, const ir_stmt *s) {
    if (!s) return;
    glob_expr(G, s->lo);
    glob_expr(G, s->extent);
    glob_expr(G, s->cond);
    glob_expr(G, s->value);
    if ((s->kind == IR_S_STORE || s->kind == IR_S_ATOMIC) && s->buf) {
        if (s->buf->scope == IR_SCOPE_GLOBAL) G->gacc[s->buf->id] |= 2;
        for (int d = 0; d < s->buf->rank; d++) glob_expr(G, s->idx[d]);
    }
    for (int r = 0; r < s->nregions; r++) {
        const ir_region *g = &s->regions[r];
        if (g->buf->scope == IR_SCOPE_GLOBAL) G->gacc[g->buf->id] |= (s->kind == IR_S_COPY && r == 0) ? 1 : (s->kind == IR_S_COPY ? 2 : 3);
        for (int d = 0; d < g->buf->rank; d++) {
            glob_expr(G, g->start[d]);
            glob_expr(G, g->extent[d]);
        }
    }
    for (int i = 0; i < s->nbody; i++) glob_stmt(G, s->body[i]);
}

static bool expr_has_frag(const rg *G, const ir_expr *e, bool rows) {
    if (!e) return false;
    if (e->kind == IR_E_LOAD && is_frag(G, e->buf) && (!rows || is_row(G, e->buf))) return true;
    for (int i = 0; i < e->nargs; i++)
        if (expr_has_frag(G, e->args[i], rows)) return true;
    return false;
}
/* does s touch a row fragment? */
static bool touches_rows(const rg *G, const ir_stmt *s) {
    if (!s) return false;
    if (expr_has_frag(G, s->lo, true) || expr_has_frag(G, s->extent, true) || expr_has_frag(G, s->cond, true) || expr_has_frag(G, s->value, true)) return true;
    if ((s->kind == IR_S_STORE || s->kind == IR_S_ATOMIC) && s->buf && is_row(G, s->buf)) return true;
    for (int r = 0; r < s->nregions; r++)
        if (is_row(G, s->regions[r].buf)) return true;
    for (int i = 0; i < s->nbody; i++)
        if (touches_rows(G, s->body[i])) return true;
    return false;
}
/* fragments s writes (collected in w) */
static void writes_of(const rg *G, const ir_stmt *s, bool *w) {
    if (!s) return;
    if ((s->kind == IR_S_STORE || s->kind == IR_S_ATOMIC) && s->buf && is_frag(G, s->buf)) w[fidx(G, s->buf)] = true;
    if (s->kind == IR_S_COPY && is_frag(G, s->regions[1].buf)) w[fidx(G, s->regions[1].buf)] = true;
    if (s->kind == IR_S_FILL && is_frag(G, s->regions[0].buf)) w[fidx(G, s->regions[0].buf)] = true;
    if (s->kind == IR_S_REDUCE && is_frag(G, s->regions[1].buf)) w[fidx(G, s->regions[1].buf)] = true;
    if (s->kind == IR_S_GEMM && is_frag(G, s->regions[2].buf)) w[fidx(G, s->regions[2].buf)] = true;
    for (int i = 0; i < s->nbody; i++) writes_of(G, s->body[i], w);
}
static bool expr_reads(const ir_expr *e, const ir_buffer *b) { return ir_expr_loads(e, b); }
static bool stmt_reads(const ir_stmt *s, const ir_buffer *b) {
    if (!s) return false;
    if (expr_reads(s->lo, b) || expr_reads(s->extent, b) || expr_reads(s->cond, b) || expr_reads(s->value, b)) return true;
    if ((s->kind == IR_S_STORE || s->kind == IR_S_ATOMIC) && s->buf)
        for (int d = 0; d < s->buf->rank; d++)
            if (expr_reads(s->idx[d], b)) return true;
    for (int r = 0; r < s->nregions; r++) {
        if (s->regions[r].buf == b && !(s->kind == IR_S_COPY && r == 1) && !(s->kind == IR_S_FILL) && !(s->kind == IR_S_REDUCE && r == 1 && s->clear)) return true;
        for (int d = 0; d < s->regions[r].buf->rank; d++)
            if (expr_reads(s->regions[r].start[d], b) || expr_reads(s->regions[r].extent[d], b)) return true;
    }
    for (int i = 0; i < s->nbody; i++)
        if (stmt_reads(s->body[i], b)) return true;
    return false;
}

/* ---- checking the row statements ---- */

/* the global dimension a row fragment's dimension 0 goes to in a copy with global region g:
 * dimensions of extent > 1 pair up in order (COPY's element order) */
static int glob_row_dim(const rg *G, const ir_buffer *f, const ir_region *g) {
    (void)G;
    int64_t e;
    for (int d = 0; d < g->buf->rank; d++) {
        if (!ir_const_int_value(g->extent[d], &e)) return -1;
        if (e == 1) continue;
        return e == G->R ? d : -1;
    }
    (void)f;
    return -1;
}

static ir_var *row_var_of_nest(rg *G, const ir_stmt *s, const ir_stmt **loops, int n);

/* the nest's accesses: row fragments at [v, ...], no other fragment indexed by v */
typedef struct nchk {
    ir_var *v;
    const ir_stmt *const *loops;
    int n;
    bool bad;
    bool rows;
} nchk;

static void nest_expr_chk(rg *G, nchk *C, const ir_expr *e) {
    if (!e) return;
    if (e->kind == IR_E_LOAD && is_frag(G, e->buf)) {
        if (is_row(G, e->buf)) {
            C->rows = true;
            if (e->args[0]->kind != IR_E_VAR || e->args[0]->var != C->v) C->bad = true;
            for (int d = 1; d < e->nargs; d++)
                if (ir_expr_uses_var(e->args[d], C->v)) C->bad = true;
        } else {
            for (int d = 0; d < e->nargs; d++)
                if (ir_expr_uses_var(e->args[d], C->v)) C->bad = true;
        }
        for (int d = 1; d < e->nargs; d++) nest_expr_chk(G, C, e->args[d]);
        return;
    }
    for (int i = 0; i < e->nargs; i++) nest_expr_chk(G, C, e->args[i]);
}
static void nest_stmt_chk(rg *G, nchk *C, const ir_stmt *s) {
    if (!s) return;
    if (s->kind == IR_S_COPY || s->kind == IR_S_FILL || s->kind == IR_S_GEMM || s->kind == IR_S_REDUCE || s->kind == IR_S_ATOMIC || s->kind == IR_S_KERNEL) {
        C->bad = true;
        return;
    }
    nest_expr_chk(G, C, s->lo);
    nest_expr_chk(G, C, s->extent);
    nest_expr_chk(G, C, s->cond);
    nest_expr_chk(G, C, s->value);
    if (s->kind == IR_S_STORE) {
        for (int d = 0; d < s->buf->rank; d++) nest_expr_chk(G, C, s->idx[d]);
        if (is_frag(G, s->buf)) {
            if (!is_row(G, s->buf)) C->bad = true; /* a non-row fragment written per row */
            else {
                C->rows = true;
                if (s->idx[0]->kind != IR_E_VAR || s->idx[0]->var != C->v) C->bad = true;
            }
        }
    }
    for (int i = 0; i < s->nbody; i++) nest_stmt_chk(G, C, s->body[i]);
}

static void nest_loops(const ir_stmt *s, const ir_stmt **loops, int *n) {
    *n = 0;
    loops[(*n)++] = s;
    int want = s->par_group_depth < 1 ? 1 : s->par_group_depth;
    while (*n < want && *n < 8) {
        const ir_stmt *c = loops[*n - 1]->body[0];
        while (c && c->kind == IR_S_SEQ && c->nbody == 1) c = c->body[0];
        if (!c || c->kind != IR_S_FOR) break;
        loops[(*n)++] = c;
    }
}

static ir_var *row_var_of_nest(rg *G, const ir_stmt *s, const ir_stmt **loops, int n) {
    (void)s;
    for (int q = 0; q < n; q++) {
        int64_t e;
        if (!ir_const_int_value(loops[q]->extent, &e) || e != G->R) continue;
        nchk C = {loops[q]->var, loops, n, false, false};
        nest_stmt_chk(G, &C, loops[n - 1]->body[0]);
        if (!C.bad && C.rows) return loops[q]->var;
    }
    return NULL;
}

/* a statement of the loop part: is it row-wise? */
static bool check_row_stmt(rg *G, const ir_stmt *s) {
    if (!s) return true;
    switch (s->kind) {
    case IR_S_SEQ:
        for (int i = 0; i < s->nbody; i++)
            if (!check_row_stmt(G, s->body[i])) return false;
        return true;
    case IR_S_ALLOC: decline(G, "a fragment allocated inside the kernel's statements"); return false;
    case IR_S_FOR:
        if (s->loop_kind == IR_LOOP_PARALLEL) {
            const ir_stmt *loops[8];
            int n;
            nest_loops(s, loops, &n);
            if (!row_var_of_nest(G, s, loops, n)) {
                decline(G, tile_arena_printf(&G->m->arena, "the T.Parallel nest at line %d is not row-wise (each row fragment at one loop variable of extent %lld in dimension 0, no other fragment written or indexed by it)",
                                             s->loc.line, (long long)G->R));
                return false;
            }
            return true;
        }
        if (s->loop_kind != IR_LOOP_SERIAL && s->loop_kind != IR_LOOP_UNROLLED) {
            decline(G, tile_arena_printf(&G->m->arena, "a %s loop at line %d", ir_loop_kind_name(s->loop_kind), s->loc.line));
            return false;
        }
        if (expr_has_frag(G, s->lo, false) || expr_has_frag(G, s->extent, false)) {
            decline(G, "a loop bound reads a fragment");
            return false;
        }
        return check_row_stmt(G, s->body[0]);
    case IR_S_COPY: {
        const ir_region *a = &s->regions[0], *b = &s->regions[1];
        bool ra = is_row(G, a->buf), rb = is_row(G, b->buf);
        if (!ra && !rb) {
            decline(G, tile_arena_printf(&G->m->arena, "the T.copy at line %d writes no row fragment but follows the first row statement", s->loc.line));
            return false;
        }
        if ((ra && !ir_region_is_whole(a)) || (rb && !ir_region_is_whole(b))) {
            decline(G, tile_arena_printf(&G->m->arena, "the T.copy at line %d copies part of a row fragment", s->loc.line));
            return false;
        }
        if (ra && rb) return true;
        const ir_region *o = ra ? b : a;
        if (o->buf->scope != IR_SCOPE_GLOBAL || glob_row_dim(G, ra ? a->buf : b->buf, o) < 0) {
            decline(G, tile_arena_printf(&G->m->arena, "the T.copy at line %d is not between a row fragment and global rows", s->loc.line));
            return false;
        }
        return true;
    }
    case IR_S_FILL:
        if (!is_row(G, s->regions[0].buf) || !ir_region_is_whole(&s->regions[0]) || expr_has_frag(G, s->value, false)) {
            decline(G, tile_arena_printf(&G->m->arena, "the T.fill at line %d is not of a whole row fragment", s->loc.line));
            return false;
        }
        return true;
    case IR_S_REDUCE:
        if (!is_row(G, s->regions[0].buf) || !is_row(G, s->regions[1].buf) || s->dim == 0 || !ir_region_is_whole(&s->regions[0]) || !ir_region_is_whole(&s->regions[1]) ||
            s->regions[1].buf->rank < 1) {
            decline(G, tile_arena_printf(&G->m->arena, "the reduction at line %d is not along a row (row fragment to row fragment, a dimension other than 0)", s->loc.line));
            return false;
        }
        return true;
    default:
        decline(G, tile_arena_printf(&G->m->arena, "a block-level %s at line %d", s->kind == IR_S_GEMM ? "T.gemm" : "statement", s->loc.line));
        return false;
    }
}

/* ---- rewriting ---- */

static ir_expr *ci(rg *G, tile_dtype dt, int64_t v, tile_loc l) { return ir_const_int(G->m, dt, v, l); }

/* rv * g (+ e) */
static ir_expr *row_off(rg *G, ir_expr *e, tile_loc l) {
    tile_dtype dt = e ? e->dtype : TILE_DT_I32;
    ir_expr *rv = ir_var_ref(G->m, G->rv, l);
    if (dt != TILE_DT_I32) rv = ir_cast(G->m, dt, rv, l);
    ir_expr *o = ir_binary(G->m, IR_B_MUL, rv, ci(G, dt, G->g, l), l);
    return e ? ir_binary(G->m, IR_B_ADD, e, o, l) : o;
}

/* e with v replaced by v + rv * g, except as a row fragment's index 0 */
static ir_expr *subst(rg *G, ir_expr *e, const ir_var *v) {
    if (!e) return e;
    if (e->kind == IR_E_VAR && e->var == v) return row_off(G, e, e->loc);
    for (int i = 0; i < e->nargs; i++) {
        if (i == 0 && e->kind == IR_E_LOAD && is_row(G, e->buf)) continue;
        e->args[i] = subst(G, e->args[i], v);
    }
    return e;
}
static void subst_stmt(rg *G, ir_stmt *s, const ir_var *v) {
    if (!s) return;
    s->lo = subst(G, s->lo, v);
    s->extent = subst(G, s->extent, v);
    s->cond = subst(G, s->cond, v);
    s->value = subst(G, s->value, v);
    if (s->kind == IR_S_STORE)
        for (int d = 0; d < s->buf->rank; d++)
            if (!(d == 0 && is_row(G, s->buf))) s->idx[d] = subst(G, s->idx[d], v);
    for (int i = 0; i < s->nbody; i++) subst_stmt(G, s->body[i], v);
}

static void rewrite(rg *G, ir_stmt *s) {
    if (!s) return;
    switch (s->kind) {
    case IR_S_SEQ:
        for (int i = 0; i < s->nbody; i++) rewrite(G, s->body[i]);
        return;
    case IR_S_FOR:
        if (s->loop_kind == IR_LOOP_PARALLEL) {
            const ir_stmt *loops[8];
            int n;
            nest_loops(s, loops, &n);
            ir_var *v = row_var_of_nest(G, s, loops, n);
            for (int q = 0; q < n; q++)
                if (loops[q]->var == v) ((ir_stmt *)loops[q])->extent = ci(G, loops[q]->extent->dtype, G->g, loops[q]->loc);
            subst_stmt(G, (ir_stmt *)loops[n - 1]->body[0], v);
            return;
        }
        rewrite(G, s->body[0]);
        return;
    case IR_S_COPY:
    case IR_S_FILL:
    case IR_S_REDUCE:
        for (int r = 0; r < s->nregions; r++) {
            ir_region *g = &s->regions[r];
            if (is_row(G, g->buf)) {
                g->extent[0] = ci(G, g->extent[0]->dtype, G->g, g->loc);
            } else if (g->buf->scope == IR_SCOPE_GLOBAL && s->kind == IR_S_COPY) {
                int d = glob_row_dim(G, NULL, g);
                g->start[d] = row_off(G, g->start[d], g->loc);
                g->extent[d] = ci(G, g->extent[d]->dtype, G->g, g->loc);
            }
        }
        return;
    default: return;
    }
}

int64_t opt_row_group_words(const ir_buffer *const *fr, const bool *row, int n, int64_t R, int64_t g, int threads) {
    int64_t w = 0;
    for (int i = 0; i < n; i++) {
        int64_t e = 1, x;
        for (int d = 0; d < fr[i]->rank; d++) e *= ir_const_int_value(fr[i]->shape[d], &x) ? x : 1;
        if (row[i]) e = e / R * g;
        int bits = tile_dtype_bits(fr[i]->dtype);
        int64_t per = (e + threads - 1) / threads;
        w += (per * (bits < 8 ? 8 : bits) + 31) / 32;
    }
    return w;
}

/* The row-group rewrite of kernel k (see the top of the file); budget: registers a thread the
 * fragments may take. Records the decision (got or declined) for --explain. */
bool opt_row_groups(ir_module *m, ir_func *f, ir_stmt *k, ir_buffer *const *frags, int nfrags, int threads, int budget) {
    rg G;
    memset(&G, 0, sizeof G);
    G.m = m;
    G.f = f;
    G.k = k;
    /* R: dimension 0 of the largest fragment of rank >= 2 */
    int64_t best = 0;
    for (int i = 0; i < nfrags && G.nfr < RG_MAXF; i++) {
        G.fr[G.nfr++] = frags[i];
        int64_t e = 1, x, r0 = 0;
        bool ok = true;
        for (int d = 0; d < frags[i]->rank; d++) {
            if (!ir_const_int_value(frags[i]->shape[d], &x)) ok = false;
            else {
                e *= x;
                if (d == 0) r0 = x;
            }
        }
        if (ok && frags[i]->rank >= 2 && e > best && r0 > 1) {
            best = e;
            G.R = r0;
        }
    }
    if (G.R <= 1) return false;
    for (int i = 0; i < G.nfr; i++) {
        int64_t x;
        G.row[i] = ir_const_int_value(G.fr[i]->shape[0], &x) && x == G.R;
    }
    int64_t words = opt_row_group_words((const ir_buffer *const *)G.fr, G.row, G.nfr, G.R, G.R, threads);
    if (words <= budget) return false;
    /* the group: the most rows whose fragments take at most half the register file's share of
     * a thread (128), else at most the budget, else one row */
    int64_t g = 0;
    for (int64_t c = G.R - 1; c >= 1 && !g; c--)
        if (G.R % c == 0 && opt_row_group_words((const ir_buffer *const *)G.fr, G.row, G.nfr, G.R, c, threads) <= 128) g = c;
    for (int64_t c = G.R - 1; c >= 1 && !g; c--)
        if (G.R % c == 0 && opt_row_group_words((const ir_buffer *const *)G.fr, G.row, G.nfr, G.R, c, threads) <= budget) g = c;
    if (!g) g = 1;
    G.g = g;

    ir_stmt *body = k->body[0];
    const char *what = tile_arena_printf(&m->arena, "row groups (%lld of %lld rows)", (long long)g, (long long)G.R);
    G.gacc = tile_xcalloc((size_t)f->nbuffers + 1, 1);
    glob_stmt(&G, body);
    for (int i = 0; i < f->nbuffers; i++)
        if (G.gacc[i] == 3) decline(&G, tile_arena_printf(&m->arena, "global %s is both read and written by the kernel (a later group could read what an earlier one wrote)", f->buffers[i]->name));
    if (!body || body->kind != IR_S_SEQ) decline(&G, "the kernel's body is one statement");
    /* the top-level statements: allocs, then hoisted ones, then the loop part */
    int n = body && body->kind == IR_S_SEQ ? body->nbody : 0;
    ir_stmt **pre = tile_xcalloc((size_t)n + 1, sizeof *pre), **hoist = tile_xcalloc((size_t)n + 1, sizeof *hoist), **rest = tile_xcalloc((size_t)n + 1, sizeof *rest);
    int np = 0, nh = 0, nr = 0;
    bool *wr = tile_xcalloc((size_t)G.nfr + 1, sizeof *wr);
    for (int i = 0; i < n && !G.why; i++) {
        ir_stmt *s = body->body[i];
        if (s->kind == IR_S_ALLOC) {
            if (nr || nh) decline(&G, "a fragment allocated after the kernel's first statement");
            pre[np++] = s;
            continue;
        }
        if (!touches_rows(&G, s)) {
            /* hoisted before the loop: it reads no row fragment, writes only non-row fragments
             * no earlier row statement read, and reads only globals the kernel does not write */
            bool w[RG_MAXF] = {0};
            writes_of(&G, s, w);
            bool ok = s->kind == IR_S_COPY || s->kind == IR_S_FILL || (s->kind == IR_S_FOR && s->loop_kind == IR_LOOP_PARALLEL);
            for (int q = 0; ok && q < G.nfr; q++)
                if (w[q])
                    for (int j = 0; j < nr; j++)
                        if (stmt_reads(rest[j], G.fr[q])) ok = false;
            unsigned char *save = G.gacc;
            unsigned char *mine = tile_xcalloc((size_t)f->nbuffers + 1, 1);
            G.gacc = mine;
            glob_stmt(&G, s);
            G.gacc = save;
            for (int q = 0; ok && q < f->nbuffers; q++)
                if (mine[q] && (save[q] & 2)) ok = false;
            free(mine);
            if (!ok) {
                decline(&G, tile_arena_printf(&m->arena, "the statement at line %d touches no row fragment and cannot run before the rows", s->loc.line));
                break;
            }
            hoist[nh++] = s;
            continue;
        }
        if (!check_row_stmt(&G, s)) break;
        rest[nr++] = s;
    }
    /* non-row fragments are not written in the loop part */
    for (int j = 0; j < nr && !G.why; j++) writes_of(&G, rest[j], wr);
    for (int q = 0; q < G.nfr && !G.why; q++)
        if (wr[q] && !G.row[q]) decline(&G, tile_arena_printf(&m->arena, "fragment %s (not a row fragment) is written among the row statements", G.fr[q]->name));
    if (!nr) decline(&G, "no row statement");
    bool done = false;
    if (G.why) {
        ir_explain_add(f, k->loc, "T.Kernel", "layout", IR_DEC_DECLINED, what, "%lld registers a thread for the fragments, over the budget of %d; %s", (long long)words, budget, G.why);
        tile_log(TILE_LOG_INFO, "layout: %s:%d: kernel: no %s: %s", opt_loc_file(k->loc), k->loc.line, what, G.why);
    } else {
        int64_t after = opt_row_group_words((const ir_buffer *const *)G.fr, G.row, G.nfr, G.R, g, threads);
        G.rv = ir_var_new(m, f, "tl_rg", IR_VAR_LOOP, TILE_DT_I32, k->loc);
        for (int j = 0; j < nr; j++) rewrite(&G, rest[j]);
        for (int q = 0; q < G.nfr; q++)
            if (G.row[q]) G.fr[q]->shape[0] = ci(&G, G.fr[q]->shape[0]->dtype, g, G.fr[q]->loc);
        ir_stmt *loop = ir_stmt_new(m, IR_S_FOR, k->loc);
        loop->var = G.rv;
        loop->lo = ci(&G, TILE_DT_I32, 0, k->loc);
        loop->extent = ci(&G, TILE_DT_I32, G.R / g, k->loc);
        loop->loop_kind = IR_LOOP_SERIAL;
        loop->body[0] = ir_seq(m, rest, nr, k->loc);
        ir_stmt **all = tile_xcalloc((size_t)(np + nh + 1), sizeof *all);
        memcpy(all, pre, sizeof *all * (size_t)np);
        memcpy(all + np, hoist, sizeof *all * (size_t)nh);
        all[np + nh] = loop;
        k->body[0] = ir_seq(m, all, np + nh + 1, body->loc);
        free(all);
        const char *why = tile_arena_printf(&m->arena,
                                            "the fragments need %lld registers a thread for all %lld rows at %d threads, over the budget of %d (local memory); the rows are independent, so a serial loop runs %lld groups of %lld (%lld registers a thread)",
                                            (long long)words, (long long)G.R, threads, budget, (long long)(G.R / g), (long long)g, (long long)after);
        ir_explain_add(f, k->loc, "T.Kernel", "layout", IR_DEC_GOT, what, "%s", why);
        tile_log(TILE_LOG_INFO, "layout: %s:%d: kernel: %s: %s", opt_loc_file(k->loc), k->loc.line, what, why);
        done = true;
    }
    free(pre);
    free(hoist);
    free(rest);
    free(wr);
    free(G.gacc);
    return done;
}
