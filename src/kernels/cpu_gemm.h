/* cpu_gemm.h — TileKernels' CPU GEMM: BLIS-style packed GEMM with per-ISA micro-kernels.
 *
 * In:  a GEMM description (shapes, dtypes, pointers, element strides), optionally a
 *      "parallel for" from the caller's thread pool.
 * Out: C = A @ B or C += A @ B, accumulated in f32 with FMA (f64 when an operand is f64).
 *
 * A worked example: C[M,N] (f32, row-major) = A[M,K] (bf16, row-major) @ B[N,K]^T (f32)
 *
 *     #include "kernels/cpu_gemm.h"
 *     tk_gemm g = {
 *         .M = M, .N = N, .K = K,
 *         .a_dtype = TILE_DT_BF16, .b_dtype = TILE_DT_F32, .c_dtype = TILE_DT_F32,
 *         .A = a, .a_rs = K, .a_cs = 1,     // A[i][k] at a + i*K + k
 *         .B = bt, .b_rs = 1, .b_cs = K,    // op(B)[k][j] = Bt[j][k] at bt + j*K + k
 *         .C = c, .c_rs = N, .c_cs = 1,
 *         .accumulate = 0,                  // C is written, never read
 *     };
 *     if (tk_cpu_gemm(&g, NULL, NULL) != TK_GEMM_OK)        // NULL: run on this thread
 *         fprintf(stderr, "%s\n", tk_cpu_gemm_error());
 *
 * Strides are in ELEMENTS (not bytes) for both dimensions of every operand (BLIS style), so
 * transposes and sub-matrix views are free; they may be any value, including 0 and negative
 * (but C must not alias itself or A/B). fp4 e2m1 operands are packed two per byte (element
 * 2i in the low nibble of byte i): a strided fp4 view addresses LOGICAL elements, element
 * (i, k) of A is logical element i*a_rs + k*a_cs counted from the low nibble of byte 0 of A.
 *
 * DTypes: A and B may be f32, f16, bf16, float8_e4m3, float8_e5m2, float4_e2m1 (each
 * independently); they are converted exactly to f32 while packing ("dequantise-while-
 * packing") and the f32 micro-kernel runs (a bf16 x bf16 GEMM uses the AMX kernel on CPUs
 * with AMX, vdpbf16ps on CPUs with AVX512-BF16). C may be f32 (fast path), f16, bf16 (accumulated in f32, rounded once
 * to nearest even at the end, bit-exact with tile_store_f) or any other float dtype.
 * If A, B or C is f64, the whole GEMM runs in f64 (a simpler, slower loop nest).
 *
 * Numerics: every C element is a sum of K products accumulated in f32 with FMA, in an order
 * that differs from a naive loop (K is split into blocks of KC); the error bound is the
 * classic |C - A@B| <= gamma_K |A| |B| elementwise, gamma_K = K u / (1 - K u), u = 2^-24
 * (plus one rounding of the output dtype). See docs/cpu-gemm.md.
 *
 * Threads: tk_cpu_gemm may be called from many threads at once. Packing buffers are
 * thread-local and reused (no heap allocation per call once warmed up, except a temporary
 * f32 accumulator for non-f32 C larger than the thread-local one). With a non-NULL pfor,
 * large GEMMs are split into tasks over (M, N) macro-tiles run through pfor; small ones
 * run on the calling thread anyway.
 *
 * ISA: chosen once at first use from cpuid/xgetbv: "amx" (AVX-512 + AMX-TILE/BF16, the OS
 * granting the tile state), "avx512bf16" (AVX-512 + AVX512-BF16), "avx512" (AVX-512F/BW/VL/DQ +
 * FMA), "avx2" (AVX2 + FMA + F16C) or "generic" (portable C); the first two differ from
 * "avx512" only in the bf16 x bf16 kernel. TILE_CPU_ISA=amx|avx512bf16|avx512|avx2|generic
 * forces one; forcing one the CPU lacks makes every call fail with a message (never a crash).
 */
#ifndef TILE_KERNELS_CPU_GEMM_H
#define TILE_KERNELS_CPU_GEMM_H

#include <stdint.h>

#include "tile.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tk_gemm {
    int64_t M, N, K;
    tile_dtype a_dtype, b_dtype, c_dtype;
    const void *A; int64_t a_rs, a_cs;   /* op(A) viewed as M x K: element (i,k) at i*a_rs + k*a_cs */
    const void *B; int64_t b_rs, b_cs;   /* op(B) viewed as K x N: element (k,j) at k*b_rs + j*b_cs */
    void *C; int64_t c_rs, c_cs;         /* C is M x N:            element (i,j) at i*c_rs + j*c_cs */
    int accumulate;                      /* 0: C = A@B (C is never read: beta == 0); 1: C += A@B */
    int nthreads;                        /* workers pfor runs bodies on (0: tk_cpu_count()); sizes the task split */
} tk_gemm;

/* A "parallel for" the caller provides (the CPU runtime's thread pool): run body(arg, i) for
 * every i in [0, n) on any threads, return when all are done. NULL = single thread.
 * Bodies never call back into pfor. */
