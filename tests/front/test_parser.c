/* test_parser — checks of the parser's C API that the golden dumps do not show:
 * node locations, field conventions (parenthesized, params, kwargs, with targets),
 * the diagnostics cap and ordering. */
#include "front/front.h"

#include <string.h>

static int failures, checks;

#define CHECK(cond, ...)                                   \
    do {                                                   \
        checks++;                                          \
        if (!(cond)) {                                     \
            failures++;                                    \
            printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            printf(__VA_ARGS__);                           \
            printf("\n");                                  \
        }                                                  \
    } while (0)

typedef struct parsed {
    tile_source *src;
    tile_arena arena;
    tile_diags diags;
    ast_module *m;
} parsed;

static void parse(parsed *p, const char *text, int max_errors) {
    p->src = tile_source_from_string("t.tl", text, strlen(text));
    tile_arena_init(&p->arena);
    tile_diags_init(&p->diags);
    p->diags.max_errors = max_errors;
    p->m = tile_parse(p->src, &p->arena, &p->diags);
}

static void done(parsed *p) {
    tile_diags_free(&p->diags);
    tile_arena_free(&p->arena);
    tile_source_free(p->src);
}

static bool at(tile_loc l, int line, int col) { return l.line == line && l.col == col; }

static const char *dump(const ast_expr *e, tile_strbuf *sb) {
    sb->len = 0;
    if (sb->data) sb->data[0] = 0;
    ast_dump_expr(e, sb);
    return sb->data;
}

