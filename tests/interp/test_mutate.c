/* test_mutate.c — robustness: take well-formed functions, damage them at random (NULL
 * children, wrong dtypes / kinds / operators / enum values, swapped buffers and variables,
 * odd constants, broken T.Parallel groups), then
 *   - the verifier and the printer must not crash on the result, and
 *   - whatever the verifier accepts, the interpreter must run to completion or stop with
 *     an error message (never crash, never leak: run under ASan/valgrind).
 * Deterministic (fixed seeds).  test_mutate [iterations] [seed] */
#include "../ir/irb.h"

static uint64_t rs = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void) {
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (uint32_t)(rs >> 11);
}
static int pick(int n) { return n > 0 ? (int)(rnd() % (uint32_t)n) : 0; }

/* ---------- node collection ---------- */
typedef struct nodes {
    ir_expr **slots[4096]; /* places holding an expression pointer */
    int nslots;
    ir_stmt *stmts[1024];
    int nstmts;
    ir_stmt **sslots[1024]; /* places holding a statement pointer */
    int nsslots;
} nodes;
static nodes N;

static void walk_e(ir_expr **slot, int depth) {
    if (!*slot || depth > 50) return;
    if (N.nslots < 4096) N.slots[N.nslots++] = slot;
    ir_expr *e = *slot;
    for (int i = 0; i < e->nargs && e->args; i++) walk_e(&e->args[i], depth + 1);
}

static void walk_s(ir_stmt **slot, int depth) {
    ir_stmt *s = *slot;
    if (!s || depth > 50) return;
    if (N.nsslots < 1024) N.sslots[N.nsslots++] = slot;
    if (N.nstmts < 1024) N.stmts[N.nstmts++] = s;
    walk_e(&s->lo, depth);
    walk_e(&s->extent, depth);
    walk_e(&s->cond, depth);
    walk_e(&s->value, depth);
    if (s->buf && s->idx)
        for (int i = 0; i < s->buf->rank; i++) walk_e(&s->idx[i], depth);
    for (int i = 0; i < s->ngrid && i < 3; i++) walk_e(&s->grid[i], depth);
    for (int r = 0; r < s->nregions && s->regions; r++) {
        ir_region *g = &s->regions[r];
        for (int d = 0; g->buf && d < g->buf->rank; d++) {
            if (g->start) walk_e(&g->start[d], depth);
            if (g->extent) walk_e(&g->extent[d], depth);
        }
    }
    for (int i = 0; i < s->nbody && s->body; i++) walk_s(&s->body[i], depth + 1);
}

/* a fresh leaf expression of a random kind */
static ir_expr *random_leaf(void) {
    switch (pick(8)) {
    case 0: return I32((int64_t)pick(200) - 20);
    case 1: return F32((double)pick(100) / 7.0);
    case 2: return CI(TILE_DT_I64, pick(70));
    case 3: return BOOLC(pick(2));
    case 4: return CF(TILE_DT_F16, 1.5);
    case 5: return CI(TILE_DT_U8, 255);
    default:
        if (F->nvars) return V(F->vars[pick(F->nvars)]);
        return I32(0);
    }
}

static void mutate_expr(ir_expr **slot) {
    ir_expr *e = *slot;
    switch (pick(12)) {
    case 0: *slot = NULL; break;
    case 1: *slot = random_leaf(); break;
    case 2: e->dtype = (tile_dtype)(pick(TILE_DT_COUNT + 3) - 1); break;
    case 3: e->op = pick(30) - 2; break;
    case 4: e->kind = (ir_expr_kind)pick(IR_E_COUNT + 1); break;
    case 5: if (e->nargs > 0) e->nargs--; break;
    case 6: if (e->kind == IR_E_CONST) e->ival = (int64_t)pick(3) - 1 + (pick(2) ? INT32_MAX : 0); break;
    case 7: if (e->kind == IR_E_CONST) e->fval = pick(2) ? 1e30 : -0.0; break;
    case 8:
        if (e->kind == IR_E_LOAD && F->nbuffers) {
            ir_buffer *b = F->buffers[pick(F->nbuffers)];
            if (e->buf && b->rank == e->buf->rank) e->buf = b;
        }
        break;
    case 9: if (e->kind == IR_E_VAR && F->nvars) e->var = F->vars[pick(F->nvars)]; break;
    case 10: *slot = ir_cast(M, (tile_dtype)pick(TILE_DT_COUNT), e, L0); break;
    default:
        if (e->dtype == TILE_DT_I32) *slot = ir_binary(M, (ir_binop)pick(IR_B_COUNT), e, I32(pick(3)), L0);
        break;
    }
}

