/* explain.c — the lowering decisions of a function (ir.h, "lowering decisions"): recorded
 * by passes and code generators, printed by `tile ir --explain` and at TILE_LOG=info when a
 * kernel is compiled. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

const char *ir_stmt_op_name(const ir_stmt *s) {
    if (!s) return NULL;
    switch (s->kind) {
    case IR_S_COPY: return "T.copy";
    case IR_S_FILL: return "T.fill";
    case IR_S_GEMM: return "T.gemm";
    case IR_S_KERNEL: return "T.Kernel";
    case IR_S_REDUCE:
        switch ((ir_reduce_kind)s->reduce_op) {
        case IR_RED_SUM: return "T.reduce_sum";
        case IR_RED_MAX: return "T.reduce_max";
        case IR_RED_MIN: return "T.reduce_min";
        case IR_RED_ABSSUM: return "T.reduce_abssum";
        case IR_RED_ABSMAX: return "T.reduce_absmax";
        default: return "T.reduce";
        }
    case IR_S_FOR:
        if (s->par_group_depth > 0) return "T.Parallel";
        if (s->loop_kind == IR_LOOP_PIPELINED) return "T.Pipelined";
        if (s->loop_kind == IR_LOOP_PARALLEL || s->loop_kind == IR_LOOP_VECTORIZED) return "parallel loop";
        return "T.serial";
    default: return NULL;
    }
}

static bool same_str(const char *a, const char *b) { return a == b || (a && b && !strcmp(a, b)); }
static bool same_loc(tile_loc a, tile_loc b) { return a.src == b.src && a.line == b.line && a.col == b.col; }

static void push(tile_arena *a, ir_decision **items, int *len, int *cap, const ir_decision *d) {
    if (*len == *cap) {
        int nc = *cap ? *cap * 2 : 16;
        ir_decision *n = TILE_NEW_ARRAY(a, ir_decision, nc);
        if (*len) memcpy(n, *items, sizeof *n * (size_t)*len);
        *items = n;
        *cap = nc;
    }
    (*items)[(*len)++] = *d;
}

static void add_v(const ir_func *f, tile_loc loc, const char *op, const char *by, ir_decision_kind kind, const char *what, const char *why_fmt,
                  va_list ap) {
    if (!f || !f->explain || !op || !what) return;
    ir_explain *x = f->explain;
    char *why = NULL;
    if (why_fmt) {
        tile_strbuf sb = {0};
        tile_sb_vprintf(&sb, why_fmt, ap);
        why = tile_arena_strdup(x->arena, sb.data ? sb.data : "");
        tile_sb_free(&sb);
    }
    for (int i = 0; i < x->len; i++) {
        const ir_decision *d = &x->items[i];
        if (same_loc(d->loc, loc) && d->kind == kind && same_str(d->op, op) && same_str(d->by, by) && same_str(d->what, what) &&
            same_str(d->why, why))
            return;
    }
    ir_decision d = {loc, tile_arena_strdup(x->arena, op), by ? tile_arena_strdup(x->arena, by) : NULL, kind, tile_arena_strdup(x->arena, what), why};
    push(x->arena, &x->items, &x->len, &x->cap, &d);
}

void ir_explain_add(const ir_func *f, tile_loc loc, const char *op, const char *by, ir_decision_kind kind, const char *what, const char *why_fmt,
                    ...) {
    va_list ap;
    va_start(ap, why_fmt);
    add_v(f, loc, op, by, kind, what, why_fmt, ap);
    va_end(ap);
}

void ir_explain_stmt(const ir_func *f, const ir_stmt *s, const char *by, ir_decision_kind kind, const char *what, const char *why_fmt, ...) {
    if (!s) return;
    va_list ap;
    va_start(ap, why_fmt);
    add_v(f, s->loc, ir_stmt_op_name(s), by, kind, what, why_fmt, ap);
    va_end(ap);
}

/* the statements that count as tile ops in the inventory: serial loops only when pipelined
 * (a plain loop is no lowering decision), and the inner loops of a T.Parallel nest not at all */
static bool inventoried(const ir_stmt *s) {
    if (s->kind == IR_S_FOR) return s->par_group_depth > 0 || s->loop_kind == IR_LOOP_PIPELINED;
    return ir_stmt_op_name(s) != NULL;
}

