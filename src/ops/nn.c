/* nn.c — the neural-network operators (norm.tl, softmax.tl, act.tl, rope.tl, xent.tl,
 * quant.tl): argument checks, the shape class (the row tile NB: the power of two covering
 * the row, capped), and the launch. Tensors of rank > 2 are viewed as [rows, last axis]. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops_int.h"

#define BEGIN(name)                                          \
    top_ctx c;                                               \
    const top_op *op_ = top_find(name);                      \
    if (!top_begin(&c, name, op_, target)) return top_end(&c, error)

static int64_t row_tile(int64_t n, int64_t cap) {
    int64_t t = 16;
    while (t < n && t < cap) t *= 2;
    return t;
}

static int64_t rows_of(const tile_tensor *x) {
    int64_t m = 1;
    for (int d = 0; d + 1 < x->rank; d++) m *= x->shape[d];
    return m;
}

/* the weight-like vector [N] of x [..., N] */
static bool check_vec(top_ctx *c, const char *arg, const tile_tensor *w, int64_t n) {
    if (!top_check_tensor(c, arg, w) || !top_check_dtype(c, arg, w, TOPD_MM)) return false;
    if (w->rank != 1 || w->shape[0] != n) {
        char a[128];
        top_shape_str(a, sizeof a, w->rank, w->shape);
        return top_fail(c, TILE_ERR_USER, "%s: shape %s does not match the last dimension of x (%lld)", arg, a, (long long)n);
    }
    return true;
}

static bool norm_common(top_ctx *c, const top_op *op, const tile_tensor *x, const tile_tensor *residual, tile_tensor *y, tile_tensor *residual_out) {
    if (!top_check_tensor(c, "x", x) || !top_check_dtype(c, "x", x, op->dtypes) || !top_check_rank(c, "x", x, 1, 8)) return false;
    if (residual && (!top_check_tensor(c, "residual", residual) || !top_check_same_shape(c, "residual", residual, "x", x))) return false;
    if (residual && residual->dtype != x->dtype)
        return top_fail(c, TILE_ERR_USER, "residual: dtype %s differs from x's %s", tile_dtype_name(residual->dtype), tile_dtype_name(x->dtype));
    if (residual_out && !residual) return top_fail(c, TILE_ERR_USER, "residual_out: given without a residual");
    if (!top_prepare_out(c, "y", y, x->dtype, x->rank, x->shape)) return false;
    if (residual_out && !top_prepare_out(c, "residual_out", residual_out, x->dtype, x->rank, x->shape)) return false;
    return true;
}

tile_status tile_op_rms_norm(const char *target, const tile_tensor *x, const tile_tensor *weight, const tile_tensor *residual, double eps,
                             tile_tensor *y, tile_tensor *residual_out, char **error) {
    BEGIN("rms_norm");
    if (!norm_common(&c, op_, x, residual, y, residual_out)) return top_end(&c, error);
    int64_t N = x->shape[x->rank - 1], M = rows_of(x);
    if (!check_vec(&c, "weight", weight, N) || M * N == 0) return top_end(&c, error);
    tile_tensor h = {0};
    if (residual && !residual_out && !top_temp(&c, &h, x->dtype, x->rank, x->shape)) return top_end(&c, error);
    tile_tensor *H = residual_out ? residual_out : &h;
    top_defs d;
    top_defs_init(&d);
    top_def_int(&d, "NB", row_tile(N, 2048));
    top_def_dt(&d, "x_dtype", x->dtype);
    top_def_dt(&d, "w_dtype", weight->dtype);
    top_def_int(&d, "has_res", residual != NULL);
    top_kernel *k;
    uint64_t dummy = 0;
    tile_tensor ph = {&dummy, x->dtype, 2, {1, 1}};
    int64_t ms[2] = {M, N};
    if (top_kernel_get(&c, op_->src, op_->factory, &d, &k)) {
        tile_tensor p[6] = {top_view(x, 2, ms), top_view1(weight), residual ? top_view(residual, 2, ms) : ph, top_view(y, 2, ms),
                            residual ? top_view(H, 2, ms) : ph};
        double sc[6] = {0, 0, 0, 0, 0, eps};
        top_kernel_run(&c, k, p, 6, sc);
    }
    top_free(&h);
    return top_end(&c, error);
}

