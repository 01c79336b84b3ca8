/* threadpool.c — see threadpool.h.
 *
 * A job is published by bumping a generation word (`gen`) after its fields are written.
 * Workers wait for the word to change: first by polling it (with `pause`) for a bounded time
 * after their last job (spin_us), then asleep on it (a futex on Linux, a condition variable
 * elsewhere). The caller wakes sleepers with one broadcast on the word and only when someone
 * sleeps; a woken worker reads the job without taking any lock, so workers start in parallel
 * instead of one after another on a mutex. Workers take chunks from an atomic counter and
 * every worker checks in once per job (even when no chunk is left): a job is complete when
 * `pending` reaches zero, so the next job cannot be confused with a late worker's view of
 * the previous one. The caller waits for that the same way (poll, then sleep on `pending`).
 * `busy` (a trylock) admits one job at a time; a thread-local flag marks threads inside a
 * job so nested calls run inline.
 *
 * Spinning only pays when each worker has a core of its own: the default spin (TILE_POOL_SPIN_US
 * overrides it; 0 = never spin) is TILE_POOL_SPIN_DEFAULT_US when the pool's threads fit on the CPUs
 * the process may run on next to the other threads runnable on the machine (/proc/loadavg's
 * runnable count: at the pool's start, then re-read at most once a second before a job, see
 * recheck_spin), and 0 otherwise (CI, a shared build machine). With a spin and no more threads
 * than CPUs, a worker that has finished its part of a job also polls while the caller still
 * runs its own part (up to POOL_TAIL_PER_SPIN times the spin and POOL_TAIL_MAX_US, not on the
 * caller's CPU), and the spin counts from the job's end: a job that follows at once finds it
 * awake.
 *
 * Co-location: a worker woken for a job can be queued on the CPU where the caller (or another
 * worker) runs while a CPU of the process sits idle, and stay there for tens of milliseconds.
 * Seen on a 2-core Zen 4 VM: an idle virtual CPU looks preempted to the guest's
 * scheduler, so the wake-up goes to the waker's CPU, and the idle CPU does not pull the task
 * back soon; runs of consecutive 5 ms bf16 GEMMs took 10-11 ms, the second worker doing
 * nothing (TILE_GEMM_PROF: the last worker began 1.6-2.6 ms into a 5 ms step). So every thread
 * publishes the CPU it runs a job on (sched_getcpu); a worker that finds a thread of a lower
 * index on its CPU, while the pool has no more threads than CPUs, takes that CPU out of its
 * affinity mask (which migrates it at once) and puts the mask back, at most every
 * POOL_MOVE_GAP_MS per worker; TILE_POOL_MOVE=0 turns it off. TileLink's shared-memory wait
 * does the same for ranks (tilelink/src/p2p.c). */
#define _GNU_SOURCE
#include "threadpool.h"

#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../core/core.h"

#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

/* The default spin, TILE_POOL_SPIN_DEFAULT_US (threadpool.h), is 1 ms, GNU OpenMP's order:
 * on a 2-core VM, bf16 1024^3 on 2 threads in gemm_bench's interleaved rounds (another
 * library's calls between ours), Tile / oneDNN with an explicit spin of 50 us 0.66-0.74, 200 us
 * 0.93-0.95, 1 ms 0.97-0.98; as the default (the load rule still on) 0.71-0.82 at 50 us,
 * 0.86-0.95 at 1 ms (bench/results/cpu-pool-spin-2026-12-01-s7.md) */
#define POOL_SPIN_MAX_US 100000
#define POOL_MOVE_GAP_MS 5
#define POOL_TAIL_MAX_US 20000      /* the most a worker polls while the caller finishes its part, */
#define POOL_TAIL_PER_SPIN 400      /* ... and at most this many times the spin */
#define POOL_RECHECK_US 1000000     /* how often the default spin re-reads the machine's load */
#define POOL_LOAD_WINDOW_US 3000000 /* the readings that count */
#define POOL_CONFIRM1_US 5000       /* a busy reading after quiet ones is read again this soon, */
#define POOL_CONFIRM2_US 200000     /* ... and, still busy, once more this much later (recheck_spin) */
#define POOL_MAX_CPU_SLOTS 1024

