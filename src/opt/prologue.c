/* prologue.c — the `prologue` pass of the cuda pipeline: a GEMM operand that the K loop
 * computes from read-only tensors (a dequantisation, a scaling, a cast) is computed once, by
 * a kernel of its own, into a global tensor that the GEMM's kernel then loads like any other
 * operand tile.
 *
 * In:  a tile-form ir_func for a CUDA architecture with tensor cores (opt_cuda_arch() >= 80).
 * Out: the same function where, for each kernel K this applies to, a global temporary T and
 *      a kernel P that fills it precede K, and K's loop loads T instead of computing the
 *      operand. Semantics do not change (below); `tile ir --after prologue` shows it and
 *      `tile ir --explain` gives the decision on the GEMM (or why it was declined).
 *
 * Why: the tensor-core lowerings take a GEMM whose operands are tiles loaded from global
 * memory (TMA, cp.async); an operand produced by T.Parallel code inside the loop keeps the
 * whole kernel on the SIMT path. When that code reads only tensors nothing writes, its
 * result depends only on the loop iteration and the block indices it uses, so it can be
 * computed ahead for every (block index, iteration) pair; blocks along the grid dimensions
 * it does not use computed it redundantly, so P does less work than K's copies of it did.
 *
 * What it takes (each kernel K, each T.gemm G of a serial or pipelined loop L in K's body):
 *   - G's accumulator a whole f32 fragment; G's operand X (A or B) a whole rank-2 shared or
 *     fragment buffer of a tensor-core dtype (f16, bf16, fp8), the other operand a whole shared
 *     tile of the same dtype; L from 0 with a constant trip count, K's grid constant;
 *   - the slice: the statements of L's body before G that write X or, transitively, a buffer
 *     a slice statement reads; each is a T.copy, a T.fill or a T.Parallel nest (its body
 *     stores, assignments of locals it assigns before reading, ifs), writes only buffers
 *     allocated at K's block level, each of them whole (a copy or fill of the whole buffer, a
 *     nest storing buf[v0, v1, ...] at its own loop variables over the buffer's extents) and
 *     before any slice statement reads it;
 *   - the buffers the slice writes are used by no statement outside it (X: by G only); the
 *     other buffers it reads are global tensors no statement of the function writes; its
 *     variables are L's, K's block indices, sizes, parameters and the nests' own;
 *   - it uses at most one of K's block indices b (grid extent g).
 * The rewrite: T = [g * R, n * C] (X is [R, C], n the trip count; [R, n * C] without b);
 * P = a kernel of grid (g, n) (or (n)) with K's threads, holding the slice's allocations and
 * statements with b and L's variable replaced by P's block indices, then T.copy(X, T[b * R,
 * it * C]); in K the slice is removed, and T.copy(T[b * R, it * C], X_ld) (a new shared tile)
 * comes right before G, which reads X_ld; allocations K no longer uses are dropped.
 * Same meaning: every (b, it) tile of T holds what X held in iteration it of any block with
 * index b (the slice reads nothing else that varies), T covers all of them exactly (no
 * clipping), and X's value left the slice only through G. Cost: T's bytes are written once
 * and read once per block along the other grid dimensions, as a loaded operand would be.
 * TILE_CUDA_PROLOGUE=0 turns the pass off. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opt.h"

#define PR_MAXS 32

typedef struct pr {
    ir_module *m;
    ir_func *f;
    ir_stmt *k, *loop;
    ir_stmt **lb; /* the loop body's statements */
    int nlb;
    int gi;               /* index of the GEMM in lb */
    bool in_slice[256];
    ir_buffer *wr[PR_MAXS]; /* buffers the slice writes */
    int nwr;
    const ir_var *bvar;   /* the block index the slice uses (NULL: none) */
    int bdim;
    const char *why;
    const ir_var *locs[128]; /* locals the slice's nests assign */
    int nlocs;
} pr;

static bool cint(const ir_expr *e, int64_t *v) { return e && ir_const_int_value(e, v); }

/* ---------- what statements read and write ---------- */

static bool in_list(ir_buffer *const *l, int n, const ir_buffer *b) {
    for (int i = 0; i < n; i++)
        if (l[i] == b) return true;
    return false;
}

/* Does s (or anything in it) write buffer b? */
static bool writes(const ir_stmt *s, const ir_buffer *b) {
    if (!s) return false;
    switch (s->kind) {
    case IR_S_STORE:
    case IR_S_ATOMIC:
        if (s->buf == b) return true;
        break;
    case IR_S_COPY: if (s->regions[1].buf == b) return true; break;
    case IR_S_FILL: if (s->regions[0].buf == b) return true; break;
    case IR_S_GEMM: if (s->regions[2].buf == b) return true; break;
    case IR_S_REDUCE: if (s->regions[1].buf == b) return true; break;
    default: break;
    }
    for (int i = 0; i < s->nbody; i++)
        if (writes(s->body[i], b)) return true;
    return false;
}

