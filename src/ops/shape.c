/* shape.c — data movement: every operator here is planned as views (an offset and strides
 * into its input) and run as strided copies (top_copy_strided, gen/copy.tl), or as the
 * indexed kernels of gen/index.tl. Index tensors are checked on the host (they are host
 * tensors) so that a bad index is an error naming the argument, never a stray access. */
#include <stdlib.h>
#include <string.h>

#include "ops_int.h"

#define BEGIN(name)                                          \
    top_ctx c;                                               \
    const top_op *op_ = top_find(name);                      \
    if (!top_begin(&c, name, op_, target)) return top_end(&c, error)

static bool check_x(top_ctx *c, const top_op *op, const char *arg, const tile_tensor *x) {
    return top_check_tensor(c, arg, x) && top_check_dtype(c, arg, x, op->dtypes);
}

/* out (contiguous, rank/shape) = the view of x at offset xoff with strides xs */
static bool gather_view(top_ctx *c, const tile_tensor *x, int64_t xoff, const int64_t *xs, tile_tensor *out, int rank, const int64_t *shape) {
    int64_t os[8];
    top_strides(rank, shape, os);
    return top_copy_strided(c, x, xoff, xs, out, 0, os, rank, shape);
}

static bool view_out(top_ctx *c, const tile_tensor *x, int64_t xoff, const int64_t *xs, tile_tensor *out, int rank, const int64_t *shape) {
    if (!top_prepare_out(c, "out", out, x->dtype, rank, shape)) return false;
    return gather_view(c, x, xoff, xs, out, rank, shape);
}

tile_status tile_op_reshape(const char *target, const tile_tensor *x, const int64_t *shape, int rank, tile_tensor *out, char **error) {
    BEGIN("reshape");
    if (!check_x(&c, op_, "x", x)) return top_end(&c, error);
    if (rank < 0 || rank > 8 || (rank && !shape)) {
        top_fail(&c, TILE_ERR_USER, "shape: rank %d is outside 0..8", rank);
        return top_end(&c, error);
    }
    int64_t s[8], known = 1;
    int infer = -1;
    for (int d = 0; d < rank; d++) {
        s[d] = shape[d];
        if (s[d] == -1 && infer < 0) infer = d;
        else if (s[d] < 0) {
            top_fail(&c, TILE_ERR_USER, "shape: dimension %d is %lld (one -1 may be inferred, others must be >= 0)", d, (long long)s[d]);
            return top_end(&c, error);
        } else known *= s[d];
    }
    int64_t n = top_numel(x);
    if (infer >= 0) {
        if (known == 0 || n % known) {
            top_fail(&c, TILE_ERR_USER, "shape: cannot infer dimension %d: %lld elements are not a multiple of %lld", infer, (long long)n, (long long)known);
            return top_end(&c, error);
        }
        s[infer] = n / known;
        known = n;
    }
    if (known != n) {
        char a[128], b[128];
        top_shape_str(a, sizeof a, rank, s);
        top_shape_str(b, sizeof b, x->rank, x->shape);
        top_fail(&c, TILE_ERR_USER, "shape: %s has %lld elements, x %s has %lld", a, (long long)known, b, (long long)n);
        return top_end(&c, error);
    }
    if (top_prepare_out(&c, "out", out, x->dtype, rank, s)) top_convert(&c, x, out);
    return top_end(&c, error);
}

static bool permute_impl(top_ctx *c, const tile_tensor *x, const int *perm, tile_tensor *out) {
    int r = x->rank;
    bool seen[8] = {0};
    int64_t xs[8], s[8], ps[8];
    top_strides(r, x->shape, xs);
    for (int d = 0; d < r; d++) {
        int p = perm[d];
        if (p < 0) p += r;
        if (p < 0 || p >= r || seen[p]) return top_fail(c, TILE_ERR_USER, "perm: entry %d (%d) makes it not a permutation of 0..%d", d, perm[d], r - 1);
        seen[p] = true;
        s[d] = x->shape[p];
        ps[d] = xs[p];
    }
    return view_out(c, x, 0, ps, out, r, s);
}

tile_status tile_op_permute(const char *target, const tile_tensor *x, const int *perm, tile_tensor *out, char **error) {
    BEGIN("permute");
    if (check_x(&c, op_, "x", x)) {
        if (!perm && x->rank) top_fail(&c, TILE_ERR_USER, "perm: is NULL");
        else permute_impl(&c, x, perm, out);
    }
    return top_end(&c, error);
}

tile_status tile_op_transpose(const char *target, const tile_tensor *x, int dim0, int dim1, tile_tensor *out, char **error) {
    BEGIN("transpose");
    if (check_x(&c, op_, "x", x) && top_check_dim(&c, "dim0", &dim0, x->rank) && top_check_dim(&c, "dim1", &dim1, x->rank)) {
        int perm[8];
        for (int d = 0; d < 8; d++) perm[d] = d;
        if (x->rank) {
            perm[dim0] = dim1;
            perm[dim1] = dim0;
        }
        permute_impl(&c, x, perm, out);
    }
    return top_end(&c, error);
}