typedef struct pool {
    int nthreads;              /* workers including the caller */
    int spin_us;               /* atomic; poll this long before sleeping (0: sleep at once) */
    int spin_auto;             /* spin_us follows the machine's load (TILE_POOL_SPIN_US unset, threads <= CPUs) */
    int ncpu;                  /* CPUs the process may run on */
    uint64_t load_checked;     /* when spin_auto last read the load (us) */
    int load_provisional;      /* the last reading was busy after quiet ones: the re-read pending, 1 or 2 (recheck_spin) */
    int load_seen[3];          /* the last readings of other runnable threads (-1: none) ... */
    uint64_t load_at[3];       /* ... and when they were taken (us) */
    uint32_t caller_done;      /* atomic; the gen of the last job whose caller finished its own chunks */
    pthread_mutex_t busy;      /* held by the thread running a job */
    uint32_t gen;              /* atomic; the futex workers sleep on */
    int32_t pending;           /* atomic; workers (not the caller) still in the current job */
    int sleepers;              /* atomic; workers asleep (or about to sleep) on gen */
    int caller_sleeps;         /* atomic; the caller is asleep (or about to sleep) on pending */
    int move;                  /* co-location moves on (TILE_POOL_MOVE, and no more threads than CPUs) */
    int *cpu;                  /* atomic [nthreads]: the CPU each thread runs its part of the job on, +1 (0: none) */
    int64_t moves;             /* atomic; co-location moves made (tests, TILE_LOG=debug) */
    /* the job (written before gen changes, read after) */
    tile_pool_task fn;
    void *arg;
    int64_t n, chunk;
    int64_t next;              /* atomic */
} pool;

static pool g_pool;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static _Thread_local int t_in_job;
static int64_t g_pooled, g_inlined; /* atomic */
static int64_t g_worker_sleeps;     /* atomic: times a worker went to sleep (tile_pool_sleeps) */

/* ---- sleeping on a 32-bit word until it no longer holds a value ---- */
#ifdef __linux__
static void word_wait(void *w, uint32_t val) {
    syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}
static void word_wake(void *w) { syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0); }
#else
static pthread_mutex_t g_wmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_wcv = PTHREAD_COND_INITIALIZER;
static void word_wait(void *w, uint32_t val) {
    pthread_mutex_lock(&g_wmu);
    while (__atomic_load_n((uint32_t *)w, __ATOMIC_SEQ_CST) == val) pthread_cond_wait(&g_wcv, &g_wmu);
    pthread_mutex_unlock(&g_wmu);
}
static void word_wake(void *w) {
    (void)w;
    pthread_mutex_lock(&g_wmu);
    pthread_cond_broadcast(&g_wcv);
    pthread_mutex_unlock(&g_wmu);
}
#endif

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static uint64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Poll *w (32 bits) while it equals val, for at most spin_us; returns whether it changed. */
static int spin_while_eq(const void *w, uint32_t val, int spin_us) {
    if (spin_us <= 0) return __atomic_load_n((const uint32_t *)w, __ATOMIC_ACQUIRE) != val;
    uint64_t t0 = 0;
    for (unsigned i = 0;; i++) {
        if (__atomic_load_n((const uint32_t *)w, __ATOMIC_ACQUIRE) != val) return 1;
        cpu_relax();
        if ((i & 63) == 63) { /* read the clock now and then (vDSO, ~20 ns) */
            uint64_t t = now_us();
            if (!t0) t0 = t;
            else if (t - t0 >= (uint64_t)spin_us) return 0;
        }
    }
}

static int affinity_count(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    return 1;
}

/* where the load is read: /proc/loadavg, or for tests TILE_POOL_LOADAVG (a file in its format) */
static const char *g_loadavg = "/proc/loadavg";

/* One reading of /proc/loadavg's runnable count less `own` (this process's threads that are
 * runnable: the caller and workers not asleep); -1 where it cannot be read. */
static int runnable_now(int own) {
    FILE *f = fopen(g_loadavg, "r");
    if (!f) return -1;
    double l1, l5, l15;
    int run = 0, total = 0;
    const int got = fscanf(f, "%lf %lf %lf %d/%d", &l1, &l5, &l15, &run, &total);
    fclose(f);
    if (got != 5) return -1;
    return run - own > 0 ? run - own : 0;
}

/* Threads of the whole machine that are runnable now, besides the calling one: the fourth
 * field of /proc/loadavg (runnable/total) less one, the least of three readings 100 us apart
 * (a shell or kernel thread that runs for a moment is not load); 0 where it cannot be read.
 * A snapshot, unlike the load averages, which also count this process's own recent work. */
