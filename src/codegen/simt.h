/* simt.h — the SIMT code generator: Tile IR -> OpenCL C 1.2 or CUDA C (one generator, two
 * dialects), plus the launch plan the GPU runtimes (src/runtime/opencl.c, cuda.c) follow.
 *
 * In:  a verified ir_func (after the target's TileOpt pipeline).
 * Out: one self-contained device translation unit (the prelude: src/base/convert.h and
 *      src/codegen/simt_prelude.h, then one device kernel per launch) and a simt_program
 *      that says what to launch, in order, with which grid, threads and shared memory.
 *
 * Lowering (docs/backends-gpu.md):
 *   - a tile-form T.Kernel(gx, gy, gz, threads=T) becomes one kernel launched on
 *     gx*gy*gz blocks (OpenCL work-groups) of T threads; block indices come from the
 *     linear group id (x fastest, like the interpreter);
 *   - shared / fragment / local buffers allocated at block level live in shared (__local)
 *     memory, carved out of one dynamic allocation; buffers allocated inside a T.Parallel
 *     body (or any per-thread code) are per-thread private arrays;
 *   - block-level statements that only compute scalars run redundantly in every thread;
 *     block-level statements that write memory run in thread 0, followed by a barrier,
 *     and the scalars they assign are broadcast through shared memory;
 *   - T.Parallel nests are flattened and strided over the threads, barrier after;
 *   - tile ops (copy, fill, gemm, reduce) are cooperative loops with the interpreter's
 *     clipping and arithmetic order, with barriers before and after;
 *   - statements outside any T.Kernel (plain-form functions) run in one block of one
 *     thread (correct, slow; temporary until the auto-scheduler targets GPUs).
 * Every kernel takes the same arguments: one byte pointer per buffer of
 * simt_program.bufs, the int64 scalar table (sizes, then scalar parameters as bits), the
 * int64 error record, and (OpenCL) the shared-memory pointer.
 */
#ifndef TILE_SIMT_H
#define TILE_SIMT_H

#include "../ir/ir.h"

typedef enum simt_dialect { SIMT_OPENCL = 0, SIMT_CUDA = 1 } simt_dialect;

typedef struct simt_options {
    simt_dialect dialect;
    bool fp64;          /* the device computes in double (OpenCL: cl_khr_fp64); else f64 is an error */
    bool atom64;        /* 64-bit atomics (OpenCL: cl_khr_int64_base_atomics) */
    bool checks;        /* bounds checks on element accesses (default on) */
    int mem_opt;        /* memory-bound lowerings (simt.c: gen_reduce_warp, gen_copy_vec): 1 (default,
                         * env TILE_SIMT_MEMOPT) = warp-cooperative f32 row reductions with clear=True
                         * and 16-byte vector copies; 2 = also reductions with clear=False
                         * (experimental); 0 = off */
    bool regfrag;       /* register fragments (simt.c, "register fragments"; env TILE_SIMT_REGFRAG,
                         * default 1; needs mem_opt >= 1) */
    int sm;             /* CUDA: 90 = sm_90a (Hopper: TMA + wgmma lowering of GEMM kernels,
                         * src/codegen/sm90.c; mma.sync where it declines); 80..89 = sm_80 ..
                         * sm_89 and other architectures with mma.sync but no wgmma (the
                         * mma.sync lowering, src/codegen/sm80.c); 0 = the portable SIMT
                         * lowering only */
    const tb_options *opts; /* the kernel's compile options (tb_opt_*; NULL: the environment's),
                             * which the architecture lowerings (sm80.c, sm90*.c) read */
} simt_options;

/* A buffer the kernels take: parameter, returned tensor, or a global temporary that the
 * runtime allocates (its shape is an expression of the sizes). */
typedef struct simt_buf {
    const ir_buffer *buf;
    int param;          /* index in f->params, or -1 */
    int ret;            /* index in f->rets, or -1 */
} simt_buf;

/* A TMA tensor map a launch takes (sm_90a): the host encodes it for buffer `buf` of the plan
 * (rank 2, or the buffer's rank with full_rank; row-major; dims from the buffer's shape) with a box of box_rows x box_cols
 * elements and `swizzle` bytes of swizzle (32, 64 or 128; 0 = none), and passes it by value
 * after the error record (`const __grid_constant__ tl_tmap`), in order. */
typedef struct simt_tma {
    int buf;            /* index in simt_program.bufs */
    int elem_bytes;     /* 1 or 2 */
    int box_rows, box_cols;
    int swizzle;
    /* full-rank map (sm90_attn.c): the buffer's own rank (at most 5); the box is box_cols
     * along the last dimension, box_rows along dimension rowdim and 1 along the others */
    bool full_rank;
    int rowdim;
} simt_tma;
#define SIMT_MAX_TMA 4

/* One launch of the plan. */
typedef struct simt_launch {
    char name[32];            /* kernel name in the source */
    const ir_expr *grid[3];   /* block counts (expressions of the sizes); NULL = 1 */
    int threads;              /* threads per block */
    size_t smem;              /* bytes of shared memory */
    tile_loc loc;
    int ntma;                 /* TMA tensor maps after the standard arguments (sm_90a) */
    simt_tma tma[SIMT_MAX_TMA];
    char lowering[16];        /* "simt", "sm90-wgmma" (the Hopper GEMM lowering), "sm90-attn",
                                 "sm80-mma" (the mma.sync GEMM lowering) */
    bool persistent;          /* the kernel loops over the grid's blocks itself: launch at most
                                 blocks_per_sm blocks per multiprocessor (fewer when the grid
                                 is smaller) */
    int blocks_per_sm;        /* persistent kernels: blocks resident on one multiprocessor (0 = 1) */
} simt_launch;

/* A place in the program that can fail at run time (bounds, division by zero, assert). */
typedef struct simt_site {
    tile_loc loc;
    int kind;           /* SIMT_SITE_* */
    const char *what;   /* buffer name / assert message */
} simt_site;
enum { SIMT_SITE_READ = 0, SIMT_SITE_WRITE = 1, SIMT_SITE_DIV = 2, SIMT_SITE_ASSERT = 3, SIMT_SITE_SHAPE = 4 };

typedef struct simt_program {
    char *source;             /* heap */
    simt_buf *bufs;
    int nbufs;
    simt_launch *launches;
    int nlaunches;
    simt_site *sites;
    int nsites;
    int nscalars;             /* entries of the scalar table: f->nsizes + f->nparams */
} simt_program;

/* The defaults, with checks, mem_opt and regfrag from the kernel's options `opts` (NULL: the
 * environment's; ir_func.opts). */
void simt_options_default(simt_options *o, simt_dialect d, const tb_options *opts);

/* Generate the program for f. Returns 0, or 1 with a message in err (a construct the GPU
 * targets cannot run, e.g. shared memory of non-constant size, float64 without device
 * support). The program refers to f's IR (keep f alive). */
int simt_generate(const ir_func *f, const simt_options *o, simt_program *out, tile_strbuf *err);
void simt_program_free(simt_program *p);

/* The scalar table for a run: sizes, then one entry per parameter (scalars as their bits:
 * f32 in the low 32 bits, f64 as its 64 bits, integers sign-extended; 0 for tensors). */
void simt_pack_scalars(const ir_func *f, const int64_t *sizes, const double *scalars, int64_t *table);

/* The message for an error record err[0..5] written by a kernel (appends to out). */
void simt_format_error(const simt_program *p, const int64_t *err, tile_strbuf *out);

/* The embedded prelude text, for tests. */
const char *simt_convert_text(void);
const char *simt_prelude_text(void);

#endif
