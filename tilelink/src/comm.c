/* comm.c — environment parsing, host identity, communicator creation (bootstrap through the
 * store), split, destroy, accessors. */
#include "tl_internal.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sched.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------- errors ---------- */
tlink_status tl_err(tlink_comm *c, tlink_status st, const char *fmt, ...) {
    char buf[700];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (c) {
        if (c->size > 1 && strncmp(buf, "rank ", 5))
            snprintf(c->errmsg, sizeof c->errmsg, "rank %d: %s", c->rank, buf);
        else
            snprintf(c->errmsg, sizeof c->errmsg, "%s", buf);
        tl_set_thread_error("%s", c->errmsg);
    } else {
        tl_set_thread_error("%s", buf);
    }
    tl_log(TL_LOG_INFO, "error (%s): %s", tlink_error_string(st), c ? c->errmsg : buf);
    return st;
}

const char *tlink_last_error(const tlink_comm *c) {
    if (!c) return tl_thread_error();
    return c->errmsg;
}

void *tl_scratch(tlink_comm *c, size_t bytes) {
    if (bytes <= c->scratch_size) return c->scratch;
    void *p = realloc(c->scratch, bytes);
    if (!p) {
        tl_err(c, TLINK_ERR_NO_MEMORY, "out of memory (scratch of %zu bytes)", bytes);
        return NULL;
    }
    c->scratch = p;
    c->scratch_size = bytes;
    return p;
}

/* ---------- environment ---------- */
/* A rank or size from knob k (TB_K_COUNT: none): ours are checked by the registry; other
 * launchers' (foreign) are whole numbers in 0..2^24 or ignored. */
static int env_int(tb_knob k, int *out) {
    if (k >= TB_K_COUNT) return 0;
    if (tb_knob_get_info(k)->lib != TB_KL_FOREIGN) {
        if (!tb_knob_is_set(k)) return 0;
        *out = (int)tb_knob_int(k);
        return 1;
    }
    const char *v = tb_env_raw(k);
    if (!v) return 0;
    char *end;
    long x = strtol(v, &end, 10);
    if (*end || x < 0 || x > 1 << 24) return 0;
    *out = (int)x;
    return 1;
}

/* "node[01-04,7],other" -> "node01" */
static void first_slurm_host(const char *list, char *out, size_t n) {
    size_t i = 0, o = 0;
    while (list[i] && list[i] != ',' && list[i] != '[' && o + 1 < n) out[o++] = list[i++];
    if (list[i] == '[') {
        i++;
        while (list[i] && isdigit((unsigned char)list[i]) && o + 1 < n) out[o++] = list[i++];
    }
    out[o] = 0;
}

static int jobid_port(void) {
    static const tb_knob ids[] = {TB_K_TLINK_JOB_ID, TB_K_PMIX_NAMESPACE, TB_K_OMPI_MCA_ess_base_jobid,
                                  TB_K_OMPI_MCA_orte_ess_jobid, TB_K_PMI_KVSNAME, TB_K_SLURM_JOB_ID};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        const char *v = ids[i] == TB_K_TLINK_JOB_ID ? tb_knob_str(ids[i]) : tb_env_raw(ids[i]);
        if (v) {
            uint64_t h = tl_hash64(v, strlen(v), 0);
            if (ids[i] == TB_K_SLURM_JOB_ID) {
                const char *step = tb_env_raw(TB_K_SLURM_STEP_ID);
                if (step) h = tl_hash64(step, strlen(step), h);
            }
            return 20000 + (int)(h % 20000);
        }
    }
    return 29500;
}

