/* sema_expr.c — expressions: names, typing and promotion, constant folding (Python
 * semantics for literals), subscripts, attributes, calls of builtins and user helpers. */
#include "sema_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------- builtin table ----------
 * X(name, kind): kind M = math (1 arg), S = special handled below, T = tile statement
 * (sema_stmt.c), L = loop iterator (only after `for ... in`), H = hint accepted and
 * ignored, A = allocation. */
#define BUILTINS(X)                                                                                      \
    X(exp, M) X(exp2, M) X(log, M) X(log2, M) X(sqrt, M) X(rsqrt, M) X(tanh, M) X(abs, S) X(sin, M)      \
    X(cos, M) X(floor, M) X(ceil, M) X(round, M) X(trunc, M) X(erf, M) X(sigmoid, M) X(isnan, M)         \
    X(isinf, M) X(isfinite, S) X(fabs, M) X(fma, S) X(pow, S) X(max, S) X(min, S) X(if_then_else, S) X(Select, S)       \
    X(cast, S) X(Cast, S) X(reinterpret, S) X(const, S) X(infinity, S) X(max_value, S) X(min_value, S)   \
    X(float, S) X(int, S) X(bool, S) X(len, S) X(sum, S) X(ceildiv, S) X(floordiv, S) X(floormod, S)     \
    X(truncdiv, S) X(truncmod, S) X(shift_left, S) X(shift_right, S) X(bitwise_and, S)                   \
    X(bitwise_or, S) X(bitwise_xor, S) X(bitwise_not, S) X(symbolic, S) X(dynamic, S)                    \
    X(cdiv, S) X(align_up, S) X(any_of, S) X(all_of, S) X(__ldg, S) X(next_power_of_2, S) X(gcd, S) X(lcm, S) X(clamp, S)                                    \
    X(range, L) X(serial, L) X(Parallel, L) X(parallel, L) X(Pipelined, L) X(unroll, L) X(vectorized, L) X(Kernel, L)   \
    X(copy, T) X(async_copy, T) X(let, T) X(im2col, T) X(c2d_im2col, T) X(fill, T) X(clear, T) X(gemm, T) X(reduce_max, T) X(reduce_sum, T) X(reduce_min, T)      \
    X(reduce_abssum, T) X(reduce_absmax, T) X(atomic_add, T) X(atomic_max, T) X(atomic_min, T) X(atomic_addx2, T) X(atomic_addx4, T) X(atomic_load, T) X(atomic_store, T) X(atomic_or, T) X(atomic_and, T) X(atomic_xor, T) \
    X(alloc_shared, A) X(alloc_fragment, A) X(alloc_tmem, A) X(tcgen05_gemm, T) X(tcgen05_mma_arrive, T) X(wgmma_gemm, T) X(wait_wgmma, H) X(alloc_local, A) X(allocate, A) X(alloc_tensor, A)          \
    X(zeros, A) X(empty, A) X(alloc_global, A) X(alloc_var, T) X(alloc_reducer, A) X(reducer_init, T)    \
    X(reducer_update, T) X(finalize_reducer, T) X(cumsum, T) X(cummax, T) X(cummin, T) X(reshape, T) X(view, T)                                  \
    X(use_swizzle, H) X(annotate_layout, H) X(ptx_wait_group, H) X(ptx_commit_group, H) X(no_set_max_nreg, H) X(set_max_nreg, H)                     \
    X(disable_warp_group_reg_alloc, H) X(sync_threads, S) X(annotate_l2_hit_ratio, H)                    \
    X(annotate_padding, H) X(disable_tma_lower, H) X(annotate_safe_value, H) X(annotate_min_blocks_per_sm, H)  \
    X(assume, H) X(no_set_max_nreg_hint, H) X(sblock, L) X(reads, H) X(writes, H)                                                              \
    X(make_swizzled_layout, O) X(make_full_bank_swizzled_layout, O) X(make_half_bank_swizzled_layout, O) \
    X(make_quarter_bank_swizzled_layout, O) X(make_linear_layout, O) X(make_mma_swizzle_layout, O)        \
    X(Layout, O) X(Fragment, O)                                                                          \
    X(get_thread_binding, S) X(thread_binding, S) X(shuffle_elect, S) X(any_sync, S) X(all_sync, S) X(ballot_sync, S) X(ballot, S) X(get_lane_idx, S) X(get_warp_idx, S)                  \
    X(get_warp_idx_sync, S) X(shfl_xor, S) X(shfl_down, S) X(shfl_up, S) X(shfl_sync, S)                 \
    X(tvm_warp_shuffle, S) X(warp_reduce_sum, S) X(warp_reduce_max, S) X(warp_reduce_min, S)              \
    X(warp_reduce_bitand, S) X(warp_reduce_bitor, S) X(get_warp_group_idx, S)                           \
    X(alloc_barrier, T) X(barrier_arrive, T) X(barrier_wait, T) X(mbarrier_arrive, T) X(mbarrier_wait_parity, T) \
    X(mbarrier_expect_tx, T) X(barrier_expect_tx, T) X(tma_copy, T) X(ws, L)                             \
    X(tma_store_wait, H) X(tma_store_arrive, H) X(fence_proxy_async, H) X(pdl_trigger, H) X(pdl_sync, H)

typedef struct builtin_info { const char *name; char kind; } builtin_info;
static const builtin_info builtins[] = {
#define X(n, k) {#n, #k[0]},
    BUILTINS(X)
#undef X
    {NULL, 0}};

static const builtin_info py_builtin_info = {"", 'P'}; /* Python builtins of sema_py.c */

static const builtin_info *find_builtin(const char *name) {
    for (const builtin_info *b = builtins; b->name; b++)
        if (!strcmp(b->name, name)) return b;
    if (py_is_builtin(name)) return &py_builtin_info;
    return NULL;
}
bool lookup_builtin_exists(const char *name) { return find_builtin(name) != NULL; }

/* ---------- helpers ---------- */
bool sv_is_const(const sval *v) { return v->kind == SV_EXPR && v->e->kind == IR_E_CONST; }

static bool is_sub32_float(tile_dtype t) {
    return t == TILE_DT_F16 || t == TILE_DT_BF16 || t == TILE_DT_FP8_E4M3 || t == TILE_DT_FP8_E5M2 || t == TILE_DT_FP4_E2M1;
}

/* The dtype a value of type t computes in: sub-32-bit floats compute in f32. */
tile_dtype promote_arith(tile_dtype t) { return is_sub32_float(t) ? TILE_DT_F32 : t; }

static double const_as_double(const ir_expr *e) {
    return tile_dtype_is_float(e->dtype) ? e->fval : tile_dtype_is_signed(e->dtype) || e->dtype == TILE_DT_BOOL ? (double)e->ival : (double)(uint64_t)e->ival;
}

ir_expr *cast_to(sema_ctx *c, ir_expr *e, tile_dtype dt) {
    if (!e || e->dtype == dt) return e;
    if (e->kind == IR_E_CONST) {
        /* fold with exactly the conversion rules the interpreter uses */
        if (tile_dtype_is_float(dt)) {
            if (tile_dtype_is_float(e->dtype)) return ir_const_float(c->mod, dt, tile_round_to(dt, e->fval), e->loc);
            /* integer -> float with one rounding (not through double): store, load back */
            uint64_t buf[2] = {0, 0};
            tile_store_i(dt, buf, 0, e->ival);
            return ir_const_float(c->mod, dt, tile_load_f(dt, buf, 0), e->loc);
        }
        if (dt == TILE_DT_BOOL)
            return ir_const_int(c->mod, dt, tile_dtype_is_float(e->dtype) ? (e->fval != 0 || isnan(e->fval)) : e->ival != 0, e->loc);
        if (tile_dtype_is_float(e->dtype)) return ir_const_int(c->mod, dt, tile_f64_to_int(dt, e->fval), e->loc);
        return ir_const_int(c->mod, dt, tile_wrap_int(dt, e->ival), e->loc);
    }
    return ir_cast(c->mod, dt, e, e->loc);
}

static tile_dtype default_weak_dtype(const ir_expr *e) {
    if (e->dtype == TILE_DT_BOOL) return TILE_DT_BOOL;
    if (tile_dtype_is_float(e->dtype)) return TILE_DT_F32;
    return (e->ival >= INT32_MIN && e->ival <= INT32_MAX) ? TILE_DT_I32 : TILE_DT_I64;
}

/* A weak literal given the type dt. */
static ir_expr *weak_to(sema_ctx *c, sval *v, tile_dtype dt) { return cast_to(c, v->e, dt); }

ir_expr *materialize(sema_ctx *c, sval *v) {
    if (!v) return NULL;
    switch (v->kind) {
    case SV_EXPR: return v->weak ? weak_to(c, v, default_weak_dtype(v->e)) : v->e;
    case SV_ACCESS: {
        sv_access *a = v->acc;
        if (a->any_slice) {
            sema_err(c, v->loc, "a slice of '%s' is a region, not a scalar; use T.copy or index every dimension", a->buf->name);
            return NULL;
        }
        ir_expr *ld = ir_load(c->mod, a->buf, a->start, v->loc);
        sema_note_read(c, a->buf);
        ir_expr *safe = sema_safe_value(c, a->buf, v->loc);
        if (safe) {
            /* out of bounds: the annotated value; the select evaluates the load only inside */
            ir_expr *inb = sema_in_bounds(c, a->buf, a->start, v->loc);
            if (inb) ld = ir_select(c->mod, inb, ld, safe, v->loc);
        }
        return ld;
    }
    case SV_BUFFER:
        sema_err(c, v->loc, "buffer '%s' is used as a scalar; index it, e.g. %s[i%s]", v->buf->name, v->buf->name, v->buf->rank > 1 ? ", j" : "");
        return NULL;
    case SV_NONE:
        if (v->poison) return NULL; /* an error was already reported for it */
        /* fallthrough */
    default:
        sema_err(c, v->loc, "expected a scalar value here, got %s", sv_describe(v));
        return NULL;
    }
}

ir_expr *as_int_expr(sema_ctx *c, sval *v, const char *what) {
    ir_expr *e = materialize(c, v);
    if (!e) return NULL;
    if (e->dtype == TILE_DT_BOOL) return cast_to(c, e, TILE_DT_I32);
    if (!tile_dtype_is_int(e->dtype)) {
        sema_err(c, v->loc, "%s must be an integer, got %s", what, tile_dtype_name(e->dtype));
        return NULL;
    }
    return e;
}

/* The first symbolic size (an unbound parameter or dimension) an expression uses, or NULL. */
static const ir_var *first_size_var(const ir_expr *e) {
    if (!e) return NULL;
    if (e->kind == IR_E_VAR) return e->var && e->var->kind == IR_VAR_SIZE ? e->var : NULL;
    for (int i = 0; i < e->nargs; i++) {
        const ir_var *v = first_size_var(e->args[i]);
        if (v) return v;
    }
    return NULL;
}

bool as_const_int(sema_ctx *c, sval *v, int64_t *out, const char *what) {
    if (v && v->kind == SV_EXPR && v->e->kind == IR_E_CONST && !tile_dtype_is_float(v->e->dtype)) {
        *out = v->e->ival;
        return true;
    }
    if (v && v->kind == SV_EXPR && v->e->kind == IR_E_CONST && v->weak && floor(v->e->fval) == v->e->fval) {
        *out = (int64_t)v->e->fval;
        return true;
    }
    const ir_var *free = v && v->kind == SV_EXPR ? first_size_var(v->e) : NULL;
    if (free)
        sema_err(c, v->loc, "%s must be a compile-time integer constant, but it depends on '%s', which has no value here "
                 "(no -D, no default, and no call in the file passes one): bind it with -D %s=VALUE", what, free->name, free->name);
    else
        sema_err(c, v ? v->loc : (tile_loc){0}, "%s must be a compile-time integer constant%s", what,
                 v && v->kind == SV_EXPR ? " (bind it with -D NAME=VALUE)" : "");
    return false;
}

tile_dtype as_dtype(sema_ctx *c, sval *v, const char *what) {
    if (v->kind == SV_DTYPE) return v->dt;
    if (v->kind == SV_STRING) {
        tile_dtype dt = tile_dtype_parse(v->str);
        if (dt == TILE_DT_INVALID) sema_err(c, v->loc, "unknown dtype \"%s\" for %s (known: float32, float16, bfloat16, float8_e4m3, float8_e5m2, float4_e2m1, float64, int8..int64, uint8..uint64, bool)", v->str, what);
        return dt;
    }
    if (v->kind == SV_BUILTIN) {
        if (!strcmp(v->str, "float")) return TILE_DT_F32;
        if (!strcmp(v->str, "int")) return TILE_DT_I32;
        if (!strcmp(v->str, "bool")) return TILE_DT_BOOL;
    }
    if (v->kind == SV_EXPR && v->e->kind == IR_E_VAR && v->e->var && v->e->var->kind == IR_VAR_SIZE) {
        /* an unbound factory parameter used as a dtype: a size variable stands in for it */
        const char *n = v->e->var->name;
        sema_err(c, v->loc, "%s must be a dtype, but '%s' has no value here (no -D, no default, and no call in the file "
                 "passes one): bind it with -D %s=float16 (or another dtype)", what, n, n);
        return TILE_DT_INVALID;
    }
    sema_err(c, v->loc, "%s must be a dtype (e.g. \"float16\" or T.float16), got %s", what, sv_describe(v));
    return TILE_DT_INVALID;
}

ir_expr *to_bool(sema_ctx *c, ir_expr *e) {
    if (!e || e->dtype == TILE_DT_BOOL) return e;
    tile_dtype t = promote_arith(e->dtype);
    e = cast_to(c, e, t);
    ir_expr *zero = tile_dtype_is_float(t) ? ir_const_float(c->mod, t, 0.0, e->loc) : ir_const_int(c->mod, t, 0, e->loc);
    if (e->kind == IR_E_CONST) return ir_const_int(c->mod, TILE_DT_BOOL, tile_dtype_is_float(t) ? e->fval != 0 : e->ival != 0, e->loc);
    return ir_binary(c->mod, IR_B_NE, e, zero, e->loc);
}

/* The value stored into a buffer/variable of dtype dst (IR rule: sub-32-bit float
 * destinations take an f32/f64 value and round it; others take exactly their dtype). */
ir_expr *coerce_store(sema_ctx *c, ir_expr *v, tile_dtype dst, tile_loc loc) {
    if (!v) return NULL;
    if (is_sub32_float(dst)) {
        if (v->dtype == TILE_DT_F32 || v->dtype == TILE_DT_F64) return v;
        return cast_to(c, v, TILE_DT_F32);
    }
    return cast_to(c, v, dst);
}

/* ---------- integer folding ---------- */
static int64_t floordiv64(int64_t a, int64_t b) {
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q--;
    return q;
}
static int64_t floormod64(int64_t a, int64_t b) {
    int64_t r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}

