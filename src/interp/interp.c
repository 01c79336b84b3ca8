/* interp.c — the reference interpreter: a tree walker over verified Tile IR.
 *
 * State
 *   - scalars: one 8-byte slot per variable id (int64 for bool/int dtypes, double for floats);
 *   - buffers: per buffer id the live instance (data, shape, row-major strides, an
 *     "initialised" bitmap for non-parameter buffers, lazily allocated race shadows);
 *     ALLOC pushes (buffer, previous instance) on a frame stack; the end of the enclosing
 *     SEQ / loop iteration / branch / kernel block / function pops and frees;
 *   - errors longjmp back to interp_run, which frees everything still alive.
 *
 * Race check
 *   Each execution of a T.Parallel group, and each kernel launch, gets a fresh epoch.
 *   Iterations (blocks) run in increasing id order, so for each element it is enough to
 *   remember the FIRST writer and the FIRST reader of the current epoch: another
 *   iteration touched the element before iff that first id is smaller than the current
 *   one. Shadow entries are 12 bytes per element (epoch, writer with an "atomic" flag,
 *   reader), calloc'ed on the first access inside a group/kernel, so untouched pages
 *   cost nothing. */
#include "interp.h"

#include <math.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

typedef union val {
    int64_t i;
    double f;
} val;

static const char DK[TILE_DT_COUNT] = {
#define X(e, name, bits, kind) kind,
    TILE_DTYPES(X)
#undef X
};
static const int DBITS[TILE_DT_COUNT] = {
#define X(e, name, bits, kind) bits,
    TILE_DTYPES(X)
#undef X
};
#define ISF(dt) (DK[(dt)] == 'F')
#define ISU(dt) (DK[(dt)] == 'U')

/* ---------- shadows ---------- */
#define SH_NONE 0x7FFFFFFFu
#define SH_ATOMIC 0x80000000u
#define SH_MAXID 0x7FFFFFF0
typedef struct shadow_ent {
    uint32_t ep;
    uint32_t w; /* first writer id | SH_ATOMIC while all its writes were atomic; SH_NONE */
    uint32_t r; /* first reader id; SH_NONE */
} shadow_ent;

enum { ACC_READ = 0, ACC_WRITE = 1, ACC_ATOMIC = 2 };

typedef struct inst {
    const ir_buffer *b;
    void *data;
    tile_dtype dt;  /* nominal dtype */
    tile_dtype sdt; /* storage dtype (float64 for float buffers in f64 mode) */
    int rank;
    int64_t shape[8];
    int64_t stride[8];
    size_t n;
    uint64_t *init;   /* NULL: parameter (always initialised) or check off */
    shadow_ent *par;  /* T.Parallel shadow */
    shadow_ent *blk;  /* cross-block shadow (global buffers alive across the kernel) */
    bool owned;
    bool kernel_local; /* allocated inside the running kernel (one per block) */
} inst;

typedef struct frame_ent {
    int buf_id;
    inst *prev;
} frame_ent;

typedef struct ist {
    const ir_func *f;
    const interp_options *opt;
    bool f64;
    bool ck_bounds, ck_uninit, ck_races;
    val *vars;
    inst **cur;
    inst *fixed; /* parameter and output instances */
    int nfixed;
    frame_ent *frames;
    int nframes, capframes;
    const ir_var **loops;
    int nloops, caploops;
    /* kernel */
    bool in_kernel, blk_active;
    const ir_stmt *kernel;
    int64_t grid[3];
    int ngrid;
    int64_t block_lin;
    uint32_t blk_epoch;
    /* T.Parallel group */
    bool par_active;
    const ir_stmt *par_head, *par_inner;
    const ir_var *par_vars[16];
    int par_n;
    uint32_t par_epoch;
    int64_t par_iter;
    int32_t *par_vals;
    size_t par_nvals, par_capvals;
    uint32_t epoch;
    long steps;
    val *scratch;
    size_t scratch_cap;
    tile_strbuf *err;
    jmp_buf jb;
} ist;

/* ---------- errors ---------- */
static void put_ctx(ist *S, tile_strbuf *sb) {
    bool any = false;
    if (S->in_kernel && S->kernel) {
        tile_sb_puts(sb, " (block (");
        for (int d = 0; d < S->ngrid; d++)
            tile_sb_printf(sb, "%s%lld", d ? ", " : "", (long long)S->vars[S->kernel->block_vars[d]->id].i);
        tile_sb_putc(sb, ')');
        any = true;
    }
    int first = S->nloops > 8 ? S->nloops - 8 : 0;
    for (int i = first; i < S->nloops; i++) {
        const ir_var *v = S->loops[i];
        tile_sb_printf(sb, "%s%s=%lld", any ? ", " : " (", v->name, (long long)S->vars[v->id].i);
        any = true;
    }
    if (any) tile_sb_putc(sb, ')');
}

static void cleanup_all(ist *S);

__attribute__((noreturn, format(printf, 4, 5)))
static void fail(ist *S, tile_loc loc, bool with_ctx, const char *fmt, ...) {
    tile_strbuf msg = {0};
    va_list ap;
    va_start(ap, fmt);
    tile_sb_vprintf(&msg, fmt, ap);
    va_end(ap);
    if (with_ctx) put_ctx(S, &msg);
    tile_diag dg = {TILE_DIAG_ERROR, loc, msg.data ? msg.data : (char *)""};
    if (S->err) tile_diag_format(&dg, S->err);
    tile_sb_free(&msg);
    longjmp(S->jb, 1);
}

/* Like fail(), with a message already built in *m (freed here). */
__attribute__((noreturn))
static void fail_sb(ist *S, tile_loc loc, bool with_ctx, tile_strbuf *m) {
    if (with_ctx) put_ctx(S, m);
    tile_diag dg = {TILE_DIAG_ERROR, loc, m->data ? m->data : (char *)""};
    if (S->err) tile_diag_format(&dg, S->err);
    tile_sb_free(m);
    longjmp(S->jb, 1);
}

static void put_loc(tile_strbuf *sb, tile_loc loc) {
    tile_sb_printf(sb, "%s:%d:%d", loc.src ? loc.src->name : "<ir>", loc.line, loc.col);
}

static void put_elem(tile_strbuf *sb, const inst *b, size_t off) {
    tile_sb_printf(sb, "%s[", b->b->name);
    for (int d = 0; d < b->rank; d++) {
        int64_t i = b->stride[d] ? (int64_t)(off / (size_t)b->stride[d]) : 0;
        if (b->stride[d]) off %= (size_t)b->stride[d];
        tile_sb_printf(sb, "%s%lld", d ? ", " : "", (long long)i);
    }
    tile_sb_putc(sb, ']');
}

static void put_shape(tile_strbuf *sb, const inst *b) {
    if (b->rank == 0) { tile_sb_puts(sb, "() (a scalar)"); return; }
    for (int d = 0; d < b->rank; d++) tile_sb_printf(sb, "%s%lld", d ? "x" : "", (long long)b->shape[d]);
}

static const char *mem_kind(const inst *b) {
    if (b->b->role == IR_BUF_OUTPUT) return "output";
    return ir_scope_name(b->b->scope);
}

/* ---------- numbers ---------- */
static inline int64_t wrapi(tile_dtype dt, int64_t v) {
    switch (dt) {
    case TILE_DT_I64: case TILE_DT_U64: return v;
    case TILE_DT_I32: return (int32_t)(uint32_t)(uint64_t)v;
    case TILE_DT_BOOL: return v != 0;
    case TILE_DT_I8: return (int8_t)(uint8_t)(uint64_t)v;
    case TILE_DT_I16: return (int16_t)(uint16_t)(uint64_t)v;
    case TILE_DT_U8: return (int64_t)(uint8_t)(uint64_t)v;
    case TILE_DT_U16: return (int64_t)(uint16_t)(uint64_t)v;
    case TILE_DT_U32: return (int64_t)(uint32_t)(uint64_t)v;
    default: return tile_wrap_int(dt, v);
    }
}

