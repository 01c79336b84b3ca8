/* simt.c — Tile IR -> OpenCL C / CUDA C (see simt.h for the lowering, docs/backends-gpu.md).
 *
 * The generator walks the IR in two contexts:
 *   - block context (gen_block): every thread of the block executes the statement with the
 *     same control flow, so barriers are legal; tile ops and T.Parallel nests live here;
 *   - thread context (gen_thread): ordinary serial code run by one thread (a T.Parallel
 *     iteration, the thread-0 region of a block-level store, or a serial launch).
 * Expressions are emitted fully parenthesised, with the IR's integer rules (wrapping in
 * unsigned types, floor division, shift ranges) through the prelude's helpers, and the
 * sub-32-bit floats as f32 values holding exactly the rounded value.
 */
#include "simt.h"
#include "simt_gen.h"
#include "codegen.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "simt_prelude_text.h"
#include "../opt/layout.h"

const char *simt_convert_text(void) { return simt_convert_h; }
const char *simt_prelude_text(void) { return simt_prelude_h; }

void simt_options_default(simt_options *o, simt_dialect d, const tb_options *opts) {
    memset(o, 0, sizeof *o);
    o->dialect = d;
    o->fp64 = true;
    o->atom64 = true;
    o->opts = opts;
    o->checks = tb_opt_bool(opts, TB_OPT_gpu_checks);
    o->mem_opt = (int)tb_opt_int(opts, TB_OPT_simt_memopt);
    o->regfrag = tb_opt_bool(opts, TB_OPT_simt_regfrag);
}

/* ---------- state ---------- */
enum { SP_NONE = 0, SP_GLOBAL = 1, SP_SHARED = 2, SP_PRIVATE = 3 };
enum { RF_NONE = 0, RF_REG = 1 };

struct gen {
    const ir_func *f;
    const simt_options *o;
    simt_program *P;
    tile_strbuf *err;
    bool failed;
    bool cuda;
    int ind;
    int tmp;
    /* per kernel */
    int threads;
    unsigned char *space; /* per buffer id */
    size_t *soff;         /* per buffer id: shared offset */
    int *bufarg;          /* per buffer id: index in P->bufs or -1 */
    long *slot;           /* per var id: broadcast slot offset or -1 */
    bool *priv;           /* per var id: assigned per thread (inside a T.Parallel body) */
    bool guard;           /* redundant block-level code: stores by thread 0, barrier before break/continue */
    size_t smem;
    bool barrier_fresh;
    bool uses_f64;
    tile_vec sites;       /* simt_site* */
    bool sm90_helpers;    /* sm90.c's device helpers already written */
    simt_load_hook load_hook; /* sm90_attn.c: loads of register fragments, fast math (NULL: none) */
    void *load_hook_ctx;
    long red_off;         /* OpenCL: shared offset of the warp-reduction scratch (2 x threads floats), or -1 */
    long redw_off;        /* shared offset of the per-warp partials (threads / 32 floats), or -1 */
    /* register fragments (see "register fragments" below) */
    unsigned char *rf;    /* per buffer id: RF_REG when the layout pass put it in registers */
    const ir_layout *rfn; /* inside a register nest: the nest's layout (its ir_lowering) ... */
    const struct nest_info *rfn_ni; /* ... its loops ... */
    const char *rfn_slot; /* ... the C variable of the thread's slot ... */
    const char *rf_rep0;  /* ... and the C condition "replica 0" when the layout replicates (NULL: none) */
    tile_strbuf decls;    /* declarations of the kernel's register fragments (its preamble) */
    const char *lt;       /* the C expression of the thread's index in the layouts (tl_tid) */
    int rf_rmax;          /* 1 when a register reduction combines through shared memory */
    int rf_wtot;          /* floats of that scratch (tl_rfw), at most RF_SCRATCH_OWN (rf_scratch) */
    int blk_loop;         /* depth of block-level loops around the statement being generated */
    unsigned char *gacc;  /* per buffer id, this kernel: 1 = read, 2 = written (any access) */
    bool defer;           /* bounds checks keep their failure in registers (tl_ixd), reported by rf_flush */
    /* integer ranges of variables (bounds checks the ranges prove are left out) */
    bool *vr_ok;          /* per var id: the range below holds where the code is being generated */
    int64_t *vr_lo, *vr_hi;
    int *nassign;         /* per var id: ASSIGN statements in the kernel */
};

__attribute__((format(printf, 3, 4)))
static void gfail(gen *G, tile_loc loc, const char *fmt, ...) {
    if (G->failed) return; /* one message is enough */
    G->failed = true;
    tile_strbuf m = {0};
    va_list ap;
    va_start(ap, fmt);
    tile_sb_vprintf(&m, fmt, ap);
    va_end(ap);
    tile_diag dg = {TILE_DIAG_ERROR, loc, m.data ? m.data : (char *)""};
    tile_diag_format(&dg, G->err);
    tile_sb_free(&m);
}

static int add_site(gen *G, tile_loc loc, int kind, const char *what) {
    simt_site *s = tile_xcalloc(1, sizeof *s);
    s->loc = loc;
    s->kind = kind;
    s->what = what;
    tile_vec_push(&G->sites, s);
    return G->sites.len - 1;
}

static void ind(gen *G, tile_strbuf *o) {
    for (int i = 0; i < G->ind; i++) tile_sb_puts(o, "    ");
}
__attribute__((format(printf, 3, 4)))
static void line(gen *G, tile_strbuf *o, const char *fmt, ...) {
    ind(G, o);
    va_list ap;
    va_start(ap, fmt);
    tile_sb_vprintf(o, fmt, ap);
    va_end(ap);
    tile_sb_putc(o, '\n');
    G->barrier_fresh = false;
}

/* ---------- dtypes ---------- */
static bool is_float(tile_dtype d) { return tile_dtype_is_float(d); }
static bool is_narrow(tile_dtype d) { return is_float(d) && d != TILE_DT_F32 && d != TILE_DT_F64; }
static bool is_uns(tile_dtype d) { return d == TILE_DT_U8 || d == TILE_DT_U16 || d == TILE_DT_U32 || d == TILE_DT_U64; }
static int bits_of(tile_dtype d) { return tile_dtype_bits(d); }

/* C type of a value of dtype d in registers (shared with the C generator) */
static const char *vtype(tile_dtype d) { return codegen_value_ctype(d); }
/* C type of an element in memory */
static const char *stype(tile_dtype d) {
    switch (d) {
    case TILE_DT_BOOL: case TILE_DT_FP8_E4M3: case TILE_DT_FP8_E5M2: case TILE_DT_FP4_E2M1: return "uint8_t";
    case TILE_DT_F16: case TILE_DT_BF16: return "uint16_t";
    default: return vtype(d);
    }
}
/* OpenCL type name for convert_T_sat_rtz */
static const char *cltype(tile_dtype d) {
    switch (d) {
    case TILE_DT_I8: return "char";
    case TILE_DT_I16: return "short";
    case TILE_DT_I32: return "int";
    case TILE_DT_I64: return "long";
    case TILE_DT_U8: return "uchar";
    case TILE_DT_U16: return "ushort";
    case TILE_DT_U32: return "uint";
    default: return "ulong";
    }
}
static const char *fmt_of(tile_dtype d) {
    switch (d) {
    case TILE_DT_F16: return "TCV_F16";
    case TILE_DT_BF16: return "TCV_BF16";
    case TILE_DT_FP8_E4M3: return "TCV_E4M3";
    case TILE_DT_FP8_E5M2: return "TCV_E5M2";
    default: return "TCV_E2M1";
    }
}
static const char *uwide(tile_dtype d) { return bits_of(d) > 32 ? "uint64_t" : "uint32_t"; }

/* ---------- names ---------- */
static void var_name(tile_strbuf *o, const ir_var *v) {
    tile_sb_puts(o, "v");
    tile_sb_printf(o, "%d_", v->id);
    for (const char *p = v->name ? v->name : ""; *p; p++)
        tile_sb_putc(o, ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')) ? *p : '_');
}
static void buf_name(tile_strbuf *o, const ir_buffer *b) {
    tile_sb_printf(o, "b%d_", b->id);
    for (const char *p = b->name ? b->name : ""; *p; p++)
        tile_sb_putc(o, ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')) ? *p : '_');
}
static const char *sp_sfx(gen *G, const ir_buffer *b) {
    switch (G->space[b->id]) {
    case SP_SHARED: return "l";
    case SP_PRIVATE: return "p";
    default: return "g";
    }
}
static const char *sp_qual(gen *G, int sp) {
    if (sp == SP_GLOBAL) return "TL_GLOBAL ";
    if (sp == SP_SHARED) return "TL_LOCAL ";
    (void)G;
    return "";
}

/* ---------- constants ---------- */
static void f32_lit(tile_strbuf *o, float x) {
    if (isfinite(x)) tile_sb_printf(o, "%af", (double)x);
    else {
        uint32_t u;
        memcpy(&u, &x, 4);
        tile_sb_printf(o, "TL_F32_BITS(0x%08xu)", u);
    }
}
static void f64_lit(tile_strbuf *o, double x) {
    if (isfinite(x)) tile_sb_printf(o, "%a", x);
    else {
        uint64_t u;
        memcpy(&u, &x, 8);
        tile_sb_printf(o, "TL_F64_BITS(0x%016llxull)", (unsigned long long)u);
    }
}
static void int_lit(tile_strbuf *o, tile_dtype d, int64_t v) {
    v = tile_wrap_int(d == TILE_DT_BOOL ? TILE_DT_I64 : d, v);
    if (d == TILE_DT_BOOL) { tile_sb_puts(o, v ? "1" : "0"); return; }
    if (v >= -2147483647LL && v <= 2147483647LL) tile_sb_printf(o, "((%s)%lld)", vtype(d), (long long)v);
    else tile_sb_printf(o, "((%s)0x%llxull)", vtype(d), (unsigned long long)v);
}

/* ---------- expressions ---------- */
static void ex(gen *G, tile_strbuf *o, const ir_expr *e);
static void rf_slot_of(gen *G, tile_strbuf *o, const ir_buffer *b, ir_expr *const *idx, tile_loc loc);

/* The value `v` (a C expression of dtype from) converted to dtype to, by the IR's rules. */
static void conv(gen *G, tile_strbuf *o, tile_dtype from, tile_dtype to, const char *v) {
    if (from == to || (is_narrow(from) && to == TILE_DT_F32)) { tile_sb_printf(o, "(%s)", v); return; }
    if (from == TILE_DT_F64 || to == TILE_DT_F64) G->uses_f64 = true;
    if (to == TILE_DT_BOOL) { tile_sb_printf(o, "((%s) != 0)", v); return; }
    if (to == TILE_DT_F32) {
        tile_sb_printf(o, "((float)(%s))", v); /* one rounding, also from 64-bit integers */
        return;
    }
    if (to == TILE_DT_F64) { tile_sb_printf(o, "((double)(%s))", v); return; }
    if (is_narrow(to)) {
        if (from == TILE_DT_F32 || is_narrow(from)) {
            if (to == TILE_DT_F16) tile_sb_printf(o, "tl_round_f16(%s)", v);
            else if (to == TILE_DT_BF16) tile_sb_printf(o, "tl_round_bf16(%s)", v);
            else tile_sb_printf(o, "tl_round_f32(&%s, %s)", fmt_of(to), v);
        } else if (from == TILE_DT_F64) {
            tile_sb_printf(o, "tl_f64_to_small(&%s, %s)", fmt_of(to), v);
        } else if (from == TILE_DT_U64) {
            tile_sb_printf(o, "tl_u64_to_small(&%s, (uint64_t)(%s))", fmt_of(to), v);
        } else {
            tile_sb_printf(o, "tl_i64_to_small(&%s, (int64_t)(%s))", fmt_of(to), v);
        }
        return;
    }
    /* to an integer */
    if (!is_float(from)) { tile_sb_printf(o, "((%s)(%s))", vtype(to), v); return; }
    if (!G->cuda) { tile_sb_printf(o, "convert_%s_sat_rtz(%s)", cltype(to), v); return; }
    if (is_uns(to)) {
        uint64_t hi = bits_of(to) >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << bits_of(to)) - 1);
        tile_sb_printf(o, "((%s)tl_f2u((double)(%s), 0x%llxull))", vtype(to), v, (unsigned long long)hi);
    } else {
        int b = bits_of(to);
        long long hi = b >= 64 ? INT64_MAX : (long long)(((uint64_t)1 << (b - 1)) - 1);
        tile_sb_printf(o, "((%s)tl_f2s((double)(%s), (-%lldll - 1), %lldll))", vtype(to), v, hi, hi);
    }
}

static void conv_e(gen *G, tile_strbuf *o, tile_dtype to, const ir_expr *e) {
    tile_strbuf t = {0};
    ex(G, &t, e);
    conv(G, o, e->dtype, to, t.data ? t.data : "0");
    tile_sb_free(&t);
}

/* ---------- integer ranges ----------
 * [lo, hi] of an integer expression when the generator can prove it (constants, block indices
 * of a constant grid, loop variables of constant bounds, variables assigned once, and +, -, *,
 * //, % by positive constants, min, max without wrapping); a bounds check whose index the range
 * keeps inside a constant dimension is left out. */
static bool int_limits(tile_dtype d, int64_t *mn, int64_t *mx) {
    switch (d) {
    case TILE_DT_I32: *mn = INT32_MIN; *mx = INT32_MAX; return true;
    case TILE_DT_I64: *mn = INT64_MIN; *mx = INT64_MAX; return true;
    case TILE_DT_I16: *mn = INT16_MIN; *mx = INT16_MAX; return true;
    case TILE_DT_I8: *mn = INT8_MIN; *mx = INT8_MAX; return true;
    default: return false;
    }
}
static int64_t fdiv(int64_t a, int64_t c) { return a >= 0 ? a / c : -((-a + c - 1) / c); }
static bool ival(gen *G, const ir_expr *e, int64_t *lo, int64_t *hi) {
    if (!e) return false;
    int64_t mn, mx;
    if (!int_limits(e->dtype, &mn, &mx)) return false;
    switch (e->kind) {
    case IR_E_CONST: *lo = *hi = e->ival; return true;
    case IR_E_VAR:
        if (!G->vr_ok || !G->vr_ok[e->var->id]) return false;
        *lo = G->vr_lo[e->var->id];
        *hi = G->vr_hi[e->var->id];
        return *lo >= mn && *hi <= mx;
    case IR_E_CAST: {
        int64_t a, b;
        if (!ival(G, e->args[0], &a, &b) || a < mn || b > mx) return false;
        *lo = a;
        *hi = b;
        return true;
    }
    case IR_E_BINARY: {
        int64_t a0, a1, b0, b1;
        if (!ival(G, e->args[0], &a0, &a1) || !ival(G, e->args[1], &b0, &b1)) return false;
        int64_t c[4];
        bool ovf = false;
        switch (e->op) {
        case IR_B_ADD: ovf = __builtin_add_overflow(a0, b0, lo) || __builtin_add_overflow(a1, b1, hi); break;
        case IR_B_SUB: ovf = __builtin_sub_overflow(a0, b1, lo) || __builtin_sub_overflow(a1, b0, hi); break;
        case IR_B_MUL:
            ovf = __builtin_mul_overflow(a0, b0, &c[0]) || __builtin_mul_overflow(a0, b1, &c[1]) || __builtin_mul_overflow(a1, b0, &c[2]) ||
                  __builtin_mul_overflow(a1, b1, &c[3]);
            if (!ovf) {
                *lo = *hi = c[0];
                for (int i = 1; i < 4; i++) {
                    if (c[i] < *lo) *lo = c[i];
                    if (c[i] > *hi) *hi = c[i];
                }
            }
            break;
        case IR_B_FLOORDIV:
            if (b0 != b1 || b0 <= 0) return false;
            *lo = fdiv(a0, b0);
            *hi = fdiv(a1, b0);
            break;
        case IR_B_FLOORMOD:
            if (b0 != b1 || b0 <= 0) return false;
            if (a0 >= 0 && a1 < b0) { *lo = a0; *hi = a1; }
            else { *lo = 0; *hi = b0 - 1; }
            break;
        case IR_B_MIN: *lo = a0 < b0 ? a0 : b0; *hi = a1 < b1 ? a1 : b1; break;
        case IR_B_MAX: *lo = a0 > b0 ? a0 : b0; *hi = a1 > b1 ? a1 : b1; break;
        default: return false;
        }
        return !ovf && *lo >= mn && *hi <= mx;
    }
    default: return false;
    }
}
/* The range of a loop variable over [lo, lo + extent) while its body is generated; returns
 * whether one was set (the caller clears it with vr_clear). */
static bool vr_loop(gen *G, const ir_var *v, const ir_expr *lo, const ir_expr *ext) {
    int64_t l0, l1, e0, e1;
    if (!G->vr_ok || !ival(G, lo, &l0, &l1) || !ival(G, ext, &e0, &e1) || e1 < 1 || l1 > INT32_MAX - e1) return false;
    G->vr_ok[v->id] = true;
    G->vr_lo[v->id] = l0;
    G->vr_hi[v->id] = l1 + e1 - 1;
    return true;
}
static void vr_clear(gen *G, const ir_var *v) {
    if (G->vr_ok) G->vr_ok[v->id] = false;
}
static void count_assign(gen *G, const ir_stmt *s) {
    if (!s) return;
    if (s->kind == IR_S_ASSIGN && s->var) G->nassign[s->var->id]++;
    for (int i = 0; i < s->nbody; i++) count_assign(G, s->body[i]);
}
/* Is idx provably inside dimension `shape` (a constant)? */
static bool idx_safe(gen *G, const ir_expr *idx, const ir_expr *shape) {
    int64_t n, lo, hi;
    return ir_const_int_value(shape, &n) && ival(G, idx, &lo, &hi) && lo >= 0 && hi < n;
}

/* Row-major element offset of b[idx...] (bounds-checked when checks are on, except where the
 * index's range proves it inside). */
static void elem_offset(gen *G, tile_strbuf *o, const ir_buffer *b, ir_expr *const *idx, int site) {
    if (b->rank == 0) { tile_sb_puts(o, "0"); return; }
    if (G->o->checks) {
        /* the outermost call is the last dimension's */
        for (int d = b->rank - 1; d >= 0; d--) tile_sb_puts(o, idx_safe(G, idx[d], b->shape[d]) ? "tl_ixs(" : G->defer ? "tl_ixd(" : "tl_ix(");
        tile_sb_puts(o, "0");
        for (int d = 0; d < b->rank; d++) {
            tile_sb_puts(o, ", (int64_t)(");
            ex(G, o, idx[d]);
            tile_sb_puts(o, "), (int64_t)(");
            ex(G, o, b->shape[d]);
            if (idx_safe(G, idx[d], b->shape[d])) tile_sb_puts(o, "))");
            else if (G->defer) tile_sb_printf(o, "), %d, %d, &tl_es, &tl_ea, &tl_eb, &tl_ec)", d, site);
            else tile_sb_printf(o, "), %d, tl_err, %d)", d, site);
        }
        return;
    }
    for (int d = 0; d < b->rank; d++) tile_sb_puts(o, "(");
    tile_sb_puts(o, "(int64_t)0");
    for (int d = 0; d < b->rank; d++) {
        tile_sb_puts(o, " * (int64_t)(");
        ex(G, o, b->shape[d]);
        tile_sb_puts(o, ") + (int64_t)(");
        ex(G, o, idx[d]);
        tile_sb_puts(o, "))");
    }
}

/* Load of element `off` (a C expression) of b, as a value of b's dtype. */
static void load_at(gen *G, tile_strbuf *o, const ir_buffer *b, const char *off) {
    tile_strbuf n = {0};
    buf_name(&n, b);
    switch (b->dtype) {
    case TILE_DT_BOOL: tile_sb_printf(o, "(%s[%s] != 0)", n.data, off); break;
    case TILE_DT_F16: tile_sb_printf(o, "tcv_f16_bits_to_f32(%s[%s])", n.data, off); break;
    case TILE_DT_BF16: tile_sb_printf(o, "tcv_bf16_bits_to_f32(%s[%s])", n.data, off); break;
    case TILE_DT_FP8_E4M3: case TILE_DT_FP8_E5M2:
        tile_sb_printf(o, "tl_decode_f32(&%s, %s[%s])", fmt_of(b->dtype), n.data, off);
        break;
    case TILE_DT_FP4_E2M1: tile_sb_printf(o, "tl_decode_f32(&TCV_E2M1, tl_ld4_%s(%s, %s))", sp_sfx(G, b), n.data, off); break;
    default:
        if (b->dtype == TILE_DT_F64) G->uses_f64 = true;
        tile_sb_printf(o, "%s[%s]", n.data, off);
        break;
    }
    tile_sb_free(&n);
}

/* Statement: b[off] = v, where v is a C expression of dtype vd (converted to b's dtype;
 * sub-32-bit floats are rounded once from v). */
static void store_at(gen *G, tile_strbuf *o, const ir_buffer *b, const char *off, const char *v, tile_dtype vd) {
    tile_strbuf n = {0};
    buf_name(&n, b);
    tile_dtype bd = b->dtype;
    ind(G, o);
    G->barrier_fresh = false;
    if (vd == TILE_DT_F64) G->uses_f64 = true;
    if (is_narrow(bd)) {
        tile_strbuf code = {0};
        bool f32src = vd == TILE_DT_F32 || is_narrow(vd);
        if (f32src && bd == TILE_DT_F16) tile_sb_printf(&code, "tcv_f32_to_f16_bits(%s)", v);
        else if (f32src && bd == TILE_DT_BF16) tile_sb_printf(&code, "tcv_f32_to_bf16_bits(%s)", v);
        else if (f32src) tile_sb_printf(&code, "tl_encode_f32(&%s, %s)", fmt_of(bd), v);
        else if (vd == TILE_DT_F64) tile_sb_printf(&code, "tcv_encode_f64(&%s, (double)(%s))", fmt_of(bd), v);
        else if (vd == TILE_DT_U64) tile_sb_printf(&code, "tl_encode_u64(&%s, (uint64_t)(%s))", fmt_of(bd), v);
        else tile_sb_printf(&code, "tcv_encode_i64(&%s, (int64_t)(%s))", fmt_of(bd), v);
        if (bd == TILE_DT_FP4_E2M1) tile_sb_printf(o, "tl_st4_%s(%s, %s, (uint32_t)%s);\n", sp_sfx(G, b), n.data, off, code.data);
        else tile_sb_printf(o, "%s[%s] = (%s)%s;\n", n.data, off, stype(bd), code.data);
        tile_sb_free(&code);
    } else if (bd == TILE_DT_BOOL) {
        tile_sb_printf(o, "%s[%s] = (uint8_t)((%s) != 0);\n", n.data, off, v);
    } else {
        tile_strbuf c = {0};
        conv(G, &c, vd, bd, v);
        tile_sb_printf(o, "%s[%s] = %s;\n", n.data, off, c.data);
        tile_sb_free(&c);
    }
    tile_sb_free(&n);
}

static const char *math_name(gen *G, int fn, bool f64) {
    static const char *const cl[] = {[IR_I_EXP] = "exp", [IR_I_EXP2] = "exp2", [IR_I_LOG] = "log", [IR_I_LOG2] = "log2",
                                     [IR_I_SQRT] = "sqrt", [IR_I_RSQRT] = "rsqrt", [IR_I_TANH] = "tanh", [IR_I_ABS] = "fabs",
                                     [IR_I_SIN] = "sin", [IR_I_COS] = "cos", [IR_I_FLOOR] = "floor", [IR_I_CEIL] = "ceil",
                                     [IR_I_ROUND] = "rint", [IR_I_TRUNC] = "trunc", [IR_I_ERF] = "erf", [IR_I_FMA] = "fma",
                                     [IR_I_ISNAN] = "isnan", [IR_I_ISINF] = "isinf"};
    static const char *const cuf[] = {[IR_I_EXP] = "expf", [IR_I_EXP2] = "exp2f", [IR_I_LOG] = "logf", [IR_I_LOG2] = "log2f",
                                      [IR_I_SQRT] = "sqrtf", [IR_I_RSQRT] = "rsqrtf", [IR_I_TANH] = "tanhf", [IR_I_ABS] = "fabsf",
                                      [IR_I_SIN] = "sinf", [IR_I_COS] = "cosf", [IR_I_FLOOR] = "floorf", [IR_I_CEIL] = "ceilf",
                                      [IR_I_ROUND] = "rintf", [IR_I_TRUNC] = "truncf", [IR_I_ERF] = "erff", [IR_I_FMA] = "fmaf",
                                      [IR_I_ISNAN] = "isnan", [IR_I_ISINF] = "isinf"};
    if (fn < 0 || fn > IR_I_FMA) return NULL;
    if (!G->cuda || f64) return cl[fn];
    return cuf[fn];
}

