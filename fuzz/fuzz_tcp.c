/* fuzz_tcp.c — libFuzzer harness for the TCP transport: the connection handshake
 * (transport.c's acceptor state machine) and the chunk framing of the p2p engine (p2p.c).
 *
 * Byte 0 picks a mode, bytes 1-7 its parameters; the rest is the data:
 *   0  handshake, no secret: the data is what a connecting peer sends, fed as the socket loop
 *      does (never more than the state machine asks for) in pieces of every size;
 *   1  handshake with a secret: the same;
 *   2  handshake with a secret after a valid hello built by the harness: the data is the
 *      response (a forgery must be refused);
 *   3  framing, raw: the data is spread over 1-4 streams of a TCP peer (socket pairs) and a
 *      receive of up to 64 KiB (copy or f32 sum) runs on it; it must end (success or an error),
 *      never crash or hang;
 *   4  framing, valid: the harness writes two correct messages (the sizes, chunk size and stream
 *      count from the parameters), then cuts the streams at a byte position, flips one byte,
 *      or appends the data as garbage; whole frames must arrive exactly, a cut must fail, a
 *      flipped header byte must fail, garbage after the end must not matter.
 * A receive reports success only when its frames arrived whole and matching. */
#include "tl_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

static const unsigned char SECRET[] = "fuzz-secret-0123456789abcdef";

/* ---------- the handshake ---------- */
static void fuzz_handshake(int mode, const uint8_t *p, const uint8_t *d, size_t n) {
    tl_hmac_key key;
    tl_hmac_key_init(&key, SECRET, sizeof SECRET - 1);
    const uint64_t comm = 0x0123456789abcdefULL;
    const int max_rank = 1 + p[0] % 8, nstreams = 1 + p[1] % 8;
    tl_hs_accept h;
    tl_hs_accept_init(&h, mode ? &key : NULL, comm, max_rank, nstreams);
    unsigned char out[TL_AUTH_CHALLENGE];
    size_t olen = 0, o = 0;
    int rc = TL_HS_MORE;
    if (mode == 2) {
        struct { int32_t rank, stream; uint64_t comm_id; } ctx = {p[2] % 8, p[3] % 8, comm};
        unsigned char hello[TL_AUTH_HELLO_MAX], resp[TL_AUTH_RESPONSE];
        size_t hl = tl_auth_hello(hello, TL_AUTH_KIND_TRANSPORT, &ctx, sizeof ctx);
        for (size_t i = 0; i < hl && rc == TL_HS_MORE; i++) rc = tl_hs_accept_feed(&h, hello + i, 1, out, &olen);
        if (rc != TL_HS_SEND || olen != TL_AUTH_CHALLENGE) __builtin_trap();
        if (tl_auth_respond(&key, hello, hl, out, resp)) __builtin_trap();
        /* the data as the response */
        rc = TL_HS_MORE;
        while (o < n && rc == TL_HS_MORE) {
            size_t need = tl_hs_accept_need(&h), take = need < n - o ? need : n - o;
            if (take > 1 + (size_t)p[4] % 40) take = 1 + (size_t)p[4] % 40;
            rc = tl_hs_accept_feed(&h, d + o, take, out, &olen);
            o += take;
        }
        int right = o >= TL_AUTH_RESPONSE && !memcmp(d, resp, TL_AUTH_RESPONSE);
        int fits = ctx.rank < max_rank && ctx.stream < nstreams;
        if (rc == TL_HS_DONE && !(right && fits)) __builtin_trap();   /* a forgery accepted */
        if (right && fits && rc != TL_HS_DONE) __builtin_trap();      /* the right one refused */
        return;
    }
    size_t piece = 1 + p[4] % 64;
    while (o < n && (rc == TL_HS_MORE || rc == TL_HS_SEND)) {
        size_t need = tl_hs_accept_need(&h);
        if (!need) __builtin_trap(); /* a state that reads nothing must have ended */
        size_t take = need < piece ? need : piece;
        if (take > n - o) take = n - o;
        rc = tl_hs_accept_feed(&h, d + o, take, out, &olen);
        if (rc == TL_HS_SEND && olen != TL_AUTH_CHALLENGE) __builtin_trap();
        o += take;
    }
    if (rc == TL_HS_DONE) {
        /* only a plain hello can be accepted from data nobody signed */
        if (mode) __builtin_trap();
        struct { uint32_t magic; int32_t rank, stream, pad; uint64_t comm_id; } ph;
        if (o != sizeof ph) __builtin_trap(); /* it read exactly the hello */
        memcpy(&ph, d, sizeof ph);
        if (ph.comm_id != comm || ph.rank != h.rank || ph.stream != h.stream || h.rank < 0 || h.rank >= max_rank ||
            h.stream < 0 || h.stream >= nstreams)
            __builtin_trap();
    }
    if (rc == TL_HS_REFUSED && !h.why) __builtin_trap();
}