static void mutate_stmt(ir_stmt *s) {
    switch (pick(16)) {
    case 0: s->kind = (ir_stmt_kind)pick(IR_S_COUNT + 1); break;
    case 1: s->loop_kind = (ir_loop_kind)pick(IR_LOOP_KIND_COUNT + 1); break;
    case 2: s->par_group_depth = pick(4) - 1; break;
    case 3: s->num_stages = pick(3); break;
    case 4: if (F->nvars) s->var = F->vars[pick(F->nvars)]; break;
    case 5: if (F->nbuffers) { /* index arrays hold the old rank's entries: never raise the rank */
            ir_buffer *b = F->buffers[pick(F->nbuffers)];
            if (!s->idx || (s->buf && b->rank <= s->buf->rank)) s->buf = b;
        }
        break;
    case 6: if (s->nregions && s->regions && F->nbuffers) {
            ir_region *g = &s->regions[pick(s->nregions)];
            ir_buffer *b = F->buffers[pick(F->nbuffers)];
            if (!g->buf || b->rank <= g->buf->rank) g->buf = b; /* arrays hold at least rank entries */
        }
        break;
    case 7: s->dim = pick(4) - 1; break;
    case 8: s->reduce_op = pick(IR_RED_COUNT + 1); break;
    case 9: s->trans_a = pick(2); s->trans_b = pick(2); s->clear = pick(2); break;
    case 10: s->atomic_op = pick(IR_ATOMIC_COUNT + 1); break;
    case 11: if (s->kind == IR_S_KERNEL) s->ngrid = pick(5); break;
    case 12: s->threads = pick(3) - 1; break;
    case 13: if (s->nbody > 0) s->nbody--; break;
    case 14: if (s->nregions > 0) s->nregions--; break;
    default: s->cond = pick(2) ? BOOLC(pick(2)) : random_leaf(); break;
    }
}

static void mutate_tree(void) {
    N.nslots = N.nstmts = N.nsslots = 0;
    walk_s(&F->body, 0);
    int what = pick(10);
    if (what < 5 && N.nslots) mutate_expr(N.slots[pick(N.nslots)]);
    else if (what < 8 && N.nstmts) mutate_stmt(N.stmts[pick(N.nstmts)]);
    else if (N.nsslots) {
        ir_stmt **slot = N.sslots[pick(N.nsslots)];
        switch (pick(4)) {
        case 0: *slot = NULL; break;
        case 1: *slot = SIMPLE(pick(2) ? IR_S_BREAK : IR_S_CONTINUE); break;
        case 2: *slot = SEQ(); break;
        default: /* copy a leaf statement elsewhere (it may now use things out of scope) */
            if (N.nstmts) {
                ir_stmt *o = N.stmts[pick(N.nstmts)];
                if (o->nbody == 0) *slot = o; /* leaves only: no cycles */
            }
            break;
        }
    }
}

/* ---------- the seed functions and their arguments ---------- */
typedef struct fixture {
    int64_t sizes[4];
    double sf[4];
    int64_t si[4];
    interp_tensor p[4];
    interp_tensor r[4];
} fixture;
static float gA[64 * 64], gB[64 * 64], gC[64 * 64], gD[64];
static uint16_t gH[64 * 64];

static ir_expr *ceildiv(ir_expr *a, int64_t b) { return BIN(IR_B_FLOORDIV, ADD(a, I32(b - 1)), I32(b)); }

static void seed_plain(fixture *fx) {
    begin("matmul", IR_FORM_PLAIN);
    ir_var *m = size_var("M"), *k = size_var("K"), *n = size_var("N");
    ir_buffer *A = PARAM("A", TILE_DT_F32, V(m), V(k));
    ir_buffer *B = PARAM("B", TILE_DT_F32, V(k), V(n));
    ir_buffer *C = OUTPUT("C", TILE_DT_F32, V(m), V(n));
    ir_buffer *T = TEMP("t", TILE_DT_F32, IR_SCOPE_LOCAL, I32(2));
    ir_var *i = loop_var("i"), *j = loop_var("j"), *kk = loop_var("k");
    ir_var *acc = local_var("acc", TILE_DT_F32);
    F->body = SEQ(ALLOC(T), FILL(2, RW(T), F32(0)),
                  FOR(i, I32(0), V(m),
                      FOR(j, I32(0), V(n),
                          SEQ(ASSIGN(acc, LD(T, I32(1))),
                              FOR(kk, I32(0), V(k),
                                  ASSIGN(acc, ADD(V(acc), MUL(LD(A, V(i), V(kk)), LD(B, V(kk), V(j)))))),
                              IF(LT(V(acc), F32(0)), ST(C, V(acc), V(i), V(j)), ST(C, CALL1(IR_I_SQRT, V(acc)), V(i), V(j)))))));
    fx->sizes[0] = 8; fx->sizes[1] = 8; fx->sizes[2] = 8;
    fx->p[0] = (interp_tensor){gA, {8, 8}};
    fx->p[1] = (interp_tensor){gB, {8, 8}};
    fx->r[0] = (interp_tensor){gC, {8, 8}};
}

