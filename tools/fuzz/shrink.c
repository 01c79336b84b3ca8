/* shrink.c — delta debugging on a generated program's structure.
 *
 * Greedy passes over candidate simplifications, each kept when the finding persists (same
 * verdict on the same target): drop an op; shrink a size (to 1, to half, minus one); replace
 * an expression node by one of its operands or by a constant; turn dtypes into float32;
 * turn variants off (transposes, pipelining, guards, clears). Repeats until a whole pass
 * changes nothing or the test/time budget is spent. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fz_util.h"
#include "progfuzz_int.h"

/* recompute the input tensors' shapes from the op's sizes after a size changed */
static void fix_shapes(pf_op *op) {
    for (int k = 0; k < op->nin; k++) {
        pf_input *in = &op->in[k];
        if (in->gdt == TILE_DT_INVALID) continue;
        switch (op->kind) {
        case PF_OP_MAP: case PF_OP_TELEM: case PF_OP_TMAP:
            if (in->mode == 1) in->shape[0] = op->dims[op->rank - 1];
            else if (in->mode == 2) in->shape[0] = op->dims[0];
            else for (int d = 0; d < op->rank; d++) in->shape[d] = op->dims[d];
            break;
        case PF_OP_ROWRED: case PF_OP_GENSUM:
            if (in->mode == 1) in->shape[0] = op->K;
            else { in->shape[0] = op->dims[0]; in->shape[1] = op->K; }
            break;
        case PF_OP_MATMUL: case PF_OP_TGEMM: case PF_OP_KGEMM: {
            if (op->kind == PF_OP_KGEMM && k == 3) { in->shape[0] = op->dims[1]; break; }
            int n = 0;
            if (op->kind == PF_OP_MATMUL && op->batch) in->shape[n++] = op->batch;
            bool tr = k == 0 ? op->transA : op->transB;
            int outer = k == 0 ? op->dims[0] : op->dims[1];
            if (k == 0) { in->shape[n] = tr ? op->K : outer; in->shape[n + 1] = tr ? outer : op->K; }
            else { in->shape[n] = tr ? outer : op->K; in->shape[n + 1] = tr ? op->K : outer; }
            break;
        }
        case PF_OP_TRED: in->shape[0] = op->dims[0]; in->shape[1] = op->dims[1]; break;
        default: break;
        }
    }
}

/* the integer size fields of an op that may shrink (pointers into the op), up to 12 */
static int size_fields(pf_op *op, int **f) {
    int n = 0;
    int nd = op->kind == PF_OP_MATMUL || op->kind == PF_OP_TGEMM || op->kind == PF_OP_KGEMM || op->kind == PF_OP_TRED || op->kind == PF_OP_ROWRED || op->kind == PF_OP_GENSUM
                 ? (op->kind == PF_OP_ROWRED || op->kind == PF_OP_GENSUM ? 1 : 2)
                 : op->rank;
    for (int d = 0; d < nd; d++) f[n++] = &op->dims[d];
    if (op->K > 0) f[n++] = &op->K;
    if (op->batch > 0) f[n++] = &op->batch;
    /* a GEMM kernel's tiles stay as generated (they satisfy the tensor-core rules) */
    for (int d = 0; d < 3 && op->kind != PF_OP_KGEMM; d++)
        if (op->blk[d] > 0) f[n++] = &op->blk[d];
    if (op->kind == PF_OP_GATHER)
        for (int d = 0; d < op->rank; d++) f[n++] = &op->in[0].shape[d];
    return n;
}

static int category(const pf_node *n) { return n->dt == TILE_DT_BOOL && !n->flt ? 2 : n->flt ? 0 : 1; }

typedef struct sctx {
    const pf_config *cfg;
    pf_verdict want_v;
    int want_t;
    int tests, max_tests;
    double t_end;
    pf_prog *best;
    long best_size;
} sctx;

static bool budget_left(sctx *s) { return s->tests < s->max_tests && tile_now() < s->t_end; }

