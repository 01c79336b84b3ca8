/* launch.c — the `tile launch` process launcher (see launch.h). */
#define _GNU_SOURCE
#include "launch.h"
#include "tl_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LAUNCH_MAX_RANKS 4096
#define LINE_MAX_BUF     (64 * 1024) /* a partial line longer than this is flushed as is */

static void lerr(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void lerr(const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "tile launch: error: %s\n", buf);
}

static void lnote(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void lnote(const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "tile launch: %s\n", buf);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void tlink_launch_options_init(tlink_launch_options *o) {
    memset(o, 0, sizeof *o);
    o->prefix = 1;
    o->grace_s = 3.0;
}

/* ---------------------------------------------------------------- host list */

typedef struct lhost {
    char name[256];
    int nranks;
    int first_rank;
    int nsfd; /* open /var/run/netns/NAME with --netns, else -1 */
} lhost;

static int parse_hosts(const char *spec, lhost **out, int *nout) {
    int cap = 4, n = 0;
    lhost *h = calloc((size_t)cap, sizeof *h);
    const char *p = spec;
    if (!h) return -1;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == 0) { lerr("--hosts '%s': empty host entry", spec); free(h); return -1; }
        if (n == cap) {
            cap *= 2;
            lhost *nh = realloc(h, (size_t)cap * sizeof *h);
            if (!nh) { free(h); return -1; }
            h = nh;
        }
        memset(&h[n], 0, sizeof h[n]);
        h[n].nsfd = -1;
        const char *colon = memchr(p, ':', len);
        size_t nlen = colon ? (size_t)(colon - p) : len;
        if (nlen == 0 || nlen >= sizeof h[n].name) {
            lerr("--hosts '%s': bad host name in '%.*s'", spec, (int)len, p);
            free(h);
            return -1;
        }
        memcpy(h[n].name, p, nlen);
        h[n].name[nlen] = 0;
        if (colon) {
            char num[32];
            size_t clen = len - nlen - 1;
            char *e;
            if (clen == 0 || clen >= sizeof num) {
                lerr("--hosts '%s': bad rank count in '%.*s'", spec, (int)len, p);
                free(h);
                return -1;
            }
            memcpy(num, colon + 1, clen);
            num[clen] = 0;
            long v = strtol(num, &e, 10);
            if (*e || v < 1 || v > LAUNCH_MAX_RANKS) {
                lerr("--hosts '%s': bad rank count '%s' (want 1..%d)", spec, num, LAUNCH_MAX_RANKS);
                free(h);
                return -1;
            }
            h[n].nranks = (int)v;
        } else {
            h[n].nranks = 1;
        }
        for (int i = 0; i < n; i++)
            if (!strcmp(h[i].name, h[n].name)) {
                lerr("--hosts '%s': host '%s' is listed twice", spec, h[n].name);
                free(h);
                return -1;
            }
        n++;
        p += len;
        if (*p == ',') p++;
    }
    if (n == 0) { lerr("--hosts is empty"); free(h); return -1; }
    *out = h;
    *nout = n;
    return 0;
}

static int is_local_name(const char *name) {
    char hn[256];
    if (!strcmp(name, "localhost") || !strncmp(name, "127.", 4) || !strcmp(name, "::1")) return 1;
    if (gethostname(hn, sizeof hn) == 0) {
        hn[sizeof hn - 1] = 0;
        if (!strcmp(hn, name)) return 1;
        /* "node1" matches "node1.example.org" and the other way round */
        size_t a = strlen(hn), b = strlen(name);
        if (a < b && name[a] == '.' && !strncmp(hn, name, a)) return 1;
        if (b < a && hn[b] == '.' && !strncmp(hn, name, b)) return 1;
    }
    return 0;
}

/* ---------------------------------------------------------------- master address/port */

/* First IPv4 address of an interface that is up and not loopback; "" if none. */
static void first_ipv4(char *out, size_t n) {
    struct ifaddrs *ifa = NULL;
    out[0] = 0;
    if (getifaddrs(&ifa) != 0) return;
    for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
        if (!(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK)) continue;
        inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, out, (socklen_t)n);
        break;
    }
    freeifaddrs(ifa);
}

