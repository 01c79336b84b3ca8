/* test_shm.c — the shared-memory segment's pages are populated at setup (transport.c,
 * shm_prefault): after tlink_comm_init, every page of each rank's outgoing channels and of its
 * direct slots is resident (mincore), none of which the bootstrap itself wrote beyond the
 * channels' first 64 KiB (the cost-model ping-pong is off); with TLINK_SHM_PREFAULT=0 the same
 * pages are not resident, so the check can tell the two apart. Skips (77) where the kernel has
 * no MADV_POPULATE_WRITE (Linux < 5.14), where the library leaves the pages to the first touch. */
#include "tl_launch.h"

#include <errno.h>
#include <sys/mman.h>

#include "tl_internal.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static int want_resident;

/* resident pages of [p, p + len) (page aligned), -1 on error */
static long resident(const char *p, size_t len) {
    size_t np = len / 4096;
    unsigned char *v = malloc(np ? np : 1);
    if (!v || mincore((void *)p, len, v) != 0) { free(v); return -1; }
    long n = 0;
    for (size_t i = 0; i < np; i++) n += v[i] & 1;
    free(v);
    return n;
}

static int rank_main(int rank, int size, const char *addr, void *arg) {
    (void)arg;
    tlink_comm *c;
    if (tlt_init(&c, rank, size, addr)) {
        fprintf(stderr, "rank %d: init: %s\n", rank, tlink_last_error(NULL));
        return 1;
    }
    int bad = 0;
    long pages = 0, res = 0;
    const size_t skip = 64 << 10; /* the bootstrap's own small messages use the channels' start */
    for (int r = 0; r < size; r++) {
        if (r == rank || c->peers[r].transport != TLINK_TRANSPORT_SHM) continue;
        long k = resident(c->peers[r].out_data + skip, c->shm_cap - skip);
        pages += (long)((c->shm_cap - skip) / 4096);
        res += k;
        if (k < 0) bad = 1;
    }
    int me = c->local_rank, nl = c->local_size;
    const char *slots[] = {c->dbig + (size_t)me * 2 * c->dseg, c->dbig + (size_t)(nl + me) * 2 * c->dseg};
    for (int i = 0; i < 2; i++) {
        long k = resident(slots[i], 2 * c->dseg);
        pages += (long)(2 * c->dseg / 4096);
        res += k;
        if (k < 0) bad = 1;
    }
    if (bad) fprintf(stderr, "rank %d FAIL: mincore: %s\n", rank, strerror(errno));
    else if (want_resident && res != pages) {
        fprintf(stderr, "rank %d FAIL: %ld of %ld pages it writes first are resident after setup\n", rank, res, pages);
        bad = 1;
    } else if (!want_resident && res == pages) {
        fprintf(stderr, "rank %d FAIL: TLINK_SHM_PREFAULT=0, yet all %ld pages are resident\n", rank, pages);
        bad = 1;
    }
    /* and the collectives still work over the populated segment */
    float x[4096];
    for (int i = 0; i < 4096; i++) x[i] = (float)(rank + i % 7);
    if (tlink_allreduce(c, x, x, 4096, TLINK_F32, TLINK_SUM) != TLINK_OK ||
        x[10] != (float)(size * (size - 1) / 2 + size * 3)) {
        fprintf(stderr, "rank %d FAIL: allreduce gave %g\n", rank, x[10]);
        bad = 1;
    }
    tlink_comm_destroy(c);
    return bad;
}

int main(void) {
    void *probe = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (probe == MAP_FAILED) return 1;
    int ok = madvise(probe, 4096, MADV_POPULATE_WRITE) == 0;
    munmap(probe, 4096);
    if (!ok) {
        printf("skip: no MADV_POPULATE_WRITE here (%s)\n", strerror(errno));
        return 77;
    }
    setenv("TLINK_COST_MEASURE", "0", 1);
    int bad = 0;
    want_resident = 1;
    bad += tlt_launch(3, rank_main, NULL, 60, NULL) != 0;
    setenv("TLINK_SHM_PREFAULT", "0", 1);
    want_resident = 0;
    bad += tlt_launch(3, rank_main, NULL, 60, NULL) != 0;
    printf("%s\n", bad ? "FAIL" : "ok");
    return bad ? 1 : 0;
}
