/* moe.c — expert-parallel dispatch and combine (the all-to-all of mixture-of-experts layers).
 *
 * Experts are owned contiguously: rank r holds experts [r L, (r+1) L), L = E / W. Dispatch
 * sends every token's hidden vector once to each rank that owns one of its top-k experts, and
 * returns the received tokens grouped per local expert: expert e's rows are contiguous, ordered
 * by (source rank, source token), a token routed to two experts of a rank is one message and
 * two rows. Combine sends back, per (token, rank), the sum of that rank's expert outputs for
 * the token weighted by the routing weights, and the source sums those in rank order.
 *
 * Flat exchange (one host, or hosts of different sizes, or cfg.algo = 1), every rank with
 * every other at once, through the point-to-point engine:
 *   A  counts: per destination, its unique tokens and its rows per local expert (L + 1 u64);
 *   B  metadata: per token, its index, fp8 scale and, per top-k slot, the destination's local
 *      expert (-1 when the slot is elsewhere) and weight;
 *   C  data: the rows of x gathered straight from the caller's buffer (a segment list, no
 *      packing copy) into the first row of each token at the receiver (a scatter list: the
 *      receiver knows the rows from A and B), then copied to the token's further rows.
 * Combine: each rank computes per received token sum_j w_j out[row_j] in f32 (slot order),
 * rounds it to the output dtype, and sends the block per source back; the source adds the
 * blocks of the ranks its token went to in rank order in f32 and rounds once.
 *
 * Hierarchical (several hosts with the same number of ranks each, cfg.algo 0 or 2): a token
 * crosses the network once per destination host. Stage 1 sends it to the rank of the same
 * local index on that host (its proxy there) over TCP with the slots that land on the host;
 * stage 2 has the proxy forward it over shared memory to the host's ranks that own its experts
 * (the flat exchange within the host, from a staging buffer). Combine runs backwards: the
 * host's ranks send their partial sums to the proxy, which adds them in local-rank order, rounds
 * once and sends one vector per (token, host) back; the source adds the hosts' in host order.
 * So y = R(sum_h R(sum_{q on h} R(sum_{slots on q} w o))) with R the rounding to the output
 * dtype, where the flat path computes R(sum_q R(sum_{slots on q} w o)). */
#include "tl_internal.h"

#include <stdlib.h>
#include <string.h>

#define MOE_MAX_TOPK 64

/* ---------- big buffers ----------
 * The received rows and the combine's vectors are hundreds of MB at DeepSeek-V3 sizes; fresh
 * from malloc they are fresh mappings, and the first touch of every page (a fault and the
 * kernel clearing it) cost as much as the copy into them. Freed ones are kept for the next
 * dispatch (process-wide, up to BIG_SLOTS blocks) and handed out when a request fits within
 * them and is at least half their size; fresh blocks get an eighth more than asked, as the
 * next call's counts differ a little. The cache holds at most TLINK_MOE_CACHE_MB, by default
 * the most this process ever had allocated at once (what one call needs: a smaller cache
 * gives part of it back at every call and maps it again at the next: a fixed 1 GiB made 8
 * ranks of DeepSeek-V3's size 1.6x slower). When full, the least recently cached
 * blocks go first. Each block starts with a header that holds its size. */
#define BIG_MIN ((size_t)1 << 20)
#define BIG_SLOTS 16
#define BIG_HDR 64
static pthread_mutex_t g_big_mu = PTHREAD_MUTEX_INITIALIZER;
static struct { char *p; size_t n; uint64_t stamp; } g_big[BIG_SLOTS];
static size_t g_big_total;            /* bytes cached */
static size_t g_big_live, g_big_peak; /* bytes handed out and not freed; their most */
static uint64_t g_big_clock;

static void *big_alloc(size_t n) {
    if (!n) n = 1;
    if (n < BIG_MIN) return malloc(n);
    pthread_mutex_lock(&g_big_mu);
    int best = -1;
    for (int i = 0; i < BIG_SLOTS; i++)
        if (g_big[i].p && g_big[i].n >= n && g_big[i].n <= 2 * n && (best < 0 || g_big[i].n < g_big[best].n)) best = i;
    char *p = NULL;
    size_t got = n + n / 8;
    if (best >= 0) {
        p = g_big[best].p;
        got = g_big[best].n;
        g_big_total -= got;
        g_big[best].p = NULL;
    }
    g_big_live += got;
    if (g_big_live > g_big_peak) g_big_peak = g_big_live;
    pthread_mutex_unlock(&g_big_mu);
    if (!p && !(p = malloc(BIG_HDR + got))) {
        pthread_mutex_lock(&g_big_mu);
        g_big_live -= got;
        pthread_mutex_unlock(&g_big_mu);
        return NULL;
    }
    memcpy(p, &got, sizeof got);
    return p + BIG_HDR;
}
/* the least recently cached block given back; its slot (-1: none cached). g_big_mu held. */
static int big_evict(void) {
    int old = -1;
    for (int i = 0; i < BIG_SLOTS; i++)
        if (g_big[i].p && (old < 0 || g_big[i].stamp < g_big[old].stamp)) old = i;
    if (old >= 0) {
        free(g_big[old].p);
        g_big_total -= g_big[old].n;
        g_big[old].p = NULL;
    }
    return old;
}
/* q came from big_alloc(n) */
static void big_free(void *q, size_t n) {
    if (!q) return;
    if (!n) n = 1;
    if (n < BIG_MIN) {
        free(q);
        return;
    }
    char *p = (char *)q - BIG_HDR;
    memcpy(&n, p, sizeof n);
    long long cap_mb = tb_knob_int_or(TB_K_TLINK_MOE_CACHE_MB, -1); /* -1: unset */
    pthread_mutex_lock(&g_big_mu);
    g_big_live -= TL_MIN(n, g_big_live);
    size_t limit = cap_mb >= 0 ? (size_t)cap_mb << 20 : g_big_peak;
    if (n <= limit) {
        while (g_big_total + n > limit && big_evict() >= 0) {}
        int slot = -1;
        for (int i = 0; i < BIG_SLOTS && slot < 0; i++)
            if (!g_big[i].p) slot = i;
        if (slot < 0) slot = big_evict();
        g_big[slot].p = p;
        g_big[slot].n = n;
        g_big[slot].stamp = ++g_big_clock;
        g_big_total += n;
        p = NULL;
    }
    pthread_mutex_unlock(&g_big_mu);
    free(p);
}

/* bf16 <-> f32, bit for bit as util.c's converters (inlined: they run per element) */
static inline float bf2f(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static inline uint16_t f2bf(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffff) > 0x7f800000) return (uint16_t)((x >> 16) | 0x40);
    return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

/* the metadata of one token in a message (B): index at the sender, scale, and per slot the
 * receiver's local expert (-1: not for it) and the weight. Stage 1 of the hierarchical path
 * also carries, per slot, the local index of the destination rank on the host (slot_q). */
typedef struct meta_hdr {
    int32_t token;      /* index at the original source */
    int32_t src;        /* the original source rank */
    float scale;
    int32_t pad;
} meta_hdr;
static size_t meta_size(int k, int with_q) {
    return (sizeof(meta_hdr) + (size_t)k * (2 + 4 + (with_q ? 2 : 0)) + 7) & ~(size_t)7;
}
static inline int16_t *meta_e(void *m) { return (int16_t *)((char *)m + sizeof(meta_hdr)); }
static inline float *meta_w(void *m, int k) { return (float *)((char *)m + sizeof(meta_hdr) + (size_t)k * 2); }
static inline int16_t *meta_q(void *m, int k) { return (int16_t *)((char *)m + sizeof(meta_hdr) + (size_t)k * 6); }

/* One exchange among a group: part i is what this rank sends to (or receives from) member i;
 * a part is a contiguous buffer or a segment list. All pairs at once. */
typedef struct part {
    const void *buf;
    const struct iovec *iov;
    const size_t *iov_off;
    int niov;
    size_t bytes;
    void (*fan)(void *ctx, size_t off, size_t n);  /* receive: see tl_op */
    void *fan_ctx;
} part;

