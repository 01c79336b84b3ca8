/* opt_driver.c — test driver for TileOpt, built from the sources it needs (front end, sema,
 * IR, the opt passes, the interpreter), so the opt tests do not depend on the runtime or
 * the code generators.
 *
 *   opt_driver ir    FILE [-f FUNC] [-D NAME=VALUE]... [--after PASS]
 *       prints the IR after PASS of the cpu pipeline (default: all passes)
 *   opt_driver check FILE [-f FUNC] [-D NAME=VALUE]... [--size NAME=VALUE]... [--seed N]
 *       runs every function twice in the interpreter, as sema produced it and after the
 *       cpu pipeline, on the same seeded random inputs, with every check on (bounds,
 *       uninitialised reads, races of the loops the passes marked parallel), and compares
 *       every tensor bit for bit. Sizes not fixed by -D are bound with --size.
 *       --tol R: float elements may differ by R relative (passes that reassociate, e.g.
 *       rowfuse's online softmax sum; docs/tileopt.md); everything else stays exact.
 *
 * Exit: 0 ok, 1 usage / compile error, 2 a run failed or results differ. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "front/front.h"
#include "interp/interp.h"
#include "ir/ir.h"
#include "opt/opt.h"
#include "sema/sema.h"

/* ---------- privatisation stress ----------
 * The interpreter runs a parallel loop's iterations in order with one copy of each local,
 * so a local wrongly found private would go unnoticed. Every local assigned inside a
 * PARALLEL or VECTORIZED loop is therefore assigned a poison value at the start of each
 * iteration and after the loop: a private local is always assigned before it is read, and
 * is dead after the loop, so the results cannot change unless the analysis was wrong.
 * (Plain form only: the tile form's T.Parallel loops are the author's.) */
static ir_expr *poison_value(ir_module *m, const ir_var *v, tile_loc loc) {
    if (v->dtype == TILE_DT_F32 || v->dtype == TILE_DT_F64) return ir_const_float(m, v->dtype, 987654.25, loc);
    if (tile_dtype_is_float(v->dtype)) return ir_cast(m, v->dtype, ir_const_float(m, TILE_DT_F32, 448.0, loc), loc);
    if (v->dtype == TILE_DT_BOOL) return ir_const_int(m, v->dtype, 1, loc);
    return ir_const_int(m, v->dtype, 91, loc);
}

static void assigned_locals(const ir_stmt *s, unsigned char *set) {
    if (!s) return;
    if (s->kind == IR_S_ASSIGN && s->var) set[s->var->id] = 1;
    for (int i = 0; i < s->nbody; i++)
        if (s->body) assigned_locals(s->body[i], set);
}

static ir_stmt *poison_seq(ir_module *m, ir_func *f, const unsigned char *set, ir_stmt *first, ir_stmt *last, tile_loc loc) {
    ir_stmt **v = calloc((size_t)f->nvars + 2, sizeof *v);
    int n = 0;
    if (first) v[n++] = first;
    for (int id = 0; id < f->nvars; id++) {
        if (!set[id]) continue;
        ir_stmt *a = ir_stmt_new(m, IR_S_ASSIGN, loc);
        a->var = f->vars[id];
        a->value = poison_value(m, f->vars[id], loc);
        v[n++] = a;
    }
    if (last) v[n++] = last;
    ir_stmt *r = ir_seq(m, v, n, loc);
    free(v);
    return r;
}

static ir_stmt *poison(ir_module *m, ir_func *f, ir_stmt *s, int *count) {
    if (!s) return s;
    for (int i = 0; i < s->nbody; i++)
        if (s->body) s->body[i] = poison(m, f, s->body[i], count);
    if (s->kind != IR_S_FOR || (s->loop_kind != IR_LOOP_PARALLEL && s->loop_kind != IR_LOOP_VECTORIZED)) return s;
    unsigned char *set = calloc((size_t)f->nvars + 1, 1);
    assigned_locals(s->body[0], set);
    bool any = false;
    for (int id = 0; id < f->nvars; id++) any = any || set[id];
    if (any) {
        (*count)++;
        /* for a parallel group the body must stay the next loop: poison only single loops */
        if (s->loop_kind == IR_LOOP_VECTORIZED || s->par_group_depth == 1) s->body[0] = poison_seq(m, f, set, NULL, s->body[0], s->loc);
        s = poison_seq(m, f, set, s, NULL, s->loc);
    }
    free(set);
    return s;
}

