/* status.c — hang diagnosis: ask a running job, through its store, what every rank is doing.
 *
 * Every communicator of more than one rank runs a responder thread with a connection of its
 * own to the store. A requester (tlink_comm_status, tlink_job_status, `tile link-status`) takes
 * a number n from the counter PREFIX/status/req and sets PREFIX/status/ask/n; each responder,
 * parked in a blocking GET of the next ask key, answers with one line under
 * PREFIX/status/n/RANK: the call it is in (or last made), its sequence number on the
 * communicator, the algorithm, the step (point-to-point rounds so far), the rank it waits on and
 * since when (tl_stat, written by the thread running the call). The responder never touches
 * the communicator itself, so it answers while the rank is stuck in a call; a rank that does
 * not answer is stopped, hung in the kernel, dead, or cut off. The requester compares the
 * answers: ranks whose last call is older than the others' are behind; ranks in another call
 * than the others with the same number called collectives in another order.
 *
 * The soft deadline (TLINK_SOFT_TIMEOUT): the heartbeat thread sees a call without progress
 * for that long; the first rank to see it for a call (a ticket from the store) gathers the same
 * report in a short-lived thread and logs it, before the hard deadline fails the call. */
#include "tl_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---------- the record ---------- */
static void stat_unref(tl_stat *s) {
    if (atomic_fetch_sub(&s->refs, 1) == 1) free(s);
}

/* one line: "v1 rank=R pid=P host=H in=0|1 call=NAME seq=N algo=A step=S peer=Q send=0|1 done=D
 * total=T wait=SECONDS call_s=SECONDS"; wait < 0 when not waiting, call_s < 0 when unknown */
static int stat_format(tl_stat *s, char *out, size_t len) {
    int in = atomic_load_explicit(&s->in_call, memory_order_acquire);
    const char *call = atomic_load_explicit(&s->call, memory_order_relaxed);
    uint64_t seq = atomic_load_explicit(&s->seq, memory_order_relaxed);
    int algo = atomic_load_explicit(&s->algo, memory_order_relaxed);
    int step = atomic_load_explicit(&s->step, memory_order_relaxed);
    int peer = atomic_load_explicit(&s->peer, memory_order_relaxed);
    int sending = atomic_load_explicit(&s->sending, memory_order_relaxed);
    uint64_t done = atomic_load_explicit(&s->done, memory_order_relaxed);
    uint64_t total = atomic_load_explicit(&s->total, memory_order_relaxed);
    int64_t wns = atomic_load_explicit(&s->wait_ns, memory_order_relaxed);
    int64_t now = tl_now_ns();
    double wait = in && peer != -1 && wns > 0 ? (double)(now - wns) * 1e-9 : -1;
    uint64_t key = seq * 2 + (uint64_t)in;
    double call_s = atomic_load(&s->seen_key) == key && atomic_load(&s->seen_ns) > 0
                        ? (double)(now - atomic_load(&s->seen_ns)) * 1e-9
                        : -1;
    const char *an = algo >= 0 && algo < TLINK_ALGO_COUNT ? tlink_algo_name((tlink_algo)algo) : "-";
    return snprintf(out, len,
                    "v1 rank=%d pid=%d host=%s in=%d call=%s seq=%llu algo=%s step=%d peer=%d send=%d done=%llu "
                    "total=%llu wait=%.3f call_s=%.3f",
                    s->rank, s->pid, s->host[0] ? s->host : "?", in, call && *call ? call : "-",
                    (unsigned long long)seq, an, step, peer, sending, (unsigned long long)done,
                    (unsigned long long)total, wait, call_s);
}

/* parses stat_format's line; 0 on success */
static int stat_parse(const char *line, tlink_rank_status *o) {
    memset(o, 0, sizeof *o);
    if (strncmp(line, "v1 ", 3)) return -1;
    int rank, pid, in, step, peer, send;
    unsigned long long seq, done, total;
    double wait, call_s;
    char host[64], call[32], algo[32];
    if (sscanf(line,
               "v1 rank=%d pid=%d host=%63s in=%d call=%31s seq=%llu algo=%31s step=%d peer=%d send=%d done=%llu "
               "total=%llu wait=%lf call_s=%lf",
               &rank, &pid, host, &in, call, &seq, algo, &step, &peer, &send, &done, &total, &wait, &call_s) != 14)
        return -1;
    o->rank = rank;
    o->answered = 1;
    o->pid = pid;
    snprintf(o->host, sizeof o->host, "%s", host);
    o->in_call = in;
    snprintf(o->call, sizeof o->call, "%s", strcmp(call, "-") ? call : "");
    o->seq = seq;
    snprintf(o->algo, sizeof o->algo, "%s", strcmp(algo, "-") ? algo : "");
    o->step = step;
    o->peer = peer;
    o->sending = send;
    o->bytes_done = done;
    o->bytes_total = total;
    o->wait_s = wait;
    o->call_s = call_s;
    return 0;
}