tile_status tile_op_layer_norm(const char *target, const tile_tensor *x, const tile_tensor *weight, const tile_tensor *bias,
                               const tile_tensor *residual, double eps, tile_tensor *y, tile_tensor *residual_out, tile_tensor *mean,
                               tile_tensor *rstd, char **error) {
    BEGIN("layer_norm");
    if (!norm_common(&c, op_, x, residual, y, residual_out)) return top_end(&c, error);
    int64_t N = x->shape[x->rank - 1], M = rows_of(x);
    if ((weight && !check_vec(&c, "weight", weight, N)) || (bias && !check_vec(&c, "bias", bias, N))) return top_end(&c, error);
    if (weight && bias && weight->dtype != bias->dtype) {
        top_fail(&c, TILE_ERR_USER, "bias: dtype %s differs from weight's %s", tile_dtype_name(bias->dtype), tile_dtype_name(weight->dtype));
        return top_end(&c, error);
    }
    tile_tensor mt = {0}, rt = {0}, h = {0};
    int64_t stat_shape[8];
    for (int d = 0; d + 1 < x->rank; d++) stat_shape[d] = x->shape[d];
    if (mean && !top_prepare_out(&c, "mean", mean, TILE_DT_F32, x->rank - 1, stat_shape)) return top_end(&c, error);
    if (rstd && !top_prepare_out(&c, "rstd", rstd, TILE_DT_F32, x->rank - 1, stat_shape)) return top_end(&c, error);
    if (M * N == 0) return top_end(&c, error);
    if (!mean && !top_temp(&c, &mt, TILE_DT_F32, x->rank - 1, stat_shape)) return top_end(&c, error);
    if (!rstd && !top_temp(&c, &rt, TILE_DT_F32, x->rank - 1, stat_shape)) goto done;
    if (residual && !residual_out && !top_temp(&c, &h, x->dtype, x->rank, x->shape)) goto done;
    {
        tile_tensor *H = residual_out ? residual_out : &h, *Mn = mean ? mean : &mt, *Rs = rstd ? rstd : &rt;
        tile_dtype wdt = weight ? weight->dtype : bias ? bias->dtype : x->dtype;
        top_defs d;
        top_defs_init(&d);
        top_def_int(&d, "NB", row_tile(N, 2048));
        top_def_dt(&d, "x_dtype", x->dtype);
        top_def_dt(&d, "w_dtype", wdt);
        top_def_int(&d, "has_res", residual != NULL);
        top_def_int(&d, "has_w", weight != NULL);
        top_def_int(&d, "has_b", bias != NULL);
        top_kernel *k;
        uint64_t dummy[2] = {0};
        tile_tensor ph2 = {dummy, x->dtype, 2, {1, 1}}, phw = {dummy, wdt, 1, {1}};
        int64_t ms[2] = {M, N};
        if (top_kernel_get(&c, op_->src, op_->factory, &d, &k)) {
            tile_tensor p[9] = {top_view(x, 2, ms), weight ? top_view1(weight) : phw, bias ? top_view1(bias) : phw,
                                residual ? top_view(residual, 2, ms) : ph2, top_view(y, 2, ms), residual ? top_view(H, 2, ms) : ph2,
                                top_view1(Mn), top_view1(Rs)};
            double sc[9] = {0};
            sc[8] = eps;
            top_kernel_run(&c, k, p, 9, sc);
        }
    }
done:
    top_free(&mt);
    top_free(&rt);
    top_free(&h);
    return top_end(&c, error);
}

static tile_status softmax_entry(const char *target, const char *name, const tile_tensor *x, int dim, tile_tensor *out, char **error) {
    BEGIN(name);
    if (!top_check_tensor(&c, "x", x) || !top_check_dtype(&c, "x", x, op_->dtypes) || !top_check_dim(&c, "dim", &dim, x->rank) ||
        !top_prepare_out(&c, "out", out, x->dtype, x->rank, x->shape) || top_numel(x) == 0)
        return top_end(&c, error);
    int r = x->rank ? x->rank : 1;
    const tile_tensor *src = x;
    tile_tensor xt = {0}, yt = {0};
    int64_t xs[8], ts[8], s[8], N, M;
    int perm[8];
    bool moved = x->rank > 1 && dim != x->rank - 1;
    if (moved) {
        /* the softmax dim moved last: permuted copy in, kernel, permuted copy back */
        for (int d = 0, k = 0; d < r; d++)
            if (d != dim) perm[k++] = d;
        perm[r - 1] = dim;
        top_strides(r, x->shape, xs);
        int64_t ps[8];
        for (int d = 0; d < r; d++) {
            s[d] = x->shape[perm[d]];
            ps[d] = xs[perm[d]];
        }
        top_strides(r, s, ts);
        if (!top_temp(&c, &xt, x->dtype, r, s) || !top_copy_strided(&c, x, 0, ps, &xt, 0, ts, r, s) || !top_temp(&c, &yt, x->dtype, r, s))
            goto done;
        src = &xt;
    }
    N = x->rank ? src->shape[r - 1] : 1;
    M = top_numel(x) / N;
    {
        top_defs d;
        top_defs_init(&d);
        top_def_int(&d, "NB", row_tile(N, 1024));
        top_def_dt(&d, "dtype", x->dtype);
        top_def_dt(&d, "acc", top_compute_dtype(x->dtype));
        top_def_int(&d, "log", !strcmp(op_->name, "log_softmax"));
        top_kernel *k;
        int64_t ms[2] = {M, N};
        if (top_kernel_get(&c, op_->src, op_->factory, &d, &k)) {
            tile_tensor p[2] = {top_view(src, 2, ms), top_view(moved ? &yt : out, 2, ms)};
            if (top_kernel_run(&c, k, p, 2, NULL) && moved) {
                /* yt (permuted layout) back into out: out element at x-index = yt element at perm index */
                int64_t os[8], back[8];
                top_strides(r, x->shape, os);
                for (int d = 0; d < r; d++) back[d] = os[perm[d]];
                top_copy_strided(&c, &yt, 0, ts, out, 0, back, r, s);
            }
        }
    }
done:
    top_free(&xt);
    top_free(&yt);
    return top_end(&c, error);
}

