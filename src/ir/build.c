/* build.c — constructors for Tile IR nodes, name tables, constant folding.
 *
 * Everything is allocated in the module's arena. The growable arrays of ir_func and
 * ir_module (params, rets, sizes, buffers, vars, funcs) are grown by copying into a
 * larger arena block; their capacity is implicit: the array is reallocated whenever its
 * length reaches 0 or a power of two >= 4, so always append through these builders. */
#include "ir.h"

#include <stdlib.h>
#include <string.h>

/* ---------- name tables ---------- */
const char *ir_scope_name(ir_scope s) {
    switch (s) {
    case IR_SCOPE_GLOBAL: return "global";
    case IR_SCOPE_SHARED: return "shared";
    case IR_SCOPE_FRAGMENT: return "fragment";
    case IR_SCOPE_LOCAL: return "local";
    default: return "?";
    }
}

const char *ir_loop_kind_name(ir_loop_kind k) {
    switch (k) {
    case IR_LOOP_SERIAL: return "serial";
    case IR_LOOP_PARALLEL: return "parallel";
    case IR_LOOP_PIPELINED: return "pipelined";
    case IR_LOOP_UNROLLED: return "unrolled";
    case IR_LOOP_VECTORIZED: return "vectorized";
    default: return "?";
    }
}

const char *ir_reduce_kind_name(ir_reduce_kind k) {
    switch (k) {
    case IR_RED_SUM: return "sum";
    case IR_RED_MAX: return "max";
    case IR_RED_MIN: return "min";
    case IR_RED_ABSSUM: return "abssum";
    case IR_RED_ABSMAX: return "absmax";
    default: return "?";
    }
}

bool ir_binop_is_compare(ir_binop op) {
    return op == IR_B_LT || op == IR_B_LE || op == IR_B_GT || op == IR_B_GE || op == IR_B_EQ ||
           op == IR_B_NE;
}

static const char *const intrinsic_names[] = {
#define X(e, s, n) s,
    IR_INTRINSICS(X)
#undef X
};
static const int intrinsic_arity[] = {
#define X(e, s, n) n,
    IR_INTRINSICS(X)
#undef X
};

const char *ir_intrinsic_name(ir_intrinsic fn) {
    if ((int)fn < 0 || fn >= IR_I_COUNT) return "?";
    return intrinsic_names[fn];
}
int ir_intrinsic_arity(ir_intrinsic fn) {
    if ((int)fn < 0 || fn >= IR_I_COUNT) return -1;
    return intrinsic_arity[fn];
}

/* ---------- growable arena arrays ---------- */
/* Returns the array to store element `n` (0-based) in, reallocating when needed. */
static void *grow(tile_arena *a, void *arr, int n, size_t elem) {
    if (n == 0 || (n >= 4 && (n & (n - 1)) == 0)) {
        int cap = n == 0 ? 4 : 2 * n;
        void *na = tile_arena_alloc(a, elem * (size_t)cap);
        if (n > 0 && arr) memcpy(na, arr, elem * (size_t)n);
        return na;
    }
    return arr;
}

/* ---------- modules and functions ---------- */
ir_module *ir_module_new(void) {
    ir_module *m = tile_xcalloc(1, sizeof *m);
    tile_arena_init(&m->arena);
    return m;
}

void ir_module_free(ir_module *m) {
    if (!m) return;
    tile_arena_free(&m->arena);
    free(m);
}

ir_func *ir_func_new(ir_module *m, const char *name, tile_loc loc, ir_form form) {
    ir_func *f = TILE_NEW(&m->arena, ir_func);
    f->name = tile_arena_strdup(&m->arena, name ? name : "");
    f->loc = loc;
    f->form = form;
    f->explain = TILE_NEW(&m->arena, ir_explain);
    f->explain->arena = &m->arena;
    return f;
}

void ir_module_add(ir_module *m, ir_func *f) {
    m->funcs = grow(&m->arena, m->funcs, m->nfuncs, sizeof(ir_func *));
    m->funcs[m->nfuncs++] = f;
}

ir_var *ir_var_new(ir_module *m, ir_func *f, const char *name, ir_var_kind kind, tile_dtype dt,
                   tile_loc loc) {
    ir_var *v = TILE_NEW(&m->arena, ir_var);
    v->name = tile_arena_strdup(&m->arena, name ? name : "");
    v->kind = kind;
    v->dtype = dt;
    v->loc = loc;
    v->id = -1;
    if (f) {
        f->vars = grow(&m->arena, f->vars, f->nvars, sizeof(ir_var *));
        v->id = f->nvars;
        f->vars[f->nvars++] = v;
    }
    return v;
}

