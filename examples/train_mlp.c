/* train_mlp.c — data-parallel training of a small MLP on scikit-learn's digits data set,
 * gradients all-reduced through libtilelink, optionally compressed.
 *
 *   scripts/prepare_digits.py build/data/digits.bin          # once (no download)
 *   tile launch -n 4 -- build/bin/train_mlp --compress sign1 [--epochs 30] [--no-ef] ...
 *
 * Data: 1797 8x8 images (pixels 0..16, scaled to 0..1) of the digits 0..9. Fixed split:
 * sample i is a test sample when i % 5 == 0 (360 test, 1437 train).
 * Model: 64 -> hidden (ReLU) -> 10, softmax cross-entropy, SGD (lr 0.3; --momentum is there,
 * but momentum 0.9 slows 1-bit with error feedback down markedly: docs/tilelink-compression.md).
 * Data parallel: every rank holds the same parameters; each step takes one global batch
 * (the same on every rank: the epoch's permutation comes from the seed and the epoch
 * number), each rank computes the gradient of its shard of it, the gradients are summed over
 * the ranks (tlink_allreduce, or tlink_compressed_allreduce with one compression state per
 * parameter tensor), and every rank applies the same update. Rank 0 prints the test accuracy
 * after each epoch.
 *
 * Structure (for checkpointing and recovery): everything that evolves is in train_state
 * (parameters, momentum, progress counters) — the batch order is a function of
 * (seed, epoch), so the state has no random generator; train_step() runs one global step
 * and advances the counters; everything else (data, communicator, compression states,
 * scratch) is in train_ctx and can be rebuilt. The compression residuals live in the
 * tlink_compress states: after restoring parameters, tlink_compress_reset() them (or keep
 * them: both are correct, the residual is a small correction).
 *
 * Output (rank 0): "epoch E test_acc A train_loss L ..." per epoch, then a "final" line, and
 * "params identical on all ranks: yes|NO". Exit status 0, or 1 on error, 2 on bad usage.
 *
 * Fault tolerance (--ft): train_state is saved in libtilelink's in-memory buddy checkpoint
 * after every step (tlink_ckpt_save: each rank keeps its state and a copy of its ring
 * neighbour's). When a step fails with TLINK_ERR_PEER_FAILED/REVOKED (a rank was killed):
 *   - under `tile launch --max-restarts K` (TLINK_MAX_RESTARTS > 0) the survivors call
 *     tlink_comm_rejoin, the launcher's replacement (TLINK_RESTART_COUNT > 0) inits as the
 *     same rank, and all restore; the run ends bit-identical to one without failure;
 *   - otherwise (e.g. `tile launch --keep-going`) the survivors tlink_comm_shrink and go on
 *     with fewer ranks: each global batch is the same, split into fewer shards, so only the
 *     summation order of the gradient changes;
 * tlink_ckpt_restore brings everyone to the newest step all can restore, the compression
 * states are made afresh on the new communicator, training resumes. A timeline is printed
 * ("ft <unix time> rank R: detected ... / rejoined|shrunk ... / restored step S / step S+1
 * done"); --pid-dir DIR writes DIR/rank<R>.pid (and DIR/all.<pid>) for a killer script.
 * In --ft mode the f32 all-reduce is pinned to the ring algorithm (one summation order on
 * every communicator). */
#define _GNU_SOURCE
#include <tlink.h>

#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NFEAT 64
#define NCLASS 10

/* ---------- data ---------- */
typedef struct dataset {
    int n;                  /* samples */
    float *x;               /* [n][NFEAT] in 0..1 */
    unsigned char *y;       /* [n] */
} dataset;

