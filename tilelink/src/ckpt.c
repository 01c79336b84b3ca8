/* ckpt.c — checkpoint helpers: the in-memory buddy checkpoint and atomic, checksummed files.
 *
 * Buddy checkpoint. Each rank keeps its two newest saved states (two steps, so that ranks
 * that were one step apart when a failure hit can agree on a common one) and the two newest
 * of its buddy, the previous rank in the ring of the communicator used for saving. Restore
 * (on a new communicator) allgathers who holds what, picks the newest step every member can
 * get, sends the buddy copies that are needed and returns this rank's state. */
#include "tl_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct slot {
    int64_t step;                   /* -1: empty */
    size_t bytes, cap;
    void *data;
} slot;

struct tlink_ckpt {
    int id;                         /* identity: rank in the first communicator used, -1 before */
    slot own[2];
    int buddy_owner;                /* identity of the rank whose copies buddy[] holds, -1 */
    slot buddy[2];
};

tlink_status tlink_ckpt_create(tlink_ckpt **out) {
    if (!out) {
        tl_set_thread_error("tlink_ckpt_create: out is NULL");
        return TLINK_ERR_INVALID_ARG;
    }
    tlink_ckpt *ck = calloc(1, sizeof *ck);
    if (!ck) {
        tl_set_thread_error("tlink_ckpt_create: out of memory");
        return TLINK_ERR_NO_MEMORY;
    }
    ck->id = -1;
    ck->buddy_owner = -1;
    for (int i = 0; i < 2; i++) ck->own[i].step = ck->buddy[i].step = -1;
    *out = ck;
    return TLINK_OK;
}

void tlink_ckpt_free(tlink_ckpt *ck) {
    if (!ck) return;
    for (int i = 0; i < 2; i++) {
        free(ck->own[i].data);
        free(ck->buddy[i].data);
    }
    free(ck);
}

/* the slot to overwrite with `step`: the one already holding it, else the older one */
static slot *slot_for(slot s[2], int64_t step) {
    if (s[0].step == step) return &s[0];
    if (s[1].step == step) return &s[1];
    return s[0].step <= s[1].step ? &s[0] : &s[1];
}

static slot *slot_find(slot s[2], int64_t step) {
    if (step < 0) return NULL;
    if (s[0].step == step) return &s[0];
    if (s[1].step == step) return &s[1];
    return NULL;
}

static int slot_fill(slot *sl, int64_t step, const void *data, size_t bytes) {
    if (bytes > sl->cap) {
        void *p = realloc(sl->data, bytes ? bytes : 1);
        if (!p) return -1;
        sl->data = p;
        sl->cap = bytes;
    }
    if (bytes) memcpy(sl->data, data, bytes);
    sl->bytes = bytes;
    sl->step = step;
    return 0;
}

