/* test_gpu.c — TileLink's device collectives (label link-gpu).
 *   test_gpu nvrtc          the device kernels (hand-written and TileLang-generated) compile
 *                           with NVRTC for sm_90a; no GPU needed (77: no NVRTC)
 *   test_gpu args           argument errors name the argument; no GPU needed
 *   test_gpu coll N         N ranks (forked; they share the GPUs, rank r on GPU r % count):
 *                           every collective x dtypes x ops x algorithms x sizes, several
 *                           operations in flight on one stream before a single sync; checked
 *                           against values computed on the host (77: no GPU)
 *   test_gpu fault          rank 1 never joins a collective: rank 0 gets TLINK_ERR_PEER_FAILED
 *                           naming rank 1 within the timeout, no hang (77: no GPU)
 *   test_gpu model          the cost model's choices and ring order on given link matrices
 *                           (NVSwitch-like, a ring of NVLinks with PCIe between the others); no GPU */
#include "tl_launch.h"
#include "tl_internal.h" /* the pure cost model (tl_gpu_model) */

#include <math.h>
#include <stdint.h>

#define SKIP 77
static int g_rank, g_fail;
#define FAILF(...)                                                                                              \
    do {                                                                                                        \
        if (g_fail++ < 12) { fprintf(stderr, "rank %d: ", g_rank); fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } \
    } while (0)

/* whether a GPU is usable, asked in a child so that this process never initialises CUDA
 * before fork() */