static bool expr_uses_buf(const ir_expr *e, const ir_buffer *b) { return ir_expr_loads(e, b); }

/* Does s (or anything in it) mention buffer b at all (read, write, region, allocation)? */
static bool mentions(const ir_stmt *s, const ir_buffer *b) {
    if (!s) return false;
    if ((s->kind == IR_S_ALLOC || s->kind == IR_S_STORE || s->kind == IR_S_ATOMIC) && s->buf == b) return true;
    if (expr_uses_buf(s->lo, b) || expr_uses_buf(s->extent, b) || expr_uses_buf(s->cond, b) || expr_uses_buf(s->value, b)) return true;
    if ((s->kind == IR_S_STORE || s->kind == IR_S_ATOMIC) && s->buf)
        for (int d = 0; d < s->buf->rank; d++)
            if (expr_uses_buf(s->idx[d], b)) return true;
    for (int r = 0; r < s->nregions; r++) {
        if (s->regions[r].buf == b) return true;
        for (int d = 0; d < s->regions[r].buf->rank; d++)
            if (expr_uses_buf(s->regions[r].start[d], b) || expr_uses_buf(s->regions[r].extent[d], b)) return true;
    }
    for (int i = 0; i < s->nbody; i++)
        if (mentions(s->body[i], b)) return true;
    return false;
}

/* The buffers expression e loads (appended to l, no duplicates). */
static void expr_reads(const ir_expr *e, ir_buffer **l, int *n, int cap) {
    if (!e) return;
    if (e->kind == IR_E_LOAD && !in_list(l, *n, e->buf) && *n < cap) l[(*n)++] = e->buf;
    for (int i = 0; i < e->nargs; i++) expr_reads(e->args[i], l, n, cap);
}
/* The buffers statement s reads (appended to l). */
static void stmt_reads(const ir_stmt *s, ir_buffer **l, int *n, int cap) {
    if (!s) return;
    expr_reads(s->lo, l, n, cap);
    expr_reads(s->extent, l, n, cap);
    expr_reads(s->cond, l, n, cap);
    expr_reads(s->value, l, n, cap);
    if ((s->kind == IR_S_STORE || s->kind == IR_S_ATOMIC) && s->buf)
        for (int d = 0; d < s->buf->rank; d++) expr_reads(s->idx[d], l, n, cap);
    for (int r = 0; r < s->nregions; r++) {
        for (int d = 0; d < s->regions[r].buf->rank; d++) {
            expr_reads(s->regions[r].start[d], l, n, cap);
            expr_reads(s->regions[r].extent[d], l, n, cap);
        }
    }
    if (s->kind == IR_S_COPY && !in_list(l, *n, s->regions[0].buf) && *n < cap) l[(*n)++] = s->regions[0].buf;
    for (int i = 0; i < s->nbody; i++) stmt_reads(s->body[i], l, n, cap);
}
/* The buffers statement s writes (appended to l). */
static void stmt_writes(const ir_stmt *s, ir_buffer **l, int *n, int cap) {
    if (!s) return;
    ir_buffer *b = NULL;
    switch (s->kind) {
    case IR_S_STORE:
    case IR_S_ATOMIC: b = s->buf; break;
    case IR_S_COPY: b = s->regions[1].buf; break;
    case IR_S_FILL: b = s->regions[0].buf; break;
    case IR_S_GEMM: b = s->regions[2].buf; break;
    case IR_S_REDUCE: b = s->regions[1].buf; break;
    default: break;
    }
    if (b && !in_list(l, *n, b) && *n < cap) l[(*n)++] = b;
    for (int i = 0; i < s->nbody; i++) stmt_writes(s->body[i], l, n, cap);
}

/* ---------- the shape of slice statements ---------- */

typedef struct nestv {
    const ir_var *v[8];
    int64_t ext[8];
    int n;
    const ir_var *loc[64]; /* locals the nest assigns */
    int nloc;
} nestv;

static bool var_ok(pr *P, const nestv *N, const ir_var *v) {
    switch (v->kind) {
    case IR_VAR_SIZE:
    case IR_VAR_PARAM: return true;
    case IR_VAR_BLOCK:
        for (int d = 0; d < P->k->ngrid; d++)
            if (P->k->block_vars[d] == v) {
                if (P->bvar && P->bvar != v) {
                    P->why = "it uses two of the kernel's block indices";
                    return false;
                }
                P->bvar = v;
                P->bdim = d;
                return true;
            }
        P->why = "it uses a block index of another kernel";
        return false;
    case IR_VAR_LOOP:
        if (v == P->loop->var) return true;
        if (N)
            for (int i = 0; i < N->n; i++)
                if (N->v[i] == v) return true;
        P->why = "it uses the variable of a loop around it";
        return false;
    case IR_VAR_LOCAL:
        if (N)
            for (int i = 0; i < N->nloc; i++)
                if (N->loc[i] == v) return true;
        P->why = "it reads a scalar local it does not assign";
        return false;
    default: return false;
    }
}

