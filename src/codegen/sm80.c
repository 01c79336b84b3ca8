/* sm80.c — the Ampere / Ada (sm_80 .. sm_89) lowering of tile-form GEMM kernels with
 * mma.sync (docs/backends-gpu.md, "Ampere/Ada (mma.sync)").
 *
 * It takes the same kernel shape as the Hopper lowering (sm90.c):
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
 * with dt float16 or bfloat16 (or, on sm_89 and later, float8_e4m3 / float8_e5m2 with B stored
 * N x K and a 16-bit result C), A, B and C rank-2 global tensors, rows of BK * sizeof(dt) = 32,
 * 64 or 128 bytes, and the T/32 warps tiling the BM x BN block in warp tiles whose sides are
 * multiples of 16 (at most 128 f32 accumulators a thread). It becomes:
 *
 *   - a ring of S shared stages (num_stages, as many as fit in the architecture's shared
 *     memory), each holding the A tile (BM rows of BK) and the B tile (BN rows of BK, or BK
 *     rows of BN for B stored K x N) in 16-byte chunks XOR-swizzled by row, so that the 8
 *     row addresses of one ldmatrix fall in 8 different bank groups;
 *   - the copies as cp.async.cg 16-byte chunks by all threads, one commit group per stage,
 *     S-1 stages in flight ahead of the stage computed on (cp.async.wait_group S-2 and a
 *     barrier per iteration). A chunk outside the tensor is a zero-fill cp.async (src-size
 *     0); a chunk that straddles the tensor's last column, or whose address is not 16-byte
 *     aligned, is loaded element by element (zeros outside), so any shape is right;
 *   - per k step of 32 bytes: ldmatrix.x4 of the warp's A fragments (16 rows each) and of its
 *     B fragments (two n8 tiles each; ldmatrix.x4.trans for B stored K x N), then
 *     mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16} on accumulators in registers in
 *     mma's layout (thread t of a warp: rows t/4 and t/4 + 8 of each 16-row tile, columns
 *     2(t%4), +1 of each 8-column tile). fp8: m16n8k32.{e4m3,e5m2}, whose fragments hold the
 *     same bytes as the 16-bit ones (so the same ldmatrix), each started from zero and added
 *     to the accumulators in f32 (mma's fp8 sums carry fewer bits than f32, as wgmma's);
 *   - the fill initialises the accumulators, and the final copy stores them clipped at the
 *     tensor bounds with the rounding of every store (pairs as one 4- or 8-byte store).
 *
 * The result differs from the interpreter only by the order of f32 additions inside mma.
 * Taken for arch sm_80 .. sm_89 (simt_options.sm 80..89), and on sm_90a when the wgmma
 * lowering declines the kernel or TILE_CUDA_MMA_SYNC=1 asks for this one first;
 * TILE_CUDA_MMA_SYNC=0 turns it off. Anything else keeps the portable lowering of simt.c.
 */
#include "simt_gen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct sm80 {
    simt_gemm_shape g;     /* the kernel's GEMM main loop (simt_gen.h) */
    int warps, wgm, wgn;   /* warps, and the warp grid: wgm along M x wgn along N */
    int wm, wn;            /* a warp's tile: wm x wn (multiples of 16) */
    int stages;
} sm80;

/* The shared memory one block may take on architecture sm (the opt-in maximum). */
static size_t smem_max(int sm) {
    if (sm >= 90) return 227 * 1024;
    if (sm == 80 || sm == 87) return 163 * 1024;
    return 99 * 1024; /* sm_86, sm_89 */
}

/* threads: the block size of the launch (the program's, or the consumer warpgroups of the
 * layout pass's wgmma plan when no Hopper lowering took the kernel) */
