/* cost.c — the α–β(–γ) cost model: parameters per transport (measured by a ping-pong at
 * creation, or read from TLINK_COST_FILE / the cache), predictions per algorithm, choice. */
#include "tl_internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *tname[TLINK_TRANSPORT_COUNT] = {"self", "shm", "tcp"};

static int parse_cost_file(const char *path, double *alpha, double *beta, int *have, double *gamma, double *sync) {
    FILE *f = fopen(path, "re");
    if (!f) return -1;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        char name[32];
        double a, b;
        if (line[0] == '#') continue;
        /* topology files (docs/tilelink-topology.md): "cost shm alpha_us=2 beta_gbps=4",
         * "reduce gbps=4" (key value or key=value) */
        if (sscanf(line, " cost %31s alpha_us%*[ =]%lf beta_gbps%*[ =]%lf", name, &a, &b) == 3) {
            for (int t = 0; t < TLINK_TRANSPORT_COUNT; t++)
                if (!strcmp(name, tname[t]) && a >= 0 && b > 0) { alpha[t] = a * 1e-6; beta[t] = 1e-9 / b; have[t] = 1; }
            continue;
        }
        if (!strncmp(line + strspn(line, " \t"), "sync ", 5)) {
            /* "sync all_us=A step_us=S [all_ns_per_kib=X step_ns_per_kib=Y]" (oversubscribed hosts) */
            double x = 0, y = 0;
            int k = sscanf(line, " sync all_us%*[ =]%lf step_us%*[ =]%lf all_ns_per_kib%*[ =]%lf step_ns_per_kib%*[ =]%lf",
                           &a, &b, &x, &y);
            if (sync && k >= 2 && a >= 0 && b >= 0 && x >= 0 && y >= 0) {
                sync[0] = a * 1e-6;
                sync[1] = b * 1e-6;
                sync[2] = x * 1e-9 / 1024;
                sync[3] = y * 1e-9 / 1024;
            }
            continue;
        }
        if (sscanf(line, " reduce gbps%*[ =]%lf", &a) == 1) {
            if (a > 0) *gamma = 1e-9 / a;
            continue;
        }
        if (sscanf(line, "gamma %lf", &a) == 1) { *gamma = a; continue; }
        if (sscanf(line, "%31s %lf %lf", name, &a, &b) != 3) continue;
        for (int t = 0; t < TLINK_TRANSPORT_COUNT; t++)
            if (!strcmp(name, tname[t]) && a >= 0 && b >= 0) { alpha[t] = a; beta[t] = b; have[t] = 1; }
    }
    fclose(f);
    return 0;
}

static void cache_path(char *out, size_t n) {
    char id[160];
    tlink_host_identity(id, sizeof id);
    for (char *p = id; *p; p++)
        if (*p == '/' || *p == ' ') *p = '_';
    char dir[320];
    if (tb_cache_dir(dir, sizeof dir)) snprintf(out, n, "%s/tlink-cost-%s.txt", dir, id);
    else out[0] = 0;
}

static void write_cache(const char *path, const double *alpha, const double *beta, const int *have) {
    if (!path[0]) return;
    char dir[512];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = 0;
        tb_mkdir_p(dir);
    }
    char tmp[560];
    snprintf(tmp, sizeof tmp, "%s.%d.tmp", path, (int)getpid());
    FILE *f = fopen(tmp, "we");
    if (!f) return;
    fprintf(f, "# tlink alpha (s) beta (s/byte), measured by ping-pong\n");
    for (int t = 1; t < TLINK_TRANSPORT_COUNT; t++)
        if (have[t]) fprintf(f, "%s %.6g %.6g\n", tname[t], alpha[t], beta[t]);
    fclose(f);
    rename(tmp, path);
}

/* One-way cost by ping-pong: alpha from the fastest of 30 8-byte round trips (the machine may
 * be busy, the model wants the link's cost), beta from 3 round trips of 1 MiB. With `cached`
 * (parameters read from the cache file, *alpha and *beta hold them) only the cheap 8-byte
 * phase runs, as a check: the cache is keyed by the host, not by the link (network namespaces
 * on one machine, whose inode numbers are reused, can leave a slow link's figures behind), so
 * when the measured alpha is not within a factor of 3 of the cached one the initiator asks
 * its partner for the full measurement. */
