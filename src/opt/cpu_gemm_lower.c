/* cpu_gemm_lower.c — the `cpugemm` pass (cpu pipeline): every T.gemm of a tile-form kernel
 * gets its CPU lowering from an analysis of the kernel, written into the IR.
 *
 * In:  a verified tile-form ir_func.
 * Out: the same function, with three rewrites applied wherever their conditions hold, and a
 *      note on every gemm (ir_stmt.note, printed by `tile ir`) naming the lowering it got:
 *
 * 1. Operand forwarding. A gemm operand that is a tile buffer (shared / fragment / local,
 *    allocated in the kernel) filled by one copy from a region of a tensor, read by nothing
 *    but this gemm and written by nothing but this copy, while the kernel never writes the
 *    tensor, is replaced by that region: the gemm reads the tensor in place (the GEMM library
 *    packs straight from it) and the copy goes. The copy may widen a narrow float to f32
 *    (exact), nothing else.
 *
 * 2. K-loop fusion. A serial / pipelined / unrolled loop whose body is then just one gemm
 *    accumulating into a region that does not depend on the loop variable k, with the K
 *    starts of both operands `a0 + s*k` and `b0 + s*k` (s the K extent of one step), becomes
 *    one gemm over K extent s * E (E the trip count) starting at k = lo. Same meaning: the
 *    steps' K windows tile [a0 + s*lo, a0 + s*(lo+E)) in order; the interpreter sums each
 *    element's products over k in increasing order into the accumulator, so the fused gemm
 *    gives the same sums in the same order (bit-identical) when the accumulator has the
 *    compute dtype (f32 for floats), which is required. Clipping at the tensor bounds is per
 *    element, the same in both.
 *
 * 3. Grid hoisting. A gemm at the top level of a kernel body (not in a loop or branch) whose
 *    operands are tensor regions (after 1 and 2) whose row start of A is `bM*bi + r0` and
 *    column start of B `bN*bj + c0` (bi, bj block indices or absent; bM x bN the accumulator
 *    tile, a kernel buffer written before only by a fill with 0, or cleared by the gemm),
 *    with K ranges and all other starts free of block indices, computes in block (bi, bj)
 *    the tile [bi*bM : +bM, bj*bN : +bN] of one GEMM over the whole grid. It is hoisted out
 *    of the kernel: one gemm of (gi*bM) x (gj*bN) x K on the GEMM library (A and B packed
 *    once, all cores), into a temporary Cacc of the accumulator's dtype, and in the kernel
 *    the gemm becomes `copy Cacc[bi*bM, bj*bN] -> acc`; the rest of the block (the epilogue:
 *    any statements after the gemm) runs as before on the result. When that rest is only the
 *    copy of the accumulator to C[bi*bM + r0', bj*bN + c0'] (and the accumulator has the
 *    compute dtype or C's), the kernel goes entirely and the gemm writes C itself (rounded
 *    once to C's dtype, as the copy did). Same meaning: every block's tile is the clipped
 *    sum over the same K range, which is what the big gemm's tile is (rows past A read
 *    zeros in both; Cacc covers every block's tile).
 *
 * Whatever is left is a gemm on the block's tiles: the cpu code generator calls the GEMM
 * library on them per block (packed from the tiles, or the no-pack kernel for small f32).
 * Each decision, and the reason a faster one was declined, is logged at TILE_LOG=info:
 *   INFO cpugemm: FUNC at FILE:LINE: gemm at line L -> ...
 *   INFO cpugemm: FUNC at FILE:LINE: declined: REASON
 */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "opt.h"

typedef struct cg {
    ir_module *m;
    ir_func *f;
    ir_stmt *ks; /* the kernel being lowered */
    bool hoist;  /* step 3 on (TILE_CPUGEMM=block: off) */
} cg;

/* ---------- small helpers ---------- */

static bool is_tile_buf(const ir_buffer *b) { return b && b->role == IR_BUF_TEMP && b->scope != IR_SCOPE_GLOBAL; }

static const char *dt_name(tile_dtype dt) { return tile_dtype_name(dt); }

/* the compute dtype of an accumulator of dtype dt (ir.h: f32 for sub-32-bit floats) */
static tile_dtype compute_dt(tile_dtype dt) {
    if (dt == TILE_DT_F64 || !tile_dtype_is_float(dt)) return dt;
    return TILE_DT_F32;
}
/* src -> dst converts exactly (equal, or a narrow float widened to f32) */
static bool exact_widen(tile_dtype src, tile_dtype dst) {
    if (src == dst) return true;
    return dst == TILE_DT_F32 && tile_dtype_is_float(src) && src != TILE_DT_F64 && src != TILE_DT_F32;
}

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

/* e is affine in v with the constant coefficient *c: sub-expressions free of v may be
 * anything (sizes, parameters, other indices). */
static bool coef_of(const ir_expr *e, const ir_var *v, int64_t *c) {
    if (!e) return false;
    if (!ir_expr_uses_var(e, v)) { *c = 0; return true; }
    switch (e->kind) {
    case IR_E_VAR: *c = 1; return true;
    case IR_E_CAST:
        if (!tile_dtype_is_int(e->dtype) || !tile_dtype_is_int(e->args[0]->dtype) || tile_dtype_bits(e->dtype) < 32) return false;
        return coef_of(e->args[0], v, c);
    case IR_E_UNARY:
        if (e->op != IR_U_NEG || !coef_of(e->args[0], v, c)) return false;
        *c = -*c;
        return true;
    case IR_E_BINARY: {
        int64_t a, b, k;
        if (e->op == IR_B_ADD || e->op == IR_B_SUB) {
            if (!coef_of(e->args[0], v, &a) || !coef_of(e->args[1], v, &b)) return false;
            *c = e->op == IR_B_ADD ? a + b : a - b;
            return true;
        }
        if (e->op == IR_B_MUL) {
            for (int i = 0; i < 2; i++)
                if (!ir_expr_uses_var(e->args[1 - i], v) && ir_const_int_value(e->args[1 - i], &k) && coef_of(e->args[i], v, &a)) {
                    *c = a * k;
                    return true;
                }
        }
        return false;
    }
    default: return false;
    }
}

/* e mentions a variable that can change inside the kernel (loop index, local, block index
 * when `blocks`) */
static bool uses_varying(const ir_expr *e, bool blocks) {
    if (!e) return false;
    if (e->kind == IR_E_VAR && e->var &&
        (e->var->kind == IR_VAR_LOOP || e->var->kind == IR_VAR_LOCAL || (blocks && e->var->kind == IR_VAR_BLOCK)))
        return true;
    if (e->kind == IR_E_LOAD) return true; /* a value read from memory */
    for (int i = 0; i < e->nargs; i++)
        if (uses_varying(e->args[i], blocks)) return true;
    return false;
}

/* ---------- who reads and writes a buffer ---------- */

typedef struct use {
    int reads, writes;
} use;