/* A port nobody listens on right now (the kernel's choice for port 0). */
static int free_port(void) {
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    int port = -1;
    if (s < 0) return -1;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    if (bind(s, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(s, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(s);
    return port;
}

/* Finds MASTER_ADDR (if addr[0]==0) and a free port (if *port==0) inside network namespace
 * nsfd (-1: ours). Namespace switching happens in a short-lived child so this process stays
 * where it is. */
static int master_endpoint(int nsfd, char *addr, size_t addrlen, int *port) {
    if (nsfd < 0) {
        if (!addr[0]) snprintf(addr, addrlen, "127.0.0.1");
        if (*port == 0 && (*port = free_port()) <= 0) { lerr("cannot find a free TCP port: %s", strerror(errno)); return -1; }
        return 0;
    }
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0) { lerr("pipe: %s", strerror(errno)); return -1; }
    pid_t pid = fork();
    if (pid < 0) { lerr("fork: %s", strerror(errno)); close(pfd[0]); close(pfd[1]); return -1; }
    if (pid == 0) {
        char buf[128];
        char a[64];
        int p = 0;
        close(pfd[0]);
        if (setns(nsfd, CLONE_NEWNET) != 0) _exit(3);
        first_ipv4(a, sizeof a);
        p = free_port();
        int k = snprintf(buf, sizeof buf, "%s %d", a[0] ? a : "-", p);
        if (write(pfd[1], buf, (size_t)k) != k) _exit(4);
        _exit(0);
    }
    close(pfd[1]);
    char buf[128];
    ssize_t got = 0, r;
    while ((r = read(pfd[0], buf + got, sizeof buf - 1 - (size_t)got)) > 0) got += r;
    close(pfd[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    buf[got > 0 ? got : 0] = 0;
    char a[64];
    int p = 0;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || sscanf(buf, "%63s %d", a, &p) != 2) {
        lerr("cannot enter the first host's network namespace to find its address (are you root?)");
        return -1;
    }
    if (!addr[0]) {
        if (!strcmp(a, "-")) {
            lerr("the first host's network namespace has no IPv4 address that is up; give --master-addr");
            return -1;
        }
        snprintf(addr, addrlen, "%s", a);
    }
    if (*port == 0) {
        if (p <= 0) { lerr("cannot find a free TCP port in the first host's namespace"); return -1; }
        *port = p;
    }
    return 0;
}

/* ---------------------------------------------------------------- output streams */

typedef struct lstream {
    int fd;       /* read end, -1 when closed */
    int outfd;    /* 1 or 2 */
    char *buf;
    size_t len, cap;
    int midline;  /* a flushed over-long partial line: the continuation gets no prefix */
} lstream;

typedef struct lrank {
    pid_t pid;    /* 0 once reaped */
    int host;
    int restarts; /* times this rank was restarted (elastic mode) */
    int status;   /* wait status once reaped */
    lstream out[2];
} lrank;

static int g_prefix = 1;

static void write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN) { struct pollfd pf = {fd, POLLOUT, 0}; poll(&pf, 1, 100); continue; }
            return; /* our stdout is gone (EPIPE): drop output, keep supervising */
        }
        p += w;
        n -= (size_t)w;
    }
}

/* Writes one piece of a rank's output (prefix + text) with one write() so that lines of
 * different ranks do not interleave. */
static void emit(int rank, lstream *s, const char *text, size_t n, int add_newline) {
    char pre[32];
    int plen = 0;
    if (g_prefix && !s->midline) plen = snprintf(pre, sizeof pre, "[%d] ", rank);
    size_t total = (size_t)plen + n + (add_newline ? 1 : 0);
    char stackbuf[4096];
    char *b = total <= sizeof stackbuf ? stackbuf : malloc(total);
    if (!b) { write_all(s->outfd, text, n); return; }
    memcpy(b, pre, (size_t)plen);
    memcpy(b + plen, text, n);
    if (add_newline) b[total - 1] = '\n';
    write_all(s->outfd, b, total);
    if (b != stackbuf) free(b);
}

/* Emits every complete line in the stream's buffer; at_eof also emits the last partial line
 * (with a newline added). */