static int gpu_present(char *why, size_t len) {
    int fd[2];
    if (pipe(fd)) return 0;
    pid_t p = fork();
    if (p == 0) {
        char w[256] = "";
        int ok = tlink_gpu_available(w, sizeof w);
        if (write(fd[1], w, strlen(w) + 1) < 0) _exit(2);
        _exit(ok ? 0 : 1);
    }
    close(fd[1]);
    ssize_t k = read(fd[0], why, len - 1);
    why[k > 0 ? k : 0] = 0;
    close(fd[0]);
    int st = 0;
    waitpid(p, &st, 0);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* ---------- values ---------- */
static double val(tlink_op op, int r, size_t i) {
    if (op == TLINK_PROD) return (double)(1 + ((size_t)r + i) % 2);
    return (double)(((size_t)r * 3 + i * 7) % 5);
}
static void put(void *b, tlink_dtype dt, size_t i, double v) {
    switch (dt) {
    case TLINK_F32: ((float *)b)[i] = (float)v; break;
    case TLINK_F64: ((double *)b)[i] = v; break;
    case TLINK_F16: ((uint16_t *)b)[i] = tlink_f32_to_f16((float)v); break;
    case TLINK_BF16: ((uint16_t *)b)[i] = tlink_f32_to_bf16((float)v); break;
    case TLINK_FP8_E4M3: ((uint8_t *)b)[i] = tlink_f32_to_fp8_e4m3((float)v); break;
    case TLINK_FP8_E5M2: ((uint8_t *)b)[i] = tlink_f32_to_fp8_e5m2((float)v); break;
    case TLINK_I32: ((int32_t *)b)[i] = (int32_t)v; break;
    case TLINK_I64: ((int64_t *)b)[i] = (int64_t)v; break;
    case TLINK_U8: ((uint8_t *)b)[i] = (uint8_t)v; break;
    default: break;
    }
}
static double get(const void *b, tlink_dtype dt, size_t i) {
    switch (dt) {
    case TLINK_F32: return ((const float *)b)[i];
    case TLINK_F64: return ((const double *)b)[i];
    case TLINK_F16: return tlink_f16_to_f32(((const uint16_t *)b)[i]);
    case TLINK_BF16: return tlink_bf16_to_f32(((const uint16_t *)b)[i]);
    case TLINK_FP8_E4M3: return tlink_fp8_e4m3_to_f32(((const uint8_t *)b)[i]);
    case TLINK_FP8_E5M2: return tlink_fp8_e5m2_to_f32(((const uint8_t *)b)[i]);
    case TLINK_I32: return ((const int32_t *)b)[i];
    case TLINK_I64: return (double)((const int64_t *)b)[i];
    case TLINK_U8: return ((const uint8_t *)b)[i];
    default: return 0;
    }
}
static double expect(tlink_op op, tlink_dtype dt, int n, size_t i) {
    double a = val(op, 0, i);
    for (int r = 1; r < n; r++) {
        double v = val(op, r, i);
        switch (op) {
        case TLINK_PROD: a *= v; break;
        case TLINK_MIN: a = v < a ? v : a; break;
        case TLINK_MAX: a = v > a ? v : a; break;
        default: a += v; break;
        }
    }
    if (op == TLINK_AVG) a = (dt == TLINK_I32 || dt == TLINK_I64 || dt == TLINK_U8) ? floor(a / n) : a / n;
    return a;
}
static int close_to(tlink_dtype dt, double got, double want) {
    double tol = dt == TLINK_FP8_E4M3 || dt == TLINK_FP8_E5M2 ? 0.13 : dt == TLINK_BF16 ? 0.01 : dt == TLINK_F16 ? 0.002 : 1e-6;
    if (dt == TLINK_I32 || dt == TLINK_I64 || dt == TLINK_U8) return got == want;
    return fabs(got - want) <= tol * fmax(1.0, fabs(want));
}

/* ---------- one collective, checked ---------- */
typedef struct job {
    tlink_coll coll;
    tlink_dtype dt;
    tlink_op op;
    size_t count;
    int root, inplace;
    void *dsend, *drecv;   /* device */
    size_t sbytes, rbytes;
} job;

static int g_size;
static tlink_gpu_comm *g_gc;

static void job_prepare(job *j) {
    size_t es = tlink_dtype_size(j->dt), n = (size_t)g_size, c = j->count;
    size_t sc = c, rc = c;
    if (j->coll == TLINK_COLL_ALLGATHER) rc = c * n;
    if (j->coll == TLINK_COLL_REDUCE_SCATTER) sc = c * n;
    if (j->coll == TLINK_COLL_ALLTOALL) sc = rc = c * n;
    j->sbytes = sc * es;
    j->rbytes = rc * es;
    char *hs = calloc(sc + 1, es), *hr = calloc(rc + 1, es);
    for (size_t i = 0; i < sc; i++) put(hs, j->dt, i, val(j->op, g_rank, i));
    for (size_t i = 0; i < rc; i++) put(hr, j->dt, i, 99);
    if (tlink_gpu_malloc(g_gc, j->sbytes + 64, &j->dsend) || tlink_gpu_malloc(g_gc, j->rbytes + 64, &j->drecv))
        FAILF("malloc: %s", tlink_gpu_last_error(g_gc));
    tlink_gpu_memcpy(g_gc, j->drecv, hr, j->rbytes);
    if (j->inplace && (j->coll == TLINK_COLL_ALLREDUCE || j->coll == TLINK_COLL_BROADCAST)) tlink_gpu_memcpy(g_gc, j->drecv, hs, j->sbytes);
    else if (j->inplace && j->coll == TLINK_COLL_ALLGATHER) tlink_gpu_memcpy(g_gc, (char *)j->drecv + (size_t)g_rank * j->sbytes, hs, j->sbytes);
    else tlink_gpu_memcpy(g_gc, j->dsend, hs, j->sbytes);
    free(hs);
    free(hr);
}

static tlink_status job_run(job *j, tlink_cuda_stream s) {
    void *sb = j->inplace ? j->drecv : j->dsend;
    switch (j->coll) {
    case TLINK_COLL_ALLREDUCE: return tlink_gpu_allreduce(g_gc, sb, j->drecv, j->count, j->dt, j->op, s);
    case TLINK_COLL_REDUCE_SCATTER: return tlink_gpu_reduce_scatter(g_gc, j->dsend, j->drecv, j->count, j->dt, j->op, s);
    case TLINK_COLL_ALLGATHER:
        return tlink_gpu_allgather(g_gc, j->inplace ? (char *)j->drecv + (size_t)g_rank * j->sbytes : j->dsend, j->drecv, j->count,
                                   j->dt, s);
    case TLINK_COLL_BROADCAST: return tlink_gpu_broadcast(g_gc, sb, j->drecv, j->count, j->dt, j->root, s);
    case TLINK_COLL_ALLTOALL: return tlink_gpu_alltoall(g_gc, j->dsend, j->drecv, j->count, j->dt, s);
    default: return TLINK_ERR_INVALID_ARG;
    }
}

static void job_check(job *j, const char *algo) {
    size_t es = tlink_dtype_size(j->dt), n = (size_t)g_size, c = j->count;
    char *hr = calloc(j->rbytes + es, 1);
    tlink_gpu_memcpy(g_gc, hr, j->drecv, j->rbytes);
    long bad = 0;
    size_t first = 0;
    double got0 = 0, want0 = 0;
    for (size_t i = 0; i < j->rbytes / es; i++) {
        double want;
        switch (j->coll) {
        case TLINK_COLL_ALLREDUCE: want = expect(j->op, j->dt, g_size, i); break;
        case TLINK_COLL_REDUCE_SCATTER: want = expect(j->op, j->dt, g_size, (size_t)g_rank * c + i); break;
        case TLINK_COLL_ALLGATHER: want = val(j->op, (int)(i / c), i % c); break;
        case TLINK_COLL_BROADCAST: want = val(j->op, j->root, i); break;
        case TLINK_COLL_ALLTOALL: want = val(j->op, (int)(i / c), (size_t)g_rank * c + i % c); break;
        default: want = 0;
        }
        double got = get(hr, j->dt, i);
        if (!close_to(j->dt, got, want)) {
            if (!bad) { first = i; got0 = got; want0 = want; }
            bad++;
        }
    }
    if (bad)
        FAILF("%s %s %s count %zu algo %s%s: %ld wrong, first at %zu: got %g want %g", tlink_coll_name(j->coll),
              tlink_dtype_name(j->dt), tlink_op_name(j->op), c, algo, j->inplace ? " in place" : "", bad, first, got0, want0);
    (void)n;
    free(hr);
    tlink_gpu_free(g_gc, j->dsend);
    tlink_gpu_free(g_gc, j->drecv);
}

static int coll_main(int rank, int size, const char *addr, void *arg) {
    (void)arg;
    g_rank = rank;
    g_size = size;
    tlink_comm *c;
    if (tlt_init(&c, rank, size, addr)) { fprintf(stderr, "rank %d: init: %s\n", rank, tlink_last_error(NULL)); return 1; }
    tlink_comm_set_timeout(c, 60);
    /* small slots and chunks, few blocks: many rounds per operation, slots reused */
    tlink_gpu_config cfg = {.device = -1, .slot_bytes = 8192, .ce_chunk_bytes = 65536, .blocks = 4, .threads = 256};
    if (tlink_gpu_comm_init(c, &cfg, &g_gc)) {
        fprintf(stderr, "rank %d: gpu init: %s\n", rank, tlink_last_error(NULL));
        tlink_comm_destroy(c);
        return 1;
    }
    if (rank == 0)
        printf("%d ranks; rank 0 on GPU %d, link to rank 1: %s\n", size, tlink_gpu_comm_device(g_gc),
               size > 1 ? tlink_gpu_comm_link(g_gc, 1) : "-");
    tlink_cuda_stream s;
    if (tlink_gpu_stream_create(g_gc, &s)) FAILF("stream: %s", tlink_gpu_last_error(g_gc));
    const size_t sizes[] = {0, 1, 1023, 70001};
    const char *algos[] = {"oneshot", "twoshot", "ce", "ring"};
    const int nalgos = 4;
    struct { tlink_dtype dt; tlink_op op; } ar[] = {
        {TLINK_F32, TLINK_SUM}, {TLINK_BF16, TLINK_SUM}, {TLINK_F16, TLINK_AVG}, {TLINK_FP8_E4M3, TLINK_SUM},
        {TLINK_I32, TLINK_MAX}, {TLINK_F32, TLINK_PROD}, {TLINK_U8, TLINK_MIN}, {TLINK_F64, TLINK_SUM},
        {TLINK_I64, TLINK_AVG},
    };
    int nar = sizeof ar / sizeof ar[0];
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        /* every allreduce variant of this size in flight on one stream, then one sync */
        job jobs[96];
        const char *jal[96];
        int nj = 0;
        for (int a = 0; a < nalgos; a++) {
            tlink_gpu_set_algo(g_gc, algos[a]);
            for (int k = 0; k < nar; k++) {
                job *j = &jobs[nj];
                memset(j, 0, sizeof *j);
                j->coll = TLINK_COLL_ALLREDUCE;
                j->dt = ar[k].dt;
                j->op = ar[k].op;
                j->count = sizes[si];
                j->inplace = k % 2;
                job_prepare(j);
                if (job_run(j, s)) FAILF("allreduce: %s", tlink_gpu_last_error(g_gc));
                jal[nj++] = tlink_gpu_last_algo(g_gc);
                if (sizes[si] && size > 1 && a != 2 && strcmp(jal[nj - 1], algos[a]))
                    FAILF("allreduce forced %s ran %s", algos[a], jal[nj - 1]);
            }
        }
        tlink_gpu_set_algo(g_gc, "auto");
        tlink_coll others[] = {TLINK_COLL_REDUCE_SCATTER, TLINK_COLL_ALLGATHER, TLINK_COLL_BROADCAST, TLINK_COLL_ALLTOALL};
        tlink_dtype odt[] = {TLINK_F32, TLINK_BF16, TLINK_FP8_E5M2};
        for (int o = 0; o < 4; o++)
            for (int d = 0; d < 3; d++) {
                job *j = &jobs[nj];
                memset(j, 0, sizeof *j);
                j->coll = others[o];
                j->dt = odt[d];
                j->op = TLINK_SUM;
                j->count = sizes[si];
                j->root = (d + 1) % size;
                job_prepare(j);
                if (job_run(j, s)) FAILF("%s: %s", tlink_coll_name(j->coll), tlink_gpu_last_error(g_gc));
                jal[nj++] = tlink_gpu_last_algo(g_gc);
            }
        /* reduce_scatter and allgather on the ring (allgather in place once) */
        if (tlink_gpu_set_algo(g_gc, "ring")) FAILF("set_algo ring: %s", tlink_gpu_last_error(g_gc));
        for (int o = 0; o < 2; o++)
            for (int d = 0; d < 3; d++) {
                job *j = &jobs[nj];
                memset(j, 0, sizeof *j);
                j->coll = o ? TLINK_COLL_ALLGATHER : TLINK_COLL_REDUCE_SCATTER;
                j->dt = odt[d];
                j->op = d == 2 ? TLINK_SUM : d ? TLINK_MAX : TLINK_AVG;
                j->count = sizes[si];
                j->inplace = o && d == 1;
                job_prepare(j);
                if (job_run(j, s)) FAILF("%s ring: %s", tlink_coll_name(j->coll), tlink_gpu_last_error(g_gc));
                jal[nj++] = tlink_gpu_last_algo(g_gc);
                if (sizes[si] && size > 1 && strcmp(jal[nj - 1], "ring")) FAILF("%s forced ring ran %s", tlink_coll_name(j->coll), jal[nj - 1]);
            }
        /* broadcast with each algorithm forced (auto picks direct at these sizes), some in place */
        const char *balgos[] = {"scatter", "direct", "chain"};
        for (int a = 0; a < 3; a++) {
            if (tlink_gpu_set_algo(g_gc, balgos[a])) FAILF("set_algo %s: %s", balgos[a], tlink_gpu_last_error(g_gc));
            for (int d = 0; d < 3; d++) {
                job *j = &jobs[nj];
                memset(j, 0, sizeof *j);
                j->coll = TLINK_COLL_BROADCAST;
                j->dt = odt[d];
                j->op = TLINK_SUM;
                j->count = sizes[si];
                j->root = (d + a) % size;
                j->inplace = d == 1;
                job_prepare(j);
                if (job_run(j, s)) FAILF("broadcast %s: %s", balgos[a], tlink_gpu_last_error(g_gc));
                jal[nj++] = tlink_gpu_last_algo(g_gc);
                if (sizes[si] && size > 1 && strcmp(jal[nj - 1], balgos[a])) FAILF("broadcast forced %s ran %s", balgos[a], jal[nj - 1]);
            }
        }
        tlink_gpu_set_algo(g_gc, "auto");
        if (tlink_gpu_sync(g_gc, s)) FAILF("sync: %s", tlink_gpu_last_error(g_gc));
        for (int k = 0; k < nj; k++) job_check(&jobs[k], jal[k]);
    }
    /* the host communicator's forcing (TLINK_ALGO allgather:ring) reaches the device collectives */
    if (size > 1) {
        tlink_comm_set_algo(c, TLINK_COLL_ALLGATHER, TLINK_ALGO_RING);
        job j;
        memset(&j, 0, sizeof j);
        j.coll = TLINK_COLL_ALLGATHER;
        j.dt = TLINK_F32;
        j.op = TLINK_SUM;
        j.count = 1023;
        job_prepare(&j);
        if (job_run(&j, s)) FAILF("allgather (host forcing): %s", tlink_gpu_last_error(g_gc));
        const char *al = tlink_gpu_last_algo(g_gc);
        if (strcmp(al, "ring")) FAILF("allgather with the host communicator forced to ring ran %s", al);
        if (tlink_gpu_sync(g_gc, s)) FAILF("sync: %s", tlink_gpu_last_error(g_gc));
        job_check(&j, al);
        tlink_comm_set_algo(c, TLINK_COLL_ALLGATHER, TLINK_ALGO_AUTO);
    }
    /* argument errors on a live communicator */
    char host[16];
    if (tlink_gpu_allreduce(g_gc, host, host, 4, TLINK_F32, TLINK_SUM, s) != TLINK_ERR_INVALID_ARG ||
        !strstr(tlink_gpu_last_error(g_gc), "sendbuf"))
        FAILF("a host pointer was not refused: %s", tlink_gpu_last_error(g_gc));
    if (tlink_gpu_broadcast(g_gc, NULL, NULL, 0, TLINK_F32, size, s) != TLINK_ERR_INVALID_ARG ||
        !strstr(tlink_gpu_last_error(g_gc), "root"))
        FAILF("a bad root was not refused: %s", tlink_gpu_last_error(g_gc));
    tlink_gpu_stream_destroy(g_gc, s);
    if (tlink_gpu_comm_destroy(g_gc)) FAILF("gpu destroy: %s", tlink_last_error(NULL));
    tlink_comm_destroy(c);
    return g_fail ? 1 : 0;
}

