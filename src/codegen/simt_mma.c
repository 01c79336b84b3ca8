/* simt_mma.c — the generic tensor-core lowering of one T.gemm inside the portable SIMT code
 * (docs/backends-gpu.md, "T.gemm on mma.sync in any kernel").
 *
 * The whole-kernel lowerings (sm90.c, sm90_attn.c, sm80.c) take kernels of one shape; every
 * other kernel is emitted statement by statement by simt.c. There, a T.gemm whose accumulator
 * the layout pass put in registers comes here first. It is taken when:
 *
 *   - the target is CUDA with mma.sync (simt_options.sm >= 80; fp8 from sm_89 on);
 *   - C is a whole 2-D f32 register fragment whose layout (the IR's, never invented here) is
 *     mma's m16n8 accumulator layout warp by warp: the lane digits are 4 along the columns
 *     (stride 2) then 8 along the rows (stride 1), every other thread digit moves along the
 *     rows by a multiple of 16 or along the columns by a multiple of 8, and the slot digits
 *     are the column pair (stride 1), the row half (stride 8), then tiles (rows by multiples
 *     of 16, columns by multiples of 8). Slots 4q .. 4q+3 are then the c0..c3 registers of
 *     m16n8 tile q. The wgmma accumulator layout the pass assigns on sm_90a (lay_wgmma) is
 *     one such layout, and so is the mma layout it assigns on sm_80..89 (lay_mma);
 *   - A and B have one dtype (f16, bf16: m16n8k16; e4m3, e5m2: m16n8k32), K is a multiple of
 *     the k step, and the constant extents agree with C's;
 *   - A and B are 2-D tiles in shared memory, or A is a register fragment whose layout gives
 *     each thread mma's A fragment of the rows its C tiles have (the RS form: the same lane
 *     digits and row digits as C, C's column digits replicated, the K columns in slot digits
 *     of multiples of 8) and is 16-bit.
 *
 * Each k step loads, per warp, one A fragment per distinct 16-row tile and one B fragment per
 * distinct 8-column tile of the thread's C tiles, then issues one mma per C tile. Shared-memory
 * operands are read with ldmatrix (.trans for a 16-bit operand stored the other way) when
 * every row of 8 elements is 16-byte aligned; otherwise (and for an 8-bit operand stored with
 * K across rows) each lane loads its elements with plain shared loads. fp8 products are summed
 * from zero by each mma and added to the accumulators in f32 (mma's fp8 sums carry fewer bits
 * than f32, as in sm80.c). The result differs from the interpreter only by the order of the f32
 * additions inside mma.
 *
 * When a condition fails, simt_mma_gemm returns false with the reason, and simt.c emits the
 * SIMT GEMM (each thread's elements by scalar FMAs); both outcomes are recorded for
 * `tile ir --explain`.
 */
#include "simt_gen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct mma_tile {
    int64_t r, c; /* the tile's origin from the slot digits (the warp's part added at run time) */
} mma_tile;

enum { MMA_MAXT = 256 };

/* Is layout L (rank 2, ext0 x ext1) mma's m16n8 accumulator layout warp by warp (see the
 * header)? Fills the tiles of slots 4q..4q+3. */
