/* coll.c — collective algorithms over the point-to-point engine, and the public collective
 * entry points. Every algorithm works on a group (a list of global ranks and my index in it),
 * so the hierarchical algorithm reuses the flat ones inside a host and across hosts. */
#include "tl_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct grp { int n, me; const int *ranks; } grp;

#define TREE_CHUNK (64u * 1024u)

static inline size_t blk_off(size_t count, int nb, int i) {
    size_t q = count / (size_t)nb, r = count % (size_t)nb;
    return (size_t)i * q + TL_MIN((size_t)i, r);
}
static inline size_t blk_cnt(size_t count, int nb, int i) {
    return count / (size_t)nb + ((size_t)i < count % (size_t)nb ? 1 : 0);
}
static inline int pow2_floor(int n) { int p = 1; while (p * 2 <= n) p *= 2; return p; }
#define G(i) (g->ranks[i])

/* ---------- allreduce ---------- */
/* src: the input when it is not buf (out of place), else NULL. The copy into buf is fused
 * with the reduce-scatter: every block of buf but my own is first written by a reduction
 * (buf = src op received, piece by piece while it is in cache), my own block is sent from src
 * and arrives whole in the allgather; so the input is read once and buf written once, not
 * copied as a whole first (a 4 MiB copy was 14% of a rank's CPU time in the two-rank TCP
 * all-reduce). */
static tlink_status ring_allreduce_src(tlink_comm *c, const grp *g, char *buf, const char *src, size_t count, size_t es,
                                       tl_reduce_fn red) {
    int n = g->n, r = g->me;
    if (n == 1) {
        if (src) memcpy(buf, src, count * es);
        return TLINK_OK;
    }
    int right = G((r + 1) % n), left = G((r - 1 + n) % n);
    for (int s = 0; s < n - 1; s++) {
        int sb = (r - s + 2 * n) % n, rb = (r - s - 1 + 2 * n) % n;
        const char *from = s == 0 && src ? src : buf;
        tlink_status st = tl_xchg_src(c, right, from + blk_off(count, n, sb) * es, blk_cnt(count, n, sb) * es, left,
                                      buf + blk_off(count, n, rb) * es, src ? src + blk_off(count, n, rb) * es : NULL,
                                      blk_cnt(count, n, rb) * es, red, es);
        if (st) return st;
    }
    for (int s = 0; s < n - 1; s++) {
        int sb = (r + 1 - s + 2 * n) % n, rb = (r - s + 2 * n) % n;
        tlink_status st = tl_xchg(c, right, buf + blk_off(count, n, sb) * es, blk_cnt(count, n, sb) * es, left,
                                  buf + blk_off(count, n, rb) * es, blk_cnt(count, n, rb) * es, NULL, es);
        if (st) return st;
    }
    return TLINK_OK;
}
static tlink_status ring_allreduce(tlink_comm *c, const grp *g, char *buf, size_t count, size_t es, tl_reduce_fn red) {
    return ring_allreduce_src(c, g, buf, NULL, count, es, red);
}

/* fold a non-power-of-two group onto p2 ranks: returns my new index or -1 (idle) */
static tlink_status fold_in(tlink_comm *c, const grp *g, char *buf, size_t bytes, size_t es, tl_reduce_fn red,
                            int *newidx) {
    int n = g->n, r = g->me, p2 = pow2_floor(n), rem = n - p2;
    if (r < 2 * rem) {
        if (r % 2 == 0) { *newidx = -1; return tl_send(c, G(r + 1), buf, bytes); }
        *newidx = r / 2;
        return tl_recv_reduce(c, G(r - 1), buf, bytes, red, es);
    }
    *newidx = r - rem;
    return TLINK_OK;
}
static tlink_status fold_out(tlink_comm *c, const grp *g, char *buf, size_t bytes) {
    int n = g->n, r = g->me, rem = n - pow2_floor(n);
    if (r < 2 * rem) {
        if (r % 2 == 0) return tl_recv(c, G(r + 1), buf, bytes);
        return tl_send(c, G(r - 1), buf, bytes);
    }
    return TLINK_OK;
}
static inline int unfold_rank(const grp *g, int vr) {
    int rem = g->n - pow2_floor(g->n);
    return G(vr < rem ? vr * 2 + 1 : vr + rem);
}

static tlink_status rd_allreduce(tlink_comm *c, const grp *g, char *buf, size_t count, size_t es, tl_reduce_fn red) {
    if (g->n == 1) return TLINK_OK;
    size_t bytes = count * es;
    int vr;
    tlink_status st = fold_in(c, g, buf, bytes, es, red, &vr);
    if (st) return st;
    if (vr >= 0) {
        char *tmp = tl_scratch(c, bytes);
        if (!tmp) return TLINK_ERR_NO_MEMORY;
        int p2 = pow2_floor(g->n);
        for (int mask = 1; mask < p2; mask <<= 1) {
            int peer = unfold_rank(g, vr ^ mask);
            memcpy(tmp, buf, bytes);
            st = tl_xchg(c, peer, tmp, bytes, peer, buf, bytes, red, es);
            if (st) return st;
        }
    }
    return fold_out(c, g, buf, bytes);
}

static tlink_status rab_allreduce(tlink_comm *c, const grp *g, char *buf, size_t count, size_t es, tl_reduce_fn red) {
    if (g->n == 1) return TLINK_OK;
    size_t bytes = count * es;
    int vr;
    tlink_status st = fold_in(c, g, buf, bytes, es, red, &vr);
    if (st) return st;
    if (vr >= 0) {
        int p2 = pow2_floor(g->n), lo = 0, hi = p2;
        for (int mask = p2 / 2; mask >= 1; mask >>= 1) {
            int peer = unfold_rank(g, vr ^ mask), mid = lo + (hi - lo) / 2;
            int klo, khi, slo, shi;
            if (vr & mask) { klo = mid; khi = hi; slo = lo; shi = mid; }
            else { klo = lo; khi = mid; slo = mid; shi = hi; }
            size_t so = blk_off(count, p2, slo), sn = blk_off(count, p2, shi) - so;
            size_t ko = blk_off(count, p2, klo), kn = blk_off(count, p2, khi) - ko;
            st = tl_xchg(c, peer, buf + so * es, sn * es, peer, buf + ko * es, kn * es, red, es);
            if (st) return st;
            lo = klo;
            hi = khi;
        }
        for (int mask = 1; mask < p2; mask <<= 1) {
            int peer = unfold_rank(g, vr ^ mask);
            int mlo = vr & ~(mask - 1), plo = (vr ^ mask) & ~(mask - 1);
            size_t mo = blk_off(count, p2, mlo), mn = blk_off(count, p2, mlo + mask) - mo;
            size_t po = blk_off(count, p2, plo), pn = blk_off(count, p2, plo + mask) - po;
            st = tl_xchg(c, peer, buf + mo * es, mn * es, peer, buf + po * es, pn * es, NULL, es);
            if (st) return st;
        }
    }
    return fold_out(c, g, buf, bytes);
}