static tlink_status exchange(tlink_comm *c, const int *ranks, int n, int me, const part *s, const part *r) {
    tl_op *ops = calloc((size_t)(2 * n), sizeof *ops);
    if (!ops) return tl_err(c, TLINK_ERR_NO_MEMORY, "%s: out of memory", c->cur_coll);
    int k = 0;
    /* pairs in the order of the pairwise schedule (me+1, me+2, ...): every rank starts with a
     * different peer, so the first bytes do not all pile on one rank */
    for (int d = 1; d < n; d++) {
        int to = (me + d) % n, from = (me - d + n) % n;
        if (s[to].bytes) {
            ops[k] = (tl_op){.peer = ranks[to], .is_send = 1, .sbuf = s[to].buf, .bytes = s[to].bytes,
                             .iov = s[to].iov, .iov_off = s[to].iov_off, .niov = s[to].niov};
            k++;
        }
        if (r[from].bytes) {
            ops[k] = (tl_op){.peer = ranks[from], .rbuf = (void *)r[from].buf, .bytes = r[from].bytes,
                             .iov = r[from].iov, .iov_off = r[from].iov_off, .niov = r[from].niov,
                             .fan = r[from].fan, .fan_ctx = r[from].fan_ctx};
            k++;
        }
    }
    tlink_status st = k ? tl_p2p_run(c, ops, k) : TLINK_OK;
    free(ops);
    return st;
}

/* ---------- the handle ---------- */
typedef struct hier_state hier_state;

struct tlink_moe {
    tlink_comm *c;
    tlink_moe_config cfg;
    size_t ntokens, es, rowbytes;
    int W, L, hier;
    int trial;                  /* 1 + the c->moe_pick entry this call is a timed trial of (0: none) */
    double trial_s;             /* its dispatch's seconds */
    /* received (this rank's experts) */
    size_t nrows, nuniq;
    size_t *eoff, *ecnt;        /* [L + 1], [L] */
    char *rx;                   /* [nrows][rowbytes] */
    float *rscale, *rw;         /* [nrows] (scales: fp8 only) */
    int32_t *rsrc, *rtok;       /* [nrows] */
    size_t *urow_off, *urows;   /* unique token u's rows: urows[urow_off[u] .. urow_off[u+1]) in slot order */
    int ng;                     /* groups the unique tokens came from (flat: W sources; hier: the host's ranks) */
    size_t *ug;                 /* [ng + 1]: group g's unique tokens are [ug[g], ug[g+1]) */
    /* sent (this rank's tokens), flat: tokens sent to rank q are stok[soff[q] .. soff[q+1]) */
    size_t *soff;
    int32_t *stok;
    hier_state *h;
};

struct hier_state {
    /* stage 1 (the cross group: ranks of my local index, one per host, c->cross) */
    int H, hme;
    size_t *s1off;              /* [H + 1] my tokens sent to host h: s1tok[s1off[h] ..) */
    int32_t *s1tok;
    size_t *p1off;              /* [H + 1] tokens this proxy got from the rank of host h */
    size_t np;                  /* proxy tokens (all hosts, mine included) */
    size_t rowbytes;
    char *pmeta;                /* [np] their stage-1 metadata (with slot_q) */
    char *px;                   /* [np][rowbytes] their data (my own host's: copied from x) */
    /* stage 2 (the local group): proxy token i went to local ranks fwd[fwd_off[i] ..) in
     * local order, where it is the fpos-th token of that rank's block */
    size_t *fwd_off;
    int32_t *fwd_q;
    size_t *fwd_pos;
    size_t *f2cnt;              /* [Lh] tokens forwarded to each local rank */
};

static void hier_free(hier_state *h) {
    if (!h) return;
    free(h->s1off); free(h->s1tok); free(h->p1off); free(h->pmeta); big_free(h->px, h->np * h->rowbytes);
    free(h->fwd_off); free(h->fwd_q); free(h->fwd_pos); free(h->f2cnt);
    free(h);
}

void tlink_moe_free(tlink_moe *m) {
    if (!m) return;
    free(m->eoff); free(m->ecnt); big_free(m->rx, m->nrows * m->rowbytes); free(m->rscale); free(m->rw); free(m->rsrc); free(m->rtok);
    free(m->urow_off); free(m->urows); free(m->ug); free(m->soff); free(m->stok);
    hier_free(m->h);
    free(m);
}

tlink_status tlink_moe_get_recv(const tlink_moe *m, tlink_moe_recv *o) {
    if (!m || !o) {
        tl_set_thread_error("tlink_moe_get_recv: %s is NULL", m ? "out" : "the handle");
        return TLINK_ERR_INVALID_ARG;
    }
    memset(o, 0, sizeof *o);
    o->num_local_experts = m->L;
    o->first_expert = m->c->rank * m->L;
    o->nrows = m->nrows;
    o->expert_offsets = m->eoff;
    o->expert_counts = m->ecnt;
    o->x = m->rx;
    o->scales = m->rscale;
    o->weights = m->rw;
    o->src_rank = m->rsrc;
    o->src_token = m->rtok;
    o->nunique = m->nuniq;
    return TLINK_OK;
}

const char *tlink_moe_algo(const tlink_moe *m) { return !m ? "" : m->hier ? "hierarchical" : "flat"; }

/* ---------- the receiving end (shared by flat and stage 2): rows from metadata ----------
 * ng groups of records (group g: cnt[g] records at metas + rec_off[g]); per group and local
 * expert the row counts are cnt_e[g][e]. Rows of expert e are ordered by (source rank, token):
 * flat, group g is source g; in stage 2 the records carry the source rank. Fills the row
 * arrays, the unique tokens' CSR and their first rows. */
static tlink_status place_rows(tlink_moe *m, int ng, const size_t *cnt, const char *metas, size_t msz, int k,
                               size_t **first_row_out) {
    tlink_comm *c = m->c;
    const int L = m->L, W = m->W;
    size_t nu = 0;
    for (int g = 0; g < ng; g++) nu += cnt[g];
    /* rows per (expert, source rank), then their starts */
    size_t *pos = calloc((size_t)L * (size_t)W, sizeof *pos);
    m->ecnt = calloc((size_t)L, sizeof *m->ecnt);
    m->eoff = calloc((size_t)L + 1, sizeof *m->eoff);
    m->urow_off = calloc(nu + 1, sizeof *m->urow_off);
    size_t *first = malloc((nu ? nu : 1) * sizeof *first);
    m->ug = calloc((size_t)ng + 1, sizeof *m->ug);
    if (!pos || !m->ecnt || !m->eoff || !m->urow_off || !first || !m->ug) {
        free(pos);
        free(first);
        return tl_err(c, TLINK_ERR_NO_MEMORY, "%s: out of memory", c->cur_coll);
    }
    size_t u = 0, rows = 0;
    for (int g = 0; g < ng; g++) {
        m->ug[g] = u;
        for (size_t i = 0; i < cnt[g]; i++, u++) {
            const char *rec = metas + u * msz;
            const meta_hdr *hd = (const meta_hdr *)rec;
            const int16_t *e = (const int16_t *)(rec + sizeof(meta_hdr));
            if (hd->src < 0 || hd->src >= W) {
                free(pos);
                free(first);
                return tl_err(c, TLINK_ERR_INTERNAL, "%s: a token record names source rank %d", c->cur_coll, hd->src);
            }
            size_t nr = 0;
            for (int j = 0; j < k; j++) {
                if (e[j] < 0) continue;
                if (e[j] >= L) {
                    free(pos);
                    free(first);
                    return tl_err(c, TLINK_ERR_INTERNAL, "%s: a token record names local expert %d of %d", c->cur_coll,
                                  e[j], L);
                }
                pos[(size_t)e[j] * W + hd->src]++;
                nr++;
            }
            m->urow_off[u + 1] = m->urow_off[u] + nr;
            rows += nr;
        }
    }
    m->ug[ng] = u;
    size_t run = 0;
    for (int e = 0; e < L; e++) {
        m->eoff[e] = run;
        for (int s = 0; s < W; s++) {
            size_t n = pos[(size_t)e * W + s];
            pos[(size_t)e * W + s] = run;
            run += n;
            m->ecnt[e] += n;
        }
    }
    m->eoff[L] = run;
    m->nrows = rows;
    m->nuniq = nu;
    const int fp8 = m->cfg.dtype == TLINK_FP8_E4M3;
    m->rx = big_alloc(rows * m->rowbytes);
    m->rw = malloc((rows ? rows : 1) * sizeof(float));
    m->rsrc = malloc((rows ? rows : 1) * sizeof(int32_t));
    m->rtok = malloc((rows ? rows : 1) * sizeof(int32_t));
    m->rscale = fp8 ? malloc((rows ? rows : 1) * sizeof(float)) : NULL;
    m->urows = malloc((rows ? rows : 1) * sizeof(size_t));
    if (!m->rx || !m->rw || !m->rsrc || !m->rtok || (fp8 && !m->rscale) || !m->urows) {
        free(pos);
        free(first);
        return tl_err(c, TLINK_ERR_NO_MEMORY, "%s: out of memory for %zu received rows of %zu bytes", c->cur_coll,
                      rows, m->rowbytes);
    }
    /* assign, in record order: a source's records arrive in its token order, so rows of (e, s)
     * follow the token order */
    for (u = 0; u < nu; u++) {
        const char *rec = metas + u * msz;
        const meta_hdr *hd = (const meta_hdr *)rec;
        const int16_t *e = (const int16_t *)(rec + sizeof(meta_hdr));
        const float *w = (const float *)(rec + sizeof(meta_hdr) + (size_t)k * 2);
        size_t o = m->urow_off[u];
        for (int j = 0; j < k; j++) {
            if (e[j] < 0) continue;
            size_t row = pos[(size_t)e[j] * W + hd->src]++;
            m->rw[row] = w[j];
            m->rsrc[row] = hd->src;
            m->rtok[row] = hd->token;
            if (fp8) m->rscale[row] = hd->scale;
            m->urows[o++] = row;
        }
        first[u] = m->urow_off[u] < m->urow_off[u + 1] ? m->urows[m->urow_off[u]] : (size_t)-1;
    }
    free(pos);
    *first_row_out = first;
    return TLINK_OK;
}

