/* sema_py.c — the compile-time Python of kernel factories and module code: dict and set
 * displays, comprehensions, lambdas, `in`, equality of compile-time values, the methods of
 * ints, strings, tuples and dicts, and the Python builtins that build or inspect them
 * (tuple, list, dict, any, all, enumerate, zip, sorted, isinstance, ...).
 *
 * Everything here works on values known at compile time; a comprehension over a
 * compile-time sequence may still produce run-time elements (`[A[i] for i in range(4)]`
 * is four loads), since it is unrolled. */
#include "sema_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ITEMS (1 << 16) /* longest sequence built at compile time (range(n) as a value, ...) */

static sval *mk_tuple(sema_ctx *c, sval **items, int n, tile_loc loc) {
    sval *t = sv_new(c, SV_TUPLE, loc);
    t->nitems = n;
    t->items = TILE_NEW_ARRAY(c->arena, sval *, n ? n : 1);
    for (int i = 0; i < n; i++) t->items[i] = items[i];
    return t;
}

static bool is_host_tensor(const sval *v);

static sval *mk_string(sema_ctx *c, const char *s, tile_loc loc) {
    sval *v = sv_new(c, SV_STRING, loc);
    v->str = s;
    return v;
}

static bool const_truth(const sval *v, bool *t) {
    switch (v->kind) {
    case SV_EXPR:
        if (v->e->kind != IR_E_CONST) return false;
        *t = tile_dtype_is_float(v->e->dtype) ? v->e->fval != 0 : v->e->ival != 0;
        return true;
    case SV_NONE: *t = false; return !v->poison;
    case SV_TUPLE: case SV_DICT: *t = v->nitems > 0; return true;
    case SV_STRING: *t = v->str[0] != 0; return true;
    case SV_DTYPE: case SV_MODULE: case SV_FUNC: case SV_BUILTIN: case SV_BUFFER: *t = true; return true;
    default: return false;
    }
}

bool py_truth(const sval *v, bool *t) { return const_truth(v, t); }

/* ---------- equality of compile-time values ---------- */
bool py_equal(const sval *a, const sval *b, bool *eq) {
    if (a->kind == SV_EXPR && b->kind == SV_EXPR) {
        if (a->e->kind != IR_E_CONST || b->e->kind != IR_E_CONST) return false;
        bool fa = tile_dtype_is_float(a->e->dtype), fb = tile_dtype_is_float(b->e->dtype);
        if (fa || fb) {
            double x = fa ? a->e->fval : (double)a->e->ival, y = fb ? b->e->fval : (double)b->e->ival;
            *eq = x == y;
        } else *eq = a->e->ival == b->e->ival;
        return true;
    }
    if (a->kind == SV_STRING && b->kind == SV_STRING) { *eq = !strcmp(a->str, b->str); return true; }
    if ((a->kind == SV_DTYPE || a->kind == SV_STRING) && (b->kind == SV_DTYPE || b->kind == SV_STRING)) {
        tile_dtype x = a->kind == SV_DTYPE ? a->dt : tile_dtype_parse(a->str);
        tile_dtype y = b->kind == SV_DTYPE ? b->dt : tile_dtype_parse(b->str);
        *eq = x != TILE_DT_INVALID && x == y;
        return true;
    }
    if (a->kind == SV_NONE || b->kind == SV_NONE) { *eq = a->kind == b->kind; return true; }
    if (a->kind == SV_TUPLE && b->kind == SV_TUPLE) {
        if (a->nitems != b->nitems) { *eq = false; return true; }
        for (int i = 0; i < a->nitems; i++) {
            bool e;
            if (!py_equal(a->items[i], b->items[i], &e)) return false;
            if (!e) { *eq = false; return true; }
        }
        *eq = true;
        return true;
    }
    if (a->kind == SV_OPAQUE && b->kind == SV_OPAQUE && a->str && b->str) {
        const char *x = strrchr(a->str, '.'), *y = strrchr(b->str, '.');
        *eq = !strcmp(x ? x + 1 : a->str, y ? y + 1 : b->str);
        return true;
    }
    if (a->kind == SV_BUFFER && b->kind == SV_BUFFER) { *eq = a->buf == b->buf; return true; }
    if (a->kind == SV_FUNC && b->kind == SV_FUNC) { *eq = a->fn->def == b->fn->def && a->fn->lambda == b->fn->lambda; return true; }
    if (a->kind != b->kind && a->kind != SV_ACCESS && b->kind != SV_ACCESS && a->kind != SV_EXPR && b->kind != SV_EXPR) {
        *eq = false;
        return true;
    }
    return false;
}

/* ---------- iteration ---------- */
bool py_iter(sema_ctx *c, sval *v, sval ***items, int *n, tile_loc loc) {
    switch (v->kind) {
    case SV_TUPLE:
    case SV_DICT: *items = v->items; *n = v->nitems; return true;
    case SV_STRING: {
        int len = (int)strlen(v->str);
        sval **it = TILE_NEW_ARRAY(c->arena, sval *, len ? len : 1);
        for (int i = 0; i < len; i++) it[i] = mk_string(c, tile_arena_strndup(c->arena, v->str + i, 1), loc);
        *items = it;
        *n = len;
        return true;
    }
    case SV_DTYPE: {
        /* a TileLang dtype is a str: its characters */
        sval s = *v;
        s.kind = SV_STRING;
        s.str = tile_dtype_name(v->dt);
        return py_iter(c, &s, items, n, loc);
    }
    case SV_NONE: if (v->poison) return false; break;
    default: break;
    }
    sema_err(c, loc, "cannot iterate over %s at compile time", sv_describe(v));
    return false;
}

/* ---------- dicts ---------- */
sval *py_dict_get(const sval *d, const sval *key) {
    for (int i = d->nitems - 1; i >= 0; i--) {
        bool eq;
        if (py_equal(d->items[i], key, &eq) && eq) return d->vals[i];
    }
    return NULL;
}

static sval *mk_dict(sema_ctx *c, tile_vec *keys, tile_vec *vals, tile_loc loc) {
    sval *d = sv_new(c, SV_DICT, loc);
    /* later duplicates replace earlier ones, keeping the first position (Python) */
    int n = keys->len;
    d->items = TILE_NEW_ARRAY(c->arena, sval *, n ? n : 1);
    d->vals = TILE_NEW_ARRAY(c->arena, sval *, n ? n : 1);
    for (int i = 0; i < n; i++) {
        sval *k = keys->items[i], *v = vals->items[i];
        bool dup = false;
        for (int j = 0; j < d->nitems && !dup; j++) {
            bool eq;
            if (py_equal(d->items[j], k, &eq) && eq) { d->vals[j] = v; dup = true; }
        }
        if (!dup) {
            d->items[d->nitems] = k;
            d->vals[d->nitems++] = v;
        }
    }
    tile_vec_free(keys);
    tile_vec_free(vals);
    return d;
}

