/* cpu.c — the cpu backend: generated C (src/codegen/c.c) compiled by the system compiler
 * into a shared object, cached on disk, loaded with dlopen, run on the thread pool.
 *
 * compile(): C source -> cache key -> <cache>/cpu-<key>.so (compiled on a miss with
 *   $CC -O2 -fno-fast-math -ffp-contract=off -march=native -shared -fPIC; written to a temp
 *   file in the cache directory, then renamed, so concurrent processes never see a partial
 *   file) -> dlopen/dlsym. A cached object that does not load, lacks a symbol, or carries
 *   another stamp is removed and rebuilt. Cache and compiler plumbing: cpu_cache.c.
 * run(): sizes, buffers and scalars into a tile_cpu_args; the services table gives the
 *   generated code the pool's parallel_for and the GEMM library (tk_cpu_gemm when it is
 *   linked in, else a portable loop here).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "../codegen/codegen.h"
#include "../codegen/cpu_abi.h"
#include "../kernels/cpu_gemm.h"
#include "backend.h"
#include "cpu_cache.h"
#include "runtime.h"
#include "threadpool.h"

/* The GEMM library (src/kernels) is part of libtile; TILE_CPU_GEMM_FALLBACK=1 selects the
 * portable loop instead (for testing). */

typedef struct cpu_exe {
    void *handle;
    int (*entry)(const tile_cpu_args *);
    char key[40];
} cpu_exe;

/* ---------- services for the generated code ---------- */
static void svc_pfor(const tile_cpu_services *svc, int64_t n, tile_cpu_task fn, void *arg) {
    (void)svc;
    tile_parallel_for(n, 0, (tile_pool_task)fn, arg);
}

static _Thread_local char t_gemm_err[256];

/* The portable fallback: f32 (or f64) accumulation, any float dtypes through the core's
 * element conversions. Row blocks go to the pool when allowed. */
typedef struct fb_gemm {
    const tile_cpu_gemm *g;
} fb_gemm;
static void fb_rows(void *a, int64_t i0, int64_t i1, int worker) {
    const tile_cpu_gemm *g = ((fb_gemm *)a)->g;
    (void)worker;
    bool f64 = g->a_dtype == TILE_DT_F64 || g->b_dtype == TILE_DT_F64 || g->c_dtype == TILE_DT_F64;
    bool all32 = g->a_dtype == TILE_DT_F32 && g->b_dtype == TILE_DT_F32 && g->c_dtype == TILE_DT_F32;
    double *accd = f64 ? calloc((size_t)g->N + 1, sizeof(double)) : NULL;
    float *accf = f64 ? NULL : calloc((size_t)g->N + 1, sizeof(float));
    for (int64_t i = i0; i < i1; i++) {
        for (int64_t j = 0; j < g->N; j++) {
            double c = g->accumulate ? tile_load_f((tile_dtype)g->c_dtype, g->C, (size_t)(i * g->c_rs + j * g->c_cs)) : 0.0;
            if (f64) accd[j] = c;
            else accf[j] = (float)c;
        }
        for (int64_t k = 0; k < g->K; k++) {
            if (all32) {
                float a = ((const float *)g->A)[i * g->a_rs + k * g->a_cs];
                const float *b = (const float *)g->B + k * g->b_rs;
                for (int64_t j = 0; j < g->N; j++) accf[j] += a * b[j * g->b_cs];
                continue;
            }
            double a = tile_load_f((tile_dtype)g->a_dtype, g->A, (size_t)(i * g->a_rs + k * g->a_cs));
            for (int64_t j = 0; j < g->N; j++) {
                double b = tile_load_f((tile_dtype)g->b_dtype, g->B, (size_t)(k * g->b_rs + j * g->b_cs));
                if (f64) accd[j] += a * b;
                else accf[j] += (float)a * (float)b;
            }
        }
        for (int64_t j = 0; j < g->N; j++)
            tile_store_f((tile_dtype)g->c_dtype, g->C, (size_t)(i * g->c_rs + j * g->c_cs), f64 ? accd[j] : (double)accf[j]);
    }
    free(accd);
    free(accf);
}

