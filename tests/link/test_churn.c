/* test_churn.c — repeated communicator create/destroy with the store hosted by rank 0 (the
 * tlink_comm_init path without an external store): every round rank 0 starts a store on the
 * same port, the ranks bootstrap, run an allreduce, and destroy, which stops rank 0's store.
 * A rank of round i+1 must never meet round i's store (a generation mix-up, a dropped
 * connection or a hang) however the ranks' destroy and create interleave.
 * Usage: tlink_test_churn NRANKS ROUNDS [--tcp] */
#include "tl_launch.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

typedef struct { int rounds, tcp, port; } churn_arg;

static int rank_main(int rank, int size, const char *unused, void *argp) {
    (void)unused;
    churn_arg *a = argp;
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", a->port);
    for (int r = 0; r < a->rounds; r++) {
        tlink_config cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.rank = rank;
        cfg.size = size;
        cfg.store_addr = addr;
        cfg.host_store = 1;
        cfg.timeout_s = 30;
        if (a->tcp) cfg.transport = "tcp";
        tlink_comm *c = NULL;
        tlink_status st = tlink_comm_init_config(&c, &cfg);
        if (st) {
            fprintf(stderr, "rank %d round %d: init: %s: %s\n", rank, r, tlink_error_string(st), tlink_last_error(NULL));
            return 1;
        }
        /* a value that differs per round: a rank that joined the wrong round's job sums wrong */
        double v[4], want = 0;
        for (int i = 0; i < 4; i++) v[i] = (double)(r * 1000 + rank + i);
        for (int q = 0; q < size; q++) want += (double)(r * 1000 + q);
        st = tlink_allreduce(c, v, v, 4, TLINK_F64, TLINK_SUM);
        if (st) {
            fprintf(stderr, "rank %d round %d: allreduce: %s: %s\n", rank, r, tlink_error_string(st), tlink_last_error(c));
            return 1;
        }
        for (int i = 0; i < 4; i++)
            if (v[i] != want + size * i) {
                fprintf(stderr, "rank %d round %d: allreduce gave %g, want %g\n", rank, r, v[i], want + size * i);
                return 1;
            }
        st = tlink_comm_destroy(c);
        if (st) {
            fprintf(stderr, "rank %d round %d: destroy: %s: %s\n", rank, r, tlink_error_string(st), tlink_last_error(NULL));
            return 1;
        }
    }
    return 0;
}

/* a free port on loopback (bound, read, closed: the ranks' rank 0 binds it next) */
static int free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) || getsockname(fd, (struct sockaddr *)&sa, &len)) return -1;
    close(fd);
    return ntohs(sa.sin_port);
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 4;
    churn_arg a = {.rounds = argc > 2 ? atoi(argv[2]) : 40};
    for (int i = 3; i < argc; i++)
        if (!strcmp(argv[i], "--tcp")) a.tcp = 1;
    if (n < 2 || a.rounds < 1) {
        fprintf(stderr, "usage: tlink_test_churn NRANKS>=2 ROUNDS [--tcp]\n");
        return 2;
    }
    a.port = free_port();
    if (a.port <= 0) {
        fprintf(stderr, "no free port\n");
        return 1;
    }
    int failed = tlt_launch(n, rank_main, &a, 240, NULL);
    if (failed) {
        fprintf(stderr, "FAIL: %s (%d ranks, %d rounds)\n", failed < 0 ? "watchdog" : "ranks failed", n, a.rounds);
        return 1;
    }
    printf("churn: %d ranks, %d rounds of create/allreduce/destroy with rank 0's store: ok\n", n, a.rounds);
    return 0;
}
