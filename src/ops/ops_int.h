/* ops_int.h — internals of TileKernels, the operator library (include/tile_ops.h).
 *
 * In:  host tensors and operator arguments from the tile_op_* functions.
 * Out: the operators' TileLang kernels (src/ops/NAME.tl, src/ops/gen/NAME.tl, embedded in libtile)
 *      compiled on first use per (source, factory, shape class, dtypes) and cached, then run
 *      on the target with tile_run.
 *
 * Layers (each file one):
 *   registry.c   the table of operators (ops.def, an X-macro) and its public face
 *   cache.c      first-use compilation and the kernel cache (the only file that knows how a
 *                kernel is compiled and launched: the place to move onto device tensors and
 *                streams later)
 *   common.c     argument checks with messages naming the argument, output allocation,
 *                PyTorch's type promotion
 *   elementwise.c, shape.c, reduce.c, nn.c, gemm.c, attn.c   the operators
 */
#ifndef TILE_OPS_INT_H
#define TILE_OPS_INT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include "../core/core.h"
#include "tile.h"
#include "tile_ops.h"

/* ---------- dtype masks (bit = tile_dtype) ---------- */
#define TOPD(e) (1u << TILE_DT_##e)
#define TOPD_BOOL TOPD(BOOL)
#define TOPD_INT (TOPD(U8) | TOPD(I8) | TOPD(I16) | TOPD(I32) | TOPD(I64))
#define TOPD_INTB (TOPD_INT | TOPD_BOOL)
#define TOPD_FLT (TOPD(F16) | TOPD(BF16) | TOPD(F32) | TOPD(F64))
#define TOPD_NUM (TOPD_INT | TOPD_FLT)
#define TOPD_ALL (TOPD_NUM | TOPD_BOOL)
#define TOPD_FP8 (TOPD(FP8_E4M3) | TOPD(FP8_E5M2))
#define TOPD_MM (TOPD(F16) | TOPD(BF16) | TOPD(F32))  /* GEMM and the fused NN operators */
#define TOPD_CAST (TOPD_ALL | TOPD_FP8)               /* what cast/copy accept */
#define TOPD_IDX (TOPD(I32) | TOPD(I64))              /* index tensors */

/* ---------- targets ---------- */
#define TOPT_INTERP TILE_OP_TARGET_INTERP
#define TOPT_CPU TILE_OP_TARGET_CPU
#define TOPT_OPENCL TILE_OP_TARGET_OPENCL
#define TOPT_CUDA TILE_OP_TARGET_CUDA
#define TOPT_ALL (TOPT_INTERP | TOPT_CPU | TOPT_OPENCL | TOPT_CUDA)
/* cpu runs the operator through the GEMM library (src/kernels) instead of its TileLang kernel */
#define TOPT_CPULIB TILE_OP_TARGET_CPU_LIBRARY

/* ---------- families and result-dtype rules ---------- */
typedef enum {
    TOPF_UNARY, TOPF_BINARY, TOPF_TERNARY, TOPF_REDUCE, TOPF_ARGREDUCE, TOPF_SCAN,
    TOPF_COPY, TOPF_INDEX, TOPF_NORM, TOPF_SOFTMAX, TOPF_ACT, TOPF_ROPE, TOPF_LOSS,
    TOPF_QUANT, TOPF_GEMM, TOPF_ATTN, TOPF_COUNT
} top_family;

typedef enum {
    TOPR_SAME,      /* the input's dtype */
    TOPR_FLOAT,     /* unary: integers/bool -> float32; binary: promoted, then integers -> float32 */
    TOPR_BOOL,      /* bool */
    TOPR_CLAMP,     /* promotion of x with its scalar bounds */
    TOPR_PROMOTE,   /* PyTorch's type promotion of the operands */
    TOPR_PROMOTE3,  /* the same over three operands */
    TOPR_CMP,       /* bool, compared in the promoted dtype */
    TOPR_LOGICAL,   /* bool from any operands */
    TOPR_BITWISE,   /* promotion; integers and bool only */
    TOPR_WHERE,     /* promotion of the two values; the condition is bool */
    TOPR_SUM,       /* integers and bool -> int64, floats keep their dtype */
    TOPR_INDEX,     /* int64 indices */
    TOPR_OTHER      /* written out by the operator */
} top_rule;

