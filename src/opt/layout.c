/* layout.c — the `layout` pass of the cuda and opencl pipelines: every fragment of a kernel
 * gets a per-thread layout (ir.h, "fragment layouts"; the algebra in layout.h), inferred from
 * its uses, and every T.Parallel nest over register fragments the layout its threads walk.
 *
 * In:  a tile-form ir_func (kernels with fragments).
 * Out: the same function with ir_buffer.layout set for every block-level fragment of every
 *      kernel, and ir_stmt.lower set for the statements that touch them (T.Parallel nests:
 *      the nest layout; T.reduce: how the threads combine; T.copy / T.fill: the access width;
 *      T.gemm: the SIMT GEMM's register tiling). The code generator (src/codegen/simt.c) emits
 *      what these say. Semantics do not change.
 *
 * Inference (per kernel), to a fixed point:
 *   - anchors: a T.gemm's accumulator gets the SIMT GEMM's register tiling (lay_simt_gemm);
 *   - a T.Parallel nest whose body reads or writes fragments at its own loop variables
 *     (f[i, j], f[j], f[j, i], ...) walks one layout of its index space: lifted from the
 *     access that covers most of its dimensions and already has a layout, and every other
 *     fragment it touches gets (or must already have) that layout's projection onto the
 *     dimensions it indexes; a store through a projection that drops a dimension the
 *     threads or slots split would miss replicas, so that fragment goes to shared memory;
 *   - a whole-fragment T.copy between fragments: the same layout; T.reduce over dim d: the
 *     destination is the projection of the source without d (a lift the other way round);
 *   - fragments no use decides get a blocked layout (lay_blocked: 16-byte vectors along the
 *     last dimension, threads along the last dimension first), largest first, and the rest
 *     follows from them;
 *   - a fragment with any other access — a block-level statement, an index that is not a
 *     loop variable of its nest (x[i, j + 1]), part of it in a tile op, an operand of the
 *     SIMT GEMM, a layout two uses disagree on — stays in shared memory (layout SHARED with
 *     the reason); the inference then starts again without it.
 * Register pressure: when the register fragments of a kernel need more than ~200 32-bit
 * registers a thread, the largest are marked `local` (the code keeps them in an array the
 * compiler places in local memory: a spill) until the rest fit; TILE_LOG=info says so.
 * TILE_SIMT_REGFRAG=0 (or TILE_SIMT_MEMOPT=0) keeps every fragment in shared memory. */
#include "layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deps.h"
#include "opt.h"

/* ---------- the algebra ---------- */

static ir_layout lay_empty(int rank, int threads) {
    ir_layout l;
    memset(&l, 0, sizeof l);
    l.kind = IR_LAYOUT_REGS;
    l.rank = rank;
    l.threads = threads;
    l.slots = 1;
    l.vec = 1;
    return l;
}

static void push(ir_layout *l, int thread, int dim, int64_t size, int64_t stride) {
    if (size <= 1) return;
    if (l->ndig >= IR_LAYOUT_MAXDIG) return; /* callers keep within the limit */
    l->dig[l->ndig++] = (ir_layout_digit){(int8_t)thread, (int8_t)dim, (int32_t)size, dim < 0 ? 0 : stride};
}

/* Canonical form: size-1 digits dropped, neighbouring replications merged, thread digits
 * first; threads, slots and vec recomputed. */
static void lay_norm(ir_layout *l) {
    ir_layout_digit d[IR_LAYOUT_MAXDIG];
    int n = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < l->ndig; i++) {
            const ir_layout_digit *g = &l->dig[i];
            if (g->size <= 1 || (pass == 0) != (g->thread != 0)) continue;
            if (n > 0 && g->thread && g->dim < 0 && d[n - 1].thread && d[n - 1].dim < 0) {
                d[n - 1].size *= g->size;
                continue;
            }
            d[n++] = *g;
        }
    /* a thread digit across the warp boundary (power-of-two parts) splits there, so lanes and
     * warps are digits of their own (shuffles combine lanes) */
    int64_t below = 1;
    for (int i = 0; i < n && n < IR_LAYOUT_MAXDIG; i++) {
        if (!d[i].thread) continue;
        int64_t lo = 32 / below;
        if (below < 32 && 32 % below == 0 && d[i].size > lo && d[i].size % lo == 0) {
            memmove(&d[i + 2], &d[i + 1], sizeof d[0] * (size_t)(n - i - 1));
            d[i + 1] = d[i];
            d[i + 1].size = (int32_t)(d[i].size / lo);
            d[i + 1].stride = d[i].dim < 0 ? 0 : d[i].stride * lo;
            d[i].size = (int32_t)lo;
            n++;
        }
        below *= d[i].size;
    }
    memcpy(l->dig, d, sizeof d[0] * (size_t)n);
    l->ndig = n;
    l->threads = 1;
    l->slots = 1;
    for (int i = 0; i < n; i++) {
        if (d[i].thread) l->threads *= d[i].size;
        else l->slots *= d[i].size;
    }
    l->vec = 1;
    for (int i = 0; i < n; i++)
        if (!d[i].thread) {
            if (d[i].dim == l->rank - 1 && d[i].stride == 1) l->vec = d[i].size;
            break;
        }
}

int lay_copy_vector(const ir_layout *l, tile_dtype fd, tile_dtype md, int64_t last) {
    if (!l || l->vec < 2) return 0;
    int fb = tile_dtype_bits(fd), mb = tile_dtype_bits(md);
    int cand[3] = {0, 0, 0};
    if (fd == md && fb == 32) cand[0] = 4;
    else if (fd == TILE_DT_F32 && (md == TILE_DT_F16 || md == TILE_DT_BF16)) cand[0] = 8, cand[1] = 4;
    else if (fd == md && fb == 16) cand[0] = 8, cand[1] = 4;
    else if (fd == md && fb == 8) cand[0] = 16, cand[1] = 8, cand[2] = 4;
    (void)mb;
    for (int i = 0; i < 3 && cand[i]; i++)
        if (l->vec % cand[i] == 0 && last % cand[i] == 0) return cand[i];
    return 0;
}

bool lay_equal(const ir_layout *a, const ir_layout *b) {
    if (!a || !b) return a == b;
    if (a->kind != b->kind || a->rank != b->rank) return false;
    if (a->kind == IR_LAYOUT_SHARED) return true;
    if (a->threads != b->threads || a->slots != b->slots || a->ndig != b->ndig) return false;
    for (int i = 0; i < a->ndig; i++)
        if (a->dig[i].thread != b->dig[i].thread || a->dig[i].dim != b->dig[i].dim || a->dig[i].size != b->dig[i].size ||
            a->dig[i].stride != b->dig[i].stride)
            return false;
    return true;
}

int64_t lay_slot_coord(const ir_layout *l, int dim, int64_t s) {
    int64_t c = 0;
    for (int i = 0; i < l->ndig; i++) {
        const ir_layout_digit *d = &l->dig[i];
        if (d->thread) continue;
        int64_t v = s % d->size;
        s /= d->size;
        if (d->dim == dim) c += v * d->stride;
    }
    return c;
}

bool lay_has_holes(const ir_layout *l, int dim, int64_t extent) {
    int64_t p = 1;
    for (int i = 0; i < l->ndig; i++)
        if (l->dig[i].dim == dim) p *= l->dig[i].size;
    return p > extent;
}

static int map_find(const int *map, int rank, int dim) {
    for (int k = 0; k < rank; k++)
        if (map[k] == dim) return k;
    return -1;
}

ir_layout lay_project(const ir_layout *n, const int *map, int rank) {
    ir_layout c = lay_empty(rank, n->threads);
    for (int i = 0; i < n->ndig; i++) {
        const ir_layout_digit *d = &n->dig[i];
        int k = d->dim >= 0 ? map_find(map, rank, d->dim) : -1;
        if (d->thread) push(&c, 1, k, d->size, d->stride);
        else if (k >= 0) push(&c, 0, k, d->size, d->stride);
    }
    lay_norm(&c);
    c.origin = n->origin;
    return c;
}

