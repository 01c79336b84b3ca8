/* reduce.c — reductions over any set of dims, argmax/argmin, max/min along a dim, scans.
 *
 * Planning: x's dimensions of size 1 are dropped and adjacent kept / reduced dimensions
 * merged, giving groups K R K R ...; each reduced group is one pass of gen/reduce.tl over
 * the canonical (O, R, I) view (innermost group first, intermediate results in the
 * accumulator dtype). When O * I is small and R long, a pass is split into C chunks of R
 * (partial results, then a second pass over the C partials), so that a full reduction still
 * has work for every core and block. The split depends on the shape alone, so every target
 * adds in the same order. var/std with several reduced groups first permute x so that the
 * reduced dimensions are innermost.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops_int.h"

static bool is_intb(tile_dtype t) { return t == TILE_DT_BOOL || tile_dtype_is_int(t); }

static tile_dtype acc_dtype(const char *op, tile_dtype x) {
    if (!strcmp(op, "any") || !strcmp(op, "all")) return TILE_DT_BOOL;
    if (!strcmp(op, "amax") || !strcmp(op, "amin")) return tile_dtype_is_float(x) ? top_compute_dtype(x) : x;
    if (is_intb(x)) return TILE_DT_I64;
    return top_compute_dtype(x);
}

static tile_dtype result_dtype(const char *op, tile_dtype x) {
    if (!strcmp(op, "any") || !strcmp(op, "all")) return TILE_DT_BOOL;
    if ((!strcmp(op, "sum") || !strcmp(op, "prod")) && is_intb(x)) return TILE_DT_I64;
    return x;
}

static int64_t block_for_i(int64_t i) { return i <= 1 ? 1 : i <= 8 ? 8 : i <= 32 ? 32 : 128; }

/* chunks of R for a pass over (O, R, I) */
static int64_t chunks_for(int64_t O, int64_t R, int64_t I) {
    if (O * I >= 256 || R < 8192) return 1;
    int64_t c = (512 + O * I - 1) / (O * I), most = R / 2048;
    if (c > most) c = most;
    if (c > 256) c = 256;
    return c < 1 ? 1 : c;
}

/* one kernel call: Y (O, C, I) = reduce_op over chunks of X (O, R, I) */
static bool run_reduce_kernel(top_ctx *c, const char *factory, const tile_tensor *x, int64_t O, int64_t R, int64_t I, int64_t C, tile_tensor *y,
                              tile_dtype acc, double scale, bool scaled, const tile_tensor *mean, int sqrt_f) {
    top_defs d;
    top_defs_init(&d);
    top_def_int(&d, "block", block_for_i(I));
    top_def_dt(&d, "x_dtype", x->dtype);
    top_def_dt(&d, "o_dtype", y->dtype);
    top_def_dt(&d, "a_dtype", acc);
    if (mean) {
        top_def_int(&d, "f0", sqrt_f);
        top_def_int(&d, "f1", scaled);
    } else {
        top_def_int(&d, "a_float", tile_dtype_is_float(acc));
        top_def_int(&d, "f0", scaled);
    }
    top_kernel *k;
    if (!top_kernel_get(c, "gen/reduce.tl", factory, &d, &k)) return false;
    tile_tensor p[4];
    double sc[4] = {0};
    int np = 0;
    p[np++] = top_view3(x, O, R, I);
    if (mean) {
        int64_t ms[2] = {O, I};
        p[np++] = top_view(mean, 2, ms);
    }
    p[np++] = top_view3(y, O, C, I);
    p[np] = (tile_tensor){0};
    sc[np++] = scale;
    return top_kernel_run(c, k, p, np, sc);
}

/* Y (O, I) = op over R of X (O, R, I), chunked when worthwhile; scale applied at the end */
static bool reduce_pass(top_ctx *c, const char *op, const char *factory, const tile_tensor *x, int64_t O, int64_t R, int64_t I, tile_tensor *y,
                        tile_dtype acc, double scale, bool scaled, const tile_tensor *mean, int sqrt_f) {
    int64_t C = mean ? 1 : chunks_for(O, R, I);
    if (C == 1) return run_reduce_kernel(c, factory, x, O, R, I, 1, y, acc, scale, scaled, mean, sqrt_f);
    tile_tensor part;
    int64_t ps[3] = {O, C, I};
    if (!top_temp(c, &part, acc, 3, ps)) return false;
    bool ok = run_reduce_kernel(c, factory, x, O, R, I, C, &part, acc, 1, false, NULL, 0) &&
              run_reduce_kernel(c, factory, &part, O, C, I, 1, y, acc, scale, scaled, NULL, 0);
    (void)op;
    top_free(&part);
    return ok;
}