static int load_digits(const char *path, dataset *train, dataset *test, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s (make it with scripts/prepare_digits.py %s)", path, strerror(errno), path);
        return -1;
    }
    unsigned char hdr[16];
    if (fread(hdr, 1, 16, f) != 16 || memcmp(hdr, "TILEDIG1", 8)) {
        snprintf(err, errlen, "%s: not a digits file (bad magic; see scripts/prepare_digits.py)", path);
        fclose(f);
        return -1;
    }
    uint32_t n = hdr[8] | hdr[9] << 8 | hdr[10] << 16 | (uint32_t)hdr[11] << 24;
    uint32_t nf = hdr[12] | hdr[13] << 8 | hdr[14] << 16 | (uint32_t)hdr[15] << 24;
    if (nf != NFEAT || n < 10 || n > 1000000) {
        snprintf(err, errlen, "%s: %u samples of %u features (want %d features)", path, n, nf, NFEAT);
        fclose(f);
        return -1;
    }
    int ntest = (int)((n + 4) / 5), ntrain = (int)n - ntest;
    train->n = ntrain;
    test->n = ntest;
    train->x = malloc((size_t)ntrain * NFEAT * sizeof(float));
    test->x = malloc((size_t)ntest * NFEAT * sizeof(float));
    train->y = malloc((size_t)ntrain);
    test->y = malloc((size_t)ntest);
    if (!train->x || !test->x || !train->y || !test->y) {
        snprintf(err, errlen, "out of memory");
        fclose(f);
        return -1;
    }
    unsigned char rec[NFEAT + 1];
    int a = 0, b = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (fread(rec, 1, sizeof rec, f) != sizeof rec) {
            snprintf(err, errlen, "%s: truncated at sample %u of %u", path, i, n);
            fclose(f);
            return -1;
        }
        if (rec[NFEAT] > 9) {
            snprintf(err, errlen, "%s: sample %u has label %d", path, i, rec[NFEAT]);
            fclose(f);
            return -1;
        }
        dataset *d = i % 5 == 0 ? test : train;
        int k = i % 5 == 0 ? b++ : a++;
        for (int j = 0; j < NFEAT; j++) d->x[(size_t)k * NFEAT + j] = rec[j] / 16.0f;
        d->y[k] = rec[NFEAT];
    }
    fclose(f);
    return 0;
}

/* ---------- deterministic random numbers ---------- */
static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static float urand(uint64_t *s) { return (float)((splitmix(s) >> 40) * (1.0 / 16777216.0)); }

/* ---------- model, state, context ---------- */
typedef struct train_config {
    int hidden, epochs, batch, ef, quiet;
    size_t chunk;
    float lr, momentum;
    uint64_t seed;
    int method;             /* -1: plain tlink_allreduce (f32), else tlink_compress_method */
    const char *data;
    int ft;                 /* --ft: buddy checkpoint each step, recover from rank failures */
    const char *pid_dir;
    const char *ckpt_file;  /* --ckpt-file: rank 0 saves there every 10 steps; resume from it */
} train_config;

/* parameter tensors, in this order, in one flat array */
enum { P_W1, P_B1, P_W2, P_B2, P_COUNT };

typedef struct train_state {
    int epoch;              /* epochs completed */
    int batch_idx;          /* next batch within the epoch */
    long long step;         /* global steps completed */
    double loss_sum;        /* this epoch's summed training loss (of this rank's shards) */
    long long loss_n;
    size_t nparams;
    float *params;          /* W1 [H][64], b1 [H], W2 [10][H], b2 [10] */
    float *velocity;        /* momentum, same layout */
} train_state;

typedef struct train_ctx {
    train_config cfg;
    tlink_comm *comm;
    int rank, size;
    dataset train, test;
    size_t off[P_COUNT + 1];            /* tensor offsets in the flat arrays */
    tlink_compress *cs[P_COUNT];        /* one compression state per gradient tensor */
    int *order;                         /* [train.n] this epoch's permutation */
    int order_epoch;                    /* epoch `order` was made for (-1: none) */
    float *grad;                        /* [nparams] */
    float *h;                           /* [hidden] scratch */
    uint64_t wire_bytes;                /* bytes this rank sent for gradients */
    double comm_s, compute_s;
    tlink_status last_st;               /* status of the last failed all-reduce */
} train_ctx;

static int steps_per_epoch(const train_ctx *cx) { return (cx->train.n + cx->cfg.batch - 1) / cx->cfg.batch; }

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int state_init(const train_ctx *cx, train_state *st) {
    memset(st, 0, sizeof *st);
    st->nparams = cx->off[P_COUNT];
    st->params = calloc(st->nparams, sizeof(float));
    st->velocity = calloc(st->nparams, sizeof(float));
    if (!st->params || !st->velocity) return -1;
    /* He initialisation from the seed: identical on every rank */
    uint64_t s = cx->cfg.seed * 0x2545F4914F6CDD1Dull + 17;
    int H = cx->cfg.hidden;
    float a1 = sqrtf(6.0f / NFEAT), a2 = sqrtf(6.0f / (float)H);
    for (size_t i = 0; i < (size_t)H * NFEAT; i++) st->params[cx->off[P_W1] + i] = (2 * urand(&s) - 1) * a1;
    for (size_t i = 0; i < (size_t)NCLASS * H; i++) st->params[cx->off[P_W2] + i] = (2 * urand(&s) - 1) * a2;
    return 0;
}