int64_t lay_project_slot(const ir_layout *n, const int *map, int rank, int64_t s) {
    int64_t r = 0, p = 1;
    for (int i = 0; i < n->ndig; i++) {
        const ir_layout_digit *d = &n->dig[i];
        if (d->thread) continue;
        int64_t v = s % d->size;
        s /= d->size;
        if (d->dim >= 0 && map_find(map, rank, d->dim) >= 0) {
            r += v * p;
            p *= d->size;
        }
    }
    return r;
}

void lay_project_slot_c(const ir_layout *n, const int *map, int rank, const char *s, tile_strbuf *o) {
    int64_t below = 1, p = 1, total = 1;
    bool any = false;
    for (int i = 0; i < n->ndig; i++)
        if (!n->dig[i].thread) total *= n->dig[i].size;
    /* the kept digits, least significant first; a run of kept digits at the bottom is s mod */
    tile_sb_puts(o, "(");
    for (int i = 0; i < n->ndig; i++) {
        const ir_layout_digit *d = &n->dig[i];
        if (d->thread) continue;
        bool keep = d->dim >= 0 && map_find(map, rank, d->dim) >= 0;
        if (keep) {
            if (any) tile_sb_puts(o, " + ");
            tile_sb_printf(o, "(((%s) / %lld) %% %d) * %lld", s, (long long)below, d->size, (long long)p);
            any = true;
            p *= d->size;
        }
        below *= d->size;
    }
    if (!any) tile_sb_puts(o, "0");
    tile_sb_puts(o, ")");
    (void)total;
}

bool lay_project_writable(const ir_layout *n, const int *map, int rank) {
    for (int i = 0; i < n->ndig; i++) {
        const ir_layout_digit *d = &n->dig[i];
        if (d->size > 1 && d->dim >= 0 && map_find(map, rank, d->dim) < 0) return false;
    }
    return true;
}

/* The smallest divisor of n that is >= want, or 0 */
static int64_t div_at_least(int64_t n, int64_t want) {
    for (int64_t d = want < 1 ? 1 : want; d <= n; d++)
        if (n % d == 0) return d;
    return 0;
}
/* The largest divisor of n that is <= want (>= 1) */
static int64_t div_at_most(int64_t n, int64_t want) {
    for (int64_t d = want < 1 ? 1 : want; d >= 1; d--)
        if (n % d == 0) return d;
    return 1;
}
/* threads to give a dimension that still needs `need` groups, out of `avail` (a divisor of
 * avail): all it needs when a divisor covers it, else the largest divisor below */
static int64_t share(int64_t avail, int64_t need) {
    if (need <= 1) return 1;
    int64_t d = div_at_least(avail, need);
    return d ? d : div_at_most(avail, need);
}

ir_layout lay_lift(const ir_layout *c, const int *map, int crank, int rank, const int64_t *extent) {
    ir_layout l = lay_empty(rank, c->threads);
    int64_t cap[8];
    for (int d = 0; d < rank; d++) cap[d] = 1;
    /* capacities the child already gives the mapped dimensions */
    for (int i = 0; i < c->ndig; i++)
        if (c->dig[i].dim >= 0) cap[map[c->dig[i].dim]] *= c->dig[i].size;
    for (int i = 0; i < c->ndig; i++) {
        const ir_layout_digit *d = &c->dig[i];
        if (!d->thread) continue;
        if (d->dim >= 0) {
            push(&l, 1, map[d->dim], d->size, d->stride);
            continue;
        }
        /* a replication: split over the dimensions the child does not index, innermost first */
        int64_t r = d->size;
        for (int u = rank - 1; u >= 0 && r > 1; u--) {
            if (map_find(map, crank, u) >= 0) continue;
            int64_t need = (extent[u] + cap[u] - 1) / cap[u];
            int64_t g = share(r, need);
            if (g > 1) {
                push(&l, 1, u, g, cap[u]);
                cap[u] *= g;
                r /= g;
            }
        }
        push(&l, 1, -1, r, 0);
    }
    for (int i = 0; i < c->ndig; i++)
        if (!c->dig[i].thread) push(&l, 0, map[c->dig[i].dim], c->dig[i].size, c->dig[i].stride);
    for (int u = rank - 1; u >= 0; u--) {
        if (map_find(map, crank, u) >= 0) continue;
        int64_t need = (extent[u] + cap[u] - 1) / cap[u];
        push(&l, 0, u, need, cap[u]);
        cap[u] *= need;
    }
    lay_norm(&l);
    l.origin = c->origin;
    return l;
}

ir_layout lay_blocked(int rank, const int64_t *extent, int threads, int vec) {
    ir_layout l = lay_empty(rank, threads);
    int64_t cap[8];
    for (int d = 0; d < rank; d++) cap[d] = 1;
    if (rank > 0 && vec > 1 && extent[rank - 1] % vec == 0) cap[rank - 1] = vec;
    else vec = 1;
    int64_t avail = threads;
    for (int d = rank - 1; d >= 0 && avail > 1; d--) {
        int64_t need = (extent[d] + cap[d] - 1) / cap[d];
        int64_t g = share(avail, need);
        if (g > 1) {
            push(&l, 1, d, g, cap[d]);
            cap[d] *= g;
            avail /= g;
        }
    }
    push(&l, 1, -1, avail, 0);
    if (vec > 1) push(&l, 0, rank - 1, vec, 1);
    int64_t tcap[8];
    for (int d = 0; d < rank; d++) tcap[d] = cap[d];
    for (int d = rank - 1; d >= 0; d--) {
        int64_t need = (extent[d] + tcap[d] - 1) / tcap[d];
        push(&l, 0, d, need, tcap[d]);
    }
    lay_norm(&l);
    l.origin = "blocked";
    return l;
}

bool lay_simt_gemm(int64_t bm, int64_t bn, int threads, ir_layout *out) {
    static const int tms[] = {8, 4, 16, 2, 32, 1};
    for (int q = 0; q < 6; q++) {
        int64_t tm = tms[q];
        if (bm % tm) continue;
        int64_t ty = bm / tm;
        if (ty < 1 || threads % ty) continue;
        int64_t tx = threads / ty;
        if (bn % tx) continue;
        int64_t tn = bn / tx;
        ir_layout l = lay_empty(2, threads);
        push(&l, 1, 1, tx, 1);
        push(&l, 1, 0, ty, 1);
        push(&l, 0, 1, tn, tx);
        push(&l, 0, 0, tm, ty);
        lay_norm(&l);
        l.origin = "simt-gemm";
        *out = l;
        return true;
    }
    return false;
}

ir_layout lay_wgmma(int wgs, int mt, int64_t n) {
    ir_layout l = lay_empty(2, 128 * wgs);
    push(&l, 1, 1, 4, 2);
    push(&l, 1, 0, 8, 1);
    push(&l, 1, 0, 4, 16);
    push(&l, 1, 0, wgs, 64 * mt);
    push(&l, 0, 1, 2, 1);
    push(&l, 0, 0, 2, 8);
    push(&l, 0, 1, n / 8, 8);
    push(&l, 0, 0, mt, 64);
    lay_norm(&l);
    l.origin = "wgmma";
    return l;
}

void lay_describe(const ir_layout *l, tile_strbuf *o) { ir_print_layout(l, o); }

void lay_thread_coord_c(const ir_layout *l, int dim, const char *t, tile_strbuf *o) {
    int64_t below = 1;
    bool any = false;
    tile_sb_puts(o, "(");
    for (int i = 0; i < l->ndig; i++) {
        const ir_layout_digit *d = &l->dig[i];
        if (!d->thread) continue;
        if (d->dim == dim) {
            if (any) tile_sb_puts(o, " + ");
            tile_sb_printf(o, "((%s) / %lld %% %d) * %lld", t, (long long)below, d->size, (long long)d->stride);
            any = true;
        }
        below *= d->size;
    }
    if (!any) tile_sb_puts(o, "0");
    tile_sb_puts(o, ")");
}