tile_status tile_op_expand(const char *target, const tile_tensor *x, const int64_t *shape, int rank, tile_tensor *out, char **error) {
    BEGIN("expand");
    if (!check_x(&c, op_, "x", x)) return top_end(&c, error);
    if (rank < x->rank || rank > 8) {
        top_fail(&c, TILE_ERR_USER, "shape: rank %d is below x's rank %d (or above 8)", rank, x->rank);
        return top_end(&c, error);
    }
    int64_t xs[8], s[8], es[8];
    top_strides(x->rank, x->shape, xs);
    for (int d = 0; d < rank; d++) {
        int xd = d - (rank - x->rank);
        int64_t want = shape[d];
        if (xd < 0) {
            if (want < 0) {
                top_fail(&c, TILE_ERR_USER, "shape: -1 at new leading dimension %d", d);
                return top_end(&c, error);
            }
            s[d] = want;
            es[d] = 0;
            continue;
        }
        int64_t have = x->shape[xd];
        if (want == -1) want = have;
        if (want != have && have != 1) {
            top_fail(&c, TILE_ERR_USER, "shape: dimension %d is %lld, but x's size there is %lld (only size-1 dimensions expand)", d, (long long)want, (long long)have);
            return top_end(&c, error);
        }
        if (want < 0) {
            top_fail(&c, TILE_ERR_USER, "shape: dimension %d is negative", d);
            return top_end(&c, error);
        }
        s[d] = want;
        es[d] = have == 1 && want != 1 ? 0 : xs[xd];
    }
    view_out(&c, x, 0, es, out, rank, s);
    return top_end(&c, error);
}

/* Python slice rules for [start:end:step], step >= 1: the length and clamped start */
static bool slice_range(top_ctx *c, int64_t size, int64_t *start, int64_t end, int64_t step, int64_t *len) {
    if (step < 1) return top_fail(c, TILE_ERR_USER, "step: must be at least 1, got %lld", (long long)step);
    int64_t s = *start, e = end;
    if (s < 0) s += size;
    if (e < 0) e += size;
    if (s < 0) s = 0;
    if (s > size) s = size;
    if (e < s) e = s;
    if (e > size) e = size;
    *start = s;
    *len = (e - s + step - 1) / step;
    return true;
}

tile_status tile_op_slice(const char *target, const tile_tensor *x, int dim, int64_t start, int64_t end, int64_t step, tile_tensor *out,
                          char **error) {
    BEGIN("slice");
    if (!check_x(&c, op_, "x", x) || !top_check_rank(&c, "x", x, 1, 8) || !top_check_dim(&c, "dim", &dim, x->rank)) return top_end(&c, error);
    int64_t len;
    if (!slice_range(&c, x->shape[dim], &start, end, step, &len)) return top_end(&c, error);
    int64_t xs[8], s[8];
    top_strides(x->rank, x->shape, xs);
    memcpy(s, x->shape, sizeof s);
    s[dim] = len;
    int64_t off = start * xs[dim];
    xs[dim] *= step;
    view_out(&c, x, off, xs, out, x->rank, s);
    return top_end(&c, error);
}

tile_status tile_op_select(const char *target, const tile_tensor *x, int dim, int64_t index, tile_tensor *out, char **error) {
    BEGIN("select");
    if (!check_x(&c, op_, "x", x) || !top_check_rank(&c, "x", x, 1, 8) || !top_check_dim(&c, "dim", &dim, x->rank)) return top_end(&c, error);
    int64_t n = x->shape[dim];
    if (index < -n || index >= n) {
        top_fail(&c, TILE_ERR_USER, "index: %lld is out of range for dimension %d of size %lld", (long long)index, dim, (long long)n);
        return top_end(&c, error);
    }
    if (index < 0) index += n;
    int64_t xs[8], s[8], ss[8];
    top_strides(x->rank, x->shape, xs);
    int r = 0;
    for (int d = 0; d < x->rank; d++)
        if (d != dim) {
            s[r] = x->shape[d];
            ss[r++] = xs[d];
        }
    view_out(&c, x, index * xs[dim], ss, out, r, s);
    return top_end(&c, error);
}

tile_status tile_op_flip(const char *target, const tile_tensor *x, const int *dims, int ndims, tile_tensor *out, char **error) {
    BEGIN("flip");
    if (!check_x(&c, op_, "x", x)) return top_end(&c, error);
    int64_t xs[8], off = 0;
    top_strides(x->rank, x->shape, xs);
    bool seen[8] = {0};
    for (int i = 0; i < ndims; i++) {
        int d = dims[i];
        if (!top_check_dim(&c, "dims", &d, x->rank)) return top_end(&c, error);
        if (seen[d]) {
            top_fail(&c, TILE_ERR_USER, "dims: dimension %d appears twice", d);
            return top_end(&c, error);
        }
        seen[d] = true;
        if (x->shape[d] > 0) off += (x->shape[d] - 1) * xs[d];
        xs[d] = -xs[d];
    }
    view_out(&c, x, off, xs, out, x->rank, x->shape);
    return top_end(&c, error);
}

tile_status tile_op_repeat(const char *target, const tile_tensor *x, const int64_t *repeats, int n, tile_tensor *out, char **error) {
    BEGIN("repeat");
    if (!check_x(&c, op_, "x", x)) return top_end(&c, error);
    if (n < x->rank || n > 8) {
        top_fail(&c, TILE_ERR_USER, "repeats: %d entries, fewer than x's rank %d (or more than 8)", n, x->rank);
        return top_end(&c, error);
    }
    /* out viewed as (r0, s0, r1, s1, ...): the repeat index has stride 0 in x */
    int64_t xs[8], s[8], is[16], ish[16], os[8];
    top_strides(x->rank, x->shape, xs);
    for (int d = 0; d < n; d++) {
        int xd = d - (n - x->rank);
        int64_t sz = xd < 0 ? 1 : x->shape[xd];
        if (repeats[d] < 0) {
            top_fail(&c, TILE_ERR_USER, "repeats: entry %d is negative", d);
            return top_end(&c, error);
        }
        s[d] = sz * repeats[d];
        ish[2 * d] = repeats[d];
        ish[2 * d + 1] = sz;
        is[2 * d] = 0;
        is[2 * d + 1] = xd < 0 ? 0 : xs[xd];
    }
    if (!top_prepare_out(&c, "out", out, x->dtype, n, s)) return top_end(&c, error);
    int64_t ostr[16], tmp[16];
    top_strides(2 * n, ish, tmp);
    (void)os;
    for (int d = 0; d < 2 * n; d++) ostr[d] = tmp[d];
    top_copy_strided(&c, x, 0, is, out, 0, ostr, 2 * n, ish);
    return top_end(&c, error);
}

