/* tc_gemm.c — recognising the GEMM main loop that the tensor-core GEMM lowerings take
 * (sm90.c: TMA + wgmma on sm_90a; sm80.c: cp.async + ldmatrix + mma.sync on sm_80..sm_89).
 * The shape is described in simt_gen.h (simt_gemm_shape); each lowering then checks its own
 * limits on top. */
#include "simt_gen.h"

#include <stdio.h>
#include <string.h>

static bool cint(const ir_expr *e, int64_t *v) { return e && ir_const_int_value(e, v); }

/* Region r covers all of buffer b (starts 0, extents = shape). */
static bool whole(const ir_region *r, const ir_buffer *b) { return r->buf == b && ir_region_is_whole(r); }

/* A copy from a rank-2 global tensor (a kernel argument) into all of a shared buffer of the
 * same dtype, its box = the shared buffer's constant shape. */
static bool g2s_copy(gen *G, const ir_stmt *s, const ir_buffer **dst, const ir_buffer **src) {
    if (!s || s->kind != IR_S_COPY || s->nregions != 2) return false;
    const ir_region *a = &s->regions[0], *b = &s->regions[1];
    if (!whole(b, b->buf) || b->buf->scope != IR_SCOPE_SHARED || a->buf->rank != 2 || a->buf->scope != IR_SCOPE_GLOBAL ||
        a->buf->dtype != b->buf->dtype)
        return false;
    if (simt_g_bufarg(G, a->buf) < 0) return false;
    int64_t e0, e1, n0, n1;
    if (!cint(a->extent[0], &e0) || !cint(a->extent[1], &e1) || !cint(b->buf->shape[0], &n0) || !cint(b->buf->shape[1], &n1)) return false;
    if (e0 != n0 || e1 != n1) return false;
    *dst = b->buf;
    *src = a->buf;
    return true;
}

/* a reason the kernel is not the GEMM main loop: kept in m->why */
#define NO(reason) do { m->why = (reason); return false; } while (0)

