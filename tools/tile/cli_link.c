/* cli_link.c — the TileLink subcommands of `tile` (docs/launch.md):
 *   tile launch      start ranks (tilelink/src/launch.c)
 *   tile link-bench  collective benchmark in the shape of nccl-tests
 *   tile link-topo   print / write / read topologies, predict algorithm costs
 *   tile store       standalone key-value store server for the bootstrap
 *   tile link-status what every rank of a running job is doing (hang diagnosis)
 * Each takes argv[0] = the subcommand name. Uses libtilelink only (no libtile). */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../src/base/base.h"
#include "tlink.h"
#include "launch.h"
#include "topo.h"
#include "tl_internal.h"

int tile_cmd_launch(int argc, char **argv);
int tile_cmd_link_bench(int argc, char **argv);
int tile_cmd_link_topo(int argc, char **argv);
int tile_cmd_store(int argc, char **argv);
int tile_cmd_link_status(int argc, char **argv);

static void cerr(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void cerr(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "tile %s: error: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* "8", "1K", "256M", "1G" (powers of 1024) -> bytes; -1 if malformed. */
static long long parse_size(const char *s) {
    char *e;
    if (!s || !*s) return -1;
    errno = 0;
    double v = strtod(s, &e);
    if (e == s || errno || v < 0) return -1;
    double m = 1;
    if (*e == 'k' || *e == 'K') m = 1024.0, e++;
    else if (*e == 'm' || *e == 'M') m = 1024.0 * 1024, e++;
    else if (*e == 'g' || *e == 'G') m = 1024.0 * 1024 * 1024, e++;
    if (*e == 'B' || *e == 'b') e++;
    if (*e || v * m > 1e15) return -1;
    return (long long)(v * m);
}

static int parse_int(const char *cmd, const char *opt, const char *s, long lo, long hi, long *out) {
    char *e;
    if (!s) { cerr(cmd, "%s needs a value", opt); return -1; }
    errno = 0;
    long v = strtol(s, &e, 10);
    if (e == s || *e || errno || v < lo || v > hi) {
        cerr(cmd, "%s: expected an integer in %ld..%ld, got '%s'", opt, lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
}

/* ======================================================================= tile launch */

int tile_cmd_launch(int argc, char **argv) { return tlink_launch_main(argc, argv); }

/* ======================================================================= tile store */

static volatile sig_atomic_t g_store_stop;
static void store_on_signal(int sig) { (void)sig; g_store_stop = 1; }

int tile_cmd_store(int argc, char **argv) {
    const char *cmd = "store", *bind = NULL, *port_file = NULL;
    long port = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("usage: tile store --port P [--bind ADDR] [--port-file FILE]\n"
                   "Runs the TileLink key-value store that ranks meet at (TLINK_STORE=host:P or\n"
                   "MASTER_ADDR/MASTER_PORT) until SIGINT/SIGTERM. --port 0 picks a free port;\n"
                   "--port-file writes the port there once listening.\n");
            return 0;
        } else if (!strcmp(a, "--port") || !strcmp(a, "-p")) {
            if (parse_int(cmd, a, i + 1 < argc ? argv[++i] : NULL, 0, 65535, &port)) return 2;
        } else if (!strcmp(a, "--bind")) {
            if (i + 1 >= argc) { cerr(cmd, "--bind needs an address"); return 2; }
            bind = argv[++i];
        } else if (!strcmp(a, "--port-file")) {
            if (i + 1 >= argc) { cerr(cmd, "--port-file needs a file name"); return 2; }
            port_file = argv[++i];
        } else {
            cerr(cmd, "unknown option '%s' (see tile store --help)", a);
            return 2;
        }
    }
    if (port < 0) { cerr(cmd, "--port P is required (0 picks a free port)"); return 2; }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = store_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    tlink_store_server *srv = NULL;
    tlink_status st = tlink_store_server_start(bind, (int)port, &srv);
    if (st) {
        cerr(cmd, "cannot listen on %s:%ld: %s (%s)", bind ? bind : "0.0.0.0", port, tlink_error_string(st),
             tlink_last_error(NULL));
        return 1;
    }
    int p = tlink_store_server_port(srv);
    printf("tile store: listening on %s:%d\n", bind ? bind : "0.0.0.0", p);
    fflush(stdout);
    if (port_file) {
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp", port_file);
        FILE *f = fopen(tmp, "w");
        if (!f || fprintf(f, "%d\n", p) < 0 || fclose(f) != 0 || rename(tmp, port_file) != 0) {
            cerr(cmd, "cannot write %s: %s", port_file, strerror(errno));
            tlink_store_server_stop(srv);
            return 1;
        }
    }
    while (!g_store_stop) pause();
    tlink_store_server_stop(srv);
    printf("tile store: stopped\n");
    return 0;
}

/* ======================================================================= tile link-topo */

static int coll_from_name(const char *s) {
    for (int c = 0; c < TLINK_COLL_COUNT; c++)
        if (!strcmp(s, tlink_coll_name((tlink_coll)c))) return c;
    if (!strcmp(s, "bcast")) return TLINK_COLL_BROADCAST;
    if (!strcmp(s, "reducescatter")) return TLINK_COLL_REDUCE_SCATTER;
    return -1;
}

static void print_predictions(const tlink_topo *t, tlink_coll coll, long long b0, long long b1, double f) {
    tlink_topo_cost cost[TLINK_ALGO_COUNT];
    int n = tlink_topo_predict(t, coll, 8, cost, TLINK_ALGO_COUNT, NULL);
    if (n <= 0) { printf("no algorithm applies to %s\n", tlink_coll_name(coll)); return; }
    printf("# predicted time (us) of %s on %d ranks / %d hosts; * = the cost model's choice\n",
           tlink_coll_name(coll), t->nranks, t->nhosts);
    printf("%12s", "bytes");
    for (int i = 0; i < n; i++) printf(" %19s", tlink_algo_name(cost[i].algo));
    printf("\n");
    for (long long b = b0; b <= b1; b = (long long)((double)b * f) > b ? (long long)((double)b * f) : b + 1) {
        tlink_algo best;
        tlink_topo_predict(t, coll, (size_t)b, cost, TLINK_ALGO_COUNT, &best);
        printf("%12lld", b);
        for (int i = 0; i < n; i++) printf(" %18.1f%c", cost[i].us, cost[i].algo == best ? '*' : ' ');
        printf("\n");
        if (f <= 1) break;
    }
}

int tile_cmd_link_topo(int argc, char **argv) {
    const char *cmd = "link-topo", *rd = NULL, *wr = NULL, *syn = NULL, *pred = NULL;
    int gather = 0, quiet = 0;
    long long b0 = 8, b1 = 64LL << 20;
    double f = 4;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("usage: tile link-topo [--read FILE | --synthetic HxR[xNUMA[xGPUS]] | --gather]\n"
                   "                      [--write FILE] [--predict COLL [-b MIN] [-e MAX] [-f FACTOR]] [-q]\n"
                   "Prints this host's topology (hostname, identity, cores, NUMA nodes, GPUs), one read\n"
                   "from a topology file, a synthetic cluster (16x8: 16 hosts of 8 ranks), or, with\n"
                   "--gather under a launcher, the whole job's. --write saves it (- for stdout);\n"
                   "--predict prints every algorithm's predicted time from the α–β cost model.\n"
                   "Format: docs/tilelink-topology.md.\n");
            return 0;
        } else if (!strcmp(a, "--read")) { if (!next) { cerr(cmd, "--read needs a file"); return 2; } rd = argv[++i]; }
        else if (!strcmp(a, "--write")) { if (!next) { cerr(cmd, "--write needs a file"); return 2; } wr = argv[++i]; }
        else if (!strcmp(a, "--synthetic")) { if (!next) { cerr(cmd, "--synthetic needs HxR"); return 2; } syn = argv[++i]; }
        else if (!strcmp(a, "--predict")) { if (!next) { cerr(cmd, "--predict needs a collective"); return 2; } pred = argv[++i]; }
        else if (!strcmp(a, "--gather")) gather = 1;
        else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) quiet = 1;
        else if (!strcmp(a, "-b") || !strcmp(a, "-e")) {
            long long v = parse_size(next);
            if (v < 0) { cerr(cmd, "%s: bad size '%s'", a, next ? next : ""); return 2; }
            if (a[1] == 'b') b0 = v; else b1 = v;
            i++;
        } else if (!strcmp(a, "-f")) {
            char *e;
            f = next ? strtod(next, &e) : 0;
            if (!next || *e || !(f >= 1) || f > 1024) { cerr(cmd, "-f: expected a factor >= 1"); return 2; }
            i++;
        } else {
            cerr(cmd, "unknown option '%s' (see tile link-topo --help)", a);
            return 2;
        }
    }
    if (!!rd + !!syn + gather > 1) { cerr(cmd, "--read, --synthetic and --gather exclude each other"); return 2; }
    int coll = -1;
    if (pred && (coll = coll_from_name(pred)) < 0) {
        cerr(cmd, "--predict: unknown collective '%s' (allreduce, reduce, broadcast, allgather, reduce_scatter, alltoall, barrier)", pred);
        return 2;
    }
    if (b0 > b1) { cerr(cmd, "-b is larger than -e"); return 2; }
    tlink_topo *t = NULL;
    tlink_comm *comm = NULL;
    char err[600];
    tlink_status st;
    int rank = 0;
    if (rd) {
        if ((st = tlink_topo_read(rd, &t, err, sizeof err))) { fprintf(stderr, "%s\n", err); return 1; }
    } else if (syn) {
        int h = 0, r = 0, nu = 1, g = 0;
        char tail;
        int k = sscanf(syn, "%dx%dx%dx%d%c", &h, &r, &nu, &g, &tail);
        if (k < 2 || k > 4 || (st = tlink_topo_synthetic(h, r, nu, g, &t))) {
            cerr(cmd, "--synthetic '%s': expected HOSTSxRANKS[xNUMA[xGPUS]] with positive counts, e.g. 16x8", syn);
            return 2;
        }
    } else if (gather) {
        if ((st = tlink_comm_init_env(&comm))) {
            cerr(cmd, "--gather: %s", tlink_last_error(NULL));
            return 1;
        }
        rank = tlink_comm_rank(comm);
        if ((st = tlink_topo_gather(comm, &t))) {
            cerr(cmd, "--gather: %s", tlink_last_error(comm));
            tlink_comm_destroy(comm);
            return 1;
        }
    } else {
        if ((st = tlink_topo_detect(&t))) { cerr(cmd, "detection failed: %s", tlink_error_string(st)); return 1; }
    }
    int rc = 0;
    if (rank == 0) {
        if (!quiet) tlink_topo_print(t, stdout);
        if (wr) {
            if (!strcmp(wr, "-")) tlink_topo_write(t, stdout);
            else if (tlink_topo_save(t, wr, err, sizeof err)) { fprintf(stderr, "%s\n", err); rc = 1; }
        }
        if (coll >= 0) print_predictions(t, (tlink_coll)coll, b0, b1, f);
    }
    tlink_topo_free(t);
    if (comm) tlink_comm_destroy(comm);
    return rc;
}