/* ---------- comprehensions ---------- */
typedef struct comp_out {
    tile_vec items;  /* LISTCOMP/SETCOMP/GENERATOR elements, DICTCOMP keys */
    tile_vec vals;   /* DICTCOMP values */
} comp_out;

static bool bind_comp_target(sema_ctx *c, sema_env *env, const ast_expr *t, sval *v) {
    if (t->kind == AST_E_NAME) { env_bind(c, env, t->name, v, 0); return true; }
    if (t->kind == AST_E_TUPLE || t->kind == AST_E_LIST) {
        sval **items;
        int n;
        if (v->kind != SV_TUPLE) { sema_err(c, t->loc, "cannot unpack %s into %d names", sv_describe(v), t->nitems); return false; }
        items = v->items;
        n = v->nitems;
        if (n != t->nitems) { sema_err(c, t->loc, "cannot unpack %d values into %d names", n, t->nitems); return false; }
        for (int i = 0; i < n; i++)
            if (!bind_comp_target(c, env, t->items[i], items[i])) return false;
        return true;
    }
    sema_err(c, t->loc, "a comprehension target must be a name or a tuple of names");
    return false;
}

static bool run_comp(sema_ctx *c, sema_env *env, const ast_expr *e, const ast_comp *cl, comp_out *out) {
    if (!cl) {
        if (out->items.len >= MAX_ITEMS) { sema_err(c, e->loc, "comprehension produces more than %d items", MAX_ITEMS); return false; }
        if (e->kind == AST_E_DICTCOMP) {
            tile_vec_push(&out->items, lower_expr(c, env, e->lhs));
            tile_vec_push(&out->vals, lower_expr(c, env, e->rhs));
        } else tile_vec_push(&out->items, lower_expr(c, env, e->value));
        return true;
    }
    sval *seq = lower_expr(c, env, cl->iter);
    sval **items;
    int n;
    if (!py_iter(c, seq, &items, &n, cl->iter->loc)) return false;
    for (int i = 0; i < n; i++) {
        sema_env *inner = env_new(c, env, env->func);
        inner->nassigned = 0;
        if (!bind_comp_target(c, inner, cl->target, items[i])) return false;
        bool keep = true;
        for (int k = 0; k < cl->nconds && keep; k++) {
            sval *cv = lower_expr(c, inner, cl->conds[k]);
            bool t;
            if (!const_truth(cv, &t)) {
                if (!cv->poison) sema_err(c, cl->conds[k]->loc, "the condition of a comprehension must be known at compile time");
                return false;
            }
            keep = t;
        }
        if (keep && !run_comp(c, inner, e, cl->next, out)) return false;
        if (tile_diags_full(c->diags)) return false;
    }
    return true;
}

/* A comprehension (or a generator used as a value) over compile-time sequences. */
sval *py_comprehension(sema_ctx *c, sema_env *env, const ast_expr *e) {
    comp_out out = {{0}, {0}};
    if (!run_comp(c, env, e, e->comp, &out)) {
        tile_vec_free(&out.items);
        tile_vec_free(&out.vals);
        return sv_err(c, e->loc);
    }
    if (e->kind == AST_E_DICTCOMP) return mk_dict(c, &out.items, &out.vals, e->loc);
    sval *t = mk_tuple(c, (sval **)out.items.items, out.items.len, e->loc);
    tile_vec_free(&out.items);
    return t;
}

/* ---------- displays and lambdas ---------- */
sval *py_display(sema_ctx *c, sema_env *env, const ast_expr *e) {
    switch (e->kind) {
    case AST_E_DICT: {
        tile_vec keys = {0}, vals = {0};
        for (int i = 0; i < e->nitems; i++) {
            sval *v = lower_expr(c, env, e->dvals[i]);
            if (!e->items[i]) { /* **other */
                if (v->kind != SV_DICT) {
                    if (!v->poison) sema_err(c, e->dvals[i]->loc, "'**' in a dict display needs a dict, got %s", sv_describe(v));
                    continue;
                }
                for (int k = 0; k < v->nitems; k++) {
                    tile_vec_push(&keys, v->items[k]);
                    tile_vec_push(&vals, v->vals[k]);
                }
                continue;
            }
            tile_vec_push(&keys, lower_expr(c, env, e->items[i]));
            tile_vec_push(&vals, v);
        }
        return mk_dict(c, &keys, &vals, e->loc);
    }
    case AST_E_SET: {
        tile_vec items = {0};
        for (int i = 0; i < e->nitems; i++) {
            sval *v = lower_expr(c, env, e->items[i]);
            bool dup = false;
            for (int k = 0; k < items.len && !dup; k++) {
                bool eq;
                if (py_equal(items.items[k], v, &eq) && eq) dup = true;
            }
            if (!dup) tile_vec_push(&items, v);
        }
        sval *t = mk_tuple(c, (sval **)items.items, items.len, e->loc);
        tile_vec_free(&items);
        return t;
    }
    case AST_E_LISTCOMP:
    case AST_E_SETCOMP:
    case AST_E_DICTCOMP:
    case AST_E_GENERATOR: return py_comprehension(c, env, e);
    case AST_E_LAMBDA: {
        sval *f = sv_new(c, SV_FUNC, e->loc);
        f->fn = TILE_NEW(c->arena, sema_fn);
        f->fn->lambda = e;
        f->fn->closure = env;
        return f;
    }
    case AST_E_ELLIPSIS: {
        sval *o = sv_new(c, SV_OPAQUE, e->loc);
        o->str = "Ellipsis";
        return o;
    }
    default: break;
    }
    sema_err(c, e->loc, "unsupported expression");
    return sv_err(c, e->loc);
}

/* ---------- `in` ---------- */
sval *py_contains(sema_ctx *c, sval *needle, sval *hay, bool negate, tile_loc loc) {
    if (needle->poison || hay->poison) return sv_err(c, loc);
    bool found = false;
    if (hay->kind == SV_STRING && needle->kind == SV_STRING) found = strstr(hay->str, needle->str) != NULL;
    else if (hay->kind == SV_TUPLE || hay->kind == SV_DICT) {
        for (int i = 0; i < hay->nitems && !found; i++) {
            bool eq;
            if (!py_equal(needle, hay->items[i], &eq)) {
                sema_err(c, loc, "'in' needs values known at compile time");
                return sv_err(c, loc);
            }
            found = eq;
        }
    } else {
        sema_err(c, loc, "'in' needs a tuple, list, set, dict or string known at compile time, got %s", sv_describe(hay));
        return sv_err(c, loc);
    }
    return sv_weak_bool(c, negate ? !found : found, loc);
}