static void state_free(train_state *st) {
    free(st->params);
    free(st->velocity);
    memset(st, 0, sizeof *st);
}

/* forward pass of one sample: fills h (hidden activations) and p (class probabilities) */
static void forward(const train_ctx *cx, const float *w, const float *x, float *h, float *p) {
    int H = cx->cfg.hidden;
    const float *W1 = w + cx->off[P_W1], *b1 = w + cx->off[P_B1], *W2 = w + cx->off[P_W2], *b2 = w + cx->off[P_B2];
    for (int j = 0; j < H; j++) {
        float s = b1[j];
        for (int k = 0; k < NFEAT; k++) s += W1[j * NFEAT + k] * x[k];
        h[j] = s > 0 ? s : 0;
    }
    float mx = -INFINITY;
    for (int c = 0; c < NCLASS; c++) {
        float s = b2[c];
        for (int j = 0; j < H; j++) s += W2[c * H + j] * h[j];
        p[c] = s;
        mx = s > mx ? s : mx;
    }
    float z = 0;
    for (int c = 0; c < NCLASS; c++) z += p[c] = expf(p[c] - mx);
    for (int c = 0; c < NCLASS; c++) p[c] /= z;
}

static void make_order(train_ctx *cx, int epoch) {
    if (cx->order_epoch == epoch) return;
    for (int i = 0; i < cx->train.n; i++) cx->order[i] = i;
    uint64_t s = cx->cfg.seed ^ (0x5851F42D4C957F2Dull * (uint64_t)(epoch + 1));
    for (int i = cx->train.n - 1; i > 0; i--) {
        int j = (int)(splitmix(&s) % (uint64_t)(i + 1));
        int t = cx->order[i];
        cx->order[i] = cx->order[j];
        cx->order[j] = t;
    }
    cx->order_epoch = epoch;
}

/* One global step: this rank's shard of the batch, gradient exchange, update, counters.
 * Returns TLINK_OK, or the status of the failed gradient exchange (message printed; e.g.
 * TLINK_ERR_PEER_FAILED). On failure *st is unchanged, so the step can be retried after
 * recovery (with a rebuilt context: communicator, rank/size, compression states). */
static tlink_status train_step(train_ctx *cx, train_state *st) {
    double t0 = now_s();
    make_order(cx, st->epoch);
    int B = cx->cfg.batch, H = cx->cfg.hidden;
    int b0 = st->batch_idx * B, b1 = b0 + B < cx->train.n ? b0 + B : cx->train.n, nb = b1 - b0;
    /* my shard: contiguous, sizes differing by at most one */
    int q = nb / cx->size, r = nb % cx->size;
    int s0 = b0 + cx->rank * q + (cx->rank < r ? cx->rank : r), s1 = s0 + q + (cx->rank < r);
    float *g = cx->grad, *w = st->params;
    memset(g, 0, st->nparams * sizeof(float));
    float *gW1 = g + cx->off[P_W1], *gb1 = g + cx->off[P_B1], *gW2 = g + cx->off[P_W2], *gb2 = g + cx->off[P_B2];
    const float *W2 = w + cx->off[P_W2];
    float p[NCLASS], dh[1024];
    double loss = 0;
    for (int s = s0; s < s1; s++) {
        int idx = cx->order[s];
        const float *x = cx->train.x + (size_t)idx * NFEAT;
        int y = cx->train.y[idx];
        forward(cx, w, x, cx->h, p);
        loss += -log(p[y] > 1e-30f ? p[y] : 1e-30f);
        /* d loss / d logits = p - onehot, averaged over the global batch */
        for (int c = 0; c < NCLASS; c++) p[c] = (p[c] - (c == y)) / (float)nb;
        for (int j = 0; j < H; j++) dh[j] = 0;
        for (int c = 0; c < NCLASS; c++) {
            gb2[c] += p[c];
            for (int j = 0; j < H; j++) {
                gW2[c * H + j] += p[c] * cx->h[j];
                dh[j] += p[c] * W2[c * H + j];
            }
        }
        for (int j = 0; j < H; j++) {
            if (cx->h[j] <= 0) continue;
            gb1[j] += dh[j];
            for (int k = 0; k < NFEAT; k++) gW1[j * NFEAT + k] += dh[j] * x[k];
        }
    }
    double t1 = now_s();
    /* sum the gradients over the ranks (each already divided by the global batch size) */
    for (int t = 0; t < P_COUNT; t++) {
        float *gt = g + cx->off[t];
        size_t n = cx->off[t + 1] - cx->off[t];
        tlink_status rc;
        if (cx->cfg.method < 0) {
            rc = tlink_allreduce(cx->comm, gt, gt, n, TLINK_F32, TLINK_SUM);
            size_t per = (n + (size_t)cx->size - 1) / (size_t)cx->size;
            cx->wire_bytes += cx->size > 1 ? 2ull * (uint64_t)(cx->size - 1) * per * 4 : 0;
        } else {
            rc = tlink_compressed_allreduce(cx->cs[t], gt, gt, n, TLINK_SUM);
            tlink_compress_stats cst;
            tlink_compress_get_stats(cx->cs[t], &cst);
            cx->wire_bytes += cst.last_wire_bytes;
        }
        if (rc != TLINK_OK) {
            cx->last_st = rc;
            if (!cx->cfg.ft)
                fprintf(stderr, "rank %d: step %lld: gradient all-reduce: %s\n", cx->rank, st->step,
                        tlink_last_error(cx->comm));
            return rc;
        }
    }
    double t2 = now_s();
    /* SGD with momentum, identical on every rank */
    float lr = cx->cfg.lr, mu = cx->cfg.momentum;
    for (size_t i = 0; i < st->nparams; i++) {
        st->velocity[i] = mu * st->velocity[i] + g[i];
        w[i] -= lr * st->velocity[i];
    }
    st->loss_sum += loss;
    st->loss_n += s1 - s0;
    st->step++;
    if (++st->batch_idx >= steps_per_epoch(cx)) {
        st->batch_idx = 0;
        st->epoch++;
    }
    cx->compute_s += (t1 - t0) + (now_s() - t2);
    cx->comm_s += t2 - t1;
    return TLINK_OK;
}

