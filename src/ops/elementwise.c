/* elementwise.c — the unary, binary and ternary families, casts, clamp, where, fill, arange.
 *
 * Broadcasting: the operands' shapes are aligned on the right and broadcast to the output
 * shape (PyTorch's rules), dimensions of size 1 in the output dropped, and adjacent
 * dimensions in which every operand broadcasts the same way merged. At most three dimensions
 * remain for the kernel (gen/binary.tl, gen/ternary.tl: bit 2/1/0 of an operand's mask =
 * "size 1 in dimension 0/1/2"); more are walked here, one kernel call per leading index.
 * The shape class of a call is (masks, block bucket of the last dimension, dtypes).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops_int.h"

enum { MAXOPS = 3 };

typedef struct bplan {
    int rank;                     /* merged dimensions */
    int64_t shape[8];
    bool bc[MAXOPS][8];           /* operand i has size 1 in merged dimension d */
    int64_t stride[MAXOPS][8];    /* operand i's element stride there (0 when broadcast) */
} bplan;

/* Broadcast the operands' shapes; out_rank/out_shape receive the result's shape. */
static bool broadcast_shapes(top_ctx *c, const tile_tensor *const *ops, const char *const *names, int n, int *out_rank, int64_t *out_shape) {
    int r = 0;
    for (int i = 0; i < n; i++)
        if (ops[i]->rank > r) r = ops[i]->rank;
    for (int d = 0; d < r; d++) out_shape[d] = 1;
    for (int i = 0; i < n; i++) {
        const tile_tensor *t = ops[i];
        for (int d = 0; d < t->rank; d++) {
            int od = r - t->rank + d;
            int64_t s = t->shape[d];
            if (s == out_shape[od] || s == 1) continue;
            if (out_shape[od] == 1) { out_shape[od] = s; continue; }
            /* name the later operand that disagrees with the shape so far */
            char a[128], b[128];
            top_shape_str(a, sizeof a, t->rank, t->shape);
            top_shape_str(b, sizeof b, r, out_shape);
            return top_fail(c, TILE_ERR_USER, "%s: shape %s cannot be broadcast to %s (dimension %d: %lld vs %lld)", names[i], a, b,
                            d - t->rank, (long long)s, (long long)out_shape[od]);
        }
    }
    *out_rank = r;
    return true;
}

static void make_plan(bplan *p, const tile_tensor *const *ops, int n, int r, const int64_t *oshape) {
    memset(p, 0, sizeof *p);
    /* per output dimension: the broadcast flags */
    for (int d = 0; d < r; d++) {
        if (oshape[d] == 1) continue;
        bool f[MAXOPS];
        for (int i = 0; i < n; i++) {
            int id = d - (r - ops[i]->rank);
            f[i] = id < 0 || ops[i]->shape[id] == 1;
        }
        bool same = p->rank > 0;
        for (int i = 0; same && i < n; i++) same = p->bc[i][p->rank - 1] == f[i];
        if (same) p->shape[p->rank - 1] *= oshape[d];
        else {
            p->shape[p->rank] = oshape[d];
            for (int i = 0; i < n; i++) p->bc[i][p->rank] = f[i];
            p->rank++;
        }
    }
    /* strides over the merged dims */
    for (int i = 0; i < n; i++) {
        int64_t s = 1;
        for (int d = p->rank - 1; d >= 0; d--) {
            p->stride[i][d] = p->bc[i][d] ? 0 : s;
            if (!p->bc[i][d]) s *= p->shape[d];
        }
    }
}

static int64_t block_for(int64_t n) { return n <= 64 ? 64 : n <= 256 ? 256 : 1024; }

/* Run a broadcast kernel: ops[0..n) operands (already of the dtypes the kernel was compiled
 * for), out contiguous with the broadcast shape; `mk` compiles the kernel for the masks. */
typedef bool (*bkernel_fn)(top_ctx *c, void *ctx, const unsigned *masks, int64_t block, top_kernel **k);