tlink_status tlink_env_parse(tlink_env_info *e) {
    if (!e) return TLINK_ERR_INVALID_ARG;
    memset(e, 0, sizeof *e);
    e->rank = e->size = e->local_rank = e->local_size = -1;
    e->source = "none";
#define NO_ TB_K_COUNT
    static const struct {
        const char *src;
        tb_knob rank[2], size[3], lrank[2], lsize[2];
    } srcs[] = {
        {"tlink", {TB_K_TLINK_RANK, TB_K_TILE_RANK}, {TB_K_TLINK_SIZE, TB_K_TILE_SIZE, TB_K_TILE_WORLD_SIZE},
         {TB_K_TLINK_LOCAL_RANK, TB_K_TILE_LOCAL_RANK}, {TB_K_TLINK_LOCAL_SIZE, TB_K_TILE_LOCAL_SIZE}},
        {"torchrun", {TB_K_RANK, NO_}, {TB_K_WORLD_SIZE, NO_, NO_}, {TB_K_LOCAL_RANK, NO_}, {TB_K_LOCAL_WORLD_SIZE, NO_}},
        {"ompi", {TB_K_OMPI_COMM_WORLD_RANK, NO_}, {TB_K_OMPI_COMM_WORLD_SIZE, NO_, NO_},
         {TB_K_OMPI_COMM_WORLD_LOCAL_RANK, NO_}, {TB_K_OMPI_COMM_WORLD_LOCAL_SIZE, NO_}},
        {"pmi", {TB_K_PMI_RANK, NO_}, {TB_K_PMI_SIZE, NO_, NO_}, {TB_K_MPI_LOCALRANKID, NO_}, {TB_K_MPI_LOCALNRANKS, NO_}},
        {"slurm", {TB_K_SLURM_PROCID, NO_}, {TB_K_SLURM_NTASKS, TB_K_SLURM_NPROCS, NO_}, {TB_K_SLURM_LOCALID, NO_},
         {TB_K_SLURM_NTASKS_PER_NODE, NO_}},
    };
#undef NO_
    for (size_t i = 0; i < sizeof srcs / sizeof srcs[0]; i++) {
        int r = -1, s = -1, lr = -1, ls = -1;
        for (int k = 0; k < 2 && r < 0; k++) env_int(srcs[i].rank[k], &r);
        for (int k = 0; k < 3 && s < 0; k++) env_int(srcs[i].size[k], &s);
        if (r < 0 || s <= 0) continue;
        for (int k = 0; k < 2 && lr < 0; k++) env_int(srcs[i].lrank[k], &lr);
        for (int k = 0; k < 2 && ls < 0; k++) env_int(srcs[i].lsize[k], &ls);
        e->rank = r;
        e->size = s;
        e->local_rank = lr;
        e->local_size = ls;
        e->source = srcs[i].src;
        break;
    }
    /* store address */
    const char *st = tb_knob_str(TB_K_TLINK_STORE);
    if (!st) st = tb_knob_str(TB_K_TILE_STORE);
    const char *ma = tb_env_raw(TB_K_MASTER_ADDR), *mp = tb_env_raw(TB_K_MASTER_PORT);
    if (st) {
        snprintf(e->store_addr, sizeof e->store_addr, "%s", st);
    } else if (ma || mp) {
        snprintf(e->store_addr, sizeof e->store_addr, "%s:%s", ma ? ma : "127.0.0.1", mp ? mp : "29500");
    } else {
        char host[200] = "127.0.0.1";
        const char *sl = tb_env_raw(TB_K_SLURM_LAUNCH_NODE_IPADDR);
        const char *nl = tb_env_raw(TB_K_SLURM_JOB_NODELIST);
        if (!nl) nl = tb_env_raw(TB_K_SLURM_NODELIST);
        const char *hnp = tb_env_raw(TB_K_OMPI_MCA_orte_hnp_uri);
        if (!strcmp(e->source, "slurm") && sl) snprintf(host, sizeof host, "%s", sl);
        else if (!strcmp(e->source, "slurm") && nl) first_slurm_host(nl, host, sizeof host);
        else if (!strcmp(e->source, "ompi") && hnp && strstr(hnp, "tcp://")) {
            const char *p = strstr(hnp, "tcp://") + 6;
            size_t n = strcspn(p, ":,;");
            if (n > 0 && n < sizeof host) { memcpy(host, p, n); host[n] = 0; }
        }
        snprintf(e->store_addr, sizeof e->store_addr, "%s:%d", host, jobid_port());
    }
    return TLINK_OK;
}

/* ---------- host identity ---------- */
static uint64_t ns_inode(const char *which) {
    char path[64];
    struct stat sb;
    snprintf(path, sizeof path, "/proc/self/ns/%s", which);
    if (stat(path, &sb) != 0) return 0;
    return (uint64_t)sb.st_ino;
}

tlink_status tlink_host_identity(char *buf, size_t len) {
    if (!buf || !len) return TLINK_ERR_INVALID_ARG;
    const char *ov = tb_knob_str(TB_K_TLINK_HOST_ID);
    if (ov) {
        snprintf(buf, len, "%s", ov);
        return TLINK_OK;
    }
    const char *hn = tl_hostname();
    uint64_t h = tl_hash64(hn, strlen(hn), 0);
    char boot[64] = "";
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
    if (f) {
        if (!fgets(boot, sizeof boot, f)) boot[0] = 0;
        fclose(f);
    }
    h = tl_hash64(boot, strlen(boot), h);
    if (tb_knob_bool(TB_K_TLINK_HOST_PER_NETNS)) {
        uint64_t ino = ns_inode("net");
        h = tl_hash64(&ino, sizeof ino, h);
    }
    snprintf(buf, len, "%s/%016llx", hn, (unsigned long long)h);
    return TLINK_OK;
}

/* one value per running kernel: processes in different network namespaces or containers of
 * one machine share it (their TCP traffic never leaves the machine) */
static uint64_t machine_id(void) {
    char boot[64] = "";
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
    if (!f) return 0;
    if (!fgets(boot, sizeof boot, f)) boot[0] = 0;
    fclose(f);
    return boot[0] ? tl_hash64(boot, strlen(boot), 0x6d616368696e65ULL) | 1 : 0;
}