static int fault_main(int rank, int size, const char *addr, void *arg) {
    (void)arg;
    (void)size;
    g_rank = rank;
    tlink_comm *c;
    if (tlt_init(&c, rank, 2, addr)) return 1;
    tlink_comm_set_timeout(c, 3);
    if (tlink_gpu_comm_init(c, NULL, &g_gc)) { fprintf(stderr, "gpu init: %s\n", tlink_last_error(NULL)); return 1; }
    if (rank == 1) {
        sleep(8); /* never joins; exits without destroying (the peer's kernel must give up) */
        _exit(0);
    }
    void *d;
    tlink_gpu_malloc(g_gc, 4096, &d);
    double t0 = tlt_now();
    tlink_status st = tlink_gpu_allreduce(g_gc, d, d, 1024, TLINK_F32, TLINK_SUM, NULL);
    if (!st) st = tlink_gpu_sync(g_gc, NULL);
    double dt = tlt_now() - t0;
    if (st != TLINK_ERR_PEER_FAILED || !strstr(tlink_gpu_last_error(g_gc), "rank 1"))
        FAILF("expected TLINK_ERR_PEER_FAILED naming rank 1, got %s: %s", tlink_error_string(st), tlink_gpu_last_error(g_gc));
    if (dt > 30) FAILF("the failure took %.1f s with a 3 s timeout", dt);
    printf("rank 0: %s after %.1f s: %s\n", tlink_error_string(st), dt, tlink_gpu_last_error(g_gc));
    _exit(g_fail ? 1 : 0);
}

