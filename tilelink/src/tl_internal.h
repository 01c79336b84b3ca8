/* tl_internal.h — private declarations shared by the libtilelink sources.
 * libtilelink does not depend on libtile: it shares only src/base with it (dtypes and
 * conversions, knobs, logging, the dynamic loader, cache paths).
 *
 * Errors, the one convention: every failing function returns a tlink_status and says why
 * through `return tl_err(c, st, "call: what is wrong (the argument's name and value)")`, which
 * sets the communicator's message (prefixed "rank R:") and the thread's (tlink_last_error(NULL)
 * when there is no communicator yet: tl_set_thread_error). A peer that died also breaks the
 * communicator (tl_comm_break, naming the rank): every later call returns that status through
 * tl_check_broken until the communicator is shrunk or rejoined. Nothing aborts or
 * exits on bad input or a failed peer; internal invariants that cannot fail are checked with
 * _Static_assert, others return TLINK_ERR_INTERNAL with a message. */
#ifndef TL_INTERNAL_H
#define TL_INTERNAL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "tlink.h"
#include "../../src/base/base.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/uio.h>

#define TL_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define TL_MIN(a, b) ((a) < (b) ? (a) : (b))
#define TL_MAX(a, b) ((a) > (b) ? (a) : (b))

/* ---------- util.c ---------- */
/* message levels = src/base's TB_LOG_WARN / INFO / DEBUG; TL_LOG_NONE: nothing is written */
enum { TL_LOG_NONE = 0, TL_LOG_WARN = 1, TL_LOG_INFO = 2, TL_LOG_DEBUG = 3 };
int tl_log_level(void);
void tl_log(int level, const char *fmt, ...) TL_PRINTF(2, 3);
double tl_now(void);                       /* monotonic seconds */
/* environment variables: src/base's registry (tb_knob_*, knob_list.h), never getenv */
double tl_default_timeout(void);           /* TLINK_TIMEOUT or 300 */
void tl_set_thread_error(const char *fmt, ...) TL_PRINTF(1, 2);
const char *tl_thread_error(void);
uint64_t tl_hash64(const void *p, size_t n, uint64_t h);
uint64_t tl_random64(void);
const char *tl_hostname(void);

/* reductions: inout[i] = inout[i] op in[i] over n elements */
typedef void (*tl_reduce_fn)(void *inout, const void *in, size_t n);
tl_reduce_fn tl_reduce_get(tlink_dtype dt, tlink_op op);
void tl_avg_finish(void *buf, size_t n, tlink_dtype dt, int size);

/* ---------- auth.c: SHA-256, HMAC-SHA-256, the job secret, the handshake ---------- */
typedef struct tl_sha256 {
    uint32_t h[8];
    uint64_t len;
    unsigned char buf[64];
    size_t n;
} tl_sha256;
void tl_sha256_init(tl_sha256 *s);
void tl_sha256_update(tl_sha256 *s, const void *data, size_t len);
void tl_sha256_final(tl_sha256 *s, unsigned char out[32]);
void tl_sha256_sum(const void *data, size_t len, unsigned char out[32]);
typedef struct tl_hmac_key { tl_sha256 inner, outer; } tl_hmac_key;   /* a key's hashed pads */
typedef struct tl_hmac { tl_sha256 inner, outer; } tl_hmac;
void tl_hmac_key_init(tl_hmac_key *k, const void *key, size_t len);
void tl_hmac_start(tl_hmac *m, const tl_hmac_key *k);
void tl_hmac_update(tl_hmac *m, const void *data, size_t len);
void tl_hmac_final(tl_hmac *m, unsigned char out[32]);
void tl_hmac_sha256(const void *key, size_t klen, const void *msg, size_t mlen, unsigned char out[32]);
int tl_ct_equal(const void *a, const void *b, size_t n);       /* 1 when equal; time independent of the bytes */
int tl_random_bytes(void *buf, size_t n);                      /* 0, or -1 without kernel randomness */
/* the job secret (TLINK_SECRET, TLINK_SECRET_FILE): 1 set (key filled), 0 none, -1 error (err) */
int tl_auth_load(tl_hmac_key *key, char *err, size_t errlen);
void tl_peer_name(int fd, char *out, size_t len);             /* "addr:port" of a socket's far end */
#define TL_AUTH_NONCE 32
#define TL_AUTH_CTX_MAX 32
#define TL_AUTH_HELLO_MAX (8 + TL_AUTH_CTX_MAX + TL_AUTH_NONCE)
#define TL_AUTH_CHALLENGE (4 + TL_AUTH_NONCE + 32)
#define TL_AUTH_RESPONSE (4 + 32)
#define TL_AUTH_HELLO_MAGIC 0x31414c54u     /* "TLA1" */
#define TL_AUTH_CHALLENGE_MAGIC 0x32414c54u /* "TLA2" */
#define TL_AUTH_RESPONSE_MAGIC 0x33414c54u  /* "TLA3" */
enum { TL_AUTH_KIND_STORE = 1, TL_AUTH_KIND_TRANSPORT = 2 };
/* hello = magic, kind, context length, 2 zero bytes, context, Nc: returns its size */
size_t tl_auth_hello(unsigned char *out, int kind, const void *ctx, size_t ctxlen);
size_t tl_auth_hello_size(const unsigned char *hdr8, int kind);  /* 0: not a hello of this kind */
void tl_auth_challenge(const tl_hmac_key *k, const unsigned char *hello, size_t hlen,
                       unsigned char out[TL_AUTH_CHALLENGE]);
