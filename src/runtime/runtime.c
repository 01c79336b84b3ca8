/* runtime.c — the public API of libtile (include/tile.h): compile a source into IR, bind
 * symbolic sizes from tensor shapes, run a kernel on a target.
 *
 * In:  source text, -D bindings, host tensors.
 * Out: results in the tensors; diagnostics and run-time errors as strings.
 * Targets: the interpreter, and the backends of backend.h (cpu, opencl, cuda); a target whose
 * toolkit or device is missing answers TILE_ERR_UNAVAILABLE with the reason. */
#include "runtime.h"

#include <stdlib.h>
#include <string.h>

#include "../opt/opt.h"

const char *tile_version(void) { return "0.1.0"; }

char *tile_env_describe(int markdown, int options) {
    return options ? tb_options_describe(NULL) : tb_knobs_describe(markdown != 0);
}

int tile_env_is_set(const char *name) {
    int k = name ? tb_knob_find(name) : -1;
    if (k < 0) return -1;
    return tb_knob_is_set((tb_knob)k) ? 1 : 0;
}
void tile_free(void *p) { free(p); }

static char *sb_take(tile_strbuf *sb) {
    if (!sb->data) return tile_xstrdup("");
    return sb->data;
}

/* ---------- compiling ---------- */
static tile_status compile_source(tile_source *src, const char *only, const char *const *defines, int ndefines, tile_module **out, char **diagnostics) {
    *out = NULL;
    if (diagnostics) *diagnostics = NULL;
    tile_module *m = tile_xcalloc(1, sizeof *m);
    m->src = src;
    pthread_mutex_init(&m->lock, NULL);
    double t_start = tile_now();
    tile_arena_init(&m->ast_arena);
    tile_diags d;
    tile_diags_init(&d);
    sema_define *defs = tile_xcalloc((size_t)(ndefines ? ndefines : 1), sizeof *defs);
    int nd = 0;
    for (int i = 0; i < ndefines; i++) {
        const char *eq = defines[i] ? strchr(defines[i], '=') : NULL;
        tile_loc nowhere = {0};
        if (!eq || eq == defines[i]) {
            tile_error_at(&d, nowhere, "bad definition '%s': expected NAME=VALUE", defines[i] ? defines[i] : "(null)");
            continue;
        }
        defs[nd].name = tile_arena_strndup(&m->ast_arena, defines[i], (size_t)(eq - defines[i]));
        defs[nd].value = tile_arena_strdup(&m->ast_arena, eq + 1);
        nd++;
    }
    if (!d.errors) {
        m->ast = tile_parse(src, &m->ast_arena, &d);
        if (!d.errors) {
            sema_options opt = {defs, nd, only};
            m->ir = sema_lower(m->ast, &opt, &d);
            /* a definition nobody used is a mistake, unless it names a scalar parameter
             * (its value is then passed at run time) */
            for (int i = 0; i < nd && !d.errors; i++) {
                if (defs[i].used) continue;
                bool scalar = false;
                for (int f = 0; f < m->ir->nfuncs; f++)
                    for (int p = 0; p < m->ir->funcs[f]->nparams; p++)
                        if (m->ir->funcs[f]->params[p].var && !strcmp(m->ir->funcs[f]->params[p].name, defs[i].name)) scalar = true;
                if (!scalar) {
                    tile_loc nowhere = {0};
                    tile_error_at(&d, nowhere, "-D %s: no kernel-factory parameter, symbolic dimension or scalar parameter is named '%s'", defs[i].name, defs[i].name);
                }
            }
            if (!d.errors && m->ir->nfuncs == 0) {
                tile_loc nowhere = {src, 1, 1};
                tile_error_at(&d, nowhere, "no kernel in this file: decorate a function with @tile_op, @kernel or @T.prim_func, or write a kernel factory returning a @T.prim_func");
            }
        }
    }
    m->defines = TILE_NEW_ARRAY(&m->ast_arena, sema_define, nd ? nd : 1);
    memcpy(m->defines, defs, sizeof(sema_define) * (size_t)nd);
    m->ndefines = nd;
    free(defs);
    tile_strbuf sb = {0};
    for (int i = 0; i < d.len; i++) tile_diag_format(&d.items[i], &sb);
    int errors = d.errors;
    tile_diags_free(&d);
    if (diagnostics) *diagnostics = sb.len ? sb_take(&sb) : NULL;
    else tile_sb_free(&sb);
    if (errors) {
        tile_module_free(m);
        return TILE_ERR_USER;
    }
    m->nkernels = m->ir->nfuncs;
    m->kernels = tile_xcalloc((size_t)(m->nkernels ? m->nkernels : 1), sizeof(tile_kernel));
    for (int i = 0; i < m->nkernels; i++) {
        m->kernels[i].m = m;
        m->kernels[i].f = m->ir->funcs[i];
        pthread_mutex_init(&m->kernels[i].lock, NULL);
        /* the source's pass_configs (sema mapped and checked them) */
        const ir_func *f = m->kernels[i].f;
        for (int o = 0; o < f->noptions; o++) {
            char why[512];
            if (tb_options_set(&m->kernels[i].opts, f->option_names[o], f->option_values[o], why, sizeof why))
                tile_log(TILE_LOG_WARN, "kernel %s: pass_configs: %s", f->name, why);
        }
    }
    if (rt_tracing()) {
        char args[256];
        snprintf(args, sizeof args, "\"source\": \"%s\", \"kernels\": %d", src->name ? src->name : "", m->nkernels);
        for (char *c = args; *c; c++)
            if (*c == '\\') *c = '/';
        rt_trace_span("parse + sema", "compile", t_start, tile_now() - t_start, args);
    }
    *out = m;
    return TILE_OK;
}