/* ---------- the responder ---------- */
static void *responder_main(void *arg) {
    tl_stat *s = arg;
    tlink_store *st = NULL;
    uint64_t next = 0;
    char key[320], line[512];
    while (!atomic_load(&s->stop)) {
        if (!st) {
            if (tlink_store_connect(s->store_addr, 5, &st) != TLINK_OK) {
                st = NULL;
                for (int i = 0; i < 10 && !atomic_load(&s->stop); i++) usleep(100000);
                continue;
            }
            atomic_store(&s->fd, tl_store_fd(st));
            if (atomic_load(&s->stop)) break;
            if (!next) {
                /* start after the requests made before this communicator existed */
                snprintf(key, sizeof key, "%s/status/req", s->prefix);
                int64_t cur = 0;
                if (tlink_store_add(st, key, 0, &cur) != TLINK_OK) { tlink_store_close(st); st = NULL; continue; }
                next = (uint64_t)cur + 1;
                if (s->rank == 0) {
                    /* for requesters that know only the prefix */
                    char v[32];
                    int n = snprintf(v, sizeof v, "%d", s->size);
                    snprintf(key, sizeof key, "%s/size", s->prefix);
                    tlink_store_set(st, key, v, (size_t)n + 1);
                }
            }
        }
        snprintf(key, sizeof key, "%s/status/ask/%llu", s->prefix, (unsigned long long)next);
        void *v = NULL;
        tlink_status rc = tlink_store_get(st, key, &v, NULL, 1e6);
        free(v);
        if (atomic_load(&s->stop)) break;
        if (rc != TLINK_OK) {
            /* the store went away (or restarted): reconnect after a pause */
            tlink_store_close(st);
            st = NULL;
            atomic_store(&s->fd, -1);
            for (int i = 0; i < 10 && !atomic_load(&s->stop); i++) usleep(100000);
            continue;
        }
        int n = stat_format(s, line, sizeof line);
        snprintf(key, sizeof key, "%s/status/%llu/%d", s->prefix, (unsigned long long)next, s->rank);
        tlink_store_set(st, key, line, (size_t)n + 1);
        next++;
    }
    if (st) tlink_store_close(st);
    stat_unref(s);
    return NULL;
}

void tl_status_start(tlink_comm *c) {
    tl_stat *s = c->stat;
    if (c->size <= 1 || !c->store_addr[0] || !tb_knob_bool(TB_K_TLINK_STATUS)) return;
    s->rank = c->rank;
    s->size = c->size;
    s->pid = (int)getpid();
    snprintf(s->host, sizeof s->host, "%s", tl_hostname());
    for (char *q = s->host; *q; q++)
        if (*q == ' ' || *q == '=') *q = '_';
    snprintf(s->prefix, sizeof s->prefix, "%s", c->prefix);
    snprintf(s->store_addr, sizeof s->store_addr, "%s", c->store_addr);
    double soft = tb_knob_float_or(TB_K_TLINK_SOFT_TIMEOUT, c->timeout / 5);
    s->soft_s = soft > 0 && soft < c->timeout ? soft : 0;
    atomic_store(&s->fd, -1);
    atomic_fetch_add(&s->refs, 1);
    pthread_t t;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&at, 256 << 10);
    if (pthread_create(&t, &at, responder_main, s) != 0) {
        atomic_fetch_sub(&s->refs, 1);
        tl_log(TL_LOG_WARN, "rank %d: cannot start the status thread: tlink_comm_status gets no answer from it",
               c->rank);
    }
    pthread_attr_destroy(&at);
}

void tl_status_halt(tlink_comm *c) {
    tl_stat *s = c->stat;
    if (!s) return;
    atomic_store(&s->stop, 1);
    int fd = atomic_exchange(&s->fd, -1);
    if (fd >= 0) shutdown(fd, SHUT_RDWR); /* wakes its parked GET; it closes the socket itself */
}

