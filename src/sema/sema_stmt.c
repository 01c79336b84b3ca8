/* sema_stmt.c — statements: assignments, loops, kernels, allocation and tile operations. */
#include "sema_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int current_par(sema_ctx *c) { return c->par_depth ? c->par_ids[c->par_depth - 1] : 0; }

static ir_stmt **one_body(sema_ctx *c, ir_stmt *s) {
    ir_stmt **b = TILE_NEW_ARRAY(&c->mod->arena, ir_stmt *, 2);
    b[0] = s;
    return b;
}

/* A name that must not be used any more (a loop variable after its loop). */
static sval *dead_value(sema_ctx *c, tile_loc loc) {
    sval *v = sv_new(c, SV_OPAQUE, loc);
    v->str = "@dead";
    return v;
}

/* Is e free of loads and mutable variables (so an alias to it means the same everywhere)? */
static bool is_pure(const ir_expr *e) {
    if (!e) return true;
    if (e->kind == IR_E_LOAD) return false;
    if (e->kind == IR_E_VAR && e->var->kind == IR_VAR_LOCAL) return false;
    for (int i = 0; i < e->nargs; i++)
        if (!is_pure(e->args[i])) return false;
    return true;
}

/* ---------- buffers ---------- */
ir_buffer *declare_buffer(sema_ctx *c, const char *name, tile_dtype dt, ir_scope scope, sval *shape, tile_loc loc) {
    sval *one[1] = {shape};
    sval **items = shape->kind == SV_TUPLE ? shape->items : one;
    int n = shape->kind == SV_TUPLE ? shape->nitems : 1;
    if (n > 8) { sema_err(c, loc, "buffers have at most 8 dimensions, '%s' has %d", name, n); return NULL; }
    ir_expr **dims = TILE_NEW_ARRAY(&c->mod->arena, ir_expr *, n ? n : 1);
    for (int d = 0; d < n; d++) {
        ir_expr *x = as_int_expr(c, items[d], "a dimension");
        if (!x) return NULL;
        int64_t big;
        if (ir_const_int_value(x, &big) && (big > INT32_MAX || big < INT32_MIN)) {
            sema_err(c, items[d]->loc, "dimension %d of '%s' is %lld, which does not fit in int32 (sizes and indices are int32)", d, name, (long long)big);
            return NULL;
        }
        x = cast_to(c, x, TILE_DT_I32);
        int64_t k;
        if (ir_const_int_value(x, &k) && k <= 0) {
            sema_err(c, items[d]->loc, "dimension %d of '%s' is %lld; dimensions must be positive", d, name, (long long)k);
            return NULL;
        }
        if (!is_pure(x)) { sema_err(c, items[d]->loc, "a dimension of '%s' may not depend on tensor contents", name); return NULL; }
        dims[d] = x;
    }
    return ir_buffer_new(c->mod, c->fn, name, dt, scope, n, dims, IR_BUF_TEMP, loc);
}

/* ---------- assignment ---------- */
tile_dtype sema_var_narrow(sema_ctx *c, const ir_var *v) {
    int k = v && v->id < c->nvar_narrow ? c->var_narrow[v->id] : 0;
    return k > 0 ? (tile_dtype)(k - 1) : TILE_DT_INVALID;
}

static void note_narrow(sema_ctx *c, ir_var *v, const ir_expr *x) {
    if (v->id >= c->nvar_narrow) {
        int n = v->id + 64;
        c->var_narrow = tile_xrealloc(c->var_narrow, sizeof(int) * (size_t)n);
        for (int i = c->nvar_narrow; i < n; i++) c->var_narrow[i] = 0;
        c->nvar_narrow = n;
    }
    int k = x && x->kind == IR_E_CAST && x->dtype == TILE_DT_F32 && (x->args[0]->dtype == TILE_DT_F16 || x->args[0]->dtype == TILE_DT_BF16)
                ? (int)x->args[0]->dtype + 1 : -1;
    int *slot = &c->var_narrow[v->id];
    *slot = *slot == 0 ? k : *slot == k ? k : -1;
}

static void emit_assign(sema_ctx *c, ir_var *v, ir_expr *x, tile_loc loc) {
    note_narrow(c, v, x);
    ir_stmt *s = ir_stmt_new(c->mod, IR_S_ASSIGN, loc);
    s->var = v;
    s->value = x;
    emit(c, s);
}

static ir_expr *value_for_var(sema_ctx *c, sval *val, tile_dtype dt, const char *name, tile_loc loc) {
    ir_expr *x = materialize(c, val);
    if (!x) return NULL;
    if (tile_dtype_is_float(x->dtype) && tile_dtype_is_int(dt)) {
        sema_err(c, loc, "assigning a %s value to '%s', which holds %s since its first assignment, would truncate it; initialise it with a float (e.g. 0.0) or cast explicitly",
                 tile_dtype_name(x->dtype), name, tile_dtype_name(dt));
        return NULL;
    }
    return cast_to(c, x, dt);
}

static void assign_name(sema_ctx *c, sema_env *env, const char *name, sval *val, tile_dtype declared, tile_loc loc) {
    if (!val || val->kind == SV_NONE) {
        if (val) env_bind(c, env, name, val, 0);
        return;
    }
    /* existing mutable variable of this scope */
    sema_binding *b = NULL;
    for (sema_binding *x = env->head; x; x = x->next)
        if (!strcmp(x->name, name)) { b = x; break; }
    if (b && b->val->kind == SV_EXPR && b->par_id && !par_active(c, b->par_id)) {
        /* assigned in a T.Parallel loop that has ended: each iteration's variable died with
         * it, so this assignment makes a new one (TileLang's scoping of loop bodies) */
        b = NULL;
    }
    if (b && b->val->kind == SV_EXPR && b->val->e->kind == IR_E_VAR && b->val->e->var->kind == IR_VAR_LOCAL) {
        ir_var *v = b->val->e->var;
        if (b->par_id != current_par(c)) {
            sema_err(c, loc, "assigning to '%s' inside a T.Parallel loop is a race between iterations (it was first assigned outside the loop); use a buffer", name);
            return;
        }
        ir_expr *x = value_for_var(c, val, v->dtype, name, loc);
        if (x) emit_assign(c, v, x, loc);
        return;
    }
    if (val->kind == SV_BUFFER && val->buf->name && !strncmp(val->buf->name, "%alloc", 6)) val->buf->name = name;
    if (val->kind == SV_EXPR && val->fresh_var) {
        /* x = T.alloc_var(dtype): x is that mutable variable */
        val->e->var->name = name;
        sval *v = sv_expr(c, val->e);
        env_bind(c, env, name, v, current_par(c));
        return;
    }
    /* an eager kernel's code outside T.Kernel is host Python: it runs at compile time */
    bool compile_time = c->stmts == NULL || (c->eager && !c->in_kernel);
    bool runtime_value = val->kind == SV_EXPR || (val->kind == SV_ACCESS && !val->acc->any_slice);
    if (!runtime_value) { env_bind(c, env, name, val, current_par(c)); return; }
    ir_expr *x = val->kind == SV_EXPR ? val->e : NULL;
    int count = env_assign_count(env, name);
    if (declared == TILE_DT_INVALID && x && (compile_time || (count <= 1 && is_pure(x)))) {
        env_bind(c, env, name, val, current_par(c)); /* an alias: constant or pure index expression */
        return;
    }
    if (compile_time) {
        sema_err(c, loc, "'%s' would be a run-time variable, but this code runs at compile time", name);
        return;
    }
    x = materialize(c, val);
    if (!x) return;
    tile_dtype dt = declared != TILE_DT_INVALID ? declared : promote_arith(x->dtype);
    ir_var *v = ir_var_new(c->mod, c->fn, name, IR_VAR_LOCAL, dt, loc);
    x = value_for_var(c, val, dt, name, loc);
    if (!x) return;
    emit_assign(c, v, x, loc);
    env_bind(c, env, name, sv_expr(c, ir_var_ref(c->mod, v, loc)), current_par(c));
}

static void store_access(sema_ctx *c, sv_access *acc, sval *val, tile_loc loc) {
    if (acc->any_slice) {
        sema_err(c, loc, "assigning to a slice of '%s' is not supported; use T.fill or T.copy, or index every dimension", acc->buf->name);
        return;
    }
    ir_expr *x;
    if (val->kind == SV_EXPR && val->weak) {
        tile_dtype t = promote_arith(acc->buf->dtype);
        if (tile_dtype_is_float(val->e->dtype) && !tile_dtype_is_float(t)) {
            sema_err(c, loc, "storing the float %g into integer buffer '%s' would truncate it; cast explicitly", val->e->fval, acc->buf->name);
            return;
        }
        x = cast_to(c, val->e, t);
    } else x = materialize(c, val);
    if (!x) return;
    for (int r = 0; r < c->nreducers; r++) {
        if (c->reducers[r] != acc->buf || !c->par_depth) continue;
        /* r[i] = r[i] op v on a T.alloc_reducer inside T.Parallel: iterations combine
         * through an atomic update (the reducer's contract) instead of racing */
        ir_binop want = c->reducer_ops[r] == IR_ATOMIC_ADD ? IR_B_ADD : c->reducer_ops[r] == IR_ATOMIC_MAX ? IR_B_MAX : IR_B_MIN;
        ir_expr *y = x;
        while (y->kind == IR_E_CAST) y = y->args[0];
        if (y->kind == IR_E_BINARY && y->op == (int)want) {
            for (int side = 0; side < 2; side++) {
                ir_expr *l = y->args[side];
                while (l->kind == IR_E_CAST) l = l->args[0];
                bool same = l->kind == IR_E_LOAD && l->buf == acc->buf;
                for (int d = 0; same && d < acc->buf->rank; d++) same = ir_expr_equal(l->args[d], acc->start[d]);
                if (!same) continue;
                ir_stmt *s = ir_stmt_new(c->mod, IR_S_ATOMIC, loc);
                s->buf = acc->buf;
                s->idx = acc->start;
                s->value = coerce_store(c, cast_to(c, y->args[1 - side], promote_arith(acc->buf->dtype)), acc->buf->dtype, loc);
                s->atomic_op = c->reducer_ops[r];
                emit(c, s);
                return;
            }
        }
    }
    ir_stmt *s = ir_stmt_new(c->mod, IR_S_STORE, loc);
    s->buf = acc->buf;
    s->idx = acc->start;
    s->value = coerce_store(c, x, acc->buf->dtype, loc);
    emit(c, s);
}

static void assign_target(sema_ctx *c, sema_env *env, const ast_expr *t, sval *val, tile_loc loc) {
    switch (t->kind) {
    case AST_E_NAME: assign_name(c, env, t->name, val, TILE_DT_INVALID, loc); return;
    case AST_E_TUPLE:
    case AST_E_LIST:
        if (val->kind != SV_TUPLE || val->nitems != t->nitems) {
            sema_err(c, loc, "cannot unpack %s into %d names", val->kind == SV_TUPLE ? tile_arena_printf(c->arena, "%d values", val->nitems) : sv_describe(val), t->nitems);
            return;
        }
        for (int i = 0; i < t->nitems; i++) assign_target(c, env, t->items[i], val->items[i], loc);
        return;
    case AST_E_SUBSCRIPT: {
        sval *acc = lower_expr(c, env, t);
        if (acc->kind == SV_EXPR && acc->e->kind == IR_E_VAR && acc->e->var->kind == IR_VAR_LOCAL && t->value->kind == AST_E_NAME) {
            assign_name(c, env, t->value->name, val, TILE_DT_INVALID, loc); /* v[0] = x on a T.alloc_var */
            return;
        }
        if (acc->kind == SV_ACCESS) store_access(c, acc->acc, val, loc);
        else if (acc->kind != SV_NONE) sema_err(c, t->loc, "cannot assign to %s", sv_describe(acc));
        return;
    }
    default: sema_err(c, t->loc, "cannot assign to this expression"); return;
    }
}

static void lower_augassign(sema_ctx *c, sema_env *env, const ast_stmt *s) {
    const ast_expr *t = s->targets[0];
    sval *rhs = lower_expr(c, env, s->value);
    if (t->kind == AST_E_NAME) {
        sval *cur = lower_expr(c, env, t);
        if (cur->kind == SV_NONE) return;
        assign_name(c, env, t->name, binary_op(c, s->op, cur, rhs, s->loc), TILE_DT_INVALID, s->loc);
        return;
    }
    if (t->kind == AST_E_SUBSCRIPT) {
        sval *acc = lower_expr(c, env, t);
        if (acc->kind != SV_ACCESS) { if (acc->kind != SV_NONE) sema_err(c, t->loc, "cannot assign to %s", sv_describe(acc)); return; }
        store_access(c, acc->acc, binary_op(c, s->op, acc, rhs, s->loc), s->loc);
        return;
    }
    sema_err(c, t->loc, "cannot assign to this expression");
}

/* ---------- loops ---------- */
bool lower_range_iter(sema_ctx *c, sema_env *env, const ast_expr *iter, ir_expr **lo, ir_expr **extent, ir_expr **step) {
    *step = NULL;
    if (iter->kind != AST_E_CALL) { sema_err(c, iter->loc, "expected range(...) here"); return false; }
    sval *f = lower_expr(c, env, iter->value);
    if (f->kind != SV_BUILTIN || (strcmp(f->str, "range") && strcmp(f->str, "serial"))) {
        sema_err(c, iter->loc, "expected range(...) or T.serial(...) here");
        return false;
    }
    int n = iter->nitems;
    if (n < 1 || n > 3) { sema_err(c, iter->loc, "range() takes 1 to 3 arguments, got %d", n); return false; }
    ir_expr *a[3];
    for (int i = 0; i < n; i++) {
        a[i] = as_int_expr(c, lower_expr(c, env, iter->items[i]), "a range bound");
        if (!a[i]) return false;
        a[i] = cast_to(c, a[i], TILE_DT_I32);
    }
    if (n == 1) { *lo = ir_const_int(c->mod, TILE_DT_I32, 0, iter->loc); *extent = a[0]; return true; }
    *lo = a[0];
    if (n == 2) { *extent = int_binary(c, IR_B_SUB, a[1], a[0], iter->loc); return true; }
    int64_t st;
    if (!ir_const_int_value(a[2], &st) || st == 0) { sema_err(c, iter->items[2]->loc, "the step of range() must be a non-zero compile-time constant"); return false; }
    ir_expr *diff = st > 0 ? int_binary(c, IR_B_SUB, a[1], a[0], iter->loc) : int_binary(c, IR_B_SUB, a[0], a[1], iter->loc);
    *extent = ceildiv_expr(c, diff, ir_const_int(c->mod, TILE_DT_I32, st > 0 ? st : -st, iter->loc), iter->loc);
    *step = a[2];
    return true;
}

static void bind_loop_var(sema_ctx *c, sema_env *env, const char *name, sval *v, sema_binding **saved_b, sval **saved_v) {
    *saved_b = NULL;
    *saved_v = NULL;
    for (sema_binding *b = env->head; b; b = b->next)
        if (!strcmp(b->name, name)) { *saved_b = b; *saved_v = b->val; break; }
    env_bind(c, env, name, v, current_par(c));
}

static void unbind_loop_var(sema_ctx *c, sema_env *env, const char *name, sema_binding *saved_b, sval *saved_v, tile_loc loc) {
    if (saved_b && saved_v && !(saved_v->kind == SV_EXPR && saved_v->e->kind == IR_E_VAR && saved_v->e->var->kind == IR_VAR_LOOP))
        env_bind(c, env, name, saved_v, saved_b->par_id);
    else env_bind(c, env, name, dead_value(c, loc), 0);
}

static ir_stmt *lower_body(sema_ctx *c, sema_env *env, const ast_block *b, tile_loc loc) {
    tile_vec body = {0};
    tile_vec *saved = c->stmts;
    c->stmts = &body;
    lower_block(c, env, b);
    c->stmts = saved;
    ir_stmt *s = ir_seq(c->mod, (ir_stmt **)body.items, body.len, loc);
    tile_vec_free(&body);
    return s;
}

static void lower_for(sema_ctx *c, sema_env *env, const ast_stmt *s) {
    const ast_expr *t = s->targets[0];
    const ast_expr *it = s->iter;
    if (s->orelse.len) { sema_err(c, s->loc, "for ... else is not supported"); return; }
    /* compile-time iteration over a tuple or list: unrolled */
    if (it->kind != AST_E_CALL) {
        sval *seq = lower_expr(c, env, it);
        if (seq->kind != SV_TUPLE) { if (seq->kind != SV_NONE) sema_err(c, it->loc, "cannot iterate over %s; use range(...), T.serial, T.Parallel or T.Pipelined", sv_describe(seq)); return; }
        for (int i = 0; i < seq->nitems; i++) {
            assign_target(c, env, t, seq->items[i], s->loc);
            lower_block(c, env, &s->body);
        }
        return;
    }
    sval *f = lower_expr(c, env, it->value);
    static const char *const loop_fns[] = {"range", "serial", "Parallel", "parallel", "Pipelined", "unroll", "vectorized", NULL};
    bool loop_fn = false;
    for (int i = 0; f->kind == SV_BUILTIN && loop_fns[i]; i++) loop_fn |= !strcmp(f->str, loop_fns[i]);
    if (!loop_fn || (!c->stmts && !strcmp(f->str, "range"))) {
        /* a call that makes a sequence at compile time (enumerate, zip, itertools.product, a
         * helper returning a list, range in compile-time code): unrolled */
        if (f->kind == SV_NONE) return;
        sval *seq = call_value(c, env, f, it);
        if (seq->kind != SV_TUPLE) {
            if (seq->kind != SV_NONE) sema_err(c, it->loc, "cannot iterate over a call of %s; use range(...), T.serial, T.Parallel or T.Pipelined", sv_describe(f));
            return;
        }
        for (int i = 0; i < seq->nitems; i++) {
            assign_target(c, env, t, seq->items[i], s->loc);
            lower_block(c, env, &s->body);
        }
        return;
    }
    if (!c->stmts) { sema_err(c, s->loc, "loops are run-time code, which is not allowed here"); return; }
    const char *fn = f->str;
    ir_loop_kind kind;
    if (!strcmp(fn, "range") || !strcmp(fn, "serial")) kind = IR_LOOP_SERIAL;
    else if (!strcmp(fn, "Parallel") || !strcmp(fn, "parallel")) kind = IR_LOOP_PARALLEL;
    else if (!strcmp(fn, "Pipelined")) kind = IR_LOOP_PIPELINED;
    else if (!strcmp(fn, "unroll")) kind = IR_LOOP_UNROLLED;
    else if (!strcmp(fn, "vectorized")) kind = IR_LOOP_VECTORIZED;
    else { sema_err(c, it->loc, "cannot iterate over %s(...); use range(...), T.serial, T.Parallel or T.Pipelined", fn); return; }

    int ndims = 1;
    ir_expr *lo[8], *ext[8], *step = NULL;
    int stages = 0;
    if (kind == IR_LOOP_SERIAL || kind == IR_LOOP_UNROLLED || kind == IR_LOOP_VECTORIZED) {
        if (kind != IR_LOOP_SERIAL) {
            /* T.unroll(n) / T.vectorized(n): same arguments as range */
            ast_expr fake = *it;
            ast_expr callee = {0};
            callee.kind = AST_E_NAME;
            callee.name = "range";
            callee.loc = it->loc;
            fake.value = &callee;
            if (!lower_range_iter(c, env, &fake, &lo[0], &ext[0], &step)) return;
        } else if (!lower_range_iter(c, env, it, &lo[0], &ext[0], &step)) return;
    } else {
        /* T.Parallel(e0, e1, ...) / T.Pipelined(n, num_stages=k) or (start, stop, num_stages=k) */
        int n = it->nitems;
        /* T.parallel(start, stop=None) is TIR's parallel loop: one dimension, like range */
        bool ranged = kind == IR_LOOP_PIPELINED || fn[0] == 'p';
        if (n < 1 || n > 8 || (ranged && n > 2)) { sema_err(c, it->loc, "wrong number of arguments to T.%s", fn); return; }
        if (kind == IR_LOOP_PARALLEL && !ranged) ndims = n;
        for (int i = 0; i < n; i++) {
            ir_expr *x = as_int_expr(c, lower_expr(c, env, it->items[i]), "a loop extent");
            if (!x) return;
            x = cast_to(c, x, TILE_DT_I32);
            if (ranged && n == 2) {
                if (i == 0) lo[0] = x;
                else ext[0] = int_binary(c, IR_B_SUB, x, lo[0], it->loc);
            } else {
                lo[i] = ir_const_int(c->mod, TILE_DT_I32, 0, it->loc);
                ext[i] = x;
            }
        }
        for (int k = 0; k < it->nkwargs; k++) {
            if (!it->kwargs[k].name) { sema_err(c, it->kwargs[k].loc, "T.%s does not take a '**' argument", fn); continue; }
            if (!strcmp(it->kwargs[k].name, "num_stages")) {
                int64_t ns;
                if (as_const_int(c, lower_expr(c, env, it->kwargs[k].value), &ns, "num_stages")) {
                    if (ns < 0 || ns > 16) sema_err(c, it->kwargs[k].loc, "num_stages must be between 0 and 16, got %lld", (long long)ns);
                    stages = (int)ns;
                }
            } else if (kind == IR_LOOP_PIPELINED && strcmp(it->kwargs[k].name, "order") && strcmp(it->kwargs[k].name, "stage") &&
                       strcmp(it->kwargs[k].name, "group") && strcmp(it->kwargs[k].name, "sync")) {
                tile_warning_at(c->diags, it->kwargs[k].loc, "unknown T.Pipelined argument '%s' is ignored", it->kwargs[k].name);
            } else if (kind == IR_LOOP_PARALLEL && strcmp(it->kwargs[k].name, "coalesced_width") && strcmp(it->kwargs[k].name, "annotations") && strcmp(it->kwargs[k].name, "loop_layout") &&
                       strcmp(it->kwargs[k].name, "prefer_async")) {
                tile_warning_at(c->diags, it->kwargs[k].loc, "unknown T.Parallel argument '%s' is ignored", it->kwargs[k].name);
            }
        }
        /* TileLang's default num_stages=0 means no software pipelining: a serial loop */
        if (kind == IR_LOOP_PIPELINED && stages == 0) kind = IR_LOOP_SERIAL;
    }
    /* targets */
    const char *names[8];
    tile_loc nlocs[8];
    int ntargets = t->kind == AST_E_TUPLE || t->kind == AST_E_LIST ? t->nitems : 1;
    if (ntargets != ndims) {
        sema_err(c, t->loc, "T.%s has %d dimension%s but %d loop variable%s", fn, ndims, ndims == 1 ? "" : "s", ntargets, ntargets == 1 ? " is" : "s are");
        return;
    }
    for (int i = 0; i < ntargets; i++) {
        const ast_expr *x = ntargets == 1 && t->kind != AST_E_TUPLE && t->kind != AST_E_LIST ? t : t->items[i];
        if (x->kind != AST_E_NAME) { sema_err(c, x->loc, "a loop variable must be a name"); return; }
        names[i] = x->name;
        nlocs[i] = x->loc;
    }
    if (kind == IR_LOOP_PARALLEL) {
        if (c->par_depth >= 64) { sema_err(c, s->loc, "T.Parallel nested too deeply"); return; }
        c->par_ids[c->par_depth++] = ++c->next_par_id;
    }
    ir_var *vars[8];
    sema_binding *sb[8];
    sval *sv[8];
    for (int i = 0; i < ndims; i++) {
        vars[i] = ir_var_new(c->mod, c->fn, names[i], IR_VAR_LOOP, TILE_DT_I32, nlocs[i]);
        int64_t l0, e0;
        if (!step && ir_const_int_value(lo[i], &l0) && ir_const_int_value(ext[i], &e0) && c->nrange < 256) {
            c->range_var[c->nrange] = vars[i];
            c->range_lo[c->nrange] = l0;
            c->range_hi[c->nrange++] = l0 + e0 - 1;
        }
        ir_expr *ref = ir_var_ref(c->mod, vars[i], nlocs[i]);
        ir_expr *val = step ? int_binary(c, IR_B_ADD, lo[0], int_binary(c, IR_B_MUL, ref, step, s->loc), s->loc) : ref;
        bind_loop_var(c, env, names[i], sv_expr(c, val), &sb[i], &sv[i]);
    }
    int saved_loop = c->loop_depth;
    c->loop_depth = kind == IR_LOOP_PARALLEL ? -1000 : c->loop_depth + 1; /* no break/continue out of T.Parallel */
    ir_stmt *body = lower_body(c, env, &s->body, s->loc);
    c->loop_depth = saved_loop;
    if (kind == IR_LOOP_PARALLEL) c->par_depth--;
    for (int i = ndims - 1; i >= 0; i--) {
        ir_stmt *f = ir_stmt_new(c->mod, IR_S_FOR, s->loc);
        f->var = vars[i];
        f->lo = step ? ir_const_int(c->mod, TILE_DT_I32, 0, s->loc) : lo[i];
        f->extent = ext[i];
        f->loop_kind = kind;
        f->num_stages = stages;
        f->par_group_depth = (kind == IR_LOOP_PARALLEL && i == 0) ? ndims : 0;
        f->body = one_body(c, body);
        f->nbody = 1;
        body = f;
    }
    for (int i = 0; i < ndims; i++) unbind_loop_var(c, env, names[i], sb[i], sv[i], s->loc);
    emit(c, body);
}