static int other_runnable(void) {
    int least = -1;
    for (int i = 0; i < 3; i++) {
        if (i) {
            struct timespec ts = {0, 100000};
            nanosleep(&ts, NULL);
        }
        const int others = runnable_now(1);
        if (others < 0) return 0;
        if (least < 0 || others < least) least = others;
    }
    return least;
}

static int wanted_threads(void) {
    long n = (long)tb_knob_int(TB_K_TILE_NUM_THREADS);
    if (n <= 0) n = affinity_count();
    if (n > 1024) n = 1024;
    return (int)n;
}

/* A worker starting its part of a job: if a thread of a lower index (the caller is 0) is on
 * this CPU for this job, move off it (header comment). prev_move: this worker's last move. */
static void check_colocated(pool *p, int id, uint64_t *prev_move) {
#ifdef __linux__
    const int me = sched_getcpu();
    if (me < 0) return;
    __atomic_store_n(&p->cpu[id], me + 1, __ATOMIC_RELAXED);
    if (!__atomic_load_n(&p->move, __ATOMIC_RELAXED)) return;
    int shared = 0;
    for (int i = 0; i < id && !shared; i++) shared = __atomic_load_n(&p->cpu[i], __ATOMIC_RELAXED) == me + 1;
    if (!shared) return;
    const uint64_t t = now_us();
    if (*prev_move && t - *prev_move < (uint64_t)POOL_MOVE_GAP_MS * 1000u) return;
    *prev_move = t;
    cpu_set_t orig, away;
    if (sched_getaffinity(0, sizeof orig, &orig) != 0 || CPU_COUNT(&orig) < 2 || !CPU_ISSET(me, &orig)) return;
    away = orig;
    CPU_CLR(me, &away);
    if (sched_setaffinity(0, sizeof away, &away) != 0) return;
    if (sched_setaffinity(0, sizeof orig, &orig) != 0) {
        /* keep the narrower mask rather than moving again and again; say so once */
        __atomic_store_n(&p->move, 0, __ATOMIC_RELAXED);
        tile_log(TILE_LOG_WARN, "thread pool: worker %d could not restore its CPU affinity after moving off CPU %d; "
                 "co-location moves are off", id, me);
    }
    __atomic_fetch_add(&p->moves, 1, __ATOMIC_RELAXED);
    const int now_on = sched_getcpu();
    __atomic_store_n(&p->cpu[id], now_on + 1, __ATOMIC_RELAXED); /* higher workers compare with where it is now */
    tile_log(TILE_LOG_DEBUG, "thread pool: worker %d shared CPU %d with a lower worker: moved to CPU %d", id, me, now_on);
#else
    (void)p, (void)id, (void)prev_move;
#endif
}

static void run_chunks(pool *p, int worker) {
    for (;;) {
        int64_t b = __atomic_fetch_add(&p->next, p->chunk, __ATOMIC_RELAXED);
        if (b >= p->n) break;
        int64_t e = b + p->chunk < p->n ? b + p->chunk : p->n;
        p->fn(p->arg, b, e, worker);
    }
}

typedef struct worker_arg {
    pool *p;
    int id;
} worker_arg;

