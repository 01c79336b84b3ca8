/* sema.h — semantic analysis: AST -> typed Tile IR.
 *
 * In:  an ast_module (src/front), the -D bindings of the command line.
 * Out: an ir_module with one ir_func per entry point (a kernel, or a kernel factory
 *      specialised with its compile-time parameters), and diagnostics.
 *
 * What it does: resolves names (locals, buffers, factory parameters, symbolic dimensions,
 * the `T.` namespace), evaluates compile-time code (factory bodies, constant arithmetic with
 * Python semantics, `if` on constants), infers dtypes with the rules of docs/language.md
 * (sub-32-bit floats compute in f32; weakly typed literals adopt their partner's type),
 * checks the shape rules of copy, gemm and reductions where shapes are constant, inlines
 * helper functions and `@T.macro`s, hoists generator `sum(...)` into loops, and emits IR.
 *
 * Entry points of a module:
 *   - a module-level def decorated with @tile_op, @kernel or @T.prim_func;
 *   - a module-level def (optionally @tilelang.jit(out_idx=...)) whose body defines a
 *     @T.prim_func and returns it: a kernel factory; its parameters are compile-time values
 *     (from -D or their defaults; an integer parameter with neither becomes a symbolic size).
 * Other module-level defs are helpers, inlined where called.
 */
#ifndef TILE_SEMA_H
#define TILE_SEMA_H

#include "../front/front.h"
#include "../ir/ir.h"

typedef struct sema_define {
    const char *name;
    const char *value;  /* "64", "1.5", "True", "bfloat16", ... */
    bool used;          /* set by sema when some entry point consumed it */
} sema_define;

typedef struct sema_options {
    sema_define *defines;
    int ndefines;
    const char *only_func; /* lower only this entry point (NULL: all) */
} sema_options;

/* Names of the entry points of a module, in source order (arena-allocated). */
int sema_entry_points(const ast_module *m, const char ***names, tile_arena *arena);

/* Lower the entry points. Returns a module (never NULL; functions with errors are left
 * out) and reports problems in diags. Every function returned passes ir_verify_func. */
ir_module *sema_lower(const ast_module *m, sema_options *opt, tile_diags *diags);

#endif