/* ---------- kernels ---------- */
static void lower_ws(sema_ctx *c, sema_env *env, const ast_stmt *s);

/* `with T.sblock(name):` inside a kernel: TIR's block, a scope for its annotations (its
 * body runs in place, its names stay visible after it, as Python's `with` does).
 * T.annotate_safe_value inside it holds for the block only; T.reads / T.writes in it
 * declare regions for TIR's analyses and have no effect. */
static void lower_sblock(sema_ctx *c, sema_env *env, const ast_stmt *s) {
    const ast_expr *k = s->with_items[0];
    if (!c->in_kernel) { sema_err(c, k->loc, "T.sblock is only meaningful inside a T.Kernel"); return; }
    if (s->with_targets[0]) { sema_err(c, s->with_targets[0]->loc, "`with T.sblock(...) as ...` is not supported; drop the 'as'"); return; }
    for (int i = 0; i < k->nitems; i++) {
        sval *n = lower_expr(c, env, k->items[i]);
        if (i > 0 || n->kind != SV_STRING) { sema_err(c, k->items[i]->loc, "T.sblock takes a block name (a string)"); return; }
    }
    int nsafe = c->nsafe, mark = c->read_mark;
    ir_buffer *sbuf[16];
    ir_expr *sval_[16];
    memcpy(sbuf, c->safe_buf, sizeof sbuf);
    memcpy(sval_, c->safe_val, sizeof sval_);
    c->read_mark = c->nread_bufs;
    lower_block(c, env, &s->body);
    c->nsafe = nsafe;
    memcpy(c->safe_buf, sbuf, sizeof sbuf);
    memcpy(c->safe_val, sval_, sizeof sval_);
    c->read_mark = mark;
}
static void lower_with(sema_ctx *c, sema_env *env, const ast_stmt *s) {
    if (s->nwith != 1) { sema_err(c, s->loc, "only `with T.Kernel(...) as ...:` is supported"); return; }
    const ast_expr *k = s->with_items[0];
    sval *f = k->kind == AST_E_CALL ? lower_expr(c, env, k->value) : NULL;
    if (f && f->kind == SV_BUILTIN && !strcmp(f->str, "ws")) { lower_ws(c, env, s); return; }
    if (f && f->kind == SV_BUILTIN && !strcmp(f->str, "sblock")) { lower_sblock(c, env, s); return; }
    if (!f || f->kind != SV_BUILTIN || strcmp(f->str, "Kernel")) {
        sema_err(c, k->loc, "only `with T.Kernel(...) as ...:`, `with T.ws(...):` and `with T.sblock(...):` are supported");
        return;
    }
    if (c->in_kernel) { sema_err(c, s->loc, "T.Kernel cannot be nested inside another T.Kernel"); return; }
    if (c->par_depth) { sema_err(c, s->loc, "T.Kernel cannot be inside a T.Parallel loop"); return; }
    if (!c->stmts) { sema_err(c, s->loc, "a T.Kernel is run-time code, which is not allowed here"); return; }
    int n = k->nitems;
    if (n > 3) { sema_err(c, k->loc, "T.Kernel takes 1 to 3 grid dimensions, got %d", n); return; }
    /* T.Kernel(threads=...) without grid dimensions is one block, as in TileLang (no block
     * index is bound) */
    bool one_block = n == 0;
    if (one_block && s->with_targets[0]) {
        sema_err(c, s->with_targets[0]->loc, "T.Kernel without grid dimensions is a single block and has no block index to name; give a grid (T.Kernel(1, ...)) or drop the 'as'");
        return;
    }
    ir_stmt *ks = ir_stmt_new(c->mod, IR_S_KERNEL, s->loc);
    if (one_block) n = 1;
    ks->ngrid = n;
    ks->threads = 128;
    if (one_block) ks->grid[0] = ir_const_int(c->mod, TILE_DT_I32, 1, k->loc);
    for (int i = 0; i < (one_block ? 0 : n); i++) {
        ir_expr *x = as_int_expr(c, lower_expr(c, env, k->items[i]), "a grid dimension");
        if (!x) return;
        int64_t g;
        if (ir_const_int_value(x, &g) && g > INT32_MAX) { sema_err(c, k->items[i]->loc, "grid dimension %d is %lld, which does not fit in int32", i, (long long)g); return; }
        x = cast_to(c, x, TILE_DT_I32);
        if (ir_const_int_value(x, &g) && g <= 0) { sema_err(c, k->items[i]->loc, "grid dimension %d is %lld; it must be positive", i, (long long)g); return; }
        ks->grid[i] = x;
    }
    for (int i = 0; i < k->nkwargs; i++) {
        const char *kn = k->kwargs[i].name;
        if (!kn) { sema_err(c, k->kwargs[i].loc, "T.Kernel does not take a '**' argument"); continue; }
        if (!strcmp(kn, "threads")) {
            sval *tv = lower_expr(c, env, k->kwargs[i].value);
            int64_t total = 1, x;
            c->simt_ndims = 0;
            if (tv->kind == SV_TUPLE) {
                if (tv->nitems > 3) sema_err(c, k->kwargs[i].loc, "threads has at most 3 dimensions (x, y, z), got %d", tv->nitems);
                for (int j = 0; j < tv->nitems; j++)
                    if (as_const_int(c, tv->items[j], &x, "threads")) {
                        total *= x;
                        if (j < 3) c->simt_dims[c->simt_ndims++] = (int)(x > 0 && x <= 1024 ? x : 1);
                    }
            } else if (as_const_int(c, tv, &x, "threads")) total = x;
            if (total < 1 || total > 1024) sema_err(c, k->kwargs[i].loc, "threads must be between 1 and 1024, got %lld", (long long)total);
            ks->threads = (int)total;
        } else if (strcmp(kn, "is_cpu") && strcmp(kn, "prelude") && strcmp(kn, "is_npu")) {
            tile_warning_at(c->diags, k->kwargs[i].loc, "unknown T.Kernel argument '%s' is ignored", kn);
        }
    }
    const ast_expr *t = s->with_targets[0];
    int nt = !t ? 0 : (t->kind == AST_E_TUPLE || t->kind == AST_E_LIST) ? t->nitems : 1;
    if (t && nt != n) { sema_err(c, t->loc, "T.Kernel has %d grid dimension%s but %d block index name%s", n, n == 1 ? "" : "s", nt, nt == 1 ? " is" : "s are"); return; }
    sema_binding *sb[3] = {0};
    sval *sv[3] = {0};
    const char *names[3] = {0};
    for (int i = 0; i < n; i++) {
        const ast_expr *x = !t ? NULL : nt == 1 && t->kind != AST_E_TUPLE && t->kind != AST_E_LIST ? t : t->items[i];
        if (x && x->kind != AST_E_NAME) { sema_err(c, x->loc, "a block index must be a name"); return; }
        names[i] = x ? x->name : tile_arena_printf(c->arena, "b%c", "xyz"[i]);
        ks->block_vars[i] = ir_var_new(c->mod, c->fn, names[i], IR_VAR_BLOCK, TILE_DT_I32, x ? x->loc : s->loc);
        int64_t g;
        if (ir_const_int_value(ks->grid[i], &g) && c->nrange < 256) {
            c->range_var[c->nrange] = ks->block_vars[i];
            c->range_lo[c->nrange] = 0;
            c->range_hi[c->nrange++] = g - 1;
        }
        if (x) bind_loop_var(c, env, names[i], sv_expr(c, ir_var_ref(c->mod, ks->block_vars[i], x->loc)), &sb[i], &sv[i]);
    }
    c->in_kernel++;
    c->kernel = ks;
    c->simt_tid = NULL;
    c->nbarriers = 0;
    c->nsafe = 0;
    c->nread_bufs = 0;
    c->read_mark = 0;
    c->sync_used = false;
    c->ws_threads = 0;
    ir_stmt *body = lower_body(c, env, &s->body, s->loc);
    c->in_kernel--;
    if (c->sync_used && c->simt_tid)
        sema_err(c, c->sync_loc, "T.ws and mbarriers (T.alloc_barrier) in a kernel with per-thread code (T.get_thread_binding) are not supported yet; "
                                 "Tile runs them in program order for the whole block, which needs block-level code");
    ks->body = one_body(c, body);
    ks->nbody = 1;
    simt_lower_kernel(c, ks);
    c->kernel = NULL;
    c->simt_ndims = 0;
    for (int i = 0; i < n; i++)
        if (t) env_bind(c, env, names[i], dead_value(c, s->loc), 0);
    emit(c, ks);
}

/* ---------- views (T.reshape, T.view) ---------- */
static sval *kw_of(const ast_expr *call, sema_ctx *c, sema_env *env, const char *name);
static void check_kwargs(sema_ctx *c, const ast_expr *call, const char *op, const char *const *allowed);
ir_buffer *sema_view_base(sema_ctx *c, const ir_buffer *b) {
    for (int i = 0; b && i < c->nviews; i++)
        if (c->views[i] == b) return c->view_base[i];
    return NULL;
}

/* The indices into the base buffer of element idx of view v: both are row-major over the
 * same storage, so the element is the one at the same flat position. An index of v's
 * dimension d >= 1 outside [0, shape[d]) would land on another valid element of the
 * base; it is replaced by one past the end, so that the access is reported as out of
 * bounds (as an access of the base) instead of reading a neighbour. */
/* Bounds of an index expression from constants and loop variables with constant bounds
 * (+, *, // and % by positive constants); false where unknown. */
static bool index_range(sema_ctx *c, const ir_expr *e, int64_t *lo, int64_t *hi) {
    int64_t k, a0, a1, b0, b1;
    if (ir_const_int_value(e, &k)) { *lo = *hi = k; return true; }
    switch (e->kind) {
    case IR_E_VAR:
        for (int i = 0; i < c->nrange; i++)
            if (c->range_var[i] == e->var) { *lo = c->range_lo[i]; *hi = c->range_hi[i]; return true; }
        return false;
    case IR_E_CAST: return !tile_dtype_is_float(e->dtype) && index_range(c, e->args[0], lo, hi);
    case IR_E_BINARY:
        if (!index_range(c, e->args[0], &a0, &a1) || !index_range(c, e->args[1], &b0, &b1)) return false;
        if (e->op == IR_B_ADD) { *lo = a0 + b0; *hi = a1 + b1; return true; }
        if (e->op == IR_B_SUB) { *lo = a0 - b1; *hi = a1 - b0; return true; }
        if (e->op == IR_B_MUL && a0 >= 0 && b0 >= 0) { *lo = a0 * b0; *hi = a1 * b1; return true; }
        if (e->op == IR_B_FLOORDIV && b0 == b1 && b0 > 0 && a0 >= 0) { *lo = a0 / b0; *hi = a1 / b0; return true; }
        if (e->op == IR_B_FLOORMOD && b0 == b1 && b0 > 0) { *lo = 0; *hi = b0 - 1; return true; }
        return false;
    default: return false;
    }
}

/* ---------- T.annotate_safe_value ---------- */

ir_expr *sema_safe_value(sema_ctx *c, const ir_buffer *b, tile_loc loc) {
    for (int i = 0; i < c->nsafe; i++)
        if (c->safe_buf[i] == b) {
            const ir_expr *v = c->safe_val[i];
            return tile_dtype_is_float(v->dtype) ? ir_const_float(c->mod, v->dtype, v->fval, loc) : ir_const_int(c->mod, v->dtype, v->ival, loc);
        }
    return NULL;
}

void sema_note_read(sema_ctx *c, const ir_buffer *b) {
    if (!c->in_kernel || b->scope != IR_SCOPE_GLOBAL) return;
    for (int i = c->read_mark; i < c->nread_bufs; i++)
        if (c->read_bufs[i] == b) return;
    if (c->nread_bufs < 64) c->read_bufs[c->nread_bufs++] = b;
}

ir_expr *sema_in_bounds(sema_ctx *c, const ir_buffer *b, ir_expr **ix, tile_loc loc) {
    ir_expr *inb = NULL;
    for (int d = 0; d < b->rank; d++) {
        int64_t lo, hi, n;
        if (index_range(c, ix[d], &lo, &hi) && ir_const_int_value(b->shape[d], &n) && lo >= 0 && hi < n) continue;
        ir_expr *in = ir_binary(c->mod, IR_B_AND, ir_binary(c->mod, IR_B_GE, ix[d], ir_const_int(c->mod, ix[d]->dtype, 0, loc), loc),
                                ir_binary(c->mod, IR_B_LT, ix[d], cast_to(c, b->shape[d], ix[d]->dtype), loc), loc);
        inb = inb ? ir_binary(c->mod, IR_B_AND, inb, in, loc) : in;
    }
    return inb;
}

/* T.annotate_safe_value({A: v, ...}): from here to the end of the kernel (or of the
 * enclosing T.sblock), reads of the
 * global tensor A outside its bounds give v instead of being out-of-bounds accesses (element
 * reads, and the source elements of T.copy). TileLang attaches the map to the kernel's
 * block, so it holds for the whole kernel: a read of A before the annotation would see a
 * different meaning here, and is reported. Buffers that are not global tensors are
 * accepted and unaffected, as in TileLang (it guards global memory only). */
sval *sema_annotate_safe_value(sema_ctx *c, call_args *a, tile_loc loc) {
    if (a->npos != 1 || a->nkw || a->pos[0]->kind != SV_DICT) {
        sema_err(c, loc, "T.annotate_safe_value takes one dict, {buffer: value, ...}");
        return sv_err(c, loc);
    }
    if (!c->in_kernel) {
        sema_err(c, loc, "T.annotate_safe_value is only meaningful inside a T.Kernel");
        return sv_err(c, loc);
    }
    sval *d = a->pos[0];
    for (int i = 0; i < d->nitems; i++) {
        sval *k = d->items[i], *v = d->vals[i];
        if (k->kind != SV_BUFFER) {
            sema_err(c, k->loc, "the keys of T.annotate_safe_value must be buffers, got %s", sv_describe(k));
            return sv_err(c, loc);
        }
        ir_buffer *b = sema_view_base(c, k->buf);
        if (!b) b = k->buf;
        if (b->scope != IR_SCOPE_GLOBAL) continue;
        if (!sv_is_const(v)) {
            sema_err(c, v->loc, "the safe value of '%s' in T.annotate_safe_value must be a number known at compile time, got %s", k->buf->name,
                     sv_describe(v));
            return sv_err(c, loc);
        }
        for (int j = c->read_mark; j < c->nread_bufs; j++)
            if (c->read_bufs[j] == b) {
                sema_err(c, k->loc, "T.annotate_safe_value for '%s' comes after a read of '%s' in this block; TileLang applies it to the whole block "
                                    "(the kernel, or the enclosing T.sblock), so put it before the first read", k->buf->name, b->name);
                return sv_err(c, loc);
            }
        ir_expr *x = cast_to(c, v->e, b->dtype);
        int j = 0;
        while (j < c->nsafe && c->safe_buf[j] != b) j++;
        if (j == c->nsafe) {
            if (c->nsafe == 16) { sema_err(c, loc, "T.annotate_safe_value: at most 16 tensors per kernel"); return sv_err(c, loc); }
            c->nsafe++;
        }
        c->safe_buf[j] = b;
        c->safe_val[j] = x;
    }
    return sv_none(c, loc);
}

/* An integer expression as c0 + sum k_i * a_i (through +, - and * by a constant). */
typedef struct affine_terms {
    ir_expr *atom[16];
    int64_t k[16];
    int n;
    int64_t c0;
    bool ok;
} affine_terms;

static void affine_of(ir_expr *e, int64_t scale, affine_terms *a) {
    int64_t x;
    if (!a->ok) return;
    if (ir_const_int_value(e, &x)) { a->c0 += scale * x; return; }
    if (e->kind == IR_E_BINARY && (e->op == IR_B_ADD || e->op == IR_B_SUB)) {
        affine_of(e->args[0], scale, a);
        affine_of(e->args[1], e->op == IR_B_ADD ? scale : -scale, a);
        return;
    }
    if (e->kind == IR_E_BINARY && e->op == IR_B_MUL) {
        if (ir_const_int_value(e->args[1], &x)) { affine_of(e->args[0], scale * x, a); return; }
        if (ir_const_int_value(e->args[0], &x)) { affine_of(e->args[1], scale * x, a); return; }
    }
    for (int i = 0; i < a->n; i++)
        if (ir_expr_equal(a->atom[i], e)) { a->k[i] += scale; return; }
    if (a->n == 16) { a->ok = false; return; }
    a->atom[a->n] = e;
    a->k[a->n++] = scale;
}