static bool fold_int(ir_binop op, tile_dtype dt, int64_t a, int64_t b, int64_t *out) {
    bool uns = !tile_dtype_is_signed(dt) && dt != TILE_DT_BOOL;
    int bits = tile_dtype_bits(dt);
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    int64_t r;
    switch (op) {
    case IR_B_ADD: r = (int64_t)(ua + ub); break;
    case IR_B_SUB: r = (int64_t)(ua - ub); break;
    case IR_B_MUL: r = (int64_t)(ua * ub); break;
    case IR_B_DIV:
        if (b == 0) return false;
        if (uns) r = (int64_t)(ua / ub);
        else if (a == INT64_MIN && b == -1) r = a;
        else r = a / b;
        break;
    case IR_B_FLOORDIV:
        if (b == 0) return false;
        if (uns) r = (int64_t)(ua / ub);
        else if (a == INT64_MIN && b == -1) r = a;
        else r = floordiv64(a, b);
        break;
    case IR_B_FLOORMOD:
        if (b == 0) return false;
        if (uns) r = (int64_t)(ua % ub);
        else if (b == -1) r = 0;
        else r = floormod64(a, b);
        break;
    case IR_B_MIN: r = uns ? (ua < ub ? a : b) : (a < b ? a : b); break;
    case IR_B_MAX: r = uns ? (ua > ub ? a : b) : (a > b ? a : b); break;
    case IR_B_SHL: r = (b < 0 || b >= bits) ? 0 : (int64_t)(ua << b); break;
    case IR_B_SHR:
        if (b < 0 || b >= bits) r = (!uns && a < 0) ? -1 : 0;
        else r = uns ? (int64_t)(ua >> b) : (a >> b);
        break;
    case IR_B_BITAND: r = a & b; break;
    case IR_B_BITOR: r = a | b; break;
    case IR_B_BITXOR: r = a ^ b; break;
    case IR_B_LT: *out = uns ? ua < ub : a < b; return true;
    case IR_B_LE: *out = uns ? ua <= ub : a <= b; return true;
    case IR_B_GT: *out = uns ? ua > ub : a > b; return true;
    case IR_B_GE: *out = uns ? ua >= ub : a >= b; return true;
    case IR_B_EQ: *out = a == b; return true;
    case IR_B_NE: *out = a != b; return true;
    case IR_B_AND: *out = a && b; return true;
    case IR_B_OR: *out = a || b; return true;
    default: return false;
    }
    *out = dt == TILE_DT_BOOL ? (r != 0) : tile_wrap_int(dt, r);
    return true;
}

static bool is_int_const(const ir_expr *e, int64_t v) {
    return e->kind == IR_E_CONST && !tile_dtype_is_float(e->dtype) && e->ival == v;
}

/* Binary op on two IR expressions of one (non-float, or any for non-folding ops) dtype,
 * folding integer constants and trivial identities. */
ir_expr *int_binary(sema_ctx *c, ir_binop op, ir_expr *a, ir_expr *b, tile_loc loc) {
    if (!a || !b) return NULL;
    if (!tile_dtype_is_float(a->dtype) && a->kind == IR_E_CONST && b->kind == IR_E_CONST) {
        int64_t r;
        if (fold_int(op, a->dtype, a->ival, b->ival, &r))
            return ir_const_int(c->mod, ir_binop_is_compare(op) || op == IR_B_AND || op == IR_B_OR ? TILE_DT_BOOL : a->dtype, r, loc);
    }
    if (!tile_dtype_is_float(a->dtype) && a->dtype != TILE_DT_BOOL && (op == IR_B_ADD || op == IR_B_SUB || op == IR_B_MUL) &&
        (op != IR_B_MUL || a->kind == IR_E_CONST || b->kind == IR_E_CONST))
        return ir_simplify_int(c->mod, ir_binary(c->mod, op, a, b, loc));
    if (!tile_dtype_is_float(a->dtype)) {
        if ((op == IR_B_ADD || op == IR_B_SUB || op == IR_B_BITOR || op == IR_B_SHL || op == IR_B_SHR) && is_int_const(b, 0)) return a;
        if (op == IR_B_ADD && is_int_const(a, 0)) return b;
        if ((op == IR_B_MUL || op == IR_B_FLOORDIV || op == IR_B_DIV) && is_int_const(b, 1)) return a;
        if (op == IR_B_MUL && is_int_const(a, 1)) return b;
    }
    return ir_binary(c->mod, op, a, b, loc);
}

ir_expr *ceildiv_expr(sema_ctx *c, ir_expr *a, ir_expr *b, tile_loc loc) {
    if (!a || !b) return NULL;
    ir_expr *one = ir_const_int(c->mod, a->dtype, 1, loc);
    return int_binary(c, IR_B_FLOORDIV, int_binary(c, IR_B_SUB, int_binary(c, IR_B_ADD, a, b, loc), one, loc), b, loc);
}

/* ---------- typing of binary operations ---------- */
static tile_dtype unify_int(tile_dtype a, tile_dtype b) {
    if (a == b) return a;
    int ba = tile_dtype_bits(a), bb = tile_dtype_bits(b);
    if (ba != bb) return ba > bb ? a : b;
    return tile_dtype_is_signed(a) ? b : a; /* same width: unsigned wins */
}

/* Common dtype of two non-weak operands of an arithmetic op. */
static tile_dtype unify(tile_dtype a, tile_dtype b, bool keep_bool) {
    if (keep_bool && a == TILE_DT_BOOL && b == TILE_DT_BOOL) return TILE_DT_BOOL;
    a = promote_arith(a);
    b = promote_arith(b);
    if (a == TILE_DT_BOOL) a = TILE_DT_I32;
    if (b == TILE_DT_BOOL) b = TILE_DT_I32;
    if (tile_dtype_is_float(a) || tile_dtype_is_float(b)) return (a == TILE_DT_F64 || b == TILE_DT_F64) ? TILE_DT_F64 : TILE_DT_F32;
    return unify_int(a, b);
}

static ir_binop ast_to_ir_binop(ast_op op) {
    switch (op) {
    case AST_OP_ADD: return IR_B_ADD;
    case AST_OP_SUB: return IR_B_SUB;
    case AST_OP_MUL: return IR_B_MUL;
    case AST_OP_DIV: return IR_B_DIV;
    case AST_OP_FLOORDIV: return IR_B_FLOORDIV;
    case AST_OP_MOD: return IR_B_FLOORMOD;
    case AST_OP_POW: return IR_B_POW;
    case AST_OP_SHL: return IR_B_SHL;
    case AST_OP_SHR: return IR_B_SHR;
    case AST_OP_BITAND: return IR_B_BITAND;
    case AST_OP_BITOR: return IR_B_BITOR;
    case AST_OP_BITXOR: return IR_B_BITXOR;
    case AST_OP_LT: return IR_B_LT;
    case AST_OP_LE: return IR_B_LE;
    case AST_OP_GT: return IR_B_GT;
    case AST_OP_GE: return IR_B_GE;
    case AST_OP_EQ: case AST_OP_IS: return IR_B_EQ;
    case AST_OP_NE: case AST_OP_IS_NOT: return IR_B_NE;
    default: return IR_B_COUNT;
    }
}

static bool is_compare_op(ast_op op) {
    return op == AST_OP_LT || op == AST_OP_LE || op == AST_OP_GT || op == AST_OP_GE || op == AST_OP_EQ || op == AST_OP_NE ||
           op == AST_OP_IS || op == AST_OP_IS_NOT;
}

/* Python arithmetic on two literals (compile time). */
static sval *fold_weak(sema_ctx *c, ast_op op, sval *a, sval *b, tile_loc loc) {
    const ir_expr *x = a->e, *y = b->e;
    bool fl = tile_dtype_is_float(x->dtype) || tile_dtype_is_float(y->dtype);
    if (!fl) {
        int64_t p = x->ival, q = y->ival, r;
        bool both_bool = x->dtype == TILE_DT_BOOL && y->dtype == TILE_DT_BOOL;
        switch (op) {
        case AST_OP_ADD: if (__builtin_add_overflow(p, q, &r)) goto overflow; return sv_weak_int(c, r, loc);
        case AST_OP_SUB: if (__builtin_sub_overflow(p, q, &r)) goto overflow; return sv_weak_int(c, r, loc);
        case AST_OP_MUL: if (__builtin_mul_overflow(p, q, &r)) goto overflow; return sv_weak_int(c, r, loc);
        case AST_OP_FLOORDIV:
        case AST_OP_MOD:
            if (q == 0) { sema_err(c, loc, "division by zero in a constant expression"); return sv_weak_int(c, 0, loc); }
            if (p == INT64_MIN && q == -1) goto overflow;
            return sv_weak_int(c, op == AST_OP_FLOORDIV ? floordiv64(p, q) : floormod64(p, q), loc);
        case AST_OP_DIV:
            if (q == 0) { sema_err(c, loc, "division by zero in a constant expression"); return sv_weak_float(c, 0, loc); }
            return sv_weak_float(c, (double)p / (double)q, loc);
        case AST_OP_POW:
            if (q < 0) return sv_weak_float(c, pow((double)p, (double)q), loc);
            r = 1;
            for (int64_t i = 0; i < q; i++)
                if (__builtin_mul_overflow(r, p, &r)) goto overflow;
            return sv_weak_int(c, r, loc);
        case AST_OP_SHL:
            if (q < 0 || q >= 63 || (p != 0 && (p > (INT64_MAX >> q) || p < (INT64_MIN >> q)))) goto overflow;
            return sv_weak_int(c, p * ((int64_t)1 << q), loc);
        case AST_OP_SHR: return sv_weak_int(c, q >= 63 ? (p < 0 ? -1 : 0) : q < 0 ? 0 : p >> q, loc);
        case AST_OP_BITAND: return both_bool ? sv_weak_bool(c, p & q, loc) : sv_weak_int(c, p & q, loc);
        case AST_OP_BITOR: return both_bool ? sv_weak_bool(c, p | q, loc) : sv_weak_int(c, p | q, loc);
        case AST_OP_BITXOR: return both_bool ? sv_weak_bool(c, p ^ q, loc) : sv_weak_int(c, p ^ q, loc);
        case AST_OP_LT: return sv_weak_bool(c, p < q, loc);
        case AST_OP_LE: return sv_weak_bool(c, p <= q, loc);
        case AST_OP_GT: return sv_weak_bool(c, p > q, loc);
        case AST_OP_GE: return sv_weak_bool(c, p >= q, loc);
        case AST_OP_EQ: case AST_OP_IS: return sv_weak_bool(c, p == q, loc);
        case AST_OP_NE: case AST_OP_IS_NOT: return sv_weak_bool(c, p != q, loc);
        default: break;
        }
    } else {
        double p = const_as_double(x), q = const_as_double(y);
        switch (op) {
        case AST_OP_ADD: return sv_weak_float(c, p + q, loc);
        case AST_OP_SUB: return sv_weak_float(c, p - q, loc);
        case AST_OP_MUL: return sv_weak_float(c, p * q, loc);
        case AST_OP_DIV:
        case AST_OP_FLOORDIV:
        case AST_OP_MOD:
            if (q == 0) { sema_err(c, loc, "division by zero in a constant expression"); return sv_weak_float(c, 0, loc); }
            if (op == AST_OP_DIV) return sv_weak_float(c, p / q, loc);
            if (op == AST_OP_FLOORDIV) return sv_weak_float(c, floor(p / q), loc);
            return sv_weak_float(c, p - floor(p / q) * q, loc);
        case AST_OP_POW: return sv_weak_float(c, pow(p, q), loc);
        case AST_OP_LT: return sv_weak_bool(c, p < q, loc);
        case AST_OP_LE: return sv_weak_bool(c, p <= q, loc);
        case AST_OP_GT: return sv_weak_bool(c, p > q, loc);
        case AST_OP_GE: return sv_weak_bool(c, p >= q, loc);
        case AST_OP_EQ: return sv_weak_bool(c, p == q, loc);
        case AST_OP_NE: return sv_weak_bool(c, p != q, loc);
        default: break;
        }
    }
    sema_err(c, loc, "operator '%s' is not defined for %s constants", ast_op_str(op), fl ? "float" : "integer");
    return sv_weak_int(c, 0, loc);
overflow:
    sema_err(c, loc, "integer overflow in a constant expression");
    return sv_weak_int(c, 0, loc);
}

static sval *tuple_concat(sema_ctx *c, sval *a, sval *b, tile_loc loc) {
    sval *t = sv_new(c, SV_TUPLE, loc);
    t->nitems = a->nitems + b->nitems;
    t->items = TILE_NEW_ARRAY(c->arena, sval *, t->nitems ? t->nitems : 1);
    for (int i = 0; i < a->nitems; i++) t->items[i] = a->items[i];
    for (int i = 0; i < b->nitems; i++) t->items[a->nitems + i] = b->items[i];
    return t;
}

static bool sval_equal_const(sval *a, sval *b, bool *eq) {
    if (a->kind == SV_DTYPE && b->kind == SV_DTYPE) { *eq = a->dt == b->dt; return true; }
    if ((a->kind == SV_STRING || a->kind == SV_DTYPE) && (b->kind == SV_STRING || b->kind == SV_DTYPE)) {
        tile_dtype x = a->kind == SV_DTYPE ? a->dt : tile_dtype_parse(a->str);
        tile_dtype y = b->kind == SV_DTYPE ? b->dt : tile_dtype_parse(b->str);
        if (x != TILE_DT_INVALID && y != TILE_DT_INVALID) { *eq = x == y; return true; }
        if (a->kind == SV_STRING && b->kind == SV_STRING) { *eq = !strcmp(a->str, b->str); return true; }
        *eq = false;
        return true;
    }
    if (a->kind == SV_NONE || b->kind == SV_NONE) { *eq = a->kind == b->kind; return true; }
    return false;
}