static bool match(gen *G, const ir_stmt *k, sm80 *m, int sm, int threads) {
    memset(m, 0, sizeof *m);
    if (!simt_match_gemm_kernel(G, k, &m->g)) return false;
    /* epilogue nests: not emitted by this lowering (the layouts are the portable ones) */
    if (m->g.nepi > 0 || m->g.promo) return false;
    /* fp8 (m16n8k32 .e4m3/.e5m2): sm_89 and later; B stored N x K only (ldmatrix .trans moves
     * 16-bit elements, so K x N fp8 tiles cannot be read as mma's B fragments) */
    if (m->g.esize == 1 && (sm < 89 || m->g.bkn)) return false;
    /* fp8 with an f32 result: mma's fp8 sums carry fewer bits than f32, which an f32 result
     * would show (a 16-bit or fp8 result hides it) */
    if (m->g.esize == 1 && m->g.C->dtype == TILE_DT_F32) return false;
    const int64_t bm = m->g.BM, bn = m->g.BN, bk = m->g.BK;
    /* a k step is 32 bytes (16 f16/bf16 or 32 fp8 elements); rows of 32, 64 or 128 bytes */
    if (bk * m->g.esize != 32 && bk * m->g.esize != 64 && bk * m->g.esize != 128) return false;
    if (bm < 16 || bn < 16 || bm % 16 || bn % 16 || bm > 512 || bn > 512) return false;
    /* the warp grid: warp tiles of multiples of 16 in both directions, at most 128
     * accumulators a thread, the smallest wm + wn (fewest ldmatrix per mma) */
    if (threads <= 0 || threads % 32 || threads > 1024) return false;
    m->warps = threads / 32;
    int best = -1;
    for (int gm = 1; gm <= m->warps; gm++) {
        if (m->warps % gm) continue;
        int gn = m->warps / gm;
        if (bm % (16 * gm) || bn % (16 * gn)) continue;
        int wm = (int)bm / gm, wn = (int)bn / gn;
        if ((wm / 16) * (wn / 8) * 4 > 128) continue;
        if (best < 0 || wm + wn < best || (wm + wn == best && wm > m->wm)) {
            best = wm + wn;
            m->wgm = gm; m->wgn = gn; m->wm = wm; m->wn = wn;
        }
    }
    if (best < 0) return false;
    size_t stage = (size_t)(bm + bn) * (size_t)bk * (size_t)m->g.esize, cap = smem_max(sm);
    int st = m->g.loop->loop_kind == IR_LOOP_PIPELINED && m->g.loop->num_stages > 0 ? m->g.loop->num_stages : 2;
    if (st > 8) st = 8;
    while (st > 1 && (size_t)st * stage > cap) st--;
    if ((size_t)st * stage > cap) return false;
    m->stages = st;
    return true;
}

static const char *helpers_text =
    "/* ---- src/codegen/sm80.c: mma.sync helpers (cp.async, ldmatrix, mma) ---- */\n"
    "#ifndef TL_SM80_HELPERS\n#define TL_SM80_HELPERS 1\n"
    "#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800\n#define TL_SM80_OK 1\n#endif\n"
    "#ifdef TL_SM80_OK\n"
    "TL_FN uint32_t tl80_sa(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }\n"
    "/* 16 bytes global -> shared, the first `n` (16 or 0: zero fill) read */\n"
    "TL_FN void tl80_cp16(uint32_t dst, const void *src, uint32_t n) {\n"
    "    asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\" :: \"r\"(dst), \"l\"(src), \"r\"(n) : \"memory\");\n"
    "}\n"
    "#define TL80_COMMIT() asm volatile(\"cp.async.commit_group;\" ::: \"memory\")\n"
    "#define TL80_WAIT(n) asm volatile(\"cp.async.wait_group %0;\" :: \"n\"(n) : \"memory\")\n"
    "TL_FN void tl80_ldm4(uint32_t (&r)[4], uint32_t a) {\n"
    "    asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\" : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"(a));\n"
    "}\n"
    "TL_FN void tl80_ldm4t(uint32_t (&r)[4], uint32_t a) {\n"
    "    asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\" : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"(a));\n"
    "}\n"
    "#define TL80_MMA(T) \\\n"
    "TL_FN void tl80_mma_##T(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) { \\\n"
    "    asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.\" #T \".\" #T \".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\" \\\n"
    "                 : \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3]) : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b0), \"r\"(b1)); \\\n"
    "}\n"
    "TL80_MMA(f16)\nTL80_MMA(bf16)\n"
    "#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 890\n"
    "/* fp8: d += (0 + a b) — the products summed from zero, added to d in f32 */\n"
    "#define TL80_MMA8(T) \\\n"
    "TL_FN void tl80_mma_##T(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) { \\\n"
    "    float p0, p1, p2, p3; \\\n"
    "    asm volatile(\"mma.sync.aligned.m16n8k32.row.col.f32.\" #T \".\" #T \".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %10, %10, %10};\" \\\n"
    "                 : \"=f\"(p0), \"=f\"(p1), \"=f\"(p2), \"=f\"(p3) : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b0), \"r\"(b1), \"f\"(0.0f)); \\\n"
    "    d[0] += p0; d[1] += p1; d[2] += p2; d[3] += p3; \\\n"
    "}\n"
    "TL80_MMA8(e4m3)\nTL80_MMA8(e5m2)\n"
    "#endif\n"
    "#endif\n"
    "#endif\n";

