/* bench/cpu/bf16_uarch.c — per-core throughput of the instructions behind Tile's CPU GEMM
 * kernels, to tell what bounds each kernel: vfmadd231ps zmm (the f32 kernel), vdpbf16ps zmm
 * (the AVX512-BF16 kernel) and AMX tdpbf16ps (the AMX kernel), register-to-register with
 * enough independent accumulators to hide latency, plus tdpbf16ps fed by tile loads from
 * L1-resident buffers (the AMX kernel's inner loop shape). One thread; each figure is the best
 * of 5 timed runs. --threads N: the AMX loops (also fed from two 256 KiB panels in L2) on N
 * threads at once, per-thread rates: a core's AMX under all-core load.
 *
 *     cc -O2 -o bf16_uarch bench/cpu/bf16_uarch.c -lpthread && ./bf16_uarch [--threads N]
 *
 * Prints one line per instruction: G instructions/s, GFLOP/s (fma 32, vdpbf16ps 64, tdpbf16ps
 * 16384 flops each) and the ratio to vfmadd231ps. Instructions the CPU (per /proc/cpuinfo)
 * lacks are reported as such, never executed. */
#define _GNU_SOURCE
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int has_flag(const char *flag) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return 0;
    char line[8192];
    int found = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) != 0) continue;
        char want[64];
        snprintf(want, sizeof want, " %s", flag);
        char *p = line;
        while ((p = strstr(p, want)) != NULL) {
            char e = p[strlen(want)];
            if (e == ' ' || e == '\n' || e == 0) {
                found = 1;
                break;
            }
            p++;
        }
        break;
    }
    fclose(f);
    return found;
}

static volatile float g_sink;

#define R12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define R24(X) R12(X) X(12) X(13) X(14) X(15) X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23)

/* n iterations of 24 independent FMAs */
__attribute__((target("avx512f,fma"), noinline)) static void run_fma(long n) {
#define D(i) __m512 c##i = _mm512_set1_ps((float)i);
    R24(D)
#undef D
    const __m512 a = _mm512_set1_ps(1.0f), b = _mm512_set1_ps(1e-8f);
    for (long k = 0; k < n; k++) {
#define F(i) c##i = _mm512_fmadd_ps(a, b, c##i);
        R24(F)
#undef F
        __asm__ volatile("" ::: "memory");
    }
    __m512 s = c0;
#define S(i) s = _mm512_add_ps(s, c##i);
    R24(S)
#undef S
    g_sink = _mm512_reduce_add_ps(s);
}

/* n iterations of 24 independent vdpbf16ps */
__attribute__((target("avx512f,avx512bf16"), noinline)) static void run_dpbf16(long n) {
#define D(i) __m512 c##i = _mm512_set1_ps((float)i);
    R24(D)
#undef D
    const __m512bh a = (__m512bh)_mm512_set1_epi32(0x3F803F80), b = (__m512bh)_mm512_set1_epi32(0x32003200);
    for (long k = 0; k < n; k++) {
#define F(i) c##i = _mm512_dpbf16_ps(c##i, a, b);
        R24(F)
#undef F
        __asm__ volatile("" ::: "memory");
    }
    __m512 s = c0;
#define S(i) s = _mm512_add_ps(s, c##i);
    R24(S)
#undef S
    g_sink = _mm512_reduce_add_ps(s);
}

typedef struct tilecfg {
    uint8_t palette, start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tilecfg;

static unsigned char g_buf[4][1024] __attribute__((aligned(64)));
static float g_cbuf[4][256] __attribute__((aligned(64)));

__attribute__((target("amx-tile,amx-bf16"), noinline)) static void amx_config(void) {
    tilecfg cfg __attribute__((aligned(64)));
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int t = 0; t < 8; t++) cfg.colsb[t] = 64, cfg.rows[t] = 16;
    _tile_loadconfig(&cfg);
}

