/* codegen.h — code generators: Tile IR -> source text for a compiled target.
 *
 * In:  a verified ir_func (after the target's TileOpt pipeline).
 * Out: one self-contained translation unit as text.
 *
 * C (the cpu backend, src/codegen/c.c): the prelude (src/codegen/prelude.h with
 * src/base/convert.h and src/codegen/cpu_abi.h, embedded at build time) followed by the
 * kernel. The unit exports `int tile_entry(const tile_cpu_args *)` (cpu_abi.h) and needs only
 * libc and libm: sizes, buffers, scalars, the thread pool and the GEMM library come in
 * through the argument at run time. Compile it with -ffp-contract=off and without
 * -ffast-math: then every f32 expression gives the interpreter's result bit for bit.
 */
#ifndef TILE_CODEGEN_H
#define TILE_CODEGEN_H

#include "../ir/ir.h"

typedef struct tile_codegen_c_options {
    bool bounds_checks;   /* check every element access (an out-of-bounds access is a run-time error) */
    bool param_strides;   /* parameters and outputs take element strides from tile_cpu_args.strides
                             (strided views, tile_launch); otherwise they are row-major */
} tile_codegen_c_options;

/* Appends the C source of f to out. Returns 0, or 1 with a message in err (an IR construct
 * the generator does not handle: a bug to report). opt may be NULL (defaults). */
int tile_codegen_c(const ir_func *f, const tile_codegen_c_options *opt, tile_strbuf *out, tile_strbuf *err);

/* The prelude text every generated unit starts with (for tests and docs). */
const char *tile_codegen_c_prelude(void);

/* The C type that holds a value of dtype dt in generated code (C, OpenCL C and CUDA C alike):
 * int for bool, the <stdint.h> names for integers, double for f64, float for every other float. */
const char *codegen_value_ctype(tile_dtype dt);

#endif