sval *binary_op(sema_ctx *c, ast_op op, sval *a, sval *b, tile_loc loc) {
    if (!a || !b || a->poison || b->poison) return sv_err(c, loc);
    if (a->kind == SV_TUPLE && b->kind == SV_TUPLE && op == AST_OP_ADD) return tuple_concat(c, a, b, loc);
    if (op == AST_OP_MUL && ((a->kind == SV_TUPLE && sv_is_const(b)) || (b->kind == SV_TUPLE && sv_is_const(a)))) {
        /* [x, y] * n: repetition */
        sval *t = a->kind == SV_TUPLE ? a : b, *k = a->kind == SV_TUPLE ? b : a;
        int64_t n;
        if (!as_const_int(c, k, &n, "a list repetition count")) return sv_err(c, loc);
        if (n < 0) n = 0;
        if (n * t->nitems > (1 << 16)) { sema_err(c, loc, "a list repeated at compile time would have more than %d items", 1 << 16); return sv_err(c, loc); }
        sval *r = sv_new(c, SV_TUPLE, loc);
        r->nitems = (int)(n * t->nitems);
        r->items = TILE_NEW_ARRAY(c->arena, sval *, r->nitems ? r->nitems : 1);
        for (int i = 0; i < r->nitems; i++) r->items[i] = t->items[i % t->nitems];
        return r;
    }
    if (op == AST_OP_EQ || op == AST_OP_NE || op == AST_OP_IS || op == AST_OP_IS_NOT) {
        bool eq;
        if (sval_equal_const(a, b, &eq)) return sv_weak_bool(c, (op == AST_OP_EQ || op == AST_OP_IS) ? eq : !eq, loc);
    }
    sval *ht = py_host_tensor_binary(c, op, a, b, loc);
    if (ht) return ht;
    if (op == AST_OP_MATMUL) { sema_err(c, loc, "the '@' operator is not supported; use T.gemm in the tile form or a loop nest in the plain form"); return sv_err(c, loc); }
    if (a->kind == SV_EXPR && b->kind == SV_EXPR && a->weak && b->weak) return fold_weak(c, op, a, b, loc);
    ir_binop bop = ast_to_ir_binop(op);
    if (bop == IR_B_COUNT) { sema_err(c, loc, "operator '%s' is not supported here", ast_op_str(op)); return sv_err(c, loc); }
    bool cmp = is_compare_op(op);
    bool bitwise = op == AST_OP_SHL || op == AST_OP_SHR || op == AST_OP_BITAND || op == AST_OP_BITOR || op == AST_OP_BITXOR;
    ir_expr *x = NULL, *y = NULL;
    tile_dtype t;
    if (a->kind == SV_EXPR && a->weak) {
        y = materialize(c, b);
        if (!y) return sv_err(c, loc);
        tile_dtype o = promote_arith(y->dtype);
        if (tile_dtype_is_float(a->e->dtype) && !tile_dtype_is_float(o)) o = TILE_DT_F32;
        if (o == TILE_DT_BOOL && a->e->dtype != TILE_DT_BOOL) o = TILE_DT_I32;
        t = o;
        x = weak_to(c, a, t);
    } else if (b->kind == SV_EXPR && b->weak) {
        x = materialize(c, a);
        if (!x) return sv_err(c, loc);
        tile_dtype o = promote_arith(x->dtype);
        if (tile_dtype_is_float(b->e->dtype) && !tile_dtype_is_float(o)) o = TILE_DT_F32;
        if (o == TILE_DT_BOOL && b->e->dtype != TILE_DT_BOOL) o = TILE_DT_I32;
        t = o;
        /* shifts keep the type of the left operand */
        y = weak_to(c, b, t);
    } else {
        x = materialize(c, a);
        y = materialize(c, b);
        if (!x || !y) return sv_err(c, loc);
        t = unify(x->dtype, y->dtype, bitwise || cmp);
        if ((op == AST_OP_SHL || op == AST_OP_SHR) && tile_dtype_is_int(promote_arith(x->dtype))) t = x->dtype;
    }
    if (bitwise) {
        if (tile_dtype_is_float(t)) {
            sema_err(c, loc, "operator '%s' needs integer operands, got %s", ast_op_str(op), tile_dtype_name(t));
            return sv_err(c, loc);
        }
        if (t == TILE_DT_BOOL && (op == AST_OP_SHL || op == AST_OP_SHR)) t = TILE_DT_I32;
    }
    if (op == AST_OP_DIV && !tile_dtype_is_float(t)) {
        /* Python ints of the factory (literals, its unbound parameters and arithmetic on
         * them) divide as in Python, which is where TileLang evaluates them: true division,
         * a float. f64 gives Python's result exactly for operands below 2^53. */
        if (t != TILE_DT_BOOL && sema_is_py_int(c, x) && sema_is_py_int(c, y))
            return sv_expr(c, ir_binary(c->mod, IR_B_DIV, cast_to(c, x, TILE_DT_F64), cast_to(c, y, TILE_DT_F64), loc));
        /* TVM rejects '/' on two integer PrimExprs (div_ambiguity_error); so does Tile */
        sema_err(c, loc, "'/' on integer values of the kernel is not allowed (TileLang rejects it too: the kind of division would be ambiguous); use '//' for floor division, T.truncdiv for C division, or cast an operand to float");
        return sv_err(c, loc);
    }
    x = cast_to(c, x, t);
    y = cast_to(c, y, t);
    if (op == AST_OP_POW && !tile_dtype_is_float(t)) {
        int64_t n;
        if (y->kind == IR_E_CONST && (n = y->ival) >= 0 && n <= 64) {
            ir_expr *r = ir_const_int(c->mod, t, 1, loc);
            for (int64_t i = 0; i < n; i++) r = int_binary(c, IR_B_MUL, r, x, loc);
            return sv_expr(c, r);
        }
        sema_err(c, loc, "integer '**' needs a constant exponent between 0 and 64; cast to float for a general power");
        return sv_err(c, loc);
    }
    if (!tile_dtype_is_float(t)) return sv_expr(c, int_binary(c, bop, x, y, loc));
    return sv_expr(c, ir_binary(c->mod, bop, x, y, loc));
}

/* ---------- names ---------- */
bool par_active(sema_ctx *c, int id) {
    if (id == 0) return true;
    for (int i = 0; i < c->par_depth; i++)
        if (c->par_ids[i] == id) return true;
    return false;
}

static sval *lower_name(sema_ctx *c, sema_env *env, const ast_expr *e) {
    sema_binding *b = env_lookup(env, e->name);
    if (b) {
        if (b->val->kind == SV_OPAQUE && b->val->str && !strcmp(b->val->str, "@dead")) {
            sema_err(c, e->loc, "'%s' can only be used inside its loop or kernel", e->name);
            return sv_err(c, e->loc);
        }
        if (b->val->kind == SV_BROKEN) {
            const tile_loc w = b->val->loc;
            sema_err(c, e->loc, "'%s' is defined by module-level code that Tile could not evaluate (%s:%d:%d: %s)", e->name,
                     w.src ? w.src->name : "?", w.line, w.col, b->val->str);
            return sv_err(c, e->loc);
        }
        if (b->val->kind == SV_EXPR && !par_active(c, b->par_id)) {
            sema_err(c, e->loc, "'%s' was assigned inside a T.Parallel loop, so each iteration has its own; it cannot be read outside that loop (use a buffer)", e->name);
            return sv_err(c, e->loc);
        }
        sval *v = sv_new(c, SV_NONE, e->loc);
        *v = *b->val;
        v->loc = e->loc;
        if (v->kind == SV_MODULE) v->display = e->name;
        if (v->kind == SV_TUPLE) {
            v->list_root = b->val->list_root ? b->val->list_root : b->val;
            v->items = v->list_root->items;
            v->nitems = v->list_root->nitems;
        }
        if (v->kind == SV_DICT && v->str && !strcmp(v->str, "@argparse")) {
            /* an argparse parser read through a name: the parser itself, so that
             * add_argument on it is seen by later parse_args() */
            v->list_root = b->val->list_root ? b->val->list_root : b->val;
            v->nitems = v->list_root->nitems;
        }
        if (v->kind == SV_EXPR && v->e->kind == IR_E_VAR) v->e = ir_var_ref(c->mod, v->e->var, e->loc);
        return v;
    }
    tile_dtype dt = tile_dtype_parse(e->name);
    if (dt != TILE_DT_INVALID && strcmp(e->name, "float") && strcmp(e->name, "int") && strcmp(e->name, "bool")) {
        sval *v = sv_new(c, SV_DTYPE, e->loc);
        v->dt = dt;
        return v;
    }
    if (find_builtin(e->name)) {
        sval *v = sv_new(c, SV_BUILTIN, e->loc);
        v->str = e->name;
        return v;
    }
    sema_err(c, e->loc, "name '%s' is not defined", e->name);
    return sv_err(c, e->loc);
}

/* ---------- attributes ---------- */
static sval *shape_tuple(sema_ctx *c, ir_buffer *b, tile_loc loc) {
    sval *t = sv_new(c, SV_TUPLE, loc);
    t->nitems = b->rank;
    t->items = TILE_NEW_ARRAY(c->arena, sval *, b->rank ? b->rank : 1);
    for (int i = 0; i < b->rank; i++) {
        int64_t k;
        t->items[i] = ir_const_int_value(b->shape[i], &k) ? sv_weak_int(c, k, loc) : sv_expr(c, b->shape[i]);
    }
    return t;
}

static sval *attr_of(sema_ctx *c, sval *base, const char *a, const ast_expr *e);
static sval *lower_attr(sema_ctx *c, sema_env *env, const ast_expr *e) { return attr_of(c, lower_expr(c, env, e->value), e->name, e); }

/* getattr(x, "name") of a module (getattr(T, op_name) with op_name known at compile time):
 * the same as x.name */
sval *sema_getattr(sema_ctx *c, sval *base, const char *name, tile_loc loc) {
    if (base->kind != SV_MODULE) return NULL;
    ast_expr e = {0};
    e.kind = AST_E_ATTR;
    e.name = name;
    e.loc = loc;
    return attr_of(c, base, name, &e);
}

/* base.a; e is the attribute expression (its location, and its name for messages) */
static sval *attr_of(sema_ctx *c, sval *base, const char *a, const ast_expr *e) {
    if (base->kind == SV_DICT && base->str && !strcmp(base->str, "@namespace")) {
        /* args.dim on what parser.parse_args() returned: the argument's default */
        for (int i = 0; i < base->nitems; i++)
            if (!strcmp(base->items[i]->str, a)) return base->vals[i];
        sema_err(c, e->loc, "the parsed arguments have no '%s'", a);
        return sv_err(c, e->loc);
    }
    if (py_has_method(base, a)) {
        sval *v = sv_new(c, SV_METHOD, e->loc);
        v->str = a;
        v->self = base;
        return v;
    }
    switch (base->kind) {
    case SV_MODULE: {
        tile_dtype dt = tile_dtype_parse(a);
        if (dt != TILE_DT_INVALID && strcmp(a, "float") && strcmp(a, "int") && strcmp(a, "bool")) {
            sval *v = sv_new(c, SV_DTYPE, e->loc);
            v->dt = dt;
            return v;
        }
        if (!strcmp(a, "float") && (!strcmp(base->str, "T") || strstr(base->str, "language"))) {
            /* T.float is TileLang's float32 dtype (the bare builtin float stays Python's) */
            sval *v = sv_new(c, SV_DTYPE, e->loc);
            v->dt = TILE_DT_F32;
            return v;
        }
        if (!strcmp(a, "tfloat32")) {
            /* tf32 is an f32 with a 10-bit mantissa in tensor-core inputs; Tile computes it as f32 */
            sval *v = sv_new(c, SV_DTYPE, e->loc);
            v->dt = TILE_DT_F32;
            return v;
        }
        if (!strcmp(base->str, "math") && (!strcmp(a, "ceil") || !strcmp(a, "floor") || !strcmp(a, "trunc"))) {
            /* Python's math.ceil/floor/trunc return an int (T.ceil and friends a float) */
            sval *v = sv_new(c, SV_BUILTIN, e->loc);
            v->str = tile_arena_printf(c->arena, "math.%s", a);
            return v;
        }
        if (!strcmp(a, "pi")) return sv_weak_float(c, 3.14159265358979323846, e->loc);
        if (!strcmp(a, "e")) return sv_weak_float(c, 2.71828182845904523536, e->loc);
        if (!strcmp(a, "inf")) return sv_weak_float(c, INFINITY, e->loc);
        /* T.Serial, T.Unroll: TileLang's upper-case aliases of T.serial, T.unroll */
        if (!strcmp(a, "Serial")) a = "serial";
        else if (!strcmp(a, "Unroll")) a = "unroll";
        if (find_builtin(a)) {
            sval *v = sv_new(c, SV_BUILTIN, e->loc);
            v->str = a;
            return v;
        }
        if (a[0] >= 'A' && a[0] <= 'Z') { /* T.GemmWarpPolicy, tilelang.PassConfigKey, ... */
            sval *o = sv_new(c, SV_OPAQUE, e->loc);
            o->str = a;
            return o;
        }
        sval *v = sv_new(c, SV_MODULE, e->loc);
        v->str = tile_arena_printf(c->arena, "%s.%s", base->str, a);
        v->display = tile_arena_printf(c->arena, "%s.%s", base->display ? base->display : base->str, a);
        return v;
    }
    case SV_OPAQUE: {
        sval *ht = py_host_tensor_attr(c, base, a, e->loc);
        if (ht) return ht;
        if (base->str && !strcmp(base->str, "@host-tensor")) {
            sema_err(c, e->loc, "a host tensor made by torch has no attribute '%s' Tile knows at compile time (it has shape, dtype, ndim, size(), dim())", a);
            return sv_err(c, e->loc);
        }
        sval *o = sv_new(c, SV_OPAQUE, e->loc);
        o->str = base->str && base->str[0] != '@' ? tile_arena_printf(c->arena, "%s.%s", base->str, a) : a;
        return o;
    }
    case SV_BUFFER:
        if (!strcmp(a, "shape")) return shape_tuple(c, base->buf, e->loc);
        if (!strcmp(a, "dtype")) {
            sval *v = sv_new(c, SV_DTYPE, e->loc);
            v->dt = base->buf->dtype;
            return v;
        }
        if (!strcmp(a, "ndim")) return sv_weak_int(c, base->buf->rank, e->loc);
        if (!strcmp(a, "data")) {
            /* the buffer's storage: T.Tensor(shape, dtype, buf.data) is a view of it */
            sval *d = sv_new(c, SV_OPAQUE, e->loc);
            d->str = "@data";
            d->buf = base->buf;
            return d;
        }
        sema_err(c, e->loc, "buffer '%s' has no attribute '%s' (it has shape, dtype, ndim, data)", base->buf->name, a);
        return sv_err(c, e->loc);
    case SV_EXPR:
    case SV_ACCESS:
        if (!strcmp(a, "dtype")) {
            ir_expr *x = materialize(c, base);
            sval *v = sv_new(c, SV_DTYPE, e->loc);
            v->dt = x ? x->dtype : TILE_DT_F32;
            return v;
        }
        if (!strcmp(a, "astype")) {
            sval *v = sv_new(c, SV_METHOD, e->loc);
            v->str = a;
            v->self = base;
            return v;
        }
        sema_err(c, e->loc, "a scalar has no attribute '%s' (it has dtype, astype)", a);
        return sv_err(c, e->loc);
    case SV_DTYPE:
        if (!strcmp(a, "bits")) return sv_weak_int(c, tile_dtype_bits(base->dt), e->loc);
        break;
    case SV_NONE: return base; /* error already reported */
    default: break;
    }
    sema_err(c, e->loc, "%s has no attribute '%s'", sv_describe(base), a);
    return sv_err(c, e->loc);
}

sval *sema_shape_tuple(sema_ctx *c, ir_buffer *b, tile_loc loc) { return shape_tuple(c, b, loc); }

