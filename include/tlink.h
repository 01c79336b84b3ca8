/* tlink.h — TileLink: collective communication between processes and hosts.
 *
 * The one public header of libtilelink (no dependency on libtile). Read it as a tutorial.
 *
 * ---------------------------------------------------------------------------------------
 * Worked example (run with `tile launch -n 4 ./a.out`, `torchrun`, `mpirun -n 4`, `srun`):
 *
 *     #include <tlink.h>
 *     int main(void) {
 *         tlink_comm *comm;
 *         tlink_status st = tlink_comm_init_env(&comm);   // reads RANK/WORLD_SIZE/... vars
 *         if (st != TLINK_OK) { fprintf(stderr, "%s\n", tlink_last_error(NULL)); return 1; }
 *         int rank = tlink_comm_rank(comm), size = tlink_comm_size(comm);
 *         float grad[1024];
 *         for (int i = 0; i < 1024; i++) grad[i] = (float)rank;
 *         // in place: send == recv
 *         st = tlink_allreduce(comm, grad, grad, 1024, TLINK_F32, TLINK_SUM);
 *         if (st != TLINK_OK) fprintf(stderr, "allreduce: %s\n", tlink_last_error(comm));
 *         // overlap: start, compute, wait
 *         tlink_request *req;
 *         tlink_iallreduce(comm, grad, grad, 1024, TLINK_F32, TLINK_AVG, &req);
 *         ... compute ...
 *         tlink_wait(req);
 *         tlink_comm_destroy(comm);
 *     }
 *
 * Explicit creation: tlink_comm_init(&comm, rank, size, "10.0.0.1:29500"); rank 0 hosts the
 * key-value store at that address (or uses the standalone one already listening there).
 * ---------------------------------------------------------------------------------------
 *
 * Rules shared by every call:
 *  - Collectives must be called by every rank of the communicator in the same order with
 *    matching arguments (count, dtype, op, root).
 *  - send == recv means in place. count 0 is a no-op (still a valid call).
 *  - Every blocking call has a deadline: the communicator timeout (env TLINK_TIMEOUT,
 *    seconds without progress, default 300; tlink_comm_set_timeout). It returns TLINK_ERR_TIMEOUT or
 *    TLINK_ERR_PEER_FAILED naming the rank instead of hanging; tlink_last_error() has the
 *    detailed message. After a peer failure the communicator is broken: every later call
 *    returns TLINK_ERR_PEER_FAILED; destroy it, or recover with tlink_comm_shrink /
 *    tlink_comm_rejoin (see "fault tolerance" below).
 *  - A communicator is used by one thread at a time (nonblocking calls are queued and run by
 *    the communicator's progress thread in issue order).
 */
#ifndef TLINK_H
#define TLINK_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TLINK_API __attribute__((visibility("default")))

#define TLINK_VERSION_MAJOR 0
#define TLINK_VERSION_MINOR 1
TLINK_API const char *tlink_version(void);

typedef struct tlink_comm tlink_comm;        /* a communicator */
typedef struct tlink_request tlink_request;  /* a queued nonblocking operation */

/* ---------- status codes ---------- */
#define TLINK_STATUS_LIST(X)                                                        \
    X(TLINK_OK, 0, "success")                                                       \
    X(TLINK_ERR_INVALID_ARG, 1, "invalid argument")                                 \
    X(TLINK_ERR_TIMEOUT, 2, "timed out")                                            \
    X(TLINK_ERR_PEER_FAILED, 3, "peer failed")                                      \
    X(TLINK_ERR_SYSTEM, 4, "system error")                                          \
    X(TLINK_ERR_BOOTSTRAP, 5, "bootstrap failed")                                   \
    X(TLINK_ERR_UNSUPPORTED, 6, "unsupported")                                      \
    X(TLINK_ERR_REVOKED, 7, "communicator revoked")                                 \
    X(TLINK_ERR_NO_MEMORY, 8, "out of memory")                                      \
    X(TLINK_ERR_INTERNAL, 9, "internal error")                                      \
    X(TLINK_ERR_ABORTED, 10, "communicator aborted")                                \
    X(TLINK_ERR_TRUNCATED, 11, "message truncated (receive buffer smaller than message)") \
    X(TLINK_IN_PROGRESS, 12, "operation in progress")                             \
    X(TLINK_ERR_CORRUPT, 13, "data corrupt (checksum mismatch)")

typedef enum {
#define TLINK_X_(name, val, msg) name = val,
    TLINK_STATUS_LIST(TLINK_X_)
#undef TLINK_X_
    TLINK_STATUS_COUNT
} tlink_status;

/* Static description of a status code ("timed out"). */
TLINK_API const char *tlink_error_string(tlink_status st);
/* Detailed message of the last failure on this communicator, e.g.
 * "allreduce: timeout after 300.0 s waiting for rank 3 (host b, pid 1234)".
 * comm == NULL gives the last failure of this thread (use after a failed init). Never NULL. */
TLINK_API const char *tlink_last_error(const tlink_comm *comm);

/* ---------- data types and reduction ops ---------- */
/* 16- and 8-bit floats are reduced in f32 and rounded to nearest even after each step.
 * fp8 follows OCP 8-bit floats: e4m3 (no infinities; overflow -> NaN, max 448),
 * e5m2 (IEEE-like; overflow -> inf). */
#define TLINK_DTYPE_LIST(X)                 \
    X(TLINK_F32, 0, "f32", 4)               \
    X(TLINK_F64, 1, "f64", 8)               \
    X(TLINK_F16, 2, "f16", 2)               \
    X(TLINK_BF16, 3, "bf16", 2)             \
    X(TLINK_I32, 4, "i32", 4)               \
    X(TLINK_I64, 5, "i64", 8)               \
    X(TLINK_U8, 6, "u8", 1)                 \
    X(TLINK_FP8_E4M3, 7, "fp8_e4m3", 1)     \
    X(TLINK_FP8_E5M2, 8, "fp8_e5m2", 1)

typedef enum {
#define TLINK_X_(name, val, str, size) name = val,
    TLINK_DTYPE_LIST(TLINK_X_)
#undef TLINK_X_
    TLINK_DTYPE_COUNT
} tlink_dtype;

/* avg = sum then divide by the number of ranks (integers: truncating division). */
#define TLINK_OP_LIST(X)       \
    X(TLINK_SUM, 0, "sum")     \
    X(TLINK_PROD, 1, "prod")   \
    X(TLINK_MIN, 2, "min")     \
    X(TLINK_MAX, 3, "max")     \
    X(TLINK_AVG, 4, "avg")

typedef enum {
#define TLINK_X_(name, val, str) name = val,
    TLINK_OP_LIST(TLINK_X_)
#undef TLINK_X_
    TLINK_OP_COUNT
} tlink_op;

TLINK_API size_t tlink_dtype_size(tlink_dtype dt);          /* 0 for an invalid dtype */
TLINK_API const char *tlink_dtype_name(tlink_dtype dt);     /* "f32", ..., "?" */
TLINK_API int tlink_dtype_from_name(const char *name);      /* -1 if unknown; accepts "float32","bfloat16",... */
TLINK_API const char *tlink_op_name(tlink_op op);
TLINK_API int tlink_op_from_name(const char *name);         /* -1 if unknown */