static void seed_tile(fixture *fx) {
    begin("gemm", IR_FORM_TILE);
    ir_var *m = size_var("M"), *n = size_var("N"), *k = size_var("K");
    ir_buffer *A = PARAM("A", TILE_DT_F16, V(m), V(k));
    ir_buffer *B = PARAM("B", TILE_DT_F16, V(n), V(k));
    ir_buffer *C = PARAM("C", TILE_DT_F32, V(m), V(n));
    ir_buffer *Cnt = PARAM("Cnt", TILE_DT_F32, I32(2));
    ir_var *bx = block_var("bx"), *by = block_var("by"), *ko = loop_var("ko"), *i = loop_var("i"), *j = loop_var("j");
    ir_buffer *As = TEMP("A_s", TILE_DT_F16, IR_SCOPE_SHARED, I32(16), I32(8));
    ir_buffer *Bs = TEMP("B_s", TILE_DT_F16, IR_SCOPE_SHARED, I32(16), I32(8));
    ir_buffer *Cl = TEMP("C_l", TILE_DT_F32, IR_SCOPE_FRAGMENT, I32(16), I32(16));
    ir_buffer *Rm = TEMP("R_m", TILE_DT_F32, IR_SCOPE_FRAGMENT, I32(16));
    ir_stmt *kl = FORK(IR_LOOP_PIPELINED, 6, ko, I32(0), ceildiv(V(k), 8),
                       SEQ(COPY(7, R2(A, MUL(V(by), I32(16)), I32(16), MUL(V(ko), I32(8)), I32(8)), RW(As)),
                           COPY(8, R2(B, MUL(V(bx), I32(16)), I32(16), MUL(V(ko), I32(8)), I32(8)), RW(Bs)),
                           GEMM(9, RW(As), RW(Bs), RW(Cl), false, true, false)));
    ir_expr *row = ADD(MUL(V(by), I32(16)), V(i)), *col = ADD(MUL(V(bx), I32(16)), V(j));
    ir_stmt *out = PAR2(10, i, I32(16), j, I32(16),
                        IF(BIN(IR_B_AND, LT(row, V(m)), LT(col, V(n))), ST(C, ADD(LD(Cl, V(i), V(j)), LD(Rm, V(i))), row, col), NULL));
    F->body = KERNEL2(2, ceildiv(V(n), 16), ceildiv(V(m), 16), bx, by,
                      SEQ(ALLOC(As), ALLOC(Bs), ALLOC(Cl), ALLOC(Rm), FILL(5, RW(Cl), F32(0)), kl,
                          REDUCE(11, IR_RED_MAX, RW(Cl), RW(Rm), 1, true), out,
                          ATOMIC_ADD(12, Cnt, LD(Rm, I32(3)), I32(1))));
    fx->sizes[0] = 20; fx->sizes[1] = 24; fx->sizes[2] = 12;
    fx->p[0] = (interp_tensor){gH, {20, 12}};
    fx->p[1] = (interp_tensor){gH, {24, 12}};
    fx->p[2] = (interp_tensor){gC, {20, 24}};
    fx->p[3] = (interp_tensor){gD, {2}};
}

