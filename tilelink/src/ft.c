/* ft.c — fault tolerance: heartbeats, revoke, the failed-rank set, shrink and rejoin.
 *
 * Heartbeats. Every communicator of more than one rank opens a UDP socket on the address of
 * its TCP listener and runs a small thread that sends a 32-byte datagram to every peer each
 * TLINK_HEARTBEAT_INTERVAL seconds (0.1) and records when it last heard from each. A peer
 * silent for TLINK_HEARTBEAT_TIMEOUT seconds (1.5; 0 turns the check off) is declared dead:
 * that covers what the transports cannot see — a host cut off without a RST, a hung or stopped
 * process. The thread only raises flags (and rings this rank's doorbell); the thread running
 * the collective turns them into TLINK_ERR_PEER_FAILED through the usual break path
 * (p2p.c), so no communicator state is touched from two threads.
 *
 * Revoke rides on the same datagrams: a revoked communicator sets a flag in every heartbeat it
 * sends (so a lost datagram costs one interval), raises the host's shared-memory abort flag
 * with the value 2 and records "revoked ..." as the store's abort reason.
 *
 * Shrink and rejoin are built on the store (see tlink.h and docs/tilelink.md). */
#include "tl_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#define HB_MAGIC 0x544c4842u /* "TLHB" */
#define HB_REVOKED 1u

typedef struct hb_pkt {
    uint32_t magic;
    uint32_t flags;
    uint64_t comm_id;
    int32_t rank;
    int32_t revoker;
    uint64_t seq;
} hb_pkt;

struct tl_ft {
    int fd;                         /* UDP socket */
    int n, me;
    uint64_t comm_id;
    struct sockaddr_in *addr;       /* [n] peers' heartbeat addresses (port 0: unknown) */
    double *last;                   /* [n] last time heard (thread only) */
    uint64_t *last_seq;             /* [n] newest authenticated sequence number (thread only) */
    char *heard;                    /* [n] (thread only) */
    _Atomic int *dead;              /* [n] 1: no heartbeat for the timeout */
    _Atomic int *failed;            /* [n] 1: known failed (any source) */
    _Atomic int first_dead;         /* first rank the heartbeat thread declared dead, -1 */
    _Atomic int revoked;            /* 0, or 1 + the rank that revoked */
    _Atomic int stop;
    double interval, timeout, t_start;
    double drop;                    /* TLINK_FAULT_HB_DROP: probability of not sending one */
    uint64_t rng;                   /* for drop (heartbeat thread only) */
    int running;
    int warned;                     /* the "never heard from" warning was given */
    pthread_t thr;
    tlink_comm *c;
};

