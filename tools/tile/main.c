/* tile — the command-line front of the toolchain.
 *
 *   tile check FILE [-D NAME=VALUE ...]              parse and check; exit 1 on error
 *   tile ir FILE [-f FUNC] [-D ...] [--after PASS] [--explain]
 *                                              print the Tile IR, or (--explain) the
 *                                              lowering of each tile op and why faster
 *                                              ones were declined
 *   tile run FILE [options]                           run a kernel (see usage)
 *   tile emit FILE --target T                         print the generated source (C, OpenCL C, CUDA C)
 *   tile fuzz --seconds N [--targets ...]             random programs on every target vs the interpreter
 *   tile devices                                      the targets this machine has
 *   tile env [--options | --markdown]                 the knob registry (src/base/knob_list.h)
 *   check, ir, run and emit take --option NAME=VALUE    a per-kernel compile option
 *   tile launch / link-bench / link-topo / store      TileLink tools (tools/tile/cli_link.c)
 *
 * Exit codes: 0 ok, 1 user error, 2 check failed, 3 internal error.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tile.h"

/* TileLink subcommands live in cli_link.c; weak so the CLI links without them. */
extern int tile_cmd_launch(int argc, char **argv) __attribute__((weak));
extern int tile_cmd_link_bench(int argc, char **argv) __attribute__((weak));
extern int tile_cmd_link_topo(int argc, char **argv) __attribute__((weak));
extern int tile_cmd_store(int argc, char **argv) __attribute__((weak));
extern int tile_cmd_link_status(int argc, char **argv) __attribute__((weak));
/* `tile fuzz` lives in cli_fuzz.c (random programs, every target against the interpreter). */
extern int tile_cmd_fuzz(int argc, char **argv) __attribute__((weak));

enum { EXIT_OK = 0, EXIT_USER = 1, EXIT_CHECK = 2, EXIT_INTERNAL = 3 };

static void usage(FILE *out) {
    fputs("usage: tile COMMAND [ARGS]\n"
          "\n"
          "  check FILE [-D NAME=VALUE ...]         parse and check a TileLang file\n"
          "  (check, ir, run, emit also take --option NAME=VALUE: a per-kernel compile option,\n"
          "   see tile env --options)\n"
          "  ir FILE [-f FUNC] [-D ...] [--target T] [--after PASS] [--explain]\n"
          "                                         print the Tile IR of a kernel (--explain:\n"
          "                                         each tile op's lowering, and why faster\n"
          "                                         ones were declined)\n"
          "  run FILE [-f FUNC] [-D NAME=VALUE ...] [--shape NAME=64x32[:dtype] ...]\n"
          "           [--target interp|cpu|cuda|opencl|auto] [--in NAME=PATH.npy ...]\n"
          "           [--out NAME=PATH.npy ...] [--seed N] [--int-range LO:HI] [--check] [--bench] [--iters N]\n"
          "           [--no-checks] [--quiet] [--trace FILE.json]\n"
          "                                         run a kernel on random or given inputs\n"
          "  emit FILE --target cpu|cuda|opencl     print the generated source\n"
          "  devices                                list the targets available here\n"
          "  env [--options | --markdown]           the environment variables Tile reads, with their\n"
          "                                         values (--options: the per-kernel options;\n"
          "                                         --markdown: docs/knobs.md)\n"
          "  fuzz --seconds N [--targets interp,cpu] random programs on every target against the\n"
          "                                         interpreter; mismatches shrunk to reproducers\n"
          "  launch -n N -- CMD ARGS                start N ranks of a TileLink program\n"
          "  link-bench, link-topo, store           TileLink benchmark, topology, key-value store\n"
          "  link-status --pid PID                  what every rank of a running TileLink job is doing\n"
          "  version                                print the version\n"
          "\n"
          "Exit codes: 0 ok, 1 user error, 2 check failed, 3 internal error.\n"
          "See docs/cli.md for details.\n",
          out);
}

/* ---------- options ---------- */
typedef struct kv { const char *name, *value; } kv;

typedef struct options {
    const char *file;
    const char *func;
    const char *target;
    const char *after;
    const char **defines;
    int ndefines;
    kv *shapes, *ins, *outs, *opts;
    int nshapes, nins, nouts, nopts;
    unsigned long long seed;
    int int_range;              /* --int-range given: integer inputs from [int_lo, int_hi) */
    long long int_lo, int_hi;
    int check, bench, iters, quiet, no_checks;
    int explain; /* ir --explain */
    int owned_defines; /* the last owned_defines entries of defines were allocated here */
} options;

static void push_str(const char ***arr, int *n, const char *s) {
    *arr = cli_xrealloc(*arr, sizeof(char *) * (size_t)(*n + 1));
    (*arr)[(*n)++] = s;
}

static int push_kv(kv **arr, int *n, const char *flag, const char *arg) {
    const char *eq = arg ? strchr(arg, '=') : NULL;
    if (!eq || eq == arg || !eq[1]) {
        fprintf(stderr, "tile: %s expects NAME=VALUE, got '%s'\n", flag, arg ? arg : "");
        return -1;
    }
    *arr = cli_xrealloc(*arr, sizeof(kv) * (size_t)(*n + 1));
    char *name = cli_xmalloc((size_t)(eq - arg) + 1);
    memcpy(name, arg, (size_t)(eq - arg));
    name[eq - arg] = 0;
    (*arr)[*n].name = name;
    (*arr)[*n].value = eq + 1;
    (*n)++;
    return 0;
}