static bool run_broadcast(top_ctx *c, const tile_tensor *const *ops, int n, tile_tensor *out, int orank, const int64_t *oshape,
                          bkernel_fn mk, void *mkctx, const double *scalars, int nscalars) {
    bplan p;
    make_plan(&p, ops, n, orank, oshape);
    int64_t shape3[3] = {1, 1, 1};
    int lead = p.rank > 3 ? p.rank - 3 : 0;
    int kr = p.rank - lead; /* dims in the kernel (<= 3) */
    unsigned masks[MAXOPS] = {0};
    for (int j = 0; j < kr; j++) {
        int d = lead + j, kd = 3 - kr + j;
        shape3[kd] = p.shape[d];
        for (int i = 0; i < n; i++)
            if (p.bc[i][d]) masks[i] |= 4u >> kd;
    }
    top_kernel *k;
    if (!mk(c, mkctx, masks, block_for(shape3[2]), &k)) return false;
    int64_t ostride[8];
    top_strides(p.rank, p.shape, ostride);
    int64_t idx[8] = {0};
    for (;;) {
        tile_tensor prm[MAXOPS + 1 + 4];
        memset(prm, 0, sizeof prm);
        int64_t ooff = 0;
        for (int d = 0; d < lead; d++) ooff += idx[d] * ostride[d];
        for (int i = 0; i < n; i++) {
            int64_t off = 0;
            for (int d = 0; d < lead; d++) off += idx[d] * p.stride[i][d];
            int64_t s[3];
            for (int kd = 0; kd < 3; kd++) s[kd] = masks[i] & (4u >> kd) ? 1 : shape3[kd];
            prm[i] = top_view(ops[i], 3, s);
            prm[i].data = top_elem_ptr(ops[i], off);
        }
        prm[n] = top_view(out, 3, shape3);
        prm[n].data = top_elem_ptr(out, ooff);
        double sc[MAXOPS + 1 + 4] = {0};
        for (int s = 0; s < nscalars; s++) sc[n + 1 + s] = scalars[s];
        if (!top_kernel_run(c, k, prm, n + 1 + nscalars, sc)) return false;
        int d = lead - 1;
        while (d >= 0 && ++idx[d] == p.shape[d]) idx[d--] = 0;
        if (d < 0) return true;
    }
}

/* ---------- unary ---------- */
static bool is_intb(tile_dtype t) { return t == TILE_DT_BOOL || tile_dtype_is_int(t); }

static tile_status unary_impl(const char *target, const char *opname, const tile_tensor *x, const double *args, int nargs, const tile_op_scalar *lo,
                              const tile_op_scalar *hi, tile_tensor *out, char **error) {
    top_ctx c;
    const top_op *op = top_find_family(opname, TOPF_UNARY);
    if (!op && top_find(opname)) {
        top_begin(&c, opname, NULL, target);
        c.op = opname;
        top_fail(&c, TILE_ERR_USER, "op: '%s' is not a unary elementwise operator", opname);
        return top_end(&c, error);
    }
    if (!top_begin(&c, opname, op, target)) return top_end(&c, error);
    if (!top_check_tensor(&c, "x", x) || !top_check_dtype(&c, "x", x, op->dtypes)) return top_end(&c, error);
    if (op->rule != TOPR_CLAMP && nargs != op->nargs) {
        top_fail(&c, TILE_ERR_USER, "args: expected %d scalar argument%s, got %d", op->nargs, op->nargs == 1 ? "" : "s", nargs);
        return top_end(&c, error);
    }
    tile_dtype rt = x->dtype;
    if (op->rule == TOPR_FLOAT && is_intb(rt)) rt = TILE_DT_F32;
    if (op->rule == TOPR_BOOL) rt = TILE_DT_BOOL;
    if (op->rule == TOPR_CLAMP) {
        top_rt r;
        top_rt_init(&r);
        top_rt_tensor(&r, x);
        if (lo) top_rt_scalar(&r, *lo);
        if (hi) top_rt_scalar(&r, *hi);
        rt = top_rt_result(&r);
    }
    tile_dtype cdt = op->rule == TOPR_BOOL ? top_compute_dtype(x->dtype) : top_compute_dtype(rt);
    if (op->rule == TOPR_BOOL && is_intb(x->dtype)) cdt = x->dtype == TILE_DT_BOOL ? TILE_DT_BOOL : TILE_DT_I64;
    if (!top_prepare_out(&c, "out", out, rt, x->rank, x->shape)) return top_end(&c, error);
    int64_t n = top_numel(x);
    if (n == 0) return top_end(&c, error);
    top_defs d;
    top_defs_init(&d);
    top_def_int(&d, "block", block_for(n));
    top_def_dt(&d, "x_dtype", x->dtype);
    top_def_dt(&d, "y_dtype", rt);
    top_def_dt(&d, "c_dtype", cdt);
    top_def_int(&d, "c_int", is_intb(cdt));
    top_def_int(&d, "f0", lo != NULL);
    top_def_int(&d, "f1", hi != NULL);
    top_kernel *k;
    if (!top_kernel_get(&c, op->src, op->factory, &d, &k)) return top_end(&c, error);
    tile_tensor p[5] = {top_view1(x), top_view1(out)};
    double sc[5] = {0};
    for (int i = 0; i < nargs && i < 3; i++) sc[2 + i] = args[i];
    if (lo) sc[2] = is_intb(cdt) ? (double)lo->i : lo->f;
    if (hi) sc[3] = is_intb(cdt) ? (double)hi->i : hi->f;
    top_kernel_run(&c, k, p, 5, sc);
    return top_end(&c, error);
}

