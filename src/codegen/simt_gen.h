/* simt_gen.h — internal interface between the SIMT generator (simt.c) and its
 * architecture-specific lowerings (sm90.c, sm90_attn.c, sm80.c). Not a public API. */
#ifndef TILE_SIMT_GEN_H
#define TILE_SIMT_GEN_H

#include "simt.h"

#include <string.h>

/* The layout pass's wgmma plan for kernel statement k (src/opt/layout.c): the number of
 * consumer warpgroups (0: no plan) and, in *mt, the m64 tiles each one holds. */
static inline int simt_wg_plan(const ir_stmt *k, int *mt) {
    if (!k || !k->lower || !k->lower->kind || strcmp(k->lower->kind, "wgmma-warpgroups") != 0) return 0;
    if (mt) *mt = k->lower->iparam[1];
    return k->lower->iparam[0];
}

typedef struct gen gen;
/* A hook called for every expression simt_g_expr generates (loads of register fragments,
 * sm90_attn.c's fast-math forms): writes the expression's C code and returns true, or
 * returns false for the generator's own code. */
typedef bool (*simt_load_hook)(void *ctx, tile_strbuf *o, const ir_expr *e);

/* The C expression of e (IR rules; run-time error sites registered as usual). */
void simt_g_expr(gen *G, tile_strbuf *o, const ir_expr *e);
/* Names the generator gives variables and buffers. */
void simt_g_var(tile_strbuf *o, const ir_var *v);
void simt_g_buf(tile_strbuf *o, const ir_buffer *b);
/* The statement b[off] = v (v: a C expression of dtype vd), converted like every store,
 * indented `indent` levels. */
void simt_g_store(gen *G, tile_strbuf *o, int indent, const ir_buffer *b, const char *off, const char *v, tile_dtype vd);
/* Index of global buffer b in the plan's buffers, or -1. */
int simt_g_bufarg(gen *G, const ir_buffer *b);
const simt_options *simt_g_options(gen *G);
/* Report an error (the first one wins). */
void simt_g_fail(gen *G, tile_loc loc, const char *msg);
/* The kernel's function (its lowering decisions: ir_explain_stmt, ir.h). */
const ir_func *simt_g_func(gen *G);

/* The GEMM main loop both tensor-core GEMM lowerings (sm90.c, sm80.c) take, found by
 * simt_match_gemm_kernel (tc_gemm.c):
 *
 *     with T.Kernel(...): A_s, B_s = T.alloc_shared(...) (two); C_f = T.alloc_fragment((BM, BN), f32)
 *         T.fill(C_f, v)
 *         for k in T.Pipelined(n, ...) (or serial): T.copy(A[..], A_s); T.copy(B[..], B_s)   (either order)
 *                                                   T.gemm(A_s, B_s, C_f[, transpose_B])
 *         T.copy(C_f, C[..])
 *
 * or its promoted form, where each iteration's product goes to a second fragment P_f and a
 * T.Parallel nest (the promotion nest) adds it to C_f, scaled as it likes (DeepSeek-V3's
 * per-block scales):
 *
 *             T.gemm(A_s, B_s, P_f, transpose_B=True, clear_accum=True)
 *             for i, j in T.Parallel(BM, BN): C_f[i, j] += P_f[i, j] * ...
 *
 * A, B, C rank-2 global tensors (kernel arguments); each copy's box = its shared tile's
 * constant shape; A_s (BM, BK), B_s (BN, BK) or, transpose_B=False, (BK, BN); dtype f16,
 * bf16 or fp8 (e4m3/e5m2) for both; C f32, f16, bf16 or fp8. The lowerings add their own
 * limits (tile sizes, threads, alignment, stages, fp8 with an f32 result). */
