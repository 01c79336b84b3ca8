/* moe_mpi.c — the same dispatch + combine as tlink_moe_dispatch/combine (flat), with Open MPI's
 * MPI_Alltoall and MPI_Alltoallv (bench/link/moe.sh compares the two in one run). Build:
 * mpicc -O3 -o moe_mpi moe_mpi.c. Options and output: moe_bench.c.
 *
 * What it does per iteration, as a user of MPI would: per destination rank the token indices
 * (each token once per rank) and rows per local expert; MPI_Alltoall of the counts;
 * MPI_Alltoallv of the per-token metadata (index, scale, per slot the local expert and weight);
 * the rows packed per destination into a send buffer, MPI_Alltoallv, and unpacked into the
 * expert-grouped layout (rows by (source rank, token) per expert; a token's further rows
 * copied from its first). Combine: per received token the weighted sum of its rows' outputs
 * (f32, rounded to bf16), MPI_Alltoallv back, the source's sum over ranks in rank order. Its
 * buffers are allocated once at the largest size seen and reused (so page faults stay out of
 * the timing, as TileLink keeps its buffers). */
#include "moe_common.h"

#include <mpi.h>

static inline float bf2f(uint16_t h) { uint32_t u = (uint32_t)h << 16; float f; memcpy(&f, &u, 4); return f; }
static inline uint16_t f2bf(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffff) > 0x7f800000) return (uint16_t)((x >> 16) | 0x40);
    return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}
static float fp8_to_f32(uint8_t v) {
    int s = v >> 7, e = (v >> 3) & 15, m = v & 7;
    float r;
    if (e == 0) r = (float)m / 8.0f / 64.0f;
    else if (e == 15 && m == 7) r = __builtin_nanf("");
    else r = (1.0f + (float)m / 8.0f) * (float)(1 << e) / 128.0f;
    return s ? -r : r;
}

/* a grow-only buffer */
typedef struct buf { void *p; size_t n; } buf;
static void *need(buf *b, size_t n) {
    if (n > b->n) {
        free(b->p);
        b->p = malloc(n ? n : 1);
        memset(b->p, 0, n ? n : 1); /* touched now, not in the timed part */
        b->n = n;
    }
    return b->p;
}