static double evaluate(const train_ctx *cx, const train_state *st, const dataset *d) {
    float p[NCLASS];
    float *h = malloc((size_t)cx->cfg.hidden * sizeof(float));
    int ok = 0;
    for (int i = 0; i < d->n; i++) {
        forward(cx, st->params, d->x + (size_t)i * NFEAT, h, p);
        int best = 0;
        for (int c = 1; c < NCLASS; c++)
            if (p[c] > p[best]) best = c;
        ok += best == d->y[i];
    }
    free(h);
    return (double)ok / d->n;
}

static uint64_t params_hash(const train_state *st) {
    uint64_t h = 1469598103934665603ull;
    const unsigned char *b = (const unsigned char *)st->params;
    for (size_t i = 0; i < st->nparams * sizeof(float); i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* ---------- command line ---------- */
static void usage(FILE *f) {
    fprintf(f,
            "usage: train_mlp [--compress none|sign1|int4|int8|fp8] [--no-ef] [--chunk N] [--epochs N]\n"
            "                 [--batch N] [--lr X] [--momentum X] [--hidden N] [--seed N] [--data FILE] [--quiet]\n"
            "                 [--ft [--pid-dir DIR]] [--ckpt-file PATH]\n"
            "Run it under a launcher: tile launch -n 4 -- train_mlp ... (a single process trains alone).\n"
            "--compress none (default) all-reduces f32 with tlink_allreduce; the others use\n"
            "tlink_compressed_allreduce with error feedback (--no-ef: without). --data defaults to\n"
            "build/data/digits.bin (make it with scripts/prepare_digits.py). --ft survives the loss of a\n"
            "rank (buddy checkpoint each step; rejoin under tile launch --max-restarts, else shrink).\n"
            "--ckpt-file PATH: rank 0 writes the state there every 10 steps (atomic, checksummed) and\n"
            "a run that finds the file resumes from it.\n");
}

static int parse_int(const char *opt, const char *v, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || errno || *end || end == v || x < lo || x > hi) {
        fprintf(stderr, "train_mlp: %s wants an integer in %ld..%ld (got '%s')\n", opt, lo, hi, v ? v : "");
        return -1;
    }
    *out = x;
    return 0;
}
static int parse_float(const char *opt, const char *v, double lo, double hi, float *out) {
    char *end;
    double x = v ? strtod(v, &end) : 0;
    if (!v || *end || end == v || !(x >= lo && x <= hi)) {
        fprintf(stderr, "train_mlp: %s wants a number in %g..%g (got '%s')\n", opt, lo, hi, v ? v : "");
        return -1;
    }
    *out = (float)x;
    return 0;
}

static int parse_args(int argc, char **argv, train_config *cfg) {
    *cfg = (train_config){.hidden = 64, .epochs = 30, .batch = 64, .ef = 1, .chunk = 256, .lr = 0.3f,
                          .momentum = 0.0f, .seed = 1, .method = -1, .data = "build/data/digits.bin"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long x;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(a, "--compress")) {
            if (!v) { fprintf(stderr, "train_mlp: --compress wants a method\n"); return -1; }
            int m = tlink_compress_from_name(v);
            if (m < 0) {
                fprintf(stderr, "train_mlp: --compress: unknown method '%s' (none, sign1, int4, int8, fp8)\n", v);
                return -1;
            }
            cfg->method = m == TLINK_COMPRESS_NONE ? -1 : m;
            i++;
        } else if (!strcmp(a, "--no-ef")) {
            cfg->ef = 0;
        } else if (!strcmp(a, "--quiet")) {
            cfg->quiet = 1;
        } else if (!strcmp(a, "--ft")) {
            cfg->ft = 1;
        } else if (!strcmp(a, "--ckpt-file")) {
            if (!v) { fprintf(stderr, "train_mlp: --ckpt-file wants a path\n"); return -1; }
            cfg->ckpt_file = v, i++;
        } else if (!strcmp(a, "--pid-dir")) {
            if (!v) { fprintf(stderr, "train_mlp: --pid-dir wants a directory\n"); return -1; }
            cfg->pid_dir = v, i++;
        } else if (!strcmp(a, "--chunk")) {
            if (parse_int(a, v, 1, TLINK_COMPRESS_MAX_CHUNK, &x)) return -1;
            cfg->chunk = (size_t)x, i++;
        } else if (!strcmp(a, "--epochs")) {
            if (parse_int(a, v, 0, 100000, &x)) return -1;
            cfg->epochs = (int)x, i++;
        } else if (!strcmp(a, "--batch")) {
            if (parse_int(a, v, 1, 100000, &x)) return -1;
            cfg->batch = (int)x, i++;
        } else if (!strcmp(a, "--hidden")) {
            if (parse_int(a, v, 1, 1024, &x)) return -1;
            cfg->hidden = (int)x, i++;
        } else if (!strcmp(a, "--seed")) {
            if (parse_int(a, v, 0, 1L << 40, &x)) return -1;
            cfg->seed = (uint64_t)x, i++;
        } else if (!strcmp(a, "--lr")) {
            if (parse_float(a, v, 1e-6, 10, &cfg->lr)) return -1;
            i++;
        } else if (!strcmp(a, "--momentum")) {
            if (parse_float(a, v, 0, 0.999, &cfg->momentum)) return -1;
            i++;
        } else if (!strcmp(a, "--data")) {
            if (!v) { fprintf(stderr, "train_mlp: --data wants a file\n"); return -1; }
            cfg->data = v, i++;
        } else {
            fprintf(stderr, "train_mlp: unknown argument '%s'\n", a);
            usage(stderr);
            return -1;
        }
    }
    return 0;
}