tile_status tile_op_unary(const char *target, const char *op, const tile_tensor *x, tile_tensor *out, char **error) {
    return unary_impl(target, op, x, NULL, 0, NULL, NULL, out, error);
}

tile_status tile_op_unary_args(const char *target, const char *op, const tile_tensor *x, const double *args, int nargs, tile_tensor *out,
                               char **error) {
    return unary_impl(target, op, x, args, nargs, NULL, NULL, out, error);
}

tile_status tile_op_clamp(const char *target, const tile_tensor *x, const tile_op_scalar *min, const tile_op_scalar *max, tile_tensor *out,
                          char **error) {
    if (!min && !max) {
        top_ctx c;
        top_begin(&c, "clamp", top_find("clamp"), target);
        top_fail(&c, TILE_ERR_USER, "min, max: at least one bound must be given");
        return top_end(&c, error);
    }
    return unary_impl(target, "clamp", x, NULL, 0, min, max, out, error);
}

/* ---------- binary ---------- */
typedef struct bctx {
    const top_op *op;
    tile_dtype dt[MAXOPS], odt, cdt;
    int f0;
} bctx;

static bool mk_binary(top_ctx *c, void *vctx, const unsigned *masks, int64_t block, top_kernel **k) {
    bctx *b = vctx;
    top_defs d;
    top_defs_init(&d);
    top_def_int(&d, "am", masks[0]);
    top_def_int(&d, "bm", masks[1]);
    top_def_int(&d, "block", block);
    top_def_dt(&d, "a_dtype", b->dt[0]);
    top_def_dt(&d, "b_dtype", b->dt[1]);
    top_def_dt(&d, "o_dtype", b->odt);
    top_def_dt(&d, "c_dtype", b->cdt);
    top_def_int(&d, "c_int", is_intb(b->cdt));
    top_def_int(&d, "f0", b->f0);
    return top_kernel_get(c, b->op->src, b->op->factory, &d, k);
}

/* The result and compute dtypes of a binary operator from the promoted dtype r. */
static bool binary_types(top_ctx *c, const top_op *op, tile_dtype r, tile_dtype *odt, tile_dtype *cdt) {
    if (r == TILE_DT_INVALID) return top_fail(c, TILE_ERR_USER, "a, b: these dtypes have no common dtype");
    switch (op->rule) {
    case TOPR_FLOAT:
        if (is_intb(r)) r = TILE_DT_F32;
        *odt = r;
        *cdt = top_compute_dtype(r);
        return true;
    case TOPR_CMP:
    case TOPR_LOGICAL:
        *odt = TILE_DT_BOOL;
        *cdt = top_compute_dtype(r);
        return true;
    case TOPR_BITWISE:
        if (!is_intb(r)) return top_fail(c, TILE_ERR_USER, "a, b: the operands promote to %s; bitwise operators need integers or bool", tile_dtype_name(r));
        *odt = *cdt = r;
        return true;
    default:
        if (r == TILE_DT_BOOL && !(op->dtypes & TOPD_BOOL))
            return top_fail(c, TILE_ERR_USER, "a, b: the operands are bool, which %s does not take (for bool use logical_xor / logical_and)", op->name);
        *odt = r;
        *cdt = top_compute_dtype(r);
        return true;
    }
}