/* Bit-exact scalar converters used by the reductions (round to nearest even). */
TLINK_API float tlink_f16_to_f32(uint16_t h);
TLINK_API uint16_t tlink_f32_to_f16(float f);
TLINK_API float tlink_bf16_to_f32(uint16_t h);
TLINK_API uint16_t tlink_f32_to_bf16(float f);
TLINK_API float tlink_fp8_e4m3_to_f32(uint8_t v);
TLINK_API uint8_t tlink_f32_to_fp8_e4m3(float f);
TLINK_API float tlink_fp8_e5m2_to_f32(uint8_t v);
TLINK_API uint8_t tlink_f32_to_fp8_e5m2(float f);

/* Local reduction kernel: inout[i] = inout[i] (op) in[i]. TLINK_AVG acts as TLINK_SUM here. */
TLINK_API tlink_status tlink_reduce_local(void *inout, const void *in, size_t count,
                                          tlink_dtype dt, tlink_op op);

/* ---------- collectives and algorithms ---------- */
#define TLINK_COLL_LIST(X)                            \
    X(TLINK_COLL_ALLREDUCE, 0, "allreduce")           \
    X(TLINK_COLL_REDUCE, 1, "reduce")                 \
    X(TLINK_COLL_BROADCAST, 2, "broadcast")           \
    X(TLINK_COLL_ALLGATHER, 3, "allgather")           \
    X(TLINK_COLL_REDUCE_SCATTER, 4, "reduce_scatter") \
    X(TLINK_COLL_ALLTOALL, 5, "alltoall")             \
    X(TLINK_COLL_ALLTOALLV, 6, "alltoallv")           \
    X(TLINK_COLL_BARRIER, 7, "barrier")               \
    X(TLINK_COLL_SENDRECV, 8, "sendrecv")

typedef enum {
#define TLINK_X_(name, val, str) name = val,
    TLINK_COLL_LIST(TLINK_X_)
#undef TLINK_X_
    TLINK_COLL_COUNT
} tlink_coll;

/* Which algorithms apply where (an inapplicable forced choice falls back to AUTO's pick;
 * tlink_last_algo() tells what ran):
 *   allreduce:      ring, recursive_doubling, rabenseifner, binomial_tree (reduce+bcast),
 *                   double_binary_tree, hierarchical, direct (all ranks on one host,
 *                   <= 32 KiB: one step through shared memory)
 *   reduce:         binomial_tree, ring (reduce-scatter ring + gather), double_binary_tree
 *   broadcast:      binomial_tree, ring (pipelined chain), double_binary_tree
 *   allgather:      ring, recursive_doubling (power-of-two sizes)
 *   reduce_scatter: ring, recursive_doubling (= recursive halving, power-of-two), pairwise
 *   alltoall(v):    pairwise
 *   barrier:        dissemination, direct (one host) */
#define TLINK_ALGO_LIST(X)                                     \
    X(TLINK_ALGO_AUTO, 0, "auto")                              \
    X(TLINK_ALGO_RING, 1, "ring")                              \
    X(TLINK_ALGO_RECURSIVE_DOUBLING, 2, "recursive_doubling")  \
    X(TLINK_ALGO_RABENSEIFNER, 3, "rabenseifner")              \
    X(TLINK_ALGO_BINOMIAL_TREE, 4, "binomial_tree")            \
    X(TLINK_ALGO_DOUBLE_BINARY_TREE, 5, "double_binary_tree")  \
    X(TLINK_ALGO_HIERARCHICAL, 6, "hierarchical")              \
    X(TLINK_ALGO_PAIRWISE, 7, "pairwise")                      \
    X(TLINK_ALGO_DISSEMINATION, 8, "dissemination")            \
    X(TLINK_ALGO_DIRECT, 9, "direct")

typedef enum {
#define TLINK_X_(name, val, str) name = val,
    TLINK_ALGO_LIST(TLINK_X_)
#undef TLINK_X_
    TLINK_ALGO_COUNT
} tlink_algo;

TLINK_API const char *tlink_coll_name(tlink_coll c);
TLINK_API const char *tlink_algo_name(tlink_algo a);
/* Accepts the names above and short forms: rd, rab, rabenseifner, tree, binomial, dbt,
 * hier, pairwise. -1 if unknown. */
TLINK_API int tlink_algo_from_name(const char *name);

/* ---------- communicators ---------- */

/* From the launcher's environment. Precedence (first that is set wins, per field):
 *   TLINK_RANK/TLINK_SIZE/TLINK_LOCAL_RANK/TLINK_LOCAL_SIZE/TLINK_STORE (host:port)
 *     (TILE_RANK/TILE_SIZE/... are accepted as synonyms)
 *   > torchrun: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT
 *   > Open MPI: OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE
 *   > MPICH/Hydra (PMI): PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, MPI_LOCALNRANKS
 *   > Slurm: SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NTASKS_PER_NODE
 * Store address: TLINK_STORE > MASTER_ADDR:MASTER_PORT > SLURM_LAUNCH_NODE_IPADDR or the
 * first host of SLURM_JOB_NODELIST (Slurm), the first tcp:// address of
 * OMPI_MCA_orte_hnp_uri (Open MPI) > 127.0.0.1 (single host); without an explicit port,
 * 20000 + hash(job id) % 20000 (job id from TLINK_JOB_ID, PMIX_NAMESPACE, Open MPI, PMI or
 * Slurm), else 29500. Rank and size are taken from the same source. See docs/tilelink.md. */
TLINK_API tlink_status tlink_comm_init_env(tlink_comm **out);

/* Explicit: rank in [0,size), store_addr "host:port" (NULL: use the environment's). */
TLINK_API tlink_status tlink_comm_init(tlink_comm **out, int rank, int size, const char *store_addr);

/* Full control; zero-initialise and set what you need (0/NULL = default / environment). */
typedef struct tlink_config {
    int rank, size;             /* required unless from_env */
    int from_env;               /* 1: fill rank/size/store from the environment first */
    const char *store_addr;     /* "host:port" */
    double timeout_s;           /* 0: TLINK_TIMEOUT or 300 */
    const char *key_prefix;     /* store key namespace (default "tlink"); for sharing a store */
    int host_store;             /* rank 0 hosts the store: 1 yes, -1 never (external), 0 auto
                                   (try to bind, use the existing server if the port is taken) */
    const char *transport;      /* NULL: auto; "tcp" forces TCP between all pairs */
    int reserved[16];           /* future: heartbeats, compression state, ... */
} tlink_config;
TLINK_API tlink_status tlink_comm_init_config(tlink_comm **out, const tlink_config *cfg);

/* Collective over comm: ranks with the same color form a new communicator, ordered by
 * (key, old rank). color < 0 (TLINK_UNDEFINED) gives *out = NULL. Built through the store. */
#define TLINK_UNDEFINED (-1)
TLINK_API tlink_status tlink_comm_split(tlink_comm *comm, int color, int key, tlink_comm **out);

/* Collective: waits for pending nonblocking work, a final barrier (bounded by the timeout),
 * then frees everything. Safe on a broken communicator (skips the barrier). NULL is OK. */
TLINK_API tlink_status tlink_comm_destroy(tlink_comm *comm);
/* Local, immediate: marks the communicator aborted, wakes peers waiting on this rank (they
 * get TLINK_ERR_PEER_FAILED), fails pending requests. Destroy it afterwards. */
