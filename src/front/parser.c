/* parser.c — tokens -> AST, by recursive descent over Python's grammar (the subset
 * TileLang uses; see front.h).
 *
 * Errors: a syntax error inside a statement reports file:line:col and unwinds (longjmp)
 * to that statement's guard, which skips to the end of the logical line — and over an
 * indented block that follows it — and parsing goes on with the next statement. All
 * memory the parser allocates lives in the caller's arena, so unwinding leaks nothing.
 * Parser errors on a line where the lexer already reported one are dropped (they are
 * almost always consequences of it). Diagnostics come out sorted by position.
 *
 * Limits, so that no input can exhaust the C stack here or in later recursive passes:
 * parser recursion (brackets, unary operators, `**`, `not`, conditional expressions,
 * nested blocks) is limited to MAX_DEPTH, the height of an expression tree (which
 * also grows with long left-associative chains such as a+b+c+...) to MAX_EXPR_HEIGHT, and
 * an if/elif chain (nested IFs in the AST) to MAX_ELIF clauses.
 */
#include "front.h"

#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 200
#define MAX_EXPR_HEIGHT 1000
#define MAX_ELIF 500

typedef struct parser {
    const tile_source *src;
    tile_arena *arena;
    tile_diags *diags;
    token *toks;
    int ntoks, pos;
    int depth;
    jmp_buf *jb;
    const unsigned char *lexerr; /* lexerr[line] != 0: the lexer reported an error there */
    int nlines;
    tile_loc unclosed; /* the outermost bracket never closed (line 0: none); the rest of the
                          file is inside it, so parser errors from there on are not reported */
} parser;

/* Every expression node is allocated with its tree height next to it. */
typedef struct pnode {
    ast_expr e;
    int height;
} pnode;

/* ---------- arena-backed growable arrays (safe to abandon on longjmp) ---------- */
typedef struct plist {
    void **items;
    int len, cap;
} plist;

static void pl_push(parser *p, plist *l, void *x) {
    if (l->len == l->cap) {
        int nc = l->cap ? l->cap * 2 : 4;
        void **n = TILE_NEW_ARRAY(p->arena, void *, nc);
        if (l->len) memcpy(n, l->items, sizeof(void *) * (size_t)l->len);
        l->items = n;
        l->cap = nc;
    }
    l->items[l->len++] = x;
}

static ast_expr **pl_exprs(plist *l) { return (ast_expr **)l->items; }

/* ---------- tokens ---------- */
static token *cur(parser *p) { return &p->toks[p->pos]; }
static tok_kind kind(parser *p) { return p->toks[p->pos].kind; }
static tok_kind peek_kind(parser *p, int k) {
    int i = p->pos + k;
    if (i >= p->ntoks) i = p->ntoks - 1;
    return p->toks[i].kind;
}
static token *advance(parser *p) {
    token *t = &p->toks[p->pos];
    if (p->pos < p->ntoks - 1) p->pos++;
    return t;
}
static bool accept(parser *p, tok_kind k) {
    if (kind(p) != k) return false;
    advance(p);
    return true;
}

/* ---------- diagnostics ---------- */
static bool suppressed(parser *p, tile_loc loc) {
    if (p->unclosed.line && (loc.line > p->unclosed.line || (loc.line == p->unclosed.line && loc.col >= p->unclosed.col)))
        return true;
    return loc.line >= 1 && loc.line <= p->nlines && p->lexerr[loc.line];
}

__attribute__((format(printf, 3, 4))) static void report(parser *p, tile_loc loc, const char *fmt, ...) {
    if (suppressed(p, loc)) return;
    va_list ap;
    va_start(ap, fmt);
    tile_diag_add(p->diags, TILE_DIAG_ERROR, loc, fmt, ap);
    va_end(ap);
}

__attribute__((noreturn, format(printf, 3, 4))) static void fail(parser *p, tile_loc loc, const char *fmt, ...) {
    if (!suppressed(p, loc)) {
        va_list ap;
        va_start(ap, fmt);
        tile_diag_add(p->diags, TILE_DIAG_ERROR, loc, fmt, ap);
        va_end(ap);
    }
    longjmp(*p->jb, 1);
}

static const char *tok_desc(parser *p, const token *t) {
    switch (t->kind) {
    case TOK_NAME:
    case TOK_INT:
    case TOK_FLOAT:
        if (t->len > 32) return tile_arena_printf(p->arena, "'%.32s...'", t->start);
        return tile_arena_printf(p->arena, "'%.*s'", t->len, t->start);
    case TOK_STRING: return "string literal";
    case TOK_NEWLINE: return "end of line";
    case TOK_EOF: return "end of file";
    case TOK_INDENT: return "indent";
    case TOK_DEDENT: return "dedent";
    default: return tok_kind_name(t->kind);
    }
}

/* Is the current token the ':' of a ':=' (which lexes as ':' '=')? */
static bool at_walrus(parser *p) {
    token *t = cur(p);
    if (t->kind != TOK_COLON || peek_kind(p, 1) != TOK_ASSIGN) return false;
    token *n = &p->toks[p->pos + 1];
    return n->loc.line == t->loc.line && n->loc.col == t->loc.col + 1;
}

/* "expected WHAT, found <current token>" (with a better message for ':='). */
__attribute__((noreturn)) static void expected(parser *p, const char *what) {
    token *t = cur(p);
    if (at_walrus(p)) fail(p, t->loc, "unsupported: assignment expressions (':=')");
    fail(p, t->loc, "expected %s, found %s", what, tok_desc(p, t));
}

static void enter(parser *p, tile_loc loc) {
    if (++p->depth > MAX_DEPTH) fail(p, loc, "expression nested too deeply (limit %d)", MAX_DEPTH);
}
static void leave(parser *p) { p->depth--; }

/* ---------- nodes ---------- */
static ast_expr *mk(parser *p, ast_expr_kind k, tile_loc loc) {
    pnode *n = TILE_NEW(p->arena, pnode);
    n->e.kind = k;
    n->e.loc = loc;
    n->height = 1;
    return &n->e;
}

static int height(const ast_expr *e) { return e ? ((const pnode *)e)->height : 0; }

/* Compute the height of a freshly built node from its children; enforce the limit. */
static ast_expr *fin(parser *p, ast_expr *e) {
    int h = 0;
#define H(x) do { int hx_ = height(x); if (hx_ > h) h = hx_; } while (0)
    H(e->value); H(e->lhs); H(e->rhs); H(e->cond); H(e->lo); H(e->hi); H(e->step);
    for (int i = 0; i < e->nitems; i++) H(e->items[i]);
    if (e->dvals)
        for (int i = 0; i < e->nitems; i++) H(e->dvals[i]);
    for (int i = 0; i < e->nkwargs; i++) H(e->kwargs[i].value);
#undef H
    ((pnode *)e)->height = h + 1;
    if (h + 1 > MAX_EXPR_HEIGHT)
        fail(p, e->loc, "expression is too complex (nested deeper than %d levels)", MAX_EXPR_HEIGHT);
    return e;
}

static ast_stmt *mk_stmt(parser *p, ast_stmt_kind k, tile_loc loc) {
    ast_stmt *s = TILE_NEW(p->arena, ast_stmt);
    s->kind = k;
    s->loc = loc;
    return s;
}

static ast_expr **one_expr(parser *p, ast_expr *e) {
    ast_expr **a = TILE_NEW_ARRAY(p->arena, ast_expr *, 1);
    a[0] = e;
    return a;
}

static const char *expr_desc(const ast_expr *e) {
    switch (e->kind) {
    case AST_E_INT: case AST_E_FLOAT: case AST_E_STRING: return "literal";
    case AST_E_BOOL: return e->ival ? "True" : "False";
    case AST_E_NONE: return "None";
    case AST_E_TUPLE: return "tuple";
    case AST_E_LIST: return "list";
    case AST_E_CALL: return "function call";
    case AST_E_COMPARE: return "comparison";
    case AST_E_IFEXP: return "conditional expression";
    case AST_E_GENERATOR: return "generator expression";
    case AST_E_STARRED: return "starred expression";
    case AST_E_SLICE: return "slice";
    default: return "expression";
    }
}