static void flush_lines(int rank, lstream *s, int at_eof) {
    size_t start = 0;
    for (;;) {
        char *nl = memchr(s->buf + start, '\n', s->len - start);
        if (!nl) break;
        size_t n = (size_t)(nl - (s->buf + start)) + 1;
        emit(rank, s, s->buf + start, n, 0);
        s->midline = 0;
        start += n;
    }
    if (start < s->len && (at_eof || s->len - start >= LINE_MAX_BUF)) {
        emit(rank, s, s->buf + start, s->len - start, at_eof);
        s->midline = !at_eof;
        start = s->len;
    }
    memmove(s->buf, s->buf + start, s->len - start);
    s->len -= start;
}

/* Reads what is available; returns 0 while open, 1 at EOF (then the stream is closed). */
static int pump(int rank, lstream *s) {
    if (s->cap - s->len < 4096) {
        size_t ncap = s->cap ? s->cap * 2 : 8192;
        char *nb = realloc(s->buf, ncap);
        if (!nb) ncap = s->cap; else { s->buf = nb; s->cap = ncap; }
    }
    ssize_t r = read(s->fd, s->buf + s->len, s->cap - s->len);
    if (r < 0 && (errno == EINTR || errno == EAGAIN)) return 0;
    if (r <= 0) {
        flush_lines(rank, s, 1);
        close(s->fd);
        s->fd = -1;
        return 1;
    }
    s->len += (size_t)r;
    flush_lines(rank, s, 0);
    return 0;
}

/* ---------------------------------------------------------------- signals */

static int g_sigpipe[2] = {-1, -1};

static void on_signal(int sig) {
    int saved = errno;
    unsigned char c = (unsigned char)sig;
    if (g_sigpipe[1] >= 0) (void)!write(g_sigpipe[1], &c, 1);
    errno = saved;
}

static const char *const g_unset_vars[] = {
    "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
    "OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_COMM_WORLD_NODE_RANK", "PMI_RANK", "PMI_SIZE",
    "PMIX_RANK", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", "SLURM_PROCID", "SLURM_NTASKS",
    "SLURM_LOCALID", "SLURM_NPROCS", NULL,
};

static void setenv_int(const char *k, long v) {
    char b[32];
    snprintf(b, sizeof b, "%ld", v);
    setenv(k, b, 1);
}

