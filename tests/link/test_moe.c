/* test_moe.c — expert-parallel dispatch and combine (moe.c) against a reference built from
 * tlink_alltoallv: random routings (unused slots, experts with no tokens, tokens routed twice to
 * one rank and twice to one expert, ranks with no tokens), bf16 and fp8 e4m3 with per-token
 * scales, combine in bf16 and f32; every received row, offset, count, scale, weight and origin,
 * and every combined value, equal bit for bit. Then a rank killed while the others dispatch:
 * TLINK_ERR_PEER_FAILED naming it. --auto-trials: algo auto across hosts times both exchanges
 * (2 settling calls, then pairs flat, hier, hier, flat for TLINK_MOE_TRIALS = 2) and keeps one,
 * the same on every rank.
 * Usage: test_moe NRANKS [--tcp] [--hosts H] [--algo flat|hier] [--kill] [--auto-trials] */
#include "tl_launch.h"

#include <pthread.h>
#include <stdint.h>

static int g_tcp, g_hosts, g_algo, g_kill, g_trials;

#define FAILF(...)                                                                                  \
    do {                                                                                            \
        if ((*nfail)++ < 10) {                                                                      \
            fprintf(stderr, "rank %d: ", rank);                                                     \
            fprintf(stderr, __VA_ARGS__);                                                           \
            fputc('\n', stderr);                                                                    \
        }                                                                                           \
    } while (0)