static int svc_gemm(const tile_cpu_services *svc, const tile_cpu_gemm *g) {
    (void)svc;
    if (g->M <= 0 || g->N <= 0) return 0;
    if (!tb_knob_bool(TB_K_TILE_CPU_GEMM_FALLBACK)) {
        tk_gemm t = {g->M, g->N, g->K, (tile_dtype)g->a_dtype, (tile_dtype)g->b_dtype, (tile_dtype)g->c_dtype,
                     g->A, g->a_rs, g->a_cs, g->B, g->b_rs, g->b_cs, g->C, g->c_rs, g->c_cs, g->accumulate,
                     tile_pool_size()};
        int rc = tk_cpu_gemm(&t, g->parallel ? tile_pool_for_each : NULL, NULL);
        if (rc != TK_GEMM_OK) {
            snprintf(t_gemm_err, sizeof t_gemm_err, "%s", tk_cpu_gemm_error());
            return 1;
        }
        return 0;
    }
    fb_gemm a = {g};
    if (g->parallel && g->M * g->N * (g->K + 1) > 65536) tile_parallel_for(g->M, 0, fb_rows, &a);
    else fb_rows(&a, 0, g->M, 0);
    return 0;
}
static const char *svc_gemm_error(void) { return t_gemm_err; }

static tile_cpu_services g_svc = {TILE_CPU_ABI_VERSION, 0, svc_pfor, svc_gemm, svc_gemm_error, NULL};

/* ---------- the backend table ---------- */
static bool cpu_available(tile_strbuf *why) { return cpu_cc_available(why); }

static int affinity_count(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    return 1;
}

static void cpu_device_name(tile_strbuf *out) {
    char model[256] = "unknown CPU";
    FILE *fp = fopen("/proc/cpuinfo", "r");
    if (fp) {
        char ln[8192];
        bool got_model = false;
        while (fgets(ln, sizeof ln, fp) && !got_model) {
            if (!got_model && !strncmp(ln, "model name", 10)) {
                char *c = strchr(ln, ':');
                if (c) {
                    c++;
                    while (*c == ' ' || *c == '\t') c++;
                    size_t n = strcspn(c, "\n");
                    if (n >= sizeof model) n = sizeof model - 1;
                    memcpy(model, c, n);
                    model[n] = 0;
                    got_model = true;
                }
            }
        }
        fclose(fp);
    }
    const char *isa = tk_cpu_isa(); /* cpuid, or TILE_CPU_ISA */
    int n = affinity_count();
    long t = (long)tb_knob_int(TB_K_TILE_NUM_THREADS);
    /* the bf16 GEMM kernel says whether AVX512-BF16 (vdpbf16ps) is in use or bf16 is widened */
    tile_sb_printf(out, "%s, %d core%s (%s, bf16 gemm: %s)", model, n, n == 1 ? "" : "s", isa, tk_cpu_bf16_kernel());
    if (t > 0) tile_sb_printf(out, ", TILE_NUM_THREADS=%ld", t);
}

static tile_codegen_c_options cpu_cg_options(const ir_func *f) {
    tile_codegen_c_options o = {0};
    o.bounds_checks = tb_opt_bool(f->opts, TB_OPT_cpu_checks);
    return o;
}

static int cpu_emit(const ir_func *f, tile_strbuf *out, tile_strbuf *err) {
    tile_codegen_c_options o = cpu_cg_options(f);
    return tile_codegen_c(f, &o, out, err);
}