static void ex_binary(gen *G, tile_strbuf *o, const ir_expr *e) {
    int op = e->op;
    const ir_expr *A = e->args[0], *B = e->args[1];
    tile_dtype ot = A->dtype, rt = e->dtype;
    tile_strbuf a = {0}, b = {0};
    ex(G, &a, A);
    ex(G, &b, B);
    const char *sa = a.data ? a.data : "0", *sb = b.data ? b.data : "0";
    static const char *const cops[IR_B_COUNT] = {[IR_B_ADD] = "+", [IR_B_SUB] = "-", [IR_B_MUL] = "*", [IR_B_DIV] = "/",
                                                 [IR_B_LT] = "<", [IR_B_LE] = "<=", [IR_B_GT] = ">", [IR_B_GE] = ">=",
                                                 [IR_B_EQ] = "==", [IR_B_NE] = "!=", [IR_B_BITAND] = "&", [IR_B_BITOR] = "|",
                                                 [IR_B_BITXOR] = "^"};
    if (op == IR_B_AND || op == IR_B_OR) {
        tile_sb_printf(o, "((%s) %s (%s))", sa, op == IR_B_AND ? "&&" : "||", sb);
    } else if (ir_binop_is_compare((ir_binop)op)) {
        tile_sb_printf(o, "((%s) %s (%s))", sa, cops[op], sb);
    } else if (is_float(ot)) {
        bool d = ot == TILE_DT_F64;
        if (d) G->uses_f64 = true;
        switch (op) {
        case IR_B_ADD: case IR_B_SUB: case IR_B_MUL: case IR_B_DIV:
            tile_sb_printf(o, "((%s) %s (%s))", sa, cops[op], sb);
            break;
        case IR_B_FLOORDIV: case IR_B_FLOORMOD: {
            const char *nm = op == IR_B_FLOORDIV ? "floordiv" : "floormod";
            if (d) tile_sb_printf(o, "tl_%s_f64(%s, %s)", nm, sa, sb);
            else if (G->o->fp64) tile_sb_printf(o, "((float)tl_%s_f64((double)(%s), (double)(%s)))", nm, sa, sb);
            else tile_sb_printf(o, "tl_%s_f32(%s, %s)", nm, sa, sb);
            break;
        }
        case IR_B_MIN: case IR_B_MAX:
            tile_sb_printf(o, "%s%s(%s, %s)", op == IR_B_MIN ? "fmin" : "fmax", G->cuda && !d ? "f" : "", sa, sb);
            break;
        case IR_B_POW:
            if (d) tile_sb_printf(o, "pow(%s, %s)", sa, sb);
            else if (G->o->fp64) tile_sb_printf(o, "((float)pow((double)(%s), (double)(%s)))", sa, sb);
            else tile_sb_printf(o, "%s(%s, %s)", G->cuda ? "powf" : "pow", sa, sb);
            break;
        default: gfail(G, e->loc, "internal: operator %d on floats", op);
        }
    } else {
        /* integers (and bool, as int 0/1) */
        const char *T = vtype(rt), *U = uwide(ot);
        bool u = is_uns(ot), w64 = bits_of(ot) > 32;
        int site = -1;
        switch (op) {
        case IR_B_ADD: case IR_B_SUB: case IR_B_MUL:
            tile_sb_printf(o, "((%s)((%s)(%s) %s (%s)(%s)))", T, U, sa, cops[op], U, sb);
            break;
        case IR_B_DIV: case IR_B_FLOORDIV: case IR_B_FLOORMOD: {
            site = add_site(G, e->loc, SIMT_SITE_DIV, NULL);
            const char *fn;
            if (u) fn = op == IR_B_FLOORMOD ? (w64 ? "tl_mod_u64" : "tl_mod_u32") : (w64 ? "tl_div_u64" : "tl_div_u32");
            else if (op == IR_B_DIV) fn = w64 ? "tl_div_i64" : "tl_div_i32";
            else if (op == IR_B_FLOORDIV) fn = w64 ? "tl_floordiv_i64" : "tl_floordiv_i32";
            else fn = w64 ? "tl_floormod_i64" : "tl_floormod_i32";
            const char *at = u ? (w64 ? "uint64_t" : "uint32_t") : (w64 ? "int64_t" : "int32_t");
            tile_sb_printf(o, "((%s)%s((%s)(%s), (%s)(%s), tl_err, %d))", T, fn, at, sa, at, sb, site);
            break;
        }
        case IR_B_MIN: case IR_B_MAX:
            tile_sb_printf(o, "((%s)tl_%c%s((%s)(%s), (%s)(%s)))", T, u ? 'u' : 'i', op == IR_B_MIN ? "min" : "max",
                           u ? "uint64_t" : "int64_t", sa, u ? "uint64_t" : "int64_t", sb);
            break;
        case IR_B_POW:
            site = add_site(G, e->loc, SIMT_SITE_DIV, NULL);
            tile_sb_printf(o, "((%s)tl_ipow((int64_t)(%s), (int64_t)(%s), %d, tl_err, %d))", T, sa, sb, u, site);
            break;
        case IR_B_SHL:
            tile_sb_printf(o, "((%s)tl_shl((int64_t)(%s), (int64_t)(%s), %d, %d))", T, sa, sb, bits_of(ot), u);
            break;
        case IR_B_SHR:
            tile_sb_printf(o, "((%s)tl_shr((int64_t)(%s), (int64_t)(%s), %d, %d))", T, sa, sb, bits_of(ot), u);
            break;
        case IR_B_BITAND: case IR_B_BITOR: case IR_B_BITXOR:
            tile_sb_printf(o, "((%s)((%s) %s (%s)))", T, sa, cops[op], sb);
            break;
        default: gfail(G, e->loc, "internal: operator %d on integers", op);
        }
    }
    tile_sb_free(&a);
    tile_sb_free(&b);
}

static void ex_call(gen *G, tile_strbuf *o, const ir_expr *e) {
    tile_dtype at = e->args[0]->dtype;
    int fn = e->op;
    tile_strbuf a[3] = {{0}, {0}, {0}};
    for (int i = 0; i < e->nargs && i < 3; i++) ex(G, &a[i], e->args[i]);
    const char *s0 = a[0].data ? a[0].data : "0";
    if (!is_float(at)) {
        if (fn == IR_I_ABS) {
            if (is_uns(at)) tile_sb_printf(o, "(%s)", s0);
            else tile_sb_printf(o, "((%s)tl_iabs((int64_t)(%s)))", vtype(at), s0);
        } else if (fn == IR_I_FLOOR || fn == IR_I_CEIL || fn == IR_I_ROUND || fn == IR_I_TRUNC) {
            tile_sb_printf(o, "(%s)", s0);
        } else gfail(G, e->loc, "internal: %s on integers", ir_intrinsic_name((ir_intrinsic)fn));
    } else {
        bool d = at == TILE_DT_F64;
        if (d) G->uses_f64 = true;
        if (fn == IR_I_SIGMOID) tile_sb_printf(o, "tl_sigmoid_%s(%s)", d ? "f64" : "f32", s0);
        else if (fn == IR_I_ISNAN || fn == IR_I_ISINF) tile_sb_printf(o, "(%s(%s) != 0)", math_name(G, fn, d), s0);
        else if (fn == IR_I_FMA)
            tile_sb_printf(o, "%s(%s, %s, %s)", math_name(G, fn, d), s0, a[1].data ? a[1].data : "0", a[2].data ? a[2].data : "0");
        else {
            const char *nm = math_name(G, fn, d);
            if (!nm) gfail(G, e->loc, "internal: bad intrinsic %d", fn);
            else tile_sb_printf(o, "%s(%s)", nm, s0);
        }
    }
    for (int i = 0; i < 3; i++) tile_sb_free(&a[i]);
}

static void ex_reinterpret(gen *G, tile_strbuf *o, const ir_expr *e) {
    tile_dtype from = e->args[0]->dtype, to = e->dtype;
    tile_strbuf a = {0}, bits = {0};
    ex(G, &a, e->args[0]);
    const char *s = a.data ? a.data : "0";
    switch (from) {
    case TILE_DT_F32: tile_sb_printf(&bits, "((uint64_t)TL_BITS_F32(%s))", s); break;
    case TILE_DT_F64: G->uses_f64 = true; tile_sb_printf(&bits, "((uint64_t)TL_BITS_F64(%s))", s); break;
    case TILE_DT_F16: tile_sb_printf(&bits, "((uint64_t)tcv_f32_to_f16_bits(%s))", s); break;
    case TILE_DT_BF16: tile_sb_printf(&bits, "((uint64_t)tcv_f32_to_bf16_bits(%s))", s); break;
    case TILE_DT_FP8_E4M3: case TILE_DT_FP8_E5M2: case TILE_DT_FP4_E2M1:
        tile_sb_printf(&bits, "((uint64_t)tl_encode_f32(&%s, %s))", fmt_of(from), s);
        break;
    default:
        if (bits_of(from) >= 64) tile_sb_printf(&bits, "((uint64_t)(%s))", s);
        else tile_sb_printf(&bits, "((uint64_t)(%s) & 0x%llxull)", s, (unsigned long long)(((uint64_t)1 << bits_of(from)) - 1));
        break;
    }
    switch (to) {
    case TILE_DT_F32: tile_sb_printf(o, "TL_F32_BITS((uint32_t)%s)", bits.data); break;
    case TILE_DT_F64: G->uses_f64 = true; tile_sb_printf(o, "TL_F64_BITS(%s)", bits.data); break;
    case TILE_DT_F16: tile_sb_printf(o, "tcv_f16_bits_to_f32((uint16_t)%s)", bits.data); break;
    case TILE_DT_BF16: tile_sb_printf(o, "tcv_bf16_bits_to_f32((uint16_t)%s)", bits.data); break;
    case TILE_DT_FP8_E4M3: case TILE_DT_FP8_E5M2: case TILE_DT_FP4_E2M1:
        tile_sb_printf(o, "tl_decode_f32(&%s, (uint32_t)%s)", fmt_of(to), bits.data);
        break;
    case TILE_DT_BOOL: tile_sb_printf(o, "(%s != 0)", bits.data); break;
    default: tile_sb_printf(o, "((%s)%s)", vtype(to), bits.data); break;
    }
    tile_sb_free(&a);
    tile_sb_free(&bits);
}

static void ex(gen *G, tile_strbuf *o, const ir_expr *e) {
    if (!e) { tile_sb_puts(o, "0"); return; }
    if (G->load_hook && G->load_hook(G->load_hook_ctx, o, e)) return;
    switch (e->kind) {
    case IR_E_CONST:
        if (e->dtype == TILE_DT_F64) { G->uses_f64 = true; f64_lit(o, e->fval); }
        else if (e->dtype == TILE_DT_F32) f32_lit(o, (float)e->fval);
        else if (is_narrow(e->dtype)) f32_lit(o, (float)tile_round_to(e->dtype, e->fval));
        else int_lit(o, e->dtype, e->ival);
        return;
    case IR_E_VAR:
        if (e->var->dtype == TILE_DT_F64) G->uses_f64 = true;
        var_name(o, e->var);
        return;
    case IR_E_LOAD: {
        if (G->space[e->buf->id] == SP_NONE) {
            gfail(G, e->loc, "buffer '%s' is used where the GPU code generator cannot place it", e->buf->name);
            tile_sb_puts(o, "0");
            return;
        }
        if (G->rf[e->buf->id]) {
            tile_strbuf slot = {0};
            rf_slot_of(G, &slot, e->buf, e->args, e->loc);
            load_at(G, o, e->buf, slot.data);
            tile_sb_free(&slot);
            return;
        }
        tile_strbuf off = {0};
        elem_offset(G, &off, e->buf, e->args, G->o->checks ? add_site(G, e->loc, SIMT_SITE_READ, e->buf->name) : 0);
        load_at(G, o, e->buf, off.data);
        tile_sb_free(&off);
        return;
    }
    case IR_E_UNARY: {
        tile_strbuf a = {0};
        ex(G, &a, e->args[0]);
        const char *s = a.data ? a.data : "0";
        if (e->op == IR_U_NOT) tile_sb_printf(o, "(!(%s))", s);
        else if (e->op == IR_U_NEG) {
            if (is_float(e->dtype)) tile_sb_printf(o, "(-(%s))", s);
            else if (e->dtype == TILE_DT_BOOL) tile_sb_printf(o, "((%s) != 0)", s);
            else tile_sb_printf(o, "((%s)((%s)0 - (%s)(%s)))", vtype(e->dtype), uwide(e->dtype), uwide(e->dtype), s);
        } else {
            if (e->dtype == TILE_DT_BOOL) tile_sb_printf(o, "(~(%s) != 0)", s);
            else tile_sb_printf(o, "((%s)~(%s))", vtype(e->dtype), s);
        }
        tile_sb_free(&a);
        return;
    }
    case IR_E_BINARY:
        if (e->dtype == TILE_DT_BOOL && !ir_binop_is_compare((ir_binop)e->op) && e->op != IR_B_AND && e->op != IR_B_OR) {
            tile_sb_puts(o, "(");
            ex_binary(G, o, e);
            tile_sb_puts(o, " != 0)");
        } else ex_binary(G, o, e);
        return;
    case IR_E_SELECT: {
        tile_sb_puts(o, "((");
        ex(G, o, e->args[0]);
        tile_sb_puts(o, ") ? (");
        ex(G, o, e->args[1]);
        tile_sb_puts(o, ") : (");
        ex(G, o, e->args[2]);
        tile_sb_puts(o, "))");
        return;
    }
    case IR_E_CAST: conv_e(G, o, e->dtype, e->args[0]); return;
    case IR_E_REINTERPRET: ex_reinterpret(G, o, e); return;
    case IR_E_CALL: ex_call(G, o, e); return;
    default: gfail(G, e->loc, "internal: bad expression kind %d", (int)e->kind); tile_sb_puts(o, "0");
    }
}

/* ---------- analysis ---------- */
static bool is_tileop(const ir_stmt *s) {
    return s->kind == IR_S_COPY || s->kind == IR_S_FILL || s->kind == IR_S_GEMM || s->kind == IR_S_REDUCE;
}
/* Does s need all threads of the block (tile ops, T.Parallel)? */
static bool has_sync(const ir_stmt *s) {
    if (!s) return false;
    if (is_tileop(s) || s->kind == IR_S_KERNEL) return true;
    if (s->kind == IR_S_FOR && s->loop_kind == IR_LOOP_PARALLEL) return true;
    for (int i = 0; i < s->nbody; i++)
        if (has_sync(s->body[i])) return true;
    return false;
}
static bool writes_mem(const ir_stmt *s) {
    if (!s) return false;
    if (s->kind == IR_S_STORE || s->kind == IR_S_ATOMIC) return true;
    for (int i = 0; i < s->nbody; i++)
        if (writes_mem(s->body[i])) return true;
    return false;
}
static void assigned_vars(const ir_stmt *s, bool *mark) {
    if (!s) return;
    if ((s->kind == IR_S_ASSIGN || s->kind == IR_S_ATOMIC) && s->var) mark[s->var->id] = true;
    for (int i = 0; i < s->nbody; i++) assigned_vars(s->body[i], mark);
}

static bool const_shape(const ir_buffer *b, int64_t *n) {
    int64_t c = 1;
    for (int d = 0; d < b->rank; d++) {
        int64_t v;
        if (!ir_const_int_value(b->shape[d], &v) || v < 0) return false;
        c *= v;
        if (c > ((int64_t)1 << 40)) return false;
    }
    *n = c;
    return true;
}

/* Calls fn(G, alloc, block) for every ALLOC under s: block says whether it is at block level,
 * i.e. every statement on the way down is an allocation or needs the whole block (has_sync)
 * and no parallel loop encloses it. place() and rf_candidates() share this context. */
static void walk_allocs(gen *G, const ir_stmt *s, bool block, void (*fn)(gen *, const ir_stmt *, bool)) {
    if (!s) return;
    if (block && s->kind != IR_S_ALLOC && !has_sync(s)) block = false;
    if (s->kind == IR_S_ALLOC) {
        fn(G, s, block);
        return;
    }
    if (s->kind == IR_S_FOR && s->loop_kind == IR_LOOP_PARALLEL) block = false;
    for (int i = 0; i < s->nbody; i++) walk_allocs(G, s->body[i], block, fn);
}

/* Decide where buffer ALLOCated by s (block: at block level, walk_allocs) lives. */
static void place_alloc(gen *G, const ir_stmt *s, bool block) {
    const ir_buffer *b = s->buf;
    if (b->scope == IR_SCOPE_GLOBAL) {
        gfail(G, s->loc, "global buffer '%s' allocated inside a kernel: the GPU targets cannot allocate device memory from a kernel", b->name);
        return;
    }
    int64_t n;
    if (!const_shape(b, &n)) {
        gfail(G, s->loc, "%s buffer '%s' needs a constant shape on the GPU targets", ir_scope_name(b->scope), b->name);
        return;
    }
    if (G->rf[b->id]) {
        G->space[b->id] = SP_PRIVATE;
    } else if (block) {
        if (G->space[b->id] != SP_SHARED) {
            G->space[b->id] = SP_SHARED;
            G->smem = (G->smem + 15) & ~(size_t)15;
            G->soff[b->id] = G->smem;
            G->smem += tile_dtype_storage_bytes(b->dtype, (size_t)n) + 4;
        }
    } else {
        G->space[b->id] = SP_PRIVATE;
    }
}

/* ---------- statements ---------- */
static void gen_thread(gen *G, tile_strbuf *o, const ir_stmt *s);
static void gen_block(gen *G, tile_strbuf *o, const ir_stmt *s);
static void gen_tileop(gen *G, tile_strbuf *o, const ir_stmt *s, const char *tid, const char *nth);

static void barrier(gen *G, tile_strbuf *o) {
    if (G->threads <= 1 || G->barrier_fresh) return;
    ind(G, o);
    tile_sb_puts(o, "TL_BARRIER();\n");
    G->barrier_fresh = true;
}

static void gen_alloc_private(gen *G, tile_strbuf *o, const ir_stmt *s) {
    const ir_buffer *b = s->buf;
    int64_t n = 0;
    if (!const_shape(b, &n)) {
        gfail(G, s->loc, "%s buffer '%s' needs a constant shape on the GPU targets", ir_scope_name(b->scope), b->name);
        return;
    }
    if (n > 65536) {
        gfail(G, s->loc, "per-thread buffer '%s' has %lld elements: too large for private memory", b->name, (long long)n);
        return;
    }
    tile_strbuf nm = {0};
    buf_name(&nm, b);
    size_t bytes = tile_dtype_storage_bytes(b->dtype, (size_t)n);
    line(G, o, "uint64_t %s_raw[%zu];", nm.data, (bytes + 7) / 8 + 1);
    line(G, o, "%s *%s = (%s *)%s_raw;", stype(b->dtype), nm.data, stype(b->dtype), nm.data);
    tile_sb_free(&nm);
    if (b->dtype == TILE_DT_F64) G->uses_f64 = true;
}

/* `while` and `if` read the same at thread and block level; `body` generates the nested
 * statements at the caller's level. */
typedef void (*gen_fn)(gen *G, tile_strbuf *o, const ir_stmt *s);

static void gen_while(gen *G, tile_strbuf *o, const ir_stmt *s, gen_fn body) {
    tile_strbuf c = {0};
    ex(G, &c, s->cond);
    line(G, o, "while (%s) {", c.data);
    tile_sb_free(&c);
    G->ind++;
    G->blk_loop += body == gen_block;
    body(G, o, s->body[0]);
    G->blk_loop -= body == gen_block;
    G->ind--;
    line(G, o, "}");
}

static bool ival(gen *G, const ir_expr *e, int64_t *lo, int64_t *hi);
/* Is condition e true whatever the values, by the ranges of its integers? */
static bool cond_true(gen *G, const ir_expr *e) {
    if (!e || e->kind != IR_E_BINARY) return false;
    if (e->op == IR_B_AND) return cond_true(G, e->args[0]) && cond_true(G, e->args[1]);
    int64_t a0, a1, b0, b1;
    if (!ir_binop_is_compare((ir_binop)e->op) || !ival(G, e->args[0], &a0, &a1) || !ival(G, e->args[1], &b0, &b1)) return false;
    switch (e->op) {
    case IR_B_LT: return a1 < b0;
    case IR_B_LE: return a1 <= b0;
    case IR_B_GT: return a0 > b1;
    case IR_B_GE: return a0 >= b1;
    default: return false;
    }
}

static void gen_if(gen *G, tile_strbuf *o, const ir_stmt *s, gen_fn body) {
    if (cond_true(G, s->cond)) {
        /* a guard the ranges prove (e.g. `row < M` of a grid that divides M): no branch */
        line(G, o, "{");
        G->ind++;
        body(G, o, s->body[0]);
        G->ind--;
        line(G, o, "}");
        return;
    }
    tile_strbuf c = {0};
    ex(G, &c, s->cond);
    line(G, o, "if (%s) {", c.data);
    tile_sb_free(&c);
    G->ind++;
    body(G, o, s->body[0]);
    G->ind--;
    if (s->nbody >= 2 && s->body[1]) {
        line(G, o, "} else {");
        G->ind++;
        body(G, o, s->body[1]);
        G->ind--;
    }
    line(G, o, "}");
}

static void gen_for_serial(gen *G, tile_strbuf *o, const ir_stmt *s, bool block) {
    int t = G->tmp++;
    tile_strbuf lo = {0}, ext = {0}, v = {0};
    ex(G, &lo, s->lo);
    ex(G, &ext, s->extent);
    var_name(&v, s->var);
    line(G, o, "for (int64_t tl_i%d = (int64_t)(%s), tl_e%d = tl_i%d + (int64_t)(%s); tl_i%d < tl_e%d; tl_i%d++) {", t, lo.data, t, t,
         ext.data, t, t, t);
    G->ind++;
    line(G, o, "%s = (int32_t)tl_i%d;", v.data, t);
    G->blk_loop += block;
    bool r = vr_loop(G, s->var, s->lo, s->extent);
    if (block) gen_block(G, o, s->body[0]);
    else gen_thread(G, o, s->body[0]);
    if (r) vr_clear(G, s->var);
    G->blk_loop -= block;
    G->ind--;
    line(G, o, "}");
    tile_sb_free(&lo);
    tile_sb_free(&ext);
    tile_sb_free(&v);
}