/* connector: writes its response (always), returns 0 when the challenge's MAC is right */
int tl_auth_respond(const tl_hmac_key *k, const unsigned char *hello, size_t hlen,
                    const unsigned char challenge[TL_AUTH_CHALLENGE], unsigned char out[TL_AUTH_RESPONSE]);
/* acceptor: 0 when the response proves the key */
int tl_auth_check(const tl_hmac_key *k, const unsigned char *hello, size_t hlen,
                  const unsigned char challenge[TL_AUTH_CHALLENGE], const unsigned char response[TL_AUTH_RESPONSE]);

/* ---------- store.c ---------- */
int tl_store_fd(const tlink_store *s);
const char *tl_store_addr(const tlink_store *s);
int tl_parse_hostport(const char *addr, char *host, size_t hostlen, int *port);
int tl_tcp_connect(const char *host, int port, double deadline, char *err, size_t errlen);
void tl_store_server_ref(tlink_store_server *s);
/* the fuzz harness's server and client (store.c) */
tlink_store_server *tl_store_server_detached(const tl_hmac_key *key,
                                             int (*sink)(void *ctx, int fd, const void *data, size_t len),
                                             void *ctx);
int tl_store_server_add_client(tlink_store_server *s, int fd);
int tl_store_server_feed(tlink_store_server *s, int fd, const void *data, size_t n);
void tl_store_server_free(tlink_store_server *s);
tlink_store *tl_store_client_on_fd(int fd, const tl_hmac_key *key, char *err, size_t errlen);

/* ---------- comm ---------- */
#define TL_MAX_STREAMS 8
#define TL_SHM_ALIGN 64
#define TL_FRAME_HDR 16                 /* p2p.c: the header of every TCP chunk */

typedef struct tl_chan {            /* one direction of one pair in shared memory */
    _Atomic uint64_t tail;          /* written by the producer */
    char pad0[56];
    _Atomic uint64_t head;          /* written by the consumer */
    char pad1[56];
    _Atomic uint64_t cma_done;      /* single-copy messages the consumer has read (p2p.c) */
    char pad2[56];
} tl_chan;

typedef struct tl_doorbell {        /* per local rank: bumped whenever its channels change */
    _Atomic uint32_t seq;
    _Atomic uint32_t waiters;
    char pad[56];
} tl_doorbell;

/* inputs this small travel in the cache line of the arrival flag (one line transfer per peer);
 * a multiple of 8, so both halves stay 8-byte aligned */
#define TL_DIRECT_INLINE 24