tile_status tile_compile_file(const char *path, const char *const *defines, int ndefines, tile_module **out, char **diagnostics) {
    return tile_compile_file_kernel(path, NULL, defines, ndefines, out, diagnostics);
}

tile_status tile_compile_file_kernel(const char *path, const char *kernel, const char *const *defines, int ndefines, tile_module **out,
                                     char **diagnostics) {
    if (!out) return TILE_ERR_USER;
    const char *why = NULL;
    tile_source *src = path ? tile_source_load(path, &why) : NULL;
    if (!src) {
        *out = NULL;
        if (diagnostics) {
            tile_strbuf sb = {0};
            tile_sb_printf(&sb, "%s: error: cannot read file: %s\n", path ? path : "(null)", why ? why : "no path given");
            *diagnostics = sb_take(&sb);
        }
        return TILE_ERR_USER;
    }
    return compile_source(src, kernel, defines, ndefines, out, diagnostics);
}

tile_status tile_compile_string(const char *name, const char *text, const char *const *defines, int ndefines, tile_module **out,
                                char **diagnostics) {
    if (!out || !text) return TILE_ERR_USER;
    return compile_source(tile_source_from_string(name ? name : "<string>", text, strlen(text)), NULL, defines, ndefines, out, diagnostics);
}

tile_status tile_compile_string_kernel(const char *name, const char *text, const char *kernel, const char *const *defines, int ndefines,
                                       tile_module **out, char **diagnostics) {
    if (!out || !text) return TILE_ERR_USER;
    return compile_source(tile_source_from_string(name ? name : "<string>", text, strlen(text)), kernel, defines, ndefines, out, diagnostics);
}

void tile_module_free(tile_module *m) {
    if (!m) return;
    for (int i = 0; i < m->nkernels; i++) {
        tile_kernel *k = &m->kernels[i];
        rt_kernel_free_specs(k);
        for (int t = 0; t < k->ntargets; t++) {
            target_state *ts = k->targets[t];
            if (ts->backend->release) {
                if (ts->exe) ts->backend->release(ts->exe);
                if (ts->exe_strided) ts->backend->release(ts->exe_strided);
            }
            if (ts->mod) ir_module_free(ts->mod);
            free(ts);
        }
        free(k->targets);
        tb_options_free(&k->opts);
        pthread_mutex_destroy(&k->lock);
    }
    pthread_mutex_destroy(&m->lock);
    if (m->ir) ir_module_free(m->ir);
    tile_arena_free(&m->ast_arena);
    tile_source_free(m->src);
    free(m->kernels);
    free(m);
}

int tile_module_num_kernels(const tile_module *m) { return m ? m->nkernels : 0; }
const char *tile_module_kernel_name(const tile_module *m, int i) {
    return m && i >= 0 && i < m->nkernels ? m->kernels[i].f->name : NULL;
}
tile_kernel *tile_module_kernel(tile_module *m, const char *name) {
    if (!m) return NULL;
    if (!name) return m->nkernels == 1 ? &m->kernels[0] : NULL;
    for (int i = 0; i < m->nkernels; i++)
        if (!strcmp(m->kernels[i].f->name, name)) return &m->kernels[i];
    return NULL;
}

/* ---------- per-kernel compile options ---------- */
int tile_option_known(const char *name) {
    if (tb_option_find(name) >= 0) return 1;
    return tb_pass_config_known(name) ? 2 : 0;
}

static tile_status kernel_set_option(tile_kernel *k, const char *name, const char *value, tile_strbuf *err) {
    char why[2048];
    pthread_mutex_lock(&k->lock);
    tile_status st = TILE_OK;
    if (k->ntargets > 0) {
        tile_sb_printf(err, "option %s: kernel '%s' is already compiled; set options before its first run", name ? name : "(null)", k->f->name);
        st = TILE_ERR_USER;
    } else if (tb_option_find(name) >= 0) {
        if (tb_options_set(&k->opts, name, value, why, sizeof why)) {
            tile_sb_puts(err, why);
            st = TILE_ERR_USER;
        }
    } else {
        int r = name ? tb_options_set_pass_config(&k->opts, name, value, why, sizeof why) : 0;
        if (r == 0) {
            tb_options_set(&k->opts, name, value, why, sizeof why); /* the message listing the options */
            tile_sb_printf(err, "%s, or a TileLang pass_configs key (tl.disable_tma_lower, ...)", why);
        } else if (r < 0) tile_sb_puts(err, why);
        if (r <= 0) st = TILE_ERR_USER;
    }
    pthread_mutex_unlock(&k->lock);
    return st;
}

tile_status tile_kernel_set_option(tile_kernel *k, const char *name, const char *value, char **error) {
    if (error) *error = NULL;
    tile_strbuf err = {0};
    tile_status st = k ? kernel_set_option(k, name, value, &err) : TILE_ERR_USER;
    if (!k) tile_sb_puts(&err, "tile_kernel_set_option: no kernel");
    if (st != TILE_OK && error) *error = sb_take(&err);
    else tile_sb_free(&err);
    return st;
}

tile_status tile_module_set_option(tile_module *m, const char *name, const char *value, char **error) {
    if (error) *error = NULL;
    tile_strbuf err = {0};
    tile_status st = TILE_OK;
    if (!m) {
        tile_sb_puts(&err, "tile_module_set_option: no module");
        st = TILE_ERR_USER;
    }
    for (int i = 0; m && i < m->nkernels && st == TILE_OK; i++) st = kernel_set_option(&m->kernels[i], name, value, &err);
    if (st != TILE_OK && error) *error = sb_take(&err);
    else tile_sb_free(&err);
    return st;
}

char *tile_kernel_options(const tile_kernel *k) {
    if (!k) return NULL;
    return tb_options_key(&k->opts);
}

