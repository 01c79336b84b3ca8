/* test_ft.c — fault tolerance (label "link"):
 *  1. a rank stops (SIGSTOP: alive, silent, no RST — how a host cut off looks) while the
 *     others wait in a nonblocking allreduce: the heartbeats fail it with
 *     TLINK_ERR_PEER_FAILED naming the rank, within 2 s of its last sign of life (shm, then
 *     TCP); the survivors shrink to a working communicator;
 *  2. kill -9 of a rank mid-allreduce with a buddy checkpoint each step: detection, shrink
 *     (agreed failed set; one survivor notices a second later than the others), restore,
 *     and further steps with correct sums;
 *  3. tlink_comm_revoke: ranks blocked in a barrier get TLINK_ERR_REVOKED (shm, then TCP);
 *  4. kill -9 and a replacement process: the survivors rejoin, the replacement inits as the
 *     same rank, the buddy copy gives it its state back, training continues on 4 ranks;
 *  5. checkpoint files: round trip, a flipped byte and a truncation give TLINK_ERR_CORRUPT.
 * Times are printed, not asserted against tight bounds (CI machines are slow and shared);
 * the bounds below are generous multiples of what the design promises. */
#include "tl_launch.h"

#include <pthread.h>

static int scenario;

#define NSTEP 12
#define VLEN 4096

static int fail(int rank, const char *what, tlink_status st, tlink_comm *c) {
    fprintf(stderr, "scenario %d rank %d: %s: %s: %s\n", scenario, rank, what, tlink_error_string(st),
            tlink_last_error(c));
    return 1;
}

/* state carried between steps: a step counter and a running value checked at the end */
typedef struct { int64_t step; double acc; int64_t id; } state_t;

/* one "training step" on comm: allreduce a vector whose sum is known, fold it into acc */
static tlink_status step_fn(tlink_comm *c, int64_t step, state_t *s, float *v) {
    int n = tlink_comm_size(c);
    for (int i = 0; i < VLEN; i++) v[i] = (float)(step + 1);
    tlink_status st = tlink_allreduce(c, v, v, VLEN, TLINK_F32, TLINK_SUM);
    if (st) return st;
    for (int i = 0; i < VLEN; i++)
        if (v[i] != (float)(n * (step + 1))) return TLINK_ERR_INTERNAL;
    s->acc += (double)(step + 1);
    s->step = step + 1;
    return TLINK_OK;
}

static int rank_stop(int rank, int size, const char *addr) {
    tlink_comm *c;
    tlink_status st = tlt_init(&c, rank, size, addr);
    if (st) return fail(rank, "init", st, NULL);
    float *x = calloc(VLEN, sizeof(float));
    tlink_store *kv = NULL;
    if (tlink_store_connect(addr, 10, &kv)) return fail(rank, "store", TLINK_ERR_BOOTSTRAP, NULL);
    st = tlink_allreduce(c, x, x, VLEN, TLINK_F32, TLINK_SUM);
    if (st) return fail(rank, "warm-up", st, c);
    char key[64];
    snprintf(key, sizeof key, "t%d/victim", scenario);
    if (rank == size - 1) {
        pid_t me = getpid();
        tlink_store_set(kv, key, &me, sizeof me);
        raise(SIGSTOP); /* silent from now on; rank 0 kills it after the shrink */
        _exit(3);
    }
    void *v = NULL;
    tlink_store_get(kv, key, &v, NULL, 10);
    pid_t victim = v ? *(pid_t *)v : 0;
    tlink_free(v);
    usleep(100000); /* the victim is stopped by now: its last heartbeat went out before */
    double t0 = tlt_now();
    tlink_request *req = NULL;
    st = tlink_iallreduce(c, x, x, VLEN, TLINK_F32, TLINK_SUM, &req);
    if (!st) st = tlink_wait(req);
    double dt = tlt_now() - t0;
    char want[32];
    snprintf(want, sizeof want, "rank %d", size - 1);
    /* Detected by the heartbeats (the error says so), not by the 30 s deadline: the
     * mechanism is checked, the time is only reported (no timed assertions in tests). */
    int ok = st == TLINK_ERR_PEER_FAILED && strstr(tlink_last_error(c), want) &&
             strstr(tlink_last_error(c), "heartbeat") && dt < 30.0;
    fprintf(stderr, "scenario %d rank %d: pending iallreduce -> %s after %.2f s: %s -> %s\n", scenario, rank,
            tlink_error_string(st), dt, tlink_last_error(c), ok ? "ok" : "WRONG");
    /* later calls fail fast too */
    if (tlink_barrier(c) != TLINK_ERR_PEER_FAILED) ok = 0;
    tlink_comm *s = NULL;
    double t1 = tlt_now();
    st = tlink_comm_shrink(c, &s);
    if (st) { ok = 0; fail(rank, "shrink", st, c); }
    int failed[4], nf = tlink_comm_failed_ranks(c, failed, 4);
    if (nf != 1 || failed[0] != size - 1) { ok = 0; fprintf(stderr, "rank %d: failed set has %d ranks\n", rank, nf); }
    if (s) {
        int64_t r = rank;
        st = tlink_allreduce(s, &r, &r, 1, TLINK_I64, TLINK_SUM);
        int64_t want_sum = (int64_t)(size - 1) * (size - 2) / 2;
        if (st || r != want_sum || tlink_comm_size(s) != size - 1 || tlink_comm_rank(s) != rank) {
            ok = 0;
            fail(rank, "allreduce on the shrunk communicator", st, s);
        }
        fprintf(stderr, "scenario %d rank %d: shrink to %d ranks in %.3f s\n", scenario, rank, tlink_comm_size(s),
                tlt_now() - t1);
        tlink_comm_destroy(s);
    }
    if (rank == 0 && victim > 0) kill(victim, SIGKILL);
    tlink_comm_destroy(c);
    tlink_store_close(kv);
    free(x);
    return ok ? 0 : 1;
}