void tl_status_stop(tlink_comm *c) {
    tl_stat *s = c->stat;
    if (!s) return;
    tl_status_halt(c);
    c->stat = NULL;
    stat_unref(s);
}

/* ---------- asking ---------- */
static tlink_status ask(const char *store_addr, const char *prefix, int size, double timeout_s, tlink_rank_status *out,
                        int max, char *err, size_t errlen) {
    tlink_store *st = NULL;
    tlink_status rc = tlink_store_connect(store_addr, TL_MIN(timeout_s, 10.0), &st);
    if (rc) {
        snprintf(err, errlen, "%s", tl_thread_error());
        return rc;
    }
    char key[320];
    snprintf(key, sizeof key, "%s/status/req", prefix);
    int64_t n = 0;
    if ((rc = tlink_store_add(st, key, 1, &n)) != TLINK_OK) {
        snprintf(err, errlen, "%s", tlink_store_last_error(st));
        tlink_store_close(st);
        return rc;
    }
    snprintf(key, sizeof key, "%s/status/ask/%lld", prefix, (long long)n);
    if ((rc = tlink_store_set(st, key, "1", 2)) != TLINK_OK) {
        snprintf(err, errlen, "%s", tlink_store_last_error(st));
        tlink_store_close(st);
        return rc;
    }
    double deadline = tl_now() + timeout_s;
    int late = 0;
    for (int r = 0; r < size && r < max; r++) {
        memset(&out[r], 0, sizeof out[r]);
        out[r].rank = r;
        out[r].peer = -1;
        snprintf(key, sizeof key, "%s/status/%lld/%d", prefix, (long long)n, r);
        void *v = NULL;
        size_t len = 0;
        double left = deadline - tl_now();
        tlink_status g;
        if (!late && left > 0.001) {
            g = tlink_store_get(st, key, &v, &len, left);
            if (g == TLINK_ERR_TIMEOUT) late = 1; /* the rest get a last look only */
        } else {
            int ex = 0;
            g = tlink_store_check(st, key, &ex) == TLINK_OK && ex ? tlink_store_get(st, key, &v, &len, 1) : TLINK_ERR_TIMEOUT;
        }
        if (g == TLINK_OK && v && !stat_parse(v, &out[r])) {
            out[r].rank = r;
            tlink_store_delete(st, key);
        }
        free(v);
    }
    snprintf(key, sizeof key, "%s/status/ask/%lld", prefix, (long long)n);
    tlink_store_delete(st, key);
    tlink_store_close(st);
    return TLINK_OK;
}

tlink_status tlink_comm_status(tlink_comm *c, double timeout_s, tlink_rank_status *out, int max, int *nranks) {
    if (!c || (max > 0 && !out) || max < 0) {
        tl_set_thread_error("tlink_comm_status: %s", !c ? "comm is NULL" : "out is NULL or max < 0");
        return TLINK_ERR_INVALID_ARG;
    }
    if (nranks) *nranks = c->size;
    if (timeout_s <= 0) timeout_s = 5;
    if (c->size == 1) {
        /* no responder: this rank's own record */
        if (max > 0) {
            tl_stat *s = c->stat;
            s->rank = 0;
            s->size = 1;
            s->pid = (int)getpid();
            snprintf(s->host, sizeof s->host, "%s", tl_hostname());
            char line[512];
            stat_format(s, line, sizeof line);
            stat_parse(line, &out[0]);
        }
        return TLINK_OK;
    }
    char err[700];
    tlink_status st = ask(c->store_addr, c->prefix, c->size, timeout_s, out, max, err, sizeof err);
    if (st) tl_set_thread_error("tlink_comm_status: %s", err);
    return st;
}

