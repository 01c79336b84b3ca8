/* print.c — the text form of Tile IR (what `tile ir` prints).
 *
 * Python-like and stable (golden tests depend on it):
 *
 *   func gemm(A: float16[M, K], B: float16[K, N]) -> (C: float32[M, N])  # form=tile
 *     sizes: M, N, K
 *     kernel grid ((N + 63) // 64, (M + 63) // 64) threads=128 as (bx, by):
 *       alloc A_s: float16[64, 32] shared
 *       fill C_l = 0.0f
 *       for k in pipelined(0, (K + 31) // 32, stages=3):
 *         copy A[by * 64 : +64, k * 32 : +32] -> A_s
 *         gemm A_s, B_s -> C_l (trans_b)
 *       for i, j in parallel(64, 64):
 *         C[by * 64 + i, bx * 64 + j] = C_l[i, j]
 *
 * Conventions
 *   - A region covering a whole buffer (starts 0, extents equal to the shape) prints as the
 *     bare buffer name; otherwise `buf[start : +extent, ...]`.
 *   - for loops: `serial(lo, end)` (end = lo + extent, folded when constant); a T.Parallel
 *     group of depth n prints as one line `for i, j in parallel(e0, e1):` (an entry is
 *     `range(lo, end)` when its lo is not 0).
 *   - The first assignment of a local (in tree order) declares it: `acc: float32 = 0.0f`.
 *   - Constants: bool True/False, int32 `3`, other integers with a suffix (`3i64`, `7u8`),
 *     float32 `1.0f`, float64 `1.0`, other floats as a cast `(float16)1.5`; specials
 *     `inf`, `nan` (f64) / `inff`, `nanf` (f32).
 *   - Casts `(bfloat16)x`, bit casts `reinterpret<float16>(x)`, select `select(c, a, b)`,
 *     min/max and intrinsics as calls; binary operators use Python precedence with minimal
 *     parentheses. */
#include "ir.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const unop_str[] = {
#define X(e, s) s,
    IR_UNOPS(X)
#undef X
};
static const char *const binop_str[] = {
#define X(e, s) s,
    IR_BINOPS(X)
#undef X
};

static const char *dt_name(tile_dtype dt) {
    if ((int)dt < 0 || dt >= TILE_DT_COUNT) return "?";
    return tile_dtype_name(dt);
}

/* ---------- numbers ---------- */
static void put_float(tile_strbuf *sb, double v, bool single) {
    if (isnan(v)) { tile_sb_puts(sb, single ? "nanf" : "nan"); return; }
    if (isinf(v)) { tile_sb_puts(sb, v < 0 ? (single ? "-inff" : "-inf") : (single ? "inff" : "inf")); return; }
    char buf[64];
    int maxp = single ? 9 : 17;
    for (int p = 1; p <= maxp; p++) {
        snprintf(buf, sizeof buf, "%.*g", p, v);
        double back = strtod(buf, NULL);
        if (single ? ((float)back == (float)v) : (back == v)) break;
    }
    tile_sb_puts(sb, buf);
    if (!strpbrk(buf, ".eEni")) tile_sb_puts(sb, ".0");
    if (single) tile_sb_putc(sb, 'f');
}

static const char *int_suffix(tile_dtype dt) {
    switch (dt) {
    case TILE_DT_I8: return "i8";
    case TILE_DT_I16: return "i16";
    case TILE_DT_I64: return "i64";
    case TILE_DT_U8: return "u8";
    case TILE_DT_U16: return "u16";
    case TILE_DT_U32: return "u32";
    case TILE_DT_U64: return "u64";
    default: return "";
    }
}

static bool const_is_negative(const ir_expr *e) {
    if ((int)e->dtype < 0 || e->dtype >= TILE_DT_COUNT) return false;
    if (tile_dtype_is_float(e->dtype)) return signbit(e->fval) && !isnan(e->fval);
    if (e->dtype == TILE_DT_U64 || e->dtype == TILE_DT_BOOL) return false;
    return e->ival < 0;
}

