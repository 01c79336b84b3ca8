/* tilegemm.c — the `tilegemm` pass (cpu pipeline): a tile-form GEMM kernel becomes one GEMM.
 *
 * In:  a verified tile-form ir_func.
 * Out: the same function where every kernel of the canonical blocked-GEMM shape
 *
 *     kernel grid (..., gj, ..., gi, ...) as (..., bj, ..., bi, ...):
 *       alloc As[bM, bK]; alloc Bs[bK, bN] (or [bN, bK] with transpose_B); alloc Cl[bM, bN]
 *       fill Cl = 0                                   (T.clear)
 *       for k in serial/pipelined(0, E):
 *         copy A[bi * bM : +bM, k * bK : +bK] -> As   (either order of the two copies)
 *         copy B[k * bK : +bK, bj * bN : +bN] -> Bs   (B[bj * bN, k * bK] with transpose_B)
 *         gemm As, Bs -> Cl                           (no transpose_A, no clear_accum)
 *       copy Cl -> C[bi * bM : +bM, bj * bN : +bN]
 *
 * (examples/gemm.tl) is replaced by the single statement
 *
 *     gemm A[0 : +gi*bM, 0 : +E*bK], B[0 : +E*bK, 0 : +gj*bN] -> C[0 : +gi*bM, 0 : +gj*bN], clear
 *
 * outside any kernel, which the cpu code generator hands whole to the packed GEMM library
 * (src/kernels, all cores): A and B are packed once instead of once per block and K step.
 *
 * Same meaning. Each block computes its C tile as the sum over the K steps of the clipped
 * tiles (the copies read zero outside A and B, and zeros add nothing), then stores the tile
 * clipped to C; the blocks together cover C[0 : gi*bM, 0 : gj*bN] ∩ C exactly once. The one
 * GEMM computes the same sums over k in [0, E*bK) ∩ [0, K) (regions clip the same way) and
 * writes the same elements. The shared and fragment buffers are private to the kernel and
 * touched by nothing else, so dropping them changes nothing visible. Sums are in the
 * accumulator's dtype; only the order of the k terms can change (reassociation, as any
 * GEMM of a code generator: docs/tileopt.md). Required so that the rewrite is exact:
 *   - the dtypes of A and As, B and Bs, C and Cl are equal (the copies convert nothing);
 *   - C is neither A nor B;
 *   - the grid extents, the loop bounds and every tile shape are constants (-D binds them),
 *     grid dimensions other than gi and gj are 1; gi, gj, E > 0.
 * Anything else is left alone; each decision is logged at TILE_LOG=info (and the reason a
 * kernel is not rewritten at TILE_LOG=debug). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "opt.h"

typedef struct tg {
    ir_module *m;
    ir_func *f;
} tg;

static const ir_expr *strip_cast(const ir_expr *e) {
    while (e && e->kind == IR_E_CAST && e->nargs == 1) e = e->args[0];
    return e;
}

/* e is `v * c` (or `c * v`, or `v` with c = 1) for a variable v: *v and *c set */
static bool scaled_var(const ir_expr *e, const ir_var **v, int64_t *c) {
    e = strip_cast(e);
    if (!e) return false;
    if (e->kind == IR_E_VAR) { *v = e->var; *c = 1; return true; }
    if (e->kind != IR_E_BINARY || e->op != IR_B_MUL || e->nargs != 2) return false;
    for (int i = 0; i < 2; i++) {
        const ir_expr *a = strip_cast(e->args[i]);
        int64_t k;
        if (a && a->kind == IR_E_VAR && ir_const_int_value(e->args[1 - i], &k)) {
            *v = a->var;
            *c = k;
            return true;
        }
    }
    return false;
}

/* the constant dims of a rank-2 buffer */
static bool dims2(const ir_buffer *b, int64_t *r, int64_t *c) {
    return b->rank == 2 && ir_const_int_value(b->shape[0], r) && ir_const_int_value(b->shape[1], c) && *r > 0 && *c > 0;
}