/* ---------- fault tolerance (--ft) ---------- */
static double wall_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int g_rank0 = -1; /* rank at start: names this process in the timeline */
static void ft_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void ft_log(const char *fmt, ...) {
    char buf[700];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    printf("ft %.3f rank %d: %s\n", wall_s(), g_rank0, buf);
    fflush(stdout);
}

/* train_state <-> one buffer: counters, then params and velocity */
typedef struct ft_hdr { int64_t epoch, batch_idx, step, loss_n, nparams; double loss_sum; } ft_hdr;
static size_t ft_bytes(const train_state *st) { return sizeof(ft_hdr) + 2 * st->nparams * sizeof(float); }
static void ft_pack(const train_state *st, char *buf) {
    ft_hdr h = {st->epoch, st->batch_idx, st->step, st->loss_n, (int64_t)st->nparams, st->loss_sum};
    memcpy(buf, &h, sizeof h);
    memcpy(buf + sizeof h, st->params, st->nparams * sizeof(float));
    memcpy(buf + sizeof h + st->nparams * sizeof(float), st->velocity, st->nparams * sizeof(float));
}
static int ft_unpack(train_state *st, const char *buf, size_t n) {
    ft_hdr h;
    memcpy(&h, buf, sizeof h);
    if (n != ft_bytes(st) || h.nparams != (int64_t)st->nparams) return -1;
    st->epoch = (int)h.epoch;
    st->batch_idx = (int)h.batch_idx;
    st->step = h.step;
    st->loss_n = h.loss_n;
    st->loss_sum = h.loss_sum;
    memcpy(st->params, buf + sizeof h, st->nparams * sizeof(float));
    memcpy(st->velocity, buf + sizeof h + st->nparams * sizeof(float), st->nparams * sizeof(float));
    return 0;
}

