/* sm90.c — the Hopper (sm_90a) lowering of tile-form GEMM kernels (docs/backends-gpu.md,
 * "Hopper").
 *
 * A kernel whose body is exactly a GEMM main loop
 *
 *     with T.Kernel(gx, gy, threads=T) as (bx, by):
 *         A_s = T.alloc_shared((BM, BK), dt); B_s = T.alloc_shared((BN, BK), dt)  [or (BK, BN)]
 *         C_f = T.alloc_fragment((BM, BN), "float32")
 *         T.fill(C_f, v) / T.clear(C_f)
 *         for k in T.Pipelined(n, num_stages=S):      (or a serial loop)
 *             T.copy(A[r, c], A_s); T.copy(B[r', c'], B_s)
 *             T.gemm(A_s, B_s, C_f, transpose_B=True)   [or transpose_B=False: B stored K x N]
 *         T.copy(C_f, C[r'', c''])
 *
 * (dt float16, bfloat16, float8_e4m3 or float8_e5m2 — fp8 only with a 16-bit result C; A
 * and B rank-2 global tensors whose
 * rows are 16-byte multiples; BK * sizeof(dt) = 32, 64 or 128 bytes, or a multiple of 128
 * up to 512 held as 128-byte panels along K; T = 128 or 256;
 * BM / (T/128) = 64 or 128 rows per warpgroup; BN a multiple of 8 up to 256, of 16 for B
 * stored K x N) becomes:
 *
 *   - a stage of the ring holds U consecutive iterations of the loop when the layout pass's
 *     pipeline plan says so (block_K under 128 bytes of K, copies stepping by block_K along K:
 *     src/opt/layout.c): BK below is then U * block_K, one TMA box of 128-byte rows, and the
 *     tile's last stage, of n mod U iterations, issues only their k-steps;
 *   - one producer warpgroup (128 extra threads; setmaxnreg.dec) whose first thread issues
 *     the TMA copies (cp.async.bulk.tensor.2d, tensor maps as __grid_constant__ kernel
 *     parameters, box = the shared tile, swizzle = BK * sizeof(dt) bytes) into a ring of S
 *     shared stages, each with a "full" mbarrier (expect_tx bytes) and an "empty" one;
 *   - B stored K x N (16-bit types only: fp8 wgmma reads K-major operands only): TMA boxes
 *     of BK rows x swzB bytes of N (swzB = 128, 64 or 32, the widest dividing BN * esize),
 *     side by side, swizzled by swzB; wgmma reads them N-major (imm-trans-b = 1) through
 *     descriptors whose leading offset steps from one swizzle atom (8 K rows x swzB bytes) to
 *     the next along N (BK * swzB bytes) and whose stride offset steps 8 rows of K;
 *   - T/128 consumer warpgroups (setmaxnreg.inc when there are two or more), each owning
 *     BM/(T/128) rows of the tile: they wait on "full", issue wgmma.mma_async m64nBNk16
 *     (k32 for fp8) with shared-memory descriptors matching the TMA swizzle, keep one
 *     wgmma group in flight, and release the previous stage on "empty";
 *   - the accumulator fragment lives in registers in wgmma's accumulator layout (thread t of
 *     a warpgroup holds rows 16*(t/32) + (t%32)/4 (+8) and column pairs 8j + 2(t%4)); the
 *     fill initialises them, and the final copy stores them, clipped at the tensor bounds
 *     and converted with the usual rounding: for an 8- or 16-bit C whose rows are 16-byte
 *     multiples and BN a multiple of 128 bytes (TILE_SM90_TMA_STORE, default on) through a swizzled shared staging
 *     tile and TMA stores (cp.async.bulk.tensor, clipped by the tensor map), so that the
 *     warpgroup goes on to its next tile while the stores drain; otherwise by direct stores;
 *   - fp8: each stage's products are summed by wgmma into a second register set and added
 *     to the accumulator in f32 (wgmma's fp8 sums carry fewer bits than f32); fp8 kernels
 *     with an f32 result keep the portable lowering, which is exact;
 *   - the promoted form (simt_gen.h: gemm into a second fragment with clear_accum, then one
 *     T.Parallel nest updating the accumulator, e.g. block scales): the second register set
 *     is that fragment, and the nest, from the IR, replaces the plain add after each stage
 *     (one loop iteration a stage);
 *   - the kernel is persistent (simt_launch.persistent: at most one block per
 *     multiprocessor, each looping over tiles with the mbarrier phases running on across
 *     tiles), tiles rasterised in groups of TILE_SM90_GROUP (8) indices of grid dim 1.
 *
 * Out-of-range parts of a TMA box read as zeros (as the tile copy's clipping does). The
 * result differs from the interpreter only by the order of f32 additions inside wgmma.
 * Anything else (other statements in the kernel, fp8 with transpose_B=False, f32 inputs, other
 * tile shapes) keeps the portable lowering of simt.c.
 */
#include "simt_gen.h"
#include "../opt/layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SM90_SMEM_MAX (227 * 1024)

typedef struct sm90 {
    simt_gemm_shape g; /* the kernel's GEMM main loop (simt_gen.h) */
    int swz, consumers, mt, stages, kstep;
    int np;        /* K-major tiles of more than 128 bytes of K: panels of 128-byte rows side by
                    * side along K (one TMA box and one swizzle pattern each), else 1 */
    int u;         /* K-loop iterations a stage (the layout pass's pipeline plan): BK below is
                    * the stage's K extent, u times the program's block_K */
    int swzB;      /* B's swizzle in bytes: BK*esize (K-major), or the widest of 128/64/32 dividing
                    * BN*esize (N-major: TMA boxes of BK rows x swzB bytes side by side) */
    bool tstore;   /* epilogue through shared memory and TMA stores (8- or 16-bit C, BN a
                    * multiple of one 128-byte box row) */
    int ces;       /* C's element bytes */
    size_t cbytes; /* shared staging of C for tstore: BM x BN x ces */
} sm90;

static bool cint(const ir_expr *e, int64_t *v) { return e && ir_const_int_value(e, v); }

/* TMA reads rows of global tensor t: its row pitch must be a multiple of 16 bytes (known when
 * the shape is a constant). */
static bool tma_rows_ok(const ir_buffer *t) {
    int64_t cols;
    return cint(t->shape[1], &cols) && (cols * tile_dtype_bits(t->dtype) / 8) % 16 == 0;
}