void lay_rep0_c(const ir_layout *l, const char *t, tile_strbuf *o) {
    int64_t below = 1;
    bool any = false;
    tile_sb_puts(o, "(");
    for (int i = 0; i < l->ndig; i++) {
        const ir_layout_digit *d = &l->dig[i];
        if (!d->thread) continue;
        if (d->dim < 0) {
            if (any) tile_sb_puts(o, " && ");
            tile_sb_printf(o, "((%s) / %lld %% %d) == 0", t, (long long)below, d->size);
            any = true;
        }
        below *= d->size;
    }
    if (!any) tile_sb_puts(o, "1");
    tile_sb_puts(o, ")");
}

/* ---------- the pass ---------- */

/* registers a thread the fragments may take: the SIMT kernels' (255 less addresses and
 * temporaries), and wgmma consumers' (setmaxnreg gives them 232) */
enum { LP_MAXF = 256, LP_REG_BUDGET = 200, LP_REG_BUDGET_WG = 216 };

typedef struct lfrag {
    ir_buffer *b;
    int64_t ext[8];
    int64_t elems;
    bool has;      /* lay holds the layout (registers) */
    ir_layout lay;
    bool shared;   /* stays in shared memory */
    const char *why;
    int vec_hint;  /* from copies with global memory: 16 bytes of the narrower side */
} lfrag;

/* A nest the pass gave a layout to */
typedef struct lnest {
    ir_stmt *s;
    ir_layout lay;
} lnest;

typedef struct lp {
    ir_module *m;
    ir_func *f;
    ir_stmt *k;
    int threads;
    int sm;        /* opt_cuda_arch() on the cuda pipeline, 0 on opencl */
    /* sm_90a: the kernel's GEMMs run on wgmma (wg_c consumer warpgroups, wg_mt m64 tiles each) */
    bool wg;
    int wg_c, wg_mt;
    lfrag fr[LP_MAXF];
    int nfr;
    int *idx;      /* buffer id -> index in fr, or -1 */
    bool changed;
    bool restart;  /* a fragment went to shared memory: infer again */
    lnest *nests;
    int nnests, capn;
} lp;

static lfrag *frag_of(lp *P, const ir_buffer *b) {
    if (!b || b->id < 0 || b->id >= P->f->nbuffers) return NULL;
    int i = P->idx[b->id];
    return i >= 0 ? &P->fr[i] : NULL;
}

static void to_shared(lp *P, lfrag *f, const char *why) {
    if (!f || f->shared) return;
    f->shared = true;
    f->has = false;
    f->why = why;
    P->restart = true;
}

static const ir_stmt *single_child(const ir_stmt *s) {
    const ir_stmt *b = s->nbody >= 1 ? s->body[0] : NULL;
    while (b && b->kind == IR_S_SEQ && b->nbody == 1) b = b->body[0];
    return b;
}

static bool has_sync(const ir_stmt *s) {
    if (!s) return false;
    if (s->kind == IR_S_COPY || s->kind == IR_S_FILL || s->kind == IR_S_GEMM || s->kind == IR_S_REDUCE || s->kind == IR_S_KERNEL) return true;
    if (s->kind == IR_S_FOR && s->loop_kind == IR_LOOP_PARALLEL) return true;
    for (int i = 0; i < s->nbody; i++)
        if (has_sync(s->body[i])) return true;
    return false;
}

/* Fragments allocated at block level (the placement the code generator uses: every statement
 * on the way down allocates or needs the whole block, no parallel loop around). */
static void collect(lp *P, ir_stmt *s, bool block) {
    if (!s) return;
    if (block && s->kind != IR_S_ALLOC && !has_sync(s)) block = false;
    if (s->kind == IR_S_ALLOC) {
        ir_buffer *b = s->buf;
        if (b->scope != IR_SCOPE_FRAGMENT || !block || P->nfr >= LP_MAXF) return;
        lfrag *f = &P->fr[P->nfr];
        memset(f, 0, sizeof *f);
        f->b = b;
        f->elems = 1;
        bool ok = b->rank >= 1 && b->rank <= 8;
        for (int d = 0; ok && d < b->rank; d++) {
            if (!ir_const_int_value(b->shape[d], &f->ext[d]) || f->ext[d] < 1 || f->ext[d] > (1 << 24)) ok = false;
            else f->elems *= f->ext[d];
            if (f->elems > ((int64_t)1 << 26)) ok = false;
        }
        if (!ok) return; /* the code generator reports a shape it cannot place */
        P->idx[b->id] = P->nfr++;
        if (b->dtype == TILE_DT_FP4_E2M1) to_shared(P, f, "fp4 fragments (two codes a byte) stay in shared memory");
        return;
    }
    if (s->kind == IR_S_FOR && s->loop_kind == IR_LOOP_PARALLEL) block = false;
    for (int i = 0; i < s->nbody; i++) collect(P, s->body[i], block);
}

/* every fragment expression e mentions goes to shared memory */
static void expr_shared(lp *P, const ir_expr *e, const char *why) {
    if (!e) return;
    if (e->kind == IR_E_LOAD) to_shared(P, frag_of(P, e->buf), why);
    for (int i = 0; i < e->nargs; i++) expr_shared(P, e->args[i], why);
}
static void stmt_shared(lp *P, const ir_stmt *s, const char *why) {
    if (!s) return;
    expr_shared(P, s->lo, why);
    expr_shared(P, s->extent, why);
    expr_shared(P, s->cond, why);
    expr_shared(P, s->value, why);
    if ((s->kind == IR_S_STORE || s->kind == IR_S_ATOMIC) && s->buf) {
        to_shared(P, frag_of(P, s->buf), why);
        for (int d = 0; d < s->buf->rank; d++) expr_shared(P, s->idx[d], why);
    }
    for (int r = 0; r < s->nregions; r++) {
        to_shared(P, frag_of(P, s->regions[r].buf), why);
        for (int d = 0; d < s->regions[r].buf->rank; d++) {
            expr_shared(P, s->regions[r].start[d], why);
            expr_shared(P, s->regions[r].extent[d], why);
        }
    }
    for (int i = 0; i < s->nbody; i++) stmt_shared(P, s->body[i], why);
}

/* ---- T.Parallel nests ---- */
typedef struct pnest {
    const ir_stmt *loops[8];
    int n;
    int64_t ext[8];
    bool ok; /* perfect, constant extents from 0 */
} pnest;

static void nest_of(const ir_stmt *s, pnest *pn) {
    memset(pn, 0, sizeof *pn);
    pn->loops[0] = s;
    pn->n = 1;
    int want = s->par_group_depth < 1 ? 1 : s->par_group_depth;
    while (pn->n < want && pn->n < 8) {
        const ir_stmt *c = single_child(pn->loops[pn->n - 1]);
        if (!c || c->kind != IR_S_FOR) break;
        bool dep = false;
        for (int k = 0; k < pn->n; k++)
            if (ir_expr_uses_var(c->lo, pn->loops[k]->var) || ir_expr_uses_var(c->extent, pn->loops[k]->var)) dep = true;
        if (dep) break;
        pn->loops[pn->n++] = c;
    }
    pn->ok = pn->n == want;
    for (int k = 0; k < pn->n; k++) {
        int64_t lo, e;
        if (!ir_const_int_value(pn->loops[k]->lo, &lo) || lo != 0 || !ir_const_int_value(pn->loops[k]->extent, &e) || e < 1 || e > (1 << 24)) pn->ok = false;
        else pn->ext[k] = e;
    }
}

/* The access f[idx] in nest pn: map[k] = the nest dimension of index k (-1: the constant 0 of
 * a dimension of extent 1). False when an index is anything else. */
