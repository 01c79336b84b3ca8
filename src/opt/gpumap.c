/* gpumap.c — the `gpumap` pass of the cuda pipeline: puts the plain form's schedule (the
 * decisions of `autoschedule`) onto the GPU's grid of blocks and threads.
 *
 * In:  a plain-form ir_func after `autoschedule` (contractions are whole-region IR_S_GEMMs,
 *      dependence-free outer loops are PARALLEL, inner ones VECTORIZED).
 * Out: the same function where, at the top level,
 *   - a GEMM (leading batch dimensions of extent 1), alone or as the only statement of a
 *     parallel batch loop, becomes the tile form a programmer would write: a kernel over
 *     (N/BN, M/BM[, batch]) blocks staging BM x BK and BK x BN tiles of A and B in shared
 *     memory with T.copy inside a T.Pipelined K loop, a fragment accumulator in C's compute
 *     dtype (f32 for 16-bit and 8-bit floats), T.gemm on the tiles and one T.copy of the
 *     fragment to C. When an operand is a part of its matrix (seed_matmul_002: B[0:K, 0:N] of
 *     a larger B), the T.copy's become element copies in T.Parallel loops guarded by the
 *     region's bounds (a clipped T.copy would read the rest of the buffer). The code
 *     generator then takes its tensor-core path where the dtypes allow (bf16/f16/fp8 in,
 *     f32 accumulation) and its SIMT path otherwise. The tile sizes
 *     come from the dtypes (table below; TILE_CUDA_GEMM_TILE=BMxBNxBKxSTAGESxTHREADS
 *     overrides them);
 *   - a PARALLEL loop (whose body has no tile op, no allocation, no break, and only scalar
 *     locals of its own) becomes a kernel: 256 threads a block, each block a slice of the
 *     loop's iterations (a T.Parallel over them); when its body is one dependence-free loop
 *     whose bounds do not depend on the outer index, the two loops form one T.Parallel nest
 *     (one row a block when rows are long), so neighbouring threads touch neighbouring
 *     elements;
 *   - everything else stays as it is (a one-thread launch: correct, slow), with the reason
 *     logged at TILE_LOG=info. Kernels must be top-level statements, so nested top-level
 *     sequences are spliced into one.
 * Same meaning: the tiles hold zeros outside the GEMM's regions (T.copy clips at the
 * buffers' bounds, which are the regions' for whole matrices; the guarded copies at the
 * regions' bounds), so they add nothing; the k order of every C element is unchanged under
 * the interpreter; the parallel loops' iterations are independent (deps.c). `tile run --target interp+cuda` runs
 * the result in the interpreter. See docs/tileopt.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opt.h"

typedef struct gm {
    ir_module *m;
    ir_func *f;
    int ntiles; /* names of the buffers made */
} gm;

static ir_expr *ci(gm *g, int64_t v, tile_loc l) { return ir_const_int(g->m, TILE_DT_I32, v, l); }
static ir_expr *as_i32(gm *g, ir_expr *e) { return ir_cast(g->m, TILE_DT_I32, e, e->loc); }
static ir_expr *bin(gm *g, ir_binop op, ir_expr *a, ir_expr *b) { return ir_binary(g->m, op, as_i32(g, a), as_i32(g, b), a->loc); }
static ir_expr *ceildiv(gm *g, ir_expr *a, int64_t c) {
    if (c == 1) return as_i32(g, a);
    return bin(g, IR_B_FLOORDIV, bin(g, IR_B_ADD, a, ci(g, c - 1, a->loc)), ci(g, c, a->loc));
}


/* Only constants and symbolic sizes (what the host can evaluate for a grid). */
static bool host_expr(const ir_expr *e) {
    if (!e) return true;
    if (e->kind == IR_E_LOAD) return false;
    if (e->kind == IR_E_VAR && e->var->kind != IR_VAR_SIZE) return false;
    for (int i = 0; i < e->nargs; i++)
        if (!host_expr(e->args[i])) return false;
    return true;
}

/* e with v replaced by r (new nodes where something changes). */
static ir_expr *subst(gm *g, ir_expr *e, const ir_var *v, ir_expr *r) {
    if (!e) return e;
    if (e->kind == IR_E_VAR) return e->var == v ? r : e;
    if (!ir_expr_uses_var(e, v)) return e;
    ir_expr *n = TILE_NEW(&g->m->arena, ir_expr);
    *n = *e;
    n->args = TILE_NEW_ARRAY(&g->m->arena, ir_expr *, e->nargs);
    for (int i = 0; i < e->nargs; i++) n->args[i] = subst(g, e->args[i], v, r);
    return n;
}

static ir_stmt *single(ir_stmt *s) {
    while (s && s->kind == IR_S_SEQ && s->nbody == 1 && s->body) s = s->body[0];
    return s;
}

/* ---------- GEMM -> tile form ---------- */
typedef struct gemm_tile {
    int bm, bn, bk, stages, threads;
} gemm_tile;