/* ======================================================================= tile link-bench */

typedef struct bench_opts {
    long long b0, b1;
    double factor;
    int coll;
    tlink_dtype dt;
    tlink_op op;
    tlink_algo algo;
    int warmup, iters, root, check, inplace;
} bench_opts;

/* The value rank r puts at element i: small integers, exact in every dtype for the
 * reductions of a few ranks (prod: 1 or 2). */
static double bench_val(const bench_opts *o, int r, size_t i) {
    if (o->op == TLINK_PROD) return (double)(1 + ((size_t)r + i) % 2);
    return (double)(((size_t)r * 3 + i) % 5);
}

static void put_val(void *buf, size_t i, tlink_dtype dt, double v) {
    switch (dt) {
    case TLINK_F32: ((float *)buf)[i] = (float)v; break;
    case TLINK_F64: ((double *)buf)[i] = v; break;
    case TLINK_F16: ((uint16_t *)buf)[i] = tlink_f32_to_f16((float)v); break;
    case TLINK_BF16: ((uint16_t *)buf)[i] = tlink_f32_to_bf16((float)v); break;
    case TLINK_I32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case TLINK_I64: ((int64_t *)buf)[i] = (int64_t)v; break;
    case TLINK_U8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case TLINK_FP8_E4M3: ((uint8_t *)buf)[i] = tlink_f32_to_fp8_e4m3((float)v); break;
    case TLINK_FP8_E5M2: ((uint8_t *)buf)[i] = tlink_f32_to_fp8_e5m2((float)v); break;
    default: break;
    }
}

