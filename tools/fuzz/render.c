/* render.c — a pf_prog as TileLang source text (plain form or tile form). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fz_util.h"
#include "progfuzz_int.h"

typedef struct rctx {
    fz_strbuf *sb;
    const pf_op *op;
    char leaf[PF_MAX_IN][160];
    char idx[3][64];
    const char *bug_op;
} rctx;

static void put_float(fz_strbuf *sb, double v) {
    char buf[64];
    snprintf(buf, sizeof buf, "%.17g", v);
    if (!strpbrk(buf, ".eEn")) strcat(buf, ".0");
    if (v < 0) fz_sb_printf(sb, "(%s)", buf);
    else fz_sb_puts(sb, buf);
}

static void expr(rctx *c, int e);

/* Text `t` with @a, @b, @c standing for node n's operand expressions. */
static void put(rctx *c, const pf_node *n, const char *t) {
    for (; *t; t++) {
        if (t[0] == '@' && (t[1] == 'a' || t[1] == 'b' || t[1] == 'c')) {
            t++;
            expr(c, *t == 'a' ? n->a : *t == 'b' ? n->b : n->c);
        } else {
            fz_sb_putc(c->sb, *t);
        }
    }
}

/* put() with the template built by printf first (operator and function names) */
static void putf(rctx *c, const pf_node *n, const char *fmt, const char *name) {
    char t[96];
    snprintf(t, sizeof t, fmt, name);
    put(c, n, t);
}

static void expr(rctx *c, int e) {
    fz_strbuf *sb = c->sb;
    const pf_node *n = &c->op->nodes[e];
    static const char *bops[] = {"+", "-", "*", "/", "max", "min", "&", "|", "^", "<<", ">>", "//", "%"};
    static const char *cmps[] = {"<", "<=", ">", ">=", "==", "!="};
    switch (n->kind) {
    case PF_N_LOAD: fz_sb_puts(sb, c->leaf[n->arg]); break;
    case PF_N_IDX: fz_sb_puts(sb, c->idx[n->arg]); break;
    case PF_N_CONST:
        if (n->flt) put_float(sb, n->cv);
        else fz_sb_printf(sb, n->cv < 0 ? "(%.0f)" : "%.0f", n->cv);
        break;
    case PF_N_UN: put(c, n, n->op == PF_U_NEG ? "(-@a)" : "(~@a)"); break;
    case PF_N_BIN:
        if (n->op == PF_B_MAX || n->op == PF_B_MIN) putf(c, n, "T.%s(@a, @b)", bops[n->op]);
        else if (n->op == PF_B_DIV) put(c, n, "(@a / (T.abs(@b) + 1.0))");
        else putf(c, n, "(@a %s @b)", bops[n->op]);
        break;
    case PF_N_CALL1: {
        /* arguments kept inside each function's domain; bug_op (shrinker tests) scales one
         * function's result so a mismatch can be provoked on purpose */
        const char *nm = pf_fn1_name(n->op);
        bool bug = c->bug_op && !strcmp(c->bug_op, nm);
        if (bug) fz_sb_putc(sb, '(');
        switch (n->op) {
        case PF_F1_LOG: case PF_F1_LOG2: putf(c, n, "T.%s(T.abs(@a) + 1.0)", nm); break;
        case PF_F1_SQRT: put(c, n, "T.sqrt(T.abs(@a))"); break;
        case PF_F1_RSQRT: put(c, n, "T.rsqrt(T.abs(@a) + 1.0)"); break;
        case PF_F1_NEG: put(c, n, "(-@a)"); break;
        default: putf(c, n, "T.%s(@a)", nm);
        }
        if (bug) fz_sb_puts(sb, " * 1.015625)");
        break;
    }
    case PF_N_POW:
        put(c, n, "T.pow(T.abs(@a) + 1.0, ");
        put_float(sb, n->cv);
        fz_sb_putc(sb, ')');
        break;
    case PF_N_FMA: put(c, n, "T.fma(@a, @b, @c)"); break;
    case PF_N_CAST: putf(c, n, "T.cast(@a, \"%s\")", tile_dtype_name(n->cast_to)); break;
    case PF_N_SEL: put(c, n, n->op == 0 ? "T.if_then_else(@a, @b, @c)" : "(@b if @a else @c)"); break;
    case PF_N_CMP: putf(c, n, "(@a %s @b)", cmps[n->op % 6]); break;
    case PF_N_LOGIC: put(c, n, n->op == 2 ? "(not @a)" : n->op ? "(@a or @b)" : "(@a and @b)"); break;
    }
}

static void ind(fz_strbuf *sb, int n) {
    for (int i = 0; i < n; i++) fz_sb_puts(sb, "    ");
}