static void gen_atomic(gen *G, tile_strbuf *o, const ir_stmt *s) {
    const ir_buffer *b = s->buf;
    tile_dtype bd = b->dtype;
    int sp = G->space[b->id];
    const char *q = sp_qual(G, sp), *sfx = sp_sfx(G, b);
    tile_dtype ct = is_float(bd) ? (bd == TILE_DT_F64 ? TILE_DT_F64 : TILE_DT_F32) : bd;
    int t = G->tmp++;
    tile_strbuf off = {0}, x = {0}, nm = {0};
    elem_offset(G, &off, b, s->idx, G->o->checks ? add_site(G, s->loc, SIMT_SITE_WRITE, b->name) : 0);
    conv_e(G, &x, ct, s->value);
    buf_name(&nm, b);
    line(G, o, "{");
    G->ind++;
    line(G, o, "%s tl_x%d = %s;", vtype(ct), t, x.data);
    line(G, o, "int64_t tl_o%d = %s;", t, off.data);
    int bits = bits_of(bd);
    bool w64 = bits == 64;
    if (w64 && !G->cuda && !G->o->atom64 && sp != SP_PRIVATE) {
        gfail(G, s->loc, "a 64-bit atomic update needs cl_khr_int64_base_atomics, which this OpenCL device does not support");
    }
    const char *W = w64 ? "uint64_t" : "uint32_t";
    if (w64) {
        line(G, o, "%s%s *tl_w%d = (%s%s *)(%s + tl_o%d);", q, W, t, q, W, nm.data, t);
        line(G, o, "const uint32_t tl_sh%d = 0; const uint64_t tl_m%d = ~(uint64_t)0;", t, t);
    } else {
        /* the aligned 32-bit word holding the element, and the element's bit position */
        if (bits == 4) line(G, o, "int64_t tl_by%d = tl_o%d >> 1; uint32_t tl_sh%d = (uint32_t)((tl_by%d & 3) * 8 + (tl_o%d & 1) * 4);", t, t, t, t, t);
        else line(G, o, "int64_t tl_by%d = tl_o%d * %d; uint32_t tl_sh%d = (uint32_t)((tl_by%d & 3) * 8);", t, t, bits / 8, t, t);
        line(G, o, "%suint32_t *tl_w%d = (%suint32_t *)((%suint8_t *)%s + (tl_by%d & ~(int64_t)3));", q, t, q, q, nm.data, t);
        line(G, o, "const uint32_t tl_m%d = 0x%xu;", t, bits == 32 ? 0xFFFFFFFFu : ((1u << bits) - 1));
    }
    line(G, o, "%s tl_old%d = *tl_w%d;", W, t, t);
    line(G, o, "for (;;) {");
    G->ind++;
    /* the current element value */
    line(G, o, "%s tl_cb%d = (tl_old%d >> tl_sh%d) & tl_m%d;", W, t, t, t, t);
    tile_strbuf cur = {0};
    switch (bd) {
    case TILE_DT_F32: tile_sb_printf(&cur, "TL_F32_BITS((uint32_t)tl_cb%d)", t); break;
    case TILE_DT_F64: tile_sb_printf(&cur, "TL_F64_BITS(tl_cb%d)", t); break;
    case TILE_DT_F16: tile_sb_printf(&cur, "tcv_f16_bits_to_f32((uint16_t)tl_cb%d)", t); break;
    case TILE_DT_BF16: tile_sb_printf(&cur, "tcv_bf16_bits_to_f32((uint16_t)tl_cb%d)", t); break;
    case TILE_DT_FP8_E4M3: case TILE_DT_FP8_E5M2: case TILE_DT_FP4_E2M1:
        tile_sb_printf(&cur, "tl_decode_f32(&%s, (uint32_t)tl_cb%d)", fmt_of(bd), t);
        break;
    case TILE_DT_BOOL: tile_sb_printf(&cur, "(tl_cb%d != 0)", t); break;
    default: tile_sb_printf(&cur, "((%s)tl_cb%d)", vtype(bd), t); break;
    }
    line(G, o, "%s tl_c%d = %s;", vtype(ct), t, cur.data);
    tile_sb_free(&cur);
    const char *T = vtype(ct);
    if (s->atomic_op == IR_ATOMIC_STORE) line(G, o, "%s tl_n%d = tl_x%d;", T, t, t);
    else if (s->atomic_op == IR_ATOMIC_LOAD) line(G, o, "%s tl_n%d = tl_c%d;", T, t, t);
    else if (is_float(ct)) {
        const char *f = G->cuda && ct == TILE_DT_F32 ? "f" : "";
        if (s->atomic_op == IR_ATOMIC_ADD) line(G, o, "%s tl_n%d = tl_c%d + tl_x%d;", T, t, t, t);
        else line(G, o, "%s tl_n%d = %s%s(tl_c%d, tl_x%d);", T, t, s->atomic_op == IR_ATOMIC_MAX ? "fmax" : "fmin", f, t, t);
    } else {
        bool u = is_uns(ct);
        if (s->atomic_op == IR_ATOMIC_ADD) line(G, o, "%s tl_n%d = (%s)((%s)tl_c%d + (%s)tl_x%d);", T, t, T, uwide(ct), t, uwide(ct), t);
        else if (s->atomic_op == IR_ATOMIC_OR || s->atomic_op == IR_ATOMIC_AND || s->atomic_op == IR_ATOMIC_XOR)
            line(G, o, "%s tl_n%d = (%s)(tl_c%d %c tl_x%d);", T, t, T, t, s->atomic_op == IR_ATOMIC_OR ? '|' : s->atomic_op == IR_ATOMIC_AND ? '&' : '^', t);
        else line(G, o, "%s tl_n%d = (%s)tl_%c%s((%s)tl_c%d, (%s)tl_x%d);", T, t, T, u ? 'u' : 'i', s->atomic_op == IR_ATOMIC_MAX ? "max" : "min",
                  u ? "uint64_t" : "int64_t", t, u ? "uint64_t" : "int64_t", t);
    }
    /* encode the new element */
    tile_strbuf nb = {0};
    switch (bd) {
    case TILE_DT_F32: tile_sb_printf(&nb, "(%s)TL_BITS_F32(tl_n%d)", W, t); break;
    case TILE_DT_F64: tile_sb_printf(&nb, "(%s)TL_BITS_F64(tl_n%d)", W, t); break;
    case TILE_DT_F16: tile_sb_printf(&nb, "(%s)tcv_f32_to_f16_bits(tl_n%d)", W, t); break;
    case TILE_DT_BF16: tile_sb_printf(&nb, "(%s)tcv_f32_to_bf16_bits(tl_n%d)", W, t); break;
    case TILE_DT_FP8_E4M3: case TILE_DT_FP8_E5M2: case TILE_DT_FP4_E2M1:
        tile_sb_printf(&nb, "(%s)tl_encode_f32(&%s, tl_n%d)", W, fmt_of(bd), t);
        break;
    case TILE_DT_BOOL: tile_sb_printf(&nb, "(%s)(tl_n%d != 0)", W, t); break;
    default: tile_sb_printf(&nb, "(%s)(%s)tl_n%d", W, bits == 64 ? "uint64_t" : bits == 32 ? "uint32_t" : bits == 16 ? "uint16_t" : "uint8_t", t); break;
    }
    line(G, o, "%s tl_nw%d = (tl_old%d & ~(tl_m%d << tl_sh%d)) | ((%s & tl_m%d) << tl_sh%d);", W, t, t, t, t, nb.data, t, t);
    tile_sb_free(&nb);
    line(G, o, "%s tl_pv%d = tl_cas%d_%s(tl_w%d, tl_old%d, tl_nw%d);", W, t, w64 ? 64 : 32, sfx, t, t, t);
    if (s->var) {
        /* the old value, for T.atomic_add(..., return_prev=True) */
        tile_strbuf pv = {0};
        var_name(&pv, s->var);
        line(G, o, "if (tl_pv%d == tl_old%d) { %s = tl_c%d; break; }", t, t, pv.data, t);
        tile_sb_free(&pv);
    } else line(G, o, "if (tl_pv%d == tl_old%d) break;", t, t);
    line(G, o, "tl_old%d = tl_pv%d;", t, t);
    G->ind--;
    line(G, o, "}");
    G->ind--;
    line(G, o, "}");
    tile_sb_free(&off);
    tile_sb_free(&x);
    tile_sb_free(&nm);
}

/* Serial code of one thread. */
static void gen_thread(gen *G, tile_strbuf *o, const ir_stmt *s) {
    if (!s || G->failed) return;
    switch (s->kind) {
    case IR_S_SEQ:
        line(G, o, "{");
        G->ind++;
        for (int i = 0; i < s->nbody; i++) gen_thread(G, o, s->body[i]);
        G->ind--;
        line(G, o, "}");
        return;
    case IR_S_FOR: gen_for_serial(G, o, s, false); return;
    case IR_S_WHILE: gen_while(G, o, s, gen_thread); return;
    case IR_S_IF: gen_if(G, o, s, gen_thread); return;
    case IR_S_ASSIGN: {
        tile_strbuf v = {0}, x = {0};
        var_name(&v, s->var);
        conv_e(G, &x, s->var->dtype, s->value);
        line(G, o, "%s = %s;", v.data, x.data);
        int64_t lo, hi, mn, mx;
        if (G->vr_ok && G->nassign[s->var->id] == 1 && int_limits(s->var->dtype, &mn, &mx) && ival(G, s->value, &lo, &hi) && lo >= mn && hi <= mx) {
            /* assigned once: this value, or the 0 it starts with */
            G->vr_ok[s->var->id] = true;
            G->vr_lo[s->var->id] = lo < 0 ? lo : 0;
            G->vr_hi[s->var->id] = hi > 0 ? hi : 0;
        }
        tile_sb_free(&v);
        tile_sb_free(&x);
        return;
    }
    case IR_S_STORE: {
        if (G->space[s->buf->id] == SP_NONE) {
            gfail(G, s->loc, "buffer '%s' is used where the GPU code generator cannot place it", s->buf->name);
            return;
        }
        int t = G->tmp++;
        tile_strbuf x = {0}, off = {0};
        ex(G, &x, s->value);
        bool reg = G->rf[s->buf->id] != 0;
        if (reg) rf_slot_of(G, &off, s->buf, s->idx, s->loc);
        else
            elem_offset(G, &off, s->buf, s->idx, G->o->checks ? add_site(G, s->loc, SIMT_SITE_WRITE, s->buf->name) : 0);
        /* value first, then the index (the interpreter's order); in a replicated register
         * nest, stores to memory are made by replica 0 */
        if (G->guard) line(G, o, "if (tl_tid == 0) {");
        else if (!reg && G->rf_rep0) line(G, o, "if (%s) {", G->rf_rep0);
        else line(G, o, "{");
        G->ind++;
        line(G, o, "%s tl_v%d = %s;", vtype(s->value->dtype), t, x.data);
        char vn[32];
        snprintf(vn, sizeof vn, "tl_v%d", t);
        store_at(G, o, s->buf, off.data, vn, s->value->dtype);
        G->ind--;
        line(G, o, "}");
        tile_sb_free(&x);
        tile_sb_free(&off);
        return;
    }
    case IR_S_ATOMIC:
        if (G->guard || G->rf_rep0) {
            line(G, o, "if (%s)", G->guard ? "tl_tid == 0" : G->rf_rep0);
            G->ind++;
            gen_atomic(G, o, s);
            G->ind--;
            return;
        }
        gen_atomic(G, o, s);
        return;
    case IR_S_ALLOC:
        if (s->buf->scope == IR_SCOPE_GLOBAL || s->buf->role != IR_BUF_TEMP) return; /* allocated by the runtime */
        if (G->space[s->buf->id] == SP_SHARED) return;
        G->space[s->buf->id] = SP_PRIVATE;
        gen_alloc_private(G, o, s);
        return;
    case IR_S_KERNEL: gfail(G, s->loc, "a kernel inside a loop or a branch is not supported on the GPU targets"); return;
    case IR_S_COPY: case IR_S_FILL: case IR_S_GEMM: case IR_S_REDUCE: gen_tileop(G, o, s, "0", "1"); return;
    case IR_S_BREAK:
    case IR_S_CONTINUE:
        if (G->guard) line(G, o, "TL_BARRIER();");
        line(G, o, s->kind == IR_S_BREAK ? "break;" : "continue;");
        return;
    case IR_S_ASSERT: {
        tile_strbuf c = {0};
        ex(G, &c, s->cond);
        int site = add_site(G, s->loc, SIMT_SITE_ASSERT, s->msg ? s->msg : "(no message)");
        line(G, o, "if (!(%s)) tl_fail(tl_err, %d, 0, 0, 0);", c.data, site);
        tile_sb_free(&c);
        return;
    }
    default: gfail(G, s->loc, "internal: bad statement kind %d", (int)s->kind);
    }
}

static const ir_stmt *single_child(const ir_stmt *s) {
    const ir_stmt *c = (s->body && s->nbody >= 1) ? s->body[0] : NULL;
    while (c && c->kind == IR_S_SEQ && c->nbody == 1 && c->body) c = c->body[0];
    return c;
}
/* A BREAK that would leave the loop s itself (not a loop nested in it). */
static bool breaks_out(const ir_stmt *s, bool top) {
    if (!s) return false;
    if (s->kind == IR_S_BREAK) return true;
    if (!top && (s->kind == IR_S_FOR || s->kind == IR_S_WHILE)) return false;
    for (int i = 0; i < s->nbody; i++)
        if (breaks_out(s->body[i], false)) return true;
    return false;
}

static tile_dtype compute_dt(tile_dtype d);
static void region_prep(gen *G, tile_strbuf *o, const ir_region *r, int N);
static void region_pos(gen *G, tile_strbuf *o, const ir_region *r, int N, const char *k);
static void loaded_as(gen *G, tile_strbuf *o, const ir_buffer *b, const char *off, tile_dtype to);
static void gemm_pos(gen *G, tile_strbuf *o, const ir_region *r, int N, const char *row, const char *col);
/* ---------- register fragments ----------
 * Block-level fragments whose layout (ir_buffer.layout, decided by the layout pass,
 * src/opt/layout.c) is REGS live in the registers of the threads: thread t (tl_tid) holds
 * `slots` elements, slot s holding the element the layout maps (t, s) to (layout.h). The code
 * walks a thread's slots in `#pragma unroll` loops, so the arrays have constant indices and
 * are registers (ptxas -v: no local memory) — except layouts marked `local` (over the
 * register budget), walked in plain loops: the compiler keeps those arrays in local memory.
 *   - a T.Parallel nest over register fragments walks the nest layout the pass recorded
 *     (ir_lowering.layout): the loop variables take the coordinates of (t, s), each fragment
 *     access f[...] reads the slot lay_project_slot gives; stores to other memory are made by
 *     replica 0 of a replicated layout only;
 *   - T.copy between a register fragment and global or shared memory: each thread its own
 *     slots, 4 consecutive elements as one 16-byte (8 for f16/bf16) access where the layout
 *     has them in consecutive slots and the memory side is aligned (checked at run time);
 *   - T.reduce: each thread folds its slots, then the threads that split the reduced
 *     dimension combine (xor shuffles inside a warp on CUDA, shared memory across warps and
 *     on OpenCL), so every replica of the result holds the same value;
 *   - T.gemm into a register accumulator: each thread runs the k loop for its own elements,
 *     A's and B's elements of the thread's rows and columns loaded once per k. */

typedef struct nest_info {
    const ir_stmt *loops[16];
    int n;
    int64_t ext[16];
    bool cnst;     /* constant extents, lo 0 */
    int64_t total; /* product of the extents (cnst) */
} nest_info;

/* The loops gen_parallel flattens (the perfect part of the T.Parallel nest). */
static void nest_collect(const ir_stmt *s, nest_info *ni) {
    memset(ni, 0, sizeof *ni);
    ni->loops[0] = s;
    ni->n = 1;
    int want = s->par_group_depth < 1 ? 1 : s->par_group_depth > 16 ? 16 : s->par_group_depth;
    while (ni->n < want) {
        const ir_stmt *c = single_child(ni->loops[ni->n - 1]);
        if (!c || c->kind != IR_S_FOR) break;
        bool dep = false;
        for (int k = 0; k < ni->n; k++)
            if (ir_expr_uses_var(c->lo, ni->loops[k]->var) || ir_expr_uses_var(c->extent, ni->loops[k]->var)) dep = true;
        if (dep) break;
        ni->loops[ni->n++] = c;
    }
    ni->cnst = true;
    ni->total = 1;
    for (int k = 0; k < ni->n; k++) {
        int64_t lo, e;
        if (!ir_const_int_value(ni->loops[k]->lo, &lo) || lo != 0 || !ir_const_int_value(ni->loops[k]->extent, &e) || e < 1 || e > ((int64_t)1 << 24)) {
            ni->cnst = false;
            return;
        }
        ni->ext[k] = e;
        ni->total *= e;
        if (ni->total > ((int64_t)1 << 30)) ni->cnst = false;
    }
}

static int64_t buf_elems(const ir_buffer *b) {
    int64_t n = 0;
    return const_shape(b, &n) ? n : -1;
}

static bool is_var(const ir_expr *e, const ir_var *v) { return e && e->kind == IR_E_VAR && e->var == v; }

/* Does the nest touch a register fragment? */
static bool rf_touch_expr(gen *G, const ir_expr *e, int role) {
    if (!e) return false;
    if (e->kind == IR_E_LOAD && G->rf[e->buf->id]) return true;
    for (int i = 0; i < e->nargs; i++)
        if (rf_touch_expr(G, e->args[i], role)) return true;
    return false;
}
static bool rf_touch(gen *G, const ir_stmt *s, int role) {
    if (!s) return false;
    if (rf_touch_expr(G, s->lo, role) || rf_touch_expr(G, s->extent, role) || rf_touch_expr(G, s->cond, role) || rf_touch_expr(G, s->value, role)) return true;
    if ((s->kind == IR_S_STORE || s->kind == IR_S_ATOMIC) && s->buf) {
        if (G->rf[s->buf->id]) return true;
        for (int d = 0; d < s->buf->rank; d++)
            if (rf_touch_expr(G, s->idx[d], role)) return true;
    }
    for (int r = 0; r < s->nregions; r++)
        if (G->rf[s->regions[r].buf->id]) return true;
    for (int i = 0; i < s->nbody; i++)
        if (rf_touch(G, s->body[i], role)) return true;
    return false;
}
/* ... a register fragment kept in local memory (over the register budget)? */
static bool rf_local_expr(gen *G, const ir_expr *e) {
    if (!e) return false;
    if (e->kind == IR_E_LOAD && G->rf[e->buf->id] && e->buf->layout->local) return true;
    for (int i = 0; i < e->nargs; i++)
        if (rf_local_expr(G, e->args[i])) return true;
    return false;
}
static bool rf_local(gen *G, const ir_stmt *s) {
    if (!s) return false;
    if (rf_local_expr(G, s->lo) || rf_local_expr(G, s->extent) || rf_local_expr(G, s->cond) || rf_local_expr(G, s->value)) return true;
    if ((s->kind == IR_S_STORE || s->kind == IR_S_ATOMIC) && s->buf && G->rf[s->buf->id] && s->buf->layout->local) return true;
    for (int r = 0; r < s->nregions; r++)
        if (G->rf[s->regions[r].buf->id] && s->regions[r].buf->layout->local) return true;
    for (int i = 0; i < s->nbody; i++)
        if (rf_local(G, s->body[i])) return true;
    return false;
}

static void gacc_expr(gen *G, const ir_expr *e) {
    if (!e) return;
    if (e->kind == IR_E_LOAD) G->gacc[e->buf->id] |= 1;
    for (int i = 0; i < e->nargs; i++) gacc_expr(G, e->args[i]);
}
/* bits: 1 read, 2 written, 4 written by more than one statement or inside a block-level loop */
static void gacc_w(gen *G, const ir_buffer *b, bool loop) {
    G->gacc[b->id] |= (G->gacc[b->id] & 2) || loop ? 6 : 2;
}
static void gacc_stmt(gen *G, const ir_stmt *s, bool loop, bool par) {
    if (!s) return;
    if (!par && (s->kind == IR_S_WHILE || (s->kind == IR_S_FOR && s->loop_kind != IR_LOOP_PARALLEL))) loop = true;
    if (s->kind == IR_S_FOR && s->loop_kind == IR_LOOP_PARALLEL) par = true;
    gacc_expr(G, s->lo);
    gacc_expr(G, s->extent);
    gacc_expr(G, s->cond);
    gacc_expr(G, s->value);
    if ((s->kind == IR_S_STORE || s->kind == IR_S_ATOMIC) && s->buf) {
        gacc_w(G, s->buf, loop);
        if (s->kind == IR_S_ATOMIC) G->gacc[s->buf->id] |= 1;
        for (int d = 0; d < s->buf->rank; d++) gacc_expr(G, s->idx[d]);
    }
    for (int r = 0; r < s->nregions; r++) {
        const ir_region *g = &s->regions[r];
        bool w = (s->kind == IR_S_COPY && r == 1) || s->kind == IR_S_FILL || (s->kind == IR_S_REDUCE && r == 1) || (s->kind == IR_S_GEMM && r == 2);
        bool rd = !w || (s->kind == IR_S_REDUCE && !s->clear) || s->kind == IR_S_GEMM;
        if (w) gacc_w(G, g->buf, loop);
        if (rd) G->gacc[g->buf->id] |= 1;
        for (int d = 0; d < g->buf->rank; d++) {
            gacc_expr(G, g->start[d]);
            gacc_expr(G, g->extent[d]);
        }
    }
    for (int i = 0; i < s->nbody; i++) gacc_stmt(G, s->body[i], loop, par);
}

/* The register fragments of a kernel are those the layout pass gave a REGS layout to
 * (before place()). */
static void rf_analyse(gen *G, const ir_stmt *body) {
    for (int i = 0; i < G->f->nbuffers; i++) {
        G->rf[i] = RF_NONE;
        G->gacc[i] = 0;
    }
    G->rf_rmax = 0;
    gacc_stmt(G, body, false, false);
    for (int i = 0; i < G->f->nbuffers; i++) {
        const ir_buffer *b = G->f->buffers[i];
        if (b->scope == IR_SCOPE_FRAGMENT && b->layout && b->layout->kind == IR_LAYOUT_REGS) G->rf[i] = RF_REG;
    }
}

/* Does s need no barrier around it: it touches no shared memory, no global buffer that the
 * kernel both reads and writes, and makes no atomic update? (Every statement that writes
 * shared memory has its own barriers before and after.) */
static bool local_expr(gen *G, const ir_expr *e) {
    if (!e) return true;
    if (e->kind == IR_E_LOAD) {
        int sp = G->space[e->buf->id];
        if (sp == SP_SHARED || sp == SP_NONE || (sp == SP_GLOBAL && (G->gacc[e->buf->id] & 2))) return false;
    }
    for (int i = 0; i < e->nargs; i++)
        if (!local_expr(G, e->args[i])) return false;
    return true;
}
static bool stmt_local(gen *G, const ir_stmt *s) {
    if (!s) return true;
    if (s->kind == IR_S_ATOMIC || s->kind == IR_S_KERNEL) return false;
    if (s->kind == IR_S_GEMM && !G->rf[s->regions[2].buf->id]) return false;
    if (!local_expr(G, s->lo) || !local_expr(G, s->extent) || !local_expr(G, s->cond) || !local_expr(G, s->value)) return false;
    if (s->kind == IR_S_STORE) {
        int sp = G->space[s->buf->id];
        if (sp == SP_SHARED || sp == SP_NONE || (sp == SP_GLOBAL && (G->gacc[s->buf->id] & 5))) return false;
        for (int d = 0; d < s->buf->rank; d++)
            if (!local_expr(G, s->idx[d])) return false;
    }
    for (int r = 0; r < s->nregions; r++) {
        const ir_region *g = &s->regions[r];
        int sp = G->space[g->buf->id];
        bool w = (s->kind == IR_S_COPY && r == 1) || s->kind == IR_S_FILL || s->kind == IR_S_REDUCE;
        if (sp == SP_SHARED || sp == SP_NONE || (sp == SP_GLOBAL && (G->gacc[g->buf->id] & (w ? 5 : 2)))) return false;
        for (int d = 0; d < g->buf->rank; d++)
            if (!local_expr(G, g->start[d]) || !local_expr(G, g->extent[d])) return false;
    }
    for (int i = 0; i < s->nbody; i++)
        if (!stmt_local(G, s->body[i])) return false;
    return true;
}

/* ---------- register fragments: code ---------- */
/* Report a bounds-check failure kept by tl_ixd. */
static void rf_flush(gen *G, tile_strbuf *o) {
    if (G->o->checks) line(G, o, "if (tl_es) { tl_fail(tl_err, tl_es - 1, tl_ea, tl_eb, tl_ec); tl_es = 0; }");
}

static void rf_decl(gen *G, tile_strbuf *o, const ir_buffer *b) {
    const ir_layout *L = b->layout;
    tile_strbuf nm = {0};
    buf_name(&nm, b);
    line(G, o, "%s %s[%d]; /* register fragment (%lld elements, %d a thread%s) */", stype(b->dtype), nm.data, L->slots, (long long)buf_elems(b),
         L->slots, L->local ? ", local memory" : "");
    tile_sb_free(&nm);
    if (b->dtype == TILE_DT_F64) G->uses_f64 = true;
}

/* C expression of the part of dimension dim's coordinate that slot `s` (a C expression)
 * contributes: the slot digits of dim */
static void slot_coord_c(const ir_layout *L, int dim, const char *s, tile_strbuf *o) {
    int64_t below = 1;
    bool any = false;
    tile_sb_puts(o, "(");
    for (int i = 0; i < L->ndig; i++) {
        const ir_layout_digit *d = &L->dig[i];
        if (d->thread) continue;
        if (d->dim == dim) {
            if (any) tile_sb_puts(o, " + ");
            tile_sb_printf(o, "((%s) / %lld %% %d) * %lld", s, (long long)below, d->size, (long long)d->stride);
            any = true;
        }
        below *= d->size;
    }
    if (!any) tile_sb_puts(o, "0");
    tile_sb_puts(o, ")");
}
static bool has_thread_digit(const ir_layout *L, int dim) {
    for (int i = 0; i < L->ndig; i++)
        if (L->dig[i].thread && L->dig[i].dim == dim) return true;
    return false;
}
static bool has_rep(const ir_layout *L) {
    for (int i = 0; i < L->ndig; i++)
        if (L->dig[i].thread && L->dig[i].dim < 0) return true;
    return false;
}
/* Declares tl_tc<t>_<d> (the thread's part of each coordinate) for the dimensions with thread digits. */
static void rf_thread_coords(gen *G, tile_strbuf *o, const ir_layout *L, int t) {
    for (int d = 0; d < L->rank; d++) {
        if (!has_thread_digit(L, d)) continue;
        tile_strbuf c = {0};
        lay_thread_coord_c(L, d, G->lt, &c);
        line(G, o, "const int tl_tc%d_%d = (int)%s;", t, d, c.data);
        tile_sb_free(&c);
    }
}
/* Declares tl_c<t>_<d> = the coordinate of slot `s` of dimension d; returns in `holes` the
 * condition that it is inside the extents (NULL when no dimension has holes). */