static void test_locations(void) {
    parsed p;
    parse(&p,
          "@T.prim_func\n"
          "def main(A: T.Tensor((M, K), dtype), n=4):\n"
          "    for i, j in T.Parallel(M, K):\n"
          "        A[i, j] = -x + f(a, k=1) * (b if c else d)\n"
          "    with T.Kernel(1) as (bx, by), g():\n"
          "        y = a < b < c and not z[1:2]\n"
          "    return (p, q), r\n",
          20);
    tile_strbuf sb = {0};
    CHECK(p.diags.len == 0, "%d diagnostics", p.diags.len);
    CHECK(p.m->src == p.src, "module src");
    CHECK(p.m->body.len == 1, "%d statements", p.m->body.len);
    if (p.diags.len || p.m->body.len != 1) { done(&p); return; }
    ast_stmt *def = p.m->body.stmts[0];
    CHECK(def->kind == AST_S_FUNCDEF && at(def->loc, 2, 1), "def at %d:%d", def->loc.line, def->loc.col);
    CHECK(!strcmp(def->name, "main"), "name");
    CHECK(def->ndecorators == 1 && def->decorators[0]->kind == AST_E_ATTR && at(def->decorators[0]->loc, 1, 4),
          "decorator");
    CHECK(def->nparams == 2, "nparams");
    CHECK(!strcmp(def->params[0].name, "A") && at(def->params[0].loc, 2, 10) && def->params[0].annotation &&
              !def->params[0].dflt && def->params[0].star == 0, "param A");
    CHECK(def->params[1].dflt && def->params[1].dflt->kind == AST_E_INT && def->params[1].dflt->ival == 4 &&
              !def->params[1].annotation, "param n");
    ast_expr *ann = def->params[0].annotation; /* T.Tensor((M, K), dtype) */
    CHECK(ann->kind == AST_E_CALL && at(ann->loc, 2, 15) && ann->nitems == 2, "annotation call at %d:%d",
          ann->loc.line, ann->loc.col);
    CHECK(ann->items[0]->kind == AST_E_TUPLE && ann->items[0]->parenthesized && at(ann->items[0]->loc, 2, 22),
          "parenthesized tuple");
    CHECK(def->body.len == 3, "body len");

    ast_stmt *fr = def->body.stmts[0];
    CHECK(fr->kind == AST_S_FOR && at(fr->loc, 3, 5) && fr->ntargets == 1, "for");
    CHECK(fr->targets[0]->kind == AST_E_TUPLE && !fr->targets[0]->parenthesized && fr->targets[0]->nitems == 2 &&
              at(fr->targets[0]->loc, 3, 9), "for target");
    ast_stmt *as = fr->body.stmts[0];
    CHECK(as->kind == AST_S_ASSIGN && as->ntargets == 1 && at(as->loc, 4, 9), "assign");
    ast_expr *sub = as->targets[0];
    CHECK(sub->kind == AST_E_SUBSCRIPT && sub->nitems == 2 && at(sub->loc, 4, 9), "subscript");
    ast_expr *v = as->value; /* -x + f(a, k=1) * (b if c else d) */
    CHECK(v->kind == AST_E_BINOP && v->op == AST_OP_ADD && at(v->loc, 4, 22), "binop at %d:%d", v->loc.line,
          v->loc.col);
    CHECK(v->lhs->kind == AST_E_UNARY && v->lhs->op == AST_OP_NEG && at(v->lhs->loc, 4, 19), "unary");
    ast_expr *mul = v->rhs;
    CHECK(mul->kind == AST_E_BINOP && mul->op == AST_OP_MUL && at(mul->loc, 4, 34), "mul");
    ast_expr *call = mul->lhs;
    CHECK(call->kind == AST_E_CALL && call->nitems == 1 && call->nkwargs == 1 && at(call->loc, 4, 24), "call");
    CHECK(!strcmp(call->kwargs[0].name, "k") && at(call->kwargs[0].loc, 4, 29) && call->kwargs[0].value->ival == 1,
          "kwarg");
    ast_expr *ife = mul->rhs;
    CHECK(ife->kind == AST_E_IFEXP && ife->parenthesized && at(ife->loc, 4, 39) && !strcmp(ife->lhs->name, "b") &&
              !strcmp(ife->cond->name, "c") && !strcmp(ife->rhs->name, "d"), "ifexp");

    ast_stmt *w = def->body.stmts[1];
    CHECK(w->kind == AST_S_WITH && w->nwith == 2 && w->with_targets[0] && !w->with_targets[1], "with");
    CHECK(w->with_targets[0]->kind == AST_E_TUPLE && w->with_targets[0]->parenthesized, "with target");
    ast_expr *y = w->body.stmts[0]->value; /* a < b < c and not z[1:2] */
    CHECK(y->kind == AST_E_BOOLOP && y->op == AST_OP_AND && y->nitems == 2 && at(y->loc, 6, 23), "boolop");
    ast_expr *cmp = y->items[0];
    CHECK(cmp->kind == AST_E_COMPARE && cmp->nitems == 2 && cmp->cmp_ops[0] == AST_OP_LT &&
              cmp->cmp_ops[1] == AST_OP_LT && at(cmp->loc, 6, 15), "compare");
    ast_expr *nt = y->items[1];
    CHECK(nt->kind == AST_E_UNARY && nt->op == AST_OP_NOT && at(nt->loc, 6, 27), "not");
    ast_expr *sl = nt->lhs->items[0];
    CHECK(sl->kind == AST_E_SLICE && sl->lo && sl->hi && !sl->step && at(sl->loc, 6, 33), "slice");

    ast_stmt *r = def->body.stmts[2];
    CHECK(r->kind == AST_S_RETURN && r->value->kind == AST_E_TUPLE && !r->value->parenthesized &&
              r->value->nitems == 2 && at(r->value->loc, 7, 12), "return tuple");
    CHECK(!strcmp(dump(r->value, &sb), "(tuple (tuple p q) r)"), "dump: %s", sb.data);
    tile_sb_free(&sb);
    done(&p);
}