/* a, b already checked; r = promoted dtype; alpha (may be NULL) */
static bool binary_run(top_ctx *c, const top_op *op, const tile_tensor *a, const tile_tensor *b, tile_dtype r, const tile_op_scalar *alpha,
                       tile_tensor *out) {
    bctx bc = {op, {a->dtype, b->dtype}, 0, 0, 0};
    if (!binary_types(c, op, r, &bc.odt, &bc.cdt)) return false;
    double av = 1;
    if (alpha) {
        if (is_intb(bc.cdt) && alpha->kind == TILE_DT_F64)
            return top_fail(c, TILE_ERR_USER, "alpha: must not be a floating point number for integer operands (they are %s)", tile_dtype_name(bc.cdt));
        if (bc.cdt == TILE_DT_BOOL && alpha->kind != TILE_DT_BOOL)
            return top_fail(c, TILE_ERR_USER, "alpha: must be a bool for bool operands");
        av = alpha->kind == TILE_DT_F64 ? alpha->f : (double)alpha->i;
        bc.f0 = av != 1;
    }
    const tile_tensor *ops[2] = {a, b};
    const char *names[2] = {"a", "b"};
    int orank;
    int64_t oshape[8];
    if (!broadcast_shapes(c, ops, names, 2, &orank, oshape)) return false;
    if (!top_prepare_out(c, "out", out, bc.odt, orank, oshape)) return false;
    int64_t n = 1;
    for (int d = 0; d < orank; d++) n *= oshape[d];
    if (n == 0) return true;
    return run_broadcast(c, ops, 2, out, orank, oshape, mk_binary, &bc, &av, 1);
}

static const top_op *binary_op(top_ctx *c, const char *opname, const char *target) {
    const top_op *op = top_find_family(opname, TOPF_BINARY);
    if (!op) {
        top_begin(c, opname, NULL, target);
        c->op = opname ? opname : "op";
        if (top_find(opname)) top_fail(c, TILE_ERR_USER, "op: '%s' is not a binary elementwise operator", opname);
        return NULL;
    }
    return top_begin(c, opname, op, target) ? op : NULL;
}

static tile_status binary_entry(const char *target, const char *opname, const tile_tensor *a, const tile_tensor *b, const tile_op_scalar *alpha,
                                tile_tensor *out, char **error) {
    top_ctx c;
    const top_op *op = binary_op(&c, opname, target);
    if (!op) return top_end(&c, error);
    if (!top_check_tensor(&c, "a", a) || !top_check_tensor(&c, "b", b) || !top_check_dtype(&c, "a", a, op->dtypes | TOPD_ALL) ||
        !top_check_dtype(&c, "b", b, op->dtypes | TOPD_ALL))
        return top_end(&c, error);
    top_rt r;
    top_rt_init(&r);
    top_rt_tensor(&r, a);
    top_rt_tensor(&r, b);
    binary_run(&c, op, a, b, top_rt_result(&r), alpha, out);
    return top_end(&c, error);
}

tile_status tile_op_binary(const char *target, const char *op, const tile_tensor *a, const tile_tensor *b, tile_tensor *out, char **error) {
    return binary_entry(target, op, a, b, NULL, out, error);
}

tile_status tile_op_add(const char *target, const tile_tensor *a, const tile_tensor *b, tile_op_scalar alpha, tile_tensor *out, char **error) {
    return binary_entry(target, "add", a, b, &alpha, out, error);
}

tile_status tile_op_sub(const char *target, const tile_tensor *a, const tile_tensor *b, tile_op_scalar alpha, tile_tensor *out, char **error) {
    return binary_entry(target, "sub", a, b, &alpha, out, error);
}