static const char *acc_layout_ok(const ir_layout *L, const int64_t ext[2], int threads, mma_tile *tiles, int *ntiles) {
    if (L->kind != IR_LAYOUT_REGS || L->rank != 2) return "the accumulator is not a register fragment";
    if (L->local) return "the accumulator is kept in local memory (over the register budget)";
    if (L->threads != threads) return "the accumulator's layout is made for another thread count";
    if (ext[0] % 16 || ext[1] % 8) return "the accumulator is not made of 16 x 8 tiles";
    if ((int64_t)L->slots * L->threads != ext[0] * ext[1] || L->slots % 4) return "the accumulator's layout replicates or pads elements";
    int th = 0, sl = 0;
    int64_t maxc[2] = {0, 0};
    for (int i = 0; i < L->ndig; i++) {
        const ir_layout_digit *d = &L->dig[i];
        if (d->dim < 0 || d->dim > 1) return "the accumulator's layout replicates elements";
        maxc[d->dim] += (int64_t)(d->size - 1) * d->stride;
        if (d->thread) {
            bool ok = th == 0   ? d->dim == 1 && d->size == 4 && d->stride == 2
                      : th == 1 ? d->dim == 0 && d->size == 8 && d->stride == 1
                                : (d->dim == 0 ? d->stride % 16 == 0 : d->stride % 8 == 0);
            if (!ok) return "the accumulator's layout is not mma's m16n8 layout (lanes: 4 column pairs x 8 rows)";
            th++;
        } else {
            bool ok = sl == 0   ? d->dim == 1 && d->size == 2 && d->stride == 1
                      : sl == 1 ? d->dim == 0 && d->size == 2 && d->stride == 8
                                : (d->dim == 0 ? d->stride % 16 == 0 : d->stride % 8 == 0);
            if (!ok) return "the accumulator's slots are not mma's c0..c3 of m16n8 tiles";
            sl++;
        }
    }
    if (th < 2 || sl < 2) return "the accumulator's layout is not mma's m16n8 layout";
    if (maxc[0] >= ext[0] || maxc[1] >= ext[1]) return "the accumulator's layout pads elements";
    int Q = L->slots / 4;
    if (Q > MMA_MAXT) return "more than 256 mma tiles a thread";
    for (int q = 0; q < Q; q++) {
        int64_t below = 1, rem = (int64_t)q * 4;
        tiles[q].r = tiles[q].c = 0;
        for (int i = 0; i < L->ndig; i++) {
            const ir_layout_digit *d = &L->dig[i];
            if (d->thread) continue;
            int64_t v = rem / below % d->size;
            if (d->dim == 0) tiles[q].r += v * d->stride;
            else tiles[q].c += v * d->stride;
            below *= d->size;
        }
    }
    *ntiles = Q;
    return NULL;
}

/* C expression of the warp's offset along dimension dim (the thread digits above the lanes). */
static void warp_off(const ir_layout *L, int dim, const char *wp, tile_strbuf *o) {
    int64_t below = 1;
    int th = 0;
    tile_sb_puts(o, "(0");
    for (int i = 0; i < L->ndig; i++) {
        const ir_layout_digit *d = &L->dig[i];
        if (!d->thread) continue;
        if (th++ < 2) continue;
        if (d->dim == dim) tile_sb_printf(o, " + ((%s) / %lld %% %d) * %lld", wp, (long long)below, d->size, (long long)d->stride);
        below *= d->size;
    }
    tile_sb_puts(o, ")");
}

/* The RS form: does A's layout give each thread mma's A fragments of its C rows? Fills
 * aslot[t][kc] = the slot of (row tile t's origin, K column 8 kc) (the first of its 4). */