char *tile_kernel_ir(const tile_kernel *k) {
    tile_strbuf sb = {0};
    if (k) ir_print_func(k->f, &sb);
    return sb_take(&sb);
}

int tile_kernel_num_params(const tile_kernel *k) { return k ? k->f->nparams : 0; }
const char *tile_kernel_param_name(const tile_kernel *k, int i) { return k && i >= 0 && i < k->f->nparams ? k->f->params[i].name : NULL; }
int tile_kernel_param_is_tensor(const tile_kernel *k, int i) { return k && i >= 0 && i < k->f->nparams && k->f->params[i].buf != NULL; }
tile_dtype tile_kernel_param_dtype(const tile_kernel *k, int i) {
    if (!k || i < 0 || i >= k->f->nparams) return TILE_DT_INVALID;
    return k->f->params[i].buf ? k->f->params[i].buf->dtype : k->f->params[i].var->dtype;
}
int tile_kernel_param_rank(const tile_kernel *k, int i) {
    return k && i >= 0 && i < k->f->nparams && k->f->params[i].buf ? k->f->params[i].buf->rank : 0;
}
int tile_kernel_num_rets(const tile_kernel *k) { return k ? k->f->nrets : 0; }
const char *tile_kernel_ret_name(const tile_kernel *k, int i) { return k && i >= 0 && i < k->f->nrets ? k->f->rets[i]->name : NULL; }

size_t tile_tensor_bytes(const tile_tensor *t) {
    size_t n = 1;
    for (int d = 0; d < t->rank; d++) n *= (size_t)t->shape[d];
    return tile_dtype_storage_bytes(t->dtype, n);
}
void tile_tensor_free(tile_tensor *t) {
    if (!t) return;
    free(t->data);
    t->data = NULL;
}

/* ---------- binding sizes ---------- */
/* Evaluate an integer expression of constants and bound sizes. */
bool rt_eval_size(const ir_expr *e, const int64_t *sizes, const bool *bound, const ir_func *f, int64_t *out) {
    if (!e) return false;
    switch (e->kind) {
    case IR_E_CONST: *out = tile_dtype_is_float(e->dtype) ? (int64_t)e->fval : e->ival; return true;
    case IR_E_VAR:
        for (int i = 0; i < f->nsizes; i++)
            if (f->sizes[i] == e->var) {
                if (!bound[i]) return false;
                *out = sizes[i];
                return true;
            }
        return false;
    case IR_E_CAST: return rt_eval_size(e->args[0], sizes, bound, f, out);
    case IR_E_UNARY: {
        int64_t a;
        if (!rt_eval_size(e->args[0], sizes, bound, f, &a)) return false;
        *out = e->op == IR_U_NEG ? -a : e->op == IR_U_BITNOT ? ~a : !a;
        return true;
    }
    case IR_E_SELECT: {
        int64_t c, a, b;
        if (!rt_eval_size(e->args[0], sizes, bound, f, &c) || !rt_eval_size(e->args[1], sizes, bound, f, &a) ||
            !rt_eval_size(e->args[2], sizes, bound, f, &b))
            return false;
        *out = c ? a : b;
        return true;
    }
    case IR_E_BINARY: {
        int64_t a, b;
        if (!rt_eval_size(e->args[0], sizes, bound, f, &a) || !rt_eval_size(e->args[1], sizes, bound, f, &b)) return false;
        switch (e->op) {
        case IR_B_ADD: *out = a + b; return true;
        case IR_B_SUB: *out = a - b; return true;
        case IR_B_MUL: *out = a * b; return true;
        case IR_B_DIV: if (!b) return false; *out = a / b; return true;
        case IR_B_FLOORDIV: if (!b) return false; *out = a / b - ((a % b != 0) && ((a < 0) != (b < 0))); return true;
        case IR_B_FLOORMOD: if (!b) return false; { int64_t r = a % b; if (r && ((r < 0) != (b < 0))) r += b; *out = r; } return true;
        case IR_B_MIN: *out = a < b ? a : b; return true;
        case IR_B_MAX: *out = a > b ? a : b; return true;
        case IR_B_SHL: *out = (b < 0 || b > 62) ? 0 : a << b; return true;
        case IR_B_SHR: *out = (b < 0 || b > 62) ? (a < 0 ? -1 : 0) : a >> b; return true;
        case IR_B_BITAND: *out = a & b; return true;
        case IR_B_BITOR: *out = a | b; return true;
        case IR_B_BITXOR: *out = a ^ b; return true;
        case IR_B_LT: *out = a < b; return true;
        case IR_B_LE: *out = a <= b; return true;
        case IR_B_GT: *out = a > b; return true;
        case IR_B_GE: *out = a >= b; return true;
        case IR_B_EQ: *out = a == b; return true;
        case IR_B_NE: *out = a != b; return true;
        case IR_B_AND: *out = a && b; return true;
        case IR_B_OR: *out = a || b; return true;
        default: return false;
        }
    }
    default: return false;
    }
}

static void shape_str(tile_strbuf *sb, const int64_t *s, int rank) {
    if (rank == 0) tile_sb_puts(sb, "scalar");
    for (int d = 0; d < rank; d++) tile_sb_printf(sb, "%s%lld", d ? "x" : "", (long long)s[d]);
}

static void expr_str(tile_strbuf *sb, const ir_buffer *b) {
    tile_sb_putc(sb, '(');
    for (int d = 0; d < b->rank; d++) {
        if (d) tile_sb_puts(sb, ", ");
        ir_print_expr(b->shape[d], sb);
    }
    tile_sb_putc(sb, ')');
}

/* Bind f's sizes from the given tensors' shapes, then check every given shape and fill in
 * the shapes of the tensors not given (rank 0 and no data). */
