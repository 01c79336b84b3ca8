/* sema.c — driver of semantic analysis: module scan, entry points, parameters, environments. */
#include "sema_int.h"

#include <stdlib.h>
#include <string.h>

/* ---------- values ---------- */
sval *sv_new(sema_ctx *c, sv_kind k, tile_loc loc) {
    sval *v = TILE_NEW(c->arena, sval);
    v->kind = k;
    v->loc = loc;
    return v;
}
sval *sv_expr(sema_ctx *c, ir_expr *e) {
    sval *v = sv_new(c, SV_EXPR, e->loc);
    v->e = e;
    return v;
}
sval *sv_weak_int(sema_ctx *c, int64_t x, tile_loc loc) {
    sval *v = sv_expr(c, ir_const_int(c->mod, TILE_DT_I64, x, loc));
    v->weak = true;
    return v;
}
sval *sv_weak_float(sema_ctx *c, double x, tile_loc loc) {
    sval *v = sv_expr(c, ir_const_float(c->mod, TILE_DT_F64, x, loc));
    v->weak = true;
    return v;
}
sval *sv_weak_bool(sema_ctx *c, bool x, tile_loc loc) {
    sval *v = sv_expr(c, ir_const_int(c->mod, TILE_DT_BOOL, x, loc));
    v->weak = true;
    return v;
}
sval *sv_none(sema_ctx *c, tile_loc loc) { return sv_new(c, SV_NONE, loc); }
sval *sv_err(sema_ctx *c, tile_loc loc) {
    sval *v = sv_new(c, SV_NONE, loc);
    v->poison = true;
    return v;
}

const char *sv_describe(const sval *v) {
    switch (v->kind) {
    case SV_NONE: return "None";
    case SV_EXPR: return "a scalar value";
    case SV_BUFFER: return "a buffer";
    case SV_ACCESS: return "a buffer element or region";
    case SV_DTYPE: return "a dtype";
    case SV_STRING: return "a string";
    case SV_TUPLE: return "a tuple";
    case SV_MODULE: return "a module";
    case SV_BUILTIN: return "a builtin function";
    case SV_FUNC: return "a function";
    case SV_METHOD: return "a method";
    case SV_OPAQUE: return "an opaque value";
    case SV_DICT: return "a dict";
    case SV_BROKEN: return "a value Tile could not evaluate";
    }
    return "a value";
}

void sema_err(sema_ctx *c, tile_loc loc, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tile_diag_add(c->diags, TILE_DIAG_ERROR, loc, fmt, ap);
    va_end(ap);
    c->bad++;
}

/* ---------- environments ---------- */
sema_env *env_new(sema_ctx *c, sema_env *parent, const ast_stmt *func) {
    sema_env *e = TILE_NEW(c->arena, sema_env);
    e->parent = parent;
    e->func = func;
    return e;
}

void env_bind(sema_ctx *c, sema_env *env, const char *name, sval *v, int par_id) {
    for (sema_binding *b = env->head; b; b = b->next)
        if (!strcmp(b->name, name)) { b->val = v; b->par_id = par_id; return; }
    sema_binding *b = TILE_NEW(c->arena, sema_binding);
    b->name = name;
    b->val = v;
    b->par_id = par_id;
    b->next = env->head;
    env->head = b;
}

sema_binding *env_lookup(sema_env *env, const char *name) {
    for (; env; env = env->parent)
        for (sema_binding *b = env->head; b; b = b->next)
            if (!strcmp(b->name, name)) return b;
    return NULL;
}

int env_assign_count(sema_env *env, const char *name) {
    for (int i = 0; i < env->nassigned; i++)
        if (!strcmp(env->assigned_names[i], name)) return env->assigned_counts[i];
    return 0;
}

static void count_target(sema_ctx *c, sema_env *env, const ast_expr *t, int weight) {
    if (!t) return;
    if (t->kind == AST_E_NAME) {
        for (int i = 0; i < env->nassigned; i++)
            if (!strcmp(env->assigned_names[i], t->name)) { env->assigned_counts[i] += weight; return; }
        if (env->nassigned % 32 == 0) {
            const char **nn = TILE_NEW_ARRAY(c->arena, const char *, env->nassigned + 32);
            int *cc = TILE_NEW_ARRAY(c->arena, int, env->nassigned + 32);
            if (env->nassigned) {
                memcpy(nn, env->assigned_names, sizeof(char *) * (size_t)env->nassigned);
                memcpy(cc, env->assigned_counts, sizeof(int) * (size_t)env->nassigned);
            }
            env->assigned_names = nn;
            env->assigned_counts = cc;
        }
        env->assigned_names[env->nassigned] = t->name;
        env->assigned_counts[env->nassigned++] = weight;
    } else if (t->kind == AST_E_TUPLE || t->kind == AST_E_LIST) {
        for (int i = 0; i < t->nitems; i++) count_target(c, env, t->items[i], weight);
    }
}

static void prescan_stmt(sema_ctx *c, sema_env *env, const ast_stmt *s, int in_loop) {
    switch (s->kind) {
    case AST_S_ASSIGN:
        for (int i = 0; i < s->ntargets; i++) count_target(c, env, s->targets[i], in_loop ? 2 : 1);
        break;
    case AST_S_ANNASSIGN: count_target(c, env, s->targets[0], in_loop ? 2 : 1); break;
    case AST_S_AUGASSIGN: count_target(c, env, s->targets[0], 2); break;
    case AST_S_FOR:
    case AST_S_WHILE:
        for (int i = 0; i < s->body.len; i++) prescan_stmt(c, env, s->body.stmts[i], 1);
        for (int i = 0; i < s->orelse.len; i++) prescan_stmt(c, env, s->orelse.stmts[i], 1);
        break;
    case AST_S_IF:
    case AST_S_WITH:
    case AST_S_TRY:
        for (int i = 0; i < s->body.len; i++) prescan_stmt(c, env, s->body.stmts[i], in_loop);
        for (int i = 0; i < s->orelse.len; i++) prescan_stmt(c, env, s->orelse.stmts[i], in_loop);
        for (int i = 0; i < s->finalbody.len; i++) prescan_stmt(c, env, s->finalbody.stmts[i], in_loop);
        break;
    default: break;
    }
}

/* Count the assignments of each name in a scope, so that a name assigned once to a
 * compile-time or pure index value can be an alias rather than a mutable variable.
 * An assignment inside a loop counts as two. */
void prescan_assignments(sema_ctx *c, sema_env *env, const ast_block *b) {
    for (int i = 0; i < b->len; i++) prescan_stmt(c, env, b->stmts[i], 0);
}

/* ---------- statement emission ---------- */
void emit(sema_ctx *c, ir_stmt *s) {
    if (!c->stmts) {
        sema_err(c, s->loc, "this statement does run-time work, which is not allowed here (only compile-time code may appear outside a kernel function)");
        return;
    }
    tile_vec_push(c->stmts, s);
}

ir_stmt *guard_stmt(sema_ctx *c, ir_expr *cond, ir_stmt *s, tile_loc loc) {
    if (!cond) return s;
    ir_stmt *g = ir_stmt_new(c->mod, IR_S_IF, loc);
    g->cond = cond;
    g->body = TILE_NEW_ARRAY(&c->mod->arena, ir_stmt *, 2);
    g->nbody = 2;
    g->body[0] = s;
    return g;
}

void push_stmts(sema_ctx *c, tile_vec *save, tile_vec *fresh) {
    (void)save;
    memset(fresh, 0, sizeof *fresh);
}

ir_stmt *pop_stmts(sema_ctx *c, tile_vec *save, tile_vec *fresh, tile_loc loc) {
    (void)save;
    ir_stmt *s = ir_seq(c->mod, (ir_stmt **)fresh->items, fresh->len, loc);
    tile_vec_free(fresh);
    return s;
}

/* ---------- decorators and entry points ---------- */
static const char *dotted_path(sema_ctx *c, sema_env *env, const ast_expr *e) {
    if (!e) return "";
    switch (e->kind) {
    case AST_E_NAME: {
        sema_binding *b = env ? env_lookup(env, e->name) : NULL;
        if (b && b->val->kind == SV_MODULE) return b->val->str;
        return e->name;
    }
    case AST_E_ATTR: return tile_arena_printf(c->arena, "%s.%s", dotted_path(c, env, e->value), e->name);
    case AST_E_CALL: return dotted_path(c, env, e->value);
    default: return "?";
    }
}

static const char *last_component(const char *path) {
    const char *p = strrchr(path, '.');
    return p ? p + 1 : path;
}

typedef enum { DEF_HELPER, DEF_KERNEL_PLAIN, DEF_KERNEL_TILE, DEF_FACTORY, DEF_MACRO, DEF_KERNEL_EAGER } def_class;

/* Is the decorator path one of another framework's (@triton.jit, @numba.jit, @torch.jit.script)?
 * Files that benchmark TileLang against them define such kernels beside TileLang's; they
 * are Python helpers to Tile, never kernels. */
static bool foreign_decorator(const char *path) {
    static const char *const roots[] = {"triton", "numba", "torch", "jax", "cupy", NULL};
    for (int i = 0; roots[i]; i++) {
        size_t n = strlen(roots[i]);
        if (!strncmp(path, roots[i], n) && (path[n] == '.' || !path[n])) return true;
    }
    return false;
}

static bool has_decorator(sema_ctx *c, sema_env *env, const ast_stmt *d, const char *last) {
    for (int i = 0; i < d->ndecorators; i++) {
        const char *p = dotted_path(c, env, d->decorators[i]);
        if (!strcmp(last_component(p), last) && !foreign_decorator(p)) return true;
    }
    return false;
}

static bool body_defines_prim_func(sema_ctx *c, sema_env *env, const ast_block *b) {
    for (int i = 0; i < b->len; i++) {
        const ast_stmt *s = b->stmts[i];
        if (s->kind == AST_S_FUNCDEF && has_decorator(c, env, s, "prim_func")) return true;
        if (s->kind == AST_S_IF && (body_defines_prim_func(c, env, &s->body) || body_defines_prim_func(c, env, &s->orelse)))
            return true;
    }
    return false;
}