typedef struct opts {
    const char *cmd, *file, *func, *after;
    sema_define defs[32];
    int ndefs;
    const char *size_name[32];
    int64_t size_val[32];
    int nsizes;
    uint64_t seed;
} opts;

static int usage(void) {
    fprintf(stderr, "usage: opt_driver ir|check FILE [-f FUNC] [-D NAME=VALUE]... [--after PASS] [--size NAME=VALUE]... [--seed N] [--tol R]\n");
    return 1;
}

static ir_module *lower(const opts *o, tile_source *src, tile_arena *ast_arena, sema_define *defs) {
    tile_diags d;
    tile_diags_init(&d);
    ast_module *ast = tile_parse(src, ast_arena, &d);
    ir_module *m = NULL;
    if (!d.errors) {
        sema_options so = {defs, o->ndefs, o->func};
        m = sema_lower(ast, &so, &d);
    }
    if (d.errors) {
        tile_diags_print(&d, stderr);
        tile_diags_free(&d);
        if (m) ir_module_free(m);
        return NULL;
    }
    tile_diags_free(&d);
    return m;
}

static uint64_t rng_next(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 11;
}

static void fill_random(tile_dtype dt, void *data, size_t n, uint64_t *s) {
    for (size_t i = 0; i < n; i++) {
        uint64_t r = rng_next(s);
        if (tile_dtype_is_float(dt)) tile_store_f(dt, data, i, ((double)(r % 2001) - 1000.0) / 1000.0);
        else if (tile_dtype_is_bool(dt)) tile_store_i(dt, data, i, (int64_t)(r & 1));
        else tile_store_i(dt, data, i, (int64_t)(r % 16));
    }
}

typedef struct run_state {
    interp_tensor *params, *rets;
    int ok;
    tile_strbuf err;
} run_state;

/* Run f with copies of the inputs in `in_params` (and zeroed outputs). */
static void run_one(const ir_func *f, const interp_args *proto, interp_tensor *in_params, run_state *rs) {
    rs->params = calloc((size_t)f->nparams + 1, sizeof(interp_tensor));
    rs->rets = calloc((size_t)f->nrets + 1, sizeof(interp_tensor));
    interp_args a = *proto;
    a.params = rs->params;
    a.rets = rs->rets;
    for (int i = 0; i < f->nparams; i++) {
        const ir_buffer *b = f->params[i].buf;
        if (!b) continue;
        if (interp_tensor_alloc(f, b, &a, false, &rs->params[i], &rs->err)) { rs->ok = 0; return; }
        size_t n = 1;
        for (int d = 0; d < b->rank; d++) n *= (size_t)rs->params[i].shape[d];
        memcpy(rs->params[i].data, in_params[i].data, tile_dtype_storage_bytes(b->dtype, n));
    }
    for (int i = 0; i < f->nrets; i++)
        if (interp_tensor_alloc(f, f->rets[i], &a, false, &rs->rets[i], &rs->err)) { rs->ok = 0; return; }
    interp_options io;
    interp_options_default(&io);
    rs->ok = interp_run(f, &a, &io, &rs->err) == 0;
}

static void free_run(const ir_func *f, run_state *rs) {
    for (int i = 0; rs->params && i < f->nparams; i++) interp_tensor_free(&rs->params[i]);
    for (int i = 0; rs->rets && i < f->nrets; i++) interp_tensor_free(&rs->rets[i]);
    free(rs->params);
    free(rs->rets);
    tile_sb_free(&rs->err);
}

static double g_tol; /* --tol */