static bool expr_ok(pr *P, const nestv *N, const ir_expr *e) {
    if (!e) return true;
    if (e->kind == IR_E_VAR && !var_ok(P, N, e->var)) return false;
    for (int i = 0; i < e->nargs; i++)
        if (!expr_ok(P, N, e->args[i])) return false;
    return true;
}

static bool region_ok(pr *P, const ir_region *r) {
    for (int d = 0; d < r->buf->rank; d++)
        if (!expr_ok(P, NULL, r->start[d]) || !expr_ok(P, NULL, r->extent[d])) return false;
    return true;
}

/* The body of a T.Parallel nest: stores, assignments of locals (assigned before they are
 * read: collected in order), ifs. */
static bool nest_body_ok(pr *P, nestv *N, const ir_stmt *s) {
    if (!s) return true;
    switch (s->kind) {
    case IR_S_SEQ:
        for (int i = 0; i < s->nbody; i++)
            if (!nest_body_ok(P, N, s->body[i])) return false;
        return true;
    case IR_S_ASSIGN:
        if (!expr_ok(P, N, s->value)) return false;
        if (s->var->kind != IR_VAR_LOCAL || N->nloc >= 64) return (P->why = "it assigns a variable that is not a local of the nest"), false;
        N->loc[N->nloc++] = s->var;
        return true;
    case IR_S_STORE:
        for (int d = 0; d < s->buf->rank; d++)
            if (!expr_ok(P, N, s->idx[d])) return false;
        return expr_ok(P, N, s->value);
    case IR_S_IF: {
        if (!expr_ok(P, N, s->cond)) return false;
        /* a local assigned in one arm only is not assigned before later reads: arms keep
         * their own list */
        int keep = N->nloc;
        if (!nest_body_ok(P, N, s->body[0])) return false;
        N->nloc = keep;
        if (s->nbody > 1 && !nest_body_ok(P, N, s->body[1])) return false;
        N->nloc = keep;
        return true;
    }
    default: P->why = "its T.Parallel body holds a statement other than stores, assignments and ifs"; return false;
    }
}

/* Does the nest store all of buffer b, each element at its own iteration (a store
 * b[v0, v1, ...] at the top level of the body, the nest's variables in order, extents =
 * b's shape)? */
static bool nest_covers(const ir_stmt *body, const nestv *N, const ir_buffer *b) {
    const ir_stmt *const *st = &body;
    int n = 1;
    if (body && body->kind == IR_S_SEQ) {
        st = (const ir_stmt *const *)body->body;
        n = body->nbody;
    }
    if (b->rank != N->n) return false;
    for (int i = 0; i < n; i++) {
        const ir_stmt *s = st[i];
        if (!s || s->kind != IR_S_STORE || s->buf != b) continue;
        bool ok = true;
        for (int d = 0; d < b->rank && ok; d++) {
            int64_t e;
            ok = s->idx[d]->kind == IR_E_VAR && s->idx[d]->var == N->v[d] && cint(b->shape[d], &e) && e == N->ext[d];
        }
        if (ok) return true;
    }
    return false;
}

static bool is_block_alloc(pr *P, const ir_buffer *b) {
    if (!b || b->scope == IR_SCOPE_GLOBAL) return false;
    const ir_stmt *kb = P->k->body[0];
    for (int i = 0; kb && kb->kind == IR_S_SEQ && i < kb->nbody; i++)
        if (kb->body[i]->kind == IR_S_ALLOC && kb->body[i]->buf == b) return true;
    return false;
}

