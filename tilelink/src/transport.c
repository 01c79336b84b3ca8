/* transport.c — setting up the shared-memory segment and the TCP connections. */
#include "tl_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/stat.h>
#include <unistd.h>

#define SHM_MAGIC 0x544c4e4b53484d31ULL /* "TLNKSHM1" */
#define HELLO_MAGIC 0x544c4b48u

static size_t page_round(size_t v) { return (v + 4095) & ~(size_t)4095; }

/* The segment's pages are allocated by the first touch. Left to the collectives, the first
 * pass through a channel's ring (1 MiB at 2 ranks) or the direct slots pays a page fault per
 * 4 KiB inside a timed call: measured on 16 cores, the first 128 KiB ring all-reduce of a
 * 2-rank job at 3.6x Open MPI's time, the first Rabenseifner size of an 8-rank job at 2x
 * (bench/results/link-allreduce-2026-11-30-s5-16core.md). Each rank populates what it writes
 * first: its direct slots and, up to 8 local ranks (at most 8 x 8 channels of 256 KiB), its
 * outgoing channels. MADV_POPULATE_WRITE (Linux 5.14) keeps the contents, so a peer already
 * sending is not disturbed; where the kernel lacks it nothing happens. TLINK_SHM_PREFAULT=0
 * turns it off. */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
static void shm_prefault(tlink_comm *c, int nl, int me, size_t cap, size_t dseg) {
    if (!tb_knob_bool(TB_K_TLINK_SHM_PREFAULT)) return;
    /* SLOT(me) of both parities; the big direct slots IN(me) and OUT(me), both parities */
    madvise(c->dslots + (size_t)me * 2 * TL_DIRECT_SLOT, 2 * TL_DIRECT_SLOT, MADV_POPULATE_WRITE);
    madvise(c->dbig + (size_t)me * 2 * dseg, 2 * dseg, MADV_POPULATE_WRITE);
    madvise(c->dbig + (size_t)(nl + me) * 2 * dseg, 2 * dseg, MADV_POPULATE_WRITE);
    if (nl > 8) return;
    for (int r = 0; r < c->size; r++)
        if (c->peers[r].transport == TLINK_TRANSPORT_SHM && c->peers[r].out_data)
            madvise(c->peers[r].out_data, cap, MADV_POPULATE_WRITE);
}

/* Single copy between the ranks of a host (p2p.c): a large message's receiver reads the
 * sender's buffer with process_vm_readv instead of both copying it through a channel (Open MPI's
 * CMA path). It needs the kernel to let us read a peer's memory: the same user, a pid we can
 * see, and ptrace permission, which Yama (ptrace_scope 1) grants a non-descendant only after
 * the target's PR_SET_PTRACER (each rank allows any process of its user to attach: what a
 * debugger needs), and which a container's seccomp profile may deny. So each rank publishes the
 * address of a probe word, reads every local peer's, and publishes whom it could read.
 *
 * It pays only where the kernel's copy keeps up: a reduction received by single copy still
 * makes one copy and one pass (through the bounce buffer) where the channel made one copy on
 * each side; a plain receive replaces two copies by one. On the GPU machine's 16-core Xeon the
 * 2- and 4-rank all-reduce at 4-16 MiB went 1.3-1.6x faster with it; on the 2-core Zen 4 VM
 * (Firecracker) process_vm_readv moved 6-9 GB/s against memcpy's 18-48 and the 2-rank
 * reduce-scatter of 8 MiB went 1.5x slower (1150 against 750 us). So each process times reading
 * CMA_TIME_BYTES of a peer's mapping of the segment against copying it itself (best of 3, once:
 * later communicators reuse the figure), and a pair uses single copy when both directions work
 * and both ranks measured at least CMA_MIN_SPEED percent (4 MiB: the Xeon 63-73% with 2 and 4
 * ranks, 44-64% with 8 timing at once; the VM 22-26%; 1 MiB, in cache, had read 36-61% and
 * 16-40%, too close together). 40% is between the two machines' figures, not itself measured as
 * a break-even point. TLINK_SHM_CMA=0 turns it off (then the rank reads no one and asks no
 * permission), =1 skips the timing. Called after every local rank attached. */
#define CMA_PROBE_MAGIC 0x544c4b434d413031ULL /* "TLKCMA01" */
#define CMA_MIN_SPEED 40
#define CMA_TIME_BYTES ((size_t)4 << 20)
#define CMA_TIME_PIECE ((size_t)256 << 10)
/* process_vm_readv of `bytes` at the peer's `remote` into dst (in CMA_TIME_PIECE pieces, as the
 * receive path reads), against memcpy of our own mapping of the same bytes: percent, 0 on error */