/* flat // n and flat % n without division where flat = n * q + r with r provably in
 * [0, n): the terms whose coefficients n divides make q, the others r. So the element of
 * a view whose inner dimensions tile the base's reads as an affine index (i * 12 + g * 4
 * + h over a base of 12 columns is row i, column g * 4 + h). */
static bool split_divmod(sema_ctx *c, ir_expr *flat, ir_expr *nexpr, ir_expr **q, ir_expr **r, tile_loc loc) {
    int64_t n;
    if (!ir_const_int_value(nexpr, &n) || n <= 0) return false;
    affine_terms a = {.ok = true};
    affine_of(flat, 1, &a);
    if (!a.ok) return false;
    int64_t cq = a.c0 >= 0 ? a.c0 / n : -((-a.c0 + n - 1) / n), cr = a.c0 - cq * n;
    ir_expr *qe = ir_const_int(c->mod, TILE_DT_I32, cq, loc), *re = ir_const_int(c->mod, TILE_DT_I32, cr, loc);
    for (int i = 0; i < a.n; i++) {
        if (!a.k[i]) continue;
        ir_expr *atom = cast_to(c, a.atom[i], TILE_DT_I32);
        if (a.k[i] % n == 0) qe = int_binary(c, IR_B_ADD, qe, int_binary(c, IR_B_MUL, atom, ir_const_int(c->mod, TILE_DT_I32, a.k[i] / n, loc), loc), loc);
        else re = int_binary(c, IR_B_ADD, re, int_binary(c, IR_B_MUL, atom, ir_const_int(c->mod, TILE_DT_I32, a.k[i], loc), loc), loc);
    }
    int64_t lo, hi;
    if (!index_range(c, re, &lo, &hi) || lo < 0 || hi >= n) return false;
    *q = qe;
    *r = re;
    return true;
}

ir_expr **sema_view_index(sema_ctx *c, const ir_buffer *v, ir_expr *const *idx, tile_loc loc) {
    ir_buffer *b = sema_view_base(c, v);
    ir_expr *total = ir_const_int(c->mod, TILE_DT_I32, 1, loc);
    for (int d = 0; d < v->rank; d++) total = int_binary(c, IR_B_MUL, total, v->shape[d], loc);
    ir_expr *flat = NULL;
    for (int d = 0; d < v->rank; d++) {
        ir_expr *x = cast_to(c, idx[d], TILE_DT_I32);
        int64_t lo, hi, n;
        if (d > 0 && !(index_range(c, x, &lo, &hi) && ir_const_int_value(v->shape[d], &n) && lo >= 0 && hi < n)) {
            ir_expr *in = ir_binary(c->mod, IR_B_AND, ir_binary(c->mod, IR_B_GE, x, ir_const_int(c->mod, TILE_DT_I32, 0, loc), loc),
                                    ir_binary(c->mod, IR_B_LT, x, v->shape[d], loc), loc);
            x = ir_select(c->mod, in, x, total, loc);
        }
        flat = flat ? int_binary(c, IR_B_ADD, int_binary(c, IR_B_MUL, flat, v->shape[d], loc), x, loc) : x;
    }
    if (!flat) flat = ir_const_int(c->mod, TILE_DT_I32, 0, loc);
    ir_expr **out = TILE_NEW_ARRAY(&c->mod->arena, ir_expr *, b->rank ? b->rank : 1);
    for (int d = b->rank - 1; d > 0; d--) {
        if (split_divmod(c, flat, b->shape[d], &flat, &out[d], loc)) continue;
        out[d] = int_binary(c, IR_B_FLOORMOD, flat, b->shape[d], loc);
        flat = int_binary(c, IR_B_FLOORDIV, flat, b->shape[d], loc);
    }
    if (b->rank) out[0] = flat;
    return out;
}

/* The factors of a product (through nested *), constants multiplied into *k. */
static void product_factors(const ir_expr *e, const ir_expr **f, int *n, int64_t *k) {
    int64_t x;
    while (e->kind == IR_E_CAST && !tile_dtype_is_float(e->dtype)) e = e->args[0];
    if (ir_const_int_value(e, &x)) { *k *= x; return; }
    if (e->kind == IR_E_BINARY && e->op == IR_B_MUL) {
        product_factors(e->args[0], f, n, k);
        product_factors(e->args[1], f, n, k);
        return;
    }
    if (*n < 32) f[(*n)++] = e;
    else *k = 0; /* too many to compare: treated as unknown */
}

/* Are the products of two lists of dimensions the same for every value of the sizes? */
static bool same_product(ir_expr *const *a, int na, ir_expr *const *b, int nb) {
    const ir_expr *fa[32], *fb[32];
    int n1 = 0, n2 = 0;
    int64_t k1 = 1, k2 = 1;
    for (int i = 0; i < na; i++) product_factors(a[i], fa, &n1, &k1);
    for (int i = 0; i < nb; i++) product_factors(b[i], fb, &n2, &k2);
    if (k1 != k2 || n1 != n2 || !k1) return false;
    bool used[32] = {0};
    for (int i = 0; i < n1; i++) {
        int j = 0;
        while (j < n2 && (used[j] || !ir_expr_equal(fa[i], fb[j]))) j++;
        if (j == n2) return false;
        used[j] = true;
    }
    return true;
}

/* T.reshape(buf, shape) and T.view(buf, shape=None, dtype=None): the same elements under a
 * new shape (row-major order kept). The element counts must match. */
static sval *lower_view(sema_ctx *c, sema_env *env, const char *fname, const ast_expr *call, sval **pos, int npos) {
    static const char *const kws[] = {"shape", "dtype", NULL};
    check_kwargs(c, call, fname, kws);
    sval *src = npos > 0 ? pos[0] : NULL;
    sval *shape = npos > 1 ? pos[1] : kw_of(call, c, env, "shape");
    sval *dtv = npos > 2 ? pos[2] : kw_of(call, c, env, "dtype");
    if (!src || npos > (strcmp(fname, "view") ? 2 : 3) || (!shape && !strcmp(fname, "reshape"))) {
        sema_err(c, call->loc, "T.%s takes a buffer and a shape%s", fname, strcmp(fname, "view") ? "" : " (and a dtype)");
        return sv_err(c, call->loc);
    }
    return sema_make_view(c, src, shape, dtv, tile_arena_printf(c->arena, "T.%s", fname), call->loc);
}

/* A view of src's storage with the given shape (NULL or None: src's) and dtype (NULL or
 * None: src's); `what` names the construct in messages. */
sval *sema_make_view(sema_ctx *c, sval *src, sval *shape, sval *dtv, const char *what, tile_loc loc) {
    if (src->kind != SV_BUFFER) {
        if (!src->poison) sema_err(c, src->loc, "the storage of %s must be a buffer, got %s", what, sv_describe(src));
        return sv_err(c, loc);
    }
    ir_buffer *base = src->buf, *bb = sema_view_base(c, base);
    if (bb) base = bb; /* a view of a view is a view of the same storage */
    tile_dtype dt = src->buf->dtype;
    if (dtv && dtv->kind != SV_NONE) {
        dt = as_dtype(c, dtv, "the view dtype");
        if (dt == TILE_DT_INVALID) return sv_err(c, loc);
        if (dt != base->dtype) {
            sema_err(c, dtv->loc, "%s of '%s' (%s) as %s is not supported yet: Tile's views keep the element type (T.reshape)",
                     what, src->buf->name, tile_dtype_name(base->dtype), tile_dtype_name(dt));
            return sv_err(c, loc);
        }
    }
    if (!c->stmts || !c->in_kernel) { sema_err(c, loc, "%s is only meaningful inside a T.Kernel", what); return sv_err(c, loc); }
    if (c->nviews == 64) { sema_err(c, loc, "more than 64 views (T.reshape / T.view) in one kernel are not supported"); return sv_err(c, loc); }
    if (!shape || shape->kind == SV_NONE) shape = sema_shape_tuple(c, src->buf, loc);
    /* the view's shape is checked and built like an allocation's, but the buffer is not
     * part of the function: no IR node refers to it */
    sval *one[1] = {shape};
    sval **items = shape->kind == SV_TUPLE ? shape->items : one;
    int n = shape->kind == SV_TUPLE ? shape->nitems : 1;
    if (n < 1 || n > 8) { sema_err(c, shape->loc, "a view has 1 to 8 dimensions, got %d", n); return sv_err(c, loc); }
    ir_expr **dims = TILE_NEW_ARRAY(&c->mod->arena, ir_expr *, n);
    ir_expr *nv = ir_const_int(c->mod, TILE_DT_I32, 1, loc), *nb = ir_const_int(c->mod, TILE_DT_I32, 1, loc);
    for (int d = 0; d < n; d++) {
        ir_expr *x = as_int_expr(c, items[d], "a dimension");
        if (!x) return sv_err(c, loc);
        x = cast_to(c, x, TILE_DT_I32);
        int64_t k;
        if (ir_const_int_value(x, &k) && k <= 0) { sema_err(c, items[d]->loc, "dimension %d of the view is %lld; dimensions must be positive", d, (long long)k); return sv_err(c, loc); }
        if (!is_pure(x)) { sema_err(c, items[d]->loc, "a dimension of a view may not depend on tensor contents"); return sv_err(c, loc); }
        dims[d] = x;
        nv = int_binary(c, IR_B_MUL, nv, x, loc);
    }
    for (int d = 0; d < base->rank; d++) nb = int_binary(c, IR_B_MUL, nb, base->shape[d], loc);
    int64_t kv, kb;
    bool cv = ir_const_int_value(nv, &kv), cb = ir_const_int_value(nb, &kb);
    if (cv && cb && kv != kb) {
        sema_err(c, loc, "%s: '%s' has %lld elements but the new shape has %lld", what, src->buf->name, (long long)kb, (long long)kv);
        return sv_err(c, loc);
    }
    if (!(cv && cb) && !same_product(dims, n, base->shape, base->rank)) {
        sema_err(c, loc, "%s: cannot tell at compile time that '%s' and the new shape have the same number of elements", what, src->buf->name);
        return sv_err(c, loc);
    }
    ir_buffer *v = TILE_NEW(&c->mod->arena, ir_buffer);
    *v = *base;
    v->id = -1;
    v->rank = n;
    v->shape = dims;
    v->name = tile_arena_printf(&c->mod->arena, "%%alloc%d", c->tmp_counter++); /* named by the assignment */
    v->loc = loc;
    v->layout = NULL;
    v->align_to = NULL;
    c->views[c->nviews] = v;
    c->view_base[c->nviews++] = base;
    sval *r = sv_new(c, SV_BUFFER, loc);
    r->buf = v;
    return r;
}

/* A T.Parallel nest over `rank` extents; *vars gets the loop variables. */
static ir_stmt *parallel_nest(sema_ctx *c, int rank, ir_expr *const *ext, ir_var **vars, ir_stmt *body, tile_loc loc) {
    for (int d = rank - 1; d >= 0; d--) {
        ir_stmt *f = ir_stmt_new(c->mod, IR_S_FOR, loc);
        f->var = vars[d];
        f->lo = ir_const_int(c->mod, TILE_DT_I32, 0, loc);
        f->extent = cast_to(c, ext[d], TILE_DT_I32);
        f->loop_kind = IR_LOOP_PARALLEL;
        f->par_group_depth = d == 0 ? rank : 0;
        f->body[0] = body;
        body = f;
    }
    return body;
}

/* The indices of element (start + i) of a region, onto the base buffer for a view; *inb
 * gets the condition that the element is inside the region's buffer (or view), NULL where
 * that is known at compile time. */
static ir_expr **region_elem(sema_ctx *c, const ir_region *r, ir_var **iv, ir_expr **inb, tile_loc loc) {
    int rank = r->buf->rank;
    ir_expr **ix = TILE_NEW_ARRAY(&c->mod->arena, ir_expr *, rank ? rank : 1);
    *inb = NULL;
    for (int d = 0; d < rank; d++) {
        ix[d] = iv[d] ? int_binary(c, IR_B_ADD, r->start[d], ir_var_ref(c->mod, iv[d], loc), loc) : r->start[d];
        int64_t lo, hi, n;
        if (index_range(c, ix[d], &lo, &hi) && ir_const_int_value(r->buf->shape[d], &n) && lo >= 0 && hi < n) continue;
        ir_expr *in = ir_binary(c->mod, IR_B_AND, ir_binary(c->mod, IR_B_GE, ix[d], ir_const_int(c->mod, TILE_DT_I32, 0, loc), loc),
                                ir_binary(c->mod, IR_B_LT, ix[d], r->buf->shape[d], loc), loc);
        *inb = *inb ? ir_binary(c->mod, IR_B_AND, *inb, in, loc) : in;
    }
    return sema_view_base(c, r->buf) ? sema_view_index(c, r->buf, ix, loc) : ix;
}

/* dst[...] = src[...] over two regions of the same shape, as a T.Parallel nest of element
 * copies (what T.copy means): for a view (at least one side), and for a source with a
 * non-zero T.annotate_safe_value (its out-of-bounds elements read that value) */
static bool emit_view_copy(sema_ctx *c, const ir_region *src, const ir_region *dst, tile_loc loc) {
    int rank = dst->buf->rank;
    /* the dimensions of extent other than 1 pair up in order, as T.copy pairs them; the
     * source's unit dimensions stay at their start */
    int sd[8], dd[8], ns = 0, nd = 0;
    for (int d = 0; d < src->buf->rank; d++) {
        int64_t k;
        if (!(ir_const_int_value(src->extent[d], &k) && k == 1)) sd[ns++] = d;
    }
    for (int d = 0; d < rank; d++) {
        int64_t k;
        if (!(ir_const_int_value(dst->extent[d], &k) && k == 1)) dd[nd++] = d;
    }
    bool same = ns == nd;
    for (int j = 0; same && j < ns; j++) {
        int64_t a, b;
        const ir_expr *ea = src->extent[sd[j]], *eb = dst->extent[dd[j]];
        same = (ir_const_int_value(ea, &a) && ir_const_int_value(eb, &b)) ? a == b : ir_expr_equal(ea, eb);
    }
    if (!same) {
        sema_err(c, loc, "T.copy between %s and a region of another shape is not supported yet; give both sides the same shape",
                 sema_view_base(c, src->buf) || sema_view_base(c, dst->buf) ? "a view (T.reshape / T.view)"
                                                                            : "a tensor with a non-zero T.annotate_safe_value");
        return false;
    }
    ir_var *iv[8], *siv[8];
    for (int d = 0; d < rank; d++) {
        iv[d] = ir_var_new(c->mod, c->fn, tile_arena_printf(c->arena, "v%d", d), IR_VAR_LOOP, TILE_DT_I32, loc);
        int64_t e0;
        if (ir_const_int_value(dst->extent[d], &e0) && c->nrange < 256) {
            c->range_var[c->nrange] = iv[d];
            c->range_lo[c->nrange] = 0;
            c->range_hi[c->nrange++] = e0 - 1;
        }
    }
    for (int d = 0; d < src->buf->rank; d++) siv[d] = NULL;
    for (int j = 0; j < ns; j++) siv[sd[j]] = iv[dd[j]];
    ir_buffer *sb = sema_view_base(c, src->buf), *db = sema_view_base(c, dst->buf);
    /* regions clip at the bounds, as for every tile operation: reading outside gives 0,
     * writing outside is dropped */
    ir_expr *sin, *din;
    ir_buffer *sbuf = sb ? sb : src->buf;
    ir_expr *x = cast_to(c, ir_load(c->mod, sbuf, region_elem(c, src, siv, &sin, loc), loc), promote_arith(sbuf->dtype));
    if (sin) {
        ir_expr *fill = sema_safe_value(c, sbuf, loc);
        x = ir_select(c->mod, sin, x, cast_to(c, fill ? fill : ir_const_int(c->mod, TILE_DT_I32, 0, loc), x->dtype), loc);
    }
    ir_stmt *st = ir_stmt_new(c->mod, IR_S_STORE, loc);
    st->buf = db ? db : dst->buf;
    st->idx = region_elem(c, dst, iv, &din, loc);
    st->value = coerce_store(c, cast_to(c, x, promote_arith(st->buf->dtype)), st->buf->dtype, loc);
    ir_stmt *body = guard_stmt(c, din, st, loc);
    emit(c, parallel_nest(c, rank, dst->extent, iv, body, loc));
    return true;
}

/* A tile operation other than T.copy on a view: it works on a temporary of the view's shape
 * (same scope as the base), filled from the base before the operation where it reads the
 * operand, and written back after it where it writes it. Returns the operand to use, and in
 * *back the temporary to write back (NULL: none). */
static sval *view_operand(sema_ctx *c, sval *v, bool reads, bool writes, const char *op, ir_buffer **tmp_out) {
    *tmp_out = NULL;
    ir_buffer *vb = v->kind == SV_BUFFER ? v->buf : v->kind == SV_ACCESS ? v->acc->buf : NULL;
    ir_buffer *base = sema_view_base(c, vb);
    if (!base) return v;
    if (base->scope == IR_SCOPE_GLOBAL) {
        sema_err(c, v->loc, "%s on a view of the global tensor '%s' is not supported yet; T.copy the view into a shared or fragment buffer first", op, base->name);
        return sv_err(c, v->loc);
    }
    ir_buffer *t = ir_buffer_new(c->mod, c->fn, tile_arena_printf(&c->mod->arena, "%s_view%d", base->name, c->tmp_counter++), vb->dtype, base->scope, vb->rank, vb->shape,
                                 IR_BUF_TEMP, v->loc);
    ir_stmt *al = ir_stmt_new(c->mod, IR_S_ALLOC, v->loc);
    al->buf = t;
    emit(c, al);
    ir_region whole = {0}, tw = {0};
    whole.buf = vb;
    whole.loc = v->loc;
    whole.start = TILE_NEW_ARRAY(&c->mod->arena, ir_expr *, vb->rank);
    whole.extent = vb->shape;
    for (int d = 0; d < vb->rank; d++) whole.start[d] = ir_const_int(c->mod, TILE_DT_I32, 0, v->loc);
    tw = whole;
    tw.buf = t;
    /* a partly written operand keeps the rest of the view: fill it first too */
    if (reads || (writes && v->kind == SV_ACCESS)) emit_view_copy(c, &whole, &tw, v->loc);
    if (writes) *tmp_out = t;
    sval *r = sv_new(c, v->kind, v->loc);
    *r = *v;
    if (v->kind == SV_BUFFER) r->buf = t;
    else {
        r->acc = TILE_NEW(c->arena, sv_access);
        *r->acc = *v->acc;
        r->acc->buf = t;
        r->buf = t;
    }
    return r;
}

static void view_write_back(sema_ctx *c, ir_buffer *t, const sval *orig) {
    if (!t) return;
    ir_buffer *vb = orig->kind == SV_BUFFER ? orig->buf : orig->acc->buf;
    ir_region whole = {0}, tw = {0};
    whole.buf = vb;
    whole.loc = orig->loc;
    whole.start = TILE_NEW_ARRAY(&c->mod->arena, ir_expr *, vb->rank);
    whole.extent = vb->shape;
    for (int d = 0; d < vb->rank; d++) whole.start[d] = ir_const_int(c->mod, TILE_DT_I32, 0, orig->loc);
    tw = whole;
    tw.buf = t;
    emit_view_copy(c, &tw, &whole, orig->loc);
}

/* ---------- regions ---------- */
static bool extent_const(const ir_expr *e, int64_t *k) { return ir_const_int_value(e, k); }

/* Convert an operand of a tile operation to a region. `other` (may be NULL) gives the
 * extents of a head-element operand like A[by * 64, k * 32]. */