/* Does the block (not counting nested defs) contain a `with T.Kernel(...)`? */
static bool body_has_kernel(sema_ctx *c, sema_env *env, const ast_block *b) {
    for (int i = 0; i < b->len; i++) {
        const ast_stmt *s = b->stmts[i];
        if (s->kind == AST_S_WITH)
            for (int k = 0; k < s->nwith; k++)
                if (s->with_items[k]->kind == AST_E_CALL && !strcmp(last_component(dotted_path(c, env, s->with_items[k])), "Kernel")) return true;
        if (s->kind == AST_S_FUNCDEF || s->kind == AST_S_CLASS) continue;
        if (body_has_kernel(c, env, &s->body) || body_has_kernel(c, env, &s->orelse) || body_has_kernel(c, env, &s->finalbody)) return true;
    }
    return false;
}

static def_class classify_def(sema_ctx *c, sema_env *env, const ast_stmt *d) {
    if (has_decorator(c, env, d, "prim_func")) return DEF_KERNEL_TILE;
    if (has_decorator(c, env, d, "tile_op") || has_decorator(c, env, d, "kernel")) return DEF_KERNEL_PLAIN;
    if (has_decorator(c, env, d, "macro")) return DEF_MACRO;
    if (body_defines_prim_func(c, env, &d->body)) return DEF_FACTORY;
    /* @tilelang.jit on a function whose body is the kernel itself (the eager style), or
     * that returns a prim_func made elsewhere (a factory) */
    if (has_decorator(c, env, d, "jit") || has_decorator(c, env, d, "lazy_jit"))
        return body_has_kernel(c, env, &d->body) ? DEF_KERNEL_EAGER : DEF_FACTORY;
    return DEF_HELPER;
}

static const char *known_decorators[] = {"prim_func", "tile_op", "kernel", "macro", "jit", "lazy_jit", "autotune", NULL};

static void check_decorators(sema_ctx *c, sema_env *env, const ast_stmt *d) {
    for (int i = 0; i < d->ndecorators; i++) {
        const char *path = dotted_path(c, env, d->decorators[i]);
        const char *last = last_component(path);
        /* test-harness decorators mark tests (parametrize cases give drivers their values) */
        bool ok = path && (!strncmp(path, "pytest.", 7) || !strncmp(path, "tilelang.testing.", 17));
        for (int k = 0; known_decorators[k]; k++)
            if (!strcmp(last, known_decorators[k])) ok = true;
        if (!ok)
            tile_warning_at(c->diags, d->decorators[i]->loc, "unknown decorator '%s' is ignored", dotted_path(c, env, d->decorators[i]));
    }
}

/* ---------- the module level ---------- */
static void bind_import(sema_ctx *c, const ast_stmt *s) {
    for (int i = 0; i < s->nnames; i++) {
        const char *full = s->kind == AST_S_IMPORTFROM
                               ? tile_arena_printf(c->arena, "%s.%s", s->module, s->names[i])
                               : s->names[i];
        const char *bind;
        if (s->asnames[i]) bind = s->asnames[i];
        else if (s->kind == AST_S_IMPORTFROM) bind = s->names[i];
        else {
            /* `import a.b.c` binds `a` */
            const char *dot = strchr(full, '.');
            bind = dot ? tile_arena_strndup(c->arena, full, (size_t)(dot - full)) : full;
            full = bind;
        }
        if (!strcmp(bind, "*")) continue; /* from tilelang.language import * : builtins are global anyway */
        sval *m = sv_new(c, SV_MODULE, s->loc);
        m->str = full;
        env_bind(c, c->module_env, bind, m, 0);
    }
}

/* Module-level Python that is not kernel code (test drivers, benchmarks, argument
 * parsing, `if __name__ == "__main__":`) is accepted and ignored where it cannot affect a
 * kernel: expression statements and loops at module level bind nothing a kernel can see,
 * so they are skipped; an assignment is evaluated, and when Tile cannot evaluate it the
 * names it binds become "broken": a kernel that uses one gets the original error then. */
static void bind_broken(sema_ctx *c, const ast_expr *t, const tile_diag *why) {
    if (!t) return;
    if (t->kind == AST_E_NAME) {
        sval *v = sv_new(c, SV_BROKEN, why->loc);
        v->str = tile_arena_strdup(c->arena, why->msg);
        env_bind(c, c->module_env, t->name, v, 0);
    } else if (t->kind == AST_E_TUPLE || t->kind == AST_E_LIST) {
        for (int i = 0; i < t->nitems; i++) bind_broken(c, t->items[i], why);
    } else if (t->kind == AST_E_STARRED) bind_broken(c, t->value, why);
}

/* Run fn(c, arg) with diagnostics collected aside; returns the first error (arena copy) or NULL. */
static tile_diag *captured(sema_ctx *c, void (*fn)(sema_ctx *, const void *), const void *arg) {
    tile_diags *saved = c->diags, tmp;
    int saved_bad = c->bad;
    tile_diags_init(&tmp);
    c->diags = &tmp;
    fn(c, arg);
    c->diags = saved;
    c->bad = saved_bad;
    tile_diag *first = NULL;
    for (int i = 0; i < tmp.len && !first; i++)
        if (tmp.items[i].level == TILE_DIAG_ERROR) {
            first = TILE_NEW(c->arena, tile_diag);
            *first = tmp.items[i];
            first->msg = tile_arena_strdup(c->arena, tmp.items[i].msg);
        }
    /* warnings of code that went through are the program's; of code that failed, dropped */
    for (int i = 0; i < tmp.len && !first; i++)
        if (tmp.items[i].level == TILE_DIAG_WARNING) tile_warning_at(saved, tmp.items[i].loc, "%s", tmp.items[i].msg);
    tile_diags_free(&tmp);
    return first;
}

static void run_module_stmt(sema_ctx *c, const void *s) { lower_stmt(c, c->module_env, (const ast_stmt *)s); }
static void eval_cond(sema_ctx *c, const void *s) {
    const ast_stmt *st = s;
    c->scratch = lower_expr(c, c->module_env, st->cond);
}

static void scan_block(sema_ctx *c, const ast_block *b);
static bool driver_stmt(const ast_stmt *s);

static void scan_stmt(sema_ctx *c, const ast_stmt *s) {
    switch (s->kind) {
    case AST_S_EXPR:
        /* parser.add_argument(...) / set_defaults(...) at module level: later
         * `args = parser.parse_args()` sees the argument (nothing else runs) */
        if (driver_stmt(s)) captured(c, run_module_stmt, s);
        break;
    case AST_S_IMPORT:
    case AST_S_IMPORTFROM: bind_import(c, s); break;
    case AST_S_FUNCDEF: {
        sval *f = sv_new(c, SV_FUNC, s->loc);
        f->fn = TILE_NEW(c->arena, sema_fn);
        f->fn->def = s;
        f->fn->closure = c->module_env;
        env_bind(c, c->module_env, s->name, f, 0);
        break;
    }
    case AST_S_CLASS: {
        sval *o = sv_new(c, SV_OPAQUE, s->loc);
        o->str = s->name;
        env_bind(c, c->module_env, s->name, o, 0);
        break;
    }
    case AST_S_ASSIGN:
    case AST_S_ANNASSIGN:
    case AST_S_AUGASSIGN: {
        tile_diag *why = captured(c, run_module_stmt, s); /* compile-time: c->stmts is NULL */
        if (why) {
            tile_log(TILE_LOG_INFO, "%s:%d: module-level assignment not evaluated (%s); its names are usable only if a kernel does not need them",
                     s->loc.src ? s->loc.src->name : "?", s->loc.line, why->msg);
            for (int i = 0; i < s->ntargets; i++) bind_broken(c, s->targets[i], why);
        }
        break;
    }
    case AST_S_IF: {
        c->scratch = NULL;
        tile_diag *why = captured(c, eval_cond, s);
        sval *cv = c->scratch;
        if (why || !cv) break;
        bool t;
        if (sv_is_const(cv)) t = tile_dtype_is_float(cv->e->dtype) ? cv->e->fval != 0 : cv->e->ival != 0;
        else if (cv->kind == SV_NONE) t = false;
        else if (cv->kind == SV_TUPLE || cv->kind == SV_DICT) t = cv->nitems > 0;
        else if (cv->kind == SV_STRING || cv->kind == SV_DTYPE || cv->kind == SV_MODULE || cv->kind == SV_FUNC) t = true;
        else break; /* known only at run time, or opaque: neither branch is taken */
        scan_block(c, t ? &s->body : &s->orelse);
        break;
    }
    case AST_S_TRY:
        /* nothing raises at compile time: the body, then the else clause, then finally */
        scan_block(c, &s->body);
        scan_block(c, &s->orelse);
        scan_block(c, &s->finalbody);
        break;
    default: break; /* expression statements, loops, with, assert, raise, del: no effect on kernels */
    }
}

static void scan_block(sema_ctx *c, const ast_block *b) {
    for (int i = 0; i < b->len; i++) {
        scan_stmt(c, b->stmts[i]);
        if (tile_diags_full(c->diags)) return;
    }
}

static void scan_module(sema_ctx *c) {
    /* `if __name__ == "__main__":` is the script entry point, which never runs here */
    const char *base = c->ast->src && c->ast->src->name ? c->ast->src->name : "<string>";
    const char *slash = strrchr(base, '/');
    sval *nm = sv_new(c, SV_STRING, (tile_loc){0});
    nm->str = tile_arena_strdup(c->arena, slash ? slash + 1 : base);
    char *dot = strrchr((char *)nm->str, '.');
    if (dot) *dot = 0;
    env_bind(c, c->module_env, "__name__", nm, 0);
    sval *fl = sv_new(c, SV_STRING, (tile_loc){0});
    fl->str = base;
    env_bind(c, c->module_env, "__file__", fl, 0);
    scan_block(c, &c->ast->body);
}