static void rf_coords(gen *G, tile_strbuf *o, const ir_layout *L, const int64_t *ext, int t, const char *s, tile_strbuf *holes) {
    for (int d = 0; d < L->rank; d++) {
        tile_strbuf c = {0};
        slot_coord_c(L, d, s, &c);
        if (has_thread_digit(L, d)) line(G, o, "const int tl_c%d_%d = tl_tc%d_%d + (int)%s;", t, d, t, d, c.data);
        else line(G, o, "const int tl_c%d_%d = (int)%s;", t, d, c.data);
        tile_sb_free(&c);
        if (lay_has_holes(L, d, ext[d])) tile_sb_printf(holes, "%stl_c%d_%d < %lld", holes->len ? " && " : "", t, d, (long long)ext[d]);
    }
}

/* The slot of register fragment b accessed as b[idx] inside the register nest being
 * generated (C expression, appended to o). */
static void rf_slot_of(gen *G, tile_strbuf *o, const ir_buffer *b, ir_expr *const *idx, tile_loc loc) {
    if (!G->rfn) {
        gfail(G, loc, "internal: register fragment '%s' used outside a T.Parallel nest the layout pass placed", b->name);
        tile_sb_puts(o, "0");
        return;
    }
    int map[8];
    for (int k = 0; k < b->rank && k < 8; k++) {
        map[k] = -2;
        int64_t c;
        for (int q = 0; q < G->rfn_ni->n; q++)
            if (is_var(idx[k], G->rfn_ni->loops[q]->var)) map[k] = q;
        if (map[k] == -2 && ir_const_int_value(idx[k], &c) && c == 0) map[k] = -1;
    }
    bool ok = b->rank <= 8;
    for (int k = 0; k < b->rank && ok; k++) ok = map[k] != -2;
    if (ok) {
        ir_layout want = lay_project(G->rfn, map, b->rank);
        ok = lay_equal(&want, b->layout);
    }
    if (!ok) {
        gfail(G, loc, "internal: the access of register fragment '%s' does not match its nest's layout", b->name);
        tile_sb_puts(o, "0");
        return;
    }
    lay_project_slot_c(G->rfn, map, b->rank, G->rfn_slot, o);
}

/* A T.Parallel nest over register fragments: each thread walks the slots of the nest layout
 * (unrolled); no barrier unless it touches shared memory or global data the kernel both reads
 * and writes. */
static void gen_parallel_rf(gen *G, tile_strbuf *o, const ir_stmt *s, const nest_info *ni) {
    const ir_layout *L = s->lower ? s->lower->layout : NULL;
    if (!L || L->rank != ni->n || !ni->cnst) {
        gfail(G, s->loc, "internal: a T.Parallel nest over register fragments without a layout from the layout pass");
        return;
    }
    const ir_stmt *body = ni->loops[ni->n - 1]->body[0];
    for (int k = 0; k < ni->n; k++)
        if (breaks_out(ni->loops[k]->body[0], true)) {
            gfail(G, s->loc, "'break' out of a T.Parallel loop is not supported on the GPU targets");
            return;
        }
    bool local = stmt_local(G, s);
    bool unroll = !rf_local(G, s);
    if (!local) barrier(G, o);
    int t = G->tmp++;
    char slot[32], rep[32];
    snprintf(slot, sizeof slot, "tl_s%d", t);
    snprintf(rep, sizeof rep, "tl_rp%d", t);
    line(G, o, "{ /* T.Parallel over the thread's slots: %s */", L->origin ? L->origin : "layout");
    G->ind++;
    rf_thread_coords(G, o, L, t);
    bool rp = has_rep(L);
    if (rp) {
        tile_strbuf c = {0};
        lay_rep0_c(L, G->lt, &c);
        line(G, o, "const int %s = %s; (void)%s;", rep, c.data, rep);
        tile_sb_free(&c);
    }
    /* OpenCL: by 4 — PoCL 3.1 gave wrong exp() results in fully unrolled nests of 16 slots
     * (softmax's exp(x - max), right with its optimiser off or unrolled by 4) */
    line(G, o, unroll ? (G->cuda ? "#pragma unroll" : "#pragma unroll 4") : "#pragma unroll 1");
    line(G, o, "for (int %s = 0; %s < %d; %s++) {", slot, slot, L->slots, slot);
    G->ind++;
    tile_strbuf holes = {0};
    rf_coords(G, o, L, ni->ext, t, slot, &holes);
    if (holes.len) line(G, o, "if (%s) {", holes.data);
    else line(G, o, "{");
    G->ind++;
    for (int k = 0; k < ni->n; k++) {
        tile_strbuf v = {0};
        var_name(&v, ni->loops[k]->var);
        line(G, o, "%s = (int32_t)tl_c%d_%d;", v.data, t, k);
        tile_sb_free(&v);
    }
    const ir_layout *was_n = G->rfn;
    const nest_info *was_ni = G->rfn_ni;
    const char *was_s = G->rfn_slot, *was_r = G->rf_rep0;
    G->rfn = L;
    G->rfn_ni = ni;
    G->rfn_slot = slot;
    G->rf_rep0 = rp ? rep : NULL;
    bool was = G->defer;
    G->defer = true;
    for (int k = 0; k < ni->n; k++) vr_loop(G, ni->loops[k]->var, ni->loops[k]->lo, ni->loops[k]->extent);
    gen_thread(G, o, body);
    for (int k = 0; k < ni->n; k++) vr_clear(G, ni->loops[k]->var);
    G->defer = was;
    G->rfn = was_n;
    G->rfn_ni = was_ni;
    G->rfn_slot = was_s;
    G->rf_rep0 = was_r;
    G->ind--;
    line(G, o, "}");
    tile_sb_free(&holes);
    G->ind--;
    line(G, o, "}");
    rf_flush(G, o);
    G->ind--;
    line(G, o, "}");
    if (!local) barrier(G, o);
}

/* Value of element `off` of global buffer b, or 0 when !in (as dtype `to`). */
static void rf_gload(gen *G, tile_strbuf *o, const ir_buffer *b, const char *in, const char *off, tile_dtype to) {
    tile_strbuf l = {0}, c = {0};
    load_at(G, &l, b, off);
    conv(G, &c, b->dtype, to, l.data);
    tile_sb_printf(o, "(%s ? %s : (%s)0)", in, c.data, vtype(to));
    tile_sb_free(&l);
    tile_sb_free(&c);
}

/* Row-major linear index (C expression) of coordinates tl_c<t>_<d> in a fragment of extents ext */
static void rf_linear(tile_strbuf *o, int rank, const int64_t *ext, int t, const char *plus) {
    tile_sb_puts(o, "((int64_t)0");
    for (int d = 0; d < rank; d++) tile_sb_printf(o, " * %lld + tl_c%d_%d", (long long)ext[d], t, d);
    tile_sb_printf(o, "%s)", plus ? plus : "");
}

static bool frag_extents(const ir_buffer *b, int64_t *ext) {
    for (int d = 0; d < b->rank; d++)
        if (!ir_const_int_value(b->shape[d], &ext[d])) return false;
    return true;
}

/* The largest c the generator proves divides every value of integer expression e (0: e is
 * always 0; 1: nothing known): constants, and +, -, * of such, casts that do not wrap. */
static int64_t known_factor(gen *G, const ir_expr *e) {
    int64_t lo, hi;
    if (!e) return 1;
    switch (e->kind) {
    case IR_E_CONST: return e->ival < 0 ? (e->ival == INT64_MIN ? 1 : -e->ival) : e->ival;
    case IR_E_CAST: return ival(G, e, &lo, &hi) ? known_factor(G, e->args[0]) : 1;
    case IR_E_BINARY: {
        if (!ival(G, e, &lo, &hi)) return 1; /* it may wrap */
        int64_t a = known_factor(G, e->args[0]), b = known_factor(G, e->args[1]);
        if (e->op == IR_B_ADD || e->op == IR_B_SUB) {
            while (b) { int64_t t = a % b; a = b; b = t; }
            return a;
        }
        if (e->op == IR_B_MUL) {
            int64_t m;
            return __builtin_mul_overflow(a, b, &m) ? 1 : m;
        }
        return 1;
    }
    default: return 1;
    }
}

/* Whether every element of region r lies inside its buffer: constant extents and shape, and
 * the ranges of the start expressions keep the box inside (the grid and loop bounds prove it
 * for a tile program whose tiles divide the tensor). */
static bool region_inside(gen *G, const ir_region *r) {
    for (int d = 0; d < r->buf->rank; d++) {
        int64_t e, n, lo, hi;
        if (!ir_const_int_value(r->extent[d], &e) || !ir_const_int_value(r->buf->shape[d], &n) || !ival(G, r->start[d], &lo, &hi)) return false;
        if (lo < 0 || e < 0 || hi > n - e) return false;
    }
    return true;
}

/* Whether the vector accesses of VW elements a fragment copy makes along the last dimension of
 * region r are aligned for every value of its start: the start, the extent and the row length
 * multiples of VW (what the copy's run-time `tl_vec` test checks). */
static bool region_aligned(gen *G, const ir_region *r, int VW) {
    int R = r->buf->rank;
    int64_t e, n, f = known_factor(G, r->start[R - 1]);
    return ir_const_int_value(r->extent[R - 1], &e) && ir_const_int_value(r->buf->shape[R - 1], &n) && e % VW == 0 && n % VW == 0 &&
           (f == 0 || f % VW == 0);
}

/* Region dimension d of r <-> fragment dimension map[d] (-1: extent 1, the start itself) when
 * the box's extents other than 1 are the fragment's, in order: then a slot's position is the
 * region start plus the slot's fragment coordinate, with no division of a linear index. */
static bool region_direct(const ir_region *r, const ir_buffer *fb, const int64_t *ext, int *map) {
    int k = 0, R = r->buf->rank, F = fb->rank;
    for (int d = 0; d < R; d++) {
        int64_t e;
        if (!ir_const_int_value(r->extent[d], &e)) return false;
        if (e == 1) {
            map[d] = -1;
            continue;
        }
        while (k < F && ext[k] == 1) k++;
        if (k >= F || ext[k] != e) return false;
        map[d] = k++;
    }
    while (k < F && ext[k] == 1) k++;
    return k == F;
}

/* Positions tl_p<N>_d, tl_in<N> and offset tl_o<N> of the element of region r that the slot with
 * fragment coordinates tl_c<t>_* (plus `vplus` in the last fragment dimension) moves: through
 * the direct map when there is one (map non-NULL), else as region_pos does from the linear
 * index k; with `inside` (region_inside), tl_in is 1 and the offset unguarded. */
static void region_pos_rf(gen *G, tile_strbuf *o, const ir_region *r, int N, const char *k, const int *map, int t, int F,
                          const char *vplus, bool inside) {
    if (!map) {
        region_pos(G, o, r, N, k);
        return;
    }
    int R = r->buf->rank;
    tile_strbuf in = {0}, off = {0};
    tile_sb_puts(&in, "1");
    tile_sb_puts(&off, "(int64_t)0");
    for (int d = 0; d < R; d++) {
        if (map[d] < 0) line(G, o, "const int64_t tl_p%d_%d = tl_s%d_%d;", N, d, N, d);
        else
            line(G, o, "const int64_t tl_p%d_%d = tl_s%d_%d + (int64_t)(tl_c%d_%d%s%s);", N, d, N, d, t, map[d],
                 vplus && map[d] == F - 1 ? " + " : "", vplus && map[d] == F - 1 ? vplus : "");
        tile_sb_printf(&in, " && (uint64_t)tl_p%d_%d < (uint64_t)tl_d%d_%d", N, d, N, d);
        tile_strbuf q = {0};
        tile_sb_printf(&q, "(%s) * tl_d%d_%d + tl_p%d_%d", off.data, N, d, N, d);
        tile_sb_free(&off);
        off = q;
    }
    if (inside) {
        line(G, o, "const int tl_in%d = 1;", N);
        line(G, o, "const int64_t tl_o%d = %s;", N, off.data);
    } else {
        line(G, o, "const int tl_in%d = %s;", N, in.data);
        line(G, o, "const int64_t tl_o%d = tl_in%d ? %s : 0;", N, N, off.data);
    }
    tile_sb_free(&in);
    tile_sb_free(&off);
}

/* T.copy between a register fragment and a region of another buffer (global, shared, or
 * a register fragment of the same layout): each thread moves its own slots; groups of 4
 * consecutive elements as one 16-byte (8 for f16/bf16) access when the layout has them in
 * consecutive slots and the memory side allows it (checked at run time, as gen_copy_vec
 * does), else element by element with the clipping; where the ranges prove the box inside
 * the buffer and aligned, only the vector accesses, unchecked. Copies out of a replicated
 * layout are made by replica 0. */
static void gen_copy_rf(gen *G, tile_strbuf *o, const ir_stmt *s) {
    const ir_region *src = &s->regions[0], *dst = &s->regions[1];
    if (G->rf[src->buf->id] && G->rf[dst->buf->id]) {
        /* register to register, one layout: slot by slot */
        const ir_buffer *a = src->buf, *b = dst->buf;
        if (!lay_equal(a->layout, b->layout)) {
            gfail(G, s->loc, "internal: a copy between register fragments of different layouts");
            return;
        }
        tile_strbuf an = {0}, v = {0};
        buf_name(&an, a);
        load_at(G, &v, a, "tl_s");
        line(G, o, "%s", (a->layout->local || b->layout->local) ? "#pragma unroll 1" : "#pragma unroll");
        line(G, o, "for (int tl_s = 0; tl_s < %d; tl_s++) {", a->layout->slots);
        G->ind++;
        store_at(G, o, b, "tl_s", v.data, a->dtype == TILE_DT_F64 ? TILE_DT_F64 : is_float(a->dtype) ? TILE_DT_F32 : a->dtype);
        G->ind--;
        line(G, o, "}");
        tile_sb_free(&an);
        tile_sb_free(&v);
        return;
    }
    bool in = G->rf[dst->buf->id] != 0; /* memory -> registers */
    const ir_region *fr = in ? dst : src, *gl = in ? src : dst;
    const ir_layout *L = fr->buf->layout;
    int gN = in ? 0 : 1; /* region number of the memory side (tl_*0_ = src, tl_*1_ = dst) */
    int64_t ext[8];
    if (!frag_extents(fr->buf, ext)) {
        gfail(G, s->loc, "internal: register fragment of non-constant shape");
        return;
    }
    tile_dtype fd = fr->buf->dtype, gd = gl->buf->dtype;
    int R = gl->buf->rank;
    bool g16 = gd == TILE_DT_F16 || gd == TILE_DT_BF16;
    int gsp = G->space[gl->buf->id];
    /* elements a vector access moves (lay_copy_vector: the same decision --explain reports) */
    const int VW = G->o->mem_opt && R >= 1 && (gsp == SP_GLOBAL || gsp == SP_SHARED) ? lay_copy_vector(L, fd, gd, ext[fr->buf->rank - 1]) : 0;
    const bool vec = VW > 0;
    /* the same dtype of 8 or 16 bits: the bits move as they are, packed in 32-bit words */
    const bool raw = vec && fd == gd && bits_of(fd) < 32;
    /* What the ranges prove about the memory side: the whole box inside the buffer (no bounds
     * tests) and, for vector accesses, aligned: then only the vector accesses are generated,
     * without the element-by-element path, which is most of a fragment copy's code (unrolled
     * over every slot) and of NVRTC's time, and never runs in such a program. */
    const bool inside = region_inside(G, gl);
    const bool fast = vec && inside && region_aligned(G, gl, VW);
    int map[8];
    const bool direct = R <= 8 && region_direct(gl, fr->buf, ext, map);
    bool unroll = !L->local;
    int t = G->tmp++;
    line(G, o, "{");
    G->ind++;
    region_prep(G, o, gl, gN);
    line(G, o, "const int64_t tl_c%d = %lld;", 1 - gN, (long long)buf_elems(fr->buf));
    if (vec && !fast)
        line(G, o, "const int tl_vec = (tl_e%d_%d & %d) == 0 && (tl_s%d_%d & %d) == 0 && (tl_d%d_%d & %d) == 0;", gN, R - 1, VW - 1, gN,
             R - 1, VW - 1, gN, R - 1, VW - 1);
    int site = add_site(G, s->loc, SIMT_SITE_SHAPE, "copy: the source has %lld elements but the destination has %lld");
    line(G, o, "if (tl_c0 != tl_c1) tl_fail(tl_err, %d, tl_c0, tl_c1, 0);", site);
    line(G, o, "else {");
    G->ind++;
    rf_thread_coords(G, o, L, t);
    bool guard_out = !in && has_rep(L);
    if (guard_out) {
        tile_strbuf c = {0};
        lay_rep0_c(L, G->lt, &c);
        line(G, o, "if (%s) {", c.data);
        G->ind++;
        tile_sb_free(&c);
    }
    tile_strbuf fn = {0}, gn = {0};
    buf_name(&fn, fr->buf);
    buf_name(&gn, gl->buf);
    line(G, o, unroll ? "#pragma unroll" : "#pragma unroll 1");
    line(G, o, "for (int tl_s = 0; tl_s < %d; tl_s += %d) {", L->slots, vec ? VW : 1);
    G->ind++;
    tile_strbuf holes = {0};
    rf_coords(G, o, L, ext, t, "tl_s", &holes);
    if (holes.len) line(G, o, "if (%s) {", holes.data);
    else line(G, o, "{");
    G->ind++;
    if (!direct) {
        tile_strbuf lin = {0};
        rf_linear(&lin, fr->buf->rank, ext, t, NULL);
        line(G, o, "const int64_t tl_eg = %s;", lin.data);
        tile_sb_free(&lin);
    }
    const int F = fr->buf->rank;
    if (vec) {
        region_pos_rf(G, o, gl, gN, "tl_eg", direct ? map : NULL, t, F, NULL, inside);
        if (fast) line(G, o, "{");
        else line(G, o, "if (tl_vec && tl_in%d && tl_p%d_%d + %d < tl_d%d_%d) {", gN, gN, R - 1, VW - 1, gN, R - 1);
        G->ind++;
        const char *q = sp_qual(G, gsp);
        const char *cx[4] = {"x", "y", "z", "w"};
        if (raw) {
            /* VW elements of `bits` bits in VW * bits / 32 words (uint, uint2, uint4) */
            int bits = bits_of(fd), per = 32 / bits, words = VW / per;
            const char *ut = words == 4 ? "uint4" : words == 2 ? "uint2" : "uint32_t";
            if (in) {
                line(G, o, "const %s tl_u = *(const %s%s *)(%s + tl_o0);", ut, q, ut, gn.data);
                for (int w = 0; w < words; w++)
                    for (int e = 0; e < per; e++)
                        line(G, o, "%s[tl_s + %d] = (%s)(uint%d_t)(%s%s >> %d);", fn.data, w * per + e, stype(fd), bits,
                             words == 1 ? "tl_u" : "tl_u.", words == 1 ? "" : cx[w], e * bits);
            } else {
                line(G, o, "%s tl_u;", ut);
                for (int w = 0; w < words; w++) {
                    tile_strbuf pk = {0};
                    for (int e = 0; e < per; e++)
                        tile_sb_printf(&pk, "%s((uint32_t)(uint%d_t)%s[tl_s + %d] << %d)", e ? " | " : "", bits, fn.data, w * per + e, e * bits);
                    line(G, o, "%s%s = %s;", words == 1 ? "tl_u" : "tl_u.", words == 1 ? "" : cx[w], pk.data);
                    tile_sb_free(&pk);
                }
                line(G, o, "*(%s%s *)(%s + tl_o1) = tl_u;", q, ut, gn.data);
            }
        } else if (in) {
            if (!g16) {
                line(G, o, "const uint4 tl_u = *(const %suint4 *)(%s + tl_o0);", q, gn.data);
                for (int v = 0; v < 4; v++) {
                    if (fd == TILE_DT_F32) line(G, o, "%s[tl_s + %d] = TL_F32_BITS(tl_u.%s);", fn.data, v, cx[v]);
                    else line(G, o, "%s[tl_s + %d] = (%s)tl_u.%s;", fn.data, v, stype(fd), cx[v]);
                }
            } else {
                const char *cv = gd == TILE_DT_F16 ? "tcv_f16_bits_to_f32" : "tcv_bf16_bits_to_f32";
                line(G, o, "const %s tl_u = *(const %s%s *)(%s + tl_o0);", VW == 8 ? "uint4" : "uint2", q, VW == 8 ? "uint4" : "uint2",
                     gn.data);
                for (int w = 0; w < VW / 2; w++) {
                    line(G, o, "%s[tl_s + %d] = %s((uint16_t)(tl_u.%s & 0xffffu));", fn.data, 2 * w, cv, cx[w]);
                    line(G, o, "%s[tl_s + %d] = %s((uint16_t)(tl_u.%s >> 16));", fn.data, 2 * w + 1, cv, cx[w]);
                }
            }
        } else {
            if (!g16) {
                line(G, o, "uint4 tl_u;");
                for (int v = 0; v < 4; v++) {
                    if (fd == TILE_DT_F32) line(G, o, "tl_u.%s = TL_BITS_F32(%s[tl_s + %d]);", cx[v], fn.data, v);
                    else line(G, o, "tl_u.%s = (uint32_t)%s[tl_s + %d];", cx[v], fn.data, v);
                }
                line(G, o, "*(%suint4 *)(%s + tl_o1) = tl_u;", q, gn.data);
            } else {
                const char *cv = gd == TILE_DT_F16 ? "tcv_f32_to_f16_bits" : "tcv_f32_to_bf16_bits";
                const char *ut = VW == 8 ? "uint4" : "uint2";
                line(G, o, "%s tl_u;", ut);
                for (int w = 0; w < VW / 2; w++)
                    line(G, o, "tl_u.%s = (uint32_t)%s(%s[tl_s + %d]) | ((uint32_t)%s(%s[tl_s + %d]) << 16);", cx[w], cv, fn.data, 2 * w, cv,
                         fn.data, 2 * w + 1);
                line(G, o, "*(%s%s *)(%s + tl_o1) = tl_u;", q, ut, gn.data);
            }
        }
        G->ind--;
        line(G, o, fast ? "}" : "} else {");
        G->ind++;
    }
    if (!fast) { /* element by element, clipped */
        line(G, o, "#pragma unroll");
        line(G, o, "for (int tl_v = 0; tl_v < %d; tl_v++) {", vec ? VW : 1);
        G->ind++;
        region_pos_rf(G, o, gl, gN, "tl_eg + tl_v", direct ? map : NULL, t, F, "tl_v", inside);
        tile_dtype via = compute_dt(gd) == TILE_DT_F64 ? TILE_DT_F64 : is_float(gd) ? TILE_DT_F32 : gd;
        if (in) {
            tile_strbuf v = {0};
            char inn[16];
            snprintf(inn, sizeof inn, "tl_in%d", gN);
            rf_gload(G, &v, gl->buf, inn, "tl_o0", via);
            store_at(G, o, fr->buf, "tl_s + tl_v", v.data, via);
            tile_sb_free(&v);
        } else {
            line(G, o, "if (tl_in1) {");
            G->ind++;
            tile_strbuf v = {0};
            load_at(G, &v, fr->buf, "tl_s + tl_v");
            line(G, o, "const %s tl_x = %s;", vtype(fd), v.data);
            store_at(G, o, gl->buf, "tl_o1", "tl_x", fd);
            tile_sb_free(&v);
            G->ind--;
            line(G, o, "}");
        }
        G->ind--;
        line(G, o, "}");
    }
    if (vec) {
        G->ind--;
        if (!fast) line(G, o, "}");
    }
    G->ind--;
    line(G, o, "}");
    tile_sb_free(&holes);
    G->ind--;
    line(G, o, "}");
    if (guard_out) {
        G->ind--;
        line(G, o, "}");
    }
    G->ind--;
    line(G, o, "}");
    G->ind--;
    line(G, o, "}");
    tile_sb_free(&fn);
    tile_sb_free(&gn);
}

