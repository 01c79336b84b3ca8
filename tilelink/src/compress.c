/* compress.c — compressed all-reduce of f32 gradients with error feedback.
 *
 * Codecs: every chunk of `chunk` consecutive elements is encoded as a 4-byte f32 scale
 * followed by its packed values (none: raw f32, no scale):
 *   sign1: bit i = (x_i >= 0), decoded as +-scale, scale = mean |x| over the chunk
 *   int4:  q = round(x / s) in -7..7, s = max|x| / 7, stored as q + 8, two per byte
 *          (element 2k in the low nibble)
 *   int8:  q = round(x / s) in -127..127, s = max|x| / 127, stored as int8
 *   fp8:   e4m3(x / s), s = max|x| / 448
 * Rounding is to nearest (ties to even, lrintf / the fp8 converter), deterministic.
 *
 * All-reduce (docs/tilelink-compression.md): reduce-scatter by a pairwise exchange of
 * compressed blocks, the owner of a block sums the decoded versions, re-compresses the sum
 * with a residual of its own and the compressed blocks are all-gathered. */
#include "tl_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct tlink_compress {
    tlink_comm *comm;
    tlink_compress_method m;
    size_t count, chunk;
    int ef, n, me;
    size_t *boff;          /* [n+1] element offset of each rank's block (chunk aligned) */
    size_t pad;            /* encoded bytes of the largest block: every block travels padded */
    float *e1;             /* [count] residual of the first compression (this rank's input) */
    float *e2;             /* [my block] residual of the second (the reduced block I own) */
    float *acc;            /* [my block] sum of the decoded blocks */
    float *tmp;            /* [chunk] input + residual of the chunk being encoded */
    uint8_t *sbuf, *rbuf;  /* [n * pad] */
    tlink_compress_stats stats;
};

static const char *const method_names[TLINK_COMPRESS_COUNT] = {"none", "sign1", "int4", "int8", "fp8"};

const char *tlink_compress_name(tlink_compress_method m) {
    return (unsigned)m < TLINK_COMPRESS_COUNT ? method_names[m] : "?";
}

int tlink_compress_from_name(const char *name) {
    if (!name) return -1;
    for (int i = 0; i < TLINK_COMPRESS_COUNT; i++)
        if (!strcmp(name, method_names[i])) return i;
    if (!strcmp(name, "1bit") || !strcmp(name, "sign")) return TLINK_COMPRESS_SIGN1;
    if (!strcmp(name, "fp8_e4m3") || !strcmp(name, "e4m3")) return TLINK_COMPRESS_FP8;
    if (!strcmp(name, "f32")) return TLINK_COMPRESS_NONE;
    return -1;
}

/* ---------- codecs ---------- */
static size_t payload_bytes(tlink_compress_method m, size_t k) {
    switch (m) {
    case TLINK_COMPRESS_NONE: return 4 * k;
    case TLINK_COMPRESS_SIGN1: return (k + 7) / 8;
    case TLINK_COMPRESS_INT4: return (k + 1) / 2;
    case TLINK_COMPRESS_INT8:
    case TLINK_COMPRESS_FP8: return k;
    default: return 0;
    }
}
static size_t header_bytes(tlink_compress_method m) { return m == TLINK_COMPRESS_NONE ? 0 : 4; }

static size_t enc_bytes(tlink_compress_method m, size_t count, size_t chunk) {
    size_t full = count / chunk, rest = count % chunk;
    size_t b = full * (header_bytes(m) + payload_bytes(m, chunk));
    if (rest) b += header_bytes(m) + payload_bytes(m, rest);
    return b;
}

size_t tlink_compress_encoded_bytes(tlink_compress_method m, size_t count, size_t chunk) {
    if ((unsigned)m >= TLINK_COMPRESS_COUNT) return 0;
    if (!chunk) chunk = TLINK_COMPRESS_DEFAULT_CHUNK;
    if (chunk > TLINK_COMPRESS_MAX_CHUNK) return 0;
    return enc_bytes(m, count, chunk);
}

static float e4m3_lut[256];
static pthread_once_t lut_once = PTHREAD_ONCE_INIT;
static void lut_init(void) {
    for (int i = 0; i < 256; i++) e4m3_lut[i] = tlink_fp8_e4m3_to_f32((uint8_t)i);
}