static const char *a_layout_ok(const ir_layout *La, const ir_layout *Lc, const int64_t aext[2], int64_t K, const int64_t *rows, int nrows, int *aslot) {
    if (La->kind != IR_LAYOUT_REGS || La->rank != 2 || La->local) return "the A fragment is not in registers";
    if (La->threads != Lc->threads) return "the A fragment's layout is made for another thread count";
    /* thread digits: the same as C's, C's column digits replicated */
    int ic = 0, ia = 0;
    for (;;) {
        while (ic < Lc->ndig && !Lc->dig[ic].thread) ic++;
        while (ia < La->ndig && !La->dig[ia].thread) ia++;
        if (ic >= Lc->ndig || ia >= La->ndig) {
            if (ic < Lc->ndig || ia < La->ndig) return "the A fragment's threads are not C's";
            break;
        }
        const ir_layout_digit *c = &Lc->dig[ic], *a = &La->dig[ia];
        bool lane = ic < 2;
        bool ok = a->size == c->size && (c->dim == 0 ? a->dim == 0 && a->stride == c->stride : lane ? a->dim == 1 && a->stride == c->stride : a->dim < 0);
        if (!ok) return "the A fragment's layout does not give each thread mma's A fragment of its C rows";
        ic++;
        ia++;
    }
    /* slot digits: column pair, row half, then rows by 16 and K columns by 8 */
    int sl = 0;
    int64_t maxc[2] = {0, 0};
    for (int i = 0; i < La->ndig; i++) {
        const ir_layout_digit *d = &La->dig[i];
        if (d->thread) {
            if (d->dim >= 0) maxc[d->dim] += (int64_t)(d->size - 1) * d->stride;
            continue;
        }
        maxc[d->dim] += (int64_t)(d->size - 1) * d->stride;
        bool ok = sl == 0 ? d->dim == 1 && d->size == 2 && d->stride == 1 : sl == 1 ? d->dim == 0 && d->size == 2 && d->stride == 8 : (d->dim == 0 ? d->stride % 16 == 0 : d->stride % 8 == 0);
        if (!ok) return "the A fragment's slots are not mma's A registers";
        sl++;
    }
    if (maxc[0] >= aext[0] || maxc[1] >= aext[1] || La->slots % 4) return "the A fragment's layout pads elements";
    int nk = (int)(K / 8);
    for (int t = 0; t < nrows * nk; t++) aslot[t] = -1;
    for (int s = 0; s < La->slots; s += 4) {
        int64_t below = 1, r = 0, c = 0;
        for (int i = 0; i < La->ndig; i++) {
            const ir_layout_digit *d = &La->dig[i];
            if (d->thread) continue;
            int64_t v = s / below % d->size;
            if (d->dim == 0) r += v * d->stride;
            else c += v * d->stride;
            below *= d->size;
        }
        for (int t = 0; t < nrows; t++)
            if (rows[t] == r && c % 8 == 0 && c / 8 < nk) aslot[t * nk + c / 8] = s;
    }
    for (int t = 0; t < nrows * nk; t++)
        if (aslot[t] < 0) return "the A fragment does not hold every K column of the thread's C rows";
    return NULL;
}

static int find64(const int64_t *v, int n, int64_t x) {
    for (int i = 0; i < n; i++)
        if (v[i] == x) return i;
    return -1;
}

/* A shared operand: the C expression of its element offset at (row, col) of the buffer. */
typedef struct opnd {
    const ir_region *r;
    tile_strbuf name;  /* the buffer's variable */
    int64_t s0, s1;    /* constant region starts */
    int64_t ld;        /* row length (elements) */
    bool kmajor;       /* K along the buffer's rows (contiguous) */
    bool ldm;          /* ldmatrix */
} opnd;

static const char *shared_opnd(gen *G, const ir_region *r, bool kmajor, int bits, opnd *p) {
    const ir_buffer *b = r->buf;
    if (simt_g_space(G, b) != 2) return "an operand that is neither in shared memory nor an A register fragment";
    if (b->rank != 2) return "an operand that is not a 2-D tile";
    if (!ir_const_int_value(r->start[0], &p->s0) || !ir_const_int_value(r->start[1], &p->s1)) return "an operand region with a run-time start";
    if (!ir_const_int_value(b->shape[1], &p->ld)) return "an operand of a non-constant shape";
    p->r = r;
    p->kmajor = kmajor;
    memset(&p->name, 0, sizeof p->name);
    simt_g_buf(&p->name, b);
    int eb = bits / 8;
    /* ldmatrix: 16-byte rows of 8 16-bit (16 8-bit) elements at 16-byte aligned addresses;
     * moves 16-bit elements, so an 8-bit operand needs K along its rows */
    p->ldm = (p->ld * eb) % 16 == 0 && (p->s1 * eb) % 16 == 0 && (bits == 16 || kmajor);
    return NULL;
}

