/* test_status.c — hang diagnosis (status.c):
 *  A. rank 2 of 4 stalls in its own code while the others enter the next all-reduce: asked from
 *     outside the job (tlink_job_status, as `tile link-status` does) every rank answers, rank 2
 *     is named behind with its last call, the others are in allreduce #N+1 and rank 3 waits to
 *     receive from rank 2 (ring); a watchdog thread of rank 0 gets the same from
 *     tlink_comm_status while rank 0's main thread is stuck in the call; the soft deadline
 *     (TLINK_SOFT_TIMEOUT=1) makes exactly one rank log the report; the job then completes with
 *     correct sums;
 *  B. rank 1 is stopped (SIGSTOP): it does not answer, the report says so, the others are in
 *     the all-reduce; after SIGCONT the job completes.
 * The observer is a fifth process outside the communicator. Also: the report's text for a
 * hand-made set of answers (ranks in different calls, no answer). */
#include "tl_launch.h"

#include <pthread.h>
#include <fcntl.h>
#include <signal.h>

static int fails;
#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fails++;                                                                               \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
        }                                                                                          \
    } while (0)

#define NR 4
#define COUNT (1 << 18) /* 1 MiB of f32: the ring, whose steps name their peers */

static void wait_key(tlink_store *st, const char *key) {
    void *v = NULL;
    if (tlink_store_get(st, key, &v, NULL, 60) == TLINK_OK) tlink_free(v);
}

typedef struct watch { tlink_comm *c; int ok; char report[4096]; } watch;
static void *watchdog(void *arg) {
    watch *w = arg;
    tlink_rank_status st[NR];
    for (int tries = 0; tries < 100; tries++) {
        usleep(100000);
        int n = 0;
        if (tlink_comm_status(w->c, 3, st, NR, &n) != TLINK_OK || n != NR) continue;
        if (!st[2].answered || st[2].in_call || !st[0].in_call || st[0].seq != st[2].seq + 1) continue;
        tlink_status_report(st, NR, w->report, sizeof w->report);
        w->ok = strstr(w->report, "rank 2 is behind") != NULL;
        return NULL;
    }
    return NULL;
}

