/* runtime.h — internals of the public API (include/tile.h) shared by the runtime files.
 *
 * In:  source text and -D bindings (compile); host tensors (run).
 * Out: tile_module / tile_kernel handles; results written into tensors.
 */
#ifndef TILE_RUNTIME_H
#define TILE_RUNTIME_H

#include "../core/core.h"
#include "../front/front.h"
#include "../ir/ir.h"

#include "../sema/sema.h"
#include "backend.h"

/* A kernel prepared for one compiled target: its own copy of the IR (lowered again from the
 * AST, then rewritten by the target's TileOpt pipeline) and the backend's executable. */
typedef struct target_state {
    const tile_backend *backend;
    ir_module *mod;
    ir_func *f;
    void *exe;
} target_state;

enum { TILE_MAX_TARGETS = 4 };

struct tile_kernel {
    struct tile_module *m;
    ir_func *f;                 /* as sema produced it: what the interpreter runs */
    target_state targets[TILE_MAX_TARGETS];
    int ntargets;
};

struct tile_module {
    tile_source *src;
    tile_arena ast_arena;
    ast_module *ast;
    ir_module *ir;
    sema_define *defines;       /* the -D bindings, kept to lower again for each target */
    int ndefines;
    struct tile_kernel *kernels;
    int nkernels;
};

/* Evaluate an integer size expression given the values of f->sizes (false if unbound). */
bool rt_eval_size(const ir_expr *e, const int64_t *sizes, const bool *bound, const ir_func *f, int64_t *out);
/* Bind f->sizes from the tensors given, check shapes, fill in the shapes of the others. */
tile_status rt_bind(const ir_func *f, tile_tensor *params, int nparams, tile_tensor *rets, int nrets, int64_t *sizes, tile_strbuf *err);

#endif