/* ---------- trees ---------- */
/* result at g index root; buf is the working buffer everywhere (clobbered off-root) */
static tlink_status binomial_reduce(tlink_comm *c, const grp *g, int root, char *buf, size_t count, size_t es,
                                    tl_reduce_fn red) {
    int n = g->n, vr = (g->me - root + n) % n;
    size_t bytes = count * es;
    for (int mask = 1; mask < n; mask <<= 1) {
        if (vr & mask) return tl_send(c, G((vr - mask + root) % n), buf, bytes);
        if (vr + mask < n) {
            tlink_status st = tl_recv_reduce(c, G((vr + mask + root) % n), buf, bytes, red, es);
            if (st) return st;
        }
    }
    return TLINK_OK;
}

static tlink_status binomial_bcast(tlink_comm *c, const grp *g, int root, char *buf, size_t bytes) {
    int n = g->n, vr = (g->me - root + n) % n, mask = 1;
    while (mask < n) {
        if (vr & mask) {
            tlink_status st = tl_recv(c, G((vr - mask + root) % n), buf, bytes);
            if (st) return st;
            break;
        }
        mask <<= 1;
    }
    for (mask >>= 1; mask > 0; mask >>= 1) {
        if (vr + mask < n) {
            tlink_status st = tl_send(c, G((vr + mask + root) % n), buf, bytes);
            if (st) return st;
        }
    }
    return TLINK_OK;
}

/* pipelined chain root -> root+1 -> ... */
static tlink_status chain_bcast(tlink_comm *c, const grp *g, int root, char *buf, size_t bytes) {
    int n = g->n, vr = (g->me - root + n) % n;
    int prev = vr > 0 ? G((vr - 1 + root) % n) : -1, next = vr < n - 1 ? G((vr + 1 + root) % n) : -1;
    size_t ch = TREE_CHUNK, nch = (bytes + ch - 1) / ch;
    for (size_t k = 0; k < nch; k++) {
        size_t off = k * ch, len = TL_MIN(ch, bytes - off);
        tl_op ops[2];
        int m = 0;
        memset(ops, 0, sizeof ops);
        if (prev >= 0) ops[m++] = (tl_op){.peer = prev, .rbuf = buf + off, .bytes = len};
        if (next >= 0) {
            ops[m] = (tl_op){.peer = next, .is_send = 1, .sbuf = buf + off, .bytes = len};
            if (prev >= 0) { ops[m].ndep = 1; ops[m].dep[0] = 0; }
            m++;
        }
        tlink_status st = tl_p2p_run(c, ops, m);
        if (st) return st;
    }
    return TLINK_OK;
}

/* double binary tree: non-root nodes m = vr-1 in [0,N) form a heap (tree A) and the mirrored
 * heap (tree B); interior nodes of one are mostly leaves of the other. Half the data goes
 * down each tree, in pipelined chunks. */
typedef struct dbt { int parent[2], child[2][2]; } dbt;
static int dbt_g(const grp *g, int root, int m) { return G((m + 1 + root) % g->n); }
static void dbt_build(const grp *g, int root, dbt *t) {
    int n = g->n, N = n - 1, vr = (g->me - root + n) % n;
    for (int tr = 0; tr < 2; tr++) {
        t->parent[tr] = -1;
        t->child[tr][0] = t->child[tr][1] = -1;
        if (vr == 0) {
            if (N > 0) t->child[tr][0] = dbt_g(g, root, tr == 0 ? 0 : N - 1);
            continue;
        }
        int m = vr - 1, h = tr == 0 ? m : N - 1 - m; /* heap index in this tree */
        int ph = (h - 1) / 2;
        t->parent[tr] = h == 0 ? G(root) : dbt_g(g, root, tr == 0 ? ph : N - 1 - ph);
        for (int k = 0; k < 2; k++) {
            int ch = 2 * h + 1 + k;
            if (ch < N) t->child[tr][k] = dbt_g(g, root, tr == 0 ? ch : N - 1 - ch);
        }
    }
}

static tlink_status dbt_run(tlink_comm *c, const grp *g, int root, char *buf, size_t count, size_t es,
                            tl_reduce_fn red, int is_reduce) {
    if (g->n == 1 || !count) return TLINK_OK;
    dbt t;
    dbt_build(g, root, &t);
    size_t cnt[2] = {(count + 1) / 2, count / 2}, base[2] = {0, (count + 1) / 2};
    size_t chel = TL_MAX((size_t)1, TREE_CHUNK / es);
    size_t nch[2] = {(cnt[0] + chel - 1) / chel, (cnt[1] + chel - 1) / chel};
    size_t steps = TL_MAX(nch[0], nch[1]);
    for (size_t k = 0; k < steps; k++) {
        tl_op ops[8];
        int m = 0;
        memset(ops, 0, sizeof ops);
        for (int tr = 0; tr < 2; tr++) {
            if (k >= nch[tr]) continue;
            size_t eo = base[tr] + k * chel, en = TL_MIN(chel, cnt[tr] - k * chel);
            char *p = buf + eo * es;
            size_t len = en * es;
            if (!is_reduce) {
                int rix = -1;
                if (t.parent[tr] >= 0) { rix = m; ops[m++] = (tl_op){.peer = t.parent[tr], .rbuf = p, .bytes = len}; }
                for (int q = 0; q < 2; q++) {
                    if (t.child[tr][q] < 0) continue;
                    ops[m] = (tl_op){.peer = t.child[tr][q], .is_send = 1, .sbuf = p, .bytes = len};
                    if (rix >= 0) { ops[m].ndep = 1; ops[m].dep[0] = rix; }
                    m++;
                }
            } else {
                int r0 = -1, r1 = -1;
                for (int q = 0; q < 2; q++) {
                    if (t.child[tr][q] < 0) continue;
                    ops[m] = (tl_op){.peer = t.child[tr][q], .rbuf = p, .bytes = len, .red = red, .esize = es};
                    if (r0 >= 0) { ops[m].ndep = 1; ops[m].dep[0] = r0; r1 = m; }
                    else r0 = m;
                    m++;
                }
                if (t.parent[tr] >= 0) {
                    ops[m] = (tl_op){.peer = t.parent[tr], .is_send = 1, .sbuf = p, .bytes = len};
                    if (r0 >= 0) ops[m].dep[ops[m].ndep++] = r0;
                    if (r1 >= 0) ops[m].dep[ops[m].ndep++] = r1;
                    m++;
                }
            }
        }
        tlink_status st = tl_p2p_run(c, ops, m);
        if (st) return st;
    }
    return TLINK_OK;
}