static inline double rnd(const ist *S, tile_dtype dt, double x) {
    if (S->f64) return x;
    switch (dt) {
    case TILE_DT_F32: return (double)(float)x;
    case TILE_DT_F64: return x;
    default: return tile_round_to(dt, x);
    }
}

static inline double i2f(tile_dtype from, int64_t v) {
    return from == TILE_DT_U64 ? (double)(uint64_t)v : (double)v;
}

/* Integer -> float dtype `to` with ONE rounding (going through double first would round
 * twice for integers wider than 53 bits). */
static double int_to_float(tile_dtype to, tile_dtype from, int64_t v) {
    bool u = from == TILE_DT_U64;
    /* exact ranges take the fast path; beyond, the software conversion of core (the
     * hardware one is exact too, but emulators such as valgrind round via double) */
    bool huge = u && v < 0; /* a uint64 value >= 2^63 */
    if (!huge && v >= -(1 << 24) && v <= (1 << 24) && (to == TILE_DT_F32 || to == TILE_DT_F64)) return (double)v;
    if (!huge && to == TILE_DT_F64 && v >= -((int64_t)1 << 53) && v <= ((int64_t)1 << 53)) return (double)v;
    if (huge) { /* >= 2^63: halve keeping a sticky bit (exact for rounding), scale back */
        uint64_t x = (uint64_t)v;
        return tile_round_to(to, 2.0 * int_to_float(to, TILE_DT_I64, (int64_t)((x >> 1) | (x & 1))));
    }
    uint64_t tmp = 0;
    tile_store_i(to, &tmp, 0, v);
    return tile_load_f(to, &tmp, 0);
}

static val convert(const ist *S, val v, tile_dtype from, tile_dtype to) {
    val r;
    if (ISF(to)) {
        if (ISF(from)) r.f = rnd(S, to, v.f);
        else r.f = S->f64 ? i2f(from, v.i) : int_to_float(to, from, v.i);
    } else if (to == TILE_DT_BOOL) {
        r.i = ISF(from) ? (v.f != 0) : (v.i != 0);
    } else {
        r.i = ISF(from) ? tile_f64_to_int(to, v.f) : wrapi(to, v.i);
    }
    return r;
}

/* The dtype arithmetic on values of dt happens in (GEMM/REDUCE accumulators, atomics). */
static tile_dtype compute_dt(const ist *S, tile_dtype dt) {
    if (!ISF(dt)) return dt;
    if (S->f64 || dt == TILE_DT_F64) return TILE_DT_F64;
    return TILE_DT_F32;
}

/* ---------- element storage ---------- */
static inline val ld(const inst *b, size_t off) {
    val v;
    switch (b->sdt) {
    case TILE_DT_F32: v.f = ((const float *)b->data)[off]; break;
    case TILE_DT_F64: v.f = ((const double *)b->data)[off]; break;
    case TILE_DT_I32: v.i = ((const int32_t *)b->data)[off]; break;
    case TILE_DT_I64: v.i = ((const int64_t *)b->data)[off]; break;
    default:
        if (ISF(b->sdt)) v.f = tile_load_f(b->sdt, b->data, off);
        else v.i = tile_load_i(b->sdt, b->data, off);
        break;
    }
    return v;
}

/* v is in the domain of the buffer's nominal dtype class (double for float buffers). */
static inline void st(inst *b, size_t off, val v) {
    switch (b->sdt) {
    case TILE_DT_F32: ((float *)b->data)[off] = (float)v.f; break;
    case TILE_DT_F64: ((double *)b->data)[off] = v.f; break;
    case TILE_DT_I32: ((int32_t *)b->data)[off] = (int32_t)v.i; break;
    case TILE_DT_I64: ((int64_t *)b->data)[off] = v.i; break;
    default:
        if (ISF(b->sdt)) tile_store_f(b->sdt, b->data, off, v.f);
        else tile_store_i(b->sdt, b->data, off, v.i);
        break;
    }
}

static inline bool is_init(const inst *b, size_t off) { return (b->init[off >> 6] >> (off & 63)) & 1; }
static inline void set_init(inst *b, size_t off) {
    if (b->init) b->init[off >> 6] |= (uint64_t)1 << (off & 63);
}

/* ---------- race shadows ---------- */
static void put_iter(ist *S, tile_strbuf *sb, bool blk, uint32_t id) {
    if (blk) {
        int64_t lin = id;
        tile_sb_puts(sb, "block (");
        for (int d = 0; d < S->ngrid; d++) {
            int64_t g = S->grid[d] > 0 ? S->grid[d] : 1;
            tile_sb_printf(sb, "%s%lld", d ? ", " : "", (long long)(lin % g));
            lin /= g;
        }
        tile_sb_putc(sb, ')');
        return;
    }
    size_t n = (size_t)S->par_n;
    if ((size_t)id * n + n <= S->par_nvals) {
        tile_sb_puts(sb, "iteration (");
        for (size_t k = 0; k < n; k++)
            tile_sb_printf(sb, "%s%s=%d", k ? ", " : "", S->par_vars[k]->name, S->par_vals[(size_t)id * n + k]);
        tile_sb_putc(sb, ')');
    } else {
        tile_sb_printf(sb, "iteration #%u", id);
    }
}

__attribute__((noreturn))
static void race(ist *S, const inst *b, size_t off, bool blk, uint32_t other, const char *other_did, uint32_t me,
                 const char *me_did, tile_loc loc) {
    tile_strbuf m = {0};
    tile_sb_puts(&m, "data race on ");
    put_elem(&m, b, off);
    tile_sb_printf(&m, ": %s by ", other_did);
    put_iter(S, &m, blk, other);
    tile_sb_printf(&m, " and %s by ", me_did);
    put_iter(S, &m, blk, me);
    if (blk) {
        tile_sb_puts(&m, " of the kernel at ");
        put_loc(&m, S->kernel->loc);
    } else {
        tile_sb_puts(&m, " of the T.Parallel at ");
        put_loc(&m, S->par_head->loc);
    }
    fail_sb(S, loc, true, &m);
}

static shadow_ent *shadow_get(ist *S, inst *b, shadow_ent **pp, tile_loc loc) {
    if (!*pp) {
        *pp = calloc(b->n ? b->n : 1, sizeof(shadow_ent));
        if (!*pp) fail(S, loc, false, "out of memory for the race-check shadow of '%s' (%zu elements)", b->b->name, b->n);
    }
    return *pp;
}

static void shadow_access(ist *S, inst *b, shadow_ent **pp, size_t off, int kind, uint32_t ep, uint32_t it,
                          bool blk, tile_loc loc) {
    shadow_ent *e = &shadow_get(S, b, pp, loc)[off];
    if (e->ep != ep) {
        e->ep = ep;
        e->w = SH_NONE;
        e->r = SH_NONE;
    }
    uint32_t wid = e->w & ~SH_ATOMIC;
    bool watomic = (e->w & SH_ATOMIC) != 0;
    const char *wdid = watomic ? "atomically updated" : "written";
    switch (kind) {
    case ACC_READ:
        if (wid < it) race(S, b, off, blk, wid, wdid, it, "read", loc);
        if (e->r == SH_NONE) e->r = it;
        break;
    case ACC_WRITE:
        if (wid < it) race(S, b, off, blk, wid, wdid, it, "written", loc);
        if (e->r < it) race(S, b, off, blk, e->r, "read", it, "written", loc);
        e->w = it; /* first writer (no earlier one), or the same iteration: now a plain write */
        break;
    default: /* ACC_ATOMIC */
        if (wid < it && !watomic) race(S, b, off, blk, wid, "written", it, "atomically updated", loc);
        if (e->r < it) race(S, b, off, blk, e->r, "read", it, "atomically updated", loc);
        if (e->w == SH_NONE) e->w = it | SH_ATOMIC;
        break;
    }
}

