/* moe_bench.c — TileLink's expert-parallel dispatch + combine, timed (bench/link/moe.sh).
 * Run under a launcher (tile launch, mpirun, torchrun). Options: moe_common.h (-t tokens per
 * rank, -H hidden, -E experts, -k top-k, -d bf16|fp8, -a auto|flat|hier, -w warm-up, -i timed
 * iterations, -s seed). Each iteration: barrier, dispatch (timed), the experts' outputs (the
 * received rows as bf16: untimed), barrier, combine (timed); per iteration the slowest rank's
 * time, then the mean over iterations. Prints one RESULT line (rank 0): times in ms and the
 * token bytes sent between ranks (all ranks; a token to its own rank is not counted). */
#include "moe_common.h"

#include <tlink.h>

int main(int argc, char **argv) {
    moe_opts o;
    if (moe_parse(argc, argv, &o)) return 2;
    tlink_comm *c;
    if (tlink_comm_init_env(&c)) {
        fprintf(stderr, "moe_bench: %s\n", tlink_last_error(NULL));
        return 1;
    }
    const int rank = tlink_comm_rank(c), W = tlink_comm_size(c);
    if (o.experts % W) { if (!rank) fprintf(stderr, "moe_bench: %ld experts on %d ranks\n", o.experts, W); return 2; }
    const size_t T = (size_t)o.tokens, Hd = (size_t)o.hidden, rb = Hd * (o.fp8 ? 1 : 2);
    int32_t *ids = malloc(T * (size_t)o.topk * sizeof *ids);
    float *w = malloc(T * (size_t)o.topk * sizeof *w), *scales = o.fp8 ? malloc(T * sizeof(float)) : NULL;
    unsigned char *x = malloc(T * rb + 1);
    uint16_t *y = malloc(T * Hd * 2 + 2);
    if (!ids || !w || !x || !y || (o.fp8 && !scales)) { fprintf(stderr, "moe_bench: out of memory\n"); return 1; }
    moe_make(&o, rank, ids, w, x, scales);
    double pairs = moe_remote_pairs(&o, ids, rank, W), tot = 0;
    tlink_allreduce(c, &pairs, &tot, 1, TLINK_F64, TLINK_SUM);
    tlink_moe_config cfg = {.num_experts = (int)o.experts, .top_k = (int)o.topk, .hidden = Hd,
                            .dtype = o.fp8 ? TLINK_FP8_E4M3 : TLINK_BF16,
                            .algo = !strcmp(o.algo, "flat") ? 1 : !strcmp(o.algo, "hier") ? 2 : 0};
    int n = (int)(o.warm + o.iters);
    double *td = calloc((size_t)n, sizeof *td), *tc = calloc((size_t)n, sizeof *tc);
    char used[32] = "";
    size_t nrows = 0;
    uint16_t *eo = NULL;
    size_t eo_cap = 0;
    for (int it = 0; it < n; it++) {
        tlink_moe *m = NULL;
        tlink_barrier(c);
        double t0 = moe_now();
        tlink_status st = tlink_moe_dispatch(c, &cfg, T, x, scales, ids, w, &m);
        td[it] = moe_now() - t0;
        if (st) { fprintf(stderr, "rank %d: dispatch: %s\n", rank, tlink_last_error(c)); return 1; }
        snprintf(used, sizeof used, "%s", tlink_moe_algo(m));
        tlink_moe_recv r;
        tlink_moe_get_recv(m, &r);
        nrows = r.nrows;
        const void *out = r.x;
        if (o.fp8) { /* the experts' bf16 outputs: the rows decoded */
            if (eo_cap < r.nrows * Hd) { free(eo); eo_cap = r.nrows * Hd; eo = malloc(eo_cap * 2 + 2); }
            for (size_t i = 0; i < r.nrows * Hd; i++)
                eo[i] = tlink_f32_to_bf16(tlink_fp8_e4m3_to_f32(((unsigned char *)r.x)[i]) * r.scales[i / Hd]);
            out = eo;
        }
        tlink_barrier(c);
        t0 = moe_now();
        st = tlink_moe_combine(m, out, TLINK_BF16, y);
        tc[it] = moe_now() - t0;
        if (st) { fprintf(stderr, "rank %d: combine: %s\n", rank, tlink_last_error(c)); return 1; }
        tlink_moe_free(m);
    }
    tlink_allreduce(c, td, td, (size_t)n, TLINK_F64, TLINK_MAX);
    tlink_allreduce(c, tc, tc, (size_t)n, TLINK_F64, TLINK_MAX);
    double md = 0, mc = 0;
    for (int it = (int)o.warm; it < n; it++) { md += td[it]; mc += tc[it]; }
    md /= (double)o.iters;
    mc /= (double)o.iters;
    double rows = (double)nrows, allrows = 0;
    tlink_allreduce(c, &rows, &allrows, 1, TLINK_F64, TLINK_SUM);
    double cks = moe_checksum(y, T * Hd), allcks = 0;
    tlink_allreduce(c, &cks, &allcks, 1, TLINK_F64, TLINK_SUM);
    if (!rank)
        printf("RESULT lib=tilelink ranks=%d hosts=%d tokens=%ld hidden=%ld experts=%ld topk=%ld dtype=%s algo=%s "
               "dispatch_ms=%.3f combine_ms=%.3f disp_bytes=%.0f comb_bytes=%.0f rows=%.0f checksum=%.9g\n",
               W, tlink_comm_host_count(c), o.tokens, o.hidden, o.experts, o.topk, o.fp8 ? "fp8" : "bf16", used,
               md * 1e3, mc * 1e3, tot * (double)rb, tot * (double)Hd * 2, allrows, allcks);
    free(ids); free(w); free(scales); free(x); free(y); free(td); free(tc); free(eo);
    tlink_comm_destroy(c);
    return 0;
}