int sema_entry_points(const ast_module *m, const char ***names, tile_arena *arena) {
    tile_vec v = {0};
    for (int i = 0; i < m->body.len; i++) {
        const ast_stmt *s = m->body.stmts[i];
        if (s->kind != AST_S_FUNCDEF) continue;
        sema_ctx c = {0};
        c.arena = arena;
        def_class k = classify_def(&c, NULL, s);
        if (k == DEF_KERNEL_PLAIN || k == DEF_KERNEL_TILE || k == DEF_FACTORY || k == DEF_KERNEL_EAGER) tile_vec_push(&v, (void *)s->name);
    }
    int n = v.len;
    *names = (const char **)tile_vec_to_arena(&v, arena);
    return n;
}

/* ---------- -D values ---------- */
static sema_define *find_define(sema_ctx *c, const char *name) {
    for (int i = 0; i < c->opt->ndefines; i++)
        if (!strcmp(c->opt->defines[i].name, name)) return &c->opt->defines[i];
    return NULL;
}

static sval *define_text(sema_ctx *c, const char *v, tile_loc loc);

/* "(64, 128)" / "[1,2]" / "64,128": a tuple of the comma-separated values (nesting allowed) */
static sval *define_tuple(sema_ctx *c, const char *v, tile_loc loc) {
    size_t n = strlen(v);
    const char *b = v, *e = v + n;
    while (b < e && *b == ' ') b++;
    while (e > b && e[-1] == ' ') e--;
    if (b < e && (*b == '(' || *b == '[') && (e[-1] == ')' || e[-1] == ']')) { b++; e--; }
    tile_vec items = {0};
    int depth = 0;
    const char *start = b;
    for (const char *q = b; q <= e; q++) {
        if (q < e && (*q == '(' || *q == '[')) depth++;
        else if (q < e && (*q == ')' || *q == ']')) depth--;
        else if (q == e || (*q == ',' && depth == 0)) {
            const char *s0 = start, *s1 = q;
            while (s0 < s1 && *s0 == ' ') s0++;
            while (s1 > s0 && s1[-1] == ' ') s1--;
            if (s1 > s0) tile_vec_push(&items, define_text(c, tile_arena_strndup(c->arena, s0, (size_t)(s1 - s0)), loc));
            start = q + 1;
        }
    }
    sval *t = sv_new(c, SV_TUPLE, loc);
    t->nitems = items.len;
    t->items = (sval **)tile_vec_to_arena(&items, c->arena);
    return t;
}

static sval *define_value(sema_ctx *c, sema_define *d, tile_loc loc) {
    d->used = true;
    return define_text(c, d->value, loc);
}

static sval *define_text(sema_ctx *c, const char *v, tile_loc loc) {
    char *end;
    if (v[0] == '(' || v[0] == '[' || strchr(v, ',')) return define_tuple(c, v, loc);
    if (!strcmp(v, "None")) return sv_none(c, loc);
    if (!strcmp(v, "True") || !strcmp(v, "true")) return sv_weak_bool(c, true, loc);
    if (!strcmp(v, "False") || !strcmp(v, "false")) return sv_weak_bool(c, false, loc);
    long long iv = strtoll(v, &end, 0);
    if (*v && !*end) return sv_weak_int(c, iv, loc);
    double fv = strtod(v, &end);
    if (*v && !*end) return sv_weak_float(c, fv, loc);
    tile_dtype dt = tile_dtype_parse(v);
    if (dt != TILE_DT_INVALID) {
        sval *s = sv_new(c, SV_DTYPE, loc);
        s->dt = dt;
        return s;
    }
    sval *s = sv_new(c, SV_STRING, loc);
    s->str = tile_arena_strdup(c->arena, v);
    return s;
}

/* A symbolic dimension: a -D value if given, else a size variable bound at run time
 * (reused when the function already has one of that name). */
sval *sema_symbol(sema_ctx *c, const char *name, tile_loc loc) {
    sema_define *d = find_define(c, name);
    if (d) return define_value(c, d, loc);
    for (int i = 0; i < c->fn->nsizes; i++)
        if (!strcmp(c->fn->sizes[i]->name, name)) return sv_expr(c, ir_var_ref(c->mod, c->fn->sizes[i], loc));
    ir_var *var = ir_var_new(c->mod, c->fn, name, IR_VAR_SIZE, TILE_DT_I32, loc);
    ir_func_add_size(c->mod, c->fn, var);
    return sv_expr(c, ir_var_ref(c->mod, var, loc));
}

static sval *make_size(sema_ctx *c, sema_env *env, const char *name, tile_loc loc) {
    sval *v = sema_symbol(c, name, loc);
    env_bind(c, env, name, v, 0);
    return v;
}

/* An unbound Python parameter (of a kernel factory, or an un-annotated one of an eager
 * kernel): a size variable that is a Python int in TileLang. */
static void make_py_size(sema_ctx *c, sema_env *env, const char *name, tile_loc loc) {
    sval *v = make_size(c, env, name, loc);
    if (v->kind == SV_EXPR && v->e->kind == IR_E_VAR && c->npy_sizes < (int)(sizeof c->py_sizes / sizeof c->py_sizes[0]))
        c->py_sizes[c->npy_sizes++] = v->e->var;
}

bool sema_is_py_int(const sema_ctx *c, const ir_expr *e) {
    if (!e || !tile_dtype_is_int(e->dtype)) return false;
    switch (e->kind) {
    case IR_E_CONST: return true;
    case IR_E_VAR:
        for (int i = 0; i < c->npy_sizes; i++)
            if (c->py_sizes[i] == e->var) return true;
        return false;
    case IR_E_CAST: return sema_is_py_int(c, e->args[0]);
    case IR_E_UNARY: return e->op == IR_U_NEG && sema_is_py_int(c, e->args[0]);
    case IR_E_BINARY:
        if (ir_binop_is_compare((ir_binop)e->op) || e->op == IR_B_AND || e->op == IR_B_OR) return false;
        return sema_is_py_int(c, e->args[0]) && sema_is_py_int(c, e->args[1]);
    case IR_E_SELECT: return sema_is_py_int(c, e->args[1]) && sema_is_py_int(c, e->args[2]);
    default: return false;
    }
}

static bool is_builtin_name(sema_ctx *c, const char *name) { return lookup_builtin_exists(name); }

/* Create size variables for the free names of a type annotation (e.g. M, K in Tensor[M, K]). */
static void declare_free_names(sema_ctx *c, sema_env *env, const ast_expr *e) {
    if (!e) return;
    switch (e->kind) {
    case AST_E_NAME:
        if (!env_lookup(env, e->name) && !is_builtin_name(c, e->name) && tile_dtype_parse(e->name) == TILE_DT_INVALID)
            make_size(c, env, e->name, e->loc);
        return;
    case AST_E_ATTR: return; /* T.float16, A.shape: not free names */
    case AST_E_CALL:
        for (int i = 0; i < e->nitems; i++) declare_free_names(c, env, e->items[i]);
        for (int i = 0; i < e->nkwargs; i++) declare_free_names(c, env, e->kwargs[i].value);
        return;
    case AST_E_SUBSCRIPT:
        for (int i = 0; i < e->nitems; i++) declare_free_names(c, env, e->items[i]);
        return;
    case AST_E_TUPLE:
    case AST_E_LIST:
        for (int i = 0; i < e->nitems; i++) declare_free_names(c, env, e->items[i]);
        return;
    case AST_E_BINOP: declare_free_names(c, env, e->lhs); declare_free_names(c, env, e->rhs); return;
    case AST_E_UNARY: declare_free_names(c, env, e->lhs); return;
    default: return;
    }
}

/* ---------- rank inference for unannotated tensor parameters ---------- */
static void rank_walk_expr(const ast_expr *e, const char *name, int *rank);
static void rank_walk_block(const ast_block *b, const char *name, int *rank);

static void rank_walk_expr(const ast_expr *e, const char *name, int *rank) {
    if (!e) return;
    if (e->kind == AST_E_SUBSCRIPT && e->value && e->value->kind == AST_E_NAME && !strcmp(e->value->name, name)) {
        int n = e->nitems;
        if (n == 1 && e->items[0]->kind == AST_E_TUPLE) n = e->items[0]->nitems;
        if (n > *rank) *rank = n;
    }
    if (e->kind == AST_E_SUBSCRIPT && e->value && e->value->kind == AST_E_ATTR && !strcmp(e->value->name, "shape") &&
        e->value->value && e->value->value->kind == AST_E_NAME && !strcmp(e->value->value->name, name) && e->nitems == 1 &&
        e->items[0]->kind == AST_E_INT && e->items[0]->ival >= 0 && e->items[0]->ival < 8) {
        if (e->items[0]->ival + 1 > *rank) *rank = (int)e->items[0]->ival + 1;
    }
    rank_walk_expr(e->value, name, rank);
    rank_walk_expr(e->lhs, name, rank);
    rank_walk_expr(e->rhs, name, rank);
    rank_walk_expr(e->cond, name, rank);
    rank_walk_expr(e->lo, name, rank);
    rank_walk_expr(e->hi, name, rank);
    rank_walk_expr(e->step, name, rank);
    for (int i = 0; i < e->nitems; i++) rank_walk_expr(e->items[i], name, rank);
    for (int i = 0; i < e->nkwargs; i++) rank_walk_expr(e->kwargs[i].value, name, rank);
    if (e->comp) {
        rank_walk_expr(e->comp->iter, name, rank);
        for (int i = 0; i < e->comp->nconds; i++) rank_walk_expr(e->comp->conds[i], name, rank);
    }
}

static void rank_walk_block(const ast_block *b, const char *name, int *rank) {
    for (int i = 0; i < b->len; i++) {
        const ast_stmt *s = b->stmts[i];
        for (int k = 0; k < s->ntargets; k++) rank_walk_expr(s->targets[k], name, rank);
        rank_walk_expr(s->value, name, rank);
        rank_walk_expr(s->iter, name, rank);
        rank_walk_expr(s->cond, name, rank);
        for (int k = 0; k < s->nwith; k++) rank_walk_expr(s->with_items[k], name, rank);
        rank_walk_block(&s->body, name, rank);
        rank_walk_block(&s->orelse, name, rank);
    }
}