ir_buffer *ir_buffer_new(ir_module *m, ir_func *f, const char *name, tile_dtype dt, ir_scope scope,
                         int rank, ir_expr **shape, ir_buffer_role role, tile_loc loc) {
    TILE_ASSERT(rank >= 0 && rank <= 8, "buffer rank %d", rank);
    ir_buffer *b = TILE_NEW(&m->arena, ir_buffer);
    b->name = tile_arena_strdup(&m->arena, name ? name : "");
    b->dtype = dt;
    b->scope = scope;
    b->rank = rank;
    b->shape = TILE_NEW_ARRAY(&m->arena, ir_expr *, rank > 0 ? rank : 1);
    for (int i = 0; i < rank; i++) b->shape[i] = shape ? shape[i] : NULL;
    b->role = role;
    b->loc = loc;
    b->id = -1;
    if (f) {
        f->buffers = grow(&m->arena, f->buffers, f->nbuffers, sizeof(ir_buffer *));
        b->id = f->nbuffers;
        f->buffers[f->nbuffers++] = b;
    }
    return b;
}

void ir_func_add_param(ir_module *m, ir_func *f, const char *name, ir_buffer *buf, ir_var *var) {
    f->params = grow(&m->arena, f->params, f->nparams, sizeof(ir_param));
    ir_param *p = &f->params[f->nparams++];
    p->name = tile_arena_strdup(&m->arena, name ? name : (buf ? buf->name : var ? var->name : ""));
    p->buf = buf;
    p->var = var;
}

void ir_func_add_ret(ir_module *m, ir_func *f, ir_buffer *buf) {
    f->rets = grow(&m->arena, f->rets, f->nrets, sizeof(ir_buffer *));
    f->rets[f->nrets++] = buf;
}

void ir_func_add_size(ir_module *m, ir_func *f, ir_var *v) {
    f->sizes = grow(&m->arena, f->sizes, f->nsizes, sizeof(ir_var *));
    f->sizes[f->nsizes++] = v;
}

/* ---------- expressions ---------- */
static ir_expr *expr_new(ir_module *m, ir_expr_kind kind, tile_dtype dt, tile_loc loc, int nargs) {
    ir_expr *e = TILE_NEW(&m->arena, ir_expr);
    e->kind = kind;
    e->dtype = dt;
    e->loc = loc;
    e->nargs = nargs;
    if (nargs > 0) e->args = TILE_NEW_ARRAY(&m->arena, ir_expr *, nargs);
    return e;
}

ir_expr *ir_const_int(ir_module *m, tile_dtype dt, int64_t v, tile_loc loc) {
    ir_expr *e = expr_new(m, IR_E_CONST, dt, loc, 0);
    e->ival = v;
    e->fval = (double)v;
    return e;
}

ir_expr *ir_const_float(ir_module *m, tile_dtype dt, double v, tile_loc loc) {
    ir_expr *e = expr_new(m, IR_E_CONST, dt, loc, 0);
    e->fval = v;
    return e;
}

ir_expr *ir_var_ref(ir_module *m, ir_var *v, tile_loc loc) {
    ir_expr *e = expr_new(m, IR_E_VAR, v ? v->dtype : TILE_DT_INVALID, loc, 0);
    e->var = v;
    return e;
}

ir_expr *ir_load(ir_module *m, ir_buffer *b, ir_expr **idx, tile_loc loc) {
    int n = b ? b->rank : 0;
    ir_expr *e = expr_new(m, IR_E_LOAD, b ? b->dtype : TILE_DT_INVALID, loc, n);
    e->buf = b;
    for (int i = 0; i < n; i++) e->args[i] = idx ? idx[i] : NULL;
    return e;
}

ir_expr *ir_unary(ir_module *m, ir_unop op, ir_expr *a, tile_loc loc) {
    TILE_ASSERT(a != NULL, "missing operand");
    ir_expr *e = expr_new(m, IR_E_UNARY, op == IR_U_NOT ? TILE_DT_BOOL : a->dtype, loc, 1);
    e->op = (int)op;
    e->args[0] = a;
    return e;
}

