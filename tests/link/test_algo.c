/* test_algo.c — algorithm selection: TLINK_ALGO forcing (global and per collective), fallback
 * when a forced algorithm does not apply, the cost-model API, TLINK_COST_FILE, and the
 * TLINK_DEBUG=info log line. */
#include "tl_launch.h"

static int fails;
#define EXPECT(cond, ...) do { if (!(cond)) { fails++; fprintf(stderr, "rank %d FAIL %s:%d: ", rank, __FILE__, __LINE__); fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

static int phase;

static int rank_main(int rank, int size, const char *addr, void *arg) {
    (void)arg;
    tlink_comm *c;
    if (tlt_init(&c, rank, size, addr)) {
        fprintf(stderr, "init: %s\n", tlink_last_error(NULL));
        return 1;
    }
    float x[100] = {0};
    if (phase == 0) { /* TLINK_ALGO=rabenseifner */
        tlink_allreduce(c, x, x, 100, TLINK_F32, TLINK_SUM);
        EXPECT(!strcmp(tlink_last_algo(c), "rabenseifner"), "allreduce ran %s", tlink_last_algo(c));
        tlink_broadcast(c, x, 100, TLINK_F32, 0);
        EXPECT(strcmp(tlink_last_algo(c), "rabenseifner") && tlink_last_algo(c)[0], "broadcast fell back: %s", tlink_last_algo(c));
        tlink_comm_set_algo(c, TLINK_COLL_ALLREDUCE, TLINK_ALGO_AUTO);
        tlink_allreduce(c, x, x, 100, TLINK_F32, TLINK_SUM);
        tlink_algo chosen = TLINK_ALGO_COUNT;
        double us = tlink_predict_us(c, TLINK_COLL_ALLREDUCE, TLINK_ALGO_AUTO, 400, &chosen);
        EXPECT(us > 0 && !strcmp(tlink_algo_name(chosen), tlink_last_algo(c)), "auto: predicted %g %s ran %s", us,
               tlink_algo_name(chosen), tlink_last_algo(c));
        EXPECT(tlink_predict_us(c, TLINK_COLL_ALLTOALL, TLINK_ALGO_RING, 400, NULL) < 0, "ring does not apply to alltoall");
        EXPECT(tlink_predict_us(c, TLINK_COLL_ALLREDUCE, TLINK_ALGO_RING, 1 << 20, NULL) >
                   tlink_predict_us(c, TLINK_COLL_ALLREDUCE, TLINK_ALGO_RING, 1 << 10, NULL), "monotone in size");
    } else { /* TLINK_ALGO=allreduce:ring,broadcast:dbt + TLINK_COST_FILE */
        tlink_allreduce(c, x, x, 100, TLINK_F32, TLINK_SUM);
        EXPECT(!strcmp(tlink_last_algo(c), "ring"), "allreduce ran %s", tlink_last_algo(c));
        tlink_broadcast(c, x, 100, TLINK_F32, 0);
        EXPECT(!strcmp(tlink_last_algo(c), "double_binary_tree"), "broadcast ran %s", tlink_last_algo(c));
        double a = 0, b = 0;
        tlink_comm_get_cost(c, TLINK_TRANSPORT_SHM, &a, &b);
        EXPECT(a > 2.9e-6 && a < 3.1e-6 && b > 0.19e-9 && b < 0.21e-9, "cost file: alpha %g beta %g", a, b);
        EXPECT(tlink_comm_set_cost(c, TLINK_TRANSPORT_SHM, 1e-6, 1e-10) == TLINK_OK, "set cost");
        tlink_comm_get_cost(c, TLINK_TRANSPORT_SHM, &a, &b);
        EXPECT(a == 1e-6 && b == 1e-10, "set cost took");
    }
    tlink_comm_destroy(c);
    return fails ? 1 : 0;
}

int main(void) {
    int bad = 0;
    /* phase 1 first: the log level is read once per process (children inherit it) */
    phase = 1;
    setenv("TLINK_ALGO", "allreduce:ring,broadcast:dbt", 1);
    FILE *f = fopen("tlink_test_algo.topo", "w");
    fprintf(f, "topology 1\ncost shm alpha_us=3 beta_gbps=5\ncost tcp alpha_us=40 beta_gbps=1\nreduce gbps=8\n");
    fclose(f);
    setenv("TLINK_COST_FILE", "tlink_test_algo.topo", 1);
    setenv("TLINK_DEBUG", "info", 1);
    fflush(stderr);
    int saved = dup(2);
    if (!freopen("tlink_test_algo.log", "w", stderr)) return 1;
    bad += tlt_launch(2, rank_main, NULL, 60, NULL) != 0;
    fflush(stderr);
    dup2(saved, 2);
    char line[1024];
    int seen = 0;
    FILE *lf = fopen("tlink_test_algo.log", "r");
    while (lf && fgets(line, sizeof line, lf)) {
        if (strstr(line, "tlink INFO: allreduce 400 B f32: chose ring (predicted")) seen = 1;
        if (strstr(line, "FAIL")) fputs(line, stdout);
    }
    if (lf) fclose(lf);
    if (!seen) { printf("FAIL: no 'allreduce 400 B f32: chose ring (predicted ...' line in the TLINK_DEBUG=info log\n"); bad++; }
    /* phase 0: one algorithm for everything; not-applicable collectives fall back */
    phase = 0;
    unsetenv("TLINK_COST_FILE");
    setenv("TLINK_ALGO", "rabenseifner", 1);
    bad += tlt_launch(3, rank_main, NULL, 60, NULL) != 0;
    printf("%s\n", bad ? "FAIL" : "ok");
    return bad ? 1 : 0;
}