/* region r is the whole of its (rank-2, constant-shape) buffer */
static bool whole(const ir_region *r) {
    int64_t n0, n1, v;
    if (!dims2(r->buf, &n0, &n1)) return false;
    for (int d = 0; d < 2; d++) {
        if (!ir_const_int_value(r->start[d], &v) || v != 0) return false;
        if (!ir_const_int_value(r->extent[d], &v) || v != (d ? n1 : n0)) return false;
    }
    return true;
}

/* region r of a rank-2 buffer starts at (v0 * c0, v1 * c1) with extents equal to the shape
 * of `like` (a tile buffer) */
static bool tile_region(const ir_region *r, const ir_buffer *like, const ir_var **v0, int64_t *c0, const ir_var **v1, int64_t *c1) {
    int64_t n0, n1, e0, e1;
    if (r->buf->rank != 2 || !dims2(like, &n0, &n1)) return false;
    if (!ir_const_int_value(r->extent[0], &e0) || !ir_const_int_value(r->extent[1], &e1) || e0 != n0 || e1 != n1) return false;
    return scaled_var(r->start[0], v0, c0) && scaled_var(r->start[1], v1, c1);
}

/* statements of s with nested SEQs flattened (at most max) */
static int flatten(ir_stmt *s, ir_stmt **out, int n, int max) {
    if (!s) return n;
    if (s->kind == IR_S_SEQ) {
        for (int i = 0; i < s->nbody && n <= max; i++) n = flatten(s->body[i], out, n, max);
        return n;
    }
    if (n < max) out[n] = s;
    return n + 1;
}

static ir_region whole_region(ir_module *m, ir_buffer *b, int64_t e0, int64_t e1, tile_loc loc) {
    ir_region r;
    r.buf = b;
    r.loc = loc;
    r.start = TILE_NEW_ARRAY(&m->arena, ir_expr *, 2);
    r.extent = TILE_NEW_ARRAY(&m->arena, ir_expr *, 2);
    r.start[0] = ir_const_int(m, TILE_DT_I64, 0, loc);
    r.start[1] = ir_const_int(m, TILE_DT_I64, 0, loc);
    r.extent[0] = ir_const_int(m, TILE_DT_I64, e0, loc);
    r.extent[1] = ir_const_int(m, TILE_DT_I64, e1, loc);
    return r;
}

#define REJECT(why) do { *reason = (why); return NULL; } while (0)