/* ---------- expressions ---------- */
static ast_expr *parse_test(parser *p);
static int parse_params(parser *p, tok_kind close, bool annotations, ast_param **out);
static ast_expr *parse_or(parser *p);
static ast_expr *parse_binary(parser *p, int minprec);
static ast_expr *parse_factor(parser *p);

static bool starts_expr(tok_kind k) {
    switch (k) {
    case TOK_NAME: case TOK_INT: case TOK_FLOAT: case TOK_STRING: case TOK_LPAREN: case TOK_LBRACKET:
    case TOK_LBRACE: case TOK_MINUS: case TOK_PLUS: case TOK_TILDE: case TOK_KW_NOT: case TOK_KW_TRUE:
    case TOK_KW_FALSE: case TOK_KW_NONE: case TOK_KW_LAMBDA: case TOK_KW_YIELD: case TOK_STAR:
        return true;
    default:
        return false;
    }
}

static void check_target(parser *p, ast_expr *e) {
    switch (e->kind) {
    case AST_E_NAME: case AST_E_ATTR: case AST_E_SUBSCRIPT:
        return;
    case AST_E_TUPLE: case AST_E_LIST: {
        int nstar = 0;
        for (int i = 0; i < e->nitems; i++) {
            if (e->items[i]->kind == AST_E_STARRED && ++nstar > 1)
                fail(p, e->items[i]->loc, "multiple starred expressions in assignment");
            check_target(p, e->items[i]);
        }
        return;
    }
    case AST_E_STARRED:
        if (e->value->kind == AST_E_STARRED) fail(p, e->value->loc, "cannot assign to starred expression");
        check_target(p, e->value);
        return;
    default:
        fail(p, e->loc, "cannot assign to %s", expr_desc(e));
    }
}

/* elt is parsed; the current token is `for`. */
static ast_expr *parse_generator(parser *p, ast_expr *elt);

/* `*expr` (in calls, displays and targets) or a plain expression */
static ast_expr *parse_star_or_test(parser *p) {
    if (kind(p) == TOK_STAR) {
        token *t = advance(p);
        ast_expr *e = mk(p, AST_E_STARRED, t->loc);
        e->value = parse_binary(p, 1);
        return fin(p, e);
    }
    return parse_test(p);
}

static ast_expr *parse_star_or_binary(parser *p) {
    if (kind(p) == TOK_STAR) {
        token *t = advance(p);
        ast_expr *e = mk(p, AST_E_STARRED, t->loc);
        e->value = parse_binary(p, 1);
        return fin(p, e);
    }
    return parse_binary(p, 1);
}

static ast_expr *make_seq(parser *p, ast_expr_kind k, tile_loc loc, plist *items) {
    ast_expr *e = mk(p, k, loc);
    e->items = pl_exprs(items);
    e->nitems = items->len;
    return fin(p, e);
}

/* Expression list as in statements: `a`, `a, b`, `a, *b,` (a bare tuple). */
static ast_expr *parse_testlist_star(parser *p) {
    ast_expr *first = parse_star_or_test(p);
    if (kind(p) != TOK_COMMA) {
        if (first->kind == AST_E_STARRED) fail(p, first->loc, "can't use starred expression here");
        return first;
    }
    plist items = {0};
    pl_push(p, &items, first);
    while (accept(p, TOK_COMMA)) {
        if (!starts_expr(kind(p))) break;
        pl_push(p, &items, parse_star_or_test(p));
    }
    return make_seq(p, AST_E_TUPLE, first->loc, &items);
}

/* Targets of `for` (stops before `in`): `i`, `i, j`, `(i, j)`. */
static ast_expr *parse_target_list(parser *p) {
    ast_expr *first = parse_star_or_binary(p);
    if (kind(p) != TOK_COMMA) return first;
    plist items = {0};
    pl_push(p, &items, first);
    while (accept(p, TOK_COMMA)) {
        if (!starts_expr(kind(p))) break;
        pl_push(p, &items, parse_star_or_binary(p));
    }
    return make_seq(p, AST_E_TUPLE, first->loc, &items);
}

/* `for t in it [if c]... [for ...]...`: the current token is `for`. */
static ast_comp *parse_comp_clauses(parser *p) {
    ast_comp *first = NULL, **tail = &first;
    while (kind(p) == TOK_KW_FOR) {
        advance(p); /* for */
        ast_comp *c = TILE_NEW(p->arena, ast_comp);
        c->target = parse_target_list(p);
        check_target(p, c->target);
        if (!accept(p, TOK_KW_IN)) expected(p, "'in' after comprehension target");
        c->iter = parse_or(p);
        plist conds = {0};
        while (accept(p, TOK_KW_IF)) pl_push(p, &conds, parse_or(p));
        c->conds = pl_exprs(&conds);
        c->nconds = conds.len;
        *tail = c;
        tail = &c->next;
    }
    return first;
}

static int comp_height(const ast_comp *c) {
    int h = 0;
    for (; c; c = c->next) {
        if (height(c->target) > h) h = height(c->target);
        if (height(c->iter) > h) h = height(c->iter);
        for (int i = 0; i < c->nconds; i++)
            if (height(c->conds[i]) > h) h = height(c->conds[i]);
    }
    return h;
}

/* A comprehension of kind k whose element (or key: value) is parsed; the current token is `for`. */
static ast_expr *parse_comprehension(parser *p, ast_expr_kind k, ast_expr *elt, ast_expr *val) {
    if (elt->kind == AST_E_STARRED) fail(p, elt->loc, "can't use starred expression here");
    ast_expr *g = mk(p, k, elt->loc);
    if (k == AST_E_DICTCOMP) {
        g->lhs = elt;
        g->rhs = val;
    } else g->value = elt;
    g->comp = parse_comp_clauses(p);
    fin(p, g);
    int h = comp_height(g->comp) + 1;
    if (h > ((pnode *)g)->height) ((pnode *)g)->height = h;
    if (h > MAX_EXPR_HEIGHT) fail(p, g->loc, "expression is too complex (nested deeper than %d levels)", MAX_EXPR_HEIGHT);
    return g;
}

static ast_expr *parse_generator(parser *p, ast_expr *elt) { return parse_comprehension(p, AST_E_GENERATOR, elt, NULL); }

static void expect_close(parser *p, tok_kind k, const char *what) {
    if (!accept(p, k)) expected(p, what);
}

static ast_expr *parse_paren(parser *p) {
    token *lp = advance(p);
    if (accept(p, TOK_RPAREN)) {
        ast_expr *e = mk(p, AST_E_TUPLE, lp->loc);
        e->parenthesized = true;
        return e;
    }
    ast_expr *first = parse_star_or_test(p);
    if (kind(p) == TOK_KW_FOR) {
        ast_expr *g = parse_generator(p, first);
        expect_close(p, TOK_RPAREN, "')' after generator expression");
        g->parenthesized = true;
        return g;
    }
    if (kind(p) == TOK_COMMA) {
        plist items = {0};
        pl_push(p, &items, first);
        while (accept(p, TOK_COMMA)) {
            if (kind(p) == TOK_RPAREN) break;
            pl_push(p, &items, parse_star_or_test(p));
        }
        expect_close(p, TOK_RPAREN, "',' or ')'");
        ast_expr *t = make_seq(p, AST_E_TUPLE, lp->loc, &items);
        t->parenthesized = true;
        return t;
    }
    expect_close(p, TOK_RPAREN, "',' or ')'");
    if (first->kind == AST_E_STARRED) fail(p, first->loc, "can't use starred expression here");
    first->parenthesized = true;
    return first;
}