static gemm_tile pick_tile(const ir_func *f, tile_dtype a, tile_dtype b) {
    gemm_tile t = {64, 64, 32, 2, 128}; /* f32: the SIMT path */
    int bits = tile_dtype_bits(a) > tile_dtype_bits(b) ? tile_dtype_bits(a) : tile_dtype_bits(b);
    bool fl = tile_dtype_is_float(a) && tile_dtype_is_float(b);
    /* the configurations of the sm_90a lowering's measurements (docs/backends-gpu.md, "Hopper"):
     * two consumer warpgroups; they also fit the portable lowering's shared memory */
    if (fl && bits == 16) t = (gemm_tile){128, 256, 64, 4, 256};      /* bf16 / f16 */
    else if (fl && bits == 8) t = (gemm_tile){128, 128, 128, 6, 256}; /* fp8 */
    else if (bits >= 64) t = (gemm_tile){64, 64, 16, 2, 128};
    const char *e = tb_opt_str(f->opts, TB_OPT_cuda_gemm_tile);
    gemm_tile o;
    if (e && sscanf(e, "%dx%dx%dx%dx%d", &o.bm, &o.bn, &o.bk, &o.stages, &o.threads) == 5 && o.bm > 0 && o.bn > 0 && o.bk > 0 && o.stages > 0 &&
        o.threads > 0 && o.threads <= 1024)
        t = o;
    return t;
}

/* Is dimension d of region r the whole dimension of its buffer? */
static bool whole_dim(const ir_region *r, int d) {
    int64_t s, a, b;
    if (!ir_const_int_value(r->start[d], &s) || s != 0) return false;
    if (ir_const_int_value(r->extent[d], &a) && ir_const_int_value(r->buf->shape[d], &b)) return a == b;
    return ir_expr_equal(r->extent[d], r->buf->shape[d]);
}

static ir_buffer *new_buf(gm *g, const char *what, tile_dtype dt, ir_scope sc, int64_t d0, int64_t d1, tile_loc l) {
    ir_expr *shape[2] = {ci(g, d0, l), ci(g, d1, l)};
    ir_expr **sh = TILE_NEW_ARRAY(&g->m->arena, ir_expr *, 2);
    memcpy(sh, shape, sizeof shape);
    const char *name = tile_arena_printf(&g->m->arena, "%s%d", what, g->ntiles);
    return ir_buffer_new(g->m, g->f, name, dt, sc, 2, sh, IR_BUF_TEMP, l);
}

static ir_stmt *alloc_of(gm *g, ir_buffer *b) {
    ir_stmt *s = ir_stmt_new(g->m, IR_S_ALLOC, b->loc);
    s->buf = b;
    return s;
}

/* The whole of a 2-D tile buffer. */
static ir_region whole(gm *g, ir_buffer *b) {
    ir_region r = {b, TILE_NEW_ARRAY(&g->m->arena, ir_expr *, 2), TILE_NEW_ARRAY(&g->m->arena, ir_expr *, 2), b->loc};
    for (int d = 0; d < 2; d++) {
        r.start[d] = ci(g, 0, b->loc);
        r.extent[d] = b->shape[d];
    }
    return r;
}

/* A box of src's buffer: its batch dimensions as in src (v -> vr), the last two starting
 * at s0, s1 with extents e0, e1. */
static ir_region box(gm *g, const ir_region *src, const ir_var *v, ir_expr *vr, ir_expr *s0, int64_t e0, ir_expr *s1, int64_t e1) {
    int rank = src->buf->rank;
    ir_region r = {src->buf, TILE_NEW_ARRAY(&g->m->arena, ir_expr *, rank), TILE_NEW_ARRAY(&g->m->arena, ir_expr *, rank), src->loc};
    for (int d = 0; d < rank - 2; d++) {
        r.start[d] = v ? subst(g, src->start[d], v, vr) : src->start[d];
        r.extent[d] = src->extent[d];
    }
    r.start[rank - 2] = s0;
    r.extent[rank - 2] = ci(g, e0, src->loc);
    r.start[rank - 1] = s1;
    r.extent[rank - 1] = ci(g, e1, src->loc);
    return r;
}

static ir_stmt *tile_op(gm *g, ir_stmt_kind k, int nreg, tile_loc l) {
    ir_stmt *s = ir_stmt_new(g->m, k, l);
    s->regions = TILE_NEW_ARRAY(&g->m->arena, ir_region, nreg);
    s->nregions = nreg;
    return s;
}

/* ---------- guarded element copies (operands that are parts of matrices) ---------- */
static tile_dtype store_type(tile_dtype dt) { return tile_dtype_is_float(dt) && tile_dtype_bits(dt) < 32 ? TILE_DT_F32 : dt; }

static ir_expr *zero_of(gm *g, tile_dtype dt, tile_loc l) {
    return tile_dtype_is_float(dt) ? ir_const_float(g->m, dt, 0.0, l) : ir_const_int(g->m, dt, 0, l);
}