tlink_status tlink_job_status(const char *store_addr, const char *prefix, double timeout_s, tlink_rank_status *out,
                              int max, int *nranks, char *comm_prefix, size_t comm_prefix_len) {
    if (!store_addr || (max > 0 && !out) || max < 0) {
        tl_set_thread_error("tlink_job_status: %s", !store_addr ? "store_addr is NULL" : "out is NULL or max < 0");
        return TLINK_ERR_INVALID_ARG;
    }
    if (!prefix || !*prefix) prefix = tb_knob_str(TB_K_TLINK_STORE_PREFIX);
    if (!prefix) prefix = "tlink";
    if (timeout_s <= 0) timeout_s = 5;
    tlink_store *st = NULL;
    tlink_status rc = tlink_store_connect(store_addr, TL_MIN(timeout_s, 10.0), &st);
    if (rc) return rc; /* the thread error says why */
    /* a key namespace ("tlink": the newest communicator of rank 0's) or a communicator's prefix */
    char cp[200], key[320];
    snprintf(key, sizeof key, "%s/gen/0", prefix);
    int ex = 0;
    void *v = NULL;
    if ((rc = tlink_store_check(st, key, &ex)) != TLINK_OK) {
        tl_set_thread_error("tlink_job_status: %s", tlink_store_last_error(st));
        tlink_store_close(st);
        return rc;
    }
    if (ex && tlink_store_get(st, key, &v, NULL, 2) == TLINK_OK && v) {
        int64_t g = 0;
        memcpy(&g, v, sizeof g);
        snprintf(cp, sizeof cp, "%s/%lld", prefix, (long long)g);
    } else {
        snprintf(cp, sizeof cp, "%s", prefix);
    }
    free(v);
    v = NULL;
    snprintf(key, sizeof key, "%s/size", cp);
    int size = 0;
    /* rank 0's responder publishes the size once it runs: give it a moment */
    if (tlink_store_get(st, key, &v, NULL, TL_MIN(timeout_s, 2.0)) == TLINK_OK && v) size = atoi(v);
    free(v);
    tlink_store_close(st);
    if (size <= 0) {
        tl_set_thread_error("tlink_job_status: no running communicator under '%s' at the store %s (no %s)", cp,
                            store_addr, key);
        return TLINK_ERR_BOOTSTRAP;
    }
    if (nranks) *nranks = size;
    if (comm_prefix && comm_prefix_len) snprintf(comm_prefix, comm_prefix_len, "%s", cp);
    char err[700];
    rc = ask(store_addr, cp, size, timeout_s, out, max, err, sizeof err);
    if (rc) tl_set_thread_error("tlink_job_status: %s", err);
    return rc;
}