static int parse_options(int argc, char **argv, options *o, const char *cmd) {
    memset(o, 0, sizeof *o);
    o->target = "auto";
    o->iters = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED_VALUE()                                                         \
    do {                                                                     \
        if (!v) { fprintf(stderr, "tile %s: %s needs a value\n", cmd, a); return -1; } \
        i++;                                                                 \
    } while (0)
        if (!strcmp(a, "-f") || !strcmp(a, "--func")) { NEED_VALUE(); o->func = v; }
        else if (!strcmp(a, "-D")) { NEED_VALUE(); push_str(&o->defines, &o->ndefines, v); }
        else if (!strncmp(a, "-D", 2) && a[2]) push_str(&o->defines, &o->ndefines, a + 2);
        else if (!strcmp(a, "--shape")) { NEED_VALUE(); if (push_kv(&o->shapes, &o->nshapes, a, v)) return -1; }
        else if (!strcmp(a, "--in")) { NEED_VALUE(); if (push_kv(&o->ins, &o->nins, a, v)) return -1; }
        else if (!strcmp(a, "--out")) { NEED_VALUE(); if (push_kv(&o->outs, &o->nouts, a, v)) return -1; }
        else if (!strcmp(a, "--option")) { NEED_VALUE(); if (push_kv(&o->opts, &o->nopts, a, v)) return -1; }
        else if (!strncmp(a, "--option=", 9)) { if (push_kv(&o->opts, &o->nopts, "--option", a + 9)) return -1; }
        else if (!strcmp(a, "--target") || !strcmp(a, "-t")) { NEED_VALUE(); o->target = v; }
        else if (!strncmp(a, "--target=", 9)) o->target = a + 9;
        else if (!strcmp(a, "--after")) { NEED_VALUE(); o->after = v; }
        else if (!strcmp(a, "--seed")) {
            NEED_VALUE();
            char *end;
            o->seed = strtoull(v, &end, 0);
            if (*end || !*v) { fprintf(stderr, "tile %s: --seed expects a number, got '%s'\n", cmd, v); return -1; }
        } else if (!strcmp(a, "--int-range")) {
            NEED_VALUE();
            char *end, *end2;
            o->int_lo = strtoll(v, &end, 0);
            if (end == v || *end != ':' || (o->int_hi = strtoll(end + 1, &end2, 0), end2 == end + 1 || *end2) || o->int_hi <= o->int_lo) {
                fprintf(stderr, "tile %s: --int-range expects LO:HI with LO < HI, got '%s'\n", cmd, v);
                return -1;
            }
            o->int_range = 1;
        } else if (!strcmp(a, "--iters")) {
            NEED_VALUE();
            o->iters = atoi(v);
            if (o->iters < 1) { fprintf(stderr, "tile %s: --iters expects a positive number, got '%s'\n", cmd, v); return -1; }
        } else if (!strcmp(a, "--check")) o->check = 1;
        else if (!strcmp(a, "--explain") && !strcmp(cmd, "ir")) o->explain = 1;
        else if (!strcmp(a, "--bench")) o->bench = 1;
        else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) o->quiet = 1;
        else if (!strcmp(a, "--no-checks")) o->no_checks = 1;
        else if (!strcmp(a, "--trace")) {
            NEED_VALUE();
            char *e = NULL;
            if (tile_trace_start(v, &e) != TILE_OK) { fprintf(stderr, "tile %s: --trace: %s\n", cmd, e ? e : v); tile_free(e); return -1; }
        }
        else if (a[0] == '-' && a[1]) { fprintf(stderr, "tile %s: unknown option '%s' (see tile --help)\n", cmd, a); return -1; }
        else if (!o->file) o->file = a;
        else { fprintf(stderr, "tile %s: unexpected argument '%s'\n", cmd, a); return -1; }
#undef NEED_VALUE
    }
    if (!o->file) { fprintf(stderr, "tile %s: no input file (usage: tile %s FILE ...)\n", cmd, cmd); return -1; }
    return 0;
}

static void free_options(options *o) {
    for (int i = 0; i < o->nshapes; i++) free((void *)o->shapes[i].name);
    for (int i = 0; i < o->nins; i++) free((void *)o->ins[i].name);
    for (int i = 0; i < o->nouts; i++) free((void *)o->outs[i].name);
    for (int i = 0; i < o->nopts; i++) free((void *)o->opts[i].name);
    free(o->opts);
    for (int i = o->ndefines - o->owned_defines; i < o->ndefines; i++) free((void *)o->defines[i]);
    free(o->shapes);
    free(o->ins);
    free(o->outs);
    free(o->defines);
}

static tile_module *compile(options *o) {
    tile_module *m = NULL;
    char *diag = NULL;
    /* --shape A=64x32:float64 gives an unannotated parameter its dtype: pass it to the
     * compiler as the definition A.dtype=float64 */
    for (int i = 0; i < o->nshapes; i++) {
        const char *colon = strchr(o->shapes[i].value, ':');
        if (!colon) continue;
        char *d = cli_xmalloc(strlen(o->shapes[i].name) + strlen(colon) + 8);
        sprintf(d, "%s.dtype=%s", o->shapes[i].name, colon + 1);
        push_str(&o->defines, &o->ndefines, d);
        o->owned_defines++;
    }
    tile_status st = tile_compile_file_kernel(o->file, o->func, o->defines, o->ndefines, &m, &diag);
    if (diag) { fputs(diag, stderr); tile_free(diag); }
    /* --option NAME=VALUE: the kernels' compile options (after the source's pass_configs) */
    for (int i = 0; st == TILE_OK && i < o->nopts; i++) {
        char *err = NULL;
        st = tile_module_set_option(m, o->opts[i].name, o->opts[i].value, &err);
        if (st != TILE_OK) fprintf(stderr, "tile: --option %s=%s: %s\n", o->opts[i].name, o->opts[i].value, err ? err : "failed");
        tile_free(err);
    }
    if (st != TILE_OK) {
        tile_module_free(m);
        return NULL;
    }
    return m;
}