static double get_val(const void *buf, size_t i, tlink_dtype dt) {
    switch (dt) {
    case TLINK_F32: return ((const float *)buf)[i];
    case TLINK_F64: return ((const double *)buf)[i];
    case TLINK_F16: return tlink_f16_to_f32(((const uint16_t *)buf)[i]);
    case TLINK_BF16: return tlink_bf16_to_f32(((const uint16_t *)buf)[i]);
    case TLINK_I32: return ((const int32_t *)buf)[i];
    case TLINK_I64: return (double)((const int64_t *)buf)[i];
    case TLINK_U8: return ((const uint8_t *)buf)[i];
    case TLINK_FP8_E4M3: return tlink_fp8_e4m3_to_f32(((const uint8_t *)buf)[i]);
    case TLINK_FP8_E5M2: return tlink_fp8_e5m2_to_f32(((const uint8_t *)buf)[i]);
    default: return NAN;
    }
}

static int is_int_dtype(tlink_dtype dt) { return dt == TLINK_I32 || dt == TLINK_I64 || dt == TLINK_U8; }

/* Expected reduction of element (src index j) over ranks 0..n-1. */
static double expect_reduce(const bench_opts *o, int n, size_t j) {
    double acc = bench_val(o, 0, j);
    for (int r = 1; r < n; r++) {
        double v = bench_val(o, r, j);
        switch (o->op) {
        case TLINK_PROD: acc *= v; break;
        case TLINK_MIN: acc = v < acc ? v : acc; break;
        case TLINK_MAX: acc = v > acc ? v : acc; break;
        default: acc += v; break;
        }
    }
    if (o->op == TLINK_AVG) acc = is_int_dtype(o->dt) ? trunc(acc / n) : acc / n;
    return acc;
}

static int close_enough(tlink_dtype dt, double got, double want) {
    if (is_int_dtype(dt)) return got == want;
    double tol;
    switch (dt) {
    case TLINK_F64: tol = 1e-12; break;
    case TLINK_F32: tol = 1e-6; break;
    case TLINK_F16: tol = 2e-3; break;
    case TLINK_BF16: tol = 1.6e-2; break;
    case TLINK_FP8_E4M3: tol = 0.13; break;
    default: tol = 0.26; break; /* e5m2 */
    }
    return fabs(got - want) <= tol * (fabs(want) > 1 ? fabs(want) : 1);
}

/* Per-rank element counts for a size in bytes (nccl-tests conventions: allreduce, reduce,
 * broadcast: the buffer; allgather, alltoall: the receive buffer; reduce_scatter: the send
 * buffer). cnt = elements per block; send/recv = buffer lengths in elements. */
static void bench_counts(const bench_opts *o, int n, long long bytes, size_t *cnt, size_t *send, size_t *recv) {
    size_t es = tlink_dtype_size(o->dt);
    size_t total = (size_t)bytes / es;
    switch (o->coll) {
    case TLINK_COLL_ALLGATHER: *cnt = total / (size_t)n; *send = *cnt; *recv = *cnt * (size_t)n; break;
    case TLINK_COLL_REDUCE_SCATTER: *cnt = total / (size_t)n; *send = *cnt * (size_t)n; *recv = *cnt; break;
    case TLINK_COLL_ALLTOALL: *cnt = total / (size_t)n; *send = *recv = *cnt * (size_t)n; break;
    default: *cnt = *send = *recv = total; break;
    }
}

static double bus_factor(int coll, int n) {
    switch (coll) {
    case TLINK_COLL_ALLREDUCE: return 2.0 * (n - 1) / n;
    case TLINK_COLL_ALLGATHER:
    case TLINK_COLL_REDUCE_SCATTER:
    case TLINK_COLL_ALLTOALL: return (double)(n - 1) / n;
    default: return 1.0;
    }
}

static tlink_status bench_run(tlink_comm *c, const bench_opts *o, void *s, void *r, size_t cnt) {
    switch (o->coll) {
    case TLINK_COLL_ALLREDUCE: return tlink_allreduce(c, s, r, cnt, o->dt, o->op);
    case TLINK_COLL_REDUCE: return tlink_reduce(c, s, r, cnt, o->dt, o->op, o->root);
    case TLINK_COLL_BROADCAST: return tlink_broadcast(c, r, cnt, o->dt, o->root);
    case TLINK_COLL_ALLGATHER: return tlink_allgather(c, s, r, cnt, o->dt);
    case TLINK_COLL_REDUCE_SCATTER: return tlink_reduce_scatter(c, s, r, cnt, o->dt, o->op);
    case TLINK_COLL_ALLTOALL: return tlink_alltoall(c, s, r, cnt, o->dt);
    default: return TLINK_ERR_INVALID_ARG;
    }
}

/* Fills the send data (and, for in-place and broadcast, the receive buffer). Returns the
 * pointers to pass as send and receive buffers. */
static void bench_fill(const bench_opts *o, int rank, int n, void *sbuf, void *rbuf, size_t cnt, size_t scount,
                       void **sp, void **rp) {
    size_t es = tlink_dtype_size(o->dt);
    *sp = sbuf;
    *rp = rbuf;
    if (o->coll == TLINK_COLL_BROADCAST) {
        for (size_t i = 0; i < cnt; i++) put_val(rbuf, i, o->dt, rank == o->root ? bench_val(o, rank, i) : 0);
        return;
    }
    void *dst = sbuf;
    if (o->inplace) {
        /* allgather: my block inside the receive buffer; the others: the receive buffer */
        dst = o->coll == TLINK_COLL_ALLGATHER ? (char *)rbuf + (size_t)rank * cnt * es : rbuf;
        *sp = dst;
    }
    for (size_t i = 0; i < scount; i++) put_val(dst, i, o->dt, bench_val(o, rank, i));
    (void)n;
}