static ir_stmt *par2(gm *g, int64_t n0, int64_t n1, ir_var **iv, ir_var **jv, ir_stmt *body, tile_loc l) {
    *iv = ir_var_new(g->m, g->f, tile_arena_printf(&g->m->arena, "ti%d", g->ntiles), IR_VAR_LOOP, TILE_DT_I32, l);
    *jv = ir_var_new(g->m, g->f, tile_arena_printf(&g->m->arena, "tj%d", g->ntiles), IR_VAR_LOOP, TILE_DT_I32, l);
    ir_stmt *in = ir_stmt_new(g->m, IR_S_FOR, l), *out = ir_stmt_new(g->m, IR_S_FOR, l);
    in->var = *jv;
    in->lo = ci(g, 0, l);
    in->extent = ci(g, n1, l);
    in->loop_kind = IR_LOOP_PARALLEL;
    in->body = TILE_NEW_ARRAY(&g->m->arena, ir_stmt *, 1);
    in->body[0] = body;
    in->nbody = 1;
    out->var = *iv;
    out->lo = ci(g, 0, l);
    out->extent = ci(g, n0, l);
    out->loop_kind = IR_LOOP_PARALLEL;
    out->par_group_depth = 2;
    out->body = TILE_NEW_ARRAY(&g->m->arena, ir_stmt *, 1);
    out->body[0] = in;
    out->nbody = 1;
    return out;
}

/* The index vector into region r of element (row, col) of its matrix, and the condition
 * that (row, col) lies inside the region. */
static ir_expr **region_index(gm *g, const ir_region *r, const ir_var *bv, ir_expr *bvr, ir_expr *row, ir_expr *col, ir_expr **inside) {
    int rank = r->buf->rank;
    ir_expr **idx = TILE_NEW_ARRAY(&g->m->arena, ir_expr *, rank);
    for (int d = 0; d < rank - 2; d++) idx[d] = bv ? subst(g, r->start[d], bv, bvr) : r->start[d];
    ir_expr *s0 = bv ? subst(g, r->start[rank - 2], bv, bvr) : r->start[rank - 2], *s1 = bv ? subst(g, r->start[rank - 1], bv, bvr) : r->start[rank - 1];
    ir_expr *e0 = bv ? subst(g, r->extent[rank - 2], bv, bvr) : r->extent[rank - 2], *e1 = bv ? subst(g, r->extent[rank - 1], bv, bvr) : r->extent[rank - 1];
    idx[rank - 2] = bin(g, IR_B_ADD, s0, row);
    idx[rank - 1] = bin(g, IR_B_ADD, s1, col);
    *inside = ir_binary(g->m, IR_B_AND, bin(g, IR_B_LT, row, e0), bin(g, IR_B_LT, col, e1), row->loc);
    return idx;
}

/* dst (a BM x BK style tile) = the part of region src at tile origin (r0, c0); elements
 * outside the region are 0. */
static ir_stmt *guarded_load(gm *g, const ir_region *src, const ir_var *bv, ir_expr *bvr, ir_expr *r0, ir_expr *c0, ir_buffer *dst, tile_loc l) {
    int64_t n0, n1;
    ir_const_int_value(dst->shape[0], &n0);
    ir_const_int_value(dst->shape[1], &n1);
    ir_stmt *st = ir_stmt_new(g->m, IR_S_STORE, l);
    ir_var *iv, *jv;
    ir_stmt *loops = par2(g, n0, n1, &iv, &jv, st, l);
    ir_expr *i = ir_var_ref(g->m, iv, l), *j = ir_var_ref(g->m, jv, l), *inside;
    ir_expr **idx = region_index(g, src, bv, bvr, bin(g, IR_B_ADD, r0, i), bin(g, IR_B_ADD, c0, j), &inside);
    tile_dtype T = store_type(dst->dtype);
    ir_expr *v = ir_cast(g->m, T, ir_load(g->m, src->buf, idx, l), l);
    st->buf = dst;
    st->idx = TILE_NEW_ARRAY(&g->m->arena, ir_expr *, 2);
    st->idx[0] = i;
    st->idx[1] = j;
    st->value = ir_select(g->m, inside, v, zero_of(g, T, l), l);
    return loops;
}