static void gen_fill_rf(gen *G, tile_strbuf *o, const ir_stmt *s) {
    const ir_buffer *b = s->regions[0].buf;
    int S = b->layout->slots;
    tile_strbuf v = {0};
    ex(G, &v, s->value);
    line(G, o, "{");
    G->ind++;
    line(G, o, "const %s tl_fv = %s;", vtype(s->value->dtype), v.data);
    line(G, o, b->layout->local ? "#pragma unroll 1" : "#pragma unroll");
    line(G, o, "for (int tl_s = 0; tl_s < %d; tl_s++) {", S);
    G->ind++;
    store_at(G, o, b, "tl_s", "tl_fv", s->value->dtype);
    G->ind--;
    line(G, o, "}");
    G->ind--;
    line(G, o, "}");
    tile_sb_free(&v);
}

/* The index of thread variable t among the threads of layout L with the digits in lane_mask
 * (lane bits of the thread index) dropped, as a C expression appended to o; returns how many
 * such indices there are. */
static int rf_compact_index_c(const ir_layout *L, unsigned lane_mask, const char *t, tile_strbuf *o) {
    if (!lane_mask) { /* no digit dropped: the thread index itself */
        tile_sb_printf(o, "(%s)", t);
        return L->threads;
    }
    int64_t bl = 1, cw = 1;
    int n = 0;
    for (int i = 0; i < L->ndig; i++) {
        const ir_layout_digit *d = &L->dig[i];
        if (!d->thread) continue;
        bool lane = bl < 32 && (lane_mask & (unsigned)bl);
        if (!lane) {
            tile_sb_printf(o, "%s((%s) / %lld %% %d) * %lld", n ? " + " : "", t, (long long)bl, d->size, (long long)cw);
            cw *= d->size;
            n++;
        }
        bl *= d->size;
    }
    if (!n) tile_sb_puts(o, "0");
    return (int)cw;
}

/* Floats of the register reductions' shared scratch (tl_rfw) for one reduction: its own area
 * while the kernel's areas stay within RF_SCRATCH_OWN floats (no barrier between two
 * reductions), else the start of the scratch again after a barrier (the previous reductions'
 * reads are done), so the scratch never grows past RF_SCRATCH_OWN floats (16 KiB). Returns
 * the offset in floats. */
#define RF_SCRATCH_OWN 4096
static int rf_scratch(gen *G, tile_strbuf *o, int n) {
    G->rf_rmax = 1;
    if (G->rf_wtot + n <= RF_SCRATCH_OWN || G->rf_wtot == 0) {
        int base = G->rf_wtot;
        G->rf_wtot += n;
        return base;
    }
    if (n > G->rf_wtot) G->rf_wtot = n;
    G->barrier_fresh = false;
    barrier(G, o);
    return 0;
}

/* T.reduce_* over dimension `dim` of a register fragment into one whose layout is its
 * projection (layout pass): each thread folds its slots into the destination slot each maps
 * to, then the threads that split the reduced dimension combine — lanes of a warp by xor
 * shuffles (CUDA), then through shared memory: every thread writes its partials, and folds
 * those of the threads that differ from it only in the reduced dimension's digits (lane
 * digits at 0), all in the same order, so every replica ends with the same value. */
static void gen_reduce_rf(gen *G, tile_strbuf *o, const ir_stmt *s) {
    const ir_buffer *src = s->regions[0].buf, *dst = s->regions[1].buf;
    const ir_layout *Ls = src->layout, *Ld = dst->layout;
    int op = s->reduce_op;
    int r = src->rank, dr = dst->rank, map[8];
    for (int k = 0, j = 0; k < r; k++) {
        if (k == s->dim) {
            if (dr == r) map[j++] = -1;
            continue;
        }
        map[j++] = k;
    }
    ir_layout want = lay_project(Ls, map, dr);
    if (!lay_equal(&want, Ld)) {
        gfail(G, s->loc, "internal: a register reduction whose destination layout is not its source's projection");
        return;
    }
    int64_t ext[8];
    frag_extents(src, ext);
    int Q = Ld->slots, T = Ls->threads;
    bool sum = op == IR_RED_SUM || op == IR_RED_ABSSUM, isabs = op == IR_RED_ABSSUM || op == IR_RED_ABSMAX;
    const char *comb = sum ? NULL : G->cuda ? (op == IR_RED_MIN ? "fminf" : "fmaxf") : (op == IR_RED_MIN ? "fmin" : "fmax");
    tile_strbuf idl = {0};
    if (sum) tile_sb_puts(&idl, "0.0f");
    else f32_lit(&idl, op == IR_RED_MIN ? INFINITY : -INFINITY);
#define RF_COMB(a, b) (sum ? line(G, o, "%s = %s + %s;", a, a, b) : line(G, o, "%s = %s(%s, %s);", a, comb, a, b))
    /* thread digits of the reduced dimension: lanes (CUDA shuffles) and the rest */
    unsigned lane_mask = 0;
    int64_t below = 1;
    bool cross = false;
    for (int i = 0; i < Ls->ndig; i++) {
        const ir_layout_digit *d = &Ls->dig[i];
        if (!d->thread) continue;
        if (d->dim == s->dim) {
            bool pow2 = (d->size & (d->size - 1)) == 0 && (below & (below - 1)) == 0;
            if (G->cuda && T % 32 == 0 && pow2 && below * d->size <= 32) lane_mask |= (unsigned)((below * d->size - 1) & ~(below - 1));
            else cross = true;
        }
        below *= d->size;
    }
    bool unroll = !Ls->local && !Ld->local;
    int t = G->tmp++;
    /* a reduction in a loop reuses its scratch in the next iteration: wait until the last
     * reads are done */
    if (cross && (G->blk_loop || !G->cuda)) barrier(G, o);
    line(G, o, "{");
    G->ind++;
    line(G, o, "float tl_ra[%d];", Q);
    line(G, o, "#pragma unroll");
    line(G, o, "for (int tl_q = 0; tl_q < %d; tl_q++) tl_ra[tl_q] = %s;", Q, idl.data);
    rf_thread_coords(G, o, Ls, t);
    line(G, o, unroll ? "#pragma unroll" : "#pragma unroll 1");
    line(G, o, "for (int tl_s = 0; tl_s < %d; tl_s++) {", Ls->slots);
    G->ind++;
    tile_strbuf holes = {0};
    rf_coords(G, o, Ls, ext, t, "tl_s", &holes);
    if (holes.len) line(G, o, "if (!(%s)) continue;", holes.data);
    tile_strbuf x = {0}, q = {0};
    load_at(G, &x, src, "tl_s");
    line(G, o, "float tl_x = %s;", x.data);
    tile_sb_free(&x);
    if (isabs) line(G, o, "tl_x = %s(tl_x);", G->cuda ? "fabsf" : "fabs");
    tile_sb_puts(&q, "tl_ra[");
    lay_project_slot_c(Ls, map, dr, "tl_s", &q);
    tile_sb_puts(&q, "]");
    RF_COMB(q.data, "tl_x");
    tile_sb_free(&q);
    tile_sb_free(&holes);
    G->ind--;
    line(G, o, "}");
    if (lane_mask) {
        line(G, o, "#pragma unroll");
        line(G, o, "for (int tl_q = 0; tl_q < %d; tl_q++) {", Q);
        G->ind++;
        for (unsigned m = 1; m < 32; m <<= 1) {
            if (!(lane_mask & m)) continue;
            char sh[80];
            snprintf(sh, sizeof sh, "__shfl_xor_sync(0xffffffffu, tl_ra[tl_q], %u)", m);
            RF_COMB("tl_ra[tl_q]", sh);
        }
        /* the lanes' sums are in different orders: every lane takes the one of the group's
         * first lane, so the replicas agree bit for bit */
        if (sum) line(G, o, "tl_ra[tl_q] = __shfl_sync(0xffffffffu, tl_ra[tl_q], (%s & 31) & ~%uu);", G->lt, lane_mask);
        G->ind--;
        line(G, o, "}");
    }
    if (cross) {
        /* the scratch holds one partial per destination slot and per thread the shuffles left
         * distinct: the lanes they combined hold the same value, so only the group's first lane
         * writes, at its index with those lane digits dropped (TW such indices). The slots go
         * through it in chunks of at most RF_SCRATCH_OWN floats, so its size never depends on
         * how many rows a thread holds. */
        tile_strbuf wi = {0};
        int TW = rf_compact_index_c(Ls, lane_mask, G->lt, &wi);
        int qc = RF_SCRATCH_OWN / TW;
        if (qc < 1) qc = 1;
        if (qc > Q) qc = Q;
        int nch = (Q + qc - 1) / qc;
        int base = rf_scratch(G, o, qc * TW);
        /* the partners: this thread's index with the reduced dimension's digits replaced
         * (lane digits kept at 0 where shuffles combined them) */
        tile_strbuf keep = {0};
        tile_sb_printf(&keep, "(%s)", G->lt);
        int64_t bl = 1;
        int nd = 0;
        int64_t dsz[IR_LAYOUT_MAXDIG], dpos[IR_LAYOUT_MAXDIG];
        for (int i = 0; i < Ls->ndig; i++) {
            const ir_layout_digit *d = &Ls->dig[i];
            if (!d->thread) continue;
            if (d->dim == s->dim) {
                tile_sb_printf(&keep, " - ((%s) / %lld %% %d) * %lld", G->lt, (long long)bl, d->size, (long long)bl);
                bool lane = (lane_mask & (unsigned)bl) && bl < 32;
                if (!lane) {
                    dsz[nd] = d->size;
                    dpos[nd] = bl;
                    nd++;
                }
            }
            bl *= d->size;
        }
        int64_t combos = 1;
        for (int i = 0; i < nd; i++) combos *= dsz[i];
        line(G, o, "const int tl_kp = %s;", keep.data);
        tile_sb_free(&keep);
        const char *q = "tl_q";
        if (nch > 1) {
            line(G, o, unroll ? "#pragma unroll" : "#pragma unroll 1");
            line(G, o, "for (int tl_q0 = 0; tl_q0 < %d; tl_q0 += %d) {", Q, qc);
            G->ind++;
            /* the previous chunk's reads are done before its scratch is written again */
            line(G, o, "if (tl_q0 > 0) TL_BARRIER();");
            q = "tl_q0 + tl_q";
        }
        tile_strbuf lim = {0};
        if (nch > 1 && Q % qc) tile_sb_printf(&lim, " && tl_q0 + tl_q < %d", Q);
        if (lane_mask) line(G, o, "if (((%s) & %uu) == 0) {", G->lt, lane_mask);
        else line(G, o, "{");
        G->ind++;
        line(G, o, "#pragma unroll");
        line(G, o, "for (int tl_q = 0; tl_q < %d%s; tl_q++) tl_rfw[%d + tl_q * %d + %s] = tl_ra[%s];", qc, lim.len ? lim.data : "", base, TW, wi.data, q);
        G->ind--;
        line(G, o, "}");
        line(G, o, "TL_BARRIER();");
        line(G, o, "#pragma unroll");
        line(G, o, "for (int tl_q = 0; tl_q < %d%s; tl_q++) {", qc, lim.len ? lim.data : "");
        G->ind++;
        line(G, o, "float tl_a = %s;", idl.data);
        line(G, o, "for (int tl_w = 0; tl_w < %lld; tl_w++) {", (long long)combos);
        G->ind++;
        tile_strbuf pt = {0};
        tile_sb_puts(&pt, "tl_kp");
        int64_t cb = 1;
        for (int i = 0; i < nd; i++) {
            tile_sb_printf(&pt, " + (tl_w / %lld %% %lld) * %lld", (long long)cb, (long long)dsz[i], (long long)dpos[i]);
            cb *= dsz[i];
        }
        line(G, o, "const int tl_pw = %s;", pt.data);
        tile_strbuf pwi = {0};
        rf_compact_index_c(Ls, lane_mask, "tl_pw", &pwi);
        tile_strbuf sh = {0};
        tile_sb_printf(&sh, "tl_rfw[%d + tl_q * %d + %s]", base, TW, pwi.data);
        RF_COMB("tl_a", sh.data);
        tile_sb_free(&sh);
        tile_sb_free(&pwi);
        tile_sb_free(&pt);
        G->ind--;
        line(G, o, "}");
        line(G, o, "tl_ra[%s] = tl_a;", q);
        G->ind--;
        line(G, o, "}");
        if (nch > 1) {
            G->ind--;
            line(G, o, "}");
        }
        tile_sb_free(&lim);
        tile_sb_free(&wi);
    }
    line(G, o, "#pragma unroll");
    line(G, o, "for (int tl_q = 0; tl_q < %d; tl_q++) {", Q);
    G->ind++;
    if (!s->clear) {
        tile_strbuf d0 = {0};
        loaded_as(G, &d0, dst, "tl_q", TILE_DT_F32);
        line(G, o, "float tl_old = %s;", d0.data);
        tile_sb_free(&d0);
        RF_COMB("tl_ra[tl_q]", "tl_old");
    }
    store_at(G, o, dst, "tl_q", "tl_ra[tl_q]", TILE_DT_F32);
    G->ind--;
    line(G, o, "}");
    G->ind--;
    line(G, o, "}");
#undef RF_COMB
    G->barrier_fresh = false;
    tile_sb_free(&idl);
}

/* T.gemm into a register accumulator C (any register layout): each thread runs the k loop
 * for its own elements in the interpreter's order (products and sums in the accumulator
 * type, so f32 results are bit-identical); the elements of A's rows and B's columns the
 * thread's slots need are loaded once per k (the slot digits of C's rows and of its columns
 * give them). A and B are read from their buffers (shared or global memory). */
static void gen_gemm_rf(gen *G, tile_strbuf *o, const ir_stmt *s) {
    const ir_region *A = &s->regions[0], *B = &s->regions[1], *C = &s->regions[2];
    const ir_buffer *cb = C->buf;
    const ir_layout *L = cb->layout;
    if (A->buf->rank < 2 || B->buf->rank < 2 || cb->rank != 2 || !ir_region_is_whole(C)) {
        gfail(G, s->loc, "internal: a register GEMM accumulator that is not a whole 2-D fragment");
        return;
    }
    int64_t ext[2];
    frag_extents(cb, ext);
    int t = G->tmp++;
    bool unroll = !L->local;
    line(G, o, "{");
    G->ind++;
    /* an operand in registers (the layout pass gave it a tensor-core layout, and no
     * tensor-core lowering took the kernel): through a shared-memory copy, each thread
     * writing its slots, then a barrier */
    ir_buffer cvt[2];
    ir_region opr[2] = {*A, *B};
    for (int q = 0; q < 2; q++) {
        const ir_buffer *ob = q ? B->buf : A->buf;
        if (!G->rf[ob->id]) continue;
        int64_t oe[8];
        frag_extents(ob, oe);
        cvt[q] = *ob;
        cvt[q].name = q ? "cvtB" : "cvtA";
        G->smem = (G->smem + 15) & ~(size_t)15;
        size_t off = G->smem;
        G->smem += tile_dtype_storage_bytes(ob->dtype, (size_t)buf_elems(ob)) + 4;
        tile_strbuf cn = {0}, on = {0};
        buf_name(&cn, &cvt[q]);
        buf_name(&on, ob);
        line(G, o, "TL_LOCAL %s *%s = (TL_LOCAL %s *)(tl_smem + %zu);", stype(ob->dtype), cn.data, stype(ob->dtype), off);
        const ir_layout *Lo = ob->layout;
        int tq = G->tmp++;
        rf_thread_coords(G, o, Lo, tq);
        line(G, o, "#pragma unroll 4");
        line(G, o, "for (int tl_s = 0; tl_s < %d; tl_s++) {", Lo->slots);
        G->ind++;
        tile_strbuf holes = {0}, lin = {0};
        rf_coords(G, o, Lo, oe, tq, "tl_s", &holes);
        rf_linear(&lin, ob->rank, oe, tq, NULL);
        if (holes.len) line(G, o, "if (%s)", holes.data);
        line(G, o, "    %s[%s] = %s[tl_s];", cn.data, lin.data, on.data);
        G->ind--;
        line(G, o, "}");
        tile_sb_free(&holes);
        tile_sb_free(&lin);
        tile_sb_free(&cn);
        tile_sb_free(&on);
        opr[q].buf = &cvt[q];
    }
    if (G->rf[A->buf->id] || G->rf[B->buf->id]) line(G, o, "TL_BARRIER();");
    A = &opr[0];
    B = &opr[1];
    region_prep(G, o, A, 0);
    region_prep(G, o, B, 1);
    int ra = A->buf->rank, rb = B->buf->rank;
    line(G, o, "const int64_t tl_M = tl_e0_%d, tl_K = tl_e0_%d, tl_KB = tl_e1_%d, tl_N = tl_e1_%d;", s->trans_a ? ra - 1 : ra - 2,
         s->trans_a ? ra - 2 : ra - 1, s->trans_b ? rb - 1 : rb - 2, s->trans_b ? rb - 2 : rb - 1);
    tile_strbuf lead = {0};
    tile_sb_puts(&lead, "0");
    for (int d = 0; d < ra - 2; d++) tile_sb_printf(&lead, " || tl_e0_%d != 1", d);
    for (int d = 0; d < rb - 2; d++) tile_sb_printf(&lead, " || tl_e1_%d != 1", d);
    int site = add_site(G, s->loc, SIMT_SITE_SHAPE, "gemm: shapes do not match (M x K = %lld x %lld)");
    line(G, o, "if (tl_M != %lld || tl_N != %lld || tl_K != tl_KB || %s) tl_fail(tl_err, %d, tl_M, tl_K, 0);", (long long)ext[0], (long long)ext[1], lead.data,
         site);
    tile_sb_free(&lead);
    line(G, o, "else {");
    G->ind++;
    tile_dtype ct = compute_dt(cb->dtype);
    const char *T = vtype(ct);
    tile_strbuf cn = {0};
    buf_name(&cn, cb);
    rf_thread_coords(G, o, L, t);
    /* slot digits of the rows and of the columns: nr x nc distinct rows and columns */
    int64_t nr = 1, nc = 1;
    for (int i = 0; i < L->ndig; i++)
        if (!L->dig[i].thread) {
            if (L->dig[i].dim == 0) nr *= L->dig[i].size;
            else nc *= L->dig[i].size;
        }
    int rmap[1] = {0}, cmap[1] = {1};
    if (s->clear) {
        line(G, o, unroll ? "#pragma unroll" : "#pragma unroll 1");
        line(G, o, "for (int tl_s = 0; tl_s < %d; tl_s++) %s[tl_s] = (%s)0;", L->slots, cn.data, stype(cb->dtype));
    }
    /* the accumulators in the compute type (a 16-bit C is rounded once at the end, as the
     * interpreter does) */
    bool conv_acc = ct != cb->dtype;
    if (conv_acc) {
        line(G, o, "%s tl_acc[%d];", T, L->slots);
        tile_strbuf l = {0};
        loaded_as(G, &l, cb, "tl_s", ct);
        line(G, o, "for (int tl_s = 0; tl_s < %d; tl_s++) tl_acc[tl_s] = %s;", L->slots, l.data);
        tile_sb_free(&l);
    }
    const char *acc = conv_acc ? "tl_acc" : cn.data;
    line(G, o, "#pragma unroll 2");
    line(G, o, "for (int64_t tl_kk = 0; tl_kk < tl_K; tl_kk++) {");
    G->ind++;
    line(G, o, "%s tl_av[%lld], tl_bv[%lld];", T, (long long)nr, (long long)nc);
    line(G, o, unroll ? "#pragma unroll" : "#pragma unroll 1");
    line(G, o, "for (int tl_s = 0; tl_s < %d; tl_s++) {", L->slots);
    G->ind++;
    tile_strbuf holes = {0};
    rf_coords(G, o, L, ext, t, "tl_s", &holes);
    tile_strbuf ri = {0}, ci = {0};
    lay_project_slot_c(L, rmap, 1, "tl_s", &ri);
    lay_project_slot_c(L, cmap, 1, "tl_s", &ci);
    /* a slot whose column slot digits are all 0 loads the row's A element, and vice versa */
    line(G, o, "if (%s == 0) {", ci.data);
    G->ind++;
    char rr[32], cc[32];
    snprintf(rr, sizeof rr, "tl_c%d_0", t);
    snprintf(cc, sizeof cc, "tl_c%d_1", t);
    gemm_pos(G, o, A, 0, s->trans_a ? "tl_kk" : rr, s->trans_a ? rr : "tl_kk");
    tile_strbuf la = {0}, lb = {0};
    loaded_as(G, &la, A->buf, "tl_o0", ct);
    line(G, o, "tl_av[%s] = tl_in0 ? %s : (%s)0;", ri.data, la.data, T);
    G->ind--;
    line(G, o, "}");
    line(G, o, "if (%s == 0) {", ri.data);
    G->ind++;
    gemm_pos(G, o, B, 1, s->trans_b ? cc : "tl_kk", s->trans_b ? "tl_kk" : cc);
    loaded_as(G, &lb, B->buf, "tl_o1", ct);
    line(G, o, "tl_bv[%s] = tl_in1 ? %s : (%s)0;", ci.data, lb.data, T);
    G->ind--;
    line(G, o, "}");
    tile_sb_free(&la);
    tile_sb_free(&lb);
    G->ind--;
    line(G, o, "}");
    line(G, o, unroll ? "#pragma unroll" : "#pragma unroll 1");
    line(G, o, "for (int tl_s = 0; tl_s < %d; tl_s++) {", L->slots);
    G->ind++;
    if (is_float(ct)) {
        line(G, o, "const %s tl_p = tl_av[%s] * tl_bv[%s];", T, ri.data, ci.data);
        if (conv_acc) line(G, o, "%s[tl_s] = %s[tl_s] + tl_p;", acc, acc);
        else {
            tile_strbuf cur = {0};
            load_at(G, &cur, cb, "tl_s");
            tile_strbuf e = {0};
            tile_sb_printf(&e, "%s + tl_p", cur.data);
            store_at(G, o, cb, "tl_s", e.data, ct);
            tile_sb_free(&cur);
            tile_sb_free(&e);
        }
    } else {
        const char *U = uwide(ct);
        tile_strbuf cur = {0}, e = {0};
        if (conv_acc) tile_sb_printf(&cur, "%s[tl_s]", acc);
        else load_at(G, &cur, cb, "tl_s");
        tile_sb_printf(&e, "(%s)((%s)%s + (%s)tl_av[%s] * (%s)tl_bv[%s])", T, U, cur.data, U, ri.data, U, ci.data);
        if (conv_acc) line(G, o, "%s[tl_s] = %s;", acc, e.data);
        else store_at(G, o, cb, "tl_s", e.data, ct);
        tile_sb_free(&cur);
        tile_sb_free(&e);
    }
    G->ind--;
    line(G, o, "}");
    tile_sb_free(&holes);
    tile_sb_free(&ri);
    tile_sb_free(&ci);
    G->ind--;
    line(G, o, "}");
    if (conv_acc) {
        line(G, o, "for (int tl_s = 0; tl_s < %d; tl_s++) {", L->slots);
        G->ind++;
        store_at(G, o, cb, "tl_s", "tl_acc[tl_s]", ct);
        G->ind--;
        line(G, o, "}");
    }
    tile_sb_free(&cn);
    G->ind--;
    line(G, o, "}");
    G->ind--;
    line(G, o, "}");
}

/* A T.Parallel nest: flattened, iterations strided over the threads, barrier after (none
 * when the nest is thread-local: stmt_local). */