static int compile_with(const ir_func *f, bool strided, void **exe, tile_strbuf *err) {
    tile_strbuf src = {0};
    tile_codegen_c_options o = cpu_cg_options(f);
    o.param_strides = strided;
    double t0 = tile_now();
    if (tile_codegen_c(f, &o, &src, err)) {
        tile_sb_free(&src);
        return 1;
    }
    double t1 = tile_now();
    cpu_loaded lo;
    int rc = cpu_cache_load(src.data, src.len, f->name, f->opts, &lo, err);
    tile_sb_free(&src);
    if (rc) return 1;
    tile_log(TILE_LOG_INFO, "cpu: %s: C generated in %.2f ms, %s in %.2f ms", f->name, (t1 - t0) * 1e3,
             lo.cache_hit ? "cache hit" : "compiled", (tile_now() - t1) * 1e3);
    if (rt_tracing()) {
        char a[128];
        snprintf(a, sizeof a, "\"kernel\": \"%s\", \"key\": \"%s\"", f->name, lo.key);
        rt_trace_span("codegen C", "compile", t0, t1 - t0, a);
        rt_trace_span(lo.cache_hit ? "disk cache hit" : "cc compile", "compile", t1, tile_now() - t1, a);
    }
    cpu_exe *e = tile_xcalloc(1, sizeof *e);
    e->handle = lo.handle;
    e->entry = (int (*)(const tile_cpu_args *))lo.entry;
    snprintf(e->key, sizeof e->key, "%s", lo.key);
    *exe = e;
    return 0;
}

static int cpu_compile(const ir_func *f, void **exe, tile_strbuf *err) { return compile_with(f, false, exe, err); }
static int cpu_compile_strided(const ir_func *f, void **exe, tile_strbuf *err) { return compile_with(f, true, exe, err); }

/* Strided views: any strides, as long as the last dimension is contiguous (the generated
 * loops vectorise along it). */
static int cpu_check_strides(const ir_func *f, const ir_buffer *b, const int64_t *shape, const int64_t *strides, tile_strbuf *err) {
    if (b->rank > 0 && shape[b->rank - 1] > 1 && strides[b->rank - 1] != 1) {
        tile_sb_printf(err, "the cpu target takes strided tensors whose last dimension is contiguous (stride 1), this one's is %lld",
                       (long long)strides[b->rank - 1]);
        return 1;
    }
    return 0;
}

/* Run the compiled kernel: data[i] of parameter i then of returned tensor i, strides[i]
 * (NULL entries or NULL: row-major). */
static int cpu_call(cpu_exe *e, const ir_func *f, const int64_t *sizes, void *const *data, const int64_t *const *strides, const double *scalars,
                    tile_strbuf *err) {
    int np = f->nparams, nr = f->nrets;
    void **pp = tile_xcalloc((size_t)np + 1, sizeof(void *));
    void **rp = tile_xcalloc((size_t)nr + 1, sizeof(void *));
    double *sf = tile_xcalloc((size_t)np + 1, sizeof(double));
    int64_t *si = tile_xcalloc((size_t)np + 1, sizeof(int64_t));
    static uint64_t dummy[8];
    for (int i = 0; i < np; i++) {
        const ir_param *p = &f->params[i];
        if (p->buf) pp[i] = data[i] ? data[i] : dummy;
        else if (p->var) {
            double d = scalars ? scalars[i] : 0.0;
            tile_dtype dt = p->var->dtype;
            sf[i] = d;
            if (dt == TILE_DT_BOOL) si[i] = d != 0;
            else if (tile_dtype_is_int(dt)) si[i] = tile_f64_to_int(dt, d);
        }
    }
    for (int i = 0; i < nr; i++) rp[i] = data[np + i] ? data[np + i] : dummy;
    tile_cpu_services svc = g_svc; /* per call: several threads may run kernels at once */
    svc.nworkers = tile_pool_size();
    char msg[4096];
    msg[0] = 0;
    tile_cpu_args a = {TILE_CPU_ABI_VERSION, sizes, pp, rp, sf, si, &svc, msg, (int64_t)sizeof msg, strides};
    int rc = e->entry(&a);
    if (rc == 2) tile_sb_printf(err, "error: internal: the compiled kernel '%s' was built for another ABI (cache %s)\n", f->name, e->key);
    else if (rc) {
        tile_sb_puts(err, msg[0] ? msg : "error: the compiled kernel failed\n");
        if (strstr(msg, "GEMM library")) tile_sb_printf(err, "  (%s)\n", svc_gemm_error());
    }
    free(pp);
    free(rp);
    free(sf);
    free(si);
    return rc ? 1 : 0;
}