/* The part of tile src (at tile origin (r0, c0)) inside region dst, stored there. */
static ir_stmt *guarded_store(gm *g, ir_buffer *src, const ir_region *dst, const ir_var *bv, ir_expr *bvr, ir_expr *r0, ir_expr *c0, tile_loc l) {
    int64_t n0, n1;
    ir_const_int_value(src->shape[0], &n0);
    ir_const_int_value(src->shape[1], &n1);
    ir_stmt *iff = ir_stmt_new(g->m, IR_S_IF, l), *st = ir_stmt_new(g->m, IR_S_STORE, l);
    ir_var *iv, *jv;
    ir_stmt *loops = par2(g, n0, n1, &iv, &jv, iff, l);
    ir_expr *i = ir_var_ref(g->m, iv, l), *j = ir_var_ref(g->m, jv, l), *inside;
    ir_expr *sidx[2] = {i, j};
    st->buf = dst->buf;
    st->idx = region_index(g, dst, bv, bvr, bin(g, IR_B_ADD, r0, i), bin(g, IR_B_ADD, c0, j), &inside);
    st->value = ir_cast(g->m, store_type(dst->buf->dtype), ir_load(g->m, src, sidx, l), l);
    iff->cond = inside;
    iff->body = TILE_NEW_ARRAY(&g->m->arena, ir_stmt *, 2);
    iff->nbody = 2;
    iff->body[0] = st;
    iff->body[1] = NULL;
    return loops;
}

static bool expr_has_load(const ir_expr *e) {
    if (!e) return false;
    if (e->kind == IR_E_LOAD) return true;
    for (int i = 0; i < e->nargs; i++)
        if (expr_has_load(e->args[i])) return true;
    return false;
}

/* Bt = B^T for a whole 2-D B (K x N) of a 16- or 8-bit float dtype: an allocation of Bt
 * (N x K, global) and a kernel of 64 x 64 tiles through a padded shared tile (coalesced reads
 * and writes, no bank conflicts). Appended to pre[]. */
static ir_buffer *transpose_b(gm *g, const ir_region *B, ir_stmt **pre, int *npre, tile_loc l) {
    enum { TT = 64 };
    ir_buffer *b = B->buf;
    int bytes = tile_dtype_bits(b->dtype) / 8;
    int pad = TT;
    while ((pad * bytes) % 4 != 0 || ((pad * bytes) / 4) % 2 == 0) pad++;
    ir_expr *K = b->shape[0], *N = b->shape[1];
    ir_expr **sh = TILE_NEW_ARRAY(&g->m->arena, ir_expr *, 2);
    sh[0] = N;
    sh[1] = K;
    ir_buffer *bt = ir_buffer_new(g->m, g->f, tile_arena_printf(&g->m->arena, "%s_T%d", b->name, g->ntiles), b->dtype, IR_SCOPE_GLOBAL, 2, sh, IR_BUF_TEMP, l);
    pre[(*npre)++] = alloc_of(g, bt);
    ir_stmt *ks = ir_stmt_new(g->m, IR_S_KERNEL, l);
    ks->ngrid = 2;
    ks->threads = 256;
    ks->grid[0] = ceildiv(g, K, TT);
    ks->grid[1] = ceildiv(g, N, TT);
    ks->block_vars[0] = ir_var_new(g->m, g->f, tile_arena_printf(&g->m->arena, "tx%d", g->ntiles), IR_VAR_BLOCK, TILE_DT_I32, l);
    ks->block_vars[1] = ir_var_new(g->m, g->f, tile_arena_printf(&g->m->arena, "ty%d", g->ntiles), IR_VAR_BLOCK, TILE_DT_I32, l);
    ir_expr *k0 = bin(g, IR_B_MUL, ir_var_ref(g->m, ks->block_vars[0], l), ci(g, TT, l));
    ir_expr *n0 = bin(g, IR_B_MUL, ir_var_ref(g->m, ks->block_vars[1], l), ci(g, TT, l));
    ir_buffer *ts = new_buf(g, "T_tile", b->dtype, IR_SCOPE_SHARED, TT, pad, l);
    ir_stmt *cp = tile_op(g, IR_S_COPY, 2, l);
    cp->regions[0] = box(g, B, NULL, NULL, k0, TT, n0, TT);
    cp->regions[1] = whole(g, ts);
    cp->regions[1].extent[1] = ci(g, TT, l);
    /* for i, j in parallel(64, 64): if n0 + i < N and k0 + j < K: Bt[n0 + i, k0 + j] = T[j, i] */
    ir_stmt *iff = ir_stmt_new(g->m, IR_S_IF, l), *st = ir_stmt_new(g->m, IR_S_STORE, l);
    ir_var *iv, *jv;
    ir_stmt *loops = par2(g, TT, TT, &iv, &jv, iff, l);
    ir_expr *i = ir_var_ref(g->m, iv, l), *j = ir_var_ref(g->m, jv, l);
    ir_expr *row = bin(g, IR_B_ADD, n0, i), *col = bin(g, IR_B_ADD, k0, j);
    iff->cond = ir_binary(g->m, IR_B_AND, bin(g, IR_B_LT, row, N), bin(g, IR_B_LT, col, K), l);
    iff->body = TILE_NEW_ARRAY(&g->m->arena, ir_stmt *, 2);
    iff->nbody = 2;
    iff->body[0] = st;
    iff->body[1] = NULL;
    ir_expr *tidx[2] = {j, i};
    st->buf = bt;
    st->idx = TILE_NEW_ARRAY(&g->m->arena, ir_expr *, 2);
    st->idx[0] = row;
    st->idx[1] = col;
    st->value = ir_cast(g->m, store_type(b->dtype), ir_load(g->m, ts, tidx, l), l);
    ir_stmt *kb[3] = {alloc_of(g, ts), cp, loops};
    ks->body = TILE_NEW_ARRAY(&g->m->arena, ir_stmt *, 1);
    ks->body[0] = ir_seq(g->m, kb, 3, l);
    ks->nbody = 1;
    pre[(*npre)++] = ks;
    return bt;
}