tile_status tile_op_binary_scalar(const char *target, const char *opname, const tile_tensor *a, tile_op_scalar s, int scalar_first,
                                  tile_tensor *out, char **error) {
    top_ctx c;
    const top_op *op = binary_op(&c, opname, target);
    if (!op) return top_end(&c, error);
    if (!top_check_tensor(&c, "a", a) || !top_check_dtype(&c, "a", a, TOPD_ALL)) return top_end(&c, error);
    if (s.kind != TILE_DT_BOOL && s.kind != TILE_DT_I64 && s.kind != TILE_DT_F64) {
        top_fail(&c, TILE_ERR_USER, "s: the scalar's kind must be TILE_DT_BOOL, TILE_DT_I64 or TILE_DT_F64");
        return top_end(&c, error);
    }
    top_rt r;
    top_rt_init(&r);
    top_rt_tensor(&r, a);
    top_rt_scalar(&r, s);
    tile_dtype rt = top_rt_result(&r), odt, cdt;
    if (!binary_types(&c, op, rt, &odt, &cdt)) return top_end(&c, error);
    if (!strcmp(op->name, "pow") && is_intb(cdt) && s.kind != TILE_DT_F64 && s.i < 0 && !scalar_first) {
        top_fail(&c, TILE_ERR_USER, "s: integers to negative integer powers are not allowed");
        return top_end(&c, error);
    }
    /* the scalar becomes a zero-dim tensor of the compute dtype (what PyTorch's kernels read
     * it as: an f16 tensor times 0.1 multiplies by 0.1 in f32, not by 0.1 rounded to f16) */
    tile_dtype sdt = cdt;
    if (op->rule == TOPR_LOGICAL) sdt = s.kind == TILE_DT_F64 ? TILE_DT_F64 : TILE_DT_I64;
    uint64_t buf[2] = {0};
    if (s.kind == TILE_DT_F64 && !is_intb(sdt)) tile_store_f(sdt, buf, 0, s.f);
    else if (s.kind == TILE_DT_F64) tile_store_f(sdt, buf, 0, s.f);
    else tile_store_i(sdt, buf, 0, s.i);
    tile_tensor st = {buf, sdt, 0, {0}};
    if (!top_stage_scalar(&c, &st, s)) return top_end(&c, error);
    if (scalar_first) binary_run(&c, op, &st, a, rt, NULL, out);
    else binary_run(&c, op, a, &st, rt, NULL, out);
    return top_end(&c, error);
}

bool top_binary_into(top_ctx *c, const char *opname, const tile_tensor *a, const tile_tensor *b, tile_tensor *out) {
    const top_op *op = top_find_family(opname, TOPF_BINARY);
    top_rt r;
    top_rt_init(&r);
    top_rt_tensor(&r, a);
    top_rt_tensor(&r, b);
    return binary_run(c, op, a, b, top_rt_result(&r), NULL, out);
}

/* ---------- ternary: where, clamp with tensor bounds ---------- */
typedef struct tctx {
    const top_op *op;
    tile_dtype dt[3], odt, cdt;
    int f0, f1;
} tctx;

static bool mk_ternary(top_ctx *c, void *vctx, const unsigned *masks, int64_t block, top_kernel **k) {
    tctx *t = vctx;
    top_defs d;
    top_defs_init(&d);
    top_def_int(&d, "xm", masks[0]);
    top_def_int(&d, "am", masks[1]);
    top_def_int(&d, "bm", masks[2]);
    top_def_int(&d, "block", block);
    top_def_dt(&d, "x_dtype", t->dt[0]);
    top_def_dt(&d, "a_dtype", t->dt[1]);
    top_def_dt(&d, "b_dtype", t->dt[2]);
    top_def_dt(&d, "o_dtype", t->odt);
    top_def_dt(&d, "c_dtype", t->cdt);
    top_def_int(&d, "c_int", is_intb(t->cdt));
    top_def_int(&d, "f0", t->f0);
    top_def_int(&d, "f1", t->f1);
    return top_kernel_get(c, t->op->src, t->op->factory, &d, k);
}

static bool ternary_run(top_ctx *c, tctx *t, const tile_tensor *x, const tile_tensor *a, const tile_tensor *b, const char *const *names,
                        tile_tensor *out) {
    const tile_tensor *ops[3] = {x, a, b};
    int orank;
    int64_t oshape[8];
    if (!broadcast_shapes(c, ops, names, 3, &orank, oshape)) return false;
    if (!top_prepare_out(c, "out", out, t->odt, orank, oshape)) return false;
    int64_t n = 1;
    for (int d = 0; d < orank; d++) n *= oshape[d];
    if (n == 0) return true;
    return run_broadcast(c, ops, 3, out, orank, oshape, mk_ternary, t, NULL, 0);
}

