/* progfuzz.h — `tile fuzz`: random well-typed TileLang programs (plain and tile form), run on
 * several targets, compared with the interpreter, mismatches shrunk to small reproducers.
 *
 *   pf_generate   a random program from a seed (deterministic)
 *   pf_render     its TileLang source text
 *   pf_check      compile + run the reference (interpreter, all checks on) + every target,
 *                 each target in a forked child with a timeout; compare outputs
 *   pf_shrink     delta debugging on the program's structure while a finding persists
 *
 * See docs/fuzz.md. */
#ifndef TILE_PROGFUZZ_H
#define TILE_PROGFUZZ_H

#include <stdbool.h>
#include <stdint.h>

#include "tile.h"

typedef struct pf_prog pf_prog;

enum { PF_FORM_ANY = -1, PF_FORM_PLAIN = 0, PF_FORM_TILE = 1 };

/* A random valid program. form: PF_FORM_ANY (chosen by the seed), PLAIN or TILE. */
pf_prog *pf_generate(uint64_t seed, int form);
pf_prog *pf_clone(const pf_prog *p);
void pf_prog_free(pf_prog *p);
int pf_prog_form(const pf_prog *p);
/* A size measure (statements + expression nodes + elements) the shrinker minimises. */
long pf_prog_size(const pf_prog *p);

/* Render as TileLang. bug_op: NULL, or the name of a math intrinsic ("sqrt", "exp", ...)
 * whose result the text scales by (1 + 2^-6): a deliberately wrong "target" for testing the
 * shrinker. The result is malloc'ed. */
char *pf_render(const pf_prog *p, const char *bug_op);

/* Output tolerance (norm-wise relative) of the named parameter; 0 = exact. */
double pf_param_tolerance(const pf_prog *p, const char *name);
/* The same on a given target: on "cuda", GEMM outputs also get the error floor of tensor-core
 * accumulation (docs/cli.md). */
double pf_target_tolerance(const pf_prog *p, const char *name, const char *target);

/* Is `target` usable here? Asked in a forked child, so that the parent never initialises a
 * GPU driver before forking its target runs. false with the reason in why. */
bool pf_target_available(const char *target, char *why, size_t whylen);

/* ---- running ---- */
typedef enum pf_verdict {
    PF_OK = 0,
    PF_REJECT,     /* the reference (interpreter) rejected the program: a generator bug */
    PF_MISMATCH,   /* a target's outputs differ from the reference beyond tolerance */
    PF_FAIL,       /* a target failed to compile or run (error status) */
    PF_CRASH,      /* a target crashed (signal) */
    PF_TIMEOUT     /* a target ran past the time limit */
} pf_verdict;

const char *pf_verdict_name(pf_verdict v);

typedef struct pf_result {
    pf_verdict verdict;
    int target;          /* index into the targets array of the finding (-1 for REJECT/OK) */
    char msg[1024];      /* what happened */
} pf_result;

typedef struct pf_config {
    const char *const *targets; /* "interp", "cpu", "opencl", or "interp-bug:OP" (tests) */
    int ntargets;
    double timeout_s;           /* per target run (default 120) */
    bool verbose;
} pf_config;

/* Compile `p` (rendered), run the reference and every target on the same seeded inputs.
 * Stops at the first finding. */
pf_result pf_check(const pf_prog *p, const pf_config *cfg);

/* Shrink p while pf_check keeps giving the same verdict on the same target. Returns a new
 * program (p itself is not changed); *tests receives the number of checks it ran. At most
 * max_tests checks and max_seconds seconds. */
pf_prog *pf_shrink(const pf_prog *p, const pf_config *cfg, const pf_result *finding, int max_tests, double max_seconds, int *tests);

/* The seeded input fill of `tile run --seed S` (so `tile run FILE --seed S --check` sees the
 * same inputs): floats uniform in [-1, 1), signed ints in [-8, 8), unsigned in [0, 16). */
void pf_fill_random(tile_tensor *t, uint64_t run_seed, int param_index);

#endif