/* NULL when kernel k is a GEMM main loop this lowering covers (m filled), else why not */
#define NO(reason) return (reason)
static const char *match(gen *G, const ir_stmt *k, sm90 *m) {
    memset(m, 0, sizeof *m);
    if (!simt_match_gemm_kernel(G, k, &m->g)) return m->g.why ? m->g.why : "not a GEMM main loop";
    if (!tma_rows_ok(m->g.A) || !tma_rows_ok(m->g.B)) NO("A or B rows that are not a constant multiple of 16 bytes (TMA's row pitch)");
    /* the pipeline plan's iterations a stage (src/opt/layout.c checked that the copies step by
     * block_K along K): the stage is the tile of u * block_K columns of K */
    m->u = 1;
    const ir_lowering *pl = m->g.loop->lower;
    if (pl && pl->kind && !strcmp(pl->kind, "pipeline") && pl->iparam[1] > 1 && pl->iparam[1] <= 8) m->u = pl->iparam[1];
    m->g.BK *= m->u;
    const int64_t bm = m->g.BM, bn = m->g.BN, bk = m->g.BK;
    m->kstep = 32 / m->g.esize;
    m->swz = (int)(bk * m->g.esize);
    /* K-major tiles wider than one 128-byte swizzle row: panels of 128 bytes of K each, [rows x
     * 128 bytes] one after the other, loaded by one TMA box each; the k-steps walk a panel's
     * 32-byte columns, then the next panel */
    m->np = 1;
    if (m->swz > 128 && m->swz % 128 == 0 && m->swz <= 512 && m->u == 1) {
        m->np = m->swz / 128;
        m->swz = 128;
    }
    if (m->swz != 32 && m->swz != 64 && m->swz != 128) NO("block_K (times the stage's iterations) not 32, 64, 128 or a multiple of 128 up to 512 bytes of K (TMA swizzle widths)");
    if (bn < 8 || bn > 256 || bn % 8) NO("block_N not a multiple of 8 up to 256 (wgmma's N)");
    /* one or two consumer warpgroups: with more, setmaxnreg could not give each the
     * registers of a 64 x 256 accumulator (65536 per multiprocessor) */
    /* the layout pass's plan: consumer warpgroups and their m64 tiles (the accumulator's
     * layout in the IR); without one (no plan made), from the thread count */
    int pmt = 0, pc = simt_wg_plan(k, &pmt);
    if (pc > 0) {
        m->consumers = pc;
        m->mt = pmt;
        if ((int64_t)pc * pmt * 64 != bm) NO("block_M not the layout plan's warpgroups times their m64 tiles");
    } else {
        if (k->threads <= 0 || k->threads % 128 || k->threads > 256) NO("threads not 128 or 256 (one or two consumer warpgroups)");
        m->consumers = k->threads / 128;
        if (bm % m->consumers) NO("block_M not split evenly over the warpgroups");
        int64_t rows = bm / m->consumers;
        if (rows != 64 && rows != 128) NO("not 64 or 128 rows a warpgroup");
        m->mt = (int)(rows / 64);
    }
    if (m->consumers > 2) NO("more than two consumer warpgroups");
    /* epilogue and promotion nests walk the fragments' IR layouts: they must be wgmma's for
     * this split */
    if (m->g.nepi > 0 || m->g.promo) {
        ir_layout want = lay_wgmma(m->consumers, m->mt, bn);
        if (!m->g.Cf->layout || !lay_equal(m->g.Cf->layout, &want)) NO("an epilogue on an accumulator whose IR layout is not wgmma's");
        if (m->g.promo && (!m->g.Pf->layout || !lay_equal(m->g.Pf->layout, &want))) NO("a promoted product whose IR layout is not wgmma's");
    }
    /* the promotion nest runs once a stage, with the loop variable of the stage's one
     * iteration (several iterations a stage would share one wgmma sum) */
    if (m->g.promo && m->u != 1) NO("a promotion nest with block_K under 128 bytes of K (several iterations a stage)");
    if (m->mt * bn > 256) NO("more than 128 accumulator registers a thread");
    /* B stored K x N: wgmma reads it N-major (its transpose bit), which only 16-bit types have
     * (fp8 wgmma takes K-major operands only); the N-major swizzle atom is 8 rows of K by
     * swzB bytes of N, so BN * esize must be a multiple of 32 bytes */
    if (m->g.bkn) {
        if (m->g.esize != 2) NO("fp8 with B stored K x N (transpose_B=False): fp8 wgmma reads K-major B only");
        int64_t nb = bn * m->g.esize;
        m->swzB = nb % 128 == 0 ? 128 : nb % 64 == 0 ? 64 : nb % 32 == 0 ? 32 : 0;
        if (!m->swzB || bk % 16) NO("B stored K x N with block_N not a multiple of 32 bytes or block_K not of 16");
    } else m->swzB = m->swz;
    /* every stage's tiles (and B's boxes) start on their swizzle pattern's repeat */
    if ((bm * bk * m->g.esize) % (8 * m->swzB) || ((bm + bn) * bk * m->g.esize) % (8 * m->swz) || ((bm + bn) * bk * m->g.esize) % (8 * m->swzB))
        NO("stage tiles that do not start on a swizzle pattern's repeat");
    /* fp8: wgmma accumulates fp8 products with fewer than f32's bits, so each stage's
     * products go to a second set of registers first and are added in f32 (twice the
     * registers: at most 64 + 64) */
    /* fp8 with an f32 result: each stage's wgmma sums carry fewer bits than f32 (measured on
     * an H200: 1.8e-4 norm-wise against exact f32 sums, above the 1e-5 f32 results are
     * checked to); a 16-bit or fp8 result hides that */
    /* TILE_SM90_FP8_F32=1 takes them with the same promotion (docs/backends-gpu.md: the error
     * is far below what the fp8 inputs carry, but above the f32 check's 1e-5) */
    if (m->g.esize == 1 && m->g.C->dtype == TILE_DT_F32 && !tb_opt_bool(simt_g_options(G)->opts, TB_OPT_sm90_fp8_f32))
        NO("fp8 with an f32 result (wgmma's fp8 sums carry fewer bits than the f32 result checks; TILE_SM90_FP8_F32=1 takes it)");
    if ((m->g.esize == 1 || m->g.promo) && m->mt * bn > 128) NO("fp8 or a promotion nest with more than 64 accumulator registers a thread (the promotion's second set doubles them)");
    /* stages: the loop's num_stages (at least 1), as many as fit in shared memory */
    size_t stage = (size_t)(bm + bn) * (size_t)bk * (size_t)m->g.esize;
    int st = m->g.loop->loop_kind == IR_LOOP_PIPELINED && m->g.loop->num_stages > 0 ? m->g.loop->num_stages : 2;
    /* the layout pass's pipeline depth (src/opt/layout.c), when it made one: at least the
     * loop's num_stages iterations, in stages of u iterations */
    if (pl && pl->kind && !strcmp(pl->kind, "pipeline") && pl->iparam[0] > 0) st = pl->iparam[0];
    if (st > 8) st = 8;
    while (st > 1 && 1024 + (size_t)st * stage + 16 * (size_t)st > SM90_SMEM_MAX) st--;
    if (1024 + (size_t)st * stage + 16 * (size_t)st > SM90_SMEM_MAX) NO("one stage does not fit in shared memory");
    /* the epilogue through shared memory + TMA stores (TILE_SM90_TMA_STORE=0: not): an 8- or
     * 16-bit C whose rows are 16-byte multiples, BN a multiple of one box row of 128 bytes (64
     * or 128 columns, swizzled); the staging tile takes stages, down to 3 at the fewest */
    int64_t ccols;
    m->ces = tile_dtype_bits(m->g.C->dtype) / 8;
    m->cbytes = (size_t)bm * (size_t)bn * (size_t)m->ces;
    if (tb_opt_bool(simt_g_options(G)->opts, TB_OPT_sm90_tma_store) && (m->ces == 1 || m->ces == 2) && bn % (128 / m->ces) == 0 && cint(m->g.C->shape[1], &ccols) &&
        (ccols * m->ces) % 16 == 0) {
        int st2 = st;
#define SM90_TS_BYTES(n) (1024 + (((size_t)(n) * stage + 1023) & ~(size_t)1023) + m->cbytes + 16 * (size_t)(n))
        while (st2 > 1 && SM90_TS_BYTES(st2) > SM90_SMEM_MAX) st2--;
        if (SM90_TS_BYTES(st2) <= SM90_SMEM_MAX && st2 >= (st < 3 ? st : 3)) {
            m->tstore = true;
            st = st2;
        }
    }
#undef SM90_TS_BYTES
    m->stages = st;
    return NULL;
}
#undef NO

