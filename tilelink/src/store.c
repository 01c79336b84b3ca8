/* store.c — the TCP key-value store used for bootstrap (server thread + client). */
#include "tl_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

enum { OP_SET = 1, OP_GET = 2, OP_ADD = 3, OP_CHECK = 4, OP_DELETE = 5, OP_PING = 6 };
enum { RS_OK = 0, RS_MISSING = 1, RS_ERROR = 2 };
#define HDR_SIZE 13 /* u8 op, u32 klen, u64 vlen */
#define MAX_KEY 4096
#define MAX_VAL (64u << 20)

/* ---------- helpers ---------- */
int tl_parse_hostport(const char *addr, char *host, size_t hostlen, int *port) {
    if (!addr || !*addr) return -1;
    const char *colon;
    if (addr[0] == '[') { /* [v6]:port */
        const char *rb = strchr(addr, ']');
        if (!rb || rb[1] != ':') return -1;
        size_t n = (size_t)(rb - addr - 1);
        if (n + 1 > hostlen) return -1;
        memcpy(host, addr + 1, n);
        host[n] = 0;
        colon = rb + 1;
    } else {
        colon = strrchr(addr, ':');
        if (!colon) return -1;
        size_t n = (size_t)(colon - addr);
        if (n == 0 || n + 1 > hostlen) return -1;
        memcpy(host, addr, n);
        host[n] = 0;
    }
    char *end;
    long p = strtol(colon + 1, &end, 10);
    if (*end || p <= 0 || p > 65535) return -1;
    *port = (int)p;
    return 0;
}

int tl_tcp_connect(const char *host, int port, double deadline, char *err, size_t errlen) {
    char portstr[16];
    snprintf(portstr, sizeof portstr, "%d", port);
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int gai = getaddrinfo(host, portstr, &hints, &res);
    if (gai != 0) {
        snprintf(err, errlen, "cannot resolve '%s': %s", host, gai_strerror(gai));
        return -1;
    }
    int last_errno = 0;
    for (;;) {
        for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
            int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
            if (fd < 0) { last_errno = errno; continue; }
            int rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
            if (rc != 0 && errno == EINPROGRESS) {
                double left = deadline - tl_now();
                if (left < 0.05) left = 0.05;
                if (left > 5) left = 5;
                struct pollfd p = {fd, POLLOUT, 0};
                rc = poll(&p, 1, (int)(left * 1000));
                if (rc == 1) {
                    int soerr = 0;
                    socklen_t sl = sizeof soerr;
                    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
                    if (soerr == 0) rc = 0;
                    else { errno = soerr; rc = -1; }
                } else {
                    errno = ETIMEDOUT;
                    rc = -1;
                }
            }
            if (rc == 0) {
                int fl = fcntl(fd, F_GETFL);
                fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
                int one = 1;
                setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                freeaddrinfo(res);
                return fd;
            }
            last_errno = errno;
            close(fd);
        }
        if (tl_now() >= deadline) break;
        usleep(50000);
    }
    freeaddrinfo(res);
    snprintf(err, errlen, "cannot connect to %s:%d: %s", host, port, strerror(last_errno));
    return -1;
}

static int write_all(int fd, const void *buf, size_t n) {
    const char *p = buf;
    while (n) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN) {
                struct pollfd pf = {fd, POLLOUT, 0};
                poll(&pf, 1, 1000);
                continue;
            }
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* read exactly n bytes before deadline; returns 0, -1 (error/EOF), -2 (timeout) */
static int read_all(int fd, void *buf, size_t n, double deadline) {
    char *p = buf;
    while (n) {
        double left = deadline - tl_now();
        if (left <= 0) return -2;
        struct pollfd pf = {fd, POLLIN, 0};
        int rc = poll(&pf, 1, left > 1 ? 1000 : (int)(left * 1000) + 1);
        if (rc < 0 && errno != EINTR) return -1;
        if (rc <= 0) continue;
        ssize_t r = recv(fd, p, n, 0);
        if (r == 0) return -1;
        if (r < 0) {
            if (errno == EINTR || errno == EAGAIN) continue;
            return -1;
        }
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

static void put_u32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); }
static void put_u64(unsigned char *p, uint64_t v) { memcpy(p, &v, 8); }
static uint32_t get_u32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t get_u64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* ---------- server ---------- */
typedef struct kv {
    struct kv *next;
    char *key;
    void *val;
    size_t len;
} kv;

