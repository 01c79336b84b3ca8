/* front.h — lexer and parser: TileLang source text -> AST.
 *
 * In:  a tile_source (file contents).
 * Out: an ast_module (list of statements) allocated in a caller-owned arena, and
 *      diagnostics in a tile_diags. The AST is a faithful, untyped tree of the Python
 *      subset TileLang uses; it knows nothing of tensors or dtypes (sema does).
 *
 * The parser never crashes on bad input: on a syntax error it reports
 * file:line:col: error: ..., skips to the next statement line at the same or outer
 * indentation, and goes on, so several errors are reported per run.
 */
#ifndef TILE_FRONT_H
#define TILE_FRONT_H

#include "../core/core.h"

/* ---------- tokens ---------- */
#define TILE_TOKENS(X)                                                                    \
    X(EOF, "end of file") X(NEWLINE, "newline") X(INDENT, "indent") X(DEDENT, "dedent")      \
    X(NAME, "name") X(INT, "integer") X(FLOAT, "number") X(STRING, "string")                 \
    X(LPAREN, "'('") X(RPAREN, "')'") X(LBRACKET, "'['") X(RBRACKET, "']'")                  \
    X(LBRACE, "'{'") X(RBRACE, "'}'") X(COMMA, "','") X(COLON, "':'") X(DOT, "'.'")          \
    X(SEMI, "';'") X(AT, "'@'") X(ARROW, "'->'") X(ASSIGN, "'='")                            \
    X(PLUS, "'+'") X(MINUS, "'-'") X(STAR, "'*'") X(SLASH, "'/'") X(DSLASH, "'//'")          \
    X(PERCENT, "'%'") X(DSTAR, "'**'") X(SHL, "'<<'") X(SHR, "'>>'") X(AMP, "'&'")           \
    X(PIPE, "'|'") X(CARET, "'^'") X(TILDE, "'~'")                                           \
    X(EQ, "'=='") X(NE, "'!='") X(LT, "'<'") X(LE, "'<='") X(GT, "'>'") X(GE, "'>='")        \
    X(PLUS_ASSIGN, "'+='") X(MINUS_ASSIGN, "'-='") X(STAR_ASSIGN, "'*='")                    \
    X(SLASH_ASSIGN, "'/='") X(DSLASH_ASSIGN, "'//='") X(PERCENT_ASSIGN, "'%='")              \
    X(DSTAR_ASSIGN, "'**='") X(SHL_ASSIGN, "'<<='") X(SHR_ASSIGN, "'>>='")                   \
    X(AMP_ASSIGN, "'&='") X(PIPE_ASSIGN, "'|='") X(CARET_ASSIGN, "'^='")                     \
    X(KW_DEF, "'def'") X(KW_RETURN, "'return'") X(KW_IF, "'if'") X(KW_ELIF, "'elif'")        \
    X(KW_ELSE, "'else'") X(KW_FOR, "'for'") X(KW_WHILE, "'while'") X(KW_IN, "'in'")          \
    X(KW_NOT, "'not'") X(KW_AND, "'and'") X(KW_OR, "'or'") X(KW_IS, "'is'")                  \
    X(KW_WITH, "'with'") X(KW_AS, "'as'") X(KW_PASS, "'pass'") X(KW_BREAK, "'break'")        \
    X(KW_CONTINUE, "'continue'") X(KW_IMPORT, "'import'") X(KW_FROM, "'from'")               \
    X(KW_TRUE, "'True'") X(KW_FALSE, "'False'") X(KW_NONE, "'None'")                         \
    X(KW_ASSERT, "'assert'") X(KW_LAMBDA, "'lambda'") X(KW_GLOBAL, "'global'")               \
    X(KW_CLASS, "'class'") X(KW_DEL, "'del'") X(KW_YIELD, "'yield'") X(KW_TRY, "'try'")      \
    X(KW_RAISE, "'raise'") X(AT_ASSIGN, "'@='")

typedef enum tok_kind {
#define X(e, s) TOK_##e,
    TILE_TOKENS(X)
#undef X
    TOK_COUNT
} tok_kind;

const char *tok_kind_name(tok_kind k); /* "'('", "name", ... for messages */

