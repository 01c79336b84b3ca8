/* cpu_gemm_amx.c — bf16 x bf16 -> f32 micro-kernel 32 x 32 with Intel AMX (tdpbf16ps).
 * Compiled with -mamx-tile -mamx-bf16 (CMakeLists.txt); used only when cpuid reports
 * amx_tile + amx_bf16, XCR0 says the OS manages the tile state (bits 17-18) and Linux granted
 * this process the tile data state (arch_prctl ARCH_REQ_XCOMP_PERM, tk_amx_request).
 *
 * Tiles (palette 1, each 16 rows x 64 bytes): 0-3 hold C as 2 x 2 tiles of 16 x 16 f32,
 * 4-5 the two 16-row A tiles, 6-7 the two 16-column B tiles. Per chunk of 16 k-pairs (32 k):
 * 4 tile loads (A: 1 KiB contiguous each, 16-pair row chunks, layout TK_BF16_ROWS16; B: rows
 * of the k-pair panel b[q*32 + j], stride 128 bytes, the "VNNI" layout tdpbf16ps wants) and
 * 4 tdpbf16ps (16 x 16 x 32 each). C is loaded (beta) or zeroed in the tiles and stored
 * straight to C (row stride ldc) at the end. Pair counts kp are multiples of 16 (kq): the
 * packers zero-pad ragged K, the loop nest handles ragged M and N through its edge buffer.
 * tdpbf16ps treats bf16 subnormal inputs as zero, flushes f32 subnormal results and rounds
 * to nearest even after each of a pair's two products (as vdpbf16ps).
 *
 * The tile configuration is loaded (ldtilecfg) at the start of each compute task and the
 * tiles are released (tilerelease) at its end (tk_bf16_kernel.task_begin/task_end), so the
 * kernel never relies on a configuration another AMX user of the thread (oneDNN in the same
 * process) may have changed or released in between, and leaves the thread's tile state
 * initialised for them. */
#if defined(__x86_64__) && defined(__AMX_TILE__) && defined(__AMX_BF16__)
#define _GNU_SOURCE
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/core.h"
#include "kernels/cpu_gemm_int.h"

#define ARCH_GET_XCOMP_PERM 0x1022
#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

static int g_amx_ok;
/* The B panel streams from L2, which tileloadd reads more slowly than L1: the kernel
 * prefetches the next 16-pair chunk of B (2 KiB) into L1 while it multiplies the current one
 * (faster in 5 of the 6 cases of one back-to-back comparison, 6% slower at 1024^3 on 16
 * threads; that run was noisy, bench/results/cpu-bf16-2026-11-30-s4.md); TILE_GEMM_AMX_PF=0
 * turns it off (for measurements). */
static int g_pf = 1;
static pthread_once_t g_amx_once = PTHREAD_ONCE_INIT;

static void amx_request_once(void) {
    g_pf = tb_knob_bool(TB_K_TILE_GEMM_AMX_PF);
#ifdef SYS_arch_prctl
    if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) != 0) return;
    unsigned long bits = 0;
    if (syscall(SYS_arch_prctl, ARCH_GET_XCOMP_PERM, &bits) != 0) return;
    g_amx_ok = (bits >> XFEATURE_XTILEDATA) & 1;
#endif
}

int tk_amx_request(void) {
    pthread_once(&g_amx_once, amx_request_once);
    return g_amx_ok;
}

typedef struct tilecfg {
    uint8_t palette, start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tilecfg;

static void amx_task_begin(void) {
    tilecfg cfg __attribute__((aligned(64)));
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int t = 0; t < 8; t++) {
        cfg.colsb[t] = 64;
        cfg.rows[t] = 16;
    }
    /* ldtilecfg through asm with the configuration as a memory operand: GCC 12's
     * _tile_loadconfig builtin does not tell the optimiser that it reads *cfg, so the stores
     * above were dropped as dead and ldtilecfg faulted (#GP) on the uninitialised bytes. */
    __asm__ volatile("ldtilecfg %0" : : "m"(cfg));
}

static void amx_task_end(void) { _tile_release(); }

/* C as tiles 0-3 (2 x 2 tiles of 16 x 16 f32, row stride ldc floats): loaded (beta) or
 * zeroed before a micro-kernel's k loop, stored after it; both kernels below share them */
static inline __attribute__((always_inline)) void c_tiles_begin(float *c, int64_t ldc, int beta) {
    const int64_t ldb = ldc * 4; /* bytes */
    if (beta) {
        _tile_loadd(0, c, ldb);
        _tile_loadd(1, c + 16, ldb);
        _tile_loadd(2, c + 16 * ldc, ldb);
        _tile_loadd(3, c + 16 * ldc + 16, ldb);
    } else {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
    }
}
static inline __attribute__((always_inline)) void c_tiles_end(float *c, int64_t ldc) {
    const int64_t ldb = ldc * 4;
    _tile_stored(0, c, ldb);
    _tile_stored(1, c + 16, ldb);
    _tile_stored(2, c + 16 * ldc, ldb);
    _tile_stored(3, c + 16 * ldc + 16, ldb);
}

__attribute__((noinline)) static void ukr_amx(int64_t kp, const float *af, const float *bf, float *c, int64_t ldc,
                                              int beta) {
    const int pf = g_pf;
    const char *a = (const char *)af, *b = (const char *)bf;
    c_tiles_begin(c, ldc, beta);
    for (int64_t q = 0; q < kp; q += 16) {
        _tile_loadd(4, a, 64);        /* rows 0-15 of this 16-pair chunk */
        _tile_loadd(6, b, 128);       /* pairs q..q+15, columns 0-15 */
        _tile_dpbf16ps(0, 4, 6);
        _tile_loadd(7, b + 64, 128);  /* columns 16-31 */
        _tile_dpbf16ps(1, 4, 7);
        _tile_loadd(5, a + 1024, 64); /* rows 16-31 */
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
        if (pf)
            for (int l = 0; l < 32; l++) _mm_prefetch(b + 2048 + 64 * l, _MM_HINT_T0);
        a += 2048;
        b += 2048;
    }
    c_tiles_end(c, ldc);
}

const tk_bf16_kernel tk_bf16_amx = {
    .name = "amx", .mr = 32, .nr = 32, .kq = 16, .a_layout = TK_BF16_ROWS16, .ukr = ukr_amx,
    .task_begin = amx_task_begin, .task_end = amx_task_end};
#elif defined(__x86_64__) || defined(__i386__)
/* built without AMX support (CMakeLists.txt: the compiler lacks -mamx-tile/-mamx-bf16, or a
 * 32-bit target): AMX is never reported, so this kernel is never chosen */
#include <stddef.h>

#include "kernels/cpu_gemm_int.h"

int tk_amx_request(void) { return 0; }
const tk_bf16_kernel tk_bf16_amx = {.name = "amx", .mr = 32, .nr = 32, .kq = 16, .a_layout = TK_BF16_ROWS16, .ukr = NULL};
#endif