/* the scatter list of group g's tokens: their first rows (consecutive rows merge) */
static int scatter_list(tlink_moe *m, const size_t *first, size_t u0, size_t u1, struct iovec **iov, size_t **off) {
    size_t n = u1 - u0;
    *iov = malloc((n ? n : 1) * sizeof **iov);
    *off = malloc((n + 1) * sizeof **off);
    if (!*iov || !*off) return -1;
    int k = 0;
    size_t at = 0;
    (*off)[0] = 0;
    for (size_t u = u0; u < u1; u++) {
        char *p = m->rx + first[u] * m->rowbytes;
        if (k && (char *)(*iov)[k - 1].iov_base + (*iov)[k - 1].iov_len == p) {
            (*iov)[k - 1].iov_len += m->rowbytes;
        } else {
            (*iov)[k].iov_base = p;
            (*iov)[k].iov_len = m->rowbytes;
            (*off)[k] = at;
            k++;
        }
        at += m->rowbytes;
    }
    (*off)[k] = at;
    return k;
}

/* the gather list of rows of a source buffer (x, or the proxy's staging), by index */
static int gather_list(const char *base, size_t rowbytes, const int32_t *idx, size_t n, struct iovec **iov,
                       size_t **off) {
    *iov = malloc((n ? n : 1) * sizeof **iov);
    *off = malloc((n + 1) * sizeof **off);
    if (!*iov || !*off) return -1;
    int k = 0;
    size_t at = 0;
    (*off)[0] = 0;
    for (size_t i = 0; i < n; i++) {
        const char *p = base + (size_t)idx[i] * rowbytes;
        if (k && (const char *)(*iov)[k - 1].iov_base + (*iov)[k - 1].iov_len == p) {
            (*iov)[k - 1].iov_len += rowbytes;
        } else {
            (*iov)[k].iov_base = (void *)p;
            (*iov)[k].iov_len = rowbytes;
            (*off)[k] = at;
            k++;
        }
        at += rowbytes;
    }
    (*off)[k] = at;
    return k;
}

/* copies unique tokens [u0, u1)'s first rows to their further rows */
static void replicate(tlink_moe *m, size_t u0, size_t u1) {
    for (size_t u = u0; u < u1; u++) {
        size_t a = m->urow_off[u], b = m->urow_off[u + 1];
        if (b - a < 2) continue;
        const char *src = m->rx + m->urows[a] * m->rowbytes;
        for (size_t i = a + 1; i < b; i++) memcpy(m->rx + m->urows[i] * m->rowbytes, src, m->rowbytes);
    }
}

/* the same as the bytes of a source's message land in the first rows (the engine calls it
 * while they are in cache): bytes [off, off + n) of the message are tokens off / rowbytes .. */
typedef struct fan_ctx { tlink_moe *m; size_t u0; } fan_ctx;
static void fan_rows(void *arg, size_t off, size_t n) {
    const fan_ctx *f = arg;
    tlink_moe *m = f->m;
    const size_t rb = m->rowbytes;
    for (size_t i = off / rb; i * rb < off + n; i++) {
        const size_t u = f->u0 + i, a = m->urow_off[u], b = m->urow_off[u + 1];
        if (b - a < 2) continue;
        const size_t lo = (off > i * rb ? off - i * rb : 0), hi = TL_MIN(off + n - i * rb, rb);
        const char *src = m->rx + m->urows[a] * rb + lo;
        for (size_t r = a + 1; r < b; r++) memcpy(m->rx + m->urows[r] * rb + lo, src, hi - lo);
    }
}

/* ---------- exchanges of a group: counts, metadata, data ----------
 * The group (ranks[0..n), me) exchanges tokens: to member q go the cnt_s[q] records at
 * smeta + soff_rec[q]*msz whose data rows are src rows sidx[soff_rec[q] ..) of sbase. On return
 * the handle's rows are placed and filled (place_rows with the members as groups). */
static tlink_status group_dispatch(tlink_moe *m, const int *ranks, int n, int me, const size_t *scnt, const char *smeta,
                                   size_t msz, const char *sbase, const int32_t *sidx) {
    tlink_comm *c = m->c;
    const int k = m->cfg.top_k;
    tlink_status st = TLINK_OK;
    size_t *rcnt = calloc((size_t)n, sizeof *rcnt), *soff = calloc((size_t)n + 1, sizeof *soff);
    size_t *roff = calloc((size_t)n + 1, sizeof *roff);
    part *sp = calloc((size_t)n, sizeof *sp), *rp = calloc((size_t)n, sizeof *rp);
    struct iovec **siov = calloc((size_t)n, sizeof *siov), **riov = calloc((size_t)n, sizeof *riov);
    size_t **sio = calloc((size_t)n, sizeof *sio), **rio = calloc((size_t)n, sizeof *rio);
    char *rmeta = NULL;
    size_t *first = NULL;
    fan_ctx *fans = NULL;
    if (!rcnt || !soff || !roff || !sp || !rp || !siov || !riov || !sio || !rio) {
        st = tl_err(c, TLINK_ERR_NO_MEMORY, "%s: out of memory", c->cur_coll);
        goto out;
    }
    for (int q = 0; q < n; q++) soff[q + 1] = soff[q] + scnt[q];
    /* A: the counts */
    for (int q = 0; q < n; q++) {
        sp[q] = (part){.buf = &scnt[q], .bytes = sizeof(size_t)};
        rp[q] = (part){.buf = &rcnt[q], .bytes = sizeof(size_t)};
    }
    rcnt[me] = scnt[me];
    sp[me].bytes = rp[me].bytes = 0;
    if ((st = exchange(c, ranks, n, me, sp, rp))) goto out;
    for (int q = 0; q < n; q++) {
        if (rcnt[q] > ((size_t)1 << 40) / (msz + m->rowbytes)) {
            st = tl_err(c, TLINK_ERR_INTERNAL, "%s: rank %d announced %zu tokens", c->cur_coll, ranks[q], rcnt[q]);
            goto out;
        }
        roff[q + 1] = roff[q] + rcnt[q];
    }
    /* B: the metadata */
    rmeta = malloc(roff[n] ? roff[n] * msz : 1);
    if (!rmeta) { st = tl_err(c, TLINK_ERR_NO_MEMORY, "%s: out of memory", c->cur_coll); goto out; }
    for (int q = 0; q < n; q++) {
        sp[q] = (part){.buf = smeta + soff[q] * msz, .bytes = scnt[q] * msz};
        rp[q] = (part){.buf = rmeta + roff[q] * msz, .bytes = rcnt[q] * msz};
    }
    if (scnt[me]) memcpy(rmeta + roff[me] * msz, smeta + soff[me] * msz, scnt[me] * msz);
    sp[me].bytes = rp[me].bytes = 0;
    if ((st = exchange(c, ranks, n, me, sp, rp))) goto out;
    /* the rows, then C: the data, gathered and scattered */
    if ((st = place_rows(m, n, rcnt, rmeta, msz, k, &first))) goto out;
    fans = calloc((size_t)n, sizeof *fans);
    if (!fans) { st = tl_err(c, TLINK_ERR_NO_MEMORY, "%s: out of memory", c->cur_coll); goto out; }
    for (int q = 0; q < n; q++) {
        int ns = gather_list(sbase, m->rowbytes, sidx + soff[q], scnt[q], &siov[q], &sio[q]);
        int nr = scatter_list(m, first, roff[q], roff[q + 1], &riov[q], &rio[q]);
        if (ns < 0 || nr < 0) { st = tl_err(c, TLINK_ERR_NO_MEMORY, "%s: out of memory", c->cur_coll); goto out; }
        fans[q] = (fan_ctx){m, roff[q]};
        sp[q] = (part){.iov = siov[q], .iov_off = sio[q], .niov = ns, .bytes = scnt[q] * m->rowbytes};
        rp[q] = (part){.iov = riov[q], .iov_off = rio[q], .niov = nr, .bytes = rcnt[q] * m->rowbytes,
                       .fan = fan_rows, .fan_ctx = &fans[q]};
    }
    /* my own tokens: copied */
    for (size_t i = 0; i < scnt[me]; i++) {
        size_t u = roff[me] + i;
        if (first[u] != (size_t)-1)
            memcpy(m->rx + first[u] * m->rowbytes, sbase + (size_t)sidx[soff[me] + i] * m->rowbytes, m->rowbytes);
    }
    sp[me].bytes = rp[me].bytes = 0;
    if ((st = exchange(c, ranks, n, me, sp, rp))) goto out;
    replicate(m, roff[me], roff[me + 1]); /* the others' tokens were copied on as they landed */
out:
    if (siov)
        for (int q = 0; q < n; q++) { free(siov[q]); free(riov[q]); free(sio[q]); free(rio[q]); }
    free(siov); free(riov); free(sio); free(rio);
    free(rcnt); free(soff); free(roff); free(sp); free(rp); free(rmeta); free(first); free(fans);
    return st;
}