static bool access_map(const pnest *pn, const lfrag *f, ir_expr *const *idx, int *map) {
    for (int k = 0; k < f->b->rank; k++) {
        const ir_expr *e = idx[k];
        map[k] = -2;
        int64_t c;
        if (e->kind == IR_E_VAR) {
            for (int q = 0; q < pn->n; q++)
                if (pn->loops[q]->var == e->var) map[k] = q;
        } else if (ir_const_int_value(e, &c) && c == 0 && f->ext[k] == 1)
            map[k] = -1;
        if (map[k] == -2) return false;
        if (map[k] >= 0 && pn->ext[map[k]] != f->ext[k]) return false;
        for (int q = 0; q < k; q++)
            if (map[q] >= 0 && map[q] == map[k]) return false;
    }
    return true;
}

typedef struct pacc {
    lfrag *f;
    int map[8];
    bool store;
} pacc;

typedef struct paccs {
    pacc a[64];
    int n;
    bool bad;
} paccs;

static void add_acc(lp *P, paccs *A, const pnest *pn, const ir_buffer *b, ir_expr *const *idx, bool store) {
    lfrag *f = frag_of(P, b);
    if (!f || f->shared) return;
    pacc x;
    x.f = f;
    x.store = store;
    if (!access_map(pn, f, idx, x.map)) {
        to_shared(P, f, tile_arena_printf(&P->m->arena, "read or written in a T.Parallel nest at an index that is not one of the nest's loop variables (line %d)", idx && idx[0] ? idx[0]->loc.line : 0));
        return;
    }
    if (A->n >= 64) { A->bad = true; return; }
    A->a[A->n++] = x;
}

static void nest_expr(lp *P, paccs *A, const pnest *pn, const ir_expr *e) {
    if (!e) return;
    if (e->kind == IR_E_LOAD) add_acc(P, A, pn, e->buf, e->args, false);
    for (int i = 0; i < e->nargs; i++) nest_expr(P, A, pn, e->args[i]);
}
static void nest_stmt(lp *P, paccs *A, const pnest *pn, const ir_stmt *s) {
    if (!s) return;
    if (s->kind == IR_S_COPY || s->kind == IR_S_FILL || s->kind == IR_S_GEMM || s->kind == IR_S_REDUCE || s->kind == IR_S_ATOMIC) {
        stmt_shared(P, s, "used by a tile op or atomic inside a T.Parallel body");
        return;
    }
    if (s->kind == IR_S_FOR && s->loop_kind == IR_LOOP_PARALLEL) {
        stmt_shared(P, s, "used in a T.Parallel loop nested inside another");
        return;
    }
    nest_expr(P, A, pn, s->lo);
    nest_expr(P, A, pn, s->extent);
    nest_expr(P, A, pn, s->cond);
    nest_expr(P, A, pn, s->value);
    if (s->kind == IR_S_STORE) {
        for (int d = 0; d < s->buf->rank; d++) nest_expr(P, A, pn, s->idx[d]);
        add_acc(P, A, pn, s->buf, s->idx, true);
    }
    for (int i = 0; i < s->nbody; i++) nest_stmt(P, A, pn, s->body[i]);
}

static void record_nest(lp *P, ir_stmt *s, const ir_layout *l) {
    for (int i = 0; i < P->nnests; i++)
        if (P->nests[i].s == s) {
            P->nests[i].lay = *l;
            return;
        }
    if (P->nnests == P->capn) {
        P->capn = P->capn ? 2 * P->capn : 16;
        P->nests = tile_xrealloc(P->nests, sizeof *P->nests * (size_t)P->capn);
    }
    P->nests[P->nnests].s = s;
    P->nests[P->nnests].lay = *l;
    P->nnests++;
}

/* f gets layout l, or must have it already */
static void require(lp *P, lfrag *f, const ir_layout *l, const char *what) {
    if (f->shared) return;
    if (!f->has) {
        f->lay = *l;
        f->has = true;
        P->changed = true;
        return;
    }
    if (!lay_equal(&f->lay, l))
        to_shared(P, f, tile_arena_printf(&P->m->arena, "its layout (%s) disagrees with the one %s needs", f->lay.origin ? f->lay.origin : "?", what));
}

static void do_nest(lp *P, ir_stmt *s) {
    pnest pn;
    nest_of(s, &pn);
    paccs A;
    memset(&A, 0, sizeof A);
    const ir_stmt *body = pn.loops[pn.n - 1]->body[0];
    for (int k = 0; k < pn.n; k++) {
        expr_shared(P, pn.loops[k]->lo, "used in a loop bound");
        expr_shared(P, pn.loops[k]->extent, "used in a loop bound");
    }
    nest_stmt(P, &A, &pn, body);
    if (A.n == 0) return;
    if (!pn.ok || A.bad) {
        for (int i = 0; i < A.n; i++) to_shared(P, A.a[i].f, !pn.ok ? "used in a T.Parallel nest of run-time extents" : "too many accesses in one T.Parallel nest");
        return;
    }
    /* the driver: the access with a layout covering most dimensions */
    int best = -1, bestcov = -1;
    for (int i = 0; i < A.n; i++) {
        if (!A.a[i].f->has) continue;
        int cov = 0;
        for (int k = 0; k < A.a[i].f->b->rank; k++) cov += A.a[i].map[k] >= 0;
        if (cov > bestcov) { bestcov = cov; best = i; }
    }
    if (best < 0) return; /* decided later (defaults) */
    const pacc *d = &A.a[best];
    ir_layout nl;
    /* lift the driver's layout to the nest's dimensions: its dimensions through map, the
     * nest's other dimensions from its replications and slots */
    {
        int cmap[8], r = d->f->b->rank;
        /* a child dimension of extent 1 with map -1 has no digits: give it a nest dim of its own? no:
         * map it to no nest dimension (its digits do not exist) */
        for (int k = 0; k < r; k++) cmap[k] = d->map[k];
        ir_layout c = d->f->lay;
        /* drop digits of -1 dimensions (extent 1: none exist) and renumber through cmap */
        nl = lay_lift(&c, cmap, r, pn.n, pn.ext);
    }
    for (int i = 0; i < A.n; i++) {
        const pacc *a = &A.a[i];
        ir_layout want = lay_project(&nl, a->map, a->f->b->rank);
        require(P, a->f, &want, "a T.Parallel nest");
        if (a->store && !lay_project_writable(&nl, a->map, a->f->b->rank))
            to_shared(P, a->f, "written in a T.Parallel nest whose threads split a dimension it does not index (its replicas would differ)");
    }
    record_nest(P, s, &nl);
}

static bool region_reads_frag(lp *P, const ir_region *r) {
    for (int d = 0; d < r->buf->rank; d++) {
        for (int i = 0; i < P->nfr; i++)
            if (ir_expr_loads(r->start[d], P->fr[i].b) || ir_expr_loads(r->extent[d], P->fr[i].b)) return true;
    }
    return false;
}

static int vec_of_bytes(int bytes, int64_t last) {
    int v = bytes >= 1 ? 16 / bytes : 1;
    if (v > 8) v = 8;
    while (v > 1 && last % v) v /= 2;
    return v;
}

static void do_stmt(lp *P, ir_stmt *s);

/* The GEMMs first: their accumulator layouts are anchors the rest follows from. */
static void anchors(lp *P, ir_stmt *s) {
    if (!s) return;
    if (s->kind == IR_S_GEMM) {
        do_stmt(P, s);
        return;
    }
    for (int i = 0; i < s->nbody; i++) anchors(P, s->body[i]);
}

static void do_block(lp *P, ir_stmt *s) {
    if (!s) return;
    if (s->kind == IR_S_SEQ) {
        for (int i = 0; i < s->nbody; i++) do_block(P, s->body[i]);
        return;
    }
    do_stmt(P, s);
}