TLINK_API tlink_status tlink_comm_abort(tlink_comm *comm);

TLINK_API int tlink_comm_rank(const tlink_comm *comm);
TLINK_API int tlink_comm_size(const tlink_comm *comm);
TLINK_API int tlink_comm_local_rank(const tlink_comm *comm);  /* index among ranks of this host */
TLINK_API int tlink_comm_local_size(const tlink_comm *comm);
TLINK_API int tlink_comm_host_count(const tlink_comm *comm);
TLINK_API int tlink_comm_host_index(const tlink_comm *comm, int rank); /* host of a rank, by first rank */
/* "self", "shm" or "tcp": the transport used between this rank and peer. */
TLINK_API const char *tlink_comm_transport(const tlink_comm *comm, int peer);
/* 1 when shared-memory messages between this rank and peer larger than the channel are read
 * with process_vm_readv (single copy: permitted both ways and fast enough, TLINK_SHM_CMA),
 * else 0. */
TLINK_API int tlink_comm_single_copy(const tlink_comm *comm, int peer);

TLINK_API tlink_status tlink_comm_set_timeout(tlink_comm *comm, double seconds);
/* Force an algorithm for one collective (TLINK_ALGO_AUTO restores the cost model). Must be
 * set identically on all ranks. Environment: TLINK_ALGO=ring (all collectives) or
 * TLINK_ALGO=allreduce:ring,broadcast:binomial_tree. */
TLINK_API tlink_status tlink_comm_set_algo(tlink_comm *comm, tlink_coll coll, tlink_algo algo);

/* ---------- blocking collectives ---------- */
TLINK_API tlink_status tlink_allreduce(tlink_comm *comm, const void *sendbuf, void *recvbuf,
                                       size_t count, tlink_dtype dt, tlink_op op);
/* recvbuf significant at root only (may be NULL elsewhere). */
TLINK_API tlink_status tlink_reduce(tlink_comm *comm, const void *sendbuf, void *recvbuf,
                                    size_t count, tlink_dtype dt, tlink_op op, int root);
TLINK_API tlink_status tlink_broadcast(tlink_comm *comm, void *buf, size_t count,
                                       tlink_dtype dt, int root);
/* recvbuf holds size*count elements, rank r's block at r*count. In place: sendbuf ==
 * recvbuf + rank*count elements. */
TLINK_API tlink_status tlink_allgather(tlink_comm *comm, const void *sendbuf, void *recvbuf,
                                       size_t count, tlink_dtype dt);
/* sendbuf holds size*recvcount elements; rank r receives the reduction of block r. In
 * place: sendbuf == recvbuf (result at the start of the buffer). */
TLINK_API tlink_status tlink_reduce_scatter(tlink_comm *comm, const void *sendbuf, void *recvbuf,
                                            size_t recvcount, tlink_dtype dt, tlink_op op);
/* count elements to and from every rank (block r at r*count). In place not supported. */
TLINK_API tlink_status tlink_alltoall(tlink_comm *comm, const void *sendbuf, void *recvbuf,
                                      size_t count, tlink_dtype dt);
/* counts and displacements in elements, one per rank. */
TLINK_API tlink_status tlink_alltoallv(tlink_comm *comm, const void *sendbuf,
                                       const size_t *sendcounts, const size_t *sdispls,
                                       void *recvbuf, const size_t *recvcounts,
                                       const size_t *rdispls, tlink_dtype dt);
TLINK_API tlink_status tlink_barrier(tlink_comm *comm);

/* Point to point (blocking, matched in order per pair). A recv whose count is smaller than
 * the message gives TLINK_ERR_TRUNCATED; a smaller message is fine: *received (may be NULL)
 * tells the element count. */
TLINK_API tlink_status tlink_send(tlink_comm *comm, const void *buf, size_t count,
                                  tlink_dtype dt, int peer);
TLINK_API tlink_status tlink_recv(tlink_comm *comm, void *buf, size_t count, tlink_dtype dt,
                                  int peer, size_t *received);
/* Send to dst and receive from src at the same time (no deadlock in rings). */
TLINK_API tlink_status tlink_sendrecv(tlink_comm *comm, const void *sendbuf, size_t sendcount,
                                      int dst, void *recvbuf, size_t recvcount, int src,
                                      tlink_dtype dt, size_t *received);

/* ---------- nonblocking collectives ---------- */
/* Queued and executed by the communicator's progress thread in issue order. Buffers must
 * stay valid until completion. The request is freed by tlink_wait, or by tlink_test once it
 * reports done. */
TLINK_API tlink_status tlink_iallreduce(tlink_comm *comm, const void *sendbuf, void *recvbuf,
                                        size_t count, tlink_dtype dt, tlink_op op,
                                        tlink_request **req);
TLINK_API tlink_status tlink_ireduce(tlink_comm *comm, const void *sendbuf, void *recvbuf,
                                     size_t count, tlink_dtype dt, tlink_op op, int root,
                                     tlink_request **req);
TLINK_API tlink_status tlink_ibroadcast(tlink_comm *comm, void *buf, size_t count,
                                        tlink_dtype dt, int root, tlink_request **req);
TLINK_API tlink_status tlink_iallgather(tlink_comm *comm, const void *sendbuf, void *recvbuf,
                                        size_t count, tlink_dtype dt, tlink_request **req);
TLINK_API tlink_status tlink_ireduce_scatter(tlink_comm *comm, const void *sendbuf,
                                             void *recvbuf, size_t recvcount, tlink_dtype dt,
                                             tlink_op op, tlink_request **req);
TLINK_API tlink_status tlink_ialltoall(tlink_comm *comm, const void *sendbuf, void *recvbuf,
                                       size_t count, tlink_dtype dt, tlink_request **req);
TLINK_API tlink_status tlink_ibarrier(tlink_comm *comm, tlink_request **req);
/* Blocks until done; returns the operation's status and frees the request. */
TLINK_API tlink_status tlink_wait(tlink_request *req);
/* *done = 1 when finished: then the return value is the operation's status and the request
 * is freed. *done = 0: returns TLINK_IN_PROGRESS. */
TLINK_API tlink_status tlink_test(tlink_request *req, int *done);

/* ---------- fault tolerance ----------
 * Detection: a peer on this host that exits is seen within ~0.1 s (/proc), a TCP peer whose
 * process dies within moments (its kernel closes the connections), and any peer — also a host
 * cut off without a RST, or a hung/stopped process — within TLINK_HEARTBEAT_TIMEOUT seconds
 * (1.5; heartbeats every TLINK_HEARTBEAT_INTERVAL = 0.1 s over UDP; 0 turns them off). Every
 * pending and later call on every survivor then returns TLINK_ERR_PEER_FAILED and
 * tlink_last_error names the rank.
 *
 * Recovery, two ways:
 *  - shrink: the survivors form a smaller communicator (ranks keep their order);
 *  - rejoin: the failed rank is replaced by a new process (e.g. `tile launch --max-restarts K`
 *    restarts it) that calls tlink_comm_init_env as usual; the survivors call
 *    tlink_comm_rejoin; together they form a communicator of the original size with the
 *    original rank numbers (re-initialisation through the store: every rank's generation
 *    counter advances by one, so old and new ranks meet under a fresh key prefix).
 * Both need the store to outlive the failure: a standalone store (`tile store`, or the one
 * `tile launch --max-restarts` hosts), not one hosted by a rank that may die. */