static ast_expr *parse_list(parser *p) {
    token *lb = advance(p);
    plist items = {0};
    if (!accept(p, TOK_RBRACKET)) {
        ast_expr *first = parse_star_or_test(p);
        if (kind(p) == TOK_KW_FOR) {
            ast_expr *lc = parse_comprehension(p, AST_E_LISTCOMP, first, NULL);
            lc->loc = lb->loc;
            expect_close(p, TOK_RBRACKET, "']' after list comprehension");
            return lc;
        }
        pl_push(p, &items, first);
        while (accept(p, TOK_COMMA)) {
            if (kind(p) == TOK_RBRACKET) break;
            pl_push(p, &items, parse_star_or_test(p));
        }
        expect_close(p, TOK_RBRACKET, "',' or ']'");
    }
    return make_seq(p, AST_E_LIST, lb->loc, &items);
}

/* `{}`, `{k: v, **d}`, `{a, b}` and their comprehensions. */
static ast_expr *parse_brace(parser *p) {
    token *lb = advance(p);
    plist keys = {0}, vals = {0};
    if (accept(p, TOK_RBRACE)) {
        ast_expr *d = make_seq(p, AST_E_DICT, lb->loc, &keys);
        d->dvals = NULL;
        return d;
    }
    bool is_dict;
    if (kind(p) == TOK_DSTAR) {
        advance(p);
        pl_push(p, &keys, NULL);
        pl_push(p, &vals, parse_binary(p, 1));
        is_dict = true;
    } else {
        ast_expr *first = parse_star_or_test(p);
        if (accept(p, TOK_COLON)) {
            is_dict = true;
            ast_expr *v = parse_test(p);
            if (kind(p) == TOK_KW_FOR) {
                ast_expr *dc = parse_comprehension(p, AST_E_DICTCOMP, first, v);
                expect_close(p, TOK_RBRACE, "'}' after dict comprehension");
                return dc;
            }
            pl_push(p, &keys, first);
            pl_push(p, &vals, v);
        } else {
            is_dict = false;
            if (kind(p) == TOK_KW_FOR) {
                ast_expr *sc = parse_comprehension(p, AST_E_SETCOMP, first, NULL);
                expect_close(p, TOK_RBRACE, "'}' after set comprehension");
                return sc;
            }
            pl_push(p, &keys, first);
        }
    }
    while (accept(p, TOK_COMMA)) {
        if (kind(p) == TOK_RBRACE) break;
        if (is_dict) {
            if (accept(p, TOK_DSTAR)) {
                pl_push(p, &keys, NULL);
                pl_push(p, &vals, parse_binary(p, 1));
                continue;
            }
            pl_push(p, &keys, parse_test(p));
            if (!accept(p, TOK_COLON)) expected(p, "':' in dict display");
            pl_push(p, &vals, parse_test(p));
        } else pl_push(p, &keys, parse_star_or_test(p));
    }
    expect_close(p, TOK_RBRACE, "',' or '}'");
    ast_expr *e = mk(p, is_dict ? AST_E_DICT : AST_E_SET, lb->loc);
    e->items = pl_exprs(&keys);
    e->nitems = keys.len;
    if (is_dict) {
        e->dvals = pl_exprs(&vals);
        /* fin() does not look at NULL keys; heights of values are counted there */
    }
    int h = 0;
    for (int i = 0; i < e->nitems; i++) {
        if (e->items[i] && height(e->items[i]) > h) h = height(e->items[i]);
        if (is_dict && height(e->dvals[i]) > h) h = height(e->dvals[i]);
    }
    ((pnode *)e)->height = h + 1;
    if (h + 1 > MAX_EXPR_HEIGHT) fail(p, e->loc, "expression is too complex (nested deeper than %d levels)", MAX_EXPR_HEIGHT);
    return e;
}

static ast_expr *parse_atom(parser *p) {
    token *t = cur(p);
    ast_expr *e;
    switch (t->kind) {
    case TOK_NAME:
        advance(p);
        e = mk(p, AST_E_NAME, t->loc);
        e->name = t->sval;
        return e;
    case TOK_INT:
        advance(p);
        e = mk(p, AST_E_INT, t->loc);
        e->ival = t->ival;
        return e;
    case TOK_FLOAT:
        advance(p);
        e = mk(p, AST_E_FLOAT, t->loc);
        e->fval = t->fval;
        return e;
    case TOK_STRING: {
        advance(p);
        e = mk(p, AST_E_STRING, t->loc);
        if (kind(p) != TOK_STRING) {
            e->sval = t->sval;
            return e;
        }
        /* adjacent literals concatenate */
        tile_strbuf sb = {0};
        tile_sb_puts(&sb, t->sval);
        while (kind(p) == TOK_STRING) tile_sb_puts(&sb, advance(p)->sval);
        e->sval = tile_arena_strndup(p->arena, sb.data, sb.len);
        tile_sb_free(&sb);
        return e;
    }
    case TOK_KW_TRUE:
    case TOK_KW_FALSE:
        advance(p);
        e = mk(p, AST_E_BOOL, t->loc);
        e->ival = t->kind == TOK_KW_TRUE;
        return e;
    case TOK_KW_NONE:
        advance(p);
        return mk(p, AST_E_NONE, t->loc);
    case TOK_LPAREN: return parse_paren(p);
    case TOK_LBRACKET: return parse_list(p);
    case TOK_LBRACE: return parse_brace(p);
    case TOK_KW_YIELD: fail(p, t->loc, "unsupported: 'yield'");
    case TOK_DOT:
        if (peek_kind(p, 1) == TOK_DOT && peek_kind(p, 2) == TOK_DOT) {
            advance(p);
            advance(p);
            advance(p);
            return mk(p, AST_E_ELLIPSIS, t->loc);
        }
        expected(p, "expression");
    default:
        expected(p, "expression");
    }
}

typedef struct name_ref {
    const char *name;
    int idx;
} name_ref;

