/* run.c — run a generated program on the reference and on every target, each in a forked
 * child with a time limit, and compare the outputs (see progfuzz.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fz_util.h"
#include "progfuzz_int.h"

const char *pf_verdict_name(pf_verdict v) {
    switch (v) {
    case PF_OK: return "ok";
    case PF_REJECT: return "generator reject";
    case PF_MISMATCH: return "mismatch";
    case PF_FAIL: return "failure";
    case PF_CRASH: return "crash";
    case PF_TIMEOUT: return "timeout";
    }
    return "?";
}

static size_t count_of(const tile_tensor *t) {
    size_t n = 1;
    for (int d = 0; d < t->rank; d++) n *= (size_t)t->shape[d];
    return n;
}

void pf_fill_random(tile_tensor *t, uint64_t run_seed, int param_index) {
    /* the same stream as `tile run --seed` (tools/tile/main.c) */
    size_t n = count_of(t);
    uint64_t s = run_seed * 0x100000001b3ull + (uint64_t)param_index * 7919 + 1;
    for (size_t i = 0; i < n; i++) {
        uint64_t r = pf_splitmix(&s);
        if (tile_dtype_is_float(t->dtype)) tile_store_f(t->dtype, t->data, i, (double)(r >> 11) * 0x1.0p-52 - 1.0);
        else if (t->dtype == TILE_DT_BOOL) tile_store_i(t->dtype, t->data, i, (int64_t)(r & 1));
        else if (tile_dtype_is_signed(t->dtype)) tile_store_i(t->dtype, t->data, i, (int64_t)(r % 16) - 8);
        else tile_store_i(t->dtype, t->data, i, (int64_t)(r % 16));
    }
}

/* ---------- tolerances ---------- */
static bool is_fp8(tile_dtype d) { return d == TILE_DT_FP8_E4M3 || d == TILE_DT_FP8_E5M2; }
/* The error floor of a GEMM on GPU tensor cores (docs/cli.md, "Tolerances"): their f32
 * accumulation does not round like IEEE f32 (products are aligned to the largest exponent and
 * truncated), at most about 2^-22 of the running sum per k step for 16-bit operands; Hopper's
 * fp8 wgmma keeps about 14 bits of mantissa in its accumulator (2^-13 a step of 32 k). Both
 * are bounded linearly in the number of steps. Other targets: 0 (IEEE f32 in any order). */
static double pf_tensor_core_floor(const pf_op *op, const char *target) {
    if (strcmp(target, "cuda") || (op->kind != PF_OP_KGEMM && op->kind != PF_OP_TGEMM)) return 0;
    if (op->acc_int || op->in[0].gdt == TILE_DT_INVALID) return 0;
    tile_dtype a = op->in[0].gdt, b = op->in[1].gdt;
    if (is_fp8(a) || is_fp8(b)) return ldexp((double)((op->K + 31) / 32), -13);
    if (a == TILE_DT_F64 || b == TILE_DT_F64) return 0;
    return ldexp((double)op->K, -22);
}

static int prank(tile_dtype d) {
    static const tile_dtype order[] = {TILE_DT_FP4_E2M1, TILE_DT_FP8_E5M2, TILE_DT_FP8_E4M3, TILE_DT_BF16, TILE_DT_F16, TILE_DT_F32, TILE_DT_F64};
    for (int i = 0; i < 7; i++)
        if (order[i] == d) return i;
    return 7;
}

double pf_param_tolerance(const pf_prog *p, const char *name) { return pf_target_tolerance(p, name, "interp"); }

