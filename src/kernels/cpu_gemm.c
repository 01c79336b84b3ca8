/* cpu_gemm.c — the portable BLIS loop nest around the per-ISA micro-kernels, ISA selection,
 * thread-local packing buffers, the f64 path and the public helpers.
 *
 * Loop nest (C row-major after orientation; A = the broadcast side, B = the vector side):
 *
 *   for ic in M by MCa:                    (one step unless A is huge)
 *     parallel: pack A[ic.., all K] into MR-row panels, K block by K block (shared)
 *     parallel for (jn, im) tasks:         N by NCb x chunks of the A block's rows
 *       for pc in K by KC:                 beta = (pc == 0 ? accumulate : 1)
 *         pack B[pc.., jn..] into NR-column panels (thread-local, ~half of L2)
 *         for each A panel (MR x KC, ~half of L1, stays there):
 *           for each B panel (KC x NR, streams from L2): micro-kernel MR x NR
 *
 * So a GEMM makes two parallel-for calls. Edge tiles (and C with a non-unit column stride)
 * go through a small tile buffer. A column-major C is handled by computing C^T = B^T A^T
 * (swapping the operands). Small f32 problems use the ISA's no-pack kernel. bf16 x bf16 uses
 * k-pair panels and a vdpbf16ps kernel where the CPU has one. Non-f32 C: an f32 workspace
 * accumulates, then one rounding into C. */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>

#include "core/core.h"
#include "kernels/cpu_gemm.h"
#include "kernels/cpu_gemm_int.h"

float tk_lut_e4m3[256];
float tk_lut_e5m2[256];
float tk_lut_e2m1[16];

/* ---------- errors ---------- */

static __thread char t_err[512];

static int fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t_err, sizeof t_err, fmt, ap);
    va_end(ap);
    return code;
}

const char *tk_cpu_gemm_error(void) { return t_err; }

/* ---------- ISA selection and blocking ---------- */

/* A selectable path: the f32 kernel set and the bf16 x bf16 kernel (NULL: dequantise to f32). */
typedef struct isa_sel {
    const char *name;
    const tk_isa *isa;
    const tk_bf16_kernel *bk;
} isa_sel;

static const isa_sel g_sels[] = {
#if defined(__x86_64__) || defined(__i386__)
    {"amx", &tk_isa_avx512, &tk_bf16_amx},
    {"avx512bf16", &tk_isa_avx512, &tk_bf16_avx512},
    {"avx512", &tk_isa_avx512, NULL},
    {"avx2", &tk_isa_avx2, NULL},
#endif
    {"generic", &tk_isa_generic, NULL},
};
#define N_SELS ((int)(sizeof g_sels / sizeof g_sels[0]))
#if defined(__x86_64__) || defined(__i386__)
#define ISA_NAMES "amx, avx512bf16, avx512, avx2, generic"
#else
#define ISA_NAMES "generic"
#endif

static const isa_sel *g_sel;        /* NULL: invalid selection */
static const isa_sel *g_sel_auto;   /* the best one this CPU runs (the first supported) */
static const tk_isa *g_isa;         /* g_sel->isa, NULL when invalid */
static char g_isa_msg[256];
static int64_t g_l1, g_l2, g_l3;
static int64_t g_env_kc, g_env_nc, g_env_mc, g_env_waves;
static int g_prof; /* TILE_GEMM_PROF=1: time the phases of each GEMM, print a summary at exit */
static int g_affine = 1; /* TILE_GEMM_AFFINE=0: no home regions (gctx.affine), tasks in the pool's order */
static int g_no_bshared; /* TILE_GEMM_BSHARED=0: bf16 B packed per task (tests, measurements) */
static int g_bf16_mode; /* 0 auto, 1 off, 2 emulate (vdpbf16ps model), 3 emulate_amx */
static long long g_affine_count; /* parallel steps with home regions (tk_cpu_gemm_affine_count) */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_key_t g_tls_key;

static const isa_sel *sel_by_name(const char *name) {
    for (int i = 0; i < N_SELS; i++)
        if (strcmp(g_sels[i].name, name) == 0) return &g_sels[i];
    return NULL;
}

static void set_sel(const isa_sel *s) {
    g_sel = s;
    g_isa = s ? s->isa : NULL;
}

static void tls_destroy(void *p);

/* ---------- profiling (TILE_GEMM_PROF=1; for measurements, no effect otherwise) ----------
 * Per GEMM (of the last A block): the wall time until packing and the bf16 plan are done,
 * then of the compute tasks; of the latter, the time after the last one ended (join), the
 * tasks' summed busy time and, inside it, the micro-kernel loops'
 * (the rest of a task: B packing where B is not shared, edge tiles, tile config). */
#include <time.h>
static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
static struct {
    uint64_t calls, total, pack, compute, tail, busy, kern, tasks, workers;
    uint64_t pka, pkb, pks;     /* summed time of the A / B packing tasks and the range scans */
    uint64_t join0, join1, joined; /* per call: when the first / last worker began its first body */
} g_pr;
static uint64_t g_pr_first, g_pr_last; /* the current compute step's first task start, last task end */
static uint64_t g_pr_call, g_pr_t0, g_pr_j0, g_pr_j1; /* the current step: its number, start, first/last worker start */
static _Thread_local uint64_t t_pr_call;               /* the step this thread last began a body of */
static void pr_add(uint64_t *p, uint64_t v) { __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
static void prof_report(void) {
    if (!g_pr.calls) return;
    const double n = (double)g_pr.calls;
    fprintf(stderr,
            "tk_cpu_gemm prof: %llu calls; per call (us): total %.1f = pack and plan %.1f + compute %.1f (of it "
            "join %.1f); %.1f tasks of %.1f us each; busy %.0f%% of %.0f workers x compute; "
            "micro-kernel loops %.0f%% of task time\n",
            (unsigned long long)g_pr.calls, g_pr.total / n / 1e3, g_pr.pack / n / 1e3,
            g_pr.compute / n / 1e3, g_pr.tail / n / 1e3, g_pr.tasks / n,
            g_pr.tasks ? g_pr.busy / (double)g_pr.tasks / 1e3 : 0.0, 100.0 * g_pr.busy / ((double)g_pr.compute * (g_pr.workers / n) + 1),
            g_pr.workers / n, g_pr.busy ? 100.0 * g_pr.kern / g_pr.busy : 0.0);
    fprintf(stderr,
            "tk_cpu_gemm prof: packing step per call (us of all workers' time): A %.1f + B %.1f + range scans %.1f; "
            "workers began after %.1f us (first) .. %.1f us (last; %.1f workers per call)\n",
            g_pr.pka / n / 1e3, g_pr.pkb / n / 1e3, g_pr.pks / n / 1e3, g_pr.join0 / n / 1e3, g_pr.join1 / n / 1e3,
            g_pr.joined / n);
}

static void init_once(void) {
    for (int b = 0; b < 256; b++) {
        tk_lut_e4m3[b] = (float)tile_e4m3_bits_to_f64((uint8_t)b);
        tk_lut_e5m2[b] = (float)tile_e5m2_bits_to_f64((uint8_t)b);
    }
    for (int b = 0; b < 16; b++) tk_lut_e2m1[b] = (float)tile_e2m1_bits_to_f64((uint8_t)b);
    pthread_key_create(&g_tls_key, tls_destroy);
    tk_cpu_cache_sizes(&g_l1, &g_l2, &g_l3);
    if (g_l1 <= 0) g_l1 = 32 * 1024;
    if (g_l2 <= 0) g_l2 = 1024 * 1024;
    if (g_l3 <= 0) g_l3 = 8 * 1024 * 1024;
    g_env_kc = tb_knob_int(TB_K_TILE_GEMM_KC); /* 0: automatic */
    g_env_nc = tb_knob_int(TB_K_TILE_GEMM_NC);
    g_env_mc = tb_knob_int(TB_K_TILE_GEMM_MC);
    g_env_waves = tb_knob_int(TB_K_TILE_GEMM_MIN_WAVES);
    g_affine = tb_knob_bool(TB_K_TILE_GEMM_AFFINE);
    g_prof = tb_knob_bool(TB_K_TILE_GEMM_PROF);
    g_no_bshared = !tb_knob_bool(TB_K_TILE_GEMM_BSHARED);
    if (g_prof) atexit(prof_report);
    g_bf16_mode = (int)tb_knob_int(TB_K_TILE_GEMM_BF16); /* auto, off, emulate, emulate_amx: 0..3 */

    g_sel_auto = &g_sels[N_SELS - 1];
    for (int i = 0; i < N_SELS; i++)
        if (tk_isa_supported(g_sels[i].name)) {
            g_sel_auto = &g_sels[i];
            break;
        }
    set_sel(g_sel_auto);
    const char *want = tb_knob_str(TB_K_TILE_CPU_ISA);
    if (want && *want && strcmp(want, "auto") != 0) {
        const isa_sel *w = sel_by_name(want);
        if (!w) {
            set_sel(NULL);
            snprintf(g_isa_msg, sizeof g_isa_msg, "TILE_CPU_ISA=%s: unknown ISA (expected %s or auto)", want, ISA_NAMES);
        } else if (!tk_isa_supported(want)) {
            set_sel(NULL);
            snprintf(g_isa_msg, sizeof g_isa_msg,
                     "TILE_CPU_ISA=%s: this CPU (or OS) does not support %s; use %s or unset TILE_CPU_ISA",
                     want, want, g_sel_auto->name);
        } else {
            set_sel(w);
        }
    }
}

static void ensure_init(void) { pthread_once(&g_once, init_once); }

/* The bf16 x bf16 kernel of the current selection, or NULL (dequantise to f32).
 * TILE_GEMM_BF16=off disables it, =emulate / =emulate_amx force the portable models of the
 * vdpbf16ps / AMX kernels (for tests on CPUs without them). */
static const tk_bf16_kernel *bf16_kernel(void) {
    if (g_bf16_mode == 1) return NULL;
    if (g_bf16_mode == 2) return &tk_bf16_emulated;
    if (g_bf16_mode == 3) return &tk_bf16_amx_emulated;
    const tk_bf16_kernel *k = g_sel ? g_sel->bk : NULL;
#if defined(__x86_64__) || defined(__i386__)
    /* AMX: Linux's permission for the tile data state is asked for here, at the first use
     * (it enlarges every signal frame of the process), not at CPU detection. Besides a
     * bf16 x bf16 GEMM, tk_cpu_bf16_kernel() comes here, and the cpu runtime calls that for
     * its device description (`tile devices`, runtime/cpu.c), so such processes ask too;
     * f32-only GEMMs never do. Refused: vdpbf16ps where the CPU has it, else the f32 path */
    if (k == &tk_bf16_amx && !tk_amx_request()) k = tk_isa_supported("avx512bf16") ? &tk_bf16_avx512 : NULL;
#endif
    return k;
}

const char *tk_cpu_isa(void) {
    ensure_init();
    return g_sel ? g_sel->name : "invalid";
}

long long tk_cpu_gemm_affine_count(void) { return __atomic_load_n(&g_affine_count, __ATOMIC_RELAXED); }

const char *tk_cpu_bf16_kernel(void) {
    ensure_init();
    const tk_bf16_kernel *k = g_sel ? bf16_kernel() : NULL;
    return k ? k->name : "f32";
}

int tk_cpu_set_isa(const char *name) {
    ensure_init();
    if (!name || !*name || strcmp(name, "auto") == 0) {
        set_sel(g_sel_auto);
        return 0;
    }
    const isa_sel *w = sel_by_name(name);
    if (!w) return fail(-1, "unknown CPU ISA '%s' (expected %s or auto)", name, ISA_NAMES), -1;
    if (!tk_isa_supported(name))
        return fail(-1, "this CPU (or OS) does not support the %s ISA (best here: %s)", name, g_sel_auto->name), -1;
    set_sel(w);
    return 0;
}

/* ---------- thread-local buffers ---------- */

typedef struct tk_buf {
    void *p;
    size_t cap;
} tk_buf;

typedef struct tk_tls {
    tk_buf a, b, w, bs; /* packed A, a task's packed B, the f32 C workspace, shared packed B */
    int registered;
} tk_tls;

static __thread tk_tls t_tls;

#define TK_RETAIN_BYTES ((size_t)80 << 20) /* larger buffers are freed after each call */
#define TK_HUGE_BYTES ((size_t)4 << 20)    /* buffers from here on ask for huge pages */

static void tls_destroy(void *p) {
    tk_tls *t = (tk_tls *)p;
    free(t->a.p);
    free(t->b.p);
    free(t->w.p);
    free(t->bs.p);
    memset(t, 0, sizeof *t);
}

static void *buf_get(tk_buf *b, size_t bytes) {
    if (bytes == 0) bytes = 64;
    if (b->cap >= bytes) return b->p;
    if (!t_tls.registered) {
        pthread_setspecific(g_tls_key, &t_tls);
        t_tls.registered = 1;
    }
    free(b->p);
    b->p = NULL;
    b->cap = 0;
    /* room to grow a little without reallocating, whole pages; big ones 2 MiB aligned and
     * backed by transparent huge pages where the kernel allows (fewer TLB misses) */
    size_t sz = bytes + bytes / 8;
    const size_t align = sz >= TK_HUGE_BYTES ? ((size_t)2 << 20) : 4096;
    sz = (sz + align - 1) & ~(align - 1);
    void *p = NULL;
    if (posix_memalign(&p, align, sz) != 0) return NULL;
#ifdef MADV_HUGEPAGE
    if (align > 4096) madvise(p, sz, MADV_HUGEPAGE);
#endif
    b->p = p;
    b->cap = sz;
    return p;
}

static void buf_trim(tk_buf *b) {
    if (b->cap > TK_RETAIN_BYTES) {
        free(b->p);
        b->p = NULL;
        b->cap = 0;
    }
}


/* ---------- the f32 loop nest ---------- */

static int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }
static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* The kernel set a GEMM runs with: f32 panels (kdiv 1) or bf16 k-pair panels (kdiv 2, pair
 * rows padded to a multiple of kq, A in layout a_layout, B in TK_BF16_PAIRS). */
