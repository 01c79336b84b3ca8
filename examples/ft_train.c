/* ft_train.c — data-parallel training that survives `kill -9` of a rank.
 *
 *   tile launch -n 4 --max-restarts 1 -- ft_train      # the failed rank is restarted: rejoin
 *   tile launch -n 4 -- ft_train                       # no restarts: the survivors shrink
 *
 * A small MLP (32 inputs, 32 hidden ReLU units, 4 classes) trained by SGD on a synthetic,
 * deterministic data set (Gaussian clusters, 4000 training and 1000 test samples): each rank
 * computes the gradient of its own minibatch, the gradients are averaged with
 * tlink_allreduce, every rank applies the same update. After every step the model is saved
 * in the buddy checkpoint (tlink_ckpt_save). On TLINK_ERR_PEER_FAILED (or REVOKED):
 *   - under `tile launch --max-restarts K` (TLINK_MAX_RESTARTS > 0) the survivors call
 *     tlink_comm_rejoin and the launcher's replacement process (TLINK_RESTART_COUNT > 0)
 *     joins as the same rank; with the same ranks and data order the run ends bit-identical
 *     to one without failure (the checksum printed at the end shows it);
 *   - otherwise the survivors tlink_comm_shrink and continue with fewer ranks;
 * then tlink_ckpt_restore gives everyone the newest state all can agree on, and training
 * resumes. A timeline (wall-clock seconds since the epoch, so that an outside killer can be
 * matched) is printed: detected, shrink/rejoin, restore, resume, and every completed step
 * with --verbose.
 *
 * On disk: --ckpt-file PATH makes rank 0 write the model there every --ckpt-every steps (10)
 * with tlink_ckpt_write_file (atomic, checksummed), and a job that finds the file at start
 * resumes from it (the whole-job restart that in-place recovery is compared with in
 * bench/link/ft_recovery.sh).
 *
 * Options: --steps N (300), --step-ms MS (sleep per step to stand in for a longer forward/
 * backward pass, 10), --pid-dir DIR (write DIR/rank<R>.pid and DIR/all.<pid>, for a killer
 * script),
 * --verbose (a line per completed step). */
#define _GNU_SOURCE
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tlink.h"

#define NIN 32
#define NHID 32
#define NOUT 4
#define NTRAIN 4000
#define NTEST 1000
#define BATCH 32
#define NPARAM (NIN * NHID + NHID + NHID * NOUT + NOUT)

typedef struct model {
    int64_t step;
    float p[NPARAM];
} model;