/* ---------- parameters ---------- */
static bool is_tensor_ctor(const char *last) {
    return !strcmp(last, "Tensor") || !strcmp(last, "Buffer") || !strcmp(last, "StridedTensor") || !strcmp(last, "FragmentBuffer");
}

static sval *shape_from_items(sema_ctx *c, sema_env *env, const ast_expr *const *items, int n, tile_loc loc) {
    sval *t = sv_new(c, SV_TUPLE, loc);
    t->items = TILE_NEW_ARRAY(c->arena, sval *, n ? n : 1);
    t->nitems = n;
    for (int i = 0; i < n; i++) t->items[i] = lower_expr(c, env, items[i]);
    return t;
}

static bool is_dtype_ast(sema_ctx *c, sema_env *env, const ast_expr *e) {
    if (!e) return false;
    if (e->kind == AST_E_STRING) return tile_dtype_parse(e->sval) != TILE_DT_INVALID;
    if (e->kind == AST_E_NAME) {
        sema_binding *b = env_lookup(env, e->name);
        if (b) return b->val->kind == SV_DTYPE || (b->val->kind == SV_STRING && tile_dtype_parse(b->val->str) != TILE_DT_INVALID);
        return tile_dtype_parse(e->name) != TILE_DT_INVALID || !strcmp(e->name, "int") || !strcmp(e->name, "float") || !strcmp(e->name, "bool");
    }
    if (e->kind == AST_E_ATTR) return tile_dtype_parse(e->name) != TILE_DT_INVALID;
    return false;
}

static void declare_param(sema_ctx *c, sema_env *env, const ast_param *p, int index, bool tile_form, const ast_block *body) {
    tile_loc loc = p->loc;
    if (p->star) { sema_err(c, loc, "'*%s' parameters are not supported in kernels", p->name); return; }
    bool is_out = false;
    for (int i = 0; i < c->nout_idx; i++)
        if (c->out_idx[i] == index) is_out = true;
    const ast_expr *a = p->annotation;
    sval *shape = NULL;
    tile_dtype dt = TILE_DT_F32;
    /* `--shape A=64x32:float64` arrives as the definition A.dtype=float64: it gives an
     * unannotated tensor its dtype, and must agree with an annotated one. */
    sema_define *dtdef = find_define(c, tile_arena_printf(c->arena, "%s.dtype", p->name));
    tile_dtype given_dt = TILE_DT_INVALID;
    if (dtdef) {
        dtdef->used = true;
        given_dt = tile_dtype_parse(dtdef->value);
        if (given_dt == TILE_DT_INVALID) { sema_err(c, loc, "unknown dtype '%s' given for parameter '%s'", dtdef->value, p->name); return; }
        if (!a) dt = given_dt;
    }
    if (!a) {
        if (tile_form) { sema_err(c, loc, "parameter '%s' of a T.prim_func needs a type, e.g. T.Tensor((M, N), \"float32\")", p->name); return; }
        int rank = 0;
        rank_walk_block(body, p->name, &rank);
        if (rank == 0) { sema_err(c, loc, "cannot infer the rank of parameter '%s' from its uses; annotate it, e.g. %s: Tensor[M, N]", p->name, p->name); return; }
        shape = sv_new(c, SV_TUPLE, loc);
        shape->nitems = rank;
        shape->items = TILE_NEW_ARRAY(c->arena, sval *, rank);
        for (int d = 0; d < rank; d++) {
            const char *nm = tile_arena_printf(c->arena, "%s.shape[%d]", p->name, d);
            sema_define *def = find_define(c, nm);
            if (def) shape->items[d] = define_value(c, def, loc);
            else {
                ir_var *var = ir_var_new(c->mod, c->fn, nm, IR_VAR_SIZE, TILE_DT_I32, loc);
                ir_func_add_size(c->mod, c->fn, var);
                shape->items[d] = sv_expr(c, ir_var_ref(c->mod, var, loc));
            }
        }
    } else if (is_dtype_ast(c, env, a)) {
        /* scalar parameter */
        sval *dv = lower_expr(c, env, a);
        tile_dtype sdt = dv->kind == SV_BUILTIN && !strcmp(dv->str, "int") ? TILE_DT_I32
                       : dv->kind == SV_BUILTIN && !strcmp(dv->str, "float") ? TILE_DT_F32
                       : dv->kind == SV_BUILTIN && !strcmp(dv->str, "bool") ? TILE_DT_BOOL
                       : as_dtype(c, dv, "parameter type");
        if (sdt == TILE_DT_INVALID) return;
        if (is_out) { sema_err(c, loc, "out_idx names scalar parameter '%s'; outputs must be tensors", p->name); return; }
        ir_var *v = ir_var_new(c->mod, c->fn, p->name, IR_VAR_PARAM, sdt, loc);
        ir_func_add_param(c->mod, c->fn, p->name, NULL, v);
        env_bind(c, env, p->name, sv_expr(c, ir_var_ref(c->mod, v, loc)), 0);
        return;
    } else {
        declare_free_names(c, env, a);
        const char *ctor = (a->kind == AST_E_SUBSCRIPT || a->kind == AST_E_CALL) ? last_component(dotted_path(c, env, a->value)) : "";
        if (!strcmp(ctor, "StridedTensor")) {
            /* its second item is the strides, which Tile's tensors (contiguous) do not have */
            sema_err(c, a->loc, "'T.StridedTensor' (a tensor with explicit strides, parameter '%s') is not supported yet; Tile's tensors are contiguous (use T.Tensor)", p->name);
            env_bind(c, env, p->name, sv_err(c, loc), 0);
            return;
        }
        if (a->kind == AST_E_SUBSCRIPT && is_tensor_ctor(last_component(dotted_path(c, env, a->value)))) {
            /* Tensor[M, K], Tensor[(M, K)], Tensor[M, K, "float16"] */
            int n = a->nitems;
            const ast_expr *const *items = (const ast_expr *const *)a->items;
            if ((n >= 1 && is_dtype_ast(c, env, items[n - 1]) && n > 1) ||
                (n == 2 && (items[0]->kind == AST_E_TUPLE || items[0]->kind == AST_E_LIST))) { /* T.Tensor[[M, K], dtype] */
                dt = as_dtype(c, lower_expr(c, env, items[n - 1]), "tensor dtype");
                n--;
            }
            if (n == 1 && (items[0]->kind == AST_E_TUPLE || items[0]->kind == AST_E_LIST))
                shape = shape_from_items(c, env, (const ast_expr *const *)items[0]->items, items[0]->nitems, a->loc);
            else shape = shape_from_items(c, env, items, n, a->loc);
        } else if (a->kind == AST_E_CALL && is_tensor_ctor(last_component(dotted_path(c, env, a->value)))) {
            /* T.Tensor(shape, dtype) */
            if (a->nitems < 1) { sema_err(c, a->loc, "T.Tensor needs a shape"); return; }
            shape = lower_expr(c, env, a->items[0]);
            if (shape->kind != SV_TUPLE) {
                sval *t = sv_new(c, SV_TUPLE, shape->loc);
                t->nitems = 1;
                t->items = TILE_NEW_ARRAY(c->arena, sval *, 1);
                t->items[0] = shape;
                shape = t;
            }
            const ast_expr *dte = a->nitems >= 2 ? a->items[1] : NULL;
            for (int k = 0; k < a->nkwargs; k++)
                if (a->kwargs[k].name && !strcmp(a->kwargs[k].name, "dtype")) dte = a->kwargs[k].value;
            if (dte) dt = as_dtype(c, lower_expr(c, env, dte), "tensor dtype");
        } else {
            sema_err(c, a->loc, "unsupported type annotation for parameter '%s': expected Tensor[...], T.Tensor(shape, dtype) or a scalar dtype", p->name);
            return;
        }
    }
    if (dt == TILE_DT_INVALID || !shape) { env_bind(c, env, p->name, sv_err(c, loc), 0); return; }
    if (given_dt != TILE_DT_INVALID && given_dt != dt) {
        sema_err(c, loc, "parameter '%s' is declared %s, but %s was given for it", p->name, tile_dtype_name(dt), tile_dtype_name(given_dt));
        env_bind(c, env, p->name, sv_err(c, loc), 0);
        return;
    }
    ir_buffer *buf = declare_buffer(c, p->name, dt, IR_SCOPE_GLOBAL, shape, loc);
    if (!buf) { env_bind(c, env, p->name, sv_err(c, loc), 0); return; }
    if (is_out) {
        buf->role = IR_BUF_OUTPUT;
        ir_func_add_ret(c->mod, c->fn, buf);
    } else {
        buf->role = IR_BUF_PARAM;
        ir_func_add_param(c->mod, c->fn, p->name, buf, NULL);
    }
    sval *bv = sv_new(c, SV_BUFFER, loc);
    bv->buf = buf;
    env_bind(c, env, p->name, bv, 0);
}


/* ---------- call sites: values for factory parameters the file itself passes ----------
 * TileLang programs give a factory's parameters at its call (`matmul(1024, 1024, 1024,
 * 128, 128, 32)` in main(), `run_gemm(512, 1024, 768, "float16", ...)` in a test). When a
 * kernel cannot be compiled with its unbound parameters symbolic (a dtype, a tile size,
 * threads=...), the parameters take the values of the first call in the file whose argument
 * is a compile-time value, evaluated in the caller with the caller's own parameters bound
 * the same way (a few levels up) and its assignments run. */
typedef struct callsite {
    const ast_expr *call;
    const ast_stmt *in_def; /* the def containing the call, NULL at module level */
    const ast_block *in_main; /* at module level: the `if __name__ == "__main__":` block, or NULL */
    const ast_stmt *outer_def; /* in_def is a def nested in this one (a closure), or NULL */
    const ast_stmt *in_for;    /* at module level: the outermost `for` the call is in, or NULL */
} callsite;

static const ast_block *cur_main_block; /* set while walking a module-level __main__ block */
static const ast_stmt *cur_module_for;  /* set while walking a module-level for loop */
static const ast_stmt *cur_outer_def;   /* set while walking a def nested in another def */

static void calls_in_block(const ast_block *b, const char *name, const ast_stmt *fn, tile_vec *out);