static float max_abs(const float *x, size_t k) {
    float m = 0;
    for (size_t i = 0; i < k; i++) {
        float a = fabsf(x[i]);
        m = a > m ? a : m;
    }
    return m;
}

/* encode one chunk of k values x into out; returns bytes written */
static size_t enc_chunk(tlink_compress_method m, const float *restrict x, size_t k, uint8_t *restrict out) {
    if (m == TLINK_COMPRESS_NONE) {
        memcpy(out, x, 4 * k);
        return 4 * k;
    }
    uint8_t *p = out + 4;
    float scale;
    switch (m) {
    case TLINK_COMPRESS_SIGN1: {
        double s = 0;
        for (size_t i = 0; i < k; i++) s += fabsf(x[i]);
        scale = (float)(s / (double)k);
        size_t i = 0;
        for (; i + 8 <= k; i += 8) {
            unsigned b = 0;
            for (int j = 0; j < 8; j++) b |= (unsigned)(x[i + j] >= 0.0f) << j;
            *p++ = (uint8_t)b;
        }
        if (i < k) {
            unsigned b = 0;
            for (int j = 0; i + (size_t)j < k; j++) b |= (unsigned)(x[i + j] >= 0.0f) << j;
            *p++ = (uint8_t)b;
        }
        break;
    }
    case TLINK_COMPRESS_INT4: {
        float mx = max_abs(x, k);
        scale = mx / 7.0f;
        float inv = mx > 0 ? 7.0f / mx : 0.0f;
        size_t i = 0;
        for (; i + 2 <= k; i += 2) {
            int a = (int)lrintf(x[i] * inv), b = (int)lrintf(x[i + 1] * inv);
            a = a < -7 ? -7 : a > 7 ? 7 : a;
            b = b < -7 ? -7 : b > 7 ? 7 : b;
            *p++ = (uint8_t)((a + 8) | ((b + 8) << 4));
        }
        if (i < k) {
            int a = (int)lrintf(x[i] * inv);
            a = a < -7 ? -7 : a > 7 ? 7 : a;
            *p++ = (uint8_t)(a + 8);
        }
        break;
    }
    case TLINK_COMPRESS_INT8: {
        float mx = max_abs(x, k);
        scale = mx / 127.0f;
        float inv = mx > 0 ? 127.0f / mx : 0.0f;
        for (size_t i = 0; i < k; i++) {
            int a = (int)lrintf(x[i] * inv);
            a = a < -127 ? -127 : a > 127 ? 127 : a;
            p[i] = (uint8_t)(int8_t)a;
        }
        p += k;
        break;
    }
    default: { /* fp8 */
        float mx = max_abs(x, k);
        scale = mx / 448.0f;
        float inv = mx > 0 ? 448.0f / mx : 0.0f;
        for (size_t i = 0; i < k; i++) {
            float v = x[i] * inv;
            v = v > 448.0f ? 448.0f : v < -448.0f ? -448.0f : v;
            p[i] = tlink_f32_to_fp8_e4m3(v);
        }
        p += k;
        break;
    }
    }
    memcpy(out, &scale, 4);
    return (size_t)(p - out);
}

/* decode one chunk; add != 0 accumulates into y instead of storing */
static size_t dec_chunk(tlink_compress_method m, const uint8_t *restrict in, size_t k, float *restrict y, int add) {
    if (m == TLINK_COMPRESS_NONE) {
        if (!add) {
            memcpy(y, in, 4 * k);
        } else {
            for (size_t i = 0; i < k; i++) {
                float v;
                memcpy(&v, in + 4 * i, 4);
                y[i] += v;
            }
        }
        return 4 * k;
    }
    float scale;
    memcpy(&scale, in, 4);
    const uint8_t *p = in + 4;
    switch (m) {
    case TLINK_COMPRESS_SIGN1:
        for (size_t i = 0; i < k; i++) {
            float v = (p[i >> 3] >> (i & 7)) & 1 ? scale : -scale;
            y[i] = add ? y[i] + v : v;
        }
        p += (k + 7) / 8;
        break;
    case TLINK_COMPRESS_INT4:
        for (size_t i = 0; i < k; i++) {
            int q = ((p[i >> 1] >> ((i & 1) * 4)) & 15) - 8;
            float v = (float)q * scale;
            y[i] = add ? y[i] + v : v;
        }
        p += (k + 1) / 2;
        break;
    case TLINK_COMPRESS_INT8:
        for (size_t i = 0; i < k; i++) {
            float v = (float)(int8_t)p[i] * scale;
            y[i] = add ? y[i] + v : v;
        }
        p += k;
        break;
    default:
        for (size_t i = 0; i < k; i++) {
            float v = e4m3_lut[p[i]] * scale;
            y[i] = add ? y[i] + v : v;
        }
        p += k;
        break;
    }
    return (size_t)(p - in);
}

