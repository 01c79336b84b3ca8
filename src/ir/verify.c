/* verify.c — structural and typing invariants of Tile IR (see the rules in ir.h).
 *
 * One walk over the statement tree in execution (tree) order, keeping:
 *   - which loop / block variables are in scope (defined by an enclosing FOR / KERNEL),
 *   - which locals have been assigned somewhere before (in tree order),
 *   - which temporary buffers are alive (ALLOC'd in an enclosing SEQ / body not yet ended),
 *   - whether we are inside a kernel, a loop, a T.Parallel loop.
 * Every problem is one diagnostic "IR verifier: ..." at the node's location. Malformed
 * trees (NULL pointers, bad enum values, foreign variables) are reported, never crash. */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

typedef struct vctx {
    const ir_func *f;
    tile_diags *d;
    int nvars, nbufs;
    int *var_scope;          /* loop/block vars: number of enclosing definitions */
    unsigned char *assigned; /* locals assigned so far */
    unsigned char *is_size, *is_param_var;
    unsigned char *buf_param, *buf_ret;
    int *buf_alive;          /* temporaries: number of live ALLOCs */
    int *allocs;             /* stack of ALLOC'd buffer ids (frames) */
    int nallocs, cap_allocs;
    int kernel_depth, loop_depth, par_depth;
    bool innermost_par;      /* the innermost enclosing loop is a parallel one */
    bool shape_mode;         /* checking a buffer shape: only constants, sizes, params */
    const ir_buffer *shape_buf;
    /* T.Parallel group being entered: the next inner loop expected and how many remain */
    const ir_stmt *expect_inner;
    int expect_remaining;
    bool ok;
} vctx;

#define VERR(c, loc, ...)                                  \
    do {                                                   \
        (c)->ok = false;                                   \
        tile_error_at((c)->d, (loc), "IR verifier: " __VA_ARGS__); \
    } while (0)

static bool valid_dt(tile_dtype dt) { return (int)dt >= 0 && dt < TILE_DT_COUNT; }
static const char *dtn(tile_dtype dt) { return valid_dt(dt) ? tile_dtype_name(dt) : "<invalid dtype>"; }
static bool is_intdt(tile_dtype dt) { return valid_dt(dt) && tile_dtype_is_int(dt); }
static bool is_booldt(tile_dtype dt) { return dt == TILE_DT_BOOL; }
static bool is_floatdt(tile_dtype dt) { return valid_dt(dt) && tile_dtype_is_float(dt); }
static bool is_wide_float(tile_dtype dt) { return dt == TILE_DT_F32 || dt == TILE_DT_F64; }
static bool is_narrow_float(tile_dtype dt) { return is_floatdt(dt) && !is_wide_float(dt); }
static const char *vname(const ir_var *v) { return v && v->name ? v->name : "?"; }
static const char *bname(const ir_buffer *b) { return b && b->name ? b->name : "?"; }

static const char *binop_name(int op) {
    static const char *const names[] = {
#define X(e, s) s,
        IR_BINOPS(X)
#undef X
    };
    return (op >= 0 && op < IR_B_COUNT) ? names[op] : "?";
}

static const char *stmt_name(ir_stmt_kind k) {
    static const char *const names[] = {
#define X(e) #e,
        IR_STMT_KINDS(X)
#undef X
    };
    return ((int)k >= 0 && k < IR_S_COUNT) ? names[k] : "?";
}

/* ---------- variables and buffers ---------- */
static bool var_known(vctx *c, const ir_var *v, tile_loc loc) {
    if (!v) { VERR(c, loc, "missing variable"); return false; }
    if (v->id < 0 || v->id >= c->nvars || c->f->vars[v->id] != v) {
        VERR(c, loc, "variable '%s' does not belong to function '%s'", vname(v), c->f->name);
        return false;
    }
    return true;
}

static bool buf_known(vctx *c, const ir_buffer *b, tile_loc loc) {
    if (!b) { VERR(c, loc, "missing buffer"); return false; }
    if (b->id < 0 || b->id >= c->nbufs || c->f->buffers[b->id] != b) {
        VERR(c, loc, "buffer '%s' does not belong to function '%s'", bname(b), c->f->name);
        return false;
    }
    return true;
}

/* A reference to buffer b (load, store, region): it must exist at this point. */
static bool check_buf_use(vctx *c, const ir_buffer *b, tile_loc loc) {
    if (!buf_known(c, b, loc)) return false;
    switch (b->role) {
    case IR_BUF_PARAM:
        if (!c->buf_param[b->id]) { VERR(c, loc, "buffer '%s' has role param but is not a parameter", bname(b)); return false; }
        break;
    case IR_BUF_OUTPUT:
        if (!c->buf_ret[b->id]) { VERR(c, loc, "buffer '%s' has role output but is not returned", bname(b)); return false; }
        break;
    case IR_BUF_TEMP:
        if (c->buf_alive[b->id] <= 0) {
            VERR(c, loc, "buffer '%s' used outside its allocation (no enclosing alloc)", bname(b));
            return false;
        }
        break;
    default: VERR(c, loc, "buffer '%s' has a bad role %d", bname(b), (int)b->role); return false;
    }
    return true;
}

/* ---------- expressions ---------- */
static void check_expr(vctx *c, const ir_expr *e, tile_loc ploc, int depth);

static void check_index(vctx *c, const ir_expr *e, tile_loc ploc, const char *what, int depth) {
    check_expr(c, e, ploc, depth + 1);
    if (e && valid_dt(e->dtype) && !is_intdt(e->dtype))
        VERR(c, e->loc.src ? e->loc : ploc, "%s must be an integer, not %s", what, dtn(e->dtype));
}