typedef struct rplan {
    int ngroups;
    int64_t size[16];
    bool red[16];
    int64_t rtotal;    /* elements reduced per output element */
    int64_t out_shape[8];
    int out_rank;
} rplan;

static bool plan_dims(top_ctx *c, const tile_tensor *x, const int *dims, int ndims, bool keepdim, rplan *p) {
    bool red[8] = {0};
    int r = x->rank;
    if (ndims == 0)
        for (int d = 0; d < r; d++) red[d] = true;
    for (int i = 0; i < ndims; i++) {
        int d = dims[i];
        if (!top_check_dim(c, "dims", &d, r)) return false;
        if (r == 0) continue;
        if (red[d]) return top_fail(c, TILE_ERR_USER, "dims: dimension %d appears twice", d);
        red[d] = true;
    }
    memset(p, 0, sizeof *p);
    p->rtotal = 1;
    for (int d = 0; d < r; d++) {
        if (red[d]) p->rtotal *= x->shape[d];
        if (!red[d]) p->out_shape[p->out_rank++] = x->shape[d];
        else if (keepdim) p->out_shape[p->out_rank++] = 1;
        if (x->shape[d] == 1) continue;
        if (p->ngroups && p->red[p->ngroups - 1] == red[d]) p->size[p->ngroups - 1] *= x->shape[d];
        else {
            p->size[p->ngroups] = x->shape[d];
            p->red[p->ngroups++] = red[d];
        }
    }
    return true;
}

static bool reduce_impl(top_ctx *c, const char *opname, const tile_tensor *x, const int *dims, int ndims, bool keepdim, tile_tensor *out,
                        bool prepared) {
    const top_op *op = top_find(opname);
    rplan p;
    if (!plan_dims(c, x, dims, ndims, keepdim, &p)) return false;
    tile_dtype rdt = result_dtype(opname, x->dtype), acc = acc_dtype(opname, x->dtype);
    if (!prepared && !top_prepare_out(c, "out", out, rdt, p.out_rank, p.out_shape)) return false;
    if (top_numel(out) == 0) return true;
    bool mean = !strcmp(opname, "mean");
    if (p.rtotal == 0) {
        if (!strcmp(opname, "amax") || !strcmp(opname, "amin"))
            return top_fail(c, TILE_ERR_USER, "dims: cannot reduce over a dimension of size 0 (%s has no identity)", opname);
        tile_op_scalar v = !strcmp(opname, "prod") || !strcmp(opname, "all") ? tile_op_int(1) : mean ? tile_op_float(NAN) : tile_op_int(0);
        return top_fill(c, out, v);
    }
    /* walk the reduced groups from the innermost out */
    int last_red = -1, nred = 0;
    for (int g = 0; g < p.ngroups; g++)
        if (p.red[g]) last_red = g, nred++;
    const char *factory = mean ? "r_sum" : op->factory;
    if (nred == 0) {
        /* only size-1 dimensions are reduced: one pass with R = 1 */
        return reduce_pass(c, opname, factory, x, top_numel(x), 1, 1, out, acc, 1.0, mean, NULL, 0);
    }
    tile_tensor cur = *x, tmp = {0};
    int64_t sizes[16];
    bool reds[16];
    int ng = p.ngroups;
    memcpy(sizes, p.size, sizeof sizes);
    memcpy(reds, p.red, sizeof reds);
    bool ok = true;
    for (int step = 0; step < nred && ok; step++) {
        int g = last_red;
        for (int h = ng - 1; h >= 0; h--)
            if (reds[h]) { g = h; break; }
        int64_t O = 1, I = 1;
        for (int h = 0; h < g; h++) O *= sizes[h];
        for (int h = g + 1; h < ng; h++) I *= sizes[h];
        bool final = step == nred - 1;
        tile_tensor next = {0};
        if (final) next = *out;
        else {
            int64_t s2[2] = {O, I};
            if (!top_temp(c, &next, acc, 2, s2)) { ok = false; break; }
        }
        ok = reduce_pass(c, opname, factory, &cur, O, sizes[g], I, &next, acc, mean ? 1.0 / (double)p.rtotal : 1.0, final && mean, NULL, 0);
        if (tmp.data) top_free(&tmp);
        if (!final) { tmp = next; cur = next; }
        /* drop group g */
        for (int h = g; h + 1 < ng; h++) { sizes[h] = sizes[h + 1]; reds[h] = reds[h + 1]; }
        ng--;
    }
    if (tmp.data) top_free(&tmp);
    return ok;
}

bool top_reduce_into(top_ctx *c, const char *op, const tile_tensor *x, const int *dims, int ndims, bool keepdim, tile_tensor *out) {
    return reduce_impl(c, op, x, dims, ndims, keepdim, out, out->data != NULL);
}