/* Local and thread-safe (may be called while another thread is inside a call on comm):
 * every pending and later call on comm, on every rank, fails with TLINK_ERR_REVOKED. The
 * revoke reaches other ranks through shared memory, the heartbeats and the store. */
TLINK_API tlink_status tlink_comm_revoke(tlink_comm *comm);
/* 1 when comm was revoked (here or by another rank). */
TLINK_API int tlink_comm_is_revoked(const tlink_comm *comm);
/* The ranks of comm this rank knows to have failed (after tlink_comm_shrink: the agreed set).
 * Writes up to max of them to ranks (ascending) and returns how many there are; -1 on bad
 * arguments. */
TLINK_API int tlink_comm_failed_ranks(const tlink_comm *comm, int *ranks, int max);
/* Collective over the survivors of comm (revokes comm first if it is not broken yet): they
 * agree through the store on who is alive — ranks that joined the shrink, excluding those
 * that failed, also when different ranks noticed the failure at different times — and form
 * *out with the survivors in their old order. Waits for a rank that neither joined nor is
 * known failed until the communicator timeout. A rank that was declared failed but is
 * alive gets TLINK_ERR_PEER_FAILED. comm stays valid (broken) until destroyed. */
TLINK_API tlink_status tlink_comm_shrink(tlink_comm *comm, tlink_comm **out);
/* Collective over all `size` ranks of the original communicator, replacement ranks included
 * (those call tlink_comm_init_env/init_config instead): a new communicator with the same rank,
 * size and store. Only for communicators made by tlink_comm_init* (not split/shrunk ones).
 * comm stays valid (broken) until destroyed. */
TLINK_API tlink_status tlink_comm_rejoin(tlink_comm *comm, tlink_comm **out);

/* ---------- expert-parallel dispatch and combine (moe.c; docs/tilelink.md "MoE") ----------
 * Mixture-of-experts all-to-all. Rank r owns experts [r E/W, (r+1) E/W) (contiguous; E a
 * multiple of the W ranks). Dispatch sends each token's hidden vector once to every rank that
 * owns one of its top-k experts and gives each rank its received tokens grouped per local
 * expert, contiguous rows per expert, as a grouped GEMM reads them:
 *
 *     tlink_moe_config cfg = {.num_experts = 256, .top_k = 8, .hidden = 7168, .dtype = TLINK_BF16};
 *     tlink_moe *m;
 *     tlink_moe_dispatch(comm, &cfg, ntok, x, NULL, topk_ids, topk_weights, &m);   // collective
 *     tlink_moe_recv r;
 *     tlink_moe_get_recv(m, &r);
 *     for (int e = 0; e < r.num_local_experts; e++)   // rows [off[e], off[e+1]) of r.x
 *         expert_forward(r.first_expert + e, r.x, r.expert_offsets[e], r.expert_counts[e], out);
 *     tlink_moe_combine(m, out, TLINK_BF16, y);                                    // collective
 *     tlink_moe_free(m);
 *
 * Inputs: x [ntokens][hidden] of cfg.dtype (bf16, or fp8 e4m3 with scales [ntokens], one f32
 * per token); topk_ids and topk_weights [ntokens][top_k] (an id of -1 leaves the slot unused;
 * a token may name two experts of one rank: one message, two rows). Rows of each expert are
 * ordered by (source rank, source token). Combine takes the experts' outputs in the row order of
 * the received rows ([nrows][hidden], bf16 or f32) and writes y [ntokens][hidden] in the same
 * dtype: y[t] = sum over t's slots of weight * output, accumulated in f32, rounded once per hop
 * (each rank's partial sum, each host's in the hierarchical exchange, the total). Over shared
 * memory and TCP; with several hosts of equal size also hierarchical: a token crosses the network
 * once per destination host (algo 0 times both on its first calls and keeps the faster:
 * docs/tilelink.md "MoE"). Every rank must call both, in the same order as other collectives. */
typedef struct tlink_moe tlink_moe;
typedef struct tlink_moe_config {
    int num_experts;            /* E */
    int top_k;                  /* 1..64 */
    size_t hidden;              /* elements per token */
    tlink_dtype dtype;          /* TLINK_BF16 or TLINK_FP8_E4M3 */
    int algo;                   /* 0 auto, 1 flat, 2 hierarchical (where the hosts allow it) */
    int reserved[8];
} tlink_moe_config;

typedef struct tlink_moe_recv {
    int num_local_experts;          /* E / W */
    int first_expert;               /* global id of local expert 0 */
    size_t nrows;                   /* rows received (a token routed to two local experts: two rows) */
    const size_t *expert_offsets;   /* [num_local_experts + 1]: expert e's rows are [off[e], off[e+1]) */
    const size_t *expert_counts;    /* [num_local_experts] */
    void *x;                        /* [nrows][hidden] of cfg.dtype, the experts' input (writable) */
    const float *scales;            /* [nrows] per-row fp8 scales; NULL for bf16 */
    const float *weights;           /* [nrows] routing weight of each row (combine applies them) */
    const int32_t *src_rank;        /* [nrows] the rank the row's token came from */
    const int32_t *src_token;       /* [nrows] its index there */
    size_t nunique;                 /* distinct (token, source) pairs received */
} tlink_moe_recv;

TLINK_API tlink_status tlink_moe_dispatch(tlink_comm *comm, const tlink_moe_config *cfg, size_t ntokens,
                                          const void *x, const float *scales, const int32_t *topk_ids,
                                          const float *topk_weights, tlink_moe **out);
/* Pointers into the handle: valid until tlink_moe_free. */
TLINK_API tlink_status tlink_moe_get_recv(const tlink_moe *m, tlink_moe_recv *out);
TLINK_API tlink_status tlink_moe_combine(tlink_moe *m, const void *expert_out, tlink_dtype out_dtype, void *y);
TLINK_API const char *tlink_moe_algo(const tlink_moe *m);   /* "flat" or "hierarchical" */
TLINK_API void tlink_moe_free(tlink_moe *m);                /* local; NULL is OK */

/* ---------- hang diagnosis ----------
 * Ask a running job what every rank is doing: each communicator of more than one rank answers
 * through its store from a thread of its own (TLINK_STATUS=0 turns it off), also while the rank
 * is stuck inside a call. `tile link-status` prints the same (docs/tilelink.md, "Hang
 * diagnosis"). A call that makes no progress for TLINK_SOFT_TIMEOUT seconds (default a fifth of
 * the communicator timeout; 0: off) makes one rank log this report before the hard deadline. */
typedef struct tlink_rank_status {
    int rank;
    int answered;               /* 0: no answer before the timeout (stopped, hung, dead, cut off) */
    int pid;
    char host[64];
    int in_call;                /* 1: inside a call on the communicator */
    char call[32];              /* the call ("allreduce", "moe_dispatch", ...), or the last one when idle */
    uint64_t seq;               /* calls made on the communicator so far, this one included */
    char algo[32];              /* the algorithm ("" when none applies) */
    int step;                   /* point-to-point rounds of the call so far */
    int peer;                   /* rank waited on; -1 none (making progress), -2 the ranks of its host */
    int sending;                /* 1: waiting to send to peer, 0: to receive from it */
    uint64_t bytes_done, bytes_total;  /* of the awaited message */
    double wait_s;              /* seconds without progress (-1: not waiting) */
    double call_s;              /* seconds in the call, or since the last one ended (-1: unknown) */
} tlink_rank_status;