/* the communicator changed: rank, size, algorithm pin, compression states */
static int ft_adopt(train_ctx *cx, tlink_comm *c, const size_t *sz) {
    cx->comm = c;
    cx->rank = tlink_comm_rank(c);
    cx->size = tlink_comm_size(c);
    tlink_comm_set_algo(c, TLINK_COLL_ALLREDUCE, TLINK_ALGO_RING);
    for (int t = 0; t < P_COUNT && cx->cfg.method >= 0; t++) {
        tlink_compress_destroy(cx->cs[t]);
        cx->cs[t] = NULL;
        if (tlink_compress_create(c, (tlink_compress_method)cx->cfg.method, sz[t], cx->cfg.chunk, cx->cfg.ef,
                                  &cx->cs[t]) != TLINK_OK) {
            fprintf(stderr, "train_mlp: %s\n", tlink_last_error(c));
            return -1;
        }
    }
    return 0;
}

/* restore this rank's state from the buddy checkpoint (collective over cx->comm) */
static int ft_restore(train_ctx *cx, tlink_ckpt *ck, train_state *st, char *buf) {
    size_t nb = 0;
    int64_t step = -1;
    if (tlink_ckpt_restore(ck, cx->comm, buf, ft_bytes(st), &nb, &step) != TLINK_OK) {
        fprintf(stderr, "train_mlp: restore: %s\n", tlink_last_error(cx->comm));
        return -1;
    }
    if (step >= 0 && ft_unpack(st, buf, nb)) {
        fprintf(stderr, "train_mlp: restore: a checkpoint of %zu bytes does not fit this model\n", nb);
        return -1;
    }
    return 0;
}

/* after a failed step: rejoin (launcher restarts ranks) or shrink, then restore */
static int ft_recover(train_ctx *cx, tlink_ckpt *ck, train_state *st, char *buf, const size_t *sz, int elastic) {
    if (cx->last_st != TLINK_ERR_PEER_FAILED && cx->last_st != TLINK_ERR_REVOKED) {
        fprintf(stderr, "rank %d: step %lld: %s\n", cx->rank, st->step, tlink_last_error(cx->comm));
        return -1;
    }
    ft_log("detected at step %lld: %s", st->step, tlink_last_error(cx->comm));
    tlink_comm *next = NULL;
    if (elastic) {
        if (tlink_comm_rejoin(cx->comm, &next) != TLINK_OK) {
            fprintf(stderr, "train_mlp: rejoin: %s\n", tlink_last_error(cx->comm));
            return -1;
        }
        ft_log("rejoined: %d ranks", tlink_comm_size(next));
    } else {
        if (tlink_comm_shrink(cx->comm, &next) != TLINK_OK) {
            fprintf(stderr, "train_mlp: shrink: %s\n", tlink_last_error(cx->comm));
            return -1;
        }
        int failed[64], nf = tlink_comm_failed_ranks(cx->comm, failed, 64);
        char list[256] = "";
        for (int i = 0, off = 0; i < nf && i < 64 && off < 200; i++)
            off += snprintf(list + off, sizeof list - (size_t)off, "%s%d", i ? "," : "", failed[i]);
        ft_log("shrunk: %d ranks (failed: %s), now rank %d", tlink_comm_size(next), list, tlink_comm_rank(next));
    }
    for (int t = 0; t < P_COUNT; t++) { tlink_compress_destroy(cx->cs[t]); cx->cs[t] = NULL; }
    tlink_comm_destroy(cx->comm);
    if (ft_adopt(cx, next, sz) || ft_restore(cx, ck, st, buf)) return -1;
    ft_log("restored step %lld; resuming", st->step);
    return 0;
}

