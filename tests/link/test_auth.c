/* test_auth.c — authentication (auth.c, store.c, transport.c):
 *  1. SHA-256 against FIPS 180-2's examples (also fed in pieces), HMAC-SHA-256 against RFC 4231's
 *     seven test cases;
 *  2. the store with a secret: the right secret works; a client with another one, a client
 *     without one, a raw TCP client and a replayed handshake are refused, each with a log line
 *     naming its address, none of them writes a key, and the store keeps serving;
 *  3. the transport handshake as a state machine: a plain hello, a wrong response, a replay, a
 *     wrong communicator, garbage — refused; the right exchange accepted;
 *  4. a 3-rank job over TCP with a secret while an attacker connects to a rank's listener
 *     during bootstrap (garbage, a plain hello posing as rank 0, an authenticated hello with
 *     the wrong key, a silent connection): every attempt refused and logged, the job's
 *     all-reduce correct; a rank that first tries the wrong secret fails clearly and its
 *     second attempt with the right one completes the job;
 *  5. without a secret: a store on all interfaces warns; rank 0's store listens on loopback when
 *     the store address is loopback, and when every rank is local (the address is rewritten).
 * Usage: test_auth [unit|store|job|bind] (all by default). */
#include "tl_launch.h"
#include "tl_internal.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <poll.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <sys/socket.h>

static int fails;
#define EXPECT(cond, ...)                                                   \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fails++;                                                        \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                     \
            printf(__VA_ARGS__);                                            \
            printf("\n");                                                   \
            fflush(stdout);                                                 \
        }                                                                   \
    } while (0)

static void hex(const unsigned char *b, size_t n, char *out) {
    for (size_t i = 0; i < n; i++) sprintf(out + 2 * i, "%02x", b[i]);
}