static inline void track(ist *S, inst *b, size_t off, int kind, tile_loc loc) {
    if (S->par_active && S->par_iter <= SH_MAXID)
        shadow_access(S, b, &b->par, off, kind, S->par_epoch, (uint32_t)S->par_iter, false, loc);
    if (S->blk_active && !b->kernel_local && b->b->scope == IR_SCOPE_GLOBAL && S->block_lin <= SH_MAXID)
        shadow_access(S, b, &b->blk, off, kind, S->blk_epoch, (uint32_t)S->block_lin, true, loc);
}

/* ---------- buffers ---------- */
static void inst_free(inst *b) {
    if (!b) return;
    if (b->owned) free(b->data);
    free(b->init);
    free(b->par);
    free(b->blk);
    if (b->owned) free(b);
}

static void push_frame(ist *S, int id, inst *prev) {
    if (S->nframes == S->capframes) {
        S->capframes = S->capframes ? 2 * S->capframes : 32;
        S->frames = tile_xrealloc(S->frames, sizeof(frame_ent) * (size_t)S->capframes);
    }
    S->frames[S->nframes].buf_id = id;
    S->frames[S->nframes].prev = prev;
    S->nframes++;
}

static void pop_frames(ist *S, int mark) {
    while (S->nframes > mark) {
        frame_ent *fe = &S->frames[--S->nframes];
        inst_free(S->cur[fe->buf_id]);
        S->cur[fe->buf_id] = fe->prev;
    }
}

static val eval(ist *S, const ir_expr *e);

#define MAX_ELEMS ((int64_t)1 << 40)

/* Shape and strides of buffer b under the current variable values. */
static void eval_shape(ist *S, const ir_buffer *b, inst *in, tile_loc loc) {
    in->b = b;
    in->rank = b->rank;
    in->dt = b->dtype;
    in->sdt = (S->f64 && ISF(b->dtype)) ? TILE_DT_F64 : b->dtype;
    int64_t n = 1;
    for (int d = 0; d < b->rank; d++) {
        int64_t v = eval(S, b->shape[d]).i;
        if (v < 0) fail(S, loc, true, "buffer '%s' has negative dimension %lld (dimension %d)", b->name, (long long)v, d);
        if (v > MAX_ELEMS || (v > 0 && n > MAX_ELEMS / v))
            fail(S, loc, true, "buffer '%s' is too large", b->name);
        in->shape[d] = v;
        n *= v;
    }
    int64_t s = 1;
    for (int d = b->rank - 1; d >= 0; d--) {
        in->stride[d] = s;
        s *= in->shape[d];
    }
    in->n = (size_t)n;
}

static void exec_alloc(ist *S, const ir_stmt *s) {
    const ir_buffer *b = s->buf;
    inst *in = tile_xcalloc(1, sizeof *in);
    in->owned = true;
    /* free `in` if shape evaluation fails: register it first */
    push_frame(S, b->id, S->cur[b->id]);
    S->cur[b->id] = in;
    eval_shape(S, b, in, s->loc);
    size_t bytes = tile_dtype_storage_bytes(in->sdt, in->n);
    in->data = calloc(bytes ? bytes : 1, 1);
    if (!in->data) fail(S, s->loc, true, "cannot allocate %zu bytes for '%s'", bytes, b->name);
    if (S->ck_uninit) {
        in->init = calloc((in->n + 63) / 64 + 1, sizeof(uint64_t));
        if (!in->init) fail(S, s->loc, true, "out of memory for the uninitialised-read shadow of '%s'", b->name);
    }
    in->kernel_local = S->in_kernel;
}

/* ---------- element access ---------- */
__attribute__((noreturn))
static void oob(ist *S, const inst *b, const int64_t *idx, const char *what, tile_loc loc) {
    tile_strbuf m = {0};
    tile_sb_printf(&m, "out-of-bounds %s of %s[", what, b->b->name);
    for (int d = 0; d < b->rank; d++) tile_sb_printf(&m, "%s%lld", d ? ", " : "", (long long)idx[d]);
    tile_sb_printf(&m, "]: %s has shape ", b->b->name);
    put_shape(&m, b);
    fail_sb(S, loc, true, &m);
}

static inst *live(ist *S, const ir_buffer *b, tile_loc loc) {
    inst *in = S->cur[b->id];
    if (!in) fail(S, loc, true, "buffer '%s' used before its allocation", b->name);
    return in;
}

/* Evaluates indices; returns false if out of bounds and bounds checks are off. */
static bool elem_offset(ist *S, inst *b, ir_expr *const *args, const char *what, tile_loc loc, size_t *off) {
    int64_t idx[8];
    size_t o = 0;
    bool in = true;
    for (int d = 0; d < b->rank; d++) {
        idx[d] = eval(S, args[d]).i;
        if ((uint64_t)idx[d] >= (uint64_t)b->shape[d]) in = false;
        else o += (size_t)idx[d] * (size_t)b->stride[d];
    }
    if (!in) {
        if (S->ck_bounds) oob(S, b, idx, what, loc);
        return false;
    }
    *off = o;
    return true;
}

__attribute__((noreturn))
static void uninit(ist *S, const inst *b, size_t off, const char *by, tile_loc loc) {
    tile_strbuf m = {0};
    tile_sb_printf(&m, "read of uninitialised %s memory ", mem_kind(b));
    put_elem(&m, b, off);
    tile_sb_puts(&m, by);
    fail_sb(S, loc, true, &m);
}

static inline void check_read(ist *S, inst *b, size_t off, const char *by, tile_loc loc) {
    if (b->init && !is_init(b, off)) uninit(S, b, off, by, loc);
    if (S->par_active || S->blk_active) track(S, b, off, ACC_READ, loc);
}

static inline void note_write(ist *S, inst *b, size_t off, int kind, tile_loc loc) {
    set_init(b, off);
    if (S->par_active || S->blk_active) track(S, b, off, kind, loc);
}

/* ---------- expressions ---------- */
static int64_t ipow(ist *S, const ir_expr *e, tile_dtype dt, int64_t a, int64_t b) {
    if (!ISU(dt) && b < 0) {
        if (a == 0) fail(S, e->loc, true, "integer zero raised to a negative power");
        if (a == 1) return 1;
        if (a == -1) return (b & 1) ? wrapi(dt, -1) : 1;
        return 0;
    }
    uint64_t r = 1, x = (uint64_t)a, n = (uint64_t)b;
    while (n) {
        if (n & 1) r *= x;
        x *= x;
        n >>= 1;
    }
    return wrapi(dt, (int64_t)r);
}