typedef void (*tk_bpack_fn)(const tk_src *s, int64_t p0, int64_t plen, int64_t k0, int64_t klen, int R, int kq,
                            int layout, uint32_t *dst, uint32_t *rng);
typedef struct kset {
    int mr, nr, kdiv, kq, a_layout;
    tk_ukr_fn ukr;
    tk_pack_fn pack;   /* f32 panels */
    tk_bpack_fn bpack; /* bf16 pair panels */
    void (*begin)(void), (*end)(void); /* around a compute task's kernel calls (tk_bf16_kernel) */
} kset;

/* panel rows stored for a K block of kc: k steps (f32) or k pairs padded to kq (bf16) */
static int64_t ks_rows(const kset *ks, int64_t kc) { return round_up(cdiv(kc, ks->kdiv), ks->kq); }

/* Portable bf16 packer: word (p, q) = bits(p, k0+2q) | bits(p, k0+2q+1) << 16 (the odd
 * tail's high half and the pairs up to a multiple of kq are zero, so are rows past plen),
 * at [q*R + p%R] (TK_BF16_PAIRS) or [(q/16)*R*16 + (p%R)*16 + q%16] (TK_BF16_ROWS16) of
 * panel p/R, which starts at dst + (p/R)*R*kpad. */
void tk_pack_bf16_generic(const tk_src *s, int64_t p0, int64_t plen, int64_t k0, int64_t klen, int R, int kq,
                          int layout, uint32_t *dst, uint32_t *rng) {
    const uint16_t *src = (const uint16_t *)s->p;
    const int64_t sp = s->sp, sk = s->sk, kp = (klen + 1) / 2, kpad = round_up(kp, kq);
    for (int64_t r0 = 0; r0 < plen; r0 += R) {
        const int rl = (int)(plen - r0 < R ? plen - r0 : R);
        uint32_t *d = dst + r0 * kpad;
        for (int64_t q = 0; q < kpad; q++) {
            for (int r = 0; r < R; r++) {
                uint32_t w = 0;
                if (r < rl && q < kp) {
                    const uint16_t *lo = src + (p0 + r0 + r) * sp + (k0 + 2 * q) * sk;
                    w = 2 * q + 1 < klen ? (uint32_t)lo[0] | (uint32_t)lo[sk] << 16 : lo[0];
                }
                if (layout == TK_BF16_PAIRS) d[q * R + r] = w;
                else d[(q / 16) * R * 16 + r * 16 + q % 16] = w;
            }
        }
    }
    if (rng) tk_bf16_range_generic((const uint16_t *)(const void *)dst, 2 * round_up(plen, R) * kpad, &rng[0], &rng[1]);
}

#define TK_MAX_REGIONS 64
/* Where the result goes when C is not f32: the compute tasks accumulate into an f32
 * workspace (gctx.c) and each rounds its tile into p (dtype dt, element strides rs / cs, in
 * the workspace's orientation) as soon as the tile is final, while it is in cache and on
 * all cores, instead of one serial pass over the whole of C after the GEMM. */
typedef struct tk_out {
    void *p;
    tile_dtype dt;
    int64_t rs, cs;
} tk_out;

typedef struct gctx {
    const tk_isa *isa;
    const tk_out *out; /* NULL: C is the result */
    kset ks;
    tk_src a, b;
    float *c;
    int64_t c_rs, c_cs;
    int64_t M, N, K;
    int accumulate;
    int64_t KC, NCb, MCa;
    void (*range)(const uint16_t *h, int64_t n, uint32_t *mn, uint32_t *mx); /* bf16 range scan (src_range) */
    /* the current A block: rows [ic, ic+mlen) x all of K, packed */
    int64_t ic, mlen, mpad; /* mpad = mlen rounded up to MR */
    float *apack;           /* K-block at pc starts at apack + mpad*pc */
    int64_t npc, napan, apan_per_task;
    int64_t nN, nMt, mchunk;
    /* bf16 in parallel: all of B packed once (NULL: each task packs its own block); K block
     * pb's panels start at bshared + pb*bstride, panel q at + q*NR*rows */
    float *bshared;
    int64_t bstride, npanb, bpan_per_task, natasks;
    int failed;
    /* bf16 kernels (denormals, bf16_plan): the packing tasks record the magnitude range of
     * what they pack (scan_a / scan_b) into amn/amx, bmn/bmx; once the scale is known, the
     * packers apply 2^sa / 2^sb to what they pack from then on */
    int scan_a, scan_b, sa, sb;
    uint32_t amn, amx, bmn, bmx;
    /* the fused parallel step (fused_task): pk_n packing tasks (A, or A then B when pk_both)
     * claimed through pk_next, pk_done finished; the last one runs the bf16 plan (pk_plan)
     * into plan / cshift and sets pk_ready */
    int64_t pk_n, pk_next, pk_done, ntasks;
    int pk_both, pk_plan, pk_ready, plan, cshift;
    /* range scans of sources the packing tasks do not see, as more tasks of the same step
     * (the first A block only): A's rows or k columns (src_scan_along_k: a column-major A) in
     * ns_a chunks of rows_a (A in several blocks), B's
     * panels or k rows (src_scan_along_k) in ns_b chunks of cols_b (B packed per task), C's
     * rows in ns_c chunks of rows_c (accumulating: its old values) into cmn/cmx (f32
     * magnitude bits) */
    int64_t ns_a, rows_a, ns_b, cols_b, ns_c, rows_c;
    uint32_t cmn, cmx;
    uint64_t t_ready;
    /* home regions (affine_task; the first A block with a shared B): the compute tasks' grid
     * (nMt row chunks x nN N blocks) cut into reg_m x reg_n rectangles, one per thread (its
     * gemm_slot() modulo their number). A region's threads pack its share of the A rows and B
     * columns it reads and then compute its tiles, before they take what is left elsewhere:
     * each packed line is then read by the few cores of one region row or column, not by all
     * of them, which is what makes rewriting it at the next call slow (docs/cpu-gemm.md) */
    int affine;
    int64_t reg_m, reg_n, nscan, scan_next;
    struct {
        int64_t next; /* the region's next compute task (a local index) */
        int packed;   /* its packing claimed */
        char pad[64 - sizeof(int64_t) - sizeof(int)];
    } reg[TK_MAX_REGIONS] __attribute__((aligned(64)));
} gctx;