static bool same_tensor(const ir_buffer *b, const interp_tensor *x, const interp_tensor *y, const char *fname) {
    size_t n = 1;
    for (int d = 0; d < b->rank; d++) n *= (size_t)x->shape[d];
    size_t bytes = tile_dtype_storage_bytes(b->dtype, n);
    if (!memcmp(x->data, y->data, bytes)) return true;
    for (size_t i = 0; i < n; i++) {
        bool eq;
        if (tile_dtype_is_float(b->dtype)) {
            double u = tile_load_f(b->dtype, x->data, i), v = tile_load_f(b->dtype, y->data, i);
            eq = u == v || (u != u && v != v) || (g_tol > 0 && fabs(u - v) <= g_tol * fmax(fabs(u), fabs(v)));
            if (!eq) {
                printf("%s: '%s' differs at element %zu: %.9g (sema's IR) vs %.9g (after the cpu pipeline)\n", fname, b->name, i, u, v);
                return false;
            }
        } else {
            int64_t u = tile_load_i(b->dtype, x->data, i), v = tile_load_i(b->dtype, y->data, i);
            if (u != v) {
                printf("%s: '%s' differs at element %zu: %lld vs %lld\n", fname, b->name, i, (long long)u, (long long)v);
                return false;
            }
        }
    }
    if (g_tol > 0) return true;
    printf("%s: '%s' differs only in its bits (e.g. the sign of a zero)\n", fname, b->name);
    return false;
}

static int check_func(const opts *o, const ir_func *f0, const ir_func *f1) {
    int64_t *sizes = calloc((size_t)f0->nsizes + 1, sizeof(int64_t));
    for (int i = 0; i < f0->nsizes; i++) {
        bool found = false;
        for (int k = 0; k < o->nsizes; k++)
            if (!strcmp(o->size_name[k], f0->sizes[i]->name)) { sizes[i] = o->size_val[k]; found = true; }
        if (!found) {
            fprintf(stderr, "%s: size '%s' is not bound (give --size %s=VALUE or -D)\n", f0->name, f0->sizes[i]->name, f0->sizes[i]->name);
            free(sizes);
            return 1;
        }
    }
    double *sf = calloc((size_t)f0->nparams + 1, sizeof(double));
    int64_t *si = calloc((size_t)f0->nparams + 1, sizeof(int64_t));
    for (int i = 0; i < f0->nparams; i++) {
        sf[i] = 0.75;
        si[i] = 3;
    }
    interp_args proto = {sizes, sf, si, NULL, NULL};
    uint64_t s = o->seed * 2654435761u + 12345;
    interp_tensor *in = calloc((size_t)f0->nparams + 1, sizeof(interp_tensor));
    int rc = 0;
    tile_strbuf err = {0};
    for (int i = 0; i < f0->nparams && !rc; i++) {
        const ir_buffer *b = f0->params[i].buf;
        if (!b) continue;
        if (interp_tensor_alloc(f0, b, &proto, false, &in[i], &err)) {
            fprintf(stderr, "%s", err.data ? err.data : "allocation failed\n");
            rc = 1;
            break;
        }
        size_t n = 1;
        for (int d = 0; d < b->rank; d++) n *= (size_t)in[i].shape[d];
        fill_random(b->dtype, in[i].data, n, &s);
    }
    tile_sb_free(&err);
    if (!rc) {
        run_state r0 = {0}, r1 = {0};
        run_one(f0, &proto, in, &r0);
        run_one(f1, &proto, in, &r1);
        if (!r0.ok && !r1.ok) {
            printf("%s: both runs fail (as they should agree):\n--- sema's IR:\n%s--- after the cpu pipeline:\n%s", f0->name,
                   r0.err.data ? r0.err.data : "", r1.err.data ? r1.err.data : "");
        } else if (!r0.ok || !r1.ok) {
            printf("%s: only %s fails:\n%s", f0->name, r0.ok ? "the run after the cpu pipeline" : "the run of sema's IR",
                   r0.ok ? (r1.err.data ? r1.err.data : "") : (r0.err.data ? r0.err.data : ""));
            rc = 2;
        } else {
            int nt = 0;
            for (int i = 0; i < f0->nparams; i++)
                if (f0->params[i].buf) {
                    nt++;
                    if (!same_tensor(f0->params[i].buf, &r0.params[i], &r1.params[i], f0->name)) rc = 2;
                }
            for (int i = 0; i < f0->nrets; i++) {
                nt++;
                if (!same_tensor(f0->rets[i], &r0.rets[i], &r1.rets[i], f0->name)) rc = 2;
            }
            if (!rc && g_tol > 0) printf("%s: ok (%d tensors equal within %g relative)\n", f0->name, nt, g_tol);
            else if (!rc) printf("%s: ok (%d tensors bit-identical)\n", f0->name, nt);
        }
        free_run(f0, &r0);
        free_run(f1, &r1);
    }
    for (int i = 0; i < f0->nparams; i++) interp_tensor_free(&in[i]);
    free(in);
    free(sf);
    free(si);
    free(sizes);
    return rc;
}