static void expr_use(const ir_expr *e, const ir_buffer *b, use *u) {
    if (!e) return;
    if (e->kind == IR_E_LOAD && e->buf == b) u->reads++;
    for (int i = 0; i < e->nargs; i++) expr_use(e->args[i], b, u);
}
static void region_exprs_use(const ir_region *r, const ir_buffer *b, use *u) {
    for (int d = 0; d < r->buf->rank; d++) {
        expr_use(r->start[d], b, u);
        expr_use(r->extent[d], b, u);
    }
}
static void stmt_use(const ir_stmt *s, const ir_buffer *b, use *u) {
    if (!s) return;
    for (int i = 0; i < s->nregions && s->regions; i++) region_exprs_use(&s->regions[i], b, u);
    switch (s->kind) {
    case IR_S_COPY:
        if (s->regions[0].buf == b) u->reads++;
        if (s->regions[1].buf == b) u->writes++;
        break;
    case IR_S_FILL:
        if (s->regions[0].buf == b) u->writes++;
        break;
    case IR_S_GEMM:
        if (s->regions[0].buf == b) u->reads++;
        if (s->regions[1].buf == b) u->reads++;
        if (s->regions[2].buf == b) {
            u->writes++;
            if (!s->clear) u->reads++;
        }
        break;
    case IR_S_REDUCE:
        if (s->regions[0].buf == b) u->reads++;
        if (s->regions[1].buf == b) {
            u->writes++;
            if (!s->clear) u->reads++;
        }
        break;
    case IR_S_STORE: case IR_S_ATOMIC:
        if (s->buf == b) {
            u->writes++;
            if (s->kind == IR_S_ATOMIC) u->reads++;
        }
        for (int i = 0; s->buf && i < s->buf->rank; i++) expr_use(s->idx[i], b, u);
        break;
    default: break;
    }
    expr_use(s->value, b, u);
    expr_use(s->cond, b, u);
    expr_use(s->lo, b, u);
    expr_use(s->extent, b, u);
    if (s->kind == IR_S_KERNEL)
        for (int d = 0; d < s->ngrid; d++) expr_use(s->grid[d], b, u);
    for (int i = 0; i < s->nbody && s->body; i++) stmt_use(s->body[i], b, u);
}
static use uses_in(const ir_stmt *s, const ir_buffer *b) {
    use u = {0, 0};
    stmt_use(s, b, &u);
    return u;
}

static ir_stmt *empty_seq(cg *C, tile_loc l) { return ir_seq(C->m, NULL, 0, l); }
static bool is_empty(const ir_stmt *s) { return !s || (s->kind == IR_S_SEQ && s->nbody == 0); }

/* drop empty SEQs from every SEQ (in place) */
static void compact(ir_stmt *s) {
    if (!s) return;
    for (int i = 0; i < s->nbody && s->body; i++) compact(s->body[i]);
    if (s->kind != IR_S_SEQ) return;
    int n = 0;
    for (int i = 0; i < s->nbody; i++)
        if (!is_empty(s->body[i])) s->body[n++] = s->body[i];
    s->nbody = n;
}

static const ir_stmt *single(const ir_stmt *s) {
    while (s && s->kind == IR_S_SEQ && s->nbody == 1) s = s->body[0];
    return s;
}