static void check_var_ref(vctx *c, const ir_expr *e) {
    const ir_var *v = e->var;
    if (!var_known(c, v, e->loc)) return;
    if (e->dtype != v->dtype)
        VERR(c, e->loc, "reference to '%s' has dtype %s but the variable is %s", vname(v), dtn(e->dtype), dtn(v->dtype));
    if (c->shape_mode && v->kind != IR_VAR_SIZE && v->kind != IR_VAR_PARAM) {
        VERR(c, e->loc, "shape of buffer '%s' uses '%s' (only constants, sizes and scalar parameters are allowed)",
             bname(c->shape_buf), vname(v));
        return;
    }
    switch (v->kind) {
    case IR_VAR_SIZE:
        if (!c->is_size[v->id]) VERR(c, e->loc, "size variable '%s' is not listed in the function's sizes", vname(v));
        break;
    case IR_VAR_PARAM:
        if (!c->is_param_var[v->id]) VERR(c, e->loc, "scalar parameter '%s' is not a parameter of the function", vname(v));
        break;
    case IR_VAR_LOOP:
        if (c->var_scope[v->id] <= 0) VERR(c, e->loc, "loop variable '%s' used outside its loop", vname(v));
        break;
    case IR_VAR_BLOCK:
        if (c->var_scope[v->id] <= 0) VERR(c, e->loc, "block index '%s' used outside its kernel", vname(v));
        break;
    case IR_VAR_LOCAL:
        if (!c->assigned[v->id]) VERR(c, e->loc, "local '%s' used before it is assigned", vname(v));
        break;
    default: VERR(c, e->loc, "variable '%s' has a bad kind %d", vname(v), (int)v->kind); break;
    }
}

static bool args_ok(vctx *c, const ir_expr *e, int n, const char *what) {
    if (e->nargs != n || (n > 0 && !e->args)) {
        VERR(c, e->loc, "%s has %d operands, expected %d", what, e->nargs, n);
        return false;
    }
    for (int i = 0; i < n; i++)
        if (!e->args[i]) { VERR(c, e->loc, "%s has a missing operand", what); return false; }
    return true;
}

static void no_narrow(vctx *c, const ir_expr *e, tile_dtype dt, const char *what) {
    if (is_narrow_float(dt))
        VERR(c, e->loc, "%s on %s (sub-32-bit floats must be cast to float32 first)", what, dtn(dt));
}