static int args_test(void) {
    tlink_gpu_comm *g = (tlink_gpu_comm *)1;
    if (tlink_gpu_comm_init(NULL, NULL, &g) != TLINK_ERR_INVALID_ARG || g != NULL || !strstr(tlink_last_error(NULL), "comm"))
        FAILF("init(NULL comm): %s", tlink_last_error(NULL));
    if (tlink_gpu_comm_init(NULL, NULL, NULL) != TLINK_ERR_INVALID_ARG || !strstr(tlink_last_error(NULL), "out"))
        FAILF("init(NULL out): %s", tlink_last_error(NULL));
    if (tlink_gpu_allreduce(NULL, NULL, NULL, 1, TLINK_F32, TLINK_SUM, NULL) != TLINK_ERR_INVALID_ARG ||
        !strstr(tlink_last_error(NULL), "g is NULL"))
        FAILF("allreduce(NULL): %s", tlink_last_error(NULL));
    if (tlink_gpu_set_algo(NULL, "ring") != TLINK_ERR_INVALID_ARG) FAILF("set_algo(NULL)");
    if (strcmp(tl_gpu_algo_name(TL_GA_CHAIN), "chain") || strcmp(tl_gpu_algo_name(99), "?")) FAILF("tl_gpu_algo_name");
    if (tlink_gpu_sync(NULL, NULL) != TLINK_ERR_INVALID_ARG) FAILF("sync(NULL)");
    if (tlink_gpu_comm_destroy(NULL) != TLINK_OK) FAILF("destroy(NULL)");
    if (tlink_gpu_compile_check(NULL, 0, NULL, 0) != -1) FAILF("compile_check(NULL arch)");
    return g_fail ? 1 : 0;
}