static tlink_status pingpong(tlink_comm *c, int peer, int initiator, double *alpha, double *beta, int cached,
                             int *remeasured) {
    const size_t big = 1 << 20;
    char *buf = malloc(big);
    if (!buf) return tl_err(c, TLINK_ERR_NO_MEMORY, "out of memory");
    memset(buf, 0, big);
    tlink_status st = TLINK_OK;
    double t_small = 1e9, t_big = 1e9;
    int ns = 30, nb = 3;
    *remeasured = 0;
    for (int phase = 0; phase < 2 && !st; phase++) {
        size_t len = phase ? big : 8;
        int iters = phase ? nb : ns;
        if (phase == 1 && cached) {
            /* the initiator decides whether the cached figures still describe this link */
            char full = 0;
            if (initiator) {
                full = !(t_small <= 3 * *alpha && 3 * t_small >= *alpha);
                st = tl_send(c, peer, &full, 1);
            } else {
                st = tl_recv(c, peer, &full, 1);
            }
            if (st || !full) break;
            *remeasured = 1;
        }
        for (int i = -1; i < iters && !st; i++) {
            double t0 = tl_now();
            if (initiator) {
                st = tl_send(c, peer, buf, len);
                if (!st) st = tl_recv(c, peer, buf, len);
            } else {
                st = tl_recv(c, peer, buf, len);
                if (!st) st = tl_send(c, peer, buf, len);
            }
            double t = (tl_now() - t0) / 2.0;
            if (i < 0) continue;
            if (phase) { if (t < t_big) t_big = t; }
            else if (t < t_small) t_small = t;
        }
    }
    free(buf);
    if (st) return st;
    if (cached && !*remeasured) {
        *alpha = t_small; /* fresher; beta stays the cached one */
        return TLINK_OK;
    }
    *alpha = t_small;
    *beta = t_big > t_small ? (t_big - t_small) / (double)big : 1e-11;
    return TLINK_OK;
}

/* Ranks outnumbering the host's cores (c->ranks_per_core > 1): a rank that waits for another
 * one that is not running waits for the scheduler to hand it a core, not for a cache line, and
 * the ping-pong above (two ranks, the others asleep) does not see that. Measured here with
 * every rank of the host taking part, each as the mean per operation over a round of 16
 * (5 rounds):
 *   [0] an all-rank synchronisation alone (the direct collectives' arrival flags),
 *   [1] a ring-shift step of 8 bytes alone (what ring, trees, recursive doubling pay per step),
 *   [2] W bytes of copying per rank (all ranks at once, one synchronisation at the end),
 *   [3] W bytes of copying, then an all-rank synchronisation, [4] then a ring-shift step.
 * A synchronisation after work costs more than one alone: the ranks of a core finish their
 * work one after another, and a rank that waits gives its core away (to a core partner that
 * still works, or to another job for a time slice). all = [0], step = [1], the fastest round
 * (a descheduling by another job does not decide them); the excess per byte, ([3] - [2] - [0])
 * / W and ([4] - [2] - [1]) / W within a round, the median of the rounds (a difference of two
 * noisy means: one bad round must not decide it), all-rank at least ring-step, prices that in
 * proportion to the work before a synchronisation (direct waits for every rank after whole
 * segments; a ring step only for its neighbour after a block). Only on one host with shared
 * memory (the direct flags are per host); costs 5-30 ms on 4 ranks of 2 cores. */