/* The kernel computing gemm statement gs (inside the batch loop `batch`, or NULL), or NULL
 * with the reason in *why. */
static ir_stmt *gemm_kernel(gm *g, ir_stmt *gs, ir_stmt *batch, const char **why) {
    tile_loc l = gs->loc;
    if (gs->nregions != 3) return *why = "malformed gemm", NULL;
    ir_region *A = &gs->regions[0], *B = &gs->regions[1], *C = &gs->regions[2];
    bool guarded = false; /* a part of a matrix: element copies guarded by the region's bounds */
    for (int i = 0; i < 3; i++) {
        const ir_region *r = &gs->regions[i];
        if (r->buf->scope != IR_SCOPE_GLOBAL) return *why = "an operand is not a global tensor", NULL;
        if (r->buf->rank < 2) return *why = "an operand has fewer than 2 dimensions", NULL;
        for (int d = 0; d < r->buf->rank - 2; d++) {
            int64_t e;
            if (!ir_const_int_value(r->extent[d], &e) || e != 1) return *why = "a batch dimension of an operand is not a single index", NULL;
            for (int v = 0; v < g->f->nvars; v++) {
                const ir_var *x = g->f->vars[v];
                if (x->kind != IR_VAR_SIZE && (!batch || x != batch->var) && ir_expr_uses_var(r->start[d], x))
                    return *why = "a batch index depends on more than the batch loop", NULL;
            }
        }
        for (int d = r->buf->rank - 2; d < r->buf->rank; d++) {
            if (!whole_dim(r, d)) guarded = true;
            if (expr_has_load(r->start[d]) || expr_has_load(r->extent[d])) return *why = "an operand's bounds read memory", NULL;
        }
    }
    tile_dtype cd = C->buf->dtype, acc = cd;
    if (tile_dtype_is_float(cd) && tile_dtype_bits(cd) < 32) acc = TILE_DT_F32;
    if (!gs->clear && acc != cd) return *why = "C is accumulated into in a dtype narrower than its compute dtype", NULL;
    int ra = A->buf->rank, rb = B->buf->rank, rc = C->buf->rank;
    ir_expr *M = C->extent[rc - 2], *N = C->extent[rc - 1], *K = A->extent[gs->trans_a ? ra - 2 : ra - 1];
    gemm_tile t = pick_tile(g->f, A->buf->dtype, B->buf->dtype);
    g->ntiles++;
    /* B stored K x N with 8-bit floats: fp8 wgmma reads B only as N x K (K-major) tiles
     * (src/codegen/sm90.c), so B is transposed once into a temporary first. 16-bit B stays
     * K x N: the Hopper lowering reads it N-major directly. TILE_CUDA_GEMM_PRETRANSPOSE=0:
     * never */
    ir_stmt *pre[3];
    int npre = 0;
    bool tb = gs->trans_b;
    ir_region Bw = *B;
    int bbits = tile_dtype_bits(B->buf->dtype);
    long pretr = (long)tb_opt_int(g->f->opts, TB_OPT_cuda_gemm_pretranspose);
    if (!tb && !guarded && !batch && B->buf->rank == 2 && tile_dtype_is_float(B->buf->dtype) && bbits == 8 &&
        tile_dtype_is_float(A->buf->dtype) && pretr != 0) {
        ir_buffer *bt = transpose_b(g, B, pre, &npre, l);
        Bw = whole(g, bt);
        tb = true;
        tile_log(TILE_LOG_INFO, "%s:%d: gpumap: %s (K x N) is transposed into %s (N x K) first, for the tensor-core lowering", opt_loc_file(l), l.line, B->buf->name,
                 bt->name);
    }
    B = &Bw;

    ir_stmt *ks = ir_stmt_new(g->m, IR_S_KERNEL, l);
    ks->ngrid = batch ? 3 : 2;
    ks->threads = t.threads;
    ks->grid[0] = ceildiv(g, N, t.bn);
    ks->grid[1] = ceildiv(g, M, t.bm);
    const char *bn[3] = {"bx", "by", "bz"};
    for (int d = 0; d < ks->ngrid; d++) ks->block_vars[d] = ir_var_new(g->m, g->f, tile_arena_printf(&g->m->arena, "%s%d", bn[d], g->ntiles), IR_VAR_BLOCK, TILE_DT_I32, l);
    ir_var *bv = NULL;
    ir_expr *bvr = NULL;
    if (batch) {
        ks->grid[2] = as_i32(g, batch->extent);
        bv = batch->var;
        bvr = bin(g, IR_B_ADD, batch->lo, ir_var_ref(g->m, ks->block_vars[2], l));
    }
    ir_expr *bx = ir_var_ref(g->m, ks->block_vars[0], l), *by = ir_var_ref(g->m, ks->block_vars[1], l);
    ir_expr *row0 = bin(g, IR_B_MUL, by, ci(g, t.bm, l)), *col0 = bin(g, IR_B_MUL, bx, ci(g, t.bn, l));

    ir_buffer *As = gs->trans_a ? new_buf(g, "A_tile", A->buf->dtype, IR_SCOPE_SHARED, t.bk, t.bm, l) : new_buf(g, "A_tile", A->buf->dtype, IR_SCOPE_SHARED, t.bm, t.bk, l);
    ir_buffer *Bs = tb ? new_buf(g, "B_tile", B->buf->dtype, IR_SCOPE_SHARED, t.bn, t.bk, l) : new_buf(g, "B_tile", B->buf->dtype, IR_SCOPE_SHARED, t.bk, t.bn, l);
    ir_buffer *Cf = new_buf(g, "C_acc", acc, IR_SCOPE_FRAGMENT, t.bm, t.bn, l);

    ir_stmt *body[6];
    int nb = 0;
    body[nb++] = alloc_of(g, As);
    body[nb++] = alloc_of(g, Bs);
    body[nb++] = alloc_of(g, Cf);
    ir_region cbox = box(g, C, bv, bvr, row0, t.bm, col0, t.bn);
    if (gs->clear) {
        ir_stmt *fl = tile_op(g, IR_S_FILL, 1, l);
        fl->regions[0] = whole(g, Cf);
        fl->value = tile_dtype_is_float(acc) ? ir_const_float(g->m, acc, 0.0, l) : ir_const_int(g->m, acc, 0, l);
        body[nb++] = fl;
    } else if (guarded) {
        body[nb++] = guarded_load(g, C, bv, bvr, row0, col0, Cf, l);
    } else {
        ir_stmt *cp = tile_op(g, IR_S_COPY, 2, l);
        cp->regions[0] = cbox;
        cp->regions[1] = whole(g, Cf);
        body[nb++] = cp;
    }
    /* the K loop */
    ir_var *kv = ir_var_new(g->m, g->f, tile_arena_printf(&g->m->arena, "ko%d", g->ntiles), IR_VAR_LOOP, TILE_DT_I32, l);
    ir_expr *k0 = bin(g, IR_B_MUL, ir_var_ref(g->m, kv, l), ci(g, t.bk, l));
    ir_stmt *ca = tile_op(g, IR_S_COPY, 2, l), *cb = tile_op(g, IR_S_COPY, 2, l), *mm = tile_op(g, IR_S_GEMM, 3, l);
    ca->regions[0] = gs->trans_a ? box(g, A, bv, bvr, k0, t.bk, row0, t.bm) : box(g, A, bv, bvr, row0, t.bm, k0, t.bk);
    ca->regions[1] = whole(g, As);
    cb->regions[0] = tb ? box(g, B, bv, bvr, col0, t.bn, k0, t.bk) : box(g, B, bv, bvr, k0, t.bk, col0, t.bn);
    cb->regions[1] = whole(g, Bs);
    mm->regions[0] = whole(g, As);
    mm->regions[1] = whole(g, Bs);
    mm->regions[2] = whole(g, Cf);
    mm->trans_a = gs->trans_a;
    mm->trans_b = tb;
    mm->clear = false;
    ir_stmt *kb[3] = {ca, cb, mm};
    if (guarded) {
        kb[0] = gs->trans_a ? guarded_load(g, A, bv, bvr, k0, row0, As, l) : guarded_load(g, A, bv, bvr, row0, k0, As, l);
        kb[1] = tb ? guarded_load(g, B, bv, bvr, col0, k0, Bs, l) : guarded_load(g, B, bv, bvr, k0, col0, Bs, l);
    }
    ir_stmt *kl = ir_stmt_new(g->m, IR_S_FOR, l);
    kl->var = kv;
    kl->lo = ci(g, 0, l);
    kl->extent = ceildiv(g, K, t.bk);
    kl->loop_kind = IR_LOOP_PIPELINED;
    kl->num_stages = t.stages;
    kl->body = TILE_NEW_ARRAY(&g->m->arena, ir_stmt *, 1);
    kl->body[0] = ir_seq(g->m, kb, 3, l);
    kl->nbody = 1;
    body[nb++] = kl;
    ir_stmt *co = tile_op(g, IR_S_COPY, 2, l);
    co->regions[0] = whole(g, Cf);
    co->regions[1] = cbox;
    body[nb++] = guarded ? guarded_store(g, Cf, C, bv, bvr, row0, col0, l) : co;
    ks->body = TILE_NEW_ARRAY(&g->m->arena, ir_stmt *, 1);
    ks->body[0] = ir_seq(g->m, body, nb, l);
    ks->nbody = 1;
    (void)rb;
    if (npre) {
        pre[npre++] = ks;
        ks = ir_seq(g->m, pre, npre, l);
    }
    tile_log(TILE_LOG_INFO, "%s:%d: gpumap: gemm %s x %s -> %s in tile form: %dx%dx%d tiles, %d stages, %d threads, %s accumulator%s%s", opt_loc_file(l),
             l.line, A->buf->name, B->buf->name, C->buf->name, t.bm, t.bn, t.bk, t.stages, t.threads, tile_dtype_name(acc),
             batch ? ", batch loop -> grid z" : "", guarded ? ", parts of matrices: element copies guarded by the regions' bounds" : "");
    return ks;
}