static uint64_t my_starttime(void) {
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "re");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *q = strrchr(buf, ')');
    if (!q) return 0;
    q += 2;
    for (int field = 3; field < 22 && q; field++) {
        q = strchr(q, ' ');
        if (q) q++;
    }
    return q ? strtoull(q, NULL, 10) : 0;
}

/* ---------- algorithm forcing from TLINK_ALGO ---------- */
static void parse_algo_env(tlink_comm *c) {
    const char *v = tb_knob_str(TB_K_TLINK_ALGO);
    if (!v) return;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", v);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(tok, ':');
        if (!colon) colon = strchr(tok, '=');
        if (colon) {
            *colon = 0;
            int a = tlink_algo_from_name(colon + 1);
            int found = 0;
            for (int k = 0; k < TLINK_COLL_COUNT; k++)
                if (!strcasecmp(tok, tlink_coll_name((tlink_coll)k))) { found = 1; if (a >= 0) c->forced[k] = (tlink_algo)a; }
            if (!found || a < 0) tl_log(TL_LOG_WARN, "TLINK_ALGO: ignoring '%s:%s'", tok, colon + 1);
        } else {
            int a = tlink_algo_from_name(tok);
            if (a < 0) { tl_log(TL_LOG_WARN, "TLINK_ALGO: unknown algorithm '%s'", tok); continue; }
            for (int k = 0; k < TLINK_COLL_COUNT; k++) c->forced[k] = (tlink_algo)a;
        }
    }
}

/* ---------- bootstrap ---------- */
typedef struct rinfo {
    uint32_t magic;
    int32_t rank, pid, nstreams, force_tcp, pad;
    uint64_t starttime, pidns, comm_id;
    uint64_t machine;               /* hash of the kernel's boot id: same machine, any namespace */
    int32_t forced[TLINK_COLL_COUNT];
    char hostname[64];
    char hostid[128];
    char addr[96];
    uint64_t cpus[16];              /* sched_getaffinity: the CPUs (0..1023) this rank may use */
    int32_t cores, pad2;            /* TLINK_CORES (0: unset); rank 0's applies */
} rinfo;
#define RINFO_MAGIC 0x544c5250u

/* The CPUs the ranks of each host may use, together (the union of their affinity masks: ranks
 * bound one per core are not oversubscribed, ranks sharing an affinity of 2 CPUs are; rank 0's
 * TLINK_CORES, when set, replaces the count on every host): sets
 * c->local_cores for this host and c->ranks_per_core, the most ranks per usable CPU on any host
 * (the cost model's oversubscription term; every rank computes the same from the same table). */
static void host_cores(tlink_comm *c, const rinfo *all) {
    c->ranks_per_core = 0;
    for (int h = 0; h < c->nhosts; h++) {
        uint64_t u[16] = {0};
        for (int r = 0; r < c->size; r++)
            if (c->host_of[r] == h)
                for (int k = 0; k < 16; k++) u[k] |= all[r].cpus[k];
        int n = 0;
        for (int k = 0; k < 16; k++) n += __builtin_popcountll(u[k]);
        if (all[0].cores > 0) n = all[0].cores; /* TLINK_CORES: e.g. a CPU quota the mask does not show */
        if (n <= 0) n = (int)sysconf(_SC_NPROCESSORS_ONLN); /* no affinity reported */
        if (n <= 0) n = 1;
        if (h == c->host_idx) c->local_cores = n;
        double rpc = (double)c->host_nranks[h] / n;
        if (rpc > c->ranks_per_core) c->ranks_per_core = rpc;
    }
}

static tlink_comm *comm_alloc(void) {
    tlink_comm *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->epfd = c->listen_fd = -1;
    c->timeout = tl_default_timeout();
    c->spin_s = 0;
    c->yield_s = 2000e-6;
    c->yield_every = 16;
    pthread_mutex_init(&c->exec_mu, NULL);
    c->stat = calloc(1, sizeof *c->stat);
    if (!c->stat) {
        pthread_mutex_destroy(&c->exec_mu);
        free(c);
        return NULL;
    }
    atomic_init(&c->stat->refs, 1);
    atomic_init(&c->stat->algo, -1);
    atomic_init(&c->stat->peer, -1);
    return c;
}

static void comm_free(tlink_comm *c) {
    if (!c) return;
    tl_async_shutdown(c);
    tl_status_stop(c);
    tl_ft_close(c);
    tl_tcp_teardown(c);
    tl_shm_teardown(c);
    if (c->store) tlink_store_close(c->store);
    if (c->server) tlink_store_server_stop(c->server);
    free(c->host_of);
    free(c->host_first);
    free(c->host_nranks);
    free(c->local_ranks);
    free(c->world);
    free(c->cross);
    free(c->peers);
    free(c->scratch);
    pthread_mutex_destroy(&c->exec_mu);
    free(c);
}