/* ---------- methods ---------- */
bool py_has_method(const sval *self, const char *name) {
    static const char *const int_m[] = {"bit_length", "bit_count", NULL};
    static const char *const str_m[] = {"format", "startswith", "endswith", "lower", "upper", "replace", "split", "strip", "join", "isdigit", "isalpha", "isalnum", NULL};
    static const char *const seq_m[] = {"index", "count", "append", "extend", NULL};
    static const char *const dict_m[] = {"get", "items", "keys", "values", NULL};
    static const char *const parser_m[] = {"add_argument", "parse_args", "parse_known_args", "add_argument_group",
                                           "add_mutually_exclusive_group", "set_defaults", NULL};
    const char *const *set = NULL;
    if (py_host_tensor_has(self, name)) return true;
    if (self->kind == SV_DICT && self->str && !strcmp(self->str, "@argparse")) set = parser_m;
    else
    if (self->kind == SV_EXPR && self->e->kind == IR_E_CONST && !tile_dtype_is_float(self->e->dtype)) set = int_m;
    else if (self->kind == SV_STRING) set = str_m;
    else if (self->kind == SV_TUPLE) set = seq_m;
    else if (self->kind == SV_DICT) set = dict_m;
    for (int i = 0; set && set[i]; i++)
        if (!strcmp(set[i], name)) return true;
    return false;
}

static sval *arg_or(call_args *a, int i) { return i < a->npos ? a->pos[i] : NULL; }

static void format_value(sema_ctx *c, tile_strbuf *sb, const sval *v) {
    switch (v->kind) {
    case SV_STRING: tile_sb_puts(sb, v->str); return;
    case SV_DTYPE: tile_sb_puts(sb, tile_dtype_name(v->dt)); return;
    case SV_NONE: tile_sb_puts(sb, "None"); return;
    case SV_EXPR:
        if (v->e->kind == IR_E_CONST) {
            if (v->e->dtype == TILE_DT_BOOL) tile_sb_puts(sb, v->e->ival ? "True" : "False");
            else if (tile_dtype_is_float(v->e->dtype)) tile_sb_printf(sb, "%g", v->e->fval);
            else tile_sb_printf(sb, "%lld", (long long)v->e->ival);
            return;
        }
        break;
    case SV_TUPLE:
        tile_sb_putc(sb, '(');
        for (int i = 0; i < v->nitems; i++) {
            if (i) tile_sb_puts(sb, ", ");
            format_value(c, sb, v->items[i]);
        }
        tile_sb_putc(sb, ')');
        return;
    default: break;
    }
    tile_sb_puts(sb, "?");
}

/* argparse, as far as main() functions use it to give kernel parameters their values: a
 * parser is a dict of each argument's destination and default; parse_args() returns them
 * (nothing is parsed: Tile runs no script). */
sval *py_argparser(sema_ctx *c, tile_loc loc) {
    sval *p = sv_new(c, SV_DICT, loc);
    p->str = "@argparse";
    p->items = TILE_NEW_ARRAY(c->arena, sval *, 128);
    p->vals = TILE_NEW_ARRAY(c->arena, sval *, 128);
    return p;
}

static void parser_set(sema_ctx *c, sval *self, const char *dest, sval *v, tile_loc loc) {
    sval *p = self->list_root ? self->list_root : self; /* the parser the name is bound to */
    for (int i = 0; i < p->nitems; i++)
        if (!strcmp(p->items[i]->str, dest)) { p->vals[i] = v; return; }
    if (p->nitems >= 128) return;
    p->items[p->nitems] = mk_string(c, dest, loc);
    p->vals[p->nitems++] = v;
    self->nitems = p->nitems;
}

static sval *parser_method(sema_ctx *c, sval *self, const char *m, call_args *a, tile_loc loc) {
    if (!strcmp(m, "add_argument_group") || !strcmp(m, "add_mutually_exclusive_group")) return self;
    if (!strcmp(m, "set_defaults")) {
        for (int i = 0; i < a->nkw; i++) parser_set(c, self, a->kw[i].name, a->kwv[i], loc);
        return sv_none(c, loc);
    }
    if (!strcmp(m, "parse_args") || !strcmp(m, "parse_known_args")) {
        sval *ns = sv_new(c, SV_DICT, loc);
        ns->str = "@namespace";
        ns->nitems = (self->list_root ? self->list_root : self)->nitems;
        ns->items = self->items;
        ns->vals = self->vals;
        if (m[5] == 'k') { sval *pair[2] = {ns, mk_tuple(c, NULL, 0, loc)}; return mk_tuple(c, pair, 2, loc); }
        return ns;
    }
    /* add_argument("--block-m", "-b", type=int, default=128, action=...) */
    const char *dest = NULL;
    sval *dflt = NULL, *action = NULL;
    for (int i = 0; i < a->nkw; i++) {
        if (!strcmp(a->kw[i].name, "dest") && a->kwv[i]->kind == SV_STRING) dest = a->kwv[i]->str;
        else if (!strcmp(a->kw[i].name, "default")) dflt = a->kwv[i];
        else if (!strcmp(a->kw[i].name, "action")) action = a->kwv[i];
    }
    for (int i = 0; !dest && i < a->npos; i++) {
        if (a->pos[i]->kind != SV_STRING) continue;
        const char *s = a->pos[i]->str;
        if (s[0] == '-' && s[1] == '-') dest = s + 2;
        else if (s[0] != '-') dest = s;
    }
    for (int i = 0; !dest && i < a->npos; i++)
        if (a->pos[i]->kind == SV_STRING) dest = a->pos[i]->str + 1;
    if (!dest) return sv_none(c, loc);
    char *d = tile_arena_strdup(c->arena, dest);
    for (char *q = d; *q; q++)
        if (*q == '-') *q = '_';
    if (!dflt) {
        bool st = action && action->kind == SV_STRING && !strcmp(action->str, "store_true");
        bool sf = action && action->kind == SV_STRING && !strcmp(action->str, "store_false");
        dflt = st || sf ? sv_weak_bool(c, sf, loc) : sv_none(c, loc);
    }
    parser_set(c, self, d, dflt, loc);
    return sv_none(c, loc);
}