double pf_target_tolerance(const pf_prog *p, const char *name, const char *target) {
    if (name[0] != 'O' && name[0] != 'R') return 0;
    bool rowred = name[0] == 'R';
    int id = atoi(name + 1);
    for (int o = 0; o < p->nops; o++) {
        const pf_op *op = &p->ops[o];
        if (op->id != id) continue;
        if (rowred) {
            /* R<id> of a GEMM kernel: f32 values computed from the f32 accumulator */
            if (op->kind != PF_OP_KGEMM) return 0;
            tile_dtype t = TILE_DT_F32;
            if (prank(op->tol_dt) < prank(t)) t = op->tol_dt;
            double tol = tile_dtype_check_tolerance(t);
            if (op->K > 16) tol *= sqrt((double)op->K) / 4;
            return fmax(tol, pf_tensor_core_floor(op, target));
        }
        if (!tile_dtype_is_float(op->out_dt)) return 0;
        /* the coarsest of: the output dtype, rounding steps inside the op, and f32 (the
         * compute type; f64 ops are judged like f32 ones, as one f32 step may be inside) */
        tile_dtype t = TILE_DT_F32;
        if (prank(op->out_dt) < prank(t)) t = op->out_dt;
        if (prank(op->tol_dt) < prank(t)) t = op->tol_dt;
        double tol = tile_dtype_check_tolerance(t);
        int len = 0;
        switch (op->kind) {
        case PF_OP_ROWRED: case PF_OP_GENSUM: case PF_OP_MATMUL: case PF_OP_TGEMM: len = op->K; break;
        case PF_OP_TRED: len = op->rdim ? op->dims[1] : op->dims[0]; break;
        default: break;
        }
        if (len > 16) tol *= sqrt((double)len) / 4;
        if (op->kind == PF_OP_KGEMM || op->kind == PF_OP_TGEMM) tol = fmax(tol, pf_tensor_core_floor(op, target));
        return tol;
    }
    return 0;
}

/* ---------- child runs ---------- */
typedef struct shm_hdr {
    int done;
    int status;
    char msg[2040];
} shm_hdr;

typedef struct run_out {
    pf_verdict v; /* OK, FAIL, CRASH, TIMEOUT */
    int status;
    char msg[1024];
    tile_tensor *params, *rets; /* outputs (copies) */
} run_out;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Run kernel k (or, if text is not NULL, the kernel compiled from text) on target in a
 * child; outputs land in o->params / o->rets (allocated here, shapes from init/rshape). */