/* ---------- allgather / reduce_scatter / alltoall / barrier ---------- */
static tlink_status ring_allgather(tlink_comm *c, const grp *g, char *buf, size_t blk) {
    int n = g->n, r = g->me;
    int right = G((r + 1) % n), left = G((r - 1 + n) % n);
    for (int s = 0; s < n - 1; s++) {
        int sb = (r - s + n) % n, rb = (r - s - 1 + n) % n;
        tlink_status st = tl_xchg(c, right, buf + (size_t)sb * blk, blk, left, buf + (size_t)rb * blk, blk, NULL, 1);
        if (st) return st;
    }
    return TLINK_OK;
}

static tlink_status rd_allgather(tlink_comm *c, const grp *g, char *buf, size_t blk) {
    int r = g->me;
    for (int mask = 1; mask < g->n; mask <<= 1) {
        int peer = r ^ mask, mlo = r & ~(mask - 1), plo = peer & ~(mask - 1);
        tlink_status st = tl_xchg(c, G(peer), buf + (size_t)mlo * blk, (size_t)mask * blk, G(peer),
                                  buf + (size_t)plo * blk, (size_t)mask * blk, NULL, 1);
        if (st) return st;
    }
    return TLINK_OK;
}

/* work holds n blocks (split of count); afterwards block g->me is reduced */
static tlink_status ring_reduce_scatter(tlink_comm *c, const grp *g, char *work, size_t count, size_t es,
                                        tl_reduce_fn red) {
    int n = g->n, r = g->me;
    int right = G((r + 1) % n), left = G((r - 1 + n) % n);
    for (int s = 0; s < n - 1; s++) {
        int sb = (r - s - 1 + 2 * n) % n, rb = (r - s - 2 + 2 * n) % n;
        tlink_status st = tl_xchg(c, right, work + blk_off(count, n, sb) * es, blk_cnt(count, n, sb) * es, left,
                                  work + blk_off(count, n, rb) * es, blk_cnt(count, n, rb) * es, red, es);
        if (st) return st;
    }
    return TLINK_OK;
}

static tlink_status halving_reduce_scatter(tlink_comm *c, const grp *g, char *work, size_t count, size_t es,
                                           tl_reduce_fn red) {
    int n = g->n, r = g->me, lo = 0, hi = n;
    for (int mask = n / 2; mask >= 1; mask >>= 1) {
        int peer = r ^ mask, mid = lo + (hi - lo) / 2, klo, khi, slo, shi;
        if (r & mask) { klo = mid; khi = hi; slo = lo; shi = mid; }
        else { klo = lo; khi = mid; slo = mid; shi = hi; }
        size_t so = blk_off(count, n, slo), sn = blk_off(count, n, shi) - so;
        size_t ko = blk_off(count, n, klo), kn = blk_off(count, n, khi) - ko;
        tlink_status st = tl_xchg(c, G(peer), work + so * es, sn * es, G(peer), work + ko * es, kn * es, red, es);
        if (st) return st;
        lo = klo;
        hi = khi;
    }
    return TLINK_OK;
}

static tlink_status dissemination_barrier(tlink_comm *c, const grp *g) {
    int n = g->n, r = g->me;
    char out = 1, in = 0;
    for (int k = 1; k < n; k <<= 1) {
        tlink_status st = tl_xchg(c, G((r + k) % n), &out, 1, G((r - k + n) % n), &in, 1, NULL, 1);
        if (st) return st;
    }
    return TLINK_OK;
}

/* ---------- direct shared-memory collectives (one host) ----------
 * Every rank copies its input into its own slot (double-buffered by the operation's parity),
 * publishes a sequence number and reduces all slots in rank order, so results are bitwise
 * identical everywhere; one synchronisation instead of log(n) steps.
 * Slot reuse needs no extra wait: a rank publishes its arrival at operation k+1 only after it
 * has finished reading every slot of operation k, and nobody writes a slot of parity k again
 * (operation k+2) before it has seen every rank arrive at k+1. Every direct operation (inline,
 * slot, segmented, barrier) publishes an arrival and waits for everyone's. */
static int direct_all_arrived(tlink_comm *c, void *arg) {
    uint64_t op = *(uint64_t *)arg;
    for (int i = 0; i < c->local_size; i++)
        if (atomic_load_explicit(&c->dseq[i].arrived, memory_order_acquire) < op) return 0;
    return 1;
}

static tlink_status direct_allreduce(tlink_comm *c, char *buf, size_t count, size_t es, tl_reduce_fn red) {
    size_t bytes = count * es;
    uint64_t op = ++c->direct_op;
    int nl = c->local_size, me = c->local_rank, par = (int)(op & 1);
    tlink_status st;
    if (bytes <= TL_DIRECT_INLINE) {
        /* the input rides in the flag's cache line: a peer polling the flag gets the data with
         * it (one line transfer instead of flag + slot lines) */
        if (bytes) memcpy(c->dseq[me].inl[par], buf, bytes);
        atomic_store_explicit(&c->dseq[me].arrived, op, memory_order_release);
        tl_ring_all_local(c);
        if (!direct_all_arrived(c, &op) && (st = tl_shm_wait(c, direct_all_arrived, &op))) return st;
        if (bytes) {
            uint64_t acc[TL_DIRECT_INLINE / 8]; /* aligned for any element type */
            memcpy(acc, c->dseq[0].inl[par], bytes);
            for (int i = 1; i < nl; i++) red(acc, c->dseq[i].inl[par], count);
            memcpy(buf, acc, bytes);
        }
        return TLINK_OK;
    }
#define SLOT(i) (c->dslots + ((size_t)(i) * 2 + (size_t)par) * TL_DIRECT_SLOT)
    memcpy(SLOT(me), buf, bytes);
    atomic_store_explicit(&c->dseq[me].arrived, op, memory_order_release);
    tl_ring_all_local(c);
    if ((st = tl_shm_wait(c, direct_all_arrived, &op))) return st;
    memcpy(buf, SLOT(0), bytes);
    for (int i = 1; i < nl; i++) red(buf, SLOT(i), count);
#undef SLOT
    return TLINK_OK;
}