ir_expr *ir_binary(ir_module *m, ir_binop op, ir_expr *a, ir_expr *b, tile_loc loc) {
    TILE_ASSERT(a != NULL && b != NULL, "missing operand");
    TILE_ASSERT(a->dtype == b->dtype, "binary '%d' on %s and %s", (int)op, tile_dtype_name(a->dtype),
                tile_dtype_name(b->dtype));
    tile_dtype dt = a->dtype;
    if (ir_binop_is_compare(op) || op == IR_B_AND || op == IR_B_OR) dt = TILE_DT_BOOL;
    ir_expr *e = expr_new(m, IR_E_BINARY, dt, loc, 2);
    e->op = (int)op;
    e->args[0] = a;
    e->args[1] = b;
    return e;
}

ir_expr *ir_select(ir_module *m, ir_expr *c, ir_expr *a, ir_expr *b, tile_loc loc) {
    TILE_ASSERT(c != NULL && a != NULL && b != NULL, "missing operand");
    ir_expr *e = expr_new(m, IR_E_SELECT, a->dtype, loc, 3);
    e->args[0] = c;
    e->args[1] = a;
    e->args[2] = b;
    return e;
}

ir_expr *ir_cast(ir_module *m, tile_dtype dt, ir_expr *a, tile_loc loc) {
    TILE_ASSERT(a != NULL, "missing operand");
    if (a->dtype == dt) return a;
    ir_expr *e = expr_new(m, IR_E_CAST, dt, loc, 1);
    e->args[0] = a;
    return e;
}

ir_expr *ir_reinterpret(ir_module *m, tile_dtype dt, ir_expr *a, tile_loc loc) {
    TILE_ASSERT(a != NULL, "missing operand");
    ir_expr *e = expr_new(m, IR_E_REINTERPRET, dt, loc, 1);
    e->args[0] = a;
    return e;
}

ir_expr *ir_call(ir_module *m, ir_intrinsic fn, tile_dtype dt, ir_expr **args, int nargs, tile_loc loc) {
    ir_expr *e = expr_new(m, IR_E_CALL, dt, loc, nargs);
    e->op = (int)fn;
    for (int i = 0; i < nargs; i++) e->args[i] = args ? args[i] : NULL;
    return e;
}

/* ---------- statements ---------- */
ir_stmt *ir_stmt_new(ir_module *m, ir_stmt_kind kind, tile_loc loc) {
    ir_stmt *s = TILE_NEW(&m->arena, ir_stmt);
    s->kind = kind;
    s->loc = loc;
    switch (kind) {
    case IR_S_FOR:
    case IR_S_WHILE:
    case IR_S_KERNEL:
        s->nbody = 1;
        s->body = TILE_NEW_ARRAY(&m->arena, ir_stmt *, 1);
        break;
    case IR_S_IF:
        s->nbody = 2;
        s->body = TILE_NEW_ARRAY(&m->arena, ir_stmt *, 2);
        break;
    case IR_S_COPY:
    case IR_S_REDUCE:
        s->nregions = 2;
        break;
    case IR_S_FILL:
        s->nregions = 1;
        break;
    case IR_S_GEMM:
        s->nregions = 3;
        break;
    default:
        break;
    }
    if (s->nregions) s->regions = TILE_NEW_ARRAY(&m->arena, ir_region, s->nregions);
    if (kind == IR_S_KERNEL) s->threads = 128;
    return s;
}

ir_stmt *ir_seq(ir_module *m, ir_stmt **stmts, int n, tile_loc loc) {
    ir_stmt *s = TILE_NEW(&m->arena, ir_stmt);
    s->kind = IR_S_SEQ;
    s->loc = loc;
    s->nbody = n > 0 ? n : 0;
    if (n > 0) {
        s->body = TILE_NEW_ARRAY(&m->arena, ir_stmt *, n);
        for (int i = 0; i < n; i++) s->body[i] = stmts ? stmts[i] : NULL;
    }
    return s;
}

/* ---------- constant folding ---------- */
static int64_t wrap_dt(tile_dtype dt, int64_t v) {
    switch (dt) {
    case TILE_DT_BOOL: return v != 0;
    case TILE_DT_I8: return (int8_t)(uint8_t)(uint64_t)v;
    case TILE_DT_I16: return (int16_t)(uint16_t)(uint64_t)v;
    case TILE_DT_I32: return (int32_t)(uint32_t)(uint64_t)v;
    case TILE_DT_U8: return (int64_t)(uint8_t)(uint64_t)v;
    case TILE_DT_U16: return (int64_t)(uint16_t)(uint64_t)v;
    case TILE_DT_U32: return (int64_t)(uint32_t)(uint64_t)v;
    default: return v;
    }
}

