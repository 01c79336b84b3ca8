/* bench_tlink.c — a developer micro-benchmark (not a test): all-reduce time per algorithm and
 * size with the in-test launcher. Usage: bench_tlink NRANKS [max_bytes] */
#include "tl_launch.h"

static size_t maxb = 16 << 20;

static int rank_main(int rank, int size, const char *addr, void *arg) {
    (void)arg;
    tlink_comm *c;
    tlink_status st = tlt_init(&c, rank, size, addr);
    if (st) {
        fprintf(stderr, "init: %s\n", tlink_last_error(NULL));
        return 1;
    }
    float *x = calloc(maxb / 4 + 1, 4);
    const char *algos[] = {"auto", "ring", "recursive_doubling", "rabenseifner", "binomial_tree", "double_binary_tree", "direct"};
    if (rank == 0) printf("%-20s %10s %12s %10s  %s\n", "algorithm", "bytes", "time_us", "busbw_GBs", "chosen (predicted us)");
    for (int a = 0; a < 7; a++) {
        tlink_comm_set_algo(c, TLINK_COLL_ALLREDUCE, (tlink_algo)tlink_algo_from_name(algos[a]));
        for (size_t b = 8; b <= maxb; b *= 8) {
            size_t n = b / 4;
            int it = b <= 65536 ? 200 : b <= (1 << 20) ? 20 : 5;
            for (int w = 0; w < 3; w++) tlink_allreduce(c, x, x, n, TLINK_F32, TLINK_SUM);
            tlink_barrier(c);
            double best = 1e9, pred = 0;
            char chosen[32] = "";
            for (int rep = 0; rep < 3; rep++) {
                double t0 = tlt_now();
                for (int i = 0; i < it; i++) tlink_allreduce(c, x, x, n, TLINK_F32, TLINK_SUM);
                double t = (tlt_now() - t0) / it;
                snprintf(chosen, sizeof chosen, "%s", tlink_last_algo(c));
                pred = tlink_last_predicted_us(c);
                tlink_allreduce(c, &t, &t, 1, TLINK_F64, TLINK_MAX);
                if (t < best) best = t;
            }
            if (rank == 0)
                printf("%-20s %10zu %12.2f %10.3f  %s (%.1f)\n", algos[a], b, best * 1e6,
                       (double)b / best * 2.0 * (size - 1) / size / 1e9, chosen, pred);
        }
    }
    double al, be;
    tlink_comm_get_cost(c, TLINK_TRANSPORT_SHM, &al, &be);
    if (rank == 0) printf("cost model shm: alpha %.2f us, %.2f GB/s\n", al * 1e6, 1e-9 / be);
    tlink_comm_destroy(c);
    free(x);
    return 0;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 2;
    if (argc > 2) maxb = (size_t)atol(argv[2]);
    return tlt_launch(n, rank_main, NULL, 300, NULL) ? 1 : 0;
}