static void put_const(tile_strbuf *sb, const ir_expr *e) {
    tile_dtype dt = e->dtype;
    if ((int)dt < 0 || dt >= TILE_DT_COUNT) { tile_sb_printf(sb, "<const of bad dtype %d>", (int)dt); return; }
    if (dt == TILE_DT_BOOL) { tile_sb_puts(sb, e->ival ? "True" : "False"); return; }
    if (tile_dtype_is_float(dt)) {
        if (dt == TILE_DT_F32) put_float(sb, e->fval, true);
        else if (dt == TILE_DT_F64) put_float(sb, e->fval, false);
        else {
            tile_sb_printf(sb, "(%s)", dt_name(dt));
            put_float(sb, e->fval, false);
        }
        return;
    }
    if (dt == TILE_DT_U64) tile_sb_printf(sb, "%llu", (unsigned long long)e->ival);
    else tile_sb_printf(sb, "%lld", (long long)e->ival);
    tile_sb_puts(sb, int_suffix(dt));
}

/* ---------- expressions ---------- */
enum {
    P_LOWEST = 0, P_OR = 1, P_AND = 2, P_NOT = 3, P_CMP = 4, P_BOR = 5, P_BXOR = 6, P_BAND = 7,
    P_SHIFT = 8, P_ADD = 9, P_MUL = 10, P_UNARY = 11, P_POW = 12, P_ATOM = 13
};

static int binop_prec(int op) {
    switch (op) {
    case IR_B_OR: return P_OR;
    case IR_B_AND: return P_AND;
    case IR_B_LT: case IR_B_LE: case IR_B_GT: case IR_B_GE: case IR_B_EQ: case IR_B_NE: return P_CMP;
    case IR_B_BITOR: return P_BOR;
    case IR_B_BITXOR: return P_BXOR;
    case IR_B_BITAND: return P_BAND;
    case IR_B_SHL: case IR_B_SHR: return P_SHIFT;
    case IR_B_ADD: case IR_B_SUB: return P_ADD;
    case IR_B_MUL: case IR_B_DIV: case IR_B_FLOORDIV: case IR_B_FLOORMOD: return P_MUL;
    case IR_B_POW: return P_POW;
    default: return P_ATOM; /* min/max print as calls */
    }
}

static int expr_prec(const ir_expr *e) {
    if (!e) return P_ATOM;
    switch (e->kind) {
    case IR_E_CONST: return const_is_negative(e) ? P_UNARY : P_ATOM;
    case IR_E_UNARY: return e->op == IR_U_NOT ? P_NOT : P_UNARY;
    case IR_E_BINARY: return binop_prec(e->op);
    case IR_E_CAST: return P_UNARY;
    default: return P_ATOM;
    }
}

static void put_expr(tile_strbuf *sb, const ir_expr *e, int depth);

static void put_sub(tile_strbuf *sb, const ir_expr *e, int min_prec, int depth) {
    bool paren = expr_prec(e) < min_prec;
    if (paren) tile_sb_putc(sb, '(');
    put_expr(sb, e, depth + 1);
    if (paren) tile_sb_putc(sb, ')');
}

static const ir_expr *arg(const ir_expr *e, int i) {
    return (e->args && i < e->nargs) ? e->args[i] : NULL;
}

static void put_args(tile_strbuf *sb, const ir_expr *e, int depth) {
    for (int i = 0; i < e->nargs; i++) {
        if (i) tile_sb_puts(sb, ", ");
        put_expr(sb, arg(e, i), depth + 1);
    }
}