tile_status tile_op_reduce(const char *target, const char *opname, const tile_tensor *x, const int *dims, int ndims, int keepdim, tile_tensor *out,
                           char **error) {
    top_ctx c;
    const top_op *op = top_find(opname);
    bool ok_op = op && op->family == TOPF_REDUCE && strcmp(op->name, "var") && strcmp(op->name, "std");
    if (!top_begin(&c, opname, ok_op ? op : NULL, target)) return top_end(&c, error);
    if (!top_check_tensor(&c, "x", x) || !top_check_dtype(&c, "x", x, op->dtypes)) return top_end(&c, error);
    if (ndims < 0 || (ndims && !dims)) {
        top_fail(&c, TILE_ERR_USER, "dims: %d dims given", ndims);
        return top_end(&c, error);
    }
    reduce_impl(&c, op->name, x, dims, ndims, keepdim != 0, out, false);
    return top_end(&c, error);
}

tile_status tile_op_var(const char *target, const char *opname, const tile_tensor *x, const int *dims, int ndims, double correction, int keepdim,
                        tile_tensor *out, char **error) {
    top_ctx c;
    const top_op *op = top_find(opname);
    bool ok_op = op && (!strcmp(op->name, "var") || !strcmp(op->name, "std"));
    if (!top_begin(&c, opname, ok_op ? op : NULL, target)) return top_end(&c, error);
    if (!top_check_tensor(&c, "x", x) || !top_check_dtype(&c, "x", x, op->dtypes)) return top_end(&c, error);
    rplan p;
    if (!plan_dims(&c, x, dims, ndims, keepdim != 0, &p) || !top_prepare_out(&c, "out", out, x->dtype, p.out_rank, p.out_shape))
        return top_end(&c, error);
    if (top_numel(out) == 0) return top_end(&c, error);
    if (p.rtotal == 0) {
        top_fill(&c, out, tile_op_float(NAN));
        return top_end(&c, error);
    }
    tile_dtype acc = top_compute_dtype(x->dtype);
    /* x with the reduced dims innermost: (O, R) */
    int r = x->rank, perm[8], np = 0;
    bool red[8] = {0};
    if (ndims == 0)
        for (int d = 0; d < r; d++) red[d] = true;
    for (int i = 0; i < ndims; i++) red[dims[i] < 0 ? dims[i] + r : dims[i]] = true;
    for (int d = 0; d < r; d++)
        if (!red[d]) perm[np++] = d;
    for (int d = 0; d < r; d++)
        if (red[d]) perm[np++] = d;
    int nredg = 0;
    for (int g = 0; g < p.ngroups; g++) nredg += p.red[g];
    bool inner = nredg <= 1 && (p.ngroups == 0 || p.red[p.ngroups - 1] || nredg == 0);
    tile_tensor xt = *x, tmp = {0};
    int64_t R = p.rtotal, O = top_numel(x) / (R ? R : 1), I = 1;
    if (nredg == 1 && !inner) {
        /* one reduced group in the middle: the (O, R, I) view as it is */
        int64_t before = 1, after = 1;
        bool seen = false;
        for (int g = 0; g < p.ngroups; g++) {
            if (p.red[g]) seen = true;
            else if (seen) after *= p.size[g];
            else before *= p.size[g];
        }
        O = before;
        I = after;
    } else if (!inner) {
        int64_t xs[8], s[8];
        top_strides(r, x->shape, xs);
        int64_t ps[8];
        for (int d = 0; d < r; d++) {
            s[d] = x->shape[perm[d]];
            ps[d] = xs[perm[d]];
        }
        if (!top_temp(&c, &tmp, x->dtype, r, s)) return top_end(&c, error);
        int64_t ts[8];
        top_strides(r, s, ts);
        if (!top_copy_strided(&c, x, 0, ps, &tmp, 0, ts, r, s)) {
            top_free(&tmp);
            return top_end(&c, error);
        }
        xt = tmp;
    }
    tile_tensor m = {0};
    int64_t ms[2] = {O, I};
    if (top_temp(&c, &m, acc, 2, ms) && reduce_pass(&c, "mean", "r_sum", &xt, O, R, I, &m, acc, 1.0 / (double)R, true, NULL, 0)) {
        double denom = (double)R - correction;
        reduce_pass(&c, op->name, "r_sqdev", &xt, O, R, I, out, acc, 1.0 / denom, true, &m, !strcmp(op->name, "std"));
    }
    top_free(&m);
    top_free(&tmp);
    return top_end(&c, error);
}