/* ---------- validation ---------- */
static tlink_status check_cfg(tlink_comm *c, const tlink_moe_config *cfg, const char *what) {
    if (!cfg) return tl_err(c, TLINK_ERR_INVALID_ARG, "%s: cfg is NULL", what);
    if (cfg->num_experts <= 0 || cfg->num_experts % c->size)
        return tl_err(c, TLINK_ERR_INVALID_ARG, "%s: cfg->num_experts = %d is not a positive multiple of the %d ranks",
                      what, cfg->num_experts, c->size);
    if (cfg->num_experts / c->size > 32767)
        return tl_err(c, TLINK_ERR_INVALID_ARG, "%s: cfg->num_experts = %d: more than 32767 experts per rank", what,
                      cfg->num_experts);
    if (cfg->top_k < 1 || cfg->top_k > MOE_MAX_TOPK)
        return tl_err(c, TLINK_ERR_INVALID_ARG, "%s: cfg->top_k = %d is not in 1..%d", what, cfg->top_k, MOE_MAX_TOPK);
    if (cfg->hidden == 0 || cfg->hidden > ((size_t)1 << 30))
        return tl_err(c, TLINK_ERR_INVALID_ARG, "%s: cfg->hidden = %zu is not in 1..2^30", what, cfg->hidden);
    if (cfg->dtype != TLINK_BF16 && cfg->dtype != TLINK_FP8_E4M3)
        return tl_err(c, TLINK_ERR_INVALID_ARG, "%s: cfg->dtype = %s: bf16 or fp8_e4m3 (with per-token scales)", what,
                      tlink_dtype_name(cfg->dtype));
    if (cfg->algo < 0 || cfg->algo > 2)
        return tl_err(c, TLINK_ERR_INVALID_ARG, "%s: cfg->algo = %d: 0 (auto), 1 (flat) or 2 (hierarchical)", what,
                      cfg->algo);
    return TLINK_OK;
}

/* ---------- the executor: after queued nonblocking work, one call at a time ---------- */
/* exec_begin returns the start time when libtile traces (0 otherwise); exec_end writes the
 * call into the Chrome trace as the collectives do (coll.c tl_coll_run) */
static double exec_begin(tlink_comm *c, const char *name) {
    tl_async_drain(c);
    pthread_mutex_lock(&c->exec_mu);
    c->cur_coll = name;
    tl_stat_begin(c, name, -1);
    return tb_trace_on() ? tb_trace_now() : 0;
}
static void exec_end(tlink_comm *c, const char *name, double t0, size_t rows, size_t hidden, tlink_status st) {
    tl_stat_end(c);
    pthread_mutex_unlock(&c->exec_mu);
    if (t0 > 0) {
        char args[256];
        snprintf(args, sizeof args, "\"rank\": %d, \"size\": %d, \"rows\": %zu, \"hidden\": %zu, \"status\": %d",
                 c->rank, c->size, rows, hidden, (int)st);
        tb_trace_span(name, "collective", t0, tb_trace_now() - t0, args);
    }
}

/* ---------- dispatch ---------- */
static tlink_status dispatch_flat(tlink_moe *m, const void *x, const float *scales, const int32_t *ids,
                                  const float *wts) {
    tlink_comm *c = m->c;
    const int W = m->W, L = m->L, k = m->cfg.top_k;
    const size_t T = m->ntokens, msz = meta_size(k, 0);
    tlink_status st = TLINK_OK;
    m->soff = calloc((size_t)W + 1, sizeof *m->soff);
    size_t *scnt = calloc((size_t)W, sizeof *scnt);
    int32_t *dest = malloc((T ? T * (size_t)k : 1) * sizeof *dest); /* distinct ranks per token */
    int *ndest = calloc(T ? T : 1, sizeof *ndest);
    char *smeta = NULL;
    if (!m->soff || !scnt || !dest || !ndest) { st = tl_err(c, TLINK_ERR_NO_MEMORY, "moe_dispatch: out of memory"); goto out; }
    for (size_t t = 0; t < T; t++) {
        int nd = 0;
        int32_t *d = dest + t * (size_t)k;
        for (int j = 0; j < k; j++) {
            int32_t id = ids[t * (size_t)k + (size_t)j];
            if (id < 0) continue;
            int q = id / L, seen = 0;
            for (int i = 0; i < nd; i++) seen |= d[i] == q;
            if (!seen) { d[nd++] = q; scnt[q]++; }
        }
        ndest[t] = nd;
    }
    for (int q = 0; q < W; q++) m->soff[q + 1] = m->soff[q] + scnt[q];
    size_t nsend = m->soff[W];
    m->stok = malloc((nsend ? nsend : 1) * sizeof *m->stok);
    smeta = calloc(nsend ? nsend : 1, msz);
    if (!m->stok || !smeta) { st = tl_err(c, TLINK_ERR_NO_MEMORY, "moe_dispatch: out of memory"); goto out; }
    size_t *cur = calloc((size_t)W, sizeof *cur);
    if (!cur) { st = tl_err(c, TLINK_ERR_NO_MEMORY, "moe_dispatch: out of memory"); goto out; }
    for (int q = 0; q < W; q++) cur[q] = m->soff[q];
    for (size_t t = 0; t < T; t++) {
        for (int i = 0; i < ndest[t]; i++) {
            int q = dest[t * (size_t)k + (size_t)i];
            size_t at = cur[q]++;
            m->stok[at] = (int32_t)t;
            char *rec = smeta + at * msz;
            meta_hdr *hd = (meta_hdr *)rec;
            hd->token = (int32_t)t;
            hd->src = c->rank;
            hd->scale = scales ? scales[t] : 0.0f;
            int16_t *e = meta_e(rec);
            float *w = meta_w(rec, k);
            for (int j = 0; j < k; j++) {
                int32_t id = ids[t * (size_t)k + (size_t)j];
                e[j] = id >= 0 && id / L == q ? (int16_t)(id % L) : -1;
                w[j] = e[j] >= 0 ? wts[t * (size_t)k + (size_t)j] : 0.0f;
            }
        }
    }
    free(cur);
    st = group_dispatch(m, c->world, W, c->rank, scnt, smeta, msz, x, m->stok);
    m->ng = W;
out:
    free(scnt);
    free(dest);
    free(ndest);
    free(smeta);
    return st;
}

static tlink_status dispatch_hier(tlink_moe *m, const void *x, const float *scales, const int32_t *ids,
                                  const float *wts);