/* Slice statement s: its shape, and that it writes the whole of every buffer it writes. */
static bool slice_stmt_ok(pr *P, const ir_stmt *s) {
    ir_buffer *w[8];
    int nw = 0;
    stmt_writes(s, w, &nw, 8);
    for (int i = 0; i < nw; i++)
        if (!is_block_alloc(P, w[i])) return (P->why = "it writes a buffer not allocated at the kernel's block level"), false;
    switch (s->kind) {
    case IR_S_COPY:
        if (!ir_region_is_whole(&s->regions[1])) return (P->why = "a copy in it writes part of its destination"), false;
        return region_ok(P, &s->regions[0]) && region_ok(P, &s->regions[1]);
    case IR_S_FILL:
        if (!ir_region_is_whole(&s->regions[0])) return (P->why = "a fill in it writes part of its buffer"), false;
        return expr_ok(P, NULL, s->value);
    case IR_S_FOR: {
        if (s->loop_kind != IR_LOOP_PARALLEL || s->par_group_depth < 1 || s->par_group_depth > 8) return (P->why = "it holds a loop that is not a T.Parallel nest"), false;
        nestv N;
        memset(&N, 0, sizeof N);
        const ir_stmt *l = s;
        for (int d = 0; d < s->par_group_depth; d++) {
            int64_t lo, e;
            if (!l || l->kind != IR_S_FOR || !cint(l->lo, &lo) || lo != 0 || !cint(l->extent, &e)) return (P->why = "a T.Parallel nest in it has run-time extents"), false;
            N.v[N.n] = l->var;
            N.ext[N.n++] = e;
            const ir_stmt *b = l->body[0];
            while (d + 1 < s->par_group_depth && b && b->kind == IR_S_SEQ && b->nbody == 1) b = b->body[0];
            l = d + 1 < s->par_group_depth ? b : l;
        }
        const ir_stmt *body = l->body[0];
        if (!nest_body_ok(P, &N, body)) return false;
        for (int i = 0; i < N.nloc && P->nlocs < 128; i++) P->locs[P->nlocs++] = N.loc[i];
        for (int i = 0; i < nw; i++)
            if (!nest_covers(body, &N, w[i])) return (P->why = tile_arena_printf(&P->m->arena, "its T.Parallel nest does not write all of %s at its own loop variables", w[i]->name)), false;
        return true;
    }
    default: P->why = "it holds a statement other than copies, fills and T.Parallel nests"; return false;
    }
}

/* Is global buffer b written anywhere in the function? */
static bool global_written(pr *P, const ir_buffer *b) { return writes(P->f->body, b); }

static bool expr_var(const ir_expr *e, const ir_var *v) { return e && ir_expr_uses_var(e, v); }
/* Does s (or anything in it) read or assign local v? */
static bool uses_var(const ir_stmt *s, const ir_var *v) {
    if (!s) return false;
    if (s->var == v || expr_var(s->lo, v) || expr_var(s->extent, v) || expr_var(s->cond, v) || expr_var(s->value, v)) return true;
    if ((s->kind == IR_S_STORE || s->kind == IR_S_ATOMIC) && s->buf)
        for (int d = 0; d < s->buf->rank; d++)
            if (expr_var(s->idx[d], v)) return true;
    for (int r = 0; r < s->nregions; r++)
        for (int d = 0; d < s->regions[r].buf->rank; d++)
            if (expr_var(s->regions[r].start[d], v) || expr_var(s->regions[r].extent[d], v)) return true;
    for (int i = 0; i < s->nbody; i++)
        if (uses_var(s->body[i], v)) return true;
    return false;
}

/* ---------- finding the slice ---------- */