static uint32_t cma_speed(pid_t pid, uint64_t remote, const char *local, size_t bytes, char *dst) {
    double best_rv = 1e9, best_mc = 1e9;
    for (int rep = 0; rep < 3; rep++) {
        double t0 = tl_now();
        for (size_t o = 0; o < bytes; o += CMA_TIME_PIECE) {
            const size_t n = TL_MIN(CMA_TIME_PIECE, bytes - o);
            struct iovec lo = {dst + o, n}, re = {(void *)(uintptr_t)(remote + o), n};
            if (process_vm_readv(pid, &lo, 1, &re, 1, 0) != (ssize_t)n) return 0;
        }
        double t1 = tl_now();
        memcpy(dst, local, bytes);
        __asm__ __volatile__("" : : "r"(dst) : "memory"); /* the copy is not dead */
        double t2 = tl_now();
        if (t1 - t0 < best_rv) best_rv = t1 - t0;
        if (t2 - t1 < best_mc) best_mc = t2 - t1;
    }
    double pct = 100.0 * best_mc / (best_rv > 0 ? best_rv : 1e-9);
    return pct > 1000 ? 1000 : (uint32_t)pct;
}

static tlink_status shm_cma_setup(tlink_comm *c, int nl, int me, double deadline) {
    const long mode = (long)tb_knob_int(TB_K_TLINK_SHM_CMA); /* 0 off, 1 on, 2 on where fast enough */
    const int on = mode != 0 && nl <= 63;
    if (on) {
#ifdef PR_SET_PTRACER
        prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0); /* EINVAL without Yama: nothing to grant */
#endif
        c->cma_probe = CMA_PROBE_MAGIC ^ (uint64_t)c->rank;
        atomic_store_explicit(&c->dseq[me].cma_base, (uint64_t)(uintptr_t)c->shm_base, memory_order_relaxed);
        atomic_store_explicit(&c->dseq[me].cma_addr, (uint64_t)(uintptr_t)&c->cma_probe, memory_order_release);
    }
    uint64_t mask = 0;
    int timed = -1; /* the peer the timing read */
    for (int r = 0; r < c->size && on; r++) {
        tl_peer *p = &c->peers[r];
        if (p->transport != TLINK_TRANSPORT_SHM || !p->same_pidns || p->pid <= 0) continue;
        uint64_t addr;
        while ((addr = atomic_load_explicit(&c->dseq[p->local_idx].cma_addr, memory_order_acquire)) == 0) {
            if (atomic_load_explicit(&c->dseq[p->local_idx].cma_mask, memory_order_acquire)) break; /* peer has it off */
            if (tl_now() > deadline)
                return tl_err(c, TLINK_ERR_TIMEOUT, "bootstrap: local rank %d never published its single-copy probe", r);
            usleep(50);
        }
        if (!addr) continue;
        uint64_t v = 0;
        struct iovec lo = {&v, sizeof v}, re = {(void *)(uintptr_t)addr, sizeof v};
        if (process_vm_readv(p->pid, &lo, 1, &re, 1, 0) == (ssize_t)sizeof v && v == (CMA_PROBE_MAGIC ^ (uint64_t)r)) {
            mask |= 1ull << p->local_idx;
            if (timed < 0) timed = r;
        }
    }
    /* this process's figure, once timed (0: not yet; else percent + 1) */
    static _Atomic uint32_t timed_speed;
    uint32_t speed = mode == 1 ? 1000 : 0;
    const uint32_t cached = atomic_load_explicit(&timed_speed, memory_order_relaxed);
    if (mask && mode == 2 && cached) {
        speed = cached - 1;
    } else if (mask && mode == 2) {
        /* the start of the segment (CMA_TIME_BYTES, or all of it), as the timed peer maps it */
        tl_peer *p = &c->peers[timed];
        const size_t bytes = TL_MIN(CMA_TIME_BYTES, c->shm_size) & ~(CMA_TIME_PIECE - 1);
        const uint64_t base = atomic_load_explicit(&c->dseq[p->local_idx].cma_base, memory_order_relaxed);
        char *dst = bytes ? malloc(bytes) : NULL;
        if (dst) {
            memset(dst, 0, bytes);
            speed = cma_speed(p->pid, base, (const char *)c->shm_base, bytes, dst);
            free(dst);
            if (speed) atomic_store_explicit(&timed_speed, speed + 1, memory_order_relaxed);
        }
    }
    atomic_store_explicit(&c->dseq[me].cma_speed, speed, memory_order_relaxed);
    atomic_store_explicit(&c->dseq[me].cma_mask, mask | 1ull << 63, memory_order_release);
    uint32_t slowest = speed;
    for (int r = 0; r < c->size; r++) {
        tl_peer *p = &c->peers[r];
        p->cma = 0;
        p->cma_sseq = 0;
        if (p->transport != TLINK_TRANSPORT_SHM) continue;
        uint64_t theirs;
        while (!((theirs = atomic_load_explicit(&c->dseq[p->local_idx].cma_mask, memory_order_acquire)) >> 63)) {
            if (tl_now() > deadline)
                return tl_err(c, TLINK_ERR_TIMEOUT, "bootstrap: local rank %d never finished its single-copy probe", r);
            usleep(50);
        }
        const uint32_t ts = atomic_load_explicit(&c->dseq[p->local_idx].cma_speed, memory_order_relaxed);
        p->cma = (mask >> p->local_idx & 1) && (theirs >> me & 1) && speed >= CMA_MIN_SPEED && ts >= CMA_MIN_SPEED;
        if ((theirs >> me & 1) && ts < slowest) slowest = ts;
    }
    int pairs = 0;
    const int readable = __builtin_popcountll(mask);
    for (int r = 0; r < c->size; r++) pairs += c->peers[r].cma;