static void do_stmt(lp *P, ir_stmt *s) {
    if (s->kind == IR_S_ALLOC) return;
    if (!has_sync(s)) {
        stmt_shared(P, s, "read or written by a block-level statement (run by one thread)");
        return;
    }
    for (int r = 0; r < s->nregions; r++)
        if (region_reads_frag(P, &s->regions[r])) stmt_shared(P, s, "read in a tile op's region bounds");
    switch (s->kind) {
    case IR_S_FOR:
        if (s->loop_kind == IR_LOOP_PARALLEL) {
            do_nest(P, s);
            return;
        }
        expr_shared(P, s->lo, "used in a loop bound");
        expr_shared(P, s->extent, "used in a loop bound");
        do_block(P, s->body[0]);
        return;
    case IR_S_WHILE:
    case IR_S_IF:
        expr_shared(P, s->cond, "used in a block-level condition");
        for (int i = 0; i < s->nbody; i++) do_block(P, s->body[i]);
        return;
    case IR_S_COPY: {
        const ir_region *a = &s->regions[0], *b = &s->regions[1];
        lfrag *fa = frag_of(P, a->buf), *fb = frag_of(P, b->buf);
        if (!fa && !fb) return;
        if ((fa && !ir_region_is_whole(a)) || (fb && !ir_region_is_whole(b))) {
            if (fa && !ir_region_is_whole(a)) to_shared(P, fa, "copied in part");
            if (fb && !ir_region_is_whole(b)) to_shared(P, fb, "copied in part");
            return;
        }
        if (fa && fb) {
            if (fa->shared || fb->shared) return;
            bool same = fa->b->rank == fb->b->rank;
            for (int d = 0; same && d < fa->b->rank; d++) same = fa->ext[d] == fb->ext[d];
            if (!same) {
                to_shared(P, fb, "copied from a fragment of another shape");
                return;
            }
            if (fa->has && !fb->has) require(P, fb, &fa->lay, "a copy");
            else if (fb->has && !fa->has) require(P, fa, &fb->lay, "a copy");
            else if (fa->has && fb->has && !lay_equal(&fa->lay, &fb->lay)) to_shared(P, fb, "copied from a fragment of another layout");
            return;
        }
        lfrag *f = fa ? fa : fb;
        const ir_region *other = fa ? b : a;
        if (other->buf->dtype == TILE_DT_FP4_E2M1) {
            to_shared(P, f, "copied to or from fp4 data");
            return;
        }
        int bytes = tile_dtype_bits(other->buf->dtype) / 8;
        int fbytes = tile_dtype_bits(f->b->dtype) / 8;
        if (fbytes > bytes) bytes = fbytes;
        if (other->buf->scope == IR_SCOPE_GLOBAL) {
            /* runs of 4 elements a thread (16 bytes of 32-bit data); f32 fragments of 16-bit
             * globals get runs of 8, so that each global access is 16 bytes too (the copy
             * converts 8 at a time): with 4, a 16-bit row kernel had half the bytes in flight
             * of its f32 twin. Only where every thread still gets a run: a [8, 64] tile of
             * 128 threads in runs of 8 left half of them idle (bf16 softmax 0.72x) */
            int gbits = tile_dtype_bits(other->buf->dtype);
            bool conv16 = gbits == 16 && f->b->dtype == TILE_DT_F32;
            /* the same 16- or 8-bit dtype: the bits move as they are (lay_copy_vector), so runs
             * of 16 bytes of the global (8 elements at most) */
            bool raw = f->b->dtype == other->buf->dtype && (gbits == 16 || gbits == 8);
            int gb = gbits / 8;
            int run = (conv16 || raw) ? (16 / gb > 8 ? 8 : 16 / gb) : 0;
            int narrow = run && f->elems >= run * (int64_t)P->threads;
            int v = vec_of_bytes(narrow ? gb : bytes < 4 ? 4 : bytes, f->ext[f->b->rank - 1]);
            if (v > f->vec_hint) f->vec_hint = v;
        }
        return;
    }
    case IR_S_FILL: {
        lfrag *f = frag_of(P, s->regions[0].buf);
        if (f && !ir_region_is_whole(&s->regions[0])) to_shared(P, f, "filled in part");
        expr_shared(P, s->value, "used in a fill value");
        return;
    }
    case IR_S_REDUCE: {
        const ir_region *src = &s->regions[0], *dst = &s->regions[1];
        lfrag *fs = frag_of(P, src->buf), *fd = frag_of(P, dst->buf);
        if (!fs && !fd) return;
        tile_dtype ct = dst->buf->dtype;
        bool f32 = (ct == TILE_DT_F32 || ct == TILE_DT_F16 || ct == TILE_DT_BF16) && tile_dtype_is_float(src->buf->dtype) && src->buf->dtype != TILE_DT_F64;
        bool ok = fs && fd && !fs->shared && !fd->shared && ir_region_is_whole(src) && ir_region_is_whole(dst) && f32;
        if (!ok) {
            const char *why = !f32 ? "reduced in a dtype the register reduction does not cover (f32 sums, max and min)"
                                   : "in a reduction whose other side is not a whole register fragment";
            if (fs) to_shared(P, fs, why);
            if (fd) to_shared(P, fd, why);
            return;
        }
        int map[8], r = fs->b->rank, dr = fd->b->rank;
        for (int k = 0, j = 0; k < r; k++) {
            if (k == s->dim) {
                if (dr == r) map[j++] = -1;
                continue;
            }
            map[j++] = k;
        }
        if (fs->has) {
            ir_layout want = lay_project(&fs->lay, map, dr);
            require(P, fd, &want, "a reduction");
        } else if (fd->has) {
            ir_layout l = lay_lift(&fd->lay, map, dr, r, fs->ext);
            require(P, fs, &l, "a reduction");
        }
        return;
    }
    case IR_S_GEMM: {
        lfrag *fa = frag_of(P, s->regions[0].buf), *fb = frag_of(P, s->regions[1].buf), *fc = frag_of(P, s->regions[2].buf);
        if (P->wg && fc) {
            /* wgmma: the accumulator in its layout, a fragment A (the RS form) in the same
             * layout over its K columns, B from shared memory */
            ir_layout l = lay_wgmma(P->wg_c, P->wg_mt, fc->ext[1]);
            require(P, fc, &l, "wgmma's accumulator");
            if (fa) {
                ir_layout la = lay_wgmma(P->wg_c, P->wg_mt, fa->ext[1]);
                la.origin = "wgmma A operand";
                require(P, fa, &la, "wgmma's A operand");
            }
            if (fb) to_shared(P, fb, "wgmma's B operand (read from shared memory)");
            return;
        }
        if (fa) to_shared(P, fa, "an operand of the SIMT GEMM (read from shared memory)");
        if (fb) to_shared(P, fb, "an operand of the SIMT GEMM (read from shared memory)");
        if (fc && (!ir_region_is_whole(&s->regions[2]) || fc->b->rank != 2)) to_shared(P, fc, "the accumulator of a GEMM on part of it");
        else if (fc && !fc->shared && !fc->has) {
            ir_layout l;
            if (lay_simt_gemm(fc->ext[0], fc->ext[1], P->threads, &l)) require(P, fc, &l, "the SIMT GEMM");
            else {
                int64_t e[2] = {fc->ext[0], fc->ext[1]};
                l = lay_blocked(2, e, P->threads, 1);
                l.origin = "blocked (SIMT GEMM)";
                require(P, fc, &l, "the SIMT GEMM");
            }
        }
        return;
    }
    default: stmt_shared(P, s, "used by a statement the register lowering does not cover"); return;
    }
}

/* ---- writing the decisions ---- */

static ir_layout *arena_layout(lp *P, const ir_layout *l) {
    ir_layout *n = TILE_NEW(&P->m->arena, ir_layout);
    *n = *l;
    return n;
}

static ir_lowering *new_lower(lp *P, const char *kind) {
    ir_lowering *w = TILE_NEW(&P->m->arena, ir_lowering);
    memset(w, 0, sizeof *w);
    w->kind = kind;
    return w;
}