static tile_kernel *pick_kernel(tile_module *m, const char *func) {
    tile_kernel *k = tile_module_kernel(m, func);
    if (k) return k;
    if (func) fprintf(stderr, "tile: no kernel named '%s'; the file has:", func);
    else fprintf(stderr, "tile: the file has %d kernels; choose one with -f:", tile_module_num_kernels(m));
    for (int i = 0; i < tile_module_num_kernels(m); i++) fprintf(stderr, " %s", tile_module_kernel_name(m, i));
    fputc('\n', stderr);
    return NULL;
}

/* ---------- check / ir ---------- */
static int cmd_check(int argc, char **argv) {
    options o;
    if (parse_options(argc, argv, &o, "check")) return EXIT_USER;
    tile_module *m = compile(&o);
    if (!m) { free_options(&o); return EXIT_USER; }
    printf("%s: ok (%d kernel%s:", o.file, tile_module_num_kernels(m), tile_module_num_kernels(m) == 1 ? "" : "s");
    for (int i = 0; i < tile_module_num_kernels(m); i++) printf(" %s", tile_module_kernel_name(m, i));
    printf(")\n");
    tile_module_free(m);
    free_options(&o);
    return EXIT_OK;
}

static int cmd_ir(int argc, char **argv) {
    options o;
    if (parse_options(argc, argv, &o, "ir")) return EXIT_USER;
    tile_module *m = compile(&o);
    if (!m) { free_options(&o); return EXIT_USER; }
    int rc = EXIT_OK;
    /* without --target/--after: the IR as sema made it; else after the target's passes.
     * --explain: the decisions of the target's passes (and, without --after, of its code
     * generator) instead of the IR; its target defaults to the one `run` would pick */
    const char *target = !strcmp(o.target, "auto") && !o.after && !o.explain ? "interp" : o.target;
    for (int i = 0; i < tile_module_num_kernels(m) && rc == EXIT_OK; i++) {
        tile_kernel *k = o.func ? pick_kernel(m, o.func) : tile_module_kernel(m, tile_module_kernel_name(m, i));
        if (!k) { rc = EXIT_USER; break; }
        char *s = NULL, *err = NULL;
        tile_status st = o.explain ? tile_kernel_explain(k, target, o.after, &s, &err) : tile_kernel_ir_for(k, target, o.after, &s, &err);
        if (st != TILE_OK) {
            fprintf(stderr, "tile ir: %s\n", err);
            rc = EXIT_USER;
        } else {
            if (i) putchar('\n');
            fputs(s, stdout);
        }
        tile_free(s);
        tile_free(err);
        if (o.func) break;
    }
    tile_module_free(m);
    free_options(&o);
    return rc;
}

/* ---------- run ---------- */
static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static size_t count_of(const tile_tensor *t) {
    size_t n = 1;
    for (int d = 0; d < t->rank; d++) n *= (size_t)t->shape[d];
    return n;
}

/* Random data: floats uniform in [-1, 1), signed ints in [-8, 8), unsigned in [0, 16);
 * with an integer range (lo < hi, --int-range), every integer in [lo, hi). */
static void fill_random(tile_tensor *t, uint64_t seed, const long long *range) {
    size_t n = count_of(t);
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++) {
        uint64_t r = splitmix(&s);
        if (tile_dtype_is_float(t->dtype)) tile_store_f(t->dtype, t->data, i, (double)(r >> 11) * 0x1.0p-52 - 1.0);
        else if (t->dtype == TILE_DT_BOOL) tile_store_i(t->dtype, t->data, i, (int64_t)(r & 1));
        else if (range) tile_store_i(t->dtype, t->data, i, (int64_t)(range[0] + (long long)(r % (uint64_t)(range[1] - range[0]))));
        else if (tile_dtype_is_signed(t->dtype)) tile_store_i(t->dtype, t->data, i, (int64_t)(r % 16) - 8);
        else tile_store_i(t->dtype, t->data, i, (int64_t)(r % 16));
    }
}

static int parse_shape(const char *s, tile_tensor *t, const char *name) {
    /* 64x32[:dtype] */
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    char *colon = strchr(buf, ':');
    if (colon) {
        *colon = 0;
        tile_dtype dt = tile_dtype_parse(colon + 1);
        if (dt == TILE_DT_INVALID) { fprintf(stderr, "tile run: --shape %s: unknown dtype '%s'\n", name, colon + 1); return -1; }
        if (dt != t->dtype) {
            fprintf(stderr, "tile run: --shape %s: the kernel declares %s as %s, not %s\n", name, name, tile_dtype_name(t->dtype), tile_dtype_name(dt));
            return -1;
        }
    }
    int rank = 0;
    char *p = buf;
    while (*p) {
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end == p || v <= 0 || rank == 8) { fprintf(stderr, "tile run: --shape %s=%s: expected positive dimensions like 64x32\n", name, s); return -1; }
        t->shape[rank++] = v;
        p = end;
        if (*p == 'x' || *p == 'X' || *p == ',') p++;
        else if (*p) { fprintf(stderr, "tile run: --shape %s=%s: expected dimensions like 64x32\n", name, s); return -1; }
    }
    t->rank = rank;
    return 0;
}