static tlink_status comm_bootstrap(tlink_comm *c) {
    double t0 = tl_now(), deadline = t0 + c->timeout;
    int n = c->size;
    char aerr[300];
    int auth = tl_auth_load(&c->auth_key, aerr, sizeof aerr);
    if (auth < 0) return tl_err(c, TLINK_ERR_INVALID_ARG, "bootstrap: %s", aerr);
    c->auth = auth;
    rinfo me;
    memset(&me, 0, sizeof me);
    me.magic = RINFO_MAGIC;
    me.rank = c->rank;
    me.pid = (int)getpid();
    me.nstreams = (int)tb_knob_int(TB_K_TLINK_SOCKET_NSTREAMS);
    if (me.nstreams < 1) me.nstreams = 1;
    if (me.nstreams > TL_MAX_STREAMS) me.nstreams = TL_MAX_STREAMS;
    me.force_tcp = c->force_tcp || tb_knob_int(TB_K_TLINK_TRANSPORT) == 1; /* auto|tcp */
    me.starttime = my_starttime();
    me.pidns = ns_inode("pid");
    me.machine = machine_id();
    me.comm_id = c->comm_id;
    for (int k = 0; k < TLINK_COLL_COUNT; k++) me.forced[k] = (int32_t)c->forced[k];
    snprintf(me.hostname, sizeof me.hostname, "%s", tl_hostname());
    tlink_host_identity(me.hostname[0] ? me.hostid : me.hostid, sizeof me.hostid);
    tlink_status st = tl_tcp_listen(c, me.addr, sizeof me.addr);
    if (st) return st;
    me.pad = tl_ft_open(c, me.addr); /* heartbeat port (ft.c), 0 when none */
    cpu_set_t mycs;
    if (sched_getaffinity(0, sizeof mycs, &mycs) == 0) {
        for (int k = 0; k < 1024 && k < CPU_SETSIZE; k++)
            if (CPU_ISSET(k, &mycs)) me.cpus[k / 64] |= 1ULL << (k % 64);
    }
    me.cores = (int32_t)tb_knob_int(TB_K_TLINK_CORES);
    char key[256];
    snprintf(key, sizeof key, "%s/rank/%d", c->prefix, c->rank);
    st = tlink_store_set(c->store, key, &me, sizeof me);
    if (st) return tl_err(c, TLINK_ERR_BOOTSTRAP, "bootstrap: %s", tlink_store_last_error(c->store));
    rinfo *all = calloc((size_t)n, sizeof *all);
    char **addrs = calloc((size_t)n, sizeof *addrs);
    if (!all || !addrs) { free(all); free(addrs); return tl_err(c, TLINK_ERR_NO_MEMORY, "out of memory"); }
    for (int r = 0; r < n; r++) {
        void *v = NULL;
        size_t len = 0;
        snprintf(key, sizeof key, "%s/rank/%d", c->prefix, r);
        double left = deadline - tl_now();
        st = left > 0 ? tlink_store_get(c->store, key, &v, &len, left) : TLINK_ERR_TIMEOUT;
        if (st == TLINK_ERR_TIMEOUT) {
            char missing[300];
            int off = 0, nmiss = 0;
            for (int q = r; q < n; q++) {
                int ex = 0;
                snprintf(key, sizeof key, "%s/rank/%d", c->prefix, q);
                if (tlink_store_check(c->store, key, &ex) == TLINK_OK && ex) continue;
                nmiss++;
                if (off < (int)sizeof missing - 20)
                    off += snprintf(missing + off, sizeof missing - (size_t)off, "%s%d", nmiss > 1 ? ", " : "", q);
            }
            free(all);
            free(addrs);
            return tl_err(c, TLINK_ERR_TIMEOUT,
                          "bootstrap: timed out after %.1f s: rank%s %s of %d never registered at the store %s "
                          "(were they started? same TLINK_STORE/MASTER_ADDR:MASTER_PORT?)",
                          c->timeout, nmiss > 1 ? "s" : "", missing, n, c->store_addr);
        }
        if (st || len != sizeof(rinfo) || ((rinfo *)v)->magic != RINFO_MAGIC) {
            free(v);
            free(all);
            free(addrs);
            return tl_err(c, TLINK_ERR_BOOTSTRAP, "bootstrap: bad registration of rank %d at the store %s%s%s", r,
                          c->store_addr, st ? ": " : " (another program or version uses these keys?)",
                          st ? tlink_store_last_error(c->store) : "");
        }
        memcpy(&all[r], v, sizeof(rinfo));
        free(v);
    }
    c->comm_id = all[0].comm_id;
    c->force_tcp = all[0].force_tcp;
    c->nstreams = all[0].nstreams;
    for (int k = 0; k < TLINK_COLL_COUNT; k++) c->forced[k] = (tlink_algo)all[0].forced[k];
    /* hosts, ordered by first rank */
    c->host_of = calloc((size_t)n, sizeof(int));
    c->host_first = calloc((size_t)n, sizeof(int));
    c->host_nranks = calloc((size_t)n, sizeof(int));
    c->peers = calloc((size_t)n, sizeof(tl_peer));
    if (!c->host_of || !c->host_first || !c->host_nranks || !c->peers) {
        free(all);
        free(addrs);
        return tl_err(c, TLINK_ERR_NO_MEMORY, "out of memory");
    }
    c->nhosts = 0;
    for (int r = 0; r < n; r++) {
        int h = -1;
        for (int k = 0; k < c->nhosts && h < 0; k++)
            if (!strcmp(all[c->host_first[k]].hostid, all[r].hostid)) h = k;
        if (h < 0) { h = c->nhosts++; c->host_first[h] = r; }
        c->peers[r].local_idx = c->host_nranks[h]++;
        c->host_of[r] = h;
    }
    c->host_idx = c->host_of[c->rank];
    c->local_size = c->host_nranks[c->host_idx];
    c->local_rank = c->peers[c->rank].local_idx;
    c->local_ranks = calloc((size_t)c->local_size, sizeof(int));
    c->world = calloc((size_t)n, sizeof(int));
    if (!c->local_ranks || !c->world) {
        free(all);
        free(addrs);
        return tl_err(c, TLINK_ERR_NO_MEMORY, "out of memory");
    }
    for (int r = 0; r < n; r++) c->world[r] = r;
    int uniform = 1;
    for (int h = 1; h < c->nhosts; h++) uniform &= c->host_nranks[h] == c->host_nranks[0];
    if (uniform && c->nhosts > 1) {
        c->cross = calloc((size_t)c->nhosts, sizeof(int));
        if (!c->cross) {
            free(all);
            free(addrs);
            return tl_err(c, TLINK_ERR_NO_MEMORY, "out of memory");
        }
        for (int r = 0; r < n; r++)
            if (c->peers[r].local_idx == c->peers[c->rank].local_idx) c->cross[c->host_of[r]] = r;
    }
    for (int r = 0, k = 0; r < n; r++)
        if (c->host_of[r] == c->host_idx) c->local_ranks[k++] = r;
    for (int r = 0; r < n; r++) {
        tl_peer *p = &c->peers[r];
        p->host = c->host_of[r];
        p->pid = all[r].pid;
        p->starttime = all[r].starttime;
        p->same_pidns = all[r].pidns == me.pidns && p->host == c->host_idx;
        p->same_machine = me.machine && all[r].machine == me.machine;
        snprintf(p->hostname, sizeof p->hostname, "%s", all[r].hostname);
        if (r == c->rank) p->transport = TLINK_TRANSPORT_SELF;
        else if (p->host == c->host_idx && !c->force_tcp) p->transport = TLINK_TRANSPORT_SHM;
        else p->transport = TLINK_TRANSPORT_TCP;
        addrs[r] = all[r].addr;
        tl_ft_set_peer(c, r, all[r].addr, all[r].pad);
    }
    tl_log(TL_LOG_INFO, "rank %d/%d: %d host(s), local rank %d/%d, transport to peers: %s, %d stream(s)", c->rank, n,
           c->nhosts, c->local_rank, c->local_size, c->force_tcp ? "tcp (forced)" : c->nhosts > 1 ? "shm+tcp" : "shm",
           c->nstreams);
    /* spin briefly, then yield, then sleep; when this host's ranks outnumber our cores,
     * busy-waiting only steals the CPU from the peer we wait for */
    host_cores(c, all);
    int over = c->local_size > c->local_cores;
    /* not oversubscribed: poll shared memory without system calls first (a yield is a system
     * call, and on a busy machine it hands the core to another job for a time slice), up to
     * 2 ms, unless the peer we wait for last waited on our own CPU (p2p.c) */
    c->spin_s = tb_knob_float_or(TB_K_TLINK_SPIN_US, over ? 0 : 2000) * 1e-6;
    c->yield_s = tb_knob_float_or(TB_K_TLINK_YIELD_US, over ? 50 : 2000) * 1e-6;
    c->yield_every = (int)tb_knob_int_or(TB_K_TLINK_POLLS_PER_YIELD, over ? 1 : 16);
    c->coloc_move = tb_knob_bool(TB_K_TLINK_COLOC_MOVE);
    if (c->yield_every < 1) c->yield_every = 1;
    c->tcp_chunk = (size_t)tb_knob_int(TB_K_TLINK_SOCKET_CHUNK);
    if (c->tcp_chunk < 4096) c->tcp_chunk = 4096;
    st = tl_shm_setup(c);
    if (!st) st = tl_tcp_connect_all(c, addrs);
    free(addrs);
    free(all);
    if (c->listen_fd >= 0) { close(c->listen_fd); c->listen_fd = -1; }
    if (st) return st;
    tl_status_start(c);
    tl_ft_start(c);
    st = tl_cost_init(c);
    if (st) return st;
    tl_args a = {.coll = TLINK_COLL_BARRIER, .quiet = 1};
    st = tl_coll_run(c, &a);
    if (st) return st;
    tl_log(TL_LOG_INFO, "communicator ready in %.1f ms (rank %d of %d)", (tl_now() - t0) * 1e3, c->rank, n);
    return TLINK_OK;
}