static void check_expr(vctx *c, const ir_expr *e, tile_loc ploc, int depth) {
    if (!e) { VERR(c, ploc, "missing expression"); return; }
    if (depth > 10000) { VERR(c, e->loc, "expression nested too deeply"); return; }
    if (!valid_dt(e->dtype)) { VERR(c, e->loc, "expression has an invalid dtype %d", (int)e->dtype); return; }
    tile_dtype dt = e->dtype;
    switch (e->kind) {
    case IR_E_CONST: break;
    case IR_E_VAR: check_var_ref(c, e); break;
    case IR_E_LOAD: {
        if (c->shape_mode) { VERR(c, e->loc, "shape of buffer '%s' reads a buffer", bname(c->shape_buf)); return; }
        const ir_buffer *b = e->buf;
        if (!check_buf_use(c, b, e->loc)) return;
        if (e->nargs != b->rank || (b->rank > 0 && !e->args)) {
            VERR(c, e->loc, "load of '%s' has %d indices but the buffer has rank %d", bname(b), e->nargs, b->rank);
            return;
        }
        if (dt != b->dtype) VERR(c, e->loc, "load of '%s' has dtype %s but the buffer is %s", bname(b), dtn(dt), dtn(b->dtype));
        for (int i = 0; i < e->nargs; i++) check_index(c, e->args[i], e->loc, "an index", depth);
        break;
    }
    case IR_E_UNARY: {
        if (!args_ok(c, e, 1, "unary operator")) return;
        const ir_expr *a = e->args[0];
        check_expr(c, a, e->loc, depth + 1);
        if (!valid_dt(a->dtype)) return;
        switch (e->op) {
        case IR_U_NEG:
            if (is_booldt(a->dtype)) VERR(c, e->loc, "negation of a bool");
            no_narrow(c, e, a->dtype, "negation");
            if (dt != a->dtype) VERR(c, e->loc, "negation gives %s from %s", dtn(dt), dtn(a->dtype));
            break;
        case IR_U_NOT:
            if (!is_booldt(a->dtype) || !is_booldt(dt)) VERR(c, e->loc, "'not' needs a bool operand and result, got %s -> %s", dtn(a->dtype), dtn(dt));
            break;
        case IR_U_BITNOT:
            if (!is_intdt(a->dtype) && !is_booldt(a->dtype)) VERR(c, e->loc, "'~' on %s", dtn(a->dtype));
            if (dt != a->dtype) VERR(c, e->loc, "'~' gives %s from %s", dtn(dt), dtn(a->dtype));
            break;
        default: VERR(c, e->loc, "bad unary operator %d", e->op); break;
        }
        break;
    }
    case IR_E_BINARY: {
        if (!args_ok(c, e, 2, "binary operator")) return;
        const ir_expr *a = e->args[0], *b = e->args[1];
        check_expr(c, a, e->loc, depth + 1);
        check_expr(c, b, e->loc, depth + 1);
        if (!valid_dt(a->dtype) || !valid_dt(b->dtype)) return;
        int op = e->op;
        if (op < 0 || op >= IR_B_COUNT) { VERR(c, e->loc, "bad binary operator %d", op); return; }
        if (a->dtype != b->dtype) {
            VERR(c, e->loc, "operands of '%s' have different dtypes (%s and %s)", binop_name(op), dtn(a->dtype), dtn(b->dtype));
            return;
        }
        tile_dtype ot = a->dtype;
        if (op == IR_B_AND || op == IR_B_OR) {
            if (!is_booldt(ot) || !is_booldt(dt)) VERR(c, e->loc, "'%s' needs bool operands and result, got %s -> %s", binop_name(op), dtn(ot), dtn(dt));
        } else if (ir_binop_is_compare((ir_binop)op)) {
            if (!is_booldt(dt)) VERR(c, e->loc, "comparison '%s' must give bool, not %s", binop_name(op), dtn(dt));
            no_narrow(c, e, ot, "comparison");
        } else {
            if (dt != ot) VERR(c, e->loc, "'%s' on %s gives %s (must be the operand dtype)", binop_name(op), dtn(ot), dtn(dt));
            switch (op) {
            case IR_B_SHL: case IR_B_SHR:
                if (!is_intdt(ot)) VERR(c, e->loc, "shift '%s' on %s (integers only)", binop_name(op), dtn(ot));
                break;
            case IR_B_BITAND: case IR_B_BITOR: case IR_B_BITXOR:
                if (!is_intdt(ot) && !is_booldt(ot)) VERR(c, e->loc, "bitwise '%s' on %s", binop_name(op), dtn(ot));
                break;
            default:
                if (is_booldt(ot)) VERR(c, e->loc, "arithmetic '%s' on bool", binop_name(op));
                else no_narrow(c, e, ot, "arithmetic");
                break;
            }
        }
        break;
    }
    case IR_E_SELECT: {
        if (!args_ok(c, e, 3, "select")) return;
        for (int i = 0; i < 3; i++) check_expr(c, e->args[i], e->loc, depth + 1);
        if (valid_dt(e->args[0]->dtype) && !is_booldt(e->args[0]->dtype))
            VERR(c, e->loc, "select condition must be bool, not %s", dtn(e->args[0]->dtype));
        if (e->args[1]->dtype != dt || e->args[2]->dtype != dt)
            VERR(c, e->loc, "select arms (%s, %s) must have the result dtype %s", dtn(e->args[1]->dtype), dtn(e->args[2]->dtype), dtn(dt));
        break;
    }
    case IR_E_CAST:
        if (!args_ok(c, e, 1, "cast")) return;
        check_expr(c, e->args[0], e->loc, depth + 1);
        break;
    case IR_E_REINTERPRET: {
        if (!args_ok(c, e, 1, "reinterpret")) return;
        const ir_expr *a = e->args[0];
        check_expr(c, a, e->loc, depth + 1);
        if (valid_dt(a->dtype) && tile_dtype_bits(a->dtype) != tile_dtype_bits(dt))
            VERR(c, e->loc, "reinterpret of %s (%d bits) as %s (%d bits)", dtn(a->dtype), tile_dtype_bits(a->dtype), dtn(dt), tile_dtype_bits(dt));
        break;
    }
    case IR_E_CALL: {
        int fn = e->op;
        if (fn < 0 || fn >= IR_I_COUNT) { VERR(c, e->loc, "bad intrinsic %d", fn); return; }
        const char *nm = ir_intrinsic_name((ir_intrinsic)fn);
        if (!args_ok(c, e, ir_intrinsic_arity((ir_intrinsic)fn), nm)) return;
        for (int i = 0; i < e->nargs; i++) check_expr(c, e->args[i], e->loc, depth + 1);
        tile_dtype at = e->args[0]->dtype;
        for (int i = 1; i < e->nargs; i++)
            if (e->args[i]->dtype != at) VERR(c, e->loc, "operands of %s have different dtypes", nm);
        if (!valid_dt(at)) return;
        if (fn == IR_I_ISNAN || fn == IR_I_ISINF) {
            if (!is_wide_float(at)) VERR(c, e->loc, "%s of %s (float32/float64 only)", nm, dtn(at));
            if (!is_booldt(dt)) VERR(c, e->loc, "%s must give bool, not %s", nm, dtn(dt));
        } else {
            bool ok = is_wide_float(at) || (fn == IR_I_ABS && is_intdt(at));
            if (!ok) VERR(c, e->loc, "%s of %s (%s only)", nm, dtn(at), fn == IR_I_ABS ? "integers, float32 and float64" : "float32/float64");
            if (dt != at) VERR(c, e->loc, "%s of %s gives %s (must be the operand dtype)", nm, dtn(at), dtn(dt));
        }
        break;
    }
    default: VERR(c, e->loc, "bad expression kind %d", (int)e->kind); break;
    }
}

static void check_cond(vctx *c, const ir_expr *e, tile_loc loc, const char *what) {
    check_expr(c, e, loc, 0);
    if (e && valid_dt(e->dtype) && !is_booldt(e->dtype)) VERR(c, e->loc, "%s must be bool, not %s", what, dtn(e->dtype));
}

/* ---------- regions ---------- */
static bool const_of(const ir_expr *e, int64_t *v) { return e && ir_const_int_value(e, v); }

static bool check_region(vctx *c, const ir_region *r, tile_loc sloc, const char *op, const char *which) {
    tile_loc loc = r->loc.src ? r->loc : sloc;
    if (!check_buf_use(c, r->buf, loc)) return false;
    int rank = r->buf->rank;
    if (rank > 0 && (!r->start || !r->extent)) {
        VERR(c, loc, "%s: %s region of '%s' lacks starts/extents for its %d dimensions", op, which, bname(r->buf), rank);
        return false;
    }
    bool ok = true;
    for (int i = 0; i < rank; i++) {
        if (!r->start[i] || !r->extent[i]) {
            VERR(c, loc, "%s: %s region of '%s' lacks dimension %d", op, which, bname(r->buf), i);
            ok = false;
            continue;
        }
        check_index(c, r->start[i], loc, "a region start", 0);
        check_index(c, r->extent[i], loc, "a region extent", 0);
        int64_t v;
        if (const_of(r->extent[i], &v) && v < 1) {
            VERR(c, loc, "%s: %s region of '%s' has extent %lld in dimension %d (must be >= 1)", op, which, bname(r->buf), (long long)v, i);
            ok = false;
        }
    }
    return ok;
}