/* Read an .npy into a tensor of dtype dt (raw bits for dtypes NumPy lacks; other numeric
 * files are converted with the rounding rules of docs/numbers.md). */
static int load_npy(const char *path, const char *name, tile_dtype dt, tile_tensor *t) {
    tile_npy n;
    char err[512];
    if (tile_npy_read(path, &n, err, sizeof err)) { fprintf(stderr, "tile run: --in %s=%s: %s\n", name, path, err); return -1; }
    t->dtype = dt;
    t->rank = n.rank;
    for (int d = 0; d < n.rank; d++) t->shape[d] = n.shape[d];
    size_t cnt = n.count;
    t->data = cli_xcalloc(1, tile_dtype_storage_bytes(dt, cnt) + 8);
    const char *want = tile_npy_descr_for(dt);
    tile_dtype fdt = tile_npy_dtype_of_descr(n.descr);
    if (!strcmp(n.descr, want) || (want[1] == n.descr[1] && !strcmp(want + 1, n.descr + 1))) {
        if (dt == TILE_DT_FP4_E2M1) {
            for (size_t i = 0; i < cnt; i++) tile_store_bits(dt, t->data, i, ((const uint8_t *)n.data)[i] & 0xF);
        } else memcpy(t->data, n.data, tile_dtype_storage_bytes(dt, cnt));
    } else if (fdt != TILE_DT_INVALID) {
        for (size_t i = 0; i < cnt; i++) {
            if (tile_dtype_is_float(fdt) || tile_dtype_is_float(dt)) tile_store_f(dt, t->data, i, tile_load_f(fdt, n.data, i));
            else tile_store_i(dt, t->data, i, tile_load_i(fdt, n.data, i));
        }
    } else {
        fprintf(stderr, "tile run: --in %s=%s: cannot use a '%s' array for a %s tensor (expected '%s')\n", name, path, n.descr, tile_dtype_name(dt), want);
        tile_npy_free(&n);
        free(t->data);
        t->data = NULL;
        return -1;
    }
    tile_npy_free(&n);
    return 0;
}

static int save_npy(const char *path, const char *name, const tile_tensor *t) {
    size_t cnt = count_of(t);
    const char *descr = tile_npy_descr_for(t->dtype);
    char err[512];
    int rc;
    if (t->dtype == TILE_DT_FP4_E2M1) {
        uint8_t *u = cli_xmalloc(cnt + 1);
        for (size_t i = 0; i < cnt; i++) u[i] = (uint8_t)tile_load_bits(t->dtype, t->data, i);
        rc = tile_npy_write(path, descr, t->rank, t->shape, u, 1, err, sizeof err);
        free(u);
    } else rc = tile_npy_write(path, descr, t->rank, t->shape, t->data, tile_dtype_storage_bytes(t->dtype, 1), err, sizeof err);
    if (rc) fprintf(stderr, "tile run: --out %s=%s: %s\n", name, path, err);
    return rc;
}

/* Copy a tensor into f64 storage for the reference run (floats as doubles, ints as is). */
static tile_tensor to_f64(const tile_tensor *t) {
    tile_tensor r = *t;
    size_t cnt = count_of(t);
    if (!tile_dtype_is_float(t->dtype)) {
        size_t b = tile_dtype_storage_bytes(t->dtype, cnt);
        r.data = cli_xmalloc(b + 8);
        memcpy(r.data, t->data, b);
        return r;
    }
    double *d = cli_xmalloc(cnt * sizeof(double) + 8);
    for (size_t i = 0; i < cnt; i++) d[i] = tile_load_f(t->dtype, t->data, i);
    r.data = d;
    return r;
}

static double value_at(const tile_tensor *t, size_t i, bool f64) {
    if (f64 && tile_dtype_is_float(t->dtype)) return ((const double *)t->data)[i];
    return tile_load_f(t->dtype, t->data, i);
}

/* --check's tolerance, a norm-wise relative error by output dtype: tile_dtype_check_tolerance
 * (core.h, docs/cli.md). */
typedef struct err_stats { double norm_rel, max_abs, max_ref; size_t mismatches, nonfinite; } err_stats;

static err_stats compare(const tile_tensor *a, const tile_tensor *ref, bool ref_f64) {
    err_stats s = {0};
    size_t n = count_of(a);
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double x = value_at(a, i, false), y = value_at(ref, i, ref_f64);
        if (isnan(x) != isnan(y) || (isinf(x) && x != y)) { s.nonfinite++; continue; }
        if (isnan(x) || isinf(x)) continue;
        double e = fabs(x - y);
        if (e > s.max_abs) s.max_abs = e;
        if (fabs(y) > s.max_ref) s.max_ref = fabs(y);
        if (x != y) s.mismatches++;
        num += e * e;
        den += y * y;
    }
    s.norm_rel = den > 0 ? sqrt(num / den) : sqrt(num);
    return s;
}