/* the all-rank synchronisation of the direct collectives, alone (cost.c measures it) */
tlink_status tl_direct_barrier(tlink_comm *c) { return direct_allreduce(c, NULL, 0, 1, NULL); }
tlink_status tl_direct_min_i32(tlink_comm *c, int32_t *v) {
    return direct_allreduce(c, (char *)v, 1, sizeof *v, tl_reduce_get(TLINK_I32, TLINK_MIN));
}

/* Segmented direct allreduce for larger messages on one host: per segment, every rank copies
 * its input into its slot, reduces its own block of the segment from all slots (rank order),
 * publishes it, and copies every rank's reduced block back: three synchronisations per
 * segment whatever the rank count, each byte copied in once and out once. */
static int direct_all_reduced(tlink_comm *c, void *arg) {
    uint64_t op = *(uint64_t *)arg;
    for (int i = 0; i < c->local_size; i++)
        if (atomic_load_explicit(&c->dseq[i].reduced, memory_order_acquire) < op) return 0;
    return 1;
}

static tlink_status direct_big_allreduce(tlink_comm *c, char *buf, size_t count, size_t es, tl_reduce_fn red) {
    int nl = c->local_size, me = c->local_rank;
    size_t segel = c->dseg / es, seg = c->dseg;
    tlink_status st;
    for (size_t off = 0; off < count; off += segel) {
        size_t sc = TL_MIN(segel, count - off);
        char *ub = buf + off * es;
        uint64_t op = ++c->direct_op;
        size_t b = op & 1;
#define IN(i) (c->dbig + ((size_t)(i) * 2 + b) * seg)
#define OUT(i) (c->dbig + ((size_t)(nl + (i)) * 2 + b) * seg)
        memcpy(IN(me), ub, sc * es);
        atomic_store_explicit(&c->dseq[me].arrived, op, memory_order_release);
        tl_ring_all_local(c);
        if ((st = tl_shm_wait(c, direct_all_arrived, &op))) return st;
        size_t bo = blk_off(sc, nl, me), bn = blk_cnt(sc, nl, me);
        if (bn) {
            memcpy(OUT(me), IN(0) + bo * es, bn * es);
            for (int i = 1; i < nl; i++) red(OUT(me), IN(i) + bo * es, bn);
        }
        atomic_store_explicit(&c->dseq[me].reduced, op, memory_order_release);
        tl_ring_all_local(c);
        if ((st = tl_shm_wait(c, direct_all_reduced, &op))) return st;
        for (int i = 0; i < nl; i++) {
            size_t n_i = blk_cnt(sc, nl, i);
            if (n_i) memcpy(ub + blk_off(sc, nl, i) * es, OUT(i), n_i * es);
        }
#undef IN
#undef OUT
    }
    return TLINK_OK;
}

/* ---------- dispatcher ---------- */
/* allgather of the n blocks of a count-element buffer split as blk_off/blk_cnt */
static tlink_status ring_allgather_blocks(tlink_comm *c, const grp *g, char *buf, size_t count, size_t es) {
    int n = g->n, r = g->me;
    int right = G((r + 1) % n), left = G((r - 1 + n) % n);
    for (int s = 0; s < n - 1; s++) {
        int sb = (r - s + n) % n, rb = (r - s - 1 + n) % n;
        tlink_status st = tl_xchg(c, right, buf + blk_off(count, n, sb) * es, blk_cnt(count, n, sb) * es, left,
                                  buf + blk_off(count, n, rb) * es, blk_cnt(count, n, rb) * es, NULL, es);
        if (st) return st;
    }
    return TLINK_OK;
}

/* striped: reduce-scatter inside each host, each local rank allreduces its slice with the
 * ranks of the same local index on the other hosts (all NICs / streams busy at once), then
 * allgather inside each host. Needs the same number of ranks on every host. */
static tlink_status hier_striped(tlink_comm *c, char *buf, size_t count, size_t es, tl_reduce_fn red) {
    grp local = {c->local_size, c->local_rank, c->local_ranks};
    grp cross = {c->nhosts, c->host_idx, c->cross};
    tlink_status st = TLINK_OK;
    if (local.n > 1) st = ring_reduce_scatter(c, &local, buf, count, es, red);
    if (st) return st;
    size_t bo = blk_off(count, local.n, local.me), bn = blk_cnt(count, local.n, local.me);
    if (bn) {
        if (bn * es >= (64u << 10) && bn >= (size_t)cross.n) st = ring_allreduce(c, &cross, buf + bo * es, bn, es, red);
        else st = rd_allreduce(c, &cross, buf + bo * es, bn, es, red);
        if (st) return st;
    }
    return local.n > 1 ? ring_allgather_blocks(c, &local, buf, count, es) : TLINK_OK;
}

static tlink_status hier_allreduce(tlink_comm *c, char *buf, size_t count, size_t es, tl_reduce_fn red) {
    if (c->cross && count * es >= (64u << 10) && count >= (size_t)c->local_size)
        return hier_striped(c, buf, count, es, red);
    grp local = {c->local_size, c->local_rank, c->local_ranks};
    tlink_status st = binomial_reduce(c, &local, 0, buf, count, es, red);
    if (st) return st;
    if (c->local_rank == 0 && c->nhosts > 1) {
        grp leaders = {c->nhosts, c->host_idx, c->host_first};
        size_t bytes = count * es;
        if (bytes >= (64u << 10) && count >= (size_t)c->nhosts) st = ring_allreduce(c, &leaders, buf, count, es, red);
        else st = rd_allreduce(c, &leaders, buf, count, es, red);
        if (st) return st;
    }
    return binomial_bcast(c, &local, 0, buf, count * es);
}