static int rank_main(int rank, int nproc, const char *addr, void *arg) {
    (void)arg;
    const int size = nproc - 1;
    tlink_store *st;
    if (tlink_store_connect(addr, 10, &st)) return 10;
    if (rank == size) {
        /* ---------- the observer ---------- */
        int bad = 0;
        wait_key(st, "test/stalled");
        tlink_rank_status s[NR];
        int n = 0, seen = 0;
        char cp[200] = "", report[4096] = "";
        for (int tries = 0; tries < 150 && !seen; tries++) {
            usleep(100000);
            if (tlink_job_status(addr, NULL, 3, s, NR, &n, cp, sizeof cp) != TLINK_OK || n != NR) continue;
            seen = s[0].answered && s[1].answered && s[2].answered && s[3].answered && !s[2].in_call &&
                   s[0].in_call && s[1].in_call && s[3].in_call && s[3].peer == 2 && s[3].wait_s >= 0;
        }
        tlink_status_report(s, n, report, sizeof report);
        fprintf(stderr, "observer: the job %s while rank 2 stalls:\n%s", cp, report);
        if (!seen) { fprintf(stderr, "observer: never saw ranks 0, 1, 3 waiting on rank 2\n"); bad++; }
        for (int r = 0; r < NR; r++)
            if (r != 2 && (strcmp(s[r].call, "allreduce") || s[r].seq != s[2].seq + 1 || strcmp(s[r].algo, "ring"))) {
                fprintf(stderr, "observer: rank %d: %s #%llu (%s), expected allreduce #%llu (ring)\n", r, s[r].call,
                        (unsigned long long)s[r].seq, s[r].algo, (unsigned long long)s[2].seq + 1);
                bad++;
            }
        if (strcmp(s[2].call, "allreduce") || s[3].sending) bad++;
        if (!strstr(report, "rank 2 is behind: its last call is allreduce") || !strstr(report, "waiting to receive from rank 2"))
            bad++;
        pid_t pid1 = s[1].pid;
        sleep(2); /* the soft deadline (1 s) passes */
        tlink_store_set(st, "test/go", "1", 1);
        /* B: stop rank 1 before its next call */
        wait_key(st, "test/p2");
        if (pid1 > 0) kill(pid1, SIGSTOP);
        seen = 0;
        for (int tries = 0; tries < 100 && !seen; tries++) {
            usleep(100000);
            if (tlink_job_status(addr, NULL, 1, s, NR, &n, NULL, 0) != TLINK_OK) continue;
            seen = !s[1].answered && s[0].answered && s[0].in_call && s[2].in_call && s[3].in_call;
        }
        tlink_status_report(s, n, report, sizeof report);
        fprintf(stderr, "observer: rank 1 stopped:\n%s", report);
        if (!seen || !strstr(report, "diagnosis: rank 1 did not answer")) bad++;
        if (pid1 > 0) kill(pid1, SIGCONT);
        tlink_store_close(st);
        return bad ? 20 + bad : 0;
    }
    tlink_comm *c = NULL;
    if (tlt_init(&c, rank, size, addr)) {
        fprintf(stderr, "rank %d: init: %s\n", rank, tlink_last_error(NULL));
        return 11;
    }
    tlink_comm_set_algo(c, TLINK_COLL_ALLREDUCE, TLINK_ALGO_RING);
    float *x = malloc(sizeof(float) * COUNT);
    int ok = 1;
    watch w = {c, 0, ""};
    pthread_t wt;
    for (int it = 0; it < 5 && ok; it++) {
        for (int i = 0; i < COUNT; i++) x[i] = (float)(rank + it);
        if (it == 3 && rank == 2) {
            tlink_store_set(st, "test/stalled", "1", 1);
            wait_key(st, "test/go"); /* the stall: in this rank's own code */
        }
        if (it == 3 && rank == 0) pthread_create(&wt, NULL, watchdog, &w);
        if (it == 4 && rank == 1) {
            tlink_store_set(st, "test/p2", "1", 1);
            usleep(500000); /* the observer stops this rank meanwhile */
        }
        tlink_status s = tlink_allreduce(c, x, x, COUNT, TLINK_F32, TLINK_SUM);
        float want = (float)(size * it + size * (size - 1) / 2);
        if (s || x[0] != want || x[COUNT - 1] != want) {
            fprintf(stderr, "rank %d: allreduce %d: %s (%g, want %g)\n", rank, it, tlink_last_error(c), x[0], want);
            ok = 0;
        }
        if (it == 3 && rank == 0) {
            pthread_join(wt, NULL);
            if (!w.ok) {
                fprintf(stderr, "rank 0: the watchdog's tlink_comm_status did not name rank 2:\n%s", w.report);
                ok = 0;
            }
        }
    }
    free(x);
    tlink_store_close(st);
    tlink_comm_destroy(c);
    return ok ? 0 : 12;
}