/* Element count of a region when all extents are constant. */
static bool region_count(const ir_region *r, int64_t *n) {
    int64_t p = 1, v;
    for (int i = 0; i < r->buf->rank; i++) {
        if (!const_of(r->extent[i], &v)) return false;
        p *= v;
    }
    *n = p;
    return true;
}

/* GEMM operand as 2-D: extents of its last two dimensions (leading ones must be 1). */
static bool gemm_dims(vctx *c, const ir_region *r, tile_loc loc, const char *which, const ir_expr **rows, const ir_expr **cols) {
    int rank = r->buf->rank;
    if (rank < 2) {
        VERR(c, loc, "gemm: operand %s ('%s') must be a 2-D region, it has rank %d", which, bname(r->buf), rank);
        return false;
    }
    for (int i = 0; i < rank - 2; i++) {
        int64_t v;
        if (const_of(r->extent[i], &v) && v != 1) {
            VERR(c, loc, "gemm: operand %s ('%s') has extent %lld in leading dimension %d (must be 1)", which, bname(r->buf), (long long)v, i);
            return false;
        }
    }
    *rows = r->extent[rank - 2];
    *cols = r->extent[rank - 1];
    return true;
}

static void dims_match(vctx *c, tile_loc loc, const ir_expr *a, const ir_expr *b, const char *what, bool *ok) {
    int64_t x, y;
    if (const_of(a, &x) && const_of(b, &y) && x != y) {
        VERR(c, loc, "gemm: %s do not match (%lld vs %lld)", what, (long long)x, (long long)y);
        *ok = false;
    }
}

static void check_tile_op(vctx *c, const ir_stmt *s) {
    static const int want[IR_S_COUNT] = {[IR_S_COPY] = 2, [IR_S_FILL] = 1, [IR_S_GEMM] = 3, [IR_S_REDUCE] = 2};
    const char *op = s->kind == IR_S_COPY ? "copy" : s->kind == IR_S_FILL ? "fill" : s->kind == IR_S_GEMM ? "gemm" : "reduce";
    /* Inside a kernel a tile operation acts on the whole block, so it cannot sit in a
     * T.Parallel loop. Outside kernels (TileOpt's plain-form schedules) a parallel loop of
     * tile operations is fine: e.g. one GEMM per batch, iterations independent. */
    if (c->par_depth > 0 && c->kernel_depth > 0) VERR(c, s->loc, "%s inside a T.Parallel loop (tile operations act on the whole block)", op);
    if (s->nregions != want[s->kind] || !s->regions) {
        VERR(c, s->loc, "%s has %d regions, expected %d", op, s->nregions, want[s->kind]);
        return;
    }
    bool ok = true;
    static const char *const names3[] = {"A", "B", "C"};
    for (int i = 0; i < s->nregions; i++) {
        const char *which = s->kind == IR_S_GEMM ? names3[i] : (i == 0 ? (s->kind == IR_S_FILL ? "destination" : "source") : "destination");
        if (!check_region(c, &s->regions[i], s->loc, op, which)) ok = false;
    }
    if (!ok) return;
    switch (s->kind) {
    case IR_S_COPY: {
        int64_t n0, n1;
        if (region_count(&s->regions[0], &n0) && region_count(&s->regions[1], &n1) && n0 != n1)
            VERR(c, s->loc, "copy: source region of '%s' has %lld elements but destination region of '%s' has %lld",
                 bname(s->regions[0].buf), (long long)n0, bname(s->regions[1].buf), (long long)n1);
        break;
    }
    case IR_S_FILL:
        check_expr(c, s->value, s->loc, 0);
        break;
    case IR_S_GEMM: {
        const ir_expr *ar, *ac, *br, *bc, *cr, *cc;
        if (!gemm_dims(c, &s->regions[0], s->loc, "A", &ar, &ac) || !gemm_dims(c, &s->regions[1], s->loc, "B", &br, &bc) ||
            !gemm_dims(c, &s->regions[2], s->loc, "C", &cr, &cc))
            return;
        const ir_expr *M = s->trans_a ? ac : ar, *KA = s->trans_a ? ar : ac;
        const ir_expr *KB = s->trans_b ? bc : br, *N = s->trans_b ? br : bc;
        bool sh = true;
        dims_match(c, s->loc, M, cr, "rows of op(A) and rows of C", &sh);
        dims_match(c, s->loc, KA, KB, "columns of op(A) and rows of op(B)", &sh);
        dims_match(c, s->loc, N, cc, "columns of op(B) and columns of C", &sh);
        for (int i = 0; i < 3; i++) {
            tile_dtype dt = s->regions[i].buf->dtype;
            if (!valid_dt(dt) || is_booldt(dt)) VERR(c, s->loc, "gemm: operand %s has dtype %s", names3[i], dtn(dt));
        }
        break;
    }
    case IR_S_REDUCE: {
        const ir_region *src = &s->regions[0], *dst = &s->regions[1];
        int r = src->buf->rank;
        if (s->reduce_op < 0 || s->reduce_op >= IR_RED_COUNT) VERR(c, s->loc, "reduce: bad reduction kind %d", s->reduce_op);
        if (s->dim < 0 || s->dim >= r) {
            VERR(c, s->loc, "reduce: dim %d out of range for the rank-%d source '%s'", s->dim, r, bname(src->buf));
            return;
        }
        int dr = dst->buf->rank;
        if (dr != r - 1 && dr != r) {
            VERR(c, s->loc, "reduce: destination '%s' has rank %d; expected %d (or %d with extent 1 at dim %d)", bname(dst->buf), dr, r - 1, r, s->dim);
            return;
        }
        int64_t x, y;
        if (dr == r && const_of(dst->extent[s->dim], &x) && x != 1)
            VERR(c, s->loc, "reduce: destination '%s' keeps dim %d but its extent there is %lld (must be 1)", bname(dst->buf), s->dim, (long long)x);
        for (int i = 0, j = 0; i < r; i++) {
            if (i == s->dim) { if (dr == r) j++; continue; }
            if (const_of(src->extent[i], &x) && const_of(dst->extent[j], &y) && x != y)
                VERR(c, s->loc, "reduce: source '%s' has extent %lld in dim %d but destination '%s' has %lld in dim %d",
                     bname(src->buf), (long long)x, i, bname(dst->buf), (long long)y, j);
            j++;
        }
        break;
    }
    default: break;
    }
}