int main(int argc, char **argv) {
    opts o;
    memset(&o, 0, sizeof o);
    if (argc < 3) return usage();
    o.cmd = argv[1];
    o.file = argv[2];
    for (int i = 3; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-f") && v) { o.func = v; i++; }
        else if (!strcmp(a, "--after") && v) { o.after = v; i++; }
        else if (!strcmp(a, "--seed") && v) { o.seed = strtoull(v, NULL, 10); i++; }
        else if (!strcmp(a, "--tol") && v) { g_tol = strtod(v, NULL); i++; }
        else if ((!strcmp(a, "-D") || !strcmp(a, "--size")) && v) {
            const char *eq = strchr(v, '=');
            if (!eq || eq == v) return usage();
            if (a[1] == 'D') {
                if (o.ndefs == 32) return usage();
                o.defs[o.ndefs].name = strndup(v, (size_t)(eq - v));
                o.defs[o.ndefs].value = eq + 1;
                o.ndefs++;
            } else {
                if (o.nsizes == 32) return usage();
                o.size_name[o.nsizes] = strndup(v, (size_t)(eq - v));
                o.size_val[o.nsizes] = strtoll(eq + 1, NULL, 10);
                o.nsizes++;
            }
            i++;
        } else return usage();
    }
    const char *why = NULL;
    tile_source *src = tile_source_load(o.file, &why);
    if (!src) {
        fprintf(stderr, "opt_driver: cannot read %s: %s\n", o.file, why ? why : "?");
        return 1;
    }
    tile_arena a0, a1;
    tile_arena_init(&a0);
    tile_arena_init(&a1);
    sema_define d0[32], d1[32];
    memcpy(d0, o.defs, sizeof d0);
    memcpy(d1, o.defs, sizeof d1);
    ir_module *m0 = lower(&o, src, &a0, d0);
    ir_module *m1 = m0 ? lower(&o, src, &a1, d1) : NULL;
    int rc = 0;
    if (!m0 || !m1) rc = 1;
    for (int i = 0; !rc && i < m1->nfuncs; i++) {
        tile_diags d;
        tile_diags_init(&d);
        if (opt_run(m1, m1->funcs[i], "cpu", o.after, &d)) {
            tile_diags_print(&d, stderr);
            rc = 1;
        } else if (!strcmp(o.cmd, "check") && m1->funcs[i]->form == IR_FORM_PLAIN) {
            int np = 0;
            m1->funcs[i]->body = poison(m1, m1->funcs[i], m1->funcs[i]->body, &np);
            tile_diags vd;
            tile_diags_init(&vd);
            if (!ir_verify_func(m1->funcs[i], &vd)) {
                tile_diags_print(&vd, stderr);
                rc = 1;
            }
            tile_diags_free(&vd);
        }
        tile_diags_free(&d);
    }
    if (!rc && !strcmp(o.cmd, "ir")) {
        tile_strbuf sb = {0};
        ir_print_module(m1, &sb);
        fputs(sb.data ? sb.data : "", stdout);
        tile_sb_free(&sb);
    } else if (!rc && !strcmp(o.cmd, "check")) {
        for (int i = 0; i < m0->nfuncs && i < m1->nfuncs; i++) {
            int r = check_func(&o, m0->funcs[i], m1->funcs[i]);
            if (r > rc) rc = r;
        }
    } else if (!rc) {
        rc = usage();
    }
    if (m0) ir_module_free(m0);
    if (m1) ir_module_free(m1);
    tile_arena_free(&a0);
    tile_arena_free(&a1);
    tile_source_free(src);
    for (int i = 0; i < o.ndefs; i++) free((char *)o.defs[i].name);
    for (int i = 0; i < o.nsizes; i++) free((char *)o.size_name[i]);
    return rc;
}
