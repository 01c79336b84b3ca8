/* tl_launch.h — a tiny in-test launcher: forks N ranks that meet at a store hosted by the
 * parent (the standalone-store path), waits with a watchdog, checks /dev/shm for leftovers. */
#ifndef TL_LAUNCH_H
#define TL_LAUNCH_H
#define _GNU_SOURCE
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tlink.h"

typedef int (*tl_rank_fn)(int rank, int size, const char *store_addr, void *arg);

static double tlt_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* count /dev/shm entries created by any of the given pids */
static int tlt_shm_leftovers(const pid_t *pids, int n) {
    DIR *d = opendir("/dev/shm");
    if (!d) return 0;
    int left = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        int pid;
        if (sscanf(e->d_name, "tlink-%d-", &pid) != 1) continue;
        for (int i = 0; i < n; i++)
            if (pids[i] == pid) {
                fprintf(stderr, "leftover shared memory: /dev/shm/%s\n", e->d_name);
                left++;
            }
    }
    closedir(d);
    return left;
}

/* Runs fn in n forked ranks. exit_codes (may be NULL) receives each rank's exit status
 * (128+signal when killed). Returns the number of ranks that exited non-zero, or -1 when the
 * watchdog fired. */
static int tlt_launch(int n, tl_rank_fn fn, void *arg, double watchdog_s, int *exit_codes) {
    tlink_store_server *srv = NULL;
    if (tlink_store_server_start("127.0.0.1", 0, &srv) != TLINK_OK) {
        fprintf(stderr, "cannot start store: %s\n", tlink_last_error(NULL));
        return -1;
    }
    char addr[64];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", tlink_store_server_port(srv));
    fflush(stdout);
    fflush(stderr);
    pid_t *pids = calloc((size_t)n, sizeof(pid_t));
    for (int r = 0; r < n; r++) {
        pid_t p = fork();
        if (p == 0) {
            int rc = fn(r, n, addr, arg);
            fflush(stdout);
            fflush(stderr);
            _exit(rc);
        }
        pids[r] = p;
    }
    int failed = 0, remaining = n, timed_out = 0;
    double deadline = tlt_now() + watchdog_s;
    while (remaining > 0) {
        int status;
        pid_t p = waitpid(-1, &status, WNOHANG);
        if (p > 0) {
            for (int r = 0; r < n; r++) {
                if (pids[r] != p) continue;
                int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
                if (exit_codes) exit_codes[r] = code;
                if (code) failed++;
                remaining--;
            }
            continue;
        }
        if (tlt_now() > deadline) {
            fprintf(stderr, "watchdog: ranks still running after %.0f s, killing them\n", watchdog_s);
            for (int r = 0; r < n; r++) kill(pids[r], SIGKILL);
            timed_out = 1;
            deadline = tlt_now() + 1e9;
        }
        usleep(2000);
    }
    tlink_store_server_stop(srv);
    int left = tlt_shm_leftovers(pids, n);
    free(pids);
    if (left) {
        fprintf(stderr, "FAIL: %d shared memory segment(s) left in /dev/shm\n", left);
        failed++;
    }
    return timed_out ? -1 : failed;
}

/* rank-side init against the parent's store */
static inline tlink_status tlt_init(tlink_comm **c, int rank, int size, const char *addr) {
    tlink_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.rank = rank;
    cfg.size = size;
    cfg.store_addr = addr;
    cfg.host_store = -1;
    return tlink_comm_init_config(c, &cfg);
}
#endif
