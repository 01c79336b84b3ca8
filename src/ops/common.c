/* common.c — what every operator shares: the call context and its messages, argument checks
 * naming the argument, output allocation, PyTorch's type promotion, tensor views, and the
 * strided copy that data movement is built on. */
#include <stdlib.h>
#include <string.h>

#include "ops_int.h"

/* ---------- call context ---------- */
static const char *const g_targets[] = {"interp", "cpu", "opencl", "cuda"};

bool top_begin(top_ctx *c, const char *opname, const top_op *op, const char *target) {
    memset(c, 0, sizeof *c);
    c->op = opname;
    c->entry = op;
    if (!op) return top_fail(c, TILE_ERR_USER, "op: unknown operator '%s' (docs/ops.md lists them)", opname ? opname : "(null)");
    c->op = op->name;
    const char *need = top_device_target();
    if (!target || !strcmp(target, "auto")) target = need ? need : tile_auto_target();
    if (need && strcmp(target, need))
        return top_fail(c, TILE_ERR_USER, "target: '%s' cannot run on tensors in %s memory (this thread's tile_op_set_device); use '%s'", target,
                        need, need);
    unsigned bit = 0;
    for (int i = 0; i < 4; i++)
        if (!strcmp(target, g_targets[i])) {
            bit = 1u << i;
            c->target = g_targets[i];
        }
    if (!bit) return top_fail(c, TILE_ERR_USER, "target: unknown target '%s' (targets: interp, cpu, opencl, cuda, auto)", target);
    if (!(op->targets & bit)) return top_fail(c, TILE_ERR_USER, "target: '%s' is not one of this operator's targets", target);
    return true;
}

bool top_fail(top_ctx *c, tile_status st, const char *fmt, ...) {
    if (c->st != TILE_OK) return false;
    c->st = st;
    tile_sb_printf(&c->err, "%s: ", c->op ? c->op : "op");
    va_list ap;
    va_start(ap, fmt);
    tile_sb_vprintf(&c->err, fmt, ap);
    va_end(ap);
    return false;
}

tile_status top_end(top_ctx *c, char **error) {
    if (error) *error = NULL;
    if (c->st != TILE_OK) {
        for (int i = 0; i < c->nallocated; i++) top_free(c->allocated[i]);
        if (error) {
            *error = c->err.data;
            c->err.data = NULL;
        }
    }
    top_release_staged(c);
    tile_sb_free(&c->err);
    return c->st;
}

/* ---------- shapes and dtypes in messages ---------- */
void top_shape_str(char *buf, size_t n, int rank, const int64_t *shape) {
    size_t o = (size_t)snprintf(buf, n, "[");
    for (int d = 0; d < rank && o < n; d++) o += (size_t)snprintf(buf + o, n - o, "%s%lld", d ? ", " : "", (long long)shape[d]);
    if (o < n) snprintf(buf + o, n - o, "]");
}

const char *top_dtype_names(uint32_t mask, char *buf, size_t n) {
    size_t o = 0;
    buf[0] = 0;
    for (int d = 0; d < TILE_DT_COUNT && o < n; d++)
        if (mask & (1u << d)) o += (size_t)snprintf(buf + o, n - o, "%s%s", o ? ", " : "", tile_dtype_name((tile_dtype)d));
    return buf;
}

int64_t top_numel(const tile_tensor *t) {
    int64_t n = 1;
    for (int d = 0; d < t->rank; d++) n *= t->shape[d];
    return n;
}

/* ---------- argument checks ---------- */
bool top_check_tensor(top_ctx *c, const char *arg, const tile_tensor *t) {
    if (c->st) return false;
    if (!t) return top_fail(c, TILE_ERR_USER, "%s: the tensor is NULL", arg);
    if (t->rank < 0 || t->rank > 8) return top_fail(c, TILE_ERR_USER, "%s: rank %d is outside 0..8", arg, t->rank);
    if (t->dtype < 0 || t->dtype >= TILE_DT_COUNT) return top_fail(c, TILE_ERR_USER, "%s: invalid dtype %d", arg, (int)t->dtype);
    if (t->dtype == TILE_DT_FP4_E2M1) return top_fail(c, TILE_ERR_USER, "%s: float4_e2m1 tensors are not accepted by the operators", arg);
    int64_t n = 1;
    for (int d = 0; d < t->rank; d++) {
        if (t->shape[d] < 0) return top_fail(c, TILE_ERR_USER, "%s: dimension %d has negative size %lld", arg, d, (long long)t->shape[d]);
        if (t->shape[d] > INT32_MAX) return top_fail(c, TILE_ERR_USER, "%s: dimension %d has %lld elements; at most 2^31-1 are supported", arg, d, (long long)t->shape[d]);
        n *= t->shape[d];
        if (n > INT32_MAX) return top_fail(c, TILE_ERR_USER, "%s: more than 2^31-1 elements are not supported", arg);
    }
    if (n > 0 && !t->data) return top_fail(c, TILE_ERR_USER, "%s: data is NULL", arg);
    return true;
}