static int64_t ibin(ist *S, const ir_expr *e, int op, tile_dtype dt, int64_t a, int64_t b) {
    bool u = ISU(dt);
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    int bits = DBITS[dt];
    switch (op) {
    case IR_B_ADD: return wrapi(dt, (int64_t)(ua + ub));
    case IR_B_SUB: return wrapi(dt, (int64_t)(ua - ub));
    case IR_B_MUL: return wrapi(dt, (int64_t)(ua * ub));
    case IR_B_DIV:
    case IR_B_FLOORDIV:
        if (b == 0) fail(S, e->loc, true, "integer division by zero");
        if (u) return wrapi(dt, (int64_t)(ua / ub));
        if (b == -1) return wrapi(dt, (int64_t)(0 - ua));
        {
            int64_t q = a / b;
            if (op == IR_B_FLOORDIV && (a % b != 0) && ((a < 0) != (b < 0))) q--;
            return wrapi(dt, q);
        }
    case IR_B_FLOORMOD:
        if (b == 0) fail(S, e->loc, true, "integer modulo by zero");
        if (u) return wrapi(dt, (int64_t)(ua % ub));
        if (b == -1) return 0;
        {
            int64_t r = a % b;
            if (r != 0 && ((r < 0) != (b < 0))) r += b;
            return wrapi(dt, r);
        }
    case IR_B_MIN: return u ? (ua < ub ? a : b) : (a < b ? a : b);
    case IR_B_MAX: return u ? (ua > ub ? a : b) : (a > b ? a : b);
    case IR_B_POW: return ipow(S, e, dt, a, b);
    case IR_B_SHL:
        if (u ? ub >= (uint64_t)bits : (b < 0 || b >= bits)) return 0;
        return wrapi(dt, (int64_t)(ua << b));
    case IR_B_SHR:
        if (u ? ub >= (uint64_t)bits : (b < 0 || b >= bits)) return (!u && a < 0) ? -1 : 0;
        if (u) return (int64_t)(ua >> b);
        return a >= 0 ? (a >> b) : (int64_t)~(~ua >> b); /* arithmetic shift */
    case IR_B_BITAND: return wrapi(dt, a & b);
    case IR_B_BITOR: return wrapi(dt, a | b);
    case IR_B_BITXOR: return wrapi(dt, a ^ b);
    case IR_B_LT: return u ? ua < ub : a < b;
    case IR_B_LE: return u ? ua <= ub : a <= b;
    case IR_B_GT: return u ? ua > ub : a > b;
    case IR_B_GE: return u ? ua >= ub : a >= b;
    case IR_B_EQ: return a == b;
    case IR_B_NE: return a != b;
    case IR_B_AND: return a && b;
    case IR_B_OR: return a || b;
    default: fail(S, e->loc, true, "internal: bad integer operator %d", op);
    }
}

static val fbin(ist *S, const ir_expr *e, int op, tile_dtype dt, double a, double b) {
    val r;
    switch (op) {
    case IR_B_ADD: r.f = rnd(S, dt, a + b); break;
    case IR_B_SUB: r.f = rnd(S, dt, a - b); break;
    case IR_B_MUL: r.f = rnd(S, dt, a * b); break;
    case IR_B_DIV: r.f = rnd(S, dt, a / b); break;
    case IR_B_FLOORDIV: r.f = rnd(S, dt, floor(a / b)); break;
    case IR_B_FLOORMOD: r.f = rnd(S, dt, a - floor(a / b) * b); break;
    case IR_B_MIN: r.f = fmin(a, b); break;
    case IR_B_MAX: r.f = fmax(a, b); break;
    case IR_B_POW: r.f = rnd(S, dt, pow(a, b)); break;
    case IR_B_LT: r.i = a < b; break;
    case IR_B_LE: r.i = a <= b; break;
    case IR_B_GT: r.i = a > b; break;
    case IR_B_GE: r.i = a >= b; break;
    case IR_B_EQ: r.i = a == b; break;
    case IR_B_NE: r.i = a != b; break;
    default: fail(S, e->loc, true, "internal: operator %d on floats", op);
    }
    return r;
}

static val call(ist *S, const ir_expr *e) {
    val a[3] = {{0}, {0}, {0}}, r;
    for (int i = 0; i < e->nargs && i < 3; i++) a[i] = eval(S, e->args[i]);
    tile_dtype at = e->args[0]->dtype, dt = e->dtype;
    int fn = e->op;
    if (!ISF(at)) {
        switch (fn) {
        case IR_I_ABS: r.i = ISU(at) ? a[0].i : wrapi(at, a[0].i < 0 ? (int64_t)(0 - (uint64_t)a[0].i) : a[0].i); return r;
        case IR_I_FLOOR: case IR_I_CEIL: case IR_I_ROUND: case IR_I_TRUNC: r.i = a[0].i; return r;
        default: fail(S, e->loc, true, "internal: %s on integers", ir_intrinsic_name((ir_intrinsic)fn));
        }
    }
    double x = a[0].f, y;
    switch (fn) {
    case IR_I_EXP: y = exp(x); break;
    case IR_I_EXP2: y = exp2(x); break;
    case IR_I_LOG: y = log(x); break;
    case IR_I_LOG2: y = log2(x); break;
    case IR_I_SQRT: y = sqrt(x); break;
    case IR_I_RSQRT: y = 1.0 / sqrt(x); break;
    case IR_I_TANH: y = tanh(x); break;
    case IR_I_ABS: y = fabs(x); break;
    case IR_I_SIN: y = sin(x); break;
    case IR_I_COS: y = cos(x); break;
    case IR_I_FLOOR: y = floor(x); break;
    case IR_I_CEIL: y = ceil(x); break;
    case IR_I_ROUND: y = nearbyint(x); break;
    case IR_I_TRUNC: y = trunc(x); break;
    case IR_I_ERF: y = erf(x); break;
    case IR_I_SIGMOID: y = 1.0 / (1.0 + exp(-x)); break;
    case IR_I_ISNAN: r.i = isnan(x) != 0; return r;
    case IR_I_ISINF: r.i = isinf(x) != 0; return r;
    case IR_I_FMA:
        if (!S->f64 && dt == TILE_DT_F32) y = (double)fmaf((float)x, (float)a[1].f, (float)a[2].f);
        else y = fma(x, a[1].f, a[2].f);
        break;
    default: fail(S, e->loc, true, "internal: bad intrinsic %d", fn);
    }
    r.f = rnd(S, dt, y);
    return r;
}

static val reinterpret(ist *S, const ir_expr *e, val v) {
    tile_dtype from = e->args[0]->dtype, to = e->dtype;
    uint64_t tmp = 0, bits;
    if (ISF(from)) {
        tile_store_f(from, &tmp, 0, v.f); /* rounds to the nominal dtype (f64 mode) */
        bits = tile_load_bits(from, &tmp, 0);
    } else {
        int nb = DBITS[from];
        bits = nb >= 64 ? (uint64_t)v.i : ((uint64_t)v.i & (((uint64_t)1 << nb) - 1));
    }
    tmp = 0;
    tile_store_bits(to, &tmp, 0, bits);
    val r;
    if (ISF(to)) r.f = tile_load_f(to, &tmp, 0);
    else r.i = tile_load_i(to, &tmp, 0);
    (void)S;
    return r;
}

static val eval(ist *S, const ir_expr *e) {
    val r;
    switch (e->kind) {
    case IR_E_CONST:
        if (ISF(e->dtype)) r.f = rnd(S, e->dtype, e->fval);
        else r.i = wrapi(e->dtype, e->ival);
        return r;
    case IR_E_VAR: return S->vars[e->var->id];
    case IR_E_LOAD: {
        inst *b = live(S, e->buf, e->loc);
        size_t off;
        if (!elem_offset(S, b, e->args, "read", e->loc, &off)) { r.i = 0; r.f = 0; return r; }
        check_read(S, b, off, "", e->loc);
        return ld(b, off);
    }
    case IR_E_UNARY: {
        val a = eval(S, e->args[0]);
        switch (e->op) {
        case IR_U_NEG:
            if (ISF(e->dtype)) r.f = -a.f;
            else r.i = wrapi(e->dtype, (int64_t)(0 - (uint64_t)a.i));
            return r;
        case IR_U_NOT: r.i = !a.i; return r;
        default: r.i = wrapi(e->dtype, ~a.i); return r;
        }
    }
    case IR_E_BINARY: {
        int op = e->op;
        if (op == IR_B_AND || op == IR_B_OR) {
            val a = eval(S, e->args[0]);
            if (op == IR_B_AND ? !a.i : a.i != 0) { r.i = op == IR_B_OR; return r; }
            r.i = eval(S, e->args[1]).i != 0;
            return r;
        }
        val a = eval(S, e->args[0]);
        val b = eval(S, e->args[1]);
        tile_dtype ot = e->args[0]->dtype;
        if (ISF(ot)) return fbin(S, e, op, e->dtype, a.f, b.f);
        r.i = ibin(S, e, op, ot, a.i, b.i);
        return r;
    }
    case IR_E_SELECT: {
        val c = eval(S, e->args[0]);
        return eval(S, c.i ? e->args[1] : e->args[2]);
    }
    case IR_E_CAST: return convert(S, eval(S, e->args[0]), e->args[0]->dtype, e->dtype);
    case IR_E_REINTERPRET: return reinterpret(S, e, eval(S, e->args[0]));
    case IR_E_CALL: return call(S, e);
    default: fail(S, e->loc, true, "internal: bad expression kind %d", (int)e->kind);
    }
}