/* `code` for expression e */
static char *expr_s(gen *G, const ir_expr *e) {
    tile_strbuf t = {0};
    simt_g_expr(G, &t, e);
    return t.data ? t.data : tile_xstrdup("0");
}

/* The byte offset in a tile of nc 16-byte chunks per row of (row r, chunk c): the chunk index
 * XOR-swizzled so that 8 consecutive rows at one chunk fall in 8 different 16-byte bank
 * groups (nc a multiple of 8: c ^ (r % 8); nc = 1, 2 or 4: rows share a 128-byte line, and
 * the XOR takes the line index instead; other nc: no swizzle). */
static void swz(tile_strbuf *o, int nc, const char *r, const char *c) {
    if (nc % 8 == 0) tile_sb_printf(o, "((uint32_t)(%s) * %du + ((uint32_t)(%s) ^ ((uint32_t)(%s) & 7u))) * 16u", r, nc, c, r);
    else if (nc == 1 || nc == 2 || nc == 4)
        tile_sb_printf(o, "((uint32_t)(%s) * %du + ((uint32_t)(%s) ^ (((uint32_t)(%s) / %du) & %du))) * 16u", r, nc, c, r, 8 / nc, nc - 1);
    else tile_sb_printf(o, "((uint32_t)(%s) * %du + (uint32_t)(%s)) * 16u", r, nc, c);
}

/* The loads of one tile (rows x nc chunks of 8 elements) of global tensor `g` (rows R x
 * columns Cc, start r0, c0) into shared address `dst` (a uint32_t expression). */
static void load_tile(gen *G, tile_strbuf *o, const ir_buffer *g, const char *r0, const char *c0, int64_t rows, int nc, const char *dst, int threads, int esize) {
    const int ce = 16 / esize; /* elements a chunk */
    const char *et = esize == 2 ? "uint16_t" : "uint8_t";
    tile_strbuf name = {0};
    simt_g_buf(&name, g);
    char *R = expr_s(G, g->shape[0]), *Cc = expr_s(G, g->shape[1]);
    int64_t total = rows * nc;
    tile_sb_puts(o, "            {\n");
    tile_sb_printf(o, "                const int64_t tl_R = (int64_t)(%s), tl_C = (int64_t)(%s), tl_gr = (int64_t)(%s), tl_gc = (int64_t)(%s);\n", R, Cc, r0, c0);
    tile_sb_printf(o, "#pragma unroll\n                for (int tl_i = 0; tl_i < %lld; tl_i++) {\n", (long long)((total + threads - 1) / threads));
    tile_sb_printf(o, "                    const int tl_q = tl_tid + tl_i * %d;\n", threads);
    if (total % threads) tile_sb_printf(o, "                    if (tl_q >= %lld) break;\n", (long long)total);
    tile_sb_printf(o, "                    const int tl_r = tl_q / %d, tl_c = tl_q %% %d;\n", nc, nc);
    tile_sb_printf(o, "                    const uint32_t tl_d = %s + ", dst);
    swz(o, nc, "tl_r", "tl_c");
    tile_sb_puts(o, ";\n");
    tile_sb_printf(o, "                    const int64_t tl_y = tl_gr + tl_r, tl_x = tl_gc + tl_c * %d, tl_e = tl_y * tl_C + tl_x;\n", ce);
    tile_sb_printf(o, "                    const %s *tl_src = (const %s *)%s;\n", et, et, name.data);
    tile_sb_printf(o, "                    if (tl_y >= 0 && tl_y < tl_R && tl_x >= 0 && tl_x + %d <= tl_C && (tl_e & %d) == 0) tl80_cp16(tl_d, tl_src + tl_e, 16u);\n", ce, ce - 1);
    tile_sb_printf(o, "                    else if (tl_y < 0 || tl_y >= tl_R || tl_x + %d <= 0 || tl_x >= tl_C) tl80_cp16(tl_d, tl_src, 0u);\n", ce);
    tile_sb_printf(o, "                    else {\n"
                      "                        %s *tl_p = (%s *)(tl_smem + (tl_d - tl80_sa(tl_smem)));\n"
                      "#pragma unroll\n"
                      "                        for (int tl_u = 0; tl_u < %d; tl_u++) tl_p[tl_u] = tl_x + tl_u >= 0 && tl_x + tl_u < tl_C ? tl_src[tl_e + tl_u] : (%s)0;\n"
                      "                    }\n", et, et, ce, et);
    tile_sb_puts(o, "                }\n            }\n");
    free(R);
    free(Cc);
    tile_sb_free(&name);
}