/* ---------- subscripts ---------- */
static sval *lower_subscript(sema_ctx *c, sema_env *env, const ast_expr *e) {
    sval *base = lower_expr(c, env, e->value);
    const ast_expr *const *items = (const ast_expr *const *)e->items;
    int n = e->nitems;
    if (n == 1 && items[0]->kind == AST_E_TUPLE) {
        items = (const ast_expr *const *)items[0]->items;
        n = e->items[0]->nitems;
    }
    if (base->kind == SV_TUPLE) {
        if (n != 1 || items[0]->kind == AST_E_SLICE) {
            if (n == 1 && items[0]->kind == AST_E_SLICE) {
                int64_t lo = 0, hi = base->nitems;
                if (items[0]->lo && !as_const_int(c, lower_expr(c, env, items[0]->lo), &lo, "slice start")) return sv_err(c, e->loc);
                if (items[0]->hi && !as_const_int(c, lower_expr(c, env, items[0]->hi), &hi, "slice end")) return sv_err(c, e->loc);
                if (lo < 0) lo += base->nitems;
                if (hi < 0) hi += base->nitems;
                if (lo < 0) lo = 0;
                if (hi > base->nitems) hi = base->nitems;
                sval *t = sv_new(c, SV_TUPLE, e->loc);
                t->nitems = hi > lo ? (int)(hi - lo) : 0;
                t->items = TILE_NEW_ARRAY(c->arena, sval *, t->nitems ? t->nitems : 1);
                for (int i = 0; i < t->nitems; i++) t->items[i] = base->items[lo + i];
                return t;
            }
            sema_err(c, e->loc, "a tuple takes one index");
            return sv_err(c, e->loc);
        }
        int64_t k;
        if (!as_const_int(c, lower_expr(c, env, items[0]), &k, "tuple index")) return sv_err(c, e->loc);
        if (k < 0) k += base->nitems;
        if (k < 0 || k >= base->nitems) {
            sema_err(c, items[0]->loc, "tuple index %lld out of range (the tuple has %d items)", (long long)k, base->nitems);
            return sv_err(c, e->loc);
        }
        return base->items[k];
    }
    if (base->kind == SV_DICT) {
        if (n != 1) { sema_err(c, e->loc, "a dict takes one key"); return sv_err(c, e->loc); }
        sval *k = lower_expr(c, env, items[0]);
        sval *v = py_dict_get(base, k);
        if (!v) {
            if (!k->poison) sema_err(c, items[0]->loc, "key not in the dict");
            return sv_err(c, e->loc);
        }
        return v;
    }
    if (base->kind == SV_EXPR && base->e->kind == IR_E_VAR && base->e->var->kind == IR_VAR_LOCAL && n == 1) {
        /* v[0] on a T.alloc_var (TileLang's one-element variable buffer) */
        int64_t k;
        sval *ix = lower_expr(c, env, items[0]);
        if (sv_is_const(ix) && as_const_int(c, ix, &k, "an index") && k == 0) return base;
    }
    if (base->kind != SV_BUFFER) {
        if (base->kind != SV_NONE) sema_err(c, e->loc, "%s cannot be indexed", sv_describe(base));
        return sv_err(c, e->loc);
    }
    ir_buffer *b = base->buf;
    if (n != b->rank) {
        sema_err(c, e->loc, "buffer '%s' has %d dimension%s but is indexed with %d", b->name, b->rank, b->rank == 1 ? "" : "s", n);
        return sv_err(c, e->loc);
    }
    sv_access *acc = TILE_NEW(c->arena, sv_access);
    acc->buf = b;
    acc->n = n;
    acc->start = TILE_NEW_ARRAY(c->arena, ir_expr *, n ? n : 1);
    acc->extent = TILE_NEW_ARRAY(c->arena, ir_expr *, n ? n : 1);
    for (int d = 0; d < n; d++) {
        const ast_expr *it = items[d];
        if (it->kind == AST_E_SLICE) {
            acc->any_slice = true;
            ir_expr *lo = it->lo ? as_int_expr(c, lower_expr(c, env, it->lo), "slice start") : ir_const_int(c->mod, TILE_DT_I32, 0, it->loc);
            ir_expr *hi = it->hi ? as_int_expr(c, lower_expr(c, env, it->hi), "slice end") : b->shape[d];
            if (it->step) {
                int64_t st;
                if (!as_const_int(c, lower_expr(c, env, it->step), &st, "slice step")) return sv_err(c, e->loc);
                if (st != 1) { sema_err(c, it->step->loc, "strided slices are not supported (step %lld)", (long long)st); return sv_err(c, e->loc); }
            }
            if (!lo || !hi) return sv_err(c, e->loc);
            tile_dtype t = unify_int(lo->dtype, hi->dtype);
            lo = cast_to(c, lo, t);
            hi = cast_to(c, hi, t);
            ir_expr *ext = int_binary(c, IR_B_SUB, hi, lo, it->loc);
            int64_t k;
            if (ir_const_int_value(ext, &k) && k <= 0) {
                sema_err(c, it->loc, "empty slice of '%s' in dimension %d (extent %lld)", b->name, d, (long long)k);
                return sv_err(c, e->loc);
            }
            acc->start[d] = lo;
            acc->extent[d] = ext;
        } else {
            ir_expr *ix = as_int_expr(c, lower_expr(c, env, it), "an index");
            if (!ix) return sv_err(c, e->loc);
            acc->start[d] = ix;
            acc->extent[d] = NULL;
        }
    }
    if (!acc->any_slice && sema_view_base(c, b)) {
        /* an element of a view (T.reshape / T.view) is an element of its base buffer */
        acc->view = b;
        acc->view_idx = acc->start;
        acc->start = sema_view_index(c, b, acc->start, e->loc);
        acc->buf = b = sema_view_base(c, b);
        acc->n = b->rank;
        acc->extent = TILE_NEW_ARRAY(c->arena, ir_expr *, b->rank ? b->rank : 1);
    }
    sval *v = sv_new(c, SV_ACCESS, e->loc);
    v->acc = acc;
    v->buf = b;
    return v;
}

/* ---------- unary, boolean, conditional ---------- */
static sval *lower_unary(sema_ctx *c, sema_env *env, const ast_expr *e) {
    sval *a = lower_expr(c, env, e->lhs);
    if (a->poison) return a;
    if (a->kind == SV_EXPR && a->weak) {
        const ir_expr *x = a->e;
        bool fl = tile_dtype_is_float(x->dtype);
        switch (e->op) {
        case AST_OP_NEG: return fl ? sv_weak_float(c, -x->fval, e->loc) : sv_weak_int(c, -x->ival, e->loc);
        case AST_OP_POS: return fl ? sv_weak_float(c, x->fval, e->loc) : sv_weak_int(c, x->ival, e->loc);
        case AST_OP_NOT: return sv_weak_bool(c, fl ? x->fval == 0 : x->ival == 0, e->loc);
        case AST_OP_INVERT:
            if (fl) break;
            return sv_weak_int(c, ~x->ival, e->loc);
        default: break;
        }
        sema_err(c, e->loc, "operator '%s' is not defined for this constant", ast_op_str(e->op));
        return sv_err(c, e->loc);
    }
    if (e->op == AST_OP_NOT) {
        if (a->kind == SV_NONE) return sv_weak_bool(c, true, e->loc);
        ir_expr *x = to_bool(c, materialize(c, a));
        if (!x) return sv_err(c, e->loc);
        if (x->kind == IR_E_CONST) return sv_expr(c, ir_const_int(c->mod, TILE_DT_BOOL, !x->ival, e->loc));
        return sv_expr(c, ir_unary(c->mod, IR_U_NOT, x, e->loc));
    }
    ir_expr *x = materialize(c, a);
    if (!x) return sv_err(c, e->loc);
    tile_dtype t = promote_arith(x->dtype);
    if (t == TILE_DT_BOOL) t = TILE_DT_I32;
    x = cast_to(c, x, t);
    switch (e->op) {
    case AST_OP_POS: return sv_expr(c, x);
    case AST_OP_NEG:
        if (x->kind == IR_E_CONST)
            return sv_expr(c, tile_dtype_is_float(t) ? ir_const_float(c->mod, t, -x->fval, e->loc) : ir_const_int(c->mod, t, tile_wrap_int(t, -x->ival), e->loc));
        return sv_expr(c, ir_unary(c->mod, IR_U_NEG, x, e->loc));
    case AST_OP_INVERT:
        if (tile_dtype_is_float(t)) { sema_err(c, e->loc, "'~' needs an integer operand, got %s", tile_dtype_name(t)); return sv_err(c, e->loc); }
        if (x->kind == IR_E_CONST) return sv_expr(c, ir_const_int(c->mod, t, tile_wrap_int(t, ~x->ival), e->loc));
        return sv_expr(c, ir_unary(c->mod, IR_U_BITNOT, x, e->loc));
    default: break;
    }
    sema_err(c, e->loc, "unsupported unary operator '%s'", ast_op_str(e->op));
    return sv_err(c, e->loc);
}

static sval *lower_boolop(sema_ctx *c, sema_env *env, const ast_expr *e) {
    bool is_and = e->op == AST_OP_AND;
    ir_expr *acc = NULL;
    for (int i = 0; i < e->nitems; i++) {
        sval *v = lower_expr(c, env, e->items[i]);
        if (v->kind == SV_NONE && !acc) {
            if (is_and) return sv_weak_bool(c, false, e->loc);
            continue;
        }
        if (sv_is_const(v)) {
            bool t = tile_dtype_is_float(v->e->dtype) ? v->e->fval != 0 : v->e->ival != 0;
            if (is_and && !t) return acc ? sv_expr(c, ir_const_int(c->mod, TILE_DT_BOOL, 0, e->loc)) : sv_weak_bool(c, false, e->loc);
            if (!is_and && t) return acc ? sv_expr(c, ir_const_int(c->mod, TILE_DT_BOOL, 1, e->loc)) : sv_weak_bool(c, true, e->loc);
            continue; /* neutral element */
        }
        ir_expr *x = to_bool(c, materialize(c, v));
        if (!x) return sv_err(c, e->loc);
        acc = acc ? ir_binary(c->mod, is_and ? IR_B_AND : IR_B_OR, acc, x, e->loc) : x;
    }
    if (!acc) return sv_weak_bool(c, is_and, e->loc);
    return sv_expr(c, acc);
}

/* Python's comparison of two compile-time tuples (`version < (12, 8)`, `cc == (9, 0)`):
 * lexicographic; NULL where an element comparison is not known at compile time */
static sval *tuple_compare(sema_ctx *c, ast_op op, sval *a, sval *b, tile_loc loc) {
    if (op != AST_OP_EQ && op != AST_OP_NE && op != AST_OP_LT && op != AST_OP_LE && op != AST_OP_GT && op != AST_OP_GE) return NULL;
    int n = a->nitems < b->nitems ? a->nitems : b->nitems;
    for (int i = 0; i < n; i++) {
        sval *eq = binary_op(c, AST_OP_EQ, a->items[i], b->items[i], loc);
        if (!sv_is_const(eq)) return NULL;
        if (eq->e->ival) continue;
        if (op == AST_OP_EQ || op == AST_OP_NE) return sv_weak_bool(c, op == AST_OP_NE, loc);
        sval *r = binary_op(c, op, a->items[i], b->items[i], loc); /* the first difference decides */
        return sv_is_const(r) ? r : NULL;
    }
    int la = a->nitems, lb = b->nitems;
    bool r = op == AST_OP_EQ ? la == lb : op == AST_OP_NE ? la != lb : op == AST_OP_LT ? la < lb : op == AST_OP_LE ? la <= lb : op == AST_OP_GT ? la > lb : la >= lb;
    return sv_weak_bool(c, r, loc);
}

static sval *lower_compare(sema_ctx *c, sema_env *env, const ast_expr *e) {
    sval *left = lower_expr(c, env, e->lhs);
    sval *result = NULL;
    for (int i = 0; i < e->nitems; i++) {
        sval *right = lower_expr(c, env, e->items[i]);
        ast_op op = e->cmp_ops[i];
        sval *r = op == AST_OP_IN || op == AST_OP_NOT_IN ? py_contains(c, left, right, op == AST_OP_NOT_IN, e->loc) : NULL;
        if (!r && left->kind == SV_TUPLE && right->kind == SV_TUPLE) r = tuple_compare(c, op, left, right, e->loc);
        if (!r) r = binary_op(c, op, left, right, e->loc);
        if (!result) result = r;
        else {
            /* a < b < c  ==  (a < b) and (b < c) */
            if (sv_is_const(result) && sv_is_const(r)) result = sv_weak_bool(c, result->e->ival && r->e->ival, e->loc);
            else {
                ir_expr *x = to_bool(c, materialize(c, result)), *y = to_bool(c, materialize(c, r));
                if (!x || !y) return sv_err(c, e->loc);
                result = sv_expr(c, ir_binary(c->mod, IR_B_AND, x, y, e->loc));
            }
        }
        left = right;
    }
    return result ? result : sv_none(c, e->loc);
}

/* Common type of the two arms of a conditional. */
static bool unify_arms(sema_ctx *c, sval *a, sval *b, ir_expr **x, ir_expr **y) {
    if (a->kind == SV_EXPR && a->weak && !(b->kind == SV_EXPR && b->weak)) {
        *y = materialize(c, b);
        if (!*y) return false;
        tile_dtype t = promote_arith((*y)->dtype);
        if (tile_dtype_is_float(a->e->dtype) && !tile_dtype_is_float(t)) t = TILE_DT_F32;
        *x = weak_to(c, a, t);
        *y = cast_to(c, *y, t);
        return true;
    }
    if (b->kind == SV_EXPR && b->weak && !(a->kind == SV_EXPR && a->weak)) return unify_arms(c, b, a, y, x);
    *x = materialize(c, a);
    *y = materialize(c, b);
    if (!*x || !*y) return false;
    tile_dtype t = unify((*x)->dtype, (*y)->dtype, true);
    *x = cast_to(c, *x, t);
    *y = cast_to(c, *y, t);
    return true;
}

static sval *make_select(sema_ctx *c, sval *cond, sval *a, sval *b, tile_loc loc) {
    if (sv_is_const(cond)) return (tile_dtype_is_float(cond->e->dtype) ? cond->e->fval != 0 : cond->e->ival != 0) ? a : b;
    ir_expr *cv = to_bool(c, materialize(c, cond)), *x, *y;
    if (!cv || !unify_arms(c, a, b, &x, &y)) return sv_err(c, loc);
    return sv_expr(c, ir_select(c->mod, cv, x, y, loc));
}

static sval *lower_ifexp(sema_ctx *c, sema_env *env, const ast_expr *e) {
    sval *cond = lower_expr(c, env, e->cond);
    if (sv_is_const(cond) || cond->kind == SV_NONE || cond->kind == SV_DTYPE || cond->kind == SV_STRING) {
        bool t = cond->kind == SV_NONE ? false : cond->kind != SV_EXPR ? true
                 : tile_dtype_is_float(cond->e->dtype) ? cond->e->fval != 0 : cond->e->ival != 0;
        return lower_expr(c, env, t ? e->lhs : e->rhs);
    }
    sval *a = lower_expr(c, env, e->lhs);
    sval *b = lower_expr(c, env, e->rhs);
    return make_select(c, cond, a, b, e->loc);
}

