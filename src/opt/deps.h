/* deps.h — TileOpt dependence analysis of plain-form loop nests.
 *
 * In:  a verified ir_func (plain form: every loop SERIAL as written) and one of its FOR loops.
 * Out: whether the loop carries a dependence from one iteration to another, and whether the
 *      carried dependences are all reductions. Nothing is rewritten.
 *
 * Used by the `autoschedule` pass (src/opt/autoschedule.c) and available to code generators
 * that want to know, e.g., that a SERIAL loop is a sum reduction into a local and may be
 * vectorised with reassociation.
 *
 *   opt_loop_deps d;
 *   opt_deps_analyze(f, loop, &d);
 *   if (d.kind == OPT_DEP_INDEPENDENT) ...   // iterations may run in any order / in parallel
 *   if (d.kind == OPT_DEP_REDUCTION) ...     // d.red[0..d.nred): the accumulators
 *   if (d.kind == OPT_DEP_CARRIED) puts(d.why);
 *
 * What is understood (everything else is "carried", i.e. conservative):
 *   - element accesses buf[idx...] whose indices are affine in the loop variables, with
 *     constant coefficients; other terms (sizes, scalar parameters, enclosing loop indices,
 *     locals not assigned in the loop) are symbols with the same value in both iterations.
 *     Two accesses to one buffer, one a write, conflict across iterations unless some
 *     dimension proves the iterations equal (`C[i, j]` for loop i) or the equation of some
 *     dimension has no integer solution (GCD test, constant dependence distance not smaller
 *     than a constant trip count). Writes to outputs that were never read count like any
 *     other write (two iterations writing one element is a dependence). Tile operations
 *     inside the loop touch their whole buffer.
 *   - scalar locals: a local assigned in the loop and read, in some iteration, before that
 *     iteration assigns it carries a value across iterations; a local always assigned
 *     before it is read is private to an iteration (privatisable) unless its value is still
 *     needed after the loop.
 *   - reductions: `acc = acc + e` (also `e + acc`, `acc - e`), `acc = max(acc, e)`,
 *     `acc = min(acc, e)` where those updates are the only uses of acc in the loop, and the
 *     same forms on a buffer element `X[idx] = X[idx] + e` where every access to X in the
 *     loop is such an update.
 *   - buffers allocated inside the loop are private to an iteration; distinct buffers never
 *     overlap (tensor parameters are assumed not to alias each other).
 *   - break inside the loop (leaving it) is a dependence; continue is not, but is reported
 *     (`has_continue`) because a parallel loop cannot contain one.
 */
#ifndef TILE_OPT_DEPS_H
#define TILE_OPT_DEPS_H

#include "../ir/ir.h"

typedef enum opt_dep_kind {
    OPT_DEP_INDEPENDENT = 0, /* no loop-carried dependence */
    OPT_DEP_REDUCTION = 1,   /* the only carried dependences are the reductions in red[] */
    OPT_DEP_CARRIED = 2      /* a carried dependence, or something not understood (see why) */
} opt_dep_kind;

#define OPT_DEPS_MAX_RED 8

typedef struct opt_reduction {
    const ir_var *var;    /* the scalar local accumulator, or NULL */
    const ir_buffer *buf; /* the buffer whose elements accumulate, or NULL */
    ir_reduce_kind op;    /* IR_RED_SUM, IR_RED_MAX or IR_RED_MIN */
} opt_reduction;

typedef struct opt_loop_deps {
    opt_dep_kind kind;
    char why[320];         /* CARRIED: the first reason found (one line, no trailing newline) */
    bool has_continue;     /* a `continue` of this loop is inside it */
    int nred;
    opt_reduction red[OPT_DEPS_MAX_RED];
} opt_loop_deps;

/* Analyse `loop` (an IR_S_FOR inside f->body). Never fails: what it cannot decide is
 * OPT_DEP_CARRIED with a reason. */
void opt_deps_analyze(const ir_func *f, const ir_stmt *loop, opt_loop_deps *out);

/* One line describing d ("independent", "reduction (sum into acc)", "carried: ..."). */
void opt_deps_describe(const opt_loop_deps *d, tile_strbuf *out);

/* True if local v may be read after statement s (somewhere in f->body) before it is
 * assigned again, i.e. the value s leaves in v is still needed. */
bool opt_local_live_after(const ir_func *f, const ir_stmt *s, const ir_var *v);

/* Affine view of an integer expression: true when e is c0 + c1*x1 + ... with constant
 * coefficients (x: variables; locals count as symbols); then *coef is the coefficient of
 * v in it (0 when v does not occur). */
bool opt_affine_coeff(const ir_expr *e, const ir_var *v, int64_t *coef);

/* True if statement s (a subtree) references local v (reads or assigns it). */
bool opt_stmt_uses_var(const ir_stmt *s, const ir_var *v);

#endif