static void put_expr(tile_strbuf *sb, const ir_expr *e, int depth) {
    if (!e) { tile_sb_puts(sb, "<null>"); return; }
    if (depth > 200) { tile_sb_puts(sb, "..."); return; }
    switch (e->kind) {
    case IR_E_CONST: put_const(sb, e); break;
    case IR_E_VAR: tile_sb_puts(sb, e->var && e->var->name ? e->var->name : "<null var>"); break;
    case IR_E_LOAD:
        tile_sb_puts(sb, e->buf && e->buf->name ? e->buf->name : "<null buffer>");
        tile_sb_putc(sb, '[');
        put_args(sb, e, depth);
        tile_sb_putc(sb, ']');
        break;
    case IR_E_UNARY: {
        const char *s = (e->op >= 0 && e->op < IR_U_COUNT) ? unop_str[e->op] : "?";
        tile_sb_puts(sb, s);
        put_sub(sb, arg(e, 0), e->op == IR_U_NOT ? P_NOT : P_UNARY, depth);
        break;
    }
    case IR_E_BINARY: {
        if (e->op == IR_B_MIN || e->op == IR_B_MAX) {
            tile_sb_puts(sb, e->op == IR_B_MIN ? "min(" : "max(");
            put_args(sb, e, depth);
            tile_sb_putc(sb, ')');
            break;
        }
        if (e->op < 0 || e->op >= IR_B_COUNT) { tile_sb_puts(sb, "<bad binop>"); break; }
        int p = binop_prec(e->op);
        int lp = p, rp = p + 1;          /* left associative */
        if (p == P_POW) { lp = p + 1; rp = P_UNARY; } /* right associative; -x allowed on the right */
        if (p == P_CMP) lp = p + 1;      /* comparisons chain in Python: parenthesise both */
        put_sub(sb, arg(e, 0), lp, depth);
        tile_sb_printf(sb, " %s ", binop_str[e->op]);
        put_sub(sb, arg(e, 1), rp, depth);
        break;
    }
    case IR_E_SELECT:
        tile_sb_puts(sb, "select(");
        put_args(sb, e, depth);
        tile_sb_putc(sb, ')');
        break;
    case IR_E_CAST:
        tile_sb_printf(sb, "(%s)", dt_name(e->dtype));
        put_sub(sb, arg(e, 0), P_UNARY, depth);
        break;
    case IR_E_REINTERPRET:
        tile_sb_printf(sb, "reinterpret<%s>(", dt_name(e->dtype));
        put_expr(sb, arg(e, 0), depth + 1);
        tile_sb_putc(sb, ')');
        break;
    case IR_E_CALL:
        tile_sb_printf(sb, "%s(", ir_intrinsic_name((ir_intrinsic)e->op));
        put_args(sb, e, depth);
        tile_sb_putc(sb, ')');
        break;
    default: tile_sb_printf(sb, "<bad expr kind %d>", (int)e->kind); break;
    }
}

void ir_print_expr(const ir_expr *e, tile_strbuf *out) { put_expr(out, e, 0); }

/* ---------- helpers ---------- */
static bool is_zero(const ir_expr *e) {
    int64_t v;
    return ir_const_int_value(e, &v) && v == 0;
}

static bool same_int(const ir_expr *a, const ir_expr *b) {
    int64_t x, y;
    if (ir_const_int_value(a, &x) && ir_const_int_value(b, &y)) return x == y;
    return ir_expr_equal(a, b);
}

static void put_shape(tile_strbuf *sb, const ir_buffer *b) {
    tile_sb_printf(sb, "%s[", dt_name(b->dtype));
    for (int i = 0; i < b->rank; i++) {
        if (i) tile_sb_puts(sb, ", ");
        put_expr(sb, b->shape ? b->shape[i] : NULL, 0);
    }
    tile_sb_putc(sb, ']');
}

static void put_region(tile_strbuf *sb, const ir_region *r) {
    const ir_buffer *b = r->buf;
    if (!b) { tile_sb_puts(sb, "<null buffer>"); return; }
    tile_sb_puts(sb, b->name);
    bool whole = r->start && r->extent;
    for (int i = 0; whole && i < b->rank; i++)
        whole = is_zero(r->start[i]) && b->shape && same_int(r->extent[i], b->shape[i]);
    if (whole) return;
    tile_sb_putc(sb, '[');
    for (int i = 0; i < b->rank; i++) {
        if (i) tile_sb_puts(sb, ", ");
        put_expr(sb, r->start ? r->start[i] : NULL, 0);
        tile_sb_puts(sb, " : +");
        put_sub(sb, r->extent ? r->extent[i] : NULL, P_UNARY, 0);
    }
    tile_sb_putc(sb, ']');
}

static void put_indent(tile_strbuf *sb, int ind) {
    for (int i = 0; i < ind; i++) tile_sb_puts(sb, "  ");
}

/* loop end lo + extent, folded when both are constant */
static void put_end(tile_strbuf *sb, const ir_expr *lo, const ir_expr *ext) {
    int64_t a, b;
    if (is_zero(lo)) { put_expr(sb, ext, 0); return; }
    if (ir_const_int_value(lo, &a) && ir_const_int_value(ext, &b)) {
        tile_sb_printf(sb, "%lld", (long long)(a + b));
        return;
    }
    put_sub(sb, lo, P_ADD, 0);
    tile_sb_puts(sb, " + ");
    put_sub(sb, ext, P_ADD + 1, 0);
}

