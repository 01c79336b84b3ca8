/* auth.c — the job secret and the challenge-response that every store and transport
 * connection starts with when one is set: SHA-256 (FIPS 180-4), HMAC-SHA-256 (RFC 2104), fresh
 * nonces from the kernel, and the three handshake messages (docs/tilelink.md, "Authentication").
 *
 * The handshake, for a connector C and an acceptor A that share the key K:
 *   C -> A  hello      "TLA1", kind, context (transport: rank, stream, communicator id), Nc
 *   A -> C  challenge  "TLA2", Ns, MAC_A = HMAC(K, "TLINK-AUTH-1 acceptor"  || hello || Ns)
 *   C -> A  response   "TLA3",     MAC_C = HMAC(K, "TLINK-AUTH-1 connector" || hello || Ns)
 * Both MACs cover both nonces and the connector's claimed identity, so a recorded exchange is
 * useless later (A draws Ns afresh for every connection), a MAC cannot be reflected (the labels
 * differ), and the claimed rank cannot be changed on the way. C sends MAC_C before it checks
 * MAC_A, so an acceptor always sees a connector with the wrong key fail, and logs it. */
#include "tl_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------- SHA-256 ---------- */
static const uint32_t K256[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static inline uint32_t ror32(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void sha256_block(uint32_t h[8], const unsigned char *p) {
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ror32(w[i - 15], 7) ^ ror32(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ror32(w[i - 2], 17) ^ ror32(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t S1 = ror32(e, 6) ^ ror32(e, 11) ^ ror32(e, 25);
        uint32_t ch = (e & f) ^ (~e & g);
        uint32_t t1 = k + S1 + ch + K256[i] + w[i];
        uint32_t S0 = ror32(a, 2) ^ ror32(a, 13) ^ ror32(a, 22);
        uint32_t mj = (a & b) ^ (a & c) ^ (b & c);
        uint32_t t2 = S0 + mj;
        k = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += k;
}

void tl_sha256_init(tl_sha256 *s) {
    static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, iv, sizeof iv);
    s->len = 0;
    s->n = 0;
}

void tl_sha256_update(tl_sha256 *s, const void *data, size_t len) {
    const unsigned char *p = data;
    s->len += len;
    if (s->n) {
        size_t take = TL_MIN(64 - s->n, len);
        memcpy(s->buf + s->n, p, take);
        s->n += take;
        p += take;
        len -= take;
        if (s->n < 64) return;
        sha256_block(s->h, s->buf);
        s->n = 0;
    }
    for (; len >= 64; p += 64, len -= 64) sha256_block(s->h, p);
    memcpy(s->buf, p, len);
    s->n = len;
}

void tl_sha256_final(tl_sha256 *s, unsigned char out[32]) {
    uint64_t bits = s->len * 8;
    unsigned char pad = 0x80;
    tl_sha256_update(s, &pad, 1);
    unsigned char z = 0;
    while (s->n != 56) tl_sha256_update(s, &z, 1);
    unsigned char lb[8];
    for (int i = 0; i < 8; i++) lb[i] = (unsigned char)(bits >> (56 - 8 * i));
    tl_sha256_update(s, lb, 8);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (unsigned char)(s->h[i] >> 24);
        out[4 * i + 1] = (unsigned char)(s->h[i] >> 16);
        out[4 * i + 2] = (unsigned char)(s->h[i] >> 8);
        out[4 * i + 3] = (unsigned char)s->h[i];
    }
}

void tl_sha256_sum(const void *data, size_t len, unsigned char out[32]) {
    tl_sha256 s;
    tl_sha256_init(&s);
    tl_sha256_update(&s, data, len);
    tl_sha256_final(&s, out);
}

/* ---------- HMAC-SHA-256 ---------- */
/* The key's padded blocks are hashed once: each MAC then costs the message's blocks and two. */
void tl_hmac_key_init(tl_hmac_key *k, const void *key, size_t len) {
    unsigned char kb[64] = {0}, pad[64];
    if (len > 64) tl_sha256_sum(key, len, kb);
    else if (len) memcpy(kb, key, len);
    for (int i = 0; i < 64; i++) pad[i] = kb[i] ^ 0x36;
    tl_sha256_init(&k->inner);
    tl_sha256_update(&k->inner, pad, 64);
    for (int i = 0; i < 64; i++) pad[i] = kb[i] ^ 0x5c;
    tl_sha256_init(&k->outer);
    tl_sha256_update(&k->outer, pad, 64);
    memset(kb, 0, sizeof kb);
    memset(pad, 0, sizeof pad);
}

void tl_hmac_start(tl_hmac *m, const tl_hmac_key *k) {
    m->inner = k->inner;
    m->outer = k->outer;
}
void tl_hmac_update(tl_hmac *m, const void *data, size_t len) { tl_sha256_update(&m->inner, data, len); }
void tl_hmac_final(tl_hmac *m, unsigned char out[32]) {
    unsigned char ih[32];
    tl_sha256_final(&m->inner, ih);
    tl_sha256_update(&m->outer, ih, 32);
    tl_sha256_final(&m->outer, out);
}

void tl_hmac_sha256(const void *key, size_t klen, const void *msg, size_t mlen, unsigned char out[32]) {
    tl_hmac_key k;
    tl_hmac m;
    tl_hmac_key_init(&k, key, klen);
    tl_hmac_start(&m, &k);
    tl_hmac_update(&m, msg, mlen);
    tl_hmac_final(&m, out);
}

int tl_ct_equal(const void *a, const void *b, size_t n) {
    const volatile unsigned char *x = a, *y = b;
    unsigned char d = 0;
    for (size_t i = 0; i < n; i++) d |= (unsigned char)(x[i] ^ y[i]);
    return d == 0;
}

int tl_random_bytes(void *buf, size_t n) {
    unsigned char *p = buf;
    while (n) {
        ssize_t r = getrandom(p, n, 0);
        if (r < 0) {
            if (errno == EINTR) continue;
            /* no getrandom: /dev/urandom */
            int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
            if (fd < 0) return -1;
            while (n) {
                ssize_t k = read(fd, p, n);
                if (k <= 0) { close(fd); return -1; }
                p += k;
                n -= (size_t)k;
            }
            close(fd);
            return 0;
        }
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

/* ---------- the job secret ---------- */
/* TLINK_SECRET (the bytes of the value) or the contents of TLINK_SECRET_FILE (trailing
 * white space removed); TLINK_SECRET wins when both are set. Read at every use (a store
 * server's start, a connection, a communicator's creation), so tests and launchers may change
 * it between calls. */
int tl_auth_load(tl_hmac_key *key, char *err, size_t errlen) {
    const char *v = tb_knob_str(TB_K_TLINK_SECRET);
    if (v) {
        size_t n = strlen(v);
        static _Atomic int warned_short;
        if (n < 16 && !atomic_exchange(&warned_short, 1))
            tl_log(TL_LOG_WARN, "TLINK_SECRET has only %zu characters: use at least 16 random ones "
                                "(tile launch generates 32 random bytes when none is set)", n);
        tl_hmac_key_init(key, v, n);
        return 1;
    }
    const char *path = tb_knob_str(TB_K_TLINK_SECRET_FILE);
    if (!path) return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "TLINK_SECRET_FILE=%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    struct stat sb;
    static _Atomic int warned_mode;
    if (fstat(fd, &sb) == 0 && (sb.st_mode & 077) && !atomic_exchange(&warned_mode, 1))
        tl_log(TL_LOG_WARN, "TLINK_SECRET_FILE=%s can be read by other users (mode %03o): chmod 600 it", path,
               (unsigned)(sb.st_mode & 0777));
    unsigned char buf[4096];
    size_t n = 0;
    for (;;) {
        ssize_t r = read(fd, buf + n, sizeof buf - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            snprintf(err, errlen, "TLINK_SECRET_FILE=%s: cannot read: %s", path, strerror(errno));
            close(fd);
            return -1;
        }
        if (r == 0) break;
        n += (size_t)r;
        if (n == sizeof buf) {
            snprintf(err, errlen, "TLINK_SECRET_FILE=%s: larger than %zu bytes", path, sizeof buf - 1);
            close(fd);
            return -1;
        }
    }
    close(fd);
    while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ' || buf[n - 1] == '\t')) n--;
    if (!n) {
        snprintf(err, errlen, "TLINK_SECRET_FILE=%s is empty", path);
        return -1;
    }
    tl_hmac_key_init(key, buf, n);
    memset(buf, 0, sizeof buf);
    return 1;
}

/* ---------- handshake messages ---------- */
static const char LABEL_ACC[] = "TLINK-AUTH-1 acceptor";
static const char LABEL_CONN[] = "TLINK-AUTH-1 connector";

static void put32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); }
static uint32_t get32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }

size_t tl_auth_hello(unsigned char *out, int kind, const void *ctx, size_t ctxlen) {
    if (ctxlen > TL_AUTH_CTX_MAX) ctxlen = TL_AUTH_CTX_MAX;
    put32(out, TL_AUTH_HELLO_MAGIC);
    out[4] = (unsigned char)kind;
    out[5] = (unsigned char)ctxlen;
    out[6] = out[7] = 0;
    if (ctxlen) memcpy(out + 8, ctx, ctxlen);
    if (tl_random_bytes(out + 8 + ctxlen, TL_AUTH_NONCE) != 0) {
        /* no kernel randomness: a unique value still defeats replay of a recorded exchange */
        uint64_t r[4] = {tl_random64(), tl_random64(), tl_random64(), tl_random64()};
        memcpy(out + 8 + ctxlen, r, TL_AUTH_NONCE);
    }
    return 8 + ctxlen + TL_AUTH_NONCE;
}

/* bytes of a hello whose first 8 bytes are hdr; 0 when they are not a hello of this kind */
size_t tl_auth_hello_size(const unsigned char *hdr, int kind) {
    if (get32(hdr) != TL_AUTH_HELLO_MAGIC || hdr[4] != kind || hdr[5] > TL_AUTH_CTX_MAX || hdr[6] || hdr[7]) return 0;
    return 8 + (size_t)hdr[5] + TL_AUTH_NONCE;
}

static void mac_of(const tl_hmac_key *k, const char *label, size_t llen, const unsigned char *hello, size_t hlen,
                   const unsigned char *ns, unsigned char out[32]) {
    tl_hmac m;
    tl_hmac_start(&m, k);
    tl_hmac_update(&m, label, llen);
    tl_hmac_update(&m, hello, hlen);
    tl_hmac_update(&m, ns, TL_AUTH_NONCE);
    tl_hmac_final(&m, out);
}

void tl_auth_challenge(const tl_hmac_key *k, const unsigned char *hello, size_t hlen,
                       unsigned char out[TL_AUTH_CHALLENGE]) {
    put32(out, TL_AUTH_CHALLENGE_MAGIC);
    unsigned char *ns = out + 4;
    if (tl_random_bytes(ns, TL_AUTH_NONCE) != 0) {
        uint64_t r[4] = {tl_random64(), tl_random64(), tl_random64(), tl_random64()};
        memcpy(ns, r, TL_AUTH_NONCE);
    }
    mac_of(k, LABEL_ACC, sizeof LABEL_ACC - 1, hello, hlen, ns, out + 4 + TL_AUTH_NONCE);
}

int tl_auth_respond(const tl_hmac_key *k, const unsigned char *hello, size_t hlen,
                    const unsigned char challenge[TL_AUTH_CHALLENGE], unsigned char out[TL_AUTH_RESPONSE]) {
    const unsigned char *ns = challenge + 4;
    put32(out, TL_AUTH_RESPONSE_MAGIC);
    mac_of(k, LABEL_CONN, sizeof LABEL_CONN - 1, hello, hlen, ns, out + 4);
    if (get32(challenge) != TL_AUTH_CHALLENGE_MAGIC) return -1;
    unsigned char want[32];
    mac_of(k, LABEL_ACC, sizeof LABEL_ACC - 1, hello, hlen, ns, want);
    return tl_ct_equal(want, challenge + 4 + TL_AUTH_NONCE, 32) ? 0 : -1;
}

int tl_auth_check(const tl_hmac_key *k, const unsigned char *hello, size_t hlen,
                  const unsigned char challenge[TL_AUTH_CHALLENGE], const unsigned char response[TL_AUTH_RESPONSE]) {
    if (get32(response) != TL_AUTH_RESPONSE_MAGIC) return -1;
    unsigned char want[32];
    mac_of(k, LABEL_CONN, sizeof LABEL_CONN - 1, hello, hlen, challenge + 4, want);
    return tl_ct_equal(want, response + 4, 32) ? 0 : -1;
}

/* "1.2.3.4:5678" of the far end of a socket ("?" when unknown) */
void tl_peer_name(int fd, char *out, size_t len) {
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0) {
        if (ss.ss_family == AF_INET) {
            struct sockaddr_in *a = (struct sockaddr_in *)&ss;
            inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
            port = ntohs(a->sin_port);
        } else if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
            inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
            port = ntohs(a->sin6_port);
        } else {
            snprintf(out, len, "a local socket");
            return;
        }
    }
    snprintf(out, len, "%s:%d", host, port);
}