typedef struct simt_gemm_shape {
    const ir_stmt *fill, *loop, *cpA, *cpB, *gemm, *store;
    /* epilogue: T.Parallel nests on C_f between the loop and the store (element-wise on the
     * accumulator, reading any buffer the kernel does not write), in order; C staged through
     * a shared tile of C's dtype used nowhere else (T.copy(C_f, C_s); T.copy(C_s, C[..]):
     * store is then the second copy) */
    const ir_stmt *epi[8];
    int nepi;
    const ir_buffer *Cs;
    /* the promoted form: the K loop's fourth statement, a T.Parallel nest reading P_f (the
     * gemm's clear_accum result) and updating C_f; NULL otherwise */
    const ir_stmt *promo;
    const ir_buffer *Pf;
    const ir_buffer *As, *Bs, *Cf, *A, *B, *C;
    int64_t BM, BN, BK;
    bool bkn;  /* B stored K x N (transpose_B=False): B_s is (BK, BN) */
    int esize; /* bytes an input element: 2 or 1 */
    tile_dtype dt;
    const char *why; /* when the kernel does not have the shape: the first reason found */
} simt_gemm_shape;
/* Fill m and return true when kernel statement k has that shape; false otherwise. */
bool simt_match_gemm_kernel(gen *G, const ir_stmt *k, simt_gemm_shape *m);
/* The clipped store of an accumulator pair (x0, x1: f32 C expressions) to C[r, c] and
 * C[r, c + 1] of rank-2 tensor C (C variables r, c and tl_N, its row length, in scope), at
 * `indent` levels: one 4- or 8-byte store when both elements are inside and the pair is
 * aligned, else element stores; rounded like every store. */
void simt_gemm_store_pair(gen *G, tile_strbuf *o, int indent, const ir_buffer *C, const char *x0, const char *x1);

/* sm90.c: if kernel statement k is a GEMM main loop the Hopper lowering covers (see
 * sm90.c), write its body to `body`, fill L's threads, smem, TMA maps and lowering name,
 * and return true; else return false and leave everything untouched (the caller uses the
 * portable lowering; *why, when why is not NULL, says why not). Also writes the device
 * helpers it needs to `helpers`. */
bool sm90_gemm_kernel(gen *G, const ir_stmt *k, simt_launch *L, tile_strbuf *helpers, tile_strbuf *body, const char **why);

/* sm80.c: if kernel statement k is a GEMM main loop the mma.sync lowering covers (f16/bf16,
 * see sm80.c; options.sm >= 80), the same contract as sm90_gemm_kernel. Off with
 * TILE_CUDA_MMA_SYNC=0. */
bool sm80_gemm_kernel(gen *G, const ir_stmt *k, simt_launch *L, tile_strbuf *helpers, tile_strbuf *body);

/* The register-fragment machinery of the portable generator, for the statements a lowering
 * emits from the IR (simt.c): simt_g_prepare_regs marks the kernel's register fragments
 * (their IR layouts) and what the kernel reads and writes; simt_g_nest_ok says whether
 * block-level statement s is a T.Parallel nest over register fragments that needs no
 * barrier (so threads of one role may run it alone); simt_g_block generates s at `indent`
 * levels with `lt` the C expression of the thread's index in the layouts. */
void simt_g_prepare_regs(gen *G, const ir_stmt *k);
bool simt_g_nest_ok(gen *G, const ir_stmt *s);
void simt_g_block(gen *G, tile_strbuf *o, int indent, const char *lt, const ir_stmt *s);
/* While code is generated: variable v ranges over [lo, lo + ext) (a loop's), so that bounds
 * checks its range proves are left out; false when the range is not known. Cleared again by
 * simt_g_var_range_clear. */
bool simt_g_var_range(gen *G, const ir_var *v, const ir_expr *lo, const ir_expr *ext);
void simt_g_var_range_clear(gen *G, const ir_var *v);

/* Install (fn) or remove (NULL) the load hook used by simt_g_expr. */
void simt_g_set_load_hook(gen *G, simt_load_hook fn, void *ctx);

/* sm90_attn.c: if kernel statement k is an attention-shaped kernel the Hopper lowering
 * covers (two T.gemm with fragments between them, see sm90_attn.c), the same contract as
 * sm90_gemm_kernel. When it declines, why (whylen bytes) gets the reason ("" if none). */
bool sm90_attn_kernel(gen *G, const ir_stmt *k, simt_launch *L, tile_strbuf *helpers, tile_strbuf *body, char *why, size_t whylen);

#endif