tile_status tile_op_softmax(const char *target, const tile_tensor *x, int dim, tile_tensor *out, char **error) {
    return softmax_entry(target, "softmax", x, dim, out, error);
}

tile_status tile_op_log_softmax(const char *target, const tile_tensor *x, int dim, tile_tensor *out, char **error) {
    return softmax_entry(target, "log_softmax", x, dim, out, error);
}

tile_status tile_op_glu(const char *target, const char *opname, const tile_tensor *gate, const tile_tensor *up, tile_tensor *out, char **error) {
    top_ctx c;
    const top_op *op = top_find_family(opname, TOPF_ACT);
    if (!top_begin(&c, opname, op, target)) return top_end(&c, error);
    if (!top_check_tensor(&c, "gate", gate) || !top_check_dtype(&c, "gate", gate, op->dtypes) || !top_check_rank(&c, "gate", gate, 1, 8))
        return top_end(&c, error);
    int64_t N2 = gate->shape[gate->rank - 1], N = N2, M = rows_of(gate), s[8];
    memcpy(s, gate->shape, sizeof s);
    if (up) {
        if (!top_check_tensor(&c, "up", up) || !top_check_same_shape(&c, "up", up, "gate", gate)) return top_end(&c, error);
        if (up->dtype != gate->dtype) {
            top_fail(&c, TILE_ERR_USER, "up: dtype %s differs from gate's %s", tile_dtype_name(up->dtype), tile_dtype_name(gate->dtype));
            return top_end(&c, error);
        }
    } else {
        if (N2 % 2) {
            top_fail(&c, TILE_ERR_USER, "gate: the last dimension (%lld) must be even to hold [gate | up]", (long long)N2);
            return top_end(&c, error);
        }
        N = N2 / 2;
        s[gate->rank - 1] = N;
    }
    if (!top_prepare_out(&c, "out", out, gate->dtype, gate->rank, s) || M * N == 0) return top_end(&c, error);
    top_defs d;
    top_defs_init(&d);
    top_def_int(&d, "block", N <= 64 ? 64 : N <= 256 ? 256 : 1024);
    top_def_dt(&d, "dtype", gate->dtype);
    top_def_dt(&d, "c_dtype", top_compute_dtype(gate->dtype));
    top_def_int(&d, "kind", !strcmp(op->name, "swiglu") ? 0 : !strcmp(op->name, "geglu") ? 1 : 2);
    top_def_int(&d, "split", up == NULL);
    top_kernel *k;
    uint64_t dummy = 0;
    tile_tensor ph = {&dummy, gate->dtype, 2, {1, 1}};
    int64_t gs[2] = {M, N2}, ys[2] = {M, N};
    if (top_kernel_get(&c, op->src, op->factory, &d, &k)) {
        tile_tensor p[3] = {top_view(gate, 2, gs), up ? top_view(up, 2, ys) : ph, top_view(out, 2, ys)};
        top_kernel_run(&c, k, p, 3, NULL);
    }
    return top_end(&c, error);
}

