/* probe.c — a rank program for the launcher tests (tests/launch/launch_test.sh).
 *
 * usage: launch_probe MODE [ARGS]
 *   env                 print the launch variables, one "rank R: NAME=VALUE" line each
 *   secret              print "rank R: TLINK_SECRET=VALUE"
 *   partial             write lines in pieces and end without a newline
 *   lines N             write N numbered lines to stdout and N to stderr
 *   longline N          write one line of N 'x' characters (in one go) and a newline
 *   fail R CODE DIR     rank R exits with CODE after 0.2 s; the others write DIR/pid.RANK
 *                       and sleep 30 s
 *   segv R              rank R dies of SIGSEGV; the others sleep 30 s
 *   term DIR            write DIR/pid.RANK; on SIGTERM print a line and exit 3
 *   stubborn DIR        write DIR/pid.RANK; ignore SIGTERM; sleep 30 s
 *   spawn DIR           start a grandchild that writes DIR/pid.child.RANK and sleeps 30 s;
 *                       the rank itself exits 0
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int rank(void) {
    const char *r = getenv("RANK");
    return r ? atoi(r) : -1;
}

static void write_pid(const char *dir, const char *what) {
    char path[4096];
    snprintf(path, sizeof path, "%s/pid.%s%d", dir, what, rank());
    FILE *f = fopen(path, "w");
    if (!f) { perror(path); exit(90); }
    fprintf(f, "%d\n", (int)getpid());
    fclose(f);
}

static void nap(double s) {
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0) {}
}

static volatile sig_atomic_t g_term;
static void on_term(int sig) { (void)sig; g_term = 1; }

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "probe: no mode\n"); return 99; }
    const char *mode = argv[1];
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!strcmp(mode, "env")) {
        static const char *const names[] = {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
            "GROUP_RANK", "NODE_RANK", "MASTER_ADDR", "MASTER_PORT", "TLINK_LAUNCH_HOST",
            "OMPI_COMM_WORLD_RANK", NULL};
        for (int i = 0; names[i]; i++) {
            const char *v = getenv(names[i]);
            printf("rank %d: %s=%s\n", rank(), names[i], v ? v : "(unset)");
        }
        return 0;
    }
    if (!strcmp(mode, "secret")) {
        const char *v = getenv("TLINK_SECRET");
        printf("rank %d: TLINK_SECRET=%s\n", rank(), v ? v : "(unset)");
        return 0;
    }
    if (!strcmp(mode, "partial")) {
        /* "ab" + "c\nde" + "f" + EOF: expect "[r] abc" and "[r] def" */
        fputs("ab", stdout); fflush(stdout); nap(0.05);
        fputs("c\nde", stdout); fflush(stdout); nap(0.05);
        fputs("f", stdout); fflush(stdout);
        fputs("err-no-newline", stderr);
        return 0;
    }
    if (!strcmp(mode, "lines") && argc >= 3) {
        int n = atoi(argv[2]);
        setvbuf(stdout, NULL, _IOFBF, 1 << 16); /* big writes that split lines at odd places */
        for (int i = 0; i < n; i++) {
            printf("line %d of rank %d xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx end\n", i, rank());
            fprintf(stderr, "eline %d of rank %d\n", i, rank());
        }
        return 0;
    }
    if (!strcmp(mode, "longline") && argc >= 3) {
        size_t n = (size_t)atol(argv[2]);
        char *b = malloc(n + 1);
        if (!b) return 98;
        memset(b, 'x', n);
        b[n] = '\n';
        fwrite(b, 1, n + 1, stdout);
        free(b);
        return 0;
    }
    if (!strcmp(mode, "fail") && argc >= 5) {
        if (rank() == atoi(argv[2])) { nap(0.2); return atoi(argv[3]); }
        write_pid(argv[4], "");
        nap(30);
        return 0;
    }
    if (!strcmp(mode, "segv") && argc >= 3) {
        if (rank() == atoi(argv[2])) {
            nap(0.1);
            signal(SIGSEGV, SIG_DFL); /* a sanitizer's handler would turn it into exit(1) */
            raise(SIGSEGV);
        }
        nap(30);
        return 0;
    }
    if (!strcmp(mode, "term") && argc >= 3) {
        signal(SIGTERM, on_term);
        write_pid(argv[2], "");
        while (!g_term) pause();
        printf("rank %d got SIGTERM\n", rank());
        return 3;
    }
    if (!strcmp(mode, "stubborn") && argc >= 3) {
        signal(SIGTERM, SIG_IGN);
        write_pid(argv[2], "");
        nap(30);
        return 0;
    }
    if (!strcmp(mode, "spawn") && argc >= 3) {
        pid_t p = fork();
        if (p == 0) {
            fclose(stdout); /* the grandchild lets go of the output: only the group kill ends it */
            fclose(stderr);
            write_pid(argv[2], "child.");
            nap(30);
            _exit(0);
        }
        nap(0.1);
        return 0;
    }
    fprintf(stderr, "probe: bad mode '%s'\n", mode);
    return 99;
}