typedef struct tl_direct_seq {     /* per local rank: progress through "direct" collectives */
    _Atomic uint64_t arrived;       /* last op whose input is in my slot */
    char inl[2][TL_DIRECT_INLINE];  /* tiny inputs beside the flag, by the op's parity */
    char pad0[56 - 2 * TL_DIRECT_INLINE];
    _Atomic uint64_t done;          /* unused (slot reuse is ordered by the arrivals, coll.c) */
    _Atomic int32_t cpu;            /* CPU this rank last started waiting on, plus 1 (0: unknown) */
    char pad1[52];
    _Atomic uint64_t reduced;       /* last (segmented) op whose block I have reduced */
    char pad2[56];
    _Atomic uint64_t cma_addr;      /* single copy (transport.c): where my probe word is, 0: not yet */
    _Atomic uint64_t cma_mask;      /* bit j: I can read local rank j's memory; bit 63: probed */
    _Atomic uint64_t cma_base;      /* where the segment is mapped in my address space */
    _Atomic uint32_t cma_speed;     /* my process_vm_readv rate over my memcpy's, in percent */
    char pad3[36];
} tl_direct_seq;

#define TL_DIRECT_SLOT (32u * 1024u)

typedef struct tl_shm_hdr {
    uint64_t magic;
    uint32_t nlocal;
    uint32_t pad_;
    uint64_t cap;                   /* bytes per channel */
    _Atomic uint32_t attached;
    _Atomic int32_t abort_flag;
    _Atomic int32_t failed_rank;
    int32_t reporter;
    char abort_msg[256];
} tl_shm_hdr;

typedef struct tl_peer {
    int transport;                  /* tlink_transport */
    int host;                       /* host index */
    int local_idx;                  /* index among the ranks of its host */
    int pid;
    uint64_t starttime;
    int same_pidns;
    int same_machine;               /* same kernel (boot id): TCP to it crosses veth/loopback only */
    char hostname[64];
    /* shm */
    tl_chan *out, *in;
    char *out_data, *in_data;
    uint64_t stail, rhead;          /* my private copies of the positions I own */
    tl_doorbell *peer_bell;         /* to ring when I change a channel it waits on */
    /* tcp */
    int nfds;
    int fds[TL_MAX_STREAMS];
    uint64_t sseq, rseq;            /* chunk sequence numbers per direction */
    /* shm single copy (process_vm_readv): both of us can read the other's memory; my count
     * of such messages sent to it */
    int cma;
    uint64_t cma_sseq;
} tl_peer;

typedef struct tl_req_queue tl_req_queue;
typedef struct tl_ft tl_ft;

/* ---------- status.c: what this rank is doing, for tlink_comm_status and the soft deadline ----------
 * Written by the thread that runs calls (relaxed stores, no clock reads: a few ns per call),
 * read by the status responder and the heartbeat thread. Reference-counted: the responder
 * thread may outlive its communicator by a moment (it is not joined: a store that went away
 * must not hold up destroy). */
typedef struct tl_stat {
    _Atomic int refs;
    _Atomic uint64_t seq;           /* calls started on the communicator */
    _Atomic(const char *) call;     /* name of the call running or last run (a static string) */
    _Atomic int in_call;
    _Atomic int algo;               /* tlink_algo of the call, -1 none */
    _Atomic int step;               /* point-to-point rounds of the call so far */
    _Atomic int peer;               /* awaited rank: -1 none (making progress), -2 the ranks of this host */
    _Atomic int sending;
    _Atomic uint64_t done, total;   /* bytes of the awaited message */
    _Atomic int64_t wait_ns;        /* when the wait began (monotonic ns), 0 none */
    /* the heartbeat thread's observation of (seq, in_call): when it last changed */
    _Atomic uint64_t seen_key;
    _Atomic int64_t seen_ns;
    _Atomic uint64_t soft_seq;      /* the call whose soft deadline was reported */
    _Atomic int stop;
    _Atomic int fd;                 /* the responder's store connection (to shut down) */
    int rank, size, pid;
    double soft_s;                  /* TLINK_SOFT_TIMEOUT */
    char prefix[160], store_addr[256], host[64];
} tl_stat;
static inline int64_t tl_now_ns(void) { return (int64_t)(tl_now() * 1e9); }
void tl_status_start(tlink_comm *c);   /* the responder thread (communicators of >1 rank) */
void tl_status_stop(tlink_comm *c);
/* stops the responder thread's use of the store; the records stay (collectives still write them) */
void tl_status_halt(tlink_comm *c);
void tl_status_tick(tlink_comm *c);    /* heartbeat thread: observation and the soft deadline */

