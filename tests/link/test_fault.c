/* test_fault.c — timeouts and dead peers end in clear errors, never hangs:
 *  1. a rank never joins: the others get TLINK_ERR_TIMEOUT naming it, within the deadline;
 *  2. a rank _exits mid-collective (shm): the others get TLINK_ERR_PEER_FAILED naming it fast;
 *  3. the same over TCP;
 *  4. tlink_comm_abort wakes a peer blocked in a collective;
 *  5. init from torchrun-style variables with rank 0 hosting the store (TCP forced), then
 *     rank 0 - the store's host - dies: the others still fail fast;
 *  6. like 2 with the direct shared-memory allreduce (small messages);
 *  7. one rank sizes shared memory differently: a clear error, no crash (SIGBUS). */
#include "tl_launch.h"

static int scenario;

/* a port that was free a moment ago (for the rank-0-hosted store), below Linux's ephemeral
 * range so that no other socket is handed it in between */
static int free_port(void) {
    for (int i = 0; i < 500; i++) {
        int p = 21000 + (int)(((unsigned)getpid() * 7919u + (unsigned)i * 104729u) % 11000u);
        tlink_store_server *s;
        if (tlink_store_server_start("0.0.0.0", p, &s) == TLINK_OK) {
            tlink_store_server_stop(s);
            return p;
        }
    }
    return 29500;
}

static int rank_main(int rank, int size, const char *addr, void *arg) {
    (void)arg;
    if (scenario == 1) {
        if (rank == size - 1) return 0; /* never joins */
        tlink_config cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.rank = rank;
        cfg.size = size;
        cfg.store_addr = addr;
        cfg.host_store = -1;
        cfg.timeout_s = 2.0;
        tlink_comm *c = NULL;
        double t0 = tlt_now();
        tlink_status st = tlink_comm_init_config(&c, &cfg);
        double dt = tlt_now() - t0;
        const char *msg = tlink_last_error(NULL);
        char want[32];
        snprintf(want, sizeof want, "rank %d ", size - 1);
        int ok = st == TLINK_ERR_TIMEOUT && strstr(msg, want) && dt < 6.0 && c == NULL;
        fprintf(stderr, "scenario 1 rank %d: %s after %.2f s: %s -> %s\n", rank, tlink_error_string(st), dt, msg,
                ok ? "ok" : "WRONG");
        return ok ? 0 : 1;
    }
    tlink_comm *c = NULL;
    tlink_status st;
    if (scenario == 7) {
        if (rank == 1) setenv("TLINK_SHM_DIRECT_SEGMENT", "65536", 1);
        tlink_config cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.rank = rank;
        cfg.size = size;
        cfg.store_addr = addr;
        cfg.host_store = -1;
        cfg.timeout_s = 2.0;
        st = tlink_comm_init_config(&c, &cfg);
        const char *msg = tlink_last_error(NULL);
        int ok = st != TLINK_OK && (rank != 1 || (st == TLINK_ERR_BOOTSTRAP && strstr(msg, "TLINK_SHM_DIRECT_SEGMENT")));
        fprintf(stderr, "scenario 7 rank %d: %s: %s -> %s\n", rank, tlink_error_string(st), msg, ok ? "ok" : "WRONG");
        if (c) tlink_comm_destroy(c);
        return ok ? 0 : 1;
    }
    if (scenario == 5) {
        char v[32];
        snprintf(v, sizeof v, "%d", rank);
        setenv("RANK", v, 1);
        snprintf(v, sizeof v, "%d", size);
        setenv("WORLD_SIZE", v, 1);
        setenv("MASTER_ADDR", "127.0.0.1", 1);
        setenv("MASTER_PORT", (const char *)arg, 1);
        st = tlink_comm_init_env(&c);
        if (!st && (tlink_comm_rank(c) != rank || tlink_comm_size(c) != size)) st = TLINK_ERR_INTERNAL;
    } else {
        st = tlt_init(&c, rank, size, addr);
    }
    if (st) {
        fprintf(stderr, "rank %d: init: %s\n", rank, tlink_last_error(NULL));
        return 1;
    }
    size_t n = scenario == 6 ? 1000 : 1 << 18;
    float *x = calloc(n, sizeof(float));
    tlink_comm_set_algo(c, TLINK_COLL_ALLREDUCE, scenario == 6 ? TLINK_ALGO_DIRECT : TLINK_ALGO_RING);
    for (int i = 0; i < 3; i++) {
        st = tlink_allreduce(c, x, x, n, TLINK_F32, TLINK_SUM);
        if (st) {
            fprintf(stderr, "rank %d: warm-up allreduce: %s\n", rank, tlink_last_error(c));
            return 1;
        }
    }
    if (scenario == 4) {
        if (rank == size - 1) {
            usleep(200000);
            tlink_comm_abort(c);
            tlink_comm_destroy(c);
            return 0;
        }
    } else if (rank == (scenario == 5 ? 0 : size - 1)) {
        usleep(100000);
        _exit(7); /* dies without a word */
    }
    double t0 = tlt_now();
    for (int i = 0; i < 100000 && !st; i++) st = tlink_allreduce(c, x, x, n, TLINK_F32, TLINK_SUM);
    double dt = tlt_now() - t0;
    const char *msg = tlink_last_error(c);
    char want[32];
    snprintf(want, sizeof want, "rank %d", scenario == 5 ? 0 : size - 1);
    int names = strstr(msg, want) != NULL;
    /* scenario 5: the store died with rank 0, so ranks that only see a neighbour close its
     * connections cannot learn the first cause */
    int ok = st == TLINK_ERR_PEER_FAILED && dt < 8.0 && (names || scenario == 5);
    fprintf(stderr, "scenario %d rank %d: %s after %.2f s: %s -> %s\n", scenario, rank, tlink_error_string(st), dt,
            msg, ok ? "ok" : "WRONG");
    /* a broken communicator keeps failing fast, and destroy does not hang */
    tlink_status st2 = tlink_barrier(c);
    if (st2 != TLINK_ERR_PEER_FAILED) ok = 0;
    tlink_comm_destroy(c);
    free(x);
    return ok ? 0 : 1;
}

int main(void) {
    setenv("TLINK_TIMEOUT", "30", 1);
    int fails = 0;
    for (scenario = 1; scenario <= 7; scenario++) {
        int n = scenario == 1 || scenario == 7 ? 3 : 4;
        if (scenario == 3 || scenario == 5) setenv("TLINK_TRANSPORT", "tcp", 1);
        else unsetenv("TLINK_TRANSPORT");
        int codes[8] = {0};
        double t0 = tlt_now();
        char port[16];
        snprintf(port, sizeof port, "%d", free_port());
        int failed = tlt_launch(n, rank_main, port, 40, codes);
        int bad = failed < 0;
        for (int r = 0; r < n; r++) {
            int want = ((scenario == 2 || scenario == 3 || scenario == 6) && r == n - 1) || (scenario == 5 && r == 0) ? 7 : 0;
            if (codes[r] != want) {
                fprintf(stderr, "scenario %d: rank %d exited %d, expected %d\n", scenario, r, codes[r], want);
                bad = 1;
            }
        }
        printf("scenario %d: %s (%.2f s)\n", scenario, bad ? "FAIL" : "ok", tlt_now() - t0);
        fails += bad;
    }
    return fails ? 1 : 0;
}
