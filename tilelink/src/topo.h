/* topo.h — TileLink topology: what the machines of a job look like, and what each
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
 * Part of libtilelink; these declarations are meant to be merged into tlink.h.
 *
 *     tlink_topo *t;
 *     char err[512];
 *     if (tlink_topo_read("cluster.topo", &t, err, sizeof err)) { fprintf(stderr, "%s\n", err); ... }
 *     tlink_topo_cost c[TLINK_ALGO_COUNT];
 *     int n = tlink_topo_predict(t, TLINK_COLL_ALLREDUCE, 1 << 20, c, TLINK_ALGO_COUNT, NULL);
 *     for (int i = 0; i < n; i++) printf("%s %.1f us\n", tlink_algo_name(c[i].algo), c[i].us);
 *     tlink_topo_free(t);
 */
#ifndef TLINK_TOPO_H
#define TLINK_TOPO_H

#include <stdio.h>

#include "tlink.h"

#ifdef __cplusplus
extern "C" {
#endif

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

#ifdef __cplusplus
}
#endif
#endif