static long long bench_check(const bench_opts *o, int rank, int n, const void *rbuf, size_t cnt) {
    long long wrong = 0;
    switch (o->coll) {
    case TLINK_COLL_ALLREDUCE:
        for (size_t i = 0; i < cnt; i++) wrong += !close_enough(o->dt, get_val(rbuf, i, o->dt), expect_reduce(o, n, i));
        break;
    case TLINK_COLL_REDUCE:
        if (rank == o->root)
            for (size_t i = 0; i < cnt; i++) wrong += !close_enough(o->dt, get_val(rbuf, i, o->dt), expect_reduce(o, n, i));
        break;
    case TLINK_COLL_BROADCAST:
        for (size_t i = 0; i < cnt; i++) wrong += get_val(rbuf, i, o->dt) != bench_val(o, o->root, i);
        break;
    case TLINK_COLL_ALLGATHER:
        for (int r = 0; r < n; r++)
            for (size_t i = 0; i < cnt; i++) wrong += get_val(rbuf, (size_t)r * cnt + i, o->dt) != bench_val(o, r, i);
        break;
    case TLINK_COLL_REDUCE_SCATTER:
        for (size_t i = 0; i < cnt; i++)
            wrong += !close_enough(o->dt, get_val(rbuf, i, o->dt), expect_reduce(o, n, (size_t)rank * cnt + i));
        break;
    case TLINK_COLL_ALLTOALL:
        for (int r = 0; r < n; r++)
            for (size_t i = 0; i < cnt; i++)
                wrong += get_val(rbuf, (size_t)r * cnt + i, o->dt) != bench_val(o, r, (size_t)rank * cnt + i);
        break;
    default: break;
    }
    return wrong;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* --device cuda: the same table, on device buffers through tlink_gpu_*; time per iteration =
 * wall time of `iters` enqueued collectives and one stream sync, the slowest rank's. The
 * send data are written once for the largest size (values depend on the index only). */
static tlink_status bench_dev_run(tlink_gpu_comm *g, const bench_opts *o, void *s, void *r, size_t cnt,
                                  tlink_cuda_stream st) {
    switch (o->coll) {
    case TLINK_COLL_ALLREDUCE: return tlink_gpu_allreduce(g, s, r, cnt, o->dt, o->op, st);
    case TLINK_COLL_BROADCAST: return tlink_gpu_broadcast(g, s, r, cnt, o->dt, o->root, st);
    case TLINK_COLL_ALLGATHER: return tlink_gpu_allgather(g, s, r, cnt, o->dt, st);
    case TLINK_COLL_REDUCE_SCATTER: return tlink_gpu_reduce_scatter(g, s, r, cnt, o->dt, o->op, st);
    case TLINK_COLL_ALLTOALL: return tlink_gpu_alltoall(g, s, r, cnt, o->dt, st);
    default: return TLINK_ERR_UNSUPPORTED;
    }
}

static int bench_device(tlink_comm *c, bench_opts *o, const char *gpu_algo, long long check_max) {
    const char *cmd = "link-bench";
    int rank = tlink_comm_rank(c), n = tlink_comm_size(c);
    if (o->coll == TLINK_COLL_REDUCE) { if (rank == 0) cerr(cmd, "--device cuda: no device reduce (use allreduce)"); return 2; }
    if (o->inplace && o->coll != TLINK_COLL_ALLREDUCE) { if (rank == 0) cerr(cmd, "--device cuda: -I only for allreduce"); return 2; }
    tlink_gpu_comm *g = NULL;
    if (tlink_gpu_comm_init(c, NULL, &g)) { cerr(cmd, "rank %d: %s", rank, tlink_last_error(NULL)); return 1; }
    if (gpu_algo && tlink_gpu_set_algo(g, gpu_algo)) { cerr(cmd, "%s", tlink_gpu_last_error(g)); tlink_gpu_comm_destroy(g); return 2; }
    size_t es = tlink_dtype_size(o->dt), cnt, scount, rcount;
    bench_counts(o, n, o->b1, &cnt, &scount, &rcount);
    size_t sb = scount * es + 64, rb = rcount * es + 64;
    void *hs = calloc(1, sb), *hr = calloc(1, rb), *ds = NULL, *dr = NULL;
    tlink_cuda_stream stream = NULL;
    int rc = 0;
    if (!hs || !hr || tlink_gpu_malloc(g, sb, &ds) || tlink_gpu_malloc(g, rb, &dr) || tlink_gpu_stream_create(g, &stream)) {
        cerr(cmd, "rank %d: cannot allocate %zu + %zu bytes: %s", rank, sb, rb, tlink_gpu_last_error(g));
        rc = 1;
        goto out;
    }
    {
        bench_opts full = *o;
        full.inplace = 0;
        void *sp, *rp;
        /* broadcast: bench_fill writes the root's data into its second buffer */
        bench_fill(&full, rank, n, hs, o->coll == TLINK_COLL_BROADCAST ? hs : hr, cnt, scount, &sp, &rp);
        tlink_gpu_memcpy(g, ds, hs, scount * es);
        if (o->inplace) tlink_gpu_memcpy(g, dr, hs, scount * es);
    }
    if (rank == 0) {
        printf("# tile link-bench --device cuda: %s, %d rank%s, dtype %s, op %s, root %d, %s; GPU %d, link to rank %d: %s\n",
               tlink_coll_name((tlink_coll)o->coll), n, n == 1 ? "" : "s", tlink_dtype_name(o->dt), tlink_op_name(o->op),
               o->root, o->inplace ? "in place" : "out of place", tlink_gpu_comm_device(g), n > 1 ? 1 : 0,
               tlink_gpu_comm_link(g, n > 1 ? 1 : 0));
        printf("# warmup %d, iters %d; data checked up to %lld bytes\n#\n", o->warmup, o->iters, check_max);
        printf("# %12s %12s %8s %6s %5s %10s %9s %9s %8s  %-10s %10s\n", "size", "count", "type", "redop", "root", "time",
               "algbw", "busbw", "#wrong", "algo", "predicted");
        printf("# %12s %12s %8s %6s %5s %10s %9s %9s %8s  %-10s %10s\n", "(B)", "(elements)", "", "", "", "(us)", "(GB/s)",
               "(GB/s)", "", "", "(us)");
        fflush(stdout);
    }
    long long total_wrong = 0;
    double bw_sum = 0;
    int nsizes = 0;
    int has_op = o->coll == TLINK_COLL_ALLREDUCE || o->coll == TLINK_COLL_REDUCE_SCATTER;
    for (long long bytes = o->b0; bytes <= o->b1;) {
        bench_counts(o, n, bytes, &cnt, &scount, &rcount);
        long long eff = (long long)(o->coll == TLINK_COLL_REDUCE_SCATTER ? scount
                                    : o->coll == TLINK_COLL_ALLGATHER || o->coll == TLINK_COLL_ALLTOALL ? rcount : cnt) * (long long)es;
        void *sp = o->inplace ? dr : ds, *rp = dr;
        tlink_status st = TLINK_OK;
        for (int i = 0; i < o->warmup && !st; i++) st = bench_dev_run(g, o, sp, rp, cnt, stream);
        if (!st) st = tlink_gpu_sync(g, stream);
        if (!st) st = tlink_barrier(c);
        double t0 = now_s();
        for (int i = 0; i < o->iters && !st; i++) st = bench_dev_run(g, o, sp, rp, cnt, stream);
        if (!st) st = tlink_gpu_sync(g, stream);
        double dt = (now_s() - t0) / o->iters;
        long long wrong = 0;
        int checked = 0;
        if (!st && o->check && bytes <= check_max && !o->inplace) {
            checked = 1;
            memset(hr, 0, rcount * es);
            tlink_gpu_memcpy(g, dr, hr, rcount * es);
            st = bench_dev_run(g, o, ds, dr, cnt, stream);
            if (!st) st = tlink_gpu_sync(g, stream);
            if (!st) st = tlink_gpu_memcpy(g, hr, dr, rcount * es);
            if (!st) wrong = bench_check(o, rank, n, hr, cnt);
        }
        double tmax = dt;
        int64_t w64 = wrong;
        const char *why = st ? tlink_gpu_last_error(g) : NULL;
        if (st) { cerr(cmd, "rank %d: %s at %lld bytes: %s", rank, tlink_coll_name((tlink_coll)o->coll), bytes, why); rc = 1; break; }
        if (tlink_allreduce(c, &dt, &tmax, 1, TLINK_F64, TLINK_MAX) || tlink_allreduce(c, &w64, &w64, 1, TLINK_I64, TLINK_SUM)) {
            rc = 1;
            break;
        }
        if (rank == 0) {
            double us = tmax * 1e6, algbw = us > 0 ? (double)eff / (us * 1e3) : 0, busbw = algbw * bus_factor(o->coll, n);
            char wr[24];
            if (checked) snprintf(wr, sizeof wr, "%lld", (long long)w64);
            else snprintf(wr, sizeof wr, "N/A");
            const char *al = tlink_gpu_last_algo(g);
            printf("  %12lld %12lld %8s %6s %5d %10.2f %9.3f %9.3f %8s  %-10s %10.1f\n", eff, (long long)(eff / (long long)es),
                   tlink_dtype_name(o->dt), has_op ? tlink_op_name(o->op) : "none",
                   o->coll == TLINK_COLL_BROADCAST ? o->root : -1, us, algbw, busbw, wr, al[0] ? al : "-",
                   tlink_gpu_last_predicted_us(g));
            fflush(stdout);
            bw_sum += busbw;
        }
        total_wrong += w64;
        nsizes++;
        long long nb = (long long)((double)bytes * o->factor);
        if (nb <= bytes) nb = bytes + (bytes == 0 ? 1 : bytes);
        if (o->factor <= 1) break;
        bytes = nb;
    }
    if (rank == 0 && rc == 0) {
        printf("# Out of bounds values : %lld %s\n", total_wrong, total_wrong ? "FAILED" : "OK");
        printf("# Avg bus bandwidth    : %g\n", nsizes ? bw_sum / nsizes : 0.0);
    }
    if (total_wrong && !rc) rc = 1;
out:
    if (stream) tlink_gpu_stream_destroy(g, stream);
    if (ds) tlink_gpu_free(g, ds);
    if (dr) tlink_gpu_free(g, dr);
    free(hs);
    free(hr);
    tlink_gpu_comm_destroy(g);
    return rc;
}

static void bench_usage(FILE *f) {
    fprintf(f,
        "usage: tile link-bench [-n N] [options]\n"
        "Collective benchmark in the shape of nccl-tests. Run it under a launcher\n"
        "(tile launch -n 4 -- tile link-bench ..., mpirun, torchrun, srun) or with -n N to\n"
        "start N local ranks itself.\n"
        "  -b SIZE    smallest size in bytes (8; K/M/G suffixes)      -e SIZE  largest (32M)\n"
        "  -f F       size factor (2)                                 -n N     self-launch N ranks\n"
        "  -c COLL    allreduce|allgather|reduce_scatter|broadcast|alltoall|reduce (allreduce)\n"
        "  -d DTYPE   f32 f64 f16 bf16 i32 i64 u8 fp8_e4m3 fp8_e5m2 (f32)\n"
        "  -o OP      sum prod min max avg (sum)                      -r ROOT  root rank (0)\n"
        "  -a ALGO    auto ring recursive_doubling rabenseifner binomial_tree double_binary_tree\n"
        "             hierarchical pairwise (auto)\n"
        "  -w N       warm-up iterations (5)                          -i N     timed iterations (20)\n"
        "  -k 0|1     check the data (1)                              -I       in place\n"
        "  --device cuda   device buffers and TileLink's device collectives (one GPU per rank,\n"
        "             local rank %% GPU count); -a oneshot|twoshot|ce forces the allreduce algorithm,\n"
        "             -a direct|scatter|chain the broadcast algorithm, -a ring the ring (allreduce,\n"
        "             reduce_scatter, allgather; broadcast: chain);\n"
        "             --check-max SIZE: check the data only up to SIZE bytes (256M)\n"
        "Sizes are per rank as in nccl-tests (allreduce/broadcast/reduce: the buffer; allgather,\n"
        "alltoall: the receive buffer; reduce_scatter: the send buffer). busbw = algbw x\n"
        "2(n-1)/n (allreduce), (n-1)/n (allgather, reduce_scatter, alltoall), 1 (broadcast, reduce).\n"
        "Exit status 1 when any element is wrong.\n");
}

/* -n N: run ourselves under the launcher, without the -n option. */
static int bench_self_launch(int argc, char **argv, int n) {
    char exe[PATH_MAX];
    ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (l <= 0) { cerr("link-bench", "cannot find my own executable: %s", strerror(errno)); return 2; }
    exe[l] = 0;
    char **av = calloc((size_t)argc + 2, sizeof *av);
    if (!av) return 2;
    int k = 0;
    av[k++] = exe;
    av[k++] = argv[0];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n")) { i++; continue; }
        av[k++] = argv[i];
    }
    av[k] = NULL;
    tlink_launch_options lo;
    tlink_launch_options_init(&lo);
    lo.nranks = n;
    lo.prefix = 0; /* only rank 0 prints the table; errors of other ranks still show */
    lo.argv = av;
    int rc = tlink_launch_run(&lo);
    free(av);
    return rc;
}

