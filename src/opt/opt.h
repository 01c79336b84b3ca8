/* opt.h — TileOpt: the optimisation passes between sema and code generation.
 *
 * In:  a verified ir_func (from sema) and a target name.
 * Out: the same ir_func rewritten in place (IR -> IR), still verified, with the same meaning:
 *      running it in the interpreter gives the same results (up to the documented
 *      reassociation of reductions). Decisions are visible in the IR (`tile ir --after PASS`).
 *
 * Passes are a visible list per target (opt_pipeline). Each pass's `run` returns 0, or 1
 * with an error diagnostic. After every pass the verifier runs in debug builds (or with
 * TILE_VERIFY=1).
 */
#ifndef TILE_OPT_H
#define TILE_OPT_H

#include "../ir/ir.h"

typedef struct opt_pass {
    const char *name;   /* e.g. "autoschedule" */
    const char *doc;    /* one line: what it decides */
    int (*run)(ir_module *m, ir_func *f, tile_diags *d);
} opt_pass;

/* The passes for a target ("interp" has none; "cpu", "cuda", "opencl"), in order. */
const opt_pass *const *opt_pipeline(const char *target, int *npasses);

/* Run the pipeline of `target` on f, stopping after pass `stop_after` (NULL: all). Returns 0,
 * or 1 with diagnostics (an unknown stop_after is an error naming the passes). */
int opt_run(ir_module *m, ir_func *f, const char *target, const char *stop_after, tile_diags *d);

/* The CUDA architecture the cuda pipeline's passes decide for (simt_options.sm: 90 for sm_90a,
 * 80..89 for the mma.sync architectures, 0 for the portable lowering only): TILE_CUDA_ARCH
 * when set (as `tile emit` uses it), else what the CUDA runtime found on the device
 * (opt_set_cuda_arch), else 0. */
int opt_cuda_arch(void);
void opt_set_cuda_arch(int sm);
/* simt_options.sm of an NVRTC architecture name ("sm_90a" -> 90, "sm_86" -> 86, later
 * architectures without sm_90a's features 89, below sm_80 0). */
int opt_arch_sm(const char *arch);

/* The file name a pass's log lines give for location l ("<ir>" for built nodes). */
static inline const char *opt_loc_file(tile_loc l) { return l.src && l.src->name ? l.src->name : "<ir>"; }

#endif