static int cpu_run(void *exe, const ir_func *f, const int64_t *sizes, tile_tensor *params, tile_tensor *rets, const double *scalars,
                   const tile_run_options *opt, tile_strbuf *err) {
    int n = f->nparams + f->nrets;
    void **data = tile_xcalloc((size_t)n + 1, sizeof(void *));
    for (int i = 0; i < f->nparams; i++) data[i] = params ? params[i].data : NULL;
    for (int i = 0; i < f->nrets; i++) data[f->nparams + i] = rets ? rets[i].data : NULL;
    int rc = cpu_call(exe, f, sizes, data, NULL, scalars, err);
    free(data);
    return rc;
}

/* A launch on cpu memory: the stream has no native object; the work is done on return. */
static int cpu_launch(void *exe, const ir_func *f, const int64_t *sizes, const tile_launch_arg *args, const double *scalars, int device_index,
                      void *stream, void **state, tile_strbuf *err) {
    int n = f->nparams + f->nrets;
    void *dstack[16] = {0}, **data = n <= 16 ? dstack : tile_xcalloc((size_t)n, sizeof(void *));
    const int64_t *sstack[16] = {0}, **strides = n <= 16 ? sstack : tile_xcalloc((size_t)n, sizeof(int64_t *));
    for (int i = 0; i < n; i++) {
        data[i] = args[i].data ? (char *)args[i].data + args[i].byte_offset : NULL;
        strides[i] = args[i].strides;
    }
    int rc = cpu_call(exe, f, sizes, data, strides, scalars, err);
    if (data != dstack) free(data);
    if (strides != sstack) free(strides);
    return rc;
}

/* ---------- the cpu device: host memory ---------- */
static int cpu_dev_count(void) { return 1; }
static void cpu_dev_name(int index, tile_strbuf *out) { cpu_device_name(out); }
static int cpu_raw_alloc(int index, size_t n, void **p, tile_strbuf *err) {
    size_t r = (n + 63) & ~(size_t)63; /* whole cache lines, 64-byte aligned */
    *p = aligned_alloc(64, r ? r : 64);
    if (!*p) {
        tile_sb_printf(err, "out of host memory allocating %zu bytes", n);
        return 1;
    }
    return 0;
}
static void cpu_raw_free(int index, void *p) { free(p); }
static int cpu_copy(int index, int kind, void *dst, size_t dst_off, const void *src, size_t src_off, size_t n, void *stream, tile_strbuf *err) {
    memmove((char *)dst + dst_off, (const char *)src + src_off, n);
    return 0;
}

static const tile_device_ops cpu_device_ops = {
    .count = cpu_dev_count,
    .name = cpu_dev_name,
    .raw_alloc = cpu_raw_alloc,
    .raw_free = cpu_raw_free,
    .copy = cpu_copy,
};

static void cpu_release(void *exe) {
    cpu_exe *e = exe;
    if (!e) return;
    if (e->handle) dlclose(e->handle);
    free(e);
}

TILE_API const tile_backend tile_backend_cpu = {
    .name = "cpu",
    .auto_rank = 2,
    .device_type = TILE_DEVICE_CPU,
    .device = &cpu_device_ops,
    .available = cpu_available,
    .device_name = cpu_device_name,
    .pipeline = "cpu",
    .emit = cpu_emit,
    .compile = cpu_compile,
    .compile_strided = cpu_compile_strided,
    .check_strides = cpu_check_strides,
    .run = cpu_run,
    .launch = cpu_launch,
    .release = cpu_release,
};