static int rank_kill_shrink(int rank, int size, const char *addr) {
    tlink_comm *c;
    tlink_status st = tlt_init(&c, rank, size, addr);
    if (st) return fail(rank, "init", st, NULL);
    float *v = calloc(VLEN, sizeof(float));
    tlink_ckpt *ck;
    tlink_ckpt_create(&ck);
    state_t s = {0, 0, rank};
    const int victim = 1, kill_step = 5;
    int ok = 1, recovered = 0;
    int64_t step = 0;
    while (step < NSTEP) {
        if (rank == victim && step == kill_step) raise(SIGKILL);
        /* rank 0 notices a second later than the others: they wait for it in the shrink
         * (alive, heartbeating, not known failed) and all agree */
        if (rank == 0 && step == kill_step && !recovered) usleep(1000000);
        st = step_fn(c, step, &s, v);
        if (!st) st = tlink_ckpt_save(ck, c, s.step, &s, sizeof s);
        if (!st) { step = s.step; continue; }
        double t0 = tlt_now();
        if (st != TLINK_ERR_PEER_FAILED || recovered) { ok = 0; fail(rank, "step", st, c); break; }
        tlink_comm *n = NULL;
        st = tlink_comm_shrink(c, &n);
        if (st) { ok = 0; fail(rank, "shrink", st, c); break; }
        int failed[4], nf = tlink_comm_failed_ranks(c, failed, 4);
        if (nf != 1 || failed[0] != victim) ok = 0;
        tlink_comm_destroy(c);
        c = n;
        size_t nb = 0;
        int64_t rs = -1;
        st = tlink_ckpt_restore(ck, c, &s, sizeof s, &nb, &rs);
        if (st || nb != sizeof s || rs != s.step || s.id != rank) { ok = 0; fail(rank, "restore", st, c); break; }
        /* every survivor resumes at the same step */
        int64_t mn = rs, mx = rs;
        tlink_allreduce(c, &mn, &mn, 1, TLINK_I64, TLINK_MIN);
        tlink_allreduce(c, &mx, &mx, 1, TLINK_I64, TLINK_MAX);
        if (mn != mx) { ok = 0; fprintf(stderr, "rank %d: restored steps differ (%lld..%lld)\n", rank, (long long)mn, (long long)mx); }
        fprintf(stderr, "scenario %d rank %d: lost rank %d at step %lld; shrink + restore to step %lld in %.3f s\n", scenario, rank,
                victim, (long long)step, (long long)rs, tlt_now() - t0);
        step = rs;
        recovered = 1;
    }
    /* acc = sum of (k+1) over all steps done */
    double want = (double)NSTEP * (NSTEP + 1) / 2;
    if (s.acc != want || !recovered || tlink_comm_size(c) != size - 1) {
        ok = 0;
        fprintf(stderr, "rank %d: acc %.0f (want %.0f), recovered %d\n", rank, s.acc, want, recovered);
    }
    tlink_comm_destroy(c);
    tlink_ckpt_free(ck);
    free(v);
    return ok ? 0 : 1;
}