static const char *helpers_text =
    "/* ---- src/codegen/sm90.c: Hopper helpers (TMA, mbarrier, wgmma) ---- */\n"
    "#ifndef TL_SM90_HELPERS\n#define TL_SM90_HELPERS 1\n"
    "#ifndef TL_TMAP_DEF\n#define TL_TMAP_DEF 1\nstruct __align__(64) tl_tmap { unsigned long long v[16]; };\n#endif\n"
    "#if defined(__CUDA_ARCH_FEAT_SM90_ALL)\n"
    "#define TL_SM90_OK 1\n"
    "#endif\n"
    "TL_FN uint32_t tl_sa(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }\n"
    "#ifdef TL_SM90_OK\n"
    "TL_FN void tl_mb_init(uint32_t b, uint32_t n) { asm volatile(\"mbarrier.init.shared::cta.b64 [%0], %1;\" :: \"r\"(b), \"r\"(n) : \"memory\"); }\n"
    "TL_FN void tl_mb_expect(uint32_t b, uint32_t bytes) { asm volatile(\"mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\" :: \"r\"(b), \"r\"(bytes) : \"memory\"); }\n"
    "TL_FN void tl_mb_arrive(uint32_t b) { asm volatile(\"mbarrier.arrive.shared::cta.b64 _, [%0];\" :: \"r\"(b) : \"memory\"); }\n"
    "TL_FN void tl_mb_wait(uint32_t b, uint32_t ph) {\n"
    "    uint32_t ok = 0;\n"
    "    do {\n"
    "        asm volatile(\"{\\n.reg .pred p;\\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\\nselp.u32 %0, 1, 0, p;\\n}\" : \"=r\"(ok) : \"r\"(b), \"r\"(ph) : \"memory\");\n"
    "    } while (!ok);\n"
    "}\n"
    "TL_FN void tl_tma_load2d(uint32_t dst, const tl_tmap *m, uint32_t mb, int32_t c0, int32_t c1) {\n"
    "    asm volatile(\"cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\"\n"
    "                 :: \"r\"(dst), \"l\"((uint64_t)m), \"r\"(mb), \"r\"(c0), \"r\"(c1) : \"memory\");\n"
    "}\n"
    "TL_FN void tl_tma_store2d(const tl_tmap *m, uint32_t src, int32_t c0, int32_t c1) {\n"
    "    asm volatile(\"cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];\"\n"
    "                 :: \"l\"((uint64_t)m), \"r\"(src), \"r\"(c0), \"r\"(c1) : \"memory\");\n"
    "}\n"
    "/* two floats rounded to nearest even into a bf16/f16 pair, lo in the low half (one cvt; NaN becomes the canonical NaN) */\n"
    "TL_FN uint32_t tl_pack_bf16(float lo, float hi) { uint32_t d; asm(\"cvt.rn.bf16x2.f32 %0, %1, %2;\" : \"=r\"(d) : \"f\"(hi), \"f\"(lo)); return d; }\n"
    "TL_FN uint32_t tl_pack_f16(float lo, float hi) { uint32_t d; asm(\"cvt.rn.f16x2.f32 %0, %1, %2;\" : \"=r\"(d) : \"f\"(hi), \"f\"(lo)); return d; }\n"
    "TL_FN void tl_st_shared32(uint32_t a, uint32_t v) { asm volatile(\"st.shared.b32 [%0], %1;\" :: \"r\"(a), \"r\"(v) : \"memory\"); }\n"
    "TL_FN void tl_st_shared16(uint32_t a, uint32_t v) { asm volatile(\"st.shared.b16 [%0], %1;\" :: \"r\"(a), \"h\"((unsigned short)v) : \"memory\"); }\n"
    "#define TL_BULK_COMMIT() asm volatile(\"cp.async.bulk.commit_group;\" ::: \"memory\")\n"
    "#define TL_BULK_WAIT_READ0() asm volatile(\"cp.async.bulk.wait_group.read 0;\" ::: \"memory\")\n"
    "#define TL_BULK_WAIT0() asm volatile(\"cp.async.bulk.wait_group 0;\" ::: \"memory\")\n"
    "#define TL_FENCE_PROXY_ASYNC() asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\")\n"
    "#define TL_BAR_SYNC(id, n) asm volatile(\"bar.sync %0, %1;\" :: \"r\"(id), \"n\"(n) : \"memory\")\n"
    "TL_FN void tl_tma_prefetch(const tl_tmap *m) { asm volatile(\"prefetch.tensormap [%0];\" :: \"l\"((uint64_t)m) : \"memory\"); }\n"
    "/* wgmma shared-memory descriptor: start address, stride between 8-row groups, swizzle mode */\n"
    "TL_FN uint64_t tl_wg_desc(uint32_t sa, uint32_t sbo, uint64_t layout) {\n"
    "    return (uint64_t)((sa & 0x3FFFFu) >> 4) | ((uint64_t)1 << 16) | ((uint64_t)(sbo >> 4) << 32) | (layout << 62);\n"
    "}\n"
    "/* the same for an N-major (transposed) operand: lbo = the stride between swizzle atoms along N */\n"
    "TL_FN uint64_t tl_wg_desc_mn(uint32_t sa, uint32_t lbo, uint32_t sbo, uint64_t layout) {\n"
    "    return (uint64_t)((sa & 0x3FFFFu) >> 4) | ((uint64_t)((lbo >> 4) & 0x3FFFu) << 16) | ((uint64_t)(sbo >> 4) << 32) | (layout << 62);\n"
    "}\n"
    "#define TL_WG_FENCE() asm volatile(\"wgmma.fence.sync.aligned;\" ::: \"memory\")\n"
    "#define TL_WG_COMMIT() asm volatile(\"wgmma.commit_group.sync.aligned;\" ::: \"memory\")\n"
    "#define TL_WG_WAIT(n) asm volatile(\"wgmma.wait_group.sync.aligned %0;\" :: \"n\"(n) : \"memory\")\n"
    "#define TL_SETMAXNREG_DEC(n) asm volatile(\"setmaxnreg.dec.sync.aligned.u32 %0;\" :: \"n\"(n))\n"
    "#define TL_SETMAXNREG_INC(n) asm volatile(\"setmaxnreg.inc.sync.aligned.u32 %0;\" :: \"n\"(n))\n"
    "#endif\n"
    "#endif\n";