/* a client's handshake state (auth.c): the secret's challenge-response comes before any
 * request is read */
enum { CL_READY = 0, CL_AWAIT_HELLO = 1, CL_AWAIT_RESPONSE = 2 };

typedef struct sclient {
    int fd;
    unsigned char *buf;
    size_t len, cap;
    char *wait_key;     /* parked GET */
    int state;
    double since;       /* when it connected (handshake deadline) */
    size_t hlen;
    unsigned char hello[TL_AUTH_HELLO_MAX];
    unsigned char chal[TL_AUTH_CHALLENGE];
    char name[64];      /* the client's address, for the log */
} sclient;

/* unauthenticated clients get this long to finish the handshake */
#define HANDSHAKE_S 10.0

#define NBUCKET 1024
struct tlink_store_server {
    int listen_fd, port;
    int wake[2];
    pthread_t thr;
    kv *tab[NBUCKET];
    sclient *cl;
    int ncl, capcl;
    _Atomic int refs;
    int auth;                   /* a secret is set: every client must prove it */
    tl_hmac_key key;
    unsigned long refused;      /* connections refused so far (the log is thinned out) */
    /* where replies go: the client's socket, or a harness (tl_store_server_detached) */
    int (*sink)(void *ctx, int fd, const void *data, size_t len);
    void *sink_ctx;
    int detached;               /* no thread, no listener, the fds are the harness's */
};

static int sock_sink(void *ctx, int fd, const void *data, size_t len) {
    (void)ctx;
    return write_all(fd, data, len);
}

static kv **kv_find(tlink_store_server *s, const char *key) {
    kv **pp = &s->tab[tl_hash64(key, strlen(key), 0) % NBUCKET];
    while (*pp && strcmp((*pp)->key, key)) pp = &(*pp)->next;
    return pp;
}

static int reply_to(tlink_store_server *s, int fd, int status, const void *data, size_t len) {
    unsigned char h[9];
    h[0] = (unsigned char)status;
    put_u64(h + 1, len);
    if (s->sink(s->sink_ctx, fd, h, 9)) return -1;
    if (len && s->sink(s->sink_ctx, fd, data, len)) return -1;
    return 0;
}
#define reply(fd, status, data, len) reply_to(s, fd, status, data, len)

/* a connection that did not authenticate: one log line naming its address (the first 20,
 * then every 100th, so a port scan cannot flood the log) */
static void refuse(tlink_store_server *s, sclient *c, const char *why) {
    unsigned long n = ++s->refused;
    if (n <= 20 || n % 100 == 0)
        tl_log(TL_LOG_WARN, "store (port %d): refused the connection from %s: %s%s", s->port, c->name, why,
               n == 20 ? " (further refusals are logged every 100th)" : "");
}

static void drop_client(tlink_store_server *s, int i) {
    if (!s->detached) close(s->cl[i].fd);
    free(s->cl[i].buf);
    free(s->cl[i].wait_key);
    s->cl[i] = s->cl[--s->ncl];
}