/* algo auto where the hierarchical exchange is possible. Which exchange is faster depends on
 * what the start-up ping-pong cannot see well: how much slower the network is than shared
 * memory under load (the hierarchical exchange sends a token across it once per host instead
 * of once per rank, 2.6 times on average at DeepSeek-V3's routing over 2 hosts of 4 ranks, and
 * pays a second, intra-host pass for it) and how many ranks share a core (both passes then
 * compete for it; between network namespaces of one 2-core VM the two measure within 5%). So
 * it is measured, per (experts, top-k, row bytes). A process's first calls are slower
 * whichever exchange they take (buffers mapped and cached, TCP windows opening, ranks moving
 * off shared CPUs), so the first MOE_SETTLE calls take the flat exchange untimed; then come
 * pairs of calls of one exchange, the pairs in the order flat, hier, hier, flat, ... (drift
 * cancels), the second call of each pair timed (dispatch plus combine): the first after a
 * switch maps buffers of sizes the other did not need, which a job that keeps one exchange
 * never pays. Once every rank has TLINK_MOE_TRIALS timed calls of each, the slowest rank's
 * sums pick the one kept. Every rank sees the same sequence of calls, so all make the same
 * choice. */
#define MOE_SETTLE 2
static tlink_status moe_auto(tlink_comm *c, tlink_moe *m, int *hier) {
    int trials = tb_knob_int(TB_K_TLINK_MOE_TRIALS);
    *hier = 1;
    if (trials <= 0) return TLINK_OK;
    struct tl_moe_pick *e = NULL;
    for (int i = 0; i < c->moe_npick && !e; i++)
        if (c->moe_pick[i].num_experts == m->cfg.num_experts && c->moe_pick[i].top_k == m->cfg.top_k &&
            c->moe_pick[i].rowbytes == m->rowbytes)
            e = &c->moe_pick[i];
    if (!e) {
        int n = (int)(sizeof c->moe_pick / sizeof c->moe_pick[0]);
        e = &c->moe_pick[c->moe_npick < n ? c->moe_npick++ : m->cfg.top_k % n]; /* full: any slot, alike on every rank */
        *e = (struct tl_moe_pick){.num_experts = m->cfg.num_experts, .top_k = m->cfg.top_k, .rowbytes = m->rowbytes,
                                  .pick = -1};
    }
    if (e->pick < 0 && e->done[0] >= trials && e->done[1] >= trials) {
        double t[2] = {e->t[0], e->t[1]};
        tlink_status st = tlink_allreduce(c, t, t, 2, TLINK_F64, TLINK_MAX);
        if (st) {
            char why[sizeof c->errmsg];
            snprintf(why, sizeof why, "%s", tlink_last_error(c));
            return tl_err(c, st, "moe_dispatch: agreeing on the exchange of algo auto: %s", why);
        }
        e->pick = t[1] < t[0];
        if (c->rank == 0)
            tl_log(TL_LOG_INFO, "moe: algo auto keeps the %s exchange (%d timed calls of each, slowest rank: flat %.2f ms, "
                   "hierarchical %.2f ms)", e->pick ? "hierarchical" : "flat", e->done[0], t[0] * 1e3, t[1] * 1e3);
    }
    if (e->pick >= 0) {
        *hier = e->pick;
        return TLINK_OK;
    }
    int k = e->started++ - MOE_SETTLE, pair = k / 2;
    *hier = k >= 0 && (pair % 4 == 1 || pair % 4 == 2);
    if (k >= 0 && k % 2) m->trial = 1 + (int)(e - c->moe_pick);
    return TLINK_OK;
}

/* a timed trial call finished: add its seconds to the entry it was made for (if still there) */
static void moe_trial_done(tlink_moe *m, double combine_s) {
    tlink_comm *c = m->c;
    struct tl_moe_pick *e = &c->moe_pick[m->trial - 1];
    if (e->pick >= 0 || e->num_experts != m->cfg.num_experts || e->top_k != m->cfg.top_k || e->rowbytes != m->rowbytes)
        return;
    e->t[m->hier] += m->trial_s + combine_s;
    e->done[m->hier]++;
}

tlink_status tlink_moe_dispatch(tlink_comm *c, const tlink_moe_config *cfg, size_t ntokens, const void *x,
                                const float *scales, const int32_t *topk_ids, const float *topk_weights,
                                tlink_moe **out) {
    if (!c) {
        tl_set_thread_error("moe_dispatch: comm is NULL");
        return TLINK_ERR_INVALID_ARG;
    }
    if (!out) return tl_err(c, TLINK_ERR_INVALID_ARG, "moe_dispatch: out is NULL");
    *out = NULL;
    tlink_status st = check_cfg(c, cfg, "moe_dispatch");
    if (st) return st;
    if (ntokens > (size_t)INT32_MAX) return tl_err(c, TLINK_ERR_INVALID_ARG, "moe_dispatch: ntokens = %zu > 2^31-1", ntokens);
    if (ntokens && (!x || !topk_ids || !topk_weights))
        return tl_err(c, TLINK_ERR_INVALID_ARG, "moe_dispatch: %s is NULL", !x ? "x" : !topk_ids ? "topk_ids" : "topk_weights");
    if (ntokens && cfg->dtype == TLINK_FP8_E4M3 && !scales)
        return tl_err(c, TLINK_ERR_INVALID_ARG, "moe_dispatch: scales is NULL (fp8_e4m3 needs one f32 scale per token)");
    for (size_t i = 0; i < ntokens * (size_t)cfg->top_k; i++)
        if (topk_ids[i] < -1 || topk_ids[i] >= cfg->num_experts)
            return tl_err(c, TLINK_ERR_INVALID_ARG, "moe_dispatch: topk_ids[%zu] = %d (token %zu, slot %zu) is not in -1..%d",
                          i, topk_ids[i], i / (size_t)cfg->top_k, i % (size_t)cfg->top_k, cfg->num_experts - 1);
    tlink_moe *m = calloc(1, sizeof *m);
    if (!m) return tl_err(c, TLINK_ERR_NO_MEMORY, "moe_dispatch: out of memory");
    m->c = c;
    m->cfg = *cfg;
    m->ntokens = ntokens;
    m->es = tlink_dtype_size(cfg->dtype);
    m->rowbytes = cfg->hidden * m->es;
    m->W = c->size;
    m->L = cfg->num_experts / c->size;
    /* hierarchical is possible with several hosts of equal size, some of them with more than
     * one rank (the same on every rank: the topology is shared); auto measures whether it pays */
    int can_hier = c->nhosts > 1 && c->cross && c->local_size > 1;
    m->hier = cfg->algo == 2 ? can_hier : 0;
    if (cfg->algo == 0 && can_hier && (st = moe_auto(c, m, &m->hier))) {
        tlink_moe_free(m);
        return st;
    }
    double t0 = exec_begin(c, "moe_dispatch"), ts = tl_now();
    st = tl_check_broken(c);
    if (!st) st = m->hier ? dispatch_hier(m, x, scales, topk_ids, topk_weights) : dispatch_flat(m, x, scales, topk_ids, topk_weights);
    m->trial_s = tl_now() - ts;
    exec_end(c, "moe_dispatch", t0, ntokens, cfg->hidden, st);
    if (st) {
        tlink_moe_free(m);
        return st;
    }
    *out = m;
    return TLINK_OK;
}