tile_status tile_op_where(const char *target, const tile_tensor *cond, const tile_tensor *a, const tile_tensor *b, tile_tensor *out, char **error) {
    top_ctx c;
    const top_op *op = top_find("where");
    if (!top_begin(&c, "where", op, target)) return top_end(&c, error);
    if (!top_check_tensor(&c, "cond", cond) || !top_check_tensor(&c, "a", a) || !top_check_tensor(&c, "b", b) ||
        !top_check_dtype(&c, "cond", cond, TOPD_BOOL) || !top_check_dtype(&c, "a", a, TOPD_ALL) || !top_check_dtype(&c, "b", b, TOPD_ALL))
        return top_end(&c, error);
    top_rt r;
    top_rt_init(&r);
    top_rt_tensor(&r, a);
    top_rt_tensor(&r, b);
    tile_dtype rt = top_rt_result(&r);
    tctx t = {op, {cond->dtype, a->dtype, b->dtype}, rt, top_compute_dtype(rt), 1, 1};
    const char *names[3] = {"cond", "a", "b"};
    ternary_run(&c, &t, cond, a, b, names, out);
    return top_end(&c, error);
}

tile_status tile_op_clamp_tensor(const char *target, const tile_tensor *x, const tile_tensor *min, const tile_tensor *max, tile_tensor *out,
                                 char **error) {
    top_ctx c;
    const top_op *op = top_find("clamp_tensor");
    if (!top_begin(&c, "clamp_tensor", op, target)) return top_end(&c, error);
    if (!min && !max) {
        top_fail(&c, TILE_ERR_USER, "min, max: at least one bound must be given");
        return top_end(&c, error);
    }
    if (!top_check_tensor(&c, "x", x) || !top_check_dtype(&c, "x", x, op->dtypes) || (min && !top_check_tensor(&c, "min", min)) ||
        (max && !top_check_tensor(&c, "max", max)) || (min && !top_check_dtype(&c, "min", min, op->dtypes)) ||
        (max && !top_check_dtype(&c, "max", max, op->dtypes)))
        return top_end(&c, error);
    top_rt r;
    top_rt_init(&r);
    top_rt_tensor(&r, x);
    if (min) top_rt_tensor(&r, min);
    if (max) top_rt_tensor(&r, max);
    tile_dtype rt = top_rt_result(&r);
    /* an absent bound is a zero-dim placeholder the kernel never reads */
    uint64_t zero = 0;
    tile_tensor ph = {&zero, x->dtype, 0, {0}};
    tctx t = {op, {x->dtype, min ? min->dtype : x->dtype, max ? max->dtype : x->dtype}, rt, top_compute_dtype(rt), min != NULL, max != NULL};
    const char *names[3] = {"x", "min", "max"};
    ternary_run(&c, &t, x, min ? min : &ph, max ? max : &ph, names, out);
    return top_end(&c, error);
}

/* ---------- cast, copy, fill, arange ---------- */
bool top_convert(top_ctx *c, const tile_tensor *x, tile_tensor *y) {
    int64_t n = top_numel(x);
    if (n == 0) return true;
    int64_t one = 1;
    return top_copy_strided(c, x, 0, &one, y, 0, &one, 1, &n);
}

tile_status tile_op_cast(const char *target, const tile_tensor *x, tile_dtype dtype, tile_tensor *out, char **error) {
    top_ctx c;
    const top_op *op = top_find("cast");
    if (!top_begin(&c, "cast", op, target)) return top_end(&c, error);
    if (!top_check_tensor(&c, "x", x) || !top_check_dtype(&c, "x", x, op->dtypes)) return top_end(&c, error);
    if (dtype < 0 || dtype >= TILE_DT_COUNT || !(op->dtypes & (1u << dtype))) {
        char b[256];
        top_fail(&c, TILE_ERR_USER, "dtype: %s is not supported (supported: %s)", dtype >= 0 && dtype < TILE_DT_COUNT ? tile_dtype_name(dtype) : "invalid",
                 top_dtype_names(op->dtypes, b, sizeof b));
        return top_end(&c, error);
    }
    if (top_prepare_out(&c, "out", out, dtype, x->rank, x->shape)) top_convert(&c, x, out);
    return top_end(&c, error);
}

tile_status tile_op_copy(const char *target, const tile_tensor *x, tile_tensor *out, char **error) {
    top_ctx c;
    const top_op *op = top_find("copy");
    if (!top_begin(&c, "copy", op, target)) return top_end(&c, error);
    if (!top_check_tensor(&c, "x", x) || !top_check_dtype(&c, "x", x, op->dtypes)) return top_end(&c, error);
    if (top_prepare_out(&c, "out", out, x->dtype, x->rank, x->shape)) top_convert(&c, x, out);
    return top_end(&c, error);
}