bool simt_match_gemm_kernel(gen *G, const ir_stmt *k, simt_gemm_shape *m) {
    memset(m, 0, sizeof *m);
    const ir_stmt *body = k->body[0];
    if (!body || body->kind != IR_S_SEQ) NO("the kernel body is not a sequence of tile ops");
    const ir_buffer *shared[3] = {0}, *frag[2] = {0};
    int nshared = 0, nfrag = 0;
    for (int i = 0; i < body->nbody; i++) {
        const ir_stmt *s = body->body[i];
        switch (s->kind) {
        case IR_S_ALLOC:
            if (s->buf->scope == IR_SCOPE_SHARED && nshared < 3) shared[nshared++] = s->buf;
            else if (s->buf->scope == IR_SCOPE_FRAGMENT && nfrag < 2) frag[nfrag++] = s->buf;
            else NO("more than three shared tiles or more than two fragments");
            break;
        case IR_S_FILL:
            /* the accumulator is the fragment filled before the loop */
            if (m->fill || m->loop || !nfrag) NO("a fill that is not the accumulator's one fill before the loop");
            for (int f = 0; f < nfrag; f++)
                if (whole(&s->regions[0], frag[f])) m->Cf = frag[f];
            if (!m->Cf) NO("a fill that is not the accumulator's one fill before the loop");
            m->fill = s;
            break;
        case IR_S_FOR:
            if (s->loop_kind == IR_LOOP_PARALLEL && m->loop && !m->store) {
                if (m->nepi >= 8) NO("more than 8 epilogue nests");
                if (!simt_g_nest_ok(G, s)) NO("an epilogue T.Parallel nest that is not element-wise on register fragments");
                m->epi[m->nepi++] = s;
                break;
            }
            if (m->loop || !m->fill || (s->loop_kind != IR_LOOP_PIPELINED && s->loop_kind != IR_LOOP_SERIAL)) NO("a loop other than the one K loop after the fill");
            m->loop = s;
            break;
        case IR_S_COPY:
            if (m->store || !m->loop) NO("a copy outside the K loop other than the one store of the accumulator");
            m->store = s;
            /* staged through a shared tile: the pair is one store */
            if (s->regions[1].buf->scope == IR_SCOPE_SHARED && i + 1 < body->nbody && body->body[i + 1]->kind == IR_S_COPY &&
                body->body[i + 1]->regions[0].buf == s->regions[1].buf) {
                const ir_buffer *cs = s->regions[1].buf;
                if (!whole(&s->regions[1], cs) || !whole(&body->body[i + 1]->regions[0], cs)) NO("a staging tile not copied whole");
                m->Cs = cs;
                m->store = body->body[++i];
            }
            break;
        default: NO("a statement in the kernel other than allocations, the fill, the K loop, epilogue nests and the store");
        }
    }
    if (!m->loop || !m->store || nshared != (m->Cs ? 3 : 2) || !m->Cf || !nfrag) NO("not one fill, one K loop, one store and two shared operand tiles");
    /* the loop body: copy, copy, gemm [, the promotion nest] */
    const ir_stmt *lb = m->loop->body[0];
    if (!lb || lb->kind != IR_S_SEQ || (lb->nbody != 3 && lb->nbody != 4)) NO("a K loop body other than two copies into shared and the gemm");
    const ir_stmt *g = lb->body[2];
    if (g->kind != IR_S_GEMM) NO("a K loop body other than two copies into shared and the gemm");
    if (g->trans_a) NO("transpose_A");
    if (lb->nbody == 4) {
        /* promoted: the gemm's product (cleared each iteration) in the second fragment, then
         * one element-wise nest that reads it and updates the accumulator */
        const ir_stmt *pn = lb->body[3];
        if (nfrag != 2 || !g->clear || g->regions[2].buf == m->Cf) NO("a fourth K loop statement that is not the promotion of a clear_accum product");
        if (pn->kind != IR_S_FOR || pn->loop_kind != IR_LOOP_PARALLEL || !simt_g_nest_ok(G, pn))
            NO("a promotion after the gemm that is not one element-wise T.Parallel nest on register fragments");
        m->Pf = g->regions[2].buf;
        m->promo = pn;
        int64_t p0, p1, c0, c1;
        if (m->Pf->dtype != TILE_DT_F32 || m->Pf->rank != 2 || m->Cf->rank != 2 || !cint(m->Pf->shape[0], &p0) || !cint(m->Pf->shape[1], &p1) ||
            !cint(m->Cf->shape[0], &c0) || !cint(m->Cf->shape[1], &c1) || p0 != c0 || p1 != c1)
            NO("a promoted product fragment other than an f32 one of the accumulator's shape");
        if (!whole(&g->regions[2], m->Pf)) NO("gemm operands that are not whole tiles");
    } else {
        if (nfrag != 1) NO("more than one fragment");
        if (g->clear) NO("clear_accum");
        if (!whole(&g->regions[2], m->Cf)) NO("gemm operands that are not whole tiles");
    }
    m->bkn = !g->trans_b;
    m->gemm = g;
    m->As = g->regions[0].buf;
    m->Bs = g->regions[1].buf;
    if (!whole(&g->regions[0], m->As) || !whole(&g->regions[1], m->Bs)) NO("gemm operands that are not whole tiles");
    if (m->As == m->Bs || m->As == m->Cs || m->Bs == m->Cs) NO("gemm operands that share a tile");
    for (int i = 0; i < nshared; i++)
        if (shared[i] != m->As && shared[i] != m->Bs && shared[i] != m->Cs) NO("a shared tile that is neither a gemm operand nor the staging tile");
    m->dt = m->As->dtype;
    if (m->Bs->dtype != m->dt || m->Cf->dtype != TILE_DT_F32 || m->As->rank != 2 || m->Bs->rank != 2 || m->Cf->rank != 2)
        NO("A and B of different dtypes, an accumulator other than f32, or operands of rank other than 2");
    if (m->dt != TILE_DT_F16 && m->dt != TILE_DT_BF16 && m->dt != TILE_DT_FP8_E4M3 && m->dt != TILE_DT_FP8_E5M2) NO("operands other than f16, bf16 or fp8");
    m->esize = tile_dtype_bits(m->dt) / 8;
    for (int i = 0; i < 2; i++) {
        const ir_buffer *dst = NULL, *src = NULL;
        if (!g2s_copy(G, lb->body[i], &dst, &src)) NO("an operand copy that is not a box of a rank-2 global tensor into a whole shared tile of its dtype");
        if (dst == m->As && !m->cpA) { m->cpA = lb->body[i]; m->A = src; }
        else if (dst == m->Bs && !m->cpB) { m->cpB = lb->body[i]; m->B = src; }
        else NO("the loop's copies do not fill A's and B's shared tiles");
    }
    int64_t bm, bk, bn, bk2, cm, cn;
    if (!cint(m->As->shape[0], &bm) || !cint(m->As->shape[1], &bk) || !cint(m->Bs->shape[m->bkn ? 1 : 0], &bn) ||
        !cint(m->Bs->shape[m->bkn ? 0 : 1], &bk2))
        NO("non-constant tile shapes");
    if (!cint(m->Cf->shape[0], &cm) || !cint(m->Cf->shape[1], &cn) || bk != bk2 || cm != bm || cn != bn) NO("tile shapes that do not agree (A_s, B_s, C_f)");
    m->BM = bm; m->BN = bn; m->BK = bk;
    /* the store: all of C_f to a rank-2 global tensor */
    const ir_region *sr = &m->store->regions[0], *dr = &m->store->regions[1];
    if (m->Cs) {
        /* the staging tile: C_f's shape in C's dtype (one rounding, as the direct store) */
        int64_t s0, s1;
        if (m->Cs->rank != 2 || !cint(m->Cs->shape[0], &s0) || !cint(m->Cs->shape[1], &s1) || s0 != bm || s1 != bn || m->Cs->dtype != dr->buf->dtype)
            NO("a staging tile of another shape or dtype than the accumulator's store");
        const ir_stmt *first = NULL;
        for (int i = 0; i < body->nbody; i++)
            if (body->body[i]->kind == IR_S_COPY && body->body[i]->regions[1].buf == m->Cs) first = body->body[i];
        if (!first || !whole(&first->regions[0], m->Cf)) NO("a staging tile not written from the whole accumulator");
    }
    if ((m->Cs ? !whole(sr, m->Cs) : !whole(sr, m->Cf)) || dr->buf->scope != IR_SCOPE_GLOBAL || dr->buf->rank != 2 || simt_g_bufarg(G, dr->buf) < 0)
        NO("a store that is not the whole accumulator into a rank-2 global tensor");
    int64_t e0, e1;
    if (!cint(dr->extent[0], &e0) || !cint(dr->extent[1], &e1) || e0 != bm || e1 != bn) NO("a store box other than the accumulator's shape");
    tile_dtype cd = dr->buf->dtype;
    if (cd != TILE_DT_F32 && cd != TILE_DT_F16 && cd != TILE_DT_BF16 && cd != TILE_DT_FP8_E4M3 && cd != TILE_DT_FP8_E5M2)
        NO("a result C other than f32, f16, bf16 or fp8");
    m->C = dr->buf;
    return true;
}