/* keep cand if it is smaller and still shows the finding */
static bool try_cand(sctx *s, pf_prog *cand) {
    long sz = pf_prog_size(cand);
    if (sz >= s->best_size || !budget_left(s)) return false;
    for (int o = 0; o < cand->nops; o++)
        if (!pf_kgemm_legal(&cand->ops[o])) return false;
    s->tests++;
    pf_result r = pf_check(cand, s->cfg);
    if (r.verdict == s->want_v && r.target == s->want_t) {
        memcpy(s->best, cand, sizeof *cand);
        s->best_size = sz;
        if (s->cfg->verbose) fprintf(stderr, "fuzz: shrink: size %ld (%d tests)\n", sz, s->tests);
        return true;
    }
    return false;
}

static bool pass_drop_ops(sctx *s, pf_prog *c) {
    bool any = false;
    for (int i = 0; i < s->best->nops && s->best->nops > 1 && budget_left(s); i++) {
        memcpy(c, s->best, sizeof *c);
        memmove(&c->ops[i], &c->ops[i + 1], sizeof(pf_op) * (size_t)(c->nops - i - 1));
        c->nops--;
        if (try_cand(s, c)) { any = true; i--; }
    }
    return any;
}

static bool pass_sizes(sctx *s, pf_prog *c) {
    bool any = false;
    for (int o = 0; o < s->best->nops; o++) {
        for (int fi = 0; fi < 12 && budget_left(s); fi++) {
            memcpy(c, s->best, sizeof *c);
            int *f[16];
            int nf = size_fields(&c->ops[o], f);
            if (fi >= nf) break;
            int v = *f[fi];
            int tries[3] = {1, v / 2, v - 1};
            for (int t = 0; t < 3; t++) {
                if (tries[t] < 1 || tries[t] >= v) continue;
                memcpy(c, s->best, sizeof *c);
                nf = size_fields(&c->ops[o], f);
                *f[fi] = tries[t];
                fix_shapes(&c->ops[o]);
                if (try_cand(s, c)) { any = true; break; }
            }
        }
    }
    return any;
}

static bool pass_exprs(sctx *s, pf_prog *c) {
    bool any = false;
    for (int o = 0; o < s->best->nops; o++) {
        for (int e = 0; e < s->best->ops[o].nnodes && budget_left(s); e++) {
            const pf_node *n = &s->best->ops[o].nodes[e];
            int kids[3] = {n->a, n->b, n->c};
            for (int q = 0; q < 3; q++) {
                if (kids[q] < 0) continue;
                const pf_node *ch = &s->best->ops[o].nodes[kids[q]];
                if (category(ch) != category(n) || (n->exact && !ch->exact)) continue;
                memcpy(c, s->best, sizeof *c);
                c->ops[o].nodes[e] = c->ops[o].nodes[kids[q]];
                if (try_cand(s, c)) { any = true; break; }
            }
            n = &s->best->ops[o].nodes[e];
            if (n->kind != PF_N_CONST && n->kind != PF_N_LOAD && n->kind != PF_N_IDX && category(n) != 2 && budget_left(s)) {
                memcpy(c, s->best, sizeof *c);
                pf_node *m = &c->ops[o].nodes[e];
                bool flt = m->flt;
                memset(m, 0, sizeof *m);
                m->kind = PF_N_CONST;
                m->a = m->b = m->c = -1;
                m->flt = flt;
                m->exact = 1;
                m->cv = 1;
                m->mag = 1;
                m->dt = flt ? TILE_DT_F32 : TILE_DT_I32;
                m->weak = !flt;
                try_cand(s, c) && (any = true);
            }
        }
    }
    return any;
}

