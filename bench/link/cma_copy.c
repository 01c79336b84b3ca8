/* bench/link/cma_copy.c — how fast this machine's kernel copies another process's memory
 * (process_vm_readv, what TileLink's shared-memory single copy uses, tilelink/src/p2p.c)
 * against memcpy of the same bytes in one process: a forked child holds the source; the parent
 * reads it in pieces, as the single-copy receive does, then memcpys its own copy. Prints GB/s
 * of each for 3 rounds. TileLink's setup makes the same comparison (transport.c, cma_speed).
 *
 *   cc -O2 bench/link/cma_copy.c -o cma_copy && ./cma_copy [MiB (8)] [piece KiB (256)]
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    const size_t n = (size_t)(argc > 1 ? atoll(argv[1]) : 8) << 20, piece = (size_t)(argc > 2 ? atoll(argv[2]) : 256) << 10;
    if (!n || !piece) {
        fprintf(stderr, "usage: %s [MiB] [piece KiB]\n", argv[0]);
        return 2;
    }
    char *src = malloc(n), *dst = malloc(n);
    if (!src || !dst) return 1;
    memset(src, 1, n);
    memset(dst, 2, n);
    const pid_t child = fork(); /* its copy of src stays at the same address */
    if (child < 0) { perror("fork"); return 1; }
    if (child == 0) {
        pause();
        return 0;
    }
    int rc = 0;
    for (int r = 0; r < 3 && !rc; r++) {
        const double t0 = now();
        for (size_t o = 0; o < n; o += piece) {
            const size_t m = n - o < piece ? n - o : piece;
            struct iovec lo = {dst + o, m}, re = {src + o, m};
            if (process_vm_readv(child, &lo, 1, &re, 1, 0) != (ssize_t)m) {
                perror("process_vm_readv");
                rc = 1;
                break;
            }
        }
        const double t1 = now();
        memcpy(dst, src, n);
        __asm__ __volatile__("" : : "r"(dst) : "memory");
        const double t2 = now();
        if (!rc)
            printf("%zu MiB in %zu KiB pieces: process_vm_readv %.1f GB/s, memcpy %.1f GB/s (%.0f%%)\n", n >> 20, piece >> 10,
                   (double)n / (t1 - t0) * 1e-9, (double)n / (t2 - t1) * 1e-9, 100.0 * (t2 - t1) / (t1 - t0));
    }
    kill(child, SIGKILL);
    return rc;
}