bool top_check_dtype(top_ctx *c, const char *arg, const tile_tensor *t, uint32_t mask) {
    if (c->st) return false;
    if (mask & (1u << t->dtype)) return true;
    char b[256];
    return top_fail(c, TILE_ERR_USER, "%s: dtype %s is not supported (supported: %s)", arg, tile_dtype_name(t->dtype), top_dtype_names(mask, b, sizeof b));
}

bool top_check_rank(top_ctx *c, const char *arg, const tile_tensor *t, int lo, int hi) {
    if (c->st) return false;
    if (t->rank >= lo && t->rank <= hi) return true;
    if (lo == hi) return top_fail(c, TILE_ERR_USER, "%s: expected rank %d, got rank %d", arg, lo, t->rank);
    return top_fail(c, TILE_ERR_USER, "%s: expected rank %d..%d, got rank %d", arg, lo, hi, t->rank);
}

bool top_check_dim(top_ctx *c, const char *arg, int *dim, int rank) {
    if (c->st) return false;
    int r = rank ? rank : 1;
    if (*dim < -r || *dim >= r) return top_fail(c, TILE_ERR_USER, "%s: dimension %d is out of range for rank %d", arg, *dim, rank);
    if (*dim < 0) *dim += r;
    return true;
}

bool top_check_same_shape(top_ctx *c, const char *arg, const tile_tensor *t, const char *other_arg, const tile_tensor *o) {
    if (c->st) return false;
    bool same = t->rank == o->rank;
    for (int d = 0; same && d < t->rank; d++) same = t->shape[d] == o->shape[d];
    if (same) return true;
    char a[128], b[128];
    top_shape_str(a, sizeof a, t->rank, t->shape);
    top_shape_str(b, sizeof b, o->rank, o->shape);
    return top_fail(c, TILE_ERR_USER, "%s: shape %s does not match %s's %s", arg, a, other_arg, b);
}

bool top_prepare_out(top_ctx *c, const char *arg, tile_tensor *out, tile_dtype dt, int rank, const int64_t *shape) {
    if (c->st) return false;
    if (!out) return top_fail(c, TILE_ERR_USER, "%s: the output tensor is NULL", arg);
    if (!out->data) {
        int64_t s[8] = {0};
        for (int d = 0; d < rank; d++) s[d] = shape[d]; /* shape may be out->shape itself */
        out->dtype = dt;
        out->rank = rank;
        memcpy(out->shape, s, sizeof s);
        if (!top_alloc(c, arg, out, false)) return false;
        if (c->nallocated < (int)(sizeof c->allocated / sizeof c->allocated[0])) c->allocated[c->nallocated++] = out;
        return true;
    }
    bool same = out->rank == rank;
    for (int d = 0; same && d < rank; d++) same = out->shape[d] == shape[d];
    if (!same) {
        char a[128], b[128];
        top_shape_str(a, sizeof a, out->rank, out->shape);
        top_shape_str(b, sizeof b, rank, shape);
        return top_fail(c, TILE_ERR_USER, "%s: shape %s does not match the result's %s", arg, a, b);
    }
    if (out->dtype != dt)
        return top_fail(c, TILE_ERR_USER, "%s: dtype %s does not match the result's dtype %s", arg, tile_dtype_name(out->dtype), tile_dtype_name(dt));
    return true;
}

/* ---------- type promotion ---------- */
static int cat_of(tile_dtype t) { return t == TILE_DT_BOOL ? 0 : tile_dtype_is_float(t) ? 2 : 1; }