/* ---------- statements ---------- */
static void check_stmt(vctx *c, const ir_stmt *s, tile_loc ploc, int depth);

static void pop_allocs(vctx *c, int mark) {
    while (c->nallocs > mark) c->buf_alive[c->allocs[--c->nallocs]]--;
}

/* A body: allocations inside it end with it. */
static void check_body(vctx *c, const ir_stmt *s, tile_loc ploc, int depth) {
    int mark = c->nallocs;
    check_stmt(c, s, ploc, depth + 1);
    pop_allocs(c, mark);
}

static const ir_stmt *single_child(const ir_stmt *s) {
    const ir_stmt *ch = (s->body && s->nbody >= 1) ? s->body[0] : NULL;
    while (ch && ch->kind == IR_S_SEQ && ch->nbody == 1 && ch->body) ch = ch->body[0];
    return ch;
}

static bool body_ok(vctx *c, const ir_stmt *s, int n) {
    if (s->nbody < n || !s->body) {
        VERR(c, s->loc, "%s statement has %d bodies, expected %d", stmt_name(s->kind), s->nbody, n);
        return false;
    }
    return true;
}

static void check_store_like(vctx *c, const ir_stmt *s, const char *what) {
    const ir_buffer *b = s->buf;
    if (!check_buf_use(c, b, s->loc)) return;
    check_expr(c, s->value, s->loc, 0);
    if (b->rank > 0 && !s->idx) { VERR(c, s->loc, "%s to '%s' has no indices (rank %d)", what, bname(b), b->rank); return; }
    for (int i = 0; i < b->rank; i++) check_index(c, s->idx[i], s->loc, "an index", 0);
    if (s->value && valid_dt(s->value->dtype) && valid_dt(b->dtype)) {
        tile_dtype vt = s->value->dtype;
        bool ok = vt == b->dtype || (is_narrow_float(b->dtype) && is_wide_float(vt));
        if (!ok) VERR(c, s->loc, "%s of a %s value into '%s' of dtype %s", what, dtn(vt), bname(b), dtn(b->dtype));
    }
}

static void check_for(vctx *c, const ir_stmt *s, int depth) {
    if (!body_ok(c, s, 1)) return;
    check_index(c, s->lo, s->loc, "a loop bound", 0);
    check_index(c, s->extent, s->loc, "a loop extent", 0);
    const ir_var *v = s->var;
    bool vok = var_known(c, v, s->loc);
    if (vok) {
        if (v->kind != IR_VAR_LOOP) VERR(c, s->loc, "for loop over '%s', which is not a loop variable", vname(v));
        if (v->dtype != TILE_DT_I32) VERR(c, s->loc, "loop variable '%s' has dtype %s (must be int32)", vname(v), dtn(v->dtype));
        if (c->var_scope[v->id] > 0) VERR(c, s->loc, "loop variable '%s' is already defined by an enclosing loop", vname(v));
    }
    if ((int)s->loop_kind < 0 || s->loop_kind >= IR_LOOP_KIND_COUNT) VERR(c, s->loc, "bad loop kind %d", (int)s->loop_kind);
    if (s->loop_kind == IR_LOOP_PIPELINED && s->num_stages < 1)
        VERR(c, s->loc, "pipelined loop over '%s' has num_stages %d (must be >= 1)", vname(v), s->num_stages);

    /* T.Parallel groups */
    bool parallel = s->loop_kind == IR_LOOP_PARALLEL;
    if (!parallel && s->par_group_depth != 0) {
        VERR(c, s->loc, "%s loop over '%s' has par_group_depth %d (only parallel loops form groups)", ir_loop_kind_name(s->loop_kind), vname(v), s->par_group_depth);
    } else if (parallel && s->par_group_depth == 0) {
        if (c->expect_inner != s) VERR(c, s->loc, "parallel loop over '%s' has par_group_depth 0 but is not the inner loop of a T.Parallel group", vname(v));
    } else if (parallel && s->par_group_depth < 0) {
        VERR(c, s->loc, "parallel loop over '%s' has par_group_depth %d", vname(v), s->par_group_depth);
    }
    if (c->expect_inner == s) {
        c->expect_remaining--;
        c->expect_inner = c->expect_remaining > 0 ? single_child(s) : NULL;
        if (c->expect_remaining > 0) {
            const ir_stmt *in = c->expect_inner;
            if (!in || in->kind != IR_S_FOR || in->loop_kind != IR_LOOP_PARALLEL || in->par_group_depth != 0) {
                VERR(c, s->loc, "T.Parallel group: the body of the loop over '%s' must be the next parallel loop of the group (par_group_depth 0)", vname(v));
                c->expect_inner = NULL;
                c->expect_remaining = 0;
            }
        }
    } else if (parallel && s->par_group_depth >= 1) {
        c->expect_remaining = s->par_group_depth - 1;
        c->expect_inner = NULL;
        if (c->expect_remaining > 0) {
            const ir_stmt *in = single_child(s);
            if (!in || in->kind != IR_S_FOR || in->loop_kind != IR_LOOP_PARALLEL || in->par_group_depth != 0) {
                VERR(c, s->loc, "T.Parallel group of depth %d over '%s': its body must be the next parallel loop of the group (par_group_depth 0)",
                     s->par_group_depth, vname(v));
                c->expect_remaining = 0;
            } else c->expect_inner = in;
        }
    }

    if (vok) c->var_scope[v->id]++;
    c->loop_depth++;
    if (parallel) c->par_depth++;
    bool saved_inner = c->innermost_par;
    c->innermost_par = parallel;
    check_body(c, s->body[0], s->loc, depth);
    c->innermost_par = saved_inner;
    if (parallel) c->par_depth--;
    c->loop_depth--;
    if (vok) c->var_scope[v->id]--;
}