/* ---------- generators: sum/max/min(elt for v in range(...)) ---------- */
bool lower_range_iter(sema_ctx *c, sema_env *env, const ast_expr *iter, ir_expr **lo, ir_expr **extent, ir_expr **step);

static sval *lower_generator_reduce(sema_ctx *c, sema_env *env, const char *fname, const ast_expr *gen, tile_loc loc) {
    if (!c->stmts) { sema_err(c, loc, "%s(... for ...) can only be used inside a kernel function", fname); return sv_err(c, loc); }
    const ast_comp *comp = gen->comp;
    if (!comp || comp->target->kind != AST_E_NAME) { sema_err(c, gen->loc, "the generator must have the form `expr for name in range(...)`"); return sv_err(c, loc); }
    ir_expr *lo, *ext, *step;
    if (!lower_range_iter(c, env, comp->iter, &lo, &ext, &step)) return sv_err(c, loc);
    ir_var *lv = ir_var_new(c->mod, c->fn, comp->target->name, IR_VAR_LOOP, TILE_DT_I32, comp->target->loc);
    sema_env *genv = env_new(c, env, env->func);
    ir_expr *iv = ir_var_ref(c->mod, lv, loc);
    ir_expr *val = step ? int_binary(c, IR_B_ADD, lo, int_binary(c, IR_B_MUL, iv, step, loc), loc) : iv;
    env_bind(c, genv, comp->target->name, sv_expr(c, val), 0);
    tile_vec *saved = c->stmts;
    tile_vec inner = {0};
    c->stmts = &inner;
    sval *elt = lower_expr(c, genv, gen->value);
    ir_expr *cond = NULL;
    for (int i = 0; i < comp->nconds; i++) {
        ir_expr *ci = to_bool(c, materialize(c, lower_expr(c, genv, comp->conds[i])));
        if (ci) cond = cond ? ir_binary(c->mod, IR_B_AND, cond, ci, loc) : ci;
    }
    ir_expr *x = materialize(c, elt);
    c->stmts = saved;
    if (!x) { tile_vec_free(&inner); return sv_err(c, loc); }
    tile_dtype t = promote_arith(x->dtype);
    if (t == TILE_DT_BOOL) t = TILE_DT_I32;
    x = cast_to(c, x, t);
    ir_var *acc = ir_var_new(c->mod, c->fn, tile_arena_printf(c->arena, "%s_acc%d", fname, c->tmp_counter++), IR_VAR_LOCAL, t, loc);
    bool is_sum = !strcmp(fname, "sum");
    ir_expr *init;
    if (is_sum) init = tile_dtype_is_float(t) ? ir_const_float(c->mod, t, 0, loc) : ir_const_int(c->mod, t, 0, loc);
    else if (tile_dtype_is_float(t)) init = ir_const_float(c->mod, t, !strcmp(fname, "max") ? -INFINITY : INFINITY, loc);
    else {
        int bits = tile_dtype_bits(t);
        bool s = tile_dtype_is_signed(t);
        int64_t mx = s ? (int64_t)((~(uint64_t)0) >> (65 - bits)) : (int64_t)((~(uint64_t)0) >> (64 - bits));
        int64_t mn = s ? -mx - 1 : 0;
        init = ir_const_int(c->mod, t, !strcmp(fname, "max") ? mn : mx, loc);
    }
    ir_stmt *a0 = ir_stmt_new(c->mod, IR_S_ASSIGN, loc);
    a0->var = acc;
    a0->value = init;
    emit(c, a0);
    ir_stmt *upd = ir_stmt_new(c->mod, IR_S_ASSIGN, loc);
    upd->var = acc;
    upd->value = ir_binary(c->mod, is_sum ? IR_B_ADD : !strcmp(fname, "max") ? IR_B_MAX : IR_B_MIN, ir_var_ref(c->mod, acc, loc), x, loc);
    ir_stmt *body_stmt = guard_stmt(c, cond, upd, loc);
    tile_vec_push(&inner, body_stmt);
    ir_stmt *loop = ir_stmt_new(c->mod, IR_S_FOR, loc);
    loop->var = lv;
    loop->lo = step ? ir_const_int(c->mod, TILE_DT_I32, 0, loc) : lo;
    loop->extent = ext;
    loop->loop_kind = IR_LOOP_SERIAL;
    loop->body = TILE_NEW_ARRAY(&c->mod->arena, ir_stmt *, 1);
    loop->nbody = 1;
    loop->body[0] = ir_seq(c->mod, (ir_stmt **)inner.items, inner.len, loc);
    tile_vec_free(&inner);
    emit(c, loop);
    return sv_expr(c, ir_var_ref(c->mod, acc, loc));
}

/* ---------- builtin calls ---------- */

static sval *kwarg(call_args *a, const char *name) {
    for (int i = 0; i < a->nkw; i++)
        if (!strcmp(a->kw[i].name, name)) return a->kwv[i];
    return NULL;
}

static bool need_args(sema_ctx *c, const char *fname, call_args *a, int lo, int hi, tile_loc loc) {
    if (a->npos < lo || a->npos > hi) {
        if (lo == hi) sema_err(c, loc, "%s() takes %d argument%s, got %d", fname, lo, lo == 1 ? "" : "s", a->npos);
        else sema_err(c, loc, "%s() takes %d to %d arguments, got %d", fname, lo, hi, a->npos);
        return false;
    }
    return true;
}

static ir_intrinsic math_intrinsic(const char *n) {
#define X(e, s, k) if (!strcmp(n, s)) return IR_I_##e;
    IR_INTRINSICS(X)
#undef X
    if (!strcmp(n, "fabs")) return IR_I_ABS;
    return IR_I_COUNT;
}

static double fold_math(ir_intrinsic fn, double x) {
    switch (fn) {
    case IR_I_EXP: return exp(x);
    case IR_I_EXP2: return exp2(x);
    case IR_I_LOG: return log(x);
    case IR_I_LOG2: return log2(x);
    case IR_I_SQRT: return sqrt(x);
    case IR_I_RSQRT: return 1.0 / sqrt(x);
    case IR_I_TANH: return tanh(x);
    case IR_I_ABS: return fabs(x);
    case IR_I_SIN: return sin(x);
    case IR_I_COS: return cos(x);
    case IR_I_FLOOR: return floor(x);
    case IR_I_CEIL: return ceil(x);
    case IR_I_ROUND: return nearbyint(x);
    case IR_I_TRUNC: return trunc(x);
    case IR_I_ERF: return erf(x);
    case IR_I_SIGMOID: return 1.0 / (1.0 + exp(-x));
    default: return NAN;
    }
}

static sval *math1(sema_ctx *c, ir_intrinsic fn, sval *a, tile_loc loc) {
    if (a->kind == SV_EXPR && a->weak && fn != IR_I_ISNAN && fn != IR_I_ISINF) {
        double x = const_as_double(a->e);
        if (fn == IR_I_ABS && !tile_dtype_is_float(a->e->dtype)) return sv_weak_int(c, a->e->ival < 0 ? -a->e->ival : a->e->ival, loc);
        return sv_weak_float(c, fold_math(fn, x), loc);
    }
    ir_expr *x = materialize(c, a);
    if (!x) return sv_err(c, loc);
    tile_dtype t = promote_arith(x->dtype);
    if (fn == IR_I_ABS && tile_dtype_is_int(t)) return sv_expr(c, ir_call(c->mod, fn, t, &x, 1, loc));
    if (!tile_dtype_is_float(t)) t = TILE_DT_F32;
    x = cast_to(c, x, t);
    tile_dtype rt = (fn == IR_I_ISNAN || fn == IR_I_ISINF) ? TILE_DT_BOOL : t;
    return sv_expr(c, ir_call(c->mod, fn, rt, &x, 1, loc));
}

/* The int operands of an f64 division made from ints ('/' on Python ints): each an int
 * cast to f64 or an f64 constant with an integral value; false if either is not. */
static bool int_of_f64(sema_ctx *c, ir_expr *a, ir_expr *b, ir_expr **p, ir_expr **q) {
    ir_expr *ops[2] = {a, b}, *out[2] = {NULL, NULL};
    tile_dtype t = TILE_DT_INVALID;
    for (int i = 0; i < 2; i++)
        if (ops[i]->kind == IR_E_CAST && tile_dtype_is_int(ops[i]->args[0]->dtype) && sema_is_py_int(c, ops[i]->args[0])) {
            out[i] = ops[i]->args[0];
            if (t == TILE_DT_INVALID) t = out[i]->dtype;
            else if (t != out[i]->dtype) return false;
        }
    if (t == TILE_DT_INVALID) return false;
    for (int i = 0; i < 2; i++) {
        if (out[i]) continue;
        double v = ops[i]->kind == IR_E_CONST ? ops[i]->fval : 0.5;
        if (v != floor(v) || v < -2147483648.0 || v > 2147483647.0) return false;
        out[i] = ir_const_int(c->mod, t, (int64_t)v, ops[i]->loc);
    }
    *p = out[0];
    *q = out[1];
    return true;
}

/* math.ceil / math.floor / math.trunc (Python): an int. A compile-time value folds; a
 * run-time one rounds in its float type and converts to i32, the type of sizes. */
static sval *py_math_round(sema_ctx *c, const char *name, call_args *a, tile_loc loc) {
    if (a->npos != 1 || a->nkw) { sema_err(c, loc, "math.%s takes one argument", name); return sv_err(c, loc); }
    ir_intrinsic fn = !strcmp(name, "ceil") ? IR_I_CEIL : !strcmp(name, "floor") ? IR_I_FLOOR : IR_I_TRUNC;
    sval *v = a->pos[0];
    if (v->kind == SV_EXPR && v->weak) {
        if (!tile_dtype_is_float(v->e->dtype)) return sv_weak_int(c, v->e->ival, loc);
        double r = fold_math(fn, v->e->fval);
        if (!(r >= -9.2e18 && r <= 9.2e18)) { sema_err(c, loc, "math.%s of %g is not a finite integer", name, v->e->fval); return sv_err(c, loc); }
        return sv_weak_int(c, (int64_t)r, loc);
    }
    ir_expr *x = materialize(c, v);
    if (!x) return sv_err(c, loc);
    if (!tile_dtype_is_float(x->dtype)) return sv_expr(c, x->dtype == TILE_DT_BOOL ? cast_to(c, x, TILE_DT_I32) : x);
    ir_expr *p = NULL, *q = NULL;
    if (x->kind == IR_E_BINARY && x->op == IR_B_DIV && x->dtype == TILE_DT_F64 && int_of_f64(c, x->args[0], x->args[1], &p, &q)) {
        /* of a true division of ints (math.ceil(n / block)): the exact integer form, so that
         * the result stays an integer size expression: floor(a/b) = a // b, ceil(a/b) =
         * -((-a) // b), trunc(a/b) = C division */
        if (fn == IR_I_FLOOR) return sv_expr(c, int_binary(c, IR_B_FLOORDIV, p, q, loc));
        if (fn == IR_I_TRUNC) return sv_expr(c, int_binary(c, IR_B_DIV, p, q, loc));
        ir_expr *zero = ir_const_int(c->mod, p->dtype, 0, loc);
        ir_expr *np = int_binary(c, IR_B_SUB, zero, p, loc);
        return sv_expr(c, int_binary(c, IR_B_SUB, zero, int_binary(c, IR_B_FLOORDIV, np, q, loc), loc));
    }
    tile_dtype t = promote_arith(x->dtype);
    x = cast_to(c, x, t);
    return sv_expr(c, cast_to(c, ir_call(c->mod, fn, t, &x, 1, loc), TILE_DT_I32));
}

static sval *minmax(sema_ctx *c, bool is_max, sval **items, int n, tile_loc loc) {
    sval *acc = items[0];
    for (int i = 1; i < n; i++) {
        sval *b = items[i];
        if (acc->kind == SV_EXPR && acc->weak && b->kind == SV_EXPR && b->weak) {
            sval *lt = fold_weak(c, AST_OP_LT, acc, b, loc);
            acc = (lt->e->ival != 0) == is_max ? b : acc;
            continue;
        }
        ir_expr *x, *y;
        if (!unify_arms(c, acc, b, &x, &y)) return sv_err(c, loc);
        if (x->dtype == TILE_DT_BOOL) { x = cast_to(c, x, TILE_DT_I32); y = cast_to(c, y, TILE_DT_I32); }
        acc = sv_expr(c, tile_dtype_is_float(x->dtype) ? ir_binary(c->mod, is_max ? IR_B_MAX : IR_B_MIN, x, y, loc)
                                                       : int_binary(c, is_max ? IR_B_MAX : IR_B_MIN, x, y, loc));
    }
    return acc;
}

/* value converted to dtype dt (a cast; constants fold) */
static sval *do_cast(sema_ctx *c, sval *v, tile_dtype dt, tile_loc loc) {
    if (dt == TILE_DT_INVALID) return sv_err(c, loc);
    ir_expr *x = (v->kind == SV_EXPR && v->weak) ? weak_to(c, v, dt) : materialize(c, v);
    if (!x) return sv_err(c, loc);
    return sv_expr(c, cast_to(c, x, dt));
}

static sval *lower_const_of(sema_ctx *c, sval *v, tile_dtype dt, tile_loc loc) {
    if (dt == TILE_DT_INVALID) return sv_err(c, loc);
    if (!sv_is_const(v)) { sema_err(c, loc, "T.const needs a constant value"); return sv_err(c, loc); }
    return sv_expr(c, cast_to(c, v->e, dt));
}

static sval *extreme_value(sema_ctx *c, tile_dtype dt, int which /* 0 inf, 1 max, 2 min */, tile_loc loc) {
    if (dt == TILE_DT_INVALID) return sv_err(c, loc);
    if (tile_dtype_is_float(dt)) {
        double v;
        switch (dt) {
        case TILE_DT_F16: v = 65504.0; break;
        case TILE_DT_BF16: v = 3.3895313892515355e38; break;
        case TILE_DT_F32: v = 3.4028234663852886e38; break;
        case TILE_DT_FP8_E4M3: v = 448.0; break;
        case TILE_DT_FP8_E5M2: v = 57344.0; break;
        case TILE_DT_FP4_E2M1: v = 6.0; break;
        default: v = 1.7976931348623157e308; break;
        }
        if (which == 0) {
            if (dt == TILE_DT_FP8_E4M3 || dt == TILE_DT_FP4_E2M1) { sema_err(c, loc, "%s has no infinity", tile_dtype_name(dt)); return sv_err(c, loc); }
            v = INFINITY;
        }
        if (which == 2) v = -v;
        tile_dtype ct = promote_arith(dt);
        return sv_expr(c, ir_const_float(c->mod, ct == TILE_DT_F64 ? TILE_DT_F64 : TILE_DT_F32, v, loc));
    }
    if (which == 0) { sema_err(c, loc, "integer type %s has no infinity", tile_dtype_name(dt)); return sv_err(c, loc); }
    int bits = tile_dtype_bits(dt);
    bool s = tile_dtype_is_signed(dt);
    int64_t mx = dt == TILE_DT_BOOL ? 1 : s ? (int64_t)((~(uint64_t)0) >> (65 - bits)) : (int64_t)((~(uint64_t)0) >> (64 - bits));
    int64_t mn = dt == TILE_DT_BOOL ? 0 : s ? -mx - 1 : 0;
    return sv_expr(c, ir_const_int(c->mod, dt, which == 1 ? mx : mn, loc));
}