struct tlink_comm {
    int rank, size;
    int local_rank, local_size, nhosts, host_idx;
    int *host_of;                   /* [size] host index of each rank */
    int *host_first;                /* [nhosts] first (leader) rank of each host */
    int *host_nranks;               /* [nhosts] */
    int *local_ranks;               /* [local_size] global ranks of my host */
    int *world;                     /* [size] identity map 0..size-1 (the flat group) */
    int *cross;                     /* [nhosts] ranks with my local index on every host, or NULL
                                       when hosts hold different numbers of ranks */
    tl_peer *peers;                 /* [size] */
    /* shm */
    void *shm_base;
    size_t shm_size;
    tl_shm_hdr *shm;
    tl_doorbell *my_bell;
    uint64_t shm_cap;
    uint64_t cma_probe;             /* the word local peers read to test single copy */
    tl_direct_seq *dseq;            /* [local_size] */
    char *dslots;                   /* [local_size][2][TL_DIRECT_SLOT] */
    char *dbig;                     /* [2 (in, out)][local_size][2][dseg] */
    size_t dseg;                    /* segment size of the segmented direct allreduce */
    uint64_t direct_op;             /* direct collectives issued so far */
    /* tcp */
    int epfd;
    int listen_fd;
    size_t tcp_chunk;
    int nstreams;
    int force_tcp;
    int auth;                       /* a job secret is set: transport connections and heartbeats prove it */
    tl_hmac_key auth_key;
    double spin_s, yield_s;         /* busy-wait budgets before sleeping (smaller when oversubscribed) */
    int yield_every;                /* polls per sched_yield in the yield phase */
    int local_cores;                /* CPUs this host's ranks may use (union of their affinities) */
    int coloc_move;                 /* TLINK_COLOC_MOVE: move off a CPU shared with a peer (p2p.c) */
    int coloc_streak, coloc_moves;  /* p2p.c: waits in a row that found an awaited peer on our CPU;
                                       migrations away from it so far */
    double coloc_moved;             /* when this rank last moved (tl_now) */
    double ranks_per_core;          /* most ranks per usable CPU on any host (> 1: oversubscribed) */
    /* cost model, oversubscribed hosts (cost.c): one all-rank synchronisation of the host's
     * ranks and one step of a ring shift with every rank taking part (seconds), and what each
     * costs more per byte of work every rank did before it (seconds per byte); measured at
     * start-up, estimated, or from TLINK_COST_FILE; 0 when ranks_per_core <= 1 */
    double sync_all, sync_step, sync_all_pb, sync_step_pb;
    /* store */
    tlink_store *store;
    tlink_store_server *server;     /* ref held if this process hosts the store */
    char prefix[160];               /* store key namespace of this communicator */
    uint64_t comm_id;
    int split_seq;
    char store_addr[256];
    /* behaviour */
    double timeout;
    tlink_algo forced[TLINK_COLL_COUNT];
    double alpha[TLINK_TRANSPORT_COUNT], beta[TLINK_TRANSPORT_COUNT];
    double gamma;                   /* reduction seconds per byte */
    /* last choice per collective (the model is deterministic; skip recomputing it) */
    struct { size_t bytes; tlink_algo algo, forced; double pred; int valid; } choice[TLINK_COLL_COUNT];
    /* state */
    char last_algo[32];
    double last_pred_us;
    char errmsg[768];
    int broken;
    tlink_status broken_st;
    char broken_msg[512];
    const char *cur_coll;           /* name of the collective running (for messages) */
    /* scratch */
    void *scratch;
    size_t scratch_size;
    /* async */
    pthread_mutex_t exec_mu;        /* one executor at a time */
    tl_req_queue *q;
    /* fault tolerance (ft.c) */
    tl_ft *ft;                      /* heartbeats, revoke flag, failed set; NULL for size 1 */
    int shrink_seq;
    char kp[128];                   /* key prefix given at init ("" for split/shrunk comms) */
    tl_stat *stat;                  /* status.c; never NULL after comm_alloc */
    /* MoE algo auto with several hosts (moe.c): per (experts, top-k, row bytes), trial calls
     * alternate flat and hierarchical, their dispatch + combine times are summed, and once
     * every rank has TLINK_MOE_TRIALS of each the slowest rank's sums pick the exchange */
    struct tl_moe_pick {
        int num_experts, top_k;
        size_t rowbytes;
        int started;                /* trial dispatches begun */
        int done[2];                /* trial pairs completed, [flat, hierarchical] */
        double t[2];                /* their summed seconds */
        int pick;                   /* -1 trying, 0 flat, 1 hierarchical */
    } moe_pick[8];
    int moe_npick;
};