static void check_kernel(vctx *c, const ir_stmt *s, int depth) {
    if (!body_ok(c, s, 1)) return;
    if (c->kernel_depth > 0) VERR(c, s->loc, "kernels cannot be nested");
    if (c->par_depth > 0) VERR(c, s->loc, "kernel inside a T.Parallel loop");
    if (s->ngrid < 1 || s->ngrid > 3) { VERR(c, s->loc, "kernel has %d grid dimensions (1..3)", s->ngrid); return; }
    if (s->threads < 1) VERR(c, s->loc, "kernel has %d threads per block", s->threads);
    bool vok[3] = {false, false, false};
    for (int i = 0; i < s->ngrid; i++) {
        check_index(c, s->grid[i], s->loc, "a grid dimension", 0);
        const ir_var *v = s->block_vars[i];
        vok[i] = var_known(c, v, s->loc);
        if (!vok[i]) continue;
        if (v->kind != IR_VAR_BLOCK) VERR(c, s->loc, "kernel block index '%s' is not a block variable", vname(v));
        if (v->dtype != TILE_DT_I32) VERR(c, s->loc, "block index '%s' has dtype %s (must be int32)", vname(v), dtn(v->dtype));
        if (c->var_scope[v->id] > 0) { VERR(c, s->loc, "block index '%s' is used twice", vname(v)); vok[i] = false; continue; }
        c->var_scope[v->id]++;
    }
    int saved_loops = c->loop_depth;
    bool saved_inner = c->innermost_par;
    c->loop_depth = 0; /* break/continue cannot leave a kernel */
    c->innermost_par = false;
    c->kernel_depth++;
    check_body(c, s->body[0], s->loc, depth);
    c->kernel_depth--;
    c->loop_depth = saved_loops;
    c->innermost_par = saved_inner;
    for (int i = 0; i < s->ngrid; i++)
        if (vok[i]) c->var_scope[s->block_vars[i]->id]--;
}

static void check_alloc(vctx *c, const ir_stmt *s) {
    const ir_buffer *b = s->buf;
    if (!buf_known(c, b, s->loc)) return;
    if (b->role != IR_BUF_TEMP) { VERR(c, s->loc, "alloc of '%s', which is not a temporary buffer", bname(b)); return; }
    if (b->align_to && (!buf_known(c, b->align_to, s->loc) || b->align_to->role == IR_BUF_TEMP))
        VERR(c, s->loc, "'%s' is placed like '%s', which is not a parameter or returned buffer of this function", bname(b),
             bname(b->align_to));
    if (b->scope != IR_SCOPE_GLOBAL) {
        bool plain_ok = c->f->form == IR_FORM_PLAIN && (b->scope == IR_SCOPE_LOCAL || b->scope == IR_SCOPE_FRAGMENT);
        if (c->kernel_depth == 0 && !plain_ok)
            VERR(c, s->loc, "%s buffer '%s' allocated outside a kernel", ir_scope_name(b->scope), bname(b));
        if (c->par_depth > 0 && (b->scope == IR_SCOPE_SHARED || b->scope == IR_SCOPE_FRAGMENT))
            VERR(c, s->loc, "%s buffer '%s' allocated inside a T.Parallel loop", ir_scope_name(b->scope), bname(b));
    }
    if (c->nallocs == c->cap_allocs) {
        c->cap_allocs = c->cap_allocs ? 2 * c->cap_allocs : 16;
        c->allocs = tile_xrealloc(c->allocs, sizeof(int) * (size_t)c->cap_allocs);
    }
    c->allocs[c->nallocs++] = b->id;
    c->buf_alive[b->id]++;
}