static const char *ptx_type(tile_dtype d) {
    switch (d) {
    case TILE_DT_F16: return "f16";
    case TILE_DT_BF16: return "bf16";
    case TILE_DT_FP8_E4M3: return "e4m3";
    default: return "e5m2";
    }
}

/* The wgmma wrapper for this dtype and N: acc[N/2] += A(desc) * B(desc)^T; with bkn (16-bit
 * types only) B's descriptor is N-major (imm-trans-b = 1): tl_wgmma_<t>_n<N>t. */
static void wgmma_fn(tile_strbuf *o, tile_dtype dt, int n, bool bkn) {
    int nr = n / 2;
    bool fp8 = tile_dtype_bits(dt) == 8;
    const char *t = ptx_type(dt), *sfx = bkn ? "t" : "";
    tile_sb_printf(o, "#ifdef TL_SM90_OK\n#ifndef TL_WGMMA_%s_%d%s\n#define TL_WGMMA_%s_%d%s\n", t, n, sfx, t, n, sfx);
    tile_sb_printf(o, "static __device__ __forceinline__ void tl_wgmma_%s_n%d%s(float (&d)[%d], uint64_t da, uint64_t db, int scd) {\n", t, n, sfx, nr);
    tile_sb_printf(o, "    asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %%%d, 0;\\n\"\n", nr + 2);
    tile_sb_printf(o, "        \"wgmma.mma_async.sync.aligned.m64n%dk%d.f32.%s.%s {", n, fp8 ? 32 : 16, t, t);
    for (int i = 0; i < nr; i++) tile_sb_printf(o, "%s%%%d", i ? ", " : "", i);
    tile_sb_printf(o, "}, %%%d, %%%d, p, 1, 1%s;\\n}\\n\"\n        : ", nr, nr + 1, fp8 ? "" : bkn ? ", 0, 1" : ", 0, 0");
    for (int i = 0; i < nr; i++) tile_sb_printf(o, "%s\"+f\"(d[%d])", i ? ", " : "", i);
    tile_sb_puts(o, "\n        : \"l\"(da), \"l\"(db), \"r\"(scd));\n}\n#endif\n#endif\n");
}

/* `code` for expression e */
static char *expr_s(gen *G, const ir_expr *e) {
    tile_strbuf t = {0};
    simt_g_expr(G, &t, e);
    return t.data ? t.data : tile_xstrdup("0");
}

/* One stage's wgmma group: fence, nk k-steps (32 bytes of K each) of the MT m64 tiles, commit;
 * sa / sb (the stage's A rows and B tile) in scope; adesc: A's descriptor stride and layout,
 * bdesc: B's descriptor expression of kk. */
static void stage_mma(tile_strbuf *o, const char *t, int bn, bool bkn, int MT, int swz, const char *adesc, const char *bdesc, bool promote, int nk, int ind, size_t apanel) {
    const char *sp = ind >= 4 ? "                " : "            ";
    tile_sb_printf(o, "%sTL_WG_FENCE();\n", sp);
    tile_sb_printf(o, "#pragma unroll\n%sfor (int kk = 0; kk < %d; kk++) {\n", sp, nk);
    /* with panels (apanel > 0: the bytes of one A panel) k-step kk is column kk % 4 of panel kk / 4 */
    const char *acol = apanel ? tile_xstrdup("32u * (kk % 4)") : tile_xstrdup("32u * kk");
    char apan[64] = "";
    if (apanel) snprintf(apan, sizeof apan, " + %zuu * (kk / 4)", apanel);
    for (int i = 0; i < MT; i++)
        tile_sb_printf(o, "%s    tl_wgmma_%s_n%d%s(%s[%d], tl_wg_desc(sa + %uu%s + %s, %s), %s, %s);\n", sp, t, bn, bkn ? "t" : "", promote ? "tl_part" : "tl_acc", i,
                       (unsigned)(i * 64 * swz), apan, acol, adesc, bdesc, promote ? "kk > 0" : "1");
    free((void *)acol);
    tile_sb_printf(o, "%s}\n%sTL_WG_COMMIT();\n", sp, sp);
}