/* returns -1 when the client must be dropped */
static int handle(tlink_store_server *s, sclient *c, int op, char *key, unsigned char *val, size_t vlen) {
    kv **pp = kv_find(s, key);
    switch (op) {
    case OP_SET: {
        kv *e = *pp;
        if (!e) {
            e = calloc(1, sizeof *e);
            if (!e) return reply(c->fd, RS_ERROR, "out of memory", 13);
            e->key = strdup(key);
            *pp = e;
        }
        free(e->val);
        e->val = malloc(vlen ? vlen : 1);
        memcpy(e->val, val, vlen);
        e->len = vlen;
        if (reply(c->fd, RS_OK, NULL, 0)) return -1;
        /* wake parked GETs */
        for (int i = 0; i < s->ncl; i++) {
            sclient *w = &s->cl[i];
            if (w->wait_key && !strcmp(w->wait_key, key)) {
                free(w->wait_key);
                w->wait_key = NULL;
                if (reply(w->fd, RS_OK, e->val, e->len)) { /* dropped on next poll error */ }
            }
        }
        return 0;
    }
    case OP_GET:
        if (*pp) return reply(c->fd, RS_OK, (*pp)->val, (*pp)->len);
        free(c->wait_key);
        c->wait_key = strdup(key);
        return 0;
    case OP_CHECK:
        return reply(c->fd, *pp ? RS_OK : RS_MISSING, NULL, 0);
    case OP_DELETE:
        if (*pp) {
            kv *e = *pp;
            *pp = e->next;
            free(e->key);
            free(e->val);
            free(e);
        }
        return reply(c->fd, RS_OK, NULL, 0);
    case OP_ADD: {
        if (vlen != 8) return reply(c->fd, RS_ERROR, "bad add", 7);
        int64_t delta, cur = 0;
        memcpy(&delta, val, 8);
        kv *e = *pp;
        if (!e) {
            e = calloc(1, sizeof *e);
            if (!e) return reply(c->fd, RS_ERROR, "out of memory", 13);
            e->key = strdup(key);
            *pp = e;
        } else if (e->len == 8) {
            memcpy(&cur, e->val, 8);
        }
        cur = (int64_t)((uint64_t)cur + (uint64_t)delta);
        free(e->val);
        e->val = malloc(8);
        memcpy(e->val, &cur, 8);
        e->len = 8;
        if (reply(c->fd, RS_OK, &cur, 8)) return -1;
        for (int i = 0; i < s->ncl; i++) {
            sclient *w = &s->cl[i];
            if (w->wait_key && !strcmp(w->wait_key, key)) {
                free(w->wait_key);
                w->wait_key = NULL;
                reply(w->fd, RS_OK, e->val, e->len);
            }
        }
        return 0;
    }
    case OP_PING:
        return reply(c->fd, RS_OK, NULL, 0);
    default:
        return -1;
    }
}

/* parse complete requests in c->buf; -1 to drop */
static int process(tlink_store_server *s, int ci) {
    sclient *c = &s->cl[ci];
    size_t off = 0;
    int rc = 0;
    while (c->state != CL_READY) {
        if (c->state == CL_AWAIT_HELLO) {
            if (c->len - off < 8) break;
            size_t hs = tl_auth_hello_size(c->buf + off, TL_AUTH_KIND_STORE);
            if (!hs) {
                refuse(s, c, "it did not start with the authentication handshake (a client without this job's "
                             "TLINK_SECRET, or not a TileLink client)");
                return -1;
            }
            if (c->len - off < hs) break;
            memcpy(c->hello, c->buf + off, hs);
            c->hlen = hs;
            off += hs;
            tl_auth_challenge(&s->key, c->hello, c->hlen, c->chal);
            if (s->sink(s->sink_ctx, c->fd, c->chal, sizeof c->chal)) return -1;
            c->state = CL_AWAIT_RESPONSE;
        } else {
            if (c->len - off < TL_AUTH_RESPONSE) break;
            if (tl_auth_check(&s->key, c->hello, c->hlen, c->chal, c->buf + off)) {
                refuse(s, c, "wrong authentication response (it does not know this job's TLINK_SECRET)");
                return -1;
            }
            off += TL_AUTH_RESPONSE;
            c->state = CL_READY;
            tl_log(TL_LOG_DEBUG, "store: %s authenticated", c->name);
        }
    }
    while (c->state == CL_READY && c->len - off >= HDR_SIZE && !c->wait_key) {
        unsigned char *h = c->buf + off;
        int op = h[0];
        uint32_t klen = get_u32(h + 1);
        uint64_t vlen = get_u64(h + 5);
        if (klen == 0 || klen > MAX_KEY || vlen > MAX_VAL) { rc = -1; break; }
        if (c->len - off < HDR_SIZE + klen + vlen) break;
        char key[MAX_KEY + 1];
        memcpy(key, h + HDR_SIZE, klen);
        key[klen] = 0;
        off += HDR_SIZE + klen + vlen;
        if (handle(s, c, op, key, h + HDR_SIZE + klen, vlen)) { rc = -1; break; }
        c = &s->cl[ci];
    }
    if (off) {
        memmove(c->buf, c->buf + off, c->len - off);
        c->len -= off;
    }
    return rc;
}