/* Thread-safe (may be called from any thread while another is stuck in a call on comm): asks
 * every rank of comm, waits up to timeout_s (0: 5 s) for the answers, and writes one entry per
 * rank (at most max) to out[rank]; *nranks (may be NULL) gets the communicator's size. */
TLINK_API tlink_status tlink_comm_status(tlink_comm *comm, double timeout_s, tlink_rank_status *out, int max,
                                         int *nranks);
/* The same from outside the job: the store's address and a key namespace (NULL: TLINK_STORE_PREFIX
 * or "tlink"; its rank 0's newest communicator is asked) or a communicator's prefix ("tlink/3");
 * comm_prefix (may be NULL) gets the prefix that was asked. Authenticates with TLINK_SECRET. */
TLINK_API tlink_status tlink_job_status(const char *store_addr, const char *key_prefix, double timeout_s,
                                        tlink_rank_status *out, int max, int *nranks, char *comm_prefix,
                                        size_t comm_prefix_len);
/* Writes a report: one line per rank and a diagnosis (ranks that did not answer, ranks behind
 * the others and who waits on them, ranks in another call). Returns the length it needs
 * (snprintf-like: call with len 0 to size the buffer). */
TLINK_API size_t tlink_status_report(const tlink_rank_status *st, int n, char *buf, size_t len);

/* ---------- checkpoints ----------
 * In-memory buddy checkpoint: each rank keeps its last two saved states and a copy of its
 * buddy's (the previous rank in the ring), so losing any one rank loses nothing.
 *
 *     tlink_ckpt *ck; tlink_ckpt_create(&ck);
 *     for (step...) { train(); tlink_ckpt_save(ck, comm, step, &state, sizeof state); }
 *     on failure: tlink_comm_shrink(comm, &c2) or tlink_comm_rejoin(comm, &c2);
 *                 tlink_ckpt_restore(ck, c2, &state, sizeof state, &bytes, &step);
 *
 * A rank's identity in the checkpoint is its rank in the communicator of its first save or
 * restore (with rejoin: the original rank, so a replacement process finds its state). */
typedef struct tlink_ckpt tlink_ckpt;
TLINK_API tlink_status tlink_ckpt_create(tlink_ckpt **out);
TLINK_API void tlink_ckpt_free(tlink_ckpt *ck);
/* Collective: keep a copy of state (bytes may differ between ranks) tagged with step
 * (increasing) and exchange copies with the ring neighbours. */
TLINK_API tlink_status tlink_ckpt_save(tlink_ckpt *ck, tlink_comm *comm, int64_t step, const void *state,
                                       size_t bytes);
/* Collective over a new communicator (after shrink or rejoin): the ranks agree on the newest
 * step that every member can restore — from its own copy or from a buddy's — move the copies
 * that are needed, and write this rank's state into state (capacity cap bytes). *step = -1
 * and *bytes = 0 when nobody has saved anything yet (start from scratch). A state lost with
 * its buddy gives TLINK_ERR_PEER_FAILED naming the rank. */
TLINK_API tlink_status tlink_ckpt_restore(tlink_ckpt *ck, tlink_comm *comm, void *state, size_t cap,
                                          size_t *bytes, int64_t *step);
/* The buddy copy this rank holds (owner = the checkpoint identity of the rank it belongs
 * to); NULL/-1 when none. Lets survivors of a shrink take over a failed rank's state. */
TLINK_API const void *tlink_ckpt_buddy(const tlink_ckpt *ck, int *owner, int64_t *step, size_t *bytes);

/* On disk: written to PATH.tmp.PID, flushed (fsync) and renamed over path, so a crash
 * leaves the old file or the new one, never a torn one. The file has a header (magic,
 * version, step, size) and a 64-bit checksum over header and data; read verifies both and
 * returns TLINK_ERR_CORRUPT with a message naming the file on a mismatch or truncation.
 * Errors: tlink_last_error(NULL). *state is malloc'd (tlink_free). */
TLINK_API tlink_status tlink_ckpt_write_file(const char *path, int64_t step, const void *state, size_t bytes);
TLINK_API tlink_status tlink_ckpt_read_file(const char *path, int64_t *step, void **state, size_t *bytes);

/* ---------- introspection and the cost model (used by `tile link-bench`) ---------- */
/* Algorithm that ran in this communicator's last collective ("ring"), "" before any. */
TLINK_API const char *tlink_last_algo(const tlink_comm *comm);
/* Cost model's prediction for the last collective, microseconds. */
TLINK_API double tlink_last_predicted_us(const tlink_comm *comm);
/* Predicted time in microseconds of a collective of `bytes` (per-rank message size as in
 * nccl-tests: allreduce/bcast/reduce: the buffer; allgather/reduce_scatter/alltoall: the
 * full per-rank receive buffer) with one algorithm; a negative value if it does not apply.
 * algo == AUTO gives the chosen one's prediction and stores its id in *chosen (may be NULL). */
TLINK_API double tlink_predict_us(const tlink_comm *comm, tlink_coll coll, tlink_algo algo,
                                  size_t bytes, tlink_algo *chosen);

typedef enum { TLINK_TRANSPORT_SELF = 0, TLINK_TRANSPORT_SHM = 1, TLINK_TRANSPORT_TCP = 2,
               TLINK_TRANSPORT_COUNT } tlink_transport;
/* α (latency, seconds) and β (seconds per byte) per transport. Source: env
 * TLINK_COST_FILE / $XDG_CACHE_HOME/tile/tlink-cost-<host>.txt / a ping-pong measured at
 * creation. Setting them must be done identically on all ranks. */
TLINK_API tlink_status tlink_comm_get_cost(const tlink_comm *comm, tlink_transport t,
                                           double *alpha_s, double *beta_s_per_byte);
TLINK_API tlink_status tlink_comm_set_cost(tlink_comm *comm, tlink_transport t,
                                           double alpha_s, double beta_s_per_byte);

/* This machine's host identity as used for the shm/TCP choice: "hostname/<16 hex digits>"
 * where the digits hash hostname + /proc/sys/kernel/random/boot_id (+ the network namespace
 * inode when TLINK_HOST_PER_NETNS=1). TLINK_HOST_ID overrides it verbatim. */
TLINK_API tlink_status tlink_host_identity(char *buf, size_t len);

/* Where the environment says this process is (parsed with the precedence above). */
typedef struct tlink_env_info {
    int rank, size, local_rank, local_size;  /* -1 when unknown */
    char store_addr[256];                    /* "host:port" */
    const char *source;                      /* "tlink", "torchrun", "ompi", "pmi", "slurm", "none" */
} tlink_env_info;
TLINK_API tlink_status tlink_env_parse(tlink_env_info *out);

/* ---------- the key-value store (bootstrap; standalone as `tile store`) ---------- */
typedef struct tlink_store_server tlink_store_server;
typedef struct tlink_store tlink_store;

/* Listen on bind_addr ("0.0.0.0" when NULL) : port (0 = any free port) in a background
 * thread. */
TLINK_API tlink_status tlink_store_server_start(const char *bind_addr, int port,
                                                tlink_store_server **out);
TLINK_API int tlink_store_server_port(const tlink_store_server *s);
TLINK_API tlink_status tlink_store_server_stop(tlink_store_server *s);

