/* c.c — Tile IR -> C: the CPU backend's code generator.
 *
 * One translation unit per function:
 *   - the prelude (prelude.h, embedded at build time with convert.h and cpu_abi.h);
 *   - `tile_st`, the function's state: one field per variable and per buffer (data pointer,
 *     dims, strides). Every generated C function starts by copying the state into locals
 *     (TILE_LOAD_STATE) so the body refers to plain locals `vN` / `bN`; before a kernel
 *     launch or a parallel loop the current locals are saved into a fresh state the workers
 *     read (TILE_SAVE_STATE);
 *   - one function per kernel body (called per block, blocks spread over the pool), one per
 *     parallel plain-form loop outside kernels (chunks of iterations over the pool), the main
 *     body, and `tile_entry`.
 *
 * Values: bool is int (0/1), integers their C type, f32 and every sub-32-bit float are
 * float (a float holds each of their values exactly), f64 is double. Integer arithmetic
 * wraps (done in unsigned types); f32 + - * / are C float operations (with
 * -ffp-contract=off they round exactly as the interpreter's double-then-round); other float
 * functions are computed in double and rounded once, as the interpreter does. Index
 * expressions (element offsets, region starts, loop bounds, shapes) are computed in int64
 * without wrapping: only a program whose index arithmetic overflows could tell, and such an
 * index is out of bounds anyway.
 */
#include "codegen.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "prelude_text.h"
#include "../opt/deps.h"

const char *tile_codegen_c_prelude(void) { return tile_cpu_prelude_text; }

/* ---------- dtypes ---------- */
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
static const char *const DNAME[TILE_DT_COUNT] = {
#define X(e, name, bits, kind) #e,
    TILE_DTYPES(X)
#undef X
};
#define ISF(dt) (DK[(dt)] == 'F')
#define ISU(dt) (DK[(dt)] == 'U')
#define ISB(dt) (DK[(dt)] == 'B')
#define ISNARROWF(dt) (ISF(dt) && (dt) != TILE_DT_F32 && (dt) != TILE_DT_F64)

static bool dt_ok(tile_dtype dt) { return (int)dt >= 0 && (int)dt < TILE_DT_COUNT; }

/* C type of a value of dt (shared with the SIMT generator: codegen.h) */
const char *codegen_value_ctype(tile_dtype dt) {
    switch (dt) {
    case TILE_DT_BOOL: return "int";
    case TILE_DT_I8: return "int8_t";
    case TILE_DT_I16: return "int16_t";
    case TILE_DT_I32: return "int32_t";
    case TILE_DT_I64: return "int64_t";
    case TILE_DT_U8: return "uint8_t";
    case TILE_DT_U16: return "uint16_t";
    case TILE_DT_U32: return "uint32_t";
    case TILE_DT_U64: return "uint64_t";
    case TILE_DT_F64: return "double";
    default: return "float";
    }
}
static const char *vtype(tile_dtype dt) { return codegen_value_ctype(dt); }
/* C type of one stored element of dt (fp4: bytes holding two) */
static const char *stype(tile_dtype dt) {
    switch (dt) {
    case TILE_DT_BOOL: return "uint8_t";
    case TILE_DT_F16: case TILE_DT_BF16: return "uint16_t";
    case TILE_DT_FP8_E4M3: case TILE_DT_FP8_E5M2: case TILE_DT_FP4_E2M1: return "uint8_t";
    case TILE_DT_F32: return "float";
    default: return vtype(dt);
    }
}
static const char *isfx(tile_dtype dt) {
    switch (dt) {
    case TILE_DT_I8: return "i8";
    case TILE_DT_I16: return "i16";
    case TILE_DT_I32: return "i32";
    case TILE_DT_I64: return "i64";
    case TILE_DT_U8: return "u8";
    case TILE_DT_U16: return "u16";
    case TILE_DT_U32: return "u32";
    case TILE_DT_U64: return "u64";
    case TILE_DT_BOOL: return "u8";
    default: return "i32";
    }
}
static const char *nsfx(tile_dtype dt) {
    switch (dt) {
    case TILE_DT_F16: return "f16";
    case TILE_DT_BF16: return "bf16";
    case TILE_DT_FP8_E4M3: return "e4m3";
    case TILE_DT_FP8_E5M2: return "e5m2";
    default: return "e2m1";
    }
}
static const char *uwide(tile_dtype dt) { return DBITS[dt] > 32 ? "uint64_t" : "uint32_t"; }

/* ---------- generator state ---------- */
typedef struct fnctx {
    tile_strbuf body;
    bool kernel_body;    /* a kernel's block function: big buffers come from the worker's scratch */
    bool range_body;     /* an outlined parallel loop's function: the same scratch */
    bool *heap;          /* per buffer id: this function allocates it on the heap */
    size_t stack_bytes;
    struct fnctx *parent;
} fnctx;

typedef struct gen {
    const ir_func *f;
    const tile_codegen_c_options *opt;
    tile_strbuf fns;     /* finished outlined functions */
    tile_strbuf decls;   /* forward declarations */
    tile_strbuf msgs;    /* static message strings */
    int nmsgs, nfuncs, ntmp;
    int indent;
    int in_parallel;     /* inside a kernel body or an outlined loop */
    const ir_var *row_var; /* the loop variable of the outlined parallel loop being generated */
    const ir_stmt *row_body; /* its body */
    const ir_stmt *par_nest; /* the outermost loop of the T.Parallel nest being emitted (--explain) */
    int row_t;             /* its tmp number (lo<row_t> + end_ is the end of the worker's range) */
    bool row_reads_ahead;  /* its read pass prefetches ahead (tile_row_expsumf): no next-row prefetch in its write loops */
    bool may_fail;       /* the statement being generated contains an operation that can fail */
    bool *constshape;    /* per buffer: every dim is a constant */
    int64_t (*cdims)[8]; /* per buffer: the constant dims */
    fnctx *fn;
    tile_strbuf *err;
    bool failed;
} gen;

static tile_strbuf *B(gen *G) { return &G->fn->body; }

static void ind(gen *G) {
    for (int i = 0; i < G->indent; i++) tile_sb_puts(B(G), "    ");
}
__attribute__((format(printf, 2, 3))) static void line(gen *G, const char *fmt, ...) {
    ind(G);
    va_list ap;
    va_start(ap, fmt);
    tile_sb_vprintf(B(G), fmt, ap);
    va_end(ap);
    tile_sb_putc(B(G), '\n');
}

static void gfail(gen *G, tile_loc loc, const char *what) {
    if (G->failed) return;
    G->failed = true;
    tile_diag dg = {TILE_DIAG_ERROR, loc, (char *)what};
    tile_diag_format(&dg, G->err);
}