static void gen_parallel(gen *G, tile_strbuf *o, const ir_stmt *s) {
    const ir_stmt *loops[16];
    int n = 1;
    loops[0] = s;
    int want = s->par_group_depth < 1 ? 1 : s->par_group_depth > 16 ? 16 : s->par_group_depth;
    while (n < want) {
        const ir_stmt *c = single_child(loops[n - 1]);
        if (!c || c->kind != IR_S_FOR) break;
        bool dep = false;
        for (int k = 0; k < n; k++)
            if (ir_expr_uses_var(c->lo, loops[k]->var) || ir_expr_uses_var(c->extent, loops[k]->var)) dep = true;
        if (dep) break;
        loops[n++] = c;
    }
    for (int k = 0; k < n; k++)
        if (breaks_out(loops[k]->body[0], true)) {
            gfail(G, s->loc, "'break' out of a T.Parallel loop is not supported on the GPU targets");
            return;
        }
    bool local = stmt_local(G, s);
    if (!local) barrier(G, o);
    int t = G->tmp++;
    line(G, o, "{");
    G->ind++;
    nest_info ni;
    nest_collect(s, &ni);
    if (G->o->mem_opt && ni.cnst && ni.n == n && G->threads > 1 && (ni.total + G->threads - 1) / G->threads <= 32) {
        /* constant extents, a few iterations a thread: unrolled, 32-bit decoding with
         * constant divisors, so the loads of all iterations can be in flight together */
        int S = (int)((ni.total + G->threads - 1) / G->threads);
        line(G, o, "#pragma unroll");
        line(G, o, "for (int tl_s%d = 0; tl_s%d < %d; tl_s%d++) {", t, t, S, t);
        G->ind++;
        /* unsigned: with __launch_bounds__ the compiler knows tl_tid < threads, so the
         * decoded indices get known ranges (and guards like `row < M` can fold) */
        line(G, o, "const uint32_t tl_e%d = (uint32_t)tl_s%d * %du + (uint32_t)tl_tid;", t, t, G->threads);
        if (ni.total % G->threads) line(G, o, "if (tl_e%d >= %lluu) break;", t, (unsigned long long)ni.total);
        line(G, o, "uint32_t tl_r%d = tl_e%d;", t, t);
        for (int k = n - 1; k >= 0; k--) {
            tile_strbuf v = {0};
            var_name(&v, loops[k]->var);
            if (k > 0) line(G, o, "%s = (int32_t)(tl_r%d %% %lluu); tl_r%d /= %lluu;", v.data, t, (unsigned long long)ni.ext[k], t, (unsigned long long)ni.ext[k]);
            else line(G, o, "%s = (int32_t)tl_r%d;", v.data, t);
            tile_sb_free(&v);
        }
        bool was = G->defer;
        G->defer = true;
        for (int k = 0; k < n; k++) vr_loop(G, loops[k]->var, loops[k]->lo, loops[k]->extent);
        gen_thread(G, o, loops[n - 1]->body[0]);
        for (int k = 0; k < n; k++) vr_clear(G, loops[k]->var);
        G->defer = was;
        G->ind--;
        line(G, o, "}");
        rf_flush(G, o);
        G->ind--;
        line(G, o, "}");
        if (!local) barrier(G, o);
        return;
    }
    for (int k = 0; k < n; k++) {
        tile_strbuf lo = {0}, ext = {0};
        ex(G, &lo, loops[k]->lo);
        ex(G, &ext, loops[k]->extent);
        line(G, o, "const int64_t tl_lo%d_%d = (int64_t)(%s), tl_n%d_%d = (int64_t)(%s);", t, k, lo.data, t, k, ext.data);
        tile_sb_free(&lo);
        tile_sb_free(&ext);
    }
    tile_strbuf tot = {0}, pos = {0};
    for (int k = 0; k < n; k++) tile_sb_printf(&tot, "%stl_n%d_%d > 0", k ? " && " : "", t, k);
    tile_sb_puts(&tot, " ? ");
    for (int k = 0; k < n; k++) tile_sb_printf(&tot, "%stl_n%d_%d", k ? " * " : "", t, k);
    line(G, o, "const int64_t tl_tot%d = %s : 0;", t, tot.data);
    line(G, o, "for (int64_t tl_it%d = tl_tid; tl_it%d < tl_tot%d; tl_it%d += %d) {", t, t, t, t, G->threads);
    G->ind++;
    line(G, o, "int64_t tl_r%d = tl_it%d;", t, t);
    for (int k = n - 1; k >= 0; k--) {
        tile_strbuf v = {0};
        var_name(&v, loops[k]->var);
        if (k > 0) line(G, o, "%s = (int32_t)(tl_lo%d_%d + tl_r%d %% tl_n%d_%d); tl_r%d /= tl_n%d_%d;", v.data, t, k, t, t, k, t, t, k);
        else line(G, o, "%s = (int32_t)(tl_lo%d_%d + tl_r%d);", v.data, t, k, t);
        tile_sb_free(&v);
    }
    for (int k = 0; k < n; k++) vr_loop(G, loops[k]->var, loops[k]->lo, loops[k]->extent);
    gen_thread(G, o, loops[n - 1]->body[0]);
    for (int k = 0; k < n; k++) vr_clear(G, loops[k]->var);
    G->ind--;
    line(G, o, "}");
    G->ind--;
    line(G, o, "}");
    tile_sb_free(&tot);
    tile_sb_free(&pos);
    if (!local) barrier(G, o);
}

/* A BREAK or CONTINUE in s that leaves s (not inside a loop of s). */
static bool escapes(const ir_stmt *s, bool top) {
    if (!s) return false;
    if (s->kind == IR_S_BREAK || s->kind == IR_S_CONTINUE) return true;
    if (!top && (s->kind == IR_S_FOR || s->kind == IR_S_WHILE)) return false;
    for (int i = 0; i < s->nbody; i++)
        if (escapes(s->body[i], false)) return true;
    return false;
}

/* Block-level statement without tile ops: redundantly in every thread if it writes no
 * memory, else in thread 0 with the scalars it assigns broadcast through shared memory. */
static void gen_leaf(gen *G, tile_strbuf *o, const ir_stmt *s) {
    if (G->threads <= 1 || !writes_mem(s)) {
        gen_thread(G, o, s);
        return;
    }
    if (escapes(s, s->kind == IR_S_FOR || s->kind == IR_S_WHILE)) {
        /* it leaves the enclosing uniform loop: every thread must take the same path, so
         * run it in all threads with its stores made by thread 0 only, and a barrier
         * before the break / continue and after the statement */
        barrier(G, o);
        bool was = G->guard;
        G->guard = true;
        gen_thread(G, o, s);
        G->guard = was;
        barrier(G, o);
        return;
    }
    bool *mark = tile_xcalloc((size_t)G->f->nvars + 1, sizeof(bool));
    assigned_vars(s, mark);
    barrier(G, o);
    line(G, o, "if (tl_tid == 0) {");
    G->ind++;
    gen_thread(G, o, s);
    for (int i = 0; i < G->f->nvars; i++) {
        if (!mark[i]) continue;
        if (G->slot[i] < 0) {
            G->smem = (G->smem + 7) & ~(size_t)7;
            G->slot[i] = (long)G->smem;
            G->smem += 8;
        }
        tile_strbuf v = {0};
        var_name(&v, G->f->vars[i]);
        line(G, o, "*(TL_LOCAL %s *)(tl_smem + %ld) = %s;", vtype(G->f->vars[i]->dtype), G->slot[i], v.data);
        tile_sb_free(&v);
    }
    G->ind--;
    line(G, o, "}");
    barrier(G, o);
    for (int i = 0; i < G->f->nvars; i++) {
        if (!mark[i]) continue;
        tile_strbuf v = {0};
        var_name(&v, G->f->vars[i]);
        line(G, o, "%s = *(TL_LOCAL %s *)(tl_smem + %ld);", v.data, vtype(G->f->vars[i]->dtype), G->slot[i]);
        tile_sb_free(&v);
    }
    free(mark);
}

/* Variables whose value differs between threads: assigned inside a T.Parallel body. */
static void mark_private(gen *G, const ir_stmt *s, bool par) {
    if (!s) return;
    if (par && s->var && (s->kind == IR_S_ASSIGN || s->kind == IR_S_FOR || s->kind == IR_S_ATOMIC)) G->priv[s->var->id] = true;
    if (s->kind == IR_S_FOR && s->loop_kind == IR_LOOP_PARALLEL) {
        G->priv[s->var->id] = true;
        par = true;
    }
    for (int i = 0; i < s->nbody; i++) mark_private(G, s->body[i], par);
}
static const ir_var *private_use(gen *G, const ir_expr *e) {
    if (!e) return NULL;
    if (e->kind == IR_E_VAR && G->priv[e->var->id]) return e->var;
    for (int i = 0; i < e->nargs; i++) {
        const ir_var *v = private_use(G, e->args[i]);
        if (v) return v;
    }
    return NULL;
}
/* A condition or trip count around barriers must be the same in all threads. */
static bool uniform_check(gen *G, const ir_stmt *s, const ir_expr *e) {
    const ir_var *v = private_use(G, e);
    if (!v) return true;
    gfail(G, e->loc.src ? e->loc : s->loc,
          "this condition depends on '%s', which each thread computes separately inside a T.Parallel loop; it controls tile operations or "
          "T.Parallel loops (barriers), so it must be the same in all threads: compute it outside the T.Parallel loop",
          v->name);
    return false;
}

static void gen_block(gen *G, tile_strbuf *o, const ir_stmt *s) {
    if (!s || G->failed) return;
    if (s->kind == IR_S_SEQ) {
        for (int i = 0; i < s->nbody; i++) gen_block(G, o, s->body[i]);
        return;
    }
    if (s->kind == IR_S_ALLOC) {
        if (G->space[s->buf->id] == SP_SHARED) return;
        if (G->rf[s->buf->id]) {
            /* declared once at the kernel's start (PoCL's work-group loops mishandle private
             * arrays declared between barriers) */
            int was = G->ind;
            G->ind = 1;
            rf_decl(G, &G->decls, s->buf);
            G->ind = was;
            return;
        }
        gen_thread(G, o, s);
        return;
    }
    if (!has_sync(s)) {
        gen_leaf(G, o, s);
        return;
    }
    if (!uniform_check(G, s, s->kind == IR_S_FOR ? s->lo : s->cond) || (s->kind == IR_S_FOR && !uniform_check(G, s, s->extent))) return;
    switch (s->kind) {
    case IR_S_FOR:
        if (s->loop_kind == IR_LOOP_PARALLEL) {
            if (rf_touch(G, s, 0)) {
                nest_info ni;
                nest_collect(s, &ni);
                gen_parallel_rf(G, o, s, &ni);
            } else gen_parallel(G, o, s);
        } else gen_for_serial(G, o, s, true);
        return;
    case IR_S_WHILE: gen_while(G, o, s, gen_block); return;
    case IR_S_IF: gen_if(G, o, s, gen_block); return;
    case IR_S_KERNEL: gfail(G, s->loc, "kernels cannot be nested"); return;
    default:
        if (rf_touch(G, s, 0)) {
            bool local = stmt_local(G, s);
            if (!local) barrier(G, o);
            if (s->kind == IR_S_COPY) gen_copy_rf(G, o, s);
            else if (s->kind == IR_S_FILL) gen_fill_rf(G, o, s);
            else if (s->kind == IR_S_REDUCE) gen_reduce_rf(G, o, s);
            else if (s->kind == IR_S_GEMM && G->rf[s->regions[2].buf->id]) gen_gemm_rf(G, o, s);
            else gfail(G, s->loc, "internal: tile operation on a register fragment");
            if (!local) barrier(G, o);
            return;
        }
        barrier(G, o);
        gen_tileop(G, o, s, "tl_tid", G->threads > 1 ? "tl_nth" : "1");
        barrier(G, o);
        return;
    }
}

/* ---------- tile operations ---------- */
/* Declares tl_s<N>_d, tl_e<N>_d, tl_d<N>_d (start, extent, dimension) and tl_c<N> (count). */
static void region_prep(gen *G, tile_strbuf *o, const ir_region *r, int N) {
    const ir_buffer *b = r->buf;
    tile_strbuf cnt = {0};
    for (int d = 0; d < b->rank; d++) {
        tile_strbuf s = {0}, e = {0}, dd = {0};
        ex(G, &s, r->start[d]);
        ex(G, &e, r->extent[d]);
        ex(G, &dd, b->shape[d]);
        line(G, o, "const int64_t tl_s%d_%d = (int64_t)(%s), tl_e%d_%d = (int64_t)(%s), tl_d%d_%d = (int64_t)(%s);", N, d, s.data, N, d,
             e.data, N, d, dd.data);
        tile_sb_printf(&cnt, " * tl_e%d_%d", N, d);
        tile_sb_free(&s);
        tile_sb_free(&e);
        tile_sb_free(&dd);
    }
    line(G, o, "const int64_t tl_c%d = (int64_t)1%s;", N, cnt.data ? cnt.data : "");
    tile_sb_free(&cnt);
}

/* Declares tl_p<N>_d (positions) from linear index `k` over the box, tl_in<N>, tl_o<N>. */
static void region_pos(gen *G, tile_strbuf *o, const ir_region *r, int N, const char *k) {
    int R = r->buf->rank;
    line(G, o, "int64_t tl_r%d = %s;", N, k);
    for (int d = R - 1; d >= 0; d--) {
        if (d > 0) line(G, o, "const int64_t tl_p%d_%d = tl_s%d_%d + tl_r%d %% tl_e%d_%d; tl_r%d /= tl_e%d_%d;", N, d, N, d, N, N, d, N, N, d);
        else line(G, o, "const int64_t tl_p%d_%d = tl_s%d_%d + tl_r%d;", N, d, N, d, N);
    }
    tile_strbuf in = {0}, off = {0};
    tile_sb_puts(&in, "1");
    tile_sb_puts(&off, "(int64_t)0");
    for (int d = 0; d < R; d++) {
        tile_sb_printf(&in, " && (uint64_t)tl_p%d_%d < (uint64_t)tl_d%d_%d", N, d, N, d);
        tile_strbuf t = {0};
        tile_sb_printf(&t, "(%s) * tl_d%d_%d + tl_p%d_%d", off.data, N, d, N, d);
        tile_sb_free(&off);
        off = t;
    }
    line(G, o, "const int tl_in%d = %s;", N, in.data);
    line(G, o, "const int64_t tl_o%d = tl_in%d ? %s : 0;", N, N, off.data);
    tile_sb_free(&in);
    tile_sb_free(&off);
}

/* Offset and in-bounds test of a GEMM operand at (row, col) of its last two dims. */
static void gemm_pos(gen *G, tile_strbuf *o, const ir_region *r, int N, const char *row, const char *col) {
    int R = r->buf->rank;
    tile_strbuf in = {0}, off = {0};
    tile_sb_puts(&in, "1");
    tile_sb_puts(&off, "(int64_t)0");
    for (int d = 0; d < R; d++) {
        char p[96];
        if (d == R - 2) snprintf(p, sizeof p, "(tl_s%d_%d + %s)", N, d, row);
        else if (d == R - 1) snprintf(p, sizeof p, "(tl_s%d_%d + %s)", N, d, col);
        else snprintf(p, sizeof p, "tl_s%d_%d", N, d);
        tile_sb_printf(&in, " && (uint64_t)%s < (uint64_t)tl_d%d_%d", p, N, d);
        tile_strbuf t = {0};
        tile_sb_printf(&t, "(%s) * tl_d%d_%d + %s", off.data, N, d, p);
        tile_sb_free(&off);
        off = t;
    }
    line(G, o, "const int tl_in%d = %s;", N, in.data);
    line(G, o, "const int64_t tl_o%d = tl_in%d ? %s : 0;", N, N, off.data);
    tile_sb_free(&in);
    tile_sb_free(&off);
}

static tile_dtype compute_dt(tile_dtype d) {
    if (!is_float(d)) return d;
    return d == TILE_DT_F64 ? TILE_DT_F64 : TILE_DT_F32;
}

static void loaded_as(gen *G, tile_strbuf *o, const ir_buffer *b, const char *off, tile_dtype to) {
    tile_strbuf l = {0};
    load_at(G, &l, b, off);
    conv(G, o, b->dtype, to, l.data);
    tile_sb_free(&l);
}

/* T.reduce_* of f32 values by warps (simt_options.mem_opt): each output (a row of the other
 * dims) belongs to one warp of 32 threads; lane l folds elements l, l+32, ... of the row,
 * then the lanes combine with an xor butterfly (CUDA: __shfl_xor_sync; OpenCL 1.2 has no
 * shuffles, so the same butterfly goes through shared memory with barriers: the same
 * arithmetic, so PoCL checks the CUDA lowering's order). Every thread runs the same number of
 * iterations (barriers stay uniform). The sum is in a different order than the
 * interpreter's sequential one (float rounding differs within the usual tolerance); max and
 * min are exact. */
/* In a reduction over dimension `dim` of an R-dimensional source region: skip element tl_kk
 * of the current row when it lies outside the tensor, else define tl_o0, its flat offset.
 * The other coordinates are tl_t<d>, the region starts at tl_s0_<d>, extents are tl_d0_<d>. */
static void reduce_src_offset(gen *G, tile_strbuf *o, int R, int dim) {
    tile_strbuf in = {0}, off = {0};
    tile_sb_puts(&in, "1");
    tile_sb_puts(&off, "(int64_t)0");
    for (int d = 0; d < R; d++) {
        char p[64];
        if (d == dim) snprintf(p, sizeof p, "(tl_s0_%d + tl_kk)", d);
        else snprintf(p, sizeof p, "tl_t%d", d);
        tile_sb_printf(&in, " && (uint64_t)%s < (uint64_t)tl_d0_%d", p, d);
        tile_strbuf t = {0};
        tile_sb_printf(&t, "(%s) * tl_d0_%d + %s", off.data, d, p);
        tile_sb_free(&off);
        off = t;
    }
    line(G, o, "if (!(%s)) continue;", in.data);
    line(G, o, "const int64_t tl_o0 = %s;", off.data);
    tile_sb_free(&in);
    tile_sb_free(&off);
}

static bool gen_reduce_warp(gen *G, tile_strbuf *o, const ir_stmt *s, const char *tid) {
    const ir_region *src = &s->regions[0], *dst = &s->regions[1];
    int R = src->buf->rank, dim = s->dim, op = s->reduce_op;
    /* clear=False (a running max/sum, as in flash attention) only at mem_opt >= 2: with it
     * the causal flash-attention example gives wrong results on PoCL 3.1 unless PoCL's
     * optimiser is off (-cl-opt-disable passes), which we could not pin down in time */
    if (!s->clear && G->o->mem_opt < 2) return false;
    if (!G->o->mem_opt || strcmp(tid, "tl_tid") != 0 || G->threads < 32 || G->threads % 32 != 0) return false;
    if (dim < 0 || dim >= R || compute_dt(dst->buf->dtype) != TILE_DT_F32 || !is_float(src->buf->dtype) || src->buf->dtype == TILE_DT_F64) return false;
    if (op != IR_RED_SUM && op != IR_RED_MAX && op != IR_RED_MIN && op != IR_RED_ABSSUM && op != IR_RED_ABSMAX) return false;
    bool sum = op == IR_RED_SUM || op == IR_RED_ABSSUM, isabs = op == IR_RED_ABSSUM || op == IR_RED_ABSMAX;
    const char *comb = sum ? NULL : op == IR_RED_MIN ? "fminf" : "fmaxf";
    if (!G->cuda) comb = sum ? NULL : op == IR_RED_MIN ? "fmin" : "fmax";
    tile_strbuf idl = {0};
    if (sum) tile_sb_puts(&idl, "0.0f");
    else f32_lit(&idl, op == IR_RED_MIN ? INFINITY : -INFINITY);
    if (!G->cuda && G->red_off < 0) {
        G->smem = (G->smem + 15) & ~(size_t)15;
        G->red_off = (long)G->smem;
        G->smem += (size_t)G->threads * 8;
    }
    /* fewer rows than warps (a constant count): WPR warps share a row, their partials meet
     * in shared memory (one step across warps) */
    int NW = G->threads / 32, WPR = 1;
    int64_t nconst = 1;
    bool isconst = true;
    for (int d = 0; d < R; d++) {
        int64_t v;
        if (d == dim) continue;
        if (!ir_const_int_value(src->extent[d], &v) || v < 1) isconst = false;
        else nconst *= v;
    }
    if (isconst && G->o->mem_opt)
        while (NW % (WPR * 2) == 0 && nconst * WPR * 2 <= NW) WPR *= 2;
    if (WPR > 1 && G->redw_off < 0) {
        G->smem = (G->smem + 15) & ~(size_t)15;
        G->redw_off = (long)G->smem;
        G->smem += (size_t)NW * 4;
    }
    region_prep(G, o, src, 0);
    region_prep(G, o, dst, 1);
    tile_strbuf nout = {0};
    tile_sb_puts(&nout, "(int64_t)1");
    for (int d = 0; d < R; d++)
        if (d != dim) tile_sb_printf(&nout, " * tl_e0_%d", d);
    line(G, o, "const int64_t tl_nout = %s, tl_len = tl_e0_%d;", nout.data, dim);
    tile_sb_free(&nout);
    int site = add_site(G, s->loc, SIMT_SITE_SHAPE, "reduce: the reduction gives %lld elements but the destination has %lld");
    line(G, o, "if (tl_nout != tl_c1) tl_fail(tl_err, %d, tl_nout, tl_c1, 0);", site);
    line(G, o, "else for (int64_t tl_qb = 0; tl_qb < tl_nout; tl_qb += %d) {", NW / WPR);
    G->ind++;
    line(G, o, "const int64_t tl_q = tl_qb + (tl_tid / %d);", 32 * WPR);
    line(G, o, "const int tl_lane = tl_tid & 31, tl_sub = (tl_tid >> 5) %% %d; (void)tl_sub;", WPR);
    line(G, o, "float tl_acc = %s;", idl.data);
    line(G, o, "if (tl_q < tl_nout) {");
    G->ind++;
    if (!s->clear) {
        /* lane 0 starts from the destination's value (clear=False) */
        line(G, o, "if (tl_lane == 0 && tl_sub == 0) {");
        G->ind++;
        region_pos(G, o, dst, 1, "tl_q");
        tile_strbuf d0 = {0};
        loaded_as(G, &d0, dst->buf, "tl_o1", TILE_DT_F32);
        line(G, o, "if (tl_in1) tl_acc = %s;", d0.data);
        tile_sb_free(&d0);
        G->ind--;
        line(G, o, "}");
    }
    line(G, o, "int64_t tl_rr = tl_q;");
    for (int d = R - 1; d >= 0; d--) {
        if (d == dim) continue;
        line(G, o, "const int64_t tl_t%d = tl_s0_%d + tl_rr %% tl_e0_%d; tl_rr /= tl_e0_%d;", d, d, d, d);
    }
    line(G, o, "for (int64_t tl_kk = tl_tid %% %d; tl_kk < tl_len; tl_kk += %d) {", 32 * WPR, 32 * WPR);
    G->ind++;
    reduce_src_offset(G, o, R, dim);
    tile_strbuf l = {0};
    loaded_as(G, &l, src->buf, "tl_o0", TILE_DT_F32);
    line(G, o, "float tl_x = %s;", l.data);
    tile_sb_free(&l);
    if (isabs) line(G, o, "tl_x = %s(tl_x);", G->cuda ? "fabsf" : "fabs");
    if (sum) line(G, o, "tl_acc = tl_acc + tl_x;");
    else line(G, o, "tl_acc = %s(tl_acc, tl_x);", comb);
    G->ind--;
    line(G, o, "}");
    G->ind--;
    line(G, o, "}");
    for (int m = 16; m >= 1; m /= 2) {
        if (G->cuda) {
            if (sum) line(G, o, "tl_acc = tl_acc + __shfl_xor_sync(0xffffffffu, tl_acc, %d);", m);
            else line(G, o, "tl_acc = %s(tl_acc, __shfl_xor_sync(0xffffffffu, tl_acc, %d));", comb, m);
        } else {
            /* two scratch halves used alternately: one barrier per step */
            int h = (m == 16 || m == 4 || m == 1) ? 0 : G->threads;
            line(G, o, "tl_red[%d + tl_tid] = tl_acc;", h);
            line(G, o, "TL_BARRIER();");
            if (sum) line(G, o, "tl_acc = tl_acc + tl_red[%d + (tl_tid ^ %d)];", h, m);
            else line(G, o, "tl_acc = %s(tl_acc, tl_red[%d + (tl_tid ^ %d)]);", comb, h, m);
        }
    }
    if (WPR > 1) {
        line(G, o, "if (tl_lane == 0) tl_redw[tl_tid >> 5] = tl_acc;");
        line(G, o, "TL_BARRIER();");
        line(G, o, "if (tl_sub == 0) {");
        G->ind++;
        for (int w = 1; w < WPR; w++) {
            if (sum) line(G, o, "tl_acc = tl_acc + tl_redw[(tl_tid >> 5) + %d];", w);
            else line(G, o, "tl_acc = %s(tl_acc, tl_redw[(tl_tid >> 5) + %d]);", comb, w);
        }
        G->ind--;
        line(G, o, "}");
    }
    line(G, o, "if (tl_q < tl_nout && tl_lane == 0 && tl_sub == 0) {");
    G->ind++;
    region_pos(G, o, dst, 1, "tl_q");
    line(G, o, "if (tl_in1) {");
    G->ind++;
    store_at(G, o, dst->buf, "tl_o1", "tl_acc", TILE_DT_F32);
    G->ind--;
    line(G, o, "}");
    G->ind--;
    line(G, o, "}");
    if (WPR > 1) line(G, o, "TL_BARRIER(); /* tl_redw is written again by the next rows */");
    G->ind--;
    line(G, o, "}");
    tile_sb_free(&idl);
    return true;
}