/* Client. Connection retries until timeout_s (the server may start later). */
TLINK_API tlink_status tlink_store_connect(const char *addr, double timeout_s, tlink_store **out);
TLINK_API tlink_status tlink_store_set(tlink_store *s, const char *key, const void *val, size_t len);
/* Blocks until the key exists or timeout_s passes (TLINK_ERR_TIMEOUT). *val is malloc'd
 * (NUL-terminated for convenience); release with tlink_free. */
TLINK_API tlink_status tlink_store_get(tlink_store *s, const char *key, void **val, size_t *len,
                                       double timeout_s);
/* Atomic add to a 64-bit counter (created at 0); *result (may be NULL) gets the new value. */
TLINK_API tlink_status tlink_store_add(tlink_store *s, const char *key, int64_t delta, int64_t *result);
/* Non-blocking: *exists = 1 if the key is set. */
TLINK_API tlink_status tlink_store_check(tlink_store *s, const char *key, int *exists);
TLINK_API tlink_status tlink_store_delete(tlink_store *s, const char *key);
/* Wait for all keys; on timeout the message names the missing ones. */
TLINK_API tlink_status tlink_store_wait(tlink_store *s, const char *const *keys, int n, double timeout_s);
TLINK_API const char *tlink_store_last_error(const tlink_store *s);
TLINK_API void tlink_store_close(tlink_store *s);
TLINK_API void tlink_free(void *p);


/* ---------- topology ----------
 * TileLink topology: what the machines of a job look like, and what each
 * collective algorithm would cost on them.
 *
 * In:  this host (hostname, host identity, NUMA nodes and their CPUs from
 *      /sys/devices/system/node, usable cores from sched_getaffinity, and GPUs through the
 *      CUDA driver when libcuda.so.1 can be dlopen'ed), a running communicator (every rank
 *      contributes its host), a topology file (docs/tilelink-topology.md), or a synthetic
 *      cluster (e.g. 16 hosts x 8 ranks).
 * Out: a tlink_topo (hosts with their ranks, NUMA nodes, GPUs and GPU peer links; per
 *      transport α–β parameters, per host-pair link overrides), a text file for it, and
 *      predictions of every algorithm's time from libtilelink's own α–β cost model
 *      (cost.c), so larger clusters can be studied on one machine.
 *
 *     tlink_topo *t;
 *     char err[512];
 *     if (tlink_topo_read("cluster.topo", &t, err, sizeof err)) { fprintf(stderr, "%s\n", err); ... }
 *     tlink_topo_cost c[TLINK_ALGO_COUNT];
 *     int n = tlink_topo_predict(t, TLINK_COLL_ALLREDUCE, 1 << 20, c, TLINK_ALGO_COUNT, NULL);
 *     for (int i = 0; i < n; i++) printf("%s %.1f us\n", tlink_algo_name(c[i].algo), c[i].us);
 *     tlink_topo_free(t);
 */
#define TLINK_TOPO_VERSION 1

typedef struct tlink_topo_numa {
    int id;                     /* node number (/sys/devices/system/node/nodeID) */
    int ncpus;
    char cpus[256];             /* cpulist, e.g. "0-7,16-23" */
    long long mem_mb;           /* 0 when unknown */
} tlink_topo_numa;

typedef struct tlink_topo_gpu {
    int index;                  /* CUDA device ordinal */
    char name[96];
    char pci[32];               /* "0000:17:00.0", "" when unknown */
    int numa;                   /* -1 when unknown */
    long long mem_mb;
} tlink_topo_gpu;

/* Peer access between two GPUs of one host (cuDeviceGetP2PAttribute). */
typedef struct tlink_topo_gpulink {
    int a, b;                   /* GPU indices, a != b */
    int access;                 /* 1 when a can read/write b's memory directly */
    int perf_rank;              /* CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK (lower is better) */
    int atomics;                /* native atomics over the link */
} tlink_topo_gpulink;

typedef struct tlink_topo_host {
    char name[64];
    char id[128];               /* host identity (tlink_host_identity), "" when unknown */
    int nranks;
    int *ranks;                 /* [nranks] global ranks on this host, ascending */
    int ncores;                 /* cores the job may use there (0: unknown) */
    char cpu_model[96];
    int nnuma;                  /* NUMA node count (numa[] may hold fewer: details optional) */
    int nnuma_detail;
    tlink_topo_numa *numa;
    int ngpus;                  /* GPU count (gpus[] may hold fewer) */
    int ngpu_detail;
    tlink_topo_gpu *gpus;
    int ngpulinks;
    tlink_topo_gpulink *gpulinks;
} tlink_topo_host;

/* A measured or assumed link between two hosts (a != b) that differs from the default. */
typedef struct tlink_topo_link {
    int a, b;                   /* host indices */
    tlink_transport transport;  /* TLINK_TRANSPORT_TCP between hosts */
    double alpha_s;             /* latency, seconds */
    double beta_s;              /* seconds per byte (1 / bandwidth) */
} tlink_topo_link;

typedef struct tlink_topo {
    int nranks;                 /* world size: every rank 0..nranks-1 is on exactly one host */
    int nhosts;
    tlink_topo_host *hosts;
    int nlinks;
    tlink_topo_link *links;
    /* α–β parameters per transport (TLINK_TRANSPORT_SHM inside a host, _TCP between
     * hosts) and γ, the local reduction time per byte; as in cost.c. */
    double alpha_s[TLINK_TRANSPORT_COUNT];
    double beta_s[TLINK_TRANSPORT_COUNT];
    double gamma_s;
    char source[64];            /* "detected", "gathered", "synthetic", or the file name */
} tlink_topo;

/* This host only: hostname, identity, cores, NUMA nodes, GPUs (none when libcuda.so.1 is
 * missing or has no device: not an error). Ranks: LOCAL_WORLD_SIZE of the environment
 * (tlink_env_parse), else 1. The α–β values are cost.c's defaults. */
TLINK_API tlink_status tlink_topo_detect(tlink_topo **out);

/* Collective over comm: every rank detects its host; the result (identical on every rank)
 * has one host per distinct host identity with its ranks, and the communicator's measured
 * α–β parameters. */
TLINK_API tlink_status tlink_topo_gather(tlink_comm *comm, tlink_topo **out);

/* nhosts hosts of ranks_per_host ranks each (rank r on host r / ranks_per_host), with
 * numa_per_host NUMA nodes and gpus_per_host GPUs (counts only, no per-device lines), named
 * node000, node001, ...; default α–β values. */
TLINK_API tlink_status tlink_topo_synthetic(int nhosts, int ranks_per_host, int numa_per_host,
                                            int gpus_per_host, tlink_topo **out);

/* Reading and writing the text format (docs/tilelink-topology.md). Errors are written to
 * err as "FILE:LINE: error: message"; the result is validated (tlink_topo_validate). */
TLINK_API tlink_status tlink_topo_parse(const char *filename, const char *text, tlink_topo **out,
                                        char *err, size_t errlen);
TLINK_API tlink_status tlink_topo_read(const char *path, tlink_topo **out, char *err, size_t errlen);
TLINK_API tlink_status tlink_topo_write(const tlink_topo *t, FILE *f);
TLINK_API tlink_status tlink_topo_save(const tlink_topo *t, const char *path, char *err, size_t errlen);