/* n iterations of 4 tdpbf16ps into 4 independent C tiles, A and B tiles loaded once */
__attribute__((target("amx-tile,amx-bf16"), noinline)) static void run_amx(long n) {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    _tile_loadd(4, g_buf[0], 64);
    _tile_loadd(5, g_buf[1], 64);
    _tile_loadd(6, g_buf[2], 64);
    _tile_loadd(7, g_buf[3], 64);
    for (long k = 0; k < n; k++) {
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    _tile_stored(0, g_cbuf[0], 64);
    _tile_stored(1, g_cbuf[1], 64);
    _tile_stored(2, g_cbuf[2], 64);
    _tile_stored(3, g_cbuf[3], 64);
    g_sink = g_cbuf[0][0] + g_cbuf[3][255];
}

/* the same with the 4 A/B tile loads per iteration from L1 (the kernel's inner loop) */
__attribute__((target("amx-tile,amx-bf16"), noinline)) static void run_amx_ld(long n) {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    for (long k = 0; k < n; k++) {
        _tile_loadd(4, g_buf[0], 64);
        _tile_loadd(6, g_buf[2], 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_loadd(7, g_buf[3], 64);
        _tile_dpbf16ps(1, 4, 7);
        _tile_loadd(5, g_buf[1], 64);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
    }
    _tile_stored(0, g_cbuf[0], 64);
    g_sink = g_cbuf[0][0];
}

/* the kernel's shape fed from L2: per iteration the A and B tiles of the next 2 KiB of two
 * 256 KiB panels (packed A and B as the AMX kernel reads them), cycling */
#define L2_PANEL (256 * 1024)
static __thread unsigned char *t_l2;
__attribute__((target("amx-tile,amx-bf16"), noinline)) static void run_amx_l2(long n) {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    const unsigned char *a = t_l2, *b = t_l2 + L2_PANEL;
    long off = 0;
    for (long k = 0; k < n; k++) {
        _tile_loadd(4, a + off, 64);
        _tile_loadd(6, b + off, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_loadd(7, b + off + 1024, 64);
        _tile_dpbf16ps(1, 4, 7);
        _tile_loadd(5, a + off + 1024, 64);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
        off += 2048;
        if (off == L2_PANEL) off = 0;
    }
    _tile_stored(0, g_cbuf[0], 64);
    g_sink = g_cbuf[0][0];
}

static double best_of(void (*fn)(long), long n) {
    fn(n / 10); /* warm up (frequency, AMX power-up) */
    double best = 1e30;
    for (int r = 0; r < 5; r++) {
        double t0 = now();
        fn(n);
        double t = now() - t0;
        if (t < best) best = t;
    }
    return best;
}

/* --threads N: the three AMX loops on N threads at once (each its own tile configuration and
 * L2 panels, started together), per-thread GFLOP/s: what a core's AMX gives when every core of
 * the GEMM runs it (frequency and power under all-core AMX load) */
typedef struct mt_arg {
    pthread_barrier_t *bar;
    double gf[3];
} mt_arg;
static void *mt_main(void *p) {
    mt_arg *m = (mt_arg *)p;
    amx_config();
    t_l2 = aligned_alloc(64, 2 * L2_PANEL);
    memset(t_l2, 0, 2 * L2_PANEL);
    void (*fns[3])(long) = {run_amx, run_amx_ld, run_amx_l2};
    const long na = 1000000;
    for (int f = 0; f < 3; f++) {
        pthread_barrier_wait(m->bar);
        const double t = best_of(fns[f], na);
        m->gf[f] = 4.0 * na / t * 16384 / 1e9;
    }
    free(t_l2);
    return NULL;
}
static int cmp_dbl(const void *x, const void *y) {
    const double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}
static int run_threads(int nt) {
    unsigned long bits = 0;
    if (!has_flag("amx_bf16") || syscall(SYS_arch_prctl, 0x1023, 18) != 0 || syscall(SYS_arch_prctl, 0x1022, &bits) != 0 ||
        !(bits & (1ul << 18))) {
        printf("--threads: no AMX here (or the OS refused its tile state)\n");
        return 0;
    }
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)nt);
    mt_arg *m = calloc((size_t)nt, sizeof *m);
    pthread_t *th = calloc((size_t)nt, sizeof *th);
    for (int i = 0; i < nt; i++) {
        m[i].bar = &bar;
        pthread_create(&th[i], NULL, mt_main, &m[i]);
    }
    for (int i = 0; i < nt; i++) pthread_join(th[i], NULL);
    static const char *names[3] = {"registers only", "4 tile loads per 4, from L1", "4 tile loads per 4, from 2 x 256 KiB (L2)"};
    double *v = calloc((size_t)nt, sizeof *v);
    for (int f = 0; f < 3; f++) {
        double sum = 0;
        for (int i = 0; i < nt; i++) v[i] = m[i].gf[f], sum += v[i];
        qsort(v, (size_t)nt, sizeof *v, cmp_dbl);
        printf("tdpbf16ps on %d threads at once, %-42s: per thread min %7.1f median %7.1f max %7.1f GFLOP/s, total %8.1f\n", nt,
               names[f], v[0], v[nt / 2], v[nt - 1], sum);
    }
    free(v);
    free(m);
    free(th);
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 2 && strcmp(argv[1], "--threads") == 0) return run_threads(atoi(argv[2]) > 0 ? atoi(argv[2]) : 1);
    const long n = 20000000; /* iterations; 24 (or 4) instructions each */
    if (!has_flag("avx512f")) {
        printf("no avx512f on this CPU: nothing to measure\n");
        return 0;
    }
    double t = best_of(run_fma, n);
    const double fma_gi = 24.0 * n / t / 1e9, fma_gf = fma_gi * 32;
    printf("vfmadd231ps zmm : %6.2f G instr/s  %7.1f GFLOP/s  1.00x\n", fma_gi, fma_gf);
    if (has_flag("avx512_bf16")) {
        t = best_of(run_dpbf16, n);
        const double gi = 24.0 * n / t / 1e9;
        printf("vdpbf16ps zmm   : %6.2f G instr/s  %7.1f GFLOP/s  %.2fx\n", gi, gi * 64, gi * 64 / fma_gf);
    } else {
        printf("vdpbf16ps zmm   : not on this CPU\n");
    }
    if (has_flag("amx_bf16") && has_flag("amx_tile")) {
        unsigned long bits = 0;
        if (syscall(SYS_arch_prctl, 0x1023, 18) != 0 || syscall(SYS_arch_prctl, 0x1022, &bits) != 0 || !(bits & (1ul << 18))) {
            printf("tdpbf16ps       : the OS refused the AMX tile state\n");
            return 0;
        }
        amx_config();
        const long na = n / 20;
        t = best_of(run_amx, na);
        double gi = 4.0 * na / t / 1e9;
        printf("tdpbf16ps       : %6.3f G instr/s  %7.1f GFLOP/s  %.2fx (registers only)\n", gi, gi * 16384, gi * 16384 / fma_gf);
        t = best_of(run_amx_ld, na);
        gi = 4.0 * na / t / 1e9;
        printf("tdpbf16ps+loads : %6.3f G instr/s  %7.1f GFLOP/s  %.2fx (4 tile loads per 4, from L1)\n", gi, gi * 16384,
               gi * 16384 / fma_gf);
    } else {
        printf("tdpbf16ps       : not on this CPU\n");
    }
    return 0;
}
