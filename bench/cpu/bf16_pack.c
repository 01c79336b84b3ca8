/* bench/cpu/bf16_pack.c — the bf16 GEMM's packers alone (tk_pack_bf16_avx512: B into k-pair
 * panels for vdpbf16ps and AMX, A into k-pair panels for vdpbf16ps and 16-pair row chunks for
 * AMX), on T threads packing disjoint panel ranges of one N x N row-major bf16 operand at once,
 * the way the GEMM's packing step splits them; K blocks of KC. Threads are started once and
 * released together (a spinning start and join, so the figure is the packing, not thread
 * creation). Prints the best and median of REPS timed rounds, and GB/s of source bytes.
 *
 *   cc -O2 -I include -I src bench/cpu/bf16_pack.c build/libtile.a -lpthread -ldl -lm -o bf16_pack
 *   ./bf16_pack [--threads T] [--n N] [--kc KC] [--panels P] [--reps R] [--flush MiB]
 *
 * --panels: panels per packer call (the GEMM packs a few per task: 4 for 1024^3 on 2 threads);
 * --flush: before each round every thread reads MiB of other memory, so the sources come from
 * memory as they do inside a GEMM (whose compute step streams other data through the caches),
 * not from the caches a previous round filled;
 * --readall: before each round every thread reads the whole packed output (as the GEMM's compute
 * step reads the shared packed B from every core), so the timed round's stores hit lines that
 * every core holds; --rotate: thread i packs share (i + round) mod T, so each store hits a line
 * another core wrote last. The two tell coherence traffic from memory traffic in the packing
 * step. --ring R: round r packs into the r mod R-th of R output buffers and --readall reads the
 * previous round's (does rotating the GEMM's packing buffers avoid the --readall cost? On the
 * 16-core Xeon, 2026-12-01: no, 200-250 us median with rings of 1 to 4; see
 * bench/results/cpu-session7-2026-12-01.md). Needs AVX-512BW (exits 77 otherwise).
 * Session 6 (2-core Zen 4 VM): in cache, B packed 2 MiB in 80 us on one core before the
 * unmasked steady state of the B packer, 61 us after; inside the GEMM the packing step is
 * 4-6x slower than in cache and its change is within the noise (TILE_GEMM_PROF). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/cpu_gemm.h"
#include "kernels/cpu_gemm_int.h"

#define MAXT 64
static int64_t N = 1024, KC = 512, PANELS = 8, FLUSH = 0, READALL = 0, ROTATE = 0;
static size_t g_dst_words;
static volatile int g_rot;
static int T = 1;
static uint16_t *src;
static uint32_t *dst, *dsts[8];
static int64_t RING = 1;
static uint32_t *volatile g_prev;
static char *flushbuf[MAXT];

typedef struct cfg { const char *name; int a, R, kq, layout; } cfg;
static const cfg CFGS[] = {{"B pairs, R 32 (vdpbf16ps)", 0, 32, 1, TK_BF16_PAIRS},
                           {"B pairs, R 32, kq 16 (AMX)", 0, 32, 16, TK_BF16_PAIRS},
                           {"A pairs, R 12 (vdpbf16ps)", 1, 12, 1, TK_BF16_PAIRS},
                           {"A rows16, R 32 (AMX)", 1, 32, 16, TK_BF16_ROWS16}};
static const cfg *g_cfg;
static volatile int g_go, g_quit;
static int g_done[MAXT];

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}
static int cmpd(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* thread `id` packs its share of the panels, every K block */
static void pack_share(int id) {
    const cfg *c = g_cfg;
    const tk_src s = {src, TILE_DT_BF16, c->a ? N : 1, c->a ? 1 : N};
    const int64_t npan = (N + c->R - 1) / c->R, kpadmax = (KC / 2 + 15) / 16 * 16;
    const int share = (id + g_rot) % T;
    const int64_t pa = npan * share / T, pb = npan * (share + 1) / T;
    for (int64_t k0 = 0; k0 < N; k0 += KC) {
        const int64_t kc = N - k0 < KC ? N - k0 : KC;
        uint32_t *d = dst + (k0 / KC) * npan * c->R * kpadmax;
        for (int64_t p = pa; p < pb; p += PANELS) {
            const int64_t np = pb - p < PANELS ? pb - p : PANELS;
            const int64_t p0 = p * c->R, plen = (p0 + np * c->R > N ? N : p0 + np * c->R) - p0;
            tk_pack_bf16_avx512(&s, p0, plen, k0, kc, c->R, c->kq, c->layout, d + p0 * kpadmax, NULL);
        }
    }
}
static void read_all(void) { /* every packed word, as the compute step's readers do */
    volatile uint32_t sink = 0;
    uint32_t acc = 0;
    const uint32_t *d = g_prev;
    for (size_t i = 0; i < g_dst_words; i += 16) acc += d[i];
    sink = acc;
    (void)sink;
}
static void flush_own(int id) {
    if (READALL) read_all();
    if (!FLUSH) return;
    volatile char sink = 0;
    for (int64_t i = 0; i < FLUSH << 20; i += 64) sink += flushbuf[id][i];
    (void)sink;
}