static void calls_in_expr(const ast_expr *e, const char *name, const ast_stmt *fn, tile_vec *out) {
    if (!e || out->len >= 64) return;
    if (e->kind == AST_E_CALL) {
        const ast_expr *f = e->value;
        bool hit = (f->kind == AST_E_NAME && !strcmp(f->name, name)) ||
                   (f->kind == AST_E_ATTR && f->value->kind == AST_E_NAME && !strcmp(f->value->name, name) &&
                    (!strcmp(f->name, "compile") || !strcmp(f->name, "get_tir") || !strcmp(f->name, "lower")));
        if (hit) {
            callsite *cs = tile_xmalloc(sizeof *cs);
            cs->call = e;
            cs->in_def = fn;
            cs->in_main = fn ? NULL : cur_main_block;
            cs->outer_def = fn ? cur_outer_def : NULL;
            cs->in_for = fn ? NULL : cur_module_for;
            tile_vec_push(out, cs);
        }
    }
    calls_in_expr(e->value, name, fn, out);
    calls_in_expr(e->lhs, name, fn, out);
    calls_in_expr(e->rhs, name, fn, out);
    calls_in_expr(e->cond, name, fn, out);
    for (int i = 0; i < e->nitems; i++) {
        calls_in_expr(e->items[i], name, fn, out);
        if (e->dvals) calls_in_expr(e->dvals[i], name, fn, out);
    }
    for (int i = 0; i < e->nkwargs; i++) calls_in_expr(e->kwargs[i].value, name, fn, out);
    for (const ast_comp *cl = e->comp; cl; cl = cl->next) calls_in_expr(cl->iter, name, fn, out);
}

static void calls_in_stmt(const ast_stmt *s, const char *name, const ast_stmt *fn, tile_vec *out) {
    for (int i = 0; i < s->ntargets; i++) calls_in_expr(s->targets[i], name, fn, out);
    calls_in_expr(s->value, name, fn, out);
    calls_in_expr(s->iter, name, fn, out);
    calls_in_expr(s->cond, name, fn, out);
    for (int i = 0; i < s->nwith; i++) calls_in_expr(s->with_items[i], name, fn, out);
    const ast_stmt *inner = s->kind == AST_S_FUNCDEF ? s : fn;
    if (s->kind == AST_S_CLASS) return;
    bool is_main = !fn && s->kind == AST_S_IF && s->cond && s->cond->kind == AST_E_COMPARE && s->cond->lhs->kind == AST_E_NAME &&
                   !strcmp(s->cond->lhs->name, "__name__");
    const ast_block *saved_main = cur_main_block;
    const ast_stmt *saved_outer = cur_outer_def;
    const ast_stmt *saved_for = cur_module_for;
    if (is_main) cur_main_block = &s->body;
    if (!fn && s->kind == AST_S_FOR && !cur_module_for) cur_module_for = s;
    if (s->kind == AST_S_FUNCDEF) cur_outer_def = fn; /* NULL for a module-level def */
    calls_in_block(&s->body, name, inner, out);
    cur_main_block = saved_main;
    cur_outer_def = saved_outer;
    cur_module_for = saved_for;
    calls_in_block(&s->orelse, name, fn, out);
    calls_in_block(&s->finalbody, name, fn, out);
    for (int i = 0; i < s->nhandlers; i++) calls_in_block(&s->handlers[i].body, name, fn, out);
}

static void calls_in_block(const ast_block *b, const char *name, const ast_stmt *fn, tile_vec *out) {
    for (int i = 0; i < b->len; i++) calls_in_stmt(b->stmts[i], name, fn, out);
}

static bool is_compile_time_value(const sval *v) {
    switch (v->kind) {
    case SV_EXPR: return v->e->kind == IR_E_CONST;
    case SV_STRING: case SV_DTYPE: case SV_FUNC: case SV_DICT: return true;
    case SV_NONE: return !v->poison;
    case SV_OPAQUE: return v->str && !strcmp(v->str, "@host-tensor"); /* its shape and dtype */
    case SV_TUPLE:
        for (int i = 0; i < v->nitems; i++)
            if (!is_compile_time_value(v->items[i])) return false;
        return true;
    default: return false;
    }
}

static sval *callsite_arg(sema_ctx *c, const ast_stmt *def, int index, int depth);

typedef struct env_stmt { sema_env *env; const ast_stmt *s; } env_stmt;
static void run_env_stmt(sema_ctx *c, const void *p) {
    const env_stmt *es = p;
    lower_stmt(c, es->env, es->s);
}
static void eval_in_env(sema_ctx *c, const void *p) {
    const env_stmt *es = p;
    c->scratch = lower_expr(c, es->env, (const ast_expr *)es->s);
}

/* Is s a statement of a driver that a kernel's parameters may depend on: an assignment, or
 * a call of an argparse parser's add_argument / set_defaults? */
static bool driver_stmt(const ast_stmt *s) {
    if (s->kind == AST_S_ASSIGN || s->kind == AST_S_ANNASSIGN || s->kind == AST_S_AUGASSIGN || s->kind == AST_S_FUNCDEF) return true;
    if (s->kind != AST_S_EXPR || !s->value || s->value->kind != AST_E_CALL || s->value->value->kind != AST_E_ATTR) return false;
    const char *m = s->value->value->name;
    return !strcmp(m, "add_argument") || !strcmp(m, "set_defaults");
}

static void run_driver_block(sema_ctx *c, sema_env *env, const ast_block *b);

/* `for dtype in (T.float16, T.bfloat16): run_x(dtype, ...)` in a driver: the loop's first
 * iteration (its target bound to the first item of a compile-time sequence), so that the
 * calls in its body give values like any other call. */
static void run_driver_for(sema_ctx *c, sema_env *env, const ast_stmt *s) {
    if (s->ntargets != 1 || !s->iter) return;
    env_stmt es = {env, (const ast_stmt *)s->iter};
    c->scratch = NULL;
    if (captured(c, eval_in_env, &es) || !c->scratch) return;
    sval *seq = c->scratch;
    if (seq->kind != SV_TUPLE || seq->nitems < 1) return;
    sval *first = seq->items[0];
    const ast_expr *t = s->targets[0];
    if (t->kind == AST_E_NAME) env_bind(c, env, t->name, first, 0);
    else if ((t->kind == AST_E_TUPLE || t->kind == AST_E_LIST) && first->kind == SV_TUPLE && first->nitems == t->nitems) {
        for (int k = 0; k < t->nitems; k++) {
            if (t->items[k]->kind != AST_E_NAME) return;
            env_bind(c, env, t->items[k]->name, first->items[k], 0);
        }
    } else return;
    run_driver_block(c, env, &s->body);
}

static void run_driver_block(sema_ctx *c, sema_env *env, const ast_block *b) {
    for (int i = 0; i < b->len; i++) {
        if (b->stmts[i]->kind == AST_S_FOR) { run_driver_for(c, env, b->stmts[i]); continue; }
        if (!driver_stmt(b->stmts[i])) continue;
        env_stmt es = {env, b->stmts[i]};
        captured(c, run_env_stmt, &es);
    }
}

/* The value pytest gives parameter `name` of test function F in its first case:
 * `@pytest.mark.parametrize("a, b", [(x, y), ...])` gives a = x, b = y (a
 * `pytest.param(x, y, marks=...)` case is its values). NULL when no decorator names it
 * or the value is not known at compile time. */
static sval *parametrize_arg(sema_ctx *c, const ast_stmt *F, const char *name) {
    for (int i = 0; i < F->ndecorators; i++) {
        const ast_expr *d = F->decorators[i];
        if (d->kind != AST_E_CALL || d->value->kind != AST_E_ATTR || strcmp(d->value->name, "parametrize") || d->nitems < 2) continue;
        env_stmt es = {c->module_env, (const ast_stmt *)d->items[0]};
        c->scratch = NULL;
        if (captured(c, eval_in_env, &es) || !c->scratch) continue;
        sval *names = c->scratch;
        int index = -1, n = 0;
        if (names->kind == SV_STRING) {
            /* "a, b" or "a,b" */
            const char *p = names->str;
            while (*p) {
                while (*p == ' ' || *p == ',') p++;
                const char *q = p;
                while (*q && *q != ',' && *q != ' ') q++;
                if (q > p && (size_t)(q - p) == strlen(name) && !strncmp(p, name, (size_t)(q - p))) index = n;
                if (q > p) n++;
                p = q;
            }
        } else if (names->kind == SV_TUPLE) {
            for (int k = 0; k < names->nitems; k++)
                if (names->items[k]->kind == SV_STRING && !strcmp(names->items[k]->str, name)) index = k;
            n = names->nitems;
        }
        if (index < 0) continue;
        es.s = (const ast_stmt *)d->items[1];
        c->scratch = NULL;
        if (captured(c, eval_in_env, &es) || !c->scratch || c->scratch->kind != SV_TUPLE || c->scratch->nitems < 1) continue;
        sval *first = c->scratch->items[0];
        if (n == 1) return first;
        if (first->kind == SV_TUPLE && index < first->nitems) return first->items[index];
    }
    return NULL;
}

/* An environment for evaluating code of def F at compile time: its parameters from its own
 * call sites, its pytest parametrization or defaults, then its simple top-level statements. */
static sema_env *caller_env_in(sema_ctx *c, const ast_stmt *F, int depth, sema_env *parent) {
    if (!F) return c->module_env;
    sema_env *env = env_new(c, parent, F);
    for (int i = 0; i < F->nparams; i++) {
        const ast_param *p = &F->params[i];
        if (p->star) {
            sval *e = sv_new(c, p->star == 1 ? SV_TUPLE : SV_DICT, p->loc);
            e->items = TILE_NEW_ARRAY(c->arena, sval *, 1);
            e->vals = TILE_NEW_ARRAY(c->arena, sval *, 1);
            env_bind(c, env, p->name, e, 0);
            continue;
        }
        sval *v = callsite_arg(c, F, i, depth + 1);
        if (!v) v = parametrize_arg(c, F, p->name);
        if (!v && p->dflt) {
            env_stmt es = {c->module_env, (const ast_stmt *)p->dflt};
            c->scratch = NULL;
            if (!captured(c, eval_in_env, &es) && c->scratch) v = c->scratch;
        }
        if (v) env_bind(c, env, p->name, v, 0);
    }
    run_driver_block(c, env, &F->body);
    return env;
}