#ifdef PR_SET_PTRACER
    /* no peer reads this rank (the decision is symmetric): take the permission back. (It
     * replaced whatever ptracer the application had set; prctl cannot read that back.) */
    if (on && !pairs) prctl(PR_SET_PTRACER, 0, 0, 0, 0);
#endif
    if (!on)
        tl_log(TL_LOG_INFO, "rank %d: shared-memory single copy (process_vm_readv) off (TLINK_SHM_CMA=0)", c->rank);
    else if (mode == 1)
        tl_log(TL_LOG_INFO, "rank %d: shared-memory single copy (process_vm_readv) with %d of %d local peers "
               "(TLINK_SHM_CMA=1: not timed)", c->rank, pairs, nl - 1);
    else
        tl_log(TL_LOG_INFO,
               "rank %d: shared-memory single copy (process_vm_readv) with %d of %d local peers (%d readable; "
               "its copy at %u%% of memcpy's rate here, %u%% at the slowest readable peer, %d%% needed)",
               c->rank, pairs, nl - 1, readable, speed, slowest, CMA_MIN_SPEED);
    return TLINK_OK;
}

tlink_status tl_shm_setup(tlink_comm *c) {
    int nl = c->local_size;
    if (nl <= 1 || c->force_tcp) return TLINK_OK;
    uint64_t cap = (uint64_t)tb_knob_int_or(TB_K_TLINK_SHM_CHANNEL_BYTES, nl <= 2 ? (1 << 20) : nl <= 4 ? (512 << 10) : (256 << 10));
    if (cap < 4096) cap = 4096;
    cap = (cap + 4095) & ~(uint64_t)4095;
    size_t hdr = page_round(sizeof(tl_shm_hdr));
    size_t bells = page_round(sizeof(tl_doorbell) * (size_t)nl);
    size_t chans = page_round(sizeof(tl_chan) * (size_t)nl * (size_t)nl);
    size_t dseq = page_round(sizeof(tl_direct_seq) * (size_t)nl);
    size_t dslots = (size_t)TL_DIRECT_SLOT * 2 * (size_t)nl;
    size_t dseg = (size_t)tb_knob_int_or(TB_K_TLINK_SHM_DIRECT_SEGMENT, nl <= 4 ? (1 << 20) : (512 << 10));
    if (dseg < 4096) dseg = 4096;
    dseg = (dseg + 4095) & ~(size_t)4095;
    size_t dbig = dseg * 2 * 2 * (size_t)nl;
    size_t total = hdr + bells + chans + dseq + dslots + dbig + (size_t)cap * (size_t)nl * (size_t)nl;
    char name[96], key[256];
    snprintf(key, sizeof key, "%s/shm/%d", c->prefix, c->host_idx);
    int fd = -1;
    int creator = c->local_rank == 0;
    double deadline = tl_now() + c->timeout;
    if (creator) {
        snprintf(name, sizeof name, "/tlink-%d-%016llx", (int)getpid(), (unsigned long long)tl_random64());
        fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
        if (fd < 0) return tl_err(c, TLINK_ERR_SYSTEM, "shm_open(%s): %s", name, strerror(errno));
        if (ftruncate(fd, (off_t)total) != 0) {
            int e = errno;
            close(fd);
            shm_unlink(name);
            return tl_err(c, TLINK_ERR_SYSTEM, "cannot size shared memory %s to %zu bytes: %s (is /dev/shm large enough?)",
                          name, total, strerror(e));
        }
    } else {
        void *v = NULL;
        size_t len = 0;
        tlink_status st = tlink_store_get(c->store, key, &v, &len, deadline - tl_now());
        if (st) {
            return tl_err(c, st == TLINK_ERR_TIMEOUT ? TLINK_ERR_TIMEOUT : TLINK_ERR_BOOTSTRAP,
                          "bootstrap: no shared-memory segment name from local leader rank %d: %s",
                          c->local_ranks[0], tlink_store_last_error(c->store));
        }
        snprintf(name, sizeof name, "%s", (char *)v);
        free(v);
        fd = shm_open(name, O_RDWR | O_CLOEXEC, 0600);
        if (fd < 0) return tl_err(c, TLINK_ERR_SYSTEM, "shm_open(%s): %s", name, strerror(errno));
        struct stat sb;
        if (fstat(fd, &sb) != 0 || (size_t)sb.st_size != total) {
            close(fd);
            shm_unlink(name);
            return tl_err(c, TLINK_ERR_BOOTSTRAP,
                          "shared memory segment %s has %lld bytes, this rank expects %zu: set "
                          "TLINK_SHM_CHANNEL_BYTES and TLINK_SHM_DIRECT_SEGMENT identically on all ranks",
                          name, (long long)sb.st_size, total);
        }
    }
    void *base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (base == MAP_FAILED) {
        int e = errno;
        shm_unlink(name);
        return tl_err(c, TLINK_ERR_SYSTEM, "mmap of %zu bytes of shared memory failed: %s", total, strerror(e));
    }
    c->shm_base = base;
    c->shm_size = total;
    c->shm = base;
    c->shm_cap = cap;
    if (creator) {
        c->shm->nlocal = (uint32_t)nl;
        c->shm->cap = cap;
        atomic_thread_fence(memory_order_release);
        c->shm->magic = SHM_MAGIC;
        tlink_status st = tlink_store_set(c->store, key, name, strlen(name) + 1);
        if (st) {
            shm_unlink(name);
            return tl_err(c, st, "bootstrap: store: %s", tlink_store_last_error(c->store));
        }
    } else if (c->shm->magic != SHM_MAGIC || c->shm->nlocal != (uint32_t)nl || c->shm->cap != cap) {
        shm_unlink(name);
        return tl_err(c, TLINK_ERR_BOOTSTRAP,
                      "shared memory segment %s does not match (local ranks %u vs %d, channel %llu vs %llu bytes): "
                      "set TLINK_SHM_CHANNEL_BYTES identically on all ranks",
                      name, c->shm->nlocal, nl, (unsigned long long)c->shm->cap, (unsigned long long)cap);
    }
    /* the last rank to attach removes the name: nothing is left in /dev/shm even after kill -9 */
    if ((int)atomic_fetch_add(&c->shm->attached, 1) + 1 == nl) shm_unlink(name);
    tl_doorbell *bell = (tl_doorbell *)((char *)base + hdr);
    tl_chan *ch = (tl_chan *)((char *)base + hdr + bells);
    c->dseq = (tl_direct_seq *)((char *)base + hdr + bells + chans);
    c->dslots = (char *)base + hdr + bells + chans + dseq;
    c->dbig = c->dslots + dslots;
    c->dseg = dseg;
    c->direct_op = 0;
    char *data = (char *)base + hdr + bells + chans + dseq + dslots + dbig;
    int me = c->local_rank;
    c->my_bell = &bell[me];
    for (int r = 0; r < c->size; r++) {
        tl_peer *p = &c->peers[r];
        if (p->transport != TLINK_TRANSPORT_SHM) continue;
        int j = p->local_idx;
        p->out = &ch[me * nl + j];
        p->in = &ch[j * nl + me];
        p->out_data = data + (size_t)(me * nl + j) * cap;
        p->in_data = data + (size_t)(j * nl + me) * cap;
        p->peer_bell = &bell[j];
        p->stail = p->rhead = 0;
    }
    shm_prefault(c, nl, me, cap, dseg);
    /* wait until everyone attached, so the name is gone before we return */
    while ((int)atomic_load(&c->shm->attached) < nl) {
        if (tl_now() > deadline) {
            shm_unlink(name);
            return tl_err(c, TLINK_ERR_TIMEOUT, "bootstrap: only %u of %d local ranks attached shared memory",
                          atomic_load(&c->shm->attached), nl);
        }
        usleep(200);
    }
    return shm_cma_setup(c, nl, me, deadline);
}