/* ---------- combine ---------- */
/* The weighted sums, y = R(((0 + w0 s0) + w1 s1) + ...) in f32 with R the rounding to the
 * output dtype, in one pass per input vector: the first writes the f32 accumulator (or, alone,
 * the output), the middle ones add into it, the last adds and rounds into the output. The
 * result is bit for bit that of zeroing an accumulator, adding every w s in order and rounding
 * it in a last pass, with one pass over the accumulator less per vector and none for tokens
 * with one vector (the common case). Built for AVX2 beside the baseline and picked at load
 * time (GCC's target_clones; 8 floats a step instead of 4), without FMA: a fused multiply-add
 * would round differently from the reference. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define MOE_CLONES __attribute__((target_clones("avx2", "default"), optimize("fp-contract=off")))
#else
#define MOE_CLONES
#endif
MOE_CLONES static void ws_bf16_first(float *acc, const uint16_t *s, float w, size_t H) {
    for (size_t i = 0; i < H; i++) acc[i] = 0.0f + w * bf2f(s[i]);
}
MOE_CLONES static void ws_bf16_add(float *acc, const uint16_t *s, float w, size_t H) {
    for (size_t i = 0; i < H; i++) acc[i] += w * bf2f(s[i]);
}
MOE_CLONES static void ws_bf16_only(uint16_t *d, const uint16_t *s, float w, size_t H) {
    for (size_t i = 0; i < H; i++) d[i] = f2bf(0.0f + w * bf2f(s[i]));
}
MOE_CLONES static void ws_bf16_last(uint16_t *d, const float *acc, const uint16_t *s, float w, size_t H) {
    for (size_t i = 0; i < H; i++) d[i] = f2bf(acc[i] + w * bf2f(s[i]));
}
MOE_CLONES static void ws_f32_first(float *acc, const float *s, float w, size_t H) {
    for (size_t i = 0; i < H; i++) acc[i] = 0.0f + w * s[i];
}
MOE_CLONES static void ws_f32_add(float *acc, const float *s, float w, size_t H) {
    for (size_t i = 0; i < H; i++) acc[i] += w * s[i];
}

/* dst = R(sum_j w[j] src[j]) (w NULL: all 1, exact: 1 x is x), n >= 0 */
static void wsum(void *dst, tlink_dtype dt, const void *const *src, const float *w, int n, float *acc, size_t H) {
    if (n == 0) {
        memset(dst, 0, H * tlink_dtype_size(dt));
        return;
    }
    if (dt == TLINK_BF16) {
        if (n == 1) {
            ws_bf16_only(dst, src[0], w ? w[0] : 1.0f, H);
            return;
        }
        ws_bf16_first(acc, src[0], w ? w[0] : 1.0f, H);
        for (int j = 1; j < n - 1; j++) ws_bf16_add(acc, src[j], w ? w[j] : 1.0f, H);
        ws_bf16_last(dst, acc, src[n - 1], w ? w[n - 1] : 1.0f, H);
    } else {
        float *d = dst; /* f32: no rounding, the accumulator is the output */
        ws_f32_first(d, src[0], w ? w[0] : 1.0f, H);
        for (int j = 1; j < n; j++) ws_f32_add(d, src[j], w ? w[j] : 1.0f, H);
    }
}

/* at most this many vectors meet in one sum: rows of a token on one rank (top-k), ranks or
 * hosts of a token (the world size: the caller's array) */
typedef struct wlist {
    const void **src;
    float *w;
    int cap;
} wlist;
static int wlist_init(wlist *l, int cap) {
    l->cap = cap < 1 ? 1 : cap;
    l->src = malloc((size_t)l->cap * sizeof *l->src);
    l->w = malloc((size_t)l->cap * sizeof *l->w);
    return l->src && l->w ? 0 : -1;
}
static void wlist_free(wlist *l) { free(l->src); free(l->w); }

/* partial sums of the unique tokens [u0, u1): sum over their rows (slot order) of w * out, f32,
 * rounded to dt, into dst (contiguous) */
static void partials(const tlink_moe *m, const void *eout, tlink_dtype dt, size_t u0, size_t u1, void *dst,
                     float *acc, wlist *l) {
    const size_t H = m->cfg.hidden, vb = H * tlink_dtype_size(dt);
    for (size_t u = u0; u < u1; u++) {
        int n = 0;
        for (size_t r = m->urow_off[u]; r < m->urow_off[u + 1] && n < l->cap; r++, n++) {
            size_t row = m->urows[r];
            l->w[n] = m->rw[row];
            l->src[n] = (const char *)eout + row * vb;
        }
        wsum((char *)dst + (u - u0) * vb, dt, l->src, l->w, n, acc, H);
    }
}

/* the group's return trip: this rank sends group g the partials of its unique tokens
 * [ug[g], ug[g+1]) and receives from member q rcnt[q] vectors into rbuf (in the order it sent
 * the tokens) */
static tlink_status group_combine_exchange(tlink_moe *m, const int *ranks, int n, int me, const char *sendp,
                                           const size_t *rcnt, char *rbuf, size_t vb) {
    tlink_comm *c = m->c;
    part *sp = calloc((size_t)n, sizeof *sp), *rp = calloc((size_t)n, sizeof *rp);
    if (!sp || !rp) { free(sp); free(rp); return tl_err(c, TLINK_ERR_NO_MEMORY, "moe_combine: out of memory"); }
    size_t ro = 0;
    for (int q = 0; q < n; q++) {
        sp[q] = (part){.buf = sendp + m->ug[q] * vb, .bytes = (m->ug[q + 1] - m->ug[q]) * vb};
        rp[q] = (part){.buf = rbuf + ro * vb, .bytes = rcnt[q] * vb};
        ro += rcnt[q];
    }
    sp[me].bytes = rp[me].bytes = 0; /* the caller copies its own */
    tlink_status st = exchange(c, ranks, n, me, sp, rp);
    free(sp);
    free(rp);
    return st;
}

static tlink_status combine_flat(tlink_moe *m, const void *eout, tlink_dtype dt, void *y) {
    tlink_comm *c = m->c;
    const int W = m->W;
    const size_t H = m->cfg.hidden, vb = H * tlink_dtype_size(dt), T = m->ntokens;
    tlink_status st = TLINK_OK;
    size_t nback = m->soff[W];
    char *sendp = big_alloc(m->nuniq * vb), *back = big_alloc(nback * vb);
    size_t *rcnt = calloc((size_t)W, sizeof *rcnt), *cur = calloc((size_t)W, sizeof *cur);
    float *acc = malloc(H * sizeof(float));
    wlist wl = {0};
    if (!sendp || !back || !rcnt || !cur || !acc || wlist_init(&wl, TL_MAX(m->cfg.top_k, W))) {
        st = tl_err(c, TLINK_ERR_NO_MEMORY, "moe_combine: out of memory");
        goto out;
    }
    partials(m, eout, dt, 0, m->nuniq, sendp, acc, &wl);
    for (int q = 0; q < W; q++) rcnt[q] = m->soff[q + 1] - m->soff[q];
    if ((st = group_combine_exchange(m, c->world, W, c->rank, sendp, rcnt, back, vb))) goto out;
    /* y[t] = R(sum over the ranks t went to, in rank order): every rank's block lists its
     * tokens in ascending order, so one cursor per rank walks them; my own partials are read
     * where they were computed */
    const int me = c->rank;
    for (int q = 0; q < W; q++) cur[q] = m->soff[q];
    for (size_t t = 0; t < T; t++) {
        int n = 0;
        for (int q = 0; q < W; q++) {
            if (cur[q] < m->soff[q + 1] && m->stok[cur[q]] == (int32_t)t) {
                wl.src[n++] = q == me ? sendp + (m->ug[me] + (cur[q] - m->soff[me])) * vb : back + cur[q] * vb;
                cur[q]++;
            }
        }
        wsum((char *)y + t * vb, dt, wl.src, NULL, n, acc, H);
    }
out:
    big_free(sendp, m->nuniq * vb);
    big_free(back, nback * vb);
    free(rcnt); free(cur); free(acc);
    wlist_free(&wl);
    return st;
}

static tlink_status combine_hier(tlink_moe *m, const void *eout, tlink_dtype dt, void *y);

tlink_status tlink_moe_combine(tlink_moe *m, const void *expert_out, tlink_dtype dt, void *y) {
    if (!m) {
        tl_set_thread_error("moe_combine: the handle is NULL");
        return TLINK_ERR_INVALID_ARG;
    }
    tlink_comm *c = m->c;
    if (dt != TLINK_BF16 && dt != TLINK_F32)
        return tl_err(c, TLINK_ERR_INVALID_ARG, "moe_combine: out_dtype = %s: bf16 or f32", tlink_dtype_name(dt));
    if (m->nrows && !expert_out) return tl_err(c, TLINK_ERR_INVALID_ARG, "moe_combine: expert_out is NULL (%zu rows)", m->nrows);
    if (m->ntokens && !y) return tl_err(c, TLINK_ERR_INVALID_ARG, "moe_combine: y is NULL (%zu tokens)", m->ntokens);
    double t0 = exec_begin(c, "moe_combine"), ts = tl_now();
    tlink_status st = tl_check_broken(c);
    if (!st) st = m->hier ? combine_hier(m, expert_out, dt, y) : combine_flat(m, expert_out, dt, y);
    if (!st && m->trial) moe_trial_done(m, tl_now() - ts);
    m->trial = 0;
    exec_end(c, "moe_combine", t0, m->nrows, m->cfg.hidden, st);
    return st;
}

/* ---------- hierarchical ---------- */
/* Stage 1's exchange among the cross group: counts, metadata and rows (gathered from sbase by
 * sidx) into contiguous staging, per source in group order. */