static ir_stmt *match_kernel(tg *T, ir_stmt *ks, const char **reason) {
    ir_module *m = T->m;
    enum { MAXS = 8 };
    ir_stmt *st[MAXS + 1];
    int n = flatten(ks->body[0], st, 0, MAXS);
    if (n > MAXS) REJECT("the kernel body has more statements than the GEMM pattern");
    ir_stmt *fill = NULL, *loop = NULL, *out = NULL;
    int nalloc = 0;
    for (int i = 0; i < n; i++) {
        ir_stmt *s = st[i];
        if (s->kind == IR_S_ALLOC && !fill && !loop) nalloc++;
        else if (s->kind == IR_S_FILL && !fill && !loop) fill = s;
        else if (s->kind == IR_S_FOR && fill && !loop) loop = s;
        else if (s->kind == IR_S_COPY && loop && !out) out = s;
        else REJECT("the kernel body is not alloc*, fill (T.clear), a K loop, a copy out");
    }
    if (!fill || !loop || !out || nalloc != 3) REJECT("the kernel body is not alloc*3, fill, a K loop, a copy out");
    if (loop->loop_kind != IR_LOOP_SERIAL && loop->loop_kind != IR_LOOP_PIPELINED) REJECT("the K loop is not serial or pipelined");
    int64_t lo, E;
    if (!ir_const_int_value(loop->lo, &lo) || lo != 0 || !ir_const_int_value(loop->extent, &E) || E <= 0)
        REJECT("the K loop does not run over constant bounds from 0");
    ir_stmt *ls[MAXS + 1];
    int nl = flatten(loop->body[0], ls, 0, MAXS);
    if (nl != 3) REJECT("the K loop body is not two copies and a gemm");
    ir_stmt *cA = NULL, *cB = NULL, *g = NULL;
    for (int i = 0; i < 3; i++) {
        if (ls[i]->kind == IR_S_GEMM && i == 2) g = ls[i];
        else if (ls[i]->kind != IR_S_COPY) REJECT("the K loop body is not two copies then a gemm");
    }
    if (!g) REJECT("the K loop body does not end with the gemm");
    if (g->trans_a || g->clear) REJECT("the gemm transposes A or clears its accumulator");
    if (!whole(&g->regions[0]) || !whole(&g->regions[1]) || !whole(&g->regions[2])) REJECT("the gemm's operands are not whole tile buffers");
    ir_buffer *As = g->regions[0].buf, *Bs = g->regions[1].buf, *Cl = g->regions[2].buf;
    if (As == Bs || As == Cl || Bs == Cl) REJECT("the gemm's tile buffers are not distinct");
    for (int i = 0; i < 2; i++) {
        ir_stmt *c = ls[i];
        if (!whole(&c->regions[1])) REJECT("a K-loop copy does not fill a whole tile buffer");
        if (c->regions[1].buf == As) cA = c;
        else if (c->regions[1].buf == Bs) cB = c;
    }
    if (!cA || !cB) REJECT("the K-loop copies do not fill the gemm's A and B tiles");
    /* the three allocations are exactly As, Bs, Cl */
    for (int i = 0; i < n; i++)
        if (st[i]->kind == IR_S_ALLOC && st[i]->buf != As && st[i]->buf != Bs && st[i]->buf != Cl)
            REJECT("the kernel allocates a buffer other than the gemm's tiles");
    if (!whole(&fill->regions[0]) || fill->regions[0].buf != Cl) REJECT("the fill is not a T.clear of the accumulator");
    const ir_expr *fv = strip_cast(fill->value);
    if (!fv || fv->kind != IR_E_CONST || fv->fval != 0.0 || signbit(fv->fval) || fv->ival != 0) REJECT("the accumulator is not cleared to 0");
    if (!whole(&out->regions[0]) || out->regions[0].buf != Cl) REJECT("the copy out does not read the whole accumulator");
    ir_buffer *A = cA->regions[0].buf, *B = cB->regions[0].buf, *C = out->regions[1].buf;
    if (A->dtype != As->dtype || B->dtype != Bs->dtype || C->dtype != Cl->dtype) REJECT("a copy converts between dtypes");
    if (C == A || C == B) REJECT("C is also an input");
    if (A->scope != IR_SCOPE_GLOBAL || B->scope != IR_SCOPE_GLOBAL || C->scope != IR_SCOPE_GLOBAL) REJECT("A, B or C is not a global tensor");
    int64_t bM, bK, bK2, bN, r0, r1;
    if (!dims2(As, &bM, &bK) || !dims2(Cl, &r0, &bN) || r0 != bM) REJECT("the tile shapes do not agree");
    bool tb = g->trans_b;
    if (!dims2(Bs, &r0, &r1)) REJECT("B's tile shape is not constant");
    bK2 = tb ? r1 : r0;
    if (bK2 != bK || (tb ? r0 : r1) != bN) REJECT("the tile shapes do not agree");
    const ir_var *va0, *va1, *vb0, *vb1, *vc0, *vc1;
    int64_t ka0, ka1, kb0, kb1, kc0, kc1;
    if (!tile_region(&cA->regions[0], As, &va0, &ka0, &va1, &ka1)) REJECT("A's tile is not A[bi * bM, k * bK]");
    if (!tile_region(&cB->regions[0], Bs, &vb0, &kb0, &vb1, &kb1)) REJECT("B's tile is not B[k * bK, bj * bN]");
    if (!tile_region(&out->regions[1], Cl, &vc0, &kc0, &vc1, &kc1)) REJECT("C's tile is not C[bi * bM, bj * bN]");
    const ir_var *k = loop->var, *bi = vc0, *bj = vc1;
    const ir_var *bk_k = tb ? vb1 : vb0, *bj_b = tb ? vb0 : vb1;
    int64_t kbk = tb ? kb1 : kb0, kbn = tb ? kb0 : kb1;
    if (va1 != k || ka1 != bK || bk_k != k || kbk != bK) REJECT("the K-loop copies do not step by the tile's K extent");
    if (va0 != bi || ka0 != bM || kc0 != bM) REJECT("A's and C's tile rows do not follow the same block index");
    if (bj_b != bj || kbn != bN || kc1 != bN) REJECT("B's and C's tile columns do not follow the same block index");
    int gi = -1, gj = -1;
    int64_t gv[3];
    for (int d = 0; d < ks->ngrid; d++) {
        if (!ir_const_int_value(ks->grid[d], &gv[d]) || gv[d] <= 0) REJECT("the grid is not constant and positive");
        if (ks->block_vars[d] == bi) gi = d;
        else if (ks->block_vars[d] == bj) gj = d;
        else if (gv[d] != 1) REJECT("a grid dimension other than the GEMM's has extent > 1");
    }
    if (gi < 0 || gj < 0 || gi == gj) REJECT("the tile rows and columns do not follow two grid dimensions");
    ir_stmt *gm = ir_stmt_new(m, IR_S_GEMM, g->loc);
    gm->regions = TILE_NEW_ARRAY(&m->arena, ir_region, 3);
    gm->nregions = 3;
    int64_t Mx = gv[gi] * bM, Nx = gv[gj] * bN, Kx = E * bK;
    gm->regions[0] = whole_region(m, A, Mx, Kx, g->loc);
    gm->regions[1] = tb ? whole_region(m, B, Nx, Kx, g->loc) : whole_region(m, B, Kx, Nx, g->loc);
    gm->regions[2] = whole_region(m, C, Mx, Nx, g->loc);
    gm->trans_a = false;
    gm->trans_b = tb;
    gm->clear = true;
    if (tile_log_enabled(TILE_LOG_INFO))
        tile_log(TILE_LOG_INFO,
                 "tilegemm: kernel at %s:%d is a blocked GEMM (%lldx%lldx%lld tiles, grid %lldx%lld, %lld K steps) -> "
                 "one gemm(%s, %s%s -> %s) of %lldx%lldx%lld on the GEMM library",
                 opt_loc_file(ks->loc), ks->loc.line, (long long)bM, (long long)bN, (long long)bK, (long long)gv[gi], (long long)gv[gj],
                 (long long)E, A->name, B->name, tb ? "^T" : "", C->name, (long long)Mx, (long long)Nx, (long long)Kx);
    return gm;
}