/* The statement a group's FOR directly contains (unwrapping one-element SEQs). */
static const ir_stmt *single_child(const ir_stmt *s) {
    const ir_stmt *c = (s->body && s->nbody >= 1) ? s->body[0] : NULL;
    while (c && c->kind == IR_S_SEQ && c->nbody == 1 && c->body) c = c->body[0];
    return c;
}

typedef struct pctx {
    tile_strbuf *sb;
    const ir_func *f;
    unsigned char *declared; /* per var id: local already declared */
    int nvars;
} pctx;

static void put_stmt(pctx *c, const ir_stmt *s, int ind);
static void put_lowering(tile_strbuf *sb, const ir_stmt *s);

static void put_body(pctx *c, const ir_stmt *s, int ind) {
    if (!s || (s->kind == IR_S_SEQ && s->nbody == 0)) {
        put_indent(c->sb, ind);
        tile_sb_puts(c->sb, "pass\n");
        return;
    }
    put_stmt(c, s, ind);
}

static void put_index_list(tile_strbuf *sb, ir_expr **idx, int n) {
    tile_sb_putc(sb, '[');
    for (int i = 0; i < n; i++) {
        if (i) tile_sb_puts(sb, ", ");
        put_expr(sb, idx ? idx[i] : NULL, 0);
    }
    tile_sb_putc(sb, ']');
}

static const char *var_name(const ir_var *v) { return v && v->name ? v->name : "<null var>"; }

static void put_for(pctx *c, const ir_stmt *s, int ind) {
    tile_strbuf *sb = c->sb;
    put_indent(sb, ind);
    /* a whole T.Parallel group on one line, when well formed */
    if (s->loop_kind == IR_LOOP_PARALLEL && s->par_group_depth >= 1) {
        const ir_stmt *loops[16];
        int n = s->par_group_depth;
        bool ok = n <= 16;
        loops[0] = s;
        for (int i = 1; ok && i < n; i++) {
            const ir_stmt *in = single_child(loops[i - 1]);
            ok = in && in->kind == IR_S_FOR && in->loop_kind == IR_LOOP_PARALLEL && in->par_group_depth == 0;
            if (ok) loops[i] = in;
        }
        if (ok) {
            tile_sb_puts(sb, "for ");
            for (int i = 0; i < n; i++) tile_sb_printf(sb, "%s%s", i ? ", " : "", var_name(loops[i]->var));
            tile_sb_puts(sb, " in parallel(");
            for (int i = 0; i < n; i++) {
                if (i) tile_sb_puts(sb, ", ");
                if (is_zero(loops[i]->lo)) put_expr(sb, loops[i]->extent, 0);
                else {
                    tile_sb_puts(sb, "range(");
                    put_expr(sb, loops[i]->lo, 0);
                    tile_sb_puts(sb, ", ");
                    put_end(sb, loops[i]->lo, loops[i]->extent);
                    tile_sb_putc(sb, ')');
                }
            }
            tile_sb_puts(sb, "):");
            put_lowering(sb, s);
            tile_sb_putc(sb, '\n');
            put_body(c, loops[n - 1]->body ? loops[n - 1]->body[0] : NULL, ind + 1);
            return;
        }
    }
    tile_sb_printf(sb, "for %s in %s(", var_name(s->var), ir_loop_kind_name(s->loop_kind));
    put_expr(sb, s->lo, 0);
    tile_sb_puts(sb, ", ");
    put_end(sb, s->lo, s->extent);
    if (s->loop_kind == IR_LOOP_PIPELINED) tile_sb_printf(sb, ", stages=%d", s->num_stages);
    tile_sb_puts(sb, "):");
    if (s->par_group_depth != 0 || s->loop_kind == IR_LOOP_PARALLEL)
        tile_sb_printf(sb, "  # par_group_depth=%d", s->par_group_depth);
    put_lowering(sb, s);
    tile_sb_putc(sb, '\n');
    put_body(c, s->body && s->nbody >= 1 ? s->body[0] : NULL, ind + 1);
}