static void ops_walk(const ir_func *f, const ir_stmt *s, const char *by, const char *what) {
    if (!s) return;
    if (inventoried(s) && s->loc.line > 0) {
        ir_explain *x = f->explain;
        bool seen = false;
        for (int i = 0; i < x->nops && !seen; i++) seen = same_loc(x->ops[i].loc, s->loc) && same_str(x->ops[i].op, ir_stmt_op_name(s));
        if (!seen) {
            ir_decision d = {s->loc, ir_stmt_op_name(s), NULL, IR_DEC_GOT, NULL, NULL};
            push(x->arena, &x->ops, &x->nops, &x->capops, &d);
        }
        if (by && what && s->kind != IR_S_KERNEL) ir_explain_stmt(f, s, by, IR_DEC_GOT, what, NULL);
    }
    for (int i = 0; i < s->nbody && s->body; i++) ops_walk(f, s->body[i], by, what);
}

void ir_explain_ops(const ir_func *f, const ir_stmt *s, const char *by, const char *what) {
    if (f && f->explain) ops_walk(f, s, by, what);
}

/* ---------- printing ---------- */

typedef struct row {
    const ir_decision *d;
    int order; /* recording order, to keep the order of one op's lines */
} row;

static int cmp_loc(tile_loc a, tile_loc b) {
    const char *fa = a.src && a.src->name ? a.src->name : "", *fb = b.src && b.src->name ? b.src->name : "";
    int c = strcmp(fa, fb);
    if (c) return c;
    if (a.line != b.line) return a.line < b.line ? -1 : 1;
    if (a.col != b.col) return a.col < b.col ? -1 : 1;
    return 0;
}

static int cmp_row(const void *pa, const void *pb) {
    const row *a = pa, *b = pb;
    int c = cmp_loc(a->d->loc, b->d->loc);
    if (c) return c;
    c = strcmp(a->d->op, b->d->op);
    if (c) return c;
    /* the lowering first, then the declines, each in recording order */
    if (a->d->kind != b->d->kind) return a->d->kind == IR_DEC_GOT ? -1 : 1;
    return a->order - b->order;
}

static void put_loc(tile_strbuf *out, tile_loc l) {
    tile_sb_printf(out, "%s:%d:%d: ", l.src && l.src->name ? l.src->name : "<ir>", l.line, l.col);
}

void ir_explain_print(const ir_func *f, const char *target, tile_strbuf *out) {
    const ir_explain *x = f->explain;
    int n = x ? x->len : 0, nops = x ? x->nops : 0;
    tile_sb_printf(out, "explain %s for %s:\n", f->name, target ? target : "?");
    /* every op of the inventory that no decision names: "no decision recorded" */
    row *rows = tile_xcalloc((size_t)(n + nops) + 1, sizeof *rows);
    ir_decision *none = tile_xcalloc((size_t)nops + 1, sizeof *none);
    int nr = 0;
    for (int i = 0; i < n; i++) rows[nr++] = (row){&x->items[i], i};
    for (int i = 0; i < nops; i++) {
        bool named = false;
        for (int k = 0; k < n && !named; k++) named = same_loc(x->items[k].loc, x->ops[i].loc) && same_str(x->items[k].op, x->ops[i].op);
        if (named) continue;
        none[i] = x->ops[i];
        none[i].what = "as written (no pass or code generator recorded a decision for it on this target)";
        rows[nr++] = (row){&none[i], n + i};
    }
    qsort(rows, (size_t)nr, sizeof *rows, cmp_row);
    if (!nr) tile_sb_puts(out, "  (no tile ops)\n");
    for (int i = 0; i < nr; i++) {
        const ir_decision *d = rows[i].d;
        put_loc(out, d->loc);
        /* an op of the source, or a statement a pass introduced (serial loops are not in the
         * inventory, so they are never called introduced) */
        bool source = false;
        for (int k = 0; k < nops && !source; k++) source = same_loc(x->ops[k].loc, d->loc) && same_str(x->ops[k].op, d->op);
        tile_sb_printf(out, "%s%s: ", d->op, source || !nops || strncmp(d->op, "T.", 2) || !strcmp(d->op, "T.serial") ? "" : " (introduced by a pass)");
        if (d->kind == IR_DEC_DECLINED) tile_sb_printf(out, "declined: %s%s%s", d->what, d->why ? ": " : "", d->why ? d->why : "");
        else tile_sb_printf(out, "%s%s%s", d->what, d->why ? "; " : "", d->why ? d->why : "");
        if (d->by) tile_sb_printf(out, " [%s]", d->by);
        tile_sb_putc(out, '\n');
    }
    free(rows);
    free(none);
}