/* ---------- the framing ---------- */
typedef struct fake {
    tlink_comm c;
    tl_peer peers[2];
    int wr[TL_MAX_STREAMS]; /* the far ends */
} fake;

static int fake_init(fake *f, int ns, size_t chunk) {
    memset(f, 0, sizeof *f);
    tlink_comm *c = &f->c;
    c->rank = 0;
    c->size = 2;
    c->peers = f->peers;
    c->timeout = 5;
    c->tcp_chunk = chunk;
    c->nstreams = ns;
    c->yield_every = 1;
    c->yield_s = 0;
    c->listen_fd = -1;
    pthread_mutex_init(&c->exec_mu, NULL);
    f->peers[0].transport = TLINK_TRANSPORT_SELF;
    tl_peer *p = &f->peers[1];
    p->transport = TLINK_TRANSPORT_TCP;
    p->nfds = ns;
    snprintf(p->hostname, sizeof p->hostname, "fuzz");
    c->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (c->epfd < 0) return -1;
    for (int s = 0; s < ns; s++) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) return -1;
        int big = 1 << 20;
        setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
        setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
        fcntl(sv[0], F_SETFL, O_NONBLOCK);
        fcntl(sv[1], F_SETFL, O_NONBLOCK);
        p->fds[s] = sv[0];
        f->wr[s] = sv[1];
        struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLET, .data.u64 = 1};
        epoll_ctl(c->epfd, EPOLL_CTL_ADD, sv[0], &ev);
    }
    return 0;
}

static void fake_free(fake *f) {
    for (int s = 0; s < f->peers[1].nfds; s++) {
        if (f->peers[1].fds[s] >= 0) close(f->peers[1].fds[s]);
        if (f->wr[s] >= 0) close(f->wr[s]);
    }
    if (f->c.epfd >= 0) close(f->c.epfd);
    free(f->c.scratch);
    pthread_mutex_destroy(&f->c.exec_mu);
}

/* per-stream byte streams the harness writes */
typedef struct sbuf { unsigned char *b; size_t n, cap; } sbuf;
static void sb_put(sbuf *s, const void *p, size_t n) {
    if (!n) return;
    if (s->n + n > s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 1024;
        while (nc < s->n + n) nc *= 2;
        s->b = realloc(s->b, nc);
        s->cap = nc;
    }
    memcpy(s->b + s->n, p, n);
    s->n += n;
}

/* the frames of one message of `bytes` whose first chunk has sequence number base */
static void put_message(sbuf *st, int ns, size_t ch, uint64_t base, const unsigned char *data, size_t bytes) {
    size_t nch = (bytes + ch - 1) / ch;
    for (size_t k = 0; k < nch; k++) {
        size_t len = bytes - k * ch < ch ? bytes - k * ch : ch;
        struct { uint32_t magic, len; uint64_t seq; } f = {0x464b4c54u, (uint32_t)len, base + k};
        int s = (int)((base + k) % (uint64_t)ns);
        sb_put(&st[s], &f, sizeof f);
        sb_put(&st[s], data + k * ch, len);
    }
}

static float sum_f32(float a, float b) { return a + b; }