static void *server_main(void *arg) {
    tlink_store_server *s = arg;
    struct pollfd *pf = NULL;
    int pfcap = 0;
    for (;;) {
        int n = s->ncl + 2;
        if (n > pfcap) {
            pfcap = n * 2;
            pf = realloc(pf, sizeof *pf * (size_t)pfcap);
        }
        pf[0] = (struct pollfd){s->wake[0], POLLIN, 0};
        pf[1] = (struct pollfd){s->listen_fd, POLLIN, 0};
        /* clients still in the handshake are dropped after HANDSHAKE_S */
        int pending = 0;
        double now = tl_now();
        for (int i = s->ncl - 1; i >= 0; i--) {
            if (s->cl[i].state == CL_READY) continue;
            if (now - s->cl[i].since > HANDSHAKE_S) {
                refuse(s, &s->cl[i], "it did not complete the authentication handshake in time");
                drop_client(s, i);
                n = s->ncl + 2;
                continue;
            }
            pending = 1;
        }
        for (int i = 0; i < s->ncl; i++) pf[i + 2] = (struct pollfd){s->cl[i].fd, POLLIN, 0};
        int rc = poll(pf, (nfds_t)n, pending ? 1000 : -1);
        if (rc < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (pf[0].revents) break;
        /* clients first (indices stay valid: drops go from the back) */
        for (int i = n - 3; i >= 0; i--) {
            if (!pf[i + 2].revents) continue;
            sclient *c = &s->cl[i];
            if (c->cap - c->len < 65536) {
                size_t nc = c->cap ? c->cap * 2 : 131072;
                unsigned char *nb = realloc(c->buf, nc);
                if (!nb) { drop_client(s, i); continue; }
                c->buf = nb;
                c->cap = nc;
            }
            ssize_t r = recv(c->fd, c->buf + c->len, c->cap - c->len, MSG_DONTWAIT);
            if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
                if (c->state != CL_READY)
                    tl_log(TL_LOG_INFO, "store (port %d): %s closed its connection during the authentication handshake",
                           s->port, c->name);
                drop_client(s, i);
                continue;
            }
            if (r > 0) c->len += (size_t)r;
            if (process(s, i)) drop_client(s, i);
        }
        if (pf[1].revents & POLLIN) {
            int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
            if (fd >= 0) {
                int one = 1;
                setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                if (s->ncl == s->capcl) {
                    s->capcl = s->capcl ? s->capcl * 2 : 16;
                    s->cl = realloc(s->cl, sizeof *s->cl * (size_t)s->capcl);
                }
                sclient *nc = &s->cl[s->ncl++];
                memset(nc, 0, sizeof *nc);
                nc->fd = fd;
                nc->state = s->auth ? CL_AWAIT_HELLO : CL_READY;
                nc->since = tl_now();
                tl_peer_name(fd, nc->name, sizeof nc->name);
            }
        }
    }
    free(pf);
    return NULL;
}