tile_status tile_op_rope(const char *target, const tile_tensor *x, const tile_tensor *cos, const tile_tensor *sin, const tile_tensor *positions,
                         int interleaved, tile_tensor *out, char **error) {
    BEGIN("rope");
    if (!top_check_tensor(&c, "x", x) || !top_check_dtype(&c, "x", x, op_->dtypes) || !top_check_rank(&c, "x", x, 2, 3) ||
        !top_check_tensor(&c, "cos", cos) || !top_check_tensor(&c, "sin", sin) || !top_check_dtype(&c, "cos", cos, TOPD(F32)) ||
        !top_check_dtype(&c, "sin", sin, TOPD(F32)) || !top_check_rank(&c, "cos", cos, 2, 2) || !top_check_same_shape(&c, "sin", sin, "cos", cos))
        return top_end(&c, error);
    int64_t Tn = x->shape[0], H = x->rank == 3 ? x->shape[1] : 1, D = x->shape[x->rank - 1];
    if (D % 2) {
        top_fail(&c, TILE_ERR_USER, "x: the head dimension (%lld) must be even", (long long)D);
        return top_end(&c, error);
    }
    if (cos->shape[1] != D / 2) {
        top_fail(&c, TILE_ERR_USER, "cos: has %lld columns, expected head_dim / 2 = %lld", (long long)cos->shape[1], (long long)(D / 2));
        return top_end(&c, error);
    }
    if (positions) {
        if (!top_check_rank(&c, "positions", positions, 1, 1) || !top_check_tensor(&c, "positions", positions)) return top_end(&c, error);
        if (positions->shape[0] != Tn) {
            top_fail(&c, TILE_ERR_USER, "positions: %lld entries for %lld tokens", (long long)positions->shape[0], (long long)Tn);
            return top_end(&c, error);
        }
        /* every position a row of the tables */
        if (!top_check_dtype(&c, "positions", positions, TOPD_IDX)) return top_end(&c, error);
        tile_tensor hp;
        if (!top_host_copy(&c, "positions", positions, &hp)) return top_end(&c, error);
        for (int64_t i = 0; i < Tn; i++) {
            int64_t v = tile_load_i(hp.dtype, hp.data, (size_t)i);
            if (v < 0 || v >= cos->shape[0]) {
                top_host_release(&hp, positions);
                top_fail(&c, TILE_ERR_USER, "positions: entry %lld is %lld, outside the tables' %lld rows", (long long)i, (long long)v,
                         (long long)cos->shape[0]);
                return top_end(&c, error);
            }
        }
        top_host_release(&hp, positions);
    } else if (cos->shape[0] < Tn) {
        top_fail(&c, TILE_ERR_USER, "cos: %lld rows for %lld tokens (give positions or a table row per token)", (long long)cos->shape[0], (long long)Tn);
        return top_end(&c, error);
    }
    if (!top_prepare_out(&c, "out", out, x->dtype, x->rank, x->shape) || Tn * H * D == 0) return top_end(&c, error);
    int64_t hh = H * (D / 2);
    top_defs d;
    top_defs_init(&d);
    top_def_int(&d, "block", hh <= 64 ? 64 : hh <= 256 ? 256 : 1024);
    top_def_dt(&d, "dtype", x->dtype);
    top_def_dt(&d, "c_dtype", top_compute_dtype(x->dtype));
    top_def_dt(&d, "p_dtype", positions ? positions->dtype : TILE_DT_I64);
    top_def_int(&d, "interleaved", interleaved != 0);
    top_def_int(&d, "has_pos", positions != NULL);
    top_kernel *k;
    int64_t dummy = 0;
    tile_tensor ph = {&dummy, TILE_DT_I64, 1, {1}};
    int64_t xs[3] = {Tn, H, D};
    if (top_kernel_get(&c, op_->src, op_->factory, &d, &k)) {
        tile_tensor p[5] = {top_view(x, 3, xs), *cos, *sin, positions ? *positions : ph, top_view(out, 3, xs)};
        top_kernel_run(&c, k, p, 5, NULL);
    }
    return top_end(&c, error);
}

static int reduction_kind(const char *r) { return !r || !strcmp(r, "mean") ? 1 : !strcmp(r, "sum") ? 2 : !strcmp(r, "none") ? 0 : -1; }

/* ht receives targets readable on the host (top_host_copy; release it with top_host_release) */
static bool xent_check(top_ctx *c, const top_op *op, const tile_tensor *logits, const tile_tensor *targets, int64_t ignore_index, int *red,
                       const char *reduction, tile_tensor *ht) {
    ht->data = NULL;
    if (!top_check_tensor(c, "logits", logits) || !top_check_dtype(c, "logits", logits, op->dtypes) || !top_check_rank(c, "logits", logits, 2, 2) ||
        !top_check_tensor(c, "targets", targets) || !top_check_dtype(c, "targets", targets, TOPD_IDX) || !top_check_rank(c, "targets", targets, 1, 1))
        return false;
    if (targets->shape[0] != logits->shape[0])
        return top_fail(c, TILE_ERR_USER, "targets: %lld entries for %lld rows of logits", (long long)targets->shape[0], (long long)logits->shape[0]);
    *red = reduction_kind(reduction);
    if (*red < 0) return top_fail(c, TILE_ERR_USER, "reduction: '%s' is not one of none, mean, sum", reduction);
    int64_t V = logits->shape[1];
    if (!top_host_copy(c, "targets", targets, ht)) return false;
    for (int64_t i = 0; i < targets->shape[0]; i++) {
        int64_t v = tile_load_i(ht->dtype, ht->data, (size_t)i);
        if (v != ignore_index && (v < 0 || v >= V)) {
            top_host_release(ht, targets);
            return top_fail(c, TILE_ERR_USER, "targets: entry %lld is %lld, outside [0, %lld) and not ignore_index", (long long)i, (long long)v, (long long)V);
        }
    }
    return true;
}