static sema_env *caller_env(sema_ctx *c, const ast_stmt *F, int depth) { return caller_env_in(c, F, depth, c->module_env); }

/* The value the file passes for parameter `index` of `def` at a call, or NULL. */
static sval *callsite_arg(sema_ctx *c, const ast_stmt *def, int index, int depth) {
    if (depth > 3 || tile_diags_full(c->diags)) return NULL;
    const ast_param *p = &def->params[index];
    tile_vec sites = {0};
    calls_in_block(&c->ast->body, def->name, NULL, &sites);
    sval *found = NULL;
    for (int i = 0; i < sites.len && !found; i++) {
        const callsite *cs = sites.items[i];
        const ast_expr *call = cs->call;
        if (cs->in_def == def) continue; /* recursion */
        const ast_expr *arg = NULL;
        bool method = call->value->kind == AST_E_ATTR;
        if (!method && !p->kwonly && index < call->nitems && call->items[index]->kind != AST_E_STARRED) {
            bool starred_before = false;
            for (int k = 0; k < index; k++) starred_before |= call->items[k]->kind == AST_E_STARRED;
            if (!starred_before) arg = call->items[index];
        }
        bool spread = false; /* f(..., **config): the mapping's entry for the parameter */
        for (int k = 0; k < call->nkwargs; k++) {
            if (call->kwargs[k].name && !strcmp(call->kwargs[k].name, p->name)) { arg = call->kwargs[k].value; spread = false; }
            if (!call->kwargs[k].name && !arg) { arg = call->kwargs[k].value; spread = true; }
        }
        if (!arg) continue;
        /* a call in a closure sees the enclosing def's names, bound the same way */
        sema_env *env = cs->outer_def ? caller_env_in(c, cs->in_def, depth, caller_env(c, cs->outer_def, depth))
                                      : caller_env(c, cs->in_def, depth);
        if (cs->in_main) {
            env = env_new(c, c->module_env, NULL);
            run_driver_block(c, env, cs->in_main);
        } else if (cs->in_for) {
            /* a call in a module-level loop (`for dtype in [...]: kernel.compile(...)`): the
             * loop's first iteration, as in a driver function */
            env = env_new(c, c->module_env, NULL);
            run_driver_for(c, env, cs->in_for);
        }
        env_stmt es = {env, (const ast_stmt *)arg};
        c->scratch = NULL;
        if (!captured(c, eval_in_env, &es) && c->scratch) {
            sval *v = c->scratch;
            if (spread) {
                sval key = {.kind = SV_STRING, .str = p->name};
                v = v->kind == SV_DICT ? py_dict_get(v, &key) : NULL;
            }
            if (v && is_compile_time_value(v)) found = v;
        }
    }
    for (int i = 0; i < sites.len; i++) free(sites.items[i]);
    tile_vec_free(&sites);
    return found;
}

/* `@tilelang.autotune(configs=...)` (or `@autotune`): the value its first config gives the
 * parameter, the config TileLang's autotuner would try first; NULL when there is none or the
 * configs are not known at compile time. */
static sval *autotune_arg(sema_ctx *c, const ast_stmt *def, const char *name) {
    for (int i = 0; i < def->ndecorators; i++) {
        const ast_expr *d = def->decorators[i];
        if (d->kind != AST_E_CALL) continue;
        const char *dn = d->value->kind == AST_E_ATTR || d->value->kind == AST_E_NAME ? d->value->name : "";
        if (strcmp(dn, "autotune")) continue;
        for (int k = 0; k < d->nkwargs; k++) {
            if (!d->kwargs[k].name || strcmp(d->kwargs[k].name, "configs")) continue;
            env_stmt es = {c->module_env, (const ast_stmt *)d->kwargs[k].value};
            c->scratch = NULL;
            if (captured(c, eval_in_env, &es) || !c->scratch) return NULL;
            sval *cfgs = c->scratch;
            if (cfgs->kind != SV_TUPLE || cfgs->nitems < 1 || cfgs->items[0]->kind != SV_DICT) return NULL;
            sval key = {.kind = SV_STRING, .str = name};
            sval *v = py_dict_get(cfgs->items[0], &key);
            return v && is_compile_time_value(v) ? v : NULL;
        }
    }
    return NULL;
}

/* The value of an entry point's parameter with no -D and no default: from a call site
 * or the first autotune config when this lowering uses them, else NULL (the caller makes
 * it symbolic). */
static sval *unbound_param(sema_ctx *c, const ast_stmt *def, int index) {
    if (!c->use_callsites) return NULL;
    sval *v = callsite_arg(c, def, index, 0);
    if (!v) v = autotune_arg(c, def, def->params[index].name);
    if (v) {
        c->callsite_used = true;
        tile_log(TILE_LOG_INFO, "%s: parameter '%s' of '%s' takes its value from the file: a call, a pytest case or the first autotune config (no -D %s=...)",
                 def->loc.src ? def->loc.src->name : "?", def->params[index].name, def->name, def->params[index].name);
    }
    return v;
}

/* ---------- functions ---------- */
static void finish_func(sema_ctx *c, ir_func *f, ir_stmt *body, const ast_stmt *def) {
    f->body = body;
    if (c->bad) return;
    tile_diags vd;
    tile_diags_init(&vd);
    if (!ir_verify_func(f, &vd)) {
        for (int i = 0; i < vd.len; i++)
            tile_error_at(c->diags, vd.items[i].loc, "internal error (please report): %s", vd.items[i].msg);
        tile_diags_free(&vd);
        return;
    }
    tile_diags_free(&vd);
    ir_module_add(c->mod, f);
}

/* Drop empty SEQ statements from sequences (left where an ALLOC of a returned tensor was). */
static void drop_empty_seqs(ir_stmt *s) {
    if (!s) return;
    if (s->kind == IR_S_SEQ) {
        int n = 0;
        for (int i = 0; i < s->nbody; i++) {
            ir_stmt *b = s->body[i];
            if (b && b->kind == IR_S_SEQ && b->nbody == 0) continue;
            s->body[n++] = b;
        }
        s->nbody = n;
    }
    if (s->kind == IR_S_SEQ || s->kind == IR_S_FOR || s->kind == IR_S_WHILE || s->kind == IR_S_IF || s->kind == IR_S_KERNEL)
        for (int i = 0; i < s->nbody; i++) drop_empty_seqs(s->body[i]);
}

/* Lower the body of a kernel def (plain or tile form) into c->fn. */
static void lower_kernel_body(sema_ctx *c, sema_env *env, const ast_stmt *def);

static void lower_kernel_def(sema_ctx *c, sema_env *parent, const ast_stmt *def, bool tile_form) {
    sema_env *env = env_new(c, parent, def);
    prescan_assignments(c, env, &def->body);
    for (int i = 0; i < def->nparams; i++) declare_param(c, env, &def->params[i], i, tile_form, &def->body);
    lower_kernel_body(c, env, def);
}

/* Parameters are bound in env: lower the body into c->fn. */
static void lower_kernel_body(sema_ctx *c, sema_env *env, const ast_stmt *def) {
    tile_vec body = {0};
    tile_vec *saved = c->stmts;
    c->stmts = &body;
    c->returned_done = false;
    c->nreturned = 0;
    c->nglobal_allocs = 0;
    /* return annotation: declare its free names too */
    if (def->returns) declare_free_names(c, env, def->returns);
    int npend = c->npending_asserts;
    c->npending_asserts = 0;
    for (int i = 0; i < npend; i++) lower_stmt(c, c->pending_envs[i], c->pending_asserts[i]);
    lower_block(c, env, &def->body);
    c->stmts = saved;
    ir_stmt *seq = ir_seq(c->mod, (ir_stmt **)body.items, body.len, def->loc);
    tile_vec_free(&body);
    /* `return C` turned C into an output: the runtime allocates it, so its ALLOC goes. */
    for (int r = 0; r < c->nreturned; r++) {
        ir_buffer *b = c->returned[r];
        for (int i = 0; i < c->nglobal_allocs; i++)
            if (c->global_allocs[i]->buf == b) {
                c->global_allocs[i]->kind = IR_S_SEQ;
                c->global_allocs[i]->nbody = 0;
                c->global_allocs[i]->buf = NULL;
            }
        b->role = IR_BUF_OUTPUT;
        ir_func_add_ret(c->mod, c->fn, b);
    }
    /* eager kernels declare tensor parameters as their annotations run: call order is the def's */
    ir_func *f = c->fn;
    for (int i = 0, n = 0; i < def->nparams && f->nparams > 1; i++)
        for (int k = n; k < f->nparams; k++)
            if (!strcmp(f->params[k].name, def->params[i].name)) {
                ir_param t = f->params[n];
                f->params[n] = f->params[k];
                f->params[k] = t;
                n++;
                break;
            }
    drop_empty_seqs(seq);
    finish_func(c, c->fn, seq, def);
}

/* TileLang pass_configs keys (the PassConfigKey name or its string) map onto Tile per-kernel
 * options through src/base (tb_options_set_pass_config); the pairs are recorded per option. */
