/* auth_bench.c — what authentication costs per connection (bench/link/auth.sh).
 *   auth_bench store N     in one process: a store server, then N times (connect, one set,
 *                          close); prints the mean and median microseconds per connection;
 *                          with TLINK_SECRET set both sides authenticate
 *   auth_bench comm K      under a launcher: K times (create a communicator, destroy it); per
 *                          repetition the slowest rank's creation time; prints the median and
 *                          the number of TCP connections each rank opened or accepted
 *   auth_bench hmac N      the handshake's arithmetic alone: N (hello, challenge, response,
 *                          check) exchanges in memory */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tlink.h>
#include "tl_internal.h"

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
static int cmpd(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: auth_bench store|comm|hmac N\n"); return 2; }
    int n = atoi(argv[2]);
    double *t = calloc((size_t)n, sizeof *t);
    int auth = getenv("TLINK_SECRET") || getenv("TLINK_SECRET_FILE");
    if (!strcmp(argv[1], "store")) {
        tlink_store_server *srv;
        if (tlink_store_server_start("127.0.0.1", 0, &srv)) { fprintf(stderr, "%s\n", tlink_last_error(NULL)); return 1; }
        char addr[64];
        snprintf(addr, sizeof addr, "127.0.0.1:%d", tlink_store_server_port(srv));
        for (int i = 0; i < n; i++) {
            double t0 = now();
            tlink_store *s;
            if (tlink_store_connect(addr, 5, &s) || tlink_store_set(s, "k", "v", 1)) {
                fprintf(stderr, "store: %s\n", tlink_last_error(NULL));
                return 1;
            }
            t[i] = now() - t0;
            tlink_store_close(s);
        }
        tlink_store_server_stop(srv);
    } else if (!strcmp(argv[1], "hmac")) {
        tl_hmac_key key;
        tl_hmac_key_init(&key, "0123456789abcdef0123456789abcdef", 32);
        struct { int32_t r, s; uint64_t id; } ctx = {1, 0, 42};
        for (int i = 0; i < n; i++) {
            double t0 = now();
            unsigned char hello[TL_AUTH_HELLO_MAX], chal[TL_AUTH_CHALLENGE], resp[TL_AUTH_RESPONSE];
            size_t hl = tl_auth_hello(hello, TL_AUTH_KIND_TRANSPORT, &ctx, sizeof ctx);
            tl_auth_challenge(&key, hello, hl, chal);
            if (tl_auth_respond(&key, hello, hl, chal, resp) || tl_auth_check(&key, hello, hl, chal, resp)) return 1;
            t[i] = now() - t0;
        }
    } else {
        tlink_comm *c;
        int conns = 0;
        for (int i = 0; i < n; i++) {
            double t0 = now();
            if (tlink_comm_init_env(&c)) { fprintf(stderr, "init: %s\n", tlink_last_error(NULL)); return 1; }
            t[i] = now() - t0;
            conns = 0;
            for (int r = 0; r < tlink_comm_size(c); r++) conns += !strcmp(tlink_comm_transport(c, r), "tcp");
            tlink_allreduce(c, &t[i], &t[i], 1, TLINK_F64, TLINK_MAX);
            int rank = tlink_comm_rank(c), size = tlink_comm_size(c);
            if (i == n - 1 && rank == 0) {
                qsort(t, (size_t)n, sizeof *t, cmpd);
                long streams = strtol(getenv("TLINK_SOCKET_NSTREAMS") ? getenv("TLINK_SOCKET_NSTREAMS") : "2", NULL, 10);
                printf("RESULT mode=comm auth=%d ranks=%d tcp_peers=%d streams=%ld median_ms=%.3f min_ms=%.3f max_ms=%.3f\n",
                       auth, size, conns, streams, t[n / 2] * 1e3, t[0] * 1e3, t[n - 1] * 1e3);
            }
            tlink_comm_destroy(c);
        }
        free(t);
        return 0;
    }
    double sum = 0;
    for (int i = 0; i < n; i++) sum += t[i];
    qsort(t, (size_t)n, sizeof *t, cmpd);
    printf("RESULT mode=%s auth=%d n=%d mean_us=%.2f median_us=%.2f min_us=%.2f\n", argv[1], auth, n, sum / n * 1e6,
           t[n / 2] * 1e6, t[0] * 1e6);
    free(t);
    return 0;
}