/* ---------- parallel loops -> kernels ---------- */
static bool expr_list_has(ir_expr *const *e, int n, const ir_var *v) {
    for (int i = 0; i < n; i++)
        if (ir_expr_uses_var(e[i], v)) return true;
    return false;
}

/* Why the body of a parallel loop cannot run as per-thread code, or NULL. */
static const char *thread_unfit(const ir_stmt *s, bool top) {
    if (!s) return NULL;
    switch (s->kind) {
    case IR_S_KERNEL: case IR_S_COPY: case IR_S_FILL: case IR_S_GEMM: case IR_S_REDUCE: return "its body has a tile operation";
    case IR_S_ALLOC: return "its body allocates a buffer";
    case IR_S_BREAK: return top ? "its body breaks out of it" : NULL;
    default: break;
    }
    bool t = top && s->kind != IR_S_FOR && s->kind != IR_S_WHILE;
    for (int i = 0; i < s->nbody; i++) {
        const char *w = thread_unfit(s->body[i], t);
        if (w) return w;
    }
    return NULL;
}

/* Is v used in s outside the subtree `skip` (NULL: anywhere in s)? */
static bool used_outside(const ir_stmt *s, const ir_var *v, const ir_stmt *skip) {
    if (!s || s == skip) return false;
    if (s->var == v) return true;
    if (ir_expr_uses_var(s->lo, v) || ir_expr_uses_var(s->extent, v) || ir_expr_uses_var(s->cond, v) || ir_expr_uses_var(s->value, v)) return true;
    if (s->buf && s->idx && expr_list_has(s->idx, s->buf->rank, v)) return true;
    for (int i = 0; i < s->nregions; i++)
        if (expr_list_has(s->regions[i].start, s->regions[i].buf->rank, v) || expr_list_has(s->regions[i].extent, s->regions[i].buf->rank, v)) return true;
    for (int i = 0; i < s->ngrid; i++)
        if (ir_expr_uses_var(s->grid[i], v)) return true;
    for (int i = 0; i < s->nbody; i++)
        if (used_outside(s->body[i], v, skip)) return true;
    return false;
}

