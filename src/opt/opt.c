/* opt.c — the TileOpt pass pipelines, per target. Each pass lives in its own file of this
 * folder; add it to the target's list below. */
#include "opt.h"

#include <stdlib.h>
#include <string.h>

#include "../core/core.h"

/* Passes (defined in their own files; weak so a pipeline can name a pass not written yet). */

extern const opt_pass opt_pass_deps, opt_pass_autoschedule, opt_pass_gpumap; /* deps.c, autoschedule.c, gpumap.c */
extern const opt_pass opt_pass_rowfuse;                                        /* rowfuse.c */
extern const opt_pass opt_pass_cpugemm;                                        /* cpu_gemm_lower.c */
extern const opt_pass opt_pass_layout, opt_pass_layout_opencl;                 /* layout.c */
extern const opt_pass opt_pass_prologue;                                       /* prologue.c */

static const opt_pass *const pipeline_none[] = {NULL};
static const opt_pass *const pipeline_cpu[] = {&opt_pass_deps, &opt_pass_autoschedule, &opt_pass_cpugemm, &opt_pass_rowfuse, NULL};
static const opt_pass *const pipeline_cuda[] = {&opt_pass_deps, &opt_pass_autoschedule, &opt_pass_gpumap, &opt_pass_prologue, &opt_pass_layout, NULL};
static const opt_pass *const pipeline_opencl[] = {&opt_pass_layout_opencl, NULL};

/* The pipelines by name: a target (src/runtime/backend.h) names its pipeline; a new target
 * reuses a row or adds one. Unknown names (and "interp") get no passes. */
static const struct {
    const char *name;
    const opt_pass *const *passes;
} pipelines[] = {
    {"interp", pipeline_none},
    {"cpu", pipeline_cpu},
    {"cuda", pipeline_cuda},
    {"opencl", pipeline_opencl},
};

static int count(const opt_pass *const *p) {
    int n = 0;
    while (p[n]) n++;
    return n;
}

const opt_pass *const *opt_pipeline(const char *target, int *npasses) {
    const opt_pass *const *p = pipeline_none;
    for (size_t i = 0; target && i < sizeof pipelines / sizeof pipelines[0]; i++)
        if (!strcmp(pipelines[i].name, target)) p = pipelines[i].passes;
    if (npasses) *npasses = count(p);
    return p;
}

/* The lowerings passes wrote into ir_stmt.lower (the layout pass), as decisions for
 * --explain: what every statement got, whichever pass decided it. */
static void explain_lowerings(const ir_func *f, const ir_stmt *s, const char *target) {
    if (!s) return;
    /* the cuda pipeline without an architecture (no device, TILE_CUDA_ARCH unset) plans the
     * portable lowering only */
    if (s->kind == IR_S_GEMM && target && !strcmp(target, "cuda") && opt_cuda_arch() == 0)
        ir_explain_stmt(f, s, "layout", IR_DEC_DECLINED, "tensor cores (wgmma, mma.sync)",
                        "no CUDA architecture known (no device found and TILE_CUDA_ARCH unset; TILE_CUDA_ARCH=sm_90a plans for Hopper)");
    if (s->lower && s->lower->kind && ir_stmt_op_name(s)) {
        const ir_lowering *l = s->lower;
        const char *what = l->detail ? tile_arena_printf(f->explain->arena, "%s (%s)", l->kind, l->detail) : l->kind;
        if (l->why) ir_explain_stmt(f, s, "layout", IR_DEC_GOT, what, "%s", l->why);
        else ir_explain_stmt(f, s, "layout", IR_DEC_GOT, what, NULL);
    }
    for (int i = 0; i < s->nbody && s->body; i++) explain_lowerings(f, s->body[i], target);
}

int opt_run(ir_module *m, ir_func *f, const char *target, const char *stop_after, tile_diags *d) {
    int n;
    const opt_pass *const *p = opt_pipeline(target, &n);
    if (stop_after && strcmp(stop_after, "sema")) {
        bool found = false;
        for (int i = 0; i < n; i++)
            if (!strcmp(p[i]->name, stop_after)) found = true;
        if (!found) {
            tile_strbuf sb = {0};
            tile_sb_puts(&sb, "sema");
            for (int i = 0; i < n; i++) tile_sb_printf(&sb, ", %s", p[i]->name);
            tile_loc nowhere = {0};
            tile_error_at(d, nowhere, "unknown pass '%s' for target '%s'; its passes are: %s", stop_after, target ? target : "interp", sb.data);
            tile_sb_free(&sb);
            return 1;
        }
    }
    ir_explain_ops(f, f->body, NULL, NULL); /* the tile ops as written, for --explain */
    if (stop_after && !strcmp(stop_after, "sema")) return 0;
    bool verify = tb_knob_bool(TB_K_TILE_VERIFY);
#ifndef NDEBUG
    verify = true;
#endif
    for (int i = 0; i < n; i++) {
        double t0 = tile_now();
        if (p[i]->run(m, f, d)) return 1;
        tile_log(TILE_LOG_DEBUG, "pass %s on %s: %.3f ms", p[i]->name, f->name, (tile_now() - t0) * 1e3);
        if (verify) {
            tile_diags vd;
            tile_diags_init(&vd);
            if (!ir_verify_func(f, &vd)) {
                for (int k = 0; k < vd.len; k++)
                    tile_error_at(d, vd.items[k].loc, "internal error: the IR is invalid after pass '%s': %s", p[i]->name, vd.items[k].msg);
                tile_diags_free(&vd);
                return 1;
            }
            tile_diags_free(&vd);
        }
        if (stop_after && !strcmp(stop_after, p[i]->name)) break;
    }
    explain_lowerings(f, f->body, target);
    return 0;
}

static int g_cuda_sm = -1;

int opt_arch_sm(const char *arch) {
    if (!arch || strncmp(arch, "sm_", 3) != 0) return 0;
    if (!strcmp(arch, "sm_90a")) return 90;
    int n = atoi(arch + 3);
    return n < 80 ? 0 : n > 89 ? 89 : n;
}

void opt_set_cuda_arch(int sm) { g_cuda_sm = sm; }

int opt_cuda_arch(void) {
    const char *e = tb_knob_str(TB_K_TILE_CUDA_ARCH);
    if (e && *e) return opt_arch_sm(e);
    return g_cuda_sm > 0 ? g_cuda_sm : 0;
}