int tile_cmd_link_bench(int argc, char **argv) {
    const char *cmd = "link-bench";
    bench_opts o = {8, 32LL << 20, 2.0, TLINK_COLL_ALLREDUCE, TLINK_F32, TLINK_SUM, TLINK_ALGO_AUTO, 5, 20, 0, 1, 0};
    long self_n = 0, v;
    int device_cuda = 0;
    long long check_max = 256LL << 20;
    const char *gpu_algo = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { bench_usage(stdout); return 0; }
        if (!strcmp(a, "-I") || !strcmp(a, "--in-place")) { o.inplace = 1; continue; }
        if (!strcmp(a, "--device")) {
            if (!next || (strcmp(next, "cuda") && strcmp(next, "cpu"))) { cerr(cmd, "--device: expected cuda or cpu"); return 2; }
            device_cuda = !strcmp(next, "cuda");
            i++;
            continue;
        }
        if (!strcmp(a, "--check-max")) {
            long long s2 = next ? parse_size(next) : -1;
            if (s2 < 0) { cerr(cmd, "--check-max: bad size '%s'", next ? next : ""); return 2; }
            check_max = s2;
            i++;
            continue;
        }
        if (!strcmp(a, "-a") && next && tlink_algo_from_name(next) < 0 &&
            (!strcmp(next, "oneshot") || !strcmp(next, "twoshot") || !strcmp(next, "ce") || !strcmp(next, "direct") ||
             !strcmp(next, "scatter") || !strcmp(next, "chain"))) {
            gpu_algo = next;
            i++;
            continue;
        }
        if (a[0] != '-' || !a[1] || a[2] || !strchr("befncdoarwik", a[1])) {
            cerr(cmd, "unknown option '%s' (see tile link-bench --help)", a);
            return 2;
        }
        if (!next) { cerr(cmd, "%s needs a value", a); return 2; }
        i++;
        switch (a[1]) {
        case 'b':
        case 'e': {
            long long s = parse_size(next);
            if (s < 0) { cerr(cmd, "%s: bad size '%s' (e.g. 8, 1K, 256M)", a, next); return 2; }
            if (a[1] == 'b') o.b0 = s; else o.b1 = s;
            break;
        }
        case 'f': {
            char *e;
            o.factor = strtod(next, &e);
            if (*e || !(o.factor >= 1) || o.factor > 1024) { cerr(cmd, "-f: expected a factor >= 1, got '%s'", next); return 2; }
            break;
        }
        case 'n': if (parse_int(cmd, a, next, 1, 4096, &self_n)) return 2; break;
        case 'c':
            o.coll = coll_from_name(next);
            if (o.coll < 0 || o.coll == TLINK_COLL_ALLTOALLV || o.coll == TLINK_COLL_BARRIER || o.coll == TLINK_COLL_SENDRECV) {
                cerr(cmd, "-c: unknown collective '%s' (allreduce, allgather, reduce_scatter, broadcast, alltoall, reduce)", next);
                return 2;
            }
            break;
        case 'd': {
            int d = tlink_dtype_from_name(next);
            if (d < 0) { cerr(cmd, "-d: unknown dtype '%s'", next); return 2; }
            o.dt = (tlink_dtype)d;
            break;
        }
        case 'o': {
            int op = tlink_op_from_name(next);
            if (op < 0) { cerr(cmd, "-o: unknown op '%s' (sum, prod, min, max, avg)", next); return 2; }
            o.op = (tlink_op)op;
            break;
        }
        case 'a': {
            int al = tlink_algo_from_name(next);
            if (al < 0) { cerr(cmd, "-a: unknown algorithm '%s'", next); return 2; }
            o.algo = (tlink_algo)al;
            break;
        }
        case 'r': if (parse_int(cmd, a, next, 0, 1 << 20, &v)) return 2; o.root = (int)v; break;
        case 'w': if (parse_int(cmd, a, next, 0, 1000000, &v)) return 2; o.warmup = (int)v; break;
        case 'i': if (parse_int(cmd, a, next, 1, 1000000, &v)) return 2; o.iters = (int)v; break;
        case 'k': if (parse_int(cmd, a, next, 0, 1, &v)) return 2; o.check = (int)v; break;
        default: break;
        }
    }
    if (o.b0 > o.b1) { cerr(cmd, "-b %lld is larger than -e %lld", o.b0, o.b1); return 2; }
    if (o.inplace && o.coll == TLINK_COLL_ALLTOALL) { cerr(cmd, "alltoall has no in-place form"); return 2; }
    if (self_n > 0) {
        const char *r = tb_env_raw(TB_K_RANK), *w = tb_env_raw(TB_K_WORLD_SIZE);
        if (!(r && w)) return bench_self_launch(argc, argv, (int)self_n);
        if (atoi(w) != self_n) {
            cerr(cmd, "-n %ld but this process is one of WORLD_SIZE=%s ranks already", self_n, w);
            return 2;
        }
    }

    tlink_comm *c = NULL;
    tlink_status st = tlink_comm_init_env(&c);
    if (st == TLINK_ERR_BOOTSTRAP && !tb_env_raw(TB_K_RANK) && !tb_env_raw(TB_K_OMPI_COMM_WORLD_RANK) &&
        !tb_env_raw(TB_K_PMI_RANK) && !tb_env_raw(TB_K_SLURM_PROCID) && !tb_env_raw(TB_K_TLINK_RANK)) {
        /* no launcher at all: one rank on its own */
        st = tlink_comm_init(&c, 0, 1, NULL);
    }
    if (st) { cerr(cmd, "cannot create the communicator: %s", tlink_last_error(NULL)); return 1; }
    int rank = tlink_comm_rank(c), n = tlink_comm_size(c);
    if (o.root >= n) {
        if (rank == 0) cerr(cmd, "-r %d: no such rank (%d ranks)", o.root, n);
        tlink_comm_destroy(c);
        return 2;
    }
    if (o.algo != TLINK_ALGO_AUTO) tlink_comm_set_algo(c, (tlink_coll)o.coll, o.algo);
    if (device_cuda) {
        int rc2 = bench_device(c, &o, gpu_algo, check_max);
        tlink_status st2 = tlink_comm_destroy(c);
        return rc2 ? rc2 : st2 ? 1 : 0;
    }

    size_t es = tlink_dtype_size(o.dt);
    size_t cnt, scount, rcount;
    bench_counts(&o, n, o.b1, &cnt, &scount, &rcount);
    /* in place, reduce_scatter's input lives in the receive buffer: size both for the larger */
    if (rcount < scount) rcount = scount;
    void *sbuf = malloc(scount * es + 64), *rbuf = malloc(rcount * es + 64);
    if (!sbuf || !rbuf) {
        cerr(cmd, "rank %d: out of memory for %lld-byte buffers", rank, o.b1);
        free(sbuf);
        free(rbuf);
        tlink_comm_destroy(c);
        return 1;
    }
    memset(sbuf, 0, scount * es + 64);
    memset(rbuf, 0, rcount * es + 64);

    if (rank == 0) {
        int nshm = 0, ntcp = 0;
        for (int p = 0; p < n; p++) {
            const char *t = tlink_comm_transport(c, p);
            nshm += !strcmp(t, "shm");
            ntcp += !strcmp(t, "tcp");
        }
        printf("# tile link-bench: %s, %d rank%s on %d host%s, dtype %s, op %s, root %d, algo %s, %s\n",
               tlink_coll_name((tlink_coll)o.coll), n, n == 1 ? "" : "s", tlink_comm_host_count(c),
               tlink_comm_host_count(c) == 1 ? "" : "s", tlink_dtype_name(o.dt), tlink_op_name(o.op), o.root,
               tlink_algo_name(o.algo), o.inplace ? "in place" : "out of place");
        printf("# warmup %d, iters %d; rank 0 reaches %d peer%s over shm, %d over tcp\n", o.warmup, o.iters, nshm,
               nshm == 1 ? "" : "s", ntcp);
        printf("#\n");
        printf("# %12s %12s %8s %6s %5s %10s %9s %9s %8s  %-18s %10s\n", "size", "count", "type", "redop", "root",
               "time", "algbw", "busbw", "#wrong", "algo", "predicted");
        printf("# %12s %12s %8s %6s %5s %10s %9s %9s %8s  %-18s %10s\n", "(B)", "(elements)", "", "", "", "(us)",
               "(GB/s)", "(GB/s)", "", "", "(us)");
        fflush(stdout);
    }

    long long total_wrong = 0;
    double bw_sum = 0;
    int nsizes = 0, rc = 0;
    int has_op = o.coll == TLINK_COLL_ALLREDUCE || o.coll == TLINK_COLL_REDUCE || o.coll == TLINK_COLL_REDUCE_SCATTER;
    int has_root = o.coll == TLINK_COLL_REDUCE || o.coll == TLINK_COLL_BROADCAST;
    for (long long bytes = o.b0; bytes <= o.b1;) {
        bench_counts(&o, n, bytes, &cnt, &scount, &rcount);
        long long eff = (long long)(o.coll == TLINK_COLL_REDUCE_SCATTER ? scount : o.coll == TLINK_COLL_ALLGATHER || o.coll == TLINK_COLL_ALLTOALL ? rcount : cnt) * (long long)es;
        void *sp, *rp;
        bench_fill(&o, rank, n, sbuf, rbuf, cnt, scount, &sp, &rp);
        for (int i = 0; i < o.warmup && !st; i++) st = bench_run(c, &o, sp, rp, cnt);
        if (!st) st = tlink_barrier(c);
        double t0 = now_s();
        for (int i = 0; i < o.iters && !st; i++) st = bench_run(c, &o, sp, rp, cnt);
        double dt = (now_s() - t0) / o.iters;
        const char *algo = tlink_last_algo(c);
        char algo_name[32];
        snprintf(algo_name, sizeof algo_name, "%s", algo && algo[0] ? algo : "-");
        double pred = tlink_last_predicted_us(c);
        long long wrong = 0;
        if (!st && o.check) {
            bench_fill(&o, rank, n, sbuf, rbuf, cnt, scount, &sp, &rp);
            st = bench_run(c, &o, sp, rp, cnt);
            if (!st) wrong = bench_check(&o, rank, n, rp, cnt);
        }
        double tmax = dt;
        int64_t w64 = wrong;
        if (!st) st = tlink_allreduce(c, &dt, &tmax, 1, TLINK_F64, TLINK_MAX);
        if (!st) st = tlink_allreduce(c, &w64, &w64, 1, TLINK_I64, TLINK_SUM);
        if (st) {
            cerr(cmd, "rank %d: %s at %lld bytes: %s", rank, tlink_coll_name((tlink_coll)o.coll), bytes,
                 tlink_last_error(c));
            rc = 1;
            break;
        }
        if (rank == 0) {
            double us = tmax * 1e6;
            double algbw = us > 0 ? (double)eff / (us * 1e3) : 0;
            double busbw = algbw * bus_factor(o.coll, n);
            char wr[24];
            if (o.check) snprintf(wr, sizeof wr, "%lld", (long long)w64);
            else snprintf(wr, sizeof wr, "N/A");
            printf("  %12lld %12lld %8s %6s %5d %10.2f %9.3f %9.3f %8s  %-18s %10.1f\n", eff,
                   (long long)(eff / (long long)es), tlink_dtype_name(o.dt), has_op ? tlink_op_name(o.op) : "none",
                   has_root ? o.root : -1, us, algbw, busbw, wr, algo_name, pred);
            fflush(stdout);
            bw_sum += busbw;
        }
        total_wrong += w64;
        nsizes++;
        long long nb = (long long)((double)bytes * o.factor);
        if (nb <= bytes) nb = bytes + (bytes == 0 ? 1 : bytes);
        if (o.factor <= 1) break;
        bytes = nb;
    }
    if (rank == 0 && rc == 0) {
        printf("# Out of bounds values : %lld %s\n", total_wrong, total_wrong ? "FAILED" : "OK");
        printf("# Avg bus bandwidth    : %g\n", nsizes ? bw_sum / nsizes : 0.0);
    }
    free(sbuf);
    free(rbuf);
    st = tlink_comm_destroy(c);
    if (rc == 0 && total_wrong) rc = 1;
    return rc;
}