static void run_child(tile_kernel *k, const char *text, const char *target, bool checks, const tile_tensor *init, int np,
                      const tile_tensor *rshape, int nr, double timeout, run_out *o) {
    memset(o, 0, sizeof *o);
    size_t total = sizeof(shm_hdr);
    for (int i = 0; i < np; i++) total += init[i].data ? tile_tensor_bytes(&init[i]) + 16 : 0;
    for (int i = 0; i < nr; i++) total += tile_tensor_bytes(&rshape[i]) + 16;
    void *mem = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) {
        o->v = PF_FAIL;
        snprintf(o->msg, sizeof o->msg, "fuzz: mmap failed: %s", strerror(errno));
        return;
    }
    shm_hdr *h = mem;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        o->v = PF_FAIL;
        snprintf(o->msg, sizeof o->msg, "fuzz: fork failed: %s", strerror(errno));
        munmap(mem, total);
        return;
    }
    if (pid == 0) {
        setpgid(0, 0);
        tile_module *m = NULL;
        if (text) {
            char *diag = NULL;
            if (tile_compile_string("fuzz.tl", text, NULL, 0, &m, &diag) != TILE_OK) {
                h->status = TILE_ERR_USER;
                snprintf(h->msg, sizeof h->msg, "compile: %s", diag ? diag : "?");
                h->done = 1;
                _exit(0);
            }
            k = tile_module_kernel(m, NULL);
        }
        tile_tensor *ps = fz_xcalloc((size_t)np + 1, sizeof *ps);
        tile_tensor *rs = fz_xcalloc((size_t)nr + 1, sizeof *rs);
        for (int i = 0; i < np; i++) {
            ps[i] = init[i];
            if (init[i].data) {
                ps[i].data = fz_xmalloc(tile_tensor_bytes(&init[i]) + 16);
                memcpy(ps[i].data, init[i].data, tile_tensor_bytes(&init[i]));
            }
        }
        tile_run_options ro = {checks ? -1 : 0, checks ? -1 : 0, checks ? -1 : 0, 0, NULL};
        char *err = NULL;
        tile_status st = tile_run(k, target, ps, np, rs, nr, &ro, &err);
        h->status = st;
        if (st != TILE_OK) snprintf(h->msg, sizeof h->msg, "%s", err ? err : "?");
        else {
            char *dst = (char *)mem + sizeof(shm_hdr);
            for (int i = 0; i < np; i++) {
                if (!init[i].data) continue;
                size_t b = tile_tensor_bytes(&init[i]);
                memcpy(dst, ps[i].data, b);
                dst += b + 16;
            }
            for (int i = 0; i < nr; i++) {
                size_t b = tile_tensor_bytes(&rshape[i]);
                if (rs[i].data && tile_tensor_bytes(&rs[i]) == b) memcpy(dst, rs[i].data, b);
                dst += b + 16;
            }
        }
        h->done = 1;
        _exit(0);
    }
    setpgid(pid, pid);
    double t0 = now_s();
    int wst = 0;
    bool timed_out = false;
    long sleep_ns = 100000;
    for (;;) {
        pid_t w = waitpid(pid, &wst, WNOHANG);
        if (w == pid) break;
        if (w < 0 && errno != EINTR) break;
        if (now_s() - t0 > timeout) {
            kill(-pid, SIGKILL);
            kill(pid, SIGKILL);
            waitpid(pid, &wst, 0);
            timed_out = true;
            break;
        }
        struct timespec ts = {0, sleep_ns};
        nanosleep(&ts, NULL);
        if (sleep_ns < 5000000) sleep_ns *= 2;
    }
    if (timed_out) {
        o->v = PF_TIMEOUT;
        snprintf(o->msg, sizeof o->msg, "ran longer than %.0f s", timeout);
    } else if (WIFSIGNALED(wst)) {
        o->v = PF_CRASH;
        snprintf(o->msg, sizeof o->msg, "killed by signal %d (%s)", WTERMSIG(wst), strsignal(WTERMSIG(wst)));
    } else if (!h->done) {
        o->v = PF_CRASH;
        snprintf(o->msg, sizeof o->msg, "exited with status %d without a result", WIFEXITED(wst) ? WEXITSTATUS(wst) : -1);
    } else if (h->status != TILE_OK) {
        o->v = PF_FAIL;
        o->status = h->status;
        snprintf(o->msg, sizeof o->msg, "%.1000s", h->msg);
    } else {
        o->v = PF_OK;
        o->params = fz_xcalloc((size_t)np + 1, sizeof(tile_tensor));
        o->rets = fz_xcalloc((size_t)nr + 1, sizeof(tile_tensor));
        const char *src = (const char *)mem + sizeof(shm_hdr);
        for (int i = 0; i < np; i++) {
            o->params[i] = init[i];
            if (!init[i].data) continue;
            size_t b = tile_tensor_bytes(&init[i]);
            o->params[i].data = fz_xmalloc(b + 16);
            memcpy(o->params[i].data, src, b);
            src += b + 16;
        }
        for (int i = 0; i < nr; i++) {
            o->rets[i] = rshape[i];
            size_t b = tile_tensor_bytes(&rshape[i]);
            o->rets[i].data = fz_xmalloc(b + 16);
            memcpy(o->rets[i].data, src, b);
            src += b + 16;
        }
    }
    munmap(mem, total);
    /* trim a multi-line message to its first lines */
    char *nl = strchr(o->msg, '\n');
    if (nl && strlen(o->msg) > 600) o->msg[600] = 0;
}