static void print_tensor_summary(const char *name, const tile_tensor *t) {
    size_t n = count_of(t);
    double mn = INFINITY, mx = -INFINITY, sum = 0;
    for (size_t i = 0; i < n; i++) {
        double v = tile_load_f(t->dtype, t->data, i);
        if (v < mn) mn = v;
        if (v > mx) mx = v;
        sum += v;
    }
    printf("%s: %s[", name, tile_dtype_name(t->dtype));
    for (int d = 0; d < t->rank; d++) printf("%s%lld", d ? ", " : "", (long long)t->shape[d]);
    printf("]  min %.6g  max %.6g  mean %.6g  first [", mn, mx, n ? sum / (double)n : 0.0);
    for (size_t i = 0; i < n && i < 6; i++) printf("%s%.6g", i ? ", " : "", tile_load_f(t->dtype, t->data, i));
    printf("%s]\n", n > 6 ? ", ..." : "");
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ---------- --target all: the portability table ---------- */
typedef struct target_result {
    tile_tensor *params, *rets; /* outputs of one run from the initial inputs */
    double median_s;
    int ok;
} target_result;

static void free_result(target_result *r, int np, int nr) {
    for (int i = 0; r->params && i < np; i++) free(r->params[i].data);
    for (int i = 0; r->rets && i < nr; i++) free(r->rets[i].data);
    free(r->params);
    free(r->rets);
}

/* Run k on target from copies of the initial inputs; time the median of iters runs. */
static tile_status run_target_once(tile_kernel *k, const char *target, const tile_tensor *initial, int np, int nr,
                                   const tile_run_options *ro, int iters, target_result *r, char **err) {
    r->params = cli_xcalloc((size_t)np + 1, sizeof(tile_tensor));
    r->rets = cli_xcalloc((size_t)nr + 1, sizeof(tile_tensor));
    tile_status st = TILE_OK;
    for (int i = 0; i < np; i++) {
        r->params[i] = initial[i];
        if (initial[i].data) {
            r->params[i].data = cli_xmalloc(tile_tensor_bytes(&initial[i]) + 8);
            memcpy(r->params[i].data, initial[i].data, tile_tensor_bytes(&initial[i]));
        }
    }
    /* run 0 compiles; its outputs are the ones compared */
    st = tile_run(k, target, r->params, np, r->rets, nr, ro, err);
    if (st != TILE_OK) return st;
    /* timing on copies, so that kernels updating a parameter in place keep run 0's outputs */
    tile_tensor *tp = cli_xcalloc((size_t)np + 1, sizeof(tile_tensor)), *tr = cli_xcalloc((size_t)nr + 1, sizeof(tile_tensor));
    for (int i = 0; i < np; i++) {
        tp[i] = initial[i];
        if (initial[i].data) {
            tp[i].data = cli_xmalloc(tile_tensor_bytes(&initial[i]) + 8);
            memcpy(tp[i].data, initial[i].data, tile_tensor_bytes(&initial[i]));
        }
    }
    double *times = cli_xcalloc((size_t)iters + 1, sizeof(double));
    st = tile_bench(k, target, tp, np, tr, nr, ro, iters, times, NULL, err);
    if (st == TILE_OK) {
        qsort(times, (size_t)iters, sizeof(double), cmp_double);
        r->median_s = times[iters / 2];
    }
    for (int i = 0; i < np; i++) free(tp[i].data);
    for (int i = 0; i < nr; i++) free(tr[i].data);
    free(tp);
    free(tr);
    free(times);
    return st;
}

static int run_all_targets(tile_kernel *k, const tile_tensor *initial, int np, int nr, const tile_run_options *ro, int iters_opt) {
    /* every target the library registers, in its order */
    enum { NT_MAX = 16 };
    const char *targets[NT_MAX];
    int NT = tile_num_targets() < NT_MAX ? tile_num_targets() : NT_MAX;
    for (int t = 0; t < NT; t++) targets[t] = tile_target_name(t);
    target_result res[NT_MAX];
    memset(res, 0, sizeof res);
    int rc = EXIT_OK;
    int iters = iters_opt ? iters_opt : 3;
    printf("%-8s %-58s %-14s %s\n", "target", "device", "max rel error", "median time");
    for (int t = 0; t < NT; t++) {
        char *dev = NULL, *why = NULL, *err = NULL;
        if (tile_target_info(targets[t], &dev, &why) != TILE_OK) {
            printf("%-8s %-58.58s %-14s %s\n", targets[t], why ? why : "unavailable", "-", "-");
            tile_free(why);
            continue;
        }
        tile_status st = run_target_once(k, targets[t], initial, np, nr, ro, iters, &res[t], &err);
        if (st != TILE_OK) {
            printf("%-8s %-58.58s %-14s %s\n", targets[t], dev, "FAILED", "-");
            fprintf(stderr, "tile run --target all: %s: %s\n", targets[t], err ? err : "failed");
            if (t == 0) rc = EXIT_USER; /* no reference */
            else if (rc == EXIT_OK) rc = EXIT_CHECK;
            tile_free(err);
            tile_free(dev);
            continue;
        }
        res[t].ok = 1;
        /* error against the interpreter over every output (returned tensors, changed params) */
        double worst = 0;
        bool pass = true;
        if (t > 0 && res[0].ok) {
            for (int i = 0; i < np + nr; i++) {
                bool is_ret = i >= np;
                tile_tensor *a = is_ret ? &res[t].rets[i - np] : &res[t].params[i];
                tile_tensor *ref = is_ret ? &res[0].rets[i - np] : &res[0].params[i];
                if (!a->data || !ref->data) continue;
                if (!is_ret && !memcmp(initial[i].data, ref->data, tile_tensor_bytes(ref))) continue;
                err_stats s = compare(a, ref, false);
                if (s.norm_rel > worst) worst = s.norm_rel;
                if (s.nonfinite || s.norm_rel > tile_dtype_check_tolerance(a->dtype)) pass = false;
            }
        }
        char errtxt[32];
        if (t == 0) snprintf(errtxt, sizeof errtxt, "(reference)");
        else snprintf(errtxt, sizeof errtxt, "%.3g%s", worst, pass ? "" : " FAIL");
        if (!pass && rc == EXIT_OK) rc = EXIT_CHECK;
        printf("%-8s %-58.58s %-14s %.4g ms\n", targets[t], dev, errtxt, res[t].median_s * 1e3);
        tile_free(dev);
    }
    for (int t = 0; t < NT; t++) free_result(&res[t], np, nr);
    return rc;
}

static int cmd_run(int argc, char **argv) {
    options o;
    if (parse_options(argc, argv, &o, "run")) return EXIT_USER;
    int rc = EXIT_OK;
    tile_module *m = compile(&o);
    tile_kernel *k = m ? pick_kernel(m, o.func) : NULL;
    int np = k ? tile_kernel_num_params(k) : 0, nr = k ? tile_kernel_num_rets(k) : 0;
    tile_tensor *params = cli_xcalloc((size_t)np + 1, sizeof(tile_tensor));
    tile_tensor *initial = cli_xcalloc((size_t)np + 1, sizeof(tile_tensor));
    tile_tensor *rets = cli_xcalloc((size_t)nr + 1, sizeof(tile_tensor));
    double *scalars = cli_xcalloc((size_t)np + 1, sizeof(double));
    const char *target = o.target;
    if (!k) { rc = EXIT_USER; goto out; }
    if (!strcmp(target, "auto")) target = tile_auto_target();

    /* scalar parameters take their values from -D */
    for (int i = 0; i < np; i++) {
        if (tile_kernel_param_is_tensor(k, i)) continue;
        const char *nm = tile_kernel_param_name(k, i);
        bool found = false;
        for (int d = 0; d < o.ndefines; d++) {
            size_t l = strlen(nm);
            if (!strncmp(o.defines[d], nm, l) && o.defines[d][l] == '=') {
                const char *v = o.defines[d] + l + 1;
                scalars[i] = !strcmp(v, "True") ? 1 : !strcmp(v, "False") ? 0 : strtod(v, NULL);
                found = true;
            }
        }
        if (!found) { fprintf(stderr, "tile run: scalar parameter '%s' needs a value: -D %s=VALUE\n", nm, nm); rc = EXIT_USER; goto out; }
    }
    /* tensors given with --in or --shape */
    for (int j = 0; j < o.nins + o.nshapes; j++) {
        bool is_in = j < o.nins;
        kv *e = is_in ? &o.ins[j] : &o.shapes[j - o.nins];
        int idx = -1;
        for (int i = 0; i < np; i++)
            if (!strcmp(tile_kernel_param_name(k, i), e->name)) idx = i;
        if (idx < 0 || !tile_kernel_param_is_tensor(k, idx)) {
            fprintf(stderr, "tile run: %s %s: kernel '%s' has no tensor parameter named '%s'\n", is_in ? "--in" : "--shape", e->name,
                    tile_module_kernel_name(m, 0) ? o.func ? o.func : tile_module_kernel_name(m, 0) : "?", e->name);
            rc = EXIT_USER;
            goto out;
        }
        tile_tensor *t = &params[idx];
        t->dtype = tile_kernel_param_dtype(k, idx);
        if (is_in) {
            if (t->data) { fprintf(stderr, "tile run: --in %s given twice\n", e->name); rc = EXIT_USER; goto out; }
            if (load_npy(e->value, e->name, t->dtype, t)) { rc = EXIT_USER; goto out; }
        } else if (!t->data && parse_shape(e->value, t, e->name)) { rc = EXIT_USER; goto out; }
        if (t->rank != tile_kernel_param_rank(k, idx)) {
            fprintf(stderr, "tile run: %s %s: '%s' has %d dimensions, the tensor given has %d\n", is_in ? "--in" : "--shape", e->name, e->name,
                    tile_kernel_param_rank(k, idx), t->rank);
            rc = EXIT_USER;
            goto out;
        }
    }
    char *err = NULL;
    if (tile_infer_shapes(k, params, np, rets, nr, &err) != TILE_OK) {
        fprintf(stderr, "tile run: %s\n", err);
        tile_free(err);
        rc = EXIT_USER;
        goto out;
    }
    for (int i = 0; i < np; i++) {
        if (!tile_kernel_param_is_tensor(k, i)) continue;
        params[i].dtype = tile_kernel_param_dtype(k, i);
        if (!params[i].data) {
            params[i].data = calloc(1, tile_tensor_bytes(&params[i]) + 8);
            if (!params[i].data) { fprintf(stderr, "tile run: out of memory allocating '%s'\n", tile_kernel_param_name(k, i)); rc = EXIT_USER; goto out; }
            long long range[2] = {o.int_lo, o.int_hi};
            if (o.int_range && !tile_dtype_is_float(params[i].dtype) && params[i].dtype != TILE_DT_BOOL && !tile_dtype_is_signed(params[i].dtype) && o.int_lo < 0) {
                fprintf(stderr, "tile run: --int-range %lld:%lld has negative values, but '%s' is %s\n", o.int_lo, o.int_hi, tile_kernel_param_name(k, i),
                        tile_dtype_name(params[i].dtype));
                rc = EXIT_USER;
                goto out;
            }
            fill_random(&params[i], o.seed * 0x100000001b3ull + (uint64_t)i * 7919 + 1, o.int_range ? range : NULL);
        }
        initial[i] = params[i];
        initial[i].data = malloc(tile_tensor_bytes(&params[i]) + 8);
        if (!initial[i].data) { fprintf(stderr, "tile run: out of memory copying '%s'\n", tile_kernel_param_name(k, i)); rc = EXIT_USER; goto out; }
        memcpy(initial[i].data, params[i].data, tile_tensor_bytes(&params[i]));
    }
    tile_run_options ro = {-1, -1, -1, 0, scalars};
    if (o.no_checks) ro.check_bounds = ro.check_uninit = ro.check_races = 0;
    if (!strcmp(target, "all")) {
        rc = run_all_targets(k, initial, np, nr, &ro, o.iters);
        goto out;
    }
    double t0 = tile_now();
    tile_status st = tile_run(k, target, params, np, rets, nr, &ro, &err);
    double first_run = tile_now() - t0;
    if (st != TILE_OK) {
        fprintf(stderr, "%s%s", err, err && err[0] && err[strlen(err) - 1] == '\n' ? "" : "\n");
        tile_free(err);
        rc = st == TILE_ERR_INTERNAL ? EXIT_INTERNAL : EXIT_USER;
        goto out;
    }
    /* outputs: returned tensors and parameters the kernel changed */
    if (!o.quiet) {
        for (int i = 0; i < nr; i++) print_tensor_summary(tile_kernel_ret_name(k, i), &rets[i]);
        for (int i = 0; i < np; i++)
            if (tile_kernel_param_is_tensor(k, i) && memcmp(initial[i].data, params[i].data, tile_tensor_bytes(&params[i])))
                print_tensor_summary(tile_kernel_param_name(k, i), &params[i]);
    }
    if (o.check) {
        /* reference: the interpreter in f64 (on the interpreter target) */
        tile_tensor *rp = cli_xcalloc((size_t)np + 1, sizeof(tile_tensor));
        tile_tensor *rr = cli_xcalloc((size_t)nr + 1, sizeof(tile_tensor));
        bool ref_f64 = !strcmp(target, "interp");
        for (int i = 0; i < np; i++)
            if (tile_kernel_param_is_tensor(k, i)) rp[i] = ref_f64 ? to_f64(&initial[i]) : initial[i];
        for (int i = 0; i < np && !ref_f64; i++)
            if (rp[i].data) { void *d = cli_xmalloc(tile_tensor_bytes(&rp[i]) + 8); memcpy(d, rp[i].data, tile_tensor_bytes(&rp[i])); rp[i].data = d; }
        tile_run_options ref = ro;
        ref.f64_reference = ref_f64;
        st = tile_run(k, "interp", rp, np, rr, nr, &ref, &err);
        if (st != TILE_OK) {
            fprintf(stderr, "tile run: --check: the reference run failed: %s\n", err);
            tile_free(err);
            rc = EXIT_USER;
        } else {
            bool ok = true;
            for (int i = 0; i < np + nr; i++) {
                bool is_ret = i >= np;
                tile_tensor *a = is_ret ? &rets[i - np] : &params[i];
                tile_tensor *r = is_ret ? &rr[i - np] : &rp[i];
                if (!is_ret && (!tile_kernel_param_is_tensor(k, i) || !memcmp(initial[i].data, params[i].data, tile_tensor_bytes(&params[i])))) continue;
                err_stats s = compare(a, r, ref_f64);
                double tol = tile_dtype_check_tolerance(a->dtype);
                bool pass = s.nonfinite == 0 && s.norm_rel <= tol;
                if (!pass) ok = false;
                printf("check %s: max relative error %.3g (norm-wise; max abs error %.3g, max |ref| %.3g, %zu/%zu elements differ%s) against %s: %s (tolerance %.3g)\n",
                       is_ret ? tile_kernel_ret_name(k, i - np) : tile_kernel_param_name(k, i), s.norm_rel, s.max_abs, s.max_ref, s.mismatches,
                       count_of(a), s.nonfinite ? ", NaN/inf mismatch" : "", ref_f64 ? "the interpreter in f64" : "the interpreter", pass ? "ok" : "FAILED", tol);
            }
            if (!ok && rc == EXIT_OK) rc = EXIT_CHECK;
        }
        for (int i = 0; i < np; i++) free(rp[i].data);
        for (int i = 0; i < nr; i++) free(rr[i].data);
        free(rp);
        free(rr);
    }
    if (o.bench) {
        int iters = o.iters ? o.iters : (first_run > 1.0 ? 3 : first_run > 0.05 ? 10 : 20);
        double *times = cli_xcalloc((size_t)iters, sizeof(double));
        int devtime = 0;
        for (int i = 0; i < nr; i++) tile_tensor_free(&rets[i]);
        st = tile_bench(k, target, params, np, rets, nr, &ro, iters, times, &devtime, &err);
        if (st != TILE_OK) { fprintf(stderr, "%s\n", err); tile_free(err); rc = EXIT_USER; }
        if (st == TILE_OK) {
            qsort(times, (size_t)iters, sizeof(double), cmp_double);
            double med = times[iters / 2], flops = -1;
            tile_kernel_flops(k, params, np, &flops);
            printf("bench: target %s, median %.3f ms over %d runs (min %.3f ms)", target, med * 1e3, iters, times[0] * 1e3);
            if (flops > 0) printf(", %.4g GFLOP/s (%.4g GFLOP counted in the IR)", flops / med * 1e-9, flops * 1e-9);
            printf("; %s\n", devtime ? "device time of the kernel launches (CUDA events; data resident on the device, L2 flushed)" : "host time of whole runs");
        }
        free(times);
    }
    for (int j = 0; j < o.nouts; j++) {
        kv *e = &o.outs[j];
        tile_tensor *t = NULL;
        for (int i = 0; i < np; i++)
            if (tile_kernel_param_is_tensor(k, i) && !strcmp(tile_kernel_param_name(k, i), e->name)) t = &params[i];
        for (int i = 0; i < nr && !t; i++) {
            char alias[32];
            snprintf(alias, sizeof alias, "ret%d", i);
            if (!strcmp(tile_kernel_ret_name(k, i), e->name) || !strcmp(alias, e->name) || (nr == 1 && !strcmp(e->name, "ret"))) t = &rets[i];
        }
        if (!t) {
            fprintf(stderr, "tile run: --out %s: no parameter or returned tensor has that name (returned tensors are also ret, ret0, ret1, ...)\n", e->name);
            if (rc == EXIT_OK) rc = EXIT_USER;
            continue;
        }
        if (save_npy(e->value, e->name, t) && rc == EXIT_OK) rc = EXIT_USER;
    }
out:
    for (int i = 0; i < np; i++) { free(params[i].data); free(initial[i].data); }
    for (int i = 0; i < nr; i++) free(rets[i].data);
    free(params);
    free(initial);
    free(rets);
    free(scalars);
    tile_module_free(m);
    free_options(&o);
    return rc;
}

/* ---------- env ---------- */
static int cmd_env(int argc, char **argv) {
    bool markdown = false, opts = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--markdown")) markdown = true;
        else if (!strcmp(argv[i], "--options")) opts = true;
        else {
            fprintf(stderr, "tile env: unknown argument '%s' (tile env [--options | --markdown])\n", argv[i]);
            return EXIT_USER;
        }
    }
    if (markdown && opts) {
        fprintf(stderr, "tile env: --options and --markdown exclude each other (the markdown has both)\n");
        return EXIT_USER;
    }
    char *text = tile_env_describe(markdown, opts);
    fputs(text, stdout);
    tile_free(text);
    return EXIT_OK;
}