/* a one-rank communicator: with a GPU it works, without one the error says why */
static int args_rank(int rank, int size, const char *addr, void *arg) {
    const char *why = arg;
    int have = !why[0];
    tlink_gpu_comm *g;
    tlink_comm *c;
    if (tlt_init(&c, rank, size, addr)) { FAILF("comm: %s", tlink_last_error(NULL)); return 1; }
    tlink_gpu_config bad = {.blocks = -3};
    if (tlink_gpu_comm_init(c, &bad, &g) != TLINK_ERR_INVALID_ARG || !strstr(tlink_last_error(NULL), "blocks"))
        FAILF("blocks -3: %s", tlink_last_error(NULL));
    tlink_status st = tlink_gpu_comm_init(c, NULL, &g);
    if (!have) {
        if (st != TLINK_ERR_UNSUPPORTED || !strstr(tlink_last_error(NULL), why))
            FAILF("without a GPU: %s: %s (why: %s)", tlink_error_string(st), tlink_last_error(NULL), why);
        printf("no GPU: %s\n", tlink_last_error(NULL));
    } else {
        if (st) FAILF("one rank: %s", tlink_last_error(NULL));
        else {
            if (tlink_gpu_set_algo(g, "rign") != TLINK_ERR_INVALID_ARG || !strstr(tlink_gpu_last_error(g), "rign"))
                FAILF("set_algo(rign): %s", tlink_gpu_last_error(g));
            if (tlink_gpu_set_algo(g, "ring") != TLINK_OK) FAILF("set_algo(ring): %s", tlink_gpu_last_error(g));
            if (tlink_gpu_allreduce(g, NULL, NULL, 1, (tlink_dtype)99, TLINK_SUM, NULL) != TLINK_ERR_INVALID_ARG ||
                !strstr(tlink_gpu_last_error(g), "dt"))
                FAILF("dt 99: %s", tlink_gpu_last_error(g));
            tlink_gpu_comm_destroy(g);
        }
    }
    tlink_comm_destroy(c);
    return g_fail ? 1 : 0;
}