static void record_pass_configs(sema_ctx *c, sval *d, tile_loc loc) {
    if (d->kind != SV_DICT) {
        if (d->kind != SV_NONE) tile_warning_at(c->diags, loc, "pass_configs should be a dict; ignored");
        return;
    }
    ir_func *f = c->fn;
    f->option_names = TILE_NEW_ARRAY(&c->mod->arena, const char *, TB_OPT_COUNT + 1);
    f->option_values = TILE_NEW_ARRAY(&c->mod->arena, const char *, TB_OPT_COUNT + 1);
    f->noptions = 0;
    tb_options o = {0};
    for (int i = 0; i < d->nitems; i++) {
        const sval *k = d->items[i], *v = d->vals[i];
        const char *key = k->kind == SV_STRING ? k->str : k->kind == SV_OPAQUE && k->str ? last_component(k->str) : NULL;
        if (!key || !tb_pass_config_known(key)) {
            tile_warning_at(c->diags, k->loc, "pass_configs key '%s' has no Tile equivalent and is ignored", key ? key : sv_describe(k));
            continue;
        }
        const char *val;
        bool t;
        if (v->kind == SV_STRING) val = v->str;
        else if (py_truth(v, &t)) val = t ? "1" : "0";
        else { tile_warning_at(c->diags, v->loc, "the value of pass_configs key '%s' is not a compile-time value; ignored", key); continue; }
        char err[256];
        if (tb_options_set_pass_config(&o, key, val, err, sizeof err) < 0) tile_warning_at(c->diags, v->loc, "%s; ignored", err);
    }
    for (int i = 0; i < TB_OPT_COUNT; i++) {
        if (!((o.set >> i) & 1)) continue;
        f->option_names[f->noptions] = tb_option_name((tb_option)i);
        f->option_values[f->noptions++] = o.ival[i] ? "1" : "0";
    }
    tb_options_free(&o);
}

static void parse_out_idx(sema_ctx *c, sema_env *env, const ast_stmt *def) {
    c->nout_idx = 0;
    for (int i = 0; i < def->ndecorators; i++) {
        const ast_expr *d = def->decorators[i];
        if (d->kind != AST_E_CALL) continue;
        for (int k = 0; k < d->nkwargs; k++) {
            if (d->kwargs[k].name && !strcmp(d->kwargs[k].name, "pass_configs") && c->fn) {
                record_pass_configs(c, lower_expr(c, env, d->kwargs[k].value), d->kwargs[k].loc);
                continue;
            }
            if (!d->kwargs[k].name) continue;
            if (strcmp(d->kwargs[k].name, "out_idx")) continue;
            sval *v = lower_expr(c, env, d->kwargs[k].value);
            sval *one[1] = {v};
            sval **items = v->kind == SV_TUPLE ? v->items : one;
            int n = v->kind == SV_TUPLE ? v->nitems : 1;
            for (int j = 0; j < n && c->nout_idx < 16; j++) {
                int64_t x;
                if (as_const_int(c, items[j], &x, "out_idx entry")) c->out_idx[c->nout_idx++] = (int)x;
            }
        }
    }
}

static void resolve_out_idx(sema_ctx *c, int nparams) {
    for (int i = 0; i < c->nout_idx; i++) {
        if (c->out_idx[i] < 0) c->out_idx[i] += nparams;
    }
}

static const ast_stmt *find_prim_func(sema_ctx *c, sema_env *env, const char *name) {
    sema_binding *b = env_lookup(env, name);
    if (b && b->val->kind == SV_FUNC && has_decorator(c, env, b->val->fn->def, "prim_func")) return b->val->fn->def;
    return NULL;
}

/* In a factory or test body, `kernel = tilelang.compile(main, out_idx=[1], target=...)` (also
 * `tl.compile`, `tilelang.jit(main)`, `tilelang.lower(main, ...)`, as a statement or inside
 * an expression), or host code that inspects a prim_func the body defined (`main.script()`,
 * `main.body`, `main.attrs[...]`, in an assignment, an expression statement or an assert):
 * the expression that uses the prim_func, or NULL; *pf gets its name. That prim_func is the
 * kernel, as if the body returned it; what the body does with it afterwards is host code
 * that Tile does not run. */
static const ast_expr *compile_call(sema_ctx *c, sema_env *fenv, const ast_expr *e, const char **pf) {
    if (!e) return NULL;
    if (e->kind == AST_E_CALL && e->value->kind == AST_E_ATTR &&
        (!strcmp(e->value->name, "compile") || !strcmp(e->value->name, "jit") || !strcmp(e->value->name, "lower")) &&
        e->value->value->kind == AST_E_NAME && e->nitems >= 1 && e->items[0]->kind == AST_E_NAME &&
        find_prim_func(c, fenv, e->items[0]->name)) {
        *pf = e->items[0]->name;
        return e;
    }
    if (e->kind == AST_E_ATTR && e->value->kind == AST_E_NAME && find_prim_func(c, fenv, e->value->name)) {
        *pf = e->value->name;
        return e;
    }
    const ast_expr *r = compile_call(c, fenv, e->value, pf);
    if (!r) r = compile_call(c, fenv, e->lhs, pf);
    if (!r) r = compile_call(c, fenv, e->rhs, pf);
    if (e->kind == AST_E_CALL || e->kind == AST_E_COMPARE || e->kind == AST_E_BOOLOP || e->kind == AST_E_SUBSCRIPT ||
        e->kind == AST_E_TUPLE || e->kind == AST_E_LIST)
        for (int i = 0; i < e->nitems && !r; i++) r = compile_call(c, fenv, e->items[i], pf);
    if (e->kind == AST_E_CALL)
        for (int i = 0; i < e->nkwargs && !r; i++) r = compile_call(c, fenv, e->kwargs[i].value, pf);
    return r;
}

static void lower_compiled(sema_ctx *c, sema_env *fenv, const ast_expr *use, const char *name) {
    const ast_stmt *pf = find_prim_func(c, fenv, name);
    sema_binding *b = env_lookup(fenv, name);
    for (int k = 0; use->kind == AST_E_CALL && k < use->nkwargs; k++) {
        if (!use->kwargs[k].name || strcmp(use->kwargs[k].name, "out_idx")) continue;
        sval *v = lower_expr(c, fenv, use->kwargs[k].value);
        sval *one[1] = {v};
        sval **items = v->kind == SV_TUPLE ? v->items : one;
        int n = v->kind == SV_TUPLE ? v->nitems : 1;
        c->nout_idx = 0;
        for (int j = 0; j < n && c->nout_idx < 16; j++) {
            int64_t x;
            if (as_const_int(c, items[j], &x, "out_idx entry")) c->out_idx[c->nout_idx++] = (int)x;
        }
    }
    resolve_out_idx(c, pf->nparams);
    lower_kernel_def(c, b->val->fn->closure, pf, true);
}

/* Run a factory's body at compile time; lower the prim_func it returns. */
static void lower_factory_block(sema_ctx *c, sema_env *fenv, const ast_block *b, const ast_stmt *factory, bool *done) {
    for (int i = 0; i < b->len && !*done; i++) {
        const ast_stmt *s = b->stmts[i];
        switch (s->kind) {
        case AST_S_FUNCDEF: {
            sval *f = sv_new(c, SV_FUNC, s->loc);
            f->fn = TILE_NEW(c->arena, sema_fn);
            f->fn->def = s;
            f->fn->closure = fenv;
            env_bind(c, fenv, s->name, f, 0);
            check_decorators(c, fenv, s);
            break;
        }
        case AST_S_RETURN: {
            const ast_stmt *pf = NULL;
            sema_env *penv = fenv;
            if (s->value && s->value->kind == AST_E_NAME) pf = find_prim_func(c, fenv, s->value->name);
            if (!pf && s->value) {
                /* `return build(...)`: a helper (or a nested def) that returns a prim_func */
                sval *r = lower_expr(c, fenv, s->value);
                if (r->kind == SV_FUNC && r->fn->def && has_decorator(c, r->fn->closure, r->fn->def, "prim_func")) {
                    pf = r->fn->def;
                    penv = r->fn->closure;
                } else if (r->poison) { *done = true; return; }
            }
            if (!pf) { sema_err(c, s->loc, "a kernel factory must return a @T.prim_func"); *done = true; return; }
            resolve_out_idx(c, pf->nparams);
            lower_kernel_def(c, penv, pf, true);
            *done = true;
            return;
        }
        case AST_S_IF: {
            sval *cv = lower_expr(c, fenv, s->cond);
            bool t;
            if (!py_truth(cv, &t)) {
                if (!cv->poison) sema_err(c, s->cond->loc, "in a kernel factory, 'if' conditions must be compile-time constants");
                break;
            }
            lower_factory_block(c, fenv, t ? &s->body : &s->orelse, factory, done);
            break;
        }
        case AST_S_WITH:
            /* a host context manager at factory level (a target, pytest.raises(...)): its
             * body is factory code; the context itself means nothing to the kernel */
            lower_factory_block(c, fenv, &s->body, factory, done);
            break;
        default: {
            const char *pfn = NULL;
            const ast_expr *cc = s->kind == AST_S_ASSIGN || s->kind == AST_S_EXPR ? compile_call(c, fenv, s->value, &pfn)
                                 : s->kind == AST_S_ASSERT                     ? compile_call(c, fenv, s->cond, &pfn)
                                                                               : NULL;
            if (cc) {
                lower_compiled(c, fenv, cc, pfn);
                *done = true;
                return;
            }
            lower_stmt(c, fenv, s); /* compile-time statements */
            break;
        }
        }
        if (tile_diags_full(c->diags)) return;
    }
}

static void lower_factory(sema_ctx *c, const ast_stmt *def) {
    sema_env *parent = c->entry_env ? c->entry_env : c->module_env;
    sema_env *fenv = env_new(c, parent, def);
    prescan_assignments(c, fenv, &def->body);
    c->npy_sizes = 0;
    /* compile-time parameters */
    for (int i = 0; i < def->nparams; i++) {
        const ast_param *p = &def->params[i];
        if (p->star) {
            /* nothing is passed to an entry point's *args / **kwargs: empty */
            sval *e = sv_new(c, p->star == 1 ? SV_TUPLE : SV_DICT, p->loc);
            e->items = TILE_NEW_ARRAY(c->arena, sval *, 1);
            e->vals = TILE_NEW_ARRAY(c->arena, sval *, 1);
            env_bind(c, fenv, p->name, e, 0);
            continue;
        }
        sema_define *d = find_define(c, p->name);
        sval *cv;
        if (d) env_bind(c, fenv, p->name, define_value(c, d, p->loc), 0);
        else if (p->dflt) env_bind(c, fenv, p->name, lower_expr(c, parent, p->dflt), 0);
        else if ((cv = unbound_param(c, def, i))) env_bind(c, fenv, p->name, cv, 0);
        else make_py_size(c, fenv, p->name, p->loc);
    }
    parse_out_idx(c, fenv, def);
    tile_vec *saved = c->stmts;
    c->stmts = NULL; /* factory code runs at compile time */
    bool done = false;
    lower_factory_block(c, fenv, &def->body, def, &done);
    c->stmts = saved;
    if (!done && !c->bad) sema_err(c, def->loc, "kernel factory '%s' never returns its @T.prim_func", def->name);
}