static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* A rank that cannot allocate its buffers must not leave the others waiting in the first
 * synchronisation until the timeout: the ranks first agree (the smallest of "my rank if my
 * allocation failed, else size") and all skip the measurement together when one failed;
 * *failed_rank is then that rank (the lowest of them), and the caller falls back to the
 * estimates. TLINK_FAULT_SYNC_OOM=R makes rank R's allocation fail (tests). */
static tlink_status measure_sync(tlink_comm *c, double out[4], int *failed_rank) {
    enum { rounds = 5 };
    const int iters = 16;
    const size_t W = 256 << 10;
    int n = c->size, right = (c->rank + 1) % n, left = (c->rank - 1 + n) % n;
    double best[2] = {1e9, 1e9}, xa[rounds], xs[rounds];
    uint64_t x = 0, y = 0;
    char *src = malloc(W), *dst = malloc(W);
    if (tb_knob_int(TB_K_TLINK_FAULT_SYNC_OOM) == c->rank) { free(src); free(dst); src = dst = NULL; }
    int32_t bad = src && dst ? n : c->rank;
    tlink_status st = tl_direct_min_i32(c, &bad); /* also the warm-up: everyone is here */
    *failed_rank = st || bad >= n ? -1 : (int)bad;
    if (st || bad < n) {
        free(src);
        free(dst);
        return st;
    }
    memset(src, 1, W);
    memset(dst, 2, W);
    for (int r = 0; r < rounds && !st; r++) {
        double t[6];
        t[0] = tl_now();
        for (int i = 0; i < iters && !st; i++) st = tl_direct_barrier(c);
        t[1] = tl_now();
        for (int i = 0; i < iters && !st; i++) st = tl_xchg(c, right, &x, 8, left, &y, 8, NULL, 1);
        t[2] = tl_now();
        /* the copies feed back into their source so that none can be left out */
        for (int i = 0; i < iters; i++) { memcpy(dst, src, W); src[i] ^= dst[W - 1 - i]; }
        if (!st) st = tl_direct_barrier(c);
        t[3] = tl_now();
        for (int i = 0; i < iters && !st; i++) {
            memcpy(dst, src, W);
            src[i] ^= dst[W - 1 - i];
            st = tl_direct_barrier(c);
        }
        t[4] = tl_now();
        for (int i = 0; i < iters && !st; i++) {
            memcpy(dst, src, W);
            src[i] ^= dst[W - 1 - i];
            st = tl_xchg(c, right, &x, 8, left, &y, 8, NULL, 1);
        }
        t[5] = tl_now();
        if (!st) st = tl_direct_barrier(c); /* the next round starts together */
        double m[5];
        for (int k = 0; k < 5; k++) m[k] = (t[k + 1] - t[k]) / iters;
        best[0] = TL_MIN(best[0], m[0]);
        best[1] = TL_MIN(best[1], m[1]);
        xa[r] = (m[3] - m[2] - m[0]) / (double)W;
        xs[r] = (m[4] - m[2] - m[1]) / (double)W;
    }
    free(src);
    free(dst);
    if (st) return st;
    qsort(xa, rounds, sizeof xa[0], cmp_double);
    qsort(xs, rounds, sizeof xs[0], cmp_double);
    out[0] = best[0];
    out[1] = best[1];
    out[3] = TL_MAX(0.0, xs[rounds / 2]);
    /* waiting for every rank after the same work is never cheaper than waiting for one */
    out[2] = TL_MAX(out[3], xa[rounds / 2]);
    return TLINK_OK;
}

/* Estimates where nothing was measured (topology predictions, TLINK_COST_MEASURE=0) for k
 * ranks per core, fitted to measure_sync's figures on a 2-core VM at 1.5, 2 and 4 ranks per
 * core (docs/tilelink.md): a synchronisation costs its contention-free price (half of alpha
 * for the flags, alpha for a step) plus about 3 us per extra rank per core (handing the core
 * over: a sched_yield or a futex wake and the cache lines that follow); after work, the excess
 * grows by (k - 1) x 0.17 ns (all-rank) and 0.11 ns (ring step) per byte of that work. */
void tl_cost_sync_estimate(tlink_comm *c, double alpha) {
    double k = c->ranks_per_core;
    if (!(k > 1)) {
        c->sync_all = c->sync_step = c->sync_all_pb = c->sync_step_pb = 0;
        return;
    }
    c->sync_all = 0.5 * alpha + (k - 1) * 3e-6;
    c->sync_step = alpha + (k - 1) * 3e-6;
    c->sync_all_pb = (k - 1) * 0.17e-9;
    c->sync_step_pb = (k - 1) * 0.11e-9;
}

tlink_status tl_cost_init(tlink_comm *c) {
    c->alpha[TLINK_TRANSPORT_SELF] = 0;
    c->beta[TLINK_TRANSPORT_SELF] = 1.0 / 20e9;
    c->alpha[TLINK_TRANSPORT_SHM] = 2e-6;
    c->beta[TLINK_TRANSPORT_SHM] = 1.0 / 4e9;
    c->alpha[TLINK_TRANSPORT_TCP] = 30e-6;
    c->beta[TLINK_TRANSPORT_TCP] = 1.0 / 1e9;
    c->gamma = 1.0 / 4e9;
    if (c->size == 1) return TLINK_OK;
    int have[TLINK_TRANSPORT_COUNT] = {0};
    double alpha[TLINK_TRANSPORT_COUNT], beta[TLINK_TRANSPORT_COUNT], gamma = c->gamma;
    double sync[4] = {-1, -1, 0, 0}; /* TLINK_COST_FILE's sync line; -1: not given */
    int msync = 0;             /* measure sync costs (rank 0 decides: every rank must take part) */
    memcpy(alpha, c->alpha, sizeof alpha);
    memcpy(beta, c->beta, sizeof beta);
    char key[256], plan[64];
    int shm_partner = -1, tcp_partner = -1, cached[TLINK_TRANSPORT_COUNT] = {0};
    char cpath[512] = "";
    if (c->rank == 0) {
        const char *file = tb_knob_str(TB_K_TLINK_COST_FILE);
        cache_path(cpath, sizeof cpath);
        if (file) {
            if (parse_cost_file(file, alpha, beta, have, &gamma, sync))
                tl_log(TL_LOG_WARN, "TLINK_COST_FILE=%s: %s", file, strerror(errno));
        } else if (cpath[0]) {
            struct stat sb;
            double max_age = tb_knob_float(TB_K_TLINK_COST_CACHE_MAX_AGE);
            if (stat(cpath, &sb) == 0 && difftime(time(NULL), sb.st_mtime) < max_age) {
                parse_cost_file(cpath, alpha, beta, have, &gamma, NULL);
                for (int t = 0; t < TLINK_TRANSPORT_COUNT; t++) cached[t] = have[t];
            }
        }
        int measure = tb_knob_bool(TB_K_TLINK_COST_MEASURE);
        /* cached figures are checked by a short ping-pong; TLINK_COST_FILE's are taken as given */
        for (int r = 1; r < c->size && measure; r++) {
            int t = c->peers[r].transport;
            if (t == TLINK_TRANSPORT_SHM && (!have[t] || cached[t]) && shm_partner < 0) shm_partner = r;
            if (t == TLINK_TRANSPORT_TCP && (!have[t] || cached[t]) && tcp_partner < 0) tcp_partner = r;
        }
        msync = c->ranks_per_core > 1 && c->nhosts == 1 && c->dslots && sync[0] < 0 &&
                tb_knob_bool(TB_K_TLINK_COST_MEASURE);
        snprintf(plan, sizeof plan, "%d %d %d %d %d", shm_partner, tcp_partner, shm_partner >= 0 && cached[TLINK_TRANSPORT_SHM],
                 tcp_partner >= 0 && cached[TLINK_TRANSPORT_TCP], msync);
        snprintf(key, sizeof key, "%s/costplan", c->prefix);
        if (tlink_store_set(c->store, key, plan, strlen(plan) + 1))
            return tl_err(c, TLINK_ERR_BOOTSTRAP, "bootstrap: %s", tlink_store_last_error(c->store));
    } else {
        void *v = NULL;
        snprintf(key, sizeof key, "%s/costplan", c->prefix);
        tlink_status st = tlink_store_get(c->store, key, &v, NULL, c->timeout);
        if (st) return tl_err(c, st, "bootstrap: waiting for rank 0's cost plan: %s", tlink_store_last_error(c->store));
        if (sscanf(v, "%d %d %d %d %d", &shm_partner, &tcp_partner, &cached[TLINK_TRANSPORT_SHM],
                   &cached[TLINK_TRANSPORT_TCP], &msync) != 5)
            shm_partner = tcp_partner = -1, msync = 0;
        free(v);
    }
    int partners[2] = {shm_partner, tcp_partner};
    for (int k = 0; k < 2; k++) {
        int p = partners[k];
        if (p < 0) continue;
        int t = k == 0 ? TLINK_TRANSPORT_SHM : TLINK_TRANSPORT_TCP;
        if (c->rank == 0 || c->rank == p) {
            int re = 0;
            tlink_status st = pingpong(c, c->rank == 0 ? p : 0, c->rank == 0, &alpha[t], &beta[t], cached[t], &re);
            if (st) return st;
            if (re) tl_log(TL_LOG_INFO, "cost cache: %s figures did not match this link; measured afresh", tname[t]);
            have[t] = !cached[t] || re ? 2 : 1;
        }
    }
    int oom_rank = -1;
    if (msync) {
        tlink_status st = measure_sync(c, sync, &oom_rank);
        if (st) return st;
        if (oom_rank >= 0) {
            if (c->rank == 0)
                tl_log(TL_LOG_WARN, "cost model: rank %d could not allocate 512 KiB to measure the synchronisation "
                       "costs (out of memory); every rank uses the estimates instead", oom_rank);
            msync = 0;
            sync[0] = sync[1] = -1;
        }
    }
    snprintf(key, sizeof key, "%s/cost", c->prefix);
    if (c->rank == 0) {
        if ((have[TLINK_TRANSPORT_SHM] == 2 || have[TLINK_TRANSPORT_TCP] == 2) && !tb_knob_str(TB_K_TLINK_COST_FILE))
            write_cache(cpath, alpha, beta, have);
        char val[256];
        snprintf(val, sizeof val, "%a %a %a %a %a %a %a %a %a", alpha[1], beta[1], alpha[2], beta[2], gamma, sync[0],
                 sync[1], sync[2], sync[3]);
        if (tlink_store_set(c->store, key, val, strlen(val) + 1))
            return tl_err(c, TLINK_ERR_BOOTSTRAP, "bootstrap: %s", tlink_store_last_error(c->store));
    }
    void *v = NULL;
    tlink_status st = tlink_store_get(c->store, key, &v, NULL, c->timeout);
    if (st) return tl_err(c, st, "bootstrap: waiting for rank 0's cost model: %s", tlink_store_last_error(c->store));
    if (sscanf(v, "%la %la %la %la %la %la %la %la %la", &c->alpha[1], &c->beta[1], &c->alpha[2], &c->beta[2],
               &c->gamma, &sync[0], &sync[1], &sync[2], &sync[3]) != 9)
        tl_log(TL_LOG_WARN, "bad cost model from rank 0: '%s'", (char *)v);
    free(v);
    const char *how = "measured";
    if (c->ranks_per_core > 1 && sync[0] >= 0 && sync[1] >= 0) {
        c->sync_all = sync[0];
        c->sync_step = sync[1];
        c->sync_all_pb = sync[2];
        c->sync_step_pb = sync[3];
        if (!msync) how = "TLINK_COST_FILE";
        else {
            /* the per-byte excesses are differences of noisy means (0 to 5x from run to run
             * on a busy machine); the fitted estimates are their floor, so that one quiet
             * moment at start-up does not bring back direct for large messages (measured
             * 1.4-2x slower than ring there whatever the start-up figures said) */
            tlink_comm e = *c;
            tl_cost_sync_estimate(&e, c->alpha[TLINK_TRANSPORT_SHM]);
            c->sync_all_pb = TL_MAX(c->sync_all_pb, e.sync_all_pb);
            c->sync_step_pb = TL_MAX(c->sync_step_pb, e.sync_step_pb);
            how = "measured; per-byte terms at least the estimates";
        }
    } else {
        tl_cost_sync_estimate(c, c->alpha[TLINK_TRANSPORT_SHM]);
        how = oom_rank >= 0 ? "estimated: the measurement was skipped, a rank was out of memory" : "estimated";
    }
    tl_log(TL_LOG_INFO, "cost model: shm alpha %.2f us, %.2f GB/s; tcp alpha %.2f us, %.2f GB/s", c->alpha[1] * 1e6,
           1e-9 / c->beta[1], c->alpha[2] * 1e6, 1e-9 / c->beta[2]);
    if (c->ranks_per_core > 1)
        tl_log(TL_LOG_INFO, "cost model: %d ranks on %d usable cores (%.2f per core): all-rank sync %.2f us + %.2f ns/KiB "
               "of work before it, ring step %.2f us + %.2f ns/KiB (%s); copy and reduce terms x%.2f", c->local_size,
               c->local_cores, c->ranks_per_core, c->sync_all * 1e6, c->sync_all_pb * 1e9 * 1024, c->sync_step * 1e6,
               c->sync_step_pb * 1e9 * 1024, how, c->ranks_per_core);
    return TLINK_OK;
}

tlink_status tlink_comm_get_cost(const tlink_comm *c, tlink_transport t, double *a, double *b) {
    if (!c || (unsigned)t >= TLINK_TRANSPORT_COUNT) return TLINK_ERR_INVALID_ARG;
    if (a) *a = c->alpha[t];
    if (b) *b = c->beta[t];
    return TLINK_OK;
}

tlink_status tlink_comm_set_cost(tlink_comm *c, tlink_transport t, double a, double b) {
    if (!c || (unsigned)t >= TLINK_TRANSPORT_COUNT || !(a >= 0) || !(b >= 0)) return TLINK_ERR_INVALID_ARG;
    c->alpha[t] = a;
    c->beta[t] = b;
    memset(c->choice, 0, sizeof c->choice);
    return TLINK_OK;
}

/* ---------- predictions ---------- */
static int is_pow2(int n) { return n > 0 && (n & (n - 1)) == 0; }
static int clog2(int n) { int l = 0; while ((1 << l) < n) l++; return l; }
static int flog2(int n) { int l = 0; while ((2 << l) <= n) l++; return l; }

int tl_algo_valid(const tlink_comm *c, tlink_coll coll, tlink_algo a) {
    switch (coll) {
    case TLINK_COLL_ALLREDUCE:
        return a == TLINK_ALGO_RING || a == TLINK_ALGO_RECURSIVE_DOUBLING || a == TLINK_ALGO_RABENSEIFNER ||
               a == TLINK_ALGO_BINOMIAL_TREE || a == TLINK_ALGO_DOUBLE_BINARY_TREE || a == TLINK_ALGO_HIERARCHICAL ||
               (a == TLINK_ALGO_DIRECT && c->dslots && c->nhosts == 1);
    case TLINK_COLL_REDUCE:
    case TLINK_COLL_BROADCAST:
        return a == TLINK_ALGO_BINOMIAL_TREE || a == TLINK_ALGO_RING || a == TLINK_ALGO_DOUBLE_BINARY_TREE;
    case TLINK_COLL_ALLGATHER:
        return a == TLINK_ALGO_RING || (a == TLINK_ALGO_RECURSIVE_DOUBLING && is_pow2(c->size));
    case TLINK_COLL_REDUCE_SCATTER:
        return a == TLINK_ALGO_RING || a == TLINK_ALGO_PAIRWISE || (a == TLINK_ALGO_RECURSIVE_DOUBLING && is_pow2(c->size));
    case TLINK_COLL_ALLTOALL:
    case TLINK_COLL_ALLTOALLV: return a == TLINK_ALGO_PAIRWISE;
    case TLINK_COLL_BARRIER: return a == TLINK_ALGO_DISSEMINATION || (a == TLINK_ALGO_DIRECT && c->dslots && c->nhosts == 1);
    default: return 0;
    }
}

double tl_predict(const tlink_comm *c, tlink_coll coll, tlink_algo algo, size_t bytes) {
    if (!tl_algo_valid(c, coll, algo)) return -1;
    int n = c->size;
    if (n <= 1) return 0;
    int flat = (c->nhosts > 1 || c->force_tcp) ? TLINK_TRANSPORT_TCP : TLINK_TRANSPORT_SHM;
    double a = c->alpha[flat], b = c->beta[flat], g = c->gamma, B = (double)bytes, N = n;
    /* Oversubscribed (more ranks than usable cores on a host; flat shared memory): every rank's
     * copying and reducing shares a core with k - 1 others (beta and gamma x k), a step that
     * waits for a peer costs at least a measured ring step (sync_step) and an all-rank
     * synchronisation a measured sync_all, each growing with the work every rank did before
     * it (the *_pb terms, per byte); see measure_sync. The all-reduce algorithms charge each
     * step for the bytes it moved (xs), the other collectives only the floor. */
    double k = flat == TLINK_TRANSPORT_SHM && c->ranks_per_core > 1 ? c->ranks_per_core : 1;
    double xs = 0, xa = 0; /* seconds per byte of work before a step / an all-rank sync */
    if (k > 1) {
        b *= k;
        g *= k;
        a = TL_MAX(a, c->sync_step);
        xs = c->sync_step_pb;
        xa = c->sync_all_pb;
    }
    int p2 = 1 << flog2(n), fold = p2 != n;
    double L = clog2(n), foldc = fold ? 2 * (a + B * b + B * xs) + B * g : 0;
    double chunk = 64.0 * 1024, nch = ceil(B / chunk);
    if (nch < 1) nch = 1;
    double t = 0;
    switch (coll) {
    case TLINK_COLL_ALLREDUCE:
        switch (algo) {
        case TLINK_ALGO_RING: t = 2 * (N - 1) * (a + B / N * (b + xs)) + (N - 1) / N * B * g; break;
        case TLINK_ALGO_RECURSIVE_DOUBLING: t = flog2(n) * (a + B * (b + xs) + B * g + B / 8e9) + foldc; break;
        case TLINK_ALGO_RABENSEIFNER:
            /* oversubscribed, its byte terms x1.25: on 4 ranks of 2 cores it measured 1.14-1.64x
             * ring's time at 256 KiB - 16 MiB in interleaved runs (bench/results/
             * link-allreduce-2026-11-30-s5-16core.md), where the terms above price the two alike
             * (the same bytes, fewer steps); the cause (which partners share a core in the
             * halving steps of B/2, B/4) is not modelled */
            t = 2 * flog2(n) * a + (k > 1 ? 1.25 : 1) * (2 * (p2 - 1.0) / p2 * B * (b + xs) + (p2 - 1.0) / p2 * B * g) + foldc;
            break;
        case TLINK_ALGO_BINOMIAL_TREE: t = 2 * L * (a + B * (b + xs)) + L * B * g; break;
        case TLINK_ALGO_DOUBLE_BINARY_TREE: {
            double depth = clog2(n) + 1, half = nch / 2 < 1 ? 1 : nch / 2, cb = B < chunk ? B : chunk;
            t = 2 * (depth + half - 1) * (a + cb * (b + xs)) * 1.0 + B * g;
            /* the formula above is the pipeline's critical path; but each rank is one thread
             * and its own work is a floor whatever the core count: interior in one tree and a
             * leaf in the other, a rank sends and receives 2B in all (ring: 2(n-1)/n B) and
             * reduces B. Oversubscribed: measured on 4 ranks of 2 cores, 256 KiB - 4 MiB,
             * 1.6-2.6x ring's time (bench/results/link-allreduce-2026-11-30-s4.md); with a
             * core per rank: 8 ranks of 16 cores, 8-16 MiB, the critical path predicted
             * 2.9 ms at 8 MiB against 6.4 ms measured, below Open MPI (0.90-0.94x;
             * link-allreduce-2026-11-30-s5-16core.md) */
            t = TL_MAX(t, 2 * (depth + half - 1) * a + 2 * B * (b + xs) + B * g);
            break;
        }
        case TLINK_ALGO_DIRECT:
            if (bytes <= TL_DIRECT_SLOT) {
                /* one synchronisation among the host's ranks: a flag store and poll, about half
                 * of alpha (the ping-pong's message also moves the ring's tail, head and
                 * doorbell lines); one copy in, one out (beta prices two copies);
                 * oversubscribed: the measured all-rank synchronisation after a copy of B */
                t = (k > 1 ? c->sync_all + B * xa : 0.5 * a) + B * b + (N - 1) * B * g;
            } else {
                /* per segment three synchronisations; each byte copied in and out once (beta,
                 * from a ping-pong, prices two copies) plus reading the blocks to reduce;
                 * oversubscribed: three all-rank synchronisations, after copying the segment in,
                 * reducing a block from every slot (a segment's bytes) and copying it out */
                double nseg = ceil(B / (double)(c->dseg ? c->dseg : 1));
                t = nseg * 3 * (k > 1 ? c->sync_all : a) + 3 * B * xa + 1.5 * B * b + (N - 1) / N * B * g;
            }
            break;
        case TLINK_ALGO_HIERARCHICAL: {
            int lmax = 1;
            for (int h = 0; h < c->nhosts; h++) lmax = TL_MAX(lmax, c->host_nranks[h]);
            double as = c->alpha[TLINK_TRANSPORT_SHM], bs = c->beta[TLINK_TRANSPORT_SHM];
            double at = c->alpha[TLINK_TRANSPORT_TCP], bt = c->beta[TLINK_TRANSPORT_TCP], H = c->nhosts;
            if (c->force_tcp) { as = at; bs = bt; }
            double ll = clog2(lmax);
            if (c->cross && B >= 65536) {
                /* striped: local reduce-scatter + allgather rings, slices across hosts */
                double Lr = lmax;
                t = 2 * (Lr - 1) * (as + B / Lr * bs) + (Lr - 1) / Lr * B * g;
                if (H > 1) t += 2 * (H - 1) * (at + B / (H * Lr) * bt) + B / Lr * g;
            } else {
                t = ll * (as + B * bs + B * g) + ll * (as + B * bs);
                if (H > 1) t += 2 * (H - 1) * (at + B / H * bt) + B * g;
            }
            break;
        }
        default: return -1;
        }
        break;
    case TLINK_COLL_REDUCE:
    case TLINK_COLL_BROADCAST: {
        double gg = coll == TLINK_COLL_REDUCE ? g : 0;
        switch (algo) {
        case TLINK_ALGO_BINOMIAL_TREE: t = L * (a + B * b + B * gg); break;
        case TLINK_ALGO_RING:
            if (coll == TLINK_COLL_BROADCAST) t = (N - 1 + nch - 1) * (a + TL_MIN(B, chunk) * b);
            else t = (N - 1) * (a + B / N * (b + gg)) + a + B * b;
            break;
        case TLINK_ALGO_DOUBLE_BINARY_TREE: {
            double half = nch / 2 < 1 ? 1 : nch / 2;
            t = (clog2(n) + half) * (a + TL_MIN(B, chunk) * b) + B * gg;
            break;
        }
        default: return -1;
        }
        break;
    }
    case TLINK_COLL_ALLGATHER:
        t = algo == TLINK_ALGO_RING ? (N - 1) * (a + B / N * b) : L * a + (N - 1) / N * B * b;
        break;
    case TLINK_COLL_REDUCE_SCATTER:
        if (algo == TLINK_ALGO_RECURSIVE_DOUBLING) t = L * a + (N - 1) / N * B * (b + g) + B / 8e9;
        else t = (N - 1) * (a + B / N * (b + g)) + (algo == TLINK_ALGO_RING ? B / 8e9 : 0);
        break;
    case TLINK_COLL_ALLTOALL:
    case TLINK_COLL_ALLTOALLV: t = (N - 1) * (a + B / N * b); break;
    case TLINK_COLL_BARRIER: t = algo == TLINK_ALGO_DIRECT ? (k > 1 ? c->sync_all : 2 * a) : L * a; break;
    default: return -1;
    }
    return t * 1e6;
}

static const tlink_algo candidates[] = {TLINK_ALGO_RING, TLINK_ALGO_RECURSIVE_DOUBLING, TLINK_ALGO_RABENSEIFNER,
                                        TLINK_ALGO_BINOMIAL_TREE, TLINK_ALGO_DOUBLE_BINARY_TREE,
                                        TLINK_ALGO_HIERARCHICAL, TLINK_ALGO_PAIRWISE, TLINK_ALGO_DISSEMINATION,
                                        TLINK_ALGO_DIRECT};

static tlink_algo choose(const tlink_comm *c, tlink_coll coll, size_t bytes, double *pred, char *why, size_t whylen) {
    tlink_algo f = c->forced[coll];
    if (f != TLINK_ALGO_AUTO && tl_algo_valid(c, coll, f) && tl_predict(c, coll, f, bytes) >= 0) {
        *pred = tl_predict(c, coll, f, bytes);
        if (why) snprintf(why, whylen, "forced");
        return f;
    }
    tlink_algo best = TLINK_ALGO_AUTO;
    double bt = 0;
    int off = 0;
    if (why) why[0] = 0;
    for (size_t i = 0; i < sizeof candidates / sizeof candidates[0]; i++) {
        tlink_algo a = candidates[i];
        if (a == TLINK_ALGO_HIERARCHICAL && (c->nhosts < 2 || c->nhosts == c->size)) continue;
        double t = tl_predict(c, coll, a, bytes);
        if (t < 0) continue;
        if (why && off < (int)whylen - 48)
            off += snprintf(why + off, whylen - (size_t)off, "%s%s %.1f us", off ? ", " : "", tlink_algo_name(a), t);
        if (best == TLINK_ALGO_AUTO || t < bt) { best = a; bt = t; }
    }
    if (best == TLINK_ALGO_AUTO) best = coll == TLINK_COLL_BARRIER ? TLINK_ALGO_DISSEMINATION : TLINK_ALGO_RING;
    *pred = bt;
    return best;
}

tlink_algo tl_choose(tlink_comm *c, tlink_coll coll, size_t bytes, double *pred_us, const char *dtname) {
    char why[400];
    int info = tl_log_level() >= TL_LOG_INFO;
    if (!info && c->choice[coll].valid && c->choice[coll].bytes == bytes && c->choice[coll].forced == c->forced[coll]) {
        *pred_us = c->choice[coll].pred;
        return c->choice[coll].algo;
    }
    tlink_algo a = choose(c, coll, bytes, pred_us, info ? why : NULL, sizeof why);
    if (info)
        tl_log(TL_LOG_INFO, "%s %zu B %s: chose %s (predicted %.1f us; %s)", tlink_coll_name(coll), bytes, dtname,
               tlink_algo_name(a), *pred_us, why);
    c->choice[coll].bytes = bytes;
    c->choice[coll].algo = a;
    c->choice[coll].forced = c->forced[coll];
    c->choice[coll].pred = *pred_us;
    c->choice[coll].valid = 1;
    return a;
}

double tlink_predict_us(const tlink_comm *c, tlink_coll coll, tlink_algo algo, size_t bytes, tlink_algo *chosen) {
    if (!c || (unsigned)coll >= TLINK_COLL_COUNT || (unsigned)algo >= TLINK_ALGO_COUNT) return -1;
    if (algo == TLINK_ALGO_AUTO) {
        double p;
        tlink_algo a = choose(c, coll, bytes, &p, NULL, 0);
        if (chosen) *chosen = a;
        return p;
    }
    if (chosen) *chosen = algo;
    return tl_predict(c, coll, algo, bytes);
}