tile_status rt_bind(const ir_func *f, tile_tensor *params, int nparams, tile_tensor *rets, int nrets, int64_t *sizes, tile_strbuf *err) {
    if (nparams != f->nparams) {
        tile_sb_printf(err, "kernel '%s' takes %d parameters, got %d", f->name, f->nparams, nparams);
        return TILE_ERR_USER;
    }
    if (nrets != f->nrets) {
        tile_sb_printf(err, "kernel '%s' returns %d tensors, got room for %d", f->name, f->nrets, nrets);
        return TILE_ERR_USER;
    }
    bool *bound = tile_xcalloc((size_t)(f->nsizes ? f->nsizes : 1), sizeof(bool));
    tile_status st = TILE_OK;
    /* pass 1: bare size variables take the given extents */
    for (int i = 0; i < nparams; i++) {
        ir_buffer *b = f->params[i].buf;
        if (!b || params[i].rank == 0) continue;
        if (params[i].rank != b->rank) {
            tile_sb_printf(err, "parameter '%s' has %d dimension%s, but the tensor given has %d", b->name, b->rank, b->rank == 1 ? "" : "s", params[i].rank);
            st = TILE_ERR_USER;
            goto done;
        }
        for (int d = 0; d < b->rank; d++) {
            const ir_expr *e = b->shape[d];
            if (e->kind != IR_E_VAR) continue;
            for (int s = 0; s < f->nsizes; s++)
                if (f->sizes[s] == e->var && !bound[s]) {
                    if (params[i].shape[d] <= 0) {
                        tile_sb_printf(err, "parameter '%s': dimension %d is %lld; dimensions must be positive", b->name, d, (long long)params[i].shape[d]);
                        st = TILE_ERR_USER;
                        goto done;
                    }
                    sizes[s] = params[i].shape[d];
                    bound[s] = true;
                }
        }
    }
    /* pass 2: check and fill */
    for (int i = 0; i < nparams + nrets; i++) {
        bool is_ret = i >= nparams;
        ir_buffer *b = is_ret ? f->rets[i - nparams] : f->params[i].buf;
        tile_tensor *t = is_ret ? &rets[i - nparams] : &params[i];
        if (!b) continue;
        int64_t want[8];
        for (int d = 0; d < b->rank; d++) {
            if (!rt_eval_size(b->shape[d], sizes, bound, f, &want[d])) {
                const char *missing = "?";
                for (int s = 0; s < f->nsizes; s++)
                    if (!bound[s]) { missing = f->sizes[s]->name; break; }
                tile_sb_printf(err, "the size '%s' is not bound (needed for the shape of '%s'): pass -D %s=VALUE, or a tensor whose shape determines it",
                               missing, b->name, missing);
                st = TILE_ERR_USER;
                goto done;
            }
            if (want[d] <= 0) {
                tile_sb_printf(err, "'%s' would have dimension %d of size %lld", b->name, d, (long long)want[d]);
                st = TILE_ERR_USER;
                goto done;
            }
        }
        /* the tensor must be addressable: elements and bytes without overflow, and at most
         * 2^46 bytes (64 TiB) — beyond that it is certainly a mistake */
        uint64_t elems = 1;
        bool too_big = false;
        for (int d = 0; d < b->rank; d++)
            if (__builtin_mul_overflow(elems, (uint64_t)want[d], &elems)) too_big = true;
        if (too_big || elems > ((uint64_t)1 << 46) / 8) {
            tile_sb_printf(err, "'%s' would have shape ", b->name);
            shape_str(err, want, b->rank);
            tile_sb_puts(err, ", too large to allocate");
            st = TILE_ERR_USER;
            goto done;
        }
        if (t->rank == 0 && (!t->data || is_ret)) {
            t->rank = b->rank;
            t->dtype = b->dtype;
            memcpy(t->shape, want, sizeof(int64_t) * (size_t)b->rank);
            continue;
        }
        bool same = t->rank == b->rank;
        for (int d = 0; same && d < b->rank; d++) same = t->shape[d] == want[d];
        if (!same) {
            tile_sb_printf(err, "'%s' should have shape ", b->name);
            shape_str(err, want, b->rank);
            tile_sb_puts(err, " ");
            expr_str(err, b);
            tile_sb_puts(err, " but the tensor given is ");
            shape_str(err, t->shape, t->rank);
            st = TILE_ERR_USER;
            goto done;
        }
    }
done:
    free(bound);
    return st;
}

tile_status tile_infer_shapes(tile_kernel *k, tile_tensor *params, int nparams, tile_tensor *rets, int nrets, char **error) {
    if (error) *error = NULL;
    if (!k) return TILE_ERR_USER;
    int64_t *sizes = tile_xcalloc((size_t)(k->f->nsizes + 1), sizeof(int64_t));
    tile_strbuf err = {0};
    tile_status st = rt_bind(k->f, params, nparams, rets, nrets, sizes, &err);
    free(sizes);
    if (st != TILE_OK && error) *error = sb_take(&err);
    else tile_sb_free(&err);
    return st;
}

/* ---------- operation count ----------
 * Floating-point operations a run executes, from the IR: + - * / on float values count 1,
 * fma 2, a GEMM 2*M*N*K, a reduction one per source element. Loop trip counts come from the
 * bound sizes; a branch counts its larger arm (guards on ragged edges). Unknown (-1) when a
 * trip count depends on a loop variable or data (while loops, triangular loops). */
static double expr_flops(const ir_expr *e) {
    if (!e) return 0;
    double n = 0;
    for (int i = 0; i < e->nargs; i++) n += expr_flops(e->args[i]);
    if (e->kind == IR_E_BINARY && tile_dtype_is_float(e->dtype) &&
        (e->op == IR_B_ADD || e->op == IR_B_SUB || e->op == IR_B_MUL || e->op == IR_B_DIV))
        n += 1;
    if (e->kind == IR_E_CALL && e->op == IR_I_FMA) n += 2;
    return n;
}