static bool find_slice(pr *P, int xop) {
    ir_stmt *g = P->lb[P->gi];
    ir_buffer *need[PR_MAXS];
    int nneed = 0;
    need[nneed++] = g->regions[xop].buf;
    memset(P->in_slice, 0, sizeof P->in_slice);
    P->nwr = 0;
    P->nlocs = 0;
    P->bvar = NULL;
    for (int j = P->gi - 1; j >= 0; j--) {
        ir_stmt *s = P->lb[j];
        ir_buffer *w[8];
        int nw = 0;
        stmt_writes(s, w, &nw, 8);
        bool hit = false;
        for (int i = 0; i < nw; i++)
            if (in_list(need, nneed, w[i])) hit = true;
        if (!hit) continue;
        if (!slice_stmt_ok(P, s)) return false;
        P->in_slice[j] = true;
        for (int i = 0; i < nw; i++) {
            if (in_list(P->wr, P->nwr, w[i])) return (P->why = tile_arena_printf(&P->m->arena, "%s is written twice in an iteration", w[i]->name)), false;
            if (P->nwr >= PR_MAXS) return (P->why = "too many buffers"), false;
            P->wr[P->nwr++] = w[i];
        }
        ir_buffer *r[16];
        int nr = 0;
        stmt_reads(s, r, &nr, 16);
        for (int i = 0; i < nr; i++) {
            if (r[i]->scope == IR_SCOPE_GLOBAL) {
                if (global_written(P, r[i])) return (P->why = tile_arena_printf(&P->m->arena, "it reads %s, which the function writes", r[i]->name)), false;
                continue;
            }
            if (in_list(w, nw, r[i])) return (P->why = tile_arena_printf(&P->m->arena, "a statement in it reads and writes %s", r[i]->name)), false;
            /* written by a later statement of the slice: this one reads the previous
             * iteration's value */
            if (in_list(P->wr, P->nwr, r[i])) return (P->why = tile_arena_printf(&P->m->arena, "it reads %s before the iteration writes it", r[i]->name)), false;
            if (!in_list(need, nneed, r[i])) {
                if (nneed >= PR_MAXS) return (P->why = "too many buffers"), false;
                need[nneed++] = r[i];
            }
        }
    }
    /* every buffer it reads (other than globals) is one it writes before */
    for (int i = 0; i < nneed; i++)
        if (!in_list(P->wr, P->nwr, need[i])) return (P->why = tile_arena_printf(&P->m->arena, "it reads %s, which it does not compute", need[i]->name)), false;
    /* the locals its nests assign are used nowhere else in the kernel (they move with it) */
    for (int i = 0; i < P->nlocs; i++) {
        const ir_stmt *kb0 = P->k->body[0];
        for (int q = 0; q < kb0->nbody; q++) {
            const ir_stmt *s = kb0->body[q];
            if (s != P->loop) {
                if (uses_var(s, P->locs[i])) return (P->why = tile_arena_printf(&P->m->arena, "its local %s is used outside it", P->locs[i]->name)), false;
                continue;
            }
            for (int j = 0; j < P->nlb; j++)
                if (!P->in_slice[j] && uses_var(P->lb[j], P->locs[i]))
                    return (P->why = tile_arena_printf(&P->m->arena, "its local %s is used outside it", P->locs[i]->name)), false;
        }
    }
    /* its buffers are used by nothing else in the kernel (the operand by the GEMM only) */
    const ir_stmt *kb = P->k->body[0];
    for (int i = 0; i < P->nwr; i++) {
        const ir_buffer *b = P->wr[i];
        for (int q = 0; q < kb->nbody; q++) {
            const ir_stmt *s = kb->body[q];
            if (s->kind == IR_S_ALLOC) continue;
            if (s != P->loop) {
                if (mentions(s, b)) return (P->why = tile_arena_printf(&P->m->arena, "%s is used outside the loop", b->name)), false;
                continue;
            }
            for (int j = 0; j < P->nlb; j++) {
                if (P->in_slice[j]) continue;
                if (j == P->gi && b == g->regions[xop].buf) {
                    if (g->regions[2].buf == b || g->regions[1 - xop].buf == b) return (P->why = "the GEMM uses the operand twice"), false;
                    continue;
                }
                if (mentions(P->lb[j], b)) return (P->why = tile_arena_printf(&P->m->arena, "%s is used by a statement of the loop outside the computation", b->name)), false;
            }
        }
    }
    return true;
}

/* ---------- the rewrite ---------- */

typedef struct subst {
    const ir_var *from[2];
    ir_var *to[2];
    int n;
} subst;

static ir_expr *clone_e(pr *P, const ir_expr *e, const subst *S) {
    if (!e) return NULL;
    if (e->kind == IR_E_VAR)
        for (int i = 0; i < S->n; i++)
            if (e->var == S->from[i]) return ir_var_ref(P->m, S->to[i], e->loc);
    ir_expr *c = TILE_NEW(&P->m->arena, ir_expr);
    *c = *e;
    if (e->nargs) {
        c->args = TILE_NEW_ARRAY(&P->m->arena, ir_expr *, e->nargs);
        for (int i = 0; i < e->nargs; i++) c->args[i] = clone_e(P, e->args[i], S);
    }
    return c;
}

static ir_expr **clone_list(pr *P, ir_expr *const *l, int n, const subst *S) {
    ir_expr **c = TILE_NEW_ARRAY(&P->m->arena, ir_expr *, n > 0 ? n : 1);
    for (int i = 0; i < n; i++) c[i] = clone_e(P, l[i], S);
    return c;
}

static ir_stmt *clone_s(pr *P, const ir_stmt *s, const subst *S) {
    if (!s) return NULL;
    ir_stmt *c = TILE_NEW(&P->m->arena, ir_stmt);
    *c = *s;
    c->lower = NULL;
    c->lo = clone_e(P, s->lo, S);
    c->extent = clone_e(P, s->extent, S);
    c->cond = clone_e(P, s->cond, S);
    c->value = clone_e(P, s->value, S);
    if ((s->kind == IR_S_STORE || s->kind == IR_S_ATOMIC) && s->buf) c->idx = clone_list(P, s->idx, s->buf->rank, S);
    if (s->nregions) {
        c->regions = TILE_NEW_ARRAY(&P->m->arena, ir_region, s->nregions);
        for (int r = 0; r < s->nregions; r++) {
            c->regions[r] = s->regions[r];
            c->regions[r].start = clone_list(P, s->regions[r].start, s->regions[r].buf->rank, S);
            c->regions[r].extent = clone_list(P, s->regions[r].extent, s->regions[r].buf->rank, S);
        }
    }
    if (s->nbody) {
        c->body = TILE_NEW_ARRAY(&P->m->arena, ir_stmt *, s->nbody);
        for (int i = 0; i < s->nbody; i++) c->body[i] = clone_s(P, s->body[i], S);
    }
    return c;
}