/* encode count values (x + e when e != NULL, then e = that - decoded) chunk by chunk */
static size_t enc_ef(tlink_compress_method m, const float *x, float *e, size_t count, size_t chunk, float *tmp,
                     uint8_t *out) {
    size_t o = 0;
    for (size_t c0 = 0; c0 < count; c0 += chunk) {
        size_t k = TL_MIN(chunk, count - c0);
        if (!e || m == TLINK_COMPRESS_NONE) {
            o += enc_chunk(m, x + c0, k, out + o);
            continue;
        }
        float *ec = e + c0;
        for (size_t i = 0; i < k; i++) tmp[i] = x[c0 + i] + ec[i];
        size_t b = enc_chunk(m, tmp, k, out + o);
        dec_chunk(m, out + o, k, ec, 0);
        for (size_t i = 0; i < k; i++) ec[i] = tmp[i] - ec[i];
        o += b;
    }
    return o;
}

static size_t dec_all(tlink_compress_method m, const uint8_t *in, size_t count, size_t chunk, float *y, int add) {
    size_t o = 0;
    for (size_t c0 = 0; c0 < count; c0 += chunk) o += dec_chunk(m, in + o, TL_MIN(chunk, count - c0), y + c0, add);
    return o;
}

static tlink_status codec_args(tlink_compress_method m, const void *a, const void *b, size_t count, size_t *chunk,
                               const char *what) {
    if ((unsigned)m >= TLINK_COMPRESS_COUNT) {
        tl_set_thread_error("%s: invalid method %d", what, (int)m);
        return TLINK_ERR_INVALID_ARG;
    }
    if (!*chunk) *chunk = TLINK_COMPRESS_DEFAULT_CHUNK;
    if (*chunk > TLINK_COMPRESS_MAX_CHUNK) {
        tl_set_thread_error("%s: chunk %zu is larger than %u", what, *chunk, TLINK_COMPRESS_MAX_CHUNK);
        return TLINK_ERR_INVALID_ARG;
    }
    if (count && (!a || !b)) {
        tl_set_thread_error("%s: %s is NULL", what, !a ? "in" : "out");
        return TLINK_ERR_INVALID_ARG;
    }
    return TLINK_OK;
}

tlink_status tlink_compress_encode(tlink_compress_method m, const float *x, size_t count, size_t chunk, void *out) {
    tlink_status st = codec_args(m, x, out, count, &chunk, "compress_encode");
    if (st) return st;
    pthread_once(&lut_once, lut_init);
    enc_ef(m, x, NULL, count, chunk, NULL, out);
    return TLINK_OK;
}

tlink_status tlink_compress_decode(tlink_compress_method m, const void *in, size_t count, size_t chunk, float *out) {
    tlink_status st = codec_args(m, in, out, count, &chunk, "compress_decode");
    if (st) return st;
    pthread_once(&lut_once, lut_init);
    dec_all(m, in, count, chunk, out, 0);
    return TLINK_OK;
}

/* ---------- state ---------- */
void tlink_compress_destroy(tlink_compress *cs) {
    if (!cs) return;
    free(cs->boff);
    free(cs->e1);
    free(cs->e2);
    free(cs->acc);
    free(cs->tmp);
    free(cs->sbuf);
    free(cs->rbuf);
    free(cs);
}

