/* tests/cpu/test_pool_load.c — the thread pool's default spin follows the machine's load
 * (threadpool.c, recheck_spin): read from a file in /proc/loadavg's format that the test
 * writes (TILE_POOL_LOADAVG), it must
 *   - spin at start-up on a quiet machine (the pool's 2 threads fit on the CPUs),
 *   - not re-read the load within a second of the last reading,
 *   - stop at the first reading that leaves no core per thread,
 *   - start again only when no loaded reading is left in the last 3 s (not at the first quiet one).
 * About 6 s of sleeping. Exit 77 (skipped) with fewer than 2 usable CPUs (no default spin then). */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/threadpool.h"

static char g_path[64];
static int g_fail;

static void load(int runnable) { /* the machine as the pool will read it next */
    FILE *f = fopen(g_path, "w");
    if (!f) { perror(g_path); exit(1); }
    fprintf(f, "0.00 0.00 0.00 %d/300 12345\n", runnable);
    fclose(f);
}
static void nap(double s) {
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    nanosleep(&ts, NULL);
}
static void body(void *arg, int64_t b, int64_t e, int w) {
    (void)w;
    volatile double *x = arg;
    for (int64_t i = b; i < e; i++) x[i % 64] += 1.0;
}
static void job(void) {
    static volatile double x[64];
    tile_parallel_for(1000, 10, body, (void *)x);
}
static void expect(int spinning, const char *when) {
    const int s = tile_pool_spin_us();
    if ((s > 0) != spinning) {
        printf("FAIL %s: spin %d us, expected %s\n", when, s, spinning ? "a spin" : "none");
        g_fail = 1;
    } else {
        printf("ok   %s: spin %d us\n", when, s);
    }
}

int main(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0 || CPU_COUNT(&set) < 2) {
        printf("skipped: needs 2 usable CPUs\n");
        return 77;
    }
    snprintf(g_path, sizeof g_path, "/tmp/tile-loadavg-%d", (int)getpid());
    load(1); /* this thread alone */
    setenv("TILE_POOL_LOADAVG", g_path, 1);
    setenv("TILE_NUM_THREADS", "2", 1);
    unsetenv("TILE_POOL_SPIN_US");
    job();
    expect(1, "quiet at start-up");
    load(40);
    job(); /* within a second of start-up's readings: not re-read */
    expect(1, "loaded, read again within 1 s");
    nap(1.1);
    job();
    expect(0, "loaded, after 1 s");
    load(1);
    nap(1.1);
    job();
    expect(0, "quiet again, the loaded reading 1 s old");
    nap(1.1);
    job();
    expect(0, "quiet again, the loaded reading 2 s old");
    nap(1.1);
    job();
    expect(1, "quiet, the loaded reading over 3 s old");
    unlink(g_path);
    return g_fail;
}