static ir_expr *ci(pr *P, int64_t v, tile_loc l) { return ir_const_int(P->m, TILE_DT_I32, v, l); }

/* the tile (b, it) of T: T[b * R : +R, it * C : +C] */
static ir_region tile_of(pr *P, ir_buffer *T, ir_var *b, ir_var *it, int64_t R, int64_t C, tile_loc l) {
    ir_region r = {T, TILE_NEW_ARRAY(&P->m->arena, ir_expr *, 2), TILE_NEW_ARRAY(&P->m->arena, ir_expr *, 2), l};
    r.start[0] = b ? ir_binary(P->m, IR_B_MUL, ir_var_ref(P->m, b, l), ci(P, R, l), l) : ci(P, 0, l);
    r.start[1] = ir_binary(P->m, IR_B_MUL, ir_var_ref(P->m, it, l), ci(P, C, l), l);
    r.extent[0] = ci(P, R, l);
    r.extent[1] = ci(P, C, l);
    return r;
}
static ir_region whole_of(pr *P, ir_buffer *b, tile_loc l) {
    ir_region r = {b, TILE_NEW_ARRAY(&P->m->arena, ir_expr *, b->rank), TILE_NEW_ARRAY(&P->m->arena, ir_expr *, b->rank), l};
    for (int d = 0; d < b->rank; d++) {
        r.start[d] = ci(P, 0, l);
        r.extent[d] = b->shape[d];
    }
    return r;
}
static ir_stmt *copy_of(pr *P, ir_region src, ir_region dst, tile_loc l) {
    ir_stmt *c = ir_stmt_new(P->m, IR_S_COPY, l);
    c->nregions = 2;
    c->regions = TILE_NEW_ARRAY(&P->m->arena, ir_region, 2);
    c->regions[0] = src;
    c->regions[1] = dst;
    return c;
}
static ir_stmt *alloc_of(pr *P, ir_buffer *b) {
    ir_stmt *s = ir_stmt_new(P->m, IR_S_ALLOC, b->loc);
    s->buf = b;
    return s;
}

/* Rewrites K (statement *ks of the SEQ holding it); returns the statements to put before
 * it (T's allocation and P) in pre[2]. */