static void emit_defs(tile_strbuf *o) {
    tile_sb_puts(o, "#ifndef TL_MMAG\n#define TL_MMAG 1\n"
                    "/* src/codegen/simt_mma.c: ldmatrix and mma.sync of the generic T.gemm lowering */\n"
                    "#define TLG_SA(p) ((uint32_t)__cvta_generic_to_shared(p))\n"
                    "#define TLG_LDM4(r0, r1, r2, r3, a) asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\" : \"=r\"(r0), \"=r\"(r1), \"=r\"(r2), \"=r\"(r3) : \"r\"(a))\n"
                    "#define TLG_LDM4T(r0, r1, r2, r3, a) asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\" : \"=r\"(r0), \"=r\"(r1), \"=r\"(r2), \"=r\"(r3) : \"r\"(a))\n"
                    "#define TLG_LDM2(r0, r1, a) asm volatile(\"ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\" : \"=r\"(r0), \"=r\"(r1) : \"r\"(a))\n"
                    "#define TLG_LDM2T(r0, r1, a) asm volatile(\"ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\" : \"=r\"(r0), \"=r\"(r1) : \"r\"(a))\n"
                    "#define TLG_MMA16(T, c0, c1, c2, c3, a0, a1, a2, a3, b0, b1) asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.\" T \".\" T \".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\" "
                    ": \"+f\"(c0), \"+f\"(c1), \"+f\"(c2), \"+f\"(c3) : \"r\"(a0), \"r\"(a1), \"r\"(a2), \"r\"(a3), \"r\"(b0), \"r\"(b1))\n"
                    "#define TLG_MMA8(T, c0, c1, c2, c3, a0, a1, a2, a3, b0, b1) do { float p0, p1, p2, p3; "
                    "asm volatile(\"mma.sync.aligned.m16n8k32.row.col.f32.\" T \".\" T \".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %10, %10, %10};\" "
                    ": \"=f\"(p0), \"=f\"(p1), \"=f\"(p2), \"=f\"(p3) : \"r\"(a0), \"r\"(a1), \"r\"(a2), \"r\"(a3), \"r\"(b0), \"r\"(b1), \"f\"(0.0f)); "
                    "c0 += p0; c1 += p1; c2 += p2; c3 += p3; } while (0)\n"
                    "#endif\n");
}

/* One 32-bit register of an operand by plain shared loads: E elements (32 / bits) at
 * consecutive K from (row, k) in GEMM coordinates (row: M for A, N for B), each placed in its
 * byte lane. */
static void scalar_reg(tile_strbuf *o, const opnd *p, int bits, const char *dst, const char *row, const char *k) {
    int E = 32 / bits;
    tile_sb_printf(o, "%s = 0u", dst);
    for (int e = 0; e < E; e++) {
        if (p->kmajor)
            tile_sb_printf(o, " | ((uint32_t)%s[(%lld + (%s)) * %lld + %lld + (%s) + %d] << %d)", p->name.data, (long long)p->s0, row, (long long)p->ld, (long long)p->s1, k, e, e * bits);
        else tile_sb_printf(o, " | ((uint32_t)%s[(%lld + (%s) + %d) * %lld + %lld + (%s)] << %d)", p->name.data, (long long)p->s0, k, e, (long long)p->ld, (long long)p->s1, row, e * bits);
    }
    tile_sb_puts(o, ";\n");
}