static void *worker(void *arg) {
    const int id = (int)(intptr_t)arg;
    int seen = 0;
    for (;;) {
        int g;
        while ((g = __atomic_load_n(&g_go, __ATOMIC_ACQUIRE)) == seen)
            if (__atomic_load_n(&g_quit, __ATOMIC_ACQUIRE)) return NULL;
        seen = g;
        if (g < 0) flush_own(id); /* a flush round */
        else pack_share(id);
        __atomic_store_n(&g_done[id], g, __ATOMIC_RELEASE);
    }
}
/* one round on every thread (the caller is thread 0); returns its wall time */
static double round_all(int gen) {
    const double t0 = now();
    __atomic_store_n(&g_go, gen, __ATOMIC_RELEASE);
    if (gen < 0) flush_own(0);
    else pack_share(0);
    for (int i = 1; i < T; i++)
        while (__atomic_load_n(&g_done[i], __ATOMIC_ACQUIRE) != gen) {
        }
    return now() - t0;
}

int main(int argc, char **argv) {
    int reps = 20;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--threads")) T = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--n")) N = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--kc")) KC = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--panels")) PANELS = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--flush")) FLUSH = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--readall")) READALL = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--rotate")) ROTATE = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--ring")) RING = atoll(argv[i + 1]);
        else { fprintf(stderr, "bf16_pack: unknown option %s\n", argv[i]); return 2; }
    }
    if (T < 1 || T > MAXT || N < 32 || KC < 32 || KC % 32 || PANELS < 1 || reps < 1 || reps > 1000 || FLUSH < 0 ||
        RING < 1 || RING > 8) {
        fprintf(stderr, "bf16_pack: --threads 1..%d, --n >= 32, --kc a multiple of 32, --panels >= 1, --reps 1..1000, --ring 1..8\n", MAXT);
        return 2;
    }
    if (!(tk_cpu_features() & TK_CPU_AVX512BW)) {
        printf("bf16_pack: this CPU has no AVX-512BW (the packers measured here need it)\n");
        return 77;
    }
    src = aligned_alloc(4096, (size_t)(N * N * 2));
    g_dst_words = (size_t)((N + 32) * ((N + KC - 1) / KC) * ((KC / 2 + 15) / 16 * 16));
    for (int i = 0; i < RING; i++) dsts[i] = aligned_alloc(4096, g_dst_words * 4);
    dst = g_prev = dsts[0];
    for (int64_t i = 0; i < N * N; i++) src[i] = (uint16_t)(0x3f80 + (i * 7919) % 127);
    for (int i = 0; i < T && FLUSH; i++) {
        flushbuf[i] = malloc((size_t)FLUSH << 20);
        memset(flushbuf[i], 1, (size_t)FLUSH << 20);
    }
    pthread_t th[MAXT];
    for (int i = 1; i < T; i++) pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i);
    printf("bf16_pack: N %lld, KC %lld, %lld panels per call, %d thread%s, %d rounds%s%s%s\n", (long long)N, (long long)KC,
           (long long)PANELS, T, T == 1 ? "" : "s", reps, FLUSH ? ", caches flushed before each" : ", caches warm",
           READALL ? ", every thread reads all the output before each" : "", ROTATE ? ", shares rotate between rounds" : "");
    if (RING > 1) printf("  output buffers: a ring of %lld\n", (long long)RING);
    int gen = 0;
    double *t = malloc(sizeof(double) * (size_t)reps);
    for (size_t c = 0; c < sizeof CFGS / sizeof CFGS[0]; c++) {
        g_cfg = &CFGS[c];
        g_rot = 0;
        for (int i = 0; i < RING; i++) { /* warm-up: first touch of every output buffer */
            dst = dsts[i];
            round_all(++gen);
        }
        g_prev = dsts[RING - 1];
        for (int r = 0; r < reps; r++) {
            if (FLUSH || READALL) round_all(-++gen);
            if (ROTATE) g_rot = r + 1;
            dst = dsts[r % RING];
            t[r] = round_all(++gen);
            g_prev = dst;
        }
        qsort(t, (size_t)reps, sizeof t[0], cmpd);
        printf("  %-28s best %8.1f us  median %8.1f us  %6.2f GB/s (source bytes, best)\n", CFGS[c].name, t[0] * 1e6,
               t[reps / 2] * 1e6, (double)(N * N * 2) / t[0] * 1e-9);
    }
    __atomic_store_n(&g_quit, 1, __ATOMIC_RELEASE);
    for (int i = 1; i < T; i++) pthread_join(th[i], NULL);
    return 0;
}