tlink_status tlink_compress_create(tlink_comm *comm, tlink_compress_method m, size_t count, size_t chunk,
                                   int error_feedback, tlink_compress **out) {
    if (!out) {
        tl_set_thread_error("compress_create: out is NULL");
        return TLINK_ERR_INVALID_ARG;
    }
    *out = NULL;
    if (!comm) {
        tl_set_thread_error("compress_create: comm is NULL");
        return TLINK_ERR_INVALID_ARG;
    }
    if ((unsigned)m >= TLINK_COMPRESS_COUNT)
        return tl_err(comm, TLINK_ERR_INVALID_ARG, "compress_create: invalid method %d", (int)m);
    if (!chunk) chunk = TLINK_COMPRESS_DEFAULT_CHUNK;
    if (chunk > TLINK_COMPRESS_MAX_CHUNK)
        return tl_err(comm, TLINK_ERR_INVALID_ARG, "compress_create: chunk %zu is larger than %u", chunk,
                      TLINK_COMPRESS_MAX_CHUNK);
    if (count > ((size_t)1 << 40))
        return tl_err(comm, TLINK_ERR_INVALID_ARG, "compress_create: count %zu is too large", count);
    if (error_feedback != 0 && error_feedback != 1)
        return tl_err(comm, TLINK_ERR_INVALID_ARG, "compress_create: error_feedback must be 0 or 1 (got %d)",
                      error_feedback);
    pthread_once(&lut_once, lut_init);
    tlink_compress *cs = calloc(1, sizeof *cs);
    if (!cs) return tl_err(comm, TLINK_ERR_NO_MEMORY, "compress_create: out of memory");
    int n = tlink_comm_size(comm);
    cs->comm = comm;
    cs->m = m;
    cs->count = count;
    cs->chunk = chunk;
    cs->ef = error_feedback;
    cs->n = n;
    cs->me = tlink_comm_rank(comm);
    cs->boff = calloc((size_t)n + 1, sizeof *cs->boff);
    size_t nchunks = (count + chunk - 1) / chunk;
    size_t maxblk = 0;
    if (cs->boff) {
        for (int j = 0; j <= n; j++) {
            size_t q = nchunks / (size_t)n, r = nchunks % (size_t)n;
            size_t co = (size_t)j * q + TL_MIN((size_t)j, r);
            cs->boff[j] = TL_MIN(co * chunk, count);
        }
        for (int j = 0; j < n; j++) {
            size_t bn = cs->boff[j + 1] - cs->boff[j];
            size_t eb = enc_bytes(m, bn, chunk);
            if (eb > cs->pad) cs->pad = eb;
            if (bn > maxblk) maxblk = bn;
        }
    }
    size_t mine = cs->boff ? cs->boff[cs->me + 1] - cs->boff[cs->me] : 0;
    cs->e1 = calloc(count ? count : 1, sizeof(float));
    cs->e2 = calloc(mine ? mine : 1, sizeof(float));
    cs->acc = calloc(mine ? mine : 1, sizeof(float));
    cs->tmp = calloc(chunk, sizeof(float));
    cs->sbuf = malloc(cs->pad * (size_t)n + 1);
    cs->rbuf = malloc(cs->pad * (size_t)n + 1);
    if (!cs->boff || !cs->e1 || !cs->e2 || !cs->acc || !cs->tmp || !cs->sbuf || !cs->rbuf) {
        tlink_compress_destroy(cs);
        return tl_err(comm, TLINK_ERR_NO_MEMORY, "compress_create: out of memory (%zu elements)", count);
    }
    /* zero the padding once: the bytes past a short block's encoding travel too */
    memset(cs->sbuf, 0, cs->pad * (size_t)n + 1);
    memset(cs->rbuf, 0, cs->pad * (size_t)n + 1);
    size_t per = (count + (size_t)n - 1) / (size_t)n;
    cs->stats.f32_ring_bytes = (uint64_t)2 * (uint64_t)(n - 1) * per * 4;
    *out = cs;
    return TLINK_OK;
}

void tlink_compress_reset(tlink_compress *cs) {
    if (!cs) return;
    memset(cs->e1, 0, (cs->count ? cs->count : 1) * sizeof(float));
    size_t mine = cs->boff[cs->me + 1] - cs->boff[cs->me];
    memset(cs->e2, 0, (mine ? mine : 1) * sizeof(float));
}

