/* ast_dump.c — a stable S-expression text form of the AST (golden tests, debugging).
 *
 * Expressions print on one line:
 *   x  42  1.5  "str"  True  None
 *   (tuple a b)  (list a b)  (attr T copy)  (subscript A i (slice lo hi step))  (slice _ _ 2)
 *   (call f a (starred b) (kw dtype "float16"))  (genexpr elt (for target iter (if c)))
 *   (+ a b)  (- x)  (not x)  (compare a < b <= c)  (and a b)  (ifexp cond then else)
 * Statements print one per line, indented two spaces per level:
 *   (module
 *     (def f (decorator tile_op) (param A : Tensor) (param n = 4) (returns T)
 *       (body
 *         (assign C (call allocate n))
 *         (for i (call range n)
 *           (body
 *             (augassign += acc i)))
 *         (return C))))
 */
#include "front.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const op_strs[] = {
#define X(e, s) s,
    AST_OPS(X)
#undef X
};
const char *ast_op_str(ast_op op) {
    if ((int)op < 0 || op >= AST_OP_COUNT) return "?";
    return op_strs[op];
}

static const char *const expr_kind_names[] = {
#define X(e) #e,
    AST_EXPR_KINDS(X)
#undef X
};
const char *ast_expr_kind_name(ast_expr_kind k) {
    if ((int)k < 0 || k >= AST_E_COUNT) return "?";
    return expr_kind_names[k];
}

static const char *const stmt_kind_names[] = {
#define X(e) #e,
    AST_STMT_KINDS(X)
#undef X
};
const char *ast_stmt_kind_name(ast_stmt_kind k) {
    if ((int)k < 0 || k >= AST_S_COUNT) return "?";
    return stmt_kind_names[k];
}

static void put_string(tile_strbuf *sb, const char *s) {
    tile_sb_putc(sb, '"');
    for (const unsigned char *q = (const unsigned char *)s; *q; q++) {
        switch (*q) {
        case '"': tile_sb_puts(sb, "\\\""); break;
        case '\\': tile_sb_puts(sb, "\\\\"); break;
        case '\n': tile_sb_puts(sb, "\\n"); break;
        case '\t': tile_sb_puts(sb, "\\t"); break;
        case '\r': tile_sb_puts(sb, "\\r"); break;
        default:
            if (*q < 32 || *q >= 127) tile_sb_printf(sb, "\\x%02x", *q);
            else tile_sb_putc(sb, (char)*q);
        }
    }
    tile_sb_putc(sb, '"');
}

/* Shortest decimal form that reads back exactly; always looks like a float. */
static void put_float(tile_strbuf *sb, double v) {
    if (isnan(v)) { tile_sb_puts(sb, "nan"); return; }
    if (isinf(v)) { tile_sb_puts(sb, v < 0 ? "-inf" : "inf"); return; }
    char buf[64];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    tile_sb_puts(sb, buf);
    if (!strpbrk(buf, ".e")) tile_sb_puts(sb, ".0");
}

static void dump_expr(const ast_expr *e, tile_strbuf *sb);

static void dump_items(const ast_expr *e, tile_strbuf *sb) {
    for (int i = 0; i < e->nitems; i++) {
        tile_sb_putc(sb, ' ');
        dump_expr(e->items[i], sb);
    }
}

static void dump_opt(const ast_expr *e, tile_strbuf *sb) {
    tile_sb_putc(sb, ' ');
    if (e) dump_expr(e, sb);
    else tile_sb_putc(sb, '_');
}