static bool to_region(sema_ctx *c, sval *v, ir_region *r, const ir_region *other, const char *op, const char *what) {
    memset(r, 0, sizeof *r);
    r->loc = v->loc;
    if (v->kind == SV_BUFFER) {
        ir_buffer *b = v->buf;
        if (sema_view_base(c, b) && strcmp(op, "T.copy")) {
            sema_err(c, v->loc, "%s on a view made by T.reshape / T.view is not supported yet", op);
            return false;
        }
        r->buf = b;
        r->start = TILE_NEW_ARRAY(&c->mod->arena, ir_expr *, b->rank ? b->rank : 1);
        r->extent = TILE_NEW_ARRAY(&c->mod->arena, ir_expr *, b->rank ? b->rank : 1);
        for (int d = 0; d < b->rank; d++) {
            r->start[d] = ir_const_int(c->mod, TILE_DT_I32, 0, v->loc);
            r->extent[d] = b->shape[d];
        }
        return true;
    }
    if (v->kind != SV_ACCESS) {
        if (v->kind != SV_NONE) sema_err(c, v->loc, "the %s of %s must be a buffer or a region of one, got %s", what, op, sv_describe(v));
        return false;
    }
    sv_access *a = v->acc;
    ir_buffer *b = a->view ? a->view : a->buf;
    int rank = b->rank;
    ir_expr **astart = a->view ? a->view_idx : a->start;
    if (sema_view_base(c, b) && strcmp(op, "T.copy")) {
        sema_err(c, v->loc, "%s on a view made by T.reshape / T.view is not supported yet", op);
        return false;
    }
    r->buf = b;
    r->start = TILE_NEW_ARRAY(&c->mod->arena, ir_expr *, rank ? rank : 1);
    r->extent = TILE_NEW_ARRAY(&c->mod->arena, ir_expr *, rank ? rank : 1);
    for (int d = 0; d < rank; d++) r->start[d] = cast_to(c, astart[d], TILE_DT_I32);
    if (a->any_slice) {
        for (int d = 0; d < rank; d++) r->extent[d] = a->extent[d] ? cast_to(c, a->extent[d], TILE_DT_I32) : ir_const_int(c->mod, TILE_DT_I32, 1, v->loc);
        return true;
    }
    /* head-element form: extents from the other operand, aligned to the trailing dims */
    if (!other) {
        sema_err(c, v->loc, "cannot tell the extent of %s[...] in %s: give it as a slice (e.g. %s[a:b, c:d]) or pass a whole buffer on the other side", b->name, op, b->name);
        return false;
    }
    int ro = other->buf->rank;
    ir_expr **oe = other->extent;
    int skip = 0;
    while (ro - skip > rank) {
        int64_t k;
        if (!extent_const(oe[skip], &k) || k != 1) {
            sema_err(c, v->loc, "%s[...] has %d dimensions but the other operand of %s has %d non-unit ones", b->name, rank, op, ro - skip);
            return false;
        }
        skip++;
    }
    int lead = rank - (ro - skip);
    for (int d = 0; d < rank; d++) r->extent[d] = d < lead ? ir_const_int(c->mod, TILE_DT_I32, 1, v->loc) : oe[skip + d - lead];
    return true;
}

static bool is_head_form(const sval *v) { return v->kind == SV_ACCESS && !v->acc->any_slice; }

/* The non-unit constant extents of a region; false if some extent is symbolic. */
static bool region_dims(const ir_region *r, int64_t *dims, int *n) {
    *n = 0;
    for (int d = 0; d < r->buf->rank; d++) {
        int64_t k;
        if (!extent_const(r->extent[d], &k)) return false;
        if (k != 1) dims[(*n)++] = k;
    }
    return true;
}

static const char *dims_str(sema_ctx *c, const int64_t *d, int n) {
    tile_strbuf sb = {0};
    if (n == 0) tile_sb_puts(&sb, "1");
    for (int i = 0; i < n; i++) tile_sb_printf(&sb, "%s%lld", i ? "x" : "", (long long)d[i]);
    const char *s = tile_arena_strdup(c->arena, sb.data);
    tile_sb_free(&sb);
    return s;
}

static bool check_tile_scope(sema_ctx *c, tile_loc loc, const char *op) {
    if (c->par_depth) { sema_err(c, loc, "%s acts on a whole tile and cannot be used inside a T.Parallel loop", op); return false; }
    if (!c->stmts) { sema_err(c, loc, "%s is run-time code, which is not allowed here", op); return false; }
    return true;
}

static ir_stmt *tile_stmt(sema_ctx *c, ir_stmt_kind k, int nregions, tile_loc loc) {
    ir_stmt *s = ir_stmt_new(c->mod, k, loc);
    s->regions = TILE_NEW_ARRAY(&c->mod->arena, ir_region, nregions);
    s->nregions = nregions;
    return s;
}

static sval *kw_of(const ast_expr *call, sema_ctx *c, sema_env *env, const char *name) {
    for (int i = 0; i < call->nkwargs; i++)
        if (call->kwargs[i].name && !strcmp(call->kwargs[i].name, name)) return lower_expr(c, env, call->kwargs[i].value);
    /* `**options` with a compile-time dict */
    for (int i = 0; i < call->nkwargs; i++) {
        if (call->kwargs[i].name) continue;
        sval *d = lower_expr(c, env, call->kwargs[i].value);
        sval key = {.kind = SV_STRING, .str = name};
        sval *v = d->kind == SV_DICT ? py_dict_get(d, &key) : NULL;
        if (v) return v;
    }
    return NULL;
}

static bool kw_bool(sema_ctx *c, sema_env *env, const ast_expr *call, const char *name, sval **pos, int npos, int idx, bool dflt) {
    sval *v = idx < npos ? pos[idx] : kw_of(call, c, env, name);
    if (!v) return dflt;
    int64_t x;
    if (!as_const_int(c, v, &x, name)) return dflt;
    return x != 0;
}

static void check_kwargs(sema_ctx *c, const ast_expr *call, const char *op, const char *const *allowed) {
    for (int i = 0; i < call->nkwargs; i++) {
        if (!call->kwargs[i].name) {
            sval *d = c->tile_scope ? lower_expr(c, c->tile_scope, call->kwargs[i].value) : NULL;
            if (!d || d->kind != SV_DICT) {
                if (!d || !d->poison) sema_err(c, call->kwargs[i].loc, "the '**' argument of %s() must be a dict known at compile time", op);
                continue;
            }
            for (int j = 0; j < d->nitems; j++) {
                bool ok = false;
                for (int k = 0; allowed[k] && d->items[j]->kind == SV_STRING; k++)
                    if (!strcmp(allowed[k], d->items[j]->str)) ok = true;
                if (!ok) sema_err(c, call->kwargs[i].loc, "%s() has no argument named '%s' (in the '**' argument)", op,
                                  d->items[j]->kind == SV_STRING ? d->items[j]->str : "?");
            }
            continue;
        }
        bool ok = false;
        for (int k = 0; allowed[k]; k++)
            if (!strcmp(allowed[k], call->kwargs[i].name)) ok = true;
        if (!ok) sema_err(c, call->kwargs[i].loc, "%s() has no argument named '%s'", op, call->kwargs[i].name);
    }
}

static sval *lower_copy(sema_ctx *c, const ast_expr *call, sval **pos, int npos, bool tma) {
    /* hints on how to copy; Tile's lowering chooses the instructions */
    static const char *const kws[] = {"coalesced_width", "disable_tma", "eviction_policy", "loop_layout", "prefer_instruction",
                                      "annotations", "src", "dst", NULL};
    static const char *const tma_kws[] = {"barrier", "eviction_policy", "annotations", "src", "dst", NULL};
    check_kwargs(c, call, tma ? "T.tma_copy" : "T.copy", tma ? tma_kws : kws);
    if (npos != 2) { sema_err(c, call->loc, "T.copy takes a source and a destination, got %d arguments", npos); return sv_err(c, call->loc); }
    if (is_head_form(pos[0]) && is_head_form(pos[1]) && c->in_kernel) {
        /* T.copy(A[i], B[j]): two single elements, a copy of one element (an element
         * operation, so also inside T.Parallel) */
        store_access(c, pos[1]->acc, sv_expr(c, materialize(c, pos[0])), call->loc);
        return sv_none(c, call->loc);
    }
    if (!check_tile_scope(c, call->loc, "T.copy")) return sv_err(c, call->loc);
    ir_stmt *s = tile_stmt(c, IR_S_COPY, 2, call->loc);
    bool ok;
    if (is_head_form(pos[0]) && !is_head_form(pos[1]))
        ok = to_region(c, pos[1], &s->regions[1], NULL, "T.copy", "destination") && to_region(c, pos[0], &s->regions[0], &s->regions[1], "T.copy", "source");
    else
        ok = to_region(c, pos[0], &s->regions[0], NULL, "T.copy", "source") && to_region(c, pos[1], &s->regions[1], &s->regions[0], "T.copy", "destination");
    if (!ok) return sv_err(c, call->loc);
    int64_t da[8], db[8];
    int na, nb;
    if (region_dims(&s->regions[0], da, &na) && region_dims(&s->regions[1], db, &nb)) {
        bool same = na == nb;
        for (int i = 0; same && i < na; i++) same = da[i] == db[i];
        if (!same) {
            sema_err(c, call->loc, "T.copy shapes do not match: the source region of '%s' is %s but the destination region of '%s' is %s",
                     s->regions[0].buf->name, dims_str(c, da, na), s->regions[1].buf->name, dims_str(c, db, nb));
            return sv_err(c, call->loc);
        }
    }
    /* a source with a non-zero safe value: out-of-bounds elements read that value, which
     * the element copy nest gives on every target (IR_S_COPY fills with zero) */
    ir_buffer *src_base = sema_view_base(c, s->regions[0].buf) ? sema_view_base(c, s->regions[0].buf) : s->regions[0].buf;
    sema_note_read(c, src_base);
    ir_expr *safe = sema_safe_value(c, src_base, call->loc);
    bool safe_nonzero = safe && (tile_dtype_is_float(safe->dtype) ? (safe->fval != 0 || signbit(safe->fval)) : safe->ival != 0);
    if (safe_nonzero || sema_view_base(c, s->regions[0].buf) || sema_view_base(c, s->regions[1].buf)) {
        if (!emit_view_copy(c, &s->regions[0], &s->regions[1], call->loc)) return sv_err(c, call->loc);
        return sv_none(c, call->loc);
    }
    emit(c, s);
    return sv_none(c, call->loc);
}

/* T.any_of(region) / T.all_of(region): whether any (every) element of a buffer or region
 * is non-zero, as a value. Computed by statements before the expression that uses it: a
 * flag set to false (true) and a serial nest over the region or-ing (and-ing) each element
 * into it. Elements are read as any element access (an index outside the buffer is an
 * out-of-bounds access, not a value). */
sval *sema_any_all_of(sema_ctx *c, const char *fname, sval *arg, tile_loc loc) {
    if (!c->stmts || !c->in_kernel) { sema_err(c, loc, "T.%s can only be used inside a T.Kernel", fname); return sv_err(c, loc); }
    ir_region r;
    if (arg->kind == SV_ACCESS && !arg->acc->any_slice && !arg->acc->view) {
        /* one element: a region of extent 1 */
        memset(&r, 0, sizeof r);
        r.buf = arg->acc->buf;
        r.start = arg->acc->start;
        r.extent = TILE_NEW_ARRAY(&c->mod->arena, ir_expr *, r.buf->rank ? r.buf->rank : 1);
        for (int d = 0; d < r.buf->rank; d++) r.extent[d] = ir_const_int(c->mod, TILE_DT_I32, 1, loc);
    } else if (!to_region(c, arg, &r, NULL, tile_arena_printf(c->arena, "T.%s", fname), "argument"))
        return sv_err(c, loc);
    bool any = !strcmp(fname, "any_of");
    ir_var *flag = ir_var_new(c->mod, c->fn, tile_arena_printf(c->arena, "%s%d", fname, c->tmp_counter++), IR_VAR_LOCAL, TILE_DT_BOOL, loc);
    emit_assign(c, flag, ir_const_int(c->mod, TILE_DT_BOOL, any ? 0 : 1, loc), loc);
    int rank = r.buf->rank;
    ir_var *iv[8];
    ir_expr **ix = TILE_NEW_ARRAY(&c->mod->arena, ir_expr *, rank ? rank : 1);
    for (int d = 0; d < rank; d++) {
        iv[d] = ir_var_new(c->mod, c->fn, tile_arena_printf(c->arena, "%s_i%d", fname, d), IR_VAR_LOOP, TILE_DT_I32, loc);
        ix[d] = int_binary(c, IR_B_ADD, r.start[d], ir_var_ref(c->mod, iv[d], loc), loc);
    }
    sema_note_read(c, r.buf);
    ir_expr *x = ir_load(c->mod, r.buf, ix, loc);
    ir_expr *safe = sema_safe_value(c, r.buf, loc);
    if (safe) {
        ir_expr *inb = sema_in_bounds(c, r.buf, ix, loc);
        if (inb) x = ir_select(c->mod, inb, x, safe, loc);
    }
    ir_stmt *upd = ir_stmt_new(c->mod, IR_S_ASSIGN, loc);
    upd->var = flag;
    upd->value = ir_binary(c->mod, any ? IR_B_OR : IR_B_AND, ir_var_ref(c->mod, flag, loc), to_bool(c, x), loc);
    ir_stmt *body = upd;
    for (int d = rank - 1; d >= 0; d--) {
        ir_stmt *f = ir_stmt_new(c->mod, IR_S_FOR, loc);
        f->var = iv[d];
        f->lo = ir_const_int(c->mod, TILE_DT_I32, 0, loc);
        f->extent = r.extent[d];
        f->loop_kind = IR_LOOP_SERIAL;
        f->body = TILE_NEW_ARRAY(&c->mod->arena, ir_stmt *, 1);
        f->nbody = 1;
        f->body[0] = body;
        body = f;
    }
    emit(c, body);
    return sv_expr(c, ir_var_ref(c->mod, flag, loc));
}

static sval *lower_fill(sema_ctx *c, const ast_expr *call, sval **pos, int npos, bool clear) {
    const char *op = clear ? "T.clear" : "T.fill";
    if (npos != (clear ? 1 : 2)) { sema_err(c, call->loc, "%s takes %s, got %d arguments", op, clear ? "one buffer" : "a buffer and a value", npos); return sv_err(c, call->loc); }
    if (pos[0]->kind == SV_EXPR && pos[0]->e->kind == IR_E_VAR && pos[0]->e->var->kind == IR_VAR_LOCAL) {
        /* T.clear / T.fill on a T.alloc_var: an assignment */
        ir_var *v = pos[0]->e->var;
        ir_expr *x = clear ? (tile_dtype_is_float(v->dtype) ? ir_const_float(c->mod, v->dtype, 0, call->loc) : ir_const_int(c->mod, v->dtype, 0, call->loc))
                           : value_for_var(c, pos[1], v->dtype, v->name, call->loc);
        if (x && pos[1] && !clear && pos[1]->kind == SV_EXPR && pos[1]->weak) x = cast_to(c, pos[1]->e, v->dtype);
        if (x) emit_assign(c, v, x, call->loc);
        return sv_none(c, call->loc);
    }
    if (!check_tile_scope(c, call->loc, op)) return sv_err(c, call->loc);
    ir_stmt *s = tile_stmt(c, IR_S_FILL, 1, call->loc);
    if (is_head_form(pos[0])) {
        /* one element (TileLang's T.fill(buf[i], v)): a region of extent 1 in every dimension */
        sv_access *a = pos[0]->acc;
        ir_region *r = &s->regions[0];
        r->buf = a->buf;
        r->loc = pos[0]->loc;
        int rank = a->buf->rank;
        r->start = TILE_NEW_ARRAY(&c->mod->arena, ir_expr *, rank ? rank : 1);
        r->extent = TILE_NEW_ARRAY(&c->mod->arena, ir_expr *, rank ? rank : 1);
        for (int d = 0; d < rank; d++) {
            r->start[d] = cast_to(c, a->start[d], TILE_DT_I32);
            r->extent[d] = ir_const_int(c->mod, TILE_DT_I32, 1, pos[0]->loc);
        }
    } else if (!to_region(c, pos[0], &s->regions[0], NULL, op, "destination")) return sv_err(c, call->loc);
    tile_dtype dt = s->regions[0].buf->dtype;
    sval *v = clear ? sv_weak_int(c, 0, call->loc) : pos[1];
    ir_expr *x;
    if (v->kind == SV_EXPR && v->weak) x = cast_to(c, v->e, promote_arith(dt) == TILE_DT_BOOL ? TILE_DT_BOOL : promote_arith(dt));
    else x = materialize(c, v);
    if (!x) return sv_err(c, call->loc);
    s->value = coerce_store(c, x, dt, call->loc);
    emit(c, s);
    return sv_none(c, call->loc);
}

static bool gemm_dims(const ir_region *r, int64_t *rows, int64_t *cols, bool *known) {
    /* the last two dims; leading dims must be unit */
    int rank = r->buf->rank;
    *known = false;
    if (rank < 2) return false;
    for (int d = 0; d < rank - 2; d++) {
        int64_t k;
        if (extent_const(r->extent[d], &k) && k != 1) return false;
    }
    *known = extent_const(r->extent[rank - 2], rows) && extent_const(r->extent[rank - 1], cols);
    return true;
}

static bool sync_scope(sema_ctx *c, const ast_expr *call, const char *op);
static bool barrier_operand(sema_ctx *c, sval *v, const char *op, int *which, ir_expr **elem);

/* One arrival on barrier element k of barrier `which` (the completion of an asynchronous
 * MMA: tcgen05.commit arrives once, whatever the number of threads) */
static void emit_arrive_one(sema_ctx *c, int which, ir_expr *k, tile_loc loc) {
    ir_expr **idx = TILE_NEW_ARRAY(&c->mod->arena, ir_expr *, 1);
    idx[0] = cast_to(c, k, TILE_DT_I32);
    ir_stmt *st = ir_stmt_new(c->mod, IR_S_STORE, loc);
    st->buf = c->barriers[which];
    st->idx = idx;
    st->value = int_binary(c, IR_B_ADD, ir_load(c->mod, c->barriers[which], idx, loc), ir_const_int(c->mod, TILE_DT_I32, 1, loc), loc);
    emit(c, st);
}
static sval *lower_gemm(sema_ctx *c, sema_env *env, const ast_expr *call, sval **pos, int npos, bool tc05) {
    static const char *const kws[] = {"transpose_A", "transpose_B", "policy", "clear_accum", "k_pack", "wg_wait", "use_wgmma",
                                      "mbar", "annotations", "A", "B", "C", NULL};
    static const char *const tc05_kws[] = {"transpose_A", "transpose_B", "policy", "clear_accum", "mbar", "use_2cta", "annotations", "A", "B", "C", NULL};
    check_kwargs(c, call, tc05 ? "T.tcgen05_gemm" : "T.gemm", tc05 ? tc05_kws : kws);
    /* T.gemm(A, B=..., C=...): the operands by keyword */
    sval *abc[6];
    if (npos < 3) {
        static const char *const opn[3] = {"A", "B", "C"};
        int n = 0;
        for (int i = 0; i < 3; i++) {
            abc[i] = i < npos ? pos[i] : kw_of(call, c, env, opn[i]);
            if (abc[i]) n = i + 1;
            else break;
        }
        if (n == 3) { pos = abc; npos = 3; }
    }
    if (npos < 3 || npos > 6) { sema_err(c, call->loc, "T.gemm takes A, B, C (and optionally transpose_A, transpose_B), got %d arguments", npos); return sv_err(c, call->loc); }
    if (!check_tile_scope(c, call->loc, "T.gemm")) return sv_err(c, call->loc);
    ir_stmt *s = tile_stmt(c, IR_S_GEMM, 3, call->loc);
    const char *names[3] = {"A operand", "B operand", "accumulator"};
    for (int i = 0; i < 3; i++) {
        if (is_head_form(pos[i])) { sema_err(c, pos[i]->loc, "the %s of T.gemm must be a whole buffer or a slice", names[i]); return sv_err(c, call->loc); }
        if (!to_region(c, pos[i], &s->regions[i], NULL, "T.gemm", names[i])) return sv_err(c, call->loc);
    }
    s->trans_a = kw_bool(c, env, call, "transpose_A", pos, npos, 3, false);
    s->trans_b = kw_bool(c, env, call, "transpose_B", pos, npos, 4, false);
    /* clear_accum known only at run time (clear_accum=k == 0): the accumulator is cleared
     * under that condition before a gemm that accumulates */
    sval *cav = kw_of(call, c, env, "clear_accum");
    ir_expr *dyn_clear = NULL;
    if (cav && cav->kind == SV_EXPR && !sv_is_const(cav)) {
        dyn_clear = to_bool(c, materialize(c, cav));
        if (!dyn_clear) return sv_err(c, call->loc);
        s->clear = false;
    } else s->clear = kw_bool(c, env, call, "clear_accum", pos, npos, 99, false);
    /* mbar= (Blackwell): the barrier the MMA's completion arrives on, once */
    sval *bar = kw_of(call, c, env, "mbar");
    int bar_which = -1;
    ir_expr *bar_k = NULL;
    if (bar && bar->kind != SV_NONE &&
        (!sync_scope(c, call, tc05 ? "T.tcgen05_gemm" : "T.gemm") || !barrier_operand(c, bar, tc05 ? "T.tcgen05_gemm(mbar=...)" : "T.gemm(mbar=...)", &bar_which, &bar_k)))
        return sv_err(c, call->loc);
    ir_region *A = &s->regions[0], *B = &s->regions[1], *C = &s->regions[2];
    if (!tile_dtype_is_float(C->buf->dtype) && !tile_dtype_is_int(C->buf->dtype)) { sema_err(c, C->loc, "the accumulator of T.gemm must be a numeric buffer"); return sv_err(c, call->loc); }
    if (C->buf->scope == IR_SCOPE_SHARED && c->opt) { /* allowed, but unusual */ }
    int64_t ar, ac, br, bc, cr, cc;
    bool ka, kb, kc;
    if (!gemm_dims(A, &ar, &ac, &ka) || !gemm_dims(B, &br, &bc, &kb) || !gemm_dims(C, &cr, &cc, &kc)) {
        sema_err(c, call->loc, "T.gemm operands must be 2-D (A is %d-D, B %d-D, C %d-D)", A->buf->rank, B->buf->rank, C->buf->rank);
        return sv_err(c, call->loc);
    }
    if (ka && kb && kc) {
        int64_t M = s->trans_a ? ac : ar, K1 = s->trans_a ? ar : ac;
        int64_t K2 = s->trans_b ? bc : br, N = s->trans_b ? br : bc;
        if (K1 != K2 || M != cr || N != cc) {
            sema_err(c, call->loc, "T.gemm shapes do not match: A%s is %lldx%lld, B%s is %lldx%lld, C is %lldx%lld (need A: MxK, B: KxN, C: MxN)",
                     s->trans_a ? " (transposed)" : "", (long long)M, (long long)K1, s->trans_b ? " (transposed)" : "", (long long)K2, (long long)N,
                     (long long)cr, (long long)cc);
            return sv_err(c, call->loc);
        }
    }
    if (dyn_clear) {
        ir_stmt *f = tile_stmt(c, IR_S_FILL, 1, call->loc);
        f->regions[0] = *C;
        f->value = tile_dtype_is_float(C->buf->dtype) ? ir_const_float(c->mod, C->buf->dtype, 0, call->loc) : ir_const_int(c->mod, C->buf->dtype, 0, call->loc);
        ir_stmt *g = ir_stmt_new(c->mod, IR_S_IF, call->loc);
        g->cond = dyn_clear;
        g->body = TILE_NEW_ARRAY(&c->mod->arena, ir_stmt *, 2);
        g->nbody = 2;
        g->body[0] = f;
        emit(c, g);
    }
    emit(c, s);
    if (bar_which >= 0) emit_arrive_one(c, bar_which, bar_k, call->loc);
    return sv_none(c, call->loc);
}