tile_status tile_op_diagonal(const char *target, const tile_tensor *x, int64_t offset, int dim1, int dim2, tile_tensor *out, char **error) {
    BEGIN("diagonal");
    if (!check_x(&c, op_, "x", x) || !top_check_rank(&c, "x", x, 2, 8) || !top_check_dim(&c, "dim1", &dim1, x->rank) ||
        !top_check_dim(&c, "dim2", &dim2, x->rank))
        return top_end(&c, error);
    if (dim1 == dim2) {
        top_fail(&c, TILE_ERR_USER, "dim2: must differ from dim1 (both %d)", dim1);
        return top_end(&c, error);
    }
    int64_t xs[8], s[8], ss[8], s1 = x->shape[dim1], s2 = x->shape[dim2], len, off;
    top_strides(x->rank, x->shape, xs);
    if (offset >= 0) {
        len = s2 - offset < s1 ? s2 - offset : s1;
        off = offset * xs[dim2];
    } else {
        len = s1 + offset < s2 ? s1 + offset : s2;
        off = -offset * xs[dim1];
    }
    if (len < 0) len = 0;
    if (len == 0) off = 0;
    int r = 0;
    for (int d = 0; d < x->rank; d++)
        if (d != dim1 && d != dim2) {
            s[r] = x->shape[d];
            ss[r++] = xs[d];
        }
    s[r] = len;
    ss[r++] = xs[dim1] + xs[dim2];
    view_out(&c, x, off, ss, out, r, s);
    return top_end(&c, error);
}

tile_status tile_op_as_strided(const char *target, const tile_tensor *x, const int64_t *shape, const int64_t *strides, int rank, int64_t offset,
                               tile_tensor *out, char **error) {
    BEGIN("as_strided");
    if (!check_x(&c, op_, "x", x)) return top_end(&c, error);
    if (rank < 0 || rank > 8) {
        top_fail(&c, TILE_ERR_USER, "shape: rank %d is outside 0..8", rank);
        return top_end(&c, error);
    }
    int64_t lo = offset, hi = offset, n = 1;
    for (int d = 0; d < rank; d++) {
        if (shape[d] < 0) {
            top_fail(&c, TILE_ERR_USER, "shape: dimension %d is negative", d);
            return top_end(&c, error);
        }
        n *= shape[d];
        if (shape[d] > 0) {
            if (strides[d] > 0) hi += (shape[d] - 1) * strides[d];
            else lo += (shape[d] - 1) * strides[d];
        }
    }
    if (n > 0 && (lo < 0 || hi >= top_numel(x))) {
        top_fail(&c, TILE_ERR_USER, "strides: the view reaches elements %lld..%lld, outside x's %lld elements", (long long)lo, (long long)hi,
                 (long long)top_numel(x));
        return top_end(&c, error);
    }
    view_out(&c, x, offset, strides, out, rank, shape);
    return top_end(&c, error);
}

/* pieces along dim: checks the pieces against the first; returns the result dtype */
static bool cat_check(top_ctx *c, const top_op *op, const tile_tensor *xs, int n, int *dim, bool stack, tile_dtype *dt) {
    if (n < 1 || !xs) return top_fail(c, TILE_ERR_USER, "xs: at least one tensor is needed");
    char name[32];
    top_rt r;
    top_rt_init(&r);
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "xs[%d]", i);
        if (!check_x(c, op, name, &xs[i])) return false;
        r.dim = top_promote(r.dim, xs[i].dtype);
    }
    *dt = r.dim;
    if (*dt == TILE_DT_INVALID) return top_fail(c, TILE_ERR_USER, "xs: the tensors' dtypes have no common dtype");
    int rank = xs[0].rank;
    if (!stack && rank == 0) return top_fail(c, TILE_ERR_USER, "xs[0]: zero-dimensional tensors cannot be concatenated");
    if (!top_check_dim(c, "dim", dim, stack ? rank + 1 : rank)) return false;
    for (int i = 1; i < n; i++) {
        snprintf(name, sizeof name, "xs[%d]", i);
        if (xs[i].rank != rank) return top_fail(c, TILE_ERR_USER, "%s: rank %d differs from xs[0]'s %d", name, xs[i].rank, rank);
        for (int d = 0; d < rank; d++)
            if ((stack || d != *dim) && xs[i].shape[d] != xs[0].shape[d])
                return top_fail(c, TILE_ERR_USER, "%s: size %lld in dimension %d differs from xs[0]'s %lld", name, (long long)xs[i].shape[d], d,
                                (long long)xs[0].shape[d]);
    }
    return true;
}

static bool place_piece(top_ctx *c, const tile_tensor *x, tile_tensor *out, int64_t ooff, const int64_t *ostr_for_x) {
    int64_t xs[8];
    top_strides(x->rank, x->shape, xs);
    return top_copy_strided(c, x, 0, xs, out, ooff, ostr_for_x, x->rank, x->shape);
}