void tl_shm_teardown(tlink_comm *c) {
    if (c->shm_base) munmap(c->shm_base, c->shm_size);
    c->shm_base = NULL;
    c->shm = NULL;
    c->my_bell = NULL;
    c->dseq = NULL;
    c->dslots = NULL;
    c->dbig = NULL;
}

/* ---------- TCP ---------- */
static int ifname_addr(const char *ifname, char *out, size_t outlen) {
    struct ifaddrs *ifa = NULL;
    if (getifaddrs(&ifa) != 0) return -1;
    int found = -1;
    /* TLINK_SOCKET_IFNAME may be a comma list and prefixes ("eth" matches eth0); "^lo" excludes */
    for (struct ifaddrs *i = ifa; i && found; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP)) continue;
        char list[256];
        snprintf(list, sizeof list, "%s", ifname);
        int exclude = list[0] == '^';
        int match = 0;
        for (char *save = NULL, *tok = strtok_r(list + exclude, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
            if (!strncmp(i->ifa_name, tok, strlen(tok))) match = 1;
        if (exclude) match = !match && !(i->ifa_flags & IFF_LOOPBACK);
        if (!match) continue;
        inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, out, (socklen_t)outlen);
        found = 0;
    }
    freeifaddrs(ifa);
    return found;
}