static sval *lower_reduce(sema_ctx *c, sema_env *env, const char *fname, const ast_expr *call, sval **pos, int npos) {
    /* batch=: how many outputs share one cross-thread reduction on the GPU (a code
     * generation choice; Tile's lowering makes its own) */
    static const char *const kws[] = {"dim", "clear", "batch", "annotations", NULL};
    check_kwargs(c, call, fname, kws);
    sval *bv = kw_of(call, c, env, "batch");
    int64_t batch = 1;
    if (bv && (!as_const_int(c, bv, &batch, "batch") || batch < 1)) {
        if (batch < 1) sema_err(c, bv->loc, "T.%s: batch must be 1 or more, got %lld", fname, (long long)batch);
        return sv_err(c, call->loc);
    }
    if (npos < 2 || npos > 4) { sema_err(c, call->loc, "T.%s takes a source, a destination, dim and clear, got %d arguments", fname, npos); return sv_err(c, call->loc); }
    if (!check_tile_scope(c, call->loc, fname)) return sv_err(c, call->loc);
    ir_stmt *s = tile_stmt(c, IR_S_REDUCE, 2, call->loc);
    if (is_head_form(pos[0]) || is_head_form(pos[1])) { sema_err(c, call->loc, "the operands of T.%s must be whole buffers or slices", fname); return sv_err(c, call->loc); }
    if (!to_region(c, pos[0], &s->regions[0], NULL, fname, "source") || !to_region(c, pos[1], &s->regions[1], NULL, fname, "destination")) return sv_err(c, call->loc);
    const char *kind = fname + 7;
    s->reduce_op = !strcmp(kind, "sum") ? IR_RED_SUM : !strcmp(kind, "max") ? IR_RED_MAX : !strcmp(kind, "min") ? IR_RED_MIN : !strcmp(kind, "abssum") ? IR_RED_ABSSUM : IR_RED_ABSMAX;
    sval *dv = npos > 2 ? pos[2] : kw_of(call, c, env, "dim");
    int64_t dim = -1;
    if (dv && !as_const_int(c, dv, &dim, "dim")) return sv_err(c, call->loc);
    int rs = s->regions[0].buf->rank, rd = s->regions[1].buf->rank;
    if (dim < 0) dim += rs;
    if (dim < 0 || dim >= rs) { sema_err(c, dv ? dv->loc : call->loc, "dim %lld is out of range for a %d-D source", (long long)dim, rs); return sv_err(c, call->loc); }
    s->dim = (int)dim;
    s->clear = kw_bool(c, env, call, "clear", pos, npos, 3, true);
    /* shape rule: dst = src without `dim` (or with extent 1 there) */
    int64_t es[8], ed[8];
    bool known = true;
    for (int d = 0; d < rs; d++) known &= extent_const(s->regions[0].extent[d], &es[d]);
    for (int d = 0; d < rd; d++) known &= extent_const(s->regions[1].extent[d], &ed[d]);
    if (rd != rs - 1 && rd != rs) { sema_err(c, call->loc, "T.%s: the destination has %d dimensions; it needs %d (the source's without dim %lld)", fname, rd, rs - 1, (long long)dim); return sv_err(c, call->loc); }
    if (known) {
        int64_t want[8];
        int nw = 0;
        for (int d = 0; d < rs; d++)
            if (d != dim) want[nw++] = es[d];
        int64_t got[8];
        int ng = 0;
        for (int d = 0; d < rd; d++)
            if (!(rd == rs && d == dim)) got[ng++] = ed[d];
        bool same = nw == ng && !(rd == rs && ed[dim] != 1);
        for (int i = 0; same && i < nw; i++) same = want[i] == got[i];
        if (!same) {
            sema_err(c, call->loc, "T.%s shapes do not match: reducing dim %lld of a %s source gives %s, but the destination is %s", fname, (long long)dim,
                     dims_str(c, es, rs), dims_str(c, want, nw), dims_str(c, ed, rd));
            return sv_err(c, call->loc);
        }
    }
    emit(c, s);
    return sv_none(c, call->loc);
}

/* T.atomic_add(dst_region, src_region): every element of src added atomically into the
 * matching element of dst (row-major over the non-unit extents, as T.copy pairs them),
 * as a T.Parallel nest of element atomics; elements outside either tensor are skipped
 * (regions clip at the bounds: out-of-bounds sources read 0, out-of-bounds stores drop). */
static sval *lower_region_atomic(sema_ctx *c, const char *fname, const ast_expr *call, sval **pos, int op) {
    if (!check_tile_scope(c, call->loc, tile_arena_printf(c->arena, "T.%s of a region", fname))) return sv_err(c, call->loc);
    ir_region src, dst;
    /* a scalar source (T.atomic_add(C[a:b, c:d], 1.0)) goes into every element of the region */
    ir_expr *scalar = NULL;
    if (pos[1]->kind == SV_EXPR || (pos[1]->kind == SV_ACCESS && !pos[1]->acc->any_slice && (pos[0]->kind == SV_ACCESS || pos[0]->kind == SV_BUFFER))) {
        if (!to_region(c, pos[0], &dst, NULL, fname, "destination")) return sv_err(c, call->loc);
        scalar = pos[1]->kind == SV_EXPR && pos[1]->weak ? cast_to(c, pos[1]->e, promote_arith(dst.buf->dtype)) : materialize(c, pos[1]);
        if (!scalar) return sv_err(c, call->loc);
        src = dst;
    }
    bool ok = scalar || (is_head_form(pos[0]) ? to_region(c, pos[1], &src, NULL, fname, "source") && to_region(c, pos[0], &dst, &src, fname, "destination")
                                              : to_region(c, pos[0], &dst, NULL, fname, "destination") && to_region(c, pos[1], &src, &dst, fname, "source"));
    if (!ok) return sv_err(c, call->loc);
    if (!scalar && sema_safe_value(c, src.buf, call->loc)) {
        /* TileLang would add the safe value for out-of-bounds source elements; Tile's region
         * atomics skip them */
        sema_err(c, call->loc, "T.%s from '%s', which has a T.annotate_safe_value, is not supported yet", fname, src.buf->name);
        return sv_err(c, call->loc);
    }
    int sd[8], dd[8], ns = 0, nd = 0;
    for (int d = 0; d < src.buf->rank; d++) {
        int64_t k;
        if (!(extent_const(src.extent[d], &k) && k == 1)) sd[ns++] = d;
    }
    for (int d = 0; d < dst.buf->rank; d++) {
        int64_t k;
        if (!(extent_const(dst.extent[d], &k) && k == 1)) dd[nd++] = d;
    }
    if (ns != nd) { sema_err(c, call->loc, "T.%s: the source region has %d non-unit dimensions, the destination %d", fname, ns, nd); return sv_err(c, call->loc); }
    for (int j = 0; j < ns; j++) {
        int64_t a, b;
        if (extent_const(src.extent[sd[j]], &a) && extent_const(dst.extent[dd[j]], &b) && a != b) {
            sema_err(c, call->loc, "T.%s shapes do not match: extent %lld of the source against %lld of the destination", fname, (long long)a, (long long)b);
            return sv_err(c, call->loc);
        }
    }
    tile_loc loc = call->loc;
    ir_var *iv[8];
    for (int j = 0; j < ns; j++) iv[j] = ir_var_new(c->mod, c->fn, tile_arena_printf(c->arena, "ai%d", j), IR_VAR_LOOP, TILE_DT_I32, loc);
    ir_expr **si = TILE_NEW_ARRAY(&c->mod->arena, ir_expr *, src.buf->rank + 1), **di = TILE_NEW_ARRAY(&c->mod->arena, ir_expr *, dst.buf->rank + 1);
    ir_expr *guard = NULL;
    for (int pass = scalar ? 1 : 0; pass < 2; pass++) {
        ir_region *r = pass ? &dst : &src;
        ir_expr **ix = pass ? di : si;
        int *nz = pass ? dd : sd;
        for (int d = 0, j = 0; d < r->buf->rank; d++) {
            ir_expr *e = r->start[d];
            if (j < ns && nz[j] == d) e = int_binary(c, IR_B_ADD, e, ir_var_ref(c->mod, iv[j++], loc), loc);
            ix[d] = e;
            ir_expr *in = ir_binary(c->mod, IR_B_AND, ir_binary(c->mod, IR_B_GE, e, ir_const_int(c->mod, TILE_DT_I32, 0, loc), loc),
                                    ir_binary(c->mod, IR_B_LT, e, r->buf->shape[d], loc), loc);
            int64_t lo, ext, sh;
            /* provably inside: no test */
            if (ir_const_int_value(r->start[d], &lo) && ir_const_int_value(r->extent[d], &ext) && ir_const_int_value(r->buf->shape[d], &sh) && lo >= 0 && lo + ext <= sh) continue;
            guard = guard ? ir_binary(c->mod, IR_B_AND, guard, in, loc) : in;
        }
    }
    ir_stmt *a = ir_stmt_new(c->mod, IR_S_ATOMIC, loc);
    a->buf = dst.buf;
    a->idx = di;
    tile_dtype ct = promote_arith(dst.buf->dtype);
    a->value = scalar ? coerce_store(c, cast_to(c, scalar, ct), dst.buf->dtype, loc)
                      : coerce_store(c, cast_to(c, cast_to(c, ir_load(c->mod, src.buf, si, loc), promote_arith(src.buf->dtype)), ct), dst.buf->dtype, loc);
    a->atomic_op = op;
    ir_stmt *body = guard_stmt(c, guard, a, loc);
    for (int j = ns - 1; j >= 0; j--) {
        ir_stmt *f = ir_stmt_new(c->mod, IR_S_FOR, loc);
        f->var = iv[j];
        f->lo = ir_const_int(c->mod, TILE_DT_I32, 0, loc);
        f->extent = src.extent[sd[j]];
        f->loop_kind = IR_LOOP_PARALLEL;
        f->par_group_depth = j == 0 ? ns : 0;
        f->body = one_body(c, body);
        f->nbody = 1;
        body = f;
    }
    emit(c, body);
    return sv_none(c, loc);
}

/* T.atomic_addx2 / T.atomic_addx4 (dst, value): TileLang's vector atomics, which add the n
 * consecutive elements starting at value into the n starting at dst. Each element is its own
 * atomic add (the vector form is one instruction on CUDA; the sum is the same). The elements
 * run along the last dimension and must lie inside it (checked like any access). */
static sval *lower_atomic_vec(sema_ctx *c, sema_env *env, const char *fname, const ast_expr *call, sval **pos, int npos, int n) {
    for (int i = 0; i < call->nkwargs; i++) {
        const char *kn = call->kwargs[i].name;
        bool prev = false;
        if (kn && !strcmp(kn, "return_prev")) {
            sval *v = lower_expr(c, env, call->kwargs[i].value);
            if (!py_truth(v, &prev)) { sema_err(c, call->kwargs[i].loc, "T.%s: return_prev must be known at compile time", fname); return sv_err(c, call->loc); }
            if (prev) { sema_err(c, call->kwargs[i].loc, "T.%s(..., return_prev=True) is not supported yet (its result is a vector value)", fname); return sv_err(c, call->loc); }
        } else {
            sema_err(c, call->kwargs[i].loc, "T.%s() has no argument named '%s'", fname, kn ? kn : "**");
            return sv_err(c, call->loc);
        }
    }
    if (npos != 2) { sema_err(c, call->loc, "T.%s takes a destination element and a source element, got %d arguments", fname, npos); return sv_err(c, call->loc); }
    if (!c->stmts) { sema_err(c, call->loc, "T.%s is run-time code, which is not allowed here", fname); return sv_err(c, call->loc); }
    sv_access *acc[2];
    for (int i = 0; i < 2; i++) {
        if (pos[i]->kind != SV_ACCESS) {
            sema_err(c, pos[i]->loc, "T.%s needs %s element of a buffer here (e.g. %s[i, j]), got %s", fname, i ? "a source" : "a destination",
                     i ? "A" : "B", sv_describe(pos[i]));
            return sv_err(c, call->loc);
        }
        acc[i] = pos[i]->acc;
        int r = acc[i]->buf->rank;
        for (int d = 0; d < r; d++) {
            int64_t k;
            if (!acc[i]->extent[d]) continue;
            bool ok = ir_const_int_value(acc[i]->extent[d], &k) && (d == r - 1 ? k == n : k == 1);
            if (!ok) {
                sema_err(c, pos[i]->loc, "T.%s: a slice of '%s' must cover %d elements of its last dimension (or index one element)", fname, acc[i]->buf->name, n);
                return sv_err(c, call->loc);
            }
        }
    }
    ir_buffer *db = acc[0]->buf, *sb = acc[1]->buf;
    if (db->dtype == TILE_DT_BOOL || tile_dtype_is_int(db->dtype) != tile_dtype_is_int(sb->dtype)) {
        sema_err(c, call->loc, "T.%s adds %s elements into %s elements of '%s'; both must be floats (or both integers)", fname,
                 tile_dtype_name(sb->dtype), tile_dtype_name(db->dtype), db->name);
        return sv_err(c, call->loc);
    }
    tile_loc loc = call->loc;
    for (int k = 0; k < n; k++) {
        ir_expr **ix[2];
        for (int i = 0; i < 2; i++) {
            int r = acc[i]->buf->rank;
            ix[i] = TILE_NEW_ARRAY(&c->mod->arena, ir_expr *, r + 1);
            for (int d = 0; d < r; d++) ix[i][d] = acc[i]->start[d];
            ix[i][r - 1] = int_binary(c, IR_B_ADD, acc[i]->start[r - 1], ir_const_int(c->mod, acc[i]->start[r - 1]->dtype, k, loc), loc);
        }
        ir_stmt *s = ir_stmt_new(c->mod, IR_S_ATOMIC, loc);
        s->buf = db;
        s->idx = ix[0];
        s->value = coerce_store(c, cast_to(c, cast_to(c, ir_load(c->mod, sb, ix[1], loc), promote_arith(sb->dtype)), promote_arith(db->dtype)), db->dtype, loc);
        s->atomic_op = IR_ATOMIC_ADD;
        emit(c, s);
    }
    return sv_none(c, loc);
}

/* One element update buf[a] = buf[a] op value as an IR_S_ATOMIC statement; value NULL (a
 * load) reads only. With want_old, the element's value before the update comes back as an
 * expression of its compute dtype (a local named after `old`). */
static sval *emit_elem_atomic(sema_ctx *c, const ast_expr *call, sv_access *a, sval *value, int op, bool want_old, const char *old) {
    tile_dtype ct = promote_arith(a->buf->dtype);
    ir_expr *x;
    if (!value) x = tile_dtype_is_float(ct) ? ir_const_float(c->mod, ct, 0.0, call->loc) : ir_const_int(c->mod, ct, 0, call->loc);
    else if (value->kind == SV_EXPR && value->weak) x = cast_to(c, value->e, ct);
    else x = materialize(c, value);
    if (!x) return sv_err(c, call->loc);
    ir_stmt *s = ir_stmt_new(c->mod, IR_S_ATOMIC, call->loc);
    s->buf = a->buf;
    s->idx = a->start;
    s->value = coerce_store(c, x, a->buf->dtype, call->loc);
    s->atomic_op = op;
    if (want_old) s->var = ir_var_new(c->mod, c->fn, tile_arena_printf(c->arena, "%s%d", old, c->tmp_counter++), IR_VAR_LOCAL, ct, call->loc);
    emit(c, s);
    return want_old ? sv_expr(c, ir_var_ref(c->mod, s->var, call->loc)) : sv_none(c, call->loc);
}

/* T.atomic_load(elem, memory_order=) / T.atomic_store(elem, value, memory_order=): one element
 * read or written atomically. Every memory order TileLang accepts for the operation is
 * accepted (Tile's atomics are all sequentially consistent, the strongest of them); one it
 * rejects is an error, as there. */
static sval *lower_atomic_ls(sema_ctx *c, sema_env *env, const char *fname, const ast_expr *call, sval **pos, int npos) {
    bool load = !strcmp(fname, "atomic_load");
    int want = load ? 1 : 2;
    if (npos != want) {
        sema_err(c, call->loc, "T.%s takes %s, got %d positional arguments", fname, load ? "one element (T.atomic_load(A[i]))" : "an element and a value (T.atomic_store(A[i], v))", npos);
        return sv_err(c, call->loc);
    }
    for (int i = 0; i < call->nkwargs; i++) {
        const char *kn = call->kwargs[i].name;
        if (!kn || strcmp(kn, "memory_order")) {
            sema_err(c, call->kwargs[i].loc, "T.%s has no argument named '%s' (it takes memory_order=)", fname, kn ? kn : "**");
            return sv_err(c, call->loc);
        }
        sval *mo = lower_expr(c, env, call->kwargs[i].value);
        if (mo->poison) return sv_err(c, call->loc);
        static const char *const lo[] = {"acquire", "consume", "relaxed", "seq_cst", NULL}, *const so[] = {"relaxed", "release", "seq_cst", NULL};
        const char *const *ok = load ? lo : so;
        bool good = false;
        for (int k = 0; mo->kind == SV_STRING && ok[k]; k++) good |= !strcmp(mo->str, ok[k]);
        if (!good) {
            sema_err(c, call->kwargs[i].loc, "%s does not support memory_order=%s%s%s; expected one of %s", fname, mo->kind == SV_STRING ? "'" : "",
                     mo->kind == SV_STRING ? mo->str : sv_describe(mo), mo->kind == SV_STRING ? "'" : "",
                     load ? "'acquire', 'consume', 'relaxed', 'seq_cst'" : "'relaxed', 'release', 'seq_cst'");
            return sv_err(c, call->loc);
        }
    }
    if (!c->stmts) { sema_err(c, call->loc, "T.%s is run-time code, which is not allowed here", fname); return sv_err(c, call->loc); }
    if (pos[0]->kind != SV_ACCESS || pos[0]->acc->any_slice) {
        sema_err(c, pos[0]->loc, "T.%s needs one element of a buffer (e.g. A[i, j]), got %s", fname, sv_describe(pos[0]));
        return sv_err(c, call->loc);
    }
    sv_access *a = pos[0]->acc;
    if (a->buf->dtype == TILE_DT_BOOL) { sema_err(c, call->loc, "T.%s on a bool buffer ('%s') is not supported", fname, a->buf->name); return sv_err(c, call->loc); }
    return emit_elem_atomic(c, call, a, load ? NULL : pos[1], load ? IR_ATOMIC_LOAD : IR_ATOMIC_STORE, load, "ld");
}