static sval *host_tensor_method(sema_ctx *c, sval *self, const char *m, call_args *a, tile_loc loc);

sval *py_method(sema_ctx *c, sval *self, const char *m, call_args *a, tile_loc loc) {
    if (is_host_tensor(self)) return host_tensor_method(c, self, m, a, loc);
    if (self->kind == SV_DICT && self->str && !strcmp(self->str, "@argparse")) return parser_method(c, self, m, a, loc);
    if (self->kind == SV_EXPR) {
        int64_t x = self->e->ival;
        uint64_t u = x < 0 ? (uint64_t)(-(x + 1)) + 1 : (uint64_t)x;
        int bits = 0;
        if (!strcmp(m, "bit_length")) {
            while (u) { bits++; u >>= 1; }
        } else {
            while (u) { bits += (int)(u & 1); u >>= 1; }
        }
        return sv_weak_int(c, bits, loc);
    }
    if (self->kind == SV_DICT) {
        if (!strcmp(m, "get")) {
            if (a->npos < 1 || a->npos > 2) { sema_err(c, loc, "dict.get() takes a key and an optional default"); return sv_err(c, loc); }
            sval *v = py_dict_get(self, a->pos[0]);
            return v ? v : a->npos > 1 ? a->pos[1] : sv_none(c, loc);
        }
        sval **it = TILE_NEW_ARRAY(c->arena, sval *, self->nitems ? self->nitems : 1);
        for (int i = 0; i < self->nitems; i++) {
            if (!strcmp(m, "keys")) it[i] = self->items[i];
            else if (!strcmp(m, "values")) it[i] = self->vals[i];
            else {
                sval *pair[2] = {self->items[i], self->vals[i]};
                it[i] = mk_tuple(c, pair, 2, loc);
            }
        }
        return mk_tuple(c, it, self->nitems, loc);
    }
    if (self->kind == SV_TUPLE) {
        sval *x = arg_or(a, 0);
        if (!x || a->npos != 1) { sema_err(c, loc, "%s() takes one argument", m); return sv_err(c, loc); }
        if (!strcmp(m, "append") || !strcmp(m, "extend")) {
            /* a list built at compile time grows in place (other names for it see the change) */
            sval **more = &x;
            int nmore = 1;
            if (m[0] == 'e' && !py_iter(c, x, &more, &nmore, loc)) return sv_err(c, loc);
            if ((self->list_root ? self->list_root : self)->nitems + nmore > MAX_ITEMS) { sema_err(c, loc, "a list built at compile time is longer than %d", MAX_ITEMS); return sv_err(c, loc); }
            sval *root = self->list_root ? self->list_root : self;
            sval **it = TILE_NEW_ARRAY(c->arena, sval *, root->nitems + nmore);
            for (int i = 0; i < root->nitems; i++) it[i] = root->items[i];
            for (int i = 0; i < nmore; i++) it[root->nitems + i] = more[i];
            root->items = self->items = it;
            root->nitems = self->nitems = root->nitems + nmore;
            return sv_none(c, loc);
        }
        int count = 0;
        for (int i = 0; i < self->nitems; i++) {
            bool eq;
            if (!py_equal(self->items[i], x, &eq)) { sema_err(c, loc, "%s() needs values known at compile time", m); return sv_err(c, loc); }
            if (eq) {
                if (!strcmp(m, "index")) return sv_weak_int(c, i, loc);
                count++;
            }
        }
        if (!strcmp(m, "index")) { sema_err(c, loc, "index(): the value is not in the tuple"); return sv_err(c, loc); }
        return sv_weak_int(c, count, loc);
    }
    /* strings */
    const char *s = self->str;
    if (!strcmp(m, "isdigit") || !strcmp(m, "isalpha") || !strcmp(m, "isalnum")) {
        /* Python's: true when the string is not empty and every character is of the kind */
        bool r = *s != 0;
        for (const char *q = s; *q && r; q++) {
            bool dg = *q >= '0' && *q <= '9', al = (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z');
            r = !strcmp(m, "isdigit") ? dg : !strcmp(m, "isalpha") ? al : dg || al;
        }
        return sv_weak_bool(c, r, loc);
    }
    if (!strcmp(m, "lower") || !strcmp(m, "upper") || !strcmp(m, "strip")) {
        char *r = tile_arena_strdup(c->arena, s);
        if (m[0] == 's') {
            char *b = r;
            while (*b == ' ' || *b == '\t' || *b == '\n') b++;
            char *e = b + strlen(b);
            while (e > b && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n')) *--e = 0;
            r = b;
        } else
            for (char *q = r; *q; q++) *q = m[0] == 'l' ? (char)((*q >= 'A' && *q <= 'Z') ? *q + 32 : *q) : (char)((*q >= 'a' && *q <= 'z') ? *q - 32 : *q);
        return mk_string(c, r, loc);
    }
    if (!strcmp(m, "startswith") || !strcmp(m, "endswith")) {
        sval *x = arg_or(a, 0);
        if (!x || x->kind != SV_STRING) { sema_err(c, loc, "%s() takes a string", m); return sv_err(c, loc); }
        size_t ls = strlen(s), lx = strlen(x->str);
        bool r = lx <= ls && !strncmp(m[0] == 's' ? s : s + ls - lx, x->str, lx);
        return sv_weak_bool(c, r, loc);
    }
    if (!strcmp(m, "replace")) {
        sval *x = arg_or(a, 0), *y = arg_or(a, 1);
        if (!x || !y || x->kind != SV_STRING || y->kind != SV_STRING || !x->str[0]) { sema_err(c, loc, "replace() takes two strings"); return sv_err(c, loc); }
        tile_strbuf sb = {0};
        size_t lx = strlen(x->str);
        for (const char *q = s; *q;) {
            if (!strncmp(q, x->str, lx)) { tile_sb_puts(&sb, y->str); q += lx; }
            else tile_sb_putc(&sb, *q++);
        }
        const char *r = tile_arena_strdup(c->arena, sb.data ? sb.data : "");
        tile_sb_free(&sb);
        return mk_string(c, r, loc);
    }
    if (!strcmp(m, "split")) {
        sval *x = arg_or(a, 0);
        const char *sep = x && x->kind == SV_STRING ? x->str : NULL;
        tile_vec parts = {0};
        const char *q = s;
        while (*q) {
            if (!sep) {
                while (*q == ' ' || *q == '\t' || *q == '\n') q++;
                if (!*q) break;
                const char *b = q;
                while (*q && *q != ' ' && *q != '\t' && *q != '\n') q++;
                tile_vec_push(&parts, mk_string(c, tile_arena_strndup(c->arena, b, (size_t)(q - b)), loc));
            } else {
                const char *f = strstr(q, sep);
                size_t n = f ? (size_t)(f - q) : strlen(q);
                tile_vec_push(&parts, mk_string(c, tile_arena_strndup(c->arena, q, n), loc));
                if (!f) break;
                q = f + strlen(sep);
                if (!*q) tile_vec_push(&parts, mk_string(c, "", loc));
            }
        }
        sval *t = mk_tuple(c, (sval **)parts.items, parts.len, loc);
        tile_vec_free(&parts);
        return t;
    }
    if (!strcmp(m, "join")) {
        sval *x = arg_or(a, 0);
        sval **items;
        int n;
        if (!x || !py_iter(c, x, &items, &n, loc)) return sv_err(c, loc);
        tile_strbuf sb = {0};
        for (int i = 0; i < n; i++) {
            if (i) tile_sb_puts(&sb, s);
            format_value(c, &sb, items[i]);
        }
        const char *r = tile_arena_strdup(c->arena, sb.data ? sb.data : "");
        tile_sb_free(&sb);
        return mk_string(c, r, loc);
    }
    /* format: {} and {0} and {name} placeholders, format specs ignored */
    tile_strbuf sb = {0};
    int next = 0;
    for (const char *q = s; *q; q++) {
        if (q[0] == '{' && q[1] == '{') { tile_sb_putc(&sb, '{'); q++; continue; }
        if (q[0] == '}' && q[1] == '}') { tile_sb_putc(&sb, '}'); q++; continue; }
        if (*q != '{') { tile_sb_putc(&sb, *q); continue; }
        const char *e = strchr(q, '}');
        if (!e) { tile_sb_puts(&sb, q); break; }
        char key[64] = {0};
        size_t kl = 0;
        for (const char *k = q + 1; k < e && *k != ':' && *k != '!' && kl < sizeof key - 1; k++) key[kl++] = *k;
        sval *v = NULL;
        if (!kl) v = arg_or(a, next++);
        else if (key[0] >= '0' && key[0] <= '9') v = arg_or(a, atoi(key));
        else
            for (int i = 0; i < a->nkw; i++)
                if (a->kw[i].name && !strcmp(a->kw[i].name, key)) v = a->kwv[i];
        if (v) format_value(c, &sb, v);
        q = e;
    }
    const char *r = tile_arena_strdup(c->arena, sb.data ? sb.data : "");
    tile_sb_free(&sb);
    return mk_string(c, r, loc);
}

/* ---------- builtins of the Python surface ---------- */
static const char *const py_builtin_names[] = {"tuple", "list", "set", "dict", "any", "all", "enumerate", "zip",
                                               "sorted", "reversed", "isinstance", "print", "str", "hasattr",
                                               "getattr", "callable", "repr", "divmod", NULL};

bool py_is_builtin(const char *name) {
    for (int i = 0; py_builtin_names[i]; i++)
        if (!strcmp(py_builtin_names[i], name)) return true;
    return false;
}

static int cmp_sval(const void *pa, const void *pb) {
    const sval *a = *(sval *const *)pa, *b = *(sval *const *)pb;
    if (a->kind == SV_STRING && b->kind == SV_STRING) return strcmp(a->str, b->str);
    double x = a->e ? (tile_dtype_is_float(a->e->dtype) ? a->e->fval : (double)a->e->ival) : 0;
    double y = b->e ? (tile_dtype_is_float(b->e->dtype) ? b->e->fval : (double)b->e->ival) : 0;
    return (x > y) - (x < y);
}

sval *py_builtin(sema_ctx *c, const char *f, call_args *a, tile_loc loc) {
    sval *x = arg_or(a, 0);
    if (!strcmp(f, "print")) return sv_none(c, loc); /* compile-time output is dropped */
    if (!strcmp(f, "tuple") || !strcmp(f, "list") || !strcmp(f, "set") || !strcmp(f, "sorted") || !strcmp(f, "reversed")) {
        if (!x) return mk_tuple(c, NULL, 0, loc);
        sval **items;
        int n;
        if (!py_iter(c, x, &items, &n, loc)) return sv_err(c, loc);
        sval **copy = TILE_NEW_ARRAY(c->arena, sval *, n ? n : 1);
        int m = 0;
        for (int i = 0; i < n; i++) {
            sval *v = items[f[0] == 'r' ? n - 1 - i : i];
            bool dup = false;
            for (int k = 0; f[0] == 's' && f[1] == 'e' && k < m && !dup; k++) {
                bool eq;
                if (py_equal(copy[k], v, &eq) && eq) dup = true;
            }
            if (!dup) copy[m++] = v;
        }
        if (!strcmp(f, "sorted")) {
            for (int i = 0; i < m; i++)
                if (!(copy[i]->kind == SV_STRING || sv_is_const(copy[i]))) { sema_err(c, loc, "sorted() needs numbers or strings known at compile time"); return sv_err(c, loc); }
            qsort(copy, (size_t)m, sizeof *copy, cmp_sval);
            for (int i = 0; i < a->nkw; i++) {
                bool t;
                if (a->kw[i].name && !strcmp(a->kw[i].name, "reverse") && py_truth(a->kwv[i], &t) && t)
                    for (int l = 0, r = m - 1; l < r; l++, r--) { sval *tmp = copy[l]; copy[l] = copy[r]; copy[r] = tmp; }
            }
        }
        return mk_tuple(c, copy, m, loc);
    }
    if (!strcmp(f, "dict")) {
        tile_vec keys = {0}, vals = {0};
        if (x && x->kind == SV_DICT)
            for (int i = 0; i < x->nitems; i++) { tile_vec_push(&keys, x->items[i]); tile_vec_push(&vals, x->vals[i]); }
        else if (x) {
            sval **items;
            int n;
            if (!py_iter(c, x, &items, &n, loc)) return sv_err(c, loc);
            for (int i = 0; i < n; i++) {
                if (items[i]->kind != SV_TUPLE || items[i]->nitems != 2) { sema_err(c, loc, "dict() needs (key, value) pairs"); return sv_err(c, loc); }
                tile_vec_push(&keys, items[i]->items[0]);
                tile_vec_push(&vals, items[i]->items[1]);
            }
        }
        for (int i = 0; i < a->nkw; i++) {
            if (!a->kw[i].name) continue;
            tile_vec_push(&keys, mk_string(c, a->kw[i].name, loc));
            tile_vec_push(&vals, a->kwv[i]);
        }
        return mk_dict(c, &keys, &vals, loc);
    }
    if (!strcmp(f, "any") || !strcmp(f, "all")) {
        sval **items;
        int n;
        if (!x || !py_iter(c, x, &items, &n, loc)) return sv_err(c, loc);
        bool want = f[1] == 'n'; /* any: looking for a true item */
        for (int i = 0; i < n; i++) {
            bool t;
            if (!py_truth(items[i], &t)) { sema_err(c, loc, "%s() needs values known at compile time", f); return sv_err(c, loc); }
            if (t == want) return sv_weak_bool(c, want, loc);
        }
        return sv_weak_bool(c, !want, loc);
    }
    if (!strcmp(f, "enumerate") || !strcmp(f, "zip")) {
        int nseq = f[0] == 'e' ? 1 : a->npos;
        if (nseq < 1) return mk_tuple(c, NULL, 0, loc);
        sval **seqs[8];
        int lens[8], n = MAX_ITEMS;
        if (nseq > 8) { sema_err(c, loc, "zip() of more than 8 sequences is not supported"); return sv_err(c, loc); }
        for (int i = 0; i < nseq; i++) {
            if (!py_iter(c, a->pos[i], &seqs[i], &lens[i], loc)) return sv_err(c, loc);
            if (lens[i] < n) n = lens[i];
        }
        int64_t start = 0;
        if (f[0] == 'e' && a->npos > 1 && !as_const_int(c, a->pos[1], &start, "enumerate start")) return sv_err(c, loc);
        sval **out = TILE_NEW_ARRAY(c->arena, sval *, n ? n : 1);
        for (int i = 0; i < n; i++) {
            sval *row[9];
            int k = 0;
            if (f[0] == 'e') row[k++] = sv_weak_int(c, start + i, loc);
            for (int s = 0; s < nseq; s++) row[k++] = seqs[s][i];
            out[i] = mk_tuple(c, row, k, loc);
        }
        return mk_tuple(c, out, n, loc);
    }
    if (!strcmp(f, "isinstance")) {
        sval *t = arg_or(a, 1);
        if (!x || !t) { sema_err(c, loc, "isinstance() takes a value and a type"); return sv_err(c, loc); }
        sval **ts = &t;
        int nt = 1;
        if (t->kind == SV_TUPLE) { ts = t->items; nt = t->nitems; }
        bool r = false;
        for (int i = 0; i < nt; i++) {
            const char *tn = ts[i]->kind == SV_BUILTIN ? ts[i]->str : ts[i]->kind == SV_OPAQUE && ts[i]->str ? ts[i]->str : "";
            const char *dot = strrchr(tn, '.');
            if (dot) tn = dot + 1;
            if (!strcmp(tn, "int")) r |= x->kind == SV_EXPR && !tile_dtype_is_float(x->e->dtype) && x->e->dtype != TILE_DT_BOOL;
            else if (!strcmp(tn, "float")) r |= x->kind == SV_EXPR && tile_dtype_is_float(x->e->dtype);
            else if (!strcmp(tn, "bool")) r |= x->kind == SV_EXPR && x->e->dtype == TILE_DT_BOOL;
            else if (!strcmp(tn, "str")) r |= x->kind == SV_STRING;
            else if (!strcmp(tn, "tuple") || !strcmp(tn, "list") || !strcmp(tn, "set")) r |= x->kind == SV_TUPLE;
            else if (!strcmp(tn, "dict")) r |= x->kind == SV_DICT;
            else if (!strcmp(tn, "Buffer") || !strcmp(tn, "Tensor")) r |= x->kind == SV_BUFFER;
            else if (!strcmp(tn, "PrimExpr") || !strcmp(tn, "Var")) r |= x->kind == SV_EXPR;
            else if (!strcmp(tn, "dtype") || !strcmp(tn, "DataType")) r |= x->kind == SV_DTYPE;
        }
        return sv_weak_bool(c, r, loc);
    }
    if (!strcmp(f, "str") || !strcmp(f, "repr")) {
        tile_strbuf sb = {0};
        if (x) format_value(c, &sb, x);
        const char *r = tile_arena_strdup(c->arena, sb.data ? sb.data : "");
        tile_sb_free(&sb);
        return mk_string(c, r, loc);
    }
    if (!strcmp(f, "callable")) return sv_weak_bool(c, x && (x->kind == SV_FUNC || x->kind == SV_BUILTIN), loc);
    if (!strcmp(f, "divmod")) {
        sval *y = arg_or(a, 1);
        if (!x || !y) { sema_err(c, loc, "divmod() takes two arguments"); return sv_err(c, loc); }
        sval *pair[2] = {binary_op(c, AST_OP_FLOORDIV, x, y, loc), binary_op(c, AST_OP_MOD, x, y, loc)};
        return mk_tuple(c, pair, 2, loc);
    }
    if (!strcmp(f, "hasattr") || !strcmp(f, "getattr")) {
        sval *n = arg_or(a, 1);
        if (!x || !n || n->kind != SV_STRING) { sema_err(c, loc, "%s() takes an object and an attribute name", f); return sv_err(c, loc); }
        if (f[0] == 'h') return sv_weak_bool(c, x->kind == SV_MODULE || x->kind == SV_OPAQUE, loc);
        sval *r = sema_getattr(c, x, n->str, loc);
        if (r) return r;
        if (arg_or(a, 2)) return a->pos[2];
        sema_err(c, loc, "getattr() on %s is not supported yet", sv_describe(x));
        return sv_err(c, loc);
    }
    sema_err(c, loc, "'%s' cannot be called here", f);
    return sv_err(c, loc);
}

/* ---------- host tensors of test drivers ----------
 * The drivers that call a kernel factory make their inputs with torch
 * (`q = torch.randn((B, S, H, D), dtype=torch.bfloat16, device="cuda")`) and often derive the
 * factory's parameters from them (`batch, seq_len, heads, dim = q.shape`). At compile time a
 * tensor made by a torch constructor is its shape and dtype only: `.shape`, `.size()`,
 * `.dim()`, `.ndim`, `.dtype`, `.numel()` answer, and the methods that return the tensor
 * itself or a copy of it (`.to(...)`, `.cuda()`, `.contiguous()`, `.requires_grad_()`, ...)
 * keep the shape. Nothing is allocated. */
static bool is_host_tensor(const sval *v) { return v->kind == SV_OPAQUE && v->str && !strcmp(v->str, "@host-tensor"); }

static sval *mk_host_tensor(sema_ctx *c, sval *shape, tile_dtype dt, tile_loc loc) {
    sval *t = sv_new(c, SV_OPAQUE, loc);
    t->str = "@host-tensor";
    t->self = shape;
    t->dt = dt;
    return t;
}

static bool const_dims(sval **items, int n) {
    for (int i = 0; i < n; i++)
        if (!sv_is_const(items[i]) || tile_dtype_is_float(items[i]->e->dtype) || items[i]->e->ival < 0) return false;
    return true;
}

static tile_dtype kw_dtype(call_args *a, tile_dtype dflt) {
    for (int i = 0; i < a->nkw; i++)
        if (!strcmp(a->kw[i].name, "dtype") && a->kwv[i]->kind == SV_DTYPE) return a->kwv[i]->dt;
    return dflt;
}

/* `torch.NAME(...)`: a host tensor, or NULL when NAME is not a constructor this models or its
 * shape is not known at compile time. */
sval *py_torch_call(sema_ctx *c, const char *path, call_args *a, tile_loc loc) {
    if (strncmp(path, "torch.", 6)) return NULL;
    const char *f = path + 6;
    static const char *const by_shape[] = {"randn", "rand", "zeros", "ones", "empty", "full", NULL};
    static const char *const like[] = {"randn_like", "rand_like", "zeros_like", "ones_like", "empty_like", "full_like", NULL};
    for (int i = 0; like[i]; i++)
        if (!strcmp(f, like[i]) && a->npos >= 1 && is_host_tensor(a->pos[0]))
            return mk_host_tensor(c, a->pos[0]->self, kw_dtype(a, a->pos[0]->dt), loc);
    sval *shape = NULL;
    tile_dtype dt = TILE_DT_F32;
    for (int i = 0; by_shape[i] && !shape; i++) {
        if (strcmp(f, by_shape[i])) continue;
        int n = !strcmp(f, "full") ? (a->npos >= 1 ? 1 : 0) : a->npos;
        for (int k = 0; k < a->nkw; k++)
            if (!strcmp(a->kw[k].name, "size")) { shape = a->kwv[k]; n = 0; }
        if (!shape && n == 1 && a->pos[0]->kind == SV_TUPLE) shape = a->pos[0];
        else if (!shape && n >= 1) shape = mk_tuple(c, a->pos, n, loc);
        if (!strcmp(f, "full") && a->npos >= 2 && a->pos[1]->kind == SV_EXPR && a->pos[1]->e->kind == IR_E_CONST &&
            !tile_dtype_is_float(a->pos[1]->e->dtype))
            dt = TILE_DT_I64;
    }
    if (!shape && !strcmp(f, "randint")) {
        /* randint(high, size) / randint(low, high, size) / size=... */
        for (int k = 0; k < a->nkw; k++)
            if (!strcmp(a->kw[k].name, "size")) shape = a->kwv[k];
        if (!shape && a->npos >= 2 && a->pos[a->npos - 1]->kind == SV_TUPLE) shape = a->pos[a->npos - 1];
        dt = TILE_DT_I64;
    }
    if (!shape && !strcmp(f, "arange") && a->npos >= 1 && a->npos <= 3) {
        int64_t r[3] = {0, 0, 1};
        if (!const_dims(a->pos, a->npos)) return NULL;
        if (a->npos == 1) r[1] = a->pos[0]->e->ival;
        else for (int i = 0; i < a->npos; i++) r[i] = a->pos[i]->e->ival;
        if (r[2] <= 0) return NULL;
        sval *len = sv_weak_int(c, r[1] > r[0] ? (r[1] - r[0] + r[2] - 1) / r[2] : 0, loc);
        shape = mk_tuple(c, &len, 1, loc);
        dt = TILE_DT_I64;
    }
    if (!shape || shape->kind != SV_TUPLE || !const_dims(shape->items, shape->nitems)) return NULL;
    return mk_host_tensor(c, shape, kw_dtype(a, dt), loc);
}

static const char *const host_tensor_m[] = {"size", "dim", "numel", "is_contiguous", "to", "cuda", "cpu", "contiguous",
                                            "requires_grad_", "half", "float", "bfloat16", "clone", "detach", "uniform_",
                                            "normal_", "zero_", "fill_", NULL};

bool py_host_tensor_has(const sval *self, const char *name) {
    if (!is_host_tensor(self)) return false;
    for (int i = 0; host_tensor_m[i]; i++)
        if (!strcmp(host_tensor_m[i], name)) return true;
    return false;
}

/* Attributes of a host tensor: NULL when it has no such attribute. */
sval *py_host_tensor_attr(sema_ctx *c, sval *self, const char *a, tile_loc loc) {
    if (!is_host_tensor(self)) return NULL;
    if (!strcmp(a, "shape")) return self->self;
    if (!strcmp(a, "ndim")) return sv_weak_int(c, self->self->nitems, loc);
    if (!strcmp(a, "dtype")) {
        sval *v = sv_new(c, SV_DTYPE, loc);
        v->dt = self->dt;
        return v;
    }
    if ((!strcmp(a, "T") || !strcmp(a, "mT")) && self->self->nitems >= 2) {
        int n = self->self->nitems;
        sval **it = TILE_NEW_ARRAY(c->arena, sval *, n);
        for (int i = 0; i < n; i++) it[i] = self->self->items[i];
        sval *t = it[n - 1];
        it[n - 1] = it[n - 2];
        it[n - 2] = t;
        return mk_host_tensor(c, mk_tuple(c, it, n, loc), self->dt, loc);
    }
    return NULL;
}

static sval *host_tensor_method(sema_ctx *c, sval *self, const char *m, call_args *a, tile_loc loc) {
    sval *shape = self->self;
    if (!strcmp(m, "size")) {
        if (a->npos == 0) return shape;
        int64_t i;
        if (!as_const_int(c, a->pos[0], &i, "size() dimension")) return sv_err(c, loc);
        if (i < 0) i += shape->nitems;
        if (i < 0 || i >= shape->nitems) { sema_err(c, loc, "size(): dimension out of range for a tensor of rank %d", shape->nitems); return sv_err(c, loc); }
        return shape->items[i];
    }
    if (!strcmp(m, "dim")) return sv_weak_int(c, shape->nitems, loc);
    if (!strcmp(m, "numel")) {
        int64_t n = 1;
        for (int i = 0; i < shape->nitems; i++) n *= shape->items[i]->e->ival;
        return sv_weak_int(c, n, loc);
    }
    if (!strcmp(m, "is_contiguous")) return sv_weak_bool(c, true, loc);
    tile_dtype dt = self->dt;
    if (!strcmp(m, "half")) dt = TILE_DT_F16;
    else if (!strcmp(m, "float")) dt = TILE_DT_F32;
    else if (!strcmp(m, "bfloat16")) dt = TILE_DT_BF16;
    else if (!strcmp(m, "to")) {
        dt = kw_dtype(a, dt);
        for (int i = 0; i < a->npos; i++)
            if (a->pos[i]->kind == SV_DTYPE) dt = a->pos[i]->dt;
    }
    return mk_host_tensor(c, shape, dt, loc);
}

/* Arithmetic with a host tensor (`torch.rand(m, k) * 2 - 1`, `a @ b`): a host tensor of the
 * broadcast shape; NULL when neither operand is one. */
sval *py_host_tensor_binary(sema_ctx *c, ast_op op, sval *a, sval *b, tile_loc loc) {
    bool ta = is_host_tensor(a), tb = is_host_tensor(b);
    if (!ta && !tb) return NULL;
    if (op == AST_OP_MATMUL && ta && tb && a->self->nitems >= 2 && b->self->nitems >= 2) {
        int n = a->self->nitems;
        sval **it = TILE_NEW_ARRAY(c->arena, sval *, n);
        for (int i = 0; i < n - 1; i++) it[i] = a->self->items[i];
        it[n - 1] = b->self->items[b->self->nitems - 1];
        return mk_host_tensor(c, mk_tuple(c, it, n, loc), a->dt, loc);
    }
    if (op == AST_OP_LT || op == AST_OP_LE || op == AST_OP_GT || op == AST_OP_GE || op == AST_OP_EQ || op == AST_OP_NE ||
        op == AST_OP_IS || op == AST_OP_IS_NOT)
        return NULL;
    sval *big = !tb || (ta && a->self->nitems >= b->self->nitems) ? a : b;
    return mk_host_tensor(c, big->self, big->dt, loc);
}

/* itertools.product(*iterables, repeat=1) over compile-time sequences: a list of tuples, the
 * last iterable varying fastest. */
sval *py_product(sema_ctx *c, call_args *a, tile_loc loc) {
    int64_t repeat = 1;
    for (int i = 0; i < a->nkw; i++)
        if (!strcmp(a->kw[i].name, "repeat") && !as_const_int(c, a->kwv[i], &repeat, "repeat")) return sv_err(c, loc);
    if (repeat < 0 || a->npos * repeat > 32) { sema_err(c, loc, "itertools.product: too many iterables"); return sv_err(c, loc); }
    int n = (int)(a->npos * repeat);
    sval **seq[32];
    int len[32];
    int64_t total = 1;
    for (int i = 0; i < n; i++) {
        if (!py_iter(c, a->pos[i % a->npos], &seq[i], &len[i], loc)) return sv_err(c, loc);
        total *= len[i];
        if (total > MAX_ITEMS) { sema_err(c, loc, "itertools.product makes more than %d items at compile time", MAX_ITEMS); return sv_err(c, loc); }
    }
    sval **out = TILE_NEW_ARRAY(c->arena, sval *, total ? total : 1);
    int idx[32] = {0};
    for (int64_t k = 0; k < total; k++) {
        sval **it = TILE_NEW_ARRAY(c->arena, sval *, n ? n : 1);
        for (int i = 0; i < n; i++) it[i] = seq[i][idx[i]];
        out[k] = mk_tuple(c, it, n, loc);
        for (int i = n - 1; i >= 0; i--) {
            if (++idx[i] < len[i]) break;
            idx[i] = 0;
        }
    }
    return mk_tuple(c, out, (int)total, loc);
}

/* Device queries in module and driver code (`torch.cuda.get_device_capability()`,
 * `get_device_name()`,
 * `driver.get_num_sms()`): Tile compiles without asking a device, so they answer for the
 * reference GPU the programs are written for, an sm_90 part with 132 SMs (H100 / H200 SXM),
 * the same on every target. NULL when path is not such a query. */
sval *py_device_query(sema_ctx *c, const char *path, call_args *a, tile_loc loc) {
    (void)a;
    const char *last = strrchr(path, '.');
    last = last ? last + 1 : path;
    bool torch_cuda = !strncmp(path, "torch.cuda.", 11);
    if (torch_cuda && !strcmp(last, "get_device_capability")) {
        sval *mm[2] = {sv_weak_int(c, 9, loc), sv_weak_int(c, 0, loc)};
        return mk_tuple(c, mm, 2, loc);
    }
    if (torch_cuda && !strcmp(last, "is_available")) return sv_weak_bool(c, true, loc);
    if (torch_cuda && !strcmp(last, "device_count")) return sv_weak_int(c, 1, loc);
    if (torch_cuda && !strcmp(last, "current_device")) return sv_weak_int(c, 0, loc);
    if (torch_cuda && !strcmp(last, "get_device_name")) {
        sval *n = sv_new(c, SV_STRING, loc);
        n->str = "NVIDIA H200";
        return n;
    }
    if (!strcmp(last, "get_num_sms") && strstr(path, "driver")) return sv_weak_int(c, 132, loc);
    if (torch_cuda && !strcmp(last, "get_device_properties")) {
        /* an object with the attributes drivers read: major, minor, multi_processor_count, name */
        static const char *const keys[] = {"major", "minor", "multi_processor_count", "name", NULL};
        sval *ns = sv_new(c, SV_DICT, loc);
        ns->str = "@namespace";
        ns->nitems = 4;
        ns->items = TILE_NEW_ARRAY(c->arena, sval *, 4);
        ns->vals = TILE_NEW_ARRAY(c->arena, sval *, 4);
        for (int i = 0; keys[i]; i++) ns->items[i] = mk_string(c, keys[i], loc);
        ns->vals[0] = sv_weak_int(c, 9, loc);
        ns->vals[1] = sv_weak_int(c, 0, loc);
        ns->vals[2] = sv_weak_int(c, 132, loc);
        ns->vals[3] = mk_string(c, "NVIDIA H200", loc);
        return ns;
    }
    /* the CUDA toolkit Tile compiles with (NVRTC 13.0), as tilelang.contrib.nvcc reports it */
    if (!strcmp(last, "get_cuda_version") && strstr(path, "nvcc")) {
        sval *v[2] = {sv_weak_int(c, 13, loc), sv_weak_int(c, 0, loc)};
        return mk_tuple(c, v, 2, loc);
    }
    /* TileLang's kernel cache switches: Tile's cache is its own (TILE_CACHE_DIR) */
    if ((!strcmp(last, "disable_cache") || !strcmp(last, "enable_cache")) && !strncmp(path, "tilelang", 8)) return sv_none(c, loc);
    return NULL;
}