tile_status tile_op_cat(const char *target, const tile_tensor *xs, int n, int dim, tile_tensor *out, char **error) {
    BEGIN("cat");
    tile_dtype dt = TILE_DT_INVALID;
    if (!cat_check(&c, op_, xs, n, &dim, false, &dt)) return top_end(&c, error);
    int64_t s[8];
    memcpy(s, xs[0].shape, sizeof s);
    s[dim] = 0;
    for (int i = 0; i < n; i++) s[dim] += xs[i].shape[dim];
    if (!top_prepare_out(&c, "out", out, dt, xs[0].rank, s)) return top_end(&c, error);
    int64_t os[8], at = 0;
    top_strides(out->rank, s, os);
    for (int i = 0; i < n && c.st == TILE_OK; i++) {
        place_piece(&c, &xs[i], out, at * os[dim], os);
        at += xs[i].shape[dim];
    }
    return top_end(&c, error);
}

tile_status tile_op_stack(const char *target, const tile_tensor *xs, int n, int dim, tile_tensor *out, char **error) {
    BEGIN("stack");
    tile_dtype dt = TILE_DT_INVALID;
    if (!cat_check(&c, op_, xs, n, &dim, true, &dt)) return top_end(&c, error);
    int r = xs[0].rank;
    if (r + 1 > 8) {
        top_fail(&c, TILE_ERR_USER, "xs[0]: rank %d leaves no room for a new dimension", r);
        return top_end(&c, error);
    }
    int64_t s[8];
    for (int d = 0, k = 0; d <= r; d++) s[d] = d == dim ? n : xs[0].shape[k++];
    if (!top_prepare_out(&c, "out", out, dt, r + 1, s)) return top_end(&c, error);
    int64_t os[8], px[8];
    top_strides(r + 1, s, os);
    for (int d = 0, k = 0; d <= r; d++)
        if (d != dim) px[k++] = os[d];
    for (int i = 0; i < n && c.st == TILE_OK; i++) place_piece(&c, &xs[i], out, i * os[dim], px);
    return top_end(&c, error);
}

tile_status tile_op_split(const char *target, const tile_tensor *x, const int64_t *sizes, int n, int dim, tile_tensor *outs, char **error) {
    BEGIN("split");
    if (!check_x(&c, op_, "x", x) || !top_check_rank(&c, "x", x, 1, 8) || !top_check_dim(&c, "dim", &dim, x->rank)) return top_end(&c, error);
    int64_t total = 0;
    for (int i = 0; i < n; i++) {
        if (sizes[i] < 0) {
            top_fail(&c, TILE_ERR_USER, "sizes: entry %d is negative", i);
            return top_end(&c, error);
        }
        total += sizes[i];
    }
    if (total != x->shape[dim]) {
        top_fail(&c, TILE_ERR_USER, "sizes: they add up to %lld, but x has %lld in dimension %d", (long long)total, (long long)x->shape[dim], dim);
        return top_end(&c, error);
    }
    int64_t xs[8], s[8], at = 0;
    top_strides(x->rank, x->shape, xs);
    memcpy(s, x->shape, sizeof s);
    for (int i = 0; i < n && c.st == TILE_OK; i++) {
        char name[32];
        snprintf(name, sizeof name, "outs[%d]", i);
        s[dim] = sizes[i];
        if (top_prepare_out(&c, name, &outs[i], x->dtype, x->rank, s)) gather_view(&c, x, at * xs[dim], xs, &outs[i], x->rank, s);
        at += sizes[i];
    }
    return top_end(&c, error);
}

tile_status tile_op_pad(const char *target, const tile_tensor *x, const int64_t *pad, int npad, tile_op_scalar value, tile_tensor *out,
                        char **error) {
    BEGIN("pad");
    if (!check_x(&c, op_, "x", x)) return top_end(&c, error);
    if (npad % 2 || npad > 2 * x->rank) {
        top_fail(&c, TILE_ERR_USER, "pad: %d entries; expected an even number, at most twice x's rank %d", npad, x->rank);
        return top_end(&c, error);
    }
    int r = x->rank;
    int64_t lo[8] = {0}, hi[8] = {0}, s[8];
    bool any_pos = false;
    for (int i = 0; i < npad / 2; i++) {
        lo[r - 1 - i] = pad[2 * i];
        hi[r - 1 - i] = pad[2 * i + 1];
    }
    for (int d = 0; d < r; d++) {
        s[d] = x->shape[d] + lo[d] + hi[d];
        if (s[d] < 0) {
            top_fail(&c, TILE_ERR_USER, "pad: dimension %d would have size %lld", d, (long long)s[d]);
            return top_end(&c, error);
        }
        if (lo[d] > 0 || hi[d] > 0) any_pos = true;
    }
    if (!top_prepare_out(&c, "out", out, x->dtype, r, s)) return top_end(&c, error);
    if (any_pos && !top_fill(&c, out, value)) return top_end(&c, error);
    int64_t xs[8], os[8], len[8], xoff = 0, ooff = 0;
    top_strides(r, x->shape, xs);
    top_strides(r, s, os);
    for (int d = 0; d < r; d++) {
        int64_t cut_lo = lo[d] < 0 ? -lo[d] : 0, cut_hi = hi[d] < 0 ? -hi[d] : 0;
        len[d] = x->shape[d] - cut_lo - cut_hi;
        if (len[d] <= 0) return top_end(&c, error);
        xoff += cut_lo * xs[d];
        ooff += (lo[d] > 0 ? lo[d] : 0) * os[d];
    }
    top_copy_strided(&c, x, xoff, xs, out, ooff, os, r, len);
    return top_end(&c, error);
}