static bool pass_types(sctx *s, pf_prog *c) {
    bool any = false;
    for (int o = 0; o < s->best->nops; o++) {
        /* one field at a time: 0..3 inputs, 4 out, 5 acc, 6 buf, 7+ casts */
        for (int f = 0; f < 7 + PF_MAX_NODES && budget_left(s); f++) {
            memcpy(c, s->best, sizeof *c);
            pf_op *op = &c->ops[o];
            tile_dtype *p = NULL, *p2 = NULL;
            if (f < PF_MAX_IN) {
                if (f >= op->nin || op->in[f].gdt == TILE_DT_INVALID) continue;
                p = &op->in[f].gdt;
                p2 = &op->in[f].ldt;
            } else if (f == 4) p = &op->out_dt;
            else if (f == 5) p = &op->acc_dt;
            else if (f == 6) p = &op->buf_dt;
            else {
                int e = f - 7;
                if (e >= op->nnodes || op->nodes[e].kind != PF_N_CAST || !op->nodes[e].flt) continue;
                p = &op->nodes[e].cast_to;
            }
            if (!tile_dtype_is_float(*p) || *p == TILE_DT_F32) continue;
            *p = TILE_DT_F32;
            if (p2 && tile_dtype_is_float(*p2)) *p2 = TILE_DT_F32;
            if (try_cand(s, c)) any = true;
        }
    }
    return any;
}

static bool pass_flags(sctx *s, pf_prog *c) {
    bool any = false;
    for (int o = 0; o < s->best->nops; o++) {
        for (int f = 0; f < 15 && budget_left(s); f++) {
            memcpy(c, s->best, sizeof *c);
            pf_op *op = &c->ops[o];
            uint8_t *p = NULL;
            switch (f) {
            case 0: p = &op->transA; break;
            case 1: p = &op->transB; break;
            case 2: p = &op->pipelined; break;
            case 3: p = &op->reverse; break;
            case 4: p = &op->clear; break;
            case 5: if (op->guard >= 0) { op->guard = -1; op->pipelined = 0; } break;
            case 6: if (op->alt >= 0) op->alt = -1; break;
            case 7: for (int k = 0; k < op->nin; k++) op->in[k].slice = 0, op->in[k].scope = op->in[k].scope == 2 ? 1 : op->in[k].scope; break;
            case 9: p = &op->symbolic; break;
            case 8: if (op->kind == PF_OP_MATMUL || op->kind == PF_OP_TGEMM) { if (op->variant == 2) op->root = -1; op->variant = 0; } break;
            case 10: if (op->kind == PF_OP_KGEMM) p = &op->red; break;
            case 11: if (op->kind == PF_OP_KGEMM) p = &op->cstage; break;
            case 12: if (op->kind == PF_OP_KGEMM) p = &op->swizzle; break;
            case 13: if (op->kind == PF_OP_KGEMM) p = &op->afrag; break;
            case 14: if (op->kind == PF_OP_KGEMM && op->root >= 0) op->root = -1; else continue; break;
            }
            /* fp8 tensor cores need B stored N x K: keep it */
            if (op->kind == PF_OP_KGEMM && f == 1 && (op->in[0].gdt == TILE_DT_FP8_E4M3 || op->in[0].gdt == TILE_DT_FP8_E5M2)) continue;
            if (p) {
                if (!*p) continue;
                *p = 0;
            }
            fix_shapes(op);
            if (try_cand(s, c)) any = true;
        }
    }
    return any;
}

pf_prog *pf_shrink(const pf_prog *p, const pf_config *cfg, const pf_result *finding, int max_tests, double max_seconds, int *tests) {
    sctx s = {cfg, finding->verdict, finding->target, 0, max_tests, tile_now() + max_seconds, pf_clone(p), pf_prog_size(p)};
    pf_prog *c = pf_clone(p);
    for (int round = 0; round < 20 && budget_left(&s); round++) {
        bool any = false;
        any |= pass_drop_ops(&s, c);
        any |= pass_sizes(&s, c);
        any |= pass_exprs(&s, c);
        any |= pass_types(&s, c);
        any |= pass_flags(&s, c);
        if (!any) break;
    }
    pf_prog_free(c);
    if (tests) *tests = s.tests;
    return s.best;
}