tlink_status tlink_ckpt_save(tlink_ckpt *ck, tlink_comm *c, int64_t step, const void *state, size_t bytes) {
    if (!c) {
        tl_set_thread_error("tlink_ckpt_save: comm is NULL");
        return TLINK_ERR_INVALID_ARG;
    }
    if (!ck) return tl_err(c, TLINK_ERR_INVALID_ARG, "tlink_ckpt_save: ck is NULL");
    if (bytes && !state) return tl_err(c, TLINK_ERR_INVALID_ARG, "tlink_ckpt_save: state is NULL with %zu bytes", bytes);
    if (step < 0) return tl_err(c, TLINK_ERR_INVALID_ARG, "tlink_ckpt_save: step %lld is negative", (long long)step);
    if (ck->id < 0) ck->id = c->rank;
    slot *mine = slot_for(ck->own, step);
    if (slot_fill(mine, step, state, bytes))
        return tl_err(c, TLINK_ERR_NO_MEMORY, "tlink_ckpt_save: out of memory (%zu bytes)", bytes);
    int n = c->size;
    if (n == 1) return TLINK_OK;
    int to = (c->rank + 1) % n, from = (c->rank + n - 1) % n;
    /* header: identity, step, size */
    int64_t hs[3] = {ck->id, step, (int64_t)bytes}, hr[3] = {-1, -1, 0};
    tlink_status st = tlink_sendrecv(c, hs, 3, to, hr, 3, from, TLINK_I64, NULL);
    if (st) return st;
    if (hr[0] < 0 || hr[1] < 0 || hr[2] < 0)
        return tl_err(c, TLINK_ERR_INTERNAL, "tlink_ckpt_save: bad header from rank %d", from);
    if (hr[0] != ck->buddy_owner) {
        /* a new buddy (first save, or the ring changed after a shrink) */
        ck->buddy_owner = (int)hr[0];
        ck->buddy[0].step = ck->buddy[1].step = -1;
    }
    slot *b = slot_for(ck->buddy, hr[1]);
    size_t rb = (size_t)hr[2];
    if (rb > b->cap) {
        void *p = realloc(b->data, rb);
        if (!p) return tl_err(c, TLINK_ERR_NO_MEMORY, "tlink_ckpt_save: out of memory (%zu bytes)", rb);
        b->data = p;
        b->cap = rb;
    }
    b->step = -1; /* not valid until received */
    st = tlink_sendrecv(c, state, bytes, to, b->data, rb, from, TLINK_U8, NULL);
    if (st) return st;
    b->bytes = rb;
    b->step = hr[1];
    return TLINK_OK;
}

const void *tlink_ckpt_buddy(const tlink_ckpt *ck, int *owner, int64_t *step, size_t *bytes) {
    const slot *best = NULL;
    if (ck)
        for (int i = 0; i < 2; i++)
            if (ck->buddy[i].step >= 0 && (!best || ck->buddy[i].step > best->step)) best = &ck->buddy[i];
    if (owner) *owner = best ? ck->buddy_owner : -1;
    if (step) *step = best ? best->step : -1;
    if (bytes) *bytes = best ? best->bytes : 0;
    return best ? best->data : NULL;
}

enum { R_ID, R_OWN0, R_OWN1, R_BOWNER, R_B0, R_B1, R_BB0, R_BB1, R_N };