static sval *int2(sema_ctx *c, ir_binop op, sval *a, sval *b, tile_loc loc, const char *what) {
    if (a->kind == SV_EXPR && a->weak && b->kind == SV_EXPR && b->weak) {
        ast_op aop = op == IR_B_FLOORDIV ? AST_OP_FLOORDIV : op == IR_B_FLOORMOD ? AST_OP_MOD : op == IR_B_SHL ? AST_OP_SHL
                   : op == IR_B_SHR ? AST_OP_SHR : op == IR_B_BITAND ? AST_OP_BITAND : op == IR_B_BITOR ? AST_OP_BITOR : AST_OP_BITXOR;
        if (op == IR_B_DIV) {
            if (b->e->ival == 0) { sema_err(c, loc, "division by zero in a constant expression"); return sv_err(c, loc); }
            return sv_weak_int(c, a->e->ival / b->e->ival, loc);
        }
        return fold_weak(c, aop, a, b, loc);
    }
    ir_expr *x, *y;
    if (!unify_arms(c, a, b, &x, &y)) return sv_err(c, loc);
    if (tile_dtype_is_float(x->dtype)) {
        if (op == IR_B_FLOORDIV || op == IR_B_FLOORMOD || op == IR_B_DIV) return sv_expr(c, ir_binary(c->mod, op, x, y, loc));
        sema_err(c, loc, "%s needs integer operands", what);
        return sv_err(c, loc);
    }
    if (x->dtype == TILE_DT_BOOL) { x = cast_to(c, x, TILE_DT_I32); y = cast_to(c, y, TILE_DT_I32); }
    return sv_expr(c, int_binary(c, op, x, y, loc));
}

static sval *call_builtin(sema_ctx *c, sema_env *env, const char *fname, const ast_expr *call, call_args *a) {
    tile_loc loc = call->loc;
    const builtin_info *bi = find_builtin(fname);
    if (!bi) { sema_err(c, loc, "unknown function '%s'", fname); return sv_err(c, loc); }
    switch (bi->kind) {
    case 'M': {
        if (!need_args(c, fname, a, 1, 1, loc)) return sv_err(c, loc);
        return math1(c, math_intrinsic(fname), a->pos[0], loc);
    }
    case 'L':
        if (!strcmp(fname, "range") && a->npos >= 1 && a->npos <= 3) {
            /* range(...) as a value (a comprehension, list(range(n))): a tuple of constants */
            int64_t r[3] = {0, 0, 1};
            bool ok = true;
            for (int i = 0; i < a->npos && ok; i++) ok = sv_is_const(a->pos[i]) && !tile_dtype_is_float(a->pos[i]->e->dtype);
            if (ok) {
                for (int i = 0; i < a->npos; i++) r[a->npos == 1 ? 1 : i] = a->pos[i]->e->ival;
                if (r[2] == 0) { sema_err(c, loc, "range() step must not be zero"); return sv_err(c, loc); }
                int64_t n = r[2] > 0 ? (r[1] - r[0] + r[2] - 1) / r[2] : (r[0] - r[1] - r[2] - 1) / -r[2];
                if (n < 0) n = 0;
                if (n > 65536) { sema_err(c, loc, "range() as a compile-time value is limited to 65536 items"); return sv_err(c, loc); }
                sval *t = sv_new(c, SV_TUPLE, loc);
                t->nitems = (int)n;
                t->items = TILE_NEW_ARRAY(c->arena, sval *, n ? n : 1);
                for (int64_t i = 0; i < n; i++) t->items[i] = sv_weak_int(c, r[0] + i * r[2], loc);
                return t;
            }
        }
        sema_err(c, loc, "%s(...) can only be used as %s", fname, !strcmp(fname, "Kernel") ? "`with T.Kernel(...) as ...:`" : !strcmp(fname, "ws") ? "`with T.ws(...):`" : !strcmp(fname, "sblock") ? "`with T.sblock(...):`" : "the iterable of a for loop");
        return sv_err(c, loc);
    case 'H':
        if (!strcmp(fname, "annotate_safe_value")) return sema_annotate_safe_value(c, a, loc);
        /* scheduling hints: no semantics; Tile's passes make these decisions themselves.
         * T.pdl_trigger / T.pdl_sync (programmatic dependent launch: let the next kernel start
         * early / wait for the previous one) are among them: Tile starts a kernel once the
         * one before it on the stream has finished */
        if (!strcmp(fname, "annotate_layout"))
            tile_log(TILE_LOG_INFO, "%s:%d: T.annotate_layout is accepted; the layout of each buffer is chosen by Tile's layout inference on every target",
                     loc.src ? loc.src->name : "?", loc.line);
        return sv_none(c, loc);
    case 'O': { /* a layout object: only meaningful as the argument of a hint */
        sval *o = sv_new(c, SV_OPAQUE, loc);
        o->str = fname;
        return o;
    }
    case 'P': return py_builtin(c, fname, a, loc);
    case 'T':
    case 'A': {
        bool handled = false;
        sval *r = lower_tile_call(c, env, fname, call, a->pos, a->npos, &handled);
        if (handled) return r;
        break;
    }
    default: break;
    }
    /* specials */
    {
        bool h = false;
        sval *r = simt_builtin(c, fname, a, loc, &h);
        if (h) return r;
    }
    if (!strcmp(fname, "abs")) {
        if (!need_args(c, fname, a, 1, 1, loc)) return sv_err(c, loc);
        return math1(c, IR_I_ABS, a->pos[0], loc);
    }
    if (!strcmp(fname, "max") || !strcmp(fname, "min")) {
        bool is_max = fname[1] == 'a';
        if (a->npos == 1 && a->pos[0]->kind == SV_TUPLE && a->pos[0]->nitems > 0) return minmax(c, is_max, a->pos[0]->items, a->pos[0]->nitems, loc);
        if (a->npos < 2) { sema_err(c, loc, "%s() needs at least two arguments (or a generator)", fname); return sv_err(c, loc); }
        return minmax(c, is_max, a->pos, a->npos, loc);
    }
    if (!strcmp(fname, "pow")) {
        if (!need_args(c, fname, a, 2, 2, loc)) return sv_err(c, loc);
        return binary_op(c, AST_OP_POW, a->pos[0], a->pos[1], loc);
    }
    if (!strcmp(fname, "isfinite")) {
        /* neither NaN nor an infinity */
        if (!need_args(c, fname, a, 1, 1, loc)) return sv_err(c, loc);
        sval *n = math1(c, IR_I_ISNAN, a->pos[0], loc), *i = math1(c, IR_I_ISINF, a->pos[0], loc);
        if (n->kind != SV_EXPR || i->kind != SV_EXPR) return sv_err(c, loc);
        return sv_expr(c, ir_unary(c->mod, IR_U_NOT, ir_binary(c->mod, IR_B_OR, n->e, i->e, loc), loc));
    }
    if (!strcmp(fname, "fma")) {
        if (!need_args(c, fname, a, 3, 3, loc)) return sv_err(c, loc);
        ir_expr *x[3];
        for (int i = 0; i < 3; i++) {
            x[i] = a->pos[i]->kind == SV_EXPR && a->pos[i]->weak ? weak_to(c, a->pos[i], TILE_DT_F32) : materialize(c, a->pos[i]);
            if (!x[i]) return sv_err(c, loc);
        }
        tile_dtype t = unify(unify(x[0]->dtype, x[1]->dtype, false), x[2]->dtype, false);
        if (!tile_dtype_is_float(t)) t = TILE_DT_F32;
        for (int i = 0; i < 3; i++) x[i] = cast_to(c, x[i], t);
        return sv_expr(c, ir_call(c->mod, IR_I_FMA, t, x, 3, loc));
    }
    if (!strcmp(fname, "if_then_else") || !strcmp(fname, "Select")) {
        if (!need_args(c, fname, a, 3, 3, loc)) return sv_err(c, loc);
        return make_select(c, a->pos[0], a->pos[1], a->pos[2], loc);
    }
    if (!strcmp(fname, "cast") || !strcmp(fname, "Cast") || !strcmp(fname, "reinterpret")) {
        if (!need_args(c, fname, a, 1, 2, loc)) return sv_err(c, loc);
        sval *v, *d;
        if (a->npos == 1) { v = a->pos[0]; d = kwarg(a, "dtype"); if (!d) { sema_err(c, loc, "%s() needs a dtype", fname); return sv_err(c, loc); } }
        else if (a->pos[0]->kind == SV_DTYPE || (a->pos[0]->kind == SV_STRING && tile_dtype_parse(a->pos[0]->str) != TILE_DT_INVALID)) { d = a->pos[0]; v = a->pos[1]; }
        else { v = a->pos[0]; d = a->pos[1]; }
        tile_dtype dt = as_dtype(c, d, "the target type");
        if (dt == TILE_DT_INVALID) return sv_err(c, loc);
        if (fname[0] != 'r') return do_cast(c, v, dt, loc);
        ir_expr *x = materialize(c, v);
        if (!x) return sv_err(c, loc);
        /* a sub-32-bit float value computes in f32 (T.cast(x, "float16") is the f16 rounding
         * widened back): its bits are those of the narrow value under the widening */
        if (tile_dtype_bits(x->dtype) != tile_dtype_bits(dt) && x->kind == IR_E_CAST && tile_dtype_is_float(x->dtype) &&
            tile_dtype_is_float(x->args[0]->dtype) && tile_dtype_bits(x->args[0]->dtype) == tile_dtype_bits(dt))
            x = x->args[0];
        else if (tile_dtype_bits(x->dtype) != tile_dtype_bits(dt) && x->kind == IR_E_VAR && sema_var_narrow(c, x->var) != TILE_DT_INVALID &&
                 tile_dtype_bits(sema_var_narrow(c, x->var)) == tile_dtype_bits(dt))
            x = cast_to(c, x, sema_var_narrow(c, x->var)); /* exact: the variable holds a value of that dtype */
        if (tile_dtype_bits(x->dtype) != tile_dtype_bits(dt)) {
            sema_err(c, loc, "reinterpret needs types of the same width: %s is %d bits, %s is %d", tile_dtype_name(x->dtype), tile_dtype_bits(x->dtype), tile_dtype_name(dt), tile_dtype_bits(dt));
            return sv_err(c, loc);
        }
        return sv_expr(c, ir_reinterpret(c->mod, dt, x, loc));
    }
    bool sym = !strcmp(fname, "symbolic") || !strcmp(fname, "dynamic");
    if ((!strcmp(fname, "const") || sym) && a->npos >= 1 && a->pos[0]->kind == SV_STRING && (sym || (a->npos == 1 && !kwarg(a, "dtype")))) {
        /* M, N, K = T.const("M, N, K") (also T.dynamic / T.symbolic, whose second argument is
         * the dtype of the size): symbolic sizes bound from the tensors' shapes */
        if (!c->fn) { sema_err(c, loc, "T.%s(\"%s\") can only be used inside a kernel or kernel factory", fname, a->pos[0]->str); return sv_err(c, loc); }
        tile_vec names = {0};
        const char *q = a->pos[0]->str;
        while (*q) {
            while (*q == ',' || *q == ' ' || *q == '\t') q++;
            const char *b = q;
            while (*q && *q != ',' && *q != ' ' && *q != '\t') q++;
            if (q > b) tile_vec_push(&names, sema_symbol(c, tile_arena_strndup(c->arena, b, (size_t)(q - b)), loc));
        }
        if (names.len == 0) { tile_vec_free(&names); sema_err(c, loc, "T.%s needs one or more names, e.g. T.%s(\"M, N\")", fname, fname); return sv_err(c, loc); }
        if (names.len == 1) { sval *v = names.items[0]; tile_vec_free(&names); return v; }
        sval *t = sv_new(c, SV_TUPLE, loc);
        t->nitems = names.len;
        t->items = (sval **)tile_vec_to_arena(&names, c->arena);
        return t;
    }
    if (!strcmp(fname, "const")) {
        if (!need_args(c, fname, a, 1, 2, loc)) return sv_err(c, loc);
        sval *d = a->npos > 1 ? a->pos[1] : kwarg(a, "dtype");
        tile_dtype dt = d ? as_dtype(c, d, "T.const dtype") : TILE_DT_I32;
        return lower_const_of(c, a->pos[0], dt, loc);
    }
    if (!strcmp(fname, "infinity") || !strcmp(fname, "max_value") || !strcmp(fname, "min_value")) {
        if (!need_args(c, fname, a, 1, 1, loc)) return sv_err(c, loc);
        return extreme_value(c, as_dtype(c, a->pos[0], "the dtype"), fname[0] == 'i' ? 0 : fname[1] == 'a' ? 1 : 2, loc);
    }
    if (!strcmp(fname, "float") || !strcmp(fname, "int") || !strcmp(fname, "bool")) {
        if (!need_args(c, fname, a, 1, 1, loc)) return sv_err(c, loc);
        sval *v = a->pos[0];
        if (v->kind == SV_EXPR && v->weak) {
            if (fname[0] == 'f') return sv_weak_float(c, const_as_double(v->e), loc);
            if (fname[0] == 'i') return sv_weak_int(c, tile_dtype_is_float(v->e->dtype) ? (int64_t)trunc(v->e->fval) : v->e->ival, loc);
            return sv_weak_bool(c, const_as_double(v->e) != 0, loc);
        }
        if (v->kind == SV_STRING && fname[0] == 'i') return sv_weak_int(c, strtoll(v->str, NULL, 0), loc);
        if (v->kind == SV_STRING && fname[0] == 'f') return sv_weak_float(c, strtod(v->str, NULL), loc);
        return do_cast(c, v, fname[0] == 'f' ? TILE_DT_F32 : fname[0] == 'i' ? TILE_DT_I32 : TILE_DT_BOOL, loc);
    }
    if (!strcmp(fname, "len")) {
        if (!need_args(c, fname, a, 1, 1, loc)) return sv_err(c, loc);
        if (a->pos[0]->kind == SV_TUPLE) return sv_weak_int(c, a->pos[0]->nitems, loc);
        if (a->pos[0]->kind == SV_BUFFER) return sv_weak_int(c, a->pos[0]->buf->rank ? 0 : 0, loc);
        sema_err(c, loc, "len() needs a tuple or list");
        return sv_err(c, loc);
    }
    if (!strcmp(fname, "sum")) {
        if ((a->npos == 1 || a->npos == 2) && a->pos[0]->kind == SV_TUPLE) {
            sval *acc = a->npos == 2 ? a->pos[1] : sv_weak_int(c, 0, loc);
            for (int i = 0; i < a->pos[0]->nitems; i++) acc = binary_op(c, AST_OP_ADD, acc, a->pos[0]->items[i], loc);
            return acc;
        }
        sema_err(c, loc, "sum() needs a generator (sum(x for k in range(K))) or a tuple");
        return sv_err(c, loc);
    }
    if (!strcmp(fname, "__ldg")) {
        /* T.__ldg(x[i]): a load through the read-only cache, the same value as x[i] */
        if (!need_args(c, fname, a, 1, 1, loc)) return sv_err(c, loc);
        if (a->pos[0]->kind != SV_ACCESS || a->pos[0]->acc->any_slice) {
            sema_err(c, loc, "T.__ldg takes one element access, e.g. T.__ldg(x[i])");
            return sv_err(c, loc);
        }
        return a->pos[0];
    }
    if (!strcmp(fname, "next_power_of_2")) {
        if (!need_args(c, fname, a, 1, 1, loc)) return sv_err(c, loc);
        int64_t x;
        if (!as_const_int(c, a->pos[0], &x, "the argument of next_power_of_2")) return sv_err(c, loc);
        int64_t r = 1;
        while (r < x && r < ((int64_t)1 << 62)) r <<= 1;
        return sv_weak_int(c, r, loc);
    }
    if (!strcmp(fname, "gcd") || !strcmp(fname, "lcm")) {
        if (a->npos < 1) { sema_err(c, loc, "%s() needs integers", fname); return sv_err(c, loc); }
        int64_t acc = fname[0] == 'g' ? 0 : 1;
        for (int i = 0; i < a->npos; i++) {
            int64_t x, p, q;
            if (!as_const_int(c, a->pos[i], &x, fname)) return sv_err(c, loc);
            x = x < 0 ? -x : x;
            p = acc, q = x;
            while (q) { int64_t t = p % q; p = q; q = t; }
            acc = fname[0] == 'g' ? p : (p ? acc / p * x : 0);
        }
        return sv_weak_int(c, acc, loc);
    }
    if (!strcmp(fname, "any_of") || !strcmp(fname, "all_of")) {
        if (!need_args(c, fname, a, 1, 1, loc)) return sv_err(c, loc);
        return sema_any_all_of(c, fname, a->pos[0], loc);
    }
    if (!strcmp(fname, "clamp")) {
        /* T.clamp(x, min_val, max_val): max(min(x, max_val), min_val); a None bound is absent */
        if (!need_args(c, fname, a, 1, 3, loc)) return sv_err(c, loc);
        sval *lo = a->npos > 1 ? a->pos[1] : kwarg(a, "min_val");
        sval *hi = a->npos > 2 ? a->pos[2] : kwarg(a, "max_val");
        sval *v = a->pos[0];
        if (hi && hi->kind != SV_NONE) { sval *p[2] = {v, hi}; v = minmax(c, false, p, 2, loc); }
        if (lo && lo->kind != SV_NONE) { sval *p[2] = {v, lo}; v = minmax(c, true, p, 2, loc); }
        return v;
    }
    if (!strcmp(fname, "align_up")) {
        /* T.align_up(x, a): x rounded up to a multiple of a, T.ceildiv(x, a) * a */
        if (!need_args(c, fname, a, 2, 2, loc)) return sv_err(c, loc);
        sval *cd = call_builtin(c, env, "ceildiv", call, a);
        return cd->poison ? cd : binary_op(c, AST_OP_MUL, cd, a->pos[1], loc);
    }
    if (!strcmp(fname, "ceildiv") || !strcmp(fname, "cdiv")) {
        if (!need_args(c, fname, a, 2, 2, loc)) return sv_err(c, loc);
        sval *x = a->pos[0], *y = a->pos[1];
        if (x->kind == SV_EXPR && x->weak && y->kind == SV_EXPR && y->weak && !tile_dtype_is_float(x->e->dtype) && !tile_dtype_is_float(y->e->dtype)) {
            if (y->e->ival == 0) { sema_err(c, loc, "T.ceildiv by zero"); return sv_err(c, loc); }
            return sv_weak_int(c, -floordiv64(-x->e->ival, y->e->ival), loc);
        }
        ir_expr *p, *q;
        if (!unify_arms(c, x, y, &p, &q)) return sv_err(c, loc);
        if (!tile_dtype_is_int(p->dtype)) { sema_err(c, loc, "T.ceildiv needs integers, got %s", tile_dtype_name(p->dtype)); return sv_err(c, loc); }
        return sv_expr(c, ceildiv_expr(c, p, q, loc));
    }
    if (!strcmp(fname, "floordiv") || !strcmp(fname, "floormod") || !strcmp(fname, "truncdiv") || !strcmp(fname, "truncmod") ||
        !strcmp(fname, "shift_left") || !strcmp(fname, "shift_right") || !strcmp(fname, "bitwise_and") ||
        !strcmp(fname, "bitwise_or") || !strcmp(fname, "bitwise_xor")) {
        if (!need_args(c, fname, a, 2, 2, loc)) return sv_err(c, loc);
        if (!strcmp(fname, "truncmod")) {
            /* a - truncdiv(a, b) * b */
            sval *q = int2(c, IR_B_DIV, a->pos[0], a->pos[1], loc, fname);
            return binary_op(c, AST_OP_SUB, a->pos[0], binary_op(c, AST_OP_MUL, q, a->pos[1], loc), loc);
        }
        ir_binop op = !strcmp(fname, "floordiv") ? IR_B_FLOORDIV : !strcmp(fname, "floormod") ? IR_B_FLOORMOD
                    : !strcmp(fname, "truncdiv") ? IR_B_DIV : !strcmp(fname, "shift_left") ? IR_B_SHL
                    : !strcmp(fname, "shift_right") ? IR_B_SHR : !strcmp(fname, "bitwise_and") ? IR_B_BITAND
                    : !strcmp(fname, "bitwise_or") ? IR_B_BITOR : IR_B_BITXOR;
        return int2(c, op, a->pos[0], a->pos[1], loc, fname);
    }
    if (!strcmp(fname, "bitwise_not")) {
        if (!need_args(c, fname, a, 1, 1, loc)) return sv_err(c, loc);
        ir_expr *x = as_int_expr(c, a->pos[0], "bitwise_not operand");
        return x ? sv_expr(c, ir_unary(c->mod, IR_U_BITNOT, x, loc)) : sv_none(c, loc);
    }
    if (!strcmp(fname, "symbolic") || !strcmp(fname, "dynamic")) {
        if (!need_args(c, fname, a, 1, 2, loc) || a->pos[0]->kind != SV_STRING) { sema_err(c, loc, "T.%s needs a name string", fname); return sv_err(c, loc); }
        if (!c->fn) { sema_err(c, loc, "T.%s can only be used inside a kernel or kernel factory", fname); return sv_err(c, loc); }
        return sema_symbol(c, a->pos[0]->str, loc);
    }
    sema_err(c, loc, "'%s' cannot be called here", fname);
    return sv_err(c, loc);
}