static int64_t count_valid(const tile_tensor *t, int64_t ignore_index) {
    int64_t n = 0;
    for (int64_t i = 0; i < t->shape[0]; i++) n += tile_load_i(t->dtype, t->data, (size_t)i) != ignore_index;
    return n;
}

tile_status tile_op_cross_entropy(const char *target, const tile_tensor *logits, const tile_tensor *targets, int64_t ignore_index,
                                  const char *reduction, tile_tensor *out, tile_tensor *lse, char **error) {
    BEGIN("cross_entropy");
    int red;
    tile_tensor ht, loss = {0}, lt = {0};
    if (!xent_check(&c, op_, logits, targets, ignore_index, &red, reduction, &ht)) return top_end(&c, error);
    int64_t N = logits->shape[0], V = logits->shape[1];
    if (red == 0 ? !top_prepare_out(&c, "out", out, TILE_DT_F32, 1, &N) : !top_prepare_out(&c, "out", out, TILE_DT_F32, 0, NULL)) goto done;
    if (lse && !top_prepare_out(&c, "lse", lse, TILE_DT_F32, 1, &N)) goto done;
    if (N == 0 || V == 0) {
        if (V == 0 && N > 0) top_fail(&c, TILE_ERR_USER, "logits: the vocabulary is empty");
        else if (red != 0) top_fill(&c, out, tile_op_float(red == 1 ? NAN : 0.0));
        goto done;
    }
    if (red != 0 && !top_temp(&c, &loss, TILE_DT_F32, 1, &N)) goto done;
    if (!lse && !top_temp(&c, &lt, TILE_DT_F32, 1, &N)) goto done;
    {
        top_defs d;
        top_defs_init(&d);
        top_def_int(&d, "NB", row_tile(V, 1024));
        top_def_dt(&d, "dtype", logits->dtype);
        top_def_dt(&d, "t_dtype", targets->dtype);
        top_kernel *k;
        tile_tensor *L = red == 0 ? out : &loss;
        if (top_kernel_get(&c, op_->src, op_->factory, &d, &k)) {
            tile_tensor p[5] = {*logits, *targets, top_view1(L), lse ? *lse : lt};
            double sc[5] = {0, 0, 0, 0, (double)ignore_index};
            if (top_kernel_run(&c, k, p, 5, sc) && red != 0) {
                /* the sum over rows, through the reduction operator; mean divides by the rows counted */
                tile_tensor s = {0};
                int dim0 = 0;
                tile_tensor hs;
                if (top_reduce_into(&c, "sum", &loss, &dim0, 1, false, &s) && top_host_copy(&c, "out", &s, &hs)) {
                    float v = *(float *)hs.data;
                    if (red == 1) v = (float)((double)v / (double)count_valid(&ht, ignore_index));
                    top_host_release(&hs, &s);
                    top_fill(&c, out, tile_op_float(v));
                }
                top_free(&s);
            }
        }
    }
done:
    top_host_release(&ht, targets);
    top_free(&loss);
    top_free(&lt);
    return top_end(&c, error);
}

tile_status tile_op_cross_entropy_backward(const char *target, const tile_tensor *logits, const tile_tensor *targets, const tile_tensor *lse,
                                           const tile_tensor *grad, int64_t ignore_index, const char *reduction, tile_tensor *dlogits,
                                           char **error) {
    BEGIN("cross_entropy_backward");
    int red;
    tile_tensor ht, hg = {0}, g = {0};
    if (!xent_check(&c, op_, logits, targets, ignore_index, &red, reduction, &ht)) return top_end(&c, error);
    int64_t N = logits->shape[0];
    if (!top_check_tensor(&c, "lse", lse) || !top_check_dtype(&c, "lse", lse, TOPD(F32)) || !top_check_same_shape(&c, "lse", lse, "targets", targets) ||
        !top_check_tensor(&c, "grad", grad) || !top_check_dtype(&c, "grad", grad, TOPD(F32)))
        goto done;
    if (red == 0 ? !top_check_same_shape(&c, "grad", grad, "targets", targets) : top_numel(grad) != 1) {
        if (red != 0) top_fail(&c, TILE_ERR_USER, "grad: expected one element for reduction '%s'", reduction);
        goto done;
    }
    if (!top_prepare_out(&c, "dlogits", dlogits, logits->dtype, 2, logits->shape) || top_numel(logits) == 0) goto done;
    /* the per-row gradient: grad[n] (none), g (sum), g / count (mean); 0 for ignored rows */
    /* built on the host (from host copies of grad and targets), then staged on the device */
    if (!top_host_copy(&c, "grad", grad, &hg)) goto done;
    g = (tile_tensor){malloc((size_t)(N ? N : 1) * sizeof(float)), TILE_DT_F32, 1, {N}};
    if (!g.data) {
        top_fail(&c, TILE_ERR_USER, "out of memory");
        goto done;
    }
    int64_t cnt = red == 1 ? count_valid(&ht, ignore_index) : 1;
    for (int64_t i = 0; i < N; i++) {
        double gi = red == 0 ? ((const float *)hg.data)[i] : ((const float *)hg.data)[0] / (double)(cnt ? cnt : 1);
        if (tile_load_i(ht.dtype, ht.data, (size_t)i) == ignore_index) gi = 0;
        ((float *)g.data)[i] = (float)gi;
    }
    tile_tensor gd = g;
    if (!top_stage(&c, &gd)) goto done;
    int64_t V = logits->shape[1];
    top_defs d;
    top_defs_init(&d);
    top_def_int(&d, "block", V <= 64 ? 64 : V <= 256 ? 256 : 1024);
    top_def_dt(&d, "dtype", logits->dtype);
    top_def_dt(&d, "c_dtype", top_compute_dtype(logits->dtype));
    top_def_dt(&d, "t_dtype", targets->dtype);
    top_kernel *k;
    if (top_kernel_get(&c, op_->src, op_->factory, &d, &k)) {
        tile_tensor p[5] = {*logits, *targets, *lse, gd, *dlogits};
        top_kernel_run(&c, k, p, 5, NULL);
    }
done:
    free(g.data);
    top_host_release(&hg, grad);
    top_host_release(&ht, targets);
    return top_end(&c, error);
}