static ir_stmt *rewrite(tg *T, ir_stmt *s) {
    if (!s) return s;
    switch (s->kind) {
    case IR_S_SEQ:
        for (int i = 0; i < s->nbody; i++) s->body[i] = rewrite(T, s->body[i]);
        return s;
    case IR_S_IF: case IR_S_FOR: case IR_S_WHILE:
        for (int i = 0; i < s->nbody; i++) s->body[i] = rewrite(T, s->body[i]);
        return s;
    case IR_S_KERNEL: {
        const char *why = NULL;
        ir_stmt *g = match_kernel(T, s, &why);
        if (g) return g;
        if (tile_log_enabled(TILE_LOG_DEBUG))
            tile_log(TILE_LOG_DEBUG, "tilegemm: kernel at %s:%d left alone: %s", opt_loc_file(s->loc), s->loc.line, why ? why : "?");
        return s;
    }
    default: return s;
    }
}

static int run_tilegemm(ir_module *m, ir_func *f, tile_diags *d) {
    (void)d;
    if (f->form != IR_FORM_TILE || !f->body) return 0;
    if (tile_env("TILE_NO_TILEGEMM")) return 0;
    tg T = {m, f};
    f->body = rewrite(&T, f->body);
    return 0;
}

const opt_pass opt_pass_tilegemm = {
    "tilegemm",
    "tile form: a blocked-GEMM kernel (clear, K loop of tile copies + gemm, copy out) -> one gemm on the GEMM library",
    run_tilegemm,
};