/* 32-bit registers a thread for f (16-bit and 8-bit elements packed) */
static int words_of(const lfrag *f) {
    int bits = tile_dtype_bits(f->b->dtype);
    return (int)(((int64_t)f->lay.slots * (bits < 8 ? 8 : bits) + 31) / 32);
}

static void annotate(lp *P, ir_stmt *s) {
    if (!s) return;
    switch (s->kind) {
    case IR_S_COPY: {
        lfrag *fa = frag_of(P, s->regions[0].buf), *fb = frag_of(P, s->regions[1].buf);
        lfrag *f = fa && fa->has ? fa : fb && fb->has ? fb : NULL;
        if (!f) break;
        if (fa && fb && fa->has && fb->has) {
            ir_lowering *w = new_lower(P, "regs");
            w->detail = "each thread copies its own slots";
            s->lower = w;
            break;
        }
        const ir_region *o = f == fa ? &s->regions[1] : &s->regions[0];
        bool g = o->buf->scope == IR_SCOPE_GLOBAL;
        int64_t last = 1;
        if (f->b->rank > 0 && !ir_const_int_value(f->b->shape[f->b->rank - 1], &last)) last = 1;
        int vw = g ? lay_copy_vector(&f->lay, f->b->dtype, o->buf->dtype, last) : 0;
        ir_lowering *w = new_lower(P, vw ? "vec" : "regs");
        if (vw) {
            int bytes = vw * tile_dtype_bits(o->buf->dtype) / 8;
            w->detail = tile_arena_printf(&P->m->arena, "%d elements (%d bytes of the global) a thread at a time when aligned (checked at run time)", vw, bytes);
        } else
            w->detail = "element by element from each thread's slots";
        s->lower = w;
        break;
    }
    case IR_S_REDUCE: {
        lfrag *fs = frag_of(P, s->regions[0].buf);
        if (!fs || !fs->has) break;
        int lanes = 1, across = 1;
        int64_t below = 1;
        for (int i = 0; i < fs->lay.ndig; i++) {
            const ir_layout_digit *d = &fs->lay.dig[i];
            if (!d->thread) continue;
            if (d->dim == s->dim) {
                if (below * d->size <= 32) lanes *= d->size;
                else across *= d->size;
            }
            below *= d->size;
        }
        ir_lowering *w = new_lower(P, "regs");
        w->detail = tile_arena_printf(&P->m->arena, "each thread folds its slots, then %d lanes by shuffles, %d groups of them through shared memory", lanes, across);
        s->lower = w;
        break;
    }
    case IR_S_GEMM: {
        lfrag *fc = frag_of(P, s->regions[2].buf);
        if (!fc || !fc->has) break;
        if (P->wg) {
            ir_lowering *w = new_lower(P, "wgmma");
            lfrag *fa = frag_of(P, s->regions[0].buf);
            w->detail = tile_arena_printf(&P->m->arena, "%s, m64n%lldk%d, %d warpgroup%s", fa ? "RS: A from registers" : "SS: A and B from shared memory",
                                          (long long)fc->ext[1], tile_dtype_bits(s->regions[1].buf->dtype) == 8 ? 32 : 16, P->wg_c, P->wg_c > 1 ? "s" : "");
            s->lower = w;
            break;
        }
        const char *was = s->lower ? s->lower->why : NULL;
        ir_lowering *w = new_lower(P, "simt-regs");
        w->why = was;
        w->detail = tile_arena_printf(&P->m->arena, "each thread accumulates its %d elements of C in registers, A and B read from memory", fc->lay.slots);
        s->lower = w;
        break;
    }
    default: break;
    }
    for (int i = 0; i < s->nbody; i++) annotate(P, s->body[i]);
}

/* ---- sm_90a: can every GEMM of the kernel run on wgmma? ----
 * Each T.gemm: C a whole f32 fragment [M, N] (N a multiple of 8 up to 256), A a whole shared
 * tile or (16-bit) fragment, B a whole shared tile of A's dtype (f16, bf16, fp8; fp8 with B
 * K-major and a 16-bit result), K a multiple of wgmma's k step; every GEMM the same M, a
 * multiple of 64. The warpgroups: M / 64 of them up to two (wgmma's m64 each), m64 tiles
 * beyond that (M = 256: two of two), at most 128 accumulator registers a thread per GEMM. */
static void find_gemms(ir_stmt *s, ir_stmt **g, int *n, int cap) {
    if (!s) return;
    if (s->kind == IR_S_GEMM && *n < cap) g[(*n)++] = s;
    for (int i = 0; i < s->nbody; i++) find_gemms(s->body[i], g, n, cap);
}
static bool copied_out_f32(const ir_stmt *s, const ir_buffer *c) {
    if (!s) return false;
    if (s->kind == IR_S_COPY && s->regions[0].buf == c && s->regions[1].buf->dtype == TILE_DT_F32) return true;
    for (int i = 0; i < s->nbody; i++)
        if (copied_out_f32(s->body[i], c)) return true;
    return false;
}
static bool is_tc_dt(tile_dtype d) { return d == TILE_DT_F16 || d == TILE_DT_BF16 || d == TILE_DT_FP8_E4M3 || d == TILE_DT_FP8_E5M2; }

static const char *wgmma_plan(lp *P, ir_stmt *k) {
    ir_stmt *g[16];
    int n = 0;
    find_gemms(k->body[0], g, &n, 16);
    if (n == 0) return NULL;
    if (n == 16) return "more than 15 GEMMs";
    int64_t M = -1, maxn = 0;
    for (int i = 0; i < n; i++) {
        const ir_stmt *s = g[i];
        const ir_region *A = &s->regions[0], *B = &s->regions[1], *C = &s->regions[2];
        lfrag *fc = frag_of(P, C->buf), *fa = frag_of(P, A->buf);
        if (!fc || C->buf->dtype != TILE_DT_F32 || C->buf->rank != 2 || !ir_region_is_whole(C)) return "a GEMM accumulator that is not a whole f32 fragment";
        if (s->trans_a) return "transpose_A (wgmma reads A K-major)";
        if (B->buf->scope != IR_SCOPE_SHARED || B->buf->rank != 2 || !ir_region_is_whole(B)) return "a B operand that is not a whole shared tile";
        tile_dtype dt = B->buf->dtype;
        if (!is_tc_dt(dt) || A->buf->dtype != dt) return "operand dtypes wgmma does not take (f16, bf16, fp8, the same for A and B)";
        if (fa) {
            if (tile_dtype_bits(dt) != 16 || !ir_region_is_whole(A) || fa->b->rank != 2) return "an A fragment that is not a whole 16-bit fragment";
        } else if (A->buf->scope != IR_SCOPE_SHARED || A->buf->rank != 2 || !ir_region_is_whole(A))
            return "an A operand that is not a whole shared tile or fragment";
        if (tile_dtype_bits(dt) == 8 && !s->trans_b) return "fp8 with B stored K x N (fp8 wgmma reads K-major B only)";
        if (tile_dtype_bits(dt) == 8 && copied_out_f32(k->body[0], C->buf) && !tb_opt_bool(P->f->opts, TB_OPT_sm90_fp8_f32))
            return "fp8 with an f32 result (wgmma's fp8 sums are within about 2e-4 of exact f32 sums, not the f32 check's 1e-5; TILE_SM90_FP8_F32=1 takes it)";
        int64_t m = fc->ext[0], nn = fc->ext[1], kk;
        if (!ir_const_int_value(A->buf->shape[1], &kk)) return "a non-constant K";
        if (nn % 8 || nn < 8 || nn > 256) return "N not a multiple of 8 up to 256";
        if (kk % (tile_dtype_bits(dt) == 8 ? 32 : 16)) return "K not a multiple of wgmma's k step";
        if (m % 64) return "M not a multiple of 64 (wgmma's m64)";
        if (M >= 0 && m != M) return "GEMMs with different M";
        M = m;
        if (nn > maxn) maxn = nn;
    }
    int c = M / 64 > 2 ? 2 : (int)(M / 64);
    int mt = (int)(M / (64 * c));
    if (M % (64 * c) || mt * maxn > 256) return "accumulators of more than 128 registers a thread";
    P->wg = true;
    P->wg_c = c;
    P->wg_mt = mt;
    return NULL;
}