static bool scatter_region(top_ctx *c, const tile_tensor *x, const tile_tensor *src, int64_t off, const int64_t *str, int rank, const int64_t *shape,
                           tile_tensor *out) {
    if (!top_check_tensor(c, "src", src)) return false;
    bool same = src->rank == rank;
    for (int d = 0; same && d < rank; d++) same = src->shape[d] == shape[d];
    if (!same) {
        char a[128], b[128];
        top_shape_str(a, sizeof a, src->rank, src->shape);
        top_shape_str(b, sizeof b, rank, shape);
        return top_fail(c, TILE_ERR_USER, "src: shape %s does not match the region's %s", a, b);
    }
    if (!top_prepare_out(c, "out", out, x->dtype, x->rank, x->shape)) return false;
    if (out->data != x->data && !top_convert(c, x, out)) return false;
    int64_t ss[8];
    top_strides(rank, shape, ss);
    return top_copy_strided(c, src, 0, ss, out, off, str, rank, shape);
}

tile_status tile_op_slice_scatter(const char *target, const tile_tensor *x, const tile_tensor *src, int dim, int64_t start, int64_t end,
                                  int64_t step, tile_tensor *out, char **error) {
    BEGIN("slice_scatter");
    if (!check_x(&c, op_, "x", x) || !top_check_rank(&c, "x", x, 1, 8) || !top_check_dim(&c, "dim", &dim, x->rank)) return top_end(&c, error);
    int64_t len;
    if (!slice_range(&c, x->shape[dim], &start, end, step, &len)) return top_end(&c, error);
    int64_t xs[8], s[8];
    top_strides(x->rank, x->shape, xs);
    memcpy(s, x->shape, sizeof s);
    s[dim] = len;
    int64_t off = start * xs[dim];
    xs[dim] *= step;
    scatter_region(&c, x, src, off, xs, x->rank, s, out);
    return top_end(&c, error);
}

tile_status tile_op_select_scatter(const char *target, const tile_tensor *x, const tile_tensor *src, int dim, int64_t index, tile_tensor *out,
                                   char **error) {
    BEGIN("select_scatter");
    if (!check_x(&c, op_, "x", x) || !top_check_rank(&c, "x", x, 1, 8) || !top_check_dim(&c, "dim", &dim, x->rank)) return top_end(&c, error);
    int64_t n = x->shape[dim];
    if (index < -n || index >= n) {
        top_fail(&c, TILE_ERR_USER, "index: %lld is out of range for dimension %d of size %lld", (long long)index, dim, (long long)n);
        return top_end(&c, error);
    }
    if (index < 0) index += n;
    int64_t xs[8], s[8], ss[8];
    top_strides(x->rank, x->shape, xs);
    int r = 0;
    for (int d = 0; d < x->rank; d++)
        if (d != dim) {
            s[r] = x->shape[d];
            ss[r++] = xs[d];
        }
    scatter_region(&c, x, src, index * xs[dim], ss, r, s, out);
    return top_end(&c, error);
}

/* ---------- indexed kernels ---------- */
/* every index in [0, n): an error naming the argument and the first bad position */
static bool check_indices(top_ctx *c, const char *arg, const tile_tensor *idx, int64_t n) {
    if (!top_check_tensor(c, arg, idx) || !top_check_dtype(c, arg, idx, TOPD_IDX)) return false;
    int64_t m = top_numel(idx);
    tile_tensor h;
    if (!top_host_copy(c, arg, idx, &h)) return false;
    for (int64_t i = 0; i < m; i++) {
        int64_t v = tile_load_i(h.dtype, h.data, (size_t)i);
        if (v < 0 || v >= n) {
            top_host_release(&h, idx);
            return top_fail(c, TILE_ERR_USER, "%s: entry %lld is %lld, outside [0, %lld)", arg, (long long)i, (long long)v, (long long)n);
        }
    }
    top_host_release(&h, idx);
    return true;
}

static void split3(const tile_tensor *x, int dim, int64_t *o, int64_t *r, int64_t *i) {
    *o = *i = 1;
    for (int d = 0; d < dim; d++) *o *= x->shape[d];
    for (int d = dim + 1; d < x->rank; d++) *i *= x->shape[d];
    *r = x->rank ? x->shape[dim] : 1;
}

static int64_t block_for(int64_t n) { return n <= 64 ? 64 : n <= 256 ? 256 : 1024; }

static bool run_index_select(top_ctx *c, const tile_tensor *x, int64_t O, int64_t R, int64_t I, const tile_tensor *idx, tile_tensor *out) {
    int64_t K = top_numel(idx);
    if (O * K * I == 0) return true;
    top_defs d;
    top_defs_init(&d);
    top_def_int(&d, "block", block_for(I));
    top_def_dt(&d, "x_dtype", x->dtype);
    top_def_dt(&d, "i_dtype", idx->dtype);
    top_kernel *k;
    if (!top_kernel_get(c, "gen/index.tl", "index_select", &d, &k)) return false;
    tile_tensor p[3] = {top_view3(x, O, R, I), top_view1(idx), top_view3(out, O, K, I)};
    return top_kernel_run(c, k, p, 3, NULL);
}