/* ---------- regions and tile operations ---------- */
typedef struct rgn {
    inst *b;
    int rank;
    int64_t start[8], ext[8];
    int64_t count;
} rgn;

static void eval_region(ist *S, const ir_region *r, rgn *g, tile_loc loc) {
    g->b = live(S, r->buf, loc);
    g->rank = r->buf->rank;
    g->count = 1;
    for (int d = 0; d < g->rank; d++) {
        g->start[d] = eval(S, r->start[d]).i;
        g->ext[d] = eval(S, r->extent[d]).i;
        if (g->ext[d] < 0)
            fail(S, loc, true, "region of '%s' has negative extent %lld in dimension %d", r->buf->name, (long long)g->ext[d], d);
        if (g->ext[d] > 0 && g->count > MAX_ELEMS / g->ext[d]) fail(S, loc, true, "region of '%s' is too large", r->buf->name);
        g->count *= g->ext[d];
    }
}

static void put_rgn(tile_strbuf *sb, const rgn *g) {
    tile_sb_printf(sb, "%s[", g->b->b->name);
    for (int d = 0; d < g->rank; d++)
        tile_sb_printf(sb, "%s%lld : +%lld", d ? ", " : "", (long long)g->start[d], (long long)g->ext[d]);
    tile_sb_putc(sb, ']');
}

/* position t (offsets inside the box) -> element offset; false if outside the buffer */
static inline bool rgn_off(const rgn *g, const int64_t *t, size_t *off) {
    size_t o = 0;
    const inst *b = g->b;
    for (int d = 0; d < g->rank; d++) {
        int64_t p = g->start[d] + t[d];
        if ((uint64_t)p >= (uint64_t)b->shape[d]) return false;
        o += (size_t)p * (size_t)b->stride[d];
    }
    *off = o;
    return true;
}

static inline void odo_next(const rgn *g, int64_t *t) {
    for (int d = g->rank - 1; d >= 0; d--) {
        if (++t[d] < g->ext[d]) return;
        t[d] = 0;
    }
}

/* Tile operations count one step per element (or multiply-add) they process, so that
 * max_steps also bounds the time spent in huge tile operations. */
static void charge(ist *S, tile_loc loc, double work) {
    if (S->opt->max_steps <= 0) return;
    if (work > (double)S->opt->max_steps || (S->steps += (long)work) > S->opt->max_steps)
        fail(S, loc, true, "step limit exceeded (%ld statements executed)", S->opt->max_steps);
}

static void exec_copy(ist *S, const ir_stmt *s) {
    rgn src, dst;
    eval_region(S, &s->regions[0], &src, s->loc);
    eval_region(S, &s->regions[1], &dst, s->loc);
    if (src.count != dst.count) {
        tile_strbuf m = {0};
        tile_sb_puts(&m, "copy: the source ");
        put_rgn(&m, &src);
        tile_sb_printf(&m, " has %lld elements but the destination ", (long long)src.count);
        put_rgn(&m, &dst);
        tile_sb_printf(&m, " has %lld", (long long)dst.count);
        fail_sb(S, s->loc, true, &m);
    }
    charge(S, s->loc, (double)src.count);
    int64_t ts[8] = {0}, td[8] = {0};
    tile_dtype sd = src.b->dt, dd = dst.b->dt;
    val zero = {0};
    for (int64_t k = 0; k < src.count; k++) {
        size_t so, doff;
        val v = zero;
        if (rgn_off(&src, ts, &so)) {
            check_read(S, src.b, so, " by copy", s->loc);
            v = convert(S, ld(src.b, so), sd, dd);
        } else if (ISF(dd)) v.f = 0.0;
        if (rgn_off(&dst, td, &doff)) {
            st(dst.b, doff, v);
            note_write(S, dst.b, doff, ACC_WRITE, s->loc);
        }
        odo_next(&src, ts);
        odo_next(&dst, td);
    }
}

static void exec_fill(ist *S, const ir_stmt *s) {
    rgn g;
    eval_region(S, &s->regions[0], &g, s->loc);
    val v = convert(S, eval(S, s->value), s->value->dtype, g.b->dt);
    /* only the part of the box inside the buffer: the rest is dropped anyway */
    int64_t lo[8], hi[8], t[8];
    double n = 1;
    for (int d = 0; d < g.rank; d++) {
        lo[d] = g.start[d] < 0 ? -g.start[d] : 0;
        hi[d] = g.b->shape[d] - g.start[d];
        if (hi[d] > g.ext[d]) hi[d] = g.ext[d];
        if (lo[d] >= hi[d]) return;
        t[d] = lo[d];
        n *= (double)(hi[d] - lo[d]);
    }
    charge(S, s->loc, n);
    for (;;) {
        size_t off;
        if (rgn_off(&g, t, &off)) {
            st(g.b, off, v);
            note_write(S, g.b, off, ACC_WRITE, s->loc);
        }
        int d = g.rank - 1;
        for (; d >= 0; d--) {
            if (++t[d] < hi[d]) break;
            t[d] = lo[d];
        }
        if (d < 0) break;
    }
}

static val *scratch(ist *S, size_t n) {
    if (n > S->scratch_cap) {
        free(S->scratch);
        S->scratch = malloc(n * sizeof(val));
        S->scratch_cap = S->scratch ? n : 0;
    }
    return S->scratch;
}

/* 2-D view of a GEMM operand: rows/cols of its last two dims; leading extents must be 1. */
static void gemm_view(ist *S, const ir_stmt *s, const rgn *g, const char *which, int64_t *rows, int64_t *cols) {
    if (g->rank < 2) fail(S, s->loc, true, "gemm: operand %s ('%s') must be 2-D", which, g->b->b->name);
    for (int d = 0; d < g->rank - 2; d++)
        if (g->ext[d] != 1) {
            tile_strbuf m = {0};
            tile_sb_printf(&m, "gemm: operand %s region ", which);
            put_rgn(&m, g);
            tile_sb_puts(&m, " has a leading extent that is not 1");
            fail_sb(S, s->loc, true, &m);
        }
    *rows = g->ext[g->rank - 2];
    *cols = g->ext[g->rank - 1];
}

/* Copy a rows x cols operand region into dst (row-major, `width` columns; transposed when
 * `trans`), converted to ct; elements outside the buffer read as zero (tile-op clipping). */
static void gemm_gather(ist *S, const rgn *g, int64_t rows, int64_t cols, bool trans, int64_t width, tile_dtype ct, val *dst,
                        tile_loc loc) {
    int64_t t[8] = {0};
    bool fl = ISF(ct);
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++) {
            t[g->rank - 2] = i;
            t[g->rank - 1] = j;
            size_t off;
            val v = {0};
            if (rgn_off(g, t, &off)) {
                check_read(S, g->b, off, " by gemm", loc);
                v = convert(S, ld(g->b, off), g->b->dt, ct);
            } else if (fl) v.f = 0;
            dst[trans ? j * width + i : i * width + j] = v;
        }
}