static void dump_expr(const ast_expr *e, tile_strbuf *sb) {
    if (!e) { tile_sb_puts(sb, "<null>"); return; }
    switch (e->kind) {
    case AST_E_NAME: tile_sb_puts(sb, e->name ? e->name : "<null>"); return;
    case AST_E_INT: tile_sb_printf(sb, "%lld", (long long)e->ival); return;
    case AST_E_FLOAT: put_float(sb, e->fval); return;
    case AST_E_STRING: put_string(sb, e->sval ? e->sval : ""); return;
    case AST_E_BOOL: tile_sb_puts(sb, e->ival ? "True" : "False"); return;
    case AST_E_NONE: tile_sb_puts(sb, "None"); return;
    case AST_E_TUPLE: tile_sb_puts(sb, "(tuple"); dump_items(e, sb); break;
    case AST_E_LIST: tile_sb_puts(sb, "(list"); dump_items(e, sb); break;
    case AST_E_ATTR:
        tile_sb_puts(sb, "(attr ");
        dump_expr(e->value, sb);
        tile_sb_printf(sb, " %s", e->name ? e->name : "<null>");
        break;
    case AST_E_SUBSCRIPT:
        tile_sb_puts(sb, "(subscript ");
        dump_expr(e->value, sb);
        dump_items(e, sb);
        break;
    case AST_E_SLICE:
        tile_sb_puts(sb, "(slice");
        dump_opt(e->lo, sb);
        dump_opt(e->hi, sb);
        dump_opt(e->step, sb);
        break;
    case AST_E_CALL:
        tile_sb_puts(sb, "(call ");
        dump_expr(e->value, sb);
        dump_items(e, sb);
        for (int i = 0; i < e->nkwargs; i++) {
            tile_sb_printf(sb, " (kw %s ", e->kwargs[i].name ? e->kwargs[i].name : "**");
            dump_expr(e->kwargs[i].value, sb);
            tile_sb_putc(sb, ')');
        }
        break;
    case AST_E_GENERATOR:
    case AST_E_LISTCOMP:
    case AST_E_SETCOMP:
    case AST_E_DICTCOMP:
        tile_sb_puts(sb, e->kind == AST_E_GENERATOR ? "(genexpr " : e->kind == AST_E_LISTCOMP ? "(listcomp " : e->kind == AST_E_SETCOMP ? "(setcomp " : "(dictcomp ");
        if (e->kind == AST_E_DICTCOMP) {
            dump_expr(e->lhs, sb);
            tile_sb_puts(sb, " : ");
            dump_expr(e->rhs, sb);
        } else dump_expr(e->value, sb);
        for (const ast_comp *c = e->comp; c; c = c->next) {
            tile_sb_puts(sb, " (for ");
            dump_expr(c->target, sb);
            tile_sb_putc(sb, ' ');
            dump_expr(c->iter, sb);
            for (int i = 0; i < c->nconds; i++) {
                tile_sb_puts(sb, " (if ");
                dump_expr(c->conds[i], sb);
                tile_sb_putc(sb, ')');
            }
            tile_sb_putc(sb, ')');
        }
        break;
    case AST_E_DICT:
        tile_sb_puts(sb, "(dict");
        for (int i = 0; i < e->nitems; i++) {
            tile_sb_puts(sb, " (");
            if (e->items[i]) dump_expr(e->items[i], sb);
            else tile_sb_puts(sb, "**");
            tile_sb_puts(sb, " : ");
            dump_expr(e->dvals[i], sb);
            tile_sb_putc(sb, ')');
        }
        break;
    case AST_E_SET: tile_sb_puts(sb, "(set"); dump_items(e, sb); break;
    case AST_E_LAMBDA:
        tile_sb_puts(sb, "(lambda");
        for (int i = 0; i < e->nparams; i++) {
            tile_sb_printf(sb, " %s%s", e->params[i].star == 1 ? "*" : e->params[i].star == 2 ? "**" : "", e->params[i].name);
            if (e->params[i].dflt) { tile_sb_puts(sb, "="); dump_expr(e->params[i].dflt, sb); }
        }
        tile_sb_puts(sb, " :");
        dump_opt(e->value, sb);
        break;
    case AST_E_ELLIPSIS: tile_sb_puts(sb, "..."); return;
    case AST_E_BINOP:
        tile_sb_printf(sb, "(%s ", ast_op_str(e->op));
        dump_expr(e->lhs, sb);
        tile_sb_putc(sb, ' ');
        dump_expr(e->rhs, sb);
        break;
    case AST_E_UNARY:
        tile_sb_printf(sb, "(%s ", ast_op_str(e->op));
        dump_expr(e->lhs, sb);
        break;
    case AST_E_COMPARE:
        tile_sb_puts(sb, "(compare ");
        dump_expr(e->lhs, sb);
        for (int i = 0; i < e->nitems; i++) {
            tile_sb_printf(sb, " %s ", ast_op_str(e->cmp_ops[i]));
            dump_expr(e->items[i], sb);
        }
        break;
    case AST_E_BOOLOP:
        tile_sb_printf(sb, "(%s", ast_op_str(e->op));
        dump_items(e, sb);
        break;
    case AST_E_IFEXP:
        tile_sb_puts(sb, "(ifexp ");
        dump_expr(e->cond, sb);
        tile_sb_putc(sb, ' ');
        dump_expr(e->lhs, sb);
        tile_sb_putc(sb, ' ');
        dump_expr(e->rhs, sb);
        break;
    case AST_E_STARRED:
        tile_sb_puts(sb, "(starred ");
        dump_expr(e->value, sb);
        break;
    default:
        tile_sb_printf(sb, "(?%d", (int)e->kind);
        break;
    }
    tile_sb_putc(sb, ')');
}