static bool is_intlike(tile_dtype dt) {
    return (dt >= TILE_DT_BOOL && dt <= TILE_DT_I64) || (dt >= TILE_DT_U8 && dt <= TILE_DT_U64);
}

static bool is_signed_int(tile_dtype dt) { return dt >= TILE_DT_I8 && dt <= TILE_DT_I64; }

bool ir_expr_equal(const ir_expr *a, const ir_expr *b) {
    if (a == b) return true;
    if (!a || !b || a->kind != b->kind || a->dtype != b->dtype || a->nargs != b->nargs) return false;
    switch (a->kind) {
    case IR_E_CONST:
        if ((int)a->dtype >= 0 && a->dtype < TILE_DT_COUNT && tile_dtype_is_float(a->dtype))
            return a->fval == b->fval || (a->fval != a->fval && b->fval != b->fval);
        return a->ival == b->ival;
    case IR_E_VAR: return a->var == b->var;
    case IR_E_LOAD: if (a->buf != b->buf) return false; break;
    case IR_E_CAST: case IR_E_REINTERPRET: break;
    default: if (a->op != b->op) return false; break;
    }
    for (int i = 0; i < a->nargs; i++)
        if (!a->args || !b->args || !ir_expr_equal(a->args[i], b->args[i])) return false;
    return true;
}

/* Integer expressions as linear forms c + sum coef_k * atom_k, computed modulo 2^64.
 * + - * (by a constant) are ring operations, so the identities hold exactly under
 * two's-complement wrapping; the result is wrapped to the expression's dtype at the end.
 * Anything else (a load, a division by a variable, a widening cast of a non-constant) is
 * an opaque atom compared structurally. */
#define LIN_MAX 16
typedef struct lin {
    int n;
    const ir_expr *atom[LIN_MAX];
    uint64_t coef[LIN_MAX];
    uint64_t c;
} lin;

static bool lin_is_const(const lin *l) {
    for (int i = 0; i < l->n; i++)
        if (l->coef[i]) return false;
    return true;
}

static bool lin_add(lin *r, const lin *a, uint64_t mul) {
    r->c += a->c * mul;
    for (int i = 0; i < a->n; i++) {
        int k = 0;
        while (k < r->n && !ir_expr_equal(r->atom[k], a->atom[i])) k++;
        if (k == r->n) {
            if (r->n == LIN_MAX) return false;
            r->atom[k] = a->atom[i];
            r->coef[k] = 0;
            r->n++;
        }
        r->coef[k] += a->coef[i] * mul;
    }
    return true;
}

static bool lin_of(const ir_expr *e, lin *l, int depth);

static bool lin_atom(const ir_expr *e, lin *l) {
    l->n = 1;
    l->atom[0] = e;
    l->coef[0] = 1;
    l->c = 0;
    return true;
}

/* Folds both operands to constants (non-ring operators). */
static bool fold_other(const ir_expr *e, lin *l, int depth) {
    lin x, y;
    if (!lin_of(e->args[0], &x, depth + 1) || !lin_of(e->args[1], &y, depth + 1)) return false;
    if (!lin_is_const(&x) || !lin_is_const(&y) || !is_signed_int(e->dtype) || e->args[0]->dtype != e->dtype)
        return lin_atom(e, l);
    int64_t a = wrap_dt(e->dtype, (int64_t)x.c), b = wrap_dt(e->dtype, (int64_t)y.c), r;
    switch (e->op) {
    case IR_B_MIN: r = a < b ? a : b; break;
    case IR_B_MAX: r = a > b ? a : b; break;
    case IR_B_FLOORDIV:
    case IR_B_FLOORMOD: {
        if (b == 0 || (b == -1 && a == INT64_MIN)) return lin_atom(e, l);
        int64_t q = a / b, m = a % b;
        if (m != 0 && ((m < 0) != (b < 0))) { q--; m += b; }
        r = e->op == IR_B_FLOORDIV ? q : m;
        break;
    }
    default: return lin_atom(e, l);
    }
    l->n = 0;
    l->c = (uint64_t)wrap_dt(e->dtype, r);
    return true;
}