static double region_elems(const ir_region *r, const int64_t *sizes, const bool *bound, const ir_func *f) {
    double n = 1;
    for (int d = 0; d < r->buf->rank; d++) {
        int64_t x;
        if (!rt_eval_size(r->extent[d], sizes, bound, f, &x)) return -1;
        n *= (double)x;
    }
    return n;
}

static double stmt_flops(const ir_stmt *s, const int64_t *sizes, const bool *bound, const ir_func *f) {
    if (!s) return 0;
    double n = 0, t;
    switch (s->kind) {
    case IR_S_SEQ:
        for (int i = 0; i < s->nbody; i++) {
            if ((t = stmt_flops(s->body[i], sizes, bound, f)) < 0) return -1;
            n += t;
        }
        return n;
    case IR_S_FOR: {
        int64_t ext;
        if (!rt_eval_size(s->extent, sizes, bound, f, &ext)) return -1;
        if ((t = stmt_flops(s->body[0], sizes, bound, f)) < 0) return -1;
        return ext > 0 ? (double)ext * t : 0;
    }
    case IR_S_KERNEL: {
        double blocks = 1;
        for (int d = 0; d < s->ngrid; d++) {
            int64_t g;
            if (!rt_eval_size(s->grid[d], sizes, bound, f, &g)) return -1;
            blocks *= (double)g;
        }
        if ((t = stmt_flops(s->body[0], sizes, bound, f)) < 0) return -1;
        return blocks * t;
    }
    case IR_S_IF: {
        double a = stmt_flops(s->body[0], sizes, bound, f), b = s->nbody > 1 ? stmt_flops(s->body[1], sizes, bound, f) : 0;
        if (a < 0 || b < 0) return -1;
        return expr_flops(s->cond) + (a > b ? a : b);
    }
    case IR_S_WHILE: return -1;
    case IR_S_ASSIGN:
    case IR_S_STORE:
    case IR_S_ATOMIC: return expr_flops(s->value) + (s->kind == IR_S_ATOMIC && tile_dtype_is_float(s->buf->dtype) ? 1 : 0);
    case IR_S_GEMM: {
        double c = region_elems(&s->regions[2], sizes, bound, f);
        const ir_region *a = &s->regions[0];
        int64_t k;
        if (c < 0 || !rt_eval_size(a->extent[a->buf->rank - (s->trans_a ? 2 : 1)], sizes, bound, f, &k)) return -1;
        return 2.0 * c * (double)k;
    }
    case IR_S_REDUCE: return region_elems(&s->regions[0], sizes, bound, f);
    default: return 0;
    }
}

tile_status tile_kernel_flops(tile_kernel *k, tile_tensor *params, int nparams, double *flops) {
    *flops = -1;
    if (!k) return TILE_ERR_USER;
    const ir_func *f = k->f;
    int64_t *sizes = tile_xcalloc((size_t)(f->nsizes + 1), sizeof(int64_t));
    bool *bound = tile_xcalloc((size_t)(f->nsizes + 1), sizeof(bool));
    tile_tensor *rets = tile_xcalloc((size_t)(f->nrets + 1), sizeof(tile_tensor));
    tile_strbuf err = {0};
    tile_status st = rt_bind(f, params, nparams, rets, f->nrets, sizes, &err);
    if (st == TILE_OK) {
        for (int i = 0; i < f->nsizes; i++) bound[i] = true;
        *flops = stmt_flops(f->body, sizes, bound, f);
    }
    tile_sb_free(&err);
    free(rets);
    free(bound);
    free(sizes);
    return st;
}

/* ---------- targets ---------- */
int64_t rt_stat_compiles, rt_stat_specs, rt_stat_spec_hits, rt_stat_launches;

void tile_cache_stats_get(tile_cache_stats *out) {
    if (!out) return;
    out->compiles = __atomic_load_n(&rt_stat_compiles, __ATOMIC_RELAXED);
    out->specializations = __atomic_load_n(&rt_stat_specs, __ATOMIC_RELAXED);
    out->spec_hits = __atomic_load_n(&rt_stat_spec_hits, __ATOMIC_RELAXED);
    out->launches = __atomic_load_n(&rt_stat_launches, __ATOMIC_RELAXED);
}

int tile_num_targets(void) { return TILE_BACKEND_COUNT; }
const char *tile_target_name(int i) {
    const tile_backend *b = tile_backend_at(i);
    return b ? b->name : NULL;
}

static void target_list(tile_strbuf *sb) {
    for (int i = 0; i < TILE_BACKEND_COUNT; i++) tile_sb_printf(sb, "%s, ", tile_backend_at(i)->name);
    tile_sb_puts(sb, "auto");
}

static bool usable(const tile_backend *b, tile_strbuf *why) { return !b->available || b->available(why); }

/* The usable backend of highest auto_rank (of a device type; 0: any). */
const tile_backend *rt_auto_backend(int device_type) {
    const tile_backend *best = NULL;
    for (int i = 0; i < TILE_BACKEND_COUNT; i++) {
        const tile_backend *b = tile_backend_at(i);
        if (b->auto_rank <= 0 || (device_type && b->device_type != device_type) || (best && best->auto_rank >= b->auto_rank)) continue;
        tile_strbuf why = {0};
        bool ok = usable(b, &why);
        tile_sb_free(&why);
        if (ok) best = b;
    }
    return best;
}

const char *tile_auto_target(void) {
    const tile_backend *b = rt_auto_backend(0);
    return b ? b->name : "interp";
}

/* A target name: a backend ("cpu"), or BACKEND+PIPELINE ("interp+cpu": the backend on the IR
 * another target's TileOpt pipeline produced). NULL with a message when unknown. */