static size_t model_bytes(const tl_args *a, size_t es, int n) {
    switch (a->coll) {
    case TLINK_COLL_ALLGATHER:
    case TLINK_COLL_REDUCE_SCATTER:
    case TLINK_COLL_ALLTOALL: return a->count * es * (size_t)n;
    case TLINK_COLL_BARRIER: return 0;
    default: return a->count * es;
    }
}

static tlink_status coll_run(tlink_comm *c, tl_args *a);

/* every call through the executor: its status for tlink_comm_status (status.c) */
tlink_status tl_coll_run(tlink_comm *c, tl_args *a) {
    if (a->quiet) return coll_run(c, a);
    const char *name = a->call ? a->call : tlink_coll_name(a->coll);
    tl_stat_begin(c, name, -1);
    int traced = tb_trace_on();
    double t0 = traced ? tb_trace_now() : 0;
    tlink_status st = coll_run(c, a);
    tl_stat_end(c);
    if (traced) { /* a span in libtile's Chrome trace, with the sizes */
        size_t es = a->coll == TLINK_COLL_BARRIER ? 1 : tlink_dtype_size(a->dt);
        char args[384];
        snprintf(args, sizeof args,
                 "\"rank\": %d, \"size\": %d, \"count\": %zu, \"dtype\": \"%s\", \"bytes\": %zu, \"algo\": \"%s\", \"status\": %d",
                 c->rank, c->size, a->count, a->coll == TLINK_COLL_BARRIER ? "-" : tlink_dtype_name(a->dt), a->count * es,
                 a->coll == TLINK_COLL_SENDRECV ? "p2p" : c->last_algo, (int)st);
        tb_trace_span(name, "collective", t0, tb_trace_now() - t0, args);
    }
    return st;
}