static void *worker_main(void *a) {
    worker_arg *wa = a;
    pool *p = wa->p;
    int id = wa->id;
    free(wa);
    uint32_t seen = 0; /* gen starts at 0 and changes only once every worker checked in */
    uint64_t moved = 0;
    t_in_job = 1;      /* a worker's own nested calls run inline */
    for (;;) {
        const int spin = __atomic_load_n(&p->spin_us, __ATOMIC_RELAXED);
        /* while the caller still runs its part of the job just done, the next job can come the
         * moment it returns: keep polling until then (at most POOL_TAIL_MAX_US), and count the
         * spin from there. Otherwise a worker done first falls asleep during the caller's last
         * 1.3 ms task and is woken for the next job late (2-core VM: 50 us of spin gave a bf16
         * 1024^3 GEMM 279 GFLOP/s in gemm_bench's back-to-back calls, 1 ms 390) */
        if (spin > 0 && p->nthreads <= p->ncpu && seen && __atomic_load_n(&p->caller_done, __ATOMIC_ACQUIRE) != seen) {
            const uint64_t t0 = now_us(), cap = (uint64_t)spin * POOL_TAIL_PER_SPIN < POOL_TAIL_MAX_US
                                                       ? (uint64_t)spin * POOL_TAIL_PER_SPIN : POOL_TAIL_MAX_US;
            for (unsigned i = 0; __atomic_load_n(&p->gen, __ATOMIC_ACQUIRE) == seen &&
                                 __atomic_load_n(&p->caller_done, __ATOMIC_ACQUIRE) != seen; i++) {
                cpu_relax();
                if ((i & 63) != 63) continue;
                if (now_us() - t0 >= cap) break;
#ifdef __linux__
                /* polling on the caller's own CPU would only delay it */
                if (p->cpu && sched_getcpu() + 1 == __atomic_load_n(&p->cpu[0], __ATOMIC_RELAXED)) break;
#endif
            }
        }
        if (!spin_while_eq(&p->gen, seen, spin)) {
            /* announce the sleep before checking gen once more (in the futex): the caller bumps
             * gen before it reads sleepers, so one of the two sees the other (seq_cst) */
            __atomic_add_fetch(&p->sleepers, 1, __ATOMIC_SEQ_CST);
            __atomic_fetch_add(&g_worker_sleeps, 1, __ATOMIC_RELAXED);
            while (__atomic_load_n(&p->gen, __ATOMIC_SEQ_CST) == seen) word_wait(&p->gen, seen);
            __atomic_sub_fetch(&p->sleepers, 1, __ATOMIC_SEQ_CST);
        }
        seen = __atomic_load_n(&p->gen, __ATOMIC_ACQUIRE);
        if (p->cpu) check_colocated(p, id, &moved);
        run_chunks(p, id);
        if (__atomic_sub_fetch(&p->pending, 1, __ATOMIC_SEQ_CST) == 0 &&
            __atomic_load_n(&p->caller_sleeps, __ATOMIC_SEQ_CST))
            word_wake(&p->pending);
    }
    return NULL;
}

static void pool_init(void) {
    pool *p = &g_pool;
    const char *la = tb_knob_str(TB_K_TILE_POOL_LOADAVG);
    if (la && *la) g_loadavg = la;
    p->nthreads = wanted_threads();
    /* spin by default only when every thread can have a core: no more threads than CPUs,
     * and those CPUs not already busy with other processes (runnable threads now) */
    const int ncpu = affinity_count();
    /* TILE_POOL_SPIN_US decides alone where set; the machine's runnable threads (~200 us of
     * readings at start-up) are only read when they can matter */
    long spin;
    int others = -1; /* not read */
    if (tb_knob_is_set(TB_K_TILE_POOL_SPIN_US)) spin = (long)tb_knob_int(TB_K_TILE_POOL_SPIN_US);
    else {
        if (p->nthreads <= ncpu) others = other_runnable();
        spin = others >= 0 && others + p->nthreads <= ncpu ? TILE_POOL_SPIN_DEFAULT_US : 0;
    }
    if (spin < 0) spin = 0;
    if (spin > POOL_SPIN_MAX_US) spin = POOL_SPIN_MAX_US;
    p->spin_us = (int)spin;
    p->ncpu = ncpu;
    p->spin_auto = others >= 0;
    p->load_checked = now_us();
    p->load_seen[0] = others, p->load_seen[1] = p->load_seen[2] = -1;
    p->load_at[0] = p->load_at[1] = p->load_at[2] = p->load_checked;
    if (p->spin_auto && spin == 0) { /* re-read at the first job POOL_CONFIRM1_US from now */
        p->load_provisional = 1;
        p->load_checked -= POOL_RECHECK_US - POOL_CONFIRM1_US;
    }
    p->move = p->nthreads <= ncpu && tb_knob_bool(TB_K_TILE_POOL_MOVE);
    if (p->nthreads > 1 && p->nthreads <= POOL_MAX_CPU_SLOTS) p->cpu = calloc((size_t)p->nthreads, sizeof *p->cpu);
    pthread_mutex_init(&p->busy, NULL);
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setstacksize(&at, (size_t)16 << 20); /* kernel blocks keep tiles on the stack */
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    int started = 1;
    for (int i = 1; i < p->nthreads; i++) {
        worker_arg *wa = malloc(sizeof *wa);
        if (!wa) break;
        wa->p = p;
        wa->id = i;
        pthread_t th;
        if (pthread_create(&th, &at, worker_main, wa) != 0) {
            free(wa);
            break;
        }
        started++;
    }
    pthread_attr_destroy(&at);
    if (started < p->nthreads) {
        tile_log(TILE_LOG_WARN, "thread pool: started %d of %d threads", started, p->nthreads);
        p->nthreads = started;
    }
    if (others >= 0)
        tile_log(TILE_LOG_INFO, "thread pool: %d threads, spin %d us (%d other runnable threads, %d CPUs)", p->nthreads, p->spin_us,
                 others, ncpu);
    else
        tile_log(TILE_LOG_INFO, "thread pool: %d threads, spin %d us (%s, %d CPUs)", p->nthreads, p->spin_us,
                 p->nthreads > ncpu ? "more threads than CPUs" : "TILE_POOL_SPIN_US", ncpu);
}

