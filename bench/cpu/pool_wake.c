/* bench/cpu/pool_wake.c — the thread pool's cost per parallel_for (src/runtime/threadpool.c):
 * wake the workers, hand out one chunk per worker, wait for all of them to check in.
 *
 *     pool_wake [jobs] [work_us] [gap_us]
 *
 * Runs `jobs` calls of tile_parallel_for(size, chunk 1) whose every chunk busy-waits work_us
 * microseconds (0: empty), with gap_us of busy-waiting on the calling thread between calls
 * (a gap longer than the spin window lets the workers fall asleep). Prints the mean wall time
 * per call in microseconds and the overhead over the ideal (work_us + gap_us). Built against
 * two pool sources by bench/cpu/pool_ab.sh for an interleaved A/B. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "runtime/threadpool.h"

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}
static void busy_us(double us) {
    if (us <= 0) return;
    const double t0 = now_us();
    while (now_us() - t0 < us) {}
}
static double g_work;
static void task(void *arg, int64_t b, int64_t e, int worker) {
    (void)arg; (void)b; (void)e; (void)worker;
    busy_us(g_work);
}

int main(int argc, char **argv) {
    const int jobs = argc > 1 ? atoi(argv[1]) : 2000;
    g_work = argc > 2 ? atof(argv[2]) : 0;
    const double gap = argc > 3 ? atof(argv[3]) : 0;
    if (jobs <= 0 || g_work < 0 || gap < 0) {
        fprintf(stderr, "usage: pool_wake [jobs > 0] [work_us >= 0] [gap_us >= 0]\n");
        return 2;
    }
    const int n = tile_pool_size();
    tile_parallel_for(n, 1, task, NULL); /* start the pool */
    const double t0 = now_us();
    for (int j = 0; j < jobs; j++) {
        tile_parallel_for(n, 1, task, NULL);
        busy_us(gap);
    }
    const double per = (now_us() - t0) / jobs;
    printf("threads %d work %.0f us gap %.0f us: %.2f us per call, overhead %.2f us\n", n, g_work, gap, per, per - g_work - gap);
    return 0;
}