typedef struct token {
    tok_kind kind;
    tile_loc loc;
    const char *start; /* points into the source text */
    int len;
    /* decoded values */
    int64_t ival;      /* TOK_INT (overflow beyond int64 is a diagnostic) */
    double fval;       /* TOK_FLOAT */
    char *sval;        /* TOK_STRING (escapes decoded, arena-allocated), TOK_NAME (arena copy) */
} token;

/* Tokenise a whole source. Produces NEWLINE/INDENT/DEDENT like Python (implicit line
 * joining inside brackets, backslash continuation, comments, blank lines ignored,
 * inconsistent dedent is an error). Always ends with TOK_EOF. Tokens live in `arena`. */
typedef struct token_list {
    token *toks;
    int len;
} token_list;
token_list tile_lex(const tile_source *src, tile_arena *arena, tile_diags *diags);

/* ---------- AST ---------- */
#define AST_EXPR_KINDS(X)                                                                 \
    X(NAME)      /* name */                                                              \
    X(INT)       /* ival */                                                              \
    X(FLOAT)     /* fval */                                                              \
    X(STRING)    /* sval */                                                              \
    X(BOOL)      /* ival 0/1 (True/False) */                                             \
    X(NONE)                                                                              \
    X(TUPLE)     /* items (also the implicit tuple `a, b`) */                            \
    X(LIST)      /* items */                                                             \
    X(ATTR)      /* value.attr : value, name */                                          \
    X(SUBSCRIPT) /* value[items...] : value, items (each may be a SLICE); `a[i, j]` has   \
                    two items, `a[(i, j)]` one TUPLE item */                             \
    X(SLICE)     /* lo:hi:step, each may be NULL : lo, hi, step */                       \
    X(CALL)      /* func(args..., kw=...) : value = func, items = positional args,       \
                    kwargs = keyword args */                                             \
    X(GENERATOR) /* (elt for targets in iter if cond) : value = elt, comp */             \
    X(BINOP)     /* lhs op rhs : op, lhs, rhs */                                         \
    X(UNARY)     /* op operand : op (AST_OP_NEG, AST_OP_POS, AST_OP_INVERT, AST_OP_NOT), lhs */ \
    X(COMPARE)   /* chain: lhs op0 items[0] op1 items[1] ... : lhs, cmp_ops, items */    \
    X(BOOLOP)    /* a and b and c / a or b : op (AST_OP_AND/OR), items (>= 2) */         \
    X(IFEXP)     /* a if cond else b : lhs = a, cond, rhs = b */                         \
    X(STARRED)   /* *value (in calls and targets) : value */                             \
    X(DICT)      /* {k: v, **d} : items = keys (NULL for a `**d` entry), dvals = values  */ \
    X(SET)       /* {a, b} : items                                                       */ \
    X(LISTCOMP)  /* [elt for ... in ... if ...] : value = elt, comp                      */ \
    X(SETCOMP)   /* {elt for ...} : value = elt, comp                                    */ \
    X(DICTCOMP)  /* {k: v for ...} : lhs = key, rhs = value, comp                        */ \
    X(LAMBDA)    /* lambda params: body : params, nparams, value = body                  */ \
    X(ELLIPSIS)  /* ... */

typedef enum ast_expr_kind {
#define X(e) AST_E_##e,
    AST_EXPR_KINDS(X)
#undef X
    AST_E_COUNT
} ast_expr_kind;

#define AST_OPS(X)                                                            \
    X(ADD, "+") X(SUB, "-") X(MUL, "*") X(DIV, "/") X(FLOORDIV, "//")            \
    X(MOD, "%") X(POW, "**") X(SHL, "<<") X(SHR, ">>") X(BITAND, "&")            \
    X(BITOR, "|") X(BITXOR, "^") X(MATMUL, "@")                                  \
    X(NEG, "-") X(POS, "+") X(INVERT, "~") X(NOT, "not")                         \
    X(AND, "and") X(OR, "or")                                                    \
    X(EQ, "==") X(NE, "!=") X(LT, "<") X(LE, "<=") X(GT, ">") X(GE, ">=")        \
    X(IS, "is") X(IS_NOT, "is not") X(IN, "in") X(NOT_IN, "not in")