/* the note of a gemm: `cpu: ...` */
static void set_note(cg *C, ir_stmt *g, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_note(cg *C, ir_stmt *g, const char *fmt, ...) {
    tile_strbuf sb = {0};
    va_list ap;
    va_start(ap, fmt);
    tile_sb_vprintf(&sb, fmt, ap);
    va_end(ap);
    g->note = tile_arena_printf(&C->m->arena, "cpu: %s", sb.data ? sb.data : "");
    tile_sb_free(&sb);
}

/* --explain: the gemm's lowering (its note without "cpu: ") and the faster ones declined */
static void explain_gemm(cg *C, const ir_stmt *g, const char *const fwd_why[2], const char *kfuse_why, const char *hoist_why, const char *direct_why) {
    const ir_func *f = C->f;
    if (g->note) ir_explain_add(f, g->loc, "T.gemm", "cpugemm", IR_DEC_GOT, strncmp(g->note, "cpu: ", 5) ? g->note : g->note + 5, NULL);
    for (int w = 0; w < 2; w++)
        if (fwd_why && fwd_why[w])
            ir_explain_add(f, g->loc, "T.gemm", "cpugemm", IR_DEC_DECLINED, w ? "B read in place from its tensor (no tile copy)" : "A read in place from its tensor (no tile copy)",
                           "%s", fwd_why[w]);
    if (kfuse_why) ir_explain_add(f, g->loc, "T.gemm", "cpugemm", IR_DEC_DECLINED, "one gemm over the whole K loop", "%s", kfuse_why);
    if (hoist_why)
        ir_explain_add(f, g->loc, "T.gemm", "cpugemm", IR_DEC_DECLINED, "one GEMM for the whole grid (A and B packed once, all cores)", "%s", hoist_why);
    if (direct_why) ir_explain_add(f, g->loc, "T.gemm", "cpugemm", IR_DEC_DECLINED, "the grid GEMM writing C itself (no kernel left)", "%s", direct_why);
}

static void log_kernel(cg *C, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void log_kernel(cg *C, const char *fmt, ...) {
    if (!tile_log_enabled(TILE_LOG_INFO)) return;
    tile_strbuf sb = {0};
    va_list ap;
    va_start(ap, fmt);
    tile_sb_vprintf(&sb, fmt, ap);
    va_end(ap);
    tile_log(TILE_LOG_INFO, "cpugemm: %s at %s:%d: %s", C->f->name, opt_loc_file(C->ks->loc), C->ks->loc.line, sb.data ? sb.data : "");
    tile_sb_free(&sb);
}

/* ---------- 1. operand forwarding ---------- */

/* The copy that fills operand `which` (0: A, 1: B) of the gemm in slot `gi` of SEQ `seq`:
 * the nearest earlier statement of the SEQ touching the tile, when it is a copy of a whole
 * tile from a tensor region that maps onto the tile element by element, converting exactly.
 * Returns its slot, or -1 with *why. */
static int feeding_copy(cg *C, ir_stmt *seq, int gi, int which, const char **why) {
    ir_stmt *g = seq->body[gi];
    ir_region *op = &g->regions[which];
    ir_buffer *T = op->buf;
    if (!ir_region_is_whole(op)) { *why = "the gemm reads part of its tile"; return -1; }
    int ci = -1;
    for (int j = gi - 1; j >= 0; j--) {
        ir_stmt *s = seq->body[j];
        if (s->kind == IR_S_COPY && s->regions[1].buf == T) { ci = j; break; }
        use u = uses_in(s, T);
        if (u.reads || u.writes) break;
    }
    if (ci < 0) { *why = "not filled by a copy just before the gemm"; return -1; }
    ir_stmt *cp = seq->body[ci];
    const ir_region *src = &cp->regions[0];
    ir_buffer *X = src->buf;
    if (is_tile_buf(X)) { *why = "copied from another tile buffer"; return -1; }
    if (!ir_region_is_whole(&cp->regions[1])) { *why = "the copy fills part of the tile"; return -1; }
    if (!exact_widen(X->dtype, T->dtype)) {
        *why = tile_arena_printf(&C->m->arena, "the copy converts %s to %s (rounds)", dt_name(X->dtype), dt_name(T->dtype));
        return -1;
    }
    if (uses_in(C->ks->body[0], X).writes) { *why = "the kernel writes the copied tensor"; return -1; }
    /* the source box maps onto the tile element by element: leading extents 1, the last
     * T->rank extents equal the tile's shape */
    if (X->rank < T->rank) { *why = "the source has fewer dimensions than the tile"; return -1; }
    int lead = X->rank - T->rank;
    for (int d = 0; d < X->rank; d++) {
        int64_t e, n;
        if (!ir_const_int_value(src->extent[d], &e)) { *why = "the copy's extents are not constant"; return -1; }
        if (d < lead) {
            if (e != 1) { *why = "the tile's dimensions are not the last ones of the source (a gemm reads a matrix in the last two)"; return -1; }
        } else if (!ir_const_int_value(T->shape[d - lead], &n) || n != e) {
            *why = "the copy reshapes the tile";
            return -1;
        }
    }
    return ci;
}

/* every (copy, gemm) pair of tile T found in the kernel: T's only reads are gemm operands,
 * each fed by its own copy (feeding_copy), and its only writes those copies */
typedef struct fpair { ir_stmt *seq; int gi, which, ci; } fpair;
enum { MAX_PAIRS = 32 };
typedef struct fwd_scan {
    const ir_buffer *T;
    fpair p[MAX_PAIRS];
    int n;
    const char *why;
} fwd_scan;
static void scan_pairs(cg *C, ir_stmt *s, fwd_scan *F) {
    if (!s || F->why) return;
    if (s->kind == IR_S_SEQ) {
        for (int i = 0; i < s->nbody && !F->why; i++) {
            ir_stmt *b = s->body[i];
            if (b && b->kind == IR_S_GEMM) {
                for (int w = 0; w < 2; w++) {
                    if (b->regions[w].buf != F->T) continue;
                    const char *why = NULL;
                    int ci = feeding_copy(C, s, i, w, &why);
                    if (ci < 0) { F->why = why; return; }
                    if (F->n == MAX_PAIRS) { F->why = "too many uses"; return; }
                    F->p[F->n++] = (fpair){s, i, w, ci};
                }
            } else {
                scan_pairs(C, b, F);
            }
        }
        return;
    }
    for (int i = 0; i < s->nbody && s->body; i++) scan_pairs(C, s->body[i], F);
}

/* Forward tile T wherever it is a gemm operand: true when done (every pair), else *why */
static bool forward_tile(cg *C, const ir_buffer *T, const char **why) {
    fwd_scan F = {T, {{0}}, 0, NULL};
    scan_pairs(C, C->ks->body[0], &F);
    if (F.why) { *why = F.why; return false; }
    use ut = uses_in(C->ks->body[0], T);
    /* distinct copies (two operands of one gemm may share one) */
    int ncopies = 0;
    for (int i = 0; i < F.n; i++) {
        bool seen = false;
        for (int j = 0; j < i; j++)
            if (F.p[j].seq == F.p[i].seq && F.p[j].ci == F.p[i].ci) seen = true;
        if (!seen) ncopies++;
    }
    if (ut.reads != F.n || ut.writes != ncopies) { *why = "the tile is used by more than its copies and the gemms"; return false; }
    for (int i = 0; i < F.n; i++) {
        fpair *p = &F.p[i];
        ir_stmt *g = p->seq->body[p->gi];
        ir_region nr = p->seq->body[p->ci]->regions[0];
        nr.loc = g->regions[p->which].loc;
        g->regions[p->which] = nr;
    }
    for (int i = 0; i < F.n; i++) {
        fpair *p = &F.p[i];
        if (is_empty(p->seq->body[p->ci])) continue;
        ir_stmt *cp = p->seq->body[p->ci];
        ir_explain_stmt(C->f, cp, "cpugemm", IR_DEC_GOT, "removed", "the gemm at line %d reads %s in place (the GEMM library packs from it)",
                        p->seq->body[p->gi]->loc.line, cp->regions[0].buf->name);
        p->seq->body[p->ci] = empty_seq(C, cp->loc);
    }
    return true;
}

/* remove the ALLOC of T from the kernel when nothing uses T any more */
static void drop_dead_alloc(cg *C, ir_stmt *s, const ir_buffer *T) {
    if (!s) return;
    for (int i = 0; i < s->nbody && s->body; i++) {
        ir_stmt *b = s->body[i];
        if (b && b->kind == IR_S_ALLOC && b->buf == T && s->kind == IR_S_SEQ) s->body[i] = empty_seq(C, b->loc);
        else drop_dead_alloc(C, b, T);
    }
}

typedef struct gemm_rec {
    ir_stmt *g;
    const char *fwd_why[2]; /* why an operand was not forwarded (NULL: forwarded or a tensor) */
    bool fwd[2];
    const char *kfuse_why;  /* why the enclosing K loop was not fused */
    bool kfused;
    int64_t ksteps;         /* fused steps (0: symbolic) */
    bool ksym;
    int kline;
    bool pipelined;
    int stages;
} gemm_rec;

enum { MAX_GEMMS = 64 };
typedef struct gemms {
    gemm_rec r[MAX_GEMMS];
    int n;
} gemms;

static gemm_rec *rec_of(gemms *G, const ir_stmt *g) {
    for (int i = 0; i < G->n; i++)
        if (G->r[i].g == g) return &G->r[i];
    return NULL;
}

static void forward_all(cg *C, gemms *G) {
    for (int i = 0; i < G->n; i++)
        for (int w = 0; w < 2; w++) {
            gemm_rec *r = &G->r[i];
            ir_buffer *T = r->g->regions[w].buf;
            if (!is_tile_buf(T)) continue;
            const char *why = NULL;
            if (forward_tile(C, T, &why)) {
                r->fwd[w] = true;
                drop_dead_alloc(C, C->ks->body[0], T);
            } else {
                r->fwd_why[w] = why;
            }
        }
}

static void collect_gemms(ir_stmt *s, gemms *G) {
    if (!s) return;
    if (s->kind == IR_S_GEMM && G->n < MAX_GEMMS) {
        memset(&G->r[G->n], 0, sizeof G->r[0]);
        G->r[G->n++].g = s;
    }
    for (int i = 0; i < s->nbody && s->body; i++) collect_gemms(s->body[i], G);
}

/* ---------- 2. K-loop fusion ---------- */

static ir_expr *I64(cg *C, int64_t v, tile_loc l) { return ir_const_int(C->m, TILE_DT_I64, v, l); }
static ir_expr *as_i64(cg *C, ir_expr *e) {
    int64_t k;
    if (ir_const_int_value(e, &k)) return ir_const_int(C->m, TILE_DT_I64, k, e->loc);
    return ir_cast(C->m, TILE_DT_I64, e, e->loc);
}

/* dims of a gemm operand: rows / cols (the last two) */
static int kdim(const ir_region *r, bool first_is_k) { return r->buf->rank - 2 + (first_is_k ? 0 : 1); }

/* loop L's body is one gemm: fuse the loop into it. Returns the gemm replacing L, or NULL
 * with *why. */
static ir_stmt *fuse_k(cg *C, ir_stmt *L, gemm_rec *r, const char **why) {
    ir_stmt *g = (ir_stmt *)single(L->body[0]);
    const ir_var *k = L->var;
    if (g->clear) { *why = "the gemm clears its accumulator every step"; return NULL; }
    const ir_region *A = &g->regions[0], *B = &g->regions[1], *Cr = &g->regions[2];
    for (int d = 0; d < Cr->buf->rank; d++)
        if (ir_expr_uses_var(Cr->start[d], k) || ir_expr_uses_var(Cr->extent[d], k)) { *why = "the accumulator region moves with the loop"; return NULL; }
    if (Cr->buf->dtype != compute_dt(Cr->buf->dtype) || Cr->buf == A->buf || Cr->buf == B->buf) {
        *why = tile_arena_printf(&C->m->arena, "the accumulator is %s (each step would round)", dt_name(Cr->buf->dtype));
        return NULL;
    }
    int ka = kdim(A, g->trans_a), kb = kdim(B, !g->trans_b);
    int64_t s, sb;
    if (!ir_const_int_value(A->extent[ka], &s) || !ir_const_int_value(B->extent[kb], &sb) || s != sb || s <= 0) {
        *why = "the K extent of a step is not a constant";
        return NULL;
    }
    for (int w = 0; w < 2; w++) {
        const ir_region *R = w ? B : A;
        int kd = w ? kb : ka;
        for (int d = 0; d < R->buf->rank; d++) {
            if (ir_expr_uses_var(R->extent[d], k)) { *why = "an operand's extent depends on the loop"; return NULL; }
            if (d == kd) continue;
            if (ir_expr_uses_var(R->start[d], k)) { *why = "an operand's rows or columns move with the loop"; return NULL; }
        }
        int64_t c;
        if (!coef_of(R->start[kd], k, &c) || c != s) {
            *why = tile_arena_printf(&C->m->arena, "%s's K start does not advance by the step's K extent (%lld) per iteration", w ? "B" : "A",
                                     (long long)s);
            return NULL;
        }
    }
    /* the fused gemm: K starts at k = lo, extent s * E */
    tile_loc l = g->loc;
    ir_expr *E = L->extent;
    int64_t ev;
    bool econst = ir_const_int_value(E, &ev);
    /* a symbolic trip count may be 0 (or negative: no step runs): then the K extent is 0,
     * a gemm that adds nothing */
    ir_expr *ext = econst ? I64(C, s * ev, l)
                          : ir_binary(C->m, IR_B_MUL, ir_binary(C->m, IR_B_MAX, as_i64(C, E), I64(C, 0, l), l), I64(C, s, l), l);
    ir_stmt *ng = ir_stmt_new(C->m, IR_S_GEMM, l);
    *ng = *g;
    ng->regions = TILE_NEW_ARRAY(&C->m->arena, ir_region, 3);
    for (int w = 0; w < 3; w++) {
        ng->regions[w] = g->regions[w];
        if (w == 2) continue;
        const ir_region *R = &g->regions[w];
        int kd = w ? kb : ka;
        ir_region nr = *R;
        nr.start = TILE_NEW_ARRAY(&C->m->arena, ir_expr *, R->buf->rank);
        nr.extent = TILE_NEW_ARRAY(&C->m->arena, ir_expr *, R->buf->rank);
        for (int d = 0; d < R->buf->rank; d++) {
            nr.start[d] = R->start[d];
            nr.extent[d] = R->extent[d];
        }
        nr.start[kd] = ir_simplify_int(C->m, subst(C->m, R->start[kd], k, L->lo));
        nr.extent[kd] = ext;
        ng->regions[w] = nr;
    }
    ir_explain_stmt(C->f, L, "cpugemm", IR_DEC_GOT, "fused into its gemm", "the gemm at line %d runs once over K extent %s%s", g->loc.line,
                    econst ? tile_arena_printf(&C->m->arena, "%lld", (long long)(s * ev)) : "(symbolic)",
                    L->loop_kind == IR_LOOP_PIPELINED ? "; stages do not apply on the cpu (the GEMM library streams its packed panels)" : "");
    r->kfused = true;
    r->ksym = !econst;
    r->ksteps = econst ? ev : 0;
    r->kline = L->loc.line;
    r->pipelined = L->loop_kind == IR_LOOP_PIPELINED;
    r->stages = L->num_stages;
    r->g = ng;
    if (econst && ev <= 0) return empty_seq(C, L->loc); /* the loop never runs */
    return ng;
}

static void fuse_walk(cg *C, ir_stmt *s, gemms *G) {
    if (!s) return;
    for (int i = 0; i < s->nbody && s->body; i++) {
        ir_stmt *b = s->body[i];
        if (!b) continue;
        if (b->kind == IR_S_FOR) {
            const ir_stmt *in = single(b->body[0]);
            if (in && in->kind == IR_S_GEMM) {
                gemm_rec *r = rec_of(G, in);
                const char *why = NULL;
                if (b->loop_kind == IR_LOOP_PARALLEL || b->loop_kind == IR_LOOP_VECTORIZED) why = "the loop is parallel";
                ir_stmt *ng = why ? NULL : fuse_k(C, b, r, &why);
                if (ng) {
                    s->body[i] = ng;
                    continue;
                }
                if (r) r->kfuse_why = why;
                ir_explain_stmt(C->f, b, "cpugemm", IR_DEC_DECLINED, "fusion into its gemm", "%s", why);
                continue;
            }
            /* a K loop holding more than the gemm: say why it stays */
            gemms inner = {.n = 0};
            collect_gemms(b->body[0], &inner);
            for (int q = 0; q < inner.n; q++) {
                gemm_rec *r = rec_of(G, inner.r[q].g);
                if (r && !r->kfuse_why && b->loop_kind != IR_LOOP_PARALLEL) {
                    const char *ops = r->fwd_why[0] ? "A stays a tile in the loop" : r->fwd_why[1] ? "B stays a tile in the loop" : "the loop does more than the gemm";
                    r->kfuse_why = tile_arena_printf(&C->m->arena, "%s (line %d)", ops, b->loc.line);
                }
            }
        }
        fuse_walk(C, b, G);
    }
}

/* ---------- 3. grid hoisting ---------- */

/* the top-level statements of the kernel body, nested SEQs seen through: slots in order */
enum { MAX_TOP = 256 };
typedef struct top {
    ir_stmt **slot[MAX_TOP];
    int n;
    bool overflow;
} top;
static void top_walk(ir_stmt **slot, top *T) {
    ir_stmt *s = *slot;
    if (!s) return;
    if (s->kind == IR_S_SEQ) {
        for (int i = 0; i < s->nbody; i++) top_walk(&s->body[i], T);
        return;
    }
    if (T->n == MAX_TOP) { T->overflow = true; return; }
    T->slot[T->n++] = slot;
}

/* block index of the grid dimension d, its extent */
static int grid_dim_of(const ir_stmt *ks, const ir_var *v) {
    for (int d = 0; d < ks->ngrid; d++)
        if (ks->block_vars[d] == v) return d;
    return -1;
}

/* start e = c * bv + rest, with bv the only block index in it (or none: bv NULL) */
static bool block_affine(const ir_stmt *ks, const ir_expr *e, const ir_var **bv, int64_t *c) {
    *bv = NULL;
    *c = 0;
    for (int d = 0; d < ks->ngrid; d++) {
        const ir_var *v = ks->block_vars[d];
        int64_t k;
        if (!v || !ir_expr_uses_var(e, v)) continue;
        if (!coef_of(e, v, &k)) return false;
        if (k == 0) continue;
        if (*bv) return false; /* two block indices */
        *bv = v;
        *c = k;
    }
    return true;
}

/* e with the block index bv set to 0 (the part the grid does not move) */
static ir_expr *rest_of(cg *C, ir_expr *e, const ir_var *bv) {
    if (!bv) return e;
    return ir_simplify_int(C->m, subst(C->m, e, bv, ir_const_int(C->m, bv->dtype, 0, e->loc)));
}

typedef struct hoist {
    ir_stmt *g;
    int gslot;             /* index in the top list */
    ir_buffer *acc;        /* the accumulator tile */
    const ir_var *bi, *bj; /* block indices of C's rows / columns (or NULL) */
    int64_t bM, bN;
    int fill_slot;         /* the fill of the accumulator with 0 (-1: the gemm clears) */
} hoist;

static bool zero_value(const ir_expr *v) {
    while (v && v->kind == IR_E_CAST && v->nargs == 1) v = v->args[0];
    if (!v || v->kind != IR_E_CONST) return false;
    if (tile_dtype_is_float(v->dtype)) return v->fval == 0.0 && !signbit(v->fval);
    return v->ival == 0;
}

/* can the gemm in top slot `gs` be hoisted out of the grid? */
static bool can_hoist(cg *C, top *T, int gs, hoist *h, const char **why) {
    ir_stmt *ks = C->ks, *g = *T->slot[gs];
    memset(h, 0, sizeof *h);
    h->g = g;
    h->gslot = gs;
    h->fill_slot = -1;
    const ir_region *A = &g->regions[0], *B = &g->regions[1], *Cr = &g->regions[2];
    ir_buffer *acc = Cr->buf;
    if (!is_tile_buf(acc) || acc->rank != 2 || !ir_region_is_whole(Cr)) { *why = "the accumulator is not a whole tile buffer of the block"; return false; }
    for (int w = 0; w < 2; w++) {
        const ir_region *R = w ? B : A;
        if (is_tile_buf(R->buf)) {
            *why = tile_arena_printf(&C->m->arena, "operand %c is the tile buffer %s, not a tensor region", "AB"[w], R->buf->name);
            return false;
        }
        if (uses_in(ks->body[0], R->buf).writes) { *why = tile_arena_printf(&C->m->arena, "the kernel writes operand %c", "AB"[w]); return false; }
        if (R->buf == acc) { *why = "the accumulator is an operand"; return false; }
    }
    if (!ir_const_int_value(acc->shape[0], &h->bM) || !ir_const_int_value(acc->shape[1], &h->bN)) { *why = "the accumulator's shape is not constant"; return false; }
    /* the accumulator holds 0 before the gemm (or the gemm clears it) */
    if (!g->clear) {
        int last = -1;
        for (int i = 0; i < gs; i++) {
            ir_stmt *s = *T->slot[i];
            use u = uses_in(s, acc);
            if (u.writes) last = i;
        }
        if (last < 0) { *why = "the accumulator is not cleared before the gemm"; return false; }
        ir_stmt *f = *T->slot[last];
        if (f->kind != IR_S_FILL || f->regions[0].buf != acc || !ir_region_is_whole(&f->regions[0]) || !zero_value(f->value)) {
            *why = "the accumulator's last write before the gemm is not a fill with 0";
            return false;
        }
        h->fill_slot = last;
    }
    /* the regions: rows of A and columns of B follow block indices; the rest does not move */
    int am = A->buf->rank - 2 + (g->trans_a ? 1 : 0), ak = A->buf->rank - 2 + (g->trans_a ? 0 : 1);
    int bk = B->buf->rank - 2 + (g->trans_b ? 1 : 0), bn = B->buf->rank - 2 + (g->trans_b ? 0 : 1);
    for (int w = 0; w < 2; w++) {
        const ir_region *R = w ? B : A;
        int moving = w ? bn : am;
        for (int d = 0; d < R->buf->rank; d++) {
            if (uses_varying(R->extent[d], true)) { *why = "an operand's extent depends on the block"; return false; }
            if (d == moving) continue;
            if (uses_varying(R->start[d], true)) {
                *why = d == (w ? bk : ak) ? "the K range depends on the block (split K)" : "an operand's leading index depends on the block";
                return false;
            }
        }
        const ir_var *bv;
        int64_t c, ext;
        if (!block_affine(ks, R->start[moving], &bv, &c)) { *why = tile_arena_printf(&C->m->arena, "%s start is not c * block index + offset", w ? "B's column" : "A's row"); return false; }
        if (!ir_const_int_value(R->extent[moving], &ext) || ext != (w ? h->bN : h->bM)) { *why = "an operand tile does not match the accumulator"; return false; }
        if (bv && c != ext) {
            *why = tile_arena_printf(&C->m->arena, "%s tiles step by %lld, not by the tile extent %lld", w ? "B's column" : "A's row", (long long)c,
                                     (long long)ext);
            return false;
        }
        ir_expr *rest = rest_of(C, R->start[moving], bv);
        if (uses_varying(rest, true)) { *why = "an operand offset depends on a value computed in the kernel"; return false; }
        if (w) h->bj = bv;
        else h->bi = bv;
    }
    if (h->bi && h->bi == h->bj) { *why = "A's rows and B's columns follow the same block index"; return false; }
    h->acc = acc;
    return true;
}

/* the grid extent of block index v (1 when v is NULL), as i64 */
static ir_expr *grid_ext(cg *C, const ir_var *v, tile_loc l) {
    if (!v) return I64(C, 1, l);
    ir_expr *e = C->ks->grid[grid_dim_of(C->ks, v)];
    int64_t k;
    if (ir_const_int_value(e, &k)) return I64(C, k, l);
    return as_i64(C, e);
}
static ir_expr *mul64(cg *C, ir_expr *a, int64_t b, tile_loc l) {
    int64_t k;
    if (ir_const_int_value(a, &k)) return I64(C, k * b, l);
    return ir_binary(C->m, IR_B_MUL, a, I64(C, b, l), l);
}

/* the hoisted gemm: A, B over the whole grid, into region `out` rows x cols starting at
 * (r0, c0) */
static ir_stmt *grid_gemm(cg *C, hoist *h, ir_buffer *out, ir_expr *r0, ir_expr *c0, ir_expr *Mx, ir_expr *Nx) {
    ir_stmt *g = h->g;
    tile_loc l = g->loc;
    ir_stmt *ng = ir_stmt_new(C->m, IR_S_GEMM, l);
    *ng = *g;
    ng->clear = true;
    ng->note = NULL;
    ng->regions = TILE_NEW_ARRAY(&C->m->arena, ir_region, 3);
    int am = g->regions[0].buf->rank - 2 + (g->trans_a ? 1 : 0);
    int bn = g->regions[1].buf->rank - 2 + (g->trans_b ? 0 : 1);
    for (int w = 0; w < 2; w++) {
        const ir_region *R = &g->regions[w];
        int moving = w ? bn : am;
        ir_region nr = *R;
        nr.start = TILE_NEW_ARRAY(&C->m->arena, ir_expr *, R->buf->rank);
        nr.extent = TILE_NEW_ARRAY(&C->m->arena, ir_expr *, R->buf->rank);
        for (int d = 0; d < R->buf->rank; d++) {
            nr.start[d] = R->start[d];
            nr.extent[d] = R->extent[d];
        }
        nr.start[moving] = rest_of(C, R->start[moving], w ? h->bj : h->bi);
        nr.extent[moving] = w ? Nx : Mx;
        ng->regions[w] = nr;
    }
    ir_region cr;
    cr.buf = out;
    cr.loc = g->regions[2].loc;
    cr.start = TILE_NEW_ARRAY(&C->m->arena, ir_expr *, out->rank);
    cr.extent = TILE_NEW_ARRAY(&C->m->arena, ir_expr *, out->rank);
    for (int d = 0; d < out->rank; d++) {
        cr.start[d] = I64(C, 0, l);
        cr.extent[d] = I64(C, 1, l);
    }
    cr.start[out->rank - 2] = r0;
    cr.start[out->rank - 1] = c0;
    cr.extent[out->rank - 2] = Mx;
    cr.extent[out->rank - 1] = Nx;
    ng->regions[2] = cr;
    return ng;
}

/* `if gi > 0 and gj > 0: s` unless both are positive constants */
static ir_stmt *guard_grid(cg *C, const hoist *h, ir_stmt *s) {
    ir_expr *cond = NULL;
    tile_loc l = s->loc;
    const ir_var *vs[2] = {h->bi, h->bj};
    for (int i = 0; i < 2; i++) {
        if (!vs[i]) continue;
        ir_expr *e = C->ks->grid[grid_dim_of(C->ks, vs[i])];
        int64_t k;
        if (ir_const_int_value(e, &k) && k > 0) continue;
        ir_expr *c = ir_binary(C->m, IR_B_GT, e, ir_const_int(C->m, e->dtype, 0, l), l);
        cond = cond ? ir_binary(C->m, IR_B_AND, cond, c, l) : c;
    }
    if (!cond) return s;
    ir_stmt *iff = ir_stmt_new(C->m, IR_S_IF, l);
    iff->cond = cond;
    iff->body[0] = s;
    iff->body[1] = NULL;
    return iff;
}

/* the start of a block's tile along the rows (d = 0) or columns of acc: bv * ext */
static ir_expr *tile_start(cg *C, const ir_var *bv, int64_t ext, tile_loc l) {
    if (!bv) return ir_const_int(C->m, TILE_DT_I32, 0, l);
    return ir_binary(C->m, IR_B_MUL, ir_var_ref(C->m, (ir_var *)bv, l), ir_const_int(C->m, bv->dtype, ext, l), l);
}

/* is the kernel, after the gemm, only `copy acc -> C[rows, cols]` with C's tile following the
 * same block indices? Then the gemm can write C directly: *out, *r0, *c0 */
static bool direct_out(cg *C, top *T, const hoist *h, ir_buffer **out, ir_expr **r0, ir_expr **c0, const char **why) {
    ir_stmt *ks = C->ks;
    for (int i = 0; i < T->n; i++) {
        ir_stmt *s = *T->slot[i];
        if (i == h->gslot || i == h->fill_slot || s->kind == IR_S_ALLOC) continue;
        if (i < h->gslot || s->kind != IR_S_COPY || i != T->n - 1) { *why = "the block does more after the gemm than copy the tile out (an epilogue)"; return false; }
    }
    if (h->gslot == T->n - 1) { *why = "nothing stores the accumulator"; return false; }
    ir_stmt *cp = *T->slot[T->n - 1];
    if (cp->regions[0].buf != h->acc || !ir_region_is_whole(&cp->regions[0])) { *why = "the copy out does not read the whole accumulator"; return false; }
    const ir_region *D = &cp->regions[1];
    ir_buffer *Cb = D->buf;
    if (is_tile_buf(Cb) || Cb->rank < 2) { *why = "the tile is copied into another tile buffer"; return false; }
    if (Cb == h->g->regions[0].buf || Cb == h->g->regions[1].buf) { *why = "C is also an operand"; return false; }
    if (uses_in(ks->body[0], Cb).writes != 1 || uses_in(ks->body[0], Cb).reads) { *why = "the kernel touches C elsewhere"; return false; }
    if (h->acc->dtype != compute_dt(h->acc->dtype) && h->acc->dtype != Cb->dtype) { *why = "the accumulator's dtype rounds before the copy converts"; return false; }
    for (int d = 0; d < Cb->rank - 2; d++) {
        int64_t e;
        if (!ir_const_int_value(D->extent[d], &e) || e != 1 || uses_varying(D->start[d], true)) { *why = "C's leading index depends on the block"; return false; }
    }
    for (int d = 0; d < 2; d++) {
        const ir_expr *st = D->start[Cb->rank - 2 + d];
        const ir_var *bv;
        int64_t c, e;
        int64_t want = d ? h->bN : h->bM;
        if (!block_affine(ks, st, &bv, &c) || bv != (d ? h->bj : h->bi) || (bv && c != want) || !ir_const_int_value(D->extent[Cb->rank - 2 + d], &e) ||
            e != want) {
            *why = "C's tile does not follow the block indices of A's rows and B's columns";
            return false;
        }
        ir_expr *rest = rest_of(C, D->start[Cb->rank - 2 + d], bv);
        if (uses_varying(rest, true)) { *why = "C's offset depends on a value computed in the kernel"; return false; }
        if (d) *c0 = rest;
        else *r0 = rest;
    }
    /* leading dims of C: only rank-2 C written directly (a leading index would need the
     * gemm's C region to keep it) */
    if (Cb->rank != 2) { *why = "C has more than two dimensions"; return false; }
    *out = Cb;
    return true;
}

static const char *kdesc(cg *C, const gemm_rec *r) {
    if (!r || !r->kfused) return "";
    if (r->ksym) return tile_arena_printf(&C->m->arena, "; the K loop at line %d fused into it%s", r->kline, r->pipelined ? " (pipelined stages: one pass)" : "");
    return tile_arena_printf(&C->m->arena, "; the K loop at line %d (%lld steps%s) fused into it", r->kline, (long long)r->ksteps,
                             r->pipelined ? tile_arena_printf(&C->m->arena, ", %d stage%s", r->stages, r->stages == 1 ? "" : "s") : "");
}

/* the packing of an operand in words */
static const char *pack_desc(cg *C, const ir_stmt *g, int w) {
    const ir_buffer *b = g->regions[w].buf;
    tile_dtype a = g->regions[0].buf->dtype, bb = g->regions[1].buf->dtype;
    const char *conv = "";
    if (a == TILE_DT_BF16 && bb == TILE_DT_BF16) conv = " as bf16 pairs";
    else if (b->dtype != TILE_DT_F32 && b->dtype != TILE_DT_F64) conv = tile_arena_printf(&C->m->arena, " (%s -> f32 while packing)", dt_name(b->dtype));
    return tile_arena_printf(&C->m->arena, "%s%s%s", b->name, is_tile_buf(b) ? " tile" : "", conv);
}
static const char *kernel_desc(const ir_stmt *g) {
    tile_dtype a = g->regions[0].buf->dtype, b = g->regions[1].buf->dtype;
    if (a == TILE_DT_F64 || b == TILE_DT_F64 || g->regions[2].buf->dtype == TILE_DT_F64) return "the f64 loop nest";
    if (!tile_dtype_is_float(a) || !tile_dtype_is_float(b) || !tile_dtype_is_float(g->regions[2].buf->dtype)) return "the integer loop nest (no micro-kernel)";
    if (a == TILE_DT_BF16 && b == TILE_DT_BF16) return "the bf16 micro-kernel (AMX / vdpbf16ps where present)";
    return "the f32 FMA micro-kernel";
}

static ir_stmt *lower_kernel(cg *C, ir_stmt *ks) {
    C->ks = ks;
    gemms G = {.n = 0};
    collect_gemms(ks->body[0], &G);
    if (!G.n) return ks;
    forward_all(C, &G);
    compact(ks->body[0]);
    fuse_walk(C, ks->body[0], &G);
    compact(ks->body[0]);
    /* 3. hoist the top-level gemms */
    top T = {.n = 0};
    top_walk(&ks->body[0], &T);
    hoist H[MAX_GEMMS];
    int nh = 0;
    const char *hwhy[MAX_GEMMS] = {0};
    for (int i = 0; i < T.n && !T.overflow; i++) {
        ir_stmt *s = *T.slot[i];
        if (s->kind != IR_S_GEMM) continue;
        if (!C->hoist) {
            gemm_rec *r = rec_of(&G, s);
            if (r) hwhy[r - G.r] = "TILE_CPUGEMM=block";
            continue;
        }
        gemm_rec *r = rec_of(&G, s);
        const char *why = NULL;
        if (can_hoist(C, &T, i, &H[nh], &why)) nh++;
        else if (r) hwhy[r - G.r] = why;
    }
    for (int i = 0; i < G.n; i++)
        if (!hwhy[i]) {
            bool top_level = false;
            for (int q = 0; q < nh; q++)
                if (H[q].g == G.r[i].g) top_level = true;
            if (!top_level) hwhy[i] = G.r[i].kfuse_why ? G.r[i].kfuse_why : "the gemm is inside a loop or branch of the block";
        }
    ir_stmt *result = ks;
    const char *direct_why = NULL;
    if (nh == 1) {
        ir_buffer *out = NULL;
        ir_expr *r0 = NULL, *c0 = NULL;
        const char *dwhy = NULL;
        if (direct_out(C, &T, &H[0], &out, &r0, &c0, &dwhy)) {
            tile_loc l = H[0].g->loc;
            ir_expr *Mx = mul64(C, grid_ext(C, H[0].bi, l), H[0].bM, l), *Nx = mul64(C, grid_ext(C, H[0].bj, l), H[0].bN, l);
            ir_stmt *ng = grid_gemm(C, &H[0], out, as_i64(C, r0), as_i64(C, c0), Mx, Nx);
            gemm_rec *r = rec_of(&G, H[0].g);
            set_note(C, ng, "one GEMM for the whole grid (%s x %s blocks of %lldx%lld), A and B packed once, on all cores, written to %s%s", 
                     H[0].bi ? H[0].bi->name : "1", H[0].bj ? H[0].bj->name : "1", (long long)H[0].bM, (long long)H[0].bN, out->name, kdesc(C, r));
            explain_gemm(C, ng, r ? r->fwd_why : NULL, NULL, NULL, NULL);
            ir_explain_stmt(C->f, ks, "cpugemm", IR_DEC_GOT, "removed", "its work is the gemm at line %d, now one GEMM over the grid writing %s",
                            H[0].g->loc.line, out->name);
            for (int i = 0; i < T.n; i++) {
                ir_stmt *s = *T.slot[i];
                if (s->kind == IR_S_COPY) ir_explain_stmt(C->f, s, "cpugemm", IR_DEC_GOT, "removed", "the grid GEMM writes %s itself (rounded once)", out->name);
                if (s->kind == IR_S_FILL) ir_explain_stmt(C->f, s, "cpugemm", IR_DEC_GOT, "removed", "the grid GEMM starts from zero");
            }
            log_kernel(C, "gemm at line %d -> one gemm(%s, %s%s -> %s) over the grid on the GEMM library, the kernel's tile copies removed%s",
                       H[0].g->loc.line, pack_desc(C, ng, 0), pack_desc(C, ng, 1), ng->trans_b ? "^T" : "", out->name, kdesc(C, r));
            return guard_grid(C, &H[0], ng);
        }
        if (tile_log_enabled(TILE_LOG_INFO)) log_kernel(C, "the kernel stays after the hoisted gemm: %s", dwhy);
        direct_why = dwhy;
    } else if (nh > 1) {
        direct_why = "the kernel hoists several gemms";
    }
    /* the temp form: alloc Cacc; gemm -> Cacc; the kernel reads its tile */
    ir_stmt **pre = TILE_NEW_ARRAY(&C->m->arena, ir_stmt *, 2 * nh + 1);
    int np = 0;
    for (int q = 0; q < nh; q++) {
        hoist *h = &H[q];
        tile_loc l = h->g->loc;
        ir_expr *Mx = mul64(C, grid_ext(C, h->bi, l), h->bM, l), *Nx = mul64(C, grid_ext(C, h->bj, l), h->bN, l);
        ir_expr **shape = TILE_NEW_ARRAY(&C->m->arena, ir_expr *, 2);
        shape[0] = Mx;
        shape[1] = Nx;
        ir_buffer *acc = ir_buffer_new(C->m, C->f, tile_arena_printf(&C->m->arena, "%s_grid", h->acc->name), h->acc->dtype, IR_SCOPE_GLOBAL, 2, shape,
                                       IR_BUF_TEMP, l);
        ir_stmt *al = ir_stmt_new(C->m, IR_S_ALLOC, l);
        al->buf = acc;
        pre[np++] = al;
        ir_stmt *ng = grid_gemm(C, h, acc, I64(C, 0, l), I64(C, 0, l), Mx, Nx);
        gemm_rec *r = rec_of(&G, h->g);
        set_note(C, ng, "one GEMM for the whole grid (%s x %s blocks of %lldx%lld), A and B packed once, on all cores, into %s; the block reads its tile%s",
                 h->bi ? h->bi->name : "1", h->bj ? h->bj->name : "1", (long long)h->bM, (long long)h->bN, acc->name, kdesc(C, r));
        pre[np++] = guard_grid(C, h, ng);
        explain_gemm(C, ng, r ? r->fwd_why : NULL, NULL, NULL, direct_why);
        /* in the kernel: copy acc_grid[bi*bM, bj*bN] -> acc */
        ir_stmt *cp = ir_stmt_new(C->m, IR_S_COPY, l);
        cp->nregions = 2;
        cp->regions = TILE_NEW_ARRAY(&C->m->arena, ir_region, 2);
        ir_region src;
        src.buf = acc;
        src.loc = l;
        src.start = TILE_NEW_ARRAY(&C->m->arena, ir_expr *, 2);
        src.extent = TILE_NEW_ARRAY(&C->m->arena, ir_expr *, 2);
        src.start[0] = tile_start(C, h->bi, h->bM, l);
        src.start[1] = tile_start(C, h->bj, h->bN, l);
        src.extent[0] = ir_const_int(C->m, TILE_DT_I32, h->bM, l);
        src.extent[1] = ir_const_int(C->m, TILE_DT_I32, h->bN, l);
        cp->regions[0] = src;
        cp->regions[1] = h->g->regions[2];
        cp->note = tile_arena_printf(&C->m->arena, "cpu: the tile of the hoisted gemm (line %d)", h->g->loc.line);
        *T.slot[h->gslot] = cp;
        if (h->fill_slot >= 0) {
            /* the fill is dead when nothing reads the accumulator between it and the gemm */
            bool read = false;
            for (int i = h->fill_slot + 1; i < h->gslot; i++)
                if (uses_in(*T.slot[i], h->acc).reads) read = true;
            if (!read) {
                ir_explain_stmt(C->f, *T.slot[h->fill_slot], "cpugemm", IR_DEC_GOT, "removed", "the grid GEMM at line %d starts from zero", h->g->loc.line);
                *T.slot[h->fill_slot] = empty_seq(C, (*T.slot[h->fill_slot])->loc);
            }
        }
        log_kernel(C, "gemm at line %d -> one gemm(%s, %s%s -> %s) over the grid on the GEMM library before the kernel; the block's epilogue reads its tile%s",
                   h->g->loc.line, pack_desc(C, ng, 0), pack_desc(C, ng, 1), ng->trans_b ? "^T" : "", acc->name, kdesc(C, r));
    }
    compact(ks->body[0]);
    /* notes of the gemms that stay in the block */
    for (int i = 0; i < G.n; i++) {
        gemm_rec *r = &G.r[i];
        bool hoisted = false;
        for (int q = 0; q < nh; q++)
            if (H[q].g == r->g) hoisted = true;
        if (hoisted) continue;
        ir_stmt *g = r->g;
        tile_strbuf why = {0};
        for (int w = 0; w < 2; w++)
            if (r->fwd_why[w]) tile_sb_printf(&why, "%s%c stays a tile (%s)", why.len ? "; " : "", "AB"[w], r->fwd_why[w]);
        if (hwhy[i]) tile_sb_printf(&why, "%snot hoisted out of the grid: %s", why.len ? "; " : "", hwhy[i]);
        set_note(C, g, "per block: %s on %s x %s, both packed per call%s", kernel_desc(g), pack_desc(C, g, 0), pack_desc(C, g, 1), kdesc(C, r));
        explain_gemm(C, g, r->fwd_why, r->kfused ? NULL : r->kfuse_why, hwhy[i] && hwhy[i] != r->kfuse_why ? hwhy[i] : r->kfused ? NULL : hwhy[i], NULL);
        log_kernel(C, "gemm at line %d -> per block (%s)%s; declined: one GEMM over the grid: %s", g->loc.line, kernel_desc(g), kdesc(C, r),
                   why.data ? why.data : "?");
        tile_sb_free(&why);
    }
    if (!nh) return result;
    pre[np++] = ks;
    return ir_seq(C->m, pre, np, ks->loc);
}

static ir_stmt *rewrite(cg *C, ir_stmt *s) {
    if (!s) return s;
    switch (s->kind) {
    case IR_S_SEQ: case IR_S_IF: case IR_S_FOR: case IR_S_WHILE:
        for (int i = 0; i < s->nbody; i++) s->body[i] = rewrite(C, s->body[i]);
        return s;
    case IR_S_KERNEL: return lower_kernel(C, s);
    default: return s;
    }
}

/* TILE_CPUGEMM: unset, the lowering above; `0`: the pass is off (every gemm per block on
 * its tiles, as written); `block`: no hoisting (gemms stay in their blocks, forwarded and
 * K-fused). For comparisons; read with getenv each time (bench programs switch it). */
static int run_cpugemm(ir_module *m, ir_func *f, tile_diags *d) {
    (void)d;
    if (f->form != IR_FORM_TILE || !f->body) return 0;
    const char *e = tb_opt_str(f->opts, TB_OPT_cpugemm); /* on, off or block */
    if (e && !strcmp(e, "off")) return 0;
    cg C = {m, f, NULL, !(e && !strcmp(e, "block"))};
    f->body = rewrite(&C, f->body);
    return 0;
}

const opt_pass opt_pass_cpugemm = {
    "cpugemm",
    "tile form: every T.gemm lowered for the CPU: operands read from the tensors, K loops fused, whole-grid GEMMs hoisted onto the GEMM library",
    run_cpugemm,
};