static bool fp8_block(top_ctx *c, int block) {
    if (block != 0 && block != 128) return top_fail(c, TILE_ERR_USER, "block: %d is not 0 (per row) or 128 (1x128 blocks)", block);
    return true;
}

tile_status tile_op_quantize_fp8(const char *target, const tile_tensor *x, tile_dtype dtype, int block, tile_tensor *q, tile_tensor *scale,
                                 char **error) {
    BEGIN("quantize_fp8");
    if (!top_check_tensor(&c, "x", x) || !top_check_dtype(&c, "x", x, op_->dtypes) || !top_check_rank(&c, "x", x, 2, 2) || !fp8_block(&c, block))
        return top_end(&c, error);
    if (dtype != TILE_DT_FP8_E4M3 && dtype != TILE_DT_FP8_E5M2) {
        top_fail(&c, TILE_ERR_USER, "dtype: must be float8_e4m3 or float8_e5m2");
        return top_end(&c, error);
    }
    int64_t M = x->shape[0], N = x->shape[1], NS = (N + 127) / 128, ss[2] = {M, NS};
    if (!top_prepare_out(&c, "q", q, dtype, 2, x->shape) || !top_prepare_out(&c, "scale", scale, TILE_DT_F32, block ? 2 : 1, ss) || M * N == 0)
        return top_end(&c, error);
    top_defs d;
    top_defs_init(&d);
    top_def_dt(&d, "x_dtype", x->dtype);
    top_def_dt(&d, "q_dtype", dtype);
    top_def_str(&d, "fmax", dtype == TILE_DT_FP8_E4M3 ? "448.0" : "57344.0");
    top_def_int(&d, "per_block", block != 0);
    if (!block) top_def_int(&d, "NS", 1); /* bound by the scale's shape per block; unused per row */
    top_kernel *k;
    if (top_kernel_get(&c, op_->src, op_->factory, &d, &k)) {
        tile_tensor p[3] = {*x, *q, *scale};
        top_kernel_run(&c, k, p, 3, NULL);
    }
    return top_end(&c, error);
}

tile_status tile_op_dequantize_fp8(const char *target, const tile_tensor *qt, const tile_tensor *scale, int block, tile_dtype dtype, tile_tensor *out,
                                   char **error) {
    BEGIN("dequantize_fp8");
    if (!top_check_tensor(&c, "q", qt) || !top_check_dtype(&c, "q", qt, op_->dtypes) || !top_check_rank(&c, "q", qt, 2, 2) || !fp8_block(&c, block) ||
        !top_check_tensor(&c, "scale", scale) || !top_check_dtype(&c, "scale", scale, TOPD(F32)))
        return top_end(&c, error);
    int64_t M = qt->shape[0], N = qt->shape[1], NS = (N + 127) / 128;
    bool ok = block ? scale->rank == 2 && scale->shape[0] == M && scale->shape[1] == NS : scale->rank == 1 && scale->shape[0] == M;
    if (!ok) {
        char a[128];
        top_shape_str(a, sizeof a, scale->rank, scale->shape);
        top_fail(&c, TILE_ERR_USER, "scale: shape %s; expected [%lld%s%lld]", a, (long long)M, block ? ", " : "", block ? (long long)NS : 0LL);
        return top_end(&c, error);
    }
    if (!(TOPD_MM & (1u << dtype))) {
        top_fail(&c, TILE_ERR_USER, "dtype: %s is not one of float32, float16, bfloat16", tile_dtype_name(dtype));
        return top_end(&c, error);
    }
    if (!top_prepare_out(&c, "out", out, dtype, 2, qt->shape) || M * N == 0) return top_end(&c, error);
    top_defs d;
    top_defs_init(&d);
    top_def_dt(&d, "q_dtype", qt->dtype);
    top_def_dt(&d, "y_dtype", dtype);
    top_def_int(&d, "per_block", block != 0);
    if (!block) top_def_int(&d, "NS", 1);
    top_kernel *k;
    if (top_kernel_get(&c, op_->src, op_->factory, &d, &k)) {
        tile_tensor p[3] = {*qt, *scale, *out};
        top_kernel_run(&c, k, p, 3, NULL);
    }
    return top_end(&c, error);
}