static int cmd_emit(int argc, char **argv) {
    options o;
    if (parse_options(argc, argv, &o, "emit")) return EXIT_USER;
    tile_module *m = compile(&o);
    tile_kernel *k = m ? pick_kernel(m, o.func) : NULL;
    int rc = EXIT_USER;
    if (k) {
        char *src = NULL, *err = NULL;
        if (tile_kernel_emit(k, o.target, &src, &err) == TILE_OK) {
            fputs(src, stdout);
            rc = EXIT_OK;
        } else fprintf(stderr, "tile emit: %s\n", err);
        tile_free(src);
        tile_free(err);
    }
    tile_module_free(m);
    free_options(&o);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 2) { usage(stderr); return EXIT_USER; }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) { usage(stdout); return EXIT_OK; }
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) { printf("tile %s\n", tile_version()); return EXIT_OK; }
    if (!strcmp(cmd, "check")) return cmd_check(argc - 1, argv + 1);
    if (!strcmp(cmd, "ir")) return cmd_ir(argc - 1, argv + 1);
    if (!strcmp(cmd, "run")) return cmd_run(argc - 1, argv + 1);
    if (!strcmp(cmd, "emit")) return cmd_emit(argc - 1, argv + 1);
    if (!strcmp(cmd, "env")) return cmd_env(argc - 1, argv + 1);
    if (!strcmp(cmd, "devices")) {
        char *s = tile_devices_report();
        fputs(s, stdout);
        tile_free(s);
        return EXIT_OK;
    }
    if (!strcmp(cmd, "fuzz")) {
        if (!tile_cmd_fuzz) { fprintf(stderr, "tile fuzz: not part of this build\n"); return EXIT_USER; }
        return tile_cmd_fuzz(argc - 1, argv + 1);
    }
    int (*link_cmd)(int, char **) = !strcmp(cmd, "launch") ? tile_cmd_launch
                                  : !strcmp(cmd, "link-bench") ? tile_cmd_link_bench
                                  : !strcmp(cmd, "link-topo") ? tile_cmd_link_topo
                                  : !strcmp(cmd, "store") ? tile_cmd_store
                                  : !strcmp(cmd, "link-status") ? tile_cmd_link_status : NULL;
    if (!strcmp(cmd, "launch") || !strcmp(cmd, "link-bench") || !strcmp(cmd, "link-topo") || !strcmp(cmd, "store") ||
        !strcmp(cmd, "link-status")) {
        if (!link_cmd) { fprintf(stderr, "tile %s: TileLink is not part of this build\n", cmd); return EXIT_USER; }
        return link_cmd(argc - 1, argv + 1);
    }
    fprintf(stderr, "tile: unknown command '%s'\n\n", cmd);
    usage(stderr);
    return EXIT_USER;
}