static void rewrite(pr *P, int xop, ir_stmt **pre) {
    ir_stmt *g = P->lb[P->gi];
    ir_buffer *X = g->regions[xop].buf;
    int64_t R = 0, C = 0, n = 0, gb = 1;
    cint(X->shape[0], &R);
    cint(X->shape[1], &C);
    cint(P->loop->extent, &n);
    if (P->bvar) cint(P->k->grid[P->bdim], &gb);
    tile_loc l = g->loc;
    ir_expr **sh = TILE_NEW_ARRAY(&P->m->arena, ir_expr *, 2);
    sh[0] = ci(P, gb * R, l);
    sh[1] = ci(P, n * C, l);
    ir_buffer *T = ir_buffer_new(P->m, P->f, tile_arena_printf(&P->m->arena, "%s_pre", X->name), X->dtype, IR_SCOPE_GLOBAL, 2, sh, IR_BUF_TEMP, l);
    /* the kernel P */
    ir_stmt *pk = ir_stmt_new(P->m, IR_S_KERNEL, P->lb[0]->loc);
    for (int j = 0; j < P->gi; j++)
        if (P->in_slice[j]) {
            pk->loc = P->lb[j]->loc;
            break;
        }
    pk->threads = P->k->threads;
    subst S = {{0}, {0}, 0};
    ir_var *pb = NULL;
    if (P->bvar) {
        pb = ir_var_new(P->m, P->f, tile_arena_printf(&P->m->arena, "%s_pre", P->bvar->name), IR_VAR_BLOCK, TILE_DT_I32, l);
        pk->grid[pk->ngrid] = ci(P, gb, l);
        pk->block_vars[pk->ngrid++] = pb;
        S.from[S.n] = P->bvar;
        S.to[S.n++] = pb;
    }
    ir_var *pit = ir_var_new(P->m, P->f, tile_arena_printf(&P->m->arena, "%s_pre", P->loop->var->name), IR_VAR_BLOCK, TILE_DT_I32, l);
    pk->grid[pk->ngrid] = ci(P, n, l);
    pk->block_vars[pk->ngrid++] = pit;
    S.from[S.n] = P->loop->var;
    S.to[S.n++] = pit;
    int cap = P->nwr + P->nlb + 2, np = 0;
    ir_stmt **pb_st = TILE_NEW_ARRAY(&P->m->arena, ir_stmt *, cap);
    {
        const ir_stmt *kb = P->k->body[0];
        for (int i = 0; i < kb->nbody; i++)
            if (kb->body[i]->kind == IR_S_ALLOC && in_list(P->wr, P->nwr, kb->body[i]->buf)) pb_st[np++] = alloc_of(P, kb->body[i]->buf);
    }
    for (int j = 0; j < P->gi; j++)
        if (P->in_slice[j]) pb_st[np++] = clone_s(P, P->lb[j], &S);
    pb_st[np++] = copy_of(P, whole_of(P, X, l), tile_of(P, T, pb, pit, R, C, l), l);
    pk->nbody = 1;
    pk->body = TILE_NEW_ARRAY(&P->m->arena, ir_stmt *, 1);
    pk->body[0] = ir_seq(P->m, pb_st, np, pk->loc);
    pre[0] = alloc_of(P, T);
    pre[1] = pk;
    /* K: the loop loads the tile into a new shared buffer before the GEMM */
    ir_buffer *Xl = ir_buffer_new(P->m, P->f, tile_arena_printf(&P->m->arena, "%s_ld", X->name), X->dtype, IR_SCOPE_SHARED, 2, X->shape, IR_BUF_TEMP, X->loc);
    ir_stmt **nl = TILE_NEW_ARRAY(&P->m->arena, ir_stmt *, P->nlb + 1);
    int nn = 0;
    for (int j = 0; j < P->nlb; j++) {
        if (P->in_slice[j]) continue;
        if (j == P->gi) {
            nl[nn++] = copy_of(P, tile_of(P, T, (ir_var *)P->bvar, P->loop->var, R, C, l), whole_of(P, Xl, l), l);
            ir_region *ra = &g->regions[xop];
            *ra = whole_of(P, Xl, ra->loc);
        }
        nl[nn++] = P->lb[j];
    }
    P->loop->body[0] = ir_seq(P->m, nl, nn, P->loop->body[0]->loc);
    /* K's allocations: the new tile's where X's was, those no statement uses dropped */
    ir_stmt *kb = P->k->body[0];
    ir_stmt **nk = TILE_NEW_ARRAY(&P->m->arena, ir_stmt *, kb->nbody + 1);
    int nkn = 0;
    for (int i = 0; i < kb->nbody; i++) {
        ir_stmt *s = kb->body[i];
        if (s->kind == IR_S_ALLOC) {
            if (s->buf == X) nk[nkn++] = alloc_of(P, Xl);
            bool used = false;
            for (int q = 0; q < kb->nbody && !used; q++)
                if (kb->body[q]->kind != IR_S_ALLOC && mentions(kb->body[q], s->buf)) used = true;
            if (!used) continue;
        }
        nk[nkn++] = s;
    }
    P->k->body[0] = ir_seq(P->m, nk, nkn, kb->loc);
    ir_explain_stmt(P->f, g, "prologue", IR_DEC_GOT, tile_arena_printf(&P->m->arena, "operand %s loaded from %s", X->name, T->name),
                    "%s is computed from read-only tensors in the loop, the same for every block%s: a kernel of %lld blocks computes it once per %s%siteration into %s [%lld, %lld], "
                    "which the loop loads like any operand tile (tensor-core lowerings take loaded operands)",
                    X->name, P->bvar ? tile_arena_printf(&P->m->arena, " with one value of %s", P->bvar->name) : "", (long long)(gb * n),
                    P->bvar ? P->bvar->name : "", P->bvar ? " and " : "", T->name, (long long)(gb * R), (long long)(n * C));
    tile_log(TILE_LOG_INFO, "prologue: %s:%d: operand %s of the gemm computed ahead into %s by a kernel of %lld blocks", opt_loc_file(g->loc), g->loc.line, X->name, T->name,
             (long long)(gb * n));
}

/* Try the GEMMs of kernel K (statement i of SEQ seq). Returns the number of statements
 * inserted before it. */