tlink_status tlink_ckpt_restore(tlink_ckpt *ck, tlink_comm *c, void *state, size_t cap, size_t *bytes,
                                int64_t *step) {
    if (!c) {
        tl_set_thread_error("tlink_ckpt_restore: comm is NULL");
        return TLINK_ERR_INVALID_ARG;
    }
    if (!ck) return tl_err(c, TLINK_ERR_INVALID_ARG, "tlink_ckpt_restore: ck is NULL");
    if (cap && !state) return tl_err(c, TLINK_ERR_INVALID_ARG, "tlink_ckpt_restore: state is NULL with cap %zu", cap);
    if (ck->id < 0) ck->id = c->rank;
    int n = c->size;
    int64_t mine[R_N] = {ck->id, ck->own[0].step, ck->own[1].step, ck->buddy_owner,
                         ck->buddy[0].step, ck->buddy[1].step, (int64_t)ck->buddy[0].bytes, (int64_t)ck->buddy[1].bytes};
    int64_t *all = malloc(sizeof(int64_t) * R_N * (size_t)n);
    int *prov = malloc(sizeof(int) * (size_t)n);
    if (!all || !prov) { free(all); free(prov); return tl_err(c, TLINK_ERR_NO_MEMORY, "tlink_ckpt_restore: out of memory"); }
    tlink_status st = tlink_allgather(c, mine, all, R_N, TLINK_I64);
    if (st) { free(all); free(prov); return st; }
#define A(r, f) all[(size_t)(r) * R_N + (f)]
    /* candidate steps: every own step anyone has, newest first */
    int64_t best = -1, newest = -1;
    int lost_id = -1;
    for (;;) {
        int64_t cand = -1;
        for (int r = 0; r < n; r++)
            for (int k = 0; k < 2; k++) {
                int64_t s = A(r, R_OWN0 + k);
                if (s > cand && (newest < 0 || s < newest)) cand = s;
            }
        if (cand < 0) break;
        newest = cand;
        int ok = 1;
        for (int r = 0; r < n && ok; r++) {
            prov[r] = -1;
            if (A(r, R_OWN0) == cand || A(r, R_OWN1) == cand) { prov[r] = r; continue; }
            for (int q = 0; q < n && prov[r] < 0; q++)
                if (q != r && A(q, R_BOWNER) == A(r, R_ID) && (A(q, R_B0) == cand || A(q, R_B1) == cand)) prov[r] = q;
            if (prov[r] < 0) { ok = 0; if (lost_id < 0) lost_id = (int)A(r, R_ID); }
        }
        if (ok) { best = cand; break; }
    }
    if (best < 0) {
        int any = 0;
        for (int r = 0; r < n; r++) any |= A(r, R_OWN0) >= 0 || A(r, R_OWN1) >= 0;
        free(all);
        free(prov);
        if (any)
            return tl_err(c, TLINK_ERR_PEER_FAILED,
                          "tlink_ckpt_restore: no step can be restored on every rank: the state of rank %d is lost "
                          "(it and the rank holding its copy both failed)", lost_id);
        if (bytes) *bytes = 0;
        if (step) *step = -1;
        return TLINK_OK;
    }
    /* move the buddy copies that are needed, in one global order */
    slot *got = NULL;
    for (int r = 0; r < n && !st; r++) {
        int q = prov[r];
        if (q == r) continue;
        if (c->rank == q) {
            slot *b = slot_find(ck->buddy, best);
            st = tlink_send(c, b->data, b->bytes, TLINK_U8, r);
        } else if (c->rank == r) {
            size_t nb = (size_t)(A(q, R_B0) == best ? A(q, R_BB0) : A(q, R_BB1));
            got = slot_for(ck->own, best);
            got->step = -1;
            if (nb > got->cap) {
                void *p = realloc(got->data, nb);
                if (!p) { st = tl_err(c, TLINK_ERR_NO_MEMORY, "tlink_ckpt_restore: out of memory"); break; }
                got->data = p;
                got->cap = nb;
            }
            st = tlink_recv(c, got->data, nb, TLINK_U8, q, NULL);
            if (!st) { got->bytes = nb; got->step = best; }
        }
    }
#undef A
    free(all);
    free(prov);
    if (st) return st;
    slot *s = slot_find(ck->own, best);
    if (!s) return tl_err(c, TLINK_ERR_INTERNAL, "tlink_ckpt_restore: step %lld missing after the exchange", (long long)best);
    if (s->bytes > cap)
        return tl_err(c, TLINK_ERR_TRUNCATED, "tlink_ckpt_restore: the state has %zu bytes, the buffer %zu", s->bytes, cap);
    if (s->bytes) memcpy(state, s->data, s->bytes);
    if (bytes) *bytes = s->bytes;
    if (step) *step = best;
    /* forget steps newer than the restored one: they belong to a future that did not happen */
    for (int i = 0; i < 2; i++)
        if (ck->own[i].step > best) ck->own[i].step = -1;
    return TLINK_OK;
}

/* ---------------------------------------------------------------- files */

#define CK_MAGIC "TLCKPT01"
typedef struct ck_hdr {
    char magic[8];
    uint32_t version, hdr_size;
    int64_t step;
    uint64_t bytes;
    uint64_t sum;                   /* over the header (with sum = 0) and the data */
} ck_hdr;

static uint64_t ck_sum(const ck_hdr *h, const void *data, size_t n) {
    ck_hdr t = *h;
    t.sum = 0;
    uint64_t s = tl_hash64(&t, sizeof t, 0x434b5054ULL);
    return tl_hash64(data, n, s);
}