static tlink_status coll_run(tlink_comm *c, tl_args *a) {
    c->cur_coll = a->call ? a->call : tlink_coll_name(a->coll);
    tlink_status st = tl_check_broken(c);
    if (st) return st;
    int n = c->size, me = c->rank;
    grp world = {n, me, c->world};
    const grp *g = &world;
    size_t es = a->coll == TLINK_COLL_BARRIER ? 1 : tlink_dtype_size(a->dt);
    tl_reduce_fn red = tl_reduce_get(a->dt, a->op);
    size_t bytes = a->count * es;
    double pred = 0;
    tlink_algo algo = TLINK_ALGO_DIRECT;
    if (a->coll != TLINK_COLL_SENDRECV) {
        algo = n > 1 ? tl_choose(c, a->coll, model_bytes(a, es, n), &pred,
                                 a->coll == TLINK_COLL_BARRIER ? "-" : tlink_dtype_name(a->dt))
                     : TLINK_ALGO_DIRECT;
        const char *an = tlink_algo_name(algo);
        size_t al = strlen(an);
        if (al >= sizeof c->last_algo) al = sizeof c->last_algo - 1;
        memcpy(c->last_algo, an, al);
        c->last_algo[al] = 0;
        c->last_pred_us = pred;
        atomic_store_explicit(&c->stat->algo, (int)algo, memory_order_relaxed);
    }
    switch (a->coll) {
    case TLINK_COLL_ALLREDUCE: {
        char *buf = a->rbuf;
        if (!a->count) return TLINK_OK;
        /* the ring fuses the out-of-place copy into its first reductions */
        int ring = algo == TLINK_ALGO_RING ||
                   (algo == TLINK_ALGO_DIRECT && !(c->dslots && c->nhosts == 1 && bytes <= TL_DIRECT_SLOT) &&
                    !(c->dbig && c->nhosts == 1));
        const char *src = a->sbuf != a->rbuf && ring && n > 1 ? a->sbuf : NULL;
        if (a->sbuf != a->rbuf && !src) memcpy(buf, a->sbuf, bytes);
        if (n == 1) return TLINK_OK;
        switch (algo) {
        case TLINK_ALGO_RING: st = ring_allreduce_src(c, g, buf, src, a->count, es, red); break;
        case TLINK_ALGO_RECURSIVE_DOUBLING: st = rd_allreduce(c, g, buf, a->count, es, red); break;
        case TLINK_ALGO_RABENSEIFNER: st = rab_allreduce(c, g, buf, a->count, es, red); break;
        case TLINK_ALGO_HIERARCHICAL: st = hier_allreduce(c, buf, a->count, es, red); break;
        case TLINK_ALGO_DIRECT:
            if (c->dslots && c->nhosts == 1 && bytes <= TL_DIRECT_SLOT) st = direct_allreduce(c, buf, a->count, es, red);
            else if (c->dbig && c->nhosts == 1) st = direct_big_allreduce(c, buf, a->count, es, red);
            else st = ring_allreduce_src(c, g, buf, src, a->count, es, red);
            break;
        case TLINK_ALGO_DOUBLE_BINARY_TREE:
            st = dbt_run(c, g, 0, buf, a->count, es, red, 1);
            if (!st) st = dbt_run(c, g, 0, buf, a->count, es, red, 0);
            break;
        default:
            st = binomial_reduce(c, g, 0, buf, a->count, es, red);
            if (!st) st = binomial_bcast(c, g, 0, buf, bytes);
            break;
        }
        if (!st && a->op == TLINK_AVG) tl_avg_finish(buf, a->count, a->dt, n);
        return st;
    }
    case TLINK_COLL_REDUCE: {
        if (!a->count) return TLINK_OK;
        char *work;
        if (me == a->root) {
            work = a->rbuf;
            if (a->sbuf != a->rbuf) memcpy(work, a->sbuf, bytes);
        } else {
            work = tl_scratch(c, bytes);
            if (!work) return TLINK_ERR_NO_MEMORY;
            memcpy(work, a->sbuf, bytes);
        }
        if (n > 1) {
            if (algo == TLINK_ALGO_RING) {
                st = ring_reduce_scatter(c, g, work, a->count, es, red);
                /* gather the reduced blocks at the root */
                if (!st && me != a->root) {
                    st = tl_send(c, a->root, work + blk_off(a->count, n, me) * es, blk_cnt(a->count, n, me) * es);
                } else if (!st) {
                    tl_op *ops = calloc((size_t)n, sizeof *ops);
                    if (!ops) return tl_err(c, TLINK_ERR_NO_MEMORY, "reduce: out of memory");
                    int m = 0;
                    for (int r = 0; r < n; r++)
                        if (r != me)
                            ops[m++] = (tl_op){.peer = r, .rbuf = work + blk_off(a->count, n, r) * es,
                                               .bytes = blk_cnt(a->count, n, r) * es};
                    st = tl_p2p_run(c, ops, m);
                    free(ops);
                }
            } else if (algo == TLINK_ALGO_DOUBLE_BINARY_TREE) {
                st = dbt_run(c, g, a->root, work, a->count, es, red, 1);
            } else {
                st = binomial_reduce(c, g, a->root, work, a->count, es, red);
            }
        }
        if (!st && me == a->root && a->op == TLINK_AVG) tl_avg_finish(work, a->count, a->dt, n);
        return st;
    }
    case TLINK_COLL_BROADCAST:
        if (!a->count || n == 1) return TLINK_OK;
        if (algo == TLINK_ALGO_RING) return chain_bcast(c, g, a->root, a->rbuf, bytes);
        if (algo == TLINK_ALGO_DOUBLE_BINARY_TREE) return dbt_run(c, g, a->root, a->rbuf, a->count, es, NULL, 0);
        return binomial_bcast(c, g, a->root, a->rbuf, bytes);
    case TLINK_COLL_ALLGATHER: {
        char *buf = a->rbuf;
        if (!a->count) return TLINK_OK;
        if ((const char *)a->sbuf != buf + (size_t)me * bytes) memmove(buf + (size_t)me * bytes, a->sbuf, bytes);
        if (n == 1) return TLINK_OK;
        if (algo == TLINK_ALGO_RECURSIVE_DOUBLING) return rd_allgather(c, g, buf, bytes);
        return ring_allgather(c, g, buf, bytes);
    }
    case TLINK_COLL_REDUCE_SCATTER: {
        if (!a->count) return TLINK_OK;
        size_t total = bytes * (size_t)n;
        if (n == 1) {
            if (a->sbuf != a->rbuf) memcpy(a->rbuf, a->sbuf, bytes);
            return TLINK_OK;
        }
        if (algo == TLINK_ALGO_PAIRWISE) {
            char *acc = tl_scratch(c, bytes);
            if (!acc) return TLINK_ERR_NO_MEMORY;
            memcpy(acc, (const char *)a->sbuf + (size_t)me * bytes, bytes);
            for (int k = 1; k < n && !st; k++) {
                int to = (me + k) % n, from = (me - k + n) % n;
                st = tl_xchg(c, to, (const char *)a->sbuf + (size_t)to * bytes, bytes, from, acc, bytes, red, es);
            }
            if (!st) memcpy(a->rbuf, acc, bytes);
        } else {
            char *work = tl_scratch(c, total);
            if (!work) return TLINK_ERR_NO_MEMORY;
            memcpy(work, a->sbuf, total);
            size_t tc = a->count * (size_t)n;
            st = algo == TLINK_ALGO_RECURSIVE_DOUBLING ? halving_reduce_scatter(c, g, work, tc, es, red)
                                                       : ring_reduce_scatter(c, g, work, tc, es, red);
            if (!st) memcpy(a->rbuf, work + (size_t)me * bytes, bytes);
        }
        if (!st && a->op == TLINK_AVG) tl_avg_finish(a->rbuf, a->count, a->dt, n);
        return st;
    }
    case TLINK_COLL_ALLTOALL:
    case TLINK_COLL_ALLTOALLV: {
        int v = a->coll == TLINK_COLL_ALLTOALLV;
#define SOFF(r) ((v ? a->sdispls[r] : (size_t)(r) * a->count) * es)
#define SLEN(r) ((v ? a->scounts[r] : a->count) * es)
#define ROFF(r) ((v ? a->rdispls[r] : (size_t)(r) * a->count) * es)
#define RLEN(r) ((v ? a->rcounts[r] : a->count) * es)
        if (SLEN(me) != RLEN(me))
            return tl_err(c, TLINK_ERR_INVALID_ARG, "alltoallv: sendcounts[%d] != recvcounts[%d] for this rank", me, me);
        if (SLEN(me) != 0) memmove((char *)a->rbuf + ROFF(me), (const char *)a->sbuf + SOFF(me), SLEN(me));
        for (int k = 1; k < n; k++) {
            int to = (me + k) % n, from = (me - k + n) % n;
            st = tl_xchg(c, to, (const char *)a->sbuf + SOFF(to), SLEN(to), from, (char *)a->rbuf + ROFF(from),
                         RLEN(from), NULL, 1);
            if (st) return st;
        }
#undef SOFF
#undef SLEN
#undef ROFF
#undef RLEN
        return TLINK_OK;
    }
    case TLINK_COLL_BARRIER:
        if (n > 1 && algo == TLINK_ALGO_DIRECT && c->dslots && c->nhosts == 1) return direct_allreduce(c, NULL, 0, 1, NULL);
        return n > 1 ? dissemination_barrier(c, g) : TLINK_OK;
    case TLINK_COLL_SENDRECV: {
        /* an 8-byte length header, then the payload; peer2 = source, peer = destination */
        uint64_t shdr = a->count * es, rhdr = 0;
        size_t cap = a->count2 * es;
        int to = a->peer, from = a->peer2;
        st = tl_xchg(c, to, &shdr, to >= 0 ? 8 : 0, from, &rhdr, from >= 0 ? 8 : 0, NULL, 1);
        if (st) return st;
        /* a message is received whole (the shm stream is message aligned): into the buffer
         * when it fits, else into scratch, keeping what fits and reporting the truncation */
        int trunc = from >= 0 && rhdr > cap;
        char *dst = trunc ? tl_scratch(c, (size_t)rhdr) : a->rbuf;
        if (trunc && !dst) return TLINK_ERR_NO_MEMORY;
        st = tl_xchg(c, to, a->sbuf, to >= 0 ? shdr : 0, from, dst, from >= 0 ? (size_t)rhdr : 0, NULL, 1);
        if (st) return st;
        if (trunc) {
            if (cap) memcpy(a->rbuf, dst, cap);
            if (a->received) *a->received = a->count2;
            return tl_err(c, TLINK_ERR_TRUNCATED, "recv: message from rank %d has %llu bytes, buffer holds %zu",
                          from, (unsigned long long)rhdr, cap);
        }
        if (a->received) *a->received = from >= 0 ? (size_t)rhdr / (es ? es : 1) : 0;
        return TLINK_OK;
    }
    default:
        return tl_err(c, TLINK_ERR_INVALID_ARG, "unknown collective %d", (int)a->coll);
    }
}