static void check_stmt(vctx *c, const ir_stmt *s, tile_loc ploc, int depth) {
    if (!s) { VERR(c, ploc, "missing statement"); return; }
    if (depth > 10000) { VERR(c, s->loc, "statements nested too deeply"); return; }
    switch (s->kind) {
    case IR_S_SEQ: {
        if (s->nbody > 0 && !s->body) { VERR(c, s->loc, "sequence of %d statements has no body", s->nbody); return; }
        int mark = c->nallocs;
        for (int i = 0; i < s->nbody; i++) check_stmt(c, s->body[i], s->loc, depth + 1);
        pop_allocs(c, mark);
        break;
    }
    case IR_S_FOR: check_for(c, s, depth); break;
    case IR_S_WHILE:
        if (!body_ok(c, s, 1)) return;
        check_cond(c, s->cond, s->loc, "while condition");
        c->loop_depth++;
        {
            bool saved_inner = c->innermost_par;
            c->innermost_par = false;
            check_body(c, s->body[0], s->loc, depth);
            c->innermost_par = saved_inner;
        }
        c->loop_depth--;
        break;
    case IR_S_IF:
        if (!body_ok(c, s, 1)) return;
        check_cond(c, s->cond, s->loc, "if condition");
        check_body(c, s->body[0], s->loc, depth);
        if (s->nbody >= 2 && s->body[1]) check_body(c, s->body[1], s->loc, depth);
        break;
    case IR_S_ASSIGN: {
        check_expr(c, s->value, s->loc, 0);
        const ir_var *v = s->var;
        if (!var_known(c, v, s->loc)) return;
        if (v->kind != IR_VAR_LOCAL) { VERR(c, s->loc, "assignment to '%s', which is not a local variable", vname(v)); return; }
        if (s->value && valid_dt(s->value->dtype) && s->value->dtype != v->dtype)
            VERR(c, s->loc, "assignment of a %s value to '%s' of dtype %s", dtn(s->value->dtype), vname(v), dtn(v->dtype));
        c->assigned[v->id] = 1;
        break;
    }
    case IR_S_STORE: check_store_like(c, s, "store"); break;
    case IR_S_ATOMIC:
        check_store_like(c, s, "atomic update");
        if (s->atomic_op < 0 || s->atomic_op >= IR_ATOMIC_COUNT) VERR(c, s->loc, "bad atomic operation %d", s->atomic_op);
        if (s->buf && s->buf->dtype == TILE_DT_BOOL) VERR(c, s->loc, "atomic update of bool buffer '%s'", bname(s->buf));
        if (s->var && var_known(c, s->var, s->loc)) {
            const ir_var *v = s->var;
            tile_dtype ct = s->buf && is_narrow_float(s->buf->dtype) ? TILE_DT_F32 : s->buf ? s->buf->dtype : v->dtype;
            if (v->kind != IR_VAR_LOCAL) VERR(c, s->loc, "atomic update keeps its old value in '%s', which is not a local variable", vname(v));
            else if (v->dtype != ct) VERR(c, s->loc, "atomic update keeps its old %s value in '%s' of dtype %s", dtn(ct), vname(v), dtn(v->dtype));
            c->assigned[v->id] = 1;
        }
        break;
    case IR_S_ALLOC: check_alloc(c, s); break;
    case IR_S_KERNEL: check_kernel(c, s, depth); break;
    case IR_S_COPY: case IR_S_FILL: case IR_S_GEMM: case IR_S_REDUCE: check_tile_op(c, s); break;
    case IR_S_BREAK: case IR_S_CONTINUE:
        if (c->loop_depth <= 0) VERR(c, s->loc, "%s outside a loop", s->kind == IR_S_BREAK ? "break" : "continue");
        else if (c->innermost_par) VERR(c, s->loc, "%s inside a T.Parallel loop", s->kind == IR_S_BREAK ? "break" : "continue");
        break;
    case IR_S_ASSERT: check_cond(c, s->cond, s->loc, "assert condition"); break;
    default: VERR(c, s->loc, "bad statement kind %d", (int)s->kind); break;
    }
}

/* A fragment's layout (ir.h): digits well formed, the products what the header says, the
 * digits of each dimension a mixed radix that reaches every coordinate of its extent. */
static void check_layout(vctx *c, const ir_buffer *b) {
    const ir_layout *l = b->layout;
    if (!l) return;
    if (b->scope != IR_SCOPE_FRAGMENT) { VERR(c, b->loc, "buffer '%s' is not a fragment but has a layout", bname(b)); return; }
    if (l->kind == IR_LAYOUT_SHARED) return;
    if (l->kind != IR_LAYOUT_REGS || l->rank != b->rank || l->ndig < 0 || l->ndig > IR_LAYOUT_MAXDIG) {
        VERR(c, b->loc, "layout of '%s' is malformed", bname(b));
        return;
    }
    int64_t tp = 1, sp = 1;
    bool slots = false;
    for (int i = 0; i < l->ndig; i++) {
        const ir_layout_digit *d = &l->dig[i];
        if (d->size < 1 || d->dim < -1 || d->dim >= b->rank || (d->dim < 0 && !d->thread) || (d->thread && slots) || d->stride < 0) {
            VERR(c, b->loc, "layout of '%s': digit %d is malformed", bname(b), i);
            return;
        }
        if (!d->thread) slots = true;
        if (d->thread) tp *= d->size;
        else sp *= d->size;
        if (tp > (1 << 20) || sp > (1 << 24)) { VERR(c, b->loc, "layout of '%s' is too large", bname(b)); return; }
    }
    if (tp != l->threads || sp != l->slots) VERR(c, b->loc, "layout of '%s': %d threads x %d slots, but its digits make %lld x %lld", bname(b), l->threads, l->slots, (long long)tp, (long long)sp);
    for (int dim = 0; dim < b->rank; dim++) {
        /* the digits of dim by increasing stride: 1, then each the product of the smaller ones */
        int64_t want = 1;
        for (int n = 0; n < l->ndig; n++) {
            int found = -1;
            for (int i = 0; i < l->ndig; i++)
                if (l->dig[i].dim == dim && l->dig[i].stride == want) { found = i; break; }
            if (found < 0) break;
            want *= l->dig[found].size;
        }
        int64_t cnt = 0, ext;
        for (int i = 0; i < l->ndig; i++)
            if (l->dig[i].dim == dim) cnt++;
        int64_t prod = 1;
        for (int i = 0; i < l->ndig; i++)
            if (l->dig[i].dim == dim) prod *= l->dig[i].size;
        if (prod != want) VERR(c, b->loc, "layout of '%s': the digits of dimension %d are not a mixed radix", bname(b), dim);
        else if (const_of(b->shape[dim], &ext) && prod < ext)
            VERR(c, b->loc, "layout of '%s' holds %lld of the %lld coordinates of dimension %d", bname(b), (long long)prod, (long long)ext, dim);
        (void)cnt;
    }
}