static tlink_status stage_exchange(tlink_moe *m, const int *ranks, int n, int me, const size_t *scnt, const char *smeta,
                                   size_t msz, const char *sbase, const int32_t *sidx, size_t *roff, char **rmeta_out,
                                   char **rdata_out) {
    tlink_comm *c = m->c;
    tlink_status st = TLINK_OK;
    size_t *rcnt = calloc((size_t)n, sizeof *rcnt), *soff = calloc((size_t)n + 1, sizeof *soff);
    part *sp = calloc((size_t)n, sizeof *sp), *rp = calloc((size_t)n, sizeof *rp);
    struct iovec **siov = calloc((size_t)n, sizeof *siov);
    size_t **sio = calloc((size_t)n, sizeof *sio);
    char *rmeta = NULL, *rdata = NULL;
    if (!rcnt || !soff || !sp || !rp || !siov || !sio) { st = tl_err(c, TLINK_ERR_NO_MEMORY, "%s: out of memory", c->cur_coll); goto out; }
    for (int q = 0; q < n; q++) soff[q + 1] = soff[q] + scnt[q];
    for (int q = 0; q < n; q++) {
        sp[q] = (part){.buf = &scnt[q], .bytes = sizeof(size_t)};
        rp[q] = (part){.buf = &rcnt[q], .bytes = sizeof(size_t)};
    }
    rcnt[me] = scnt[me];
    sp[me].bytes = rp[me].bytes = 0;
    if ((st = exchange(c, ranks, n, me, sp, rp))) goto out;
    roff[0] = 0;
    for (int q = 0; q < n; q++) {
        if (rcnt[q] > ((size_t)1 << 40) / (msz + m->rowbytes)) {
            st = tl_err(c, TLINK_ERR_INTERNAL, "%s: rank %d announced %zu tokens", c->cur_coll, ranks[q], rcnt[q]);
            goto out;
        }
        roff[q + 1] = roff[q] + rcnt[q];
    }
    rmeta = malloc(roff[n] ? roff[n] * msz : 1);
    rdata = big_alloc(roff[n] * m->rowbytes);
    if (!rmeta || !rdata) { st = tl_err(c, TLINK_ERR_NO_MEMORY, "%s: out of memory for %zu staged tokens", c->cur_coll, roff[n]); goto out; }
    for (int q = 0; q < n; q++) {
        sp[q] = (part){.buf = smeta + soff[q] * msz, .bytes = scnt[q] * msz};
        rp[q] = (part){.buf = rmeta + roff[q] * msz, .bytes = rcnt[q] * msz};
    }
    if (scnt[me]) memcpy(rmeta + roff[me] * msz, smeta + soff[me] * msz, scnt[me] * msz);
    sp[me].bytes = rp[me].bytes = 0;
    if ((st = exchange(c, ranks, n, me, sp, rp))) goto out;
    for (int q = 0; q < n; q++) {
        int ns = gather_list(sbase, m->rowbytes, sidx + soff[q], scnt[q], &siov[q], &sio[q]);
        if (ns < 0) { st = tl_err(c, TLINK_ERR_NO_MEMORY, "%s: out of memory", c->cur_coll); goto out; }
        sp[q] = (part){.iov = siov[q], .iov_off = sio[q], .niov = ns, .bytes = scnt[q] * m->rowbytes};
        rp[q] = (part){.buf = rdata + roff[q] * m->rowbytes, .bytes = rcnt[q] * m->rowbytes};
    }
    for (size_t i = 0; i < scnt[me]; i++)
        memcpy(rdata + (roff[me] + i) * m->rowbytes, sbase + (size_t)sidx[soff[me] + i] * m->rowbytes, m->rowbytes);
    sp[me].bytes = rp[me].bytes = 0;
    /* both sides of a message use one kind of buffer (single copy chooses alike): the
     * receiver's contiguous buffer goes as a one-segment list */
    struct iovec *riov = calloc((size_t)n, sizeof *riov);
    size_t *rio = calloc((size_t)n * 2, sizeof *rio);
    if (!riov || !rio) { free(riov); free(rio); st = tl_err(c, TLINK_ERR_NO_MEMORY, "%s: out of memory", c->cur_coll); goto out; }
    for (int q = 0; q < n; q++) {
        riov[q] = (struct iovec){(void *)rp[q].buf, rp[q].bytes};
        rio[2 * q] = 0;
        rio[2 * q + 1] = rp[q].bytes;
        rp[q].iov = &riov[q];
        rp[q].iov_off = &rio[2 * q];
        rp[q].niov = 1;
    }
    st = exchange(c, ranks, n, me, sp, rp);
    free(riov);
    free(rio);
out:
    if (siov)
        for (int q = 0; q < n; q++) { free(siov[q]); free(sio[q]); }
    free(siov); free(sio); free(rcnt); free(soff); free(sp); free(rp);
    if (st) { free(rmeta); big_free(rdata, roff[n] * m->rowbytes); rmeta = rdata = NULL; }
    *rmeta_out = rmeta;
    *rdata_out = rdata;
    return st;
}

