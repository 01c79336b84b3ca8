/* deps.c — dependence analysis of plain-form loop nests (see deps.h), and the `deps` pass,
 * which rewrites nothing and logs the analysis of every loop (TILE_LOG=debug).
 *
 * For a loop L the analysis
 *   1. walks L's body once to find the loop variables defined inside it ("inner"), the
 *      locals assigned inside it, the buffers allocated inside it (private) and every
 *      element access (buffer, index expressions, read/write, statement);
 *   2. tests every pair (write, access) of one buffer for a conflict between two different
 *      iterations of L (dep_pair), and recognises buffers that are only updated by
 *      reduction statements;
 *   3. runs a must-assign walk over L's body to find locals read before they are assigned
 *      in an iteration (carried through the local), recognises reduction locals, and checks
 *      that the other locals assigned in L are dead after it (privatisable). */
#include "deps.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opt.h"

/* ---------- affine forms ---------- */
enum { AFF_MAX = 12 };
typedef struct aff {
    int n;
    const ir_var *v[AFF_MAX];
    int64_t c[AFF_MAX];
    int64_t k;
} aff;

#define COEF_LIMIT ((int64_t)1 << 40)

static bool aff_add_term(aff *a, const ir_var *v, int64_t c) {
    for (int i = 0; i < a->n; i++)
        if (a->v[i] == v) {
            a->c[i] += c;
            return a->c[i] < COEF_LIMIT && a->c[i] > -COEF_LIMIT;
        }
    if (a->n == AFF_MAX) return false;
    a->v[a->n] = v;
    a->c[a->n++] = c;
    return true;
}

static bool aff_scale_add(aff *dst, const aff *src, int64_t s) {
    if (src->k > COEF_LIMIT || src->k < -COEF_LIMIT || s > COEF_LIMIT || s < -COEF_LIMIT) return false;
    dst->k += src->k * s;
    if (dst->k > COEF_LIMIT || dst->k < -COEF_LIMIT) return false;
    for (int i = 0; i < src->n; i++) {
        if (src->c[i] > COEF_LIMIT / 1024 || src->c[i] < -COEF_LIMIT / 1024 || (s > 1024 || s < -1024)) {
            /* keep products well inside int64 */
            if ((double)src->c[i] * (double)s > (double)COEF_LIMIT || (double)src->c[i] * (double)s < -(double)COEF_LIMIT) return false;
        }
        if (!aff_add_term(dst, src->v[i], src->c[i] * s)) return false;
    }
    return true;
}

static int64_t aff_coef(const aff *a, const ir_var *v) {
    for (int i = 0; i < a->n; i++)
        if (a->v[i] == v) return a->c[i];
    return 0;
}

/* variant(v): true for locals whose value may change inside the loop being analysed
 * (they cannot be symbols). NULL: every local is a symbol. */
typedef bool (*variant_fn)(const void *ctx, const ir_var *v);

static bool aff_of(const ir_expr *e, variant_fn variant, const void *ctx, aff *out, int depth) {
    if (!e || depth > 64 || !tile_dtype_is_int(e->dtype)) return false;
    switch (e->kind) {
    case IR_E_CONST:
        memset(out, 0, sizeof *out);
        out->k = e->ival;
        return e->ival < COEF_LIMIT && e->ival > -COEF_LIMIT;
    case IR_E_VAR:
        if (!e->var) return false;
        if (e->var->kind == IR_VAR_LOCAL && variant && variant(ctx, e->var)) return false;
        memset(out, 0, sizeof *out);
        out->n = 1;
        out->v[0] = e->var;
        out->c[0] = 1;
        return true;
    case IR_E_CAST: {
        /* integer widening / same-width casts are transparent (indices are assumed not to wrap) */
        const ir_expr *a = e->args[0];
        if (!tile_dtype_is_int(a->dtype) || tile_dtype_bits(e->dtype) < 32) return false;
        return aff_of(a, variant, ctx, out, depth + 1);
    }
    case IR_E_UNARY:
        if (e->op != IR_U_NEG) return false;
        {
            aff a;
            if (!aff_of(e->args[0], variant, ctx, &a, depth + 1)) return false;
            memset(out, 0, sizeof *out);
            return aff_scale_add(out, &a, -1);
        }
    case IR_E_BINARY: {
        if (e->op != IR_B_ADD && e->op != IR_B_SUB && e->op != IR_B_MUL) return false;
        aff a, b;
        if (!aff_of(e->args[0], variant, ctx, &a, depth + 1) || !aff_of(e->args[1], variant, ctx, &b, depth + 1)) return false;
        memset(out, 0, sizeof *out);
        if (e->op == IR_B_MUL) {
            if (a.n == 0) return aff_scale_add(out, &b, a.k);
            if (b.n == 0) return aff_scale_add(out, &a, b.k);
            return false; /* product of two variables: not affine */
        }
        return aff_scale_add(out, &a, 1) && aff_scale_add(out, &b, e->op == IR_B_ADD ? 1 : -1);
    }
    default: return false;
    }
}