static const tile_backend *parse_target(const char *target, const char **pipeline, tile_strbuf *err) {
    const char *plus = strchr(target, '+');
    char name[64];
    size_t n = plus ? (size_t)(plus - target) : strlen(target);
    if (n >= sizeof name) n = sizeof name - 1;
    memcpy(name, target, n);
    name[n] = 0;
    const tile_backend *b = tile_backend_find(name);
    const tile_backend *pb = plus ? tile_backend_find(plus + 1) : b;
    if (!b || !pb || (plus && !b->host_only)) {
        tile_sb_printf(err, "unknown target '%s' (targets: ", target);
        target_list(err);
        tile_sb_puts(err, ")");
        return NULL;
    }
    *pipeline = pb->pipeline;
    return b;
}

/* The backend for `target`, checked usable; NULL with a message and status otherwise. */
static const tile_backend *find_backend(const char *target, const char **pipeline, tile_strbuf *err, tile_status *st) {
    const tile_backend *b = parse_target(target, pipeline, err);
    if (!b) {
        *st = TILE_ERR_USER;
        return NULL;
    }
    tile_strbuf why = {0};
    if (!usable(b, &why)) {
        tile_sb_printf(err, "target '%s' is not available here: %s", target, why.data ? why.data : "no device");
        tile_sb_free(&why);
        *st = TILE_ERR_UNAVAILABLE;
        return NULL;
    }
    tile_sb_free(&why);
    return b;
}

/* Lower k again and run `pipeline` (up to stop_after). */
static tile_status lower_for_target(tile_kernel *k, const char *pipeline, const char *stop_after, ir_module **mod_out, ir_func **f_out,
                                    tile_strbuf *err) {
    tile_diags d;
    tile_diags_init(&d);
    sema_options opt = {k->m->defines, k->m->ndefines, k->f->name};
    pthread_mutex_lock(&k->m->lock);
    ir_module *mod = sema_lower(k->m->ast, &opt, &d);
    pthread_mutex_unlock(&k->m->lock);
    ir_func *f = NULL;
    for (int i = 0; i < mod->nfuncs; i++)
        if (!strcmp(mod->funcs[i]->name, k->f->name)) f = mod->funcs[i];
    if (f) f->opts = &k->opts; /* what the passes and the code generators read */
    if (!f || d.errors) {
        if (!d.errors) tile_sb_printf(err, "internal error: kernel '%s' vanished when lowered again", k->f->name);
        for (int i = 0; i < d.len; i++) tile_diag_format(&d.items[i], err);
        tile_diags_free(&d);
        ir_module_free(mod);
        return TILE_ERR_INTERNAL;
    }
    if (opt_run(mod, f, pipeline, stop_after, &d)) {
        for (int i = 0; i < d.len; i++) tile_diag_format(&d.items[i], err);
        bool user = stop_after != NULL;
        tile_diags_free(&d);
        ir_module_free(mod);
        return user ? TILE_ERR_USER : TILE_ERR_INTERNAL;
    }
    tile_diags_free(&d);
    *mod_out = mod;
    *f_out = f;
    return TILE_OK;
}

/* TILE_LOG=info: what `tile ir --explain` prints, one log line each */
static void rt_log_explain(const ir_func *f, const char *target) {
    tile_strbuf sb = {0};
    ir_explain_print(f, target, &sb);
    for (char *p = sb.data, *nl; p && *p; p = nl + 1) {
        nl = strchr(p, '\n');
        if (!nl) nl = p + strlen(p) - 1;
        else *nl = 0;
        tile_log(TILE_LOG_INFO, "%s", p);
    }
    tile_sb_free(&sb);
}

tile_status rt_prepare(tile_kernel *k, const tile_backend *b, const char *pipeline, bool strided, target_state **out, void **exe, tile_strbuf *err) {
    pthread_mutex_lock(&k->lock);
    target_state *ts = NULL;
    for (int i = 0; i < k->ntargets && !ts; i++)
        if (k->targets[i]->backend == b && !strcmp(k->targets[i]->pipeline, pipeline)) ts = k->targets[i];
    tile_status st = TILE_OK;
    if (!ts) {
        ts = tile_xcalloc(1, sizeof *ts);
        ts->backend = b;
        ts->pipeline = pipeline;
        double tp = tile_now();
        st = lower_for_target(k, pipeline, NULL, &ts->mod, &ts->f, err);
        if (st == TILE_OK && rt_tracing()) {
            char args[256];
            snprintf(args, sizeof args, "\"kernel\": \"%s\", \"pipeline\": \"%s\"", k->f->name, pipeline);
            rt_trace_span("passes", "compile", tp, tile_now() - tp, args);
        }
        if (st != TILE_OK) {
            free(ts);
            pthread_mutex_unlock(&k->lock);
            return st;
        }
        k->targets = tile_xrealloc(k->targets, sizeof(target_state *) * (size_t)(k->ntargets + 1));
        k->targets[k->ntargets++] = ts;
    }
    void **slot = strided ? &ts->exe_strided : &ts->exe;
    if (!*slot) {
        int (*compile)(const ir_func *, void **, tile_strbuf *) = strided ? b->compile_strided : b->compile;
        double t0 = tile_now();
        if (!compile) {
            tile_sb_printf(err, "internal error: target '%s' cannot compile for strided tensors", b->name);
            st = TILE_ERR_INTERNAL;
        } else if (compile(ts->f, slot, err)) st = TILE_ERR_USER;
        else {
            __atomic_add_fetch(&rt_stat_compiles, 1, __ATOMIC_RELAXED);
            tile_log(TILE_LOG_INFO, "compiled %s for %s%s in %.1f ms", k->f->name, b->name, strided ? " (strided tensors)" : "", (tile_now() - t0) * 1e3);
            if (tile_log_enabled(TILE_LOG_INFO)) rt_log_explain(ts->f, b->name);
            if (rt_tracing()) {
                char args[256];
                snprintf(args, sizeof args, "\"kernel\": \"%s\", \"target\": \"%s\", \"strided\": %s", k->f->name, b->name, strided ? "true" : "false");
                rt_trace_span("compile", "compile", t0, tile_now() - t0, args);
            }
        }
    }
    *out = ts;
    if (exe) *exe = *slot;
    pthread_mutex_unlock(&k->lock);
    return st;
}