/* ---------- batch norm: statistics by the reduction operators, then two broadcast passes ---------- */
static bool unary_into(top_ctx *c, const char *op, const tile_tensor *x, tile_tensor *out) {
    char *e = NULL;
    if (tile_op_unary(c->target, op, x, out, &e) == TILE_OK) return true;
    top_fail(c, TILE_ERR_USER, "%s", e ? e : op);
    tile_free(e);
    return false;
}

tile_status tile_op_batch_norm(const char *target, const tile_tensor *x, const tile_tensor *weight, const tile_tensor *bias,
                               const tile_tensor *running_mean, const tile_tensor *running_var, int training, double eps, tile_tensor *out,
                               tile_tensor *save_mean, tile_tensor *save_rstd, char **error) {
    BEGIN("batch_norm");
    if (!top_check_tensor(&c, "x", x) || !top_check_dtype(&c, "x", x, op_->dtypes) || !top_check_rank(&c, "x", x, 2, 8)) return top_end(&c, error);
    int64_t C_ = x->shape[1];
    const char *names[4] = {"weight", "bias", "running_mean", "running_var"};
    const tile_tensor *vecs[4] = {weight, bias, running_mean, running_var};
    for (int i = 0; i < 4; i++) {
        if (!vecs[i]) continue;
        if (!top_check_tensor(&c, names[i], vecs[i]) || !top_check_dtype(&c, names[i], vecs[i], TOPD_FLT)) return top_end(&c, error);
        if (vecs[i]->rank != 1 || vecs[i]->shape[0] != C_) {
            top_fail(&c, TILE_ERR_USER, "%s: expected shape [%lld] (x's channels)", names[i], (long long)C_);
            return top_end(&c, error);
        }
    }
    if (!training && (!running_mean || !running_var)) {
        top_fail(&c, TILE_ERR_USER, "running_mean, running_var: needed when training is 0");
        return top_end(&c, error);
    }
    int64_t cs[1] = {C_};
    if (!top_prepare_out(&c, "out", out, x->dtype, x->rank, x->shape)) return top_end(&c, error);
    if (save_mean && !top_prepare_out(&c, "save_mean", save_mean, TILE_DT_F32, 1, cs)) return top_end(&c, error);
    if (save_rstd && !top_prepare_out(&c, "save_rstd", save_rstd, TILE_DT_F32, 1, cs)) return top_end(&c, error);
    if (top_numel(x) == 0) return top_end(&c, error);
    tile_tensor mean = {0}, var = {0}, rstd = {0}, scale = {0}, shift = {0}, tmp = {0}, xf = {0}, ms = {0}, prod = {0};
    tile_dtype acc = top_compute_dtype(x->dtype);
    int dims[8], nd = 0;
    for (int d = 0; d < x->rank; d++)
        if (d != 1) dims[nd++] = d;
    bool ok;
    if (training) {
        /* batch statistics over every dim but the channels (biased variance) */
        ok = top_temp(&c, &xf, acc, x->rank, x->shape) && top_convert(&c, x, &xf) && top_reduce_into(&c, "mean", &xf, dims, nd, false, &mean);
        char *e = NULL;
        if (ok && tile_op_var(c.target, "var", &xf, dims, nd, 0.0, 0, &var, &e) != TILE_OK) {
            top_fail(&c, TILE_ERR_USER, "%s", e);
            tile_free(e);
            ok = false;
        }
    } else {
        ok = top_temp(&c, &mean, acc, 1, cs) && top_convert(&c, running_mean, &mean) && top_temp(&c, &var, acc, 1, cs) && top_convert(&c, running_var, &var);
    }
    /* rstd = 1 / sqrt(var + eps); scale = rstd * weight; shift = bias - mean * scale */
    tile_tensor epst = {0};
    double epsv = eps;
    float epsf = (float)eps;
    epst = (tile_tensor){acc == TILE_DT_F64 ? (void *)&epsv : (void *)&epsf, acc == TILE_DT_F64 ? TILE_DT_F64 : TILE_DT_F32, 0, {0}};
    ok = ok && top_binary_into(&c, "add", &var, &epst, &tmp) && unary_into(&c, "rsqrt", &tmp, &rstd);
    top_free(&tmp);
    if (ok && weight) ok = top_binary_into(&c, "mul", &rstd, weight, &scale);
    else if (ok) ok = top_temp(&c, &scale, rstd.dtype, 1, cs) && top_convert(&c, &rstd, &scale);
    ok = ok && top_binary_into(&c, "mul", &mean, &scale, &ms);
    if (ok && bias) ok = top_binary_into(&c, "sub", bias, &ms, &shift);
    else if (ok) ok = unary_into(&c, "neg", &ms, &shift);
    if (ok && save_mean) ok = top_convert(&c, &mean, save_mean);
    if (ok && save_rstd) ok = top_convert(&c, &rstd, save_rstd);
    if (ok) {
        /* out = x * scale + shift, the channel vectors viewed as [C, 1, ..., 1] */
        int64_t vs[8];
        vs[0] = C_;
        for (int d = 2; d < x->rank; d++) vs[d - 1] = 1;
        tile_tensor sv = top_view(&scale, x->rank - 1, vs), hv = top_view(&shift, x->rank - 1, vs);
        ok = top_binary_into(&c, "mul", x, &sv, &prod) && top_binary_into(&c, "add", &prod, &hv, &tmp) && top_convert(&c, &tmp, out);
        top_free(&prod);
        top_free(&tmp);
    }
    tile_tensor *ts[] = {&mean, &var, &rstd, &scale, &shift, &xf, &ms};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++) top_free(ts[i]);
    return top_end(&c, error);
}

