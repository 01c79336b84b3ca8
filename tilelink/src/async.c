/* async.c — nonblocking collectives: one progress thread per communicator runs queued
 * operations in issue order; blocking calls queue behind them when the thread exists. */
#include "tl_internal.h"

#include <stdlib.h>
#include <string.h>

struct tlink_request {
    tl_args a;
    tlink_comm *c;
    tlink_status st;
    int done;
    int on_stack;
    tlink_request *next;
};

struct tl_req_queue {
    pthread_mutex_t mu;
    pthread_cond_t cv, done_cv;
    tlink_request *head, *tail;
    int busy;                       /* the progress thread is running an operation */
    int stop;
    pthread_t thr;
};

static void *progress_main(void *arg) {
    tlink_comm *c = arg;
    tl_req_queue *q = c->q;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        while (!q->head && !q->stop) pthread_cond_wait(&q->cv, &q->mu);
        if (!q->head && q->stop) break;
        tlink_request *r = q->head;
        q->head = r->next;
        if (!q->head) q->tail = NULL;
        q->busy = 1;
        pthread_mutex_unlock(&q->mu);
        pthread_mutex_lock(&c->exec_mu);
        tlink_status st = tl_coll_run(c, &r->a);
        pthread_mutex_unlock(&c->exec_mu);
        pthread_mutex_lock(&q->mu);
        r->st = st;
        r->done = 1;
        q->busy = 0;
        pthread_cond_broadcast(&q->done_cv);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

static tlink_status ensure_queue(tlink_comm *c) {
    if (c->q) return TLINK_OK;
    tl_req_queue *q = calloc(1, sizeof *q);
    if (!q) return tl_err(c, TLINK_ERR_NO_MEMORY, "out of memory");
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    pthread_cond_init(&q->done_cv, NULL);
    c->q = q;
    if (pthread_create(&q->thr, NULL, progress_main, c) != 0) {
        c->q = NULL;
        free(q);
        return tl_err(c, TLINK_ERR_SYSTEM, "cannot start the progress thread");
    }
    return TLINK_OK;
}

static void push(tl_req_queue *q, tlink_request *r) {
    pthread_mutex_lock(&q->mu);
    r->next = NULL;
    if (q->tail) q->tail->next = r;
    else q->head = r;
    q->tail = r;
    pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

tlink_status tl_enqueue(tlink_comm *c, const tl_args *a, tlink_request **req) {
    if (!req) return tl_err(c, TLINK_ERR_INVALID_ARG, "%s: request pointer is NULL", tlink_coll_name(a->coll));
    *req = NULL;
    tlink_status st = ensure_queue(c);
    if (st) return st;
    tlink_request *r = calloc(1, sizeof *r);
    if (!r) return tl_err(c, TLINK_ERR_NO_MEMORY, "out of memory");
    r->a = *a;
    r->c = c;
    push(c->q, r);
    *req = r;
    return TLINK_OK;
}

static tlink_status wait_req(tlink_request *r) {
    tl_req_queue *q = r->c->q;
    pthread_mutex_lock(&q->mu);
    while (!r->done) pthread_cond_wait(&q->done_cv, &q->mu);
    tlink_status st = r->st;
    pthread_mutex_unlock(&q->mu);
    return st;
}

tlink_status tl_execute(tlink_comm *c, tl_args *a) {
    if (c->q) {
        /* nothing queued or running: run here (no thread hand-off); only the thread that uses
         * the communicator queues work, so nothing can be queued meanwhile */
        tl_req_queue *q = c->q;
        pthread_mutex_lock(&q->mu);
        int idle = !q->head && !q->busy;
        pthread_mutex_unlock(&q->mu);
        if (idle) {
            pthread_mutex_lock(&c->exec_mu);
            tlink_status st = tl_coll_run(c, a);
            pthread_mutex_unlock(&c->exec_mu);
            return st;
        }
        tlink_request r;
        memset(&r, 0, sizeof r);
        r.a = *a;
        r.c = c;
        r.on_stack = 1;
        push(c->q, &r);
        return wait_req(&r);
    }
    pthread_mutex_lock(&c->exec_mu);
    tlink_status st = tl_coll_run(c, a);
    pthread_mutex_unlock(&c->exec_mu);
    return st;
}

tlink_status tlink_wait(tlink_request *r) {
    if (!r) return TLINK_ERR_INVALID_ARG;
    tlink_status st = wait_req(r);
    free(r);
    return st;
}

tlink_status tlink_test(tlink_request *r, int *done) {
    if (!r || !done) return TLINK_ERR_INVALID_ARG;
    tl_req_queue *q = r->c->q;
    pthread_mutex_lock(&q->mu);
    int d = r->done;
    tlink_status st = r->st;
    pthread_mutex_unlock(&q->mu);
    *done = d;
    if (!d) return TLINK_IN_PROGRESS;
    free(r);
    return st;
}

void tl_async_shutdown(tlink_comm *c) {
    tl_req_queue *q = c->q;
    if (!q) return;
    pthread_mutex_lock(&q->mu);
    q->stop = 1;
    pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
    pthread_join(q->thr, NULL);
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->cv);
    pthread_cond_destroy(&q->done_cv);
    free(q);
    c->q = NULL;
}

void tl_async_drain(tlink_comm *c) {
    tl_req_queue *q = c->q;
    if (!q) return;
    pthread_mutex_lock(&q->mu);
    while (q->head || q->busy) pthread_cond_wait(&q->done_cv, &q->mu);
    pthread_mutex_unlock(&q->mu);
}

void tl_async_fail_all(tlink_comm *c, tlink_status st) {
    /* queued operations fail fast on their own: the executor sees the broken communicator */
    (void)c;
    (void)st;
}