tile_dtype top_promote(tile_dtype a, tile_dtype b) {
    if (a == TILE_DT_INVALID) return b;
    if (b == TILE_DT_INVALID) return a;
    if (a == b) return a;
    if (a == TILE_DT_BOOL) return b;
    if (b == TILE_DT_BOOL) return a;
    bool fa = tile_dtype_is_float(a), fb = tile_dtype_is_float(b);
    if (fa && !fb) return a;
    if (fb && !fa) return b;
    if (fa && fb) {
        if ((a == TILE_DT_F16 && b == TILE_DT_BF16) || (a == TILE_DT_BF16 && b == TILE_DT_F16)) return TILE_DT_F32;
        if (tile_dtype_bits(a) == 8 || tile_dtype_bits(b) == 8) {
            /* fp8 with another float: the other (wider) one; e4m3 with e5m2: no promotion */
            if (tile_dtype_bits(a) == 8 && tile_dtype_bits(b) == 8) return TILE_DT_INVALID;
            return tile_dtype_bits(a) == 8 ? b : a;
        }
        return tile_dtype_bits(a) >= tile_dtype_bits(b) ? a : b;
    }
    /* two integers */
    bool sa = tile_dtype_is_signed(a), sb = tile_dtype_is_signed(b);
    int wa = tile_dtype_bits(a), wb = tile_dtype_bits(b);
    if (sa == sb) return wa >= wb ? a : b;
    /* unsigned with signed: the signed one if wider, else the next wider signed type */
    tile_dtype s = sa ? a : b, u = sa ? b : a;
    int ws = tile_dtype_bits(s), wu = tile_dtype_bits(u);
    if (ws > wu) return s;
    return wu == 8 ? TILE_DT_I16 : wu == 16 ? TILE_DT_I32 : wu == 32 ? TILE_DT_I64 : TILE_DT_INVALID;
}

void top_rt_init(top_rt *r) { r->dim = r->zero = r->wrapped = TILE_DT_INVALID; }

void top_rt_tensor(top_rt *r, const tile_tensor *t) {
    if (t->rank > 0) r->dim = top_promote(r->dim, t->dtype);
    else r->zero = top_promote(r->zero, t->dtype);
}

void top_rt_scalar(top_rt *r, tile_op_scalar s) {
    /* a Python float is the default dtype (float32), an int int64, a bool bool */
    tile_dtype t = s.kind == TILE_DT_F64 ? TILE_DT_F32 : s.kind == TILE_DT_BOOL ? TILE_DT_BOOL : TILE_DT_I64;
    r->wrapped = top_promote(r->wrapped, t);
}

/* combine_categories(higher, lower): the higher-priority dtype wins unless the lower one is
 * of a higher category (bool < integer < float), where they promote */
static tile_dtype combine(tile_dtype hi, tile_dtype lo) {
    if (hi == TILE_DT_INVALID) return lo;
    if (lo == TILE_DT_INVALID) return hi;
    if (cat_of(hi) >= cat_of(lo)) return hi;
    return top_promote(hi, lo);
}

tile_dtype top_rt_result(const top_rt *r) { return combine(r->dim, combine(r->zero, r->wrapped)); }

tile_dtype top_compute_dtype(tile_dtype dt) {
    return dt == TILE_DT_F16 || dt == TILE_DT_BF16 || dt == TILE_DT_FP8_E4M3 || dt == TILE_DT_FP8_E5M2 ? TILE_DT_F32 : dt;
}

/* ---------- views and temporaries ---------- */
tile_tensor top_view(const tile_tensor *t, int rank, const int64_t *shape) {
    tile_tensor v = {t->data, t->dtype, rank, {0}};
    for (int d = 0; d < rank; d++) v.shape[d] = shape[d];
    return v;
}

tile_tensor top_view1(const tile_tensor *t) {
    int64_t n = top_numel(t);
    return top_view(t, 1, &n);
}

tile_tensor top_view3(const tile_tensor *t, int64_t a, int64_t b, int64_t c) {
    int64_t s[3] = {a, b, c};
    return top_view(t, 3, s);
}

bool top_temp(top_ctx *c, tile_tensor *t, tile_dtype dt, int rank, const int64_t *shape) {
    memset(t, 0, sizeof *t);
    t->dtype = dt;
    t->rank = rank;
    for (int d = 0; d < rank; d++) t->shape[d] = shape[d];
    return top_alloc(c, "a temporary", t, true);
}

void *top_elem_ptr(const tile_tensor *t, int64_t elem) {
    return (char *)t->data + (size_t)elem * (size_t)(tile_dtype_bits(t->dtype) / 8);
}

void top_strides(int rank, const int64_t *shape, int64_t *strides) {
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; d--) {
        strides[d] = s;
        s *= shape[d];
    }
}

/* ---------- the strided copy ---------- */
static int64_t block_for(int64_t n) { return n <= 64 ? 64 : n <= 256 ? 256 : 1024; }