/* Checks that every rank 0..nranks-1 is on exactly one host, names are unique, counts and
 * α–β values are sane, links name two different hosts. */
TLINK_API tlink_status tlink_topo_validate(const tlink_topo *t, char *err, size_t errlen);

/* Human-readable summary (what `tile link-topo` prints). */
TLINK_API void tlink_topo_print(const tlink_topo *t, FILE *f);

/* Replace the transport parameters (e.g. with a communicator's measured ones). */
TLINK_API tlink_status tlink_topo_set_cost(tlink_topo *t, tlink_transport tr, double alpha_s,
                                           double beta_s_per_byte);

typedef struct tlink_topo_cost {
    tlink_algo algo;
    double us;                  /* predicted time, microseconds */
} tlink_topo_cost;

/* Predicted time of every algorithm that applies to `coll` on this topology for a message
 * of `bytes` (nccl-tests' per-rank size, as tlink_predict_us), from cost.c's α–β model;
 * inter-host links use the slowest of the TCP defaults and the listed links (a ring or a
 * tree is as slow as its slowest hop). Fills up to max entries in out (in TLINK_ALGO_LIST
 * order) and returns how many apply (-1 on bad arguments); *best (may be NULL) gets the
 * algorithm the cost model would choose. */
TLINK_API int tlink_topo_predict(const tlink_topo *t, tlink_coll coll, size_t bytes,
                                 tlink_topo_cost *out, int max, tlink_algo *best);

TLINK_API void tlink_topo_free(tlink_topo *t);

/* ---------- device collectives (CUDA GPUs of one host; tilelink/src/gpu_*.c) ----------
 * Collectives on device pointers, one process per GPU (several processes may share one GPU).
 * Built on a host communicator (bootstrap through its store); every rank must be on the same
 * host and able to map its peers' memory (CUDA IPC; peer access over NVLink/PCIe or the same
 * GPU). libcuda.so.1 and NVRTC are opened with dlopen: no CUDA headers are needed, and
 * without a GPU tlink_gpu_available() says why. docs/tilelink-gpu.md has the protocol.
 *
 *     tlink_gpu_comm *g;
 *     tlink_gpu_comm_init(comm, NULL, &g);            // collective over comm; device = local rank
 *     tlink_gpu_allreduce(g, dsend, drecv, n, TLINK_BF16, TLINK_SUM, stream);  // enqueued
 *     tlink_gpu_sync(g, stream);                      // waits, reports a peer's timeout
 *
 * Every call is stream-ordered: it only enqueues work on `stream` (a CUstream; NULL: the
 * legacy default stream) and returns; kernels already on the stream run first, later ones
 * after it, so collectives overlap compute running on other streams. Errors in flight (a
 * peer that never arrives within the communicator's timeout) are reported by the next call
 * or by tlink_gpu_sync as TLINK_ERR_PEER_FAILED naming the rank. Algorithms (allreduce):
 * "oneshot" (every rank pushes everything to every peer and reduces locally; one
 * synchronisation), "twoshot" (reduce-scatter then all-gather through the peers' inboxes),
 * "ce" (copy engines move the data, a TileLang-generated kernel reduces; sum of f32/f16/bf16);
 * "ring" (pipelined ring reduce-scatter + all-gather through the ring neighbours only);
 * chosen by an α–β model fed by the GPU link matrix (TLINK_GPU_ALGO forces one). Broadcast:
 * "direct" (small), "scatter" (scatter from the root then allgather, every link carries ~B;
 * from 3 ranks) or "chain" (pipelined: each rank forwards while receiving). reduce_scatter,
 * allgather: "direct" or "ring". */
typedef struct tlink_gpu_comm tlink_gpu_comm;
typedef struct CUstream_st *tlink_cuda_stream;

typedef struct tlink_gpu_config {
    int device;                 /* CUDA ordinal; -1 (or a NULL config): local rank % device count */
    size_t slot_bytes;          /* SM path: bytes per block, source and step; 0: TLINK_GPU_SLOT or 256 KiB */
    size_t ce_chunk_bytes;      /* copy-engine path: bytes per column and step; 0: TLINK_GPU_CE_CHUNK or 16 MiB */
    int blocks;                 /* most thread blocks per collective (at most one per SM; all of them from
                                   TLINK_GPU_BIG bytes, 64 MiB, TLINK_GPU_BLOCKS_SMALL = 64 below); 0:
                                   TLINK_GPU_BLOCKS or 128 */
    int threads;                /* threads per block, at most 512; 0: TLINK_GPU_THREADS or 512 */
    int reserved[8];
} tlink_gpu_config;

/* 1 when libcuda.so.1 loads and shows a GPU; else 0 and why (may be NULL). */
TLINK_API int tlink_gpu_available(char *why, size_t len);
/* 1 when NVRTC loads; else 0 and why. */
TLINK_API int tlink_gpu_nvrtc_available(char *why, size_t len);
/* Compiles the device kernels for `arch` ("sm_90a") with NVRTC, without a GPU: the
 * hand-written collective kernel (all != 0: every dtype x op, slow; else f32 sum, bf16 avg,
 * fp8 e4m3 max) and the TileLang-generated reductions. Returns the number of
 * modules compiled (>0) or -1 with the log in err. */
TLINK_API int tlink_gpu_compile_check(const char *arch, int all, char *err, size_t errlen);

TLINK_API tlink_status tlink_gpu_comm_init(tlink_comm *comm, const tlink_gpu_config *cfg, tlink_gpu_comm **out);
/* Collective: synchronises, unmaps the peers' buffers and frees. NULL is OK. */
TLINK_API tlink_status tlink_gpu_comm_destroy(tlink_gpu_comm *g);
TLINK_API int tlink_gpu_comm_device(const tlink_gpu_comm *g);
/* "ipc-nvlink", "ipc-pcie" or "ipc-same-gpu": how this rank reaches peer (or "self"). */
TLINK_API const char *tlink_gpu_comm_link(const tlink_gpu_comm *g, int peer);
/* Force an algorithm: "auto"; allreduce "oneshot", "twoshot", "ce", "ring"; reduce_scatter,
 * allgather "direct", "ring"; broadcast "direct" (the root pushes everything to everyone),
 * "scatter" (scatter from the root, then allgather among the others), "chain" (also "ring").
 * An algorithm that does not apply to a collective leaves it to the model. Same on all ranks. */
TLINK_API tlink_status tlink_gpu_set_algo(tlink_gpu_comm *g, const char *algo);
TLINK_API const char *tlink_gpu_last_algo(const tlink_gpu_comm *g);
TLINK_API double tlink_gpu_last_predicted_us(const tlink_gpu_comm *g);

/* Semantics and buffer layouts as the host collectives above (in place: same rules). */
TLINK_API tlink_status tlink_gpu_allreduce(tlink_gpu_comm *g, const void *sendbuf, void *recvbuf, size_t count,
                                           tlink_dtype dt, tlink_op op, tlink_cuda_stream stream);
TLINK_API tlink_status tlink_gpu_reduce_scatter(tlink_gpu_comm *g, const void *sendbuf, void *recvbuf,
                                                size_t recvcount, tlink_dtype dt, tlink_op op,
                                                tlink_cuda_stream stream);