typedef struct top_op {
    const char *name;
    top_family family;
    const char *src;      /* embedded source ("gen/unary.tl", "norm.tl") */
    const char *factory;  /* kernel factory in it */
    uint32_t dtypes;      /* TOPD_* mask of the accepted (data) dtypes */
    uint32_t targets;     /* TOPT_* mask */
    top_rule rule;
    int nargs;            /* scalar arguments (unary family) */
    tile_op_info info;    /* the public view (filled by registry.c) */
} top_op;

const top_op *top_find(const char *name);                 /* NULL if unknown */
const top_op *top_find_family(const char *name, top_family f);
const char *top_family_name(top_family f);

/* ---------- errors ---------- */
/* Every failure message starts with the operator's name: "rms_norm: weight: ..." */
typedef struct top_ctx {
    const char *op;       /* for messages */
    const char *target;   /* resolved target name */
    const top_op *entry;  /* the registry row (NULL before top_begin found it) */
    tile_strbuf err;
    tile_status st;
    tile_tensor *allocated[16]; /* outputs this call allocated: freed again if it fails */
    int nallocated;
    void *staged[8];      /* device copies of host-built operands (top_stage), freed at top_end */
    int nstaged;
} top_ctx;

/* Start a call: resolves target (NULL / "auto" -> tile_auto_target()) and checks it against
 * the operator's targets. Returns false (with the message in c) when it cannot run. */
