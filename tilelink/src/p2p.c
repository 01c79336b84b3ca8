/* p2p.c — the point-to-point engine: progresses a set of sends/receives over shared memory
 * and TCP without blocking, then spins, yields and sleeps (futex / epoll) until done, the
 * deadline passes or a peer fails. */
#include "tl_internal.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define SHM_CHUNK (64u * 1024u)
/* socket messages up to this size count as small for the waiting policy (see tl_p2p_run) */
#define TL_TCP_SMALL (64u * 1024u)
/* while sleeping on a peer: how often to look at local peers' /proc entries and at the
 * heartbeat thread's findings (a /proc read costs ~10 us; only idle waits pay it) */
#define TL_LIVE_CHECK_S 0.025

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static void futex_wait(_Atomic uint32_t *addr, uint32_t val, int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT, val, &ts, NULL, 0);
}

static inline void ring_bell(tl_doorbell *b) {
    atomic_fetch_add(&b->seq, 1);
    if (atomic_load(&b->waiters))
        syscall(SYS_futex, (uint32_t *)&b->seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static inline uint64_t round_up64(uint64_t v) { return (v + TL_SHM_ALIGN - 1) & ~(uint64_t)(TL_SHM_ALIGN - 1); }

/* Is a same-host peer likely waiting for the CPU this rank is polling on? Every rank publishes
 * the CPU it waits on (a line of the segment that is otherwise only read); a peer that has not
 * delivered yet and last waited on our CPU cannot be running there now, so it is queued behind
 * us (or was moved). Polling then only delays it: the kernel's optimistic spinning makes the
 * same test (spin while the owner runs on another CPU). */
static inline void publish_cpu(tlink_comm *c, int *my_cpu) {
    int cpu = sched_getcpu() + 1;
    *my_cpu = cpu;
    if (c->dseq && atomic_load_explicit(&c->dseq[c->local_rank].cpu, memory_order_relaxed) != cpu)
        atomic_store_explicit(&c->dseq[c->local_rank].cpu, cpu, memory_order_relaxed);
}
static inline int peer_shares_cpu(const tlink_comm *c, int local_idx, int my_cpu) {
    return c->dseq && my_cpu > 0 && atomic_load_explicit(&c->dseq[local_idx].cpu, memory_order_relaxed) == my_cpu;
}

/* Two ranks of a host that has a core for each can still end up queued on one CPU: on a busy
 * machine the kernel wakes a sleeping rank (futex) on the CPU of the rank that woke it when
 * no CPU is idle, and two ranks that poll and yield in turn look balanced to it. From then on
 * every message costs two context switches (2 us instead of 0.3 at 2 ranks, load 7-11: the
 * 8-byte all-reduce 4.5x Open MPI's, whose ranks never sleep). After TL_COLOC_STREAK waits in
 * a row that found an awaited peer on our CPU, the rank with the higher local index moves:
 * it takes its CPU out of its affinity mask, which migrates it at once, and puts the mask
 * back, which leaves it where it went; at most every TL_COLOC_GAP_S. Not when the host's ranks
 * outnumber its cores (sharing a CPU is then unavoidable), nor with TLINK_COLOC_MOVE=0. */
#define TL_COLOC_STREAK 4
#define TL_COLOC_GAP_S 0.02
static void colocated(tlink_comm *c, int peer_idx, int my_cpu) {
    if (!c->coloc_move || c->local_size > c->local_cores || peer_idx > c->local_rank || my_cpu <= 0) return;
    if (++c->coloc_streak < TL_COLOC_STREAK) return;
    double now = tl_now();
    if (now - c->coloc_moved < TL_COLOC_GAP_S) return;
    c->coloc_moved = now;
    c->coloc_streak = 0;
    cpu_set_t orig, away;
    if (sched_getaffinity(0, sizeof orig, &orig) != 0 || my_cpu - 1 >= CPU_SETSIZE) return;
    away = orig;
    CPU_CLR(my_cpu - 1, &away);
    if (CPU_COUNT(&away) == 0) return;
    if (sched_setaffinity(0, sizeof away, &away) == 0) {
        c->coloc_moves++;
        if (sched_setaffinity(0, sizeof orig, &orig) != 0) {
            /* the mask could not be put back (the cpuset changed meanwhile?): stop moving, so
             * that repeated moves cannot narrow it further, and say so */
            c->coloc_move = 0;
            tl_log(TL_LOG_WARN, "rank %d: could not restore the thread's CPU affinity after moving off CPU %d (%s); "
                                "co-location moves are off for this communicator", c->rank, my_cpu - 1, strerror(errno));
            return;
        }
        tl_log(TL_LOG_DEBUG, "rank %d: local rank %d waited on CPU %d too: moved to CPU %d (move %d)", c->rank,
               peer_idx, my_cpu - 1, sched_getcpu(), c->coloc_moves);
    }
}

/* keep polling? 1: yes; 0: the budget is spent, or an awaited local peer shares our CPU
 * (yield next: sched_yield lets it run). Looked at every 64 polls. */
static int keep_spinning(tlink_comm *c, double el, double spin, int my_cpu, const tl_op *ops, int n) {
    if (el >= spin) return 0;
    if (ops) {
        for (int i = 0; i < n; i++)
            if (!ops[i].finished && c->peers[ops[i].peer].transport == TLINK_TRANSPORT_SHM &&
                peer_shares_cpu(c, c->peers[ops[i].peer].local_idx, my_cpu)) {
                colocated(c, c->peers[ops[i].peer].local_idx, my_cpu);
                return 0;
            }
    } else {
        for (int i = 0; i < c->local_size; i++)
            if (i != c->local_rank && peer_shares_cpu(c, i, my_cpu)) {
                colocated(c, i, my_cpu);
                return 0;
            }
    }
    return 1;
}

/* ---------- failure ---------- */
void tl_comm_break(tlink_comm *c, tlink_status st, int failed_rank, const char *msg) {
    if (c->broken) return;
    c->broken = 1;
    c->broken_st = st;
    snprintf(c->broken_msg, sizeof c->broken_msg, "%s", msg);
    tl_ft_note_failed(c, failed_rank);
    if (st == TLINK_ERR_REVOKED) tl_ft_mark_revoked(c, c->rank);
    if (c->store && tl_store_fd(c->store) >= 0 && c->size > 1) {
        /* tell ranks on other hosts why, before they see our connections close */
        char key[200], val[400];
        if (failed_rank >= 0) {
            /* the failed set, for tlink_comm_shrink on ranks that did not see it themselves */
            snprintf(key, sizeof key, "%.180s/failed/%d", c->prefix, failed_rank);
            tlink_store_set(c->store, key, "1", 2);
        }
        snprintf(key, sizeof key, "%.180s/abort", c->prefix);
        if (st == TLINK_ERR_REVOKED) snprintf(val, sizeof val, "%s", msg);
        else if (failed_rank >= 0) snprintf(val, sizeof val, "rank %d failed (reported by rank %d: %s)", failed_rank, c->rank, msg);
        else snprintf(val, sizeof val, "rank %d reported: %s", c->rank, msg);
        tlink_store_set(c->store, key, val, strlen(val) + 1);
    }
    if (c->shm) {
        int32_t zero = 0;
        if (atomic_compare_exchange_strong(&c->shm->abort_flag, &zero, st == TLINK_ERR_REVOKED ? 2 : 1)) {
            atomic_store(&c->shm->failed_rank, failed_rank);
            c->shm->reporter = c->rank;
            snprintf(c->shm->abort_msg, sizeof c->shm->abort_msg, "%s", msg);
        }
        tl_doorbell *bells = c->my_bell - c->local_rank;
        for (int i = 0; i < c->local_size; i++) {
            atomic_fetch_add(&bells[i].seq, 1);
            syscall(SYS_futex, (uint32_t *)&bells[i].seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
        }
    }
    for (int r = 0; r < c->size; r++) {
        tl_peer *p = &c->peers[r];
        if (p->transport != TLINK_TRANSPORT_TCP) continue;
        for (int s = 0; s < p->nfds; s++)
            if (p->fds[s] >= 0) shutdown(p->fds[s], SHUT_RDWR);
    }
}

static tlink_status peer_failed(tlink_comm *c, int peer, const char *why);

/* failures seen by the heartbeat thread (ft.c) and revokes: break here, in the thread that
 * runs the collective */
static tlink_status ft_poll(tlink_comm *c) {
    if (!c->ft || c->broken) return TLINK_OK;
    int rv = tl_ft_revoker(c);
    if (rv >= 0) {
        char msg[96];
        snprintf(msg, sizeof msg, "communicator revoked by rank %d", rv);
        tl_comm_break(c, TLINK_ERR_REVOKED, -1, msg);
        return tl_err(c, TLINK_ERR_REVOKED, "%s: %s", c->cur_coll ? c->cur_coll : "p2p", msg);
    }
    int d = tl_ft_dead(c);
    if (d >= 0) {
        char why[160];
        snprintf(why, sizeof why, "sent no heartbeat for %.1f s (host down or cut off, or the process stopped or hung)",
                 tl_ft_timeout(c));
        return peer_failed(c, d, why);
    }
    return TLINK_OK;
}

tlink_status tl_check_broken(tlink_comm *c) {
    if (!c->broken) {
        tlink_status st = ft_poll(c);
        if (st) return st;
    }
    if (c->broken)
        return tl_err(c, c->broken_st == TLINK_ERR_ABORTED   ? TLINK_ERR_ABORTED
                         : c->broken_st == TLINK_ERR_REVOKED ? TLINK_ERR_REVOKED
                                                             : TLINK_ERR_PEER_FAILED,
                      "communicator is broken by an earlier failure: %s", c->broken_msg);
    return TLINK_OK;
}

static tlink_status shm_abort_seen(tlink_comm *c) {
    int fr = atomic_load(&c->shm->failed_rank);
    int revoked = atomic_load(&c->shm->abort_flag) == 2;
    char msg[300];
    snprintf(msg, sizeof msg, "%s", c->shm->abort_msg);
    c->broken = 1;
    c->broken_st = revoked ? TLINK_ERR_REVOKED : TLINK_ERR_PEER_FAILED;
    if (revoked) {
        tl_ft_mark_revoked(c, c->shm->reporter);
        snprintf(c->broken_msg, sizeof c->broken_msg, "%s", msg);
    } else {
        tl_ft_note_failed(c, fr);
        snprintf(c->broken_msg, sizeof c->broken_msg, "rank %d failed (reported by rank %d: %s)", fr,
                 c->shm->reporter, msg);
    }
    /* spread to other hosts */
    for (int r = 0; r < c->size; r++) {
        tl_peer *p = &c->peers[r];
        if (p->transport != TLINK_TRANSPORT_TCP) continue;
        for (int s = 0; s < p->nfds; s++)
            if (p->fds[s] >= 0) shutdown(p->fds[s], SHUT_RDWR);
    }
    return tl_err(c, c->broken_st, "%s: %s", c->cur_coll ? c->cur_coll : "p2p", c->broken_msg);
}

/* is a same-host peer process still alive? */
static int peer_alive(tl_peer *p) {
    if (!p->same_pidns || p->pid <= 0) return 1;
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", p->pid);
    FILE *f = fopen(path, "re");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *rp = strrchr(buf, ')');
    if (!rp) return 1;
    char state = rp[2];
    if (state == 'Z' || state == 'X' || state == 'x') return 0;
    /* field 22 = starttime; after ')' we are at field 3 */
    char *q = rp + 2;
    for (int field = 3; field < 22 && q; field++) {
        q = strchr(q, ' ');
        if (q) q++;
    }
    if (q && p->starttime) {
        unsigned long long st = strtoull(q, NULL, 10);
        if (st != p->starttime) return 0;
    }
    return 1;
}

/* iovecs covering bytes [off, off + len) of an op's buffer (its segment list, or its one
 * contiguous buffer); at most max; returns how many */
static int op_span(const tl_op *op, size_t off, size_t len, struct iovec *out, int max) {
    if (!op->iov) {
        char *b = op->is_send ? (char *)op->sbuf : (char *)op->rbuf;
        out[0] = (struct iovec){b + off, len};
        return 1;
    }
    /* the first segment that ends after off */
    int lo = 0, hi = op->niov - 1;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (op->iov_off[mid + 1] <= off) lo = mid + 1;
        else hi = mid;
    }
    int n = 0;
    for (int i = lo; i < op->niov && len && n < max; i++) {
        size_t so = off - op->iov_off[i], take = TL_MIN(op->iov[i].iov_len - so, len);
        if (!take) continue;
        out[n++] = (struct iovec){(char *)op->iov[i].iov_base + so, take};
        off += take;
        len -= take;
    }
    return n;
}

/* copy between an op's buffer (at off) and contiguous memory */
static void op_copy(const tl_op *op, size_t off, void *mem, size_t n, int to_op) {
    struct iovec v[16];
    char *m = mem;
    while (n) {
        int k = op_span(op, off, n, v, 16);
        for (int i = 0; i < k; i++) {
            if (to_op) memcpy(v[i].iov_base, m, v[i].iov_len);
            else memcpy(m, v[i].iov_base, v[i].iov_len);
            m += v[i].iov_len;
            off += v[i].iov_len;
            n -= v[i].iov_len;
        }
    }
}

/* ---------- shared memory ---------- */
/* Single copy (transport.c's shm_cma_setup): a message larger than the channel goes as a
 * descriptor of the sender's buffer; the receiver reads the buffer with process_vm_readv
 * (straight into its destination, or through an L2-sized bounce buffer into the reduction),
 * then bumps the channel's cma_done, which completes the send. Per byte that is one copy
 * instead of two through the channel: a two-rank all-reduce moves about 2.5 x its size per
 * rank through the caches instead of 4x. Only above the channel's capacity, where a send
 * already cannot finish before its receiver drains it, so no algorithm can newly deadlock. */
typedef struct cma_desc {
    uint64_t magic, addr, len, seq;
} cma_desc;
#define CMA_DESC_MAGIC 0x544c4b4344455343ULL /* "TLKCDESC" */
#define CMA_PIECE (256u * 1024u)
/* segment-list ops (op->iov) travel through the channel: their users give both sides of a
 * message a list, so the choice stays the same on both */
static int shm_cma(const tlink_comm *c, const tl_peer *p, const tl_op *op) {
    return p->cma && op->bytes > c->shm_cap && !op->iov;
}

static long shm_cma_send(tlink_comm *c, tl_peer *p, tl_op *op) {
    if (!op->cma_posted) {
        uint64_t cap = c->shm_cap, tail = p->stail;
        uint64_t head = atomic_load_explicit(&p->out->head, memory_order_acquire);
        if (cap - (tail - head) < TL_SHM_ALIGN) return 0;
        cma_desc d = {CMA_DESC_MAGIC, (uint64_t)(uintptr_t)op->sbuf, op->bytes, ++p->cma_sseq};
        memcpy(p->out_data + tail % cap, &d, sizeof d); /* tail is 64-aligned: never wraps */
        p->stail = tail + TL_SHM_ALIGN;
        atomic_store_explicit(&p->out->tail, p->stail, memory_order_release);
        ring_bell(p->peer_bell);
        op->cma_seq = d.seq;
        op->cma_posted = 1;
        return 1;
    }
    if (atomic_load_explicit(&p->out->cma_done, memory_order_acquire) < op->cma_seq) return 0;
    op->done = op->bytes;
    return (long)op->bytes;
}

/* the reduction's bounce buffer: one per thread that receives (the caller's, a progress
 * thread's), freed when the thread exits */
static pthread_key_t g_bounce_key;
static pthread_once_t g_bounce_once = PTHREAD_ONCE_INIT;
static void bounce_key_init(void) { pthread_key_create(&g_bounce_key, free); }
static char *cma_bounce(void) {
    pthread_once(&g_bounce_once, bounce_key_init);
    char *b = pthread_getspecific(g_bounce_key);
    if (!b && (b = malloc(CMA_PIECE)) && pthread_setspecific(g_bounce_key, b) != 0) {
        free(b);
        b = NULL;
    }
    return b;
}

/* >= 0 bytes moved; -1: the peer is gone (errno kept); -2: no memory; -3: a broken
 * descriptor; -4: process_vm_readv failed otherwise (errno kept). -3 and -4 leave the pair's
 * stream unusable (the descriptor is consumed, the sender waits for an ack that never comes):
 * the engine breaks the communicator. */
static long shm_cma_recv(tlink_comm *c, tl_peer *p, tl_op *op) {
    uint64_t cap = c->shm_cap, head = p->rhead;
    uint64_t tail = atomic_load_explicit(&p->in->tail, memory_order_acquire);
    if (tail < head + sizeof(cma_desc)) return 0;
    char *bounce = op->red ? cma_bounce() : NULL; /* before the descriptor is consumed */
    if (op->red && !bounce) { errno = ENOMEM; return -2; }
    cma_desc d;
    memcpy(&d, p->in_data + head % cap, sizeof d);
    if (d.magic != CMA_DESC_MAGIC || d.len != op->bytes) return -3;
    p->rhead = head + TL_SHM_ALIGN;
    atomic_store_explicit(&p->in->head, p->rhead, memory_order_release);
    char *dst = op->rbuf;
    const size_t piece = op->red ? CMA_PIECE - CMA_PIECE % op->esize : op->bytes;
    for (size_t o = 0; o < op->bytes;) {
        const size_t n = TL_MIN(piece, op->bytes - o);
        char *to = op->red ? bounce : dst + o;
        for (size_t got = 0; got < n;) { /* the kernel may return short */
            struct iovec lo = {to + got, n - got}, re = {(void *)(uintptr_t)(d.addr + o + got), n - got};
            ssize_t r = process_vm_readv(p->pid, &lo, 1, &re, 1, 0);
            if (r <= 0) {
                if (r == 0) errno = ESRCH;
                return errno == ESRCH ? -1 : -4;
            }
            got += (size_t)r;
        }
        if (op->red) {
            if (op->rsrc) memcpy(dst + o, (const char *)op->rsrc + o, n);
            op->red(dst + o, bounce, n / op->esize);
        }
        o += n;
    }
    op->done = op->bytes;
    atomic_fetch_add_explicit(&p->in->cma_done, 1, memory_order_release);
    ring_bell(p->peer_bell);
    return (long)op->bytes;
}

static long shm_send_try(tlink_comm *c, tl_peer *p, tl_op *op) {
    if (shm_cma(c, p, op)) return shm_cma_send(c, p, op);
    uint64_t cap = c->shm_cap, tail = p->stail;
    uint64_t head = atomic_load_explicit(&p->out->head, memory_order_acquire);
    const char *src = op->sbuf;
    size_t moved = 0;
    while (op->done < op->bytes) {
        uint64_t used = tail - head;
        if (used >= cap) {
            head = atomic_load_explicit(&p->out->head, memory_order_acquire);
            used = tail - head;
            if (used >= cap) break;
        }
        uint64_t off = tail % cap;
        size_t n = op->bytes - op->done;
        n = TL_MIN(n, (size_t)(cap - used));
        n = TL_MIN(n, (size_t)(cap - off));
        n = TL_MIN(n, (size_t)SHM_CHUNK);
        if (op->iov) op_copy(op, op->done, p->out_data + off, n, 0);
        else memcpy(p->out_data + off, src + op->done, n);
        tail += n;
        op->done += n;
        moved += n;
        atomic_store_explicit(&p->out->tail, tail, memory_order_release);
        if (op->done < op->bytes) ring_bell(p->peer_bell);
    }
    p->stail = op->done == op->bytes ? round_up64(tail) : tail;
    if (moved) ring_bell(p->peer_bell);
    return (long)moved;
}

static long shm_recv_try(tlink_comm *c, tl_peer *p, tl_op *op) {
    if (shm_cma(c, p, op)) return shm_cma_recv(c, p, op);
    uint64_t cap = c->shm_cap, head = p->rhead;
    uint64_t tail = atomic_load_explicit(&p->in->tail, memory_order_acquire);
    char *dst = op->rbuf;
    size_t moved = 0;
    while (op->done < op->bytes) {
        /* head may sit past the published tail: it is rounded up after each message */
        uint64_t avail = tail > head ? tail - head : 0;
        if (!avail) {
            tail = atomic_load_explicit(&p->in->tail, memory_order_acquire);
            avail = tail > head ? tail - head : 0;
            if (!avail) break;
        }
        uint64_t off = head % cap;
        size_t n = op->bytes - op->done;
        n = TL_MIN(n, (size_t)avail);
        n = TL_MIN(n, (size_t)(cap - off));
        n = TL_MIN(n, (size_t)SHM_CHUNK);
        if (op->red) {
            n -= n % op->esize;
            if (!n) break;
            if (op->rsrc) memcpy(dst + op->done, (const char *)op->rsrc + op->done, n);
            op->red(dst + op->done, p->in_data + off, n / op->esize);
        } else if (op->iov) {
            op_copy(op, op->done, p->in_data + off, n, 1);
            if (op->fan) op->fan(op->fan_ctx, op->done, n);
        } else {
            memcpy(dst + op->done, p->in_data + off, n);
        }
        head += n;
        op->done += n;
        moved += n;
        if (op->done == op->bytes) head = round_up64(head);
        atomic_store_explicit(&p->in->head, head, memory_order_release);
        if (op->done < op->bytes) ring_bell(p->peer_bell);
    }
    p->rhead = head;
    if (moved) ring_bell(p->peer_bell);
    return (long)moved;
}

/* ---------- TCP ---------- */
static void tcp_start(tlink_comm *c, tl_peer *p, tl_op *op) {
    size_t ch = c->tcp_chunk, nch = (op->bytes + ch - 1) / ch;
    uint64_t *seq = op->is_send ? &p->sseq : &p->rseq;
    int ns = p->nfds;
    op->base = *seq;
    *seq += nch;
    for (int s = 0; s < ns; s++) {
        op->sk[s] = (size_t)(((uint64_t)s + (uint64_t)ns - op->base % (uint64_t)ns) % (uint64_t)ns);
        op->so[s] = 0;
    }
}

/* TCP framing: every chunk travels behind a 16-byte header (magic, payload length, chunk
 * sequence number of the pair's direction). The receiver knows what it expects; a header that
 * does not match is a peer that disagrees on the collective's arguments, or a corrupt or
 * foreign stream, and ends the call with an error instead of data landing in the wrong place. */
#define TL_FRAME_MAGIC 0x464b4c54u /* "TLKF" */
typedef struct tl_frame { uint32_t magic, len; uint64_t seq; } tl_frame;
_Static_assert(sizeof(tl_frame) == TL_FRAME_HDR, "frame header size");

#define TCP_IOV 64
/* >= 0 payload bytes moved; -1 peer failure (errno kept); -2 out of memory; -5 a frame header
 * that does not match (op->bad_* tell) */
static long tcp_try(tlink_comm *c, tl_peer *p, tl_op *op) {
    size_t ch = c->tcp_chunk, nch = (op->bytes + ch - 1) / ch;
    int ns = p->nfds;
    long moved = 0;
    if (op->red && !op->stage) {
        op->stage = malloc(ch * (size_t)ns);
        if (!op->stage) { errno = ENOMEM; return -2; }
    }
    for (int s = 0; s < ns; s++) {
        while (op->sk[s] < nch) {
            size_t k = op->sk[s], clen = TL_MIN(ch, op->bytes - k * ch), o = op->so[s];
            unsigned char *fh = op->fh[s];
            struct iovec v[TCP_IOV + 1];
            int nv = 0;
            if (o == 0 && op->is_send) {
                tl_frame f = {TL_FRAME_MAGIC, (uint32_t)clen, op->base + k};
                memcpy(fh, &f, sizeof f);
            }
            if (o < TL_FRAME_HDR) v[nv++] = (struct iovec){fh + o, TL_FRAME_HDR - o};
            size_t po = o < TL_FRAME_HDR ? 0 : o - TL_FRAME_HDR; /* offset in the payload */
            if (op->red && !op->is_send) v[nv++] = (struct iovec){op->stage + (size_t)s * ch + po, clen - po};
            else nv += op_span(op, k * ch + po, clen - po, v + nv, TCP_IOV);
            struct msghdr mh = {0};
            mh.msg_iov = v;
            mh.msg_iovlen = (size_t)nv;
            ssize_t r;
            if (op->is_send) {
                r = sendmsg(p->fds[s], &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
            } else {
                r = recvmsg(p->fds[s], &mh, MSG_DONTWAIT);
                if (r == 0) { errno = ECONNRESET; return -1; }
            }
            if (r < 0) {
                if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
                return -1;
            }
            size_t got = (size_t)r, hdr_part = o < TL_FRAME_HDR ? TL_MIN(got, TL_FRAME_HDR - o) : 0;
            op->so[s] = o + got;
            if (op->fan && !op->is_send && got > hdr_part) op->fan(op->fan_ctx, k * ch + po, got - hdr_part);
            op->done += got - hdr_part;
            moved += (long)(got - hdr_part);
            if (!op->is_send && o < TL_FRAME_HDR && op->so[s] >= TL_FRAME_HDR) {
                tl_frame f;
                memcpy(&f, fh, sizeof f);
                if (f.magic != TL_FRAME_MAGIC || f.len != clen || f.seq != op->base + k) {
                    op->bad_magic = f.magic;
                    op->bad_len = f.len;
                    op->bad_seq = f.seq;
                    op->bad_want_len = clen;
                    op->bad_want_seq = op->base + k;
                    return -5;
                }
            }
            if (op->so[s] == TL_FRAME_HDR + clen) {
                if (op->red) {
                    if (op->rsrc) memcpy((char *)op->rbuf + k * ch, (const char *)op->rsrc + k * ch, clen);
                    op->red((char *)op->rbuf + k * ch, op->stage + (size_t)s * ch, clen / op->esize);
                }
                op->sk[s] += (size_t)ns;
                op->so[s] = 0;
            } else if (op->is_send || r == 0) {
                break; /* the socket took what it could */
            }
        }
    }
    return moved;
}

/* ---------- engine ---------- */
static tlink_status peer_failed(tlink_comm *c, int peer, const char *why) {
    tl_peer *p = &c->peers[peer];
    char msg[400];
    int rv = tl_ft_revoker(c);
    if (rv >= 0) {
        /* the connection closed because the communicator was revoked */
        snprintf(msg, sizeof msg, "communicator revoked by rank %d", rv);
        tl_comm_break(c, TLINK_ERR_REVOKED, -1, msg);
        return tl_err(c, TLINK_ERR_REVOKED, "%s: %s", c->cur_coll ? c->cur_coll : "p2p", msg);
    }
    if (p->transport == TLINK_TRANSPORT_TCP && c->store && tl_store_fd(c->store) >= 0) {
        /* a closed connection may be a rank that gave up because of another failure */
        char key[200];
        void *v = NULL;
        snprintf(key, sizeof key, "%.180s/abort", c->prefix);
        int ex = 0;
        /* whoever broke first published the reason before closing its connections */
        if (tlink_store_check(c->store, key, &ex) == TLINK_OK && ex &&
            tlink_store_get(c->store, key, &v, NULL, 1.0) == TLINK_OK && v) {
            int revoked = !strncmp((char *)v, "communicator revoked", 20);
            c->broken = 1;
            c->broken_st = revoked ? TLINK_ERR_REVOKED : TLINK_ERR_PEER_FAILED;
            snprintf(c->broken_msg, sizeof c->broken_msg, "%s", (char *)v);
            int fr = -1;
            if (revoked) {
                int who = peer;
                sscanf((char *)v, "communicator revoked by rank %d", &who);
                tl_ft_mark_revoked(c, who);
            }
            else if (sscanf((char *)v, "rank %d failed", &fr) == 1) tl_ft_note_failed(c, fr);
            free(v);
            for (int r = 0; r < c->size; r++) {
                tl_peer *q = &c->peers[r];
                for (int s = 0; q->transport == TLINK_TRANSPORT_TCP && s < q->nfds; s++)
                    if (q->fds[s] >= 0) shutdown(q->fds[s], SHUT_RDWR);
            }
            if (c->shm) {
                int32_t zero = 0;
                if (atomic_compare_exchange_strong(&c->shm->abort_flag, &zero, revoked ? 2 : 1)) {
                    atomic_store(&c->shm->failed_rank, fr);
                    c->shm->reporter = c->rank;
                    snprintf(c->shm->abort_msg, sizeof c->shm->abort_msg, "%.250s", c->broken_msg);
                }
            }
            return tl_err(c, c->broken_st, "%s: %s", c->cur_coll ? c->cur_coll : "p2p", c->broken_msg);
        }
    }
    snprintf(msg, sizeof msg, "rank %d (pid %d on host %s) %s", peer, p->pid, p->hostname, why);
    tl_comm_break(c, TLINK_ERR_PEER_FAILED, peer, msg);
    return tl_err(c, TLINK_ERR_PEER_FAILED, "%s: %s", c->cur_coll ? c->cur_coll : "p2p", msg);
}

/* the awaited peer, for status reports: the first unfinished op's (status.c) */
static void note_wait(tlink_comm *c, const tl_op *ops, int n, double since) {
    tl_stat *s = c->stat;
    for (int i = 0; i < n; i++) {
        if (ops[i].finished) continue;
        atomic_store_explicit(&s->sending, ops[i].is_send, memory_order_relaxed);
        atomic_store_explicit(&s->done, ops[i].done, memory_order_relaxed);
        atomic_store_explicit(&s->total, ops[i].bytes, memory_order_relaxed);
        atomic_store_explicit(&s->wait_ns, (int64_t)(since * 1e9), memory_order_relaxed);
        atomic_store_explicit(&s->peer, ops[i].peer, memory_order_release);
        return;
    }
}

tlink_status tl_p2p_run(tlink_comm *c, tl_op *ops, int n) {
    tlink_status st = tl_check_broken(c);
    if (st) return st;
    if (c->stat) atomic_fetch_add_explicit(&c->stat->step, 1, memory_order_relaxed);
    for (int i = 0; i < n; i++) {
        tl_op *op = &ops[i];
        op->done = 0;
        op->started = 0;
        op->stage = NULL;
        op->cma_posted = 0;
        op->finished = op->bytes == 0;
        if (op->peer < 0 || op->peer >= c->size || op->peer == c->rank)
            return tl_err(c, TLINK_ERR_INTERNAL, "p2p: bad peer %d", op->peer);
        if (!op->esize) op->esize = 1;
    }
    double t0 = tl_now(), deadline = t0 + c->timeout, next_live = t0 + TL_LIVE_CHECK_S;
    int spins = 0, armed = 0, spinning = 1, sleeping = 0, yielding = 0;
    double t_yield = 0;
    int my_cpu = 0;
    unsigned progress_events = 0;
    double t_idle = t0;
    uint32_t bell_seq = 0;
    for (;;) {
        int all_done = 1;
        long progress = 0;
        int want_shm = 0, want_tcp = 0, tcp_small = 1;
        for (int i = 0; i < n; i++) {
            tl_op *op = &ops[i];
            if (op->finished) continue;
            all_done = 0;
            int blocked = 0;
            for (int d = 0; d < op->ndep && d < 2; d++)
                if (op->dep[d] >= 0 && op->dep[d] < n && !ops[op->dep[d]].finished) blocked = 1;
            for (int j = 0; j < i && !blocked; j++)
                if (!ops[j].finished && ops[j].peer == op->peer && ops[j].is_send == op->is_send) blocked = 1;
            if (blocked) continue;
            tl_peer *p = &c->peers[op->peer];
            long m;
            if (p->transport == TLINK_TRANSPORT_SHM) {
                want_shm = 1;
                m = op->is_send ? shm_send_try(c, p, op) : shm_recv_try(c, p, op);
                if (m < 0) {
                    int e = errno;
                    if (armed) atomic_fetch_sub(&c->my_bell->waiters, 1);
                    for (int k = 0; k < n; k++) { free(ops[k].stage); ops[k].stage = NULL; }
                    if (m == -1) return peer_failed(c, op->peer, "exited while this rank read its buffer");
                    if (m == -2) return tl_err(c, TLINK_ERR_NO_MEMORY, "p2p: out of memory");
                    char msg[300];
                    if (m == -3)
                        snprintf(msg, sizeof msg,
                                 "shared memory: rank %d sent a single-copy descriptor that does not match this "
                                 "receive of %zu bytes (ranks disagree on the message sizes?)", op->peer, op->bytes);
                    else
                        snprintf(msg, sizeof msg, "reading rank %d's buffer of %zu bytes (process_vm_readv): %s", op->peer,
                                 op->bytes, strerror(e));
                    const tlink_status bst = m == -3 ? TLINK_ERR_INTERNAL : TLINK_ERR_SYSTEM;
                    tl_comm_break(c, bst, -1, msg); /* the pair's stream is out of step: no later call may use it */
                    return tl_err(c, bst, "%s: %s", c->cur_coll ? c->cur_coll : "p2p", msg);
                }
            } else {
                want_tcp = 1;
                if (op->bytes > TL_TCP_SMALL) tcp_small = 0;
                if (!op->started) { tcp_start(c, p, op); op->started = 1; }
                m = tcp_try(c, p, op);
                if (m < 0) {
                    int e = errno;
                    for (int k = 0; k < n; k++) { free(ops[k].stage); ops[k].stage = NULL; }
                    if (m == -2) return tl_err(c, TLINK_ERR_NO_MEMORY, "p2p: out of memory");
                    if (m == -5) {
                        char msg[400];
                        if (op->bad_magic != TL_FRAME_MAGIC)
                            snprintf(msg, sizeof msg,
                                     "tcp: rank %d sent bytes that are not a TileLink frame (header %08x) where this "
                                     "rank expects chunk %llu of %zu bytes: a corrupt or foreign stream",
                                     op->peer, op->bad_magic, (unsigned long long)op->bad_want_seq, op->bad_want_len);
                        else
                            snprintf(msg, sizeof msg,
                                     "tcp: rank %d sent chunk %llu of %u bytes where this rank expects chunk %llu of "
                                     "%zu bytes (a message of %zu): the ranks disagree on the arguments of a call",
                                     op->peer, (unsigned long long)op->bad_seq, op->bad_len,
                                     (unsigned long long)op->bad_want_seq, op->bad_want_len, op->bytes);
                        if (armed) atomic_fetch_sub(&c->my_bell->waiters, 1);
                        tl_comm_break(c, TLINK_ERR_INTERNAL, -1, msg); /* the pair's stream is out of step */
                        return tl_err(c, TLINK_ERR_INTERNAL, "%s: %s", c->cur_coll ? c->cur_coll : "p2p", msg);
                    }
                    char why[160];
                    snprintf(why, sizeof why, "closed its connection (%s)", strerror(e));
                    if (armed) atomic_fetch_sub(&c->my_bell->waiters, 1);
                    return peer_failed(c, op->peer, why);
                }
            }
            progress += m;
            if (op->done == op->bytes) {
                op->finished = 1;
                free(op->stage);
                op->stage = NULL;
            }
        }
        if (all_done) {
            if (armed) atomic_fetch_sub(&c->my_bell->waiters, 1);
            if (!spinning && c->stat) atomic_store_explicit(&c->stat->peer, -1, memory_order_relaxed);
            if (spinning && spins) c->coloc_streak = 0; /* the peer delivered while we polled */
            return TLINK_OK;
        }
        if (c->shm && atomic_load_explicit(&c->shm->abort_flag, memory_order_relaxed)) {
            if (armed) atomic_fetch_sub(&c->my_bell->waiters, 1);
            for (int k = 0; k < n; k++) { free(ops[k].stage); ops[k].stage = NULL; }
            return shm_abort_seen(c);
        }
        if (progress) {
            if (sleeping || !spinning) {
                /* we had slowed down: measure idleness afresh */
                t_idle = tl_now();
                deadline = t_idle + c->timeout;
                if (c->stat) atomic_store_explicit(&c->stat->peer, -1, memory_order_relaxed);
            } else if ((++progress_events & 63) == 0) {
                deadline = tl_now() + c->timeout; /* the deadline counts time without progress */
            }
            spins = 0;
            spinning = 1;
            sleeping = 0;
            if (armed) { atomic_fetch_sub(&c->my_bell->waiters, 1); armed = 0; }
            continue;
        }
        /* spin (the peer is running on another core), then yield (let it run on ours), then
         * sleep; the budgets are times since the last progress, checked every 32 rounds */
        /* Bulk socket transfers only (no shared-memory peer pending): sleep in epoll as soon
         * as a poll moves nothing. Such a wait ends when the kernel has taken sent bytes off
         * the socket or received more: edges epoll reports (EPOLLET, transport.c) the moment
         * they happen, so blocking adds one wake-up (microseconds) to a transfer of
         * milliseconds, where polling and yielding burned the core while a slow link drained
         * (a 200 Mbit/s DDP step: 80 ms of CPU in 150). Small messages keep the yield loop:
         * their latency is the wake-up. */
        if (!sleeping && want_tcp && !tcp_small && !want_shm) {
            if (spinning) {
                spinning = 0;
                if (c->stat) note_wait(c, ops, n, t_idle);
            }
            sleeping = 1;
        }
        if (!sleeping) {
            if (spins == 0 && want_shm && c->spin_s > 0) publish_cpu(c, &my_cpu);
            /* between yields poll c->yield_every times (1 when ranks outnumber cores); waiting
             * for small socket messages, yield after every poll: each poll is a recv/send system
             * call, and a run of them without a yield holds off the softirq work that delivers
             * the peer's packets on this machine (veth, loopback) as pure polling does, only
             * less (two ranks across namespaces at a load of 5: the 8-byte all-reduce 19.7 and
             * 22.3 us polling 16 times per yield, 13.9 and 14.9 us yielding after each poll,
             * 61 us with 128 polls per yield). Large transfers keep the 16 polls: there the
             * extra yields cost 5-15% more CPU per all-reduce. */
            if ((++spins % (want_tcp && tcp_small ? 1 : c->yield_every)) != 0) {
                cpu_relax();
                continue;
            }
            /* pure polling only while waiting on shared memory: a rank spinning on sockets
             * that never enters the kernel's scheduler can hold off the softirq work
             * (ksoftirqd) that delivers its peer's packets on this machine (veth, loopback) */
            double el = tl_now() - t_idle, spin = want_tcp ? 0 : c->spin_s;
            if (spinning && spin > 0 && keep_spinning(c, el, spin, my_cpu, ops, n)) continue;
            if (spinning) {
                spinning = 0;
                t_yield = el;
                if (c->stat) note_wait(c, ops, n, t_idle);
            }
            if (el < t_yield + c->yield_s) yielding = 1;
            else sleeping = 1;
        }
        /* yield or block; either way look at failures and the deadline now and then */
        double now = tl_now();
        if (now >= next_live) {
            next_live = now + TL_LIVE_CHECK_S;
            tlink_status fst = ft_poll(c);
            if (fst) {
                if (armed) atomic_fetch_sub(&c->my_bell->waiters, 1);
                for (int k = 0; k < n; k++) { free(ops[k].stage); ops[k].stage = NULL; }
                return fst;
            }
            for (int i = 0; i < n; i++) {
                tl_op *op = &ops[i];
                if (op->finished || c->peers[op->peer].transport != TLINK_TRANSPORT_SHM) continue;
                if (!peer_alive(&c->peers[op->peer])) {
                    if (armed) atomic_fetch_sub(&c->my_bell->waiters, 1);
                    for (int k = 0; k < n; k++) { free(ops[k].stage); ops[k].stage = NULL; }
                    return peer_failed(c, op->peer, "exited");
                }
            }
        }
        if (now >= deadline) {
            if (armed) atomic_fetch_sub(&c->my_bell->waiters, 1);
            char who[256];
            int off = 0;
            who[0] = 0;
            for (int i = 0; i < n && off < (int)sizeof who - 40; i++) {
                if (ops[i].finished) continue;
                off += snprintf(who + off, sizeof who - (size_t)off, "%s%s rank %d (%zu of %zu B)",
                                off ? "," : "", ops[i].is_send ? " sending to" : " receiving from",
                                ops[i].peer, ops[i].done, ops[i].bytes);
            }
            for (int k = 0; k < n; k++) { free(ops[k].stage); ops[k].stage = NULL; }
            char msg[400];
            snprintf(msg, sizeof msg, "timeout after %.1f s%s", c->timeout, who);
            tl_comm_break(c, TLINK_ERR_TIMEOUT, -1, msg);
            return tl_err(c, TLINK_ERR_TIMEOUT, "%s: %s", c->cur_coll ? c->cur_coll : "p2p", msg);
        }
        if (yielding) {
            yielding = 0;
            sched_yield();
            continue;
        }
        if (want_shm && !armed) {
            /* announce we may sleep, then re-check everything once before sleeping */
            atomic_fetch_add(&c->my_bell->waiters, 1);
            bell_seq = atomic_load(&c->my_bell->seq);
            armed = 1;
            continue;
        }
        if (want_tcp) {
            struct epoll_event ev[16];
            epoll_wait(c->epfd, ev, 16, want_shm ? 1 : 20);
        } else if (armed) {
            futex_wait(&c->my_bell->seq, bell_seq, 20);
            atomic_fetch_sub(&c->my_bell->waiters, 1);
            armed = 0;
        } else {
            usleep(1000);
        }
        if (armed && want_tcp) { atomic_fetch_sub(&c->my_bell->waiters, 1); armed = 0; }
    }
}

tlink_status tl_send(tlink_comm *c, int peer, const void *buf, size_t bytes) {
    tl_op op = {.peer = peer, .is_send = 1, .sbuf = buf, .bytes = bytes};
    return tl_p2p_run(c, &op, 1);
}

tlink_status tl_recv(tlink_comm *c, int peer, void *buf, size_t bytes) {
    tl_op op = {.peer = peer, .is_send = 0, .rbuf = buf, .bytes = bytes};
    return tl_p2p_run(c, &op, 1);
}

tlink_status tl_recv_reduce(tlink_comm *c, int peer, void *buf, size_t bytes, tl_reduce_fn red, size_t esize) {
    tl_op op = {.peer = peer, .is_send = 0, .rbuf = buf, .bytes = bytes, .red = red, .esize = esize};
    return tl_p2p_run(c, &op, 1);
}

tlink_status tl_xchg_src(tlink_comm *c, int to, const void *sbuf, size_t sbytes, int from, void *rbuf,
                         const void *rsrc, size_t rbytes, tl_reduce_fn red, size_t esize) {
    tl_op ops[2];
    int n = 0;
    memset(ops, 0, sizeof ops);
    if (to >= 0 && sbytes) ops[n++] = (tl_op){.peer = to, .is_send = 1, .sbuf = sbuf, .bytes = sbytes};
    if (from >= 0 && rbytes)
        ops[n++] = (tl_op){.peer = from, .is_send = 0, .rbuf = rbuf, .bytes = rbytes, .red = red, .esize = esize,
                           .rsrc = red && rsrc != rbuf ? rsrc : NULL};
    if (!n) return TLINK_OK;
    return tl_p2p_run(c, ops, n);
}

tlink_status tl_xchg(tlink_comm *c, int to, const void *sbuf, size_t sbytes, int from, void *rbuf,
                     size_t rbytes, tl_reduce_fn red, size_t esize) {
    return tl_xchg_src(c, to, sbuf, sbytes, from, rbuf, NULL, rbytes, red, esize);
}

/* ---------- waiting on a shared-memory condition (direct collectives) ---------- */
void tl_ring_all_local(tlink_comm *c) {
    tl_doorbell *bells = c->my_bell - c->local_rank;
    for (int i = 0; i < c->local_size; i++)
        if (i != c->local_rank) ring_bell(&bells[i]);
}

tlink_status tl_shm_wait(tlink_comm *c, tl_ready_fn ready, void *arg) {
    if (ready(c, arg)) return TLINK_OK;
    double t0 = tl_now(), deadline = t0 + c->timeout, next_live = t0 + TL_LIVE_CHECK_S;
    int spins = 0, sleeping = 0, spinning = 1, yielding = 0;
    double t_yield = 0;
    int my_cpu = 0;
    if (c->spin_s > 0) publish_cpu(c, &my_cpu);
    for (;;) {
        if (ready(c, arg)) {
            if (spinning) c->coloc_streak = 0; /* the peers arrived while we polled */
            else if (c->stat) atomic_store_explicit(&c->stat->peer, -1, memory_order_relaxed);
            return TLINK_OK;
        }
        if (atomic_load_explicit(&c->shm->abort_flag, memory_order_relaxed)) return shm_abort_seen(c);
        if (!sleeping) {
            if ((++spins % c->yield_every) != 0) {
                cpu_relax();
                continue;
            }
            double el = tl_now() - t0;
            /* pure polling: no system call */
            if (spinning && c->spin_s > 0 && keep_spinning(c, el, c->spin_s, my_cpu, NULL, 0)) continue;
            if (spinning) {
                spinning = 0;
                t_yield = el;
                if (c->stat) {
                    atomic_store_explicit(&c->stat->wait_ns, (int64_t)(t0 * 1e9), memory_order_relaxed);
                    atomic_store_explicit(&c->stat->peer, -2, memory_order_release);
                }
            }
            if (el < t_yield + c->yield_s) yielding = 1;
            else sleeping = 1;
        }
        double now = tl_now();
        if (now >= next_live) {
            next_live = now + TL_LIVE_CHECK_S;
            tlink_status fst = ft_poll(c);
            if (fst) return fst;
            for (int i = 0; i < c->local_size; i++) {
                int r = c->local_ranks[i];
                if (r != c->rank && !peer_alive(&c->peers[r])) return peer_failed(c, r, "exited");
            }
        }
        if (now >= deadline) {
            char msg[200];
            snprintf(msg, sizeof msg, "timeout after %.1f s waiting for the ranks of this host", c->timeout);
            tl_comm_break(c, TLINK_ERR_TIMEOUT, -1, msg);
            return tl_err(c, TLINK_ERR_TIMEOUT, "%s: %s", c->cur_coll ? c->cur_coll : "shm", msg);
        }
        if (yielding) {
            yielding = 0;
            sched_yield();
            continue;
        }
        atomic_fetch_add(&c->my_bell->waiters, 1);
        uint32_t seq = atomic_load(&c->my_bell->seq);
        if (!ready(c, arg)) futex_wait(&c->my_bell->seq, seq, 20);
        atomic_fetch_sub(&c->my_bell->waiters, 1);
    }
}