static tlink_status dispatch_hier(tlink_moe *m, const void *x, const float *scales, const int32_t *ids,
                                  const float *wts) {
    tlink_comm *c = m->c;
    const int L = m->L, k = m->cfg.top_k, Hn = c->nhosts, Lh = c->local_size;
    const size_t T = m->ntokens, msz1 = meta_size(k, 1), msz2 = meta_size(k, 0);
    tlink_status st = TLINK_OK;
    hier_state *h = m->h = calloc(1, sizeof *h);
    if (!h) return tl_err(c, TLINK_ERR_NO_MEMORY, "moe_dispatch: out of memory");
    h->H = Hn;
    h->hme = c->host_idx;
    h->rowbytes = m->rowbytes;
    size_t *s1cnt = calloc((size_t)Hn, sizeof *s1cnt), *cur = calloc((size_t)Hn, sizeof *cur);
    int32_t *dh = malloc((T ? T * (size_t)k : 1) * sizeof *dh);
    int *ndh = calloc(T ? T : 1, sizeof *ndh);
    char *smeta = NULL, *smeta2 = NULL;
    int32_t *fidx = NULL;
    size_t *f2off = NULL, *f2cur = NULL;
    h->s1off = calloc((size_t)Hn + 1, sizeof *h->s1off);
    h->p1off = calloc((size_t)Hn + 1, sizeof *h->p1off);
    h->f2cnt = calloc((size_t)Lh, sizeof *h->f2cnt);
    if (!s1cnt || !cur || !dh || !ndh || !h->s1off || !h->p1off || !h->f2cnt) {
        st = tl_err(c, TLINK_ERR_NO_MEMORY, "moe_dispatch: out of memory");
        goto out;
    }
    /* stage 1: per token, the hosts of its experts' ranks */
    for (size_t t = 0; t < T; t++) {
        int nd = 0;
        int32_t *d = dh + t * (size_t)k;
        for (int j = 0; j < k; j++) {
            int32_t id = ids[t * (size_t)k + (size_t)j];
            if (id < 0) continue;
            int hh = c->host_of[id / L], seen = 0;
            for (int i = 0; i < nd; i++) seen |= d[i] == hh;
            if (!seen) { d[nd++] = hh; s1cnt[hh]++; }
        }
        ndh[t] = nd;
    }
    for (int hh = 0; hh < Hn; hh++) h->s1off[hh + 1] = h->s1off[hh] + s1cnt[hh];
    size_t n1 = h->s1off[Hn];
    h->s1tok = malloc((n1 ? n1 : 1) * sizeof *h->s1tok);
    smeta = calloc(n1 ? n1 : 1, msz1);
    if (!h->s1tok || !smeta) { st = tl_err(c, TLINK_ERR_NO_MEMORY, "moe_dispatch: out of memory"); goto out; }
    for (int hh = 0; hh < Hn; hh++) cur[hh] = h->s1off[hh];
    for (size_t t = 0; t < T; t++) {
        for (int i = 0; i < ndh[t]; i++) {
            int hh = dh[t * (size_t)k + (size_t)i];
            size_t at = cur[hh]++;
            h->s1tok[at] = (int32_t)t;
            char *rec = smeta + at * msz1;
            meta_hdr *hd = (meta_hdr *)rec;
            hd->token = (int32_t)t;
            hd->src = c->rank;
            hd->scale = scales ? scales[t] : 0.0f;
            int16_t *e = meta_e(rec), *q = meta_q(rec, k);
            float *w = meta_w(rec, k);
            for (int j = 0; j < k; j++) {
                int32_t id = ids[t * (size_t)k + (size_t)j];
                int on = id >= 0 && c->host_of[id / L] == hh;
                e[j] = on ? (int16_t)(id % L) : -1;
                q[j] = on ? (int16_t)c->peers[id / L].local_idx : -1;
                w[j] = on ? wts[t * (size_t)k + (size_t)j] : 0.0f;
            }
        }
    }
    c->cur_coll = "moe_dispatch";
    if ((st = stage_exchange(m, c->cross, Hn, h->hme, s1cnt, smeta, msz1, x, h->s1tok, h->p1off, &h->pmeta, &h->px)))
        goto out;
    h->np = h->p1off[Hn];
    /* stage 2: the proxy forwards each staged token to the host's ranks of its experts */
    const size_t np = h->np;
    h->fwd_off = calloc(np + 1, sizeof *h->fwd_off);
    for (size_t i = 0; i < np && h->fwd_off; i++) {
        const int16_t *q = meta_q(h->pmeta + i * msz1, k);
        int nq = 0;
        for (int j = 0; j < k; j++) {
            if (q[j] < 0) continue;
            if (q[j] >= Lh) { st = tl_err(c, TLINK_ERR_INTERNAL, "moe_dispatch: a token record names local rank %d of %d", q[j], Lh); goto out; }
            int seen = 0;
            for (int jj = 0; jj < j; jj++) seen |= q[jj] == q[j];
            if (!seen) { nq++; h->f2cnt[q[j]]++; }
        }
        h->fwd_off[i + 1] = h->fwd_off[i] + (size_t)nq;
    }
    size_t nf = h->fwd_off ? h->fwd_off[np] : 0;
    h->fwd_q = malloc((nf ? nf : 1) * sizeof *h->fwd_q);
    h->fwd_pos = malloc((nf ? nf : 1) * sizeof *h->fwd_pos);
    fidx = malloc((nf ? nf : 1) * sizeof *fidx);
    smeta2 = calloc(nf ? nf : 1, msz2);
    f2off = calloc((size_t)Lh + 1, sizeof *f2off);
    f2cur = calloc((size_t)Lh, sizeof *f2cur);
    if (!h->fwd_off || !h->fwd_q || !h->fwd_pos || !fidx || !smeta2 || !f2off || !f2cur) {
        st = tl_err(c, TLINK_ERR_NO_MEMORY, "moe_dispatch: out of memory");
        goto out;
    }
    for (int l = 0; l < Lh; l++) f2off[l + 1] = f2off[l] + h->f2cnt[l];
    for (size_t i = 0; i < np; i++) {
        char *rec1 = h->pmeta + i * msz1;
        const meta_hdr *hd1 = (const meta_hdr *)rec1;
        const int16_t *e1 = meta_e(rec1), *q1 = meta_q(rec1, k);
        const float *w1 = meta_w(rec1, k);
        size_t f = h->fwd_off[i];
        for (int l = 0; l < Lh; l++) {   /* local rank order: the combine sums in this order */
            int any = 0;
            for (int j = 0; j < k; j++) any |= q1[j] == l;
            if (!any) continue;
            size_t at = f2off[l] + f2cur[l];
            h->fwd_q[f] = l;
            h->fwd_pos[f] = f2cur[l]++;
            f++;
            fidx[at] = (int32_t)i;
            char *rec2 = smeta2 + at * msz2;
            meta_hdr *hd2 = (meta_hdr *)rec2;
            *hd2 = *hd1;
            int16_t *e2 = meta_e(rec2);
            float *w2 = meta_w(rec2, k);
            for (int j = 0; j < k; j++) {
                e2[j] = q1[j] == l ? e1[j] : -1;
                w2[j] = q1[j] == l ? w1[j] : 0.0f;
            }
        }
    }
    st = group_dispatch(m, c->local_ranks, Lh, c->local_rank, h->f2cnt, smeta2, msz2, h->px, fidx);
    m->ng = Lh;
out:
    free(s1cnt); free(cur); free(dh); free(ndh); free(smeta); free(smeta2); free(fidx); free(f2off); free(f2cur);
    return st;
}

static tlink_status combine_hier(tlink_moe *m, const void *eout, tlink_dtype dt, void *y) {
    tlink_comm *c = m->c;
    hier_state *h = m->h;
    const int Hn = h->H, Lh = c->local_size, li = c->local_rank;
    const size_t H = m->cfg.hidden, vb = H * tlink_dtype_size(dt), T = m->ntokens, np = h->np;
    tlink_status st = TLINK_OK;
    size_t nf = 0;
    for (int l = 0; l < Lh; l++) nf += h->f2cnt[l];
    char *sendp = big_alloc(m->nuniq * vb);       /* my partials, per proxy */
    char *back2 = big_alloc(nf * vb);             /* partials of the tokens I forwarded */
    char *hsum = big_alloc(np * vb);              /* per staged token: the host's sum */
    char *back1 = big_alloc(h->s1off[Hn] * vb);   /* per host: my tokens' host sums */
    size_t *b2off = calloc((size_t)Lh + 1, sizeof *b2off), *cur = calloc((size_t)Hn, sizeof *cur);
    size_t *s1cnt = calloc((size_t)Hn, sizeof *s1cnt);
    float *acc = malloc(H * sizeof(float));
    part *sp = calloc((size_t)Hn, sizeof *sp), *rp = calloc((size_t)Hn, sizeof *rp);
    wlist wl = {0};
    if (!sendp || !back2 || !hsum || !back1 || !b2off || !cur || !s1cnt || !acc || !sp || !rp ||
        wlist_init(&wl, TL_MAX(m->cfg.top_k, TL_MAX(Lh, Hn)))) {
        st = tl_err(c, TLINK_ERR_NO_MEMORY, "moe_combine: out of memory");
        goto out;
    }
    /* stage 2 back: my partials to the proxies, theirs for what I forwarded */
    partials(m, eout, dt, 0, m->nuniq, sendp, acc, &wl);
    for (int l = 0; l < Lh; l++) b2off[l + 1] = b2off[l] + h->f2cnt[l];
    if ((st = group_combine_exchange(m, c->local_ranks, Lh, li, sendp, h->f2cnt, back2, vb))) goto out;
    /* the host's sum per staged token, local ranks in order, rounded (my own partials read
     * where they were computed) */
    for (size_t i = 0; i < np; i++) {
        int n = 0;
        for (size_t f = h->fwd_off[i]; f < h->fwd_off[i + 1] && n < wl.cap; f++) {
            const int q = h->fwd_q[f];
            wl.src[n++] = q == li ? sendp + (m->ug[li] + h->fwd_pos[f]) * vb : back2 + (b2off[q] + h->fwd_pos[f]) * vb;
        }
        wsum(hsum + i * vb, dt, wl.src, NULL, n, acc, H);
    }
    /* stage 1 back: the host sums to the sources, one vector per (token, host) */
    size_t ro = 0;
    for (int hh = 0; hh < Hn; hh++) {
        s1cnt[hh] = h->s1off[hh + 1] - h->s1off[hh];
        sp[hh] = (part){.buf = hsum + h->p1off[hh] * vb, .bytes = (h->p1off[hh + 1] - h->p1off[hh]) * vb};
        rp[hh] = (part){.buf = back1 + ro * vb, .bytes = s1cnt[hh] * vb};
        ro += s1cnt[hh];
    }
    sp[h->hme].bytes = rp[h->hme].bytes = 0;
    if ((st = exchange(c, c->cross, Hn, h->hme, sp, rp))) goto out;
    /* y[t] = R(sum over the hosts t went to, in host order) */
    for (int hh = 0; hh < Hn; hh++) cur[hh] = h->s1off[hh];
    for (size_t t = 0; t < T; t++) {
        int n = 0;
        for (int hh = 0; hh < Hn; hh++) {
            if (cur[hh] < h->s1off[hh + 1] && h->s1tok[cur[hh]] == (int32_t)t) {
                wl.src[n++] = hh == h->hme ? hsum + (h->p1off[hh] + (cur[hh] - h->s1off[hh])) * vb : back1 + cur[hh] * vb;
                cur[hh]++;
            }
        }
        wsum((char *)y + t * vb, dt, wl.src, NULL, n, acc, H);
    }
out:
    big_free(sendp, m->nuniq * vb);
    big_free(back2, nf * vb);
    big_free(hsum, np * vb);
    big_free(back1, h->s1off[Hn] * vb);
    free(b2off); free(cur); free(s1cnt); free(acc); free(sp); free(rp);
    wlist_free(&wl);
    return st;
}
