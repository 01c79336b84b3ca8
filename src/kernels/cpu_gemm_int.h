/* cpu_gemm_int.h — internals shared by cpu_gemm.c and the per-ISA files (not installed).
 *
 * An ISA is a table: micro-kernel shape (MR x NR), the f32 micro-kernel, the packing routine
 * (with dequantisation) and the vectorised helpers, all compiled with that ISA's flags. */
#ifndef TILE_KERNELS_CPU_GEMM_INT_H
#define TILE_KERNELS_CPU_GEMM_INT_H

#include <stdint.h>

#include "tile.h"

/* A source operand seen as panels: element (p, k) at p*sp + k*sk (elements; fp4: logical
 * elements, two per byte). For A: p = row i (sp = a_rs, sk = a_cs); for B: p = column j
 * (sp = b_cs, sk = b_rs). */
typedef struct tk_src {
    const void *p;
    tile_dtype dt;
    int64_t sp, sk;
} tk_src;

/* C[0..MR)[0..NR) (row stride ldc, unit column stride) = (beta ? C : 0) + a_panel @ b_panel
 * where a is kc x MR (a[k*MR + i]) and b is kc x NR (b[k*NR + j]), both 64-byte aligned. */
typedef void (*tk_ukr_fn)(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int beta);
/* Pack rows [p0, p0+plen) x k [k0, k0+klen) of s into ceil(plen/R) panels of klen x R floats
 * (panel q at dst + q*R*klen, element (p, k) at [k*R + p%R]), zero-padding the last panel. */
typedef void (*tk_pack_fn)(const tk_src *s, int64_t p0, int64_t plen, int64_t k0, int64_t klen, int R, float *dst);

typedef struct tk_isa {
    const char *name;
    int mr, nr;
    tk_ukr_fn ukr;
    tk_pack_fn pack;
    void (*cvt_to_f32)(float *dst, tile_dtype dt, const void *src, int64_t first, int64_t n);
    /* the other way, for f16 / bf16 results (tkp_cvt_from_run): 0 for other dtypes */
    int (*cvt_from_f32)(tile_dtype dt, void *dst, int64_t first, const float *src, int64_t n, float scale);
    float (*sum)(const float *x, int64_t n);
    float (*max)(const float *x, int64_t n);
    /* optional no-pack kernel for small f32 problems (NULL if none): a tile of m <= direct_mr
     * rows (any m for AVX-512) and n <= direct_nr columns of C (unit column stride), A with any strides, B rows
     * with unit column stride; see cpu_gemm_avx512.c */
    int direct_mr, direct_nr;
    void (*ukr_direct)(int64_t kc, const float *a, int64_t a_rs, int64_t a_cs, const float *b, int64_t ldb, float *c,
                       int64_t ldc, int beta, int m, int n);
} tk_isa;

/* A bf16 x bf16 -> f32 micro-kernel on k-PAIR panels (32-bit words holding two bf16 of
 * consecutive k, lower k in the low half); kp = number of pair rows in the panels (a
 * multiple of kq). Same C contract as tk_ukr_fn (the float pointers are reinterpreted).
 * Panel layouts (each panel R x kp words):
 *   TK_BF16_PAIRS  word (p, q) at [q*R + p]              (vdpbf16ps A and B, AMX B: "VNNI")
 *   TK_BF16_ROWS16 word (p, q) at [(q/16)*R*16 + p*16 + q%16]  (AMX A: 16-pair row chunks,
 *                  so one 16 x 16-word A tile is 1 KiB contiguous)
 * The packers (tk_pack_bf16_generic / _avx512) fill them, padding rows past plen and pairs
 * past ceil(klen/2), up to a multiple of kq, with zeros; with a non-NULL rng they also merge
 * the magnitude range of what they packed into rng[0] (smallest nonzero) and rng[1] (largest
 * finite), as tk_bf16_range_generic (the AVX-512 fast paths on the registers they store). */
enum { TK_BF16_PAIRS = 0, TK_BF16_ROWS16 = 1 };
typedef struct tk_bf16_kernel {
    const char *name;
    int mr, nr, kq;
    int a_layout; /* TK_BF16_PAIRS or TK_BF16_ROWS16; B is always TK_BF16_PAIRS */
    tk_ukr_fn ukr;
    /* called on the thread around each compute task's kernel calls (NULL: nothing): AMX
     * loads its tile configuration and releases the tiles after, so that another AMX user on
     * the same thread (oneDNN in the same process) never finds them in a state it did not
     * set, and Tile never runs on a configuration someone else left */
    void (*task_begin)(void);
    void (*task_end)(void);
} tk_bf16_kernel;
extern const tk_bf16_kernel tk_bf16_emulated;     /* portable C model of vdpbf16ps, for tests */
extern const tk_bf16_kernel tk_bf16_amx_emulated; /* portable C model of the AMX kernel, for tests */

/* Portable bf16 packers (cpu_gemm.c): kq = pair-row padding multiple. */
void tk_pack_bf16_generic(const tk_src *s, int64_t p0, int64_t plen, int64_t k0, int64_t klen, int R, int kq,
                          int layout, uint32_t *dst, uint32_t *rng);

/* The magnitude range of n bf16 values (bits & 0x7FFF), combined into *mn (the smallest
 * nonzero one; 0x10000 = none yet) and *mx (the largest finite one; 0 = none yet): what the
 * bf16 GEMM checks against the hardware kernels' denormal flushing (cpu_gemm.c). */
void tk_bf16_range_generic(const uint16_t *h, int64_t n, uint32_t *mn, uint32_t *mx);

extern const tk_isa tk_isa_generic;
#if defined(__x86_64__) || defined(__i386__)
extern const tk_isa tk_isa_avx2;
extern const tk_isa tk_isa_avx512;
extern const tk_bf16_kernel tk_bf16_avx512; /* vdpbf16ps */
extern const tk_bf16_kernel tk_bf16_amx;    /* AMX tdpbf16ps */
/* AVX-512BW packers for the bf16 layouts (cpu_gemm_avx512bf16.c; need only AVX-512F/BW/VL):
 * fast paths for unit-stride k (sk == 1) and unit-stride panels (sp == 1), else generic. */
void tk_pack_bf16_avx512(const tk_src *s, int64_t p0, int64_t plen, int64_t k0, int64_t klen, int R, int kq,
                         int layout, uint32_t *dst, uint32_t *rng);
void tk_bf16_range_avx512(const uint16_t *h, int64_t n, uint32_t *mn, uint32_t *mx);
/* Asks Linux for the AMX tile data state (arch_prctl ARCH_REQ_XCOMP_PERM), once per process;
 * 1 if granted (cpu_gemm_amx.c). */
int tk_amx_request(void);
#endif

/* Exact dequantisation tables, filled once before any ISA routine runs. */
extern float tk_lut_e4m3[256];
extern float tk_lut_e5m2[256];
extern float tk_lut_e2m1[16];

/* 1 if this CPU (and OS) can run the named ISA ("generic" | "avx2" | "avx512" | "avx512bf16"
 * | "amx"; for amx the OS tile-state request comes later, at the first bf16 GEMM: tk_amx_request). */
int tk_isa_supported(const char *name);

#define TK_MAX_TILE 1024 /* MR * NR of every ISA fits */

#endif