static sval *lower_atomic(sema_ctx *c, sema_env *env, const char *fname, const ast_expr *call, sval **pos, int npos) {
    if (!strcmp(fname, "atomic_addx2") || !strcmp(fname, "atomic_addx4"))
        return lower_atomic_vec(c, env, fname, call, pos, npos, fname[11] - '0');
    if (!strcmp(fname, "atomic_load") || !strcmp(fname, "atomic_store")) return lower_atomic_ls(c, env, fname, call, pos, npos);
    bool prev = false;
    for (int i = 0; i < call->nkwargs; i++) {
        const char *kn = call->kwargs[i].name;
        if (kn && !strcmp(kn, "return_prev")) {
            sval *v = lower_expr(c, env, call->kwargs[i].value);
            if (!py_truth(v, &prev)) { sema_err(c, call->kwargs[i].loc, "T.%s: return_prev must be known at compile time", fname); return sv_err(c, call->loc); }
        }
    }
    if (npos != 2) { sema_err(c, call->loc, "T.%s takes a destination element and a value, got %d arguments", fname, npos); return sv_err(c, call->loc); }
    if (!c->stmts) { sema_err(c, call->loc, "T.%s is run-time code, which is not allowed here", fname); return sv_err(c, call->loc); }
    static const struct { const char *name; int op; } ops[] = {{"atomic_add", IR_ATOMIC_ADD}, {"atomic_max", IR_ATOMIC_MAX}, {"atomic_min", IR_ATOMIC_MIN},
                                                              {"atomic_or", IR_ATOMIC_OR}, {"atomic_and", IR_ATOMIC_AND}, {"atomic_xor", IR_ATOMIC_XOR}};
    int aop = -1;
    for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++)
        if (!strcmp(fname, ops[k].name)) aop = ops[k].op;
    if (aop < 0) { sema_err(c, call->loc, "unknown function 'T.%s'", fname); return sv_err(c, call->loc); }
    bool bitwise = aop == IR_ATOMIC_OR || aop == IR_ATOMIC_AND || aop == IR_ATOMIC_XOR;
    if (bitwise) {
        sval *d = pos[0];
        ir_buffer *db = d->kind == SV_BUFFER ? d->buf : d->kind == SV_ACCESS ? d->acc->buf : NULL;
        if (db && !tile_dtype_is_int(db->dtype)) {
            sema_err(c, call->loc, "T.%s needs an integer destination, but '%s' is %s", fname, db->name, tile_dtype_name(db->dtype));
            return sv_err(c, call->loc);
        }
    }
    if ((pos[0]->kind == SV_BUFFER || (pos[0]->kind == SV_ACCESS && pos[0]->acc->any_slice) || pos[1]->kind == SV_BUFFER ||
         (pos[1]->kind == SV_ACCESS && pos[1]->acc->any_slice))) {
        if (prev) { sema_err(c, call->loc, "T.%s(..., return_prev=True) needs one element as its destination, not a region", fname); return sv_err(c, call->loc); }
        return lower_region_atomic(c, fname, call, pos, aop);
    }
    if (pos[0]->kind != SV_ACCESS || pos[0]->acc->any_slice) {
        sema_err(c, pos[0]->loc, "T.%s needs an element or a region as its destination (e.g. C[i, j])", fname);
        return sv_err(c, call->loc);
    }
    sv_access *a = pos[0]->acc;
    if (a->buf->dtype == TILE_DT_BOOL) { sema_err(c, call->loc, "T.%s on a bool buffer ('%s') is not supported", fname, a->buf->name); return sv_err(c, call->loc); }
    return emit_elem_atomic(c, call, a, pos[1], aop, prev, "prev");
}

static sval *lower_alloc_var(sema_ctx *c, sema_env *env, const ast_expr *call, sval **pos, int npos) {
    /* T.alloc_var(dtype[, init]): a mutable scalar of that dtype */
    if (!c->stmts) { sema_err(c, call->loc, "T.alloc_var is run-time code, which is not allowed here"); return sv_err(c, call->loc); }
    sval *dv = npos > 0 ? pos[0] : kw_of(call, c, env, "dtype");
    sval *init = npos > 1 ? pos[1] : kw_of(call, c, env, "init");
    if (!dv) { sema_err(c, call->loc, "T.alloc_var needs a dtype, e.g. T.alloc_var(T.int32)"); return sv_err(c, call->loc); }
    tile_dtype dt = as_dtype(c, dv, "the variable dtype");
    if (dt == TILE_DT_INVALID) return sv_err(c, call->loc);
    ir_var *v = ir_var_new(c->mod, c->fn, tile_arena_printf(c->arena, "var%d", c->tmp_counter++), IR_VAR_LOCAL, promote_arith(dt), call->loc);
    if (init && init->kind == SV_EXPR && init->weak && tile_dtype_is_float(dt) && tile_dtype_is_float(init->e->dtype) && isfinite(init->e->fval) &&
        !isfinite(tile_round_to(dt, init->e->fval))) {
        sema_err(c, init->loc, "the initial value %g of T.alloc_var exceeds the largest finite %s", init->e->fval, tile_dtype_name(dt));
        return sv_err(c, call->loc);
    }
    if (init && init->kind != SV_NONE) {
        ir_expr *x = init->kind == SV_EXPR && init->weak ? cast_to(c, init->e, v->dtype) : value_for_var(c, init, v->dtype, "the T.alloc_var initialiser", call->loc);
        if (!x) return sv_err(c, call->loc);
        emit_assign(c, v, x, call->loc);
    } else {
        /* TileLang leaves a variable without init undefined; Tile makes it 0, so a read
         * before the first write gives the same value on every target */
        ir_expr *zero = tile_dtype_is_float(v->dtype) ? ir_const_float(c->mod, v->dtype, 0.0, call->loc) : ir_const_int(c->mod, v->dtype, 0, call->loc);
        emit_assign(c, v, zero, call->loc);
    }
    sval *r = sv_expr(c, ir_var_ref(c->mod, v, call->loc));
    r->fresh_var = true;
    return r;
}

/* T.int32() (any dtype called without a value) in a kernel: TIR's fresh variable, which
 * T.let(v, value) then binds; a mutable scalar here, 0 until bound (as T.alloc_var) */
sval *sema_fresh_var(sema_ctx *c, tile_dtype dt, tile_loc loc) {
    if (!c->stmts || !c->in_kernel) { sema_err(c, loc, "%s() without a value makes a variable, which only a T.Kernel can hold", tile_dtype_name(dt)); return sv_err(c, loc); }
    ir_var *v = ir_var_new(c->mod, c->fn, tile_arena_printf(c->arena, "var%d", c->tmp_counter++), IR_VAR_LOCAL, promote_arith(dt), loc);
    emit_assign(c, v, tile_dtype_is_float(v->dtype) ? ir_const_float(c->mod, v->dtype, 0.0, loc) : ir_const_int(c->mod, v->dtype, 0, loc), loc);
    sval *r = sv_expr(c, ir_var_ref(c->mod, v, loc));
    r->fresh_var = true;
    return r;
}

/* T.let(v, value): binds the variable v (made by T.int32() and friends) to value */
static sval *lower_let(sema_ctx *c, const ast_expr *call, sval **pos, int npos) {
    if (npos != 2 || pos[0]->kind != SV_EXPR || pos[0]->e->kind != IR_E_VAR || pos[0]->e->var->kind != IR_VAR_LOCAL) {
        sema_err(c, call->loc, "T.let takes a variable (made by e.g. T.int32()) and its value");
        return sv_err(c, call->loc);
    }
    ir_var *v = pos[0]->e->var;
    ir_expr *x = pos[1]->kind == SV_EXPR && pos[1]->weak ? cast_to(c, pos[1]->e, v->dtype) : value_for_var(c, pos[1], v->dtype, "the value of T.let", call->loc);
    if (!x) return sv_err(c, call->loc);
    emit_assign(c, v, x, call->loc);
    return sv_none(c, call->loc);
}

static sval *lower_reducer_op(sema_ctx *c, sema_env *env, const char *fname, const ast_expr *call, sval **pos, int npos) {
    int r = -1;
    ir_buffer *b = npos > 0 ? (pos[0]->kind == SV_BUFFER ? pos[0]->buf : pos[0]->kind == SV_ACCESS ? pos[0]->acc->buf : NULL) : NULL;
    for (int i = 0; b && i < c->nreducers; i++)
        if (c->reducers[i] == b) r = i;
    if (r < 0) { sema_err(c, call->loc, "T.%s needs a buffer made by T.alloc_reducer", fname); return sv_err(c, call->loc); }
    int op = c->reducer_ops[r];
    if (!strcmp(fname, "reducer_init")) {
        /* the identity of the reduction */
        ir_stmt *f = tile_stmt(c, IR_S_FILL, 1, call->loc);
        if (!check_tile_scope(c, call->loc, "T.reducer_init") || !to_region(c, pos[0], &f->regions[0], NULL, "T.reducer_init", "reducer")) return sv_err(c, call->loc);
        tile_dtype ct = promote_arith(b->dtype);
        ir_expr *v;
        if (op == IR_ATOMIC_ADD) v = tile_dtype_is_float(ct) ? ir_const_float(c->mod, ct, 0, call->loc) : ir_const_int(c->mod, ct, 0, call->loc);
        else if (tile_dtype_is_float(ct)) v = ir_const_float(c->mod, ct, op == IR_ATOMIC_MAX ? -INFINITY : INFINITY, call->loc);
        else {
            int bits = tile_dtype_bits(ct);
            bool sg = tile_dtype_is_signed(ct);
            int64_t mx = sg ? (int64_t)((~(uint64_t)0) >> (65 - bits)) : (int64_t)((~(uint64_t)0) >> (64 - bits));
            v = ir_const_int(c->mod, ct, op == IR_ATOMIC_MAX ? (sg ? -mx - 1 : 0) : mx, call->loc);
        }
        f->value = coerce_store(c, v, b->dtype, call->loc);
        emit(c, f);
        return sv_none(c, call->loc);
    }
    if (!strcmp(fname, "reducer_update")) {
        if (npos != 2 || pos[0]->kind != SV_ACCESS || pos[0]->acc->any_slice) { sema_err(c, call->loc, "T.reducer_update takes a reducer element and a value"); return sv_err(c, call->loc); }
        if (!c->stmts) { sema_err(c, call->loc, "T.reducer_update is run-time code, which is not allowed here"); return sv_err(c, call->loc); }
        ir_expr *x = pos[1]->kind == SV_EXPR && pos[1]->weak ? cast_to(c, pos[1]->e, promote_arith(b->dtype)) : materialize(c, pos[1]);
        if (!x) return sv_err(c, call->loc);
        ir_stmt *s = ir_stmt_new(c->mod, IR_S_ATOMIC, call->loc);
        s->buf = b;
        s->idx = pos[0]->acc->start;
        s->value = coerce_store(c, cast_to(c, x, promote_arith(b->dtype)), b->dtype, call->loc);
        s->atomic_op = op;
        emit(c, s);
        return sv_none(c, call->loc);
    }
    /* finalize_reducer(acc[, out]): the updates already combined; with out, a copy */
    if (npos >= 2) {
        sval *cp[2] = {pos[0], pos[1]};
        return lower_copy(c, call, cp, 2, false);
    }
    (void)env;
    return sv_none(c, call->loc);
}

static sval *lower_alloc(sema_ctx *c, sema_env *env, const char *fname, const ast_expr *call, sval **pos, int npos) {
    bool reducer = !strcmp(fname, "alloc_reducer");
    if (reducer) {
        int op = IR_ATOMIC_ADD;
        sval *ov = kw_of(call, c, env, "op");
        if (ov && ov->kind == SV_STRING) {
            if (!strcmp(ov->str, "max")) op = IR_ATOMIC_MAX;
            else if (!strcmp(ov->str, "min")) op = IR_ATOMIC_MIN;
            else if (strcmp(ov->str, "sum")) { sema_err(c, call->loc, "T.alloc_reducer op must be \"sum\", \"max\" or \"min\", got \"%s\"", ov->str); return sv_err(c, call->loc); }
        }
        sval *r = lower_alloc(c, env, "alloc_fragment", call, pos, npos > 2 ? 2 : npos);
        if (r->kind == SV_BUFFER && c->nreducers < 32) {
            c->reducers[c->nreducers] = r->buf;
            c->reducer_ops[c->nreducers++] = op;
        }
        return r;
    }
    bool global = !strcmp(fname, "allocate") || !strcmp(fname, "alloc_tensor") || !strcmp(fname, "zeros") || !strcmp(fname, "empty") ||
                  !strcmp(fname, "alloc_global");
    /* T.alloc_tmem: Blackwell's tensor memory, the accumulator of T.tcgen05_gemm; an on-chip
     * buffer read and written by tile operations, which a fragment is on every target */
    bool tmem = !strcmp(fname, "alloc_tmem");
    ir_scope scope = global ? IR_SCOPE_GLOBAL : !strcmp(fname, "alloc_shared") ? IR_SCOPE_SHARED
                   : !strcmp(fname, "alloc_fragment") || tmem            ? IR_SCOPE_FRAGMENT
                                                                         : IR_SCOPE_LOCAL;
    if (npos < 1 || npos > 3) { sema_err(c, call->loc, "%s() takes a shape and a dtype", fname); return sv_err(c, call->loc); }
    if (!c->stmts) { sema_err(c, call->loc, "%s() allocates at run time, which is not allowed here", fname); return sv_err(c, call->loc); }
    if (c->par_depth) { sema_err(c, call->loc, "%s() cannot be used inside a T.Parallel loop", fname); return sv_err(c, call->loc); }
    if (global && c->in_kernel) { sema_err(c, call->loc, "%s() creates a global tensor; inside a T.Kernel use T.alloc_shared, T.alloc_fragment or T.alloc_local", fname); return sv_err(c, call->loc); }
    if (!global && !c->in_kernel && scope == IR_SCOPE_SHARED) { sema_err(c, call->loc, "T.alloc_shared must be inside a `with T.Kernel(...)` block"); return sv_err(c, call->loc); }
    sval *dv = npos > 1 ? pos[1] : kw_of(call, c, env, "dtype");
    tile_dtype dt = TILE_DT_F32;
    if (dv) dt = as_dtype(c, dv, "the buffer dtype");
    else if (!global) { sema_err(c, call->loc, "%s() needs a dtype, e.g. %s((64, 64), \"float16\")", fname, fname); return sv_err(c, call->loc); }
    if (dt == TILE_DT_INVALID) return sv_err(c, call->loc);
    ir_buffer *b = declare_buffer(c, tile_arena_printf(&c->mod->arena, "%%alloc%d", c->tmp_counter++), dt, scope, pos[0], call->loc);
    if (!b) return sv_err(c, call->loc);
    b->role = IR_BUF_TEMP;
    ir_stmt *s = ir_stmt_new(c->mod, IR_S_ALLOC, call->loc);
    s->buf = b;
    emit(c, s);
    if (global) {
        if (c->nglobal_allocs == c->cap_global_allocs) {
            c->cap_global_allocs = c->cap_global_allocs ? c->cap_global_allocs * 2 : 8;
            c->global_allocs = tile_xrealloc(c->global_allocs, sizeof(ir_stmt *) * (size_t)c->cap_global_allocs);
        }
        c->global_allocs[c->nglobal_allocs++] = s;
    }
    sval *bv = sv_new(c, SV_BUFFER, call->loc);
    bv->buf = b;
    if (!strcmp(fname, "zeros")) {
        ir_stmt *f = tile_stmt(c, IR_S_FILL, 1, call->loc);
        to_region(c, bv, &f->regions[0], NULL, fname, "buffer");
        f->value = coerce_store(c, cast_to(c, ir_const_int(c->mod, TILE_DT_I32, 0, call->loc), promote_arith(dt)), dt, call->loc);
        emit(c, f);
    }
    return bv;
}

/* T.cumsum / T.cummax / T.cummin(src, dst=None, dim=0, reverse=False): an inclusive scan of
 * whole buffers along dim, into dst (src itself when dst is None). Lowered to a T.Parallel
 * nest over the other dimensions (each line is independent) around a serial walk of dim. */
static sval *lower_scan(sema_ctx *c, sema_env *env, const char *name, const ast_expr *call, sval **pos, int npos) {
    char op[32];
    snprintf(op, sizeof op, "T.%s", name);
    if (!check_tile_scope(c, call->loc, op)) return sv_err(c, call->loc);
    sval *src = npos > 0 ? pos[0] : kw_of(call, c, env, "src");
    sval *dst = npos > 1 ? pos[1] : kw_of(call, c, env, "dst");
    sval *dimv = npos > 2 ? pos[2] : kw_of(call, c, env, "dim");
    sval *revv = npos > 3 ? pos[3] : kw_of(call, c, env, "reverse");
    if (!src) { sema_err(c, call->loc, "%s needs a source buffer", op); return sv_err(c, call->loc); }
    if (dst && dst->kind == SV_NONE) dst = NULL;
    if (src->kind != SV_BUFFER || (dst && dst->kind != SV_BUFFER)) {
        sema_err(c, call->loc, "%s on a region of a buffer is not supported yet; pass whole buffers", op);
        return sv_err(c, call->loc);
    }
    ir_buffer *a = src->buf, *b = dst ? dst->buf : src->buf;
    int rank = a->rank;
    int64_t dim = 0;
    if (dimv && dimv->kind != SV_NONE && !as_const_int(c, dimv, &dim, "the scan dimension")) return sv_err(c, call->loc);
    if (dim < 0) dim += rank;
    if (rank < 1 || dim < 0 || dim >= rank) { sema_err(c, call->loc, "%s: dim is out of range for '%s' of rank %d", op, a->name, rank); return sv_err(c, call->loc); }
    bool rev = false;
    if (revv && revv->kind != SV_NONE && !py_truth(revv, &rev)) { sema_err(c, call->loc, "%s: reverse must be known at compile time", op); return sv_err(c, call->loc); }
    if (b->rank != rank) { sema_err(c, call->loc, "%s: '%s' and '%s' have different ranks", op, a->name, b->name); return sv_err(c, call->loc); }
    for (int d = 0; d < rank; d++) {
        int64_t x, y;
        if (ir_const_int_value(a->shape[d], &x) && ir_const_int_value(b->shape[d], &y) && x != y) {
            sema_err(c, call->loc, "%s: '%s' and '%s' differ in dimension %d (%lld and %lld)", op, a->name, b->name, d, (long long)x, (long long)y);
            return sv_err(c, call->loc);
        }
    }
    tile_loc loc = call->loc;
    tile_dtype ct = promote_arith(a->dtype);
    if (ct == TILE_DT_BOOL) ct = TILE_DT_I32;
    int kind = !strcmp(name, "cumsum") ? 0 : !strcmp(name, "cummax") ? 1 : 2;
    ir_var *acc = ir_var_new(c->mod, c->fn, tile_arena_printf(c->arena, "scan%d", c->tmp_counter++), IR_VAR_LOCAL, ct, loc);
    ir_var *j = ir_var_new(c->mod, c->fn, "j", IR_VAR_LOOP, TILE_DT_I32, loc);
    ir_var *iv[8];
    ir_expr *idx[8];
    int no = 0;
    for (int d = 0; d < rank; d++) {
        if (d == dim) {
            ir_expr *jr = ir_var_ref(c->mod, j, loc);
            idx[d] = rev ? int_binary(c, IR_B_SUB, int_binary(c, IR_B_SUB, cast_to(c, a->shape[d], TILE_DT_I32), ir_const_int(c->mod, TILE_DT_I32, 1, loc), loc), jr, loc) : jr;
            continue;
        }
        iv[no] = ir_var_new(c->mod, c->fn, tile_arena_printf(c->arena, "i%d", d), IR_VAR_LOOP, TILE_DT_I32, loc);
        idx[d] = ir_var_ref(c->mod, iv[no], loc);
        no++;
    }
    ir_expr *x = cast_to(c, ir_load(c->mod, a, idx, loc), ct);
    ir_expr *av = ir_var_ref(c->mod, acc, loc);
    ir_expr *nv = kind == 0 ? ir_binary(c->mod, IR_B_ADD, av, x, loc)
                : ir_select(c->mod, ir_binary(c->mod, IR_B_EQ, ir_var_ref(c->mod, j, loc), ir_const_int(c->mod, TILE_DT_I32, 0, loc), loc), x,
                            ir_binary(c->mod, kind == 1 ? IR_B_MAX : IR_B_MIN, av, x, loc), loc);
    ir_stmt *up = ir_stmt_new(c->mod, IR_S_ASSIGN, loc);
    up->var = acc;
    up->value = nv;
    ir_stmt *st = ir_stmt_new(c->mod, IR_S_STORE, loc);
    st->buf = b;
    st->idx = TILE_NEW_ARRAY(&c->mod->arena, ir_expr *, rank);
    for (int d = 0; d < rank; d++) st->idx[d] = idx[d];
    st->value = coerce_store(c, ir_var_ref(c->mod, acc, loc), b->dtype, loc);
    ir_stmt *two[2] = {up, st};
    ir_stmt *walk = ir_stmt_new(c->mod, IR_S_FOR, loc);
    walk->var = j;
    walk->lo = ir_const_int(c->mod, TILE_DT_I32, 0, loc);
    walk->extent = cast_to(c, a->shape[dim], TILE_DT_I32);
    walk->loop_kind = IR_LOOP_SERIAL;
    walk->body[0] = ir_seq(c->mod, two, 2, loc);
    ir_stmt *init = ir_stmt_new(c->mod, IR_S_ASSIGN, loc);
    init->var = acc;
    init->value = tile_dtype_is_float(ct) ? ir_const_float(c->mod, ct, 0, loc) : ir_const_int(c->mod, ct, 0, loc);
    ir_stmt *line2[2] = {init, walk};
    ir_stmt *body = ir_seq(c->mod, line2, 2, loc);
    for (int k = no - 1; k >= 0; k--) {
        int d = k;
        for (int q = 0, seen = 0; q < rank; q++) if (q != dim) { if (seen == k) { d = q; break; } seen++; }
        ir_stmt *f = ir_stmt_new(c->mod, IR_S_FOR, loc);
        f->var = iv[k];
        f->lo = ir_const_int(c->mod, TILE_DT_I32, 0, loc);
        f->extent = cast_to(c, a->shape[d], TILE_DT_I32);
        f->loop_kind = IR_LOOP_PARALLEL;
        f->par_group_depth = k == 0 ? no : 0;
        f->body[0] = body;
        body = f;
    }
    emit(c, body);
    return sv_none(c, loc);
}