tlink_status tl_tcp_listen(tlink_comm *c, char *addr_out, size_t addrlen) {
    char ip[64] = "";
    const char *ifn = tb_knob_str(TB_K_TLINK_SOCKET_IFNAME);
    if (ifn) {
        if (ifname_addr(ifn, ip, sizeof ip))
            return tl_err(c, TLINK_ERR_BOOTSTRAP, "TLINK_SOCKET_IFNAME=%s: no IPv4 interface matches", ifn);
    } else {
        struct sockaddr_in sa;
        socklen_t sl = sizeof sa;
        if (getsockname(tl_store_fd(c->store), (struct sockaddr *)&sa, &sl) == 0 && sa.sin_family == AF_INET)
            inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof ip);
        if (!ip[0] || !strcmp(ip, "0.0.0.0")) strcpy(ip, "127.0.0.1");
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_port = 0;
    if (ifn) inet_pton(AF_INET, ip, &sa.sin_addr);
    else sa.sin_addr.s_addr = htonl(INADDR_ANY);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 1024) != 0) {
        int e = errno;
        if (fd >= 0) close(fd);
        return tl_err(c, TLINK_ERR_SYSTEM, "cannot open a TCP listener on %s: %s", ip, strerror(e));
    }
    socklen_t sl = sizeof sa;
    getsockname(fd, (struct sockaddr *)&sa, &sl);
    c->listen_fd = fd;
    snprintf(addr_out, addrlen, "%s:%d", ip, ntohs(sa.sin_port));
    return TLINK_OK;
}

/* TCP congestion control of a connection to rank `peer` (TLINK_SOCKET_CC): a name sets it on
 * every connection, "default" keeps the system's; unset, connections between processes of one
 * machine (network namespaces, containers: veth or loopback) use reno and the rest keep the
 * system's default. Why: on one machine there is no shared wire to be fair on, and the
 * delay-based controllers misread scheduling jitter as congestion. BBR paces to the delivery
 * rate it measured, which on a loaded machine is the rate at which the peer got the CPU, and
 * its pacing timer sends from another CPU than the process, so veth reorders the flow; CUBIC's
 * HyStart leaves slow start at the first RTT jump. Measured on 2 cores at load 3-6 (docs/tilelink.md):
 * the two-rank 4 MiB all-reduce across two namespaces took 10.8-11.2 ms with BBR (the
 * system default there), 6.9-9.7 ms with CUBIC, 5.1-5.3 ms with reno. */
static void tune_socket(tlink_comm *c, int fd, int peer) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    const char *cc = tb_knob_str(TB_K_TLINK_SOCKET_CC);
    if (!cc) cc = c->peers[peer].same_machine ? "reno" : NULL;
    else if (!strcmp(cc, "default")) cc = NULL;
    static _Atomic int said;
    if (cc && setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, (socklen_t)strlen(cc)) != 0) {
        if (!atomic_exchange(&said, 1))
            tl_log(TL_LOG_WARN, "TLINK_SOCKET_CC: cannot use TCP congestion control '%s' (%s); keeping the system's "
                   "(see /proc/sys/net/ipv4/tcp_allowed_congestion_control)", cc, strerror(errno));
    } else if (cc && !atomic_exchange(&said, 1)) {
        tl_log(TL_LOG_INFO, "tcp: congestion control %s to rank %d%s", cc, peer,
               tb_knob_is_set(TB_K_TLINK_SOCKET_CC) ? " (TLINK_SOCKET_CC)" : " (same machine)");
    }
    long buf = (long)tb_knob_int(TB_K_TLINK_SOCKET_BUF);
    if (buf > 0) {
        int b = (int)buf;
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &b, sizeof b);
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &b, sizeof b);
    }
}

/* ---------- the connection handshake ----------
 * The lower rank of a pair connects (nstreams connections), the higher one accepts. Without a
 * secret the connector sends a plain hello (magic, rank, stream, communicator id). With one
 * (TLINK_SECRET, auth.c) it sends an authenticated hello carrying the same fields as context,
 * the acceptor answers with its challenge, the connector with its response, and only then does
 * the acceptor take the connection as the claimed rank's stream; anything else is refused with
 * a log line naming the address. Every step reads exactly the bytes it needs, so data the
 * connector sends right after its response stays in the socket for the engine. */
typedef struct plain_hello { uint32_t magic; int32_t rank; int32_t stream; int32_t pad; uint64_t comm_id; } plain_hello;
typedef struct hs_ctx { int32_t rank; int32_t stream; uint64_t comm_id; } hs_ctx;

void tl_hs_accept_init(tl_hs_accept *h, const tl_hmac_key *key, uint64_t comm_id, int max_rank, int nstreams) {
    memset(h, 0, sizeof *h);
    h->key = key;
    h->comm_id = comm_id;
    h->max_rank = max_rank;
    h->nstreams = nstreams;
    h->state = TL_HS_HDR;
    h->rank = h->stream = -1;
}

size_t tl_hs_accept_need(const tl_hs_accept *h) {
    switch (h->state) {
    case TL_HS_HDR: return 8 - h->len;
    case TL_HS_PLAIN: return sizeof(plain_hello) - h->len;
    case TL_HS_HELLO: return h->hlen - h->len;
    case TL_HS_RESPONSE: return TL_AUTH_RESPONSE - h->len;
    default: return 0;
    }
}