/* ---------- calls ---------- */
static bool eval_args(sema_ctx *c, sema_env *env, const ast_expr *call, call_args *a) {
    a->npos = 0;
    a->pos = TILE_NEW_ARRAY(c->arena, sval *, call->nitems + 1);
    for (int i = 0; i < call->nitems; i++) {
        const ast_expr *x = call->items[i];
        if (x->kind == AST_E_STARRED) {
            sval *t = lower_expr(c, env, x->value);
            if (t->kind != SV_TUPLE) { sema_err(c, x->loc, "*args needs a tuple or list"); return false; }
            sval **np = TILE_NEW_ARRAY(c->arena, sval *, call->nitems + t->nitems + 1);
            memcpy(np, a->pos, sizeof(sval *) * (size_t)a->npos);
            a->pos = np;
            for (int k = 0; k < t->nitems; k++) a->pos[a->npos++] = t->items[k];
            continue;
        }
        a->pos[a->npos++] = lower_expr(c, env, x);
    }
    bool splat = false;
    for (int i = 0; i < call->nkwargs; i++) splat |= call->kwargs[i].name == NULL;
    if (!splat) {
        a->kw = call->kwargs;
        a->nkw = call->nkwargs;
        a->kwv = TILE_NEW_ARRAY(c->arena, sval *, call->nkwargs + 1);
        for (int i = 0; i < call->nkwargs; i++) a->kwv[i] = lower_expr(c, env, call->kwargs[i].value);
        return true;
    }
    /* f(**d): the dict's string keys become keyword arguments */
    tile_vec kws = {0}, vals = {0};
    for (int i = 0; i < call->nkwargs; i++) {
        sval *v = lower_expr(c, env, call->kwargs[i].value);
        if (call->kwargs[i].name) {
            tile_vec_push(&kws, (void *)&call->kwargs[i]);
            tile_vec_push(&vals, v);
            continue;
        }
        if (v->kind != SV_DICT) {
            if (!v->poison) sema_err(c, call->kwargs[i].loc, "'**' needs a dict known at compile time, got %s", sv_describe(v));
            tile_vec_free(&kws);
            tile_vec_free(&vals);
            return false;
        }
        for (int k = 0; k < v->nitems; k++) {
            if (v->items[k]->kind != SV_STRING) { sema_err(c, call->kwargs[i].loc, "'**' needs a dict with string keys"); tile_vec_free(&kws); tile_vec_free(&vals); return false; }
            ast_keyword *kw = TILE_NEW(c->arena, ast_keyword);
            kw->loc = call->kwargs[i].loc;
            kw->name = v->items[k]->str;
            kw->value = call->kwargs[i].value;
            tile_vec_push(&kws, kw);
            tile_vec_push(&vals, v->vals[k]);
        }
    }
    ast_keyword *kw = TILE_NEW_ARRAY(c->arena, ast_keyword, kws.len + 1);
    for (int i = 0; i < kws.len; i++) kw[i] = *(ast_keyword *)kws.items[i];
    a->kw = kw;
    a->nkw = kws.len;
    a->kwv = (sval **)tile_vec_to_arena(&vals, c->arena);
    tile_vec_free(&kws);
    for (int i = 0; i < a->nkw; i++)
        for (int j = 0; j < i; j++)
            if (!strcmp(kw[i].name, kw[j].name)) { sema_err(c, kw[i].loc, "keyword argument '%s' given twice", kw[i].name); return false; }
    return true;
}

/* Bind the arguments of a call to the parameters of a def or lambda (Python's rules:
 * positional, then keyword, then defaults; *args gets the extra positional ones as a tuple,
 * **kwargs the extra keywords as a dict). */
static bool bind_params(sema_ctx *c, sema_fn *fn, sema_env *env, const char *fname, const ast_param *ps, int np, sval **args, int nargs,
                        const ast_keyword *kw, sval **kwvals, int nkw, tile_loc loc) {
    int star = -1, dstar = -1, npos_params = 0;
    for (int i = 0; i < np; i++) {
        if (ps[i].star == 1) star = i;
        else if (ps[i].star == 2) dstar = i;
        else if (!ps[i].kwonly && star < 0) npos_params++;
    }
    if (nargs > npos_params && star < 0) { sema_err(c, loc, "%s() takes %d positional argument%s, got %d", fname, npos_params, npos_params == 1 ? "" : "s", nargs); return false; }
    bool *used = TILE_NEW_ARRAY(c->arena, bool, nkw + 1);
    int ai = 0;
    for (int i = 0; i < np; i++) {
        const ast_param *p = &ps[i];
        if (p->star == 1) {
            int extra = nargs > ai ? nargs - ai : 0;
            sval *t = sv_new(c, SV_TUPLE, loc);
            t->nitems = extra;
            t->items = TILE_NEW_ARRAY(c->arena, sval *, extra ? extra : 1);
            for (int k = 0; k < extra; k++) t->items[k] = args[ai + k];
            ai += extra;
            env_bind(c, env, p->name, t, 0);
            continue;
        }
        if (p->star == 2) continue;
        sval *v = (!p->kwonly && star < 0 && ai < nargs) ? args[ai++] : NULL;
        for (int k = 0; k < nkw; k++)
            if (!strcmp(kw[k].name, p->name)) {
                if (v) { sema_err(c, kw[k].loc, "%s() got two values for argument '%s'", fname, p->name); return false; }
                v = kwvals[k];
                used[k] = true;
            }
        if (!v && p->dflt) v = lower_expr(c, fn->closure, p->dflt);
        if (!v) { sema_err(c, loc, "%s() is missing argument '%s'", fname, p->name); return false; }
        env_bind(c, env, p->name, v, 0);
    }
    sval *rest = NULL;
    if (dstar >= 0) {
        rest = sv_new(c, SV_DICT, loc);
        rest->items = TILE_NEW_ARRAY(c->arena, sval *, nkw + 1);
        rest->vals = TILE_NEW_ARRAY(c->arena, sval *, nkw + 1);
        env_bind(c, env, ps[dstar].name, rest, 0);
    }
    for (int k = 0; k < nkw; k++) {
        if (used[k]) continue;
        if (!rest) { sema_err(c, kw[k].loc, "%s() has no parameter named '%s'", fname, kw[k].name); return false; }
        sval *key = sv_new(c, SV_STRING, kw[k].loc);
        key->str = kw[k].name;
        rest->items[rest->nitems] = key;
        rest->vals[rest->nitems++] = kwvals[k];
    }
    return true;
}

/* Does a body return from inside an if (not only as its last statement)? */
static bool has_inner_return(const ast_block *b) {
    for (int i = 0; i < b->len; i++) {
        const ast_stmt *s = b->stmts[i];
        if (s->kind == AST_S_RETURN && i < b->len - 1) return true;
        if (s->kind == AST_S_IF && (has_inner_return(&s->body) || has_inner_return(&s->orelse))) return true;
        if (s->kind == AST_S_IF) {
            for (int k = 0; k < s->body.len; k++)
                if (s->body.stmts[k]->kind == AST_S_RETURN) return true;
            for (int k = 0; k < s->orelse.len; k++)
                if (s->orelse.stmts[k]->kind == AST_S_RETURN) return true;
        }
    }
    return false;
}

/* Inline a body whose returns sit in branches on compile-time conditions: only the taken
 * branch runs, and the first return reached gives the value. */