static int count_of(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

static void test_report(void) {
    tlink_rank_status s[4];
    memset(s, 0, sizeof s);
    for (int r = 0; r < 4; r++) {
        s[r].rank = r;
        s[r].answered = 1;
        s[r].pid = 100 + r;
        snprintf(s[r].host, sizeof s[r].host, "h");
        s[r].in_call = 1;
        snprintf(s[r].call, sizeof s[r].call, "allreduce");
        s[r].seq = 9;
        s[r].peer = -1;
        s[r].wait_s = -1;
        s[r].call_s = 1;
    }
    snprintf(s[1].call, sizeof s[1].call, "broadcast");
    s[3].answered = 0;
    s[0].peer = 3;
    s[0].wait_s = 2;
    size_t need = tlink_status_report(s, 4, NULL, 0);
    char *buf = malloc(need + 1);
    size_t got = tlink_status_report(s, 4, buf, need + 1);
    EXPECT(got == need && strlen(buf) == need, "report length %zu, %zu, %zu", need, got, strlen(buf));
    EXPECT(strstr(buf, "rank 3 did not answer"), "no answer named:\n%s", buf);
    EXPECT(strstr(buf, "rank 1 is in another call than the others' allreduce #9"), "other call named:\n%s", buf);
    EXPECT(strstr(buf, "waiting to receive from rank 3"), "peer named:\n%s", buf);
    char small[16];
    EXPECT(tlink_status_report(s, 4, small, sizeof small) == need && strlen(small) == 15, "truncation");
    free(buf);
}

/* `tlink_test_status demo RANK SECONDS` under a launcher: three all-reduces, then RANK stalls
 * for SECONDS in its own code (after writing its pid to $TLINK_DEMO_MARK) while the others
 * enter the fourth; for `tile link-status` (tests/link-net/status_test.sh). */
static int demo(int stall, double secs) {
    tlink_comm *c;
    if (tlink_comm_init_env(&c)) {
        fprintf(stderr, "demo: %s\n", tlink_last_error(NULL));
        return 1;
    }
    int rank = tlink_comm_rank(c), size = tlink_comm_size(c), ok = 1;
    tlink_comm_set_algo(c, TLINK_COLL_ALLREDUCE, TLINK_ALGO_RING);
    float *x = calloc(COUNT, sizeof(float));
    for (int it = 0; it < 4 && ok; it++) {
        if (it == 3 && rank == stall) {
            const char *mark = getenv("TLINK_DEMO_MARK");
            if (mark) {
                char tmp[512];
                snprintf(tmp, sizeof tmp, "%s.tmp", mark);
                FILE *f = fopen(tmp, "w");
                if (f) { fprintf(f, "%d\n", (int)getpid()); fclose(f); rename(tmp, mark); }
            }
            usleep((useconds_t)(secs * 1e6));
        }
        for (int i = 0; i < COUNT; i++) x[i] = 1;
        ok = tlink_allreduce(c, x, x, COUNT, TLINK_F32, TLINK_SUM) == TLINK_OK && x[0] == (float)size;
    }
    if (!ok) fprintf(stderr, "demo rank %d: %s\n", rank, tlink_last_error(c));
    free(x);
    tlink_comm_destroy(c);
    return ok ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc == 4 && !strcmp(argv[1], "demo")) return demo(atoi(argv[2]), atof(argv[3]));
    test_report();
    setenv("TLINK_TIMEOUT", "60", 1);
    setenv("TLINK_SOFT_TIMEOUT", "1", 1);
    setenv("TLINK_HEARTBEAT_TIMEOUT", "0", 1); /* a stopped rank stays a member: the others wait */
    char path[96];
    snprintf(path, sizeof path, "/tmp/tlink-test-status-%d.log", (int)getpid());
    fflush(stderr);
    int saved = dup(2);
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
    dup2(fd, 2);
    close(fd);
    int codes[NR + 1] = {0};
    int failed = tlt_launch(NR + 1, rank_main, NULL, 120, codes);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    FILE *f = fopen(path, "r");
    static char log[1 << 20];
    size_t n = f ? fread(log, 1, sizeof log - 1, f) : 0;
    log[n] = 0;
    if (f) fclose(f);
    unlink(path);
    fputs(log, stderr);
    EXPECT(failed == 0, "exit codes %d %d %d %d %d", codes[0], codes[1], codes[2], codes[3], codes[4]);
    /* the soft deadline: one report for the stall (rank 2 behind), one for the stopped rank */
    int soft = count_of(log, "(soft deadline TLINK_SOFT_TIMEOUT=1 s); the job's status:");
    EXPECT(soft >= 1 && soft <= 2, "%d soft-deadline reports", soft);
    const char *r = strstr(log, "soft deadline TLINK_SOFT_TIMEOUT");
    EXPECT(r && strstr(r, "rank 2 is behind"), "the soft-deadline report names rank 2");
    printf("%s (%d failures)\n", fails ? "FAIL" : "ok", fails);
    return fails ? 1 : 0;
}