static uint64_t rng_next(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

typedef struct ucase {
    int E, k;
    size_t hidden;
    tlink_dtype dt;
    tlink_dtype out_dt;
    int tokens;         /* per rank (rank r gets tokens * (r % 3) / 2: some ranks none) */
    uint64_t seed;
} ucase;

/* the routing of rank r's tokens: distinct experts mostly, with unused slots, repeats of one
 * expert, and the last expert of every rank never chosen (experts with no tokens) */
static void route(const ucase *u, int W, int rank, size_t T, int32_t *ids, float *w) {
    uint64_t s = u->seed * 7919 + (uint64_t)rank * 104729 + 1;
    const int L = u->E / W;
    for (size_t t = 0; t < T; t++) {
        for (int j = 0; j < u->k; j++) {
            uint64_t r = rng_next(&s);
            int id;
            if (r % 17 == 0) id = -1;                                        /* unused slot */
            else if (j > 0 && r % 13 == 0) id = ids[t * u->k + j - 1];       /* the same expert again */
            else {
                id = (int)(rng_next(&s) % (uint64_t)u->E);
                if (id % L == L - 1 && L > 1) id--;                          /* a rank's last expert: no tokens */
            }
            ids[t * u->k + j] = id;
            w[t * u->k + j] = (float)((rng_next(&s) % 1000) + 1) / 997.0f;
        }
    }
}

static float decode(tlink_dtype dt, const void *row, size_t i, float scale) {
    if (dt == TLINK_BF16) return tlink_bf16_to_f32(((const uint16_t *)row)[i]);
    return tlink_fp8_e4m3_to_f32(((const uint8_t *)row)[i]) * scale;
}

/* the expert's output for a row: any function of its input and the expert, in out_dt */
static void expert_fn(const ucase *u, const void *in, float scale, int expert, void *out) {
    for (size_t i = 0; i < u->hidden; i++) {
        float v = decode(u->dt, in, i, scale) * (1.0f + 0.03125f * (float)(expert % 7)) + 0.0078125f * (float)(i % 5);
        if (u->out_dt == TLINK_BF16) ((uint16_t *)out)[i] = tlink_f32_to_bf16(v);
        else ((float *)out)[i] = v;
    }
}

static float out_get(tlink_dtype dt, const void *p, size_t i) {
    return dt == TLINK_BF16 ? tlink_bf16_to_f32(((const uint16_t *)p)[i]) : ((const float *)p)[i];
}
static void out_put(tlink_dtype dt, void *p, size_t i, float v) {
    if (dt == TLINK_BF16) ((uint16_t *)p)[i] = tlink_f32_to_bf16(v);
    else ((float *)p)[i] = v;
}

/* ---------- the reference, from tlink_alltoallv ---------- */
typedef struct refrow { int32_t src, token, e; float w, scale; size_t rec; int slot; } refrow;

static int run_case(tlink_comm *c, const ucase *u, int *nfail) {
    const int W = tlink_comm_size(c), rank = tlink_comm_rank(c), L = u->E / W, k = u->k;
    const size_t es = tlink_dtype_size(u->dt), rb = u->hidden * es, ob = u->hidden * tlink_dtype_size(u->out_dt);
    const size_t T = (size_t)u->tokens * (size_t)(rank % 3) / 2;
    uint64_t s = u->seed + (uint64_t)rank * 31 + 5;
    unsigned char *x = malloc(T * rb + 1);
    float *scales = malloc((T + 1) * sizeof(float));
    int32_t *ids = malloc((T * k + 1) * sizeof(int32_t));
    float *wt = malloc((T * k + 1) * sizeof(float));
    for (size_t i = 0; i < T * rb; i++) x[i] = (unsigned char)rng_next(&s);
    if (u->dt == TLINK_BF16)
        for (size_t i = 0; i < T * u->hidden; i++) ((uint16_t *)x)[i] &= 0xbfff; /* finite, |v| < 2 */
    else
        for (size_t i = 0; i < T * u->hidden; i++) x[i] &= 0xf7; /* finite e4m3 */
    for (size_t t = 0; t < T; t++) scales[t] = (float)(rng_next(&s) % 64 + 1) / 32.0f;
    route(u, W, rank, T, ids, wt);

    tlink_moe_config cfg = {.num_experts = u->E, .top_k = k, .hidden = u->hidden, .dtype = u->dt, .algo = g_algo};
    tlink_moe *m = NULL;
    tlink_status st = tlink_moe_dispatch(c, &cfg, T, x, u->dt == TLINK_FP8_E4M3 ? scales : NULL, ids, wt, &m);
    if (st) { FAILF("dispatch: %s", tlink_last_error(c)); return -1; }
    tlink_moe_recv rv;
    tlink_moe_get_recv(m, &rv);

    /* reference: record = row bytes, scale, token, k local experts, k weights */
    const size_t recb = rb + 4 + 4 + (size_t)k * 8;
    size_t *scnt = calloc(W, sizeof(size_t)), *sdis = calloc(W, sizeof(size_t));
    size_t *rcnt = calloc(W, sizeof(size_t)), *rdis = calloc(W, sizeof(size_t));
    int64_t *sc64 = calloc(W, 8), *rc64 = calloc(W, 8);
    for (size_t t = 0; t < T; t++) {
        char seen[64] = {0};
        for (int j = 0; j < k; j++) {
            int id = ids[t * k + j];
            if (id >= 0 && !seen[id / L]) { seen[id / L] = 1; sc64[id / L]++; }
        }
    }
    tlink_alltoall(c, sc64, rc64, 1, TLINK_I64);
    size_t stot = 0, rtot = 0;
    for (int q = 0; q < W; q++) {
        scnt[q] = (size_t)sc64[q] * recb;
        rcnt[q] = (size_t)rc64[q] * recb;
        sdis[q] = stot;
        rdis[q] = rtot;
        stot += scnt[q];
        rtot += rcnt[q];
    }
    unsigned char *sbuf = calloc(stot + 1, 1), *rbuf = calloc(rtot + 1, 1);
    size_t *cur = calloc(W, sizeof(size_t));
    for (size_t t = 0; t < T; t++) {
        char seen[64] = {0};
        for (int j = 0; j < k; j++) {
            int id = ids[t * k + j];
            if (id < 0 || seen[id / L]) continue;
            int q = id / L;
            seen[q] = 1;
            unsigned char *r = sbuf + sdis[q] + cur[q]++ * recb;
            memcpy(r, x + t * rb, rb);
            memcpy(r + rb, &scales[t], 4);
            int32_t tt = (int32_t)t;
            memcpy(r + rb + 4, &tt, 4);
            for (int jj = 0; jj < k; jj++) {
                int32_t e = ids[t * k + jj] >= 0 && ids[t * k + jj] / L == q ? ids[t * k + jj] % L : -1;
                memcpy(r + rb + 8 + jj * 4, &e, 4);
                memcpy(r + rb + 8 + (size_t)k * 4 + jj * 4, &wt[t * k + jj], 4);
            }
        }
    }
    if (tlink_alltoallv(c, sbuf, scnt, sdis, rbuf, rcnt, rdis, TLINK_U8)) FAILF("reference alltoallv: %s", tlink_last_error(c));
    /* the expected rows: per expert, by source rank, record order, slot order */
    size_t nrec = rtot / recb, nrows = 0;
    for (size_t i = 0; i < nrec; i++)
        for (int j = 0; j < k; j++) {
            int32_t e;
            memcpy(&e, rbuf + i * recb + rb + 8 + j * 4, 4);
            nrows += e >= 0;
        }
    refrow *rows = malloc((nrows + 1) * sizeof *rows);
    size_t *eoff = calloc(L + 1, sizeof(size_t));
    size_t nr = 0;
    for (int e = 0; e < L; e++) {
        eoff[e] = nr;
        for (int q = 0; q < W; q++)
            for (size_t i = rdis[q] / recb; i < (rdis[q] + rcnt[q]) / recb; i++)
                for (int j = 0; j < k; j++) {
                    const unsigned char *r = rbuf + i * recb;
                    int32_t ee;
                    memcpy(&ee, r + rb + 8 + j * 4, 4);
                    if (ee != e) continue;
                    refrow *o = &rows[nr++];
                    o->src = q;
                    memcpy(&o->token, r + rb + 4, 4);
                    o->e = e;
                    memcpy(&o->w, r + rb + 8 + (size_t)k * 4 + j * 4, 4);
                    memcpy(&o->scale, r + rb, 4);
                    o->rec = i;
                    o->slot = j;
                }
    }
    eoff[L] = nr;
    /* compare the received layout */
    if (rv.nrows != nrows || rv.num_local_experts != L || rv.first_expert != rank * L)
        FAILF("recv: %zu rows, %d experts from %d; expected %zu, %d, %d", rv.nrows, rv.num_local_experts, rv.first_expert,
              nrows, L, rank * L);
    else {
        for (int e = 0; e <= L; e++)
            if (rv.expert_offsets[e] != eoff[e]) { FAILF("expert_offsets[%d] = %zu, expected %zu", e, rv.expert_offsets[e], eoff[e]); break; }
        for (int e = 0; e < L; e++)
            if (rv.expert_counts[e] != eoff[e + 1] - eoff[e]) { FAILF("expert_counts[%d]", e); break; }
        for (size_t i = 0; i < nrows; i++) {
            const refrow *o = &rows[i];
            if (rv.src_rank[i] != o->src || rv.src_token[i] != o->token || rv.weights[i] != o->w ||
                memcmp((char *)rv.x + i * rb, rbuf + o->rec * recb, rb) ||
                (u->dt == TLINK_FP8_E4M3 && rv.scales[i] != o->scale)) {
                FAILF("row %zu (expert %d): src %d token %d w %g, expected src %d token %d w %g%s", i, o->e, rv.src_rank[i],
                      rv.src_token[i], rv.weights[i], o->src, o->token, o->w,
                      memcmp((char *)rv.x + i * rb, rbuf + o->rec * recb, rb) ? " (data differ)" : "");
                break;
            }
        }
        if (u->dt == TLINK_BF16 && rv.scales) FAILF("bf16 has scales");
    }
    /* combine: the experts' outputs */
    unsigned char *eo = malloc(rv.nrows * ob + 1);
    for (size_t i = 0; i < rv.nrows; i++) {
        int e = 0;
        while (e < L && rv.expert_offsets[e + 1] <= i) e++;
        expert_fn(u, (char *)rv.x + i * rb, rv.scales ? rv.scales[i] : 1.0f, rank * L + e, eo + i * ob);
    }
    unsigned char *y = malloc(T * ob + 1);
    if (tlink_moe_combine(m, eo, u->out_dt, y)) FAILF("combine: %s", tlink_last_error(c));
    int hier = !strcmp(tlink_moe_algo(m), "hierarchical");
    /* reference combine: per received record, the partial over its slots (slot order), rounded */
    unsigned char *part = calloc(nrec * ob + 1, 1);
    unsigned char *eref = malloc(nrows * ob + 1);
    for (size_t i = 0; i < nrows; i++)
        expert_fn(u, rbuf + rows[i].rec * recb, u->dt == TLINK_FP8_E4M3 ? rows[i].scale : 1.0f, rank * L + rows[i].e,
                  eref + i * ob);
    {
        size_t *row_of = malloc((nrec * k + 1) * sizeof(size_t)); /* (record, slot) -> row */
        for (size_t i = 0; i < nrows; i++) row_of[rows[i].rec * k + rows[i].slot] = i;
        for (size_t i = 0; i < nrec; i++) {
            for (size_t h = 0; h < u->hidden; h++) {
                float a = 0.0f;
                for (int j = 0; j < k; j++) {
                    int32_t e;
                    memcpy(&e, rbuf + i * recb + rb + 8 + j * 4, 4);
                    if (e < 0) continue;
                    size_t row = row_of[i * k + j];
                    a += rows[row].w * out_get(u->out_dt, eref + row * ob, h);
                }
                out_put(u->out_dt, part + i * ob, h, a);
            }
        }
        free(row_of);
    }
    /* back through alltoallv: the partials of each source's records, in its order */
    size_t *bs = calloc(W, sizeof(size_t)), *bsd = calloc(W, sizeof(size_t)), *br = calloc(W, sizeof(size_t)),
           *brd = calloc(W, sizeof(size_t));
    size_t bt = 0;
    for (int q = 0; q < W; q++) {
        bs[q] = rcnt[q] / recb * ob;
        bsd[q] = rdis[q] / recb * ob;
        br[q] = scnt[q] / recb * ob;
        brd[q] = bt;
        bt += br[q];
    }
    unsigned char *back = malloc(bt + 1);
    if (tlink_alltoallv(c, part, bs, bsd, back, br, brd, TLINK_U8)) FAILF("reference alltoallv back");
    /* y: per token, the ranks' partials: in rank order (flat), or per host in local order,
     * rounded, then the hosts in host order (hierarchical) */
    unsigned char *yref = calloc(T * ob + 1, 1);
    int H = tlink_comm_host_count(c);
    for (int q = 0; q < W; q++) cur[q] = 0;
    for (size_t t = 0; t < T; t++) {
        char seen[64] = {0};
        for (int j = 0; j < k; j++)
            if (ids[t * k + j] >= 0) seen[ids[t * k + j] / L] = 1;
        const unsigned char *p[64] = {0};
        for (int q = 0; q < W; q++)
            if (seen[q]) p[q] = back + brd[q] + cur[q]++ * ob;
        for (size_t h = 0; h < u->hidden; h++) {
            float a = 0.0f;
            if (!hier) {
                for (int q = 0; q < W; q++)
                    if (p[q]) a += out_get(u->out_dt, p[q], h);
            } else {
                for (int hh = 0; hh < H; hh++) {
                    float ah = 0.0f;
                    int any = 0;
                    for (int q = 0; q < W; q++)
                        if (p[q] && tlink_comm_host_index(c, q) == hh) { ah += out_get(u->out_dt, p[q], h); any = 1; }
                    if (!any) continue;
                    float r;
                    unsigned char tmp[4];
                    out_put(u->out_dt, tmp, 0, ah);
                    r = out_get(u->out_dt, tmp, 0);
                    a += r;
                }
            }
            out_put(u->out_dt, yref + t * ob, h, a);
        }
    }
    if (memcmp(y, yref, T * ob)) {
        for (size_t i = 0; i < T * u->hidden; i++)
            if (out_get(u->out_dt, y, i) != out_get(u->out_dt, yref, i) &&
                memcmp(y + i * (ob / u->hidden), yref + i * (ob / u->hidden), ob / u->hidden)) {
                FAILF("combine (%s): y[%zu][%zu] = %.9g, expected %.9g", tlink_moe_algo(m), i / u->hidden, i % u->hidden,
                      out_get(u->out_dt, y, i), out_get(u->out_dt, yref, i));
                break;
            }
    }
    tlink_moe_free(m);
    free(x); free(scales); free(ids); free(wt); free(scnt); free(sdis); free(rcnt); free(rdis); free(sc64); free(rc64);
    free(sbuf); free(rbuf); free(cur); free(rows); free(eoff); free(eo); free(y); free(part); free(eref);
    free(bs); free(bsd); free(br); free(brd); free(back); free(yref);
    return hier;
}

/* ---------- algo auto across hosts: one configuration called repeatedly ---------- */
static int auto_trials(tlink_comm *c, const ucase *u, int *nfail) {
    const int rank = tlink_comm_rank(c), size = tlink_comm_size(c);
    const int want[10] = {0, 0, 0, 0, 1, 1, 1, 1, 0, 0}; /* 2 settling, then pairs flat, hier, hier, flat */
    int seq[14] = {0}, n = 0;
    for (; n < 14 && !*nfail; n++) {
        seq[n] = run_case(c, u, nfail);
        if (n < 10 && seq[n] != want[n])
            FAILF("auto call %d: %s, expected %s", n, seq[n] ? "hierarchical" : "flat", want[n] ? "hierarchical" : "flat");
        if (n > 10 && seq[n] != seq[10]) FAILF("auto call %d: %d after the pick %d", n, seq[n], seq[10]);
    }
    int32_t pk[2] = {seq[10], -seq[10]};
    if (!*nfail && (tlink_allreduce(c, pk, pk, 2, TLINK_I32, TLINK_MAX) || pk[0] != -pk[1]))
        FAILF("the ranks kept different exchanges (max %d, min %d)", pk[0], -pk[1]);
    if (rank == 0)
        printf("moe %d ranks auto: kept %s after %d calls: %s\n", size, seq[10] ? "hierarchical" : "flat", n,
               *nfail ? "FAILED" : "ok");
    return *nfail ? 1 : 0;
}

/* ---------- a rank killed during dispatch ---------- */
static void *killer(void *arg) {
    usleep((useconds_t)(intptr_t)arg);
    _exit(7);
    return NULL;
}

static int kill_main(tlink_comm *c) {
    const int W = tlink_comm_size(c), rank = tlink_comm_rank(c), victim = W - 1;
    const size_t T = 2048, hidden = 1024;
    tlink_moe_config cfg = {.num_experts = 4 * W, .top_k = 4, .hidden = hidden, .dtype = TLINK_BF16, .algo = g_algo};
    uint16_t *x = calloc(T * hidden, 2);
    int32_t *ids = malloc(T * 4 * sizeof(int32_t));
    float *w = malloc(T * 4 * sizeof(float));
    for (size_t i = 0; i < T * 4; i++) { ids[i] = (int32_t)((i * 7 + (size_t)rank) % (size_t)(4 * W)); w[i] = 0.25f; }
    pthread_t th;
    if (rank == victim) pthread_create(&th, NULL, killer, (void *)(intptr_t)150000);
    tlink_status st = TLINK_OK;
    double t0 = tlt_now();
    int n = 0;
    for (; n < 100000 && !st; n++) {
        tlink_moe *m = NULL;
        st = tlink_moe_dispatch(c, &cfg, T, x, NULL, ids, w, &m);
        tlink_moe_free(m);
    }
    const char *msg = tlink_last_error(c);
    char want[32];
    snprintf(want, sizeof want, "rank %d", victim);
    int ok = st == TLINK_ERR_PEER_FAILED && strstr(msg, want) && strstr(msg, "moe_dispatch") && tlt_now() - t0 < 20;
    fprintf(stderr, "kill: rank %d: %s after %d dispatches, %.2f s: %s -> %s\n", rank, tlink_error_string(st), n,
            tlt_now() - t0, msg, ok ? "ok" : "WRONG");
    free(x); free(ids); free(w);
    return ok ? 0 : 1;
}

static int rank_main(int rank, int size, const char *addr, void *arg) {
    (void)arg;
    if (g_hosts > 1) {
        char id[64];
        snprintf(id, sizeof id, "moehost%d", rank * g_hosts / size);
        setenv("TLINK_HOST_ID", id, 1);
    }
    tlink_comm *c;
    if (tlt_init(&c, rank, size, addr)) {
        fprintf(stderr, "rank %d: init: %s\n", rank, tlink_last_error(NULL));
        return 1;
    }
    if (g_kill) {
        int rc = kill_main(c);
        tlink_comm_destroy(c);
        return rc;
    }
    const ucase cases[] = {
        {4 * size, 4, 64, TLINK_BF16, TLINK_BF16, 40, 1},
        {8 * size, 8, 33, TLINK_FP8_E4M3, TLINK_BF16, 57, 2},
        {2 * size, 3, 16, TLINK_BF16, TLINK_F32, 23, 3},
        {1 * size, 2, 130, TLINK_FP8_E4M3, TLINK_F32, 31, 4},
        {16 * size, 8, 256, TLINK_BF16, TLINK_BF16, 300, 5}, /* larger: several channel turns and TCP chunks */
        {4 * size, 1, 8, TLINK_BF16, TLINK_BF16, 0, 6},      /* nobody has tokens */
    };
    int nfail = 0, hier = 0;
    if (g_trials) {
        int rc = auto_trials(c, &cases[0], &nfail);
        tlink_comm_destroy(c);
        return rc;
    }
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int h = run_case(c, &cases[i], &nfail);
        if (h > 0) hier = 1;
        if (nfail) { fprintf(stderr, "rank %d: case %zu failed\n", rank, i); break; }
    }
    /* bad arguments: a clear error naming the argument */
    tlink_moe_config bad = {.num_experts = size == 1 ? 0 : size * 4 + 1, .top_k = 2, .hidden = 8, .dtype = TLINK_BF16};
    tlink_moe *m = NULL;
    if (tlink_moe_dispatch(c, &bad, 0, NULL, NULL, NULL, NULL, &m) != TLINK_ERR_INVALID_ARG ||
        !strstr(tlink_last_error(c), "num_experts"))
        { fprintf(stderr, "rank %d: bad num_experts: %s\n", rank, tlink_last_error(c)); nfail++; }
    bad.num_experts = size * 4;
    bad.dtype = TLINK_F32;
    if (tlink_moe_dispatch(c, &bad, 0, NULL, NULL, NULL, NULL, &m) != TLINK_ERR_INVALID_ARG || !strstr(tlink_last_error(c), "dtype"))
        nfail++;
    bad.dtype = TLINK_BF16;
    int32_t id[2] = {0, size * 4};
    float wt[2] = {1, 1};
    uint16_t xx[8] = {0};
    if (tlink_moe_dispatch(c, &bad, 1, xx, NULL, id, wt, &m) != TLINK_ERR_INVALID_ARG || !strstr(tlink_last_error(c), "topk_ids[1]"))
        { fprintf(stderr, "rank %d: bad id: %s\n", rank, tlink_last_error(c)); nfail++; }
    bad.dtype = TLINK_FP8_E4M3;
    id[1] = 0;
    if (tlink_moe_dispatch(c, &bad, 1, xx, NULL, id, wt, &m) != TLINK_ERR_INVALID_ARG || !strstr(tlink_last_error(c), "scales"))
        nfail++;
    if (tlink_barrier(c)) nfail++; /* the communicator is still usable */
    if (rank == 0)
        printf("moe %d ranks%s%s: %s (%s)\n", size, g_tcp ? " tcp" : "", g_hosts > 1 ? " multi-host" : "",
               nfail ? "FAILED" : "ok", hier ? "hierarchical" : "flat");
    if (g_hosts > 1 && g_algo == 2 && size > g_hosts && size % g_hosts == 0 && !hier) {
        fprintf(stderr, "rank %d: %d hosts of %d ranks did not take the hierarchical path\n", rank, g_hosts, size / g_hosts);
        nfail++;
    }
    tlink_comm_destroy(c);
    return nfail ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s NRANKS [--tcp] [--hosts H] [--algo flat|hier] [--kill] [--auto-trials]\n", argv[0]);
        return 2;
    }
    int n = atoi(argv[1]);
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--tcp")) g_tcp = 1;
        else if (!strcmp(argv[i], "--hosts") && i + 1 < argc) g_hosts = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--algo") && i + 1 < argc) { i++; g_algo = !strcmp(argv[i], "flat") ? 1 : 2; }
        else if (!strcmp(argv[i], "--kill")) g_kill = 1;
        else if (!strcmp(argv[i], "--auto-trials")) g_trials = 1;
    }
    if (g_tcp) setenv("TLINK_TRANSPORT", "tcp", 1);
    if (!getenv("TLINK_TIMEOUT")) setenv("TLINK_TIMEOUT", "60", 1);
    int codes[64] = {0};
    int failed = tlt_launch(n, rank_main, NULL, 170, codes);
    if (g_kill) {
        int bad = failed < 0;
        for (int r = 0; r < n; r++)
            if (codes[r] != (r == n - 1 ? 7 : 0)) { fprintf(stderr, "rank %d exited %d\n", r, codes[r]); bad = 1; }
        printf("moe kill: %s\n", bad ? "FAIL" : "ok");
        return bad;
    }
    if (failed) fprintf(stderr, "FAIL: %d rank(s) failed\n", failed);
    return failed ? 1 : 0;
}
