/* tests/cpu/test_pool_load.c — the thread pool's default spin follows the machine's load
 * (threadpool.c, recheck_spin): read from a file in /proc/loadavg's format that the test
 * writes (TILE_POOL_LOADAVG), it must
 *   - spin at start-up on a quiet machine (the pool's 2 threads fit on the CPUs),
 *   - not re-read the load within a second of the last reading,
 *   - stop at the first reading that leaves no core per thread,
 *   - read again 5 ms and, still loaded, 200 ms later; loaded at both, start again only when
 *     no loaded reading is left in the last 3 s (not at the first quiet one); quiet at either,
 *     forget the loaded ones (a moment's load) and start again at once.
 * About 7 s of sleeping. `test_pool_load busystart`: a busy start-up reading is provisional
 * (busystart_mode). `test_pool_load tail`: the tail poll (tail_mode). Exit 77 (skipped)
 * with fewer than 2 usable CPUs (no default spin then). */
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

/* `tail` mode: the tail poll. With a spin (1 ms here) a worker that finishes its part of a
 * job first keeps polling while the caller runs its own (up to 20 ms), so a job that follows
 * at once finds it awake. Each job below gives the caller 3 ms of work and the worker none:
 * without the tail poll the worker's 1 ms spin runs out during the caller's part and it
 * sleeps once per job (20 sleeps in 20 jobs); with it, it sleeps only before the first. The
 * caller is held on one CPU so that the worker, free to run elsewhere, is not on it (the tail
 * poll stops on the caller's CPU). */
static void slow_caller(void *arg, int64_t b, int64_t e, int w) {
    (void)arg;
    (void)b;
    (void)e;
    if (w != 0) return;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) * 1e6 + (t.tv_nsec - t0.tv_nsec) * 1e-3 < 3000);
}
static int tail_mode(void) {
    setenv("TILE_NUM_THREADS", "2", 1);
    setenv("TILE_POOL_SPIN_US", "1000", 1);
    job(); /* the pool starts: its worker inherits the whole mask */
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) { perror("sched_setaffinity"); return 1; }
    job();
    const int64_t before = tile_pool_sleeps();
    for (int i = 0; i < 20; i++) tile_parallel_for(2, 1, slow_caller, NULL);
    const int64_t sleeps = tile_pool_sleeps() - before;
    printf("%s tail poll: the worker slept %lld times in 20 back-to-back jobs (3 ms of caller work each, at most 3 allowed)\n",
           sleeps <= 3 ? "ok  " : "FAIL", (long long)sleeps);
    return sleeps <= 3 ? 0 : 1;
}

/* `busystart` mode: the pool starts on a busy machine (spin off), and the first job 5 ms or
 * more later reads again; quiet, the start-up reading is forgotten and the spin comes on at
 * once (not after the 3 s window). `busystart stay`: still busy at that re-read and at the
 * next one 200 ms later, the spin stays off, and those readings count for the usual 3 s (one
 * pool per process, hence two runs). */
static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
static int busystart_mode(int stay) {
    load(40);
    const double t0 = now_s();
    job();
    expect(0, "busy at start-up");
    load(stay ? 40 : 1);
    job(); /* at once: the re-read waits 5 ms */
    if (now_s() - t0 < 0.004) expect(0, "a job at once after the busy start-up");
    else printf("--   a job at once after the busy start-up: not checked (%.0f ms after the start)\n", 1e3 * (now_s() - t0));
    nap(0.02);
    job();
    expect(!stay, stay ? "busy again 20 ms later" : "quiet 20 ms later: the start-up reading was provisional");
    if (stay) {
        nap(0.25);
        job();
        expect(0, "busy again 250 ms after that");
        load(1);
        nap(1.1);
        job();
        expect(0, "quiet 1 s after the busy re-read (that one counts for 3 s)");
    }
    unlink(g_path);
    return g_fail;
}

int main(int argc, char **argv) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0 || CPU_COUNT(&set) < 2) {
        printf("skipped: needs 2 usable CPUs\n");
        return 77;
    }
    if (argc > 1 && !strcmp(argv[1], "tail")) return tail_mode();
    snprintf(g_path, sizeof g_path, "/tmp/tile-loadavg-%d", (int)getpid());
    load(1); /* this thread alone */
    setenv("TILE_POOL_LOADAVG", g_path, 1);
    setenv("TILE_NUM_THREADS", "2", 1);
    unsetenv("TILE_POOL_SPIN_US");
    if (argc > 1 && !strcmp(argv[1], "busystart")) return busystart_mode(argc > 2 && !strcmp(argv[2], "stay"));
    job();
    expect(1, "quiet at start-up");
    load(40);
    job(); /* within a second of start-up's readings: not re-read */
    expect(1, "loaded, read again within 1 s");
    nap(1.1);
    job();
    expect(0, "loaded, after 1 s");
    nap(0.02);
    job(); /* the busy reading followed a quiet one: read again 5 ms later */
    expect(0, "still loaded 20 ms later");
    nap(0.25);
    job(); /* and 200 ms after that */
    expect(0, "still loaded 250 ms after that");
    load(1);
    nap(1.1);
    job();
    expect(0, "quiet again, the loaded readings 1 s old");
    nap(1.1);
    job();
    expect(0, "quiet again, the loaded readings 2 s old");
    nap(1.1);
    job();
    expect(1, "quiet, the loaded readings over 3 s old");
    /* a moment's load (another library's threads spinning after its call): forgotten when a
     * re-read is quiet, here the second */
    load(40);
    nap(1.1);
    job();
    expect(0, "loaded for a moment");
    nap(0.02);
    job();
    expect(0, "still loaded 20 ms later");
    load(1);
    nap(0.25);
    job();
    expect(1, "quiet 250 ms after that: the moment's readings forgotten");
    unlink(g_path);
    return g_fail;
}