/* ======================================================================= tile link-status */

/* The variables of process pid that say where its store is and how to authenticate: they are
 * set in this process, so the address is found exactly as the rank found it. */
static int import_env(const char *cmd, long pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/environ", pid);
    FILE *f = fopen(path, "re");
    if (!f) {
        cerr(cmd, "--pid %ld: cannot read %s: %s (a process of another user, or gone)", pid, path, strerror(errno));
        return -1;
    }
    static const char *keep[] = {"TLINK_", "TILE_", "MASTER_ADDR=", "MASTER_PORT=", "RANK=", "WORLD_SIZE=",
                                 "LOCAL_RANK=", "LOCAL_WORLD_SIZE=", "OMPI_", "PMI_", "PMIX_", "MPI_LOCAL", "SLURM_"};
    /* the target's view replaces ours for these */
    static const char *drop[] = {"TLINK_SECRET", "TLINK_SECRET_FILE", "TLINK_STORE", "TILE_STORE", "MASTER_ADDR",
                                 "MASTER_PORT", "TLINK_STORE_PREFIX", "TLINK_JOB_ID"};
    for (size_t i = 0; i < sizeof drop / sizeof drop[0]; i++) unsetenv(drop[i]);
    char *buf = NULL;
    size_t cap = 0, n = 0;
    int ch;
    int found = 0;
    while ((ch = fgetc(f)) != EOF) {
        if (n + 1 >= cap) {
            cap = cap ? cap * 2 : 4096;
            char *nb = realloc(buf, cap);
            if (!nb) break;
            buf = nb;
        }
        buf[n++] = (char)ch;
        if (ch) continue;
        for (size_t k = 0; k < sizeof keep / sizeof keep[0]; k++) {
            if (strncmp(buf, keep[k], strlen(keep[k]))) continue;
            char *eq = strchr(buf, '=');
            if (eq) {
                *eq = 0;
                setenv(buf, eq + 1, 1);
                found = 1;
            }
            break;
        }
        n = 0;
    }
    fclose(f);
    free(buf);
    if (!found) {
        cerr(cmd, "--pid %ld: its environment names no TileLink job (no RANK, TLINK_* or launcher variables)", pid);
        return -1;
    }
    return 0;
}