static const char *atomic_name(int op) {
    switch (op) {
    case IR_ATOMIC_ADD: return "atomic_add";
    case IR_ATOMIC_MAX: return "atomic_max";
    case IR_ATOMIC_MIN: return "atomic_min";
    case IR_ATOMIC_STORE: return "atomic_store";
    case IR_ATOMIC_LOAD: return "atomic_load";
    case IR_ATOMIC_OR: return "atomic_or";
    case IR_ATOMIC_AND: return "atomic_and";
    case IR_ATOMIC_XOR: return "atomic_xor";
    default: return "atomic_?";
    }
}

/* "  # lower: kind (detail; why)" before the end of a statement's line */
static void put_lowering(tile_strbuf *sb, const ir_stmt *s) {
    if (!s->lower || !s->lower->kind) return;
    tile_sb_printf(sb, "  # lower: %s", s->lower->kind);
    if (s->lower->detail) tile_sb_printf(sb, " (%s)", s->lower->detail);
    if (s->lower->why) tile_sb_printf(sb, "; %s", s->lower->why);
}

static void put_stmt(pctx *c, const ir_stmt *s, int ind) {
    tile_strbuf *sb = c->sb;
    if (!s) { put_indent(sb, ind); tile_sb_puts(sb, "<null stmt>\n"); return; }
    if (s->kind == IR_S_SEQ) {
        if (s->nbody == 0) { put_indent(sb, ind); tile_sb_puts(sb, "pass\n"); }
        for (int i = 0; i < s->nbody; i++) put_stmt(c, s->body ? s->body[i] : NULL, ind);
        return;
    }
    if (s->note) {
        put_indent(sb, ind);
        tile_sb_printf(sb, "# %s\n", s->note);
    }
    if (s->kind == IR_S_FOR) { put_for(c, s, ind); return; }
    put_indent(sb, ind);
    switch (s->kind) {
    case IR_S_WHILE:
        tile_sb_puts(sb, "while ");
        put_expr(sb, s->cond, 0);
        tile_sb_puts(sb, ":\n");
        put_body(c, s->body && s->nbody >= 1 ? s->body[0] : NULL, ind + 1);
        break;
    case IR_S_IF: {
        tile_sb_puts(sb, "if ");
        for (;;) {
            put_expr(sb, s->cond, 0);
            tile_sb_puts(sb, ":\n");
            put_body(c, s->body && s->nbody >= 1 ? s->body[0] : NULL, ind + 1);
            const ir_stmt *e = s->body && s->nbody >= 2 ? s->body[1] : NULL;
            if (!e) break;
            put_indent(sb, ind);
            if (e->kind == IR_S_IF) {
                tile_sb_puts(sb, "elif ");
                s = e;
                continue;
            }
            tile_sb_puts(sb, "else:\n");
            put_body(c, e, ind + 1);
            break;
        }
        break;
    }
    case IR_S_ASSIGN: {
        const ir_var *v = s->var;
        tile_sb_puts(sb, var_name(v));
        if (v && v->id >= 0 && v->id < c->nvars && !c->declared[v->id]) {
            c->declared[v->id] = 1;
            tile_sb_printf(sb, ": %s", dt_name(v->dtype));
        }
        tile_sb_puts(sb, " = ");
        put_expr(sb, s->value, 0);
        tile_sb_putc(sb, '\n');
        break;
    }
    case IR_S_STORE:
        tile_sb_puts(sb, s->buf ? s->buf->name : "<null buffer>");
        put_index_list(sb, s->idx, s->buf ? s->buf->rank : 0);
        tile_sb_puts(sb, " = ");
        put_expr(sb, s->value, 0);
        tile_sb_putc(sb, '\n');
        break;
    case IR_S_ATOMIC:
        if (s->var) tile_sb_printf(sb, "%s = ", s->var->name ? s->var->name : "<null var>");
        tile_sb_printf(sb, "%s(%s", atomic_name(s->atomic_op), s->buf ? s->buf->name : "<null buffer>");
        put_index_list(sb, s->idx, s->buf ? s->buf->rank : 0);
        tile_sb_puts(sb, ", ");
        put_expr(sb, s->value, 0);
        tile_sb_puts(sb, ")\n");
        break;
    case IR_S_ALLOC:
        if (!s->buf) { tile_sb_puts(sb, "alloc <null buffer>\n"); break; }
        tile_sb_printf(sb, "alloc %s: ", s->buf->name);
        put_shape(sb, s->buf);
        tile_sb_printf(sb, " %s", ir_scope_name(s->buf->scope));
        if (s->buf->align_to) tile_sb_printf(sb, " aligned like %s", s->buf->align_to->name);
        if (s->buf->layout) {
            tile_sb_puts(sb, "  # layout ");
            ir_print_layout(s->buf->layout, sb);
        }
        tile_sb_puts(sb, "\n");
        break;
    case IR_S_KERNEL: {
        tile_sb_puts(sb, "kernel grid (");
        for (int i = 0; i < s->ngrid && i < 3; i++) {
            if (i) tile_sb_puts(sb, ", ");
            put_expr(sb, s->grid[i], 0);
        }
        tile_sb_printf(sb, ") threads=%d as (", s->threads);
        for (int i = 0; i < s->ngrid && i < 3; i++)
            tile_sb_printf(sb, "%s%s", i ? ", " : "", var_name(s->block_vars[i]));
        tile_sb_puts(sb, "):");
        put_lowering(sb, s);
        tile_sb_putc(sb, '\n');
        put_body(c, s->body && s->nbody >= 1 ? s->body[0] : NULL, ind + 1);
        break;
    }
    case IR_S_COPY:
        tile_sb_puts(sb, "copy ");
        if (s->regions && s->nregions >= 2) {
            put_region(sb, &s->regions[0]);
            tile_sb_puts(sb, " -> ");
            put_region(sb, &s->regions[1]);
        } else tile_sb_puts(sb, "<bad regions>");
        put_lowering(sb, s);
        tile_sb_putc(sb, '\n');
        break;
    case IR_S_FILL:
        tile_sb_puts(sb, "fill ");
        if (s->regions && s->nregions >= 1) put_region(sb, &s->regions[0]);
        else tile_sb_puts(sb, "<bad regions>");
        tile_sb_puts(sb, " = ");
        put_expr(sb, s->value, 0);
        put_lowering(sb, s);
        tile_sb_putc(sb, '\n');
        break;
    case IR_S_GEMM:
        tile_sb_puts(sb, "gemm ");
        if (s->regions && s->nregions >= 3) {
            put_region(sb, &s->regions[0]);
            tile_sb_puts(sb, ", ");
            put_region(sb, &s->regions[1]);
            tile_sb_puts(sb, " -> ");
            put_region(sb, &s->regions[2]);
        } else tile_sb_puts(sb, "<bad regions>");
        if (s->trans_a || s->trans_b || s->clear) {
            const char *sep = " (";
            if (s->trans_a) { tile_sb_printf(sb, "%strans_a", sep); sep = ", "; }
            if (s->trans_b) { tile_sb_printf(sb, "%strans_b", sep); sep = ", "; }
            if (s->clear) tile_sb_printf(sb, "%sclear", sep);
            tile_sb_putc(sb, ')');
        }
        put_lowering(sb, s);
        tile_sb_putc(sb, '\n');
        break;
    case IR_S_REDUCE:
        tile_sb_printf(sb, "reduce_%s ", ir_reduce_kind_name((ir_reduce_kind)s->reduce_op));
        if (s->regions && s->nregions >= 2) {
            put_region(sb, &s->regions[0]);
            tile_sb_puts(sb, " -> ");
            put_region(sb, &s->regions[1]);
        } else tile_sb_puts(sb, "<bad regions>");
        tile_sb_printf(sb, " (dim=%d%s)", s->dim, s->clear ? ", clear" : "");
        put_lowering(sb, s);
        tile_sb_putc(sb, '\n');
        break;
    case IR_S_BREAK: tile_sb_puts(sb, "break\n"); break;
    case IR_S_CONTINUE: tile_sb_puts(sb, "continue\n"); break;
    case IR_S_ASSERT:
        tile_sb_puts(sb, "assert ");
        put_expr(sb, s->cond, 0);
        if (s->msg) {
            tile_sb_puts(sb, ", \"");
            for (const char *p = s->msg; *p; p++) {
                if (*p == '"' || *p == '\\') tile_sb_putc(sb, '\\');
                if (*p == '\n') { tile_sb_puts(sb, "\\n"); continue; }
                tile_sb_putc(sb, *p);
            }
            tile_sb_putc(sb, '"');
        }
        tile_sb_putc(sb, '\n');
        break;
    default: tile_sb_printf(sb, "<bad stmt kind %d>\n", (int)s->kind); break;
    }
}