static void test_diag_cap_and_order(void) {
    /* 30 broken lines: exactly max_errors (5) errors, the first five lines, in order */
    tile_strbuf sb = {0};
    for (int i = 0; i < 30; i++) tile_sb_printf(&sb, "x%d = = 1\n", i);
    parsed p;
    parse(&p, sb.data, 5);
    CHECK(p.diags.errors == 5 && p.diags.len == 5, "errors %d", p.diags.errors);
    for (int i = 0; i < p.diags.len; i++) CHECK(p.diags.items[i].loc.line == i + 1, "order");
    done(&p);
    /* unlimited */
    parse(&p, sb.data, 0);
    CHECK(p.diags.errors == 30, "unlimited: %d", p.diags.errors);
    done(&p);
    tile_sb_free(&sb);

    /* lexer and parser errors come out merged in source order */
    parse(&p, "a = = 1\nb = 1 $ 2\nc = = 3\nd = 'x\n", 20);
    CHECK(p.diags.len == 4, "merged: %d", p.diags.len);
    for (int i = 0; i < p.diags.len; i++) CHECK(p.diags.items[i].loc.line == i + 1, "merged order");
    done(&p);

    /* a diags already full: nothing added, still a module */
    p.src = tile_source_from_string("t.tl", "x = = 1\n", 8);
    tile_arena_init(&p.arena);
    tile_diags_init(&p.diags);
    p.diags.max_errors = 1;
    tile_error_at(&p.diags, (tile_loc){0}, "earlier error");
    p.m = tile_parse(p.src, &p.arena, &p.diags);
    CHECK(p.m && p.diags.len == 1 && p.m->body.len == 0, "full diags");
    done(&p);
}

static void test_recovery_keeps_good_statements(void) {
    parsed p;
    parse(&p, "a = 1\nb = = 2\nc = 3\nfor i in x\n    d = 4\ne = 5; f = = 6\ng = 7\n", 20);
    CHECK(p.diags.errors == 3, "errors %d", p.diags.errors);
    /* a, c, e, g survive (e is before the error on its line) */
    CHECK(p.m->body.len == 4, "statements %d", p.m->body.len);
    const char *want[] = {"a", "c", "e", "g"};
    for (int i = 0; i < p.m->body.len && i < 4; i++)
        CHECK(p.m->body.stmts[i]->kind == AST_S_ASSIGN && !strcmp(p.m->body.stmts[i]->targets[0]->name, want[i]),
              "stmt %d", i);
    done(&p);
}

static void test_names(void) {
    CHECK(!strcmp(ast_op_str(AST_OP_IS_NOT), "is not") && !strcmp(ast_op_str(AST_OP_FLOORDIV), "//"), "op str");
    CHECK(!strcmp(ast_expr_kind_name(AST_E_GENERATOR), "GENERATOR") && !strcmp(ast_stmt_kind_name(AST_S_IMPORTFROM),
                                                                                  "IMPORTFROM"), "kind names");
    CHECK(!strcmp(ast_op_str(AST_OP_COUNT), "?"), "op out of range");
}

static void test_strings_and_numbers(void) {
    parsed p;
    parse(&p, "s = 'a' \"b\" '''c'''\nn = 0xFF\nf = 1_0.5e1\nt = True\nu = None\n", 20);
    CHECK(p.diags.len == 0 && p.m->body.len == 5, "parse");
    if (p.m->body.len == 5) {
        CHECK(p.m->body.stmts[0]->value->kind == AST_E_STRING && !strcmp(p.m->body.stmts[0]->value->sval, "abc"),
              "concat");
        CHECK(p.m->body.stmts[1]->value->ival == 255, "hex");
        CHECK(p.m->body.stmts[2]->value->kind == AST_E_FLOAT && p.m->body.stmts[2]->value->fval == 105.0, "float");
        CHECK(p.m->body.stmts[3]->value->kind == AST_E_BOOL && p.m->body.stmts[3]->value->ival == 1, "bool");
        CHECK(p.m->body.stmts[4]->value->kind == AST_E_NONE, "none");
    }
    done(&p);
}

/* Parse a generated text; expect exactly one error containing `want` (or none if NULL),
 * and a dump that works (recursion stays bounded). */
static void stress(const char *what, tile_strbuf *text, const char *want) {
    parsed p;
    p.src = tile_source_from_string("t.tl", text->data, text->len);
    tile_arena_init(&p.arena);
    tile_diags_init(&p.diags);
    p.m = tile_parse(p.src, &p.arena, &p.diags);
    tile_strbuf sb = {0};
    ast_dump(p.m, &sb);
    if (want)
        CHECK(p.diags.len >= 1 && strstr(p.diags.items[0].msg, want), "%s: %s", what,
              p.diags.len ? p.diags.items[0].msg : "(no diagnostics)");
    else
        CHECK(p.diags.len == 0, "%s: %s", what, p.diags.len ? p.diags.items[0].msg : "");
    tile_sb_free(&sb);
    done(&p);
    text->len = 0;
}

