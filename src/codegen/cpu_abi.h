/* cpu_abi.h — the interface between the CPU backend's runtime (src/runtime/cpu.c) and the
 * shared objects it compiles from generated C (src/codegen/c.c).
 *
 * The generated .so never links against libtile: everything it needs at run time comes in
 * through `tile_cpu_args` (sizes, buffer pointers, scalars) and its services table (the
 * thread pool's parallel_for, the GEMM library). This header is embedded verbatim in the
 * prelude of every generated translation unit, so it must stay self-contained C11.
 *
 * Bump TILE_CPU_ABI_VERSION on any change: it is part of the disk-cache key and checked when
 * a shared object is loaded.
 */
#ifndef TILE_CPU_ABI_H
#define TILE_CPU_ABI_H

#include <stdint.h>

#define TILE_CPU_ABI_VERSION 2

/* A chunk of a parallel loop: iterations [begin, end); `worker` is in [0, nworkers). */
typedef void (*tile_cpu_task)(void *arg, int64_t begin, int64_t end, int worker);

/* A GEMM on strided operands (both strides given, in elements, BLIS style), the fields of
 * tk_gemm (src/kernels/cpu_gemm.h) with dtypes as tile_dtype numbers:
 *     C[i, j] = (accumulate ? C[i, j] : 0) + sum_k A[i, k] * B[k, j]
 * element (i, k) of A at A + i*a_rs + k*a_cs (fp4: logical elements from the low nibble of
 * byte 0). accumulate == 0 never reads C. `parallel`: the call is made outside any parallel
 * region and may use the thread pool. */
typedef struct tile_cpu_gemm {
    int64_t M, N, K;
    int a_dtype, b_dtype, c_dtype;
    const void *A; int64_t a_rs, a_cs;
    const void *B; int64_t b_rs, b_cs;
    void *C; int64_t c_rs, c_cs;
    int accumulate;
    int parallel;
} tile_cpu_gemm;

typedef struct tile_cpu_services {
    int abi_version;                 /* TILE_CPU_ABI_VERSION */
    int nworkers;                    /* workers of the pool (the `worker` argument is below it) */
    /* Run fn over [0, n) in chunks on the pool; returns when all are done. A call made from
     * inside a running parallel_for runs inline (no oversubscription). */
    void (*parallel_for)(const struct tile_cpu_services *svc, int64_t n, tile_cpu_task fn, void *arg);
    /* 0 on success; otherwise a message is available from gemm_error(). */
    int (*gemm)(const struct tile_cpu_services *svc, const tile_cpu_gemm *g);
    const char *(*gemm_error)(void);
    void *pool;                      /* opaque, for the runtime's own use */
} tile_cpu_services;

typedef struct tile_cpu_args {
    int abi_version;                 /* TILE_CPU_ABI_VERSION */
    const int64_t *sizes;            /* value of f->sizes[i] */
    void *const *params;             /* data of tensor parameter i (by parameter position) */
    void *const *rets;               /* data of returned tensor i */
    const double *scalar_f;          /* float scalar parameters, by parameter position */
    const int64_t *scalar_i;         /* integer/bool scalar parameters, by parameter position */
    const tile_cpu_services *svc;
    char *err;                       /* a run-time error message is written here (NUL-terminated) */
    int64_t errlen;
    /* element strides of parameter i (by position) then of returned tensor i, for code built
     * with param_strides (NULL entries: row-major); unused otherwise */
    const int64_t *const *strides;
} tile_cpu_args;

/* Every generated shared object exports:
 *     int tile_entry(const tile_cpu_args *a);     0 = success, 1 = run-time error (a->err)
 *     const char tile_stamp[];                      the cache key it was compiled for */

#endif