int tile_cmd_link_status(int argc, char **argv) {
    const char *cmd = "link-status", *store = NULL, *prefix = NULL;
    double timeout = 5;
    long pid = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("usage: tile link-status [--pid PID | --store HOST:PORT] [--prefix P] [-t SECONDS]\n"
                   "Asks a running TileLink job, through its store, what every rank is doing: the call,\n"
                   "its number, the algorithm and step, the rank it waits on and for how long; names ranks\n"
                   "that are behind the others or do not answer.\n"
                   "  --pid PID         a rank of the job (this user's): its store address, key prefix and\n"
                   "                    secret are read from /proc/PID/environ\n"
                   "  --store HOST:PORT the store (default: from the environment, as a rank finds it);\n"
                   "                    authenticates with TLINK_SECRET / TLINK_SECRET_FILE\n"
                   "  --prefix P        key namespace (TLINK_STORE_PREFIX or tlink: rank 0's newest\n"
                   "                    communicator) or a communicator's prefix (tlink/3)\n"
                   "  -t SECONDS        how long to wait for the answers (5)\n"
                   "Exit status: 0 every rank answered and none is behind, 1 the report names a problem,\n"
                   "2 usage, 3 no job found or the store unreachable.\n");
            return 0;
        }
        if (!strcmp(a, "--store") && next) { store = next; i++; }
        else if (!strcmp(a, "--prefix") && next) { prefix = next; i++; }
        else if (!strcmp(a, "--pid") && next) {
            if (parse_int(cmd, a, next, 1, 1L << 30, &pid)) return 2;
            i++;
        } else if (!strcmp(a, "-t") && next) {
            char *e;
            timeout = strtod(next, &e);
            if (e == next || *e || !(timeout > 0) || timeout > 3600) { cerr(cmd, "-t: bad timeout '%s'", next); return 2; }
            i++;
        } else {
            cerr(cmd, "unknown option or missing value '%s' (see tile link-status --help)", a);
            return 2;
        }
    }
    if (pid && store) { cerr(cmd, "give --pid or --store, not both"); return 2; }
    if (pid && import_env(cmd, pid)) return 2;
    char addr[300];
    if (store) {
        snprintf(addr, sizeof addr, "%s", store);
    } else {
        tlink_env_info e;
        tlink_env_parse(&e);
        snprintf(addr, sizeof addr, "%s", e.store_addr);
        if (e.size > 0) tl_local_store_addr(addr, sizeof addr, e.size); /* as the ranks of an all-local job */
    }
    enum { MAXR = 65536 };
    tlink_rank_status *st = calloc(MAXR, sizeof *st);
    if (!st) { cerr(cmd, "out of memory"); return 3; }
    int n = 0;
    char cp[200] = "";
    tlink_status rc = tlink_job_status(addr, prefix, timeout, st, MAXR, &n, cp, sizeof cp);
    if (rc) {
        cerr(cmd, "%s", tlink_last_error(NULL));
        free(st);
        return 3;
    }
    if (n > MAXR) n = MAXR;
    size_t need = tlink_status_report(st, n, NULL, 0) + 1;
    char *rep = malloc(need);
    if (!rep) { free(st); return 3; }
    tlink_status_report(st, n, rep, need);
    printf("job %s at %s: %d rank%s\n%s", cp, addr, n, n == 1 ? "" : "s", rep);
    int problem = strstr(rep, " is behind") || strstr(rep, " are behind") || strstr(rep, "did not answer") ||
                  strstr(rep, "another call");
    free(rep);
    free(st);
    return problem ? 1 : 0;
}
