/* bench/cpu/pool_idle.c — GEMMs on Tile's thread pool after idle pauses: each round sleeps
 * PAUSE ms, then runs CALLS bf16 1024^3 GEMMs (tk_cpu_gemm over tile_parallel_for, as the cpu
 * runtime runs them); the first call of a round wakes the pool, the others are timed. Prints
 * how many timed calls took more than SLOW times the fastest and their mean, and the pool's
 * co-location moves (threadpool.c). Run it with TILE_POOL_MOVE=0 and =1 to compare.
 *
 *   cc -O2 -I include -I src bench/cpu/pool_idle.c build/libtile.a -lpthread -ldl -lm -o pool_idle
 *   TILE_POOL_MOVE=0 ./pool_idle [PAUSE_MS=150] [ROUNDS=25] [CALLS=2] [SLOW=1.5]
 *
 * Session 6, 2-core Zen 4 VM, 2 threads, 150 ms pauses, 25 rounds of 2 calls: 13-20 of 25
 * timed calls slow without the moves (mean 8.8-10.4 ms: the woken worker queued behind the
 * caller on its CPU), 0-5 with them (mean 6.8-7.4 ms); back to back (no pause) no moves and
 * no difference. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/cpu_gemm.h"
#include "runtime/threadpool.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}
static uint16_t bf16_of(double x) { /* round to nearest even */
    float f = (float)x;
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

int main(int argc, char **argv) {
    const int pause_ms = argc > 1 ? atoi(argv[1]) : 150, rounds = argc > 2 ? atoi(argv[2]) : 25, calls = argc > 3 ? atoi(argv[3]) : 2;
    const double slow = argc > 4 ? atof(argv[4]) : 1.5;
    if (pause_ms < 0 || pause_ms > 10000 || rounds < 1 || calls < 2 || slow <= 1.0) {
        fprintf(stderr, "usage: pool_idle [PAUSE_MS 0..10000] [ROUNDS >= 1] [CALLS >= 2] [SLOW > 1]\n");
        return 2;
    }
    const int64_t n = 1024;
    uint16_t *a = malloc((size_t)(n * n * 2)), *b = malloc((size_t)(n * n * 2));
    float *c = malloc((size_t)(n * n * 4));
    double *t = malloc(sizeof(double) * (size_t)(rounds * calls));
    if (!a || !b || !c || !t) return 1;
    uint64_t r = 88172645463325252ull;
    for (int64_t i = 0; i < n * n; i++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        a[i] = bf16_of((double)(r >> 11) * 0x1p-53 * 2 - 1);
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;
        b[i] = bf16_of((double)(r >> 11) * 0x1p-53 * 2 - 1);
    }
    tk_gemm g = {.M = n, .N = n, .K = n, .a_dtype = TILE_DT_BF16, .b_dtype = TILE_DT_BF16, .c_dtype = TILE_DT_F32,
                 .A = a, .a_rs = n, .a_cs = 1, .B = b, .b_rs = n, .b_cs = 1, .C = c, .c_rs = n, .c_cs = 1,
                 .nthreads = tile_pool_size()};
    int nt = 0;
    double best = 1e30;
    for (int rd = 0; rd < rounds; rd++) {
        struct timespec ps = {pause_ms / 1000, (long)(pause_ms % 1000) * 1000000L};
        nanosleep(&ps, NULL);
        for (int i = 0; i < calls; i++) {
            const double t0 = now();
            if (tk_cpu_gemm(&g, tile_pool_for_each, NULL) != TK_GEMM_OK) {
                fprintf(stderr, "pool_idle: %s\n", tk_cpu_gemm_error());
                return 1;
            }
            const double dt = now() - t0;
            if (i) t[nt++] = dt, best = dt < best ? dt : best;
        }
    }
    int nslow = 0;
    double sum = 0;
    for (int i = 0; i < nt; i++) nslow += t[i] > slow * best, sum += t[i];
    printf("pool of %d (spin %d us, TILE_POOL_MOVE=%s), %s kernel: pause %d ms; %d of %d timed calls over %.1fx the fastest "
           "(%.2f ms), mean %.2f ms; co-location moves %lld\n",
           tile_pool_size(), tile_pool_spin_us(), getenv("TILE_POOL_MOVE") ? getenv("TILE_POOL_MOVE") : "unset",
           tk_cpu_bf16_kernel(), pause_ms, nslow, nt, slow, best * 1e3, sum / nt * 1e3, (long long)tile_pool_moves());
    return 0;
}