/* rank 1 asks for a GPU that does not exist: rank 0 must fail naming rank 1 (not wait for its
 * registration until the timeout); without a GPU both fail for that reason */
static int asym_rank(int rank, int size, const char *addr, void *arg) {
    const char *why = arg;
    int have = !why[0];
    g_rank = rank;
    tlink_comm *c;
    if (tlt_init(&c, rank, size, addr)) { FAILF("comm: %s", tlink_last_error(NULL)); return 1; }
    tlink_comm_set_timeout(c, 100);
    tlink_gpu_config cfg = {.device = rank == 1 ? 99 : -1};
    tlink_gpu_comm *g = NULL;
    tlink_status st = tlink_gpu_comm_init(c, &cfg, &g);
    const char *msg = tlink_last_error(NULL);
    if (!have) {
        if (st != TLINK_ERR_UNSUPPORTED) FAILF("no GPU: got %s: %s", tlink_error_string(st), msg);
    } else if (rank == 1) {
        if (st != TLINK_ERR_INVALID_ARG || !strstr(msg, "device 99")) FAILF("device 99: got %s: %s", tlink_error_string(st), msg);
    } else if (st != TLINK_ERR_PEER_FAILED || !strstr(msg, "rank 1 could not set up") || !strstr(msg, "device 99")) {
        FAILF("peer of device 99: got %s: %s", tlink_error_string(st), msg);
    }
    if (!st) tlink_gpu_comm_destroy(g);
    printf("rank %d: %s: %s\n", rank, tlink_error_string(st), msg);
    tlink_comm_destroy(c);
    return g_fail ? 1 : 0;
}