static int hs_claim(tl_hs_accept *h, int32_t rank, int32_t stream, uint64_t comm_id) {
    if (comm_id != h->comm_id) { h->why = "it belongs to another communicator"; return TL_HS_REFUSED; }
    if (rank < 0 || rank >= h->max_rank || stream < 0 || stream >= h->nstreams) {
        h->why = "it claims a rank or stream that does not connect to this rank";
        return TL_HS_REFUSED;
    }
    h->rank = rank;
    h->stream = stream;
    return 0;
}

/* Feeds n <= tl_hs_accept_need() bytes. Returns TL_HS_MORE (read more), TL_HS_SEND (send
 * out[0..*outlen) to the connector, then read more), TL_HS_DONE (h->rank, h->stream are the
 * connection's) or TL_HS_REFUSED (h->why says why). */
int tl_hs_accept_feed(tl_hs_accept *h, const unsigned char *in, size_t n, unsigned char *out, size_t *outlen) {
    *outlen = 0;
    if (h->state == TL_HS_DONE_ || h->state == TL_HS_REFUSED_) return h->state == TL_HS_DONE_ ? TL_HS_DONE : TL_HS_REFUSED;
    size_t need = tl_hs_accept_need(h);
    if (n > need) n = need;
    memcpy(h->buf + h->len, in, n);
    h->len += n;
    if (h->len < (h->state == TL_HS_HDR ? 8 : h->state == TL_HS_PLAIN ? sizeof(plain_hello)
                  : h->state == TL_HS_HELLO ? h->hlen : (size_t)TL_AUTH_RESPONSE))
        return TL_HS_MORE;
    int rc = TL_HS_MORE;
    switch (h->state) {
    case TL_HS_HDR: {
        uint32_t magic;
        memcpy(&magic, h->buf, 4);
        if (magic == HELLO_MAGIC) {
            h->state = TL_HS_PLAIN;
            return TL_HS_MORE;
        }
        size_t hs = tl_auth_hello_size(h->buf, TL_AUTH_KIND_TRANSPORT);
        if (!hs || h->buf[5] != sizeof(hs_ctx)) { h->why = "not a TileLink connection"; rc = TL_HS_REFUSED; break; }
        h->hlen = hs;
        h->state = TL_HS_HELLO;
        return TL_HS_MORE;
    }
    case TL_HS_PLAIN: {
        if (h->key) {
            h->why = "it did not authenticate (a rank without this job's TLINK_SECRET, or not a TileLink rank)";
            rc = TL_HS_REFUSED;
            break;
        }
        plain_hello ph;
        memcpy(&ph, h->buf, sizeof ph);
        rc = hs_claim(h, ph.rank, ph.stream, ph.comm_id);
        if (!rc) rc = TL_HS_DONE;
        break;
    }
    case TL_HS_HELLO: {
        if (!h->key) {
            h->why = "it authenticates with a secret and this rank has none (set TLINK_SECRET on every rank)";
            rc = TL_HS_REFUSED;
            break;
        }
        /* the claim is judged once it is authenticated */
        memcpy(h->hello, h->buf, h->hlen);
        tl_auth_challenge(h->key, h->hello, h->hlen, h->chal);
        memcpy(out, h->chal, TL_AUTH_CHALLENGE);
        *outlen = TL_AUTH_CHALLENGE;
        h->state = TL_HS_RESPONSE;
        h->len = 0;
        return TL_HS_SEND;
    }
    case TL_HS_RESPONSE:
        if (tl_auth_check(h->key, h->hello, h->hlen, h->chal, h->buf)) {
            h->why = "wrong authentication response (it does not know this job's TLINK_SECRET)";
            rc = TL_HS_REFUSED;
        } else {
            hs_ctx x;
            memcpy(&x, h->hello + 8, sizeof x);
            rc = hs_claim(h, x.rank, x.stream, x.comm_id);
            if (!rc) rc = TL_HS_DONE;
        }
        break;
    }
    h->state = rc == TL_HS_DONE ? TL_HS_DONE_ : TL_HS_REFUSED_;
    return rc;
}

typedef struct hs_conn {
    int fd;
    int out;                    /* 1: we connected (to rank peer, stream) */
    int peer, stream;
    double since;
    size_t hlen, got;           /* connector: our hello; bytes of the challenge read */
    unsigned char hello[TL_AUTH_HELLO_MAX];
    unsigned char chal[TL_AUTH_CHALLENGE];
    tl_hs_accept acc;           /* acceptor */
    char name[64];
} hs_conn;

/* a refused incoming connection: one log line naming its address (the first 20 per
 * communicator, so that a port scan cannot flood the log) */