/* ---------- the report ---------- */
typedef struct rbuf { char *b; size_t len, off; } rbuf;
static void rp(rbuf *r, const char *fmt, ...) TL_PRINTF(2, 3);
static void rp(rbuf *r, const char *fmt, ...) {
    if (!r->len || r->off >= r->len - 1) {
        /* count what would have been written, for the return value */
        va_list ap;
        va_start(ap, fmt);
        r->off += (size_t)vsnprintf(NULL, 0, fmt, ap);
        va_end(ap);
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(r->b + r->off, r->len - r->off, fmt, ap);
    va_end(ap);
    r->off += (size_t)(n > 0 ? n : 0);
}

static void bytes_str(uint64_t b, char *out, size_t n) {
    if (b >= (1u << 20)) snprintf(out, n, "%.1f MiB", (double)b / (1 << 20));
    else if (b >= 1024) snprintf(out, n, "%.1f KiB", (double)b / 1024);
    else snprintf(out, n, "%llu B", (unsigned long long)b);
}

/* a list of ranks "1, 3, 5" from flags */
static void rank_list(rbuf *r, const char *flag, int n) {
    int first = 1, shown = 0;
    for (int i = 0; i < n; i++) {
        if (!flag[i]) continue;
        if (shown++ == 16) { rp(r, ", ..."); break; }
        rp(r, first ? "%d" : ", %d", i);
        first = 0;
    }
}

size_t tlink_status_report(const tlink_rank_status *st, int n, char *buf, size_t len) {
    rbuf r = {buf, len, 0};
    if (buf && len) buf[0] = 0;
    if (!st || n <= 0) return 0;
    uint64_t maxseq = 0;
    int answered = 0;
    for (int i = 0; i < n; i++)
        if (st[i].answered) {
            answered++;
            if (st[i].seq > maxseq) maxseq = st[i].seq;
        }
    for (int i = 0; i < n; i++) {
        const tlink_rank_status *s = &st[i];
        if (!s->answered) {
            rp(&r, "rank %d: no answer\n", s->rank);
            continue;
        }
        rp(&r, "rank %d (pid %d on %s): ", s->rank, s->pid, s->host);
        if (s->in_call) {
            rp(&r, "in %s #%llu", s->call[0] ? s->call : "?", (unsigned long long)s->seq);
            if (s->algo[0] && strcmp(s->algo, "auto")) rp(&r, " (%s, step %d)", s->algo, s->step);
            else rp(&r, " (step %d)", s->step);
            if (s->call_s >= 0) rp(&r, " for %.1f s", s->call_s);
            if (s->peer >= 0) {
                char d[32], t[32];
                bytes_str(s->bytes_done, d, sizeof d);
                bytes_str(s->bytes_total, t, sizeof t);
                rp(&r, ", waiting %s rank %d (%s of %s) for %.1f s", s->sending ? "to send to" : "to receive from",
                   s->peer, d, t, s->wait_s);
            } else if (s->peer == -2) {
                rp(&r, ", waiting for the ranks of its host for %.1f s", s->wait_s);
            } else {
                rp(&r, ", making progress");
            }
        } else if (s->seq) {
            rp(&r, "not in a call; the last was %s #%llu", s->call[0] ? s->call : "?", (unsigned long long)s->seq);
            if (s->call_s >= 0) rp(&r, ", %.1f s ago", s->call_s);
        } else {
            rp(&r, "not in a call; none made yet");
        }
        rp(&r, "\n");
    }
    /* the diagnosis */
    char *behind = calloc((size_t)n, 1), *silent = calloc((size_t)n, 1), *waiters = calloc((size_t)n, 1);
    char *other = calloc((size_t)n, 1);
    if (!behind || !silent || !waiters || !other) {
        free(behind); free(silent); free(waiters); free(other);
        return r.off;
    }
    int nbehind = 0, nsilent = 0, nother = 0;
    const char *front = NULL; /* the call the ranks at maxseq are in */
    for (int i = 0; i < n; i++)
        if (st[i].answered && st[i].seq == maxseq && st[i].in_call && !front) front = st[i].call;
    for (int i = 0; i < n; i++) {
        if (!st[i].answered) { silent[i] = 1; nsilent++; continue; }
        if (st[i].seq < maxseq || (st[i].seq == maxseq && !st[i].in_call && front)) {
            behind[i] = 1;
            nbehind++;
        } else if (front && st[i].in_call && strcmp(st[i].call, front)) {
            other[i] = 1;
            nother++;
        }
    }
    for (int i = 0; i < n; i++)
        if (st[i].answered && st[i].in_call && st[i].peer >= 0 && st[i].peer < n &&
            (behind[st[i].peer] || silent[st[i].peer]))
            waiters[i] = 1;
    int nwait = 0;
    for (int i = 0; i < n; i++) nwait += waiters[i];
    if (nsilent) {
        rp(&r, "diagnosis: rank%s ", nsilent > 1 ? "s" : "");
        rank_list(&r, silent, n);
        rp(&r, " did not answer (stopped, hung in the kernel, dead, or cut off from the store)\n");
    }
    if (nbehind && front) {
        int bi = -1;
        for (int i = 0; i < n && bi < 0; i++) if (behind[i]) bi = i;
        rp(&r, "diagnosis: rank%s ", nbehind > 1 ? "s" : "");
        rank_list(&r, behind, n);
        rp(&r, " %s behind: %s %s #%llu", nbehind > 1 ? "are" : "is", nbehind > 1 ? "the first's last call is" : "its last call is",
           st[bi].call[0] ? st[bi].call : "?", (unsigned long long)st[bi].seq);
        if (st[bi].in_call) rp(&r, " (still running)");
        rp(&r, ", the others are in %s #%llu", front, (unsigned long long)maxseq);
        if (nwait) {
            rp(&r, "; rank%s ", nwait > 1 ? "s" : "");
            rank_list(&r, waiters, n);
            rp(&r, " wait%s on %s", nwait > 1 ? "" : "s", nbehind > 1 ? "them" : "it");
        }
        rp(&r, "\n");
    }
    if (nother) {
        rp(&r, "diagnosis: rank%s ", nother > 1 ? "s" : "");
        rank_list(&r, other, n);
        rp(&r, " %s in another call than the others' %s #%llu: the ranks called collectives in different orders\n",
           nother > 1 ? "are" : "is", front, (unsigned long long)maxseq);
    }
    if (!nsilent && !nbehind && !nother) {
        int in = 0;
        for (int i = 0; i < n; i++) in += st[i].in_call;
        if (!in) rp(&r, "diagnosis: every rank answered; none is in a call\n");
        else rp(&r, "diagnosis: every rank answered and is in %s #%llu; none is behind\n", front ? front : "?",
                (unsigned long long)maxseq);
    }
    (void)answered;
    free(behind);
    free(silent);
    free(waiters);
    free(other);
    return r.off;
}

/* ---------- the soft deadline ---------- */
typedef struct soft_job {
    char store_addr[256], prefix[160], call[32];
    int rank, size, peer;
    uint64_t seq;
    double soft_s, wait_s;
} soft_job;

static void *soft_main(void *arg) {
    soft_job *j = arg;
    tlink_store *st = NULL;
    if (tlink_store_connect(j->store_addr, 5, &st) == TLINK_OK) {
        char key[320];
        snprintf(key, sizeof key, "%s/status/soft/%llu", j->prefix, (unsigned long long)j->seq);
        int64_t ticket = 0;
        int mine = tlink_store_add(st, key, 1, &ticket) == TLINK_OK && ticket == 1;
        tlink_store_close(st);
        char peer[64] = "";
        if (j->peer >= 0) snprintf(peer, sizeof peer, ", waiting on rank %d", j->peer);
        else if (j->peer == -2) snprintf(peer, sizeof peer, ", waiting for the ranks of its host");
        if (!mine) {
            tl_log(TL_LOG_INFO, "rank %d: %s #%llu has made no progress for %.1f s%s (another rank logs the report)",
                   j->rank, j->call, (unsigned long long)j->seq, j->wait_s, peer);
        } else {
            tlink_rank_status *s = calloc((size_t)j->size, sizeof *s);
            char err[700] = "";
            if (s && ask(j->store_addr, j->prefix, j->size, 3.0, s, j->size, err, sizeof err) == TLINK_OK) {
                size_t need = tlink_status_report(s, j->size, NULL, 0) + 1;
                char *rep = malloc(need);
                if (rep) {
                    tlink_status_report(s, j->size, rep, need);
                    tl_log(TL_LOG_WARN,
                           "rank %d: %s #%llu has made no progress for %.1f s%s (soft deadline TLINK_SOFT_TIMEOUT=%g "
                           "s); the job's status:\n%s",
                           j->rank, j->call, (unsigned long long)j->seq, j->wait_s, peer, j->soft_s, rep);
                    free(rep);
                }
            } else {
                tl_log(TL_LOG_WARN, "rank %d: %s #%llu has made no progress for %.1f s%s (soft deadline); no status: %s",
                       j->rank, j->call, (unsigned long long)j->seq, j->wait_s, peer, err);
            }
            free(s);
        }
    }
    free(j);
    return NULL;
}

void tl_status_tick(tlink_comm *c) {
    tl_stat *s = c->stat;
    if (!s) return;
    uint64_t seq = atomic_load_explicit(&s->seq, memory_order_relaxed);
    int in = atomic_load_explicit(&s->in_call, memory_order_acquire);
    uint64_t key = seq * 2 + (uint64_t)in;
    int64_t now = tl_now_ns();
    if (atomic_load_explicit(&s->seen_key, memory_order_relaxed) != key || !atomic_load(&s->seen_ns)) {
        atomic_store(&s->seen_ns, now);
        atomic_store(&s->seen_key, key);
    }
    if (!in || s->soft_s <= 0 || !s->prefix[0]) return;
    int peer = atomic_load_explicit(&s->peer, memory_order_relaxed);
    int64_t w = atomic_load_explicit(&s->wait_ns, memory_order_relaxed);
    if (peer == -1 || w <= 0) return;
    double waited = (double)(now - w) * 1e-9;
    if (waited < s->soft_s || atomic_load(&s->soft_seq) == seq) return;
    atomic_store(&s->soft_seq, seq);
    soft_job *j = calloc(1, sizeof *j);
    if (!j) return;
    snprintf(j->store_addr, sizeof j->store_addr, "%s", s->store_addr);
    snprintf(j->prefix, sizeof j->prefix, "%s", s->prefix);
    const char *call = atomic_load(&s->call);
    snprintf(j->call, sizeof j->call, "%s", call ? call : "?");
    j->rank = s->rank;
    j->size = s->size;
    j->peer = peer;
    j->seq = seq;
    j->soft_s = s->soft_s;
    j->wait_s = waited;
    pthread_t t;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &at, soft_main, j) != 0) free(j);
    pthread_attr_destroy(&at);
}