/* ---------- public entry points ---------- */
static tlink_status check_common(tlink_comm *c, size_t count, tlink_dtype dt, const char *what) {
    if (!c) { tl_set_thread_error("%s: NULL communicator", what); return TLINK_ERR_INVALID_ARG; }
    if ((unsigned)dt >= TLINK_DTYPE_COUNT) return tl_err(c, TLINK_ERR_INVALID_ARG, "%s: invalid dtype %d", what, (int)dt);
    if (count > ((size_t)1 << 48)) return tl_err(c, TLINK_ERR_INVALID_ARG, "%s: count %zu is too large", what, count);
    return TLINK_OK;
}
static tlink_status check_op(tlink_comm *c, tlink_op op, const char *what) {
    if ((unsigned)op >= TLINK_OP_COUNT) return tl_err(c, TLINK_ERR_INVALID_ARG, "%s: invalid op %d", what, (int)op);
    return TLINK_OK;
}
#define CHECK(x) do { tlink_status st_ = (x); if (st_) return st_; } while (0)
#define NEEDBUF(p, what, name) \
    do { if (!(p)) return tl_err(c, TLINK_ERR_INVALID_ARG, "%s: %s is NULL", what, name); } while (0)

static tlink_status prep_allreduce(tlink_comm *c, const void *s, void *r, size_t count, tlink_dtype dt, tlink_op op,
                                   tl_args *a) {
    CHECK(check_common(c, count, dt, "allreduce"));
    CHECK(check_op(c, op, "allreduce"));
    if (count) { NEEDBUF(s, "allreduce", "sendbuf"); NEEDBUF(r, "allreduce", "recvbuf"); }
    *a = (tl_args){.coll = TLINK_COLL_ALLREDUCE, .sbuf = s, .rbuf = r, .count = count, .dt = dt, .op = op};
    return TLINK_OK;
}
static tlink_status prep_reduce(tlink_comm *c, const void *s, void *r, size_t count, tlink_dtype dt, tlink_op op,
                                int root, tl_args *a) {
    CHECK(check_common(c, count, dt, "reduce"));
    CHECK(check_op(c, op, "reduce"));
    if (root < 0 || root >= c->size) return tl_err(c, TLINK_ERR_INVALID_ARG, "reduce: root %d out of range", root);
    if (count) { NEEDBUF(s, "reduce", "sendbuf"); if (c->rank == root) NEEDBUF(r, "reduce", "recvbuf"); }
    *a = (tl_args){.coll = TLINK_COLL_REDUCE, .sbuf = s, .rbuf = r, .count = count, .dt = dt, .op = op, .root = root};
    return TLINK_OK;
}
static tlink_status prep_bcast(tlink_comm *c, void *b, size_t count, tlink_dtype dt, int root, tl_args *a) {
    CHECK(check_common(c, count, dt, "broadcast"));
    if (root < 0 || root >= c->size) return tl_err(c, TLINK_ERR_INVALID_ARG, "broadcast: root %d out of range", root);
    if (count) NEEDBUF(b, "broadcast", "buf");
    *a = (tl_args){.coll = TLINK_COLL_BROADCAST, .sbuf = b, .rbuf = b, .count = count, .dt = dt, .root = root};
    return TLINK_OK;
}
static tlink_status prep_allgather(tlink_comm *c, const void *s, void *r, size_t count, tlink_dtype dt, tl_args *a) {
    CHECK(check_common(c, count, dt, "allgather"));
    if (count) { NEEDBUF(s, "allgather", "sendbuf"); NEEDBUF(r, "allgather", "recvbuf"); }
    *a = (tl_args){.coll = TLINK_COLL_ALLGATHER, .sbuf = s, .rbuf = r, .count = count, .dt = dt};
    return TLINK_OK;
}
static tlink_status prep_rs(tlink_comm *c, const void *s, void *r, size_t count, tlink_dtype dt, tlink_op op, tl_args *a) {
    CHECK(check_common(c, count, dt, "reduce_scatter"));
    CHECK(check_op(c, op, "reduce_scatter"));
    if (count) { NEEDBUF(s, "reduce_scatter", "sendbuf"); NEEDBUF(r, "reduce_scatter", "recvbuf"); }
    *a = (tl_args){.coll = TLINK_COLL_REDUCE_SCATTER, .sbuf = s, .rbuf = r, .count = count, .dt = dt, .op = op};
    return TLINK_OK;
}
static tlink_status prep_a2a(tlink_comm *c, const void *s, void *r, size_t count, tlink_dtype dt, tl_args *a) {
    CHECK(check_common(c, count, dt, "alltoall"));
    if (count) { NEEDBUF(s, "alltoall", "sendbuf"); NEEDBUF(r, "alltoall", "recvbuf"); }
    if (count && s == r && c->size > 1) return tl_err(c, TLINK_ERR_UNSUPPORTED, "alltoall: in place is not supported");
    *a = (tl_args){.coll = TLINK_COLL_ALLTOALL, .sbuf = s, .rbuf = r, .count = count, .dt = dt};
    return TLINK_OK;
}