/* The scalar body of one element of a T.copy: positions from linear index `k`. */
static void copy_elem(gen *G, tile_strbuf *o, const ir_region *src, const ir_region *dst, const char *k) {
    region_pos(G, o, src, 0, k);
    region_pos(G, o, dst, 1, k);
    line(G, o, "if (tl_in1) {");
    G->ind++;
    tile_strbuf l = {0};
    load_at(G, &l, src->buf, "tl_o0");
    line(G, o, "%s tl_v = tl_in0 ? %s : (%s)0;", vtype(src->buf->dtype), l.data, vtype(src->buf->dtype));
    tile_sb_free(&l);
    store_at(G, o, dst->buf, "tl_o1", "tl_v", src->buf->dtype);
    G->ind--;
    line(G, o, "}");
}

/* T.copy with 16-byte (f32) / 8-byte (f16, bf16) accesses (simt_options.mem_opt): 4 elements
 * at a time when, at run time, both regions have the same innermost extent, a multiple of 4,
 * and both start on a multiple of 4 in rows whose length is a multiple of 4 (so every group
 * of 4 is contiguous and aligned on both sides). A group that is not wholly inside both
 * buffers (a ragged edge) is copied element by element with the usual clipping. Covers the
 * same dtype (bits copied), and f16/bf16 <-> f32. Returns false (the caller emits the scalar
 * loop) when the dtypes or spaces do not fit; otherwise emits `if (vector) {...} else` and
 * the caller's scalar loop follows as the else branch. */
static bool gen_copy_vec(gen *G, tile_strbuf *o, const ir_region *src, const ir_region *dst, const char *tid, const char *nth) {
    tile_dtype sd = src->buf->dtype, dd = dst->buf->dtype;
    if (!G->o->mem_opt || strcmp(tid, "tl_tid") != 0 || G->threads < 2) return false;
    int ss = G->space[src->buf->id], ds = G->space[dst->buf->id];
    if ((ss != SP_GLOBAL && ss != SP_SHARED) || (ds != SP_GLOBAL && ds != SP_SHARED) || (ss == SP_SHARED && ds == SP_SHARED)) return false;
    bool s16 = sd == TILE_DT_F16 || sd == TILE_DT_BF16, d16 = dd == TILE_DT_F16 || dd == TILE_DT_BF16;
    bool s32 = bits_of(sd) == 32 && sd != TILE_DT_BOOL, d32 = bits_of(dd) == 32;
    bool same = sd == dd && (s16 || s32);
    bool widen = s16 && dd == TILE_DT_F32, narrow = sd == TILE_DT_F32 && d16;
    if (!same && !widen && !narrow) return false;
    (void)d32;
    int R0 = src->buf->rank, R1 = dst->buf->rank;
    if (R0 < 1 || R1 < 1) return false;
    const char *sv = s16 ? "uint2" : "uint4", *dv = d16 ? "uint2" : "uint4";
    tile_strbuf sn = {0}, dn = {0};
    buf_name(&sn, src->buf);
    buf_name(&dn, dst->buf);
    line(G, o, "else if (tl_e0_%d == tl_e1_%d && (tl_e0_%d & 3) == 0 && (tl_s0_%d & 3) == 0 && (tl_d0_%d & 3) == 0 && (tl_s1_%d & 3) == 0 && (tl_d1_%d & 3) == 0) {",
         R0 - 1, R1 - 1, R0 - 1, R0 - 1, R0 - 1, R1 - 1, R1 - 1);
    G->ind++;
    line(G, o, "for (int64_t tl_vk = %s; tl_vk < (tl_c0 >> 2); tl_vk += %s) {", tid, nth);
    G->ind++;
    region_pos(G, o, src, 0, "tl_vk * 4");
    region_pos(G, o, dst, 1, "tl_vk * 4");
    line(G, o, "if (tl_in0 && tl_in1 && tl_p0_%d + 3 < tl_d0_%d && tl_p1_%d + 3 < tl_d1_%d) {", R0 - 1, R0 - 1, R1 - 1, R1 - 1);
    G->ind++;
    line(G, o, "const %s tl_u = *(const %s%s *)(%s + tl_o0);", sv, sp_qual(G, ss), sv, sn.data);
    if (same) line(G, o, "*(%s%s *)(%s + tl_o1) = tl_u;", sp_qual(G, ds), dv, dn.data);
    else if (widen) {
        const char *cv = sd == TILE_DT_F16 ? "tcv_f16_bits_to_f32" : "tcv_bf16_bits_to_f32";
        line(G, o, "%s tl_w;", dv);
        line(G, o, "tl_w.x = TL_BITS_F32(%s((uint16_t)(tl_u.x & 0xffffu)));", cv);
        line(G, o, "tl_w.y = TL_BITS_F32(%s((uint16_t)(tl_u.x >> 16)));", cv);
        line(G, o, "tl_w.z = TL_BITS_F32(%s((uint16_t)(tl_u.y & 0xffffu)));", cv);
        line(G, o, "tl_w.w = TL_BITS_F32(%s((uint16_t)(tl_u.y >> 16)));", cv);
        line(G, o, "*(%s%s *)(%s + tl_o1) = tl_w;", sp_qual(G, ds), dv, dn.data);
    } else {
        const char *cv = dd == TILE_DT_F16 ? "tcv_f32_to_f16_bits" : "tcv_f32_to_bf16_bits";
        line(G, o, "%s tl_w;", dv);
        line(G, o, "tl_w.x = (uint32_t)%s(TL_F32_BITS(tl_u.x)) | ((uint32_t)%s(TL_F32_BITS(tl_u.y)) << 16);", cv, cv);
        line(G, o, "tl_w.y = (uint32_t)%s(TL_F32_BITS(tl_u.z)) | ((uint32_t)%s(TL_F32_BITS(tl_u.w)) << 16);", cv, cv);
        line(G, o, "*(%s%s *)(%s + tl_o1) = tl_w;", sp_qual(G, ds), dv, dn.data);
    }
    G->ind--;
    line(G, o, "} else {");
    G->ind++;
    line(G, o, "for (int64_t tl_ve = tl_vk * 4; tl_ve < tl_vk * 4 + 4; tl_ve++) {");
    G->ind++;
    copy_elem(G, o, src, dst, "tl_ve");
    G->ind--;
    line(G, o, "}");
    G->ind--;
    line(G, o, "}");
    G->ind--;
    line(G, o, "}");
    G->ind--;
    line(G, o, "}");
    tile_sb_free(&sn);
    tile_sb_free(&dn);
    return true;
}

static void gen_tileop(gen *G, tile_strbuf *o, const ir_stmt *s, const char *tid, const char *nth) {
    for (int i = 0; i < s->nregions; i++)
        if (G->space[s->regions[i].buf->id] == SP_NONE) {
            gfail(G, s->loc, "buffer '%s' is used where the GPU code generator cannot place it", s->regions[i].buf->name);
            return;
        }
    line(G, o, "{");
    G->ind++;
    switch (s->kind) {
    case IR_S_COPY: {
        const ir_region *src = &s->regions[0], *dst = &s->regions[1];
        region_prep(G, o, src, 0);
        region_prep(G, o, dst, 1);
        int site = add_site(G, s->loc, SIMT_SITE_SHAPE, "copy: the source has %lld elements but the destination has %lld");
        line(G, o, "if (tl_c0 != tl_c1) tl_fail(tl_err, %d, tl_c0, tl_c1, 0);", site);
        gen_copy_vec(G, o, src, dst, tid, nth);
        line(G, o, "else for (int64_t tl_k = %s; tl_k < tl_c0; tl_k += %s) {", tid, nth);
        G->ind++;
        copy_elem(G, o, src, dst, "tl_k");
        G->ind--;
        line(G, o, "}");
        break;
    }
    case IR_S_FILL: {
        const ir_region *r = &s->regions[0];
        region_prep(G, o, r, 0);
        tile_strbuf v = {0};
        ex(G, &v, s->value);
        line(G, o, "const %s tl_fv = %s;", vtype(s->value->dtype), v.data);
        tile_sb_free(&v);
        line(G, o, "for (int64_t tl_k = %s; tl_k < tl_c0; tl_k += %s) {", tid, nth);
        G->ind++;
        region_pos(G, o, r, 0, "tl_k");
        line(G, o, "if (tl_in0) {");
        G->ind++;
        store_at(G, o, r->buf, "tl_o0", "tl_fv", s->value->dtype);
        G->ind--;
        line(G, o, "}");
        G->ind--;
        line(G, o, "}");
        break;
    }
    case IR_S_GEMM: {
        const ir_region *A = &s->regions[0], *B = &s->regions[1], *C = &s->regions[2];
        if (A->buf->rank < 2 || B->buf->rank < 2 || C->buf->rank < 2) {
            gfail(G, s->loc, "gemm: operands must be 2-D");
            break;
        }
        region_prep(G, o, A, 0);
        region_prep(G, o, B, 1);
        region_prep(G, o, C, 2);
        int ra = A->buf->rank, rb = B->buf->rank, rc = C->buf->rank;
        line(G, o, "const int64_t tl_M = tl_e0_%d, tl_K = tl_e0_%d, tl_KB = tl_e1_%d, tl_N = tl_e1_%d;", s->trans_a ? ra - 1 : ra - 2,
             s->trans_a ? ra - 2 : ra - 1, s->trans_b ? rb - 1 : rb - 2, s->trans_b ? rb - 2 : rb - 1);
        tile_strbuf lead = {0};
        tile_sb_puts(&lead, "0");
        for (int d = 0; d < ra - 2; d++) tile_sb_printf(&lead, " || tl_e0_%d != 1", d);
        for (int d = 0; d < rb - 2; d++) tile_sb_printf(&lead, " || tl_e1_%d != 1", d);
        for (int d = 0; d < rc - 2; d++) tile_sb_printf(&lead, " || tl_e2_%d != 1", d);
        int site = add_site(G, s->loc, SIMT_SITE_SHAPE, "gemm: shapes do not match (M x K = %lld x %lld)");
        line(G, o, "if (tl_M != tl_e2_%d || tl_N != tl_e2_%d || tl_K != tl_KB || %s) tl_fail(tl_err, %d, tl_M, tl_K, 0);", rc - 2, rc - 1,
             lead.data, site);
        tile_sb_free(&lead);
        tile_dtype ct = compute_dt(C->buf->dtype);
        const char *T = vtype(ct);
        line(G, o, "else for (int64_t tl_q = %s; tl_q < tl_M * tl_N; tl_q += %s) {", tid, nth);
        G->ind++;
        line(G, o, "const int64_t tl_i = tl_q / tl_N, tl_j = tl_q %% tl_N;");
        gemm_pos(G, o, C, 2, "tl_i", "tl_j");
        line(G, o, "if (!tl_in2) continue;");
        if (s->clear) line(G, o, "%s tl_acc = (%s)0;", T, T);
        else {
            tile_strbuf l = {0};
            loaded_as(G, &l, C->buf, "tl_o2", ct);
            line(G, o, "%s tl_acc = %s;", T, l.data);
            tile_sb_free(&l);
        }
        line(G, o, "for (int64_t tl_kk = 0; tl_kk < tl_K; tl_kk++) {");
        G->ind++;
        gemm_pos(G, o, A, 0, s->trans_a ? "tl_kk" : "tl_i", s->trans_a ? "tl_i" : "tl_kk");
        gemm_pos(G, o, B, 1, s->trans_b ? "tl_j" : "tl_kk", s->trans_b ? "tl_kk" : "tl_j");
        tile_strbuf la = {0}, lb = {0};
        loaded_as(G, &la, A->buf, "tl_o0", ct);
        loaded_as(G, &lb, B->buf, "tl_o1", ct);
        line(G, o, "const %s tl_a = tl_in0 ? %s : (%s)0;", T, la.data, T);
        line(G, o, "const %s tl_b = tl_in1 ? %s : (%s)0;", T, lb.data, T);
        tile_sb_free(&la);
        tile_sb_free(&lb);
        if (is_float(ct)) {
            line(G, o, "const %s tl_p = tl_a * tl_b;", T);
            line(G, o, "tl_acc = tl_acc + tl_p;");
        } else {
            const char *U = uwide(ct);
            line(G, o, "tl_acc = (%s)((%s)tl_acc + (%s)tl_a * (%s)tl_b);", T, U, U, U);
        }
        G->ind--;
        line(G, o, "}");
        store_at(G, o, C->buf, "tl_o2", "tl_acc", ct);
        G->ind--;
        line(G, o, "}");
        break;
    }
    case IR_S_REDUCE: {
        if (gen_reduce_warp(G, o, s, tid)) break;
        const ir_region *src = &s->regions[0], *dst = &s->regions[1];
        int R = src->buf->rank, dim = s->dim;
        if (dim < 0 || dim >= R) {
            gfail(G, s->loc, "reduce: dim %d out of range", dim);
            break;
        }
        region_prep(G, o, src, 0);
        region_prep(G, o, dst, 1);
        tile_strbuf nout = {0};
        tile_sb_puts(&nout, "(int64_t)1");
        for (int d = 0; d < R; d++)
            if (d != dim) tile_sb_printf(&nout, " * tl_e0_%d", d);
        line(G, o, "const int64_t tl_nout = %s, tl_len = tl_e0_%d;", nout.data, dim);
        tile_sb_free(&nout);
        int site = add_site(G, s->loc, SIMT_SITE_SHAPE, "reduce: the reduction gives %lld elements but the destination has %lld");
        line(G, o, "if (tl_nout != tl_c1) tl_fail(tl_err, %d, tl_nout, tl_c1, 0);", site);
        line(G, o, "else for (int64_t tl_q = %s; tl_q < tl_nout; tl_q += %s) {", tid, nth);
        G->ind++;
        region_pos(G, o, dst, 1, "tl_q");
        line(G, o, "if (!tl_in1) continue;");
        /* source positions of the other dims, row-major */
        line(G, o, "int64_t tl_rr = tl_q;");
        for (int d = R - 1; d >= 0; d--) {
            if (d == dim) continue;
            line(G, o, "const int64_t tl_t%d = tl_s0_%d + tl_rr %% tl_e0_%d; tl_rr /= tl_e0_%d;", d, d, d, d);
        }
        tile_dtype ct = compute_dt(dst->buf->dtype);
        const char *T = vtype(ct);
        bool fl = is_float(ct), u = is_uns(ct);
        int op = s->reduce_op;
        if (!s->clear) {
            tile_strbuf l = {0};
            loaded_as(G, &l, dst->buf, "tl_o1", ct);
            line(G, o, "%s tl_acc = %s;", T, l.data);
            tile_sb_free(&l);
        } else if (fl) {
            const char *init = op == IR_RED_MAX ? "-INFINITY" : op == IR_RED_MIN ? "INFINITY" : "0";
            if (op == IR_RED_MAX || op == IR_RED_MIN) {
                tile_strbuf lit = {0};
                if (ct == TILE_DT_F64) f64_lit(&lit, op == IR_RED_MAX ? -INFINITY : INFINITY);
                else f32_lit(&lit, op == IR_RED_MAX ? -INFINITY : INFINITY);
                line(G, o, "%s tl_acc = %s;", T, lit.data);
                tile_sb_free(&lit);
            } else line(G, o, "%s tl_acc = (%s)%s;", T, T, init);
        } else {
            int b = bits_of(ct);
            int64_t imin = u ? 0 : (b >= 64 ? INT64_MIN : -((int64_t)1 << (b - 1)));
            int64_t imax = u ? (b >= 64 ? -1 : (int64_t)(((uint64_t)1 << b) - 1)) : (b >= 64 ? INT64_MAX : ((int64_t)1 << (b - 1)) - 1);
            if (ct == TILE_DT_BOOL) { imin = 0; imax = 1; }
            tile_strbuf lit = {0};
            int_lit(&lit, ct, op == IR_RED_MAX ? imin : op == IR_RED_MIN ? imax : 0);
            line(G, o, "%s tl_acc = %s;", T, lit.data);
            tile_sb_free(&lit);
        }
        line(G, o, "for (int64_t tl_kk = 0; tl_kk < tl_len; tl_kk++) {");
        G->ind++;
        reduce_src_offset(G, o, R, dim);
        tile_strbuf l = {0};
        loaded_as(G, &l, src->buf, "tl_o0", ct);
        line(G, o, "%s tl_x = %s;", T, l.data);
        tile_sb_free(&l);
        bool isabs = op == IR_RED_ABSSUM || op == IR_RED_ABSMAX;
        bool sum = op == IR_RED_SUM || op == IR_RED_ABSSUM;
        const char *f = G->cuda && ct == TILE_DT_F32 ? "f" : "";
        if (fl) {
            if (isabs) line(G, o, "tl_x = fabs%s(tl_x);", f);
            if (sum) line(G, o, "tl_acc = tl_acc + tl_x;");
            else line(G, o, "tl_acc = %s%s(tl_acc, tl_x);", op == IR_RED_MIN ? "fmin" : "fmax", f);
        } else {
            if (isabs && !u) line(G, o, "if (tl_x < 0) tl_x = (%s)((%s)0 - (%s)tl_x);", T, uwide(ct), uwide(ct));
            if (sum) line(G, o, "tl_acc = (%s)((%s)tl_acc + (%s)tl_x);", T, uwide(ct), uwide(ct));
            else line(G, o, "tl_acc = (tl_x %s tl_acc) ? tl_x : tl_acc;", op == IR_RED_MIN ? "<" : ">");
        }
        G->ind--;
        line(G, o, "}");
        store_at(G, o, dst->buf, "tl_o1", "tl_acc", ct);
        G->ind--;
        line(G, o, "}");
        break;
    }
    default: gfail(G, s->loc, "internal: not a tile op");
    }
    G->ind--;
    line(G, o, "}");
}

/* ---------- kernels ---------- */
static int buf_index(simt_program *P, const ir_buffer *b);

/* ---------- the interface of simt_gen.h (architecture-specific lowerings) ---------- */
void simt_g_expr(gen *G, tile_strbuf *o, const ir_expr *e) { ex(G, o, e); }
void simt_g_var(tile_strbuf *o, const ir_var *v) { var_name(o, v); }
void simt_g_buf(tile_strbuf *o, const ir_buffer *b) { buf_name(o, b); }
void simt_g_store(gen *G, tile_strbuf *o, int indent, const ir_buffer *b, const char *off, const char *v, tile_dtype vd) {
    int save = G->ind;
    G->ind = indent;
    store_at(G, o, b, off, v, vd);
    G->ind = save;
}
int simt_g_bufarg(gen *G, const ir_buffer *b) { return buf_index(G->P, b); }
void simt_g_set_load_hook(gen *G, simt_load_hook fn, void *ctx) { G->load_hook = fn; G->load_hook_ctx = ctx; }
const simt_options *simt_g_options(gen *G) { return G->o; }

void simt_g_prepare_regs(gen *G, const ir_stmt *k) {
    rf_analyse(G, k->body[0]);
    for (int i = 0; i < G->f->nbuffers; i++)
        if (G->rf[i]) G->space[i] = SP_PRIVATE;
}

bool simt_g_nest_ok(gen *G, const ir_stmt *s) {
    if (!s || s->kind != IR_S_FOR || s->loop_kind != IR_LOOP_PARALLEL || !s->lower || !s->lower->layout) return false;
    nest_info ni;
    nest_collect(s, &ni);
    if (!ni.cnst || ni.n != s->lower->layout->rank) return false;
    return rf_touch(G, s, 0) && stmt_local(G, s);
}

bool simt_g_var_range(gen *G, const ir_var *v, const ir_expr *lo, const ir_expr *ext) { return vr_loop(G, v, lo, ext); }
void simt_g_var_range_clear(gen *G, const ir_var *v) { vr_clear(G, v); }

void simt_g_block(gen *G, tile_strbuf *o, int indent, const char *lt, const ir_stmt *s) {
    int was_ind = G->ind;
    const char *was_lt = G->lt;
    G->ind = indent;
    G->lt = lt;
    gen_block(G, o, s);
    G->ind = was_ind;
    G->lt = was_lt;
}
void simt_g_fail(gen *G, tile_loc loc, const char *msg) { gfail(G, loc, "%s", msg); }
const ir_func *simt_g_func(gen *G) { return G->f; }

/* Every T.gemm under s: the wgmma lowering the layout pass planned was declined (why). */
static void sm90_declined(gen *G, const ir_stmt *s, const char *why) {
    if (!s) return;
    if (s->kind == IR_S_GEMM) ir_explain_stmt(G->f, s, "sm90", IR_DEC_DECLINED, "wgmma (Hopper tensor cores; the layout pass planned it)", "%s", why);
    for (int i = 0; i < s->nbody && s->body; i++) sm90_declined(G, s->body[i], why);
}

static void dialect_header(gen *G, tile_strbuf *o) {
    if (G->cuda) {
        tile_sb_puts(o,
                     "#define TL_CUDA 1\n#define TL_FP64 1\n"
                     "typedef signed char int8_t; typedef unsigned char uint8_t; typedef short int16_t; typedef unsigned short uint16_t;\n"
                     "typedef int int32_t; typedef unsigned int uint32_t; typedef long long int64_t; typedef unsigned long long uint64_t;\n"
                     "#define TL_FN static __device__ inline\n#define TL_GLOBAL\n#define TL_LOCAL\n"
                     "#define TL_FMT_DECL static const\n#define TL_FMT_PTR const tcv_fmt *\n"
                     "#define TL_EXPF(x) expf(x)\n#define TL_FLOORF(x) floorf(x)\n"
                     "#define TL_F32_BITS(u) __uint_as_float((unsigned int)(u))\n"
                     "#define TL_F64_BITS(u) __longlong_as_double((long long)(u))\n"
                     "#define TL_BITS_F32(x) __float_as_uint(x)\n"
                     "#define TL_BITS_F64(x) ((uint64_t)__double_as_longlong(x))\n"
                     "#define TL_BARRIER() __syncthreads()\n"
                     "#define INFINITY __int_as_float(0x7f800000)\n"
                     "#define __builtin_clzll(x) __clzll((long long)(x))\n#define __builtin_clz(x) __clz((int)(x))\n");
    } else {
        tile_sb_puts(o, "#define TL_OPENCL 1\n");
        if (G->o->fp64) tile_sb_puts(o, "#define TL_FP64 1\n#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n");
        if (G->o->atom64) tile_sb_puts(o, "#define TL_ATOM64 1\n#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable\n");
        tile_sb_puts(o,
                     "#pragma OPENCL FP_CONTRACT OFF\n"
                     "typedef char int8_t; typedef uchar uint8_t; typedef short int16_t; typedef ushort uint16_t;\n"
                     "typedef int int32_t; typedef uint uint32_t; typedef long int64_t; typedef ulong uint64_t;\n"
                     "#define TL_FN static inline\n#define TL_GLOBAL __global\n#define TL_LOCAL __local\n"
                     "#define TL_FMT_DECL __constant\n#define TL_FMT_PTR __constant tcv_fmt *\n"
                     "#define TL_EXPF(x) exp(x)\n#define TL_FLOORF(x) floor(x)\n"
                     "#define TL_F32_BITS(u) as_float((uint)(u))\n#define TL_F64_BITS(u) as_double((ulong)(u))\n"
                     "#define TL_BITS_F32(x) as_uint(x)\n#define TL_BITS_F64(x) as_ulong(x)\n"
                     "#define TL_BARRIER() barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)\n"
                     "static inline void tl_memcpy_p(void *d, const void *s, size_t n) {\n"
                     "    for (size_t i = 0; i < n; i++) ((uchar *)d)[i] = ((const uchar *)s)[i];\n}\n"
                     "#define memcpy(d, s, n) tl_memcpy_p((void *)(d), (const void *)(s), (n))\n"
                     "#define __builtin_clzll(x) ((int)clz((ulong)(x)))\n#define __builtin_clz(x) ((int)clz((uint)(x)))\n"
                     "#define half tcv_half_ /* a type name in OpenCL C; a variable of convert.h */\n");
    }
}

/* Whether a declaration's code (its comments skipped) uses the type double. */
static bool mentions_double(const char *s) {
    while (*s) {
        if (s[0] == '/' && s[1] == '*') {
            const char *e = strstr(s + 2, "*/");
            s = e ? e + 2 : s + strlen(s);
        } else if (s[0] == '/' && s[1] == '/') {
            while (*s && *s != '\n') s++;
        } else if (!strncmp(s, "double", 6) && !(isalnum((unsigned char)s[6]) || s[6] == '_')) {
            return true;
        } else {
            s++;
        }
    }
    return false;
}