static int do_kernel(pr *P, ir_stmt *seq, int i) {
    ir_stmt *k = seq->body[i];
    P->k = k;
    ir_stmt *kb = k->body[0];
    if (!kb || kb->kind != IR_S_SEQ) return 0;
    for (int q = 0; q < kb->nbody; q++) {
        ir_stmt *L = kb->body[q];
        if (L->kind != IR_S_FOR || (L->loop_kind != IR_LOOP_SERIAL && L->loop_kind != IR_LOOP_PIPELINED)) continue;
        ir_stmt *b = L->body[0];
        if (!b || b->kind != IR_S_SEQ || b->nbody > 256) continue;
        for (int gi = 0; gi < b->nbody; gi++) {
            ir_stmt *g = b->body[gi];
            if (g->kind != IR_S_GEMM) continue;
            const ir_region *C = &g->regions[2];
            if (C->buf->scope != IR_SCOPE_FRAGMENT || C->buf->dtype != TILE_DT_F32 || !ir_region_is_whole(C)) continue;
            for (int xop = 0; xop < 2; xop++) {
                const ir_region *X = &g->regions[xop], *O = &g->regions[1 - xop];
                tile_dtype dt = X->buf->dtype;
                if (X->buf->scope == IR_SCOPE_GLOBAL || X->buf->rank != 2 || !ir_region_is_whole(X)) continue;
                if (dt != TILE_DT_F16 && dt != TILE_DT_BF16 && dt != TILE_DT_FP8_E4M3 && dt != TILE_DT_FP8_E5M2) continue;
                if (O->buf->scope != IR_SCOPE_SHARED || O->buf->dtype != dt || !ir_region_is_whole(O)) continue;
                /* is X computed in the loop? (an operand loaded by a copy from global memory
                 * already is what the lowerings take) */
                bool computed = false;
                for (int j = 0; j < gi; j++) {
                    const ir_stmt *s = b->body[j];
                    if (!writes(s, X->buf)) continue;
                    computed = !(s->kind == IR_S_COPY && s->regions[0].buf->scope == IR_SCOPE_GLOBAL);
                }
                if (!computed) continue;
                P->loop = L;
                P->lb = b->body;
                P->nlb = b->nbody;
                P->gi = gi;
                P->why = NULL;
                int64_t n, lo, e;
                bool gconst = true;
                for (int d = 0; d < k->ngrid; d++) gconst &= cint(k->grid[d], &e);
                if (!find_slice(P, xop)) {
                } else if (!cint(L->lo, &lo) || lo != 0 || !cint(L->extent, &n) || n < 1)
                    P->why = "the loop does not start at 0 or has no constant trip count";
                else if (!gconst)
                    P->why = "the kernel's grid is not constant";
                else {
                    ir_stmt *pre[2];
                    rewrite(P, xop, pre);
                    ir_stmt **nb = TILE_NEW_ARRAY(&P->m->arena, ir_stmt *, seq->nbody + 2);
                    memcpy(nb, seq->body, sizeof *nb * (size_t)i);
                    nb[i] = pre[0];
                    nb[i + 1] = pre[1];
                    memcpy(nb + i + 2, seq->body + i, sizeof *nb * (size_t)(seq->nbody - i));
                    seq->body = nb;
                    seq->nbody += 2;
                    return 2;
                }
                ir_explain_stmt(P->f, g, "prologue", IR_DEC_DECLINED, tile_arena_printf(&P->m->arena, "operand %s computed ahead by a kernel of its own", X->buf->name),
                                "%s", P->why ? P->why : "?");
                tile_log(TILE_LOG_INFO, "prologue: %s:%d: operand %s stays computed in the loop: %s", opt_loc_file(g->loc), g->loc.line, X->buf->name, P->why ? P->why : "?");
            }
        }
    }
    return 0;
}

static void walk(pr *P, ir_stmt *s) {
    if (!s) return;
    if (s->kind == IR_S_KERNEL) return;
    if (s->kind == IR_S_SEQ) {
        for (int i = 0; i < s->nbody; i++) {
            if (s->body[i] && s->body[i]->kind == IR_S_KERNEL) i += do_kernel(P, s, i);
            else walk(P, s->body[i]);
        }
        return;
    }
    for (int i = 0; i < s->nbody; i++) walk(P, s->body[i]);
}

static int run(ir_module *m, ir_func *f, tile_diags *d) {
    (void)d;
    if (f->form != IR_FORM_TILE || opt_cuda_arch() < 80 || !tb_opt_bool(f->opts, TB_OPT_cuda_prologue)) return 0;
    pr P;
    memset(&P, 0, sizeof P);
    P.m = m;
    P.f = f;
    if (f->body && f->body->kind == IR_S_KERNEL) {
        /* a lone kernel: give it a SEQ to insert before */
        ir_stmt *one[1] = {f->body};
        f->body = ir_seq(m, one, 1, f->body->loc);
    }
    walk(&P, f->body);
    return 0;
}

const opt_pass opt_pass_prologue = {"prologue", "GEMM operands computed in the loop from read-only tensors -> computed ahead by a kernel of their own", run};