/* A static string holding the formatted diagnostic `msg` at loc; returns its name index. */
static int msg_at(gen *G, tile_loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int msg_at(gen *G, tile_loc loc, const char *fmt, ...) {
    tile_strbuf m = {0}, d = {0};
    va_list ap;
    va_start(ap, fmt);
    tile_sb_vprintf(&m, fmt, ap);
    va_end(ap);
    tile_diag dg = {TILE_DIAG_ERROR, loc, m.data ? m.data : (char *)""};
    tile_diag_format(&dg, &d);
    int id = G->nmsgs++;
    tile_sb_printf(&G->msgs, "static const char tile_msg%d[] = \"", id);
    for (size_t i = 0; d.data && i < d.len; i++) {
        unsigned char c = (unsigned char)d.data[i];
        if (c == '\\' || c == '"') tile_sb_printf(&G->msgs, "\\%c", c);
        else if (c == '\n') tile_sb_puts(&G->msgs, "\\n");
        else if (c < 32 || c >= 127) tile_sb_printf(&G->msgs, "\\%03o", c);
        else if (c == '?') tile_sb_puts(&G->msgs, "\\?");
        else tile_sb_putc(&G->msgs, (char)c);
    }
    tile_sb_puts(&G->msgs, "\";\n");
    tile_sb_free(&m);
    tile_sb_free(&d);
    return id;
}

/* ---------- variables and buffers ---------- */
static bool var_is_i64(const ir_var *v) { return v->kind == IR_VAR_LOOP || v->kind == IR_VAR_BLOCK; }
static const char *var_ctype(const ir_var *v) {
    if (var_is_i64(v)) return "int64_t";
    if (v->kind == IR_VAR_SIZE) return "int32_t";
    return vtype(v->dtype);
}

static void put_stride(gen *G, tile_strbuf *sb, const ir_buffer *b, int d) {
    if (G->constshape[b->id]) {
        int64_t s = 1;
        for (int k = d + 1; k < b->rank; k++) s *= G->cdims[b->id][k];
        tile_sb_printf(sb, "INT64_C(%lld)", (long long)s);
    } else {
        tile_sb_printf(sb, "b%d_s%d", b->id, d);
    }
}
static void put_dim(gen *G, tile_strbuf *sb, const ir_buffer *b, int d) {
    if (G->constshape[b->id]) tile_sb_printf(sb, "INT64_C(%lld)", (long long)G->cdims[b->id][d]);
    else tile_sb_printf(sb, "b%d_n%d", b->id, d);
}

/* ---------- expressions ---------- */
enum { M_VALUE = 0, M_INDEX = 1 };
static void gexpr(gen *G, tile_strbuf *sb, const ir_expr *e, int mode);

static void put_float_const(tile_strbuf *sb, tile_dtype dt, double v) {
    if (dt == TILE_DT_F64) {
        if (isnan(v)) tile_sb_puts(sb, "__builtin_nan(\"\")");
        else if (isinf(v)) tile_sb_puts(sb, v > 0 ? "__builtin_inf()" : "(-__builtin_inf())");
        else tile_sb_printf(sb, "%a", v);
        return;
    }
    double r = dt == TILE_DT_F32 ? (double)(float)v : tile_round_to(dt, v);
    if (isnan(r)) tile_sb_puts(sb, "__builtin_nanf(\"\")");
    else if (isinf(r)) tile_sb_puts(sb, r > 0 ? "__builtin_inff()" : "(-__builtin_inff())");
    else tile_sb_printf(sb, "%af", r);
}

static void put_int_const(tile_strbuf *sb, tile_dtype dt, int64_t v) {
    if (ISB(dt)) { tile_sb_puts(sb, v ? "1" : "0"); return; }
    v = tile_wrap_int(dt, v);
    if (dt == TILE_DT_U64) tile_sb_printf(sb, "UINT64_C(%llu)", (unsigned long long)v);
    else if (v == INT64_MIN) tile_sb_puts(sb, "INT64_MIN");
    else if (dt == TILE_DT_I64 || dt == TILE_DT_U32) tile_sb_printf(sb, "((%s)INT64_C(%lld))", vtype(dt), (long long)v);
    else tile_sb_printf(sb, "((%s)%lld)", vtype(dt), (long long)v);
}

/* conversion of the C expression `x` holding a value of dtype `from` to dtype `to` */
static void put_conv(tile_strbuf *sb, tile_dtype from, tile_dtype to, const char *x) {
    if (from == to || (ISNARROWF(from) && to == TILE_DT_F32)) { tile_sb_printf(sb, "(%s)", x); return; }
    if (ISF(to)) {
        /* integers round once from the exact value (C's conversion does for f32/f64) */
        if (to == TILE_DT_F64) tile_sb_printf(sb, "((double)(%s))", x);
        else if (to == TILE_DT_F32) tile_sb_printf(sb, "((float)(%s))", x);
        else if (ISF(from)) tile_sb_printf(sb, "tile_rnd_%s((double)(%s))", nsfx(to), x);
        else if (DBITS[from] <= 32) tile_sb_printf(sb, "tile_rnd_%s((double)(%s))", nsfx(to), x);
        else if (from == TILE_DT_U64) tile_sb_printf(sb, "tile_u2n(TDT_%s, (uint64_t)(%s))", DNAME[to], x);
        else tile_sb_printf(sb, "tile_i2n(TDT_%s, (int64_t)(%s))", DNAME[to], x);
        return;
    }
    if (ISB(to)) { tile_sb_printf(sb, "((%s) != 0)", x); return; }
    if (ISF(from)) { tile_sb_printf(sb, "tile_f2i_%s((double)(%s))", isfx(to), x); return; }
    tile_sb_printf(sb, "((%s)(%s))", vtype(to), x);
}

static char *expr_str(gen *G, const ir_expr *e, int mode) {
    tile_strbuf s = {0};
    gexpr(G, &s, e, mode);
    if (!s.data) tile_sb_puts(&s, "0");
    return s.data;
}

/* element offset of buf[idx...] (int64 expression) */
static void put_offset(gen *G, tile_strbuf *sb, const ir_buffer *b, ir_expr *const *idx, tile_loc loc) {
    if (b->rank == 0) { tile_sb_puts(sb, "0"); return; }
    int chk = -1;
    if (G->opt && G->opt->bounds_checks) {
        chk = msg_at(G, loc, "out-of-bounds access of %s", b->name);
        G->may_fail = true;
    }
    tile_sb_putc(sb, '(');
    for (int d = 0; d < b->rank; d++) {
        if (d) tile_sb_puts(sb, " + ");
        if (chk >= 0) {
            tile_sb_puts(sb, "tile_chk(ctx, ");
            gexpr(G, sb, idx[d], M_INDEX);
            tile_sb_puts(sb, ", ");
            put_dim(G, sb, b, d);
            tile_sb_printf(sb, ", tile_msg%d)", chk);
        } else {
            tile_sb_putc(sb, '(');
            gexpr(G, sb, idx[d], M_INDEX);
            tile_sb_putc(sb, ')');
        }
        if (d < b->rank - 1) {
            tile_sb_puts(sb, " * ");
            put_stride(G, sb, b, d);
        }
    }
    tile_sb_putc(sb, ')');
}

/* value of element `off` of buffer b */
static void put_load(tile_strbuf *sb, const ir_buffer *b, const char *off) {
    switch (b->dtype) {
    case TILE_DT_F16: case TILE_DT_BF16: case TILE_DT_FP8_E4M3: case TILE_DT_FP8_E5M2: case TILE_DT_FP4_E2M1:
        tile_sb_printf(sb, "tile_ld_%s(b%d, %s)", nsfx(b->dtype), b->id, off);
        return;
    case TILE_DT_BOOL: tile_sb_printf(sb, "((int)b%d[%s])", b->id, off); return;
    default: tile_sb_printf(sb, "b%d[%s]", b->id, off); return;
    }
}

/* statement storing value `x` (of dtype vdt) into element `off` of b (x converted as a STORE
 * converts: the value already has b's dtype, or is f32/f64 for narrow float buffers) */
static void put_store(tile_strbuf *sb, const ir_buffer *b, const char *off, tile_dtype vdt, const char *x) {
    tile_dtype dt = b->dtype;
    if (ISNARROWF(dt)) {
        bool dbl = vdt == TILE_DT_F64 || !ISF(vdt);
        const char *cast = ISF(vdt) ? "" : (vdt == TILE_DT_U64 ? "(double)(uint64_t)" : "(double)");
        if ((dt == TILE_DT_F16 || dt == TILE_DT_BF16) && !dbl)
            tile_sb_printf(sb, "tile_st_%s_f(b%d, %s, %s);", nsfx(dt), b->id, off, x);
        else if (dt == TILE_DT_F16 || dt == TILE_DT_BF16)
            tile_sb_printf(sb, "tile_st_%s_d(b%d, %s, %s(%s));", nsfx(dt), b->id, off, cast, x);
        else
            tile_sb_printf(sb, "tile_st_%s(b%d, %s, %s(%s));", nsfx(dt), b->id, off, cast, x);
        return;
    }
    if (dt == TILE_DT_BOOL) { tile_sb_printf(sb, "b%d[%s] = (uint8_t)((%s) != 0);", b->id, off, x); return; }
    if (vdt == dt) { tile_sb_printf(sb, "b%d[%s] = %s;", b->id, off, x); return; }
    tile_strbuf c = {0};
    put_conv(&c, vdt, dt, x);
    tile_sb_printf(sb, "b%d[%s] = %s;", b->id, off, c.data);
    tile_sb_free(&c);
}

static bool const_pos(const ir_expr *e, int64_t *v) { return ir_const_int_value(e, v) && *v > 0; }

static void gbinary(gen *G, tile_strbuf *sb, const ir_expr *e, int mode) {
    const ir_expr *a = e->args[0], *b = e->args[1];
    tile_dtype ot = a->dtype;
    int op = e->op;
    if (op == IR_B_AND || op == IR_B_OR) {
        tile_sb_puts(sb, "((");
        gexpr(G, sb, a, M_VALUE);
        tile_sb_puts(sb, op == IR_B_AND ? ") && (" : ") || (");
        gexpr(G, sb, b, M_VALUE);
        tile_sb_puts(sb, "))");
        return;
    }
    if (ir_binop_is_compare((ir_binop)op)) {
        static const char *cmp[] = {[IR_B_LT] = "<", [IR_B_LE] = "<=", [IR_B_GT] = ">", [IR_B_GE] = ">=", [IR_B_EQ] = "==", [IR_B_NE] = "!="};
        tile_sb_puts(sb, "((");
        gexpr(G, sb, a, M_VALUE);
        tile_sb_printf(sb, ") %s (", cmp[op]);
        gexpr(G, sb, b, M_VALUE);
        tile_sb_puts(sb, "))");
        return;
    }
    if (ISF(ot)) {
        bool f32 = ot != TILE_DT_F64;
        const char *sfx = f32 ? "f32" : "f64";
        switch (op) {
        case IR_B_ADD: case IR_B_SUB: case IR_B_MUL: case IR_B_DIV: {
            const char *o = op == IR_B_ADD ? "+" : op == IR_B_SUB ? "-" : op == IR_B_MUL ? "*" : "/";
            tile_sb_puts(sb, "((");
            gexpr(G, sb, a, M_VALUE);
            tile_sb_printf(sb, ") %s (", o);
            gexpr(G, sb, b, M_VALUE);
            tile_sb_puts(sb, "))");
            return;
        }
        case IR_B_FLOORDIV: case IR_B_FLOORMOD: case IR_B_MIN: case IR_B_MAX: case IR_B_POW: {
            const char *fn = op == IR_B_FLOORDIV ? "tile_floordiv_" : op == IR_B_FLOORMOD ? "tile_floormod_" : NULL;
            if (fn) tile_sb_printf(sb, "%s%s(", fn, sfx);
            else if (f32 && op != IR_B_POW) tile_sb_printf(sb, "%s((float)(", op == IR_B_MIN ? "tile_fminf" : "tile_fmaxf");
            else if (f32) tile_sb_printf(sb, "((float)%s((double)(", op == IR_B_MIN ? "fmin" : op == IR_B_MAX ? "fmax" : "pow");
            else tile_sb_printf(sb, "(%s((", op == IR_B_MIN ? "fmin" : op == IR_B_MAX ? "fmax" : "pow");
            gexpr(G, sb, a, M_VALUE);
            bool sel = !fn && f32 && op != IR_B_POW;
            if (fn) tile_sb_puts(sb, ", ");
            else if (sel) tile_sb_puts(sb, "), (float)(");
            else tile_sb_puts(sb, f32 ? "), (double)(" : "), (");
            gexpr(G, sb, b, M_VALUE);
            tile_sb_puts(sb, fn ? ")" : sel ? "))" : ")))");
            return;
        }
        default: gfail(G, e->loc, "internal: the C generator got a float operator it does not know"); return;
        }
    }
    /* integers */
    bool sgn = !ISU(ot) && !ISB(ot);
    if (mode == M_INDEX && sgn) {
        int64_t c;
        switch (op) {
        case IR_B_ADD: case IR_B_SUB: case IR_B_MUL: {
            const char *o = op == IR_B_ADD ? "+" : op == IR_B_SUB ? "-" : "*";
            tile_sb_puts(sb, "(");
            gexpr(G, sb, a, M_INDEX);
            tile_sb_printf(sb, " %s ", o);
            gexpr(G, sb, b, M_INDEX);
            tile_sb_puts(sb, ")");
            return;
        }
        case IR_B_FLOORDIV: case IR_B_FLOORMOD:
            if (const_pos(b, &c)) {
                tile_sb_printf(sb, "tile_ifloor%s(", op == IR_B_FLOORDIV ? "div" : "mod");
                gexpr(G, sb, a, M_INDEX);
                tile_sb_printf(sb, ", INT64_C(%lld))", (long long)c);
                return;
            }
            break;
        default: break;
        }
        tile_sb_puts(sb, "((int64_t)");
        gbinary(G, sb, e, M_VALUE);
        tile_sb_puts(sb, ")");
        return;
    }
    const char *T = vtype(ot), *U = uwide(ot), *sx = isfx(ot);
    switch (op) {
    case IR_B_ADD: case IR_B_SUB: case IR_B_MUL: {
        const char *o = op == IR_B_ADD ? "+" : op == IR_B_SUB ? "-" : "*";
        tile_sb_printf(sb, "((%s)((%s)(", T, U);
        gexpr(G, sb, a, M_VALUE);
        tile_sb_printf(sb, ") %s (%s)(", o, U);
        gexpr(G, sb, b, M_VALUE);
        tile_sb_puts(sb, ")))");
        return;
    }
    case IR_B_BITAND: case IR_B_BITOR: case IR_B_BITXOR: {
        const char *o = op == IR_B_BITAND ? "&" : op == IR_B_BITOR ? "|" : "^";
        tile_sb_printf(sb, "((%s)((", T);
        gexpr(G, sb, a, M_VALUE);
        tile_sb_printf(sb, ") %s (", o);
        gexpr(G, sb, b, M_VALUE);
        tile_sb_puts(sb, ")))");
        return;
    }
    case IR_B_MIN: case IR_B_MAX: case IR_B_SHL: case IR_B_SHR: {
        const char *fn = op == IR_B_MIN ? "min" : op == IR_B_MAX ? "max" : op == IR_B_SHL ? "shl" : "shr";
        tile_sb_printf(sb, "tile_%s_%s(", fn, sx);
        gexpr(G, sb, a, M_VALUE);
        tile_sb_puts(sb, ", ");
        gexpr(G, sb, b, M_VALUE);
        tile_sb_puts(sb, ")");
        return;
    }
    case IR_B_DIV: case IR_B_FLOORDIV: case IR_B_FLOORMOD: case IR_B_POW: {
        const char *fn = op == IR_B_DIV ? "div" : op == IR_B_FLOORDIV ? "floordiv" : op == IR_B_FLOORMOD ? "floormod" : "pow";
        int m = op == IR_B_POW ? msg_at(G, e->loc, "integer zero raised to a negative power")
              : op == IR_B_FLOORMOD ? msg_at(G, e->loc, "integer modulo by zero")
                                    : msg_at(G, e->loc, "integer division by zero");
        G->may_fail = true;
        tile_sb_printf(sb, "tile_%s_%s(ctx, ", fn, sx);
        gexpr(G, sb, a, M_VALUE);
        tile_sb_puts(sb, ", ");
        gexpr(G, sb, b, M_VALUE);
        tile_sb_printf(sb, ", tile_msg%d)", m);
        return;
    }
    default: gfail(G, e->loc, "internal: the C generator got an integer operator it does not know"); return;
    }
}

static void gcall(gen *G, tile_strbuf *sb, const ir_expr *e) {
    tile_dtype at = e->args[0]->dtype, dt = e->dtype;
    int fn = e->op;
    if (!ISF(at)) {
        if (fn == IR_I_ABS) {
            tile_sb_printf(sb, "tile_abs_%s(", isfx(at));
            gexpr(G, sb, e->args[0], M_VALUE);
            tile_sb_puts(sb, ")");
        } else if (fn == IR_I_FLOOR || fn == IR_I_CEIL || fn == IR_I_ROUND || fn == IR_I_TRUNC) {
            gexpr(G, sb, e->args[0], M_VALUE);
        } else {
            gfail(G, e->loc, "internal: a math intrinsic on integers the C generator does not know");
        }
        return;
    }
    if (fn == IR_I_ISNAN || fn == IR_I_ISINF) {
        tile_sb_printf(sb, "(%s((double)(", fn == IR_I_ISNAN ? "isnan" : "isinf");
        gexpr(G, sb, e->args[0], M_VALUE);
        tile_sb_puts(sb, ")) != 0)");
        return;
    }
    /* f32 exp: the vectorisable tile_expf of the prelude (at most 1 ulp from the correctly
     * rounded value, where libm's double exp rounded to float is within half an ulp) */
    if (fn == IR_I_EXP && dt == TILE_DT_F32 && at != TILE_DT_F64) {
        tile_sb_puts(sb, "tile_expf((float)(");
        gexpr(G, sb, e->args[0], M_VALUE);
        tile_sb_puts(sb, "))");
        return;
    }
    /* computed in double, rounded once to dt */
    tile_strbuf in = {0};
    const char *name = NULL;
    switch (fn) {
    case IR_I_EXP: name = "exp"; break;
    case IR_I_EXP2: name = "exp2"; break;
    case IR_I_LOG: name = "log"; break;
    case IR_I_LOG2: name = "log2"; break;
    case IR_I_SQRT: name = "sqrt"; break;
    case IR_I_TANH: name = "tanh"; break;
    case IR_I_ABS: name = "fabs"; break;
    case IR_I_SIN: name = "sin"; break;
    case IR_I_COS: name = "cos"; break;
    case IR_I_FLOOR: name = "floor"; break;
    case IR_I_CEIL: name = "ceil"; break;
    case IR_I_ROUND: name = "nearbyint"; break;
    case IR_I_TRUNC: name = "trunc"; break;
    case IR_I_ERF: name = "erf"; break;
    default: break;
    }
    if (name) {
        tile_sb_printf(&in, "%s((double)(", name);
        gexpr(G, &in, e->args[0], M_VALUE);
        tile_sb_puts(&in, "))");
    } else if (fn == IR_I_RSQRT) {
        tile_sb_puts(&in, "(1.0 / sqrt((double)(");
        gexpr(G, &in, e->args[0], M_VALUE);
        tile_sb_puts(&in, ")))");
    } else if (fn == IR_I_SIGMOID) {
        tile_sb_puts(&in, "tile_sigmoid_f64((double)(");
        gexpr(G, &in, e->args[0], M_VALUE);
        tile_sb_puts(&in, "))");
    } else if (fn == IR_I_FMA && e->nargs == 3) {
        bool f32 = dt == TILE_DT_F32;
        tile_sb_printf(&in, "(double)%s(", f32 ? "fmaf" : "fma");
        for (int i = 0; i < 3; i++) {
            if (i) tile_sb_puts(&in, ", ");
            tile_sb_printf(&in, "(%s)(", f32 ? "float" : "double");
            gexpr(G, &in, e->args[i], M_VALUE);
            tile_sb_puts(&in, ")");
        }
        tile_sb_puts(&in, ")");
    } else {
        gfail(G, e->loc, "internal: a math intrinsic the C generator does not know");
        tile_sb_free(&in);
        return;
    }
    put_conv(sb, TILE_DT_F64, dt, in.data);
    tile_sb_free(&in);
}

static void greinterpret(gen *G, tile_strbuf *sb, const ir_expr *e) {
    tile_dtype from = e->args[0]->dtype, to = e->dtype;
    char *x = expr_str(G, e->args[0], M_VALUE);
    /* the bits of x as uint64 */
    tile_strbuf bits = {0};
    if (ISF(from)) tile_sb_printf(&bits, "tile_fbits(TDT_%s, (double)(%s))", DNAME[from], x);
    else if (DBITS[from] >= 64) tile_sb_printf(&bits, "((uint64_t)(%s))", x);
    else tile_sb_printf(&bits, "((uint64_t)(%s) & UINT64_C(0x%llx))", x, (unsigned long long)(((uint64_t)1 << DBITS[from]) - 1));
    if (ISF(to)) {
        tile_strbuf v = {0};
        tile_sb_printf(&v, "tile_bits_fval(TDT_%s, %s)", DNAME[to], bits.data);
        put_conv(sb, TILE_DT_F64, to == TILE_DT_F64 ? TILE_DT_F64 : TILE_DT_F32, v.data);
        tile_sb_free(&v);
    } else if (ISB(to)) {
        tile_sb_printf(sb, "((%s) != 0)", bits.data);
    } else {
        tile_sb_printf(sb, "((%s)%s)", vtype(to), bits.data);
    }
    tile_sb_free(&bits);
    free(x);
}

static void gexpr(gen *G, tile_strbuf *sb, const ir_expr *e, int mode) {
    if (G->failed) return;
    if (!e || !dt_ok(e->dtype)) { gfail(G, e ? e->loc : G->f->loc, "internal: malformed expression"); return; }
    if (mode == M_INDEX && (ISF(e->dtype))) mode = M_VALUE;
    switch (e->kind) {
    case IR_E_CONST:
        if (ISF(e->dtype)) put_float_const(sb, e->dtype, e->fval);
        else if (mode == M_INDEX) tile_sb_printf(sb, "INT64_C(%lld)", (long long)tile_wrap_int(ISB(e->dtype) ? TILE_DT_I64 : e->dtype, ISB(e->dtype) ? (e->ival != 0) : e->ival));
        else put_int_const(sb, e->dtype, e->ival);
        return;
    case IR_E_VAR:
        if (mode == M_INDEX) {
            if (var_is_i64(e->var)) tile_sb_printf(sb, "v%d", e->var->id);
            else tile_sb_printf(sb, "((int64_t)v%d)", e->var->id);
        } else if (var_is_i64(e->var)) {
            tile_sb_printf(sb, "((%s)v%d)", vtype(e->dtype), e->var->id);
        } else {
            tile_sb_printf(sb, "v%d", e->var->id);
        }
        return;
    case IR_E_LOAD: {
        tile_strbuf off = {0};
        put_offset(G, &off, e->buf, e->args, e->loc);
        if (mode == M_INDEX) tile_sb_puts(sb, "((int64_t)");
        put_load(sb, e->buf, off.data ? off.data : "0");
        if (mode == M_INDEX) tile_sb_puts(sb, ")");
        tile_sb_free(&off);
        return;
    }
    case IR_E_UNARY:
        if (mode == M_INDEX) tile_sb_puts(sb, "((int64_t)");
        switch (e->op) {
        case IR_U_NEG:
            if (ISF(e->dtype)) {
                tile_sb_puts(sb, "(-(");
                gexpr(G, sb, e->args[0], M_VALUE);
                tile_sb_puts(sb, "))");
            } else {
                tile_sb_printf(sb, "((%s)((%s)0 - (%s)(", vtype(e->dtype), uwide(e->dtype), uwide(e->dtype));
                gexpr(G, sb, e->args[0], M_VALUE);
                tile_sb_puts(sb, ")))");
            }
            break;
        case IR_U_NOT:
            tile_sb_puts(sb, "(!(");
            gexpr(G, sb, e->args[0], M_VALUE);
            tile_sb_puts(sb, "))");
            break;
        default:
            tile_sb_printf(sb, "((%s)~(", vtype(e->dtype));
            gexpr(G, sb, e->args[0], M_VALUE);
            tile_sb_puts(sb, "))");
            break;
        }
        if (mode == M_INDEX) tile_sb_puts(sb, ")");
        return;
    case IR_E_BINARY:
        if (mode == M_INDEX && (ISF(e->args[0]->dtype) || ir_binop_is_compare((ir_binop)e->op) || e->op == IR_B_AND || e->op == IR_B_OR)) {
            tile_sb_puts(sb, "((int64_t)");
            gbinary(G, sb, e, M_VALUE);
            tile_sb_puts(sb, ")");
        } else {
            gbinary(G, sb, e, mode);
        }
        return;
    case IR_E_SELECT:
        tile_sb_puts(sb, "((");
        gexpr(G, sb, e->args[0], M_VALUE);
        tile_sb_puts(sb, ") ? (");
        gexpr(G, sb, e->args[1], mode);
        tile_sb_puts(sb, ") : (");
        gexpr(G, sb, e->args[2], mode);
        tile_sb_puts(sb, "))");
        return;
    case IR_E_CAST: {
        tile_dtype from = e->args[0]->dtype;
        if (mode == M_INDEX && !ISF(from) && !ISB(e->dtype)) {
            gexpr(G, sb, e->args[0], M_INDEX);
            return;
        }
        char *x = expr_str(G, e->args[0], M_VALUE);
        if (mode == M_INDEX) tile_sb_puts(sb, "((int64_t)");
        put_conv(sb, from, e->dtype, x);
        if (mode == M_INDEX) tile_sb_puts(sb, ")");
        free(x);
        return;
    }
    case IR_E_REINTERPRET:
        if (mode == M_INDEX) tile_sb_puts(sb, "((int64_t)");
        greinterpret(G, sb, e);
        if (mode == M_INDEX) tile_sb_puts(sb, ")");
        return;
    case IR_E_CALL:
        if (mode == M_INDEX) tile_sb_puts(sb, "((int64_t)");
        gcall(G, sb, e);
        if (mode == M_INDEX) tile_sb_puts(sb, ")");
        return;
    default: gfail(G, e->loc, "internal: the C generator got an expression kind it does not know"); return;
    }
}

/* ---------- statements ---------- */
static void gstmt(gen *G, const ir_stmt *s);

static void check_fail(gen *G) {
    if (G->may_fail) line(G, "if (TILE_UNLIKELY(tile_failed(ctx))) { rc = 1; goto tile_out; }");
    G->may_fail = false;
}

static int tmp(gen *G) { return G->ntmp++; }

static bool contains_loop(const ir_stmt *s) {
    if (!s) return false;
    if (s->kind == IR_S_FOR || s->kind == IR_S_WHILE || s->kind == IR_S_KERNEL) return true;
    for (int i = 0; i < s->nbody; i++)
        if (s->body && contains_loop(s->body[i])) return true;
    return false;
}

/* a new C function: returns the previous fnctx to restore with end_fn */
static fnctx *begin_fn(gen *G) {
    fnctx *fc = tile_xcalloc(1, sizeof *fc);
    fc->heap = tile_xcalloc((size_t)G->f->nbuffers + 1, sizeof(bool));
    fc->parent = G->fn;
    G->fn = fc;
    return fc;
}
/* finish the function: header text + locals + body + cleanup into G->fns */
static void end_fn(gen *G, const char *header, const char *prologue) {
    fnctx *fc = G->fn;
    tile_strbuf *o = &G->fns;
    tile_sb_printf(o, "%s {\n    tile_st *S = (tile_st *)st_;\n    TILE_LOAD_STATE(S);\n    tile_st Sl;\n    int rc = 0;\n", header);
    for (int i = 0; i < G->f->nbuffers; i++)
        if (fc->heap[i]) tile_sb_printf(o, "    void *h%d = NULL;\n", i);
    tile_sb_puts(o, "    (void)Sl;\n");
    if (prologue) tile_sb_puts(o, prologue);
    if (fc->body.data) tile_sb_puts(o, fc->body.data);
    tile_sb_puts(o, "    goto tile_out;\ntile_out:\n");
    for (int i = 0; i < G->f->nbuffers; i++)
        if (fc->heap[i]) tile_sb_printf(o, "    free(h%d);\n", i);
    tile_sb_puts(o, "    return rc;\n}\n\n");
    G->fn = fc->parent;
    tile_sb_free(&fc->body);
    free(fc->heap);
    free(fc);
}

static void galloc(gen *G, const ir_stmt *s) {
    const ir_buffer *b = s->buf;
    int id = b->id;
    /* dims and strides */
    if (!G->constshape[id]) {
        for (int d = 0; d < b->rank; d++) {
            char *x = expr_str(G, b->shape[d], M_INDEX);
            line(G, "b%d_n%d = %s;", id, d, x);
            free(x);
        }
        for (int d = b->rank - 1; d >= 0; d--) {
            if (d == b->rank - 1) line(G, "b%d_s%d = 1;", id, d);
            else line(G, "b%d_s%d = b%d_s%d * b%d_n%d;", id, d, id, d + 1, id, d + 1);
        }
        int m = msg_at(G, s->loc, "buffer '%s' has a negative dimension or is too large", b->name);
        tile_strbuf cond = {0};
        tile_sb_puts(&cond, "0");
        for (int d = 0; d < b->rank; d++) tile_sb_printf(&cond, " || b%d_n%d < 0 || b%d_n%d > (INT64_C(1) << 40)", id, d, id, d);
        line(G, "if (%s) { tile_fail(ctx, tile_msg%d); rc = 1; goto tile_out; }", cond.data, m);
        tile_sb_free(&cond);
        G->may_fail = false;
    }
    size_t n = 1;
    if (G->constshape[id])
        for (int d = 0; d < b->rank; d++) n *= (size_t)G->cdims[id][d];
    size_t bytes = tile_dtype_storage_bytes(b->dtype, n);
    /* placed like another buffer (ir.h's align_to): 128 more bytes, element 0 at that buffer's
     * address modulo 64 (tile_place_like) */
    char like[32] = "";
    if (b->align_to && b->dtype != TILE_DT_FP4_E2M1) snprintf(like, sizeof like, "b%d", b->align_to->id);
    const size_t pad = like[0] ? 128 : 0;
    if (G->constshape[id] && bytes <= 65536 && G->fn->stack_bytes + bytes + pad <= 262144) {
        G->fn->stack_bytes += bytes + pad;
        size_t elems = b->dtype == TILE_DT_FP4_E2M1 ? bytes : n;
        if (like[0]) {
            const size_t es = (size_t)DBITS[b->dtype] / 8;
            line(G, "%s b%d_stk[%zu] __attribute__((aligned(64)));", stype(b->dtype), id, (elems ? elems : 1) + pad / es);
            line(G, "b%d = (%s *)tile_place_like(b%d_stk, %s, %zu);", id, stype(b->dtype), id, like, es);
            return;
        }
        line(G, "%s b%d_stk[%zu] __attribute__((aligned(64)));", stype(b->dtype), id, elems ? elems : 1);
        line(G, "b%d = b%d_stk;", id, id);
        return;
    }
    /* the buffer's size in bytes, as a C expression */
    tile_strbuf cnt = {0};
    if (G->constshape[id]) tile_sb_printf(&cnt, "(size_t)%zu", bytes ? bytes : 1);
    else {
        tile_sb_puts(&cnt, "(size_t)(1");
        for (int d = 0; d < b->rank; d++) tile_sb_printf(&cnt, " * b%d_n%d", id, d);
        if (b->dtype == TILE_DT_FP4_E2M1) tile_sb_puts(&cnt, " / 2 + 1)");
        else tile_sb_printf(&cnt, " * %d)", DBITS[b->dtype] / 8);
    }
    if (G->fn->kernel_body || G->fn->range_body) {
        /* the worker's scratch slot for this buffer (prelude: tile_scratch_get) */
        int m = msg_at(G, s->loc, "cannot allocate memory for '%s'", b->name);
        line(G, "b%d = (%s *)tile_scratch_get(%d, %s + %zu);", id, stype(b->dtype), id, cnt.data, 64 + pad);
        line(G, "if (!b%d) { tile_fail(ctx, tile_msg%d); rc = 1; goto tile_out; }", id, m);
        if (like[0]) line(G, "b%d = (%s *)tile_place_like(b%d, %s, %d);", id, stype(b->dtype), id, like, DBITS[b->dtype] / 8);
        tile_sb_free(&cnt);
        return;
    }
    G->fn->heap[id] = true;
    int m = msg_at(G, s->loc, "cannot allocate memory for '%s'", b->name);
    line(G, "free(h%d);", id);
    line(G, "h%d = malloc(%s + %zu);", id, cnt.data, 64 + pad);
    line(G, "if (!h%d) { tile_fail(ctx, tile_msg%d); rc = 1; goto tile_out; }", id, m);
    if (like[0]) line(G, "b%d = (%s *)tile_place_like(h%d, %s, %d);", id, stype(b->dtype), id, like, DBITS[b->dtype] / 8);
    else line(G, "b%d = (%s *)h%d;", id, stype(b->dtype), id);
    tile_sb_free(&cnt);
}

/* region starts/extents into temporaries; returns the temp id; names t<id>_st<d>, t<id>_ex<d> */
static int gregion_vals(gen *G, const ir_region *r) {
    int t = tmp(G);
    for (int d = 0; d < r->buf->rank; d++) {
        char *st = expr_str(G, r->start[d], M_INDEX), *ex = expr_str(G, r->extent[d], M_INDEX);
        line(G, "int64_t t%d_st%d = %s, t%d_ex%d = %s;", t, d, st, t, d, ex);
        free(st);
        free(ex);
    }
    return t;
}

static void gregion_struct(gen *G, const ir_region *r, int t, const char *name) {
    const ir_buffer *b = r->buf;
    tile_strbuf s = {0};
    tile_sb_printf(&s, "tile_rgn %s = {TDT_%s, %d, (void *)b%d, {", name, DNAME[b->dtype], b->rank, b->id);
    for (int d = 0; d < b->rank; d++) {
        if (d) tile_sb_puts(&s, ", ");
        put_dim(G, &s, b, d);
    }
    if (!b->rank) tile_sb_puts(&s, "0");
    tile_sb_puts(&s, "}, {");
    for (int d = 0; d < b->rank; d++) {
        if (d) tile_sb_puts(&s, ", ");
        put_stride(G, &s, b, d);
    }
    if (!b->rank) tile_sb_puts(&s, "0");
    tile_sb_puts(&s, "}, {");
    for (int d = 0; d < b->rank; d++) tile_sb_printf(&s, "%st%d_st%d", d ? ", " : "", t, d);
    if (!b->rank) tile_sb_puts(&s, "0");
    tile_sb_puts(&s, "}, {");
    for (int d = 0; d < b->rank; d++) tile_sb_printf(&s, "%st%d_ex%d", d ? ", " : "", t, d);
    if (!b->rank) tile_sb_puts(&s, "0");
    tile_sb_puts(&s, "}, 0};");
    line(G, "%s", s.data);
    tile_sb_free(&s);
}

static void gneg_extent_check(gen *G, const ir_region *r, int t, tile_loc loc) {
    if (!r->buf->rank) return;
    tile_strbuf c = {0};
    for (int d = 0; d < r->buf->rank; d++) tile_sb_printf(&c, "%st%d_ex%d < 0", d ? " || " : "", t, d);
    int m = msg_at(G, loc, "region of '%s' has a negative extent", r->buf->name);
    line(G, "if (%s) { tile_fail(ctx, tile_msg%d); rc = 1; goto tile_out; }", c.data, m);
    tile_sb_free(&c);
}

static void gfill(gen *G, const ir_stmt *s) {
    const ir_region *r = &s->regions[0];
    const ir_buffer *b = r->buf;
    line(G, "{");
    G->indent++;
    int t = gregion_vals(G, r);
    gneg_extent_check(G, r, t, s->loc);
    char *v = expr_str(G, s->value, M_VALUE);
    tile_strbuf cv = {0};
    put_conv(&cv, s->value->dtype, b->dtype, v);
    free(v);
    int fv = tmp(G);
    line(G, "%s f%d = %s;", vtype(b->dtype), fv, cv.data);
    tile_sb_free(&cv);
    check_fail(G);
    for (int d = 0; d < b->rank; d++) {
        line(G, "int64_t t%d_lo%d, t%d_hi%d;", t, d, t, d);
        tile_strbuf n = {0};
        put_dim(G, &n, b, d);
        line(G, "tile_clip(t%d_st%d, t%d_ex%d, %s, &t%d_lo%d, &t%d_hi%d);", t, d, t, d, n.data, t, d, t, d);
        tile_sb_free(&n);
    }
    /* the stored representation */
    if (ISNARROWF(b->dtype)) {
        if (b->dtype == TILE_DT_F16 || b->dtype == TILE_DT_BF16) line(G, "uint16_t fb%d = tile_bits_%s(f%d);", fv, nsfx(b->dtype), fv);
        else line(G, "uint8_t fb%d = tile_bits_%s(f%d);", fv, nsfx(b->dtype), fv);
    }
    tile_strbuf off = {0};
    tile_sb_puts(&off, "0");
    for (int d = 0; d < b->rank; d++) {
        if (d == b->rank - 1) line(G, "TILE_IVDEP");
        line(G, "for (int64_t i%d_%d = t%d_lo%d; i%d_%d < t%d_hi%d; i%d_%d++)", t, d, t, d, t, d, t, d, t, d);
        tile_sb_printf(&off, " + (t%d_st%d + i%d_%d) * ", t, d, t, d);
        put_stride(G, &off, b, d);
    }
    G->indent++;
    if (b->dtype == TILE_DT_FP4_E2M1) line(G, "tile_stb_e2m1(b%d, %s, fb%d);", b->id, off.data, fv);
    else if (ISNARROWF(b->dtype)) line(G, "b%d[%s] = fb%d;", b->id, off.data, fv);
    else if (b->dtype == TILE_DT_BOOL) line(G, "b%d[%s] = (uint8_t)f%d;", b->id, off.data, fv);
    else line(G, "b%d[%s] = f%d;", b->id, off.data, fv);
    G->indent--;
    tile_sb_free(&off);
    G->indent--;
    line(G, "}");
}

/* value expression of src element at offset `off`, ready to store into dst */
static void copy_value(tile_strbuf *sb, const ir_buffer *src, const ir_buffer *dst, const char *off) {
    tile_strbuf x = {0};
    put_load(&x, src, off);
    tile_dtype sd = src->dtype, dd = dst->dtype;
    if (ISNARROWF(dd)) {
        /* stores round once from the exact source value */
        if (ISF(sd)) tile_sb_puts(sb, x.data);
        else put_conv(sb, sd, dd, x.data);
    } else {
        put_conv(sb, sd, dd, x.data);
    }
    tile_sb_free(&x);
}
static tile_dtype copy_value_dt(const ir_buffer *src, const ir_buffer *dst) {
    if (ISNARROWF(dst->dtype)) return src->dtype == TILE_DT_F64 ? TILE_DT_F64 : TILE_DT_F32;
    return dst->dtype;
}

/* a same-dtype f32 copy from a tile buffer into a tensor (parameter or output) whose runs are
 * contiguous on both sides: its long runs are written with streaming stores */
static bool copy_streams(gen *G, const ir_buffer *bs, const ir_buffer *bd, int sd, int dd) {
    (void)G;
    return bs->dtype == TILE_DT_F32 && bd->dtype == TILE_DT_F32 && bd->role != IR_BUF_TEMP && bs->role == IR_BUF_TEMP &&
           bs->scope != IR_SCOPE_GLOBAL && sd == bs->rank - 1 && dd == bd->rank - 1;
}

/* --explain: what the C code generator made of a tile op */
#define EXPLAIN(s, kind, what, ...) ir_explain_stmt(G->f, (s), "c", (kind), (what), __VA_ARGS__)

static void gcopy(gen *G, const ir_stmt *s) {
    const ir_region *rs = &s->regions[0], *rd = &s->regions[1];
    const ir_buffer *bs = rs->buf, *bd = rd->buf;
    line(G, "{");
    G->indent++;
    int ts = gregion_vals(G, rs), td = gregion_vals(G, rd);
    check_fail(G);
    /* the fast path: constant extents whose non-unit extents agree in order */
    int64_t es[8], ed[8];
    int ms = 0, md = 0, sdim[8], ddim[8];
    bool fast = true;
    for (int d = 0; d < bs->rank && fast; d++) {
        int64_t v;
        if (!ir_const_int_value(rs->extent[d], &v) || v < 0) fast = false;
        else if (v != 1) { es[ms] = v; sdim[ms++] = d; }
    }
    for (int d = 0; d < bd->rank && fast; d++) {
        int64_t v;
        if (!ir_const_int_value(rd->extent[d], &v) || v < 0) fast = false;
        else if (v != 1) { ed[md] = v; ddim[md++] = d; }
    }
    if (fast && ms != md) fast = false;
    for (int k = 0; fast && k < ms; k++)
        if (es[k] != ed[k]) fast = false;
    if (!fast) {
        EXPLAIN(s, IR_DEC_GOT, "element by element through the runtime (tile_copy_generic)", NULL);
        EXPLAIN(s, IR_DEC_DECLINED, "row-run loops the C compiler vectorises", "%s",
                ms != md || !ms ? "the extents are not constants (or the regions' non-unit extents differ)" : "the regions' non-unit extents differ");
        int m = msg_at(G, s->loc, "copy: the source and destination regions have different element counts");
        gregion_struct(G, rs, ts, "rs_");
        gregion_struct(G, rd, td, "rd_");
        gneg_extent_check(G, rs, ts, s->loc);
        gneg_extent_check(G, rd, td, s->loc);
        line(G, "tile_copy_generic(ctx, &rs_, &rd_, tile_msg%d);", m);
        line(G, "if (TILE_UNLIKELY(tile_failed(ctx))) { rc = 1; goto tile_out; }");
        G->indent--;
        line(G, "}");
        return;
    }
    /* unit dims must be inside the buffer; they contribute a fixed offset */
    tile_strbuf sok = {0}, dok = {0}, sbase = {0}, dbase = {0};
    tile_sb_puts(&sok, "1");
    tile_sb_puts(&dok, "1");
    tile_sb_puts(&sbase, "0");
    tile_sb_puts(&dbase, "0");
    for (int pass = 0; pass < 2; pass++) {
        const ir_buffer *b = pass ? bd : bs;
        int t = pass ? td : ts, m = pass ? md : ms;
        const int *dims = pass ? ddim : sdim;
        tile_strbuf *ok = pass ? &dok : &sok, *base = pass ? &dbase : &sbase;
        for (int d = 0; d < b->rank; d++) {
            bool unit = true;
            for (int k = 0; k < m; k++)
                if (dims[k] == d) unit = false;
            if (!unit) continue;
            tile_sb_printf(ok, " && (uint64_t)t%d_st%d < (uint64_t)", t, d);
            put_dim(G, ok, b, d);
            tile_sb_printf(base, " + t%d_st%d * ", t, d);
            put_stride(G, base, b, d);
        }
    }
    line(G, "int sok%d = %s, dok%d = %s;", ts, sok.data, ts, dok.data);
    line(G, "if (dok%d) {", ts);
    G->indent++;
    line(G, "int64_t sb%d = %s, db%d = %s;", ts, sbase.data, ts, dbase.data);
    tile_sb_free(&sok);
    tile_sb_free(&dok);
    tile_sb_free(&sbase);
    tile_sb_free(&dbase);
    tile_dtype vdt = copy_value_dt(bs, bd);
    if (ms == 0) {
        tile_strbuf v = {0}, st = {0}, so = {0}, dof = {0};
        tile_sb_printf(&so, "sb%d", ts);
        tile_sb_printf(&dof, "db%d", ts);
        copy_value(&v, bs, bd, so.data);
        line(G, "if (sok%d) { %s", ts, "");
        G->indent++;
        put_store(&st, bd, dof.data, vdt, v.data);
        line(G, "%s", st.data);
        G->indent--;
        tile_sb_free(&st);
        line(G, "} else {");
        G->indent++;
        put_store(&st, bd, dof.data, ISF(vdt) ? vdt : bd->dtype, "0");
        line(G, "%s", st.data);
        G->indent--;
        line(G, "}");
        tile_sb_free(&v);
        tile_sb_free(&st);
        tile_sb_free(&so);
        tile_sb_free(&dof);
    } else {
        for (int k = 0; k < ms; k++) {
            tile_strbuf n = {0};
            put_dim(G, &n, bd, ddim[k]);
            line(G, "int64_t dlo%d_%d, dhi%d_%d, slo%d_%d, shi%d_%d;", ts, k, ts, k, ts, k, ts, k);
            line(G, "tile_clip(t%d_st%d, %lld, %s, &dlo%d_%d, &dhi%d_%d);", td, ddim[k], (long long)es[k], n.data, ts, k, ts, k);
            tile_sb_free(&n);
            put_dim(G, &n, bs, sdim[k]);
            line(G, "tile_clip(t%d_st%d, %lld, %s, &slo%d_%d, &shi%d_%d);", ts, sdim[k], (long long)es[k], n.data, ts, k, ts, k);
            tile_sb_free(&n);
        }
        tile_strbuf soff = {0}, doff = {0};
        tile_sb_printf(&soff, "sb%d", ts);
        tile_sb_printf(&doff, "db%d", ts);
        if (copy_streams(G, bs, bd, sdim[ms - 1], ddim[ms - 1])) line(G, "int nt%d_ = 0;", ts);
        line(G, "int in%d_0 = sok%d;", ts, ts);
        for (int k = 0; k < ms - 1; k++) {
            line(G, "for (int64_t c%d_%d = dlo%d_%d; c%d_%d < dhi%d_%d; c%d_%d++) {", ts, k, ts, k, ts, k, ts, k, ts, k);
            G->indent++;
            line(G, "int in%d_%d = in%d_%d && c%d_%d >= slo%d_%d && c%d_%d < shi%d_%d;", ts, k + 1, ts, k, ts, k, ts, k, ts, k, ts, k);
            tile_sb_printf(&soff, " + (t%d_st%d + c%d_%d) * ", ts, sdim[k], ts, k);
            put_stride(G, &soff, bs, sdim[k]);
            tile_sb_printf(&doff, " + (t%d_st%d + c%d_%d) * ", td, ddim[k], ts, k);
            put_stride(G, &doff, bd, ddim[k]);
        }
        int k = ms - 1;
        /* innermost: zeros, copied part, zeros */
        line(G, "int64_t a%d = dhi%d_%d, z%d = dhi%d_%d;", ts, ts, k, ts, ts, k);
        line(G, "if (in%d_%d) { a%d = slo%d_%d > dlo%d_%d ? slo%d_%d : dlo%d_%d; if (a%d > dhi%d_%d) a%d = dhi%d_%d;", ts, k, ts, ts,
             k, ts, k, ts, k, ts, k, ts, ts, k, ts, ts, k);
        line(G, "    z%d = shi%d_%d < dhi%d_%d ? shi%d_%d : dhi%d_%d; if (z%d < a%d) z%d = a%d; }", ts, ts, k, ts, k, ts, k, ts, k, ts, ts, ts,
             ts);
        tile_strbuf so = {0}, dof = {0}, v = {0}, st = {0};
        tile_sb_printf(&so, "%s + (t%d_st%d + c%d_%d) * ", soff.data, ts, sdim[k], ts, k);
        put_stride(G, &so, bs, sdim[k]);
        tile_sb_printf(&dof, "%s + (t%d_st%d + c%d_%d) * ", doff.data, td, ddim[k], ts, k);
        put_stride(G, &dof, bd, ddim[k]);
        put_store(&st, bd, dof.data, ISF(vdt) ? vdt : bd->dtype, "0");
        line(G, "for (int64_t c%d_%d = dlo%d_%d; c%d_%d < a%d; c%d_%d++) %s", ts, k, ts, k, ts, k, ts, ts, k, st.data);
        tile_sb_free(&st);
        if (bs->dtype == bd->dtype && bd->dtype != TILE_DT_FP4_E2M1) {
            /* same dtype: copy the stored bits */
            tile_sb_printf(&st, "b%d[%s] = b%d[%s];", bd->id, dof.data, bs->id, so.data);
        } else {
            copy_value(&v, bs, bd, so.data);
            put_store(&st, bd, dof.data, vdt, v.data);
        }
        bool nt = copy_streams(G, bs, bd, sdim[k], ddim[k]);
        EXPLAIN(s, IR_DEC_GOT, nt ? "row-run loops under TILE_IVDEP (vectorised by the C compiler), streaming stores for runs of >= 64 f32"
                                  : "row-run loops under TILE_IVDEP (vectorised by the C compiler)",
                NULL);
        if (nt) {
            /* a tile written back to a tensor: streaming stores (no read for ownership) */
            line(G, "if (z%d - a%d >= 64) { int64_t c%d_%d = a%d; tile_copy_f32_nt(&b%d[%s], &b%d[%s], z%d - a%d); nt%d_ = 1; } else", ts, ts,
                 ts, k, ts, bd->id, dof.data, bs->id, so.data, ts, ts, ts);
        }
        if (bd->dtype != TILE_DT_FP4_E2M1) line(G, "TILE_IVDEP");
        line(G, "for (int64_t c%d_%d = a%d; c%d_%d < z%d; c%d_%d++) %s", ts, k, ts, ts, k, ts, ts, k, st.data);
        tile_sb_free(&st);
        put_store(&st, bd, dof.data, ISF(vdt) ? vdt : bd->dtype, "0");
        line(G, "for (int64_t c%d_%d = z%d; c%d_%d < dhi%d_%d; c%d_%d++) %s", ts, k, ts, ts, k, ts, k, ts, k, st.data);
        tile_sb_free(&st);
        tile_sb_free(&so);
        tile_sb_free(&dof);
        tile_sb_free(&v);
        tile_sb_free(&soff);
        tile_sb_free(&doff);
        for (int q = 0; q < ms - 1; q++) {
            G->indent--;
            line(G, "}");
        }
        if (copy_streams(G, bs, bd, sdim[ms - 1], ddim[ms - 1])) line(G, "if (nt%d_) tile_sfence();", ts);
    }
    G->indent--;
    line(G, "}");
    G->indent--;
    line(G, "}");
}

/* region r is the whole of its constant-shape buffer */
static bool region_whole(gen *G, const ir_region *r) {
    const ir_buffer *b = r->buf;
    if (!G->constshape[b->id]) return false;
    for (int d = 0; d < b->rank; d++) {
        int64_t v;
        if (!ir_const_int_value(r->start[d], &v) || v != 0) return false;
        if (!ir_const_int_value(r->extent[d], &v) || v != G->cdims[b->id][d]) return false;
    }
    return true;
}
/* REDUCE of a whole f32 [R, L] buffer along dim 1 into a whole f32 [R] buffer (T.reduce_*
 * over fragments: the softmax and norm pattern) */
static bool reduce_rows_fast(gen *G, const ir_stmt *s) {
    const ir_region *rs = &s->regions[0], *rd = &s->regions[1];
    return s->dim == 1 && rs->buf->rank == 2 && rd->buf->rank == 1 && rs->buf->dtype == TILE_DT_F32 && rd->buf->dtype == TILE_DT_F32 &&
           rs->buf != rd->buf && region_whole(G, rs) && region_whole(G, rd) && G->cdims[rs->buf->id][0] == G->cdims[rd->buf->id][0] &&
           G->cdims[rs->buf->id][1] > 0;
}

static void greduce(gen *G, const ir_stmt *s) {
    const ir_region *rs = &s->regions[0], *rd = &s->regions[1];
    line(G, "{");
    G->indent++;
    int ts = gregion_vals(G, rs), td = gregion_vals(G, rd);
    check_fail(G);
    gneg_extent_check(G, rs, ts, s->loc);
    gneg_extent_check(G, rd, td, s->loc);
    if (s->dim < 0 || s->dim >= rs->buf->rank) {
        int m = msg_at(G, s->loc, "reduce: dim %d out of range", s->dim);
        line(G, "tile_fail(ctx, tile_msg%d); rc = 1; goto tile_out;", m);
    } else if (reduce_rows_fast(G, s)) {
        EXPLAIN(s, IR_DEC_GOT, "one vectorised run per row (tile_run_f32)", NULL);
        /* whole f32 buffers [R, L] -> [R] along the contiguous dim: the rows inline */
        const ir_buffer *bs = rs->buf, *bd = rd->buf;
        int op = s->reduce_op;
        const char *init = op == IR_RED_MAX ? "-INFINITY" : op == IR_RED_MIN ? "INFINITY" : "0.0f";
        line(G, "for (int64_t r_ = 0; r_ < INT64_C(%lld); r_++) {", (long long)G->cdims[bs->id][0]);
        line(G, "    float v_ = tile_run_f32(b%d + r_ * INT64_C(%lld), INT64_C(%lld), %d);", bs->id, (long long)G->cdims[bs->id][1],
             (long long)G->cdims[bs->id][1], op);
        if (s->clear) line(G, "    float a_ = %s;", init);
        else line(G, "    float a_ = b%d[r_];", bd->id);
        if (op == IR_RED_SUM || op == IR_RED_ABSSUM) line(G, "    b%d[r_] = a_ + v_;", bd->id);
        else if (op == IR_RED_MIN) line(G, "    b%d[r_] = tile_fminf(a_, v_);", bd->id);
        else line(G, "    b%d[r_] = tile_fmaxf(a_, v_);", bd->id);
        line(G, "}");
    } else {
        EXPLAIN(s, IR_DEC_GOT, "element by element through the runtime (tile_reduce_generic)", NULL);
        EXPLAIN(s, IR_DEC_DECLINED, "one vectorised run per row (tile_run_f32)", "%s",
                s->dim != 1 || rs->buf->rank != 2 || rd->buf->rank != 1 ? "it is not a [R, L] -> [R] reduction along the last dimension"
                : rs->buf->dtype != TILE_DT_F32 || rd->buf->dtype != TILE_DT_F32 ? "source or destination is not f32"
                                                                                 : "the regions are not whole buffers of constant shape");
        int m = msg_at(G, s->loc, "reduce: the source and destination regions do not match");
        gregion_struct(G, rs, ts, "rs_");
        gregion_struct(G, rd, td, "rd_");
        line(G, "tile_reduce_generic(ctx, &rs_, &rd_, %d, %d, %d, tile_msg%d);", s->dim, s->reduce_op, s->clear ? 1 : 0, m);
        line(G, "if (TILE_UNLIKELY(tile_failed(ctx))) { rc = 1; goto tile_out; }");
    }
    G->indent--;
    line(G, "}");
}

static void ggemm(gen *G, const ir_stmt *s) {
    line(G, "{");
    G->indent++;
    int t[3];
    for (int i = 0; i < 3; i++) t[i] = gregion_vals(G, &s->regions[i]);
    check_fail(G);
    const char *names[3] = {"ra_", "rb_", "rc_"};
    for (int i = 0; i < 3; i++) {
        if (s->regions[i].buf->rank < 2) {
            int m = msg_at(G, s->loc, "gemm: operand %c ('%s') must be 2-D", "ABC"[i], s->regions[i].buf->name);
            line(G, "tile_fail(ctx, tile_msg%d); rc = 1; goto tile_out;", m);
            G->indent--;
            line(G, "}");
            return;
        }
        gneg_extent_check(G, &s->regions[i], t[i], s->loc);
        gregion_struct(G, &s->regions[i], t[i], names[i]);
    }
    int m1 = msg_at(G, s->loc, "gemm: the shapes of the operands do not match (or a leading extent is not 1)");
    int m2 = msg_at(G, s->loc, "gemm: the GEMM library failed");
    EXPLAIN(s, IR_DEC_GOT, G->in_parallel ? "a call of the GEMM library per block, on the block's thread (tile_gemm_rgn)" : "one call of the GEMM library on all cores (tile_gemm_rgn)",
            NULL);
    line(G, "tile_gemm_rgn(ctx, &ra_, &rb_, &rc_, %d, %d, %d, %d, tile_msg%d, tile_msg%d);", s->trans_a ? 1 : 0, s->trans_b ? 1 : 0,
         s->clear ? 1 : 0, G->in_parallel ? 0 : 1, m1, m2);
    line(G, "if (TILE_UNLIKELY(tile_failed(ctx))) { rc = 1; goto tile_out; }");
    G->indent--;
    line(G, "}");
}

static void gatomic(gen *G, const ir_stmt *s) {
    const ir_buffer *b = s->buf;
    tile_strbuf off = {0};
    put_offset(G, &off, b, s->idx, s->loc);
    char *v = expr_str(G, s->value, M_VALUE);
    tile_dtype vdt = s->value->dtype;
    int ct = ISF(b->dtype) ? (b->dtype == TILE_DT_F64 ? TILE_DT_F64 : TILE_DT_F32) : b->dtype;
    line(G, "{ tile_val x_; %s = %s(%s); x_ = tile_conv(x_, TDT_%s, TDT_%s);", ISF(vdt) ? "x_.f" : "x_.i", ISF(vdt) ? "(double)" : "(int64_t)",
         v, DNAME[vdt], DNAME[ct]);
    if (s->var)
        line(G, "  tile_val p_ = tile_atomic(TDT_%s, b%d, %s, x_, %d); v%d = %s; }", DNAME[b->dtype], b->id, off.data ? off.data : "0", s->atomic_op,
             s->var->id, ISF(s->var->dtype) ? "p_.f" : "p_.i");
    else line(G, "  tile_atomic(TDT_%s, b%d, %s, x_, %d); }", DNAME[b->dtype], b->id, off.data ? off.data : "0", s->atomic_op);
    free(v);
    tile_sb_free(&off);
    check_fail(G);
}

/* ---------- reduction loops of the plain form ----------
 * A serial innermost loop whose only carried dependences are sums (f32/f64) or f32 max/min
 * into scalar locals (deps.h) is emitted under `#pragma omp simd reduction(...)` (the
 * compiler runs with -fopenmp-simd): the lanes keep partial results that are combined after
 * the loop. Sums are reassociated (the tolerance of a reduction, docs/cli.md); max/min use
 * the prelude's tile_fmaxf/tile_fminf as the combiner, so NaN elements still do not count.
 * Locals assigned in the body are private to an iteration (deps proved it). */
static bool simd_body_ok(const ir_stmt *s) {
    if (!s) return true;
    switch (s->kind) {
    case IR_S_SEQ: case IR_S_IF:
        for (int i = 0; i < s->nbody; i++)
            if (!simd_body_ok(s->body[i])) return false;
        return true;
    case IR_S_ASSIGN: case IR_S_STORE: return true;
    default: return false;
    }
}
static void simd_assigned(const ir_stmt *s, bool *seen) {
    if (!s) return;
    if (s->kind == IR_S_ASSIGN && s->var) seen[s->var->id] = true;
    for (int i = 0; i < s->nbody; i++) simd_assigned(s->body[i], seen);
}
/* the pragma for loop s, or false */
static bool simd_reduction_pragma(gen *G, const ir_stmt *s, tile_strbuf *out) {
    /* outside kernels (plain form, or a tile-form function's loops that TileOpt's rowfuse built) */
    if (G->fn->kernel_body || s->loop_kind != IR_LOOP_SERIAL || contains_loop(s->body[0]) || !simd_body_ok(s->body[0]))
        return false;
    opt_loop_deps d;
    opt_deps_analyze(G->f, s, &d);
    if (d.kind != OPT_DEP_REDUCTION || d.has_continue || d.nred < 1) return false;
    bool *seen = tile_xcalloc((size_t)G->f->nvars + 1, sizeof(bool));
    simd_assigned(s->body[0], seen);
    tile_sb_puts(out, "_Pragma(\"omp simd");
    bool ok = true;
    for (int i = 0; i < d.nred && ok; i++) {
        const ir_var *v = d.red[i].var;
        if (!v || d.red[i].buf || var_is_i64(v) || v->kind == IR_VAR_SIZE) { ok = false; break; }
        tile_dtype dt = v->dtype;
        if (d.red[i].op == IR_RED_SUM && (dt == TILE_DT_F32 || dt == TILE_DT_F64))
            tile_sb_printf(out, " reduction(+:v%d)", v->id);
        else if ((d.red[i].op == IR_RED_MAX || d.red[i].op == IR_RED_MIN) && dt == TILE_DT_F32)
            tile_sb_printf(out, " reduction(%s:v%d)", d.red[i].op == IR_RED_MAX ? "tile_fmax" : "tile_fmin", v->id);
        else ok = false;
        seen[v->id] = false;
    }
    for (int i = 0; ok && i < G->f->nvars; i++)
        if (seen[i]) {
            if (var_is_i64(G->f->vars[i])) ok = false;
            else tile_sb_printf(out, " private(v%d)", i);
        }
    tile_sb_puts(out, "\")");
    free(seen);
    return ok;
}

/* ---------- max/min reductions in four streams ----------
 * An f32 max/min reduction loop (`m = max(m, x(j))`, the chunk max of rowfuse's read pass)
 * under `omp simd` keeps one vector accumulator: each step waits for the previous compare
 * and select (about 6 cycles per 16 elements on AVX-512, measured), so the loop runs at the
 * latency of that chain, not at the throughput of the load and compare units. When every
 * reduction of the loop is such a max/min and the body stores nothing, the range is split
 * into four contiguous quarters walked side by side, each quarter with its own copy of the
 * accumulators (four independent chains), combined with the same tile_fmaxf/tile_fminf
 * afterwards; the at most three elements past 4 quarters run last. Max and min are exact,
 * so only the order of equal-valued candidates changes (as with omp simd lanes already). */
enum { MM_STREAMS = 4 };
static bool body_stores(const ir_stmt *s) {
    if (!s) return false;
    if (s->kind == IR_S_STORE) return true;
    for (int i = 0; i < s->nbody; i++)
        if (body_stores(s->body[i])) return true;
    return false;
}
/* the accumulators (and whether each is a max) when loop s qualifies; else 0 */
static int minmax_streams(gen *G, const ir_stmt *s, const ir_var **acc, bool *is_max) {
    if (G->fn->kernel_body || (G->opt && G->opt->bounds_checks) || body_stores(s->body[0])) return 0;
    opt_loop_deps d;
    opt_deps_analyze(G->f, s, &d);
    if (d.kind != OPT_DEP_REDUCTION || d.has_continue || d.nred < 1 || d.nred > 4) return 0;
    for (int i = 0; i < d.nred; i++) {
        const ir_var *v = d.red[i].var;
        if (!v || d.red[i].buf || v->dtype != TILE_DT_F32 || (d.red[i].op != IR_RED_MAX && d.red[i].op != IR_RED_MIN)) return 0;
        acc[i] = v;
        is_max[i] = d.red[i].op == IR_RED_MAX;
    }
    return d.nred;
}
/* emit loop s (loop variable id, bounds lo<t>/hi<t>, the simd pragma `red` of
 * simd_reduction_pragma) in MM_STREAMS streams; false (nothing emitted) when the body
 * jumps (failing operations) */
static bool gfor_minmax(gen *G, const ir_stmt *s, int t, const char *red) {
    const ir_var *acc[4];
    bool mx[4];
    int na = minmax_streams(G, s, acc, mx);
    if (!na) return false;
    int id = s->var->id;
    size_t at = B(G)->len;
    line(G, "{");
    G->indent++;
    line(G, "int64_t q%d_ = (hi%d - lo%d) / %d;", t, t, t, MM_STREAMS);
    tile_strbuf pr = {0};
    tile_sb_puts(&pr, red);
    if (pr.len >= 2 && pr.data[pr.len - 1] == ')' && pr.data[pr.len - 2] == '"') pr.len -= 2; /* drop `")` */
    pr.data[pr.len] = 0;
    for (int a = 0; a < na; a++)
        for (int k = 1; k < MM_STREAMS; k++) {
            line(G, "float a%d_%d_%d = v%d;", t, a, k, acc[a]->id);
            tile_sb_printf(&pr, " reduction(%s:a%d_%d_%d)", mx[a] ? "tile_fmax" : "tile_fmin", t, a, k);
        }
    tile_sb_puts(&pr, "\")");
    ind(G);
    tile_sb_puts(B(G), pr.data);
    tile_sb_putc(B(G), '\n');
    tile_sb_free(&pr);
    line(G, "for (int64_t u%d_ = 0; u%d_ < q%d_; u%d_++) {", t, t, t, t);
    G->indent++;
    for (int k = 0; k < MM_STREAMS; k++) {
        line(G, "{");
        G->indent++;
        line(G, "int64_t v%d = lo%d + %d * q%d_ + u%d_;", id, t, k, t, t);
        for (int a = 0; k && a < na; a++) line(G, "float v%d = a%d_%d_%d;", acc[a]->id, t, a, k);
        gstmt(G, s->body[0]);
        for (int a = 0; k && a < na; a++) line(G, "a%d_%d_%d = v%d;", t, a, k, acc[a]->id);
        G->indent--;
        line(G, "}");
    }
    G->indent--;
    line(G, "}");
    for (int a = 0; a < na; a++) {
        const char *f = mx[a] ? "tile_fmaxf" : "tile_fminf";
        line(G, "v%d = %s(%s(v%d, a%d_%d_1), %s(a%d_%d_2, a%d_%d_3));", acc[a]->id, f, f, acc[a]->id, t, a, f, t, a, t, a);
    }
    line(G, "for (int64_t v%d = lo%d + %d * q%d_; v%d < hi%d; v%d++) {", id, t, MM_STREAMS, t, id, t, id);
    G->indent++;
    gstmt(G, s->body[0]);
    G->indent--;
    line(G, "}");
    G->indent--;
    line(G, "}");
    const char *txt = B(G)->data + at;
    if (strstr(txt, "goto ") || strstr(txt, "break;") || strstr(txt, "continue;")) {
        B(G)->len = at;
        B(G)->data[at] = 0;
        return false;
    }
    return true;
}

/* ---------- streaming write loops ----------
 * A vectorized loop outside kernels whose body is one f32 store into a tensor (parameter or
 * output) along its contiguous last dimension, `Y[..., j (+ c)] = e` with e not reading Y
 * (rowfuse's write pass; the plain form's elementwise loops), computes e one vector at a
 * time (TILE_NT_W lanes, an `omp simd` loop into a vector-sized array that the compiler
 * keeps in a register) and writes each vector with a streaming store (tile_stream_f32v),
 * ordinary stores up to the first aligned vector and for the tail, then one sfence: the
 * lines of Y are not read from memory before they are written (two units of traffic instead
 * of three). A first form computed 256 elements into an L1 buffer and copied them out
 * (tile_copy_f32_nt): the store and reload of every element cost RMSNorm 10-20% of its
 * bandwidth on one core (bench/cpu/rowforms.sh, bench/results/cpu-rows-2026-11-30-s4.md).
 * Runs shorter than NT_MIN elements,
 * and checked builds (TILE_CPU_CHECKS), take the ordinary loop. */
enum { NT_MIN = 1024 };
static const ir_stmt *nt_store(gen *G, const ir_stmt *s) {
    if (s->loop_kind != IR_LOOP_VECTORIZED || G->fn->kernel_body || (G->opt && G->opt->bounds_checks)) return NULL;
    const ir_stmt *b = s->body[0];
    while (b && b->kind == IR_S_SEQ && b->nbody == 1) b = b->body[0];
    if (!b || b->kind != IR_S_STORE) return NULL;
    const ir_buffer *Y = b->buf;
    if (Y->dtype != TILE_DT_F32 || b->value->dtype != TILE_DT_F32 || Y->scope != IR_SCOPE_GLOBAL || Y->role == IR_BUF_TEMP || Y->rank < 1) return NULL;
    for (int d = 0; d + 1 < Y->rank; d++)
        if (ir_expr_uses_var(b->idx[d], s->var)) return NULL;
    const ir_expr *last = b->idx[Y->rank - 1];
    if (!(last->kind == IR_E_VAR && last->var == s->var)) {
        if (last->kind != IR_E_BINARY || last->op != IR_B_ADD) return NULL;
        int k = last->args[0]->kind == IR_E_VAR && last->args[0]->var == s->var ? 0 : 1;
        if (!(last->args[k]->kind == IR_E_VAR && last->args[k]->var == s->var) || ir_expr_uses_var(last->args[1 - k], s->var)) return NULL;
    }
    if (ir_expr_loads(b->value, Y)) return NULL;
    return b;
}
/* the 2-D tensors the row loop reads as B[row, ...] (row: the outlined loop's variable): the
 * write loop prefetches the same columns of their next row */
static void row_loads_e(gen *G, const ir_expr *e, const ir_buffer **out, int *n) {
    if (!e) return;
    if (e->kind == IR_E_LOAD && e->buf->scope == IR_SCOPE_GLOBAL && e->buf->role != IR_BUF_TEMP && e->buf->rank == 2 &&
        DBITS[e->buf->dtype] >= 8 && e->args[0]->kind == IR_E_VAR && e->args[0]->var == G->row_var) {
        for (int k = 0; k < *n; k++)
            if (out[k] == e->buf) return;
        if (*n < 8) out[(*n)++] = e->buf;
        return;
    }
    for (int i = 0; i < e->nargs; i++) row_loads_e(G, e->args[i], out, n);
}
static void row_loads(gen *G, const ir_stmt *s, const ir_buffer **out, int *n) {
    if (!s) return;
    row_loads_e(G, s->value, out, n);
    row_loads_e(G, s->cond, out, n);
    for (int i = 0; s->kind == IR_S_STORE && i < s->buf->rank; i++) row_loads_e(G, s->idx[i], out, n);
    for (int i = 0; i < s->nbody; i++) row_loads(G, s->body[i], out, n);
}
static void gfor_nt(gen *G, const ir_stmt *s, const ir_stmt *st, int t) {
    int id = s->var->id;
    char *v = expr_str(G, st->value, M_VALUE);
    bool fails = G->may_fail;
    G->may_fail = false;
    tile_strbuf off = {0};
    put_offset(G, &off, st->buf, st->idx, st->loc);
    const char *o = off.data ? off.data : "0";
    int y = st->buf->id;
    line(G, "if (hi%d - lo%d >= %d) {", t, t, NT_MIN);
    G->indent++;
    /* ordinary stores up to the vector-aligned element, whole aligned vectors with streaming
     * stores, ordinary stores for the tail */
    line(G, "v%d = lo%d;", id, t);
    line(G, "int64_t c%d = lo%d + (int64_t)((-(uintptr_t)(b%d + %s) & (TILE_NT_W * 4 - 1)) / 4);", t, t, y, o);
    line(G, "if (c%d > hi%d) c%d = hi%d;", t, t, t, t);
    line(G, "for (v%d = lo%d; v%d < c%d; v%d++) b%d[%s] = %s;", id, t, id, t, id, y, o, v);
    if (fails) line(G, "if (TILE_UNLIKELY(tile_failed(ctx))) { rc = 1; goto tile_out; }");
    line(G, "for (; c%d + TILE_NT_W <= hi%d; c%d += TILE_NT_W) {", t, t, t);
    G->indent++;
    line(G, "float tb%d[TILE_NT_W] __attribute__((aligned(64)));", t);
    if (fails) line(G, "TILE_IVDEP");
    else line(G, "_Pragma(\"omp simd\")");
    line(G, "for (int64_t v%d = c%d; v%d < c%d + TILE_NT_W; v%d++) tb%d[v%d - c%d] = %s;", id, t, id, t, id, t, id, t, v);
    if (fails) line(G, "if (TILE_UNLIKELY(tile_failed(ctx))) { rc = 1; goto tile_out; }");
    line(G, "v%d = c%d;", id, t);
    /* rows: prefetch these columns of the next row of what the row loop reads (the worker's
     * next iteration reads it: its reads overlap this row's streaming writes); one line per
     * 16 elements (the AVX-512 vector; every other vector repeats a line with AVX) */
    const ir_buffer *pf[8];
    int npf = 0;
    if (G->row_var && !G->row_reads_ahead) row_loads(G, G->row_body, pf, &npf);
    for (int k = 0; k < npf; k++) {
        tile_strbuf ps = {0};
        put_stride(G, &ps, pf[k], 0);
        int per = 64 / (DBITS[pf[k]->dtype] / 8);
        line(G, "if (v%d + 1 < lo%d + end_ && c%d < %s) for (int64_t pk_ = 0; pk_ < TILE_NT_W; pk_ += %d) __builtin_prefetch(b%d + (v%d + 1) * %s + c%d + pk_, 0, TILE_ROW_PREFETCH);",
             G->row_var->id, G->row_t, t, ps.data, per, pf[k]->id, G->row_var->id, ps.data, t);
        tile_sb_free(&ps);
    }
    line(G, "tile_stream_f32v(b%d + (%s), tb%d);", y, o, t);
    G->indent--;
    line(G, "}");
    line(G, "for (v%d = c%d; v%d < hi%d; v%d++) b%d[%s] = %s;", id, t, id, t, id, y, o, v);
    if (fails) line(G, "if (TILE_UNLIKELY(tile_failed(ctx))) { rc = 1; goto tile_out; }");
    line(G, "tile_sfence();");
    free(v);
    tile_sb_free(&off);
    G->indent--;
    line(G, "} else {");
    G->indent++;
}

/* ---------- a sum with a streaming write riding along ----------
 * A serial loop outside kernels whose body is `a = a + P(j); Y[..., j] = Q(j)` (a an f32
 * local, Y an f32 tensor along its contiguous last dimension, neither P nor Q reading Y nor
 * a, Q not reading a): rowfuse's pipelined RMSNorm, the sum of squares of row r and the write
 * of row r - 1 in one loop, so the core reads, computes and writes at once as a memcpy does.
 * Run like the streaming write loops (ordinary stores to the first aligned vector and for the
 * tail, whole vectors with streaming stores, one sfence), the sum in TILE_NT_W lane partial
 * sums added to a at the end (the order of an `omp simd` reduction), and the tensors P reads
 * along j prefetched TILE_ROW_AHEAD elements ahead (as tile_row_expsumf does). */
static bool sum_nt(gen *G, const ir_stmt *s, const ir_stmt **as, const ir_stmt **ys) {
    if (s->loop_kind != IR_LOOP_SERIAL || G->fn->kernel_body || (G->opt && G->opt->bounds_checks)) return false;
    const ir_stmt *b = s->body[0];
    if (!b || b->kind != IR_S_SEQ || b->nbody != 2) return false;
    const ir_stmt *a = b->body[0], *y = b->body[1];
    while (a && a->kind == IR_S_SEQ && a->nbody == 1) a = a->body[0];
    while (y && y->kind == IR_S_SEQ && y->nbody == 1) y = y->body[0];
    if (!a || !y || a->kind != IR_S_ASSIGN || y->kind != IR_S_STORE) return false;
    const ir_var *acc = a->var;
    if (acc->kind != IR_VAR_LOCAL || acc->dtype != TILE_DT_F32) return false;
    const ir_expr *v = a->value;
    if (!v || v->kind != IR_E_BINARY || v->op != IR_B_ADD || v->nargs != 2 || v->dtype != TILE_DT_F32) return false;
    const ir_expr *P = v->args[0]->kind == IR_E_VAR && v->args[0]->var == acc ? v->args[1] : v->args[1]->kind == IR_E_VAR && v->args[1]->var == acc ? v->args[0] : NULL;
    if (!P || ir_expr_uses_var(P, acc)) return false;
    const ir_buffer *Y = y->buf;
    if (Y->dtype != TILE_DT_F32 || y->value->dtype != TILE_DT_F32 || Y->scope != IR_SCOPE_GLOBAL || Y->role == IR_BUF_TEMP || Y->rank < 1) return false;
    for (int d = 0; d + 1 < Y->rank; d++)
        if (ir_expr_uses_var(y->idx[d], s->var)) return false;
    const ir_expr *last = y->idx[Y->rank - 1];
    if (!(last->kind == IR_E_VAR && last->var == s->var)) return false;
    if (ir_expr_loads(y->value, Y) || ir_expr_loads(P, Y) || ir_expr_uses_var(y->value, acc)) return false;
    *as = a;
    *ys = y;
    return true;
}
/* the global tensors e loads along j (last index exactly j): their pointers at j, for prefetches */
static void run_loads(gen *G, const ir_expr *e, const ir_var *j, tile_strbuf *out, int *n) {
    if (!e) return;
    if (e->kind == IR_E_LOAD && e->buf->scope == IR_SCOPE_GLOBAL && e->buf->role != IR_BUF_TEMP && e->nargs == e->buf->rank && e->nargs >= 1 &&
        e->args[e->nargs - 1]->kind == IR_E_VAR && e->args[e->nargs - 1]->var == j && *n < 4) {
        bool ok = true;
        for (int d = 0; d + 1 < e->nargs; d++)
            if (ir_expr_uses_var(e->args[d], j)) ok = false;
        if (ok) {
            tile_strbuf off = {0};
            put_offset(G, &off, e->buf, e->args, e->loc);
            tile_strbuf pt = {0};
            tile_sb_printf(&pt, "b%d + (%s)", e->buf->id, off.data ? off.data : "0");
            bool dup = false;
            for (int k = 0; k < *n; k++)
                if (!strcmp(out[k].data, pt.data)) dup = true;
            if (dup) tile_sb_free(&pt);
            else out[(*n)++] = pt;
            tile_sb_free(&off);
        }
        return;
    }
    for (int i = 0; i < e->nargs; i++) run_loads(G, e->args[i], j, out, n);
}
static bool gfor_sum_nt(gen *G, const ir_stmt *s, const ir_stmt *as, const ir_stmt *ys, int t) {
    int id = s->var->id, a = as->var->id;
    bool mf = G->may_fail;
    G->may_fail = false;
    const ir_expr *v = as->value;
    const ir_expr *P = v->args[0]->kind == IR_E_VAR && v->args[0]->var == as->var ? v->args[1] : v->args[0];
    char *ps = expr_str(G, P, M_VALUE), *qs = expr_str(G, ys->value, M_VALUE);
    bool fails = G->may_fail;
    G->may_fail = mf;
    if (fails) {
        free(ps);
        free(qs);
        return false;
    }
    tile_strbuf off = {0};
    put_offset(G, &off, ys->buf, ys->idx, ys->loc);
    const char *o = off.data ? off.data : "0";
    int y = ys->buf->id;
    tile_strbuf pf[4] = {{0}};
    int npf = 0;
    run_loads(G, P, s->var, pf, &npf);
    line(G, "int64_t v%d;", id);
    line(G, "if (hi%d - lo%d >= %d) {", t, t, NT_MIN);
    G->indent++;
    line(G, "v%d = lo%d;", id, t);
    line(G, "int64_t c%d = lo%d + (int64_t)((-(uintptr_t)(b%d + (%s)) & (TILE_NT_W * 4 - 1)) / 4);", t, t, y, o);
    line(G, "if (c%d > hi%d) c%d = hi%d;", t, t, t, t);
    line(G, "for (v%d = lo%d; v%d < c%d; v%d++) { v%d = v%d + (%s); b%d[%s] = %s; }", id, t, id, t, id, a, a, ps, y, o, qs);
    line(G, "tile_f32v av%d = {0};", t);
    line(G, "for (; c%d + TILE_NT_W <= hi%d; c%d += TILE_NT_W) {", t, t, t);
    G->indent++;
    line(G, "float tb%d[TILE_NT_W] __attribute__((aligned(64))), tp%d[TILE_NT_W] __attribute__((aligned(64)));", t, t);
    line(G, "v%d = c%d;", id, t);
    for (int k = 0; k < npf; k++) line(G, "__builtin_prefetch(%s + TILE_ROW_AHEAD, 0, 3);", pf[k].data);
    line(G, "_Pragma(\"omp simd\")");
    line(G, "for (int64_t v%d = c%d; v%d < c%d + TILE_NT_W; v%d++) { tb%d[v%d - c%d] = %s; tp%d[v%d - c%d] = %s; }", id, t, id, t, id, t, id, t, qs, t, id, t,
         ps);
    line(G, "av%d += *(const tile_f32v *)tp%d;", t, t);
    line(G, "tile_stream_f32v(b%d + (%s), tb%d);", y, o, t);
    G->indent--;
    line(G, "}");
    line(G, "for (v%d = c%d; v%d < hi%d; v%d++) { v%d = v%d + (%s); b%d[%s] = %s; }", id, t, id, t, id, a, a, ps, y, o, qs);
    line(G, "tile_sfence();");
    line(G, "for (int k_ = 0; k_ < TILE_NT_W; k_++) v%d = v%d + av%d[k_];", a, a, t);
    G->indent--;
    line(G, "} else {");
    G->indent++;
    for (int k = 0; k < 4; k++) tile_sb_free(&pf[k]);
    tile_sb_free(&off);
    free(ps);
    free(qs);
    return true;
}

/* ---------- the read pass of row kernels ----------
 * Two serial loops outside kernels over a contiguous f32 run x(j) = X[..., j] (the last
 * index is the loop variable, the others do not use it), as rowfuse's read pass writes them,
 * run as calls of the prelude's hand-vectorised row helpers (tile_row_maxf, tile_row_expsumf:
 * the compiler builds a ~26-operation vector exp from tile_expf, the helper 17 with
 * vscalefps, the same values bit for bit):
 *   m = max(m, x(j))                                   ->  m = tile_row_maxf(&x(lo), n, m)
 *   [e = exp(x(j) - sh); [E[j] = e;]] c = c + e         ->  c = tile_row_expsumf(&x(lo), &E(lo) or NULL, n, sh, c)
 * with m, c, e f32 locals, sh an f32 local or constant, E an f32 buffer along its last index
 * (the one-exp form's row of exponentials). Checked builds keep the loops. */
static const ir_stmt *unseq(const ir_stmt *s) {
    while (s && s->kind == IR_S_SEQ && s->nbody == 1) s = s->body[0];
    return s;
}
/* the last index of a contiguous run along j: j, or j + k / j - k with k free of j (the
 * run's pointer is the element at j = lo) */
static bool run_index(const ir_expr *last, const ir_var *j) {
    if (last->kind == IR_E_VAR && last->var == j) return true;
    return last->kind == IR_E_BINARY && (last->op == IR_B_ADD || last->op == IR_B_SUB) && last->nargs == 2 && last->args[0]->kind == IR_E_VAR &&
           last->args[0]->var == j && !ir_expr_uses_var(last->args[1], j);
}
/* e is an f32 load of a contiguous run along loop variable j (through an f32 -> f32 cast) */
static const ir_expr *row_run(const ir_expr *e, const ir_var *j) {
    if (e && e->kind == IR_E_CAST && e->dtype == TILE_DT_F32 && e->nargs == 1 && e->args[0]->dtype == TILE_DT_F32) e = e->args[0];
    if (!e || e->kind != IR_E_LOAD || e->dtype != TILE_DT_F32 || e->buf->dtype != TILE_DT_F32 || e->buf->rank < 1 || e->nargs != e->buf->rank)
        return NULL;
    if (!run_index(e->args[e->nargs - 1], j)) return NULL;
    for (int d = 0; d + 1 < e->nargs; d++)
        if (ir_expr_uses_var(e->args[d], j)) return NULL;
    return e;
}
/* s stores along a contiguous run of loop variable j (as row_run for loads) */
static bool store_run(const ir_stmt *s, const ir_var *j) {
    const ir_buffer *B = s->buf;
    if (B->rank < 1) return false;
    const ir_expr *last = s->idx[B->rank - 1];
    if (last->kind != IR_E_VAR || last->var != j) return false;
    for (int d = 0; d + 1 < B->rank; d++)
        if (ir_expr_uses_var(s->idx[d], j)) return false;
    return true;
}
static bool f32_local(const ir_var *v) { return v && v->dtype == TILE_DT_F32 && v->kind == IR_VAR_LOCAL; }
static bool is_var_ref(const ir_expr *e, const ir_var *v) { return e && e->kind == IR_E_VAR && e->var == v; }
/* `c = c + a` or `c = a + c` (f32 local c): a, else NULL */
static const ir_expr *acc_add(const ir_stmt *s, const ir_var **c) {
    if (!s || s->kind != IR_S_ASSIGN || !f32_local(s->var)) return NULL;
    const ir_expr *v = s->value;
    if (!v || v->kind != IR_E_BINARY || v->op != IR_B_ADD || v->nargs != 2 || v->dtype != TILE_DT_F32) return NULL;
    *c = s->var;
    if (is_var_ref(v->args[0], s->var) && !ir_expr_uses_var(v->args[1], s->var)) return v->args[1];
    if (is_var_ref(v->args[1], s->var) && !ir_expr_uses_var(v->args[0], s->var)) return v->args[0];
    return NULL;
}
/* exp(x(j) - sh): the load and sh */
static const ir_expr *exp_of_shifted(const ir_expr *e, const ir_var *j, const ir_expr **sh) {
    if (!e || e->kind != IR_E_CALL || e->op != IR_I_EXP || e->nargs != 1 || e->dtype != TILE_DT_F32) return NULL;
    const ir_expr *d = e->args[0];
    if (!d || d->kind != IR_E_BINARY || d->op != IR_B_SUB || d->nargs != 2 || d->dtype != TILE_DT_F32) return NULL;
    const ir_expr *b = d->args[1];
    if (!((b->kind == IR_E_VAR && f32_local(b->var) && b->var != j) || (b->kind == IR_E_CONST && b->dtype == TILE_DT_F32))) return NULL;
    *sh = b;
    return row_run(d->args[0], j);
}
static void put_run_ptr(gen *G, tile_strbuf *sb, const ir_expr *ld) {
    tile_strbuf off = {0};
    put_offset(G, &off, ld->buf, ld->args, ld->loc);
    tile_sb_printf(sb, "b%d + %s", ld->buf->id, off.data ? off.data : "0");
    tile_sb_free(&off);
}
static bool grow_read(gen *G, const ir_stmt *s, int t) {
    if (s->loop_kind != IR_LOOP_SERIAL || G->fn->kernel_body || (G->opt && G->opt->bounds_checks)) return false;
    const ir_var *j = s->var;
    const ir_stmt *b = unseq(s->body[0]);
    if (!b) return false;
    if (b->kind == IR_S_ASSIGN && f32_local(b->var)) { /* m = max(m, x(j)) */
        const ir_expr *v = b->value, *ld = NULL;
        if (v && v->kind == IR_E_BINARY && v->op == IR_B_MAX && v->nargs == 2 && v->dtype == TILE_DT_F32) {
            if (is_var_ref(v->args[0], b->var)) ld = row_run(v->args[1], j);
            else if (is_var_ref(v->args[1], b->var)) ld = row_run(v->args[0], j);
        }
        if (ld) {
            tile_strbuf p = {0};
            line(G, "int64_t v%d = lo%d;", j->id, t);
            put_run_ptr(G, &p, ld);
            line(G, "v%d = tile_row_maxf(%s, hi%d - lo%d, v%d);", b->var->id, p.data, t, t, b->var->id);
            tile_sb_free(&p);
            return true;
        }
    }
    /* the exp-and-sum loop: one, two or three statements (and a write riding along) */
    const ir_stmt *st[4];
    int n = 0;
    if (b->kind == IR_S_SEQ) {
        if (b->nbody < 1 || b->nbody > 4) return false;
        for (int i = 0; i < b->nbody; i++) st[n++] = unseq(b->body[i]);
    } else st[n++] = b;
    const ir_var *c = NULL, *ev = NULL;
    /* Y[..., j] = W[..., j] * g (g an f32 local or constant) after the three: rowfuse's
     * pipelined softmax writing the previous row -> tile_row_expsum_wrf */
    const ir_stmt *ys = NULL;
    const ir_expr *yw = NULL, *yg = NULL;
    if (n == 4) {
        ys = st[3];
        n = 3;
        const ir_expr *v = ys->kind == IR_S_STORE ? ys->value : NULL;
        if (!v || ys->buf->dtype != TILE_DT_F32 || !store_run(ys, j) || v->kind != IR_E_BINARY || v->op != IR_B_MUL || v->nargs != 2 ||
            v->dtype != TILE_DT_F32)
            return false;
        for (int k = 0; k < 2; k++) {
            const ir_expr *L = row_run(v->args[k], j), *o = v->args[1 - k];
            if (L && ((o->kind == IR_E_VAR && f32_local(o->var) && o->var != j) || (o->kind == IR_E_CONST && o->dtype == TILE_DT_F32))) {
                yw = L;
                yg = o;
                break;
            }
        }
        if (!yw || yw->buf == ys->buf) return false;
    }
    const ir_expr *sh = NULL, *ld = NULL, *a = acc_add(st[n - 1], &c);
    const ir_stmt *es = NULL;
    if (!a) return false;
    if (n == 1) {
        ld = exp_of_shifted(a, j, &sh);
    } else {
        if (st[0]->kind != IR_S_ASSIGN || !f32_local(st[0]->var)) return false;
        ev = st[0]->var;
        ld = exp_of_shifted(st[0]->value, j, &sh);
        if (!ld || !is_var_ref(a, ev) || ev == c) return false;
        if (n == 3) {
            es = st[1];
            if (es->kind != IR_S_STORE || es->buf->dtype != TILE_DT_F32 || !is_var_ref(es->value, ev) || !store_run(es, j) || es->buf == ld->buf)
                return false;
        }
    }
    if (!ld || !sh || (sh->kind == IR_E_VAR && (sh->var == c || sh->var == ev))) return false;
    if (ys && (!es || ys->buf == ld->buf || ys->buf == es->buf || (yg->kind == IR_E_VAR && (yg->var == c || yg->var == ev))))
        return false;
    tile_strbuf px = {0}, pe = {0};
    line(G, "int64_t v%d = lo%d;", j->id, t);
    put_run_ptr(G, &px, ld);
    if (es) {
        tile_strbuf off = {0};
        put_offset(G, &off, es->buf, es->idx, es->loc);
        tile_sb_printf(&pe, "b%d + %s", es->buf->id, off.data ? off.data : "0");
        tile_sb_free(&off);
    } else tile_sb_puts(&pe, "NULL");
    char *shs = expr_str(G, sh, M_VALUE);
    if (ys) {
        tile_strbuf py = {0}, pw = {0}, off = {0};
        put_offset(G, &off, ys->buf, ys->idx, ys->loc);
        tile_sb_printf(&py, "b%d + %s", ys->buf->id, off.data ? off.data : "0");
        put_run_ptr(G, &pw, yw);
        char *gs = expr_str(G, yg, M_VALUE);
        line(G, "v%d = tile_row_expsum_wrf(%s, %s, hi%d - lo%d, %s, v%d, %s, %s, %s);", c->id, px.data, pe.data, t, t, shs, c->id, py.data, pw.data, gs);
        free(gs);
        tile_sb_free(&py);
        tile_sb_free(&pw);
        tile_sb_free(&off);
    } else
        line(G, "v%d = tile_row_expsumf(%s, %s, hi%d - lo%d, %s, v%d);", c->id, px.data, pe.data, t, t, shs, c->id);
    if (G->row_var) G->row_reads_ahead = true;
    free(shs);
    tile_sb_free(&px);
    tile_sb_free(&pe);
    return true;
}

static void gfor_body(gen *G, const ir_stmt *s);
static void gfor(gen *G, const ir_stmt *s) {
    const ir_stmt *saved = G->par_nest;
    if (s->par_group_depth > 0) G->par_nest = s;
    gfor_body(G, s);
    G->par_nest = saved;
}

static void gfor_body(gen *G, const ir_stmt *s) {
    int t = tmp(G);
    int id = s->var->id;
    if (s->loop_kind == IR_LOOP_PARALLEL && !G->in_parallel) {
        EXPLAIN(G->par_nest ? G->par_nest : s, IR_DEC_GOT, "chunks of iterations over the thread pool", NULL);
        /* outline: chunks of iterations over the pool */
        int fnid = G->nfuncs++;
        char *ext = expr_str(G, s->extent, M_INDEX);
        line(G, "{");
        G->indent++;
        line(G, "int64_t n%d = %s;", t, ext);
        check_fail(G);
        line(G, "TILE_SAVE_STATE(&Sl);");
        line(G, "if (tile_run_range(ctx, &Sl, tile_fn%d, n%d, %d)) { rc = 1; goto tile_out; }", fnid, t, G->f->nbuffers);
        G->indent--;
        line(G, "}");
        free(ext);
        tile_sb_printf(&G->decls, "static int tile_fn%d(tile_ctx *ctx, void *st_, int64_t begin_, int64_t end_);\n", fnid);
        int saved_indent = G->indent;
        begin_fn(G);
        G->fn->range_body = true;
        G->in_parallel++;
        G->indent = 1;
        char *lo = expr_str(G, s->lo, M_INDEX);
        line(G, "int64_t lo%d = %s;", t, lo);
        free(lo);
        check_fail(G);
        if (!contains_loop(s->body[0])) line(G, "TILE_IVDEP");
        line(G, "for (int64_t v%d = lo%d + begin_; v%d < lo%d + end_; v%d++) {", id, t, id, t, id);
        G->indent++;
        bool saved_ahead = G->row_reads_ahead;
        G->row_reads_ahead = false;
        const ir_var *saved_row = G->row_var;
        const ir_stmt *saved_body = G->row_body;
        int saved_row_t = G->row_t;
        G->row_var = s->var;
        G->row_body = s->body[0];
        G->row_t = t;
        gstmt(G, s->body[0]);
        G->row_var = saved_row;
        G->row_reads_ahead = saved_ahead;
        G->row_body = saved_body;
        G->row_t = saved_row_t;
        G->indent--;
        line(G, "}");
        G->in_parallel--;
        tile_strbuf h = {0};
        tile_sb_printf(&h, "static int tile_fn%d(tile_ctx *ctx, void *st_, int64_t begin_, int64_t end_)", fnid);
        end_fn(G, h.data, NULL);
        tile_sb_free(&h);
        G->indent = saved_indent;
        return;
    }
    char *lo = expr_str(G, s->lo, M_INDEX), *ext = expr_str(G, s->extent, M_INDEX);
    line(G, "{");
    G->indent++;
    line(G, "int64_t lo%d = %s, hi%d = lo%d + (%s);", t, lo, t, t, ext);
    free(lo);
    free(ext);
    check_fail(G);
    if (grow_read(G, s, t)) {
        if (G->par_nest) EXPLAIN(G->par_nest, IR_DEC_GOT, "loops in the block, the rows it reads loaded ahead as vector runs", NULL);
        G->indent--;
        line(G, "}");
        return;
    }
    const ir_stmt *nts = nt_store(G, s), *sas, *sys;
    if (nts) {
        line(G, "int64_t v%d;", id);
        gfor_nt(G, s, nts, t);
    } else if (sum_nt(G, s, &sas, &sys) && gfor_sum_nt(G, s, sas, sys, t))
        nts = sys;
    tile_strbuf red = {0};
    bool simd_red = simd_reduction_pragma(G, s, &red);
    if (simd_red && !nts && gfor_minmax(G, s, t, red.data)) {
        tile_sb_free(&red);
        G->indent--;
        line(G, "}");
        return;
    }
    if (G->par_nest && s->loop_kind == IR_LOOP_PARALLEL && G->in_parallel) {
        if (!contains_loop(s->body[0]))
            EXPLAIN(G->par_nest, IR_DEC_GOT, nts ? "loops in the block, the innermost vectorised with streaming stores" : simd_red ? "loops in the block, the innermost an omp simd reduction" : "loops in the block, the innermost under TILE_IVDEP (iterations independent: vectorised by the C compiler)", NULL);
        else if (s == G->par_nest && !s->body[0])
            EXPLAIN(G->par_nest, IR_DEC_GOT, "loops in the block", NULL);
    }
    if ((s->loop_kind == IR_LOOP_PARALLEL || s->loop_kind == IR_LOOP_VECTORIZED) && !contains_loop(s->body[0])) line(G, "TILE_IVDEP");
    else if (s->loop_kind == IR_LOOP_UNROLLED) line(G, "_Pragma(\"GCC unroll 4\")");
    size_t at = B(G)->len;
    line(G, "for (int64_t v%d = lo%d; v%d < hi%d; v%d++) {", id, t, id, t, id);
    G->indent++;
    gstmt(G, s->body[0]);
    G->indent--;
    line(G, "}");
    if (simd_red && B(G)->data && !strstr(B(G)->data + at, "goto ") && !strstr(B(G)->data + at, "break;") &&
        !strstr(B(G)->data + at, "continue;")) {
        /* no jump out of the loop body (checked builds, failing operations): put the pragma
         * in front of the `for` */
        char *tail = tile_xstrdup(B(G)->data + at);
        B(G)->len = at;
        B(G)->data[at] = 0;
        ind(G);
        tile_sb_puts(B(G), red.data);
        tile_sb_putc(B(G), '\n');
        tile_sb_puts(B(G), tail);
        free(tail);
    }
    tile_sb_free(&red);
    if (nts) {
        G->indent--;
        line(G, "}");
    }
    G->indent--;
    line(G, "}");
}

static void gkernel(gen *G, const ir_stmt *s) {
    if (G->in_parallel) {
        int m = msg_at(G, s->loc, "kernels cannot be nested");
        line(G, "tile_fail(ctx, tile_msg%d); rc = 1; goto tile_out;", m);
        return;
    }
    int t = tmp(G), fnid = G->nfuncs++;
    EXPLAIN(s, IR_DEC_GOT, "its blocks spread over the thread pool, each block's threads= run as one C thread", NULL);
    line(G, "{");
    G->indent++;
    tile_strbuf neg = {0};
    tile_sb_puts(&neg, "0");
    for (int d = 0; d < 3; d++) {
        if (d < s->ngrid) {
            char *g = expr_str(G, s->grid[d], M_INDEX);
            line(G, "int64_t g%d_%d = %s;", t, d, g);
            free(g);
            tile_sb_printf(&neg, " || g%d_%d < 0", t, d);
        } else {
            line(G, "int64_t g%d_%d = 1;", t, d);
        }
    }
    check_fail(G);
    int m = msg_at(G, s->loc, "kernel grid dimension is negative");
    line(G, "if (%s) { tile_fail(ctx, tile_msg%d); rc = 1; goto tile_out; }", neg.data, m);
    tile_sb_free(&neg);
    line(G, "TILE_SAVE_STATE(&Sl);");
    line(G, "if (tile_run_grid(ctx, &Sl, tile_fn%d, g%d_0, g%d_1, g%d_2, %d)) { rc = 1; goto tile_out; }", fnid, t, t, t, G->f->nbuffers);
    G->indent--;
    line(G, "}");
    tile_sb_printf(&G->decls, "static int tile_fn%d(tile_ctx *ctx, void *st_, int64_t b0_, int64_t b1_, int64_t b2_);\n", fnid);
    int saved_indent = G->indent;
    begin_fn(G);
    G->fn->kernel_body = true;
    G->in_parallel++;
    G->indent = 1;
    static const char *bn[3] = {"b0_", "b1_", "b2_"};
    for (int d = 0; d < s->ngrid; d++)
        if (s->block_vars[d]) line(G, "v%d = %s;", s->block_vars[d]->id, bn[d]);
    line(G, "(void)b0_; (void)b1_; (void)b2_;");
    gstmt(G, s->body[0]);
    G->in_parallel--;
    tile_strbuf h = {0};
    tile_sb_printf(&h, "static int tile_fn%d(tile_ctx *ctx, void *st_, int64_t b0_, int64_t b1_, int64_t b2_)", fnid);
    end_fn(G, h.data, NULL);
    tile_sb_free(&h);
    G->indent = saved_indent;
}

/* ---------- fusing an elementwise T.Parallel nest with the row reduction after it ----------
 * In the tile form, `for i, j in T.Parallel(R, L): F[i, j] = e` followed by
 * `T.reduce_sum(F, D, dim=1)` over whole f32 buffers (F [R, L], D [R]) is emitted as
 * one loop per row in chunks of FUSE_CHUNK elements: a chunk is stored, then summed with
 * tile_run_f32 while it is still in L1 (the reduce would read the whole fragment again, from
 * L2 or beyond once an 8-row fragment of a long row outgrows L2). Legal because the
 * nest's iterations are independent (T.Parallel), it stores only F[i, j] and does not read D,
 * so row i of F is final when row i's inner loop ends. Sums are reassociated (per chunk, then
 * the chunks in order; the unfused tile_run_f32 reassociates too: the f32 reduction
 * tolerance of docs/cli.md).
 * Max/min reduces are left to tile_run_f32 (fused with a select-based omp simd max, the
 * softmax was measured 15-25% slower). Opt-in with TILE_FUSE_REDUCE=1: in same-process runs
 * (bench/results/cpu-e2e-2026-11-29-3.md, "RMSNorm, fused") it measured between 15% slower
 * and 25% faster than the unfused loops on a loaded machine: no gain shown, off by default. */
enum { FUSE_CHUNK = 256 }; /* elements of a row stored, then summed while in L1 */
static const ir_stmt *fz_single(const ir_stmt *s) {
    while (s && s->kind == IR_S_SEQ && s->nbody == 1) s = s->body[0];
    return s;
}
static bool fz_const0(const ir_expr *e) {
    int64_t v;
    return e && ir_const_int_value(e, &v) && v == 0;
}
/* the STORE of the fusable nest a followed by reduce r, or NULL */
static const ir_stmt *fuse_match(gen *G, const ir_stmt *a, const ir_stmt *r) {
    if (!tb_opt_bool(G->f->opts, TB_OPT_fuse_reduce)) return NULL;
    if (G->f->form != IR_FORM_TILE || !a || !r || r->kind != IR_S_REDUCE) return NULL;
    a = fz_single(a);
    if (!a || a->kind != IR_S_FOR || a->loop_kind != IR_LOOP_PARALLEL || a->par_group_depth != 2 || !fz_const0(a->lo)) return NULL;
    const ir_stmt *in = fz_single(a->body[0]);
    if (!in || in->kind != IR_S_FOR || !fz_const0(in->lo)) return NULL;
    const ir_stmt *st = fz_single(in->body[0]);
    if (!st || st->kind != IR_S_STORE || !reduce_rows_fast(G, r)) return NULL;
    if (r->reduce_op != IR_RED_SUM) return NULL; /* max/min: tile_run_f32's two 16-lane accumulators measured faster */
    const ir_buffer *F = r->regions[0].buf, *D = r->regions[1].buf;
    int64_t R, L;
    if (st->buf != F || F->rank != 2 || !ir_const_int_value(a->extent, &R) || !ir_const_int_value(in->extent, &L)) return NULL;
    if (R != G->cdims[F->id][0] || L != G->cdims[F->id][1]) return NULL;
    if (st->idx[0]->kind != IR_E_VAR || st->idx[0]->var != a->var || st->idx[1]->kind != IR_E_VAR || st->idx[1]->var != in->var) return NULL;
    if (!st->value || st->value->dtype != TILE_DT_F32 || ir_expr_loads(st->value, D)) return NULL;
    return st;
}
static void gfused_reduce(gen *G, const ir_stmt *a, const ir_stmt *st, const ir_stmt *r) {
    a = fz_single(a);
    const ir_stmt *in = fz_single(a->body[0]);
    const ir_buffer *F = r->regions[0].buf, *D = r->regions[1].buf;
    int t = tmp(G);
    long long R = (long long)G->cdims[F->id][0], L = (long long)G->cdims[F->id][1];
    int iv = a->var->id, jv = in->var->id;
    line(G, "{ /* T.Parallel nest fused with the reduce after it */");
    G->indent++;
    line(G, "for (int64_t v%d = 0; v%d < INT64_C(%lld); v%d++) {", iv, iv, R, iv);
    G->indent++;
    line(G, "float acc%d = 0.0f;", t);
    line(G, "for (int64_t c%d = 0; c%d < INT64_C(%lld); c%d += %d) {", t, t, L, t, FUSE_CHUNK);
    G->indent++;
    line(G, "int64_t e%d = c%d + %d < INT64_C(%lld) ? c%d + %d : INT64_C(%lld);", t, t, FUSE_CHUNK, L, t, FUSE_CHUNK, L);
    line(G, "TILE_IVDEP");
    line(G, "for (int64_t v%d = c%d; v%d < e%d; v%d++) {", jv, t, jv, t, jv);
    G->indent++;
    gstmt(G, st);
    G->indent--;
    line(G, "}");
    line(G, "acc%d += tile_run_f32(b%d + v%d * INT64_C(%lld) + c%d, e%d - c%d, 0);", t, F->id, iv, L, t, t, t);
    G->indent--;
    line(G, "}");
    if (r->clear) line(G, "float a%d = 0.0f;", t);
    else line(G, "float a%d = b%d[v%d];", t, D->id, iv);
    line(G, "b%d[v%d] = a%d + acc%d;", D->id, iv, t, t);
    G->indent--;
    line(G, "}");
    G->indent--;
    line(G, "}");
}

static void gstmt(gen *G, const ir_stmt *s) {
    if (G->failed || !s) return;
    G->may_fail = false;
    switch (s->kind) {
    case IR_S_SEQ: {
        line(G, "{");
        G->indent++;
        for (int i = 0; i < s->nbody; i++) {
            const ir_stmt *fst = i + 1 < s->nbody ? fuse_match(G, s->body[i], s->body[i + 1]) : NULL;
            if (fst) {
                gfused_reduce(G, s->body[i], fst, s->body[i + 1]);
                i++;
            } else {
                gstmt(G, s->body[i]);
            }
        }
        for (int i = 0; i < s->nbody; i++)
            if (s->body[i] && s->body[i]->kind == IR_S_ALLOC && G->fn->heap[s->body[i]->buf->id])
                line(G, "free(h%d); h%d = NULL;", s->body[i]->buf->id, s->body[i]->buf->id);
        G->indent--;
        line(G, "}");
        return;
    }
    case IR_S_FOR: gfor(G, s); return;
    case IR_S_WHILE: {
        char *c = expr_str(G, s->cond, M_VALUE);
        bool mf = G->may_fail;
        line(G, "for (;;) {");
        G->indent++;
        line(G, "int c_ = %s;", c);
        free(c);
        G->may_fail = mf;
        check_fail(G);
        line(G, "if (!c_) break;");
        gstmt(G, s->body[0]);
        G->indent--;
        line(G, "}");
        return;
    }
    case IR_S_IF: {
        char *c = expr_str(G, s->cond, M_VALUE);
        bool extra = G->may_fail;
        if (G->may_fail) {
            line(G, "{");
            G->indent++;
            line(G, "int c_ = %s;", c);
            check_fail(G);
            line(G, "if (c_) {");
        } else {
            line(G, "if (%s) {", c);
        }
        free(c);
        G->indent++;
        gstmt(G, s->body[0]);
        G->indent--;
        if (s->nbody >= 2 && s->body[1]) {
            line(G, "} else {");
            G->indent++;
            gstmt(G, s->body[1]);
            G->indent--;
        }
        line(G, "}");
        if (extra) {
            G->indent--;
            line(G, "}");
        }
        return;
    }
    case IR_S_ASSIGN: {
        char *v = expr_str(G, s->value, M_VALUE);
        line(G, "v%d = %s;", s->var->id, v);
        free(v);
        check_fail(G);
        return;
    }
    case IR_S_STORE: {
        char *v = expr_str(G, s->value, M_VALUE);
        tile_strbuf off = {0}, st = {0};
        put_offset(G, &off, s->buf, s->idx, s->loc);
        if (G->may_fail) {
            /* evaluate the value first (the interpreter's order), then check */
            line(G, "{ %s x_ = %s;", vtype(s->value->dtype), v);
            put_store(&st, s->buf, off.data ? off.data : "0", s->value->dtype, "x_");
            line(G, "  if (TILE_UNLIKELY(tile_failed(ctx))) { rc = 1; goto tile_out; }");
            line(G, "  %s }", st.data);
            G->may_fail = false;
        } else {
            put_store(&st, s->buf, off.data ? off.data : "0", s->value->dtype, v);
            line(G, "%s", st.data);
        }
        free(v);
        tile_sb_free(&off);
        tile_sb_free(&st);
        return;
    }
    case IR_S_ATOMIC: gatomic(G, s); return;
    case IR_S_ALLOC: galloc(G, s); return;
    case IR_S_KERNEL: gkernel(G, s); return;
    case IR_S_COPY: gcopy(G, s); return;
    case IR_S_FILL: gfill(G, s); return;
    case IR_S_GEMM: ggemm(G, s); return;
    case IR_S_REDUCE: greduce(G, s); return;
    case IR_S_BREAK: line(G, "break;"); return;
    case IR_S_CONTINUE: line(G, "continue;"); return;
    case IR_S_ASSERT: {
        char *c = expr_str(G, s->cond, M_VALUE);
        int m = msg_at(G, s->loc, "assertion failed: %s", s->msg ? s->msg : "(no message)");
        check_fail(G);
        line(G, "if (!(%s)) { tile_fail(ctx, tile_msg%d); rc = 1; goto tile_out; }", c, m);
        free(c);
        return;
    }
    default: gfail(G, s->loc, "internal: the C generator got a statement kind it does not know"); return;
    }
}

/* ---------- the translation unit ---------- */
static void sanitize(tile_strbuf *sb, const char *name) {
    for (const char *p = name; p && *p; p++) {
        char c = *p;
        tile_sb_putc(sb, ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_') ? c : '_');
    }
}

int tile_codegen_c(const ir_func *f, const tile_codegen_c_options *opt, tile_strbuf *out, tile_strbuf *err) {
    if (!f || !f->body) {
        tile_sb_puts(err, "error: no function to generate C for\n");
        return 1;
    }
    gen G;
    memset(&G, 0, sizeof G);
    G.f = f;
    G.opt = opt;
    G.err = err;
    int nb = f->nbuffers;
    G.constshape = tile_xcalloc((size_t)nb + 1, sizeof(bool));
    G.cdims = tile_xcalloc((size_t)nb + 1, sizeof(*G.cdims));
    for (int i = 0; i < nb; i++) {
        const ir_buffer *b = f->buffers[i];
        if (!b || b->rank < 0 || b->rank > 8 || !dt_ok(b->dtype) || b->id != i) {
            tile_sb_puts(err, "error: internal: malformed buffer table\n");
            free(G.constshape);
            free(G.cdims);
            return 1;
        }
        bool c = true;
        for (int d = 0; d < b->rank; d++) {
            int64_t v;
            if (ir_const_int_value(b->shape[d], &v) && v >= 0 && v <= ((int64_t)1 << 40)) G.cdims[i][d] = v;
            else c = false;
        }
        /* parameters and outputs: the caller's memory, whatever the shape says; with
         * param_strides their strides come from the caller, so nothing about them is constant */
        if (opt && opt->param_strides && b->role != IR_BUF_TEMP) c = false;
        G.constshape[i] = c;
    }
    for (int i = 0; i < f->nvars; i++)
        if (!f->vars[i] || f->vars[i]->id != i || !dt_ok(f->vars[i]->dtype)) {
            tile_sb_puts(err, "error: internal: malformed variable table\n");
            free(G.constshape);
            free(G.cdims);
            return 1;
        }

    /* the main body */
    begin_fn(&G);
    G.indent = 1;
    /* dims and strides of parameters and outputs */
    for (int i = 0; i < nb; i++) {
        const ir_buffer *b = f->buffers[i];
        if (b->role == IR_BUF_TEMP || G.constshape[i]) continue;
        for (int d = 0; d < b->rank; d++) {
            char *x = expr_str(&G, b->shape[d], M_INDEX);
            line(&G, "b%d_n%d = %s;", i, d, x);
            free(x);
        }
        int slot = -1; /* param_strides: the caller's strides, a->strides[slot][d] */
        for (int k = 0; opt && opt->param_strides && k < f->nparams; k++)
            if (f->params[k].buf == b) slot = k;
        for (int k = 0; opt && opt->param_strides && k < f->nrets; k++)
            if (f->rets[k] == b) slot = f->nparams + k;
        for (int d = b->rank - 1; d >= 0; d--) {
            if (slot >= 0) line(&G, "b%d_s%d = ctx->a->strides[%d] ? ctx->a->strides[%d][%d] : %s;", i, d, slot, slot, d, d == b->rank - 1 ? "1" : "0");
            if (slot >= 0 && d < b->rank - 1) line(&G, "if (!ctx->a->strides[%d]) b%d_s%d = b%d_s%d * b%d_n%d;", slot, i, d, i, d + 1, i, d + 1);
            else if (slot < 0 && d == b->rank - 1) line(&G, "b%d_s%d = 1;", i, d);
            else if (slot < 0) line(&G, "b%d_s%d = b%d_s%d * b%d_n%d;", i, d, i, d + 1, i, d + 1);
        }
    }
    G.may_fail = false;
    gstmt(&G, f->body);
    end_fn(&G, "static int tile_main(tile_ctx *ctx, void *st_)", NULL);

    if (G.failed) {
        tile_sb_free(&G.fns);
        tile_sb_free(&G.decls);
        tile_sb_free(&G.msgs);
        free(G.constshape);
        free(G.cdims);
        return 1;
    }

    /* assemble */
    tile_sb_printf(out, "/* Generated by tile (C backend) from '%s'", f->name);
    if (f->loc.src) tile_sb_printf(out, " in %s:%d", f->loc.src->name, f->loc.line);
    tile_sb_puts(out, ". */\n");
    tile_sb_puts(out, "enum {");
    for (int i = 0; i < TILE_DT_COUNT; i++) tile_sb_printf(out, "%s TDT_%s = %d", i ? "," : "", DNAME[i], i);
    tile_sb_printf(out, ", TDT_COUNT = %d };\n#define TILE_DT_KINDS {", TILE_DT_COUNT);
    for (int i = 0; i < TILE_DT_COUNT; i++) tile_sb_printf(out, "%s'%c'", i ? ", " : "", DK[i]);
    tile_sb_puts(out, "}\n#define TILE_DT_BITS {");
    for (int i = 0; i < TILE_DT_COUNT; i++) tile_sb_printf(out, "%s%d", i ? ", " : "", DBITS[i]);
    tile_sb_puts(out, "}\n");
    tile_sb_puts(out, tile_cpu_prelude_text);
    tile_sb_puts(out, "\n/* ======================== the kernel ======================== */\n");
    /* state */
    tile_sb_puts(out, "typedef struct tile_st {\n");
    for (int i = 0; i < f->nvars; i++) {
        const ir_var *v = f->vars[i];
        tile_sb_printf(out, "    %s v%d; /* ", var_ctype(v), i);
        sanitize(out, v->name);
        tile_sb_puts(out, " */\n");
    }
    for (int i = 0; i < nb; i++) {
        const ir_buffer *b = f->buffers[i];
        tile_sb_printf(out, "    %s *b%d; /* ", stype(b->dtype), i);
        sanitize(out, b->name);
        tile_sb_printf(out, ": %s %s */\n", tile_dtype_name(b->dtype), ir_scope_name(b->scope));
        if (!G.constshape[i] && b->rank) {
            tile_sb_puts(out, "    int64_t");
            for (int d = 0; d < b->rank; d++) tile_sb_printf(out, "%s b%d_n%d, b%d_s%d", d ? "," : "", i, d, i, d);
            tile_sb_puts(out, ";\n");
        }
    }
    tile_sb_puts(out, "    int unused_;\n} tile_st;\n\n#define TILE_LOAD_STATE(S) \\\n");
    for (int i = 0; i < f->nvars; i++) tile_sb_printf(out, "    %s v%d = (S)->v%d; (void)v%d; \\\n", var_ctype(f->vars[i]), i, i, i);
    for (int i = 0; i < nb; i++) {
        const ir_buffer *b = f->buffers[i];
        tile_sb_printf(out, "    %s *b%d = (S)->b%d; (void)b%d; \\\n", stype(b->dtype), i, i, i);
        if (!G.constshape[i])
            for (int d = 0; d < b->rank; d++)
                tile_sb_printf(out, "    int64_t b%d_n%d = (S)->b%d_n%d, b%d_s%d = (S)->b%d_s%d; (void)b%d_n%d; (void)b%d_s%d; \\\n", i, d, i, d, i, d,
                               i, d, i, d, i, d);
    }
    tile_sb_puts(out, "    (void)0\n#define TILE_SAVE_STATE(S) \\\n");
    for (int i = 0; i < f->nvars; i++) tile_sb_printf(out, "    (S)->v%d = v%d; \\\n", i, i);
    for (int i = 0; i < nb; i++) {
        const ir_buffer *b = f->buffers[i];
        tile_sb_printf(out, "    (S)->b%d = b%d; \\\n", i, i);
        if (!G.constshape[i])
            for (int d = 0; d < b->rank; d++) tile_sb_printf(out, "    (S)->b%d_n%d = b%d_n%d; (S)->b%d_s%d = b%d_s%d; \\\n", i, d, i, d, i, d, i, d);
    }
    tile_sb_puts(out, "    (void)0\n\n");
    if (G.msgs.data) tile_sb_puts(out, G.msgs.data);
    tile_sb_puts(out, "\nstatic int tile_main(tile_ctx *ctx, void *st_);\n");
    if (G.decls.data) tile_sb_puts(out, G.decls.data);
    tile_sb_puts(out, "\n");
    if (G.fns.data) tile_sb_puts(out, G.fns.data);
    /* the entry point */
    tile_sb_puts(out, "TILE_EXPORT int tile_entry(const tile_cpu_args *a) {\n");
    tile_sb_puts(out, "    if (!a || a->abi_version != TILE_CPU_ABI_VERSION || !a->svc || a->svc->abi_version != TILE_CPU_ABI_VERSION) return 2;\n");
    tile_sb_puts(out, "    tile_init_tabs();\n    tile_ctx ctx_ = {a, 0};\n    tile_st S;\n    memset(&S, 0, sizeof S);\n");
    for (int i = 0; i < f->nsizes; i++) tile_sb_printf(out, "    S.v%d = (int32_t)a->sizes[%d];\n", f->sizes[i]->id, i);
    for (int i = 0; i < f->nparams; i++) {
        const ir_param *p = &f->params[i];
        if (p->buf) tile_sb_printf(out, "    S.b%d = (%s *)a->params[%d];\n", p->buf->id, stype(p->buf->dtype), i);
        else if (p->var) {
            tile_dtype dt = p->var->dtype;
            if (ISF(dt)) {
                tile_strbuf x = {0}, c = {0};
                tile_sb_printf(&x, "a->scalar_f[%d]", i);
                put_conv(&c, TILE_DT_F64, dt, x.data);
                tile_sb_printf(out, "    S.v%d = %s;\n", p->var->id, c.data);
                tile_sb_free(&x);
                tile_sb_free(&c);
            } else if (ISB(dt)) {
                tile_sb_printf(out, "    S.v%d = a->scalar_i[%d] != 0;\n", p->var->id, i);
            } else {
                tile_sb_printf(out, "    S.v%d = (%s)a->scalar_i[%d];\n", p->var->id, vtype(dt), i);
            }
        }
    }
    for (int i = 0; i < f->nrets; i++) tile_sb_printf(out, "    S.b%d = (%s *)a->rets[%d];\n", f->rets[i]->id, stype(f->rets[i]->dtype), i);
    tile_sb_puts(out, "    int rc = tile_main(&ctx_, &S);\n    return (rc || tile_failed(&ctx_)) ? 1 : 0;\n}\n");

    tile_sb_free(&G.fns);
    tile_sb_free(&G.decls);
    tile_sb_free(&G.msgs);
    free(G.constshape);
    free(G.cdims);
    return 0;
}