tlink_status tlink_store_server_start(const char *bind_addr, int port, tlink_store_server **out) {
    if (!out || port < 0 || port > 65535) return TLINK_ERR_INVALID_ARG;
    *out = NULL;
    tlink_store_server *s = calloc(1, sizeof *s);
    if (!s) return TLINK_ERR_NO_MEMORY;
    s->sink = sock_sink;
    char aerr[300];
    int a = tl_auth_load(&s->key, aerr, sizeof aerr);
    if (a < 0) {
        tl_set_thread_error("store: %s", aerr);
        free(s);
        return TLINK_ERR_INVALID_ARG;
    }
    s->auth = a;
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_ANY);
    if (bind_addr && *bind_addr && inet_pton(AF_INET, bind_addr, &sa.sin_addr) != 1) {
        tl_set_thread_error("store: bad bind address '%s' (IPv4 dotted quad expected)", bind_addr);
        free(s);
        return TLINK_ERR_INVALID_ARG;
    }
    s->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(s->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (s->listen_fd < 0 || bind(s->listen_fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        listen(s->listen_fd, 1024) != 0) {
        int e = errno;
        tl_set_thread_error("store: cannot listen on %s:%d: %s", bind_addr ? bind_addr : "0.0.0.0", port, strerror(e));
        if (s->listen_fd >= 0) close(s->listen_fd);
        free(s);
        return e == EADDRINUSE ? TLINK_ERR_BOOTSTRAP : TLINK_ERR_SYSTEM;
    }
    socklen_t sl = sizeof sa;
    getsockname(s->listen_fd, (struct sockaddr *)&sa, &sl);
    s->port = ntohs(sa.sin_port);
    if (pipe2(s->wake, O_CLOEXEC) != 0) {
        close(s->listen_fd);
        free(s);
        return TLINK_ERR_SYSTEM;
    }
    atomic_store(&s->refs, 1);
    if (pthread_create(&s->thr, NULL, server_main, s) != 0) {
        close(s->listen_fd);
        close(s->wake[0]);
        close(s->wake[1]);
        free(s);
        return TLINK_ERR_SYSTEM;
    }
    tl_log(TL_LOG_INFO, "store server listening on %s:%d%s", bind_addr && *bind_addr ? bind_addr : "0.0.0.0", s->port,
           s->auth ? " (authenticated: TLINK_SECRET)" : "");
    if (!s->auth && (ntohl(sa.sin_addr.s_addr) >> 24) != 127)
        tl_log(TL_LOG_WARN, "store: listening on %s:%d without authentication: any process that reaches this port "
                            "can join or disturb the job; set TLINK_SECRET or TLINK_SECRET_FILE (tile launch sets one)",
               bind_addr && *bind_addr ? bind_addr : "0.0.0.0", s->port);
    *out = s;
    return TLINK_OK;
}

int tlink_store_server_port(const tlink_store_server *s) { return s ? s->port : -1; }
void tl_store_server_ref(tlink_store_server *s) { if (s) atomic_fetch_add(&s->refs, 1); }

tlink_status tlink_store_server_stop(tlink_store_server *s) {
    if (!s) return TLINK_OK;
    if (atomic_fetch_sub(&s->refs, 1) > 1) return TLINK_OK;
    char b = 1;
    ssize_t w = write(s->wake[1], &b, 1);
    (void)w;
    pthread_join(s->thr, NULL);
    close(s->wake[0]);
    close(s->wake[1]);
    close(s->listen_fd);
    while (s->ncl) drop_client(s, s->ncl - 1);
    free(s->cl);
    for (int i = 0; i < NBUCKET; i++) {
        for (kv *e = s->tab[i], *nx; e; e = nx) {
            nx = e->next;
            free(e->key);
            free(e->val);
            free(e);
        }
    }
    free(s);
    return TLINK_OK;
}

/* ---------- for the fuzz harness (fuzz/fuzz_store.c) ----------
 * A server without a thread or a listener: the harness adds clients by (any) fd, feeds their
 * bytes and sees the replies through sink. The same request parser and handshake as the real
 * server, so the harness exercises exactly what a connection reaches. */
tlink_store_server *tl_store_server_detached(const tl_hmac_key *key,
                                             int (*sink)(void *ctx, int fd, const void *data, size_t len),
                                             void *ctx) {
    tlink_store_server *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->detached = 1;
    s->listen_fd = s->wake[0] = s->wake[1] = -1;
    s->sink = sink;
    s->sink_ctx = ctx;
    if (key) {
        s->auth = 1;
        s->key = *key;
    }
    return s;
}

int tl_store_server_add_client(tlink_store_server *s, int fd) {
    if (s->ncl == s->capcl) {
        int nc = s->capcl ? s->capcl * 2 : 16;
        sclient *n = realloc(s->cl, sizeof *s->cl * (size_t)nc);
        if (!n) return -1;
        s->cl = n;
        s->capcl = nc;
    }
    sclient *c = &s->cl[s->ncl++];
    memset(c, 0, sizeof *c);
    c->fd = fd;
    c->state = s->auth ? CL_AWAIT_HELLO : CL_READY;
    c->since = tl_now();
    snprintf(c->name, sizeof c->name, "fd %d", fd);
    return 0;
}

/* bytes from client fd, as the poll loop would hand them over: 0, or -1 when the server drops
 * the client (then it is gone) */
int tl_store_server_feed(tlink_store_server *s, int fd, const void *data, size_t n) {
    int i = 0;
    while (i < s->ncl && s->cl[i].fd != fd) i++;
    if (i == s->ncl) return -1;
    sclient *c = &s->cl[i];
    if (c->cap - c->len < n) {
        size_t nc = c->cap ? c->cap : 4096;
        while (nc - c->len < n) nc *= 2;
        unsigned char *nb = realloc(c->buf, nc);
        if (!nb) { drop_client(s, i); return -1; }
        c->buf = nb;
        c->cap = nc;
    }
    memcpy(c->buf + c->len, data, n);
    c->len += n;
    if (process(s, i)) {
        drop_client(s, i);
        return -1;
    }
    return 0;
}

void tl_store_server_free(tlink_store_server *s) {
    if (!s) return;
    while (s->ncl) drop_client(s, s->ncl - 1);
    free(s->cl);
    for (int i = 0; i < NBUCKET; i++) {
        for (kv *e = s->tab[i], *nx; e; e = nx) {
            nx = e->next;
            free(e->key);
            free(e->val);
            free(e);
        }
    }
    free(s);
}

/* ---------- client ---------- */
struct tlink_store {
    int fd;
    char host[256];
    int port;
    char addr[300];
    pthread_mutex_t mu;
    char err[1024];
    int auth;                   /* prove the job secret on every (re)connection */
    tl_hmac_key key;
};

/* The client's half of the handshake (auth.c) on a fresh connection: 0, or -1 with err set.
 * The response goes out before the store's proof is checked, so a store that knows the secret
 * always sees, and logs, a client with the wrong one. */
static int client_handshake(tlink_store *s, int fd, double deadline, char *err, size_t errlen) {
    unsigned char hello[TL_AUTH_HELLO_MAX], chal[TL_AUTH_CHALLENGE], resp[TL_AUTH_RESPONSE];
    size_t hl = tl_auth_hello(hello, TL_AUTH_KIND_STORE, NULL, 0);
    if (write_all(fd, hello, hl)) {
        snprintf(err, errlen, "store %s: connection lost during authentication (%s)", s->addr, strerror(errno));
        return -1;
    }
    int rc = read_all(fd, chal, sizeof chal, TL_MIN(deadline, tl_now() + 10.0));
    if (rc) {
        snprintf(err, errlen,
                 rc == -2 ? "store %s: no answer to the authentication handshake (is it a TileLink store?)"
                          : "store %s: closed the connection during authentication: it was started without "
                            "TLINK_SECRET, or it is not a TileLink store",
                 s->addr);
        return -1;
    }
    int ok = tl_auth_respond(&s->key, hello, hl, chal, resp) == 0;
    if (write_all(fd, resp, sizeof resp)) {
        snprintf(err, errlen, "store %s: connection lost during authentication", s->addr);
        return -1;
    }
    if (!ok) {
        snprintf(err, errlen,
                 "store %s: authentication failed: the store does not prove that it knows this job's secret "
                 "(a different TLINK_SECRET there, or another program on that port)",
                 s->addr);
        return -1;
    }
    return 0;
}

static int store_dial(tlink_store *s, double deadline, char *err, size_t errlen) {
    int fd = tl_tcp_connect(s->host, s->port, deadline, err, errlen);
    if (fd < 0) return -1;
    if (s->auth && client_handshake(s, fd, deadline, err, errlen)) {
        close(fd);
        return -1;
    }
    return fd;
}

/* requests that the server answers at once: bounded by 30 s, or TLINK_TIMEOUT when shorter
 * (a store host cut off must not hold a failing rank longer than its deadline) */
static double op_timeout(void) { return TL_MIN(30.0, tl_default_timeout()); }

int tl_store_fd(const tlink_store *s) { return s ? s->fd : -1; }
const char *tl_store_addr(const tlink_store *s) { return s ? s->addr : ""; }
const char *tlink_store_last_error(const tlink_store *s) { return s ? s->err : tl_thread_error(); }

tlink_status tlink_store_connect(const char *addr, double timeout_s, tlink_store **out) {
    if (!out || !addr) return TLINK_ERR_INVALID_ARG;
    *out = NULL;
    tlink_store *s = calloc(1, sizeof *s);
    if (!s) return TLINK_ERR_NO_MEMORY;
    if (tl_parse_hostport(addr, s->host, sizeof s->host, &s->port)) {
        tl_set_thread_error("store address '%s' is not host:port", addr);
        free(s);
        return TLINK_ERR_INVALID_ARG;
    }
    snprintf(s->addr, sizeof s->addr, "%s", addr);
    if (timeout_s <= 0) timeout_s = tl_default_timeout();
    char err[640];
    int a = tl_auth_load(&s->key, err, sizeof err);
    if (a < 0) {
        tl_set_thread_error("store: %s", err);
        free(s);
        return TLINK_ERR_INVALID_ARG;
    }
    s->auth = a;
    double t0 = tl_now();
    s->fd = store_dial(s, t0 + timeout_s, err, sizeof err);
    if (s->fd < 0) {
        if (strncmp(err, "store ", 6)) tl_set_thread_error("store: %s (after %.1f s)", err, tl_now() - t0);
        else tl_set_thread_error("%s", err);
        free(s);
        return TLINK_ERR_BOOTSTRAP;
    }
    pthread_mutex_init(&s->mu, NULL);
    *out = s;
    return TLINK_OK;
}

/* for the fuzz harness: a client on a connected fd (key: authenticate on it first); the host
 * it would reconnect to refuses at once */
tlink_store *tl_store_client_on_fd(int fd, const tl_hmac_key *key, char *err, size_t errlen) {
    tlink_store *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    snprintf(s->host, sizeof s->host, "127.0.0.1");
    s->port = 1;
    snprintf(s->addr, sizeof s->addr, "harness");
    pthread_mutex_init(&s->mu, NULL);
    if (key) {
        s->auth = 1;
        s->key = *key;
        if (client_handshake(s, fd, tl_now() + 2, err, errlen)) {
            close(fd);
            s->fd = -1;
            return s;
        }
    }
    s->fd = fd;
    return s;
}

void tlink_store_close(tlink_store *s) {
    if (!s) return;
    if (s->fd >= 0) close(s->fd);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static tlink_status reconnect(tlink_store *s) {
    if (s->fd >= 0) return TLINK_OK;
    char err[640];
    s->fd = store_dial(s, tl_now() + 5, err, sizeof err);
    if (s->fd < 0) {
        if (strncmp(err, "store ", 6)) snprintf(s->err, sizeof s->err, "store %s: %s", s->addr, err);
        else snprintf(s->err, sizeof s->err, "%s", err);
        return TLINK_ERR_BOOTSTRAP;
    }
    return TLINK_OK;
}

/* one request/response; *resp malloc'd when non-NULL */
static tlink_status rpc(tlink_store *s, int op, const char *key, const void *val, size_t vlen,
                        double timeout_s, int *status, void **resp, size_t *rlen) {
    size_t klen = strlen(key);
    if (klen == 0 || klen > MAX_KEY || vlen > MAX_VAL) {
        snprintf(s->err, sizeof s->err, "store: key or value too long");
        return TLINK_ERR_INVALID_ARG;
    }
    pthread_mutex_lock(&s->mu);
    tlink_status st = reconnect(s);
    if (st) { pthread_mutex_unlock(&s->mu); return st; }
    unsigned char h[HDR_SIZE];
    h[0] = (unsigned char)op;
    put_u32(h + 1, (uint32_t)klen);
    put_u64(h + 5, vlen);
    if (write_all(s->fd, h, HDR_SIZE) || write_all(s->fd, key, klen) || (vlen && write_all(s->fd, val, vlen))) {
        snprintf(s->err, sizeof s->err, "store %s: connection lost (%s)", s->addr, strerror(errno));
        close(s->fd);
        s->fd = -1;
        pthread_mutex_unlock(&s->mu);
        return TLINK_ERR_BOOTSTRAP;
    }
    unsigned char rh[9];
    double deadline = tl_now() + (timeout_s > 0 ? timeout_s : tl_default_timeout());
    int rc = read_all(s->fd, rh, 9, deadline);
    if (rc == 0) {
        uint64_t len = get_u64(rh + 1);
        if (len > MAX_VAL) rc = -1;
        else {
            char *buf = malloc(len + 1);
            if (!buf) rc = -1;
            else if ((rc = read_all(s->fd, buf, len, deadline + 10)) == 0) {
                buf[len] = 0;
                *status = rh[0];
                if (resp) { *resp = buf; if (rlen) *rlen = len; }
                else free(buf);
            } else free(buf);
        }
    }
    if (rc) {
        if (rc == -2) snprintf(s->err, sizeof s->err, "store %s: timed out waiting for key '%s'", s->addr, key);
        else
            snprintf(s->err, sizeof s->err, "store %s: connection lost%s", s->addr,
                     s->auth ? "" : " (the store went away, or it requires authentication and this process has no "
                                    "TLINK_SECRET)");
        close(s->fd); /* a pending reply would desynchronise the stream */
        s->fd = -1;
        pthread_mutex_unlock(&s->mu);
        return rc == -2 ? TLINK_ERR_TIMEOUT : TLINK_ERR_BOOTSTRAP;
    }
    pthread_mutex_unlock(&s->mu);
    return TLINK_OK;
}

tlink_status tlink_store_set(tlink_store *s, const char *key, const void *val, size_t len) {
    if (!s || !key || (len && !val)) return TLINK_ERR_INVALID_ARG;
    int status;
    tlink_status st = rpc(s, OP_SET, key, val, len, op_timeout(), &status, NULL, NULL);
    if (st == TLINK_OK && status != RS_OK) st = TLINK_ERR_BOOTSTRAP;
    return st;
}

tlink_status tlink_store_get(tlink_store *s, const char *key, void **val, size_t *len, double timeout_s) {
    if (!s || !key || !val) return TLINK_ERR_INVALID_ARG;
    *val = NULL;
    int status;
    size_t l = 0;
    tlink_status st = rpc(s, OP_GET, key, NULL, 0, timeout_s, &status, val, &l);
    if (st == TLINK_OK && status != RS_OK) { free(*val); *val = NULL; st = TLINK_ERR_BOOTSTRAP; }
    if (len) *len = l;
    return st;
}

tlink_status tlink_store_add(tlink_store *s, const char *key, int64_t delta, int64_t *result) {
    if (!s || !key) return TLINK_ERR_INVALID_ARG;
    int status;
    void *resp = NULL;
    size_t l = 0;
    tlink_status st = rpc(s, OP_ADD, key, &delta, 8, op_timeout(), &status, &resp, &l);
    if (st == TLINK_OK) {
        if (status != RS_OK || l != 8) st = TLINK_ERR_BOOTSTRAP;
        else if (result) memcpy(result, resp, 8);
    }
    free(resp);
    return st;
}

tlink_status tlink_store_check(tlink_store *s, const char *key, int *exists) {
    if (!s || !key || !exists) return TLINK_ERR_INVALID_ARG;
    int status;
    tlink_status st = rpc(s, OP_CHECK, key, NULL, 0, op_timeout(), &status, NULL, NULL);
    *exists = (st == TLINK_OK && status == RS_OK);
    return st;
}

tlink_status tlink_store_delete(tlink_store *s, const char *key) {
    if (!s || !key) return TLINK_ERR_INVALID_ARG;
    int status;
    return rpc(s, OP_DELETE, key, NULL, 0, op_timeout(), &status, NULL, NULL);
}

tlink_status tlink_store_wait(tlink_store *s, const char *const *keys, int n, double timeout_s) {
    if (!s || (n && !keys)) return TLINK_ERR_INVALID_ARG;
    double deadline = tl_now() + (timeout_s > 0 ? timeout_s : tl_default_timeout());
    for (int i = 0; i < n; i++) {
        void *v = NULL;
        double left = deadline - tl_now();
        if (left < 0.001) left = 0.001;
        tlink_status st = tlink_store_get(s, keys[i], &v, NULL, left);
        free(v);
        if (st == TLINK_ERR_TIMEOUT) {
            char msg[480];
            int off = snprintf(msg, sizeof msg, "store %s: timed out after %.1f s; missing keys:", s->addr,
                               timeout_s);
            int shown = 0;
            for (int j = i; j < n && off < (int)sizeof msg - 40; j++) {
                int ex = 0;
                if (tlink_store_check(s, keys[j], &ex) == TLINK_OK && ex) continue;
                off += snprintf(msg + off, sizeof msg - (size_t)off, " %s", keys[j]);
                shown++;
            }
            (void)shown;
            snprintf(s->err, sizeof s->err, "%s", msg);
            return st;
        }
        if (st) return st;
    }
    return TLINK_OK;
}