static void inline_returning_block(sema_ctx *c, sema_env *env, const ast_block *b, bool *done, sval **ret) {
    for (int i = 0; i < b->len && !*done; i++) {
        const ast_stmt *s = b->stmts[i];
        if (s->kind == AST_S_RETURN) {
            if (s->value) *ret = lower_expr(c, env, s->value);
            *done = true;
            return;
        }
        if (s->kind == AST_S_IF && (has_inner_return(&s->body) || has_inner_return(&s->orelse) ||
                                    (s->body.len && s->body.stmts[s->body.len - 1]->kind == AST_S_RETURN) ||
                                    (s->orelse.len && s->orelse.stmts[s->orelse.len - 1]->kind == AST_S_RETURN))) {
            sval *cv = lower_expr(c, env, s->cond);
            bool t;
            if (!py_truth(cv, &t)) {
                if (!cv->poison) sema_err(c, s->cond->loc, "a 'return' inside this 'if' needs a condition known at compile time");
                *done = true;
                *ret = sv_err(c, s->loc);
                return;
            }
            inline_returning_block(c, env, t ? &s->body : &s->orelse, done, ret);
            continue;
        }
        lower_stmt(c, env, s);
        if (tile_diags_full(c->diags)) { *done = true; return; }
    }
}

sval *inline_call(sema_ctx *c, sema_fn *fn, sval **args, int nargs, const ast_keyword *kw, sval **kwvals, int nkw, tile_loc loc) {
    const ast_stmt *def = fn->def;
    const char *fname = def ? def->name : "<lambda>";
    if (c->inline_depth >= 32) { sema_err(c, loc, "functions nested too deeply while inlining '%s' (recursion is not supported)", fname); return sv_err(c, loc); }
    sema_env *env = env_new(c, fn->closure, def ? def : fn->closure ? fn->closure->func : NULL);
    if (def) prescan_assignments(c, env, &def->body);
    const ast_param *ps = def ? def->params : fn->lambda->params;
    int np = def ? def->nparams : fn->lambda->nparams;
    if (!bind_params(c, fn, env, fname, ps, np, args, nargs, kw, kwvals, nkw, loc)) return sv_err(c, loc);
    c->inline_depth++;
    if (!def) {
        sval *r = lower_expr(c, env, fn->lambda->value);
        c->inline_depth--;
        return r;
    }
    if (has_inner_return(&def->body)) {
        /* returns inside branches: the conditions must be known at compile time */
        bool done = false;
        sval *ret = sv_none(c, loc);
        inline_returning_block(c, env, &def->body, &done, &ret);
        c->inline_depth--;
        return ret;
    }
    /* the body, except a final `return expr` */
    int n = def->body.len;
    const ast_stmt *last = n ? def->body.stmts[n - 1] : NULL;
    bool final_return = last && last->kind == AST_S_RETURN;
    ast_block body = def->body;
    if (final_return) body.len--;
    lower_block(c, env, &body);
    sval *ret = sv_none(c, loc);
    if (final_return && last->value) ret = lower_expr(c, env, last->value);
    c->inline_depth--;
    return ret;
}

/* Does a generator iterate over range(...) / T.serial(...) with one clause (a run-time loop),
 * rather than over a compile-time sequence (unrolled as a tuple)? */
static bool is_loop_generator(sema_ctx *c, sema_env *env, const ast_expr *gen) {
    const ast_comp *cl = gen->comp;
    if (!cl || cl->next || cl->target->kind != AST_E_NAME || cl->iter->kind != AST_E_CALL) return false;
    const ast_expr *f = cl->iter->value;
    const char *name = f->kind == AST_E_NAME ? f->name : f->kind == AST_E_ATTR ? f->name : NULL;
    if (!name || (strcmp(name, "range") && strcmp(name, "serial"))) return false;
    if (!c->stmts) return false; /* compile-time code: the sequence must be constant */
    (void)env;
    return true;
}

sval *call_value(sema_ctx *c, sema_env *env, sval *fv, const ast_expr *call) {
    tile_loc loc = call->loc;
    /* generator reductions take their argument unevaluated */
    if (fv->kind == SV_BUILTIN && call->nitems == 1 && call->items[0]->kind == AST_E_GENERATOR &&
        (!strcmp(fv->str, "sum") || !strcmp(fv->str, "max") || !strcmp(fv->str, "min")) && is_loop_generator(c, env, call->items[0]))
        return lower_generator_reduce(c, env, fv->str, call->items[0], loc);
    if (fv->kind == SV_NONE) {
        if (!fv->poison) sema_err(c, loc, "None is not callable");
        return sv_err(c, loc);
    }
    call_args a;
    if (!eval_args(c, env, call, &a)) return sv_err(c, loc);
    switch (fv->kind) {
    case SV_BUILTIN:
        if (!strncmp(fv->str, "math.", 5)) return py_math_round(c, fv->str + 5, &a, loc);
        return call_builtin(c, env, fv->str, call, &a);
    case SV_DTYPE:
        if (a.npos == 0 && !a.nkw) return sema_fresh_var(c, fv->dt, loc);
        if (a.npos != 1) { sema_err(c, loc, "%s(x) takes one argument", tile_dtype_name(fv->dt)); return sv_err(c, loc); }
        return do_cast(c, a.pos[0], fv->dt, loc);
    case SV_METHOD:
        if (!strcmp(fv->str, "astype")) {
            if (a.npos != 1) { sema_err(c, loc, "astype() takes one dtype"); return sv_err(c, loc); }
            return do_cast(c, fv->self, as_dtype(c, a.pos[0], "astype()"), loc);
        }
        if (py_has_method(fv->self, fv->str)) return py_method(c, fv->self, fv->str, &a, loc);
        break;
    case SV_FUNC: {
        const ast_stmt *d = fv->fn->def;
        for (int i = 0; d && i < d->ndecorators; i++) {
            const ast_expr *dec = d->decorators[i];
            const char *nm = dec->kind == AST_E_ATTR ? dec->name : dec->kind == AST_E_NAME ? dec->name : dec->kind == AST_E_CALL && dec->value->kind == AST_E_ATTR ? dec->value->name : "";
            if (!strcmp(nm, "prim_func") || !strcmp(nm, "tile_op") || !strcmp(nm, "kernel")) {
                sema_err(c, loc, "calling kernel '%s' from another kernel is not supported; use a helper function or @T.macro", d->name);
                return sv_err(c, loc);
            }
        }
        return inline_call(c, fv->fn, a.pos, a.npos, a.kw, a.kwv, a.nkw, loc);
    }
    case SV_OPAQUE:
        if (fv->str && !strcmp(fv->str + (strlen(fv->str) > 14 ? strlen(fv->str) - 14 : 0), "ArgumentParser")) return py_argparser(c, loc);
        if (fv->str && (!strcmp(fv->str, "Tensor") || !strcmp(fv->str, "Buffer"))) {
            /* T.Tensor(shape, dtype, buf.data): a view of buf's storage */
            sval *data = a.npos > 2 ? a.pos[2] : NULL;
            for (int i = 0; i < a.nkw; i++)
                if (!strcmp(a.kw[i].name, "data")) data = a.kwv[i];
            if (data && data->kind == SV_OPAQUE && data->str && !strcmp(data->str, "@data")) {
                sval *shape = a.npos > 0 ? a.pos[0] : NULL, *dt = a.npos > 1 ? a.pos[1] : NULL;
                for (int i = 0; i < a.nkw; i++) {
                    if (!strcmp(a.kw[i].name, "shape")) shape = a.kwv[i];
                    if (!strcmp(a.kw[i].name, "dtype")) dt = a.kwv[i];
                }
                sval *b = sv_new(c, SV_BUFFER, data->loc);
                b->buf = data->buf;
                return sema_make_view(c, b, shape, dt, "T.Tensor(..., buf.data)", loc);
            }
        }
        return fv;
    case SV_MODULE: {
        /* `from tilelang.layout import make_swizzled_layout`: the name is the builtin */
        const char *last = strrchr(fv->str, '.');
        last = last ? last + 1 : fv->str;
        if (find_builtin(last)) return call_builtin(c, env, last, call, &a);
        sval *ht = py_torch_call(c, fv->str, &a, loc);
        if (ht) return ht;
        if (!strcmp(fv->str, "itertools.product")) return py_product(c, &a, loc);
        sval *dq = py_device_query(c, fv->str, &a, loc);
        if (dq) return dq;
        if (!strcmp(last, "determine_fp8_type") || !strcmp(last, "determine_torch_fp8_type")) {
            /* tilelang.language.fp8: the fp8 dtype of the platform; Tile's targets use OCP fp8 */
            sval *f = a.npos ? a.pos[0] : a.nkw ? a.kwv[0] : NULL;
            bool e5 = f && f->kind == SV_STRING && !strcmp(f->str, "e5m2");
            if (f && (f->kind != SV_STRING || (!e5 && strcmp(f->str, "e4m3")))) {
                sema_err(c, loc, "%s: the format must be \"e4m3\" or \"e5m2\"", last);
                return sv_err(c, loc);
            }
            sval *v = sv_new(c, SV_DTYPE, loc);
            v->dt = e5 ? TILE_DT_FP8_E5M2 : TILE_DT_FP8_E4M3;
            return v;
        }
        if (!strcmp(last, "DataType") && a.npos == 1 && !a.nkw) {
            /* tvm's DataType("float16") (tilelang.DataType): the dtype, with .bits */
            tile_dtype dt = as_dtype(c, a.pos[0], "the argument of DataType");
            if (dt == TILE_DT_INVALID) return sv_err(c, loc);
            sval *v = sv_new(c, SV_DTYPE, loc);
            v->dt = dt;
            return v;
        }
        if (!strcmp(fv->str, "pytest.param")) {
            /* a parametrize case: its values (marks= and id= say nothing about them) */
            if (a.npos == 1) return a.pos[0];
            sval *t = sv_new(c, SV_TUPLE, loc);
            t->nitems = a.npos;
            t->items = a.pos;
            return t;
        }
        /* TileLang language functions Tile does not implement (yet): said so, by name */
        static const char *const later[] = {
            "warp_any", "warp_all",
            "warp_ballot", "alloc_descriptor",
            "sync_grid", "transpose",
            "warpgroup_arrive",
            "call_extern", "address_of", "access_ptr", "ptx_ldmatrix", "ptx_mma", "gemm_sp",
            "copy_async", "ldg", "stg", "rng_init", "rng_rand", "loop_break", "print",
            "make_tensor", "Tensor_ptr", "ptr", "region", "buffer_load", "buffer_store", "tvm_access_ptr", "tvm_mma_sync",
            "cp_async_barrier_noinc", "annotate_restrict_buffers", "gemm_v1", "gemm_v2", "tileop",
            "dp4a", "popcount", "clz", "extract_lane", "mask", "scan", NULL};
        for (int i = 0; later[i]; i++)
            if (!strcmp(later[i], last)) {
                sema_err(c, loc, "'%s' is not supported yet", fv->display ? fv->display : fv->str);
                return sv_err(c, loc);
            }
        if (strstr(last, "IntrinEmitter")) {
            /* emitters of one GPU's tensor-core instructions, below the tile level Tile
             * compiles from */
            sema_err(c, loc, "'%s' (a TileLang intrinsic emitter, which writes one GPU's MMA instructions directly) is not supported; "
                             "write the product with T.gemm", fv->display ? fv->display : fv->str);
            return sv_err(c, loc);
        }
        if (strstr(fv->str, "intrinsics")) {
            sema_err(c, loc, "'%s' (from TileLang's intrinsics modules: one GPU's instruction-level helpers) is not supported", last);
            return sv_err(c, loc);
        }
        const char *dot = strchr(fv->str, '.');
        static const char *const known_roots[] = {"T", "tilelang", "tvm", "tir", "torch", "math", "np", "numpy", "triton", "tl", "itertools",
                                                  "functools", "os", "sys", "pytest", "argparse", NULL};
        bool known_root = !dot;
        for (int i = 0; known_roots[i] && dot; i++)
            known_root |= strlen(known_roots[i]) == (size_t)(dot - fv->str) && !strncmp(fv->str, known_roots[i], (size_t)(dot - fv->str));
        if (!known_root) {
            /* `from quantize import f`: a module beside the file, whose code Tile does not read */
            sema_err(c, loc, "unknown function '%s': it comes from the module '%.*s', whose code Tile does not read (it compiles this file alone)",
                     last, (int)(strrchr(fv->str, '.') - fv->str), fv->str);
            return sv_err(c, loc);
        }
        sema_err(c, loc, "unknown function '%s'", fv->display ? fv->display : fv->str);
        return sv_err(c, loc);
    }
    default: break;
    }
    sema_err(c, loc, "%s is not callable", sv_describe(fv));
    return sv_err(c, loc);
}

/* ---------- the dispatcher ---------- */
sval *lower_expr(sema_ctx *c, sema_env *env, const ast_expr *e) {
    if (!e) return sv_err(c, (tile_loc){0});
    switch (e->kind) {
    case AST_E_NAME: return lower_name(c, env, e);
    case AST_E_INT: return sv_weak_int(c, e->ival, e->loc);
    case AST_E_FLOAT: return sv_weak_float(c, e->fval, e->loc);
    case AST_E_BOOL: return sv_weak_bool(c, e->ival != 0, e->loc);
    case AST_E_NONE: return sv_none(c, e->loc);
    case AST_E_STRING: {
        sval *v = sv_new(c, SV_STRING, e->loc);
        v->str = e->sval;
        return v;
    }
    case AST_E_TUPLE:
    case AST_E_LIST: {
        sval *t = sv_new(c, SV_TUPLE, e->loc);
        t->nitems = e->nitems;
        t->items = TILE_NEW_ARRAY(c->arena, sval *, e->nitems ? e->nitems : 1);
        for (int i = 0; i < e->nitems; i++) t->items[i] = lower_expr(c, env, e->items[i]);
        return t;
    }
    case AST_E_ATTR: return lower_attr(c, env, e);
    case AST_E_SUBSCRIPT: return lower_subscript(c, env, e);
    case AST_E_CALL: return call_value(c, env, lower_expr(c, env, e->value), e);
    case AST_E_BINOP: return binary_op(c, e->op, lower_expr(c, env, e->lhs), lower_expr(c, env, e->rhs), e->loc);
    case AST_E_UNARY: return lower_unary(c, env, e);
    case AST_E_COMPARE: return lower_compare(c, env, e);
    case AST_E_BOOLOP: return lower_boolop(c, env, e);
    case AST_E_IFEXP: return lower_ifexp(c, env, e);
    case AST_E_SLICE: sema_err(c, e->loc, "a slice can only appear inside [ ]"); return sv_err(c, e->loc);
    case AST_E_GENERATOR:
    case AST_E_DICT:
    case AST_E_SET:
    case AST_E_LISTCOMP:
    case AST_E_SETCOMP:
    case AST_E_DICTCOMP:
    case AST_E_LAMBDA:
    case AST_E_ELLIPSIS: return py_display(c, env, e);
    case AST_E_STARRED: sema_err(c, e->loc, "'*' unpacking is only allowed in call arguments"); return sv_err(c, e->loc);
    default: break;
    }
    sema_err(c, e->loc, "unsupported expression");
    return sv_err(c, e->loc);
}