/* ---------- function ---------- */
static void check_buffer_decl(vctx *c, const ir_buffer *b) {
    if (!b) return;
    if (b->rank < 0 || b->rank > 8) { VERR(c, b->loc, "buffer '%s' has rank %d (0..8)", bname(b), b->rank); return; }
    if (!valid_dt(b->dtype)) VERR(c, b->loc, "buffer '%s' has an invalid dtype %d", bname(b), (int)b->dtype);
    if ((int)b->scope < 0 || b->scope >= IR_SCOPE_COUNT) VERR(c, b->loc, "buffer '%s' has a bad scope %d", bname(b), (int)b->scope);
    if (b->rank > 0 && !b->shape) { VERR(c, b->loc, "buffer '%s' has no shape", bname(b)); return; }
    c->shape_mode = true;
    c->shape_buf = b;
    for (int i = 0; i < b->rank; i++) {
        check_index(c, b->shape[i], b->loc, "a buffer dimension", 0);
        int64_t v;
        if (const_of(b->shape[i], &v) && v < 0) VERR(c, b->loc, "buffer '%s' has negative dimension %lld", bname(b), (long long)v);
    }
    c->shape_mode = false;
    c->shape_buf = NULL;
    check_layout(c, b);
}

bool ir_verify_func(const ir_func *f, tile_diags *diags) {
    tile_loc noloc = {0};
    if (!f) { tile_error_at(diags, noloc, "IR verifier: missing function"); return false; }
    vctx cx = {0}, *c = &cx;
    c->f = f;
    c->d = diags;
    c->ok = true;
    if (f->nvars < 0 || f->nbuffers < 0 || (f->nvars > 0 && !f->vars) || (f->nbuffers > 0 && !f->buffers) ||
        f->nparams < 0 || (f->nparams > 0 && !f->params) || f->nrets < 0 || (f->nrets > 0 && !f->rets) ||
        f->nsizes < 0 || (f->nsizes > 0 && !f->sizes)) {
        VERR(c, f->loc, "function '%s' has inconsistent tables", f->name ? f->name : "?");
        return false;
    }
    c->nvars = f->nvars;
    c->nbufs = f->nbuffers;
    size_t nv = (size_t)(f->nvars + 1), nb = (size_t)(f->nbuffers + 1);
    c->var_scope = tile_xcalloc(nv, sizeof(int));
    c->assigned = tile_xcalloc(nv, 1);
    c->is_size = tile_xcalloc(nv, 1);
    c->is_param_var = tile_xcalloc(nv, 1);
    c->buf_param = tile_xcalloc(nb, 1);
    c->buf_ret = tile_xcalloc(nb, 1);
    c->buf_alive = tile_xcalloc(nb, sizeof(int));

    for (int i = 0; i < f->nvars; i++) {
        const ir_var *v = f->vars[i];
        if (!v) { VERR(c, f->loc, "variable #%d is missing", i); continue; }
        if (v->id != i) VERR(c, v->loc, "variable '%s' has id %d but is entry %d", vname(v), v->id, i);
        if (!valid_dt(v->dtype)) VERR(c, v->loc, "variable '%s' has an invalid dtype", vname(v));
        if ((v->kind == IR_VAR_SIZE || v->kind == IR_VAR_LOOP || v->kind == IR_VAR_BLOCK) && valid_dt(v->dtype) && !is_intdt(v->dtype))
            VERR(c, v->loc, "variable '%s' must be an integer, not %s", vname(v), dtn(v->dtype));
    }
    for (int i = 0; i < f->nbuffers; i++) {
        const ir_buffer *b = f->buffers[i];
        if (!b) { VERR(c, f->loc, "buffer #%d is missing", i); continue; }
        if (b->id != i) VERR(c, b->loc, "buffer '%s' has id %d but is entry %d", bname(b), b->id, i);
    }
    for (int i = 0; i < f->nsizes; i++) {
        const ir_var *v = f->sizes[i];
        if (!var_known(c, v, f->loc)) continue;
        if (v->kind != IR_VAR_SIZE) VERR(c, v->loc, "'%s' is listed as a size but is not a size variable", vname(v));
        c->is_size[v->id] = 1;
    }
    for (int i = 0; i < f->nparams; i++) {
        const ir_param *p = &f->params[i];
        if ((p->buf != NULL) == (p->var != NULL)) {
            VERR(c, f->loc, "parameter %d ('%s') must be exactly one of a tensor or a scalar", i, p->name ? p->name : "?");
            continue;
        }
        if (p->buf) {
            if (!buf_known(c, p->buf, f->loc)) continue;
            if (p->buf->role != IR_BUF_PARAM) VERR(c, p->buf->loc, "parameter '%s' is a buffer whose role is not param", bname(p->buf));
            if (p->buf->scope != IR_SCOPE_GLOBAL) VERR(c, p->buf->loc, "parameter '%s' must be a global buffer, not %s", bname(p->buf), ir_scope_name(p->buf->scope));
            c->buf_param[p->buf->id] = 1;
        } else {
            if (!var_known(c, p->var, f->loc)) continue;
            if (p->var->kind != IR_VAR_PARAM) VERR(c, p->var->loc, "scalar parameter '%s' is not a param variable", vname(p->var));
            c->is_param_var[p->var->id] = 1;
        }
    }
    for (int i = 0; i < f->nrets; i++) {
        const ir_buffer *b = f->rets[i];
        if (!buf_known(c, b, f->loc)) continue;
        if (b->role != IR_BUF_OUTPUT) VERR(c, b->loc, "returned buffer '%s' does not have role output", bname(b));
        if (b->scope != IR_SCOPE_GLOBAL) VERR(c, b->loc, "returned buffer '%s' must be global, not %s", bname(b), ir_scope_name(b->scope));
        c->buf_ret[b->id] = 1;
    }
    for (int i = 0; i < f->nbuffers; i++) check_buffer_decl(c, f->buffers[i]);

    if (!f->body) VERR(c, f->loc, "function '%s' has no body", f->name ? f->name : "?");
    else check_body(c, f->body, f->loc, 0);

    free(c->var_scope);
    free(c->assigned);
    free(c->is_size);
    free(c->is_param_var);
    free(c->buf_param);
    free(c->buf_ret);
    free(c->buf_alive);
    free(c->allocs);
    return c->ok;
}
