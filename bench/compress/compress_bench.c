/* compress_bench.c — one all-reduce of a large f32 gradient (default 100 MB), uncompressed
 * (tlink_allreduce) against tlink_compressed_allreduce with each method, timed end to end on
 * every rank (compression, decompression and error-feedback bookkeeping included; the
 * one-time tlink_compress_create is not), the time of a call being the slowest rank's.
 * The f32 peer runs twice: the cost model's choice and the ring forced; the speed-up is
 * against the faster. ITERS rounds, every variant once per round (interleaved).
 * Run under a launcher: tile launch -n N [--netns --hosts ...] -- compress_bench [MB] [ITERS] [METHODS]
 * METHODS: comma-separated list (default sign1,int4,int8,fp8). Prints a Markdown table on
 * rank 0: method, best and median time, wire bytes per rank, speed-up against f32, and the
 * error of the result against the f32 all-reduce's. */
#define _GNU_SOURCE
#include <tlink.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}
static int cmpd(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* one timed collective: every rank's elapsed time, the maximum over the ranks */
typedef tlink_status (*op_fn)(void *arg);
static double timed(tlink_comm *c, op_fn fn, void *arg) {
    tlink_barrier(c);
    double t0 = now_s();
    tlink_status st = fn(arg);
    double dt = now_s() - t0;
    if (st) {
        fprintf(stderr, "rank %d: %s\n", tlink_comm_rank(c), tlink_last_error(c));
        exit(1);
    }
    tlink_allreduce(c, &dt, &dt, 1, TLINK_F64, TLINK_MAX);
    return dt;
}

typedef struct { tlink_comm *c; tlink_compress *cs; float *in, *out; size_t n; } job;
static tlink_status run_f32(void *a) { job *j = a; return tlink_allreduce(j->c, j->in, j->out, j->n, TLINK_F32, TLINK_AVG); }
static tlink_status run_cmp(void *a) { job *j = a; return tlink_compressed_allreduce(j->cs, j->in, j->out, j->n, TLINK_AVG); }

int main(int argc, char **argv) {
    double mb = argc > 1 ? atof(argv[1]) : 100.0;
    int iters = argc > 2 ? atoi(argv[2]) : 3;
    const char *methods = argc > 3 ? argv[3] : "sign1,int4,int8,fp8";
    if (!(mb > 0) || iters < 1) {
        fprintf(stderr, "usage: compress_bench [MB > 0] [ITERS >= 1] [METHODS]\n");
        return 2;
    }
    tlink_comm *c;
    if (tlink_comm_init_env(&c) != TLINK_OK) {
        fprintf(stderr, "compress_bench: %s\n", tlink_last_error(NULL));
        return 1;
    }
    int rank = tlink_comm_rank(c), size = tlink_comm_size(c);
    size_t n = (size_t)(mb * 1e6 / 4);
    float *g = malloc(n * 4), *ref = malloc(n * 4), *out = malloc(n * 4);
    if (!g || !ref || !out) { fprintf(stderr, "out of memory\n"); return 1; }
    uint64_t s = 0x1234567ull + (uint64_t)rank * 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < n; i++) { /* gradient-like: mostly small, some large */
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        float u = (float)(s >> 40) / 16777216.0f - 0.5f;
        g[i] = u * ((i & 63) == 0 ? 1.0f : 0.01f);
    }
    /* variants: f32 with the cost model's algorithm, f32 with the ring forced (bandwidth
     * optimal: 2 (N-1)/N of the buffer per rank), then each method; ITERS rounds, each round
     * runs every variant once (interleaved, so a change in the machine's load hits all
     * alike); per variant the best and the median; speed-ups against the faster f32 */
    enum { MAXV = 16 };
    int nv = 2, meth[MAXV];
    tlink_compress *cs[MAXV] = {0};
    char list[256];
    snprintf(list, sizeof list, "%s", methods);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        int m = tlink_compress_from_name(tok);
        if (m < 0 || nv == MAXV) { fprintf(stderr, "compress_bench: unknown method '%s' (or too many)\n", tok); return 2; }
        meth[nv] = m;
        if (tlink_compress_create(c, (tlink_compress_method)m, n, 0, 1, &cs[nv]) != TLINK_OK) {
            fprintf(stderr, "compress_bench: %s\n", tlink_last_error(c));
            return 1;
        }
        nv++;
    }
    double *t = calloc((size_t)nv * (size_t)iters, sizeof(double)), err[MAXV] = {0};
    char algo[2][32] = {"", ""};
    tlink_compress_stats st[MAXV];
    job j = {c, NULL, g, ref, n};
    for (int k = 0; k < iters; k++) {
        for (int v = 0; v < nv; v++) {
            if (v < 2) {
                tlink_comm_set_algo(c, TLINK_COLL_ALLREDUCE, v ? TLINK_ALGO_RING : TLINK_ALGO_AUTO);
                j.cs = NULL;
                j.out = ref;
                t[v * iters + k] = timed(c, run_f32, &j);
                snprintf(algo[v], sizeof algo[v], "%s", tlink_last_algo(c));
                tlink_comm_set_algo(c, TLINK_COLL_ALLREDUCE, TLINK_ALGO_AUTO);
            } else {
                j.cs = cs[v];
                j.out = out;
                t[v * iters + k] = timed(c, run_cmp, &j);
                tlink_compress_get_stats(cs[v], &st[v]);
                if (k == 0) { /* the first call has no residual yet: compare with the f32 result */
                    for (size_t i = 0; i < n; i++) err[v] = fmax(err[v], fabs((double)out[i] - ref[i]));
                    tlink_allreduce(c, &err[v], &err[v], 1, TLINK_F64, TLINK_MAX);
                }
            }
        }
    }
    for (int v = 0; v < nv; v++) qsort(t + v * iters, (size_t)iters, sizeof(double), cmpd);
    double f32best = fmin(t[0], t[iters]);
    double mx = 0;
    for (size_t i = 0; i < n; i++) mx = fmax(mx, fabs((double)ref[i]));
    if (rank == 0) {
        printf("| method | best s | median s | MB sent per rank | Gbit/s sent per rank (best) | speed-up vs best f32 | codec s (rank 0, last call) | exchange s (rank 0, last call) | max error vs f32 result |\n");
        printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (int v = 0; v < nv; v++) {
            double *tv = t + v * iters;
            if (v < 2) {
                size_t per = (n + (size_t)size - 1) / (size_t)size;
                double sent = !strcmp(algo[v], "ring") ? 2.0 * (size - 1) * per * 4 / 1e6 : -1;
                if (!strcmp(algo[v], "recursive_doubling") && (size & (size - 1)) == 0) {
                    int lg = 0;
                    while ((1 << lg) < size) lg++;
                    sent = (double)lg * n * 4 / 1e6;
                }
                if (sent >= 0)
                    printf("| f32 (tlink_allreduce, %s%s) | %.4f | %.4f | %.2f | %.3f | %.2f | - | - | 0 |\n",
                           v ? "forced " : "auto: ", algo[v], tv[0], tv[iters / 2], sent, sent * 8e-3 / tv[0], f32best / tv[0]);
                else
                    printf("| f32 (tlink_allreduce, %s%s) | %.4f | %.4f | - | - | %.2f | - | - | 0 |\n", v ? "forced " : "auto: ",
                           algo[v], tv[0], tv[iters / 2], f32best / tv[0]);
            } else {
                printf("| %s (compressed, error feedback) | %.4f | %.4f | %.2f | %.3f | %.1f | %.4f | %.4f | %.3g |\n",
                       tlink_compress_name((tlink_compress_method)meth[v]), tv[0], tv[iters / 2],
                       st[v].last_wire_bytes / 1e6, st[v].last_wire_bytes * 8e-9 / tv[0], f32best / tv[0],
                       st[v].last_codec_s, st[v].last_comm_s, err[v]);
            }
        }
        printf("<!-- %d rounds; largest |mean| element: %.3g -->\n", iters, mx);
    }
    for (int v = 2; v < nv; v++) tlink_compress_destroy(cs[v]);
    free(t);
    free(g);
    free(ref);
    free(out);
    tlink_comm_destroy(c);
    return 0;
}