bool top_begin(top_ctx *c, const char *opname, const top_op *op, const char *target);
/* Record a failure (the first one wins); returns false for `return top_fail(...)` chains. */
bool top_fail(top_ctx *c, tile_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Finish: moves the message into *error (if any) and returns the status. */
tile_status top_end(top_ctx *c, char **error);

/* ---------- where the data lives (cache.c; tile_op_set_device) ----------
 * With an operator device set on this thread, tensors are memory on it: allocations come from
 * its pool, and host-side steps copy through these helpers (no-ops for host data). */
bool top_data_remote(void);            /* tensors' data are not host memory */
const char *top_device_target(void);   /* the target the device's data needs ("cuda"), or NULL */
/* t->data = a new buffer of tile_tensor_bytes(t) (zeroed when `zero`; outputs need not be) */
bool top_alloc(top_ctx *c, const char *what, tile_tensor *t, bool zero);
void top_free(tile_tensor *t);         /* frees what top_alloc (or top_prepare_out) gave */
/* h = t with host-readable data: t itself for host data, else a copy (the stream synchronised) */
bool top_host_copy(top_ctx *c, const char *arg, const tile_tensor *t, tile_tensor *h);
void top_host_release(tile_tensor *h, const tile_tensor *t);
/* t's (host, small) data replaced by a device copy owned by c for the rest of the call */
bool top_stage(top_ctx *c, tile_tensor *t);
/* the same for a zero-dim t holding scalar v: written on the device by the fill kernel, so
 * the call does not wait for the stream as a copy from pageable host memory does */
bool top_stage_scalar(top_ctx *c, tile_tensor *t, tile_op_scalar v);
void top_release_staged(top_ctx *c);

/* ---------- argument checks (all name the argument in their message) ---------- */
int64_t top_numel(const tile_tensor *t);
bool top_check_tensor(top_ctx *c, const char *arg, const tile_tensor *t);            /* non-NULL, rank 0..8, dims >= 0, data */
bool top_check_dtype(top_ctx *c, const char *arg, const tile_tensor *t, uint32_t mask);
bool top_check_rank(top_ctx *c, const char *arg, const tile_tensor *t, int lo, int hi);
bool top_check_dim(top_ctx *c, const char *arg, int *dim, int rank);                 /* wraps negative dims */
bool top_check_same_shape(top_ctx *c, const char *arg, const tile_tensor *t, const char *other_arg, const tile_tensor *other);
/* The output: data == NULL -> allocated with `rank`/`shape`/`dt`; else it must match. */
bool top_prepare_out(top_ctx *c, const char *arg, tile_tensor *out, tile_dtype dt, int rank, const int64_t *shape);
const char *top_dtype_names(uint32_t mask, char *buf, size_t n);                      /* "float16, bfloat16, ..." */
void top_shape_str(char *buf, size_t n, int rank, const int64_t *shape);             /* "[3, 5]" */

/* ---------- type promotion (PyTorch's rules) ---------- */
tile_dtype top_promote(tile_dtype a, tile_dtype b);           /* promoteTypes; TILE_DT_INVALID if none */
/* result_type over operands: dimensioned tensors, zero-dim tensors and Python scalars have
 * decreasing priority within a category (bool < integer < float). */
typedef struct top_rt { tile_dtype dim, zero, wrapped; } top_rt;
void top_rt_init(top_rt *r);
void top_rt_tensor(top_rt *r, const tile_tensor *t);
void top_rt_scalar(top_rt *r, tile_op_scalar s);
tile_dtype top_rt_result(const top_rt *r);
/* The dtype arithmetic runs in: f32 for f16/bf16 ("opmath"), else the dtype itself. */
tile_dtype top_compute_dtype(tile_dtype dt);

/* ---------- the kernel cache (cache.c) ---------- */
typedef struct top_kernel top_kernel;

/* Compile-time values: a kernel factory's parameters ("block=1024", "x_dtype=float16"). */
typedef struct top_defs {
    char buf[1536];
    const char *v[48];
    int n;
    size_t used;
} top_defs;
void top_defs_init(top_defs *d);
void top_def_int(top_defs *d, const char *name, int64_t v);
void top_def_str(top_defs *d, const char *name, const char *v);
void top_def_dt(top_defs *d, const char *name, tile_dtype dt);

/* The kernel of `factory` in embedded source `src` specialised by `defs`, compiled on first
 * use and cached (the key is source, factory and every definition). */
bool top_kernel_get(top_ctx *c, const char *src, const char *factory, const top_defs *defs, top_kernel **out);
/* Run it on c->target. params: one per kernel parameter in order (scalars: {0}); scalars[i]
 * the value of scalar parameter i (by position). */
bool top_kernel_run(top_ctx *c, top_kernel *k, tile_tensor *params, int nparams, const double *scalars);
/* The embedded text of a source (NULL if none). */
const char *top_source_text(const char *name);

/* ---------- helpers shared by the operator files ---------- */
/* A tensor header viewing t's data with another shape (same element count). */
tile_tensor top_view(const tile_tensor *t, int rank, const int64_t *shape);
tile_tensor top_view1(const tile_tensor *t);                    /* flat */
tile_tensor top_view3(const tile_tensor *t, int64_t a, int64_t b, int64_t c);
/* a temporary tensor (heap, zeroed); free with tile_tensor_free */
bool top_temp(top_ctx *c, tile_tensor *t, tile_dtype dt, int rank, const int64_t *shape);
void *top_elem_ptr(const tile_tensor *t, int64_t elem);          /* address of element `elem` (not fp4) */

/* Strided copy with conversion: iteration space shape[0..rank) (rank <= 8), element j of
 * it read from x at xoff + sum j_d * xs_d and written to y at yoff + sum j_d * ys_d (flat
 * element offsets into x's / y's data). Collapses dimensions, then runs copy1..copy4. */
bool top_copy_strided(top_ctx *c, const tile_tensor *x, int64_t xoff, const int64_t *xs, tile_tensor *y, int64_t yoff,
                      const int64_t *ys, int rank, const int64_t *shape);
/* contiguous strides of a shape */
void top_strides(int rank, const int64_t *shape, int64_t *strides);
/* y = x converted to y's dtype, same number of elements */
bool top_convert(top_ctx *c, const tile_tensor *x, tile_tensor *y);
/* fill y with a value */
bool top_fill(top_ctx *c, tile_tensor *y, tile_op_scalar v);
/* elementwise binary by registry name into a prepared out (used by composite operators) */
bool top_binary_into(top_ctx *c, const char *op, const tile_tensor *a, const tile_tensor *b, tile_tensor *out);
/* reduction helper: sum/amax/... of x over dims into a prepared out (reduce.c) */
bool top_reduce_into(top_ctx *c, const char *op, const tile_tensor *x, const int *dims, int ndims, bool keepdim, tile_tensor *out);

#endif