static int cmp_name_ref(const void *a, const void *b) {
    const name_ref *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

/* Index of the first name that repeats an earlier one, or -1 (O(n log n): argument
 * lists can be long in adversarial input). */
static int first_duplicate(const char *const *names, int n) {
    name_ref *r = tile_xmalloc(sizeof(name_ref) * (size_t)n);
    for (int i = 0; i < n; i++) r[i] = (name_ref){names[i], i};
    qsort(r, (size_t)n, sizeof *r, cmp_name_ref);
    int best = -1;
    for (int i = 1; i < n; i++)
        if (!strcmp(r[i].name, r[i - 1].name) && (best < 0 || r[i].idx < best)) best = r[i].idx;
    free(r);
    return best;
}

static ast_expr *parse_call(parser *p, ast_expr *fn) {
    advance(p); /* ( */
    plist args = {0}, kws = {0};
    while (kind(p) != TOK_RPAREN) {
        token *t = cur(p);
        if (t->kind == TOK_STAR) {
            advance(p);
            ast_expr *s = mk(p, AST_E_STARRED, t->loc);
            s->value = parse_test(p);
            pl_push(p, &args, fin(p, s));
        } else if (t->kind == TOK_DSTAR) {
            advance(p);
            ast_keyword *kw = TILE_NEW(p->arena, ast_keyword);
            kw->loc = t->loc;
            kw->name = NULL;
            kw->value = parse_test(p);
            pl_push(p, &kws, kw);
        } else if (t->kind == TOK_NAME && peek_kind(p, 1) == TOK_ASSIGN) {
            advance(p);
            advance(p);
            ast_keyword *kw = TILE_NEW(p->arena, ast_keyword);
            kw->loc = t->loc;
            kw->name = t->sval;
            kw->value = parse_test(p);
            pl_push(p, &kws, kw);
        } else {
            ast_expr *e = parse_test(p);
            if (kind(p) == TOK_KW_FOR) {
                if (args.len || kws.len) fail(p, e->loc, "generator expression must be parenthesized");
                e = parse_generator(p, e);
                if (kind(p) != TOK_RPAREN) fail(p, e->loc, "generator expression must be parenthesized");
            }
            if (kws.len) fail(p, e->loc, "positional argument follows keyword argument");
            pl_push(p, &args, e);
        }
        if (!accept(p, TOK_COMMA)) break;
    }
    expect_close(p, TOK_RPAREN, "',' or ')' in call arguments");
    ast_expr *c = mk(p, AST_E_CALL, fn->loc);
    c->value = fn;
    c->items = pl_exprs(&args);
    c->nitems = args.len;
    c->kwargs = TILE_NEW_ARRAY(p->arena, ast_keyword, kws.len ? kws.len : 1);
    for (int i = 0; i < kws.len; i++) c->kwargs[i] = *(ast_keyword *)kws.items[i];
    c->nkwargs = kws.len;
    if (kws.len > 1) {
        const char **names = TILE_NEW_ARRAY(p->arena, const char *, kws.len);
        int *where = TILE_NEW_ARRAY(p->arena, int, kws.len);
        int nn = 0;
        for (int i = 0; i < kws.len; i++)
            if (c->kwargs[i].name) { where[nn] = i; names[nn++] = c->kwargs[i].name; }
        int d = first_duplicate(names, nn);
        if (d >= 0) fail(p, c->kwargs[where[d]].loc, "keyword argument repeated: '%s'", names[d]);
    }
    return fin(p, c);
}

static ast_expr *parse_slice_item(parser *p) {
    ast_expr *lo = NULL;
    if (kind(p) != TOK_COLON) {
        lo = parse_test(p);
        if (kind(p) != TOK_COLON) return lo;
    }
    token *colon = advance(p);
    ast_expr *s = mk(p, AST_E_SLICE, lo ? lo->loc : colon->loc);
    s->lo = lo;
    tok_kind k = kind(p);
    if (k != TOK_COLON && k != TOK_COMMA && k != TOK_RBRACKET) s->hi = parse_test(p);
    if (accept(p, TOK_COLON)) {
        k = kind(p);
        if (k != TOK_COMMA && k != TOK_RBRACKET) s->step = parse_test(p);
    }
    return fin(p, s);
}

static ast_expr *parse_subscript(parser *p, ast_expr *v) {
    advance(p); /* [ */
    plist items = {0};
    for (;;) {
        pl_push(p, &items, parse_slice_item(p));
        if (!accept(p, TOK_COMMA)) break;
        if (kind(p) == TOK_RBRACKET) break;
    }
    expect_close(p, TOK_RBRACKET, "',' or ']' in subscript");
    ast_expr *e = mk(p, AST_E_SUBSCRIPT, v->loc);
    e->value = v;
    e->items = pl_exprs(&items);
    e->nitems = items.len;
    return fin(p, e);
}

static ast_expr *parse_primary(parser *p) {
    ast_expr *e = parse_atom(p);
    for (;;) {
        tok_kind k = kind(p);
        if (k == TOK_DOT) {
            advance(p);
            if (kind(p) != TOK_NAME) expected(p, "attribute name after '.'");
            token *n = advance(p);
            ast_expr *a = mk(p, AST_E_ATTR, n->loc);
            a->value = e;
            a->name = n->sval;
            e = fin(p, a);
        } else if (k == TOK_LPAREN) {
            e = parse_call(p, e);
        } else if (k == TOK_LBRACKET) {
            e = parse_subscript(p, e);
        } else {
            return e;
        }
    }
}

static ast_expr *parse_power(parser *p) {
    ast_expr *base = parse_primary(p);
    if (kind(p) != TOK_DSTAR) return base;
    token *t = advance(p);
    enter(p, t->loc);
    ast_expr *e = mk(p, AST_E_BINOP, t->loc);
    e->op = AST_OP_POW;
    e->lhs = base;
    e->rhs = parse_factor(p); /* right-associative; `2 ** -1` allowed */
    leave(p);
    return fin(p, e);
}

static ast_expr *parse_factor(parser *p) {
    tok_kind k = kind(p);
    if (k == TOK_MINUS || k == TOK_PLUS || k == TOK_TILDE) {
        token *t = advance(p);
        enter(p, t->loc);
        ast_expr *e = mk(p, AST_E_UNARY, t->loc);
        e->op = k == TOK_MINUS ? AST_OP_NEG : k == TOK_PLUS ? AST_OP_POS : AST_OP_INVERT;
        e->lhs = parse_factor(p);
        leave(p);
        return fin(p, e);
    }
    return parse_power(p);
}

static int binop_prec(tok_kind k, ast_op *op) {
    switch (k) {
    case TOK_PIPE: *op = AST_OP_BITOR; return 1;
    case TOK_CARET: *op = AST_OP_BITXOR; return 2;
    case TOK_AMP: *op = AST_OP_BITAND; return 3;
    case TOK_SHL: *op = AST_OP_SHL; return 4;
    case TOK_SHR: *op = AST_OP_SHR; return 4;
    case TOK_PLUS: *op = AST_OP_ADD; return 5;
    case TOK_MINUS: *op = AST_OP_SUB; return 5;
    case TOK_STAR: *op = AST_OP_MUL; return 6;
    case TOK_SLASH: *op = AST_OP_DIV; return 6;
    case TOK_DSLASH: *op = AST_OP_FLOORDIV; return 6;
    case TOK_PERCENT: *op = AST_OP_MOD; return 6;
    case TOK_AT: *op = AST_OP_MATMUL; return 6;
    default: return 0;
    }
}

/* Binary operators from `|` (prec 1) to `* / // % @` (prec 6), left-associative. */
static ast_expr *parse_binary(parser *p, int minprec) {
    ast_expr *lhs = parse_factor(p);
    for (;;) {
        ast_op op;
        int prec = binop_prec(kind(p), &op);
        if (!prec || prec < minprec) return lhs;
        token *t = advance(p);
        ast_expr *e = mk(p, AST_E_BINOP, t->loc);
        e->op = op;
        e->lhs = lhs;
        e->rhs = parse_binary(p, prec + 1);
        lhs = fin(p, e);
    }
}

static ast_expr *parse_comparison(parser *p) {
    ast_expr *lhs = parse_binary(p, 1);
    plist ops = {0}, items = {0};
    tile_loc loc = lhs->loc;
    for (;;) {
        token *t = cur(p);
        ast_op op;
        switch (t->kind) {
        case TOK_EQ: op = AST_OP_EQ; advance(p); break;
        case TOK_NE: op = AST_OP_NE; advance(p); break;
        case TOK_LT: op = AST_OP_LT; advance(p); break;
        case TOK_LE: op = AST_OP_LE; advance(p); break;
        case TOK_GT: op = AST_OP_GT; advance(p); break;
        case TOK_GE: op = AST_OP_GE; advance(p); break;
        case TOK_KW_IN: op = AST_OP_IN; advance(p); break;
        case TOK_KW_NOT:
            if (peek_kind(p, 1) != TOK_KW_IN) goto done;
            advance(p);
            advance(p);
            op = AST_OP_NOT_IN;
            break;
        case TOK_KW_IS:
            advance(p);
            op = accept(p, TOK_KW_NOT) ? AST_OP_IS_NOT : AST_OP_IS;
            break;
        default:
            goto done;
        }
        if (!ops.len) loc = t->loc;
        pl_push(p, &ops, (void *)(intptr_t)op);
        pl_push(p, &items, parse_binary(p, 1));
    }
done:
    if (!ops.len) return lhs;
    ast_expr *e = mk(p, AST_E_COMPARE, loc);
    e->lhs = lhs;
    e->items = pl_exprs(&items);
    e->nitems = items.len;
    e->cmp_ops = TILE_NEW_ARRAY(p->arena, ast_op, ops.len);
    for (int i = 0; i < ops.len; i++) e->cmp_ops[i] = (ast_op)(intptr_t)ops.items[i];
    return fin(p, e);
}

static ast_expr *parse_not(parser *p) {
    if (kind(p) != TOK_KW_NOT) return parse_comparison(p);
    token *t = advance(p);
    enter(p, t->loc);
    ast_expr *e = mk(p, AST_E_UNARY, t->loc);
    e->op = AST_OP_NOT;
    e->lhs = parse_not(p);
    leave(p);
    return fin(p, e);
}

static ast_expr *parse_boolop(parser *p, tok_kind k, ast_op op, ast_expr *(*sub)(parser *)) {
    ast_expr *first = sub(p);
    if (kind(p) != k) return first;
    plist items = {0};
    pl_push(p, &items, first);
    tile_loc loc = cur(p)->loc;
    while (accept(p, k)) pl_push(p, &items, sub(p));
    ast_expr *e = make_seq(p, AST_E_BOOLOP, loc, &items);
    e->op = op;
    return e;
}
static ast_expr *parse_and(parser *p) { return parse_boolop(p, TOK_KW_AND, AST_OP_AND, parse_not); }
static ast_expr *parse_or(parser *p) { return parse_boolop(p, TOK_KW_OR, AST_OP_OR, parse_and); }

/* A full expression: `a if c else b`, or anything below it. */
static ast_expr *parse_test(parser *p) {
    token *t = cur(p);
    if (t->kind == TOK_KW_LAMBDA) {
        advance(p);
        enter(p, t->loc);
        ast_expr *l = mk(p, AST_E_LAMBDA, t->loc);
        l->nparams = parse_params(p, TOK_COLON, false, &l->params);
        if (!accept(p, TOK_COLON)) expected(p, "':' after lambda parameters");
        l->value = parse_test(p);
        fin(p, l);
        for (int i = 0; i < l->nparams; i++)
            if (l->params[i].dflt && height(l->params[i].dflt) + 1 > height(l)) ((pnode *)l)->height = height(l->params[i].dflt) + 1;
        leave(p);
        return l;
    }
    enter(p, t->loc);
    ast_expr *e = parse_or(p);
    if (kind(p) == TOK_KW_IF) {
        token *it = advance(p);
        ast_expr *c = mk(p, AST_E_IFEXP, it->loc);
        c->lhs = e;
        c->cond = parse_or(p);
        if (!accept(p, TOK_KW_ELSE)) expected(p, "'else' in conditional expression");
        c->rhs = parse_test(p);
        e = fin(p, c);
    }
    leave(p);
    return e;
}

/* ---------- statements ---------- */
static void parse_block_body(parser *p, plist *out, bool toplevel);
static void parse_simple_stmts(parser *p, plist *out);

static ast_block to_block(plist *l) {
    ast_block b;
    b.stmts = (ast_stmt **)l->items;
    b.len = l->len;
    return b;
}

/* `: NEWLINE INDENT stmts DEDENT` or `: simple_stmts` */
static ast_block parse_suite(parser *p, const char *after, const token *header, const char *what) {
    if (kind(p) != TOK_COLON) {
        token *t = cur(p);
        fail(p, t->loc, "expected ':' after %s", after);
    }
    advance(p);
    plist stmts = {0};
    if (accept(p, TOK_NEWLINE)) {
        if (kind(p) != TOK_INDENT) {
            report(p, cur(p)->loc, "expected an indented block after %s on line %d", what, header->loc.line);
            return to_block(&stmts);
        }
        advance(p);
        parse_block_body(p, &stmts, false);
    } else {
        parse_simple_stmts(p, &stmts);
    }
    return to_block(&stmts);
}

static ast_stmt *parse_if(parser *p) {
    token *t = advance(p);
    ast_stmt *s = mk_stmt(p, AST_S_IF, t->loc);
    s->cond = parse_test(p);
    s->body = parse_suite(p, "'if' condition", t, "'if' statement");
    ast_stmt *last = s;
    int nelif = 0;
    for (;;) {
        if (kind(p) == TOK_KW_ELIF) {
            token *et = advance(p);
            /* each elif nests one level deeper in the tree: keep it walkable recursively */
            if (++nelif > MAX_ELIF)
                fail(p, et->loc, "too many 'elif' clauses in one 'if' statement (limit %d)", MAX_ELIF);
            ast_stmt *e = mk_stmt(p, AST_S_IF, et->loc);
            e->cond = parse_test(p);
            e->body = parse_suite(p, "'elif' condition", et, "'elif' statement");
            last->orelse.stmts = TILE_NEW_ARRAY(p->arena, ast_stmt *, 1);
            last->orelse.stmts[0] = e;
            last->orelse.len = 1;
            last = e;
            continue;
        }
        if (kind(p) == TOK_KW_ELSE) {
            token *et = advance(p);
            last->orelse = parse_suite(p, "'else'", et, "'else'");
        }
        return s;
    }
}

/* the optional `else:` of a while or for loop (sema rejects it, but it parses) */
static void parse_loop_else(parser *p, ast_stmt *s) {
    if (kind(p) != TOK_KW_ELSE) return;
    token *et = advance(p);
    s->orelse = parse_suite(p, "'else'", et, "'else'");
}

static ast_stmt *parse_while(parser *p) {
    token *t = advance(p);
    ast_stmt *s = mk_stmt(p, AST_S_WHILE, t->loc);
    s->cond = parse_test(p);
    s->body = parse_suite(p, "'while' condition", t, "'while' statement");
    parse_loop_else(p, s);
    return s;
}

static ast_stmt *parse_for(parser *p) {
    token *t = advance(p);
    ast_stmt *s = mk_stmt(p, AST_S_FOR, t->loc);
    ast_expr *target = parse_target_list(p);
    check_target(p, target);
    s->targets = one_expr(p, target);
    s->ntargets = 1;
    if (!accept(p, TOK_KW_IN)) expected(p, "'in' after for-loop target");
    s->iter = parse_testlist_star(p);
    s->body = parse_suite(p, "'for' header", t, "'for' statement");
    parse_loop_else(p, s);
    return s;
}

static ast_stmt *parse_with(parser *p) {
    token *t = advance(p);
    ast_stmt *s = mk_stmt(p, AST_S_WITH, t->loc);
    plist items = {0}, targets = {0};
    do {
        pl_push(p, &items, parse_test(p));
        ast_expr *target = NULL;
        if (accept(p, TOK_KW_AS)) {
            target = parse_star_or_binary(p);
            check_target(p, target);
        }
        pl_push(p, &targets, target);
    } while (accept(p, TOK_COMMA));
    s->with_items = pl_exprs(&items);
    s->with_targets = pl_exprs(&targets);
    s->nwith = items.len;
    s->body = parse_suite(p, "'with' items", t, "'with' statement");
    return s;
}

/* A parameter list up to (not including) `close`: `a, b: ann = 1, *args, c, **kw`, with
 * `*` and `/` markers. Annotations only where `annotations` (def, not lambda). */
static int parse_params(parser *p, tok_kind close, bool annotations, ast_param **out) {
    plist params = {0};
    bool seen_default = false, seen_star = false, seen_kwargs = false;
    while (kind(p) != close) {
        token *st = cur(p);
        int star = 0;
        if (st->kind == TOK_STAR) {
            advance(p);
            if (seen_star) fail(p, st->loc, "'*' may appear only once in a parameter list");
            if (kind(p) != TOK_NAME) { /* bare `*`: the parameters after it are keyword-only */
                seen_star = true;
                if (kind(p) == close) fail(p, st->loc, "named parameters must follow bare '*'");
                if (!accept(p, TOK_COMMA)) break;
                continue;
            }
            star = 1;
        } else if (st->kind == TOK_DSTAR) {
            advance(p);
            star = 2;
        } else if (st->kind == TOK_SLASH) {
            /* positional-only marker: no effect on how sema binds arguments */
            advance(p);
            if (seen_star || !params.len) fail(p, st->loc, "'/' must follow at least one parameter and come before '*'");
            if (!accept(p, TOK_COMMA)) break;
            continue;
        }
        if (seen_kwargs) fail(p, st->loc, "no parameter may follow '**' parameter");
        if (kind(p) != TOK_NAME) expected(p, "parameter name");
        token *nt = advance(p);
        ast_param *prm = TILE_NEW(p->arena, ast_param);
        prm->loc = nt->loc;
        prm->name = nt->sval;
        prm->star = star;
        prm->kwonly = seen_star && !star;
        if (annotations && accept(p, TOK_COLON)) prm->annotation = parse_test(p);
        if (kind(p) == TOK_ASSIGN) {
            if (star) fail(p, cur(p)->loc, "'%s' parameter cannot have a default value", star == 1 ? "*" : "**");
            advance(p);
            prm->dflt = parse_test(p);
            seen_default = true;
        } else if (!star && seen_default && !seen_star) {
            fail(p, nt->loc, "parameter without a default follows parameter with a default");
        }
        if (star == 1) seen_star = true;
        if (star == 2) seen_kwargs = true;
        pl_push(p, &params, prm);
        if (!accept(p, TOK_COMMA)) break;
    }
    ast_param *ps = TILE_NEW_ARRAY(p->arena, ast_param, params.len ? params.len : 1);
    for (int i = 0; i < params.len; i++) ps[i] = *(ast_param *)params.items[i];
    if (params.len > 1) {
        const char **names = TILE_NEW_ARRAY(p->arena, const char *, params.len);
        for (int i = 0; i < params.len; i++) names[i] = ps[i].name;
        int d = first_duplicate(names, params.len);
        if (d >= 0) fail(p, ps[d].loc, "duplicate parameter '%s'", names[d]);
    }
    *out = ps;
    return params.len;
}

static ast_stmt *parse_class(parser *p, plist *decos) {
    token *t = advance(p);
    ast_stmt *s = mk_stmt(p, AST_S_CLASS, t->loc);
    s->decorators = pl_exprs(decos);
    s->ndecorators = decos->len;
    if (kind(p) != TOK_NAME) expected(p, "class name after 'class'");
    s->name = advance(p)->sval;
    if (kind(p) == TOK_LPAREN) {
        ast_expr *fake = mk(p, AST_E_NAME, t->loc);
        fake->name = s->name;
        ast_expr *c = parse_call(p, fake);
        s->bases = c->items;
        s->nbases = c->nitems;
    }
    s->body = parse_suite(p, "class header", t, "class definition");
    return s;
}

static ast_stmt *parse_funcdef(parser *p) {
    plist decos = {0};
    while (kind(p) == TOK_AT) {
        advance(p);
        ast_expr *d = parse_test(p);
        if (!accept(p, TOK_NEWLINE)) expected(p, "end of line after decorator");
        pl_push(p, &decos, d);
    }
    if (kind(p) == TOK_KW_CLASS) return parse_class(p, &decos);
    if (kind(p) != TOK_KW_DEF) expected(p, "'def' after decorator");
    token *t = advance(p);
    ast_stmt *s = mk_stmt(p, AST_S_FUNCDEF, t->loc);
    s->decorators = pl_exprs(&decos);
    s->ndecorators = decos.len;
    if (kind(p) != TOK_NAME) expected(p, "function name after 'def'");
    s->name = advance(p)->sval;
    if (!accept(p, TOK_LPAREN)) expected(p, "'(' after function name");
    ast_param *params;
    s->nparams = parse_params(p, TOK_RPAREN, true, &params);
    s->params = params;
    if (!accept(p, TOK_RPAREN)) expected(p, "',' or ')' in parameter list");
    if (accept(p, TOK_ARROW)) s->returns = parse_test(p);
    s->body = parse_suite(p, "function signature", t, "function definition");
    return s;
}

static ast_stmt *parse_try(parser *p) {
    token *t = advance(p);
    ast_stmt *s = mk_stmt(p, AST_S_TRY, t->loc);
    s->body = parse_suite(p, "'try'", t, "'try' statement");
    plist hs = {0};
    while (kind(p) == TOK_NAME && !strcmp(cur(p)->sval, "except")) {
        token *et = advance(p);
        ast_handler *h = TILE_NEW(p->arena, ast_handler);
        h->loc = et->loc;
        if (kind(p) != TOK_COLON) {
            h->type = parse_test(p);
            if (kind(p) == TOK_COMMA) { /* except (A, B) written without parentheses is Python 2 */
                fail(p, cur(p)->loc, "multiple exception types must be parenthesized");
            }
            if (accept(p, TOK_KW_AS)) {
                if (kind(p) != TOK_NAME) expected(p, "name after 'as'");
                h->name = advance(p)->sval;
            }
        }
        h->body = parse_suite(p, "'except' clause", et, "'except' clause");
        pl_push(p, &hs, h);
    }
    s->handlers = TILE_NEW_ARRAY(p->arena, ast_handler, hs.len ? hs.len : 1);
    for (int i = 0; i < hs.len; i++) s->handlers[i] = *(ast_handler *)hs.items[i];
    s->nhandlers = hs.len;
    if (kind(p) == TOK_KW_ELSE) {
        if (!hs.len) fail(p, cur(p)->loc, "'else' of a 'try' needs an 'except' clause");
        token *et = advance(p);
        s->orelse = parse_suite(p, "'else'", et, "'else'");
    }
    if (kind(p) == TOK_NAME && !strcmp(cur(p)->sval, "finally")) {
        token *ft = advance(p);
        s->finalbody = parse_suite(p, "'finally'", ft, "'finally' clause");
    }
    if (!hs.len && !s->finalbody.len) fail(p, t->loc, "'try' needs an 'except' or 'finally' clause");
    return s;
}

static const char *parse_dotted_name(parser *p, const char *what) {
    if (kind(p) != TOK_NAME) expected(p, what);
    tile_strbuf sb = {0};
    tile_sb_puts(&sb, advance(p)->sval);
    while (kind(p) == TOK_DOT) {
        advance(p);
        if (kind(p) != TOK_NAME) {
            tile_sb_free(&sb);
            expected(p, "name after '.'");
        }
        tile_sb_putc(&sb, '.');
        tile_sb_puts(&sb, advance(p)->sval);
    }
    char *s = tile_arena_strndup(p->arena, sb.data, sb.len);
    tile_sb_free(&sb);
    return s;
}

static void set_names(ast_stmt *s, plist *names, plist *asnames) {
    s->names = (const char **)names->items;
    s->asnames = (const char **)asnames->items;
    s->nnames = names->len;
}

static ast_stmt *parse_import(parser *p) {
    token *t = advance(p);
    ast_stmt *s = mk_stmt(p, AST_S_IMPORT, t->loc);
    plist names = {0}, asnames = {0};
    do {
        pl_push(p, &names, (void *)parse_dotted_name(p, "module name"));
        const char *as = NULL;
        if (accept(p, TOK_KW_AS)) {
            if (kind(p) != TOK_NAME) expected(p, "name after 'as'");
            as = advance(p)->sval;
        }
        pl_push(p, &asnames, (void *)as);
    } while (accept(p, TOK_COMMA));
    set_names(s, &names, &asnames);
    return s;
}

static ast_stmt *parse_from(parser *p) {
    token *t = advance(p);
    ast_stmt *s = mk_stmt(p, AST_S_IMPORTFROM, t->loc);
    int ndots = 0;
    while (kind(p) == TOK_DOT) {
        advance(p);
        if (++ndots > 64) fail(p, cur(p)->loc, "too many leading dots in relative import");
    }
    const char *mod = "";
    if (kind(p) == TOK_NAME || !ndots) mod = parse_dotted_name(p, "module name after 'from'");
    s->module = tile_arena_printf(p->arena, "%.*s%s", ndots, "................................................................", mod);
    if (!accept(p, TOK_KW_IMPORT)) expected(p, "'import'");
    plist names = {0}, asnames = {0};
    if (kind(p) == TOK_STAR) {
        advance(p);
        pl_push(p, &names, (void *)"*");
        pl_push(p, &asnames, NULL);
    } else {
        bool paren = accept(p, TOK_LPAREN);
        do {
            if (paren && kind(p) == TOK_RPAREN && names.len) break;
            if (kind(p) != TOK_NAME) expected(p, "name to import");
            pl_push(p, &names, (void *)advance(p)->sval);
            const char *as = NULL;
            if (accept(p, TOK_KW_AS)) {
                if (kind(p) != TOK_NAME) expected(p, "name after 'as'");
                as = advance(p)->sval;
            }
            pl_push(p, &asnames, (void *)as);
        } while (accept(p, TOK_COMMA));
        if (paren && !accept(p, TOK_RPAREN)) expected(p, "',' or ')'");
    }
    set_names(s, &names, &asnames);
    return s;
}

static bool is_augassign(tok_kind k, ast_op *op) {
    switch (k) {
    case TOK_PLUS_ASSIGN: *op = AST_OP_ADD; return true;
    case TOK_MINUS_ASSIGN: *op = AST_OP_SUB; return true;
    case TOK_STAR_ASSIGN: *op = AST_OP_MUL; return true;
    case TOK_SLASH_ASSIGN: *op = AST_OP_DIV; return true;
    case TOK_DSLASH_ASSIGN: *op = AST_OP_FLOORDIV; return true;
    case TOK_PERCENT_ASSIGN: *op = AST_OP_MOD; return true;
    case TOK_DSTAR_ASSIGN: *op = AST_OP_POW; return true;
    case TOK_SHL_ASSIGN: *op = AST_OP_SHL; return true;
    case TOK_SHR_ASSIGN: *op = AST_OP_SHR; return true;
    case TOK_AMP_ASSIGN: *op = AST_OP_BITAND; return true;
    case TOK_PIPE_ASSIGN: *op = AST_OP_BITOR; return true;
    case TOK_CARET_ASSIGN: *op = AST_OP_BITXOR; return true;
    case TOK_AT_ASSIGN: *op = AST_OP_MATMUL; return true;
    default: return false;
    }
}

static ast_stmt *parse_expr_stmt(parser *p) {
    token *t = cur(p);
    ast_expr *e = parse_testlist_star(p);
    ast_op op;
    if (at_walrus(p)) expected(p, "end of line");
    if (kind(p) == TOK_COLON) {
        if (e->kind == AST_E_TUPLE || e->kind == AST_E_LIST)
            fail(p, e->loc, "only a single target (not a %s) can be annotated", expr_desc(e));
        if (e->kind != AST_E_NAME && e->kind != AST_E_ATTR && e->kind != AST_E_SUBSCRIPT)
            fail(p, e->loc, "illegal target for annotation: %s", expr_desc(e));
        advance(p);
        ast_stmt *s = mk_stmt(p, AST_S_ANNASSIGN, t->loc);
        s->targets = one_expr(p, e);
        s->ntargets = 1;
        s->annotation = parse_test(p);
        if (accept(p, TOK_ASSIGN)) s->value = parse_testlist_star(p);
        return s;
    }
    if (is_augassign(kind(p), &op)) {
        if (e->kind != AST_E_NAME && e->kind != AST_E_ATTR && e->kind != AST_E_SUBSCRIPT)
            fail(p, e->loc, "illegal target for augmented assignment: %s", expr_desc(e));
        advance(p);
        ast_stmt *s = mk_stmt(p, AST_S_AUGASSIGN, t->loc);
        s->targets = one_expr(p, e);
        s->ntargets = 1;
        s->op = op;
        s->value = parse_testlist_star(p);
        return s;
    }
    if (kind(p) == TOK_ASSIGN) {
        plist parts = {0};
        pl_push(p, &parts, e);
        while (accept(p, TOK_ASSIGN)) pl_push(p, &parts, parse_testlist_star(p));
        for (int i = 0; i < parts.len - 1; i++) check_target(p, parts.items[i]);
        ast_stmt *s = mk_stmt(p, AST_S_ASSIGN, t->loc);
        s->targets = pl_exprs(&parts);
        s->ntargets = parts.len - 1;
        s->value = parts.items[parts.len - 1];
        return s;
    }
    ast_stmt *s = mk_stmt(p, AST_S_EXPR, t->loc);
    s->value = e;
    return s;
}

static ast_stmt *parse_small_stmt(parser *p) {
    token *t = cur(p);
    ast_stmt *s;
    switch (t->kind) {
    case TOK_KW_PASS: advance(p); return mk_stmt(p, AST_S_PASS, t->loc);
    case TOK_KW_BREAK: advance(p); return mk_stmt(p, AST_S_BREAK, t->loc);
    case TOK_KW_CONTINUE: advance(p); return mk_stmt(p, AST_S_CONTINUE, t->loc);
    case TOK_KW_RETURN:
        advance(p);
        s = mk_stmt(p, AST_S_RETURN, t->loc);
        if (starts_expr(kind(p))) s->value = parse_testlist_star(p);
        return s;
    case TOK_KW_IMPORT: return parse_import(p);
    case TOK_KW_FROM: return parse_from(p);
    case TOK_KW_GLOBAL: {
        advance(p);
        s = mk_stmt(p, AST_S_GLOBAL, t->loc);
        plist names = {0}, asnames = {0};
        do {
            if (kind(p) != TOK_NAME) expected(p, "name after 'global'");
            pl_push(p, &names, (void *)advance(p)->sval);
            pl_push(p, &asnames, NULL);
        } while (accept(p, TOK_COMMA));
        set_names(s, &names, &asnames);
        return s;
    }
    case TOK_KW_ASSERT:
        advance(p);
        s = mk_stmt(p, AST_S_ASSERT, t->loc);
        s->cond = parse_test(p);
        if (accept(p, TOK_COMMA)) s->value = parse_test(p);
        return s;
    case TOK_KW_DEL: {
        advance(p);
        s = mk_stmt(p, AST_S_DEL, t->loc);
        ast_expr *e = parse_testlist_star(p);
        check_target(p, e);
        s->targets = one_expr(p, e);
        s->ntargets = 1;
        return s;
    }
    case TOK_KW_RAISE:
        advance(p);
        s = mk_stmt(p, AST_S_RAISE, t->loc);
        if (starts_expr(kind(p))) {
            s->value = parse_test(p);
            if (accept(p, TOK_KW_FROM)) parse_test(p); /* `raise X from e`: the cause is dropped */
        }
        return s;
    case TOK_KW_YIELD: fail(p, t->loc, "unsupported: 'yield'");
    case TOK_KW_CLASS: case TOK_KW_TRY:
    case TOK_KW_DEF: case TOK_KW_IF: case TOK_KW_FOR: case TOK_KW_WHILE: case TOK_KW_WITH: case TOK_AT:
        fail(p, t->loc, "compound statement %s must start on its own line", tok_kind_name(t->kind));
    case TOK_NAME:
        if (!strcmp(t->sval, "nonlocal") && peek_kind(p, 1) == TOK_NAME) {
            advance(p);
            s = mk_stmt(p, AST_S_NONLOCAL, t->loc);
            plist names = {0}, asnames = {0};
            do {
                if (kind(p) != TOK_NAME) expected(p, "name after 'nonlocal'");
                pl_push(p, &names, (void *)advance(p)->sval);
                pl_push(p, &asnames, NULL);
            } while (accept(p, TOK_COMMA));
            set_names(s, &names, &asnames);
            return s;
        }
        /* Python keywords TileLang does not support (lexed as names) */
        if (peek_kind(p, 1) == TOK_NAME || peek_kind(p, 1) == TOK_COLON || peek_kind(p, 1) == TOK_KW_DEF ||
            peek_kind(p, 1) == TOK_KW_FOR || peek_kind(p, 1) == TOK_KW_WITH) {
            static const char *const soft[] = {"async", "await", "except", "finally"};
            for (size_t i = 0; i < sizeof soft / sizeof soft[0]; i++)
                if (!strcmp(t->sval, soft[i])) fail(p, t->loc, "unsupported: '%s'", soft[i]);
        }
        return parse_expr_stmt(p);
    default:
        return parse_expr_stmt(p);
    }
}

static void parse_simple_stmts(parser *p, plist *out) {
    for (;;) {
        pl_push(p, out, parse_small_stmt(p));
        if (!accept(p, TOK_SEMI)) break;
        if (kind(p) == TOK_NEWLINE) break;
    }
    if (!accept(p, TOK_NEWLINE)) {
        token *t = cur(p);
        if (at_walrus(p)) expected(p, "end of line");
        fail(p, t->loc, "unexpected %s after statement", tok_desc(p, t));
    }
}

static void parse_stmt(parser *p, plist *out) {
    token *t = cur(p);
    switch (t->kind) {
    case TOK_INDENT: {
        report(p, t->loc, "unexpected indent");
        advance(p);
        plist junk = {0};
        parse_block_body(p, &junk, false);
        return;
    }
    case TOK_AT:
    case TOK_KW_DEF: pl_push(p, out, parse_funcdef(p)); return;
    case TOK_KW_IF: pl_push(p, out, parse_if(p)); return;
    case TOK_KW_WHILE: pl_push(p, out, parse_while(p)); return;
    case TOK_KW_FOR: pl_push(p, out, parse_for(p)); return;
    case TOK_KW_WITH: pl_push(p, out, parse_with(p)); return;
    case TOK_KW_ELSE: fail(p, t->loc, "'else' without a matching 'if', 'for' or 'while'");
    case TOK_KW_ELIF: fail(p, t->loc, "'elif' without a matching 'if'");
    case TOK_KW_CLASS: {
        plist none = {0};
        pl_push(p, out, parse_class(p, &none));
        return;
    }
    case TOK_KW_TRY: pl_push(p, out, parse_try(p)); return;
    default: parse_simple_stmts(p, out); return;
    }
}

/* Skip the rest of a broken statement: up to the end of its logical line, plus an
 * indented block that follows (parsed for errors, then dropped). */
static void recover(parser *p) {
    while (kind(p) != TOK_NEWLINE && kind(p) != TOK_EOF && kind(p) != TOK_INDENT && kind(p) != TOK_DEDENT)
        advance(p);
    accept(p, TOK_NEWLINE);
    for (;;) {
        if (kind(p) == TOK_INDENT && !tile_diags_full(p->diags)) {
            advance(p);
            plist junk = {0};
            parse_block_body(p, &junk, false);
        }
        /* `elif`/`else` clauses right after a broken compound statement belong to it */
        if (kind(p) != TOK_KW_ELIF && kind(p) != TOK_KW_ELSE) return;
        while (kind(p) != TOK_NEWLINE && kind(p) != TOK_EOF && kind(p) != TOK_INDENT && kind(p) != TOK_DEDENT)
            advance(p);
        accept(p, TOK_NEWLINE);
    }
}

static void parse_stmt_guarded(parser *p, plist *out) {
    jmp_buf jb;
    jmp_buf *const saved = p->jb;
    const int depth = p->depth;
    p->jb = &jb;
    if (setjmp(jb)) {
        p->jb = saved;
        p->depth = depth;
        recover(p);
        return;
    }
    parse_stmt(p, out);
    p->jb = saved;
}

/* Statements up to the DEDENT closing the block (consumed) or end of file. At top level
 * (toplevel), runs to end of file. */
static void parse_block_body(parser *p, plist *out, bool toplevel) {
    if (!toplevel) enter(p, cur(p)->loc);
    for (;;) {
        if (tile_diags_full(p->diags)) break;
        tok_kind k = kind(p);
        if (k == TOK_EOF) break;
        if (k == TOK_DEDENT) {
            advance(p);
            if (toplevel) continue;
            break;
        }
        if (k == TOK_NEWLINE) {
            advance(p);
            continue;
        }
        int before = p->pos;
        parse_stmt_guarded(p, out);
        if (p->pos == before) advance(p); /* never loop in place */
    }
    if (!toplevel) leave(p);
}

/* ---------- entry point ---------- */

typedef struct diag_ref {
    const tile_diag *d;
    int order;
} diag_ref;

static int cmp_diag(const void *a, const void *b) {
    const diag_ref *x = a, *y = b;
    if (x->d->loc.line != y->d->loc.line) return x->d->loc.line < y->d->loc.line ? -1 : 1;
    if (x->d->loc.col != y->d->loc.col) return x->d->loc.col < y->d->loc.col ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

ast_module *tile_parse(const tile_source *src, tile_arena *arena, tile_diags *diags) {
    ast_module *m = TILE_NEW(arena, ast_module);
    m->src = src;
    int remaining = 0; /* 0: unlimited */
    if (diags->max_errors > 0) {
        remaining = diags->max_errors - diags->errors;
        if (remaining <= 0) return m;
    }

    tile_diags ld, pd;
    tile_diags_init(&ld);
    tile_diags_init(&pd);
    ld.max_errors = remaining;
    token_list tl = tile_lex(src, arena, &ld);

    if (!tile_diags_full(&ld)) {
        parser P;
        memset(&P, 0, sizeof P);
        P.src = src;
        P.arena = arena;
        P.diags = &pd;
        P.toks = tl.toks;
        P.ntoks = tl.len;
        pd.max_errors = remaining ? remaining - ld.errors : 0;
        for (int i = 0; i < ld.len; i++)
            if (ld.items[i].loc.line > P.nlines) P.nlines = ld.items[i].loc.line;
        unsigned char *lexerr = tile_arena_alloc(arena, (size_t)P.nlines + 1);
        for (int i = 0; i < ld.len; i++)
            if (ld.items[i].loc.line >= 1) lexerr[ld.items[i].loc.line] = 1;
        P.lexerr = lexerr;
        int depth = 0;
        for (int i = 0; i < tl.len; i++) {
            tok_kind k = tl.toks[i].kind;
            if (k == TOK_LPAREN || k == TOK_LBRACKET || k == TOK_LBRACE) {
                if (depth++ == 0) P.unclosed = tl.toks[i].loc;
            } else if (k == TOK_RPAREN || k == TOK_RBRACKET || k == TOK_RBRACE) {
                if (depth > 0) depth--;
            }
        }
        if (depth == 0) P.unclosed.line = 0;

        plist *body = TILE_NEW(arena, plist); /* not a local: survives a longjmp */
        jmp_buf top;
        P.jb = &top;
        if (!setjmp(top)) parse_block_body(&P, body, true);
        m->body = to_block(body);
    }

    /* merge lexer and parser diagnostics in source order */
    int n = ld.len + pd.len;
    if (n) {
        diag_ref *refs = tile_xmalloc(sizeof(diag_ref) * (size_t)n);
        for (int i = 0; i < ld.len; i++) refs[i] = (diag_ref){&ld.items[i], i};
        for (int i = 0; i < pd.len; i++) refs[ld.len + i] = (diag_ref){&pd.items[i], ld.len + i};
        qsort(refs, (size_t)n, sizeof *refs, cmp_diag);
        for (int i = 0; i < n; i++) {
            const tile_diag *d = refs[i].d;
            if (d->level == TILE_DIAG_ERROR) tile_error_at(diags, d->loc, "%s", d->msg);
            else if (d->level == TILE_DIAG_WARNING) tile_warning_at(diags, d->loc, "%s", d->msg);
            else tile_note_at(diags, d->loc, "%s", d->msg);
        }
        free(refs);
    }
    tile_diags_free(&ld);
    tile_diags_free(&pd);
    return m;
}
