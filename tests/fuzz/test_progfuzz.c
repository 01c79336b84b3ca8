/* Unit tests of the program fuzzer (src/progfuzz). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/progfuzz_int.h"
#include "tile.h"

static int fails;
#define CHECK(c, ...) do { if (!(c)) { fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); fails++; } } while (0)

/* generated programs compile (both forms, many seeds) */
static void t_generate(void) {
    int n = 0, plain = 0;
    for (uint64_t s = 1; s <= 400; s++) {
        pf_prog *p = pf_generate(s, PF_FORM_ANY);
        char *text = pf_render(p, NULL);
        tile_module *m = NULL;
        char *diag = NULL;
        tile_status st = tile_compile_string("gen.tl", text, NULL, 0, &m, &diag);
        CHECK(st == TILE_OK, "seed %llu does not compile:\n%s\n%s", (unsigned long long)s, diag ? diag : "", text);
        if (st == TILE_OK) n++;
        plain += pf_prog_form(p) == PF_FORM_PLAIN;
        tile_module_free(m);
        tile_free(diag);
        free(text);
        pf_prog_free(p);
    }
    CHECK(plain > 100 && plain < 300, "form balance: %d plain of 400", plain);
    /* the GEMM kernels keep the tensor-core rules; all thread counts and pipeline depths occur */
    int kg = 0, th[3] = {0}, st[5] = {0};
    for (uint64_t s = 1; s <= 400; s++) {
        pf_prog *p = pf_generate(s, PF_FORM_TILE);
        for (int o = 0; o < p->nops; o++) {
            const pf_op *op = &p->ops[o];
            if (op->kind != PF_OP_KGEMM) continue;
            kg++;
            CHECK(pf_kgemm_legal(op), "seed %llu: GEMM kernel %d breaks the tensor-core rules", (unsigned long long)s, o);
            th[op->threads == 128 ? 0 : op->threads == 256 ? 1 : 2]++;
            if (op->pipelined) st[op->stages]++;
        }
        pf_prog_free(p);
    }
    CHECK(kg > 100 && th[0] && th[1] && th[2] && st[0] && st[4], "GEMM kernels: %d; threads %d/%d/%d; stages 0: %d, 4: %d", kg, th[0], th[1], th[2], st[0], st[4]);
    printf("generate: %d GEMM kernels in 400 tile-form programs (threads 128/256/384: %d/%d/%d)\n", kg, th[0], th[1], th[2]);
    printf("generate: %d/400 compile, %d plain\n", n, plain);
}

static void t_determinism(void) {
    for (uint64_t s = 100; s < 160; s++) {
        pf_prog *a = pf_generate(s, PF_FORM_ANY), *b = pf_generate(s, PF_FORM_ANY);
        char *ta = pf_render(a, NULL), *tb = pf_render(b, NULL);
        CHECK(!strcmp(ta, tb), "seed %llu renders differently", (unsigned long long)s);
        pf_prog *c = pf_generate(s + 1000, PF_FORM_ANY);
        char *tc = pf_render(c, NULL);
        CHECK(strcmp(ta, tc), "seeds %llu and +1000 give the same program", (unsigned long long)s);
        free(ta); free(tb); free(tc);
        pf_prog_free(a); pf_prog_free(b); pf_prog_free(c);
    }
}

/* the reference accepts generated programs (no generator rejects) */
static void t_interp(void) {
    const char *tg[] = {"interp"};
    pf_config cfg = {tg, 1, 60, false};
    int ok = 0;
    for (uint64_t s = 7000; s < 7040; s++) {
        pf_prog *p = pf_generate(s, PF_FORM_ANY);
        pf_result r = pf_check(p, &cfg);
        if (r.verdict != PF_OK) {
            char *text = pf_render(p, NULL);
            CHECK(0, "seed %llu: %s: %s\n%s", (unsigned long long)s, pf_verdict_name(r.verdict), r.msg, text);
            free(text);
        } else ok++;
        pf_prog_free(p);
    }
    printf("interp: %d/40 ok\n", ok);
}

/* a fake target that mis-rounds sqrt: the shrinker must cut the program down to a few lines
 * that still call sqrt */
static void t_shrink(void) {
    const char *tg[] = {"interp-bug:sqrt"};
    pf_config cfg = {tg, 1, 60, false};
    for (uint64_t s = 1; s < 3000; s++) {
        pf_prog *p = pf_generate(s, PF_FORM_ANY);
        char *text = pf_render(p, NULL);
        bool has = strstr(text, "T.sqrt(") != NULL;
        free(text);
        if (!has) { pf_prog_free(p); continue; }
        pf_result r = pf_check(p, &cfg);
        if (r.verdict != PF_MISMATCH) { pf_prog_free(p); continue; }
        int tests = 0;
        pf_prog *q = pf_shrink(p, &cfg, &r, 300, 60, &tests);
        char *before = pf_render(p, NULL), *after = pf_render(q, NULL);
        int lines = 0;
        for (const char *c = after; *c; c++) lines += *c == '\n';
        printf("shrink: seed %llu, size %ld -> %ld in %d tests, %d lines:\n%s", (unsigned long long)s, pf_prog_size(p), pf_prog_size(q), tests, lines, after);
        CHECK(pf_prog_size(q) < pf_prog_size(p), "no progress");
        CHECK(lines <= 16, "shrunk program still has %d lines", lines);
        CHECK(strstr(after, "T.sqrt(") != NULL, "shrunk program lost the sqrt");
        pf_result r2 = pf_check(q, &cfg);
        CHECK(r2.verdict == PF_MISMATCH, "shrunk program no longer mismatches");
        free(before); free(after);
        pf_prog_free(q);
        pf_prog_free(p);
        return;
    }
    CHECK(0, "no program with a visible sqrt mismatch found");
}

int main(int argc, char **argv) {
    const char *w = argc > 1 ? argv[1] : "all";
    bool all = !strcmp(w, "all");
    if (all || !strcmp(w, "generate")) t_generate();
    if (all || !strcmp(w, "determinism")) t_determinism();
    if (all || !strcmp(w, "interp")) t_interp();
    if (all || !strcmp(w, "shrink")) t_shrink();
    if (fails) { fprintf(stderr, "%d failures\n", fails); return 1; }
    printf("ok\n");
    return 0;
}