/* a call begins / ends (coll.c, moe.c) */
static inline void tl_stat_begin(tlink_comm *c, const char *call, int algo) {
    tl_stat *s = c->stat;
    atomic_fetch_add_explicit(&s->seq, 1, memory_order_relaxed);
    atomic_store_explicit(&s->call, call, memory_order_relaxed);
    atomic_store_explicit(&s->algo, algo, memory_order_relaxed);
    atomic_store_explicit(&s->step, 0, memory_order_relaxed);
    atomic_store_explicit(&s->peer, -1, memory_order_relaxed);
    atomic_store_explicit(&s->in_call, 1, memory_order_release);
}
static inline void tl_stat_end(tlink_comm *c) {
    atomic_store_explicit(&c->stat->in_call, 0, memory_order_release);
}

tlink_status tl_err(tlink_comm *c, tlink_status st, const char *fmt, ...) TL_PRINTF(3, 4);
void *tl_scratch(tlink_comm *c, size_t bytes);   /* NULL on OOM (error set) */

/* ---------- p2p.c: point-to-point engine over the transports ---------- */
typedef struct tl_op {
    int peer;
    int is_send;
    const void *sbuf;
    void *rbuf;
    size_t bytes;
    tl_reduce_fn red;               /* recv only: NULL = copy, else reduce into rbuf */
    const void *rsrc;               /* recv with red: rbuf = rsrc op received (rbuf's old contents
                                       unused), piece by piece: fuses an out-of-place copy */
    int ndep;                       /* ops (indices in the same run) that must finish first */
    int dep[2];
    size_t esize;                   /* element size (reduce granularity) */
    /* progress */
    size_t done;
    int started, finished;
    uint64_t base;                  /* tcp: first chunk sequence number */
    size_t sk[TL_MAX_STREAMS];      /* tcp: next chunk index per stream */
    size_t so[TL_MAX_STREAMS];      /* tcp: offset within that chunk */
    char *stage;                    /* tcp reduce staging, one chunk per stream */
    int cma_posted;                 /* shm single copy, send: the descriptor is in the ring */
    uint64_t cma_seq;               /* ... and the peer's cma_done that completes it */
    /* a segment list instead of sbuf/rbuf (gather on send, scatter on receive; no reduction):
     * niov segments, iov_off[i] = bytes before segment i (niov + 1 entries, the last = bytes).
     * Both sides of a message must use one (moe.c does): such messages never take single copy */
    const struct iovec *iov;
    const size_t *iov_off;
    int niov;
    /* receive with a segment list: called after bytes [off, off + n) of the message have
     * landed (still in cache), e.g. to copy them on to further places (moe.c's replicas) */
    void (*fan)(void *ctx, size_t off, size_t n);
    void *fan_ctx;
    /* tcp: per stream, the frame header being sent or received; a mismatch's details */
    unsigned char fh[TL_MAX_STREAMS][TL_FRAME_HDR];
    uint32_t bad_magic, bad_len;
    uint64_t bad_seq, bad_want_seq;
    size_t bad_want_len;
} tl_op;