/* ---------- warp specialisation and mbarriers (T.ws, T.alloc_barrier) ----------
 * TileLang's explicit warp specialisation runs the body of `with T.ws(g):` on warp group g
 * (threads 128g .. 128g+127) only, and orders the groups with mbarriers: arrive counts
 * arrivals, and a wait on parity p returns once the barrier's phase of that parity has
 * completed. Tile runs such a kernel in program order for the whole block: every T.ws body,
 * tile operations as elsewhere. That is one of the interleavings the barriers allow, so it
 * gives the program's result, provided each wait is already satisfied when program order
 * reaches it; a wait that needs a later arrival (a producer running ahead of its consumer)
 * cannot be run that way. So each barrier counts its arrivals at run time (a local int32
 * per barrier: a group of n threads arriving adds n) and each wait checks, on every target,
 * that the phase it waits for is complete (phase = arrivals // arrive_count), an error at
 * the wait otherwise. */
static bool sync_scope(sema_ctx *c, const ast_expr *call, const char *op) {
    if (!c->in_kernel || !c->stmts || !c->kernel) { sema_err(c, call->loc, "%s must be inside a `with T.Kernel(...)` block", op); return false; }
    if (c->par_depth) { sema_err(c, call->loc, "%s cannot be inside a T.Parallel loop", op); return false; }
    if (!c->sync_used) { c->sync_used = true; c->sync_loc = call->loc; }
    return true;
}

static sval *lower_alloc_barrier(sema_ctx *c, sema_env *env, const ast_expr *call, sval **pos, int npos) {
    if (!sync_scope(c, call, "T.alloc_barrier")) return sv_err(c, call->loc);
    sval *cv = npos > 0 ? pos[0] : kw_of(call, c, env, "arrive_count");
    if (!cv || npos > 1) { sema_err(c, call->loc, "T.alloc_barrier takes one arrive count or a list of them (T.alloc_barrier(arrive_count=128))"); return sv_err(c, call->loc); }
    int n = cv->kind == SV_TUPLE ? cv->nitems : 1;
    if (n < 1 || n > 64) { sema_err(c, cv->loc, "T.alloc_barrier needs 1 to 64 arrive counts, got %d", n); return sv_err(c, call->loc); }
    if (c->nbarriers >= 16) { sema_err(c, call->loc, "a kernel may allocate at most 16 barrier arrays"); return sv_err(c, call->loc); }
    int64_t *counts = TILE_NEW_ARRAY(&c->mod->arena, int64_t, n);
    for (int i = 0; i < n; i++) {
        sval *x = cv->kind == SV_TUPLE ? cv->items[i] : cv;
        if (!as_const_int(c, x, &counts[i], "a barrier's arrive count")) return sv_err(c, call->loc);
        if (counts[i] < 1 || counts[i] > 1024) { sema_err(c, x->loc, "a barrier's arrive count must be between 1 and 1024, got %lld", (long long)counts[i]); return sv_err(c, call->loc); }
    }
    sval *shape = sv_new(c, SV_TUPLE, call->loc);
    shape->nitems = 1;
    shape->items = TILE_NEW_ARRAY(c->arena, sval *, 1);
    shape->items[0] = sv_weak_int(c, n, call->loc);
    sval *dt = sv_new(c, SV_DTYPE, call->loc);
    dt->dt = TILE_DT_I32;
    sval *ap[2] = {shape, dt};
    ast_expr plain = *call;
    plain.nkwargs = 0;
    sval *bv = lower_alloc(c, env, "alloc_local", &plain, ap, 2);
    if (bv->kind != SV_BUFFER) return bv;
    for (int i = 0; i < n; i++) {
        ir_stmt *st = ir_stmt_new(c->mod, IR_S_STORE, call->loc);
        st->buf = bv->buf;
        st->idx = TILE_NEW_ARRAY(&c->mod->arena, ir_expr *, 1);
        st->idx[0] = ir_const_int(c->mod, TILE_DT_I32, i, call->loc);
        st->value = ir_const_int(c->mod, TILE_DT_I32, 0, call->loc);
        emit(c, st);
    }
    c->barriers[c->nbarriers] = bv->buf;
    c->bar_counts[c->nbarriers++] = counts;
    return bv;
}

/* the barrier an operand names: its array (index into c->barriers) and element */
static bool barrier_operand(sema_ctx *c, sval *v, const char *op, int *which, ir_expr **elem) {
    ir_buffer *b = v && v->kind == SV_BUFFER ? v->buf : v && v->kind == SV_ACCESS && !v->acc->any_slice && v->acc->n == 1 ? v->acc->buf : NULL;
    for (int i = 0; b && i < c->nbarriers; i++)
        if (c->barriers[i] == b) {
            *which = i;
            if (v->kind == SV_ACCESS) { *elem = v->acc->start[0]; return true; }
            int64_t n;
            if (ir_const_int_value(b->shape[0], &n) && n == 1) { *elem = ir_const_int(c->mod, TILE_DT_I32, 0, v->loc); return true; }
            sema_err(c, v->loc, "%s: this T.alloc_barrier holds several barriers; name one (bars[i])", op);
            return false;
        }
    if (!v || !v->poison) sema_err(c, v ? v->loc : (tile_loc){0}, "%s needs a barrier made by T.alloc_barrier (or one element of such an array), got %s", op, v ? sv_describe(v) : "nothing");
    return false;
}

static sval *lower_barrier_op(sema_ctx *c, sema_env *env, const char *name, const ast_expr *call, sval **pos, int npos) {
    char op[40];
    snprintf(op, sizeof op, "T.%s", name);
    if (!sync_scope(c, call, op)) return sv_err(c, call->loc);
    bool wait = !strcmp(name, "barrier_wait") || !strcmp(name, "mbarrier_wait_parity");
    bool expect = strstr(name, "expect_tx") != NULL;
    sval *bar = npos > 0 ? pos[0] : kw_of(call, c, env, "mbarrier");
    if (!bar) bar = kw_of(call, c, env, "barrier");
    int which;
    ir_expr *k;
    if (!barrier_operand(c, bar, op, &which, &k)) return sv_err(c, call->loc);
    k = cast_to(c, k, TILE_DT_I32);
    int64_t n = 0, kc;
    ir_const_int_value(c->barriers[which]->shape[0], &n);
    if (ir_const_int_value(k, &kc) && (kc < 0 || kc >= n)) { sema_err(c, bar->loc, "%s: barrier %lld of an array of %lld", op, (long long)kc, (long long)n); return sv_err(c, call->loc); }
    ir_expr **idx = TILE_NEW_ARRAY(&c->mod->arena, ir_expr *, 1);
    idx[0] = k;
    ir_expr *arrived = ir_load(c->mod, c->barriers[which], idx, call->loc);
    if (expect) {
        /* the bytes a TMA copy will deliver: Tile's copies are complete when they return */
        sval *tx = npos > 1 ? pos[1] : kw_of(call, c, env, "tx");
        if (tx && !materialize(c, tx)) return sv_err(c, call->loc);
        return sv_none(c, call->loc);
    }
    if (!wait) {
        /* every thread of the group running it arrives once (mbarrier_arrive's cta_id and
         * similar extras name where to arrive in a cluster: one block here) */
        int g = c->ws_threads ? c->ws_threads : c->kernel->threads;
        ir_stmt *st = ir_stmt_new(c->mod, IR_S_STORE, call->loc);
        st->buf = c->barriers[which];
        st->idx = idx;
        st->value = int_binary(c, IR_B_ADD, arrived, ir_const_int(c->mod, TILE_DT_I32, g, call->loc), call->loc);
        emit(c, st);
        return sv_none(c, call->loc);
    }
    sval *pv = npos > 1 ? pos[1] : kw_of(call, c, env, "parity");
    if (!pv) { sema_err(c, call->loc, "%s needs the parity of the phase to wait for (%s(bar, parity))", op, op); return sv_err(c, call->loc); }
    ir_expr *parity = as_int_expr(c, pv, "the parity");
    if (!parity) return sv_err(c, call->loc);
    parity = cast_to(c, parity, TILE_DT_I32);
    /* the element's arrive count: a constant, or chosen by the run-time index */
    int64_t *cnt = c->bar_counts[which];
    ir_expr *count = ir_const_int(c->mod, TILE_DT_I32, cnt[n - 1], call->loc);
    bool same = true;
    for (int64_t j = 0; j < n; j++) same &= cnt[j] == cnt[n - 1];
    for (int64_t i = n - 2; i >= 0 && !same; i--) {
        ir_expr *is = ir_binary(c->mod, IR_B_EQ, k, ir_const_int(c->mod, TILE_DT_I32, i, call->loc), call->loc);
        count = ir_select(c->mod, is, ir_const_int(c->mod, TILE_DT_I32, cnt[i], call->loc), count, call->loc);
    }
    /* the phase with this parity has completed when the current phase's parity differs */
    ir_expr *phase = int_binary(c, IR_B_FLOORDIV, arrived, count, call->loc);
    ir_expr *diff = int_binary(c, IR_B_FLOORMOD, int_binary(c, IR_B_ADD, phase, parity, call->loc), ir_const_int(c->mod, TILE_DT_I32, 2, call->loc), call->loc);
    ir_stmt *a = ir_stmt_new(c->mod, IR_S_ASSERT, call->loc);
    a->cond = ir_binary(c->mod, IR_B_EQ, diff, ir_const_int(c->mod, TILE_DT_I32, 1, call->loc), call->loc);
    a->msg = tile_arena_printf(&c->mod->arena,
                               "%s: the phase waited for has not completed when program order reaches this wait; Tile runs warp-specialised code "
                               "in program order, so a wait for arrivals that come later in the program (a producer running ahead of its consumer) "
                               "is not supported yet",
                               op);
    emit(c, a);
    return sv_none(c, call->loc);
}

/* with T.ws(g, ...): the body, in program order, for the whole block; arrivals inside count
 * the threads of the named warp groups */
static void lower_ws(sema_ctx *c, sema_env *env, const ast_stmt *s) {
    const ast_expr *k = s->with_items[0];
    if (s->with_targets[0]) { sema_err(c, s->with_targets[0]->loc, "`with T.ws(...)` has no value to name with 'as'"); return; }
    if (!sync_scope(c, k, "T.ws")) return;
    if (k->nitems < 1 || k->nkwargs) { sema_err(c, k->loc, "T.ws takes the warp group indices it runs on (T.ws(0), T.ws(0, 1))"); return; }
    int threads = c->kernel->threads, groups = 0;
    for (int i = 0; i < k->nitems; i++) {
        int64_t g;
        if (!as_const_int(c, lower_expr(c, env, k->items[i]), &g, "a warp group index")) return;
        if (g < 0 || g * 128 >= threads) {
            sema_err(c, k->items[i]->loc, "T.ws(%lld) names warp group %lld, but the block has %d threads (%d warp group%s of 128)", (long long)g, (long long)g, threads,
                     (threads + 127) / 128, (threads + 127) / 128 == 1 ? "" : "s");
            return;
        }
        groups += (int)(threads - g * 128 < 128 ? threads - g * 128 : 128);
    }
    int saved = c->ws_threads;
    c->ws_threads = groups;
    ir_stmt *body = lower_body(c, env, &s->body, s->loc);
    c->ws_threads = saved;
    if (body) emit(c, body);
}

/* T.tma_copy(src, dst, barrier=bar): a T.copy; the barrier's expected bytes are delivered when
 * it returns */
static sval *lower_copy(sema_ctx *c, const ast_expr *call, sval **pos, int npos, bool tma);
static sval *lower_tma_copy(sema_ctx *c, sema_env *env, const ast_expr *call, sval **pos, int npos) {
    sval *bar = kw_of(call, c, env, "barrier");
    if (bar && bar->kind != SV_NONE) {
        int which;
        ir_expr *k;
        if (!sync_scope(c, call, "T.tma_copy") || !barrier_operand(c, bar, "T.tma_copy(barrier=...)", &which, &k)) return sv_err(c, call->loc);
    }
    return lower_copy(c, call, pos, npos, true);
}

/* T.im2col(img, col, nhw_step, c_step, kernel, stride, dilation, pad) (also T.c2d_im2col):
 * the im2col tile of a 2-D convolution over an NHWC image, TileLang's definition: element
 * (i, j) of the col region's last two dimensions (block_m x block_k) is, with
 * m = nhw_step * block_m + i, k = c_step * block_k + j and OH, OW the output size,
 *   img[m // (OH*OW), h, w, k % C], h = (m % (OH*OW)) // OW * stride + k // (kernel*C) * dilation - pad,
 *                                   w = m % OW * stride + (k // C) % kernel * dilation - pad,
 * and 0 where h or w is outside the image (the padding) or m is past the last image (TileLang's
 * guard of global reads). Lowered as a T.Parallel nest of element copies. */
static sval *lower_im2col(sema_ctx *c, sema_env *env, const char *name, const ast_expr *call, sval **pos, int npos) {
    static const char *const kws[] = {"img", "col", "nhw_step", "c_step", "kernel", "stride", "dilation", "pad", "eviction_policy", "annotations", NULL};
    char op[32];
    snprintf(op, sizeof op, "T.%s", name);
    check_kwargs(c, call, op, kws);
    sval *arg[8];
    for (int i = 0; i < 8; i++) {
        arg[i] = i < npos ? pos[i] : kw_of(call, c, env, kws[i]);
        if (!arg[i]) { sema_err(c, call->loc, "%s needs the argument '%s'", op, kws[i]); return sv_err(c, call->loc); }
    }
    if (!check_tile_scope(c, call->loc, op)) return sv_err(c, call->loc);
    ir_region src, dst;
    if (!to_region(c, arg[0], &src, NULL, op, "image") || !to_region(c, arg[1], &dst, NULL, op, "destination")) return sv_err(c, call->loc);
    ir_buffer *img = src.buf;
    if (arg[0]->kind != SV_BUFFER || img->rank != 4) {
        sema_err(c, arg[0]->loc, "the image of %s must be a whole 4-D (N, H, W, C) tensor", op);
        return sv_err(c, call->loc);
    }
    if (dst.buf->rank < 2) { sema_err(c, arg[1]->loc, "the destination of %s must have at least 2 dimensions", op); return sv_err(c, call->loc); }
    if (img->dtype != dst.buf->dtype) {
        sema_err(c, call->loc, "%s: the image is %s but the destination is %s; they must have the same dtype", op, tile_dtype_name(img->dtype),
                 tile_dtype_name(dst.buf->dtype));
        return sv_err(c, call->loc);
    }
    ir_expr *nhw = as_int_expr(c, arg[2], "the nhw_step of T.im2col"), *cst = as_int_expr(c, arg[3], "the c_step of T.im2col");
    /* kernel, stride, dilation, pad: integers, constants or sizes (T.const("K")) */
    ir_expr *par[4];
    static const char *const pn[4] = {"the kernel size of T.im2col", "the stride of T.im2col", "the dilation of T.im2col", "the padding of T.im2col"};
    for (int q = 0; q < 4; q++) {
        par[q] = as_int_expr(c, arg[4 + q], pn[q]);
        if (!par[q]) return sv_err(c, call->loc);
        par[q] = cast_to(c, par[q], TILE_DT_I32);
        int64_t v;
        if (ir_const_int_value(par[q], &v) && (q < 3 ? v < 1 : v < 0)) {
            sema_err(c, arg[4 + q]->loc, "%s must be %s, got %lld", pn[q], q < 3 ? "positive" : "0 or more", (long long)v);
            return sv_err(c, call->loc);
        }
    }
    if (!nhw || !cst) return sv_err(c, call->loc);
    tile_loc loc = call->loc;
#define K_(v) ir_const_int(c->mod, TILE_DT_I32, (v), loc)
#define B_(o, a, b) int_binary(c, IR_B_##o, (a), (b), loc)
    ir_expr *KK = par[0], *ST = par[1], *DL = par[2], *PD = par[3];
    int nd = dst.buf->rank;
    ir_expr *bm = dst.extent[nd - 2], *bk = dst.extent[nd - 1];
    ir_expr *H = cast_to(c, img->shape[1], TILE_DT_I32), *W = cast_to(c, img->shape[2], TILE_DT_I32), *C = cast_to(c, img->shape[3], TILE_DT_I32);
    ir_expr *span = B_(ADD, B_(MUL, B_(SUB, KK, K_(1)), DL), K_(1)); /* (kernel - 1) * dilation + 1 */
    ir_expr *oh = B_(ADD, B_(FLOORDIV, B_(SUB, B_(ADD, H, B_(MUL, K_(2), PD)), span), ST), K_(1));
    ir_expr *ow = B_(ADD, B_(FLOORDIV, B_(SUB, B_(ADD, W, B_(MUL, K_(2), PD)), span), ST), K_(1));
    ir_var *iv[8];
    ir_expr *ext[8];
    for (int d = 0; d < nd; d++) {
        /* the leading dimensions of the destination stay at their start (NULL: no loop) */
        iv[d] = d >= nd - 2 ? ir_var_new(c->mod, c->fn, tile_arena_printf(c->arena, "im%d", d), IR_VAR_LOOP, TILE_DT_I32, loc) : NULL;
        ext[d] = d >= nd - 2 ? cast_to(c, dst.extent[d], TILE_DT_I32) : NULL;
    }
    ir_expr *i = ir_var_ref(c->mod, iv[nd - 2], loc), *j = ir_var_ref(c->mod, iv[nd - 1], loc);
    ir_expr *m = B_(ADD, B_(MUL, cast_to(c, nhw, TILE_DT_I32), cast_to(c, bm, TILE_DT_I32)), i);
    ir_expr *k = B_(ADD, B_(MUL, cast_to(c, cst, TILE_DT_I32), cast_to(c, bk, TILE_DT_I32)), j);
    ir_expr *ohw = B_(MUL, oh, ow);
    ir_expr *h = B_(SUB, B_(ADD, B_(MUL, B_(FLOORDIV, B_(FLOORMOD, m, ohw), ow), ST), B_(MUL, B_(FLOORDIV, k, B_(MUL, KK, C)), DL)), PD);
    ir_expr *w = B_(SUB, B_(ADD, B_(MUL, B_(FLOORMOD, m, ow), ST), B_(MUL, B_(FLOORMOD, B_(FLOORDIV, k, C), KK), DL)), PD);
    ir_expr *n = B_(FLOORDIV, m, ohw);
    ir_expr **si = TILE_NEW_ARRAY(&c->mod->arena, ir_expr *, 4);
    si[0] = n;
    si[1] = h;
    si[2] = w;
    si[3] = B_(FLOORMOD, k, C);
    ir_expr *inb = sema_in_bounds(c, img, si, loc);
    sema_note_read(c, img);
    ir_expr *x = ir_load(c->mod, img, si, loc);
    if (inb) {
        ir_expr *fill = sema_safe_value(c, img, loc);
        x = ir_select(c->mod, inb, x, fill ? fill : cast_to(c, K_(0), img->dtype), loc);
    }
    ir_expr *din;
    ir_stmt *st_ = ir_stmt_new(c->mod, IR_S_STORE, loc);
    st_->buf = dst.buf;
    st_->idx = region_elem(c, &dst, iv, &din, loc);
    st_->value = x;
    ir_stmt *body = guard_stmt(c, din, st_, loc);
    emit(c, parallel_nest(c, 2, ext + nd - 2, iv + nd - 2, body, loc));
#undef K_
#undef B_
    return sv_none(c, call->loc);
}

/* T.tcgen05_gemm(A, B, C, transpose_A, transpose_B, policy, clear_accum, mbar=bar): Blackwell's
 * asynchronous MMA into tensor memory. Tile's gemm completes before the next statement, so it
 * is a T.gemm followed by the completion arrival on bar (one arrival, as tcgen05.commit makes;
 * mbar=None or no mbar: none). The accumulator is a T.alloc_tmem buffer, which is an on-chip buffer like
 * a fragment on every target. */