static tile_status run_backend(tile_kernel *k, const tile_backend *b, const char *pipeline, tile_tensor *params, int nparams, tile_tensor *rets,
                               int nrets, const tile_run_options *opt, int bench_iters, double *times_s, tile_strbuf *err) {
    bool f64 = opt && opt->f64_reference;
    if (f64 && !b->f64_reference) {
        tile_sb_puts(err, "the f64 reference mode exists only on the interpreter");
        return TILE_ERR_USER;
    }
    target_state *ts;
    void *exe;
    tile_status st = rt_prepare(k, b, pipeline, false, &ts, &exe, err);
    if (st != TILE_OK) return st;
    const ir_func *f = ts->f;
    int64_t *sizes = tile_xcalloc((size_t)(f->nsizes + 1), sizeof(int64_t));
    st = rt_bind(f, params, nparams, rets, nrets, sizes, err);
    for (int i = 0; st == TILE_OK && i < nparams; i++)
        if (f->params[i].buf && !params[i].data) {
            tile_sb_printf(err, "parameter '%s' has no data", f->params[i].name);
            st = TILE_ERR_USER;
        }
    for (int i = 0; st == TILE_OK && i < nrets; i++) {
        if (rets[i].data) continue;
        size_t n = 1;
        for (int d = 0; d < rets[i].rank; d++) n *= (size_t)rets[i].shape[d];
        size_t bytes = f64 && tile_dtype_is_float(rets[i].dtype) ? n * sizeof(double) : tile_tensor_bytes(&rets[i]);
        if (!(rets[i].data = calloc(1, bytes + 8))) {
            tile_sb_printf(err, "out of memory allocating the output '%s' (%zu elements)", f->rets[i]->name, n);
            st = TILE_ERR_USER;
        }
    }
    double *scalars = tile_xcalloc((size_t)(nparams + 1), sizeof(double));
    if (opt && opt->scalars) memcpy(scalars, opt->scalars, sizeof(double) * (size_t)nparams);
    double t0 = tile_now();
    if (st == TILE_OK && bench_iters > 0) {
        if (b->bench(exe, f, sizes, params, rets, scalars, bench_iters, times_s, err)) st = TILE_ERR_USER;
    } else if (st == TILE_OK && b->run(exe, f, sizes, params, rets, scalars, opt, err)) st = TILE_ERR_USER;
    if (st == TILE_OK && rt_tracing()) {
        char args[512];
        int o = snprintf(args, sizeof args, "\"kernel\": \"%s\", \"target\": \"%s\"%s, \"sizes\": [", f->name, b->name, bench_iters > 0 ? ", \"bench\": true" : "");
        for (int i = 0; i < f->nsizes && o < 400; i++) o += snprintf(args + o, sizeof args - (size_t)o, "%s%lld", i ? ", " : "", (long long)sizes[i]);
        snprintf(args + o, sizeof args - (size_t)o, "]");
        rt_trace_span("run", "run", t0, tile_now() - t0, args);
    }
    free(scalars);
    free(sizes);
    return st;
}

tile_status tile_kernel_ir_for(tile_kernel *k, const char *target, const char *after_pass, char **text, char **error) {
    tile_strbuf out = {0}, err = {0};
    tile_status st = TILE_OK;
    *text = NULL;
    if (error) *error = NULL;
    if (!target || !strcmp(target, "auto")) target = tile_auto_target();
    /* the pipeline needs no device: `tile ir --target cuda` works in any build */
    const char *pipeline;
    const tile_backend *b = parse_target(target, &pipeline, &err);
    if (!b) st = TILE_ERR_USER;
    else {
        ir_module *mod;
        ir_func *f;
        st = lower_for_target(k, pipeline, after_pass, &mod, &f, &err);
        if (st == TILE_OK) {
            ir_print_func(f, &out);
            ir_module_free(mod);
        }
    }
    if (st == TILE_OK) *text = sb_take(&out);
    else tile_sb_free(&out);
    if (st != TILE_OK && error) *error = sb_take(&err);
    else tile_sb_free(&err);
    return st;
}

tile_status tile_kernel_explain(tile_kernel *k, const char *target, const char *after_pass, char **text, char **error) {
    tile_strbuf out = {0}, err = {0};
    tile_status st = TILE_OK;
    *text = NULL;
    if (error) *error = NULL;
    if (!target || !strcmp(target, "auto")) target = tile_auto_target();
    const char *pipeline;
    const tile_backend *b = parse_target(target, &pipeline, &err);
    if (!b) st = TILE_ERR_USER;
    else {
        ir_module *mod;
        ir_func *f;
        st = lower_for_target(k, pipeline, after_pass, &mod, &f, &err);
        if (st == TILE_OK) {
            /* the code generator records its own decisions while it emits (source dropped) */
            if (!after_pass && b->emit) {
                tile_strbuf src = {0};
                if (b->emit(f, &src, &err)) st = TILE_ERR_USER;
                tile_sb_free(&src);
            }
            if (st == TILE_OK) ir_explain_print(f, b->name, &out);
            ir_module_free(mod);
        }
    }
    if (st == TILE_OK) *text = sb_take(&out);
    else tile_sb_free(&out);
    if (st != TILE_OK && error) *error = sb_take(&err);
    else tile_sb_free(&err);
    return st;
}