void ast_dump_expr(const ast_expr *e, tile_strbuf *out) { dump_expr(e, out); }

static void newline(tile_strbuf *sb, int indent) {
    tile_sb_putc(sb, '\n');
    for (int i = 0; i < indent; i++) tile_sb_putc(sb, ' ');
}

static void dump_stmt(const ast_stmt *s, tile_strbuf *sb, int indent);

static void dump_block(const char *tag, const ast_block *b, tile_strbuf *sb, int indent) {
    newline(sb, indent);
    tile_sb_printf(sb, "(%s", tag);
    for (int i = 0; i < b->len; i++) dump_stmt(b->stmts[i], sb, indent + 2);
    tile_sb_putc(sb, ')');
}

static void dump_names(const ast_stmt *s, tile_strbuf *sb) {
    for (int i = 0; i < s->nnames; i++) {
        if (s->asnames && s->asnames[i]) tile_sb_printf(sb, " (%s as %s)", s->names[i], s->asnames[i]);
        else tile_sb_printf(sb, " %s", s->names[i]);
    }
}

static void dump_stmt(const ast_stmt *s, tile_strbuf *sb, int indent) {
    newline(sb, indent);
    switch (s->kind) {
    case AST_S_EXPR:
        tile_sb_puts(sb, "(expr ");
        dump_expr(s->value, sb);
        break;
    case AST_S_ASSIGN:
        tile_sb_puts(sb, "(assign");
        for (int i = 0; i < s->ntargets; i++) dump_opt(s->targets[i], sb);
        dump_opt(s->value, sb);
        break;
    case AST_S_AUGASSIGN:
        tile_sb_printf(sb, "(augassign %s=", ast_op_str(s->op));
        dump_opt(s->ntargets ? s->targets[0] : NULL, sb);
        dump_opt(s->value, sb);
        break;
    case AST_S_ANNASSIGN:
        tile_sb_puts(sb, "(annassign");
        dump_opt(s->ntargets ? s->targets[0] : NULL, sb);
        dump_opt(s->annotation, sb);
        if (s->value) dump_opt(s->value, sb);
        break;
    case AST_S_FOR:
        tile_sb_puts(sb, "(for");
        dump_opt(s->ntargets ? s->targets[0] : NULL, sb);
        dump_opt(s->iter, sb);
        dump_block("body", &s->body, sb, indent + 2);
        if (s->orelse.len) dump_block("orelse", &s->orelse, sb, indent + 2);
        break;
    case AST_S_WHILE:
    case AST_S_IF:
        tile_sb_puts(sb, s->kind == AST_S_IF ? "(if" : "(while");
        dump_opt(s->cond, sb);
        dump_block("body", &s->body, sb, indent + 2);
        if (s->orelse.len) dump_block("orelse", &s->orelse, sb, indent + 2);
        break;
    case AST_S_WITH:
        tile_sb_puts(sb, "(with");
        for (int i = 0; i < s->nwith; i++) {
            tile_sb_puts(sb, " (item");
            dump_opt(s->with_items[i], sb);
            if (s->with_targets && s->with_targets[i]) dump_opt(s->with_targets[i], sb);
            tile_sb_putc(sb, ')');
        }
        dump_block("body", &s->body, sb, indent + 2);
        break;
    case AST_S_RETURN:
        tile_sb_puts(sb, "(return");
        if (s->value) dump_opt(s->value, sb);
        break;
    case AST_S_PASS: tile_sb_puts(sb, "(pass"); break;
    case AST_S_BREAK: tile_sb_puts(sb, "(break"); break;
    case AST_S_CONTINUE: tile_sb_puts(sb, "(continue"); break;
    case AST_S_FUNCDEF:
        tile_sb_printf(sb, "(def %s", s->name ? s->name : "<null>");
        for (int i = 0; i < s->ndecorators; i++) {
            tile_sb_puts(sb, " (decorator");
            dump_opt(s->decorators[i], sb);
            tile_sb_putc(sb, ')');
        }
        for (int i = 0; i < s->nparams; i++) {
            const ast_param *pr = &s->params[i];
            tile_sb_printf(sb, " (param %s%s%s", pr->kwonly ? "kwonly " : "", pr->star == 1 ? "*" : pr->star == 2 ? "**" : "",
                           pr->name ? pr->name : "<null>");
            if (pr->annotation) { tile_sb_puts(sb, " :"); dump_opt(pr->annotation, sb); }
            if (pr->dflt) { tile_sb_puts(sb, " ="); dump_opt(pr->dflt, sb); }
            tile_sb_putc(sb, ')');
        }
        if (s->returns) {
            tile_sb_puts(sb, " (returns");
            dump_opt(s->returns, sb);
            tile_sb_putc(sb, ')');
        }
        dump_block("body", &s->body, sb, indent + 2);
        break;
    case AST_S_IMPORT:
        tile_sb_puts(sb, "(import");
        dump_names(s, sb);
        break;
    case AST_S_IMPORTFROM:
        tile_sb_printf(sb, "(from %s import", s->module ? s->module : "<null>");
        dump_names(s, sb);
        break;
    case AST_S_ASSERT:
        tile_sb_puts(sb, "(assert");
        dump_opt(s->cond, sb);
        if (s->value) dump_opt(s->value, sb);
        break;
    case AST_S_GLOBAL:
    case AST_S_NONLOCAL:
        tile_sb_puts(sb, s->kind == AST_S_GLOBAL ? "(global" : "(nonlocal");
        dump_names(s, sb);
        break;
    case AST_S_CLASS:
        tile_sb_printf(sb, "(class %s", s->name ? s->name : "<null>");
        for (int i = 0; i < s->nbases; i++) dump_opt(s->bases[i], sb);
        dump_block("body", &s->body, sb, indent + 2);
        break;
    case AST_S_TRY:
        tile_sb_puts(sb, "(try");
        dump_block("body", &s->body, sb, indent + 2);
        for (int i = 0; i < s->nhandlers; i++) {
            newline(sb, indent + 2);
            tile_sb_puts(sb, "(except");
            if (s->handlers[i].type) dump_opt(s->handlers[i].type, sb);
            if (s->handlers[i].name) tile_sb_printf(sb, " as %s", s->handlers[i].name);
            dump_block("body", &s->handlers[i].body, sb, indent + 4);
            tile_sb_putc(sb, ')');
        }
        if (s->orelse.len) dump_block("orelse", &s->orelse, sb, indent + 2);
        if (s->finalbody.len) dump_block("finally", &s->finalbody, sb, indent + 2);
        break;
    case AST_S_RAISE:
        tile_sb_puts(sb, "(raise");
        if (s->value) dump_opt(s->value, sb);
        break;
    case AST_S_DEL:
        tile_sb_puts(sb, "(del");
        dump_opt(s->targets[0], sb);
        break;
    default:
        tile_sb_printf(sb, "(?%d", (int)s->kind);
        break;
    }
    tile_sb_putc(sb, ')');
}

void ast_dump(const ast_module *m, tile_strbuf *out) {
    tile_sb_puts(out, "(module");
    for (int i = 0; i < m->body.len; i++) dump_stmt(m->body.stmts[i], out, 2);
    tile_sb_puts(out, ")\n");
}
