/* interp.h — the reference interpreter (TileDebug core).
 *
 * In:  a verified ir_func, the values of its symbolic sizes and scalar parameters, and host
 *      memory for every tensor parameter and returned buffer.
 * Out: the tensors written in place; or an error naming the buffer, the source line and the
 *      loop/block indices when the program does something undefined.
 *
 * It defines what every program means; every backend is tested against it.
 *   - Kernel blocks run one after another; T.Parallel iterations run in order. Nothing
 *     depends on that order in a correct program: the race check says so when it would.
 *   - Float arithmetic is done in double and rounded to the expression's dtype after each
 *     operation (bit-exact f32 arithmetic for + - * / sqrt); stores round with the
 *     conversions of core.h.
 *   - Checks (each can be switched off; all are on by default):
 *       bounds: an element access outside its buffer (tile operations clip instead);
 *       uninit: a read of an element of a non-parameter buffer (shared, fragment, local,
 *               temporaries, outputs) never written since its ALLOC;
 *       race:   two iterations of one T.Parallel nest touching the same element, one of
 *               them writing (atomics excepted), or two blocks of one kernel doing so on a
 *               global buffer.
 *   - f64 mode (--check on the interpreter target): every float buffer and every float
 *     operation is f64 and nothing is rounded, giving the reference a program is compared
 *     with.
 */
#ifndef TILE_INTERP_H
#define TILE_INTERP_H

#include "../ir/ir.h"

typedef struct interp_tensor {
    void *data;       /* row-major, dtype of the buffer (in f64 mode: double for float buffers) */
    int64_t shape[8]; /* must equal the buffer's shape under the bound sizes */
} interp_tensor;

typedef struct interp_options {
    bool check_bounds;  /* default true */
    bool check_uninit;  /* default true */
    bool check_races;   /* default true */
    bool f64_mode;      /* default false */
    long max_steps;     /* stop with an error after this many statements executed (0 = no limit);
                           protects fuzzers from endless loops */
} interp_options;
void interp_options_default(interp_options *o);

typedef struct interp_args {
    const int64_t *sizes;        /* value of f->sizes[i] */
    const double *scalar_f;      /* value of float scalar params, indexed by param position */
    const int64_t *scalar_i;     /* value of int/bool scalar params, indexed by param position */
    interp_tensor *params;       /* indexed by param position (unused for scalar params) */
    interp_tensor *rets;         /* f->nrets outputs, allocated by the caller */
} interp_args;

/* Runs f. Returns 0 on success. On a run-time error (a failed check, division by zero, a
 * failed assert, max_steps exceeded) returns 1 and writes one message into err such as
 *   prog.tl:12:17: error: out-of-bounds read of A[64, 3]: A has shape 64x32 (block (1, 0), i=64, k=3)
 *   prog.tl:9:13: error: read of uninitialised shared memory A_shared[3, 0] by copy (block (0, 0), k=1)
 *   prog.tl:15:9: error: data race on B_shared[0, 5]: written by iteration (i=0, j=5) and read by iteration (i=1, j=5) of the T.Parallel at prog.tl:14:18 (block (0, 0), i=1, j=5)
 *   prog.tl:22:26: error: data race on Out[0]: written by block (0) and read by block (1) of the kernel at prog.tl:16:9 (block (1), j=0)
 * followed by the source line and a caret (tile_diag_format). The trailing parenthesis
 * names the current block and the values of the enclosing loop variables (innermost last,
 * at most 8).
 *
 * Details every backend must match:
 *   - f is verified first (ir_verify_func); IR that does not verify is refused with the
 *     verifier's messages.
 *   - T.copy pairs element k of the source box with element k of the destination box
 *     (row-major); source elements outside the buffer read as 0, destination elements
 *     outside are dropped; the two boxes must have the same number of elements.
 *   - GEMM and REDUCE accumulate in the destination's dtype, except that sub-32-bit float
 *     destinations accumulate in float32 (rounded once on store). REDUCE skips source
 *     elements outside the buffer (so a clipped max is the max of the elements present);
 *     sum/abssum start at 0, max at -inf, min at +inf, absmax at 0 (clear=true).
 *   - fma on float32 is a single-rounding fmaf; other math is libm on doubles, rounded.
 *   - max_steps counts statements, and tile operations count one step per element (GEMM:
 *     per multiply-add) they process.
 *   - Race shadows cost 12 bytes per element of a buffer touched inside a T.Parallel or a
 *     kernel (calloc'ed lazily: untouched pages cost nothing); the uninitialised-read
 *     shadow 1 bit per element of non-parameter buffers. */
int interp_run(const ir_func *f, const interp_args *args, const interp_options *opt, tile_strbuf *err);

/* ---------- helpers (additive; for tests and the runtime) ---------- */
/* The shape of buffer b of f when f runs with `args` (its sizes and scalar parameters
 * bound); shape[rank..8) are set to 0. Returns 0, or 1 with a message in err. */
int interp_buffer_shape(const ir_func *f, const ir_buffer *b, const interp_args *args, int64_t shape[8],
                        tile_strbuf *err);
/* Allocates a zeroed tensor for buffer b (a parameter or an output) with that shape: the
 * storage of b's dtype, or doubles for float buffers when f64_mode. Returns 0, or 1 with a
 * message in err. Free with interp_tensor_free. */
int interp_tensor_alloc(const ir_func *f, const ir_buffer *b, const interp_args *args, bool f64_mode,
                        interp_tensor *t, tile_strbuf *err);
void interp_tensor_free(interp_tensor *t);

#endif