/* ---------- where rank 0's store listens ----------
 * Loopback when the ranks reach it over loopback; otherwise on every interface (the
 * addresses other hosts use are not known here), with a warning from store.c when no secret
 * protects it. */
static int host_ipv4s(const char *host, uint32_t *ips, int max) {
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, NULL, &hints, &res) != 0) return 0;
    int n = 0;
    for (struct addrinfo *ai = res; ai && n < max; ai = ai->ai_next)
        ips[n++] = ntohl(((struct sockaddr_in *)ai->ai_addr)->sin_addr.s_addr);
    freeaddrinfo(res);
    return n;
}
/* 1 when every address of host is a loopback one; ip gets the first */
static int host_is_loopback(const char *host, char *ip, size_t iplen) {
    uint32_t ips[8];
    int n = host_ipv4s(host, ips, 8);
    for (int i = 0; i < n; i++)
        if (ips[i] >> 24 != 127) return 0;
    if (n > 0) {
        struct in_addr a = {htonl(ips[0])};
        inet_ntop(AF_INET, &a, ip, (socklen_t)iplen);
    }
    return n > 0;
}
/* an address of one of this machine's interfaces */
static int host_is_this_machine(const char *host) {
    uint32_t ips[8];
    int n = host_ipv4s(host, ips, 8), found = 0;
    struct ifaddrs *ifa = NULL;
    if (!n || getifaddrs(&ifa) != 0) return 0;
    for (struct ifaddrs *i = ifa; i && !found; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
        uint32_t a = ntohl(((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr);
        for (int k = 0; k < n; k++) found |= a == ips[k];
    }
    freeifaddrs(ifa);
    return found;
}

/* Every rank is on this host (the launcher says so: local size = size) and the store address
 * is one of this machine's: then nobody needs to reach the store from outside, so every rank
 * meets it on loopback (addr becomes 127.0.0.1:PORT; returns 1) and rank 0's listens there only.
 * Each rank decides alike from the same environment, and so does `tile link-status --pid`. Not
 * when namespaces or explicit host identities make "this host" mean something else. */
int tl_local_store_addr(char *addr, size_t len, int size) {
    char host[256];
    int port;
    if (tl_parse_hostport(addr, host, sizeof host, &port) || tb_knob_bool(TB_K_TLINK_HOST_PER_NETNS) ||
        tb_knob_str(TB_K_TLINK_HOST_ID))
        return 0;
    char ip[64];
    if (host_is_loopback(host, ip, sizeof ip)) return 0;
    tlink_env_info e;
    tlink_env_parse(&e);
    if (size <= 0 || e.size != size || e.local_size != size || !host_is_this_machine(host)) return 0;
    snprintf(addr, len, "127.0.0.1:%d", port);
    return 1;
}

tlink_status tlink_comm_init_config(tlink_comm **out, const tlink_config *cfg) {
    if (!out || !cfg) {
        tl_set_thread_error("tlink_comm_init: NULL argument");
        return TLINK_ERR_INVALID_ARG;
    }
    *out = NULL;
    int rank = cfg->rank, size = cfg->size;
    char addr[256] = "";
    if (cfg->store_addr) snprintf(addr, sizeof addr, "%s", cfg->store_addr);
    if (cfg->from_env) {
        tlink_env_info e;
        tlink_env_parse(&e);
        if (e.rank < 0 || e.size <= 0) {
            tl_set_thread_error("tlink_comm_init_env: no rank/size in the environment (set TLINK_RANK/TLINK_SIZE, "
                                "RANK/WORLD_SIZE, or run under tile launch, torchrun, mpirun or srun)");
            return TLINK_ERR_BOOTSTRAP;
        }
        rank = e.rank;
        size = e.size;
        if (!addr[0]) snprintf(addr, sizeof addr, "%s", e.store_addr);
    } else if (!addr[0]) {
        tlink_env_info e;
        tlink_env_parse(&e);
        snprintf(addr, sizeof addr, "%s", e.store_addr);
    }
    if (size <= 0 || rank < 0 || rank >= size) {
        tl_set_thread_error("tlink_comm_init: rank %d is not in [0, %d)", rank, size);
        return TLINK_ERR_INVALID_ARG;
    }
    char host[256];
    int port;
    if (tl_parse_hostport(addr, host, sizeof host, &port)) {
        tl_set_thread_error("tlink_comm_init: store address '%s' is not host:port", addr);
        return TLINK_ERR_INVALID_ARG;
    }
    char bind_ip[64] = "127.0.0.1";
    int loopback = host_is_loopback(host, bind_ip, sizeof bind_ip);
    if (!loopback && cfg->from_env && cfg->host_store != -1 && tl_local_store_addr(addr, sizeof addr, size)) {
        tl_log(TL_LOG_INFO, "all %d ranks are on this host: the store is used on %s", size, addr);
        snprintf(host, sizeof host, "127.0.0.1");
        snprintf(bind_ip, sizeof bind_ip, "127.0.0.1");
        loopback = 1;
    }
    tlink_comm *c = comm_alloc();
    if (!c) return TLINK_ERR_NO_MEMORY;
    c->rank = rank;
    c->size = size;
    if (cfg->timeout_s > 0) c->timeout = cfg->timeout_s;
    if (cfg->transport && !strcasecmp(cfg->transport, "tcp")) c->force_tcp = 1;
    snprintf(c->store_addr, sizeof c->store_addr, "%s", addr);
    parse_algo_env(c);
    tlink_status st = TLINK_OK;
    if (rank == 0 && cfg->host_store != -1) {
        st = tlink_store_server_start(loopback ? bind_ip : NULL, port, &c->server);
        if (st == TLINK_ERR_BOOTSTRAP && cfg->host_store == 0) {
            tl_log(TL_LOG_INFO, "port %d is taken: using the store already listening at %s", port, addr);
            st = TLINK_OK;
        } else if (st) {
            tl_err(c, st, "%s", tl_thread_error());
            comm_free(c);
            return st;
        }
    }
    st = tlink_store_connect(addr, c->timeout, &c->store);
    if (st) {
        tl_err(c, st, "bootstrap: %s", tl_thread_error());
        comm_free(c);
        return st;
    }
    const char *kp = cfg->key_prefix ? cfg->key_prefix : tb_knob_str(TB_K_TLINK_STORE_PREFIX);
    if (!kp) kp = "tlink";
    char key[200];
    snprintf(key, sizeof key, "%s/gen/%d", kp, rank);
    int64_t gen = 0;
    st = tlink_store_add(c->store, key, 1, &gen);
    if (st) {
        tl_err(c, TLINK_ERR_BOOTSTRAP, "bootstrap: %s", tlink_store_last_error(c->store));
        comm_free(c);
        return TLINK_ERR_BOOTSTRAP;
    }
    snprintf(c->prefix, sizeof c->prefix, "%s/%lld", kp, (long long)gen);
    snprintf(c->kp, sizeof c->kp, "%s", kp);
    c->comm_id = tl_random64();
    st = comm_bootstrap(c);
    if (st) {
        tl_set_thread_error("%s", c->errmsg);
        comm_free(c);
        return st;
    }
    *out = c;
    return TLINK_OK;
}

tlink_status tlink_comm_init(tlink_comm **out, int rank, int size, const char *store_addr) {
    tlink_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.rank = rank;
    cfg.size = size;
    cfg.store_addr = store_addr;
    return tlink_comm_init_config(out, &cfg);
}

tlink_status tlink_comm_init_env(tlink_comm **out) {
    tlink_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.from_env = 1;
    return tlink_comm_init_config(out, &cfg);
}

typedef struct { int64_t key; int rank; } split_ent;
static int split_cmp(const void *a, const void *b) {
    const split_ent *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->rank - y->rank;
}

tlink_status tlink_comm_split(tlink_comm *c, int color, int key, tlink_comm **out) {
    if (!c || !out) return TLINK_ERR_INVALID_ARG;
    *out = NULL;
    int n = c->size;
    int64_t mine[2] = {color < 0 ? -1 : color, key};
    int64_t *all = malloc(sizeof(int64_t) * 2 * (size_t)n);
    split_ent *ent = malloc(sizeof(split_ent) * (size_t)n);
    if (!all || !ent) { free(all); free(ent); return tl_err(c, TLINK_ERR_NO_MEMORY, "split: out of memory"); }
    tlink_status st = tlink_allgather(c, mine, all, 2, TLINK_I64);
    int seq = ++c->split_seq;
    if (st || color < 0) { free(all); free(ent); return st; }
    int m = 0, newrank = -1;
    for (int r = 0; r < n; r++)
        if (all[2 * r] == color) ent[m++] = (split_ent){all[2 * r + 1], r};
    qsort(ent, (size_t)m, sizeof *ent, split_cmp);
    for (int i = 0; i < m; i++)
        if (ent[i].rank == c->rank) newrank = i;
    free(all);
    free(ent);
    char prefix[160];
    snprintf(prefix, sizeof prefix, "%.120s/split%d/c%d", c->prefix, seq, color);
    c->cur_coll = "split";
    uint64_t id = tl_hash64(&c->comm_id, sizeof c->comm_id, 0);
    id = tl_hash64(&seq, sizeof seq, id);
    id = tl_hash64(&color, sizeof color, id);
    return tl_comm_derive(c, newrank, m, prefix, id, out);
}

tlink_status tl_comm_derive(tlink_comm *c, int newrank, int m, const char *prefix, uint64_t id, tlink_comm **out) {
    tlink_comm *s = comm_alloc();
    if (!s) return tl_err(c, TLINK_ERR_NO_MEMORY, "%s: out of memory", c->cur_coll ? c->cur_coll : "split");
    s->rank = newrank;
    s->size = m;
    s->timeout = c->timeout;
    s->force_tcp = c->force_tcp;
    memcpy(s->forced, c->forced, sizeof s->forced);
    snprintf(s->store_addr, sizeof s->store_addr, "%s", c->store_addr);
    snprintf(s->prefix, sizeof s->prefix, "%s", prefix);
    s->comm_id = id;
    tlink_status st = tlink_store_connect(s->store_addr, s->timeout, &s->store);
    if (!st) {
        if (c->server) { tl_store_server_ref(c->server); s->server = c->server; }
        st = comm_bootstrap(s);
    } else {
        tl_err(s, st, "%s", tl_thread_error());
    }
    if (st) {
        tl_err(c, st, "%s: %s", c->cur_coll ? c->cur_coll : "split", s->errmsg);
        comm_free(s);
        return st;
    }
    *out = s;
    return TLINK_OK;
}

tlink_status tlink_comm_destroy(tlink_comm *c) {
    if (!c) return TLINK_OK;
    tl_async_shutdown(c);
    tlink_status st = TLINK_OK;
    if (!c->broken && c->size > 1) {
        tl_args a = {.coll = TLINK_COLL_BARRIER, .call = "destroy"};
        pthread_mutex_lock(&c->exec_mu);
        c->cur_coll = "destroy";
        st = tl_coll_run(c, &a);
        /* Rank 0's store goes before anyone leaves: a rank that creates its next
         * communicator at once (same address) must find no store at the port, or the next
         * one, never this one, whose generation counters and keys belong to this job. So:
         * every rank stops using the store, then rank 0 stops it, then a barrier over the
         * transports lets the others go. */
        if (!st) {
            tl_status_halt(c);
            if (c->store) { tlink_store_close(c->store); c->store = NULL; }
            st = tl_coll_run(c, &a);
            if (!st && c->server) { tlink_store_server_stop(c->server); c->server = NULL; }
            if (!st) st = tl_coll_run(c, &a);
        }
        pthread_mutex_unlock(&c->exec_mu);
    }
    comm_free(c);
    return st;
}

tlink_status tlink_comm_abort(tlink_comm *c) {
    if (!c) return TLINK_ERR_INVALID_ARG;
    char msg[128];
    snprintf(msg, sizeof msg, "rank %d called tlink_comm_abort", c->rank);
    tl_comm_break(c, TLINK_ERR_ABORTED, c->rank, msg);
    tl_async_fail_all(c, TLINK_ERR_ABORTED);
    return TLINK_OK;
}

int tlink_comm_rank(const tlink_comm *c) { return c ? c->rank : -1; }
int tlink_comm_size(const tlink_comm *c) { return c ? c->size : -1; }
int tlink_comm_local_rank(const tlink_comm *c) { return c ? c->local_rank : -1; }
int tlink_comm_local_size(const tlink_comm *c) { return c ? c->local_size : -1; }
int tlink_comm_host_count(const tlink_comm *c) { return c ? c->nhosts : -1; }
int tlink_comm_host_index(const tlink_comm *c, int rank) {
    return (c && rank >= 0 && rank < c->size) ? c->host_of[rank] : -1;
}
const char *tlink_comm_transport(const tlink_comm *c, int peer) {
    if (!c || peer < 0 || peer >= c->size) return "?";
    switch (c->peers[peer].transport) {
    case TLINK_TRANSPORT_SELF: return "self";
    case TLINK_TRANSPORT_SHM: return "shm";
    default: return "tcp";
    }
}

int tlink_comm_single_copy(const tlink_comm *c, int peer) {
    if (!c || peer < 0 || peer >= c->size) return 0;
    return c->peers[peer].transport == TLINK_TRANSPORT_SHM && c->peers[peer].cma;
}

tlink_status tlink_comm_set_timeout(tlink_comm *c, double seconds) {
    if (!c || !(seconds > 0)) return TLINK_ERR_INVALID_ARG;
    c->timeout = seconds;
    return TLINK_OK;
}

tlink_status tlink_comm_set_algo(tlink_comm *c, tlink_coll coll, tlink_algo algo) {
    if (!c || (unsigned)coll >= TLINK_COLL_COUNT || (unsigned)algo >= TLINK_ALGO_COUNT) return TLINK_ERR_INVALID_ARG;
    c->forced[coll] = algo;
    return TLINK_OK;
}

const char *tlink_last_algo(const tlink_comm *c) { return c ? c->last_algo : ""; }
double tlink_last_predicted_us(const tlink_comm *c) { return c ? c->last_pred_us : 0; }