/* one line: indentation + printf */
static void line(fz_strbuf *sb, int n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void line(fz_strbuf *sb, int n, const char *fmt, ...) {
    ind(sb, n);
    va_list ap;
    va_start(ap, fmt);
    fz_sb_vprintf(sb, fmt, ap);
    va_end(ap);
    fz_sb_putc(sb, '\n');
}

static void stmt_expr(rctx *c, int n, const char *pre, int e, const char *post) {
    ind(c->sb, n);
    fz_sb_puts(c->sb, pre);
    expr(c, e);
    fz_sb_puts(c->sb, post);
    fz_sb_putc(c->sb, '\n');
}

/* size `which` of an op (0..2 dims, 3 K, 4 batch) as text: a literal, or the symbolic
 * dimension's name */
static const char *D(const pf_op *op, int which) {
    static char bufs[8][24];
    static int next;
    char *b = bufs[next++ % 8];
    int v = which < 3 ? op->dims[which] : which == 3 ? op->K : op->batch;
    static const char nm[] = "MNLKB";
    if (op->symbolic) snprintf(b, sizeof bufs[0], "%c%d", nm[which], op->id);
    else snprintf(b, sizeof bufs[0], "%d", v);
    return b;
}

/* the sizes (0..4 as in D) making up input k's shape */
static int in_shape_ids(const pf_op *op, int k, int *ids) {
    const pf_input *in = &op->in[k];
    switch (op->kind) {
    case PF_OP_MAP:
        if (in->mode == 1) { ids[0] = op->rank - 1; return 1; }
        if (in->mode == 2) { ids[0] = 0; return 1; }
        for (int d = 0; d < op->rank; d++) ids[d] = d;
        return op->rank;
    case PF_OP_ROWRED: case PF_OP_GENSUM:
        if (in->mode == 1) { ids[0] = 3; return 1; }
        ids[0] = 0; ids[1] = 3;
        return 2;
    case PF_OP_MATMUL: {
        int n = 0;
        if (op->batch) ids[n++] = 4;
        bool tr = k == 0 ? op->transA : op->transB;
        int outer = k == 0 ? 0 : 1;
        if (k == 0) { ids[n] = tr ? 3 : outer; ids[n + 1] = tr ? outer : 3; }
        else { ids[n] = tr ? outer : 3; ids[n + 1] = tr ? 3 : outer; }
        return n + 2;
    }
    default: return 0;
    }
}

static const char *dn(tile_dtype d) { return tile_dtype_name(d); }

static void shape_text(char *buf, size_t n, int rank, const int *shape) {
    size_t l = 0;
    l += (size_t)snprintf(buf + l, n - l, "(");
    for (int d = 0; d < rank; d++) l += (size_t)snprintf(buf + l, n - l, "%s%d", d ? ", " : "", shape[d]);
    snprintf(buf + l, n - l, rank == 1 ? ",)" : ")");
}

/* shape of an op's output */
static int out_shape(const pf_op *op, int *s) {
    switch (op->kind) {
    case PF_OP_MAP: case PF_OP_GATHER: case PF_OP_TMAP: case PF_OP_TELEM:
        for (int d = 0; d < op->rank; d++) s[d] = op->dims[d];
        return op->rank;
    case PF_OP_ROWRED: case PF_OP_GENSUM: s[0] = op->dims[0]; return 1;
    case PF_OP_MATMUL:
        if (op->batch) { s[0] = op->batch; s[1] = op->dims[0]; s[2] = op->dims[1]; return 3; }
        s[0] = op->dims[0]; s[1] = op->dims[1];
        return 2;
    case PF_OP_TGEMM: case PF_OP_KGEMM: s[0] = op->dims[0]; s[1] = op->dims[1]; return 2;
    case PF_OP_TRED: s[0] = op->rdim ? op->dims[0] : op->dims[1]; return 1;
    }
    return 0;
}

static void params(fz_strbuf *sb, const pf_prog *p) {
    bool first = true;
    char sh[96];
    for (int o = 0; o < p->nops; o++) {
        const pf_op *op = &p->ops[o];
        for (int k = 0; k < op->nin; k++) {
            const pf_input *in = &op->in[k];
            if (in->gdt == TILE_DT_INVALID) continue;
            shape_text(sh, sizeof sh, in->rank, in->shape);
            if (op->symbolic) {
                int ids[3], r = in_shape_ids(op, k, ids);
                size_t l = (size_t)snprintf(sh, sizeof sh, "(");
                for (int d = 0; d < r; d++) l += (size_t)snprintf(sh + l, sizeof sh - l, "%s%s", d ? ", " : "", D(op, ids[d]));
                snprintf(sh + l, sizeof sh - l, r == 1 ? ",)" : ")");
            }
            if (p->form == PF_FORM_PLAIN) fz_sb_printf(sb, "%sA%d_%d: Tensor[%s, \"%s\"]", first ? "" : ", ", op->id, k, sh, dn(in->gdt));
            else fz_sb_printf(sb, "%sA%d_%d: T.Tensor(%s, \"%s\")", first ? "" : ", ", op->id, k, sh, dn(in->gdt));
            first = false;
        }
        int s[3];
        int r = out_shape(op, s);
        shape_text(sh, sizeof sh, r, s);
        if (op->symbolic) {
            int ids[3] = {0, 1, 2}, rr = r;
            if (op->kind == PF_OP_MATMUL && op->batch) ids[0] = 4, ids[1] = 0, ids[2] = 1;
            size_t l = (size_t)snprintf(sh, sizeof sh, "(");
            for (int d = 0; d < rr; d++) l += (size_t)snprintf(sh + l, sizeof sh - l, "%s%s", d ? ", " : "", D(op, ids[d]));
            snprintf(sh + l, sizeof sh - l, rr == 1 ? ",)" : ")");
        }
        if (p->form == PF_FORM_PLAIN) fz_sb_printf(sb, "%sO%d: Tensor[%s, \"%s\"]", first ? "" : ", ", op->id, sh, dn(op->out_dt));
        else fz_sb_printf(sb, "%sO%d: T.Tensor(%s, \"%s\")", first ? "" : ", ", op->id, sh, dn(op->out_dt));
        first = false;
        if (op->kind == PF_OP_KGEMM && op->red) fz_sb_printf(sb, ", R%d: T.Tensor((%d, %d), \"float32\")", op->id, op->dims[0], (op->dims[1] + op->blk[1] - 1) / op->blk[1]);
    }
}

/* ---------- plain form ---------- */
static void plain_leaves(rctx *c, const char *const *iv) {
    const pf_op *op = c->op;
    int id = op->id;
    for (int k = 0; k < op->nin; k++) {
        const pf_input *in = &op->in[k];
        char *b = c->leaf[k];
        size_t n = sizeof c->leaf[k];
        switch (in->mode) {
        case 0:
            if (in->rank == 1) snprintf(b, n, "A%d_%d[%s]", id, k, iv[0]);
            else if (in->rank == 2) snprintf(b, n, "A%d_%d[%s, %s]", id, k, iv[0], iv[1]);
            else snprintf(b, n, "A%d_%d[%s, %s, %s]", id, k, iv[0], iv[1], iv[2]);
            break;
        case 1: snprintf(b, n, "A%d_%d[%s]", id, k, iv[op->rank - 1]); break;
        case 2: snprintf(b, n, "A%d_%d[%s]", id, k, iv[0]); break;
        case 3: {
            size_t l = (size_t)snprintf(b, n, "A%d_%d[", id, k);
            for (int d = 0; d < in->rank; d++)
                l += (size_t)snprintf(b + l, n - l, "%s(%s * %d + %d) %% %s", d ? ", " : "", iv[d], in->gather_a, in->gather_b + d, D(op, d));
            snprintf(b + l, n - l, "]");
            break;
        }
        default: break;
        }
    }
}

static void render_plain_op(rctx *c, int n0) {
    const pf_op *op = c->op;
    fz_strbuf *sb = c->sb;
    int id = op->id;
    char iv[3][16];
    const char *ivp[3];
    static const char names[] = "ijl";
    for (int d = 0; d < 3; d++) { snprintf(iv[d], sizeof iv[d], "%c%d", names[d], id); ivp[d] = iv[d]; }
    char kv[16];
    snprintf(kv, sizeof kv, "k%d", id);
    switch (op->kind) {
    case PF_OP_MAP: {
        plain_leaves(c, ivp);
        for (int d = 0; d < op->rank; d++) snprintf(c->idx[d], sizeof c->idx[d], "%s", iv[d]);
        int n = n0;
        for (int d = 0; d < op->rank; d++, n++) {
            if (op->reverse && d == 0) line(sb, n, "for %s in range(%s - 1, -1, -1):", iv[d], D(op, d));
            else line(sb, n, "for %s in range(%s):", iv[d], D(op, d));
        }
        if (op->guard >= 0) { stmt_expr(c, n, "if ", op->guard, ":"); n++; }
        char tgt[96];
        if (op->rank == 1) snprintf(tgt, sizeof tgt, "O%d[%s] = ", id, iv[0]);
        else if (op->rank == 2) snprintf(tgt, sizeof tgt, "O%d[%s, %s] = ", id, iv[0], iv[1]);
        else snprintf(tgt, sizeof tgt, "O%d[%s, %s, %s] = ", id, iv[0], iv[1], iv[2]);
        stmt_expr(c, n, tgt, op->root, "");
        break;
    }
    case PF_OP_ROWRED: case PF_OP_GENSUM: {
        const char *kiv[2] = {iv[0], kv};
        plain_leaves(c, kiv);
        snprintf(c->idx[0], sizeof c->idx[0], "%s", iv[0]);
        snprintf(c->idx[1], sizeof c->idx[1], "%s", kv);
        line(sb, n0, "for %s in range(%s):", iv[0], D(op, 0));
        if (op->kind == PF_OP_GENSUM) {
            static const char *fn[] = {"sum", "max", "min"};
            char pre[96];
            snprintf(pre, sizeof pre, "O%d[%s] = %s(", id, iv[0], fn[op->redop % 3]);
            char post[96];
            snprintf(post, sizeof post, " for %s in range(%s))", kv, D(op, 3));
            stmt_expr(c, n0 + 1, pre, op->root, post);
            break;
        }
        static const char *finit[] = {"0.0", "-T.infinity(\"float32\")", "T.infinity(\"float32\")"};
        static const char *iinit[] = {"0", "-1000000", "1000000"};
        line(sb, n0 + 1, "acc%d = %s", id, op->acc_int ? iinit[op->redop % 3] : finit[op->redop % 3]);
        line(sb, n0 + 1, "for %s in range(%s):", kv, D(op, 3));
        char pre[64];
        if (op->redop == 0) snprintf(pre, sizeof pre, "acc%d += ", id);
        else snprintf(pre, sizeof pre, "acc%d = %s(acc%d, ", id, op->redop == 1 ? "max" : "T.min", id);
        stmt_expr(c, n0 + 2, pre, op->root, op->redop == 0 ? "" : ")");
        line(sb, n0 + 1, "O%d[%s] = acc%d", id, iv[0], id);
        break;
    }
    case PF_OP_MATMUL: {
        char bi[16] = "", a_ix[64], b_ix[64], c_ix[64];
        int n = n0;
        if (op->batch) {
            snprintf(bi, sizeof bi, "b%d, ", id);
            line(sb, n++, "for b%d in range(%s):", id, D(op, 4));
        }
        snprintf(a_ix, sizeof a_ix, "%s%s, %s", bi, op->transA ? kv : iv[0], op->transA ? iv[0] : kv);
        snprintf(b_ix, sizeof b_ix, "%s%s, %s", bi, op->transB ? iv[1] : kv, op->transB ? kv : iv[1]);
        snprintf(c_ix, sizeof c_ix, "%s%s, %s", bi, iv[0], iv[1]);
        line(sb, n, "for %s in range(%s):", iv[0], D(op, 0));
        line(sb, n + 1, "for %s in range(%s):", iv[1], D(op, 1));
        if (op->variant == 0) {
            line(sb, n + 2, "acc%d = %s", id, op->acc_int ? "0" : "0.0");
            line(sb, n + 2, "for %s in range(%s):", kv, D(op, 3));
            line(sb, n + 3, "acc%d += A%d_0[%s] * A%d_1[%s]", id, id, a_ix, id, b_ix);
            line(sb, n + 2, "O%d[%s] = acc%d", id, c_ix, id);
        } else if (op->variant == 1) {
            line(sb, n + 2, "O%d[%s] = 0", id, c_ix);
            line(sb, n, "for %s in range(%s):", iv[0], D(op, 0));
            line(sb, n + 1, "for %s in range(%s):", iv[1], D(op, 1));
            line(sb, n + 2, "for %s in range(%s):", kv, D(op, 3));
            line(sb, n + 3, "O%d[%s] += A%d_0[%s] * A%d_1[%s]", id, c_ix, id, a_ix, id, b_ix);
        } else {
            line(sb, n + 2, "O%d[%s] = sum(A%d_0[%s] * A%d_1[%s] for %s in range(%s))", id, c_ix, id, a_ix, id, b_ix, kv, D(op, 3));
        }
        break;
    }
    case PF_OP_GATHER: {
        const pf_input *in = &op->in[0];
        char ix[128] = "", cond[128] = "";
        size_t l = 0, lc = 0;
        for (int d = 0; d < op->rank; d++) {
            int sd = in->shape[d];
            if (op->gather[d].shift) {
                l += (size_t)snprintf(ix + l, sizeof ix - l, "%s%s + %d", d ? ", " : "", iv[d], op->gather[d].c);
                lc += (size_t)snprintf(cond + lc, sizeof cond - lc, "%s%s + %d < %d", lc ? " and " : "", iv[d], op->gather[d].c, sd);
            } else if (op->rank == 2)
                l += (size_t)snprintf(ix + l, sizeof ix - l, "%s(%s * %d + %s * %d + %d) %% %d", d ? ", " : "", iv[d], op->gather[d].a, iv[1 - d], op->gather[d].b, op->gather[d].c, sd);
            else
                l += (size_t)snprintf(ix + l, sizeof ix - l, "%s(%s * %d + %d) %% %d", d ? ", " : "", iv[d], op->gather[d].a, op->gather[d].c, sd);
        }
        snprintf(c->leaf[0], sizeof c->leaf[0], "A%d_0[%s]", id, ix);
        for (int d = 0; d < op->rank; d++) snprintf(c->idx[d], sizeof c->idx[d], "%s", iv[d]);
        int n = n0;
        for (int d = 0; d < op->rank; d++, n++) line(sb, n, "for %s in range(%d):", iv[d], op->dims[d]);
        char tgt[64];
        if (op->rank == 1) snprintf(tgt, sizeof tgt, "O%d[%s] = ", id, iv[0]);
        else snprintf(tgt, sizeof tgt, "O%d[%s, %s] = ", id, iv[0], iv[1]);
        if (lc) {
            line(sb, n, "if %s:", cond);
            stmt_expr(c, n + 1, tgt, op->root, "");
            if (op->alt >= 0) {
                line(sb, n, "else:");
                snprintf(c->leaf[0], sizeof c->leaf[0], op->rank == 1 ? "A%d_0[0]" : "A%d_0[0, 0]", id);
                stmt_expr(c, n + 1, tgt, op->alt, "");
            }
        } else stmt_expr(c, n, tgt, op->root, "");
        break;
    }
    default: break;
    }
}

/* ---------- tile form ---------- */
/* spelling variants, fixed per op so a program renders the same every time */
static bool chance_clear_style(const pf_op *op) { return (op->id + op->dims[0]) % 2 == 0; }
static bool chance_dim_style(const pf_op *op) { return (op->id + op->dims[1]) % 2 == 0; }

static const char *scope_fn(int s) { return s == 0 ? "T.alloc_shared" : s == 1 ? "T.alloc_fragment" : "T.alloc_local"; }

static void red_init(const pf_op *op, char *b, size_t n) {
    bool fl = tile_dtype_is_float(op->acc_dt);
    switch (op->redop) {
    case 1: snprintf(b, n, fl ? "-T.infinity(\"%s\")" : "T.min_value(\"%s\")", dn(op->acc_dt)); break;
    case 2: snprintf(b, n, fl ? "T.infinity(\"%s\")" : "T.max_value(\"%s\")", dn(op->acc_dt)); break;
    default: snprintf(b, n, "0"); break;
    }
}

static int TH(const pf_op *op) { return op->threads ? op->threads : 128; }

static void render_kgemm(rctx *c, int n0);

static void render_tile_op(rctx *c, int n0) {
    const pf_op *op = c->op;
    fz_strbuf *sb = c->sb;
    int id = op->id;
    char bx[16], by[16], bz[16], i[16], j[16];
    snprintf(bx, sizeof bx, "bx%d", id);
    snprintf(by, sizeof by, "by%d", id);
    snprintf(bz, sizeof bz, "bz%d", id);
    snprintf(i, sizeof i, "i%d", id);
    snprintf(j, sizeof j, "j%d", id);
    int n = n0 + 1;
    switch (op->kind) {
    case PF_OP_TMAP: {
        int bm = op->blk[0], bn = op->blk[1], r = op->rank;
        int M = r >= 2 ? op->dims[r - 2] : 1, N = op->dims[r - 1];
        char lead[32] = "";
        if (r == 3) snprintf(lead, sizeof lead, "%s, ", bz);
        if (r == 1) line(sb, n0, "with T.Kernel(T.ceildiv(%d, %d), threads=%d) as %s:", N, bn, TH(op), bx);
        else if (r == 2) line(sb, n0, "with T.Kernel(T.ceildiv(%d, %d), T.ceildiv(%d, %d), threads=%d) as (%s, %s):", N, bn, M, bm, TH(op), bx, by);
        else line(sb, n0, "with T.Kernel(T.ceildiv(%d, %d), T.ceildiv(%d, %d), %d, threads=%d) as (%s, %s, %s):", N, bn, M, bm, op->dims[0], TH(op), bx, by, bz);
        char full[32], row[32];
        if (r == 1) snprintf(full, sizeof full, "(%d,)", bn);
        else snprintf(full, sizeof full, "(%d, %d)", bm, bn);
        snprintf(row, sizeof row, "(%d,)", bn);
        for (int k = 0; k < op->nin; k++) {
            const pf_input *in = &op->in[k];
            bool b1 = in->rank == 1;
            line(sb, n, "S%d_%d = %s(%s, \"%s\")", id, k, scope_fn(in->scope), b1 ? row : full, dn(in->ldt));
        }
        line(sb, n, "F%d = T.alloc_fragment(%s, \"%s\")", id, full, dn(op->buf_dt));
        for (int k = 0; k < op->nin; k++) {
            const pf_input *in = &op->in[k];
            if (in->rank == 1) {
                if (in->slice) line(sb, n, "T.copy(A%d_%d[%s * %d:(%s + 1) * %d], S%d_%d)", id, k, bx, bn, bx, bn, id, k);
                else line(sb, n, "T.copy(A%d_%d[%s * %d], S%d_%d)", id, k, bx, bn, id, k);
                if (r == 1) snprintf(c->leaf[k], sizeof c->leaf[k], "S%d_%d[%s]", id, k, j);
                else snprintf(c->leaf[k], sizeof c->leaf[k], "S%d_%d[%s]", id, k, j);
            } else {
                if (r == 2 && in->slice)
                    line(sb, n, "T.copy(A%d_%d[%s * %d:(%s + 1) * %d, %s * %d:(%s + 1) * %d], S%d_%d)", id, k, by, bm, by, bm, bx, bn, bx, bn, id, k);
                else if (r == 3 && in->slice)
                    line(sb, n, "T.copy(A%d_%d[%s, %s * %d:(%s + 1) * %d, %s * %d:(%s + 1) * %d], S%d_%d)", id, k, bz, by, bm, by, bm, bx, bn, bx, bn, id, k);
                else if (r >= 2) line(sb, n, "T.copy(A%d_%d[%s%s * %d, %s * %d], S%d_%d)", id, k, lead, by, bm, bx, bn, id, k);
                else line(sb, n, "T.copy(A%d_%d[%s * %d], S%d_%d)", id, k, bx, bn, id, k);
                if (r == 1) snprintf(c->leaf[k], sizeof c->leaf[k], "S%d_%d[%s]", id, k, j);
                else snprintf(c->leaf[k], sizeof c->leaf[k], "S%d_%d[%s, %s]", id, k, i, j);
            }
        }
        if (op->pipelined && op->guard >= 0) line(sb, n, "T.clear(F%d)", id);
        char tgt[64];
        if (r == 1) {
            snprintf(c->idx[0], sizeof c->idx[0], "%s", j);
            line(sb, n, "for %s in T.Parallel(%d):", j, bn);
            snprintf(tgt, sizeof tgt, "F%d[%s] = ", id, j);
        } else {
            snprintf(c->idx[0], sizeof c->idx[0], "%s", i);
            snprintf(c->idx[1], sizeof c->idx[1], "%s", j);
            line(sb, n, "for %s, %s in T.Parallel(%d, %d):", i, j, bm, bn);
            snprintf(tgt, sizeof tgt, "F%d[%s, %s] = ", id, i, j);
        }
        if (op->pipelined && op->guard >= 0) {
            /* cleared first, then a guarded write: every element is initialised */
            stmt_expr(c, n + 1, "if ", op->guard, ":");
            stmt_expr(c, n + 2, tgt, op->root, "");
        } else stmt_expr(c, n + 1, tgt, op->root, "");
        if (r == 1) line(sb, n, "T.copy(F%d, O%d[%s * %d])", id, id, bx, bn);
        else line(sb, n, "T.copy(F%d, O%d[%s%s * %d, %s * %d])", id, id, lead, by, bm, bx, bn);
        break;
    }
    case PF_OP_TGEMM: {
        int bm = op->blk[0], bn = op->blk[1], bk = op->blk[2];
        int M = op->dims[0], N = op->dims[1], K = op->K;
        line(sb, n0, "with T.Kernel(T.ceildiv(%d, %d), T.ceildiv(%d, %d), threads=%d) as (%s, %s):", N, bn, M, bm, TH(op), bx, by);
        if (op->transA) line(sb, n, "As%d = %s((%d, %d), \"%s\")", id, scope_fn(op->in[0].scope), bk, bm, dn(op->in[0].ldt));
        else line(sb, n, "As%d = %s((%d, %d), \"%s\")", id, scope_fn(op->in[0].scope), bm, bk, dn(op->in[0].ldt));
        if (op->transB) line(sb, n, "Bs%d = %s((%d, %d), \"%s\")", id, scope_fn(op->in[1].scope), bn, bk, dn(op->in[1].ldt));
        else line(sb, n, "Bs%d = %s((%d, %d), \"%s\")", id, scope_fn(op->in[1].scope), bk, bn, dn(op->in[1].ldt));
        line(sb, n, "C%d = T.alloc_fragment((%d, %d), \"%s\")", id, bm, bn, dn(op->acc_dt));
        if (op->variant == 1) line(sb, n, "T.fill(C%d, 0)", id);
        else line(sb, n, "T.clear(C%d)", id);
        if (op->pipelined) line(sb, n, "for k%d in T.Pipelined(T.ceildiv(%d, %d), num_stages=%d):", id, K, bk, op->stages);
        else line(sb, n, "for k%d in T.serial(T.ceildiv(%d, %d)):", id, K, bk);
        if (op->transA) line(sb, n + 1, "T.copy(A%d_0[k%d * %d, %s * %d], As%d)", id, id, bk, by, bm, id);
        else line(sb, n + 1, "T.copy(A%d_0[%s * %d, k%d * %d], As%d)", id, by, bm, id, bk, id);
        if (op->transB) line(sb, n + 1, "T.copy(A%d_1[%s * %d, k%d * %d], Bs%d)", id, bx, bn, id, bk, id);
        else line(sb, n + 1, "T.copy(A%d_1[k%d * %d, %s * %d], Bs%d)", id, id, bk, bx, bn, id);
        if (op->transA || op->transB)
            line(sb, n + 1, "T.gemm(As%d, Bs%d, C%d, transpose_A=%s, transpose_B=%s)", id, id, id, op->transA ? "True" : "False", op->transB ? "True" : "False");
        else line(sb, n + 1, "T.gemm(As%d, Bs%d, C%d)", id, id, id);
        if (op->variant == 2 && op->root >= 0) {
            snprintf(c->leaf[2], sizeof c->leaf[2], "C%d[%s, %s]", id, i, j);
            snprintf(c->idx[0], sizeof c->idx[0], "%s", i);
            snprintf(c->idx[1], sizeof c->idx[1], "%s", j);
            line(sb, n, "for %s, %s in T.Parallel(%d, %d):", i, j, bm, bn);
            char tgt[64];
            snprintf(tgt, sizeof tgt, "C%d[%s, %s] = ", id, i, j);
            stmt_expr(c, n + 1, tgt, op->root, "");
        }
        line(sb, n, "T.copy(C%d, O%d[%s * %d, %s * %d])", id, id, by, bm, bx, bn);
        break;
    }
    case PF_OP_TRED: {
        static const char *rn[] = {"reduce_sum", "reduce_max", "reduce_min", "reduce_abssum", "reduce_absmax"};
        int bm = op->blk[0], bn = op->blk[1], M = op->dims[0], N = op->dims[1];
        bool rows = op->rdim; /* reduce along dim 1: one result per row */
        int rlen = rows ? bm : bn;
        const char *g = rows ? by : bx;
        if (rows) line(sb, n0, "with T.Kernel(T.ceildiv(%d, %d), threads=%d) as %s:", M, bm, TH(op), by);
        else line(sb, n0, "with T.Kernel(T.ceildiv(%d, %d), threads=%d) as %s:", N, bn, TH(op), bx);
        line(sb, n, "S%d = T.alloc_fragment((%d, %d), \"%s\")", id, bm, bn, dn(op->in[0].ldt));
        line(sb, n, "R%d = T.alloc_fragment((%d,), \"%s\")", id, rlen, dn(op->acc_dt));
        if (op->clear) line(sb, n, "Rt%d = T.alloc_fragment((%d,), \"%s\")", id, rlen, dn(op->acc_dt));
        char init[64];
        red_init(op, init, sizeof init);
        if (!strcmp(init, "0") && chance_clear_style(op)) line(sb, n, "T.clear(R%d)", id);
        else line(sb, n, "T.fill(R%d, %s)", id, init);
        char kk[16];
        snprintf(kk, sizeof kk, "k%d", id);
        int tiles = rows ? (N + bn - 1) / bn : (M + bm - 1) / bm;
        if (op->pipelined) line(sb, n, "for %s in T.Pipelined(%d, num_stages=%d):", kk, tiles, op->stages);
        else line(sb, n, "for %s in T.serial(T.ceildiv(%d, %d)):", kk, rows ? N : M, rows ? bn : bm);
        if (rows) line(sb, n + 1, "T.copy(A%d_0[%s * %d, %s * %d], S%d)", id, by, bm, kk, bn, id);
        else line(sb, n + 1, "T.copy(A%d_0[%s * %d, %s * %d], S%d)", id, kk, bm, bx, bn, id);
        if (op->variant >= 1 && op->root >= 0) {
            snprintf(c->leaf[0], sizeof c->leaf[0], "S%d[%s, %s]", id, i, j);
            snprintf(c->idx[0], sizeof c->idx[0], "%s", i);
            snprintf(c->idx[1], sizeof c->idx[1], "%s", j);
            line(sb, n + 1, "for %s, %s in T.Parallel(%d, %d):", i, j, bm, bn);
            char tgt[64];
            snprintf(tgt, sizeof tgt, "S%d[%s, %s] = ", id, i, j);
            if (op->variant == 2) {
                /* mask the ragged tail with the reduction's neutral value */
                static const char *neutral[] = {"0.0", "-T.infinity(\"float32\")", "T.infinity(\"float32\")", "0.0", "0.0"};
                char pre[160], post[96];
                if (rows) snprintf(pre, sizeof pre, "%sT.if_then_else(%s * %d + %s < %d, ", tgt, kk, bn, j, N);
                else snprintf(pre, sizeof pre, "%sT.if_then_else(%s * %d + %s < %d, ", tgt, kk, bm, i, M);
                snprintf(post, sizeof post, ", %s)", neutral[op->redop % 5]);
                stmt_expr(c, n + 2, pre, op->root, post);
            } else stmt_expr(c, n + 2, tgt, op->root, "");
        }
        if (op->clear) {
            line(sb, n + 1, "T.%s(S%d, Rt%d, dim=%d)", rn[op->redop % 5], id, id, rows ? 1 : 0);
            line(sb, n + 1, "for %s in T.Parallel(%d):", i, rlen);
            if (op->redop == 0 || op->redop == 3) line(sb, n + 2, "R%d[%s] = R%d[%s] + Rt%d[%s]", id, i, id, i, id, i);
            else line(sb, n + 2, "R%d[%s] = T.%s(R%d[%s], Rt%d[%s])", id, i, op->redop == 2 ? "min" : "max", id, i, id, i);
        } else line(sb, n + 1, "T.%s(S%d, R%d, dim=%d, clear=False)", rn[op->redop % 5], id, id, rows ? 1 : (chance_dim_style(op) ? 0 : -2));
        line(sb, n, "T.copy(R%d, O%d[%s * %d])", id, id, g, rlen);
        break;
    }
    case PF_OP_KGEMM: render_kgemm(c, n0); break;
    case PF_OP_TELEM: {
        int r = op->rank, bm = op->blk[0], bn = op->blk[1];
        int M = r == 2 ? op->dims[0] : 1, N = op->dims[r - 1];
        char rw[16], cl[16];
        snprintf(rw, sizeof rw, "row%d", id);
        snprintf(cl, sizeof cl, "col%d", id);
        const char *iv[2] = {r == 2 ? rw : cl, cl};
        for (int k = 0; k < op->nin; k++) {
            const pf_input *in = &op->in[k];
            char *b = c->leaf[k];
            size_t bl = sizeof c->leaf[k];
            switch (in->mode) {
            case 0: if (r == 2) snprintf(b, bl, "A%d_%d[%s, %s]", id, k, rw, cl); else snprintf(b, bl, "A%d_%d[%s]", id, k, cl); break;
            case 1: snprintf(b, bl, "A%d_%d[%s]", id, k, cl); break;
            case 2: snprintf(b, bl, "A%d_%d[%s]", id, k, rw); break;
            default:
                if (r == 2) snprintf(b, bl, "A%d_%d[(%s * %d + %d) %% %d, (%s * %d + %d) %% %d]", id, k, rw, in->gather_a, in->gather_b, M, cl, in->gather_a, in->gather_b + 1, N);
                else snprintf(b, bl, "A%d_%d[(%s * %d + %d) %% %d]", id, k, cl, in->gather_a, in->gather_b, N);
            }
        }
        snprintf(c->idx[0], sizeof c->idx[0], "%s", iv[0]);
        snprintf(c->idx[1], sizeof c->idx[1], "%s", iv[1]);
        if (r == 2) {
            line(sb, n0, "with T.Kernel(T.ceildiv(%d, %d), T.ceildiv(%d, %d), threads=%d) as (%s, %s):", N, bn, M, bm, TH(op), bx, by);
            line(sb, n, "for %s, %s in T.Parallel(%d, %d):", i, j, bm, bn);
            line(sb, n + 1, "%s = %s * %d + %s", rw, by, bm, i);
            line(sb, n + 1, "%s = %s * %d + %s", cl, bx, bn, j);
            line(sb, n + 1, "if %s < %d and %s < %d:", rw, M, cl, N);
            char tgt[64];
            snprintf(tgt, sizeof tgt, "O%d[%s, %s] = ", id, rw, cl);
            stmt_expr(c, n + 2, tgt, op->root, "");
        } else {
            line(sb, n0, "with T.Kernel(T.ceildiv(%d, %d), threads=%d) as %s:", N, bn, TH(op), bx);
            line(sb, n, "for %s in T.Parallel(%d):", j, bn);
            line(sb, n + 1, "%s = %s * %d + %s", cl, bx, bn, j);
            line(sb, n + 1, "if %s < %d:", cl, N);
            char tgt[64];
            snprintf(tgt, sizeof tgt, "O%d[%s] = ", id, cl);
            stmt_expr(c, n + 2, tgt, op->root, "");
        }
        break;
    }
    default: break;
    }
}

/* A GPU-shaped GEMM kernel (gen.c: gen_kgemm). bug_op "ktail" (a test target) drops the
 * ragged tail of the K loop: K // bk iterations instead of ceil(K / bk). */
static void render_kgemm(rctx *c, int n0) {
    const pf_op *op = c->op;
    fz_strbuf *sb = c->sb;
    int id = op->id, n = n0 + 1;
    int bm = op->blk[0], bn = op->blk[1], bk = op->blk[2];
    int M = op->dims[0], N = op->dims[1], K = op->K;
    const char *ad = dn(op->in[0].ldt), *bd = dn(op->in[1].ldt), *od = dn(op->out_dt);
    line(sb, n0, "with T.Kernel(T.ceildiv(%d, %d), T.ceildiv(%d, %d), threads=%d) as (bx%d, by%d):", N, bn, M, bm, op->threads, id, id);
    if (op->transA) line(sb, n, "As%d = T.alloc_shared((%d, %d), \"%s\")", id, bk, bm, ad);
    else line(sb, n, "As%d = T.alloc_shared((%d, %d), \"%s\")", id, bm, bk, ad);
    if (op->afrag) line(sb, n, "Af%d = T.alloc_fragment((%d, %d), \"%s\")", id, bm, bk, ad);
    if (op->transB) line(sb, n, "Bs%d = T.alloc_shared((%d, %d), \"%s\")", id, bn, bk, bd);
    else line(sb, n, "Bs%d = T.alloc_shared((%d, %d), \"%s\")", id, bk, bn, bd);
    line(sb, n, "C%d = T.alloc_fragment((%d, %d), \"%s\")", id, bm, bn, dn(op->acc_dt));
    if (op->bias) line(sb, n, "Bi%d = T.alloc_shared((%d,), \"%s\")", id, bn, dn(op->in[3].ldt));
    if (op->cstage == 1) line(sb, n, "Cs%d = T.alloc_shared((%d, %d), \"%s\")", id, bm, bn, od);
    if (op->cstage == 2) line(sb, n, "Co%d = T.alloc_fragment((%d, %d), \"%s\")", id, bm, bn, od);
    if (op->red) line(sb, n, "Rf%d = T.alloc_fragment((%d,), \"float32\")", id, bm);
    if (op->swizzle) line(sb, n, "T.use_swizzle(panel_size=%d)", op->swizzle);
    if ((op->id + K) % 3 == 0) line(sb, n, "T.fill(C%d, 0)", id);
    else line(sb, n, "T.clear(C%d)", id);
    char trip[48];
    if (c->bug_op && !strcmp(c->bug_op, "ktail")) snprintf(trip, sizeof trip, "%d // %d", K, bk);
    else snprintf(trip, sizeof trip, "T.ceildiv(%d, %d)", K, bk);
    if (op->pipelined) line(sb, n, "for k%d in T.Pipelined(%s, num_stages=%d):", id, trip, op->stages);
    else line(sb, n, "for k%d in T.serial(%s):", id, trip);
    if (op->transA) line(sb, n + 1, "T.copy(A%d_0[k%d * %d, by%d * %d], As%d)", id, id, bk, id, bm, id);
    else line(sb, n + 1, "T.copy(A%d_0[by%d * %d, k%d * %d], As%d)", id, id, bm, id, bk, id);
    if (op->transB) line(sb, n + 1, "T.copy(A%d_1[bx%d * %d, k%d * %d], Bs%d)", id, id, bn, id, bk, id);
    else line(sb, n + 1, "T.copy(A%d_1[k%d * %d, bx%d * %d], Bs%d)", id, id, bk, id, bn, id);
    if (op->afrag) line(sb, n + 1, "T.copy(As%d, Af%d)", id, id);
    char kw[64] = "";
    if (op->transA || op->transB)
        snprintf(kw, sizeof kw, ", transpose_A=%s, transpose_B=%s", op->transA ? "True" : "False", op->transB ? "True" : "False");
    line(sb, n + 1, "T.gemm(%s%d, Bs%d, C%d%s)", op->afrag ? "Af" : "As", id, id, id, kw);
    if (op->bias) line(sb, n, "T.copy(A%d_3[bx%d * %d], Bi%d)", id, id, bn, id);
    if (op->root >= 0) {
        snprintf(c->leaf[2], sizeof c->leaf[2], "C%d[i%d, j%d]", id, id, id);
        snprintf(c->leaf[3], sizeof c->leaf[3], "Bi%d[j%d]", id, id);
        snprintf(c->idx[0], sizeof c->idx[0], "i%d", id);
        snprintf(c->idx[1], sizeof c->idx[1], "j%d", id);
        line(sb, n, "for i%d, j%d in T.Parallel(%d, %d):", id, id, bm, bn);
        char tgt[64];
        snprintf(tgt, sizeof tgt, "C%d[i%d, j%d] = ", id, id, id);
        stmt_expr(c, n + 1, tgt, op->root, "");
    }
    if (op->cstage == 1) {
        line(sb, n, "T.copy(C%d, Cs%d)", id, id);
        line(sb, n, "T.copy(Cs%d, O%d[by%d * %d, bx%d * %d])", id, id, id, bm, id, bn);
    } else if (op->cstage == 2) {
        line(sb, n, "for i%d, j%d in T.Parallel(%d, %d):", id, id, bm, bn);
        line(sb, n + 1, "Co%d[i%d, j%d] = T.cast(C%d[i%d, j%d], \"%s\")", id, id, id, id, id, id, od);
        line(sb, n, "T.copy(Co%d, O%d[by%d * %d, bx%d * %d])", id, id, id, bm, id, bn);
    } else line(sb, n, "T.copy(C%d, O%d[by%d * %d, bx%d * %d])", id, id, id, bm, id, bn);
    if (op->red) {
        /* a row reduction over this block's columns; the columns past N (zeros, or the
         * epilogue of zeros) are masked with the reduction's neutral value */
        static const char *rn[] = {"reduce_sum", "reduce_max", "reduce_min", "reduce_absmax"};
        static const char *neutral[] = {"0.0", "-T.infinity(\"float32\")", "T.infinity(\"float32\")", "0.0"};
        int ro = (op->red - 1) % 4;
        line(sb, n, "for i%d, j%d in T.Parallel(%d, %d):", id, id, bm, bn);
        line(sb, n + 1, "C%d[i%d, j%d] = T.if_then_else(bx%d * %d + j%d < %d, C%d[i%d, j%d], %s)", id, id, id, id, bn, id, N, id, id, id, neutral[ro]);
        line(sb, n, "T.%s(C%d, Rf%d, dim=1)", rn[ro], id, id);
        line(sb, n, "for i%d in T.Parallel(%d):", id, bm);
        line(sb, n + 1, "if by%d * %d + i%d < %d:", id, bm, id, M);
        line(sb, n + 2, "R%d[by%d * %d + i%d, bx%d] = Rf%d[i%d]", id, id, bm, id, id, id, id);
    }
}

char *pf_render(const pf_prog *p, const char *bug_op) {
    fz_strbuf sb = {0};
    fz_sb_puts(&sb, "import tilelang\nimport tilelang.language as T\n\n\n");
    if (p->form == PF_FORM_PLAIN) {
        fz_sb_puts(&sb, "@tile_op\ndef fuzz(");
        params(&sb, p);
        fz_sb_puts(&sb, "):\n");
    } else {
        fz_sb_puts(&sb, "@T.prim_func\ndef fuzz(");
        params(&sb, p);
        fz_sb_puts(&sb, "):\n");
    }
    for (int o = 0; o < p->nops; o++) {
        rctx c;
        memset(&c, 0, sizeof c);
        c.sb = &sb;
        c.op = &p->ops[o];
        c.bug_op = bug_op;
        if (p->form == PF_FORM_PLAIN) render_plain_op(&c, 1);
        else render_tile_op(&c, 1);
    }
    if (!p->nops) fz_sb_puts(&sb, "    pass\n");
    return sb.data;
}

bool pf_param_shape(const pf_prog *p, const char *name, tile_tensor *t) {
    for (int o = 0; o < p->nops; o++) {
        const pf_op *op = &p->ops[o];
        for (int k = 0; k < op->nin; k++) {
            char nm[32];
            snprintf(nm, sizeof nm, "A%d_%d", op->id, k);
            if (op->in[k].gdt == TILE_DT_INVALID || strcmp(nm, name)) continue;
            t->rank = op->in[k].rank;
            for (int d = 0; d < t->rank; d++) t->shape[d] = op->in[k].shape[d];
            return true;
        }
        char nm[32];
        snprintf(nm, sizeof nm, "R%d", op->id);
        if (op->kind == PF_OP_KGEMM && op->red && !strcmp(nm, name)) {
            t->rank = 2;
            t->shape[0] = op->dims[0];
            t->shape[1] = (op->dims[1] + op->blk[1] - 1) / op->blk[1];
            return true;
        }
        snprintf(nm, sizeof nm, "O%d", op->id);
        if (!strcmp(nm, name)) {
            int s[3];
            t->rank = out_shape(op, s);
            for (int d = 0; d < t->rank; d++) t->shape[d] = s[d];
            return true;
        }
    }
    return false;
}