TLINK_API tlink_status tlink_gpu_allgather(tlink_gpu_comm *g, const void *sendbuf, void *recvbuf, size_t count,
                                           tlink_dtype dt, tlink_cuda_stream stream);
TLINK_API tlink_status tlink_gpu_broadcast(tlink_gpu_comm *g, const void *sendbuf, void *recvbuf, size_t count,
                                           tlink_dtype dt, int root, tlink_cuda_stream stream);
TLINK_API tlink_status tlink_gpu_alltoall(tlink_gpu_comm *g, const void *sendbuf, void *recvbuf, size_t count,
                                          tlink_dtype dt, tlink_cuda_stream stream);
/* Waits for the stream; TLINK_ERR_PEER_FAILED if a collective on it gave up on a peer. */
TLINK_API tlink_status tlink_gpu_sync(tlink_gpu_comm *g, tlink_cuda_stream stream);
TLINK_API const char *tlink_gpu_last_error(const tlink_gpu_comm *g);

/* Small helpers so that programs need no CUDA headers (tests, tile link-bench). memcpy
 * copies between any host and device pointers (unified addressing) and waits. */
TLINK_API tlink_status tlink_gpu_malloc(tlink_gpu_comm *g, size_t bytes, void **ptr);
TLINK_API tlink_status tlink_gpu_free(tlink_gpu_comm *g, void *ptr);
TLINK_API tlink_status tlink_gpu_memcpy(tlink_gpu_comm *g, void *dst, const void *src, size_t bytes);
TLINK_API tlink_status tlink_gpu_stream_create(tlink_gpu_comm *g, tlink_cuda_stream *out);
TLINK_API tlink_status tlink_gpu_stream_destroy(tlink_gpu_comm *g, tlink_cuda_stream s);

/* ---------- gradient compression (compress.c; docs/tilelink-compression.md) ----------
 * An all-reduce of an f32 gradient that puts compressed data on the wire, with error
 * feedback: what compression dropped in one call is kept by the library (per buffer, per
 * rank) and added to the next call's input, so over many steps nothing is lost.
 *
 *     tlink_compress *cs;
 *     tlink_compress_create(comm, TLINK_COMPRESS_SIGN1, nparams, 0, 1, &cs);  // once per buffer
 *     for (step...) {
 *         ... compute grad ...
 *         tlink_compressed_allreduce(cs, grad, grad, nparams, TLINK_AVG);       // collective
 *     }
 *     tlink_compress_destroy(cs);
 *
 * Methods (each chunk of `chunk` consecutive elements has its own f32 scale):
 *   none   f32 as is (the same two-phase path, exact values; for comparisons)
 *   sign1  1 bit per element (its sign) and scale = mean |x| of the chunk: 32x less than f32
 *          up to the scale (31x at the default chunk of 1024)
 *   int4   round(x / s), s = max|x| / 7, two per byte (values -7..7)
 *   int8   round(x / s), s = max|x| / 127
 *   fp8    fp8 e4m3 of x / s, s = max|x| / 448 (relative precision 2^-4)
 * Algorithm (every rank count, 1..N): each rank adds its residual, compresses its buffer in
 * N blocks (aligned to chunks), and sends block j to rank j (pairwise exchange); rank j
 * sums the decoded blocks and its own (exact) block (divides by N for avg), compresses that
 * sum again (with a second residual of its own), and the compressed blocks are all-gathered.
 * Every rank decodes the same bytes, so all ranks get bit-identical results. Bytes sent by
 * each rank per call: 2 (N-1) x (compressed block size) (phase 2 in its own method when
 * tlink_compress_set_gather chose one), against about 2 (N-1)/N x 4 count for an f32 ring
 * all-reduce. */
typedef enum {
    TLINK_COMPRESS_NONE = 0,
    TLINK_COMPRESS_SIGN1 = 1,
    TLINK_COMPRESS_INT4 = 2,
    TLINK_COMPRESS_INT8 = 3,
    TLINK_COMPRESS_FP8 = 4,
    TLINK_COMPRESS_COUNT
} tlink_compress_method;
#define TLINK_COMPRESS_DEFAULT_CHUNK 1024
#define TLINK_COMPRESS_MAX_CHUNK (1u << 20)

TLINK_API const char *tlink_compress_name(tlink_compress_method m);   /* "sign1", ..., "?" */
/* "none", "sign1" (also "1bit", "sign"), "int4", "int8", "fp8" (also "fp8_e4m3"); -1 if unknown. */
TLINK_API int tlink_compress_from_name(const char *name);

/* Encoded size of count elements: per chunk a 4-byte scale (none: no scale) and the packed
 * values. 0 for an invalid method or chunk (chunk 0 = the default). */
TLINK_API size_t tlink_compress_encoded_bytes(tlink_compress_method m, size_t count, size_t chunk);
/* Local codec (no communication): out must hold tlink_compress_encoded_bytes() bytes. */
TLINK_API tlink_status tlink_compress_encode(tlink_compress_method m, const float *x, size_t count,
                                             size_t chunk, void *out);
TLINK_API tlink_status tlink_compress_decode(tlink_compress_method m, const void *in, size_t count,
                                             size_t chunk, float *out);

typedef struct tlink_compress tlink_compress;  /* per gradient buffer, per rank */
/* Local (not a collective). Creates the state for a buffer of count f32 elements on
 * this communicator (the communicator must outlive it). chunk 0 = the default (1024);
 * error_feedback 1 keeps residuals (recommended), 0 drops what compression loses. */
TLINK_API tlink_status tlink_compress_create(tlink_comm *comm, tlink_compress_method m, size_t count,
                                             size_t chunk, int error_feedback, tlink_compress **out);
TLINK_API void tlink_compress_destroy(tlink_compress *cs);   /* NULL is OK */
/* Phase 2's method (the reduced blocks that are all-gathered); by default the state's own.
 * A finer one than phase 1's (sign1 then int8) keeps a second 1-bit compression of the
 * average from adding its error to the first one's. Local, but every rank must set the same
 * before the first call; zeroes the phase-2 residuals. */
TLINK_API tlink_status tlink_compress_set_gather(tlink_compress *cs, tlink_compress_method m);
/* Zero the residuals (e.g. after restoring parameters from a checkpoint). */
TLINK_API void tlink_compress_reset(tlink_compress *cs);

/* Collective: every rank calls it with its state for the same buffer. count must equal the
 * state's; op TLINK_SUM or TLINK_AVG; sendbuf == recvbuf is in place. */
TLINK_API tlink_status tlink_compressed_allreduce(tlink_compress *cs, const float *sendbuf, float *recvbuf,
                                                  size_t count, tlink_op op);

typedef struct tlink_compress_stats {
    uint64_t calls;
    uint64_t last_wire_bytes;     /* bytes this rank sent in the last call (payload, both phases) */
    uint64_t total_wire_bytes;    /* over all calls */
    uint64_t f32_ring_bytes;      /* what an f32 ring all-reduce of the buffer sends per rank:
                                     2 (N-1) x ceil(count/N) x 4 */
    double last_codec_s;          /* seconds encoding/decoding in the last call */
    double last_comm_s;           /* seconds in the two exchanges in the last call */
    double residual_norm;         /* L2 norm of this rank's residuals now (0 without error feedback) */
} tlink_compress_stats;
TLINK_API tlink_status tlink_compress_get_stats(const tlink_compress *cs, tlink_compress_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* TLINK_H */