static void wake_local(tlink_comm *c) {
    tl_doorbell *b = c->my_bell;
    if (!b) return;
    atomic_fetch_add(&b->seq, 1);
    syscall(SYS_futex, (uint32_t *)&b->seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* With a job secret every datagram carries a tag, the first 16 bytes of HMAC(K, label || the
 * packet), and a receiver takes only increasing sequence numbers from each peer (a revoke is
 * also sent with 0: harmless to replay, the communicator is revoked already), so nobody
 * without the secret can revoke a communicator or keep a dead rank looking alive. */
#define HB_TAG 16
typedef struct hb_wire { hb_pkt p; unsigned char tag[HB_TAG]; } hb_wire;
static void hb_tag(const tl_hmac_key *k, const hb_pkt *p, unsigned char out[HB_TAG]) {
    static const char label[] = "TLINK-HB-1";
    unsigned char mac[32];
    tl_hmac m;
    tl_hmac_start(&m, k);
    tl_hmac_update(&m, label, sizeof label - 1);
    tl_hmac_update(&m, p, sizeof *p);
    tl_hmac_final(&m, mac);
    memcpy(out, mac, HB_TAG);
}

static void hb_send_all(tl_ft *f, uint64_t seq) {
    int rv = atomic_load(&f->revoked);
    hb_wire w;
    memset(&w, 0, sizeof w);
    w.p = (hb_pkt){HB_MAGIC, rv ? HB_REVOKED : 0u, f->comm_id, f->me, rv ? rv - 1 : -1, seq};
    hb_pkt p = w.p;
    size_t len = sizeof p;
    if (f->c->auth) {
        hb_tag(&f->c->auth_key, &w.p, w.tag);
        len = sizeof w;
    }
    for (int r = 0; r < f->n; r++) {
        if (r == f->me || !f->addr[r].sin_port) continue;
        /* fault injection for tests (TLINK_FAULT_HB_DROP): lose heartbeats at random, as a
         * lossy network would (revokes are sent regardless: seq 0) */
        if (seq && f->drop > 0) {
            f->rng ^= f->rng << 13;
            f->rng ^= f->rng >> 7;
            f->rng ^= f->rng << 17;
            if ((double)(f->rng >> 11) * (1.0 / 9007199254740992.0) < f->drop) continue;
        }
        (void)p;
        sendto(f->fd, &w, len, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&f->addr[r], sizeof f->addr[r]);
    }
}

/* 'A' when peer r is a process of this machine that runs or sleeps, 0 otherwise (other
 * machine or pid namespace, unknown, or stopped/traced/zombie/gone) */
static char local_state(tlink_comm *c, int r) {
    tl_peer *p = &c->peers[r];
    if (!p->same_pidns || p->pid <= 0) return 0;
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", p->pid);
    FILE *fp = fopen(path, "re");
    if (!fp) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    buf[n] = 0;
    char *rp = strrchr(buf, ')');
    if (!rp || !rp[1] || !rp[2]) return 0;
    char st = rp[2];
    return st == 'R' || st == 'S' || st == 'D' || st == 'I' ? 'A' : 0;
}

static void *hb_main(void *arg) {
    tl_ft *f = arg;
    uint64_t seq = 1; /* round 1 went out from tl_ft_start */
    double next = tl_now() + f->interval;
    while (!atomic_load(&f->stop)) {
        double now = tl_now();
        if (now >= next) {
            hb_send_all(f, ++seq);
            next = now + f->interval;
        }
        int ms = (int)((next - now) * 1000) + 1;
        if (ms > 50) ms = 50;
        struct pollfd pf = {f->fd, POLLIN, 0};
        poll(&pf, 1, ms);
        /* drain everything queued before judging silence: a starved thread must not blame
         * its peers for its own delay */
        for (;;) {
            hb_wire w;
            ssize_t k = recv(f->fd, &w, sizeof w, MSG_DONTWAIT);
            if (k < 0 && errno == EINTR) continue;
            if (k < 0) break;
            hb_pkt p = w.p;
            if (k != (ssize_t)(f->c->auth ? sizeof w : sizeof p) || p.magic != HB_MAGIC || p.comm_id != f->comm_id ||
                p.rank < 0 || p.rank >= f->n || p.rank == f->me)
                continue;
            if (f->c->auth) {
                unsigned char want[HB_TAG];
                hb_tag(&f->c->auth_key, &p, want);
                if (!tl_ct_equal(want, w.tag, HB_TAG)) continue;
                if (p.seq == 0 ? !(p.flags & HB_REVOKED) : p.seq <= f->last_seq[p.rank]) continue;
                if (p.seq) f->last_seq[p.rank] = p.seq;
            }
            f->last[p.rank] = tl_now();
            f->heard[p.rank] = 1;
            if ((p.flags & HB_REVOKED) && !atomic_load(&f->revoked)) {
                int who = p.revoker >= 0 && p.revoker < f->n ? p.revoker : p.rank;
                int zero = 0;
                if (atomic_compare_exchange_strong(&f->revoked, &zero, who + 1)) wake_local(f->c);
            }
        }
        tl_status_tick(f->c);
        if (f->timeout <= 0) continue;
        now = tl_now();
        for (int r = 0; r < f->n; r++) {
            if (r == f->me || !f->addr[r].sin_port || atomic_load(&f->dead[r])) continue;
            if (!f->heard[r]) {
                /* never heard from: maybe still bootstrapping, maybe UDP is filtered between
                 * us. Silence means nothing then: say so once and leave that peer to the
                 * transports' detection */
                if (!f->warned && now - f->t_start > TL_MAX(5 * f->timeout, 10.0)) {
                    f->warned = 1;
                    tl_log(TL_LOG_WARN, "rank %d: no heartbeat ever arrived from rank %d (UDP filtered?): silent "
                                        "peers are not detected, dead ones still are", f->me, r);
                }
                continue;
            }
            double since = now - f->last[r];
            if (since <= f->timeout) continue;
            /* a peer on this machine whose process is running or sleeping is alive: its
             * heartbeat thread is only starved of CPU (an overloaded machine); stopped,
             * traced, zombie or gone counts. A hung process of this host is left to the
             * deadline. */
            if (local_state(f->c, r) == 'A') continue;
            atomic_store(&f->dead[r], 1);
            atomic_store(&f->failed[r], 1);
            int none = -1;
            atomic_compare_exchange_strong(&f->first_dead, &none, r);
            tl_log(TL_LOG_INFO, "rank %d: no heartbeat from rank %d for %.2f s: declaring it failed", f->me, r, since);
            wake_local(f->c);
        }
    }
    return NULL;
}

int tl_ft_open(tlink_comm *c, const char *tcp_addr) {
    if (c->size <= 1) return 0;
    tl_ft *f = calloc(1, sizeof *f);
    if (!f) return 0;
    int n = c->size;
    f->n = n;
    f->me = c->rank;
    f->c = c;
    f->addr = calloc((size_t)n, sizeof *f->addr);
    f->last = calloc((size_t)n, sizeof *f->last);
    f->last_seq = calloc((size_t)n, sizeof *f->last_seq);
    f->heard = calloc((size_t)n, 1);
    f->dead = calloc((size_t)n, sizeof *f->dead);
    f->failed = calloc((size_t)n, sizeof *f->failed);
    atomic_init(&f->first_dead, -1);
    f->fd = -1;
    if (!f->addr || !f->last || !f->last_seq || !f->heard || !f->dead || !f->failed) {
        tl_log(TL_LOG_WARN, "rank %d: out of memory for heartbeats: only the transports detect failures", c->rank);
        free(f->addr); free(f->last); free(f->last_seq); free(f->heard); free(f->dead); free(f->failed);
        free(f);
        return 0;
    }
    f->fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    char host[128] = "0.0.0.0";
    int port = 0;
    if (tcp_addr) tl_parse_hostport(tcp_addr, host, sizeof host, &port);
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) sa.sin_addr.s_addr = htonl(INADDR_ANY);
    if (f->fd < 0 || bind(f->fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        sa.sin_addr.s_addr = htonl(INADDR_ANY);
        if (f->fd < 0 || bind(f->fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
            tl_log(TL_LOG_WARN, "rank %d: no heartbeat socket (%s): only the transports detect failures", c->rank,
                   strerror(errno));
            if (f->fd >= 0) close(f->fd);
            free(f->addr); free(f->last); free(f->last_seq); free(f->heard); free(f->dead); free(f->failed);
            free(f);
            return 0;
        }
    }
    socklen_t sl = sizeof sa;
    getsockname(f->fd, (struct sockaddr *)&sa, &sl);
    c->ft = f;
    return ntohs(sa.sin_port);
}

void tl_ft_set_peer(tlink_comm *c, int r, const char *tcp_addr, int hb_port) {
    tl_ft *f = c->ft;
    if (!f || r < 0 || r >= f->n || hb_port <= 0 || hb_port > 65535) return;
    char host[128];
    int port;
    if (tl_parse_hostport(tcp_addr, host, sizeof host, &port)) return;
    struct sockaddr_in *a = &f->addr[r];
    a->sin_family = AF_INET;
    if (inet_pton(AF_INET, host, &a->sin_addr) != 1) return;
    a->sin_port = htons((uint16_t)hb_port);
}

void tl_ft_start(tlink_comm *c) {
    tl_ft *f = c->ft;
    if (!f || f->running) return;
    f->comm_id = c->comm_id;
    f->interval = tb_knob_float(TB_K_TLINK_HEARTBEAT_INTERVAL);
    if (f->interval < 0.005) f->interval = 0.005;
    f->timeout = tb_knob_float(TB_K_TLINK_HEARTBEAT_TIMEOUT);
    if (f->timeout > 0 && f->timeout < 3 * f->interval) f->timeout = 3 * f->interval;
    f->drop = tb_knob_float(TB_K_TLINK_FAULT_HB_DROP);
    f->rng = tl_random64();
    f->t_start = tl_now();
    for (int r = 0; r < f->n; r++) f->last[r] = f->t_start;
    /* the first round from the caller, before init returns: on a busy machine the thread may
     * not run for a while, and a peer never heard from is not judged by its silence, so a
     * rank stopped right after init would go undetected until the transports' deadline */
    hb_send_all(f, 1);
    if (pthread_create(&f->thr, NULL, hb_main, f) == 0) f->running = 1;
    else tl_log(TL_LOG_WARN, "rank %d: cannot start the heartbeat thread", c->rank);
}

void tl_ft_close(tlink_comm *c) {
    tl_ft *f = c->ft;
    if (!f) return;
    if (f->running) {
        atomic_store(&f->stop, 1);
        /* wake the thread from its poll at once: a datagram to ourselves (it is dropped as
         * too short) */
        struct sockaddr_in self;
        socklen_t sl = sizeof self;
        if (getsockname(f->fd, (struct sockaddr *)&self, &sl) == 0) {
            if (self.sin_addr.s_addr == htonl(INADDR_ANY)) self.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            char z = 0;
            sendto(f->fd, &z, 1, MSG_DONTWAIT, (struct sockaddr *)&self, sizeof self);
        }
        pthread_join(f->thr, NULL);
    }
    close(f->fd);
    free(f->addr);
    free(f->last);
    free(f->last_seq);
    free(f->heard);
    free(f->dead);
    free(f->failed);
    free(f);
    c->ft = NULL;
}

void tl_ft_note_failed(tlink_comm *c, int rank) {
    if (c->ft && rank >= 0 && rank < c->ft->n && rank != c->rank) atomic_store(&c->ft->failed[rank], 1);
}

int tl_ft_dead(tlink_comm *c) { return c->ft ? atomic_load(&c->ft->first_dead) : -1; }
double tl_ft_timeout(tlink_comm *c) { return c->ft ? c->ft->timeout : 0; }
int tl_ft_revoker(tlink_comm *c) {
    int v = c->ft ? atomic_load(&c->ft->revoked) : 0;
    if (!v && c->shm && atomic_load(&c->shm->abort_flag) == 2) v = c->shm->reporter + 1;
    return v - 1;
}

void tl_ft_mark_revoked(tlink_comm *c, int who) {
    if (!c->ft) return;
    int zero = 0;
    atomic_compare_exchange_strong(&c->ft->revoked, &zero, who + 1);
}

/* ---------------------------------------------------------------- public: revoke, query */

/* Before shrink or rejoin re-forms a communicator: finish this rank's queued operations, then
 * (unless it is broken already) revoke the old one, tell the peers by heartbeat and break it
 * with the reason `why`; `name_call` makes `why` the current call's name in later errors. */
static void revoke_to_reform(tlink_comm *c, const char *why, bool name_call) {
    tl_async_drain(c);
    pthread_mutex_lock(&c->exec_mu);
    if (name_call) c->cur_coll = why;
    if (!c->broken) {
        tl_ft_mark_revoked(c, c->rank);
        if (c->ft) hb_send_all(c->ft, 0);
        char msg[96];
        snprintf(msg, sizeof msg, "communicator revoked by rank %d (%s)", c->rank, why);
        tl_comm_break(c, TLINK_ERR_REVOKED, -1, msg);
    }
    pthread_mutex_unlock(&c->exec_mu);
}

tlink_status tlink_comm_revoke(tlink_comm *c) {
    if (!c) {
        tl_set_thread_error("tlink_comm_revoke: comm is NULL");
        return TLINK_ERR_INVALID_ARG;
    }
    if (c->size <= 1) return TLINK_OK;
    /* the parts that are safe while another thread runs a collective: flags and datagrams */
    tl_ft_mark_revoked(c, c->rank);
    if (c->ft) {
        for (int i = 0; i < 3; i++) hb_send_all(c->ft, 0);
    }
    if (c->shm) {
        int32_t zero = 0;
        if (atomic_compare_exchange_strong(&c->shm->abort_flag, &zero, 2)) {
            atomic_store(&c->shm->failed_rank, -1);
            c->shm->reporter = c->rank;
            snprintf(c->shm->abort_msg, sizeof c->shm->abort_msg, "communicator revoked by rank %d", c->rank);
        }
        tl_ring_all_local(c);
        wake_local(c);
    }
    /* nobody is inside a call on this communicator: break it here (store reason, TCP) */
    if (pthread_mutex_trylock(&c->exec_mu) == 0) {
        char msg[96];
        snprintf(msg, sizeof msg, "communicator revoked by rank %d", c->rank);
        tl_comm_break(c, TLINK_ERR_REVOKED, -1, msg);
        pthread_mutex_unlock(&c->exec_mu);
    }
    return TLINK_OK;
}

int tlink_comm_failed_ranks(const tlink_comm *c, int *ranks, int max) {
    if (!c || (max > 0 && !ranks) || max < 0) return -1;
    int k = 0;
    for (int r = 0; r < c->size; r++) {
        int f = c->ft ? atomic_load(&c->ft->failed[r]) : 0;
        if (!f) continue;
        if (k < max) ranks[k] = r;
        k++;
    }
    return k;
}

int tlink_comm_is_revoked(const tlink_comm *c) {
    if (!c) return 0;
    return tl_ft_revoker((tlink_comm *)c) >= 0 || (c->broken && c->broken_st == TLINK_ERR_REVOKED);
}

/* ---------------------------------------------------------------- shrink */

static int store_exists(tlink_store *s, const char *key) {
    int ex = 0;
    return tlink_store_check(s, key, &ex) == TLINK_OK && ex;
}

tlink_status tlink_comm_shrink(tlink_comm *c, tlink_comm **out) {
    if (!c || !out) {
        tl_set_thread_error("tlink_comm_shrink: %s is NULL", c ? "out" : "comm");
        return TLINK_ERR_INVALID_ARG;
    }
    *out = NULL;
    /* everyone else must stop using the old communicator: shrinking implies revoking it */
    revoke_to_reform(c, "shrink", true);
    int n = c->size, seq = ++c->shrink_seq;
    double t0 = tl_now(), deadline = t0 + c->timeout;
    if (!c->store) return tl_err(c, TLINK_ERR_BOOTSTRAP, "shrink: this communicator has no store connection");
    char base[256], key[320];
    snprintf(base, sizeof base, "%.200s/shrink%d", c->prefix, seq);
    /* 1. I am alive: join */
    snprintf(key, sizeof key, "%s/join/%d", base, c->rank);
    if (tlink_store_set(c->store, key, "1", 2))
        return tl_err(c, TLINK_ERR_BOOTSTRAP,
                      "shrink: the store is unreachable (%s); shrinking needs the store to outlive the failed "
                      "ranks: use a standalone store (tile store, or tile launch --max-restarts)",
                      tlink_store_last_error(c->store));
    /* 2. wait until every rank has joined or is known failed; the first to see that decides */
    char resk[300];
    snprintf(resk, sizeof resk, "%s/result", base);
    int *members = calloc((size_t)n, sizeof(int));
    char *acc = calloc((size_t)n, 1);
    if (!members || !acc) { free(members); free(acc); return tl_err(c, TLINK_ERR_NO_MEMORY, "shrink: out of memory"); }
    void *res = NULL;
    size_t reslen = 0;
    tlink_status st = TLINK_OK;
    for (;;) {
        if (store_exists(c->store, resk)) {
            st = tlink_store_get(c->store, resk, &res, &reslen, 10);
            break;
        }
        int all = 1;
        int timed_out = tl_now() > deadline;
        for (int r = 0; r < n; r++) {
            if (acc[r]) continue;
            snprintf(key, sizeof key, "%s/join/%d", base, r);
            if (store_exists(c->store, key)) { acc[r] = 1; continue; }
            int known = c->ft && atomic_load(&c->ft->failed[r]);
            if (!known) {
                snprintf(key, sizeof key, "%.200s/failed/%d", c->prefix, r);
                known = store_exists(c->store, key);
                if (known) tl_ft_note_failed(c, r);
            }
            if (known) { acc[r] = 2; continue; }
            if (!timed_out) all = 0;
        }
        if (all) {
            int64_t ticket = 0;
            snprintf(key, sizeof key, "%s/decider", base);
            if (tlink_store_add(c->store, key, 1, &ticket)) { st = TLINK_ERR_BOOTSTRAP; break; }
            if (ticket == 1) {
                /* the decision: whoever has joined by now is in */
                char buf[8192];
                int off = 0, m = 0;
                for (int r = 0; r < n && off < (int)sizeof buf - 16; r++) {
                    snprintf(key, sizeof key, "%s/join/%d", base, r);
                    if (r == c->rank || store_exists(c->store, key)) {
                        off += snprintf(buf + off, sizeof buf - (size_t)off, "%s%d", m ? "," : "", r);
                        m++;
                    }
                }
                tlink_store_set(c->store, resk, buf, (size_t)off + 1);
            }
            st = tlink_store_get(c->store, resk, &res, &reslen, TL_MAX(deadline - tl_now(), 10.0));
            break;
        }
        usleep(2000);
    }
    free(acc);
    if (st || !res) {
        free(members);
        free(res);
        return tl_err(c, st ? st : TLINK_ERR_BOOTSTRAP, "shrink: no agreement on the surviving ranks: %s",
                      tlink_store_last_error(c->store));
    }
    /* 3. the agreed member list */
    int m = 0, newrank = -1;
    char *save = NULL;
    for (char *tok = strtok_r((char *)res, ",", &save); tok && m < n; tok = strtok_r(NULL, ",", &save)) {
        int r = atoi(tok);
        if (r < 0 || r >= n) continue;
        if (r == c->rank) newrank = m;
        members[m++] = r;
    }
    free(res);
    /* the agreed failed set replaces local suspicions */
    if (c->ft) {
        for (int r = 0; r < n; r++) atomic_store(&c->ft->failed[r], r != c->rank);
        for (int i = 0; i < m; i++) atomic_store(&c->ft->failed[members[i]], 0);
    }
    if (newrank < 0) {
        free(members);
        return tl_err(c, TLINK_ERR_PEER_FAILED,
                      "shrink: this rank was declared failed by the survivors (it joined too late) and is not "
                      "part of the new communicator");
    }
    tl_log(TL_LOG_INFO, "rank %d: shrink %d: %d of %d ranks survive (agreed in %.1f ms)", c->rank, seq, m, n,
           (tl_now() - t0) * 1e3);
    char prefix[200];
    snprintf(prefix, sizeof prefix, "%.150s/c", base + 0);
    uint64_t id = tl_hash64(&c->comm_id, sizeof c->comm_id, 0x5348524bULL);
    id = tl_hash64(&seq, sizeof seq, id);
    tlink_comm *s = NULL;
    st = tl_comm_derive(c, newrank, m, prefix, id, &s);
    free(members);
    if (st) return st;
    *out = s;
    return TLINK_OK;
}

/* ---------------------------------------------------------------- rejoin */

tlink_status tlink_comm_rejoin(tlink_comm *c, tlink_comm **out) {
    if (!c || !out) {
        tl_set_thread_error("tlink_comm_rejoin: %s is NULL", c ? "out" : "comm");
        return TLINK_ERR_INVALID_ARG;
    }
    *out = NULL;
    if (!c->kp[0])
        return tl_err(c, TLINK_ERR_UNSUPPORTED,
                      "rejoin: only a communicator made by tlink_comm_init* can be re-formed (not a split or shrunk "
                      "one): use tlink_comm_shrink");
    revoke_to_reform(c, "rejoin", false);
    tlink_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.rank = c->rank;
    cfg.size = c->size;
    cfg.store_addr = c->store_addr;
    cfg.timeout_s = c->timeout;
    cfg.key_prefix = c->kp;
    cfg.host_store = c->server ? -1 : 0; /* a store this process hosts lives on */
    cfg.transport = c->force_tcp ? "tcp" : NULL;
    tlink_comm *n = NULL;
    tlink_status st = tlink_comm_init_config(&n, &cfg);
    if (st) return tl_err(c, st, "rejoin: %s", tl_thread_error());
    if (c->server && !n->server) {
        tl_store_server_ref(c->server);
        n->server = c->server;
    }
    *out = n;
    return TLINK_OK;
}
