/* threadpool.h — the CPU runtime's thread pool.
 *
 * One pool per process, created lazily at the first parallel call, sized to the CPUs the
 * process may run on (sched_getaffinity), or to TILE_NUM_THREADS when set (1 = no threads).
 * The calling thread takes part as worker 0.
 *
 * No oversubscription: the pool runs one parallel_for at a time. A call made while it is
 * busy — from another application thread, or nested inside a running task — runs inline on
 * the calling thread (serially), instead of spawning or queueing more threads.
 *
 * Idle workers poll for the next job for a short while (tile_pool_spin_us) before they
 * sleep; a job wakes the sleepers with one broadcast and they start without a shared lock.
 */
#ifndef TILE_THREADPOOL_H
#define TILE_THREADPOOL_H

#include <stdint.h>

/* A chunk of iterations [begin, end) run by worker `worker` (0 <= worker < tile_pool_size()). */
typedef void (*tile_pool_task)(void *arg, int64_t begin, int64_t end, int worker);

/* Number of workers (including the caller); creates nothing. */
int tile_pool_size(void);

/* Run fn over [0, n) in chunks of `chunk` iterations (0: automatic, about 4 chunks per
 * worker), handed out dynamically; returns when every chunk is done. */
void tile_parallel_for(int64_t n, int64_t chunk, tile_pool_task fn, void *arg);

/* How long an idle worker (and the caller waiting for the workers) polls before it sleeps,
 * in microseconds: TILE_POOL_SPIN_US, else TILE_POOL_SPIN_DEFAULT_US (1 ms) when the pool's
 * threads fit on the CPUs the process may run on next to the other threads runnable on the
 * machine (read at the pool's start and again at most once a second: off at once when
 * loaded, on again after 3 s of quiet readings; a busy reading after quiet ones, or at
 * start-up, is read again at the first job 5 ms later and, still busy, 200 ms after that, and
 * forgotten if a re-read is quiet: another library's threads spinning for a moment after its
 * call), else 0 (sleep at once: oversubscribed or busy machines). With a spin and no more
 * threads than CPUs, a worker done with its part of a job polls until the caller is done too
 * (at most 400 times the spin and 20 ms), and the spin counts from there. */
int tile_pool_spin_us(void);
/* the spin where the pool's threads fit on free CPUs and TILE_POOL_SPIN_US is unset */
#define TILE_POOL_SPIN_DEFAULT_US 1000

/* body(arg, i) for i in [0, n), one iteration per chunk, on the pool: the shape of the GEMM
 * library's tk_parallel_for (pool is unused), for the cpu runtime and the benchmarks. */
void tile_pool_for_each(void *pool, int64_t n, void (*body)(void *arg, int64_t i), void *arg);

/* How many times a worker moved off a CPU it shared with a lower worker or the caller
 * (threadpool.c: co-location moves; TILE_POOL_MOVE=0 turns them off). */
int64_t tile_pool_moves(void);
/* Times a pool worker went to sleep after polling for a job (tests: the tail poll keeps a worker
 * awake across back-to-back jobs whose caller part is the longer one). */
int64_t tile_pool_sleeps(void);

/* For tests: how many parallel_for calls ran on the pool / inline since the start. */
void tile_pool_stats(int64_t *pooled, int64_t *inlined);

#endif
