/* fuzz_store.c — libFuzzer harness for the TileLink store protocol (tilelink/src/store.c).
 *
 * The first input byte picks a mode, the second how the rest is cut into pieces (every piece
 * size from 1 byte up, so a message is cut at every byte over the runs):
 *   0  server, no secret: the bytes are a client's requests (op, key length, value length,
 *      key, value ...), fed piece by piece to the real parser and handlers; the replies are
 *      checked for their framing (status byte, 64-bit length, payload) by a parser of our own;
 *   1  server with a secret: the bytes are a client's handshake and requests (what an
 *      unauthenticated peer can send);
 *   2  server with a secret after a valid handshake made by the harness: the bytes are
 *      requests from an authenticated client (garbage after a valid header);
 *   3  client: the bytes are a server's replies to a fixed series of requests (set, get, add,
 *      check, delete), through a socket pair;
 *   4  client with a secret: the bytes are the server's side of the handshake, then replies.
 * Nothing may crash, leak, hang, or answer with a malformed reply; the client must report an
 * error (never success) when the replies are cut short. */
#include "tl_internal.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const unsigned char SECRET[] = "fuzz-secret-0123456789abcdef";

/* the replies a detached server writes: a stream of (status, u64 length, payload) that must
 * parse whole; the handshake's challenge comes first when authenticating */
typedef struct sink_state {
    unsigned char *buf;
    size_t len, cap;
    size_t skip;        /* bytes of handshake at the start */
} sink_state;

static int sink(void *ctx, int fd, const void *data, size_t n) {
    (void)fd;
    sink_state *s = ctx;
    if (s->len + n > s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 4096;
        while (nc < s->len + n) nc *= 2;
        unsigned char *nb = realloc(s->buf, nc);
        if (!nb) return -1;
        s->buf = nb;
        s->cap = nc;
    }
    memcpy(s->buf + s->len, data, n);
    s->len += n;
    return 0;
}

static void check_replies(const sink_state *s) {
    size_t o = s->skip;
    while (o < s->len) {
        if (s->len - o < 9) __builtin_trap();          /* a torn reply header */
        if (s->buf[o] > 2) __builtin_trap();           /* an unknown status */
        uint64_t l;
        memcpy(&l, s->buf + o + 1, 8);
        if (l > s->len - o - 9) __builtin_trap();      /* a payload longer than what was written */
        o += 9 + (size_t)l;
    }
}

static void feed_pieces(tlink_store_server *srv, int fd, const uint8_t *d, size_t n, unsigned cut) {
    size_t piece = 1 + cut % 97, o = 0;
    while (o < n) {
        size_t k = piece < n - o ? piece : n - o;
        if (tl_store_server_feed(srv, fd, d + o, k)) return; /* dropped: the server stops reading */
        o += k;
        piece = 1 + (piece * 7 + cut) % 97;
    }
}

static void fuzz_server(int mode, unsigned cut, const uint8_t *d, size_t n) {
    tl_hmac_key key;
    tl_hmac_key_init(&key, SECRET, sizeof SECRET - 1);
    sink_state ss = {0};
    tlink_store_server *srv = tl_store_server_detached(mode ? &key : NULL, sink, &ss);
    if (!srv) return;
    /* two clients: requests of one may wake a GET parked by the other */
    tl_store_server_add_client(srv, 1000);
    tl_store_server_add_client(srv, 1001);
    if (mode == 2) {
        for (int fd = 1000; fd <= 1001; fd++) {
            unsigned char hello[TL_AUTH_HELLO_MAX], resp[TL_AUTH_RESPONSE];
            size_t hl = tl_auth_hello(hello, TL_AUTH_KIND_STORE, NULL, 0);
            size_t before = ss.len;
            if (tl_store_server_feed(srv, fd, hello, hl) || ss.len != before + TL_AUTH_CHALLENGE) __builtin_trap();
            if (tl_auth_respond(&key, hello, hl, ss.buf + before, resp)) __builtin_trap(); /* the server proves the key */
            if (tl_store_server_feed(srv, fd, resp, sizeof resp)) __builtin_trap();        /* and accepts ours */
        }
        ss.skip = ss.len;
    }
    /* the input goes to the first client, a park-breaking SET to the second */
    feed_pieces(srv, 1000, d, n, cut);
    if (mode != 1) {
        static const unsigned char set_a[] = {1, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 'a', 'x'};
        size_t before = ss.len;
        tl_store_server_feed(srv, 1001, set_a, sizeof set_a);
        (void)before;
        check_replies(&ss);
    }
    tl_store_server_free(srv);
    free(ss.buf);
}

static void fuzz_client(int mode, const uint8_t *d, size_t n) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) return;
    int big = 1 << 20;
    setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
    /* the "server" writes the whole input, then closes its sending side (the client's
     * requests still go into its receive buffer) */
    size_t o = 0;
    while (o < n) {
        ssize_t w = send(sv[1], d + o, n - o, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w <= 0) break;
        o += (size_t)w;
    }
    shutdown(sv[1], SHUT_WR);
    tl_hmac_key key;
    tl_hmac_key_init(&key, SECRET, sizeof SECRET - 1);
    char err[512];
    tlink_store *s = tl_store_client_on_fd(sv[0], mode == 4 ? &key : NULL, err, sizeof err);
    if (!s) { close(sv[0]); close(sv[1]); return; }
    /* complete replies in the input (status, u64 length <= 64 MiB, payload), after the
     * handshake's challenge in mode 4: the client may finish at most that many requests */
    size_t at = mode == 4 ? TL_AUTH_CHALLENGE : 0;
    int complete = 0;
    while (at + 9 <= n) {
        uint64_t l;
        memcpy(&l, d + at + 1, 8);
        if (l > (64u << 20) || l > n - at - 9) break;
        at += 9 + (size_t)l;
        complete++;
    }
    void *v = NULL;
    size_t len = 0;
    int64_t r = 0;
    int ex = 0, answered = 0;
    for (int step = 0; step < 8 && tl_store_fd(s) >= 0; step++) {
        tlink_status st;
        switch (step % 5) {
        case 0: st = tlink_store_set(s, "k", "value", 5); break;
        case 1:
            st = tlink_store_get(s, "k", &v, &len, 0.2);
            if (st == TLINK_OK && !v) __builtin_trap();
            free(v);
            v = NULL;
            break;
        case 2: st = tlink_store_add(s, "n", 3, &r); break;
        case 3: st = tlink_store_check(s, "k", &ex); break;
        default: st = tlink_store_delete(s, "k"); break;
        }
        (void)st;
        if (tl_store_fd(s) >= 0) answered++; /* the request got a whole reply */
    }
    if (answered > complete) __builtin_trap(); /* a reply the server never sent */
    tlink_store_close(s);
    close(sv[1]);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    setenv("TLINK_DEBUG", "none", 1); /* refusals are expected here: keep the log quiet */
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    int mode = data[0] % 5;
    unsigned cut = data[1];
    data += 2;
    size -= 2;
    if (mode <= 2) fuzz_server(mode, cut, data, size);
    else fuzz_client(mode, data, size);
    return 0;
}
