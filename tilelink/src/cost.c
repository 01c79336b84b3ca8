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

static int parse_cost_file(const char *path, double *alpha, double *beta, int *have, double *gamma) {
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
    const char *x = tl_getenv("XDG_CACHE_HOME"), *home = tl_getenv("HOME");
    if (x) snprintf(out, n, "%s/tile/tlink-cost-%s.txt", x, id);
    else if (home) snprintf(out, n, "%s/.cache/tile/tlink-cost-%s.txt", home, id);
    else out[0] = 0;
}

static void write_cache(const char *path, const double *alpha, const double *beta, const int *have) {
    if (!path[0]) return;
    char dir[512];
    snprintf(dir, sizeof dir, "%s", path);
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        mkdir(dir, 0755);
        *p = '/';
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
    memcpy(alpha, c->alpha, sizeof alpha);
    memcpy(beta, c->beta, sizeof beta);
    char key[256], plan[64];
    int shm_partner = -1, tcp_partner = -1, cached[TLINK_TRANSPORT_COUNT] = {0};
    char cpath[512] = "";
    if (c->rank == 0) {
        const char *file = tl_getenv("TLINK_COST_FILE");
        cache_path(cpath, sizeof cpath);
        if (file) {
            if (parse_cost_file(file, alpha, beta, have, &gamma))
                tl_log(TL_LOG_WARN, "TLINK_COST_FILE=%s: %s", file, strerror(errno));
        } else if (cpath[0]) {
            struct stat sb;
            double max_age = tl_env_double("TLINK_COST_CACHE_MAX_AGE", 86400);
            if (stat(cpath, &sb) == 0 && difftime(time(NULL), sb.st_mtime) < max_age) {
                parse_cost_file(cpath, alpha, beta, have, &gamma);
                for (int t = 0; t < TLINK_TRANSPORT_COUNT; t++) cached[t] = have[t];
            }
        }
        int measure = (int)tl_env_long("TLINK_COST_MEASURE", 1);
        /* cached figures are checked by a short ping-pong; TLINK_COST_FILE's are taken as given */
        for (int r = 1; r < c->size && measure; r++) {
            int t = c->peers[r].transport;
            if (t == TLINK_TRANSPORT_SHM && (!have[t] || cached[t]) && shm_partner < 0) shm_partner = r;
            if (t == TLINK_TRANSPORT_TCP && (!have[t] || cached[t]) && tcp_partner < 0) tcp_partner = r;
        }
        snprintf(plan, sizeof plan, "%d %d %d %d", shm_partner, tcp_partner, shm_partner >= 0 && cached[TLINK_TRANSPORT_SHM],
                 tcp_partner >= 0 && cached[TLINK_TRANSPORT_TCP]);
        snprintf(key, sizeof key, "%s/costplan", c->prefix);
        if (tlink_store_set(c->store, key, plan, strlen(plan) + 1))
            return tl_err(c, TLINK_ERR_BOOTSTRAP, "bootstrap: %s", tlink_store_last_error(c->store));
    } else {
        void *v = NULL;
        snprintf(key, sizeof key, "%s/costplan", c->prefix);
        tlink_status st = tlink_store_get(c->store, key, &v, NULL, c->timeout);
        if (st) return tl_err(c, st, "bootstrap: waiting for rank 0's cost plan: %s", tlink_store_last_error(c->store));
        if (sscanf(v, "%d %d %d %d", &shm_partner, &tcp_partner, &cached[TLINK_TRANSPORT_SHM],
                   &cached[TLINK_TRANSPORT_TCP]) != 4)
            shm_partner = tcp_partner = -1;
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
    snprintf(key, sizeof key, "%s/cost", c->prefix);
    if (c->rank == 0) {
        if ((have[TLINK_TRANSPORT_SHM] == 2 || have[TLINK_TRANSPORT_TCP] == 2) && !tl_getenv("TLINK_COST_FILE"))
            write_cache(cpath, alpha, beta, have);
        char val[256];
        snprintf(val, sizeof val, "%a %a %a %a %a", alpha[1], beta[1], alpha[2], beta[2], gamma);
        if (tlink_store_set(c->store, key, val, strlen(val) + 1))
            return tl_err(c, TLINK_ERR_BOOTSTRAP, "bootstrap: %s", tlink_store_last_error(c->store));
    }
    void *v = NULL;
    tlink_status st = tlink_store_get(c->store, key, &v, NULL, c->timeout);
    if (st) return tl_err(c, st, "bootstrap: waiting for rank 0's cost model: %s", tlink_store_last_error(c->store));
    if (sscanf(v, "%la %la %la %la %la", &c->alpha[1], &c->beta[1], &c->alpha[2], &c->beta[2], &c->gamma) != 5)
        tl_log(TL_LOG_WARN, "bad cost model from rank 0: '%s'", (char *)v);
    free(v);
    tl_log(TL_LOG_INFO, "cost model: shm alpha %.2f us, %.2f GB/s; tcp alpha %.2f us, %.2f GB/s", c->alpha[1] * 1e6,
           1e-9 / c->beta[1], c->alpha[2] * 1e6, 1e-9 / c->beta[2]);
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
    int p2 = 1 << flog2(n), fold = p2 != n;
    double L = clog2(n), foldc = fold ? 2 * (a + B * b) + B * g : 0;
    double chunk = 64.0 * 1024, nch = ceil(B / chunk);
    if (nch < 1) nch = 1;
    double t = 0;
    switch (coll) {
    case TLINK_COLL_ALLREDUCE:
        switch (algo) {
        case TLINK_ALGO_RING: t = 2 * (N - 1) * (a + B / N * b) + (N - 1) / N * B * g; break;
        case TLINK_ALGO_RECURSIVE_DOUBLING: t = flog2(n) * (a + B * b + B * g + B / 8e9) + foldc; break;
        case TLINK_ALGO_RABENSEIFNER:
            t = 2 * flog2(n) * a + 2 * (p2 - 1.0) / p2 * B * b + (p2 - 1.0) / p2 * B * g + foldc;
            break;
        case TLINK_ALGO_BINOMIAL_TREE: t = 2 * L * (a + B * b) + L * B * g; break;
        case TLINK_ALGO_DOUBLE_BINARY_TREE: {
            double depth = clog2(n) + 1, half = nch / 2 < 1 ? 1 : nch / 2;
            t = 2 * (depth + half - 1) * (a + chunk * b * (B < chunk ? B / chunk : 1)) * 1.0 + B * g;
            break;
        }
        case TLINK_ALGO_DIRECT:
            if (bytes <= TL_DIRECT_SLOT) {
                /* one synchronisation among the host's ranks: a flag store and poll, about half
                 * of alpha (the ping-pong's message also moves the ring's tail, head and
                 * doorbell lines); one copy in, one out (beta prices two copies) */
                t = 0.5 * a + B * b + (N - 1) * B * g;
            } else {
                /* per segment three synchronisations; each byte copied in and out once (beta,
                 * from a ping-pong, prices two copies) plus reading the blocks to reduce */
                double nseg = ceil(B / (double)(c->dseg ? c->dseg : 1));
                t = nseg * 3 * a + 1.5 * B * b + (N - 1) / N * B * g;
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
    case TLINK_COLL_BARRIER: t = algo == TLINK_ALGO_DIRECT ? 2 * a : L * a; break;
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