static void hs_refuse(tlink_comm *c, hs_conn *k, const char *why, int *nref) {
    if (++*nref <= 20)
        tl_log(strstr(why, "another communicator") ? TL_LOG_INFO : TL_LOG_WARN,
               "rank %d: refused a TCP connection from %s: %s", c->rank, k->name, why);
    close(k->fd);
    k->fd = -1;
}

tlink_status tl_tcp_connect_all(tlink_comm *c, char **peer_addrs) {
    double deadline = tl_now() + c->timeout;
    int expected = 0, waiting_out = 0, nref = 0;
    const tl_hmac_key *key = c->auth ? &c->auth_key : NULL;
    c->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (c->epfd < 0) return tl_err(c, TLINK_ERR_SYSTEM, "epoll_create1: %s", strerror(errno));
    int ncap = 16, nk = 0;
    hs_conn *k = calloc((size_t)ncap, sizeof *k);
    if (!k) return tl_err(c, TLINK_ERR_NO_MEMORY, "bootstrap: out of memory");
    tlink_status st = TLINK_OK;
    struct pollfd *pf = NULL;
    int *pmap = NULL;
#define ADD_CONN()                                                                           \
    do {                                                                                     \
        if (nk == ncap) {                                                                    \
            hs_conn *nkp = realloc(k, sizeof *k * (size_t)(ncap * 2));                       \
            if (!nkp) { st = tl_err(c, TLINK_ERR_NO_MEMORY, "bootstrap: out of memory"); goto out; } \
            k = nkp;                                                                         \
            ncap *= 2;                                                                       \
        }                                                                                    \
        memset(&k[nk], 0, sizeof k[nk]);                                                     \
    } while (0)
    for (int r = 0; r < c->size; r++) {
        tl_peer *p = &c->peers[r];
        if (p->transport != TLINK_TRANSPORT_TCP) continue;
        p->nfds = c->nstreams;
        for (int s = 0; s < TL_MAX_STREAMS; s++) p->fds[s] = -1;
        if (r < c->rank) { expected += c->nstreams; continue; }
        char host[256];
        int port;
        if (tl_parse_hostport(peer_addrs[r], host, sizeof host, &port)) {
            st = tl_err(c, TLINK_ERR_BOOTSTRAP, "bootstrap: rank %d published a bad address '%s'", r, peer_addrs[r]);
            goto out;
        }
        for (int s = 0; s < c->nstreams; s++) {
            char err[300];
            int fd = tl_tcp_connect(host, port, deadline, err, sizeof err);
            if (fd < 0) { st = tl_err(c, TLINK_ERR_BOOTSTRAP, "bootstrap: connecting to rank %d: %s", r, err); goto out; }
            tune_socket(c, fd, r);
            ADD_CONN();
            hs_conn *h = &k[nk++];
            h->fd = fd;
            h->out = 1;
            h->peer = r;
            h->stream = s;
            snprintf(h->name, sizeof h->name, "%s", peer_addrs[r]);
            if (key) {
                hs_ctx x = {c->rank, s, c->comm_id};
                h->hlen = tl_auth_hello(h->hello, TL_AUTH_KIND_TRANSPORT, &x, sizeof x);
                waiting_out++;
            } else {
                plain_hello ph = {HELLO_MAGIC, c->rank, s, 0, c->comm_id};
                memcpy(h->hello, &ph, sizeof ph);
                h->hlen = sizeof ph;
            }
            if (send(fd, h->hello, h->hlen, MSG_NOSIGNAL) != (ssize_t)h->hlen) {
                st = tl_err(c, TLINK_ERR_BOOTSTRAP, "bootstrap: handshake with rank %d failed", r);
                goto out;
            }
            if (!key) { /* no answer to wait for: the stream is ready */
                p->fds[s] = fd;
                h->fd = -1;
            }
        }
    }
    while (expected > 0 || waiting_out > 0) {
        double now = tl_now();
        if (now > deadline) {
            char who[200] = "";
            int off = 0;
            for (int r = 0; r < c->size && off < 180; r++)
                if (c->peers[r].transport == TLINK_TRANSPORT_TCP && r != c->rank) {
                    int missing = 0;
                    for (int s = 0; s < c->nstreams; s++) missing |= c->peers[r].fds[s] < 0;
                    if (missing) off += snprintf(who + off, sizeof who - (size_t)off, " %d", r);
                }
            st = tl_err(c, TLINK_ERR_TIMEOUT, "bootstrap: timed out setting up TCP connections with ranks%s", who);
            break;
        }
        free(pf);
        free(pmap);
        pf = calloc((size_t)nk + 1, sizeof *pf);
        pmap = calloc((size_t)nk + 1, sizeof *pmap);
        if (!pf || !pmap) { st = tl_err(c, TLINK_ERR_NO_MEMORY, "bootstrap: out of memory"); break; }
        int np = 0;
        pf[np] = (struct pollfd){c->listen_fd, POLLIN, 0};
        pmap[np++] = -1;
        for (int i = 0; i < nk; i++) {
            if (k[i].fd < 0) continue;
            if (!k[i].out && now - k[i].since > 10.0) {
                hs_refuse(c, &k[i], "it did not complete the handshake in 10 s", &nref);
                continue;
            }
            pf[np] = (struct pollfd){k[i].fd, POLLIN, 0};
            pmap[np++] = i;
        }
        if (poll(pf, (nfds_t)np, (int)(TL_MIN(deadline - now, 1.0) * 1000) + 1) <= 0) continue;
        for (int j = 1; j < np; j++) {
            if (!pf[j].revents) continue;
            hs_conn *h = &k[pmap[j]];
            if (h->out) {
                ssize_t r = recv(h->fd, h->chal + h->got, sizeof h->chal - h->got, MSG_DONTWAIT);
                if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
                    st = tl_err(c, TLINK_ERR_BOOTSTRAP,
                                "bootstrap: rank %d (%s) closed the connection during authentication: it has no "
                                "TLINK_SECRET or another one",
                                h->peer, h->name);
                    goto out_loop;
                }
                if (r < 0) continue;
                h->got += (size_t)r;
                if (h->got < sizeof h->chal) continue;
                unsigned char resp[TL_AUTH_RESPONSE];
                int ok = tl_auth_respond(key, h->hello, h->hlen, h->chal, resp) == 0;
                if (send(h->fd, resp, sizeof resp, MSG_NOSIGNAL) != (ssize_t)sizeof resp) ok = 0;
                if (!ok) {
                    st = tl_err(c, TLINK_ERR_BOOTSTRAP,
                                "bootstrap: the process at %s (rank %d's address) does not prove that it knows this "
                                "job's secret: a different TLINK_SECRET there, or another program on that port",
                                h->name, h->peer);
                    goto out_loop;
                }
                c->peers[h->peer].fds[h->stream] = h->fd;
                h->fd = -1;
                waiting_out--;
                continue;
            }
            unsigned char buf[TL_AUTH_HELLO_MAX], outb[TL_AUTH_CHALLENGE];
            size_t need = tl_hs_accept_need(&h->acc), olen = 0;
            ssize_t r = recv(h->fd, buf, need, MSG_DONTWAIT);
            if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
                hs_refuse(c, h, "it closed the connection during the handshake", &nref);
                continue;
            }
            if (r < 0) continue;
            int rc = tl_hs_accept_feed(&h->acc, buf, (size_t)r, outb, &olen);
            if (rc == TL_HS_SEND && send(h->fd, outb, olen, MSG_NOSIGNAL) != (ssize_t)olen) rc = TL_HS_REFUSED;
            if (rc == TL_HS_DONE && c->peers[h->acc.rank].fds[h->acc.stream] >= 0) {
                h->acc.why = "its rank and stream are connected already";
                rc = TL_HS_REFUSED;
            }
            if (rc == TL_HS_REFUSED) {
                hs_refuse(c, h, h->acc.why ? h->acc.why : "handshake failed", &nref);
            } else if (rc == TL_HS_DONE) {
                tune_socket(c, h->fd, h->acc.rank);
                c->peers[h->acc.rank].fds[h->acc.stream] = h->fd;
                h->fd = -1;
                expected--;
            }
        }
        if (pf[0].revents & POLLIN) {
            int fd = accept4(c->listen_fd, NULL, NULL, SOCK_CLOEXEC);
            if (fd >= 0) {
                ADD_CONN();
                hs_conn *h = &k[nk++];
                h->fd = fd;
                h->since = tl_now();
                tl_peer_name(fd, h->name, sizeof h->name);
                tl_hs_accept_init(&h->acc, key, c->comm_id, c->rank, c->nstreams);
            }
        }
    }