typedef struct meta { int32_t token; float scale; } meta;

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, W;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &W);
    moe_opts o;
    if (moe_parse(argc, argv, &o) || o.experts % W) { MPI_Finalize(); return 2; }
    const int k = (int)o.topk, L = (int)(o.experts / W);
    const size_t T = (size_t)o.tokens, Hd = (size_t)o.hidden, rb = Hd * (o.fp8 ? 1 : 2), ob = Hd * 2;
    const size_t msz = sizeof(meta) + (size_t)k * (sizeof(int16_t) + sizeof(float));
    int32_t *ids = malloc(T * k * sizeof *ids);
    float *w = malloc(T * k * sizeof *w), *scales = o.fp8 ? malloc(T * sizeof(float)) : NULL;
    unsigned char *x = malloc(T * rb + 1);
    uint16_t *y = malloc(T * ob + 2);
    moe_make(&o, rank, ids, w, x, scales);
    double pairs = moe_remote_pairs(&o, ids, rank, W), tot = 0;
    MPI_Allreduce(&pairs, &tot, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    int *scnt = calloc(W, sizeof(int)), *rcnt = calloc(W, sizeof(int)), *sdis = calloc(W, sizeof(int)),
        *rdis = calloc(W, sizeof(int)), *sc2 = calloc(W, sizeof(int)), *rc2 = calloc(W, sizeof(int)),
        *sd2 = calloc(W, sizeof(int)), *rd2 = calloc(W, sizeof(int));
    long long *ecs = calloc((size_t)W * (L + 1), sizeof(long long)), *ecr = calloc((size_t)W * (L + 1), sizeof(long long));
    buf bsmeta = {0}, brmeta = {0}, bsx = {0}, brx = {0}, brows = {0}, bpart = {0}, bback = {0}, bstok = {0}, bpos = {0},
        bfirst = {0}, beo = {0}, bnr = {0}, brw = {0}, bur = {0}, brsc = {0};
    int n = (int)(o.warm + o.iters);
    double *td = calloc(n, sizeof(double)), *tc = calloc(n, sizeof(double));
    size_t nrows_last = 0;
    for (int it = 0; it < n; it++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = moe_now();
        /* ---- dispatch ---- */
        memset(ecs, 0, sizeof(long long) * W * (L + 1));
        for (size_t t = 0; t < T; t++) {
            for (int j = 0; j < k; j++) {
                int q = ids[t * k + j] / L, dup = 0;
                for (int i = 0; i < j; i++) dup |= ids[t * k + i] / L == q;
                if (!dup) ecs[(size_t)q * (L + 1)]++;
                ecs[(size_t)q * (L + 1) + 1 + ids[t * k + j] % L]++;
            }
        }
        MPI_Alltoall(ecs, L + 1, MPI_LONG_LONG, ecr, L + 1, MPI_LONG_LONG, MPI_COMM_WORLD);
        size_t ns = 0, nr = 0;
        for (int q = 0; q < W; q++) {
            sdis[q] = (int)ns;
            rdis[q] = (int)nr;
            ns += (size_t)ecs[(size_t)q * (L + 1)];
            nr += (size_t)ecr[(size_t)q * (L + 1)];
        }
        int32_t *stok = need(&bstok, ns * sizeof(int32_t));
        char *smeta = need(&bsmeta, ns * msz), *rmeta = need(&brmeta, nr * msz);
        char *sx = need(&bsx, ns * rb), *rx = need(&brx, nr * rb);
        {
            int *cur = calloc(W, sizeof(int));
            for (size_t t = 0; t < T; t++) {
                for (int j = 0; j < k; j++) {
                    int q = ids[t * k + j] / L, dup = 0;
                    for (int i = 0; i < j; i++) dup |= ids[t * k + i] / L == q;
                    if (dup) continue;
                    size_t at = (size_t)sdis[q] + (size_t)cur[q]++;
                    stok[at] = (int32_t)t;
                    char *r = smeta + at * msz;
                    ((meta *)r)->token = (int32_t)t;
                    ((meta *)r)->scale = scales ? scales[t] : 0;
                    int16_t *e = (int16_t *)(r + sizeof(meta));
                    float *ww = (float *)(r + sizeof(meta) + (size_t)k * 2);
                    for (int jj = 0; jj < k; jj++) {
                        int on = ids[t * k + jj] / L == q;
                        e[jj] = on ? (int16_t)(ids[t * k + jj] % L) : -1;
                        ww[jj] = on ? w[t * k + jj] : 0;
                    }
                    memcpy(sx + at * rb, x + t * rb, rb); /* pack */
                }
            }
            free(cur);
        }
        for (int q = 0; q < W; q++) {
            sc2[q] = (int)(ecs[(size_t)q * (L + 1)] * (long long)msz);
            rc2[q] = (int)(ecr[(size_t)q * (L + 1)] * (long long)msz);
            sd2[q] = (int)((size_t)sdis[q] * msz);
            rd2[q] = (int)((size_t)rdis[q] * msz);
        }
        MPI_Alltoallv(smeta, sc2, sd2, MPI_BYTE, rmeta, rc2, rd2, MPI_BYTE, MPI_COMM_WORLD);
        /* the data as MPI_BYTE runs of rb: counts in rows (contiguous datatype) */
        MPI_Datatype row;
        MPI_Type_contiguous((int)rb, MPI_BYTE, &row);
        MPI_Type_commit(&row);
        for (int q = 0; q < W; q++) {
            scnt[q] = (int)ecs[(size_t)q * (L + 1)];
            rcnt[q] = (int)ecr[(size_t)q * (L + 1)];
        }
        MPI_Alltoallv(sx, scnt, sdis, row, rx, rcnt, rdis, row, MPI_COMM_WORLD);
        MPI_Type_free(&row);
        /* unpack: rows per expert by (source, token); a token's first row from the receive
         * buffer, the others copied from it */
        size_t nrows = 0;
        size_t *pos = need(&bpos, (size_t)L * W * sizeof(size_t));
        for (int e = 0; e < L; e++)
            for (int q = 0; q < W; q++) { pos[(size_t)e * W + q] = nrows; nrows += (size_t)ecr[(size_t)q * (L + 1) + 1 + e]; }
        char *rows = need(&brows, nrows * rb);
        float *rw = need(&brw, nrows * sizeof(float)), *rsc = o.fp8 ? need(&brsc, nrows * sizeof(float)) : NULL;
        size_t *first = need(&bfirst, (nr + 1) * sizeof(size_t)), *nrow = need(&bnr, (nr + 1) * sizeof(size_t));
        size_t *urow = need(&bur, nrows * sizeof(size_t));
        size_t ui = 0, uo = 0;
        for (int q = 0; q < W; q++) {
            for (int i = 0; i < rcnt[q]; i++, ui++) {
                const char *r = rmeta + ui * msz;
                const int16_t *e = (const int16_t *)(r + sizeof(meta));
                const float *ww = (const float *)(r + sizeof(meta) + (size_t)k * 2);
                first[ui] = uo;
                nrow[ui] = 0;
                for (int j = 0; j < k; j++) {
                    if (e[j] < 0) continue;
                    size_t rr = pos[(size_t)e[j] * W + q]++;
                    rw[rr] = ww[j];
                    if (rsc) rsc[rr] = ((const meta *)r)->scale;
                    urow[uo++] = rr;
                    nrow[ui]++;
                    memcpy(rows + rr * rb, rx + ui * rb, rb);
                }
            }
        }
        td[it] = moe_now() - t0;
        nrows_last = nrows;
        /* the experts' outputs (untimed): the rows as bf16 */
        uint16_t *eo = (uint16_t *)rows;
        if (o.fp8) {
            eo = need(&beo, nrows * ob);
            for (size_t i = 0; i < nrows * Hd; i++) eo[i] = f2bf(fp8_to_f32(((uint8_t *)rows)[i]) * rsc[i / Hd]);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = moe_now();
        /* ---- combine ---- */
        uint16_t *part = need(&bpart, nr * ob), *back = need(&bback, ns * ob);
        float *acc = malloc(Hd * sizeof(float));
        for (size_t u = 0; u < nr; u++) {
            for (size_t i = 0; i < Hd; i++) acc[i] = 0;
            for (size_t r = first[u]; r < first[u] + nrow[u]; r++) {
                size_t rr = urow[r];
                const float ww = rw[rr];
                const uint16_t *ov = eo + rr * Hd;
                for (size_t i = 0; i < Hd; i++) acc[i] += ww * bf2f(ov[i]);
            }
            for (size_t i = 0; i < Hd; i++) part[u * Hd + i] = f2bf(acc[i]);
        }
        MPI_Datatype orow;
        MPI_Type_contiguous((int)ob, MPI_BYTE, &orow);
        MPI_Type_commit(&orow);
        MPI_Alltoallv(part, rcnt, rdis, orow, back, scnt, sdis, orow, MPI_COMM_WORLD);
        MPI_Type_free(&orow);
        int *cur = calloc(W, sizeof(int));
        for (size_t t = 0; t < T; t++) {
            for (size_t i = 0; i < Hd; i++) acc[i] = 0;
            for (int q = 0; q < W; q++) {
                size_t at = (size_t)sdis[q] + (size_t)cur[q];
                if (cur[q] < scnt[q] && stok[at] == (int32_t)t) {
                    const uint16_t *b = back + at * Hd;
                    for (size_t i = 0; i < Hd; i++) acc[i] += bf2f(b[i]);
                    cur[q]++;
                }
            }
            for (size_t i = 0; i < Hd; i++) y[t * Hd + i] = f2bf(acc[i]);
        }
        free(cur);
        free(acc);
        tc[it] = moe_now() - t0;
    }
    MPI_Allreduce(MPI_IN_PLACE, td, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, tc, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    double md = 0, mc = 0, rows = (double)nrows_last, allrows = 0;
    for (int it = (int)o.warm; it < n; it++) { md += td[it]; mc += tc[it]; }
    md /= (double)o.iters;
    mc /= (double)o.iters;
    MPI_Allreduce(&rows, &allrows, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double cks = moe_checksum(y, T * Hd), allcks = 0;
    MPI_Allreduce(&cks, &allcks, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (!rank)
        printf("RESULT lib=mpi ranks=%d hosts=- tokens=%ld hidden=%ld experts=%ld topk=%ld dtype=%s algo=alltoallv "
               "dispatch_ms=%.3f combine_ms=%.3f disp_bytes=%.0f comb_bytes=%.0f rows=%.0f checksum=%.9g\n",
               W, o.tokens, o.hidden, o.experts, o.topk, o.fp8 ? "fp8" : "bf16", md * 1e3, mc * 1e3, tot * (double)rb,
               tot * (double)ob, allrows, allcks);
    MPI_Finalize();
    return 0;
}