static void fuzz_framing(int mode, const uint8_t *p, const uint8_t *d, size_t n) {
    int ns = 1 + p[0] % 4;
    size_t ch = 4096 * (1 + (size_t)(p[1] % 4));
    size_t m1 = (((size_t)p[2] << 8 | p[3]) % 65536) & ~(size_t)3, m2 = ((size_t)p[4] << 6) & ~(size_t)3;
    int reduce = p[5] & 1;
    fake f;
    if (fake_init(&f, ns, ch)) { fake_free(&f); return; }
    sbuf st[TL_MAX_STREAMS] = {{0}};
    unsigned char *msg = malloc(m1 + m2 + 1);
    for (size_t i = 0; i < m1 + m2; i++) msg[i] = (unsigned char)(i * 31 + 7);
    int expect_ok = 0, flip_in_header = 0;
    size_t cut = (size_t)-1, flip = (size_t)-1;
    if (mode == 3) {
        /* the data, dealt over the streams in pieces */
        size_t o = 0, piece = 1 + p[6] % 200;
        int s = 0;
        while (o < n) {
            size_t k = piece < n - o ? piece : n - o;
            sb_put(&st[s], d + o, k);
            o += k;
            s = (s + 1) % ns;
        }
    } else {
        put_message(st, ns, ch, 0, msg, m1);
        size_t nch1 = (m1 + ch - 1) / ch;
        put_message(st, ns, ch, nch1, msg + m1, m2);
        size_t total = 0;
        for (int s = 0; s < ns; s++) total += st[s].n;
        int what = (p[5] >> 1) % 3;
        size_t where = (size_t)p[6] << 16 | (size_t)(n ? d[0] : 0) << 8 | (n > 1 ? d[1] : 0);
        if (what == 0 && total) {
            cut = where % total;
        } else if (what == 1 && total) {
            flip = where % total;
        } else {
            for (int s = 0; s < ns; s++) sb_put(&st[s], d, n); /* garbage after the end */
        }
        expect_ok = 1;
        /* where the cut or the flipped byte lands: a position in the concatenation of streams */
        size_t pos = cut != (size_t)-1 ? cut : flip;
        if (pos != (size_t)-1) {
            for (int s = 0; s < ns; s++) {
                if (pos < st[s].n) {
                    if (cut != (size_t)-1) {
                        st[s].n = pos;
                    } else {
                        /* is the byte in a frame header? (walk the stream's frames) */
                        for (size_t off = 0; off < st[s].n;) {
                            uint32_t len;
                            memcpy(&len, st[s].b + off + 4, 4);
                            if (pos >= off && pos < off + 16) flip_in_header = 1;
                            off += 16 + len;
                        }
                        st[s].b[pos] ^= (unsigned char)(1 + (n > 2 ? d[2] % 255 : 0));
                    }
                    break;
                }
                pos -= st[s].n;
            }
        }
    }
    for (int s = 0; s < ns; s++) {
        size_t o = 0;
        while (o < st[s].n) {
            ssize_t w = send(f.wr[s], st[s].b + o, st[s].n - o, MSG_NOSIGNAL);
            if (w <= 0) break;
            o += (size_t)w;
        }
        shutdown(f.wr[s], SHUT_WR);
    }
    f.c.cur_coll = "fuzz";
    unsigned char *r1 = calloc(1, m1 + 4), *r2 = calloc(1, m2 + 4);
    tlink_status s1, s2 = TLINK_ERR_INTERNAL;
    if (reduce) {
        tl_reduce_fn red = tl_reduce_get(TLINK_F32, TLINK_SUM);
        s1 = tl_recv_reduce(&f.c, 1, r1, m1, red, 4);
        if (!s1) s2 = tl_recv_reduce(&f.c, 1, r2, m2, red, 4);
    } else {
        s1 = tl_recv(&f.c, 1, r1, m1);
        if (!s1) s2 = tl_recv(&f.c, 1, r2, m2);
    }
    if (s1 && s1 != TLINK_ERR_PEER_FAILED && s1 != TLINK_ERR_INTERNAL && s1 != TLINK_ERR_TIMEOUT) __builtin_trap();
    if (mode == 4) {
        size_t nch1 = (m1 + ch - 1) / ch, nch2 = (m2 + ch - 1) / ch;
        int whole = cut == (size_t)-1 && flip == (size_t)-1;
        if (whole && expect_ok && (s1 || s2)) __builtin_trap(); /* valid frames refused */
        if (whole && !s1 && !s2) {
            /* exactly the bytes sent (the sum into zeros is the data for f32 too, bit for bit
             * except NaN payloads: compare as floats) */
            for (size_t i = 0; i + 4 <= m1; i += 4) {
                float a, b;
                memcpy(&a, r1 + i, 4);
                memcpy(&b, msg + i, 4);
                if (reduce ? !(a == sum_f32(0.0f, b) || (a != a && b != b)) : memcmp(r1 + i, msg + i, 4)) __builtin_trap();
            }
            for (size_t i = 0; i + 4 <= m2; i += 4) {
                float a, b;
                memcpy(&a, r2 + i, 4);
                memcpy(&b, msg + m1 + i, 4);
                if (reduce ? !(a == sum_f32(0.0f, b) || (a != a && b != b)) : memcmp(r2 + i, msg + m1 + i, 4))
                    __builtin_trap();
            }
        }
        if (cut != (size_t)-1 && (nch1 + nch2) > 0 && !s1 && !s2) __builtin_trap(); /* a cut message accepted */
        if (flip_in_header && !s1 && !s2) __builtin_trap();                          /* a broken header accepted */
        (void)nch2;
    }
    free(r1);
    free(r2);
    free(msg);
    for (int s = 0; s < ns; s++) free(st[s].b);
    fake_free(&f);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    setenv("TLINK_DEBUG", "none", 1); /* refusals are expected here: keep the log quiet */
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 8) return 0;
    int mode = data[0] % 5;
    const uint8_t *p = data + 1;
    data += 8;
    size -= 8;
    if (mode <= 2) fuzz_handshake(mode, p, data, size);
    else fuzz_framing(mode, p, data, size);
    return 0;
}