bool sm90_gemm_kernel(gen *G, const ir_stmt *k, simt_launch *L, tile_strbuf *helpers, tile_strbuf *o, const char **why) {
    sm90 m;
    if (!tb_opt_bool(simt_g_options(G)->opts, TB_OPT_cuda_sm90)) {
        if (why) *why = "TILE_CUDA_SM90=0";
        return false;
    }
    const char *no = match(G, k, &m);
    if (no) {
        if (why) *why = no;
        return false;
    }
    const int C = m.consumers, S = m.stages, MT = m.mt, NR = (int)m.g.BN / 2, U = m.u;
    const size_t aBytes = (size_t)(m.g.BM * m.g.BK) * (size_t)m.g.esize, bBytes = (size_t)(m.g.BN * m.g.BK) * (size_t)m.g.esize;
    const size_t stage = aBytes + bBytes;
    const int layout = m.swz == 128 ? 1 : m.swz == 64 ? 2 : 3;
    const bool promote = m.g.esize == 1 || m.g.promo;

    /* the plan */
    L->threads = 128 * (C + 1);
    /* shared memory: the S stages, [the C staging tile,] the mbarriers */
    const size_t cOff = ((size_t)S * stage + 1023) & ~(size_t)1023, barOff = m.tstore ? cOff + m.cbytes : (size_t)S * stage;
    L->smem = 1024 + barOff + 16 * (size_t)S;
    /* one consumer warpgroup (no setmaxnreg): several blocks a multiprocessor when their
     * registers (the accumulators and ~64 more a thread) and shared memory allow, so that
     * small tiles keep the tensor cores busy */
    L->blocks_per_sm = 1;
    if (C == 1) {
        int regs = (MT * NR * (promote ? 2 : 1) + 64 + 7) & ~7;
        int kr = 65536 / (L->threads * regs), ks = (int)((228 * 1024) / (L->smem + 1024));
        int kb = kr < ks ? kr : ks;
        L->blocks_per_sm = kb > 4 ? 4 : kb < 1 ? 1 : kb;
    }
    L->ntma = m.tstore ? 3 : 2;
    if (m.tstore) L->tma[2] = (simt_tma){simt_g_bufarg(G, m.g.C), m.ces, MT * 64, 128 / m.ces, 128};
    /* with panels each box is one panel: 128 bytes of K */
    const int pcols = m.np > 1 ? 128 / m.g.esize : (int)m.g.BK;
    const size_t apanel = m.np > 1 ? (size_t)m.g.BM * 128u : 0, bpanel = m.np > 1 ? (size_t)m.g.BN * 128u : 0;
    L->tma[0] = (simt_tma){simt_g_bufarg(G, m.g.A), m.g.esize, (int)m.g.BM, pcols, m.swz};
    /* B: one box of the tile (N x K), or BN*esize/swzB boxes of BK rows x swzB bytes (K x N) */
    const int bbox = m.g.bkn ? m.swzB / m.g.esize : 0, nbbox = m.g.bkn ? (int)m.g.BN / bbox : 1;
    const int layoutB = m.swzB == 128 ? 1 : m.swzB == 64 ? 2 : 3;
    if (m.g.bkn) L->tma[1] = (simt_tma){simt_g_bufarg(G, m.g.B), m.g.esize, (int)m.g.BK, bbox, m.swzB};
    else L->tma[1] = (simt_tma){simt_g_bufarg(G, m.g.B), m.g.esize, (int)m.g.BN, pcols, m.swz};
    snprintf(L->lowering, sizeof L->lowering, "sm90-wgmma");
    L->persistent = true;
    /* persistent: each block loops over tiles tl_blk, tl_blk + gridDim.x, ... (block
     * indices decoded like simt.c's preamble, x fastest) */
    tile_strbuf decode = {0};
    long group = (long)tb_opt_int(simt_g_options(G)->opts, TB_OPT_sm90_group);
    if (group < 1) group = 1;
    if (k->ngrid >= 2 && group > 1) {
        /* rasterised (blocks are independent, so any order is the program's meaning): groups
         * of `group` consecutive indices of grid dimension 1, dimension 0 swept inside a
         * group, so the blocks running together share their A and B tiles in L2 */
        tile_strbuf n0 = {0}, n1 = {0};
        simt_g_var(&n0, k->block_vars[0]);
        simt_g_var(&n1, k->block_vars[1]);
        tile_sb_printf(&decode,
                       "            { int64_t tl_r = tl_tile %% (tl_g0 * tl_g1), tl_z = tl_tile / (tl_g0 * tl_g1); (void)tl_z;\n"
                       "              const int64_t tl_f = tl_r / (%ld * tl_g0) * %ld, tl_gs = tl_g1 - tl_f < %ld ? tl_g1 - tl_f : %ld, tl_in = tl_r %% (%ld * tl_g0);\n"
                       "              %s = (int32_t)(tl_f + tl_in %% tl_gs); %s = (int32_t)(tl_in / tl_gs);",
                       group, group, group, group, group, n1.data, n0.data);
        if (k->ngrid == 3) {
            tile_strbuf n2 = {0};
            simt_g_var(&n2, k->block_vars[2]);
            tile_sb_printf(&decode, " %s = (int32_t)tl_z;", n2.data);
            tile_sb_free(&n2);
        }
        tile_sb_puts(&decode, " }\n");
        tile_sb_free(&n0);
        tile_sb_free(&n1);
    } else {
        tile_sb_puts(&decode, "            { int64_t tl_r = tl_tile;");
        for (int d = 0; d < k->ngrid; d++) {
            tile_strbuf n = {0};
            simt_g_var(&n, k->block_vars[d]);
            tile_sb_printf(&decode, " %s = (int32_t)(tl_r %% tl_g%d); tl_r /= tl_g%d;", n.data, d, d);
            tile_sb_free(&n);
        }
        tile_sb_puts(&decode, " }\n");
    }

    tile_sb_puts(helpers, helpers_text);
    wgmma_fn(helpers, m.g.dt, (int)m.g.BN, m.g.bkn);

    const char *t = ptx_type(m.g.dt);
    tile_strbuf kv = {0};
    simt_g_var(&kv, m.g.loop->var);
    char *lo = expr_s(G, m.g.loop->lo), *ext = expr_s(G, m.g.loop->extent);
    char *fillv = expr_s(G, m.g.fill->value);
    char *a0 = expr_s(G, m.g.cpA->regions[0].start[0]), *a1 = expr_s(G, m.g.cpA->regions[0].start[1]);
    char *b0 = expr_s(G, m.g.cpB->regions[0].start[0]), *b1 = expr_s(G, m.g.cpB->regions[0].start[1]);
    char *c0 = expr_s(G, m.g.store->regions[1].start[0]), *c1 = expr_s(G, m.g.store->regions[1].start[1]);
    char *cr = expr_s(G, m.g.C->shape[0]), *cc = expr_s(G, m.g.C->shape[1]);
    tile_sb_printf(&decode, "            const int32_t tl_n = (int32_t)(%s), tl_lo = (int32_t)(%s); (void)tl_lo;\n", ext, lo);
    /* stages of the tile: U iterations each, the last one possibly fewer */
    if (U > 1) tile_sb_printf(&decode, "            const int32_t tl_ns = tl_n > 0 ? (tl_n + %d) / %d : 0;\n", U - 1, U);
    else tile_sb_puts(&decode, "            const int32_t tl_ns = tl_n;\n");

    tile_sb_printf(o, "    /* sm_90a GEMM (src/codegen/sm90.c): %lldx%lldx%lld %s tile, %d stages of %d iteration(s), 1 TMA producer + %d wgmma consumer warpgroup(s) */\n",
                   (long long)m.g.BM, (long long)m.g.BN, (long long)m.g.BK, t, S, U, C);
    tile_sb_puts(o, "#ifdef TL_SM90_OK\n");
    tile_sb_puts(o, "    uint8_t *tl_sb = (uint8_t *)(((unsigned long long)tl_smem + 1023) & ~1023ull);\n");
    tile_sb_printf(o, "    const uint32_t tl_s0 = tl_sa(tl_sb), tl_bar = tl_s0 + %zuu;\n", barOff);
    tile_sb_puts(o, "    int64_t tl_ntiles = 1;\n");
    for (int d = 0; d < k->ngrid; d++) tile_sb_printf(o, "    tl_ntiles *= tl_g%d;\n", d);
    tile_sb_puts(o, "    if (tl_tid == 0) {\n");
    tile_sb_printf(o, "        for (int s = 0; s < %d; s++) { tl_mb_init(tl_bar + 8u * s, 1u); tl_mb_init(tl_bar + 8u * (%d + s), %du); }\n", S, S, C);
    tile_sb_puts(o, "        asm volatile(\"fence.mbarrier_init.release.cluster;\" ::: \"memory\");\n"
                    "        tl_tma_prefetch(&tl_tma0); tl_tma_prefetch(&tl_tma1);\n    }\n    __syncthreads();\n");
    /* producer */
    tile_sb_puts(o, "    if (tl_tid < 128) {\n");
    if (C >= 2) tile_sb_puts(o, "        TL_SETMAXNREG_DEC(40);\n");
    tile_sb_puts(o, "        if (tl_tid == 0) {\n            uint32_t tl_ig = 0;\n");
    tile_sb_puts(o, "            for (int64_t tl_tile = tl_blk; tl_tile < tl_ntiles; tl_tile += (int64_t)gridDim.x) {\n");
    tile_sb_puts(o, decode.data);
    tile_sb_puts(o, "            for (int32_t it = 0; it < tl_ns; it++, tl_ig++) {\n");
    tile_sb_printf(o, "                const uint32_t s = tl_ig %% %du, ph = (tl_ig / %du) & 1u;\n", S, S);
    tile_sb_printf(o, "                tl_mb_wait(tl_bar + 8u * (%d + s), ph ^ 1u);\n", S);
    if (U > 1) tile_sb_printf(o, "                %s = tl_lo + it * %d;\n", kv.data, U);
    else tile_sb_printf(o, "                %s = tl_lo + it;\n", kv.data);
    tile_sb_printf(o, "                tl_mb_expect(tl_bar + 8u * s, %zuu);\n", stage);
    for (int p = 0; p < m.np; p++)
        tile_sb_printf(o, "                tl_tma_load2d(tl_s0 + s * %zuu + %zuu, &tl_tma0, tl_bar + 8u * s, (int32_t)(%s) + %d, (int32_t)(%s));\n", stage, (size_t)p * apanel, a1, p * pcols, a0);
    if (m.g.bkn)
        for (int j = 0; j < nbbox; j++)
            tile_sb_printf(o, "                tl_tma_load2d(tl_s0 + s * %zuu + %zuu, &tl_tma1, tl_bar + 8u * s, (int32_t)(%s) + %d, (int32_t)(%s));\n", stage,
                           aBytes + (size_t)j * (size_t)m.g.BK * (size_t)m.swzB, b1, j * bbox, b0);
    else
        for (int p = 0; p < m.np; p++)
            tile_sb_printf(o, "                tl_tma_load2d(tl_s0 + s * %zuu + %zuu, &tl_tma1, tl_bar + 8u * s, (int32_t)(%s) + %d, (int32_t)(%s));\n", stage, aBytes + (size_t)p * bpanel, b1,
                           p * pcols, b0);
    tile_sb_puts(o, "            }\n            }\n        }\n    } else {\n");
    /* consumers */
    if (C >= 2) tile_sb_puts(o, "        TL_SETMAXNREG_INC(232);\n"); /* 128 x 40 + 256 x 232 <= 65536 */
    tile_sb_puts(o, "        const int tl_cw = tl_tid / 128 - 1, tl_t = tl_tid % 128;\n");
    tile_strbuf fv = {0};
    tile_sb_printf(&fv, "(float)(%s)", fillv); /* the fill converts to the fragment's f32: one rounding */
    tile_sb_printf(o, "        float tl_acc[%d][%d];\n", MT, NR);
    tile_sb_puts(o, "        uint32_t tl_ig = 0;\n");
    tile_sb_puts(o, "        for (int64_t tl_tile = tl_blk; tl_tile < tl_ntiles; tl_tile += (int64_t)gridDim.x) {\n");
    tile_sb_puts(o, decode.data);
    tile_sb_printf(o, "        { const float v = %s;\n#pragma unroll\n        for (int i = 0; i < %d; i++)\n#pragma unroll\n            for (int j = 0; j < %d; j++) tl_acc[i][j] = v; }\n", fv.data, MT, NR);
    tile_sb_free(&fv);
    if (promote) tile_sb_printf(o, "        float tl_part[%d][%d];\n", MT, NR);
    tile_sb_printf(o, "        const uint32_t tl_arow = (uint32_t)(tl_cw * %d) * %uu;\n", MT * 64, (unsigned)m.swz);
    /* B's descriptor: K-major, 32 bytes (one k step) further per kk; N-major (K x N), 16 rows
     * of swzB bytes (two 8-row swizzle atoms) further, atoms along N BK*swzB bytes apart */
    char bdesc[128], adesc[64];
    if (m.g.bkn)
        snprintf(bdesc, sizeof bdesc, "tl_wg_desc_mn(sb + %uu * kk, %uu, %uu, %d)", (unsigned)(16 * m.swzB), (unsigned)(m.g.BK * m.swzB), (unsigned)(8 * m.swzB), layoutB);
    else if (m.np > 1)
        snprintf(bdesc, sizeof bdesc, "tl_wg_desc(sb + %zuu * (kk / 4) + 32u * (kk %% 4), %uu, %d)", bpanel, (unsigned)(8 * m.swz), layout);
    else
        snprintf(bdesc, sizeof bdesc, "tl_wg_desc(sb + 32u * kk, %uu, %d)", (unsigned)(8 * m.swz), layout);
    snprintf(adesc, sizeof adesc, "%uu, %d", (unsigned)(8 * m.swz), layout);
    const int kfull = m.np * m.swz / 32, kper = kfull / U;
    /* full stages: U iterations each; with U > 1 the tile's last stage, of fewer iterations,
     * follows the loop (below) */
    if (U > 1) tile_sb_printf(o, "        const int32_t tl_nf = tl_n > 0 ? tl_n / %d : 0;\n", U);
    else tile_sb_puts(o, "        const int32_t tl_nf = tl_n;\n");
    tile_sb_puts(o, "        for (int32_t it = 0; it < tl_nf; it++, tl_ig++) {\n");
    tile_sb_printf(o, "            const uint32_t s = tl_ig %% %du, ph = (tl_ig / %du) & 1u;\n", S, S);
    tile_sb_puts(o, "            tl_mb_wait(tl_bar + 8u * s, ph);\n");
    tile_sb_printf(o, "            const uint32_t sa = tl_s0 + s * %zuu + tl_arow, sb = tl_s0 + s * %zuu + %zuu;\n", stage, stage, aBytes);
    stage_mma(o, t, (int)m.g.BN, m.g.bkn, MT, m.swz, adesc, bdesc, promote, kfull, 3, apanel);
    if (promote) {
        /* the stage's partial sums are complete: free the stage, then add them in f32 (two
         * register sets alternating by stage, the add overlapping the next stage's wgmma,
         * measured slower on the H200: ptxas fences the wgmma around the alternation) */
        tile_sb_printf(o, "            TL_WG_WAIT(0);\n            if (tl_t == 0) tl_mb_arrive(tl_bar + 8u * (%d + s));\n", S);
        if (m.g.promo) {
            /* the program's promotion nest, from the IR, on both fragments in wgmma's layout,
             * with the loop variable of this stage's iteration (one a stage: match) */
            tile_strbuf an = {0}, pn = {0};
            simt_g_buf(&an, m.g.Cf);
            simt_g_buf(&pn, m.g.Pf);
            tile_sb_printf(o, "            %s = tl_lo + it;\n", kv.data);
            tile_sb_printf(o, "            { float (&%s)[%d] = *reinterpret_cast<float (*)[%d]>(&tl_acc[0][0]);\n", an.data, MT * NR, MT * NR);
            tile_sb_printf(o, "              float (&%s)[%d] = *reinterpret_cast<float (*)[%d]>(&tl_part[0][0]);\n", pn.data, MT * NR, MT * NR);
            /* k ranges over the loop's iterations: index checks that range proves are left out */
            bool ranged = simt_g_var_range(G, m.g.loop->var, m.g.loop->lo, m.g.loop->extent);
            simt_g_block(G, o, 4, "(tl_cw * 128 + tl_t)", m.g.promo);
            if (ranged) simt_g_var_range_clear(G, m.g.loop->var);
            tile_sb_puts(o, "            }\n        }\n");
            tile_sb_free(&an);
            tile_sb_free(&pn);
        } else
            tile_sb_printf(o, "#pragma unroll\n            for (int i = 0; i < %d; i++)\n#pragma unroll\n                for (int j = 0; j < %d; j++) tl_acc[i][j] += tl_part[i][j];\n        }\n", MT, NR);
    } else if (S >= 2) {
        tile_sb_puts(o, "            TL_WG_WAIT(1);\n");
        tile_sb_printf(o, "            if (it > 0 && tl_t == 0) tl_mb_arrive(tl_bar + 8u * (%d + (tl_ig - 1u) %% %du));\n", S, S);
        tile_sb_puts(o, "        }\n        TL_WG_WAIT(0);\n");
        /* the tile's last full stage: free it before the epilogue (the producer is already
         * filling the next tile's stages) */
        tile_sb_printf(o, "        if (tl_nf > 0 && tl_t == 0) tl_mb_arrive(tl_bar + 8u * (%d + (tl_ig - 1u) %% %du));\n", S, S);
    } else {
        tile_sb_printf(o, "            TL_WG_WAIT(0);\n            if (tl_t == 0) tl_mb_arrive(tl_bar + 8u * (%d + s));\n        }\n", S);
    }
    if (U > 1) {
        /* the last stage holds q = n mod U iterations: its first q * kper k-steps, each count
         * its own straight run of wgmma ending in a wait (a branch between the wgmmas of one
         * group makes ptxas serialise them); the box's columns past the loop's end are loaded
         * and not used */
        tile_sb_printf(o, "        if (tl_n > 0 && tl_n %% %d != 0) {\n", U);
        tile_sb_printf(o, "            const int tl_q = tl_n %% %d;\n", U);
        tile_sb_printf(o, "            const uint32_t s = tl_ig %% %du, ph = (tl_ig / %du) & 1u;\n", S, S);
        tile_sb_puts(o, "            tl_mb_wait(tl_bar + 8u * s, ph);\n");
        tile_sb_printf(o, "            const uint32_t sa = tl_s0 + s * %zuu + tl_arow, sb = tl_s0 + s * %zuu + %zuu;\n", stage, stage, aBytes);
        for (int q = 1; q < U; q++) {
            tile_sb_printf(o, "            %sif (tl_q == %d) {\n", q > 1 ? "else " : "", q);
            stage_mma(o, t, (int)m.g.BN, m.g.bkn, MT, m.swz, adesc, bdesc, promote, q * kper, 4, apanel);
            tile_sb_puts(o, "                TL_WG_WAIT(0);\n            }\n");
        }
        tile_sb_printf(o, "            if (tl_t == 0) tl_mb_arrive(tl_bar + 8u * (%d + s));\n", S);
        if (promote)
            tile_sb_printf(o, "#pragma unroll\n            for (int i = 0; i < %d; i++)\n#pragma unroll\n                for (int j = 0; j < %d; j++) tl_acc[i][j] += tl_part[i][j];\n", MT, NR);
        tile_sb_puts(o, "            tl_ig++;\n        }\n");
    }
    if (m.g.nepi > 0) {
        /* the epilogue's T.Parallel nests, from the IR, on the accumulator in wgmma's layout
         * (the layout pass's): the registers are the fragment's slots, the thread index the
         * consumers' */
        tile_strbuf an = {0};
        simt_g_buf(&an, m.g.Cf);
        tile_sb_printf(o, "        { float (&%s)[%d] = *reinterpret_cast<float (*)[%d]>(&tl_acc[0][0]);\n", an.data, MT * NR, MT * NR);
        for (int q = 0; q < m.g.nepi; q++) simt_g_block(G, o, 3, "(tl_cw * 128 + tl_t)", m.g.epi[q]);
        tile_sb_puts(o, "        }\n");
        tile_sb_free(&an);
    }
    if (m.tstore) {
        /* epilogue: each consumer writes its rows of the tile, rounded, into its part of the
         * staging tile (boxes of 128-byte rows: 64 columns of 16 bits or 128 of 8, 16-byte chunks swizzled by the row
         * mod 8, which spreads a warp's stores over all banks), then one thread stores the boxes
         * with TMA (clipped at C's bounds) and the warpgroup goes on to its next tile; the
         * staging tile is rewritten only once the previous tile's stores have read it */
        const unsigned boxb = (unsigned)(MT * 64 * 128);
        const int bcols = 128 / m.ces; /* columns of one box */
        tile_sb_printf(o, "        { const uint32_t tl_cs = tl_s0 + %zuu + (uint32_t)tl_cw * %zuu;\n", cOff, m.cbytes / (size_t)C);
        tile_sb_puts(o, "        if (tl_t == 0) TL_BULK_WAIT_READ0();\n        TL_BAR_SYNC(1 + tl_cw, 128);\n");
        tile_sb_puts(o, "        const uint32_t tl_rl = (uint32_t)(tl_t / 32) * 16u + (uint32_t)(tl_t % 32) / 4u, tl_x = (uint32_t)(tl_t % 32) / 4u;\n");
        tile_sb_printf(o, "#pragma unroll\n        for (int i = 0; i < %d; i++)\n#pragma unroll\n        for (int h = 0; h < 2; h++)\n#pragma unroll\n        for (int j = 0; j < %d; j++)\n", MT, (int)m.g.BN / 8);
        /* the thread's column pair 8j + 2(t%4) is byte 8j*ces + 2(t%4)*ces of the tile's row:
         * box (8j*ces) / 128, 16-byte chunk ((8j*ces) % 128) / 16 (swizzled by the row), and
         * within the chunk (8j*ces) % 16 + 2(t%4)*ces */
        if (m.ces == 2) {
            const char *cvt = m.g.C->dtype == TILE_DT_F16 ? "tl_pack_f16" : "tl_pack_bf16";
            tile_sb_printf(o, "            tl_st_shared32(tl_cs + (uint32_t)(j / 8) * %uu + (tl_rl + (uint32_t)(i * 64 + h * 8)) * 128u + ((((uint32_t)j %% 8u) ^ tl_x) << 4) + (uint32_t)(tl_t %% 4) * 4u,\n", boxb);
            tile_sb_printf(o, "                           %s(tl_acc[i][j * 4 + h * 2], tl_acc[i][j * 4 + h * 2 + 1]));\n", cvt);
        } else {
            const char *f = m.g.C->dtype == TILE_DT_FP8_E4M3 ? "TCV_E4M3" : "TCV_E5M2";
            tile_sb_printf(o, "            tl_st_shared16(tl_cs + (uint32_t)(j / 16) * %uu + (tl_rl + (uint32_t)(i * 64 + h * 8)) * 128u + (((((uint32_t)j %% 16u) / 2u) ^ tl_x) << 4) + ((uint32_t)j %% 2u) * 8u + (uint32_t)(tl_t %% 4) * 2u,\n", boxb);
            tile_sb_printf(o, "                           tl_encode_f32(&%s, tl_acc[i][j * 4 + h * 2]) | (tl_encode_f32(&%s, tl_acc[i][j * 4 + h * 2 + 1]) << 8));\n", f, f);
        }
        tile_sb_puts(o, "        TL_FENCE_PROXY_ASYNC();\n        TL_BAR_SYNC(1 + tl_cw, 128);\n        if (tl_t == 0) {\n");
        for (int jb = 0; jb < (int)m.g.BN / bcols; jb++)
            tile_sb_printf(o, "            tl_tma_store2d(&tl_tma2, tl_cs + %uu, (int32_t)(%s) + %d, (int32_t)(%s) + tl_cw * %d);\n", (unsigned)jb * boxb, c1, jb * bcols, c0, MT * 64);
        tile_sb_puts(o, "            TL_BULK_COMMIT();\n        }\n        }\n        }\n");
        /* the last stores have finished before the block ends */
        tile_sb_puts(o, "        if (tl_t == 0) TL_BULK_WAIT0();\n    }\n");
    } else {
    /* epilogue: the accumulator layout of wgmma, clipped stores */
    tile_sb_printf(o, "        const int64_t tl_r0 = (int64_t)(%s) + tl_cw * %d + (tl_t / 32) * 16 + (tl_t %% 32) / 4;\n", c0, MT * 64);
    tile_sb_printf(o, "        const int64_t tl_c0 = (int64_t)(%s) + (tl_t %% 4) * 2;\n", c1);
    tile_sb_printf(o, "        const int64_t tl_M = (int64_t)(%s), tl_N = (int64_t)(%s);\n", cr, cc);
    tile_sb_printf(o, "#pragma unroll\n        for (int i = 0; i < %d; i++)\n#pragma unroll\n        for (int h = 0; h < 2; h++) {\n", MT);
    tile_sb_puts(o, "            const int64_t r = tl_r0 + i * 64 + h * 8;\n            if (r < 0 || r >= tl_M) continue;\n");
    tile_sb_printf(o, "#pragma unroll\n            for (int j = 0; j < %d; j++) {\n", (int)m.g.BN / 8);
    tile_sb_puts(o, "                const int64_t c = tl_c0 + j * 8;\n");
    simt_gemm_store_pair(G, o, 4, m.g.C, "tl_acc[i][j * 4 + h * 2]", "tl_acc[i][j * 4 + h * 2 + 1]");
    tile_sb_puts(o, "            }\n        }\n        }\n    }\n");
    }
    tile_sb_puts(o, "#else\n    __trap(); /* compiled for an architecture without wgmma/TMA: run with sm_90a */\n#endif\n");

    tile_sb_free(&decode);
    free(lo); free(ext); free(fillv); free(a0); free(a1); free(b0); free(b1); free(c0); free(c1); free(cr); free(cc);
    tile_sb_free(&kv);
    return true;
}