bool sm80_gemm_kernel(gen *G, const ir_stmt *k, simt_launch *L, tile_strbuf *helpers, tile_strbuf *o) {
    sm80 m;
    if (tb_opt_int(simt_g_options(G)->opts, TB_OPT_cuda_mma_sync) == 0) return false;
    int sm = simt_g_options(G)->sm;
    if (sm < 80) return false;
    if (!match(G, k, &m, sm, L->threads)) return false;
    const int S = m.stages, T = L->threads, MI = m.wm / 16, NI = m.wn / 8, NCA = (int)m.g.BK * m.g.esize / 16, NCB = m.g.bkn ? (int)m.g.BN / 8 : NCA;
    const size_t aBytes = (size_t)(m.g.BM * m.g.BK) * (size_t)m.g.esize, stage = aBytes + (size_t)(m.g.BN * m.g.BK) * (size_t)m.g.esize;
    const char *t = m.g.dt == TILE_DT_F16 ? "f16" : m.g.dt == TILE_DT_BF16 ? "bf16" : m.g.dt == TILE_DT_FP8_E4M3 ? "e4m3" : "e5m2";

    L->smem = (size_t)S * stage;
    snprintf(L->lowering, sizeof L->lowering, "sm80-mma");
    tile_sb_puts(helpers, helpers_text);

    tile_strbuf kv = {0};
    simt_g_var(&kv, m.g.loop->var);
    char *lo = expr_s(G, m.g.loop->lo), *ext = expr_s(G, m.g.loop->extent), *fillv = expr_s(G, m.g.fill->value);
    char *a0 = expr_s(G, m.g.cpA->regions[0].start[0]), *a1 = expr_s(G, m.g.cpA->regions[0].start[1]);
    char *b0 = expr_s(G, m.g.cpB->regions[0].start[0]), *b1 = expr_s(G, m.g.cpB->regions[0].start[1]);
    char *c0 = expr_s(G, m.g.store->regions[1].start[0]), *c1 = expr_s(G, m.g.store->regions[1].start[1]);
    char *cr = expr_s(G, m.g.C->shape[0]), *cc = expr_s(G, m.g.C->shape[1]);

    tile_sb_printf(o, "    /* mma.sync GEMM (src/codegen/sm80.c): %lldx%lldx%lld %s tile, %d stages, %d warps as %dx%d of %dx%d%s */\n", (long long)m.g.BM,
                   (long long)m.g.BN, (long long)m.g.BK, t, S, m.warps, m.wgm, m.wgn, m.wm, m.wn, m.g.bkn ? ", B stored K x N" : "");
    if (m.g.esize == 1) tile_sb_puts(o, "#if defined(TL_SM80_OK) && (!defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 890)\n");
    else tile_sb_puts(o, "#ifdef TL_SM80_OK\n");
    tile_sb_puts(o, "    const uint32_t tl_s0 = tl80_sa(tl_smem);\n");
    tile_sb_printf(o, "    const int tl_lane = tl_tid %% 32, tl_wid = tl_tid / 32, tl_wm = tl_wid %% %d, tl_wn = tl_wid / %d;\n", m.wgm, m.wgm);
    tile_sb_printf(o, "    const int32_t tl_n = (int32_t)(%s), tl_lo = (int32_t)(%s);\n", ext, lo);
    tile_sb_printf(o, "    float tl_acc[%d][%d][4];\n", MI, NI);
    tile_sb_printf(o, "    { const float v = (float)(%s);\n#pragma unroll\n    for (int i = 0; i < %d; i++)\n#pragma unroll\n        for (int j = 0; j < %d; j++)\n"
                      "#pragma unroll\n            for (int e = 0; e < 4; e++) tl_acc[i][j][e] = v; }\n",
                   fillv, MI, NI);
    /* the loads of iteration tl_j into stage tl_st */
    tile_strbuf ld = {0};
    tile_sb_printf(&ld, "            %s = tl_lo + tl_j;\n", kv.data);
    char bdst[48];
    snprintf(bdst, sizeof bdst, "tl_st + %zuu", aBytes);
    load_tile(G, &ld, m.g.A, a0, a1, m.g.BM, NCA, "tl_st", T, m.g.esize);
    load_tile(G, &ld, m.g.B, b0, b1, m.g.bkn ? m.g.BK : m.g.BN, NCB, bdst, T, m.g.esize);
    /* prologue: the first S-1 iterations' loads, one commit group each (empty ones too, so
     * that wait_group counts stay uniform) */
    if (S >= 2) {
        tile_sb_printf(o, "    for (int32_t tl_j = 0; tl_j < %d; tl_j++) {\n        if (tl_j < tl_n) {\n", S - 1);
        tile_sb_printf(o, "            const uint32_t tl_st = tl_s0 + (uint32_t)tl_j * %zuu;\n", stage);
        tile_sb_puts(o, ld.data);
        tile_sb_puts(o, "        }\n        TL80_COMMIT();\n    }\n");
    }
    tile_sb_puts(o, "    for (int32_t tl_it = 0; tl_it < tl_n; tl_it++) {\n");
    if (S >= 2) {
        /* stage tl_it has landed (this thread's copies), and every thread's (barrier); the
         * barrier also says that all warps are done with the stage the next loads overwrite,
         * which was computed on in the previous iteration */
        tile_sb_printf(o, "        TL80_WAIT(%d);\n        __syncthreads();\n", S - 2);
        tile_sb_printf(o, "        { const int32_t tl_j = tl_it + %d;\n        if (tl_j < tl_n) {\n", S - 1);
        tile_sb_printf(o, "            const uint32_t tl_st = tl_s0 + (uint32_t)(tl_j %% %d) * %zuu;\n", S, stage);
        tile_sb_puts(o, ld.data);
        tile_sb_puts(o, "        }\n        TL80_COMMIT(); }\n");
        tile_sb_printf(o, "        const uint32_t tl_pa = tl_s0 + (uint32_t)(tl_it %% %d) * %zuu, tl_pb = tl_pa + %zuu;\n", S, stage, aBytes);
    } else {
        tile_sb_puts(o, "        { const int32_t tl_j = tl_it;\n            const uint32_t tl_st = tl_s0;\n");
        tile_sb_puts(o, ld.data);
        tile_sb_puts(o, "        TL80_COMMIT(); }\n        TL80_WAIT(0);\n        __syncthreads();\n");
        tile_sb_printf(o, "        const uint32_t tl_pa = tl_s0, tl_pb = tl_s0 + %zuu;\n", aBytes);
    }
    /* the k steps of 32 bytes: 16 f16/bf16 elements (m16n8k16) or 32 fp8 (m16n8k32) */
    tile_sb_printf(o, "#pragma unroll\n        for (int kk = 0; kk < %d; kk++) {\n", (int)m.g.BK * m.g.esize / 32);
    tile_sb_printf(o, "            uint32_t tl_a[%d][4], tl_b[%d][4];\n", MI, NI / 2);
    tile_sb_printf(o, "#pragma unroll\n            for (int i = 0; i < %d; i++) tl80_ldm4(tl_a[i], tl_pa + ", MI);
    char rx[96], cx[96];
    snprintf(rx, sizeof rx, "tl_wm * %d + i * 16 + tl_lane %% 16", m.wm);
    swz(o, NCA, rx, "kk * 2 + tl_lane / 16");
    tile_sb_puts(o, ");\n");
    tile_sb_printf(o, "#pragma unroll\n            for (int j = 0; j < %d; j++) %s(tl_b[j], tl_pb + ", NI / 2, m.g.bkn ? "tl80_ldm4t" : "tl80_ldm4");
    if (m.g.bkn) {
        snprintf(cx, sizeof cx, "(tl_wn * %d + j * 16) / 8 + tl_lane / 16", m.wn);
        swz(o, NCB, "kk * 16 + ((tl_lane / 8) % 2) * 8 + tl_lane % 8", cx);
    } else {
        snprintf(rx, sizeof rx, "tl_wn * %d + j * 16 + (tl_lane / 16) * 8 + tl_lane %% 8", m.wn);
        swz(o, NCB, rx, "kk * 2 + (tl_lane / 8) % 2");
    }
    tile_sb_puts(o, ");\n");
    tile_sb_printf(o, "#pragma unroll\n            for (int i = 0; i < %d; i++)\n#pragma unroll\n                for (int j = 0; j < %d; j++)\n", MI, NI);
    tile_sb_printf(o, "                    tl80_mma_%s(tl_acc[i][j], tl_a[i], tl_b[j / 2][(j %% 2) * 2], tl_b[j / 2][(j %% 2) * 2 + 1]);\n", t);
    tile_sb_puts(o, "        }\n");
    if (S < 2) tile_sb_puts(o, "        __syncthreads();\n");
    tile_sb_puts(o, "    }\n");
    tile_sb_puts(o, "    TL80_WAIT(0);\n");
    /* epilogue: mma's accumulator layout, clipped stores */
    tile_sb_printf(o, "    const int64_t tl_r0 = (int64_t)(%s) + tl_wm * %d + tl_lane / 4, tl_c0 = (int64_t)(%s) + tl_wn * %d + (tl_lane %% 4) * 2;\n", c0, m.wm, c1,
                   m.wn);
    tile_sb_printf(o, "    const int64_t tl_M = (int64_t)(%s), tl_N = (int64_t)(%s);\n", cr, cc);
    tile_sb_printf(o, "#pragma unroll\n    for (int i = 0; i < %d; i++)\n#pragma unroll\n    for (int h = 0; h < 2; h++) {\n", MI);
    tile_sb_puts(o, "        const int64_t r = tl_r0 + i * 16 + h * 8;\n        if (r < 0 || r >= tl_M) continue;\n");
    tile_sb_printf(o, "#pragma unroll\n        for (int j = 0; j < %d; j++) {\n", NI);
    tile_sb_puts(o, "            const int64_t c = tl_c0 + j * 8;\n            const float x0 = tl_acc[i][j][h * 2], x1 = tl_acc[i][j][h * 2 + 1];\n");
    simt_gemm_store_pair(G, o, 3, m.g.C, "x0", "x1");
    tile_sb_puts(o, "        }\n    }\n");
    tile_sb_puts(o, "#else\n    __trap(); /* compiled for an architecture without mma.sync m16n8k16 / cp.async: run with sm_80 or later (fp8: sm_89) */\n#endif\n");

    tile_sb_free(&ld);
    free(lo); free(ext); free(fillv); free(a0); free(a1); free(b0); free(b1); free(c0); free(c1); free(cr); free(cc);
    tile_sb_free(&kv);
    return true;
}