/* ---------- random numbers (random.tl) ---------- */
static tile_status rand_entry(const char *target, const char *name, int64_t seed, tile_tensor *out, char **error) {
    BEGIN(name);
    if (!out) {
        top_fail(&c, TILE_ERR_USER, "out: the output tensor is NULL");
        return top_end(&c, error);
    }
    tile_tensor want = *out;
    static char placeholder;
    want.data = &placeholder; /* the shape and dtype are the inputs; data may be NULL */
    if (!top_check_tensor(&c, "out", &want) || !top_check_dtype(&c, "out", out, op_->dtypes) ||
        !top_prepare_out(&c, "out", out, out->dtype, out->rank, out->shape) || top_numel(out) == 0)
        return top_end(&c, error);
    top_defs d;
    top_defs_init(&d);
    top_def_dt(&d, "y_dtype", out->dtype);
    top_def_int(&d, "normal", !strcmp(op_->name, "randn"));
    top_kernel *k;
    if (top_kernel_get(&c, op_->src, op_->factory, &d, &k)) {
        tile_tensor p[2] = {top_view1(out)};
        double sc[2] = {0, (double)seed};
        top_kernel_run(&c, k, p, 2, sc);
    }
    return top_end(&c, error);
}

tile_status tile_op_rand(const char *target, int64_t seed, tile_tensor *out, char **error) { return rand_entry(target, "rand", seed, out, error); }
tile_status tile_op_randn(const char *target, int64_t seed, tile_tensor *out, char **error) { return rand_entry(target, "randn", seed, out, error); }

tile_status tile_op_dropout(const char *target, const tile_tensor *x, double p, int64_t seed, tile_tensor *out, tile_tensor *mask, char **error) {
    BEGIN("dropout");
    if (!top_check_tensor(&c, "x", x) || !top_check_dtype(&c, "x", x, op_->dtypes)) return top_end(&c, error);
    if (!(p >= 0 && p < 1)) {
        top_fail(&c, TILE_ERR_USER, "p: %g is outside [0, 1)", p);
        return top_end(&c, error);
    }
    tile_tensor m = {0};
    if (!top_prepare_out(&c, "out", out, x->dtype, x->rank, x->shape) || (mask && !top_prepare_out(&c, "mask", mask, TILE_DT_BOOL, x->rank, x->shape)) ||
        top_numel(x) == 0)
        return top_end(&c, error);
    if (!mask && !top_temp(&c, &m, TILE_DT_BOOL, x->rank, x->shape)) return top_end(&c, error);
    top_defs d;
    top_defs_init(&d);
    top_def_dt(&d, "dtype", x->dtype);
    top_def_dt(&d, "c_dtype", top_compute_dtype(x->dtype));
    top_kernel *k;
    if (top_kernel_get(&c, op_->src, op_->factory, &d, &k)) {
        tile_tensor p3[5] = {top_view1(x), top_view1(out), top_view1(mask ? mask : &m)};
        double sc[5] = {0, 0, 0, (double)seed, p};
        top_kernel_run(&c, k, p3, 5, sc);
    }
    top_free(&m);
    return top_end(&c, error);
}