tile_status tile_kernel_emit(tile_kernel *k, const char *target, char **source, char **error) {
    tile_strbuf out = {0}, err = {0};
    tile_status st = TILE_OK;
    *source = NULL;
    if (error) *error = NULL;
    if (!target || !strcmp(target, "auto")) target = tile_auto_target();
    const char *pipeline;
    const tile_backend *b = parse_target(target, &pipeline, &err);
    if (!b) st = TILE_ERR_USER;
    else if (!b->emit) {
        tile_sb_printf(&err, "the target '%s' has no generated source; use `tile ir`", target);
        st = TILE_ERR_USER;
    } else {
        ir_module *mod;
        ir_func *f;
        st = lower_for_target(k, pipeline, NULL, &mod, &f, &err);
        if (st == TILE_OK) {
            if (b->emit(f, &out, &err)) st = TILE_ERR_USER;
            ir_module_free(mod);
        }
    }
    if (st == TILE_OK) *source = sb_take(&out);
    else tile_sb_free(&out);
    if (st != TILE_OK && error) *error = sb_take(&err);
    else tile_sb_free(&err);
    return st;
}

tile_status tile_run(tile_kernel *k, const char *target, tile_tensor *params, int nparams, tile_tensor *rets, int nrets,
                     const tile_run_options *opt, char **error) {
    if (error) *error = NULL;
    tile_strbuf err = {0};
    tile_status st = TILE_OK;
    if (!k) {
        tile_sb_puts(&err, "tile_run: kernel is NULL");
        st = TILE_ERR_USER;
    } else {
        if (!target || !strcmp(target, "auto")) target = tile_auto_target();
        const char *pipeline;
        const tile_backend *b = find_backend(target, &pipeline, &err, &st);
        if (b) st = run_backend(k, b, pipeline, params, nparams, rets, nrets, opt, 0, NULL, &err);
    }
    if (st != TILE_OK && error) *error = sb_take(&err);
    else tile_sb_free(&err);
    return st;
}

tile_status tile_bench(tile_kernel *k, const char *target, tile_tensor *params, int nparams, tile_tensor *rets, int nrets,
                       const tile_run_options *opt, int iters, double *times_s, int *device_time, char **error) {
    if (error) *error = NULL;
    if (device_time) *device_time = 0;
    tile_strbuf err = {0};
    tile_status st = TILE_OK;
    const tile_backend *b = NULL;
    const char *pipeline = NULL;
    if (!k) tile_sb_puts(&err, "tile_bench: kernel is NULL"), st = TILE_ERR_USER;
    else if (iters < 1) tile_sb_printf(&err, "tile_bench: iters must be at least 1, got %d", iters), st = TILE_ERR_USER;
    else if (!times_s) tile_sb_puts(&err, "tile_bench: times_s is NULL"), st = TILE_ERR_USER;
    if (st == TILE_OK) {
        if (!target || !strcmp(target, "auto")) target = tile_auto_target();
        b = find_backend(target, &pipeline, &err, &st);
    }
    if (st == TILE_OK && b->bench && !(opt && opt->f64_reference)) {
        st = run_backend(k, b, pipeline, params, nparams, rets, nrets, opt, iters, times_s, &err);
        if (st == TILE_OK && device_time) *device_time = 1;
    } else if (st == TILE_OK) {
        /* host time of whole runs (copies included where the target has any). The outputs the
         * warm-up run allocates are reused by the timed runs, as a caller that owns its output
         * buffers would: a fresh calloc per run put a page-faulting or zeroing pass over every
         * output into each timed run (a returned buffer starts uninitialised by the language's
         * rules, so no kernel may depend on those zeros) */
        char *e = NULL;
        for (int it = -1; it < iters && st == TILE_OK; it++) {
            double t0 = tile_now();
            st = tile_run(k, target, params, nparams, rets, nrets, opt, &e);
            if (it >= 0) times_s[it] = tile_now() - t0;
        }
        if (e) tile_sb_puts(&err, e);
        tile_free(e);
    }
    if (st != TILE_OK && error) *error = sb_take(&err);
    else tile_sb_free(&err);
    return st;
}

tile_status tile_target_info(const char *target, char **device, char **why) {
    if (device) *device = NULL;
    if (why) *why = NULL;
    if (!target) return TILE_ERR_USER;
    const tile_backend *b = tile_backend_find(target);
    if (!b) {
        if (why) { tile_strbuf sb = {0}; tile_sb_printf(&sb, "unknown target '%s'", target); *why = sb_take(&sb); }
        return TILE_ERR_USER;
    }
    tile_strbuf w = {0}, d = {0};
    tile_status st = TILE_OK;
    if (!usable(b, &w)) st = TILE_ERR_UNAVAILABLE;
    else if (b->device_name) b->device_name(&d);
    if (device && st == TILE_OK) *device = sb_take(&d);
    else tile_sb_free(&d);
    if (why && st != TILE_OK) *why = sb_take(&w);
    else tile_sb_free(&w);
    return st;
}

char *tile_devices_report(void) {
    tile_strbuf sb = {0};
    for (int i = 0; i < TILE_BACKEND_COUNT; i++) {
        const tile_backend *b = tile_backend_at(i);
        tile_strbuf why = {0}, dev = {0};
        bool ok = usable(b, &why);
        if (ok && b->doc) tile_sb_puts(&dev, b->doc);
        else if (ok && b->device_name) b->device_name(&dev);
        tile_sb_printf(&sb, "%-8s %-13s %s\n", b->name, ok ? "available" : "unavailable", ok ? (dev.data ? dev.data : "") : (why.data ? why.data : ""));
        tile_sb_free(&why);
        tile_sb_free(&dev);
    }
    tile_sb_printf(&sb, "auto     -> %s\n", tile_auto_target());
    return sb_take(&sb);
}