/* ---------- the cost model on given link matrices (no GPU) ---------- */
static void model_init(tl_gpu_model *m, int n, double fast, double slow, const int *ring_of_fast) {
    memset(m, 0, sizeof *m);
    m->n = n;
    m->alpha_s = 8e-6;
    m->mem_gbps = 3000;
    m->slot = 256 << 10;
    m->big_bytes = 64u << 20;
    m->ce_chunk = 16u << 20;
    m->nb = 128;
    m->nb_small = 64;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) m->bw[i][j] = i == j ? 0 : ring_of_fast ? slow : fast;
    if (ring_of_fast) /* fast links only between neighbours on this ring */
        for (int q = 0; q < n; q++) {
            int a = ring_of_fast[q], b = ring_of_fast[(q + 1) % n];
            m->bw[a][b] = m->bw[b][a] = fast;
        }
    tl_gpu_model_ring(m);
}
static void want_choice(const tl_gpu_model *m, const char *what, tlink_coll coll, size_t bytes, int want) {
    int got = tl_gpu_choose(m, coll, bytes);
    if (got != want)
        FAILF("%s: %s of %zu B chose %s (%.1f us), expected %s (%.1f us)", what, tlink_coll_name(coll), bytes, tl_gpu_algo_name(got),
              tl_gpu_predict(m, coll, got, bytes), tl_gpu_algo_name(want), tl_gpu_predict(m, coll, want, bytes));
}
static int model_test(void) {
    const size_t KB = 1024, MB = 1024 * 1024, GB = MB * 1024;
    tl_gpu_model m;
    /* NVSwitch-like: every pair NVLink. Direct exchanges move as many bytes per GPU as a ring in
     * fewer steps, so rings are never chosen; chain or scatter for large broadcasts. */
    for (int n = 2; n <= 8; n *= 2) {
        char what[64];
        snprintf(what, sizeof what, "all-to-all NVLink, %d ranks", n);
        model_init(&m, n, 360, 0, NULL);
        for (int q = 0; q < n; q++)
            if (m.ring[q] != q) FAILF("%s: ring position %d holds %d", what, q, m.ring[q]);
        want_choice(&m, what, TLINK_COLL_ALLREDUCE, 8, TL_GA_ONESHOT);
        size_t sizes[] = {64 * KB, 4 * MB, 256 * MB, 4 * GB};
        for (int k = 0; k < 4; k++) {
            for (tlink_coll c = 0; c < TLINK_COLL_COUNT; c++) {
                if (c != TLINK_COLL_ALLREDUCE && c != TLINK_COLL_REDUCE_SCATTER && c != TLINK_COLL_ALLGATHER && c != TLINK_COLL_BROADCAST)
                    continue;
                int got = tl_gpu_choose(&m, c, sizes[k]);
                if (got == TL_GA_RING) FAILF("%s: %s of %zu B chose ring", what, tlink_coll_name(c), sizes[k]);
                if (n == 2 && got == TL_GA_CHAIN) FAILF("%s: broadcast of %zu B chose chain (the same transfer as direct)", what, sizes[k]);
            }
        }
        want_choice(&m, what, TLINK_COLL_ALLGATHER, 256 * MB, TL_GA_DIRECT);
        if (n > 2) want_choice(&m, what, TLINK_COLL_ALLREDUCE, 256 * MB, TL_GA_TWOSHOT);
        if (n > 2 && tl_gpu_choose(&m, TLINK_COLL_BROADCAST, 1 * GB) == TL_GA_DIRECT)
            FAILF("%s: a 1 GiB broadcast chose direct (the root's link carries (n-1)B)", what);
        /* every applicable prediction is finite and grows with the size */
        int algos[] = {TL_GA_ONESHOT, TL_GA_TWOSHOT, TL_GA_RING};
        for (int a = 0; a < 3; a++)
            if (!(tl_gpu_predict(&m, TLINK_COLL_ALLREDUCE, algos[a], MB) < tl_gpu_predict(&m, TLINK_COLL_ALLREDUCE, algos[a], 64 * MB)))
                FAILF("%s: %s does not grow with the size", what, tl_gpu_algo_name(algos[a]));
        if (tl_gpu_predict(&m, TLINK_COLL_ALLTOALL, TL_GA_RING, MB) < 1e299) FAILF("%s: alltoall has no ring", what);
    }
    /* a ring of NVLinks (0-1-2-3), PCIe between the others: ring and chain win large messages */
    int ring4[] = {0, 1, 2, 3};
    model_init(&m, 4, 360, 25, ring4);
    const char *w = "NVLink ring 0-1-2-3, PCIe across";
    want_choice(&m, w, TLINK_COLL_ALLREDUCE, 8, TL_GA_ONESHOT);
    want_choice(&m, w, TLINK_COLL_ALLREDUCE, 256 * MB, TL_GA_RING);
    want_choice(&m, w, TLINK_COLL_REDUCE_SCATTER, 256 * MB, TL_GA_RING);
    want_choice(&m, w, TLINK_COLL_ALLGATHER, 256 * MB, TL_GA_RING);
    want_choice(&m, w, TLINK_COLL_BROADCAST, 256 * MB, TL_GA_CHAIN);
    want_choice(&m, w, TLINK_COLL_ALLTOALL, 256 * MB, TL_GA_DIRECT);
    /* the same ring in another order: the model finds it (0 2 1 3 before its mirror 0 3 1 2) */
    int ring4b[] = {0, 2, 1, 3};
    model_init(&m, 4, 360, 25, ring4b);
    for (int q = 0; q < 4; q++)
        if (m.ring[q] != ring4b[q]) FAILF("ring 0-2-1-3: position %d holds %d, expected %d", q, m.ring[q], ring4b[q]);
    want_choice(&m, "NVLink ring 0-2-1-3", TLINK_COLL_ALLREDUCE, 256 * MB, TL_GA_RING);
    int ring8[] = {0, 5, 2, 7, 4, 1, 6, 3};
    model_init(&m, 8, 360, 25, ring8);
    for (int q = 0; q < 8; q++) {
        int a = m.ring[q], b = m.ring[(q + 1) % 8];
        if (m.bw[a][b] != 360) FAILF("8-rank ring: hop %d -> %d is not NVLink", a, b);
    }
    want_choice(&m, "8-rank NVLink ring", TLINK_COLL_ALLREDUCE, 1 * GB, TL_GA_RING);
    /* the choices, for the record (docs/tilelink-gpu.md) */
    for (int t = 0; t < 2; t++) {
        model_init(&m, 4, 360, 25, t ? ring4 : NULL);
        printf("4 ranks, %s:\n", t ? "NVLink ring + PCIe" : "all-to-all NVLink");
        for (size_t b = 8; b <= 4 * GB; b *= 16) {
            printf("  %10zu B:", b);
            tlink_coll cs[] = {TLINK_COLL_ALLREDUCE, TLINK_COLL_REDUCE_SCATTER, TLINK_COLL_ALLGATHER, TLINK_COLL_BROADCAST};
            for (int k = 0; k < 4; k++) printf(" %s %s", tlink_coll_name(cs[k]), tl_gpu_algo_name(tl_gpu_choose(&m, cs[k], b)));
            printf("\n");
        }
    }
    printf("cost model: %s\n", g_fail ? "FAIL" : "ok");
    return g_fail ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: test_gpu nvrtc|args|coll N|fault\n"); return 2; }
    setvbuf(stdout, NULL, _IOLBF, 0);
    char why[256] = "";
    if (!strcmp(argv[1], "nvrtc")) {
        if (!tlink_gpu_nvrtc_available(why, sizeof why)) { printf("SKIP: %s\n", why); return SKIP; }
        static char err[1 << 16];
        int n = tlink_gpu_compile_check("sm_90a", 0, err, sizeof err);
        if (n < 0) { fprintf(stderr, "%s\n", err); return 1; }
        printf("%d modules compiled for sm_90a\n", n);
        return 0;
    }
    if (!strcmp(argv[1], "model")) return model_test();
    if (!strcmp(argv[1], "args")) {
        if (args_test()) return 1;
        if (!gpu_present(why, sizeof why) && !why[0]) snprintf(why, sizeof why, "no GPU");
        if (tlt_launch(1, args_rank, why, 60, NULL)) return 1;
        return tlt_launch(2, asym_rank, why, 90, NULL) ? 1 : 0;
    }
    if (!gpu_present(why, sizeof why)) { printf("SKIP: %s\n", why); return SKIP; }
    if (!strcmp(argv[1], "coll")) {
        int n = argc > 2 ? atoi(argv[2]) : 2;
        if (n < 1 || n > 8) { fprintf(stderr, "coll: 1..8 ranks\n"); return 2; }
        return tlt_launch(n, coll_main, NULL, 300, NULL) ? 1 : 0;
    }
    if (!strcmp(argv[1], "fault")) return tlt_launch(2, fault_main, NULL, 120, NULL) ? 1 : 0;
    fprintf(stderr, "unknown mode '%s'\n", argv[1]);
    return 2;
}
