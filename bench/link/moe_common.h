/* moe_common.h — what the MoE dispatch/combine benchmarks share (moe_bench.c for TileLink,
 * moe_mpi.c for Open MPI; moe_gloo.py reimplements the same generator): the options, the
 * routing (every rank draws top-k distinct experts per token, uniformly, from a xorshift seeded
 * by the seed and its rank, and weights that sum to 1), the token data and a checksum. */
#ifndef MOE_COMMON_H
#define MOE_COMMON_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct moe_opts {
    long tokens, hidden, experts, topk, warm, iters, seed;
    int fp8;            /* tokens in fp8 e4m3 with f32 scales (else bf16); the combine is bf16 */
    const char *algo;   /* TileLink: auto, flat, hier */
} moe_opts;

static int moe_parse(int argc, char **argv, moe_opts *o) {
    *o = (moe_opts){4096, 7168, 256, 8, 1, 3, 1, 0, "auto"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) { fprintf(stderr, "moe: %s needs a value\n", a); return -1; }
        if (!strcmp(a, "-t")) o->tokens = atol(v);
        else if (!strcmp(a, "-H")) o->hidden = atol(v);
        else if (!strcmp(a, "-E")) o->experts = atol(v);
        else if (!strcmp(a, "-k")) o->topk = atol(v);
        else if (!strcmp(a, "-w")) o->warm = atol(v);
        else if (!strcmp(a, "-i")) o->iters = atol(v);
        else if (!strcmp(a, "-s")) o->seed = atol(v);
        else if (!strcmp(a, "-d")) o->fp8 = !strcmp(v, "fp8");
        else if (!strcmp(a, "-a")) o->algo = v;
        else { fprintf(stderr, "moe: unknown option %s\n", a); return -1; }
        i++;
    }
    if (o->tokens < 0 || o->hidden < 1 || o->experts < 1 || o->topk < 1 || o->topk > o->experts || o->iters < 1) {
        fprintf(stderr, "moe: bad sizes\n");
        return -1;
    }
    return 0;
}

static inline uint64_t moe_rng(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* ids/w [tokens][topk]; x: row bytes each (bf16 values in [-1, 1), or fp8 codes); scales */
static void moe_make(const moe_opts *o, int rank, int32_t *ids, float *w, unsigned char *x, float *scales) {
    uint64_t s = (uint64_t)o->seed * 0x9e3779b97f4a7c15ULL + (uint64_t)rank * 0xbf58476d1ce4e5b9ULL + 1;
    for (long t = 0; t < o->tokens; t++) {
        float sum = 0;
        for (long j = 0; j < o->topk; j++) {
            int32_t e;
            int again;
            do {
                e = (int32_t)(moe_rng(&s) % (uint64_t)o->experts);
                again = 0;
                for (long i = 0; i < j; i++) again |= ids[t * o->topk + i] == e;
            } while (again);
            ids[t * o->topk + j] = e;
            w[t * o->topk + j] = (float)(moe_rng(&s) % 1000 + 1);
            sum += w[t * o->topk + j];
        }
        for (long j = 0; j < o->topk; j++) w[t * o->topk + j] /= sum;
        if (scales) scales[t] = (float)(moe_rng(&s) % 64 + 1) / 64.0f;
    }
    /* the rows: a hash of (rank, token, element), which moe_gloo.py computes alike with numpy */
    for (long t = 0; t < o->tokens; t++) {
        for (long i = 0; i < o->hidden; i++) {
            uint32_t h = (uint32_t)t * 2654435761u ^ (uint32_t)i * 40503u ^ (uint32_t)rank * 9176u;
            h ^= h >> 15;
            if (o->fp8) x[t * o->hidden + i] = (unsigned char)(h & 0xb7);                   /* finite, small */
            else ((uint16_t *)x)[t * o->hidden + i] = (uint16_t)(0x3c00 | (h & 0x80ff));    /* |v| in [2^-7, 2^-6) */
        }
    }
}

/* the sum of y over this rank's tokens (f64): the libraries' results compared */
static double moe_checksum(const uint16_t *y, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t u = (uint32_t)y[i] << 16;
        float f;
        memcpy(&f, &u, 4);
        s += f;
    }
    return s;
}

/* token bytes this rank sends to other ranks in a dispatch: (token, distinct remote rank) pairs */
static double moe_remote_pairs(const moe_opts *o, const int32_t *ids, int rank, int W) {
    long L = o->experts / W;
    double pairs = 0;
    for (long t = 0; t < o->tokens; t++) {
        for (long j = 0; j < o->topk; j++) {
            int q = (int)(ids[t * o->topk + j] / L), dup = 0;
            for (long i = 0; i < j; i++) dup |= ids[t * o->topk + i] / L == q;
            if (!dup && q != rank) pairs++;
        }
    }
    return pairs;
}

static double moe_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
#endif