tile_status tile_op_index_select(const char *target, const tile_tensor *x, int dim, const tile_tensor *index, tile_tensor *out, char **error) {
    BEGIN("index_select");
    if (!check_x(&c, op_, "x", x) || !top_check_dim(&c, "dim", &dim, x->rank) || !top_check_tensor(&c, "index", index) ||
        !top_check_rank(&c, "index", index, 0, 1))
        return top_end(&c, error);
    int64_t O, R, I;
    split3(x, dim, &O, &R, &I);
    if (!check_indices(&c, "index", index, R)) return top_end(&c, error);
    int64_t s[8];
    memcpy(s, x->shape, sizeof s);
    int rank = x->rank;
    if (rank) s[dim] = top_numel(index);
    else if (index->rank == 1) { rank = 1; s[0] = top_numel(index); }
    if (top_prepare_out(&c, "out", out, x->dtype, rank, s)) run_index_select(&c, x, O, R, I, index, out);
    return top_end(&c, error);
}

tile_status tile_op_embedding(const char *target, const tile_tensor *weight, const tile_tensor *indices, tile_tensor *out, char **error) {
    BEGIN("embedding");
    if (!check_x(&c, op_, "weight", weight) || !top_check_rank(&c, "weight", weight, 2, 2) || !check_indices(&c, "indices", indices, weight->shape[0]))
        return top_end(&c, error);
    if (indices->rank > 7) {
        top_fail(&c, TILE_ERR_USER, "indices: rank %d leaves no room for the embedding dimension", indices->rank);
        return top_end(&c, error);
    }
    int64_t s[8];
    for (int d = 0; d < indices->rank; d++) s[d] = indices->shape[d];
    s[indices->rank] = weight->shape[1];
    if (top_prepare_out(&c, "out", out, weight->dtype, indices->rank + 1, s))
        run_index_select(&c, weight, 1, weight->shape[0], weight->shape[1], indices, out);
    return top_end(&c, error);
}

/* index's sizes against x's outside dim (<=); true if they are equal */
static bool index_fits(top_ctx *c, const char *arg, const tile_tensor *idx, const tile_tensor *x, int dim, bool *equal) {
    if (idx->rank != x->rank) return top_fail(c, TILE_ERR_USER, "%s: rank %d differs from x's %d", arg, idx->rank, x->rank);
    *equal = true;
    for (int d = 0; d < x->rank; d++) {
        if (d == dim) continue;
        if (idx->shape[d] > x->shape[d])
            return top_fail(c, TILE_ERR_USER, "%s: size %lld in dimension %d exceeds x's %lld", arg, (long long)idx->shape[d], d, (long long)x->shape[d]);
        if (idx->shape[d] != x->shape[d]) *equal = false;
    }
    return true;
}

/* a contiguous copy of x narrowed to `shape` outside dim (x's full size in dim) */
static bool narrow_copy(top_ctx *c, const tile_tensor *x, int dim, const tile_tensor *like, tile_tensor *tmp) {
    int64_t s[8], xs[8];
    memcpy(s, like->shape, sizeof s);
    s[dim] = x->shape[dim];
    top_strides(x->rank, x->shape, xs);
    if (!top_temp(c, tmp, x->dtype, x->rank, s)) return false;
    return gather_view(c, x, 0, xs, tmp, x->rank, s);
}

tile_status tile_op_gather(const char *target, const tile_tensor *x, int dim, const tile_tensor *index, tile_tensor *out, char **error) {
    BEGIN("gather");
    bool equal;
    if (!check_x(&c, op_, "x", x) || !top_check_dim(&c, "dim", &dim, x->rank) || !top_check_tensor(&c, "index", index) ||
        !index_fits(&c, "index", index, x, dim, &equal) || !check_indices(&c, "index", index, x->rank ? x->shape[dim] : 1))
        return top_end(&c, error);
    if (!top_prepare_out(&c, "out", out, x->dtype, index->rank, index->shape) || top_numel(index) == 0) return top_end(&c, error);
    tile_tensor tmp = {0};
    const tile_tensor *src = x;
    if (!equal) {
        if (!narrow_copy(&c, x, dim, index, &tmp)) return top_end(&c, error);
        src = &tmp;
    }
    int64_t O, R, I, K = index->rank ? index->shape[dim] : 1;
    split3(src, dim, &O, &R, &I);
    top_defs d;
    top_defs_init(&d);
    top_def_int(&d, "block", block_for(I));
    top_def_dt(&d, "x_dtype", x->dtype);
    top_def_dt(&d, "i_dtype", index->dtype);
    top_kernel *k;
    if (top_kernel_get(&c, "gen/index.tl", "gather", &d, &k)) {
        tile_tensor p[3] = {top_view3(src, O, R, I), top_view3(index, O, K, I), top_view3(out, O, K, I)};
        top_kernel_run(&c, k, p, 3, NULL);
    }
    top_free(&tmp);
    return top_end(&c, error);
}