tlink_status tlink_allreduce(tlink_comm *c, const void *s, void *r, size_t count, tlink_dtype dt, tlink_op op) {
    tl_args a;
    CHECK(prep_allreduce(c, s, r, count, dt, op, &a));
    return tl_execute(c, &a);
}
tlink_status tlink_reduce(tlink_comm *c, const void *s, void *r, size_t count, tlink_dtype dt, tlink_op op, int root) {
    tl_args a;
    CHECK(prep_reduce(c, s, r, count, dt, op, root, &a));
    return tl_execute(c, &a);
}
tlink_status tlink_broadcast(tlink_comm *c, void *b, size_t count, tlink_dtype dt, int root) {
    tl_args a;
    CHECK(prep_bcast(c, b, count, dt, root, &a));
    return tl_execute(c, &a);
}
tlink_status tlink_allgather(tlink_comm *c, const void *s, void *r, size_t count, tlink_dtype dt) {
    tl_args a;
    CHECK(prep_allgather(c, s, r, count, dt, &a));
    return tl_execute(c, &a);
}
tlink_status tlink_reduce_scatter(tlink_comm *c, const void *s, void *r, size_t count, tlink_dtype dt, tlink_op op) {
    tl_args a;
    CHECK(prep_rs(c, s, r, count, dt, op, &a));
    return tl_execute(c, &a);
}
tlink_status tlink_alltoall(tlink_comm *c, const void *s, void *r, size_t count, tlink_dtype dt) {
    tl_args a;
    CHECK(prep_a2a(c, s, r, count, dt, &a));
    return tl_execute(c, &a);
}
tlink_status tlink_alltoallv(tlink_comm *c, const void *s, const size_t *sc, const size_t *sd, void *r,
                             const size_t *rc, const size_t *rd, tlink_dtype dt) {
    CHECK(check_common(c, 0, dt, "alltoallv"));
    if (!sc || !sd || !rc || !rd) return tl_err(c, TLINK_ERR_INVALID_ARG, "alltoallv: NULL counts or displacements");
    size_t stot = 0, rtot = 0;
    for (int i = 0; i < c->size; i++) { stot += sc[i]; rtot += rc[i]; }
    if (stot) NEEDBUF(s, "alltoallv", "sendbuf");
    if (rtot) NEEDBUF(r, "alltoallv", "recvbuf");
    tl_args a = {.coll = TLINK_COLL_ALLTOALLV, .sbuf = s, .rbuf = r, .dt = dt, .count = c->size ? stot / (size_t)c->size : 0,
                 .scounts = sc, .sdispls = sd, .rcounts = rc, .rdispls = rd};
    return tl_execute(c, &a);
}
tlink_status tlink_barrier(tlink_comm *c) {
    if (!c) return TLINK_ERR_INVALID_ARG;
    tl_args a = {.coll = TLINK_COLL_BARRIER};
    return tl_execute(c, &a);
}

static tlink_status check_peer(tlink_comm *c, int peer, const char *what) {
    if (peer < 0 || peer >= c->size) return tl_err(c, TLINK_ERR_INVALID_ARG, "%s: peer %d out of range", what, peer);
    if (peer == c->rank) return tl_err(c, TLINK_ERR_UNSUPPORTED, "%s: sending to oneself is not supported", what);
    return TLINK_OK;
}
tlink_status tlink_send(tlink_comm *c, const void *buf, size_t count, tlink_dtype dt, int peer) {
    CHECK(check_common(c, count, dt, "send"));
    CHECK(check_peer(c, peer, "send"));
    if (count) NEEDBUF(buf, "send", "buf");
    tl_args a = {.coll = TLINK_COLL_SENDRECV, .sbuf = buf, .count = count, .dt = dt, .peer = peer, .peer2 = -1};
    return tl_execute(c, &a);
}
tlink_status tlink_recv(tlink_comm *c, void *buf, size_t count, tlink_dtype dt, int peer, size_t *received) {
    CHECK(check_common(c, count, dt, "recv"));
    CHECK(check_peer(c, peer, "recv"));
    if (count) NEEDBUF(buf, "recv", "buf");
    tl_args a = {.coll = TLINK_COLL_SENDRECV, .rbuf = buf, .count2 = count, .dt = dt, .peer = -1, .peer2 = peer,
                 .received = received};
    return tl_execute(c, &a);
}
tlink_status tlink_sendrecv(tlink_comm *c, const void *sbuf, size_t scount, int dst, void *rbuf, size_t rcount,
                            int src, tlink_dtype dt, size_t *received) {
    CHECK(check_common(c, scount, dt, "sendrecv"));
    CHECK(check_peer(c, dst, "sendrecv"));
    CHECK(check_peer(c, src, "sendrecv"));
    if (scount) NEEDBUF(sbuf, "sendrecv", "sendbuf");
    if (rcount) NEEDBUF(rbuf, "sendrecv", "recvbuf");
    tl_args a = {.coll = TLINK_COLL_SENDRECV, .sbuf = sbuf, .rbuf = rbuf, .count = scount, .count2 = rcount, .dt = dt,
                 .peer = dst, .peer2 = src, .received = received};
    return tl_execute(c, &a);
}

/* nonblocking variants: async.c queues the prepared arguments */
tlink_status tl_enqueue(tlink_comm *c, const tl_args *a, tlink_request **req);
tlink_status tlink_iallreduce(tlink_comm *c, const void *s, void *r, size_t count, tlink_dtype dt, tlink_op op,
                              tlink_request **req) {
    tl_args a;
    CHECK(prep_allreduce(c, s, r, count, dt, op, &a));
    return tl_enqueue(c, &a, req);
}
tlink_status tlink_ireduce(tlink_comm *c, const void *s, void *r, size_t count, tlink_dtype dt, tlink_op op, int root,
                           tlink_request **req) {
    tl_args a;
    CHECK(prep_reduce(c, s, r, count, dt, op, root, &a));
    return tl_enqueue(c, &a, req);
}
tlink_status tlink_ibroadcast(tlink_comm *c, void *b, size_t count, tlink_dtype dt, int root, tlink_request **req) {
    tl_args a;
    CHECK(prep_bcast(c, b, count, dt, root, &a));
    return tl_enqueue(c, &a, req);
}
tlink_status tlink_iallgather(tlink_comm *c, const void *s, void *r, size_t count, tlink_dtype dt, tlink_request **req) {
    tl_args a;
    CHECK(prep_allgather(c, s, r, count, dt, &a));
    return tl_enqueue(c, &a, req);
}
tlink_status tlink_ireduce_scatter(tlink_comm *c, const void *s, void *r, size_t count, tlink_dtype dt, tlink_op op,
                                   tlink_request **req) {
    tl_args a;
    CHECK(prep_rs(c, s, r, count, dt, op, &a));
    return tl_enqueue(c, &a, req);
}
tlink_status tlink_ialltoall(tlink_comm *c, const void *s, void *r, size_t count, tlink_dtype dt, tlink_request **req) {
    tl_args a;
    CHECK(prep_a2a(c, s, r, count, dt, &a));
    return tl_enqueue(c, &a, req);
}
tlink_status tlink_ibarrier(tlink_comm *c, tlink_request **req) {
    if (!c) return TLINK_ERR_INVALID_ARG;
    tl_args a = {.coll = TLINK_COLL_BARRIER};
    return tl_enqueue(c, &a, req);
}