/* ---- pipelines (wgmma kernels): how many stages ----
 * A T.Pipelined loop's copies into shared memory are issued ahead by the wgmma lowerings,
 * into a ring of stages. The number is a performance choice (the loop's meaning is serial):
 * the loop's num_stages, raised to 4 where the stage's tiles fit 4 times in 200 KiB (two
 * stages leave the copy engine idle while the GEMMs of a stage run). */
static size_t stage_bytes(const ir_stmt *s) {
    if (!s) return 0;
    size_t n = 0;
    if (s->kind == IR_S_COPY && s->regions[0].buf->scope == IR_SCOPE_GLOBAL && s->regions[1].buf->scope == IR_SCOPE_SHARED) {
        int64_t e = 1, v;
        const ir_buffer *b = s->regions[1].buf;
        for (int d = 0; d < b->rank; d++) e *= ir_const_int_value(b->shape[d], &v) ? v : 0;
        n += tile_dtype_storage_bytes(b->dtype, (size_t)e);
    }
    for (int i = 0; i < s->nbody; i++) n += stage_bytes(s->body[i]);
    return n;
}
/* Iterations a stage (the K-steps one stage's barriers and TMA boxes carry): a loop whose body
 * is a GEMM's main loop — copies from rank-2 globals into the whole of its shared operand
 * tiles, and the GEMM — whose tiles hold fewer than 128 bytes of K takes U = 128 / (bytes of
 * K) consecutive iterations a stage, when every copy's K offset steps by the tile's K extent
 * from one iteration to the next (affine in the loop variable with that coefficient) and its
 * other offset does not move with the loop: the U tiles are then one box of the global, read
 * by one TMA copy with 128-byte rows, and the U GEMMs one run of wgmma k-steps between two
 * barrier waits. Returns U (1: none) and, in *why, what declined it when a larger U was
 * possible. */
static int kmerge_of(lp *P, const ir_stmt *loop, const char **why) {
    *why = NULL;
    if (!tb_opt_bool(P->f->opts, TB_OPT_sm90_kmerge)) return 1;
    const ir_stmt *body = loop->body[0];
    const ir_stmt *const *st = &body;
    int ns = 1;
    if (body && body->kind == IR_S_SEQ) {
        st = (const ir_stmt *const *)body->body;
        ns = body->nbody;
    }
    const ir_stmt *g = NULL;
    for (int i = 0; i < ns; i++)
        if (st[i] && st[i]->kind == IR_S_GEMM) {
            if (g) return 1;
            g = st[i];
        }
    if (!g || g->trans_a) return 1;
    const ir_buffer *As = g->regions[0].buf, *Bs = g->regions[1].buf;
    int64_t bk;
    if (As->scope != IR_SCOPE_SHARED || Bs->scope != IR_SCOPE_SHARED || As->rank != 2 || Bs->rank != 2 || !ir_const_int_value(As->shape[1], &bk) || bk <= 0)
        return 1;
    int64_t kb = bk * tile_dtype_bits(As->dtype) / 8;
    if (kb >= 128 || 128 % kb) return 1;
    int u = (int)(128 / kb);
    int ncp = 0;
    bool seenA = false, seenB = false;
    for (int i = 0; i < ns; i++) {
        const ir_stmt *s = st[i];
        if (!s || s == g) continue;
        if (s->kind != IR_S_COPY || s->nregions != 2 || s->regions[0].buf->scope != IR_SCOPE_GLOBAL || s->regions[0].buf->rank != 2)
            return 1;
        const ir_buffer *d = s->regions[1].buf;
        if ((d != As && d != Bs) || !ir_region_is_whole(&s->regions[1])) return 1;
        int kd = d == As ? 1 : g->trans_b ? 1 : 0;
        int64_t ck = 0, co = 0;
        if (!opt_affine_coeff(s->regions[0].start[kd], loop->var, &ck) || !opt_affine_coeff(s->regions[0].start[1 - kd], loop->var, &co) || ck != bk || co != 0) {
            *why = tile_arena_printf(&P->m->arena, "one iteration a stage: the copy into %s does not step by block_K (%lld) along K each iteration", d->name, (long long)bk);
            return 1;
        }
        seenA |= d == As;
        seenB |= d == Bs;
        ncp++;
    }
    if (!seenA || !seenB || ncp != 2) return 1;
    return u;
}

static void plan_pipelines(lp *P, ir_stmt *s) {
    if (!s) return;
    if (s->kind == IR_S_FOR && s->loop_kind == IR_LOOP_PIPELINED) {
        size_t b = stage_bytes(s->body[0]);
        int req = s->num_stages > 0 ? s->num_stages : 1;
        const char *kwhy = NULL;
        int u = kmerge_of(P, s, &kwhy);
        /* a merged stage must still leave room for two in the ring */
        while (u > 1 && 2 * (size_t)u * b > 200 * 1024) u /= 2;
        /* num_stages counts iterations in flight: as many of them in merged stages */
        int st = u > 1 ? (req + u - 1) / u : req;
        size_t sb = (size_t)u * b;
        while (st < 4 && sb > 0 && (size_t)(st + 1) * sb <= 200 * 1024) st++;
        ir_lowering *w = new_lower(P, "pipeline");
        w->iparam[0] = st;
        w->iparam[1] = u;
        if (u > 1)
            w->detail = tile_arena_printf(&P->m->arena, "%d stages of %zu bytes, %d iterations a stage, loads by a producer warpgroup", st, sb, u);
        else
            w->detail = tile_arena_printf(&P->m->arena, "%d stages of %zu bytes, loads by a producer warpgroup", st, sb);
        tile_strbuf why = {0};
        if (u > 1)
            tile_sb_printf(&why, "%d iterations a stage: each holds %lld bytes of K, and the copies step by block_K along K, so %d of them are one TMA box of 128-byte rows and one run of wgmma k-steps between barrier waits",
                           u, (long long)(128 / u), u);
        else if (kwhy)
            tile_sb_puts(&why, kwhy);
        if (st * u != req)
            tile_sb_printf(&why, "%snum_stages=%d asked; %d%s fit (a deeper ring keeps the loads ahead of the GEMMs; the loop's meaning is serial)", why.len ? "; " : "", req, st,
                           u > 1 ? " stages" : "");
        if (why.len) w->why = tile_arena_printf(&P->m->arena, "%s", why.data);
        tile_sb_free(&why);
        s->lower = w;
    }
    for (int i = 0; i < s->nbody; i++) plan_pipelines(P, s->body[i]);
}