void simt_gemm_store_pair(gen *G, tile_strbuf *o, int indent, const ir_buffer *C, const char *x0, const char *x1) {
    tile_strbuf cn = {0};
    simt_g_buf(&cn, C);
    char in[64] = "";
    for (int i = 0; i < indent && i < 15; i++) strcat(in, "    ");
    /* both elements in one aligned store where they can be, else one by one (clipped) */
    tile_sb_printf(o, "%sif (c >= 0 && c + 1 < tl_N && ((r * tl_N + c) & 1) == 0) {\n", in);
    if (C->dtype == TILE_DT_F32) tile_sb_printf(o, "%s    *(float2 *)&%s[r * tl_N + c] = make_float2(%s, %s);\n", in, cn.data, x0, x1);
    else if (tile_dtype_bits(C->dtype) == 8) {
        const char *f = C->dtype == TILE_DT_FP8_E4M3 ? "TCV_E4M3" : "TCV_E5M2";
        tile_sb_printf(o, "%s    *(uint16_t *)&%s[r * tl_N + c] = (uint16_t)(tl_encode_f32(&%s, %s) | (tl_encode_f32(&%s, %s) << 8));\n", in, cn.data, f, x0, f, x1);
    } else {
        const char *cv = C->dtype == TILE_DT_F16 ? "tcv_f32_to_f16_bits" : "tcv_f32_to_bf16_bits";
        tile_sb_printf(o, "%s    *(uint32_t *)&%s[r * tl_N + c] = (uint32_t)%s(%s) | ((uint32_t)%s(%s) << 16);\n", in, cn.data, cv, x0, cv, x1);
    }
    tile_sb_printf(o, "%s} else {\n", in);
    for (int e = 0; e < 2; e++) {
        char off[32];
        snprintf(off, sizeof off, "r * tl_N + c + %d", e);
        tile_sb_printf(o, "%s    if (c + %d >= 0 && c + %d < tl_N) {\n", in, e, e);
        simt_g_store(G, o, indent + 2, C, off, e ? x1 : x0, TILE_DT_F32);
        tile_sb_printf(o, "%s    }\n", in);
    }
    tile_sb_printf(o, "%s}\n", in);
    tile_sb_free(&cn);
}