static void put_buffer_decl(tile_strbuf *sb, const char *name, const ir_buffer *b) {
    tile_sb_printf(sb, "%s: ", name ? name : b->name);
    put_shape(sb, b);
    if (b->scope != IR_SCOPE_GLOBAL) tile_sb_printf(sb, " %s", ir_scope_name(b->scope));
}

void ir_print_func(const ir_func *f, tile_strbuf *out) {
    if (!f) { tile_sb_puts(out, "<null func>\n"); return; }
    tile_sb_printf(out, "func %s(", f->name ? f->name : "");
    for (int i = 0; i < f->nparams; i++) {
        const ir_param *p = &f->params[i];
        if (i) tile_sb_puts(out, ", ");
        if (p->buf) put_buffer_decl(out, p->name, p->buf);
        else if (p->var) tile_sb_printf(out, "%s: %s", p->name ? p->name : p->var->name, dt_name(p->var->dtype));
        else tile_sb_printf(out, "%s: <nothing>", p->name ? p->name : "?");
    }
    tile_sb_putc(out, ')');
    if (f->nrets > 0) {
        tile_sb_puts(out, " -> (");
        for (int i = 0; i < f->nrets; i++) {
            if (i) tile_sb_puts(out, ", ");
            if (f->rets[i]) put_buffer_decl(out, NULL, f->rets[i]);
            else tile_sb_puts(out, "<null>");
        }
        tile_sb_putc(out, ')');
    }
    tile_sb_printf(out, "  # form=%s\n", f->form == IR_FORM_TILE ? "tile" : "plain");
    if (f->nsizes > 0) {
        tile_sb_puts(out, "  sizes: ");
        for (int i = 0; i < f->nsizes; i++) tile_sb_printf(out, "%s%s", i ? ", " : "", var_name(f->sizes[i]));
        tile_sb_putc(out, '\n');
    }
    if (f->noptions > 0) {
        tile_sb_puts(out, "  options: ");
        for (int i = 0; i < f->noptions; i++) tile_sb_printf(out, "%s%s=%s", i ? ", " : "", f->option_names[i], f->option_values[i]);
        tile_sb_putc(out, '\n');
    }
    pctx c = {out, f, tile_xcalloc((size_t)(f->nvars > 0 ? f->nvars : 1), 1), f->nvars};
    put_body(&c, f->body, 1);
    free(c.declared);
}