tlink_status tl_p2p_run(tlink_comm *c, tl_op *ops, int n);
tlink_status tl_send(tlink_comm *c, int peer, const void *buf, size_t bytes);
tlink_status tl_recv(tlink_comm *c, int peer, void *buf, size_t bytes);
tlink_status tl_recv_reduce(tlink_comm *c, int peer, void *buf, size_t bytes, tl_reduce_fn red, size_t esize);
/* send to `to` and receive from `from` concurrently; -1 skips a side. */
tlink_status tl_xchg(tlink_comm *c, int to, const void *sbuf, size_t sbytes, int from, void *rbuf,
                     size_t rbytes, tl_reduce_fn red, size_t esize);
/* tl_xchg whose reduction reads its local operand from rsrc instead of rbuf */
tlink_status tl_xchg_src(tlink_comm *c, int to, const void *sbuf, size_t sbytes, int from, void *rbuf,
                         const void *rsrc, size_t rbytes, tl_reduce_fn red, size_t esize);
void tl_comm_break(tlink_comm *c, tlink_status st, int failed_rank, const char *msg);
tlink_status tl_check_broken(tlink_comm *c);
/* wait (spin, yield, futex on my doorbell) until ready(c, arg) != 0; checks the deadline,
 * local peers' liveness and the abort flag */
typedef int (*tl_ready_fn)(tlink_comm *c, void *arg);
tlink_status tl_shm_wait(tlink_comm *c, tl_ready_fn ready, void *arg);
void tl_ring_all_local(tlink_comm *c);

/* ---------- transport setup (transport.c) ---------- */
tlink_status tl_shm_setup(tlink_comm *c);
void tl_shm_teardown(tlink_comm *c);
tlink_status tl_tcp_listen(tlink_comm *c, char *addr_out, size_t addrlen);
tlink_status tl_tcp_connect_all(tlink_comm *c, char **peer_addrs);
void tl_tcp_teardown(tlink_comm *c);

/* the acceptor's half of a transport connection's handshake (transport.c), without sockets */
enum { TL_HS_HDR = 0, TL_HS_PLAIN, TL_HS_HELLO, TL_HS_RESPONSE, TL_HS_DONE_, TL_HS_REFUSED_ };
enum { TL_HS_MORE = 0, TL_HS_SEND = 1, TL_HS_DONE = 2, TL_HS_REFUSED = 3 };
typedef struct tl_hs_accept {
    const tl_hmac_key *key;         /* NULL: no secret (plain hellos only) */
    uint64_t comm_id;
    int max_rank, nstreams;         /* ranks below max_rank connect to us, nstreams each */
    int state;
    size_t len, hlen;
    unsigned char buf[TL_AUTH_HELLO_MAX];
    unsigned char hello[TL_AUTH_HELLO_MAX];
    unsigned char chal[TL_AUTH_CHALLENGE];
    int rank, stream;               /* the authenticated claim, once TL_HS_DONE */
    const char *why;                /* the reason of TL_HS_REFUSED */
} tl_hs_accept;
void tl_hs_accept_init(tl_hs_accept *h, const tl_hmac_key *key, uint64_t comm_id, int max_rank, int nstreams);
size_t tl_hs_accept_need(const tl_hs_accept *h);   /* bytes to read next (read no more: data may follow) */
int tl_hs_accept_feed(tl_hs_accept *h, const unsigned char *in, size_t n, unsigned char *out, size_t *outlen);

/* ---------- coll.c ---------- */
typedef struct tl_args {
    tlink_coll coll;
    const void *sbuf;
    void *rbuf;
    size_t count;
    tlink_dtype dt;
    tlink_op op;
    int root;
    const size_t *scounts, *sdispls, *rcounts, *rdispls;
    int peer;                       /* sendrecv */
    int peer2;
    size_t count2;
    size_t *received;
    const char *call;               /* the call's name for status reports (NULL: the collective's) */
    int quiet;                      /* not a user call (the bootstrap barrier): not counted */
} tl_args;
tlink_status tl_coll_run(tlink_comm *c, tl_args *a);   /* runs in the executor */
tlink_status tl_execute(tlink_comm *c, tl_args *a);    /* blocking entry: orders after queued work */