bool simt_mma_gemm(gen *G, tile_strbuf *o, const ir_stmt *s, const char *lt, const char **why, const char **what) {
    const simt_options *op = simt_g_options(G);
    const ir_region *A = &s->regions[0], *B = &s->regions[1], *C = &s->regions[2];
    const ir_buffer *cb = C->buf;
    *why = NULL;
    *what = NULL;
#define DECLINE(msg)                                                                                                                       \
    do {                                                                                                                                   \
        *why = (msg);                                                                                                                      \
        return false;                                                                                                                      \
    } while (0)
    if (op->dialect != SIMT_CUDA || op->sm < 80) DECLINE("the target has no mma.sync (CUDA sm_80 or later)");
    if (tb_opt_int(op->opts, TB_OPT_cuda_mma_sync) == 0) DECLINE("TILE_CUDA_MMA_SYNC=0");
    tile_dtype dt = A->buf->dtype;
    if (B->buf->dtype != dt || (dt != TILE_DT_F16 && dt != TILE_DT_BF16 && dt != TILE_DT_FP8_E4M3 && dt != TILE_DT_FP8_E5M2))
        DECLINE("operand dtypes mma.sync does not take (f16, bf16, fp8 e4m3/e5m2, the same for A and B)");
    int bits = tile_dtype_bits(dt);
    if (bits == 8 && op->sm < 89) DECLINE("fp8 mma.sync needs sm_89 or later");
    if (cb->dtype != TILE_DT_F32 || cb->rank != 2 || !ir_region_is_whole(C) || !simt_g_is_reg(G, cb)) DECLINE("the accumulator is not a whole f32 register fragment");
    int64_t ext[2];
    if (!ir_const_int_value(cb->shape[0], &ext[0]) || !ir_const_int_value(cb->shape[1], &ext[1])) DECLINE("an accumulator of non-constant shape");
    int64_t ae[2], be[2];
    if (A->buf->rank != 2 || B->buf->rank != 2) DECLINE("an operand that is not a 2-D tile");
    for (int d = 0; d < 2; d++)
        if (!ir_const_int_value(A->extent[d], &ae[d]) || !ir_const_int_value(B->extent[d], &be[d])) DECLINE("operand extents that are not constant");
    int64_t M = s->trans_a ? ae[1] : ae[0], K = s->trans_a ? ae[0] : ae[1];
    int64_t N = s->trans_b ? be[0] : be[1], KB = s->trans_b ? be[1] : be[0];
    if (M != ext[0] || N != ext[1] || K != KB) DECLINE("operand shapes that do not match the accumulator's");
    const int kstep = bits == 8 ? 32 : 16;
    if (K % kstep) DECLINE(bits == 8 ? "K not a multiple of 32 (mma's fp8 k step)" : "K not a multiple of 16 (mma's k step)");
    if (K / kstep > 64) DECLINE("K over 64 mma k steps");
    const ir_layout *Lc = cb->layout;
    mma_tile *tiles = calloc(MMA_MAXT, sizeof *tiles);
    int Q = 0;
    const char *w = acc_layout_ok(Lc, ext, simt_g_threads(G), tiles, &Q);
    if (w) {
        free(tiles);
        DECLINE(w);
    }
    /* the distinct row tiles (A fragments) and column tiles (B fragments) */
    int64_t rows[MMA_MAXT], cols[MMA_MAXT];
    int nr = 0, nc = 0, ti_r[MMA_MAXT], ti_c[MMA_MAXT];
    for (int q = 0; q < Q; q++) {
        int i = find64(rows, nr, tiles[q].r);
        if (i < 0) rows[i = nr++] = tiles[q].r;
        ti_r[q] = i;
        int j = find64(cols, nc, tiles[q].c);
        if (j < 0) cols[j = nc++] = tiles[q].c;
        ti_c[q] = j;
    }
    free(tiles);
    const int nk8 = (int)(K / 8);
    /* operands */
    bool rs = simt_g_is_reg(G, A->buf);
    int *aslot = NULL;
    opnd pa, pb;
    memset(&pa, 0, sizeof pa);
    memset(&pb, 0, sizeof pb);
    if (simt_g_is_reg(G, B->buf)) DECLINE("B in registers (mma reads B from shared memory)");
    if (rs) {
        if (bits != 16) DECLINE("an 8-bit A register fragment");
        if (s->trans_a || !ir_region_is_whole(A)) DECLINE("an A register fragment used in part or transposed");
        aslot = calloc((size_t)(nr * nk8) + 1, sizeof *aslot);
        w = a_layout_ok(A->buf->layout, Lc, ae, K, rows, nr, aslot);
        if (w) {
            free(aslot);
            DECLINE(w);
        }
        simt_g_buf(&pa.name, A->buf);
    } else if ((w = shared_opnd(G, A, !s->trans_a, bits, &pa)))
        DECLINE(w);
    if ((w = shared_opnd(G, B, s->trans_b, bits, &pb))) {
        free(aslot);
        tile_sb_free(&pa.name);
        DECLINE(w);
    }
#undef DECLINE
    const char *T = dt == TILE_DT_F16 ? "f16" : dt == TILE_DT_BF16 ? "bf16" : dt == TILE_DT_FP8_E4M3 ? "e4m3" : "e5m2";
    const int eb = bits / 8;
    tile_strbuf cn = {0};
    simt_g_buf(&cn, cb);

    emit_defs(o);
    tile_sb_printf(o, "{ /* T.gemm on mma.sync m16n8k%d.%s (src/codegen/simt_mma.c): %d tiles a warp of %d rows x %d columns; A %s, B %s */\n", kstep, T, Q, nr,
                   nc, rs ? "from registers" : pa.ldm ? (pa.kmajor ? "by ldmatrix" : "by ldmatrix.trans") : "by shared loads",
                   pb.ldm ? (pb.kmajor ? "by ldmatrix" : "by ldmatrix.trans") : "by shared loads");
    tile_sb_printf(o, "#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= %d\n", bits == 8 ? 890 : 800);
    tile_sb_printf(o, "    const int tl_ln = (%s) %% 32, tl_wp = (%s) / 32, tl_g = tl_ln / 4, tl_t = tl_ln %% 4; (void)tl_g; (void)tl_t;\n", lt, lt);
    tile_strbuf wr = {0}, wc = {0};
    warp_off(Lc, 0, "tl_wp", &wr);
    warp_off(Lc, 1, "tl_wp", &wc);
    tile_sb_printf(o, "    const int tl_wr = %s, tl_wc = %s; (void)tl_wr; (void)tl_wc;\n", wr.data, wc.data);
    tile_sb_free(&wr);
    tile_sb_free(&wc);
    if (s->clear) tile_sb_printf(o, "#pragma unroll\n    for (int tl_s = 0; tl_s < %d; tl_s++) %s[tl_s] = 0.0f;\n", Lc->slots, cn.data);
    /* per-lane ldmatrix base addresses (bytes), k step 0 */
    if (!rs && pa.ldm) {
        tile_sb_printf(o, "    uint32_t tl_pa[%d];\n", nr);
        for (int i = 0; i < nr; i++) {
            if (pa.kmajor) /* x4: rows m + lane % 16, K columns (lane / 16) * 8 16-bit units */
                tile_sb_printf(o, "    tl_pa[%d] = TLG_SA(%s + (%lld + tl_wr + %lld + tl_ln %% 16) * %lld + %lld + (tl_ln / 16) * %d);\n", i, pa.name.data, (long long)pa.s0,
                               (long long)rows[i], (long long)pa.ld, (long long)pa.s1, 16 / eb);
            else /* x4.trans (16-bit, stored K x M): matrix j = lane / 8 at K rows (j / 2) * 8, M columns (j % 2) * 8 */
                tile_sb_printf(o, "    tl_pa[%d] = TLG_SA(%s + (%lld + tl_ln %% 8 + (tl_ln / 16) * 8) * %lld + %lld + tl_wr + %lld + ((tl_ln / 8) %% 2) * 8);\n", i,
                               pa.name.data, (long long)pa.s0, (long long)pa.ld, (long long)pa.s1, (long long)rows[i]);
        }
    }
    if (pb.ldm) {
        tile_sb_printf(o, "    uint32_t tl_pb[%d];\n", nc);
        for (int j = 0; j < nc; j++) {
            if (pb.kmajor) /* x2: N rows n + lane % 8, K columns ((lane / 8) % 2) * 8 16-bit units */
                tile_sb_printf(o, "    tl_pb[%d] = TLG_SA(%s + (%lld + tl_wc + %lld + tl_ln %% 8) * %lld + %lld + ((tl_ln / 8) %% 2) * %d);\n", j, pb.name.data, (long long)pb.s0,
                               (long long)cols[j], (long long)pb.ld, (long long)pb.s1, 16 / eb);
            else /* x2.trans (16-bit, stored K x N): K rows lane % 16 */
                tile_sb_printf(o, "    tl_pb[%d] = TLG_SA(%s + (%lld + tl_ln %% 16) * %lld + %lld + tl_wc + %lld);\n", j, pb.name.data, (long long)pb.s0, (long long)pb.ld,
                               (long long)pb.s1, (long long)cols[j]);
        }
    }
    const int nks = (int)(K / kstep);
    /* bytes one k step moves an ldmatrix address */
    long long da = pa.kmajor ? (long long)kstep * eb : (long long)kstep * pa.ld * eb;
    long long db = pb.kmajor ? (long long)kstep * eb : (long long)kstep * pb.ld * eb;
    for (int kk = 0; kk < nks; kk++) {
        tile_sb_printf(o, "    { /* k step %d */\n", kk);
        tile_sb_printf(o, "    uint32_t tl_a[%d][4], tl_b[%d][2];\n", nr, nc);
        for (int i = 0; i < nr; i++) {
            if (rs) {
                /* a0: (g, 2t), a1: (g + 8, 2t), a2: (g, 2t + 8), a3: (g + 8, 2t + 8): slots s,
                 * s + 2 of the K column group 2 kk and s, s + 2 of 2 kk + 1 */
                int s0 = aslot[i * nk8 + 2 * kk], s1 = aslot[i * nk8 + 2 * kk + 1];
                int sl[4] = {s0, s0 + 2, s1, s1 + 2};
                for (int r = 0; r < 4; r++)
                    tile_sb_printf(o, "    tl_a[%d][%d] = (uint32_t)%s[%d] | ((uint32_t)%s[%d] << 16);\n", i, r, pa.name.data, sl[r], pa.name.data, sl[r] + 1);
            } else if (pa.ldm) {
                tile_sb_printf(o, "    %s(tl_a[%d][0], tl_a[%d][1], tl_a[%d][2], tl_a[%d][3], tl_pa[%d] + %lldu);\n", pa.kmajor ? "TLG_LDM4" : "TLG_LDM4T", i, i, i, i, i,
                               da * kk);
            } else {
                int E = 32 / bits;
                for (int r = 0; r < 4; r++) {
                    char dst[32], row[96], k[96];
                    snprintf(dst, sizeof dst, "    tl_a[%d][%d]", i, r);
                    snprintf(row, sizeof row, "tl_wr + %lld + tl_g + %d", (long long)rows[i], 8 * (r & 1));
                    snprintf(k, sizeof k, "%d + tl_t * %d + %d", kk * kstep, E, (kstep / 2) * (r >> 1));
                    scalar_reg(o, &pa, bits, dst, row, k);
                }
            }
        }
        for (int j = 0; j < nc; j++) {
            if (pb.ldm) {
                tile_sb_printf(o, "    %s(tl_b[%d][0], tl_b[%d][1], tl_pb[%d] + %lldu);\n", pb.kmajor ? "TLG_LDM2" : "TLG_LDM2T", j, j, j, db * kk);
            } else {
                int E = 32 / bits;
                for (int r = 0; r < 2; r++) {
                    char dst[32], row[96], k[96];
                    snprintf(dst, sizeof dst, "    tl_b[%d][%d]", j, r);
                    snprintf(row, sizeof row, "tl_wc + %lld + tl_g", (long long)cols[j]);
                    snprintf(k, sizeof k, "%d + tl_t * %d + %d", kk * kstep, E, (kstep / 2) * r);
                    scalar_reg(o, &pb, bits, dst, row, k);
                }
            }
        }
        for (int q = 0; q < Q; q++) {
            int i = ti_r[q], j = ti_c[q];
            tile_sb_printf(o, "    %s(\"%s\", %s[%d], %s[%d], %s[%d], %s[%d], tl_a[%d][0], tl_a[%d][1], tl_a[%d][2], tl_a[%d][3], tl_b[%d][0], tl_b[%d][1]);\n",
                           bits == 8 ? "TLG_MMA8" : "TLG_MMA16", T, cn.data, 4 * q, cn.data, 4 * q + 1, cn.data, 4 * q + 2, cn.data, 4 * q + 3, i, i, i, i, j, j);
        }
        tile_sb_puts(o, "    }\n");
    }
    tile_sb_printf(o, "#else\n    __trap(); /* compiled for an architecture without mma.sync%s */\n#endif\n}\n", bits == 8 ? " fp8 (sm_89 or later)" : " (sm_80 or later)");
    *what = rs ? "mma.sync (generic, A from registers, B by ldmatrix from shared)"
            : pa.ldm && pb.ldm ? "mma.sync (generic, ldmatrix from shared)"
                               : "mma.sync (generic, operands from shared by ldmatrix or plain loads)";
    if (rs && !pb.ldm) *what = "mma.sync (generic, A from registers, B by plain loads from shared)";
    free(aslot);
    tile_sb_free(&pa.name);
    tile_sb_free(&pb.name);
    tile_sb_free(&cn);
    return true;
}