int tile_pool_size(void) {
    pthread_once(&g_once, pool_init);
    return g_pool.nthreads;
}

int tile_pool_spin_us(void) {
    pthread_once(&g_once, pool_init);
    return __atomic_load_n(&g_pool.spin_us, __ATOMIC_RELAXED);
}

/* The caller, before a job (holding busy): the default spin follows the machine's load,
 * re-read at most every POOL_RECHECK_US: one reading less this process's runnable threads
 * (the caller and the workers not asleep). A reading that leaves no core per thread turns the
 * spin off at once; it comes back on only when every reading of the last POOL_LOAD_WINDOW_US
 * (one to three of them; older ones are forgotten, so sparse jobs go by the latest) left one.
 * A busy reading that follows a quiet one (or none: the start-up's) is provisional: the first
 * job POOL_CONFIRM1_US (5 ms) later reads again, and if still busy the first job
 * POOL_CONFIRM2_US (200 ms) after that; a quiet re-read makes the busy readings forgotten, and
 * load that stays counts as before. Why: another library's idle threads spin for a while
 * after each of its calls (OpenBLAS's ~0.1 s; on the 2-core VM one such thread was "running"
 * in user space at gemm_bench's start-up reading and 5 ms later), and the 3 s window then kept
 * the spin off for gemm_bench's whole bf16 1024^3 run; and short processes (a 1024^3 `tile run
 * --bench` on 16 threads is over in 10 ms: 1 of 18 on the Xeon started busy and took 1.82 ms a
 * GEMM, not 0.52) are over before a 200 ms re-read. */
/* a reading of `others` runnable threads leaves no CPU per pool thread */
static int crowded(const pool *p, int others) { return others + p->nthreads > p->ncpu; }
/* reading i (load_seen / load_at) exists and is inside the window at time t */
static int recent(const pool *p, int i, uint64_t t) { return p->load_seen[i] >= 0 && t - p->load_at[i] <= POOL_LOAD_WINDOW_US; }

static void recheck_spin(pool *p) {
    const uint64_t t = now_us();
    if (t - p->load_checked < POOL_RECHECK_US) return;
    p->load_checked = t;
    const int awake = p->nthreads - 1 - __atomic_load_n(&p->sleepers, __ATOMIC_SEQ_CST);
    const int others = runnable_now(1 + (awake > 0 ? awake : 0));
    if (others < 0) return;
    const int busy = crowded(p, others);
    const int stage = p->load_provisional;
    /* the provisional busy reading is forgotten when this one is quiet, and replaced by this
     * one at the first re-read (which then waits for the second) */
    if (stage && (!busy || stage == 1)) p->load_seen[0] = -1;
    const int prev_busy = recent(p, 0, t) && crowded(p, p->load_seen[0]);
    p->load_provisional = !busy ? 0 : stage == 1 ? 2 : !stage && !prev_busy ? 1 : 0;
    for (int i = 2; i > 0; i--) p->load_seen[i] = p->load_seen[i - 1], p->load_at[i] = p->load_at[i - 1];
    p->load_seen[0] = others, p->load_at[0] = t;
    if (p->load_provisional) /* re-read at the first job this long from now */
        p->load_checked = t - (POOL_RECHECK_US - (p->load_provisional == 1 ? POOL_CONFIRM1_US : POOL_CONFIRM2_US));
    int most = 0; /* the busiest recent reading */
    for (int i = 0; i < 3; i++)
        if (recent(p, i, t) && p->load_seen[i] > most) most = p->load_seen[i];
    const int spin = crowded(p, most) ? 0 : TILE_POOL_SPIN_DEFAULT_US;
    if (spin != __atomic_load_n(&p->spin_us, __ATOMIC_RELAXED)) {
        __atomic_store_n(&p->spin_us, spin, __ATOMIC_RELAXED);
        tile_log(TILE_LOG_DEBUG, "thread pool: spin %d us (up to %d other runnable threads in the last readings, %d CPUs)", spin,
                 most, p->ncpu);
    }
}