bool pf_target_available(const char *target, char *why, size_t whylen) {
    if (!strncmp(target, "interp", 6)) return true;
    shm_hdr *h = mmap(NULL, sizeof *h, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (h == MAP_FAILED) {
        snprintf(why, whylen, "mmap failed: %s", strerror(errno));
        return false;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(why, whylen, "fork failed: %s", strerror(errno));
        munmap(h, sizeof *h);
        return false;
    }
    if (pid == 0) {
        char *dev = NULL, *w = NULL;
        h->status = tile_target_info(target, &dev, &w);
        snprintf(h->msg, sizeof h->msg, "%s", h->status == TILE_OK ? (dev ? dev : "") : (w ? w : "unavailable"));
        h->done = 1;
        _exit(0);
    }
    int wst = 0;
    while (waitpid(pid, &wst, 0) < 0 && errno == EINTR) {}
    bool ok = h->done && h->status == TILE_OK;
    if (!h->done) snprintf(why, whylen, "probing the target crashed (%s)", WIFSIGNALED(wst) ? strsignal(WTERMSIG(wst)) : "no result");
    else snprintf(why, whylen, "%s", h->msg);
    munmap(h, sizeof *h);
    return ok;
}

static void free_out(run_out *o, int np, int nr) {
    if (o->params)
        for (int i = 0; i < np; i++) free(o->params[i].data);
    if (o->rets)
        for (int i = 0; i < nr; i++) free(o->rets[i].data);
    free(o->params);
    free(o->rets);
    o->params = o->rets = NULL;
}

/* compare one tensor; returns true when within tolerance, else fills msg */
static bool compare(const char *name, const tile_tensor *a, const tile_tensor *ref, double tol, char *msg, size_t msglen) {
    size_t n = count_of(ref);
    if (!tile_dtype_is_float(ref->dtype)) {
        for (size_t i = 0; i < n; i++) {
            int64_t x = tile_load_i(ref->dtype, a->data, i), y = tile_load_i(ref->dtype, ref->data, i);
            if (ref->dtype == TILE_DT_BOOL) x = x != 0, y = y != 0;
            if (x != y) {
                snprintf(msg, msglen, "%s (%s) differs at element %zu: got %lld, want %lld (integers must match exactly)", name, tile_dtype_name(ref->dtype), i,
                         (long long)x, (long long)y);
                return false;
            }
        }
        return true;
    }
    double num = 0, den = 0, worst = -1;
    size_t wi = 0;
    for (size_t i = 0; i < n; i++) {
        double x = tile_load_f(ref->dtype, a->data, i), y = tile_load_f(ref->dtype, ref->data, i);
        if (isnan(x) != isnan(y) || (isinf(x) != isinf(y)) || (isinf(x) && x != y)) {
            snprintf(msg, msglen, "%s (%s) differs at element %zu: got %.9g, want %.9g (NaN/inf mismatch)", name, tile_dtype_name(ref->dtype), i, x, y);
            return false;
        }
        if (isnan(x) || isinf(x)) continue;
        double e = fabs(x - y);
        if (e > worst) worst = e, wi = i;
        num += e * e;
        den += y * y;
    }
    double scale = fmax(sqrt(den), 1e-2 * sqrt((double)n));
    double rel = sqrt(num) / scale;
    if (rel > tol) {
        snprintf(msg, msglen, "%s (%s) differs: norm-wise relative error %.3g > tolerance %.3g; worst element %zu: got %.9g, want %.9g", name,
                 tile_dtype_name(ref->dtype), rel, tol, wi, tile_load_f(ref->dtype, a->data, wi), tile_load_f(ref->dtype, ref->data, wi));
        return false;
    }
    return true;
}

pf_result pf_check(const pf_prog *p, const pf_config *cfg) {
    pf_result res;
    memset(&res, 0, sizeof res);
    res.target = -1;
    double timeout = cfg->timeout_s > 0 ? cfg->timeout_s : 120;
    char *text = pf_render(p, NULL);
    tile_module *m = NULL;
    char *diag = NULL;
    if (tile_compile_string("fuzz.tl", text, NULL, 0, &m, &diag) != TILE_OK) {
        res.verdict = PF_REJECT;
        snprintf(res.msg, sizeof res.msg, "compile error: %s", diag ? diag : "?");
        tile_free(diag);
        free(text);
        return res;
    }
    tile_free(diag);
    tile_kernel *k = tile_module_kernel(m, NULL);
    int np = tile_kernel_num_params(k), nr = tile_kernel_num_rets(k);
    tile_tensor *init = fz_xcalloc((size_t)np + 1, sizeof *init);
    tile_tensor *rsh = fz_xcalloc((size_t)nr + 1, sizeof *rsh);
    char *err = NULL;
    run_out ref = {0};
    for (int i = 0; i < np; i++)
        if (tile_kernel_param_is_tensor(k, i)) pf_param_shape(p, tile_kernel_param_name(k, i), &init[i]);
    if (tile_infer_shapes(k, init, np, rsh, nr, &err) != TILE_OK) {
        res.verdict = PF_REJECT;
        snprintf(res.msg, sizeof res.msg, "shape inference: %s", err ? err : "?");
        tile_free(err);
        goto out;
    }
    for (int i = 0; i < np; i++) {
        if (!tile_kernel_param_is_tensor(k, i)) continue;
        init[i].dtype = tile_kernel_param_dtype(k, i);
        init[i].data = fz_xcalloc(1, tile_tensor_bytes(&init[i]) + 16);
        pf_fill_random(&init[i], p->seed, i);
    }
    for (int i = 0; i < nr; i++) rsh[i].data = NULL;
    run_child(k, NULL, "interp", true, init, np, rsh, nr, timeout, &ref);
    if (ref.v != PF_OK) {
        res.verdict = ref.v == PF_FAIL ? PF_REJECT : ref.v;
        snprintf(res.msg, sizeof res.msg, "reference (interp, checks on): %.900s", ref.msg);
        goto out;
    }
    for (int t = 0; t < cfg->ntargets; t++) {
        const char *tg = cfg->targets[t];
        run_out o;
        char *btext = NULL;
        bool checks = false;
        const char *rt = tg;
        if (!strncmp(tg, "interp-bug:", 11)) {
            btext = pf_render(p, tg + 11);
            rt = "interp";
        } else if (!strcmp(tg, "interp")) rt = "interp";
        run_child(k, btext, rt, checks, init, np, rsh, nr, timeout, &o);
        free(btext);
        if (o.v != PF_OK) {
            res.verdict = o.v;
            res.target = t;
            snprintf(res.msg, sizeof res.msg, "%.60s: %.900s", tg, o.msg);
            free_out(&o, np, nr);
            goto out;
        }
        char msg[900];
        bool ok = true;
        for (int i = 0; i < np + nr && ok; i++) {
            bool is_ret = i >= np;
            if (!is_ret && !init[i].data) continue;
            const char *nm = is_ret ? tile_kernel_ret_name(k, i - np) : tile_kernel_param_name(k, i);
            const tile_tensor *a = is_ret ? &o.rets[i - np] : &o.params[i];
            const tile_tensor *r = is_ret ? &ref.rets[i - np] : &ref.params[i];
            ok = compare(nm, a, r, pf_target_tolerance(p, nm, rt), msg, sizeof msg);
        }
        free_out(&o, np, nr);
        if (!ok) {
            res.verdict = PF_MISMATCH;
            res.target = t;
            snprintf(res.msg, sizeof res.msg, "%.60s: %.900s", tg, msg);
            goto out;
        }
    }
    res.verdict = PF_OK;
out:
    free_out(&ref, np, nr);
    for (int i = 0; i < np; i++) free(init[i].data);
    free(init);
    free(rsh);
    tile_module_free(m);
    free(text);
    return res;
}