static void exec_gemm(ist *S, const ir_stmt *s) {
    rgn A, B, C;
    eval_region(S, &s->regions[0], &A, s->loc);
    eval_region(S, &s->regions[1], &B, s->loc);
    eval_region(S, &s->regions[2], &C, s->loc);
    int64_t ar, ac, br, bc, cr, cc;
    gemm_view(S, s, &A, "A", &ar, &ac);
    gemm_view(S, s, &B, "B", &br, &bc);
    gemm_view(S, s, &C, "C", &cr, &cc);
    int64_t M = s->trans_a ? ac : ar, K = s->trans_a ? ar : ac;
    int64_t KB = s->trans_b ? bc : br, N = s->trans_b ? br : bc;
    if (M != cr || N != cc || K != KB) {
        tile_strbuf m = {0};
        tile_sb_puts(&m, "gemm: shapes do not match: A ");
        put_rgn(&m, &A);
        tile_sb_puts(&m, s->trans_a ? " (transposed), B " : ", B ");
        put_rgn(&m, &B);
        tile_sb_puts(&m, s->trans_b ? " (transposed), C " : ", C ");
        put_rgn(&m, &C);
        fail_sb(S, s->loc, true, &m);
    }
    tile_dtype cd = C.b->dt, ct = compute_dt(S, cd);
    bool fl = ISF(ct);
    if ((K > 0 && (M > ((int64_t)1 << 28) / K || N > ((int64_t)1 << 28) / K)))
        fail(S, s->loc, true, "gemm: operands of %lldx%lld and %lldx%lld elements are too large for the interpreter",
             (long long)M, (long long)K, (long long)K, (long long)N);
    charge(S, s->loc, (double)M * (double)N * (double)K + (double)ar * (double)ac + (double)br * (double)bc);
    size_t na = (size_t)(M * K), nb = (size_t)(K * N);
    val *va = scratch(S, na + nb + 1);
    if (!va) fail(S, s->loc, true, "gemm: out of memory");
    val *vb = va + na;
    /* gather op(A) as M x K and op(B) as K x N, converted to the accumulator type */
    gemm_gather(S, &A, ar, ac, s->trans_a, K, ct, va, s->loc);
    gemm_gather(S, &B, br, bc, s->trans_b, N, ct, vb, s->loc);
    int64_t t[8] = {0};
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            t[C.rank - 2] = i;
            t[C.rank - 1] = j;
            size_t off;
            if (!rgn_off(&C, t, &off)) continue;
            val acc = {0};
            if (s->clear) {
                if (fl) acc.f = 0;
            } else {
                check_read(S, C.b, off, " by gemm", s->loc);
                acc = convert(S, ld(C.b, off), cd, ct);
            }
            if (ct == TILE_DT_F32) {
                float a32 = (float)acc.f;
                for (int64_t k = 0; k < K; k++) {
                    float p = (float)(va[i * K + k].f * vb[k * N + j].f); /* exact product, one rounding */
                    a32 = (float)((double)a32 + (double)p);
                }
                acc.f = a32;
            } else if (fl) {
                double a64 = acc.f;
                for (int64_t k = 0; k < K; k++) {
                    double p = va[i * K + k].f * vb[k * N + j].f;
                    a64 = a64 + p;
                }
                acc.f = a64;
            } else {
                uint64_t a = (uint64_t)acc.i;
                for (int64_t k = 0; k < K; k++) {
                    a = (uint64_t)wrapi(ct, (int64_t)(a + (uint64_t)va[i * K + k].i * (uint64_t)vb[k * N + j].i));
                }
                acc.i = (int64_t)a;
            }
            st(C.b, off, convert(S, acc, ct, cd));
            note_write(S, C.b, off, ACC_WRITE, s->loc);
        }
}

static void exec_reduce(ist *S, const ir_stmt *s) {
    rgn src, dst;
    eval_region(S, &s->regions[0], &src, s->loc);
    eval_region(S, &s->regions[1], &dst, s->loc);
    int dim = s->dim;
    if (dim < 0 || dim >= src.rank) fail(S, s->loc, true, "reduce: dim %d out of range", dim);
    int64_t len = src.ext[dim];
    int64_t nout = len ? src.count / len : 0;
    if (len == 0) { /* count is 0: compute the number of outputs directly */
        nout = 1;
        for (int d = 0; d < src.rank; d++)
            if (d != dim) nout *= src.ext[d];
    }
    if (nout != dst.count) {
        tile_strbuf m = {0};
        tile_sb_puts(&m, "reduce: ");
        put_rgn(&m, &src);
        tile_sb_printf(&m, " over dim %d gives %lld elements but the destination ", dim, (long long)nout);
        put_rgn(&m, &dst);
        tile_sb_printf(&m, " has %lld", (long long)dst.count);
        fail_sb(S, s->loc, true, &m);
    }
    charge(S, s->loc, (double)nout * (double)(len + 1));
    tile_dtype dd = dst.b->dt, ct = compute_dt(S, dd), sd = src.b->dt;
    bool fl = ISF(ct);
    int op = s->reduce_op;
    int64_t imin = ISU(ct) ? 0 : (DBITS[ct] >= 64 ? INT64_MIN : -((int64_t)1 << (DBITS[ct] - 1)));
    int64_t imax = ISU(ct) ? (DBITS[ct] >= 64 ? -1 : (int64_t)(((uint64_t)1 << DBITS[ct]) - 1))
                           : (DBITS[ct] >= 64 ? INT64_MAX : ((int64_t)1 << (DBITS[ct] - 1)) - 1);
    if (ct == TILE_DT_BOOL) { imin = 0; imax = 1; }
    int64_t ts[8] = {0}, td[8] = {0};
    for (int64_t o = 0; o < nout; o++) {
        size_t doff;
        bool din = rgn_off(&dst, td, &doff);
        if (din) {
            val acc;
            if (!s->clear) {
                check_read(S, dst.b, doff, " by reduce", s->loc);
                acc = convert(S, ld(dst.b, doff), dd, ct);
            } else if (fl) {
                acc.f = op == IR_RED_MAX ? -INFINITY : op == IR_RED_MIN ? INFINITY : 0.0;
            } else {
                acc.i = op == IR_RED_MAX ? imin : op == IR_RED_MIN ? imax : 0;
            }
            for (int64_t k = 0; k < len; k++) {
                ts[dim] = k;
                size_t so;
                if (!rgn_off(&src, ts, &so)) continue; /* clipped elements do not take part */
                check_read(S, src.b, so, " by reduce", s->loc);
                val x = convert(S, ld(src.b, so), sd, ct);
                if (fl) {
                    double v = x.f;
                    if (op == IR_RED_ABSSUM || op == IR_RED_ABSMAX) v = fabs(v);
                    if (op == IR_RED_SUM || op == IR_RED_ABSSUM) acc.f = rnd(S, ct, acc.f + v);
                    else if (op == IR_RED_MIN) acc.f = fmin(acc.f, v);
                    else acc.f = fmax(acc.f, v);
                } else {
                    int64_t v = x.i;
                    bool u = ISU(ct);
                    if ((op == IR_RED_ABSSUM || op == IR_RED_ABSMAX) && !u && v < 0) v = wrapi(ct, (int64_t)(0 - (uint64_t)v));
                    if (op == IR_RED_SUM || op == IR_RED_ABSSUM) acc.i = wrapi(ct, (int64_t)((uint64_t)acc.i + (uint64_t)v));
                    else if (op == IR_RED_MIN) acc.i = u ? ((uint64_t)v < (uint64_t)acc.i ? v : acc.i) : (v < acc.i ? v : acc.i);
                    else acc.i = u ? ((uint64_t)v > (uint64_t)acc.i ? v : acc.i) : (v > acc.i ? v : acc.i);
                }
            }
            st(dst.b, doff, convert(S, acc, ct, dd));
            note_write(S, dst.b, doff, ACC_WRITE, s->loc);
        }
        /* next output position: odometer over the source dims except `dim` */
        ts[dim] = 0;
        for (int d = src.rank - 1; d >= 0; d--) {
            if (d == dim) continue;
            if (++ts[d] < src.ext[d]) break;
            ts[d] = 0;
        }
        odo_next(&dst, td);
    }
}

/* ---------- statements ---------- */
enum { FLOW_NORMAL = 0, FLOW_BREAK = 1, FLOW_CONTINUE = 2 };

static int exec(ist *S, const ir_stmt *s);