static bool arg_impl(top_ctx *c, const top_op *op, const tile_tensor *x, int dim, bool keepdim, tile_tensor *values, tile_tensor *indices) {
    int64_t O = 1, R, I = 1, s[8];
    int rank = 0;
    if (dim == TILE_OP_ALL_DIMS) {
        R = top_numel(x);
        if (keepdim)
            for (int d = 0; d < x->rank; d++) s[rank++] = 1;
    } else {
        if (!top_check_dim(c, "dim", &dim, x->rank)) return false;
        R = x->rank ? x->shape[dim] : 1;
        for (int d = 0; d < x->rank; d++) {
            if (d < dim) O *= x->shape[d];
            if (d > dim) I *= x->shape[d];
            if (d != dim) s[rank++] = x->shape[d];
            else if (keepdim) s[rank++] = 1;
        }
    }
    if (values && !top_prepare_out(c, "values", values, x->dtype, rank, s)) return false;
    if (!top_prepare_out(c, "indices", indices, TILE_DT_I64, rank, s)) return false;
    if (O * I == 0) return true;
    if (R == 0) return top_fail(c, TILE_ERR_USER, "x: cannot take %s over an empty dimension", op->name);
    tile_tensor v = {0};
    int64_t vs[2] = {O, I};
    if (!values) {
        if (!top_temp(c, &v, x->dtype, 2, vs)) return false;
        values = &v;
    }
    top_defs d;
    top_defs_init(&d);
    top_def_int(&d, "block", block_for_i(I));
    top_def_dt(&d, "x_dtype", x->dtype);
    top_kernel *k;
    bool ok = top_kernel_get(c, op->src, op->factory, &d, &k);
    if (ok) {
        tile_tensor p[3] = {top_view3(x, O, R, I), top_view(values, 2, vs), top_view(indices, 2, vs)};
        ok = top_kernel_run(c, k, p, 3, NULL);
    }
    top_free(&v);
    return ok;
}

tile_status tile_op_argmax(const char *target, const char *opname, const tile_tensor *x, int dim, int keepdim, tile_tensor *out, char **error) {
    top_ctx c;
    const top_op *op = top_find_family(opname, TOPF_ARGREDUCE);
    if (!top_begin(&c, opname, op, target)) return top_end(&c, error);
    if (top_check_tensor(&c, "x", x) && top_check_dtype(&c, "x", x, op->dtypes)) arg_impl(&c, op, x, dim, keepdim != 0, NULL, out);
    return top_end(&c, error);
}

tile_status tile_op_max_dim(const char *target, const char *opname, const tile_tensor *x, int dim, int keepdim, tile_tensor *values,
                            tile_tensor *indices, char **error) {
    top_ctx c;
    const char *name = opname && !strcmp(opname, "max") ? "argmax" : opname && !strcmp(opname, "min") ? "argmin" : NULL;
    const top_op *op = name ? top_find(name) : NULL;
    if (!top_begin(&c, opname, op, target)) return top_end(&c, error);
    if (!values) top_fail(&c, TILE_ERR_USER, "values: the output tensor is NULL");
    else if (top_check_tensor(&c, "x", x) && top_check_dtype(&c, "x", x, op->dtypes)) {
        if (dim == TILE_OP_ALL_DIMS) top_fail(&c, TILE_ERR_USER, "dim: a dimension is needed");
        else arg_impl(&c, op, x, dim, keepdim != 0, values, indices);
    }
    return top_end(&c, error);
}

tile_status tile_op_cumsum(const char *target, const char *opname, const tile_tensor *x, int dim, tile_tensor *out, char **error) {
    top_ctx c;
    const top_op *op = top_find_family(opname, TOPF_SCAN);
    if (!top_begin(&c, opname, op, target)) return top_end(&c, error);
    if (!top_check_tensor(&c, "x", x) || !top_check_dtype(&c, "x", x, op->dtypes) || !top_check_dim(&c, "dim", &dim, x->rank))
        return top_end(&c, error);
    tile_dtype odt = is_intb(x->dtype) ? TILE_DT_I64 : x->dtype, acc = is_intb(x->dtype) ? TILE_DT_I64 : top_compute_dtype(x->dtype);
    if (!top_prepare_out(&c, "out", out, odt, x->rank, x->shape) || top_numel(x) == 0) return top_end(&c, error);
    int64_t O = 1, R = x->rank ? x->shape[dim] : 1, I = 1;
    for (int d = 0; d < x->rank; d++) {
        if (d < dim) O *= x->shape[d];
        if (d > dim) I *= x->shape[d];
    }
    top_defs d;
    top_defs_init(&d);
    top_def_int(&d, "block", block_for_i(I));
    top_def_dt(&d, "x_dtype", x->dtype);
    top_def_dt(&d, "o_dtype", odt);
    top_def_dt(&d, "a_dtype", acc);
    top_kernel *k;
    if (top_kernel_get(&c, op->src, op->factory, &d, &k)) {
        tile_tensor p[2] = {top_view3(x, O, R, I), top_view3(out, O, R, I)};
        top_kernel_run(&c, k, p, 2, NULL);
    }
    return top_end(&c, error);
}