static void run_kernel(lp *P, ir_stmt *k) {
    P->k = k;
    P->threads = k->threads > 0 ? k->threads : 128;
    P->nfr = 0;
    for (int i = 0; i < P->f->nbuffers; i++) P->idx[i] = -1;
    collect(P, k->body[0], true);
    if (P->nfr == 0) return;
    /* fragments past the register budget whose rows are independent: run the rows in groups
     * (rowgroup.c), then collect the shrunk fragments again */
    if (tb_opt_bool(P->f->opts, TB_OPT_simt_regfrag) && tb_opt_int(P->f->opts, TB_OPT_simt_memopt) >= 1) {
        ir_buffer *bs[LP_MAXF];
        for (int i = 0; i < P->nfr; i++) bs[i] = P->fr[i].b;
        if (opt_row_groups(P->m, P->f, k, bs, P->nfr, P->threads, LP_REG_BUDGET)) {
            P->nfr = 0;
            for (int i = 0; i < P->f->nbuffers; i++) P->idx[i] = -1;
            collect(P, k->body[0], true);
        }
    }
    P->wg = false;
    /* TILE_CUDA_MMA_SYNC=1 puts the mma.sync lowering first on Hopper too: it takes the
     * program's thread count and its own fragment layouts, so no wgmma plan is made */
    if (P->sm >= 90 && tb_opt_int(P->f->opts, TB_OPT_cuda_mma_sync) != 1) {
        const char *why = wgmma_plan(P, k);
        ir_stmt *g[16];
        int n = 0;
        find_gemms(k->body[0], g, &n, 16);
        if (P->wg) {
            ir_lowering *w = new_lower(P, "wgmma-warpgroups");
            w->iparam[0] = P->wg_c;
            w->iparam[1] = P->wg_mt;
            w->detail = tile_arena_printf(&P->m->arena, "%d consumer warpgroup%s of %d rows", P->wg_c, P->wg_c > 1 ? "s" : "", 64 * P->wg_mt);
            if (P->threads != 128 * P->wg_c)
                w->why = tile_arena_printf(&P->m->arena, "threads=%d asked; the program does not depend on the thread count, and wgmma's m64 tiles give %d rows to each of %d warpgroups",
                                           P->threads, 64 * P->wg_mt, P->wg_c);
            k->lower = w;
            plan_pipelines(P, k->body[0]);
            tile_log(TILE_LOG_INFO, "layout: %s:%d: kernel: %s (%s)%s%s", opt_loc_file(k->loc), k->loc.line, w->kind, w->detail, w->why ? "; " : "", w->why ? w->why : "");
            P->threads = 128 * P->wg_c;
        } else if (why && n) {
            tile_log(TILE_LOG_INFO, "layout: %s:%d: the kernel's GEMMs stay off wgmma: %s", opt_loc_file(k->loc), k->loc.line, why);
            for (int i = 0; i < n; i++) {
                ir_lowering *w = new_lower(P, "simt-regs");
                w->why = tile_arena_printf(&P->m->arena, "wgmma declined: %s", why);
                g[i]->lower = w;
                ir_explain_stmt(P->f, g[i], "layout", IR_DEC_DECLINED, "wgmma (Hopper tensor cores)", "%s", why);
            }
        }
    }
    bool off = !tb_opt_bool(P->f->opts, TB_OPT_simt_regfrag) || tb_opt_int(P->f->opts, TB_OPT_simt_memopt) < 1;
    if (off)
        for (int i = 0; i < P->nfr; i++) to_shared(P, &P->fr[i], "TILE_SIMT_REGFRAG=0 or TILE_SIMT_MEMOPT=0");
    for (int attempt = 0; attempt <= P->nfr + 1; attempt++) {
        P->restart = false;
        P->nnests = 0;
        for (int i = 0; i < P->nfr; i++) P->fr[i].has = false;
        anchors(P, k->body[0]);
        for (int round = 0; round < 4 * P->nfr + 8; round++) {
            P->changed = false;
            do_block(P, k->body[0]);
            if (P->restart) break;
            if (P->changed) continue;
            /* nothing decided this round: the largest undecided fragment gets a blocked layout */
            lfrag *big = NULL;
            for (int i = 0; i < P->nfr; i++) {
                lfrag *f = &P->fr[i];
                if (!f->shared && !f->has && (!big || f->elems > big->elems)) big = f;
            }
            if (!big) break;
            int v = big->vec_hint ? big->vec_hint : vec_of_bytes(4, big->ext[big->b->rank - 1]);
            big->lay = lay_blocked(big->b->rank, big->ext, P->threads, v);
            big->has = true;
        }
        if (!P->restart) break;
    }
    /* register pressure: the largest fragments to local memory until the rest fit */
    int words = 0;
    for (int i = 0; i < P->nfr; i++)
        if (P->fr[i].has) words += words_of(&P->fr[i]);
    int budget = P->wg ? LP_REG_BUDGET_WG : LP_REG_BUDGET;
    while (words > budget) {
        lfrag *big = NULL;
        for (int i = 0; i < P->nfr; i++) {
            lfrag *f = &P->fr[i];
            if (f->has && !f->lay.local && f->lay.slots >= 16 && (!big || words_of(f) > words_of(big))) big = f;
        }
        if (!big) break;
        big->lay.local = true;
        words -= words_of(big);
        big->lay.note = tile_arena_printf(&P->m->arena, "%d registers a thread over the budget of %d: kept in local memory", words_of(big), budget);
        tile_log(TILE_LOG_INFO, "layout: %s:%d: fragment '%s' (%d elements a thread at %d threads) goes to local memory: the kernel's fragments need more than %d registers a thread",
                 opt_loc_file(big->b->loc), big->b->loc.line, big->b->name, big->lay.slots, P->threads, budget);
        ir_explain_add(P->f, big->b->loc, tile_arena_printf(&P->m->arena, "fragment %s", big->b->name), "layout", IR_DEC_DECLINED, "registers", "%s", big->lay.note);
    }
    for (int i = 0; i < P->nfr; i++) {
        lfrag *f = &P->fr[i];
        if (f->has) {
            f->b->layout = arena_layout(P, &f->lay);
            tile_log(TILE_LOG_DEBUG, "layout: fragment '%s' in registers, %d slots a thread (%s)", f->b->name, f->lay.slots, f->lay.origin ? f->lay.origin : "");
        } else {
            ir_layout sh;
            memset(&sh, 0, sizeof sh);
            sh.kind = IR_LAYOUT_SHARED;
            sh.rank = f->b->rank;
            sh.note = f->why ? f->why : "no layout inferred";
            f->b->layout = arena_layout(P, &sh);
            tile_log(TILE_LOG_INFO, "layout: %s:%d: fragment '%s' stays in shared memory: %s", opt_loc_file(f->b->loc), f->b->loc.line, f->b->name, sh.note);
            ir_explain_add(P->f, f->b->loc, tile_arena_printf(&P->m->arena, "fragment %s", f->b->name), "layout", IR_DEC_DECLINED, "registers", "%s", sh.note);
        }
    }
    /* nests: only those whose fragments all stayed in registers (the last round's) */
    for (int i = 0; i < P->nnests; i++) {
        ir_lowering *w = new_lower(P, "regs");
        w->layout = arena_layout(P, &P->nests[i].lay);
        w->detail = tile_arena_printf(&P->m->arena, "%d slots a thread", P->nests[i].lay.slots);
        P->nests[i].s->lower = w;
    }
    annotate(P, k->body[0]);
}

static void walk_kernels(lp *P, ir_stmt *s) {
    if (!s) return;
    if (s->kind == IR_S_KERNEL) {
        run_kernel(P, s);
        return;
    }
    for (int i = 0; i < s->nbody; i++) walk_kernels(P, s->body[i]);
}

static int run_sm(ir_module *m, ir_func *f, int sm) {
    lp P;
    memset(&P, 0, sizeof P);
    P.m = m;
    P.f = f;
    P.sm = sm;
    P.idx = tile_xcalloc((size_t)f->nbuffers + 1, sizeof(int));
    walk_kernels(&P, f->body);
    free(P.idx);
    free(P.nests);
    return 0;
}

static int run_cuda(ir_module *m, ir_func *f, tile_diags *d) {
    (void)d;
    return run_sm(m, f, opt_cuda_arch());
}
/* OpenCL has no tensor cores: the portable layouts, unless TILE_LAYOUT_ARCH=sm_90a asks for
 * the wgmma plan's (so that PoCL tests the portable code on the layouts the cuda target's
 * fallback gets, without a GPU) */
static int run_opencl(ir_module *m, ir_func *f, tile_diags *d) {
    (void)d;
    return run_sm(m, f, opt_arch_sm(tb_opt_str(f->opts, TB_OPT_layout_arch)));
}

const opt_pass opt_pass_layout = {"layout", "fragment layouts (registers or shared memory) and the lowering of the ops on them", run_cuda};
const opt_pass opt_pass_layout_opencl = {"layout", "fragment layouts (registers or shared memory) and the lowering of the ops on them", run_opencl};