/* ---------- bf16 denormals ----------
 * tdpbf16ps and vdpbf16ps treat subnormal bf16 inputs (and tdpbf16ps the C tile it loads) as
 * zero and flush subnormal results to zero, whatever MXCSR says; the f32 path is IEEE. The
 * bf16 GEMM gives the IEEE result anyway:
 *   Every product a*b of bf16 values with exponents ea, eb is a multiple of 2^(ea+eb-14) (8
 *   significant bits each), and so is every partial sum (rounding to f32 keeps multiples of
 *   a power of two that is above the rounding unit, and leaves smaller ones exact), C's old
 *   values being multiples of 2^(ec-23). So if no input is subnormal and
 *       q = min(ea_min + eb_min - 14, ec_min - 23) >= -126
 *   nothing is ever subnormal, the flushing never fires and the result is the IEEE one.
 *   Otherwise A and B are scaled by powers of two 2^sa, 2^sb (exact) such that the scaled
 *   inputs are normal, q + sa + sb >= -126 and the sums stay finite, C is pre-scaled by
 *   2^(sa+sb) (when accumulating) and post-scaled by 2^-(sa+sb) (one rounding, as IEEE's own
 *   gradual underflow). If no such scale exists (operands spanning more than ~250 binades)
 *   the GEMM runs on the f32 path (dequantise-while-packing, IEEE FMA).
 * The ranges come from the packers themselves (min/max over the registers they store), or from the sources where B is packed per task or A in several blocks, and
 * C's old values when accumulating: in parallel, as more tasks of the packing step
 * (scan_task). */

static void atomic_min_u32(uint32_t *p, uint32_t v) {
    uint32_t o = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v < o && !__atomic_compare_exchange_n(p, &o, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}
static void atomic_max_u32(uint32_t *p, uint32_t v) {
    uint32_t o = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v > o && !__atomic_compare_exchange_n(p, &o, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}

void tk_bf16_range_generic(const uint16_t *h, int64_t n, uint32_t *mn, uint32_t *mx) {
    uint32_t a = *mn, b = *mx;
    for (int64_t i = 0; i < n; i++) {
        const uint32_t m = h[i] & 0x7FFFu;
        if (m && m < a) a = m;
        if (m < 0x7F80u && m > b) b = m;
    }
    *mn = a;
    *mx = b;
}

typedef void (*tk_range_fn)(const uint16_t *h, int64_t n, uint32_t *mn, uint32_t *mx);
/* the range of a bf16 source view (elements p0 .. p0 + np - 1 along p, k0 .. k0 + nk - 1
 * along k); rng scans unit-stride runs (the AVX-512 one where the ISA has it: A read in place
 * is scanned here, not while packing) */
static void src_range(const tk_src *s, int64_t p0, int64_t np, int64_t k0, int64_t nk, uint32_t *mn, uint32_t *mx,
                      tk_range_fn rng) {
    const uint16_t *h = (const uint16_t *)s->p;
    if (s->sk != 1 && s->sp == 1) {
        /* unit stride along p (a row-major B): scan each k's run of np elements; walking p
         * outer would read one element per cache line (12% of a 1-thread 2048^3 bf16 GEMM) */
        for (int64_t k = k0; k < k0 + nk; k++) rng(h + k * s->sk + p0, np, mn, mx);
        return;
    }
    for (int64_t p = p0; p < p0 + np; p++) {
        if (s->sk == 1) {
            rng(h + p * s->sp + k0, nk, mn, mx);
            continue;
        }
        for (int64_t k = k0; k < k0 + nk; k++) tk_bf16_range_generic(h + p * s->sp + k * s->sk, 1, mn, mx);
    }
}

/* The scan tasks' chunks of a source: along k for one with unit stride along p (a
 * row-major B, a column-major A: each task then scans contiguous runs of all p), else along p.
 * Chunks of columns of a row-major B made each task read short runs from every row: on the
 * 16-core Xeon 1024^3 with B packed per task, scanning B took 5000 us of worker time per call
 * (against 170 us for the same bytes of A). */
static int src_scan_along_k(const tk_src *s) { return s->sk != 1 && s->sp == 1; }

/* the length a source's scan tasks split (np x nk elements): nk along k, else np */
static int64_t src_scan_len(const tk_src *s, int64_t np, int64_t nk) { return src_scan_along_k(s) ? nk : np; }

/* scan chunk t (of `chunk` rows or k columns, src_scan_len) of an np x nk source */
static void src_range_chunk(const tk_src *s, int64_t np, int64_t nk, int64_t chunk, int64_t t, uint32_t *mn,
                            uint32_t *mx, tk_range_fn rng) {
    const int64_t len = src_scan_len(s, np, nk), q0 = t * chunk, nq = len - q0 < chunk ? len - q0 : chunk;
    if (src_scan_along_k(s)) src_range(s, 0, np, q0, nq, mn, mx, rng);
    else src_range(s, q0, nq, 0, nk, mn, mx, rng);
}

/* floor(log2 |x|) of a nonzero finite bf16 magnitude m (bits & 0x7FFF) */
static int bf16_exp(uint32_t m) {
    if (m >= 0x80u) return (int)(m >> 7) - 127;
    return -133 + (31 - __builtin_clz(m)); /* subnormal: m 2^-133 */
}
/* ... and of an f32 one */
static int f32_exp(uint32_t m) {
    if (m >= 0x800000u) return (int)(m >> 23) - 127;
    return -149 + (31 - __builtin_clz(m));
}

/* multiply n packed bf16 values (two per word) by 2^sh; the caller guarantees that every
 * nonzero finite one stays normal and finite (bf16_plan), so this is exact */
static void bf16_rescale(uint32_t *w, int64_t nwords, int sh) {
    if (sh == 0) return;
    uint16_t *h = (uint16_t *)(void *)w;
    for (int64_t i = 0; i < 2 * nwords; i++) {
        const uint32_t v = h[i], e = (v >> 7) & 0xFFu, m = v & 0x7Fu;
        if (e == 0xFFu || (e == 0 && m == 0)) continue;
        if (e != 0) {
            h[i] = (uint16_t)(v + (uint32_t)(sh * 128)); /* exponent field + sh, stays in 1..254 */
        } else {
            const float f = (float)ldexp((double)m, -133 + sh); /* normal, <= 7 significant bits: exact */
            uint32_t u;
            memcpy(&u, &f, 4);
            h[i] = (uint16_t)((v & 0x8000u) | (u >> 16));
        }
    }
}

/* C (M x N f32 view) *= 2^sh, rounded once (exact when sh > 0: bf16_plan keeps it finite) */
static void scale_c(float *c, int64_t rs, int64_t cs, int64_t M, int64_t N, int sh) {
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            float *p = c + i * rs + j * cs;
            *p = (float)ldexp((double)*p, sh);
        }
}

/* The plan for a bf16 GEMM from the magnitude ranges of A, B (and C's old values when
 * accumulating: cmn/cmx as f32 magnitude bits, cmn == 0 none): 0 = run as is, 1 = scale A
 * by 2^*sa and B by 2^*sb, -1 = use the f32 path. */
static int bf16_plan(uint32_t amn, uint32_t amx, uint32_t bmn, uint32_t bmx, uint32_t cmn, uint32_t cmx, int64_t K,
                     int *sa, int *sb) {
    *sa = *sb = 0;
    const int prods = amn < 0x7F80u && bmn < 0x7F80u; /* some nonzero finite product */
    if (!prods) {
        /* no nonzero finite product. A subnormal times an inf is inf in IEEE but inf x 0 = NaN
         * in the kernels (which read the subnormal as zero): f32 path */
        if ((amn < 0x80u && bmn < 0x10000u) || (bmn < 0x80u && amn < 0x10000u)) return -1;
        return cmn && cmn < 0x800000u ? -1 : 0; /* only C's old values: a subnormal one would be flushed */
    }
    const int ea0 = bf16_exp(amn), ea1 = bf16_exp(amx), eb0 = bf16_exp(bmn), eb1 = bf16_exp(bmx);
    int q = ea0 + eb0 - 14;
    int clog = 0;
    while (((int64_t)1 << clog) < K && clog < 62) clog++;
    int E = ea1 + eb1 + 2 + clog; /* |sum of products| < 2^E */
    if (cmn) {
        if (f32_exp(cmn) - 23 < q) q = f32_exp(cmn) - 23;
        if (cmx && f32_exp(cmx) + 1 > E) E = f32_exp(cmx) + 1;
    }
    E += 1; /* |C| < 2^E */
    const int sa_lo = -126 - ea0, sa_hi = 127 - ea1, sb_lo = -126 - eb0, sb_hi = 127 - eb1;
    const int s_lo0 = -126 - q, s_hi0 = 127 - E;
    if (s_lo0 <= 0 && sa_lo <= 0 && sb_lo <= 0) return 0; /* nothing can be subnormal */
    const int lo = s_lo0 > sa_lo + sb_lo ? s_lo0 : sa_lo + sb_lo;
    const int hi = s_hi0 < sa_hi + sb_hi ? s_hi0 : sa_hi + sb_hi;
    if (lo > hi || sa_lo > sa_hi || sb_lo > sb_hi) return -1;
    const int sh = lo > 0 ? lo : hi < 0 ? hi : 0;
    *sa = sa_lo > sh - sb_hi ? sa_lo : sh - sb_hi;
    *sb = sh - *sa;
    return 1;
}

/* the length of the K block that starts at k = pc */
static int64_t kblock_len(const gctx *x, int64_t pc) { return x->K - pc < x->KC ? x->K - pc : x->KC; }

/* The part of a packing step that task t covers: npan panels in groups of per_task, for
 * every K block: the task's K block pb and its panels [q0, q1). False when the task's group
 * is empty. */
typedef struct pack_slice {
    int64_t pb, q0, q1;
} pack_slice;
static bool pack_slice_of(int64_t t, int64_t npan, int64_t per_task, pack_slice *s) {
    const int64_t ngroups = cdiv(npan, per_task);
    s->pb = t / ngroups;
    s->q0 = (t % ngroups) * per_task;
    s->q1 = s->q0 + per_task < npan ? s->q0 + per_task : npan;
    return s->q0 < s->q1;
}

/* pack A's panels [q0, q1) (MR rows each) of K block pb */
static void pack_a_panels(gctx *x, int64_t pb, int64_t q0, int64_t q1) {
    const int MR = x->ks.mr;
    if (q0 >= q1) return;
    const int64_t pc = pb * x->KC, kc = kblock_len(x, pc);
    const int64_t p0 = q0 * MR, plen = (q1 * MR < x->mlen ? q1 * MR : x->mlen) - p0;
    float *dst = x->apack + x->mpad * pb * ks_rows(&x->ks, x->KC) + p0 * ks_rows(&x->ks, kc);
    if (x->ks.kdiv == 2) {
        uint32_t rng[2] = {0x10000u, 0};
        x->ks.bpack(&x->a, x->ic + p0, plen, pc, kc, MR, x->ks.kq, x->ks.a_layout, (uint32_t *)(void *)dst,
                    x->scan_a ? rng : NULL);
        if (x->scan_a) {
            atomic_min_u32(&x->amn, rng[0]);
            atomic_max_u32(&x->amx, rng[1]);
        }
        bf16_rescale((uint32_t *)(void *)dst, round_up(plen, MR) * ks_rows(&x->ks, kc), x->sa);
    } else {
        x->ks.pack(&x->a, x->ic + p0, plen, pc, kc, MR, dst);
    }
}

/* pack the shared B's panels [q0, q1) (NR columns each) of K block pb */
static void pack_b_panels(gctx *x, int64_t pb, int64_t q0, int64_t q1) {
    const int NR = x->ks.nr;
    if (q0 >= q1) return;
    const int64_t pc = pb * x->KC, kc = kblock_len(x, pc);
    const int64_t p0 = q0 * NR, plen = (q1 * NR < x->N ? q1 * NR : x->N) - p0;
    float *dst = x->bshared + pb * x->bstride + p0 * ks_rows(&x->ks, kc);
    uint32_t rng[2] = {0x10000u, 0};
    x->ks.bpack(&x->b, p0, plen, pc, kc, NR, x->ks.kq, TK_BF16_PAIRS, (uint32_t *)(void *)dst,
                x->scan_b ? rng : NULL);
    if (x->scan_b) {
        atomic_min_u32(&x->bmn, rng[0]);
        atomic_max_u32(&x->bmx, rng[1]);
    }
}

/* pack A panels: task t = (K block, group of panels) */
static void pack_a_task(void *arg, int64_t t) {
    gctx *x = (gctx *)arg;
    pack_slice p;
    if (pack_slice_of(t, x->napan, x->apan_per_task, &p)) pack_a_panels(x, p.pb, p.q0, p.q1);
}

/* pack shared B panels: task t = (K block, group of panels) */
static void pack_b_task(void *arg, int64_t t) {
    gctx *x = (gctx *)arg;
    pack_slice p;
    if (pack_slice_of(t, x->npanb, x->bpan_per_task, &p)) pack_b_panels(x, p.pb, p.q0, p.q1);
}

/* the first parallel step with a shared B: A panel tasks, then B panel tasks */
static void pack_ab_task(void *arg, int64_t t) {
    gctx *x = (gctx *)arg;
    if (t < x->natasks) pack_a_task(arg, t);
    else pack_b_task(arg, t - x->natasks);
}

static int bf16_apply_plan(gctx *x, int *cshift);
static void compute_task(void *arg, int64_t t);

/* the magnitude range of rows [r0, r0 + nr) of C's old values (f32 bits & 0x7FFFFFFF:
 * smallest nonzero, largest finite) merged into *mn / *mx */
static void c_range(const gctx *x, int64_t r0, int64_t nr, uint32_t *mn, uint32_t *mx) {
    uint32_t a = 0xFFFFFFFFu, b = 0;
    for (int64_t i = r0; i < r0 + nr; i++)
        for (int64_t j = 0; j < x->N; j++) {
            uint32_t u;
            memcpy(&u, x->c + i * x->c_rs + j * x->c_cs, 4);
            u &= 0x7FFFFFFFu;
            if (u && u < a) a = u;
            if (u < 0x7F800000u && u > b) b = u;
        }
    atomic_min_u32(mn, a);
    atomic_max_u32(mx, b);
}

/* scan task t of the first A block's parallel step (gctx.ns_a / ns_b / ns_c) */
static void scan_task(gctx *x, int64_t t) {
    uint32_t mn = 0x10000u, mx = 0;
    if (t < x->ns_a) {
        src_range_chunk(&x->a, x->M, x->K, x->rows_a, t, &mn, &mx, x->range);
        atomic_min_u32(&x->amn, mn);
        atomic_max_u32(&x->amx, mx);
    } else if ((t -= x->ns_a) < x->ns_b) {
        src_range_chunk(&x->b, x->N, x->K, x->cols_b, t, &mn, &mx, x->range);
        atomic_min_u32(&x->bmn, mn);
        atomic_max_u32(&x->bmx, mx);
    } else {
        t -= x->ns_b;
        const int64_t r0 = t * x->rows_c, nr = x->M - r0 < x->rows_c ? x->M - r0 : x->rows_c;
        c_range(x, r0, nr, &x->cmn, &x->cmx);
    }
}

static void spin_pause(unsigned *n) {
    if (++*n < 2000) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    } else {
        sched_yield(); /* oversubscribed (CI): let the packing threads run */
    }
}