/* convert.h adapted to the device: #include lines dropped, format tables in constant
 * memory, and (without fp64) every top-level declaration whose code mentions double left out. */
static void adapted_convert(gen *G, tile_strbuf *o) {
    const char *p = simt_convert_h;
    tile_strbuf chunk = {0};
    int depth = 0;
    bool drop_double = !G->o->fp64;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        tile_strbuf ln = {0};
        for (size_t i = 0; i < n; i++) tile_sb_putc(&ln, p[i]);
        const char *L = ln.data ? ln.data : "";
        p += n + (nl ? 1 : 0);
        if (!strncmp(L, "#include", 8)) { tile_sb_free(&ln); continue; }
        if (L[0] == '#' && depth == 0 && !chunk.len) {
            tile_sb_printf(o, "%s\n", L);
            tile_sb_free(&ln);
            continue;
        }
        /* rewrite the table declarations and parameters */
        tile_strbuf fixed = {0};
        for (const char *q = L; *q;) {
            if (!strncmp(q, "static const tcv_fmt ", 21)) { tile_sb_puts(&fixed, "TL_FMT_DECL tcv_fmt "); q += 21; }
            else if (!strncmp(q, "const tcv_fmt *", 15)) { tile_sb_puts(&fixed, "TL_FMT_PTR "); q += 15; }
            else tile_sb_putc(&fixed, *q++);
        }
        tile_sb_printf(&chunk, "%s\n", fixed.data ? fixed.data : "");
        for (const char *q = L; *q; q++) {
            if (*q == '{') depth++;
            else if (*q == '}') depth--;
        }
        size_t len = strlen(L);
        while (len && (L[len - 1] == ' ' || L[len - 1] == '\t')) len--;
        bool ends = depth == 0 && len && (L[len - 1] == '}' || L[len - 1] == ';');
        bool blank = len == 0 && depth == 0;
        if (ends || blank) {
            if (!(drop_double && mentions_double(chunk.data))) tile_sb_puts(o, chunk.data);
            tile_sb_free(&chunk);
        }
        tile_sb_free(&fixed);
        tile_sb_free(&ln);
    }
    if (chunk.len && !(drop_double && mentions_double(chunk.data))) tile_sb_puts(o, chunk.data);
    tile_sb_free(&chunk);
}

static int buf_index(simt_program *P, const ir_buffer *b) {
    for (int i = 0; i < P->nbufs; i++)
        if (P->bufs[i].buf == b) return i;
    return -1;
}

static bool size_expr(const ir_expr *e) {
    if (!e) return false;
    if (e->kind == IR_E_VAR) return e->var->kind == IR_VAR_SIZE;
    if (e->kind == IR_E_LOAD || e->kind == IR_E_CALL || e->kind == IR_E_REINTERPRET) return false;
    for (int i = 0; i < e->nargs; i++)
        if (!size_expr(e->args[i])) return false;
    return true;
}

static void collect_temps(gen *G, const ir_stmt *s, bool in_kernel) {
    if (!s || G->failed) return;
    if (s->kind == IR_S_KERNEL) in_kernel = true;
    if (s->kind == IR_S_ALLOC && s->buf->scope == IR_SCOPE_GLOBAL && !in_kernel && buf_index(G->P, s->buf) < 0) {
        for (int d = 0; d < s->buf->rank; d++)
            if (!size_expr(s->buf->shape[d])) {
                gfail(G, s->loc, "the shape of '%s' depends on run-time values: the GPU targets allocate global buffers before the launch", s->buf->name);
                return;
            }
        simt_program *P = G->P;
        P->bufs = tile_xrealloc(P->bufs, sizeof(simt_buf) * (size_t)(P->nbufs + 1));
        P->bufs[P->nbufs++] = (simt_buf){s->buf, -1, -1};
    }
    for (int i = 0; i < s->nbody; i++) collect_temps(G, s->body[i], in_kernel);
}

/* One device kernel: `body` run on a grid (kernel statement k) or by one thread (k NULL). */
static void gen_kernel(gen *G, tile_strbuf *src, const ir_stmt *k, const ir_stmt *const *stmts, int nstmts) {
    const ir_func *f = G->f;
    simt_program *P = G->P;
    P->launches = tile_xrealloc(P->launches, sizeof(simt_launch) * (size_t)(P->nlaunches + 1));
    simt_launch *L = &P->launches[P->nlaunches];
    memset(L, 0, sizeof *L);
    snprintf(L->name, sizeof L->name, "tile_k%d", P->nlaunches);
    P->nlaunches++;
    L->threads = k ? (k->threads > 0 ? k->threads : 128) : 1;
    /* the layout pass's wgmma plan: its consumer warpgroups are the threads the fragments'
     * layouts are made for (the portable lowering runs them too when no wgmma lowering
     * takes the kernel) */
    if (k && k->lower && k->lower->kind && !strcmp(k->lower->kind, "wgmma-warpgroups") && k->lower->iparam[0] > 0) L->threads = 128 * k->lower->iparam[0];
    L->loc = k ? k->loc : (nstmts ? stmts[0]->loc : f->loc);
    if (k)
        for (int d = 0; d < k->ngrid && d < 3; d++) L->grid[d] = k->grid[d];
    if (k)
        for (int d = 0; d < k->ngrid; d++)
            if (!size_expr(k->grid[d])) {
                gfail(G, k->loc, "the kernel grid depends on run-time values: the GPU targets compute it before the launch");
                return;
            }
    G->threads = L->threads;
    G->smem = 0;
    G->barrier_fresh = true; /* nothing ran before the kernel's first statement */
    for (int i = 0; i < f->nbuffers; i++) {
        int a = buf_index(P, f->buffers[i]);
        G->space[i] = a >= 0 ? SP_GLOBAL : SP_NONE;
        G->soff[i] = 0;
    }
    for (int i = 0; i < f->nvars; i++) G->slot[i] = -1;
    for (int i = 0; i < f->nvars; i++) G->priv[i] = false;
    G->red_off = -1;
    G->redw_off = -1;
    for (int i = 0; i < f->nbuffers; i++) G->rf[i] = RF_NONE;
    G->rf_rmax = 0;
    G->rf_wtot = 0;
    G->lt = "tl_tid";
    G->rfn = NULL;
    G->rfn_ni = NULL;
    G->rf_rep0 = NULL;
    G->blk_loop = 0;
    snprintf(L->lowering, sizeof L->lowering, "simt");

    /* integer ranges: block indices of a constant grid; variables assigned once */
    for (int i = 0; i < f->nvars; i++) {
        G->vr_ok[i] = false;
        G->nassign[i] = 0;
    }
    if (k) {
        count_assign(G, k->body[0]);
        for (int d = 0; d < k->ngrid; d++) {
            int64_t g;
            if (ir_const_int_value(k->grid[d], &g) && g >= 1 && g <= INT32_MAX) {
                G->vr_ok[k->block_vars[d]->id] = true;
                G->vr_lo[k->block_vars[d]->id] = 0;
                G->vr_hi[k->block_vars[d]->id] = g - 1;
            }
        }
    } else
        for (int i = 0; i < nstmts; i++) count_assign(G, stmts[i]);
    tile_strbuf body = {0}, helpers = {0};
    /* Hopper: a GEMM main loop becomes TMA + mbarrier ring + warp-specialised wgmma; sm_80 and
     * later (and sm_90a when wgmma declines, or first with TILE_CUDA_MMA_SYNC=1): cp.async +
     * ldmatrix + mma.sync (sm80.c) */
    bool arch = false;
    if (k && G->cuda) simt_g_prepare_regs(G, k);
    if (k && G->cuda) {
        bool mma_first = tb_opt_int(G->o->opts, TB_OPT_cuda_mma_sync) == 1;
        if (mma_first) arch = sm80_gemm_kernel(G, k, L, &helpers, &body);
        const char *wg_no = NULL;
        char at_no[200] = "";
        if (!arch && G->o->sm >= 90)
            arch = sm90_gemm_kernel(G, k, L, &helpers, &body, &wg_no) || sm90_attn_kernel(G, k, L, &helpers, &body, at_no, sizeof at_no);
        /* the layout pass planned wgmma (its warpgroups and accumulator layouts are in the IR)
         * but neither Hopper lowering took the kernel: say so where `tile ir --explain` and
         * TILE_LOG=info report, naming both lowerings' reasons */
        if (!arch && G->o->sm >= 90 && simt_wg_plan(k, NULL) > 0) {
            char both[480];
            snprintf(both, sizeof both, "GEMM lowering: %s; attention lowering: %s", wg_no ? wg_no : "not a GEMM main loop",
                     at_no[0] ? at_no : "not an attention kernel");
            sm90_declined(G, k->body[0], both);
        }
        if (!arch && !mma_first) arch = sm80_gemm_kernel(G, k, L, &helpers, &body);
    }
    if (!arch && !G->failed) {
        if (k) mark_private(G, k->body[0], false);
        if (k) rf_analyse(G, k->body[0]);
        if (k) walk_allocs(G, k->body[0], true, place_alloc);
        else
            for (int i = 0; i < nstmts; i++) walk_allocs(G, stmts[i], false, place_alloc);
        G->ind = 1;
        if (k && !G->failed) gen_block(G, &body, k->body[0]);
        else if (!G->failed)
            for (int i = 0; i < nstmts; i++) gen_thread(G, &body, stmts[i]);
    }
    if (G->failed) {
        tile_sb_free(&body);
        tile_sb_free(&helpers);
        return;
    }
    long rfw_off = -1, rfx_off = -1;
    if (!arch && G->rf_rmax > 0) {
        G->smem = (G->smem + 15) & ~(size_t)15;
        rfw_off = (long)G->smem;
        G->smem += (size_t)G->rf_wtot * 4 + 4;
    }
    if (!arch) L->smem = G->smem ? (G->smem + 15) & ~(size_t)15 : 16;
    tile_sb_puts(src, helpers.data ? helpers.data : "");
    tile_sb_free(&helpers);

    /* signature (the comment is the launch plan, for tools that read the source) */
    tile_sb_printf(src, "\n/* tl-launch %s threads=%d smem=%zu lowering=%s tma=%d persistent=%d */", L->name, L->threads, L->smem, L->lowering, L->ntma,
                   L->persistent ? (L->blocks_per_sm > 1 ? L->blocks_per_sm : 1) : 0);
    if (arch) tile_sb_printf(src, "\nTL_KERNEL void __launch_bounds__(%d, %d) %s(", L->threads, L->blocks_per_sm > 1 ? L->blocks_per_sm : 1, L->name);
    else if (G->cuda) /* the block size bounds threadIdx.x for the compiler (and its registers) */
        tile_sb_printf(src, "\nTL_KERNEL void __launch_bounds__(%d) %s(", L->threads, L->name);
    else tile_sb_printf(src, "\nTL_KERNEL void %s(", L->name);
    for (int i = 0; i < P->nbufs; i++) tile_sb_printf(src, "TL_GLOBAL uint8_t *%stl_b%d, ", G->cuda ? "__restrict__ " : "", i);
    tile_sb_puts(src, "TL_GLOBAL const int64_t *tl_scal, TL_GLOBAL int64_t *tl_err");
    for (int i = 0; i < L->ntma; i++) tile_sb_printf(src, ", const __grid_constant__ tl_tmap tl_tma%d", i);
    if (!G->cuda) tile_sb_puts(src, ", __local uint8_t *tl_smem");
    tile_sb_puts(src, ") {\n");
    if (G->cuda)
        tile_sb_puts(src, "    extern __shared__ __align__(16) uint8_t tl_smem[];\n"
                          "    const int tl_tid = (int)threadIdx.x; const int64_t tl_blk = (int64_t)blockIdx.x;\n");
    else tile_sb_puts(src, "    const int tl_tid = (int)get_local_id(0); const int64_t tl_blk = (int64_t)get_group_id(0);\n");
    tile_sb_printf(src, "    const int tl_nth = %d;\n    (void)tl_nth; (void)tl_blk; (void)tl_smem;\n", L->threads);
    tile_sb_puts(src, "    int tl_es = 0; int64_t tl_ea = 0, tl_eb = 0, tl_ec = 0; (void)tl_es; (void)tl_ea; (void)tl_eb; (void)tl_ec;\n");
    for (int i = 0; i < P->nbufs; i++) {
        const ir_buffer *b = P->bufs[i].buf;
        tile_strbuf n = {0};
        buf_name(&n, b);
        tile_sb_printf(src, "    TL_GLOBAL %s *%s = (TL_GLOBAL %s *)tl_b%d; (void)%s;\n", stype(b->dtype), n.data, stype(b->dtype), i, n.data);
        tile_sb_free(&n);
    }
    for (int i = 0; i < f->nsizes; i++) {
        tile_strbuf n = {0};
        var_name(&n, f->sizes[i]);
        tile_sb_printf(src, "    const %s %s = (%s)tl_scal[%d]; (void)%s;\n", vtype(f->sizes[i]->dtype), n.data, vtype(f->sizes[i]->dtype), i, n.data);
        tile_sb_free(&n);
    }
    for (int i = 0; i < f->nparams; i++) {
        const ir_var *v = f->params[i].var;
        if (!v) continue;
        tile_strbuf n = {0};
        var_name(&n, v);
        int slot = f->nsizes + i;
        if (v->dtype == TILE_DT_F64) {
            G->uses_f64 = true;
            tile_sb_printf(src, "    const double %s = TL_F64_BITS((uint64_t)tl_scal[%d]);", n.data, slot);
        } else if (is_float(v->dtype))
            tile_sb_printf(src, "    const float %s = TL_F32_BITS((uint32_t)tl_scal[%d]);", n.data, slot);
        else if (v->dtype == TILE_DT_BOOL)
            tile_sb_printf(src, "    const int %s = tl_scal[%d] != 0;", n.data, slot);
        else tile_sb_printf(src, "    const %s %s = (%s)tl_scal[%d];", vtype(v->dtype), n.data, vtype(v->dtype), slot);
        tile_sb_printf(src, " (void)%s;\n", n.data);
        tile_sb_free(&n);
    }
    /* locals and loop variables (per thread) */
    for (int i = 0; i < f->nvars; i++) {
        const ir_var *v = f->vars[i];
        if (v->kind != IR_VAR_LOCAL && v->kind != IR_VAR_LOOP) continue;
        tile_strbuf n = {0};
        var_name(&n, v);
        if (v->dtype == TILE_DT_F64) G->uses_f64 = true;
        tile_sb_printf(src, "    %s %s = 0; (void)%s;\n", vtype(v->dtype), n.data, n.data);
        tile_sb_free(&n);
    }
    if (k) {
        tile_sb_puts(src, "    int64_t tl_rb = tl_blk; (void)tl_rb;\n");
        for (int d = 0; d < k->ngrid; d++) {
            tile_strbuf g = {0}, n = {0};
            ex(G, &g, k->grid[d]);
            var_name(&n, k->block_vars[d]);
            tile_sb_printf(src, "    const int64_t tl_g%d = (int64_t)(%s);\n", d, g.data);
            tile_sb_printf(src, "    %sint32_t %s = (int32_t)(tl_rb %% tl_g%d); tl_rb /= tl_g%d; (void)%s;\n", L->persistent ? "" : "const ", n.data, d, d, n.data);
            tile_sb_free(&g);
            tile_sb_free(&n);
        }
    }
    for (int i = 0; i < f->nbuffers; i++) {
        if (G->space[i] != SP_SHARED) continue;
        const ir_buffer *b = f->buffers[i];
        tile_strbuf n = {0};
        buf_name(&n, b);
        if (b->dtype == TILE_DT_F64) G->uses_f64 = true;
        tile_sb_printf(src, "    TL_LOCAL %s *%s = (TL_LOCAL %s *)(tl_smem + %zu);\n", stype(b->dtype), n.data, stype(b->dtype), G->soff[i]);
        tile_sb_free(&n);
    }
    if (G->red_off >= 0) tile_sb_printf(src, "    TL_LOCAL float *tl_red = (TL_LOCAL float *)(tl_smem + %ld);\n", G->red_off);
    if (G->redw_off >= 0) tile_sb_printf(src, "    TL_LOCAL float *tl_redw = (TL_LOCAL float *)(tl_smem + %ld);\n", G->redw_off);
    if (rfw_off >= 0) tile_sb_printf(src, "    TL_LOCAL float *tl_rfw = (TL_LOCAL float *)(tl_smem + %ld);\n", rfw_off);
    if (rfx_off >= 0) tile_sb_printf(src, "    TL_LOCAL float *tl_rfx = (TL_LOCAL float *)(tl_smem + %ld);\n", rfx_off);
    if (G->decls.data) tile_sb_puts(src, G->decls.data);
    tile_sb_free(&G->decls);
    tile_sb_puts(src, body.data ? body.data : "");
    tile_sb_puts(src, "}\n");
    tile_sb_free(&body);
}

int simt_generate(const ir_func *f, const simt_options *o, simt_program *out, tile_strbuf *err) {
    memset(out, 0, sizeof *out);
    simt_options dflt;
    if (!o) {
        simt_options_default(&dflt, SIMT_OPENCL, f->opts);
        o = &dflt;
    }
    gen G;
    memset(&G, 0, sizeof G);
    G.f = f;
    G.o = o;
    G.P = out;
    G.err = err;
    G.cuda = o->dialect == SIMT_CUDA;
    size_t nb = (size_t)f->nbuffers + 1, nv = (size_t)f->nvars + 1;
    G.space = tile_xcalloc(nb, 1);
    G.soff = tile_xcalloc(nb, sizeof(size_t));
    G.bufarg = tile_xcalloc(nb, sizeof(int));
    G.slot = tile_xcalloc(nv, sizeof(long));
    G.priv = tile_xcalloc(nv, sizeof(bool));
    G.rf = tile_xcalloc(nb, 1);
    G.vr_ok = tile_xcalloc(nv, sizeof(bool));
    G.vr_lo = tile_xcalloc(nv, sizeof(int64_t));
    G.vr_hi = tile_xcalloc(nv, sizeof(int64_t));
    G.nassign = tile_xcalloc(nv, sizeof(int));
    G.gacc = tile_xcalloc(nb, 1);
    out->nscalars = f->nsizes + f->nparams;
    /* buffers the kernels take: tensor parameters, returned tensors, global temporaries */
    for (int i = 0; i < f->nparams; i++)
        if (f->params[i].buf) {
            out->bufs = tile_xrealloc(out->bufs, sizeof(simt_buf) * (size_t)(out->nbufs + 1));
            out->bufs[out->nbufs++] = (simt_buf){f->params[i].buf, i, -1};
        }
    for (int i = 0; i < f->nrets; i++) {
        out->bufs = tile_xrealloc(out->bufs, sizeof(simt_buf) * (size_t)(out->nbufs + 1));
        out->bufs[out->nbufs++] = (simt_buf){f->rets[i], -1, i};
    }
    collect_temps(&G, f->body, false);

    tile_strbuf src = {0};
    tile_sb_printf(&src, "/* Generated by tile (src/codegen/simt.c) from '%s' for %s. */\n", f->name, G.cuda ? "CUDA" : "OpenCL");
    dialect_header(&G, &src);
    tile_sb_puts(&src, "/* ---- src/base/convert.h (adapted) ---- */\n");
    adapted_convert(&G, &src);
    if (!G.cuda) tile_sb_puts(&src, "#undef half\n");
    tile_sb_puts(&src, "/* ---- src/codegen/simt_prelude.h ---- */\n");
    tile_sb_puts(&src, G.cuda ? "#define TL_KERNEL extern \"C\" __global__\n" : "#define TL_KERNEL __kernel\n");
    tile_sb_puts(&src, simt_prelude_h);
    tile_sb_puts(&src, "/* ---- kernels ---- */\n");

    /* top level: each T.Kernel is a launch; runs of other statements are serial launches */
    const ir_stmt *top = f->body;
    const ir_stmt *one[1] = {top};
    const ir_stmt *const *items = one;
    int nitems = 1;
    if (top && top->kind == IR_S_SEQ) {
        items = (const ir_stmt *const *)top->body;
        nitems = top->nbody;
    }
    int run = -1;
    for (int i = 0; i <= nitems && !G.failed; i++) {
        bool kernel = i < nitems && items[i] && items[i]->kind == IR_S_KERNEL;
        if (i == nitems || kernel) {
            if (run >= 0) {
                /* skip runs that do nothing on the device (only global ALLOCs) */
                bool work = false;
                for (int j = run; j < i; j++)
                    if (items[j] && !(items[j]->kind == IR_S_ALLOC && items[j]->buf->scope == IR_SCOPE_GLOBAL)) work = true;
                if (work) gen_kernel(&G, &src, NULL, items + run, i - run);
                run = -1;
            }
            if (kernel) gen_kernel(&G, &src, items[i], NULL, 0);
        } else if (run < 0) run = i;
    }
    if (!G.failed && G.uses_f64 && !o->fp64)
        gfail(&G, f->loc, "'%s' computes in float64, but this device does not support double precision (OpenCL: cl_khr_fp64)", f->name);
    out->nsites = G.sites.len;
    out->sites = tile_xcalloc((size_t)G.sites.len + 1, sizeof(simt_site));
    for (int i = 0; i < G.sites.len; i++) {
        out->sites[i] = *(simt_site *)G.sites.items[i];
        free(G.sites.items[i]);
    }
    tile_vec_free(&G.sites);
    free(G.space);
    free(G.soff);
    free(G.bufarg);
    free(G.slot);
    free(G.priv);
    free(G.rf);
    free(G.vr_ok);
    free(G.vr_lo);
    free(G.vr_hi);
    free(G.nassign);
    free(G.gacc);
    out->source = src.data ? src.data : tile_xstrdup("");
    if (G.failed) {
        simt_program_free(out);
        return 1;
    }
    return 0;
}

void simt_program_free(simt_program *p) {
    if (!p) return;
    free(p->source);
    free(p->bufs);
    free(p->launches);
    free(p->sites);
    memset(p, 0, sizeof *p);
}

void simt_pack_scalars(const ir_func *f, const int64_t *sizes, const double *scalars, int64_t *table) {
    for (int i = 0; i < f->nsizes; i++) table[i] = sizes ? sizes[i] : 0;
    for (int i = 0; i < f->nparams; i++) {
        int64_t *t = &table[f->nsizes + i];
        *t = 0;
        const ir_var *v = f->params[i].var;
        if (!v) continue;
        double x = scalars ? scalars[i] : 0.0;
        if (v->dtype == TILE_DT_F64) memcpy(t, &x, 8);
        else if (is_float(v->dtype)) {
            float y = (float)tile_round_to(v->dtype, x);
            uint32_t u;
            memcpy(&u, &y, 4);
            *t = (int64_t)u;
        } else if (v->dtype == TILE_DT_BOOL) *t = x != 0;
        else *t = tile_f64_to_int(v->dtype, x);
    }
}

void simt_format_error(const simt_program *p, const int64_t *err, tile_strbuf *out) {
    int site = (int)err[1];
    if (site < 0 || site >= p->nsites) {
        tile_sb_printf(out, "error: a kernel reported an error at an unknown place (%d)\n", site);
        return;
    }
    const simt_site *s = &p->sites[site];
    tile_strbuf m = {0};
    switch (s->kind) {
    case SIMT_SITE_READ:
    case SIMT_SITE_WRITE:
        tile_sb_printf(&m, "out-of-bounds %s of %s: index %lld in dimension %lld, which has size %lld", s->kind == SIMT_SITE_READ ? "read" : "write",
                       s->what ? s->what : "?", (long long)err[3], (long long)err[2], (long long)err[4]);
        break;
    case SIMT_SITE_DIV:
        tile_sb_puts(&m, err[2] == 0 ? "integer division by zero" : err[2] == 1 ? "integer modulo by zero" : "integer zero raised to a negative power");
        break;
    case SIMT_SITE_ASSERT: tile_sb_printf(&m, "assertion failed: %s", s->what ? s->what : "(no message)"); break;
    default:
#ifdef __clang__
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wformat-nonliteral"
#else
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
#endif
        tile_sb_printf(&m, s->what ? s->what : "shape mismatch (%lld, %lld)", (long long)err[2], (long long)err[3]);
#ifdef __clang__
#pragma clang diagnostic pop
#else
#pragma GCC diagnostic pop
#endif
        break;
    }
    tile_sb_puts(&m, " (on the device)");
    tile_diag dg = {TILE_DIAG_ERROR, s->loc, m.data};
    tile_diag_format(&dg, out);
    tile_sb_free(&m);
}