tile_status tile_op_scatter(const char *target, const tile_tensor *x, int dim, const tile_tensor *index, const tile_tensor *src, const char *reduce,
                            tile_tensor *out, char **error) {
    BEGIN("scatter");
    bool equal;
    int add = 0;
    if (reduce && strcmp(reduce, "none")) {
        if (!strcmp(reduce, "add")) add = 1;
        else {
            top_fail(&c, TILE_ERR_USER, "reduce: '%s' is not one of none, add", reduce);
            return top_end(&c, error);
        }
    }
    if (!check_x(&c, op_, "x", x) || !top_check_dim(&c, "dim", &dim, x->rank) || !top_check_tensor(&c, "index", index) ||
        !index_fits(&c, "index", index, x, dim, &equal) || !check_indices(&c, "index", index, x->rank ? x->shape[dim] : 1) ||
        !top_check_tensor(&c, "src", src))
        return top_end(&c, error);
    if (src->dtype != x->dtype) {
        top_fail(&c, TILE_ERR_USER, "src: dtype %s differs from x's %s", tile_dtype_name(src->dtype), tile_dtype_name(x->dtype));
        return top_end(&c, error);
    }
    if (src->rank) {
        bool ok = src->rank == index->rank;
        for (int d = 0; ok && d < index->rank; d++) ok = index->shape[d] <= src->shape[d];
        if (!ok) {
            char a[128], b[128];
            top_shape_str(a, sizeof a, src->rank, src->shape);
            top_shape_str(b, sizeof b, index->rank, index->shape);
            top_fail(&c, TILE_ERR_USER, "src: shape %s is smaller than index's %s (or of another rank)", a, b);
            return top_end(&c, error);
        }
    }
    if (!top_prepare_out(&c, "out", out, x->dtype, x->rank, x->shape)) return top_end(&c, error);
    if (out->data != x->data && !top_convert(&c, x, out)) return top_end(&c, error);
    if (top_numel(index) == 0) return top_end(&c, error);
    /* src as a contiguous tensor of index's shape (a scalar src is broadcast) */
    tile_tensor s = {0}, region = {0};
    int64_t is[8], ss[8], xs[8];
    top_strides(index->rank, index->shape, is);
    if (!top_temp(&c, &s, x->dtype, index->rank, index->shape)) return top_end(&c, error);
    if (src->rank == 0) {
        int64_t zero[8] = {0};
        top_copy_strided(&c, src, 0, zero, &s, 0, is, index->rank, index->shape);
    } else {
        top_strides(src->rank, src->shape, ss);
        top_copy_strided(&c, src, 0, ss, &s, 0, is, index->rank, index->shape);
    }
    /* the region of out that index addresses: out itself, or a narrowed copy written back */
    tile_tensor *dst = out;
    top_strides(x->rank, x->shape, xs);
    if (!equal && c.st == TILE_OK) {
        if (!narrow_copy(&c, out, dim, index, &region)) goto done;
        dst = &region;
    }
    int64_t O, R, I, K = index->rank ? index->shape[dim] : 1;
    split3(dst, dim, &O, &R, &I);
    top_defs d;
    top_defs_init(&d);
    top_def_int(&d, "block", block_for(I) > 128 ? 128 : block_for(I));
    top_def_dt(&d, "x_dtype", x->dtype);
    top_def_dt(&d, "i_dtype", index->dtype);
    top_def_int(&d, "f0", add);
    top_kernel *k;
    if (c.st == TILE_OK && top_kernel_get(&c, "gen/index.tl", "scatter", &d, &k)) {
        tile_tensor p[3] = {top_view3(&s, O, K, I), top_view3(index, O, K, I), top_view3(dst, O, R, I)};
        if (top_kernel_run(&c, k, p, 3, NULL) && dst == &region) {
            int64_t rs[8];
            top_strides(region.rank, region.shape, rs);
            top_copy_strided(&c, &region, 0, rs, out, 0, xs, region.rank, region.shape);
        }
    }
done:
    top_free(&s);
    top_free(&region);
    return top_end(&c, error);
}

/* ---------- reflection / replication padding ---------- */
/* The output splits, per padded dimension, into the low border, the interior and the high
 * border; every combination of those is one strided copy from x: the interior steps through
 * x, a reflected border steps backwards from the edge (excluding it), a replicated border
 * has stride 0 at the edge element. */
static tile_status pad_mode(const char *target, const char *name, bool reflect, const tile_tensor *x, const int64_t *pad, int npad, tile_tensor *out,
                            char **error) {
    BEGIN(name);
    if (!check_x(&c, op_, "x", x)) return top_end(&c, error);
    if (npad % 2 || npad < 2 || npad > 2 * x->rank) {
        top_fail(&c, TILE_ERR_USER, "pad: %d entries; expected an even number from 2 to twice x's rank %d", npad, x->rank);
        return top_end(&c, error);
    }
    int r = x->rank, k = npad / 2;
    int64_t lo[8] = {0}, hi[8] = {0}, s[8];
    for (int i = 0; i < k; i++) {
        int d = r - 1 - i;
        lo[d] = pad[2 * i];
        hi[d] = pad[2 * i + 1];
        int64_t n = x->shape[d];
        if (lo[d] < 0 || hi[d] < 0) {
            top_fail(&c, TILE_ERR_USER, "pad: negative amounts are not supported by %s", name);
            return top_end(&c, error);
        }
        if (reflect ? (lo[d] >= n || hi[d] >= n) : (n == 0 && (lo[d] || hi[d]))) {
            top_fail(&c, TILE_ERR_USER, "pad: (%lld, %lld) for dimension %d of size %lld; %s", (long long)lo[d], (long long)hi[d], d, (long long)n,
                     reflect ? "reflection needs each amount below the size" : "an empty dimension cannot be replicated");
            return top_end(&c, error);
        }
    }
    for (int d = 0; d < r; d++) s[d] = x->shape[d] + lo[d] + hi[d];
    if (!top_prepare_out(&c, "out", out, x->dtype, r, s) || top_numel(x) == 0) return top_end(&c, error);
    int64_t xs[8], os[8];
    top_strides(r, x->shape, xs);
    top_strides(r, s, os);
    int combos = 1;
    for (int i = 0; i < k; i++) combos *= 3;
    for (int cmb = 0; cmb < combos && c.st == TILE_OK; cmb++) {
        int64_t len[8], xst[8], xoff = 0, ooff = 0;
        bool empty = false;
        int code = cmb;
        for (int d = 0; d < r; d++) {
            int64_t n = x->shape[d];
            int part = 1; /* interior */
            if (d >= r - k) {
                part = code % 3;
                code /= 3;
            }
            if (part == 1) {
                len[d] = n;
                xst[d] = xs[d];
                ooff += lo[d] * os[d];
            } else if (part == 0) {
                len[d] = lo[d];
                xst[d] = reflect ? -xs[d] : 0;
                xoff += (reflect ? lo[d] : 0) * xs[d];
            } else {
                len[d] = hi[d];
                xst[d] = reflect ? -xs[d] : 0;
                xoff += (reflect ? n - 2 : n - 1) * xs[d];
                ooff += (lo[d] + n) * os[d];
            }
            if (len[d] == 0) empty = true;
        }
        if (!empty) top_copy_strided(&c, x, xoff, xst, out, ooff, os, r, len);
    }
    return top_end(&c, error);
}

