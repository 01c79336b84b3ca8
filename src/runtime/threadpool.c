/* threadpool.c — see threadpool.h.
 *
 * Workers sleep on a condition variable until the job generation changes, then take chunks
 * from an atomic counter. Every worker checks in once per job (even when no chunk is left),
 * so a job is complete when `pending` reaches zero and the next job cannot be confused with
 * a late worker's view of the previous one. `busy` (a trylock) admits one job at a time; a
 * thread-local flag marks threads inside a job so nested calls run inline. */
#define _GNU_SOURCE
#include "threadpool.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "../core/core.h"

typedef struct pool {
    int nthreads;              /* workers including the caller */
    pthread_mutex_t busy;      /* held by the thread running a job */
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    uint64_t gen;
    int pending;               /* workers (not the caller) still in the current job */
    /* the job */
    tile_pool_task fn;
    void *arg;
    int64_t n, chunk;
    int64_t next;              /* atomic */
} pool;

static pool g_pool;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static _Thread_local int t_in_job;
static int64_t g_pooled, g_inlined; /* atomic */

static int affinity_count(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    return 1;
}

static int wanted_threads(void) {
    long n = tile_env_long("TILE_NUM_THREADS", 0);
    if (n <= 0) n = affinity_count();
    if (n > 1024) n = 1024;
    return (int)n;
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
    uint64_t seen = 0;
    t_in_job = 1; /* a worker's own nested calls run inline */
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->gen == seen) pthread_cond_wait(&p->wake, &p->mu);
        seen = p->gen;
        pthread_mutex_unlock(&p->mu);
        run_chunks(p, id);
        pthread_mutex_lock(&p->mu);
        if (--p->pending == 0) pthread_cond_signal(&p->done);
    }
    return NULL;
}

static void pool_init(void) {
    pool *p = &g_pool;
    p->nthreads = wanted_threads();
    pthread_mutex_init(&p->busy, NULL);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
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
    tile_log(TILE_LOG_INFO, "thread pool: %d threads", p->nthreads);
}

int tile_pool_size(void) {
    pthread_once(&g_once, pool_init);
    return g_pool.nthreads;
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
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->arg = arg;
    p->n = n;
    p->chunk = chunk;
    __atomic_store_n(&p->next, 0, __ATOMIC_RELAXED);
    p->pending = p->nthreads - 1;
    p->gen++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    t_in_job = 1;
    run_chunks(p, 0);
    t_in_job = 0;
    pthread_mutex_lock(&p->mu);
    while (p->pending > 0) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
    pthread_mutex_unlock(&p->busy);
}

void tile_pool_stats(int64_t *pooled, int64_t *inlined) {
    if (pooled) *pooled = __atomic_load_n(&g_pooled, __ATOMIC_RELAXED);
    if (inlined) *inlined = __atomic_load_n(&g_inlined, __ATOMIC_RELAXED);
}