typedef enum ast_op {
#define X(e, s) AST_OP_##e,
    AST_OPS(X)
#undef X
    AST_OP_COUNT
} ast_op;
const char *ast_op_str(ast_op op);
const char *ast_expr_kind_name(ast_expr_kind k); /* "NAME", "CALL", ... */

typedef struct ast_expr ast_expr;
typedef struct ast_stmt ast_stmt;

typedef struct ast_keyword {
    tile_loc loc;
    const char *name;   /* NULL for a `**mapping` argument */
    ast_expr *value;
} ast_keyword;

/* One `for targets in iter [if cond]...` clause of a comprehension; `next` is the
 * following `for` clause of a nested comprehension (`for a in x for b in y`), or NULL. */
typedef struct ast_comp {
    ast_expr *target;   /* NAME or TUPLE of NAMEs */
    ast_expr *iter;
    ast_expr **conds;   /* `if` filters */
    int nconds;
    struct ast_comp *next;
} ast_comp;

typedef struct ast_param ast_param;

struct ast_expr {
    ast_expr_kind kind;
    tile_loc loc;
    const char *name;       /* NAME, ATTR (attribute name) */
    int64_t ival;           /* INT, BOOL */
    double fval;            /* FLOAT */
    const char *sval;       /* STRING */
    ast_op op;              /* BINOP, UNARY, BOOLOP */
    ast_expr *value;        /* ATTR, SUBSCRIPT, CALL (callee), GENERATOR (element), STARRED */
    ast_expr *lhs, *rhs;    /* BINOP, UNARY (lhs), IFEXP (lhs=then, rhs=else), COMPARE (lhs) */
    ast_expr *cond;         /* IFEXP */
    ast_expr *lo, *hi, *step; /* SLICE */
    ast_expr **items;       /* TUPLE, LIST, SUBSCRIPT indices, CALL positional args, BOOLOP, COMPARE rhs list */
    int nitems;
    ast_op *cmp_ops;        /* COMPARE: nitems operators */
    ast_keyword *kwargs;    /* CALL */
    int nkwargs;
    ast_comp *comp;         /* GENERATOR, LISTCOMP, SETCOMP, DICTCOMP */
    ast_expr **dvals;       /* DICT: nitems values */
    ast_param *params;      /* LAMBDA */
    int nparams;
    bool parenthesized;     /* written inside ( ) — `(a, b)` vs `a, b` is the same TUPLE otherwise */
};

#define AST_STMT_KINDS(X)                                                                    \
    X(EXPR)       /* value */                                                               \
    X(ASSIGN)     /* targets[0] = targets[1] = ... = value : targets, ntargets, value      */ \
    X(AUGASSIGN)  /* target op= value : target = targets[0], op, value                      */ \
    X(ANNASSIGN)  /* target: annotation [= value] : targets[0], annotation, value (may be NULL) */ \
    X(FOR)        /* for target in iter: body [else: orelse] : targets[0], iter, body, orelse */ \
    X(WHILE)      /* while cond: body : cond, body, orelse                                  */ \
    X(IF)         /* if cond: body elif...: (elif becomes a nested IF in orelse) else: orelse */ \
    X(WITH)       /* with items[0] as targets[0], ...: body : with_items, with_targets (NULL if no `as`), nwith */ \
    X(RETURN)     /* return [value] */                                                      \
    X(PASS) X(BREAK) X(CONTINUE)                                                            \
    X(FUNCDEF)    /* def name(params) -> returns: body, with decorators */                  \
    X(IMPORT)     /* import a.b.c [as x], ... : names/asnames */                            \
    X(IMPORTFROM) /* from module import a [as x], ... : module, names/asnames */            \
    X(ASSERT)     /* assert cond [, msg] : cond, value = msg */                             \
    X(GLOBAL)     /* global names (accepted, no effect; names) */                           \
    X(NONLOCAL)   /* nonlocal names (accepted, no effect; names) */                         \
    X(CLASS)      /* class name(bases): body, with decorators : name, body, decorators      */ \
    X(TRY)        /* try: body except...: handlers else: orelse finally: finalbody          */ \
    X(RAISE)      /* raise [value] */                                                       \
    X(DEL)        /* del targets : targets, ntargets */

typedef enum ast_stmt_kind {
#define X(e) AST_S_##e,
    AST_STMT_KINDS(X)
#undef X
    AST_S_COUNT
} ast_stmt_kind;