static bool lin_of(const ir_expr *e, lin *l, int depth) {
    if (!e || depth > 64 || !is_intlike(e->dtype)) return false;
    l->n = 0;
    l->c = 0;
    switch (e->kind) {
    case IR_E_CONST:
        l->c = (uint64_t)e->ival;
        return true;
    case IR_E_CAST: {
        if (e->nargs != 1 || !e->args || !e->args[0]) return false;
        tile_dtype from = e->args[0]->dtype;
        if (!is_intlike(from)) return lin_atom(e, l);
        lin x;
        if (!lin_of(e->args[0], &x, depth + 1)) return false;
        if (lin_is_const(&x)) {
            l->c = (uint64_t)wrap_dt(e->dtype, wrap_dt(from, (int64_t)x.c));
            return true;
        }
        /* truncation (or same width) is a ring homomorphism; widening is not */
        if (e->dtype != TILE_DT_BOOL && from != TILE_DT_BOOL && tile_dtype_bits(e->dtype) <= tile_dtype_bits(from)) {
            *l = x;
            return true;
        }
        return lin_atom(e, l);
    }
    case IR_E_UNARY: {
        if (e->nargs != 1 || !e->args || !e->args[0]) return false;
        if (e->op != IR_U_NEG) {
            lin x;
            if (!lin_of(e->args[0], &x, depth + 1)) return false;
            if (!lin_is_const(&x)) return lin_atom(e, l);
            l->c = (uint64_t)(e->op == IR_U_BITNOT ? ~x.c : (uint64_t)(wrap_dt(e->args[0]->dtype, (int64_t)x.c) == 0));
            return true;
        }
        lin x;
        if (!lin_of(e->args[0], &x, depth + 1)) return false;
        return lin_add(l, &x, (uint64_t)-1);
    }
    case IR_E_BINARY: {
        if (e->nargs != 2 || !e->args || !e->args[0] || !e->args[1]) return false;
        if (e->args[0]->dtype != e->dtype || e->args[1]->dtype != e->dtype) return lin_atom(e, l);
        lin x, y;
        switch (e->op) {
        case IR_B_ADD:
        case IR_B_SUB:
            if (!lin_of(e->args[0], &x, depth + 1) || !lin_of(e->args[1], &y, depth + 1)) return false;
            return lin_add(l, &x, 1) && lin_add(l, &y, e->op == IR_B_ADD ? 1 : (uint64_t)-1);
        case IR_B_MUL:
            if (!lin_of(e->args[0], &x, depth + 1) || !lin_of(e->args[1], &y, depth + 1)) return false;
            if (lin_is_const(&x)) return lin_add(l, &y, x.c);
            if (lin_is_const(&y)) return lin_add(l, &x, y.c);
            return lin_atom(e, l);
        default:
            return fold_other(e, l, depth);
        }
    }
    default:
        return lin_atom(e, l);
    }
}

bool ir_expr_uses_var(const ir_expr *e, const ir_var *v) {
    if (!e) return false;
    if (e->kind == IR_E_VAR && e->var == v) return true;
    for (int i = 0; i < e->nargs; i++)
        if (ir_expr_uses_var(e->args[i], v)) return true;
    return false;
}

bool ir_expr_loads(const ir_expr *e, const ir_buffer *b) {
    if (!e || !b) return false;
    if (e->kind == IR_E_LOAD && e->buf == b) return true;
    for (int i = 0; i < e->nargs; i++)
        if (ir_expr_loads(e->args[i], b)) return true;
    return false;
}

bool ir_region_is_whole(const ir_region *r) {
    for (int d = 0; d < r->buf->rank; d++) {
        int64_t s, e, n;
        if (!ir_const_int_value(r->start[d], &s) || s != 0 || !ir_const_int_value(r->extent[d], &e) ||
            !ir_const_int_value(r->buf->shape[d], &n) || e != n)
            return false;
    }
    return true;
}

bool ir_const_int_value(const ir_expr *e, int64_t *out) {
    lin l;
    if (!lin_of(e, &l, 0)) return false;
    for (int i = 0; i < l.n; i++)
        if (wrap_dt(e->dtype, (int64_t)l.coef[i]) != 0) return false;
    if (out) *out = wrap_dt(e->dtype, (int64_t)l.c);
    return true;
}