static void seed_misc(fixture *fx) {
    begin("misc", IR_FORM_TILE);
    ir_var *n = scalar_param("n", TILE_DT_I32);
    ir_var *x = scalar_param("x", TILE_DT_F32);
    ir_buffer *D = PARAM("D", TILE_DT_F32, I32(64));
    ir_buffer *O = OUTPUT("O", TILE_DT_I32, I32(4));
    ir_var *t = local_var("t", TILE_DT_I32), *bx = block_var("bx"), *i = loop_var("i");
    ir_buffer *Lb = TEMP("L", TILE_DT_I32, IR_SCOPE_LOCAL, I32(4));
    F->body = SEQ(ASSIGN(t, I32(0)),
                  WHILE(LT(V(t), V(n)),
                        SEQ(ASSIGN(t, ADD(V(t), I32(1))),
                            IF(BIN(IR_B_EQ, BIN(IR_B_FLOORMOD, V(t), I32(3)), I32(0)), SIMPLE(IR_S_CONTINUE), NULL),
                            IF(BIN(IR_B_GT, V(t), I32(50)), SIMPLE(IR_S_BREAK), NULL))),
                  ST(O, BIN(IR_B_SHL, V(t), I32(2)), I32(0)),
                  ST(O, CAST(TILE_DT_I32, CAST(TILE_DT_FP8_E4M3, V(x))), I32(1)),
                  ST(O, ir_reinterpret(M, TILE_DT_I32, V(x), L0), I32(2)),
                  ST(O, SEL(LT(V(n), I32(64)), CAST(TILE_DT_I32, LD(D, BIN(IR_B_MAX, V(n), I32(0)))), I32(-1)), I32(3)),
                  KERNEL1(20, I32(3), bx,
                          SEQ(ALLOC(Lb), PAR1(21, i, I32(4), ST(Lb, MUL(V(i), V(bx)), V(i))),
                              ATOMIC_ADD(22, O, LD(Lb, I32(2)), I32(0)),
                              ASSERT_S(23, BIN(IR_B_GE, LD(Lb, I32(0)), I32(0)), "non-negative"))));
    fx->si[0] = 10;
    fx->sf[1] = 2.75;
    fx->p[2] = (interp_tensor){gD, {64}};
    static int32_t o[4];
    fx->r[0] = (interp_tensor){o, {4}};
}

int main(int argc, char **argv) {
    int iters = argc > 1 ? atoi(argv[1]) : 3000;
    if (argc > 2) rs = (strtoull(argv[2], NULL, 0) * 0x9E3779B97F4A7C15ull) | 1;
    bool show = getenv("TILE_MUTATE_SHOW") != NULL;
    for (int i = 0; i < 64 * 64; i++) {
        gA[i] = (float)(i % 13) - 6;
        gB[i] = (float)(i % 7) / 3;
        tile_store_f(TILE_DT_F16, gH, (size_t)i, (double)(i % 5) - 2);
    }
    for (int i = 0; i < 64; i++) gD[i] = (float)i;
    int verified = 0, ran_ok = 0, ran_err = 0;
    for (int it = 0; it < iters; it++) {
        fixture fx;
        memset(&fx, 0, sizeof fx);
        int which = it % 3;
        if (which == 0) seed_plain(&fx);
        else if (which == 1) seed_tile(&fx);
        else seed_misc(&fx);
        int nmut = 1 + pick(3);
        for (int k = 0; k < nmut; k++) mutate_tree();
        tile_diags d;
        tile_diags_init(&d);
        bool ok = ir_verify_func(F, &d);
        CHECK(ok == (d.errors == 0), "verifier result and diagnostics disagree (iteration %d)", it);
        tile_diags_free(&d);
        tile_strbuf sb = {0};
        ir_print_func(F, &sb);
        tile_sb_free(&sb);
        if (ok) {
            verified++;
            interp_options o;
            interp_options_default(&o);
            o.max_steps = 200000;
            o.f64_mode = pick(4) == 0;
            static double dbuf[4][64 * 64];
            if (o.f64_mode) /* float buffers are doubles in f64 mode */
                for (int p = 0; p < 4; p++) {
                    if (fx.p[p].data == gA || fx.p[p].data == gB || fx.p[p].data == gC || fx.p[p].data == gD || fx.p[p].data == gH)
                        fx.p[p].data = dbuf[p];
                    if (fx.r[p].data == gC) fx.r[p].data = dbuf[3];
                }
            interp_args a = {fx.sizes, fx.sf, fx.si, fx.p, fx.r};
            tile_strbuf err = {0};
            int rc = interp_run(F, &a, &o, &err);
            CHECK(rc == 0 || rc == 1, "interp_run returned %d", rc);
            CHECK(rc == 0 || (err.data && strstr(err.data, "error: ")), "an error without a message (iteration %d)", it);
            if (rc && show && err.data) {
                char *nl = strchr(err.data, '\n');
                if (nl) *nl = 0;
                fprintf(stderr, "ERR %s\n", err.data);
            }
            if (rc == 0) ran_ok++;
            else ran_err++;
            tile_sb_free(&err);
        }
        end();
    }
    tile_source_free(SRC);
    printf("test_mutate: %d mutants, %d verified (%d ran, %d stopped with an error)\n", iters, verified, ran_ok, ran_err);
    CHECK(verified > iters / 20, "too few mutants verified (%d): the mutations are too destructive", verified);
    if (g_failures) {
        fprintf(stderr, "test_mutate: %d of %d checks FAILED\n", g_failures, g_checks);
        return 1;
    }
    return 0;
}