static int write_all_fd(int fd, const void *p, size_t n) {
    const char *b = p;
    while (n) {
        ssize_t w = write(fd, b, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

tlink_status tlink_ckpt_write_file(const char *path, int64_t step, const void *state, size_t bytes) {
    if (!path || !*path) { tl_set_thread_error("tlink_ckpt_write_file: path is empty"); return TLINK_ERR_INVALID_ARG; }
    if (bytes && !state) { tl_set_thread_error("tlink_ckpt_write_file: state is NULL with %zu bytes", bytes); return TLINK_ERR_INVALID_ARG; }
    ck_hdr h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, CK_MAGIC, 8);
    h.version = 1;
    h.hdr_size = sizeof h;
    h.step = step;
    h.bytes = bytes;
    h.sum = ck_sum(&h, state, bytes);
    char tmp[4200];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof tmp) {
        tl_set_thread_error("tlink_ckpt_write_file: path too long");
        return TLINK_ERR_INVALID_ARG;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        tl_set_thread_error("tlink_ckpt_write_file: cannot create %s: %s", tmp, strerror(errno));
        return TLINK_ERR_SYSTEM;
    }
    if (write_all_fd(fd, &h, sizeof h) || write_all_fd(fd, state, bytes) || fsync(fd) != 0) {
        int e = errno;
        close(fd);
        unlink(tmp);
        tl_set_thread_error("tlink_ckpt_write_file: writing %s: %s", tmp, strerror(e));
        return TLINK_ERR_SYSTEM;
    }
    close(fd);
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        tl_set_thread_error("tlink_ckpt_write_file: rename %s -> %s: %s", tmp, path, strerror(e));
        return TLINK_ERR_SYSTEM;
    }
    /* make the rename itself durable */
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", path);
    int dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return TLINK_OK;
}

tlink_status tlink_ckpt_read_file(const char *path, int64_t *step, void **state, size_t *bytes) {
    if (!path || !*path || !state) {
        tl_set_thread_error("tlink_ckpt_read_file: %s is NULL", !state ? "state" : "path");
        return TLINK_ERR_INVALID_ARG;
    }
    *state = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        tl_set_thread_error("tlink_ckpt_read_file: cannot open %s: %s", path, strerror(errno));
        return TLINK_ERR_SYSTEM;
    }
    struct stat sb;
    ck_hdr h;
    ssize_t r = fstat(fd, &sb) == 0 ? read(fd, &h, sizeof h) : -1;
    if (r != (ssize_t)sizeof h || memcmp(h.magic, CK_MAGIC, 8) || h.hdr_size != sizeof h) {
        close(fd);
        tl_set_thread_error("tlink_ckpt_read_file: %s is not a TileLink checkpoint (bad or short header)", path);
        return TLINK_ERR_CORRUPT;
    }
    if (h.version != 1) {
        close(fd);
        tl_set_thread_error("tlink_ckpt_read_file: %s has format version %u, this library reads 1", path, h.version);
        return TLINK_ERR_UNSUPPORTED;
    }
    if ((uint64_t)sb.st_size != sizeof h + h.bytes) {
        close(fd);
        tl_set_thread_error("tlink_ckpt_read_file: %s is %lld bytes, its header says %llu: truncated or corrupt", path,
                            (long long)sb.st_size, (unsigned long long)(sizeof h + h.bytes));
        return TLINK_ERR_CORRUPT;
    }
    void *buf = malloc(h.bytes ? h.bytes : 1);
    if (!buf) {
        close(fd);
        tl_set_thread_error("tlink_ckpt_read_file: out of memory (%llu bytes)", (unsigned long long)h.bytes);
        return TLINK_ERR_NO_MEMORY;
    }
    size_t got = 0;
    while (got < h.bytes) {
        ssize_t k = read(fd, (char *)buf + got, h.bytes - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        got += (size_t)k;
    }
    close(fd);
    if (got != h.bytes || ck_sum(&h, buf, h.bytes) != h.sum) {
        free(buf);
        tl_set_thread_error("tlink_ckpt_read_file: %s: checksum mismatch (the file is corrupt)", path);
        return TLINK_ERR_CORRUPT;
    }
    *state = buf;
    if (bytes) *bytes = h.bytes;
    if (step) *step = h.step;
    return TLINK_OK;
}