typedef void (*tk_parallel_for)(void *pool, int64_t n, void (*body)(void *arg, int64_t i), void *arg);

typedef enum tk_gemm_status {
    TK_GEMM_OK = 0,
    TK_GEMM_EINVAL = 1,  /* bad arguments: negative size, NULL pointer, unsupported dtype */
    TK_GEMM_EISA = 2,    /* TILE_CPU_ISA (or tk_cpu_set_isa) names an ISA this CPU cannot run */
    TK_GEMM_ENOMEM = 3   /* a packing buffer could not be allocated */
} tk_gemm_status;

/* C = A@B or C += A@B. Returns TK_GEMM_OK, or a status with a message in tk_cpu_gemm_error(). */
TILE_API int tk_cpu_gemm(const tk_gemm *g, tk_parallel_for pfor, void *pool);
/* The message of the last failed call on this thread ("" if none). */
TILE_API const char *tk_cpu_gemm_error(void);

/* ---------- CPU features and ISA selection ---------- */
/* The ISA in use: "amx" | "avx512bf16" | "avx512" | "avx2" | "generic", or "invalid" when
 * TILE_CPU_ISA / the last
 * tk_cpu_set_isa asked for one this CPU lacks (tk_cpu_gemm then fails with TK_GEMM_EISA). */
TILE_API const char *tk_cpu_isa(void);
/* The kernel a bf16 x bf16 GEMM uses: "amx" (tdpbf16ps, ISA amx), "avx512_bf16" (vdpbf16ps,
 * ISA avx512bf16), "bf16_emulated" / "amx_emulated" (TILE_GEMM_BF16=emulate / emulate_amx:
 * portable models of them, for tests) or "f32" (operands dequantised to f32 while packing;
 * also with TILE_GEMM_BF16=off). */
TILE_API const char *tk_cpu_bf16_kernel(void);
/* How many parallel steps of bf16 GEMMs so far ran with home regions: the task grid cut into
 * one rectangle per worker, whose threads pack and compute it first (TILE_GEMM_AFFINE=0 turns
 * them off; docs/cpu-gemm.md). */
TILE_API long long tk_cpu_gemm_affine_count(void);
/* Force an ISA ("amx", "avx512bf16", "avx512", "avx2", "generic"), or NULL / "" / "auto" to go back to the best
 * one (TILE_CPU_ISA is read only once, at first use; this overrides it). Returns 0, or -1
 * with a message in tk_cpu_gemm_error() if the name is unknown or the CPU cannot run it
 * (the selection is left unchanged then). Not thread-safe against concurrent GEMMs. */
TILE_API int tk_cpu_set_isa(const char *name);

enum {
    TK_CPU_SSE2 = 1u << 0, TK_CPU_AVX = 1u << 1, TK_CPU_AVX2 = 1u << 2, TK_CPU_FMA = 1u << 3,
    TK_CPU_F16C = 1u << 4, TK_CPU_AVX512F = 1u << 5, TK_CPU_AVX512BW = 1u << 6,
    TK_CPU_AVX512VL = 1u << 7, TK_CPU_AVX512DQ = 1u << 8, TK_CPU_AVX512VNNI = 1u << 9,
    TK_CPU_AVX512BF16 = 1u << 10, TK_CPU_AVX512FP16 = 1u << 11, TK_CPU_AMX_BF16 = 1u << 12,
    TK_CPU_AMX_TILE = 1u << 13
};
/* Usable features (cpuid, with xgetbv confirming the OS saves the AVX / AVX-512 state). */
TILE_API unsigned tk_cpu_features(void);
/* Data cache sizes in bytes of the CPU running this (L1d, L2 per core, L3 shared; 0 where
 * unknown), from CPUID leaf 4 or /sys/devices/system/cpu/cpu0/cache. */
TILE_API void tk_cpu_cache_sizes(int64_t *l1d, int64_t *l2, int64_t *l3);
/* Number of CPUs this process may run on (sched_getaffinity), at least 1. */
TILE_API int tk_cpu_count(void);

/* ---------- vectorised helpers (contiguous arrays, any n >= 0) ---------- */
/* dst[i] = element (first + i) of src as f32, exact, for every float dtype but f64 (f64 is
 * rounded to nearest even). fp4: logical element index, two per byte. Returns 0, or -1 if
 * dt is not a float dtype. */
TILE_API int tk_cvt_to_f32(float *dst, tile_dtype dt, const void *src, int64_t first, int64_t n);
/* Element (first + i) of dst = src[i] rounded to dt (nearest even, fp8/fp4 saturating):
 * bit-exact with tile_store_f. Returns 0, or -1 if dt is not a float dtype. */
TILE_API int tk_cvt_from_f32(tile_dtype dt, void *dst, int64_t first, const float *src, int64_t n);
/* Sum (f32, reassociated: error <= gamma_n sum|x|) and max (NaN if any x is NaN; -inf if
 * n == 0) of a row. */
TILE_API float tk_sum_f32(const float *x, int64_t n);
TILE_API float tk_max_f32(const float *x, int64_t n);

#ifdef __cplusplus
}
#endif
#endif