bool top_fill(top_ctx *c, tile_tensor *y, tile_op_scalar v) {
    int64_t n = top_numel(y);
    if (n == 0) return true;
    top_defs d;
    top_defs_init(&d);
    top_def_int(&d, "block", block_for(n));
    top_def_dt(&d, "y_dtype", y->dtype);
    bool as_int = is_intb(y->dtype) && v.kind != TILE_DT_F64;
    top_def_int(&d, "f0", as_int);
    top_kernel *k;
    if (!top_kernel_get(c, "gen/copy.tl", "fill", &d, &k)) return false;
    tile_tensor p[3] = {top_view1(y)};
    double sc[3] = {0, v.kind == TILE_DT_F64 ? v.f : (double)v.i, (double)v.i};
    return top_kernel_run(c, k, p, 3, sc);
}

tile_status tile_op_fill(const char *target, tile_op_scalar value, tile_tensor *out, char **error) {
    top_ctx c;
    const top_op *op = top_find("fill");
    if (!top_begin(&c, "fill", op, target)) return top_end(&c, error);
    if (!out) {
        top_fail(&c, TILE_ERR_USER, "out: the output tensor is NULL");
        return top_end(&c, error);
    }
    tile_tensor want = *out;
    static char placeholder;
    want.data = &placeholder; /* the shape and dtype are the inputs here; data may be NULL */
    if (!top_check_tensor(&c, "out", &want) || !top_check_dtype(&c, "out", out, op->dtypes)) return top_end(&c, error);
    if (top_prepare_out(&c, "out", out, out->dtype, out->rank, out->shape)) top_fill(&c, out, value);
    return top_end(&c, error);
}

tile_status tile_op_arange(const char *target, tile_op_scalar start, tile_op_scalar end, tile_op_scalar step, tile_dtype dtype, tile_tensor *out,
                           char **error) {
    top_ctx c;
    const top_op *op = top_find("arange");
    if (!top_begin(&c, "arange", op, target)) return top_end(&c, error);
    bool all_int = start.kind != TILE_DT_F64 && end.kind != TILE_DT_F64 && step.kind != TILE_DT_F64;
    if (dtype == TILE_DT_INVALID) dtype = all_int ? TILE_DT_I64 : TILE_DT_F32;
    if (dtype < 0 || dtype >= TILE_DT_COUNT || !(op->dtypes & (1u << dtype))) {
        top_fail(&c, TILE_ERR_USER, "dtype: %s is not supported", dtype >= 0 && dtype < TILE_DT_COUNT ? tile_dtype_name(dtype) : "invalid");
        return top_end(&c, error);
    }
    double s0 = start.kind == TILE_DT_F64 ? start.f : (double)start.i, s1 = end.kind == TILE_DT_F64 ? end.f : (double)end.i;
    double st = step.kind == TILE_DT_F64 ? step.f : (double)step.i;
    if (st == 0 || !isfinite(st) || !isfinite(s0) || !isfinite(s1)) {
        top_fail(&c, TILE_ERR_USER, "step: must be finite and non-zero (start and end finite)");
        return top_end(&c, error);
    }
    if ((st > 0 && s1 < s0) || (st < 0 && s1 > s0)) {
        top_fail(&c, TILE_ERR_USER, "end: the range from start to end has the wrong sign for step");
        return top_end(&c, error);
    }
    int64_t n = all_int ? (end.i - start.i + step.i + (step.i > 0 ? -1 : 1)) / step.i : (int64_t)ceil((s1 - s0) / st);
    if (n < 0) n = 0;
    int64_t shape[1] = {n};
    if (!top_prepare_out(&c, "out", out, dtype, 1, shape) || n == 0) return top_end(&c, error);
    bool int_path = all_int && is_intb(dtype);
    top_defs d;
    top_defs_init(&d);
    top_def_int(&d, "block", block_for(n));
    top_def_dt(&d, "y_dtype", dtype);
    top_def_int(&d, "f0", int_path);
    top_kernel *k;
    if (top_kernel_get(&c, "gen/copy.tl", "arange", &d, &k)) {
        tile_tensor p[5] = {top_view1(out)};
        double sc[5] = {0, s0, st, (double)start.i, (double)step.i};
        top_kernel_run(&c, k, p, 5, sc);
    }
    return top_end(&c, error);
}