out_loop:
out:
    free(pf);
    free(pmap);
    for (int i = 0; i < nk; i++)
        if (k[i].fd >= 0) close(k[i].fd);
    free(k);
#undef ADD_CONN
    if (st) return st;
    for (int r = 0; r < c->size; r++) {
        tl_peer *p = &c->peers[r];
        if (p->transport != TLINK_TRANSPORT_TCP) continue;
        for (int s = 0; s < p->nfds; s++) {
            int fl = fcntl(p->fds[s], F_GETFL);
            fcntl(p->fds[s], F_SETFL, fl | O_NONBLOCK);
            struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLET, .data.u64 = (uint64_t)r};
            epoll_ctl(c->epfd, EPOLL_CTL_ADD, p->fds[s], &ev);
        }
    }
    return TLINK_OK;
}

void tl_tcp_teardown(tlink_comm *c) {
    if (c->peers) {
        for (int r = 0; r < c->size; r++) {
            tl_peer *p = &c->peers[r];
            if (p->transport != TLINK_TRANSPORT_TCP) continue;
            for (int s = 0; s < p->nfds; s++)
                if (p->fds[s] >= 0) { close(p->fds[s]); p->fds[s] = -1; }
        }
    }
    if (c->epfd > 0) close(c->epfd);
    if (c->listen_fd > 0) close(c->listen_fd);
    c->epfd = c->listen_fd = -1;
}