static sval *lower_tcgen05_gemm(sema_ctx *c, sema_env *env, const ast_expr *call, sval **pos, int npos) {
    sval *u2 = kw_of(call, c, env, "use_2cta");
    bool two = false;
    if (u2 && py_truth(u2, &two) && two) {
        sema_err(c, call->loc, "T.tcgen05_gemm(use_2cta=True) (an MMA shared by the two blocks of a cluster) is not supported yet");
        return sv_err(c, call->loc);
    }
    return lower_gemm(c, env, call, pos, npos, true);
}

sval *lower_tile_call(sema_ctx *c, sema_env *env, const char *name, const ast_expr *call, sval **pos, int npos, bool *handled) {
    *handled = true;
    c->tile_scope = env;
    /* T.async_copy: Tile's copies complete before the next statement, which is what
     * every explicit wait (T.ptx_wait_group) after it asks for */
    if (!strcmp(name, "copy") || !strcmp(name, "async_copy")) {
        /* T.copy(src=..., dst=...): the keyword forms of the two operands */
        sval *sd[2] = {npos > 0 ? pos[0] : kw_of(call, c, env, "src"), npos > 1 ? pos[1] : kw_of(call, c, env, "dst")};
        if (npos < 2 && sd[0] && sd[1]) return lower_copy(c, call, sd, 2, false);
        return lower_copy(c, call, pos, npos, false);
    }
    if (!strcmp(name, "tma_copy")) return lower_tma_copy(c, env, call, pos, npos);
    if (!strcmp(name, "let")) return lower_let(c, call, pos, npos);
    if (!strcmp(name, "im2col") || !strcmp(name, "c2d_im2col")) return lower_im2col(c, env, name, call, pos, npos);
    if (!strcmp(name, "alloc_barrier")) return lower_alloc_barrier(c, env, call, pos, npos);
    if (strstr(name, "barrier_")) return lower_barrier_op(c, env, name, call, pos, npos);
    if (!strcmp(name, "reshape") || !strcmp(name, "view")) return lower_view(c, env, name, call, pos, npos);
    /* views as operands of the other tile operations: through temporaries (view_operand) */
    int nview = 0;
    for (int i = 0; i < npos; i++) {
        ir_buffer *vb = pos[i]->kind == SV_BUFFER ? pos[i]->buf : pos[i]->kind == SV_ACCESS ? (pos[i]->acc->view ? pos[i]->acc->view : pos[i]->acc->buf) : NULL;
        nview += sema_view_base(c, vb) != NULL;
    }
    if (nview && (!strcmp(name, "fill") || !strcmp(name, "clear") || !strcmp(name, "gemm") || !strncmp(name, "reduce_", 7) ||
                  !strcmp(name, "cumsum") || !strcmp(name, "cummax") || !strcmp(name, "cummin"))) {
        sval *np[8], *orig[8];
        ir_buffer *back[8] = {0};
        if (npos > 8) npos = 8;
        for (int i = 0; i < npos; i++) {
            orig[i] = pos[i];
            bool out = (i == 0 && (!strcmp(name, "fill") || !strcmp(name, "clear"))) || (i == 2 && !strcmp(name, "gemm")) ||
                       (i == 1 && (!strncmp(name, "reduce_", 7) || !strncmp(name, "cum", 3))) || (i == 0 && !strncmp(name, "cum", 3) && npos == 1);
            bool in = !(i == 0 && (!strcmp(name, "fill") || !strcmp(name, "clear"))) && !(i == 1 && !strncmp(name, "cum", 3));
            if (i == 1 && !strncmp(name, "reduce_", 7)) in = !kw_bool(c, env, call, "clear", pos, npos, 3, true);
            if (i == 2 && !strcmp(name, "gemm")) {
                sval *ca = kw_of(call, c, env, "clear_accum");
                bool clr = false;
                in = !(ca && py_truth(ca, &clr) && clr);
            }
            if (pos[i]->kind == SV_ACCESS && pos[i]->acc->view) {
                /* a head element of a view: the operand is the view itself from there */
                sema_err(c, pos[i]->loc, "T.%s on an element of a view made by T.reshape / T.view is not supported yet; pass the whole view or a slice", name);
                return sv_err(c, call->loc);
            }
            np[i] = view_operand(c, pos[i], in, out, tile_arena_printf(c->arena, "T.%s", name), &back[i]);
            if (np[i]->poison) return sv_err(c, call->loc);
        }
        sval *r = lower_tile_call(c, env, name, call, np, npos, handled);
        for (int i = 0; i < npos; i++) view_write_back(c, back[i], orig[i]);
        return r;
    }
    if (!strcmp(name, "fill")) return lower_fill(c, call, pos, npos, false);
    if (!strcmp(name, "clear")) return lower_fill(c, call, pos, npos, true);
    /* T.wgmma_gemm: Hopper's asynchronous issue (T.wait_wgmma waits for it); Tile's gemm is
     * complete when it returns, which is what the wait asks for */
    if (!strcmp(name, "gemm") || !strcmp(name, "wgmma_gemm")) return lower_gemm(c, env, call, pos, npos, false);
    if (!strcmp(name, "tcgen05_gemm")) return lower_tcgen05_gemm(c, env, call, pos, npos);
    if (!strcmp(name, "tcgen05_mma_arrive")) {
        /* the completion of the MMAs issued before it: one arrival (Tile's are complete) */
        int which;
        ir_expr *k;
        sval *bar = npos > 0 ? pos[0] : kw_of(call, c, env, "mbar");
        if (npos > 1 || !bar) { sema_err(c, call->loc, "T.tcgen05_mma_arrive takes one barrier"); return sv_err(c, call->loc); }
        if (!sync_scope(c, call, "T.tcgen05_mma_arrive") || !barrier_operand(c, bar, "T.tcgen05_mma_arrive", &which, &k)) return sv_err(c, call->loc);
        emit_arrive_one(c, which, k, call->loc);
        return sv_none(c, call->loc);
    }
    if (!strncmp(name, "reduce_", 7)) return lower_reduce(c, env, name, call, pos, npos);
    if (!strncmp(name, "atomic_", 7)) return lower_atomic(c, env, name, call, pos, npos);
    if (!strcmp(name, "alloc_var")) return lower_alloc_var(c, env, call, pos, npos);
    if (!strcmp(name, "cumsum") || !strcmp(name, "cummax") || !strcmp(name, "cummin")) return lower_scan(c, env, name, call, pos, npos);
    if (!strcmp(name, "reducer_init") || !strcmp(name, "reducer_update") || !strcmp(name, "finalize_reducer"))
        return lower_reducer_op(c, env, name, call, pos, npos);
    if (!strncmp(name, "alloc", 5) || !strcmp(name, "zeros") || !strcmp(name, "empty")) return lower_alloc(c, env, name, call, pos, npos);
    *handled = false;
    return NULL;
}

/* ---------- return ---------- */
static void lower_return(sema_ctx *c, sema_env *env, const ast_stmt *s, bool top_level) {
    if (c->inline_depth) { sema_err(c, s->loc, "'return' is only supported as the last statement of an inlined function"); return; }
    if (!top_level) { sema_err(c, s->loc, "'return' must be the last statement of the kernel, not inside a loop or branch"); return; }
    if (!s->value) { c->returned_done = true; return; }
    if (c->fn && c->fn->form == IR_FORM_TILE && !c->eager) { sema_err(c, s->loc, "a T.prim_func returns nothing; write results into an output tensor (or use @tilelang.jit(out_idx=...))"); return; }
    sval *v = lower_expr(c, env, s->value);
    sval *one[1] = {v};
    sval **items = v->kind == SV_TUPLE ? v->items : one;
    int n = v->kind == SV_TUPLE ? v->nitems : 1;
    c->returned = tile_xrealloc(c->returned, sizeof(ir_buffer *) * (size_t)(n ? n : 1));
    c->nreturned = 0;
    for (int i = 0; i < n; i++) {
        sval *x = items[i];
        if (x->kind != SV_BUFFER) { if (x->kind != SV_NONE) sema_err(c, x->loc, "a kernel can only return tensors it allocated, got %s", sv_describe(x)); continue; }
        if (x->buf->role != IR_BUF_TEMP || x->buf->scope != IR_SCOPE_GLOBAL) {
            sema_err(c, x->loc, "'%s' is a parameter; a kernel returns tensors it allocates itself (with allocate or alloc_tensor)", x->buf->name);
            continue;
        }
        for (int k = 0; k < c->nreturned; k++)
            if (c->returned[k] == x->buf) { sema_err(c, x->loc, "'%s' is returned twice", x->buf->name); }
        c->returned[c->nreturned++] = x->buf;
    }
    /* check the return annotation when there is one */
    const ast_expr *ann = env->func ? env->func->returns : NULL;
    if (ann && n == 1 && c->nreturned == 1 && ann->kind == AST_E_SUBSCRIPT) {
        const ast_expr *const *it = (const ast_expr *const *)ann->items;
        int na = ann->nitems;
        if (na > 1) { /* Tensor[M, N, "float16"]: the last item may be the dtype */
            const ast_expr *l = it[na - 1];
            const char *nm = l->kind == AST_E_STRING ? l->sval : (l->kind == AST_E_NAME || l->kind == AST_E_ATTR) ? l->name : NULL;
            if (nm && tile_dtype_parse(nm) != TILE_DT_INVALID) na--;
        }
        if (na == 1 && (it[0]->kind == AST_E_TUPLE || it[0]->kind == AST_E_LIST)) { na = it[0]->nitems; it = (const ast_expr *const *)it[0]->items; }
        ir_buffer *b = c->returned[0];
        if (na != b->rank) sema_err(c, ann->loc, "the return annotation has %d dimensions but '%s' has %d", na, b->name, b->rank);
        else
            for (int d = 0; d < na; d++) {
                sval *dv = lower_expr(c, env, it[d]);
                ir_expr *x = dv->kind == SV_EXPR ? materialize(c, dv) : NULL;
                int64_t p, q;
                bool same = x && ((x->kind == IR_E_VAR && b->shape[d]->kind == IR_E_VAR && x->var == b->shape[d]->var) ||
                                  (ir_const_int_value(x, &p) && ir_const_int_value(b->shape[d], &q) && p == q));
                bool comparable = x && (x->kind == IR_E_VAR || x->kind == IR_E_CONST) && (b->shape[d]->kind == IR_E_VAR || b->shape[d]->kind == IR_E_CONST);
                if (comparable && !same) {
                    tile_strbuf sb = {0};
                    ir_print_expr(b->shape[d], &sb);
                    sema_err(c, it[d]->loc, "dimension %d of the returned tensor '%s' is %s, not what the return annotation says", d, b->name, sb.data);
                    tile_sb_free(&sb);
                }
            }
    }
    c->returned_done = true;
}

/* ---------- statements ---------- */
static void lower_if(sema_ctx *c, sema_env *env, const ast_stmt *s) {
    sval *cv = lower_expr(c, env, s->cond);
    if (cv->kind != SV_EXPR && cv->kind != SV_ACCESS) {
        /* None is false; dtypes, strings, buffers are true (Python truthiness) */
        bool t = cv->kind != SV_NONE;
        if (cv->kind == SV_TUPLE) t = cv->nitems > 0;
        lower_block(c, env, t ? &s->body : &s->orelse);
        return;
    }
    if (sv_is_const(cv)) {
        bool t = tile_dtype_is_float(cv->e->dtype) ? cv->e->fval != 0 : cv->e->ival != 0;
        lower_block(c, env, t ? &s->body : &s->orelse);
        return;
    }
    if (!c->stmts) { sema_err(c, s->cond->loc, "this condition is only known at run time, but this code runs at compile time"); return; }
    ir_expr *x = to_bool(c, materialize(c, cv));
    if (!x) return;
    ir_stmt *st = ir_stmt_new(c->mod, IR_S_IF, s->loc);
    st->cond = x;
    st->body = TILE_NEW_ARRAY(&c->mod->arena, ir_stmt *, 2);
    st->nbody = 2;
    st->body[0] = lower_body(c, env, &s->body, s->loc);
    st->body[1] = s->orelse.len ? lower_body(c, env, &s->orelse, s->loc) : NULL;
    emit(c, st);
}

static void lower_while(sema_ctx *c, sema_env *env, const ast_stmt *s) {
    if (s->orelse.len) { sema_err(c, s->loc, "while ... else is not supported"); return; }
    if (!c->stmts) { sema_err(c, s->loc, "loops are run-time code, which is not allowed here"); return; }
    /* the condition is evaluated before each iteration: lower it into a fresh list to
     * reject conditions that would need hoisted statements */
    tile_vec pre = {0};
    tile_vec *saved = c->stmts;
    c->stmts = &pre;
    ir_expr *x = to_bool(c, materialize(c, lower_expr(c, env, s->cond)));
    c->stmts = saved;
    if (pre.len) sema_err(c, s->cond->loc, "a while condition cannot contain sum(...) or other expressions that need statements");
    tile_vec_free(&pre);
    if (!x) return;
    ir_stmt *w = ir_stmt_new(c->mod, IR_S_WHILE, s->loc);
    w->cond = x;
    c->loop_depth++;
    w->body = one_body(c, lower_body(c, env, &s->body, s->loc));
    c->loop_depth--;
    w->nbody = 1;
    emit(c, w);
}

static void lower_stmt_in(sema_ctx *c, sema_env *env, const ast_stmt *s, bool top_level) {
    switch (s->kind) {
    case AST_S_EXPR:
        if (s->value && s->value->kind == AST_E_STRING) return; /* docstring */
        lower_expr(c, env, s->value);
        return;
    case AST_S_ASSIGN: {
        sval *v = lower_expr(c, env, s->value);
        for (int i = 0; i < s->ntargets; i++) assign_target(c, env, s->targets[i], v, s->loc);
        return;
    }
    case AST_S_AUGASSIGN: lower_augassign(c, env, s); return;
    case AST_S_ANNASSIGN: {
        const ast_expr *t = s->targets[0];
        if (t->kind == AST_E_NAME && !s->value && c->eager_def) {
            sema_binding *pb = env_lookup(env, t->name);
            if (pb && pb->val->kind == SV_OPAQUE && pb->val->str && !strcmp(pb->val->str, "@eager-tensor")) {
                sema_declare_eager_tensor(c, env, s);
                return;
            }
            if (pb && pb->val->kind == SV_BUFFER) return; /* re-annotating a declared tensor */
        }
        sval *dv = lower_expr(c, env, s->annotation);
        if (t->kind != AST_E_NAME) {
            if (s->value) assign_target(c, env, t, lower_expr(c, env, s->value), s->loc);
            return;
        }
        tile_dtype dt = dv->kind == SV_BUILTIN || dv->kind == SV_DTYPE || dv->kind == SV_STRING ? as_dtype(c, dv, "the variable type") : TILE_DT_INVALID;
        if (dt == TILE_DT_INVALID) return;
        if (!s->value) { sema_err(c, s->loc, "a declared variable needs an initial value"); return; }
        if (!c->stmts) { assign_name(c, env, t->name, lower_expr(c, env, s->value), TILE_DT_INVALID, s->loc); return; }
        assign_name(c, env, t->name, lower_expr(c, env, s->value), dt, s->loc);
        return;
    }
    case AST_S_FOR: lower_for(c, env, s); return;
    case AST_S_WHILE: lower_while(c, env, s); return;
    case AST_S_IF: lower_if(c, env, s); return;
    case AST_S_WITH: lower_with(c, env, s); return;
    case AST_S_RETURN: lower_return(c, env, s, top_level); return;
    case AST_S_PASS: return;
    case AST_S_BREAK:
    case AST_S_CONTINUE:
        if (c->loop_depth <= 0) {
            sema_err(c, s->loc, c->loop_depth < 0 ? "'%s' cannot leave a T.Parallel loop" : "'%s' outside a loop", s->kind == AST_S_BREAK ? "break" : "continue");
            return;
        }
        emit(c, ir_stmt_new(c->mod, s->kind == AST_S_BREAK ? IR_S_BREAK : IR_S_CONTINUE, s->loc));
        return;
    case AST_S_FUNCDEF: {
        sval *f = sv_new(c, SV_FUNC, s->loc);
        f->fn = TILE_NEW(c->arena, sema_fn);
        f->fn->def = s;
        f->fn->closure = env;
        env_bind(c, env, s->name, f, 0);
        return;
    }
    case AST_S_IMPORT:
    case AST_S_IMPORTFROM:
        for (int i = 0; i < s->nnames; i++) {
            sval *m = sv_new(c, SV_MODULE, s->loc);
            m->str = s->kind == AST_S_IMPORTFROM ? tile_arena_printf(c->arena, "%s.%s", s->module, s->names[i]) : s->names[i];
            const char *bind = s->asnames[i] ? s->asnames[i] : s->names[i];
            if (strcmp(bind, "*")) env_bind(c, env, bind, m, 0);
        }
        return;
    case AST_S_ASSERT: {
        sval *cv = lower_expr(c, env, s->cond);
        const char *msg = s->value && s->value->kind == AST_E_STRING ? s->value->sval : "assertion failed";
        if (sv_is_const(cv)) {
            if (!(tile_dtype_is_float(cv->e->dtype) ? cv->e->fval != 0 : cv->e->ival != 0)) sema_err(c, s->loc, "assertion failed: %s", msg);
            return;
        }
        if (cv->kind != SV_EXPR && cv->kind != SV_ACCESS) return;
        if (!c->stmts && c->fn && env != c->module_env && c->npending_asserts < 32) {
            /* a factory's check on symbolic sizes: made at kernel entry, once they are bound */
            c->pending_asserts[c->npending_asserts] = s;
            c->pending_envs[c->npending_asserts++] = env;
            return;
        }
        if (!c->stmts) { sema_err(c, s->loc, "this assertion can only be checked at run time, but this code runs at compile time"); return; }
        ir_expr *x = to_bool(c, materialize(c, cv));
        if (!x) return;
        ir_stmt *a = ir_stmt_new(c->mod, IR_S_ASSERT, s->loc);
        a->cond = x;
        a->msg = tile_arena_strdup(&c->mod->arena, msg);
        emit(c, a);
        return;
    }
    case AST_S_GLOBAL:
    case AST_S_NONLOCAL: return;
    case AST_S_TRY:
        /* nothing raises while Tile evaluates: the body, the else clause, finally */
        lower_block(c, env, &s->body);
        lower_block(c, env, &s->orelse);
        lower_block(c, env, &s->finalbody);
        return;
    case AST_S_RAISE: {
        /* reached while lowering: the program raises unconditionally for these parameters */
        const ast_expr *v = s->value;
        const char *what = "an exception";
        const char *msg = "";
        if (v && v->kind == AST_E_CALL) {
            what = v->value->kind == AST_E_NAME || v->value->kind == AST_E_ATTR ? v->value->name : what;
            if (v->nitems >= 1) {
                sval *m = lower_expr(c, env, v->items[0]);
                if (m->kind == SV_STRING) msg = m->str;
            }
        } else if (v && (v->kind == AST_E_NAME || v->kind == AST_E_ATTR)) what = v->name;
        if (c->stmts && c->in_kernel)
            sema_err(c, s->loc, "'raise' in kernel code is not supported yet");
        else
            sema_err(c, s->loc, "the program raises %s%s%s", what, msg[0] ? ": " : "", msg);
        return;
    }
    case AST_S_DEL:
        /* `del x` unbinds names; deleting elements or attributes is not modelled */
        if (s->targets[0]->kind == AST_E_NAME) env_bind(c, env, s->targets[0]->name, dead_value(c, s->loc), 0);
        else if (s->targets[0]->kind == AST_E_TUPLE)
            for (int i = 0; i < s->targets[0]->nitems; i++)
                if (s->targets[0]->items[i]->kind == AST_E_NAME) env_bind(c, env, s->targets[0]->items[i]->name, dead_value(c, s->loc), 0);
        return;
    case AST_S_CLASS: {
        sval *o = sv_new(c, SV_OPAQUE, s->loc);
        o->str = s->name;
        env_bind(c, env, s->name, o, 0);
        return;
    }
    default: sema_err(c, s->loc, "%s statements are not supported yet", ast_stmt_kind_name(s->kind)); return;
    }
}

void lower_stmt(sema_ctx *c, sema_env *env, const ast_stmt *s) { lower_stmt_in(c, env, s, false); }

void lower_block(sema_ctx *c, sema_env *env, const ast_block *b) {
    bool top = env->func && c->stmts && c->inline_depth == 0 && c->in_kernel == 0 && c->par_depth == 0 && c->loop_depth == 0 &&
               b == &env->func->body;
    for (int i = 0; i < b->len; i++) {
        if (tile_diags_full(c->diags)) return;
        if (top && c->returned_done) { sema_err(c, b->stmts[i]->loc, "code after 'return' is not allowed"); return; }
        lower_stmt_in(c, env, b->stmts[i], top);
    }
}