static void run_inline(int64_t n, tile_pool_task fn, void *arg) {
    __atomic_fetch_add(&g_inlined, 1, __ATOMIC_RELAXED);
    if (n > 0) fn(arg, 0, n, 0);
}

void tile_parallel_for(int64_t n, int64_t chunk, tile_pool_task fn, void *arg) {
    if (n <= 0) return;
    if (n == 1 || t_in_job) { run_inline(n, fn, arg); return; }
    pthread_once(&g_once, pool_init);
    pool *p = &g_pool;
    if (p->nthreads <= 1 || pthread_mutex_trylock(&p->busy) != 0) { run_inline(n, fn, arg); return; }
    __atomic_fetch_add(&g_pooled, 1, __ATOMIC_RELAXED);
    if (chunk <= 0) {
        chunk = n / ((int64_t)p->nthreads * 4);
        if (chunk < 1) chunk = 1;
    }
    if (chunk > n) chunk = n; /* each thread's last fetch_add of p->next must not wrap past INT64_MAX */
    if (p->spin_auto) recheck_spin(p);
    /* every worker checked in for the previous job (pending 0): nobody reads these now */
    p->fn = fn;
    p->arg = arg;
    p->n = n;
    p->chunk = chunk;
    __atomic_store_n(&p->next, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&p->pending, p->nthreads - 1, __ATOMIC_RELAXED);
#ifdef __linux__
    if (p->cpu) { /* this job's CPUs: the caller's now (0 if it cannot tell), the workers' as they start */
        __atomic_store_n(&p->cpu[0], sched_getcpu() + 1, __ATOMIC_RELAXED);
        for (int i = 1; i < p->nthreads; i++) __atomic_store_n(&p->cpu[i], 0, __ATOMIC_RELAXED);
    }
#endif
    const uint32_t job = __atomic_add_fetch(&p->gen, 1, __ATOMIC_SEQ_CST); /* publishes the job (release) */
    if (__atomic_load_n(&p->sleepers, __ATOMIC_SEQ_CST) > 0) word_wake(&p->gen);
    t_in_job = 1;
    run_chunks(p, 0);
    t_in_job = 0;
    __atomic_store_n(&p->caller_done, job, __ATOMIC_RELEASE);
    /* wait for the workers to check in: poll for at most spin_us in all, then sleep */
    int32_t left;
    uint64_t t0 = 0;
    const int spin = __atomic_load_n(&p->spin_us, __ATOMIC_RELAXED);
    for (unsigned i = 0; spin > 0 && (left = __atomic_load_n(&p->pending, __ATOMIC_ACQUIRE)) > 0; i++) {
        cpu_relax();
        if ((i & 63) == 63) {
            uint64_t t = now_us();
            if (!t0) t0 = t;
            else if (t - t0 >= (uint64_t)spin) break;
        }
    }
    while ((left = __atomic_load_n(&p->pending, __ATOMIC_ACQUIRE)) > 0) {
        /* as for gen: the last worker decrements pending before it reads caller_sleeps */
        __atomic_store_n(&p->caller_sleeps, 1, __ATOMIC_SEQ_CST);
        left = __atomic_load_n(&p->pending, __ATOMIC_SEQ_CST);
        if (left > 0) word_wait(&p->pending, (uint32_t)left);
        __atomic_store_n(&p->caller_sleeps, 0, __ATOMIC_SEQ_CST);
    }
    pthread_mutex_unlock(&p->busy);
}

int64_t tile_pool_moves(void) { return __atomic_load_n(&g_pool.moves, __ATOMIC_RELAXED); }
int64_t tile_pool_sleeps(void) { return __atomic_load_n(&g_worker_sleeps, __ATOMIC_RELAXED); }

typedef struct each_job {
    void (*body)(void *arg, int64_t i);
    void *arg;
} each_job;
static void each_task(void *a, int64_t begin, int64_t end, int worker) {
    const each_job *j = (const each_job *)a;
    (void)worker;
    for (int64_t i = begin; i < end; i++) j->body(j->arg, i);
}
void tile_pool_for_each(void *pool, int64_t n, void (*body)(void *arg, int64_t i), void *arg) {
    (void)pool;
    each_job j = {body, arg};
    tile_parallel_for(n, 1, each_task, &j);
}

void tile_pool_stats(int64_t *pooled, int64_t *inlined) {
    if (pooled) *pooled = __atomic_load_n(&g_pooled, __ATOMIC_RELAXED);
    if (inlined) *inlined = __atomic_load_n(&g_inlined, __ATOMIC_RELAXED);
}