/* Is `a` a tensor type annotation (T.Tensor(...), T.Tensor[...], Tensor[...], ...)? */
static bool is_tensor_annotation(sema_ctx *c, sema_env *env, const ast_expr *a) {
    if (!a || (a->kind != AST_E_CALL && a->kind != AST_E_SUBSCRIPT)) return false;
    return is_tensor_ctor(last_component(dotted_path(c, env, a->value)));
}

/* Names of the def's parameters annotated as tensors by a statement `P: T.Tensor(...)` in
 * its body (at any depth of if/with blocks). */
static bool annotated_in_body(sema_ctx *c, sema_env *env, const ast_block *b, const char *name) {
    for (int i = 0; i < b->len; i++) {
        const ast_stmt *s = b->stmts[i];
        if (s->kind == AST_S_ANNASSIGN && !s->value && s->targets[0]->kind == AST_E_NAME && !strcmp(s->targets[0]->name, name) &&
            is_tensor_annotation(c, env, s->annotation))
            return true;
        if ((s->kind == AST_S_IF || s->kind == AST_S_WITH || s->kind == AST_S_TRY) &&
            (annotated_in_body(c, env, &s->body, name) || annotated_in_body(c, env, &s->orelse, name)))
            return true;
    }
    return false;
}

/* A tensor parameter of an eager kernel, declared where its annotation statement runs. */
void sema_declare_eager_tensor(sema_ctx *c, sema_env *env, const ast_stmt *ann) {
    const char *name = ann->targets[0]->name;
    const ast_stmt *def = c->eager_def;
    int index = -1;
    for (int i = 0; i < def->nparams; i++)
        if (!strcmp(def->params[i].name, name)) index = i;
    ast_param p = def->params[index];
    p.annotation = ann->annotation;
    /* bind in the function's own scope, where the parameter lives */
    sema_env *fenv = env;
    while (fenv->parent && fenv->func == def && fenv->parent->func == def) fenv = fenv->parent;
    declare_param(c, fenv, &p, index, true, &def->body);
}

/* `hidden: int` on an eager kernel's parameter: a Python int (float, bool) the call passes,
 * which TileLang's eager builder traces as a constant (math.gcd(hidden, ...) works on it);
 * T.int32 and friends declare a run-time scalar parameter instead. */
static bool py_scalar_annotation(const ast_expr *a) {
    return a->kind == AST_E_NAME && (!strcmp(a->name, "int") || !strcmp(a->name, "float") || !strcmp(a->name, "bool"));
}

/* The eager @tilelang.jit style: tensor parameters (annotated in the signature or by an
 * annotation statement in the body), the others compile-time values (-D, default, or a
 * symbolic size); `M, N = T.const("M, N")` names symbolic sizes bound from the tensors'
 * shapes at call time; `C = T.empty(...)` + `return C` is an output. */
static void lower_eager(sema_ctx *c, const ast_stmt *def) {
    sema_env *parent = c->entry_env ? c->entry_env : c->module_env;
    sema_env *env = env_new(c, parent, def);
    prescan_assignments(c, env, &def->body);
    parse_out_idx(c, parent, def);
    c->eager_def = def;
    c->npy_sizes = 0;
    for (int i = 0; i < def->nparams; i++) {
        const ast_param *p = &def->params[i];
        if (p->star) { sema_err(c, p->loc, "'*%s' parameters are not supported in kernels", p->name); continue; }
        if (is_tensor_annotation(c, env, p->annotation) || (p->annotation && !is_dtype_ast(c, env, p->annotation) && !p->dflt)) {
            declare_param(c, env, p, i, true, &def->body);
            continue;
        }
        if (annotated_in_body(c, env, &def->body, p->name)) {
            sval *o = sv_new(c, SV_OPAQUE, p->loc);
            o->str = "@eager-tensor";
            env_bind(c, env, p->name, o, 0);
            continue;
        }
        sema_define *d = find_define(c, p->name);
        sval *cv;
        if (d) env_bind(c, env, p->name, define_value(c, d, p->loc), 0);
        else if (p->dflt) env_bind(c, env, p->name, lower_expr(c, parent, p->dflt), 0);
        else if (p->annotation && is_dtype_ast(c, env, p->annotation) && !py_scalar_annotation(p->annotation))
            declare_param(c, env, p, i, true, &def->body);
        else if ((cv = unbound_param(c, def, i))) env_bind(c, env, p->name, cv, 0);
        else make_py_size(c, env, p->name, p->loc);
    }
    lower_kernel_body(c, env, def);
    c->eager_def = NULL;
}

static void lower_entry(sema_ctx *c, const ast_stmt *s, def_class k) {
    c->bad = 0;
    const char *name = c->entry_outer ? tile_arena_printf(&c->mod->arena, "%s__%s", c->entry_outer->name, s->name) : s->name;
    c->fn = ir_func_new(c->mod, name, s->loc, k == DEF_KERNEL_PLAIN ? IR_FORM_PLAIN : IR_FORM_TILE);
    for (int i = 0; i < c->nvar_narrow; i++) c->var_narrow[i] = 0; /* variable ids are per function */
    c->entry_env = NULL;
    if (c->entry_outer) c->entry_env = caller_env(c, c->entry_outer, 0);
    c->next_par_id = 0;
    c->eager = k == DEF_KERNEL_EAGER;
    c->npending_asserts = 0;
    c->nreducers = 0;
    if (k == DEF_FACTORY) lower_factory(c, s);
    else if (k == DEF_KERNEL_EAGER) lower_eager(c, s);
    else {
        sema_env *parent = c->entry_env ? c->entry_env : c->module_env;
        parse_out_idx(c, parent, s);
        resolve_out_idx(c, s->nparams);
        lower_kernel_def(c, parent, s, k == DEF_KERNEL_TILE);
    }
}

typedef struct entry_try { const ast_stmt *s; def_class k; } entry_try;
static void lower_entry_cb(sema_ctx *c, const void *p) {
    const entry_try *et = p;
    lower_entry(c, et->s, et->k);
}

ir_module *sema_lower(const ast_module *m, sema_options *opt, tile_diags *diags) {
    sema_options noopt = {0};
    if (!opt) opt = &noopt;
    sema_ctx c = {0};
    c.mod = ir_module_new();
    /* Analysis values live in the module's arena too: IR nodes point into them (index
     * arrays, names), and they are small next to the IR. */
    c.arena = &c.mod->arena;
    c.diags = diags;
    c.opt = opt;
    c.ast = m;
    c.module_env = env_new(&c, NULL, NULL);
    scan_module(&c);
    bool found = false;
    /* entry points: module-level kernels and factories, then kernels defined inside
     * module-level functions that are neither (test functions), named outer__inner */
    tile_vec entries = {0}, outers = {0};
    for (int i = 0; i < m->body.len; i++) {
        const ast_stmt *s = m->body.stmts[i];
        if (s->kind != AST_S_FUNCDEF) continue;
        check_decorators(&c, c.module_env, s);
        def_class k = classify_def(&c, c.module_env, s);
        if (k == DEF_KERNEL_PLAIN || k == DEF_KERNEL_TILE || k == DEF_FACTORY || k == DEF_KERNEL_EAGER) {
            tile_vec_push(&entries, (void *)s);
            tile_vec_push(&outers, NULL);
            continue;
        }
        if (k != DEF_HELPER) continue;
        for (int j = 0; j < s->body.len; j++) {
            const ast_stmt *n = s->body.stmts[j];
            if (n->kind != AST_S_FUNCDEF || !n->ndecorators) continue;
            def_class nk = classify_def(&c, c.module_env, n);
            if (nk != DEF_KERNEL_PLAIN && nk != DEF_KERNEL_TILE && nk != DEF_FACTORY && nk != DEF_KERNEL_EAGER) continue;
            tile_vec_push(&entries, (void *)n);
            tile_vec_push(&outers, (void *)s);
        }
    }
    for (int i = 0; i < entries.len && !tile_diags_full(diags); i++) {
        const ast_stmt *s = entries.items[i];
        c.entry_outer = outers.items[i];
        def_class k = classify_def(&c, c.module_env, s);
        if (c.entry_outer) check_decorators(&c, c.module_env, s);
        const char *ename = c.entry_outer ? tile_arena_printf(&c.mod->arena, "%s__%s", c.entry_outer->name, s->name) : s->name;
        if (opt->only_func && strcmp(opt->only_func, ename)) continue;
        found = true;
        if (k == DEF_FACTORY || k == DEF_KERNEL_EAGER) {
            /* first with unbound parameters symbolic; if that fails, with the values the
             * file's own calls pass (see callsite_arg); errors are those of the last try */
            c.use_callsites = false;
            c.callsite_used = false;
            int before = c.mod->nfuncs;
            tile_diag *why = NULL;
            entry_try et = {s, k};
            why = captured(&c, lower_entry_cb, &et);
            if (!why && c.mod->nfuncs > before) { c.fn = NULL; continue; }
            c.use_callsites = true;
            c.callsite_used = false;
            why = captured(&c, lower_entry_cb, &et);
            if (!why && c.mod->nfuncs > before) { c.fn = NULL; continue; }
            c.use_callsites = c.callsite_used; /* report the errors of the try that means most */
            lower_entry(&c, s, k);
            c.fn = NULL;
            continue;
        }
        lower_entry(&c, s, k);
        c.fn = NULL;
    }
    c.entry_outer = NULL;
    c.entry_env = NULL;
    tile_vec_free(&entries);
    tile_vec_free(&outers);
    if (opt->only_func && !found) {
        tile_loc nowhere = {m->src, 0, 0};
        tile_error_at(diags, nowhere, "no kernel named '%s' in this file", opt->only_func);
    }
    free(c.global_allocs);
    free(c.returned);
    free(c.var_narrow);
    return c.mod;
}