bool opt_affine_coeff(const ir_expr *e, const ir_var *v, int64_t *coef) {
    aff a;
    if (!aff_of(e, NULL, NULL, &a, 0)) return false;
    if (coef) *coef = aff_coef(&a, v);
    return true;
}

static int64_t gcd64(int64_t a, int64_t b) {
    if (a < 0) a = -a;
    if (b < 0) b = -b;
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* ---------- statement walking helpers ---------- */
typedef void (*expr_cb)(void *ctx, const ir_expr *e);

static void walk_expr(const ir_expr *e, expr_cb cb, void *ctx) {
    if (!e) return;
    cb(ctx, e);
    for (int i = 0; i < e->nargs; i++) walk_expr(e->args[i], cb, ctx);
}

/* Every expression directly held by statement s (not its sub-statements). */
static void stmt_exprs(const ir_stmt *s, expr_cb cb, void *ctx) {
    switch (s->kind) {
    case IR_S_FOR: walk_expr(s->lo, cb, ctx); walk_expr(s->extent, cb, ctx); break;
    case IR_S_WHILE: case IR_S_IF: case IR_S_ASSERT: walk_expr(s->cond, cb, ctx); break;
    case IR_S_ASSIGN: walk_expr(s->value, cb, ctx); break;
    case IR_S_STORE: case IR_S_ATOMIC:
        for (int i = 0; s->buf && i < s->buf->rank; i++) walk_expr(s->idx[i], cb, ctx);
        walk_expr(s->value, cb, ctx);
        break;
    case IR_S_KERNEL:
        for (int i = 0; i < s->ngrid; i++) walk_expr(s->grid[i], cb, ctx);
        break;
    case IR_S_COPY: case IR_S_FILL: case IR_S_GEMM: case IR_S_REDUCE:
        for (int r = 0; r < s->nregions; r++)
            for (int i = 0; s->regions[r].buf && i < s->regions[r].buf->rank; i++) {
                walk_expr(s->regions[r].start[i], cb, ctx);
                walk_expr(s->regions[r].extent[i], cb, ctx);
            }
        if (s->kind == IR_S_FILL) walk_expr(s->value, cb, ctx);
        break;
    default: break;
    }
}



typedef struct var_find {
    const ir_var *v;
    bool found;
} var_find;

static void find_var_cb(void *ctx, const ir_expr *e) {
    var_find *f = ctx;
    if (e->kind == IR_E_VAR && e->var == f->v) f->found = true;
}

bool opt_stmt_uses_var(const ir_stmt *s, const ir_var *v) {
    if (!s) return false;
    if ((s->kind == IR_S_ASSIGN || s->kind == IR_S_ATOMIC) && s->var == v) return true;
    var_find f = {v, false};
    stmt_exprs(s, find_var_cb, &f);
    if (f.found) return true;
    for (int i = 0; i < s->nbody; i++)
        if (s->body && opt_stmt_uses_var(s->body[i], v)) return true;
    return false;
}

/* ---------- must-assign walk: locals read before they are assigned ---------- */
typedef struct mdef {
    int nvars;
    unsigned char *exposed; /* var id -> read while possibly unassigned */
    const unsigned char *track; /* var id -> interesting (NULL: all locals) */
} mdef;

typedef struct md_expr_ctx {
    mdef *m;
    const unsigned char *def;
} md_expr_ctx;

static void md_expr_cb(void *ctx, const ir_expr *e) {
    md_expr_ctx *c = ctx;
    if (e->kind != IR_E_VAR || !e->var || e->var->kind != IR_VAR_LOCAL) return;
    int id = e->var->id;
    if (id < 0 || id >= c->m->nvars) return;
    if (c->m->track && !c->m->track[id]) return;
    if (!c->def[id]) c->m->exposed[id] = 1;
}

static void md_stmt(mdef *m, const ir_stmt *s, unsigned char *def) {
    if (!s) return;
    md_expr_ctx ec = {m, def};
    size_t n = (size_t)m->nvars + 1;
    switch (s->kind) {
    case IR_S_SEQ:
        for (int i = 0; i < s->nbody; i++) md_stmt(m, s->body[i], def);
        break;
    case IR_S_ASSIGN:
        stmt_exprs(s, md_expr_cb, &ec);
        if (s->var && s->var->id >= 0 && s->var->id < m->nvars) def[s->var->id] = 1;
        break;
    case IR_S_IF: {
        stmt_exprs(s, md_expr_cb, &ec);
        unsigned char *d1 = tile_xmalloc(n), *d2 = tile_xmalloc(n);
        memcpy(d1, def, n);
        memcpy(d2, def, n);
        md_stmt(m, s->body[0], d1);
        if (s->nbody >= 2 && s->body[1]) md_stmt(m, s->body[1], d2);
        for (size_t i = 0; i < n; i++) def[i] = d1[i] && d2[i];
        free(d1);
        free(d2);
        break;
    }
    case IR_S_FOR: case IR_S_WHILE: case IR_S_KERNEL: {
        /* the body may run zero times: what it assigns is not assigned after it */
        stmt_exprs(s, md_expr_cb, &ec);
        unsigned char *d1 = tile_xmalloc(n);
        memcpy(d1, def, n);
        md_stmt(m, s->body[0], d1);
        free(d1);
        break;
    }
    default:
        stmt_exprs(s, md_expr_cb, &ec);
        if (s->kind == IR_S_ATOMIC && s->var && s->var->id >= 0 && s->var->id < m->nvars) def[s->var->id] = 1;
        break;
    }
}

static bool has_jump(const ir_stmt *s) {
    if (!s) return false;
    if (s->kind == IR_S_BREAK || s->kind == IR_S_CONTINUE) return true;
    for (int i = 0; i < s->nbody; i++)
        if (s->body && has_jump(s->body[i])) return true;
    return false;
}

/* Path from f->body down to target: parents[k] holds target at child index idx[k]. */
enum { PATH_MAX_DEPTH = 256 };
static bool find_path(const ir_stmt *s, const ir_stmt *target, const ir_stmt **parents, int *idx, int *depth) {
    if (s == target) return true;
    if (!s || *depth >= PATH_MAX_DEPTH) return false;
    for (int i = 0; i < s->nbody; i++) {
        if (!s->body || !s->body[i]) continue;
        parents[*depth] = s;
        idx[*depth] = i;
        (*depth)++;
        if (find_path(s->body[i], target, parents, idx, depth)) return true;
        (*depth)--;
    }
    return false;
}

bool opt_local_live_after(const ir_func *f, const ir_stmt *s, const ir_var *v) {
    const ir_stmt *parents[PATH_MAX_DEPTH];
    int idx[PATH_MAX_DEPTH], depth = 0;
    if (!f || !v || v->id < 0 || v->id >= f->nvars) return true;
    if (!find_path(f->body, s, parents, idx, &depth)) return true; /* not found: assume needed */
    size_t n = (size_t)f->nvars + 1;
    unsigned char *track = tile_xcalloc(n, 1), *exposed = tile_xcalloc(n, 1), *def = tile_xcalloc(n, 1);
    track[v->id] = 1;
    mdef m = {f->nvars, exposed, track};
    bool live = false;
    for (int lvl = depth - 1; lvl >= 0 && !live; lvl--) {
        const ir_stmt *p = parents[lvl];
        if (p->kind == IR_S_SEQ) {
            memset(def, 0, n);
            bool jump = false;
            for (int i = idx[lvl] + 1; i < p->nbody; i++) {
                md_stmt(&m, p->body[i], def);
                if (has_jump(p->body[i])) jump = true;
            }
            if (exposed[v->id]) live = true;
            else if (def[v->id] && !jump) break; /* reassigned before any later use */
        } else if (p->kind == IR_S_FOR || p->kind == IR_S_WHILE) {
            /* the next iteration runs the body again */
            memset(def, 0, n);
            if (p->kind == IR_S_WHILE) {
                md_expr_ctx ec = {&m, def};
                walk_expr(p->cond, md_expr_cb, &ec);
            }
            md_stmt(&m, p->body[0], def);
            if (exposed[v->id]) live = true;
        }
    }
    free(track);
    free(exposed);
    free(def);
    return live;
}

/* ---------- access collection ---------- */
typedef struct access {
    const ir_buffer *buf;
    ir_expr *const *idx; /* NULL: the whole buffer (tile operation) */
    bool write;
    const ir_stmt *stmt;
    int red_op;          /* -1, or the ir_reduce_kind of the reduction update it belongs to */
} access;

typedef struct dctx {
    const ir_func *f;
    const ir_stmt *L;
    int nvars, nbufs;
    unsigned char *inner;    /* var id: loop variable defined inside L */
    unsigned char *assigned; /* var id: local assigned inside L */
    unsigned char *priv;     /* buffer id: allocated inside L */
    access *acc;
    int nacc, cap;
    bool opaque;
    const char *opaque_why;
    bool brk, cont;
} dctx;

static bool ctx_variant(const void *ctx, const ir_var *v) {
    const dctx *d = ctx;
    return v->id < 0 || v->id >= d->nvars || d->assigned[v->id];
}

static void add_access(dctx *d, const ir_buffer *b, ir_expr *const *idx, bool write, const ir_stmt *s, int red_op) {
    if (!b || b->id < 0 || b->id >= d->nbufs) { d->opaque = true; d->opaque_why = "an access to an unknown buffer"; return; }
    if (d->priv[b->id]) return;
    if (d->nacc == d->cap) {
        d->cap = d->cap ? 2 * d->cap : 32;
        d->acc = tile_xrealloc(d->acc, sizeof(access) * (size_t)d->cap);
    }
    d->acc[d->nacc++] = (access){b, idx, write, s, red_op};
}

typedef struct load_ctx {
    dctx *d;
    const ir_stmt *s;
    const ir_expr *skip; /* the load that is the top-level operand of a reduction update */
    int red_op;
} load_ctx;

static void load_cb(void *ctx, const ir_expr *e) {
    load_ctx *c = ctx;
    if (e->kind == IR_E_LOAD) add_access(c->d, e->buf, e->args, false, c->s, e == c->skip ? c->red_op : -1);
}

static const ir_expr *strip_cast(const ir_expr *e) {
    while (e && e->kind == IR_E_CAST && e->nargs == 1) e = e->args[0];
    return e;
}

/* Reduction form `x op e` / `e op x` (op + max min, or x - e): returns the kind and the
 * operand `e`, with *self the operand that is x (matched by is_self). */
typedef bool (*self_fn)(const void *ctx, const ir_expr *e);

static int red_form(const ir_expr *v, self_fn is_self, const void *ctx, const ir_expr **self, const ir_expr **other) {
    if (!v || v->kind != IR_E_BINARY || v->nargs != 2) return -1;
    int kind;
    switch (v->op) {
    case IR_B_ADD: case IR_B_SUB: kind = IR_RED_SUM; break;
    case IR_B_MAX: kind = IR_RED_MAX; break;
    case IR_B_MIN: kind = IR_RED_MIN; break;
    default: return -1;
    }
    if (is_self(ctx, v->args[0])) {
        *self = v->args[0];
        *other = v->args[1];
        return kind;
    }
    if (v->op != IR_B_SUB && is_self(ctx, v->args[1])) {
        *self = v->args[1];
        *other = v->args[0];
        return kind;
    }
    return -1;
}

typedef struct store_self {
    const ir_stmt *s;
} store_self;

static bool store_is_self(const void *ctx, const ir_expr *e) {
    const ir_stmt *s = ((const store_self *)ctx)->s;
    e = strip_cast(e);
    if (!e || e->kind != IR_E_LOAD || e->buf != s->buf) return false;
    for (int i = 0; i < s->buf->rank; i++)
        if (!ir_expr_equal(e->args[i], s->idx[i])) return false;
    return true;
}

static void collect(dctx *d, const ir_stmt *s, int loops_inside) {
    if (!s) return;
    load_ctx lc = {d, s, NULL, -1};
    switch (s->kind) {
    case IR_S_SEQ:
        for (int i = 0; i < s->nbody; i++) collect(d, s->body[i], loops_inside);
        return;
    case IR_S_FOR:
        if (s->var && s->var->id >= 0 && s->var->id < d->nvars) d->inner[s->var->id] = 1;
        stmt_exprs(s, load_cb, &lc);
        collect(d, s->body[0], loops_inside + 1);
        return;
    case IR_S_WHILE:
        stmt_exprs(s, load_cb, &lc);
        collect(d, s->body[0], loops_inside + 1);
        return;
    case IR_S_IF:
        stmt_exprs(s, load_cb, &lc);
        collect(d, s->body[0], loops_inside);
        if (s->nbody >= 2) collect(d, s->body[1], loops_inside);
        return;
    case IR_S_ASSIGN:
        if (s->var && s->var->id >= 0 && s->var->id < d->nvars) d->assigned[s->var->id] = 1;
        stmt_exprs(s, load_cb, &lc);
        return;
    case IR_S_STORE: {
        store_self ss = {s};
        const ir_expr *self = NULL, *other = NULL;
        int k = red_form(s->value, store_is_self, &ss, &self, &other);
        if (k >= 0 && !ir_expr_loads(other, s->buf)) {
            lc.skip = strip_cast(self);
            lc.red_op = k;
        }
        stmt_exprs(s, load_cb, &lc);
        add_access(d, s->buf, s->idx, true, s, lc.skip ? k : -1);
        return;
    }
    case IR_S_ATOMIC:
        if (s->var && s->var->id >= 0 && s->var->id < d->nvars) d->assigned[s->var->id] = 1;
        stmt_exprs(s, load_cb, &lc);
        add_access(d, s->buf, s->idx, false, s, -1);
        add_access(d, s->buf, s->idx, true, s, -1);
        return;
    case IR_S_ALLOC:
        if (s->buf && s->buf->id >= 0 && s->buf->id < d->nbufs) d->priv[s->buf->id] = 1;
        return;
    case IR_S_KERNEL:
        d->opaque = true;
        d->opaque_why = "a kernel inside the loop";
        return;
    case IR_S_COPY: case IR_S_FILL: case IR_S_GEMM: case IR_S_REDUCE:
        stmt_exprs(s, load_cb, &lc);
        for (int r = 0; r < s->nregions; r++) {
            bool dst = (s->kind == IR_S_COPY && r == 1) || s->kind == IR_S_FILL || (s->kind == IR_S_GEMM && r == 2) ||
                       (s->kind == IR_S_REDUCE && r == 1);
            bool rd = !dst || (s->kind == IR_S_GEMM && !s->clear) || (s->kind == IR_S_REDUCE && !s->clear);
            if (rd) add_access(d, s->regions[r].buf, NULL, false, s, -1);
            if (dst) add_access(d, s->regions[r].buf, NULL, true, s, -1);
        }
        return;
    case IR_S_BREAK:
        if (loops_inside == 0) d->brk = true;
        return;
    case IR_S_CONTINUE:
        if (loops_inside == 0) d->cont = true;
        return;
    case IR_S_ASSERT:
        stmt_exprs(s, load_cb, &lc);
        return;
    default:
        d->opaque = true;
        d->opaque_why = "a statement the analysis does not know";
        return;
    }
}

/* ---------- the pair test ---------- */
static void put_access(tile_strbuf *sb, const access *a) {
    tile_sb_printf(sb, "%s[", a->buf->name);
    if (!a->idx) tile_sb_puts(sb, "...");
    for (int i = 0; a->idx && i < a->buf->rank; i++) {
        if (i) tile_sb_puts(sb, ", ");
        ir_print_expr(a->idx[i], sb);
    }
    tile_sb_putc(sb, ']');
}

/* Can accesses a and b touch one element in two different iterations of L? */
static bool dep_pair(const dctx *d, const access *a, const access *b) {
    if (!a->idx || !b->idx) return true;
    const ir_var *lv = d->L->var;
    int64_t trip = -1;
    if (d->L->extent) {
        int64_t t;
        if (ir_const_int_value(d->L->extent, &t)) trip = t;
    }
    for (int dim = 0; dim < a->buf->rank; dim++) {
        aff fa, fb;
        if (!aff_of(a->idx[dim], ctx_variant, d, &fa, 0) || !aff_of(b->idx[dim], ctx_variant, d, &fb, 0)) continue;
        /* fa(x1) == fb(x2)  <=>  sum_a c*x1 - sum_b c*x2 == fb.k - fa.k */
        int64_t delta = fb.k - fa.k;
        int64_t cl1 = aff_coef(&fa, lv), cl2 = aff_coef(&fb, lv);
        int64_t g = 0;
        bool other = false;
        for (int i = 0; i < fa.n; i++) {
            const ir_var *v = fa.v[i];
            if (v == lv || fa.c[i] == 0) continue;
            bool inner = v->id >= 0 && v->id < d->nvars && d->inner[v->id];
            int64_t c = inner ? fa.c[i] : fa.c[i] - aff_coef(&fb, v);
            if (c != 0) { other = true; g = gcd64(g, c); }
        }
        for (int i = 0; i < fb.n; i++) {
            const ir_var *v = fb.v[i];
            if (v == lv || fb.c[i] == 0) continue;
            bool inner = v->id >= 0 && v->id < d->nvars && d->inner[v->id];
            int64_t c = inner ? fb.c[i] : (aff_coef(&fa, v) == 0 ? fb.c[i] : 0); /* shared ones counted above */
            if (c != 0) { other = true; g = gcd64(g, c); }
        }
        if (!other) {
            if (cl1 == cl2) {
                if (cl1 == 0) {
                    if (delta != 0) return false; /* constant, different elements */
                    continue;
                }
                if (delta % cl1 != 0) return false;
                int64_t dist = delta / cl1;
                if (dist == 0) return false; /* this dimension forces the same iteration */
                if (trip >= 0 && (dist >= trip || -dist >= trip)) return false;
                continue;
            }
            int64_t g2 = gcd64(cl1, cl2);
            if (g2 != 0 && delta % g2 != 0) return false;
            continue;
        }
        g = gcd64(gcd64(g, cl1), cl2);
        if (g != 0 && delta % g != 0) return false;
    }
    return true;
}

/* ---------- reduction locals ---------- */
typedef struct local_self {
    const ir_var *v;
} local_self;

static bool local_is_self(const void *ctx, const ir_expr *e) {
    const ir_var *v = ((const local_self *)ctx)->v;
    return e && e->kind == IR_E_VAR && e->var == v;
}

typedef struct red_scan {
    const ir_var *v;
    int kind;       /* -2: none yet, -1: not a reduction */
    int nupdates;
    int nreads;
} red_scan;

typedef struct count_ctx {
    const ir_var *v;
    int n;
} count_ctx;

static void count_cb(void *ctx, const ir_expr *e) {
    count_ctx *c = ctx;
    if (e->kind == IR_E_VAR && e->var == c->v) c->n++;
}

static void red_scan_stmt(red_scan *r, const ir_stmt *s) {
    if (!s || r->kind == -1) return;
    count_ctx cc = {r->v, 0};
    stmt_exprs(s, count_cb, &cc);
    r->nreads += cc.n;
    if (s->kind == IR_S_ASSIGN && s->var == r->v) {
        local_self ls = {r->v};
        const ir_expr *self = NULL, *other = NULL;
        int k = red_form(s->value, local_is_self, &ls, &self, &other);
        if (k < 0 || ir_expr_uses_var(other, r->v) || (r->kind >= 0 && r->kind != k)) {
            r->kind = -1;
            return;
        }
        r->kind = k;
        r->nupdates++;
    }
    for (int i = 0; i < s->nbody; i++)
        if (s->body) red_scan_stmt(r, s->body[i]);
}

/* ---------- the analysis ---------- */
static void set_why(opt_loop_deps *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_why(opt_loop_deps *out, const char *fmt, ...) {
    out->kind = OPT_DEP_CARRIED;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->why, sizeof out->why, fmt, ap);
    va_end(ap);
}

static void add_red(opt_loop_deps *out, const ir_var *v, const ir_buffer *b, int op) {
    if (out->nred == OPT_DEPS_MAX_RED) {
        set_why(out, "more than %d reductions", OPT_DEPS_MAX_RED);
        return;
    }
    out->red[out->nred++] = (opt_reduction){v, b, (ir_reduce_kind)op};
}

static void analyze_buffers(dctx *d, opt_loop_deps *out) {
    unsigned char *done = tile_xcalloc((size_t)d->nbufs + 1, 1);
    for (int i = 0; i < d->nacc && out->kind != OPT_DEP_CARRIED; i++) {
        const ir_buffer *b = d->acc[i].buf;
        if (done[b->id]) continue;
        done[b->id] = 1;
        bool written = false, all_red = true;
        int op = -2;
        for (int j = i; j < d->nacc; j++) {
            if (d->acc[j].buf != b) continue;
            if (d->acc[j].write) written = true;
            if (d->acc[j].red_op < 0 || (op >= 0 && op != d->acc[j].red_op)) all_red = false;
            else op = d->acc[j].red_op;
        }
        if (!written) continue;
        const access *w = NULL, *x = NULL;
        for (int j = i; j < d->nacc && !w; j++) {
            if (d->acc[j].buf != b || !d->acc[j].write) continue;
            for (int k = i; k < d->nacc; k++) {
                if (d->acc[k].buf != b) continue;
                if (dep_pair(d, &d->acc[j], &d->acc[k])) {
                    w = &d->acc[j];
                    x = &d->acc[k];
                    break;
                }
            }
        }
        if (!w) continue;
        if (all_red && op >= 0) {
            add_red(out, NULL, b, op);
            continue;
        }
        tile_strbuf sb = {0};
        put_access(&sb, w);
        tile_sb_printf(&sb, " written (line %d) and ", w->stmt->loc.line);
        put_access(&sb, x);
        tile_sb_printf(&sb, " %s (line %d) by different iterations", x->write ? "written" : "read", x->stmt->loc.line);
        set_why(out, "%s", sb.data);
        tile_sb_free(&sb);
    }
    free(done);
}

static void analyze_locals(dctx *d, opt_loop_deps *out) {
    const ir_func *f = d->f;
    size_t n = (size_t)d->nvars + 1;
    unsigned char *exposed = tile_xcalloc(n, 1), *def = tile_xcalloc(n, 1);
    mdef m = {d->nvars, exposed, d->assigned};
    md_stmt(&m, d->L->body[0], def);
    for (int id = 0; id < d->nvars && out->kind != OPT_DEP_CARRIED; id++) {
        if (!d->assigned[id]) continue;
        const ir_var *v = f->vars[id];
        if (exposed[id]) {
            red_scan r = {v, -2, 0, 0};
            red_scan_stmt(&r, d->L->body[0]);
            if (r.kind >= 0 && r.nreads == r.nupdates) add_red(out, v, NULL, r.kind);
            else set_why(out, "local '%s' is read before it is assigned in an iteration (it carries a value from one iteration to the next)", v->name);
        } else if (opt_local_live_after(f, d->L, v)) {
            set_why(out, "local '%s' is assigned in the loop and its value is used after the loop", v->name);
        }
    }
    free(exposed);
    free(def);
}

void opt_deps_analyze(const ir_func *f, const ir_stmt *loop, opt_loop_deps *out) {
    memset(out, 0, sizeof *out);
    out->kind = OPT_DEP_INDEPENDENT;
    if (!f || !loop || loop->kind != IR_S_FOR || !loop->body || !loop->body[0] || !loop->var) {
        set_why(out, "not a loop");
        return;
    }
    dctx d = {0};
    d.f = f;
    d.L = loop;
    d.nvars = f->nvars;
    d.nbufs = f->nbuffers;
    d.inner = tile_xcalloc((size_t)d.nvars + 1, 1);
    d.assigned = tile_xcalloc((size_t)d.nvars + 1, 1);
    d.priv = tile_xcalloc((size_t)d.nbufs + 1, 1);
    /* allocation and assignment sets first: accesses are classified with them */
    collect(&d, loop->body[0], 0);
    d.nacc = 0;
    collect(&d, loop->body[0], 0);
    out->has_continue = d.cont;
    if (d.opaque) set_why(out, "%s", d.opaque_why);
    else if (d.brk) set_why(out, "a break leaves the loop (later iterations depend on earlier ones)");
    if (out->kind != OPT_DEP_CARRIED) analyze_buffers(&d, out);
    if (out->kind != OPT_DEP_CARRIED) analyze_locals(&d, out);
    if (out->kind != OPT_DEP_CARRIED) out->kind = out->nred ? OPT_DEP_REDUCTION : OPT_DEP_INDEPENDENT;
    else out->nred = 0;
    free(d.inner);
    free(d.assigned);
    free(d.priv);
    free(d.acc);
}

void opt_deps_describe(const opt_loop_deps *d, tile_strbuf *out) {
    switch (d->kind) {
    case OPT_DEP_INDEPENDENT: tile_sb_puts(out, "independent"); break;
    case OPT_DEP_REDUCTION:
        tile_sb_puts(out, "reduction (");
        for (int i = 0; i < d->nred; i++)
            tile_sb_printf(out, "%s%s into %s%s", i ? ", " : "", ir_reduce_kind_name(d->red[i].op),
                           d->red[i].var ? d->red[i].var->name : d->red[i].buf->name, d->red[i].var ? "" : "[...]");
        tile_sb_putc(out, ')');
        break;
    default: tile_sb_printf(out, "carried: %s", d->why); break;
    }
    if (d->has_continue) tile_sb_puts(out, " [has continue]");
}

/* ---------- the `deps` pass: analysis only, logged ---------- */
static void log_loops(const ir_func *f, const ir_stmt *s) {
    if (!s) return;
    if (s->kind == IR_S_FOR) {
        opt_loop_deps d;
        opt_deps_analyze(f, s, &d);
        tile_strbuf sb = {0};
        opt_deps_describe(&d, &sb);
        tile_log(TILE_LOG_DEBUG, "deps: loop %s at %s:%d: %s", s->var ? s->var->name : "?",
                 s->loc.src ? s->loc.src->name : "<ir>", s->loc.line, sb.data);
        tile_sb_free(&sb);
    }
    for (int i = 0; i < s->nbody; i++)
        if (s->body) log_loops(f, s->body[i]);
}

static int run_deps(ir_module *m, ir_func *f, tile_diags *d) {
    (void)m;
    (void)d;
    if (f->form != IR_FORM_PLAIN || !tile_log_enabled(TILE_LOG_DEBUG)) return 0;
    log_loops(f, f->body);
    return 0;
}

const opt_pass opt_pass_deps = {
    "deps",
    "dependence analysis of plain-form loop nests (analysis only; TILE_LOG=debug prints it per loop)",
    run_deps,
};