/* ---------- cost.c ---------- */
tlink_status tl_cost_init(tlink_comm *c);
tlink_status tl_direct_barrier(tlink_comm *c); /* coll.c: needs c->dslots and one host */
/* coll.c: the smallest of the host's ranks' values, through the direct flags (no allocation,
 * no cost model: usable while the communicator is being set up); needs c->dslots, one host */
tlink_status tl_direct_min_i32(tlink_comm *c, int32_t *v);
void tl_cost_sync_estimate(tlink_comm *c, double alpha); /* cost.c: estimated oversubscription terms */
tlink_algo tl_choose(tlink_comm *c, tlink_coll coll, size_t bytes, double *pred_us, const char *dtname);
double tl_predict(const tlink_comm *c, tlink_coll coll, tlink_algo a, size_t bytes);
int tl_algo_valid(const tlink_comm *c, tlink_coll coll, tlink_algo a);

/* ---------- gpu_coll.c: the device collectives' cost model (pure; tests/link-gpu "model") ----------
 * bw[i][j]: GB/s from rank i to rank j (NVLink 360, PCIe 25, the same GPU 1500; from the
 * topology, exchanged so that every rank holds the same matrix and makes the same choice). A
 * rank's sends share its fastest link's bandwidth (NVSwitch: one port, every peer behind it). */
enum { TL_GA_AUTO = 0, TL_GA_ONESHOT, TL_GA_TWOSHOT, TL_GA_CE, TL_GA_DIRECT, TL_GA_SCATTER, TL_GA_RING, TL_GA_CHAIN,
       TL_GA_COUNT };
typedef struct tl_gpu_model {
    int n;
    double bw[8][8];
    double alpha_s, mem_gbps;
    size_t slot, big_bytes, ce_chunk;
    int nb, nb_small;
    int ce_ok;                  /* the copy-engine path may be forced (never chosen) */
    int ring[8];                /* ring order (tl_gpu_model_ring) */
} tl_gpu_model;
const char *tl_gpu_algo_name(int algo);
void tl_gpu_model_ring(tl_gpu_model *m);  /* ring order maximising the slowest hop; rank order on ties */
double tl_gpu_predict(const tl_gpu_model *m, tlink_coll coll, int algo, size_t bytes); /* us; 1e300: n/a */
int tl_gpu_choose(const tl_gpu_model *m, tlink_coll coll, size_t bytes); /* cheapest applicable (never ce) */

/* ---------- ft.c ---------- */
int tl_ft_open(tlink_comm *c, const char *tcp_addr);   /* UDP heartbeat socket: its port, 0 if none */
void tl_ft_set_peer(tlink_comm *c, int r, const char *tcp_addr, int hb_port);
void tl_ft_start(tlink_comm *c);
void tl_ft_close(tlink_comm *c);
void tl_ft_note_failed(tlink_comm *c, int rank);
int tl_ft_dead(tlink_comm *c);         /* first rank declared dead by heartbeats, -1 */
int tl_ft_revoker(tlink_comm *c);      /* rank that revoked the communicator, -1 */
void tl_ft_mark_revoked(tlink_comm *c, int who);
double tl_ft_timeout(tlink_comm *c);
/* comm.c: the store address every rank of an all-local job uses (see comm.c); 1 when rewritten */
int tl_local_store_addr(char *addr, size_t len, int size);
/* comm.c: a communicator over a subset, bootstrapped under prefix (split, shrink) */
tlink_status tl_comm_derive(tlink_comm *parent, int rank, int size, const char *prefix, uint64_t comm_id,
                            tlink_comm **out);

/* ---------- async.c ---------- */
void tl_async_drain(tlink_comm *c);    /* wait until no queued or running operation */
void tl_async_shutdown(tlink_comm *c);
void tl_async_fail_all(tlink_comm *c, tlink_status st);

#endif