/* profiling: when this worker began its first body of the step */
static void prof_joined(void) {
    const uint64_t c = __atomic_load_n(&g_pr_call, __ATOMIC_RELAXED);
    if (t_pr_call == c) return;
    t_pr_call = c;
    const uint64_t d = now_ns() - g_pr_t0;
    uint64_t o = __atomic_load_n(&g_pr_j0, __ATOMIC_RELAXED);
    while (d < o && !__atomic_compare_exchange_n(&g_pr_j0, &o, d, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
    o = __atomic_load_n(&g_pr_j1, __ATOMIC_RELAXED);
    while (d > o && !__atomic_compare_exchange_n(&g_pr_j1, &o, d, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
    pr_add(&g_pr.joined, 1);
}

/* one packing (or scan) task of the step done: the last one runs the bf16 plan and lets the
 * compute tasks go */
static void pk_finished(gctx *x) {
    if (__atomic_add_fetch(&x->pk_done, 1, __ATOMIC_ACQ_REL) == x->pk_n) {
        if (x->pk_plan) x->plan = bf16_apply_plan(x, &x->cshift);
        if (g_prof) x->t_ready = now_ns();
        __atomic_store_n(&x->pk_ready, 1, __ATOMIC_RELEASE);
    }
}

/* wait until every packing task has finished (they were all claimed by running bodies, so
 * this ends); false when the f32 path takes over (bf16 plan) */
static bool pk_wait(gctx *x) {
    unsigned n = 0;
    while (!__atomic_load_n(&x->pk_ready, __ATOMIC_ACQUIRE)) spin_pause(&n);
    return x->plan >= 0;
}

/* Body t of the one parallel step of an A block: first help with the packing (claim packing
 * tasks until none is left), wait until every packing task has finished, the last finisher
 * having run the bf16 plan, then compute task t. Saves the pool's second wake-up and join
 * per GEMM, and needs no order from the parallel-for. */
static void fused_task(void *arg, int64_t t) {
    gctx *x = (gctx *)arg;
    if (g_prof) prof_joined();
    for (;;) {
        const int64_t i = __atomic_fetch_add(&x->pk_next, 1, __ATOMIC_ACQ_REL);
        if (i >= x->pk_n) break;
        const int64_t npack = x->pk_n - (x->ns_a + x->ns_b + x->ns_c);
        const uint64_t p0 = g_prof ? now_ns() : 0;
        if (i >= npack) scan_task(x, i - npack);
        else if (x->pk_both) pack_ab_task(x, i);
        else pack_a_task(x, i);
        if (g_prof) pr_add(i >= npack ? &g_pr.pks : x->pk_both && i >= x->natasks ? &g_pr.pkb : &g_pr.pka, now_ns() - p0);
        pk_finished(x);
    }
    if (t >= x->ntasks) return;
    if (pk_wait(x)) compute_task(arg, t);
}

/* ---------- home regions (gctx.affine) ---------- */
static int g_gemm_slots;
static __thread int t_gemm_slot = -1;
/* this thread's number, kept for its life: the pool's threads persist, so a thread (usually
 * on the same core) finds the same home region at every call, and the packed lines it
 * reads are the ones it and its region's neighbours read last time */
static int gemm_slot(void) {
    if (t_gemm_slot < 0) t_gemm_slot = __atomic_fetch_add(&g_gemm_slots, 1, __ATOMIC_RELAXED);
    return t_gemm_slot;
}
static int64_t part_lo(int64_t i, int64_t n, int64_t parts) { return i * n / parts; }

/* region r's tiles: row chunks [*m0, *m1) x N blocks [*n0, *n1) */
static void region_tiles(const gctx *x, int64_t r, int64_t *m0, int64_t *m1, int64_t *n0, int64_t *n1) {
    const int64_t ri = r / x->reg_n, rj = r % x->reg_n;
    *m0 = part_lo(ri, x->nMt, x->reg_m);
    *m1 = part_lo(ri + 1, x->nMt, x->reg_m);
    *n0 = part_lo(rj, x->nN, x->reg_n);
    *n1 = part_lo(rj + 1, x->nN, x->reg_n);
}

/* region r's packing: a reg_n-th of the A panels of its region row (the one at its column)
 * and a reg_m-th of the B panels of its region column, every K block */
static void region_pack(gctx *x, int64_t r) {
    const int MR = x->ks.mr, NR = x->ks.nr;
    const int64_t ri = r / x->reg_n, rj = r % x->reg_n;
    int64_t m0, m1, n0, n1;
    region_tiles(x, r, &m0, &m1, &n0, &n1);
    const int64_t a0 = m0 * x->mchunk / MR, a1 = m1 * x->mchunk / MR < x->napan ? m1 * x->mchunk / MR : x->napan;
    const int64_t b0 = n0 * x->NCb / NR, b1 = n1 * x->NCb / NR < x->npanb ? n1 * x->NCb / NR : x->npanb;
    const int64_t qa0 = a0 + part_lo(rj, a1 - a0, x->reg_n), qa1 = a0 + part_lo(rj + 1, a1 - a0, x->reg_n);
    const int64_t qb0 = b0 + part_lo(ri, b1 - b0, x->reg_m), qb1 = b0 + part_lo(ri + 1, b1 - b0, x->reg_m);
    for (int64_t pb = 0; pb < x->npc; pb++) {
        const uint64_t p0 = g_prof ? now_ns() : 0;
        pack_a_panels(x, pb, qa0, qa1);
        const uint64_t p1 = g_prof ? now_ns() : 0;
        pack_b_panels(x, pb, qb0, qb1);
        if (g_prof) {
            pr_add(&g_pr.pka, p1 - p0);
            pr_add(&g_pr.pkb, now_ns() - p1);
        }
    }
}

/* A body of the affine step (as many as workers; which body a thread runs does not matter):
 * the packing of the thread's home region, then of any region not yet claimed, and the range
 * scans; then, once all of it is done and the bf16 plan made, the home region's tiles, then
 * those left in the others */
static void affine_task(void *arg, int64_t body) {
    gctx *x = (gctx *)arg;
    (void)body;
    if (g_prof) prof_joined();
    const int64_t G = x->reg_m * x->reg_n, home = gemm_slot() % G;
    for (int64_t s = 0; s < G; s++) {
        const int64_t r = (home + s) % G;
        if (__atomic_load_n(&x->reg[r].packed, __ATOMIC_RELAXED) ||
            __atomic_exchange_n(&x->reg[r].packed, 1, __ATOMIC_ACQ_REL))
            continue;
        region_pack(x, r);
        pk_finished(x);
    }
    for (;;) {
        const int64_t i = __atomic_fetch_add(&x->scan_next, 1, __ATOMIC_ACQ_REL);
        if (i >= x->nscan) break;
        const uint64_t p0 = g_prof ? now_ns() : 0;
        scan_task(x, i);
        if (g_prof) pr_add(&g_pr.pks, now_ns() - p0);
        pk_finished(x);
    }
    if (!pk_wait(x)) return;
    for (int64_t s = 0; s < G; s++) {
        const int64_t r = (home + s) % G;
        int64_t m0, m1, n0, n1;
        region_tiles(x, r, &m0, &m1, &n0, &n1);
        const int64_t w = n1 - n0, size = (m1 - m0) * w;
        while (__atomic_load_n(&x->reg[r].next, __ATOMIC_RELAXED) < size) {
            const int64_t l = __atomic_fetch_add(&x->reg[r].next, 1, __ATOMIC_ACQ_REL);
            if (l >= size) break;
            compute_task(x, (n0 + l % w) * x->nMt + m0 + l / w); /* along the region's rows first: A panels reused */
        }
    }
}

/* The region grid for the first A block's step (after bf16_tiles): reg_m x reg_n regions,
 * as many as there are workers where the task grid allows, else as many as it allows, the
 * squarest (fewest rows plus columns per region, i.e. the least operand traffic) among
 * those; none (the plain fused step) for fewer than 2 */
static void affine_setup(gctx *x, int workers) {
    x->affine = 0;
    if (!g_affine || workers < 2) return;
    int64_t bp = 0, bm = 0, bn = 0;
    double be = 0;
    for (int64_t gm = 1; gm <= workers && gm <= x->nMt && gm <= TK_MAX_REGIONS; gm++) {
        int64_t gn = workers / gm;
        if (gn > x->nN) gn = x->nN;
        if (gn > TK_MAX_REGIONS / gm) gn = TK_MAX_REGIONS / gm;
        const int64_t p = gm * gn;
        const double e = (double)x->mlen / (double)gm + (double)x->N / (double)gn;
        if (p > bp || (p == bp && e < be)) bp = p, bm = gm, bn = gn, be = e;
    }
    if (bp < 2) return;
    x->affine = 1;
    x->reg_m = bm;
    x->reg_n = bn;
    memset(x->reg, 0, sizeof x->reg[0] * (size_t)bp);
    x->nscan = x->ns_a + x->ns_b + x->ns_c;
    x->scan_next = 0;
    x->pk_n = bp + x->nscan;
}

static void st_any(tile_dtype dt, void *p, int64_t idx, double v);

/* rows [r0, r0 + nr) x columns [c0, c0 + nc) of the f32 result c (row stride c_rs, unit
 * column stride), times 2^-cshift, rounded into out */
static void out_rows(const tk_isa *isa, const tk_out *out, const float *c, int64_t c_rs, int64_t r0, int64_t nr, int64_t c0,
                     int64_t nc, int cshift) {
    const float scale = cshift ? ldexpf(1.0f, -cshift) : 1.0f;
    for (int64_t i = r0; i < r0 + nr; i++) {
        const float *src = c + i * c_rs + c0;
        if (out->cs == 1 && isa->cvt_from_f32 && isa->cvt_from_f32(out->dt, out->p, i * out->rs + c0, src, nc, scale)) continue;
        for (int64_t j = 0; j < nc; j++) st_any(out->dt, out->p, i * out->rs + (c0 + j) * out->cs, (double)(src[j] * scale));
    }
}

/* compute task t = (N block jn, chunk im of the A block's rows), all of K */
static void compute_task(void *arg, int64_t t) {
    gctx *x = (gctx *)arg;
    const kset *ks = &x->ks;
    const int MR = ks->mr, NR = ks->nr;
    const int64_t jn = t / x->nMt, im = t % x->nMt;
    const int64_t j0 = jn * x->NCb;
    const int64_t nl = x->N - j0 < x->NCb ? x->N - j0 : x->NCb;
    const int64_t i0 = im * x->mchunk;
    if (i0 >= x->mlen || nl <= 0) return;
    const int64_t ml = x->mlen - i0 < x->mchunk ? x->mlen - i0 : x->mchunk;

    tk_tls *tl = &t_tls;
    const int64_t npan = cdiv(nl, NR);
    float *bp = x->bshared ? NULL : (float *)buf_get(&tl->b, (size_t)(npan * NR * ks_rows(ks, x->KC)) * sizeof(float));
    if (!bp && !x->bshared) {
        x->failed = 1;
        return;
    }
    float tmp[TK_MAX_TILE] __attribute__((aligned(64)));
    const uint64_t tstart = g_prof ? now_ns() : 0;
    uint64_t kern = 0;
    if (ks->begin) ks->begin();
    for (int64_t pc = 0; pc < x->K; pc += x->KC) {
        const int64_t kc = kblock_len(x, pc);
        const int64_t kst = ks_rows(ks, kc); /* panel rows stored: k steps or k pairs */
        const int beta = pc == 0 ? x->accumulate : 1;
        if (x->bshared) bp = x->bshared + (pc / x->KC) * x->bstride + j0 * kst;
        else if (ks->kdiv == 2) {
            ks->bpack(&x->b, j0, nl, pc, kc, NR, ks->kq, TK_BF16_PAIRS, (uint32_t *)(void *)bp, NULL);
            bf16_rescale((uint32_t *)(void *)bp, npan * NR * kst, x->sb);
        } else {
            ks->pack(&x->b, j0, nl, pc, kc, NR, bp);
        }
        const float *ablk = x->apack + x->mpad * (pc / x->KC) * ks_rows(ks, x->KC);
        const uint64_t k0 = g_prof ? now_ns() : 0;
        for (int64_t ir = i0; ir < i0 + ml; ir += MR) {
            const int64_t mr = x->mlen - ir < MR ? x->mlen - ir : MR;
            const int64_t ci = x->ic + ir;
            const float *ap = ablk + ir * kst; /* panel ir/MR */
            for (int64_t jr = 0; jr < nl; jr += NR) {
                const float *bpj = bp + jr * kst;
                const int64_t nr = nl - jr < NR ? nl - jr : NR;
                float *c = x->c + ci * x->c_rs + (j0 + jr) * x->c_cs;
                if (mr == MR && nr == NR && x->c_cs == 1) {
                    ks->ukr(kst, ap, bpj, c, x->c_rs, beta);
                } else {
                    ks->ukr(kst, ap, bpj, tmp, NR, 0);
                    for (int64_t i = 0; i < mr; i++) {
                        float *crow = c + i * x->c_rs;
                        const float *trow = tmp + i * NR;
                        if (beta)
                            for (int64_t j = 0; j < nr; j++) crow[j * x->c_cs] += trow[j];
                        else
                            for (int64_t j = 0; j < nr; j++) crow[j * x->c_cs] = trow[j];
                    }
                }
            }
        }
        if (g_prof) kern += now_ns() - k0;
    }
    if (ks->end) ks->end();
    if (x->out) out_rows(x->isa, x->out, x->c, x->c_rs, x->ic + i0, ml, j0, nl, x->cshift);
    if (g_prof) {
        const uint64_t tend = now_ns();
        pr_add(&g_pr.busy, tend - tstart);
        pr_add(&g_pr.kern, kern);
        pr_add(&g_pr.tasks, 1);
        uint64_t o = __atomic_load_n(&g_pr_first, __ATOMIC_RELAXED);
        while (tstart < o && !__atomic_compare_exchange_n(&g_pr_first, &o, tstart, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
        }
        o = __atomic_load_n(&g_pr_last, __ATOMIC_RELAXED);
        while (tend > o && !__atomic_compare_exchange_n(&g_pr_last, &o, tend, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
        }
    }
}

/* The tiles of C per task with a shared packed B (bf16): N blocks of NCb (at most x->NCb,
 * the L2 bound) x row chunks of mchunk, minimising
 *     waves x (mc * nb + 75 (mc + nb)),   waves = ceil(tasks / threads)
 * i.e. the slowest thread's compute (mc nb per K step) plus the operand traffic of its tiles
 * ((mc + nb) per K step, weighted by ~ the flops per byte a core's AMX outruns its share of
 * L3 bandwidth by): few, large, square-ish tiles in whole waves. */
#define BF16_MIN_WAVES 4
static void bf16_tiles(gctx *x, int nthreads) {
    const int MR = x->ks.mr, NR = x->ks.nr;
    const int64_t ncap = x->NCb, nmax = cdiv(x->N, NR) < 64 ? cdiv(x->N, NR) : 64;
    const int64_t mmax = x->napan < 64 ? x->napan : 64;
    double best = -1;
    int64_t bnb = ncap, bmc = x->mpad;
    int minw_zero = 0;
again:;
    /* at least BF16_MIN_WAVES tasks per thread where the shape allows: one task per thread
     * leaves no slack when a core of the (virtual) machine is slow; dynamic scheduling of
     * 4 per thread measured 30.7 -> 21.3 ms at 4096^3 on 16 threads (2048: 4.73 -> 4.34,
     * 1024: 1.02 -> 0.97; bench/results/cpu-bf16-2026-11-30-s5.md). TILE_GEMM_MIN_WAVES
     * overrides it (1: the cost model alone) */
    const int64_t minw = minw_zero || nthreads < 2 ? 0 : g_env_waves ? g_env_waves : BF16_MIN_WAVES;
    for (int64_t nn = cdiv(x->N, ncap); nn <= nmax; nn++) {
        const int64_t nb = round_up(cdiv(x->N, nn), NR);
        if (nb > ncap) continue;
        const int64_t nblk = cdiv(x->N, nb);
        for (int64_t nm = 1; nm <= mmax; nm++) {
            const int64_t mc = round_up(cdiv(x->mlen, nm), MR);
            const int64_t tasks = nblk * cdiv(x->mlen, mc);
            if (minw > 1 && tasks < minw * nthreads) continue;
            const double waves = (double)cdiv(tasks, nthreads);
            const double cost = waves * ((double)mc * (double)nb + 75.0 * (double)(mc + nb));
            if (best < 0 || cost < best) best = cost, bnb = nb, bmc = mc;
        }
    }
    if (best < 0 && minw > 1) { /* no split that fine: the unconstrained best */
        minw_zero = 1;
        goto again;
    }
    x->NCb = bnb;
    x->nN = cdiv(x->N, bnb);
    x->mchunk = bmc;
    x->nMt = cdiv(x->mlen, bmc);
}

/* Small f32 problems with unit-stride B rows and C rows: no packing at all. */
#define TK_DIRECT_MAX_FLOPS (2.0 * 128 * 128 * 128)
#define TK_DIRECT_MAX_K 512

static int direct_ok(const tk_isa *isa, const tk_src *a, const tk_src *b, int64_t c_cs, int64_t M, int64_t N, int64_t K) {
    return isa->ukr_direct && a->dt == TILE_DT_F32 && b->dt == TILE_DT_F32 && b->sp == 1 && c_cs == 1 &&
           K <= TK_DIRECT_MAX_K && 2.0 * (double)M * (double)N * (double)K <= TK_DIRECT_MAX_FLOPS;
}

static void gemm_direct(const tk_isa *isa, const tk_src *a, const tk_src *b, float *c, int64_t c_rs, int64_t M,
                        int64_t N, int64_t K, int beta) {
    const int MR = isa->direct_mr, NR = isa->direct_nr;
    const float *A = (const float *)a->p, *B = (const float *)b->p;
    for (int64_t j = 0; j < N; j += NR) {
        const int n = (int)(N - j < NR ? N - j : NR);
        for (int64_t i = 0; i < M; i += MR) {
            const int m = (int)(M - i < MR ? M - i : MR);
            isa->ukr_direct(K, A + i * a->sp, a->sp, a->sk, B + j, b->sk, c + i * c_rs + j, c_rs, beta, m, n);
        }
    }
}

/* After the first packing step of a bf16 GEMM: decide (bf16_plan) and apply the scale to
 * what is packed already (A block 0, the shared B) and to C's old values; the packers scale
 * the rest. Returns bf16_plan's verdict; *cshift = sa + sb. */
static int bf16_apply_plan(gctx *x, int *cshift) {
    /* C's old values (accumulating): scanned by the caller (scan tasks, or serially) */
    uint32_t cmn = x->cmn, cmx = x->cmx;
    if (!x->accumulate || cmn >= 0x7F800000u) cmn = cmx = 0;
    x->scan_a = x->scan_b = 0;
    int sa, sb;
    const int plan = bf16_plan(x->amn, x->amx, x->bmn, x->bmx, cmn, cmx, x->K, &sa, &sb);
    *cshift = 0;
    if (plan <= 0) return plan;
    for (int64_t pb = 0; pb < x->npc; pb++) {
        const int64_t kc = kblock_len(x, pb * x->KC), rows = ks_rows(&x->ks, kc);
        if (x->apack)
            bf16_rescale((uint32_t *)(void *)(x->apack + x->mpad * pb * ks_rows(&x->ks, x->KC)), x->mpad * rows, sa);
        if (x->bshared) bf16_rescale((uint32_t *)(void *)(x->bshared + pb * x->bstride), x->npanb * x->ks.nr * rows, sb);
    }
    x->sa = sa;
    x->sb = sb;
    *cshift = sa + sb;
    if (x->accumulate) scale_c(x->c, x->c_rs, x->c_cs, x->M, x->N, sa + sb);
    return plan;
}

static int gemm_f32(const tk_isa *isa, const tk_bf16_kernel *bk, tk_src a, tk_src b, float *c, int64_t c_rs,
                    int64_t c_cs, int64_t M, int64_t N, int64_t K, int accumulate, tk_parallel_for pfor, void *pool,
                    int workers, const tk_out *out);

/* C (f32, element strides c_rs/c_cs) (+)= A @ B with the packed kernels.
 * Two parallel steps per A block (normally one A block: all of M): pack the block's A
 * panels for every K block, then the compute tasks, each looping over K with its own B
 * packing. */
static int gemm_f32(const tk_isa *isa, const tk_bf16_kernel *bk, tk_src a, tk_src b, float *c, int64_t c_rs,
                    int64_t c_cs, int64_t M, int64_t N, int64_t K, int accumulate, tk_parallel_for pfor, void *pool,
                    int workers, const tk_out *out) {
    /* orientation: the micro-kernel writes rows of C with unit stride */
    if (c_cs != 1 && c_rs == 1 && !out) {
        tk_src t = a;
        a = b;
        b = t;
        int64_t s = c_rs;
        c_rs = c_cs;
        c_cs = s;
        s = M;
        M = N;
        N = s;
    }
    if (!bk && direct_ok(isa, &a, &b, c_cs, M, N, K)) {
        gemm_direct(isa, &a, &b, c, c_rs, M, N, K, accumulate);
        if (out) out_rows(isa, out, c, c_rs, 0, M, 0, N, 0);
        return TK_GEMM_OK;
    }
    gctx x;
    memset(&x, 0, sizeof x);
    x.isa = isa;
    x.out = out;
    x.a = a;
    x.b = b;
    x.c = c;
    x.c_rs = c_rs;
    x.c_cs = c_cs;
    x.M = M;
    x.N = N;
    x.K = K;
    x.accumulate = accumulate;
    if (bk) {
        tk_bpack_fn bp = tk_pack_bf16_generic;
        x.range = tk_bf16_range_generic;
#if defined(__x86_64__) || defined(__i386__)
        if (isa == &tk_isa_avx512) bp = tk_pack_bf16_avx512, x.range = tk_bf16_range_avx512;
#endif
        x.ks = (kset){bk->mr, bk->nr, 2, bk->kq, bk->a_layout, bk->ukr, NULL, bp, bk->task_begin, bk->task_end};
    } else {
        x.ks = (kset){isa->mr, isa->nr, 1, 1, 0, isa->ukr, isa->pack, NULL, NULL, NULL};
    }
    const int MR = x.ks.mr, NR = x.ks.nr;

    /* workers: the pool's size (tk_gemm.nthreads), not the CPU count (TILE_NUM_THREADS) */
    const int nthreads = workers > 1 ? workers : 2;
    const double flops = 2.0 * (double)M * (double)N * (double)K;
    const int par = pfor != NULL && flops >= 4.0e6;
    const int64_t want_tasks = 8 * (int64_t)nthreads; /* dynamic scheduling evens them out */
    /* packing tasks: as many on one worker as K blocks (whole rows of the sources, which
     * the row-order packers read as streams) */
    const int64_t pack_want = workers > 1 ? want_tasks : 1;

    /* KC: the A micro-panel (MR x KC floats) takes about half of L1 */
    int64_t KC = g_env_kc ? g_env_kc : (g_l1 / 2) / (MR * 4);
    KC = KC < 16 ? 16 : KC > 2048 ? 2048 : KC;
    if (bk) KC *= 2; /* a bf16 pair panel of 2 KC k-steps takes the room of KC f32 ones */
    /* AMX (kq 16): its tile loads stream A and B from L2 at the kernel's pace, so what K
     * blocking saves is the C tile's load and store per K block: 4x longer blocks (A panel
     * 2x L1, 1536 k with a 48 KiB L1). Measured on the Xeon host of the GPU machine
     * (TILE_GEMM_PROF, bench/results/cpu-bf16-2026-11-30-s5.md): 1 thread 2048^3 compute
     * 21.4 -> 17.0 ms, 16 threads 1024^3 1.02 -> 0.73 ms, 4096^3 30.7 -> 24.0 ms */
    if (bk && bk->kq == 16 && !g_env_kc) KC *= 4;
    /* equal K blocks, a multiple of 4 (whole pairs) and of 2 kq (whole padded pair chunks:
     * every block but the last fills its panels exactly) */
    const int64_t kmul = 2 * x.ks.kq > 4 ? 2 * x.ks.kq : 4;
    KC = round_up(cdiv(K, cdiv(K, KC)), kmul);
    /* NCb: the B block (KC x NCb) takes about half of L2; in parallel, N is split further
     * into equal blocks whose count is a multiple of the thread count (at least 4 per
     * thread); failing that, down to 2 NR columns, then the rows are split too */
    int64_t NCb = g_env_nc ? round_up(g_env_nc, NR) : ((g_l2 / 2) / (KC * 4)) / NR * NR;
    if (NCb < NR) NCb = NR;
    NCb = round_up(cdiv(N, cdiv(N, NCb)), NR);
    if (bk && !g_env_nc) {
        /* bf16: the kernels are 2x (vdpbf16ps) to ~10x (AMX) faster per k than the f32 one,
         * so C tiles per task are larger for more reuse of each packed A panel (L1) and B
         * block (L2): the B block (KC x NCb bf16) in half of L2, at most 512 columns; the
         * rows are split below for enough tasks */
        int64_t nb = ((g_l2 / 2) / (KC * 2)) / NR * NR;
        nb = nb < NR ? NR : nb > 512 ? 512 : nb;
        NCb = round_up(cdiv(N, cdiv(N, nb)), NR);
    } else if (par && !g_env_nc) {
        int64_t found = 0;
        int64_t n0 = cdiv(N, NCb) > 4 * (int64_t)nthreads ? cdiv(N, NCb) : 4 * (int64_t)nthreads;
        for (int64_t nn = n0; nn <= cdiv(N, NR) && !found; nn++) {
            if (nn % nthreads) continue;
            const int64_t nb = round_up(cdiv(N, nn), NR);
            if (cdiv(N, nb) == nn) found = nb;
        }
        if (found) {
            NCb = found;
        } else if (cdiv(N, NCb) < want_tasks) {
            int64_t nb = round_up(cdiv(N, want_tasks), NR);
            NCb = nb < 2 * NR ? (NCb < 2 * NR ? NCb : 2 * NR) : nb;
        }
    }
    /* MCa: the packed A block (MCa x K) stays under 64 MiB and each of its K blocks under
     * half of L3 */
    int64_t MCa = g_env_mc ? round_up(g_env_mc, MR) : ((g_l3 / 2) / (KC * 4)) / MR * MR;
    int64_t cap = ((int64_t)(64 << 20) / (4 * (K > 0 ? K : 1))) / MR * MR;
    if (!g_env_mc && MCa > cap) MCa = cap;
    if (MCa < MR) MCa = MR;
    MCa = round_up(cdiv(M, cdiv(M, MCa)), MR);
    x.KC = KC;
    x.NCb = NCb;
    x.MCa = MCa;
    x.npc = cdiv(K, KC);

    tk_tls *tl = &t_tls;
    float *apack = (float *)buf_get(&tl->a, (size_t)(MCa * x.npc * ks_rows(&x.ks, KC)) * sizeof(float));
    if (!apack) return fail(TK_GEMM_ENOMEM, "cpu gemm: cannot allocate %lld bytes for packing A",
                            (long long)(MCa * K * 4));
    x.apack = apack;
    /* bf16 in parallel: pack B once, shared by all tasks (a task's tile of C then costs no
     * B packing of its own, so tiles can be chosen for reuse alone), up to 256 MiB */
    if (bk && par && !g_no_bshared) {
        x.npanb = cdiv(N, NR);
        x.bstride = x.npanb * NR * ks_rows(&x.ks, KC);
        if ((double)x.bstride * (double)x.npc * 4.0 <= 256.0 * 1024 * 1024) {
            x.bshared = (float *)buf_get(&tl->bs, (size_t)(x.bstride * x.npc) * sizeof(float));
            if (!x.bshared) return fail(TK_GEMM_ENOMEM, "cpu gemm: cannot allocate %lld bytes for packing B",
                                        (long long)(x.bstride * x.npc * 4));
            x.bpan_per_task = cdiv(x.npanb * x.npc, pack_want);
            if (x.bpan_per_task > x.npanb) x.bpan_per_task = x.npanb;
        }
    }

    if (bk) {
        /* denormals (above): the ranges of A and B before the first compute task */
        x.amn = x.bmn = 0x10000u;
        x.amx = x.bmx = 0;
        x.cmn = 0xFFFFFFFFu;
        x.cmx = 0;
        x.scan_a = M <= MCa;
        x.scan_b = x.bshared != NULL;
        if (par) {
            /* what the packing tasks do not see is scanned by tasks of the same step, in
             * about want_tasks chunks each */
            const int64_t la = src_scan_len(&x.a, M, K), lb = src_scan_len(&x.b, N, K);
            if (!x.scan_a) x.rows_a = cdiv(la, want_tasks), x.ns_a = cdiv(la, x.rows_a);
            if (!x.scan_b) x.cols_b = cdiv(lb, want_tasks), x.ns_b = cdiv(lb, x.cols_b);
            if (accumulate) x.rows_c = cdiv(M, want_tasks), x.ns_c = cdiv(M, x.rows_c);
        } else {
            if (!x.scan_a) src_range(&x.a, 0, M, 0, K, &x.amn, &x.amx, x.range);
            if (!x.scan_b) src_range(&x.b, 0, N, 0, K, &x.bmn, &x.bmx, x.range);
            if (accumulate) c_range(&x, 0, M, &x.cmn, &x.cmx);
        }
    }
    int cshift = 0; /* C was computed times 2^cshift */
    const uint64_t pr0 = g_prof ? now_ns() : 0;
    for (int64_t ic = 0; ic < M; ic += MCa) {
        x.ic = ic;
        x.mlen = M - ic < MCa ? M - ic : MCa;
        x.mpad = round_up(x.mlen, MR);
        x.napan = cdiv(x.mlen, MR);
        x.NCb = NCb;
        x.nN = cdiv(N, NCb);
        if (par) {
            x.apan_per_task = cdiv(x.napan * x.npc, pack_want);
            if (x.apan_per_task > x.napan) x.apan_per_task = x.napan;
            x.natasks = x.npc * cdiv(x.napan, x.apan_per_task);
            if (x.bshared && !g_env_nc) {
                bf16_tiles(&x, workers);
            } else {
                int64_t nm = x.nN >= 4 * (int64_t)nthreads ? 1 : cdiv(want_tasks, x.nN);
                if (nm > x.napan) nm = x.napan;
                x.mchunk = round_up(cdiv(x.mlen, nm), MR);
                x.nMt = cdiv(x.mlen, x.mchunk);
            }
            /* one parallel step: the packing tasks, then (after the last one, and the bf16
             * plan) the compute tasks (fused_task) */
            x.pk_both = x.bshared && ic == 0;
            x.pk_n = x.pk_both ? x.natasks + x.npc * cdiv(x.npanb, x.bpan_per_task) : x.natasks;
            if (ic == 0) x.pk_n += x.ns_a + x.ns_b + x.ns_c;
            else x.ns_a = x.ns_b = x.ns_c = 0;
            x.pk_next = x.pk_done = 0;
            x.pk_ready = 0;
            x.pk_plan = bk && ic == 0;
            x.plan = 0;
            if (g_prof) { /* (profiling assumes one GEMM at a time) */
                g_pr_first = UINT64_MAX;
                g_pr_last = 0;
                g_pr_j0 = UINT64_MAX;
                g_pr_j1 = 0;
                g_pr_t0 = now_ns();
                __atomic_fetch_add(&g_pr_call, 1, __ATOMIC_RELAXED);
            }
            x.ntasks = x.nN * x.nMt;
            if (x.pk_both) affine_setup(&x, workers);
            else x.affine = 0; /* (set by the first A block's step) */
            if (x.affine) {
                pfor(pool, workers, affine_task, &x);
                __atomic_fetch_add(&g_affine_count, 1, __ATOMIC_RELAXED);
            } else {
                /* bodies past the compute tasks only help packing (few compute tasks) */
                const int64_t nhelp = x.pk_n < workers ? x.pk_n : workers;
                pfor(pool, x.ntasks > nhelp ? x.ntasks : nhelp, fused_task, &x);
            }
            if (g_prof) {
                const uint64_t pr4 = now_ns();
                pr_add(&g_pr.pack, x.t_ready - (ic == 0 ? pr0 : x.t_ready));
                pr_add(&g_pr.compute, pr4 - x.t_ready);
                if (g_pr_last) pr_add(&g_pr.tail, pr4 - g_pr_last);
                if (g_pr_j1) {
                    pr_add(&g_pr.join0, g_pr_j0);
                    pr_add(&g_pr.join1, g_pr_j1);
                }
            }
            if (x.plan < 0) return gemm_f32(isa, NULL, a, b, c, c_rs, c_cs, M, N, K, accumulate, pfor, pool, workers, out);
            if (x.pk_plan) cshift = x.cshift;
        } else {
            x.apan_per_task = x.napan;
            for (int64_t t = 0; t < x.npc; t++) pack_a_task(&x, t);
            if (bk && ic == 0) {
                const int plan = bf16_apply_plan(&x, &cshift);
                x.cshift = cshift;
                if (plan < 0) return gemm_f32(isa, NULL, a, b, c, c_rs, c_cs, M, N, K, accumulate, pfor, pool, workers, out);
            }
            x.mchunk = x.mpad;
            x.nMt = 1;
            for (int64_t t = 0; t < x.nN; t++) compute_task(&x, t);
        }
        if (x.failed) {
            if (cshift) scale_c(c, c_rs, c_cs, M, N, -cshift); /* C's old values back to their scale */
            return fail(TK_GEMM_ENOMEM, "cpu gemm: cannot allocate a packing buffer for B");
        }
    }
    if (cshift && !out) scale_c(c, c_rs, c_cs, M, N, -cshift); /* (with out, the tasks scaled what they rounded) */
    if (g_prof && par) {
        pr_add(&g_pr.total, now_ns() - pr0);
        pr_add(&g_pr.calls, 1);
        pr_add(&g_pr.workers, (uint64_t)workers);
    }
    buf_trim(&tl->a);
    buf_trim(&tl->b);
    buf_trim(&tl->bs);
    return TK_GEMM_OK;
}

/* element access with signed element offsets (tile_load_f/tile_store_f take unsigned ones) */
static const void *elem_base(tile_dtype dt, const void *p, int64_t idx, size_t *sub) {
    if (dt == TILE_DT_FP4_E2M1) {
        *sub = (size_t)(idx & 1);
        return (const uint8_t *)p + (idx >> 1);
    }
    *sub = 0;
    return (const uint8_t *)p + idx * (int64_t)(tile_dtype_bits(dt) / 8);
}
static double ld_any(tile_dtype dt, const void *p, int64_t idx) {
    size_t sub;
    const void *b = elem_base(dt, p, idx, &sub);
    return tile_load_f(dt, b, sub);
}
static void st_any(tile_dtype dt, void *p, int64_t idx, double v) {
    size_t sub;
    const void *b = elem_base(dt, p, idx, &sub);
    tile_store_f(dt, (void *)b, sub, v);
}

/* ---------- f64 path ---------- */

static double ld_d(tile_dtype dt, const void *p, int64_t idx) {
    if (dt == TILE_DT_F64) return ((const double *)p)[idx];
    if (dt == TILE_DT_F32) return ((const float *)p)[idx];
    if (dt == TILE_DT_FP4_E2M1) {
        uint8_t byte = ((const uint8_t *)p)[idx >> 1];
        return tk_lut_e2m1[(idx & 1) ? (byte >> 4) : (byte & 0xF)];
    }
    return ld_any(dt, p, idx);
}

static int gemm_f64(const tk_gemm *g) {
    const int64_t M = g->M, N = g->N, K = g->K;
    double *bt = (double *)malloc((size_t)(K > 0 ? K : 1) * (size_t)N * sizeof(double));
    double *arow = (double *)malloc((size_t)(K > 0 ? K : 1) * sizeof(double));
    double *crow = (double *)malloc((size_t)N * sizeof(double));
    if (!bt || !arow || !crow) {
        free(bt);
        free(arow);
        free(crow);
        return fail(TK_GEMM_ENOMEM, "cpu gemm (f64): out of memory");
    }
    for (int64_t k = 0; k < K; k++)
        for (int64_t j = 0; j < N; j++) bt[k * N + j] = ld_d(g->b_dtype, g->B, k * g->b_rs + j * g->b_cs);
    for (int64_t i = 0; i < M; i++) {
        for (int64_t k = 0; k < K; k++) arow[k] = ld_d(g->a_dtype, g->A, i * g->a_rs + k * g->a_cs);
        for (int64_t j = 0; j < N; j++)
            crow[j] = g->accumulate ? ld_any(g->c_dtype, g->C, i * g->c_rs + j * g->c_cs) : 0.0;
        for (int64_t k = 0; k < K; k++) {
            const double av = arow[k];
            const double *bk = bt + k * N;
            for (int64_t j = 0; j < N; j++) crow[j] += av * bk[j];
        }
        for (int64_t j = 0; j < N; j++) st_any(g->c_dtype, g->C, i * g->c_rs + j * g->c_cs, crow[j]);
    }
    free(bt);
    free(arow);
    free(crow);
    return TK_GEMM_OK;
}

/* ---------- entry point ---------- */

static int operand_dtype_ok(tile_dtype dt) {
    switch (dt) {
    case TILE_DT_F32: case TILE_DT_F16: case TILE_DT_BF16: case TILE_DT_F64:
    case TILE_DT_FP8_E4M3: case TILE_DT_FP8_E5M2: case TILE_DT_FP4_E2M1: return 1;
    default: return 0;
    }
}

static const char *dt_name(tile_dtype dt) {
    return (dt >= 0 && dt < TILE_DT_COUNT) ? tile_dtype_name(dt) : "invalid dtype";
}

/* |largest element offset| of a rows x cols view fits comfortably in int64 */
static int extent_ok(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
    if (rows <= 0 || cols <= 0) return 1;
    const int64_t lim = INT64_MAX / 4;
    if (rs < -lim || rs > lim || cs < -lim || cs > lim) return 0;
    int64_t a, b;
    if (__builtin_mul_overflow(rows - 1, rs < 0 ? -rs : rs, &a)) return 0;
    if (__builtin_mul_overflow(cols - 1, cs < 0 ? -cs : cs, &b)) return 0;
    return a <= lim && b <= lim;
}

int tk_cpu_gemm(const tk_gemm *g, tk_parallel_for pfor, void *pool) {
    t_err[0] = 0;
    if (!g) return fail(TK_GEMM_EINVAL, "cpu gemm: NULL description");
    ensure_init();
    if (!g_isa) return fail(TK_GEMM_EISA, "cpu gemm: %s", g_isa_msg);
    const int64_t M = g->M, N = g->N, K = g->K;
    if (M < 0 || N < 0 || K < 0)
        return fail(TK_GEMM_EINVAL, "cpu gemm: negative size M=%lld N=%lld K=%lld", (long long)M, (long long)N,
                    (long long)K);
    if (!operand_dtype_ok(g->a_dtype)) return fail(TK_GEMM_EINVAL, "cpu gemm: unsupported dtype for A: %s", dt_name(g->a_dtype));
    if (!operand_dtype_ok(g->b_dtype)) return fail(TK_GEMM_EINVAL, "cpu gemm: unsupported dtype for B: %s", dt_name(g->b_dtype));
    if (g->c_dtype < 0 || g->c_dtype >= TILE_DT_COUNT || !tile_dtype_is_float(g->c_dtype))
        return fail(TK_GEMM_EINVAL, "cpu gemm: C must have a float dtype, not %s", dt_name(g->c_dtype));
    if (g->accumulate != 0 && g->accumulate != 1)
        return fail(TK_GEMM_EINVAL, "cpu gemm: accumulate must be 0 or 1, not %d", g->accumulate);
    if (g->nthreads < 0) return fail(TK_GEMM_EINVAL, "cpu gemm: nthreads must be >= 0, not %d", g->nthreads);
    if (M == 0 || N == 0) return TK_GEMM_OK;
    if (!g->C) return fail(TK_GEMM_EINVAL, "cpu gemm: C is NULL");
    if (K > 0 && (!g->A || !g->B)) return fail(TK_GEMM_EINVAL, "cpu gemm: %s is NULL", g->A ? "B" : "A");
    if ((M > 1 && g->c_rs == 0) || (N > 1 && g->c_cs == 0))
        return fail(TK_GEMM_EINVAL, "cpu gemm: C strides (%lld, %lld) map several elements to one",
                    (long long)g->c_rs, (long long)g->c_cs);
    if (!extent_ok(M, N, g->c_rs, g->c_cs) || !extent_ok(M, K, g->a_rs, g->a_cs) || !extent_ok(K, N, g->b_rs, g->b_cs))
        return fail(TK_GEMM_EINVAL, "cpu gemm: strides too large for the sizes (offsets overflow)");

    if (g->a_dtype == TILE_DT_F64 || g->b_dtype == TILE_DT_F64 || g->c_dtype == TILE_DT_F64) return gemm_f64(g);

    const tk_isa *isa = g_isa;
    if (K == 0) {
        if (g->accumulate) return TK_GEMM_OK;
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) st_any(g->c_dtype, g->C, i * g->c_rs + j * g->c_cs, 0.0);
        return TK_GEMM_OK;
    }
    tk_src a = {g->A, g->a_dtype, g->a_rs, g->a_cs};
    tk_src b = {g->B, g->b_dtype, g->b_cs, g->b_rs};
    const tk_bf16_kernel *bk = (g->a_dtype == TILE_DT_BF16 && g->b_dtype == TILE_DT_BF16) ? bf16_kernel() : NULL;
    const int workers = g->nthreads > 0 ? g->nthreads : tk_cpu_count();
    if (g->c_dtype == TILE_DT_F32)
        return gemm_f32(isa, bk, a, b, (float *)g->C, g->c_rs, g->c_cs, M, N, K, g->accumulate, pfor, pool, workers, NULL);

    /* other C dtypes: accumulate in an f32 workspace, round once */
    tk_tls *tl = &t_tls;
    float *w = (float *)buf_get(&tl->w, (size_t)(M * N) * sizeof(float));
    if (!w) return fail(TK_GEMM_ENOMEM, "cpu gemm: cannot allocate the f32 accumulator (%lld x %lld)", (long long)M, (long long)N);
    if (g->accumulate)
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++)
                w[i * N + j] = (float)ld_any(g->c_dtype, g->C, i * g->c_rs + j * g->c_cs);
    /* the compute tasks round their tiles into C (tk_out) */
    const tk_out out = {g->C, g->c_dtype, g->c_rs, g->c_cs};
    int rc = gemm_f32(isa, bk, a, b, w, N, 1, M, N, K, g->accumulate, pfor, pool, workers, &out);
    buf_trim(&tl->w);
    return rc;
}

/* ---------- helpers ---------- */

int tk_cvt_to_f32(float *dst, tile_dtype dt, const void *src, int64_t first, int64_t n) {
    if (dt < 0 || dt >= TILE_DT_COUNT || !tile_dtype_is_float(dt)) return -1;
    if (n <= 0) return 0;
    ensure_init();
    const tk_isa *isa = g_isa ? g_isa : &tk_isa_generic;
    isa->cvt_to_f32(dst, dt, src, first, n);
    return 0;
}

int tk_cvt_from_f32(tile_dtype dt, void *dst, int64_t first, const float *src, int64_t n) {
    if (dt < 0 || dt >= TILE_DT_COUNT || !tile_dtype_is_float(dt)) return -1;
    if (n > 0 && (dt == TILE_DT_F16 || dt == TILE_DT_BF16)) {
        ensure_init();
        const tk_isa *isa = g_isa ? g_isa : &tk_isa_generic;
        if (isa->cvt_from_f32 && isa->cvt_from_f32(dt, dst, first, src, n, 1.0f)) return 0;
    }
    switch (dt) {
    case TILE_DT_F32: {
        /* NaNs become the canonical quiet NaN (sign kept), as tile_store_f does */
        uint32_t *d = (uint32_t *)dst + first;
        for (int64_t i = 0; i < n; i++) {
            uint32_t u;
            memcpy(&u, &src[i], 4);
            d[i] = (u & 0x7FFFFFFFu) > 0x7F800000u ? (u & 0x80000000u) | 0x7FC00000u : u;
        }
        break;
    }
    case TILE_DT_F64:
        for (int64_t i = 0; i < n; i++) ((double *)dst)[first + i] = src[i];
        break;
    case TILE_DT_BF16:
        for (int64_t i = 0; i < n; i++) ((uint16_t *)dst)[first + i] = tile_f32_to_bf16_bits(src[i]);
        break;
    case TILE_DT_F16:
        for (int64_t i = 0; i < n; i++) ((uint16_t *)dst)[first + i] = tile_f32_to_f16_bits(src[i]);
        break;
    default:
        for (int64_t i = 0; i < n; i++) tile_store_f(dt, dst, (size_t)(first + i), src[i]);
        break;
    }
    return 0;
}

float tk_sum_f32(const float *x, int64_t n) {
    if (n <= 0) return 0.0f;
    ensure_init();
    return (g_isa ? g_isa : &tk_isa_generic)->sum(x, n);
}

float tk_max_f32(const float *x, int64_t n) {
    if (n <= 0) return -INFINITY;
    ensure_init();
    return (g_isa ? g_isa : &tk_isa_generic)->max(x, n);
}