static int rank_revoke(int rank, int size, const char *addr) {
    tlink_comm *c;
    tlink_status st = tlt_init(&c, rank, size, addr);
    if (st) return fail(rank, "init", st, NULL);
    int ok = 1;
    if (rank == 0) {
        usleep(300000);
        tlink_comm_revoke(c);
        st = tlink_barrier(c);
        if (st != TLINK_ERR_REVOKED) ok = 0;
    } else {
        double t0 = tlt_now();
        st = tlink_barrier(c);
        double dt = tlt_now() - t0;
        ok = st == TLINK_ERR_REVOKED && strstr(tlink_last_error(c), "revoked by rank 0") && dt < 3.0;
        fprintf(stderr, "scenario %d rank %d: barrier -> %s after %.2f s: %s -> %s\n", scenario, rank,
                tlink_error_string(st), dt, tlink_last_error(c), ok ? "ok" : "WRONG");
        if (tlink_allreduce(c, &dt, &dt, 1, TLINK_F64, TLINK_SUM) != TLINK_ERR_REVOKED || !tlink_comm_is_revoked(c)) ok = 0;
    }
    /* a revoked communicator can be shrunk: nobody failed, so everyone is in */
    tlink_comm *s = NULL;
    st = tlink_comm_shrink(c, &s);
    if (st || tlink_comm_size(s) != size) { ok = 0; fail(rank, "shrink after revoke", st, c); }
    if (s && tlink_barrier(s)) ok = 0;
    tlink_comm_destroy(s);
    tlink_comm_destroy(c);
    return ok ? 0 : 1;
}

static int rank_rejoin(int rank, int size, const char *addr) {
    const int victim = 2, kill_step = 4;
    int replacement = 0;
    if (rank == victim) {
        pid_t child = fork();
        if (child > 0) {
            /* this process plays the launcher's restarted rank: it starts when the first dies */
            int status;
            waitpid(child, &status, 0);
            if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) {
                fprintf(stderr, "scenario 4: the original rank %d ended with status %d, not SIGKILL\n", rank, status);
                return 1;
            }
            replacement = 1;
        }
    }
    tlink_comm *c;
    tlink_status st = tlt_init(&c, rank, size, addr);
    if (st) return fail(rank, "init", st, NULL);
    float *v = calloc(VLEN, sizeof(float));
    tlink_ckpt *ck;
    tlink_ckpt_create(&ck);
    state_t s = {0, 0, rank};
    int ok = 1, recovered = 0;
    int64_t step = 0;
    if (replacement) {
        size_t nb = 0;
        int64_t rs = -1;
        st = tlink_ckpt_restore(ck, c, &s, sizeof s, &nb, &rs);
        if (st || nb != sizeof s || s.id != rank || rs != s.step) { ok = 0; fail(rank, "replacement restore", st, c); }
        fprintf(stderr, "scenario %d rank %d (replacement): state of step %lld from the buddy copy\n", scenario, rank, (long long)rs);
        step = rs;
        recovered = 1;
    }
    while (ok && step < NSTEP) {
        if (rank == victim && !replacement && step == kill_step) raise(SIGKILL);
        st = step_fn(c, step, &s, v);
        if (!st) st = tlink_ckpt_save(ck, c, s.step, &s, sizeof s);
        if (!st) { step = s.step; continue; }
        double t0 = tlt_now();
        if (st != TLINK_ERR_PEER_FAILED || recovered) { ok = 0; fail(rank, "step", st, c); break; }
        tlink_comm *n = NULL;
        st = tlink_comm_rejoin(c, &n);
        if (st) { ok = 0; fail(rank, "rejoin", st, c); break; }
        tlink_comm_destroy(c);
        c = n;
        size_t nb = 0;
        int64_t rs = -1;
        st = tlink_ckpt_restore(ck, c, &s, sizeof s, &nb, &rs);
        if (st || nb != sizeof s || rs != s.step || s.id != rank) { ok = 0; fail(rank, "restore", st, c); break; }
        fprintf(stderr, "scenario %d rank %d: rejoin + restore to step %lld in %.3f s\n", scenario, rank, (long long)rs,
                tlt_now() - t0);
        step = rs;
        recovered = 1;
    }
    double want = (double)NSTEP * (NSTEP + 1) / 2;
    if (s.acc != want || !recovered || tlink_comm_size(c) != size) {
        ok = 0;
        fprintf(stderr, "rank %d: acc %.0f (want %.0f), recovered %d\n", rank, s.acc, want, recovered);
    }
    tlink_comm_destroy(c);
    tlink_ckpt_free(ck);
    free(v);
    return ok ? 0 : 1;
}

