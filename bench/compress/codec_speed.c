/* codec_speed.c — CPU cost of tlink_compressed_allreduce's codec (compression, decompression,
 * error-feedback residual updates) with N ranks on one machine (shared memory: the exchange is
 * cheap and reported apart): the codec seconds per call (wall, the library's stats) and the
 * calling thread's CPU seconds for the whole call (codec plus the cheap exchange; steadier than
 * wall time on a loaded machine), each the best of ITERS, and ns per element.
 * Also writes a checksum of the result so two builds can be compared bit for bit.
 * Usage: codec_speed [MB=100] [ITERS=5] [RANKS=2] [METHOD=sign1] */
#include "../../tests/link/tl_launch.h"

#include <math.h>
#include <stdint.h>

static size_t count;
static int iters, method;

static int rank_main(int rank, int size, const char *addr, void *arg) {
    (void)arg;
    tlink_comm *c;
    if (tlt_init(&c, rank, size, addr) != TLINK_OK) return 1;
    float *x = malloc(count * 4), *y = malloc(count * 4);
    if (!x || !y) return 1;
    uint64_t s = 12345u + (uint64_t)rank * 7919u;
    for (size_t i = 0; i < count; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((int64_t)(s >> 33) - (1ll << 30)) * 0x1p-31f;
    }
    tlink_compress *cs;
    if (tlink_compress_create(c, (tlink_compress_method)method, count, 0, 1, &cs) != TLINK_OK) return 1;
    double best = 1e30, bestc = 1e30, bestcpu = 1e30;
    for (int it = 0; it < iters; it++) {
        tlink_barrier(c);
        struct timespec c0, c1;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
        if (tlink_compressed_allreduce(cs, x, y, count, TLINK_AVG) != TLINK_OK) return 1;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
        double cpu = (double)(c1.tv_sec - c0.tv_sec) + (double)(c1.tv_nsec - c0.tv_nsec) * 1e-9;
        if (cpu < bestcpu) bestcpu = cpu;
        tlink_compress_stats st;
        tlink_compress_get_stats(cs, &st);
        if (st.last_codec_s < best) best = st.last_codec_s;
        if (st.last_comm_s < bestc) bestc = st.last_comm_s;
    }
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < count; i++) {
        uint32_t u;
        memcpy(&u, &y[i], 4);
        h = (h ^ u) * 1099511628211ull;
    }
    if (rank == 0)
        printf("%s ranks=%d count=%zu codec_s=%.4f (%.2f ns/elem) exchange_s=%.4f cpu_s=%.4f (%.2f ns/elem) checksum=%016llx\n",
               tlink_compress_name((tlink_compress_method)method), size, count, best, best * 1e9 / (double)count, bestc, bestcpu,
               bestcpu * 1e9 / (double)count,
               (unsigned long long)h);
    tlink_compress_destroy(cs);
    free(x);
    free(y);
    tlink_comm_destroy(c);
    return 0;
}

int main(int argc, char **argv) {
    double mb = argc > 1 ? atof(argv[1]) : 100;
    iters = argc > 2 ? atoi(argv[2]) : 5;
    int n = argc > 3 ? atoi(argv[3]) : 2;
    method = argc > 4 ? tlink_compress_from_name(argv[4]) : 1;
    if (mb <= 0 || iters < 1 || n < 1 || n > 16 || method < 0) {
        fprintf(stderr, "usage: codec_speed [MB] [ITERS] [RANKS] [METHOD]\n");
        return 2;
    }
    count = (size_t)(mb * 1e6 / 4);
    return tlt_launch(n, rank_main, NULL, 600.0, NULL) ? 1 : 0;
}