static double wall(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- data: deterministic Gaussian clusters (xorshift + Box-Muller) ---- */
static uint64_t rng_state = 88172645463325252ULL;
static double urand(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return ((rng_state >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}
static double nrand(void) { return sqrt(-2 * log(urand())) * cos(6.283185307179586 * urand()); }

static float xtr[NTRAIN][NIN], xte[NTEST][NIN];
static int ytr[NTRAIN], yte[NTEST];

static void make_data(void) {
    float center[NOUT][NIN];
    for (int k = 0; k < NOUT; k++)
        for (int j = 0; j < NIN; j++) center[k][j] = (float)(0.45 * nrand());
    for (int i = 0; i < NTRAIN + NTEST; i++) {
        int k = (int)(urand() * NOUT) % NOUT;
        float *x = i < NTRAIN ? xtr[i] : xte[i - NTRAIN];
        for (int j = 0; j < NIN; j++) x[j] = center[k][j] + (float)nrand();
        if (i < NTRAIN) ytr[i] = k;
        else yte[i - NTRAIN] = k;
    }
}

/* ---- the model ---- */
#define W1(p) (p)
#define B1(p) ((p) + NIN * NHID)
#define W2(p) ((p) + NIN * NHID + NHID)
#define B2(p) ((p) + NIN * NHID + NHID + NHID * NOUT)

static void init_model(model *m) {
    uint64_t save = rng_state;
    rng_state = 0x9E3779B97F4A7C15ULL;
    for (int i = 0; i < NPARAM; i++) m->p[i] = (float)(0.15 * nrand());
    for (int i = 0; i < NHID; i++) B1(m->p)[i] = 0;
    for (int i = 0; i < NOUT; i++) B2(m->p)[i] = 0;
    rng_state = save;
    m->step = 0;
}

/* forward one sample; h[NHID], out[NOUT] softmax probabilities */
static void forward(const float *p, const float *x, float *h, float *out) {
    for (int j = 0; j < NHID; j++) {
        float s = B1(p)[j];
        for (int i = 0; i < NIN; i++) s += W1(p)[i * NHID + j] * x[i];
        h[j] = s > 0 ? s : 0;
    }
    float mx = -1e30f;
    for (int k = 0; k < NOUT; k++) {
        float s = B2(p)[k];
        for (int j = 0; j < NHID; j++) s += W2(p)[j * NOUT + k] * h[j];
        out[k] = s;
        if (s > mx) mx = s;
    }
    float z = 0;
    for (int k = 0; k < NOUT; k++) { out[k] = expf(out[k] - mx); z += out[k]; }
    for (int k = 0; k < NOUT; k++) out[k] /= z;
}

/* gradient of the mean cross-entropy over this rank's minibatch of `step` */
static void gradient(const float *p, int64_t step, int rank, int size, float *g) {
    memset(g, 0, sizeof(float) * NPARAM);
    float h[NHID], o[NOUT], dh[NHID];
    for (int b = 0; b < BATCH; b++) {
        /* the global batch of a step: size * BATCH consecutive samples (mod NTRAIN) */
        int64_t idx = ((step * size + rank) * BATCH + b) % NTRAIN;
        const float *x = xtr[idx];
        forward(p, x, h, o);
        o[ytr[idx]] -= 1; /* dL/dlogits */
        for (int j = 0; j < NHID; j++) dh[j] = 0;
        for (int k = 0; k < NOUT; k++) {
            B2(g)[k] += o[k];
            for (int j = 0; j < NHID; j++) {
                W2(g)[j * NOUT + k] += o[k] * h[j];
                dh[j] += o[k] * W2(p)[j * NOUT + k];
            }
        }
        for (int j = 0; j < NHID; j++) {
            if (h[j] <= 0) continue;
            B1(g)[j] += dh[j];
            for (int i = 0; i < NIN; i++) W1(g)[i * NHID + j] += dh[j] * x[i];
        }
    }
    for (int i = 0; i < NPARAM; i++) g[i] /= BATCH;
}

static double accuracy(const float *p) {
    int good = 0;
    float h[NHID], o[NOUT];
    for (int i = 0; i < NTEST; i++) {
        forward(p, xte[i], h, o);
        int best = 0;
        for (int k = 1; k < NOUT; k++) if (o[k] > o[best]) best = k;
        good += best == yte[i];
    }
    return 100.0 * good / NTEST;
}

static uint64_t checksum(const void *p, size_t n) {
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) { h ^= b[i]; h *= 1099511628211ULL; }
    return h;
}

static int g_rank0 = -1; /* rank at start, for the timeline */

/* one summation order before and after a recovery (the cost model could pick another
 * algorithm on a new communicator): with rejoin the run is then bit-identical to one
 * without failure. TLINK_ALGO in the environment wins. */
static void fix_algo(tlink_comm *c) {
    if (!getenv("TLINK_ALGO")) tlink_comm_set_algo(c, TLINK_COLL_ALLREDUCE, TLINK_ALGO_RING);
}
static void tl(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void tl(const char *fmt, ...) {
    char buf[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    printf("ft %.3f rank %d: %s\n", wall(), g_rank0, buf);
    fflush(stdout);
}

int main(int argc, char **argv) {
    int64_t steps = 300;
    int step_ms = 10, verbose = 0;
    const char *pid_dir = NULL, *ckpt_file = NULL;
    int ckpt_every = 10;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--steps") && i + 1 < argc) steps = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--step-ms") && i + 1 < argc) step_ms = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--pid-dir") && i + 1 < argc) pid_dir = argv[++i];
        else if (!strcmp(argv[i], "--ckpt-file") && i + 1 < argc) ckpt_file = argv[++i];
        else if (!strcmp(argv[i], "--ckpt-every") && i + 1 < argc) ckpt_every = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--verbose")) verbose = 1;
        else {
            fprintf(stderr, "usage: ft_train [--steps N] [--step-ms MS] [--pid-dir DIR] [--ckpt-file PATH] [--ckpt-every N] [--verbose]\n");
            return 2;
        }
    }
    if (steps < 1 || step_ms < 0 || ckpt_every < 1) { fprintf(stderr, "ft_train: bad --steps or --step-ms\n"); return 2; }
    const char *mr = getenv("TLINK_MAX_RESTARTS"), *rc = getenv("TLINK_RESTART_COUNT");
    int elastic = mr && atoi(mr) > 0, restarted = rc && atoi(rc) > 0;
    make_data();
    tlink_comm *comm;
    if (tlink_comm_init_env(&comm)) { fprintf(stderr, "init: %s\n", tlink_last_error(NULL)); return 1; }
    g_rank0 = tlink_comm_rank(comm);
    fix_algo(comm);
    if (pid_dir) {
        char path[4096];
        snprintf(path, sizeof path, "%s/rank%d.pid", pid_dir, g_rank0);
        FILE *f = fopen(path, "w");
        if (f) { fprintf(f, "%d\n", (int)getpid()); fclose(f); }
        snprintf(path, sizeof path, "%s/all.%d", pid_dir, (int)getpid()); /* every process ever */
        f = fopen(path, "w");
        if (f) fclose(f);
    }
    tlink_ckpt *ck;
    tlink_ckpt_create(&ck);
    static model m;
    static float g[NPARAM];
    init_model(&m);
    if (restarted) {
        /* a replacement: the survivors have rejoined; fetch our state from the buddy copy */
        size_t nb = 0;
        int64_t s = -1;
        tlink_status st = tlink_ckpt_restore(ck, comm, &m, sizeof m, &nb, &s);
        if (st) { fprintf(stderr, "restore: %s\n", tlink_last_error(comm)); return 1; }
        if (s < 0) init_model(&m);
        tl("replacement joined; restored step %lld", (long long)m.step);
    }
    int failures = 0;
    if (ckpt_file && !restarted && access(ckpt_file, F_OK) == 0) {
        void *buf = NULL;
        size_t nb = 0;
        int64_t s = 0;
        tlink_status st = tlink_ckpt_read_file(ckpt_file, &s, &buf, &nb);
        if (st || nb != sizeof m) {
            fprintf(stderr, "ft_train: %s\n", st ? tlink_last_error(NULL) : "checkpoint file of the wrong size");
            return 1;
        }
        memcpy(&m, buf, sizeof m);
        tlink_free(buf);
        tl("loaded step %lld from %s", (long long)m.step, ckpt_file);
        failures = 1; /* report the first step done */
    }
    const float lr = 0.1f;
    while (m.step < steps) {
        int rank = tlink_comm_rank(comm), size = tlink_comm_size(comm);
        gradient(m.p, m.step, rank, size, g);
        if (step_ms) usleep((useconds_t)step_ms * 1000);
        tlink_status st = tlink_allreduce(comm, g, g, NPARAM, TLINK_F32, TLINK_AVG);
        if (!st) {
            for (int i = 0; i < NPARAM; i++) m.p[i] -= lr * g[i];
            m.step++;
            st = tlink_ckpt_save(ck, comm, m.step, &m, sizeof m);
        }
        if (!st && ckpt_file && rank == 0 && m.step % ckpt_every == 0) {
            if (tlink_ckpt_write_file(ckpt_file, m.step, &m, sizeof m))
                fprintf(stderr, "ft_train: %s\n", tlink_last_error(NULL));
        }
        if (!st) {
            if (verbose || failures) tl("step %lld done (%d ranks)", (long long)m.step, size);
            if (failures && !verbose) failures = 0; /* one line after a recovery is enough */
            continue;
        }
        if (st != TLINK_ERR_PEER_FAILED && st != TLINK_ERR_REVOKED) {
            fprintf(stderr, "rank %d: step %lld: %s\n", rank, (long long)m.step, tlink_last_error(comm));
            return 1;
        }
        tl("detected at step %lld: %s", (long long)m.step, tlink_last_error(comm));
        failures++;
        tlink_comm *next = NULL;
        if (elastic) {
            st = tlink_comm_rejoin(comm, &next);
            if (st) { fprintf(stderr, "rejoin: %s\n", tlink_last_error(comm)); return 1; }
            tl("rejoined: %d ranks", tlink_comm_size(next));
        } else {
            st = tlink_comm_shrink(comm, &next);
            if (st) { fprintf(stderr, "shrink: %s\n", tlink_last_error(comm)); return 1; }
            int failed[64], nf = tlink_comm_failed_ranks(comm, failed, 64);
            char list[256] = "";
            for (int i = 0, off = 0; i < nf && i < 64 && off < 200; i++)
                off += snprintf(list + off, sizeof list - (size_t)off, "%s%d", i ? "," : "", failed[i]);
            tl("shrunk: %d ranks (failed: %s), I am rank %d", tlink_comm_size(next), list, tlink_comm_rank(next));
        }
        tlink_comm_destroy(comm);
        comm = next;
        fix_algo(comm);
        size_t nb = 0;
        int64_t s = -1;
        st = tlink_ckpt_restore(ck, comm, &m, sizeof m, &nb, &s);
        if (st) { fprintf(stderr, "restore: %s\n", tlink_last_error(comm)); return 1; }
        if (s < 0) init_model(&m);
        tl("restored step %lld; resuming", (long long)m.step);
    }
    if (tlink_comm_rank(comm) == 0)
        printf("final: %lld steps on %d ranks, test accuracy %.1f%%, model checksum %016llx\n", (long long)m.step,
               tlink_comm_size(comm), accuracy(m.p), (unsigned long long)checksum(m.p, sizeof m.p));
    tlink_ckpt_free(ck);
    tlink_comm_destroy(comm);
    return 0;
}