/* ---------- 1. vectors ---------- */
static void test_vectors(void) {
    static const struct { const char *msg; const char *digest; } sha[] = {
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
    };
    unsigned char d[32];
    char h[65];
    for (size_t i = 0; i < sizeof sha / sizeof sha[0]; i++) {
        size_t n = strlen(sha[i].msg);
        tl_sha256_sum(sha[i].msg, n, d);
        hex(d, 32, h);
        EXPECT(!strcmp(h, sha[i].digest), "sha256(\"%s\") = %s", sha[i].msg, h);
        /* the same message in pieces of every size */
        for (size_t piece = 1; piece < n; piece += 7) {
            tl_sha256 s;
            tl_sha256_init(&s);
            for (size_t o = 0; o < n; o += piece) tl_sha256_update(&s, sha[i].msg + o, TL_MIN(piece, n - o));
            tl_sha256_final(&s, d);
            hex(d, 32, h);
            EXPECT(!strcmp(h, sha[i].digest), "sha256 in pieces of %zu", piece);
        }
    }
    /* one million 'a' */
    tl_sha256 s;
    tl_sha256_init(&s);
    char a[1000];
    memset(a, 'a', sizeof a);
    for (int i = 0; i < 1000; i++) tl_sha256_update(&s, a, sizeof a);
    tl_sha256_final(&s, d);
    hex(d, 32, h);
    EXPECT(!strcmp(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"), "sha256(a x 1e6) = %s", h);

    /* RFC 4231, test cases 1-7 */
    unsigned char k20b[20], k20a[20], k25[25], k20c[20], k131[131], dd[50], cd[50];
    memset(k20b, 0x0b, 20);
    memset(k20a, 0xaa, 20);
    for (int i = 0; i < 25; i++) k25[i] = (unsigned char)(i + 1);
    memset(k20c, 0x0c, 20);
    memset(k131, 0xaa, 131);
    memset(dd, 0xdd, 50);
    memset(cd, 0xcd, 50);
    static const char m6[] = "Test Using Larger Than Block-Size Key - Hash Key First";
    static const char m7[] = "This is a test using a larger than block-size key and a larger than block-size data. "
                             "The key needs to be hashed before being used by the HMAC algorithm.";
    const struct { const void *key; size_t klen; const void *msg; size_t mlen; size_t outlen; const char *mac; } rfc[] = {
        {k20b, 20, "Hi There", 8, 32, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"},
        {"Jefe", 4, "what do ya want for nothing?", 28, 32,
         "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
        {k20a, 20, dd, 50, 32, "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"},
        {k25, 25, cd, 50, 32, "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"},
        {k20c, 20, "Test With Truncation", 20, 16, "a3b6167473100ee06e0c796c2955552b"},
        {k131, 131, m6, sizeof m6 - 1, 32, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"},
        {k131, 131, m7, sizeof m7 - 1, 32, "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"},
    };
    for (size_t i = 0; i < sizeof rfc / sizeof rfc[0]; i++) {
        tl_hmac_sha256(rfc[i].key, rfc[i].klen, rfc[i].msg, rfc[i].mlen, d);
        hex(d, rfc[i].outlen, h);
        EXPECT(!strcmp(h, rfc[i].mac), "RFC 4231 case %zu: %s", i + 1, h);
    }
    unsigned char x[4] = {1, 2, 3, 4}, y[4] = {1, 2, 3, 5};
    EXPECT(tl_ct_equal(x, x, 4) && !tl_ct_equal(x, y, 4), "constant-time compare");
}

/* ---------- helpers ---------- */
static int raw_connect(int port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) { close(fd); return -1; }
    return fd;
}
static int raw_addr_connect(const char *hostport) {
    char host[128];
    int port;
    if (tl_parse_hostport(hostport, host, sizeof host, &port)) return -1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {0};
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    inet_pton(AF_INET, host, &sa.sin_addr);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) { close(fd); return -1; }
    return fd;
}
static int read_n(int fd, void *buf, size_t n, double timeout) {
    double end = tlt_now() + timeout;
    size_t got = 0;
    while (got < n && tlt_now() < end) {
        struct pollfd pf = {fd, POLLIN, 0};
        if (poll(&pf, 1, 100) <= 0) continue;
        ssize_t r = recv(fd, (char *)buf + got, n - got, 0);
        if (r <= 0) return (int)got;
        got += (size_t)r;
    }
    return (int)got;
}
/* 1 when the far end closed the connection within the timeout (after discarding any bytes) */
static int closed_by_peer(int fd, double timeout) {
    double end = tlt_now() + timeout;
    char b[256];
    while (tlt_now() < end) {
        struct pollfd pf = {fd, POLLIN, 0};
        if (poll(&pf, 1, 100) <= 0) continue;
        ssize_t r = recv(fd, b, sizeof b, 0);
        if (r <= 0) return 1;
    }
    return 0;
}
/* a store request: op, key, value */
static size_t store_req(unsigned char *out, int op, const char *key, const void *val, uint64_t vlen) {
    uint32_t kl = (uint32_t)strlen(key);
    out[0] = (unsigned char)op;
    memcpy(out + 1, &kl, 4);
    memcpy(out + 5, &vlen, 8);
    memcpy(out + 13, key, kl);
    memcpy(out + 13 + kl, val, vlen);
    return 13 + kl + vlen;
}

/* stderr into a file, to read the log lines back */
static int g_saved_err = -1;
static char g_logpath[128];
static void capture_start(const char *tag) {
    snprintf(g_logpath, sizeof g_logpath, "/tmp/tlink-test-auth-%d-%s.log", (int)getpid(), tag);
    fflush(stderr);
    g_saved_err = dup(2);
    int fd = open(g_logpath, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
    dup2(fd, 2);
    close(fd);
}
static char *capture_end(void) {
    fflush(stderr);
    dup2(g_saved_err, 2);
    close(g_saved_err);
    FILE *f = fopen(g_logpath, "r");
    char *buf = calloc(1, 1 << 20);
    if (f) {
        size_t n = fread(buf, 1, (1 << 20) - 1, f);
        buf[n] = 0;
        fclose(f);
    }
    unlink(g_logpath);
    fputs(buf, stderr); /* the log stays visible in the test output */
    return buf;
}
static int count_of(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

/* ---------- 2. the store ---------- */
static void test_store(void) {
    setenv("TLINK_SECRET", "store-test-secret-0123456789", 1);
    tl_hmac_key key;
    char err[200];
    EXPECT(tl_auth_load(&key, err, sizeof err) == 1, "secret loads");
    capture_start("store");
    tlink_store_server *srv;
    EXPECT(tlink_store_server_start("127.0.0.1", 0, &srv) == TLINK_OK, "server start");
    int port = tlink_store_server_port(srv);
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    tlink_store *s;
    EXPECT(tlink_store_connect(addr, 5, &s) == TLINK_OK, "connect with the secret");
    EXPECT(tlink_store_set(s, "k", "v1", 2) == TLINK_OK, "set");

    /* another secret */
    setenv("TLINK_SECRET", "some-other-secret-9876543210", 1);
    tlink_store *bad = NULL;
    EXPECT(tlink_store_connect(addr, 2, &bad) == TLINK_ERR_BOOTSTRAP, "wrong secret refused");
    EXPECT(strstr(tlink_last_error(NULL), "authentication failed"), "wrong secret message: %s", tlink_last_error(NULL));
    /* no secret: the connection is accepted by TCP, then dropped at the first request */
    unsetenv("TLINK_SECRET");
    EXPECT(tlink_store_connect(addr, 2, &bad) == TLINK_OK, "connect without a secret (TCP)");
    if (bad) {
        EXPECT(tlink_store_set(bad, "k", "evil", 4) != TLINK_OK, "request without a secret refused");
        EXPECT(strstr(tlink_store_last_error(bad), "TLINK_SECRET"), "its message names TLINK_SECRET: %s",
               tlink_store_last_error(bad));
        tlink_store_close(bad);
    }
    setenv("TLINK_SECRET", "store-test-secret-0123456789", 1);

    /* a raw client: an HTTP request */
    int fd = raw_connect(port);
    const char http[] = "GET / HTTP/1.0\r\n\r\n";
    EXPECT(fd >= 0 && send(fd, http, sizeof http - 1, 0) > 0, "raw send");
    EXPECT(closed_by_peer(fd, 3), "raw client dropped");
    close(fd);

    /* a legitimate handshake by hand, recorded, then replayed on a new connection */
    unsigned char hello[TL_AUTH_HELLO_MAX], chal[TL_AUTH_CHALLENGE], resp[TL_AUTH_RESPONSE], req[256];
    size_t hl = tl_auth_hello(hello, TL_AUTH_KIND_STORE, NULL, 0);
    fd = raw_connect(port);
    EXPECT(send(fd, hello, hl, 0) == (ssize_t)hl, "hello");
    EXPECT(read_n(fd, chal, sizeof chal, 3) == (int)sizeof chal, "challenge");
    EXPECT(tl_auth_respond(&key, hello, hl, chal, resp) == 0, "the store proves the secret");
    size_t rl = store_req(req, 1 /* set */, "by-hand", "ok", 2);
    EXPECT(send(fd, resp, sizeof resp, 0) == (ssize_t)sizeof resp && send(fd, req, rl, 0) == (ssize_t)rl, "respond + set");
    unsigned char rh[9];
    EXPECT(read_n(fd, rh, 9, 3) == 9 && rh[0] == 0, "authenticated set answered");
    close(fd);
    fd = raw_connect(port);
    rl = store_req(req, 1, "replayed", "evil", 4);
    EXPECT(send(fd, hello, hl, 0) == (ssize_t)hl, "replayed hello");
    unsigned char chal2[TL_AUTH_CHALLENGE];
    EXPECT(read_n(fd, chal2, sizeof chal2, 3) == (int)sizeof chal2, "second challenge");
    EXPECT(memcmp(chal, chal2, sizeof chal), "a fresh nonce for every connection");
    send(fd, resp, sizeof resp, MSG_NOSIGNAL); /* the recorded response */
    send(fd, req, rl, MSG_NOSIGNAL);
    EXPECT(closed_by_peer(fd, 3), "replayed handshake dropped");
    close(fd);
    /* a silent connection does not hold the store up */
    int silent = raw_connect(port);

    /* the store is unaffected: the legitimate client still works, no attacker wrote a key */
    void *v = NULL;
    size_t len = 0;
    EXPECT(tlink_store_get(s, "k", &v, &len, 2) == TLINK_OK && len == 2 && !memcmp(v, "v1", 2), "k unchanged");
    tlink_free(v);
    int ex = 1;
    EXPECT(tlink_store_check(s, "replayed", &ex) == TLINK_OK && !ex, "the replayed set was not applied");
    EXPECT(tlink_store_check(s, "by-hand", &ex) == TLINK_OK && ex, "the hand-made client's set was applied");
    close(silent);
    tlink_store_close(s);
    tlink_store_server_stop(srv);
    char *log = capture_end();
    char want[64];
    snprintf(want, sizeof want, "store (port %d): refused the connection from 127.0.0.1:", port);
    EXPECT(count_of(log, want) == 4, "4 refusals logged with the address (wrong secret, none, raw, replay), got %d",
           count_of(log, want));
    EXPECT(strstr(log, "wrong authentication response") && strstr(log, "did not start with the authentication handshake"),
           "the reasons are logged");
    free(log);

    /* a secret file: read, trailing newline dropped, same key as the variable */
    unsetenv("TLINK_SECRET");
    char path[96];
    snprintf(path, sizeof path, "/tmp/tlink-test-secret-%d", (int)getpid());
    FILE *f = fopen(path, "w");
    fprintf(f, "store-test-secret-0123456789\n");
    fclose(f);
    chmod(path, 0600);
    setenv("TLINK_SECRET_FILE", path, 1);
    tl_hmac_key k2;
    unsigned char m1[32], m2[32];
    tl_hmac hm;
    EXPECT(tl_auth_load(&k2, err, sizeof err) == 1, "secret file loads: %s", err);
    tl_hmac_start(&hm, &key);
    tl_hmac_update(&hm, "m", 1);
    tl_hmac_final(&hm, m1);
    tl_hmac_start(&hm, &k2);
    tl_hmac_update(&hm, "m", 1);
    tl_hmac_final(&hm, m2);
    EXPECT(!memcmp(m1, m2, 32), "secret file = variable");
    unlink(path);
    EXPECT(tl_auth_load(&k2, err, sizeof err) == -1 && strstr(err, "TLINK_SECRET_FILE"), "missing file: %s", err);
    EXPECT(tlink_store_server_start("127.0.0.1", 0, &srv) == TLINK_ERR_INVALID_ARG, "server refuses to start");
    unsetenv("TLINK_SECRET_FILE");
}

/* ---------- 3. the transport handshake, without sockets ---------- */
static int feed_all(tl_hs_accept *h, const unsigned char *in, size_t n, unsigned char *out, size_t *olen) {
    int rc = TL_HS_MORE;
    size_t o = 0;
    *olen = 0;
    while (o < n && rc == TL_HS_MORE) {
        size_t need = tl_hs_accept_need(h);
        size_t take = TL_MIN(need, n - o);
        size_t ol = 0;
        rc = tl_hs_accept_feed(h, in + o, take, out, &ol);
        if (ol) *olen = ol;
        o += take;
        if (rc == TL_HS_SEND) rc = o < n ? TL_HS_MORE : TL_HS_SEND;
    }
    return rc;
}

static void test_handshake(void) {
    tl_hmac_key key, other;
    tl_hmac_key_init(&key, "the-job-secret", 14);
    tl_hmac_key_init(&other, "not-the-secret", 14);
    const uint64_t comm = 0x1234;
    struct { int32_t rank, stream; uint64_t comm_id; } ctx = {0, 1, comm};
    unsigned char hello[TL_AUTH_HELLO_MAX], out[TL_AUTH_CHALLENGE], resp[TL_AUTH_RESPONSE];
    size_t hl = tl_auth_hello(hello, TL_AUTH_KIND_TRANSPORT, &ctx, sizeof ctx), ol;
    tl_hs_accept h;
    /* the right exchange, fed one byte at a time */
    tl_hs_accept_init(&h, &key, comm, 2, 2);
    int rc = TL_HS_MORE;
    for (size_t i = 0; i < hl; i++) rc = tl_hs_accept_feed(&h, hello + i, 1, out, &ol);
    EXPECT(rc == TL_HS_SEND && ol == TL_AUTH_CHALLENGE, "challenge after the hello (rc %d)", rc);
    EXPECT(tl_auth_respond(&key, hello, hl, out, resp) == 0, "acceptor proves the key");
    unsigned char chal1[TL_AUTH_CHALLENGE];
    memcpy(chal1, out, sizeof out);
    rc = feed_all(&h, resp, sizeof resp, out, &ol);
    EXPECT(rc == TL_HS_DONE && h.rank == 0 && h.stream == 1, "accepted as rank 0 stream 1 (rc %d)", rc);
    /* replay of the same hello and response to a fresh acceptor */
    tl_hs_accept_init(&h, &key, comm, 2, 2);
    rc = feed_all(&h, hello, hl, out, &ol);
    EXPECT(rc == TL_HS_SEND && memcmp(out, chal1, sizeof chal1), "fresh challenge");
    rc = feed_all(&h, resp, sizeof resp, out, &ol);
    EXPECT(rc == TL_HS_REFUSED && strstr(h.why, "wrong authentication"), "replay refused (rc %d)", rc);
    /* the wrong key */
    tl_hs_accept_init(&h, &key, comm, 2, 2);
    rc = feed_all(&h, hello, hl, out, &ol);
    EXPECT(tl_auth_respond(&other, hello, hl, out, resp) != 0, "connector with another key sees the acceptor fail");
    rc = feed_all(&h, resp, sizeof resp, out, &ol);
    EXPECT(rc == TL_HS_REFUSED, "wrong key refused");
    /* a plain hello where a secret is set, and the other way round */
    struct { uint32_t magic; int32_t rank, stream, pad; uint64_t comm_id; } ph = {0x544c4b48u, 0, 0, 0, comm};
    tl_hs_accept_init(&h, &key, comm, 2, 2);
    rc = feed_all(&h, (unsigned char *)&ph, sizeof ph, out, &ol);
    EXPECT(rc == TL_HS_REFUSED && strstr(h.why, "did not authenticate"), "plain hello refused with a secret");
    tl_hs_accept_init(&h, NULL, comm, 2, 2);
    rc = feed_all(&h, (unsigned char *)&ph, sizeof ph, out, &ol);
    EXPECT(rc == TL_HS_DONE && h.rank == 0 && h.stream == 0, "plain hello accepted without a secret");
    tl_hs_accept_init(&h, NULL, comm, 2, 2);
    rc = feed_all(&h, hello, hl, out, &ol);
    EXPECT(rc == TL_HS_REFUSED && strstr(h.why, "has none"), "authenticated hello refused without a secret");
    /* claims that do not fit */
    ph.comm_id = comm + 1;
    tl_hs_accept_init(&h, NULL, comm, 2, 2);
    EXPECT(feed_all(&h, (unsigned char *)&ph, sizeof ph, out, &ol) == TL_HS_REFUSED, "other communicator");
    ph.comm_id = comm;
    ph.rank = 2;
    tl_hs_accept_init(&h, NULL, comm, 2, 2);
    EXPECT(feed_all(&h, (unsigned char *)&ph, sizeof ph, out, &ol) == TL_HS_REFUSED, "rank out of range");
    ph.rank = 1;
    ph.stream = 2;
    tl_hs_accept_init(&h, NULL, comm, 2, 2);
    EXPECT(feed_all(&h, (unsigned char *)&ph, sizeof ph, out, &ol) == TL_HS_REFUSED, "stream out of range");
    tl_hs_accept_init(&h, &key, comm, 2, 2);
    EXPECT(feed_all(&h, (const unsigned char *)"GET / HTTP/1.1\r\n", 16, out, &ol) == TL_HS_REFUSED, "garbage");
}

/* ---------- 4. a job under attack ---------- */
static int job_main(int rank, int nproc, const char *addr, void *arg) {
    (void)arg;
    const int size = nproc - 1; /* the last process is the attacker */
    tlink_store *st;
    if (tlink_store_connect(addr, 10, &st)) return 10;
    if (rank == size) {
        /* the attacker (it knows the store's secret only to find the listener: a real one would
         * scan ports). Rank 2 registers its listener and then waits for rank 0. */
        void *v = NULL;
        size_t len = 0;
        if (tlink_store_get(st, "tlink/1/rank/2", &v, &len, 20)) return 11;
        char la[64] = "";
        for (size_t i = 0; i + 10 < len; i++)
            if (!memcmp((char *)v + i, "127.0.0.1:", 10)) { snprintf(la, sizeof la, "%s", (char *)v + i); break; }
        tlink_free(v);
        int fds[4];
        fds[0] = raw_addr_connect(la);
        send(fds[0], "GET / HTTP/1.1\r\n\r\n", 18, MSG_NOSIGNAL);
        struct { uint32_t magic; int32_t rank, stream, pad; uint64_t comm_id; } ph = {0x544c4b48u, 0, 0, 0, 0};
        fds[1] = raw_addr_connect(la);
        send(fds[1], &ph, sizeof ph, MSG_NOSIGNAL);
        /* an authenticated hello followed at once by a forged response (whoever lacks the key
         * cannot do better): all in the socket before rank 2 accepts, so rank 2 handles it
         * before the real connections, which arrive later in its backlog */
        struct { int32_t rank, stream; uint64_t comm_id; } ctx = {0, 0, 0};
        unsigned char hello[TL_AUTH_HELLO_MAX], resp[TL_AUTH_RESPONSE];
        size_t hl = tl_auth_hello(hello, TL_AUTH_KIND_TRANSPORT, &ctx, sizeof ctx);
        uint32_t rm = TL_AUTH_RESPONSE_MAGIC;
        memcpy(resp, &rm, 4);
        tl_random_bytes(resp + 4, sizeof resp - 4);
        fds[2] = raw_addr_connect(la);
        send(fds[2], hello, hl, MSG_NOSIGNAL);
        send(fds[2], resp, sizeof resp, MSG_NOSIGNAL);
        fds[3] = raw_addr_connect(la); /* silent */
        if (fds[0] < 0 || fds[1] < 0 || fds[2] < 0 || fds[3] < 0) return 12;
        tlink_store_set(st, "test/attacked", "1", 1); /* now rank 0 may start */
        int refused = 0;
        for (int i = 0; i < 3; i++) refused += closed_by_peer(fds[i], 20);
        for (int i = 0; i < 4; i++) close(fds[i]);
        tlink_store_close(st);
        return refused == 3 ? 0 : 13;
    }
    if (rank == 0) {
        void *v = NULL;
        if (tlink_store_get(st, "test/attacked", &v, NULL, 30)) return 14;
        tlink_free(v);
    }
    if (rank == 1) {
        /* first with the wrong secret: refused at the store, a clear error */
        char right[128];
        snprintf(right, sizeof right, "%s", getenv("TLINK_SECRET"));
        setenv("TLINK_SECRET", "rank-one-has-the-wrong-secret", 1);
        tlink_comm *c = NULL;
        tlink_status s1 = tlt_init(&c, rank, size, addr);
        const char *m = tlink_last_error(NULL);
        if (s1 != TLINK_ERR_BOOTSTRAP || !strstr(m, "authentication failed")) {
            fprintf(stderr, "rank 1 with the wrong secret: %s: %s\n", tlink_error_string(s1), m);
            return 15;
        }
        setenv("TLINK_SECRET", right, 1);
    }
    tlink_store_close(st);
    tlink_comm *c = NULL;
    if (tlt_init(&c, rank, size, addr)) {
        fprintf(stderr, "rank %d: init: %s\n", rank, tlink_last_error(NULL));
        return 16;
    }
    int64_t x[64], want = 0;
    for (int r = 0; r < size; r++) want += r + 1;
    for (int i = 0; i < 64; i++) x[i] = rank + 1;
    tlink_status s2 = tlink_allreduce(c, x, x, 64, TLINK_I64, TLINK_SUM);
    int ok = s2 == TLINK_OK;
    for (int i = 0; i < 64; i++) ok &= x[i] == want;
    if (!ok) fprintf(stderr, "rank %d: allreduce: %s\n", rank, tlink_last_error(c));
    tlink_comm_destroy(c);
    return ok ? 0 : 17;
}

static void test_job(void) {
    setenv("TLINK_SECRET", "job-test-secret-abcdefghijklmnop", 1);
    setenv("TLINK_TRANSPORT", "tcp", 1);
    setenv("TLINK_SOCKET_NSTREAMS", "1", 1);
    setenv("TLINK_TIMEOUT", "30", 1);
    capture_start("job");
    int codes[4] = {0};
    int failed = tlt_launch(4, job_main, NULL, 90, codes);
    char *log = capture_end();
    EXPECT(failed == 0, "job under attack: exit codes %d %d %d %d", codes[0], codes[1], codes[2], codes[3]);
    EXPECT(count_of(log, "rank 2: refused a TCP connection from 127.0.0.1:") >= 3,
           "rank 2 logged the refused connections with their address");
    EXPECT(strstr(log, "not a TileLink connection") && strstr(log, "did not authenticate"), "each reason logged");
    const char *r2 = strstr(log, "rank 2: refused a TCP connection");
    EXPECT(r2 && strstr(r2, "wrong authentication response"), "the forged response is refused by rank 2");
    EXPECT(strstr(log, "refused the connection from 127.0.0.1:"), "the store logged rank 1's first attempt");
    free(log);
    unsetenv("TLINK_TRANSPORT");
    unsetenv("TLINK_SOCKET_NSTREAMS");
    unsetenv("TLINK_SECRET");
}

/* ---------- 5. without a secret: where the store listens ---------- */
static int first_external_ipv4(char *out, size_t n) {
    struct ifaddrs *ifa = NULL;
    int found = 0;
    if (getifaddrs(&ifa) != 0) return 0;
    for (struct ifaddrs *i = ifa; i && !found; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP) ||
            (i->ifa_flags & IFF_LOOPBACK))
            continue;
        inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, out, (socklen_t)n);
        found = 1;
    }
    freeifaddrs(ifa);
    return found;
}

/* rank 0 hosts the store (torchrun variables); the others connect to it */
static const char *g_master;
static int g_port;
static int bind_main(int rank, int size, const char *addr, void *arg) {
    (void)addr;
    (void)arg;
    char v[32];
    snprintf(v, sizeof v, "%d", rank);
    setenv("RANK", v, 1);
    snprintf(v, sizeof v, "%d", size);
    setenv("WORLD_SIZE", v, 1);
    setenv("LOCAL_WORLD_SIZE", v, 1);
    setenv("MASTER_ADDR", g_master, 1);
    snprintf(v, sizeof v, "%d", g_port);
    setenv("MASTER_PORT", v, 1);
    tlink_comm *c = NULL;
    if (tlink_comm_init_env(&c)) {
        fprintf(stderr, "rank %d: %s\n", rank, tlink_last_error(NULL));
        return 1;
    }
    int ok = 1;
    if (rank == 0) {
        /* nobody reaches the store from outside loopback */
        char ext[64], ea[96];
        if (first_external_ipv4(ext, sizeof ext)) {
            snprintf(ea, sizeof ea, "%s:%d", ext, g_port);
            int fd = raw_addr_connect(ea);
            if (fd >= 0) {
                fprintf(stderr, "the store answers on %s\n", ea);
                ok = 0;
                close(fd);
            }
        }
        int fd = raw_connect(g_port);
        if (fd < 0) ok = 0;
        else close(fd);
    }
    ok &= tlink_barrier(c) == TLINK_OK;
    tlink_comm_destroy(c);
    return ok ? 0 : 2;
}

/* a port free on every interface a moment ago, below the ephemeral range */
static int free_port(void) {
    for (int i = 0; i < 500; i++) {
        int p = 21000 + (int)(((unsigned)getpid() * 7919u + (unsigned)i * 104729u) % 11000u);
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in sa = {0};
        sa.sin_family = AF_INET;
        sa.sin_port = htons((uint16_t)p);
        int ok = bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
        close(fd);
        if (ok) return p;
    }
    return 29500;
}

static void test_bind(void) {
    unsetenv("TLINK_SECRET");
    unsetenv("TLINK_SECRET_FILE");
    capture_start("bind");
    tlink_store_server *srv;
    EXPECT(tlink_store_server_start("0.0.0.0", 0, &srv) == TLINK_OK, "server on all interfaces");
    tlink_store_server_stop(srv);
    EXPECT(tlink_store_server_start("127.0.0.1", 0, &srv) == TLINK_OK, "server on loopback");
    tlink_store_server_stop(srv);
    char *log = capture_end();
    EXPECT(count_of(log, "without authentication") == 1, "one warning, for the server beyond loopback");
    free(log);
    char ext[64];
    g_master = "127.0.0.1";
    g_port = free_port();
    EXPECT(tlt_launch(3, bind_main, NULL, 60, NULL) == 0, "rank 0's store on loopback (MASTER_ADDR=127.0.0.1)");
    if (first_external_ipv4(ext, sizeof ext)) {
        g_master = ext;
        g_port = free_port();
        capture_start("bind2");
        int f = tlt_launch(3, bind_main, NULL, 60, NULL);
        log = capture_end();
        EXPECT(f == 0, "every rank local, MASTER_ADDR=%s: the store on loopback", ext);
        EXPECT(!strstr(log, "without authentication"), "no warning: the store is not reachable from outside");
        free(log);
    } else {
        printf("no external IPv4 address: the all-local rewrite is not checked\n");
    }
    unsetenv("RANK");
}

int main(int argc, char **argv) {
    const char *what = argc > 1 ? argv[1] : "all";
    int all = !strcmp(what, "all");
    if (all || !strcmp(what, "unit")) { test_vectors(); test_handshake(); }
    if (all || !strcmp(what, "store")) test_store();
    if (all || !strcmp(what, "job")) test_job();
    if (all || !strcmp(what, "bind")) test_bind();
    printf("%s (%d failures)\n", fails ? "FAIL" : "ok", fails);
    return fails ? 1 : 0;
}