static int exec_body(ist *S, const ir_stmt *s) {
    int mark = S->nframes;
    int fl = exec(S, s);
    if (S->nframes > mark) pop_frames(S, mark);
    return fl;
}

static void push_loop(ist *S, const ir_var *v) {
    if (S->nloops == S->caploops) {
        S->caploops = S->caploops ? 2 * S->caploops : 16;
        S->loops = tile_xrealloc(S->loops, sizeof(*S->loops) * (size_t)S->caploops);
    }
    S->loops[S->nloops++] = v;
}

static const ir_stmt *single_child(const ir_stmt *s) {
    const ir_stmt *c = (s->body && s->nbody >= 1) ? s->body[0] : NULL;
    while (c && c->kind == IR_S_SEQ && c->nbody == 1 && c->body) c = c->body[0];
    return c;
}

#define PAR_VALS_CAP ((size_t)1 << 22)

static void record_iteration(ist *S) {
    S->par_iter++;
    size_t n = (size_t)S->par_n;
    if (S->par_nvals + n > PAR_VALS_CAP || (size_t)S->par_iter * n != S->par_nvals) return;
    if (S->par_nvals + n > S->par_capvals) {
        S->par_capvals = S->par_capvals ? 2 * S->par_capvals : 1024;
        S->par_vals = tile_xrealloc(S->par_vals, sizeof(int32_t) * S->par_capvals);
    }
    for (size_t k = 0; k < n; k++) S->par_vals[S->par_nvals++] = (int32_t)S->vars[S->par_vars[k]->id].i;
}

static int exec_for(ist *S, const ir_stmt *s) {
    int64_t lo = eval(S, s->lo).i, ext = eval(S, s->extent).i;
    bool head = false;
    if (s->loop_kind == IR_LOOP_PARALLEL && s->par_group_depth >= 1 && !S->par_active && S->ck_races &&
        s->par_group_depth <= 16) {
        const ir_stmt *l = s;
        int n = s->par_group_depth;
        S->par_vars[0] = s->var;
        for (int k = 1; k < n && l; k++) {
            l = single_child(l);
            if (l && l->kind == IR_S_FOR) S->par_vars[k] = l->var;
            else l = NULL;
        }
        if (l) {
            head = true;
            S->par_active = true;
            S->par_head = s;
            S->par_inner = l;
            S->par_n = n;
            S->par_epoch = ++S->epoch;
            S->par_iter = -1;
            S->par_nvals = 0;
        }
    }
    const ir_var *v = s->var;
    push_loop(S, v);
    int64_t id = v->id;
    bool inner = S->par_active && S->par_inner == s;
    for (int64_t i = lo; i < lo + ext; i++) {
        S->vars[id].i = (int32_t)i;
        if (inner) record_iteration(S);
        int fl = exec_body(S, s->body[0]);
        if (fl == FLOW_BREAK) break;
    }
    S->nloops--;
    if (head) {
        S->par_active = false;
        S->par_head = S->par_inner = NULL;
    }
    return FLOW_NORMAL;
}

static int exec_kernel(ist *S, const ir_stmt *s) {
    if (S->in_kernel) fail(S, s->loc, true, "kernels cannot be nested");
    int64_t g[3] = {1, 1, 1}, total = 1;
    for (int d = 0; d < s->ngrid; d++) {
        g[d] = eval(S, s->grid[d]).i;
        if (g[d] < 0) fail(S, s->loc, true, "kernel grid dimension %d is negative (%lld)", d, (long long)g[d]);
        if (g[d] > 0 && total > MAX_ELEMS / g[d]) fail(S, s->loc, true, "kernel grid is too large");
        total *= g[d];
        S->grid[d] = g[d];
    }
    S->ngrid = s->ngrid;
    S->kernel = s;
    S->in_kernel = true;
    S->blk_active = S->ck_races;
    S->blk_epoch = ++S->epoch;
    for (int64_t lin = 0; lin < total; lin++) {
        int64_t r = lin;
        for (int d = 0; d < s->ngrid; d++) {
            S->vars[s->block_vars[d]->id].i = r % g[d];
            r /= g[d];
        }
        S->block_lin = lin;
        exec_body(S, s->body[0]);
    }
    S->in_kernel = false;
    S->blk_active = false;
    S->kernel = NULL;
    return FLOW_NORMAL;
}

static int exec(ist *S, const ir_stmt *s) {
    if (++S->steps > S->opt->max_steps && S->opt->max_steps > 0)
        fail(S, s->loc, true, "step limit exceeded (%ld statements executed)", S->opt->max_steps);
    switch (s->kind) {
    case IR_S_SEQ: {
        int mark = S->nframes, fl = FLOW_NORMAL;
        for (int i = 0; i < s->nbody; i++) {
            fl = exec(S, s->body[i]);
            if (fl != FLOW_NORMAL) break;
        }
        if (S->nframes > mark) pop_frames(S, mark);
        return fl;
    }
    case IR_S_FOR: return exec_for(S, s);
    case IR_S_WHILE:
        while (eval(S, s->cond).i) {
            if (exec_body(S, s->body[0]) == FLOW_BREAK) break;
        }
        return FLOW_NORMAL;
    case IR_S_IF:
        if (eval(S, s->cond).i) return exec_body(S, s->body[0]);
        if (s->nbody >= 2 && s->body[1]) return exec_body(S, s->body[1]);
        return FLOW_NORMAL;
    case IR_S_ASSIGN: S->vars[s->var->id] = eval(S, s->value); return FLOW_NORMAL;
    case IR_S_STORE: {
        val v = eval(S, s->value);
        inst *b = live(S, s->buf, s->loc);
        size_t off;
        if (!elem_offset(S, b, s->idx, "write", s->loc, &off)) return FLOW_NORMAL;
        if (ISF(b->dt) && !ISF(s->value->dtype)) v = convert(S, v, s->value->dtype, b->dt);
        st(b, off, v);
        note_write(S, b, off, ACC_WRITE, s->loc);
        return FLOW_NORMAL;
    }
    case IR_S_ATOMIC: {
        val v = eval(S, s->value);
        inst *b = live(S, s->buf, s->loc);
        size_t off;
        if (!elem_offset(S, b, s->idx, "atomic update", s->loc, &off)) return FLOW_NORMAL;
        if (b->init && !is_init(b, off) && s->atomic_op != IR_ATOMIC_STORE) uninit(S, b, off, " by an atomic update", s->loc);
        if (S->par_active || S->blk_active) track(S, b, off, ACC_ATOMIC, s->loc);
        tile_dtype ct = compute_dt(S, b->dt);
        val old = convert(S, ld(b, off), b->dt, ct);
        val x = convert(S, v, s->value->dtype, ct), r;
        if (s->atomic_op == IR_ATOMIC_STORE) r = x;
        else if (s->atomic_op == IR_ATOMIC_LOAD) r = old;
        else if (ISF(ct)) {
            if (s->atomic_op == IR_ATOMIC_ADD) r.f = rnd(S, ct, old.f + x.f);
            else if (s->atomic_op == IR_ATOMIC_MAX) r.f = fmax(old.f, x.f);
            else r.f = fmin(old.f, x.f);
        } else {
            if (s->atomic_op == IR_ATOMIC_ADD) r.i = wrapi(ct, (int64_t)((uint64_t)old.i + (uint64_t)x.i));
            else if (s->atomic_op == IR_ATOMIC_OR) r.i = old.i | x.i;
            else if (s->atomic_op == IR_ATOMIC_AND) r.i = old.i & x.i;
            else if (s->atomic_op == IR_ATOMIC_XOR) r.i = old.i ^ x.i;
            else r.i = ibin(S, NULL, s->atomic_op == IR_ATOMIC_MAX ? IR_B_MAX : IR_B_MIN, ct, old.i, x.i);
        }
        st(b, off, convert(S, r, ct, b->dt));
        set_init(b, off);
        if (s->var) S->vars[s->var->id] = old;
        return FLOW_NORMAL;
    }
    case IR_S_ALLOC: exec_alloc(S, s); return FLOW_NORMAL;
    case IR_S_KERNEL: return exec_kernel(S, s);
    case IR_S_COPY: exec_copy(S, s); return FLOW_NORMAL;
    case IR_S_FILL: exec_fill(S, s); return FLOW_NORMAL;
    case IR_S_GEMM: exec_gemm(S, s); return FLOW_NORMAL;
    case IR_S_REDUCE: exec_reduce(S, s); return FLOW_NORMAL;
    case IR_S_BREAK: return FLOW_BREAK;
    case IR_S_CONTINUE: return FLOW_CONTINUE;
    case IR_S_ASSERT:
        if (!eval(S, s->cond).i) fail(S, s->loc, true, "assertion failed: %s", s->msg ? s->msg : "(no message)");
        return FLOW_NORMAL;
    default: fail(S, s->loc, true, "internal: bad statement kind %d", (int)s->kind);
    }
}