tlink_status tlink_compress_get_stats(const tlink_compress *cs, tlink_compress_stats *out) {
    if (!cs || !out) {
        tl_set_thread_error("compress_get_stats: %s is NULL", !cs ? "state" : "out");
        return TLINK_ERR_INVALID_ARG;
    }
    *out = cs->stats;
    double s = 0;
    if (cs->ef) {
        for (size_t i = 0; i < cs->count; i++) s += (double)cs->e1[i] * cs->e1[i];
        size_t mine = cs->boff[cs->me + 1] - cs->boff[cs->me];
        for (size_t i = 0; i < mine; i++) s += (double)cs->e2[i] * cs->e2[i];
    }
    out->residual_norm = sqrt(s);
    return TLINK_OK;
}

tlink_status tlink_compressed_allreduce(tlink_compress *cs, const float *sendbuf, float *recvbuf, size_t count,
                                        tlink_op op) {
    if (!cs) {
        tl_set_thread_error("compressed_allreduce: state is NULL");
        return TLINK_ERR_INVALID_ARG;
    }
    tlink_comm *c = cs->comm;
    if (count != cs->count)
        return tl_err(c, TLINK_ERR_INVALID_ARG, "compressed_allreduce: count %zu differs from the state's %zu", count,
                      cs->count);
    if (op != TLINK_SUM && op != TLINK_AVG)
        return tl_err(c, TLINK_ERR_INVALID_ARG, "compressed_allreduce: op must be sum or avg (got %s)",
                      tlink_op_name(op));
    if (count && (!sendbuf || !recvbuf))
        return tl_err(c, TLINK_ERR_INVALID_ARG, "compressed_allreduce: %s is NULL", !sendbuf ? "sendbuf" : "recvbuf");
    if (tlink_comm_size(c) != cs->n || tlink_comm_rank(c) != cs->me)
        return tl_err(c, TLINK_ERR_INVALID_ARG, "compressed_allreduce: the communicator changed size since the state was made");
    int n = cs->n, me = cs->me;
    size_t pad = cs->pad, chunk = cs->chunk;
    tlink_compress_method m = cs->m;
    float *e1 = cs->ef ? cs->e1 : NULL, *e2 = cs->ef ? cs->e2 : NULL;
    double t0 = tl_now(), tcomm = 0;
    tlink_status st = TLINK_OK;

    /* phase 1: compress every block of (input + residual), exchange, sum my block */
    for (int j = 0; j < n; j++) {
        size_t bo = cs->boff[j], bn = cs->boff[j + 1] - bo;
        enc_ef(m, sendbuf + bo, e1 ? e1 + bo : NULL, bn, chunk, cs->tmp, cs->sbuf + (size_t)j * pad);
    }
    if (n > 1 && pad) {
        double t = tl_now();
        st = tlink_alltoall(c, cs->sbuf, cs->rbuf, pad, TLINK_U8);
        tcomm += tl_now() - t;
        if (st) return st;
    } else if (pad) {
        memcpy(cs->rbuf, cs->sbuf, pad);
    }
    size_t mo = cs->boff[me], mn = cs->boff[me + 1] - mo;
    if (mn) {
        dec_all(m, cs->rbuf, mn, chunk, cs->acc, 0);
        for (int i = 1; i < n; i++) dec_all(m, cs->rbuf + (size_t)i * pad, mn, chunk, cs->acc, 1);
        if (op == TLINK_AVG)
            for (size_t i = 0; i < mn; i++) cs->acc[i] /= (float)n;
    }

    /* phase 2: compress my reduced block (+ its residual), all-gather, decode everything */
    uint8_t *g = cs->sbuf;
    enc_ef(m, cs->acc, e2, mn, chunk, cs->tmp, g + (size_t)me * pad);
    if (n > 1 && pad) {
        double t = tl_now();
        st = tlink_allgather(c, g + (size_t)me * pad, g, pad, TLINK_U8);
        tcomm += tl_now() - t;
        if (st) return st;
    }
    for (int j = 0; j < n; j++) {
        size_t bo = cs->boff[j], bn = cs->boff[j + 1] - bo;
        dec_all(m, g + (size_t)j * pad, bn, chunk, recvbuf + bo, 0);
    }
    uint64_t wire = n > 1 ? (uint64_t)2 * (uint64_t)(n - 1) * pad : 0;
    cs->stats.calls++;
    cs->stats.last_wire_bytes = wire;
    cs->stats.total_wire_bytes += wire;
    cs->stats.last_comm_s = tcomm;
    cs->stats.last_codec_s = tl_now() - t0 - tcomm;
    return TLINK_OK;
}