static int rank_main(int rank, int size, const char *addr, void *arg) {
    (void)arg;
    switch (scenario) {
    case 1: case 2: return rank_stop(rank, size, addr);
    case 3: return rank_kill_shrink(rank, size, addr);
    case 4: case 5: return rank_revoke(rank, size, addr);
    default: return rank_rejoin(rank, size, addr);
    }
}

static int files(void) {
    char path[256];
    snprintf(path, sizeof path, "/tmp/tlink-ft-test-%d.ckpt", (int)getpid());
    double data[1000];
    for (int i = 0; i < 1000; i++) data[i] = i * 0.5;
    int bad = 0;
    if (tlink_ckpt_write_file(path, 42, data, sizeof data)) { fprintf(stderr, "write: %s\n", tlink_last_error(NULL)); return 1; }
    void *back = NULL;
    size_t nb = 0;
    int64_t step = 0;
    tlink_status st = tlink_ckpt_read_file(path, &step, &back, &nb);
    if (st || nb != sizeof data || step != 42 || memcmp(back, data, nb)) bad++;
    tlink_free(back);
    /* flip one byte of the data */
    FILE *f = fopen(path, "r+b");
    fseek(f, 100, SEEK_SET);
    int ch = fgetc(f);
    fseek(f, 100, SEEK_SET);
    fputc(ch ^ 0x40, f);
    fclose(f);
    st = tlink_ckpt_read_file(path, &step, &back, &nb);
    if (st != TLINK_ERR_CORRUPT || !strstr(tlink_last_error(NULL), "checksum") || back) bad++;
    fprintf(stderr, "flipped byte: %s: %s\n", tlink_error_string(st), tlink_last_error(NULL));
    /* rewrite, then truncate */
    tlink_ckpt_write_file(path, 43, data, sizeof data);
    if (truncate(path, 500) != 0) bad++;
    st = tlink_ckpt_read_file(path, &step, &back, &nb);
    if (st != TLINK_ERR_CORRUPT || !strstr(tlink_last_error(NULL), "truncated")) bad++;
    fprintf(stderr, "truncated: %s: %s\n", tlink_error_string(st), tlink_last_error(NULL));
    unlink(path);
    st = tlink_ckpt_read_file(path, &step, &back, &nb);
    if (st != TLINK_ERR_SYSTEM || !strstr(tlink_last_error(NULL), path)) bad++;
    /* no temporary file is left behind */
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    if (access(tmp, F_OK) == 0) bad++;
    if (tlink_ckpt_write_file(NULL, 0, data, 8) != TLINK_ERR_INVALID_ARG) bad++;
    return bad;
}

int main(void) {
    setenv("TLINK_TIMEOUT", "30", 1);
    int fails = 0;
    static const char *names[] = {"", "stopped rank, shm", "stopped rank, tcp", "kill -9 + shrink + restore",
                                  "revoke, shm", "revoke, tcp", "kill -9 + replacement + rejoin + restore"};
    for (scenario = 1; scenario <= 6; scenario++) {
        if (scenario == 2 || scenario == 5) setenv("TLINK_TRANSPORT", "tcp", 1);
        else unsetenv("TLINK_TRANSPORT");
        int n = 4, codes[8] = {0};
        double t0 = tlt_now();
        int failed = tlt_launch(n, rank_main, NULL, 60, codes);
        int bad = failed < 0 || failed != (scenario <= 3 ? 1 : 0); /* also counts /dev/shm leftovers */
        for (int r = 0; r < n; r++) {
            int want = (scenario <= 2 && r == n - 1) || (scenario == 3 && r == 1) ? 128 + SIGKILL : 0;
            if (codes[r] != want) {
                fprintf(stderr, "scenario %d: rank %d exited %d, expected %d\n", scenario, r, codes[r], want);
                bad = 1;
            }
        }
        printf("scenario %d (%s): %s (%.2f s)\n", scenario, names[scenario], bad ? "FAIL" : "ok", tlt_now() - t0);
        fails += bad;
    }
    int fb = files();
    printf("checkpoint files: %s\n", fb ? "FAIL" : "ok");
    return fails + fb ? 1 : 0;
}