/* ---------- entry points ---------- */
void interp_options_default(interp_options *o) {
    memset(o, 0, sizeof *o);
    o->check_bounds = true;
    o->check_uninit = true;
    o->check_races = true;
    o->f64_mode = false;
    o->max_steps = 0;
}

static ist *state_new(const ir_func *f, const interp_options *opt, tile_strbuf *err) {
    ist *S = tile_xcalloc(1, sizeof *S);
    S->f = f;
    S->opt = opt;
    S->f64 = opt->f64_mode;
    S->ck_bounds = opt->check_bounds;
    S->ck_uninit = opt->check_uninit;
    S->ck_races = opt->check_races;
    S->err = err;
    S->vars = tile_xcalloc((size_t)f->nvars + 1, sizeof(val));
    S->cur = tile_xcalloc((size_t)f->nbuffers + 1, sizeof(inst *));
    S->fixed = tile_xcalloc((size_t)(f->nparams + f->nrets) + 1, sizeof(inst));
    return S;
}

static void cleanup_all(ist *S) {
    pop_frames(S, 0);
    for (int i = 0; i < S->nfixed; i++) inst_free(&S->fixed[i]);
    free(S->fixed);
    free(S->frames);
    free(S->loops);
    free(S->par_vals);
    free(S->scratch);
    free(S->vars);
    free(S->cur);
    free(S);
}

/* Binds sizes and scalar parameters. */
static void bind_scalars(ist *S, const interp_args *a) {
    const ir_func *f = S->f;
    if (f->nsizes > 0 && (!a || !a->sizes)) fail(S, f->loc, false, "no values given for the sizes of '%s'", f->name);
    for (int i = 0; i < f->nsizes; i++) {
        const ir_var *v = f->sizes[i];
        S->vars[v->id].i = wrapi(v->dtype, a->sizes[i]);
    }
    for (int i = 0; i < f->nparams; i++) {
        const ir_var *v = f->params[i].var;
        if (!v) continue;
        if (ISF(v->dtype)) {
            if (!a || !a->scalar_f) fail(S, f->loc, false, "no value given for the scalar parameter '%s'", v->name);
            S->vars[v->id].f = rnd(S, v->dtype, a->scalar_f[i]);
        } else {
            if (!a || !a->scalar_i) fail(S, f->loc, false, "no value given for the scalar parameter '%s'", v->name);
            S->vars[v->id].i = wrapi(v->dtype, a->scalar_i[i]);
        }
    }
}

static void bind_tensor(ist *S, const ir_buffer *b, interp_tensor *t, bool output, const char *what) {
    inst *in = &S->fixed[S->nfixed++];
    eval_shape(S, b, in, S->f->loc);
    if (!t || !t->data) {
        if (in->n == 0) {
            in->data = NULL;
        } else {
            fail(S, S->f->loc, false, "no data given for %s '%s'", what, b->name);
        }
    } else {
        in->data = t->data;
    }
    for (int d = 0; d < b->rank; d++)
        if (t && t->shape[d] != in->shape[d]) {
            tile_strbuf m = {0};
            tile_sb_printf(&m, "%s '%s' has shape ", what, b->name);
            for (int k = 0; k < b->rank; k++) tile_sb_printf(&m, "%s%lld", k ? "x" : "", (long long)t->shape[k]);
            tile_sb_printf(&m, " but '%s' expects ", S->f->name);
            put_shape(&m, in);
            fail_sb(S, S->f->loc, false, &m);
        }
    if (!in->data) {
        static uint64_t dummy;
        in->data = &dummy;
    }
    in->owned = false;
    if (output && S->ck_uninit) {
        in->init = calloc((in->n + 63) / 64 + 1, sizeof(uint64_t));
        if (!in->init) fail(S, S->f->loc, false, "out of memory for the uninitialised-read shadow of '%s'", b->name);
    }
    S->cur[b->id] = in;
}

static void format_diags(const tile_diags *d, tile_strbuf *err) {
    if (!err) return;
    for (int i = 0; i < d->len; i++) tile_diag_format(&d->items[i], err);
}

int interp_run(const ir_func *f, const interp_args *args, const interp_options *opt, tile_strbuf *err) {
    interp_options dflt;
    if (!opt) {
        interp_options_default(&dflt);
        opt = &dflt;
    }
    tile_diags d;
    tile_diags_init(&d);
    if (!ir_verify_func(f, &d)) {
        format_diags(&d, err);
        tile_diags_free(&d);
        return 1;
    }
    tile_diags_free(&d);
    ist *S = state_new(f, opt, err);
    if (setjmp(S->jb)) {
        cleanup_all(S);
        return 1;
    }
    bind_scalars(S, args);
    for (int i = 0; i < f->nparams; i++)
        if (f->params[i].buf) bind_tensor(S, f->params[i].buf, args && args->params ? &args->params[i] : NULL, false, "tensor parameter");
    for (int i = 0; i < f->nrets; i++)
        bind_tensor(S, f->rets[i], args && args->rets ? &args->rets[i] : NULL, true, "output");
    exec_body(S, f->body);
    cleanup_all(S);
    return 0;
}

int interp_buffer_shape(const ir_func *f, const ir_buffer *b, const interp_args *args, int64_t shape[8], tile_strbuf *err) {
    interp_options o;
    interp_options_default(&o);
    if (!f || !b || b->rank < 0 || b->rank > 8 || b->id < 0 || b->id >= f->nbuffers) {
        if (err) tile_sb_puts(err, "error: interp_buffer_shape: bad buffer\n");
        return 1;
    }
    ist *S = state_new(f, &o, err);
    if (setjmp(S->jb)) {
        cleanup_all(S);
        return 1;
    }
    bind_scalars(S, args);
    inst in;
    memset(&in, 0, sizeof in);
    eval_shape(S, b, &in, b->loc);
    for (int d = 0; d < 8; d++) shape[d] = d < b->rank ? in.shape[d] : 0;
    cleanup_all(S);
    return 0;
}

int interp_tensor_alloc(const ir_func *f, const ir_buffer *b, const interp_args *args, bool f64_mode, interp_tensor *t,
                        tile_strbuf *err) {
    memset(t, 0, sizeof *t);
    if (interp_buffer_shape(f, b, args, t->shape, err)) return 1;
    size_t n = 1;
    for (int d = 0; d < b->rank; d++) n *= (size_t)t->shape[d];
    tile_dtype sdt = (f64_mode && tile_dtype_is_float(b->dtype)) ? TILE_DT_F64 : b->dtype;
    size_t bytes = tile_dtype_storage_bytes(sdt, n);
    t->data = calloc(bytes ? bytes : 1, 1);
    if (!t->data) {
        if (err) tile_sb_printf(err, "error: cannot allocate %zu bytes for '%s'\n", bytes, b->name);
        return 1;
    }
    return 0;
}

void interp_tensor_free(interp_tensor *t) {
    if (!t) return;
    free(t->data);
    t->data = NULL;
}