bool top_copy_strided(top_ctx *c, const tile_tensor *x, int64_t xoff, const int64_t *xs_in, tile_tensor *y, int64_t yoff,
                      const int64_t *ys_in, int rank_in, const int64_t *shape_in) {
    if (c->st) return false;
    TILE_ASSERT(rank_in <= 16);
    int64_t shape[16], xs[16], ys[16];
    int rank = 0;
    for (int d = 0; d < rank_in; d++) {
        if (shape_in[d] == 0) return true; /* nothing to copy */
        if (shape_in[d] == 1) continue;
        /* merge with the previous dimension when both sides step through it contiguously */
        if (rank > 0 && xs[rank - 1] == xs_in[d] * shape_in[d] && ys[rank - 1] == ys_in[d] * shape_in[d]) {
            shape[rank - 1] *= shape_in[d];
            xs[rank - 1] = xs_in[d];
            ys[rank - 1] = ys_in[d];
            continue;
        }
        shape[rank] = shape_in[d];
        xs[rank] = xs_in[d];
        ys[rank] = ys_in[d];
        rank++;
    }
    if (rank == 0) {
        shape[0] = 1;
        xs[0] = ys[0] = 1;
        rank = 1;
    }
    if (rank > 4) {
        /* the kernel walks four dimensions; the leading ones are walked here */
        int64_t idx[16] = {0};
        int lead = rank - 4;
        for (;;) {
            int64_t xo = xoff, yo = yoff;
            for (int d = 0; d < lead; d++) {
                xo += idx[d] * xs[d];
                yo += idx[d] * ys[d];
            }
            if (!top_copy_strided(c, x, xo, xs + lead, y, yo, ys + lead, 4, shape + lead)) return false;
            int d = lead - 1;
            while (d >= 0 && ++idx[d] == shape[d]) idx[d--] = 0;
            if (d < 0) return true;
        }
    }
    /* which side is contiguous in the iteration order: it carries the shape */
    int64_t cs[16];
    top_strides(rank, shape, cs);
    bool y_contig = true, x_contig = true;
    for (int d = 0; d < rank; d++) {
        if (ys[d] != cs[d]) y_contig = false;
        if (xs[d] != cs[d]) x_contig = false;
    }
    if (!y_contig && !x_contig) {
        /* both strided: gather into a contiguous temporary, then scatter from it */
        tile_tensor tmp;
        if (rank > 8) {
            /* a temporary holds at most 8 dims: split off the leading ones */
            int64_t idx[16] = {0};
            int lead = rank - 4;
            for (;;) {
                int64_t xo = xoff, yo = yoff;
                for (int d = 0; d < lead; d++) { xo += idx[d] * xs[d]; yo += idx[d] * ys[d]; }
                if (!top_copy_strided(c, x, xo, xs + lead, y, yo, ys + lead, 4, shape + lead)) return false;
                int d = lead - 1;
                while (d >= 0 && ++idx[d] == shape[d]) idx[d--] = 0;
                if (d < 0) return true;
            }
        }
        if (!top_temp(c, &tmp, y->dtype, rank, shape)) return false;
        bool ok = top_copy_strided(c, x, xoff, xs, &tmp, 0, cs, rank, shape) && top_copy_strided(c, &tmp, 0, cs, y, yoff, ys, rank, shape);
        top_free(&tmp);
        return ok;
    }
    static const char *const gnames[] = {"gather1", "gather2", "gather3", "gather4"};
    static const char *const snames[] = {"scatter1", "scatter2", "scatter3", "scatter4"};
    top_defs defs;
    top_defs_init(&defs);
    top_def_int(&defs, "block", block_for(shape[rank - 1]));
    top_def_dt(&defs, "x_dtype", x->dtype);
    top_def_dt(&defs, "y_dtype", y->dtype);
    top_def_int(&defs, "unit", (y_contig ? xs : ys)[rank - 1] == 1);
    top_kernel *k;
    if (!top_kernel_get(c, "gen/copy.tl", y_contig ? gnames[rank - 1] : snames[rank - 1], &defs, &k)) return false;
    tile_tensor p[2 + 1 + 4];
    memset(p, 0, sizeof p);
    double sc[2 + 1 + 4] = {0};
    if (y_contig) {
        p[0] = top_view1(x);
        p[1] = top_view(y, rank, shape);
        p[1].data = top_elem_ptr(y, yoff);
        sc[2] = (double)xoff;
        for (int d = 0; d < rank; d++) sc[3 + d] = (double)xs[d];
    } else {
        p[0] = top_view(x, rank, shape);
        p[0].data = top_elem_ptr(x, xoff);
        p[1] = top_view1(y);
        sc[2] = (double)yoff;
        for (int d = 0; d < rank; d++) sc[3 + d] = (double)ys[d];
    }
    return top_kernel_run(c, k, p, 3 + rank, sc);
}