struct ast_param {
    tile_loc loc;
    const char *name;
    ast_expr *annotation; /* may be NULL */
    ast_expr *dflt;       /* may be NULL */
    int star;             /* 0, 1 for *args, 2 for **kwargs */
    bool kwonly;          /* after a bare `*` or `*args`: only passed by keyword */
};

typedef struct ast_block {
    ast_stmt **stmts;
    int len;
} ast_block;

/* One `except [type [as name]]:` clause of a TRY. */
typedef struct ast_handler {
    tile_loc loc;
    ast_expr *type;       /* may be NULL */
    const char *name;     /* may be NULL */
    ast_block body;
} ast_handler;

struct ast_stmt {
    ast_stmt_kind kind;
    tile_loc loc;
    ast_expr **targets;   /* ASSIGN (chain), AUGASSIGN/ANNASSIGN/FOR (one) */
    int ntargets;
    ast_expr *value;      /* EXPR, ASSIGN, AUGASSIGN, ANNASSIGN, RETURN (NULL if bare), ASSERT msg */
    ast_expr *annotation; /* ANNASSIGN */
    ast_op op;            /* AUGASSIGN */
    ast_expr *iter;       /* FOR */
    ast_expr *cond;       /* WHILE, IF, ASSERT */
    ast_block body;       /* FOR, WHILE, IF, WITH, FUNCDEF */
    ast_block orelse;     /* IF (else / elif chain), FOR/WHILE else, TRY else */
    ast_handler *handlers;/* TRY */
    int nhandlers;
    ast_block finalbody;  /* TRY */
    ast_expr **bases;     /* CLASS: base classes and keywords as written (bases only) */
    int nbases;
    ast_expr **with_items;   /* WITH */
    ast_expr **with_targets; /* WITH: each NULL or a NAME/TUPLE target */
    int nwith;
    /* FUNCDEF */
    const char *name;
    ast_param *params;
    int nparams;
    ast_expr *returns;      /* return annotation or NULL */
    ast_expr **decorators;  /* FUNCDEF, CLASS: each an expression (usually NAME, ATTR or CALL) */
    int ndecorators;
    /* IMPORT / IMPORTFROM / GLOBAL / NONLOCAL */
    const char *module;     /* IMPORTFROM: dotted module name ("." prefixes kept) */
    const char **names;     /* dotted names (IMPORT) or plain names (IMPORTFROM, GLOBAL); "*" allowed */
    const char **asnames;   /* each NULL if no `as` */
    int nnames;
};

typedef struct ast_module {
    const tile_source *src;
    ast_block body;
} ast_module;

/* Parse a whole source. Returns the module (never NULL; statements that failed to parse
 * are dropped) and reports errors in diags. All nodes live in `arena`. */
ast_module *tile_parse(const tile_source *src, tile_arena *arena, tile_diags *diags);

/* Debug dump of the AST as an indented S-expression-like text (used by tests). */
void ast_dump(const ast_module *m, tile_strbuf *out);
/* The same one-line S-expression form for a single expression (for messages/debugging). */
void ast_dump_expr(const ast_expr *e, tile_strbuf *out);
const char *ast_stmt_kind_name(ast_stmt_kind k); /* "ASSIGN", "FOR", ... */

/* Source locations the parser assigns (what a caret points at):
 *   statements: their first token (`def` for a decorated function, not the `@`);
 *   NAME/INT/FLOAT/STRING/BOOL/NONE: the token; LIST: '['; parenthesized TUPLE: '(';
 *   bare TUPLE `a, b`: its first item; ATTR: the attribute name after '.';
 *   CALL and SUBSCRIPT: the loc of the callee / subscripted value;
 *   BINOP, UNARY, COMPARE, BOOLOP: the (first) operator token; IFEXP: the `if`;
 *   SLICE: its lower bound, or the first ':' when there is none; STARRED: the '*';
 *   GENERATOR, LISTCOMP, SETCOMP: the element; DICTCOMP: its key; DICT, SET: '{';
 *   LAMBDA: the `lambda`; ELLIPSIS: the first '.';
 *   keyword arguments and params: their name (`**d` arguments: the '**'). */

#endif