void ir_print_module(const ir_module *m, tile_strbuf *out) {
    if (!m) return;
    for (int i = 0; i < m->nfuncs; i++) {
        if (i) tile_sb_putc(out, '\n');
        ir_print_func(m->funcs[i], out);
    }
}

/* regs(T threads x S slots; thread digits | slot digits) origin[, vec V][, local]: each digit
 * "N:dD*S" (N values, dimension D, stride S) or "N:rep" (replication). */
void ir_print_layout(const ir_layout *l, tile_strbuf *out) {
    if (!l) return;
    if (l->kind == IR_LAYOUT_SHARED) {
        tile_sb_puts(out, "shared");
        if (l->note) tile_sb_printf(out, " (%s)", l->note);
        return;
    }
    tile_sb_printf(out, "regs(%d threads x %d slots:", l->threads, l->slots);
    bool bar = false;
    for (int i = 0; i < l->ndig; i++) {
        const ir_layout_digit *d = &l->dig[i];
        if (!d->thread && !bar) {
            tile_sb_puts(out, " |");
            bar = true;
        }
        if (d->dim < 0) tile_sb_printf(out, " %d:rep", d->size);
        else tile_sb_printf(out, " %d:d%d*%lld", d->size, d->dim, (long long)d->stride);
    }
    if (!bar) tile_sb_puts(out, " |");
    tile_sb_printf(out, ") %s", l->origin ? l->origin : "?");
    if (l->vec > 1) tile_sb_printf(out, ", vec %d", l->vec);
    if (l->local) tile_sb_puts(out, ", local memory");
    if (l->note) tile_sb_printf(out, ": %s", l->note);
}