static void rep(tile_strbuf *sb, const char *s, int n) {
    for (int i = 0; i < n; i++) tile_sb_puts(sb, s);
}

/* Inputs that would overflow the C stack (here or in a later recursive pass) without
 * the nesting limits; sizes well past the limits. */
static void test_limits(void) {
    tile_strbuf t = {0};
    tile_sb_puts(&t, "x = "); rep(&t, "(", 20000); tile_sb_puts(&t, "1"); rep(&t, ")", 20000); tile_sb_puts(&t, "\n");
    stress("parens", &t, "expression nested too deeply");
    tile_sb_puts(&t, "x = "); rep(&t, "[", 20000);
    stress("unclosed brackets", &t, "was never closed");
    tile_sb_puts(&t, "x = "); rep(&t, "-", 20000); tile_sb_puts(&t, "1\n");
    stress("unary", &t, "expression nested too deeply");
    tile_sb_puts(&t, "x = "); rep(&t, "not ", 20000); tile_sb_puts(&t, "a\n");
    stress("not", &t, "expression nested too deeply");
    tile_sb_puts(&t, "x = a"); rep(&t, " ** a", 20000); tile_sb_puts(&t, "\n");
    stress("power", &t, "expression nested too deeply");
    tile_sb_puts(&t, "x = "); rep(&t, "a if b else ", 20000); tile_sb_puts(&t, "c\n");
    stress("ifexp", &t, "expression nested too deeply");
    tile_sb_puts(&t, "x = a"); rep(&t, " + a", 20000); tile_sb_puts(&t, "\n");
    stress("left chain", &t, "expression is too complex");
    tile_sb_puts(&t, "x = a"); rep(&t, ".b", 20000); tile_sb_puts(&t, "\n");
    stress("attributes", &t, "expression is too complex");
    tile_sb_puts(&t, "x = f"); rep(&t, "()", 20000); tile_sb_puts(&t, "\n");
    stress("calls", &t, "expression is too complex");
    tile_sb_puts(&t, "x = a"); rep(&t, " and a", 999); tile_sb_puts(&t, "\n"); /* flat: fine */
    stress("boolop", &t, NULL);
    tile_sb_puts(&t, "x = a"); rep(&t, " + a", 998); tile_sb_puts(&t, "\n"); /* height 1000: fine */
    stress("left chain at the limit", &t, NULL);
    tile_sb_puts(&t, "if a:\n pass\n"); rep(&t, "elif a:\n pass\n", 20000);
    stress("elifs", &t, "too many 'elif' clauses");
    for (int i = 0; i < 300; i++) { rep(&t, " ", i); tile_sb_puts(&t, "if x:\n"); }
    stress("indentation", &t, "too many levels of indentation");
    tile_sb_puts(&t, "def f(");
    for (int i = 0; i < 20000; i++) tile_sb_printf(&t, "p%d, ", i);
    tile_sb_puts(&t, "p7): pass\n");
    stress("duplicate parameter", &t, "duplicate parameter 'p7'");
    tile_sb_puts(&t, "f(");
    for (int i = 0; i < 20000; i++) tile_sb_printf(&t, "k%d=1, ", i % 15000);
    tile_sb_puts(&t, ")\n");
    stress("repeated keyword", &t, "keyword argument repeated: 'k0'");
    tile_sb_puts(&t, "from "); rep(&t, ".", 20000); tile_sb_puts(&t, " import x\n");
    stress("dots", &t, "too many leading dots");
    tile_sb_free(&t);
}

int main(void) {
    test_limits();
    test_locations();
    test_diag_cap_and_order();
    test_recovery_keeps_good_statements();
    test_names();
    test_strings_and_numbers();
    printf("test_parser: %d checks, %d failures\n", checks, failures);
    return failures ? 1 : 0;
}