/* In the child, after fork: set the environment, enter the namespace, exec. Never returns. */
static void child_exec(const tlink_launch_options *o, const lhost *h, int host_index, int rank,
                       int world, const char *maddr, int mport, int out_w, int err_w, int stdin_fd,
                       pid_t launcher, int restart) {
    /* own process group: signals reach the rank and everything it starts */
    setpgid(0, 0);
    /* die with the launcher, even when it is SIGKILLed */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    signal(SIGCHLD, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (stdin_fd >= 0) dup2(stdin_fd, 0);
    dup2(out_w, 1);
    dup2(err_w, 2);
    for (const char *const *v = g_unset_vars; *v; v++) unsetenv(*v);
    setenv_int("RANK", rank);
    setenv_int("WORLD_SIZE", world);
    setenv_int("LOCAL_RANK", rank - h->first_rank);
    setenv_int("LOCAL_WORLD_SIZE", h->nranks);
    setenv_int("GROUP_RANK", host_index);
    setenv_int("NODE_RANK", host_index);
    setenv("MASTER_ADDR", maddr, 1);
    setenv_int("MASTER_PORT", mport);
    setenv("TLINK_LAUNCH_HOST", h->name, 1);
    /* elastic mode: how often this rank was restarted (torchrun's names too) */
    setenv_int("TLINK_RESTART_COUNT", restart);
    setenv_int("TORCHELASTIC_RESTART_COUNT", restart);
    setenv_int("TLINK_MAX_RESTARTS", o->max_restarts);
    setenv_int("TORCHELASTIC_MAX_RESTARTS", o->max_restarts);
    /* namespaces share the hostname and boot id: make each one a host of its own */
    if (h->nsfd >= 0) setenv("TLINK_HOST_PER_NETNS", "1", 1);
    if (h->nsfd >= 0 && setns(h->nsfd, CLONE_NEWNET) != 0) {
        fprintf(stderr, "tile launch: error: cannot enter network namespace '%s': %s\n", h->name, strerror(errno));
        _exit(127);
    }
    if (getppid() != launcher) _exit(127); /* the launcher died before prctl took effect */
    execvp(o->argv[0], o->argv);
    fprintf(stderr, "tile launch: error: cannot run '%s': %s\n", o->argv[0], strerror(errno));
    _exit(127);
}

static const char *signame(int sig) {
    const char *s = strsignal(sig);
    return s ? s : "?";
}

/* Starts rank r (output pipes, fork, exec); 0 on success. */
static int spawn_rank(const tlink_launch_options *o, const lhost *hosts, int hi, int r, int world,
                      const char *maddr, int mport, int stdin_for_rank0, int devnull, pid_t self, lrank *lr,
                      int restart) {
    int po[2], pe[2];
    if (pipe2(po, O_CLOEXEC) != 0) { lerr("pipe: %s", strerror(errno)); return -1; }
    if (pipe2(pe, O_CLOEXEC) != 0) { close(po[0]); close(po[1]); lerr("pipe: %s", strerror(errno)); return -1; }
    pid_t pid = fork();
    if (pid < 0) {
        lerr("fork: %s", strerror(errno));
        close(po[0]); close(po[1]); close(pe[0]); close(pe[1]);
        return -1;
    }
    if (pid == 0) {
        child_exec(o, &hosts[hi], hi, r, world, maddr, mport, po[1], pe[1],
                   r == 0 && stdin_for_rank0 >= 0 && !restart ? 0 : devnull, self, restart);
    }
    setpgid(pid, pid); /* also in the parent, so that kill(-pid) works at once */
    close(po[1]);
    close(pe[1]);
    fcntl(po[0], F_SETFL, O_NONBLOCK);
    fcntl(pe[0], F_SETFL, O_NONBLOCK);
    lr->pid = pid;
    lr->host = hi;
    lr->restarts = restart;
    lr->out[0].fd = po[0];
    lr->out[0].outfd = 1;
    lr->out[1].fd = pe[0];
    lr->out[1].outfd = 2;
    return 0;
}

int tlink_launch_run(const tlink_launch_options *o) {
    lhost *hosts = NULL;
    int nhosts = 0;
    int world = o->nranks;

    if (!o->argv || !o->argv[0]) { lerr("no command given (usage: tile launch -n N -- CMD ARGS)"); return 2; }
    if (o->max_restarts < 0) { lerr("--max-restarts must be >= 0"); return 2; }
    if (o->hosts) {
        if (parse_hosts(o->hosts, &hosts, &nhosts) != 0) return 2;
        int sum = 0;
        for (int i = 0; i < nhosts; i++) { hosts[i].first_rank = sum; sum += hosts[i].nranks; }
        if (world == 0) world = sum;
        if (world != sum) {
            lerr("-n %d does not match the %d ranks of --hosts '%s'", world, sum, o->hosts);
            free(hosts);
            return 2;
        }
    } else {
        if (o->netns) { lerr("--netns needs --hosts (the namespace names)"); return 2; }
        if (world == 0) world = 1;
        hosts = calloc(1, sizeof *hosts);
        if (!hosts) return 2;
        nhosts = 1;
        if (gethostname(hosts[0].name, sizeof hosts[0].name - 1) != 0) snprintf(hosts[0].name, sizeof hosts[0].name, "localhost");
        hosts[0].nranks = world;
        hosts[0].nsfd = -1;
    }
    if (world < 1 || world > LAUNCH_MAX_RANKS) {
        lerr("bad rank count %d (want 1..%d)", world, LAUNCH_MAX_RANKS);
        free(hosts);
        return 2;
    }
    int rc = 2;
    lrank *ranks = NULL;
    tlink_store_server *store = NULL;
    int restarts = 0;
    for (int i = 0; i < nhosts; i++) {
        if (o->netns) {
            char path[512];
            snprintf(path, sizeof path, "/var/run/netns/%s", hosts[i].name);
            hosts[i].nsfd = open(path, O_RDONLY | O_CLOEXEC);
            if (hosts[i].nsfd < 0) {
                lerr("network namespace '%s' not found (%s: %s); create it with scripts/netns.sh up",
                     hosts[i].name, path, strerror(errno));
                goto out;
            }
        } else if (o->hosts && !is_local_name(hosts[i].name)) {
            lerr("host '%s' is not this machine: remote launch (ssh) is not implemented; "
                 "use --netns for network-namespace test hosts", hosts[i].name);
            goto out;
        }
    }

    char maddr[256] = "";
    int mport = o->master_port;
    if (o->master_addr) snprintf(maddr, sizeof maddr, "%s", o->master_addr);
    if (mport < 0 || mport > 65535) { lerr("bad --master-port %d", mport); goto out; }
    if (master_endpoint(hosts[0].nsfd, maddr, sizeof maddr, &mport) != 0) goto out;
    /* elastic mode: the store must outlive any rank, so the launcher hosts it (rank 0 finds
     * the port taken and uses it); inside network namespaces rank 0 keeps hosting it */
    /* a secret for the job (docs/tilelink.md, "Authentication"): unless the user gave one or
     * declined, 32 random bytes that every rank (and the store hosted here) get as TLINK_SECRET */
    if (!o->no_secret && !tb_knob_str(TB_K_TLINK_SECRET) && !tb_knob_str(TB_K_TLINK_SECRET_FILE)) {
        unsigned char raw[32];
        char hex[65];
        if (tl_random_bytes(raw, sizeof raw) != 0) {
            lerr("cannot draw a random job secret (no getrandom or /dev/urandom); give TLINK_SECRET or --no-secret");
            goto out;
        }
        for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", raw[i]);
        setenv("TLINK_SECRET", hex, 1);
        memset(raw, 0, sizeof raw);
        memset(hex, 0, sizeof hex);
        if (o->verbose) lnote("generated a job secret for the ranks (TLINK_SECRET)");
    }
    if ((o->max_restarts > 0 || o->keep_going) && !o->netns) {
        int lo = !strncmp(maddr, "127.", 4) || !strcmp(maddr, "localhost");
        if (tlink_store_server_start(lo ? (strcmp(maddr, "localhost") ? maddr : "127.0.0.1") : NULL, mport, &store) !=
            TLINK_OK) {
            /* a store already listens there (`tile store --port P` and --master-port P) */
            store = NULL;
            if (o->verbose) lnote("port %d is taken: the ranks use the store listening there", mport);
        } else if (o->verbose) {
            lnote("hosting the store on port %d (elastic mode)", mport);
        }
    }

    ranks = calloc((size_t)world, sizeof *ranks);
    if (!ranks) { lerr("out of memory"); goto out; }
    for (int r = 0; r < world; r++) ranks[r].out[0].fd = ranks[r].out[1].fd = -1;

    if (pipe2(g_sigpipe, O_CLOEXEC | O_NONBLOCK) != 0) { lerr("pipe: %s", strerror(errno)); goto out; }
    struct sigaction sa, old_int, old_term, old_hup, old_chld;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    sigaction(SIGHUP, &sa, &old_hup);
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    sigaction(SIGCHLD, &sa, &old_chld);
    void (*old_pipe)(int) = signal(SIGPIPE, SIG_IGN);
    g_prefix = o->prefix;

    if (o->verbose)
        lnote("%d rank(s) on %d host(s), MASTER_ADDR=%s MASTER_PORT=%d", world, nhosts, maddr, mport);

    int stdin_for_rank0 = isatty(0) ? -1 : 0;
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int started = 0;
    int first_fail = -1, first_status = 0;
    int got_signal = 0;
    int timed_out = 0;
    double kill_at = 0;   /* when > 0: SIGKILL whatever is left at this time */
    double drain_until = 0;
    double deadline = o->timeout_s > 0 ? now_s() + o->timeout_s : 0;

    fflush(stdout);
    fflush(stderr);
    pid_t self = getpid();
    for (int hi = 0; hi < nhosts; hi++) {
        for (int r = hosts[hi].first_rank; r < hosts[hi].first_rank + hosts[hi].nranks; r++) {
            if (spawn_rank(o, hosts, hi, r, world, maddr, mport, stdin_for_rank0, devnull, self, &ranks[r], 0))
                goto abort_start;
            started++;
        }
    }
    goto supervise;

abort_start:
    /* could not start every rank: stop those that are running */
    first_fail = -2;
    first_status = 2;
    for (int r = 0; r < world; r++)
        if (ranks[r].pid > 0) kill(-ranks[r].pid, SIGTERM);
    kill_at = now_s() + o->grace_s;

supervise:;
    int alive = started;
    struct pollfd *pfds = calloc((size_t)(2 * world + 1), sizeof *pfds);
    int *pmap = calloc((size_t)(2 * world + 1), sizeof *pmap);
    if (!pfds || !pmap) { lerr("out of memory"); alive = 0; }
    for (;;) {
        int open_streams = 0;
        int np = 0;
        pfds[np].fd = g_sigpipe[0];
        pfds[np].events = POLLIN;
        pmap[np++] = -1;
        for (int r = 0; r < world; r++)
            for (int k = 0; k < 2; k++)
                if (ranks[r].out[k].fd >= 0) {
                    pfds[np].fd = ranks[r].out[k].fd;
                    pfds[np].events = POLLIN;
                    pmap[np++] = r * 2 + k;
                    open_streams++;
                }
        if (alive == 0 && open_streams == 0) break;
        double t = now_s();
        if (alive == 0 && drain_until == 0) drain_until = t + (o->grace_s < 1.0 ? o->grace_s : 1.0);
        if (alive == 0 && t >= drain_until) {
            /* every rank has exited but something it started still holds its output open:
             * kill the process groups and stop reading */
            for (int r = 0; r < world; r++) {
                if (ranks[r].out[0].fd >= 0 || ranks[r].out[1].fd >= 0) kill(-ranks[r].pid, SIGKILL);
                for (int k = 0; k < 2; k++)
                    if (ranks[r].out[k].fd >= 0) {
                        flush_lines(r, &ranks[r].out[k], 1);
                        close(ranks[r].out[k].fd);
                        ranks[r].out[k].fd = -1;
                    }
            }
            break;
        }
        double wake = 1e300;
        if (kill_at > 0) wake = kill_at;
        if (deadline > 0 && !timed_out && deadline < wake) wake = deadline;
        if (drain_until > 0 && drain_until < wake) wake = drain_until;
        int ms = -1;
        if (wake < 1e299) {
            double d = (wake - t) * 1000.0;
            ms = d <= 0 ? 0 : (int)(d + 1);
        }
        int pr = poll(pfds, (nfds_t)np, ms);
        if (pr < 0 && errno != EINTR) { lerr("poll: %s", strerror(errno)); break; }
        t = now_s();
        for (int i = 1; pr > 0 && i < np; i++) {
            if (!(pfds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            int r = pmap[i] / 2, k = pmap[i] % 2;
            pump(r, &ranks[r].out[k]);
        }
        /* signals and children */
        unsigned char sigs[64];
        ssize_t ns = read(g_sigpipe[0], sigs, sizeof sigs);
        for (ssize_t i = 0; i < ns; i++) {
            int sig = sigs[i];
            if (sig == SIGCHLD) continue;
            if (!got_signal) got_signal = sig;
            lnote("got signal %d (%s): forwarding it to the ranks", sig, signame(sig));
            for (int r = 0; r < world; r++)
                if (ranks[r].pid > 0) kill(-ranks[r].pid, sig);
            if (kill_at == 0) kill_at = t + o->grace_s;
        }
        for (;;) {
            int st;
            pid_t p = waitpid(-1, &st, WNOHANG);
            if (p <= 0) break;
            for (int r = 0; r < world; r++) {
                if (ranks[r].pid != p) continue;
                ranks[r].status = st;
                alive--;
                /* whatever the rank started is part of the job: end it now */
                kill(-p, SIGTERM);
                int failed = !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
                if (failed && first_fail == -1 && !got_signal && !timed_out && restarts < o->max_restarts) {
                    /* elastic: start a replacement; it rejoins through the store */
                    restarts++;
                    if (WIFEXITED(st))
                        lnote("rank %d exited with status %d: restarting it (restart %d of %d)", r, WEXITSTATUS(st),
                              restarts, o->max_restarts);
                    else
                        lnote("rank %d was killed by signal %d (%s): restarting it (restart %d of %d)", r,
                              WTERMSIG(st), signame(WTERMSIG(st)), restarts, o->max_restarts);
                    /* what the old process wrote is printed before the new one speaks */
                    for (int k = 0; k < 2; k++) {
                        if (ranks[r].out[k].fd < 0) continue;
                        while (pump(r, &ranks[r].out[k]) == 0) {
                            struct pollfd pf = {ranks[r].out[k].fd, POLLIN, 0};
                            if (poll(&pf, 1, 0) <= 0) break;
                        }
                        if (ranks[r].out[k].fd >= 0) {
                            flush_lines(r, &ranks[r].out[k], 1);
                            close(ranks[r].out[k].fd);
                            ranks[r].out[k].fd = -1;
                        }
                        ranks[r].out[k].midline = 0;
                    }
                    if (spawn_rank(o, hosts, ranks[r].host, r, world, maddr, mport, stdin_for_rank0, devnull, self,
                                   &ranks[r], ranks[r].restarts + 1) == 0) {
                        alive++;
                        break;
                    }
                }
                if (failed && first_fail == -1 && !got_signal && !timed_out) {
                    first_fail = r;
                    first_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
                    if (WIFEXITED(st))
                        lnote("rank %d exited with status %d", r, WEXITSTATUS(st));
                    else
                        lnote("rank %d was killed by signal %d (%s)", r, WTERMSIG(st), signame(WTERMSIG(st)));
                    if (alive > 0 && o->keep_going) {
                        lnote("--keep-going: the other %d rank(s) continue", alive);
                    } else if (alive > 0) {
                        lnote("terminating the other %d rank(s)", alive);
                        for (int q = 0; q < world; q++)
                            if (ranks[q].pid > 0 && q != r) kill(-ranks[q].pid, SIGTERM);
                        kill_at = t + o->grace_s;
                    }
                }
                ranks[r].pid = -p; /* reaped: keep the group id for cleanup, negative */
                break;
            }
        }
        if (deadline > 0 && !timed_out && t >= deadline && alive > 0) {
            timed_out = 1;
            lnote("timeout after %g s: terminating %d rank(s)", o->timeout_s, alive);
            for (int r = 0; r < world; r++)
                if (ranks[r].pid > 0) kill(-ranks[r].pid, SIGTERM);
            if (kill_at == 0 || kill_at > t + o->grace_s) kill_at = t + o->grace_s;
        }
        if (kill_at > 0 && t >= kill_at && alive > 0) {
            lnote("%d rank(s) still running after %g s: sending SIGKILL", alive, o->grace_s);
            for (int r = 0; r < world; r++)
                if (ranks[r].pid > 0) kill(-ranks[r].pid, SIGKILL);
            kill_at = t + 3600; /* once */
        }
    }
    free(pfds);
    free(pmap);
    /* nothing of the job may outlive the launcher */
    for (int r = 0; r < world; r++) {
        pid_t g = ranks[r].pid < 0 ? -ranks[r].pid : ranks[r].pid;
        if (g > 0) kill(-g, SIGKILL);
    }

    if (first_fail >= 0 || first_fail == -2) rc = first_status;
    else if (timed_out) rc = 124;
    else if (got_signal) rc = 128 + got_signal;
    else rc = 0;

    if (devnull >= 0) close(devnull);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGHUP, &old_hup, NULL);
    sigaction(SIGCHLD, &old_chld, NULL);
    signal(SIGPIPE, old_pipe);
    close(g_sigpipe[0]);
    close(g_sigpipe[1]);
    g_sigpipe[0] = g_sigpipe[1] = -1;
    for (int r = 0; r < world; r++)
        for (int k = 0; k < 2; k++) free(ranks[r].out[k].buf);

out:
    if (store) tlink_store_server_stop(store);
    free(ranks);
    for (int i = 0; i < nhosts; i++)
        if (hosts[i].nsfd >= 0) close(hosts[i].nsfd);
    free(hosts);
    return rc;
}

/* ---------------------------------------------------------------- command line */

static void usage(FILE *f) {
    fprintf(f,
        "usage: tile launch -n N [options] -- CMD [ARGS...]\n"
        "Starts N ranks of CMD with RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,\n"
        "GROUP_RANK/NODE_RANK, MASTER_ADDR and MASTER_PORT set (torchrun conventions).\n"
        "options:\n"
        "  -n, --nproc N          number of ranks (default: the sum of --hosts, or 1)\n"
        "  --hosts H1:n1,H2:n2    ranks per host, in rank order\n"
        "  --netns                the host names are network namespaces (scripts/netns.sh):\n"
        "                         each host's ranks run inside its namespace (needs root)\n"
        "  --master-addr A        MASTER_ADDR (default 127.0.0.1, or host 0's address with --netns)\n"
        "  --master-port P        MASTER_PORT (default: a free port)\n"
        "  --no-prefix            do not prefix output lines with [rank]\n"
        "  --grace S              seconds between SIGTERM and SIGKILL when stopping ranks (3)\n"
        "  --timeout S            stop all ranks after S seconds and exit 124\n"
        "  --max-restarts K       elastic: restart a failed rank, K restarts in all; the\n"
        "                         launcher hosts the store so that it outlives any rank\n"
        "  --keep-going           a failed rank does not stop the others (they may shrink);\n"
        "                         the launcher hosts the store; exit status as usual\n"
        "  --no-secret            do not generate a job secret (TLINK_SECRET) for the ranks;\n"
        "                         without one, store and transport connections are not authenticated\n"
        "  -v, --verbose          say what is started\n"
        "Exit status: 0, or that of the first rank that failed (128+signal if killed).\n");
}

static int parse_num(const char *opt, const char *s, double lo, double hi, double *out) {
    char *e;
    if (!s) { lerr("%s needs a value", opt); return -1; }
    double v = strtod(s, &e);
    if (e == s || *e || v < lo || v > hi) { lerr("%s: bad value '%s'", opt, s); return -1; }
    *out = v;
    return 0;
}

int tlink_launch_main(int argc, char **argv) {
    tlink_launch_options o;
    tlink_launch_options_init(&o);
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        const char *val = NULL;
        double v;
        if (!strcmp(a, "--")) { i++; break; }
        if (a[0] != '-') break; /* the command starts here */
        /* --opt=value */
        char name[64];
        const char *eq = strchr(a, '=');
        if (eq && a[1] == '-' && (size_t)(eq - a) < sizeof name) {
            memcpy(name, a, (size_t)(eq - a));
            name[eq - a] = 0;
            a = name;
            val = eq + 1;
        }
#define NEXT() (val ? val : (i + 1 < argc ? argv[++i] : NULL))
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        else if (!strcmp(a, "-n") || !strcmp(a, "--nproc") || !strcmp(a, "--nproc-per-node") || !strcmp(a, "-np")) {
            if (parse_num(a, NEXT(), 1, LAUNCH_MAX_RANKS, &v)) return 2;
            if (v != (int)v) { lerr("%s: not an integer", a); return 2; }
            o.nranks = (int)v;
        } else if (!strcmp(a, "--hosts") || !strcmp(a, "-H")) {
            o.hosts = NEXT();
            if (!o.hosts) { lerr("--hosts needs a value"); return 2; }
        } else if (!strcmp(a, "--netns")) o.netns = 1;
        else if (!strcmp(a, "--master-addr")) {
            o.master_addr = NEXT();
            if (!o.master_addr) { lerr("--master-addr needs a value"); return 2; }
        } else if (!strcmp(a, "--master-port")) {
            if (parse_num(a, NEXT(), 1, 65535, &v)) return 2;
            o.master_port = (int)v;
        } else if (!strcmp(a, "--no-prefix")) o.prefix = 0;
        else if (!strcmp(a, "--grace")) {
            if (parse_num(a, NEXT(), 0, 3600, &v)) return 2;
            o.grace_s = v;
        } else if (!strcmp(a, "--timeout")) {
            if (parse_num(a, NEXT(), 0, 1e7, &v)) return 2;
            o.timeout_s = v;
        } else if (!strcmp(a, "--max-restarts")) {
            if (parse_num(a, NEXT(), 0, 1e6, &v)) return 2;
            o.max_restarts = (int)v;
        } else if (!strcmp(a, "--keep-going")) o.keep_going = 1;
        else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) o.verbose = 1;
        else if (!strcmp(a, "--no-secret")) o.no_secret = 1;
        else {
            lerr("unknown option '%s' (see tile launch --help)", argv[i]);
            return 2;
        }
#undef NEXT
    }
    if (i >= argc) { lerr("no command given"); usage(stderr); return 2; }
    o.argv = argv + i;
    return tlink_launch_run(&o);
}