int main(int argc, char **argv) {
    train_ctx cx;
    memset(&cx, 0, sizeof cx);
    if (parse_args(argc, argv, &cx.cfg)) return 2;
    char err[512];
    if (load_digits(cx.cfg.data, &cx.train, &cx.test, err, sizeof err)) {
        fprintf(stderr, "train_mlp: %s\n", err);
        return 1;
    }
    /* under a launcher: from its variables; started by hand: one rank alone */
    tlink_env_info env;
    tlink_status ist = tlink_env_parse(&env) == TLINK_OK && env.size > 0 ? tlink_comm_init_env(&cx.comm)
                                                                         : tlink_comm_init(&cx.comm, 0, 1, NULL);
    if (ist != TLINK_OK) {
        fprintf(stderr, "train_mlp: %s\n", tlink_last_error(NULL));
        return 1;
    }
    cx.rank = tlink_comm_rank(cx.comm);
    cx.size = tlink_comm_size(cx.comm);
    g_rank0 = cx.rank;
    if (cx.cfg.ft) tlink_comm_set_algo(cx.comm, TLINK_COLL_ALLREDUCE, TLINK_ALGO_RING);
    if (cx.cfg.pid_dir) {
        char path[4096];
        snprintf(path, sizeof path, "%s/rank%d.pid", cx.cfg.pid_dir, cx.rank);
        FILE *pf = fopen(path, "w");
        if (pf) { fprintf(pf, "%d\n", (int)getpid()); fclose(pf); }
        snprintf(path, sizeof path, "%s/all.%d", cx.cfg.pid_dir, (int)getpid());
        pf = fopen(path, "w");
        if (pf) fclose(pf);
    }
    int H = cx.cfg.hidden;
    size_t sz[P_COUNT] = {(size_t)H * NFEAT, (size_t)H, (size_t)NCLASS * H, NCLASS};
    for (int t = 0; t < P_COUNT; t++) cx.off[t + 1] = cx.off[t] + sz[t];
    for (int t = 0; t < P_COUNT && cx.cfg.method >= 0; t++) {
        if (tlink_compress_create(cx.comm, (tlink_compress_method)cx.cfg.method, sz[t], cx.cfg.chunk, cx.cfg.ef,
                                  &cx.cs[t]) != TLINK_OK) {
            fprintf(stderr, "train_mlp: %s\n", tlink_last_error(cx.comm));
            return 1;
        }
    }
    cx.order = malloc((size_t)cx.train.n * sizeof(int));
    cx.order_epoch = -1;
    cx.grad = malloc(cx.off[P_COUNT] * sizeof(float));
    cx.h = malloc((size_t)H * sizeof(float));
    train_state st;
    if (!cx.order || !cx.grad || !cx.h || state_init(&cx, &st)) {
        fprintf(stderr, "train_mlp: out of memory\n");
        return 1;
    }
    const char *mname = cx.cfg.method < 0 ? "none" : tlink_compress_name((tlink_compress_method)cx.cfg.method);
    if (cx.rank == 0)
        printf("train_mlp: %d ranks, digits %d train / %d test, MLP 64-%d-10 (%zu parameters), batch %d, "
               "lr %g, momentum %g, compress %s%s (chunk %zu)\n",
               cx.size, cx.train.n, cx.test.n, H, st.nparams, cx.cfg.batch, cx.cfg.lr, cx.cfg.momentum, mname,
               cx.cfg.method < 0 ? "" : cx.cfg.ef ? " with error feedback" : " without error feedback", cx.cfg.chunk);
    tlink_ckpt *ck = NULL;
    char *ftbuf = NULL;
    const char *mr = getenv("TLINK_MAX_RESTARTS"), *rcnt = getenv("TLINK_RESTART_COUNT");
    int elastic = mr && atoi(mr) > 0, announce = 0;
    if (cx.cfg.ft || cx.cfg.ckpt_file) {
        ftbuf = malloc(ft_bytes(&st));
        if (!ftbuf || tlink_ckpt_create(&ck) != TLINK_OK) {
            fprintf(stderr, "train_mlp: out of memory\n");
            return 1;
        }
        if (cx.cfg.ft && rcnt && atoi(rcnt) > 0) {
            /* a replacement started by the launcher: the survivors rejoin; our state is in
             * our buddy's copy */
            if (ft_restore(&cx, ck, &st, ftbuf)) return 1;
            ft_log("replacement joined; restored step %lld", st.step);
        } else if (cx.cfg.ckpt_file && access(cx.cfg.ckpt_file, F_OK) == 0) {
            /* a whole-job restart: every rank reads the file rank 0 wrote */
            void *fb = NULL;
            size_t nb = 0;
            int64_t fs = 0;
            if (tlink_ckpt_read_file(cx.cfg.ckpt_file, &fs, &fb, &nb) != TLINK_OK || ft_unpack(&st, fb, nb)) {
                fprintf(stderr, "train_mlp: %s: %s\n", cx.cfg.ckpt_file,
                        fb ? "does not fit this model" : tlink_last_error(NULL));
                return 1;
            }
            tlink_free(fb);
            ft_log("loaded step %lld from %s", st.step, cx.cfg.ckpt_file);
            announce = 1;
        }
    }
    double t0 = now_s();
    int rc = 0;
    double acc = 0;
    while (st.epoch < cx.cfg.epochs) {
        int e = st.epoch;
        if (train_step(&cx, &st)) {
            if (cx.cfg.ft && !ft_recover(&cx, ck, &st, ftbuf, sz, elastic)) {
                announce = 1;
                continue;
            }
            rc = 1;
            break;
        }
        if (cx.cfg.ft) {
            ft_pack(&st, ftbuf);
            cx.last_st = tlink_ckpt_save(ck, cx.comm, st.step, ftbuf, ft_bytes(&st));
            if (cx.last_st != TLINK_OK) {
                if (!ft_recover(&cx, ck, &st, ftbuf, sz, elastic)) {
                    announce = 1;
                    continue;
                }
                rc = 1;
                break;
            }
            if (announce) {
                ft_log("step %lld done (%d ranks)", st.step, cx.size);
                announce = 0;
            }
        }
        if (cx.cfg.ckpt_file && cx.rank == 0 && st.step % 10 == 0) {
            ft_pack(&st, ftbuf);
            if (tlink_ckpt_write_file(cx.cfg.ckpt_file, st.step, ftbuf, ft_bytes(&st)) != TLINK_OK)
                fprintf(stderr, "train_mlp: %s\n", tlink_last_error(NULL));
        }
        if (st.epoch != e) { /* an epoch ended */
            acc = evaluate(&cx, &st, &cx.test);
            double loss[2] = {st.loss_sum, (double)st.loss_n};
            tlink_allreduce(cx.comm, loss, loss, 2, TLINK_F64, TLINK_SUM);
            if (cx.rank == 0 && (!cx.cfg.quiet || st.epoch == cx.cfg.epochs))
                printf("epoch %d test_acc %.4f train_loss %.4f wire_MB %.3f time_s %.2f\n", st.epoch, acc,
                       loss[0] / (loss[1] > 0 ? loss[1] : 1), cx.wire_bytes / 1e6, now_s() - t0);
            fflush(stdout);
            st.loss_sum = 0;
            st.loss_n = 0;
        }
    }
    if (!rc) {
        if (cx.cfg.epochs == 0) acc = evaluate(&cx, &st, &cx.test);
        /* every rank must hold the same parameters */
        uint64_t h = params_hash(&st), *all = calloc((size_t)cx.size, sizeof(uint64_t));
        int same = 1;
        if (tlink_allgather(cx.comm, &h, all, 1, TLINK_I64) != TLINK_OK) {
            fprintf(stderr, "train_mlp: %s\n", tlink_last_error(cx.comm));
            rc = 1;
        }
        for (int r = 0; r < cx.size; r++) same &= all[r] == h;
        free(all);
        /* what an uncompressed f32 ring all-reduce would have sent for the same steps */
        uint64_t f32b = 0;
        for (int t = 0; t < P_COUNT; t++) {
            size_t per = (sz[t] + (size_t)cx.size - 1) / (size_t)cx.size;
            f32b += cx.size > 1 ? 2ull * (uint64_t)(cx.size - 1) * per * 4 : 0;
        }
        f32b *= (uint64_t)st.step;
        if (cx.rank == 0) {
            printf("final test_acc %.4f compress %s ef %d epochs %d steps %lld wire_bytes_per_rank %llu f32_ring_bytes %llu "
                   "ratio %.1f time_s %.2f comm_s %.2f\n",
                   acc, mname, cx.cfg.method < 0 ? 0 : cx.cfg.ef, st.epoch, st.step, (unsigned long long)cx.wire_bytes,
                   (unsigned long long)f32b, cx.wire_bytes ? (double)f32b / (double)cx.wire_bytes : 1.0, now_s() - t0,
                   cx.comm_s);
            printf("params identical on all ranks: %s\n", same ? "yes" : "NO");
            if (cx.cfg.ft) printf("params hash %016llx\n", (unsigned long long)h);
        }
        if (!same) rc = 1;
    }
    for (int t = 0; t < P_COUNT; t++) tlink_compress_destroy(cx.cs[t]);
    tlink_ckpt_free(ck);
    free(ftbuf);
    tlink_comm_destroy(cx.comm);
    state_free(&st);
    free(cx.order);
    free(cx.grad);
    free(cx.h);
    free(cx.train.x);
    free(cx.train.y);
    free(cx.test.x);
    free(cx.test.y);
    return rc;
}