/* A scalar local of the loop body used anywhere outside the loop (it would have to cross
 * from a one-thread launch into the kernel), or NULL. */
static const char *shared_local(gm *g, const ir_stmt *loop) {
    for (int i = 0; i < g->f->nvars; i++) {
        const ir_var *v = g->f->vars[i];
        if (v->kind != IR_VAR_LOCAL || !used_outside(loop->body[0], v, NULL)) continue;
        if (used_outside(g->f->body, v, loop)) return v->name;
    }
    return NULL;
}

static void make_serial(ir_stmt *s) {
    if (!s) return;
    if (s->kind == IR_S_FOR && (s->loop_kind == IR_LOOP_VECTORIZED || s->loop_kind == IR_LOOP_PARALLEL)) {
        s->loop_kind = IR_LOOP_SERIAL;
        s->par_group_depth = 0;
    }
    for (int i = 0; i < s->nbody; i++) make_serial(s->body[i]);
}

static ir_stmt *par_kernel(gm *g, ir_stmt *loop, const char **why) {
    tile_loc l = loop->loc;
    if (!host_expr(loop->lo) || !host_expr(loop->extent)) return *why = "its bounds are not sizes known before the run", NULL;
    const char *w = thread_unfit(loop->body[0], true);
    if (w) return *why = w, NULL;
    const char *sv = shared_local(g, loop);
    if (sv) return *why = tile_arena_printf(&g->m->arena, "the scalar '%s' is shared with code outside it", sv), NULL;
    const int threads = 256;
    ir_stmt *inner = single(loop->body[0]);
    bool nest = inner && inner->kind == IR_S_FOR && (inner->loop_kind == IR_LOOP_VECTORIZED || inner->loop_kind == IR_LOOP_PARALLEL) &&
                host_expr(inner->lo) && host_expr(inner->extent) && !thread_unfit(inner->body[0], true);
    int64_t rows = threads, n;
    if (nest) rows = ir_const_int_value(inner->extent, &n) && n > 0 && n < threads ? (threads + n - 1) / n : 1;
    make_serial(loop->body[0]);
    if (nest) {
        inner->loop_kind = IR_LOOP_PARALLEL;
        inner->par_group_depth = 0;
    }
    g->ntiles++;
    ir_stmt *ks = ir_stmt_new(g->m, IR_S_KERNEL, l);
    ks->ngrid = 1;
    ks->threads = threads;
    ir_expr *ext = as_i32(g, loop->extent);
    ks->grid[0] = ceildiv(g, ext, rows);
    ks->block_vars[0] = ir_var_new(g->m, g->f, tile_arena_printf(&g->m->arena, "bx%d", g->ntiles), IR_VAR_BLOCK, TILE_DT_I32, l);
    ir_expr *b = ir_var_ref(g->m, ks->block_vars[0], l);
    ir_expr *first = rows == 1 ? b : bin(g, IR_B_MUL, b, ci(g, rows, l));
    int64_t lo0;
    loop->lo = ir_const_int_value(loop->lo, &lo0) && lo0 == 0 ? first : bin(g, IR_B_ADD, loop->lo, first);
    /* block bx runs iterations [lo + bx*rows, lo + min((bx+1)*rows, extent)) */
    loop->extent = rows == 1 ? ci(g, 1, l) : bin(g, IR_B_MIN, ci(g, rows, l), bin(g, IR_B_SUB, ext, first));
    loop->loop_kind = IR_LOOP_PARALLEL;
    loop->par_group_depth = nest ? 2 : 1;
    ks->body = TILE_NEW_ARRAY(&g->m->arena, ir_stmt *, 1);
    ks->body[0] = loop;
    ks->nbody = 1;
    tile_log(TILE_LOG_INFO, "%s:%d: gpumap: parallel loop '%s'%s -> kernel, %lld %s a block of %d threads", opt_loc_file(l), l.line, loop->var->name,
             nest ? tile_arena_printf(&g->m->arena, " and its inner loop '%s'", inner->var->name) : "", (long long)rows,
             rows == 1 ? "iteration" : "iterations", threads);
    return ks;
}