tile_status tile_op_pad_reflect(const char *target, const tile_tensor *x, const int64_t *pad, int npad, tile_tensor *out, char **error) {
    return pad_mode(target, "pad_reflect", true, x, pad, npad, out, error);
}

tile_status tile_op_pad_replicate(const char *target, const tile_tensor *x, const int64_t *pad, int npad, tile_tensor *out, char **error) {
    return pad_mode(target, "pad_replicate", false, x, pad, npad, out, error);
}

/* ---------- embedding backward ---------- */
tile_status tile_op_embedding_backward(const char *target, const tile_tensor *grad, const tile_tensor *indices, int64_t num_weights,
                                       int64_t padding_idx, tile_tensor *out, char **error) {
    BEGIN("embedding_backward");
    if (!top_check_tensor(&c, "grad", grad) || !top_check_dtype(&c, "grad", grad, TOPD_FLT) || !top_check_rank(&c, "grad", grad, 1, 8) ||
        num_weights < 0 || !check_indices(&c, "indices", indices, num_weights))
        return top_end(&c, error);
    int64_t K = top_numel(indices), D = grad->shape[grad->rank - 1];
    if (grad->rank != indices->rank + 1 || top_numel(grad) != K * D) {
        char a[128], b2[128];
        top_shape_str(a, sizeof a, grad->rank, grad->shape);
        top_shape_str(b2, sizeof b2, indices->rank, indices->shape);
        top_fail(&c, TILE_ERR_USER, "grad: shape %s is not indices' %s plus the embedding dimension", a, b2);
        return top_end(&c, error);
    }
    int64_t ws[2] = {num_weights, D};
    if (!top_prepare_out(&c, "out", out, grad->dtype, 2, ws)) return top_end(&c, error);
    /* accumulate in f32 (f64 for f64): scatter_add of grad's rows into zeros at indices */
    tile_dtype acc = top_compute_dtype(grad->dtype);
    tile_tensor sum = {0}, g = {0}, idx = {0};
    int64_t kd[2] = {K, D};
    if (!top_temp(&c, &sum, acc, 2, ws) || !top_temp(&c, &g, acc, 2, kd) || !top_temp(&c, &idx, TILE_DT_I64, 2, kd)) goto done;
    if (K * D > 0 && num_weights > 0) {
        int64_t one = 1, n = K * D;
        top_copy_strided(&c, grad, 0, &one, &g, 0, &one, 1, &n);
        /* every padding_idx entry points at a scratch row past the table: no gradient */
        tile_tensor hi;
        if (!top_host_copy(&c, "indices", indices, &hi)) goto done;
        int64_t *hf = malloc((size_t)K * sizeof *hf);
        if (!hf) {
            top_host_release(&hi, indices);
            top_fail(&c, TILE_ERR_USER, "indices: out of memory");
            goto done;
        }
        for (int64_t i = 0; i < K; i++) hf[i] = tile_load_i(hi.dtype, hi.data, (size_t)i);
        top_host_release(&hi, indices);
        tile_tensor flat = {hf, TILE_DT_I64, 1, {K}};
        int64_t es[2] = {1, 0}, is[2] = {D, 1};
        if (top_stage(&c, &flat)) top_copy_strided(&c, &flat, 0, es, &idx, 0, is, 2, kd); /* idx[k, j] = flat[k] */
        free(hf);
        top_defs d;
        top_defs_init(&d);
        top_def_int(&d, "block", D <= 64 ? 64 : 128);
        top_def_dt(&d, "x_dtype", acc);
        top_def_dt(&d, "i_dtype", TILE_DT_I64);
        top_def_int(&d, "f0", 1);
        top_kernel *k;
        if (c.st == TILE_OK && top_kernel_get(&c, "gen/index.tl", "scatter", &d, &k)) {
            tile_tensor p[3] = {top_view3(&g, 1, K, D), top_view3(&idx, 1, K, D), top_view3(&sum, 1, num_weights, D)};
            top_kernel_run(&c, k, p, 3, NULL);
        }
        if (padding_idx >= 0 && padding_idx < num_weights && c.st == TILE_OK) {
            tile_tensor row = top_view1(&sum);
            row.shape[0] = D;
            row.data = top_elem_ptr(&sum, padding_idx * D);
            top_fill(&c, &row, tile_op_int(0));
        }
    }
    if (c.st == TILE_OK) top_convert(&c, &sum, out);
done:
    top_free(&sum);
    top_free(&g);
    top_free(&idx);
    return top_end(&c, error);
}