static ir_stmt *map_top(gm *g, ir_stmt *s) {
    const char *why = NULL;
    ir_stmt *k = NULL;
    if (s->kind == IR_S_SEQ) { /* top-level sequences (autoschedule's asserts + gemm) */
        for (int i = 0; i < s->nbody; i++) s->body[i] = map_top(g, s->body[i]);
        return s;
    }
    if (s->kind == IR_S_GEMM) k = gemm_kernel(g, s, NULL, &why);
    else if (s->kind == IR_S_FOR && s->loop_kind == IR_LOOP_PARALLEL) {
        ir_stmt *b = single(s->body[0]);
        if (b && b->kind == IR_S_GEMM) {
            if (!host_expr(s->lo) || !host_expr(s->extent)) why = "the batch loop's bounds are not sizes known before the run";
            else k = gemm_kernel(g, b, s, &why);
        } else k = par_kernel(g, s, &why);
    } else return s;
    if (k) return k;
    tile_log(TILE_LOG_INFO, "%s:%d: gpumap: %s left to one GPU thread: %s", opt_loc_file(s->loc), s->loc.line, s->kind == IR_S_GEMM ? "gemm" : "loop", why);
    return s;
}

static int run_gpumap(ir_module *m, ir_func *f, tile_diags *d) {
    (void)d;
    if (f->form != IR_FORM_PLAIN || !f->body) return 0;
    gm g = {m, f, 0};
    f->body = map_top(&g, f->body);
    /* kernels must be top-level statements of the function (src/codegen/simt.c): splice
     * nested sequences into the top one (their allocations then live to the end of the
     * function, which changes nothing for the program) */
    if (f->body->kind == IR_S_SEQ || f->body->kind == IR_S_KERNEL) {
        int n = 0, cap = 16;
        ir_stmt **items = tile_xmalloc(sizeof(ir_stmt *) * (size_t)cap);
        ir_stmt *stack[64];
        int sp = 0;
        stack[sp++] = f->body;
        /* depth-first, in order: push children in reverse */
        while (sp > 0) {
            ir_stmt *s = stack[--sp];
            if (s && s->kind == IR_S_SEQ && sp + s->nbody <= 64) {
                for (int i = s->nbody - 1; i >= 0; i--) stack[sp++] = s->body[i];
                continue;
            }
            if (!s) continue;
            if (n == cap) items = tile_xrealloc(items, sizeof(ir_stmt *) * (size_t)(cap *= 2));
            items[n++] = s;
        }
        f->body = ir_seq(m, items, n, f->body->loc);
        free(items);
    }
    return 0;
}

const opt_pass opt_pass_gpumap = {
    "gpumap",
    "plain form on GPUs: whole-matrix gemms -> tile-form kernels (shared tiles, pipelined K, fragment accumulator), parallel loops -> grid x threads",
    run_gpumap,
};
